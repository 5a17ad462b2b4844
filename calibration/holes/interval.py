"""The score interval that widens the holes' corrected t interval (pure: numpy; no IO).

:func:`calibration.holes.scoring.corrected_mean` gives the t interval of the difference estimator, and
the t interval trusts the sample's own variance. A query's gain from people's labels on its holes
(``g = y - p``) is not a well-behaved number: for most measures it is zero for most queries and
large for a few, and when nearly every query gains (each has one relevant hole) it is the same
value for nearly all. Either way a sample can read a variance far below the population's: one
that drew few of the rare large gains reads a low mean and a low variance (the t interval missed
from below the target), and one whose queries all gained alike reads no variance at all
(``P@10 0.3000 [0.3000, 0.3000]``; issue #39: with 90% of queries gaining one relevant hole, the
95% interval covered in 65% of samples of 10 queries).

The remedy is the one Wilson's interval brings to a proportion (Wilson, JASA 1927; Agresti &
Coull, The American Statistician 1998, on why it beats the Wald interval near 0 and 1): do not
plug in the sample's variance, tie the variance to the mean being tested, and keep every mean
``u`` the data do not reject:

    (u_hat - u)^2 <= k2 V(u)

A gain is modelled as a scaled Bernoulli for its positive part, its rate free, the size of a
gain and the negative part fixed at the sample's:

    var_g(u) = a+ u - u^2 + (a+ + a-) mean(g-),  a+ = sum(g+^2) / sum(g+),  a- = sum(g-^2) / sum(g-)
    V(u)     = r var_g(u),  r = var(g - lam gf) / var(g)   (the share the judge leaves unexplained;
                                                            1 when the gains do not vary)

(g+ and g- the positive and negative parts of ``g``, gf the judge's gain, moments with ddof 0; at
u = the sample's mean gain, var_g is the sample's variance of g and V the residual's.) For 0/1
gains a+ = 1 and V(u) = u (1 - u): the set is Wilson's interval. Its two ends are the roots of a
quadratic. The upper root reaches above the t interval when the gains are rare and large (the
variance grows with the mean); the lower root reaches below it when most queries gain alike (the
variance grows as the mean moves away from "every query gains"): a sample of 6 queries that all
gained 0.1 gives [0.1 / (1 + k2), 0.1] where the t interval gives [0.1, 0.1], as Wilson's gives
[n / (n + z^2), 1] for n successes in n. The corrected interval is the hull of the two, so it is
never narrower than the t interval and is the t interval where the sample's variance is sound.

``k2`` is t^2 (1 - n/N) / (n - ddof): the t quantile and the finite-population correction of the
t interval, the variance's degrees of freedom as it counts them (a touch wider than Wilson's
z^2 / n, which small samples want).
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["ALIKE", "score_bounds", "widened"]

# values closer than this are alike: a query's figure is a ratio, and y - p of two figures that
# differ by the same 0.1 differs by 1e-17 from query to query (float noise, not variation)
ALIKE = 1e-9


def score_bounds(
    gain_y: np.ndarray, gain_f: np.ndarray, lam: float, u_hat: float, k2: float
) -> tuple[float, float] | None:
    """The score interval for the mean gain (above the anchor), as the module's docstring gives
    it: the roots of (u_hat - u)^2 = k2 V(u). None when no query gained or lost (nothing to model)
    or the quadratic has no real root."""
    positive = np.clip(gain_y, 0.0, None)
    negative = np.clip(-gain_y, 0.0, None)
    if positive.sum() <= 0 and negative.sum() <= 0:
        return None
    if float(np.ptp(gain_y)) < ALIKE:  # alike: the judge explains none of a spread the sample lacks
        share = 1.0
    else:
        share = float(np.var(gain_y - lam * gain_f)) / float(np.var(gain_y))
    a_pos = float((positive**2).sum() / positive.sum()) if positive.sum() > 0 else 0.0
    a_neg = float((negative**2).sum() / negative.sum()) if negative.sum() > 0 else 0.0
    const = (a_pos + a_neg) * float(negative.mean())
    k2 *= share
    b = 2 * u_hat + k2 * a_pos
    disc = b * b - 4 * (1 + k2) * (u_hat * u_hat - k2 * const)
    if disc < 0:
        return None
    root = math.sqrt(disc)
    return (b - root) / (2 * (1 + k2)), (b + root) / (2 * (1 + k2))


def widened(
    ci: tuple[float, float], base: float, gain_y: np.ndarray, k2: float, cut: tuple[float, float]
) -> tuple[float, float]:
    """The sample-alone interval (lambda 0, around ``base`` + the mean gain) widened to the score
    interval's ends as the corrected one is, cut to ``cut``."""
    score = score_bounds(gain_y, np.zeros_like(gain_y), 0.0, float(gain_y.mean()), k2)
    if score is None:
        return ci
    return max(min(ci[0], base + score[0]), cut[0]), min(max(ci[1], base + score[1]), cut[1])
