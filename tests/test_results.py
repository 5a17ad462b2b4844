"""The typed results (calibration/results.py) are the shapes the code returns: they cannot drift."""

from __future__ import annotations

from typing import get_type_hints

from annotation.formats.by_extension import read_judgments, read_ranked
from annotation.store import Store
from calibration.actions import agree
from calibration.audit import audit_run, parse_gate
from calibration.results import AgreementPair, AuditQuery, AuditReport, AuditSummary, GateResult, ReviewJudge
from calibration.review import review
from judge.jobs import grade_offline
from tests.conftest import EXAMPLE


def keys(typed: type) -> set[str]:
    return set(get_type_hints(typed))


def test_the_audit_report_is_its_typed_shape() -> None:
    report = audit_run(
        read_judgments(EXAMPLE / "golden.yaml"),
        read_ranked(EXAMPLE / "run.jsonl"),
        5,
        fetch_depth=10,
        corpus_size=24,
        gates=[parse_gate("duplicates")],
        min_grade=1,
    )
    # "stage1" (how stage 1 was taken, in words) is the action's: calibration.actions.audit;
    # "provenance" only when golden.yaml's provenance pooled every label from this run (test_provenance.py)
    assert set(report) | {"stage1", "provenance"} == keys(AuditReport)
    assert set(report["summary"]) == keys(AuditSummary)
    # recall_estimated: only where audit --estimate finds the judged recall outside its interval;
    # same_text: only when the chunk texts are known (tests/test_duplicate_text.py)
    assert all(
        set(q) == keys(AuditQuery) - {"recall_estimated", "same_text"} for q in report["queries"].values()
    )
    assert all({"rule", "passed", "queries"} <= set(g) <= keys(GateResult) for g in report["gates"])


def test_an_agreement_pair_is_its_typed_shape(tmp_path) -> None:
    labels = tmp_path / "labels.csv"
    labels.write_text(
        "item,rater,label\n" + "".join(f"i{i},a,{i % 3}\ni{i},b,{(i + i // 4) % 3}\n" for i in range(12))
    )
    (pair,) = agree(labels, trusted=0.6, statistic="unweighted")["pairs"]
    assert set(pair) <= keys(AgreementPair) and {"raters", "n", "kappa", "kappa_ci", "verdict"} <= set(pair)


def test_a_review_judge_is_its_typed_shape(demo_db) -> None:
    with Store(demo_db) as store:
        grade_offline(store, "relevance")
        report = review(store, save=False, bar=0.6, statistic="unweighted")
    assert report["judges"]
    for judge in report["judges"]:
        assert set(judge) <= keys(ReviewJudge), set(judge) - keys(ReviewJudge)
        assert {"fingerprint", "rubric", "verdict", "consensus", "ceiling"} <= set(judge)
