"""The app's own HTTP answers beside Streamlit's (``st.App``; :mod:`annotation.access.routes` holds
the routes): how a page is written, how much of a body is read, and what every response says about
framing. Each rule is here once, so a new route cannot forget it.

- **Pages.** Every HTML page the app writes itself is :func:`render` of a constant template:
  each value is escaped for the place it fills (``{name:text}``, ``{name:attr}``, ``{name:url}``:
  an address on this site only), and only what :func:`render` made goes in unescaped
  (``{name:html}``). :func:`html_response` alone serves such a page, under :data:`PAGE_POLICY`:
  no inline script at all (``script-src 'self'``; the one script a page needs is a file of this
  server, :data:`LINK_SCRIPT_ROUTE`, which reads its data from an attribute), the page's one
  style by its hash, and no framing.
- **Bodies.** A route reads its body through :func:`read_body`: the declared length is checked
  before a byte is read, and the stream is cut at the route's limit; past it the answer is
  :func:`too_large` (413, and the connection closed, so the rest is never read).
- **Framing.** :class:`FrameGuardMiddleware` gives every HTTP response, Streamlit's pages and
  files included, ``X-Frame-Options: DENY`` and ``frame-ancestors 'none'`` (added to the
  response's own policy, or as the only directive of one: Streamlit's pages get no other).
- **The one inline script** the app gives Streamlit (the sidebar's ``fetch`` that trades a
  one-time code for the cookie) writes its values with :func:`script_json`.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import html
import json
import string
from contextlib import aclosing
from typing import Any

from starlette.requests import ClientDisconnect, Request
from starlette.responses import HTMLResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from annotation.errors import DenominatorError

LINK_SCRIPT_ROUTE = "/_denominator/link.js"  # drops a sign-in link's token from the address bar


class Html(str):
    """HTML already escaped: made by :func:`render`, or a constant of the code (never data)."""


def on_this_site(address: str) -> str:
    """``address`` when it is a path of this site ("/" and then neither "/" nor "\\": "//host"
    would leave it); else "/"."""
    if address.startswith("/") and not address.startswith(("//", "/\\")):
        return address
    return "/"


class _Template(string.Formatter):
    def format_field(self, value: Any, format_spec: str) -> str:
        if format_spec == "html":
            if not isinstance(value, Html):
                raise TypeError(f"{{...:html}} takes only what render() made, not {type(value).__name__}")
            return value
        if format_spec in ("text", "attr"):
            return html.escape(str(value), quote=True)  # & < > " ': no way out of text or "attr"
        if format_spec == "url":
            return html.escape(on_this_site(str(value)), quote=True)
        raise ValueError(f"a placeholder names its context (text, attr, url, html), not {format_spec!r}")


_TEMPLATE = _Template()


def render(template: str, **values: Any) -> Html:
    """``template`` (a constant of the code) with each ``{name:context}`` filled, escaped for its
    context: ``text`` (between tags) and ``attr`` (an attribute value in double quotes) escape
    ``& < > " '``; ``url`` is an ``attr`` holding an address of this site only (any other becomes
    "/"); ``html`` takes only an :class:`Html` (what ``render`` made). A placeholder without a
    context is refused."""
    return Html(_TEMPLATE.format(template, **values))


STYLE = Html(
    "body{font-family:sans-serif;max-width:36rem;margin:4rem auto;line-height:1.5}"
    "button{font-size:1rem;padding:.5rem 1rem}"
)
_STYLE_HASH = base64.b64encode(hashlib.sha256(STYLE.encode()).digest()).decode()
PAGE_POLICY = (
    "default-src 'none'; script-src 'self'; "
    f"style-src 'sha256-{_STYLE_HASH}'; "
    "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)
_PAGE = (
    '<!doctype html><html lang="en"><head><meta charset="utf-8">'
    "<title>{title:text}</title><style>{style:html}</style></head>"
    "<body>{body:html}</body></html>"
)


def page(title: str, body: Html) -> Html:
    """A whole page of the app's own: ``body`` (made by :func:`render`) under ``title``."""
    return render(_PAGE, title=f"{title} - Denominator", style=STYLE, body=body)


def html_response(content: Html, status_code: int = 200, headers: dict[str, str] | None = None) -> Response:
    """The one way the app answers with HTML of its own: a page :func:`page` made, under
    :data:`PAGE_POLICY` (no inline script, no framing)."""
    if not isinstance(content, Html):
        raise TypeError("html_response serves only a page made by page()/render()")
    policy = {
        "Content-Security-Policy": PAGE_POLICY,
        "X-Frame-Options": "DENY",
        "X-Content-Type-Options": "nosniff",
    }
    return HTMLResponse(str(content), status_code=status_code, headers={**(headers or {}), **policy})


LINK_SCRIPT = (
    "// Denominator's sign-in link page: the token leaves the address bar and the history at once.\n"
    "(function () {\n"
    "  var here = document.currentScript;\n"
    "  var target = here ? here.getAttribute('data-target') : null;\n"
    "  if (target && target.charAt(0) === '/' && target.charAt(1) !== '/' && target.charAt(1) !== '\\\\') {\n"
    "    history.replaceState(null, '', target);\n"
    "  }\n"
    "})();\n"
)


def link_script(target: str) -> Html:
    """The script tag of a link page: :data:`LINK_SCRIPT_ROUTE`, with the address it leaves in the
    bar as an attribute (escaped as one; no inline script)."""
    tag = '<script src="{src:url}" data-target="{target:url}"></script>'
    return render(tag, src=LINK_SCRIPT_ROUTE, target=target)


async def link_script_route(request: Request) -> Response:
    """``GET /_denominator/link.js``: :data:`LINK_SCRIPT`, the same for every page."""
    return Response(
        LINK_SCRIPT,
        media_type="text/javascript",
        headers={
            "Cache-Control": "no-cache",
            "X-Content-Type-Options": "nosniff",
            "Content-Security-Policy": "default-src 'none'; frame-ancestors 'none'",
        },
    )


def script_json(value: Any) -> str:
    """``value`` as a JavaScript literal safe inside ``<script>``: JSON with ``<``, ``>`` and
    ``&`` escaped (no ``</script>`` or ``<!--`` can appear), every other non-ASCII as ``\\uXXXX``."""
    return (
        json.dumps(value, ensure_ascii=True)
        .replace("<", "\\u003c")
        .replace(">", "\\u003e")
        .replace("&", "\\u0026")
    )


# ---------------------------------------------------------------- bodies

TOO_LARGE_HEADERS = {"Cache-Control": "no-store", "Connection": "close"}


class BodyStalled(DenominatorError):
    """A request body whose next bytes did not come within the idle deadline (answer 408)."""

    def __init__(self, seconds: float) -> None:
        super().__init__(f"the body stopped: no bytes came for {seconds:g} s")
        self.seconds = seconds


async def read_body(request: Request, limit: int, idle_seconds: float | None = None) -> bytes | None:
    """The request's body when it is at most ``limit`` bytes, else None (answer :func:`too_large`).
    A declared ``Content-Length`` over the limit (or not a number) is refused before a byte is
    read (leading zeros are the number's: ``0008`` is 8); a body sent without one (chunked) is
    read until it passes the limit, no further. With ``idle_seconds``, a body whose next bytes do
    not come within that many seconds raises :class:`BodyStalled`, and what came is dropped."""
    declared = request.headers.get("content-length")
    if declared is not None:
        digits = declared.strip().lstrip("0") or "0"
        number = digits.isascii() and digits.isdigit()
        if not number or len(digits) > len(str(limit)) or int(digits) > limit:
            return None
    chunks: list[bytes] = []
    size = 0
    try:
        async with aclosing(request.stream()) as stream:
            while True:
                try:
                    chunk = await asyncio.wait_for(anext(stream), idle_seconds)
                except StopAsyncIteration:
                    break
                except TimeoutError:
                    raise BodyStalled(idle_seconds or 0) from None
                size += len(chunk)
                if size > limit:
                    return None
                chunks.append(chunk)
    except ClientDisconnect:  # gone before the body ended: nothing to answer, nothing kept
        return None
    return b"".join(chunks)


def too_large(limit: int) -> Response:
    """413 for a body over ``limit`` bytes; the connection is closed, so the rest is never read."""
    return Response(
        f"A request here carries at most {limit} bytes.\n",
        status_code=413,
        media_type="text/plain",
        headers=TOO_LARGE_HEADERS,
    )


# ---------------------------------------------------------------- framing


class FrameGuardMiddleware:
    """Every HTTP response, whoever wrote it (Streamlit's pages, its static files, the app's
    routes and middleware), says no page may frame it: ``X-Frame-Options: DENY`` and
    ``frame-ancestors 'none'``, added to the response's own ``Content-Security-Policy`` or as a
    policy of that directive alone (nothing else of Streamlit's pages is restricted). Outermost
    of the app's middleware, so even a refusal carries it."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def guarded(message: Message) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": framed(list(message.get("headers") or []))}
            await send(message)

        await self.app(scope, receive, guarded)


def framed(headers: list[tuple[bytes, bytes]]) -> list[tuple[bytes, bytes]]:
    """``headers`` with ``X-Frame-Options: DENY`` (in place of any other) and, unless a policy of
    the response already says ``frame-ancestors 'none'``, a ``Content-Security-Policy`` of that
    directive alone: a second policy is enforced beside the first, never loosening it."""
    out = [(name, value) for name, value in headers if name.lower() != b"x-frame-options"]
    out.append((b"x-frame-options", b"DENY"))
    if not any(
        name.lower() == b"content-security-policy" and b"frame-ancestors 'none'" in value.lower()
        for name, value in headers
    ):
        out.append((b"content-security-policy", b"frame-ancestors 'none'"))
    return out
