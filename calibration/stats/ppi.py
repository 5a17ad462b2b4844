"""Judge-based estimates corrected with a small human sample (pure: numpy and scipy only).

Prediction-powered inference for a mean
---------------------------------------
n items carry a human label ``Y`` and the judge's label ``Yhat``; N more items carry the
judge's label only (``Yhat_unlabeled``). For a weight ``lam``:

    theta_hat(lam) = lam * mean(Yhat_unlabeled) + mean(Y - lam * Yhat)
    se(lam)^2      = lam^2 * var(Yhat_unlabeled) / N + var(Y - lam * Yhat) / n

(population variances, ddof 0, as ppi_py uses), CI = theta_hat -/+ z_{1-alpha/2} se.
``lam = 1`` is PPI (A. N. Angelopoulos, S. Bates, C. Fannjiang, M. I. Jordan, T. Zrnic,
"Prediction-powered inference", Science 382, 2023, arXiv:2301.09633, the mean estimator);
``lam = 0`` is the human-only (classical) mean; ``lam = None`` is PPI++ (A. N.
Angelopoulos, J. C. Duchi, T. Zrnic, "PPI++: Efficient Prediction-Powered Inference",
arXiv:2311.01453, 2023, the power-tuned lambda):

    lam = cov(Y, Yhat) / ((1 + n/N) * var(Yhat and Yhat_unlabeled pooled))

with ``cov`` over the n labelled items (ddof 0) and the pooled variance with ddof 1,
clipped to [0, 1], exactly as ``ppi_py.ppi._calc_lam_glm`` computes it for a mean
(ppi-python 0.2.3). The estimates and intervals equal ``ppi_py.ppi_mean_pointestimate``,
``ppi_py.ppi_mean_ci`` and ``ppi_py.classical_mean_ci`` (tests check to 1e-6). One
difference: when the judge's labels are all the same, ppi_py's lambda is 0/0 (nan);
here lambda is 0 (the judge carries no information, so PPI++ is the human-only mean)
and ``lam_note`` says so.

Rogan-Gladen correction of a pass rate
--------------------------------------
A judge with sensitivity ``tpr`` = P(judge pass | human pass) and specificity ``tnr``
= P(judge fail | human fail) that passes a share ``p`` of items implies a true pass
rate (p + tnr - 1) / (tpr + tnr - 1) (W. J. Rogan, B. Gladen, "Estimating prevalence
from the results of a screening test", American Journal of Epidemiology 107(1):71-76,
1978), clipped to [0, 1]; undefined when tpr + tnr <= 1 (the judge is no better than a
coin flip, so it says nothing about the true rate).

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
from typing import TYPE_CHECKING, Any

import numpy as np
from scipy.stats import norm

if TYPE_CHECKING:
    from numpy.typing import NDArray

    from calibration.results import PPIReport, RoganGladen

__all__ = [
    "label_budget",
    "ppi_mean",
    "ppi_report",
    "rogan_gladen",
    "rogan_gladen_from_labels",
]


def _z(alpha: float) -> float:
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha {alpha!r}; expected a number strictly between 0 and 1")
    return float(norm.ppf(1.0 - alpha / 2.0))


def _vector(values: Any, name: str, min_size: int = 1) -> NDArray[np.float64]:
    try:
        arr = np.asarray(values, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"{name}: expected numbers, got {values!r:.80}") from None
    if arr.ndim != 1:
        arr = arr.reshape(-1) if arr.ndim == 2 and 1 in arr.shape else arr
    if arr.ndim != 1:
        raise ValueError(f"{name}: expected a 1-d sequence of numbers, got shape {arr.shape}")
    if arr.size < min_size:
        raise ValueError(f"{name}: {arr.size} values; expected at least {min_size}")
    bad = np.flatnonzero(~np.isfinite(arr))
    if bad.size:
        raise ValueError(
            f"{name}: value {float(arr[bad[0]])!r} at position {bad[0]}; expected a finite number"
        )
    return arr


def _binary(values: Any, name: str, min_size: int = 1) -> NDArray[np.bool_]:
    arr = _vector(values, name, min_size)
    bad = np.flatnonzero((arr != 0) & (arr != 1))
    if bad.size:
        raise ValueError(
            f"{name}: value {float(arr[bad[0]])!r} at position {bad[0]}; expected 1 (pass) or 0 (fail)"
        )
    return arr.astype(bool)


def _tuned_lambda(
    y: NDArray[np.float64], yhat: NDArray[np.float64], yhat_u: NDArray[np.float64]
) -> tuple[float, str | None]:
    """PPI++ lambda for a mean, as ppi_py's ``_calc_lam_glm`` (clip=True, identity Hessian)."""
    n, big_n = y.size, yhat_u.size
    cov = float(np.mean((y - y.mean()) * (yhat - yhat.mean())))  # ddof 0
    pooled_var = float(np.var(np.concatenate([yhat, yhat_u]), ddof=1))
    if pooled_var == 0.0:
        return 0.0, "the judge gives every item the same label; lambda 0 (human-only mean)"
    lam = cov / ((1.0 + n / big_n) * pooled_var)
    return float(np.clip(lam, 0.0, 1.0)), None


def ppi_mean(
    Y_labeled: Any,
    Yhat_labeled: Any,
    Yhat_unlabeled: Any,
    alpha: float = 0.05,
    lam: float | None = None,
) -> dict[str, Any]:
    """Prediction-powered mean (PPI++ for ``lam=None``, PPI for ``lam=1``).

    Returns ``estimate``, ``ci`` [low, high] (normal approximation, level 1 - alpha),
    ``se``, ``lam`` (the one used), ``lam_tuned`` (True when power-tuned), ``lam_note``
    (None, or why lambda was set by hand), ``n_labeled``, ``n_unlabeled``, ``alpha``
    and ``human_only`` ``{"estimate", "ci", "se", "n"}``: the classical mean of
    ``Y_labeled`` with its normal CI, the number to hold the PPI one against.
    """
    y = _vector(Y_labeled, "Y_labeled", min_size=2)
    yhat = _vector(Yhat_labeled, "Yhat_labeled", min_size=2)
    yhat_u = _vector(Yhat_unlabeled, "Yhat_unlabeled", min_size=1)
    if y.size != yhat.size:
        raise ValueError(
            f"Y_labeled has {y.size} values, Yhat_labeled {yhat.size}; expected one judge label per human label"
        )
    z = _z(alpha)
    n, big_n = y.size, yhat_u.size
    note = None
    if lam is None:
        used, note = _tuned_lambda(y, yhat, yhat_u)
        tuned = True
    else:
        used = float(lam)
        if not math.isfinite(used):
            raise ValueError(f"lam {lam!r}; expected a finite number or None (power-tuned)")
        tuned = False
    estimate = float(used * yhat_u.mean() + (y - used * yhat).mean())
    se = math.sqrt(float(np.var(used * yhat_u)) / big_n + float(np.var(y - used * yhat)) / n)
    human_mean = float(y.mean())
    human_se = float(y.std()) / math.sqrt(n)
    return {
        "estimate": estimate,
        "ci": [estimate - z * se, estimate + z * se],
        "se": se,
        "lam": used,
        "lam_tuned": tuned,
        "lam_note": note,
        "n_labeled": int(n),
        "n_unlabeled": int(big_n),
        "alpha": float(alpha),
        "human_only": {
            "estimate": human_mean,
            "ci": [human_mean - z * human_se, human_mean + z * human_se],
            "se": human_se,
            "n": int(n),
        },
    }


def ppi_report(
    Y_labeled: Any,
    Yhat_labeled: Any,
    Yhat_unlabeled: Any,
    alpha: float = 0.05,
    lam: float | None = None,
) -> PPIReport:
    """The JSON shape ``python -m calibration ppi`` prints, plain floats and ints:
    ``{"estimate", "ci": [low, high], "lam", "n_labeled", "n_unlabeled",
    "human_only": {"estimate", "ci"}}``."""
    r = ppi_mean(Y_labeled, Yhat_labeled, Yhat_unlabeled, alpha=alpha, lam=lam)
    return {
        "estimate": float(r["estimate"]),
        "ci": [float(r["ci"][0]), float(r["ci"][1])],
        "lam": float(r["lam"]),
        "n_labeled": int(r["n_labeled"]),
        "n_unlabeled": int(r["n_unlabeled"]),
        "human_only": {
            "estimate": float(r["human_only"]["estimate"]),
            "ci": [float(r["human_only"]["ci"][0]), float(r["human_only"]["ci"][1])],
        },
    }


def _rate(value: Any, name: str) -> float:
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} {value!r}; expected a rate between 0 and 1") from None
    if not 0.0 <= x <= 1.0:
        raise ValueError(f"{name} {value!r}; expected a rate between 0 and 1")
    return x


def rogan_gladen(judge_pass_rate: float, tpr: float, tnr: float) -> dict[str, Any]:
    """The true pass rate implied by the judge's pass rate and its tpr/tnr.

    Returns ``{"estimate", "unclipped", "clipped", "reason"}``: ``estimate`` =
    (p + tnr - 1) / (tpr + tnr - 1) clipped to [0, 1] (``clipped`` says whether the
    clip acted; ``unclipped`` is the raw value); None with ``reason`` when
    tpr + tnr <= 1.
    """
    p = _rate(judge_pass_rate, "judge_pass_rate")
    se = _rate(tpr, "tpr")
    sp = _rate(tnr, "tnr")
    youden = se + sp - 1.0
    if youden <= 0.0:
        return {
            "estimate": None,
            "unclipped": None,
            "clipped": False,
            "reason": f"tpr + tnr = {se + sp:g} <= 1: the judge is no better than chance, "
            "so its pass rate says nothing about the true rate",
        }
    raw = (p + sp - 1.0) / youden
    est = min(1.0, max(0.0, raw))
    return {"estimate": est, "unclipped": raw, "clipped": est != raw, "reason": None}


def _rg_vectorized(
    tp: NDArray[np.int64],
    fn: NDArray[np.int64],
    fp: NDArray[np.int64],
    tn: NDArray[np.int64],
    judge_pass: NDArray[np.int64],
    n_unlabeled: int,
) -> NDArray[np.float64]:
    """Rogan-Gladen on arrays of counts; NaN where undefined."""
    with np.errstate(divide="ignore", invalid="ignore"):
        tpr = tp / (tp + fn)
        tnr = tn / (tn + fp)
        youden = tpr + tnr - 1.0
        p = judge_pass / n_unlabeled
        est = np.clip((p + tnr - 1.0) / youden, 0.0, 1.0)
    return np.where(np.isfinite(youden) & (youden > 0), est, np.nan)


def rogan_gladen_from_labels(
    human_labeled: Any,
    judge_labeled: Any,
    judge_unlabeled: Any,
    n_boot: int = 2000,
    seed: int = 0,
    alpha: float = 0.05,
) -> RoganGladen:
    """Rogan-Gladen with tpr/tnr measured on a human-labelled sample (1 = pass, 0 = fail).

    tpr and tnr come from (``human_labeled``, ``judge_labeled``), the judge's pass rate
    from ``judge_unlabeled``. The CI is a percentile bootstrap (level 1 - alpha) that
    resamples both sets independently, with replacement, ``n_boot`` times: drawing n
    labelled rows with replacement is drawing the four confusion counts (TP, FN, FP, TN)
    from a multinomial with the observed shares, and the unlabelled pass count from a
    binomial, so the replicates are exact row resamples computed in O(n_boot).
    Replicates where tpr or tnr is undefined (no human pass, or no human fail, drawn) or
    tpr + tnr <= 1 are left out and counted (``n_boot_undefined``).

    Returns ``estimate``, ``ci`` [low, high] (None when undefined), ``unclipped``,
    ``tpr``, ``tnr``, ``judge_pass_rate``, the confusion counts, ``n_labeled``,
    ``n_unlabeled``, ``n_boot``, ``n_boot_undefined``, ``alpha`` and ``reason``.
    """
    h = _binary(human_labeled, "human_labeled")
    j = _binary(judge_labeled, "judge_labeled")
    ju = _binary(judge_unlabeled, "judge_unlabeled")
    if h.size != j.size:
        raise ValueError(
            f"human_labeled has {h.size} values, judge_labeled {j.size}; expected one judge label per human label"
        )
    if int(n_boot) < 1:
        raise ValueError(f"n_boot {n_boot!r}; expected at least 1")
    _z(alpha)  # validates alpha
    n, big_n = h.size, ju.size
    counts = np.array([np.sum(h & j), np.sum(h & ~j), np.sum(~h & j), np.sum(~h & ~j)], dtype=np.int64)
    tp, fn, fp, tn = (int(c) for c in counts)
    judge_pass = int(ju.sum())
    p = judge_pass / big_n
    result: RoganGladen = {
        "estimate": None,
        "ci": None,
        "unclipped": None,
        "tpr": tp / (tp + fn) if tp + fn else None,
        "tnr": tn / (tn + fp) if tn + fp else None,
        "judge_pass_rate": p,
        "tp": tp,
        "fn": fn,
        "fp": fp,
        "tn": tn,
        "n_labeled": int(n),
        "n_unlabeled": int(big_n),
        "n_boot": int(n_boot),
        "n_boot_undefined": None,
        "alpha": float(alpha),
        "reason": None,
    }
    if result["tpr"] is None or result["tnr"] is None:
        missing = "pass" if result["tpr"] is None else "fail"
        result["reason"] = f"no item in the labelled sample has human label {missing}: tpr/tnr undefined"
        return result
    point = rogan_gladen(p, result["tpr"], result["tnr"])
    result["estimate"], result["unclipped"] = point["estimate"], point["unclipped"]
    if point["estimate"] is None:
        result["reason"] = point["reason"]
        return result

    rng = np.random.default_rng(seed)
    boot_counts = rng.multinomial(n, counts / n, size=int(n_boot))
    boot_pass = rng.binomial(big_n, p, size=int(n_boot))
    reps = _rg_vectorized(
        boot_counts[:, 0], boot_counts[:, 1], boot_counts[:, 2], boot_counts[:, 3], boot_pass, big_n
    )
    defined = reps[np.isfinite(reps)]
    result["n_boot_undefined"] = int(reps.size - defined.size)
    if defined.size == 0:
        result["reason"] = "every bootstrap replicate had tpr + tnr <= 1 or an empty class: no CI"
        return result
    low, high = np.quantile(defined, [alpha / 2.0, 1.0 - alpha / 2.0])
    result["ci"] = [float(low), float(high)]
    return result


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
    z = _z(alpha)
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
        pp = 0.5 if p is None else _rate(p, "p")
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
        py = _vector(pilot[0], "pilot Y", min_size=2)
        pyhat = _vector(pilot[1], "pilot Yhat", min_size=2)
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
