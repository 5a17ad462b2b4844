"""What every trace reader shares: the errors, :class:`TraceImport` (what an
export holds), the parsed form of a span, observation or run (:class:`Node`,
grouped by trace into :class:`RawTrace`), and the checks that name the file,
line or record, and field of bad input."""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal, overload

from annotation.formats.textio import check_id, check_text, check_text_size
from annotation.model import InvalidTraces

# a path that leads nowhere (None is a value a record can hold)
MISSING = object()


class InvalidTraceSource(InvalidTraces):
    """A trace export that cannot be read: names the file, line or record, and field."""

    kind = "trace source"


class ChunkConflict(InvalidTraceSource):
    """The same chunk id with two different texts."""


class QueryConflict(InvalidTraceSource):
    """The same query id with two different question texts."""


@dataclass
class TraceImport:
    """What one trace export holds, ready for :func:`annotation.trace_sources.to_store`."""

    source: str
    path: str
    queries: dict[str, str] = field(default_factory=dict)
    chunks: list[dict[str, Any]] = field(default_factory=list)
    # (system, stage) -> query id -> [(chunk id, score or None)] in rank order
    runs: dict[tuple[str, str], dict[str, list[tuple[str, float | None]]]] = field(default_factory=dict)
    traces: list[dict[str, Any]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        return {
            "traces": len(self.traces),
            "queries": len(self.queries),
            "chunks": len(self.chunks),
            "runs": len(self.runs),
            "rankings": sum(len(r) for run in self.runs.values() for r in run.values()),
            "problems": len(self.problems),
        }

    def summary(self) -> str:
        """One line: what was read and how many problems."""
        return f"{self.source} {self.path}: " + ", ".join(f"{n} {k}" for k, n in self.counts().items())


@dataclass
class Node:
    """A span, observation or run, as the common assembly sees it."""

    id: str
    parent: str | None
    name: str
    kind: str  # upper case: RETRIEVER, RERANKER, CHAIN, ...
    order: tuple[int, float, str, int]  # the sort key of order()
    record: Any
    loc: str  # where it is, for messages (line given apart)
    line: int | None


@dataclass
class RawTrace:
    """One trace's nodes and the root record the question/answer/system/query_id paths read."""

    id: str
    nodes: list[Node]
    root: dict[str, Any]
    loc: str
    line: int | None


class Loc:
    """Where a document is (``base.index``), made into text only for a message."""

    __slots__ = ("base", "index")

    def __init__(self, base: str, index: int) -> None:
        self.base, self.index = base, index

    def __str__(self) -> str:
        return f"{self.base}.{self.index}"


def is_nan(value: Any) -> bool:
    return isinstance(value, float) and math.isnan(value)


def order(value: Any, index: int) -> tuple[int, float, str, int]:
    """A sort key for start times of any export (ns numbers, ISO text, datetimes)."""
    if isinstance(value, bool) or value is None or is_nan(value):
        return (2, 0.0, "", index)
    if isinstance(value, int | float):
        return (0, float(value), "", index)
    if isinstance(value, datetime):
        return (0, value.timestamp() * 1e9, "", index)
    if isinstance(value, str):
        if value.isdigit():
            return (0, float(value), "", index)
        return (1, 0.0, value, index)
    return (2, 0.0, "", index)


def where(loc: Any, name: str) -> str:
    """``loc.name``, or ``name`` at the top of a record."""
    return f"{loc}.{name}" if loc else name


def short(text: str) -> str:
    """A text quoted for a message, cut at 40 characters."""
    return repr(text) if len(text) <= 40 else f"{text[:40]!r}... ({len(text)} characters)"


@overload
def ident(
    value: Any, path: str, line: int | None, loc: str, name: str, required: Literal[True] = True
) -> str: ...


@overload
def ident(value: Any, path: str, line: int | None, loc: str, name: str, required: bool) -> str | None: ...


def ident(value: Any, path: str, line: int | None, loc: str, name: str, required: bool = True) -> str | None:
    """An id as text: a non-empty string that keeps the id rule
    (:func:`annotation.formats.textio.check_id`), or an integer (written in decimal).
    None when absent and not ``required``; else InvalidTraceSource."""
    if isinstance(value, bool):
        raise InvalidTraceSource(
            path, line, where(loc, name), f"expected a string id, got {json.dumps(value)}"
        )
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, str) and value.strip():
        check_nul(value, path, line, where(loc, name))
        return check_id(value, path, line, where(loc, name), InvalidTraceSource)
    if value is None or value is MISSING or value == "" or is_nan(value):
        if required:
            raise InvalidTraceSource(path, line, where(loc, name), "missing; expected an id (a string)")
        return None
    raise InvalidTraceSource(
        path, line, where(loc, name), f"expected a string id, got {json.dumps(value, default=str)[:60]}"
    )


def check_nul(value: str, path: str, line: int | None, at: str) -> None:
    """InvalidTraceSource if ``value`` holds a NUL character (a PostgreSQL store cannot hold one, so
    neither backend takes it). The readers refuse one anywhere in the file
    (annotation.traces.files); this catches one spelled inside a JSON text a field holds, which
    is decoded later."""
    if "\x00" in value:
        check_text(value, path, line, at, InvalidTraceSource)


def utf8(value: str, path: str, line: int | None, at: str) -> None:
    """InvalidTraceSource if ``value`` holds a NUL character (:func:`check_nul`) or a lone surrogate
    (cannot be stored as UTF-8), or is longer than a text may be
    (:func:`annotation.formats.textio.check_text_size`)."""
    check_nul(value, path, line, at)
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidTraceSource(
            path, line, at, f"holds the lone surrogate U+{ord(value[exc.start]):04X}; expected UTF-8 text"
        ) from None
    check_text_size(value, path, line, at, InvalidTraceSource)


def root(nodes: list[Node]) -> Node | None:
    """The node without a parent (else one whose parent is not in the trace), earliest first."""
    ids = {n.id for n in nodes}
    roots = [n for n in nodes if not n.parent] or [n for n in nodes if n.parent not in ids]
    return min(roots, key=lambda n: n.order) if roots else None


def group_traces(pairs: Iterable[tuple[str, Node]]) -> list[RawTrace]:
    """(trace id, node) pairs as traces in first-seen order, the root node's
    record as the trace's root; a node id seen twice in a trace keeps the first."""
    by_trace: dict[str, dict[str, Node]] = {}
    for trace_id, node in pairs:
        by_trace.setdefault(trace_id, {}).setdefault(node.id, node)
    traces = []
    for trace_id, nodes_by_id in by_trace.items():
        nodes = list(nodes_by_id.values())
        top = root(nodes)
        first = min(nodes, key=lambda n: n.order[-1])
        traces.append(RawTrace(trace_id, nodes, top.record if top else {}, first.loc, first.line))
    return traces
