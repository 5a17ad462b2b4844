"""A judge run: many calls, at most ``concurrency`` at once, every result stored
as it comes, resumable.

A call is identified by (fingerprint, item, order, repeat). Before a run, the
calls this judge already has a value for are skipped, so a crash or an
interrupt resumes where it stopped, and a second run of the same job makes
no call. Answers are committed in small batches as they arrive (:class:`ResultWriter`:
at most ``WRITE_EVERY`` seconds, 0.1, after each answer, or as soon as ``WRITE_BATCH``, 64,
are waiting), and whatever is waiting at the end of a run, stopped or not.

Stopping: :meth:`Job.stop` (the CLI calls it on Ctrl-C or SIGTERM) starts no
new call and ends every retry's wait at once; a call whose request is in
flight has ``stop_grace`` seconds (default 2) to deliver its answer, which is
stored (an answer paid for is not lost, and the resumed run does not ask it
again), then it is abandoned and stored as not answered (an error row: asked
again next run). An endpoint that drips its reply holds a stop for at most
that grace. A process
killed outright (SIGKILL) can lose the replies in flight at that moment (at
most ``concurrency`` calls) and the answers of the batch not yet committed (those
received in the last ``WRITE_EVERY`` seconds, at most ``WRITE_BATCH``); the resumed run
asks them again, and never stores an answer twice.

The store's write lock held by another process does not lose an answer: the
:class:`ResultWriter` queues what it cannot write and retries (every 0.25 s,
never blocking the calls), for at most ``lock_wait`` seconds at the end of
the run, then raises :class:`AnswersNotStored` saying how many.

A reply that is not the JSON asked for is asked again (``reply_retries``
times), then stored as an error row with the raw reply: never a grade. An
error row is not "done": the next run asks again.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from annotation.store import Store, StoreBusy, StoreError
from judge.client import CallFailed, CallResult, CallStopped, JudgeClient, RequestTemplate
from judge.progress import Progress
from judge.prompts import (
    InvalidReply,
    SchemaMode,
    parse_reply,
    response_format,
    system_prompt,
    user_prompt,
)

__all__ = [
    "Call",
    "Progress",
    "Job",
    "ResultWriter",
    "AnswersNotStored",
    "run_job",
    "call_row",
    "call_seed",
    "take_reply",
    "STOP_GRACE",
    "WRITE_BATCH",
    "WRITE_EVERY",
]

STOP_GRACE = 2.0  # seconds a call in flight may still deliver its answer once a run is stopped
LOCK_RETRY_EVERY = 0.25  # seconds between two tries of a write the lock refused
WRITE_LOCK_WAIT = 120.0  # seconds the end of a run waits for the write lock before giving up
LOCK_PROBE_MS = 20  # the writer's busy timeout: a held lock costs the calls at most this per try
WRITE_EVERY = 0.1  # seconds an answer waits at most for its batch's commit (a SIGKILL loses these)
WRITE_BATCH = 64  # answers waiting that are committed at once, however young
UNANSWERED = "not answered:"  # how the error of a call the stop cut short begins
NOT_ANSWERED = f"{UNANSWERED} the run was stopped with the call in flight"


class AnswersNotStored(StoreError):
    """Answers received that the store's write lock kept out for longer than the writer waits."""


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


class ResultWriter:
    """Commits the answers in small batches as they arrive, in the event loop's own thread.

    An answer is committed at most ``batch_seconds`` (``WRITE_EVERY``, 0.1 s) after it arrives,
    with every answer waiting then, or at once when ``batch_size`` (``WRITE_BATCH``, 64) are
    waiting: one short transaction a batch, not one an answer (#42: 2,000 answers were 2,000
    transactions, each a ``BEGIN IMMEDIATE`` and a synced ``COMMIT``). A process killed outright
    loses (and a resumed run asks again) the calls in flight and the answers of the last
    ``batch_seconds`` at most; :meth:`close` commits whatever waits. A writer thread was measured
    first (before batching): waiting for the thread to be scheduled left answers unstored for
    several milliseconds, and SIGKILLs at random moments repeated 4-15 of 40 calls.

    When another process holds the write lock, an answer is queued, not lost: the
    writer tries again every ``LOCK_RETRY_EVERY`` seconds (each try waits at most
    ``LOCK_PROBE_MS``, so the calls go on), and :meth:`close` waits up to ``lock_wait``
    seconds for the rest, then raises :class:`AnswersNotStored`.
    """

    def __init__(
        self,
        db_path: str,
        lock_wait: float = WRITE_LOCK_WAIT,
        batch_seconds: float = WRITE_EVERY,
        batch_size: int = WRITE_BATCH,
    ) -> None:
        self.db_path = db_path
        self.lock_wait = lock_wait
        self.batch_seconds = batch_seconds
        self.batch_size = batch_size
        self._store: Store | None = None
        self.written = 0
        self.received = 0
        self.commits = 0  # transactions that stored answers
        self.pending: list[tuple[float, dict[str, Any]]] = []  # (received at, row), oldest first
        self.delayed = 0  # answers that waited for the lock
        self.longest_wait = 0.0
        self._refused = 0  # of the answers pending, the first this many were refused by the lock
        self._next_try = 0.0

    def start(self) -> None:
        self._store = Store(self.db_path, wait=LOCK_PROBE_MS / 1000)  # a probe: a held lock queues

    def put(self, row: dict[str, Any]) -> None:
        if self._store is None:
            self.start()
        self.received += 1
        self.pending.append((time.monotonic(), row))
        self.flush()

    def due(self, now: float) -> bool:
        """Whether the answers waiting make a batch: ``batch_size`` of them, or the oldest has
        waited ``batch_seconds``."""
        return bool(self.pending) and (
            len(self.pending) >= self.batch_size or now - self.pending[0][0] >= self.batch_seconds
        )

    def flush(self, force: bool = False) -> bool:
        """Write the queued answers when they make a batch (:meth:`due`) and no lock retry is
        pending, or at once with ``force``; True when none is left. A lock held elsewhere leaves
        them queued; any other error raises."""
        if not self.pending:
            return True
        store = self._store
        if store is None:  # not started (put starts it) or closed: nothing to write to, they stay queued
            return False
        now = time.monotonic()
        if not force and (now < self._next_try or not self.due(now)):
            return False
        try:
            self.written += store.add_judge_labels([row for _, row in self.pending])
        except StoreBusy:  # another process's write: the answers stay queued
            self._next_try = now + LOCK_RETRY_EVERY
            self._refused = len(self.pending)
            return False
        self.commits += 1
        if self._refused:  # those the lock kept out waited for it
            self.delayed += self._refused
            self.longest_wait = max(self.longest_wait, now - self.pending[0][0])
            self._refused = 0
        self.pending.clear()
        return True

    def close(self) -> None:
        """Write what is queued (waiting up to ``lock_wait`` seconds for the lock), then close."""
        if self._store is None:
            return
        try:
            give_up = time.monotonic() + self.lock_wait
            while not self.flush(force=True):
                if time.monotonic() > give_up:
                    raise AnswersNotStored(
                        f"{len(self.pending)} of {self.received} answers received could not be stored: "
                        f"{self._store.path} stayed locked by another process for {self.lock_wait:g} s; "
                        f"{self.written} stored; run the same command again to ask the rest again"
                    )
                time.sleep(LOCK_RETRY_EVERY)
        finally:
            self._store.close()
            self._store = None


class Job:
    """One LLM judge run over ``calls`` for one rubric and fingerprint."""

    def __init__(
        self,
        client: JudgeClient,
        rubric: str,
        fingerprint: str,
        schema_mode: SchemaMode,
        calls: Iterable[Call],
        writer: ResultWriter,
        reply_retries: int = 2,
        on_progress: Callable[[Progress], None] | None = None,
        total: int | None = None,
        stop_grace: float = STOP_GRACE,
        guidelines: str | None = None,
    ) -> None:
        """``calls``: any iterable, read as the workers go (a run of a million repeats is not
        built in memory); ``total``: how many it holds (None: counted by making it a list);
        ``guidelines``: the rubric's edited guidelines, as the judge's settings keep them."""
        self.client = client
        self.rubric = rubric
        self.fingerprint = fingerprint
        self.format = response_format(rubric, schema_mode)
        # the body every call sends, encoded once: a call adds its item and seed
        self.template = RequestTemplate(client.endpoint, system_prompt(rubric, guidelines), self.format)
        if total is None:
            calls = list(calls)
            total = len(calls)
        self.calls = calls
        self.writer = writer
        self.reply_retries = reply_retries
        self.on_progress = on_progress
        self.stop_grace = stop_grace
        self.progress = Progress(total=total)
        self._stop = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stopping: asyncio.Event | None = None
        self._in_flight: set[asyncio.Task[dict[str, Any]]] = set()

    def stop(self) -> None:
        """Start no new call, end every retry's wait now, give the calls in flight
        ``stop_grace`` seconds, then store them as not answered. Safe from a signal
        handler or another thread."""
        self._stop.set()
        loop = self._loop
        if loop is not None and not loop.is_closed():
            try:
                loop.call_soon_threadsafe(self._on_stop)
            except RuntimeError:  # the loop has just ended
                pass

    def _on_stop(self) -> None:
        loop, stopping = self._loop, self._stopping  # both set when the run starts
        if loop is not None and stopping is not None and not stopping.is_set():
            stopping.set()
            loop.call_later(self.stop_grace, self._abandon)

    def _abandon(self) -> None:
        for task in list(self._in_flight):
            task.cancel()

    async def run(self) -> Progress:
        self._loop = asyncio.get_running_loop()
        self._stopping = asyncio.Event()
        if self._stop.is_set():
            self._on_stop()
        pending = iter(self.calls)
        n_workers = max(1, min(self.client.endpoint.concurrency, self.progress.total))
        workers = [asyncio.create_task(self._worker(pending)) for _ in range(n_workers)]
        flusher = asyncio.create_task(self._keep_flushing())
        try:
            await asyncio.gather(*workers)
        except BaseException:
            for task in workers:
                task.cancel()
            await asyncio.gather(*workers, return_exceptions=True)
            raise
        finally:
            flusher.cancel()
            self.progress.retries = self.client.retries
        p = self.progress
        p.stopped = self._stop.is_set() and (p.done < p.total or p.unanswered > 0)
        return p

    async def _keep_flushing(self) -> None:
        """A batch goes in once its oldest answer has waited ``batch_seconds`` though no other
        answer came; answers queued behind another process's write lock, as soon as it is free."""
        every = min(LOCK_RETRY_EVERY, self.writer.batch_seconds / 2)
        while True:
            await asyncio.sleep(every)
            self.writer.flush()

    async def _worker(self, pending: Iterator[Call]) -> None:
        for call in pending:
            if self._stop.is_set():
                return
            task = asyncio.create_task(self._one(call))
            self._in_flight.add(task)
            try:
                row = await task
            except asyncio.CancelledError:
                worker = asyncio.current_task()  # this worker's task (never None inside one)
                if worker is not None and worker.cancelling():  # the run itself is cancelled: abandoned
                    raise
                row = self._row(call)  # cut short by the stop's grace: stored as not answered
                row["error"] = NOT_ANSWERED
                self._record(row)
                continue
            finally:
                self._in_flight.discard(task)
            self._record(row)

    def _record(self, row: dict[str, Any]) -> None:
        self.writer.put(row)
        p = self.progress
        p.done += 1
        p.unanswered += (row["error"] or "").startswith(UNANSWERED)
        p.errors += row["error"] is not None
        p.tokens_in += row["tokens_in"] or 0
        p.tokens_out += row["tokens_out"] or 0
        p.retries = self.client.retries
        if self.on_progress:
            self.on_progress(p)

    def _row(self, call: Call) -> dict[str, Any]:
        return call_row(call, self.fingerprint)

    async def _one(self, call: Call) -> dict[str, Any]:
        body = self.template.render(user_prompt(call.data), call_seed(self.client.endpoint.seed, call))
        row = self._row(call)
        for attempt in range(self.reply_retries + 1):
            if attempt and self._stop.is_set():
                return row  # the invalid reply stays an error row; not asked again
            try:
                result = await self.client.send(body, call.call_id(self.fingerprint), self._stopping)
            except CallStopped as exc:
                row["error"] = str(exc)
                return row
            except CallFailed as exc:
                row["error"] = f"call failed: {exc}"
                row["raw"] = exc.raw
                return row
            if take_reply(row, self.rubric, result, attempt + 1):
                return row
        return row


def call_row(call: Call, fingerprint: str) -> dict[str, Any]:
    """A call's row before its answer: no value, no error, no tokens (the live run and a batch's
    collection fill it the same way, :func:`take_reply`)."""
    return {
        "item_id": call.item_id,
        "fingerprint": fingerprint,
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


def call_seed(seed: int | None, call: Call) -> int | None:
    """The seed a call is asked with: the endpoint's + the call's repeat (a repeat is a new draw)."""
    return None if seed is None else seed + call.repeat


def take_reply(row: dict[str, Any], rubric: str, result: CallResult, attempts: int = 1) -> bool:
    """Put a reply in its call's row (tokens and latency added, the raw text, the model the
    endpoint said it served) and parse it with :func:`judge.prompts.parse_reply`: True with the
    value and reason set, False with the row's error saying why the reply is not usable."""
    row["tokens_in"] += result.tokens_in or 0
    row["tokens_out"] += result.tokens_out or 0
    row["latency_ms"] += result.latency_ms
    row["raw"] = result.text
    row["served_model"], row["system_fingerprint"] = result.served_model, result.system_fingerprint
    try:
        row["value"], row["reason"] = parse_reply(rubric, result.text)
    except InvalidReply as exc:
        row["error"] = f"invalid reply after {attempts} attempt{'' if attempts == 1 else 's'}: {exc}"
        return False
    row["error"] = None
    return True


def run_job(job: Job) -> Progress:
    """Run a job to its end in a fresh event loop (the CLI and the page call this)."""

    async def main() -> Progress:
        try:
            return await job.run()
        finally:
            await job.client.close()

    return asyncio.run(main())
