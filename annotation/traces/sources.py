"""Reading one trace export: :func:`read_trace_source` picks the parser of a
source (:data:`SOURCES`), applies the ``--map`` mapping and builds a
:class:`TraceImport`. What each source reads: docs/trace-sources.md."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping

from annotation.formats.records import read_traces
from annotation.traces import langfuse, langsmith, openinference
from annotation.traces.base import InvalidTraceSource, QueryConflict, RawTrace, TraceImport, short
from annotation.traces.build import Builder
from annotation.traces.files import require_file
from annotation.traces.mapping import Spec, parse_mapping

SOURCES = ("openinference", "langfuse", "langsmith", "jsonl")

# source -> (its parser, its defaults); jsonl is read apart
_PARSERS: dict[str, tuple[Callable[[str], list[RawTrace]], Spec]] = {
    "openinference": (openinference.read_openinference, openinference.SPEC),
    "langfuse": (langfuse.read_langfuse, langfuse.SPEC),
    "langsmith": (langsmith.read_langsmith, langsmith.SPEC),
}


def read_trace_source(
    path: str | os.PathLike[str],
    source: str,
    mapping: Mapping[str, str] | Iterable[str] | None = None,
) -> TraceImport:
    """Read one export of ``source`` (one of :data:`SOURCES`) with the mapping
    keys given (``["KEY=PATH", ...]`` or a dict); docs/trace-sources.md says
    what each source reads. Raises :class:`InvalidTraceSource` (or
    :class:`ChunkConflict`, :class:`QueryConflict`)."""
    path = str(path)
    if source not in SOURCES:
        raise InvalidTraceSource(path, None, "source", f"{source!r}; expected one of {', '.join(SOURCES)}")
    mapping = parse_mapping(mapping)
    if source == "jsonl":
        if mapping:
            raise InvalidTraceSource(
                "--map",
                None,
                None,
                "the jsonl source has fixed fields; a mapping applies to the other sources",
            )
        return _read_jsonl(path)
    if "documents" in mapping and source == "openinference":
        raise InvalidTraceSource(
            "--map",
            None,
            "documents",
            "openinference documents are retrieval.documents / reranker.output_documents; "
            "documents applies to langfuse and langsmith",
        )
    require_file(path)
    parse, spec = _PARSERS[source]
    try:
        raw = parse(path)
        if not raw:
            raise InvalidTraceSource(
                path, None, None, "no traces; expected at least one span, observation or run"
            )
        builder = Builder(source, path, spec, mapping)
        for trace in raw:
            builder.add(trace)
    except RecursionError:  # files.MAX_DEPTH keeps the readers far from it: the last guard
        raise InvalidTraceSource(
            path, None, None, "nested too deeply to read; expected spans, observations or runs"
        ) from None
    return builder.result()


def _read_jsonl(path: str) -> TraceImport:
    """The product's trace JSONL (:func:`annotation.formats.records.read_traces`): traces
    and their queries only (contexts may be ids or texts: no chunks, no runs)."""
    traces = read_traces(path)
    imp = TraceImport(source="jsonl", path=path, traces=traces)
    first: dict[str, str] = {}
    for trace in traces:
        stored = imp.queries.setdefault(trace["query_id"], trace["question"])
        first.setdefault(trace["query_id"], trace["id"])
        if stored != trace["question"]:
            raise QueryConflict(
                path,
                None,
                f"trace {trace['id']!r}.question",
                f"query {trace['query_id']!r} asks {short(trace['question'])} here and {short(stored)} "
                f"in trace {first[trace['query_id']]!r}; expected one question per query id",
            )
    return imp
