"""The store's own label files: the current labels as golden.yaml or TREC qrels
(one person's, or one grade per item over everyone by ``aggregate``), and
every label row as CSV. Each file is replaced atomically; each function
returns one line saying what was written."""

from __future__ import annotations

from datetime import date

from annotation.exports.common import PathLike, check_annotator, current_qrels, write_csv
from annotation.formats import Qrels, write_golden, write_qrels
from annotation.pooling import sampling_design
from annotation.rubrics import RELEVANCE
from annotation.store import Store

__all__ = ["CSV_COLUMNS", "export_golden", "export_qrels", "export_csv"]

CSV_COLUMNS = [
    "label_id",
    "item_id",
    "kind",
    "query_id",
    "chunk_id",
    "trace_id",
    "trace_b_id",
    "annotator",
    "rubric",
    "value",
    "note",
    "seconds",
    "shown",
    "created_at",
]


def _written(qrels: Qrels, path: PathLike) -> str:
    return f"wrote {qrels.n_judgments} judgments over {len(qrels.grades)} queries to {path}"


def export_qrels(
    store: Store, path: PathLike, annotator: str | None = None, aggregate: str = "median"
) -> str:
    """TREC qrels ``qid 0 docid grade`` of the current labels (:func:`annotation.formats.write_qrels`)."""
    check_annotator(store, annotator)
    qrels = current_qrels(store, annotator, aggregate, "labels")
    write_qrels(qrels, path)
    return _written(qrels, path)


def export_golden(
    store: Store, path: PathLike, annotator: str | None = None, aggregate: str = "median"
) -> str:
    """golden.yaml of the current labels, with who judged, what they were shown and the
    grade scale; one person's labels imported from a golden.yaml keep what that file said
    of them; the sampling design, if the store has one, so an estimate can be reproduced
    from the file (the summary warns of pooled chunks of the sampled queries left unlabelled)."""
    check_annotator(store, annotator)
    qrels = current_qrels(store, annotator, aggregate, "labels")
    n = qrels.n_judgments
    imported_meta = store.label_set_meta(annotator) if annotator else {}
    who = [annotator] if annotator else store.annotators_with_labels()
    meta = {
        "name": "denominator export",
        "description": f"{n} judgments over {len(qrels.grades)} queries; "
        + ("one annotator's labels" if annotator else f"the {aggregate} grade over annotators"),
        "created": date.today().isoformat(),
        "judged_by": who,
        "shown": "query text and chunk text only (blind: no ranks, scores, retriever names or other labels)",
        "grade_scale": dict(RELEVANCE.scale),
    }
    # one person's labels that came from a golden.yaml keep what that file said of them
    meta.update(imported_meta)
    design = sampling_design(store)
    gaps = 0
    if design:  # the estimate of what the labels missed can be reproduced from the file
        meta["sampling"] = design
        sampled = {
            (q, c) for q, strata in design["queries"].items() for e in strata.values() for c in e["sampled"]
        }
        gaps = sum(  # pooled chunks of the sampled queries without a label in this file
            1
            for _, q, c in store.chunk_items()
            if q in design["queries"] and (q, c) not in sampled and c not in qrels.grades.get(q, {})
        )
    write_golden(qrels, path, meta=meta)
    if gaps:
        return (
            f"{_written(qrels, path)}; warning: {gaps} pooled chunks "
            "of the sampled queries have no label in it, so an estimate from it counts them neither judged "
            "nor sampled (label them, or export every annotator's labels)"
        )
    return _written(qrels, path)


def export_csv(store: Store, path: PathLike, annotator: str | None = None) -> str:
    """Every label row, one person's or everyone's, retractions included (value
    empty), in row order: :data:`CSV_COLUMNS` (:meth:`Store.label_history`)."""
    check_annotator(store, annotator)
    rows = store.label_history(annotator)
    write_csv(path, CSV_COLUMNS, rows)
    return f"wrote {len(rows)} label rows (retractions included, value empty) to {path}"
