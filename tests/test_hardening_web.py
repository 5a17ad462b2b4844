"""Issue #38, items 1, 2 and 6: the app's own HTTP answers (annotation/web.py, the routes and
middleware of annotation/access/routes.py).

1. The sign-in link page wrote the request's decoded path into an inline script (json.dumps keeps
   ``</script>``) under a policy allowing inline script: a link from another site ran its own
   script. Every page of the app's own is now one template's, each value escaped for its place,
   with no inline script and a policy that allows none; the sidebar's one inline script escapes
   ``<``, ``>`` and ``&`` in its literals.
2. The routes read a whole body before cutting it: a 1 GB POST took the server to 1.3 GB. Each
   route now reads at most its limit (the length checked first, the stream cut), else 413.
6. Only the link page refused framing: every response now carries ``X-Frame-Options: DENY`` and
   ``frame-ancestors 'none'``.

The browser's side of 1 and 6 is tests/e2e/test_hardening_web_browser.py.
"""

from __future__ import annotations

import ast
import asyncio
import json
import re
import select
import socket
import threading
import time
import types
import urllib.parse
import urllib.request
from html.parser import HTMLParser
from pathlib import Path

import pytest
from starlette.applications import Starlette
from starlette.responses import PlainTextResponse
from starlette.routing import Route
from starlette.testclient import TestClient

from annotation import web
from annotation.access import sign_in_pages
from annotation.access.routes import (
    CODE_LIMIT,
    LINK_LIMIT,
    LINK_ROUTE,
    MIDDLEWARE,
    ROUTES,
    SESSION_ROUTE,
    SIGN_OUT_ROUTE,
)
from annotation.store import Store
from tests.conftest import ROOT, add_tokens, running_app

PAYLOAD_PATH = "/%3C%2Fscript%3E%3Cscript%3Ewindow.pwned%3D1%3C%2Fscript%3E"
PAYLOAD_DECODED = "/</script><script>window.pwned=1</script>"
HOSTILE = (
    "</script><script>alert(1)</script>",
    "\" onmouseover='alert(1)' x=\"",
    "<!--",
    "a&b<c>d",
    "javascript:x",
)


@pytest.fixture
def demo(tmp_path, make_run_db) -> tuple[Path, dict[str, str]]:
    db = tmp_path / "tokens.db"
    db.write_bytes(make_run_db.read_bytes())
    return db, add_tokens(db)


def client(db: Path, monkeypatch) -> TestClient:
    monkeypatch.setenv("DENOMINATOR_DB", str(db))

    async def streamlit_page(request):  # what Streamlit would answer: no header of its own
        return PlainTextResponse(f"page {request.url.path}")

    app = Starlette(routes=[*ROUTES, Route("/{path:path}", streamlit_page)], middleware=MIDDLEWARE)
    return TestClient(app, base_url="http://localhost")


class Parsed(HTMLParser):
    """Every tag with its attributes, every script's inline text, and the page's text."""

    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.scripts: list[tuple[dict[str, str | None], str]] = []
        self.text: list[str] = []
        self._in_script: dict[str, str | None] | None = None
        self.feed(text)
        self.close()

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        if tag == "script":
            self._in_script = dict(attrs)
            self.scripts.append((self._in_script, ""))

    def handle_endtag(self, tag):
        if tag == "script":
            self._in_script = None

    def handle_data(self, data):
        if self._in_script is not None:
            attrs, text = self.scripts[-1]
            self.scripts[-1] = (attrs, text + data)
        else:
            self.text.append(data)


def policy(response) -> dict[str, str]:
    """The page's Content-Security-Policy, directive -> sources."""
    directives = [d.strip() for d in response.headers["content-security-policy"].split(";") if d.strip()]
    return {d.split()[0]: " ".join(d.split()[1:]) for d in directives}


# ---------------------------------------------------------------- 1. the link page: no script of another site


def test_a_link_carrying_a_script_in_its_path_gets_a_page_without_inline_script(demo, monkeypatch) -> None:
    """The issue's link: the path is the page's data, escaped where it is written, and the page
    runs no script but the server's own file (the policy allows no other)."""
    db, tokens = demo
    http = client(db, monkeypatch)
    for token in ("x", tokens["ann"]):
        page = http.get(f"{PAYLOAD_PATH}?token={token}", follow_redirects=False)
        assert page.status_code == 200
        parsed = Parsed(page.text)
        # one script, the server's file, its target an attribute holding the decoded path
        assert parsed.scripts == [({"src": "/_denominator/link.js", "data-target": PAYLOAD_DECODED}, "")]
        assert "<script>window" not in page.text and "</script><script>" not in page.text
        assert not [(tag, a) for tag, attrs in parsed.tags for a in attrs if a.startswith("on")]
        links = [attrs["href"] for tag, attrs in parsed.tags if tag == "a"]
        assert links == [PAYLOAD_DECODED]  # "Go on without signing in": the same path, as data
        rules = policy(page)
        assert (
            rules["script-src"] == "'self'" and "unsafe-inline" not in page.headers["content-security-policy"]
        )
        assert rules["default-src"] == "'none'" and rules["frame-ancestors"] == "'none'"
        assert rules["style-src"].startswith("'sha256-")
        assert page.headers["x-content-type-options"] == "nosniff"
        assert "set-cookie" not in page.headers
    with Store(db) as store:
        assert store.db.execute("SELECT count(*) FROM sessions").fetchone() == (0,)


def test_the_link_pages_escape_every_value_for_its_place(demo, monkeypatch) -> None:
    """Names, token and address as hostile as they come, on every variant of the page (valid,
    someone else signed in, not valid, the button's refusals): each is read back as the same
    text or attribute value, and no tag or script comes of them."""
    db, tokens = demo
    with Store(db) as store:
        evil = {value: store.add_annotator(f"n{i}{value}", "annotator") for i, value in enumerate(HOSTILE)}
    http = client(db, monkeypatch)
    origin = {"origin": "http://localhost"}
    for i, (value, token) in enumerate(evil.items()):
        name = f"n{i}{value}"
        path = "/" + urllib.parse.quote(value, safe="")
        page = http.get(f"{path}?token={token}&q={urllib.parse.quote(value)}")
        parsed = Parsed(page.text)
        target = f"/{value}?q={urllib.parse.quote_plus(value)}"
        assert parsed.scripts == [({"src": "/_denominator/link.js", "data-target": target}, "")]
        fields = {a["name"]: a["value"] for tag, a in parsed.tags if tag == "input"}
        assert fields == {"token": token, "next": target}
        assert f"This link signs this browser in as {name} (annotator)." in "".join(parsed.text)
        assert [tag for tag, _ in parsed.tags] == [
            "html", "head", "meta", "title", "style", "body", "h1", "p", "b", "p", "form", "input", "input",
            "button", "p", "a", "script",
        ]  # fmt: skip
        # the button's refusals write the POSTed token and address back: escaped the same way
        refused = http.post(LINK_ROUTE, data={"token": value, "next": "/" + value}, headers=origin)
        assert refused.status_code == 403
        again = Parsed(refused.text)
        assert again.scripts == [({"src": "/_denominator/link.js", "data-target": "/" + value}, "")]
        assert "unsafe-inline" not in refused.headers["content-security-policy"]
    # someone else signed in on this browser: both names written as text
    http.post(LINK_ROUTE, data={"token": tokens["ann"]}, headers=origin, follow_redirects=False)
    token = evil[HOSTILE[0]]
    parsed = Parsed(http.get(f"/?token={token}").text)
    said = f"This browser is signed in as ann (annotator): signing in as n0{HOSTILE[0]} signs ann out here."
    assert said in "".join(parsed.text)


def test_render_escapes_by_context_and_refuses_a_placeholder_without_one() -> None:
    for value in HOSTILE:
        made = web.render('<p title="{v:attr}">{v:text}</p><a href="{u:url}">x</a>', v=value, u=value)
        parsed = Parsed(made)
        assert parsed.tags == [("p", {"title": value}), ("a", {"href": "/"})]  # not a path here: "/"
        assert "".join(parsed.text) == value + "x"
    assert Parsed(web.render('<a href="{u:url}">x</a>', u="/a?b=<c>")).tags == [("a", {"href": "/a?b=<c>"})]
    for leaving in ("//evil.test/x", "/\\evil.test", "https://evil.test/", "javascript:alert(1)"):
        assert web.render("{u:url}", u=leaving) == "/"
    with pytest.raises(TypeError):
        web.render("{v:html}", v="<b>not made by render</b>")
    assert web.render("{v:html}", v=web.render("<b>{x:text}</b>", x="<")) == "<b>&lt;</b>"
    with pytest.raises(ValueError):
        web.render("<p>{v}</p>", v="<b>")
    with pytest.raises(TypeError):
        web.html_response("<p>a str, not a page</p>")  # type: ignore[arg-type]


def test_the_link_script_is_a_file_of_this_server(demo, monkeypatch) -> None:
    db, _ = demo
    answer = client(db, monkeypatch).get(web.LINK_SCRIPT_ROUTE)
    assert answer.status_code == 200 and answer.text == web.LINK_SCRIPT
    assert answer.headers["content-type"].startswith("text/javascript")
    assert answer.headers["x-content-type-options"] == "nosniff"
    assert "history.replaceState(null, '', target)" in answer.text


def test_only_the_template_serves_html() -> None:
    """The class, not the instance: no module of the product builds an HTML response but
    annotation/web.py's html_response (which takes only what the template made)."""
    offenders = []
    for package in ("annotation", "calibration", "judge", "denominator"):
        for path in sorted((ROOT / package).rglob("*.py")):
            if path == ROOT / "annotation" / "web.py":
                continue
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                names = [node.id] if isinstance(node, ast.Name) else []
                names += [node.attr] if isinstance(node, ast.Attribute) else []
                names += [a.name for a in node.names] if isinstance(node, ast.ImportFrom) else []
                if "HTMLResponse" in names:
                    offenders.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not offenders, offenders


def test_the_sidebar_script_escapes_its_literals(monkeypatch) -> None:
    """The one inline script the app gives Streamlit: a body holding ``</script>`` and ``<!--``
    stays inside its JSON string (``<`` ``>`` ``&`` escaped), and reads back whole."""
    written: list[str] = []
    sidebar = types.SimpleNamespace(html=lambda body, **_: written.append(body))
    monkeypatch.setattr(sign_in_pages.st, "sidebar", sidebar)
    body = "</script><script>alert(1)</script><!-- & -->"
    sign_in_pages._post(SESSION_ROUTE, body)
    (script,) = written
    assert script.startswith("<script>fetch(") and script.endswith(");</script>")
    assert script.count("<") == 2 and script.count(">") == 2 and "&" not in script
    literal = re.search(r"body: (\"[^\"]*\"), credentials", script)
    assert literal is not None and json.loads(literal.group(1)) == body
    assert web.script_json("\u2028</") == '"\\u2028\\u003c/"'


# ---------------------------------------------------------------- 2. bodies: at most the limit is read


def asgi_post(
    app, path: str, chunks: int, *, chunk: int = 65536, declared: int | None = None
) -> tuple[int, int, dict]:
    """POST ``chunks`` chunks of ``chunk`` bytes to ``app`` (a lazy body: generated as it is
    read); (status, bytes the app read, response headers)."""
    pulled = 0
    sent = 0
    headers = [(b"host", b"localhost"), (b"origin", b"http://localhost")]
    if declared is not None:
        headers.append((b"content-length", str(declared).encode()))
    scope = {
        "type": "http", "http_version": "1.1", "method": "POST", "scheme": "http", "path": path,
        "raw_path": path.encode(), "query_string": b"", "root_path": "", "headers": headers,
        "client": ("127.0.0.1", 1), "server": ("localhost", 80),
    }  # fmt: skip
    answer: dict = {}

    async def receive():
        nonlocal pulled, sent
        if sent >= chunks:
            return {"type": "http.disconnect"}
        sent += 1
        pulled += chunk
        return {"type": "http.request", "body": b"a" * chunk, "more_body": sent < chunks}

    async def send(message):
        if message["type"] == "http.response.start":
            answer["status"] = message["status"]
            answer["headers"] = {k.decode().lower(): v.decode() for k, v in message["headers"]}

    asyncio.run(app(scope, receive, send))
    return answer["status"], pulled, answer["headers"]


@pytest.mark.parametrize(
    ("route", "limit"),
    [(SESSION_ROUTE, CODE_LIMIT), (SIGN_OUT_ROUTE, CODE_LIMIT), (LINK_ROUTE, LINK_LIMIT)],
)  # fmt: skip
def test_every_route_reads_at_most_its_limit(demo, monkeypatch, route, limit) -> None:
    """64 MiB offered to each route, declared (refused before a byte is read) and chunked (read
    until the limit is passed, one chunk of 64 KiB past it at most): 413, the connection closed."""
    db, _ = demo
    monkeypatch.setenv("DENOMINATOR_DB", str(db))
    app = Starlette(routes=ROUTES, middleware=MIDDLEWARE)
    status, pulled, headers = asgi_post(app, route, 1024, declared=1024 * 65536)
    assert (status, pulled) == (413, 0)
    assert headers["connection"] == "close"
    status, pulled, headers = asgi_post(app, route, 1024)
    assert status == 413 and pulled == 65536  # the first chunk already passes every limit
    assert headers["connection"] == "close"
    status, pulled, _ = asgi_post(app, route, 1024, chunk=16)  # small chunks: cut just past the limit
    assert status == 413 and limit < pulled <= limit + 16
    # within the limit: read whole and answered as before (no code, no session: 403 or 204)
    status, pulled, _ = asgi_post(app, route, 1, chunk=16, declared=16)
    assert status in (204, 403) and pulled == 16


def test_a_body_past_the_limit_is_refused_saying_so(demo, monkeypatch) -> None:
    db, _ = demo
    http = client(db, monkeypatch)
    for route in (SESSION_ROUTE, LINK_ROUTE, SIGN_OUT_ROUTE):
        big = http.post(route, content=b"a" * (LINK_LIMIT + 1), headers={"origin": "http://localhost"})
        assert big.status_code == 413 and big.headers["connection"] == "close"
        assert big.text.startswith("A request here carries at most ")


# ---------------------------------------------------------------- 6. framing: every response refuses it


def test_every_response_refuses_to_be_framed(demo, monkeypatch) -> None:
    db, tokens = demo
    http = client(db, monkeypatch)
    origin = {"origin": "http://localhost"}
    answers = {
        "a page": http.get("/data"),
        "the link page": http.get(f"/label?token={tokens['ann']}"),
        "the link script": http.get(web.LINK_SCRIPT_ROUTE),
        "a refused code": http.post(SESSION_ROUTE, content=b"x", headers=origin),
        "another site's post": http.post(LINK_ROUTE, data={"token": "x"}),
        "sign-out": http.post(SIGN_OUT_ROUTE, headers=origin),
        "too large": http.post(LINK_ROUTE, content=b"a" * 5000, headers=origin),
        "a wrong method": http.get(SESSION_ROUTE),
        "a foreign host": http.get("/", headers={"host": "rebind.example"}),
        "the button": http.post(LINK_ROUTE, data={"token": tokens["ann"]}, headers=origin, follow_redirects=False),
    }  # fmt: skip
    assert answers["a foreign host"].status_code == 403 and answers["the button"].status_code == 303
    for what, answer in answers.items():
        assert answer.headers["x-frame-options"] == "DENY", what
        policies = answer.headers.get_list("content-security-policy")
        assert any("frame-ancestors 'none'" in p for p in policies), (what, policies)
    # a page of Streamlit's: that directive alone (nothing else of Streamlit's is restricted)
    assert answers["a page"].headers.get_list("content-security-policy") == ["frame-ancestors 'none'"]
    # a response with a policy of its own keeps it, and one allowing framers is overruled by a second
    assert web.framed([(b"Content-Security-Policy", b"default-src 'self'")]) == [
        (b"Content-Security-Policy", b"default-src 'self'"),
        (b"x-frame-options", b"DENY"),
        (b"content-security-policy", b"frame-ancestors 'none'"),
    ]
    assert web.framed(
        [(b"X-Frame-Options", b"SAMEORIGIN"), (b"content-security-policy", b"frame-ancestors *")]
    ) == [
        (b"content-security-policy", b"frame-ancestors *"),
        (b"x-frame-options", b"DENY"),
        (b"content-security-policy", b"frame-ancestors 'none'"),
    ]


# ---------------------------------------------------------------- a real server: 1 GB to every route

GIB = 1 << 30
PIECE = 1 << 16


def listening_pid(port: int) -> int:
    """The process listening on 127.0.0.1:``port`` (the served app: `denominator serve` execs
    streamlit in place), found through its socket's inode."""
    inodes = set()
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        if fields[3] == "0A" and int(fields[1].split(":")[1], 16) == port:
            inodes.add(fields[9])
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            for fd in (proc / "fd").iterdir():
                if fd.readlink().name in {f"socket:[{i}]" for i in inodes}:
                    return int(proc.name)
        except OSError:
            continue
    pytest.fail(f"no process listens on port {port}")


def memory_kb(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise AssertionError(field)


def send_gigabyte(port: int, method: str, path: str, *, chunked: bool) -> tuple[str, int]:
    """One request carrying 1 GiB, generated as it is sent (declared with Content-Length, or
    chunked without one); sending stops as soon as the server answers or closes. (The answer's
    status, or "closed"/"reset" when none arrived; bytes sent.)"""
    head = [
        f"{method} {path} HTTP/1.1",
        f"Host: 127.0.0.1:{port}",
        f"Origin: http://127.0.0.1:{port}",
        "Content-Type: application/x-www-form-urlencoded",
        "Transfer-Encoding: chunked" if chunked else f"Content-Length: {GIB}",
    ]
    piece = (f"{PIECE:x}\r\n".encode() + b"a" * PIECE + b"\r\n") if chunked else b"a" * PIECE
    sock = socket.create_connection(("127.0.0.1", port), timeout=30)
    sock.sendall(("\r\n".join(head) + "\r\n\r\n").encode())
    sock.setblocking(False)
    sent, offset, answer = 0, 0, b""
    deadline = time.monotonic() + 120
    try:
        while sent < GIB and time.monotonic() < deadline:
            readable, writable, _ = select.select([sock], [sock], [], 5)
            if readable:
                data = sock.recv(65536)
                answer += data
                if not data or b"\r\n" in answer:
                    break
            if writable:
                n = sock.send(piece[offset:])
                offset = (offset + n) % len(piece)
                sent += n
    except (BrokenPipeError, ConnectionResetError):
        pass
    sock.setblocking(True)
    sock.settimeout(5)
    try:
        while b"\r\n" not in answer and (data := sock.recv(65536)):
            answer += data
    except (ConnectionResetError, TimeoutError, OSError):
        pass
    sock.close()
    if b"\r\n" in answer:
        return answer.split(b" ")[1].decode(), sent
    return ("closed" if answer == b"" else "partial"), sent


class Peak:
    """The process's resident memory, sampled every 10 ms in a thread, and its peak."""

    def __init__(self, pid: int) -> None:
        self.pid, self.peak, self._stop = pid, 0, threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, memory_kb(self.pid, "VmRSS"))
            time.sleep(0.01)

    def __enter__(self) -> Peak:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()


def hostile_routes(token: str) -> list[tuple[str, str]]:
    """Every route of the served app a body can be sent to: the app's own (from
    annotation.access.routes.ROUTES, so a route added later is here too), the link page the
    middleware writes, and Streamlit's."""
    ours = [
        (method, route.path) for route in ROUTES for method in sorted(route.methods or ()) if method != "HEAD"
    ]
    return [
        *ours,
        ("GET", f"/label?token={token}"),
        ("GET", "/"),
        ("GET", "/data"),
        ("GET", "/_stcore/health"),
        ("GET", "/_stcore/host-config"),
        ("PUT", "/_stcore/upload_file/some-session/some-file"),
        ("POST", "/_stcore/agent/interact"),
        ("POST", "/_stcore/agent/mcp"),
    ]


@pytest.mark.slow  # a real server, and 1 GiB offered to every route
def test_a_gigabyte_to_every_route_grows_the_server_by_less_than_10_mb(make_run_db, tmp_path, figure) -> None:
    db = tmp_path / "tokens.db"
    db.write_bytes(make_run_db.read_bytes())
    tokens = add_tokens(db)
    with running_app(db) as url:
        port = urllib.parse.urlsplit(url).port
        assert port is not None
        pid = listening_pid(port)
        routes = hostile_routes(tokens["ann"])
        assert ("POST", LINK_ROUTE) in routes and ("GET", web.LINK_SCRIPT_ROUTE) in routes
        # warm: each route answered once (its modules imported, its threads started)
        for method, path in routes:
            request = urllib.request.Request(
                f"{url}{path}", data=b"a" * 10 if method != "GET" else None, method=method
            )
            request.add_header("Origin", url)
            try:
                urllib.request.urlopen(request, timeout=30).close()
            except OSError:
                pass
        for method, path in routes:
            send_gigabyte(port, method, path, chunked=True)
        time.sleep(1)
        before = memory_kb(pid, "VmRSS")
        outcomes = {}
        with Peak(pid) as peak:
            for method, path in routes:
                for chunked in (False, True):
                    outcomes[(method, path, chunked)] = send_gigabyte(port, method, path, chunked=chunked)
        after = memory_kb(pid, "VmRSS")
    grown_mb = (max(peak.peak, after) - before) / 1024
    sent_mb = sum(sent for _, sent in outcomes.values()) / (1 << 20)
    figure(
        f"1 GiB offered to {len(routes)} routes, declared and chunked: server RSS {before / 1024:.0f} MB "
        f"before, peak {peak.peak / 1024:.0f} MB (+{grown_mb:.1f} MB), {sent_mb:.0f} MB sent in all before "
        "each answer"
    )
    ours = {(m, p) for m, p in routes if p.startswith("/_denominator/") and m == "POST"}
    for (method, path, chunked), (status, sent) in outcomes.items():
        assert sent < 64 << 20, (method, path, chunked, status, sent)  # answered long before 1 GiB
        if (method, path) in ours:  # 413, or closed on the client before it could read the 413
            assert status in ("413", "closed", "partial"), (method, path, chunked, status)
    assert grown_mb < 10, (before, peak.peak, after, outcomes)
