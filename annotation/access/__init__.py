"""Access to the app: who is using it, the pages that sign people in, and the HTTP routes that
keep a browser signed in.

- :mod:`~annotation.access.identity`: who is using the app (a token's session, a sign-in with the
  team's provider matched through the store, or single-user local mode), their role, and
  :func:`~annotation.access.identity.require_admin` at the top of every admin page; the app's
  database path;
- :mod:`~annotation.access.sign_in_pages`: the Streamlit faces: the sign-in page, a ``?token=``
  link's confirmation, "not added yet", the local-mode banner, who is signed in and sign-out;
- :mod:`~annotation.access.routes`: what is served beside Streamlit's (``st.App``): the routes
  that set and expire the HttpOnly session cookie, a ``?token=`` link's own page and its
  button's route, and the middleware (no framing, the host check, the link's page first).

Each points one way: :mod:`~annotation.access.routes` reads the identity's cookie name and
database; :mod:`~annotation.access.sign_in_pages` reads the identity and posts to the routes.
"""
