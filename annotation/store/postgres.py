"""The store on PostgreSQL: the same schema, migrations, append-only guards, transactions and
meanings as on SQLite, through psycopg 3, for a team whose app servers share one database.

``DENOMINATOR_DB=postgresql://...`` (or ``--db postgresql://...``) selects it; a file path (or
``sqlite:PATH``) keeps SQLite, the default. No ORM: the store's SQL is written once, in SQLite's
dialect, and :func:`translate` turns the few forms that differ into PostgreSQL's at the moment a
statement runs (``?`` placeholders, ``INSERT OR IGNORE``, ``ifnull``, ``instr``, ``IS`` between
values, the column types of a ``CREATE TABLE``). That keeps one copy of every query (about 170
statements) where an ORM or a query builder would have rewritten them all, and SQLite, the
default, runs exactly the SQL it ran before.

What runs the migrations: the one list of :mod:`annotation.store.migrations`, each applied inside
one write (below) and recorded in ``_migrations``; a migration's SQL differs per dialect only
where the two engines differ (the append-only triggers, which PostgreSQL writes as a function and
also fires on TRUNCATE; the queue positions' random numbers; ``rowid``, which PostgreSQL tables
get as a column where SQLite has it built in).

Write discipline, as on SQLite: one writer at a time. Every write is one transaction that first
takes a transaction-scoped advisory lock (:data:`WRITE_LOCK`), waiting at most the store's
``wait`` (``lock_timeout``; then :class:`StoreBusy`, nothing written). So two app servers, or the
judge runner beside them, write in turn exactly as two processes on one SQLite file do, and a
read-then-write (an item found or added, a queue's next item) cannot interleave with another.
Readers never wait: a read runs in autocommit and sees the last committed state.
"""

from __future__ import annotations

import re
import select
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from functools import lru_cache
from typing import Any, Protocol

from annotation.errors import masked

__all__ = [
    "is_url",
    "shown_url",
    "translate",
    "PgDatabase",
    "Cursor",
    "Connection",
    "Database",
    "connect",
    "WRITE_LOCK",
    "MIGRATIONS_TABLE",
]

SCHEMES = ("postgresql://", "postgres://")
WRITE_LOCK = 0x44656E6F  # 'Deno': the advisory lock every write takes first
MIGRATIONS_TABLE = "_migrations"


def is_url(path: str) -> bool:
    """True when ``path`` names a PostgreSQL database (``postgresql://`` or ``postgres://``)."""
    return str(path).startswith(SCHEMES)


def shown_url(url: str) -> str:
    """The URL as it may be printed: its user and password, if any, replaced by ``***``, in the
    authority (``user:pw@``, up to its last ``@``) and as query parameters (``?password=...``,
    ``sslpassword``, ``user``, their names percent-decoded): :func:`annotation.errors.masked`, the
    URL known, so no piece of its password is left either."""
    return masked(url, known=url)


# ------------------------------------------------------------------ the dialect, translated

_INSERT_OR_IGNORE = re.compile(r"^\s*INSERT\s+OR\s+IGNORE\s+INTO\b", re.IGNORECASE)
_IS_NOT = re.compile(r"\bIS\s+NOT\s+(?!NULL\b|DISTINCT\b|TRUE\b|FALSE\b)", re.IGNORECASE)
_IS = re.compile(r"\bIS\s+(?!NOT\b|NULL\b|DISTINCT\b|TRUE\b|FALSE\b)", re.IGNORECASE)
_LITERAL = re.compile(r"('(?:[^']|'')*')")
_NAMED = re.compile(r"(?<![:\w]):([A-Za-z_]\w*)")
_INSERT_VALUES = re.compile(r"^\s*INSERT\s+INTO\s+(\w+)\s*\([^)]*\)\s*VALUES\b", re.IGNORECASE)
# the tables whose key is ``id INTEGER PRIMARY KEY`` (an identity column here): a one-row INSERT
# into them returns its id (tests/test_store.py checks the list against the schema)
ID_TABLES = frozenset(
    (
        "runs",
        "items",
        "annotators",
        "labels",
        "judge_labels",
        "calibrations",
        "label_sets",
        "check_reports",
        "sessions",
        "imports",
        "retirements",
        "verdict_looks",
        "settlements",
        "handout",
        "guidelines",
        "label_reviews",
        "evidence_marks",
    )
)
_LOWER_PARAM = re.compile(r"\blower\(\s*\?\s*\)", re.IGNORECASE)
_CREATE_TABLE = re.compile(r"^\s*(CREATE\s+TABLE|ALTER\s+TABLE)\b", re.IGNORECASE)


@lru_cache(maxsize=4096)
def translate(sql: str, with_params: bool) -> str:
    """One statement of the store's SQL (SQLite's dialect) in PostgreSQL's. ``with_params``: the
    statement is run with parameters (``?`` becomes ``%s``, ``:name`` ``%(name)s``, and a literal
    ``%`` is doubled). String
    literals are left as they are; a statement holding a ``$$`` body (a function) is run as written."""
    if "$$" in sql:
        return sql
    sql = _LOWER_PARAM.sub('lower(CAST(? AS TEXT) COLLATE "C")', sql)  # ASCII letters only, as SQLite
    parts = _LITERAL.split(sql)
    ignore = bool(_INSERT_OR_IGNORE.match(parts[0]))
    for i in range(0, len(parts), 2):  # the parts outside string literals
        part = parts[i]
        if i == 0 and ignore:
            part = _INSERT_OR_IGNORE.sub("INSERT INTO", part, count=1)
        part = re.sub(r"\bifnull\s*\(", "coalesce(", part, flags=re.IGNORECASE)
        part = re.sub(r"\binstr\s*\(", "strpos(", part, flags=re.IGNORECASE)
        part = re.sub(r"\bwindow\b", '"window"', part)  # a column of calibrations; reserved in PostgreSQL
        part = _IS_NOT.sub("IS DISTINCT FROM ", part)
        part = _IS.sub("IS NOT DISTINCT FROM ", part)
        if with_params:
            part = _NAMED.sub(r"%(\1)s", part.replace("%", "%%").replace("?", "%s"))
        parts[i] = part
    if with_params:
        parts[1::2] = [literal.replace("%", "%%") for literal in parts[1::2]]
    out = "".join(parts)
    if ignore:
        out = out.rstrip().rstrip(";") + " ON CONFLICT DO NOTHING"
    insert = _INSERT_VALUES.match(out)
    if insert and insert.group(1) in ID_TABLES and "RETURNING" not in out.upper():
        out = _next_id(out, insert.group(1)).rstrip().rstrip(";") + " RETURNING id"  # lastrowid, same trip
    if _CREATE_TABLE.match(out):
        out = _column_types(out)
    elif _ORDER_BY.search(out):
        out = _nulls_as_sqlite(out)
    return out


_ORDER_BY = re.compile(r"\bORDER\s+BY\b", re.IGNORECASE)
_ENDS_ORDER = re.compile(
    r"\b(LIMIT|OFFSET|FETCH|UNION|EXCEPT|INTERSECT|ON\s+CONFLICT|RETURNING)\b", re.IGNORECASE
)


def _nulls_as_sqlite(sql: str) -> str:
    """Every ORDER BY term places NULL where SQLite does: first when ascending, last when
    descending (PostgreSQL does the opposite). Terms are split at commas outside parentheses
    and quotes; a term that says NULLS already, and a key that is never NULL, are left as they are."""
    literals = [m.span() for m in _LITERAL.finditer(sql)]
    out: list[str] = []
    i = 0
    while True:
        found = _ORDER_BY.search(sql, i)
        while found and any(a <= found.start() < b for a, b in literals):
            found = _ORDER_BY.search(sql, found.end())
        if not found:
            out.append(sql[i:])
            return "".join(out)
        out.append(sql[i : found.end()])
        depth, quoted, start, j = 0, False, found.end(), found.end()
        terms: list[str] = []
        while j < len(sql):
            char = sql[j]
            if char == "'":
                quoted = not quoted
            elif not quoted:
                if char == "(":
                    depth += 1
                elif char == ")":
                    if depth == 0:
                        break
                    depth -= 1
                elif char == ";" and depth == 0:
                    break
                elif char == "," and depth == 0:
                    terms.append(sql[start:j])
                    start = j + 1
                elif depth == 0 and _ENDS_ORDER.match(sql, j) and (j == 0 or not sql[j - 1].isalnum()):
                    break
            j += 1
        terms.append(sql[start:j])
        out.append(",".join(_nulls_term(term) for term in terms))
        i = j


# keys that are never NULL: ordered by them, the order is the index's (a NULLS clause would
# keep PostgreSQL from reading an index in order: the queue's next item by position, the newest
# label by id)
_NEVER_NULL = re.compile(r"^\s*(?:\w+\.)?(?:id|rowid|position)(?:\s+(?:ASC|DESC))?\s*$", re.IGNORECASE)


def _nulls_term(term: str) -> str:
    stripped = term.rstrip()
    words = stripped.upper().split()
    if not words or "NULLS" in words or _NEVER_NULL.match(stripped):
        return term
    tail = term[len(stripped) :]
    return stripped + (" NULLS LAST" if words[-1] == "DESC" else " NULLS FIRST") + tail


def _next_id(sql: str, table: str) -> str:
    """A new row's id as SQLite's rowid gives it, the highest id plus one, drawn under the write
    lock every write holds (a sequence would leave a gap behind a rolled-back write or an upsert
    that updated: an import refused, then the next import numbered 2 on PostgreSQL and 1 on
    SQLite). An INSERT that names its id (``migrate``) is left as it is."""
    columns = sql[sql.index("(") + 1 : sql.index(")")]
    if re.search(r"(^|,)\s*id\s*(,|$)", columns):
        return sql
    head = re.sub(r"^(\s*INSERT\s+INTO\s+\w+\s*)\(", r"\1(id, ", sql, count=1, flags=re.IGNORECASE)
    return re.sub(
        r"\bVALUES\s*\(",
        f"VALUES ((SELECT coalesce(max(id), 0) + 1 FROM {table}), ",
        head,
        count=1,
        flags=re.IGNORECASE,
    )


def _column_types(sql: str) -> str:
    """SQLite's column types in PostgreSQL's: an ``INTEGER PRIMARY KEY`` (SQLite's rowid) is an
    identity column, INTEGER is 64-bit (queue positions take 48 bits), REAL is double precision
    (PostgreSQL's REAL is 32-bit), a column with no type is TEXT, text sorts bytewise (``COLLATE
    "C"``: ``ORDER BY id`` gives SQLite's order, whatever the database's locale); ``WITHOUT ROWID`` goes. A table
    with no integer key gets a ``rowid`` identity column, the insertion order SQLite keeps."""
    out = re.sub(
        r"\bINTEGER PRIMARY KEY\b",
        "BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY",
        sql,
        flags=re.IGNORECASE,
    )
    out = re.sub(r"\bINTEGER\b", "BIGINT", out, flags=re.IGNORECASE)
    out = re.sub(r"\bREAL\b", "DOUBLE PRECISION", out, flags=re.IGNORECASE)
    out = re.sub(r"\brow_key NOT NULL\b", "row_key TEXT NOT NULL", out)
    out = re.sub(r"\)\s*WITHOUT ROWID\s*$", ")", out, flags=re.IGNORECASE)
    out = re.sub(r"\bTEXT\b", 'TEXT COLLATE "C"', out)  # bytewise order, as SQLite's BINARY
    if re.match(r"^\s*CREATE\s+TABLE\b", out, re.IGNORECASE) and "IDENTITY PRIMARY KEY" not in out:
        if "WITHOUT ROWID" not in sql.upper():
            out = out.rstrip()
            out = out[:-1] + ", rowid BIGINT GENERATED BY DEFAULT AS IDENTITY)"
    return out


# ------------------------------------------------------------------ the connection


class Cursor(Protocol):
    """What the store reads of a cursor, either backend's (``sqlite3.Cursor``, :class:`PgCursor`):
    rows as the driver gives them."""

    @property
    def rowcount(self) -> int: ...

    @property
    def lastrowid(self) -> int | None: ...

    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...

    def __iter__(self) -> Iterator[Any]: ...


class Connection(Protocol):
    """What the store uses of a connection (``sqlite3.Connection``, :class:`PgDatabase`)."""

    @property
    def in_transaction(self) -> bool: ...

    def execute(self, sql: str, params: Sequence[Any] = ..., /) -> Cursor: ...

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]], /) -> Cursor: ...

    def close(self) -> None: ...


class Database(Protocol):
    """The store's handle, either backend's (``sqlite_utils.Database``, :class:`PgDatabase`):
    ``execute`` and the connection underneath (``conn``)."""

    @property
    def conn(self) -> Connection: ...

    def execute(self, sql: str, params: Sequence[Any] | dict[str, Any] | None = None, /) -> Cursor: ...


class PgCursor:
    """What the store reads of a cursor, as sqlite3's: rows as tuples, ``lastrowid`` (the id a
    one-row INSERT returned, else the identity value the statement drew, asked only when read),
    ``rowcount``."""

    def __init__(self, cursor: Any, returns_id: bool = False) -> None:
        self._cursor = cursor
        self._returned: tuple[Any, ...] | None = cursor.fetchone() if returns_id else None
        self._returns_id = returns_id

    def fetchone(self) -> tuple[Any, ...] | None:
        return self._cursor.fetchone() if self._cursor.description and not self._returns_id else None

    def fetchall(self) -> list[tuple[Any, ...]]:
        return self._cursor.fetchall() if self._cursor.description and not self._returns_id else []

    def __iter__(self) -> Iterator[tuple[Any, ...]]:
        return iter(self._cursor) if self._cursor.description and not self._returns_id else iter(())

    def all_results(self) -> list[list[tuple[Any, ...]]]:
        """Each result's rows, of a text of several statements run at once (PostgreSQL's simple
        query: ``BEGIN; ...; SELECT ...``), in order; [] for a statement that returns none."""
        results = []
        while True:
            results.append(self._cursor.fetchall() if self._cursor.description else [])
            if not self._cursor.nextset():
                return results

    @property
    def rowcount(self) -> int:
        count: int = self._cursor.rowcount
        return count

    @property
    def description(self) -> Any:
        return None if self._returns_id else self._cursor.description

    @property
    def lastrowid(self) -> int | None:
        if self._returns_id:  # None when an INSERT OR IGNORE added nothing
            return int(self._returned[0]) if self._returned else None
        row = self._cursor.connection.execute("SELECT lastval()").fetchone()
        return int(row[0]) if row else None


class PgDatabase:
    """The store's handle on PostgreSQL, with the part of ``sqlite_utils.Database`` and
    ``sqlite3.Connection`` the store uses: ``execute``, ``executemany``, ``in_transaction``,
    ``close``; ``conn`` is itself (``store.db.conn.execute`` works on both backends)."""

    dialect = "postgresql"

    def __init__(self, connection: Any) -> None:
        self._connection = connection
        self.conn = self
        # what a read's operational error (a server gone, a connection lost) becomes: the store
        # sets it to one of its named errors; inside a write, the write names it
        self.read_error: Callable[[Exception], Exception] | None = None

    def execute(self, sql: str, params: Sequence[Any] | Mapping[str, Any] | None = None) -> PgCursor:
        statement = translate(sql, params is not None)
        if params is not None and not isinstance(params, Mapping):
            params = list(params)
        with self._named_errors():
            cursor = self._connection.execute(statement, params)
            return PgCursor(
                cursor,
                returns_id=statement.endswith(" RETURNING id")
                and not sql.rstrip().upper().endswith("RETURNING ID"),
            )

    def fetch_all_at_once(
        self, statements: Sequence[tuple[str, Sequence[Any] | Mapping[str, Any] | None]]
    ) -> list[list[tuple[Any, ...]]]:
        """Each statement's rows, the statements sent together and answered in one round trip
        (psycopg's pipeline: the server runs them in order, as one after another would). A
        statement that fails raises when the pipeline ends, as :meth:`execute` would. A libpq
        without pipelines (before PostgreSQL 14's; psycopg[binary] brings a newer one) runs them
        one after another."""
        import psycopg  # start-up: loaded by the PostgreSQL open already

        if not psycopg.Pipeline.is_supported():
            return [self.execute(sql, params).fetchall() for sql, params in statements]
        cursors = []
        with self._named_errors():
            with self._connection.pipeline():
                for sql, params in statements:
                    statement = translate(sql, params is not None)
                    if params is not None and not isinstance(params, Mapping):
                        params = list(params)
                    cursors.append(self._connection.execute(statement, params))
            return [cursor.fetchall() if cursor.description else [] for cursor in cursors]

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> PgCursor:
        with self._named_errors():
            cursor = self._connection.cursor()
            cursor.executemany(translate(sql, True), [list(row) for row in rows])
            return PgCursor(cursor)

    @contextmanager
    def _named_errors(self) -> Iterator[None]:
        import psycopg  # start-up: loaded by the PostgreSQL open already

        try:
            yield
        except psycopg.OperationalError as exc:
            if self.read_error is None or self.in_transaction:
                raise
            raise self.read_error(exc) from None

    @property
    def in_transaction(self) -> bool:
        import psycopg  # start-up: psycopg (~150 ms) only for a PostgreSQL store

        busy: bool = self._connection.info.transaction_status != psycopg.pq.TransactionStatus.IDLE
        return busy

    def quiet(self) -> bool:
        """True when the connection is open and nothing waits to be read on it, without a round
        trip: an idle connection in autocommit is sent nothing, so a server that shut down or
        restarted (its goodbye, or the socket closed) makes it readable."""
        if self._connection.closed or self._connection.broken:
            return False
        try:
            readable, _, _ = select.select([self._connection.fileno()], [], [], 0)
        except (OSError, ValueError):  # the socket is gone
            return False
        return not readable

    def close(self) -> None:
        self._connection.close()


def _number_loader() -> type:
    """PostgreSQL's numeric (what sum() and avg() of integers return) as SQLite gives it: an int
    when whole and written without a point (a sum), else a float (an average)."""
    from psycopg.adapt import Loader  # start-up: psycopg (~150 ms) only for a PostgreSQL store

    class NumberLoader(Loader):
        def load(self, data: Any) -> int | float:
            text = bytes(data).decode()
            if text in ("NaN", "Infinity", "-Infinity"):
                return float(text)
            return float(text) if ("." in text or "e" in text or "E" in text) else int(text)

    return NumberLoader


def connect(url: str, wait: float) -> PgDatabase:
    """A connection in autocommit (reads see the last commit, never wait), its writes bounded
    by ``lock_timeout`` = ``wait``. Raises psycopg's errors (the store names them)."""
    import psycopg  # start-up: psycopg (~150 ms) only for a PostgreSQL store

    # the session's settings travel with the connection request: no round trip of their own.
    # lock_timeout 0 means "wait forever" in PostgreSQL: the shortest wait is 1 ms.
    # jit off: the liveness subqueries (annotation.store.retirements) give the queue's reads
    # estimated costs above jit_above_cost, and compiling them took 0.9-2.4 s per key press on
    # the compare page (EXPLAIN ANALYZE: JIT 935 ms for a 2 ms read); no query of a labelling
    # tool runs long enough to gain from JIT.
    options = f"-c lock_timeout={max(1, int(wait * 1000))} -c client_min_messages=warning -c jit=off"
    connection = psycopg.connect(
        url, autocommit=True, connect_timeout=max(1, int(wait) or 1), options=options
    )
    connection.adapters.register_loader("numeric", _number_loader())
    return PgDatabase(connection)


# ------------------------------------------------------------------ schema on PostgreSQL


def tables(db: Database) -> set[str]:
    """The tables of the connection's schema."""
    rows = db.execute(
        "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()"
    ).fetchall()
    return {row[0] for row in rows}


def triggers(db: Database) -> set[str]:
    """The names of the triggers on the schema's tables."""
    rows = db.execute(
        """SELECT t.tgname FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
           JOIN pg_namespace n ON n.oid = c.relnamespace
           WHERE n.nspname = current_schema() AND NOT t.tgisinternal"""
    ).fetchall()
    return {row[0] for row in rows}


def applied(db: Database, migration_set: str) -> tuple[str, ...]:
    """The migrations applied, in order; () when the table is not there."""
    if not _exists(db, MIGRATIONS_TABLE):
        return ()
    rows = db.execute(
        f"SELECT name FROM {MIGRATIONS_TABLE} WHERE migration_set = ? ORDER BY id", [migration_set]
    ).fetchall()
    return tuple(row[0] for row in rows)


def _exists(db: Database, table: str) -> bool:
    exists: bool = db.execute("SELECT to_regclass(?) IS NOT NULL", [table]).fetchone()[0]
    return exists


def apply(db: Database, migration_set: str, migrations: Sequence[tuple[str, Any]], now: str) -> None:
    """Apply the pending ``(name, function)`` migrations in order, each recorded; inside the
    caller's write (which holds :data:`WRITE_LOCK`: two processes opening a new database at once
    apply them once)."""
    db.execute(
        f"""CREATE TABLE IF NOT EXISTS {MIGRATIONS_TABLE} (id BIGINT GENERATED BY DEFAULT AS IDENTITY
            PRIMARY KEY, migration_set TEXT NOT NULL, name TEXT NOT NULL, applied_at TEXT NOT NULL,
            UNIQUE (migration_set, name))"""
    )
    done = set(applied(db, migration_set))
    for name, function in migrations:
        if name in done:
            continue
        function(db)
        db.execute(
            f"INSERT INTO {MIGRATIONS_TABLE} (migration_set, name, applied_at) VALUES (?, ?, ?)",
            [migration_set, name, now],
        )


def append_only_sql(table: str, message: str) -> list[str]:
    """PostgreSQL's append-only guards on ``table``: ``<table>_no_update`` and
    ``<table>_no_delete`` (per row, as SQLite's), and ``<table>_no_truncate`` (TRUNCATE fires no
    row trigger), each raising ``message``."""
    quoted = message.replace("'", "''")
    statements = [
        """CREATE OR REPLACE FUNCTION denominator_append_only() RETURNS trigger LANGUAGE plpgsql AS
           $$ BEGIN RAISE EXCEPTION '%', TG_ARGV[0] USING ERRCODE = 'integrity_constraint_violation'; END $$"""
    ]
    for action, scope in (("update", "ROW"), ("delete", "ROW"), ("truncate", "STATEMENT")):
        statements.append(
            f"""CREATE TRIGGER {table}_no_{action} BEFORE {action.upper()} ON {table}
                FOR EACH {scope} EXECUTE FUNCTION denominator_append_only('{quoted}')"""
        )
    return statements
