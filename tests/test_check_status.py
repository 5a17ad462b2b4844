"""Issue #40, items 2 and 9 (written by a helper, ported to main): "not evaluated" is never a pass, a rule whose subject is absent is
"not applicable" (named, passing nothing), and ``faithfulness: off`` stays off whatever ``corpus`` says."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from calibration.__main__ import main
from calibration.gate import load_policy
from calibration.policy.rules import InvalidPolicy, override, policy_from_mapping
from tests.conftest import cli

EX = "examples/worked-example"
GOLDEN, RUN = f"{EX}/golden.yaml", f"{EX}/run.jsonl"


def short_run(tmp_path: Path, depth: int = 3) -> Path:
    """The worked example's run cut to ``depth`` per query: shorter than k = 5 and than 20."""
    path = tmp_path / "short.jsonl"
    with open(RUN) as src, open(path, "w") as out:
        for line in src:
            row = json.loads(line)
            row["ranking"] = row["ranking"][:depth]
            out.write(json.dumps(row) + "\n")
    return path


def check(capsys, *argv, expect: int) -> tuple[dict, str]:
    """``check ARGV`` twice: its JSON report and its table, after checking the exit code."""
    code, out, err = cli(main, capsys, "check", *argv, "--format", "json")
    assert code == expect, (code, out, err)
    code, table, err = cli(main, capsys, "check", *argv)
    assert code == expect, (code, table, err)
    return json.loads(out), table


def rules_of(report: dict) -> dict[str, dict]:
    return {r["rule"]: r for r in report["rules"]}


def result_line(table: str) -> str:
    return next(line for line in table.splitlines() if line.startswith("result: "))


# ---------------------------------------------------------------- not evaluated is never a pass


def test_a_short_run_fails_by_default(capsys, tmp_path):
    run = short_run(tmp_path)
    report, table = check(
        capsys, GOLDEN, run, "-k", "5", "--no-store", "--rule", "rel_at_least_k=off", expect=1
    )
    stage1 = rules_of(report)["stage1_recall"]
    assert stage1["status"] == "not evaluated" and stage1["passed"] is False
    assert "no stage-1 figure" in stage1["reason"]
    assert report["passed"] is False
    assert "stage1_recall" in result_line(table) and "(exit 1)" in result_line(table)


def test_a_short_run_warns_under_not_evaluated_warn(capsys, tmp_path):
    run = short_run(tmp_path)
    args = [GOLDEN, run, "-k", "5", "--no-store", "--rule", "rel_at_least_k=off"]
    report, table = check(capsys, *args, "--rule", "not_evaluated=warn", expect=0)
    stage1 = rules_of(report)["stage1_recall"]
    assert stage1["status"] == "not evaluated" and stage1["passed"] is None
    assert "stage1_recall" in report["warnings"] and report["passed"] is True
    assert "warned 1" in result_line(table)
    # the same key in a policy file
    policy = tmp_path / "denominator.yaml"
    policy.write_text("not_evaluated: warn\nrules:\n  rel_at_least_k: off\n")
    report, _ = check(capsys, GOLDEN, run, "-k", "5", "--no-store", "--policy", policy, expect=0)
    assert report["policy"]["not_evaluated"] == "warn" and "stage1_recall" in report["warnings"]


def test_not_evaluated_takes_fail_or_warn_only(tmp_path):
    assert load_policy(overrides=["not_evaluated=warn"], cwd=tmp_path).not_evaluated == "warn"
    assert load_policy(cwd=tmp_path).not_evaluated == "fail"
    with pytest.raises(InvalidPolicy, match="not_evaluated"):
        policy_from_mapping({"not_evaluated": "ignore"})
    with pytest.raises(InvalidPolicy, match="not_evaluated"):
        override(load_policy(cwd=tmp_path), ["not_evaluated=pass"])


def test_the_result_line_counts_each_status(capsys, tmp_path):
    run = short_run(tmp_path)
    _report, table = check(capsys, GOLDEN, run, "-k", "5", "--no-store", expect=1)
    line = result_line(table)
    for part in ("passed ", "failed ", "warned 0", "not applicable "):
        assert part in line, line


# ---------------------------------------------------------------- not applicable: the subject is absent


def test_a_store_with_no_judge_makes_kappa_not_applicable(capsys, demo_db):
    report, table = check(
        capsys, GOLDEN, RUN, "-k", "5", "--db", demo_db, "--rule", "rel_at_least_k=off", expect=1
    )
    kappa = rules_of(report)["kappa"]
    assert kappa["status"] == "not applicable" and kappa["passed"] is None
    assert "no judge in the store" in kappa["reason"]
    line = result_line(table)
    assert "not applicable" in line and "kappa" in line.split("not applicable", 1)[1], line
    # not counted as a pass
    assert "kappa" not in [r["rule"] for r in report["rules"] if r["passed"] is True]


# ---------------------------------------------------------------- off is off


@pytest.mark.parametrize(
    "rules",
    [
        ["corpus=broad", "faithfulness=off"],
        ["faithfulness=off", "corpus=broad"],
    ],
)
def test_faithfulness_off_stays_off_in_either_rule_order(rules, tmp_path):
    policy = load_policy(overrides=rules, cwd=tmp_path)
    assert policy.corpus == "broad" and policy.bar("faithfulness") is None
    assert policy.to_json()["rules"]["faithfulness"] is None


def test_faithfulness_off_stays_off_in_a_policy_file(tmp_path):
    path = tmp_path / "denominator.yaml"
    path.write_text("corpus: broad\nrules:\n  faithfulness: off\n")
    assert load_policy(path).bar("faithfulness") is None
    path.write_text("rules:\n  faithfulness: off\n")
    assert load_policy(path, ["corpus=broad"]).bar("faithfulness") is None
    # broad 0.5 and narrow 0.7 otherwise (a folder with no denominator.yaml)
    (tmp_path / "empty").mkdir()
    assert (
        str(load_policy(overrides=["corpus=broad"], cwd=tmp_path / "empty").bar("faithfulness")) == ">= 0.5"
    )
    assert str(load_policy(cwd=tmp_path / "empty").bar("faithfulness")) == ">= 0.7"
    # a bar for one corpus set off in a mapping is off there, not the other corpus's bar
    assert (
        policy_from_mapping({"corpus": "broad", "rules": {"faithfulness": {"broad": "off"}}}).bar(
            "faithfulness"
        )
        is None
    )


@pytest.mark.parametrize("order", [0, 1])
def test_check_with_faithfulness_off_and_a_broad_corpus_reads_no_faithfulness(capsys, demo_db, order):
    rules = ["corpus=broad", "faithfulness=off"][:: 1 if order == 0 else -1]
    args = [
        GOLDEN,
        RUN,
        "-k",
        "5",
        "--db",
        demo_db,
        "--rule",
        "rel_at_least_k=off",
        "--rule",
        "recall_at_20=off",
        "--rule",
        "stage1_recall=off",  # the labels were pooled from this run: circular, not under test
    ]
    for rule in rules:
        args += ["--rule", rule]
    report, _table = check(capsys, *args, expect=0)
    faith = rules_of(report)["faithfulness"]
    assert faith["passed"] is None and faith["judges"] == [] and faith["bar"] == "off"
