"""LangSmith runs (``Client().list_runs(...)`` saved as a JSON list, ``{"runs":
[...]}`` or JSON lines), parsed into traces.

Runs are grouped by ``trace_id``; the root run (no ``parent_run_id``) is the
trace's root record (question ``inputs``, answer ``outputs``); retriever runs'
documents are ``outputs.documents``. Errors: :class:`InvalidTraceSource`
naming the line or record and the field.
"""

from __future__ import annotations

from typing import Any

from annotation.traces.base import InvalidTraceSource, Node, RawTrace, group_traces, ident, order, where
from annotation.traces.documents import record_spec
from annotation.traces.files import list_items, read_objects

SPEC = record_spec(
    question="inputs",
    answer="outputs",
    system="extra.metadata.ls_version|extra.metadata.revision_id",
    system_fallback="langsmith",
    documents="outputs.documents|outputs.output|outputs",
)


def read_langsmith(path: str) -> list[RawTrace]:
    """The runs of a LangSmith export, grouped by ``trace_id`` (else their top ancestor; a run
    seen twice: the first)."""
    runs: list[tuple[dict[str, Any], Node]] = []

    def add(obj: Any, line: int | None, loc: str) -> None:
        if not isinstance(obj, dict):
            raise InvalidTraceSource(path, line, loc or None, "expected a run object")
        run_id = ident(obj.get("id"), path, line, loc, "id")
        parent = ident(obj.get("parent_run_id"), path, line, loc, "parent_run_id", required=False)
        run_type = obj.get("run_type")
        if not isinstance(run_type, str):
            raise InvalidTraceSource(path, line, where(loc, "run_type"), "missing; expected the run type")
        name = got if isinstance(got := obj.get("name"), str) else ""
        start = obj.get("dotted_order") or obj.get("start_time")
        node = Node(run_id, parent, name, run_type.upper(), order(start, len(runs)), obj, loc, line)
        runs.append((obj, node))

    def visit(value: Any, line: int | None, loc: str) -> None:
        if isinstance(value, dict) and isinstance(value.get("runs"), list) and "run_type" not in value:
            for item, item_line, item_loc in list_items(value["runs"], line, where(loc, "runs")):
                add(item, item_line, item_loc)
        elif isinstance(value, dict) and "run_type" in value:
            add(value, line, loc)
        else:
            raise InvalidTraceSource(
                path, line, loc or None, 'expected LangSmith runs {"id", "run_type", "trace_id", ...}'
            )

    for value, line, loc in read_objects(path):
        visit(value, line, loc)
    parents = {node.id: node.parent for _, node in runs}

    def trace_of(obj: dict[str, Any], node: Node) -> str:
        given = ident(obj.get("trace_id"), path, node.line, node.loc, "trace_id", required=False)
        if given:
            return given
        current, seen = node.id, set()
        while (parent := parents.get(current)) and current not in seen:
            seen.add(current)
            current = parent
        return current

    return group_traces((trace_of(obj, node), node) for obj, node in runs)
