"""Moving a team: every table of one store copied into another, SQLite to PostgreSQL or back
(``python -m annotation migrate --from DB --to DB``).

The target must hold no row (a new file, or a PostgreSQL database with no Denominator tables or
empty ones): a copy never mixes two stores. Both stores are at the same schema (opening them
applies pending migrations). Tables go in the order their references need, all in one
transaction of the target: a failure leaves the target as empty as it was, and the same command
can run again.
Rows keep their ids and their order (SQLite's rowid order, PostgreSQL's ``rowid`` column); on
PostgreSQL the identity sequences then continue after the highest id copied. Each table is then
verified: the row count and a checksum (SHA-256 over the rows, each value written as text, rows
sorted) equal on both sides, else :class:`TransferFailed`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from annotation.store.base import StoreBase, StoreError
from annotation.store.postgres import Database

__all__ = ["TABLES", "TargetNotEmpty", "TransferFailed", "TableCopied", "copy_store", "table_checksum"]

# Every table of the schema, parents before the tables that reference them.
TABLES = (
    "annotators",
    "queries",
    "chunks",
    "runs",
    "rankings",
    "traces",
    "items",
    "assignments",
    "labels",
    "judges",
    "judge_labels",
    "calibrations",
    "label_sets",
    "review_samples",
    "estimate_samples",
    "check_reports",
    "sessions",
    "imports",
    "import_rows",
    "retirements",
    "settlements",
    "leases",
    "skips",
    "batches",
    "handout",
    "claim_rules",
    "provider_sessions",
    "batch_submitted",
    "verdict_looks",
    "label_reviews",
    "guidelines",
    "evidence_marks",
)
BATCH = 5_000


class TargetNotEmpty(StoreError):
    """The target store holds rows: a copy never mixes two stores (nothing was written)."""


class TransferFailed(StoreError):
    """A copied table differs from its source (row count or checksum)."""


@dataclass(frozen=True)
class TableCopied:
    table: str
    rows: int
    checksum: str  # SHA-256, hex, equal on both sides


def _columns(store: StoreBase, table: str) -> list[str]:
    """The table's columns both backends share (PostgreSQL's ``rowid`` column is SQLite's
    built-in rowid: it is not copied, the insertion order is)."""
    return sorted(c for c in store.columns(table) if c != "rowid")


def _order(store: StoreBase, table: str) -> str:
    if table == "import_rows":
        return "import_id, tbl, row_key"
    return "id" if "id" in store.columns(table) else "rowid"


def _rows(store: StoreBase, table: str, columns: list[str]) -> Iterator[tuple[Any, ...]]:
    """The table's rows in insertion order, in batches (a million chunks stay out of memory)."""
    listed = ", ".join(columns)
    order = _order(store, table)
    last = None
    if order != "rowid" and order != "id":  # import_rows: small enough to read at once
        yield from store.db.execute(f"SELECT {listed} FROM {table} ORDER BY {order}").fetchall()
        return
    key = "rowid" if order == "rowid" else "id"
    while True:
        where = "" if last is None else f"WHERE {key} > ?"
        batch = store.db.execute(
            f"SELECT {key}, {listed} FROM {table} {where} ORDER BY {key} LIMIT {BATCH}",
            [] if last is None else [last],
        ).fetchall()
        if not batch:
            return
        last = batch[-1][0]
        for row in batch:
            yield tuple(row[1:])


def _text(value: object) -> str:
    return "\x00" if value is None else str(value)


def table_checksum(store: StoreBase, table: str) -> tuple[int, str]:
    """(rows, SHA-256) of ``table``: each row's values as text (an import's row key is text on
    PostgreSQL, an integer id on SQLite: the same text), the rows sorted, then hashed."""
    columns = _columns(store, table)
    lines = sorted("\x1f".join(_text(v) for v in row) for row in _rows(store, table, columns))
    digest = hashlib.sha256()
    for line in lines:
        digest.update(line.encode("utf-8", "surrogatepass") + b"\x1e")
    return len(lines), digest.hexdigest()


def _holds_rows(store: StoreBase) -> list[str]:
    present = store._tables()
    return [t for t in TABLES if t in present and store.db.execute(f"SELECT 1 FROM {t} LIMIT 1").fetchone()]


def copy_store(
    source: StoreBase, target: StoreBase, progress: Callable[[str, int], None] | None = None
) -> list[TableCopied]:
    """Copy every table of ``source`` into the empty ``target`` in one transaction, verifying each
    table before it commits (:class:`TransferFailed`, and nothing written); ``progress(table,
    rows)`` after each table."""
    full = _holds_rows(target)
    if full and (done := _already_copied(source, target)) is not None:
        # a run stopped after its commit (Ctrl-C while it printed): the copy is whole, and running the
        # same command again says so instead of refusing the target it filled
        return done
    if full:
        raise TargetNotEmpty(
            f"{target.path} holds rows already ({', '.join(full[:3])}{', ...' if len(full) > 3 else ''}): "
            "migrate copies into an empty store only; nothing was written"
        )
    if target.dialect == "postgresql" and source.dialect == "sqlite":
        _refuse_nul(source, target)
    copied = []
    # one transaction of the target for every table: a failure (an error, a checksum that
    # differs, Ctrl-C) leaves it as empty as it was, so the same command can simply run again
    try:
        with target.write() as db:
            for table in TABLES:
                rows = _copy_table(source, target, db, table)
                if progress:
                    progress(table, rows)
                copied.append(_verified(source, target, table))  # read inside the transaction
    except TransferFailed as exc:
        raise TransferFailed(f"{exc}; nothing was written (the target is as empty as it was)") from None
    return copied


def _copy_table(source: StoreBase, target: StoreBase, db: Database, table: str) -> int:
    columns = _columns(source, table)
    missing = set(columns) - set(_columns(target, table))
    if missing:
        raise TransferFailed(f"{target.path}: table {table} lacks {', '.join(sorted(missing))}")
    marks = ", ".join("?" * len(columns))
    insert = f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({marks})"
    rows = 0
    batch: list[tuple[Any, ...]] = []
    for row in _rows(source, table, columns):
        batch.append(
            row if target.dialect == "sqlite" else tuple(_pg_value(table, c, v) for c, v in zip(columns, row))
        )
        if len(batch) >= BATCH:
            db.conn.executemany(insert, batch)
            rows += len(batch)
            batch = []
    if batch:
        db.conn.executemany(insert, batch)
        rows += len(batch)
    if target.dialect == "postgresql":  # the identity sequences continue after the ids copied
        for column in _identity_columns(target, table):
            db.execute(
                f"SELECT setval(pg_get_serial_sequence('{table}', '{column}'), "
                f"coalesce((SELECT max({column}) FROM {table}), 0) + 1, false)"
            )
    return rows


def _refuse_nul(source: StoreBase, target: StoreBase) -> None:
    """PostgreSQL's text cannot hold a NUL character (SQLite's can, from files read before NUL was
    refused at import): such rows are named before anything is written, never half a copy."""
    found = []
    present = source._tables()
    for table in TABLES:
        if table not in present:
            continue
        key = _order(source, table)  # id, rowid, or import_rows' own key
        for column in _columns(source, table):
            rows = source.db.execute(
                f"SELECT {key} FROM {table} WHERE instr(CAST({column} AS TEXT), char(0)) > 0 LIMIT 3"
            ).fetchall()
            found += [f"{table}.{column} of row {', '.join(map(str, row))}" for row in rows]
    if found:
        raise TransferFailed(
            f"{source.path} holds NUL characters (U+0000), which {target.path} (PostgreSQL) cannot hold: "
            f"{', '.join(found[:5])}{', ...' if len(found) > 5 else ''}; nothing was written"
        )


def _identity_columns(store: StoreBase, table: str) -> list[str]:
    rows = store.db.execute(
        "SELECT column_name FROM information_schema.columns WHERE table_schema = current_schema() "
        "AND table_name = ? AND is_identity = 'YES'",
        [table],
    ).fetchall()
    return [row[0] for row in rows]


def _pg_value(table: str, column: str, value: object) -> object:
    """A value as PostgreSQL's column takes it: an import's row key is text there."""
    return str(value) if column == "row_key" and value is not None else value


def _already_copied(source: StoreBase, target: StoreBase) -> list[TableCopied] | None:
    """Every table of ``target`` equal to ``source``'s, by count and checksum (an earlier run of
    the same copy), or None."""
    try:
        return [_verified(source, target, table) for table in TABLES]
    except TransferFailed:
        return None


def _verified(source: StoreBase, target: StoreBase, table: str) -> TableCopied:
    (n_source, sum_source), (n_target, sum_target) = (
        table_checksum(source, table),
        table_checksum(target, table),
    )
    if (n_source, sum_source) != (n_target, sum_target):
        raise TransferFailed(
            f"table {table}: {n_source:,} rows (checksum {sum_source[:12]}) in {source.path}, "
            f"{n_target:,} rows (checksum {sum_target[:12]}) in {target.path}"
        )
    return TableCopied(table, n_target, sum_target)
