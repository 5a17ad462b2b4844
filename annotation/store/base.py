"""The store's base: the connection, the write discipline, the errors, and the
item rows every concern shares.

Write discipline: every write is one short ``BEGIN IMMEDIATE`` transaction
(:meth:`StoreBase.write`), so a second process waits (busy timeout) instead of
failing, and an import lands whole or not at all. A write inside another write
is part of the enclosing one. Migrations run once, at open, inside such a
transaction.
"""

from __future__ import annotations

import os
import random
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Self

import sqlite_utils

from annotation.store.migrations import MIGRATIONS

__all__ = [
    "StoreBase",
    "StoreError",
    "ImportConflict",
    "OffScale",
    "default_db_path",
    "holds_nothing",
    "random_position",
    "utc_now",
    "DEFAULT_DB",
    "BUSY_TIMEOUT_MS",
    "ITEM_KINDS",
]

DEFAULT_DB = "denominator.db"
BUSY_TIMEOUT_MS = 10_000
ITEM_KINDS = ("chunk", "trace", "pair")
ITEM_KEYS = ("query_id", "chunk_id", "trace_id", "trace_b_id")


class StoreError(Exception):
    """A store operation that cannot be done as asked."""


class ImportConflict(StoreError):
    """An import would change what is stored (nothing is written)."""


class OffScale(StoreError):
    """An imported grade that is not on the rubric's scale (nothing is written)."""

    def __init__(self, message: str, qid: str, doc: str, grade: int) -> None:
        super().__init__(message)
        self.qid, self.doc, self.grade = qid, doc, grade


def default_db_path() -> str:
    """``DENOMINATOR_DB``, else ``./denominator.db``: the one default of the app, ``make run``
    and every command line."""
    return os.environ.get("DENOMINATOR_DB") or DEFAULT_DB


DATA_TABLES = ("queries", "chunks", "runs", "traces", "labels")


def holds_nothing(path: str | os.PathLike) -> bool:
    """True when ``path`` is missing or holds no data: no query, chunk, run, trace or label
    (annotators alone are no data: a team may hand out tokens first). Opening a file that
    exists applies the migrations; a file that is no Denominator database is a StoreError."""
    if not os.path.exists(path):
        return True
    with StoreBase(path) as store:
        counts = store.counts()
    return not any(counts[table] for table in DATA_TABLES)


RANDOM = random.SystemRandom()


def random_position() -> int:
    """A queue position: random, so the order of a queue leaks no rank."""
    return RANDOM.getrandbits(48)


def utc_now() -> str:
    """The time a row is written: UTC, ISO 8601 to the microsecond."""
    return datetime.now(UTC).isoformat(timespec="microseconds")


class StoreBase:
    """A handle on the SQLite file; one per script run (or per session)."""

    def __init__(self, path: str | os.PathLike | None = None) -> None:
        self.path = str(path or default_db_path())
        try:
            conn = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None)
        except sqlite3.Error as exc:
            raise StoreError(f"{self.path}: cannot open the database ({exc})") from None
        self.db = sqlite_utils.Database(conn)
        try:
            self.db.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            self.db.execute("PRAGMA journal_mode = WAL")
            self.db.execute("PRAGMA synchronous = FULL")  # a submitted label survives a crash
            self.db.execute("PRAGMA foreign_keys = ON")
            # reads through a memory map and a 64 MB page cache: the labelling loop
            # stays as fast with a million chunks as with a thousand (bench/labelling.py)
            self.db.execute("PRAGMA mmap_size = 268435456")
            self.db.execute("PRAGMA cache_size = -65536")
            with self.write():
                MIGRATIONS.apply(self.db)
        except StoreError:
            conn.close()
            raise
        except sqlite3.DatabaseError as exc:
            conn.close()
            if "locked" in str(exc) or "busy" in str(exc):
                raise StoreError(f"{self.path}: the database is busy ({exc}); try again") from None
            raise StoreError(f"{self.path}: not a Denominator database ({exc})") from None

    def close(self) -> None:
        """Close the connection (a write in progress is rolled back)."""
        self.db.conn.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def write(self) -> Iterator[sqlite_utils.Database]:
        """One short ``BEGIN IMMEDIATE`` transaction: all of it lands, or none."""
        conn = self.db.conn
        if conn.in_transaction:  # nested: part of the enclosing write
            yield self.db
            return
        try:
            conn.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as exc:
            raise StoreError(f"{self.path}: cannot write ({exc})") from None
        try:
            yield self.db
        except sqlite3.OperationalError as exc:  # read-only file, full disk, lock held too long
            conn.execute("ROLLBACK")
            raise StoreError(f"{self.path}: cannot write ({exc}); nothing was written") from None
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        try:
            conn.execute("COMMIT")
        except sqlite3.OperationalError as exc:
            conn.execute("ROLLBACK")
            raise StoreError(f"{self.path}: cannot write ({exc}); nothing was written") from None

    def counts(self) -> dict[str, int]:
        """Rows per table: what the store holds, in one line of a summary."""
        tables = ("queries", "chunks", "runs", "rankings", "traces", "items", "annotators", "labels")
        return {t: self.db.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in tables}

    # ------------------------------------------------------------ rows every concern shares

    def ensure_ids(self, table: str, ids: set[str]) -> None:
        """Rows for ids only known from a run or a label file (text to come later)."""
        with self.write() as db:
            db.conn.executemany(f"INSERT OR IGNORE INTO {table} (id) VALUES (?)", [(i,) for i in sorted(ids)])

    def ensure_item(self, kind: str, **keys: str | None) -> int:
        """The id of the ``kind`` item with these keys (query_id, chunk_id, trace_id,
        trace_b_id), added at a random queue position when there is none."""
        values = [keys.get(c) for c in ITEM_KEYS]
        with self.write() as db:
            row = db.execute(
                "SELECT id FROM items WHERE kind = ? AND "
                + " AND ".join(f"ifnull({c}, '') = ifnull(?, '')" for c in ITEM_KEYS),
                [kind, *values],
            ).fetchone()
            if row:
                return int(row[0])
            return int(
                db.execute(
                    f"INSERT INTO items (kind, {', '.join(ITEM_KEYS)}, position) VALUES (?, ?, ?, ?, ?, ?)",
                    [kind, *values, random_position()],
                ).lastrowid
            )

    def current_value(self, item_id: int, annotator_id: int) -> tuple | None:
        """(value,) of the newest label row of this annotator on this item; None if none.
        A retraction is (None,)."""
        row = self.db.execute(
            "SELECT value FROM labels WHERE item_id = ? AND annotator_id = ? ORDER BY id DESC LIMIT 1",
            [item_id, annotator_id],
        ).fetchone()
        return tuple(row) if row else None
