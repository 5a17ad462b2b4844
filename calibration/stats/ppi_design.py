"""PPI when labels come in queries: the cluster-robust variance, PPI++'s lambda by query, and when
PPI cannot help (issue #39; pure: numpy and scipy only). :func:`calibration.stats.ppi.ppi_mean`
and :func:`calibration.stats.ppi.ppi_or_reason` call these; the estimator itself is described in
:mod:`calibration.stats.ppi`.

Labels in queries (item 1)
--------------------------
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
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from numpy.typing import NDArray

__all__ = ["QueryDesign", "clustered_lambda", "clustered_parts", "critical", "design_dict", "weak_check"]


class QueryDesign:
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


def clustered_parts(
    design: QueryDesign,
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


def clustered_lambda(
    design: QueryDesign, y: NDArray[np.float64], yhat: NDArray[np.float64], yhat_u: NDArray[np.float64]
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


def critical(alpha: float, df: int | None) -> float:
    # start-up: scipy.stats (~0.5 s), only when an interval is computed
    from scipy.stats import norm
    from scipy.stats import t as student_t

    return float(norm.ppf(1.0 - alpha / 2.0)) if df is None else float(student_t.ppf(1.0 - alpha / 2.0, df))


def design_dict(
    design: QueryDesign, deff: float | None, human_deff: float | None, df: int | None
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


def weak_check(y: NDArray[np.float64], yhat: NDArray[np.float64], result: dict[str, Any]) -> dict[str, Any]:
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
