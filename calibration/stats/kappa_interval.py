"""The confidence interval of Cohen's kappa (unweighted and weighted) that every face prints.

Pure module: plain data in, plain data out (numpy, scipy; the ratings read by :mod:`calibration.stats.kappa`;
the verdict's rule of :mod:`calibration.stats.verdict`). :mod:`calibration.stats.agreement` re-exports its public
names. Why this interval, the references and the coverage simulation: docs/agreement.md.

Why not the percentile bootstrap. A bootstrap resamples the items seen: at perfect agreement every
resample agrees perfectly, so the interval is the point [1, 1] whatever n (and near-perfect agreement
at small n nearly so: 95% intervals covered a true kappa of 0.95 in about half the samples of 20 items,
docs/agreement.md). Wald intervals from the asymptotic variance (Fleiss, Cohen & Everitt 1969;
statsmodels' ``cohens_kappa``, R vcd's ``Kappa``, SAS) collapse the same way, because that variance is 0
at perfect agreement.

The interval: a score (Wilson-type) interval. Wilson (1927) inverts the test of each candidate value
with the variance the candidate implies, not the variance of the estimate; Donner & Eliasziw (1992,
"A goodness-of-fit approach to inference procedures for the kappa statistic", Statistics in
Medicine 11) did this for kappa of two binary ratings. Here, for K classes and any weights:

- n items rated by both raters, p_ij their shares (rows: rater a), r and c the margins, m = (r + c) / 2
  the pooled margin, d_ij the disagreement weights of :mod:`calibration.stats.kappa`, O = sum d_ij p_ij,
  E = sum_ij d_ij r_i c_j, kappa = 1 - O / E.
- V(p), n times the delta-method variance of kappa at the table p (multinomial sampling of items):
  g_ij = d kappa / d p_ij = -(d_ij E - O (sum_l d_il c_l + sum_l r_l d_lj)) / E^2, and
  V = sum p_ij g_ij^2 - (sum p_ij g_ij)^2. It is the large-sample variance of Fleiss, Cohen & Everitt
  (1969, "Large sample standard errors of kappa and weighted kappa", Psychological Bulletin 72(5)):
  it gives SAS's printed ASE (0.138, weighted 0.1457) for statsmodels' 3 x 3 test table.
- The tables a candidate kappa k0 is tested against lie on two segments from the observed table p:
  below kappa-hat, toward chance, (1 - t) p + t m m^T (kappa 0: the raters' pooled grades given
  independently); above, toward perfect agreement, (1 - u) p + u diag(m) (kappa 1).
- The interval: the k0 connected to kappa-hat with (kappa-hat - k0)^2 <= z^2 V(table of k0) / n,
  z the normal 1 - alpha / 2 quantile. Each end is the first crossing along its segment, found on a
  grid of 64 steps and refined by Brent's method. Below chance (k0 < min(kappa-hat, 0)) the variance is
  held at the larger of V(p) and V(m m^T), so that end is kappa-hat - z sqrt(V / n); the interval is
  clipped to [-1, 1].

What it does at the edges. Perfect agreement gives [L, 1], L < 1: with the raters' margins equal, L is
Wilson's lower bound on the observed agreement carried through the chance correction, (W - p_e) / (1 -
p_e), W = n / (n + z^2) (6 items over grades 0, 0, 1, 1, 2, 3: [0.462, 1]). At large n the
variance at the candidate tends to the variance at the estimate and the interval to the Wald interval,
which the percentile bootstrap matches too (n = 2,000: the three agree to about 0.005).
At a true kappa of 0.2-0.95, n = 20-300, four relevance grades, its 95% intervals covered the true
kappa in 93-98% of samples, unweighted and quadratic (docs/agreement.md, the table).

Contract: deterministic (no resampling, no seed), about 0.3 ms an interval; undefined (None, None) with
the reason when kappa is undefined (one shared class, no item) or fewer than 2 items were rated by both.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from statistics import NormalDist
from typing import TYPE_CHECKING, Any

import numpy as np

from calibration.stats.interval import Interval
from calibration.stats.kappa import (
    InvalidRatings,
    RaterPair,
    Weights,
    check_weights,
    cohen_of_pair,
    cohen_of_pairs,
    disagreement_weights,
)

if TYPE_CHECKING:
    from numpy.typing import NDArray

METHOD = "score"  # the short name printed beside every kappa interval
BOOTSTRAP_GONE = (
    "--bootstrap and --seed are gone from agree: kappa's interval is now the score interval, "
    "deterministic (no resamples, no seed), which holds at small n where the bootstrap collapsed "
    "(docs/agreement.md)"
)
MIN_ITEMS = 2  # an interval of one item is no interval
_STEPS = 64  # grid steps along each segment before Brent's method refines the crossing
_FIRST_STEPS = 8  # of them, computed for every table before the rest (for the tables not crossed yet)
_HALVINGS = 200  # of the first grid step, at perfect agreement (the crossing within it: n large)


KappaCI = Interval  # the one interval type (calibration.stats.interval), by its former name


def check_alpha(alpha: float) -> float:
    """``alpha`` itself when 0 < alpha < 1; else raises :class:`InvalidRatings`."""
    if not isinstance(alpha, int | float) or isinstance(alpha, bool) or not 0 < alpha < 1:
        raise InvalidRatings(f"alpha must be between 0 and 1, got {alpha!r}")
    return float(alpha)


def kappa_and_variance(
    tables: NDArray[np.floating[Any]], d: NDArray[np.float64]
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Kappa and V (n times its delta-method variance, module docstring) of a stack of tables of
    shares ``(..., K, K)`` (rows: rater a) with disagreement weights ``d``; NaN where E = 0."""
    p = np.asarray(tables, dtype=float)
    rows, cols = p.sum(axis=-1), p.sum(axis=-2)
    observed = np.einsum("...ij,ij->...", p, d)
    expected = np.einsum("...i,ij,...j->...", rows, d, cols)
    with np.errstate(invalid="ignore", divide="ignore"):
        scale = expected[..., None, None]
        row_part = np.einsum("ij,...j->...i", d, cols)[..., :, None]
        col_part = np.einsum("ij,...i->...j", d, rows)[..., None, :]
        gradient = -(d * scale - observed[..., None, None] * (row_part + col_part)) / scale**2
        mean = (p * gradient).sum(axis=(-2, -1))
        variance = np.maximum((p * gradient**2).sum(axis=(-2, -1)) - mean**2, 0.0)
        kappa = 1.0 - observed / expected
    undefined = ~(expected > 0)
    return np.where(undefined, np.nan, kappa), np.where(undefined, np.nan, variance)


def brent_root(
    f: Callable[[float], float],
    a: float,
    b: float,
    xtol: float = 2e-12,
    rtol: float = 4 * 2.220446049250313e-16,
) -> float:
    """A root of ``f`` in [a, b] (``f(a)`` and ``f(b)`` of opposite signs) by Brent's method, as
    ``scipy.optimize.brentq`` runs it (Brent 1973, chapter 4; scipy's brentq.c: inverse quadratic
    interpolation or the secant, else bisection; stop when the bracket's half is under
    (xtol + rtol * |x|) / 2), at most 100 steps. Written here so that `agree` need not import
    scipy.optimize (about 0.4 s); tests hold it equal to scipy's."""
    x_prev, x_cur = a, b
    f_prev, f_cur = f(x_prev), f(x_cur)
    if f_prev == 0:
        return x_prev
    if f_cur == 0:
        return x_cur
    if (f_prev < 0) == (f_cur < 0):
        raise ValueError("brent_root: f(a) and f(b) must have opposite signs")
    x_blk = f_blk = s_prev = s_cur = 0.0
    for _ in range(100):
        if f_prev != 0 and f_cur != 0 and (f_prev < 0) != (f_cur < 0):
            x_blk, f_blk = x_prev, f_prev
            s_prev = s_cur = x_cur - x_prev
        if abs(f_blk) < abs(f_cur):  # the better end becomes the current point
            x_prev, x_cur, x_blk = x_cur, x_blk, x_cur
            f_prev, f_cur, f_blk = f_cur, f_blk, f_cur
        tolerance = (xtol + rtol * abs(x_cur)) / 2
        half = (x_blk - x_cur) / 2
        if f_cur == 0 or abs(half) < tolerance:
            return x_cur
        if abs(s_prev) > tolerance and abs(f_cur) < abs(f_prev):
            if x_prev == x_blk:  # the secant
                trial = -f_cur * (x_cur - x_prev) / (f_cur - f_prev)
            else:  # inverse quadratic interpolation
                d_prev = (f_prev - f_cur) / (x_prev - x_cur)
                d_blk = (f_blk - f_cur) / (x_blk - x_cur)
                trial = -f_cur * (f_blk * d_blk - f_prev * d_prev) / (d_blk * d_prev * (f_blk - f_prev))
            if 2 * abs(trial) < min(abs(s_prev), 3 * abs(half) - tolerance):
                s_prev, s_cur = s_cur, trial
            else:
                s_prev = s_cur = half
        else:
            s_prev = s_cur = half
        x_prev, f_prev = x_cur, f_cur
        x_cur += s_cur if abs(s_cur) > tolerance else (tolerance if half > 0 else -tolerance)
        f_cur = f(x_cur)
    raise ArithmeticError("brent_root: no convergence in 100 steps")


def brent_roots(
    f: Callable[[NDArray[np.float64], NDArray[np.intp]], NDArray[np.float64]],
    a: NDArray[np.float64],
    b: NDArray[np.float64],
    xtol: NDArray[np.float64],
    rtol: float = 4 * 2.220446049250313e-16,
) -> NDArray[np.float64]:
    """:func:`brent_root` of many functions at once: ``f(x, rows)`` gives the value of function
    ``rows[i]`` at ``x[i]``; each root in [a[i], b[i]] (values of opposite signs there) found by
    the very steps :func:`brent_root` takes for that function alone (every branch computed for every
    row and the row's own kept), so the roots are its roots whatever the other rows are."""
    rows = np.arange(len(a))
    x_prev, x_cur = np.asarray(a, dtype=float).copy(), np.asarray(b, dtype=float).copy()
    f_prev, f_cur = f(x_prev, rows), f(x_cur, rows)
    root = np.where(f_prev == 0, x_prev, np.where(f_cur == 0, x_cur, np.nan))
    if ((f_prev < 0) == (f_cur < 0))[np.isnan(root)].any():
        raise ValueError("brent_root: f(a) and f(b) must have opposite signs")
    x_blk, f_blk, s_prev, s_cur = (np.zeros(len(a)) for _ in range(4))
    live = np.flatnonzero(np.isnan(root))
    x_prev, x_cur, f_prev, f_cur, xtol = x_prev[live], x_cur[live], f_prev[live], f_cur[live], xtol[live]
    x_blk, f_blk, s_prev, s_cur = x_blk[live], f_blk[live], s_prev[live], s_cur[live]
    with np.errstate(divide="ignore", invalid="ignore"):
        for _ in range(100):
            if not len(live):
                return root
            bracket = (f_prev != 0) & (f_cur != 0) & ((f_prev < 0) != (f_cur < 0))
            x_blk, f_blk = np.where(bracket, x_prev, x_blk), np.where(bracket, f_prev, f_blk)
            s_prev = np.where(bracket, x_cur - x_prev, s_prev)
            s_cur = np.where(bracket, x_cur - x_prev, s_cur)
            swap = np.abs(f_blk) < np.abs(f_cur)  # the better end becomes the current point
            x_prev, x_cur, x_blk = (
                np.where(swap, x_cur, x_prev),
                np.where(swap, x_blk, x_cur),
                np.where(swap, x_cur, x_blk),
            )
            f_prev, f_cur, f_blk = (
                np.where(swap, f_cur, f_prev),
                np.where(swap, f_blk, f_cur),
                np.where(swap, f_cur, f_blk),
            )
            tolerance = (xtol + rtol * np.abs(x_cur)) / 2
            half = (x_blk - x_cur) / 2
            done = (f_cur == 0) | (np.abs(half) < tolerance)
            root[live[done]] = x_cur[done]
            interpolate = (np.abs(s_prev) > tolerance) & (np.abs(f_cur) < np.abs(f_prev))
            secant = -f_cur * (x_cur - x_prev) / (f_cur - f_prev)
            d_prev = (f_prev - f_cur) / (x_prev - x_cur)
            d_blk = (f_blk - f_cur) / (x_blk - x_cur)
            quadratic = -f_cur * (f_blk * d_blk - f_prev * d_prev) / (d_blk * d_prev * (f_blk - f_prev))
            trial = np.where(x_prev == x_blk, secant, quadratic)
            accept = interpolate & (
                2 * np.abs(trial) < np.minimum(np.abs(s_prev), 3 * np.abs(half) - tolerance)
            )
            s_prev, s_cur = np.where(accept, s_cur, half), np.where(accept, trial, half)
            x_prev, f_prev = x_cur, f_cur
            x_cur = x_cur + np.where(
                np.abs(s_cur) > tolerance, s_cur, np.where(half > 0, tolerance, -tolerance)
            )
            keep = ~done
            live = live[keep]
            x_prev, x_cur, f_prev, xtol = x_prev[keep], x_cur[keep], f_prev[keep], xtol[keep]
            x_blk, f_blk, s_prev, s_cur = x_blk[keep], f_blk[keep], s_prev[keep], s_cur[keep]
            f_cur = f(x_cur, live) if len(live) else x_cur
    if len(live):
        raise ArithmeticError("brent_root: no convergence in 100 steps")
    return root


def _ends(
    p: NDArray[np.float64],
    target: NDArray[np.float64],
    d: NDArray[np.float64],
    estimate: NDArray[np.float64],
    z2n: NDArray[np.float64],
) -> NDArray[np.float64]:
    """Per table of the stack ``p`` (M, K, K): kappa at the first point of the segment p -> target
    where (estimate - kappa)^2 > z2n * V; NaN where the whole segment stays inside. A grid of
    :data:`_STEPS` steps, then Brent's method on the step that crosses (:func:`brent_roots`)."""

    def excess(step: NDArray[np.float64], rows: NDArray[np.intp]) -> NDArray[np.float64]:
        s = step[:, None, None]
        kappa, variance = kappa_and_variance((1.0 - s) * p[rows] + s * target[rows], d)
        return (estimate[rows] - kappa) ** 2 - z2n[rows] * variance

    steps = np.linspace(0.0, 1.0, _STEPS + 1)

    def outside_at(tables: NDArray[np.intp], at: slice) -> NDArray[np.bool_]:
        grid = steps[at][None, :, None, None]
        points = (1.0 - grid) * p[tables, None] + grid * target[tables, None]
        kappa, variance = kappa_and_variance(points, d)
        return (estimate[tables, None] - kappa) ** 2 - z2n[tables, None] * variance > 0

    # the grid's first steps for every table, the rest only for the tables that do not cross there
    # (at n in the thousands most ends lie within a few steps); each point's arithmetic is its own
    outside = np.zeros((len(p), _STEPS + 1), dtype=bool)
    outside[:, : _FIRST_STEPS + 1] = outside_at(np.arange(len(p)), slice(0, _FIRST_STEPS + 1))
    rest = np.flatnonzero(~outside.any(axis=1))
    if len(rest):
        outside[rest, _FIRST_STEPS + 1 :] = outside_at(rest, slice(_FIRST_STEPS + 1, None))
    out = np.full(len(p), np.nan)
    found = np.flatnonzero(outside.any(axis=1))
    if not len(found):
        return out
    j = outside[found].argmax(axis=1)  # >= 1: the observed table is inside (excess <= 0 there)
    low, high = steps[j - 1], steps[j]
    # At perfect agreement the observed table's excess is exactly 0 (kappa-hat - kappa = 0, V = 0):
    # a root Brent's method would return at once, the interval [1, 1]. The crossing wanted is the
    # next one, where the excess turns from negative (just off the table: (1 - kappa)^2 ~ s^2 against
    # z^2 V / n ~ s) to positive; with n large it lies inside the first grid step, so halve that
    # step until its lower end is inside.
    for i in np.flatnonzero(low == 0.0):
        row = found[i : i + 1]
        if excess(np.zeros(1), row)[0] < 0:
            continue
        for _ in range(_HALVINGS):
            if excess(np.array([high[i] / 2]), row)[0] < 0:
                low[i] = high[i] / 2
                break
            high[i] /= 2
        else:  # pragma: no cover - n beyond about 1e60 items
            low[i] = high[i] = np.nan
    inside = ~np.isnan(low)
    out[found[~inside]] = estimate[found[~inside]]  # pragma: no cover - as above
    found, low, high = found[inside], low[inside], high[inside]
    # the step's tolerance is relative to the bracket (a crossing inside the first grid step has low 0:
    # an absolute tolerance of 0 never converges there, found at a large effective n, issue #39)
    xtol = np.minimum(1e-13, np.where(low != 0, low, high) * 1e-9)
    step = brent_roots(lambda s, rows: excess(s, found[rows]), low, high, xtol)[:, None, None]
    out[found] = kappa_and_variance((1.0 - step) * p[found] + step * target[found], d)[0]
    return out


def score_intervals(
    confusions: Any, weights: Weights = None, alpha: float = 0.05
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """The score interval (module docstring) of the kappa of each K x K table of counts of the stack
    ``confusions`` (N, K, K), rows: rater a: ``(low, high)``, NaN where kappa is undefined (no item,
    both raters in one single class) or the table holds fewer than :data:`MIN_ITEMS` items. Each
    table's interval is the one it has alone (the arithmetic is row by row: :func:`score_interval`
    is this on a stack of one)."""
    counts = np.asarray(confusions, dtype=float)
    if counts.ndim != 3 or counts.shape[1] != counts.shape[2] or (counts < 0).any():
        raise InvalidRatings(
            f"confusions: expected a stack of square matrices of counts, got shape {counts.shape}"
        )
    d = disagreement_weights(counts.shape[-1], check_weights(weights))
    n = counts.sum(axis=(-2, -1))
    z = NormalDist().inv_cdf(1.0 - check_alpha(alpha) / 2)
    with np.errstate(invalid="ignore", divide="ignore"):
        p = counts / n[:, None, None]
        z2n = z * z / n
    pooled = (p.sum(axis=-1) + p.sum(axis=-2)) / 2
    chance = pooled[:, :, None] * pooled[:, None, :]
    perfect = pooled[:, :, None] * np.eye(counts.shape[-1])
    estimate, observed_variance = kappa_and_variance(p, d)
    ok = (n >= MIN_ITEMS) & ~np.isnan(estimate)
    low, high = np.full(len(n), np.nan), np.full(len(n), np.nan)
    high[ok] = 1.0
    upper = np.flatnonzero(ok & (estimate < 1.0))
    if len(upper):
        ends = _ends(p[upper], perfect[upper], d, estimate[upper], z2n[upper])
        high[upper] = np.where(np.isnan(ends), 1.0, ends)
    lower = np.flatnonzero(ok & (estimate > 0))
    if len(lower):
        low[lower] = _ends(p[lower], chance[lower], d, estimate[lower], z2n[lower])
    below = np.flatnonzero(
        ok & np.isnan(low)
    )  # below chance: the larger variance of the observed table and of chance
    if len(below):
        chance_variance = kappa_and_variance(chance[below], d)[1]
        spread = np.maximum(observed_variance[below], chance_variance)
        low[below] = estimate[below] - np.sqrt(z2n[below] * spread)
    low = np.where(ok, np.maximum(-1.0, np.minimum(low, estimate)), np.nan)
    high = np.where(ok, np.minimum(1.0, np.maximum(high, estimate)), np.nan)
    return low, high


def score_interval(confusion: Any, weights: Weights = None, alpha: float = 0.05) -> tuple[float, float]:
    """The score interval (module docstring) of the kappa of a K x K ``confusion`` matrix of counts
    (rows: rater a): ``(low, high)``, :func:`score_intervals` of it alone. Raises
    :class:`InvalidRatings` when kappa is undefined there (no item, or both raters in one single
    class) or fewer than :data:`MIN_ITEMS` items."""
    counts = np.asarray(confusion, dtype=float)
    if counts.ndim != 2 or counts.shape[0] != counts.shape[1] or (counts < 0).any():
        raise InvalidRatings(f"confusion: expected a square matrix of counts, got shape {counts.shape}")
    n = float(counts.sum())
    if n < MIN_ITEMS:
        raise InvalidRatings(f"an interval needs at least {MIN_ITEMS} items rated by both raters (n = {n:g})")
    check_weights(weights)
    check_alpha(alpha)
    low, high = score_intervals(counts[None], weights, alpha)
    if math.isnan(low[0]):
        raise InvalidRatings("kappa is undefined: both raters put every item in one and the same class")
    return float(low[0]), float(high[0])


def kappa_ci_of_pair(pair: RaterPair, weights: Weights = None, alpha: float = 0.05) -> KappaCI:
    """:func:`kappa_ci` of ratings already encoded (:class:`calibration.stats.kappa.RaterPair`)."""
    weights = check_weights(weights)
    alpha = check_alpha(alpha)
    result = cohen_of_pair(pair, weights)
    details = {"method": METHOD, "estimate": result["kappa"], "n": pair.n, "alpha": alpha, "weights": weights}
    if result["kappa"] is None:
        return KappaCI(None, None, **details, undefined_reason=result["undefined_reason"])
    if pair.n < MIN_ITEMS:
        reason = f"{pair.n} item rated by both raters: an interval needs at least {MIN_ITEMS}"
        return KappaCI(None, None, **details, undefined_reason=reason)
    low, high = score_interval(pair.confusion(), weights, alpha)
    return KappaCI(low, high, **details, undefined_reason=None)


def kappa_cis_of_pairs(
    pairs: Sequence[RaterPair], weights: Weights = None, alpha: float = 0.05
) -> list[KappaCI]:
    """:func:`kappa_ci_of_pair` of each pair, the intervals of all of them computed at once
    (:func:`score_intervals`, one stack a scale length): the same intervals, a fraction of the time."""
    weights = check_weights(weights)
    alpha = check_alpha(alpha)
    results = cohen_of_pairs(pairs, weights)  # a stack a scale length, each cached on its pair
    ends: dict[int, tuple[float, float]] = {}
    for k in sorted({pair.k for pair in pairs}):
        rows = [
            i
            for i, pair in enumerate(pairs)
            if pair.k == k and results[i]["kappa"] is not None and pair.n >= MIN_ITEMS
        ]
        if not rows:
            continue
        confusions = np.array([results[i]["confusion"] for i in rows])
        low, high = score_intervals(confusions, weights, alpha)
        if np.isnan(low).any():  # pragma: no cover - a defined kappa has a defined interval
            raise InvalidRatings("kappa is undefined: both raters put every item in one and the same class")
        ends |= {i: (float(lo), float(hi)) for i, lo, hi in zip(rows, low.tolist(), high.tolist())}
    out = []
    for i, (pair, result) in enumerate(zip(pairs, results)):
        details = {
            "method": METHOD,
            "estimate": result["kappa"],
            "n": pair.n,
            "alpha": alpha,
            "weights": weights,
        }
        if result["kappa"] is None:
            out.append(KappaCI(None, None, **details, undefined_reason=result["undefined_reason"]))
        elif i not in ends:
            reason = f"{pair.n} item rated by both raters: an interval needs at least {MIN_ITEMS}"
            out.append(KappaCI(None, None, **details, undefined_reason=reason))
        else:
            out.append(KappaCI(*ends[i], **details, undefined_reason=None))
    return out


def kappa_ci(
    a: Sequence[Any],
    b: Sequence[Any],
    *,
    weights: Weights = None,
    labels: Sequence[Any] | None = None,
    alpha: float = 0.05,
) -> KappaCI:
    """The (1 - alpha) score interval of Cohen's kappa of two raters: ``(low, high)``, deterministic.

    ``a``, ``b``, ``labels`` and ``weights`` as :func:`calibration.stats.kappa.cohen` (missing ratings drop
    their item; the scale rule :func:`calibration.stats.kappa.grade_range`). The estimate is
    scikit-learn's kappa (``.estimate``); the interval is :func:`score_interval` (module docstring).
    ``(None, None)`` with ``.undefined_reason`` when kappa is undefined (one shared class, no item)
    or fewer than 2 items were rated by both.
    """
    return kappa_ci_of_pair(RaterPair(a, b, labels), weights, alpha)
