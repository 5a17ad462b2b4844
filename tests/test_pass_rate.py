"""The people's pass rate and its one interval (issue #40, item 7): Wilson's at the effective number
of traces by query (Korn & Graubard 1998), the same on ``check``, the Check section and ``review``."""

from __future__ import annotations

import json

import pytest
from statsmodels.stats.proportion import proportion_confint

from calibration.stats.pass_rate import pass_rate_how, people_pass_rate
from tests.conftest import EXAMPLE, cli

# 4 queries x 5 traces passing 5, 4, 1 and 2 times: 12 of 20
PASSES = [1] * 5 + [1] * 4 + [0] + [1] + [0] * 4 + [1] * 2 + [0] * 3
QUERIES = ["a"] * 5 + ["b"] * 5 + ["c"] * 5 + ["d"] * 5


def test_a_hand_computed_clustered_interval() -> None:
    """By hand: p = 0.6; the per-query sums of y - p are 2, 1, -2, -1 (squares 10); k = 4/3 * 19/20;
    v_c = k * 10 / 400 = 0.031667 against p(1 - p)/n = 0.012: design effect 2.6389, effective n
    7.5789; t(3) = 3.18245: Wilson's centre 0.54281, half-width 0.37490: [0.1679, 0.9177]."""
    rate = people_pass_rate([bool(x) for x in PASSES], QUERIES)
    assert rate["estimate"] == 0.6 and (rate["n"], rate["passes"], rate["queries"]) == (20, 12, 4)
    assert rate["design_effect"] == pytest.approx(2.638889, abs=1e-6)
    assert rate["effective_n"] == pytest.approx(7.578947, abs=1e-6)
    assert rate["critical"] == "t(3)"
    assert [round(x, 4) for x in rate["ci"]] == [0.1679, 0.9177]
    assert rate["how"] == "Wilson 95% at the effective n 7.6 (design effect by query 2.64; t(3))"
    assert pass_rate_how(rate, 2) == (
        "12 of 20 labelled traces fully supported (grade 2) over 4 queries; "
        "Wilson 95% at the effective n 7.6 (design effect by query 2.64; t(3))"
    )


@pytest.mark.parametrize("passes,n", [(11, 16), (8, 10), (0, 20), (20, 20), (23, 32)])
def test_one_trace_a_query_is_wilsons_interval(passes: int, n: int) -> None:
    """No query holds two traces: Wilson's interval itself (statsmodels' ``wilson``)."""
    rate = people_pass_rate([True] * passes + [False] * (n - passes), [f"q{i}" for i in range(n)])
    assert rate["ci"] == pytest.approx(list(proportion_confint(passes, n, method="wilson")), abs=1e-12)
    assert rate["design_effect"] is None and rate["how"] == "Wilson 95% (one trace a query)"


def test_what_it_cannot_read_it_says() -> None:
    every = people_pass_rate([True] * 8, ["a"] * 4 + ["b"] * 4)
    assert every["how"] == "Wilson 95% (every trace passes: no design effect to read)"
    assert every["ci"] == pytest.approx(list(proportion_confint(8, 8, method="wilson")))
    one = people_pass_rate([True, False, True], ["a"] * 3)
    assert one["how"] == "Wilson 95% (every trace in one query: no variance between queries to read)"
    # alike queries (a design effect under 1) are kept at 1: never narrower than independent traces
    alike = people_pass_rate([True, False] * 4, ["a", "a", "b", "b", "c", "c", "d", "d"])
    assert alike["design_effect"] == pytest.approx(0.0) and alike["effective_n"] == 8
    assert "kept at 1; t(3)" in alike["how"]
    wider = people_pass_rate([True, False] * 4)
    assert alike["ci"][0] < wider["ci"][0] and alike["ci"][1] > wider["ci"][1]
    with pytest.raises(ValueError, match="no labelled trace"):
        people_pass_rate([])
    with pytest.raises(ValueError, match="2 queries for 3 traces"):
        people_pass_rate([True, True, False], ["a", "b"])


def test_check_and_review_give_the_people_one_interval(capsys, tmp_path) -> None:
    """The demo with its offline judges: check's people pass rate and the review's people-only figure
    (over the same 16 traces) carry the same interval and the same words (before: Wilson over 16
    independent traces on check, none on the review)."""
    from calibration.__main__ import main
    from denominator.demo import build_demo

    db = tmp_path / "demo.db"
    build_demo(str(db), with_judge=True)
    code, out, err = cli(
        main,
        capsys,
        "check",
        EXAMPLE / "golden.yaml",
        EXAMPLE / "run.jsonl",
        "-k",
        "5",
        "--db",
        db,
        "--format",
        "json",
    )
    assert code == 1, err
    faith = next(r for r in json.loads(out)["rules"] if r["rule"] == "faithfulness")
    people = next(j for j in faith["judges"] if j["judge"] == "people")
    code, out, err = cli(main, capsys, "review", "--db", db, "--format", "json")
    assert code == 0, err
    judge = next(j for j in json.loads(out)["judges"] if j["rubric"] == "faithfulness")
    human = judge["pass_rate"]["human_only"]
    assert (human["n"], human["estimate"]) == (people["n"], people["rate"]) == (16, 11 / 16)
    assert human["ci"] == people["ci"] and people["how"].endswith(human["how"])
    code, text, _ = cli(main, capsys, "review", "--db", db)
    low, high = people["ci"]
    assert f"people only: 0.688 [{low:.3f}, {high:.3f}] over these 16 items ({human['how']})" in text
    # the judge's own rate over the 40 - 16 = 24 traces it alone graded (it passes 20), with its counts
    rate = judge["pass_rate"]
    assert rate["n_unlabeled"] == 24 and rate["judge_only"] == pytest.approx(20 / 24)
    assert "; the judge alone says 0.833 (20 / 24 traces no person labelled)" in text
