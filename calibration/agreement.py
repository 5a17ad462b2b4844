"""Agreement between raters: Cohen's kappa (weighted), its score interval, Fleiss' kappa, Krippendorff's alpha.

Pure module: plain data in, plain data out. The statistics live in three modules, lowest first, each
with the formulas it implements in its docstring:

- :mod:`calibration.kappa`: the ratings (missing values, the scale rule :func:`grade_range`, their
  encoding), Cohen's kappa unweighted, linear and quadratic (:func:`cohen`, :func:`cohen_all`,
  :func:`binarised`), the errors :class:`InvalidRatings` and :class:`UnequalRaters`;
- :mod:`calibration.kappa_interval`: the score interval of kappa that every face prints
  (:func:`kappa_ci`, :class:`KappaCI`, :func:`score_interval`): it does not collapse to a point at
  perfect agreement, and covered the true kappa in 94-97% of samples at n = 20-300 (docs/agreement.md);
- :mod:`calibration.bootstrap`: the percentile bootstrap of kappa (:func:`bootstrap_ci`,
  :class:`BootstrapCI`, :func:`bootstrap_kappas`, :func:`resample_indices`), kept for comparison and
  for the estimates that resample queries; it is not kappa's interval (it covered a true kappa of
  0.95 in half the samples of 20 items);
- :mod:`calibration.multirater`: long ratings (item, rater, label), Fleiss' kappa (:func:`fleiss`),
  Krippendorff's alpha (:func:`krippendorff_alpha`).

This module holds the report of long ratings (:func:`from_long`, :func:`agreement_report`: what
``python -m calibration agree`` prints) and re-exports the public names of the three, with
:func:`verdict` and :data:`TRUSTED` of :mod:`calibration.verdict`: ``from
calibration.agreement import X`` serves the rest of the product. References, how the figures were
checked, and timings: docs/agreement.md.

The report, per pair of raters over the items both rated: Cohen's kappa unweighted, linear and
quadratic (weighted only when the labels have an order: numbers, or ``labels=``), each with its
score interval, and the verdict on the unweighted kappa (or the statistic chosen); over all raters, Fleiss' kappa (when every item has the same number
of ratings) and Krippendorff's alpha (nominal; ordinal and interval when the labels allow). An
undefined figure is None with its reason, never 0.

The verdict (:mod:`calibration.verdict`): trusted when the interval's lower end reaches the bar
(0.6 by default), not trusted when its upper end is below it, else undecided.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from itertools import combinations
from typing import Any

from calibration.bootstrap import BootstrapCI, bootstrap_ci, bootstrap_kappas, resample_indices
from calibration.kappa import MAX_GRADE_RANGE as MAX_GRADE_RANGE  # re-exported
from calibration.kappa import (
    WEIGHTINGS,
    InvalidRatings,
    RaterPair,
    UnequalRaters,
    Weights,
    binarised,
    cohen,
    cohen_all,
    cohen_of_pair,
)
from calibration.kappa import grade_range as grade_range  # re-exported: the scale rule of every face
from calibration.kappa_interval import METHOD as INTERVAL_METHOD
from calibration.kappa_interval import KappaCI, check_alpha, kappa_ci, kappa_ci_of_pair, score_interval
from calibration.multirater import (
    LEVELS,
    LongTable,
    alpha_of_matrix,
    fleiss,
    fleiss_of_table,
    krippendorff_alpha,
)
from calibration.multirater import Level as Level  # re-exported
from calibration.verdict import (  # re-exported: agreement's verdict
    DEFAULT_STATISTIC,
    TRUSTED,
    advice,
    labels_to_decide,
    verdict,
)

__all__ = [
    "InvalidRatings",
    "UnequalRaters",
    "BootstrapCI",
    "cohen",
    "cohen_all",
    "KappaCI",
    "kappa_ci",
    "score_interval",
    "INTERVAL_METHOD",
    "bootstrap_ci",
    "bootstrap_kappas",
    "resample_indices",
    "fleiss",
    "krippendorff_alpha",
    "binarised",
    "verdict",
    "TRUSTED",
    "from_long",
    "agreement_report",
]


# --------------------------------------------------------------------------- report


def _pairs(table: LongTable) -> Iterator[tuple[Any, Any, RaterPair]]:
    for first, second in combinations(table.raters, 2):
        a, b = table.ratings_of(first), table.ratings_of(second)
        both = [i for i, (x, y) in enumerate(zip(a, b)) if x is not None and y is not None]
        pair = RaterPair([a[i] for i in both], [b[i] for i in both], table.scale, (str(first), str(second)))
        yield first, second, pair


_UNORDERED = "labels are text without an order: weighted kappa needs numeric labels or labels= (the scale)"


def _krippendorff_all(table: LongTable) -> dict:
    matrix = table.matrix()
    out = {}
    for level in LEVELS:
        if (level == "interval" and not table.numeric) or (level == "ordinal" and not table.ordered):
            out[level] = None
            continue
        out[level] = alpha_of_matrix(matrix, level, table.scale if table.ordered else None, table.numeric)
    return out


def _fleiss_or_reason(table: LongTable) -> dict:
    try:
        return fleiss_of_table(table)
    except UnequalRaters as unequal:
        return {"kappa": None, "undefined_reason": str(unequal)}


def from_long(rows: Any, *, labels: Sequence | None = None) -> dict:
    """Every agreement figure of long ratings ((item, rater, label) rows), in full detail.

    Pairwise Cohen's kappa (unweighted, linear, quadratic) for every pair of raters over the items both
    rated, Fleiss' kappa when every item has the same number of ratings, Krippendorff's alpha (nominal;
    ordinal and interval None for text labels; ordinal with text labels given ``labels=``). Labels that
    are all numbers or numeric strings ("0".."3" from a CSV) are read as numbers. The scale: ``labels``,
    else for whole-number grades every integer from the lowest to the highest grade seen, else the
    sorted distinct labels. Duplicate (item, rater) rows are refused (:class:`InvalidRatings`).
    """
    table = LongTable(rows, labels)
    pairs = []
    for first, second, pair in _pairs(table):
        entry: dict[str, Any] = {"raters": [first, second], "unweighted": cohen_of_pair(pair, None)}
        for weights in ("linear", "quadratic"):
            entry[weights] = cohen_of_pair(pair, weights) if table.ordered else None
        pairs.append(entry)
    return {
        "n_items": len(table.items),
        "n_ratings": len(table.cell),
        "n_missing": table.n_missing,
        "raters": list(table.raters),
        "labels": list(table.scale),
        "numeric": table.numeric,
        "pairs": pairs,
        "fleiss": _fleiss_or_reason(table),
        "krippendorff": _krippendorff_all(table),
    }


def _report_pair(
    first: Any, second: Any, pair: RaterPair, ordered: bool, alpha: float, bar: float, statistic: str
) -> dict:
    """One pair of raters in the report: kappas, each with its score interval
    (:func:`calibration.kappa_interval.kappa_ci`), and the verdict
    (:func:`calibration.verdict.verdict` of ``statistic``'s kappa and interval at ``bar``)."""
    weightings = WEIGHTINGS if ordered else (None,)
    estimates = {w: cohen_of_pair(pair, w) for w in weightings}
    cis: dict[Weights, list | None] = dict.fromkeys(WEIGHTINGS)
    for w in weightings:
        ci = kappa_ci_of_pair(pair, w, alpha)
        cis[w] = None if ci.low is None else [ci.low, ci.high]
    unweighted = estimates[None]
    entry: dict[str, Any] = {
        "raters": [first, second],
        "n": pair.n,
        "observed_agreement": unweighted["observed_agreement"],
        "kappa": unweighted["kappa"],
        "kappa_linear": estimates["linear"]["kappa"] if ordered else None,
        "kappa_quadratic": estimates["quadratic"]["kappa"] if ordered else None,
        "kappa_ci": cis[None],
        "kappa_linear_ci": cis["linear"],
        "kappa_quadratic_ci": cis["quadratic"],
        "undefined_reason": unweighted["undefined_reason"],
        "confusion": unweighted["confusion"],
    }
    chosen = statistic if ordered else "unweighted"
    key = {"unweighted": None, "linear": "linear", "quadratic": "quadratic"}[chosen]
    kappa, ci = estimates[key]["kappa"], cis[key]
    entry["statistic"] = chosen
    entry["verdict"] = verdict(kappa, ci, bar)
    entry["more_labels"] = labels_to_decide(kappa, ci, pair.n, bar)
    entry["advice"] = advice(entry["verdict"], more=entry["more_labels"], n=pair.n, min_labels=0)
    if not ordered:
        entry["weighted_undefined_reason"] = _UNORDERED
    return entry


def agreement_report(
    rows: Any,
    *,
    labels: Sequence | None = None,
    alpha: float = 0.05,
    trusted: float = TRUSTED,
    statistic: str = DEFAULT_STATISTIC,
) -> dict:
    """The JSON-able agreement report of long ratings (what ``python -m calibration agree`` prints).

    ``{"n_items", "raters", "pairs": [{"raters", "n", "observed_agreement", "kappa", "kappa_linear",
    "kappa_quadratic", "kappa_ci", "verdict", ...}], "fleiss_kappa", "krippendorff_alpha": {"nominal",
    "ordinal", "interval"}, ...}``: plain floats, None where undefined (with ``*_undefined_reason``
    beside it). ``kappa_ci``, ``kappa_linear_ci`` and ``kappa_quadratic_ci`` are the (1 - ``alpha``)
    score intervals of :mod:`calibration.kappa_interval` (deterministic; None when kappa is undefined
    or fewer than 2 items were rated by both). ``verdict`` reads ``statistic``'s kappa (the
    unweighted one by default) and its interval against the bar ``trusted``: trusted, undecided, not
    trusted (:mod:`calibration.verdict`).
    """
    check_alpha(alpha)
    table = LongTable(rows, labels)
    pairs = [
        _report_pair(first, second, pair, table.ordered, alpha, trusted, statistic)
        for first, second, pair in _pairs(table)
    ]
    fleiss_result = _fleiss_or_reason(table)
    alphas = _krippendorff_all(table)
    return {
        "n_items": len(table.items),
        "raters": list(table.raters),
        "pairs": pairs,
        "fleiss_kappa": fleiss_result["kappa"],
        "krippendorff_alpha": {level: (r["alpha"] if r else None) for level, r in alphas.items()},
        "labels": list(table.scale),
        "n_ratings": len(table.cell),
        "n_missing": table.n_missing,
        "fleiss_undefined_reason": fleiss_result["undefined_reason"],
        "krippendorff_undefined_reason": {
            level: (
                r["undefined_reason"] if r else "needs numeric labels" if level == "interval" else _UNORDERED
            )
            for level, r in alphas.items()
        },
        "interval": {"method": INTERVAL_METHOD, "alpha": alpha},
        "verdict_thresholds": {"trusted": trusted},
        "statistic": statistic,
    }
