"""The people's faithfulness pass rate with its one interval (issue #40, item 7: "one interval for a
pass rate everywhere"): ``check``'s faithfulness rule, the Metrics page's Check section and the
review's people-only figure all call :func:`people_pass_rate`, so a pass rate reads the same on
every face. Pure: numpy and scipy only.

Traces come in queries. The traces of one query are not independent draws (one retrieval, one
prompt, answers alike), so Wilson's interval at the number of traces claims more than the labels
hold, as the kappa interval did before issue #39. The interval here is Wilson's score interval at
the effective number of traces, Korn & Graubard's modification for clustered samples (E. L. Korn,
B. I. Graubard, "Confidence intervals for proportions with small expected number of positive counts
estimated from survey data", Survey Methodology 24(2), 1998, 193-201):

    p = passes / n
    v_c = k sum_g (sum_{i in g} (y_i - p))^2 / n^2,   k = G / (G - 1) * (n - 1) / n
    deff = v_c / (p (1 - p) / n),   kept at 1 or more
    n_eff = n / deff,   critical value t(G - 1)

with G queries (a trace without one is its own query). ``v_c`` is the cluster-robust variance of the
mean with the CR1 factor, the people-only variance of :mod:`calibration.stats.ppi_design` (with
every trace its own query it is p (1 - p) / n and deff is 1); the t quantile with G - 1 degrees of
freedom stands for z as Korn and Graubard's degrees-of-freedom adjustment does (their n_eff (z /
t)^2 is this interval with t for z). The design effect is kept at 1 or more (a choice made here, not
theirs): a gate's interval is never narrower than Wilson's over independent traces, where a design
effect under 1 read on a handful of queries is more likely noise than evidence. Without two traces in one query,
or with one query only (no variance between queries to read), or when every trace passes or every
one fails (p (1 - p) = 0, no design effect to read), it is Wilson's interval with the normal
quantile, and ``how`` says which.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from typing import TypedDict

__all__ = ["PeoplePassRate", "pass_rate_how", "people_pass_rate", "rate_interval", "wilson_interval"]


class PeoplePassRate(TypedDict):
    estimate: float
    ci: list[float]
    n: int
    passes: int
    queries: int
    design_effect: float | None  # None: not read (no query with two traces, one query, p 0 or 1)
    effective_n: float
    critical: str  # "normal" or "t(G - 1)"
    how: str  # the interval in words: "Wilson 95% at the effective n 9.8 (design effect 1.63 by query, t(3))"


def wilson_interval(p: float, n: float, z: float) -> list[float]:
    """Wilson's score interval of a proportion ``p`` over ``n`` (may be fractional: an effective n)
    at the critical value ``z``, cut to [0, 1]."""
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return [max(0.0, centre - half), min(1.0, centre + half)]


def rate_interval(ci: Sequence[float]) -> list[float]:
    """An interval of a pass rate cut to [0, 1] (a normal interval, as PPI's, can cross 0 or 1 at
    small n; a rate cannot): the review and ``calibration ppi`` read a corrected rate's interval so."""
    return [max(0.0, float(ci[0])), min(1.0, float(ci[1]))]


def people_pass_rate(
    passes: Sequence[bool],
    queries: Sequence[Hashable | None] | None = None,
    alpha: float = 0.05,
) -> PeoplePassRate:
    """The pass rate of ``passes`` (one per labelled trace: did the people's consensus pass it) with
    its (1 - ``alpha``) interval, clustered by ``queries`` (each trace's query; None: its own), as
    the module docstring gives it. Raises ValueError when there is no trace, or the lengths differ."""
    n = len(passes)
    if n == 0:
        raise ValueError("no labelled trace: a pass rate needs at least one")
    if queries is not None and len(queries) != n:
        raise ValueError(f"{len(queries)} queries for {n} traces: give one per trace")
    if not 0 < alpha < 1:
        raise ValueError(f"alpha is {alpha}; expected a number between 0 and 1")
    y = [1.0 if bool(x) else 0.0 for x in passes]
    total = int(sum(y))
    p = total / n
    keys = [q if q is not None else ("trace", i) for i, q in enumerate(queries or [None] * n)]
    sums: dict[Hashable, float] = {}
    for key, value in zip(keys, y):
        sums[key] = sums.get(key, 0.0) + value - p
    g = len(sums)
    level = f"{round(100 * (1 - alpha))}%"
    clustered = g < n  # some query holds two traces
    deff: float | None = None
    if clustered and g >= 2 and 0 < p < 1:
        k = g / (g - 1) * (n - 1) / n
        deff = k * sum(a * a for a in sums.values()) / (n * n) / (p * (1 - p) / n)
    used = max(1.0, deff) if deff is not None else 1.0
    n_eff = n / used
    # start-up: scipy.stats (~0.5 s), only when a pass rate is computed: not for a judge's closing line
    from scipy.stats import norm
    from scipy.stats import t as student_t

    if deff is not None:
        z = float(student_t.ppf(1 - alpha / 2, g - 1))
        critical = f"t({g - 1})"
        kept = f"{deff:.2f}" if deff >= 1 else f"{deff:.2f}, kept at 1"
        how = f"Wilson {level} at the effective n {n_eff:.1f} (design effect by query {kept}; {critical})"
    else:
        z = float(norm.ppf(1 - alpha / 2))
        critical = "normal"
        if not clustered:
            why = "one trace a query" if queries is not None else "no query given"
        elif g < 2:
            why = "every trace in one query: no variance between queries to read"
        else:
            why = f"every trace {'passes' if p == 1 else 'fails'}: no design effect to read"
        how = f"Wilson {level} ({why})"
    return {
        "estimate": p,
        "ci": wilson_interval(p, n_eff, z),
        "n": n,
        "passes": total,
        "queries": g,
        "design_effect": deff,
        "effective_n": n_eff,
        "critical": critical,
        "how": how,
    }


def pass_rate_how(rate: PeoplePassRate, pass_grade: int) -> str:
    """What a people's pass rate rests on, in the words every face prints: ``11 of 16 labelled traces
    fully supported (grade 2) over 4 queries; Wilson 95% at the effective n 9.8 (...)``."""
    over = f" over {rate['queries']} {'query' if rate['queries'] == 1 else 'queries'}"
    return (
        f"{rate['passes']} of {rate['n']} labelled traces fully supported (grade {pass_grade}){over}; "
        f"{rate['how']}"
    )
