"""The stored traces with their reference chunks, for RAGAS and DeepEval: one
sample (golden) per trace, in import order, the reference being the query's
chunks graded >= threshold (:func:`~annotation.exports.stored_traces.reference_samples`)."""

from __future__ import annotations

import json

from annotation.exports.common import PathLike, jsonl_record, naming_clause
from annotation.exports.stored_traces import reference_samples
from annotation.formats.atomic import write_atomic
from annotation.store import Store

__all__ = ["export_ragas", "export_deepeval"]


def export_ragas(
    store: Store,
    path: PathLike,
    threshold: int = 1,
    annotator: str | None = None,
    aggregate: str = "median",
    anonymize: bool = False,
) -> str:
    """RAGAS single-turn samples, JSONL, one per stored trace, in import order.

    Each line is a ``ragas.SingleTurnSample`` (load with
    ``ragas.EvaluationDataset.from_jsonl(path)``): ``user_input`` (the
    question), ``retrieved_contexts`` (texts of the contexts shown, in order)
    and ``retrieved_context_ids`` (their chunk ids), ``response`` (the
    answer), ``reference_context_ids`` (the query's chunks graded >=
    threshold, highest grade first) and ``reference_contexts`` (their texts).
    Lists are JSON lists. A query with no chunk graded >= threshold gets
    empty reference lists: RAGAS's ID-based context recall is then NaN
    (undefined), never 0. RAGAS samples have no metadata field: the grades,
    the threshold and who labelled are only in the returned summary line (by pseudonym with
    ``anonymize``).
    """
    judged, counts, samples = reference_samples(store, threshold, annotator, aggregate, anonymize)
    lines = []
    for sample in samples:
        trace = sample.trace
        record = {
            "user_input": trace.question,
            "retrieved_contexts": [c.text or "" for c in trace.contexts],
            "retrieved_context_ids": [c.id for c in trace.contexts],
            "response": trace.answer,
            "reference_context_ids": sample.reference,
            "reference_contexts": sample.reference_texts,
        }
        lines.append(jsonl_record(record))
    write_atomic(path, "".join(lines))
    t = threshold
    parts = [
        f"wrote {counts.traces} RAGAS single-turn samples (one per trace) to {path}, "
        f"relevance from {judged.source()}, threshold {t}",
        f"RAGAS has no graded relevance: only the {len(counts.relevant)} chunks graded >= {t} are listed "
        f"as reference context ids, the {len(counts.below)} judged below {t} and every grade are left out",
        *counts.clauses(t, "empty reference ids: RAGAS's ID-based recall is NaN, undefined"),
        "the threshold and who labelled are not in the file (a RAGAS sample has no metadata field)",
    ]
    return "; ".join(parts)


def export_deepeval(
    store: Store,
    path: PathLike,
    threshold: int = 1,
    annotator: str | None = None,
    aggregate: str = "median",
    anonymize: bool = False,
) -> str:
    """DeepEval goldens, one JSON list, one golden per stored trace.

    Load with ``deepeval.dataset.EvaluationDataset().add_goldens_from_json_file(path)``
    (JSON only: DeepEval's CSV joins list cells with a pipe, which a chunk's
    text may hold). Each golden: ``name`` (the trace id), ``input`` (the
    question), ``actual_output`` (the answer), ``retrieval_context`` (texts of
    the contexts shown, in order), ``context`` (texts of the query's chunks
    graded >= threshold, highest grade first; ``[]`` when it has judged
    chunks but none that high, ``null`` when nothing of it is judged) and
    ``additional_metadata``: trace, query and system ids, the chunk ids and
    grades of both lists (``null`` = unjudged), the threshold, who labelled,
    the aggregate and the grade scale. No ``expected_output``: the store holds
    no reference answers. ``anonymize``: who labelled by pseudonym.
    """
    judged, counts, samples = reference_samples(store, threshold, annotator, aggregate, anonymize)
    goldens = []
    named: set[str] = set()
    for sample in samples:
        trace, reference = sample.trace, sample.reference
        qid = trace.query_id
        judged_here = bool(judged.grades.get(qid))
        pairs = [(qid, c.chunk_id) for c in trace.contexts if c.chunk_id] + [(qid, d) for d in reference]
        who = judged.naming.sorted(name for pair in pairs for name in judged.names.get(pair, []))
        named.update(who)
        metadata = {
            "trace_id": trace.id,
            "query_id": qid,
            "system": trace.system,
            "retrieval_context_ids": [c.id for c in trace.contexts],
            "retrieval_context_grades": [judged.grade(qid, c.chunk_id) for c in trace.contexts],
            "context_ids": reference if judged_here else None,
            "context_grades": [judged.grades[qid][d] for d in reference] if judged_here else None,
            **judged.meta(),
            "judged_by": who,
        }
        goldens.append(
            {
                "name": trace.id,
                "input": trace.question,
                "actual_output": trace.answer,
                "retrieval_context": [c.text or "" for c in trace.contexts],
                "context": sample.reference_texts if judged_here else None,
                "additional_metadata": metadata,
            }
        )
    write_atomic(path, json.dumps(goldens, ensure_ascii=False, indent=2) + "\n")
    t = threshold
    parts = [
        f"wrote {counts.traces} DeepEval goldens (one per trace) to {path}, relevance from "
        f"{judged.source()}, threshold {t}",
        f"DeepEval has no graded relevance or context ids: context holds the texts of the "
        f"{len(counts.relevant)} chunks graded >= {t}; grades, ids, threshold and annotators are only in "
        "additional_metadata, which its metrics do not read",
        *counts.clauses(t, "context []"),
        "no expected_output (the store holds no reference answers)",
    ]
    clause = naming_clause(judged.naming, judged.naming.sorted(named), "additional_metadata.judged_by")
    return "; ".join(parts + ([clause] if clause else []))
