"""Kappa's interval clustered by query (calibration/stats/kappa_clustered.py, issue #39 item 1).

1. By hand: 5 queries of 4 items, the leave-one-query-out kappas in exact fractions, the jackknife
   variance, the design effect against an independent loop (scikit-learn's kappa per query left out,
   a numerical delta-method variance), and the interval at Korn & Graubard's effective n.
2. Refusals and edges: fewer than ``min_queries`` queries ("3 queries: a verdict needs 5"), kappa
   undefined, perfect agreement, a query left out leaving kappa undefined (the linearised variance),
   missing ratings, a missing query.
3. One item per query: close to today's item-level interval.
4. A fixed-seed run of bench/kappa_design.py's simulation: 300 samples of 10 topics x 30 chunks on
   TREC RAG 2025 (NIST vs UMBRELA-v2) cover the all-topics kappa in >= 90%.
"""

from __future__ import annotations

import math
from fractions import Fraction
from statistics import NormalDist

import numpy as np
import pytest
from scipy import stats
from sklearn.metrics import cohen_kappa_score

from calibration.stats.kappa import InvalidRatings, disagreement_weights
from calibration.stats.kappa_clustered import (
    JACKKNIFE,
    LINEARISED,
    METHOD,
    MIN_QUERIES,
    design_effect,
    kappa_ci_clustered,
    too_few_queries,
)
from calibration.stats.kappa_interval import kappa_ci, score_interval
from tests.conftest import timed
from tests.test_agreement import SHARED, needs_shared

# 5 queries x 4 items: (person, judge)
HAND = {
    "q1": [(1, 1), (1, 1), (0, 0), (1, 0)],
    "q2": [(1, 1), (0, 0), (0, 0), (0, 1)],
    "q3": [(1, 1), (1, 1), (1, 1), (0, 0)],
    "q4": [(0, 0), (0, 0), (1, 0), (0, 1)],
    "q5": [(1, 1), (0, 0), (1, 1), (0, 0)],
}


def columns(groups: dict[str, list[tuple[int, int]]]) -> tuple[list[int], list[int], list[str]]:
    a = [x for items in groups.values() for x, _ in items]
    b = [y for items in groups.values() for _, y in items]
    q = [name for name, items in groups.items() for _ in items]
    return a, b, q


def kappa_fraction(pairs: list[tuple[int, int]]) -> Fraction:
    n = len(pairs)
    observed = Fraction(sum(x == y for x, y in pairs), n)
    a1, b1 = Fraction(sum(x for x, _ in pairs), n), Fraction(sum(y for _, y in pairs), n)
    chance = a1 * b1 + (1 - a1) * (1 - b1)
    return (observed - chance) / (1 - chance)


def delta_variance(a: list[int], b: list[int]) -> float:
    """n times the delta-method variance of binary kappa, by a numerical gradient of kappa over the
    four cell shares and the multinomial covariance (independent of kappa_and_variance)."""
    cells = np.bincount(np.array(a) * 2 + np.array(b), minlength=4) / len(a)

    def kappa_of(p: np.ndarray) -> float:
        p = p / p.sum()
        a1, b1 = p[2] + p[3], p[1] + p[3]
        chance = a1 * b1 + (1 - a1) * (1 - b1)
        return float((p[0] + p[3] - chance) / (1 - chance))

    step = 1e-6
    gradient = np.array(
        [(kappa_of(cells + step * e) - kappa_of(cells - step * e)) / (2 * step) for e in np.eye(4)]
    )
    covariance = np.diag(cells) - np.outer(cells, cells)
    return float(gradient @ covariance @ gradient)


# --------------------------------------------------------------------------- 1. by hand


def test_jackknife_by_hand_on_five_queries() -> None:
    a, b, q = columns(HAND)
    everything = [pair for items in HAND.values() for pair in items]
    assert kappa_fraction(everything) == Fraction(3, 5)  # p_o 16/20, p_e 1/2
    left_out = {
        name: kappa_fraction([p for other, items in HAND.items() if other != name for p in items])
        for name in HAND
    }
    assert left_out == {
        "q1": Fraction(5, 8),
        "q2": Fraction(5, 8),
        "q3": Fraction(31, 63),
        "q4": Fraction(47, 63),
        "q5": Fraction(1, 2),
    }
    mean = sum(left_out.values()) / 5
    v_jack = Fraction(4, 5) * sum((k - mean) ** 2 for k in left_out.values())
    assert float(v_jack) == pytest.approx(0.0353578, abs=1e-7)

    # an independent loop: scikit-learn's kappa with each query left out
    loop = []
    for name in HAND:
        keep = [i for i, x in enumerate(q) if x != name]
        loop.append(cohen_kappa_score([a[i] for i in keep], [b[i] for i in keep]))
    loop_v = 4 / 5 * sum((k - np.mean(loop)) ** 2 for k in loop)
    assert loop_v == pytest.approx(float(v_jack), rel=1e-12)

    result = kappa_ci_clustered(a, b, q)
    design = result.design
    v_item = delta_variance(a, b) / 20
    assert result.estimate == pytest.approx(0.6, abs=1e-12)
    assert result.method == METHOD
    assert design["variance"] == JACKKNIFE
    assert (design["queries"], design["items"], design["df"]) == (5, 20, 4)
    assert design["items_per_query"] == (4, 4.0, 4)
    assert design["design_effect"] == pytest.approx(float(v_jack) / v_item, rel=1e-6)
    assert design["effective_items"] == pytest.approx(20 / design["design_effect"])

    # the interval: the score interval at n* = n / deff * (z / t_4)^2
    z, t = NormalDist().inv_cdf(0.975), stats.t.ppf(0.975, 4)
    effective = 20 / design["design_effect"] * (z / t) ** 2
    confusion = np.array([[8, 2], [2, 8]])
    expected = score_interval(confusion * effective / 20)
    assert (result.low, result.high) == pytest.approx(expected, abs=1e-12)
    assert result.item_level == pytest.approx(list(kappa_ci(a, b)))
    # near its centre it is the jackknife-t interval, wider than today's
    assert result.low < result.item_level[0] and result.high > result.item_level[1]
    assert result.high - result.low == pytest.approx(2 * t * math.sqrt(float(v_jack)), rel=0.15)


def test_design_effect_function_matches_the_loop_on_random_tables() -> None:
    rng = np.random.default_rng(3)
    for _ in range(20):
        queries = int(rng.integers(5, 12))
        per = rng.integers(3, 15, queries)
        a = [int(x) for x in rng.integers(0, 3, per.sum())]
        b = [x if rng.random() < 0.6 else int(rng.integers(0, 3)) for x in a]
        q = np.repeat(np.arange(queries), per).tolist()
        loo = []
        for name in range(queries):
            keep = [i for i, x in enumerate(q) if x != name]
            loo.append(
                cohen_kappa_score(
                    [a[i] for i in keep], [b[i] for i in keep], labels=[0, 1, 2], weights="quadratic"
                )
            )
        v_loop = (queries - 1) / queries * float(np.sum((np.array(loo) - np.mean(loo)) ** 2))
        tables = np.zeros((queries, 9))
        np.add.at(tables, (np.array(q), np.array(a) * 3 + np.array(b)), 1)
        deff, v_cluster, variance = design_effect(tables, disagreement_weights(3, "quadratic"))
        assert variance == JACKKNIFE
        assert v_cluster == pytest.approx(v_loop, rel=1e-9)
        result = kappa_ci_clustered(a, b, q, labels=[0, 1, 2], weights="quadratic")
        assert result.design["design_effect"] == pytest.approx(deff)
        assert result.low is not None and result.low <= result.estimate <= result.high


# --------------------------------------------------------------------------- 2. refusals and edges


def test_fewer_than_min_queries_is_no_verdict_with_the_reason() -> None:
    three = {name: HAND[name] for name in ("q1", "q2", "q3")}
    result = kappa_ci_clustered(*columns(three))
    assert tuple(result) == (None, None)
    assert result.undefined_reason == "3 queries: a verdict needs 5"
    assert result.estimate is not None and result.design["queries"] == 3
    assert result.design["design_effect"] is not None  # still measured, from 2 queries on
    assert result.item_level[0] is not None  # today's interval, for comparison
    assert too_few_queries(1) == "1 query: a verdict needs 5"
    assert too_few_queries(MIN_QUERIES) is None
    one = kappa_ci_clustered(*columns({"q3": HAND["q3"] + HAND["q4"]}))
    assert one.undefined_reason == "1 query: a verdict needs 5"
    assert one.design["design_effect"] is None
    allowed = kappa_ci_clustered(*columns(three), min_queries=3)
    assert allowed.low is not None and allowed.design["df"] == 2
    with pytest.raises(InvalidRatings, match="min_queries"):
        kappa_ci_clustered(*columns(three), min_queries=1)


def test_undefined_kappa_and_bad_input() -> None:
    same = {f"q{i}": [(1, 1), (1, 1)] for i in range(6)}
    result = kappa_ci_clustered(*columns(same))
    assert tuple(result) == (None, None) and "chance agreement is 1" in result.undefined_reason
    a, b, q = columns(HAND)
    with pytest.raises(InvalidRatings, match="one query per item"):
        kappa_ci_clustered(a, b, q[:-1])
    with pytest.raises(InvalidRatings, match=r"queries\[2\] is missing"):
        kappa_ci_clustered(a, b, q[:2] + [None] + q[3:])


def test_missing_ratings_drop_their_item() -> None:
    a, b, q = columns(HAND)
    result = kappa_ci_clustered([*a, None, 1], [*b, 1, float("nan")], [*q, "q6", "q7"])
    assert result.n == 20 and result.n_dropped == 2
    assert tuple(result) == pytest.approx(tuple(kappa_ci_clustered(a, b, q)))


def test_perfect_agreement_keeps_an_interval_below_one() -> None:
    perfect = {f"q{i}": [(1, 1), (0, 0), (1, 1), (0, 0)] for i in range(6)}
    result = kappa_ci_clustered(*columns(perfect))
    assert result.estimate == 1.0 and result.high == 1.0
    assert result.low is not None and 0 < result.low < 1
    assert result.design["design_effect"] is None and "taken as 1" in result.design["variance"]
    # deff taken as 1: only the t(5) critical value widens it beyond today's
    assert result.low < result.item_level[0]


def test_a_query_whose_absence_leaves_kappa_undefined_uses_the_linearised_variance() -> None:
    groups = {f"q{i}": [(0, 0), (0, 0), (0, 0)] for i in range(5)}
    groups["q5"] = [(1, 1), (1, 0), (0, 1), (1, 1)]
    a, b, q = columns(groups)
    result = kappa_ci_clustered(a, b, q)
    assert result.design["variance"].startswith(LINEARISED)
    # independent: per-query sums of the item influence values (numerical gradient)
    n = len(a)
    cells = np.bincount(np.array(a) * 2 + np.array(b), minlength=4) / n
    gradient = []
    for e in np.eye(4):
        plus, minus = cells + 1e-6 * e, cells - 1e-6 * e
        gradient.append((kappa_cells(plus / plus.sum()) - kappa_cells(minus / minus.sum())) / 2e-6)
    g = np.array(gradient) - cells @ np.array(gradient)
    sums = [sum(g[x * 2 + y] for x, y in items) for items in groups.values()]
    v_lin = 6 / 5 * sum(s * s for s in sums) / n**2
    v_item = delta_variance(a, b) / n
    assert result.design["design_effect"] == pytest.approx(v_lin / v_item, rel=1e-5)
    assert result.low is not None and result.low < result.estimate < result.high


def kappa_cells(p: np.ndarray) -> float:
    a1, b1 = p[2] + p[3], p[1] + p[3]
    chance = a1 * b1 + (1 - a1) * (1 - b1)
    return float((p[0] + p[3] - chance) / (1 - chance))


# --------------------------------------------------------------------------- 3. one item per query


def test_one_item_per_query_stays_close_to_todays_interval() -> None:
    rng = np.random.default_rng(7)
    ratios = []
    for _ in range(50):
        a = rng.integers(0, 2, 300)
        b = np.where(rng.random(300) < 0.6, a, rng.integers(0, 2, 300))
        result = kappa_ci_clustered(a.tolist(), b.tolist(), list(range(300)))
        assert result.design["design_effect"] == pytest.approx(1.0, abs=0.1)
        ratios.append((result.high - result.low) / (result.item_level[1] - result.item_level[0]))
    assert float(np.median(ratios)) < 1.05


# --------------------------------------------------------------------------- 4. the simulation, smaller


@needs_shared
@pytest.mark.wall_clock
def test_fixed_seed_simulation_10_topics_x_30_chunks() -> None:
    from bench.kappa_design import Population, run_design

    assert SHARED is not None
    population = Population(SHARED / "data" / "trec_rag_umbrela")
    assert population.kappa == pytest.approx(0.431, abs=5e-4)
    with timed() as t:
        figures = run_design(population, "10x30", samples=300, seed=11)
        few = run_design(population, "3x100", samples=20, seed=11)
    assert figures["new_coverage"] >= 0.90, figures
    assert figures["uncalibrated"] == 0
    assert figures["new_width"] > figures["old_width"]
    assert few["uncalibrated"] == 1.0
    t.within(30, "300 samples of 10 x 30 and 20 of 3 x 100")


def test_queries_alike_never_make_the_interval_narrower_than_the_items() -> None:
    """Issue #40 (a follow-up of #39): 8 queries x 10 chunks whose per-query tables are alike (the
    judge off by one grade on one chunk in five, in every query) gave the jackknife a design effect of
    0.0002 and a "95%" interval [0.731, 0.735] on 80 items. The design effect is kept at 1: the
    interval is the score interval at t(7), wider than the item-level one, and says so."""
    from tests.test_judged_review import expected

    people, judge, queries = expected(8, 10)
    result = kappa_ci_clustered(people, judge, queries)
    assert result.design["design_effect"] == pytest.approx(0.000199, abs=1e-6)  # as measured
    assert result.design["effective_items"] == 80.0
    assert result.design["variance"] == "query jackknife; design effect 0.00 kept at 1"
    low, high = result
    item_low, item_high = result.item_level
    assert low < item_low and high > item_high
    assert (round(low, 3), round(high, 3)) == (0.569, 0.846)
