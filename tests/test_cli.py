"""The calibration CLI's contract: exit codes, one-line errors, gates."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from calibration.__main__ import main

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "worked-example"
GOLDEN = str(EXAMPLE / "golden.yaml")
RUN = str(EXAMPLE / "run.jsonl")


def cli(capsys, *argv) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["metrics", GOLDEN],
            "error: python -m calibration metrics: the following arguments are required: RUN",
        ),
        (
            ["metrics", GOLDEN, RUN, "-k", "0"],
            "error: python -m calibration metrics: argument -k: expected a positive integer, got '0'",
        ),
        (
            ["metrics", GOLDEN, RUN, "--format", "csv"],
            "error: python -m calibration metrics: argument --format: invalid choice: 'csv' (choose from 'table', 'json', 'trec')",
        ),
        (
            ["audit", GOLDEN, RUN],
            "error: python -m calibration audit: the following arguments are required: -k",
        ),
        (
            ["audit", GOLDEN, RUN, "-k", "5", "--fail-on", "everything"],
            "error: unknown gate 'everything'; expected one of duplicates, undefined-recall, rel-above-k, rel-below-k, "
            "judged-at-k<X, stage1-recall<X, label-coverage<X (X a number in 0..1)",
        ),
        (
            ["audit", GOLDEN, RUN, "-k", "5", "--fail-on", "stage1-recall<0.9"],
            "error: gate 'stage1-recall<0.9' needs --fetch-depth or --fetch-run",
        ),
        (
            ["audit", GOLDEN, RUN, "-k", "5", "--fail-on", "label-coverage<0.1"],
            "error: gate 'label-coverage<0.1' needs --corpus-size or --corpus",
        ),
        (
            ["audit", GOLDEN, RUN, "-k", "5", "--fetch-depth", "10", "--fetch-run", RUN],
            "error: python -m calibration audit: argument --fetch-run: not allowed with argument --fetch-depth",
        ),
        (["metrics", "nope.qrels", RUN], "error: nope.qrels: no such file; expected a readable file"),
    ],
)
def test_usage_errors_exit_2_with_one_line(capsys, argv, message) -> None:
    code, out, err = cli(capsys, *argv)
    assert code == 2
    assert out == ""
    assert err == message + "\n"


def test_bad_input_names_file_and_line(tmp_path, capsys) -> None:
    qrels = tmp_path / "bad.qrels"
    qrels.write_text("q1 0 d1 1\nq1 0 d2 high\n")
    code, out, err = cli(capsys, "metrics", qrels, RUN)
    assert code == 2 and out == ""
    assert err == f"error: {qrels}:2: grade: expected an integer, got 'high'\n"


def test_no_shared_queries_is_an_error(tmp_path, capsys) -> None:
    qrels = tmp_path / "other.qrels"
    qrels.write_text("zz 0 d1 1\n")
    code, _, err = cli(capsys, "metrics", qrels, RUN)
    assert code == 2
    assert "nothing to evaluate" in err and err.count("\n") == 1


def test_gates_pass_and_fail(capsys) -> None:
    # judged@5 is 0.4 for three queries and 0.8 for q_broad
    code, out, _ = cli(
        capsys, "audit", GOLDEN, RUN, "-k", "5", "--fail-on", "judged-at-k<0.5", "--format", "json"
    )
    data = json.loads(out)
    assert code == 1 and data["passed"] is False
    assert data["gates"] == [
        {"rule": "judged-at-k<0.5", "passed": False, "queries": ["q_faw", "q_milk", "q_store"]}
    ]
    code, out, _ = cli(
        capsys, "audit", GOLDEN, RUN, "-k", "5", "--fail-on", "judged-at-k<0.4", "--format", "json"
    )
    assert code == 0 and json.loads(out)["passed"] is True
    code, out, _ = cli(
        capsys, "audit", GOLDEN, RUN, "-k", "5", "--fail-on", "rel-above-k", "--fail-on", "undefined-recall"
    )
    assert code == 1
    assert "rel-above-k: FAILED for q_broad" in out and "undefined-recall: passed" in out
    code, out, _ = cli(
        capsys,
        "audit",
        GOLDEN,
        RUN,
        "-k",
        "5",
        "--fetch-depth",
        "5",
        "--fail-on",
        "stage1-recall<0.9",
        "--corpus-size",
        "24",
        "--fail-on",
        "label-coverage<0.2",
        "--format",
        "json",
    )
    data = json.loads(out)
    assert code == 1
    assert data["gates"][0] == {
        "rule": "stage1-recall<0.9",
        "passed": False,
        "queries": ["q_broad", "q_faw", "q_milk", "q_store"],
    }
    assert data["gates"][1] == {
        "rule": "label-coverage<0.2",
        "passed": False,
        "queries": ["q_faw", "q_milk", "q_store"],
    }


def test_stage1_with_separate_fetch_run(tmp_path, capsys) -> None:
    """Stage 1 = a deeper fetch run; the kept run is its top 2. q: |Rel| = 2."""
    (tmp_path / "q.qrels").write_text("q 0 a 1\nq 0 b 2\n")
    (tmp_path / "fetch.jsonl").write_text('{"query_id": "q", "ranking": ["x", "a", "y", "b"]}\n')
    (tmp_path / "keep.jsonl").write_text('{"query_id": "q", "ranking": ["a", "x"]}\n')
    code, out, _ = cli(
        capsys,
        "audit",
        tmp_path / "q.qrels",
        tmp_path / "keep.jsonl",
        "-k",
        "2",
        "--fetch-run",
        tmp_path / "fetch.jsonl",
        "--format",
        "json",
    )
    q = json.loads(out)["queries"]["q"]
    assert code == 0
    assert q["recall"] == 0.5 and q["recall_at_fetch"] == 1.0 and q["lost_after_fetch"] == 0.5
    assert "stage1_recall_low" not in q["findings"]


def test_undefined_recall_is_null_not_zero(tmp_path, capsys) -> None:
    (tmp_path / "q.qrels").write_text("a 0 d1 1\nb 0 d2 0\n")
    (tmp_path / "r.jsonl").write_text(
        '{"query_id": "a", "ranking": ["d1"]}\n{"query_id": "b", "ranking": ["d2"]}\n'
    )
    code, out, _ = cli(
        capsys,
        "audit",
        tmp_path / "q.qrels",
        tmp_path / "r.jsonl",
        "-k",
        "1",
        "--fail-on",
        "undefined-recall",
        "--format",
        "json",
    )
    data = json.loads(out)
    assert code == 1
    assert data["queries"]["b"]["recall"] is None and data["queries"]["b"]["findings"] == ["recall_undefined"]
    assert data["summary"]["undefined"] == 1 and data["summary"]["mean_recall"] == 1.0
    code, out, _ = cli(capsys, "metrics", tmp_path / "q.qrels", tmp_path / "r.jsonl", "-k", "1")
    b = next(line for line in out.splitlines() if line.startswith("b "))
    assert "undef" in b and "0.000  (undef)" not in b.replace("0.000  (1.000)", "")
    assert next(line for line in out.splitlines() if line.startswith("undefined")).split()[2] == "1/2"


def test_missing_from_run_is_counted(tmp_path, capsys) -> None:
    (tmp_path / "q.qrels").write_text("a 0 d1 1\nb 0 d2 1\n")
    (tmp_path / "r.jsonl").write_text(
        '{"query_id": "a", "ranking": ["d1"]}\n{"query_id": "c", "ranking": ["d1"]}\n'
    )
    code, out, _ = cli(
        capsys, "metrics", tmp_path / "q.qrels", tmp_path / "r.jsonl", "-k", "1", "--format", "json"
    )
    data = json.loads(out)
    assert (data["n_queries"], data["missing_from_run"], data["not_in_qrels"]) == (1, 1, 1)
    assert data["mean"]["R@1"] == 1.0
    code, out, _ = cli(
        capsys,
        "metrics",
        tmp_path / "q.qrels",
        tmp_path / "r.jsonl",
        "-k",
        "1",
        "--missing",
        "zero",
        "--format",
        "json",
    )
    data = json.loads(out)
    assert data["n_queries"] == 2 and data["mean"]["R@1"] == 0.5 and data["queries"]["b"]["R@1"] == 0.0


def test_subprocess_has_no_traceback(tmp_path) -> None:
    bad = tmp_path / "bin.qrels"
    bad.write_bytes(b"q 0 d 1\n\x00\x01\x02")
    proc = subprocess.run(
        [sys.executable, "-m", "calibration", "metrics", str(bad), RUN],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
    assert f"{bad}:2" in proc.stderr and "NUL byte" in proc.stderr
