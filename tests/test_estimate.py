"""Estimates of what the pooled judgments missed (calibration/estimate*.py): by hand, on the
worked example's q_broad, and a coverage simulation on the fully judged Cranfield collection."""

from __future__ import annotations

import ast
import json
import math
import re
import time
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from scipy import stats
from scipy.signal import fftconvolve

from annotation.formats.golden import read_golden
from annotation.formats.rankings import read_rankings
from annotation.formats.trec import read_qrels
from bench.cranfield import parse
from calibration.estimate import (
    INTERVALS,
    LabelledStratum,
    aggregate_recall,
    estimate_recall_at_k,
    estimate_rel,
    estimate_unjudged_relevant,
    strata_from_ids,
)
from calibration.estimate.intervals import bb_pmf as _bb_pmf
from calibration.estimate.intervals import ratio_quantile as _ratio_q
from calibration.estimate.intervals import spend_alpha as _spend
from tests.conftest import EXAMPLE, ROOT, shared_dir

Z95 = 1.959963984540054


def stratum(name, big_n, labels, **extra):
    return {"stratum": name, "N": big_n, "labels": list(labels), **extra}


# ------------------------------------------------------------------ by hand


def test_two_strata_by_hand():
    # A: 2 relevant of 5 sampled from 20 -> 20 * 2/5 = 8; s^2 = 2*3/(5*4) = 0.3,
    #    variance 20^2 (1 - 5/20) 0.3 / 5 = 18.
    # B: 1 relevant of 10 sampled from 100 -> 100 * 1/10 = 10; s^2 = 1*9/(10*9) = 0.1,
    #    variance 100^2 (1 - 10/100) 0.1 / 10 = 90.
    strata = [stratum("21-50", 20, [1, 1, 0, 0, 0]), stratum("51-100", 100, [1] + [0] * 9)]
    got = estimate_unjudged_relevant(strata)
    assert got["estimate"] == pytest.approx(18.0)
    assert got["variance"] == pytest.approx(108.0)
    assert got["se"] == pytest.approx(math.sqrt(108.0))
    assert got["n_sampled"] == 15 and got["n_sampled_relevant"] == 3
    assert got["N_unjudged"] == 120
    assert got["bounds"] == [3.0, 3.0 + 15 + 90]
    a, b = got["strata"]
    assert (a["estimate"], a["variance"], a["pi"], a["relevant_sampled"]) == (
        8.0,
        pytest.approx(18.0),
        0.25,
        2,
    )
    assert (b["estimate"], b["variance"], b["pi"], b["relevant_sampled"]) == (
        10.0,
        pytest.approx(90.0),
        0.1,
        1,
    )
    low, high = got["ci"]
    assert 3 <= low <= 18 <= high <= 108
    assert got["reason"] is None and got["interval"] == "midp" and got["alpha"] == 0.05
    # |Rel| adds the judged part, known exactly
    rel = estimate_rel(6, strata)
    assert rel["estimate"] == pytest.approx(24.0)
    assert rel["ci"] == [6 + low, 6 + high]
    assert rel["judged_relevant"] == 6 and rel["n_sampled"] == 15 and rel["n_sampled_relevant"] == 3
    # Wald: estimate -/+ z se, kept within what the sample proves
    wald = estimate_unjudged_relevant(strata, interval="wald")["ci"]
    assert wald == [
        pytest.approx(max(3.0, 18 - Z95 * math.sqrt(108))),
        pytest.approx(18 + Z95 * math.sqrt(108)),
    ]


def test_grades_and_min_grade():
    graded = [stratum("s", 10, [0, 1, 2, 3, 0])]
    assert estimate_unjudged_relevant(graded)["n_sampled_relevant"] == 3
    assert estimate_unjudged_relevant(graded, min_grade=2)["n_sampled_relevant"] == 2
    assert estimate_unjudged_relevant([stratum("s", 10, [True, False])])["estimate"] == 5.0
    # a tuple (name, N, n, labels) is the same stratum
    assert estimate_unjudged_relevant([("s", 10, 5, [0, 1, 2, 3, 0])])["estimate"] == 6.0


@pytest.mark.parametrize("interval", INTERVALS)
def test_everything_sampled_is_exact(interval):
    strata = [stratum("a", 4, [1, 0, 1, 1]), stratum("b", 3, [0, 0, 0]), stratum("c", 0, [])]
    got = estimate_unjudged_relevant(strata, interval=interval)
    assert got["estimate"] == 3.0 and got["variance"] == 0.0 and got["ci"] == [3.0, 3.0]
    assert [s["ci"] for s in got["strata"]] == [[3.0, 3.0], [0.0, 0.0], [0.0, 0.0]]
    assert got["strata"][2]["pi"] is None  # an empty stratum has no inclusion probability


def test_no_unjudged_candidates_is_zero_exactly():
    got = estimate_rel(5, [])
    assert got["estimate"] == 5 and got["ci"] == [5, 5] and got["n_sampled"] == 0


def test_unsampled_stratum_is_undefined_not_zero():
    got = estimate_rel(5, [stratum("21-50", 30, [0, 1, 0]), stratum("random", 500, [])])
    assert got["estimate"] is None and got["ci"] is None
    assert "'random' (N=500)" in got["reason"] and "undefined" in got["reason"]
    assert got["unjudged"]["strata"][1]["estimate"] is None
    assert got["unjudged"]["strata"][0]["ci"] is not None  # the sampled stratum still has its own
    recall = estimate_recall_at_k(
        5,
        3,
        [
            stratum("a", 30, [0, 1, 0], in_top_k=[1, 0, 0], N_top_k=4),
            stratum("b", 9, [], in_top_k=[], N_top_k=0),
        ],
        10,
    )
    assert recall["estimate"] is None and recall["ci"] is None and "'b' (N=9)" in recall["reason"]


def test_one_sampled_document_uses_the_variance_bound():
    got = estimate_unjudged_relevant([stratum("deep", 50, [0]), stratum("top", 10, [1, 0, 0, 1])])
    deep = got["strata"][0]
    assert deep["variance"] == pytest.approx(50**2 * (1 - 1 / 50) * 0.25)
    assert len(got["notes"]) == 1 and "'deep'" in got["notes"][0] and "1/4" in got["notes"][0]
    assert got["ci"][1] > 30  # one non-relevant document says little about 49 others


def test_beta_binomial_identity_behind_the_exact_interval():
    """P(Y >= y | T = t) = P(y + BetaBinomial(N - n, y, n - y + 1) <= t), and
    P(Y >= y + 1 | T = t) = P(y + BetaBinomial(N - n, y + 1, n - y) < t), for the
    hypergeometric Y (relevant among n drawn from N holding t relevant)."""
    rng = np.random.default_rng(1)
    for _ in range(60):
        big_n = int(rng.integers(2, 150))
        n = int(rng.integers(1, big_n))
        y = int(rng.integers(0, n + 1))
        t = np.arange(big_n + 1)
        rest = big_n - n

        def cdf_at(pmf, shift, t=t, rest=rest):  # P(shift + B <= t) for every t
            c = np.concatenate([np.zeros(1), np.cumsum(pmf)])
            return c[np.clip(t - shift + 1, 0, rest + 1)]

        at_least_y = stats.hypergeom.sf(y - 1, big_n, t, n)
        assert np.allclose(at_least_y, cdf_at(_bb_pmf(rest, y, n - y + 1), y), atol=1e-9)
        above_y = stats.hypergeom.sf(y, big_n, t, n)
        assert np.allclose(above_y, cdf_at(_bb_pmf(rest, y + 1, n - y), y + 1), atol=1e-9)


def _hypergeom_interval(big_n, n, y, alpha=0.05, mid=False):
    """The interval by brute force from scipy's hypergeometric law: every t that a level-alpha
    test does not reject. The test splits alpha/2 + alpha/2 between the tails, except where
    the design leaves one tail empty: t at or below the upper bound of the sample that finds
    nothing (no sample can put the upper bound below t), and t at or above the lower bound of
    the sample that finds only relevant documents; there the other tail gets all of alpha."""
    t = np.arange(big_n + 1)
    w = 0.5 if mid else 1.0

    def tails(yy):  # P(Y >= yy | t), P(Y <= yy | t); mid-p counts P(Y = yy) half
        half = (1 - w) * stats.hypergeom.pmf(yy, big_n, t, n)
        return stats.hypergeom.sf(yy - 1, big_n, t, n) - half, stats.hypergeom.cdf(yy, big_n, t, n) - half

    def equal_tailed(yy):
        up, down = tails(yy)
        return t[up > alpha / 2 + 1e-12].min(), t[down > alpha / 2 + 1e-12].max()

    none_found, all_found = equal_tailed(0)[1], equal_tailed(n)[0]
    if all_found <= none_found + 1:
        return tuple(float(v) for v in equal_tailed(y))
    up, down = tails(y)
    ok = np.where(
        t <= none_found,
        up > alpha + 1e-12,
        np.where(t >= all_found, down > alpha + 1e-12, (up > alpha / 2 + 1e-12) & (down > alpha / 2 + 1e-12)),
    )
    return float(t[ok].min()), float(t[ok].max())


def test_one_stratum_matches_the_hypergeometric_intervals():
    """For one stratum, interval="exact" is the exact hypergeometric interval (the inversion of
    level-alpha tests, equal-tailed where both tails can reject); "midp" is its mid-p version or
    at most one document wider at either end."""
    rng = np.random.default_rng(2)
    for _ in range(150):
        big_n = int(rng.integers(2, 200))
        n = int(rng.integers(1, big_n))
        y = int(rng.integers(0, n + 1))
        labels = [1] * y + [0] * (n - y)
        exact = estimate_unjudged_relevant([stratum("s", big_n, labels)], interval="exact")["ci"]
        assert exact == list(_hypergeom_interval(big_n, n, y)), (big_n, n, y)
        midp = estimate_unjudged_relevant([stratum("s", big_n, labels)])["ci"]
        low, high = _hypergeom_interval(big_n, n, y, mid=True)
        assert low - 1 <= midp[0] <= low and high <= midp[1] <= high + 1, (big_n, n, y, midp, low, high)
    # the rule matters: for a sparse stratum it narrows the live side of the Clopper-Pearson interval
    assert estimate_unjudged_relevant([stratum("s", 167, [1] * 4 + [0] * 40)], interval="exact")["ci"] == [
        7.0,
        33.0,
    ]


@pytest.mark.slow  # coverage computed over every true count
@pytest.mark.parametrize("big_n,n", [(40, 10), (167, 44), (300, 30), (1284, 30)])
def test_exact_interval_covers_every_truth(big_n, n, figure):
    """The exact one-stratum interval is a Neyman construction: for every true count T its
    coverage, summed over the hypergeometric law of the sample, is at least 95%. The
    equal-tailed (Clopper-Pearson type) interval covers more than it claims where one side
    cannot miss; the mid-p interval is reported beside it (not guaranteed; near 95% on average)."""
    cis = {}
    for kind in ("exact", "midp"):
        cis[kind] = [
            estimate_unjudged_relevant([stratum("s", big_n, [1] * y + [0] * (n - y))], interval=kind)["ci"]
            for y in range(n + 1)
        ]
    equal = [_equal_tailed_exact(big_n, n, y) for y in range(n + 1)]
    ys = np.arange(n + 1)
    worst, mean = {}, {}
    for name, ci in (("exact", cis["exact"]), ("midp", cis["midp"]), ("equal-tailed", equal)):
        lo, hi = np.array([c[0] for c in ci]), np.array([c[1] for c in ci])
        cover = np.array(
            [stats.hypergeom.pmf(ys, big_n, t, n)[(lo <= t) & (t <= hi)].sum() for t in range(big_n + 1)]
        )
        worst[name], mean[name] = cover.min(), cover.mean()
    figure(
        f"one stratum N={big_n}, n={n}, coverage over every true T: exact min {worst['exact']:.3f} mean "
        f"{mean['exact']:.3f}; equal-tailed min {worst['equal-tailed']:.3f} mean {mean['equal-tailed']:.3f}; "
        f"mid-p min {worst['midp']:.3f} mean {mean['midp']:.3f}"
    )
    assert worst["exact"] >= 0.95 - 1e-9
    assert mean["exact"] <= mean["equal-tailed"] + 1e-12


def _equal_tailed_exact(big_n, n, y, alpha=0.05):
    t = np.arange(big_n + 1)
    up, down = stats.hypergeom.sf(y - 1, big_n, t, n), stats.hypergeom.cdf(y, big_n, t, n)
    return float(t[up > alpha / 2 + 1e-12].min()), float(t[down > alpha / 2 + 1e-12].max())


def test_spend_by_hand():
    """Tails (alpha/2, alpha/2) where both sides can miss, alpha on the live side where the
    design rules the other out: low = (bound at alpha/2, at alpha), high likewise."""
    low, high = (2.0, 3.0), (20.0, 17.0)
    assert _spend(low, high, 10.0, 50.0) == [3.0, 20.0]  # 3 <= 10: no sample's upper bound is below 3
    assert _spend(low, high, 10.0, 15.0) == [3.0, 17.0]  # and 17 >= 15: none's lower bound above 17
    assert _spend(low, high, 2.5, 50.0) == [2.5, 20.0]  # t in (2.5, 3): both sides can reject, at alpha/2
    assert _spend(low, high, 1.0, 50.0) == [2.0, 20.0]
    assert _spend(low, high, 10.0, 19.0) == [3.0, 19.0]
    assert _spend(low, high, 30.0, 30.0) == [2.0, 20.0]  # too small a design: equal tails


def test_ratio_quantile_matches_brute_force():
    rng = np.random.default_rng(3)
    for _ in range(200):
        px = rng.random(int(rng.integers(1, 6)))
        py = rng.random(int(rng.integers(1, 12)))
        px, py = px / px.sum(), py / py.sum()
        xo, yo = int(rng.integers(0, 4)), int(rng.integers(1, 9))
        xs, ys = np.meshgrid(xo + np.arange(len(px)), yo + np.arange(len(py)), indexing="ij")
        r = (xs / (xs + ys)).ravel()
        p = np.outer(px, py).ravel()
        order = np.argsort(r, kind="stable")
        r, cdf = r[order], np.cumsum(p[order])
        atoms, last = np.unique(r, return_index=False), None
        cdf_at = np.array([cdf[np.searchsorted(r, a, side="right") - 1] for a in atoms])
        for level, strict in ((0.025, True), (0.975, False), (0.5, True)):
            want = (
                atoms[np.argmax(cdf_at > level + 1e-12)]
                if strict
                else atoms[np.argmax(cdf_at >= level - 1e-12)]
            )
            last = _ratio_q((xo, px), (yo, py), level, strict)
            assert last == pytest.approx(want, abs=1e-12)


# ------------------------------------------------------------------ recall@k


def test_recall_by_hand():
    # judged pool: 4 relevant, 2 of them in the top 10.
    # stratum "11-30": 20 candidates, 5 in the top 10; 5 sampled, 2 relevant, one of them in the top 10.
    # stratum "31-100": 70 candidates, none in the top 10; 7 sampled, 1 relevant.
    strata = [
        stratum("11-30", 20, [1, 1, 0, 0, 0], in_top_k=[True, False, True, False, False], N_top_k=5),
        stratum("31-100", 70, [1, 0, 0, 0, 0, 0, 0], in_top_k=[False] * 7, N_top_k=0),
    ]
    got = estimate_recall_at_k(4, 2, strata, 10)
    # |Rel| (Horvitz-Thompson): 4 + 20 * 2/5 + 70 * 1/7 = 4 + 8 + 10 = 22
    assert got["rel"]["estimate"] == pytest.approx(22.0)
    # recall: "11-30" splits into its 5 top-10 candidates (2 sampled, 1 relevant) and 15 others
    # (3 sampled, 1 relevant): X = 2 + 5 * 1/2 = 4.5; Y = 2 + 15 * 1/3 + 70 * 1/7 = 17
    assert got["numerator"] == {
        "estimate": pytest.approx(4.5),
        "judged": 2,
        "unjudged_estimate": pytest.approx(2.5),
    }
    assert got["denominator"] == pytest.approx(21.5)
    r = 4.5 / 21.5
    assert got["estimate"] == pytest.approx(r)
    assert got["recall_judged_only"] == pytest.approx(0.5)  # what the labels alone say
    assert got["recall_ceiling"] == pytest.approx(10 / 22)
    assert got["precision_ceiling"] == 1.0
    rel_low, rel_high = got["rel"]["ci"]
    assert got["recall_ceiling_ci"] == [
        pytest.approx(min(1, 10 / rel_high)),
        pytest.approx(min(1, 10 / rel_low)),
    ]
    assert got["precision_ceiling_ci"] == [
        pytest.approx(min(1, rel_low / 10)),
        pytest.approx(min(1, rel_high / 10)),
    ]
    low, high = got["ci"]
    assert 0 < low < r < high < 1
    assert (got["n_sampled"], got["n_sampled_relevant"]) == (12, 3)
    assert (got["n_sampled_in_top_k"], got["n_sampled_relevant_in_top_k"], got["N_unjudged_in_top_k"]) == (
        2,
        1,
        5,
    )
    assert got["notes"] == []
    # delta method: V(X) = 5^2 (1 - 2/5) (1/2) / 2 = 3.75 (s^2 = 1*1/(2*1));
    # V(Y) = 15^2 (1 - 3/15) (1/3) / 3 + 70^2 (1 - 7/70) (1/7) / 7 = 20 + 90 = 110
    se = math.sqrt((1 - r) ** 2 * 3.75 + r**2 * 110) / 21.5
    assert got["se"] == pytest.approx(se)
    wald = estimate_recall_at_k(4, 2, strata, 10, interval="wald")["ci"]
    assert wald == [pytest.approx(max(0, r - Z95 * se)), pytest.approx(r + Z95 * se)]


def test_recall_interval_when_only_one_side_is_uncertain():
    """With nothing unknown outside the top k, recall = X / (X + Y) with Y known: its bounds are
    the numerator's count bounds mapped through x / (x + Y), where the rule that spends alpha
    on one side applies to neither (here). The recall's rule is bounded from the design alone,
    before the census of the second stratum shows Y = 3, so it applies less often: with
    2 relevant of 5 sampled, the count's lower bound spends alpha and the recall's does not."""
    strata = [
        stratum("11-30", 20, [1] * 4 + [0] * 6, in_top_k=[True] * 10, N_top_k=20),
        stratum("31-100", 10, [0, 1] + [0] * 8, in_top_k=[False] * 10, N_top_k=0),
    ]
    got = estimate_recall_at_k(3, 1, strata, 25)
    x_low, x_high = estimate_unjudged_relevant([stratum("x", 20, [1] * 4 + [0] * 6)])["ci"]
    assert (x_low, x_high) == (4.0, 12.0)
    sparse = [
        stratum("11-30", 20, [1, 1, 0, 0, 0], in_top_k=[True] * 5, N_top_k=20),
        stratum("31-100", 10, [0, 1] + [0] * 8, in_top_k=[False] * 10, N_top_k=0),
    ]
    count_low = estimate_unjudged_relevant([stratum("x", 20, [1, 1, 0, 0, 0])])["ci"][0]
    assert count_low == 3 and estimate_recall_at_k(3, 1, sparse, 25)["ci"][0] == (1 + 2) / (1 + 2 + 3)
    y = 2 + 1  # judged relevant outside the top k + the census stratum's one
    assert got["ci"] == [
        pytest.approx((1 + x_low) / (1 + x_low + y)),
        pytest.approx((1 + x_high) / (1 + x_high + y)),
    ]


def test_recall_undefined_without_any_relevant():
    strata = [stratum("s", 40, [0] * 10, in_top_k=[True] * 3 + [False] * 7, N_top_k=8)]
    got = estimate_recall_at_k(0, 0, strata, 10)
    assert got["estimate"] is None and got["ci"] is None
    assert "no relevant document" in got["reason"]
    assert got["rel"]["estimate"] == 0 and got["rel"]["ci"][0] == 0 and got["rel"]["ci"][1] > 0
    assert got["recall_judged_only"] is None and got["recall_ceiling"] is None
    assert got["n_sampled"] == 10 and got["n_sampled_relevant"] == 0


def test_recall_needs_the_top_k_fields():
    with pytest.raises(ValueError, match="'N_top_k'"):
        estimate_recall_at_k(3, 1, [stratum("s", 10, [1])], 5)
    with pytest.raises(ValueError, match="N_top_k=9 impossible"):
        estimate_recall_at_k(3, 1, [stratum("s", 10, [1, 0], in_top_k=[0, 0], N_top_k=9)], 10)
    with pytest.raises(ValueError, match="exceed k=5"):
        estimate_recall_at_k(3, 3, [stratum("s", 10, [1, 0], in_top_k=[1, 0], N_top_k=3)], 5)
    with pytest.raises(ValueError, match="exceeds judged_relevant"):
        estimate_recall_at_k(1, 2, [], 5)


# ------------------------------------------------------------------ the worked example's q_broad


def _q_broad():
    grades = read_golden(EXAMPLE / "golden.yaml").grades["q_broad"]
    truth = read_qrels(EXAMPLE / "truth.qrels").grades["q_broad"]
    ranking = read_rankings(EXAMPLE / "run.jsonl").rankings()["q_broad"]
    corpus = [
        json.loads(line)["id"] for line in (EXAMPLE / "corpus.jsonl").read_text().splitlines() if line.strip()
    ]
    return grades, truth, ranking, corpus


def test_q_broad_full_sample_recovers_the_truth():
    grades, truth, ranking, corpus = _q_broad()
    assert len(corpus) == 24 and len(grades) == 8 and len(truth) == 12
    judged_relevant = sum(1 for g in grades.values() if g >= 1)
    top5 = ranking[:5]
    judged_top = sum(1 for d in top5 if grades.get(d, 0) >= 1)
    assert (judged_relevant, judged_top) == (8, 4)  # recall@5 against the labels: 4/8 = 0.500
    unjudged = [d for d in corpus if d not in grades]  # 16 candidates, one stratum, all sampled
    labels = {d: truth.get(d, 0) for d in unjudged}
    strata = strata_from_ids({"corpus minus judged": unjudged}, labels, top_k=top5)
    assert strata[0]["N"] == strata[0]["n"] == 16 and strata[0]["N_top_k"] == 1  # x1
    rel = estimate_rel(judged_relevant, strata)
    assert rel["estimate"] == 12 and rel["ci"] == [12, 12] and rel["se"] == 0
    assert rel["n_sampled"] == 16 and rel["n_sampled_relevant"] == 4  # s3, s4, x1, x2
    recall = estimate_recall_at_k(judged_relevant, judged_top, strata, 5)
    assert recall["estimate"] == pytest.approx(5 / 12)  # the yaml's recall_true 0.4166666667
    assert recall["ci"] == [pytest.approx(5 / 12), pytest.approx(5 / 12)]
    assert recall["recall_judged_only"] == 0.5
    assert recall["recall_ceiling"] == pytest.approx(5 / 12)  # min(1, 5/12): not 0.625 as with 8
    assert recall["precision_ceiling"] == 1.0


def test_q_broad_half_sample():
    grades, truth, ranking, corpus = _q_broad()
    unjudged = [d for d in corpus if d not in grades]
    sample = ["s3", "s4", "d1", "d2", "d3", "p1", "p2", "x3"]  # 8 of 16: two relevant (s3, s4)
    strata = strata_from_ids(
        {"corpus minus judged": unjudged}, {d: truth.get(d, 0) for d in sample}, top_k=ranking[:5]
    )
    rel = estimate_rel(8, strata)
    # 16 * 2/8 = 4 unjudged relevant: 12; variance 16^2 (1 - 1/2) s^2 / 8, s^2 = 2*6/(8*7)
    assert rel["estimate"] == 12
    assert rel["se"] ** 2 == pytest.approx(256 * 0.5 * (12 / 56) / 8)
    low, high = rel["ci"]
    assert 10 <= low <= 12 <= high <= 8 + 2 + 8  # at least the 2 found; at most all 8 unsampled
    recall = estimate_recall_at_k(8, 4, strata, 5)
    # x1, the one unjudged top-5 candidate, was not sampled: it takes the stratum's rate 2/8;
    # the 15 others hold 15 * 2/8 = 3.75: recall (4 + 0.25) / (8 + 0.25 + 3.75) = 4.25 / 12
    assert recall["numerator"]["estimate"] == pytest.approx(4.25)
    assert recall["denominator"] == pytest.approx(12)
    assert recall["estimate"] == pytest.approx(4.25 / 12)
    assert "'corpus minus judged'" in recall["notes"][0]
    assert recall["ci"][0] <= 5 / 12 <= recall["ci"][1]  # the truth is inside


def test_q_broad_frame_of_the_run_only():
    """Candidates from the run's ranks beyond the pool only (x1 and d1): |Rel| counts what the
    strata can reach, so s3, s4 and x2, outside every stratum, stay missing (9, not 12)."""
    grades, truth, ranking, _ = _q_broad()
    beyond = [d for d in ranking if d not in grades]
    assert beyond == ["x1", "d1"]
    strata = strata_from_ids({"run ranks beyond the pool": beyond}, {d: truth.get(d, 0) for d in beyond})
    assert estimate_rel(8, strata)["estimate"] == 9


# ------------------------------------------------------------------ over queries


def test_aggregate_by_hand_and_seeded():
    def q(num, den):  # a census, so the per-query figures are exact
        strata = [stratum("s", 1, [1], in_top_k=[True], N_top_k=1)]
        return estimate_recall_at_k(den - 1, num - 1, strata, 10)

    per_query = {"a": q(1, 2), "b": q(2, 2), "c": q(1, 4), "none": estimate_recall_at_k(0, 0, [], 10)}
    got = aggregate_recall(per_query, seed=7)
    assert got["mean"]["estimate"] == pytest.approx((0.5 + 1.0 + 0.25) / 3)
    assert got["ratio"]["estimate"] == pytest.approx(4 / 8)
    assert (got["ratio"]["numerator"], got["ratio"]["denominator"]) == (4.0, 8.0)
    assert (got["n_queries"], got["n_defined"], got["n_undefined"], got["undefined"]) == (4, 3, 1, ["none"])
    assert got["k"] == 10 and got["n_sampled"] == 3 and got["n_sampled_relevant"] == 3
    low, high = got["mean"]["ci"]
    assert 0.25 <= low <= got["mean"]["estimate"] <= high <= 1.0
    assert got == aggregate_recall(per_query, seed=7)  # seeded: the same figures every time
    assert aggregate_recall([per_query["none"]])["reason"] == "no query with a defined recall estimate"


# ------------------------------------------------------------------ infAP


def test_strata_from_ids():
    candidates = {"21-50": ["a", "b", "c", "d"], "random": ["e", "f", "g"]}
    labels = {"a": 2, "b": 0, "e": 1, "z": 3}  # z: a judged pool document, in no stratum
    got = strata_from_ids(candidates, labels, top_k=["a", "c", "z"])
    assert got == [
        {"stratum": "21-50", "N": 4, "n": 2, "labels": [2, 0], "in_top_k": [True, False], "N_top_k": 2},
        {"stratum": "random", "N": 3, "n": 1, "labels": [1], "in_top_k": [False], "N_top_k": 0},
    ]
    # an explicit sample: a stratum it leaves out has no sample (not "the labelled ones")
    drawn = strata_from_ids(candidates, labels, sampled={"21-50": ["a", "b"]})
    assert drawn[1]["n"] == 0
    assert estimate_unjudged_relevant(drawn)["estimate"] is None


def test_a_million_candidates(monkeypatch):
    """A random-corpus stratum of 10^6 chunks stays exact, and fast: its sums take the FFT
    convolution path (counted here, where a wall-clock bound would depend on the machine)."""
    from calibration.estimate import intervals as estimate_intervals

    ffts = []

    def counted(a, b):
        ffts.append((len(a), len(b)))
        return fftconvolve(a, b)

    monkeypatch.setattr(estimate_intervals, "_fft_convolve", counted)
    estimate_intervals.clear_caches()  # sums cached by an earlier test would skip the convolutions
    strata = [stratum("21-50", 30, [1, 0, 0, 1] + [0] * 6), stratum("corpus", 10**6, [0] * 49 + [1])]
    got = estimate_unjudged_relevant(strata)
    assert got["estimate"] == pytest.approx(6 + 20_000)
    low, high = got["ci"]
    assert got["bounds"][0] < low < got["estimate"] < high < got["bounds"][1]
    assert ffts and max(max(sizes) for sizes in ffts) > 10**5  # the corpus stratum's sum went through the FFT


def test_z_is_scipy_stats_normal_quantile():
    """#42: the intervals' z comes from scipy.special's ndtri, not scipy.stats (~0.7 s to import
    with scipy.signal): the same float as ``scipy.stats.norm.ppf(1 - alpha / 2)``, on usual alphas,
    extreme ones and 5,000 drawn at random."""
    from calibration.estimate.intervals import z_value

    rng = np.random.default_rng(42)
    alphas = [0.05, 0.1, 0.01, 0.001, 1e-9, 0.5, 0.9, 0.999999, *rng.uniform(1e-12, 1 - 1e-12, 5000)]
    assert [z_value(float(a)) for a in alphas] == [float(stats.norm.ppf(1 - a / 2)) for a in alphas]
    assert z_value(0.05) == Z95


def test_an_estimate_loads_neither_scipy_stats_nor_signal():
    """#42: the Metrics page's first audit with an estimate (and ``audit --estimate``) imported
    scipy.stats and scipy.signal, ~0.7 s of CPU, for a normal quantile and a convolution only
    sums of a million candidates need. Now scipy.special alone, until such a sum."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from calibration.estimate import estimate_recall_at_k\n"
        "s = [{'stratum': 'a', 'N': 40, 'labels': [1, 0, 0, 1, 0, 0, 0, 0], 'in_top_k': [True] + [False] * 7,"
        " 'N_top_k': 3}]\n"
        "print(estimate_recall_at_k(4, 2, s, 20)['ci'])\n"
        "print(' '.join(sorted(m for m in sys.modules if m.startswith('scipy.'))))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert done.returncode == 0, done.stderr
    ci, modules = done.stdout.splitlines()
    assert ci.startswith("[") and "scipy.special" in modules.split()
    assert not {"scipy.stats", "scipy.signal"} & set(modules.split())


@pytest.mark.parametrize("seed", range(5))
def test_exact_is_wider_than_midp(seed):
    rng = np.random.default_rng(seed)
    strata = []
    for name, big_n, n in (("a", 25, 10), ("b", 80, 20), ("c", 600, 30)):
        labels = rng.random(n) < 0.15
        top = rng.random(n) < (0.5 if name == "a" else 0.0)
        strata.append(
            stratum(name, big_n, labels, in_top_k=top, N_top_k=int(top.sum()) + (3 if name == "a" else 0))
        )
    midp, exact = (estimate_recall_at_k(4, 2, strata, 20, interval=i) for i in ("midp", "exact"))
    assert exact["ci"][0] <= midp["ci"][0] <= midp["ci"][1] <= exact["ci"][1]
    assert exact["rel"]["ci"][0] <= midp["rel"]["ci"][0] <= midp["rel"]["ci"][1] <= exact["rel"]["ci"][1]


# ------------------------------------------------------------------ input errors


def test_errors_are_loud_and_precise():
    with pytest.raises(ValueError, match=r"stratum '21-50': n=12 sampled exceeds N=10"):
        estimate_unjudged_relevant([{"stratum": "21-50", "N": 10, "labels": [0] * 12}])
    with pytest.raises(ValueError, match=r"n=5 but 3 labels"):
        estimate_unjudged_relevant([{"stratum": "s", "N": 10, "n": 5, "labels": [0, 1, 0]}])
    with pytest.raises(ValueError, match="pi=0.5 disagrees"):
        estimate_unjudged_relevant([{"stratum": "s", "N": 10, "labels": [0, 1, 0], "pi": 0.5}])
    with pytest.raises(ValueError, match="label 'yes'"):
        estimate_unjudged_relevant([stratum("s", 10, ["yes"])])
    with pytest.raises(ValueError, match="appears twice"):
        estimate_unjudged_relevant([stratum("s", 10, [1]), stratum("s", 5, [0])])
    with pytest.raises(ValueError, match="unknown field"):
        estimate_unjudged_relevant([{"stratum": "s", "N": 10, "labels": [1], "weight": 2}])
    with pytest.raises(ValueError, match="N is -1"):
        estimate_unjudged_relevant([stratum("s", -1, [])])
    with pytest.raises(ValueError, match="alpha"):
        estimate_unjudged_relevant([], alpha=1.5)
    with pytest.raises(ValueError, match="interval 'normal'"):
        estimate_unjudged_relevant([], interval="normal")
    with pytest.raises(ValueError, match="in stratum 'a' and in 'b'"):
        strata_from_ids({"a": ["d1", "d2"], "b": ["d2"]}, {})
    with pytest.raises(ValueError, match="have no label"):
        strata_from_ids({"a": ["d1", "d2"]}, {}, sampled={"a": ["d1"]})


def test_labelled_strata_are_taken_as_they_are():
    """calibration.audit hands the estimator typed strata built from the checked design: the
    same estimate as the dict form, without parsing it again."""
    dicts = [
        stratum("a", 30, [0, 1, 0, 2], in_top_k=[1, 0, 0, 1], N_top_k=4),
        stratum("b", 9, [0, 0], in_top_k=[0, 0], N_top_k=1),
    ]
    typed = [
        LabelledStratum.from_relevance("a", 30, [False, True, False, True], [True, False, False, True], 4),
        LabelledStratum.from_relevance("b", 9, [False, False], [False, False], 1),
    ]
    assert estimate_recall_at_k(5, 2, typed, 10) == estimate_recall_at_k(5, 2, dicts, 10)
    assert estimate_rel(5, typed) == estimate_rel(5, dicts)
    with pytest.raises(ValueError, match="'a': recall@k needs in_top and N_top"):
        estimate_recall_at_k(5, 2, [LabelledStratum.from_relevance("a", 30, [True])], 10)
    with pytest.raises(ValueError, match="appears twice"):
        estimate_rel(5, [typed[0], typed[0]])


def test_module_is_pure():
    """Layer 1: numpy and scipy only (no streamlit, sqlite, openai) besides each other, no
    private name imported from another module, and every public name exists."""
    import importlib

    names = ["estimate", "intervals", "points", "recall"]
    for name in names:
        module = importlib.import_module("calibration.estimate" + ("" if name == "estimate" else f".{name}"))
        imported = set()
        for node in ast.walk(ast.parse(Path(module.__file__).read_text())):
            if isinstance(node, ast.Import):
                imported |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module:
                assert node.module.split(".")[-1] in [*names, "audit"] or not node.module.startswith(
                    "calibration"
                ), name
                assert not any(alias.name.startswith("_") for alias in node.names), (name, node.module)
                imported.add(node.module.split(".")[0])
        allowed = {"__future__", "collections", "dataclasses", "functools", "math", "typing", "calibration"}
        allowed |= {"annotation"} if name == "estimate" else set()  # the lazy API (annotation.lazy)
        assert imported - allowed <= {"numpy", "scipy"}, name
        assert all(hasattr(module, public) for public in module.__all__), name


# ------------------------------------------------------------------ coverage on Cranfield

CRANFIELD = (shared_dir() or ROOT / "missing") / "data" / "cranfield"
STOP = set(
    "a an the of and or in on to for is are be by with at as from that this what which it its can how do does".split()
)


def _parse_sgml(path: Path) -> list[str]:
    return parse(path, {".W"})


def _cranfield_runs():
    """Two lexical runs over Cranfield (BM25, k1 1.2, b 0.75; TF-IDF cosine) and the full qrels.

    Relevant = any judgment with grade 1-4 (1 most relevant); the one -1 per query, which the
    readme does not explain, is left out. Query i of cran.qry is qrels query i."""
    docs, queries = _parse_sgml(CRANFIELD / "cran.all.1400"), _parse_sgml(CRANFIELD / "cran.qry")
    vocab: dict[str, int] = {}

    def bag(text):
        return [
            vocab.setdefault(t, len(vocab)) for t in re.findall(r"[a-z0-9]+", text.lower()) if t not in STOP
        ]

    def matrix(rows):
        r = np.repeat(np.arange(len(rows)), [len(x) for x in rows])
        m = sp.csr_matrix((np.ones(len(r)), (r, np.concatenate(rows))), shape=(len(rows), len(vocab)))
        m.sum_duplicates()
        return m

    d_bags = [bag(d) for d in docs]
    q_bags = [bag(q) for q in queries]
    tf, qm = matrix(d_bags), matrix(q_bags)
    qm.data[:] = 1.0
    n_docs = tf.shape[0]
    df = np.asarray((tf > 0).sum(axis=0)).ravel()
    dl = np.asarray(tf.sum(axis=1)).ravel()
    c = tf.tocoo()
    bm25 = (
        c.data
        * 2.2
        / (c.data + 1.2 * (0.25 + 0.75 * dl[c.row] / dl.mean()))
        * np.log(1 + (n_docs - df + 0.5) / (df + 0.5))[c.col]
    )
    tfidf = (1 + np.log(c.data)) * np.log(n_docs / np.maximum(df, 1))[c.col]
    norms = np.sqrt(np.bincount(c.row, tfidf**2, minlength=n_docs))
    scores = [
        (qm @ sp.csr_matrix((w, (c.row, c.col)), shape=tf.shape).T).toarray() / scale
        for w, scale in ((bm25, 1.0), (tfidf, norms + 1e-12))
    ]
    ranks = []
    for s in scores:
        order = np.argsort(-s, axis=1, kind="stable")
        rank = np.empty_like(order)
        np.put_along_axis(rank, order, np.arange(1, n_docs + 1)[None, :].repeat(len(s), 0), axis=1)
        ranks.append(rank)
    rel = np.zeros((len(queries), n_docs), dtype=bool)
    for line in (CRANFIELD / "cranqrel").read_text().splitlines():
        parts = line.split()
        if len(parts) >= 3 and int(parts[2]) >= 1:
            rel[int(parts[0]) - 1, int(parts[1]) - 1] = True
    return ranks, rel


# The design (issue #8's, on Cranfield): pool depth 10 over the two runs is judged; the rest of
# the corpus is split by best rank over the runs into 11-30, 31-100 and 101-1400 (random corpus
# documents, in effect), sampled 10, 20 and 30 without replacement; the run is BM25, k = 20
# (ranks 11-20 are unjudged unless the other run put them in its top 10). Queries with at least
# 8 relevant documents (81 of 225), 200 repetitions (seeds of one generator).
DEPTH, CUTS, ALLOC, K, MIN_REL, REPS, SEED = 10, (30, 100), (10, 20, 30), 20, 8, 200, 20240


def _simulate(queries, reps, seed, alloc):
    rng = np.random.default_rng(seed)
    tallies = {key: np.zeros(4, dtype=np.int64) for key in ("rel", "recall", "rel_wald", "recall_wald")}
    undefined = 0
    for _ in range(reps):
        for judged, judged_top, cells, truth, true_recall in queries:
            strata = []
            for (name, rel, top), n in zip(cells, alloc):
                pick = rng.choice(len(rel), size=min(n, len(rel)), replace=False)
                strata.append(
                    {
                        "stratum": name,
                        "N": len(rel),
                        "labels": rel[pick],
                        "in_top_k": top[pick],
                        "N_top_k": int(top.sum()),
                    }
                )
            got = estimate_recall_at_k(judged, judged_top, strata, K)
            rel_est = got["rel"]
            wald_rel = [rel_est["estimate"] - Z95 * rel_est["se"], rel_est["estimate"] + Z95 * rel_est["se"]]
            for key, ci, value in (("rel", rel_est["ci"], truth), ("rel_wald", wald_rel, truth)):
                tallies[key] += [1, ci[0] <= value <= ci[1], value < ci[0], value > ci[1]]
            if got["estimate"] is None:  # nothing relevant judged or sampled: undefined, counted apart
                undefined += 1
                continue
            wald = [got["estimate"] - Z95 * got["se"], got["estimate"] + Z95 * got["se"]]
            for key, ci in (("recall", got["ci"]), ("recall_wald", wald)):
                low, high = ci[0] - 1e-12, ci[1] + 1e-12
                tallies[key] += [1, low <= true_recall <= high, true_recall < low, true_recall > high]
    return {key: (t[1] / t[0], t[2] / t[0], t[3] / t[0], int(t[0])) for key, t in tallies.items()}, undefined


@pytest.mark.slow  # a coverage simulation: 16,200 intervals
@pytest.mark.skipif(not (CRANFIELD / "cranqrel").exists(), reason="the shared Cranfield collection is absent")
def test_coverage_on_cranfield(figure):
    """The acceptance figure: do the 95% intervals cover the true |Rel| and the true recall@20?

    Cranfield is judged for every query-document pair, so the truth is known. Relevant
    documents below the pool are rare (on average 8.9 per query among ~1,390 unjudged, most of
    them in the 1,284-document deep stratum, where a sample of 30 usually finds none): the
    regime where the normal interval fails (measured here: 0.64 for |Rel|, 0.59 for recall).

    In this regime one side cannot miss: a sample that finds nothing among 1,284 documents
    cannot rule out ~100 relevant ones, so |Rel|'s upper bound (recall's lower bound) sits far
    above the truth whatever the sample. The interval knows this from the design alone and
    spends all of alpha on the other side (calibration/estimate/intervals.py, ``spend_alpha``); with equal
    tails it covered 0.969 / 0.973 here (commit 177e5f2, same seed), the dead side's 2.5%
    unused. Acceptance (issue #8): both in [0.93, 0.97] (0.933 and 0.944 here: near the lower
    edge for |Rel|; 0.938 and 0.946 with seed 7); the dead side (almost) never misses; the live
    side near its nominal 5% (mid-p runs over: 5.4-6.7% in the seeds tried). Per query the
    coverage spreads (lowest 0.805): docs/estimate.md tabulates it."""
    started = time.perf_counter()
    (bm25_rank, tfidf_rank), rel = _cranfield_runs()
    best = np.minimum(bm25_rank, tfidf_rank)
    queries = []
    for q in np.flatnonzero(rel.sum(axis=1) >= MIN_REL):
        judged = best[q] <= DEPTH
        top = bm25_rank[q] <= K
        cells = []
        for low, high in zip((DEPTH, *CUTS), (*CUTS, rel.shape[1])):
            members = np.flatnonzero((best[q] > low) & (best[q] <= high))
            cells.append((f"{low + 1}-{high}", rel[q, members], top[members]))
        truth = int(rel[q].sum())
        queries.append(
            (
                int(rel[q, judged].sum()),
                int(rel[q, judged & top].sum()),
                cells,
                truth,
                rel[q, top].sum() / truth,
            )
        )
    assert len(queries) == 81
    cover, undefined = _simulate(queries, REPS, SEED, ALLOC)
    elapsed = time.perf_counter() - started
    for key, label in (("rel", "|Rel|"), ("recall", f"recall@{K}")):
        c, low, high, n = cover[key]
        w = cover[key + "_wald"]
        figure(
            f"coverage of 95% intervals, Cranfield ({len(queries)} queries x {REPS} seeds = {n} intervals), {label}: "
            f"mid-p {c:.3f} (truth below {low:.3f}, above {high:.3f}); Wald {w[0]:.3f} (below {w[1]:.3f}, above {w[2]:.3f})"
        )
    figure(
        f"recall@{K} undefined (nothing relevant judged or sampled): {undefined} of {REPS * len(queries)}; {elapsed:.1f} s"
    )
    rel_cov, rel_below, rel_above, _ = cover["rel"]
    rec_cov, rec_below, rec_above, _ = cover["recall"]
    assert 0.93 <= rel_cov <= 0.97 and 0.93 <= rec_cov <= 0.97
    assert rel_above <= 0.002 and rec_below <= 0.002  # the side the design rules out
    assert 0.03 <= rel_below <= 0.07 and 0.03 <= rec_above <= 0.07  # the live side: nominal 5%
    # the normal interval fails here, which is why it is not the default
    assert cover["rel_wald"][0] < 0.8 and cover["recall_wald"][0] < 0.8


@pytest.mark.slow  # a coverage simulation: 1,500 draws
def test_coverage_when_both_sides_can_miss(figure):
    """A synthetic collection where every stratum holds enough relevant documents for samples to
    err both ways (judged pool 2-7 relevant; strata of 40 and 100 candidates, relevant rates 0.3
    (0.45 in the run's top k) and 0.1, samples of 20 and 50): there the mid-p interval's
    two-sided coverage is the nominal 95%, each side missing about 2.5%."""
    rng = np.random.default_rng(11)
    tallies = {"rel": np.zeros(4), "recall": np.zeros(4)}
    for _ in range(1500):
        judged = int(rng.integers(2, 8))
        judged_top = int(rng.integers(0, judged + 1))
        top0 = np.arange(40) < 20
        rel0 = rng.random(40) < np.where(top0, 0.45, 0.3)
        rel1 = rng.random(100) < 0.1
        truth = judged + rel0.sum() + rel1.sum()
        true_recall = (judged_top + (rel0 & top0).sum()) / truth
        p0, p1 = rng.choice(40, 20, replace=False), rng.choice(100, 50, replace=False)
        strata = [
            {"stratum": "a", "N": 40, "labels": rel0[p0], "in_top_k": top0[p0], "N_top_k": 20},
            {"stratum": "b", "N": 100, "labels": rel1[p1], "in_top_k": np.zeros(50, bool), "N_top_k": 0},
        ]
        got = estimate_recall_at_k(judged, judged_top, strata, judged_top + 25)
        for key, ci, value in (("rel", got["rel"]["ci"], truth), ("recall", got["ci"], true_recall)):
            tallies[key] += [
                1,
                ci[0] - 1e-12 <= value <= ci[1] + 1e-12,
                value < ci[0] - 1e-12,
                value > ci[1] + 1e-12,
            ]
    for key, t in tallies.items():
        cov, below, above = t[1] / t[0], t[2] / t[0], t[3] / t[0]
        figure(
            f"coverage of 95% mid-p intervals, synthetic both-sided design (1500 draws), {key}: {cov:.3f} (below {below:.3f}, above {above:.3f})"
        )
        assert 0.93 <= cov <= 0.97
        assert 0.005 <= below <= 0.035 and 0.005 <= above <= 0.045
