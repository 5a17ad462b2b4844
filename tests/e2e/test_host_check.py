"""DNS rebinding (issue #17, Why 2): a page elsewhere whose name resolves to 127.0.0.1 must not
reach the app, which in single-user local mode has no token to stop it. `make run`'s server is
asked with a foreign ``Host`` (and ``Origin``), as a rebinding browser would send them: the page,
the session routes and the app's WebSocket are refused; the loopback names are served."""

from __future__ import annotations

import base64
import os
import socket
import urllib.parse

import pytest

from tests.conftest import running_app

pytestmark = pytest.mark.slow  # a real server

FOREIGN = "rebind.example"


def http(url: str, path: str, host: str, method: str = "GET", origin: str | None = None) -> tuple[int, str]:
    """The status line's code and the body of one raw HTTP/1.1 request with this Host."""
    parts = urllib.parse.urlsplit(url)
    port = parts.port
    lines = [f"{method} {path} HTTP/1.1", f"Host: {host}:{port}", "Connection: close", "Content-Length: 0"]
    if origin:
        lines.append(f"Origin: {origin}")
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    return int(head.split(b" ")[1]), body.decode("utf-8", errors="replace")


def websocket_upgrade(url: str, host: str, origin: str) -> int:
    """The status code the server answers a WebSocket upgrade to ``/_stcore/stream`` with
    (101: switched, the app's stream is open)."""
    port = urllib.parse.urlsplit(url).port
    key = base64.b64encode(os.urandom(16)).decode()
    request = (
        "GET /_stcore/stream HTTP/1.1\r\n"
        f"Host: {host}:{port}\r\n"
        "Upgrade: websocket\r\nConnection: Upgrade\r\n"
        f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n"
        "Sec-WebSocket-Protocol: streamlit\r\n"
        f"Origin: {origin}\r\n\r\n"
    )
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(request.encode())
        head = b""
        while b"\r\n" not in head:
            chunk = sock.recv(4096)
            if not chunk:
                break
            head += chunk
    return int(head.split(b" ")[1]) if head else 0


def test_a_foreign_host_is_refused_and_loopback_is_served(make_run_db) -> None:
    with running_app(make_run_db) as url:
        port = urllib.parse.urlsplit(url).port
        # the loopback names: the page and the app's stream
        for name in ("127.0.0.1", "localhost"):
            assert http(url, "/", name)[0] == 200
            assert websocket_upgrade(url, name, f"http://{name}:{port}") == 101
        # a rebinding page: its Host and Origin are its own name
        origin = f"http://{FOREIGN}:{port}"
        assert websocket_upgrade(url, FOREIGN, origin) != 101
        for path in ("/", "/data", "/_stcore/health"):
            code, body = http(url, path, FOREIGN, origin=origin)
            assert code == 403, (path, code)
            assert body == "This server answers to localhost, 127.0.0.1, ::1 only (server.allowedHosts).\n"
        code, _ = http(url, "/_denominator/session", FOREIGN, method="POST", origin=origin)
        assert code == 403
