"""Issue #40, item 10 (the diagnosis half): ``ranking_weak`` is claimed only when it would hold
were every unjudged chunk of the top k relevant; otherwise ``ranking_unjudged`` names the chunks
to label. Hand-computed: q1 judges a (2) and b (1); its run reads x y a b z at k = 5, so RR =
1/3 < 0.5 (the bar) while nDCG@5 = (2/log2 4 + 1/log2 5) / (2 + 1/log2 3) = 0.544 passes."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from annotation.formats.by_extension import read_ranked
from calibration.__main__ import main
from calibration.ranking_bound import ranking_bound, rr_depth
from tests.conftest import cli

RANKING = ["x", "y", "a", "b", "z"]


def files(tmp_path: Path, qrels: str) -> tuple[Path, Path]:
    golden = tmp_path / "g.qrels"
    golden.write_text(qrels)
    run = tmp_path / "run.jsonl"
    run.write_text(json.dumps({"query_id": "q1", "ranking": RANKING}) + "\n")
    return golden, run


def check(capsys, golden: Path, run: Path) -> tuple[dict, str]:
    args = ["check", golden, run, "-k", "5", "--no-store", "--rule", "rel_at_least_k=off"]
    code, out, err = cli(main, capsys, *args, "--format", "json")
    assert code == 1, err  # stage 1 unknown (the run is no deeper than k): not evaluated
    code, table, _ = cli(main, capsys, *args)
    return json.loads(out)["queries"]["q1"], table


def test_unjudged_chunks_above_the_first_relevant_withhold_the_claim(capsys, tmp_path):
    golden, run = files(tmp_path, "q1 0 a 2\nq1 0 b 1\n")
    q, table = check(capsys, golden, run)
    assert q["rr"] == pytest.approx(1 / 3)
    assert q["ndcg"] == pytest.approx((2 / 2 + 1 / math.log2(5)) / (2 + 1 / math.log2(3)))
    assert "ranking_weak" not in q["findings"] and "ranking_unjudged" in q["findings"]
    assert q["unjudged_top"] == ["x", "y", "z"] and q["rr_best"] == 1.0
    assert (
        "RR 0.333 below the bars (0.5, 0.5), but 3 unjudged chunks in the top 5 (x, y, z) could lift it "
        in table
    )
    assert "label them before blaming the order" in table


def test_judged_chunks_above_it_let_the_claim_stand(capsys, tmp_path):
    # x and y judged not relevant: only z (rank 5) is unjudged, and at best RR stays 1/3
    golden, run = files(tmp_path, "q1 0 a 2\nq1 0 b 1\nq1 0 x 0\nq1 0 y 0\n")
    q, table = check(capsys, golden, run)
    assert "ranking_weak" in q["findings"] and "ranking_unjudged" not in q["findings"]
    assert q["unjudged_top"] == ["z"] and q["rr_best"] == pytest.approx(1 / 3)
    assert "RR 0.333 is below 0.5: the order within the kept set; look at the reranker" in table
    # y unjudged at rank 2: RR could reach 1/2, which meets the bar: withheld
    golden, run = files(tmp_path, "q1 0 a 2\nq1 0 b 1\nq1 0 x 0\nq1 0 z 0\n")
    q, _ = check(capsys, golden, run)
    assert "ranking_unjudged" in q["findings"] and q["unjudged_top"] == ["y"] and q["rr_best"] == 0.5


def test_the_bound_by_hand():
    grades = {"a": 2, "b": 1}
    idcg = 2 + 1 / math.log2(3)
    ndcg = (2 / 2 + 1 / math.log2(5)) / idcg  # a at 3, b at 4
    bound = ranking_bound([(1, "x"), (2, "y"), (5, "z")], grades, 5, 1, 2, 1 / 3, ndcg)
    assert bound.unjudged == ["x", "y", "z"] and bound.rr_best == 1.0
    # every unjudged slot at grade 2, over the judged ideal: (2 + 2/log2 3 + 2/2 + 1/log2 5 + 2/log2 6)
    dcg = 2 + 2 / math.log2(3) + 2 / 2 + 1 / math.log2(5) + 2 / math.log2(6)
    assert dcg / idcg == pytest.approx(2.0777, abs=1e-4) and bound.ndcg_best == 1.0  # no nDCG exceeds 1
    one = ranking_bound([(5, "z")], grades, 5, 1, 2, 1 / 3, ndcg)  # only z, at rank 5, could be filled
    assert one.ndcg_best == pytest.approx(ndcg + 2 / math.log2(6) / idcg)
    # an unjudged chunk below k counts for RR only (k = 1, the bar 0.5: position 2 reaches it)
    deeper = ranking_bound([(2, "x")], {"a": 2, "n": 0}, 1, 1, 2, 0.0, 0.0)
    assert deeper.unjudged == [] and deeper.rr_best == 0.5
    # nothing unjudged: RR as judged (from anywhere in the ranking); nothing relevant: undefined
    assert ranking_bound([], {"a": 2, "n": 0}, 1, 1, 2, 1 / 40, 0.0).rr_best == 1 / 40
    assert ranking_bound([], {"n": 0}, 1, 1, 2, None, None).rr_best is None
    assert rr_depth(5, 0.5) == 5 and rr_depth(1, 0.5) == 2 and rr_depth(3, 0.2) == 5


def test_the_unjudged_slots_come_from_the_same_read(tmp_path, monkeypatch):
    """In memory and read in pieces of about 60 bytes (every query cut between pieces), the same
    unjudged (position, id) per query; a repeat's slot is blank, not listed."""
    from annotation.formats import columnar
    from annotation.formats.trec import read_qrels
    from calibration import run_file
    from calibration.metrics import evaluate

    path = tmp_path / "run.trec"
    lines = [f"q{q} Q0 d{d} {d + 1} {(d * 7) % 10} t" for q in range(3) for d in range(10)]
    lines.insert(1, "q0 Q0 d7 1 9.5 t")  # d7 (9) again, scored above the rest: its second slot is a repeat
    path.write_text("\n".join(lines) + "\n")
    qrels_path = tmp_path / "q.qrels"
    qrels_path.write_text("q0 0 d3 1\nq1 0 d1 2\nq2 0 d9 0\n")
    qrels, run = read_qrels(qrels_path), read_ranked(path)
    whole = evaluate(qrels, run, ks=[4], min_grade=1, unjudged_depth=4).unjudged_top
    ranking = run.rankings()
    for qid, judged in (("q0", {"d3"}), ("q1", {"d1"}), ("q2", {"d9"})):
        seen, expected = set(), []
        for position, doc in enumerate(ranking[qid][:4], start=1):
            if doc not in judged and doc not in seen:
                expected.append((position, doc))
            seen.add(doc)
        assert whole[qid] == expected, qid
    assert whole["q0"] == [(1, "d7"), (3, "d4"), (4, "d1")]  # slot 2 is d7's repeat: blank
    pieces = columnar.lean_pieces
    monkeypatch.setattr(run_file, "lean_pieces", lambda *a, **kw: pieces(*a, **{**kw, "piece_bytes": 60}))
    streamed = run_file.evaluate_run_file(qrels, path, [4], 1, unjudged_depth=4)
    assert "pieces" in streamed.notes[0] and streamed.unjudged_top == whole


def test_the_unjudged_slots_are_the_rankings_by_hand_on_random_runs():
    """200 seeded runs with repeats and tied scores: evaluate's unjudged slots are those of
    Run.rankings() (trec_eval's order) read slot by slot."""
    import random

    import pyarrow as pa

    from annotation.model import Qrels, Run
    from calibration.metrics import evaluate

    rng = random.Random(7)
    docs = [f"d{i}" for i in range(8)]
    for _ in range(200):
        grades = {
            f"q{q}": {d: rng.randint(0, 3) for d in rng.sample(docs, rng.randint(1, 5))} for q in range(3)
        }
        rows = [
            (f"q{q}", rng.choice(docs), float(rng.randint(0, 4)))
            for q in range(3)
            for _ in range(rng.randint(1, 9))
        ]
        run = Run(
            table=pa.table({"q": [r[0] for r in rows], "d": [r[1] for r in rows], "s": [r[2] for r in rows]})
        )
        depth = rng.randint(1, 6)
        got = evaluate(Qrels(grades=grades), run, ks=[depth], min_grade=1, unjudged_depth=depth).unjudged_top
        expected = {}
        for qid, ranking in run.rankings().items():
            seen = set()
            for position, doc in enumerate(ranking[:depth], start=1):
                if doc not in grades.get(qid, {}) and doc not in seen:
                    expected.setdefault(qid, []).append((position, doc))
                seen.add(doc)
        assert got == expected
