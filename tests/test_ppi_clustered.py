"""PPI clustered by query (issue #39, items 1, 3 and 7): hand-computed figures on 3 queries, today's
figures when every item is its own query, the tuned lambda, the weak note, random or said so, and a
fixed-seed run of bench/ppi_clustered.py."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import t as student_t

from bench.ppi_clustered import simulate
from calibration.stats.ppi import ppi_mean, ppi_or_reason

# 6 labelled items in queries A (3), B (2), C (1); 4 judge-only items in queries u1, u2 (2 each)
Y = [1, 0, 1, 1, 1, 0]
YHAT = [1, 0, 0, 1, 1, 0]
Q = ["A", "A", "A", "B", "B", "C"]
YHAT_U = [1, 0, 1, 1]
Q_U = ["u1", "u1", "u2", "u2"]


def test_cluster_robust_variance_by_hand_on_three_queries() -> None:
    """lam = 1: r = Y - Yhat = (0,0,1,0,0,0), mean 1/6; per-query sums of r - 1/6: A 1/2, B -1/3,
    C -1/6, squares 14/36; k_l = 3/2 * 5/6 = 5/4, V_l = 5/4 * 14/36 / 6^2 = 35/2592. Judge-only:
    mean 3/4, sums u1 -1/2, u2 1/2, squares 1/2; k_u = 2/1 * 3/4 = 3/2, V_u = 3/2 * 1/2 / 4^2 = 3/64.
    No shared query: no cross term. df = min(3, 2) - 1 = 1 (both parts clustered, lambda 1)."""
    out = ppi_mean(Y, YHAT, YHAT_U, lam=1.0, clusters_labeled=Q, clusters_unlabeled=Q_U)
    se = math.sqrt(35 / 2592 + 3 / 64)
    t1 = float(student_t.ppf(0.975, 1))
    assert out["estimate"] == pytest.approx(3 / 4 + 1 / 6, abs=1e-12)
    assert out["se"] == pytest.approx(se, abs=1e-12)
    assert out["ci"] == pytest.approx([11 / 12 - t1 * se, 11 / 12 + t1 * se], abs=1e-12)
    # people only: Y mean 2/3, sums A 0, B 2/3, C -2/3, squares 8/9: V = 5/4 * 8/9 / 36 = 5/162, t(2)
    h = math.sqrt(5 / 162)
    t2 = float(student_t.ppf(0.975, 2))
    assert out["human_only"]["se"] == pytest.approx(h, abs=1e-12)
    assert out["human_only"]["ci"] == pytest.approx([2 / 3 - t2 * h, 2 / 3 + t2 * h], abs=1e-12)
    design = out["design"]
    assert (design["queries"], design["items"], design["items_per_query"]) == (3, 6, [1, 2.0, 3])
    assert (design["unlabeled_queries"], design["unlabeled_items"], design["shared_queries"]) == (2, 4, 0)
    assert design["clustered"] and design["df"] == 1 and design["critical"] == "t(1)"
    # design effect: over ppi_py's item-level variance var0(r)/6 + var0(Yhat_u)/4 = 5/216 + 3/64
    assert design["design_effect"] == pytest.approx((35 / 2592 + 3 / 64) / (5 / 216 + 3 / 64), abs=1e-12)
    assert design["human_design_effect"] == pytest.approx((5 / 162) / ((2 / 9) / 6), abs=1e-12)


def test_a_shared_query_adds_the_cross_term() -> None:
    q_u = ["A", "A", "B", "D"]  # the judge-only items share queries A and B
    out = ppi_mean(Y, YHAT, YHAT_U, lam=1.0, clusters_labeled=Q, clusters_unlabeled=q_u)
    # by query over A, B, C, D: a = (1/2, -1/3, -1/6, 0), c = (-1/2, 1/4, 0, 1/4); k_l = 5/4,
    # k_u = 3/2 * 3/4 = 9/8 (3 queries, 4 items)
    a = np.array([1 / 2, -1 / 3, -1 / 6, 0.0])
    c = np.array([-1 / 2, 1 / 4, 0.0, 1 / 4])
    se2 = float(np.sum((math.sqrt(5 / 4) * a / 6 + math.sqrt(9 / 8) * c / 4) ** 2))
    assert out["se"] == pytest.approx(math.sqrt(se2), abs=1e-12)
    assert out["design"]["shared_queries"] == 2 and out["design"]["df"] == 2


@pytest.mark.parametrize("lam", [None, 1.0, 0.5, 0.0])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_each_item_its_own_query_gives_todays_figures(lam, seed) -> None:
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, 40).astype(float)
    yhat = np.where(rng.random(40) < 0.8, y, 1 - y)
    yhat_u = rng.random(300)
    today = ppi_mean(y, yhat, yhat_u, lam=lam)
    own = ppi_mean(
        y,
        yhat,
        yhat_u,
        lam=lam,
        clusters_labeled=[f"q{i}" for i in range(40)],
        clusters_unlabeled=range(100, 400),
    )
    for key in ("estimate", "se", "lam"):
        assert own[key] == pytest.approx(today[key], abs=1e-12)
    assert own["ci"] == pytest.approx(today["ci"], abs=1e-12)
    assert own["human_only"]["ci"] == pytest.approx(today["human_only"]["ci"], abs=1e-12)
    assert own["human_only"]["se"] == pytest.approx(today["human_only"]["se"], abs=1e-12)
    assert own["design"]["design_effect"] == pytest.approx(1.0, abs=1e-12) or lam == 0.0
    assert own["design"]["critical"] == "normal" and not own["design"]["clustered"]
    assert today["design"]["queries"] is None and today["design"]["design_effect"] is None


def test_the_tuned_lambda_minimises_the_clustered_variance() -> None:
    rng = np.random.default_rng(5)
    q = np.repeat(np.arange(8), 6)
    b = rng.normal(0, 1.5, 8)
    y = (rng.random(48) < 1 / (1 + np.exp(-b[q]))).astype(float)
    yhat = np.where(rng.random(48) < 0.8, y, 1 - y)
    q_u = np.repeat(np.arange(8), 30)
    yhat_u = (rng.random(240) < 1 / (1 + np.exp(-b[q_u]))).astype(float)
    tuned = ppi_mean(y, yhat, yhat_u, clusters_labeled=q, clusters_unlabeled=q_u)
    grid = [
        ppi_mean(y, yhat, yhat_u, lam=x, clusters_labeled=q, clusters_unlabeled=q_u)["se"]
        for x in np.linspace(0, 1, 101)
    ]
    assert tuned["lam_tuned"] and 0.0 <= tuned["lam"] <= 1.0
    assert tuned["se"] <= min(grid) + 1e-12


def test_the_weak_note_and_whom_to_prefer() -> None:
    rng = np.random.default_rng(7)
    y = rng.integers(0, 2, 16).astype(float)
    noise = rng.integers(0, 2, 16).astype(float)  # a judge unrelated to people
    out = ppi_mean(y, noise, rng.integers(0, 2, 200))
    r = float(np.corrcoef(y, noise)[0, 1])
    assert out["correlation"] == pytest.approx(r)
    assert out["weak_threshold"] == pytest.approx(1 / math.sqrt(14))
    if abs(r) < 1 / math.sqrt(14):
        assert out["weak_note"].startswith(
            f"the judge's correlation with people, r = {r:.2f} over 16 labelled items"
        )
        assert "is under 1/sqrt(n - 2) = 0.267: PPI cannot narrow the interval at this n" in out["weak_note"]
    else:
        assert "not narrower than the people-only one" in out["weak_note"]
    assert out["prefer"] == "people"
    good = np.where(rng.random(16) < 0.95, y, 1 - y)
    strong = ppi_mean(y, good, rng.integers(0, 2, 400))
    assert strong["weak_note"] is None and strong["prefer"] == "ppi"
    constant = ppi_mean(y, np.ones(16), np.ones(30))
    assert constant["correlation"] is None and "the same value" in constant["weak_note"]
    # clustered: the rule reads the effective n (n / the people-only design effect)
    q = [i // 4 for i in range(16)]
    by_query = ppi_mean(
        [1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, 0, 0, 0, 0, 1], noise, np.ones(30), clusters_labeled=q
    )
    assert by_query["prefer"] == "people" and "in 4 queries" in by_query["weak_note"]


def test_random_or_said_so() -> None:
    chosen = ppi_or_reason(Y, YHAT, YHAT_U, drawn_at_random=False, how="6 traces picked on the review page")
    assert chosen["undefined_reason"] == (
        "the labels were chosen, not drawn at random (6 traces picked on the review page): no PPI correction"
    )
    assert "estimate" not in chosen and "ci" not in chosen
    assert chosen["human_only"] == {"estimate": pytest.approx(2 / 3), "n": 6}
    assert chosen["judge_only"] == 0.75 and chosen["prefer"] is None
    unknown = ppi_or_reason(Y, YHAT, YHAT_U, drawn_at_random=None, how="an imported file")
    assert "not known to be drawn at random (an imported file)" in unknown["undefined_reason"]
    drawn = ppi_or_reason(Y, YHAT, YHAT_U, drawn_at_random=True, how="the review sample", clusters_labeled=Q)
    assert drawn["estimate"] == ppi_mean(Y, YHAT, YHAT_U, clusters_labeled=Q)["estimate"]
    assert (
        drawn["judge_only"] == 0.75 and drawn["drawn_at_random"] is True and "undefined_reason" not in drawn
    )
    one = ppi_or_reason(
        Y, YHAT, YHAT_U, drawn_at_random=True, how="the review sample", clusters_labeled=["A"] * 6
    )
    assert "every labelled item is in one query" in one["undefined_reason"] and "estimate" not in one
    with pytest.raises(ValueError, match="at least 2 queries"):
        ppi_mean(Y, YHAT, YHAT_U, clusters_labeled=["A"] * 6)
    with pytest.raises(ValueError, match="one query per item"):
        ppi_mean(Y, YHAT, YHAT_U, clusters_labeled=["A", "B"])


def test_the_bench_at_a_fixed_seed() -> None:
    """10 queries x 8 labelled items, strong query effects: the item-level interval undercovers, the
    clustered one is near 95% (bench/ppi_clustered.py at 2,000 samples: docs/review.md)."""
    _, (row,) = simulate(["10x8"], samples=300, seed=3)
    assert row["coverage"]["ppi_item"] < 0.80 and row["coverage"]["people_item"] < 0.85
    assert row["coverage"]["ppi_query"] >= 0.88 and row["coverage"]["people_query"] >= 0.88
    assert row["median_width"]["ppi_query"] > 1.5 * row["median_width"]["ppi_item"]
