"""What the pooled judgments missed, estimated from a sample (pure: numpy and scipy only).

A pool judged to depth d misses every relevant document ranked below d by all the pooled
runs, so |Rel| is too small and recall too high (the worked example's q_broad: 8 judged
relevant, 12 truly relevant; recall@5 0.500 against the labels, 0.417 against the truth).
This module estimates the missing part from a probability sample of the unjudged candidates
(issue #8; the same idea as statAP, J. A. Aslam, V. Pavlu, E. Yilmaz, "A statistical method
for system evaluation using incomplete judgments", SIGIR 2006, and infAP, E. Yilmaz,
J. A. Aslam, "Estimating average precision with incomplete and imperfect judgments",
CIKM 2006).

The design (annotation/pooling.py draws it)
-------------------------------------------
Per query, the unjudged candidates are split into strata h (e.g. ranks 21-50, 51-100,
101-1000 of any run, random corpus chunks); from stratum h, of N_h candidates, a simple
random sample without replacement of n_h is judged, so every sampled document has
inclusion probability pi_h = n_h / N_h. y_h of the n_h are relevant (grade >= min_grade).

Input: a stratum is a dict ``{"stratum": name, "N": N_h, "n": n_h, "labels": [...]}``
(``n`` may be left out: it is ``len(labels)``; labels are grades, 0/1 or booleans, one per
sampled document), or a tuple ``(name, N, n, labels)``. For recall@k each stratum also
carries ``"in_top_k"`` (one boolean per sampled document: is it in the run's top k) and
``"N_top_k"`` (how many of the stratum's N_h candidates, sampled or not, are in the top k).
:func:`strata_from_ids` builds these from document ids.

Point estimates (Horvitz-Thompson; D. G. Horvitz, D. J. Thompson, JASA 47:663-685, 1952)
----------------------------------------------------------------------------------------
- unjudged relevant   U = sum_h N_h y_h / n_h (each sampled relevant document weighs 1/pi_h)
- its variance under stratified SRSWOR (W. G. Cochran, Sampling Techniques, 3rd ed., 1977,
  eq. 5.6): V = sum_h N_h^2 (1 - n_h/N_h) s_h^2 / n_h, s_h^2 = y_h (n_h - y_h) / (n_h (n_h - 1))
  the sample variance of the 0/1 indicator. A stratum with n_h = N_h is known exactly
  (variance 0). With n_h = 1 < N_h, s_h^2 is undefined; it is replaced by 1/4, the largest
  variance a 0/1 variable can have, so the reported variance is an upper bound (the note
  says which stratum). The pooled sample's p(1-p) is not used: it is no bound (it is 0
  when no relevant document was found anywhere).
- |Rel| = judged relevant (known exactly) + U.
- recall@k = X / (X + Y): X = judged relevant in the top k + the estimated unjudged relevant
  in the top k, Y = judged relevant outside it + the estimated unjudged relevant outside it.
  The run's ranking tells how many of each stratum's candidates are in the top k, so each
  stratum splits into two domains of known size, and each domain total is estimated as its
  size times its sample rate (Cochran sec. 2.13: when a domain's size is known, N_j ybar_j
  beats the expansion estimate; within a domain, given how many sampled documents fell in
  it, the sample is a simple random sample of it). A domain with candidates but no sampled
  document takes its stratum's rate (and is named in ``notes``). X + Y (``denominator``) is
  then |Rel| estimated the same way; it differs a little from the Horvitz-Thompson |Rel|
  (``rel``) that the ceilings use, and it keeps the estimate feasible: the plain expansion
  estimate N_h a_h / n_h for the top k can exceed the candidates the top k holds (in 6 of
  8,700 samples of a Cranfield simulation it put recall above the largest possible value). The
  estimate is a ratio estimator (Cochran ch. 6); its standard error is the delta method's,
  ((1 - R)^2 V(X) + R^2 V(Y))^(1/2) / (X + Y), X and Y being independent. Ceilings: recall
  min(1, k/|Rel|), precision min(1, |Rel|/k), with the Horvitz-Thompson |Rel| and its interval.

Undefined is not zero: a stratum with N_h > 0 candidates and no sample leaves |Rel| and recall
undefined (``None`` with the reason), as does recall when no relevant document was judged or
sampled (|Rel| estimate 0).

The interval: stratified mid-p (``interval="midp"``, the default)
-----------------------------------------------------------------
Relevant documents below the pool are rare (tens to thousands of candidates per stratum, a
few relevant), and then the normal (Wald) interval HT +/- z sqrt(V) fails badly: a stratum
whose sample holds no relevant document has s_h^2 = 0 and contributes nothing to V, however
many relevant documents it hides (in the coverage simulation of tests/test_estimate.py, 95%
Wald intervals cover the true |Rel| 64% and the true recall 59% of the time; L. D. Brown,
T. T. Cai, A. DasGupta, "Interval estimation for a binomial proportion", Statistical Science
16:101-133, 2001, show the same failure for one proportion).

Each stratum's relevant count T_h is a hypergeometric parameter. Its exact (Clopper-Pearson
type) interval inverts P(Y >= y | T = t) and P(Y <= y | T = t); as functions of t these are
the distribution functions of two beta-binomial variables (an identity the tests check
against scipy's hypergeometric law):

    P(Y >= y | T = t)     = P(y + BetaBinomial(N - n, y, n - y + 1) <= t)
    P(Y >= y + 1 | T = t) = P(y + BetaBinomial(N - n, y + 1, n - y) < t)

(BetaBinomial(m, 0, b) is 0; BetaBinomial(m, a, 0) is m.) These are confidence distributions
for T_h (M. Xie, K. Singh, "Confidence distribution, the frequentist distribution estimator
of a parameter: a review", International Statistical Review 81:3-39, 2013). The mid-p
confidence distribution of a stratum is their equal mixture (the mid-p idea: H. O. Lancaster,
"Significance tests in discrete distributions", JASA 56:223-234, 1961; G. Berry,
P. Armitage, "Mid-P confidence intervals: a brief review", The Statistician 44:417-423,
1995). The strata are sampled independently, so the total's confidence distribution is the
convolution of the strata's, computed exactly (no simulation); the interval is read from its
quantiles, kept within what the sample proves: at least the relevant documents found, at
most every unsampled candidate.

Which quantiles: each value t is tested at level alpha, and the interval is every t no test
rejects (a Neyman construction). Where both sides can reject t, the tails are equal (alpha/2
each: [min t: C(t) > alpha/2, min t: C(t) >= 1 - alpha/2]). But the design alone (N_h, n_h)
can rule a side out: the upper bound is never below the upper bound of the sample that finds
nothing, so no sample's upper bound excludes a t below that; for those t the test spends all
of alpha on the lower side (and symmetrically above the lower bound of the sample that finds
only relevant documents). In the sparse regime of real pools this matters: the equal-tailed
interval there leaves alpha/2 unused and covers 97.5%, not 95%. The rule depends on the
design, never on the labels, so it is no "flip-flopping" between one-sided and two-sided
intervals after seeing the data (G. J. Feldman, R. D. Cousins, "Unified approach to the
classical statistical analysis of small signals", Physical Review D 57:3873-3889, 1998, show
that this undercovers; their unified intervals also pass from one-sided to two-sided within
a fixed construction, by likelihood-ratio ordering rather than this simpler rule).

What is guaranteed, and what is only measured. For ``"exact"`` each test has level at most
alpha, so for one stratum the interval covers every true count at least 95% of the time
(checked by brute force in the tests, and by a reviewer's enumeration over 2,274 one-stratum
designs up to N = 1,500 and 300 small designs of two and three strata: minimum exactly
0.950). The mid-p interval (the default) is not guaranteed: it aims at 95% on average over
truths, and spending all of alpha on one side makes it more liberal for some truths than the
equal-tailed mid-p interval was (in small designs enumerated exactly, the worst truth vector
is covered 0.76-0.86 of the time, against 0.90-0.92 before; the mean over truth vectors
0.956-0.959, against 0.967-0.968). For several strata, combining confidence distributions by
convolution carries no exactness guarantee for either, so coverage is measured by simulation
(tests/test_estimate.py). On the fully judged Cranfield collection (pool depth 10 over two
lexical runs, the rest of the corpus in strata 11-30, 31-100, 101-1400 sampled 10, 20, 30;
81 queries x 200 seeds):

=================  =====================  ================================================
interval           two-sided coverage     per query (81): mean, lowest, below 0.90
                   |Rel| / recall@20      |Rel|; recall@20
=================  =====================  ================================================
mid-p (default)    0.933 / 0.944          0.933, 0.805, 10; 0.944, 0.810, 8
mid-p, equal tails 0.969 / 0.973          0.969, 0.885, 1; 0.973, 0.885, 1
exact              0.982 / 0.989          0.982, 0.935, 0; 0.989, 0.945, 0
=================  =====================  ================================================

The side the design rules out never misses; with mid-p the other misses 6.7% and 5.6%
(nominal 5%; 6.2% and 5.4% with another seed, coverage 0.938 and 0.946). Choose ``"exact"``
(``calibration audit --estimate --interval exact``) when every query's interval must hold its
95%; the default trades that for intervals that are right on average and narrower. Where
samples err both ways (a synthetic design with denser relevance, whose truths lie outside
the rule's range) the mid-p coverage is 95-96%, each side missing about 2%.

Why not the alternatives (same Cranfield simulation unless said): Wald undercovers (above);
the exact interval (``"exact"``: lower bound from the convolved lower distributions, upper
from the upper ones; for one stratum the exact hypergeometric interval) covers 98.2% / 98.9%,
guaranteed for one stratum but wide (99.1% / 99.5% with equal tails; no longer nested: the
two rules can switch on at different values, so mid-p can fall a document outside it); a
Jeffreys-prior posterior (``"jeffreys"``, y + BetaBinomial(N - n, y + 1/2, n - y + 1/2) per
stratum, always equal-tailed) reaches 92.2% / 93.4% two-sided only because its prior mass in
large empty strata lifts |Rel|'s lower bound, which then misses 7.8% instead of 2.5%.
In an earlier round of the same simulation (prototype code, not kept), per-stratum Wilson
intervals combined by MOVER (G. Y. Zou, A. Donner, Statistics in Medicine 27:1693-1702, 2008)
covered 91-94% (one relevant document found in a large stratum lifts its Wilson lower bound
above the truth), and the Fay-Feuer gamma interval for weighted sums of counts (M. P. Fay,
E. J. Feuer, Statistics in Medicine 16:791-801, 1997) 99.7-100%. The choices stay available
through ``interval=``.

Recall: the strata are split into cells, in the run's top k or not (post-stratification: given
how many sampled documents fell in each cell, each cell's sample is a simple random sample of
it), so the relevant documents in the top k, X, and those outside it, Y, have independent
confidence distributions, each the convolution of its cells'. recall = X / (X + Y) rises with
X and falls with Y; its interval is read from the quantiles of X / (X + Y) under those
distributions (found on nested grids of r, then snapped to the exact atom x / (x + y)), alpha
spent as for counts. The least favourable samples are bounded from the design alone (each
side of the top k taking its largest possible share of the stratum's sample, the other side
its most extreme value, as if every candidate there could be relevant), so the rule applies
to recall less often than to the count: the recall interval is the count interval mapped
through x / (x + y) only where neither rule applies, or both do. ``"exact"`` takes X's lower
and Y's upper distribution for the lower bound, and the reverse
for the upper. A cell with no sampled document gets the no-information distribution (for
mid-p half at 0, half at all of its candidates). ``"wald"`` is the delta-method interval.

Limits: a relevant document outside every stratum (not a candidate of any stratum) is never
counted: |Rel| is the relevant count of the judged pool plus the candidate strata, and a
stratum of random corpus chunks is what extends it to the corpus. The intervals are for one
query given its sample; :func:`aggregate_recall` adds a bootstrap over queries.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np
from scipy.signal import fftconvolve
from scipy.special import betaln, gammaln
from scipy.stats import norm

__all__ = [
    "INTERVALS",
    "aggregate_recall",
    "estimate_recall_at_k",
    "estimate_rel",
    "estimate_unjudged_relevant",
    "infap",
    "sample_size_for_width",
    "strata_from_ids",
]

INTERVALS = ("midp", "exact", "jeffreys", "wald")
INFAP_EPSILON = 0.00001  # trec_eval's INFAP_EPSILON (m_infAP.c)
_TIE = 1e-12  # probability tolerance when a distribution function meets a quantile level


# ------------------------------------------------------------------ input


@dataclass(frozen=True)
class _Stratum:
    name: str
    N: int
    n: int
    rel: np.ndarray  # bool per sampled document
    in_top: np.ndarray | None  # bool per sampled document, or None
    N_top: int | None

    @property
    def y(self) -> int:
        return int(self.rel.sum())


def _z(alpha: float) -> float:
    if not isinstance(alpha, (int, float)) or isinstance(alpha, bool) or not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha {alpha!r}; expected a number strictly between 0 and 1")
    return _z_cached(float(alpha))


@lru_cache(maxsize=64)
def _z_cached(alpha: float) -> float:
    return float(norm.ppf(1.0 - alpha / 2.0))


def _count(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        if isinstance(value, (float, np.floating)) and float(value).is_integer():
            value = int(value)
        else:
            raise ValueError(f"{what} is {value!r}; expected a whole number >= 0")
    if value < 0:
        raise ValueError(f"{what} is {value}; expected a whole number >= 0")
    return int(value)


def _relevant(label: Any, min_grade: float, where: str) -> bool:
    if isinstance(label, (bool, np.bool_)):
        return bool(label)
    if isinstance(label, (int, float, np.integer, np.floating)) and not (
        isinstance(label, float) and math.isnan(label)
    ):
        return label >= min_grade
    raise ValueError(f"{where}: label {label!r}; expected a grade (number) or a boolean")


def _check_interval(interval: str) -> str:
    if interval not in INTERVALS:
        raise ValueError(f"interval {interval!r}; expected one of {', '.join(INTERVALS)}")
    return interval


def _parse_strata(strata: Any, min_grade: float, need_top_k: bool = False) -> list[_Stratum]:
    if isinstance(strata, (str, bytes, Mapping)) or not isinstance(strata, Iterable):
        raise ValueError("strata: expected a list of strata (dicts or (name, N, n, labels) tuples)")
    if isinstance(min_grade, bool) or not isinstance(min_grade, (int, float)):
        raise ValueError(f"min_grade {min_grade!r}; expected a number")
    out: list[_Stratum] = []
    names: set[str] = set()
    for i, raw in enumerate(strata):
        if isinstance(raw, Mapping):
            unknown = set(raw) - {"stratum", "N", "n", "labels", "in_top_k", "N_top_k", "pi"}
            if unknown:
                raise ValueError(f"stratum #{i}: unknown field(s) {sorted(unknown)}")
            name = str(raw.get("stratum", f"#{i}"))
            if "N" not in raw or "labels" not in raw:
                raise ValueError(f"stratum {name!r}: expected fields 'N' and 'labels'")
            big_n, n, labels = raw["N"], raw.get("n"), raw["labels"]
            in_top, n_top = raw.get("in_top_k"), raw.get("N_top_k")
        elif isinstance(raw, (tuple, list)) and len(raw) == 4:
            name, big_n, n, labels = str(raw[0]), raw[1], raw[2], raw[3]
            in_top, n_top = None, None
        else:
            raise ValueError(f"stratum #{i}: {raw!r}; expected a dict or a (name, N, n, labels) tuple")
        if name in names:
            raise ValueError(f"stratum {name!r} appears twice")
        names.add(name)
        big_n = _count(big_n, f"stratum {name!r}: N")
        if isinstance(labels, (str, bytes)) or not isinstance(labels, Iterable):
            raise ValueError(
                f"stratum {name!r}: labels {labels!r}; expected a list, one per sampled document"
            )
        labels = list(labels)
        n = len(labels) if n is None else _count(n, f"stratum {name!r}: n")
        if n != len(labels):
            raise ValueError(
                f"stratum {name!r}: n={n} but {len(labels)} labels; judge the whole sample, or pass "
                "the number labelled as n (a random subset of a simple random sample is one)"
            )
        if n > big_n:
            raise ValueError(f"stratum {name!r}: n={n} sampled exceeds N={big_n} candidates")
        pi = raw.get("pi") if isinstance(raw, Mapping) else None
        if pi is not None and (
            not isinstance(pi, (int, float)) or abs(pi - (n / big_n if big_n else 0.0)) > 1e-9
        ):
            raise ValueError(f"stratum {name!r}: pi={pi!r} disagrees with n/N = {n}/{big_n}")
        rel = np.array([_relevant(v, min_grade, f"stratum {name!r}") for v in labels], dtype=bool)
        top_mask = None
        if need_top_k:
            if in_top is None or n_top is None:
                raise ValueError(
                    f"stratum {name!r}: recall@k needs 'in_top_k' (one boolean per sampled document) "
                    "and 'N_top_k' (the stratum's candidates in the run's top k; 0 if none)"
                )
            if isinstance(in_top, (str, bytes)) or not isinstance(in_top, Iterable):
                raise ValueError(f"stratum {name!r}: in_top_k {in_top!r}; expected a list of booleans")
            in_top = list(in_top)
            if len(in_top) != n:
                raise ValueError(f"stratum {name!r}: {len(in_top)} in_top_k flags for {n} sampled documents")
            top_mask = np.array([bool(v) for v in in_top], dtype=bool)
            n_top = _count(n_top, f"stratum {name!r}: N_top_k")
            m_top = int(top_mask.sum())
            if not m_top <= n_top <= big_n or n_top - m_top > big_n - n:
                raise ValueError(
                    f"stratum {name!r}: N_top_k={n_top} impossible with {m_top} of the {n} sampled in the "
                    f"top k and N={big_n} (need {m_top} <= N_top_k <= {m_top + big_n - n})"
                )
        out.append(_Stratum(name, big_n, n, rel, top_mask, n_top if need_top_k else None))
    return out


# ------------------------------------------------------------------ distributions

Dist = tuple[int, np.ndarray]  # (offset, pmf): P(T = offset + i) = pmf[i]


def _bb_pmf(m: int, a: float, b: float) -> np.ndarray:
    """Beta-binomial(m, a, b) probabilities on 0..m; a = 0 is a point at 0, b = 0 at m."""
    if m == 0:
        return np.ones(1)
    if a <= 0 or b <= 0:
        out = np.zeros(m + 1)
        out[0 if a <= 0 else m] = 1.0
        return out
    k = np.arange(m + 1, dtype=np.float64)
    logp = (
        gammaln(m + 1.0) - gammaln(k + 1.0) - gammaln(m - k + 1.0) + betaln(k + a, m - k + b) - betaln(a, b)
    )
    p = np.exp(logp - logp.max())
    return p / p.sum()


@lru_cache(maxsize=4096)
def _cell(big_m: int, m: int, y: int, kind: str) -> Dist:
    """Confidence distribution of a cell's relevant count T (big_m candidates, m sampled, y relevant).

    kind: "lower" (inverts P(Y >= y | t)), "upper" (inverts P(Y <= y | t)), "midp" (their
    equal mixture) or "jeffreys" (the Jeffreys-prior posterior)."""
    rest = big_m - m
    if kind == "lower":
        pmf = _bb_pmf(rest, y, m - y + 1)
    elif kind == "upper":
        pmf = _bb_pmf(rest, y + 1, m - y)
    elif kind == "midp":
        pmf = 0.5 * (_bb_pmf(rest, y, m - y + 1) + _bb_pmf(rest, y + 1, m - y))
    else:
        pmf = _bb_pmf(rest, y + 0.5, m - y + 0.5)
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


def _convolve(dists: Iterable[Dist]) -> Dist:
    offset, pmf = 0, np.ones(1)
    for off, p in dists:
        offset += off
        if len(p) == 1:
            continue
        if len(pmf) * len(p) > 2_000_000:
            pmf = np.clip(fftconvolve(pmf, p), 0.0, None)
        else:
            pmf = np.convolve(pmf, p)
        offset, pmf = _trim((offset, pmf))
    return offset, pmf / pmf.sum()


def _lower_q(dist: Dist, level: float, cdf: np.ndarray | None = None) -> int:
    offset, pmf = dist
    c = np.cumsum(pmf) if cdf is None else cdf
    return offset + int(np.argmax(c > level + _TIE))


def _upper_q(dist: Dist, level: float, cdf: np.ndarray | None = None) -> int:
    offset, pmf = dist
    c = np.cumsum(pmf) if cdf is None else cdf
    return offset + (int(np.argmax(c >= level - _TIE)) if c[-1] >= level - _TIE else len(pmf) - 1)


def _pair(cells: Iterable[tuple[int, int, int]], kind: str) -> tuple[Dist, Dist]:
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


def _spend(
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


def _count_interval(cells: list[tuple[int, int, int]], kind: str, alpha: float) -> list[float]:
    """The interval of the summed relevant count of independent cells (big_m, m, y).

    Equal-tailed, except where one side cannot miss (:func:`_spend`): the upper bound of the
    sample that finds nothing and the lower bound of the sample that finds only relevant
    documents bound what any sample's interval can exclude."""
    lo_d, hi_d = _pair(cells, kind)
    lo_c = np.cumsum(lo_d[1])
    hi_c = lo_c if hi_d is lo_d else np.cumsum(hi_d[1])
    low = (_lower_q(lo_d, alpha / 2, lo_c), _lower_q(lo_d, alpha, lo_c))
    high = (_upper_q(hi_d, 1 - alpha / 2, hi_c), _upper_q(hi_d, 1 - alpha, hi_c))
    if kind == "jeffreys":  # a posterior, not a confidence distribution: its equal-tailed interval
        return [float(low[0]), float(high[0])]
    none_found = _upper_q(_pair([(big_m, m, 0) for big_m, m, _ in cells], kind)[1], 1 - alpha / 2)
    all_found = _lower_q(_pair([(big_m, m, m) for big_m, m, _ in cells], kind)[0], alpha / 2)
    # integer counts: "above none_found" starts at none_found + 1
    lower, upper = _spend(low, high, none_found + 0.5, all_found - 0.5)
    return [float(math.ceil(lower)), float(math.floor(upper))]


def _ratio_interval(
    x: tuple[Dist, Dist], y: tuple[Dist, Dist], alpha: float, dead: tuple[float, float] | None = None
) -> list[float]:
    """The interval of R = X / (X + Y), X and Y independent, X + Y >= 1.

    x and y are (distribution for the lower bound, distribution for the upper bound); the lower
    bound of R takes X's lower and Y's upper distribution, and the upper bound the reverse.
    ``dead`` = (R's upper bound is at least this whatever the sample, R's lower bound at most
    this): where given, alpha is spent as :func:`_spend` says; else the tails are equal."""
    low = (_ratio_q(x[0], y[1], alpha / 2, strict=True), _ratio_q(x[0], y[1], alpha, strict=True))
    high = (_ratio_q(x[1], y[0], 1 - alpha / 2, strict=False), _ratio_q(x[1], y[0], 1 - alpha, strict=False))
    if dead is None:
        return [low[0], high[0]]
    return _spend(low, high, *dead)


def _ratio_q(xd: Dist, yd: Dist, level: float, strict: bool) -> float:
    """The quantile of R = X / (X + Y): the smallest atom r with P(R <= r) > level (strict) or
    >= level; found on nested grids of r (5 rounds of 128 points), then snapped to the atom."""
    (xo, px), (yo, py) = xd, yd
    xs = xo + np.arange(len(px), dtype=np.float64)
    keep = px > 0
    xs, px = xs[keep], px[keep]
    sy = np.concatenate([np.cumsum(py[::-1])[::-1], [0.0]])  # sy[j] = P(Y >= yo + j)

    def first_y(r: np.ndarray) -> np.ndarray:  # per (x, r): smallest y with x / (x + y) <= r, as an index
        need = np.ceil(np.outer(xs, (1.0 - r) / r) - 1e-9)
        return np.clip(need - yo, 0, len(py)).astype(np.int64)

    def hit(r: np.ndarray) -> np.ndarray:  # P(R <= r) reaches the level, r in (0, 1)
        cdf = px @ sy[first_y(r)]
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


# ------------------------------------------------------------------ estimates


def _stratum_variance(s: _Stratum) -> tuple[float | None, str | None]:
    if s.N == 0 or s.n == s.N:
        return 0.0, None
    if s.n == 0:
        return None, None
    if s.n == 1:
        return s.N**2 * (1 - 1 / s.N) * 0.25, (
            f"stratum {s.name!r}: one sampled document of {s.N}; its variance uses the bound "
            "s^2 <= 1/4 (a sample variance needs two)"
        )
    s2 = s.y * (s.n - s.y) / (s.n * (s.n - 1))
    return s.N**2 * (1 - s.n / s.N) * s2 / s.n, None


def _unjudged(parsed: list[_Stratum], alpha: float, interval: str) -> dict[str, Any]:
    z = _z(alpha)
    rows: list[dict[str, Any]] = []
    notes: list[str] = []
    unsampled = [s for s in parsed if s.N > 0 and s.n == 0]
    for s in parsed:
        var, note = _stratum_variance(s)
        if note:
            notes.append(note)
        row: dict[str, Any] = {
            "stratum": s.name,
            "N": s.N,
            "n": s.n,
            "pi": s.n / s.N if s.N else None,
            "relevant_sampled": s.y,
            "estimate": s.N * s.y / s.n if s.n else (0.0 if s.N == 0 else None),
            "variance": var,
            "ci": None,
        }
        if s.N == 0:
            row["ci"] = [0.0, 0.0]
        elif s.n > 0:
            row["ci"] = _one_interval([(s.N, s.n, s.y)], var, row["estimate"], z, alpha, interval)
        rows.append(row)
    n_sampled = sum(s.n for s in parsed)
    n_rel = sum(s.y for s in parsed)
    out: dict[str, Any] = {
        "estimate": None,
        "variance": None,
        "se": None,
        "ci": None,
        "alpha": alpha,
        "interval": interval,
        "n_sampled": n_sampled,
        "n_sampled_relevant": n_rel,
        "N_unjudged": sum(s.N for s in parsed),
        "bounds": [float(n_rel), float(sum(s.N - s.n + s.y for s in parsed))],
        "strata": rows,
        "notes": notes,
        "reason": None,
    }
    if unsampled:
        names = ", ".join(f"{s.name!r} (N={s.N})" for s in unsampled)
        out["reason"] = (
            f"no sample from stratum {names}: its relevant count is unknown, so the total is undefined"
        )
        return out
    estimate = float(sum(r["estimate"] for r in rows))
    variance = float(sum(r["variance"] for r in rows))
    out.update(estimate=estimate, variance=variance, se=math.sqrt(variance))
    cells = [(s.N, s.n, s.y) for s in parsed if s.N > 0]
    out["ci"] = _one_interval(cells, variance, estimate, z, alpha, interval)
    return out


def _one_interval(
    cells: list[tuple[int, int, int]],
    variance: float | None,
    estimate: float,
    z: float,
    alpha: float,
    interval: str,
) -> list[float]:
    low_bound = float(sum(c[2] for c in cells))
    high_bound = float(sum(c[0] - c[1] + c[2] for c in cells))
    if interval == "wald":
        half = z * math.sqrt(variance or 0.0)
        return [max(low_bound, estimate - half), min(high_bound, estimate + half)]
    low, high = _count_interval(cells, interval, alpha)
    return [max(low_bound, low), min(high_bound, high)]


def estimate_unjudged_relevant(
    strata: Sequence[Any], *, min_grade: float = 1, alpha: float = 0.05, interval: str = "midp"
) -> dict[str, Any]:
    """Horvitz-Thompson estimate of the relevant documents among the unjudged candidates.

    Returns ``{"estimate", "variance", "se", "ci": [low, high], "alpha", "interval",
    "n_sampled", "n_sampled_relevant", "N_unjudged", "bounds": [found, found + unsampled],
    "strata": [{"stratum", "N", "n", "pi", "relevant_sampled", "estimate", "variance",
    "ci"}], "notes", "reason"}``. ``estimate``, ``variance``, ``se`` and ``ci`` are None
    (with ``reason``) when a stratum with candidates has no sample. ``bounds`` is what the
    sample proves whatever the estimate: the relevant documents found, and found plus every
    unsampled candidate."""
    _check_interval(interval)
    _z(alpha)
    return _unjudged(_parse_strata(strata, min_grade), alpha, interval)


def estimate_rel(
    judged_relevant: int,
    strata: Sequence[Any],
    *,
    min_grade: float = 1,
    alpha: float = 0.05,
    interval: str = "midp",
) -> dict[str, Any]:
    """Estimated |Rel| = judged relevant (known exactly) + estimated unjudged relevant.

    Returns ``{"estimate", "ci", "se", "judged_relevant", "unjudged": <estimate_unjudged_relevant>,
    "n_sampled", "n_sampled_relevant", "alpha", "interval", "reason"}``."""
    judged = _count(judged_relevant, "judged_relevant")
    unjudged = estimate_unjudged_relevant(strata, min_grade=min_grade, alpha=alpha, interval=interval)
    return _rel_from(judged, unjudged)


def _rel_from(judged: int, unjudged: dict[str, Any]) -> dict[str, Any]:
    defined = unjudged["estimate"] is not None
    return {
        "estimate": judged + unjudged["estimate"] if defined else None,
        "ci": [judged + unjudged["ci"][0], judged + unjudged["ci"][1]] if defined else None,
        "se": unjudged["se"],
        "judged_relevant": judged,
        "unjudged": unjudged,
        "n_sampled": unjudged["n_sampled"],
        "n_sampled_relevant": unjudged["n_sampled_relevant"],
        "alpha": unjudged["alpha"],
        "interval": unjudged["interval"],
        "reason": unjudged["reason"],
    }


def _cells_total(cells: list[tuple[int, int, int]], parsed: list[_Stratum]) -> tuple[float, float, list[str]]:
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
    (module docstring). Returns ``{"k", "estimate", "ci", "se", "numerator": {"estimate",
    "judged", "unjudged_estimate"}, "rel": <estimate_rel>, "recall_judged_only",
    "recall_ceiling", "recall_ceiling_ci", "precision_ceiling", "precision_ceiling_ci",
    "n_sampled", "n_sampled_relevant", "n_sampled_in_top_k", "n_sampled_relevant_in_top_k",
    "N_unjudged_in_top_k", "denominator", "notes", "alpha", "interval", "reason"}``.
    ``estimate`` = numerator / denominator (the module docstring says how both are estimated);
    ``rel`` is the Horvitz-Thompson |Rel| with its interval, which the ceilings use;
    ``recall_judged_only`` is what the labels alone say. ``estimate`` and ``ci`` are None with
    the reason when |Rel| is undefined or estimated 0."""
    _check_interval(interval)
    z = _z(alpha)
    judged = _count(judged_relevant, "judged_relevant")
    judged_top = _count(judged_relevant_in_top_k, "judged_relevant_in_top_k")
    k = _count(k, "k")
    if k < 1:
        raise ValueError("k is 0; expected k >= 1")
    if judged_top > judged:
        raise ValueError(f"judged_relevant_in_top_k={judged_top} exceeds judged_relevant={judged}")
    if judged_top > k:
        raise ValueError(f"judged_relevant_in_top_k={judged_top} exceeds k={k}")
    parsed = _parse_strata(strata, min_grade, need_top_k=True)
    rel = _rel_from(judged, _unjudged(parsed, alpha, interval))
    top_unjudged = sum(s.N_top or 0 for s in parsed)
    if judged_top + top_unjudged > k:
        raise ValueError(
            f"{judged_top} judged relevant and {top_unjudged} unjudged candidates in the top k exceed k={k}"
        )
    in_sample = sum(int(s.in_top.sum()) for s in parsed)
    rel_in_sample = sum(int((s.in_top & s.rel).sum()) for s in parsed)
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
    cells_in = [(s.N_top, int(s.in_top.sum()), int((s.in_top & s.rel).sum())) for s in parsed]
    cells_out = [(s.N - s.N_top, int((~s.in_top).sum()), int((~s.in_top & s.rel).sum())) for s in parsed]
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
        lo, hi = _pair([c for c in cells if c[0] > 0], kind)
        return (lo[0] + base, lo[1]), (hi[0] + base, hi[1])

    x_pair = dists(cells_in, judged_top)
    y_pair = dists(cells_out, judged - judged_top)
    dead = None
    if interval != "jeffreys":
        # The least favourable samples, from the design alone (N, n and N_top_k per stratum; how
        # the n split between the top k and the rest is itself random, so each side takes its
        # largest possible share, and the other side its most extreme value, a point): R's upper
        # bound is at least high_floor whatever the sample, and its lower bound at most low_ceiling.
        x_max = judged_top + sum(s.N_top for s in parsed)
        y_max = judged - judged_top + sum(s.N - s.N_top for s in parsed)
        x_none = dists([(s.N_top, min(s.n, s.N_top), 0) for s in parsed], judged_top)[1]
        y_none = dists([(s.N - s.N_top, min(s.n, s.N - s.N_top), 0) for s in parsed], judged - judged_top)[1]
        high_floor = (
            _ratio_q(x_none, (y_max, np.ones(1)), 1 - alpha / 2, strict=False) if x_none[0] + y_max else 0.0
        )
        low_ceiling = (
            _ratio_q((x_max, np.ones(1)), y_none, alpha / 2, strict=True) if x_max + y_none[0] else 0.0
        )
        dead = (high_floor, low_ceiling)
    out["ci"] = _ratio_interval(x_pair, y_pair, alpha, dead)
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
    _z(alpha)
    n_boot = _count(n_boot, "n_boot")
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


def infap(
    ranking: Sequence[str],
    judged: Mapping[str, Any],
    pool: Collection[str] | None = None,
    *,
    min_grade: float = 1,
) -> dict[str, Any]:
    """Inferred AP (E. Yilmaz, J. A. Aslam, CIKM 2006), as trec_eval's infAP computes it.

    Setting: ``pool`` is the depth-d pool (every document any pooled run ranked above d); the
    ``judged`` documents (id -> grade) are a uniform random sample of it (documents judged but
    missing from ``pool`` are added to it; ``pool=None`` means the pool is the judged set,
    fully judged). For each judged relevant document at rank k (1-based, duplicates count at
    their first rank) the expected precision at k is

        E[prec@k] = 1/k + ((k - 1)/k) * (|pool above k| / (k - 1))
                          * (rel_above + eps) / (rel_above + nonrel_above + 2 eps)

        (1 when k = 1), rel_above / nonrel_above = judged relevant / non-relevant documents
        above k, |pool above k| = pooled documents above k (judged or not), eps = 1e-5:
        documents above k outside the pool count as non-relevant, pooled unjudged ones as
        relevant in the judged proportion.

    infAP = sum of E[prec@k] over the judged relevant documents retrieved / judged relevant
    documents (retrieved or not). Fully judged, it is AP (to within eps). The computation is
    trec_eval's te_calc_infap (m_infAP.c), whose formula Yilmaz verified. It assumes one uniform sample of the
    pool: with a fully judged top and a stratified sample below it, weigh by stratum instead
    (xinfAP, E. Yilmaz, E. Kanoulas, J. A. Aslam, SIGIR 2008; not implemented here).

    Returns ``{"estimate", "n_sampled" (judged), "n_sampled_relevant", "n_pool",
    "sampling_rate", "n_ranked", "reason"}``; ``estimate`` is None with the reason when
    nothing is judged or no judged document is relevant."""
    if isinstance(ranking, (str, bytes)):
        raise ValueError("ranking: expected a list of document ids, not a string")
    relevant = {d: _relevant(g, min_grade, f"judged[{d!r}]") for d, g in judged.items()}
    pooled = set(relevant) if pool is None else set(pool) | set(relevant)
    n_rel = sum(relevant.values())
    out: dict[str, Any] = {
        "estimate": None,
        "n_sampled": len(relevant),
        "n_sampled_relevant": n_rel,
        "n_pool": len(pooled),
        "sampling_rate": len(relevant) / len(pooled) if pooled else None,
        "n_ranked": 0,
        "reason": None,
    }
    if not relevant:
        out["reason"] = "no judged document: no sample to infer from"
        return out
    if not n_rel:
        out["reason"] = "no judged document is relevant: AP is undefined"
        return out
    seen: set[str] = set()
    rel_above = nonrel_above = unjudged_above = 0
    total = 0.0
    rank = 0
    for doc in ranking:
        if doc in seen:
            continue
        seen.add(doc)
        rank += 1
        j = rank - 1  # documents above
        if doc not in pooled:
            continue
        if doc not in relevant:
            unjudged_above += 1
            continue
        if not relevant[doc]:
            nonrel_above += 1
            continue
        if j == 0:
            total += 1.0
        else:
            pool_above = rel_above + nonrel_above + unjudged_above
            total += 1.0 / (j + 1) + (j / (j + 1)) * (pool_above / j) * (
                (rel_above + INFAP_EPSILON) / (rel_above + nonrel_above + 2 * INFAP_EPSILON)
            )
        rel_above += 1
    out["n_ranked"] = rank
    out["estimate"] = total / n_rel
    return out


# ------------------------------------------------------------------ planning


def sample_size_for_width(
    width: float,
    p_guess: float | Sequence[float],
    N: int | Sequence[int],
    *,
    alpha: float = 0.05,
    allocation: str = "neyman",
) -> dict[str, Any]:
    """Sample sizes for a CI of full ``width`` on the unjudged relevant count (documents).

    Normal approximation with finite-population correction (Cochran 1977, eq. 4.2 and 5.26):
    the interval z * sqrt(V) each side, V = sum N_h^2 (1 - n_h/N_h) S_h^2 / n_h with
    S_h^2 = N_h p_h (1 - p_h) / (N_h - 1) from the guessed relevant rate p_h.

    - one stratum: n = n0 / (1 + n0 / N), n0 = N^2 S^2 / e^2, e = width / (2 z);
    - several, Neyman allocation (n_h proportional to N_h S_h): n = (sum N_h S_h)^2 /
      (e^2 + sum N_h S_h^2); proportional allocation (n_h proportional to N_h):
      n = N sum N_h S_h^2 / (e^2 + sum N_h S_h^2); a stratum whose share exceeds N_h is
      judged whole and the rest reallocated. Every stratum gets at least 2 (or all of it):
      an unsampled stratum leaves |Rel| undefined.

    With rare relevant documents the normal width understates the mid-p interval's:
    ``midp_width_if_none_found`` is the width of the interval :func:`estimate_unjudged_relevant`
    gives if the planned sample finds no relevant document, the case that decides how small
    a count the sample can rule out. Returns ``{"n": [per stratum], "n_total", "N", "p_guess",
    "width", "expected_width", "midp_width_if_none_found", "alpha", "allocation", "notes"}``."""
    z = _z(alpha)
    if allocation not in ("neyman", "proportional"):
        raise ValueError(f"allocation {allocation!r}; expected 'neyman' or 'proportional'")
    if isinstance(width, bool) or not isinstance(width, (int, float)) or not width > 0 or math.isinf(width):
        raise ValueError(f"width {width!r}; expected a positive number of documents")
    sizes = [N] if isinstance(N, (int, np.integer)) else list(N)
    sizes = [_count(v, "N") for v in sizes]
    guesses = [p_guess] * len(sizes) if isinstance(p_guess, (int, float)) else list(p_guess)
    if len(guesses) != len(sizes):
        raise ValueError(f"{len(guesses)} p_guess values for {len(sizes)} strata")
    for p in guesses:
        if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0.0 <= p <= 1.0:
            raise ValueError(f"p_guess {p!r}; expected a rate between 0 and 1")
    big_n = np.array(sizes, dtype=np.float64)
    p = np.array(guesses, dtype=np.float64)
    s2 = np.where(big_n > 1, big_n * p * (1 - p) / np.maximum(big_n - 1, 1), 0.0)
    s = np.sqrt(s2)
    e2 = (width / (2 * z)) ** 2
    n = np.zeros(len(sizes))
    census = big_n <= 2  # tiny strata: judged whole
    for _ in range(len(sizes) + 1):
        free = ~census & (big_n > 0)
        n[census] = big_n[census]
        if not free.any():
            break
        nf, sf, s2f = big_n[free], s[free], s2[free]
        if allocation == "neyman":
            total = (nf * sf).sum() ** 2 / (e2 + (nf * s2f).sum()) if (nf * sf).sum() > 0 else 0.0
            share = nf * sf / (nf * sf).sum() if (nf * sf).sum() > 0 else nf / nf.sum()
        else:
            total = nf.sum() * (nf * s2f).sum() / (e2 + (nf * s2f).sum())
            share = nf / nf.sum()
        want = total * share
        over = want >= nf
        if not over.any():
            n[free] = want
            break
        census[np.flatnonzero(free)[over]] = True
    n = np.minimum(big_n, np.maximum(np.ceil(n - 1e-9), np.minimum(2, big_n))).astype(int)
    var = float(
        np.sum(np.where(n > 0, big_n**2 * (1 - n / np.maximum(big_n, 1)) * s2 / np.maximum(n, 1), 0.0))
    )
    notes = []
    if np.any((p == 0) & (big_n > 2)):
        notes.append(
            "a guessed rate of 0 plans the minimum of 2 for that stratum; see midp_width_if_none_found"
        )
    zero = [
        {"stratum": f"#{i}", "N": int(a), "labels": [0] * int(b)} for i, (a, b) in enumerate(zip(big_n, n))
    ]
    if_none = estimate_unjudged_relevant(zero, alpha=alpha)["ci"]
    return {
        "n": [int(v) for v in n],
        "n_total": int(n.sum()),
        "N": sizes,
        "p_guess": [float(v) for v in p],
        "width": float(width),
        "expected_width": 2 * z * math.sqrt(var),
        "midp_width_if_none_found": float(if_none[1] - if_none[0]) if if_none else None,
        "alpha": alpha,
        "allocation": allocation,
        "notes": notes,
    }


# ------------------------------------------------------------------ building strata from ids


def strata_from_ids(
    candidates: Mapping[str, Sequence[str]],
    labels: Mapping[str, Any],
    *,
    sampled: Mapping[str, Sequence[str]] | None = None,
    top_k: Collection[str] | None = None,
) -> list[dict[str, Any]]:
    """Strata in this module's input form from document ids.

    ``candidates``: stratum name -> every unjudged candidate id in it (N_h of them);
    ``sampled``: stratum name -> the ids the random sample drew (a stratum left out of it has
    no sample); without ``sampled``, the candidates that have a label are taken as the sample,
    which is right only when every label on a candidate came from the random draw (a chunk
    labelled for another reason is no random draw and would bias the estimate);
    ``labels``: id -> grade; ``top_k``: the run's top-k ids (adds ``in_top_k`` and
    ``N_top_k``)."""
    seen: dict[str, str] = {}
    out = []
    top = set(top_k) if top_k is not None else None
    for name, ids in candidates.items():
        members = list(dict.fromkeys(ids))
        for doc in members:
            if doc in seen:
                raise ValueError(f"document {doc!r} is in stratum {seen[doc]!r} and in {name!r}")
            seen[doc] = name
        if sampled is not None:
            sample = list(dict.fromkeys(sampled.get(name, ())))
            member_set = set(members)
            stray = [d for d in sample if d not in member_set]
            if stray:
                raise ValueError(f"stratum {name!r}: sampled {stray[:3]} are not among its candidates")
            missing = [d for d in sample if d not in labels]
            if missing:
                raise ValueError(f"stratum {name!r}: sampled {missing[:3]} have no label")
        else:
            sample = [d for d in members if d in labels]
        row: dict[str, Any] = {
            "stratum": name,
            "N": len(members),
            "n": len(sample),
            "labels": [labels[d] for d in sample],
        }
        if top is not None:
            row["in_top_k"] = [d in top for d in sample]
            row["N_top_k"] = sum(1 for d in members if d in top)
        out.append(row)
    return out
