"""What ``denominator serve`` adds to the server Streamlit runs (denominator/server.py): a deadline
for a request's head, one for a pause inside a body (the API answers 408 and stores nothing), a cap
on open connections that a whole request still gets through, WebSockets left alone, the accept
errors' log held to one a minute, and the hook in the pinned Streamlit refused loudly if it moved.
Driven over real sockets: the protocol under uvicorn in a thread, and a real ``serve --api``."""

from __future__ import annotations

import contextlib
import inspect
import json
import logging
import socket
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Mount, Route, WebSocketRoute
from starlette.websockets import WebSocket

from annotation.http_api import BODY_IDLE_ENV, api_app
from annotation.store import Store
from denominator import server
from denominator.server import AcceptFloodFilter, DeadlineProtocol, Guard, ServerGuardMissing
from tests.conftest import free_port, started_server
from tests.test_http_api import bearer, traces_body

HEAD = b"GET /api/me HTTP/1.1\r\nHost: 127.0.0.1\r\nX-a: "  # the attack's half-sent head
SLACK = 3.0  # seconds past a deadline a close may take on a loaded two-core machine


def admin(db: Path) -> str:
    with Store(db) as store:
        return store.add_annotator("root", "admin") or ""


def traces(db: Path) -> int:
    with Store(db) as store:
        return int(store.db.execute("SELECT count(*) FROM traces").fetchone()[0])


async def echo(websocket: WebSocket) -> None:
    await websocket.accept()
    while True:
        await websocket.send_text(await websocket.receive_text())


async def upload(request: Request) -> PlainTextResponse:
    """A route that reads its body with no deadline of its own, as Streamlit's upload route does."""
    return PlainTextResponse(f"{len(await request.body())} bytes")


@contextlib.contextmanager
def guarded_server(db: Path, settings: Guard) -> Iterator[int]:
    """The API and an echo WebSocket under uvicorn with :class:`DeadlineProtocol` and ``settings``,
    as ``serve`` installs it: its port."""
    port = free_port()
    app = Starlette(
        routes=[
            Mount("/api", app=api_app(str(db))),
            WebSocketRoute("/ws", echo),
            Route("/upload", upload, methods=["POST"]),
        ]
    )
    config = uvicorn.Config(
        app,
        host="127.0.0.1",
        port=port,
        log_level="warning",
        lifespan="off",
        http=server.protocol(settings),
        ws="websockets-sansio",  # Streamlit's choice on this uvicorn
    )
    running = uvicorn.Server(config)
    thread = threading.Thread(target=running.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not running.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the server did not start")
        time.sleep(0.02)
    try:
        yield port
    finally:
        running.should_exit = True
        thread.join(timeout=10)


def until_closed(sock: socket.socket, wait: float) -> tuple[float, bytes]:
    """Seconds until the server closed ``sock`` (or ``wait`` passed), and what it wrote."""
    started, got = time.monotonic(), b""
    sock.settimeout(wait)
    with contextlib.suppress(TimeoutError, ConnectionResetError):
        while chunk := sock.recv(65536):
            got += chunk
    return time.monotonic() - started, got


def is_open(sock: socket.socket) -> bool:
    sock.setblocking(False)
    try:
        return sock.recv(1) not in (b"", b"H")  # closed, or answered (408 or 503) and closing
    except BlockingIOError:
        return True
    except OSError:
        return False


def test_a_half_sent_head_is_closed_at_its_deadline(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    admin(db)
    with guarded_server(db, Guard(1.0, 30.0, 50)) as port:
        half = socket.create_connection(("127.0.0.1", port))
        half.sendall(HEAD)
        silent = socket.create_connection(("127.0.0.1", port))  # a connection that sends nothing
        took, said = until_closed(half, 1.0 + SLACK + 5)
        took_silent, _ = until_closed(silent, 1.0 + SLACK + 5)
    assert 0.8 <= took <= 1.0 + SLACK, took
    assert took_silent <= 1.0 + SLACK
    assert said.startswith(b"HTTP/1.1 408 Request Timeout\r\n") and b"connection: close" in said


def test_a_trickled_head_does_not_move_its_deadline(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    admin(db)
    with guarded_server(db, Guard(1.5, 30.0, 50)) as port:
        sock = socket.create_connection(("127.0.0.1", port))
        started = time.monotonic()
        sock.sendall(b"GET /api/me HTTP/1.1\r\n")
        with contextlib.suppress(OSError):
            for _ in range(10):  # a header line every 0.5 s: 5 s of head if it were let
                time.sleep(0.5)
                sock.sendall(b"X-a: b\r\n")
        took, said = until_closed(sock, SLACK + 5)
    assert time.monotonic() - started - took <= 1.5 + SLACK
    assert said.startswith(b"HTTP/1.1 408")


def test_a_stalled_body_is_408_and_stores_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db = tmp_path / "s.db"
    token = admin(db)
    monkeypatch.setenv(BODY_IDLE_ENV, "1")
    with guarded_server(db, Guard(5.0, 1.0 + server.BODY_GRACE, 50)) as port:
        sock = socket.create_connection(("127.0.0.1", port))
        sock.sendall(
            b"POST /api/import/traces HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            + f"Authorization: Bearer {token}\r\nContent-Length: 1000000\r\n\r\n".encode()
            + traces_body(1)[:6]
        )
        took, said = until_closed(sock, 1.0 + SLACK + 5)
    head, _, body = said.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 408 Request Timeout\r\n") and b"connection: close" in head
    assert json.loads(body) == {
        "error": "the body stopped: no bytes came for 1 s; send the whole body at once, nothing was stored"
    }
    assert 0.8 <= took <= 1.0 + SLACK
    assert traces(db) == 0


def test_a_stalled_body_outside_the_api_is_closed(tmp_path: Path) -> None:
    """A route with no deadline of its own (the pages' uploads): the protocol closes the pause."""
    db = tmp_path / "s.db"
    admin(db)
    with guarded_server(db, Guard(5.0, 1.0, 50)) as port:
        sock = socket.create_connection(("127.0.0.1", port))
        sock.sendall(b"POST /upload HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 1000\r\n\r\nabc")
        took, said = until_closed(sock, 1.0 + SLACK + 5)
        whole = httpx.post(f"http://127.0.0.1:{port}/upload", content=b"x" * 1000, timeout=10)
    assert 0.8 <= took <= 1.0 + SLACK and said == b""
    assert whole.text == "1000 bytes"


def test_a_slow_but_steady_body_passes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db = tmp_path / "s.db"
    token = admin(db)
    monkeypatch.setenv(BODY_IDLE_ENV, "1")
    body = traces_body(6)
    parts = [body[i : i + len(body) // 8 + 1] for i in range(0, len(body), len(body) // 8 + 1)]

    def steady() -> Iterator[bytes]:  # a part every 0.4 s: about 3 s in all, each pause under 1 s
        for part in parts:
            time.sleep(0.4)
            yield part

    with guarded_server(db, Guard(1.0, 1.0 + server.BODY_GRACE, 50)) as port:
        sent = httpx.post(
            f"http://127.0.0.1:{port}/api/import/traces", content=steady(), headers=bearer(token), timeout=30
        )
    assert len(parts) >= 8
    assert sent.status_code == 200, sent.text
    assert sent.json()["imported"][0] == "traces body: 6 traces, 0 unchanged"
    assert traces(db) == 6


def test_at_the_cap_a_whole_request_still_gets_in(tmp_path: Path) -> None:
    """40 half-sent heads against a cap of 20: each new connection evicts the oldest head, so the
    held ones stay at the cap and a request sent whole is answered at once."""
    db = tmp_path / "s.db"
    token = admin(db)
    with guarded_server(db, Guard(60.0, 30.0, 20)) as port:
        held = []
        for _ in range(40):
            sock = socket.create_connection(("127.0.0.1", port))
            sock.sendall(HEAD)
            held.append(sock)
        time.sleep(0.5)
        started = time.monotonic()
        answer = httpx.get(f"http://127.0.0.1:{port}/api/me", headers=bearer(token), timeout=10)
        took = time.monotonic() - started
        still = sum(is_open(sock) for sock in held)
    assert answer.json() == {"name": "root", "role": "admin"}
    assert took < SLACK
    assert 18 <= still <= 20  # the newest heads, at most the cap (the request's own took a place)


def test_a_websocket_outlives_every_deadline(tmp_path: Path) -> None:
    from websockets.sync.client import connect

    db = tmp_path / "s.db"
    admin(db)
    with guarded_server(db, Guard(1.0, 1.0, 50)) as port, connect(f"ws://127.0.0.1:{port}/ws") as ws:
        ws.send("before")
        assert ws.recv(timeout=5) == "before"
        time.sleep(2.5)  # past the head's and the body's deadlines
        ws.send("after")
        assert ws.recv(timeout=5) == "after"


def test_the_accept_errors_pass_one_a_minute() -> None:
    now = [100.0]
    kept = AcceptFloodFilter(every=60.0, clock=lambda: now[0])

    def record(message: str) -> logging.LogRecord:
        return logging.LogRecord("asyncio", logging.ERROR, __file__, 1, message, None, None)

    flood = [record("socket.accept() out of system resource") for _ in range(5000)]
    assert [kept.filter(r) for r in flood[:3]] == [True, False, False]
    assert sum(kept.filter(r) for r in flood[3:]) == 0
    now[0] += 61
    late = record("socket.accept() out of system resource")
    assert kept.filter(late)
    assert late.msg.endswith("(4999 more such errors in the last 60 s not shown)")
    assert kept.filter(record("Task exception was never retrieved"))  # any other error passes


def test_the_hook_is_where_the_pinned_streamlit_builds_its_server(monkeypatch: pytest.MonkeyPatch) -> None:
    from streamlit.web.server.starlette import starlette_server

    for built in (starlette_server.UvicornRunner.run, starlette_server.UvicornServer.start):
        source = inspect.getsource(built)  # both servers take their Config's settings from the hook
        assert "uvicorn_kwargs = _get_uvicorn_config_kwargs()" in source
        assert "**uvicorn_kwargs" in source
    original = starlette_server._get_uvicorn_config_kwargs
    monkeypatch.setattr(starlette_server, "_get_uvicorn_config_kwargs", original)  # put back after
    asyncio_filters = list(logging.getLogger("asyncio").filters)
    try:
        server.install(Guard(7.0, 9.0, 11))
        server.install(Guard(7.0, 9.0, 11))  # twice: wrapped once
        kwargs = starlette_server._get_uvicorn_config_kwargs()
    finally:
        logging.getLogger("asyncio").filters[:] = asyncio_filters
    assert issubclass(kwargs["http"], DeadlineProtocol)
    assert kwargs["http"].settings == Guard(7.0, 9.0, 11)
    assert kwargs["backlog"] == server.BACKLOG == 64
    assert kwargs["ws"] == "websockets-sansio"  # Streamlit's own settings are kept


def test_a_streamlit_without_the_hook_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    from streamlit.web.server.starlette import starlette_server

    monkeypatch.delattr(starlette_server, "_get_uvicorn_config_kwargs")
    with pytest.raises(ServerGuardMissing, match="without _get_uvicorn_config_kwargs"):
        server.install(Guard(7.0, 9.0, 11))
    monkeypatch.setattr(
        starlette_server, "_get_uvicorn_config_kwargs", lambda: {"http": "h11"}, raising=False
    )
    server.install(Guard(7.0, 9.0, 11))
    with pytest.raises(ServerGuardMissing, match="chooses uvicorn's HTTP protocol itself"):
        starlette_server._get_uvicorn_config_kwargs()


@pytest.mark.parametrize(
    ("name", "value", "said"),
    [
        (
            "DENOMINATOR_HEADER_SECONDS",
            "0",
            "DENOMINATOR_HEADER_SECONDS: expected a whole number from 1 to 3600, got '0'",
        ),
        (
            "DENOMINATOR_HEADER_SECONDS",
            "1e3",
            "DENOMINATOR_HEADER_SECONDS: expected a whole number from 1 to 3600, got '1e3'",
        ),
        (
            "DENOMINATOR_BODY_IDLE_SECONDS",
            "3601",
            "DENOMINATOR_BODY_IDLE_SECONDS must be a whole number of seconds from 1 to 3600",
        ),
        (
            "DENOMINATOR_MAX_CONNECTIONS",
            "99999999",
            "DENOMINATOR_MAX_CONNECTIONS: expected a whole number from 1 to ",
        ),
    ],
)
def test_serve_refuses_a_setting_out_of_range(
    name: str, value: str, said: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from denominator.cli import main

    monkeypatch.setenv(name, value)
    assert main(["serve", "--db", "unused.db", "--api"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {said}") and err.count("\n") == 1


def test_serve_refuses_an_api_max_bytes_past_its_bound(capsys: pytest.CaptureFixture[str]) -> None:
    from denominator.cli import main

    assert main(["serve", "--db", "unused.db", "--api", "--api-max-bytes", "10000000000000"]) == 2
    assert capsys.readouterr().err == (
        "error: --api-max-bytes: expected at most 1073741824 (1 GiB), got 10000000000000\n"
    )


def test_the_guard_reads_its_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (
        "DENOMINATOR_HEADER_SECONDS",
        "DENOMINATOR_BODY_IDLE_SECONDS",
        "DENOMINATOR_MAX_CONNECTIONS",
    ):
        monkeypatch.delenv(name, raising=False)
    settings = server.guard()
    assert settings.header_seconds == 20.0
    assert settings.body_seconds == 30.0 + 5
    assert settings.max_connections == min(1000, server.raise_open_files() - 100)


@pytest.mark.slow
def test_serve_api_holds_the_deadlines_and_answers_in_json(tmp_path: Path) -> None:
    """A real ``serve --api``: the deadline reaches the server Streamlit builds (the hook holds in
    the pinned Streamlit), and every answer under /api is the API's JSON: a ``?token=`` there is no
    sign-in page and never echoed, a whole address as the target is 400 in JSON."""
    db = tmp_path / "s.db"
    token = admin(db)
    port = free_port()
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp_path),
        "PYTHONPATH": str(Path(__file__).resolve().parent.parent),
        "STREAMLIT_BROWSER_GATHER_USAGE_STATS": "false",
        "DENOMINATOR_HEADER_SECONDS": "2",
    }
    command = [sys.executable, "-m", "denominator", "serve", "--db", str(db), "--port", str(port), "--api"]
    with started_server(command, env, port) as served:
        half = socket.create_connection(("127.0.0.1", port))
        half.sendall(HEAD)
        took, said = until_closed(half, 2.0 + SLACK + 5)
        assert 1.8 <= took <= 2.0 + SLACK and said.startswith(b"HTTP/1.1 408"), (took, said)
        url = f"{served.url}/api"
        assert httpx.get(f"{url}/me", headers=bearer(token)).json() == {"name": "root", "role": "admin"}
        for method in ("GET", "HEAD"):
            for path in (f"/me?token={token}", "/labels?token=bogus"):
                answer = httpx.request(method, url + path)
                assert answer.status_code == 401
                assert answer.headers["content-type"] == "application/json"
                assert token not in answer.text and "bogus" not in answer.text
        page = httpx.get(f"{served.url}/?token={token}")  # a page's link still gets its sign-in page
        assert page.status_code == 200 and "text/html" in page.headers["content-type"]
        whole = socket.create_connection(("127.0.0.1", port))
        whole.sendall(
            b"GET http://evil.example/api/me HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
        )
        _, answered = until_closed(whole, 10)
    head, _, body = answered.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 400") and b"content-type: application/json" in head
    assert json.loads(body) == {
        "error": "the request target is a whole address; send its path only (/api/...)"
    }
