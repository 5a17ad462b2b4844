"""The CSV tables of ``calibration agree|position|ppi`` (and ``plan``'s pilot): a header, then
one row a line, read as every reader reads its bytes (:func:`read_csv_rows`); a column read as
finite numbers (:func:`csv_numbers`). Bad input is :class:`~annotation.model.InvalidTable`.
"""

from __future__ import annotations

import csv
import io
import math
import os

from annotation.formats.textio import NUMBER_PATTERN, clip_text, read_text_file, require_file, shown_value
from annotation.model import InvalidTable

__all__ = ["read_csv_rows", "csv_numbers"]


def read_csv_rows(
    path: str | os.PathLike[str], required: list[str], optional: tuple[str, ...] = ()
) -> list[tuple[int, dict[str, str]]]:
    """(line, row) of a CSV with a header; one clear line naming file, line and column otherwise.

    The bytes are checked as every reader checks them (UTF-8, no NUL, no lone
    CR; a UTF-8 byte order mark, as Excel writes, is dropped); every row has
    as many fields as the header; values are stripped; a required column
    other than ``label`` and ``choice`` may not be empty; blank lines are
    skipped; line numbers are the file's lines, a quoted field over several
    lines included. Raises :class:`InvalidTable`.
    """
    require_file(path, InvalidTable)
    text = read_text_file(path, InvalidTable)
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    expected = f"the columns {','.join(required)}" + (f"[,{','.join(optional)}]" if optional else "")
    done = 0  # the last line read so far: a row starts on the next one
    try:
        header = [h.strip() for h in next(reader, [])]
        done = reader.line_num
        missing = [c for c in required if c not in header]
        if missing:
            shown = clip_text(",".join(header)) if any(header) else "(empty)"
            raise InvalidTable(path, 1, None, f"header {shown}; expected {expected}")
        twice = next((h for i, h in enumerate(header) if h and h in header[:i]), None)
        if twice is not None:
            raise InvalidTable(
                path, 1, None, f"header names the column {twice!r} twice; expected {expected}, each once"
            )
        rows = []
        for fields in reader:
            number, done = done + 1, reader.line_num
            if not fields:  # a blank line
                continue
            if len(fields) != len(header):
                raise InvalidTable(
                    path,
                    number,
                    None,
                    f"{len(fields)} fields; expected {len(header)}, as the header {clip_text(','.join(header))} has",
                )
            row = {column: value.strip() for column, value in zip(header, fields)}
            for column in required:
                if row[column] == "" and column not in ("label", "choice"):
                    raise InvalidTable(path, number, column, "empty; expected a value")
            rows.append((number, row))
    except csv.Error as exc:
        raise InvalidTable(path, done + 1, None, f"not valid CSV ({exc}); expected {expected}") from None
    if not rows:
        raise InvalidTable(path, None, None, "no rows after the header")
    return rows


def csv_numbers(
    path: str | os.PathLike[str], rows: list[tuple[int, dict[str, str]]], column: str
) -> list[float]:
    """The column as finite numbers, written as trec_eval writes them (ASCII digits, no 1_000)."""
    out = []
    for number, row in rows:
        raw = row[column]
        value = float(raw) if NUMBER_PATTERN.fullmatch(raw) else None
        if value is None or not math.isfinite(value):
            raise InvalidTable(
                path,
                number,
                column,
                f"{shown_value(raw)} is not a finite number; expected a number such as 0, 1 or 0.5",
            )
        out.append(value)
    return out
