"""``calibration holes``, ``metrics --judge-labels [--hole-sample]`` and ``compare`` with them, as a
user runs them: the worked example's figures, Cranfield's corrected delta against the truth, and
every refusal (one line, exit 2, no traceback)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from annotation.formats.by_extension import read_judgments
from annotation.formats.golden import read_golden, write_golden
from annotation.model import Qrels
from calibration.__main__ import main
from tests.conftest import EXAMPLE, cli

GOLDEN = EXAMPLE / "golden.yaml"
RUN = EXAMPLE / "run.jsonl"
JUDGE = EXAMPLE / "judge.qrels"
SAMPLE = EXAMPLE / "hole-sample.yaml"


def test_holes_lists_q_milk_s2_x1_x3(capsys) -> None:
    code, out, err = cli(main, capsys, "holes", GOLDEN, RUN, "-k", 5)
    assert code == 0 and err == ""
    assert "10 of 20 positions over 4 queries are unjudged (judged@5 0.50 = 10 / 20)" in out
    row = next(line for line in out.splitlines() if line.startswith("q_milk"))
    assert row.split() == ["q_milk", "2", "/", "5", "(0.40)", "s2,", "x1,", "x3"]
    code, out, _ = cli(main, capsys, "holes", GOLDEN, RUN, "-k", 5, "--format", "json")
    report = json.loads(out)
    assert report["queries"]["q_milk"] == {
        "holes": ["s2", "x1", "x3"],
        "judged": [2],
        "filled": [5],
        "share": [0.6],
    }
    assert report["holes"] == 10 and report["judged_at_k"] == 0.5
    code, out, _ = cli(main, capsys, "holes", GOLDEN, RUN, "-k", 5, "--format", "csv")
    assert out.splitlines()[:2] == ["query,chunk,hole,sampled", "q_broad,x1,1,no"]
    assert len(out.splitlines()) == 11


def test_the_sample_written_reads_back_and_is_seeded(tmp_path, capsys) -> None:
    out_file = tmp_path / "sample.yaml"
    code, out, _ = cli(
        main, capsys, "holes", GOLDEN, RUN, "-k", 5, "--sample", 2, "--seed", 1, "--out", out_file
    )
    assert code == 0 and "Sample: 2 of the 4 queries, drawn uniformly (seed 1); their 6 holes" in out
    sample = read_golden(out_file)
    assert sample.sampling is not None
    assert sample.sampling.parameters == {
        "kind": "holes",
        "k": 5,
        "seed": 1,
        "population": 4,
        "sample": 2,
        "runs": [str(RUN)],
        "judgments": str(GOLDEN),
    }
    assert {q: s[0].sampled for q, s in sample.sampling.queries.items()} == {
        "q_faw": ("x3", "p1", "d2"),
        "q_milk": ("s2", "x1", "x3"),
    }
    assert sample.texts["q_milk"] == "How can I get more milk from my dairy cows?"
    again = tmp_path / "again.yaml"
    cli(main, capsys, "holes", GOLDEN, RUN, "-k", 5, "--sample", 2, "--seed", 1, "--out", again)
    assert read_golden(again).sampling == sample.sampling  # the same seed draws the same sample


def test_metrics_with_judge_labels_fills_q_milk(capsys) -> None:
    code, out, err = cli(main, capsys, "metrics", GOLDEN, RUN, "-k", 5, "--judge-labels", JUDGE)
    assert code == 0 and err == ""
    assert "The judge graded 10 of the 10 holes in the top 5 (3 relevant)" in out
    assert "uncorrected: the judge's kappa on this rubric is" in out and "no interval" in out
    row = next(line for line in out.splitlines() if line.startswith("q_milk"))
    assert row.split() == ["q_milk", "3", "3", "3", "+", "1", "filled", "0.4000", "/", "0.6000"]
    code, out, _ = cli(
        main, capsys, "metrics", GOLDEN, RUN, "-k", 5, "--judge-labels", JUDGE, "--format", "json"
    )
    (report,) = json.loads(out)["cutoffs"]
    q = report["queries"]["q_milk"]
    assert (q["holes"], q["filled"], q["filled_relevant"], q["rel"]) == (3, 3, 1, 3)
    assert q["values"]["P@5"] == [0.4, 0.6, None]
    means = {m["measure"]: m for m in report["means"]}
    assert means["P@5"]["holes_as_not_relevant"] == 0.5  # the worked example's mean P@5
    assert means["P@5"]["judge_filled"] == pytest.approx(0.65)  # +p1 (q_faw), x1 (q_milk), x1 (q_broad)
    assert means["P@5"]["corrected"] is None
    # the judge against people on the 8 chunks both graded (judge.qrels grades some judged ones)
    assert report["agreement"]["n"] == 8


def test_metrics_with_the_worked_hole_sample_gives_no_interval_it_cannot_back(capsys) -> None:
    code, out, _ = cli(
        main, capsys, "metrics", GOLDEN, RUN, "-k", 5, "--judge-labels", JUDGE, "--hole-sample", SAMPLE,
        "--format", "json",
    )  # fmt: skip
    assert code == 0
    (report,) = json.loads(out)["cutoffs"]
    p5 = next(m for m in report["means"] if m["measure"] == "P@5")["corrected"]
    # people found no relevant hole in q_faw and q_milk; the judge called two relevant there: lam 1
    # (the fill does not vary) corrects the judge's +0.15 down by its +0.2 on the sample, cut to
    # what P@5 can be: at least the holes-as-not-relevant 0.5
    assert p5["estimate"] == pytest.approx(0.5)
    assert p5["ci"] is None and p5["changed"] == 0
    assert "an interval needs at least 5" in p5["note"]


def _edit_sample(tmp_path, change) -> str:
    sample = read_golden(SAMPLE)
    grades = {q: dict(g) for q, g in sample.grades.items()}
    meta = dict(sample.meta)
    design = sample.sampling
    grades, meta, design = change(grades, meta, design)
    path = tmp_path / "edited.yaml"
    write_golden(Qrels(grades=grades, texts=sample.texts, meta=meta, sampling=design), path)
    return str(path)


def test_a_hand_picked_sample_is_refused(tmp_path, capsys) -> None:
    from annotation.model import SamplingDesign, Stratum

    def swap(grades, meta, design):
        queries = dict(design.queries)
        del queries["q_faw"]
        queries["q_store"] = (Stratum("holes", 3, ("d2", "x4", "p2")),)
        grades.pop("q_faw")
        grades["q_store"] = {"d2": 0, "x4": 0, "p2": 0}
        meta.pop("sampling", None)
        return (
            grades,
            meta,
            SamplingDesign(queries=queries, parameters=design.parameters, method=design.method),
        )

    path = _edit_sample(tmp_path, swap)
    code, out, err = cli(
        main, capsys, "metrics", GOLDEN, RUN, "-k", 5, "--judge-labels", JUDGE, "--hole-sample", path
    )
    assert code == 2 and out == ""
    assert "are not the ones seed 1 draws from the 4 queries" in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["-k", 10, "--judge-labels", JUDGE, "--hole-sample", SAMPLE], "-k 10 needs the top 10"),
        (["-k", 5, "--judge-labels", JUDGE, "--hole-sample", EXAMPLE / "sampled.yaml"], "not a hole sample"),
        (["-k", 5, "--hole-sample", SAMPLE], "--hole-sample goes with --judge-labels"),
        (
            ["-k", 5, "--judge-labels", JUDGE, "--format", "trec"],
            "--format trec does not go with --judge-labels",
        ),
        (["-k", 5, "--judge-labels", JUDGE, "--missing", "zero"], "--missing zero does not go with"),
    ],
)
def test_metrics_refusals(capsys, argv, message) -> None:
    code, out, err = cli(main, capsys, "metrics", GOLDEN, RUN, *argv)
    assert code == 2 and out == "" and message in err and "Traceback" not in err


def test_unlabelled_holes_are_refused(tmp_path, capsys) -> None:
    path = _edit_sample(tmp_path, lambda g, m, d: ({q: {} for q in g}, m, d))
    code, _, err = cli(
        main, capsys, "metrics", GOLDEN, RUN, "-k", 5, "--judge-labels", JUDGE, "--hole-sample", path
    )
    assert code == 2 and "6 holes of the sampled queries' top 5 have no people's grade" in err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["-k", 5, "--out", "x.yaml"], "--out writes the hole sample; give --sample N"),
        (["-k", 5, "--sample", 5], "a sample of 5 queries, but the run has 4"),
        (["-k", 5, "--sample", 0], "--sample"),
    ],
)
def test_holes_refusals(capsys, argv, message) -> None:
    code, out, err = cli(main, capsys, "holes", GOLDEN, RUN, *argv)
    assert code == 2 and out == "" and message in err


def test_a_run_named_twice_is_refused(capsys) -> None:
    code, _, err = cli(main, capsys, "holes", GOLDEN, RUN, RUN, "-k", 5)
    assert code == 2 and "a run is named twice" in err


# ------------------------------------------------------------------ Cranfield, from the command line


@pytest.fixture(scope="module")
def cranfield_files(tmp_path_factory):
    from bench.cranfield import cranfield_dir
    from bench.holes import setting, write_cli_files

    if cranfield_dir() is None:
        pytest.skip("the shared Cranfield collection is absent")
    s = setting()
    folder = tmp_path_factory.mktemp("cranfield")
    return s, write_cli_files(s, folder, n=60, seed=3)


def test_compare_prints_corrected_deltas_with_intervals_that_hold_the_truth(cranfield_files, capsys) -> None:
    """BM25 (its top 10 is the pool: judged) against TF-IDF (815 holes): holes as not relevant say
    TF-IDF loses P@10 by 0.044, the judge's fill says it wins by 0.056; people on every hole say
    -0.0027. The corrected delta, from 60 sampled queries, holds it."""
    s, paths = cranfield_files
    code, out, err = cli(
        main, capsys, "compare", paths["golden"], paths["a"], paths["b"], "-k", 10,
        "--judge-labels", paths["judge"], "--hole-sample", paths["sample"], "--format", "json",
    )  # fmt: skip
    assert code == 0, err
    (report,) = json.loads(out)["cutoffs"]
    deltas = {d["measure"]: d for d in report["deltas"]}
    truth = Qrels(grades={q: dict(g) for q, g in s.collection.truth.items()})
    truth_top = {  # people on every chunk of both runs' top 10: the pool's grades plus the truth's on holes
        q: {**s.collection.pool[q], **{d: truth.grades[q].get(d, 0) for d in s.collection.run[q][:10]}}
        for q in s.collection.pool
    }
    true_delta = np.mean(
        [
            sum(truth_top[q][d] >= 1 for d in s.collection.run[q][:10]) / 10
            - sum(g >= 1 for g in s.collection.pool[q].values()) / 10
            for q in s.collection.pool
        ]
    )
    p10 = deltas["P@10"]
    assert p10["holes_as_not_relevant"] == pytest.approx(-0.0444444, abs=1e-6)
    assert p10["judge_filled"] == pytest.approx(0.0555556, abs=1e-6)
    assert true_delta == pytest.approx(-0.0026667, abs=1e-6)
    lo, hi = p10["corrected"]["ci"]
    assert lo <= true_delta <= hi
    assert hi - lo < 0.05  # people-only on 60 queries of 225 spans about 0.07
    assert p10["corrected"]["n"] == 60 and p10["corrected"]["population"] == 225
    # the table says it too
    code, out, _ = cli(
        main, capsys, "compare", paths["golden"], paths["a"], paths["b"], "-k", 10,
        "--judge-labels", paths["judge"], "--hole-sample", paths["sample"],
    )  # fmt: skip
    line = next(x for x in out.splitlines() if x.startswith("P@10"))
    assert line.split()[:3] == ["P@10", "-0.0444", "(225"] and "(n 60 of 225)" in line


def test_metrics_corrected_equals_the_library(cranfield_files, capsys) -> None:
    from annotation.formats.by_extension import read_ranked
    from calibration.holes.files import read_hole_sample
    from calibration.holes.scoring import score_with_holes

    _s, paths = cranfield_files
    code, out, _ = cli(
        main, capsys, "metrics", paths["golden"], paths["b"], "-k", 10,
        "--judge-labels", paths["judge"], "--hole-sample", paths["sample"], "--format", "json",
    )  # fmt: skip
    (report,) = json.loads(out)["cutoffs"]
    sample = read_hole_sample(paths["sample"])
    scores = score_with_holes(
        read_judgments(paths["golden"]), read_ranked(paths["b"]), k=10,
        judge=read_judgments(paths["judge"]).grades, min_grade=1, sample=sample.holes, people=sample.grades,
    )  # fmt: skip
    for m in report["means"]:
        c = scores.corrected[m["measure"]]
        assert m["corrected"]["estimate"] == pytest.approx(c.estimate)
        assert (m["corrected"]["ci"] is None) == (c.ci is None)


def test_check_counts_the_judges_fill_apart(capsys) -> None:
    """check --judge-labels: judged@k stays people's (the rules read it), filled@k beside it, the
    holes' report in the JSON; the verdict is the one without the judge."""
    plain_code, plain_out, _ = cli(
        main, capsys, "check", GOLDEN, RUN, "-k", 5, "--no-store", "--format", "json"
    )
    code, out, err = cli(
        main, capsys, "check", GOLDEN, RUN, "-k", 5, "--no-store", "--format", "json",
        "--judge-labels", JUDGE, "--hole-sample", SAMPLE,
    )  # fmt: skip
    assert code == plain_code, err
    plain, report = json.loads(plain_out), json.loads(out)
    milk = report["queries"]["q_milk"]
    assert milk["judged_at_k"] == plain["queries"]["q_milk"]["judged_at_k"] == pytest.approx(0.4)
    assert milk["filled_at_k"] == pytest.approx(0.6)
    assert [r["passed"] for r in report["rules"]] == [r["passed"] for r in plain["rules"]]
    assert report["holes"]["k"] == 5 and report["holes"]["sample"]["n"] == 2
    code, out, _ = cli(main, capsys, "check", GOLDEN, RUN, "-k", 5, "--no-store", "--judge-labels", JUDGE)
    assert "Holes (--judge-labels): the rules above read people's judgments only" in out
    assert "uncorrected: the judge's kappa on this rubric is" in out
    code, _, err = cli(main, capsys, "check", GOLDEN, RUN, "-k", 5, "--no-store", "--hole-sample", SAMPLE)
    assert code == 2 and "--hole-sample goes with --judge-labels" in err


def test_swapping_the_runs_mirrors_the_corrected_delta(cranfield_files, capsys) -> None:
    _s, paths = cranfield_files

    def p10(a, b):
        code, out, _ = cli(
            main, capsys, "compare", paths["golden"], paths[a], paths[b], "-k", 10,
            "--judge-labels", paths["judge"], "--hole-sample", paths["sample"], "--format", "json",
        )  # fmt: skip
        (report,) = json.loads(out)["cutoffs"]
        return next(d for d in report["deltas"] if d["measure"] == "P@10")["corrected"]

    forward, backward = p10("a", "b"), p10("b", "a")
    assert forward["estimate"] == pytest.approx(-backward["estimate"])
    assert forward["ci"] == pytest.approx([-backward["ci"][1], -backward["ci"][0]])


def test_a_chunk_the_sample_names_outside_the_top_k_is_no_hole(tmp_path, capsys) -> None:
    """A hand-added m3 (graded 1 by people, rank 6: outside the top 5) must not leave |Rel|."""
    from annotation.model import SamplingDesign, Stratum

    def add_m3(grades, meta, design):
        queries = dict(design.queries)
        queries["q_faw"] = (Stratum("holes", 4, (*queries["q_faw"][0].sampled, "m3")),)
        meta.pop("sampling", None)
        return (
            grades,
            meta,
            SamplingDesign(queries=queries, parameters=design.parameters, method=design.method),
        )

    path = _edit_sample(tmp_path, add_m3)
    argv = ("metrics", GOLDEN, RUN, "-k", 5, "--judge-labels", JUDGE, "--format", "json")
    _, plain, _ = cli(main, capsys, *argv, "--hole-sample", SAMPLE)
    code, edited, err = cli(main, capsys, *argv, "--hole-sample", path)
    assert code == 0, err
    r5 = [
        next(m for m in json.loads(out)["cutoffs"][0]["means"] if m["measure"] == "R@5")
        for out in (plain, edited)
    ]
    assert (
        r5[0]["holes_as_not_relevant"]
        == pytest.approx(r5[1]["holes_as_not_relevant"])
        == pytest.approx(0.625)
    )


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            lambda g, m, d: (g, m, type(d)(queries={}, parameters=d.parameters, method=d.method)),
            "names no query",
        ),
        (
            lambda g, m, d: (
                g,
                m,
                type(d)(queries=d.queries, parameters={**d.parameters, "sample": 3}, method=d.method),
            ),
            "says 3 queries, sampling.queries holds 2",
        ),
        (
            lambda g, m, d: (
                g,
                m,
                type(d)(queries=d.queries, parameters={**d.parameters, "runs": 5}, method=d.method),
            ),
            "sampling.design.runs is 5",
        ),
    ],
)
def test_a_hole_sample_that_does_not_add_up_is_refused(tmp_path, capsys, change, message) -> None:
    def edit(grades, meta, design):
        meta.pop("sampling", None)
        return change(grades, meta, design)

    path = _edit_sample(tmp_path, edit)
    code, out, err = cli(
        main, capsys, "metrics", GOLDEN, RUN, "-k", 5, "--judge-labels", JUDGE, "--hole-sample", path
    )
    assert code == 2 and out == "" and message in err


def test_holes_takes_one_cutoff(capsys) -> None:
    code, _, err = cli(main, capsys, "holes", GOLDEN, RUN, "-k", 5, "-k", 10)
    assert code == 2 and "-k given 2 times; holes takes one cutoff" in err
