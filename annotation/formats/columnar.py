"""The columnar (Arrow) readers for TREC qrels and runs: a lean read of the
common single-space file checked by a memory-mapped scan for odd bytes, and a
general read that also takes tab-separated, padded files. Each returns a
table, or None whenever the line reader in :mod:`annotation.formats.trec` might read
the file differently, so the line reader stays the reference and the one
that names a bad line.
"""

from __future__ import annotations

import contextlib
import io
import mmap
import os
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.csv as pcsv

import annotation.arrow_compute as pc
from annotation.errors import DenominatorError
from annotation.formats.textio import BOM, INT_RE, NUMBER_RE, id_problem
from annotation.ids import ID_FORBIDDEN_RE2

_NOT_SIMPLE = object()
_ODD_BYTES = (b"\t", b"\x00", b"\r", b"\x0b", b"\x0c")
_SCAN_BLOCK = 8 << 20
_INT_BYTES = np.zeros(256, dtype=bool)
_INT_BYTES[list(b"0123456789-")] = True  # no '+': Arrow refuses "+1", the line reader takes it


def _has_odd_bytes(path: str | os.PathLike[str], odd: tuple[bytes, ...] = _ODD_BYTES) -> bool:
    """A BOM, or a byte the lean reader leaves to others: TAB, NUL, CR, VT, FF
    (memchr over blocks read in turn: a few GB/s, one block held, stops at the first found)."""
    try:
        with open(path, "rb") as fh:
            first = True
            while block := fh.read(_SCAN_BLOCK):
                if (first and block.startswith(BOM)) or any(block.find(byte) >= 0 for byte in odd):
                    return True
                first = False
            return first  # an empty file
    except OSError:
        return True


def simple_table(
    path: str | os.PathLike[str],
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
            table = _read_lean(path, names, types)
        except (pa.ArrowInvalid, pa.ArrowTypeError, OSError):
            table = None
        if odd.result() or table is None or table.num_rows == 0:
            return _NOT_SIMPLE
    return lean_columns(table, names, int_columns, number_columns)


def lean_columns(
    table: pa.Table, names: list[str], int_columns: tuple[str, ...], number_columns: tuple[str, ...]
) -> pa.Table | None | object:  # object: _NOT_SIMPLE
    """The checks of :func:`simple_table` on a table Arrow read from a clean file (or a piece
    of one): the kept columns, or None (the line reader must judge), or _NOT_SIMPLE."""
    out: dict[str, pa.ChunkedArray] = {}
    for name in names:
        column = table[name]
        if name in number_columns:
            if any(_has_nan(chunk) for chunk in column.chunks):
                return None  # a NaN score cannot be ordered: the line reader names it
            out[name] = column
            continue
        if any(_has_empty(chunk) for chunk in column.chunks):
            return _NOT_SIMPLE
        if name in int_columns:
            if name != "g" and all(_all_digits(chunk) for chunk in column.chunks):
                continue  # a rank of digits (empty ones refused above): the line reader takes any
            if not all(_bytes_in(chunk, _INT_BYTES) for chunk in column.chunks):
                return _NOT_SIMPLE
            try:
                column = pc.cast(column, pa.int64())
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
                return None  # "1-2", "-" or beyond 64 bits: the line reader names it
            if name == "g":
                out[name] = column
        elif name in (names[0], "d"):
            if not _keeps_id_rule(column):
                return None  # the line reader names the id and its character
            out[name] = column
        elif name == "t":
            out["t"] = column.chunk(0)[0].as_py()
            if id_problem(out["t"]) is not None:
                return None
    del table
    if any(_first_byte_is(chunk, ord("#")) for chunk in out[names[0]].chunks):
        return _NOT_SIMPLE  # a comment line: the line reader skips it
    tag = out.pop("t", None)
    result = pa.table(out)
    return result.replace_schema_metadata({"tag": tag}) if tag is not None else result


class NotStreamable(DenominatorError):
    """A file the lean reader cannot take piece by piece: the caller reads it whole (and the
    whole-file readers accept it or name the bad line)."""


_PIECE_BYTES = 16 << 20


def lean_pieces(
    path: str | os.PathLike[str] | bytes,
    names: list[str],
    int_columns: tuple[str, ...],
    number_columns: tuple[str, ...],
    piece_bytes: int = _PIECE_BYTES,
) -> Iterator[pa.Table]:
    """:func:`simple_table` in pieces of whole lines, about ``piece_bytes`` each (Arrow parses
    each piece on every core, the next piece while the caller works on this one), so a file of any size is held one piece at a time.

    Each piece passes the same checks as the whole file would (odd bytes, empty fields,
    integer columns, NaN scores, comment lines); the first that fails raises
    :class:`NotStreamable` (pieces already yielded stay valid, the file as a whole is not lean).
    A regular file is mapped, so Arrow reads each piece from the page cache without a copy into
    a buffer of ours (#42 item 4); anything else is read piece by piece; the pieces are the same.
    ``bytes`` are a file's content already in memory (an upload): cut as a mapped file is, no file
    written (#42 item 2).
    """
    if isinstance(path, bytes):
        fh: io.BufferedReader | contextlib.nullcontext[None] = contextlib.nullcontext()
        blocks = _mapped_blocks(path, piece_bytes)
    else:
        try:
            fh = open(path, "rb")
        except OSError as exc:
            raise NotStreamable(str(exc)) from None
        blocks = _pieces_of(fh, piece_bytes)
    # the next piece is parsed in a thread while the caller works on this one
    with fh, ThreadPoolExecutor(max_workers=1) as pool:
        pending = None
        for block, start, end in blocks:
            job = pool.submit(_lean_piece, block, start, end, names, int_columns, number_columns)
            if pending is not None:
                yield pending.result()
            pending = job
        if pending is None:
            raise NotStreamable("an empty file")
        yield pending.result()


def _pieces_of(fh: io.BufferedReader, piece_bytes: int) -> Iterator[tuple[Any, int, int]]:
    """(buffer, start, end): whole lines in ``buffer[start:end]``, the pieces of
    :func:`_line_blocks`, from the file mapped when it can be (a regular file, not empty)."""
    try:
        size = os.fstat(fh.fileno()).st_size
        mapped = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) if size else None
    except (OSError, ValueError):
        mapped = None
    if mapped is None:
        for block, end in _line_blocks(fh, piece_bytes):
            yield block, 0, end
        return
    # not closed here: a piece's buffer may still be held; the map goes with its last reference
    yield from _mapped_blocks(mapped, piece_bytes)


def _mapped_blocks(mapped: mmap.mmap | bytes, piece_bytes: int) -> Iterator[tuple[Any, int, int]]:
    """:func:`_line_blocks` over a mapped file (or its bytes in memory): the same cuts (each piece
    ends at the last newline before the next multiple of ``piece_bytes``, what is after it starts
    the next) and refusals."""
    size = len(mapped)
    start = limit = 0
    while limit < size:
        limit = min(limit + piece_bytes, size)
        if start == 0 and mapped[: min(limit, len(BOM))] == BOM:  # the first piece's start
            raise NotStreamable("a byte-order mark")
        cut = mapped.rfind(b"\n", start, limit) + 1
        if cut == 0:  # a line longer than a piece: no run line is; the whole-file reader says what it is
            raise NotStreamable(f"a line longer than {piece_bytes:,} bytes")
        yield mapped, start, cut
        start = cut
    if start < size:
        yield mapped, start, size


def _line_blocks(fh: io.BufferedIOBase, piece_bytes: int) -> Iterator[tuple[bytearray, int]]:
    """(buffer, end): whole lines in ``buffer[:end]``, about ``piece_bytes`` a time; a fresh
    buffer each time (the pieces are parsed from it without a copy)."""
    rest = b""
    first = True
    while True:
        block = bytearray(len(rest) + piece_bytes)
        block[: len(rest)] = rest
        n = len(rest) + fh.readinto(memoryview(block)[len(rest) :])
        if n == len(rest):
            break
        if first and block.startswith(BOM):
            raise NotStreamable("a byte-order mark")
        first = False
        cut = block.rfind(b"\n", 0, n) + 1
        if cut == 0:  # a line longer than a piece: no run line is; the whole-file reader says what it is
            raise NotStreamable(f"a line longer than {piece_bytes:,} bytes")
        rest = bytes(block[cut:n])
        yield block, cut
    if rest:
        if first and rest.startswith(BOM):
            raise NotStreamable("a byte-order mark")
        yield bytearray(rest), len(rest)


def _lean_piece(
    block: Any,
    start: int,
    end: int,
    names: list[str],
    int_columns: tuple[str, ...],
    number_columns: tuple[str, ...],
) -> pa.Table:
    """The lines of ``block[start:end]`` (a bytearray or the mapped file) read lean, or
    :class:`NotStreamable`."""
    odd, ascii = _scan_piece(block, start, end)
    if odd:
        raise NotStreamable("a tab, NUL, CR, VT or FF byte")
    types = {name: pa.float64() if name in number_columns else pa.string() for name in names}
    piece = memoryview(block)[start:end]
    try:
        # one thread: the pieces are already parsed beside the caller's work, and Arrow's pool
        # costs CPU time (a third more on a loaded machine) to hand a 16 MB piece to two threads
        source = pa.BufferReader(pa.py_buffer(piece))
        table = _read_lean(source, names, types, use_threads=False, check_utf8=not ascii)
    except (pa.ArrowInvalid, pa.ArrowTypeError, OSError) as exc:
        raise NotStreamable(str(exc)) from None
    finally:
        _release(block, start, end)
    if table.num_rows == 0:
        raise NotStreamable("a piece with no lines")
    result = lean_columns(table, names, int_columns, number_columns)
    if not isinstance(result, pa.Table):
        raise NotStreamable("a line the lean reader leaves to others")
    return result


_SCAN_STEP = 256 << 10  # bytes: a step's six passes run in the core's own cache (L2)


def _scan_piece(block: Any, start: int, end: int) -> tuple[bool, bool]:
    """(whether ``block[start:end]`` holds a byte the lean reader leaves to others, whether it is
    all ASCII). ASCII is valid UTF-8: Arrow's own check of every value (a quarter of the read) is
    needed only when some byte is not (the largest byte, no copy). Six passes (five ``find`` s and a
    max) a step of :data:`_SCAN_STEP` bytes at a time: the step is read from memory once and
    stays in the cache for the other five, half the CPU of six passes over a 16 MB piece (#42)."""
    ascii = True
    with memoryview(block) as view:
        for at in range(start, end, _SCAN_STEP):
            stop = min(at + _SCAN_STEP, end)
            if any(block.find(byte, at, stop) >= 0 for byte in _ODD_BYTES):
                return True, False
            if ascii and int(np.frombuffer(view[at:stop], dtype=np.uint8).max()) >= 0x80:
                ascii = False
    return False, ascii


def _release(block: Any, start: int, end: int) -> None:
    """A parsed piece of a mapped file let go of (Arrow copied what it kept): its pages leave the
    process's resident set (they stay in the page cache), so the peak is a piece or two, not the
    file (a page the next piece shares is read again from the cache, never wrong)."""
    if isinstance(block, mmap.mmap) and hasattr(mmap, "MADV_DONTNEED"):
        first = start - start % mmap.PAGESIZE
        block.madvise(mmap.MADV_DONTNEED, first, end - first)


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


def _keeps_id_rule(column: pa.ChunkedArray) -> bool:
    """No value of a string column breaks the id rule (:data:`annotation.formats.textio.ID_FORBIDDEN`):
    a chunk whose bytes are all printable ASCII (a min and a max) keeps it; another is searched
    with the rule's class (RE2)."""
    for chunk in column.chunks:
        if len(chunk) == 0:
            continue
        offsets, data = _string_parts(chunk)
        values = data[offsets[0] : offsets[-1]]
        if not len(values) or (int(values.min()) > 0x20 and int(values.max()) < 0x7F):
            continue
        if pc.any(pc.match_substring_regex(chunk, ID_FORBIDDEN_RE2)).as_py():
            return False
    return True


def _has_nan(chunk: pa.Array) -> bool:
    """Any NaN in a chunk of doubles read from a file (no nulls): the minimum is NaN when one is
    (numpy's min propagates it), one reduction and no mask, over a view of the Arrow buffer
    (``Array.to_numpy`` would import pandas: 30 MB and a quarter of a second)."""
    if len(chunk) == 0:
        return False
    values = np.frombuffer(chunk.buffers()[1], dtype=np.float64)[chunk.offset : chunk.offset + len(chunk)]
    return bool(np.isnan(values.min()))


def _first_byte_is(chunk: pa.Array, byte: int) -> bool:
    """Any value of a string chunk whose first byte is ``byte`` (``pc.starts_with`` on one byte): none
    when no byte of the values is (one compare over the data), else the byte at each value's start
    offset, gathered; on a 16 MB piece's ids a fifth of ``starts_with``'s time. The chunk holds no
    empty value (refused before)."""
    if len(chunk) == 0:
        return False
    offsets, data = _string_parts(chunk)
    if not (data[offsets[0] : offsets[-1]] == byte).any():
        return False
    return bool((data[offsets[:-1]] == byte).any())


def _all_digits(chunk: pa.Array) -> bool:
    """Every byte of a string chunk's values is an ASCII digit (one subtraction and a max: a
    tenth of :func:`_bytes_in`'s table look-up)."""
    if len(chunk) == 0:
        return True
    offsets, data = _string_parts(chunk)
    values = data[offsets[0] : offsets[-1]]
    return not len(values) or int((values - np.uint8(48)).max()) <= 9


def fast_table(
    path: str | os.PathLike[str],
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
    simple = simple_table(path, names, int_columns, number_columns)
    if simple is not _NOT_SIMPLE:
        return simple
    if _has_odd_bytes(path, (b"\x00", b"\r", b"\x0b", b"\x0c")):
        return None  # the line reader judges it, streaming: a NUL byte is refused at its block
    try:
        data = Path(path).read_bytes()
    except OSError:
        return None
    if not data.strip() or data.startswith(BOM):
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
            pattern = INT_RE if name in int_columns else NUMBER_RE
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
            if name in (names[0], "d", "t") and not _keeps_id_rule(pa.chunked_array([column])):
                return None  # the line reader names the id and its character
        out[name] = column
    if pc.any(pc.starts_with(out[names[0]], "#")).as_py():
        return None  # comment lines: the line reader skips them
    return pa.table(out)


def _read_lean(
    source: Any,
    names: list[str],
    types: dict[str, pa.DataType],
    use_threads: bool = True,
    check_utf8: bool = True,
) -> pa.Table:
    """Arrow's CSV reader as the lean format wants it, for a whole file and for a piece alike:
    single spaces, no quoting or escapes, no nulls, the given column types."""
    return pcsv.read_csv(
        source,
        read_options=pcsv.ReadOptions(column_names=names, block_size=1 << 21, use_threads=use_threads),
        parse_options=pcsv.ParseOptions(
            delimiter=" ", quote_char=False, escape_char=False, double_quote=False
        ),
        convert_options=pcsv.ConvertOptions(
            column_types=types,
            strings_can_be_null=False,
            quoted_strings_can_be_null=False,
            null_values=[],
            check_utf8=check_utf8,
        ),
    )
