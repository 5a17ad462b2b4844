"""Export files as top-level JSON values: a JSON document, JSON lines (one value
a line, also when a ``.json`` file holds several values) or Parquet (one record
a row). Errors: :class:`InvalidTraceSource` naming the file and line."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from annotation.formats import textio
from annotation.traces.base import InvalidTraceSource


def require_file(path: str) -> None:
    """InvalidTraceSource unless ``path`` is a readable file."""
    textio.require_file(path, InvalidTraceSource)


def read_values(path: str, *, lines: bool | None = None) -> list[tuple[Any, int | None, str]]:
    """Top-level JSON values of a file: (value, line or None, location)."""
    if str(path).lower().endswith(".parquet") or _is_parquet(path):
        rows: list[tuple[Any, int | None, str]] = [
            (row, None, f"row {i}") for i, row in enumerate(_parquet_rows(path))
        ]
        for row, _, loc in rows:
            _check_value(row, path, None, loc, nul=True)
        return rows
    text = textio.read_text_file(path, InvalidTraceSource)
    if lines is None:
        lines = str(path).lower().endswith((".jsonl", ".ndjson"))
    if not lines:
        try:
            value = json.loads(text)
            escape = _NUL_ESCAPE.search(text)  # JSON spells a NUL only so (a NUL byte is refused)
            nul_line = text.count("\n", 0, escape.start()) + 1 if escape else None
            _check_value(value, path, nul_line, "", nul=escape is not None)
            return [(value, None, "")]
        except RecursionError:
            raise InvalidTraceSource(path, None, None, _TOO_DEEP) from None
        except json.JSONDecodeError as exc:
            if exc.msg != "Extra data":
                raise InvalidTraceSource(
                    path,
                    exc.lineno,
                    None,
                    f"not JSON ({exc.msg}, column {exc.colno}); expected a JSON document",
                ) from None
    values: list[tuple[Any, int | None, str]] = []
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except RecursionError:
            raise InvalidTraceSource(path, number, None, _TOO_DEEP) from None
        except json.JSONDecodeError as exc:
            raise InvalidTraceSource(
                path,
                number,
                None,
                f"not JSON ({exc.msg}, column {exc.colno}); expected one JSON value per line",
            ) from None
        _check_value(value, path, number, "", nul="\\u0000" in line)
        values.append((value, number, ""))
    if not values:
        raise InvalidTraceSource(path, None, None, "no JSON values; expected spans, observations or runs")
    return values


MAX_DEPTH = 128  # JSON nesting an export may have: OTLP's deepest is about 20 levels
_TOO_DEEP = f"JSON nested more than {MAX_DEPTH} levels deep; expected spans, observations or runs"


# a \u0000 escape that is not an escaped backslash followed by "u0000"
_NUL_ESCAPE = re.compile(r"(?<!\\)(?:\\\\)*\\u0000")


def _check_value(value: Any, path: str, line: int | None, loc: str, *, nul: bool) -> None:
    """Refuse JSON nested deeper than :data:`MAX_DEPTH` (the readers below recurse), without
    recursing; with ``nul``, also a NUL character (U+0000) in any string of it, a field's name or
    its value (a PostgreSQL store cannot hold one, so neither backend takes it), naming the field
    (``loc`` and the path to it). Strings are walked in the file's order, so the first NUL found
    is the first one written (``line``: where that is, for a whole JSON document)."""
    stack: list[tuple[Any, int, tuple[Any, ...], bool]] = [(value, 1, (), False)]
    while stack:
        current, depth, at, is_key = stack.pop()
        if depth > MAX_DEPTH:
            raise InvalidTraceSource(path, line, None, _TOO_DEEP)
        if is_key:  # a field's name, walked just before its value
            if "\x00" in current:
                _refuse_nul(current, path, line, f"{_field_path(loc, at)} (a field's name)")
        elif isinstance(current, dict):
            for key, item in reversed(current.items()):
                if isinstance(item, dict | list) or (nul and isinstance(item, str)):
                    stack.append((item, depth + 1, (at, key), False))
                if nul and isinstance(key, str):
                    stack.append((key, depth, (at, key), True))
        elif isinstance(current, list):
            for index in range(len(current) - 1, -1, -1):
                item = current[index]
                if isinstance(item, dict | list) or (nul and isinstance(item, str)):
                    stack.append((item, depth + 1, (at, index), False))
        elif isinstance(current, str) and "\x00" in current:
            _refuse_nul(current, path, line, _field_path(loc, at))


def _refuse_nul(text: str, path: str, line: int | None, field_: str) -> None:
    textio.check_text(text, path, line, field_, InvalidTraceSource)


def _field_path(loc: str, at: tuple[Any, ...]) -> str:
    """The field a walk reached, as the trace readers name fields: ``loc.key[index].key``; an item
    of a top-level list is ``record i``, as :func:`list_items` names it."""
    steps: list[Any] = []
    while at:
        at, step = at
        steps.append(step)
    out = loc
    for step in reversed(steps):
        if isinstance(step, int):
            out = f"{out}[{step}]" if out else f"record {step}"
        else:
            name = textio.field_label(str(step).replace("\x00", "\\u0000"))
            out = f"{out}.{name}" if out else name
    return out or "the file's value"


def _is_parquet(path: str) -> bool:
    try:
        with open(path, "rb") as handle:
            return handle.read(4) == b"PAR1"
    except OSError:
        return False


def _parquet_rows(path: str) -> list[dict[str, Any]]:
    """The rows of a Parquet file, refused before any row becomes Python objects when the file, its
    metadata's row count, or its decoded size (its pages uncompressed, its dictionaries expanded)
    is over the limits: a few KB of dictionary-encoded rows can hold millions of rows or gigabytes."""
    require_file(path)
    textio.check_file_size(path, InvalidTraceSource)
    limit = textio.limits()
    push = textio.push_bound()
    try:
        with pq.ParquetFile(path) as parquet:
            meta = parquet.metadata
            if push is not None and meta.num_rows > push.rows:
                _too_big_push(
                    path, f"{meta.num_rows:,} rows (its metadata says)", f"{push.rows:,} rows", push
                )
            if meta.num_rows > limit.rows:
                _too_big(
                    path,
                    f"{meta.num_rows:,} rows (its metadata says)",
                    f"{limit.rows:,}",
                    textio.MAX_ROWS_ENV,
                )
            size = sum(
                meta.row_group(g).column(c).total_uncompressed_size
                for g in range(meta.num_row_groups)
                for c in range(meta.num_columns)
            )
            texts = [f.name for f in parquet.schema_arrow if _is_text(f.type)]
        if push is not None and size > push.text_bytes:
            _too_big_push(
                path,
                f"{size:,} bytes uncompressed (its metadata says)",
                textio.size_text(push.text_bytes),
                push,
            )
        if size > limit.file_bytes:
            _too_big(
                path,
                f"{size:,} bytes uncompressed (its metadata says)",
                textio.size_text(limit.file_bytes),
                textio.MAX_FILE_BYTES_ENV,
            )
        with pq.ParquetFile(path, read_dictionary=texts) as parquet:  # dictionaries kept: measured first
            table = parquet.read()
    except (pa.ArrowException, OSError) as exc:
        raise InvalidTraceSource(path, None, None, f"not a readable Parquet file ({exc})") from None
    decoded = sum(_expanded_bytes(table[name]) for name in texts)
    if push is not None and decoded > push.text_bytes:
        _too_big_push(
            path,
            f"{decoded:,} bytes of text once its dictionaries are expanded",
            textio.size_text(push.text_bytes) + " of text",
            push,
        )
    if decoded > limit.file_bytes:
        _too_big(
            path,
            f"{decoded:,} bytes of text once its dictionaries are expanded",
            textio.size_text(limit.file_bytes),
            textio.MAX_FILE_BYTES_ENV,
        )
    records: list[dict[str, Any]] = table.to_pylist()
    return records


def _is_text(kind: pa.DataType) -> bool:
    if pa.types.is_dictionary(kind):
        kind = kind.value_type
    text: bool = pa.types.is_string(kind) or pa.types.is_large_string(kind) or pa.types.is_binary(kind)
    return text


def _expanded_bytes(column: pa.ChunkedArray) -> int:
    """The bytes a text column takes once each row holds its own copy of its value."""
    total = 0
    for chunk in column.chunks:
        if isinstance(chunk, pa.DictionaryArray):
            lengths = pc.fill_null(pc.binary_length(chunk.dictionary), 0)
            total += pc.sum(pc.take(lengths, chunk.indices)).as_py() or 0
        else:
            total += chunk.nbytes
    return total


def _too_big(path: str, what: str, most: str, env: str) -> None:
    raise InvalidTraceSource(
        path,
        None,
        None,
        f"{what}; the readers take at most {most} (set {env} to raise the limit)",
    )


def _too_big_push(path: str, what: str, most: str, push: textio.PushBound) -> None:
    raise InvalidTraceSource(
        path,
        None,
        None,
        f"{what}; a file pushed over HTTP takes at most {most} (from its limit of "
        f"{textio.size_text(push.body_bytes)} a push: set {push.setting} to raise it, "
        "or import the file with python -m annotation import)",
    )


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
