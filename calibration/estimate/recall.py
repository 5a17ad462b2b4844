"""Recall@k of one run estimated from the sample, over queries, and infAP (pure: numpy
and scipy only).

recall@k = X / (X + Y): X = judged relevant in the top k + the estimated unjudged relevant in
the top k, Y = judged relevant outside it + the estimated unjudged relevant outside it. The
run's ranking tells how many of each stratum's candidates are in the top k (``N_top_k``), so
each stratum splits into two cells of known size, and each cell's total is estimated as its
size times its sample rate (post-stratification, W. G. Cochran, Sampling Techniques, 1977,
sec. 2.13; given how many sampled documents fell in a cell, they are a simple random sample
of it). A cell with candidates but no sampled document takes its stratum's rate (named in
``notes``). X + Y (``denominator``) is |Rel| estimated the same way; it differs a little from
the Horvitz-Thompson |Rel| (``rel``) that the ceilings use (recall min(1, k/|Rel|), precision
min(1, |Rel|/k)), and keeps the estimate feasible. Standard error by the delta method, X and Y
independent: ((1 - R)^2 V(X) + R^2 V(Y))^(1/2) / (X + Y).

The interval: X and Y have independent confidence distributions, each the convolution of its
cells'; R's bounds are quantiles of X / (X + Y) under them
(:func:`calibration.estimate.intervals.ratio_interval`), alpha spent as for counts, the least
favourable samples bounded from the design alone (N, n and N_top_k per stratum). A cell with
no sampled document gets the no-information distribution. ``"exact"`` takes X's lower and Y's
upper distribution for the lower bound, and the reverse for the upper.

The intervals are for one query given its sample; :func:`aggregate_recall` adds a bootstrap
over queries. Coverage and rationale: docs/estimate.md.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from calibration.estimate.intervals import (
    Dist,
    check_interval,
    pair_distributions,
    ratio_interval,
    ratio_quantile,
    z_value,
)
from calibration.estimate.points import (
    LabelledStratum,
    labelled_strata,
    rel_from_unjudged,
    unjudged_from_strata,
    whole_number,
)

if TYPE_CHECKING:
    from numpy.typing import NDArray

__all__ = ["aggregate_recall", "estimate_recall_at_k"]


# ------------------------------------------------------------------ one query


class _TopK(NamedTuple):
    """A stratum as recall@k reads it: :func:`labelled_strata` with ``need_top_k`` has checked
    that its ``in_top`` and ``N_top`` are there."""

    N: int
    n: int
    rel: NDArray[np.bool_]
    in_top: NDArray[np.bool_]
    N_top: int


def _top_k(s: LabelledStratum) -> _TopK:
    if s.in_top is None or s.N_top is None:  # pragma: no cover - labelled_strata(need_top_k=True) refuses it
        raise ValueError(f"stratum {s.name!r}: recall@k needs in_top and N_top")
    return _TopK(s.N, s.n, s.rel, s.in_top, s.N_top)


def _cells_total(
    cells: list[tuple[int, int, int]], parsed: list[LabelledStratum]
) -> tuple[float, float, list[str]]:
    """Estimated relevant count of one side (in or out of the top k) of every stratum, its
    variance, and the strata whose cell on this side has candidates but no sampled document."""
    total = var = 0.0
    collapsed: list[str] = []
    for (big_m, m, y), s in zip(cells, parsed):
        if big_m == 0:
            continue
        if m == 0:  # collapsed into the stratum: its sample rate; variance bounded by M^2 / 4
            total += big_m * s.y / s.n
            var += big_m**2 / 4
            collapsed.append(repr(s.name))
            continue
        total += big_m * y / m
        if m == big_m:
            continue
        s2 = 0.25 if m == 1 else y * (m - y) / (m * (m - 1))
        var += big_m**2 * (1 - m / big_m) * s2 / m
    return total, var, collapsed


def estimate_recall_at_k(
    judged_relevant: int,
    judged_relevant_in_top_k: int,
    strata: Sequence[Any],
    k: int,
    *,
    min_grade: float = 1,
    alpha: float = 0.05,
    interval: str = "midp",
) -> dict[str, Any]:
    """Estimated true recall@k of one run on one query, with its interval and ceilings.

    ``judged_relevant``: relevant documents of the fully judged pool; ``judged_relevant_in_top_k``:
    how many of them are in the run's top k. Each stratum carries ``in_top_k`` and ``N_top_k``
    (:mod:`calibration.estimate.points`). Returns ``{"k", "estimate", "ci", "se", "numerator": {"estimate",
    "judged", "unjudged_estimate"}, "rel": <estimate_rel>, "recall_judged_only",
    "recall_ceiling", "recall_ceiling_ci", "precision_ceiling", "precision_ceiling_ci",
    "n_sampled", "n_sampled_relevant", "n_sampled_in_top_k", "n_sampled_relevant_in_top_k",
    "N_unjudged_in_top_k", "denominator", "notes", "alpha", "interval", "reason"}``.
    ``estimate`` = numerator / denominator (the module docstring says how both are estimated);
    ``rel`` is the Horvitz-Thompson |Rel| with its interval, which the ceilings use;
    ``recall_judged_only`` is what the labels alone say. ``estimate`` and ``ci`` are None with
    the reason when |Rel| is undefined or estimated 0."""
    check_interval(interval)
    z = z_value(alpha)
    judged = whole_number(judged_relevant, "judged_relevant")
    judged_top = whole_number(judged_relevant_in_top_k, "judged_relevant_in_top_k")
    k = whole_number(k, "k")
    if k < 1:
        raise ValueError("k is 0; expected k >= 1")
    if judged_top > judged:
        raise ValueError(f"judged_relevant_in_top_k={judged_top} exceeds judged_relevant={judged}")
    if judged_top > k:
        raise ValueError(f"judged_relevant_in_top_k={judged_top} exceeds k={k}")
    parsed = labelled_strata(strata, min_grade, need_top_k=True)
    tops = [_top_k(s) for s in parsed]
    rel = rel_from_unjudged(judged, unjudged_from_strata(parsed, alpha, interval))
    top_unjudged = sum(s.N_top for s in tops)
    if judged_top + top_unjudged > k:
        raise ValueError(
            f"{judged_top} judged relevant and {top_unjudged} unjudged candidates in the top k exceed k={k}"
        )
    in_sample = sum(int(s.in_top.sum()) for s in tops)
    rel_in_sample = sum(int((s.in_top & s.rel).sum()) for s in tops)
    out: dict[str, Any] = {
        "k": k,
        "estimate": None,
        "ci": None,
        "se": None,
        "numerator": None,
        "rel": rel,
        "recall_judged_only": judged_top / judged if judged else None,
        "recall_ceiling": None,
        "recall_ceiling_ci": None,
        "precision_ceiling": None,
        "precision_ceiling_ci": None,
        "n_sampled": rel["n_sampled"],
        "n_sampled_relevant": rel["n_sampled_relevant"],
        "n_sampled_in_top_k": in_sample,
        "n_sampled_relevant_in_top_k": rel_in_sample,
        "N_unjudged_in_top_k": top_unjudged,
        "denominator": None,
        "notes": list(rel["unjudged"]["notes"]),
        "alpha": alpha,
        "interval": interval,
        "reason": rel["reason"],
    }
    if rel["estimate"] is None:
        return out
    cells_in = [(s.N_top, int(s.in_top.sum()), int((s.in_top & s.rel).sum())) for s in tops]
    cells_out = [(s.N - s.N_top, int((~s.in_top).sum()), int((~s.in_top & s.rel).sum())) for s in tops]
    x_hat, v_x, collapsed = _cells_total(cells_in, parsed)
    y_hat, v_y, collapsed_out = _cells_total(cells_out, parsed)
    numerator = judged_top + x_hat
    denominator = numerator + (judged - judged_top) + y_hat
    out["numerator"] = {"estimate": numerator, "judged": judged_top, "unjudged_estimate": x_hat}
    out["denominator"] = denominator
    if collapsed or collapsed_out:
        out["notes"].append(
            f"no sampled document in the {', '.join(collapsed + collapsed_out)} part: estimated at its "
            "stratum's sample rate"
        )
    rel_hat, (rel_low, rel_high) = rel["estimate"], rel["ci"]
    if rel_hat > 0:
        out["recall_ceiling"] = min(1.0, k / rel_hat)
        out["precision_ceiling"] = min(1.0, rel_hat / k)
    out["recall_ceiling_ci"] = [
        min(1.0, k / rel_high) if rel_high else 1.0,
        min(1.0, k / rel_low) if rel_low else 1.0,
    ]
    out["precision_ceiling_ci"] = [min(1.0, rel_low / k), min(1.0, rel_high / k)]
    if denominator == 0:
        out["reason"] = "no relevant document judged or found in the sample: recall is undefined"
        return out
    recall = numerator / denominator
    out["estimate"] = recall
    # delta method for X / (X + Y), X and Y independent: ((1 - R)^2 V(X) + R^2 V(Y)) / (X + Y)^2
    out["se"] = math.sqrt((1 - recall) ** 2 * v_x + recall**2 * v_y) / denominator
    if interval == "wald":
        half = z * out["se"]
        out["ci"] = [max(0.0, recall - half), min(1.0, recall + half)]
        return out

    def dists(cells: list[tuple[int, int, int]], base: int, kind: str = interval) -> tuple[Dist, Dist]:
        lo, hi = pair_distributions([c for c in cells if c[0] > 0], kind)
        return (lo[0] + base, lo[1]), (hi[0] + base, hi[1])

    x_pair = dists(cells_in, judged_top)
    y_pair = dists(cells_out, judged - judged_top)
    dead = None
    if interval != "jeffreys":
        # The least favourable samples, from the design alone (N, n and N_top_k per stratum; how
        # the n split between the top k and the rest is itself random, so each side takes its
        # largest possible share, and the other side its most extreme value, a point): R's upper
        # bound is at least high_floor whatever the sample, and its lower bound at most low_ceiling.
        x_max = judged_top + sum(s.N_top for s in tops)
        y_max = judged - judged_top + sum(s.N - s.N_top for s in tops)
        x_none = dists([(s.N_top, min(s.n, s.N_top), 0) for s in tops], judged_top)[1]
        y_none = dists([(s.N - s.N_top, min(s.n, s.N - s.N_top), 0) for s in tops], judged - judged_top)[1]
        high_floor = (
            ratio_quantile(x_none, (y_max, np.ones(1)), 1 - alpha / 2, strict=False)
            if x_none[0] + y_max
            else 0.0
        )
        low_ceiling = (
            ratio_quantile((x_max, np.ones(1)), y_none, alpha / 2, strict=True) if x_max + y_none[0] else 0.0
        )
        dead = (high_floor, low_ceiling)
    out["ci"] = ratio_interval(x_pair, y_pair, alpha, dead)
    return out


# ------------------------------------------------------------------ over queries


def aggregate_recall(
    per_query: Mapping[str, Mapping[str, Any]] | Sequence[Mapping[str, Any]],
    *,
    n_boot: int = 2000,
    seed: int = 0,
    alpha: float = 0.05,
) -> dict[str, Any]:
    """Mean estimated recall@k over queries and the ratio estimator, each with a bootstrap CI.

    ``per_query``: results of :func:`estimate_recall_at_k` (a mapping query id -> result, or a
    list). Queries whose recall is undefined are left out and listed. ``mean`` is the mean of
    the per-query estimates; ``ratio`` is the sum of their numerators (estimated relevant in the
    top k) over the sum of their denominators (the estimated |Rel| each recall divides by), so
    each query weighs by its |Rel|. Both intervals are percentile intervals of a
    seeded bootstrap over the defined queries (B. Efron, R. Tibshirani, An Introduction to the
    Bootstrap, 1993, ch. 13): they describe how the figure would vary over another draw of
    queries like these, and include each query's sampling noise only as far as it shows in
    the spread of the estimates.

    Returns ``{"mean": {"estimate", "ci"}, "ratio": {"estimate", "ci", "numerator",
    "denominator"}, "n_queries", "n_defined", "n_undefined", "undefined": [ids or indexes],
    "n_sampled", "n_sampled_relevant", "k", "n_boot", "seed", "alpha", "reason"}``."""
    z_value(alpha)
    n_boot = whole_number(n_boot, "n_boot")
    if n_boot < 1:
        raise ValueError("n_boot is 0; expected at least 1 resample")
    items = list(per_query.items()) if isinstance(per_query, Mapping) else list(enumerate(per_query))
    ks = {r.get("k") for _, r in items}
    defined = [(q, r) for q, r in items if r.get("estimate") is not None]
    undefined = [q for q, r in items if r.get("estimate") is None]
    out: dict[str, Any] = {
        "mean": {"estimate": None, "ci": None},
        "ratio": {"estimate": None, "ci": None, "numerator": None, "denominator": None},
        "n_queries": len(items),
        "n_defined": len(defined),
        "n_undefined": len(undefined),
        "undefined": undefined,
        "n_sampled": sum(int(r.get("n_sampled") or 0) for _, r in items),
        "n_sampled_relevant": sum(int(r.get("n_sampled_relevant") or 0) for _, r in items),
        "k": ks.pop() if len(ks) == 1 else sorted(ks, key=str),
        "n_boot": n_boot,
        "seed": seed,
        "alpha": alpha,
        "reason": None,
    }
    if not defined:
        out["reason"] = "no query with a defined recall estimate"
        return out
    recall = np.array([r["estimate"] for _, r in defined], dtype=np.float64)
    num = np.array([r["numerator"]["estimate"] for _, r in defined], dtype=np.float64)
    den = np.array([r["denominator"] for _, r in defined], dtype=np.float64)
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(defined), size=(n_boot, len(defined)))
    means = recall[idx].mean(axis=1)
    ratios = num[idx].sum(axis=1) / den[idx].sum(axis=1)
    q = [alpha / 2, 1 - alpha / 2]
    out["mean"] = {"estimate": float(recall.mean()), "ci": [float(v) for v in np.quantile(means, q)]}
    out["ratio"] = {
        "estimate": float(num.sum() / den.sum()),
        "ci": [float(v) for v in np.quantile(ratios, q)],
        "numerator": float(num.sum()),
        "denominator": float(den.sum()),
    }
    return out


# ------------------------------------------------------------------ infAP
