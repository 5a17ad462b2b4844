"""Issue #40, item 10 (the diagnosis half): ``ranking_weak`` is claimed only when it would hold
were every unjudged chunk of the top k relevant; otherwise ``ranking_unjudged`` names the chunks
to label. Hand-computed: q1 judges a (2) and b (1); its run reads x y a b z at k = 5, so RR =
1/3 < 0.5 (the bar) while nDCG@5 = (2/log2 4 + 1/log2 5) / (2 + 1/log2 3) = 0.544 passes."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from annotation.formats import read_ranked
from calibration.__main__ import main
from calibration.ranking_bound import ranking_bound, rr_depth
from calibration.run_file import queries_of
from calibration.unjudged import Ranked
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
    bound = ranking_bound(Ranked(RANKING, {"a": 3, "b": 4}), grades, 5, 1, 2)
    assert bound.unjudged == ["x", "y", "z"] and bound.rr_best == 1.0
    # every unjudged chunk at grade 2, over the judged ideal: (2 + 2/log2 3 + 2/2 + 1/log2 5 + 2/log2 6)
    dcg = 2 + 2 / math.log2(3) + 2 / 2 + 1 / math.log2(5) + 2 / math.log2(6)
    assert bound.ndcg_best == pytest.approx(dcg / (2 + 1 / math.log2(3)))
    # a repeat keeps its slot and is not a second unjudged chunk
    repeated = ranking_bound(Ranked(["x", "x", "a"], {"a": 3}), grades, 3, 1, 2)
    assert repeated.unjudged == ["x"]
    assert rr_depth(5, 0.5) == 5 and rr_depth(1, 0.5) == 2 and rr_depth(3, 0.2) == 5


def test_a_trec_run_file_is_cut_to_the_queries_as_the_whole_run_is(tmp_path):
    path = tmp_path / "run.trec"
    lines = [f"q{q} Q0 d{d} {d + 1} {10 - d} t" for q in range(3) for d in range(4)]
    path.write_text("\n".join(lines) + "\n")
    cut = queries_of(path, ["q0", "q2"])
    whole = queries_of(read_ranked(path), ["q0", "q2"])
    assert cut.rankings() == whole.rankings() == {q: ["d0", "d1", "d2", "d3"] for q in ("q0", "q2")}
    assert queries_of(path, ["nowhere"]).rankings() == {}
