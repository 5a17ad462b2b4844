"""The CSV tables of ``calibration agree|position|ppi`` (and ``plan``'s pilot): a header, then
one row a line, read as every reader reads its bytes (:func:`read_csv_rows`); the same table as
columns, read by Arrow when the file is plain (:func:`read_csv_columns`); a column read as finite
numbers (:func:`csv_numbers`). Bad input is :class:`~annotation.model.InvalidTable`.
"""

from __future__ import annotations

import csv
import io
import math
import os
import re
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.csv as pcsv

import annotation.arrow_compute as pc
from annotation.formats.textio import NUMBER_PATTERN, clip_text, read_text_file, require_file, shown_value
from annotation.model import InvalidTable, as_numpy

if TYPE_CHECKING:
    from numpy.typing import NDArray

__all__ = ["CsvColumns", "read_csv_columns", "read_csv_rows", "csv_numbers"]


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


class CsvColumns:
    """A CSV table as columns: ``header``, ``columns`` ({name: Arrow strings, stripped}) and
    ``lines`` (the file's line of each row), as :func:`read_csv_rows` reads it."""

    def __init__(self, header: list[str], columns: dict[str, pa.Array], lines: NDArray[np.int64]) -> None:
        self.header, self.columns, self.lines = header, columns, lines

    def __len__(self) -> int:
        return len(self.lines)

    def encoded(self, column: str) -> tuple[list[str], NDArray[np.int64]]:
        """The column's distinct values (in the order they first appear) and each row's position among them."""
        codes = pc.dictionary_encode(self.columns[column])
        return codes.dictionary.to_pylist(), as_numpy(codes.indices).astype(np.int64)  # as_numpy: no pandas

    def rows(self) -> list[tuple[int, dict[str, str]]]:
        """(line, row) of every row, as :func:`read_csv_rows` gives them."""
        values = [self.columns[name].to_pylist() for name in self.header]
        return [(line, dict(zip(self.header, row))) for line, row in zip(self.lines.tolist(), zip(*values))]


# a field that begins or ends with white space (stripped by read_csv_rows), line ends aside
_PADDED = re.compile(r"(?:^|,)[^\S\r\n]|[^\S\r\n](?:,|\r?$)", re.MULTILINE)
_ASCII_SPACE = (" ", "\t", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x1f")


def _plain(text: str) -> bool:
    """Text whose CSV is one row a line, fields as they stand: no quote, no blank line, no field
    padded with white space."""
    if '"' in text or "\n\n" in text or "\n\r\n" in text or text.startswith(("\n", "\r")):
        return False
    if text.isascii() and not any(space in text for space in _ASCII_SPACE):
        return True
    return _PADDED.search(text) is None


def read_csv_columns(
    path: str | os.PathLike[str], required: list[str], optional: tuple[str, ...] = ()
) -> CsvColumns:
    """:func:`read_csv_rows`'s table as columns. A plain file (one row a line: no quote, no blank
    line, no value padded with white space) is parsed by Arrow's CSV reader; any other file, and any
    file Arrow or the checks refuse, by :func:`read_csv_rows`, so a bad file gets its errors, word
    for word. Raises :class:`InvalidTable`."""
    require_file(path, InvalidTable)
    text = read_text_file(path, InvalidTable)
    if _plain(text):
        end = text.find("\n")
        header = [h.strip() for h in (text if end < 0 else text[:end]).removesuffix("\r").split(",")]
        if all(c in header for c in required) and all(header) and len(set(header)) == len(header):
            try:
                table = pcsv.read_csv(
                    io.BytesIO(text[end + 1 :].encode("utf-8") if end >= 0 else b""),
                    read_options=pcsv.ReadOptions(column_names=header, use_threads=False),
                    parse_options=pcsv.ParseOptions(quote_char=False, ignore_empty_lines=False),
                    convert_options=pcsv.ConvertOptions(
                        column_types=dict.fromkeys(header, pa.string()), strings_can_be_null=False
                    ),
                )
            except (pa.ArrowInvalid, ValueError):
                table = None
            if table is not None and table.num_rows and table.column_names == header:
                columns = {name: table.column(name).combine_chunks() for name in header}
                empty = [
                    c
                    for c in required
                    if c not in ("label", "choice") and pc.any(pc.equal(columns[c], "")).as_py()
                ]
                if not empty:
                    return CsvColumns(header, columns, np.arange(2, table.num_rows + 2, dtype=np.int64))
    rows = read_csv_rows(path, required, optional)
    header = list(rows[0][1])
    columns = {name: pa.array([row[name] for _line, row in rows], pa.string()) for name in header}
    return CsvColumns(header, columns, np.array([line for line, _row in rows], dtype=np.int64))
