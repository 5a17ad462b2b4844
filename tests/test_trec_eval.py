"""`--format trec` against trec_eval's own expected outputs (trec_eval 9.0.8's test folder).

Each case is a command from trec_eval's `make quicktest` (see
quicktest_commands_from_Makefile.txt); we keep the lines of the measures we
share and require byte-identical text: same queries, same order, same
4-decimal values, same `all` lines.
"""

from __future__ import annotations

import re

import pytest

from calibration.__main__ import main
from tests.conftest import shared_dir

SHARED = shared_dir()
if SHARED is None:  # pragma: no cover - the shared reference data sits beside the checkout
    pytest.skip("../shared/data (trec_eval's test files) not found", allow_module_level=True)
DATA = SHARED / "data" / "trec_eval_test"

ALL_TREC_CUTOFFS = ["5", "10", "15", "20", "30", "100", "200", "500", "1000"]
SHARED = re.compile(
    r"^(runid|num_q|num_ret|num_rel|num_rel_ret|map|recip_rank|P_\d+|recall_\d+|ndcg_cut_\d+) "
)


def ours(capsys, *argv: str) -> str:
    code = main(["metrics", *argv, "--format", "trec"])
    out, err = capsys.readouterr()
    assert code == 0, err
    return out


def theirs(name: str, summary_only: bool = False) -> str:
    lines = [line for line in (DATA / name).read_text().splitlines(keepends=True) if SHARED.match(line)]
    if summary_only:
        lines = [line for line in lines if "\tall\t" in line]
    return "".join(lines)


def cutoffs() -> list[str]:
    return [arg for k in ALL_TREC_CUTOFFS for arg in ("-k", k)]


@pytest.mark.parametrize(
    ("qrels", "run", "options", "expected"),
    [
        # ./trec_eval -m all_trec -q qrels.test results.test
        ("qrels.test", "results.test", [], "out.test.aq"),
        # ./trec_eval -m all_trec -q -c qrels.test results.trunc   (query 302 missing from the run)
        ("qrels.test", "results.trunc", ["--missing", "zero"], "out.test.aqc"),
        # ./trec_eval -m all_trec -q -l2 qrels.rel_level results.test   (graded, -1 grades)
        ("qrels.rel_level", "results.test", ["--min-grade", "2"], "out.test.aql"),
    ],
)
def test_diff_clean_with_trec_eval(capsys, qrels, run, options, expected) -> None:
    got = ours(capsys, str(DATA / qrels), str(DATA / run), *cutoffs(), *options)
    assert got == theirs(expected)


def test_comments_in_qrels_and_run(capsys) -> None:
    """./trec_eval qrels.comment.test results.comment.test = out.test (summary only)."""
    got = ours(
        capsys,
        str(DATA / "qrels.comment.test"),
        str(DATA / "results.comment.test"),
        "-k",
        "5",
        "-k",
        "10",
        "-k",
        "15",
        "-k",
        "20",
        "-k",
        "30",
        "-k",
        "100",
        "-k",
        "200",
        "-k",
        "500",
        "-k",
        "1000",
    )
    summary = "".join(line for line in got.splitlines(keepends=True) if "\tall\t" in line)
    expected = theirs("out.test", summary_only=True)
    # out.test (no -m all_trec) has no recall_k/ndcg_cut_k lines: compare what it has
    assert [
        line
        for line in summary.splitlines()
        if line.split()[0] in {x.split()[0] for x in expected.splitlines()}
    ] == expected.splitlines()


def test_other_cutoffs(capsys) -> None:
    """trec_eval -q -m P.5,7,3 -m recall.20,2000 -m ndcg_cut.10,20,23 ... = out.test.meas_params."""
    got = ours(
        capsys,
        str(DATA / "qrels.test"),
        str(DATA / "results.test"),
        "-k",
        "3",
        "-k",
        "5",
        "-k",
        "7",
        "-k",
        "10",
        "-k",
        "20",
        "-k",
        "23",
        "-k",
        "2000",
    )
    wanted = re.compile(r"^(P_(3|5|7)|recall_(20|2000)|ndcg_cut_(10|20|23)) ")
    expected = {
        line for line in (DATA / "out.test.meas_params").read_text().splitlines() if wanted.match(line)
    }
    produced = {line for line in got.splitlines() if wanted.match(line)}
    assert expected and produced == expected


def test_trec_prints_zero_where_json_says_undefined(tmp_path, capsys) -> None:
    """A query with no relevant document: trec_eval convention 0 (averaged in);
    the product's JSON says null and leaves it out of the mean."""
    (tmp_path / "q").write_text("a 0 d1 1\nb 0 d9 0\n")
    (tmp_path / "r").write_text("a Q0 d1 1 2.0 t\na Q0 d2 2 1.0 t\nb Q0 d3 1 5.0 t\n")
    got = ours(capsys, str(tmp_path / "q"), str(tmp_path / "r"), "-k", "1")
    assert "recip_rank            \tb\t0.0000\n" in got
    assert "recip_rank            \tall\t0.5000\n" in got
    import json

    assert main(["metrics", str(tmp_path / "q"), str(tmp_path / "r"), "-k", "1", "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["queries"]["b"]["RR"] is None
    assert data["mean"]["MRR"] == 1.0
    assert data["undefined"]["MRR"] == 1
