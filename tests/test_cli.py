"""The calibration CLI's contract: exit codes, one-line errors, gates."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import pytest

from calibration.__main__ import main
from tests.conftest import EXAMPLE, ROOT, cli

GOLDEN = str(EXAMPLE / "golden.yaml")
RUN = str(EXAMPLE / "run.jsonl")


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
            "stage1-recall, judged-at-k<X, stage1-recall<X, label-coverage<X (X a number in 0..1)",
        ),
        (
            # at k = 10 the 10-deep run is no deeper than k: no stage 1 (at k = 5 it is its own)
            ["audit", GOLDEN, RUN, "-k", "10", "--fail-on", "stage1-recall<0.9"],
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
    code, out, err = cli(main, capsys, *argv)
    assert code == 2
    assert out == ""
    assert err == message + "\n"


def test_bad_input_names_file_and_line(tmp_path, capsys) -> None:
    qrels = tmp_path / "bad.qrels"
    qrels.write_text("q1 0 d1 1\nq1 0 d2 high\n")
    code, out, err = cli(main, capsys, "metrics", qrels, RUN)
    assert code == 2 and out == ""
    assert err == f"error: {qrels}:2: grade: expected an integer, got 'high'\n"


def test_no_shared_queries_is_an_error(tmp_path, capsys) -> None:
    qrels = tmp_path / "other.qrels"
    qrels.write_text("zz 0 d1 1\n")
    code, _, err = cli(main, capsys, "metrics", qrels, RUN)
    assert code == 2
    assert "nothing to evaluate" in err and err.count("\n") == 1


def test_gates_pass_and_fail(capsys) -> None:
    # judged@5 is 0.4 for three queries and 0.8 for q_broad
    code, out, _ = cli(
        main, capsys, "audit", GOLDEN, RUN, "-k", "5", "--fail-on", "judged-at-k<0.5", "--format", "json"
    )
    data = json.loads(out)
    assert code == 1 and data["passed"] is False
    assert data["gates"] == [
        {"rule": "judged-at-k<0.5", "passed": False, "queries": ["q_faw", "q_milk", "q_store"]}
    ]
    code, out, _ = cli(
        main, capsys, "audit", GOLDEN, RUN, "-k", "5", "--fail-on", "judged-at-k<0.4", "--format", "json"
    )
    assert code == 0 and json.loads(out)["passed"] is True
    code, out, _ = cli(
        main,
        capsys,
        "audit",
        GOLDEN,
        RUN,
        "-k",
        "5",
        "--fail-on",
        "rel-above-k",
        "--fail-on",
        "undefined-recall",
    )
    assert code == 1
    assert "rel-above-k: FAILED for q_broad" in out and "undefined-recall: passed" in out
    code, out, _ = cli(
        main,
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
        "bar": "stage-1 recall > 0.9",
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
        main,
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
        main,
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
    code, out, _ = cli(main, capsys, "metrics", tmp_path / "q.qrels", tmp_path / "r.jsonl", "-k", "1")
    b = next(line for line in out.splitlines() if line.startswith("b "))
    assert "undef" in b and "0.000  (undef)" not in b.replace("0.000  (1.000)", "")
    assert next(line for line in out.splitlines() if line.startswith("undefined")).split()[2] == "1/2"


def test_missing_from_run_is_counted(tmp_path, capsys) -> None:
    (tmp_path / "q.qrels").write_text("a 0 d1 1\nb 0 d2 1\n")
    (tmp_path / "r.jsonl").write_text(
        '{"query_id": "a", "ranking": ["d1"]}\n{"query_id": "c", "ranking": ["d1"]}\n'
    )
    code, out, _ = cli(
        main, capsys, "metrics", tmp_path / "q.qrels", tmp_path / "r.jsonl", "-k", "1", "--format", "json"
    )
    data = json.loads(out)
    assert (data["n_queries"], data["missing_from_run"], data["not_in_qrels"]) == (1, 1, 1)
    assert data["mean"]["R@1"] == 1.0
    code, out, _ = cli(
        main,
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


# ---------------------------------------------------------------- from the review of #2


def write(tmp_path, name: str, text: str):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_empty_ranking_means_retrieved_nothing(tmp_path, capsys) -> None:
    """q2 was asked and answered with []: evaluated with 0 retrieved, not 'missing'."""
    golden = write(
        tmp_path, "e.yaml", "queries:\n  - id: q1\n    grades: {a: 1}\n  - id: q2\n    grades: {b: 3}\n"
    )
    run = write(tmp_path, "e.jsonl", '{"query_id":"q1","ranking":["a"]}\n{"query_id":"q2","ranking":[]}\n')
    code, out, _ = cli(main, capsys, "metrics", golden, run, "-k", "5", "--format", "json")
    data = json.loads(out)
    assert code == 0 and data["n_queries"] == 2 and data["missing_from_run"] == 0
    assert data["queries"]["q2"] == {**data["queries"]["q2"], "retrieved": 0, "R@5": 0.0, "RR": 0.0}
    assert data["mean"]["R@5"] == 0.5
    code, out, _ = cli(main, capsys, "audit", golden, run, "-k", "5", "--format", "json")
    data = json.loads(out)
    assert data["queries"]["q2"]["recall"] == 0.0 and data["summary"]["mean_recall"] == 0.5
    only_empty = write(tmp_path, "e2.jsonl", '{"query_id":"q2","ranking":[]}\n')
    code, out, _ = cli(main, capsys, "metrics", golden, only_empty, "-k", "5", "--format", "json")
    assert code == 0 and json.loads(out)["queries"]["q2"]["R@5"] == 0.0


def test_trec_leaves_out_queries_without_judgments(tmp_path, capsys) -> None:
    """A golden.yaml query with grades: {} has no qrels line: trec_eval never sees it."""
    golden = write(
        tmp_path, "g.yaml", "queries:\n  - id: q1\n    grades: {a: 1}\n  - id: q2\n    grades: {}\n"
    )
    run = write(
        tmp_path, "g.jsonl", '{"query_id":"q1","ranking":["x","a"]}\n{"query_id":"q2","ranking":["a"]}\n'
    )
    code, out, _ = cli(main, capsys, "metrics", golden, run, "-k", "2", "--format", "trec")
    assert code == 0
    assert "num_q                 \tall\t1\n" in out and "map                   \tall\t0.5000\n" in out
    assert "\tq2\t" not in out


def test_missing_zero_still_needs_a_shared_query(tmp_path, capsys) -> None:
    qrels = write(tmp_path, "z.qrels", "001 0 a 1\n")
    run = write(tmp_path, "z.run", "1 Q0 a 1 1 t\n")
    code, out, err = cli(main, capsys, "metrics", qrels, run, "--missing", "zero", "--format", "trec")
    assert code == 2 and out == "" and "nothing to evaluate" in err


def test_fetch_depth_below_k_is_refused(tmp_path, capsys) -> None:
    qrels = write(tmp_path, "n.qrels", "q1 0 a 1\n")
    run = write(tmp_path, "n.jsonl", '{"query_id":"q1","ranking":["x","y","a"]}\n')
    code, _, err = cli(main, capsys, "audit", qrels, run, "-k", "3", "--fetch-depth", "1")
    assert code == 2
    assert (
        err == "error: fetch depth 1 is below k = 3; expected stage 1 to read at least as deep as the cut\n"
    )


def test_label_coverage_counts_only_the_corpus(tmp_path, capsys) -> None:
    qrels = write(tmp_path, "c.qrels", "".join(f"q1 0 d{i} 1\n" for i in range(6)))
    run = write(tmp_path, "c.jsonl", '{"query_id":"q1","ranking":["d0"]}\n')
    corpus = write(tmp_path, "corpus.txt", "d0\nd1\nd2\n")
    code, out, _ = cli(main, capsys, "audit", qrels, run, "-k", "1", "--corpus", corpus, "--format", "json")
    q = json.loads(out)["queries"]["q1"]
    assert code == 0 and q["label_coverage"] == 1.0 and q["judged_outside_corpus"] == 3
    code, _, err = cli(main, capsys, "audit", qrels, run, "-k", "1", "--corpus-size", "3")
    assert code == 2
    assert err == (
        "error: corpus size 3 is smaller than the 6 documents judged for query 'q1'; "
        "expected the size of the whole corpus\n"
    )


def test_lone_surrogate_is_a_clean_error(tmp_path, capsys) -> None:
    qrels = write(tmp_path, "ok.qrels", "q1 0 a 1\n")
    run = write(tmp_path, "s.jsonl", '{"query_id": "q\\ud800", "ranking": ["a"]}\n')
    code, _, err = cli(main, capsys, "metrics", qrels, run)
    assert code == 2
    assert (
        err
        == f"error: {run}:1: query_id: holds the lone surrogate U+D800; expected text that UTF-8 can encode\n"
    )
    golden = write(tmp_path, "s.yaml", 'queries:\n  - id: "q\\ud800"\n    grades: {a: 1}\n')
    code, _, err = cli(main, capsys, "metrics", golden, run)
    assert code == 2 and err.startswith(f"error: {golden}:2: queries[0].id: holds the lone surrogate U+D800")


def test_a_pipe_is_refused_not_read_half(tmp_path, capsys) -> None:
    import os

    qrels = write(tmp_path, "q.qrels", "q1 0 a 1\n")
    read_end, write_end = os.pipe()
    os.write(write_end, b"# comment\nq1 Q0 a 1 1.0 t\n")
    os.close(write_end)
    try:
        code, _, err = cli(main, capsys, "metrics", qrels, f"/dev/fd/{read_end}")
    finally:
        os.close(read_end)
    assert code == 2
    assert (
        err
        == f"error: /dev/fd/{read_end}: is not a regular file (a pipe or a device?); expected a file on disk\n"
    )


def test_exp_gain_refuses_grades_that_overflow(tmp_path, capsys) -> None:
    qrels = write(tmp_path, "g.qrels", "q1 0 a 2000\nq1 0 b 1\n")
    run = write(tmp_path, "g.run", "q1 Q0 b 1 2 t\nq1 Q0 a 2 1 t\n")
    code, _, err = cli(main, capsys, "metrics", qrels, run, "--gain", "exp", "-k", "2")
    assert code == 2
    assert (
        err
        == "error: --gain exp: grade 2000 would overflow 2**grade - 1; expected grades up to 63 (or --gain linear)\n"
    )


def test_min_grade_is_never_negative_and_golden_sets_the_default(tmp_path, capsys) -> None:
    code, _, err = cli(main, capsys, "metrics", GOLDEN, RUN, "--min-grade", "-1")
    assert code == 2 and "expected an integer >= 0 (negative grades are judged, never relevant)" in err
    golden = write(tmp_path, "m.yaml", "min_grade: 2\nqueries:\n  - id: q1\n    grades: {a: 1, b: 2}\n")
    run = write(tmp_path, "m.jsonl", '{"query_id":"q1","ranking":["a","b"]}\n')
    code, out, _ = cli(main, capsys, "metrics", golden, run, "-k", "1", "--format", "json")
    data = json.loads(out)
    assert (
        data["min_grade"] == 2 and data["queries"]["q1"]["rel"] == 1 and data["queries"]["q1"]["R@1"] == 0.0
    )
    code, out, _ = cli(
        main, capsys, "metrics", golden, run, "-k", "1", "--min-grade", "1", "--format", "json"
    )
    assert json.loads(out)["queries"]["q1"]["rel"] == 2


def test_audit_takes_one_cutoff_and_counts_run_only_queries(tmp_path, capsys) -> None:
    code, _, err = cli(main, capsys, "audit", GOLDEN, RUN, "-k", "5", "-k", "10")
    assert (
        code == 2
        and err == "error: python -m calibration audit: -k given 2 times; the audit takes one cutoff\n"
    )
    run = write(
        tmp_path, "r.jsonl", '{"query_id":"q_faw","ranking":["m1"]}\n{"query_id":"zz","ranking":["m1"]}\n'
    )
    code, out, _ = cli(main, capsys, "audit", GOLDEN, run, "-k", "5", "--format", "json")
    assert json.loads(out)["summary"]["not_in_qrels"] == 1


def test_lone_carriage_return_is_refused(tmp_path, capsys) -> None:
    qrels = write(tmp_path, "q.qrels", "q1 0 a 1\n")
    run = tmp_path / "cr.run"
    run.write_bytes(b"q1 Q0 x 1 3 t\rq1 Q0 a 2 2 t\r")
    code, _, err = cli(main, capsys, "metrics", qrels, run)
    assert code == 2
    assert (
        err
        == f"error: {run}:1: carriage return inside a line (old Mac line ends?); expected LF or CRLF line ends\n"
    )


def test_a_repeat_takes_its_slot_on_the_cli(tmp_path, capsys) -> None:
    """Issue #14: d1 d1 x3 x2 x1 d2 at k = 5: d1 twice in the top 5, d2 at rank 6.
    R@5 = 1/3 (d2 does not move up); the audit finds 2 positional hits, 1 distinct."""
    golden = write(tmp_path, "r.yaml", "queries:\n  - id: q1\n    grades: {d1: 3, d2: 2, d3: 1}\n")
    run = write(tmp_path, "r.jsonl", '{"query_id":"q1","ranking":["d1","d1","x3","x2","x1","d2"]}\n')
    code, out, _ = cli(main, capsys, "metrics", golden, run, "-k", "5")
    assert code == 0
    assert "k = 5; repeated ids: each repeat keeps its slot and scores nothing" in out
    row = next(line.split() for line in out.splitlines() if line.startswith("q1 "))
    # query |Rel| ret P@5 (ceil) R@5 (ceil) RR nDCG@5 AP Success@5: 6 positions retrieved
    assert row[1:4] == ["3", "6", "0.200"] and row[5] == "0.333" and row[7] == "1.000"
    assert row[8:10] == [f"{3 / (3.5 + 2 / math.log2(3)):.3f}", f"{4 / 9:.3f}"]
    assert "q1: repeated ids d1: each repeat keeps its slot and scores nothing" in out
    code, out, _ = cli(main, capsys, "metrics", golden, run, "-k", "5", "--format", "json")
    data = json.loads(out)
    assert data["queries"]["q1"]["R@5"] == pytest.approx(1 / 3) and data["queries"]["q1"]["retrieved"] == 6
    assert data["duplicates"] == {"q1": ["d1"]}
    code, out, err = cli(main, capsys, "metrics", golden, run, "-k", "5", "--format", "trec")
    assert "recall_5              \tq1\t0.3333\n" in out
    assert err == (
        "warning: 1 repeated document ids: each repeat keeps its slot and scores nothing "
        "(trec_eval refuses such runs)\n"
    )
    code, out, _ = cli(main, capsys, "audit", golden, run, "-k", "5")
    assert code == 0
    row = next(line.split() for line in out.splitlines() if line.startswith("q1 "))
    assert row[1:3] == ["3", "0.333"] and row[8] == "0.200" and row[10] == "2/1"  # judged@k, hits pos/dist
    assert "q1: [duplicate_ids] repeated ids d1: each repeat keeps its slot and scores nothing" in out
    assert (
        "q1: [positional_mismatch] a naive positional count finds 2 hits in the top 5, "
        "distinct documents give 1" in out
    )
    code, out, _ = cli(main, capsys, "audit", golden, run, "-k", "5", "--format", "json")
    q = json.loads(out)["queries"]["q1"]
    assert q["recall"] == pytest.approx(1 / 3) and (q["positional_hits"], q["distinct_hits"]) == (2, 1)
    assert {"duplicate_ids", "positional_mismatch"} <= set(q["findings"])
