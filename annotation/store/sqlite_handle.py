"""The store's handle on an SQLite file: the part of ``sqlite_utils.Database`` the store uses
(``execute``, ``executemany``, ``conn``, ``close``), without importing sqlite-utils.

sqlite-utils (and click, dateutil and pluggy with it) costs ~0.05 s of CPU to import: at every
start of a command that opens a store, the judge's among them (#42). The store writes its rows
by SQL and makes its tables by its migrations, so a store whose schema is current never needs
it; a pending migration imports it then (:meth:`annotation.store.migrations.MigrationSet.apply`).

What ``sqlite_utils.Database(conn)`` did to the connection is done here too: recursive triggers
on. Not its plugins' ``prepare_connection`` hook: no third-party code runs on the store's
connection. Its ``execute`` commits a transaction the statement opened implicitly; the store's
connection is in autocommit (``isolation_level=None``), where sqlite3 opens none.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

__all__ = ["SqliteDatabase"]


class SqliteDatabase:
    """``execute``, ``executemany`` and ``close`` on one sqlite3 connection (``conn``)."""

    dialect = "sqlite"

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        conn.execute("PRAGMA recursive_triggers=on;")

    def execute(self, sql: str, params: Sequence[Any] | Mapping[str, Any] | None = None) -> sqlite3.Cursor:
        return self.conn.execute(sql) if params is None else self.conn.execute(sql, params)

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> sqlite3.Cursor:
        return self.conn.executemany(sql, rows)

    def close(self) -> None:
        self.conn.close()
