"""A judge run: many calls, at most ``concurrency`` at once, every result stored
as it comes, resumable.

A call is identified by (fingerprint, item, order, repeat). Before a run, the
calls this judge already has a value for are skipped, so a crash or an
interrupt resumes where it stopped, and a second run of the same job makes
no call. Each answer is committed the moment it arrives (:class:`ResultWriter`).

Stopping: :meth:`Job.stop` (the CLI calls it on Ctrl-C or SIGTERM) starts no
new call, lets the calls in flight finish and stores them: a stopped run
loses no answer it paid for, and its resumption repeats none. A process
killed outright (SIGKILL) can lose the replies in flight at that moment (at
most ``concurrency`` calls, plus those received and not yet committed); the
resumed run asks them again.

A reply that is not the JSON asked for is asked again (``reply_retries``
times), then stored as an error row with the raw reply: never a grade. An
error row is not "done": the next run asks again.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from annotation.store import Store
from judge.client import CallFailed, JudgeClient
from judge.prompts import InvalidReply, build_messages, parse_reply, response_format

__all__ = ["Call", "Progress", "Job", "ResultWriter", "run_job"]


@dataclass(frozen=True)
class Call:
    item_id: int
    data: Mapping[str, Any]  # what the prompt shows (see judge.prompts.build_messages)
    ab_order: str | None = None  # pairs: "AB" (the item's first trace shown first) or "BA"
    repeat: int = 0

    @property
    def done_key(self) -> tuple[int, str | None, int]:
        return (self.item_id, self.ab_order, self.repeat)

    def call_id(self, fingerprint: str) -> str:
        return f"{fingerprint[:16]}/{self.item_id}/{self.ab_order or '-'}/{self.repeat}"


@dataclass
class Progress:
    total: int = 0  # calls this run will make
    skipped: int = 0  # already done by an earlier run
    done: int = 0
    errors: int = 0
    retries: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    started: float = field(default_factory=time.monotonic)
    stopped: bool = False

    @property
    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def eta(self) -> float | None:
        if not self.done:
            return None
        return self.elapsed / self.done * (self.total - self.done)


class ResultWriter:
    """Commits each answer the moment it arrives, before the worker sends its next call.

    One short transaction per answer, in the event loop's own thread: an answer the
    endpoint delivered is on disk within about a millisecond, so a process killed
    outright loses (and a resumed run asks again) only the calls in flight and, at
    worst, the answers of the last millisecond. A writer thread was measured first:
    waiting for the thread to be scheduled left answers unstored for several
    milliseconds, and SIGKILLs at random moments repeated 4-15 of 40 calls.
    """

    def __init__(self, db_path: str) -> None:
        self.db_path = db_path
        self._store: Store | None = None
        self.written = 0

    def start(self) -> None:
        self._store = Store(self.db_path)

    def put(self, row: dict[str, Any]) -> None:
        if self._store is None:
            self.start()
        self.written += self._store.add_judge_labels([row])

    def close(self) -> None:
        if self._store is not None:
            self._store.close()
            self._store = None


class Job:
    """One LLM judge run over ``calls`` for one rubric and fingerprint."""

    def __init__(
        self,
        client: JudgeClient,
        rubric: str,
        fingerprint: str,
        schema_mode: str,
        calls: Iterable[Call],
        writer: ResultWriter,
        reply_retries: int = 2,
        on_progress: Callable[[Progress], None] | None = None,
    ) -> None:
        self.client = client
        self.rubric = rubric
        self.fingerprint = fingerprint
        self.format = response_format(rubric, schema_mode)
        self.calls = list(calls)
        self.writer = writer
        self.reply_retries = reply_retries
        self.on_progress = on_progress
        self.progress = Progress(total=len(self.calls))
        self._stop = threading.Event()

    def stop(self) -> None:
        """Start no new call; the calls in flight finish and are stored."""
        self._stop.set()

    async def run(self) -> Progress:
        pending = iter(self.calls)
        workers = [
            asyncio.create_task(self._worker(pending)) for _ in range(self.client.endpoint.concurrency)
        ]
        try:
            await asyncio.gather(*workers)
        except BaseException:
            for task in workers:
                task.cancel()
            await asyncio.gather(*workers, return_exceptions=True)
            raise
        finally:
            self.progress.retries = self.client.retries
        self.progress.stopped = self._stop.is_set() and self.progress.done < self.progress.total
        return self.progress

    async def _worker(self, pending) -> None:
        for call in pending:
            if self._stop.is_set():
                return
            row = await self._one(call)
            self.writer.put(row)
            p = self.progress
            p.done += 1
            p.errors += row["error"] is not None
            p.tokens_in += row["tokens_in"] or 0
            p.tokens_out += row["tokens_out"] or 0
            p.retries = self.client.retries
            if self.on_progress:
                self.on_progress(p)

    async def _one(self, call: Call) -> dict[str, Any]:
        messages = build_messages(self.rubric, call.data)
        row: dict[str, Any] = {
            "item_id": call.item_id,
            "fingerprint": self.fingerprint,
            "ab_order": call.ab_order,
            "repeat": call.repeat,
            "value": None,
            "reason": None,
            "raw": None,
            "tokens_in": 0,
            "tokens_out": 0,
            "latency_ms": 0.0,
            "error": None,
            "served_model": None,  # what the endpoint says it served: drift under one fingerprint
            "system_fingerprint": None,
        }
        for attempt in range(self.reply_retries + 1):
            try:
                seed = self.client.endpoint.seed
                result = await self.client.complete(
                    messages,
                    self.format,
                    call.call_id(self.fingerprint),
                    seed=None if seed is None else seed + call.repeat,  # a repeat is a new draw
                )
            except CallFailed as exc:
                row["error"] = f"call failed: {exc}"
                return row
            row["tokens_in"] += result.tokens_in or 0
            row["tokens_out"] += result.tokens_out or 0
            row["latency_ms"] += result.latency_ms
            row["raw"] = result.text
            row["served_model"], row["system_fingerprint"] = result.served_model, result.system_fingerprint
            try:
                row["value"], row["reason"] = parse_reply(self.rubric, result.text)
                row["error"] = None
                return row
            except InvalidReply as exc:
                row["error"] = f"invalid reply after {attempt + 1} attempts: {exc}"
        return row


def run_job(job: Job) -> Progress:
    """Run a job to its end in a fresh event loop (the CLI and the page call this)."""

    async def main() -> Progress:
        try:
            return await job.run()
        finally:
            await job.client.close()

    return asyncio.run(main())
