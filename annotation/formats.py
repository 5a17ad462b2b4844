"""Read, validate and write the exchange formats: TREC qrels, TREC runs,
JSONL rankings and golden.yaml.

Every reader is strict: bad input raises a subclass of :class:`FormatError`
whose message names the file, the line and the field and says what was
expected. Nothing is coerced silently ("001" stays "001": ids are text).
Lines end at LF (CRLF is fine); TREC fields are separated by ASCII whitespace
only, as trec_eval splits them; a leading UTF-8 byte order mark is dropped.

TREC qrels   ``qid iter docid grade``, whitespace separated; grade an integer
             (negative = judged, never relevant, as in trec_eval). Lines that
             start with ``#`` are comments (trec_eval 9.0.8 accepts them).
TREC run     ``qid Q0 docid rank score tag``; anything after the tag is
             ignored, as trec_eval ignores it. The rank column must be an
             integer but is never used to order: trec_eval orders by score
             descending, ties by docid descending (bytewise).
JSONL        ``{"query_id": "q1", "ranking": ["d3", "d1", ...]}`` one object
rankings     per line, best first.
golden.yaml  ``queries: [{id, text, grades: {doc_id: grade}}]`` plus metadata
             (``grade_scale`` with the wording of each grade, ``judged_by``,
             ``shown``, ``created``).
"""

from __future__ import annotations

import json
import math
import mmap
import os
import re
import stat
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pcsv
import yaml

__all__ = [
    "FormatError",
    "InvalidQrels",
    "InvalidRun",
    "InvalidRankings",
    "InvalidGolden",
    "InvalidCorpus",
    "Qrels",
    "Run",
    "read_qrels",
    "read_golden",
    "read_judgments",
    "read_run",
    "read_rankings",
    "read_ranked",
    "read_corpus_ids",
    "write_qrels",
    "write_golden",
    "write_run",
    "write_rankings",
    "DEFAULT_GRADE_SCALE",
]

# The project's own wording of TREC's 0-3 relevance scale (DESIGN.md).
DEFAULT_GRADE_SCALE: dict[int, str] = {
    0: "irrelevant: nothing to do with the query",
    1: "related: on the topic, but no answer in it",
    2: "highly relevant: holds some of the answer, perhaps unclear or buried",
    3: "perfectly relevant: devoted to the query, holds the exact answer",
}


class FormatError(ValueError):
    """Bad input: says which file, line and field, and what was expected."""

    kind = "input"

    def __init__(self, path: str | os.PathLike, line: int | None, field_: str | None, message: str):
        self.path = str(path)
        self.line = line
        self.field = field_
        self.message = message
        where = self.path if line is None else f"{self.path}:{line}"
        what = f"{field_}: {message}" if field_ else message
        super().__init__(f"{where}: {what}")


class InvalidQrels(FormatError):
    kind = "qrels"


class InvalidRun(FormatError):
    kind = "run"


class InvalidRankings(FormatError):
    kind = "rankings"


class InvalidGolden(FormatError):
    kind = "golden.yaml"


class InvalidCorpus(FormatError):
    kind = "corpus"


class Qrels:
    """Judgments: ``grades[qid][docid] = grade`` plus what golden.yaml adds.

    Built from a dict (golden.yaml, the line reader, code) or from the
    columnar reader's table (q, d, g); each form is made from the other on
    first use, so the batch engine never pays for a dict of dicts.
    """

    def __init__(
        self,
        grades: dict[str, dict[str, int]] | None = None,
        texts: dict[str, str] | None = None,
        meta: dict[str, Any] | None = None,
        path: str = "",
        table: pa.Table | None = None,
    ) -> None:
        if grades is None and table is None:
            raise ValueError("Qrels needs grades or a table")
        self._grades = grades
        self._table = table  # one row per distinct (q, d)
        self.texts = texts if texts is not None else {}
        self.meta = meta if meta is not None else {}
        self.path = path

    def __repr__(self) -> str:
        return f"Qrels(path={self.path!r}, judgments={self.n_judgments})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Qrels):
            return NotImplemented
        return (self.grades, self.texts, self.meta, self.path) == (
            other.grades,
            other.texts,
            other.meta,
            other.path,
        )

    __hash__ = None  # type: ignore[assignment]  # mutable, like the dataclass it was

    @property
    def grades(self) -> dict[str, dict[str, int]]:
        if self._grades is None:
            grades: dict[str, dict[str, int]] = {}
            table = self._table
            for qid, doc, grade in zip(
                table["q"].to_pylist(), table["d"].to_pylist(), table["g"].to_pylist()
            ):
                grades.setdefault(qid, {})[doc] = grade
            self._grades = grades
        return self._grades

    @property
    def qids(self) -> list[str]:
        """Query ids in file order (a golden.yaml query may have no grades)."""
        if self._grades is not None:
            return list(self._grades)
        return pc.unique(self._table["q"]).to_pylist()

    @property
    def n_judgments(self) -> int:
        if self._table is not None:
            return self._table.num_rows
        return sum(len(g) for g in self.grades.values())

    def to_table(self) -> pa.Table:
        """Columnar form (q, d, g) for the batch engine."""
        if self._table is None:
            q: list[str] = []
            d: list[str] = []
            g: list[int] = []
            for qid, docs in self.grades.items():
                q.extend([qid] * len(docs))
                d.extend(docs.keys())
                g.extend(docs.values())
            self._table = pa.table(
                {"q": pa.array(q, pa.string()), "d": pa.array(d, pa.string()), "g": pa.array(g, pa.int64())}
            )
        return self._table


@dataclass
class Run:
    """A retriever's output, columnar: one row per (query, document, score).

    Order is decided by score (descending, ties by docid descending,
    bytewise), never by the file's line order or rank column. JSONL rankings
    get scores ``n, n-1, ..., 1`` so the same rule keeps their order.
    """

    table: pa.Table  # columns q (string), d (string), s (float64)
    name: str = "run"
    path: str = ""
    # queries the run answered with nothing (a JSONL ranking []): they were
    # asked, so they count as retrieving nothing, not as missing from the run
    empty_queries: list[str] = field(default_factory=list)

    @property
    def n_rows(self) -> int:
        return self.table.num_rows

    def rankings(self) -> dict[str, list[str]]:
        """Per query, docids in trec_eval order (duplicates kept). Reference path."""
        out = {qid: [doc for doc, _ in rows] for qid, rows in self.ordered_rows().items()}
        for qid in self.empty_queries:
            out.setdefault(qid, [])
        return out

    def ordered_rows(self) -> dict[str, list[tuple[str, float]]]:
        """Per query, (docid, score) in trec_eval order: score descending, ties by
        docid descending (bytewise); duplicates kept."""
        q = self.table["q"].to_pylist()
        d = self.table["d"].to_pylist()
        s = self.table["s"].to_pylist()
        by_query: dict[str, list[tuple[float, bytes, str]]] = {}
        for qid, doc, score in zip(q, d, s):
            by_query.setdefault(qid, []).append((score, doc.encode("utf-8"), doc))
        return {
            qid: [(doc, score) for score, _, doc in sorted(rows, key=lambda r: (r[0], r[1]), reverse=True)]
            for qid, rows in by_query.items()
        }

    @classmethod
    def from_rankings(cls, rankings: dict[str, list[str]], name: str = "run") -> Run:
        q: list[str] = []
        d: list[str] = []
        s: list[float] = []
        for qid, docs in rankings.items():
            n = len(docs)
            q.extend([qid] * n)
            d.extend(docs)
            s.extend(float(n - i) for i in range(n))
        table = pa.table(
            {"q": pa.array(q, pa.string()), "d": pa.array(d, pa.string()), "s": pa.array(s, pa.float64())}
        )
        empty = [qid for qid, docs in rankings.items() if not docs]
        return cls(table=table, name=name, empty_queries=empty)


# ---------------------------------------------------------------- raw bytes


_BOM = b"\xef\xbb\xbf"
# What separates fields in TREC files: ASCII whitespace only (trec_eval splits
# with C's isspace), so a non-breaking space or U+2028 stays inside an id.
_ASCII_SPACE = " \t\n\r\f\v"
_TOKEN = re.compile(r"[^ \t\n\r\f\v]+")
_INT_RE = r"[+-]?[0-9]+"
_NUMBER_RE = r"[+-]?(?:(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|(?i:inf|infinity|nan))"
_INT = re.compile(_INT_RE)
_NUMBER = re.compile(_NUMBER_RE)
_INT64 = (-(2**63), 2**63 - 1)


def _read_text(path: str | os.PathLike, error: type[FormatError]) -> str:
    """Whole file as text; refuses missing, empty, binary and non-UTF-8 files.

    A leading UTF-8 byte order mark is dropped (Windows editors write one).
    """
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        raise error(path, None, None, "no such file; expected a readable file") from None
    except IsADirectoryError:
        raise error(path, None, None, "is a directory; expected a file") from None
    except PermissionError:
        raise error(path, None, None, "permission denied; expected a readable file") from None
    except OSError as exc:
        raise error(path, None, None, f"cannot be read ({exc.strerror}); expected a readable file") from None
    data = data.removeprefix(_BOM)
    _check_bytes(path, data, error)
    return data.decode("utf-8")


def _require_file(path: str | os.PathLike, error: type[FormatError]) -> None:
    """Refuse what is not a regular file before any reader touches it: a pipe
    or process substitution can be read only once, and the columnar readers
    may need a second look."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        raise error(path, None, None, "no such file; expected a readable file") from None
    except OSError as exc:
        raise error(path, None, None, f"cannot be read ({exc.strerror}); expected a readable file") from None
    if stat.S_ISDIR(mode):
        raise error(path, None, None, "is a directory; expected a file")
    if not stat.S_ISREG(mode):
        raise error(path, None, None, "is not a regular file (a pipe or a device?); expected a file on disk")


def _check_text(
    value: str, path: str | os.PathLike, line: int | None, field_: str, error: type[FormatError]
) -> None:
    """JSON and YAML escapes can spell a lone surrogate (\\ud800), which no UTF-8 file can hold."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        bad = ord(value[exc.start])
        raise error(
            path, line, field_, f"holds the lone surrogate U+{bad:04X}; expected text that UTF-8 can encode"
        ) from None


def _check_bytes(path: str | os.PathLike, data: bytes, error: type[FormatError]) -> None:
    if not data.strip():
        raise error(path, None, None, "file is empty; expected at least one line")
    nul = data.find(b"\x00")
    if nul >= 0:
        line = data.count(b"\n", 0, nul) + 1
        raise error(path, line, None, "NUL byte: this looks like a binary file; expected UTF-8 text")
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise error(
            path, line, None, f"byte 0x{data[exc.start]:02x} is not UTF-8; expected UTF-8 text"
        ) from None
    lone_cr = _LONE_CR.search(data)
    if lone_cr:
        line = data.count(b"\n", 0, lone_cr.start()) + 1
        raise error(
            path,
            line,
            None,
            "carriage return inside a line (old Mac line ends?); expected LF or CRLF line ends",
        )


_LONE_CR = re.compile(rb"\r(?!\n)")


def _numbered_lines(text: str) -> Iterable[tuple[int, str]]:
    """(line number, line) split on LF only, so numbers match the byte checks.

    str.splitlines() would also break at U+2028, U+0085, form feeds and more,
    which trec_eval, pyarrow and JSON all treat as ordinary characters.
    """
    for number, line in enumerate(text.split("\n"), start=1):
        yield number, line.removesuffix("\r")


def _lines(text: str) -> Iterable[tuple[int, list[str]]]:
    """(line number, whitespace-split fields) for each non-blank, non-comment line."""
    for number, line in _numbered_lines(text):
        fields = _TOKEN.findall(line)
        if not fields or fields[0].startswith("#"):
            continue
        yield number, fields


def _parse_int(value: str) -> int | None:
    """A decimal integer as trec_eval writes it; no 0x, no 1_000, no unicode digits."""
    if not _INT.fullmatch(value):
        return None
    return int(value)


def _has_space(value: str) -> bool:
    return any(ch in _ASCII_SPACE for ch in value)


def _check_trec_id(value: Any, path: str | os.PathLike, what: str, error: type[FormatError]) -> None:
    """Writers refuse ids that would read back differently (split, or taken as a comment)."""
    if (
        not isinstance(value, str)
        or not value
        or _has_space(value)
        or (what == "qid" and value.startswith("#"))
    ):
        raise error(
            path,
            None,
            what,
            f"{value!r} cannot be written as a TREC column; expected a non-empty string "
            "without spaces" + (" that does not start with '#'" if what == "qid" else ""),
        )


# ---------------------------------------------------------------- qrels


def read_qrels(path: str | os.PathLike, scale: tuple[int, int] | None = None) -> Qrels:
    """TREC qrels ``qid iter docid grade``.

    ``scale=(lo, hi)`` also refuses grades outside lo..hi (negative grades
    are always allowed: trec_eval reads them as judged, not relevant).
    """
    _require_file(path, InvalidQrels)
    fast = _fast_qrels(path, scale)
    if fast is not None:
        return fast
    return _slow_qrels(path, scale)


def _slow_qrels(path: str | os.PathLike, scale: tuple[int, int] | None = None) -> Qrels:
    """Line-by-line reader: the reference, and the one that names a bad line."""
    text = _read_text(path, InvalidQrels)
    grades: dict[str, dict[str, int]] = {}
    first_line: dict[tuple[str, str], int] = {}
    for number, fields in _lines(text):
        if len(fields) != 4:
            raise InvalidQrels(
                path,
                number,
                None,
                f"expected 4 columns (qid iter docid grade), got {len(fields)}",
            )
        qid, _iter, doc, raw_grade = fields
        grade = _parse_int(raw_grade)
        if grade is None:
            raise InvalidQrels(path, number, "grade", f"expected an integer, got {raw_grade!r}")
        if not _INT64[0] <= grade <= _INT64[1]:
            raise InvalidQrels(
                path, number, "grade", f"expected an integer that fits in 64 bits, got {raw_grade!r}"
            )
        if scale is not None and grade >= 0 and not scale[0] <= grade <= scale[1]:
            raise InvalidQrels(
                path,
                number,
                "grade",
                f"expected a grade in the scale {scale[0]}-{scale[1]} (or negative), got {grade}",
            )
        docs = grades.setdefault(qid, {})
        if doc in docs:
            if docs[doc] != grade:
                raise InvalidQrels(
                    path,
                    number,
                    "grade",
                    f"query {qid!r} document {doc!r} graded {grade} here and "
                    f"{docs[doc]} on line {first_line[(qid, doc)]}; expected one grade per pair",
                )
            continue
        docs[doc] = grade
        first_line[(qid, doc)] = number
    if not grades:
        raise InvalidQrels(
            path,
            None,
            None,
            "no judgments, only comments or blank lines; expected lines 'qid iter docid grade'",
        )
    return Qrels(grades=grades, path=str(path))


def _fast_qrels(path: str | os.PathLike, scale: tuple[int, int] | None) -> Qrels | None:
    """Columnar read of a clean qrels file; None sends it to the line reader."""
    table = _fast_table(path, ["q", "i", "d", "g"], int_columns=("g",), number_columns=())
    if table is None:
        return None
    grades_col = as_numpy(table["g"])
    if scale is not None and ((grades_col >= 0) & ((grades_col < scale[0]) | (grades_col > scale[1]))).any():
        return None
    # one grade per (query, doc): identical repeats collapse, conflicts go to
    # the line reader, which names both lines
    pairs = pa.table({"q": table["q"], "d": table["d"], "g": table["g"]}).combine_chunks()
    distinct = len(pc.unique(pc.binary_join_element_wise(pairs["q"], pairs["d"], "\x00")))
    if distinct != pairs.num_rows:
        grades: dict[str, dict[str, int]] = {}
        for qid, doc, grade in zip(pairs["q"].to_pylist(), pairs["d"].to_pylist(), pairs["g"].to_pylist()):
            if grades.setdefault(qid, {}).setdefault(doc, grade) != grade:
                return None
        return Qrels(grades=grades, path=str(path))
    return Qrels(table=pairs, path=str(path))


_NOT_SIMPLE = object()
_ODD_BYTES = (b"\t", b"\x00", b"\r", b"\x0b", b"\x0c")
_INT_BYTES = np.zeros(256, dtype=bool)
_INT_BYTES[list(b"0123456789-")] = True  # no '+': Arrow refuses "+1", the line reader takes it


def _has_odd_bytes(path: str | os.PathLike) -> bool:
    """A BOM, or a byte the lean reader leaves to others: TAB, NUL, CR, VT, FF
    (memchr over a memory map: a few GB/s)."""
    try:
        with open(path, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
            return mm[:3] == _BOM or any(mm.find(byte) >= 0 for byte in _ODD_BYTES)
    except (OSError, ValueError):  # ValueError: mmap of an empty file
        return True


def _simple_table(
    path: str | os.PathLike,
    names: list[str],
    int_columns: tuple[str, ...],
    number_columns: tuple[str, ...],
) -> pa.Table | None | object:  # object: _NOT_SIMPLE
    """The common file, read lean: fields separated by single spaces, no
    tabs, CRs or other odd bytes (checked by a scan beside the read).

    Arrow reads every field (so each is seen and UTF-8 checked), ids and
    words as text, scores as doubles (inside what a score can hold, Arrow's
    number syntax and the line reader's agree; a NaN goes to the line
    reader). An empty field (two spaces in a row, a space at either end of
    a line) shows as an empty value and sends the file on; integer columns
    are checked byte by byte, then cast.

    Returns the table, or None (the line reader must judge), or _NOT_SIMPLE
    (the general columnar path may still read it).
    """
    types = {name: pa.float64() if name in number_columns else pa.string() for name in names}
    with ThreadPoolExecutor(max_workers=1) as pool:
        odd = pool.submit(_has_odd_bytes, path)
        try:
            table = pcsv.read_csv(
                path,
                read_options=pcsv.ReadOptions(column_names=names, block_size=1 << 21),
                parse_options=pcsv.ParseOptions(
                    delimiter=" ", quote_char=False, escape_char=False, double_quote=False
                ),
                convert_options=pcsv.ConvertOptions(
                    column_types=types,
                    strings_can_be_null=False,
                    quoted_strings_can_be_null=False,
                    null_values=[],
                ),
            )
        except (pa.ArrowInvalid, pa.ArrowTypeError, OSError):
            table = None
        if odd.result() or table is None or table.num_rows == 0:
            return _NOT_SIMPLE
    out: dict[str, pa.ChunkedArray] = {}
    for name in names:
        column = table[name]
        if name in number_columns:
            if pc.any(pc.is_nan(column)).as_py():
                return None  # a NaN score cannot be ordered: the line reader names it
            out[name] = column
            continue
        if any(_has_empty(chunk) for chunk in column.chunks):
            return _NOT_SIMPLE
        if name in int_columns:
            if not all(_bytes_in(chunk, _INT_BYTES) for chunk in column.chunks):
                return _NOT_SIMPLE
            try:
                column = pc.cast(column, pa.int64())
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
                return None  # "1-2", "-" or beyond 64 bits: the line reader names it
            if name == "g":
                out[name] = column
        elif name in (names[0], "d"):
            out[name] = column
        elif name == "t":
            out["t"] = column.chunk(0)[0].as_py()
    del table
    if pc.any(pc.starts_with(out[names[0]], "#")).as_py():
        return _NOT_SIMPLE
    tag = out.pop("t", None)
    result = pa.table(out)
    return result.replace_schema_metadata({"tag": tag}) if tag is not None else result


def _string_parts(chunk: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """(offsets, data bytes) of a string chunk, as numpy views."""
    offsets = np.frombuffer(chunk.buffers()[1], dtype=np.int32)[chunk.offset : chunk.offset + len(chunk) + 1]
    data = chunk.buffers()[2]
    return offsets, (np.frombuffer(data, dtype=np.uint8) if data is not None else np.zeros(0, np.uint8))


def _has_empty(chunk: pa.Array) -> bool:
    """Any empty string in the chunk (two equal offsets in a row)."""
    if len(chunk) == 0:
        return False
    offsets, _ = _string_parts(chunk)
    return bool((offsets[1:] == offsets[:-1]).any())


def _bytes_in(chunk: pa.Array, allowed: np.ndarray) -> bool:
    """Every byte of a string chunk's values is in the ``allowed`` class."""
    if len(chunk) == 0:
        return True
    offsets, data = _string_parts(chunk)
    return bool(allowed[data[offsets[0] : offsets[-1]]].all())


def _fast_table(
    path: str | os.PathLike,
    names: list[str],
    int_columns: tuple[str, ...],
    number_columns: tuple[str, ...],
) -> pa.Table | None:
    """Arrow read of a clean, single-delimiter TREC file, or None.

    None whenever the line reader might read the file differently; the line
    reader then accepts it or names the bad line. Every column is read as
    text and numbers are checked with the line reader's own patterns, because
    Arrow alone would take "0x10" as 16 or keep a space inside an id.
    """
    simple = _simple_table(path, names, int_columns, number_columns)
    if simple is not _NOT_SIMPLE:
        return simple
    try:
        data = Path(path).read_bytes()
    except OSError:
        return None
    if not data.strip() or data.startswith(_BOM):
        return None
    if any(ch in data for ch in (b"\x00", b"\r", b"\x0b", b"\x0c")):
        return None
    tab = b"\t" in data
    try:
        table = pcsv.read_csv(
            pa.BufferReader(data),
            read_options=pcsv.ReadOptions(column_names=names, block_size=1 << 24),
            parse_options=pcsv.ParseOptions(
                delimiter="\t" if tab else " ", quote_char=False, escape_char=False, double_quote=False
            ),
            convert_options=pcsv.ConvertOptions(
                column_types={name: pa.string() for name in names},
                strings_can_be_null=False,
                quoted_strings_can_be_null=False,
                null_values=[],
            ),
        )
    except (pa.ArrowInvalid, pa.ArrowTypeError, UnicodeDecodeError, OSError):
        return None
    if table.num_rows == 0:
        return None
    # spaces can only be inside a field when tabs separate them: numbers may
    # be padded (trec_eval's results.test is), ids and words may not
    pad = " *" if tab else ""
    out: dict[str, pa.Array] = {}
    for name in names:
        column = table[name].combine_chunks()
        if name in int_columns or name in number_columns:
            pattern = _INT_RE if name in int_columns else _NUMBER_RE
            if not pc.all(pc.match_substring_regex(column, f"^{pad}(?:{pattern}){pad}$")).as_py():
                return None
            trimmed = pc.utf8_trim(column, " ") if tab else column
            try:
                column = pc.cast(trimmed, pa.int64() if name in int_columns else pa.float64())
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
                return None  # e.g. a grade beyond 64 bits: the line reader says so
            if name in number_columns and pc.any(pc.is_nan(column)).as_py():
                return None  # a NaN score cannot be ordered: the line reader names it
        else:
            if pc.min(pc.utf8_length(column)).as_py() == 0:
                return None  # a doubled delimiter or a trailing one
            if tab and pc.any(pc.match_substring(column, " ")).as_py():
                return None
        out[name] = column
    if pc.any(pc.starts_with(out[names[0]], "#")).as_py():
        return None  # comment lines: the line reader skips them
    return pa.table(out)


def write_qrels(qrels: Qrels, path: str | os.PathLike) -> None:
    """TREC qrels, queries and documents in their stored order, iter 0."""
    lines = []
    for qid, docs in qrels.grades.items():
        _check_trec_id(qid, path, "qid", InvalidQrels)
        for doc, grade in docs.items():
            _check_trec_id(doc, path, "docid", InvalidQrels)
            lines.append(f"{qid} 0 {doc} {int(grade)}\n")
    _write_atomic(path, "".join(lines))


# ---------------------------------------------------------------- golden.yaml

_GOLDEN_TOP_KEYS = {
    "name",
    "description",
    "grade_scale",
    "judged_by",
    "shown",
    "created",
    "min_grade",
    "queries",
    "sampling",
}


def read_golden(path: str | os.PathLike) -> Qrels:
    """golden.yaml: ``queries: [{id, text, grades: {doc: grade}}]`` plus metadata.

    Only plain YAML is read (no tags, no aliases); every error names the line.
    """
    _require_file(path, InvalidGolden)
    text = _read_text(path, InvalidGolden)
    try:
        _refuse_aliases_and_tags(path, text)
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as exc:
        raise InvalidGolden(
            path,
            _yaml_error_line(exc, text),
            None,
            f"not valid YAML ({_yaml_problem(exc)}); expected a mapping with a 'queries' list",
        ) from None
    except RecursionError:
        raise InvalidGolden(
            path, None, None, "nested too deeply; expected a mapping with a 'queries' list"
        ) from None
    if root is None:
        raise InvalidGolden(path, None, None, "no YAML content; expected a mapping with a 'queries' list")
    if not isinstance(root, yaml.MappingNode):
        got = "a list" if isinstance(root, yaml.SequenceNode) else f"{root.value!r}"
        raise InvalidGolden(
            path, _line(root), None, f"expected a mapping with a 'queries' list at the top, got {got}"
        )
    top = _mapping(path, root, "")
    for key, (knode, _v) in top.items():
        if key not in _GOLDEN_TOP_KEYS:
            raise InvalidGolden(
                path,
                _line(knode),
                key,
                f"unknown key; expected one of {', '.join(sorted(_GOLDEN_TOP_KEYS))}",
            )
    if "queries" not in top:
        raise InvalidGolden(path, None, "queries", "missing; expected a list of {id, text, grades}")
    meta: dict[str, Any] = {}
    scale = dict(DEFAULT_GRADE_SCALE)
    if "grade_scale" in top:
        scale = {}
        node = top["grade_scale"][1]
        for key, (_knode, vnode) in _mapping(path, node, "grade_scale", keys_as_int=True).items():
            scale[key] = _scalar_str(path, vnode, f"grade_scale.{key}")
        if not scale:
            raise InvalidGolden(path, _line(node), "grade_scale", "empty; expected grade: wording pairs")
    lo, hi = min(scale), max(scale)
    meta["grade_scale"] = scale
    for key in ("name", "description", "shown", "created"):
        if key in top:
            meta[key] = _scalar_str(path, top[key][1], key)
    if "judged_by" in top:
        node = top["judged_by"][1]
        if isinstance(node, yaml.SequenceNode):
            meta["judged_by"] = [_scalar_str(path, n, "judged_by") for n in node.value]
        else:
            meta["judged_by"] = [_scalar_str(path, node, "judged_by")]
    if "min_grade" in top:
        meta["min_grade"] = _scalar_int(path, top["min_grade"][1], "min_grade")
    if "sampling" in top:
        node = top["sampling"][1]
        try:
            meta["sampling"] = yaml.safe_load(yaml.serialize(node))
        except (yaml.YAMLError, ValueError, TypeError, OverflowError) as exc:
            # e.g. a date like 2024-13-45, or a bare '=' (YAML 1.1's value tag)
            problem = _yaml_problem(exc) if isinstance(exc, yaml.YAMLError) else str(exc)
            raise InvalidGolden(path, _line(node), "sampling", f"expected plain values ({problem})") from None

    qnode = top["queries"][1]
    if not isinstance(qnode, yaml.SequenceNode):
        raise InvalidGolden(path, _line(qnode), "queries", "expected a list of {id, text, grades}")
    grades: dict[str, dict[str, int]] = {}
    texts: dict[str, str] = {}
    id_line: dict[str, int] = {}
    for index, item in enumerate(qnode.value):
        where = f"queries[{index}]"
        if not isinstance(item, yaml.MappingNode):
            raise InvalidGolden(path, _line(item), where, "expected a mapping {id, text, grades}")
        fields = _mapping(path, item, where)
        for key, (knode, _v) in fields.items():
            if key not in ("id", "text", "grades", "notes"):
                raise InvalidGolden(
                    path, _line(knode), f"{where}.{key}", "unknown key; expected id, text, grades"
                )
        if "id" not in fields:
            raise InvalidGolden(path, _line(item), f"{where}.id", "missing; expected the query id")
        qid = _scalar_str(path, fields["id"][1], f"{where}.id")
        if not qid:
            raise InvalidGolden(path, _line(fields["id"][1]), f"{where}.id", "expected a non-empty query id")
        if qid in grades:
            raise InvalidGolden(
                path,
                _line(fields["id"][1]),
                f"{where}.id",
                f"query {qid!r} already given on line {id_line[qid]}; expected each id once",
            )
        id_line[qid] = _line(fields["id"][1])
        if "text" in fields:
            texts[qid] = _scalar_str(path, fields["text"][1], f"{where}.text")
        if "grades" not in fields:
            raise InvalidGolden(path, _line(item), f"{where}.grades", "missing; expected {doc_id: grade}")
        gnode = fields["grades"][1]
        if isinstance(gnode, yaml.ScalarNode) and gnode.tag.endswith(":null"):
            doc_grades: dict[str, int] = {}
        else:
            doc_grades = {}
            for doc, (knode, vnode) in _mapping(path, gnode, f"{where}.grades").items():
                if not doc:
                    raise InvalidGolden(
                        path, _line(knode), f"{where}.grades", "expected a non-empty document id"
                    )
                grade = _scalar_int(path, vnode, f"{where}.grades.{doc}")
                if grade >= 0 and not lo <= grade <= hi:
                    raise InvalidGolden(
                        path,
                        _line(vnode),
                        f"{where}.grades.{doc}",
                        f"expected a grade in the grade_scale {lo}-{hi} (or negative), got {grade}",
                    )
                doc_grades[doc] = grade
        grades[qid] = doc_grades
    if not grades:
        raise InvalidGolden(path, _line(qnode), "queries", "empty; expected at least one query")
    return Qrels(grades=grades, texts=texts, meta=meta, path=str(path))


def _line(node: yaml.Node) -> int:
    return node.start_mark.line + 1


_YAML_MAX_DEPTH = 64
_YAML_OPEN = (
    yaml.BlockMappingStartToken,
    yaml.BlockSequenceStartToken,
    yaml.FlowMappingStartToken,
    yaml.FlowSequenceStartToken,
)
_YAML_CLOSE = (yaml.BlockEndToken, yaml.FlowMappingEndToken, yaml.FlowSequenceEndToken)


def _refuse_aliases_and_tags(path: str | os.PathLike, text: str) -> None:
    """golden.yaml is plain YAML: an anchor, alias or tag (``!!python/object``)
    is refused before anything is built from the file, and so is deep nesting
    (PyYAML's scanner slows down quadratically with depth, its composer recurses)."""
    depth = 0
    for token in yaml.scan(text, Loader=yaml.SafeLoader):
        line = token.start_mark.line + 1
        if isinstance(token, _YAML_OPEN):
            depth += 1
            if depth > _YAML_MAX_DEPTH:
                raise InvalidGolden(
                    path,
                    line,
                    None,
                    f"nested more than {_YAML_MAX_DEPTH} levels deep; expected a mapping with a 'queries' list",
                )
        elif isinstance(token, _YAML_CLOSE):
            depth -= 1
        if isinstance(token, (yaml.AnchorToken, yaml.AliasToken)):
            sigil = "&" if isinstance(token, yaml.AnchorToken) else "*"
            raise InvalidGolden(
                path,
                line,
                None,
                f"YAML anchor or alias {sigil}{token.value} is not allowed; expected plain YAML, each value written out",
            )
        if isinstance(token, yaml.TagToken):
            handle, suffix = token.value
            raise InvalidGolden(
                path,
                line,
                None,
                f"YAML tag {(handle or '') + suffix} is not allowed; expected plain YAML (no tags)",
            )


def _yaml_problem(exc: yaml.YAMLError) -> str:
    problem = getattr(exc, "problem", None)
    if problem:
        return str(problem)
    lines = str(exc).splitlines()
    return lines[0] if lines else type(exc).__name__


def _yaml_error_line(exc: yaml.YAMLError, text: str) -> int | None:
    mark = getattr(exc, "problem_mark", None)
    if mark is not None:
        return mark.line + 1
    position = getattr(exc, "position", None)  # ReaderError: a character YAML refuses
    if isinstance(position, int):
        return text.count("\n", 0, position) + 1
    return None


def _mapping(
    path: str | os.PathLike, node: yaml.Node, where: str, keys_as_int: bool = False
) -> dict[Any, tuple[yaml.Node, yaml.Node]]:
    if not isinstance(node, yaml.MappingNode):
        raise InvalidGolden(path, _line(node), where, "expected a mapping")
    out: dict[Any, tuple[yaml.Node, yaml.Node]] = {}
    for knode, vnode in node.value:
        if not isinstance(knode, yaml.ScalarNode):
            raise InvalidGolden(path, _line(knode), where or None, "expected plain keys")
        key: Any = _scalar_int(path, knode, where) if keys_as_int else knode.value
        if not keys_as_int:
            _check_text(key, path, _line(knode), f"{where}.{key!r}" if where else "key", InvalidGolden)
        if key in out:
            raise InvalidGolden(
                path,
                _line(knode),
                f"{where}.{key}" if where else str(key),
                f"key already given on line {_line(out[key][0])}; expected each key once",
            )
        out[key] = (knode, vnode)
    return out


def _scalar_str(path: str | os.PathLike, node: yaml.Node, where: str) -> str:
    if not isinstance(node, yaml.ScalarNode):
        raise InvalidGolden(path, _line(node), where, "expected a single value")
    if node.tag.endswith(":null"):
        raise InvalidGolden(path, _line(node), where, "is empty, expected a value")
    _check_text(node.value, path, _line(node), where, InvalidGolden)
    return node.value  # the text as written: 001 stays "001"


_GOLDEN_INT = re.compile(r"[-+]?(?:0|[1-9][0-9]*)")


def _scalar_int(path: str | os.PathLike, node: yaml.Node, where: str) -> int:
    """A plain decimal integer; YAML 1.1's 0x1F, 0b1, 010 (octal 8), 1_000 and
    1:30 (sexagesimal) are refused rather than guessed."""
    if not (
        isinstance(node, yaml.ScalarNode) and node.tag.endswith(":int") and _GOLDEN_INT.fullmatch(node.value)
    ):
        if isinstance(node, yaml.ScalarNode):
            shown = repr(node.value)
        else:
            shown = "a list" if isinstance(node, yaml.SequenceNode) else "a mapping"
        raise InvalidGolden(path, _line(node), where, f"expected an integer grade, got {shown}")
    return int(node.value)


def write_golden(qrels: Qrels, path: str | os.PathLike, meta: dict[str, Any] | None = None) -> None:
    """golden.yaml with metadata first, then the queries; ids written as strings."""
    info = {**qrels.meta, **(meta or {})}
    doc: dict[str, Any] = {}
    for key in ("name", "description", "created", "judged_by", "shown", "min_grade"):
        if key in info:
            doc[key] = info[key]
    doc["grade_scale"] = {int(k): v for k, v in info.get("grade_scale", DEFAULT_GRADE_SCALE).items()}
    if "sampling" in info:
        doc["sampling"] = info["sampling"]
    doc["queries"] = [
        {
            "id": qid,
            **({"text": qrels.texts[qid]} if qid in qrels.texts else {}),
            "grades": {doc: int(grade) for doc, grade in docs.items()},
        }
        for qid, docs in qrels.grades.items()
    ]
    text = yaml.safe_dump(doc, sort_keys=False, allow_unicode=True, default_flow_style=False)
    _write_atomic(path, text)


def read_judgments(path: str | os.PathLike) -> Qrels:
    """golden.yaml (by extension .yaml/.yml) or TREC qrels."""
    if str(path).lower().endswith((".yaml", ".yml")):
        return read_golden(path)
    return read_qrels(path)


# ---------------------------------------------------------------- runs

_RUN_COLUMNS = ["q", "q0", "d", "r", "s", "t"]


def read_run(path: str | os.PathLike) -> Run:
    """TREC run ``qid Q0 docid rank score tag``.

    A fast columnar reader (Arrow) handles clean files; anything it cannot
    read is re-read line by line, which names the first bad line exactly.
    """
    _require_file(path, InvalidRun)
    table = _fast_run(path)
    if table is None:
        return _slow_run(path)
    return table


def _fast_run(path: str | os.PathLike) -> Run | None:
    table = _fast_table(path, _RUN_COLUMNS, int_columns=("r",), number_columns=("s",))
    if table is None:
        return None
    out = pa.table({"q": table["q"], "d": table["d"], "s": table["s"]})
    if "t" in table.column_names:
        tag = table["t"][0].as_py()
    else:  # the lean path keeps the tag as metadata
        tag = table.schema.metadata[b"tag"].decode("utf-8")
    return Run(table=out, name=tag, path=str(path))


def _slow_run(path: str | os.PathLike) -> Run:
    """Line-by-line reader: the reference, and the one that names a bad line."""
    text = _read_text(path, InvalidRun)
    q: list[str] = []
    d: list[str] = []
    s: list[float] = []
    tag = None
    for number, fields in _lines(text):
        if len(fields) < 6:
            raise InvalidRun(
                path,
                number,
                None,
                f"expected 6 columns (qid Q0 docid rank score tag), got {len(fields)}",
            )
        qid, _q0, doc, rank, raw_score, run_tag = fields[:6]
        if _parse_int(rank) is None:
            raise InvalidRun(path, number, "rank", f"expected an integer, got {rank!r}")
        if not _NUMBER.fullmatch(raw_score):
            raise InvalidRun(path, number, "score", f"expected a number, got {raw_score!r}")
        score = float(raw_score)
        if math.isnan(score):
            raise InvalidRun(
                path, number, "score", f"expected a number, got {raw_score!r} (NaN cannot be ordered)"
            )
        q.append(qid)
        d.append(doc)
        s.append(score)
        tag = tag or run_tag
    if not q:
        raise InvalidRun(
            path,
            None,
            None,
            "no results, only comments or blank lines; expected lines 'qid Q0 docid rank score tag'",
        )
    table = pa.table(
        {"q": pa.array(q, pa.string()), "d": pa.array(d, pa.string()), "s": pa.array(s, pa.float64())}
    )
    return Run(table=table, name=tag or "run", path=str(path))


def write_run(run: Run, path: str | os.PathLike, tag: str | None = None) -> None:
    """TREC run in trec_eval order, ranks 1..n per query; scores written with repr().

    Every row keeps its own score, so reading the file back gives the same
    order, duplicates included.
    """
    name = tag or run.name
    _check_trec_id(name, path, "tag", InvalidRun)
    lines = []
    for qid, rows in run.ordered_rows().items():
        _check_trec_id(qid, path, "qid", InvalidRun)
        for rank, (doc, score) in enumerate(rows, start=1):
            _check_trec_id(doc, path, "docid", InvalidRun)
            if math.isnan(score):
                raise InvalidRun(
                    path, None, "score", f"query {qid!r} document {doc!r}: expected a number, got NaN"
                )
            lines.append(f"{qid} Q0 {doc} {rank} {score!r} {name}\n")
    _write_atomic(path, "".join(lines))


# ---------------------------------------------------------------- JSONL rankings


def read_rankings(path: str | os.PathLike, name: str | None = None) -> Run:
    """JSONL ``{"query_id": str, "ranking": [docid, ...]}``, best first."""
    _require_file(path, InvalidRankings)
    text = _read_text(path, InvalidRankings)
    rankings: dict[str, list[str]] = {}
    seen_line: dict[str, int] = {}
    for number, line in _numbered_lines(text):
        if not line.strip(_ASCII_SPACE):
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InvalidRankings(
                path, number, None, f"not valid JSON ({exc.msg}); expected one object per line"
            ) from None
        except RecursionError:
            raise InvalidRankings(
                path, number, None, "JSON nested too deeply; expected one object per line"
            ) from None
        if not isinstance(obj, dict):
            raise InvalidRankings(
                path, number, None, 'expected an object {"query_id": ..., "ranking": [...]}'
            )
        if "query_id" not in obj:
            raise InvalidRankings(path, number, "query_id", "missing; expected the query id as a string")
        qid = obj["query_id"]
        if not isinstance(qid, str) or not qid:
            raise InvalidRankings(
                path,
                number,
                "query_id",
                f'expected a non-empty string (ids are text: write "1", not 1), got {json.dumps(qid)}',
            )
        _check_text(qid, path, number, "query_id", InvalidRankings)
        if "ranking" not in obj:
            raise InvalidRankings(
                path, number, "ranking", "missing; expected a list of document ids, best first"
            )
        ranking = obj["ranking"]
        if not isinstance(ranking, list):
            raise InvalidRankings(
                path, number, "ranking", f"expected a list of document ids, got {_json_kind(ranking)}"
            )
        for pos, doc in enumerate(ranking):
            if not isinstance(doc, str) or not doc or _has_space(doc):
                raise InvalidRankings(
                    path,
                    number,
                    f"ranking[{pos}]",
                    f"expected a document id (a non-empty string without spaces), got {json.dumps(doc)}",
                )
            _check_text(doc, path, number, f"ranking[{pos}]", InvalidRankings)
        if qid in rankings:
            raise InvalidRankings(
                path,
                number,
                "query_id",
                f"{qid!r} already given on line {seen_line[qid]}; expected each query once",
            )
        rankings[qid] = ranking
        seen_line[qid] = number
    if not rankings:
        raise InvalidRankings(
            path,
            None,
            None,
            'no rankings, only blank lines; expected {"query_id": ..., "ranking": [...]} lines',
        )
    run = Run.from_rankings(rankings, name=name or Path(path).stem)
    run.path = str(path)
    return run


def _json_kind(value: Any) -> str:
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, bool):
        return json.dumps(value)
    if isinstance(value, (int, float)):
        return "a number"
    return "null" if value is None else type(value).__name__


def write_rankings(run: Run, path: str | os.PathLike) -> None:
    """JSONL rankings in trec_eval order, one query per line."""
    lines = []
    for qid, docs in run.rankings().items():
        if not isinstance(qid, str) or not qid:
            raise InvalidRankings(path, None, "query_id", f"expected a non-empty string, got {qid!r}")
        for doc in docs:
            _check_trec_id(doc, path, "docid", InvalidRankings)
        lines.append(json.dumps({"query_id": qid, "ranking": docs}) + "\n")
    _write_atomic(path, "".join(lines))


def read_ranked(path: str | os.PathLike) -> Run:
    """A TREC run, or JSONL rankings when the name ends in .jsonl."""
    if str(path).lower().endswith(".jsonl"):
        return read_rankings(path)
    return read_run(path)


# ---------------------------------------------------------------- corpus


def read_corpus_ids(path: str | os.PathLike) -> list[str]:
    """Document ids of a corpus: JSONL ``{"id": ..., "text": ...}`` or one id per line."""
    _require_file(path, InvalidCorpus)
    text = _read_text(path, InvalidCorpus)
    ids: list[str] = []
    seen: dict[str, int] = {}
    jsonl = str(path).lower().endswith(".jsonl")
    for number, line in _numbered_lines(text):
        if not line.strip(_ASCII_SPACE):
            continue
        if jsonl:
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                raise InvalidCorpus(
                    path, number, None, f"not valid JSON ({exc.msg}); expected one object per line"
                ) from None
            except RecursionError:
                raise InvalidCorpus(
                    path, number, None, "JSON nested too deeply; expected one object per line"
                ) from None
            if not isinstance(obj, dict) or not isinstance(obj.get("id"), str) or not obj["id"]:
                raise InvalidCorpus(path, number, "id", 'expected {"id": "<non-empty string>", ...}')
            doc = obj["id"]
            _check_text(doc, path, number, "id", InvalidCorpus)
        else:
            doc = line.strip(_ASCII_SPACE)
        if doc in seen:
            raise InvalidCorpus(
                path, number, "id", f"{doc!r} already on line {seen[doc]}; expected each id once"
            )
        seen[doc] = number
        ids.append(doc)
    return ids


# ---------------------------------------------------------------- writing


def _write_atomic(path: str | os.PathLike, text: str) -> None:
    """Write to a temporary file and rename: a reader never sees half a file."""
    target = Path(path)
    tmp = target.with_name(f".{target.name}.tmp-{os.getpid()}")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, target)


def as_numpy(array: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """Arrow column to numpy without pandas (ChunkedArray.to_numpy imports
    pandas, a quarter of a second the CLI need not pay)."""
    if isinstance(array, pa.ChunkedArray):
        if array.num_chunks == 1:
            array = array.chunk(0)
        elif array.num_chunks == 0:
            return np.zeros(0, dtype=_NUMPY_TYPES.get(array.type, np.float64))
        else:
            return np.concatenate([as_numpy(chunk) for chunk in array.chunks])
    dtype = _NUMPY_TYPES.get(array.type)
    if dtype is not None and array.null_count == 0:
        # a view of the Arrow buffer (Array.to_numpy would import pandas)
        return np.frombuffer(array.buffers()[1], dtype=dtype)[array.offset : array.offset + len(array)]
    return array.to_numpy(zero_copy_only=False)


_NUMPY_TYPES = {
    pa.int8(): np.int8,
    pa.int16(): np.int16,
    pa.int32(): np.int32,
    pa.int64(): np.int64,
    pa.uint8(): np.uint8,
    pa.uint16(): np.uint16,
    pa.uint32(): np.uint32,
    pa.uint64(): np.uint64,
    pa.float32(): np.float32,
    pa.float64(): np.float64,
}
