"""Agreement between raters: Cohen's kappa (weighted), its score interval, Fleiss' kappa, Krippendorff's alpha.

Pure module: plain data in, plain data out. The statistics live in three modules, lowest first, each
with the formulas it implements in its docstring:

- :mod:`calibration.stats.kappa`: the ratings (missing values, the scale rule :func:`grade_range`, their
  encoding), Cohen's kappa unweighted, linear and quadratic (:func:`cohen`, :func:`cohen_all`,
  :func:`binarised`), the errors :class:`InvalidRatings` and :class:`UnequalRaters`;
- :mod:`calibration.stats.kappa_interval`: the score interval of kappa that every face prints
  (:func:`kappa_ci`, :class:`KappaCI`, :func:`score_interval`): it does not collapse to a point at
  perfect agreement, and covered the true kappa in 94-97% of samples at n = 20-300 (docs/agreement.md);
- :mod:`calibration.stats.bootstrap`: the percentile bootstrap of kappa (:func:`bootstrap_ci`,
  :class:`BootstrapCI`, :func:`bootstrap_kappas`, :func:`resample_indices`), kept for comparison and
  for the estimates that resample queries; it is not kappa's interval (it covered a true kappa of
  0.95 in half the samples of 20 items);
- :mod:`calibration.stats.multirater`: long ratings (item, rater, label), Fleiss' kappa (:func:`fleiss`),
  Krippendorff's alpha (:func:`krippendorff_alpha`).

This module holds the report of long ratings (:func:`from_long`, :func:`agreement_report`: what
``python -m calibration agree`` prints) and re-exports the public names of the three, with
:func:`verdict` and :data:`TRUSTED` of :mod:`calibration.stats.verdict`: ``from
calibration.stats.agreement import X`` serves the rest of the product. References, how the figures were
checked, and timings: docs/agreement.md.

The report, per pair of raters over the items both rated: Cohen's kappa unweighted, linear and
quadratic (weighted only when the labels have an order: numbers, or ``labels=``), each with its
score interval, and the verdict on the unweighted kappa (or the statistic chosen); over all raters, Fleiss' kappa (when every item has the same number
of ratings) and Krippendorff's alpha (nominal; ordinal and interval when the labels allow). An
undefined figure is None with its reason, never 0.

The verdict (:mod:`calibration.stats.verdict`): trusted when the interval's lower end reaches the bar
(0.6 by default), not trusted when its upper end is below it, else undecided. Each pair's interval and
verdict come from :func:`calibration.stats.judged.judged_kappa`, as the review's do: clustered by query
when the ratings carry one (fewer than ``min_queries`` queries: ``uncalibrated``, with the reason), and
the design stated (issue #39).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from itertools import combinations
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from calibration.stats.bootstrap import BootstrapCI, bootstrap_ci, bootstrap_kappas, resample_indices
from calibration.stats.kappa import MAX_GRADE_RANGE as MAX_GRADE_RANGE  # re-exported
from calibration.stats.kappa import (
    WEIGHTINGS,
    InvalidRatings,
    RaterPair,
    UnequalRaters,
    Weights,
    binarised,
    check_labels,
    cohen,
    cohen_all,
    cohen_of_pair,
    cohen_of_pairs_weighted,
    is_missing,
)
from calibration.stats.kappa import grade_range as grade_range  # re-exported: the scale rule of every face
from calibration.stats.kappa_interval import METHOD as INTERVAL_METHOD
from calibration.stats.kappa_interval import (
    KappaCI,
    check_alpha,
    kappa_ci,
    kappa_cis_of_pairs,
    score_interval,
)
from calibration.stats.kappa_sequence import sequence_of_pair
from calibration.stats.multirater import (
    LEVELS,
    LongTable,
    alpha_of_table,
    fleiss,
    fleiss_of_table,
    krippendorff_alpha,
)
from calibration.stats.multirater import Level as Level  # re-exported
from calibration.stats.verdict import (  # re-exported: agreement's verdict
    DEFAULT_STATISTIC,
    MIN_QUERIES,
    TRUSTED,
    advice,
    verdict,
)

if TYPE_CHECKING:
    from numpy.typing import NDArray

    from calibration.results import AgreementPair, AgreementReport

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


MAX_PAIRS = 200  # pairs of raters the report lists, each with its kappas and intervals (~6 ms a pair)
# raters x items (and raters x raters) up to which the pairs' shared items are one matrix product
# (8 bytes a cell: 32 MB at most)
_DENSE_CELLS = 4_000_000


def pairs_note(listed: int, overlapping: int, possible: int) -> str:
    """The line that says the pairwise table was cut short, and which pairs it kept."""
    return (
        f"{overlapping:,} of the {possible:,} pairs of raters rated items in common; the {listed:,} with the "
        f"most items in common are listed (then in rater order); Fleiss' kappa and Krippendorff's alpha use "
        "every rating"
    )


def _by_rater_then_item(
    rater_of: NDArray[np.int64], item_of: NDArray[np.int64], n_items: int
) -> NDArray[np.int64]:
    """The rows in (rater, item) order: ``np.lexsort((item_of, rater_of))``; for a small table each
    row placed at its cell and read back in cell order (one rating a cell: the same order, no sort)."""
    n_raters = int(rater_of.max()) + 1 if len(rater_of) else 0
    if n_raters * n_items > _DENSE_CELLS:
        return np.lexsort((item_of, rater_of))
    slot = np.full(n_raters * n_items, -1, dtype=np.int64)
    slot[rater_of * n_items + item_of] = np.arange(len(rater_of))
    return slot[slot >= 0]


class RaterPairs:
    """The pairs of raters the report lists: every pair, in rater order, as long as there are at
    most ``max_pairs``; else the ``max_pairs`` pairs with the most items rated by both (then in
    rater order), with :attr:`note` saying so.

    Cost: memory linear in the ratings (:meth:`_most_shared`); time linear in the ratings plus
    what the raters' overlaps cost: finding the overlapping pairs takes sum over items of (raters
    of the item)^2 / 2 steps, done in numpy; then each listed pair costs the items its two raters
    share."""

    def __init__(self, table: LongTable, max_pairs: int = MAX_PAIRS) -> None:
        if max_pairs < 1:
            raise InvalidRatings(f"max_pairs {max_pairs}; expected at least 1")
        self.table = table
        n_raters = len(table.raters)
        self.possible = n_raters * (n_raters - 1) // 2
        self.scale = check_labels(table.scale) if table.scale else []
        # each rater's ratings (rows of the table, in item order): the items, their positions on the
        # scale and the rows' places in the labelling order; a pair's items come out in item order
        by_rater = _by_rater_then_item(table.rater_of, table.item_of, len(table.items))
        self._items = table.item_of[by_rater]
        self._codes = table.label_of[by_rater]
        self._rows = by_rater
        self._start = np.searchsorted(table.rater_of[by_rater], np.arange(n_raters + 1))
        self.note: str | None = None
        if self.possible <= max_pairs:
            self.chosen: list[tuple[int, int]] = list(combinations(range(n_raters), 2))
            self.overlapping = None
            return
        codes, self.overlapping = self._most_shared(n_raters, max_pairs)
        self.chosen = [(int(code // n_raters), int(code % n_raters)) for code in codes]
        self.note = pairs_note(len(self.chosen), self.overlapping, self.possible)

    def _of(self, rater: int) -> slice:
        return slice(int(self._start[rater]), int(self._start[rater + 1]))

    def _most_shared(self, n_raters: int, max_pairs: int) -> tuple[NDArray[np.int64], int]:
        """(the pair codes, first * n_raters + second, of the ``max_pairs`` pairs with the most
        items in common, then in rater order; how many pairs share any item).

        One rater at a time: the raters after it who share its items, counted with one
        ``bincount``, and only those above the current ``max_pairs``-th count kept. Memory is
        linear in the ratings plus one count per rater (a table of every overlapping pair was
        2.25 GB for 6,000 raters x 3 items); time is the sum over items of (its raters)^2 / 2
        numpy steps, as before."""
        table = self.table
        if n_raters * max(n_raters, len(table.items)) <= _DENSE_CELLS:
            return self._most_shared_dense(n_raters, max_pairs)
        by_item = np.argsort(table.item_of, kind="stable")
        raters_by_item = table.rater_of[by_item]  # each item's raters, a run per item
        size = np.bincount(table.item_of, minlength=len(table.items))
        first = np.concatenate([[0], np.cumsum(size)[:-1]])
        best_codes = np.zeros(0, dtype=np.int64)
        best_shared = np.zeros(0, dtype=np.int64)
        overlapping = 0
        for a in range(n_raters):
            mine = self._items[self._of(a)]
            runs = size[mine]
            if not runs.sum():
                continue
            # the raters of every item of a's, their runs laid end to end
            ends = np.cumsum(runs)
            gathered = raters_by_item[np.repeat(first[mine] - ends + runs, runs) + np.arange(ends[-1])]
            later = gathered[gathered > a]
            if not len(later):
                continue
            counts = np.bincount(later, minlength=n_raters)
            b = np.flatnonzero(counts)
            overlapping += len(b)
            shared = counts[b]
            if len(best_shared) == max_pairs:  # full: a later pair must share more (its code is larger)
                above = shared > best_shared[-1]
                b, shared = b[above], shared[above]
            if not len(b):
                continue
            codes = np.concatenate([best_codes, a * n_raters + b])
            shared = np.concatenate([best_shared, shared])
            keep = np.lexsort((codes, -shared))[:max_pairs]  # most items in common, then rater order
            best_codes, best_shared = codes[keep], shared[keep]
        return best_codes, overlapping

    def _most_shared_dense(self, n_raters: int, max_pairs: int) -> tuple[NDArray[np.int64], int]:
        """:meth:`_most_shared` of a small raters x items table: the items every two raters share
        as one product of the rated-or-not matrix with itself (counts below 2^53: exact in
        float64), the same pairs in the same order as the rater-by-rater loop."""
        table = self.table
        rated = np.zeros((n_raters, len(table.items)))
        rated[table.rater_of, table.item_of] = 1.0
        shared_all = (rated @ rated.T).astype(np.int64)
        first, second = np.triu_indices(n_raters, 1)
        shared = shared_all[first, second]
        some = np.flatnonzero(shared)
        codes = first[some].astype(np.int64) * n_raters + second[some]
        shared = shared[some]
        keep = np.lexsort((codes, -shared))[:max_pairs]  # most items in common, then rater order
        return codes[keep], len(some)

    def __len__(self) -> int:
        return len(self.chosen)

    def __iter__(self) -> Iterator[tuple[Any, Any, RaterPair]]:
        return self.pairs()

    def pairs(self, labelling_order: bool = False) -> Iterator[tuple[Any, Any, RaterPair]]:
        """The listed pairs, each over the items both rated: in the table's item order, or with
        ``labelling_order`` in the order the rows made them a pair (the later of the two rows)."""
        for first, second, pair, _items in self.pairs_with_items(labelling_order):
            yield first, second, pair

    def pairs_with_items(
        self, labelling_order: bool = False, *, names: bool = True
    ) -> Iterator[tuple[Any, Any, RaterPair, list[Any]]]:
        """:meth:`pairs`, each with the items of the pair (as the table names them), in the pair's
        order; ``names`` False: an empty list instead (a report without queries never reads them)."""
        raters, items = self.table.raters, self.table.items
        # each item's place among the first rater's items, -1 where it has none: set and reset a pair
        # at a time, so a pair costs the items of its two raters (np.intersect1d sorted them again)
        place = np.full(len(items), -1, dtype=np.int64)
        for a, b in self.chosen:
            of_a, of_b = self._of(a), self._of(b)
            items_a, items_b = self._items[of_a], self._items[of_b]
            place[items_a] = np.arange(len(items_a))
            found = place[items_b]
            place[items_a] = -1
            in_b = np.flatnonzero(found >= 0)  # each rater's items are sorted and distinct
            in_a, both = found[in_b], items_b[in_b]
            if labelling_order:
                made = np.maximum(self._rows[of_a][in_a], self._rows[of_b][in_b])
                order = np.argsort(made, kind="stable")
                both, in_a, in_b = both[order], in_a[order], in_b[order]
            if len(in_b) == len(items_a) == len(items_b) and not labelling_order:
                # the same items (each rater's sorted and distinct): the codes as they are, no copy
                codes_a, codes_b = self._codes[of_a], self._codes[of_b]
            else:
                codes_a, codes_b = self._codes[of_a][in_a], self._codes[of_b][in_b]
            codes_a, codes_b = codes_a.astype(np.int64, copy=False), codes_b.astype(np.int64, copy=False)
            pair = RaterPair.of_codes(codes_a, codes_b, self.scale)
            yield raters[a], raters[b], pair, [items[i] for i in both.tolist()] if names else []


_UNORDERED = "labels are text without an order: weighted kappa needs numeric labels or labels= (the scale)"


def _krippendorff_all(table: LongTable) -> dict[Level, dict[str, Any] | None]:
    out: dict[Level, dict[str, Any] | None] = {}
    for level in LEVELS:
        if (level == "interval" and not table.numeric) or (level == "ordinal" and not table.ordered):
            out[level] = None
            continue
        out[level] = alpha_of_table(table, level)
    return out


def _fleiss_or_reason(table: LongTable) -> dict[str, Any]:
    try:
        return fleiss_of_table(table)
    except UnequalRaters as unequal:
        return {"kappa": None, "undefined_reason": str(unequal)}


def from_long(
    rows: Any, *, labels: Sequence[Any] | None = None, max_pairs: int = MAX_PAIRS
) -> dict[str, Any]:
    """Every agreement figure of long ratings ((item, rater, label) rows), in full detail.

    Pairwise Cohen's kappa (unweighted, linear, quadratic) for every pair of raters over the items both
    rated, Fleiss' kappa when every item has the same number of ratings, Krippendorff's alpha (nominal;
    ordinal and interval None for text labels; ordinal with text labels given ``labels=``). Labels that
    are all numbers or numeric strings ("0".."3" from a CSV) are read as numbers. The scale: ``labels``,
    else for whole-number grades every integer from the lowest to the highest grade seen, else the
    sorted distinct labels. Duplicate (item, rater) rows are refused (:class:`InvalidRatings`).
    More than ``max_pairs`` pairs of raters: the ``max_pairs`` with the most items in common are
    listed, ``pairs_note`` says so (:class:`RaterPairs`).
    """
    table = LongTable(rows, labels)
    chosen = RaterPairs(table, max_pairs)
    pairs = []
    for first, second, pair in chosen:
        entry: dict[str, Any] = {"raters": [first, second], "unweighted": cohen_of_pair(pair, None)}
        for weights in ("linear", "quadratic"):
            entry[weights] = cohen_of_pair(pair, weights) if table.ordered else None
        pairs.append(entry)
    return {
        "n_items": len(table.items),
        "n_ratings": table.n_ratings,
        "n_missing": table.n_missing,
        "raters": list(table.raters),
        "labels": list(table.scale),
        "numeric": table.numeric,
        "pairs": pairs,
        "pairs_possible": chosen.possible,
        "pairs_note": chosen.note,
        "fleiss": _fleiss_or_reason(table),
        "krippendorff": _krippendorff_all(table),
    }


def _pair_queries(items: list[Any], queries: Mapping[Any, Any] | None) -> list[Any] | None:
    """The query of each item of a pair (None when none of them carries one: the items are counted as
    independent draws); an item without one among items with one is a query of its own."""
    if queries is None:
        return None
    found = [queries.get(item) for item in items]
    if all(is_missing(q) or q == "" for q in found):
        return None
    return [f"(item {item})" if is_missing(q) or q == "" else q for q, item in zip(found, items)]


def plain_design(design: Mapping[str, Any]) -> dict[str, Any]:
    """A verdict's design as plain JSON values (the items per query a list, not a tuple)."""
    return {key: list(value) if isinstance(value, tuple) else value for key, value in design.items()}


SEQUENTIAL_CI = (
    "kappa_ci is the fixed-n interval of all n items read once (by query when the labels carry one), "
    "for comparison; the verdict is the confidence sequence's first decision over the file order"
)


def _report_pair(
    first: Any,
    second: Any,
    pair: RaterPair,
    ordered: bool,
    alpha: float,
    bar: float,
    statistic: str,
    sequential: bool = False,
    *,
    queries: Sequence[Any] | None = None,
    min_queries: int = MIN_QUERIES,
    people: int | None = None,
    items: Mapping[Weights, KappaCI] | None = None,
) -> AgreementPair:
    """One pair of raters in the report: kappas, each with its interval and the verdict of
    ``statistic``'s kappa at ``bar``, from :func:`calibration.stats.judged.judged_kappa` (issue #39):
    clustered by ``queries`` (the query of each item of the pair; None: the item-level score interval
    of :func:`calibration.stats.kappa_interval.kappa_ci`), no verdict below ``min_queries`` queries,
    and the design stated (``people``: the raters behind it, None when unknown). A file's draw is
    unknown: the reason says the verdict assumes a random one."""
    from calibration.stats.judged import judged_kappa  # start-up: scipy.special, only for a report

    weightings = WEIGHTINGS if ordered else (None,)
    estimates = {w: cohen_of_pair(pair, w) for w in weightings}
    # the grades themselves only for the interval by query; else the pair, already encoded
    a = [pair.scale[c] for c in pair.a.tolist()] if queries is not None else []
    b = [pair.scale[c] for c in pair.b.tolist()] if queries is not None else []
    judged = {
        w: judged_kappa(
            a,
            b,
            queries,
            labels=pair.scale,
            weights=w,
            bar=bar,
            alpha=alpha,
            min_queries=min_queries,
            raters=people,
            pair=pair,
            item=items[w] if items is not None else None,
        )
        for w in weightings
    }
    cis: dict[Weights, list[float] | None] = dict.fromkeys(WEIGHTINGS)
    for w in weightings:
        cis[w] = judged[w]["ci"]  # None when undefined, or too few queries for a verdict
    unweighted = estimates[None]
    entry: AgreementPair = {
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
    weights_of: dict[str, Weights] = {"unweighted": None, "linear": "linear", "quadratic": "quadratic"}
    key = weights_of[chosen]
    main = judged[key]
    entry["statistic"] = chosen
    entry["verdict"] = main["verdict"]
    entry["more_labels"] = main["more_labels"]
    entry["advice"] = main["advice"]
    entry["reason"] = main["reason"]
    entry["method"] = main["method"]
    entry["item_level_ci"] = main["item_level_ci"]
    entry["design"] = plain_design(main["design"])
    entry["per_query"] = cast(dict[str, Any] | None, main["per_query"])
    entry["population"] = main["population"]
    entry["read"] = main["read"]
    if sequential and main["kappa"] is not None:  # the items in labelling order: the sequence's verdict
        seq = sequence_of_pair(pair, bar=bar, weights=key, alpha=alpha)
        seq["kappa_ci"] = SEQUENTIAL_CI
        entry["sequential"] = seq
        entry["verdict"], entry["more_labels"] = seq["verdict"], seq["more_labels"]
        entry["advice"] = advice(entry["verdict"], more=entry["more_labels"], n=pair.n, min_labels=0)
        entry["reason"] = (
            "the verdict is the confidence sequence's first decision, the file order taken as the "
            "labelling order and each item counted as one draw"
        )
        entry["read"] = (
            "as labelled, in the file order (the verdict: the confidence sequence's; the 95% CI: once)"
        )
    if not ordered:
        entry["weighted_undefined_reason"] = _UNORDERED
    return entry


def agreement_report(
    rows: Any,
    *,
    labels: Sequence[Any] | None = None,
    alpha: float = 0.05,
    trusted: float,
    statistic: str = DEFAULT_STATISTIC,
    max_pairs: int = MAX_PAIRS,
    sequential: bool = False,
    queries: Mapping[Any, Any] | None = None,
    min_queries: int = MIN_QUERIES,
    people: int | None = None,
) -> AgreementReport:
    """The JSON-able agreement report of long ratings (what ``python -m calibration agree`` prints).

    ``{"n_items", "raters", "pairs": [{"raters", "n", "observed_agreement", "kappa", "kappa_linear",
    "kappa_quadratic", "kappa_ci", "verdict", ...}], "fleiss_kappa", "krippendorff_alpha": {"nominal",
    "ordinal", "interval"}, ...}``: plain floats, None where undefined (with ``*_undefined_reason``
    beside it). ``kappa_ci``, ``kappa_linear_ci`` and ``kappa_quadratic_ci`` are the (1 - ``alpha``)
    score intervals of :mod:`calibration.stats.kappa_interval` (deterministic; None when kappa is undefined
    or fewer than 2 items were rated by both). ``verdict`` reads ``statistic``'s kappa (the
    unweighted one by default) and its interval against the bar ``trusted``: trusted, undecided, not
    trusted (:mod:`calibration.stats.verdict`). At most ``max_pairs`` pairs are listed (:class:`RaterPairs`:
    every pair while there are no more, else those with the most items in common); ``pairs_possible``
    counts every pair of raters and ``pairs_note`` says when the list was cut (None when it was not).
    ``sequential``: the rows' order is the labelling order; each pair with a kappa gets ``sequential``, the
    confidence sequence read after every label (:func:`calibration.stats.kappa_sequence.sequence_of_pair`,
    the items in the order the rows made them a pair), and its verdict and ``more_labels`` are the pair's
    (``kappa_ci`` stays the fixed-n interval, and ``sequential["kappa_ci"]`` says so).

    Each pair's verdict and intervals are :func:`calibration.stats.judged.judged_kappa`'s (issue #39):
    ``queries`` ({item: query}) clusters the interval by the query of each item (an item the mapping
    leaves out, among items that have one, is a query of its own; a pair none of whose items has one
    keeps the item-level interval), fewer than ``min_queries`` queries give ``uncalibrated`` with the
    reason; each pair carries ``design``, ``per_query``, ``population``, ``method``, ``item_level_ci``
    (the item-level score interval, for comparison) and ``reason`` (why no verdict, or what it
    assumes: a file's items drawn at random). ``people``: the raters the design names (None: unknown).
    """
    check_alpha(alpha)
    table = LongTable(rows, labels)
    chosen = RaterPairs(table, max_pairs)
    listed = list(chosen.pairs_with_items(labelling_order=sequential, names=queries is not None))
    # every pair's item-level intervals at once, a stack per weighting (kappa_cis_of_pairs)
    weightings = WEIGHTINGS if table.ordered else (None,)
    encoded = [pair for _, _, pair, _ in listed]
    cohen_of_pairs_weighted(encoded, weightings)  # the confusion stack counted once, cached on each pair
    intervals = {w: kappa_cis_of_pairs(encoded, w, alpha) for w in weightings}
    pairs = [
        _report_pair(
            first,
            second,
            pair,
            table.ordered,
            alpha,
            trusted,
            statistic,
            sequential,
            queries=_pair_queries(items, queries),
            min_queries=min_queries,
            people=people,
            items={w: intervals[w][i] for w in weightings},
        )
        for i, (first, second, pair, items) in enumerate(listed)
    ]
    fleiss_result = _fleiss_or_reason(table)
    alphas = _krippendorff_all(table)
    return {
        "n_items": len(table.items),
        "raters": list(table.raters),
        "pairs": pairs,
        "pairs_possible": chosen.possible,
        "pairs_note": chosen.note,
        "fleiss_kappa": fleiss_result["kappa"],
        "krippendorff_alpha": {level: (r["alpha"] if r else None) for level, r in alphas.items()},
        "labels": list(table.scale),
        "n_ratings": table.n_ratings,
        "n_missing": table.n_missing,
        "fleiss_undefined_reason": fleiss_result["undefined_reason"],
        "fleiss_ratings_per_item": fleiss_result.get("n_raters"),
        "krippendorff_undefined_reason": {
            level: (
                r["undefined_reason"] if r else "needs numeric labels" if level == "interval" else _UNORDERED
            )
            for level, r in alphas.items()
        },
        "krippendorff_items": table.pairable_items(),
        "interval": {"method": INTERVAL_METHOD, "alpha": alpha},
        "verdict_thresholds": {"trusted": trusted},
        "statistic": statistic,
    }
