"""RAG traces exported from observability tools: queries, chunks, runs and traces.

:func:`read_trace_source` reads one export file of OpenInference (Phoenix),
Langfuse or LangSmith spans, or the product's own trace JSONL, and returns a
:class:`TraceImport`: the questions asked (queries), the chunks retrieved, one
run per system and stage (``fetch`` from retriever spans, ``keep`` from
reranker output), and the traces (question, the chunk ids shown to the LLM,
answer) in the shape :func:`annotation.formats.records.read_traces` gives. It only
parses: :func:`to_store` writes a :class:`TraceImport` in one store
transaction. Bad input raises :class:`InvalidTraceSource` (a
:class:`~annotation.model.FormatError`) naming the file, line or record, and
field; a trace without a question or an answer is not an error but is listed
in ``TraceImport.problems`` and not imported as a trace.

What each source reads, the defaults and the ``--map KEY=PATH`` keys
(:data:`MAPPING_KEYS`): docs/trace-sources.md. The code is in
:mod:`annotation.traces`; this module is its public face.
"""

from annotation.traces.base import ChunkConflict, InvalidTraceSource, QueryConflict, TraceImport
from annotation.traces.mapping import MAPPING_KEYS, parse_mapping
from annotation.traces.sources import SOURCES, read_trace_source
from annotation.traces.write import to_store

__all__ = [
    "SOURCES",
    "MAPPING_KEYS",
    "InvalidTraceSource",
    "ChunkConflict",
    "QueryConflict",
    "TraceImport",
    "parse_mapping",
    "read_trace_source",
    "to_store",
]
