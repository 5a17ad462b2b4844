"""Issue #40, item 3: a circular stage 1. When every judged chunk of a query lies in this run's
stage 1 (the labels were pooled from its top), stage-1 recall is 1 by construction: ``check``'s
``stage1_recall`` leaves the query out, and with every query circular it is not evaluated (a
failure unless ``not_evaluated: warn``); the audit flags each such query ``stage1_circular``."""

from __future__ import annotations

import json
from pathlib import Path

from annotation.model import Qrels, Run
from calibration.audit import audit, audit_run
from tests.test_check_status import check  # the JSON report and the table, after the exit code

EX = "examples/worked-example"
GOLDEN, RUN, TRUTH = f"{EX}/golden.yaml", f"{EX}/run.jsonl", f"{EX}/truth.qrels"


def rule(report: dict, name: str) -> dict:
    return next(r for r in report["rules"] if r["rule"] == name)


def test_the_worked_examples_pooled_labels_are_circular_not_a_pass(capsys):
    """Every judged chunk of the 4 queries is in run.jsonl's top 10: before item 3, stage1_recall
    passed (4 queries) on labels that could not show a miss."""
    report, table = check(capsys, GOLDEN, RUN, "-k", "5", "--no-store", expect=1)
    stage1 = rule(report, "stage1_recall")
    assert stage1["status"] == "not evaluated" and stage1["passed"] is False
    assert stage1["reason"].startswith(
        "circular: every judged chunk of 4 of 4 queries is in this run's stage 1 (its top 10)"
    )
    assert all(q["stage1_circular"] for q in report["queries"].values())
    assert all("stage1_circular" in q["findings"] for q in report["queries"].values())
    assert "result: FAILED: stage1_recall, rel_at_least_k (exit 1)" in table
    assert "stage1_circular 4 of 4" in table
    # not_evaluated: warn makes it a warning; with rel_at_least_k off the build passes, warned
    warned, table = check(
        capsys,
        GOLDEN,
        RUN,
        "-k",
        "5",
        "--no-store",
        "--rule",
        "not_evaluated=warn",
        "--rule",
        "rel_at_least_k=off",
        expect=0,
    )
    assert rule(warned, "stage1_recall")["status"] == "not evaluated"
    assert rule(warned, "stage1_recall")["passed"] is None and warned["warnings"] == ["stage1_recall"]


def test_against_the_truth_q_broad_misses_a_quarter_and_the_rest_are_left_out(capsys):
    """truth.qrels holds 12 relevant chunks for q_broad, 3 of them beyond the run's top 10:
    stage-1 recall 9/12 = 0.750 fails > 0.95; the other 3 queries' truth lies in the top 10."""
    report, table = check(capsys, TRUTH, RUN, "-k", "5", "--no-store", expect=1)
    stage1 = rule(report, "stage1_recall")
    assert stage1["status"] == "failed" and stage1["queries"] == ["q_broad"]
    assert (stage1["evaluated"], stage1["circular"], stage1["undefined"]) == (1, 3, 0)
    assert report["queries"]["q_broad"]["fetch_recall"] == 0.75
    assert not report["queries"]["q_broad"]["stage1_circular"]
    assert "FAILED for 1 of 1 query: q_broad (3 circular, left out)" in table
    assert "retrieval_weak" in report["queries"]["q_broad"]["findings"]


def test_a_judged_miss_outside_the_run_makes_a_query_evidence(capsys, tmp_path: Path):
    """q1's labels all sit in the run (circular, left out); q2 has a judged chunk the run never
    retrieved (z, graded 0), so its stage-1 recall of 1 is evidence: the rule passes on 1 query."""
    golden = tmp_path / "g.qrels"
    golden.write_text("q1 0 a 2\nq1 0 b 1\nq2 0 c 2\nq2 0 z 0\n")
    run = tmp_path / "run.jsonl"
    run.write_text(
        json.dumps({"query_id": "q1", "ranking": ["a", "x", "b", "y"]})
        + "\n"
        + json.dumps({"query_id": "q2", "ranking": ["c", "x", "y", "w"]})
        + "\n"
    )
    args = [golden, run, "-k", "2", "--no-store", "--rule", "rel_at_least_k=off"]
    report, table = check(capsys, *args, expect=0)
    stage1 = rule(report, "stage1_recall")
    assert (stage1["status"], stage1["evaluated"], stage1["circular"]) == ("passed", 1, 1)
    assert report["queries"]["q1"]["stage1_circular"] and not report["queries"]["q2"]["stage1_circular"]
    assert "passed (1 query; 1 circular, left out)" in table


def test_the_batch_audit_and_the_reference_agree_on_circular():
    """Stage 1 read to 4 holds every judged chunk of q and r; read to 3, r's d (rank 4) is out; a
    query with nothing relevant is never circular, and with no stage 1 nothing is."""
    grades = {"q": {"a": 2, "b": 0}, "r": {"c": 1, "d": 1}, "none": {"e": 0}}
    rankings = {"q": ["a", "b", "x"], "r": ["c", "x", "y", "d"], "none": ["e", "x"]}
    for depth, expected in ((4, {"q": True, "r": True, "none": False}), (3, {"q": True, "r": False})):
        reference = audit(grades, rankings, 2, fetch_depth=depth, min_grade=1)
        batch = audit_run(
            Qrels(grades=grades), Run.from_rankings(rankings), 2, fetch_depth=depth, min_grade=1
        )
        assert batch == reference
        got = {qid: q["stage1_circular"] for qid, q in reference["queries"].items()}
        assert {q: got[q] for q in expected} == expected
        assert all(
            ("stage1_circular" in q["findings"]) == q["stage1_circular"]
            for q in reference["queries"].values()
        )
    no_stage1 = audit(grades, rankings, 5, min_grade=1)
    assert not any(q["stage1_circular"] for q in no_stage1["queries"].values())


def test_recall_at_20_leaves_out_the_circular_queries_too(capsys):
    """On a broad corpus R@20 of labels pooled from the run's top 10 is 1 by construction."""
    report, table = check(capsys, GOLDEN, RUN, "-k", "5", "--no-store", "--rule", "corpus=broad", expect=1)
    r20 = rule(report, "recall_at_20")
    assert r20["status"] == "not evaluated" and r20["reason"].startswith(
        "circular: every judged chunk of 4 of 4 queries is in this run's top 20, so R@20 is 1 by construction"
    )
    report, table = check(capsys, TRUTH, RUN, "-k", "5", "--no-store", "--rule", "corpus=broad", expect=1)
    assert rule(report, "recall_at_20")["queries"] == ["q_broad"]  # 9 of 12 in its top 20: 0.75
    assert "recall_at_20 >= 0.8      FAILED for 1 of 1 query: q_broad (3 circular, left out)" in table


def test_the_words_hold_at_the_edges(capsys, tmp_path):
    # a fetch run: no depth to name
    report, _ = check(capsys, GOLDEN, RUN, "-k", "5", "--no-store", "--fetch-run", RUN, expect=1)
    assert "is in this run's stage 1 (the fetch run), so" in rule(report, "stage1_recall")["reason"]
    # nothing relevant anywhere: all_queries is not evaluated, and says so (never "0 of None")
    zero = tmp_path / "zero.qrels"
    zero.write_text("q_faw 0 m1 0\nq_faw 0 m2 0\n")
    report, table = check(capsys, zero, RUN, "-k", "5", "--no-store", expect=1)
    assert rule(report, "all_queries")["status"] == "not evaluated"
    assert "FAILED, not evaluated: no golden query has a judged relevant document" in table
    assert "None" not in table
    # an empty ranking: nothing kept, so no order to blame; stage 1 finds none
    empty = tmp_path / "empty.jsonl"
    rows = [json.loads(line) for line in Path(RUN).read_text().splitlines()]
    for row in rows:
        row["ranking"] = [] if row["query_id"] == "q_faw" else row["ranking"]
    empty.write_text("".join(json.dumps(row) + "\n" for row in rows))
    report, table = check(capsys, GOLDEN, empty, "-k", "5", "--no-store", expect=1)
    faw = report["queries"]["q_faw"]
    assert "ranking_weak" not in faw["findings"] and "ranking_unjudged" not in faw["findings"]
    assert "q_faw: [stage1_recall_low] stage 1 finds none of |Rel|=3" in table
