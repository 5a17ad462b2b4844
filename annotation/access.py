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
  that names them and says an admin must add them (:func:`render_not_added`): no role, no page.
- **Single-user local mode**, while no one has been given a way in and no provider is
  configured: whoever opens the app is its admin, so the app refuses to serve in this mode unless
  the server listens on a loopback address only (``make run`` and
  ``.streamlit/config.toml`` bind 127.0.0.1), and says so in a banner.

Admin pages call :func:`require_admin` at their top: the role is checked on
the server for every run of the page, not only by leaving the page out of the
navigation.

**How a browser stays signed in** (across a refresh and new tabs, until sign-out,
expiry after ``DENOMINATOR_SESSION_HOURS``, default 12, or the token's revocation):
a cookie ``denominator_session`` holds a random session id, never the token; the
store keeps only its SHA-256. The cookie is ``HttpOnly; SameSite=Strict; Path=/``
(``Secure`` over HTTPS), so no script on the page can read it and no other site's
request carries it.

Streamlit 1.67 offers no way for a script run to *set* a cookie (``st.context.cookies``
is read-only, the snapshot the browser sent when the page connected; ``st.login``'s
cookie machinery needs an OpenID Connect provider). JavaScript could write one
(``st.html(..., unsafe_allow_javascript=True)``, a component) but could not make it
HttpOnly, leaving the id to any injected script. What 1.67 does offer is ``st.App``:
``streamlit run app.py`` finds the ``app = st.App(...)`` in app.py and serves it,
with our own Starlette routes and middleware beside Streamlit's. So:

- Signing in on the page (:func:`render_sign_in`) starts a session in the store and
  gives the page a one-time code (good once, for two minutes). A two-line script
  (:func:`render_identity`) posts the code to :data:`SESSION_ROUTE`; that HTTP
  response makes the session id and sets the HttpOnly cookie. The id never passes
  through the page; the code is worthless once traded.
- A ``?token=...`` link never signs anyone in by itself (a page on another site could send an
  admin's browser to an annotator's link, and what the admin labels next would be recorded as
  the annotator's). Before Streamlit sees the request, :class:`TokenLinkMiddleware` answers with
  a same-origin page (:func:`link_page`, not frameable) that names whom the link signs in, and
  who is signed in on this browser when the request carried the cookie (a link followed from
  another site carries none: SameSite=Strict); only its button, a same-origin POST to
  :data:`LINK_ROUTE`, starts the session, sets the cookie and redirects to the address
  without the token. The page drops the token from the address bar at once (its one script, a
  file of this server: :data:`annotation.web.LINK_SCRIPT_ROUTE`). Served without
  the middleware, the page does the same in Streamlit (:func:`render_link_confirmation`).
- Sign-out ends the session in the store (every tab of the browser is signed out at
  its next click) and posts to :data:`SIGN_OUT_ROUTE`, which expires the cookie.
- What every answer of these routes obeys is :mod:`annotation.web`'s: their pages come from
  one escaping template with no inline script, each reads at most its limit of a body
  (:data:`CODE_LIMIT`, :data:`LINK_LIMIT`), and no response, Streamlit's included, may be framed.
- Served without the routes (AppTest, or an ASGI host that mounts only the script),
  the same code signs the tab in for its browser session only: the cookie post fails
  and nothing else changes.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import streamlit as st
from starlette.concurrency import run_in_threadpool
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send
from streamlit.web.server.starlette.starlette_websocket import is_host_allowed

from annotation.render import md
from annotation.store import (
    ProviderAccess,
    ProviderClaims,
    Store,
    StoreBusy,
    StoreError,
    database_exists,
    default_db_path,
)
from annotation.store.identity import Claimed
from annotation.web import (
    LINK_SCRIPT_ROUTE,
    FrameGuardMiddleware,
    Html,
    html_response,
    link_script,
    link_script_route,
    page,
    read_body,
    render,
    script_json,
    too_large,
)

TOKEN = "access:token"  # a token given on this tab, traded for a session at the next check
SESSION = "access:session"  # the store row of this tab's session (server-side state only)
HANDOFF = "access:handoff"  # the one-time code the page trades for the cookie
FAILED = "access:failed"  # the last token given was not valid
LINK = "access:link"  # a ?token= link's token, waiting for the button that alone signs in
FORGET = "access:forget-cookie"  # signed out: the page asks the server to expire the cookie
PROVIDER = "access:provider"  # what the last check of the provider's sign-in found (ProviderAccess)
LOOPBACK = ("127.0.0.1", "localhost", "::1")
COOKIE = "denominator_session"
SESSION_ROUTE = "/_denominator/session"
SIGN_OUT_ROUTE = "/_denominator/sign-out"
LINK_ROUTE = "/_denominator/link"  # the link page's button: a same-origin POST signs in
# the most each route reads of a body (annotation.web.read_body: more is refused, 413, unread)
CODE_LIMIT = 256  # a one-time code (the session route); the sign-out route reads no more either
LINK_LIMIT = 4096  # the link page's form: the token (512 at most) and the return address
# the store held by a long write (an import): said as such, never as a bad token
BUSY = "The store is busy (an import is running); try again in a moment (reload the page)."
SIGN_IN_HINT = (
    "Ask your admin for an access token (they create it with "
    "`python -m annotation annotators add NAME --role annotator`)."
)


@dataclass(frozen=True)
class Identity:
    name: str | None  # signed in: the annotator's name; local mode: None (the page asks)
    role: str  # "annotator" or "admin"
    mode: str  # "token": signed in, the name coming with the sign-in (a token or the provider); or "local"
    via: str = "token"  # how a signed-in person came in: "token" or "provider"


@dataclass(frozen=True)
class Provider:
    """The team's OpenID Connect provider, as the app's secrets configure it (``[auth]``)."""

    host: str  # where its metadata is, as the sign-in button names it
    problem: str | None = None  # why sign-in with it is refused here (said on the sign-in page)


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
    if st.get_option("server.trustedUserHeaders"):
        return Provider(
            host,
            "server.trustedUserHeaders is set: a request's headers could say who someone is, so "
            "sign-in with the provider is off. Unset it to sign in with the provider.",
        )
    return Provider(host)


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
            with Store(db_path()) as opened:
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
    claims = _verified_claims()
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


def _verified_claims() -> dict[str, Any] | None:
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
        found = store.session_identity(session_id=_cookie())
        if found is not None:
            st.session_state[SESSION] = found["session"]
    return found


def _cookie() -> str | None:
    """The session id the browser sent when this page connected (Streamlit reads cookies then only)."""
    value = st.context.cookies.get(COOKIE)
    return value if isinstance(value, str) else None  # AppTest's context holds no real cookies


def _take_token_from_address() -> None:
    """``?token=...`` that reached the page (served without :class:`TokenLinkMiddleware`): kept
    for :func:`render_link_confirmation`, never traded by itself, and dropped from the address
    bar at once (so it does not stay in the browser history or a shared screenshot)."""
    token = st.query_params.get("token")
    if token:
        st.session_state[LINK] = token.strip()[:512]
        del st.query_params["token"]


def link_pending() -> bool:
    """A sign-in link's token waits for its button (:func:`render_link_confirmation`)."""
    return bool(st.session_state.get(LINK))


def render_link_confirmation() -> None:
    """What a ``?token=`` link shows when it reaches the page: whom it signs in, who is signed in
    now, and the button that alone signs in (as :func:`link_page` does before the page)."""
    token = st.session_state.get(LINK)
    with Store(db_path()) as store:
        who = store.identify(token)
        row = st.session_state.get(SESSION)
        now = store.session_identity(session=row) if row is not None else None
        now = now or store.session_identity(session_id=_cookie())
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
            if st.button(
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
    its one-time code for the session cookie (see the module's docstring)."""
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
            store.end_session(session_id=_cookie())
            if isinstance(found, ProviderAccess):
                store.end_provider_session(found.session)
    if _verified_claims() is not None:
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


def require_admin() -> Identity:
    """At the top of every admin page: stops the page unless this session is an admin's."""
    identity = current()
    if identity is None or identity.role != "admin":
        who = f"signed in as {md(identity.name)} ({identity.role})" if identity else "not signed in"
        st.error(f"This page is for admins only; you are {who}.")
        st.stop()
    return identity


# ---------------------------------------------------------------- served beside Streamlit (st.App)

NO_STORE = {"Cache-Control": "no-store", "Referrer-Policy": "no-referrer"}


def _https(request: Request) -> bool:
    return request.url.scheme == "https" or request.headers.get("x-forwarded-proto") == "https"


def _same_origin(request: Request) -> bool:
    """The POST comes from a page of this server (another site cannot sign a browser in or out)."""
    origin = request.headers.get("origin")
    return bool(origin) and urlsplit(origin).netloc == request.headers.get("host")


def _set_cookie(response: Response, request: Request, claimed: Claimed) -> None:
    response.set_cookie(
        COOKIE,
        claimed.session_id,
        max_age=claimed.max_age,
        path="/",
        httponly=True,
        samesite="strict",
        secure=_https(request),
    )


def _in_store(action: Callable[..., Any], *args: Any, quiet: bool = True) -> Any:
    """``action(store, *args)`` on the app's database; None when there is none (or, ``quiet``,
    when it cannot be read; else its StoreError is raised)."""
    if not database_exists(db_path()):
        return None
    try:
        with Store(db_path()) as store:
            return action(store, *args)
    except StoreError:
        if not quiet:
            raise
        return None


def _end_by_cookie(store: Store, session_id: str) -> bool:
    return store.end_session(session_id=session_id)


def _sign_in_by_link(store: Store, token: str, previous: str | None) -> Claimed | None:
    started = store.start_session(token)
    if started is None:
        return None
    if previous:  # a link for someone else replaces the session this browser had
        store.end_session(session_id=previous)
    return store.claim_session(started.handoff)


async def claim_route(request: Request) -> Response:
    """``POST /_denominator/session`` with a one-time code: the session cookie, or 403 (413 for a
    body past :data:`CODE_LIMIT`, refused before it is read)."""
    body = await read_body(request, CODE_LIMIT)
    if body is None:
        return too_large(CODE_LIMIT)
    if not _same_origin(request):
        return Response(status_code=403, headers=NO_STORE)
    code = body.decode("ascii", errors="replace")
    claimed = await run_in_threadpool(_in_store, Store.claim_session, code)
    if claimed is None:
        return Response(status_code=403, headers=NO_STORE)
    response = Response(status_code=204, headers=NO_STORE)
    _set_cookie(response, request, claimed)
    return response


async def sign_out_route(request: Request) -> Response:
    """``POST /_denominator/sign-out``: ends the cookie's session and expires the cookie. Its body
    means nothing and is read no further than :data:`CODE_LIMIT` (more: 413, unread)."""
    if await read_body(request, CODE_LIMIT) is None:
        return too_large(CODE_LIMIT)
    if not _same_origin(request):
        return Response(status_code=403, headers=NO_STORE)
    session_id = request.cookies.get(COOKIE)
    if session_id:
        await run_in_threadpool(_in_store, _end_by_cookie, session_id)
    response = Response(status_code=204, headers=NO_STORE)
    response.delete_cookie(COOKIE, path="/", httponly=True, samesite="strict", secure=_https(request))
    return response


def _link_target(request: Request) -> str:
    """The address a link leads to, without its token; one leading slash ("//host" would leave
    this site)."""
    rest = urlencode([(k, v) for k, v in request.query_params.multi_items() if k != "token"])
    return "/" + request.url.path.lstrip("/\\") + (f"?{rest}" if rest else "")


def _safe_target(target: str) -> str:
    """A POSTed return address kept on this site: a path, never "//host" or a scheme (the page
    writes it only through ``{...:url}``, which holds it to this site once more)."""
    target = target if target.startswith("/") else "/"
    return "/" + target.lstrip("/\\")


def _link_people(
    store: Store, token: str, session_id: str | None
) -> tuple[dict[str, str] | None, dict[str, Any] | None]:
    """(whom the link's token signs in, who is signed in on this browser), read only."""
    return store.identify(token), store.session_identity(session_id=session_id)


LINK_PAGE_HEADERS = {
    **NO_STORE,
    # "no-referrer" would make Chromium send "Origin: null" with the button's POST, which the
    # route then refuses; the page's address holds no token by the time the button is pressed
    "Referrer-Policy": "same-origin",
}  # html_response adds the page policy: no inline script, no framing (no site may trick a press)


def link_page(
    token: str,
    target: str,
    who: dict[str, str] | None,
    now: dict[str, Any] | None,
    *,
    store_down: bool = False,
) -> Html:
    """The same-origin page every ``?token=`` arrival gets: whom the link signs in, who is signed
    in on this browser when the request carried its cookie (a link followed from another site
    carries none: SameSite=Strict), and a button, the only way to sign in or switch. Every value
    is escaped for its place (:func:`annotation.web.render`); the page's one script is a file of
    this server that drops the token from the address bar (no inline script: the page policy
    forbids any)."""
    back = render('<p><a href="{target:url}">Go on without signing in</a></p>', target=target)
    if store_down:
        body = render(
            "<p>The store is unavailable; nothing was changed. Try the link again in a moment.</p>{back:html}",
            back=back,
        )
    elif who is None:
        body = render(
            "<p>This sign-in link is not valid: its token was mistyped or has been revoked. "
            "Ask an admin for a new one.</p>{back:html}",
            back=back,
        )
    else:
        name, role = who["name"], who["role"]
        if now is not None and now["name"] == name:
            here = render(
                "<p>You are already signed in on this browser as <b>{name:text}</b>.</p>", name=name
            )
        elif now is not None:
            here = render(
                "<p>This browser is signed in as <b>{now:text}</b> ({now_role:text}): "
                "signing in as {name:text} signs {now:text} out here.</p>",
                now=now["name"],
                now_role=now["role"],
                name=name,
            )
        else:
            here = Html("<p>Anyone signed in on this browser is signed out by it.</p>")
        body = render(
            "<p>This link signs this browser in as <b>{name:text}</b> ({role:text}).</p>{here:html}"
            '<form method="post" action="{route:url}">'
            '<input type="hidden" name="token" value="{token:attr}">'
            '<input type="hidden" name="next" value="{target:url}">'
            '<button type="submit" id="sign-in-by-link" autofocus>Sign in as {name:text}</button>'
            "</form>{back:html}",
            name=name,
            role=role,
            here=here,
            route=LINK_ROUTE,
            token=token,
            target=target,
            back=back,
        )
    # the token leaves the address bar and the history at once (a script file of this server)
    return page(
        "Sign in", render("<h1>Sign in</h1>{body:html}{script:html}", body=body, script=link_script(target))
    )


async def link_route(request: Request) -> Response:
    """``POST /_denominator/link`` from the link page (same origin only): the token becomes a
    session and the cookie, the browser's previous session ends, and the answer is a redirect
    to where the link led (413 for a body past :data:`LINK_LIMIT`, refused before it is read)."""
    body = await read_body(request, LINK_LIMIT)
    if body is None:
        return too_large(LINK_LIMIT)
    if not _same_origin(request):
        return Response(status_code=403, headers=NO_STORE)
    raw = body.decode("utf-8", errors="replace")
    fields = parse_qs(raw, max_num_fields=4)
    token = (fields.get("token", [""])[0] or "").strip()[:512]
    target = _safe_target(fields.get("next", ["/"])[0])
    try:
        claimed = await run_in_threadpool(
            _in_store, _sign_in_by_link, token, request.cookies.get(COOKIE), quiet=False
        )
    except Exception:  # a store that cannot be reached is no wrong token: said as such, nothing changed
        down = link_page(token, target, None, None, store_down=True)
        return html_response(down, status_code=503, headers=LINK_PAGE_HEADERS)
    if claimed is None:
        return html_response(link_page(token, target, None, None), status_code=403, headers=LINK_PAGE_HEADERS)
    response = RedirectResponse(target, status_code=303, headers=NO_STORE)
    _set_cookie(response, request, claimed)
    return response


class TokenLinkMiddleware:
    """``GET /any/page?token=...`` never signs anyone in by itself: before Streamlit sees the
    request, the answer is :func:`link_page` (whom the link signs in, and a button that POSTs to
    :data:`LINK_ROUTE`). An admin sent to an annotator's link by another site stays himself
    until he presses it. Anything else passes through untouched."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (
            scope["type"] == "http"
            and scope["method"] in ("GET", "HEAD")
            and b"token=" in scope["query_string"]
        ):
            request = Request(scope)
            token = (request.query_params.get("token") or "").strip()[:512]
            if token and not request.url.path.startswith("/_stcore/"):
                try:
                    found = await run_in_threadpool(
                        _in_store, _link_people, token, request.cookies.get(COOKIE), quiet=False
                    )
                except Exception:  # a store that cannot be read: said on the page, nothing changed
                    found = "down"
                who, now = found if isinstance(found, tuple) else (None, None)
                shown = link_page(token, _link_target(request), who, now, store_down=found == "down")
                response = html_response(shown, headers=LINK_PAGE_HEADERS)
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)


class HostCheckMiddleware:
    """Every request, page or WebSocket, whose ``Host`` is not in ``server.allowedHosts``
    (``.streamlit/config.toml``: the loopback names) is refused before anything else sees it: a
    DNS-rebinding page (``http://rebind.example:PORT/`` resolving to 127.0.0.1) gets neither the
    page, nor the session routes, nor the app's WebSocket. The rule is Streamlit's own
    (``is_host_allowed``, which its WebSocket applies too); an empty list allows every host."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] in ("http", "websocket"):
            host = dict(scope.get("headers") or []).get(b"host", b"").decode("latin-1") or None
            if not is_host_allowed(host):
                if scope["type"] == "websocket":
                    await send({"type": "websocket.close", "code": 1008})
                    return
                allowed = ", ".join(st.get_option("server.allowedHosts"))
                response = Response(
                    f"This server answers to {allowed} only (server.allowedHosts).\n",
                    status_code=403,
                    media_type="text/plain",
                    headers=NO_STORE,
                )
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)


ROUTES = [
    Route(SESSION_ROUTE, claim_route, methods=["POST"]),
    Route(SIGN_OUT_ROUTE, sign_out_route, methods=["POST"]),
    Route(LINK_ROUTE, link_route, methods=["POST"]),
    Route(LINK_SCRIPT_ROUTE, link_script_route, methods=["GET", "HEAD"]),
]
# outermost first: every response says it may not be framed, a refused host's included
MIDDLEWARE = [
    Middleware(FrameGuardMiddleware),
    Middleware(HostCheckMiddleware),
    Middleware(TokenLinkMiddleware),
]
