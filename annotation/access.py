"""Who is using the app, and which pages they may open.

Two modes, decided by the store:

- **Token mode**, once any annotator has been given a token
  (``python -m annotation annotators add NAME --role annotator|admin``). The
  app asks for the token (or takes ``?token=...`` from the address, then
  removes it from the address bar) and keeps it for the browser session. The
  token is checked against the store on every script run, so a revoked token
  stops working at the next click. An *annotator* reaches the labelling pages
  and their own progress only; an *admin* reaches every page.
- **Single-user local mode**, while no token has ever been given: whoever
  opens the app is its admin, so the app refuses to serve in this mode unless
  the server listens on a loopback address only (``make run`` and
  ``.streamlit/config.toml`` bind 127.0.0.1), and says so in a banner.

Admin pages call :func:`require_admin` at their top: the role is checked on
the server for every run of the page, not only by leaving the page out of the
navigation.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import streamlit as st

from annotation.render import md
from annotation.store import Store, StoreError, default_db_path

TOKEN = "access:token"
LOOPBACK = ("127.0.0.1", "localhost", "::1")


@dataclass(frozen=True)
class Identity:
    name: str | None  # token mode: the annotator's name; local mode: None (the page asks)
    role: str  # "annotator" or "admin"
    mode: str  # "token" or "local"


def db_path() -> str:
    return os.environ.get("DENOMINATOR_DB") or default_db_path()


def existing_db() -> str | None:
    """The store's path when a database is there; else None, with the page saying how to get one
    (every page that reads the store opens with this)."""
    db = db_path()
    if os.path.exists(db):
        return db
    st.error(
        f"No database at {md(db)}: build the demo with `python -m annotation demo` "
        "or import data with `python -m annotation import`."
    )
    return None


def current(store: Store | None = None) -> Identity | None:
    """The identity of this browser session, checked against the store now; None
    when a token is needed and none (or a revoked or mistyped one) was given."""
    if store is None:
        if not os.path.exists(db_path()):
            return Identity(None, "admin", "local")  # nothing to protect yet; the pages say so
        try:
            with Store(db_path()) as opened:
                return current(opened)
        except StoreError:
            return None
    _take_token_from_address()
    if not store.tokens_required():
        return Identity(None, "admin", "local")
    found = store.identify(st.session_state.get(TOKEN))
    if found is None:
        return None
    return Identity(found["name"], found["role"], "token")


def _take_token_from_address() -> None:
    """``?token=...``: kept for the session, then dropped from the address bar
    (so it does not stay in the browser history or a shared screenshot)."""
    token = st.query_params.get("token")
    if token:
        st.session_state[TOKEN] = token.strip()
        del st.query_params["token"]


def local_mode_allowed() -> bool:
    return (st.get_option("server.address") or "") in LOOPBACK


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
    """The only page a session without a valid token can open."""
    st.title("Sign in")
    if st.session_state.get(TOKEN):
        st.error("That access token is not valid: it was mistyped or has been revoked. Ask an admin.")
    with st.form("access:sign-in"):
        token = st.text_input("access token", type="password", help="given by an admin, shown to them once")
        if st.form_submit_button("Sign in"):
            st.session_state[TOKEN] = token.strip()
            st.rerun()


def render_identity(identity: Identity) -> None:
    """Who is signed in, in the sidebar, with a way out."""
    if identity.mode != "token":
        return
    st.sidebar.caption(f"Signed in as **{md(identity.name)}** ({identity.role})")
    if st.sidebar.button("Sign out", key="access:sign-out"):
        st.session_state.pop(TOKEN, None)
        st.rerun()


def require_admin() -> Identity:
    """At the top of every admin page: stops the page unless this session is an admin's."""
    identity = current()
    if identity is None or identity.role != "admin":
        who = f"signed in as {md(identity.name)} ({identity.role})" if identity else "not signed in"
        st.error(f"This page is for admins only; you are {who}.")
        st.stop()
    return identity
