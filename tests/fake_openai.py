"""A fake OpenAI-compatible HTTP server for tests and benchmarks (stdlib only).

The LLM judge talks to any OpenAI-compatible endpoint through ``openai.AsyncOpenAI``;
tests drive the real client over HTTP against this server on 127.0.0.1.

In a test::

    with FakeOpenAI(latency=0.05, faults=[None, ("429", 1), "drop"]) as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="test", max_retries=0)
        ...  # calls with extra_headers={"X-Denominator-Call": "fp/item-1/AB/0"}
        server.wait_idle()
        assert server.served["fp/item-1/AB/0"] == 1

Endpoints: ``POST /v1/chat/completions`` and ``GET /v1/models`` (one model,
``fake-judge``); the Batch API: ``POST /v1/files`` (multipart, kept in ``files``),
``GET /v1/files/ID[/content]``, ``POST /v1/batches`` and ``GET /v1/batches/ID`` (kept in
``batches``); anything else is a 404 with an OpenAI-style error body.

A batch is ``validating`` when created, ``in_progress`` for its first ``batch_polls`` - 1
retrieves, then answered whole at the next: every line as the chat endpoint answers its body
(``batch_lines`` counts them by ``custom_id``), ``completed``. ``batch_faults`` (a list by
line index, or ``batch_faults(index, custom_id)``): ``"error"`` (a failed line in the error
file), ``"500"`` (a line answered HTTP 500, in the error file), or a chat fault
(``"invalid_json"``, ``"out_of_range"``, ``"missing_field"``: a 200 in the output file).
``batch_expire=N``: the first N lines answered, the rest ``batch_expired`` in the error file,
status ``expired``. ``batch_hostile=N``: an output file no one should trust: every line twice (the
second with the other grade or winner), a line that is not JSON, ids never submitted (an order on a
graded item, a negative repeat, an item that does not exist, a repeat of 10^30), then six lines of N
bytes each for a submitted id.
``batch_input_extra=[template, ...]``: an endpoint whose copy of the batch's input lies: the
input file it serves lists, before the lines Denominator sent, one line per template
(``custom_id`` = the template with ``{fp}`` the first line's fingerprint prefix and ``{item}``
its item, e.g. ``"{fp}/999999/-/0"``), and the batch answers those lines first.
``batch_huge=N``: every answer of the output file (a 200) has content of N bytes (``x``), the
file never built whole in memory (served in 64 KB pieces); with ``batch_id_last=True`` a line's
``custom_id`` comes after its response, not before.

Reply content: ``policy(body) -> str`` when given, else derived from the reply
schema, taken from ``response_format`` (``json_schema``) or, failing that, from
a system-message line ``Reply schema: {...}``. A schema with ``grade`` (an integer
enum) is pointwise: the grade is picked from the enum by a hash of the last user
message and ``seed``. A schema with ``winner`` is pairwise: ``"A"`` with
``bias="first"``, ``"B"`` with ``bias="second"``, else picked by the same hash.

Served model: a reply's ``model`` is the one asked for (``fake-judge`` when none), with no
``system_fingerprint`` unless ``system_fingerprint="fp_..."`` is given. A provider alias that
moves to a new model mid-run: ``served_model_after={"n": 5, "model": "gpt-x-2026-06"}`` (and
optionally ``"system_fingerprint"``, default ``fp_`` + 10 hex digits of the model's sha256):
the first 5 answers (200 replies, in the order they are composed) report the usual pair, every
later one the new model and fingerprint.

Faults (``faults`` is a list consumed in arrival order, None entries normal, or a
callable ``faults(index, key, body)``): ``("429", retry_after)``, ``"500"``,
``"503"``, ``"drop"`` (connection closed, no response), ``"invalid_json"``,
``"out_of_range"``, ``"missing_field"`` (the last three are 200s that count as served).

Hostile modes (what an attacker's endpoint does; each applies to every chat request):
``drip=S`` writes a 200 reply one byte every S seconds (status line and headers too), until
the client leaves; ``huge_reply=N`` pads a 200 reply's content to N bytes, written in 64 KB
pieces (with a Content-Length, or chunked with ``huge_chunked=True``) and never built whole in
memory; ``redirect_to=URL`` answers 307 with ``Location: URL`` + the request's path (URL a
second FakeOpenAI's base without ``/v1``). A huge ``Retry-After`` is the fault
``("429", 999999)``.

Call key: the ``X-Denominator-Call`` header, else the sha256 of the canonical JSON
of ``messages``. Kept under a lock: ``received`` and ``served`` (Counters of keys;
served = a 200 fully written to a client still connected), ``requests`` (one dict
per chat request: key, body, headers (lower-cased names), status (None when
dropped), served, t = ``time.monotonic()`` at arrival) and ``max_in_flight``. A
reply reaches the client just before it is counted as served: call
``server.wait_idle()`` before asserting on the counters.

The gate, for tests that must stop a client at a known point rather than after a
guessed delay: ``server.hold()`` closes it (every 200 reply waits, its request
in flight, and one whose client leaves meanwhile is dropped unserved),
``server.allow(n)`` lets n more replies through, ``server.open()`` opens it
again (the default).

From another process (benchmarks, kill-and-resume tests)::

    python -m tests.fake_openai --port 0 [--latency S] [--bias first|second]
                                [--log FILE] [--fail-every N] [--control] [--batch-huge N]

prints ``listening on http://127.0.0.1:PORT/v1`` once ready, runs until
SIGTERM/SIGINT, and with ``--log`` appends one flushed JSON line
``{"key", "event": "received"|"served", "t"}`` per event (``t`` is
``time.monotonic()``, which on Linux is comparable across processes). With
``--control`` it reads the gate's commands from stdin, one a line (``hold``,
``allow N``, ``open``), and answers each with ``ok <command>`` on stdout once
it holds.
"""

from __future__ import annotations

import argparse
import contextlib
import email.parser
import email.policy
import hashlib
import json
import select
import signal
import socket
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

MODEL = "fake-judge"
PAIRWISE = ["A", "B", "tie"]


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128  # the default listen backlog of 5 resets bursts of concurrent connects

    def handle_error(self, request, client_address) -> None:
        """A client that hung up mid-reply (a judge that stopped at a 307, or was killed) is not
        the server's error: say nothing (socketserver would print a traceback on stderr, where a
        test reads the CLI's one line). Anything else is printed as before."""
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)


_PAD = "@@PAD@@"  # a batch answer's content, padded to ``batch_huge`` bytes as it is served


class _Padded:
    """A file's content never held whole: pieces of bytes and runs of ``x`` (an int: how many)."""

    def __init__(self, pieces: list[bytes | int]):
        self.pieces = pieces

    @classmethod
    def of(cls, data: bytes, size: int) -> _Padded:
        """``data`` with every ``_PAD`` marker standing for ``size`` bytes of ``x``."""
        pieces: list[bytes | int] = []
        for i, part in enumerate(data.split(_PAD.encode())):
            pieces += ([size] if i else []) + [part]
        return cls(pieces)

    def __len__(self) -> int:
        return sum(p if isinstance(p, int) else len(p) for p in self.pieces)

    def chunks(self, size: int = 65536) -> Iterator[bytes]:
        run = b"x" * size
        for piece in self.pieces:
            if isinstance(piece, bytes):
                yield piece
                continue
            left = piece
            while left > 0:
                yield run[: min(left, size)]
                left -= size


class _Reply(Exception):
    """An HTTP error reply, raised inside the handler."""

    def __init__(self, status: int, message: str, kind: str, headers: dict[str, str] | None = None):
        super().__init__(message)
        self.status, self.message, self.kind, self.headers = status, message, kind, headers or {}


def _text(content: Any) -> str:
    """A message's content as text (a string, or a list of ``{"type": "text"}`` parts)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""


def _schema(body: dict) -> dict | None:
    """The reply schema: response_format's json_schema, else a ``Reply schema:`` system line."""
    fmt = body.get("response_format") or {}
    if fmt.get("type") == "json_schema":
        return (fmt.get("json_schema") or {}).get("schema")
    for message in body.get("messages") or []:
        if message.get("role") != "system":
            continue
        for line in _text(message.get("content")).splitlines():
            if line.startswith("Reply schema:"):
                try:
                    return json.loads(line[len("Reply schema:") :])
                except json.JSONDecodeError as e:
                    raise _Reply(400, f"bad Reply schema line: {e}", "invalid_request_error") from e
    return None


class FakeOpenAI:
    """An OpenAI-compatible server on 127.0.0.1, started and stopped as a context manager."""

    def __init__(
        self,
        latency: float = 0.0,
        policy: Callable[[dict], str] | None = None,
        faults: Callable[[int, str, dict], str | tuple | None] | list | None = None,
        bias: str | None = None,
        seed: int = 0,
        port: int = 0,
        log: str | Path | None = None,
        system_fingerprint: str | None = None,
        served_model_after: dict[str, Any] | None = None,
        drip: float | None = None,
        huge_reply: int | None = None,
        huge_chunked: bool = False,
        redirect_to: str | None = None,
        batch_polls: int = 2,
        batch_faults: Callable[[int, str], str | None] | list | None = None,
        batch_expire: int | None = None,
        batch_hostile: int | None = None,
        batch_input_extra: list[str] | None = None,
        batch_huge: int | None = None,
        batch_id_last: bool = False,
    ):
        if bias not in (None, "first", "second"):
            raise ValueError(f"bias must be None, 'first' or 'second', not {bias!r}")
        if served_model_after is not None and not (
            isinstance(served_model_after.get("n"), int)
            and served_model_after["n"] >= 0
            and isinstance(served_model_after.get("model"), str)
        ):
            raise ValueError(
                f'served_model_after must be {{"n": int >= 0, "model": str}}, not {served_model_after!r}'
            )
        self.system_fingerprint, self.served_model_after = system_fingerprint, served_model_after
        self.drip, self.huge_reply, self.huge_chunked = drip, huge_reply, huge_chunked
        self.redirect_to = redirect_to.rstrip("/") if redirect_to else None
        self.batch_polls, self.batch_faults, self.batch_expire = batch_polls, batch_faults, batch_expire
        self.batch_hostile = batch_hostile
        self.batch_input_extra = batch_input_extra
        self.batch_huge, self.batch_id_last = batch_huge, batch_id_last
        self.files: dict[str, dict] = {}  # id -> file object + "content" (bytes, or _Padded)
        self.batches: dict[str, dict] = {}  # id -> batch object + "polls"
        self.batch_lines: Counter[str] = Counter()  # custom_id -> times a batch answered it
        self.bytes_sent = 0  # bytes of dripped or huge replies written (under the lock)
        self._answers = 0  # 200 replies composed: when the served model changes
        self.latency, self.policy, self.faults, self.bias, self.seed = latency, policy, faults, bias, seed
        self.log_path = Path(log) if log else None
        self.received: Counter[str] = Counter()
        self.served: Counter[str] = Counter()
        self.requests: list[dict] = []
        self.max_in_flight = 0
        self._in_flight = 0
        self._arrivals = 0
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)
        self._budget: int | None = None  # replies a closed gate still lets through; None: open
        self._gate = threading.Condition(self._lock)
        self._connections: set[socket.socket] = set()
        self._log = None
        self._httpd = _Server(("127.0.0.1", port), _Handler)
        self._httpd.fake = self  # type: ignore[attr-defined]
        self.port: int = self._httpd.server_address[1]
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        self._thread: threading.Thread | None = None

    def start(self) -> FakeOpenAI:
        if self.log_path:
            self._log = open(self.log_path, "a", encoding="utf-8")  # noqa: SIM115
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, name="fake-openai", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving, close idle keep-alive connections and the listening socket."""
        self._httpd.shutdown()
        with self._lock:
            connections = list(self._connections)
        for conn in connections:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
        self._httpd.server_close()
        if self._thread:
            self._thread.join(timeout=5)
        with self._lock:
            if self._log:
                self._log.close()
                self._log = None

    def wait_idle(self, timeout: float = 5.0) -> bool:
        """Wait until no chat request is being handled (True if it happened within ``timeout``)."""
        with self._idle:
            return self._idle.wait_for(lambda: self._in_flight == 0, timeout)

    def hold(self) -> None:
        """Close the gate: from now on a 200 reply waits, its request in flight."""
        with self._gate:
            self._budget = 0

    def allow(self, n: int) -> None:
        """Let ``n`` more replies through the closed gate (nothing to do when it is open)."""
        with self._gate:
            if self._budget is not None:
                self._budget += n
            self._gate.notify_all()

    def open(self) -> None:
        """Open the gate: every reply waiting, and every one after, goes out."""
        with self._gate:
            self._budget = None
            self._gate.notify_all()

    def __enter__(self) -> FakeOpenAI:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def _event(self, key: str, event: str) -> None:
        """Count a received/served event (and log it); takes the lock."""
        with self._lock:
            (self.received if event == "received" else self.served)[key] += 1
            if self._log:
                self._log.write(json.dumps({"key": key, "event": event, "t": time.monotonic()}) + "\n")
                self._log.flush()

    def _fault(self, index: int, key: str, body: dict) -> str | tuple | None:
        if callable(self.faults):
            return self.faults(index, key, body)
        if self.faults and index < len(self.faults):
            return self.faults[index]
        return None

    def _served(self, body: dict) -> tuple[str, str | None]:
        """(model, system fingerprint) this answer reports; counts the answer (takes the lock)."""
        with self._lock:
            index = self._answers
            self._answers += 1
        after = self.served_model_after
        if after is not None and index >= after["n"]:
            model = after["model"]
            default = "fp_" + hashlib.sha256(model.encode()).hexdigest()[:10]
            return model, after.get("system_fingerprint") or default
        return body.get("model") or MODEL, self.system_fingerprint

    def _add_file(self, content: bytes | _Padded, filename: str, purpose: str) -> dict:
        with self._lock:
            file_id = f"file-{len(self.files) + 1:04d}"
            self.files[file_id] = {
                "id": file_id,
                "object": "file",
                "bytes": len(content),
                "created_at": int(time.time()),
                "filename": filename,
                "purpose": purpose,
                "status": "processed",
                "content": content,
            }
            return self.files[file_id]

    def _create_batch(self, body: dict) -> dict:
        file = self.files.get(str(body.get("input_file_id")))
        if file is None:
            raise _Reply(404, f"no file {body.get('input_file_id')!r}", "not_found")
        if body.get("endpoint") != "/v1/chat/completions" or body.get("completion_window") != "24h":
            raise _Reply(
                400, "endpoint must be /v1/chat/completions, completion_window 24h", "invalid_request_error"
            )
        lines = [json.loads(line) for line in file["content"].decode().splitlines() if line.strip()]
        ids = [line.get("custom_id") for line in lines]
        if len(set(ids)) != len(ids) or any(line.get("url") != "/v1/chat/completions" for line in lines):
            raise _Reply(
                400, "custom_id must be unique and url /v1/chat/completions", "invalid_request_error"
            )
        if self.batch_input_extra and lines:
            fp16, item = str(lines[0]["custom_id"]).split("/")[:2]
            extra = [
                {**lines[0], "custom_id": template.format(fp=fp16, item=item)}
                for template in self.batch_input_extra
            ]
            lines = extra + lines
            with self._lock:  # the copy of the input the endpoint serves from now on
                file["content"] = "".join(json.dumps(line) + "\n" for line in lines).encode()
                file["bytes"] = len(file["content"])
        with self._lock:
            batch_id = f"batch_{len(self.batches) + 1:04d}"
            self.batches[batch_id] = {
                "id": batch_id,
                "object": "batch",
                "endpoint": body["endpoint"],
                "errors": None,
                "input_file_id": file["id"],
                "completion_window": "24h",
                "status": "validating",
                "output_file_id": None,
                "error_file_id": None,
                "created_at": int(time.time()),
                "request_counts": {"total": len(lines), "completed": 0, "failed": 0},
                "metadata": body.get("metadata"),
                "polls": 0,
                "lines": lines,
            }
        return self._batch_view(batch_id)

    def _batch_view(self, batch_id: str) -> dict:
        return {k: v for k, v in self.batches[batch_id].items() if k not in ("polls", "lines")}

    def _poll_batch(self, batch_id: str) -> dict:
        """One retrieve: in_progress for ``batch_polls`` - 1 polls, then completed (or expired)."""
        batch = self.batches.get(batch_id)
        if batch is None:
            raise _Reply(404, f"no batch {batch_id!r}", "not_found")
        batch["polls"] += 1
        if batch["status"] in ("validating", "in_progress"):
            if batch["polls"] < self.batch_polls:
                batch["status"] = "in_progress"
            else:
                self._run_batch(batch)
        return self._batch_view(batch_id)

    def _run_batch(self, batch: dict) -> None:
        """Answer every line as the chat endpoint would; faults and expiry go to the error file."""
        out, errors = [], []
        for index, line in enumerate(batch["lines"]):
            custom_id = line["custom_id"]
            request_id = f"batch_req_{batch['id']}_{index}"
            if self.batch_expire is not None and index >= self.batch_expire:
                message = "This request could not be executed before the completion window expired."
                error = {"code": "batch_expired", "message": message}
                errors.append({"id": request_id, "custom_id": custom_id, "response": None, "error": error})
                continue
            if callable(self.batch_faults):
                fault = self.batch_faults(index, custom_id)
            else:
                fault = (
                    self.batch_faults[index] if self.batch_faults and index < len(self.batch_faults) else None
                )
            if fault == "error":
                error = {"code": "server_error", "message": "fake failed line"}
                errors.append({"id": request_id, "custom_id": custom_id, "response": None, "error": error})
                continue
            if fault == "500":
                response = {
                    "status_code": 500,
                    "request_id": request_id,
                    "body": {"error": {"message": "fake 500"}},
                }
                errors.append({"id": request_id, "custom_id": custom_id, "response": response, "error": None})
                continue
            content = _PAD if self.batch_huge is not None else self._content(line["body"], fault)
            payload = self._payload(custom_id, index, line["body"], content)
            response = {"status_code": 200, "request_id": request_id, "body": payload}
            if self.batch_id_last:
                out.append({"id": request_id, "response": response, "error": None, "custom_id": custom_id})
            else:
                out.append({"id": request_id, "custom_id": custom_id, "response": response, "error": None})
            with self._lock:
                self.batch_lines[custom_id] += 1

        def jsonl(rows: list[dict]) -> bytes:
            return "".join(json.dumps(r) + "\n" for r in rows).encode()

        if out:
            served: bytes | _Padded = self._hostile(out) if self.batch_hostile else jsonl(out)
            if self.batch_huge is not None:
                served = _Padded.of(jsonl(out), self.batch_huge)
            batch["output_file_id"] = self._add_file(served, "batch_output.jsonl", "batch_output")["id"]
        if errors:
            batch["error_file_id"] = self._add_file(jsonl(errors), "batch_errors.jsonl", "batch_output")["id"]
        batch["request_counts"] = {"total": len(batch["lines"]), "completed": len(out), "failed": len(errors)}
        batch["status"] = "expired" if self.batch_expire is not None else "completed"

    def _hostile(self, out: list[dict]) -> bytes:
        """``batch_hostile``: the output lines twice (contradicting), junk, foreign ids, huge lines."""

        def flipped(row: dict) -> dict:
            twin = json.loads(json.dumps(row))
            message = twin["response"]["body"]["choices"][0]["message"]
            reply = json.loads(message["content"])
            if "grade" in reply:
                reply["grade"] = 0 if reply["grade"] else 2
            else:
                reply["winner"] = "B" if reply.get("winner") == "A" else "A"
            message["content"] = json.dumps(reply)
            return twin

        def as_id(custom_id: str) -> dict:
            twin = json.loads(json.dumps(out[0]))
            twin["custom_id"] = custom_id
            return twin

        fp16, item = out[0]["custom_id"].split("/")[:2]
        lines = [json.dumps(r) for row in out for r in (row, flipped(row))]
        lines.append("{not json")
        for foreign in (
            f"{fp16}/{item}/AB/0",
            f"{fp16}/{item}/-/-5",
            f"{fp16}/999999/-/0",
            f"{fp16}/{item}/-/{10**30}",
        ):
            lines.append(json.dumps(as_id(foreign)))
        head = "".join(line + "\n" for line in lines).encode()
        one = json.dumps(as_id(out[-1]["custom_id"])).encode()
        pad = b"x" * max(0, int(self.batch_hostile or 0) - len(one))
        huge = one[:-1] + b', "padding": "' + pad + b'"}\n'
        return head + huge * 6

    def _payload(self, key: str, index: int, body: dict, content: str) -> dict:
        """A chat completion answering ``body`` with ``content`` (a live reply and a batch line's)."""
        messages = body.get("messages") or []
        chars = sum(len(_text(m.get("content"))) for m in messages if isinstance(m, dict))
        prompt, completion = max(1, chars // 4), max(1, len(content) // 4)
        served_model, system_fingerprint = self._served(body)
        payload = {
            "id": "chatcmpl-" + hashlib.sha256(f"{key}/{index}".encode()).hexdigest()[:24],
            "object": "chat.completion",
            "created": int(time.time()),
            "model": served_model,
            "choices": [
                {"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}
            ],
            "usage": dict(
                prompt_tokens=prompt, completion_tokens=completion, total_tokens=prompt + completion
            ),
        }
        if system_fingerprint is not None:
            payload["system_fingerprint"] = system_fingerprint
        return payload

    def _content(self, body: dict, fault: str | tuple | None) -> str:
        """The reply text for a 200: a faulty one, the policy's, or the default from the schema."""
        if fault == "invalid_json":
            return "Sure! The grade is 3."
        if fault == "missing_field":
            return json.dumps({"reason": "x"})
        if self.policy is not None and fault is None:
            return self.policy(body)
        schema = _schema(body)
        props = (schema or {}).get("properties") or {}
        if "grade" not in props and "winner" not in props:
            raise _Reply(400, "no reply schema with 'grade' or 'winner' found", "invalid_request_error")
        if fault == "out_of_range":
            return json.dumps(
                {"reason": "x", "grade": 7} if "grade" in props else {"reason": "x", "winner": "C"}
            )
        users = [m for m in body.get("messages") or [] if m.get("role") == "user"]
        last = _text(users[-1].get("content")) if users else ""
        pick = int(hashlib.sha256((last + str(self.seed)).encode()).hexdigest(), 16)
        if "grade" in props:
            grades = props["grade"].get("enum") or [0, 1, 2, 3]
            return json.dumps({"reason": "fake reason", "grade": grades[pick % len(grades)]})
        winner = {"first": "A", "second": "B"}.get(self.bias or "") or PAIRWISE[pick % len(PAIRWISE)]
        return json.dumps({"reason": "fake reason", "winner": winner})


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "FakeOpenAI/1.0"

    @property
    def fake(self) -> FakeOpenAI:
        return self.server.fake  # type: ignore[attr-defined]

    def setup(self) -> None:
        super().setup()
        # Headers and body go out in two writes: without this, Nagle + delayed ACK add ~40 ms a reply.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        with self.fake._lock:
            self.fake._connections.add(self.connection)

    def finish(self) -> None:
        with self.fake._lock:
            self.fake._connections.discard(self.connection)
        super().finish()

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def _send_json(self, status: int, payload: dict, headers: dict[str, str] | None = None) -> bool:
        """Write a JSON response; True when it was fully written and flushed to a client still there."""
        data = json.dumps(payload).encode()
        if self._peer_gone():  # a write to a just-closed socket can still succeed: look first
            self.close_connection = True
            return False
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)
            self.wfile.flush()
            return True
        except (BrokenPipeError, ConnectionResetError, OSError):
            self.close_connection = True
            return False

    def _send_raw(self, status: int, data: bytes, headers: dict[str, str]) -> bool:
        try:
            self.send_response(status)
            self.send_header("Content-Length", str(len(data)))
            for name, value in headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)
            self.wfile.flush()
            return True
        except OSError:
            self.close_connection = True
            return False

    def _send_padded(self, content: _Padded) -> bool:
        """A file's content in 64 KB pieces, with its Content-Length (never built whole)."""
        try:
            self.send_response(200)
            self.send_header("Content-Type", "application/octet-stream")
            self.send_header("Content-Length", str(len(content)))
            self.end_headers()
            for chunk in content.chunks():
                self.wfile.write(chunk)
                self._count(len(chunk))
            self.wfile.flush()
            return True
        except OSError:
            self.close_connection = True
            return False

    def _count(self, n: int) -> None:
        with self.fake._lock:
            self.fake.bytes_sent += n

    def _drip(self, data: bytes, every: float) -> bool:
        """The whole response (status line, headers, body), one byte per ``every`` seconds."""
        head = (
            f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {len(data)}\r\n\r\n"
        ).encode()
        self.close_connection = True
        for i, byte in enumerate(head + data):
            if i and (time.sleep(every) or self._peer_gone()):
                return False
            try:
                self.connection.sendall(bytes([byte]))
            except OSError:
                return False
            self._count(1)
        return True

    def _huge(self, payload: dict, size: int, chunked: bool) -> bool:
        """``payload`` with its content padded to ``size`` bytes, in 64 KB pieces."""
        marker = "@@PAD@@"
        payload["choices"][0]["message"]["content"] = marker
        before, after = (part.encode() for part in json.dumps(payload).split(marker))
        piece = b"x" * 65536
        try:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            if chunked:
                self.send_header("Transfer-Encoding", "chunked")
            else:
                self.send_header("Content-Length", str(len(before) + size + len(after)))
            self.end_headers()

            def write(data: bytes) -> None:
                self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data) if chunked else data)
                self._count(len(data))

            write(before)
            left = size
            while left > 0:
                write(piece[: min(left, len(piece))])
                left -= len(piece)
            write(after)
            if chunked:
                self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
            return True
        except OSError:
            self.close_connection = True
            return False

    def _peer_gone(self) -> bool:
        """True when the client has closed its end (it timed out or died while we waited)."""
        try:
            readable, _, _ = select.select([self.connection], [], [], 0)
            return bool(readable) and self.connection.recv(1, socket.MSG_PEEK) == b""
        except OSError:
            return True

    def _through_gate(self, fake: FakeOpenAI) -> bool | None:
        """Wait while the gate is closed: True when let through on its budget, None when it is
        open, False when the client left while waiting (then nothing is sent)."""
        with fake._gate:
            while fake._budget == 0:
                if self._peer_gone():
                    return False
                fake._gate.wait(0.05)  # wakes on allow/open; the timeout only looks at the client again
            if fake._budget is None:
                return None
            fake._budget -= 1
            return True

    def _error(self, status: int, message: str, kind: str, headers: dict[str, str] | None = None) -> bool:
        return self._send_json(status, {"error": {"message": message, "type": kind, "code": kind}}, headers)

    def do_GET(self) -> None:
        path = self.path.split("?")[0].rstrip("/")
        parts = path.split("/")
        try:
            if path == "/v1/models":
                model = {"id": MODEL, "object": "model", "created": 0, "owned_by": "denominator-tests"}
                self._send_json(200, {"object": "list", "data": [model]})
            elif len(parts) == 4 and parts[2] == "batches":
                self._send_json(200, self.fake._poll_batch(parts[3]))
            elif len(parts) in (4, 5) and parts[2] == "files" and parts[3] in self.fake.files:
                file = self.fake.files[parts[3]]
                if len(parts) == 5 and parts[4] == "content" and isinstance(file["content"], _Padded):
                    self._send_padded(file["content"])
                elif len(parts) == 5 and parts[4] == "content":
                    self._send_raw(200, file["content"], {"Content-Type": "application/octet-stream"})
                else:
                    self._send_json(200, {k: v for k, v in file.items() if k != "content"})
            else:
                raise _Reply(404, f"no route GET {self.path}", "not_found")
        except _Reply as reply:
            self._error(reply.status, reply.message, reply.kind)

    def _post_file(self, raw: bytes) -> None:
        """``POST /v1/files``: a multipart form with ``purpose`` and ``file``."""
        message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
            b"Content-Type: " + (self.headers.get("Content-Type") or "").encode() + b"\r\n\r\n" + raw
        )
        fields = {}
        for part in message.iter_parts() if message.is_multipart() else []:
            fields[part.get_param("name", header="content-disposition")] = (
                part.get_filename(),
                part.get_payload(decode=True),
            )
        if "file" not in fields or "purpose" not in fields:
            raise _Reply(400, "a multipart form with 'file' and 'purpose' expected", "invalid_request_error")
        purpose = fields["purpose"][1].decode()
        self._send_json(
            200,
            {
                k: v
                for k, v in self.fake._add_file(
                    fields["file"][1], fields["file"][0] or "file", purpose
                ).items()
                if k != "content"
            },
        )

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        path = self.path.split("?")[0].rstrip("/")
        if path in ("/v1/files", "/v1/batches"):
            try:
                if path == "/v1/files":
                    self._post_file(raw)
                else:
                    self._send_json(200, self.fake._create_batch(json.loads(raw or b"{}")))
            except (_Reply, json.JSONDecodeError) as reply:
                if not isinstance(reply, _Reply):
                    reply = _Reply(400, "the body is not JSON", "invalid_request_error")
                self._error(reply.status, reply.message, reply.kind)
            return
        if path != "/v1/chat/completions":
            self._error(404, f"no route POST {self.path}", "not_found")
            return
        fake = self.fake
        with fake._lock:
            fake._in_flight += 1
            fake.max_in_flight = max(fake.max_in_flight, fake._in_flight)
        try:
            self._chat(fake, raw)
        finally:
            with fake._lock:
                fake._in_flight -= 1
                fake._idle.notify_all()

    def _chat(self, fake: FakeOpenAI, raw: bytes) -> None:
        try:
            body = json.loads(raw or b"{}")
        except (json.JSONDecodeError, UnicodeDecodeError):
            body = None
        messages = body.get("messages") if isinstance(body, dict) else None
        canonical = json.dumps(messages, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        key = self.headers.get("X-Denominator-Call") or hashlib.sha256(canonical.encode()).hexdigest()
        headers = {name.lower(): value for name, value in self.headers.items()}
        record = {"key": key, "body": body, "headers": headers, "status": None, "served": False}
        record["t"] = time.monotonic()
        with fake._lock:
            index = fake._arrivals
            fake._arrivals += 1
            fake.requests.append(record)
        fake._event(key, "received")
        if fake.redirect_to is not None:
            record["status"] = 307
            self._send_raw(307, b"", {"Location": fake.redirect_to + self.path})
            return
        if fake.latency > 0:
            time.sleep(fake.latency)
        try:
            if not isinstance(body, dict) or not isinstance(messages, list):
                raise _Reply(400, "the body needs a 'messages' list", "invalid_request_error")
            fault = fake._fault(index, key, body)
            if fault == "drop":
                self.close_connection = True  # status stays None: no response at all
                with contextlib.suppress(OSError):
                    self.connection.shutdown(socket.SHUT_RDWR)
                return
            if isinstance(fault, tuple | list) and str(fault[0]) == "429":
                raise _Reply(429, "Rate limit (fake)", "rate_limit_exceeded", {"Retry-After": str(fault[1])})
            if fault in ("500", "503"):
                raise _Reply(int(fault), f"fake {fault}", "server_error")
            if fault not in (None, "invalid_json", "out_of_range", "missing_field"):
                raise ValueError(f"unknown fault spec {fault!r}")
            content = fake._content(body, fault)
        except _Reply as reply:
            record["status"] = reply.status
            self._error(reply.status, reply.message, reply.kind, reply.headers)
            return
        except Exception as e:  # a broken policy or fault callable: tell the client, keep serving
            record["status"] = 500
            self._error(500, f"fake server error: {e!r}", "server_error")
            return
        payload = fake._payload(key, index, body, content)
        record["status"] = 200
        let_through = self._through_gate(fake)
        if let_through is False:
            self.close_connection = True
            return
        if fake.drip is not None:
            sent = self._drip(json.dumps(payload).encode(), fake.drip)
        elif fake.huge_reply is not None:
            sent = self._huge(payload, fake.huge_reply, fake.huge_chunked)
        else:
            sent = self._send_json(200, payload)
        if sent:
            record["served"] = True
            fake._event(key, "served")
        elif let_through:  # not delivered: the reply it was let through for is still owed
            fake.allow(1)


def _control(server: FakeOpenAI) -> None:
    """The gate's commands from stdin; each acknowledged on stdout once it holds."""
    for line in sys.stdin:
        command = line.split()
        if command == ["hold"]:
            server.hold()
        elif len(command) == 2 and command[0] == "allow" and command[1].isdigit():
            server.allow(int(command[1]))
        elif command == ["open"]:
            server.open()
        else:
            print(f"error: unknown command {line.strip()!r}", flush=True)
            continue
        print("ok " + " ".join(command), flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.fake_openai", description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (0: a free one)")
    parser.add_argument("--latency", type=float, default=0.0, help="seconds to wait before each reply")
    parser.add_argument("--bias", choices=["first", "second"], help="pairwise winner is always A / B")
    parser.add_argument("--log", help="append one JSON line per received/served event")
    parser.add_argument("--fail-every", type=int, default=0, metavar="N", help="every Nth request gets a 500")
    parser.add_argument(
        "--control", action="store_true", help="read gate commands (hold, allow N, open) from stdin"
    )
    parser.add_argument(
        "--batch-hostile",
        type=int,
        metavar="N",
        help="batch output no one should trust, six N-byte lines last",
    )
    parser.add_argument(
        "--batch-huge", type=int, metavar="N", help="every batch answer's content N bytes (never held whole)"
    )
    args = parser.parse_args(argv)
    every = args.fail_every
    faults = (lambda index, key, body: "500" if (index + 1) % every == 0 else None) if every > 0 else None
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    options = {"latency": args.latency, "bias": args.bias, "faults": faults, "log": args.log}
    options["batch_hostile"] = args.batch_hostile
    options["batch_huge"] = args.batch_huge
    with FakeOpenAI(port=args.port, **options) as server:
        print(f"listening on {server.base_url}", flush=True)
        if args.control:
            threading.Thread(target=_control, args=(server,), name="fake-openai-control", daemon=True).start()
        while not stop.wait(0.5):
            pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
