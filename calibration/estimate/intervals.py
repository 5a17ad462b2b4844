"""The intervals of the estimates (pure: numpy and scipy only).

A stratum's relevant count T (N candidates, n sampled, y of them relevant) is a
hypergeometric parameter. Its exact interval inverts P(Y >= y | T = t) and
P(Y <= y | T = t); as functions of t these are the distribution functions of two
beta-binomial variables (tests/test_estimate.py checks the identity against scipy):

    P(Y >= y | T = t)     = P(y + BetaBinomial(N - n, y, n - y + 1) <= t)
    P(Y >= y + 1 | T = t) = P(y + BetaBinomial(N - n, y + 1, n - y) < t)

(BetaBinomial(m, 0, b) is 0; BetaBinomial(m, a, 0) is m.) These are confidence
distributions of T. Per ``interval`` (:data:`INTERVALS`):

- ``"midp"`` (the default): their equal mixture, the mid-p confidence distribution;
  95% on average over truths, not for every truth;
- ``"exact"``: the lower bound from the "lower" distribution, the upper bound from the
  "upper" one; for one stratum at least 1 - alpha for every true count;
- ``"jeffreys"``: the Jeffreys-prior posterior y + BetaBinomial(N - n, y + 1/2, n - y + 1/2),
  equal-tailed;
- ``"wald"``: estimate -/+ z sqrt(V).

Strata are sampled independently, so a total's distribution is the convolution of its
strata's, computed exactly. The interval is every t that no level-alpha test rejects
(a Neyman construction, :func:`spend_alpha`): alpha/2 per side where both sides can
reject t, all of alpha on one side where the design alone (N and n per stratum, never
the labels) proves the other side cannot. A count's interval stays within what the
sample proves (at least the relevant found, at most found + every unsampled candidate);
a ratio X / (X + Y) of independent counts takes its bounds from the quantiles of the
ratio (:func:`ratio_interval`).

Measured coverage, which interval to choose, and the alternatives tried: docs/estimate.md.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from functools import lru_cache
from typing import TYPE_CHECKING, TypeAlias

import numpy as np
from scipy.special import betaln, gammaln, ndtri  # start-up: scipy.special alone (~0.26 s of CPU)

if TYPE_CHECKING:
    from numpy.typing import NDArray

__all__ = [
    "INTERVALS",
    "Dist",
    "bb_pmf",
    "check_interval",
    "clear_caches",
    "count_interval",
    "pair_distributions",
    "ratio_interval",
    "ratio_quantile",
    "spend_alpha",
    "z_value",
]

INTERVALS = ("midp", "exact", "jeffreys", "wald")
_TIE = 1e-12  # probability tolerance when a distribution function meets a quantile level

Dist: TypeAlias = tuple[int, "NDArray[np.float64]"]  # (offset, pmf): P(T = offset + i) = pmf[i]


def z_value(alpha: float) -> float:
    """The normal quantile z = Phi^-1(1 - alpha/2); refuses an alpha outside (0, 1)."""
    if not isinstance(alpha, (int, float)) or isinstance(alpha, bool) or not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha {alpha!r}; expected a number strictly between 0 and 1")
    return _z_cached(float(alpha))


@lru_cache(maxsize=64)
def _z_cached(alpha: float) -> float:
    # scipy.stats.norm.ppf is scipy.special.ndtri (scipy 1.17: the same float, tests/test_estimate.py);
    # scipy.stats and scipy.signal together cost ~0.45 s more CPU to import than scipy.special, at the
    # first estimate of a server or command (#42)
    return float(ndtri(1.0 - alpha / 2.0))


def check_interval(interval: str) -> str:
    """``interval`` if it is one of :data:`INTERVALS`, else ValueError."""
    if interval not in INTERVALS:
        raise ValueError(f"interval {interval!r}; expected one of {', '.join(INTERVALS)}")
    return interval


def bb_pmf(m: int, a: float, b: float) -> NDArray[np.float64]:
    """Beta-binomial(m, a, b) probabilities on 0..m; a = 0 is a point at 0, b = 0 at m."""
    if m == 0:
        return np.ones(1)
    if a <= 0 or b <= 0:
        out = np.zeros(m + 1)
        out[0 if a <= 0 else m] = 1.0
        return out
    k = np.arange(m + 1, dtype=np.float64)
    logp: NDArray[np.float64] = (  # scipy.special's ufuncs are untyped (Any)
        gammaln(m + 1.0) - gammaln(k + 1.0) - gammaln(m - k + 1.0) + betaln(k + a, m - k + b) - betaln(a, b)
    )
    p = np.exp(logp - logp.max())
    pmf: NDArray[np.float64] = p / p.sum()
    return pmf


@lru_cache(maxsize=4096)
def _cell(big_m: int, m: int, y: int, kind: str) -> Dist:
    """Confidence distribution of a cell's relevant count T (big_m candidates, m sampled, y relevant).

    kind: "lower" (inverts P(Y >= y | t)), "upper" (inverts P(Y <= y | t)), "midp" (their
    equal mixture) or "jeffreys" (the Jeffreys-prior posterior)."""
    rest = big_m - m
    if kind == "lower":
        pmf = bb_pmf(rest, y, m - y + 1)
    elif kind == "upper":
        pmf = bb_pmf(rest, y + 1, m - y)
    elif kind == "midp":
        pmf = 0.5 * (bb_pmf(rest, y, m - y + 1) + bb_pmf(rest, y + 1, m - y))
    else:
        pmf = bb_pmf(rest, y + 0.5, m - y + 0.5)
    pmf.setflags(write=False)  # cached: shared by every caller
    return y, pmf


def _trim(dist: Dist, eps: float = 1e-15) -> Dist:
    offset, pmf = dist
    pmf = np.clip(pmf, 0.0, None)
    c = np.cumsum(pmf)
    total = c[-1]
    lo = int(np.searchsorted(c, eps * total, side="right"))
    hi = int(np.searchsorted(c, total * (1.0 - eps), side="left")) + 1
    lo = min(lo, len(pmf) - 1)
    hi = max(hi, lo + 1)
    kept = pmf[lo:hi]
    return offset + lo, kept / kept.sum()


def _fft_convolve(a: NDArray[np.float64], b: NDArray[np.float64]) -> NDArray[np.float64]:
    """``scipy.signal.fftconvolve``, imported at the first sum this large (start-up: scipy.signal
    is ~0.7 s of CPU to import, and most audits never need it)."""
    from scipy.signal import fftconvolve

    out: NDArray[np.float64] = fftconvolve(a, b)
    return out


def _convolve(dists: Iterable[Dist]) -> Dist:
    offset, pmf = 0, np.ones(1)
    for off, p in dists:
        offset += off
        if len(p) == 1:
            continue
        if len(pmf) * len(p) > 2_000_000:
            pmf = np.clip(_fft_convolve(pmf, p), 0.0, None)
        else:
            pmf = np.convolve(pmf, p)
        offset, pmf = _trim((offset, pmf))
    return offset, pmf / pmf.sum()


def _lower_q(dist: Dist, level: float, cdf: NDArray[np.float64] | None = None) -> int:
    offset, pmf = dist
    c = np.cumsum(pmf) if cdf is None else cdf
    return offset + int(np.argmax(c > level + _TIE))


def _upper_q(dist: Dist, level: float, cdf: NDArray[np.float64] | None = None) -> int:
    offset, pmf = dist
    c = np.cumsum(pmf) if cdf is None else cdf
    return offset + (int(np.argmax(c >= level - _TIE)) if c[-1] >= level - _TIE else len(pmf) - 1)


def clear_caches() -> None:
    """Forget the cached distributions of cells and of their sums (memory; a test that counts
    the convolutions a sum takes)."""
    _cell.cache_clear()
    _pair_cached.cache_clear()


def pair_distributions(cells: Iterable[tuple[int, int, int]], kind: str) -> tuple[Dist, Dist]:
    """The confidence distributions of the summed count for its lower and its upper bound."""
    return _pair_cached(tuple(cells), kind)


@lru_cache(maxsize=16)  # one estimate asks for the same sums several times (bounds, recall's sides)
def _pair_cached(cells: tuple[tuple[int, int, int], ...], kind: str) -> tuple[Dist, Dist]:
    if kind == "exact":
        pair = _convolve(_cell(*c, "lower") for c in cells), _convolve(_cell(*c, "upper") for c in cells)
    else:
        dist = _convolve(_cell(*c, kind) for c in cells)
        pair = dist, dist
    for _, pmf in pair:
        pmf.setflags(write=False)  # cached: shared by every caller
    return pair


def spend_alpha(
    low: tuple[float, float], high: tuple[float, float], dead_high_up_to: float, dead_low_from: float
) -> list[float]:
    """The interval from its bounds at alpha/2 and at alpha per side, spending all of alpha on one
    side for the values t where the design proves the other side cannot miss.

    ``low`` = (lower bound at alpha/2, at alpha); ``high`` = (upper bound at 1 - alpha/2, at
    1 - alpha). ``dead_high_up_to``: whatever the sample shows, the upper bound is at least
    this (it is the upper bound of the least favourable sample), so the upper side never
    excludes a t at or below it; ``dead_low_from``: the lower bound is at most this whatever
    the sample shows. Each t is tested at level alpha: split alpha/2 + alpha/2 where both
    sides can reject it, alpha on the live side where only one can; the interval is the set
    of t no test rejects. The tests are fixed by the design before any label is seen, so this
    is a Neyman construction, not a choice made after looking at the data (the flip-flopping
    that G. J. Feldman and R. D. Cousins, Physical Review D 57:3873-3889, 1998, show
    undercovers; their unified intervals, ordered by likelihood ratio, also pass from
    one-sided to two-sided within one fixed construction)."""
    if dead_low_from <= dead_high_up_to:  # a design too small to rule either side out: equal tails
        return [low[0], high[0]]
    lower = low[1] if low[1] <= dead_high_up_to else max(low[0], dead_high_up_to)
    upper = high[1] if high[1] >= dead_low_from else min(high[0], dead_low_from)
    return [lower, upper]


def _distribution_interval(cells: list[tuple[int, int, int]], kind: str, alpha: float) -> list[float]:
    """The interval of the summed relevant count of independent cells (big_m, m, y).

    Equal-tailed, except where one side cannot miss (:func:`spend_alpha`): the upper bound of the
    sample that finds nothing and the lower bound of the sample that finds only relevant
    documents bound what any sample's interval can exclude."""
    lo_d, hi_d = pair_distributions(cells, kind)
    lo_c = np.cumsum(lo_d[1])
    hi_c = lo_c if hi_d is lo_d else np.cumsum(hi_d[1])
    low = (_lower_q(lo_d, alpha / 2, lo_c), _lower_q(lo_d, alpha, lo_c))
    high = (_upper_q(hi_d, 1 - alpha / 2, hi_c), _upper_q(hi_d, 1 - alpha, hi_c))
    if kind == "jeffreys":  # a posterior, not a confidence distribution: its equal-tailed interval
        return [float(low[0]), float(high[0])]
    none_found = _upper_q(
        pair_distributions([(big_m, m, 0) for big_m, m, _ in cells], kind)[1], 1 - alpha / 2
    )
    all_found = _lower_q(pair_distributions([(big_m, m, m) for big_m, m, _ in cells], kind)[0], alpha / 2)
    # integer counts: "above none_found" starts at none_found + 1
    lower, upper = spend_alpha(low, high, none_found + 0.5, all_found - 0.5)
    return [float(math.ceil(lower)), float(math.floor(upper))]


def ratio_interval(
    x: tuple[Dist, Dist], y: tuple[Dist, Dist], alpha: float, dead: tuple[float, float] | None = None
) -> list[float]:
    """The interval of R = X / (X + Y), X and Y independent, X + Y >= 1.

    x and y are (distribution for the lower bound, distribution for the upper bound); the lower
    bound of R takes X's lower and Y's upper distribution, and the upper bound the reverse.
    ``dead`` = (R's upper bound is at least this whatever the sample, R's lower bound at most
    this): where given, alpha is spent as :func:`spend_alpha` says; else the tails are equal."""
    low = (ratio_quantile(x[0], y[1], alpha / 2, strict=True), ratio_quantile(x[0], y[1], alpha, strict=True))
    high = (
        ratio_quantile(x[1], y[0], 1 - alpha / 2, strict=False),
        ratio_quantile(x[1], y[0], 1 - alpha, strict=False),
    )
    if dead is None:
        return [low[0], high[0]]
    return spend_alpha(low, high, *dead)


def ratio_quantile(xd: Dist, yd: Dist, level: float, strict: bool) -> float:
    """The quantile of R = X / (X + Y): the smallest atom r with P(R <= r) > level (strict) or
    >= level; found on nested grids of r (5 rounds of 128 points), then snapped to the atom."""
    (xo, px), (yo, py) = xd, yd
    xs = xo + np.arange(len(px), dtype=np.float64)
    keep = px > 0
    xs, px = xs[keep], px[keep]
    sy = np.concatenate([np.cumsum(py[::-1])[::-1], [0.0]])  # sy[j] = P(Y >= yo + j)

    # per (x, r): smallest y with x / (x + y) <= r, as an index
    def first_y(r: NDArray[np.float64]) -> NDArray[np.int64]:
        need: NDArray[np.float64] = np.ceil(np.outer(xs, (1.0 - r) / r) - 1e-9)
        return np.clip(need - yo, 0, len(py)).astype(np.int64)

    def hit(r: NDArray[np.float64]) -> NDArray[np.bool_]:  # P(R <= r) reaches the level, r in (0, 1)
        cdf: NDArray[np.float64] = px @ sy[first_y(r)]
        return cdf > level + _TIE if strict else cdf >= level - _TIE

    at_zero = float(px[xs == 0].sum())
    if (at_zero > level + _TIE) if strict else (at_zero >= level - _TIE):
        return 0.0
    lo, hi = 0.0, 1.0  # P(R <= lo) misses the level, P(R <= hi) reaches it
    for _ in range(5):
        grid = np.linspace(lo, hi, 130)[1:-1]
        ok = hit(grid)
        if ok.any():
            i = int(np.argmax(ok))
            lo, hi = (grid[i - 1] if i else lo), grid[i]
        else:
            lo = grid[-1]
    # snap: the largest atom x / (x + y) <= hi; it lies in (lo, hi]
    idx = first_y(np.array([hi]))[:, 0]
    valid = idx < len(py)
    atoms = np.where(valid, xs / np.maximum(xs + yo + idx, 1), -1.0)
    return float(atoms.max())


def count_interval(
    cells: list[tuple[int, int, int]],
    variance: float | None,
    estimate: float,
    z: float,
    alpha: float,
    interval: str,
) -> list[float]:
    """The interval of the summed relevant count of independent cells (big_m candidates, m
    sampled, y relevant): Wald (estimate -/+ z sqrt(variance)) or from the confidence
    distributions of ``interval``, kept within [found, found + every unsampled candidate]."""
    low_bound = float(sum(c[2] for c in cells))
    high_bound = float(sum(c[0] - c[1] + c[2] for c in cells))
    if interval == "wald":
        half = z * math.sqrt(variance or 0.0)
        return [max(low_bound, estimate - half), min(high_bound, estimate + half)]
    low, high = _distribution_interval(cells, interval, alpha)
    return [max(low_bound, low), min(high_bound, high)]
