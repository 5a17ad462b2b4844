"""Prediction-powered inference, Rogan-Gladen and label budgets: against ppi_py and by hand."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from calibration.stats.ppi import ppi_mean, ppi_report, rogan_gladen, rogan_gladen_from_labels
from calibration.stats.ppi_budget import label_budget

Z95 = 1.959963984540054


def synthetic(seed: int, n: int, big_n: int, kind: str):
    rng = np.random.default_rng(seed)
    if kind == "binary":  # a pass rate: human labels and a judge that is right ~80% of the time
        truth = rng.random(n + big_n) < 0.35
        judge = np.where(rng.random(n + big_n) < 0.8, truth, ~truth)
        y, yhat = truth[:n].astype(float), judge.astype(float)
    elif kind == "noisy":  # continuous, judge = truth + noise + bias
        truth = rng.normal(2.0, 1.0, n + big_n)
        yhat = truth + rng.normal(0.3, 0.7, n + big_n)
        y = truth[:n]
    else:  # a judge negatively correlated with people: lambda clips to 0
        y = rng.normal(0.0, 1.0, n)
        yhat = rng.normal(0.0, 1.0, n + big_n)
        yhat[:n] = -y + rng.normal(0, 0.1, n)
    return y, yhat[:n], yhat[n:]


CASES = [
    (seed, n, big_n, kind)
    for seed, n, big_n in [(0, 50, 500), (1, 200, 2000), (2, 30, 10000), (3, 1000, 1500), (4, 12, 40)]
    for kind in ("binary", "noisy", "anti")
]


@pytest.mark.parametrize("seed,n,big_n,kind", CASES)
@pytest.mark.parametrize("lam", [None, 1.0])
def test_matches_ppi_py(seed, n, big_n, kind, lam):
    ppi_py = pytest.importorskip("ppi_py")
    y, yhat, yhat_u = synthetic(seed, n, big_n, kind)
    for alpha in (0.05, 0.1):
        ours = ppi_mean(y, yhat, yhat_u, alpha=alpha, lam=lam)
        point = ppi_py.ppi_mean_pointestimate(y, yhat, yhat_u, lam=lam)
        low, high = ppi_py.ppi_mean_ci(y, yhat, yhat_u, alpha=alpha, lam=lam)
        assert ours["estimate"] == pytest.approx(float(np.squeeze(point)), abs=1e-6)
        assert ours["ci"][0] == pytest.approx(float(np.squeeze(low)), abs=1e-6)
        assert ours["ci"][1] == pytest.approx(float(np.squeeze(high)), abs=1e-6)
        c_low, c_high = ppi_py.classical_mean_ci(y, alpha=alpha)
        assert ours["human_only"]["ci"][0] == pytest.approx(float(c_low), abs=1e-6)
        assert ours["human_only"]["ci"][1] == pytest.approx(float(c_high), abs=1e-6)
        assert ours["human_only"]["estimate"] == pytest.approx(float(y.mean()), abs=1e-12)
    assert ours["n_labeled"] == n and ours["n_unlabeled"] == big_n
    assert ours["lam_tuned"] is (lam is None)
    if lam is None:
        assert 0.0 <= ours["lam"] <= 1.0
        if kind == "anti":
            assert ours["lam"] == 0.0  # clipped: a negatively correlated judge is not used
            assert ours["estimate"] == pytest.approx(float(y.mean()))
    else:
        assert ours["lam"] == 1.0


def test_tuned_lambda_hand_computed():
    y = np.array([1.0, 0.0, 1.0, 1.0])
    yhat = np.array([1.0, 0.0, 0.0, 1.0])
    yhat_u = np.array([1.0, 1.0, 0.0, 0.0, 1.0, 0.0, 1.0, 1.0])
    # cov (ddof 0) over the labelled: E[y yhat] - E[y]E[yhat] = 2/4 - (3/4)(2/4) = 1/8
    # pooled var of yhat (ddof 1) over 12 values with 7 ones: (7 * 5/12) / 11 ... = p(1-p) * 12/11
    pooled = np.r_[yhat, yhat_u]
    p1 = pooled.mean()
    var = p1 * (1 - p1) * 12 / 11
    lam = (1 / 8) / ((1 + 4 / 8) * var)
    out = ppi_mean(y, yhat, yhat_u, lam=None)
    assert out["lam"] == pytest.approx(lam)
    assert out["estimate"] == pytest.approx(lam * yhat_u.mean() + (y - lam * yhat).mean())
    # PPI (lam = 1): mean judge on unlabelled + mean residual
    ppi = ppi_mean(y, yhat, yhat_u, lam=1)
    assert ppi["estimate"] == pytest.approx(5 / 8 + 1 / 4)
    se = math.sqrt(yhat_u.var() / 8 + (y - yhat).var() / 4)
    assert ppi["ci"] == pytest.approx([7 / 8 - Z95 * se, 7 / 8 + Z95 * se])


def test_constant_judge_falls_back_to_human_only():
    y = np.array([1.0, 0.0, 1.0, 0.0, 1.0])
    out = ppi_mean(y, np.ones(5), np.ones(20))
    assert out["lam"] == 0.0 and out["lam_note"]
    assert out["estimate"] == pytest.approx(0.6)
    assert out["ci"] == pytest.approx(out["human_only"]["ci"])


def test_ppi_report_shape_is_plain_json():
    y, yhat, yhat_u = synthetic(7, 40, 400, "binary")
    report = ppi_report(y, yhat, yhat_u)
    assert set(report) == {"estimate", "ci", "lam", "n_labeled", "n_unlabeled", "human_only"} | {
        "design",
        "correlation",
        "weak_threshold",
        "weak_note",
        "prefer",
    }
    assert set(report["human_only"]) == {"estimate", "ci"}
    assert type(report["estimate"]) is float and type(report["lam"]) is float
    assert type(report["n_labeled"]) is int and report["n_labeled"] == 40
    assert all(type(x) is float for x in report["ci"] + report["human_only"]["ci"])
    assert report["ci"][0] <= report["estimate"] <= report["ci"][1]
    assert json.loads(json.dumps(report)) == report
    full = ppi_mean(y, yhat, yhat_u)
    assert report["estimate"] == full["estimate"] and report["ci"] == full["ci"]


def test_ppi_bad_input_is_loud():
    with pytest.raises(ValueError, match="one judge label per human label"):
        ppi_mean([1, 0, 1], [1, 0], [1])
    with pytest.raises(ValueError, match="Y_labeled: 1 values; expected at least 2"):
        ppi_mean([1], [1], [1, 0])
    with pytest.raises(ValueError, match="Yhat_unlabeled: value nan at position 1"):
        ppi_mean([1, 0], [1, 0], [1, float("nan")])
    with pytest.raises(ValueError, match="alpha"):
        ppi_mean([1, 0], [1, 0], [1], alpha=1.5)


# --- Rogan-Gladen -----------------------------------------------------------------------


def test_rogan_gladen_by_hand():
    # judge passes 60%; tpr 0.9, tnr 0.8: (0.6 + 0.8 - 1) / (0.9 + 0.8 - 1) = 0.4 / 0.7
    out = rogan_gladen(0.6, 0.9, 0.8)
    assert out["estimate"] == pytest.approx(4 / 7)
    assert out["clipped"] is False and out["reason"] is None
    # a perfect judge changes nothing
    assert rogan_gladen(0.37, 1.0, 1.0)["estimate"] == pytest.approx(0.37)
    # below the false-positive floor: raw (0.1 + 0.8 - 1)/0.7 < 0 -> clipped to 0
    low = rogan_gladen(0.1, 0.9, 0.8)
    assert low["estimate"] == 0.0 and low["clipped"] is True
    assert low["unclipped"] == pytest.approx(-0.1 / 0.7)
    high = rogan_gladen(0.99, 0.9, 0.8)
    assert high["estimate"] == 1.0 and high["clipped"] is True


@pytest.mark.parametrize("tpr,tnr", [(0.5, 0.5), (0.3, 0.6), (0.0, 0.0)])
def test_rogan_gladen_undefined_at_chance(tpr, tnr):
    out = rogan_gladen(0.5, tpr, tnr)
    assert out["estimate"] is None and "no better than chance" in out["reason"]


def test_rogan_gladen_rejects_rates_outside_0_1():
    with pytest.raises(ValueError, match="tpr 1.2"):
        rogan_gladen(0.5, 1.2, 0.8)


def test_rogan_gladen_from_labels_hand_counts():
    # labelled: 10 human passes (judge passes 9), 10 human fails (judge passes 2)
    human = [1] * 10 + [0] * 10
    judge = [1] * 9 + [0] + [1] * 2 + [0] * 8
    unlabeled = [1] * 60 + [0] * 40
    out = rogan_gladen_from_labels(human, judge, unlabeled, n_boot=2000, seed=0)
    assert (out["tp"], out["fn"], out["fp"], out["tn"]) == (9, 1, 2, 8)
    assert out["tpr"] == 0.9 and out["tnr"] == 0.8 and out["judge_pass_rate"] == 0.6
    assert out["estimate"] == pytest.approx(4 / 7)
    low, high = out["ci"]
    assert low <= out["estimate"] <= high
    assert 0.0 <= low < high <= 1.0
    assert out["n_boot"] == 2000 and out["n_boot_undefined"] >= 0
    # reproducible with the seed, different with another
    assert rogan_gladen_from_labels(human, judge, unlabeled, seed=0)["ci"] == out["ci"]
    assert rogan_gladen_from_labels(human, judge, unlabeled, seed=1)["ci"] != out["ci"]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_rogan_gladen_bootstrap_brackets_and_matches_row_resampling(seed):
    rng = np.random.default_rng(100 + seed)
    truth = rng.random(300) < 0.4
    judge = np.where(truth, rng.random(300) < 0.85, rng.random(300) < 0.1)
    unl = rng.random(1000) < 0.4 * 0.85 + 0.6 * 0.1
    out = rogan_gladen_from_labels(truth, judge, unl, n_boot=4000, seed=seed)
    assert out["ci"][0] <= out["estimate"] <= out["ci"][1]
    # the multinomial draw is a row resample: a plain row bootstrap gives the same interval, near enough
    idx = rng.integers(0, 300, size=(4000, 300))
    h, j = truth[idx], judge[idx]
    tpr = (h & j).sum(1) / h.sum(1)
    tnr = (~h & ~j).sum(1) / (~h).sum(1)
    p = unl[rng.integers(0, 1000, size=(4000, 1000))].mean(1)
    reps = np.clip((p + tnr - 1) / (tpr + tnr - 1), 0, 1)
    lo, hi = np.quantile(reps, [0.025, 0.975])
    assert out["ci"][0] == pytest.approx(lo, abs=0.02)
    assert out["ci"][1] == pytest.approx(hi, abs=0.02)


def test_rogan_gladen_from_labels_undefined():
    out = rogan_gladen_from_labels([1, 1, 1], [1, 0, 1], [1, 0])
    assert out["estimate"] is None and out["ci"] is None and "fail" in out["reason"]
    chance = rogan_gladen_from_labels([1, 1, 0, 0], [1, 0, 1, 0], [1, 0, 1])
    assert chance["estimate"] is None and "no better than chance" in chance["reason"]
    with pytest.raises(ValueError, match="expected 1 \\(pass\\) or 0 \\(fail\\)"):
        rogan_gladen_from_labels([1, 2], [1, 0], [1])


# --- label budget -----------------------------------------------------------------------


def test_budget_human_only_worst_case_by_hand():
    out = label_budget(0.1)
    assert out["human_only"]["n"] == math.ceil((2 * 1.959964 * 0.5 / 0.1) ** 2) == 385
    assert out["ppi"] is None and out["ppi_tuned"] is None
    # a given p and alpha 0.1: z = 1.6448536, ceil((2 z sqrt(0.2*0.8)/0.05)^2) = 693
    z90 = 1.6448536269514722
    assert (
        label_budget(0.05, p=0.2, alpha=0.1)["human_only"]["n"]
        == math.ceil((2 * z90 * 0.4 / 0.05) ** 2)
        == 693
    )
    assert label_budget(0.2, variance=4.0)["human_only"]["n"] == math.ceil((2 * Z95 * 2 / 0.2) ** 2)


def test_budget_ppi_given_variances_by_hand():
    # residual variance 0.05, judge variance 0.24, N = 10000, width 0.04
    half2 = (0.04 / (2 * Z95)) ** 2
    n = math.ceil(0.05 / (half2 - 0.24 / 10000))
    out = label_budget(0.04, residual_var=0.05, judge_var=0.24, n_unlabeled=10000)
    assert out["ppi"]["n"] == n
    # the n it gives reaches the width: 2 z sqrt(res/n + judge/N) <= w, and n - 1 does not
    assert 2 * Z95 * math.sqrt(0.05 / n + 0.24 / 10000) <= 0.04
    assert 2 * Z95 * math.sqrt(0.05 / (n - 1) + 0.24 / 10000) > 0.04
    # N unbounded: only the residual term
    assert label_budget(0.04, residual_var=0.05)["ppi"]["n"] == math.ceil(
        (2 * Z95 * math.sqrt(0.05) / 0.04) ** 2
    )
    # too few unlabelled items: unreachable, said so
    none = label_budget(0.01, residual_var=0.05, judge_var=0.25, n_unlabeled=1000)
    assert none["ppi"]["n"] is None and "no number of labels" in none["ppi"]["reason"]


def test_budget_from_pilot_matches_ppi_widths():
    y, yhat, yhat_u = synthetic(11, 400, 20000, "binary")
    out = label_budget(0.06, pilot=(y, yhat), n_unlabeled=yhat_u.size)
    res = float(np.var(y - yhat, ddof=1))
    assert out["ppi"]["residual_var"] == pytest.approx(res)
    tuned = out["ppi_tuned"]
    assert tuned["n"] <= out["ppi"]["n"]  # PPI++ never needs more than PPI (lam = 1 is allowed)
    assert tuned["n"] <= math.ceil((2 * Z95 / 0.06) ** 2 * tuned["var_y"])  # nor more than human-only
    assert 0.0 <= tuned["lam"] <= 1.0
    # a judge that is right 80% of the time cuts the worst-case human-only budget
    assert out["ppi"]["n"] < out["human_only"]["n"]


def test_budget_bad_input():
    with pytest.raises(ValueError, match="target_width"):
        label_budget(0)
    with pytest.raises(ValueError, match="judge_var is needed"):
        label_budget(0.1, residual_var=0.1, n_unlabeled=100)
