"""Two runs on the same judgments: is the difference real? (pure)

Per metric, over the queries where it is defined for both runs (the others
are left out and counted): the mean of each run, the mean difference B - A,
per-query wins, losses and ties, and two paired tests of "no difference":

- the paired randomization (sign-flip) test: under the null each query's
  difference is as likely to have either sign; the two-sided p-value is the
  share of random sign assignments whose mean difference is at least as far
  from 0 as the one observed, counting the observed one, (c + 1) / (N + 1)
  (Smucker, Allan and Carterette, "A comparison of statistical significance
  tests for information retrieval evaluation", CIKM 2007; seeded, vectorized);
- the paired t-test (scipy.stats.ttest_rel), two-sided.

A metric with no query defined for both runs, or whose differences are all
zero, has no p-value: None, with the reason.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from scipy import stats

__all__ = ["paired_test", "randomization_p"]

TIE_TOLERANCE = 1e-12


def randomization_p(diffs: np.ndarray, permutations: int = 10_000, seed: int = 0) -> float:
    """Two-sided sign-flip p-value of the mean of ``diffs``."""
    diffs = np.asarray(diffs, dtype=np.float64)
    n = len(diffs)
    observed = abs(diffs.mean())
    rng = np.random.default_rng(seed)
    extreme = 0
    block = max(1, min(permutations, 4_000_000 // max(n, 1)))  # bounded memory: block x n signs
    done = 0
    while done < permutations:
        size = min(block, permutations - done)
        signs = rng.integers(0, 2, size=(size, n), dtype=np.int8) * 2 - 1
        means = np.abs(signs @ diffs) / n
        extreme += int((means >= observed - TIE_TOLERANCE).sum())
        done += size
    return (extreme + 1) / (permutations + 1)


def paired_test(
    a: Sequence[float] | np.ndarray,
    b: Sequence[float] | np.ndarray,
    permutations: int = 10_000,
    seed: int = 0,
) -> dict[str, Any]:
    """Per-query values of run A and run B (NaN = undefined), aligned by query."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    if a.shape != b.shape:
        raise ValueError(f"{len(a)} values for run A and {len(b)} for run B; expected one per query each")
    both = ~np.isnan(a) & ~np.isnan(b)
    x, y = a[both], b[both]
    diffs = y - x
    n = int(both.sum())
    out: dict[str, Any] = {
        "n": n,
        "left_out": int(len(a) - n),
        "mean_a": float(x.mean()) if n else None,
        "mean_b": float(y.mean()) if n else None,
        "delta": float(diffs.mean()) if n else None,
        "wins": int((diffs > TIE_TOLERANCE).sum()),  # B better
        "losses": int((diffs < -TIE_TOLERANCE).sum()),
        "ties": int((np.abs(diffs) <= TIE_TOLERANCE).sum()),
        "p_randomization": None,
        "p_ttest": None,
        "undefined_reason": None,
    }
    if n == 0:
        out["undefined_reason"] = "no query where the metric is defined for both runs"
    elif out["ties"] == n:
        out["undefined_reason"] = f"the two runs are equal on all {n} queries"
    elif n < 2:
        out["undefined_reason"] = "one query: no test"
    else:
        out["p_randomization"] = randomization_p(diffs, permutations, seed)
        with np.errstate(all="ignore"):
            t = stats.ttest_rel(y, x)
        out["p_ttest"] = None if np.isnan(t.pvalue) else float(t.pvalue)
        out["permutations"] = permutations
    return out
