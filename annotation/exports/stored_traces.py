"""The stored traces as the trace formats (RAGAS, DeepEval, Phoenix) write them.

A trace's ``contexts`` are chunk ids or texts (``python -m annotation import
--traces``): a chunk id takes the chunk's text; a text takes the id of the
stored chunk with exactly that text; a text that matches no chunk keeps the
id ``<trace id>#<position>``, which no label can match (it counts as
unjudged, and the summary says how many there were).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from annotation.exports.common import Judged, NothingToExport, judged_grades
from annotation.store import Store

__all__ = ["Context", "StoredTrace", "TraceCounts", "ReferenceSample", "stored_traces", "reference_samples"]


@dataclass
class Context:
    chunk_id: str | None  # None: a text that matches no stored chunk
    text: str | None  # None: a chunk stored without text
    id: str  # the chunk id, or <trace id>#<position>


@dataclass
class StoredTrace:
    id: str
    query_id: str
    system: str
    question: str
    answer: str
    contexts: list[Context]
    meta: dict[str, Any] = field(default_factory=dict)


def stored_traces(store: Store) -> list[StoredTrace]:
    """Every stored trace in import order, its contexts resolved to (chunk id, text)."""
    rows = store.traces_in_import_order()
    if not rows:
        raise NothingToExport("no traces to export; import some with python -m annotation import --traces")
    raw = [(row, json.loads(row[4] or "[]")) for row in rows]
    wanted = sorted({c for _, contexts in raw for c in contexts})
    texts = store.chunk_texts(wanted)
    by_text: dict[str, str] = {}
    unknown = {c for c in wanted if c not in texts}
    if unknown:  # contexts given as texts: one pass over the chunks finds their ids
        for chunk_id, text in store.chunks_with_text().items():
            if text in unknown and text not in by_text:
                by_text[text] = chunk_id
    traces = []
    for row, contexts in raw:
        resolved = []
        for position, context in enumerate(contexts):
            if context in texts:
                resolved.append(Context(context, texts[context], context))
            elif context in by_text:
                resolved.append(Context(by_text[context], context, by_text[context]))
            else:
                resolved.append(Context(None, context, f"{row[0]}#{position}"))
        meta = {}
        if row[6]:
            try:
                loaded = json.loads(row[6])
            except ValueError:
                loaded = None
            meta = loaded if isinstance(loaded, dict) else {}
        traces.append(StoredTrace(row[0], row[1], row[2], row[3], row[5], resolved, meta))
    return traces


@dataclass
class TraceCounts:
    """What the trace formats leave out or cannot tell, counted over the exported traces."""

    traces: int = 0
    relevant: set[tuple[str, str]] = field(default_factory=set)  # (query, chunk) graded >= t
    below: set[tuple[str, str]] = field(default_factory=set)  # judged, < t
    unjudged_queries: int = 0  # traces whose query has no judgment
    none_relevant: int = 0  # traces whose query is judged, nothing >= t
    unjudged_contexts: int = 0  # shown contexts without a grade
    unmatched_texts: int = 0  # contexts that are texts of no stored chunk
    no_text: int = 0  # contexts or reference chunks stored without text

    def add(self, trace: StoredTrace, judged: Judged) -> None:
        self.traces += 1
        docs = judged.grades.get(trace.query_id, {})
        for doc, grade in docs.items():
            (self.relevant if grade >= judged.threshold else self.below).add((trace.query_id, doc))
        if not docs:
            self.unjudged_queries += 1
        elif not judged.relevant(trace.query_id):
            self.none_relevant += 1
        for context in trace.contexts:
            if judged.grade(trace.query_id, context.chunk_id) is None:
                self.unjudged_contexts += 1
            if context.chunk_id is None:
                self.unmatched_texts += 1
            if context.text is None:
                self.no_text += 1

    def clauses(self, threshold: int, empty: str) -> list[str]:
        out = []
        if self.none_relevant:
            out.append(f"{self.none_relevant} traces' queries have no chunk graded >= {threshold} ({empty})")
        if self.unjudged_queries:
            out.append(f"{self.unjudged_queries} traces' queries have no judgment at all")
        if self.unjudged_contexts:
            out.append(f"{self.unjudged_contexts} shown contexts are unjudged (count as not relevant)")
        if self.unmatched_texts:
            out.append(
                f"{self.unmatched_texts} contexts are texts of no stored chunk "
                "(id <trace id>#<position>, which no label matches)"
            )
        if self.no_text:
            out.append(f"{self.no_text} contexts or reference chunks have no stored text (written as '')")
        return out


@dataclass
class ReferenceSample:
    """One trace with its query's reference: the chunks graded >= threshold."""

    trace: StoredTrace
    reference: list[str]  # chunk ids, highest grade first, then in label order
    reference_texts: list[str]  # their texts, '' for a chunk stored without text


def reference_samples(
    store: Store, threshold: int, annotator: str | None, aggregate: str, anonymize: bool = False
) -> tuple[Judged, TraceCounts, list[ReferenceSample]]:
    """Every stored trace with its reference chunks and their texts (RAGAS's and
    DeepEval's samples), the grades they come from (people named by pseudonym with
    ``anonymize``), and the counts of what is left out."""
    judged = judged_grades(store, threshold, annotator, aggregate, anonymize)
    traces = stored_traces(store)
    texts = store.chunk_texts(d for t in traces for d in judged.relevant(t.query_id))
    counts = TraceCounts()
    samples = []
    for trace in traces:
        counts.add(trace, judged)
        reference = judged.relevant(trace.query_id)
        counts.no_text += sum(texts.get(doc) is None for doc in reference)
        samples.append(ReferenceSample(trace, reference, [texts.get(doc) or "" for doc in reference]))
    return judged, counts, samples
