"""What a batch's collection reads (:func:`judge.batch.collect_batch`): which calls the batch
sent, and its files, line by line.

- :class:`SentCalls`: the calls recorded in the store when the batch was sent
  (:meth:`Store.batch_sent`, m017), never the endpoint's copy of the input file; for a batch sent
  before m017, the judge's own calls on the store's items (its rubric's items and orders, a
  repeat below :data:`judge.limits.MAX_REPEATS`). :func:`parse_custom_id` reads an id only as
  :meth:`judge.runner.Call.call_id` writes one.
- :func:`stream_lines`: a bounded line reader over a file streamed from the endpoint; a line
  over the reply limit is never held whole (:class:`OverLimit`: its first
  :data:`judge.limits.BATCH_HEAD_BYTES`, where :func:`head_custom_id` reads its ``custom_id``),
  and the file is read no further than a byte cap.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import openai

from annotation.store import Store
from judge.jobs import llm_calls
from judge.limits import BATCH_HEAD_BYTES, MAX_REPEATS
from judge.runner import Call

__all__ = ["SentCalls", "OverLimit", "NOT_JSON", "parse_custom_id", "stream_lines", "head_custom_id"]


def parse_custom_id(custom_id: Any, fingerprint: str) -> tuple[int, str | None, int] | None:
    """(item, order, repeat) of an id written exactly as this judge writes one
    (:meth:`Call.call_id`: ``01`` or ``+1`` is not ``1``), else None."""
    parts = custom_id.split("/") if isinstance(custom_id, str) and len(custom_id) <= 80 else []
    if len(parts) != 4 or parts[0] != fingerprint[:16] or parts[2] not in ("-", "AB", "BA"):
        return None
    if not all(p.isascii() and p.isdigit() for p in (parts[1], parts[3])):
        return None
    item, order, repeat = int(parts[1]), None if parts[2] == "-" else parts[2], int(parts[3])
    if Call(item, {}, order, repeat).call_id(fingerprint) != custom_id:
        return None
    return item, order, repeat


class SentCalls:
    """The calls a batch asked: those recorded when it was sent, else (a batch sent before
    m017) the judge's calls on the store's items with a repeat below MAX_REPEATS."""

    def __init__(self, recorded: set[tuple[int, str | None, int]] | None, base: set[tuple[int, str | None]]):
        self.recorded, self.base = recorded, base

    @classmethod
    def of(cls, store: Store, batch_id: str, fingerprint: str, rubric: str) -> SentCalls:
        recorded = store.batch_sent(batch_id, fingerprint)
        if recorded is not None:
            return cls(recorded, set())
        return cls(None, {(c.item_id, c.ab_order) for c in llm_calls(store, rubric)})

    def __contains__(self, key: tuple[int, str | None, int]) -> bool:
        if self.recorded is not None:
            return key in self.recorded
        return (key[0], key[1]) in self.base and 0 <= key[2] < MAX_REPEATS

    def __len__(self) -> int:
        return len(self.recorded) if self.recorded is not None else len(self.base)


NOT_JSON = "not JSON"  # a line that is not a JSON object: counted and named, never stored


@dataclass(frozen=True)
class OverLimit:
    """A line over the reply limit, never held whole: its first BATCH_HEAD_BYTES bytes."""

    head: bytes


def stream_lines(
    client: openai.OpenAI, file_id: str | None, line_cap: int, byte_cap: int
) -> Iterator[tuple[int, Any]]:
    """(line number, the line's JSON object, NOT_JSON, or an :class:`OverLimit`) of a batch file,
    streamed: a line longer than ``line_cap`` bytes keeps its first BATCH_HEAD_BYTES and the rest
    is passed over as it arrives; after ``byte_cap`` bytes the file is read no further (a last
    ``(0, None)`` says so). At most ``line_cap`` + one 64 KB piece is held at a time. The
    endpoint's errors (``openai.OpenAIError``) are the caller's to say."""
    if not file_id:
        return
    with client.files.with_streaming_response.content(file_id) as response:
        buffer, head, over, read, number = bytearray(), b"", False, 0, 0
        for chunk in response.iter_bytes(1 << 16):
            read += len(chunk)
            start = 0
            while True:
                end = chunk.find(b"\n", start)
                piece = chunk[start:] if end < 0 else chunk[start:end]
                if not over and len(buffer) + len(piece) > line_cap:
                    head = bytes(buffer[:BATCH_HEAD_BYTES])
                    head += piece[: BATCH_HEAD_BYTES - len(head)]
                    over, buffer = True, bytearray()
                elif not over:
                    buffer += piece
                if end < 0:
                    break
                number += 1
                yield number, (OverLimit(head) if over else _parse_line(buffer))
                buffer, head, over, start = bytearray(), b"", False, end + 1
            if read > byte_cap:
                if over:  # over the limit whatever its end: its call is known from its head
                    yield number + 1, OverLimit(head)
                yield 0, None
                return
        if buffer.strip() or over:
            yield number + 1, (OverLimit(head) if over else _parse_line(buffer))


def _parse_line(raw: bytes | bytearray) -> Any:
    if not raw.strip():
        return None
    try:
        line = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError):
        return NOT_JSON
    return line if isinstance(line, dict) else NOT_JSON


_SPACE = re.compile(r"[ \t\n\r]*")


def head_custom_id(head: bytes) -> Any:
    """The ``custom_id`` of a line over the limit, read from its first bytes: the top-level
    keys are read in order, each value whole, until ``custom_id``; None when the head is not the
    start of a JSON object or ends before that key's value does."""
    text, decoder = head.decode("utf-8", "ignore"), json.JSONDecoder()
    at = _SPACE.match(text).end()  # type: ignore[union-attr]
    if not text.startswith("{", at):
        return None
    at += 1
    try:
        while True:
            at = _SPACE.match(text, at).end()  # type: ignore[union-attr]
            if not text.startswith('"', at):
                return None
            key, at = decoder.raw_decode(text, at)  # a string: it starts with '"'
            at = _SPACE.match(text, at).end()  # type: ignore[union-attr]
            if not text.startswith(":", at):
                return None
            value, at = decoder.raw_decode(text, _SPACE.match(text, at + 1).end())  # type: ignore[union-attr]
            if key == "custom_id":
                return value
            at = _SPACE.match(text, at).end()  # type: ignore[union-attr]
            if not text.startswith(",", at):
                return None
            at += 1
    except (ValueError, RecursionError):  # json.JSONDecodeError is a ValueError: the head ended
        return None
