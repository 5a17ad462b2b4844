"""The store's base: the connection, the write discipline, the errors, and the
item rows every concern shares.

Readers never wait for writers: an open reads (the file's first bytes, then the schema) and
starts no transaction, so under WAL every read sees a snapshot while an import writes. The schema
is checked once per process and file (again only when its ``schema_version`` changes); the
migrations run, inside one ``BEGIN IMMEDIATE`` transaction, only when one is pending. A file that
is no Denominator database, a schema newer than this code (an unknown migration) or one missing an
append-only guard is refused, with the schema version named, before anything is written to it
(a refused file is not even switched to WAL).

Write discipline: every write is one short ``BEGIN IMMEDIATE`` transaction
(:meth:`StoreBase.write`), so a second writer waits politely, for at most
:func:`busy_seconds` (then :class:`StoreBusy`, nothing written), and an import lands whole
or not at all. A write inside another write is part of the enclosing one. A full disk
(:class:`DiskFull`) and a disk I/O error (:class:`DiskError`) are named as such; the
transaction is rolled back once (SQLite may have rolled it back already).
"""

from __future__ import annotations

import contextlib
import os
import random
import sqlite3
from collections.abc import Hashable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any, Self, cast

from annotation.errors import DenominatorError, masked
from annotation.store import postgres as pg
from annotation.store.migrations import APPEND_ONLY, MIGRATIONS, migration_functions, migration_names
from annotation.store.sqlite_handle import SqliteDatabase

__all__ = [
    "StoreBase",
    "StoreError",
    "StoreBusy",
    "DiskFull",
    "DiskError",
    "NotADenominatorDatabase",
    "SchemaRefused",
    "ImportConflict",
    "OffScale",
    "busy_seconds",
    "default_db_path",
    "database_exists",
    "sqlite_path",
    "holds_nothing",
    "random_position",
    "inserted_id",
    "utc_now",
    "DEFAULT_DB",
    "BUSY_ENV",
    "BUSY_TIMEOUT_MS",
    "ITEM_KINDS",
]

DEFAULT_DB = "denominator.db"
BUSY_TIMEOUT_MS = 10_000  # the default bound on a write's wait for another write
BUSY_ENV = "DENOMINATOR_BUSY_SECONDS"
SQLITE_HEADER = b"SQLite format 3\x00"
ITEM_KINDS = ("chunk", "trace", "pair")
ITEM_KEYS = ("query_id", "chunk_id", "trace_id", "trace_b_id")


class StoreError(DenominatorError):
    """A store operation that cannot be done as asked."""


class StoreBusy(StoreError):
    """Another write held the store for longer than :func:`busy_seconds`; nothing was written."""


class DiskFull(StoreError):
    """The disk (or the database's page limit) is full; nothing was written."""


class DiskError(StoreError):
    """The operating system reported a disk I/O error."""


class NotADenominatorDatabase(StoreError):
    """The file is not a Denominator database (it was left as it was)."""


class SchemaRefused(StoreError):
    """A Denominator database this code must not write: a newer schema, or an append-only guard
    missing (it was left as it was)."""


class ImportConflict(StoreError):
    """An import would change what is stored (nothing is written)."""


class OffScale(StoreError):
    """An imported grade that is not on the rubric's scale (nothing is written)."""

    def __init__(self, message: str, qid: str, doc: str, grade: int) -> None:
        super().__init__(message)
        self.qid, self.doc, self.grade = qid, doc, grade


def default_db_path() -> str:
    """``DENOMINATOR_DB``, else ``./denominator.db``: the one default of the app, ``make run``
    and every command line. A ``postgresql://`` URL names a PostgreSQL database
    (:mod:`annotation.store.postgres`); ``sqlite:PATH`` or a path, an SQLite file."""
    return os.environ.get("DENOMINATOR_DB") or DEFAULT_DB


def sqlite_path(path: str) -> str:
    """The file of an SQLite store: ``sqlite:PATH`` (or ``sqlite:///PATH``) or a plain path."""
    for prefix in ("sqlite:///", "sqlite://", "sqlite:"):
        if path.startswith(prefix):
            return path[len(prefix) :]
    return path


def shown_location(path: str) -> str:
    """The database as a person reads it: a bare file name as ``./name`` (so it is plainly a file of
    the current folder), the user and password of a URL replaced by ``***``."""
    if "://" in path:  # any URL: its user and password are never printed
        return pg.shown_url(path)
    path = sqlite_path(path)
    # a key=value connection string given where a URL was meant is a file name here: its
    # password=... is not printed either
    return masked(path if os.path.dirname(path) else os.path.join(".", path), known=path)


def database_exists(path: str | os.PathLike[str]) -> bool:
    """True when the store is there to open: a PostgreSQL URL (its server says at open), an
    SQLite file that exists."""
    return pg.is_url(str(path)) or os.path.exists(sqlite_path(str(path)))


def empty_file(path: str | os.PathLike[str]) -> bool:
    """True when ``path`` is an SQLite path whose file is there and holds no byte: no Denominator
    database (a command that only reads refuses it rather than write a schema into it)."""
    if pg.is_url(str(path)):
        return False
    try:
        return os.path.getsize(sqlite_path(str(path))) == 0
    except OSError:
        return False


def busy_seconds() -> float:
    """How long a write waits for another write to end before :class:`StoreBusy`:
    ``DENOMINATOR_BUSY_SECONDS``, else 10."""
    raw = os.environ.get(BUSY_ENV, "").strip()
    if not raw:
        return BUSY_TIMEOUT_MS / 1000
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not 0 <= value < 86_400:
        raise StoreError(f"{BUSY_ENV} must be a number of seconds from 0 to 86400, not {raw!r}")
    return value


def cause(exc: Exception) -> str:
    """What an SQLite error means for a person: ``busy``, ``disk full``, ``disk I/O error``,
    ``not a database``, ``read-only`` or ``""`` (say the error itself)."""
    name = getattr(exc, "sqlite_errorname", None) or ""
    text = str(exc).lower()
    if name.startswith(("SQLITE_BUSY", "SQLITE_LOCKED")) or "database is locked" in text or "busy" in text:
        return "busy"
    if name.startswith("SQLITE_FULL") or "disk is full" in text:
        return "disk full"
    if name.startswith("SQLITE_IOERR") or "disk i/o error" in text:
        return "disk I/O error"
    if (
        name.startswith(("SQLITE_NOTADB", "SQLITE_CORRUPT"))
        or "not a database" in text
        or "malformed" in text
    ):
        return "not a database"
    if name.startswith("SQLITE_READONLY") or "readonly" in text:
        return "read-only"
    return ""


DATA_TABLES = ("queries", "chunks", "runs", "traces", "labels")


def holds_nothing(path: str | os.PathLike[str]) -> bool:
    """True when ``path`` is missing or holds no data: no query, chunk, run, trace or label
    (annotators alone are no data: a team may hand out tokens first). Opening a file that
    exists applies the migrations; a file that is no Denominator database is a StoreError."""
    if not database_exists(path):
        return True
    with StoreBase(path) as store:
        counts = store.counts()
    return not any(counts[table] for table in DATA_TABLES)


RANDOM = random.SystemRandom()


def random_position() -> int:
    """A queue position: random, so the order of a queue leaks no rank."""
    return RANDOM.getrandbits(48)


def inserted_id(cursor: pg.Cursor) -> int:
    """The id a one-row ``INSERT`` gave its row (``lastrowid`` is None only when no row was
    inserted: an ``INSERT OR IGNORE`` that ignored it)."""
    row_id = cursor.lastrowid
    assert row_id is not None, "a one-row INSERT that did not raise inserted its row"
    return int(row_id)


def utc_now() -> str:
    """The time a row is written: UTC, ISO 8601 to the microsecond."""
    return datetime.now(UTC).isoformat(timespec="microseconds")


# Files whose schema this process has checked (and migrated), by StoreBase._checked_key: a later
# open of the same file at the same schema version and migrations checks nothing and writes nothing.
_CHECKED: set[tuple[Hashable, ...]] = set()


def _read_header(path: str) -> None:
    """Refuse a file that is not SQLite by its first bytes, before SQLite opens it."""
    try:
        with open(path, "rb") as file:
            head = file.read(len(SQLITE_HEADER))
    except FileNotFoundError:
        return  # a new database
    except IsADirectoryError:
        raise StoreError(f"{path}: cannot open the database (it is a directory)") from None
    except OSError as exc:
        if exc.errno == 5:  # EIO
            raise DiskError(f"{path}: cannot open the database: disk I/O error ({exc.strerror})") from None
        raise StoreError(f"{path}: cannot open the database ({exc.strerror})") from None
    if head and head != SQLITE_HEADER:
        raise NotADenominatorDatabase(
            f"{path}: not a Denominator database (not an SQLite file); it was left as it was"
        )


def _pg_reason(exc: Exception, url: str) -> str:
    """A psycopg error in one line, without the password the store's URL (``url``) holds, nor
    any piece of it libpq quotes (:func:`annotation.errors.masked`)."""
    return masked(" ".join(str(exc).split()) or type(exc).__name__, known=url)


def _pg_cause(exc: Exception) -> str:
    """What a PostgreSQL error means for a person, as :func:`cause` says SQLite's."""
    code = getattr(exc, "sqlstate", None) or ""
    if code in ("55P03", "40P01"):  # lock_not_available (lock_timeout), deadlock
        return "busy"
    if code == "53100":
        return "disk full"
    if code.startswith("58"):
        return "disk I/O error"
    return ""


def _open_error(path: str, exc: sqlite3.Error) -> StoreError:
    what = cause(exc)
    if what == "busy":
        return StoreBusy(f"{path}: the database is busy ({exc}); try again")
    if what == "disk full":
        return DiskFull(f"{path}: cannot open the database: disk full ({exc})")
    if what == "disk I/O error":
        return DiskError(f"{path}: cannot open the database: disk I/O error ({exc})")
    if what == "not a database":
        return NotADenominatorDatabase(f"{path}: not a Denominator database ({exc})")
    return StoreError(f"{path}: cannot open the database ({exc})")


class StoreBase:
    """A handle on the SQLite file; one per script run (or per session). ``wait``: how long a
    write waits for another write (default :func:`busy_seconds`)."""

    dialect = "sqlite"
    db: pg.Database  # SqliteDatabase (what sqlite_utils.Database gave), or pg.PgDatabase on PostgreSQL
    # what the open write has read that no other writer can change before it ends (it holds the
    # one write lock): None outside a write (:meth:`write` empties it at each outermost begin)
    write_memo: dict[str, Any] | None = None
    _schema_ready = False  # every migration applied (checked at the open): each table is there

    def __init__(
        self, path: str | os.PathLike[str] | None = None, *, wait: float | None = None, patient: bool = False
    ) -> None:
        self.path = str(path or default_db_path())
        # a bulk writer (an import, a command line's write, a load test): while other writes keep
        # landing, its turn is coming and it waits on; StoreBusy only after ``wait`` seconds in
        # which no write landed. A person's key press is not patient: it keeps the short bound.
        self.patient = patient
        self.turns_waited = 0  # busy windows a patient write waited through while others wrote
        # where the store is, to open it again (another process, a writer thread): the file, or
        # the URL with its credentials; ``path`` is what messages print (no credentials)
        self.location = self.path
        self.wait = busy_seconds() if wait is None else wait
        if pg.is_url(self.path):
            self._open_postgres(self.path)
            return
        self.path = self.location = sqlite_path(self.path)
        _read_header(self.path)
        try:
            conn = sqlite3.connect(self.path, timeout=self.wait, isolation_level=None)
        except sqlite3.Error as exc:
            raise _open_error(self.path, exc) from None
        try:
            self.db = SqliteDatabase(conn)
            # settings of this connection only: nothing here writes to the file
            conn.execute(f"PRAGMA busy_timeout = {int(self.wait * 1000)}")
            conn.execute("PRAGMA synchronous = FULL")  # a submitted label survives a crash
            conn.execute("PRAGMA foreign_keys = ON")
            # reads through a memory map and a 64 MB page cache: the labelling loop
            # stays as fast with a million chunks as with a thousand (bench/labelling.py)
            conn.execute("PRAGMA mmap_size = 268435456")
            conn.execute("PRAGMA cache_size = -65536")
            self._check_schema()
        except StoreError:
            conn.close()
            raise
        except sqlite3.Error as exc:
            conn.close()
            raise _open_error(self.path, exc) from None

    def _check_schema(self) -> None:
        """Refuse a foreign file or a schema this code must not write (reading only), then switch
        to WAL and apply pending migrations; once per process and schema version of the file."""
        conn = self.db.conn
        applied = self._applied()
        if self._checked_key(applied) in _CHECKED:
            self._schema_ready = True
            return
        tables = self._tables()
        if tables and not applied:
            shown = ", ".join(sorted(tables)[:3]) + (", ..." if len(tables) > 3 else "")
            raise NotADenominatorDatabase(
                f"{self.path}: not a Denominator database (it holds other tables: {shown}); "
                "it was left as it was"
            )
        known = migration_names()
        newer = [name for name in applied if name not in known]
        if newer:
            raise SchemaRefused(
                f"{self.path}: written by a newer Denominator (schema {', '.join(newer)}; this version "
                f"knows up to {known[-1]}); refused, it was left as it was: upgrade Denominator to open it"
            )
        self._check_guards(applied)
        if self.dialect == "sqlite" and conn.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
            conn.execute("PRAGMA journal_mode = WAL")
        if set(known) - set(applied):
            with self.write():
                self._migrate()
            applied = self._applied()
        _CHECKED.add(self._checked_key(applied))
        self._schema_ready = True

    def _open_postgres(self, url: str) -> None:
        """Connect to PostgreSQL (:mod:`annotation.store.postgres`), then the same checks as a
        file's: a schema of another application, a newer schema or a missing guard is refused;
        pending migrations run inside one write."""
        # start-up: psycopg (~150 ms) only for a PostgreSQL store
        import psycopg

        self.dialect = "postgresql"
        self.path = pg.shown_url(url)  # what messages print: never the password
        try:
            self.db = db = pg.connect(url, self.wait)
        except psycopg.Error as exc:
            raise StoreError(
                f"{self.path}: cannot connect to the database ({_pg_reason(exc, url)})"
            ) from None
        db.read_error = lambda exc: StoreError(f"{self.path}: cannot read ({_pg_reason(exc, url)})")
        try:
            self._check_schema()
        except StoreError:
            db.close()
            raise
        except psycopg.Error as exc:
            db.close()
            raise StoreError(f"{self.path}: cannot open the database ({_pg_reason(exc, url)})") from None

    def _tables(self) -> set[str]:
        if self.dialect == "postgresql":
            return pg.tables(self.db)
        return {r[0] for r in self.db.conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}

    def _migrate(self) -> None:
        """Apply the pending migrations (inside :meth:`write`)."""
        if self.dialect == "postgresql":
            pg.apply(self.db, MIGRATIONS.name, migration_functions(), utc_now())
        else:
            MIGRATIONS.apply(self.db)  # through sqlite-utils, imported only now

    def columns(self, table: str) -> set[str]:
        """The column names of ``table`` (a table of the store's schema)."""
        if self.dialect == "postgresql":
            rows = self.db.execute(
                "SELECT column_name FROM information_schema.columns "
                "WHERE table_schema = current_schema() AND table_name = ?",
                [table],
            ).fetchall()
            return {row[0] for row in rows}
        return {row[1] for row in self.db.execute(f"PRAGMA table_info({table})").fetchall()}

    def _applied(self) -> tuple[str, ...]:
        """The names of the Denominator migrations applied to the file, in order (a read)."""
        if self.dialect == "postgresql":
            return pg.applied(self.db, MIGRATIONS.name)
        try:
            rows = self.db.conn.execute(
                "SELECT name FROM _sqlite_migrations WHERE migration_set = ? ORDER BY rowid",
                [MIGRATIONS.name],
            ).fetchall()
        except sqlite3.OperationalError as exc:
            if "no such" in str(exc):  # a new file, or another tool's table of that name
                return ()
            raise
        return tuple(row[0] for row in rows)

    def _checked_key(self, applied: tuple[str, ...]) -> tuple[Hashable, ...]:
        """What a schema check holds for: this file (device, inode), its schema version (any
        change of table, index or trigger moves it) and its applied migrations. On PostgreSQL: the
        database's URL and its applied migrations."""
        if self.dialect == "postgresql":  # no schema version: the guards present stand in for it
            return (self.location, applied, frozenset(pg.triggers(self.db)))
        stat = os.stat(self.path)
        version = self.db.conn.execute("PRAGMA schema_version").fetchone()[0]
        return (stat.st_dev, stat.st_ino, version, applied)

    def _check_guards(self, applied: tuple[str, ...]) -> None:
        """Every append-only trigger the applied migrations made is there."""
        if self.dialect == "postgresql":
            present = pg.triggers(self.db)
        else:
            present = {
                r[0] for r in self.db.conn.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'")
            }
        missing = [
            f"{table}_no_{action}"
            for name in applied
            for table in APPEND_ONLY.get(name, ())
            for action in ("update", "delete")
            if f"{table}_no_{action}" not in present
        ]
        if missing:
            raise SchemaRefused(
                f"{self.path}: the append-only guard{'s' if len(missing) > 1 else ''} {', '.join(missing)} "
                f"{'are' if len(missing) > 1 else 'is'} missing (schema {applied[-1]}): its labels could "
                "have been changed in place; refused, it was left as it was"
            )

    def close(self) -> None:
        """Close the connection (a write in progress is rolled back)."""
        self.db.conn.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def write(self) -> Iterator[pg.Database]:
        """One short ``BEGIN IMMEDIATE`` transaction: all of it lands, or none. Waits at most
        ``self.wait`` seconds for another write (then :class:`StoreBusy`)."""
        conn = self.db.conn
        if conn.in_transaction:  # nested: part of the enclosing write
            yield self.db
            return
        failures = self._failures()
        none_retired = self._begin()
        self.write_memo = {} if none_retired is None else {"none_retired": none_retired}
        try:
            try:
                yield self.db
            except failures as exc:  # read-only file, full disk, I/O error, a lost server
                self._rollback()
                raise self._write_error(exc) from None
            except BaseException:
                self._rollback()
                raise
            try:
                conn.execute("COMMIT")
            except failures as exc:
                self._rollback()
                raise self._write_error(exc) from None
        finally:
            self.write_memo = None

    def _rules_changed(self) -> None:
        """An assignment or a handout made in this write: what the write read of the queues'
        rules (``Queue.queue_rule``, kept per write) is out of date."""
        if self.write_memo is not None:
            for key in [k for k in self.write_memo if k.startswith("rule ")]:
                del self.write_memo[key]

    def _failures(self) -> tuple[type[Exception], ...]:
        """The driver's errors a write reports as a StoreError (busy, disk full, I/O)."""
        if self.dialect == "postgresql":
            import psycopg  # start-up: loaded by the PostgreSQL open already

            return (psycopg.OperationalError,)
        return (sqlite3.OperationalError,)

    def _begin(self) -> bool | None:
        """``BEGIN IMMEDIATE``: SQLite's busy handler tries again, with growing sleeps, for the
        connection's busy timeout (``self.wait``, unless a caller set ``PRAGMA busy_timeout``).
        A patient store tries again after each busy window in which another write landed
        (:meth:`_landed`): the bound grows with the queue of writers, never past a window
        without progress. On PostgreSQL, whether no import is retired, read under the write's
        lock in the same round trip (the queue's reads ask it once per write); else None."""
        from annotation.store.retirements import NONE_RETIRED  # start-up: a module of the store's own

        failures = self._failures()
        seen = self._landed() if self.patient else None
        while True:
            try:
                if self.dialect == "postgresql" and not self._schema_ready:  # the migrations' own write
                    self.db.execute(f"BEGIN; SELECT pg_advisory_xact_lock({pg.WRITE_LOCK})")
                    return None
                if self.dialect == "postgresql":
                    # one round trip: the transaction, its turn (every write takes the one lock) and
                    # whether any import is retired (the queue's statements drop their liveness tests
                    # while none is: annotation.store.queue)
                    begun = self.db.execute(
                        f"BEGIN; SELECT pg_advisory_xact_lock({pg.WRITE_LOCK}); {NONE_RETIRED}"
                    )
                    answers = cast(pg.PgCursor, begun).all_results()
                    return bool(answers[-1][0][0])
                self.db.conn.execute("BEGIN IMMEDIATE")
                return None
            except failures as exc:
                self._rollback()
                busy = (_pg_cause(exc) if self.dialect == "postgresql" else cause(exc)) == "busy"
                if busy and seen is not None and (now := self._landed()) != seen:
                    seen = now  # others wrote meanwhile: the queue moves, wait for the next window
                    self.turns_waited += 1
                    continue
                raise self._write_error(exc) from None

    def _landed(self) -> str:
        """A mark that changes whenever another connection's write lands: SQLite's
        ``data_version``; on PostgreSQL the next transaction id to be given out (every write takes
        one under the write lock)."""
        if self.dialect == "postgresql":
            row = self.db.execute("SELECT pg_snapshot_xmax(pg_current_snapshot())::text").fetchone()
        else:
            row = self.db.conn.execute("PRAGMA data_version").fetchone()
        return str(row[0])

    def _rollback(self) -> None:
        """Roll back what is still open: after a full disk or an I/O error SQLite may have rolled
        the transaction back itself, and a second ROLLBACK would only hide the first error."""
        if self.db.conn.in_transaction:
            # a ROLLBACK that fails leaves a hot journal, which SQLite rolls back at the next open;
            # the error being reported is the one that says what happened
            with contextlib.suppress(*self._failures()):
                self.db.conn.execute("ROLLBACK")

    def _write_error(self, exc: Exception) -> StoreError:
        what = _pg_cause(exc) if self.dialect == "postgresql" else cause(exc)
        if what == "busy":
            waited = self.wait if self.dialect == "postgresql" else self._busy_timeout()
            return StoreBusy(
                f"{self.path}: the store is busy: another write (an import?) held it for more than "
                f"{waited:g} s; nothing was written, try again"
            )
        if what == "disk full":
            return DiskFull(f"{self.path}: cannot write: disk full ({exc}); nothing was written")
        if what == "disk I/O error":
            return DiskError(f"{self.path}: cannot write: disk I/O error ({exc}); nothing was written")
        return StoreError(f"{self.path}: cannot write ({exc}); nothing was written")

    def _busy_timeout(self) -> float:
        millis: int = self.db.conn.execute("PRAGMA busy_timeout").fetchone()[0]
        return millis / 1000

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
            return inserted_id(
                db.execute(
                    f"INSERT INTO items (kind, {', '.join(ITEM_KEYS)}, position) VALUES (?, ?, ?, ?, ?, ?)",
                    [kind, *values, random_position()],
                )
            )

    def current_value(self, item_id: int, annotator_id: int) -> tuple[Any, ...] | None:
        """(value,) of the newest label row of this annotator on this item; None if none.
        A retraction is (None,)."""
        row = self.db.execute(
            "SELECT value FROM labels WHERE item_id = ? AND annotator_id = ? ORDER BY id DESC LIMIT 1",
            [item_id, annotator_id],
        ).fetchone()
        return tuple(row) if row else None
