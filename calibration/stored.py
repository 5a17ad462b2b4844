"""A run already in the store, scored against a label set of the store: the one workflow that
``python -m calibration metrics|audit --stored-run NAME`` and the Metrics page's "the store"
source both call, so the two faces answer the same.

A label set is named by a short spec, the same on both faces:

- ``median``, ``majority``, ``mean``: everyone's current human labels, one grade per
  (query, chunk) by that aggregate (``Store.export_qrels``, as the exports give them);
- ``annotator:NAME``: one person's current labels;
- ``judge:NAME``: the relevance grades of judge NAME's current version (its newest answer per
  item, first repeat; errors left out).

The corpus for label coverage is the store's chunks (every chunk id it knows). The store is
passed in (:class:`annotation.store.Store`); no SQL here.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING

from annotation.hole_sample import HoleSample
from annotation.model import Qrels, Run
from annotation.store import AGGREGATES
from calibration.errors import InvalidInput, NothingToEvaluate

if TYPE_CHECKING:
    from annotation.store import Store

DEFAULT_LABELS = "median"


@dataclass
class StoredData:
    """A stored run and a stored label set, as the metrics and the audit take them."""

    qrels: Qrels
    run: Run
    corpus_ids: set[str]  # the store's chunks: what label coverage divides by
    run_name: str  # ``run 'retriever' of the store demo.db``
    labels_name: str  # ``the median of everyone's current labels (cat, dan)``


def stored_label_sets(store: Store) -> dict[str, str]:
    """spec -> what it holds in words, for every label set the store can give (a judge only when
    it graded relevance): the aggregates first, then each annotator, then each judge."""
    people = store.annotators_with_labels()
    sets = {
        method: f"everyone's current labels, the {method} per chunk ({', '.join(people) or 'nobody yet'})"
        for method in AGGREGATES
    }
    sets |= {f"annotator:{name}": f"{name}'s current labels" for name in people}
    judges = [j for j in store.judges() if j["rubric"] == "relevance" and j["current"] and j["labels"]]
    if not judges:
        return sets
    # start-up: the review's statistics, only when the store holds a judge's grades
    from calibration.readings import current_readings, reading_mark

    readings = current_readings(store)  # one reading per judge, as review and check give it (#40)
    for judge in judges:
        reading = readings.get(judge["fingerprint"])
        sets[f"judge:{judge['name']}"] = (
            f"judge {judge['name']} v{judge['version']} ({judge['model'] or judge['kind']}): "
            f"its {judge['labels']} grades; "
            + (f"agreement with people: {reading_mark(reading)}" if reading else "not read against people")
        )
    return sets


def stored_runs(store: Store) -> list[str]:
    """The names of the stored runs, in import order."""
    return [name for _run_id, name in store.stored_runs()]


def stored_qrels(store: Store, labels: str = DEFAULT_LABELS) -> tuple[Qrels, str]:
    """The label set ``labels`` (a spec, see the module) and its name in words."""
    sets = stored_label_sets(store)
    if labels not in sets:
        raise InvalidInput(
            f"no label set {labels!r} in the store {store.path}; expected one of {', '.join(sets)}"
        )
    kind, _, who = labels.partition(":")
    if kind == "judge":
        judge = next(j for j in store.judges() if j["name"] == who and j["current"])
        items = {item: (qid, chunk) for item, qid, chunk in store.chunk_items()}
        grades: dict[str, dict[str, int]] = {}
        for row in store.judge_values(judge["fingerprint"]):
            if row["item_id"] in items and (row["repeat"] or 0) == 0:
                qid, chunk = items[row["item_id"]]
                grades.setdefault(qid, {})[chunk] = int(row["value"])
        qrels = Qrels(grades=grades, path=store.path)
    else:
        qrels = store.export_qrels(who or None, kind if kind in AGGREGATES else DEFAULT_LABELS)
    if not qrels.grades:
        raise NothingToEvaluate(f"the store {store.path} holds no {sets[labels]}: nothing to score")
    return qrels, sets[labels]


def stored_hole_sample(store: Store, sample: HoleSample) -> HoleSample:
    """``sample`` with people's grades on its holes read from ``store`` (issue #43, item 4): the
    median of everyone's current labels on each hole (``Store.export_qrels``, as the exports give
    them), the file's own grades winning where both grade a hole, and in ``graded_by`` the people
    with a current label on one. What the Metrics page's corrected figure and ``metrics|compare|
    check --hole-sample FILE --db DB`` read, so the two say the same. GOLDEN is left as it is: an
    export of the store as GOLDEN holds every label of the store, not only the sample's, and so
    other holes and other figures. :class:`InvalidInput` when the sample has holes and none of
    them is an item of the store (another store, or a sample never queued)."""
    # start-up: the review's labels (the store's, per item), only for a sample read from a store
    from calibration.review_sample import human_labels

    pairs = {(qid, chunk) for qid, holes in sample.holes.items() for chunk in holes}
    items = {int(item) for item, qid, chunk in store.chunk_items() if (qid, chunk) in pairs}
    if pairs and not items:
        raise InvalidInput(
            f"{sample.path}: none of its {len(pairs)} holes is an item of the store {store.path} "
            "(another store, or the sample was never queued: python -m annotation pool --holes FILE --db DB)"
        )
    people = store.export_qrels(None, DEFAULT_LABELS).grades
    grades = {
        qid: {
            **{d: g for d, g in people.get(qid, {}).items() if d in holes},
            **sample.grades.get(qid, {}),
        }
        for qid, holes in sample.holes.items()
    }
    labellers = {who for item, by in human_labels(store, "relevance").items() if item in items for who in by}
    who = tuple(sorted(set(sample.graded_by) | labellers)) if labellers else sample.graded_by
    return dataclasses.replace(sample, grades={q: g for q, g in grades.items() if g}, graded_by=who)


def stored_run(store: Store, name: str) -> Run:
    """The stored run ``name``, its rankings in their stored order (rank 1 first)."""
    known = dict((run_name, run_id) for run_id, run_name in store.stored_runs())
    if name not in known:
        raise InvalidInput(
            f"no run named {name!r} in the store {store.path}; stored runs: "
            + (", ".join(known) or "none (python -m annotation import --run FILE adds one)")
        )
    ranked: dict[str, list[tuple[int, str]]] = {}
    for qid, rank, chunk, _score in store.run_rankings(known[name]):
        ranked.setdefault(qid, []).append((rank, chunk))
    # the stored rank is trec_eval's order at import; Run.from_rankings keeps it (scores n..1)
    return Run.from_rankings({qid: [c for _, c in sorted(rows)] for qid, rows in ranked.items()}, name=name)


def stored_data(store: Store, run: str, labels: str = DEFAULT_LABELS) -> StoredData:
    """The stored run ``run`` and the label set ``labels``, with the store's chunks as corpus."""
    qrels, labels_name = stored_qrels(store, labels)
    return StoredData(
        qrels=qrels,
        run=stored_run(store, run),
        corpus_ids=set(store.chunk_ids()),
        run_name=f"run {run!r} of the store {store.path}",
        labels_name=labels_name,
    )
