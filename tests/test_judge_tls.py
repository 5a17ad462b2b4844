"""The judge's client over HTTPS, as users reach OpenAI or a hosted vLLM (#42: the client's sockets
are opened by a network backend of its own): a certificate the client trusts (``SSL_CERT_FILE``,
read as the SDK's own client reads it) carries the calls, and one it does not trust refuses them,
never a plain or unverified call in its place."""

from __future__ import annotations

import asyncio
import datetime
import ipaddress
import socket
import ssl
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from judge.client import CallFailed, Endpoint, EndpointRefused, JudgeClient
from judge.prompts import response_format
from tests.fake_openai import FakeOpenAI


def _certificate(folder: Path) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 (its IP in subjectAltName) and its key, as PEM files."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), False
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_file, key_file = folder / "cert.pem", folder / "key.pem"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    return cert_file, key_file


@pytest.fixture
def tls_server(tmp_path):
    """The fake OpenAI server behind TLS on 127.0.0.1: (its https base URL, the certificate file)."""
    cert_file, key_file = _certificate(tmp_path)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert_file, key_file)
    server = FakeOpenAI()
    server._httpd.socket = context.wrap_socket(server._httpd.socket, server_side=True)
    server.start()
    try:
        yield server, f"https://127.0.0.1:{server.port}/v1", cert_file
    finally:
        server.stop()


def _calls(base_url: str, n: int) -> list[object]:
    """``n`` calls through one client, concurrently; each a CallResult or the exception it raised."""

    async def go() -> list[object]:
        endpoint = Endpoint(
            base_url=base_url, model="fake-judge", concurrency=4, timeout=10, backoff=0.01, max_retries=1
        )
        client = JudgeClient(endpoint)
        try:
            schema = response_format("relevance", "json_schema")
            messages = [{"role": "system", "content": "grade"}, {"role": "user", "content": "q"}]
            return await asyncio.gather(
                *(client.complete(messages, schema, f"tls-{i}") for i in range(n)), return_exceptions=True
            )
        finally:
            await client.close()

    return asyncio.run(go())


def test_a_trusted_certificate_carries_the_calls(tls_server, monkeypatch) -> None:
    server, base_url, cert_file = tls_server
    monkeypatch.setenv("SSL_CERT_FILE", str(cert_file))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    results = _calls(base_url, 6)
    failed = [r for r in results if isinstance(r, BaseException)]
    assert not failed, failed
    assert all(r.text and r.served_model == "fake-judge" for r in results)  # type: ignore[union-attr]
    assert sum(server.received.values()) == 6 == len(server.requests)


def test_an_untrusted_certificate_refuses_every_call(tls_server, monkeypatch) -> None:
    server, base_url, _cert_file = tls_server
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    results = _calls(base_url, 2)
    # no retry can fix it: the run stops with why and what to do, not error rows of "connection error"
    assert all(isinstance(r, EndpointRefused) for r in results), results
    message = str(results[0])
    assert "TLS certificate is not trusted (self-signed certificate)" in message, message
    assert "SSL_CERT_FILE" in message
    assert sum(server.received.values()) == 0  # no request got through the handshake


def test_a_refused_connection_is_still_retried_as_before(tmp_path, monkeypatch) -> None:
    """Only a certificate's refusal stops the run: a port where nothing listens is a connection
    error like any other, retried to the call's end (an error row, asked again next run)."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with socket.socket() as probe:  # a free port, closed again: nothing listens there
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    (result,) = _calls(f"https://127.0.0.1:{port}/v1", 1)
    assert isinstance(result, CallFailed) and not isinstance(result, EndpointRefused), result
    assert "APIConnectionError after 2 attempts" in str(result)
