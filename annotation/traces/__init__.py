"""Reading RAG traces exported from observability tools (OpenInference/Phoenix,
Langfuse, LangSmith) into the store's queries, chunks, runs and traces.

The public face is :mod:`annotation.trace_sources`; what each source reads is
in docs/trace-sources.md. Layers, lowest first: :mod:`.base` (the types and
errors), :mod:`.mapping` (the ``--map`` path language), :mod:`.files` (JSON,
JSON lines, Parquet), one parser per vendor (:mod:`.openinference`,
:mod:`.langfuse`, :mod:`.langsmith`, with :mod:`.documents` for the LangChain
documents the last two share), :mod:`.build` (parsed spans to queries, chunks,
runs, traces), :mod:`.sources` (:func:`read_trace_source`) and :mod:`.write`
(:func:`to_store`).
"""
