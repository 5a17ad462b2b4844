"""The label store: one SQLite file (WAL) through sqlite-utils.

Write discipline: every write is one short ``BEGIN IMMEDIATE`` transaction
(:meth:`Store.write`), so a second process waits (busy timeout) instead of
failing, and an import lands whole or not at all. Migrations run once, at
open, inside such a transaction.

Labels are never lost or overwritten (DESIGN principle 3): ``labels`` and
``judge_labels`` are append-only (triggers refuse UPDATE and DELETE); a
correction is a new row; undo appends a retraction (a row whose value is
NULL); the newest row per (item, annotator) counts.

The path comes from ``--db`` or ``DENOMINATOR_DB`` (default ``./denominator.db``).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import random
import secrets
import sqlite3
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

import sqlite_utils
from sqlite_utils.migrations import Migrations

from annotation.model import Qrels, Run
from annotation.rubrics import get_rubric

__all__ = ["Store", "StoreError", "ImportConflict", "OffScale", "default_db_path"]

DEFAULT_DB = "denominator.db"
BUSY_TIMEOUT_MS = 10_000
ROLES = ("annotator", "admin")
REVOKED = "revoked"


def token_hash(token: str) -> str:
    """What the store keeps of an access token. Tokens are 192 random bits, so a
    plain SHA-256 is enough (no password stretching needed)."""
    return "sha256:" + hashlib.sha256(token.encode()).hexdigest()


class StoreError(Exception):
    """A store operation that cannot be done as asked."""


class ImportConflict(StoreError):
    """An import would change what is stored (nothing is written)."""


class OffScale(StoreError):
    """An imported grade that is not on the rubric's scale (nothing is written)."""

    def __init__(self, message: str, qid: str, doc: str, grade: int) -> None:
        super().__init__(message)
        self.qid, self.doc, self.grade = qid, doc, grade


AGGREGATES = ("median", "majority", "mean")


def aggregate_grades(values: list[int], method: str = "median") -> int:
    """One grade from several people's grades of the same item.

    - median: the lower middle value (a grade someone gave);
    - majority: the most frequent grade, ties broken toward the median of the tied grades (lower middle);
    - mean: the mean rounded half up (1.5 -> 2).
    """
    if not values:
        raise StoreError("no grades to aggregate")
    ordered = sorted(values)
    if method == "median":
        return ordered[(len(ordered) - 1) // 2]
    if method == "majority":
        counts = {v: ordered.count(v) for v in ordered}
        top = max(counts.values())
        tied = sorted(v for v, n in counts.items() if n == top)
        return tied[(len(tied) - 1) // 2]
    if method == "mean":
        return int(math.floor(sum(values) / len(values) + 0.5))
    raise StoreError(f"aggregate {method!r}; expected one of {', '.join(AGGREGATES)}")


def default_db_path() -> str:
    return os.environ.get("DENOMINATOR_DB") or DEFAULT_DB


_RANDOM = random.SystemRandom()


def random_position() -> int:
    """A queue position: random, so the order of a queue leaks no rank."""
    return _RANDOM.getrandbits(48)


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="microseconds")


MIGRATIONS = Migrations("denominator")


@MIGRATIONS(name="m001_schema")
def _m001_schema(db: sqlite_utils.Database) -> None:
    statements = [
        "CREATE TABLE queries (id TEXT PRIMARY KEY, text TEXT)",
        "CREATE TABLE chunks (id TEXT PRIMARY KEY, text TEXT, source TEXT, meta TEXT)",
        """CREATE TABLE runs (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE,
            stage TEXT NOT NULL CHECK (stage IN ('fetch', 'keep')), meta TEXT)""",
        """CREATE TABLE rankings (run_id INTEGER NOT NULL REFERENCES runs(id),
            query_id TEXT NOT NULL REFERENCES queries(id), rank INTEGER NOT NULL,
            chunk_id TEXT NOT NULL REFERENCES chunks(id), score REAL,
            PRIMARY KEY (run_id, query_id, rank))""",
        """CREATE TABLE traces (id TEXT PRIMARY KEY, query_id TEXT REFERENCES queries(id),
            system TEXT, question TEXT, contexts TEXT, answer TEXT, created_at TEXT)""",
        """CREATE TABLE items (id INTEGER PRIMARY KEY,
            kind TEXT NOT NULL CHECK (kind IN ('chunk', 'trace', 'pair')),
            query_id TEXT REFERENCES queries(id), chunk_id TEXT REFERENCES chunks(id),
            trace_id TEXT REFERENCES traces(id), trace_b_id TEXT REFERENCES traces(id), batch TEXT)""",
        """CREATE UNIQUE INDEX items_unique ON items
            (kind, ifnull(query_id, ''), ifnull(chunk_id, ''), ifnull(trace_id, ''), ifnull(trace_b_id, ''))""",
        """CREATE TABLE annotators (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE,
            role TEXT NOT NULL DEFAULT 'annotator' CHECK (role IN ('annotator', 'admin')), token_hash TEXT)""",
        """CREATE TABLE assignments (item_id INTEGER NOT NULL REFERENCES items(id),
            annotator_id INTEGER NOT NULL REFERENCES annotators(id), PRIMARY KEY (item_id, annotator_id))""",
        """CREATE TABLE labels (id INTEGER PRIMARY KEY, item_id INTEGER NOT NULL REFERENCES items(id),
            annotator_id INTEGER NOT NULL REFERENCES annotators(id), rubric TEXT NOT NULL,
            value INTEGER, note TEXT, seconds REAL, shown TEXT, created_at TEXT NOT NULL)""",
        "CREATE INDEX labels_item_annotator ON labels (item_id, annotator_id, id)",
        """CREATE TABLE judges (fingerprint TEXT PRIMARY KEY, model TEXT, endpoint TEXT,
            prompt_version TEXT, prompt_sha TEXT, temperature REAL, seed INTEGER, created_at TEXT)""",
        """CREATE TABLE judge_labels (id INTEGER PRIMARY KEY, item_id INTEGER NOT NULL REFERENCES items(id),
            fingerprint TEXT NOT NULL REFERENCES judges(fingerprint), ab_order TEXT, repeat INTEGER,
            value INTEGER, reason TEXT, raw TEXT, tokens_in INTEGER, tokens_out INTEGER,
            latency_ms REAL, error TEXT, created_at TEXT NOT NULL)""",
        """CREATE TABLE calibrations (id INTEGER PRIMARY KEY, fingerprint TEXT, rubric TEXT,
            window TEXT, n INTEGER, kappa REAL, ci_low REAL, ci_high REAL, weights TEXT,
            verdict TEXT, sample TEXT, created_at TEXT)""",
    ]
    for table in ("labels", "judge_labels"):
        for action in ("UPDATE", "DELETE"):
            statements.append(
                f"""CREATE TRIGGER {table}_no_{action.lower()} BEFORE {action} ON {table}
                BEGIN SELECT RAISE(ABORT, '{table} are append-only: add a new row instead'); END"""
            )
    for statement in statements:
        db.execute(statement)


@MIGRATIONS(name="m002_queue_positions")
def _m002_queue_positions(db: sqlite_utils.Database) -> None:
    """A random position per item (single-user queue) and per assignment (each
    annotator's own order): the queue is read in position order through an
    index, so the next item costs the same with a thousand or a million chunks."""
    db.execute("ALTER TABLE items ADD COLUMN position INTEGER")
    db.execute("ALTER TABLE assignments ADD COLUMN position INTEGER")
    db.execute("UPDATE items SET position = abs(random()) % 281474976710656")
    db.execute("UPDATE assignments SET position = abs(random()) % 281474976710656")
    db.execute("CREATE INDEX items_queue ON items (kind, position)")
    db.execute("CREATE INDEX assignments_queue ON assignments (annotator_id, position, item_id)")


@MIGRATIONS(name="m003_label_sets")
def _m003_label_sets(db: sqlite_utils.Database) -> None:
    """Where imported labels came from, with the metadata a golden.yaml carried
    (grade scale, who judged, what they were shown, when), so an export of the
    same labels can say the same."""
    db.execute(
        """CREATE TABLE label_sets (id INTEGER PRIMARY KEY, annotator_id INTEGER NOT NULL REFERENCES annotators(id),
            source TEXT, meta TEXT, digest TEXT NOT NULL, created_at TEXT NOT NULL)"""
    )
    db.execute("CREATE UNIQUE INDEX label_sets_once ON label_sets (annotator_id, digest)")


@MIGRATIONS(name="m004_judge_runs")
def _m004_judge_runs(db: sqlite_utils.Database) -> None:
    """What a judge is (its rubric, kind and every setting in its fingerprint),
    and an index for resuming: which (item, order, repeat) a judge has done."""
    for column in ("rubric TEXT", "kind TEXT", "settings TEXT"):
        db.execute(f"ALTER TABLE judges ADD COLUMN {column}")
    db.execute("CREATE INDEX judge_labels_call ON judge_labels (fingerprint, item_id, ab_order, repeat)")


@MIGRATIONS(name="m005_labels_by_annotator")
def _m005_labels_by_annotator(db: sqlite_utils.Database) -> None:
    """An annotator's newest label in one probe: where their queue resumes."""
    db.execute("CREATE INDEX labels_annotator ON labels (annotator_id, id)")


@MIGRATIONS(name="m006_review_samples")
def _m006_review_samples(db: sqlite_utils.Database) -> None:
    """The weekly review's sample: which items were drawn for which ISO week, from which stratum."""
    db.execute(
        """CREATE TABLE review_samples (week TEXT NOT NULL, item_id INTEGER NOT NULL REFERENCES items(id),
            stratum TEXT, created_at TEXT NOT NULL, PRIMARY KEY (week, item_id))"""
    )


@MIGRATIONS(name="m007_estimate_samples")
def _m007_estimate_samples(db: sqlite_utils.Database) -> None:
    """The sampling design behind an estimate of what the labels missed: per query and
    stratum of unjudged candidates, its size, how many were drawn, and each drawn chunk
    with its inclusion probability (pooling.sample_unjudged)."""
    db.execute(
        """CREATE TABLE estimate_samples (query_id TEXT NOT NULL, chunk_id TEXT NOT NULL,
            item_id INTEGER NOT NULL REFERENCES items(id), stratum TEXT NOT NULL, stratum_size INTEGER NOT NULL,
            stratum_sampled INTEGER NOT NULL, inclusion REAL NOT NULL, design TEXT NOT NULL, created_at TEXT NOT NULL,
            PRIMARY KEY (query_id, chunk_id))"""
    )


JUDGE_COLUMNS = (
    "item_id",
    "fingerprint",
    "ab_order",
    "repeat",
    "value",
    "reason",
    "raw",
    "tokens_in",
    "tokens_out",
    "latency_ms",
    "error",
)


class Store:
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
        self.db.conn.close()

    def __enter__(self) -> Store:
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
        tables = ("queries", "chunks", "runs", "rankings", "traces", "items", "annotators", "labels")
        return {t: self.db.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in tables}

    # ------------------------------------------------------------ annotators

    def annotator_id(self, name: str, role: str = "annotator", create: bool = True) -> int:
        row = self.db.execute("SELECT id FROM annotators WHERE name = ?", [name]).fetchone()
        if row:
            return int(row[0])
        if not create:
            raise StoreError(f"no annotator named {name!r}")
        with self.write():
            cursor = self.db.execute("INSERT INTO annotators (name, role) VALUES (?, ?)", [name, role])
        return int(cursor.lastrowid)

    # Access tokens. ``annotators.token_hash`` is NULL (no token ever given: a
    # name typed in local mode, or labels imported under it), ``sha256:<hex>``
    # (an active token; the token itself is shown once and never stored), or
    # ``revoked`` (matches no token). Once any annotator has held a token the
    # app requires one: revoking the last token does not reopen local mode.

    def add_annotator(self, name: str, role: str = "annotator") -> str:
        """Give ``name`` (new, or known without a token) a role and a fresh access
        token; returns the token, which is not kept anywhere."""
        name = name.strip()
        if not name:
            raise StoreError("an annotator needs a name")
        if role not in ROLES:
            raise StoreError(f"role must be one of {', '.join(ROLES)}, not {role!r}")
        token = secrets.token_urlsafe(24)
        with self.write():
            row = self.db.execute("SELECT token_hash FROM annotators WHERE name = ?", [name]).fetchone()
            if row and row[0] and row[0] != REVOKED:
                raise StoreError(
                    f"annotator {name!r} already has a token; revoke it first "
                    f"(python -m annotation annotators revoke {name})"
                )
            self.db.execute(
                """INSERT INTO annotators (name, role, token_hash) VALUES (?, ?, ?)
                   ON CONFLICT (name) DO UPDATE SET role = excluded.role, token_hash = excluded.token_hash""",
                [name, role, token_hash(token)],
            )
        return token

    def revoke_annotator(self, name: str) -> None:
        """The token stops working at once (the next rerun of any open page); labels stay."""
        with self.write():
            row = self.db.execute("SELECT token_hash FROM annotators WHERE name = ?", [name]).fetchone()
            if row is None:
                raise StoreError(f"no annotator named {name!r}")
            if row[0] in (None, REVOKED):
                raise StoreError(f"annotator {name!r} has no active token")
            self.db.execute("UPDATE annotators SET token_hash = ? WHERE name = ?", [REVOKED, name])

    def identify(self, token: str | None) -> dict[str, str] | None:
        """``{"name", "role"}`` of the active token, else None."""
        if not token:
            return None
        row = self.db.execute(
            "SELECT name, role FROM annotators WHERE token_hash = ?", [token_hash(token)]
        ).fetchone()
        return {"name": row[0], "role": row[1]} if row else None

    def tokens_required(self) -> bool:
        """True once any annotator has been given a token (even if since revoked)."""
        return bool(
            self.db.execute("SELECT 1 FROM annotators WHERE token_hash IS NOT NULL LIMIT 1").fetchone()
        )

    def annotators(self) -> list[dict[str, Any]]:
        """Every annotator: name, role, access (token, revoked, none), current labels."""
        rows = self.db.execute(
            """SELECT a.name, a.role, a.token_hash,
                      (SELECT count(*) FROM labels l WHERE l.annotator_id = a.id
                        AND l.id = (SELECT max(id) FROM labels m
                                    WHERE m.item_id = l.item_id AND m.annotator_id = a.id)
                        AND l.value IS NOT NULL)
               FROM annotators a ORDER BY a.name"""
        ).fetchall()
        return [
            {
                "name": name,
                "role": role,
                "access": "revoked" if th == REVOKED else ("token" if th else "none"),
                "labels": n,
            }
            for name, role, th, n in rows
        ]

    # ------------------------------------------------------------ imports

    def import_corpus(self, chunks: list[Mapping[str, Any]]) -> dict[str, int]:
        """Chunks ``{"id", "text", "source"?, ...}``; other keys kept as ``meta``."""
        rows = []
        for chunk in chunks:
            meta = {k: v for k, v in chunk.items() if k not in ("id", "text", "source")}
            rows.append(
                (chunk["id"], chunk.get("text"), chunk.get("source"), json.dumps(meta) if meta else None)
            )
        return self._upsert_texts("chunks", ["id", "text", "source", "meta"], rows)

    def import_queries(self, queries: Mapping[str, str | None]) -> dict[str, int]:
        return self._upsert_texts("queries", ["id", "text"], [(qid, text) for qid, text in queries.items()])

    def _upsert_texts(self, table: str, columns: list[str], rows: list[tuple]) -> dict[str, int]:
        """Insert new ids; fill a stored NULL text; refuse a different text."""
        added = filled = unchanged = 0
        with self.write() as db:
            for row in rows:
                stored = db.execute(
                    f"SELECT {', '.join(columns)} FROM {table} WHERE id = ?", [row[0]]
                ).fetchone()
                if stored is None:
                    db.execute(
                        f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})",
                        row,
                    )
                    added += 1
                elif tuple(stored) == tuple(row):
                    unchanged += 1
                elif stored[1] is None and all(s is None or s == r for s, r in zip(stored[2:], row[2:])):
                    sets = ", ".join(f"{c} = ?" for c in columns[1:])
                    db.execute(f"UPDATE {table} SET {sets} WHERE id = ?", [*row[1:], row[0]])
                    filled += 1
                elif row[1] is None:
                    unchanged += 1  # a label file naming a known id: nothing new
                else:
                    raise ImportConflict(
                        f"{table[:-1]} {row[0]!r} is stored with other text; expected the same text "
                        "(stored texts are never overwritten)"
                    )
        return {"added": added, "filled": filled, "unchanged": unchanged}

    def import_run(self, run: Run, name: str, stage: str = "fetch") -> dict[str, int]:
        """A run's rankings in trec order (rank 1..n per query); the same run again changes nothing."""
        if stage not in ("fetch", "keep"):
            raise StoreError(f"stage {stage!r}; expected fetch or keep")
        rows = [
            (qid, rank, doc, score)
            for qid, ranked in run.ordered_rows().items()
            for rank, (doc, score) in enumerate(ranked, start=1)
        ]
        with self.write() as db:
            existing = db.execute("SELECT id, stage FROM runs WHERE name = ?", [name]).fetchone()
            if existing:
                stored = db.execute(
                    "SELECT query_id, rank, chunk_id, score FROM rankings WHERE run_id = ? ORDER BY query_id, rank",
                    [existing[0]],
                ).fetchall()
                if existing[1] == stage and sorted(map(tuple, stored)) == sorted(rows):
                    return {"runs": 0, "rankings": 0, "unchanged": len(rows)}
                raise ImportConflict(
                    f"run {name!r} is stored with other rankings or stage; expected a new --name"
                )
            self._ensure_ids(db, "queries", {r[0] for r in rows} | set(run.empty_queries))
            self._ensure_ids(db, "chunks", {r[2] for r in rows})
            run_id = db.execute(
                "INSERT INTO runs (name, stage, meta) VALUES (?, ?, ?)",
                [name, stage, json.dumps({"source": run.path, "tag": run.name})],
            ).lastrowid
            db.conn.executemany(
                "INSERT INTO rankings (run_id, query_id, rank, chunk_id, score) VALUES (?, ?, ?, ?, ?)",
                [(run_id, *row) for row in rows],
            )
        return {"runs": 1, "rankings": len(rows), "unchanged": 0}

    def import_labels(self, qrels: Qrels, annotator: str, rubric: str = "relevance") -> dict[str, int]:
        """Existing judgments under a named annotator: one label per (query, chunk),
        skipped where that annotator's current label already says the same."""
        scale = get_rubric(rubric)
        for qid, docs in qrels.grades.items():
            for doc, grade in docs.items():
                if grade not in scale.scale:
                    raise OffScale(
                        f"query {qid!r} chunk {doc!r}: grade {grade} is not on the {rubric} scale; "
                        f"expected one of {', '.join(map(str, scale.scale))}",
                        qid,
                        doc,
                        grade,
                    )
        added = unchanged = 0
        with self.write() as db:
            annotator_id = self.annotator_id(annotator)
            self._ensure_ids(db, "queries", set(qrels.qids))
            if qrels.texts:
                for qid, text in qrels.texts.items():
                    db.execute("UPDATE queries SET text = ? WHERE id = ? AND text IS NULL", [text, qid])
            self._ensure_ids(db, "chunks", {d for docs in qrels.grades.values() for d in docs})
            now = _now()
            meta = json.dumps(qrels.meta, sort_keys=True, ensure_ascii=False) if qrels.meta else None
            # a label file imported once is never imported again: a second import
            # would bring its grades back over later corrections and undos
            digest = hashlib.sha256(
                json.dumps([qrels.grades, meta], sort_keys=True, ensure_ascii=False).encode()
            ).hexdigest()
            if db.execute(
                "SELECT 1 FROM label_sets WHERE annotator_id = ? AND digest = ?", [annotator_id, digest]
            ).fetchone():
                return {"labels": 0, "unchanged": qrels.n_judgments}
            db.execute(
                "INSERT INTO label_sets (annotator_id, source, meta, digest, created_at) VALUES (?, ?, ?, ?, ?)",
                [annotator_id, qrels.path, meta, digest, now],
            )
            for qid, docs in qrels.grades.items():
                for doc, grade in docs.items():
                    item_id = self._item(db, "chunk", query_id=qid, chunk_id=doc)
                    if self._current_value(db, item_id, annotator_id) == (grade,):
                        unchanged += 1
                        continue
                    db.execute(
                        "INSERT INTO labels (item_id, annotator_id, rubric, value, created_at) VALUES (?, ?, ?, ?, ?)",
                        [item_id, annotator_id, rubric, int(grade), now],
                    )
                    added += 1
        return {"labels": added, "unchanged": unchanged}

    def import_traces(self, traces: list[Mapping[str, Any]]) -> dict[str, int]:
        """Traces as read by :func:`annotation.formats.read_traces`; each also
        becomes a ``trace`` item (faithfulness). The same trace again changes
        nothing; the same id with other content is refused."""
        added = unchanged = 0
        with self.write() as db:
            self._ensure_ids(db, "queries", {t["query_id"] for t in traces})
            for trace in traces:
                row = (
                    trace["id"],
                    trace["query_id"],
                    trace["system"],
                    trace["question"],
                    json.dumps(trace["contexts"], ensure_ascii=False),
                    trace["answer"],
                )
                stored = db.execute(
                    "SELECT id, query_id, system, question, contexts, answer FROM traces WHERE id = ?",
                    [trace["id"]],
                ).fetchone()
                if stored is not None:
                    if tuple(stored) != row:
                        raise ImportConflict(
                            f"trace {trace['id']!r} is stored with other content; expected a new id"
                        )
                    unchanged += 1
                    continue
                db.execute(
                    "INSERT INTO traces (id, query_id, system, question, contexts, answer, created_at)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?)",
                    [*row, _now()],
                )
                self._item(db, "trace", query_id=trace["query_id"], trace_id=trace["id"])
                added += 1
        return {"traces": added, "unchanged": unchanged}

    @staticmethod
    def _ensure_ids(db: sqlite_utils.Database, table: str, ids: set[str]) -> None:
        """Rows for ids only known from a run or a label file (text to come later)."""
        db.conn.executemany(f"INSERT OR IGNORE INTO {table} (id) VALUES (?)", [(i,) for i in sorted(ids)])

    @staticmethod
    def _item(db: sqlite_utils.Database, kind: str, **keys: str | None) -> int:
        columns = ("query_id", "chunk_id", "trace_id", "trace_b_id")
        values = [keys.get(c) for c in columns]
        row = db.execute(
            "SELECT id FROM items WHERE kind = ? AND "
            + " AND ".join(f"ifnull({c}, '') = ifnull(?, '')" for c in columns),
            [kind, *values],
        ).fetchone()
        if row:
            return int(row[0])
        return int(
            db.execute(
                f"INSERT INTO items (kind, {', '.join(columns)}, position) VALUES (?, ?, ?, ?, ?, ?)",
                [kind, *values, random_position()],
            ).lastrowid
        )

    @staticmethod
    def _current_value(db: sqlite_utils.Database, item_id: int, annotator_id: int) -> tuple | None:
        """(value,) of the newest label row of this annotator on this item; None if none.
        A retraction is (None,)."""
        row = db.execute(
            "SELECT value FROM labels WHERE item_id = ? AND annotator_id = ? ORDER BY id DESC LIMIT 1",
            [item_id, annotator_id],
        ).fetchone()
        return tuple(row) if row else None

    # ------------------------------------------------------------ labelling

    def add_label(
        self,
        item_id: int,
        annotator: str,
        value: int,
        rubric: str = "relevance",
        *,
        note: str | None = None,
        seconds: float | None = None,
        shown: str | None = None,
    ) -> int:
        """Append a label (a correction is just a newer row); returns its id."""
        get_rubric(rubric).check(value)
        annotator_id = self.annotator_id(annotator, create=False)
        with self.write() as db:
            if db.execute("SELECT 1 FROM items WHERE id = ?", [item_id]).fetchone() is None:
                raise StoreError(f"no item {item_id}")
            cursor = db.execute(
                "INSERT INTO labels (item_id, annotator_id, rubric, value, note, seconds, shown, created_at)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                [item_id, annotator_id, rubric, value, note, seconds, shown, _now()],
            )
        return int(cursor.lastrowid)

    def undo(self, item_id: int, annotator: str) -> int:
        """Retract this annotator's current label on the item by appending a NULL row."""
        annotator_id = self.annotator_id(annotator, create=False)
        with self.write() as db:
            current = self._current_value(db, item_id, annotator_id)
            if current is None or current == (None,):
                raise StoreError(f"{annotator!r} has no label on item {item_id} to undo")
            rubric = db.execute(
                "SELECT rubric FROM labels WHERE item_id = ? AND annotator_id = ? ORDER BY id DESC LIMIT 1",
                [item_id, annotator_id],
            ).fetchone()[0]
            cursor = db.execute(
                "INSERT INTO labels (item_id, annotator_id, rubric, value, created_at) VALUES (?, ?, ?, NULL, ?)",
                [item_id, annotator_id, rubric, _now()],
            )
        return int(cursor.lastrowid)

    def current_labels(self, annotator: str | None = None, kind: str = "chunk") -> list[dict[str, Any]]:
        """The label that counts per (item, annotator): the newest row, retractions dropped.
        Items in insertion order, then annotators by name."""
        where = "AND a.name = ?" if annotator else ""
        params: list[Any] = [kind] + ([annotator] if annotator else [])
        rows = self.db.execute(
            f"""SELECT i.id, i.query_id, i.chunk_id, a.name, l.value, l.rubric
                FROM labels l JOIN items i ON i.id = l.item_id JOIN annotators a ON a.id = l.annotator_id
                WHERE i.kind = ? {where} AND l.id = (
                    SELECT max(id) FROM labels WHERE item_id = l.item_id AND annotator_id = l.annotator_id)
                ORDER BY i.id, a.name""",
            params,
        ).fetchall()
        return [
            {
                "item_id": r[0],
                "query_id": r[1],
                "chunk_id": r[2],
                "annotator": r[3],
                "value": r[4],
                "rubric": r[5],
            }
            for r in rows
            if r[4] is not None
        ]

    def label_set_meta(self, annotator: str) -> dict[str, Any]:
        """The metadata of the newest label file imported under this annotator ({} if none)."""
        row = self.db.execute(
            """SELECT s.meta FROM label_sets s JOIN annotators a ON a.id = s.annotator_id
               WHERE a.name = ? ORDER BY s.id DESC LIMIT 1""",
            [annotator],
        ).fetchone()
        if not row or not row[0]:
            return {}
        meta = json.loads(row[0])
        if "grade_scale" in meta:  # JSON keys are text; grades are integers
            meta["grade_scale"] = {int(k): v for k, v in meta["grade_scale"].items()}
        return meta

    # ------------------------------------------------------------ judges

    def register_judge(self, fingerprint: str, settings: Mapping[str, Any]) -> None:
        """A judge, once: its fingerprint and the settings it was computed from."""
        with self.write():
            self.db.execute(
                """INSERT OR IGNORE INTO judges (fingerprint, model, endpoint, prompt_version, prompt_sha,
                       temperature, seed, rubric, kind, settings, created_at)
                   VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)""",
                [
                    fingerprint,
                    settings.get("model"),
                    settings.get("endpoint"),
                    settings.get("prompt_version"),
                    settings.get("prompt_sha"),
                    settings.get("temperature"),
                    settings.get("seed"),
                    settings.get("rubric"),
                    settings.get("kind"),
                    json.dumps(dict(settings), sort_keys=True),
                    _now(),
                ],
            )

    def judge_done(self, fingerprint: str) -> set[tuple[int, str | None, int]]:
        """(item, order, repeat) this judge has a value for: a re-run skips them.
        An error row is not done: a re-run asks again."""
        return {
            (int(item), order, int(repeat or 0))
            for item, order, repeat in self.db.execute(
                "SELECT item_id, ab_order, repeat FROM judge_labels WHERE fingerprint = ? AND value IS NOT NULL",
                [fingerprint],
            )
        }

    def add_judge_labels(self, rows: list[Mapping[str, Any]]) -> int:
        """Judge results (a value, or an error and no value), in one transaction."""
        if not rows:
            return 0
        now = _now()
        with self.write():
            self.db.conn.executemany(
                f"INSERT INTO judge_labels ({', '.join(JUDGE_COLUMNS)}, created_at) "
                f"VALUES ({', '.join('?' * len(JUDGE_COLUMNS))}, ?)",
                [[row.get(c) for c in JUDGE_COLUMNS] + [now] for row in rows],
            )
        return len(rows)

    def judges(self) -> list[dict[str, Any]]:
        """Every judge with its settings and counts: labels (current values), errors, tokens."""
        rows = self.db.execute(
            """SELECT j.fingerprint, j.kind, j.rubric, j.model, j.endpoint, j.settings, j.created_at,
                      count(DISTINCT CASE WHEN l.value IS NOT NULL
                            THEN l.item_id || '/' || ifnull(l.ab_order, '') || '/' || l.repeat END),
                      sum(l.error IS NOT NULL), sum(l.tokens_in), sum(l.tokens_out), count(l.id)
               FROM judges j LEFT JOIN judge_labels l ON l.fingerprint = j.fingerprint
               GROUP BY j.fingerprint ORDER BY j.created_at"""
        ).fetchall()
        return [
            {
                "fingerprint": fp,
                "kind": kind,
                "rubric": rubric,
                "model": model,
                "endpoint": endpoint,
                "settings": json.loads(settings or "{}"),
                "created_at": created,
                "labels": int(done or 0),
                "errors": int(errors or 0),
                "tokens_in": int(tin or 0),
                "tokens_out": int(tout or 0),
                "rows": int(n or 0),
            }
            for fp, kind, rubric, model, endpoint, settings, created, done, errors, tin, tout, n in rows
        ]

    def judge_values(self, fingerprint: str) -> list[dict[str, Any]]:
        """The newest value per (item, order, repeat) of one judge (errors left out)."""
        rows = self.db.execute(
            """SELECT l.item_id, l.ab_order, l.repeat, l.value, l.reason FROM judge_labels l
               WHERE l.fingerprint = ? AND l.value IS NOT NULL AND l.id = (
                   SELECT max(id) FROM judge_labels m WHERE m.fingerprint = l.fingerprint
                   AND m.item_id = l.item_id AND m.ab_order IS l.ab_order AND m.repeat IS l.repeat
                   AND m.value IS NOT NULL)
               ORDER BY l.item_id, l.ab_order, l.repeat""",
            [fingerprint],
        ).fetchall()
        return [
            {"item_id": i, "ab_order": o, "repeat": r, "value": v, "reason": why} for i, o, r, v, why in rows
        ]

    def export_qrels(self, annotator: str | None = None, aggregate: str = "median") -> Qrels:
        """Current labels as judgments: one annotator's, or one grade per item from
        all annotators' current labels (:func:`aggregate_grades`)."""
        by_item: dict[tuple[str, str], list[int]] = {}
        for label in self.current_labels(annotator):
            by_item.setdefault((label["query_id"], label["chunk_id"]), []).append(label["value"])
        grades: dict[str, dict[str, int]] = {}
        for (qid, doc), values in by_item.items():
            grades.setdefault(qid, {})[doc] = aggregate_grades(values, aggregate)
        texts = {
            qid: text
            for qid, text in self.db.execute("SELECT id, text FROM queries WHERE text IS NOT NULL").fetchall()
            if qid in grades
        }
        return Qrels(grades=grades, texts=texts, path=self.path)
