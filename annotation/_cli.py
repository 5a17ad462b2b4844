"""What both command lines share: a bad command line is one line on stderr and
exit 2, never argparse's usage block or a traceback."""

from __future__ import annotations

import argparse


class UsageError(Exception):
    """Bad command line: printed as one line, exit 2."""


class OneLineParser(argparse.ArgumentParser):
    """argparse, but an error raises :class:`UsageError` instead of printing usage and exiting."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(f"{self.prog}: {message}")


def positive_int(text: str) -> int:
    """An argparse type: an integer >= 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


DB_HELP = "SQLite file (default: $DENOMINATOR_DB or ./denominator.db)"


def add_db_option(parser: argparse.ArgumentParser) -> None:
    """``--db DB``, the same on every command that opens the store."""
    parser.add_argument("--db", default=None, help=DB_HELP)
