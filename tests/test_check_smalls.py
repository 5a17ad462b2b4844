"""Issue #40, item 12 (the smalls): the summary row's "mean of N" counts the queries it averages;
a run shorter than k gets a finding; stage 1 is never deeper than the run; a hole sample says
who graded it. (The 30-50 queries note counting queries with a relevant grade is in
tests/test_check.py, test_compare_notes_a_golden_set_under_30_queries.)"""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from calibration.__main__ import main
from tests.conftest import cli

EX = Path("examples/worked-example")
GOLDEN, RUN = EX / "golden.yaml", EX / "run.jsonl"


def with_a_query_of_nothing_relevant(tmp_path: Path) -> tuple[Path, Path]:
    """The worked example plus q_zero: judged (x1 graded 0), in the run, nothing relevant."""
    golden = yaml.safe_load(GOLDEN.read_text())
    golden["queries"].append({"id": "q_zero", "text": "nothing here", "grades": {"x1": 0}})
    g = tmp_path / "golden.yaml"
    g.write_text(yaml.safe_dump(golden, sort_keys=False))
    rows = [json.loads(line) for line in RUN.read_text().splitlines()]
    rows.append({"query_id": "q_zero", "ranking": ["x1", "x2", "x3", "d1", "d2", "d3"]})
    r = tmp_path / "run.jsonl"
    r.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return g, r


def test_mean_of_counts_the_queries_it_averages(capsys, tmp_path):
    golden, run = with_a_query_of_nothing_relevant(tmp_path)
    code, out, err = cli(main, capsys, "check", golden, run, "-k", "5", "--no-store", "--corpus-size", "24")
    assert code == 1, err
    row = next(line for line in out.splitlines() if line.startswith("mean of"))
    # R@k, RR, nDCG over the 4 queries with a relevant chunk (0.625, 0.875, 0.741, the worked
    # example's); coverage is defined for all 5: (8 + 3 + 3 + 3 + 1) / 24 / 5 = 0.150
    assert row.split() == [
        "mean",
        "of",
        "4",
        "1.000",
        "0.625",
        "0.875",
        "0.741",
        "3.40",
        "(of",
        "5)",
        "5",
    ] + [
        "0.150",
        "(of",
        "5)",
    ]
    zero = next(line for line in out.splitlines() if line.startswith("q_zero"))
    # nothing relevant: its stage-1 recall is undefined as its R@k is (it said n/a: #43, item 9)
    assert zero.split() == ["q_zero", "undef", "undef", "undef", "undef", "0", "5", "0.042"]
    assert "note: 4 queries with a judged relevant chunk: the essay asks for 30-50" in out


def test_a_run_shorter_than_k_gets_a_finding(capsys, tmp_path):
    short = tmp_path / "short.jsonl"
    rows = [json.loads(line) for line in RUN.read_text().splitlines()]
    for row in rows:
        row["ranking"] = row["ranking"][:3] if row["query_id"] == "q_faw" else row["ranking"]
    short.write_text("".join(json.dumps(row) + "\n" for row in rows))
    code, out, _ = cli(main, capsys, "check", GOLDEN, short, "-k", "5", "--no-store", "--format", "json")
    report = json.loads(out)
    assert "run_short" in report["queries"]["q_faw"]["findings"]
    assert all("run_short" not in q["findings"] for qid, q in report["queries"].items() if qid != "q_faw")
    code, out, _ = cli(main, capsys, "audit", GOLDEN, short, "-k", "5")
    assert (
        "the run returns 3 chunks for k = 5: the 2 empty slots count as not relevant (precision is over k)"
        in out
    )
    code, out, _ = cli(main, capsys, "audit", GOLDEN, short, "-k", "4", "--format", "json")
    assert json.loads(out)["queries"]["q_faw"]["findings"].count("run_short") == 1


def test_stage1_is_never_deeper_than_the_run(capsys):
    """run.jsonl is 10 deep: --fetch-depth 100 reads all of it, and says so."""
    code, out, _ = cli(main, capsys, "check", GOLDEN, RUN, "-k", "5", "--fetch-depth", "100", "--no-store")
    assert code == 1
    assert "stage 1 = the run read to depth 10, all of it (--fetch-depth 100 is deeper than the run)" in out
    assert "is in this run's stage 1 (its top 10)" in out
    code, out, _ = cli(
        main, capsys, "audit", GOLDEN, RUN, "-k", "5", "--fetch-depth", "100", "--format", "json"
    )
    assert json.loads(out)["fetch_depth"] == 10
    code, out, _ = cli(
        main, capsys, "audit", GOLDEN, RUN, "-k", "5", "--fetch-depth", "8", "--format", "json"
    )
    report = json.loads(out)
    assert report["fetch_depth"] == 8 and report["stage1"] == "stage 1 = the run read to depth 8"


def test_a_hole_sample_says_who_graded_it(capsys, tmp_path):
    base = ["metrics", GOLDEN, RUN, "-k", "5", "--judge-labels", EX / "judge.qrels"]
    code, out, _ = cli(main, capsys, *base, "--hole-sample", EX / "hole-sample.yaml")
    assert code == 0
    assert "6 holes graded by worked-example." in out
    code, out, _ = cli(main, capsys, *base, "--hole-sample", EX / "hole-sample.yaml", "--format", "json")
    assert json.loads(out)["cutoffs"][0]["sample"]["graded_by"] == ["worked-example"]
    anonymous = yaml.safe_load((EX / "hole-sample.yaml").read_text())
    del anonymous["judged_by"]
    path = tmp_path / "hole-sample.yaml"
    path.write_text(yaml.safe_dump(anonymous, sort_keys=False))
    code, out, _ = cli(main, capsys, *base, "--hole-sample", path)
    assert "6 holes graded by people (who is not recorded: the file names no judged_by)." in out


def test_a_stage_1_figure_is_n_a_without_a_stage_1_and_undef_when_undefined(capsys, tmp_path):
    """One word per meaning (#43, item 9): ``n/a`` where there is no stage 1 (k = 10 reads the whole
    10-deep run), ``undef`` where a figure is undefined (q_zero holds nothing relevant)."""
    golden, run = with_a_query_of_nothing_relevant(tmp_path)
    code, out, err = cli(main, capsys, "check", golden, run, "-k", "10", "--no-store")
    rows = {line.split()[0]: line.split() for line in out.splitlines() if line.startswith(("q_", "mean of"))}
    assert [rows["q_broad"][1], rows["q_zero"][1], rows["mean"][3]] == ["n/a", "n/a", "n/a"], out
    assert rows["q_zero"][2:5] == ["undef", "undef", "undef"]


def test_audit_says_n_a_without_a_stage_1_and_undef_when_undefined(capsys, tmp_path):
    """The audit's table, alike (#43, item 9): q_zero's stage-1 recall and loss were n/a with a
    stage 1 of depth 10, beside its undefined R@5."""
    golden, run = with_a_query_of_nothing_relevant(tmp_path)
    for argv, fetch in ((["-k", "5", "--fetch-depth", "10"], "undef"), (["-k", "10"], "n/a")):
        code, out, err = cli(main, capsys, "audit", golden, run, *argv)
        zero = next(line.split() for line in out.splitlines() if line.startswith("q_zero"))
        assert zero[2] == "undef" and zero[-3:] == [fetch, fetch, "n/a"], out  # R@fetch, lost, R(truth)
