"""How many human labels a target interval width needs, by the people alone, PPI and PPI++ (pure:
numpy only). The estimators: :mod:`calibration.stats.ppi`.

Label budget
------------
A normal-approximation CI of full width w needs ``z * se <= w/2``, z = z_{1-alpha/2}:

- human only, se^2 = sigma^2 / n:  n = ceil((2 z sigma / w)^2), with sigma^2 = p(1-p)
  for a pass rate (p = 0.5, the worst case, unless p is given) or a given variance;
  e.g. w = 0.1, p = 0.5, alpha = 0.05: ceil((2 * 1.959964 * 0.5 / 0.1)^2) = 385.
- PPI (lam = 1), se^2 = sigma_res^2 / n + sigma_judge^2 / N, sigma_res^2 = var(Y - Yhat)
  the judge-human residual variance, sigma_judge^2 = var(Yhat) over the unlabelled items:
  n = ceil(sigma_res^2 / ((w / 2z)^2 - sigma_judge^2 / N)); with N unbounded
  n = ceil((2 z sigma_res / w)^2); when (w / 2z)^2 <= sigma_judge^2 / N no number of
  labels reaches w (the judge's own sampling noise over N items is already wider).
- PPI++ (from a pilot sample): the smallest n with
  min over lam in [0, 1] of (var(Y - lam Yhat)/n + lam^2 var(Yhat)/N) <= (w / 2z)^2,
  where the minimising lam = cov(Y, Yhat) / ((1 + n/N) var(Yhat)), clipped (as above);
  found by bisection (the minimum falls as n grows). Never above the human-only n for
  the pilot's own var(Y), since lam = 0 is allowed.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from calibration.stats.ppi import as_numbers, as_rate, z_of

__all__ = ["label_budget"]


def _ceil(x: float) -> int:
    # guard against 384.00000000000006-style noise turning an exact integer into the next one
    return max(1, math.ceil(x - 1e-9))


def label_budget(
    target_width: float,
    *,
    p: float | None = None,
    variance: float | None = None,
    residual_var: float | None = None,
    judge_var: float | None = None,
    pilot: tuple[Any, Any] | None = None,
    n_unlabeled: int | None = None,
    alpha: float = 0.05,
) -> dict[str, Any]:
    """How many human labels give a CI of full width ``target_width`` (formulas: module docstring).

    - ``human_only``: from ``variance`` if given, else p(1-p) with ``p`` (default 0.5,
      the worst case for a pass rate).
    - ``ppi`` (lam = 1): from ``residual_var`` = var(Y - Yhat) and ``judge_var`` =
      var(Yhat), or both estimated from ``pilot`` = (Y, Yhat) on a doubly labelled
      sample (ddof 1); ``n_unlabeled`` = N judged-only items (None: unbounded, the
      judge term vanishes). None when neither is given.
    - ``ppi_tuned`` (PPI++): from ``pilot`` only (it needs cov(Y, Yhat) and var(Y)).

    Each part is ``{"n", ...inputs, "reason"}``; ``n`` is None with a ``reason`` when
    the width cannot be reached.
    """
    w = float(target_width)
    if not (math.isfinite(w) and w > 0):
        raise ValueError(f"target_width {target_width!r}; expected a positive number")
    z = z_of(alpha)
    half2 = (w / (2.0 * z)) ** 2  # the largest se^2 that gives the width
    if n_unlabeled is not None and int(n_unlabeled) < 1:
        raise ValueError(f"n_unlabeled {n_unlabeled!r}; expected at least 1 (or None: unbounded)")
    big_n = None if n_unlabeled is None else int(n_unlabeled)

    if variance is not None:
        sigma2 = float(variance)
        if not (math.isfinite(sigma2) and sigma2 >= 0):
            raise ValueError(f"variance {variance!r}; expected a number >= 0")
        source = "given variance"
    else:
        pp = 0.5 if p is None else as_rate(p, "p")
        sigma2 = pp * (1.0 - pp)
        source = f"p(1-p) with p = {pp:g}" + (" (worst case)" if p is None else "")
    out: dict[str, Any] = {
        "target_width": w,
        "alpha": float(alpha),
        "z": z,
        "human_only": {
            "n": _ceil(sigma2 / half2),
            "variance": sigma2,
            "variance_from": source,
            "reason": None,
        },
        "ppi": None,
        "ppi_tuned": None,
    }

    pilot_stats = None
    if pilot is not None:
        py = as_numbers(pilot[0], "pilot Y", min_size=2)
        pyhat = as_numbers(pilot[1], "pilot Yhat", min_size=2)
        if py.size != pyhat.size:
            raise ValueError(f"pilot Y has {py.size} values, pilot Yhat {pyhat.size}; expected pairs")
        pilot_stats = {
            "var_y": float(np.var(py, ddof=1)),
            "var_yhat": float(np.var(pyhat, ddof=1)),
            "cov": float(np.cov(py, pyhat, ddof=1)[0, 1]),
            "residual_var": float(np.var(py - pyhat, ddof=1)),
            "n_pilot": int(py.size),
        }
        if residual_var is None:
            residual_var = pilot_stats["residual_var"]
        if judge_var is None:
            judge_var = pilot_stats["var_yhat"]

    if residual_var is not None:
        res2 = float(residual_var)
        jv = 0.0 if judge_var is None else float(judge_var)
        if not (math.isfinite(res2) and res2 >= 0 and math.isfinite(jv) and jv >= 0):
            raise ValueError(f"residual_var {residual_var!r}, judge_var {judge_var!r}; expected numbers >= 0")
        if big_n is not None and judge_var is None:
            raise ValueError("judge_var is needed with n_unlabeled (the judge's own noise over N items)")
        room = half2 - (jv / big_n if big_n else 0.0)
        part: dict[str, Any] = {"residual_var": res2, "judge_var": jv, "n_unlabeled": big_n, "reason": None}
        if room <= 0:
            part["n"] = None
            part["reason"] = (
                f"the judge's noise over {big_n} unlabelled items alone (se^2 = {jv / (big_n or 1):.3g}) "
                f"exceeds the target (se^2 <= {half2:.3g}): no number of labels reaches width {w:g}"
            )
        else:
            part["n"] = _ceil(res2 / room)
        out["ppi"] = part

    if pilot_stats is not None:
        out["ppi_tuned"] = _tuned_budget(pilot_stats, half2, big_n)
    return out


def _tuned_budget(s: dict[str, Any], half2: float, big_n: int | None) -> dict[str, Any]:
    var_y, var_h, cov = s["var_y"], s["var_yhat"], s["cov"]

    def best(n: int) -> tuple[float, float]:
        ratio = n / big_n if big_n else 0.0
        lam = 0.0 if var_h == 0 else float(np.clip(cov / ((1.0 + ratio) * var_h), 0.0, 1.0))
        se2 = (var_y - 2 * lam * cov + lam * lam * var_h) / n + (lam * lam * var_h / big_n if big_n else 0.0)
        return se2, lam

    part: dict[str, Any] = {**s, "n_unlabeled": big_n, "reason": None}
    hi = _ceil(var_y / half2) if var_y > 0 else 1  # lam = 0 (human-only) always reaches it
    lo = 1
    if best(lo)[0] <= half2:
        hi = lo
    while lo < hi:  # smallest n with best(n) <= half2; best(.) falls as n grows
        mid = (lo + hi) // 2
        if best(mid)[0] <= half2:
            hi = mid
        else:
            lo = mid + 1
    part["n"] = hi
    part["lam"] = best(hi)[1]
    return part
