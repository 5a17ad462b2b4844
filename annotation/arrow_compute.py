"""The Arrow compute functions the metrics engine and the label readers call, by Arrow's own names,
without importing :mod:`pyarrow.compute` (#42: that import makes a documented Python wrapper for
each of Arrow's ~300 functions, 40-50 ms of CPU at every start of a command that needs a dozen).

Each function here is ``pyarrow.compute``'s of the same name for the arguments this project passes
(``tests/test_arrow_compute.py`` checks each against it): it calls the C++ function through
``pyarrow._compute.call_function`` with the options object that ``pyarrow.compute`` would build.
Arrow's own methods that go through ``pyarrow.compute`` (``Array.take``, ``Table.filter``,
``Array.cast``, ``value_counts``, ...) import it on their first call: the modules on the metrics
path call :func:`take`, :func:`filter` and :func:`cast` below instead
(``tests/test_startup.py`` checks that a metrics run never imports it).

A module that needs a function not here imports :mod:`pyarrow.compute` itself.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import Any

import pyarrow as pa
from pyarrow._compute import (
    CastOptions,
    FilterOptions,
    MatchSubstringOptions,
    SetLookupOptions,
    SortOptions,
    TakeOptions,
    TrimOptions,
    call_function,
)

__all__ = [
    "all",
    "any",
    "binary_join_element_wise",
    "cast",
    "coalesce",
    "dictionary_encode",
    "equal",
    "filter",
    "index_in",
    "is_in",
    "is_nan",
    "match_substring",
    "match_substring_regex",
    "max",
    "min",
    "not_equal",
    "sort_indices",
    "starts_with",
    "take",
    "unique",
    "utf8_length",
    "utf8_trim",
    "value_counts",
]

_ARROW = (pa.Array, pa.ChunkedArray, pa.Scalar, pa.RecordBatch, pa.Table)


def _datum(value: Any) -> Any:
    """An argument as Arrow takes it: Arrow data as is, a Python value as a scalar (a ``str``
    built from its bytes: ``pa.scalar`` imports pandas, a quarter of a second of a command's start)."""
    if isinstance(value, _ARROW):
        return value
    if type(value) is str:
        try:
            data = value.encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate: pyarrow says so, as before
            return pa.scalar(value)
        offsets = pa.py_buffer(struct.pack("<ii", 0, len(data)))
        return pa.Array.from_buffers(pa.string(), 1, [None, offsets, pa.py_buffer(data)])[0]
    return pa.scalar(value)


def _aggregate(name: str, values: Any) -> Any:
    return call_function(name, [values])  # Arrow's defaults: nulls skipped, at least one value


def all(values: Any) -> pa.Scalar:  # noqa: A001 - Arrow's name
    return _aggregate("all", values)


def any(values: Any) -> pa.Scalar:  # noqa: A001 - Arrow's name
    return _aggregate("any", values)


def max(values: Any) -> pa.Scalar:  # noqa: A001 - Arrow's name
    return _aggregate("max", values)


def min(values: Any) -> pa.Scalar:  # noqa: A001 - Arrow's name
    return _aggregate("min", values)


def equal(left: Any, right: Any) -> Any:
    return call_function("equal", [_datum(left), _datum(right)])


def not_equal(left: Any, right: Any) -> Any:
    return call_function("not_equal", [_datum(left), _datum(right)])


def is_nan(values: Any) -> Any:
    return call_function("is_nan", [values])


def coalesce(*values: Any) -> Any:
    return call_function("coalesce", [_datum(v) for v in values])


def binary_join_element_wise(*strings: Any) -> Any:
    """The strings joined row by row, the last argument the separator (as ``pyarrow.compute``'s,
    with its default null handling: a null anywhere gives null)."""
    return call_function("binary_join_element_wise", [_datum(s) for s in strings])


def cast(values: Any, target_type: pa.DataType) -> Any:
    """A safe cast (overflow and truncation refused), as ``pyarrow.compute.cast``'s default."""
    return call_function("cast", [values], CastOptions.safe(target_type))


def dictionary_encode(values: Any) -> Any:
    return call_function("dictionary_encode", [values])


def unique(values: Any) -> Any:
    return call_function("unique", [values])


def value_counts(values: Any) -> Any:
    return call_function("value_counts", [values])


def index_in(values: Any, value_set: pa.Array) -> Any:
    return call_function("index_in", [values], SetLookupOptions(value_set))


def is_in(values: Any, value_set: pa.Array) -> Any:
    return call_function("is_in", [values], SetLookupOptions(value_set))


def starts_with(strings: Any, pattern: str) -> Any:
    return call_function("starts_with", [strings], MatchSubstringOptions(pattern))


def match_substring(strings: Any, pattern: str) -> Any:
    return call_function("match_substring", [strings], MatchSubstringOptions(pattern))


def match_substring_regex(strings: Any, pattern: str) -> Any:
    return call_function("match_substring_regex", [strings], MatchSubstringOptions(pattern))


def utf8_length(strings: Any) -> Any:
    return call_function("utf8_length", [strings])


def utf8_trim(strings: Any, characters: str) -> Any:
    return call_function("utf8_trim", [strings], TrimOptions(characters))


def sort_indices(values: Any, sort_keys: Sequence[tuple[str, str]] = ()) -> Any:
    """The indices that sort an array ascending, or a table by ``sort_keys`` ((column, "ascending"
    or "descending"), ...); nulls at the end, as ``pyarrow.compute``'s default."""
    return call_function("sort_indices", [values], SortOptions(sort_keys) if sort_keys else None)


def take(data: Any, indices: Any) -> Any:
    """``data.take(indices)`` (an array, chunked array or table), bounds checked."""
    return call_function("take", [data, indices], TakeOptions(boundscheck=True))


def filter(data: Any, mask: Any) -> Any:  # noqa: A001 - Arrow's name
    """``data.filter(mask)``: the rows where ``mask`` is true (a null mask value drops the row)."""
    return call_function("filter", [data, mask], FilterOptions())
