"""Batch judging through the OpenAI Batch API: the calls a live run would make, sent as one
JSONL file and answered within 24 hours, at the batch price.

- :func:`submit_batch` registers the judge (its fingerprint and settings, as a live run
  does), writes one line per call left (``custom_id`` = the live call id,
  ``<fingerprint[:16]>/<item>/<order or ->/<repeat>``; the body is the live request's,
  :func:`judge.client.request_body`, seed + repeat included), uploads it
  (``files.create(purpose="batch")``), creates the batch (``/v1/chat/completions``,
  ``24h``) and returns at once with its id.
- Where the batch lives between submit and collect: at the endpoint. Its ``metadata``
  holds the judge's full fingerprint and rubric; the database is given again to
  :func:`collect_batch` (``--db``), where the judge was registered at submit, and where
  submit recorded the calls the batch asked (:meth:`Store.record_batch`, m017: item, order,
  repeat, under the batch id and fingerprint).
- :func:`collect_batch` reads the batch's output and error files once it has ended
  (completed, expired, cancelled; :mod:`judge.batch_files` reads them), trusting nothing in
  them, nor the endpoint's copy of the input file (never read): only the calls Denominator
  recorded when it sent the batch are stored, each once (the first line naming it; a later one
  is a duplicate, counted). An
  answer for an id the batch did not send (an item that does not exist, a repeat never asked,
  an id not written as Denominator writes it) is ignored and counted; a line that is not JSON
  is counted; a line longer than the live calls' reply limit (``max_reply_bytes``) is never
  held whole: its first :data:`judge.limits.BATCH_HEAD_BYTES` are kept to read its
  ``custom_id``, and its call gets an error row (asked again next run). The files are
  streamed line by line and read no further than that limit times the calls sent; every call
  sent that no line answered (the files ended, or were cut there) gets an error row too, so
  each call of the batch is answered or asked again. Each line kept is stored as the live run
  stores a call: the same rows (:func:`judge.runner.call_row`), the same parsing
  (:func:`judge.runner.take_reply`: a reply that is not the JSON asked for is an error row,
  asked again next run), the model the endpoint said it served; a failed or expired line is
  an error row naming the batch. Resumable: a call this judge already has a value for is
  skipped, and so is an error row this batch's collection stored before.
- A batch sent before m017 has no recorded calls: its answers are kept only for the judge's
  own calls on the store's items (the items and orders of its rubric, a repeat below
  :data:`judge.limits.MAX_REPEATS`), and collect says so; still never the endpoint's list.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import openai

from annotation.errors import DenominatorError
from annotation.store import Store, StoreError
from judge.batch_files import NOT_JSON, OverLimit, SentCalls, head_custom_id, parse_custom_id, stream_lines
from judge.client import UNUSABLE_PROXY, CallResult, Endpoint, request_body, unusable_proxy
from judge.jobs import Plan, register_judge, stored_judges
from judge.limits import MAX_REPLY_BYTES
from judge.prompts import SchemaMode, build_messages, redact, response_format
from judge.runner import Call, call_row, call_seed, take_reply

__all__ = [
    "BatchError",
    "Submitted",
    "BatchState",
    "Collected",
    "submit_batch",
    "batch_state",
    "collect_batch",
    "batch_lines",
    "MAX_LINES",
]

MAX_LINES = 50_000  # the Batch API's most requests in one file
MAX_BYTES = 200_000_000  # and its largest file
TAG = "denominator-judge"  # metadata["made_by"]: a batch this tool submitted
ENDED = {"completed", "expired", "cancelled"}  # may have output to collect
REFUSED = {"failed"}  # the input was refused: nothing to collect


class BatchError(DenominatorError):
    """A batch that cannot be submitted, read or collected (said in one line)."""


@dataclass
class Submitted:
    batch_id: str | None  # None: nothing left to ask
    lines: int
    status: str | None = None


@dataclass
class BatchState:
    batch_id: str
    status: str
    total: int
    completed: int
    failed: int
    fingerprint: str | None
    rubric: str | None
    errors: list[str] = field(default_factory=list)  # why a batch failed (validation)

    @property
    def ended(self) -> bool:
        return self.status in ENDED

    def text(self) -> str:
        """``batch_0001: in_progress, 3 of 40 requests answered, 1 failed (judge 0b187b4953d3d59a, relevance)``."""
        judge = (
            f" (judge {self.fingerprint[:16]}, {self.rubric})" if self.fingerprint else " (not a judge batch)"
        )
        why = f": {'; '.join(self.errors)}" if self.errors else ""
        return (
            f"{self.batch_id}: {self.status}, {self.completed} of {self.total} requests answered, "
            f"{self.failed} failed{judge}{why}"
        )


@dataclass
class Collected:
    state: BatchState
    stored: int = 0  # rows stored now (values and error rows)
    values: int = 0
    errors: int = 0  # error rows stored now: failed, expired, over-limit, unanswered or unusable lines
    already: int = (
        0  # lines skipped: a value this judge already has (or this batch's error rows stored before)
    )
    unknown: int = 0  # answers for ids this batch did not send: ignored
    duplicates: int = 0  # lines of a call already read in this collection (the first one counts)
    malformed: int = 0  # lines that are not a JSON object
    too_long: int = 0  # lines over the reply limit naming a call sent: error rows stored now
    unreadable: int = 0  # lines over the reply limit whose custom_id is not in their first bytes
    missing: int = 0  # calls sent that no line answered: error rows stored now
    truncated: bool = False  # a file longer than the limit times the calls: read no further
    recorded: bool = True  # False: a batch sent before m017, checked against the judge's calls
    examples: list[str] = field(default_factory=list)  # the first line numbers left out
    ignored: list[str] = field(default_factory=list)  # the first ids ignored
    line_cap: int = MAX_REPLY_BYTES
    tokens_in: int = 0
    tokens_out: int = 0
    model: str | None = None


_DEFAULT_KEY = object()


def _client(base_url: str, timeout: float, api_key: Any = _DEFAULT_KEY) -> openai.OpenAI:
    """The synchronous client for files and batches: redirects not followed (as live calls)."""
    key = (os.environ.get("OPENAI_API_KEY") or "no-key") if api_key is _DEFAULT_KEY else api_key
    try:  # httpx2's default transport: the proxies of the environment, each made a pool now
        http_client = openai.DefaultHttpxClient(follow_redirects=False)
    except UNUSABLE_PROXY as exc:  # one line, naming no proxy URL (it may hold credentials)
        raise BatchError(
            f"{redact(base_url)}: a proxy of the environment (HTTP_PROXY, HTTPS_PROXY or ALL_PROXY, "
            f"either case) is {unusable_proxy(exc)}"
        ) from None
    return openai.OpenAI(
        base_url=base_url, api_key=key, max_retries=2, timeout=timeout, http_client=http_client
    )


def _fail(what: str, base_url: str, exc: Exception) -> BatchError:
    if isinstance(exc, openai.APIStatusError):
        body = exc.body if isinstance(exc.body, dict) else {}
        error = body.get("error")
        inner = error if isinstance(error, dict) else body
        message = inner.get("message") if isinstance(inner, dict) else None
        detail = f"HTTP {exc.status_code}" + (f": {message}" if message else "")
    else:
        detail = type(exc).__name__
    return BatchError(f"{redact(base_url)}: {what}: {detail}")


def batch_lines(plan: Plan, endpoint: Endpoint, schema_mode: SchemaMode) -> list[dict[str, Any]]:
    """One Batch API request per call left of ``plan``: the live call's id and body."""
    return _request_lines(plan, list(plan.todo()), endpoint, schema_mode)


def _request_lines(
    plan: Plan, calls: list[Call], endpoint: Endpoint, schema_mode: SchemaMode
) -> list[dict[str, Any]]:
    rubric = plan.settings["rubric"]
    fmt = response_format(rubric, schema_mode)
    return [
        {
            "custom_id": call.call_id(plan.fingerprint),
            "method": "POST",
            "url": "/v1/chat/completions",
            "body": request_body(
                endpoint,
                build_messages(rubric, call.data, plan.settings.get("guidelines")),
                fmt,
                call_seed(endpoint.seed, call),
            ),
        }
        for call in calls
    ]


def submit_batch(
    store: Store, plan: Plan, endpoint: Endpoint, schema_mode: SchemaMode, *, api_key: Any = _DEFAULT_KEY
) -> Submitted:
    """Register the judge, upload the calls left as a batch file, create the batch and record
    the calls it asked in the store (what its collection may store); return at once with its id
    (``batch_id`` None when nothing is left to ask). BatchError: too many calls for one batch,
    or the endpoint refused the file or the batch."""
    if plan.left > MAX_LINES:
        raise BatchError(
            f"{plan.left:,} calls left, over the Batch API's {MAX_LINES:,} requests a batch: "
            "submit them in parts with --limit"
        )
    calls = list(plan.todo())
    lines = _request_lines(plan, calls, endpoint, schema_mode)
    if not lines:
        return Submitted(None, 0)
    data = "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines).encode()
    if len(data) > MAX_BYTES:
        raise BatchError(
            f"a batch file of {len(data):,} bytes, over the Batch API's {MAX_BYTES:,}: submit in parts with --limit"
        )
    plan.identity = register_judge(store, plan.fingerprint, plan.settings, plan.identity.get("name"))
    metadata = {"made_by": TAG, "fingerprint": plan.fingerprint, "rubric": plan.settings["rubric"]}
    with _client(endpoint.base_url, endpoint.timeout, api_key) as client:
        try:
            file = client.files.create(file=("judge-batch.jsonl", data, "application/jsonl"), purpose="batch")
        except openai.OpenAIError as exc:
            raise _fail("the batch file was not uploaded", endpoint.base_url, exc) from None
        try:
            batch = client.batches.create(
                input_file_id=file.id,
                endpoint="/v1/chat/completions",
                completion_window="24h",
                metadata=metadata,
            )
        except openai.OpenAIError as exc:
            raise _fail("the batch was not created", endpoint.base_url, exc) from None
    try:
        store.record_batch(batch.id, plan.fingerprint, [call.done_key for call in calls])
    except StoreError as exc:  # the batch exists: say its id, and how its collection will check it
        raise BatchError(
            f"batch {batch.id} was submitted but the calls it asked were not recorded ({exc}): collect it "
            "as usual; its answers are then checked against this judge's calls on the store's items"
        ) from None
    return Submitted(batch.id, len(lines), batch.status)


def _state(batch: Any) -> BatchState:
    meta = batch.metadata or {}
    ours = meta.get("made_by") == TAG
    counts = batch.request_counts
    errors = [e.message or e.code or "" for e in (batch.errors.data or [])] if batch.errors else []
    return BatchState(
        batch_id=batch.id,
        status=batch.status,
        total=counts.total if counts else 0,
        completed=counts.completed if counts else 0,
        failed=counts.failed if counts else 0,
        fingerprint=meta.get("fingerprint") if ours else None,
        rubric=meta.get("rubric") if ours else None,
        errors=[e for e in errors if e],
    )


def batch_state(
    base_url: str, batch_id: str, *, timeout: float = 60.0, api_key: Any = _DEFAULT_KEY
) -> BatchState:
    """A batch's status and counts, and the judge it was submitted for."""
    with _client(base_url, timeout, api_key) as client:
        try:
            return _state(client.batches.retrieve(batch_id))
        except openai.OpenAIError as exc:
            raise _fail(f"batch {batch_id!r} not read", base_url, exc) from None


def _line_row(
    line: dict[str, Any], key: tuple[int, str | None, int], fingerprint: str, rubric: str, batch_id: str
) -> dict[str, Any]:
    """A batch line as the live run's row: a reply parsed by take_reply, else an error row."""
    row = call_row(Call(key[0], {}, key[1], key[2]), fingerprint)
    answer = line.get("response")
    response = answer if isinstance(answer, dict) else None
    body = response.get("body") if response else None
    if response and response.get("status_code") == 200 and isinstance(body, dict):
        try:
            choices = body.get("choices") or []
            text = choices[0]["message"]["content"] if choices else None
            usage = body.get("usage") or {}
            served, system = body.get("model"), body.get("system_fingerprint")
        except (KeyError, IndexError, TypeError, AttributeError):
            row["error"] = f"batch {batch_id}: a line that is not a chat completion"
            row["raw"] = json.dumps(body)[:1024]
            return row
        result = CallResult(
            text=text if isinstance(text, str) else None,
            tokens_in=usage.get("prompt_tokens"),
            tokens_out=usage.get("completion_tokens"),
            latency_ms=0.0,  # a batch line has no latency of its own
            attempts=1,
            served_model=served if isinstance(served, str) and served else None,
            system_fingerprint=system if isinstance(system, str) and system else None,
        )
        if not take_reply(row, rubric, result):  # the live run's parsing; its error names the batch
            row["error"] = f"batch {batch_id}: {row['error']}"
        return row
    failure = line.get("error")
    error = failure if isinstance(failure, dict) else {}
    if response:
        detail = f"HTTP {response.get('status_code')}"
        inner = (body or {}).get("error") if isinstance(body, dict) else None
        if isinstance(inner, dict) and inner.get("message"):
            detail += f": {inner['message']}"
    else:
        detail = ": ".join(str(x) for x in (error.get("code"), error.get("message")) if x) or "no response"
    row["error"] = f"call failed: batch {batch_id}: {detail}"
    return row


EXAMPLES = 5  # refused ids named in the one line that counts them


def _order_key(key: tuple[int, str | None, int]) -> tuple[int, str, int]:
    return key[0], key[1] or "", key[2]


def collect_batch(
    store: Store,
    base_url: str,
    batch_id: str,
    *,
    timeout: float = 60.0,
    api_key: Any = _DEFAULT_KEY,
    max_reply_bytes: int = MAX_REPLY_BYTES,
) -> Collected:
    """Store a batch's answers as a live run would (see the module's docstring); a batch still
    running stores nothing (``Collected.state`` says where it is). BatchError: not a judge
    batch, a judge not in this database, another endpoint than the judge's, or the batch
    refused."""
    with _client(base_url, timeout, api_key) as client:
        try:
            state = _state(client.batches.retrieve(batch_id))
        except openai.OpenAIError as exc:
            raise _fail(f"batch {batch_id!r} not read", base_url, exc) from None
        fp = state.fingerprint
        if fp is None:
            raise BatchError(
                f"{batch_id} was not submitted by python -m judge (no judge fingerprint in its metadata)"
            )
        judge = next((j for j in stored_judges(store) if j["fingerprint"] == fp), None)
        if judge is None:
            raise BatchError(
                f"{batch_id} is for judge {fp[:16]}, not in {store.path}: give the --db it was submitted from"
            )
        settings = judge["settings"]
        if settings.get("endpoint") != redact(base_url.rstrip("/")):
            raise BatchError(
                f"{batch_id} is for judge {fp[:16]} of {settings.get('endpoint')}, not {redact(base_url)}: "
                "give that endpoint as --base-url"
            )
        if state.status in REFUSED:
            raise BatchError(state.text())
        collected = Collected(state, model=settings.get("model"), line_cap=max_reply_bytes)
        if not state.ended:
            return collected
        full = client.batches.retrieve(batch_id)
        rubric = settings["rubric"]
        sent = SentCalls.of(store, batch_id, fp, rubric)
        collected.recorded = sent.recorded is not None
        # calls sent: recorded; else the endpoint's count, at most a batch's (it only bounds the reading)
        calls = len(sent) if sent.recorded is not None else min(max(state.total, 1), MAX_LINES)
        byte_cap = max_reply_bytes * calls
        done = store.judge_done(fp)
        rows: list[dict[str, Any]] = []  # answers
        error_rows: list[dict[str, Any]] = []  # failed, expired, over-limit or unusable lines
        seen: set[tuple[int, str | None, int]] = set()
        for file_id in (full.output_file_id, full.error_file_id):
            try:
                for number, line in stream_lines(client, file_id, max_reply_bytes, byte_cap):
                    row = _take(collected, line, number, sent, seen, done, fp, rubric, batch_id)
                    if row is not None:
                        (rows if row["value"] is not None else error_rows).append(row)
            except openai.OpenAIError as exc:
                raise _fail(f"batch file {file_id!r} not read", base_url, exc) from None
    missing: set[tuple[int, str | None, int]] = set()
    if sent.recorded is not None:  # every call sent that no line answered: asked again next run
        missing = sent.recorded - seen - done
        cut = f", read no further than {byte_cap:,} bytes" if collected.truncated else ""
        for key in sorted(missing, key=_order_key):
            row = call_row(Call(key[0], {}, key[1], key[2]), fp)
            row["error"] = f"batch {batch_id}: no answer for this call in the batch's files{cut}"
            error_rows.append(row)
    stored_before = store.judge_error_keys(fp, f"batch {batch_id}:")
    kept = [r for r in error_rows if (r["item_id"], r["ab_order"], r["repeat"]) not in stored_before]
    collected.already += len(error_rows) - len(kept)
    collected.missing = sum(1 for r in kept if (r["item_id"], r["ab_order"], r["repeat"]) in missing)
    stored: list[Mapping[str, Any]] = [*rows, *kept]
    store.add_judge_labels(stored)
    collected.values, collected.errors = len(rows), len(kept)
    collected.stored = len(stored)
    collected.tokens_in = sum(r["tokens_in"] or 0 for r in stored)
    collected.tokens_out = sum(r["tokens_out"] or 0 for r in stored)
    return collected


def _take(
    collected: Collected,
    line: Any,
    number: int,
    sent: SentCalls,
    seen: set[tuple[int, str | None, int]],
    done: set[tuple[int, str | None, int]],
    fp: str,
    rubric: str,
    batch_id: str,
) -> dict[str, Any] | None:
    """One line of a batch file: the row to store, or None (counted in ``collected``: ignored,
    refused, a duplicate, already stored)."""
    if line is None:
        if number == 0:
            collected.truncated = True
        return None
    if line == NOT_JSON:
        collected.malformed += 1
        _name(collected.examples, f"line {number} (not JSON)")
        return None
    over = isinstance(line, OverLimit)
    custom_id = head_custom_id(line.head) if isinstance(line, OverLimit) else line.get("custom_id")
    if over and not isinstance(custom_id, str):
        collected.unreadable += 1
        _name(collected.examples, f"line {number} (over the limit, no custom_id in its first bytes)")
        return None
    key = parse_custom_id(custom_id, fp)
    if key is None or key not in sent:
        collected.unknown += 1
        _name(collected.ignored, repr(custom_id)[:80])
        return None
    if key in seen:
        collected.duplicates += 1
        return None
    seen.add(key)
    if key in done:
        collected.already += 1
        return None
    if isinstance(line, OverLimit):
        collected.too_long += 1
        row = call_row(Call(key[0], {}, key[1], key[2]), fp)
        row["error"] = (
            f"batch {batch_id}: an answer over the {collected.line_cap:,}-byte reply limit, not read"
        )
        return row
    return _line_row(line, key, fp, rubric, batch_id)


def _name(examples: list[str], what: str) -> None:
    if len(examples) < EXAMPLES:
        examples.append(what)
