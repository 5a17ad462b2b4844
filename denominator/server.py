"""What ``denominator serve`` adds to the server Streamlit runs, so one client cannot hold it.

Streamlit 1.67 serves the app through uvicorn, whose HTTP protocol waits for ever for a request's
head and body: a client that sends half its headers, or stops inside a body, holds its socket, and
a few hundred such sockets use the process's open files up (then every page and /api request waits,
and asyncio logs each refused accept with its traceback, thousands a second). ``serve`` runs
Streamlit through :func:`main` (``python -m denominator.server run APP ...``), which first:

- raises the soft open-file limit to the hard one (:func:`raise_open_files`);
- makes uvicorn speak HTTP with :class:`DeadlineProtocol`: a request's head must come whole within
  :data:`HEADER_ENV` seconds of its first byte (or of the connection's start), else 408 and closed;
  a body that pauses past the API's idle deadline plus :data:`BODY_GRACE` is closed (the API
  answers its own 408 first: :func:`annotation.http_api.body_idle_seconds`); a connection past
  :data:`CONNECTIONS_ENV` open ones is answered 503 and closed at once, so the process stays below
  its open-file limit. A WebSocket (the app's own, long-lived by design) is never timed out: once
  upgraded, the connection is the WebSocket protocol's;
- lets one "out of system resource" accept error a minute into the log (:class:`AcceptFloodFilter`).

The hook is Streamlit's ``_get_uvicorn_config_kwargs`` (both of its servers build their
``uvicorn.Config`` from it); :func:`install` refuses, loudly, a Streamlit without it or one that
chooses the HTTP protocol itself (:class:`ServerGuardMissing`), rather than serve unguarded.
"""

from __future__ import annotations

import asyncio
import logging
import os
import resource
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from annotation.cli_base import UsageError
from annotation.errors import DenominatorError
from annotation.http_api import ApiError, body_idle_seconds
from annotation.http_contract import SECONDS_MAX

__all__ = [
    "BODY_GRACE",
    "CONNECTIONS_ENV",
    "HEADER_ENV",
    "AcceptFloodFilter",
    "DeadlineProtocol",
    "Guard",
    "ServerGuardMissing",
    "guard",
    "install",
    "main",
    "raise_open_files",
]

HEADER_ENV = "DENOMINATOR_HEADER_SECONDS"  # the longest a request's head may take to arrive whole
HEADER_DEFAULT = 20
CONNECTIONS_ENV = "DENOMINATOR_MAX_CONNECTIONS"  # open connections (pages, WebSockets, API) at most
CONNECTIONS_DEFAULT = 1000
FILES_RESERVE = 100  # open files kept free of connections: the store, its journal, Streamlit's own
# connections accepted in one turn of the loop before any is counted (asyncio accepts up to the
# backlog at once): below FILES_RESERVE, so a burst cannot pass the open-file limit
BACKLOG = 64
BODY_GRACE = 5  # seconds past the API's body deadline: the API's 408 is sent before a close
OPEN_FILES_TARGET = 65536  # the soft limit asked for when the hard one is unlimited
REFUSED = (
    b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: text/plain; charset=utf-8\r\n"
    b"connection: close\r\ncontent-length: 35\r\n\r\nThis server has too many open ones.\n"
)
TIMED_OUT = (
    b"HTTP/1.1 408 Request Timeout\r\ncontent-type: text/plain; charset=utf-8\r\n"
    b"connection: close\r\ncontent-length: 39\r\n\r\nThe request's head did not come whole.\n"
)


class ServerGuardMissing(DenominatorError, RuntimeError):
    """This Streamlit builds its server where :func:`install` cannot add the deadlines."""


@dataclass(frozen=True)
class Guard:
    """The deadlines and the cap, read once from the environment (:func:`guard`)."""

    header_seconds: float
    body_seconds: float  # the protocol's: the API's idle deadline + BODY_GRACE
    max_connections: int


def raise_open_files() -> int:
    """The soft RLIMIT_NOFILE raised to the hard one (:data:`OPEN_FILES_TARGET` when unlimited);
    returns the soft limit now in force."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = OPEN_FILES_TARGET if hard == resource.RLIM_INFINITY else hard
    if soft != resource.RLIM_INFINITY and soft < target:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            soft = target
        except (ValueError, OSError):  # a system that refuses: the limit in force is the one we have
            pass
    return int(soft) if soft != resource.RLIM_INFINITY else OPEN_FILES_TARGET


def _whole(name: str, default: int, high: int) -> int:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    digits = raw.lstrip("0") or "0"
    if not (digits.isascii() and digits.isdigit() and len(digits) <= len(str(high))) or not (
        1 <= int(digits) <= high
    ):
        raise UsageError(f"{name}: expected a whole number from 1 to {high}, got {raw[:40]!r}")
    return int(digits)


def guard() -> Guard:
    """The settings of the environment, checked: :data:`HEADER_ENV` (seconds, default
    :data:`HEADER_DEFAULT`), the API's body deadline, :data:`CONNECTIONS_ENV` (default
    :data:`CONNECTIONS_DEFAULT`, at most the open-file limit less :data:`FILES_RESERVE`). A value
    out of range is a :class:`UsageError` (one line, exit 2)."""
    files = raise_open_files()
    room = max(1, files - FILES_RESERVE)
    header = _whole(HEADER_ENV, HEADER_DEFAULT, SECONDS_MAX)
    if os.environ.get(CONNECTIONS_ENV, "").strip():
        connections = _whole(CONNECTIONS_ENV, CONNECTIONS_DEFAULT, room)
    else:  # the default, within what the open-file limit allows
        connections = min(CONNECTIONS_DEFAULT, room)
    try:
        body = body_idle_seconds()
    except ApiError as exc:
        raise UsageError(str(exc)) from None
    return Guard(float(header), float(body + BODY_GRACE), connections)


class DeadlineProtocol(H11Protocol):
    """uvicorn's h11 protocol with a deadline for a request's head, one for a pause inside its body,
    and a cap on open connections (the module's docstring says why; :func:`protocol` sets them)."""

    settings = Guard(HEADER_DEFAULT, 30.0 + BODY_GRACE, CONNECTIONS_DEFAULT)
    # the connections of this server waiting for a request's head, oldest first (dicts keep order)
    heads: dict[DeadlineProtocol, None] = {}

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        self.deadline: asyncio.TimerHandle | None = None
        self.waiting_for = ""
        self.handed_over = False  # upgraded to a WebSocket: no deadline of ours applies
        if len(self.server_state.connections) >= self.settings.max_connections and self.heads:
            # at the cap, the connection that has waited longest for a head makes room: a client
            # that holds half-sent heads evicts its own, and a request sent whole gets in
            next(iter(self.heads)).expire()
        self.refused = len(self.server_state.connections) >= self.settings.max_connections
        if self.refused:  # none to evict: answered and closed at once, below the open-file limit
            self.transport = transport
            transport.write(REFUSED)
            transport.close()
            return
        super().connection_made(transport)
        self.watch()

    def data_received(self, data: bytes) -> None:
        if self.refused or self.handed_over:
            return
        super().data_received(data)
        self.watch()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self.watch()

    def connection_lost(self, exc: Exception | None) -> None:
        self.stop_watching()
        if self.refused:
            self.connections.discard(self)
            return
        super().connection_lost(exc)

    def handle_websocket_upgrade(self, event: h11.Request) -> None:
        self.handed_over = True
        self.stop_watching()
        super().handle_websocket_upgrade(event)

    def stop_watching(self) -> None:
        if self.deadline is not None:
            self.deadline.cancel()
        self.deadline, self.waiting_for = None, ""
        self.heads.pop(self, None)

    def watch(self) -> None:
        """The deadline that applies now: the head's (from its first byte; bytes that trickle in do
        not move it), or the body's (moved by every part that comes), or none (the app is working,
        the keep-alive timer waits for the next request, or the connection is closing)."""
        if self.handed_over or self.transport.is_closing():
            self.stop_watching()
        elif self.conn.their_state is h11.IDLE and self.timeout_keep_alive_task is None:
            if self.waiting_for != "head":
                self.stop_watching()
                self.waiting_for = "head"
                self.heads[self] = None
                self.deadline = self.loop.call_later(self.settings.header_seconds, self.expire)
        elif self.conn.their_state is h11.SEND_BODY:
            self.stop_watching()
            self.waiting_for = "body"
            self.deadline = self.loop.call_later(self.settings.body_seconds, self.expire)
        else:
            self.stop_watching()

    def expire(self) -> None:
        """The deadline has passed (or, for a head, room is needed): the connection is closed, and
        no longer counted, unless the wait turns out not to be the client's."""
        waited = self.waiting_for
        self.stop_watching()
        if self.transport.is_closing() or self.handed_over:
            return
        if waited == "head" and self.conn.their_state is h11.IDLE:
            self.transport.write(TIMED_OUT)  # no request was read: a bare answer, then the close
        elif waited == "body" and self.conn.their_state is h11.SEND_BODY:
            if self.flow.read_paused or (self.cycle is not None and self.cycle.body):
                self.watch()  # the app has bytes it has not read: the wait is not the client's
                return
        else:
            self.watch()
            return
        self.transport.close()
        self.connections.discard(self)  # its room is free now, not when the loop reports the close


class AcceptFloodFilter(logging.Filter):
    """asyncio logs "socket.accept() out of system resource" with its traceback once per waiting
    connection and retry (thousands a second when the open files run out): one a minute passes,
    saying how many were held back."""

    def __init__(self, every: float = 60.0, clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__()
        self.every, self.clock = every, clock
        self.last: float | None = None
        self.held = 0

    def filter(self, record: logging.LogRecord) -> bool:
        if not str(record.msg).startswith("socket.accept() out of system resource"):
            return True
        now = self.clock()
        if self.last is not None and now - self.last < self.every:
            self.held += 1
            return False
        if self.held:
            record.msg = (
                f"{record.msg}\n({self.held} more such errors in the last {self.every:g} s not shown)"
            )
        self.last, self.held = now, 0
        return True


def protocol(settings: Guard) -> type[DeadlineProtocol]:
    """:class:`DeadlineProtocol` with ``settings``, and its own list of connections waiting for a head
    (one server's)."""
    return type("DeadlineProtocol", (DeadlineProtocol,), {"settings": settings, "heads": {}})


def install(settings: Guard) -> None:
    """The deadlines in every uvicorn server Streamlit builds from now on, and the accept errors'
    filter. Raises :class:`ServerGuardMissing` when this Streamlit builds its server otherwise."""
    # start-up: Streamlit's server module, which the app is about to load anyway
    from streamlit.web.server.starlette import starlette_server

    # Streamlit's own (private) helper; both UvicornServer and UvicornRunner build their Config from
    # it. A Streamlit without it, or that chooses the protocol itself, is refused, never served bare.
    built = getattr(starlette_server, "_get_uvicorn_config_kwargs", None)
    if not callable(built):
        raise ServerGuardMissing(
            "this Streamlit builds its uvicorn server without _get_uvicorn_config_kwargs: serve cannot "
            "add its deadlines (the pinned streamlit is 1.67)"
        )
    chosen = protocol(settings)

    def with_deadlines() -> dict[str, Any]:
        kwargs = dict(built())
        if "http" in kwargs:
            raise ServerGuardMissing(
                "this Streamlit chooses uvicorn's HTTP protocol itself: serve cannot add its deadlines"
            )
        if "backlog" in kwargs:
            raise ServerGuardMissing("this Streamlit sets uvicorn's backlog itself: serve cannot bound it")
        return {**kwargs, "http": chosen, "backlog": BACKLOG}

    with_deadlines.guarded = True  # type: ignore[attr-defined]
    if not getattr(built, "guarded", False):
        starlette_server._get_uvicorn_config_kwargs = with_deadlines
    logging.getLogger("asyncio").addFilter(AcceptFloodFilter())


def main() -> None:
    """``python -m denominator.server run APP [streamlit options]``: Streamlit's own command, with
    the open-file limit raised and the deadlines installed first."""
    try:
        settings = guard()
        install(settings)
    except (UsageError, ServerGuardMissing) as exc:
        print(f"error: denominator serve: {exc}", file=sys.stderr, flush=True)
        sys.exit(2)
    # start-up: Streamlit's command line, loaded once the guard is in place
    from streamlit.web.cli import main as streamlit_main

    sys.argv = ["streamlit", *sys.argv[1:]]
    streamlit_main(prog_name="streamlit")


if __name__ == "__main__":
    main()
