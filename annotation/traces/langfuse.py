"""Langfuse traces and observations, parsed into traces.

Reads a trace as the UI or ``GET /api/public/traces/{id}`` gives it
(``{"id", "input", "output", "observations": [...]}``), a list of them,
Observations API pages (``{"data": [...], "meta": {...}}``, one a line
allowed) and blob-storage export rows (snake_case). Observations are grouped
by ``traceId``/``trace_id``; each trace's root record is the trace (else its
root observation) with the root observation under ``root_observation``.
Errors: :class:`InvalidTraceSource` naming the line or record and the field.
"""

from __future__ import annotations

from typing import Any

from annotation.traces.base import InvalidTraceSource, Node, RawTrace, ident, order, root, where
from annotation.traces.documents import record_spec
from annotation.traces.files import list_items, read_objects, unwound

SPEC = record_spec(
    question="input|root_observation.input",
    answer="output|root_observation.output",
    system="version|release|root_observation.version",
    system_fallback="langfuse",
    documents="output",
)


def _get(obj: dict[str, Any], *keys: str) -> Any:
    for key in keys:
        if key in obj and obj[key] is not None:
            return obj[key]
    return None


def _langfuse_node(obj: Any, path: str, line: int | None, loc: str, index: int) -> tuple[str | None, Node]:
    if not isinstance(obj, dict):
        raise InvalidTraceSource(path, line, loc or None, "expected an observation object")
    obs_id = ident(obj.get("id"), path, line, loc, "id")
    trace_id = ident(_get(obj, "traceId", "trace_id"), path, line, loc, "traceId", required=False)
    parent = ident(
        _get(obj, "parentObservationId", "parent_observation_id"),
        path,
        line,
        loc,
        "parentObservationId",
        False,
    )
    kind = _get(obj, "type")
    if not isinstance(kind, str):
        raise InvalidTraceSource(path, line, where(loc, "type"), "missing; expected the observation type")
    name = got if isinstance(got := obj.get("name"), str) else ""
    start = _get(obj, "startTime", "start_time")
    return trace_id, Node(obs_id, parent, name, kind.upper(), order(start, index), obj, loc, line)


def read_langfuse(path: str) -> list[RawTrace]:
    """The observations of a Langfuse export, grouped by trace (an observation seen twice: the first)."""
    traces: dict[str, dict[str, Any]] = {}  # trace id -> {"record", "nodes", "loc", "line"}
    loose: list[tuple[str | None, Node]] = []
    count = 0

    def add_trace(obj: dict[str, Any], line: int | None, loc: str) -> None:
        nonlocal count
        trace_id = ident(obj.get("id"), path, line, loc, "id")
        entry = traces.setdefault(trace_id, {"record": obj, "nodes": {}, "loc": loc, "line": line})
        entry["record"] = entry["record"] or obj
        for item, item_line, item_loc in list_items(
            obj.get("observations") or [], line, where(loc, "observations")
        ):
            owner, node = _langfuse_node(item, path, item_line, item_loc, count)
            count += 1
            entry["nodes"].setdefault(node.id, node)

    def visit(value: Any, line: int | None, loc: str) -> None:
        nonlocal count
        if not isinstance(value, dict):
            raise InvalidTraceSource(
                path, line, loc or None, "expected a trace, observations or a page of them"
            )
        if isinstance(value.get("observations"), list) or (
            "id" in value and "type" not in value and ("input" in value or "output" in value)
        ):
            add_trace(value, line, loc)  # a trace (a trace row without observations too)
        elif isinstance(value.get("data"), list) and "type" not in value:
            for item, item_line, item_loc in unwound(value["data"], line, where(loc, "data")):
                visit(item, item_line, item_loc)
        elif "type" in value and "id" in value:
            loose.append(_langfuse_node(value, path, line, loc, count))
            count += 1
        else:
            raise InvalidTraceSource(
                path,
                line,
                loc or None,
                'expected a Langfuse trace {"id", "observations": [...]}, an observation '
                '{"id", "traceId", "type", ...} or a page {"data": [...], "meta": {...}}',
            )

    for value, line, loc in read_objects(path):
        visit(value, line, loc)
    for trace_id, node in loose:
        if trace_id is None:
            raise InvalidTraceSource(
                path, node.line, where(node.loc, "traceId"), "missing; expected the observation's trace id"
            )
        entry = traces.setdefault(trace_id, {"record": None, "nodes": {}, "loc": node.loc, "line": node.line})
        entry["nodes"].setdefault(node.id, node)
    out = []
    for trace_id, entry in traces.items():
        nodes = list(entry["nodes"].values())
        root_node = root(nodes)
        root_obs = root_node.record if root_node else {}
        base = entry["record"] if entry["record"] is not None else root_obs
        out.append(
            RawTrace(trace_id, nodes, {**base, "root_observation": root_obs}, entry["loc"], entry["line"])
        )
    return out
