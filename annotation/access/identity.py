"""Who is using the app, and which pages they may open.

Three ways, decided by the store and the app's secrets:

- **Token mode**, once any annotator has been given a token
  (``python -m annotation annotators add NAME --role annotator|admin``). The
  app asks for the token (or takes it from a ``?token=...`` link) and trades
  it at once for a *session* (the store's ``sessions``, m011), then forgets
  the token. The session is checked against the store on every script run, so
  a revoked token or an ended session stops working at the next click. An
  *annotator* reaches the labelling pages and their own progress only; an
  *admin* reaches every page.
- **Sign-in with the team's OpenID Connect provider** (docs/sign-in.md), beside tokens, once the
  app's secrets hold an ``[auth]`` section (``denominator serve --secrets FILE``): Streamlit's
  ``st.login`` runs the provider's flow and keeps the verified ID token's claims in its own signed
  cookie; :func:`current` matches them to an annotator through the store
  (:mod:`annotation.store.providers`: subject, verified e-mail, or a claim rule) and records the
  sign-in there, so sign-out, expiry and revocation end it on the server like a token's session.
  The claims are read from ``st.user`` only, and only while ``server.trustedUserHeaders`` is
  empty (else a header could say who someone is). Someone the store does not know gets a page
  that names them and says an admin must add them
  (:func:`annotation.access.sign_in_pages.render_not_added`): no role, no page.
- **Single-user local mode**, while no one has been given a way in and no provider is
  configured: whoever opens the app is its admin, so the app refuses to serve in this mode unless
  the server listens on a loopback address only (``make run`` and
  ``.streamlit/config.toml`` bind 127.0.0.1), and says so in a banner.

Admin pages call :func:`require_admin` at their top: the role is checked on
the server for every run of the page, not only by leaving the page out of the
navigation.

The pages that sign people in are :mod:`annotation.access.sign_in_pages`; how a browser stays
signed in (the session cookie and the routes that set it) is :mod:`annotation.access.routes`.
The app's database (:func:`db_path`, :func:`existing_db`) is named here: every check of a sign-in
reads it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import streamlit as st

from annotation.render import md
from annotation.store import (
    ProviderAccess,
    ProviderClaims,
    Store,
    StoreBusy,
    StoreError,
    borrowed,
    database_exists,
    default_db_path,
)
from annotation.values import origin

TOKEN = "access:token"  # a token given on this tab, traded for a session at the next check
SESSION = "access:session"  # the store row of this tab's session (server-side state only)
HANDOFF = "access:handoff"  # the one-time code the page trades for the cookie
FAILED = "access:failed"  # the last token given was not valid
LINK = "access:link"  # a ?token= link's token, waiting for the button that alone signs in
PROVIDER = "access:provider"  # what the last check of the provider's sign-in found (ProviderAccess)
LOOPBACK = ("127.0.0.1", "localhost", "::1")
COOKIE = "denominator_session"
# the store held by a long write (an import): said as such, never as a bad token
BUSY = "The store is busy (an import is running); try again in a moment (reload the page)."


@dataclass(frozen=True)
class Identity:
    name: str | None  # signed in: the annotator's name; local mode: None (the page asks)
    role: str  # "annotator", "reviewer" (an annotator who may review others' labels) or "admin"
    mode: str  # "token": signed in, the name coming with the sign-in (a token or the provider); or "local"
    via: str = "token"  # how a signed-in person came in: "token" or "provider"


@dataclass(frozen=True)
class Provider:
    """The team's OpenID Connect provider, as the app's secrets configure it (``[auth]``)."""

    host: str  # where its metadata is, as the sign-in button names it
    problem: str | None = None  # why sign-in with it is refused here (said on the sign-in page)
    back_to: str | None = None  # the app's address its redirect_uri names (scheme://host:port)


def elsewhere(here: str | None, back_to: str | None) -> str | None:
    """Why a sign-in with the provider started at ``here`` (the page's address) would come back
    signed in as nobody, else None: the provider sends people to ``back_to`` (its redirect_uri's
    origin), and a browser keeps the sign-in's state cookie per host, so the state set at
    http://127.0.0.1:8501 is not sent to http://localhost:8501 and Streamlit drops the sign-in
    (its log blames back/forward navigation). Unknown addresses (a test, an old browser) say
    nothing."""
    if here is None or back_to is None:
        return None
    at = origin(here)
    if at is None or at == back_to:
        return None
    return f"Sign in at {back_to}: the provider sends people back there, not to {at}."


def provider() -> Provider | None:
    """The provider the app's secrets configure (Streamlit's ``[auth]``: ``server_metadata_url``,
    ``client_id``, ...), else None. A configured provider ends single-user local mode."""
    secrets = st.secrets
    try:
        if not secrets.load_if_toml_exists():
            return None
        auth = secrets.get("auth")
    except Exception:  # an unreadable secrets file is no provider; Streamlit says why in its log
        return None
    if not isinstance(auth, Mapping) or not auth.get("server_metadata_url"):
        return None
    host = urlsplit(str(auth.get("server_metadata_url"))).netloc or "the team's provider"
    back_to = origin(str(auth.get("redirect_uri") or ""))
    if st.get_option("server.trustedUserHeaders"):
        return Provider(
            host,
            "server.trustedUserHeaders is set: a request's headers could say who someone is, so "
            "sign-in with the provider is off. Unset it to sign in with the provider.",
            back_to,
        )
    return Provider(host, None, back_to)


def db_path() -> str:
    return default_db_path()  # the one rule of the app, make run and every command line


def existing_db() -> str | None:
    """The store's path when a database is there; else None, with the page saying how to get one
    (every page that reads the store opens with this)."""
    db = db_path()
    if database_exists(db):
        return db
    st.error(
        f"No database at {md(db)}: build the demo with `python -m denominator demo` "
        "or import data with `python -m annotation import`."
    )
    return None


def current(store: Store | None = None) -> Identity | None:
    """The identity of this browser session, checked against the store now; None
    when a token is needed and none (or a revoked or mistyped one) was given. A store held by a
    long write is not a bad token: with ``store`` given, :class:`StoreBusy` is raised (the token
    just given kept for the next check); without, the page says the store is busy and stops. A
    store that cannot be read raises its :class:`StoreError`, never reads as signed out."""
    if store is None:
        if not database_exists(db_path()):
            if provider() is not None:  # sign-in required, and no one to match yet: the page says so
                return None
            return Identity(None, "admin", "local")  # nothing to protect yet; the pages say so
        try:
            # on PostgreSQL a handle this process gave back (a page's every run would otherwise open a
            # connection and read the schema: 4-6 round trips before the page's own reads)
            with borrowed(db_path()) as opened:
                return current(opened)
        except StoreBusy:
            st.error(BUSY)
            st.stop()
        # any other StoreError (PostgreSQL down, a disk error, a foreign file) is no signed-out
        # user: it reaches the pages' boundary (denominator.ui.boundary), which says the store
        # is unavailable and keeps this tab's session for when it is back
    _take_token_from_address()
    configured = provider()
    if configured is None and not store.tokens_required():
        st.session_state.pop(LINK, None)
        return Identity(None, "admin", "local")
    found = _session(store)
    if found is not None:
        return Identity(found["name"], found["role"], "token")
    if configured is not None and configured.problem is None:
        return _provider_identity(store)
    return None


def _provider_identity(store: Store) -> Identity | None:
    """The signed-in person the provider's verified claims name, when the store lets them in now
    (:meth:`annotation.store.Store.provider_sign_in`); what it found stays for the sign-in page."""
    claims = verified_claims()
    if claims is None:
        st.session_state.pop(PROVIDER, None)
        return None
    person = ProviderClaims.from_claims(claims)
    if person is None:  # a token without the claims a sign-in needs: a page that says so
        st.session_state[PROVIDER] = ProviderAccess(
            "unknown", "an account whose ID token lacks a claim a sign-in needs (iss, sub, iat, nonce)"
        )
        return None
    found = store.provider_sign_in(person)
    st.session_state[PROVIDER] = found
    if found.status != "signed-in" or found.name is None or found.role is None:
        return None
    return Identity(found.name, found.role, "token", via="provider")


def verified_claims() -> dict[str, Any] | None:
    """The claims of the ID token Streamlit verified and keeps in its signed cookie (``st.user``,
    read when the page connected), while someone is signed in with the provider; else None."""
    user = st.user.to_dict()
    if user.get("is_logged_in") is not True:
        return None
    return dict(user)


def provider_outcome() -> ProviderAccess | None:
    """What the last check of this tab's provider sign-in found (None: no one is signed in with it)."""
    found = st.session_state.get(PROVIDER)
    return found if isinstance(found, ProviderAccess) else None


def _session(store: Store) -> dict[str, Any] | None:
    """This tab's live session: a token just given is traded for a new one; else the one this
    tab holds; else the one the browser's cookie names (a refresh, a new tab)."""
    token = (st.session_state.pop(TOKEN, None) or "").strip()
    if token:
        try:
            started = store.start_session(token)
        except StoreError:
            st.session_state[TOKEN] = token  # not traded yet: tried again at the next check
            raise
        if started is None:
            st.session_state[FAILED] = True
        else:
            st.session_state.pop(FAILED, None)
            st.session_state[SESSION], st.session_state[HANDOFF] = started.session, started.handoff
    row = st.session_state.get(SESSION)
    found = store.session_identity(session=row) if row is not None else None
    if found is None:
        found = store.session_identity(session_id=session_cookie())
        if found is not None:
            st.session_state[SESSION] = found["session"]
    return found


def session_cookie() -> str | None:
    """The session id the browser sent when this page connected (Streamlit reads cookies then only)."""
    value = st.context.cookies.get(COOKIE)
    return value if isinstance(value, str) else None  # AppTest's context holds no real cookies


def _take_token_from_address() -> None:
    """``?token=...`` that reached the page (served without
    :class:`annotation.access.routes.TokenLinkMiddleware`): kept for
    :func:`annotation.access.sign_in_pages.render_link_confirmation`, never traded by itself, and
    dropped from the address bar at once (so it does not stay in the browser history or a shared
    screenshot)."""
    token = st.query_params.get("token")
    if token:
        st.session_state[LINK] = token.strip()[:512]
        del st.query_params["token"]


def link_pending() -> bool:
    """A sign-in link's token waits for its button
    (:func:`annotation.access.sign_in_pages.render_link_confirmation`)."""
    return bool(st.session_state.get(LINK))


def local_mode_allowed() -> bool:
    return (st.get_option("server.address") or "") in LOOPBACK


def require_reviewer() -> Identity:
    """At the top of the review pass: stops the page unless this session is an admin's or a
    reviewer's (local mode is an admin's)."""
    identity = current()
    if identity is None or identity.role not in ("admin", "reviewer"):
        who = f"signed in as {md(identity.name)} ({identity.role})" if identity else "not signed in"
        st.error(f"This page is for reviewers and admins; you are {who}.")
        st.stop()
    return identity


def require_admin() -> Identity:
    """At the top of every admin page: stops the page unless this session is an admin's."""
    identity = current()
    if identity is None or identity.role != "admin":
        who = f"signed in as {md(identity.name)} ({identity.role})" if identity else "not signed in"
        st.error(f"This page is for admins only; you are {who}.")
        st.stop()
    return identity
