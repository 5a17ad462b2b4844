"""What the three command lines share: a bad command line is one line on stderr and
exit 2, never argparse's usage block or a traceback."""

from __future__ import annotations

import argparse
import importlib
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from typing import TYPE_CHECKING, Any, Literal

from annotation.errors import DenominatorError, describe, one_line, skipped_records
from annotation.quiet_start import INTERRUPTED, INTERRUPTED_LINE, on_interrupt, was_interrupted
from annotation.values import (  # noqa: F401 - the value readers, re-exported: they lived here before #38
    MAX_INT,
    BadValue,
    finite_float,
    fraction,
    grade,
    int64,
    positive_int,
    ranks,
    refuse_special,
    seed,
)

if TYPE_CHECKING:  # the store (sqlite-utils) is imported only by the commands that open it
    from annotation.store import Store


class UsageError(DenominatorError):
    """Bad command line: printed as one line, exit 2."""


class OneLineParser(argparse.ArgumentParser):
    """argparse, but an error raises :class:`UsageError` instead of printing usage and exiting."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(f"{self.prog}: {message}")


USAGE = 2  # bad usage or input, an unavailable store: every named error


def interrupted() -> int:
    """Ctrl-C: one line on stderr and exit 130, never a traceback. Every write is one transaction
    (an import lands whole or not at all; a judge's answers are stored one whole row at a time), so
    an interruption leaves nothing half-written."""
    print(INTERRUPTED_LINE, file=sys.stderr)
    return INTERRUPTED


def _stores(args: argparse.Namespace | None) -> list[str]:
    """The stores a command names (``--db``, ``--from``/``--to``, ``DENOMINATOR_DB``): a message
    about one of them leaves out any piece of its password (:func:`annotation.errors.masked`)."""
    named = [getattr(args, name, None) for name in ("db", "source", "target")]
    return [str(store) for store in (*named, os.environ.get("DENOMINATOR_DB")) if store]


def run_main(
    parser: argparse.ArgumentParser,
    dispatch: Callable[[argparse.Namespace], tuple[str, int]],
    argv: Sequence[str] | None,
) -> int:
    """The one boundary of every command line: parse, run, print. A named error
    (:class:`~annotation.errors.DenominatorError`) is its message in one line, exit 2; Ctrl-C is
    :func:`interrupted`, exit 130; a driver's or the operating system's error is named in one
    line (:func:`~annotation.errors.describe`), exit 2; a closed stdout is no error. No traceback
    crosses it (``DENOMINATOR_DEBUG=1`` shows the traceback of an unexpected error)."""
    skipped_records()  # from an earlier command of this process (tests call main() in turn)
    was_interrupted(reset=True)
    args = None
    try:
        args = parser.parse_args(argv)
        text, code = dispatch(args)
    except KeyboardInterrupt:
        return interrupted()
    except DenominatorError as exc:
        print(f"error: {one_line(str(exc), limit=4000, known=_stores(args))}", file=sys.stderr)
        return USAGE
    except BrokenPipeError:
        return 0
    except Exception as exc:
        if was_interrupted():  # a Ctrl-C a library turned into its own error (an import's ImportError)
            return interrupted()
        if os.environ.get("DENOMINATOR_DEBUG"):
            raise
        print(f"error: {describe(exc, known=_stores(args))}", file=sys.stderr)
        return USAGE
    finally:
        say_notes(skipped_records())  # stored records a reader could not read, each named
    emit(text)
    return code


def interrupt_as_usual() -> None:
    """Ctrl-C as a KeyboardInterrupt again (the command's code and :func:`run_main` handle it;
    :func:`annotation.quiet_start.on_interrupt` remembers it and makes a second one final), once
    the imports are done (a no-op off the main thread, where no handler can be set)."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, on_interrupt)


def one_blas_thread() -> None:
    """One BLAS thread for a command that multiplies no matrices, asked before numpy loads: numpy's
    import starts OpenBLAS's thread per core, 0.05 s of CPU at every start (#42). A user's own
    ``OPENBLAS_NUM_THREADS`` stands. Each package's ``__main__`` names its commands that need it."""
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


def lazy_commands(module: str, names: Sequence[str]) -> dict[str, Callable[[argparse.Namespace], Any]]:
    """The commands of a light entry (``python -m GROUP``), by name: each imports ``module`` (the
    group's ``commands_cli``, with numpy, pyarrow or the store) only when it runs, then hands Ctrl-C
    back to Python (:func:`interrupt_as_usual`). Until then Ctrl-C is one line and exit 130: one
    that lands inside an import would be an ignored exception printed with its traceback."""

    def command(name: str) -> Callable[[argparse.Namespace], Any]:
        def run(args: argparse.Namespace) -> Any:
            commands = importlib.import_module(module)  # start-up: only the command that runs
            interrupt_as_usual()
            return commands.run(name, args)

        return run

    return {name: command(name) for name in names}


def emit(text: str) -> None:
    """A command's output on stdout; a pipe closed early (``| head``) is no error of ours."""
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except BrokenPipeError:
        pass


def say_notes(notes: Sequence[str]) -> None:
    """What a reader wants the user told (``Qrels.notes``: e.g. queries named by their
    text), one ``note: ...`` line each on stderr, beside the output, never in it."""
    for note in notes:
        print(f"note: {note}", file=sys.stderr)


DB_HELP = "the store: an SQLite file or a postgresql:// URL (default: $DENOMINATOR_DB or ./denominator.db)"


def add_db_option(parser: argparse.ArgumentParser) -> None:
    """``--db DB``, the same on every command that opens the store."""
    parser.add_argument("--db", default=None, help=DB_HELP)


Access = Literal["read", "write", "create"]


def shown_db(path: str) -> str:
    """The database as a person reads it (:func:`annotation.store.shown_location`): ``./name`` for a
    bare file name, the user and password of a URL replaced by ``***``."""
    # start-up: the store's package, which the command is about to open anyway
    from annotation.store import shown_location

    return shown_location(path)


def refuse_special_db(path: str) -> None:
    """A FIFO, a device or a folder named as the SQLite database (``--db``, ``DENOMINATOR_DB``) is
    refused before it is opened (SQLite would wait on a FIFO for ever): :class:`BadValue`, exit 2."""
    # start-up: the store's package, which the command is about to open anyway
    from annotation.store.base import sqlite_path

    refuse_special(sqlite_path(path), "the database")


# names of the files Denominator reads and writes beside its database: an empty one is no new
# database for a command that creates one (SQLite would take it and write its schema into it)
DATA_FILE_SUFFIXES = (".jsonl", ".json", ".yaml", ".yml", ".csv", ".tsv", ".parquet", ".txt", ".toml")


def empty_file_refusal(path: str) -> UsageError:
    """What a command says of a 0-byte file named as the store it must not create there."""
    return UsageError(f"{shown_db(path)} is an empty file, not a Denominator database; it was left as it was")


def refuse_data_file_as_new_db(path: str) -> None:
    """A command that creates the store refuses an existing empty file whose name says it holds
    data of another kind (``x.jsonl``): :class:`UsageError`, exit 2, the file left as it was. An
    empty ``x.db`` (``touch x.db``) stays a new database, as SQLite takes it."""
    # start-up: the store's package, which the command is about to open anyway
    from annotation.store import empty_file

    if empty_file(path) and path.lower().endswith(DATA_FILE_SUFFIXES):
        raise empty_file_refusal(path)


def check_served_db(path: str) -> None:
    """``serve``'s store, checked before the server starts: a file that is there must be a
    Denominator database (an empty file, a file that is not SQLite, an SQLite file of other
    tables or a newer schema: one line, exit 2, the file left as it was); opening it applies the
    pending migrations the app's first page would. A missing file is served as it is (the pages
    say how to build one); a PostgreSQL URL is not opened here (the app waits for a server that
    is down: its pages say the store is unavailable until it is back)."""
    # start-up: the store's package, which the app is about to open anyway
    from annotation.store import Store, database_exists, empty_file
    from annotation.store.postgres import is_url

    if is_url(path) or not database_exists(path):
        return
    if empty_file(path):
        raise empty_file_refusal(path)
    with Store(path):  # a StoreError names what the file is; nothing is written to a foreign file
        pass


@contextmanager
def open_store(db: str | None, access: Access) -> Iterator[Store]:
    """The store a command works on, closed at the end: ``db`` (its ``--db``), else
    ``$DENOMINATOR_DB``, else ``./denominator.db``, the default the app and ``make run`` use too.

    - ``read``: the file must exist (else :class:`UsageError` ``no such database: PATH``, exit 2;
      nothing is created).
    - ``write``: the file must exist too (the command needs data a new file would not hold).
    - ``create``: a missing file is created: ``database: PATH (created)``. If the command then
      fails with the new file still empty, the file is removed: a refused command leaves nothing.

    Once the command has succeeded, whatever its access, ``database: PATH`` on stderr (:func:`say_db`):
    every figure a command prints from a store says which store. A failed command says nothing
    more than its error (one line on stderr).
    """
    # start-up: the store (sqlite-utils, ~0.3 s), only for the commands that open it
    from annotation.store import Store, database_exists, default_db_path, empty_file

    path = str(db or default_db_path())
    refuse_special_db(path)
    existed = database_exists(path)
    if not existed and access != "create":
        raise UsageError(
            f"no such database: {shown_db(path)} (denominator demo or python -m annotation import creates one; "
            "--db or DENOMINATOR_DB names another)"
        )
    if access != "create" and empty_file(path):
        raise empty_file_refusal(path)
    refuse_data_file_as_new_db(path)
    # a command's write is a bulk writer's: it waits through other writes while they keep landing
    store = Store(path, patient=access != "read")
    try:
        yield store
    except BaseException:
        empty = not existed and not any(store.counts().values())
        store.close()
        if empty:
            for leftover in (path, f"{path}-wal", f"{path}-shm"):
                with suppress(FileNotFoundError):
                    os.remove(leftover)
        raise
    store.close()
    say_db(path, created=not existed)


def say_db(path: str, *, created: bool = False) -> None:
    """``database: PATH`` on stderr (``(created)`` after it for a new file): the line every command
    that has read or written a store ends with."""
    print(f"database: {shown_db(path)}{' (created)' if created else ''}", file=sys.stderr)


def plural(n: int, word: str, many: str | None = None) -> str:
    """``1 run``, ``3 runs``; ``many`` where adding an s is wrong (``query``, ``queries``)."""
    return f"{n} {word if n == 1 else many or word + 's'}"


def add_format_option(parser: argparse.ArgumentParser, *choices: str) -> None:
    """``--format``: the first choice is the default."""
    parser.add_argument(
        "--format",
        choices=list(choices),
        default=choices[0],
        help=f"the output's format (default {choices[0]})",
    )
