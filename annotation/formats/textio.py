"""The ground every reader stands on: the raw-bytes and text checks the line
readers share (UTF-8, NUL, lone CR, LF-only line numbering, trec_eval's
whitespace and number syntax; streamed, a block at a time), the size limits
every reader checks before it holds a file (:class:`Limits`, set by
``DENOMINATOR_MAX_*``), the checks of an id a TREC writer is given,
golden.yaml's line-break check, and an uploaded file's name. Strict JSON lines
are :mod:`annotation.formats.json_lines`; writing a file is
:mod:`annotation.formats.atomic`. The types the readers build and the errors
they raise live in :mod:`annotation.model` (no IO).
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from annotation.ids import ID_FORBIDDEN
from annotation.model import FormatError, UnwritableId

# ---------------------------------------------------------------- raw bytes


BOM = b"\xef\xbb\xbf"
# What separates fields in TREC files: ASCII whitespace only (trec_eval splits
# with C's isspace), so a non-breaking space or U+2028 stays inside an id.
ASCII_SPACE = " \t\n\r\f\v"
TOKEN_RE = re.compile(r"[^ \t\n\r\f\v]+")
INT_RE = r"[+-]?[0-9]+"
# "digits, then perhaps a dot and digits", never "digits, dot?, digits": that
# form splits a run of digits in n ways, and Python's backtracking then takes
# O(n^2) steps on a long token of digits that ends in a letter (a ReDoS).
NUMBER_RE = r"[+-]?(?:(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|(?i:inf|infinity|nan))"
INT_PATTERN = re.compile(INT_RE)
NUMBER_PATTERN = re.compile(NUMBER_RE)
INT64_RANGE = (-(2**63), 2**63 - 1)


# ---------------------------------------------------------------- size limits

# The environment variables that set the readers' limits, and their defaults.
MAX_FILE_BYTES_ENV = "DENOMINATOR_MAX_FILE_BYTES"
MAX_LINE_BYTES_ENV = "DENOMINATOR_MAX_LINE_BYTES"
MAX_TEXT_BYTES_ENV = "DENOMINATOR_MAX_TEXT_BYTES"
MAX_ROWS_ENV = "DENOMINATOR_MAX_ROWS"


@dataclass(frozen=True)
class Limits:
    """What a reader takes before it refuses, checked before the bytes are held: a file's size
    (``file_bytes``, from the file system), a JSON line's length (``line_bytes``, while the lines
    are scanned), one text (``text_bytes``: a chunk's, a query's, a trace's question, answer or
    context, in UTF-8 bytes), and the rows of a Parquet file (``rows``, from its metadata).
    Run files (TREC runs, JSONL rankings) are exempt: ``metrics`` and ``audit`` have their own
    scale targets."""

    file_bytes: int = 2 << 30
    line_bytes: int = 64 << 20
    text_bytes: int = 1 << 20
    rows: int = 1_000_000


DEFAULT_LIMITS = Limits()
_LIMIT_ENV = {
    "file_bytes": MAX_FILE_BYTES_ENV,
    "line_bytes": MAX_LINE_BYTES_ENV,
    "text_bytes": MAX_TEXT_BYTES_ENV,
    "rows": MAX_ROWS_ENV,
}


# A file pushed over HTTP (``POST /api/import/...``) is bounded by the request's size, but a Parquet
# file's few KB can decode to millions of rows and gigabytes of text (dictionary encoding). While
# :func:`pushed` holds, a Parquet reader also refuses more than PUSH_TEXT_TIMES the push's byte
# limit of decoded text, and more than one row per PUSH_ROW_BYTES of it (8 MiB: 64 MiB of text,
# 131,072 rows), from the file's metadata and its dictionaries, before a row becomes objects.
PUSH_TEXT_TIMES = 8
PUSH_ROW_BYTES = 64


@dataclass(frozen=True)
class PushBound:
    """What a pushed file may decode to: ``text_bytes`` of text, ``rows`` rows; ``body_bytes`` the
    push's own limit they are derived from, and ``setting`` what sets it (both named in a refusal)."""

    body_bytes: int
    text_bytes: int
    rows: int
    setting: str


_PUSH: ContextVar[PushBound | None] = ContextVar("denominator_push_bound", default=None)


@contextmanager
def pushed(body_bytes: int, setting: str) -> Iterator[PushBound]:
    """Inside the block, the readers bound what a file decodes to by a push of at most
    ``body_bytes`` (set by ``setting``; :func:`push_bound`); this thread's (and context's) reads only."""
    bound = PushBound(body_bytes, body_bytes * PUSH_TEXT_TIMES, max(1, body_bytes // PUSH_ROW_BYTES), setting)
    token = _PUSH.set(bound)
    try:
        yield bound
    finally:
        _PUSH.reset(token)


def push_bound() -> PushBound | None:
    """The bound of the push being read (:func:`pushed`), None outside one (a local file)."""
    return _PUSH.get()


class LimitSetting(FormatError):
    """A limit's environment variable holds something other than a whole number >= 1."""

    kind = "limit"


def limits() -> Limits:
    """The limits in force: each ``DENOMINATOR_MAX_*`` variable that is set, else its default
    (read at each call, so a test or a server can change them)."""
    values = {}
    for name, env in _LIMIT_ENV.items():
        raw = os.environ.get(env, "").strip()
        if not raw:
            continue
        if not re.fullmatch(r"[0-9]{1,19}", raw) or not 1 <= int(raw) <= INT64_RANGE[1]:
            raise LimitSetting(
                env,
                None,
                None,
                f"{shown_value(raw)}; expected a whole number >= 1 (default {getattr(DEFAULT_LIMITS, name)})",
            )
        values[name] = int(raw)
    return Limits(**values)


def size_text(count: int) -> str:
    """A byte count as a message gives it: exact, and in MiB or GiB when that is shorter to read."""
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if count >= 1 << shift:
            scaled = count / (1 << shift)
            shown = f"{scaled:.0f}" if scaled == int(scaled) else f"{scaled:.1f}"
            return f"{count:,} bytes ({shown} {unit})"
    return f"{count:,} bytes"


def check_file_size(path: str | os.PathLike[str], error: type[FormatError]) -> None:
    """Refuse a file larger than :attr:`Limits.file_bytes` from its size alone, before reading it."""
    limit = limits().file_bytes
    try:
        size = os.stat(path).st_size
    except OSError:
        return  # the reader says what is wrong with it
    if size > limit:
        raise error(
            path,
            None,
            None,
            f"{size_text(size)}; the readers take files of at most {size_text(limit)} "
            f"(set {MAX_FILE_BYTES_ENV} to raise the limit)",
        )


def check_text_size(
    value: str,
    path: str | os.PathLike[str],
    line: int | None,
    field_: str,
    error: type[FormatError],
    limit: int | None = None,
) -> None:
    """Refuse one text (a chunk's, a query's, ...) longer than ``limit`` bytes in UTF-8 (default
    :attr:`Limits.text_bytes`; a reader of many texts reads the limit once and passes it)."""
    if limit is None:
        limit = limits().text_bytes
    if len(value) * 4 <= limit:  # a character is at most 4 UTF-8 bytes
        return
    size = len(value.encode("utf-8", "surrogatepass"))
    if size > limit:
        raise error(
            path,
            line,
            field_,
            f"{size_text(size)} of text; at most {size_text(limit)} a text "
            f"(set {MAX_TEXT_BYTES_ENV} to raise the limit)",
        )


_BLOCK = 4 << 20  # what the streaming checks read at a time


def _open_bytes(path: str | os.PathLike[str], error: type[FormatError]) -> BinaryIO:
    try:
        return open(path, "rb")  # noqa: SIM115 - the caller closes it
    except FileNotFoundError:
        raise error(path, None, None, "no such file; expected a readable file") from None
    except IsADirectoryError:
        raise error(path, None, None, "is a directory; expected a file") from None
    except PermissionError:
        raise error(path, None, None, "permission denied; expected a readable file") from None
    except OSError as exc:
        raise error(path, None, None, f"cannot be read ({exc.strerror}); expected a readable file") from None


def _nul_error(path: str | os.PathLike[str], line: int, error: type[FormatError]) -> FormatError:
    return error(path, line, None, "NUL byte: this looks like a binary file; expected UTF-8 text")


def read_text_file(path: str | os.PathLike[str], error: type[FormatError], *, limited: bool = True) -> str:
    """Whole file as text; refuses missing, empty, binary and non-UTF-8 files.

    A leading UTF-8 byte order mark is dropped (Windows editors write one). ``limited``: a file
    larger than :attr:`Limits.file_bytes` is refused from its size, before it is read (run files
    are read with ``limited=False``). A NUL byte is refused as soon as the block holding it is read.
    """
    if limited:
        check_file_size(path, error)
    data = bytearray()
    lines = 1
    with _open_bytes(path, error) as handle:
        try:
            while block := handle.read(_BLOCK if data else max(_BLOCK, 4)):  # a BOM whole
                if not data and block.startswith((b"\xff\xfe", b"\xfe\xff")):
                    check_bytes(path, block[:2], error)  # UTF-16: named before its NUL bytes
                nul = block.find(b"\x00")
                if nul >= 0:
                    raise _nul_error(path, lines + block.count(b"\n", 0, nul), error)
                lines += block.count(b"\n")
                data += block
        except IsADirectoryError:
            raise error(path, None, None, "is a directory; expected a file") from None
        except OSError as exc:
            raise error(
                path, None, None, f"cannot be read ({exc.strerror}); expected a readable file"
            ) from None
    if data.startswith(BOM):
        del data[: len(BOM)]
    check_bytes(path, data, error)
    return data.decode("utf-8")


def require_file(path: str | os.PathLike[str], error: type[FormatError]) -> None:
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


def check_text(
    value: str, path: str | os.PathLike[str], line: int | None, field_: str, error: type[FormatError]
) -> None:
    """JSON and YAML escapes can spell a lone surrogate (\\ud800), which no UTF-8 file can hold,
    and a NUL character (\\u0000), which a PostgreSQL store cannot hold: both refused, so the two
    backends take the same files."""
    nul = value.find("\x00")
    if nul >= 0:
        raise error(
            path,
            line,
            field_,
            f"holds a NUL character (U+0000) at position {nul}; expected text without it "
            "(a PostgreSQL store cannot hold one, so neither backend takes it)",
        )
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        bad = ord(value[exc.start])
        raise error(
            path, line, field_, f"holds the lone surrogate U+{bad:04X}; expected text that UTF-8 can encode"
        ) from None


def check_bytes(path: str | os.PathLike[str], data: bytes | bytearray, error: type[FormatError]) -> None:
    if not data.strip():
        raise error(path, None, None, "file is empty; expected at least one line")
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):  # never UTF-8: 0xff and 0xfe are not UTF-8 bytes
        raise error(
            path,
            1,
            None,
            f"starts with the UTF-16 byte order mark 0x{data[:2].hex()}: UTF-16 text; expected UTF-8 text",
        )
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
    lone_cr = LONE_CR.search(data)
    if lone_cr:
        line = data.count(b"\n", 0, lone_cr.start()) + 1
        raise error(
            path,
            line,
            None,
            "carriage return inside a line (old Mac line ends?); expected LF or CRLF line ends",
        )


LONE_CR = re.compile(rb"\r(?!\n)")


def numbered_lines(text: str) -> Iterable[tuple[int, str]]:
    """(line number, line) split on LF only, so numbers match the byte checks.

    str.splitlines() would also break at U+2028, U+0085, form feeds and more,
    which trec_eval, pyarrow and JSON all treat as ordinary characters.
    """
    for number, line in enumerate(text.split("\n"), start=1):
        yield number, line.removesuffix("\r")


def split_fields(text: str) -> Iterable[tuple[int, list[str]]]:
    """(line number, whitespace-split fields) for each non-blank, non-comment line."""
    for number, line in numbered_lines(text):
        fields = TOKEN_RE.findall(line)
        if not fields or fields[0].startswith("#"):
            continue
        yield number, fields


def parse_int(value: str) -> int | None:
    """A decimal integer as trec_eval writes it; no 0x, no 1_000, no unicode digits.

    A number of more than 20 digits comes back as the nearest value beyond 64
    bits, not converted: Python refuses to convert more than 4300 digits, and
    every caller either refuses what is beyond 64 bits or ignores the value.
    """
    if not INT_PATTERN.fullmatch(value):
        return None
    if len(value.lstrip("+-").lstrip("0")) > 20:
        return INT64_RANGE[0] - 1 if value.startswith("-") else INT64_RANGE[1] + 1
    return int(value)


def clip_text(text: str, limit: int = 60) -> str:
    """Text as an error message shows it: at most ``limit`` characters, so a
    30 MB token still gives a short one-line message."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... ({len(text)} characters)"


def field_label(key: str) -> str:
    """A key from the file as a field name in a message: as written when it is
    printable (no line break, tab or control character), else its repr; cut short."""
    return clip_text(key if key and key.isprintable() else repr(key))


def shown_value(value: str, limit: int = 60) -> str:
    """repr() of a value from the file, cut short like :func:`clip_text`."""
    if len(value) <= limit:
        return repr(value)
    return f"{value[:limit]!r}... ({len(value)} characters)"


def has_space(value: str) -> bool:
    return any(ch in ASCII_SPACE for ch in value)


# ---------------------------------------------------------------- the id rule

# The id rule (its characters: :mod:`annotation.ids`)
ID_RULE = "expected an id without whitespace, control or format characters"


def id_problem(value: str, spaces: bool = False) -> str | None:
    """What breaks the id rule in ``value`` (the first such character, by code point and kind), or
    None when it keeps the rule (emptiness is the caller's check). ``spaces``: U+0020 is taken
    (golden.yaml's queries named by their text)."""
    found = ID_FORBIDDEN.search(value.replace(" ", "x") if spaces else value)
    if found is None:
        return None
    ch = found.group()
    kind = "whitespace" if ch.isspace() else "a control character" if ch < "\xa0" else "a format character"
    return f"U+{ord(ch):04X} ({kind}) at position {found.start()}"


def check_id(
    value: Any,
    path: str | os.PathLike[str],
    line: int | None,
    field_: str,
    error: type[FormatError],
    *,
    spaces: bool = False,
) -> str:
    """The id rule (:data:`ID_FORBIDDEN`), the one every reader applies to every id it reads: a
    non-empty string without whitespace, control or format characters; ``error`` naming the line
    and the field otherwise. Returns the id. ``spaces``: U+0020 is taken, for golden.yaml's query
    ids, which may be a query's text (the TREC writers refuse those, saying to give ids)."""
    if not isinstance(value, str) or not value:
        raise error(path, line, field_, f"expected a non-empty id (a string), got {clip_text(repr(value))}")
    problem = id_problem(value, spaces)
    if problem is not None:
        rule = ID_RULE.replace("whitespace", "whitespace other than spaces") if spaces else ID_RULE
        raise error(path, line, field_, f"{shown_value(value)} holds {problem}; {rule}")
    return value


# what a whitespace-separated line of each format is called, in a refusal
_TREC_LINE = {"qrels": "a TREC qrels line", "run": "a TREC run line"}
_ID_NAME = {"qid": "query id", "docid": "document id", "tag": "run tag"}
_ID_ADVICE = {
    "qid": "give the queries ids without whitespace (id: in golden.yaml)",
    "docid": "give the documents ids without whitespace",
    "tag": "give the run a name without whitespace",
}


def check_trec_id(value: Any, path: str | os.PathLike[str], what: str, error: type[FormatError]) -> None:
    """Writers refuse ids that would read back differently (split, or taken as a comment).

    An id with whitespace in a TREC qrels or run (a query named by its text) is
    :class:`~annotation.model.UnwritableId`, saying to give ids; other refusals are ``error``."""
    line = _TREC_LINE.get(error.kind)
    if isinstance(value, str) and value and has_space(value) and line and what in _ID_NAME:
        raise UnwritableId(
            path,
            None,
            what,
            f"{_ID_NAME[what]} {shown_value(value)} has whitespace; {line} cannot hold it: {_ID_ADVICE[what]}",
        )
    if (
        not isinstance(value, str)
        or not value
        or has_space(value)
        or (what == "qid" and value.startswith("#"))
    ):
        raise error(
            path,
            None,
            what,
            f"{value!r} cannot be written as a TREC column; expected a non-empty string "
            "without spaces" + (" that does not start with '#'" if what == "qid" else ""),
        )


# ---------------------------------------------------------------- grades, line by line


class JudgmentLines:
    """Grades read line by line, for the line readers of qrels-like files: each an
    integer that fits in 64 bits, one per (query, doc); the same pair again with
    the same grade is taken once, with another grade refused naming both lines."""

    def __init__(
        self, path: str | os.PathLike[str], error: type[FormatError], field_: str, verb: str
    ) -> None:
        self.path, self.error, self.field, self.verb = path, error, field_, verb
        self.grades: dict[str, dict[str, int]] = {}
        self.first_line: dict[tuple[str, str], int] = {}

    def parse(self, raw: str, number: int) -> int:
        value = parse_int(raw)
        if value is None:
            raise self.error(self.path, number, self.field, f"expected an integer, got {shown_value(raw)}")
        if not INT64_RANGE[0] <= value <= INT64_RANGE[1]:
            raise self.error(
                self.path,
                number,
                self.field,
                f"expected an integer that fits in 64 bits, got {shown_value(raw)}",
            )
        return value

    def add(self, qid: str, doc: str, grade: int, number: int) -> None:
        docs = self.grades.setdefault(qid, {})
        if doc in docs:
            if docs[doc] != grade:
                raise self.error(
                    self.path,
                    number,
                    self.field,
                    f"query {qid!r} document {doc!r} {self.verb} {grade} here and "
                    f"{docs[doc]} on line {self.first_line[(qid, doc)]}; expected one {self.field} per pair",
                )
            return
        docs[doc] = grade
        self.first_line[(qid, doc)] = number


# ---------------------------------------------------------------- JSON lines


def content_lines(
    path: str | os.PathLike[str], error: type[FormatError], *, limited: bool = True
) -> Iterator[tuple[int, str]]:
    """(line number, line) of every non-blank line of a text file, read a line at a time.

    The file is checked first, as :func:`read_text_file` checks it (exists, regular, UTF-8, not
    empty, no NUL or lone CR), in one streaming pass that holds a block at a time; ``limited``
    also refuses a file over :attr:`Limits.file_bytes` (from its size) and a line over
    :attr:`Limits.line_bytes` (from the scan), so no line is held that the limits refuse."""
    require_file(path, error)
    if limited:
        check_file_size(path, error)
    scan_bytes(path, error, limits().line_bytes if limited else None)
    with _open_bytes(path, error) as handle:
        for number, raw in enumerate(handle, start=1):
            if number == 1:
                raw = raw.removeprefix(BOM)
            try:
                line = raw.decode("utf-8").removesuffix("\n").removesuffix("\r")
            except UnicodeDecodeError:  # the file changed since it was checked
                raise error(
                    path, number, None, "not UTF-8 any more: the file changed while it was read"
                ) from None
            if line.strip(ASCII_SPACE):
                yield number, line


def scan_bytes(path: str | os.PathLike[str], error: type[FormatError], max_line: int | None = None) -> None:
    """:func:`check_bytes` of a file, streamed: a block at a time, the same refusals with the
    same lines and the same precedence (a NUL byte anywhere first, then bad UTF-8, then a lone
    CR), refusing at once at a NUL byte or at a line longer than ``max_line`` bytes."""
    lines = 1  # the line the next block starts on
    line_length = 0  # bytes of the current line before the next block
    started = False  # the first block is read
    carry = b""  # the bytes of a UTF-8 character cut by the block's end
    bad_utf8: tuple[int, int] | None = None  # (line, byte)
    lone_cr: int | None = None
    pending_cr = False  # the previous block ended in CR
    blank = True
    first = b""
    with _open_bytes(path, error) as handle:
        while block := handle.read(_BLOCK if started else max(_BLOCK, 4)):  # a BOM whole
            if not started:
                started = True
                first = block[:3]
                if block.startswith((b"\xff\xfe", b"\xfe\xff")):
                    break  # check_bytes names it
                block = block.removeprefix(BOM)
            nul = block.find(b"\x00")
            if nul >= 0:
                raise _nul_error(path, lines + block.count(b"\n", 0, nul), error)
            if blank and block.strip():
                blank = False
            if max_line is not None:
                line_length = _check_line_lengths(path, error, block, lines, line_length, max_line)
            if bad_utf8 is None and (carry or not block.isascii()):
                bad_utf8, carry = _utf8_problem(carry + block, lines)  # carry holds no LF
            if lone_cr is None:
                if pending_cr and not block.startswith(b"\n"):
                    lone_cr = lines
                match = LONE_CR.search(block)
                if lone_cr is None and match and match.start() < len(block) - 1:
                    lone_cr = lines + block.count(b"\n", 0, match.start())
                pending_cr = block.endswith(b"\r")
            lines += block.count(b"\n")
    if first.startswith((b"\xff\xfe", b"\xfe\xff")):
        check_bytes(path, first, error)
    if blank:
        raise error(path, None, None, "file is empty; expected at least one line")
    if bad_utf8 is None and carry:
        bad_utf8 = (lines - carry.count(b"\n"), carry[0])
    if bad_utf8 is not None:
        raise error(path, bad_utf8[0], None, f"byte 0x{bad_utf8[1]:02x} is not UTF-8; expected UTF-8 text")
    if lone_cr is None and pending_cr:
        lone_cr = lines
    if lone_cr is not None:
        raise error(
            path,
            lone_cr,
            None,
            "carriage return inside a line (old Mac line ends?); expected LF or CRLF line ends",
        )


def _utf8_problem(data: bytes, line: int) -> tuple[tuple[int, int] | None, bytes]:
    """((line, byte) of the first byte of ``data`` that is not UTF-8, or None; the unfinished
    character at its end, to be read with the next block). ``line``: the line ``data`` starts on."""
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        if exc.end == len(data) and exc.reason == "unexpected end of data":
            return None, data[exc.start :]
        return (line + data.count(b"\n", 0, exc.start), data[exc.start]), b""
    return None, b""


def _check_line_lengths(
    path: str | os.PathLike[str],
    error: type[FormatError],
    block: bytes,
    line: int,
    before: int,
    max_line: int,
) -> int:
    """Refuse a line of more than ``max_line`` bytes; the length of the line still open at the
    block's end (``before``: its length when the block began)."""
    ends = np.flatnonzero(np.frombuffer(block, dtype=np.uint8) == 10)
    if len(ends) == 0:
        length = before + len(block)
        if length > max_line:
            _line_too_long(path, error, line, length, max_line)
        return length
    lengths = np.diff(ends, prepend=-1)  # each line's bytes before its LF, plus 1
    lengths[0] += before
    longest = int(np.argmax(lengths))
    if lengths[longest] - 1 > max_line:
        _line_too_long(path, error, line + longest, int(lengths[longest]) - 1, max_line)
    tail = len(block) - int(ends[-1]) - 1
    if tail > max_line:
        _line_too_long(path, error, line + len(ends), tail, max_line)
    return tail


def _line_too_long(
    path: str | os.PathLike[str], error: type[FormatError], line: int, length: int, max_line: int
) -> None:
    raise error(
        path,
        line,
        None,
        f"a line of more than {size_text(max_line)}; the readers take lines of at most that "
        f"(set {MAX_LINE_BYTES_ENV} to raise the limit)",
    )


# ---------------------------------------------------------------- YAML text

# YAML 1.1 breaks lines at NEL, LINE SEPARATOR and PARAGRAPH SEPARATOR too: written
# raw, they cut an id short or fold into a space, and put YAML's line numbers out of
# step with the file's (LF) lines. The writer escapes them (\N, \L, \P).
YAML_BREAKS = {
    "\x85": ("NEL", "\\N"),
    "\u2028": ("LINE SEPARATOR", "\\L"),
    "\u2029": ("PARAGRAPH SEPARATOR", "\\P"),
}
YAML_BREAK = re.compile("[\x85\u2028\u2029]")


def refuse_yaml_line_breaks(path: str | os.PathLike[str], text: str, error: type[FormatError]) -> None:
    """golden.yaml's check: NEL, U+2028 and U+2029 break lines to YAML 1.1 (see YAML_BREAKS)."""
    found = YAML_BREAK.search(text)
    if found:
        char = found.group()
        line = text.count("\n", 0, found.start()) + 1
        column = found.start() - (text.rfind("\n", 0, found.start()) + 1) + 1
        name, escape = YAML_BREAKS[char]
        raise error(
            path,
            line,
            None,
            f"column {column}: U+{ord(char):04X} ({name}) is a line break to YAML; expected "
            f'LF line ends only (inside double quotes, write it as "{escape}")',
        )


# ---------------------------------------------------------------- uploads

UPLOAD_NAME_BYTES = 255  # the longest file name (in UTF-8 bytes) the common file systems keep


def upload_file_name(name: str, error: type[FormatError] = FormatError) -> str:
    """The file name an uploaded file is written under for the readers (which choose the format
    by its extension): the last part of the name the browser sent, ``upload`` when it has none.
    A name that cannot be a file's (``.`` or ``..``, a NUL, not UTF-8, more than
    :data:`UPLOAD_NAME_BYTES` bytes) is refused with ``error`` naming it and saying why."""
    base, last = Path(name).name, name.rstrip("/").rsplit("/", 1)[-1]
    if last in (".", ".."):
        why = f"{last!r} names a folder, not a file"
    elif "\0" in name:
        why = "it holds a NUL character"
    else:
        try:
            size = len(base.encode("utf-8"))
        except UnicodeEncodeError:
            why = "it is not UTF-8"
        else:
            if size <= UPLOAD_NAME_BYTES:
                return base or "upload"
            why = f"it is {size:,} bytes long; the limit is {UPLOAD_NAME_BYTES} bytes"
    raise error(
        shown_value(name),
        None,
        None,
        f"not a name a file can be saved under ({why}): rename the file and upload it again",
    )
