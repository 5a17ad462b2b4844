"""The judge client's sockets: an ``httpcore2`` network backend on asyncio's own streams (#42).

httpx2's transport reads and writes through httpcore2's default backend, anyio, which wraps every
read and write in a cancel scope (``anyio.fail_after``, even without a timeout) and an exception map,
over its own socket stream: 3,535 Python calls a request in the client, 3,117 with this one. This
backend is the same interface (``httpcore2.AsyncNetworkBackend``, the library's extension point) on
``asyncio.open_connection``: the HTTP itself (h11, the connection pool, TLS settings, keep-alive) is
still httpcore2's and httpx2's, and above them the SDK's. Errors are httpcore2's own (``ConnectError``,
``ReadError``, ``WriteError`` and the timeouts), which httpx2 and the SDK map as they map anyio's. An
idle connection the server has closed reads as readable (the pool drops it, not reuses it), as with
anyio; here also when asyncio has already taken the end of stream off the socket.

Loaded where a client is made (:class:`judge.client.JudgeClient`), not where the module is imported.
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Iterable
from typing import Any

import httpcore2
from httpcore2._utils import is_socket_readable

__all__ = ["AsyncioBackend", "AsyncioStream", "HAPPY_EYEBALLS_DELAY"]

HAPPY_EYEBALLS_DELAY = 0.25  # seconds before the next address is tried (RFC 8305; anyio's too)

SocketOption = tuple[int, int, int] | tuple[int, int, bytes | bytearray] | tuple[int, int, None, int]


class AsyncioStream(httpcore2.AsyncNetworkStream):
    """One connection: asyncio's stream reader and writer."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._reader, self._writer = reader, writer

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        try:
            if timeout is None:
                return await self._reader.read(max_bytes)
            async with asyncio.timeout(timeout):
                return await self._reader.read(max_bytes)
        except TimeoutError as exc:
            raise httpcore2.ReadTimeout(exc) from exc
        except OSError as exc:  # reset, refused, an SSL error
            raise httpcore2.ReadError(exc) from exc

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        if not buffer:
            return
        try:
            self._writer.write(buffer)
            if timeout is None:
                await self._writer.drain()
            else:
                async with asyncio.timeout(timeout):
                    await self._writer.drain()
        except TimeoutError as exc:
            raise httpcore2.WriteTimeout(exc) from exc
        except OSError as exc:  # the connection lost
            raise httpcore2.WriteError(exc) from exc

    async def aclose(self) -> None:
        self._writer.close()

    async def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore2.AsyncNetworkStream:
        try:
            async with asyncio.timeout(timeout):
                await self._writer.start_tls(ssl_context, server_hostname=server_hostname)
        except TimeoutError as exc:
            await self.aclose()
            raise httpcore2.ConnectTimeout(exc) from exc
        except OSError as exc:  # ssl.SSLError is one
            await self.aclose()
            raise httpcore2.ConnectError(exc) from exc
        return self

    def get_extra_info(self, info: str) -> Any:
        if info == "ssl_object":
            return self._writer.get_extra_info("ssl_object")
        if info == "client_addr":
            return self._writer.get_extra_info("sockname")
        if info == "server_addr":
            return self._writer.get_extra_info("peername")
        if info == "socket":
            return self._writer.get_extra_info("socket")
        if info == "is_readable":  # asked of an idle connection: closed by the server, or sent to unasked
            return (
                self._reader.at_eof()
                or self._writer.transport.is_closing()
                or is_socket_readable(self._writer.get_extra_info("socket"))
            )
        return None


class AsyncioBackend(httpcore2.AsyncNetworkBackend):
    """Connections for httpcore2's pool on asyncio's streams (TCP_NODELAY set by asyncio)."""

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[SocketOption] | None = None,
    ) -> httpcore2.AsyncNetworkStream:
        local = (local_address, 0) if local_address else None
        try:
            async with asyncio.timeout(timeout):
                reader, writer = await asyncio.open_connection(
                    host, port, local_addr=local, happy_eyeballs_delay=HAPPY_EYEBALLS_DELAY
                )
        except TimeoutError as exc:
            raise httpcore2.ConnectTimeout(exc) from exc
        except OSError as exc:
            raise httpcore2.ConnectError(exc) from exc
        return _with_options(reader, writer, socket_options)

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,
        socket_options: Iterable[SocketOption] | None = None,
    ) -> httpcore2.AsyncNetworkStream:
        try:
            async with asyncio.timeout(timeout):
                reader, writer = await asyncio.open_unix_connection(path)
        except TimeoutError as exc:
            raise httpcore2.ConnectTimeout(exc) from exc
        except OSError as exc:
            raise httpcore2.ConnectError(exc) from exc
        return _with_options(reader, writer, socket_options)

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


def _with_options(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, options: Iterable[SocketOption] | None
) -> AsyncioStream:
    sock = writer.get_extra_info("socket")
    for option in options or ():
        sock.setsockopt(*option)
    return AsyncioStream(reader, writer)
