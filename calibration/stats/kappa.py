"""Cohen's kappa (weighted) of two raters, and the handling of ratings every agreement figure shares.

Pure module: plain data in, plain data out (numpy; pandas values accepted, pandas not imported). Kappa is computed from the pair's
confusion matrix (:func:`kappa_of_confusion`), with scikit-learn's arithmetic; scikit-learn's
``cohen_kappa_score`` is the tests' oracle (equal to 1e-12), not a dependency of this path (its
input checks cost six times the arithmetic, and its import a second per process). The lowest of the
agreement modules: :mod:`calibration.stats.bootstrap` and :mod:`calibration.stats.multirater` build on it and
:mod:`calibration.stats.agreement` re-exports its public names. References, how the figures were
checked, and the layout of the modules: docs/agreement.md.

Definitions (n items rated by both raters; p_ij = share of items rater A put in class i and rater B in
class j, over the K classes of the scale in its order; p_i. and p_.j the margins; d_ij a disagreement
weight, d_ii = 0):

- Cohen's kappa (Cohen 1960, "A coefficient of agreement for nominal scales"):
  p_o = sum_i p_ii, p_e = sum_i p_i. p_.i, kappa = (p_o - p_e) / (1 - p_e).
- Weighted kappa (Cohen 1968, "Weighted kappa"): d_ij = |i - j| (linear) or (i - j)^2 (quadratic), with
  i, j the positions on the scale (scikit-learn's ``cohen_kappa_score`` convention);
  kappa_w = 1 - sum d_ij p_ij / sum d_ij p_i. p_.j. With agreement weights w_ij = 1 - d_ij / max d this is
  (p_o^w - p_e^w) / (1 - p_e^w), p_o^w = sum w_ij p_ij, p_e^w = sum w_ij p_i. p_.j.
- Kappa is UNDEFINED (0/0), never 0, when both raters put every item in one and the same class
  (p_e = 1), and when no item was rated by both.

Ratings: None, NaN and pandas' NA/NaT are missing (the item is dropped from the pair). The scale is
``labels=`` (non-empty, no missing value, no repeat), else :func:`grade_range` of the ratings
(whole-number grades), else the sorted distinct ratings; a rating off the scale raises
:class:`InvalidRatings`.
"""

from __future__ import annotations

import math
import numbers
import sys
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, Literal, cast, overload

import numpy as np

from annotation.errors import DenominatorError

if TYPE_CHECKING:
    from numpy.typing import NDArray

Weights = Literal["linear", "quadratic"] | None
WEIGHTINGS: tuple[Weights, ...] = (None, "linear", "quadratic")


class InvalidRatings(DenominatorError, ValueError):
    """Ratings that cannot be compared: mismatched lengths, a label not on the given scale, a bad row."""


class UnequalRaters(InvalidRatings):
    """Fleiss' kappa needs the same number of ratings on every item."""


# --------------------------------------------------------------------------- input handling


def _pandas() -> Any:
    """pandas when this process has imported it, else None: a pandas value (NA, a Series, a
    DataFrame) exists only then, so the checks below need not import it (start-up: pandas costs
    about 0.3 s, and `agree` on a CSV never uses it)."""
    return sys.modules.get("pandas")


def is_frame(value: Any) -> bool:
    """A pandas DataFrame (without importing pandas)."""
    pd = _pandas()
    return pd is not None and isinstance(value, pd.DataFrame)


def is_missing(value: Any) -> bool:
    """None, NaN and pandas' NA/NaT are missing ratings."""
    if value is None:
        return True
    if isinstance(value, float | np.floating):
        return math.isnan(value)
    pd = _pandas()
    return pd is not None and (value is pd.NA or value is pd.NaT)


def plain_value(value: Any) -> Any:
    """numpy scalars -> Python scalars; any other value as it is."""
    return value.item() if isinstance(value, np.generic) else value


def is_number(value: Any) -> bool:
    """A real number (Python or numpy), not a bool."""
    return isinstance(value, numbers.Real) and not isinstance(value, bool | np.bool_)


def _column(values: Any, name: str) -> np.ndarray:
    """One rater's ratings as a flat array; plain numbers with None become a float array (NaN = missing)."""
    if isinstance(values, str | bytes) or not isinstance(values, Iterable | np.ndarray):
        raise InvalidRatings(f"{name}: expected a sequence of ratings, got {type(values).__name__}")
    pd = _pandas()
    array: np.ndarray
    if pd is not None and isinstance(values, pd.Series | pd.Index):
        array = values.to_numpy()
    elif isinstance(values, np.ndarray):
        array = values
    else:
        items = list(values)
        array = np.empty(len(items), dtype=object)
        for i, value in enumerate(items):
            array[i] = value
    if array.ndim != 1:
        raise InvalidRatings(f"{name}: expected a flat sequence of ratings, got shape {array.shape}")
    if array.dtype == object:
        if all(is_missing(v) or is_number(v) for v in array):
            return np.array([np.nan if is_missing(v) else float(v) for v in array], dtype=float)
    return array


def scale_list(scale: np.ndarray | list[Any]) -> list[Any]:
    """The scale as plain Python values; a numeric scale of whole numbers is shown as ints."""
    values = [plain_value(v) for v in scale]
    if values and all(isinstance(v, float) and v.is_integer() for v in values):  # 2.0 -> 2
        return [int(v) for v in values]
    return values


@overload
def check_labels(labels: None) -> None: ...
@overload
def check_labels(labels: Sequence[Any]) -> list[Any]: ...
@overload
def check_labels(labels: Sequence[Any] | None) -> list[Any] | None: ...
def check_labels(labels: Sequence[Any] | None) -> list[Any] | None:
    """The scale given as ``labels=``, as plain Python values (None when none is given); raises
    :class:`InvalidRatings` when it is text, empty, holds a missing value or repeats a label."""
    if labels is None:
        return None
    if isinstance(labels, str | bytes):
        raise InvalidRatings(f"labels: expected the ordered scale as a sequence, got {labels!r}")
    scale = [plain_value(v) for v in labels]
    if not scale:
        raise InvalidRatings("labels: the scale is empty")
    if any(is_missing(v) for v in scale):
        raise InvalidRatings(f"labels: the scale {scale!r} holds a missing value")
    if len(set(scale)) != len(scale):
        raise InvalidRatings(f"labels: the scale {scale!r} repeats a label")
    return scale


MAX_GRADE_RANGE = 100  # whole-number scales up to this many grades are filled in (see grade_range)


def grade_range(values: Sequence[Any]) -> list[int] | None:
    """The scale rule shared by every face when no scale is given: for whole-number grades, every
    integer from the lowest to the highest grade seen (labels 1..6 with 5 unused are the scale
    1, 2, 3, 4, 5, 6), so a weighted kappa measures distance in grades, not in ranks among the
    grades someone happened to use. None for other ratings (text, fractions) or a range of more
    than :data:`MAX_GRADE_RANGE` grades (then the scale is the distinct ratings)."""
    numbers = [float(v) for v in values if is_number(v)]
    if not numbers or len(numbers) != len(values) or not all(v.is_integer() for v in numbers):
        return None
    low, high = int(min(numbers)), int(max(numbers))
    if high - low + 1 > MAX_GRADE_RANGE:
        return None
    return list(range(low, high + 1))


def _encode(
    columns: list[np.ndarray], names: list[str], labels: Sequence[Any] | None
) -> tuple[list[NDArray[np.int64]], list[Any]]:
    """Map the ratings of several raters to positions on one scale.

    Returns (codes, scale): codes[r] is an int64 array with -1 for a missing rating; the scale is
    ``labels`` (validated), else :func:`grade_range` of the ratings, else the sorted distinct ratings.
    """
    scale_given = check_labels(labels)
    numeric = all(c.dtype.kind in "biuf" for c in columns)
    if numeric and (scale_given is None or all(is_number(v) or isinstance(v, bool) for v in scale_given)):
        present = [~np.isnan(c) if c.dtype.kind == "f" else np.ones(len(c), bool) for c in columns]
        if scale_given is None:
            seen = [c[p] for c, p in zip(columns, present)]
            scale_arr = np.unique(np.concatenate(seen)) if seen else np.array([])
            whole = grade_range(scale_arr.tolist())
            if whole is not None:
                scale_arr = np.asarray(whole, dtype=float)
        else:
            scale_arr = np.asarray(scale_given, dtype=float)
        order = np.argsort(scale_arr, kind="stable")
        ordered = scale_arr[order]
        codes: list[NDArray[np.int64]] = []
        for column, mask, name in zip(columns, present, names):
            code = np.full(len(column), -1, dtype=np.int64)
            if len(ordered):
                pos = np.clip(np.searchsorted(ordered, column[mask]), 0, len(ordered) - 1)
                found = ordered[pos] == column[mask]
            else:
                pos, found = np.zeros(int(mask.sum()), np.int64), np.zeros(int(mask.sum()), bool)
            if not found.all():
                where = int(np.flatnonzero(mask)[np.flatnonzero(~found)[0]])
                shown = scale_list([column[where]])[0]
                scale_shown = scale_given if scale_given is not None else scale_list(scale_arr)
                raise InvalidRatings(f"{name}[{where}] = {shown!r} is not on the scale {scale_shown!r}")
            code[mask] = order[pos]
            codes.append(code)
        return codes, (scale_given if scale_given is not None else scale_list(scale_arr))

    values = [[plain_value(v) for v in c] for c in columns]
    if scale_given is None:
        distinct = {v for column in values for v in column if not is_missing(v)}
        try:
            scale = sorted(distinct)
        except TypeError:
            kinds = sorted({type(v).__name__ for v in distinct})
            raise InvalidRatings(
                f"ratings mix types that have no common order ({', '.join(kinds)}); pass labels= with the scale"
            ) from None
    else:
        scale = scale_given
    position = {v: i for i, v in enumerate(scale)}
    codes = []
    for ratings, name in zip(values, names):
        code = np.full(len(ratings), -1, dtype=np.int64)
        for i, v in enumerate(ratings):
            if is_missing(v):
                continue
            try:
                code[i] = position[v]
            except (KeyError, TypeError):
                shown = scale_list([v])[0]
                raise InvalidRatings(f"{name}[{i}] = {shown!r} is not on the scale {scale!r}") from None
        codes.append(code)
    return codes, scale


class RaterPair:
    """Two raters' ratings as positions on one scale, items with a missing rating dropped: ``a`` and
    ``b`` (int64 codes, the same length ``n``), ``scale`` (K labels, in order), ``k`` (K),
    ``n_dropped`` (items missing a rating) and :meth:`confusion` (K x K counts, rows = a)."""

    def __init__(
        self, a: Any, b: Any, labels: Sequence[Any] | None, names: tuple[str, str] = ("a", "b")
    ) -> None:
        col_a, col_b = _column(a, names[0]), _column(b, names[1])
        if len(col_a) != len(col_b):
            raise InvalidRatings(
                f"{names[0]} has {len(col_a)} ratings and {names[1]} has {len(col_b)}: "
                "both raters must rate the same items, in the same order (None for a missing rating)"
            )
        (code_a, code_b), self.scale = _encode([col_a, col_b], list(names), labels)
        both = (code_a >= 0) & (code_b >= 0)
        self.a, self.b = code_a[both], code_b[both]
        self.n_dropped = int(len(both) - both.sum())
        self.k = len(self.scale)
        self._cohen: dict[Weights, dict[str, Any]] = {}  # cohen_of_pair's results, once per weighting

    @classmethod
    def of_codes(cls, a: NDArray[np.int64], b: NDArray[np.int64], scale: list[Any]) -> RaterPair:
        """A pair already encoded: ``a`` and ``b`` int64 positions on ``scale`` (checked, plain
        values), both rated on every item (none dropped). What :class:`calibration.stats.agreement.
        RaterPairs` builds from a long table whose labels are on its scale."""
        pair = cls.__new__(cls)
        pair.a, pair.b, pair.scale, pair.k, pair.n_dropped = a, b, list(scale), len(scale), 0
        pair._cohen = {}
        return pair

    @property
    def n(self) -> int:
        return len(self.a)

    def confusion(self) -> NDArray[np.intp]:
        return np.bincount(self.a * self.k + self.b, minlength=self.k * self.k).reshape(self.k, self.k)


def disagreement_weights(k: int, weights: Weights) -> NDArray[np.float64]:
    """d_ij: 1 - identity (unweighted), |i - j| (linear), (i - j)^2 (quadratic)."""
    i = np.arange(k, dtype=float)
    if weights is None:
        return 1.0 - np.eye(k)
    if weights == "linear":
        return np.abs(i[:, None] - i[None, :])
    return (i[:, None] - i[None, :]) ** 2


def check_weights(weights: Any) -> Weights:
    """``weights`` itself if it is one of :data:`WEIGHTINGS`; else raises :class:`InvalidRatings`."""
    if weights not in WEIGHTINGS:
        raise InvalidRatings(f"weights must be None, 'linear' or 'quadratic', got {weights!r}")
    return cast(Weights, weights)  # one of WEIGHTINGS, checked above (mypy does not narrow on `in`)


def _single_shared_class(confusion: NDArray[np.integer[Any]]) -> int | None:
    """The class when both raters put every item in that one class (chance agreement 1), else None."""
    rows, cols = np.flatnonzero(confusion.sum(axis=1)), np.flatnonzero(confusion.sum(axis=0))
    if len(rows) == 1 and len(cols) == 1 and rows[0] == cols[0]:
        return int(rows[0])
    return None


# --------------------------------------------------------------------------- Cohen


def cohen_of_pair(pair: RaterPair, weights: Weights) -> dict[str, Any]:
    """:func:`cohen`'s dict for a pair already encoded (``weights`` already checked): the one
    computation behind :func:`cohen`, :func:`cohen_all`, the bootstrap's estimate and the report.
    Computed once per pair and weighting (a report asks for it three times: the estimate, the
    interval, the verdict); each call returns its own copy."""
    found = pair._cohen.get(weights)
    if found is None:
        found = pair._cohen[weights] = _cohen_of_pair(pair, weights)
    return {**found, "labels": list(found["labels"]), "confusion": [list(row) for row in found["confusion"]]}


def cohen_of_pairs(pairs: Sequence[RaterPair], weights: Weights) -> list[dict[str, Any]]:
    """:func:`cohen_of_pair` of each pair (``weights`` already checked), the pairs of one scale
    length computed as a stack: each pair's confusion matrix, agreements and kappa in the very
    arithmetic :func:`_cohen_of_pair` and :func:`kappa_of_confusion` run on it alone (the same
    elementwise steps; each sum over a table's own cells, in the same order), so the dicts are
    equal to the last bit (tests/test_agreement.py holds them equal); each result cached on its pair."""
    return cohen_of_pairs_weighted(pairs, [weights])[weights]


def cohen_of_pairs_weighted(
    pairs: Sequence[RaterPair], weightings: Sequence[Weights]
) -> dict[Weights, list[dict[str, Any]]]:
    """{weights: :func:`cohen_of_pairs` at it} for each of ``weightings`` (already checked): each
    scale length's stack of confusion matrices counted once for all of them."""
    by_k: dict[int, list[RaterPair]] = {}
    for pair in pairs:
        if any(weights not in pair._cohen for weights in weightings):
            if pair.n == 0:  # no table to stack: the undefined dict, alone
                for weights in weightings:
                    pair._cohen[weights] = _cohen_of_pair(pair, weights)
            else:
                by_k.setdefault(pair.k, []).append(pair)
    for k, todo in by_k.items():
        n = np.array([pair.n for pair in todo], dtype=np.int64)
        # a table a pair: small arrays, where one bincount of every pair's cells laid end to end
        # made several arrays of all the ratings (megabytes of fresh pages, their faults the cost)
        confusion = np.array([np.bincount(pair.a * k + pair.b, minlength=k * k) for pair in todo])
        confusion = confusion.reshape(-1, k, k)
        for weights in weightings:
            _cohen_stack(todo, k, weights, confusion, n)
    return {weights: [cohen_of_pair(pair, weights) for pair in pairs] for weights in weightings}


def _cohen_stack(
    pairs: list[RaterPair], k: int, weights: Weights, confusion: NDArray[np.intp], n: NDArray[np.int64]
) -> None:
    """:func:`cohen_of_pairs` of pairs of scale length ``k``, each with at least one item, their
    ``confusion`` matrices (a stack) and their ``n`` counted."""
    p = confusion / n[:, None, None]
    row, col = p.sum(axis=2), p.sum(axis=1)
    observed = np.trace(p, axis1=1, axis2=2)
    chance = np.matmul(row[:, None, :], col[:, :, None])[:, 0, 0]
    if weights is not None:
        d = disagreement_weights(k, weights)
        d_max = d.max() if d.max() > 0 else 1.0
        weighted_observed = (1.0 - (d * p).reshape(len(pairs), -1).sum(axis=1) / d_max).tolist()
        weighted_chance = (
            1.0 - np.matmul(np.matmul(row[:, None, :], d), col[:, :, None])[:, 0, 0] / d_max
        ).tolist()
    # kappa_of_confusion's arithmetic: expected = outer(column sums, row sums) / n
    sum0, sum1 = confusion.sum(axis=1), confusion.sum(axis=2)
    expected = sum0[:, :, None] * sum1[:, None, :] / n[:, None, None]
    w = _sklearn_weights(k, weights)
    denominator = (w * expected).reshape(len(pairs), -1).sum(axis=1)
    disagreed = (w * confusion).reshape(len(pairs), -1).sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        kappa = 1 - disagreed / denominator
    used_rows, used_cols = sum1 > 0, sum0 > 0
    single = (
        (used_rows.sum(axis=1) == 1)
        & (used_cols.sum(axis=1) == 1)
        & (used_rows.argmax(axis=1) == used_cols.argmax(axis=1))
    )
    # as Python values once for the stack (float(x[i]) a pair gave the same floats)
    observed_of, chance_of, kappa_of = observed.tolist(), chance.tolist(), kappa.tolist()
    tables, single_of, denominator_of = confusion.tolist(), single.tolist(), denominator.tolist()
    for i, pair in enumerate(pairs):
        result: dict[str, Any] = {
            "n": pair.n,
            "n_dropped": pair.n_dropped,
            "weights": weights,
            "labels": list(pair.scale),
            "observed_agreement": observed_of[i],
            "chance_agreement": chance_of[i],
            "kappa": None,
            "confusion": tables[i],
            "undefined_reason": None,
        }
        if weights is not None:
            result["weighted_observed_agreement"] = weighted_observed[i]
            result["weighted_chance_agreement"] = weighted_chance[i]
        if single_of[i]:
            shared = int(used_rows[i].argmax())
            result["undefined_reason"] = (
                f"both raters gave all {pair.n} items the same label {pair.scale[shared]!r}: "
                "chance agreement is 1 and kappa is 0/0"
            )
        elif denominator_of[i] == 0.0 or not math.isfinite(kappa_of[i]):  # pragma: no cover
            result["undefined_reason"] = "kappa undefined: chance disagreement is 0"
        else:
            result["kappa"] = kappa_of[i]
        pair._cohen[weights] = result


def _cohen_of_pair(pair: RaterPair, weights: Weights) -> dict[str, Any]:
    confusion = pair.confusion()
    result: dict[str, Any] = {
        "n": pair.n,
        "n_dropped": pair.n_dropped,
        "weights": weights,
        "labels": list(pair.scale),
        "observed_agreement": None,
        "chance_agreement": None,
        "kappa": None,
        "confusion": confusion.tolist(),
        "undefined_reason": None,
    }
    if weights is not None:
        result["weighted_observed_agreement"] = None
        result["weighted_chance_agreement"] = None
    if pair.n == 0:
        result["undefined_reason"] = "no item has a rating from both raters (n = 0)"
        return result
    p = confusion / pair.n
    row, col = p.sum(axis=1), p.sum(axis=0)
    result["observed_agreement"] = float(np.trace(p))
    result["chance_agreement"] = float(row @ col)
    if weights is not None:
        d = disagreement_weights(pair.k, weights)
        d_max = d.max() if d.max() > 0 else 1.0
        result["weighted_observed_agreement"] = float(1.0 - (d * p).sum() / d_max)
        result["weighted_chance_agreement"] = float(1.0 - row @ d @ col / d_max)
    shared = _single_shared_class(confusion)
    if shared is not None:
        result["undefined_reason"] = (
            f"both raters gave all {pair.n} items the same label {pair.scale[shared]!r}: "
            "chance agreement is 1 and kappa is 0/0"
        )
        return result
    kappa = kappa_of_confusion(confusion, weights)
    if not math.isfinite(kappa):  # pragma: no cover - excluded by the single-class check above
        result["undefined_reason"] = "kappa undefined: chance disagreement is 0"
        return result
    result["kappa"] = kappa
    return result


_SKLEARN_WEIGHTS: dict[tuple[int, Weights], NDArray[np.int64]] = {}


def _sklearn_weights(k: int, weights: Weights) -> NDArray[np.int64]:
    """scikit-learn's integer disagreement weights (read-only: made once per scale length and
    weighting, shared by every call)."""
    found = _SKLEARN_WEIGHTS.get((k, weights))
    if found is not None:
        return found
    if weights is None:
        w = np.ones((k, k), dtype=np.int64)
        w.flat[:: k + 1] = 0
    else:
        w = np.zeros((k, k), dtype=np.int64) + np.arange(k)
        w = np.abs(w - w.T) if weights == "linear" else (w - w.T) ** 2
    w.flags.writeable = False
    _SKLEARN_WEIGHTS[k, weights] = w
    return w


def kappa_of_confusion(confusion: np.ndarray, weights: Weights) -> float:
    """Cohen's kappa (weighted) from a K x K confusion matrix (rows = rater A), in the arithmetic of
    scikit-learn's ``cohen_kappa_score`` (expected = outer(column sums, row sums) / n; kappa = 1 -
    sum(w * confusion) / sum(w * expected)), so the two agree to the last bits; NaN when the
    expected disagreement is 0 (callers rule that case out first)."""
    confusion = np.asarray(confusion, dtype=np.int64)
    k = confusion.shape[0]
    sum0, sum1 = confusion.sum(axis=0), confusion.sum(axis=1)
    expected = np.outer(sum0, sum1) / np.sum(sum0)
    w = _sklearn_weights(k, weights)
    denominator = float(np.sum(w * expected))
    if denominator == 0.0:
        return math.nan
    return float(1 - np.sum(w * confusion) / denominator)


def cohen(
    a: Sequence[Any], b: Sequence[Any], *, labels: Sequence[Any] | None = None, weights: Weights = None
) -> dict[str, Any]:
    """Cohen's kappa of two raters over the same items (scikit-learn's arithmetic, :func:`kappa_of_confusion`).

    ``a[i]`` and ``b[i]`` rate item i; None or NaN is a missing rating and its item is dropped
    (``n_dropped``). ``labels`` is the ordered scale (e.g. ``[0, 1, 2, 3]``): pass it for weighted kappa,
    so the distance between grades is measured on the scale, not among the grades that happen to be used;
    without it the scale is :func:`grade_range` of the ratings (whole-number grades), else the sorted distinct ratings (the rule `agree` uses too). ``weights``: None, "linear" or "quadratic".

    Returns ``n``, ``n_dropped``, ``weights``, ``labels`` (scale order), ``observed_agreement`` (share of
    items rated equal), ``chance_agreement`` (sum_i p_i. p_.i), for weighted kappa also
    ``weighted_observed_agreement`` and ``weighted_chance_agreement`` (agreement weights
    w_ij = 1 - d_ij / max d), ``kappa``, ``confusion`` (rows = a, columns = b, in ``labels`` order) and
    ``undefined_reason``: kappa is None with the reason when n = 0 or both raters used one and the same
    single class (chance agreement 1). Formulas: module docstring.
    """
    return cohen_of_pair(RaterPair(a, b, labels), check_weights(weights))


def cohen_all(
    a: Sequence[Any], b: Sequence[Any], labels: Sequence[Any] | None = None
) -> dict[str, dict[str, Any]]:
    """Unweighted, linear and quadratic Cohen's kappa at once: ``{"unweighted", "linear", "quadratic"}``."""
    pair = RaterPair(a, b, labels)
    return {
        "unweighted": cohen_of_pair(pair, None),
        "linear": cohen_of_pair(pair, "linear"),
        "quadratic": cohen_of_pair(pair, "quadratic"),
    }


# --------------------------------------------------------------------------- binarised


def binarised(a: Sequence[Any], b: Sequence[Any], threshold: float) -> dict[str, Any]:
    """Cohen's kappa after mapping each grade to 1 if grade >= ``threshold`` else 0 (missing stays missing).

    Relevance is usually binarised at 1 (TREC: relevant = grade >= 1). Returns :func:`cohen`'s dict on the
    scale [0, 1], plus ``threshold``.
    """

    def binary(values: Sequence[Any], name: str) -> list[int | None]:
        column = _column(values, name)
        out: list[int | None] = []
        for i, v in enumerate(column):
            v = plain_value(v)
            if is_missing(v):
                out.append(None)
            elif is_number(v):
                out.append(1 if v >= threshold else 0)
            else:
                raise InvalidRatings(f"{name}[{i}] = {v!r}: binarising needs numeric grades")
        return out

    result = cohen(binary(a, "a"), binary(b, "b"), labels=[0, 1])
    result["threshold"] = threshold
    return result
