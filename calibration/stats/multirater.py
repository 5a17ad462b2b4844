"""Agreement among many raters: the long form of ratings, Fleiss' kappa, Krippendorff's alpha.

Pure module: plain data in, plain data out (numpy, pandas, the ``krippendorff`` package; the ratings
read by :mod:`calibration.stats.kappa`). :mod:`calibration.stats.agreement` re-exports its public names.
References and how the figures were checked: docs/agreement.md.

Definitions:

- Fleiss' kappa (Fleiss 1971, "Measuring nominal scale agreement among many raters"): N items, each rated
  by the same m >= 2 raters, n_ij raters put item i in category j;
  P_i = (sum_j n_ij^2 - m) / (m (m - 1)), P = mean_i P_i, p_j = sum_i n_ij / (N m), P_e = sum_j p_j^2,
  kappa = (P - P_e) / (1 - P_e); undefined when P_e = 1.
- Krippendorff's alpha (Krippendorff 2011, "Computing Krippendorff's alpha-reliability"):
  alpha = 1 - D_o / D_e over the coincidence matrix of pairable values, with the nominal, ordinal or
  interval difference function; computed by the ``krippendorff`` package (Castro,
  github.com/pln-fing-udelar/fast-krippendorff). Undefined when no item has two ratings or D_e = 0.

Long ratings: (item, rater, label) rows (tuples, mappings or a DataFrame with those columns); a missing
label (None, NaN, NA, or "" as in a blank CSV cell) is not a rating; one label per (item, rater);
labels that are all numbers or numeric strings are read as numbers. The scale: ``labels=``, else
:func:`calibration.stats.kappa.grade_range` of numeric labels, else the sorted distinct labels.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

import krippendorff as _krippendorff
import numpy as np

from calibration.stats.kappa import (
    InvalidRatings,
    UnequalRaters,
    check_labels,
    grade_range,
    is_frame,
    is_missing,
    is_number,
    plain_value,
    scale_list,
)

if TYPE_CHECKING:
    from numpy.typing import NDArray

Level = Literal["nominal", "ordinal", "interval"]
_COUNTED_CELLS = 4_000_000  # items x raters up to which a table's cells are counted, not sorted
LEVELS: tuple[Level, ...] = ("nominal", "ordinal", "interval")


# --------------------------------------------------------------------------- long form


def _long_rows(rows: Any) -> list[tuple[Any, Any, Any]]:
    """(item, rater, label) rows from tuples/lists, mappings with those keys, or a DataFrame.

    A missing label (None, NaN, NA, or "" as in a blank CSV cell) is kept as None.
    """
    if is_frame(rows):
        absent = [c for c in ("item", "rater", "label") if c not in rows.columns]
        if absent:
            raise InvalidRatings(f"long ratings: the table has no column {', '.join(map(repr, absent))}")
        rows = zip(rows["item"].tolist(), rows["rater"].tolist(), rows["label"].tolist())
    out = []
    for number, row in enumerate(rows):
        # a CSV reader's row of strings (a label may be None): nothing to convert or call missing
        if type(row) is tuple and len(row) == 3:
            item, rater, label = row
        elif type(row) is dict:
            item, rater, label = row.get("item"), row.get("rater"), row.get("label")
        else:
            item = rater = label = None
        if type(item) is str and type(rater) is str and (label is None or type(label) is str):
            out.append((item, rater, label if label and label.strip() else None))
            continue
        if isinstance(row, Mapping):
            try:
                item, rater, label = row["item"], row["rater"], row["label"]
            except KeyError as missing:
                raise InvalidRatings(f"long ratings, row {number}: no key {missing}") from None
        elif isinstance(row, Sequence | np.ndarray) and not isinstance(row, str | bytes) and len(row) == 3:
            item, rater, label = row
        else:
            raise InvalidRatings(f"long ratings, row {number}: expected (item, rater, label), got {row!r}")
        item, rater, label = plain_value(item), plain_value(rater), plain_value(label)
        if is_missing(item) or is_missing(rater):
            raise InvalidRatings(f"long ratings, row {number}: item and rater are required, got {row!r}")
        if is_missing(label) or (isinstance(label, str) and not label.strip()):
            label = None
        out.append((item, rater, label))
    return out


def _numeric_labels(labels: list[Any]) -> list[Any] | None:
    """The labels as numbers if every one is a number or a numeric string ("2", "0.5"), else None."""
    converted: list[Any] = []
    for label in labels:
        if is_number(label):
            converted.append(label)
            continue
        if not isinstance(label, str):
            return None
        text = label.strip()
        try:
            converted.append(int(text))
        except ValueError:
            try:
                value = float(text)
            except ValueError:
                return None
            if not math.isfinite(value):
                return None
            converted.append(value)
    return converted


class EncodedRows:
    """Long rows of text as a CSV reader hands them over, each column already encoded: row r is
    (``items[item[r]]``, ``raters[rater[r]]``, ``labels[label[r]]``), ``label[r]`` -1 where the
    cell is empty (no label). The same rows as the tuples, read without a Python object a row."""

    def __init__(
        self,
        items: list[str],
        item: NDArray[np.int64],
        raters: list[str],
        rater: NDArray[np.int64],
        labels: list[str],
        label: NDArray[np.int64],
    ) -> None:
        self.items, self.raters, self.labels = items, raters, labels
        self.item, self.rater, self.label = item, rater, label

    def __len__(self) -> int:
        return len(self.item)

    def __iter__(self) -> Iterator[tuple[str, str, str | None]]:
        labels = [*self.labels, None]  # -1: no label
        for i, r, g in zip(self.item.tolist(), self.rater.tolist(), self.label.tolist()):
            yield self.items[i], self.raters[r], labels[g]


class LongTable:
    """Long rows as the ratings of a raters x items table, with the scale: ``items`` (in first-seen
    order), ``raters`` (numbers first, then by text), ``scale``, ``numeric`` (labels read as
    numbers), ``ordered`` (numeric or ``labels=`` given), ``n_rows`` and ``n_missing`` (rows without
    a label). The ratings, one per (item, rater), in the rows' order (the labelling order):
    ``item_of``, ``rater_of`` and ``label_of`` (positions in ``items``, ``raters`` and ``scale``),
    ``numbers`` (each rating as a float, for numeric labels) and ``n_ratings``.

    Rows of text already encoded (:class:`EncodedRows`, no ``labels=``) are read column by column
    in numpy, to the same table as their tuples give."""

    def __init__(self, rows: Any, labels: Sequence[Any] | None = None) -> None:
        self.scale_given = labels is not None
        if isinstance(rows, EncodedRows) and labels is None and (rows.label >= 0).any():
            self._read_encoded(rows)
        else:
            self._read_rows(list(rows) if isinstance(rows, EncodedRows) else rows, labels)
        self.ordered = self.numeric or self.scale_given
        self.n_ratings = len(self.item_of)
        self._value_counts: tuple[NDArray[np.int_], NDArray[np.float64], list[Any]] | None = None

    def value_counts(self) -> tuple[NDArray[np.int_], NDArray[np.float64], list[Any]]:
        """(items x values counts, the sorted values, the text scale they code (empty for numbers)):
        what Krippendorff's alpha reads at every level, counted once (the table is not changed after
        it is read)."""
        if self._value_counts is None:
            if self.numbers is not None:
                values = self.numbers
                order: list[Any] = []
            else:
                order = self.scale if self.ordered else sorted(self.scale, key=str)
                position = {v: i for i, v in enumerate(order)}
                values = np.array([float(position[v]) for v in self.scale], dtype=float)[self.label_of]
            domain = distinct(values)
            cells = self.item_of * len(domain) + np.searchsorted(domain, values)
            counts = np.bincount(cells, minlength=len(self.items) * len(domain)).astype(np.int_, copy=False)
            self._value_counts = counts.reshape(len(self.items), len(domain)), domain, order
        return self._value_counts

    def pairable_items(self) -> int:
        """The items rated two times or more: what Krippendorff's alpha reads (its pairable units)."""
        return int(np.count_nonzero(np.bincount(self.item_of, minlength=len(self.items)) >= 2))

    def _read_rows(self, rows: Any, labels: Sequence[Any] | None) -> None:
        parsed = _long_rows(rows)
        self.n_rows = len(parsed)
        self.n_missing = sum(1 for _item, _rater, label in parsed if label is None)
        rated = [(item, rater, label) for item, rater, label in parsed if label is not None]
        values = [label for _item, _rater, label in rated]
        numeric = _numeric_labels(values)
        self.numeric = numeric is not None
        if numeric is not None:
            rated = [(item, rater, value) for (item, rater, _), value in zip(rated, numeric)]
        self.items: list[Any] = list(dict.fromkeys(item for item, _rater, _label in rated))
        self.raters: list[Any] = sorted(
            dict.fromkeys(rater for _item, rater, _label in rated), key=_rater_key
        )
        cell: dict[tuple[Any, Any], Any] = {}  # in the rows' order: the labelling order
        for item, rater, label in rated:
            if (item, rater) in cell:
                raise _rated_twice(item, rater)
            cell[(item, rater)] = label
        self.scale: list[Any]
        if labels is not None:
            scale = check_labels(labels)
            if self.numeric and not all(is_number(v) for v in scale):
                scale_numbers = _numeric_labels(scale)
                scale = scale_numbers if scale_numbers is not None else scale
            known = set(scale)
            for item, rater, label in rated:
                if label not in known:
                    raise InvalidRatings(
                        f"item {item!r}, rater {rater!r}: label {label!r} is not on the scale {scale!r}"
                    )
            self.scale = scale
        elif numeric is not None and values and (whole := grade_range(numeric)) is not None:
            self.scale = whole
        else:
            try:
                self.scale = sorted(set(numeric if numeric is not None else values))
            except TypeError:
                raise InvalidRatings(
                    "long ratings: labels mix types that have no order; pass labels="
                ) from None
        item_index = {item: i for i, item in enumerate(self.items)}
        rater_index = {rater: i for i, rater in enumerate(self.raters)}
        position = {label: i for i, label in enumerate(check_labels(self.scale) if self.scale else [])}
        count = len(cell)
        self.item_of = np.fromiter((item_index[i] for i, _r in cell), dtype=np.int64, count=count)
        self.rater_of = np.fromiter((rater_index[r] for _i, r in cell), dtype=np.int64, count=count)
        self.label_of = np.fromiter(
            (position[plain_value(v)] for v in cell.values()), dtype=np.int64, count=count
        )
        self.numbers = (
            np.fromiter((float(v) for v in cell.values()), dtype=float, count=count) if self.numeric else None
        )

    def _read_encoded(self, rows: EncodedRows) -> None:
        """:meth:`_read_rows` of the rows ``rows`` stands for (text, no ``labels=``, a label at
        least), a column at a time: each distinct label read once, in the order the rows first use it."""
        blank = np.array([not text.strip() for text in rows.labels] + [True], dtype=bool)
        rated = np.flatnonzero(~blank[rows.label])
        self.n_rows = len(rows.label)
        self.n_missing = self.n_rows - len(rated)
        item, rater, label = rows.item[rated], rows.rater[rated], rows.label[rated]
        used = _first_seen(label, len(rows.labels))
        numeric = _numeric_labels([rows.labels[code] for code in used.tolist()])
        self.numeric = numeric is not None
        values: list[Any] = numeric if numeric is not None else [rows.labels[code] for code in used.tolist()]
        whole = grade_range(values) if numeric is not None else None
        self.scale = whole if whole is not None else sorted(set(values))
        order = _first_seen(item, len(rows.items))
        self.items = [rows.items[code] for code in order.tolist()]
        self.item_of = _positions(order, len(rows.items))[item]
        present = np.flatnonzero(np.bincount(rater, minlength=len(rows.raters)))  # distinct(rater), no sort
        named = sorted({rows.raters[code] for code in present.tolist()}, key=_rater_key)
        index = {name: i for i, name in enumerate(named)}
        lookup = np.array([index.get(name, -1) for name in rows.raters], dtype=np.int64)
        self.raters = named
        self.rater_of = lookup[rater]
        key = self.item_of * len(named) + self.rater_of
        cells = len(self.items) * len(named)
        # a (item, rater) rated twice: counted when the table is small (no sort), found by the sort
        twice = np.bincount(key, minlength=cells).max() > 1 if cells <= _COUNTED_CELLS else True
        if twice:
            by_key = np.argsort(key, kind="stable")
            repeated = by_key[1:][key[by_key][1:] == key[by_key][:-1]]
            if len(repeated):
                first = int(repeated.min())
                raise _rated_twice(self.items[int(self.item_of[first])], named[int(self.rater_of[first])])
        position = {value: i for i, value in enumerate(self.scale)}
        scale_of = np.full(len(rows.labels), -1, dtype=np.int64)
        scale_of[used] = [position[value] for value in values]
        self.label_of = scale_of[label]
        self.numbers = None
        if numeric is not None:
            number_of = np.zeros(len(rows.labels), dtype=float)
            number_of[used] = [float(value) for value in numeric]
            self.numbers = number_of[label]


def distinct(values: NDArray[Any]) -> NDArray[Any]:
    """The sorted distinct values of a 1-D array without NaN: ``np.unique(values)`` by the sort it
    runs, without its question whether the array is masked, which imports numpy.ma (~40 ms of CPU
    at every `agree`'s start-up, #42)."""
    ordered = np.sort(values)
    if not len(ordered):
        return ordered
    return ordered[np.concatenate(([True], ordered[1:] != ordered[:-1]))]


def _first_seen(codes: NDArray[np.int64], size: int) -> NDArray[np.int64]:
    """The distinct codes (each below ``size``) in the order they first appear: each code's first
    row by one ``np.minimum.at`` (no sort of the rows: ``np.unique`` sorted them all)."""
    n = len(codes)
    first = np.full(size, n, dtype=np.int64)
    np.minimum.at(first, codes, np.arange(n, dtype=np.int64))
    present = np.flatnonzero(first < n)
    return present[np.argsort(first[present], kind="stable")]


def _positions(order: NDArray[np.int64], size: int) -> NDArray[np.int64]:
    """For each code below ``size``, its position in ``order`` (-1 when absent)."""
    out = np.full(size, -1, dtype=np.int64)
    out[order] = np.arange(len(order))
    return out


def _rated_twice(item: Any, rater: Any) -> InvalidRatings:
    return InvalidRatings(
        f"long ratings: rater {rater!r} rated item {item!r} more than once; "
        "keep one label per (item, rater) (the newest row counts)"
    )


def _rater_key(rater: Any) -> tuple[int, Any, str]:
    return (0, rater, "") if is_number(rater) else (1, 0, str(rater))


# --------------------------------------------------------------------------- Fleiss


def _looks_long(data: Any) -> bool:
    if is_frame(data):
        return {"item", "rater", "label"} <= set(data.columns)
    if isinstance(data, np.ndarray) or not data:
        return False
    return isinstance(data[0], tuple | Mapping)


def _as_form(data: Any, form: str | None, other: str) -> tuple[Any, str]:
    if form not in (None, "long", other):
        raise InvalidRatings(f"form must be None, 'long' or {other!r}, got {form!r}")
    if not (is_frame(data) or isinstance(data, np.ndarray | list)):
        data = list(data)
    return data, form or ("long" if _looks_long(data) else other)


def _fleiss_counts(
    counts: NDArray[np.int64], categories: list[Any], item_names: list[Any] | None = None
) -> dict[str, Any]:
    n_items = counts.shape[0]
    per_item = counts.sum(axis=1)
    if n_items and (per_item != per_item[0]).any():
        tally = dict(zip(*np.unique(per_item, return_counts=True)))
        odd = int(np.flatnonzero(per_item != np.bincount(per_item).argmax())[0])
        name = item_names[odd] if item_names is not None else odd
        raise UnequalRaters(
            "Fleiss' kappa needs the same number of ratings on every item; ratings per item: "
            + ", ".join(f"{int(k)} on {int(v)} item(s)" for k, v in tally.items())
            + f" (e.g. item {name!r} has {int(per_item[odd])}); Krippendorff's alpha allows missing ratings"
        )
    m = int(per_item[0]) if n_items else 0
    result: dict[str, Any] = {
        "kappa": None,
        "n_items": n_items,
        "n_raters": m,
        "categories": categories,
        "observed_agreement": None,
        "chance_agreement": None,
        "item_agreement": None,
        "category_proportions": None,
        "undefined_reason": None,
    }
    if n_items == 0:
        result["undefined_reason"] = "no items"
        return result
    if m < 2:
        result["undefined_reason"] = f"each item has {m} rating(s): agreement needs at least two"
        return result
    item_agreement = ((counts**2).sum(axis=1) - m) / (m * (m - 1))
    proportions = counts.sum(axis=0) / (n_items * m)
    observed, chance = float(item_agreement.mean()), float((proportions**2).sum())
    result.update(
        observed_agreement=observed,
        chance_agreement=chance,
        item_agreement=item_agreement.tolist(),
        category_proportions=proportions.tolist(),
    )
    used = np.flatnonzero(proportions)
    if len(used) == 1:
        result["undefined_reason"] = (
            f"every rating is {categories[used[0]]!r}: chance agreement is 1 and kappa is 0/0"
        )
        return result
    result["kappa"] = (observed - chance) / (1.0 - chance)
    return result


def fleiss_of_table(table: LongTable) -> dict[str, Any]:
    """:func:`fleiss`'s dict of long ratings already read; raises :class:`UnequalRaters` when items
    have different numbers of ratings."""
    k = len(table.scale)
    counts = np.bincount(table.item_of * k + table.label_of, minlength=len(table.items) * k)
    return _fleiss_counts(
        counts.reshape(len(table.items), k).astype(np.int64), list(table.scale), table.items
    )


def fleiss(table_or_ratings: Any, *, form: Literal["table", "long"] | None = None) -> dict[str, Any]:
    """Fleiss' kappa (Fleiss 1971) of N items each rated by the same number m >= 2 of raters.

    Input: an items x categories table of counts (numpy array, list of lists, DataFrame), or long
    ratings: (item, rater, label) tuples, mappings or a DataFrame with those columns (missing labels are
    dropped). ``form`` forces the reading ("table" or "long"); by default tuples/mappings are long.
    Raises :class:`UnequalRaters` when items have different numbers of ratings.

    P_i = (sum_j n_ij^2 - m) / (m (m - 1)); P = mean P_i; p_j = sum_i n_ij / (N m); P_e = sum p_j^2;
    kappa = (P - P_e) / (1 - P_e). Returns ``kappa`` (None with ``undefined_reason`` when P_e = 1 or
    m < 2), ``n_items``, ``n_raters`` (m), ``categories``, ``observed_agreement`` (P),
    ``chance_agreement`` (P_e), ``item_agreement`` (P_i), ``category_proportions`` (p_j).
    """
    data, reading = _as_form(table_or_ratings, form, "table")
    if reading == "long":
        return fleiss_of_table(LongTable(data))
    try:
        counts = np.asarray(data.to_numpy() if is_frame(data) else data, dtype=float)
    except (TypeError, ValueError):
        raise InvalidRatings("Fleiss table: expected an items x categories table of counts") from None
    if counts.size == 0:
        return _fleiss_counts(np.zeros((0, 0), dtype=np.int64), [])
    if counts.ndim != 2 or (counts.size and (np.isnan(counts).any() or (counts < 0).any())):
        raise InvalidRatings(
            f"Fleiss table: expected non-negative counts, items x categories; got shape {counts.shape}"
        )
    if (counts != np.round(counts)).any():
        raise InvalidRatings("Fleiss table: counts must be whole numbers")
    names = list(data.index) if is_frame(data) else None
    categories = list(data.columns) if is_frame(data) else list(range(counts.shape[1]))
    return _fleiss_counts(counts.astype(np.int64), [plain_value(c) for c in categories], names)


# --------------------------------------------------------------------------- Krippendorff


def alpha_of_table(table: LongTable, level: Level) -> dict[str, Any]:
    """:func:`krippendorff_alpha`'s dict of long ratings already read, in time and memory linear in
    the ratings (plus items x distinct values): the per-item value counts go to the ``krippendorff``
    package as they are, where :func:`alpha_of_matrix` builds a raters x items matrix first. The
    same counts in the same item order, so the same alpha, bit for bit."""
    scale = table.scale if table.ordered else None
    _check_level(level, table.numeric, scale)
    counts, domain, order = table.value_counts()
    return _alpha_of_counts(counts, domain, level, len(table.raters), table.numeric, order)


def _check_level(level: Level, numeric: bool, scale: list[Any] | None) -> None:
    if level not in LEVELS:
        raise InvalidRatings(f"level must be one of {', '.join(LEVELS)}, got {level!r}")
    if level == "interval" and not numeric:
        raise InvalidRatings("Krippendorff's interval alpha needs numeric labels; use level='nominal'")
    if level == "ordinal" and not numeric and scale is None:
        raise InvalidRatings(
            "Krippendorff's ordinal alpha of text labels needs labels= with the ordered scale"
        )


def _alpha_of_counts(
    counts: NDArray[np.int_],
    domain: NDArray[np.float64],
    level: Level,
    n_raters: int,
    numeric: bool,
    order: list[Any],
) -> dict[str, Any]:
    """Alpha of items x values ``counts`` over the sorted values ``domain`` (numbers, or codes into
    ``order`` for text): what the ``krippendorff`` package computes from a raters x items matrix."""
    per_item = counts.sum(axis=1)
    pairable = per_item >= 2
    result: dict[str, Any] = {
        "alpha": None,
        "level": level,
        "n_raters": n_raters,
        "n_items": counts.shape[0],
        "n_pairable_items": int(pairable.sum()),
        "n_ratings": int(per_item.sum()),
        "undefined_reason": None,
    }
    if not pairable.any():
        result["undefined_reason"] = "no item has two or more ratings: nothing to compare"
        return result
    seen = domain[counts[pairable].sum(axis=0) > 0]
    if len(seen) < 2:
        shown = scale_list(seen)[0] if numeric else order[int(seen[0])]
        result["undefined_reason"] = (
            f"every comparable rating is {shown!r}: expected disagreement is 0 and alpha is 0/0"
        )
        return result
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        alpha = float(
            _krippendorff.alpha(value_counts=counts, value_domain=domain, level_of_measurement=level)
        )
    if not math.isfinite(alpha):  # pragma: no cover - excluded by the checks above
        messages = "; ".join(str(w.message) for w in caught) or "the krippendorff package returned NaN"
        result["undefined_reason"] = f"alpha undefined: {messages}"
        return result
    result["alpha"] = alpha
    return result


def alpha_of_matrix(
    matrix: list[list[Any]], level: Level, scale: list[Any] | None, numeric: bool
) -> dict[str, Any]:
    """:func:`krippendorff_alpha`'s dict of a raters x items ``matrix`` (None = not rated): ``numeric``
    labels are used as they are, text is coded by its position in ``scale`` (the order; None for
    nominal text, coded in sorted order)."""
    n_raters = len(matrix)
    n_items = len(matrix[0]) if matrix else 0
    result: dict[str, Any] = {
        "alpha": None,
        "level": level,
        "n_raters": n_raters,
        "n_items": n_items,
        "n_pairable_items": 0,
        "n_ratings": 0,
        "undefined_reason": None,
    }
    _check_level(level, numeric, scale)
    order: list[Any] = []
    if numeric:
        data = np.array([[np.nan if v is None else float(v) for v in row] for row in matrix], dtype=float)
    else:
        order = (
            scale
            if scale is not None
            else sorted({v for row in matrix for v in row if v is not None}, key=str)
        )
        position = {v: i for i, v in enumerate(order)}
        data = np.array(
            [[np.nan if v is None else float(position[v]) for v in row] for row in matrix], dtype=float
        )
    data = data.reshape(n_raters, n_items)
    per_item = (~np.isnan(data)).sum(axis=0)
    pairable = per_item >= 2
    result["n_ratings"] = int(per_item.sum())
    result["n_pairable_items"] = int(pairable.sum())
    if not pairable.any():
        result["undefined_reason"] = "no item has two or more ratings: nothing to compare"
        return result
    values = np.unique(data[:, pairable][~np.isnan(data[:, pairable])])
    if len(values) < 2:
        shown = scale_list(values)[0] if numeric else order[int(values[0])]
        result["undefined_reason"] = (
            f"every comparable rating is {shown!r}: expected disagreement is 0 and alpha is 0/0"
        )
        return result
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        alpha = float(_krippendorff.alpha(reliability_data=data, level_of_measurement=level))
    if not math.isfinite(alpha):  # pragma: no cover - excluded by the checks above
        messages = "; ".join(str(w.message) for w in caught) or "the krippendorff package returned NaN"
        result["undefined_reason"] = f"alpha undefined: {messages}"
        return result
    result["alpha"] = alpha
    return result


def krippendorff_alpha(
    ratings: Any,
    level: Level = "nominal",
    *,
    labels: Sequence[Any] | None = None,
    form: Literal["matrix", "long"] | None = None,
) -> dict[str, Any]:
    """Krippendorff's alpha (Krippendorff 2011) with missing ratings, through the ``krippendorff`` package.

    ``ratings``: a raters x items matrix (rows = raters; None or NaN where a rater did not rate an
    item), or long ratings ((item, rater, label) tuples, mappings or a DataFrame; ``form`` forces the
    reading). ``level``: "nominal", "ordinal" or "interval". Text labels are mapped to codes: nominal
    always; ordinal only with ``labels=`` (the ordered scale); interval needs numbers.

    alpha = 1 - D_o / D_e (observed over expected disagreement in the coincidence matrix of pairable
    values). Returns ``alpha`` (None with ``undefined_reason`` when no item has two ratings or all
    comparable ratings are equal, D_e = 0), ``level``, ``n_raters``, ``n_items``, ``n_pairable_items``,
    ``n_ratings``.
    """
    data, reading = _as_form(ratings, form, "matrix")
    if reading == "long":
        return alpha_of_table(LongTable(data, labels), level)
    if is_frame(data):
        data = data.to_numpy()
    if any(isinstance(row, str | bytes) or not isinstance(row, Iterable | np.ndarray) for row in data):
        raise InvalidRatings("Krippendorff ratings: expected a raters x items matrix (one row per rater)")
    rows = [[None if is_missing(v) else plain_value(v) for v in row] for row in data]
    if len({len(row) for row in rows}) > 1:
        raise InvalidRatings("Krippendorff ratings: every rater's row must cover the same items")
    present = [v for row in rows for v in row if v is not None]
    numeric = all(is_number(v) for v in present)
    scale = check_labels(labels)
    if scale is not None:
        known = set(scale)
        stray = next((v for v in present if v not in known), None)
        if stray is not None:
            raise InvalidRatings(f"Krippendorff ratings: label {stray!r} is not on the scale {scale!r}")
    return alpha_of_matrix(rows, level, scale, numeric)
