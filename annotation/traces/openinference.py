"""OpenInference spans, as Phoenix and OTLP export them, parsed into traces.

Reads Phoenix's spans dataframe (Parquet, JSON in any pandas orient, JSON
lines; attributes flat, nested or as ``attributes.*`` columns), Phoenix REST
span pages (``{"data": [...]}``) and OTLP JSON (``{"resourceSpans": [...]}``,
camelCase or snake_case). Produces one :class:`RawTrace` per trace id whose
root record is ``{"name", "span_kind", "context", "parent_id", "attributes",
"resource"}``; documents are ``retrieval.documents.N`` of RETRIEVER spans and
``reranker.output_documents.N`` of RERANKER spans. Errors:
:class:`InvalidTraceSource` naming the line or record and the field.
"""

from __future__ import annotations

from typing import Any

from annotation.traces.base import (
    InvalidTraceSource,
    Loc,
    Node,
    RawTrace,
    group_traces,
    ident,
    is_nan,
    order,
    where,
)
from annotation.traces.files import list_items, read_objects
from annotation.traces.mapping import FieldPath, Spec, decode, lookup


def _frame_records(value: dict[str, Any]) -> list[dict[str, Any]] | None:
    """pandas ``DataFrame.to_json`` in the columns, index or split orient, as records."""
    if isinstance(value.get("columns"), list) and isinstance(value.get("data"), list):
        columns = value["columns"]
        return [dict(zip(columns, row)) for row in value["data"] if isinstance(row, list)]
    if value and all(isinstance(v, dict) for v in value.values()):
        keys = set(value)
        if keys & {"context.span_id", "context.trace_id"}:  # columns orient: {column: {index: value}}
            index: list[str] = []
            for column in value.values():
                for label in column:
                    if label not in index:
                        index.append(label)
            return [{col: cells.get(label) for col, cells in value.items()} for label in index]
        if all("context.span_id" in v or "context" in v for v in value.values()):  # index orient
            return list(value.values())
    return None


def _otlp_value(value: Any) -> Any:
    """An OTLP AnyValue (camelCase or snake_case) as a plain value."""
    if not isinstance(value, dict):
        return value
    for key in ("stringValue", "string_value", "boolValue", "bool_value", "bytesValue", "bytes_value"):
        if key in value:
            return value[key]
    for key in ("intValue", "int_value"):
        if key in value:
            raw = value[key]
            return int(raw) if isinstance(raw, str) and raw.lstrip("-").isdigit() else raw
    for key in ("doubleValue", "double_value"):
        if key in value:
            raw = value[key]
            return float(raw) if isinstance(raw, str) else raw
    for key in ("arrayValue", "array_value"):
        if key in value:
            return [_otlp_value(v) for v in (value[key] or {}).get("values") or []]
    for key in ("kvlistValue", "kvlist_value"):
        if key in value:
            return {
                kv.get("key"): _otlp_value(kv.get("value")) for kv in (value[key] or {}).get("values") or []
            }
    return None


def _otlp_attributes(items: Any, path: str, line: int | None, loc: str) -> dict[str, Any]:
    if not isinstance(items, list):
        raise InvalidTraceSource(path, line, where(loc, "attributes"), "expected a list of {key, value}")
    out: dict[str, Any] = {}
    for i, kv in enumerate(items):
        if not isinstance(kv, dict) or not isinstance(kv.get("key"), str):
            raise InvalidTraceSource(
                path, line, f"{where(loc, 'attributes')}[{i}]", 'expected {"key": "...", "value": {...}}'
            )
        out[kv["key"]] = _otlp_value(kv.get("value"))
    return out


def _oi_span(
    obj: Any, path: str, line: int | None, loc: str, resource: dict[str, Any], index: int
) -> tuple[str, Node]:
    if not isinstance(obj, dict):
        raise InvalidTraceSource(path, line, loc or None, "expected a span object")
    attrs: dict[str, Any] = {}
    if isinstance(obj.get("attributes"), list):  # OTLP
        trace_id = obj.get("traceId", obj.get("trace_id"))
        span_id = obj.get("spanId", obj.get("span_id"))
        parent = obj.get("parentSpanId", obj.get("parent_span_id"))
        start = obj.get("startTimeUnixNano", obj.get("start_time_unix_nano"))
        attrs = _otlp_attributes(obj["attributes"], path, line, loc)
        kind = None
        names = ("traceId", "spanId")
    else:
        context = got if isinstance(got := obj.get("context"), dict) else {}
        trace_id = context.get("trace_id", obj.get("context.trace_id"))
        span_id = context.get("span_id", obj.get("context.span_id"))
        parent = obj.get("parent_id")
        start = obj.get("start_time")
        # as given: nested ({"input": {"value": ...}}), flat ({"input.value": ...}) or
        # dataframe columns ("attributes.input.value"); lookup reads all three
        if isinstance(obj.get("attributes"), dict):
            attrs.update(obj["attributes"])
        for key, value in obj.items():
            if key.startswith("attributes.") and value is not None and not is_nan(value):
                attrs[key[len("attributes.") :]] = value
        kind = obj.get("span_kind")
        names = ("context.trace_id", "context.span_id")
    trace = ident(trace_id, path, line, loc, names[0])
    span = ident(span_id, path, line, loc, names[1])
    parent_id = ident(parent, path, line, loc, "parent_id", required=False)
    given = lookup(attrs, ("openinference", "span", "kind"))
    kind = (given if isinstance(given, str) else None) or kind or ""
    name = got if isinstance(got := obj.get("name"), str) else ""
    record = {
        "name": name,
        "span_kind": kind,
        "context": {"trace_id": trace, "span_id": span},
        "parent_id": parent_id,
        "attributes": attrs,
        "resource": resource,
    }
    node = Node(span, parent_id, name, str(kind).upper(), order(start, index), record, loc, line)
    return trace, node


def _oi_spans(path: str) -> list[tuple[str, Node]]:
    spans: list[tuple[str, Node]] = []

    def add(obj: Any, line: int | None, loc: str, resource: dict[str, Any] | None = None) -> None:
        spans.append(_oi_span(obj, path, line, loc, resource or {}, len(spans)))

    def visit(value: Any, line: int | None, loc: str) -> None:
        if not isinstance(value, dict):
            raise InvalidTraceSource(path, line, loc or None, "expected spans (objects)")
        groups = value.get("resourceSpans", value.get("resource_spans"))
        if isinstance(groups, list):
            key = "resourceSpans" if "resourceSpans" in value else "resource_spans"
            for i, group in enumerate(groups):
                group_loc = f"{where(loc, key)}[{i}]"
                if not isinstance(group, dict):
                    raise InvalidTraceSource(path, line, group_loc, "expected an object")
                res = got if isinstance(got := group.get("resource"), dict) else {}
                resource = _otlp_attributes(res.get("attributes") or [], path, line, group_loc + ".resource")
                scopes_key = "scopeSpans" if "scopeSpans" in group else "scope_spans"
                if scopes_key not in group and "instrumentationLibrarySpans" in group:
                    scopes_key = "instrumentationLibrarySpans"
                for j, scope in enumerate(group.get(scopes_key) or []):
                    scope_loc = f"{group_loc}.{scopes_key}[{j}]"
                    for k, span in enumerate((scope or {}).get("spans") or []):
                        add(span, line, f"{scope_loc}.spans[{k}]", resource)
            return
        if (
            isinstance(value.get("context"), dict)
            or isinstance(value.get("context.span_id"), str | int)
            or "spanId" in value
            or "span_id" in value
        ):
            add(value, line, loc)  # one span (a dataframe record, a REST span, an OTLP span)
            return
        records = _frame_records(value)
        if records is not None:
            for item, item_line, item_loc in list_items(records, line, loc):
                add(item, item_line, item_loc)
            return
        if isinstance(value.get("data"), list) and "context" not in value and "attributes" not in value:
            for item, item_line, item_loc in list_items(value["data"], line, where(loc, "data")):
                add(item, item_line, item_loc)
            return
        if "context" in value or "context.span_id" in value:
            add(value, line, loc)  # a span whose context is malformed: named by the span reader
            return
        raise InvalidTraceSource(
            path,
            line,
            loc or None,
            "not a span; expected Phoenix spans (records with context.span_id), a Phoenix REST page "
            '{"data": [...]} or OTLP JSON {"resourceSpans": [...]}',
        )

    for value, line, loc in read_objects(path):
        visit(value, line, loc)
    return spans


def _oi_docs(node: Node, role: str, documents: FieldPath | None) -> list[tuple[Any, Loc]]:
    attrs = node.record["attributes"]
    prefixes = (
        ["reranker.output_documents", "retrieval.documents"]
        if role == "reranker"
        else ["retrieval.documents"]
    )
    for prefix in prefixes:
        docs = _indexed(attrs, prefix)
        if docs is not None:
            base = where(node.loc, f"attributes.{prefix}")
            return [(doc, Loc(base, i)) for i, doc in docs]
    return []


def _indexed(attrs: dict[str, Any], prefix: str) -> list[tuple[int, Any]] | None:
    """The documents under ``prefix``: a list there (the dataframe column, the
    nested form, a JSON-encoded list), else ``prefix.N.rest`` keys as
    [(N, {rest: value})] by N (REST and OTLP flatten them)."""
    whole = decode(lookup(attrs, tuple(prefix.split("."))))
    if isinstance(whole, list):
        return list(enumerate(whole))
    start = prefix + "."
    docs: dict[int, dict[str, Any]] = {}
    for key, value in attrs.items():
        if key.startswith(start):
            index, _, rest = key[len(start) :].partition(".")
            if index.isdigit() and rest:
                docs.setdefault(int(index), {})[rest] = value
    if not docs:
        return None
    return sorted(docs.items())


def read_openinference(path: str) -> list[RawTrace]:
    """The spans of an OpenInference export, grouped by trace id (a span seen twice: the first)."""
    return group_traces(_oi_spans(path))


SPEC = Spec(
    question="attributes.input.value",
    answer="attributes.output.value",
    system="resource.service.name|resource.openinference.project.name|attributes.metadata.version",
    system_fallback="openinference",
    chunk_id="document.id",
    chunk_text="document.content",
    score="document.score",
    documents=None,
    docs=_oi_docs,
)
