"""Holes, ``--judge-labels`` and ``compare`` read a run's top k from the sort the metrics share
(issue #42, item 1): :func:`calibration.metrics.top_ranked` against ``Run.rankings()``, the
reference path; the judged rows found by (query, id) keys, exact under any collision; a run
scored twice with other judgments sorted once and scored as a fresh one."""

from __future__ import annotations

import random

import numpy as np
import pyarrow as pa
import pytest

import calibration.metrics as metrics
from annotation.model import Qrels, Run
from calibration.holes.scoring import find_holes, holes_of
from calibration.metrics import evaluate, top_ranked

QUERIES = ["q1", "q2", "Ω", "a", "b10", "b2", "é"]
DOCS = [
    "d1",
    "d2",
    "D3",
    "é",
    "ä",
    "z",
    "d10",
    "a-much-longer-document-id-0001",
    "a-much-longer-document-id-0002",
]


def random_run(rng: random.Random, grouped: bool) -> Run:
    rows = []
    for qid in rng.sample(QUERIES, rng.randint(1, 5)):
        rows += [(qid, rng.choice(DOCS), float(rng.randint(0, 3))) for _ in range(rng.randint(1, 25))]
    if not grouped:
        rng.shuffle(rows)
    q, d, s = zip(*rows)
    empty = ["nothing"] if rng.random() < 0.3 else []
    return Run(table=pa.table({"q": list(q), "d": list(d), "s": list(s)}), empty_queries=empty)


def random_qrels(rng: random.Random) -> Qrels:
    grades = {
        qid: {doc: rng.randint(0, 3) for doc in rng.sample(DOCS, rng.randint(1, 6))}
        for qid in rng.sample(QUERIES, rng.randint(1, 6))
    }
    return Qrels(grades=grades)


@pytest.mark.parametrize("grouped", [True, False], ids=["grouped", "shuffled"])
def test_top_ranked_is_the_reference_cut(grouped: bool) -> None:
    rng = random.Random(42 if grouped else 7)
    for _ in range(150):
        run = random_run(rng, grouped)
        for depth in (1, 3, 10, 100):
            expected = {qid: ranking[:depth] for qid, ranking in run.rankings().items()}
            assert top_ranked(run, depth) == expected


def test_ranked_queries_are_the_runs() -> None:
    rng = random.Random(9)
    for _ in range(60):
        run = random_run(rng, rng.random() < 0.5)
        queries = metrics.ranked_queries(run)
        assert len(queries) == len(set(queries)) and set(queries) == run.query_ids()
    assert metrics.ranked_queries(Run.from_rankings({"q": ["a"], "r": []})) == ["q", "r"]


def test_top_ranked_keeps_a_repeat_in_its_slot() -> None:
    run = Run.from_rankings({"q": ["a", "b", "a", "c"], "r": []})
    assert top_ranked(run, 3) == {"q": ["a", "b", "a"], "r": []}


def values(evaluation: metrics.Evaluation) -> dict[str, list[float]]:
    return {name: np.nan_to_num(column, nan=-1.0).tolist() for name, column in evaluation.values.items()}


def test_judged_rows_are_exact_when_every_key_collides(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every (query, id) gets the same key: each candidate is compared by query and id, so the
    figures are those of distinct keys."""
    rng = random.Random(3)
    cases = [(random_run(rng, bool(i % 2)), random_qrels(rng)) for i in range(60)]
    expected = [values(evaluate(qrels, run, ks=[1, 5], min_grade=1)) for run, qrels in cases]
    monkeypatch.setattr(metrics, "_duplicate_keys", lambda docs, qi: np.zeros(len(docs), dtype=np.uint32))
    for (run, qrels), want in zip(cases, expected):
        fresh = Run(table=run.table, empty_queries=run.empty_queries)
        assert values(evaluate(qrels, fresh, ks=[1, 5], min_grade=1)) == want


def test_a_run_scored_twice_is_sorted_once_and_scored_as_new() -> None:
    rng = random.Random(11)
    for _ in range(60):
        run = random_run(rng, rng.random() < 0.5)
        first, second = random_qrels(rng), random_qrels(rng)
        evaluate(first, run, ks=[3], min_grade=1)
        memo = run.memo["trec_order"]
        again = evaluate(second, run, ks=[3], min_grade=1)
        assert run.memo["trec_order"] is memo
        fresh = evaluate(second, Run(table=run.table, empty_queries=run.empty_queries), ks=[3], min_grade=1)
        assert values(again) == values(fresh)
        assert again.duplicates == fresh.duplicates and again.num_ret.tolist() == fresh.num_ret.tolist()


def test_holes_equal_the_reference_path() -> None:
    rng = random.Random(5)
    for _ in range(80):
        run, qrels = random_run(rng, rng.random() < 0.5), random_qrels(rng)
        for k in (1, 4, 10):
            assert find_holes(qrels, run, k) == holes_of(qrels.grades, run.rankings(), k)


def test_a_run_finds_its_judged_rows_once_per_judgments() -> None:
    """The judged rows of one set of judgments are kept beside the run's sort, read-only: every
    cutoff asked after the first reads them; other judgments (a new table) find their own."""
    rng = random.Random(13)
    for _ in range(40):
        run, qrels, other = random_run(rng, rng.random() < 0.5), random_qrels(rng), random_qrels(rng)
        for k in (1, 4, 10):
            assert find_holes(qrels, run, k) == holes_of(qrels.grades, run.rankings(), k)
        ordered = run.memo["trec_order"]
        assert [table for table, _ in ordered.judged] == [qrels.to_table()]
        assert not ordered.judged[0][1].flags.writeable
        fresh = Run(table=run.table, empty_queries=run.empty_queries)
        assert values(evaluate(other, run, ks=[3], min_grade=1)) == values(
            evaluate(other, fresh, ks=[3], min_grade=1)
        )
        assert len(ordered.judged) == 2


def test_grades_added_score_as_the_summed_judgments() -> None:
    """:func:`calibration.metrics.with_grades`: a run scored with grades added to a set it has
    scored (the judge's on the holes, some queries only, a changed grade, ids outside the top k,
    repeats) reads as the summed dicts scored on a fresh run, the positional counts too."""
    rng = random.Random(17)
    for _ in range(120):
        run, qrels = random_run(rng, rng.random() < 0.5), random_qrels(rng)
        depth = rng.choice([1, 3, 10])
        evaluate(qrels, run, ks=[depth], min_grade=1)  # the base's rows found first, as the holes do
        ranked = run.rankings()
        qids = sorted(set(ranked) & set(qrels.grades))
        qids = rng.sample(qids, rng.randint(0, len(qids)))
        extra: dict[str, dict[str, int]] = {}
        for qid in qids:
            pool = ranked[qid][:depth] if rng.random() < 0.8 else DOCS  # now and then beyond the top
            unjudged = [d for d in pool if d not in qrels.grades[qid]]
            picked = rng.sample(unjudged, rng.randint(0, len(set(unjudged)))) if unjudged else []
            if rng.random() < 0.1:  # now and then a grade changed: not a sum
                picked += list(qrels.grades[qid])[:1]
            extra[qid] = {doc: rng.randint(0, 3) for doc in picked}
        summed = metrics.with_grades(run, qrels, extra, qids, depth=depth)
        want = {q: {**qrels.grades.get(q, {}), **extra.get(q, {})} for q in qids}
        assert summed.grades == want
        fresh = Run(table=run.table, empty_queries=run.empty_queries)
        for k in ([depth], [1, 5]):
            got = evaluate(summed, run, ks=k, min_grade=1, with_positional=True)
            expected = evaluate(Qrels(grades=want), fresh, ks=k, min_grade=1, with_positional=True)
            assert values(got) == values(expected) and got.qids == expected.qids
            assert {n: c.tolist() for n, c in got.counts.items()} == {
                n: c.tolist() for n, c in expected.counts.items()
            }
