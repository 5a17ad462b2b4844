"""Cohen's kappa with an interval that knows its labels came in queries (issue #39, item 1).

Pure module: plain data in, plain data out (numpy; scipy's t quantile). The pairs (person, judge) of
each item carry the query (the cluster) they were labelled under. Why this method, what else was
measured, the figures and the command that produced them: docs/agreement.md, "Labels come in queries".

Why. ``pool`` and *Label chunks* hand people the top k of a few queries, and judge-vs-people
agreement differs from query to query (TREC RAG 2025, NIST vs UMBRELA-v2, relevance = grade >= 2:
per-topic kappas 0.18 to 0.61 around the all-topics 0.431). Items of one query are not independent
draws, so an interval that treats them so (:func:`calibration.stats.kappa_interval.kappa_ci`) is too
narrow: it covered the all-topics kappa in 76.7% of samples of 2 topics x 100 chunks.

The interval: the score interval of :mod:`calibration.stats.kappa_interval` at the effective number
of items, the design effect measured by the query-level (delete-one-query) jackknife and the
critical value taken from Student's t with Q - 1 degrees of freedom:

- Q queries, n items; kappa-hat as :func:`calibration.stats.kappa.cohen` (scikit-learn's arithmetic).
- kappa_(q): kappa of the items of every query but q (the pooled table minus query q's table);
  v_jack = (Q - 1) / Q * sum_q (kappa_(q) - mean_q kappa_(q))^2, the delete-one-cluster jackknife
  (Quenouille 1956; Wolter 2007, *Introduction to Variance Estimation*, ch. 4, for cluster samples;
  the cluster jackknife is the CR3 variance Cameron & Miller 2015, "A practitioner's guide to
  cluster-robust inference", recommend with few clusters, and the t(Q - 1) reference is theirs too).
- v_item = V / n, the item-level delta-method variance the score interval is built on (Fleiss,
  Cohen & Everitt 1969); the design effect deff = v_jack / v_item (Kish 1965), reported as measured
  and kept at 1 or more in the interval (issue #40: queries whose tables are alike gave deff 0.0002
  and a "95%" interval 0.004 wide on 80 items; the interval is never narrower than the item-level
  score interval's width at the t quantile).
- The interval: the score interval of the pooled table scaled to n* = n / deff * (z / t)^2 items,
  z the normal and t the t(Q - 1) quantile of 1 - alpha / 2: Korn & Graubard's (1998, "Confidence
  intervals for proportions with small expected number of positive counts estimated from survey
  data", Survey Methodology 24) effective sample size with its degrees-of-freedom adjustment, applied
  to kappa's score interval. Near its centre its half-width is t * sqrt(v_jack), the jackknife-t
  interval; at its edges it keeps the score interval's shape, so a perfect agreement on few labels
  is still an interval [L, 1] with L < 1 where a Wald or jackknife-t interval is the point [1, 1].

Edges. Below ``min_queries`` (default :data:`MIN_QUERIES`) there is no verdict-grade interval: the
result is ``(None, None)`` with the reason ("3 queries: a verdict needs 5"), the design (and its
design effect, from 2 queries on) still given. When leaving a query out leaves kappa undefined (the
other queries all in one shared class), the design effect is the linearised one instead (the
cluster-robust delta-method variance, Q / (Q - 1) sum_q (sum_{i in q} g_i)^2 / n^2 with g the
gradient of :func:`calibration.stats.kappa_interval.kappa_and_variance`: Yang & Zhou 2014, "Kappa
statistic for clustered matched-pair data", Statistics in Medicine 33), and the design says so.
When the item-level variance is 0 (perfect agreement) or the queries' variance is 0 (every query
left out gives the same kappa) the design effect is undefined and taken as 1.
When n* falls under 2 items the interval is the whole range [-1, 1]. With one item per query the
jackknife is the item jackknife, the design effect about 1 and t about z: today's interval.

Contract: deterministic (no resampling, no seed); undefined (None, None) with the reason when kappa
is undefined, fewer than 2 items were rated by both, or fewer than ``min_queries`` queries.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from statistics import NormalDist
from typing import TYPE_CHECKING, Any, TypedDict

import numpy as np

from calibration.stats.interval import Interval
from calibration.stats.kappa import (
    InvalidRatings,
    RaterPair,
    Weights,
    check_weights,
    cohen_of_pair,
    disagreement_weights,
    is_missing,
)
from calibration.stats.kappa_interval import (
    MIN_ITEMS,
    check_alpha,
    kappa_and_variance,
    kappa_ci_of_pair,
    score_interval,
)
from calibration.stats.verdict import MIN_QUERIES

if TYPE_CHECKING:
    from numpy.typing import NDArray

__all__ = [
    "METHOD",
    "MIN_QUERIES",
    "ClusteredInterval",
    "KappaDesign",
    "design_effect",
    "kappa_ci_clustered",
    "too_few_queries",
]

METHOD = "score, by query"  # printed beside the interval: the score interval at the query-clustered n*
JACKKNIFE = "query jackknife"
LINEARISED = "linearised by query"


class KappaDesign(TypedDict):
    """How the labels behind a clustered kappa were drawn, as every verdict states it."""

    queries: int  # Q: distinct queries with an item rated by both
    items: int  # n: items rated by both
    items_per_query: tuple[int, float, int]  # min, median, max
    design_effect: (
        float | None
    )  # v_clustered / v_item; None when undefined (fewer than 2 queries, v_item = 0)
    effective_items: float | None  # n / deff (before the t adjustment)
    df: int  # Q - 1: the t critical value's degrees of freedom
    variance: str  # JACKKNIFE, LINEARISED, or why there is none
    min_queries: int


class ClusteredInterval(Interval):
    """The one interval type (:class:`~calibration.stats.interval.Interval`) with the design it was
    drawn under: ``design`` (:class:`KappaDesign`), ``item_level`` (today's item-level score
    interval, ``[low, high]``) and ``n_dropped`` beside ``estimate``, ``n``, ``alpha``, ``weights``,
    ``method`` and ``undefined_reason``."""

    design: KappaDesign
    item_level: list[float | None]
    n_dropped: int
    method: str
    alpha: float
    weights: Weights
    undefined_reason: str | None


def _result(
    low: float | None, high: float | None, details: dict[str, Any], reason: str | None
) -> ClusteredInterval:
    return ClusteredInterval(low, high, **details, undefined_reason=reason)


def too_few_queries(queries: int, min_queries: int = MIN_QUERIES) -> str | None:
    """The reason a verdict cannot rest on ``queries`` queries ("3 queries: a verdict needs 5"), or None."""
    if queries >= min_queries:
        return None
    return f"{queries} {'query' if queries == 1 else 'queries'}: a verdict needs {min_queries}"


def _t_quantile(p: float, df: int) -> float:
    # start-up: scipy.special only (about 0.2 s of CPU), not scipy.stats, and only for a clustered interval
    from scipy.special import stdtrit

    return float(stdtrit(df, p))


def _per_query_tables(
    cells: NDArray[np.int64], query: NDArray[np.int64], queries: int, k: int
) -> NDArray[np.float64]:
    tables = np.zeros((queries, k * k))
    np.add.at(tables, (query, cells), 1.0)
    return tables


def design_effect(
    tables: NDArray[np.floating[Any]], d: NDArray[np.float64]
) -> tuple[float | None, float | None, str]:
    """``(deff, v_clustered, variance)`` of the pooled kappa of per-query count tables ``tables``
    (Q x K*K, rows of the K x K table of rater a flattened) with disagreement weights ``d``: the
    delete-one-query jackknife's variance over the item-level delta-method variance (module
    docstring); the linearised one when a query left out leaves kappa undefined. deff is None when
    Q < 2 or either variance is 0."""
    queries, cells = tables.shape
    k = int(round(math.sqrt(cells)))
    total = tables.sum(axis=0)
    n = float(total.sum())
    if queries < 2 or n <= 0:
        return None, None, "fewer than 2 queries: no variance between queries"
    p = (total / n).reshape(k, k)
    kappa, v = kappa_and_variance(p, d)
    if not np.isfinite(kappa):
        return None, None, "kappa undefined: no variance"
    v_item = float(v) / n
    left = total - tables
    sizes = left.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        loo, _ = kappa_and_variance((left / sizes[:, None]).reshape(queries, k, k), d)
    if np.isfinite(loo).all() and (sizes > 0).all():
        v_cluster = float((queries - 1) / queries * ((loo - loo.mean()) ** 2).sum())
        variance = JACKKNIFE
    else:  # the cluster-robust delta method (Yang & Zhou 2014): per-query sums of the item gradients
        rows, cols = p.sum(axis=1), p.sum(axis=0)
        observed, expected = float((p * d).sum()), float(rows @ d @ cols)
        gradient = -(d * expected - observed * ((d @ cols)[:, None] + (rows @ d)[None, :])) / expected**2
        g = gradient.reshape(-1) - float((total / n) @ gradient.reshape(-1))
        per_query = tables @ g
        v_cluster = float(queries / (queries - 1) * (per_query**2).sum() / n**2)
        variance = f"{LINEARISED} (leaving a query out leaves kappa undefined)"
    if not v_item > 0:
        return None, v_cluster, f"{variance}; design effect undefined (item-level variance 0): taken as 1"
    if not v_cluster > 0:
        return (
            None,
            v_cluster,
            f"{variance}; design effect undefined (every query alike, variance 0): taken as 1",
        )
    return v_cluster / v_item, v_cluster, variance


def _kept(
    a: Sequence[Any], b: Sequence[Any], queries: Sequence[Hashable]
) -> tuple[list[Any], list[Any], list[Any]]:
    if not (len(a) == len(b) == len(queries)):
        raise InvalidRatings(
            f"a has {len(a)} ratings, b {len(b)} and queries {len(queries)}: one query per item, in the same order"
        )
    kept_a, kept_b, kept_q = [], [], []
    for i, (x, y, q) in enumerate(zip(a, b, queries)):
        if is_missing(q):
            raise InvalidRatings(f"queries[{i}] is missing: every item needs the query it was labelled under")
        if is_missing(x) or is_missing(y):
            continue
        kept_a.append(x)
        kept_b.append(y)
        kept_q.append(q)
    return kept_a, kept_b, kept_q


def kappa_ci_clustered(
    a: Sequence[Any],
    b: Sequence[Any],
    queries: Sequence[Hashable],
    *,
    weights: Weights = None,
    labels: Sequence[Any] | None = None,
    alpha: float = 0.05,
    min_queries: int = MIN_QUERIES,
) -> ClusteredInterval:
    """Cohen's kappa of ``a`` (a person) and ``b`` (the judge) with its (1 - alpha) interval
    clustered by ``queries[i]``, the query item i was labelled under (module docstring).

    ``a``, ``b``, ``labels``, ``weights`` as :func:`calibration.stats.kappa_interval.kappa_ci` (an
    item missing a rating is dropped). Returns an :class:`~calibration.stats.interval.Interval`:
    ``(low, high)``, or ``(None, None)`` with ``undefined_reason`` (kappa undefined, fewer than 2
    items, fewer than ``min_queries`` queries), with ``estimate``, ``n``, ``n_dropped``, ``alpha``,
    ``weights``, ``method``, ``design`` (:class:`KappaDesign`) and ``item_level`` (today's
    item-level score interval ``[low, high]``, for comparison).
    """
    alpha = check_alpha(alpha)
    weights = check_weights(weights)
    if isinstance(min_queries, bool) or not isinstance(min_queries, int) or min_queries < 2:
        raise InvalidRatings(f"min_queries must be a whole number >= 2, got {min_queries!r}")
    kept_a, kept_b, kept_q = _kept(list(a), list(b), list(queries))
    pair = RaterPair(kept_a, kept_b, labels)
    n_dropped = len(a) - pair.n
    index: dict[Hashable, int] = {}
    query = np.fromiter((index.setdefault(q, len(index)) for q in kept_q), dtype=np.int64, count=pair.n)
    n_queries = len(index)
    sizes = np.bincount(query, minlength=n_queries)
    tables = _per_query_tables(pair.a * pair.k + pair.b, query, n_queries, pair.k)
    d = disagreement_weights(pair.k, weights)
    deff, _, variance = design_effect(tables, d)
    # a design effect under 1 (queries more alike than independent items would be) is kept at 1: read on
    # a handful of queries it is noise more often than evidence, and at 0.0002 it made a "95%" interval
    # of 80 labels 0.004 wide (issue #40)
    used = max(1.0, deff) if deff is not None else 1.0
    if deff is not None and deff < 1.0:
        variance += f"; design effect {deff:.2f} kept at 1"
    design: KappaDesign = {
        "queries": n_queries,
        "items": pair.n,
        "items_per_query": (
            (int(sizes.min()), float(np.median(sizes)), int(sizes.max())) if n_queries else (0, 0.0, 0)
        ),
        "design_effect": deff,
        "effective_items": pair.n / used if deff else None,
        "df": max(n_queries - 1, 0),
        "variance": variance,
        "min_queries": min_queries,
    }
    item = kappa_ci_of_pair(pair, weights, alpha)
    estimate = cohen_of_pair(pair, weights)
    details: dict[str, Any] = {
        "method": METHOD,
        "estimate": estimate["kappa"],
        "n": pair.n,
        "n_dropped": n_dropped,
        "alpha": alpha,
        "weights": weights,
        "design": design,
        "item_level": [item.low, item.high],
    }
    if estimate["kappa"] is None:
        return _result(None, None, details, estimate["undefined_reason"])
    if pair.n < MIN_ITEMS:
        reason = f"{pair.n} item rated by both raters: an interval needs at least {MIN_ITEMS}"
        return _result(None, None, details, reason)
    refused = too_few_queries(n_queries, min_queries)
    if refused is not None:
        return _result(None, None, details, refused)
    z = NormalDist().inv_cdf(1.0 - alpha / 2)
    t = _t_quantile(1.0 - alpha / 2, n_queries - 1)
    effective = pair.n / used * (z / t) ** 2
    if effective < MIN_ITEMS:
        return _result(-1.0, 1.0, details, None)
    low, high = score_interval(pair.confusion() * (effective / pair.n), weights, alpha)
    return _result(low, high, details, None)
