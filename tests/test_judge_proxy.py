"""The judge's live client behind a proxy, as a user behind a corporate proxy runs it: the client
passes httpx2 a transport of its own (#42), which makes httpx2 skip the proxy environment, so the
client reads it as httpx2 does (``judge.client.environment_proxy``): HTTP_PROXY, HTTPS_PROXY,
ALL_PROXY, NO_PROXY, either case. A forwarding proxy on 127.0.0.1 (absolute-form requests
forwarded, CONNECT tunnelled) counts what went through it; the fake endpoint counts what it answered."""

from __future__ import annotations

import asyncio
import base64
import os
import socket
import socketserver
import ssl
import threading
from pathlib import Path
from urllib.parse import urlsplit

import httpx2
import pytest

from judge.__main__ import main
from judge.client import CallFailed, Endpoint, EndpointRefused, JudgeClient, environment_proxy
from judge.prompts import response_format
from tests.fake_openai import FakeOpenAI
from tests.test_judge_tls import _certificate

SECRET = "pr0xy-s3cret"  # a proxy password: sent to the proxy, never shown


# ---------------------------------------------------------------- a forwarding proxy


def _read_head(stream) -> bytes:
    """A request or response head, up to and with its blank line (b"" at end of stream)."""
    lines = []
    while True:
        line = stream.readline(65537)
        if not line:
            return b""
        lines.append(line)
        if line in (b"\r\n", b"\n"):
            return b"".join(lines)


def _headers(head: bytes) -> dict[str, str]:
    fields = {}
    for line in head.decode("latin-1").split("\r\n")[1:]:
        name, sep, value = line.partition(":")
        if sep:
            fields[name.strip().lower()] = value.strip()
    return fields


def _pipe(source: socket.socket, target: socket.socket, seen: bytearray | None = None) -> None:
    try:
        while data := source.recv(65536):
            if seen is not None:
                seen.extend(data)
            target.sendall(data)
    except OSError:
        pass
    finally:
        for sock in (source, target):
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


class _ProxyHandler(socketserver.StreamRequestHandler):
    server: _ProxyServer

    def handle(self) -> None:
        proxy = self.server.proxy
        with proxy.lock:
            proxy.connections += 1
        upstream: socket.socket | None = None
        upstream_file = None
        try:
            while head := _read_head(self.rfile):
                method, target, version = head.split(b"\r\n", 1)[0].decode("latin-1").split(" ", 2)
                fields = _headers(head)
                with proxy.lock:
                    proxy.authorizations.append(fields.get("proxy-authorization"))
                if proxy.refuse:  # every request, a tunnel's too, answered with this status
                    self.rfile.read(int(fields.get("content-length") or 0))
                    self.wfile.write(b"HTTP/1.1 %s\r\nContent-Length: 0\r\n\r\n" % proxy.refuse)
                    self.wfile.flush()
                    continue
                if method == "CONNECT":  # a tunnel: piped both ways, never read
                    host, port = target.rsplit(":", 1)
                    tunnel = socket.create_connection((host, int(port)), timeout=10)
                    tunnel.settimeout(None)
                    with proxy.lock:
                        proxy.tunnels.append(target)
                    self.wfile.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
                    self.wfile.flush()
                    back = threading.Thread(target=_pipe, args=(tunnel, self.connection), daemon=True)
                    back.start()
                    _pipe(self.connection, tunnel, proxy.tunnelled)
                    back.join(timeout=10)
                    return
                url = urlsplit(target)  # absolute form: http://host:port/path
                if url.scheme != "http":
                    self.wfile.write(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")
                    return
                body = self.rfile.read(int(fields.get("content-length") or 0))
                if upstream is None:
                    upstream = socket.create_connection((url.hostname, url.port or 80), timeout=10)
                    upstream_file = upstream.makefile("rb")
                path = url.path + (f"?{url.query}" if url.query else "")
                kept = [
                    line
                    for line in head.split(b"\r\n")[1:]
                    if line and not line.lower().startswith((b"proxy-authorization:", b"proxy-connection:"))
                ]
                request = b"\r\n".join([f"{method} {path} {version}".encode(), *kept]) + b"\r\n\r\n"
                upstream.sendall(request + body)
                with proxy.lock:
                    proxy.forwarded.append((method, target))
                reply = _read_head(upstream_file)
                length = _headers(reply).get("content-length")
                content = upstream_file.read(int(length)) if length is not None else upstream_file.read()
                self.wfile.write(reply + content)
                self.wfile.flush()
                if length is None:
                    return
        except OSError:
            pass
        finally:
            if upstream is not None:
                upstream.close()


class _ProxyServer(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True
    proxy: ForwardingProxy


class ForwardingProxy:
    """An HTTP proxy on a free port of 127.0.0.1: ``forwarded`` (method, absolute URL) of each
    request it forwarded, ``tunnels`` the target of each CONNECT, ``tunnelled`` the bytes the client
    sent through them, ``authorizations`` each request's Proxy-Authorization (or None)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.forwarded: list[tuple[str, str]] = []
        self.tunnels: list[str] = []
        self.tunnelled = bytearray()
        self.authorizations: list[str | None] = []
        self.connections = 0
        self.refuse: bytes | None = None  # a status line's code and reason: every request refused
        self._server = _ProxyServer(("127.0.0.1", 0), _ProxyHandler)
        self._server.proxy = self
        self.port: int = self._server.server_address[1]
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()

    def url(self, credentials: str = "") -> str:
        return f"http://{credentials}127.0.0.1:{self.port}"

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)


@pytest.fixture
def proxy():
    running = ForwardingProxy()
    try:
        yield running
    finally:
        running.stop()


@pytest.fixture(autouse=True)
def no_proxy_environment(monkeypatch):
    """No proxy variable of the machine's (any ``*_proxy``, either case, NO_PROXY too) comes in: each
    test sets its own."""
    for name in list(os.environ):
        if name.lower().endswith("_proxy") or name == "REQUEST_METHOD":
            monkeypatch.delenv(name)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")


@pytest.fixture
def tls_server(tmp_path, monkeypatch):
    """The fake endpoint behind TLS on 127.0.0.1, its certificate trusted (SSL_CERT_FILE)."""
    cert_file, key_file = _certificate(tmp_path)
    monkeypatch.setenv("SSL_CERT_FILE", str(cert_file))
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert_file, key_file)
    server = FakeOpenAI()
    server._httpd.socket = context.wrap_socket(server._httpd.socket, server_side=True)
    server.start()
    try:
        yield server, f"https://127.0.0.1:{server.port}/v1"
    finally:
        server.stop()


def _free_port() -> int:
    with socket.socket() as probe:  # a free port, closed again: nothing listens there
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _calls(base_url: str, n: int, concurrency: int = 3, max_retries: int = 1) -> list[object]:
    """``n`` calls through one client, ``concurrency`` at once; each a CallResult or its exception."""

    async def go() -> list[object]:
        endpoint = Endpoint(
            base_url=base_url,
            model="fake-judge",
            concurrency=concurrency,
            timeout=10,
            backoff=0.01,
            max_retries=max_retries,
        )
        client = JudgeClient(endpoint)
        try:
            schema = response_format("relevance", "json_schema")
            messages = [{"role": "system", "content": "grade"}, {"role": "user", "content": "q"}]
            return await asyncio.gather(
                *(client.complete(messages, schema, f"proxy-{i}") for i in range(n)), return_exceptions=True
            )
        finally:
            await client.close()

    return asyncio.run(go())


def _answered(results: list[object]) -> None:
    failed = [r for r in results if isinstance(r, BaseException)]
    assert not failed, failed
    assert all(r.text and r.served_model == "fake-judge" for r in results)  # type: ignore[attr-defined]


# ---------------------------------------------------------------- the live client


@pytest.fixture
def opened(monkeypatch) -> list[tuple[str, int]]:
    """(host, port) of each connection the client's own network backend (judge.network) opens."""
    from judge import network

    seen: list[tuple[str, int]] = []
    connect = network.AsyncioBackend.connect_tcp

    async def counted(self, host, port, *args, **kwargs):
        seen.append((host, port))
        return await connect(self, host, port, *args, **kwargs)

    monkeypatch.setattr(network.AsyncioBackend, "connect_tcp", counted)
    return seen


def test_http_proxy_carries_every_call_through_asyncios_sockets(
    proxy, fake_openai, opened, monkeypatch
) -> None:
    """HTTP_PROXY with credentials: 6 calls at concurrency 3 are 6 requests forwarded, each with
    the proxy's Basic credentials (which the endpoint never sees), over connections opened by the
    client's own network backend (judge.network), to the proxy and nowhere else."""
    server = fake_openai()
    monkeypatch.setenv("HTTP_PROXY", proxy.url(f"puser:{SECRET}@"))
    _answered(_calls(server.base_url, 6, concurrency=3))
    assert proxy.forwarded == [("POST", f"{server.base_url}/chat/completions")] * 6
    assert proxy.tunnels == []
    token = base64.b64encode(f"puser:{SECRET}".encode()).decode()
    assert proxy.authorizations == [f"Basic {token}"] * 6
    assert sum(server.received.values()) == 6 == len(server.requests)
    assert not any("proxy-authorization" in {k.lower() for k in r["headers"]} for r in server.requests)
    assert 1 <= len(opened) <= 3 and set(opened) == {("127.0.0.1", proxy.port)}, opened


@pytest.mark.parametrize("variable", ["NO_PROXY", "no_proxy"])
def test_no_proxy_names_the_endpoint_and_the_calls_go_direct(
    proxy, fake_openai, monkeypatch, variable
) -> None:
    server = fake_openai()
    monkeypatch.setenv("HTTP_PROXY", proxy.url())
    monkeypatch.setenv(variable, "example.com,127.0.0.1")
    _answered(_calls(server.base_url, 6))
    assert proxy.forwarded == [] and proxy.tunnels == [] and proxy.connections == 0
    assert sum(server.received.values()) == 6


def test_the_lower_case_variable_and_all_proxy_are_read(proxy, fake_openai, monkeypatch) -> None:
    server = fake_openai()
    monkeypatch.setenv("all_proxy", proxy.url())
    _answered(_calls(server.base_url, 2))
    assert len(proxy.forwarded) == 2
    monkeypatch.delenv("all_proxy")
    monkeypatch.setenv("http_proxy", proxy.url())
    _answered(_calls(server.base_url, 2))
    assert len(proxy.forwarded) == 4 and sum(server.received.values()) == 4


def test_https_proxy_is_not_taken_for_an_http_endpoint(proxy, fake_openai, monkeypatch) -> None:
    server = fake_openai()
    monkeypatch.setenv("HTTPS_PROXY", proxy.url())
    _answered(_calls(server.base_url, 2))
    assert proxy.connections == 0 and sum(server.received.values()) == 2


def test_an_https_endpoint_is_reached_through_a_connect_tunnel(
    proxy, tls_server, opened, monkeypatch
) -> None:
    """HTTPS_PROXY and an https endpoint: the proxy opens tunnels (one a connection, opened by the
    client's own network backend, TLS started on it) and sees no request of the calls, only TLS;
    the certificate is still the endpoint's, checked."""
    server, base_url = tls_server
    monkeypatch.setenv("HTTPS_PROXY", proxy.url())
    _answered(_calls(base_url, 6, concurrency=3))
    assert proxy.forwarded == []
    assert 1 <= len(proxy.tunnels) <= 3 and set(proxy.tunnels) == {f"127.0.0.1:{server.port}"}
    assert proxy.tunnelled[:1] == b"\x16"  # a TLS handshake record: the calls' bytes are encrypted
    assert b"chat/completions" not in proxy.tunnelled and b"sk-test" not in proxy.tunnelled
    assert sum(server.received.values()) == 6 == len(server.requests)
    assert len(opened) == len(proxy.tunnels) and set(opened) == {("127.0.0.1", proxy.port)}, opened


def test_a_tunnel_still_refuses_an_untrusted_certificate(proxy, tls_server, monkeypatch) -> None:
    _server, base_url = tls_server
    monkeypatch.delenv("SSL_CERT_FILE")
    monkeypatch.setenv("HTTPS_PROXY", proxy.url())
    results = _calls(base_url, 1)
    assert isinstance(results[0], EndpointRefused) and "not trusted" in str(results[0]), results
    assert len(proxy.tunnels) == 1


def test_a_proxy_that_refuses_connections_ends_calls_as_connection_errors(fake_openai, monkeypatch) -> None:
    """A proxy where nothing listens: each call retried, then an error row's CallFailed (as an endpoint
    that refuses connections), in well under the call's deadline; no credential in what it says."""
    server = fake_openai()
    monkeypatch.setenv("HTTP_PROXY", f"http://puser:{SECRET}@127.0.0.1:{_free_port()}")
    results = _calls(server.base_url, 3, max_retries=2)
    assert all(isinstance(r, CallFailed) and not isinstance(r, EndpointRefused) for r in results), results
    assert {str(r) for r in results} == {"APIConnectionError after 3 attempts"}
    assert all(getattr(r, "raw", None) is None for r in results)
    assert not any(SECRET in str(r) or "puser" in str(r) for r in results)
    assert sum(server.received.values()) == 0


@pytest.mark.parametrize("scheme", ["http", "https"])
def test_a_proxy_asking_for_credentials_stops_the_run(
    proxy, fake_openai, tls_server, monkeypatch, scheme
) -> None:
    """A proxy's 407 (to a forwarded request, or to a CONNECT) refuses every call: the run stops with
    what to do, not error rows of connection errors."""
    proxy.refuse = b"407 Proxy Authentication Required"
    base_url = fake_openai().base_url if scheme == "http" else tls_server[1]
    monkeypatch.setenv(f"{scheme.upper()}_PROXY", proxy.url(f"puser:{SECRET}@"))
    (result,) = _calls(base_url, 1)
    assert isinstance(result, EndpointRefused), result
    said = {
        "http": f"{base_url}: HTTP 407: the proxy asks for credentials",
        "https": f"{base_url}: the proxy refused the tunnel to it (CONNECT): 407 Proxy Authentication Required",
    }[scheme]
    assert str(result) == f"{said} (give the proxy's credentials in its URL: http://user:password@host:port)"
    assert len(proxy.authorizations) == 1 and proxy.forwarded == [] and proxy.tunnels == []


def test_a_socks_proxy_without_socksio_is_one_named_refusal(fake_openai, monkeypatch) -> None:
    try:
        import socksio  # noqa: F401
    except ImportError:
        pass
    else:
        pytest.skip("socksio is installed: a SOCKS proxy would be used")
    server, port = fake_openai(), _free_port()
    monkeypatch.setenv("ALL_PROXY", f"socks5://puser:{SECRET}@127.0.0.1:{port}")
    with pytest.raises(EndpointRefused) as refused:
        JudgeClient(Endpoint(base_url=server.base_url, model="fake-judge"))
    assert str(refused.value) == (
        f"{server.base_url}: the proxy socks5://127.0.0.1:{port} (ALL_PROXY or all_proxy) is a SOCKS proxy, "
        "which needs the socksio package (not installed): pip install socksio"
    )


def test_a_proxy_url_of_another_scheme_is_one_named_refusal(monkeypatch) -> None:
    monkeypatch.setenv("HTTPS_PROXY", f"ftp://puser:{SECRET}@proxy.example:21")
    with pytest.raises(EndpointRefused) as refused:
        JudgeClient(Endpoint(base_url="https://api.example/v1", model="m"))
    assert str(refused.value) == (
        "https://api.example/v1: the proxy ftp://proxy.example:21 (HTTPS_PROXY or https_proxy) is not a "
        "proxy URL this client can use (http://, https://, socks5:// or socks5h://)"
    )


@pytest.mark.parametrize(
    "environment",
    [
        {"HTTP_PROXY": "http://p:1", "HTTPS_PROXY": "http://q:2"},
        {"https_proxy": "q:2", "HTTPS_PROXY": "http://ignored:9"},
        {"ALL_PROXY": "http://a:3", "HTTPS_PROXY": "http://q:2", "NO_PROXY": "api.example"},
        {"ALL_PROXY": "http://a:3", "NO_PROXY": ".example"},
        {"ALL_PROXY": "http://a:3", "NO_PROXY": "*.internal, 10.0.0.0/8"},
        {"ALL_PROXY": "http://a:3", "NO_PROXY": "*"},
        {"ALL_PROXY": "http://a:3", "no_proxy": "localhost"},
        {"ALL_PROXY": "http://a:3", "NO_PROXY": "http://api.example"},
    ],
)
def test_the_proxy_is_the_one_httpx2_takes_for_the_same_environment(monkeypatch, environment) -> None:
    """For each endpoint, environment_proxy names the proxy httpx2's own client (no transport given)
    sends it through, or none when that client goes direct."""
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    urls = [
        "https://api.example/v1",
        "http://api.example/v1",
        "http://www.example:8000/v1",
        "https://gpu.internal/v1",
        "http://10.1.2.3:8000/v1",
        "http://localhost:11434/v1",
        "http://127.0.0.1:8000/v1",
    ]
    reference = httpx2.AsyncClient()
    for url in urls:
        transport = reference._transport_for_url(httpx2.URL(url))
        pool = transport._pool  # type: ignore[attr-defined]
        expected = None
        if transport is not reference._transport:
            proxy_url = pool._proxy_url
            expected = f"{proxy_url.host.decode()}:{proxy_url.port}"
        found = environment_proxy(url)
        got = None if found is None else f"{httpx2.URL(found[1]).host}:{httpx2.URL(found[1]).port}"
        assert got == expected, (url, found)


# ---------------------------------------------------------------- end to end


@pytest.fixture
def demo(tmp_path, monkeypatch) -> Path:
    from denominator.demo import build_demo

    db = tmp_path / "demo.db"
    build_demo(str(db))
    for name in ("OPENAI_BASE_URL", "OPENAI_MODEL"):
        monkeypatch.delenv(name, raising=False)
    return db


def test_the_cli_goes_through_the_environments_proxy(demo, proxy, fake_openai, monkeypatch, capsys) -> None:
    server = fake_openai()
    monkeypatch.setenv("HTTP_PROXY", proxy.url(f"puser:{SECRET}@"))
    argv = ["grade", "--db", str(demo), "--rubric", "relevance", "--base-url", server.base_url]
    argv += ["--model", "fake-judge", "--limit", "5", "--concurrency", "2"]
    assert main(argv) == 0
    out, err = capsys.readouterr()
    assert "5 calls made" in out, out
    assert len(proxy.forwarded) == 5 == sum(server.received.values())
    assert SECRET not in out + err


def test_the_cli_says_a_socks_proxy_needs_socksio_in_one_line(demo, fake_openai, monkeypatch, capsys) -> None:
    try:
        import socksio  # noqa: F401
    except ImportError:
        pass
    else:
        pytest.skip("socksio is installed: a SOCKS proxy would be used")
    server = fake_openai()
    monkeypatch.setenv("https_proxy", f"socks5h://puser:{SECRET}@127.0.0.1:1080")
    monkeypatch.setenv("http_proxy", f"socks5h://puser:{SECRET}@127.0.0.1:1080")
    argv = ["grade", "--db", str(demo), "--rubric", "relevance", "--base-url", server.base_url]
    assert main([*argv, "--model", "fake-judge", "--limit", "2"]) == 2
    out, err = capsys.readouterr()
    assert err.count("\n") == 1 and "socksio" in err and "socks5h://127.0.0.1:1080" in err, err
    assert SECRET not in out + err and "puser" not in out + err and "Traceback" not in err
    assert sum(server.received.values()) == 0


def test_the_batch_apis_client_takes_the_proxy_too(proxy, fake_openai, monkeypatch) -> None:
    """The Batch API's client builds httpx2's default transport, which reads the environment itself."""
    from judge.batch import BatchError, batch_state

    server = fake_openai()
    monkeypatch.setenv("HTTP_PROXY", proxy.url())
    with pytest.raises(BatchError, match="HTTP 404"):
        batch_state(server.base_url, "batch_none", timeout=10)
    assert proxy.forwarded == [("GET", f"{server.base_url}/batches/batch_none")]


def test_the_batch_apis_client_says_a_socks_proxy_needs_socksio_in_one_line(monkeypatch) -> None:
    try:
        import socksio  # noqa: F401
    except ImportError:
        pass
    else:
        pytest.skip("socksio is installed: a SOCKS proxy would be used")
    from judge.batch import BatchError, batch_state

    monkeypatch.setenv("ALL_PROXY", f"socks5://puser:{SECRET}@127.0.0.1:1080")
    with pytest.raises(BatchError) as refused:
        batch_state("http://127.0.0.1:9/v1", "batch_none", timeout=10)
    assert str(refused.value) == (
        "http://127.0.0.1:9/v1: a proxy of the environment (HTTP_PROXY, HTTPS_PROXY or ALL_PROXY, either "
        "case) is a SOCKS proxy, which needs the socksio package (not installed): pip install socksio"
    )


@pytest.mark.parametrize(
    ("base_url", "proxy", "loads_authorities"),
    [
        ("http://127.0.0.1:9/v1", None, False),  # a local endpoint (Ollama, vLLM): no TLS spoken
        ("http://127.0.0.1:9/v1", "http://127.0.0.1:3128", False),  # forwarded by a plain proxy
        ("http://127.0.0.1:9/v1", "https://127.0.0.1:3128", True),  # TLS to the proxy
        ("https://127.0.0.1:9/v1", None, True),
        ("https://127.0.0.1:9/v1", "http://127.0.0.1:3128", True),  # tunnelled, TLS to the endpoint
    ],
)
def test_tls_authorities_load_only_where_tls_is_spoken(
    monkeypatch, base_url, proxy, loads_authorities
) -> None:
    """#42: the certificate authorities cost 22 ms of CPU to load at every judge start. A plain-http
    endpoint reached directly or through a plain-http proxy gets a context with none, which still
    requires a certificate: a handshake it were ever asked for fails (never passes unchecked)."""
    from judge.client import _capped_transport

    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)
    if proxy is not None:
        monkeypatch.setenv("ALL_PROXY", proxy)
    transport = _capped_transport(Endpoint(base_url=base_url, model="m"))
    context = transport.tls  # the one context of every pool
    for pool in transport._pools:  # the context every pool holds (httpx2's own attribute, when it has it)
        assert getattr(getattr(pool, "_pool", None), "_ssl_context", context) is context
    assert (context.cert_store_stats()["x509_ca"] > 0) is loads_authorities
    assert context.verify_mode == ssl.CERT_REQUIRED and context.check_hostname
