"""The value readers: every number, size, name, address and small file a command line (or the
environment) hands Denominator is read here, bounded before any work starts.

Each reader is an argparse type (``type=positive_int``) and a plain function: a bad value raises
:class:`BadValue`, an ``argparse.ArgumentTypeError`` (argparse says it as the option's error) and a
:class:`~annotation.errors.DenominatorError` (a command line's or a page's boundary says it in one
line, exit 2) at once. :mod:`annotation.cli_base` re-exports the converters it held before.

Light on purpose: the standard library and :mod:`annotation.errors` only, so the options table
(:mod:`annotation.options`), and through it the store, can read it without loading the command
lines' boundary.
"""

from __future__ import annotations

import argparse
import math
import os
import re
import stat
from collections.abc import Callable
from urllib.parse import urlsplit

from annotation.errors import DenominatorError

__all__ = [
    "parse_designs",
    "MAX_INT",
    "MAX_PERMUTATIONS",
    "SMALL_FILE",
    "BadValue",
    "bounded_float",
    "bounded_int",
    "endpoint_url",
    "finite_float",
    "fraction",
    "grade",
    "int64",
    "batch_id",
    "judge_name",
    "name",
    "name_problem",
    "named",
    "run_name",
    "permutations",
    "positive_int",
    "ranks",
    "read_small_file",
    "refuse_special",
    "seed",
    "shown",
    "small_file",
    "special_kind",
]


class BadValue(DenominatorError, argparse.ArgumentTypeError):
    """A value a reader refused: argparse says it as the option's error; a boundary, in one line."""


# The largest count or number a command line takes: 2^63 - 1, what SQLite's INTEGER and numpy's
# int64 hold (a pool depth, a k, a sample size are stored or indexed as 64-bit integers).
MAX_INT = 2**63 - 1
# The randomization test's sign flips: 1,000,000 gives p to three digits in seconds on a few
# thousand queries; 2^63 - 1 ran for hours.
MAX_PERMUTATIONS = 1_000_000
# A small file a command reads whole (a price table, a secrets.toml): what a person writes by hand.
SMALL_FILE = 1 << 20
_ASCII_INT = re.compile(r"[+-]?[0-9]+")


def shown(text: str) -> str:
    """A value as an error quotes it: ``repr``, cut at 40 characters."""
    return repr(text) if len(text) <= 40 else f"{text[:40]!r}... ({len(text)} characters)"


def _integer(text: str, expected: str) -> int:
    """``text`` as a decimal integer in ASCII digits (no 1_000, no other scripts' digits), at most
    :data:`MAX_INT` in size; else :class:`BadValue` saying ``expected``."""
    stripped = text.strip()
    if not _ASCII_INT.fullmatch(stripped):
        raise BadValue(f"expected {expected}, got {shown(text)}")
    digits = stripped.lstrip("+-").lstrip("0")
    value = int(stripped) if len(digits) <= 19 else MAX_INT + 1  # int() refuses 4300+ digits
    if abs(value) > MAX_INT:
        raise BadValue(
            f"expected {expected} of at most {MAX_INT} (2^63 - 1, what SQLite and numpy hold), got {shown(text)}"
        )
    return value


def positive_int(text: str) -> int:
    """An integer from 1 to :data:`MAX_INT`."""
    value = _integer(text, "a positive integer")
    if value < 1:
        raise BadValue(f"expected a positive integer, got {shown(text)}")
    return value


def int64(text: str) -> int:
    """An integer from -:data:`MAX_INT` to :data:`MAX_INT` (a seed)."""
    return _integer(text, "an integer")


def seed(text: str) -> int:
    """A random seed, an integer from 0 to :data:`MAX_INT` (numpy's generators refuse a negative seed)."""
    value = _integer(text, "a seed, an integer >= 0")
    if value < 0:
        raise BadValue(f"expected a seed, an integer >= 0, got {shown(text)}")
    return value


def grade(text: str) -> int:
    """A relevance threshold, an integer >= 0 (negative grades are never relevant)."""
    value = _integer(text, "an integer >= 0")
    if value < 0:
        raise BadValue(f"expected an integer >= 0 (negative grades are judged, never relevant), got {text!r}")
    return value


def bounded_int(low: int, high: int, why: str = "") -> Callable[[str], int]:
    """A reader of an integer from ``low`` to ``high``, the range said in its error (``why``
    after it: what the bound is)."""

    def parse(text: str) -> int:
        stripped = text.strip()
        value = int(stripped) if _ASCII_INT.fullmatch(stripped) and len(stripped) <= 21 else None
        if value is None or not low <= value <= high:
            raise BadValue(f"{shown(text)}: expected an integer from {low:,} to {high:,}{why}")
        return value

    return parse


permutations = bounded_int(1, MAX_PERMUTATIONS, " (random sign flips)")


def ranks(text: str) -> tuple[int, ...]:
    """Comma-separated ranks (``50,100,1000``), also the Data page's reading of the same box; which
    ranks make strata is the sample's to say."""
    try:
        return tuple(int(b) for b in text.split(",") if b.strip())
    except ValueError:
        raise BadValue(f"{shown(text)}: expected comma-separated ranks, e.g. 50,100,1000") from None


def finite_float(text: str) -> float:
    """A finite number (nan and inf refused)."""
    try:
        value = float(text)
    except ValueError:
        raise BadValue(f"expected a number, got {shown(text)}") from None
    if not math.isfinite(value):
        raise BadValue(f"expected a finite number, got {shown(text)}")
    return value


def fraction(text: str) -> float:
    """A number between 0 and 1."""
    try:
        value = float(text)
    except ValueError:
        raise BadValue(f"expected a number between 0 and 1, got {shown(text)}") from None
    if not 0.0 <= value <= 1.0:  # nan fails both comparisons
        raise BadValue(f"expected a number between 0 and 1, got {text!r}")
    return value


def bounded_float(low: float, high: float, low_open: bool = False) -> Callable[[str], float]:
    """A reader of a finite number from ``low`` (excluded when ``low_open``) to ``high``; nan and
    inf refused."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if not math.isfinite(value) or not (low < value if low_open else low <= value) or value > high:
            span = f"above {low:g} and at most {high:g}" if low_open else f"from {low:g} to {high:g}"
            raise BadValue(f"{shown(text)}: expected a finite number {span}")
        return value

    return parse


def endpoint_url(text: str) -> str:
    """An endpoint's address: ``http://`` or ``https://`` with a host (``ftp://x``, ``http://``, a
    bare name are refused, before any call is made). An address that carries a user name or
    password (an ``@`` before its query) is refused without being repeated: the key goes in its
    environment variable. The address as given."""
    if "@" in re.split(r"[?#]", text, maxsplit=1)[0]:
        raise BadValue(
            "an endpoint's address cannot carry a user name or password (user:password@host; "
            "not repeated here): give the key through the API key's environment variable"
        )
    try:
        parts = urlsplit(text.strip())
        host = parts.hostname
    except ValueError:  # a bad port or IPv6 literal
        parts, host = None, None
    if parts is None or parts.scheme.lower() not in ("http", "https"):
        raise BadValue(f"expected an http:// or https:// address, got {shown(text)}")
    if not host:
        raise BadValue(f"expected an http:// or https:// address with a host, got {shown(text)}")
    return text


NAME_MAX = 200  # characters of a run's name, a judge's, a batch's id


def name_problem(text: str | None, what: str = "a name") -> str | None:
    """Why ``text`` is no name (a run's, a judge's, a batch's id): empty or blank, longer than
    :data:`NAME_MAX` characters, or holding a control character (a line break); None when it is
    one. The one rule of ``baseline --name``, ``import --run FILE --name``, ``export --judge`` and
    ``judge batch status|collect ID``; ``what`` names it in the reason."""
    stripped = (text or "").strip()
    if not stripped:
        return f"{what} cannot be empty"
    if len(stripped) > NAME_MAX:
        return f"{what} of {len(stripped):,} characters; at most {NAME_MAX}"
    if any(ord(ch) < 32 or ord(ch) == 127 for ch in stripped):
        return f"{what} {shown(stripped)} holds a control character (a line break?)"
    return None


def named(what: str) -> Callable[[str], str]:
    """A reader of a name (:func:`name_problem`), said as ``what``; the name as given."""

    def parse(text: str) -> str:
        problem = name_problem(text, what)
        if problem is not None:
            raise BadValue(problem)
        return text

    return parse


name = named("a name")
run_name = named("a run's name")
judge_name = named("a judge's name")
batch_id = named("a batch id")


_KINDS = (
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def _kind(mode: int) -> str | None:
    if stat.S_ISREG(mode):
        return None
    return next((what for test, what in _KINDS if test(mode)), "not a regular file")


def special_kind(path: str | os.PathLike[str]) -> str | None:
    """What ``path`` is when it is there and no regular file (``a FIFO (named pipe)``, ``a
    character device``, ``a folder``); None for a regular file or nothing there. Read from
    ``stat``: nothing is opened (a FIFO opened for reading waits for a writer for ever)."""
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):  # missing, unreadable, a NUL in the name: the opener says so
        return None
    return _kind(mode)


def refuse_special(path: str | os.PathLike[str], where: str | None = None) -> None:
    """:class:`BadValue` when ``path`` is there and no regular file: ``[WHERE: ]PATH is a FIFO
    (named pipe), not a regular file; nothing was opened``."""
    kind = special_kind(path)
    if kind is not None:
        said = f"{where}: " if where else ""
        raise BadValue(f"{said}{os.fspath(path)} is {kind}, not a regular file; nothing was opened")


def small_file(text: str) -> str:
    """A file a command reads whole later (a price table): refused now when it is a FIFO, a device
    or a folder, or larger than :data:`SMALL_FILE`; the path as given (a missing file is the
    reader's to name)."""
    refuse_special(text)
    try:
        size = os.stat(text).st_size
    except (OSError, ValueError):
        return text
    if size > SMALL_FILE:
        raise BadValue(f"{text}: {size:,} bytes; at most {SMALL_FILE:,} are read")
    return text


def read_small_file(path: str | os.PathLike[str], where: str, limit: int = SMALL_FILE) -> bytes:
    """A file read whole, at most ``limit`` bytes: a FIFO, a device or a folder is refused before it
    is opened, a larger file before it is read (:class:`BadValue`, naming ``where``). Missing or
    unreadable files raise the operating system's error (``FileNotFoundError``, ...)."""
    refuse_special(path, where)
    # O_NONBLOCK: a FIFO swapped in after the check is opened without waiting, then refused
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        kind = _kind(info.st_mode)
        if kind is not None:
            raise BadValue(f"{where}: {os.fspath(path)} is {kind}, not a regular file")
        if info.st_size > limit:
            raise BadValue(f"{where}: {info.st_size:,} bytes; at most {limit:,} are read")
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise BadValue(f"{where}: more than {limit:,} bytes; at most {limit:,} are read")
    return data


MAX_DESIGN = 1_000_000  # a design's Q or m above this is refused


_DESIGN = re.compile(r"^\s*(\d+)\s*[xX]\s*(\d+)\s*$")


def parse_designs(text: str) -> list[tuple[int, int]]:
    """``"5x60,10x30"`` -> ``[(5, 60), (10, 30)]``; ValueError in one line naming the bad part."""
    designs: list[tuple[int, int]] = []
    parts = [p for p in str(text).split(",")]
    if not any(p.strip() for p in parts):
        raise ValueError("no design given; expected QxM[,QxM...], e.g. 5x60,10x30")
    for part in parts:
        match = _DESIGN.match(part)
        if not match:
            raise ValueError(
                f"design {part.strip()!r}; expected QxM (queries x chunks per query), e.g. 10x30"
            )
        q, m = int(match.group(1)), int(match.group(2))
        if not (2 <= q <= MAX_DESIGN and 1 <= m <= MAX_DESIGN):
            raise ValueError(
                f"design {part.strip()!r}: queries must be 2 to {MAX_DESIGN:,} and chunks per query 1 to {MAX_DESIGN:,}"
            )
        if (q, m) not in designs:
            designs.append((q, m))
    return designs


def origin(url: str) -> str | None:
    """``scheme://host[:port]`` of an http(s) address, the host in lower case and a default port
    (80, 443) left out; None for anything else. Two addresses with one origin share the browser's
    cookies, so a sign-in started at one comes back to the other signed in."""
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError:  # a port out of range or not a number
        return None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return None
    host = parts.hostname.lower()
    host = f"[{host}]" if ":" in host else host  # an IPv6 address, bracketed again
    default = {"http": 80, "https": 443}[parts.scheme]
    return f"{parts.scheme}://{host}" + (f":{port}" if port not in (None, default) else "")


def sign_in_link(url: str, token: str) -> str:
    """The whole sign-in link: the app's address (``url``, as people open it) and its ``?token=``
    (the link's page asks before it signs anyone in: docs/labelling.md)."""
    return f"{url.rstrip('/')}/?token={token}"
