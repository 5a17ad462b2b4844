"""The sign-in's HTTP routes and middleware, served beside Streamlit's (``st.App``): the routes
that set and expire the session cookie, the ``?token=`` link's own page and its button's route,
and the middleware every request passes (no framing, the host check, the link's page first).

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

- Signing in on the page (:func:`annotation.access.sign_in_pages.render_sign_in`) starts a
  session in the store and gives the page a one-time code (good once, for two minutes). A
  two-line script (:func:`annotation.access.sign_in_pages.render_identity`) posts the code to
  :data:`SESSION_ROUTE`; that HTTP response makes the session id and sets the HttpOnly cookie.
  The id never passes through the page; the code is worthless once traded.
- A ``?token=...`` link never signs anyone in by itself (a page on another site could send an
  admin's browser to an annotator's link, and what the admin labels next would be recorded as
  the annotator's). Before Streamlit sees the request, :class:`TokenLinkMiddleware` answers with
  a same-origin page (:func:`link_page`, not frameable) that names whom the link signs in, and
  who is signed in on this browser when the request carried the cookie (a link followed from
  another site carries none: SameSite=Strict); only its button, a same-origin POST to
  :data:`LINK_ROUTE`, starts the session, sets the cookie and redirects to the address
  without the token. The page drops the token from the address bar at once (its one script, a
  file of this server: :data:`annotation.web.LINK_SCRIPT_ROUTE`). Served without
  the middleware, the page does the same in Streamlit
  (:func:`annotation.access.sign_in_pages.render_link_confirmation`).
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

from collections.abc import Callable
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

from annotation.access.identity import COOKIE, db_path
from annotation.http_contract import API_PATH
from annotation.store import Store, StoreError, database_exists
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
    too_large,
)

SESSION_ROUTE = "/_denominator/session"
SIGN_OUT_ROUTE = "/_denominator/sign-out"
LINK_ROUTE = "/_denominator/link"  # the link page's button: a same-origin POST signs in
# the most each route reads of a body (annotation.web.read_body: more is refused, 413, unread)
CODE_LIMIT = 256  # a one-time code (the session route); the sign-out route reads no more either
LINK_LIMIT = 4096  # the link page's form: the token (512 at most) and the return address

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
            # the API's paths are the API's: a token there is a credential to refuse in JSON, not a link
            api = request.url.path == API_PATH or request.url.path.startswith(API_PATH + "/")
            if token and not api and not request.url.path.startswith("/_stcore/"):
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
