"""The store's relevance grades as Arize Phoenix document annotations (JSONL,
or CSV by the ``.csv`` extension): people's grades, or a relevance judge's."""

from __future__ import annotations

import re

from annotation.exports.common import (
    Judged,
    NothingToExport,
    PathLike,
    check_args,
    jsonl_record,
    judged_grades,
    naming_clause,
    write_csv,
)
from annotation.exports.judged import judge_grades
from annotation.exports.stored_traces import StoredTrace, stored_traces
from annotation.formats.atomic import write_atomic
from annotation.rubrics import RELEVANCE
from annotation.store import Store, StoreError

__all__ = ["PHOENIX_COLUMNS", "PHOENIX_LABELS", "export_phoenix"]

# the columns of Phoenix's document-annotation dataframe
# (Client().spans.log_document_annotations_dataframe); JSONL adds "metadata"
PHOENIX_COLUMNS = ("span_id", "document_position", "name", "annotator_kind", "label", "score", "explanation")
PHOENIX_LABELS = ("relevant", "unrelated")  # the rails of Phoenix's own relevance evaluator
_SPAN_ID = re.compile(r"[0-9a-f]{16}")  # an OpenTelemetry span id: 8 bytes, lower-case hex


def _judge_grades(store: Store, spec: str, aggregate: str) -> tuple[dict[str, dict[str, int]], str, str]:
    """A relevance judge's current grades per (query, chunk) (repeats aggregated;
    :func:`annotation.exports.judged.judge_grades`), Phoenix's annotator kind for it, and its
    description."""
    found = judge_grades(store, spec, aggregate)
    judge = found.judge
    # the offline judge is a fitted scikit-learn model, not a language model
    kind = "CODE" if judge["kind"] == "lexical" else "LLM"
    return found.grades, kind, f"judge {judge['fingerprint'][:12]} ({judge['kind']}, {judge['model']})"


def _span_id(trace: StoredTrace) -> tuple[str, str]:
    """(span id, where it came from): the trace's metadata, else its id."""
    for key in ("retriever_span_id", "span_id", "context.span_id"):
        value = trace.meta.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip(), "metadata"
    return trace.id, "id"


def export_phoenix(
    store: Store,
    path: PathLike,
    threshold: int = 1,
    annotator: str | None = None,
    aggregate: str = "median",
    judge: str | None = None,
    binary_score: bool = False,
    anonymize: bool = False,
) -> str:
    """Arize Phoenix document annotations: one row per judged (retriever span,
    document position) of every stored trace, as JSONL (``.csv``: CSV).

    Columns: ``span_id``, ``document_position`` (0-based), ``name``
    ("relevance"), ``annotator_kind`` ("HUMAN" for people; with
    ``judge=<fingerprint or its prefix>`` a relevance judge's grades instead,
    "LLM" for an LLM judge, "CODE" for the offline lexical judge), ``label``
    ("relevant" if the grade >= threshold, else "unrelated", the rails of
    Phoenix's own relevance evaluator), ``score`` (the grade 0-3; 1.0/0.0 by
    the threshold with ``binary_score=True``),
    ``explanation`` (the grade's wording, the threshold, who graded) and, in
    JSONL only, ``metadata`` (grade, threshold, who, trace, query and chunk
    ids). Load with::

        df = pandas.read_json(path, lines=True, dtype={"span_id": str})
        phoenix.client.Client().spans.log_document_annotations_dataframe(dataframe=df)
        # or, the legacy client:
        px.Client().log_evaluations(DocumentEvaluations(eval_name="relevance",
                dataframe=df.set_index(["span_id", "document_position"])[["label", "score", "explanation"]]))

    Assumption (the OpenInference trace import is being written): a trace's
    span id is its metadata's ``retriever_span_id`` (or ``span_id``) where the
    traces table has a metadata column, else the trace's own id, and its
    contexts are the retriever span's documents in document order. An
    unjudged document gets no row: Phoenix scores that position NaN, so the
    span's nDCG and precision are undefined, not a miss. Phoenix keeps one annotation per (name, span,
    position), so people's grades are one per document: one annotator's, or
    the ``aggregate`` over everyone's. People are named in ``metadata.judged_by`` and the
    explanation: by pseudonym with ``anonymize``.
    """
    check_args(store, threshold, annotator, aggregate)
    if judge and annotator:
        raise StoreError("give a judge or an annotator, not both: a row holds one annotator kind's grade")
    if judge:
        grades, kind, source = _judge_grades(store, judge, aggregate)
        judged = Judged(grades, {}, [source], threshold, None, aggregate)
        if not grades:
            raise NothingToExport(f"{source} has no relevance grade of a (query, chunk) to export")
    else:
        judged = judged_grades(store, threshold, annotator, aggregate, anonymize)
        kind = "HUMAN"
    traces = stored_traces(store)
    rows = []
    from_meta = not_span_ids = unjudged = 0
    spans_with_rows = set()
    named: set[str] = set()  # the people the rows name
    for trace in traces:
        span_id, origin = _span_id(trace)
        from_meta += origin == "metadata"
        not_span_ids += not _SPAN_ID.fullmatch(span_id)
        for position, context in enumerate(trace.contexts):
            grade = judged.grade(trace.query_id, context.chunk_id)
            if grade is None or context.chunk_id is None:  # a text matching no stored chunk has no grade
                unjudged += 1
                continue
            relevant = grade >= threshold
            pair = (trace.query_id, context.chunk_id)
            who = source if judge else judged.source(pair)
            if not judge:
                named.update(judged.names.get(pair, []))
            explanation = (
                f"grade {grade} of 0-3 ({RELEVANCE.scale[grade]}); "
                f"relevant means grade >= {threshold}; by {who}"
            )
            metadata = {
                "grade": grade,
                "relevance_threshold": threshold,
                "judged_by": [source] if judge else judged.names.get(pair, []),
                "aggregate": None if (annotator and not judge) else aggregate,
                "trace_id": trace.id,
                "query_id": trace.query_id,
                "chunk_id": context.chunk_id,
            }
            rows.append(
                {
                    "span_id": span_id,
                    "document_position": position,
                    "name": "relevance",
                    "annotator_kind": kind,
                    "label": PHOENIX_LABELS[0] if relevant else PHOENIX_LABELS[1],
                    "score": (1.0 if relevant else 0.0) if binary_score else float(grade),
                    "explanation": explanation,
                    "metadata": metadata,
                }
            )
            spans_with_rows.add(span_id)
    if not rows:
        raise NothingToExport("no shown context of any trace is judged; Phoenix would get no annotation")
    as_csv = str(path).lower().endswith(".csv")
    if as_csv:
        write_csv(path, PHOENIX_COLUMNS, [[row[c] for c in PHOENIX_COLUMNS] for row in rows])
    else:
        write_atomic(path, "".join(jsonl_record(row) for row in rows))
    from_id = len(traces) - from_meta
    score_words = (
        f"score 1/0 by threshold {threshold} (grades are in metadata only"
        + (")" if not as_csv else ", which CSV leaves out)")
        if binary_score
        else "score = grade 0-3 (Phoenix's precision, hit and reciprocal rank count any score > 0 as relevant"
        + ("" if threshold == 1 else f", not >= {threshold}: use binary_score for that")
        + ")"
    )
    parts = [
        f"wrote {len(rows)} Phoenix document annotations ({kind}, name 'relevance', "
        f"label relevant if grade >= {threshold}, {score_words}) for {len(spans_with_rows)} spans "
        f"of {len(traces)} traces to {path}, "
        f"from {judged.source() if not judge else source}",
        f"span ids: {from_meta} from trace metadata, {from_id} assumed to be the trace id (the OpenInference "
        "import keeps the retriever span id and the documents' order)",
    ]
    if not_span_ids:
        parts.append(
            f"{not_span_ids} traces' span ids are not 16-hex OpenTelemetry span ids: Phoenix will not find "
            "those spans"
        )
    if unjudged:
        parts.append(
            f"{unjudged} shown documents unjudged, no row (Phoenix scores a position without one NaN: "
            "nDCG and precision of those spans are undefined)"
        )
    if as_csv:
        parts.append(
            "CSV has no metadata column (Phoenix's loader needs a dict there): the explanation says "
            "the threshold and who graded"
        )
    if judge:
        parts.append(f"the judge's grades only, its repeats aggregated by {aggregate}")
    elif annotator:
        parts.append(f"{judged.annotator}'s grades only")
    else:
        parts.append(
            "Phoenix keeps one annotation per (name, span, position): individual people's grades are not kept"
        )
    clause = naming_clause(
        judged.naming,
        judged.naming.sorted(named),
        "the explanation" if as_csv else "metadata.judged_by and the explanation",
    )
    return "; ".join(parts + ([clause] if clause else []))
