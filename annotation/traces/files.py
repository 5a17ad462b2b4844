"""Export files as top-level JSON values: a JSON document, JSON lines (one value
a line, also when a ``.json`` file holds several values) or Parquet (one record
a row). Errors: :class:`InvalidTraceSource` naming the file and line."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from annotation import textio
from annotation.traces.base import InvalidTraceSource


def require_file(path: str) -> None:
    """InvalidTraceSource unless ``path`` is a readable file."""
    textio.require_file(path, InvalidTraceSource)


def read_values(path: str, *, lines: bool | None = None) -> list[tuple[Any, int | None, str]]:
    """Top-level JSON values of a file: (value, line or None, location)."""
    if str(path).lower().endswith(".parquet") or _is_parquet(path):
        return [(row, None, f"row {i}") for i, row in enumerate(_parquet_rows(path))]
    text = textio.read_text_file(path, InvalidTraceSource)
    if lines is None:
        lines = str(path).lower().endswith((".jsonl", ".ndjson"))
    if not lines:
        try:
            return [(json.loads(text), None, "")]
        except json.JSONDecodeError as exc:
            if exc.msg != "Extra data":
                raise InvalidTraceSource(
                    path,
                    exc.lineno,
                    None,
                    f"not JSON ({exc.msg}, column {exc.colno}); expected a JSON document",
                ) from None
    values = []
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            values.append((json.loads(line), number, ""))
        except json.JSONDecodeError as exc:
            raise InvalidTraceSource(
                path,
                number,
                None,
                f"not JSON ({exc.msg}, column {exc.colno}); expected one JSON value per line",
            ) from None
    if not values:
        raise InvalidTraceSource(path, None, None, "no JSON values; expected spans, observations or runs")
    return values


def _is_parquet(path: str) -> bool:
    try:
        with open(path, "rb") as handle:
            return handle.read(4) == b"PAR1"
    except OSError:
        return False


def _parquet_rows(path: str) -> list[dict[str, Any]]:
    require_file(path)
    try:
        table = pq.read_table(path)
    except (pa.ArrowException, OSError) as exc:
        raise InvalidTraceSource(path, None, None, f"not a readable Parquet file ({exc})") from None
    return table.to_pylist()


def list_items(value: Any, line: int | None, loc: str) -> Iterable[tuple[Any, int | None, str]]:
    """A list's items with their locations."""
    for i, item in enumerate(value):
        yield item, line, f"{loc}[{i}]" if loc else f"record {i}"


def unwound(value: Any, line: int | None, loc: str) -> Iterator[tuple[Any, int | None, str]]:
    """``value`` with its location, or, for a list, each item (lists in lists too) with its own."""
    if isinstance(value, list):
        for item, item_line, item_loc in list_items(value, line, loc):
            yield from unwound(item, item_line, item_loc)
    else:
        yield value, line, loc


def read_objects(path: str) -> Iterator[tuple[Any, int | None, str]]:
    """The file's top-level values, lists unwound (:func:`unwound`)."""
    for value, line, loc in read_values(path):
        yield from unwound(value, line, loc)
