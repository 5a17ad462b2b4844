"""The store's own label files: the current labels as golden.yaml or TREC qrels
(one person's, or one grade per item over everyone by ``aggregate``), and
every label row as CSV. Each file is replaced atomically; each function
returns one line saying what was written."""

from __future__ import annotations

import os
from datetime import date
from typing import Any

from annotation.exports.common import (
    NothingToExport,
    PathLike,
    check_annotator,
    current_qrels,
    disagreement_words,
    export_names,
    naming_clause,
    settled_words,
    write_csv,
)
from annotation.exports.judged import judge_grades, judge_title
from annotation.exports.provenance import provenance_of
from annotation.formats.golden import write_golden
from annotation.formats.trec import write_qrels
from annotation.model import ChunkSpan, Evidence, Qrels
from annotation.pooling import sampling_design
from annotation.render import counted
from annotation.rubrics import DEFAULT_MIN_GRADE, RELEVANCE
from annotation.store import Store, StoreError

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


def _written(qrels: Qrels, path: PathLike, aggregate: str | None = None, where: str = "") -> str:
    """The summary's head: what was written, how many items an admin settled, and (``aggregate``:
    several people's grades made one) how many items had disagreeing people, ``where`` they are."""
    settled = qrels.meta.get("settled", 0)
    judgments, queries = qrels.n_judgments, len(qrels.grades)
    disagreement = disagreement_words(qrels.meta, aggregate) if aggregate else ""
    if disagreement and where and qrels.meta.get("disputed"):
        disagreement += f"; {where}"
    return (
        (
            f"wrote {counted(judgments, 'judgment', 'judgments')} over {counted(queries, 'query', 'queries')}"
            f" to {path}"
        )
        + (f"; {settled_words(settled)}" if settled else "")
        + (f"; {disagreement}" if disagreement else "")
    )


def export_qrels(
    store: Store,
    path: PathLike,
    annotator: str | None = None,
    aggregate: str = "median",
    anonymize: bool = False,
    judge: str | None = None,
) -> str:
    """TREC qrels ``qid 0 docid grade`` of the current labels (:func:`annotation.formats.trec.write_qrels`).
    It names no one: ``anonymize`` changes nothing.

    With ``judge`` (a name, its newest version; ``NAME@VERSION``; or a fingerprint or its prefix:
    :func:`annotation.exports.judged.find_judge`): that relevance judge's grades on chunk items
    instead of people's, its repeats of one item made one grade by ``aggregate``; a failed call
    is no grade, left out and counted in the line returned."""
    if judge:
        if annotator:
            raise StoreError("give a judge or an annotator, not both: a qrels file holds one source's grades")
        found = judge_grades(store, judge, aggregate)
        if not found.grades:
            raise NothingToExport(
                f"{judge_title(found.judge)} has no grade on a chunk item"
                + (f" ({found.failures()})" if found.failed else "")
            )
        qrels = Qrels(grades=found.grades)
        write_qrels(qrels, path)
        return (
            _written(qrels, path)
            + f": the grades of {judge_title(found.judge)}, repeats by {aggregate}"
            + (f"; {found.failures()}" if found.failed else "")
        )
    check_annotator(store, annotator)
    qrels = current_qrels(store, annotator, aggregate, "labels")
    write_qrels(qrels, path)
    return _written(
        qrels,
        path,
        None if annotator else aggregate,
        "qrels keeps one grade per item: export golden to see each person's",
    )


# what the labelling pages show a person (DESIGN principle 4): said of the labels made here
MADE_HERE_SHOWN = "query text and chunk text only (blind: no ranks, scores, retriever names or other labels)"
UNKNOWN = "unknown"  # what an import did not say


def export_golden(
    store: Store,
    path: PathLike,
    annotator: str | None = None,
    aggregate: str = "median",
    anonymize: bool = False,
) -> str:
    """golden.yaml of the current labels, with who judged, what they were shown, the grade
    scale and ``min_grade`` (the relevance threshold), as far as the store knows them:

    - ``judged_by``: those whose labels are in the file (current relevance labels: not who
      graded only traces, nor whose labels are all taken back), or what the one file all of
      them were imported from said; with ``anonymize`` their pseudonyms (the imported file's
      names dropped, its path cut to the file's name), here and in ``shown``/``grade_scale``;

    - labels made in this app's labelling pages: what those pages show, the project's scale,
      min_grade 1;
    - imported labels: what their file said (a golden.yaml's ``shown``, ``grade_scale``,
      ``min_grade``), else ``shown: unknown``, each grade's wording ``unknown``, min_grade 1;
      labels that all came from one file keep all it said (name, description, who, when);
    - both, or files that said different things: ``mixed: ...``, each value with the labels it
      is true of (min_grade 1 when they differ, and the summary says so).

    And the sampling design, if the store has one, so an estimate can be reproduced from the
    file (the summary warns of pooled chunks of the sampled queries left unlabelled); and the
    ``provenance`` of its labels (:func:`annotation.exports.provenance.provenance_of`: the pools
    with each run's fingerprint, the other sources, pool's one-run warning, which the summary
    repeats), unless all of them were imported from one file (then what that file said)."""
    check_annotator(store, annotator)
    qrels = current_qrels(store, annotator, aggregate, "labels")
    n = qrels.n_judgments
    names = export_names(store, anonymize)
    origins = [
        {
            **origin,
            "annotator": names(origin["annotator"]),
            # a path may hold a person's name (/home/NAME/...): its file name only
            "source": os.path.basename(origin["source"])
            if anonymize and origin["source"]
            else origin["source"],
            "meta": {k: v for k, v in origin["meta"].items() if not (anonymize and k == "judged_by")},
        }
        for origin in store.label_origins(annotator)
    ]
    meta: dict[str, object] = {  # golden.yaml's header
        "name": "denominator export",
        "description": f"{n} judgments over {len(qrels.grades)} queries; "
        + ("one annotator's labels" if annotator else f"the {aggregate} grade over annotators"),
        "created": date.today().isoformat(),
        "judged_by": names.sorted(origin["annotator"] for origin in origins),
    }
    meta.update(_provenance(origins))
    if len(origins) == 1 and origins[0]["imported"]:  # one file's labels keep all it said of them
        # but not the disputes that file listed: this export's own are in qrels.meta
        meta.update({k: v for k, v in origins[0]["meta"].items() if k != "disputed"})
    judged_by = meta["judged_by"] if isinstance(meta["judged_by"], list) else [str(meta["judged_by"])]
    min_grades = sorted({_min_grade(origin) for origin in origins})
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
    # how the labels were made (the pools, other sources, the one-run warning); labels all from one
    # imported file keep what it said (its own provenance, or none): the file round-trips
    made = (
        None
        if len(origins) == 1 and origins[0]["imported"]
        else provenance_of(store, qrels.grades, annotator)
    )
    if made is not None:
        meta["provenance"] = made.to_dict()
    named = naming_clause(
        names,
        [str(name) for name in judged_by],
        "judged_by" + (" and what shown and grade_scale say of each origin" if _mixed(meta) else ""),
    )
    if anonymize and "disputed" in qrels.meta:  # each person's grade of a disputed item, by pseudonym
        qrels.meta["disputed"] = {
            qid: [{**d, "grades": {names(who): g for who, g in d["grades"].items()}} for d in items]
            for qid, items in qrels.meta["disputed"].items()
        }
    # where each graded chunk comes from, when the corpus gave it (#44): golden.yaml's chunks section
    spans = store.chunk_spans(chunk for docs in qrels.grades.values() for chunk in docs)
    qrels.chunk_spans = {chunk: ChunkSpan(chunk, *span) for chunk, span in sorted(spans.items())}
    ungraded = marked_evidence(store, qrels, annotator)
    write_golden(qrels, path, meta=meta)
    where = "each query lists them under disputed with every person's grade"
    summary = _written(qrels, path, None if annotator else aggregate, where) + (f"; {named}" if named else "")
    summary += _imported_said(origins)
    if len(min_grades) > 1:
        summary += (
            f"; warning: its labels come with min_grade {' and '.join(map(str, min_grades))} "
            f"({DEFAULT_MIN_GRADE} where made here or imported without one); wrote min_grade {meta['min_grade']}"
        )
    if made is not None and made.warning:
        summary += f"; warning: {made.warning} (said in its provenance)"
    if ungraded:
        summary += (
            f"; {counted(ungraded, 'marked chunk', 'marked chunks')} left out of evidence: marked by a person who has no "
            "current grade of that chunk"
        )
    if gaps:
        summary += (
            f"; warning: {gaps} pooled chunks "
            "of the sampled queries have no label in it, so an estimate from it counts them neither judged "
            "nor sampled (label them, or export every annotator's labels)"
        )
    return summary


def marked_evidence(store: Store, qrels: Qrels, annotator: str | None = None) -> int:
    """Add to ``qrels.evidence`` the sentences people marked on *Label chunks* (one person's with
    ``annotator``): each marked span of a document, graded by **the marking person's own current
    grade of that chunk** (not the aggregate), one entry per person and span (two people marking
    one sentence give two entries; nothing is merged). Returns how many marks were left out
    because their person has no current grade of the chunk (marked, then skipped or undone)."""
    grades = {
        (label["item_id"], label["annotator"]): int(label["value"])
        for label in store.current_labels(annotator)
        if label["rubric"] == RELEVANCE.name
    }
    left_out = 0
    for mark in store.current_marks(annotator):
        grade = grades.get((mark["item_id"], mark["annotator"]))
        if grade is None:
            left_out += 1
            continue
        qrels.evidence.setdefault(mark["query_id"], []).extend(
            Evidence(mark["doc"], start, end, grade) for start, end in mark["spans"]
        )
    return left_out


def _mixed(meta: dict[str, Any]) -> bool:
    """Whether shown or a grade's wording says ``mixed: ... by NAME ...`` (names in them)."""
    values = [meta.get("shown"), *meta.get("grade_scale", {}).values()]
    return any(isinstance(value, str) and value.startswith("mixed: ") for value in values)


def _imported_said(origins: list[dict[str, Any]]) -> str:
    """The summary's clause on imported labels: how many, and what their files did not say."""
    imported = [o for o in origins if o["imported"]]
    if not imported:
        return ""
    names = ", ".join(dict.fromkeys(o["annotator"] for o in imported))
    head = f"; {sum(o['labels'] for o in imported)} of {sum(o['labels'] for o in origins)} labels imported ({names})"
    silent = {
        key: sum(o["labels"] for o in imported if key not in o["meta"]) for key in ("shown", "grade_scale")
    }
    unknown = [
        text
        for key, text in (
            ("shown", f"what {silent['shown']} of them were shown (shown)"),
            ("grade_scale", f"what the grades of {silent['grade_scale']} mean (grade_scale)"),
        )
        if silent[key]
    ]
    if not unknown:
        return head + ": shown and grade_scale as their files said"
    return head + "; unknown, as their files did not say: " + ", ".join(unknown)


def _said(origin: dict[str, Any]) -> str:
    """Where some current labels came from, in words."""
    labels = f"{origin['labels']} label{'' if origin['labels'] == 1 else 's'} by {origin['annotator']}"
    if not origin["imported"]:
        return f"{labels} made in this app"
    source = f" from {origin['source']}" if origin["source"] else ""
    return f"{labels} imported{source}"


def _min_grade(origin: dict[str, Any]) -> int:
    return (
        int(origin["meta"].get("min_grade", DEFAULT_MIN_GRADE)) if origin["imported"] else DEFAULT_MIN_GRADE
    )


def _provenance(origins: list[dict[str, Any]]) -> dict[str, Any]:
    """``shown``, ``grade_scale`` and ``min_grade`` of the labels of ``origins``
    (:meth:`Store.label_origins`): each value as every origin says it, else ``mixed: ...``."""
    shown: list[tuple[str, str]] = []
    scales: list[tuple[dict[int, str], str]] = []
    for origin in origins:
        said = _said(origin)
        if origin["imported"]:
            shown.append((origin["meta"].get("shown", UNKNOWN), said))
            scale = origin["meta"].get("grade_scale") or dict.fromkeys(RELEVANCE.scale, UNKNOWN)
        else:
            shown.append((MADE_HERE_SHOWN, said))
            scale = dict(RELEVANCE.scale)
        scales.append((scale, said))
    grades = sorted({grade for scale, _ in scales for grade in scale})
    min_grades = {_min_grade(origin) for origin in origins}
    return {
        "shown": _combined(shown),
        "grade_scale": {
            grade: _combined([(scale.get(grade, UNKNOWN), said) for scale, said in scales])
            for grade in grades
        },
        "min_grade": min_grades.pop() if len(min_grades) == 1 else DEFAULT_MIN_GRADE,
    }


def _combined(values: list[tuple[str, str]]) -> str:
    """One value said of several origins' labels: the value when all say it, else
    ``mixed: A for <origins>; B for <origins>``."""
    distinct = list(dict.fromkeys(value for value, _ in values))
    if len(distinct) == 1:
        return distinct[0]
    return "mixed: " + "; ".join(
        f"{value} for " + " and ".join(said for v, said in values if v == value) for value in distinct
    )


_ANNOTATOR = CSV_COLUMNS.index("annotator")


def export_csv(store: Store, path: PathLike, annotator: str | None = None, anonymize: bool = False) -> str:
    """Every label row, one person's or everyone's, retractions included (value
    empty), in row order: :data:`CSV_COLUMNS` (:meth:`Store.label_history`); the annotator
    column a pseudonym with ``anonymize`` (notes are written as typed). Spreadsheet-safe:
    a text cell that would start a formula begins with ``'`` (:func:`spreadsheet_safe`)."""
    check_annotator(store, annotator)
    names = export_names(store, anonymize)
    rows = [
        (*row[:_ANNOTATOR], names(row[_ANNOTATOR]), *row[_ANNOTATOR + 1 :])
        for row in store.label_history(annotator)
    ]
    write_csv(path, CSV_COLUMNS, rows)
    named = naming_clause(
        names, names.sorted(row[_ANNOTATOR] for row in rows), "the annotator column", "notes"
    )
    return f"wrote {len(rows)} label rows (retractions included, value empty) to {path}" + (
        f"; {named}" if named else ""
    )
