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

Labels in queries (issue #39, items 1, 3 and 7)
-----------------------------------------------
Several labelled items (traces, chunks) often share a query, and items of one query are not
independent draws: the item-level variance above is then too small. Given each item's query
(``clusters_labeled``, ``clusters_unlabeled``; an item without one is its own query), the variance
is the cluster-robust (sandwich) variance of the estimating equation summed by query:

    a_g = sum_{i labelled in g} (r_i - mean r),   r = Y - lam Yhat
    c_g = lam sum_{j unlabelled in g} (Yhat_j - mean Yhat_unlabeled)
    se^2 = sum_g (sqrt(k_l) a_g / n + sqrt(k_u) c_g / N)^2
         = k_l sum a_g^2 / n^2 + k_u sum c_g^2 / N^2 + 2 sqrt(k_l k_u) sum a_g c_g / (n N)

over the union of the queries (a query holding labelled and unlabelled items adds the cross term;
with no shared query the two parts add as in the item-level formula). ``k_l = G_l / (G_l - 1) *
(n - 1) / n`` with G_l labelled queries: the CR1 small-sample factor G / (G - 1) (Cameron & Miller,
"A practitioner's guide to cluster-robust inference", Journal of Human Resources 50(2), 2015,
section VI.B; Stata's factor for a mean, where (N - 1) / (N - K) is 1) times (n - 1) / n, which
keeps ppi_py's ddof-0 convention: with every item its own query k_l = 1 and se is today's figure
exactly (the design effect, se^2 over the item-level se^2, is then 1). ``k_u`` likewise with G_u
unlabelled queries and N. The critical value is Student's t with G - 1 degrees of freedom when a
query holds two items (Cameron & Miller 2015, section VI.C: the CR variance has about G - 1 degrees
of freedom, and t(G - 1) is their default with few clusters; the normal one otherwise, today's);
G = G_l, or min(G_l, G_u) when the unlabelled items' queries are given, a query holds two of them
and lambda is not 0 (the conservative choice of the two parts' degrees of freedom). The people-only
mean is clustered the same way (k_l sum_g (sum_{i in g} Y_i - mean Y)^2 / n^2, t(G_l - 1)).

PPI++'s lambda, with clusters, minimises this variance: se^2(lam) = sum_g (u_g - lam d_g)^2 with
u_g = sqrt(k_l) sum_{i in g} (Y_i - mean Y) / n and d_g = sqrt(k_l) sum_{i in g} (Yhat_i - mean
Yhat) / n - sqrt(k_u) sum_{j in g} (Yhat_j - mean Yhat_unlabeled) / N, a least-squares fit through
the origin: lam = sum u d / sum d^2, clipped to [0, 1] (Angelopoulos, Duchi & Zrnic's tuning rule,
with the clustered variance in place of the item-level one). Without a query holding two items it
is ppi_py's lambda above, so today's figures stay.

With fewer than 2 labelled queries there is no variance between queries: ``ppi_mean`` raises,
``ppi_or_reason`` says why. Figures of the bench (``bench/ppi_clustered.py``): docs/review.md,
"PPI with labels in queries".

PPI only where it can help (item 7). P. Mani, P. Xu, Z. C. Lipton, M. Oberst, "No free lunch:
non-asymptotic analysis of prediction-powered inference", arXiv:2505.20178, 2025: in finite samples
PPI++ beats the people-only mean only when the correlation of the judge with people is above a
level that depends on n, for Gaussian data 1/sqrt(n - 2) (a similar bound for binary labels).
``ppi_mean`` computes r (Pearson, labelled items) and, when |r| < 1/sqrt(n - 2) (n the effective
number of items, n / the people-only design effect, when clustered and that effect is above 1), r
is undefined, or the PPI interval is not narrower than the people-only one, returns ``weak_note``
(one sentence) and ``prefer = "people"``: the people-only figure is to be printed beside.

Random or said so (item 3). PPI's guarantee holds for labels drawn at random from the items;
``ppi_or_reason`` gives the correction only when ``drawn_at_random`` is True, else the people's
and the judge's figures with the reason and no corrected interval.

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
from collections.abc import Hashable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from scipy.stats import norm
from scipy.stats import t as student_t

if TYPE_CHECKING:
    from numpy.typing import NDArray

    from calibration.results import PPIReport, RoganGladen

__all__ = [
    "label_budget",
    "ppi_mean",
    "ppi_or_reason",
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


class _Design:
    """Where each item's query falls: integer codes over the union of the labelled and unlabelled
    queries (a query in both shares its code), with the small-sample factors (module docstring)."""

    def __init__(self, clusters_labeled: Any, clusters_unlabeled: Any, n: int, big_n: int) -> None:
        index: dict[Any, int] = {}
        self.labeled_given = clusters_labeled is not None
        self.unlabeled_given = clusters_unlabeled is not None
        self.given = self.labeled_given or self.unlabeled_given
        self.labeled = self._codes(clusters_labeled, n, "clusters_labeled", index)
        self.unlabeled = self._codes(clusters_unlabeled, big_n, "clusters_unlabeled", index)
        self.size = len(index)
        lab_sizes = np.bincount(self.labeled, minlength=self.size)
        unl_sizes = np.bincount(self.unlabeled, minlength=self.size)
        self.g_l = int(np.count_nonzero(lab_sizes))
        self.g_u = int(np.count_nonzero(unl_sizes))
        self.shared = int(np.count_nonzero((lab_sizes > 0) & (unl_sizes > 0)))
        present = lab_sizes[lab_sizes > 0]
        self.items_per_query = [int(present.min()), float(np.median(present)), int(present.max())]
        self.labeled_clustered = bool(present.max() > 1)
        self.unlabeled_clustered = bool(unl_sizes.max() > 1)
        self.n, self.big_n = n, big_n
        if self.given and self.g_l < 2:
            raise ValueError(
                "clusters_labeled: every labelled item is in one query; a query-clustered interval "
                "needs labelled items in at least 2 queries"
            )
        # CR1 (G / (G - 1)) times (n - 1) / n, which keeps ppi_py's ddof-0 item-level variance when
        # every item is its own query (module docstring); 1 for a part with one item
        self.c_l = _factor(self.g_l, n)
        self.c_u = _factor(self.g_u, big_n)

    @staticmethod
    def _codes(clusters: Any, size: int, name: str, index: dict[Any, int]) -> NDArray[np.int64]:
        if clusters is None:  # each item its own query, apart from every other
            start = len(index)
            for i in range(size):
                index[(_OWN, name, i)] = start + i
            return np.arange(start, start + size, dtype=np.int64)
        values = list(clusters)
        if len(values) != size:
            raise ValueError(f"{name} has {len(values)} values for {size} items; expected one query per item")
        codes = np.empty(size, dtype=np.int64)
        for i, q in enumerate(values):
            if q is None or q == "" or (isinstance(q, float) and math.isnan(q)):
                raise ValueError(f"{name}: position {i} has no query; expected the query of every item")
            codes[i] = index.setdefault(q, len(index))
        return codes

    @property
    def clustered(self) -> bool:
        return self.labeled_clustered or self.unlabeled_clustered

    def sums(self, values: NDArray[np.float64], labeled: bool) -> NDArray[np.float64]:
        """Per-query sums of ``values`` (centred by the caller) over the union's codes."""
        codes = self.labeled if labeled else self.unlabeled
        return np.bincount(codes, weights=values, minlength=self.size).astype(np.float64)

    def df(self, lam: float) -> int | None:
        """The t critical value's degrees of freedom: None (normal) when no query holds two items."""
        if not self.clustered:
            return None
        g = self.g_l
        if lam != 0.0 and self.unlabeled_clustered:
            g = min(g, self.g_u)
        return max(g - 1, 1)


_OWN = object()  # the key of an item that is its own query


def _factor(g: int, n: int) -> float:
    return 1.0 if g < 2 or n < 2 else (g / (g - 1.0)) * ((n - 1.0) / n)


def _clustered_parts(
    design: _Design,
    y: NDArray[np.float64],
    yhat: NDArray[np.float64],
    yhat_u: NDArray[np.float64],
    lam: float,
) -> tuple[float, float, float]:
    """(V_labelled, V_unlabelled, V_cross) of the PPI estimate at ``lam`` (module docstring)."""
    n, big_n = design.n, design.big_n
    r = y - lam * yhat
    a = design.sums(r - r.mean(), labeled=True)
    c = design.sums(lam * (yhat_u - yhat_u.mean()), labeled=False)
    v_l = design.c_l * float(a @ a) / n**2
    v_u = design.c_u * float(c @ c) / big_n**2
    v_x = 2.0 * math.sqrt(design.c_l * design.c_u) * float(a @ c) / (n * big_n)
    return v_l, v_u, v_x


def _clustered_lambda(
    design: _Design, y: NDArray[np.float64], yhat: NDArray[np.float64], yhat_u: NDArray[np.float64]
) -> tuple[float, str | None]:
    """PPI++ lambda minimising the query-clustered variance (a quadratic in lambda), clipped to [0, 1]."""
    n, big_n = design.n, design.big_n
    ay = math.sqrt(design.c_l) * design.sums(y - y.mean(), labeled=True) / n
    ah = math.sqrt(design.c_l) * design.sums(yhat - yhat.mean(), labeled=True) / n
    cu = math.sqrt(design.c_u) * design.sums(yhat_u - yhat_u.mean(), labeled=False) / big_n
    # V(lam) = sum_g (ay_g - lam (ah_g - cu_g))^2: least squares through the origin
    d = ah - cu
    denominator = float(d @ d)
    if denominator == 0.0:
        return 0.0, "the judge's labels do not vary between queries; lambda 0 (human-only mean)"
    return float(np.clip(float(ay @ d) / denominator, 0.0, 1.0)), None


def _critical(alpha: float, df: int | None) -> float:
    return _z(alpha) if df is None else float(student_t.ppf(1.0 - alpha / 2.0, df))


def ppi_mean(
    Y_labeled: Any,
    Yhat_labeled: Any,
    Yhat_unlabeled: Any,
    alpha: float = 0.05,
    lam: float | None = None,
    *,
    clusters_labeled: Sequence[Hashable] | None = None,
    clusters_unlabeled: Sequence[Hashable] | None = None,
) -> dict[str, Any]:
    """Prediction-powered mean (PPI++ for ``lam=None``, PPI for ``lam=1``), clustered by query when
    ``clusters_labeled`` / ``clusters_unlabeled`` give each item's query (module docstring).

    Returns ``estimate``, ``ci`` [low, high] (level 1 - alpha: normal, or t(df) when a query holds
    two items), ``se``, ``lam`` (the one used), ``lam_tuned`` (True when power-tuned), ``lam_note``
    (None, or why lambda was set by hand), ``n_labeled``, ``n_unlabeled``, ``alpha``,
    ``human_only`` ``{"estimate", "ci", "se", "n"}`` (the classical mean of ``Y_labeled`` with its
    interval, clustered the same way: the number to hold the PPI one against), ``design``
    (:func:`_design_dict`: ``queries``, ``items``, ``items_per_query``, ``unlabeled_queries``,
    ``unlabeled_items``, ``shared_queries``, ``clustered``, ``design_effect``,
    ``human_design_effect``, ``df``, ``critical``), ``correlation`` (Pearson r of people and judge
    on the labelled items; None when either is constant), ``weak_threshold`` (1/sqrt(n - 2) at the
    effective n; None when n <= 2), ``weak_note`` (None, or one sentence: why PPI cannot help here)
    and ``prefer`` (``"ppi"`` or ``"people"``).

    Raises ValueError on bad input, and when queries are given and the labelled items fall in
    fewer than 2 of them (no variance between queries): :func:`ppi_or_reason` returns the reason.
    """
    y = _vector(Y_labeled, "Y_labeled", min_size=2)
    yhat = _vector(Yhat_labeled, "Yhat_labeled", min_size=2)
    yhat_u = _vector(Yhat_unlabeled, "Yhat_unlabeled", min_size=1)
    if y.size != yhat.size:
        raise ValueError(
            f"Y_labeled has {y.size} values, Yhat_labeled {yhat.size}; expected one judge label per human label"
        )
    _z(alpha)  # validates alpha
    n, big_n = y.size, yhat_u.size
    design = _Design(clusters_labeled, clusters_unlabeled, n, big_n)
    note = None
    if lam is None:
        used, note = (
            _clustered_lambda(design, y, yhat, yhat_u) if design.clustered else _tuned_lambda(y, yhat, yhat_u)
        )
        tuned = True
    else:
        used = float(lam)
        if not math.isfinite(used):
            raise ValueError(f"lam {lam!r}; expected a finite number or None (power-tuned)")
        tuned = False
    estimate = float(used * yhat_u.mean() + (y - used * yhat).mean())
    v_l, v_u, v_x = _clustered_parts(design, y, yhat, yhat_u, used)
    se = math.sqrt(max(v_l + v_u + v_x, 0.0))
    df = design.df(used)
    crit = _critical(alpha, df)
    human_mean = float(y.mean())
    centred = design.sums(y - human_mean, labeled=True)
    human_se = math.sqrt(design.c_l * float(centred @ centred)) / n
    human_df = max(design.g_l - 1, 1) if design.labeled_clustered else None
    human_crit = _critical(alpha, human_df)
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
        "design": _design_dict(
            design,
            se**2 / item_v if design.given and item_v > 0 else None,
            human_se**2 / item_vh if design.given and item_vh > 0 else None,
            df,
        ),
    }
    out.update(_weak(y, yhat, out))
    return out


def _design_dict(
    design: _Design, deff: float | None, human_deff: float | None, df: int | None
) -> dict[str, Any]:
    """The design behind the intervals, as a verdict states it: ``queries`` (labelled queries; None
    when no query was given), ``items``, ``items_per_query`` [min, median, max] (None without
    queries), ``unlabeled_queries`` (None when the unlabelled items' queries were not given),
    ``unlabeled_items``, ``shared_queries`` (queries holding labelled and unlabelled items),
    ``clustered`` (a query holds two items: the variances are by query), ``design_effect`` (the PPI
    variance by query over the item-level one), ``human_design_effect`` (the same for the
    people-only mean), ``df`` (the t critical value's; None: normal) and ``critical`` in words."""
    return {
        "queries": design.g_l if design.given and design.labeled_given else None,
        "items": design.n,
        "items_per_query": design.items_per_query if design.given and design.labeled_given else None,
        "unlabeled_queries": design.g_u if design.unlabeled_given else None,
        "unlabeled_items": design.big_n,
        "shared_queries": design.shared,
        "clustered": design.clustered,
        "design_effect": deff,
        "human_design_effect": human_deff,
        "df": df,
        "critical": "normal" if df is None else f"t({df})",
    }


def _weak(y: NDArray[np.float64], yhat: NDArray[np.float64], result: dict[str, Any]) -> dict[str, Any]:
    """Item 7 of issue #39: ``correlation``, ``weak_threshold``, ``weak_note`` and ``prefer``."""
    n = y.size
    deff = result["design"]["human_design_effect"] if result["design"]["clustered"] else None
    n_eff = n / deff if deff is not None and deff > 1.0 else float(n)
    queries = result["design"]["queries"]
    over = f"{n} labelled items" + (f" in {queries} queries" if queries is not None else "")
    effective = f" (n = {n_eff:.1f} effective items, design effect {deff:.2f})" if n_eff < n else ""
    r = None
    if float(np.std(y)) > 0 and float(np.std(yhat)) > 0:
        r = float(np.clip(np.corrcoef(y, yhat)[0, 1], -1.0, 1.0))
    threshold = 1.0 / math.sqrt(n_eff - 2.0) if n_eff > 2.0 else None
    width = result["ci"][1] - result["ci"][0]
    human = result["human_only"]["ci"][1] - result["human_only"]["ci"][0]
    beside = "the people-only figure is beside"
    if r is None:
        who = "the judge" if float(np.std(yhat)) == 0 else "people"
        note = f"{who} give{'s' if who == 'the judge' else ''} every one of the {over} the same value: no correlation between people and the judge for PPI to use; {beside}"
    elif threshold is None:
        note = f"{over}{effective} are too few for PPI to narrow the interval (1/sqrt(n - 2) needs n > 2); {beside}"
    elif abs(r) < threshold:
        note = (
            f"the judge's correlation with people, r = {r:.2f} over {over}, is under 1/sqrt(n - 2) = "
            f"{threshold:.3f}{effective}: PPI cannot narrow the interval at this n; {beside}"
        )
    elif width >= human:
        note = (
            f"the PPI interval (width {width:.3f}) is not narrower than the people-only one ({human:.3f}) "
            f"at r = {r:.2f} over {over}: {beside}"
        )
    else:
        note = None
    return {
        "correlation": r,
        "weak_threshold": threshold,
        "weak_note": note,
        "prefer": "ppi" if note is None else "people",
    }


def ppi_or_reason(
    Y_labeled: Any,
    Yhat_labeled: Any,
    Yhat_unlabeled: Any,
    *,
    drawn_at_random: bool | None,
    how: str,
    alpha: float = 0.05,
    lam: float | None = None,
    clusters_labeled: Sequence[Hashable] | None = None,
    clusters_unlabeled: Sequence[Hashable] | None = None,
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
    y = _vector(Y_labeled, "Y_labeled", min_size=1)
    yhat_u = _vector(Yhat_unlabeled, "Yhat_unlabeled", min_size=1)
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
    clusters_labeled: Sequence[Hashable] | None = None,
    clusters_unlabeled: Sequence[Hashable] | None = None,
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
