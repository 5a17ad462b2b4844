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

Labels in queries, PPI only where it can help, random or said so: :mod:`calibration.stats.ppi_design`
(the clustered variance, the tuned lambda with clusters, the weak-correlation note). The label
budget: :mod:`calibration.stats.ppi_budget`.

Rogan-Gladen correction of a pass rate
--------------------------------------
A judge with sensitivity ``tpr`` = P(judge pass | human pass) and specificity ``tnr``
= P(judge fail | human fail) that passes a share ``p`` of items implies a true pass
rate (p + tnr - 1) / (tpr + tnr - 1) (W. J. Rogan, B. Gladen, "Estimating prevalence
from the results of a screening test", American Journal of Epidemiology 107(1):71-76,
1978), clipped to [0, 1]; undefined when tpr + tnr <= 1 (the judge is no better than a
coin flip, so it says nothing about the true rate).

"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from calibration.stats.ppi_design import (
    QueryDesign,
    clustered_lambda,
    clustered_parts,
    critical,
    design_dict,
    weak_check,
)

if TYPE_CHECKING:
    from numpy.typing import NDArray

    from calibration.results import PPIReport, RoganGladen

__all__ = [
    "ppi_mean",
    "ppi_or_reason",
    "ppi_report",
    "rogan_gladen",
    "rogan_gladen_from_labels",
]


def z_of(alpha: float) -> float:
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha {alpha!r}; expected a number strictly between 0 and 1")
    from scipy.stats import norm  # start-up: scipy.stats (~0.5 s), only when an interval is computed

    return float(norm.ppf(1.0 - alpha / 2.0))


def as_numbers(values: Any, name: str, min_size: int = 1) -> NDArray[np.float64]:
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
    arr = as_numbers(values, name, min_size)
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
    *,
    clusters_labeled: Sequence[Hashable] | NDArray[Any] | None = None,
    clusters_unlabeled: Sequence[Hashable] | NDArray[Any] | None = None,
) -> dict[str, Any]:
    """Prediction-powered mean (PPI++ for ``lam=None``, PPI for ``lam=1``), clustered by query when
    ``clusters_labeled`` / ``clusters_unlabeled`` give each item's query (module docstring).

    Returns ``estimate``, ``ci`` [low, high] (level 1 - alpha: normal, or t(df) when a query holds
    two items), ``se``, ``lam`` (the one used), ``lam_tuned`` (True when power-tuned), ``lam_note``
    (None, or why lambda was set by hand), ``n_labeled``, ``n_unlabeled``, ``alpha``,
    ``human_only`` ``{"estimate", "ci", "se", "n"}`` (the classical mean of ``Y_labeled`` with its
    interval, clustered the same way: the number to hold the PPI one against), ``design``
    (:func:`calibration.stats.ppi_design.design_dict`: ``queries``, ``items``, ``items_per_query``, ``unlabeled_queries``,
    ``unlabeled_items``, ``shared_queries``, ``clustered``, ``design_effect``,
    ``human_design_effect``, ``df``, ``critical``), ``correlation`` (Pearson r of people and judge
    on the labelled items; None when either is constant), ``weak_threshold`` (1/sqrt(n - 2) at the
    effective n; None when n <= 2), ``weak_note`` (None, or one sentence: why PPI cannot help here)
    and ``prefer`` (``"ppi"`` or ``"people"``).

    Raises ValueError on bad input, and when queries are given and the labelled items fall in
    fewer than 2 of them (no variance between queries): :func:`ppi_or_reason` returns the reason.
    """
    y = as_numbers(Y_labeled, "Y_labeled", min_size=2)
    yhat = as_numbers(Yhat_labeled, "Yhat_labeled", min_size=2)
    yhat_u = as_numbers(Yhat_unlabeled, "Yhat_unlabeled", min_size=1)
    if y.size != yhat.size:
        raise ValueError(
            f"Y_labeled has {y.size} values, Yhat_labeled {yhat.size}; expected one judge label per human label"
        )
    z_of(alpha)  # validates alpha
    n, big_n = y.size, yhat_u.size
    design = QueryDesign(clusters_labeled, clusters_unlabeled, n, big_n)
    note = None
    if lam is None:
        used, note = (
            clustered_lambda(design, y, yhat, yhat_u) if design.clustered else _tuned_lambda(y, yhat, yhat_u)
        )
        tuned = True
    else:
        used = float(lam)
        if not math.isfinite(used):
            raise ValueError(f"lam {lam!r}; expected a finite number or None (power-tuned)")
        tuned = False
    estimate = float(used * yhat_u.mean() + (y - used * yhat).mean())
    v_l, v_u, v_x = clustered_parts(design, y, yhat, yhat_u, used)
    se = math.sqrt(max(v_l + v_u + v_x, 0.0))
    df = design.df(used)
    crit = critical(alpha, df)
    human_mean = float(y.mean())
    centred = design.sums(y - human_mean, labeled=True)
    human_se = math.sqrt(design.c_l * float(centred @ centred)) / n
    human_df = max(design.g_l - 1, 1) if design.labeled_clustered else None
    human_crit = critical(alpha, human_df)
    # the item-level variances (ppi_py's, ddof 0) the design effects are taken against
    item_v = float(np.var(y - used * yhat)) / n + float(np.var(used * yhat_u)) / big_n
    item_vh = float(np.var(y)) / n
    out: dict[str, Any] = {
        "estimate": estimate,
        "ci": [estimate - crit * se, estimate + crit * se],
        "se": se,
        "lam": used,
        "lam_tuned": tuned,
        "lam_note": note,
        "n_labeled": int(n),
        "n_unlabeled": int(big_n),
        "alpha": float(alpha),
        "human_only": {
            "estimate": human_mean,
            "ci": [human_mean - human_crit * human_se, human_mean + human_crit * human_se],
            "se": human_se,
            "n": int(n),
        },
        "design": design_dict(
            design,
            se**2 / item_v if design.given and item_v > 0 else None,
            human_se**2 / item_vh if design.given and item_vh > 0 else None,
            df,
        ),
    }
    out.update(weak_check(y, yhat, out))
    return out


def ppi_or_reason(
    Y_labeled: Any,
    Yhat_labeled: Any,
    Yhat_unlabeled: Any,
    *,
    drawn_at_random: bool | None,
    how: str,
    alpha: float = 0.05,
    lam: float | None = None,
    clusters_labeled: Sequence[Hashable] | NDArray[Any] | None = None,
    clusters_unlabeled: Sequence[Hashable] | NDArray[Any] | None = None,
) -> dict[str, Any]:
    """PPI only over labels known to be drawn at random (issue #39, item 3); otherwise the figures
    without a corrected interval, and why. Pure, as :func:`ppi_mean`.

    ``drawn_at_random``: True (a review sample, a hole sample, ``pool --estimate``: the product drew
    them), False (chosen by hand) or None (not recorded); ``how``: the draw in words, quoted in the
    reason ("16 traces picked on the review page"). Always returns ``judge_only`` (the judge's mean
    over the unlabelled items), ``drawn_at_random``, ``how``, ``n_labeled``, ``n_unlabeled`` and
    ``alpha``.

    - True: everything :func:`ppi_mean` returns (with ``design``, ``weak_note``, ``prefer``); when
      the labelled items fall in one query (no interval by query), the not-corrected shape below
      with that reason.
    - False or None: no ``estimate``, ``ci`` nor ``se``; ``human_only`` is ``{"estimate", "n"}`` (the
      people's mean of these items, no interval: chosen items say nothing about the rest),
      ``undefined_reason`` "the labels were chosen, not drawn at random (how): no PPI correction"
      (None: "it is not recorded how the labels were drawn (how): ..."), ``prefer`` None.

    The review's ``_pass_rate`` can return this with ``scope`` added (its ``PassRate`` keys), and
    cut ``ci`` / ``human_only.ci`` to [0, 1] when present.
    """
    y = as_numbers(Y_labeled, "Y_labeled", min_size=1)
    yhat_u = as_numbers(Yhat_unlabeled, "Yhat_unlabeled", min_size=1)
    common: dict[str, Any] = {
        "judge_only": float(yhat_u.mean()),
        "drawn_at_random": drawn_at_random,
        "how": how,
        "n_labeled": int(y.size),
        "n_unlabeled": int(yhat_u.size),
        "alpha": float(alpha),
    }
    not_corrected = {**common, "human_only": {"estimate": float(y.mean()), "n": int(y.size)}, "prefer": None}
    if drawn_at_random is not True:
        said = (
            "chosen, not drawn at random" if drawn_at_random is False else "not known to be drawn at random"
        )
        return {**not_corrected, "undefined_reason": f"the labels were {said} ({how}): no PPI correction"}
    if clusters_labeled is not None and len({*clusters_labeled}) < 2:
        return {
            **not_corrected,
            "undefined_reason": f"every labelled item is in one query ({how}): no interval by query, "
            "so no PPI correction (label items of at least 2 queries)",
        }
    result = ppi_mean(
        Y_labeled,
        Yhat_labeled,
        Yhat_unlabeled,
        alpha=alpha,
        lam=lam,
        clusters_labeled=clusters_labeled,
        clusters_unlabeled=clusters_unlabeled,
    )
    return {**result, **common}


def ppi_report(
    Y_labeled: Any,
    Yhat_labeled: Any,
    Yhat_unlabeled: Any,
    alpha: float = 0.05,
    lam: float | None = None,
    *,
    clusters_labeled: Sequence[Hashable] | NDArray[Any] | None = None,
    clusters_unlabeled: Sequence[Hashable] | NDArray[Any] | None = None,
) -> PPIReport:
    """The JSON shape ``python -m calibration ppi`` prints, plain floats and ints:
    ``{"estimate", "ci": [low, high], "lam", "n_labeled", "n_unlabeled",
    "human_only": {"estimate", "ci"}, "design", "correlation", "weak_threshold", "weak_note",
    "prefer"}`` (:func:`ppi_mean`'s keys of those names)."""
    r = ppi_mean(
        Y_labeled,
        Yhat_labeled,
        Yhat_unlabeled,
        alpha=alpha,
        lam=lam,
        clusters_labeled=clusters_labeled,
        clusters_unlabeled=clusters_unlabeled,
    )
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
        "design": r["design"],
        "correlation": r["correlation"],
        "weak_threshold": r["weak_threshold"],
        "weak_note": r["weak_note"],
        "prefer": r["prefer"],
    }


def as_rate(value: Any, name: str) -> float:
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
    p = as_rate(judge_pass_rate, "judge_pass_rate")
    se = as_rate(tpr, "tpr")
    sp = as_rate(tnr, "tnr")
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
    z_of(alpha)  # validates alpha
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
