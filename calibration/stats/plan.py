"""Plan the labelling (issue #39, item 5): from a pilot, the kappa interval's expected width for
designs of Q queries x m chunks per query, and the labels needed to decide at the bar.

Pure module: plain data in, plain data out (numpy; scipy.special's t and chi-square quantiles). The
interval planned for is :func:`calibration.stats.kappa_clustered.kappa_ci_clustered`'s: the score
interval of the pooled table at n* = n / deff x (z / t)^2 items, deff the query jackknife's design
effect, t the t(Q - 1) quantile. Figures and the bench that checks them: docs/agreement.md,
"Planning the labelling".

The model, from a pilot of (person, judge, query) labels, n items over Q0 queries:

- kappa-hat and the pilot's shares p (the pooled K x K table over n), with V, n times kappa's
  item-level delta-method variance (:func:`calibration.stats.kappa_interval.kappa_and_variance`).
- Each item's influence on kappa: u_i = g(cell of i) - sum_c p_c g_c, g the gradient of kappa in
  the table's shares; V is the mean of u_i^2.
- The intra-class correlation rho of u within queries, from the one-way analysis of variance (Donner
  1986, "A review of inference procedures for the intraclass correlation coefficient in the one-way
  random effects model", International Statistical Review 54): MSB = sum_q m_q (u_q - u)^2 / (Q0 - 1),
  MSW = sum_q sum_i (u_i - u_q)^2 / (n - Q0), m0 = (n - sum_q m_q^2 / n) / (Q0 - 1), F = MSB / MSW;
  median-unbiased (``icc_estimator="median"``, the default): F' = F / median F(Q0 - 1, n - Q0),
  rho = (F' - 1) / (F' - 1 + m0), 0 when negative; ``"anova"``: the moment estimator, F' = F. The
  moment estimator's estimates from 5 queries are mostly low (docs/agreement.md, the bench).
- A design of Q queries x m chunks: the design effect deff = 1 + (m - 1) rho (Kish 1965), the
  critical value t = t(Q - 1), and the interval expected: the score interval of the pilot's shares at
  n* = Q m / (deff c^2) x (z / t)^2 items, c^2 = median(chi2(Q - 1)) / (Q - 1). Near its centre
  its width is 2 t c sqrt(V deff / (Q m)): "width grows with sqrt(deff / n)". c turns the expected
  width into the median one: the interval's variance is a jackknife over Q queries, spread about its
  mean like chi2(Q - 1) / (Q - 1) times it, and the median of its square root is c times the root of
  its mean (c = 0.92 at Q = 5, 0.96 at 10, 0.98 at 20).
- Expected to decide: :func:`calibration.stats.verdict.verdict` of that interval at the bar. Labels to
  decide at m chunks a query: the fewest queries Q >= ``min_queries`` whose expected interval decides,
  times m (it assumes kappa stays where the pilot put it: a planning figure, said with "about").
- "More queries or more chunks per query?": at the same number of labels, the design with more
  queries is narrower whenever rho > 0 (deff grows with m) and t(Q - 1) shrinks with Q; a label in
  a query already holding m is worth 1 / deff(m) of a label in a new query.

Edges: fewer than 2 queries in the pilot, or kappa undefined: no plan, with the reason. A query
without a query id is an item of its own (the caller says how many). No disagreement in the pilot
(V = 0, perfect agreement): the ICC is undefined, taken as 0 (``icc_note`` says so), and the expected
interval is still the score interval of the pilot's table at n*, [L, 1] with L < 1 (Wilson's lower
bound carried through the chance correction, :mod:`calibration.stats.kappa_interval`).
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from statistics import NormalDist
from typing import Any, TypedDict

import numpy as np
from scipy.special import chdtri, fdtri, stdtrit

from calibration.stats.kappa import (
    InvalidRatings,
    RaterPair,
    Weights,
    check_weights,
    disagreement_weights,
    is_missing,
)
from calibration.stats.kappa_clustered import MIN_QUERIES, kappa_ci_clustered
from calibration.stats.kappa_interval import MIN_ITEMS, check_alpha, kappa_and_variance, score_interval
from calibration.stats.verdict import verdict

__all__ = [
    "MAX_QUERIES",
    "DesignPlan",
    "Pilot",
    "Plan",
    "median_factor",
    "pilot",
    "plan",
    "predict",
]

# labels 300 and 600 split between queries and chunks per query, and a small first step
ICC_ESTIMATORS = ("median", "anova")  # median-unbiased (F's median) or the ANOVA moment estimator
MAX_QUERIES = 100_000  # the search for the queries that decide stops here ("out of reach")


class Pilot(TypedDict):
    """What the plan reads from the pilot."""

    n: int  # items rated by both
    queries: int  # Q0
    items_per_query: tuple[int, float, int]  # min, median, max
    kappa: float | None
    variance: float | None  # V: n times kappa's item-level variance
    icc: float | None  # rho of the influences within queries
    between: float | None  # s_b^2
    within: float | None  # MSW
    m0: float | None  # the ANOVA's mean query size
    pilot_design_effect: float | None  # the query jackknife's, as kappa_ci_clustered measures it
    interval: list[float | None]  # the pilot's own clustered interval ([None, None] below min_queries)
    interval_reason: str | None
    undefined_reason: str | None
    icc_note: str | None  # the ICC taken as 0, not estimated, and why (V = 0: no disagreement)


class DesignPlan(TypedDict):
    """One design's expected interval."""

    design: str  # "QxM"
    queries: int
    per_query: int
    labels: int  # Q x m
    design_effect: float
    df: int
    width: float  # the expected (median) width
    interval: list[float]  # the expected interval around the pilot's kappa
    verdict: str  # the verdict that interval gives at the bar
    queries_to_decide: int | None  # the fewest queries at m per query whose interval decides
    labels_to_decide: int | None  # queries_to_decide x m; None: out of reach (kappa at the bar)
    too_few_queries: bool  # Q < min_queries: no verdict-grade interval


class Plan(TypedDict):
    pilot: Pilot
    bar: float
    alpha: float
    min_queries: int
    designs: list[DesignPlan]
    answer: dict[str, Any] | None  # "more queries or more chunks per query?"
    model: str


MODEL = (
    "deff = 1 + (m - 1) x ICC; expected median width = the score interval's at "
    "n* = Q m / (deff c^2) x (z / t(Q-1))^2, c^2 = median chi2(Q-1) / (Q-1) "
    "(about 2 t c sqrt(V deff / (Q m)))"
)


def median_factor(queries: int) -> float:
    """c = sqrt(median chi2(Q - 1) / (Q - 1)): the median of a jackknife standard error over Q
    queries, as a share of its root mean square (module docstring)."""
    df = max(queries - 1, 1)
    return math.sqrt(float(chdtri(df, 0.5)) / df)


def _influences(pair: RaterPair, d: np.ndarray) -> tuple[float, float, np.ndarray, np.ndarray]:
    """kappa, V, the pilot's shares (K x K) and each item's influence u_i."""
    k = pair.k
    table = np.zeros(k * k)
    cells = pair.a * k + pair.b
    np.add.at(table, cells, 1.0)
    p = (table / pair.n).reshape(k, k)
    kappa, v = kappa_and_variance(p, d)
    rows, cols = p.sum(axis=1), p.sum(axis=0)
    observed, expected = float((p * d).sum()), float(rows @ d @ cols)
    if not expected > 0:
        return float("nan"), float("nan"), p, np.zeros(pair.n)
    gradient = (
        -(d * expected - observed * ((d @ cols)[:, None] + (rows @ d)[None, :])) / expected**2
    ).reshape(-1)
    u = gradient[cells] - float(p.reshape(-1) @ gradient)
    return float(kappa), float(v), p, u


def _icc(
    u: np.ndarray, query: np.ndarray, queries: int, estimator: str = "median"
) -> tuple[float, float, float, float]:
    """(rho, s_b^2, MSW, m0) of the one-way ANOVA of ``u`` by ``query`` (module docstring)."""
    n = len(u)
    sizes = np.bincount(query, minlength=queries).astype(float)
    means = np.bincount(query, weights=u, minlength=queries) / sizes
    grand = float(u.mean())
    msb = float((sizes * (means - grand) ** 2).sum()) / (queries - 1)
    msw = float(((u - means[query]) ** 2).sum()) / (n - queries) if n > queries else 0.0
    m0 = (n - float((sizes**2).sum()) / n) / (queries - 1)
    if not (m0 > 0 and msb > 0):
        return 0.0, 0.0, msw, m0
    if not msw > 0:  # no spread within queries, some between them: every label of a query alike
        return 1.0, msb / m0, msw, m0
    ratio = msb / msw
    if estimator == "median" and n > queries:
        ratio /= float(fdtri(queries - 1, n - queries, 0.5))
    between = max(ratio - 1.0, 0.0) * msw / m0
    return between / (between + msw), between, msw, m0


def pilot(
    person: Sequence[Any],
    judge: Sequence[Any],
    queries: Sequence[Hashable],
    *,
    weights: Weights = None,
    labels: Sequence[Any] | None = None,
    alpha: float = 0.05,
    min_queries: int = MIN_QUERIES,
    icc_estimator: str = "median",
) -> tuple[Pilot, np.ndarray | None]:
    """What the plan reads from a pilot (module docstring), and the pilot's shares (None: no plan)."""
    weights = check_weights(weights)
    pilot_ci = kappa_ci_clustered(
        person, judge, queries, weights=weights, labels=labels, alpha=alpha, min_queries=min_queries
    )
    # the items kappa_ci_clustered kept (it raised on a missing query or unequal lengths already)
    kept = [(x, y, q) for x, y, q in zip(person, judge, queries) if not (is_missing(x) or is_missing(y))]
    design = pilot_ci.design
    out: Pilot = {
        "n": design["items"],
        "queries": design["queries"],
        "items_per_query": design["items_per_query"],
        "kappa": pilot_ci.estimate,
        "variance": None,
        "icc": None,
        "between": None,
        "within": None,
        "m0": None,
        "pilot_design_effect": design["design_effect"],
        "interval": [pilot_ci.low, pilot_ci.high],
        "interval_reason": pilot_ci.undefined_reason,
        "undefined_reason": None,
        "icc_note": None,
    }
    if pilot_ci.estimate is None:
        out["undefined_reason"] = f"kappa is undefined ({pilot_ci.undefined_reason})"
        return out, None
    if design["items"] < MIN_ITEMS:
        out["undefined_reason"] = (
            f"the pilot has {design['items']} item rated by both, and a plan needs at least {MIN_ITEMS}"
        )
        return out, None
    if design["queries"] < 2:
        out["undefined_reason"] = (
            f"the pilot has {design['queries']} query, and how much queries differ needs at least 2"
        )
        return out, None
    pair = RaterPair([x for x, _, _ in kept], [y for _, y, _ in kept], labels)
    index: dict[Hashable, int] = {}
    query = np.fromiter((index.setdefault(q, len(index)) for _, _, q in kept), dtype=np.int64, count=pair.n)
    d = disagreement_weights(pair.k, weights)
    _, v, p, u = _influences(pair, d)
    rho, between, within, m0 = _icc(u, query, len(index), icc_estimator)
    out["variance"], out["icc"], out["between"], out["within"], out["m0"] = v, rho, between, within, m0
    if not v > 0:
        out["icc_note"] = (
            "taken as 0 (deff 1: queries assumed not to cluster); the pilot has no disagreement "
            "(kappa's variance 0), so the ICC and its design effect are undefined"
        )
    return out, p


def predict(
    shares: np.ndarray,
    icc: float,
    queries: int,
    per_query: int,
    *,
    weights: Weights = None,
    alpha: float = 0.05,
) -> tuple[float, list[float], float]:
    """The expected (median) interval of ``kappa_ci_clustered`` for Q = ``queries`` x m =
    ``per_query`` at the pilot's shares and ICC: (width, [low, high], deff)."""
    deff = 1.0 + (per_query - 1) * icc
    z = NormalDist().inv_cdf(1.0 - alpha / 2)
    t = float(stdtrit(queries - 1, 1.0 - alpha / 2))
    c = median_factor(queries)
    effective = queries * per_query / (deff * c * c) * (z / t) ** 2
    if effective < MIN_ITEMS:
        return 2.0, [-1.0, 1.0], deff
    low, high = score_interval(shares * effective, weights, alpha)
    return high - low, [low, high], deff


def _queries_to_decide(
    shares: np.ndarray,
    kappa: float,
    icc: float,
    per_query: int,
    bar: float,
    weights: Weights,
    alpha: float,
    start: int,
) -> int | None:
    def decides(q: int) -> bool:
        _, ci, _ = predict(shares, icc, q, per_query, weights=weights, alpha=alpha)
        return verdict(kappa, ci, bar=bar) != "undecided"

    if decides(start):
        return start
    if not decides(MAX_QUERIES):
        return None
    lo, hi = start, MAX_QUERIES  # decides(lo) false, decides(hi) true
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if decides(mid):
            hi = mid
        else:
            lo = mid
    return hi


def plan(
    person: Sequence[Any],
    judge: Sequence[Any],
    queries: Sequence[Hashable],
    designs: Sequence[tuple[int, int]],
    *,
    bar: float,
    weights: Weights = None,
    labels: Sequence[Any] | None = None,
    alpha: float = 0.05,
    min_queries: int = MIN_QUERIES,
    icc_estimator: str = "median",
) -> Plan:
    """The plan of a pilot ``person`` x ``judge`` labelled under ``queries`` for ``designs`` (Q, m)
    at the kappa ``bar`` (module docstring). ``designs``: at least one; Q >= 2, m >= 1."""
    alpha = check_alpha(alpha)
    if icc_estimator not in ICC_ESTIMATORS:
        raise InvalidRatings(f"icc_estimator {icc_estimator!r}; expected one of {', '.join(ICC_ESTIMATORS)}")
    if not designs:
        raise InvalidRatings("no design to plan for")
    for q, m in designs:
        if q < 2 or m < 1:
            raise InvalidRatings(
                f"design {q}x{m}: queries must be at least 2 and chunks per query at least 1"
            )
    found, shares = pilot(
        person,
        judge,
        queries,
        weights=weights,
        labels=labels,
        alpha=alpha,
        min_queries=min_queries,
        icc_estimator=icc_estimator,
    )
    result: Plan = {
        "pilot": found,
        "bar": bar,
        "alpha": alpha,
        "min_queries": min_queries,
        "designs": [],
        "answer": None,
        "model": MODEL,
    }
    if shares is None or found["icc"] is None or found["kappa"] is None:
        return result
    kappa, icc = found["kappa"], found["icc"]
    needed: dict[int, int | None] = {}
    for q, m in designs:
        width, ci, deff = predict(shares, icc, q, m, weights=weights, alpha=alpha)
        if m not in needed:
            needed[m] = _queries_to_decide(shares, kappa, icc, m, bar, weights, alpha, max(min_queries, 2))
        result["designs"].append(
            {
                "design": f"{q}x{m}",
                "queries": q,
                "per_query": m,
                "labels": q * m,
                "design_effect": deff,
                "df": q - 1,
                "width": width,
                "interval": ci,
                "verdict": "uncalibrated" if q < min_queries else verdict(kappa, ci, bar=bar),
                "queries_to_decide": (q_needed := needed[m]),
                "labels_to_decide": None if q_needed is None else q_needed * m,
                "too_few_queries": q < min_queries,
            }
        )
    result["answer"] = _answer(result["designs"], icc)
    return result


def _answer(designs: list[DesignPlan], icc: float) -> dict[str, Any]:
    """More queries or more chunks per query: at the number of labels most designs share (ties: the
    largest), the narrowest design against the one with the fewest queries."""
    counts: dict[int, int] = {}
    for d in designs:
        if not d["too_few_queries"]:
            counts[d["labels"]] = counts.get(d["labels"], 0) + 1
    comparable = [n for n, c in counts.items() if c >= 2]
    worth = {d["per_query"]: 1.0 / d["design_effect"] for d in designs}
    if not comparable:
        return {
            "choice": "more queries" if icc > 0 else "either",
            "labels": None,
            "widths": {},
            "label_in_a_query_worth": worth,
            "text": (
                f"ICC {icc:.3f}: a label in a query already holding m chunks is worth 1 / (1 + (m - 1) x ICC) "
                "of a label in a new query (give two designs with the same labels to compare them)"
            ),
        }
    n = max(comparable, key=lambda x: (counts[x], x))
    same = sorted(
        (d for d in designs if d["labels"] == n and not d["too_few_queries"]), key=lambda d: d["queries"]
    )
    best = min(same, key=lambda d: d["width"])
    few = same[0]
    widths = {d["design"]: d["width"] for d in same}
    listed = ", ".join(f"{d['design']} {d['width']:.3f}" for d in same)
    if best is few:
        choice = "more chunks per query"
        text = (
            f"at {n} labels the expected width is {listed}: the fewest queries, {few['design']}, is narrowest"
        )
    else:
        choice = "more queries"
        text = (
            f"more queries: at {n} labels the expected width is {listed}; {best['design']} is "
            f"{1 - best['width'] / few['width']:.0%} narrower than {few['design']} "
            f"(a label in a query already holding {few['per_query']} is worth {1 / few['design_effect']:.2f} "
            "of a label in a new query)"
        )
    return {
        "choice": choice,
        "labels": n,
        "widths": widths,
        "narrowest": best["design"],
        "label_in_a_query_worth": worth,
        "text": text,
    }
