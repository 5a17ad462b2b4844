"""A judge's kappa verdict with the design its labels were drawn under (issue #39): one function for
``review``, ``agree``, ``check``, the Holes section and the pages, so they print one design, interval and
verdict for the same labels.

Pure module: plain data in, plain data out (numpy; :mod:`calibration.stats.kappa_clustered` and
:mod:`calibration.stats.kappa_sequence`). Why each part, with the measurements: docs/agreement.md.

What :func:`judged_kappa` reads, beside the two raters' grades:

- **the query of each item** (``queries``; None when the labels carry none). With queries the interval
  is the query-clustered one (:func:`calibration.stats.kappa_clustered.kappa_ci_clustered`) and fewer
  than ``min_queries`` queries give no verdict ("3 queries: a verdict needs 5"); without, the item-level
  score interval, and the design says the items were counted as independent draws.
- **how the labels were drawn** (``drawn``): ``None`` when the product cannot know (a file given to
  ``agree``: the report says the verdict assumes a random draw); otherwise a :class:`Drawn` saying
  whether every item was drawn at random (a review sample, a hole sample, ``pool --estimate``) and how.
  Labels chosen by hand give the figures with no verdict, and say why.
- **how often the verdict was read** (``earlier_looks``): 0 when this is the first reading of these
  labels; more (the store recorded earlier reviews of the same judge on fewer labels) and the interval
  is the anytime-valid confidence sequence's at this n (:mod:`calibration.stats.kappa_sequence`), so
  stopping at the first decision stays safe. With queries the sequence is read at the clustered
  effective number of items, n / deff (z / t)^2, as the fixed interval is.

Beside the pooled kappa (the verdict's: one kappa of every item, each query weighted by its items) the
result carries the median per-query kappa over the queries where it is defined, and names the population
the interval speaks for: "queries drawn like these 12" with queries, "items drawn like these 40" without.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from statistics import NormalDist, median
from typing import Any, TypedDict

import numpy as np

from calibration.stats.kappa import RaterPair, Weights, cohen_of_pair
from calibration.stats.kappa_clustered import MIN_QUERIES, KappaDesign, kappa_ci_clustered, too_few_queries
from calibration.stats.kappa_interval import MIN_ITEMS, KappaCI, kappa_ci_of_pair
from calibration.stats.kappa_sequence import HORIZON, multiplier, score_intervals
from calibration.stats.kappa_sequence import labels_to_decide as sequence_more
from calibration.stats.verdict import advice, design_line, labels_to_decide, verdict

__all__ = ["Drawn", "JudgedKappa", "PerQuery", "design_line", "judged_kappa", "per_query_kappas"]

FIXED = "fixed-n score interval"
SEQUENCE = "anytime-valid confidence sequence"
RANDOM_SOURCES = "a review sample, a hole sample or pool --estimate"


class Drawn(TypedDict):
    """How the labelled items were drawn: ``random`` True when every one was drawn at random (``how``
    names the draws), False when some were chosen (``how`` says how many, of how many)."""

    random: bool
    how: str


class PerQuery(TypedDict):
    """Kappa within each query: the median over the queries where it is defined, and the range."""

    median: float | None
    low: float | None
    high: float | None
    defined: int  # queries with a defined kappa (2 or more items, two classes)
    queries: int


class JudgedKappa(TypedDict):
    """One judge's (or rater pair's) kappa, interval and verdict with the design behind them."""

    kappa: float | None
    ci: list[float] | None  # the interval the verdict reads
    item_level_ci: list[float] | None  # the item-level fixed-n score interval, for comparison
    n: int
    method: str  # FIXED or SEQUENCE, with "by query" when clustered
    design: dict[str, Any]  # KappaDesign (queries None when not carried) with people and clustered
    per_query: PerQuery | None
    population: str
    drawn: Drawn | None
    read: str  # "once" or "while labelling (N earlier looks)"
    verdict: str
    reason: str | None  # why there is no verdict (uncalibrated) or what the verdict assumes
    more_labels: int | None
    advice: str


def per_query_kappas(
    a: Sequence[Any],
    b: Sequence[Any],
    queries: Sequence[Hashable],
    *,
    labels: Sequence[Any] | None,
    weights: Weights,
) -> PerQuery:
    """The kappa of each query's items (undefined below 2 items or with one class only): median and range."""
    groups: dict[Hashable, list[int]] = {}
    for i, q in enumerate(queries):
        groups.setdefault(q, []).append(i)
    values = []
    for rows in groups.values():
        if len(rows) < MIN_ITEMS:
            continue
        kappa = cohen_of_pair(RaterPair([a[i] for i in rows], [b[i] for i in rows], labels), weights)["kappa"]
        if kappa is not None and not math.isnan(kappa):
            values.append(float(kappa))
    return {
        "median": float(median(values)) if values else None,
        "low": min(values) if values else None,
        "high": max(values) if values else None,
        "defined": len(values),
        "queries": len(groups),
    }


def _sequence_interval(
    pair: RaterPair, weights: Weights, alpha: float, effective: float
) -> tuple[float | None, float | None]:
    """The confidence sequence's interval of the pair's table read at ``effective`` items."""
    if effective < MIN_ITEMS:
        return -1.0, 1.0
    table = pair.confusion()[None, :, :] * (effective / pair.n)
    _, low, high = score_intervals(table, multiplier(np.array([effective]), alpha, HORIZON), weights)
    if math.isnan(low[0]):
        return None, None
    return float(low[0]), float(high[0])


def judged_kappa(
    people: Sequence[Any],
    judge: Sequence[Any],
    queries: Sequence[Hashable] | None = None,
    *,
    labels: Sequence[Any] | None,
    weights: Weights,
    bar: float,
    alpha: float = 0.05,
    min_labels: int = 0,
    min_queries: int = MIN_QUERIES,
    raters: int | None = None,
    drawn: Drawn | None = None,
    earlier_looks: int = 0,
    pair: RaterPair | None = None,
    item: KappaCI | None = None,
) -> JudgedKappa:
    """The kappa of ``people`` against ``judge`` (one consensus grade and one judge answer per item,
    ``queries[i]`` the query item i was labelled under, or None), its interval and verdict at ``bar``
    with the design (module docstring). ``raters``: how many people stand behind the people's grades
    (stated in the design). ``min_labels``: items a verdict needs (0: no minimum). ``pair``: the
    grades already encoded (``RaterPair(people, judge, labels)``; ``people`` and ``judge`` are then
    read only for the interval by query), ``item``: its item-level interval already computed
    (``kappa_ci_of_pair(pair, weights, alpha)``): what a report of many pairs hands over."""
    if pair is None:
        pair = RaterPair(list(people), list(judge), labels)
    estimate = cohen_of_pair(pair, weights)
    kappa = estimate["kappa"]
    if item is None:
        item = kappa_ci_of_pair(pair, weights, alpha)
    item_ci = None if item.low is None or item.high is None else [float(item.low), float(item.high)]
    n = pair.n
    clustered = queries is not None
    per_query: PerQuery | None = None
    z = NormalDist().inv_cdf(1.0 - alpha / 2)
    if clustered:
        assert queries is not None
        result = kappa_ci_clustered(
            people, judge, queries, weights=weights, labels=labels, alpha=alpha, min_queries=min_queries
        )
        design: dict[str, Any] = dict(result.design)
        low, high = result
        effective = None
        deff = design["design_effect"]
        if design["queries"] >= 2:
            t_over_z = float(_t(1.0 - alpha / 2, design["queries"] - 1)) / z
            effective = n / max(1.0, deff if deff is not None else 1.0) / t_over_z**2  # kept at 1 (#40)
        per_query = per_query_kappas(people, judge, queries, labels=labels, weights=weights)
        population = f"queries drawn like these {design['queries']}"
    else:
        design = _unclustered_design(n, min_queries)
        low, high = item.low, item.high
        effective = float(n)
        population = f"items drawn like these {n} (no query carried: each item counted as one draw)"
    design["people"] = raters
    design["clustered"] = clustered
    read = (
        "once"
        if earlier_looks <= 0
        else f"while labelling ({earlier_looks} earlier look{'s' if earlier_looks != 1 else ''})"
    )
    method = (SEQUENCE if earlier_looks > 0 else FIXED) + (", by query" if clustered else "")
    if earlier_looks > 0 and low is not None and effective is not None and kappa is not None:
        low, high = _sequence_interval(pair, weights, alpha, effective)
    ci = None if low is None or high is None else [float(low), float(high)]
    found, reason, more = _decide(
        kappa,
        ci,
        n,
        design,
        bar=bar,
        min_labels=min_labels,
        drawn=drawn,
        clustered=clustered,
        effective=effective,
        sequential=earlier_looks > 0,
        alpha=alpha,
        undefined=estimate["undefined_reason"],
    )
    if found == "uncalibrated":
        words = _uncalibrated_advice(reason or "", n, min_labels, design, min_queries, drawn)
    else:
        words = advice(found, more=more, n=n, min_labels=min_labels)
    return {
        "kappa": kappa,
        "ci": ci,
        "item_level_ci": item_ci,
        "n": n,
        "method": method,
        "design": design,
        "per_query": per_query,
        "population": population,
        "drawn": drawn,
        "read": read,
        "verdict": found,
        "reason": reason,
        "more_labels": more,
        "advice": words,
    }


def _t(p: float, df: int) -> float:
    # start-up: scipy.special (about 0.2 s of CPU), only for labels that carry their queries
    from scipy.special import stdtrit

    return float(stdtrit(df, p))


def _unclustered_design(n: int, min_queries: int) -> dict[str, Any]:
    design: KappaDesign = {
        "queries": 0,
        "items": n,
        "items_per_query": (0, 0.0, 0),
        "design_effect": None,
        "effective_items": float(n),
        "df": 0,
        "variance": "no query carried",
        "min_queries": min_queries,
    }
    out: dict[str, Any] = dict(design)
    out["queries"] = None
    return out


def _decide(
    kappa: float | None,
    ci: list[float] | None,
    n: int,
    design: dict[str, Any],
    *,
    bar: float,
    min_labels: int,
    drawn: Drawn | None,
    clustered: bool,
    effective: float | None,
    sequential: bool,
    alpha: float,
    undefined: str | None,
) -> tuple[str, str | None, int | None]:
    """(verdict, reason, more labels): undefined, then too few items, too few queries, not drawn at
    random; else the interval against the bar."""
    if min_labels and n < min_labels:  # before "undefined": too few labels is the first thing to fix
        return "uncalibrated", f"{n} human-labelled items, fewer than the {min_labels} needed", None
    if kappa is None:
        return "undefined", undefined, None
    if clustered:
        refused = too_few_queries(design["queries"], design["min_queries"])
        if refused is not None:
            return "uncalibrated", refused, None
    if drawn is not None and not drawn["random"]:
        return (
            "uncalibrated",
            f"{drawn['how']}: a verdict reads only labels drawn at random ({RANDOM_SOURCES})",
            None,
        )
    found = verdict(kappa, ci, bar=bar)
    reason = None
    if drawn is None:
        reason = "the verdict assumes these items were drawn at random from those the judge grades"
    more = None
    if found == "undecided" and ci is not None:
        scale = n / effective if effective else 1.0
        if sequential and effective:
            extra = sequence_more(kappa, ci[0], ci[1], max(int(effective), 1), bar=bar, alpha=alpha)
        else:
            extra = labels_to_decide(kappa, ci, max(int(effective or n), 1), bar=bar)
        more = None if extra is None else max(1, math.ceil(extra * scale))
    return found, reason, more


def _uncalibrated_advice(
    reason: str, n: int, min_labels: int, design: dict[str, Any], min_queries: int, drawn: Drawn | None
) -> str:
    if min_labels and n < min_labels:
        return advice("uncalibrated", n=n, min_labels=min_labels)
    if design.get("queries") is not None and design["queries"] < design["min_queries"]:
        short = design["min_queries"] - design["queries"]
        return (
            f"label items of {short} more {'query' if short == 1 else 'queries'} to reach the "
            f"{design['min_queries']} a verdict needs: more queries narrow the interval more than more "
            "items of the same ones (calibration plan compares designs)"
        )
    return (
        "draw the labels at random (calibration review --sample for traces, pool --estimate or a hole "
        "sample for chunks) and review again; until then, treat the judge's figures as unshown"
    )
