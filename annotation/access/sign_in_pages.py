"""The sign-in's Streamlit faces: the sign-in page (the provider's button and the token form),
the page of someone the provider signed in whom no one here has added, a ``?token=`` link's
confirmation when the link reaches the page, the local-mode banner, and who is signed in (the
sidebar, with sign-out).

Who someone is and what they may open is :mod:`annotation.access.identity`'s; the session cookie
these pages ask the server to set or expire (a same-origin POST from the page) is
:mod:`annotation.access.routes`'s.
"""

from __future__ import annotations

import shlex

import streamlit as st

from annotation.access.identity import (
    FAILED,
    HANDOFF,
    LINK,
    PROVIDER,
    SESSION,
    TOKEN,
    Identity,
    db_path,
    elsewhere,
    local_mode_allowed,
    provider,
    provider_outcome,
    session_cookie,
    verified_claims,
)
from annotation.access.routes import SESSION_ROUTE, SIGN_OUT_ROUTE
from annotation.render import md
from annotation.store import ProviderAccess, Store, database_exists
from annotation.web import script_json

FORGET = "access:forget-cookie"  # signed out: the page asks the server to expire the cookie
SIGN_IN_HINT = (
    "Ask your admin for an access token (they create it with "
    "`python -m annotation annotators add NAME --role annotator`)."
)


def render_link_confirmation() -> None:
    """What a ``?token=`` link shows when it reaches the page: whom it signs in, who is signed in
    now, and the button that alone signs in (as :func:`annotation.access.routes.link_page` does
    before the page)."""
    token = st.session_state.get(LINK)
    with Store(db_path()) as store:
        who = store.identify(token)
        row = st.session_state.get(SESSION)
        now = store.session_identity(session=row) if row is not None else None
        now = now or store.session_identity(session_id=session_cookie())
    st.title("Sign in")
    if who is None:
        st.session_state.pop(LINK, None)
        st.error("This sign-in link is not valid: its token was mistyped or has been revoked. Ask an admin.")
        st.button("Go on", key="access:link-cancel")
        return
    st.markdown(f"This link signs this browser in as **{md(who['name'])}** ({md(who['role'])}).")
    if now is not None and now["name"] != who["name"]:
        st.warning(
            f"This browser is signed in as **{md(now['name'])}** ({md(now['role'])}): signing in as "
            f"{md(who['name'])} signs {md(now['name'])} out here."
        )
    st.button(
        f"Sign in as {md(who['name'])}", key="access:link-sign-in", type="primary", on_click=_confirm_link
    )
    st.button("Go on without signing in", key="access:link-cancel", on_click=_drop_link)


def _confirm_link() -> None:
    st.session_state[TOKEN] = st.session_state.pop(LINK, "")


def _drop_link() -> None:
    st.session_state.pop(LINK, None)


def render_local_banner() -> None:
    if not local_mode_allowed():
        st.error(
            "No annotator has an access token, so this app would let anyone who reaches it act as admin, "
            f"and the server is not bound to a loopback address (server.address = "
            f"{md(repr(st.get_option('server.address')))}). Serve it on 127.0.0.1, or give people tokens first: "
            "python -m annotation annotators add NAME --role admin"
        )
        st.stop()
    st.info(
        "Single-user local mode on this machine (127.0.0.1 only): no annotator has an access token, "
        "so every page is open. Give people tokens with `python -m annotation annotators add NAME "
        "--role annotator|admin` and the app will ask for them.",
        icon=":material/lock_open:",
    )


def render_sign_in() -> None:
    """The only page a session without a valid sign-in can open: the provider's button (when one
    is configured) and the token form. Someone signed in with the provider whom the store does not
    know gets :func:`render_not_added` instead."""
    found = provider_outcome()
    if found is not None and found.status == "unknown":
        render_not_added(found)
        return
    st.title("Sign in")
    configured = provider()
    if configured is not None:
        if configured.problem:
            st.error(configured.problem)
        else:
            if found is not None and found.status == "revoked":
                st.error(
                    f"Your access ({md(found.shown)}) has been revoked: ask an admin if it should not have been."
                )
            elif found is not None and found.status == "ended":
                st.info(
                    f"Your sign-in as {md(found.shown)} has ended (signed out, or expired): sign in again."
                )
            if not database_exists(db_path()):
                # before sign-in: where the database is stays unsaid
                st.warning("No database yet: an admin creates it and adds people first.")
            wrong = elsewhere(st.context.url, configured.back_to)
            if wrong is not None and configured.back_to is not None:
                # a sign-in from here would come back to another host, signed in as nobody
                st.error(md(wrong))
                st.link_button(f"Open {md(configured.back_to)}", configured.back_to, type="primary")
            elif st.button(
                f"Sign in with {md(configured.host)}", key="access:provider-sign-in", type="primary"
            ):
                st.login()
        st.caption("Or, with an access token:")
    st.info(SIGN_IN_HINT)
    if st.session_state.get(FAILED):
        st.error("That access token is not valid: it was mistyped or has been revoked. Ask an admin.")
    with st.form("access:sign-in"):
        token = st.text_input("access token", type="password", help="given by an admin, shown to them once")
        if st.form_submit_button("Sign in"):
            st.session_state[TOKEN] = token.strip()
            st.rerun()
    if st.session_state.pop(FORGET, False):
        _post(SIGN_OUT_ROUTE, "")


def render_not_added(found: ProviderAccess) -> None:
    """Signed in with the provider as someone no annotator here is: who, and that an admin must
    add them. No role, no page, no data."""
    st.title("Not added yet")
    st.warning(
        f"You are signed in as **{md(found.shown)}**, but no one here signs in as that. "
        "An admin must add you before you can open anything:"
    )
    shown = found.shown
    way = (
        f"--email {shlex.quote(shown)}"
        if "@" in shown and " " not in shown
        else (
            f"--subject {shlex.quote(shown.removeprefix('subject '))}"
            if shown.startswith("subject ")
            else "--email ADDRESS"
        )
    )
    st.code(f"python -m annotation annotators add NAME --role annotator {way}", language="sh")
    st.caption("Signed in with another account? Sign out, then sign in with the right one.")
    st.button("Sign out", key="access:not-added-sign-out", on_click=sign_out)


def render_identity(identity: Identity) -> None:
    """Who is signed in, in the sidebar, with a way out; right after a sign-in, the page trades
    its one-time code for the session cookie (see :mod:`annotation.access.routes`)."""
    if identity.mode != "token":
        return
    found = provider_outcome() if identity.via == "provider" else None
    through = f" with {md(found.shown)}" if found is not None and found.shown != identity.name else ""
    st.sidebar.caption(f"Signed in as **{md(identity.name)}** ({md(identity.role)}){through}")
    st.sidebar.button("Sign out", key="access:sign-out", on_click=sign_out)
    handoff = st.session_state.pop(HANDOFF, None)
    if handoff:
        _post(SESSION_ROUTE, handoff)


def sign_out() -> None:
    """End this tab's session and the one the browser's cookie names (every tab of this browser
    is signed out at its next click); the page then asks the server to expire the cookie. Signed
    in with the provider: its sign-in ends in the store, then Streamlit's ``st.logout`` clears its
    cookie and leads to the provider's own sign-out, when it has one."""
    row = st.session_state.pop(SESSION, None)
    found = st.session_state.pop(PROVIDER, None)
    for key in (TOKEN, HANDOFF, FAILED):
        st.session_state.pop(key, None)
    st.session_state[FORGET] = True
    if database_exists(db_path()):
        with Store(db_path()) as store:
            if row is not None:
                store.end_session(session=row)
            store.end_session(session_id=session_cookie())
            if isinstance(found, ProviderAccess):
                store.end_provider_session(found.session)
    if verified_claims() is not None:
        st.logout()


def _post(route: str, body: str) -> None:
    """A same-origin POST from the page, no more: its answer sets or expires the HttpOnly cookie.
    The body is a one-time code (or nothing), written as a JSON string literal with ``<``, ``>``
    and ``&`` escaped (:func:`annotation.web.script_json`: no ``</script>`` can end the script)."""
    st.sidebar.html(
        f"<script>fetch({script_json(route)}, {{method: 'POST', body: {script_json(body)}, "
        "credentials: 'same-origin', cache: 'no-store'});</script>",
        unsafe_allow_javascript=True,
    )
