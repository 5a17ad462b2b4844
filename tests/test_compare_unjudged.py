"""Issue #40 item 10: ``compare`` says how much of a difference sits on chunks nobody judged.

The case of the issue, by hand: six queries; on three of them run A's fifth chunk is judged
relevant where run B's is a chunk nobody judged, which the truth says is relevant (grade 1, like
A's). Against the labels B reads 0.1 worse at P@5; against the truth the runs are equal (+0.000
on every measure). ``compare`` names the 3 unjudged chunks in B's top 5 (A: 0) as the source of
the difference and gives the interval of B - A as they are relevant or not: it holds 0.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from calibration.__main__ import main
from tests.conftest import EXAMPLE

QUERIES = ["q1", "q2", "q3", "q4", "q5", "q6"]
SWAPPED = {"q1", "q2", "q3"}  # B's fifth chunk is unjudged here (truly relevant)


def write_case(folder: Path) -> dict[str, Path]:
    """golden.qrels (people's labels), truth.qrels (the labels plus the 3 unjudged chunks),
    judge.qrels (a judge's grades on the holes: the 3 relevant), a.jsonl and b.jsonl."""
    golden, truth, judge, run_a, run_b = [], [], [], [], []
    for q in QUERIES:
        grades = {f"{q}-top": 2, f"{q}-n1": 0, f"{q}-n2": 0, f"{q}-n3": 0, f"{q}-rel": 1}
        golden += [f"{q} 0 {d} {g}" for d, g in grades.items()]
        truth += [f"{q} 0 {d} {g}" for d, g in grades.items()]
        top = [f"{q}-top", f"{q}-n1", f"{q}-n2", f"{q}-n3"]
        run_a.append({"query_id": q, "ranking": [*top, f"{q}-rel"]})
        if q in SWAPPED:
            truth.append(f"{q} 0 {q}-new 1")
            judge.append(f"{q} 0 {q}-new 1")
            run_b.append({"query_id": q, "ranking": [*top, f"{q}-new"]})
        else:
            run_b.append({"query_id": q, "ranking": [*top, f"{q}-rel"]})
    paths = {
        name: folder / name for name in ("golden.qrels", "truth.qrels", "judge.qrels", "a.jsonl", "b.jsonl")
    }
    paths["golden.qrels"].write_text("\n".join(golden) + "\n")
    paths["truth.qrels"].write_text("\n".join(truth) + "\n")
    paths["judge.qrels"].write_text("\n".join(judge) + "\n")
    paths["a.jsonl"].write_text("".join(json.dumps(r) + "\n" for r in run_a))
    paths["b.jsonl"].write_text("".join(json.dumps(r) + "\n" for r in run_b))
    return paths


def compare(capsys, qrels: Path, a: Path, b: Path, *options: str) -> str:
    assert main(["compare", str(qrels), str(a), str(b), "-k", "5", "--permutations", "200", *options]) == 0
    out: str = capsys.readouterr().out
    return out


def test_the_three_unjudged_chunks_are_named_as_the_difference(tmp_path, capsys) -> None:
    f = write_case(tmp_path)
    table = compare(capsys, f["golden.qrels"], f["a.jsonl"], f["b.jsonl"])
    assert "P@5        6  0.4000  0.3000  -0.1000" in table
    # the source of the difference, named per measure, with what to do
    assert "B's -0.1000 P@5: 3 unjudged chunks in B's top 5 (A: 0)" in table
    assert "label them or use --judge-labels" in table
    # the bound: B - A with the unjudged chunks relevant or not holds 0
    assert "P@5: -0.1000 [-0.1000, +0.0000]" in table
    assert "R@5: -0.2500 [-0.2500, +0.0000]" in table
    assert "holds 0" in table

    data = json.loads(compare(capsys, f["golden.qrels"], f["a.jsonl"], f["b.jsonl"], "--format", "json"))
    share = data["measures"]["P@5"]["unjudged"]
    assert share["depth"] == 5 and (share["chunks_a"], share["chunks_b"]) == (0, 3)
    assert share["queries"] == 3
    low, high = share["interval"]
    assert low == pytest.approx(-0.1) and high == pytest.approx(0.0, abs=1e-12)
    assert low <= 0 <= high and share["holds_zero"] and share["exact"]
    assert not share["sign_could_flip"]  # it reaches 0, no further: B could tie A, not beat it
    ap = data["measures"]["AP"]["unjudged"]
    assert ap["depth"] == 5 and (ap["chunks_a"], ap["chunks_b"]) == (0, 3) and not ap["exact"]


def test_against_the_truth_the_difference_is_zero(tmp_path, capsys) -> None:
    f = write_case(tmp_path)
    table = compare(capsys, f["truth.qrels"], f["a.jsonl"], f["b.jsonl"])
    for measure in ("P@5", "R@5", "RR", "nDCG@5", "AP", "Success@5"):
        assert (
            f"{measure:<9}  6  " in table and "+0.0000" in table.split(f"{measure:<9}  6  ")[1].split("\n")[0]
        )
    assert "unjudged chunks: none in either run's top 5" in table
    data = json.loads(compare(capsys, f["truth.qrels"], f["a.jsonl"], f["b.jsonl"], "--format", "json"))
    share = data["measures"]["P@5"]["unjudged"]
    assert (share["chunks_a"], share["chunks_b"], share["interval"]) == (0, 0, [0.0, 0.0])


def test_the_judge_fills_the_holes_and_compare_says_so(tmp_path, capsys) -> None:
    f = write_case(tmp_path)
    text = compare(
        capsys, f["golden.qrels"], f["a.jsonl"], f["b.jsonl"], "--judge-labels", str(f["judge.qrels"])
    )
    assert "the judge's grades fill every unjudged chunk of both top 5s (0 of A's, 3 of B's)" in text
    assert "P@5         -0.1000 (6 q)           +0.0000" in text
    assert "label them or use --judge-labels" not in text


def test_the_bound_by_hand() -> None:
    """P@2, one query: A = [judged relevant, u1], B = [u2, u1]; u1 is in both top 2s (it cancels),
    u2 in B's only. B - A as they fall: -0.5 (u2 not relevant) to 0 (relevant), whatever u1 is."""
    from calibration.unjudged import (  # the module this issue adds (the test fails before)
        ranked,
        unjudged_share,
    )

    grades = {"q": {"r": 1}}
    a, b = ranked({"q": ["r", "u1"]}, grades, 2, 1), ranked({"q": ["u2", "u1"]}, grades, 2, 1)
    share = unjudged_share(grades, a, b, {"q": {"P@2": -0.5, "R@2": -1.0, "RR": -1.0}}, 1)
    assert share["P@2"]["interval"] == pytest.approx([-0.5, 0.0])
    assert (share["P@2"]["chunks_a"], share["P@2"]["chunks_b"]) == (1, 2)
    # R@2 = hits / |Rel|: u1 relevant makes |Rel| 2 and A's 2/2, B's 1/2 (u2 not) or 2/2 (u2 too)
    assert share["R@2"]["interval"] == pytest.approx([-1.0, 0.0])
    assert share["RR"]["interval"] == pytest.approx([-1.0, 0.0])
    # a measure undefined for either run on a query (None) is left out, as compare's n leaves it
    none = unjudged_share(grades, a, b, {"q": {"P@2": None, "R@2": None, "RR": None}}, 1)
    assert none["P@2"]["interval"] is None and none["P@2"]["queries"] == 0


def test_the_worked_example_keeps_its_figures(capsys) -> None:
    """The worked example's compare of its run with itself: 0 everywhere, its holes shared by both
    runs, so they cancel: the interval is [0, 0] (the figures of tests/data/worked-example.yaml hold:
    R@5 0.625, P@5 0.5, nDCG@5 0.7405)."""
    golden, run = EXAMPLE / "golden.yaml", EXAMPLE / "run.jsonl"
    data = json.loads(compare(capsys, golden, run, run, "--format", "json"))
    assert data["measures"]["R@5"]["mean_a"] == pytest.approx(0.625)
    assert data["measures"]["P@5"]["mean_a"] == pytest.approx(0.5)
    assert data["measures"]["nDCG@5"]["mean_a"] == pytest.approx(0.7405122069)
    share = data["measures"]["P@5"]["unjudged"]
    assert (share["chunks_a"], share["chunks_b"]) == (10, 10)  # holes table: 10 of 20 positions unjudged
    assert share["interval"] == pytest.approx([0.0, 0.0]) and not share["sign_could_flip"]


def test_the_fast_tops_are_the_reference_rankings() -> None:
    """``tops`` (one Arrow sort, the top d and the judged relevant positions) is ``ranked`` of the
    reference ``Run.rankings()`` on a shuffled run with tied scores, repeated ids, ids that differ
    only past ASCII, and an empty query; RR and AP from the positions alone are evaluate_query's."""
    import random

    import pyarrow as pa

    from annotation.model import Run
    from calibration.metrics import evaluate_query
    from calibration.unjudged import _rr_ap, ranked, tops

    rng = random.Random(7)
    q, d, s, grades = [], [], [], {}
    for i in range(40):
        qid = f"q{i}"
        docs = [f"d{rng.randrange(60)}" for _ in range(rng.randrange(1, 50))] + ["é1", "e1"]
        grades[qid] = {f"d{j}": rng.randrange(4) for j in rng.sample(range(60), 20)} | {"é1": 2}
        for doc in docs:
            q.append(qid)
            d.append(doc)
            s.append(float(rng.randrange(5)))  # many ties: the id decides, bytewise descending
    order = list(range(len(q)))
    rng.shuffle(order)
    table = pa.table({"q": [q[i] for i in order], "d": [d[i] for i in order], "s": [s[i] for i in order]})
    run = Run(table=table, empty_queries=["q-empty"])
    for depth, grade in ((5, 1), (10, 2), (1, 3)):
        fast, reference = tops(run, depth, grades, grade), ranked(run.rankings(), grades, depth, grade)
        assert fast == reference
        for qid, ranking in run.rankings().items():
            judged = grades.get(qid, {})
            n_rel = sum(1 for g in judged.values() if g >= grade)
            want = evaluate_query(ranking, judged, ks=[], min_grade=grade)
            assert _rr_ap(fast[qid], [], n_rel) == pytest.approx({"RR": want["RR"], "AP": want["AP"]})
