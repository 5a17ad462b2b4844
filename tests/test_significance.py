"""Two runs compared: paired randomization test and t-test, per-query wins and losses."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest
from scipy import stats

from calibration.__main__ import main
from calibration.stats.significance import paired_test, randomization_p
from tests.conftest import EXAMPLE


def exact_sign_flip_p(diffs: np.ndarray) -> float:
    """All 2^n sign assignments, by hand: the share at least as extreme."""
    observed = abs(diffs.mean())
    flips = [abs(np.dot(s, diffs)) / len(diffs) for s in itertools.product((-1, 1), repeat=len(diffs))]
    return float(np.mean([f >= observed - 1e-12 for f in flips]))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_randomization_p_approaches_the_exact_test(seed) -> None:
    rng = np.random.default_rng(seed)
    diffs = rng.normal(0.1, 0.3, size=12)
    exact = exact_sign_flip_p(diffs)
    approx = randomization_p(diffs, permutations=40_000, seed=seed)
    assert abs(approx - exact) < 0.01  # 40,000 draws: standard error <= 0.0025
    # scipy's permutation test, paired ("samples"), enumerates the same 2^12 assignments
    result = stats.permutation_test(
        (diffs,),
        lambda d: np.mean(d),
        permutation_type="samples",
        n_resamples=np.inf,
        alternative="two-sided",
    )
    assert result.pvalue == pytest.approx(exact, abs=1e-9)


def test_paired_test_counts_and_t_test() -> None:
    a = np.array([0.5, 0.2, np.nan, 0.9, 0.4, 0.3])
    b = np.array([0.7, 0.2, 0.5, 0.6, 0.8, np.nan])
    t = paired_test(a, b, permutations=2000)
    assert (t["n"], t["left_out"]) == (4, 2)
    assert (t["wins"], t["losses"], t["ties"]) == (2, 1, 1)
    assert t["delta"] == pytest.approx((0.2 + 0 - 0.3 + 0.4) / 4)
    assert t["p_ttest"] == pytest.approx(stats.ttest_rel([0.7, 0.2, 0.6, 0.8], [0.5, 0.2, 0.9, 0.4]).pvalue)
    same = paired_test([0.1, 0.2], [0.1, 0.2])
    assert (
        same["p_randomization"] is None
        and same["undefined_reason"] == "the two runs are equal on all 2 queries"
    )
    none = paired_test([np.nan], [0.3])
    assert none["n"] == 0 and none["mean_a"] is None and "no query" in none["undefined_reason"]


def test_compare_command_on_the_worked_example(tmp_path, capsys) -> None:
    reversed_run = tmp_path / "reversed.jsonl"
    lines = [json.loads(line) for line in (EXAMPLE / "run.jsonl").read_text().splitlines()]
    reversed_run.write_text(
        "".join(json.dumps({"query_id": r["query_id"], "ranking": r["ranking"][::-1]}) + "\n" for r in lines)
    )
    argv = ["compare", str(EXAMPLE / "golden.yaml"), str(EXAMPLE / "run.jsonl"), str(reversed_run), "-k", "5"]
    assert main([*argv, "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    recall = out["measures"]["R@5"]
    # the worked example: R@5 = 0.625 (mean); reversed, each 3-relevant query loses one hit (2/3 -> 1/3)
    assert recall["mean_a"] == pytest.approx(0.625) and recall["mean_b"] == pytest.approx(0.375)
    assert (recall["wins"], recall["losses"], recall["ties"]) == (0, 3, 1)
    assert out["queries"]["q_faw"]["R@5"] == pytest.approx(-1 / 3)
    assert out["measures"]["Success@5"]["p_randomization"] is None
    assert main(argv) == 0
    table = capsys.readouterr().out
    assert "R@5        4  0.6250  0.3750  -0.2500             0/3/1" in table
    assert "Success@5: no p-value: the two runs are equal on all 4 queries" in table
    assert main(["compare", str(EXAMPLE / "golden.yaml"), str(EXAMPLE / "run.jsonl")]) == 2
