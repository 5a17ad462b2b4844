"""One root for every error Denominator names: :class:`DenominatorError`.

Library code raises a subclass (with ``ValueError`` or ``KeyError`` kept as a second base
where callers catch those); the two boundaries, the command lines
(:func:`annotation.cli_base.run_main`) and the pages (:func:`annotation.page_guard.guarded`),
catch this one class and say its message in one line. A driver's error (sqlite3, psycopg,
openai, yaml, the operating system) that reaches a boundary is named there by
:func:`describe`, never shown as a traceback.

This module imports nothing but the standard library: every layer may import it.
"""

from __future__ import annotations

import re
import threading

# a URL's user info and the secrets it may carry as query parameters (libpq's password=,
# sslpassword=, passfile= and the user): a driver's message may quote the URL it was given
_USERINFO = re.compile(r"(?<=://)[^/@\s]+@")
_SECRET = re.compile(r"(?i)(?<=[?&\s])((?:ssl)?password|passfile|user)=[^&#\s]*")
LINE_LIMIT = 300  # a message is cut to this many characters on a boundary


class DenominatorError(Exception):
    """The root of every error Denominator names: said in one line at a boundary, exit 2."""


# where a driver's error comes from, by the top module of its class (the boundary names it)
DRIVERS = {
    "sqlite3": "the SQLite database",
    "psycopg": "the PostgreSQL server",
    "psycopg_pool": "the PostgreSQL server",
    "openai": "the judge's endpoint",
    "httpx": "the judge's endpoint",
    "yaml": "the YAML reader",
    "pyarrow": "the file reader (pyarrow)",
}


STORES = ("sqlite3", "psycopg", "psycopg_pool")  # a lost connection or disk: the store is unavailable


def masked(text: str) -> str:
    """``text`` with any URL's user info (``user:pw@``) and secret parameters (``password=``,
    ``sslpassword=``, ``passfile=``, ``user=``) replaced by ``***``."""
    return _SECRET.sub(lambda m: f"{m.group(1)}=***", _USERINFO.sub("***@", text))


def one_line(text: str, limit: int = LINE_LIMIT) -> str:
    """The first line of ``text``, masked, at most ``limit`` characters."""
    first = masked(str(text)).strip().splitlines()
    line = first[0] if first else ""
    return line if len(line) <= limit else line[: limit - 1] + "…"


def describe(exc: BaseException) -> str:
    """One line for an error that is no :class:`DenominatorError`: which driver (or the operating
    system) failed and its own first line; anything else is named as a bug to report."""
    if isinstance(exc, DenominatorError):
        return one_line(str(exc))
    root = type(exc).__module__.split(".")[0]
    detail = one_line(str(exc)) or type(exc).__name__
    if root in STORES and type(exc).__name__ in ("OperationalError", "InterfaceError"):
        return (
            f"the store is unavailable ({DRIVERS[root]}: {detail}); what was stored before stays: "
            "run the same command again when it is back"
        )
    if root in DRIVERS:
        return f"{DRIVERS[root]} failed ({type(exc).__name__}): {detail}"
    if isinstance(exc, MemoryError):
        return "out of memory: the input is too large for this machine"
    if isinstance(exc, RecursionError):
        return "the input is nested too deeply to read"
    if isinstance(exc, OSError):
        where = f": {one_line(exc.filename)}" if getattr(exc, "filename", None) else ""
        return f"{exc.strerror or detail}{where}"
    return (
        f"unexpected {type(exc).__name__} (a bug in Denominator; please report it with the "
        f"command that caused it): {detail}"
    )


# Records a reader skipped because they cannot be read (a row written by something else: a
# review whose kappa is text, a judge's answer that is no grade, settings that are not JSON).
# Kept per thread (a page view runs in its own), said by the boundary: a ``note:`` line on a
# command line's stderr, a warning on a page.
_SKIPPED = threading.local()


def skip_record(note: str) -> None:
    """Say, at the boundary, that a stored record was skipped and why (``note`` names the row)."""
    notes = getattr(_SKIPPED, "notes", None)
    if notes is None:
        notes = _SKIPPED.notes = []
    if note not in notes and len(notes) < 100:
        notes.append(note)


def skipped_records() -> list[str]:
    """The notes :func:`skip_record` took since the last call (the list is emptied)."""
    notes = getattr(_SKIPPED, "notes", None) or []
    _SKIPPED.notes = []
    return notes
