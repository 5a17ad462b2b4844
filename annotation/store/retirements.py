"""Imports that can be taken back (:class:`Retirements`), and the one definition of a *live* row
that every reader of the store filters on (:func:`live`, :func:`live_item`).

An import (one ``import_files`` call: the files of one ``python -m annotation import`` or one
press of the Data page's Import button) is a row of ``imports``: its id, a name, its kind, who ran
it, when. Retiring or restoring it appends a row to ``retirements``; the newest row per import
decides; nothing is updated or deleted (the three tables are append-only).

What an import *holds* (``import_rows``): every query, chunk, run, trace and label row it names,

- the rows it added (a new id, a NULL text it filled, the placeholder query and chunk rows a run,
  a label file or traces create for ids not stored yet, the label rows it appended);
- the rows already there that it names (a query its run ranks, the same text or run or trace
  again, a grade equal to the annotator's current one) *when another import holds them*: an
  identical re-import, or two imports naming one query, keep that row live while either is live.

A row that no import holds (stored before migration m012, made in the app, a pool's item) is never
retired, and an import naming it does not start holding it.

Live: a held row is *retired* when every import holding it is retired; every other row is live.
Derived: a ranking is live when its run, query and chunk are; an item when its query, chunk and
trace(s) are; a label row when it is live and its item is; a judge's answer when its item is. The
label that counts per (item, annotator) is the newest *live* row: retiring a label file brings
back the grade it had covered; restoring it covers it again.

Items pooled from a retired run stay (their query and chunk may still be live: a (query, chunk)
pair's grade does not depend on which run found it); the run's rankings leave pools, metrics and
exports.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from functools import lru_cache
from typing import Any, Literal, TypedDict

from annotation.store.base import StoreBase, StoreError, inserted_id, utc_now

__all__ = [
    "Retirements",
    "UnknownImport",
    "ImportRecord",
    "ImportChange",
    "HELD_TABLES",
    "RETIRED_IMPORTS",
    "retired_keys",
    "live",
    "live_item",
    "live_ranking",
    "NONE_RETIRED",
    "all_live",
]

HELD_TABLES = ("queries", "chunks", "runs", "traces", "labels")

# the imports whose newest retirements row says 'retire'
RETIRED_IMPORTS = (
    "SELECT r.import_id FROM retirements r WHERE r.action = 'retire' "
    "AND r.id = (SELECT max(id) FROM retirements WHERE import_id = r.import_id)"
)


def retired_keys(table: str) -> str:
    """SQL: the keys of ``table``'s retired rows (held, and only by retired imports). Not
    correlated: SQLite computes it once per statement (nothing when nothing is retired)."""
    if table not in HELD_TABLES:
        raise StoreError(f"table {table!r}; expected one of {', '.join(HELD_TABLES)}")
    key = "CAST(h.row_key AS BIGINT)" if table in ("runs", "labels") else "h.row_key"  # PostgreSQL keeps text
    return (
        f"SELECT {key} FROM import_rows h WHERE h.tbl = '{table}' AND h.import_id IN ({RETIRED_IMPORTS}) "
        f"AND NOT EXISTS (SELECT 1 FROM import_rows o WHERE o.tbl = h.tbl AND o.row_key = h.row_key "
        f"AND o.import_id NOT IN ({RETIRED_IMPORTS}))"
    )


def live(column: str, table: str) -> str:
    """SQL: true when ``column`` (an id of ``table``) is NULL or names no retired row."""
    return f"NOT coalesce({column} IN ({retired_keys(table)}), FALSE)"


def live_item(alias: str = "i") -> str:
    """SQL: true when the item ``alias`` stands on live rows (its query, chunk and traces)."""
    return " AND ".join(
        (
            live(f"{alias}.query_id", "queries"),
            live(f"{alias}.chunk_id", "chunks"),
            live(f"{alias}.trace_id", "traces"),
            live(f"{alias}.trace_b_id", "traces"),
        )
    )


# true when no import is retired: then no row is retired, and every liveness test is true
NONE_RETIRED = f"SELECT NOT EXISTS ({RETIRED_IMPORTS})"


@lru_cache(maxsize=1)
def _liveness_tests() -> re.Pattern[str]:
    """Every :func:`live` test as the SQL holds it, whatever its column."""
    tests = (re.escape(live("COLUMN", table)).replace("COLUMN", r"[\w.]+") for table in HELD_TABLES)
    return re.compile("|".join(f"(?:{test})" for test in tests))


@lru_cache(maxsize=512)
def all_live(sql: str) -> str:
    """``sql`` with each :func:`live` test in it written ``TRUE``: the same statement while no
    import is retired (:data:`NONE_RETIRED`; every ``retired_keys`` is then empty, and
    ``x IN (empty)`` is false, NULL ``x`` included), without its subqueries (each liveness test is
    three; PostgreSQL spent more time planning a queue read than running it, #42)."""
    return _liveness_tests().sub("TRUE", sql)


def live_ranking(alias: str = "k") -> str:
    """SQL: true when the ranking row ``alias`` is live: its run, query and chunk are."""
    return " AND ".join(
        (
            live(f"{alias}.run_id", "runs"),
            live(f"{alias}.query_id", "queries"),
            live(f"{alias}.chunk_id", "chunks"),
        )
    )


class UnknownImport(StoreError):
    """An import id the store does not hold."""


class ImportRecord(TypedDict):
    """One import as :meth:`Retirements.imports` lists it."""

    id: int
    name: str
    kind: str
    who: str
    source: str | None
    created_at: str
    rows: dict[str, int]  # table -> rows it holds
    state: Literal["live", "retired"]
    changed_by: str | None  # these three from its newest retire/restore row; None when never
    changed_at: str | None
    reason: str | None


class ImportChange(ImportRecord):
    """An import retired or restored (:meth:`Retirements.retire_import`)."""

    changed: bool  # False: it was in that state already (no row added)


class Retirements(StoreBase):
    """Imports as records: recorded, listed, retired and restored."""

    _import_id: int | None = None  # the import being recorded (:meth:`recording`)

    @contextmanager
    def recording(
        self,
        name: str,
        kind: str,
        who: str,
        source: str | None = None,
        meta: Mapping[str, Any] | None = None,
    ) -> Iterator[int]:
        """One import, inside one write: its ``imports`` row first; every row the store's
        ``import_*`` methods write or name inside the block is held by it. Yields its id."""
        if not (name or "").strip() or not (who or "").strip():
            raise StoreError("an import needs a name and who ran it")
        with self.write() as db:
            import_id = inserted_id(
                db.execute(
                    "INSERT INTO imports (name, kind, who, source, created_at, meta) VALUES (?, ?, ?, ?, ?, ?)",
                    [
                        name.strip(),
                        kind,
                        who.strip(),
                        source,
                        utc_now(),
                        json.dumps(dict(meta), sort_keys=True) if meta else None,
                    ],
                )
            )
            outer, self._import_id = self._import_id, import_id
            try:
                yield import_id
            finally:
                self._import_id = outer

    def hold(self, table: str, added: Iterable[Any] = (), named: Iterable[Any] = ()) -> None:
        """The import being recorded holds the ``added`` keys of ``table``, and the ``named`` ones
        that another import holds already (nothing outside :meth:`recording`)."""
        if self._import_id is None:
            return
        if table not in HELD_TABLES:
            raise StoreError(f"table {table!r}; expected one of {', '.join(HELD_TABLES)}")
        # PostgreSQL keeps every key as text (SQLite's row_key has no type: an integer id stays one)
        key = str if self.dialect == "postgresql" else (lambda value: value)
        with self.write() as db:
            db.conn.executemany(
                "INSERT OR IGNORE INTO import_rows (import_id, tbl, row_key) VALUES (?, ?, ?)",
                [(self._import_id, table, key(k)) for k in added],
            )
            db.conn.executemany(
                """INSERT OR IGNORE INTO import_rows (import_id, tbl, row_key)
                   SELECT ?, ?, ? WHERE EXISTS (SELECT 1 FROM import_rows WHERE tbl = ? AND row_key = ?)""",
                [(self._import_id, table, key(k), table, key(k)) for k in named],
            )

    # ------------------------------------------------------------ the record

    def imports(self) -> list[ImportRecord]:
        """Every import, oldest first: ``{"id", "name", "kind", "who", "source", "created_at",
        "rows": {table: rows held}, "state": "live" | "retired", "changed_by", "changed_at",
        "reason"}`` (the last three from its newest retire/restore row; None when never)."""
        held: dict[int, dict[str, int]] = {}
        for import_id, table, n in self.db.execute(
            "SELECT import_id, tbl, count(*) FROM import_rows GROUP BY import_id, tbl"
        ):
            held.setdefault(import_id, {})[table] = n
        rows = self.db.execute(
            """SELECT i.id, i.name, i.kind, i.who, i.source, i.created_at, r.action, r.who, r.created_at, r.reason
               FROM imports i LEFT JOIN retirements r
                 ON r.id = (SELECT max(id) FROM retirements WHERE import_id = i.id)
               ORDER BY i.id"""
        ).fetchall()
        return [
            {
                "id": import_id,
                "name": name,
                "kind": kind,
                "who": who,
                "source": source,
                "created_at": created,
                "rows": {t: held.get(import_id, {})[t] for t in HELD_TABLES if t in held.get(import_id, {})},
                "state": "retired" if action == "retire" else "live",
                "changed_by": by,
                "changed_at": at,
                "reason": reason,
            }
            for import_id, name, kind, who, source, created, action, by, at, reason in rows
        ]

    def get_import(self, import_id: int) -> ImportRecord:
        """One import as :meth:`imports` gives it; :class:`UnknownImport` when there is none."""
        for row in self.imports():
            if row["id"] == import_id:
                return row
        known = [str(r[0]) for r in self.db.execute("SELECT id FROM imports ORDER BY id")]
        raise UnknownImport(
            f"no import {import_id}; "
            + (f"the imports are {', '.join(known)}" if known else "nothing has been imported yet")
        )

    def retire_import(self, import_id: int, who: str, reason: str | None = None) -> ImportChange:
        """Take an import back: a ``retire`` row. Returns the import (as :meth:`get_import`) with
        ``changed`` False when it was retired already (no row added)."""
        return self._set_state(import_id, "retire", who, reason)

    def restore_import(self, import_id: int, who: str, reason: str | None = None) -> ImportChange:
        """Bring a retired import back: a ``restore`` row; ``changed`` False when it was live."""
        return self._set_state(import_id, "restore", who, reason)

    def _set_state(self, import_id: int, action: str, who: str, reason: str | None) -> ImportChange:
        if not (who or "").strip():
            raise StoreError(f"to {action} an import, say who does it")
        with self.write() as db:
            before = self.get_import(import_id)
            if before["state"] == ("retired" if action == "retire" else "live"):
                return {**before, "changed": False}
            db.execute(
                "INSERT INTO retirements (import_id, action, who, created_at, reason) VALUES (?, ?, ?, ?, ?)",
                [import_id, action, who.strip(), utc_now(), (reason or "").strip() or None],
            )
            if self.write_memo is not None:  # what this write read of the retirements is out of date
                self.write_memo.clear()
            return {**self.get_import(import_id), "changed": True}

    def live_counts(self) -> dict[str, int]:
        """Live rows per table (what :meth:`StoreBase.counts` counts, retired rows left out)."""
        where = {
            "queries": live("id", "queries"),
            "chunks": live("id", "chunks"),
            "runs": live("id", "runs"),
            "rankings": live_ranking("k"),
            "traces": f"{live('id', 'traces')} AND {live('query_id', 'queries')}",
            "items": live_item("i"),
            "annotators": "TRUE",
            "labels": f"{live('l.id', 'labels')} AND l.item_id IN (SELECT i.id FROM items i WHERE {live_item('i')})",
        }
        alias = {"rankings": "k", "items": "i", "labels": "l"}
        return {
            table: self.db.execute(
                f"SELECT count(*) FROM {table} {alias.get(table, '')} WHERE {condition}"
            ).fetchone()[0]
            for table, condition in where.items()
        }

    def known_ids(self, table: str, ids: Iterable[str]) -> int:
        """How many of ``ids`` are live rows of ``table`` (queries or chunks)."""
        if table not in ("queries", "chunks"):
            raise StoreError(f"table {table!r}; expected queries or chunks")
        wanted = sorted(set(ids))
        found = 0
        for start in range(0, len(wanted), 500):
            batch = wanted[start : start + 500]
            found += self.db.execute(
                f"SELECT count(*) FROM {table} WHERE id IN ({', '.join('?' * len(batch))}) AND {live('id', table)}",
                batch,
            ).fetchone()[0]
        return found

    def count_live(self, table: str) -> int:
        """Live rows of ``table`` (queries or chunks)."""
        if table not in ("queries", "chunks"):
            raise StoreError(f"table {table!r}; expected queries or chunks")
        count: int = self.db.execute(f"SELECT count(*) FROM {table} WHERE {live('id', table)}").fetchone()[0]
        return count
