"""The label store: one SQLite file (WAL) through sqlite-utils, the default, or one PostgreSQL
database through psycopg 3 (a ``postgresql://`` URL: :mod:`annotation.store.postgres`, the same
schema, guards and write discipline); and the home of all SQL.

Readers never wait for writers: opening and reading start no transaction (WAL snapshots).
Write discipline: every write is one short ``BEGIN IMMEDIATE`` transaction
(:meth:`Store.write`), so a second writer waits, for a bounded time (``DENOMINATOR_BUSY_SECONDS``,
default 10; then :class:`StoreBusy`, nothing written), and an import lands whole or not at all.
The schema is checked once per process and file; migrations run, inside such a transaction, only
when one is pending. A foreign file, a newer schema or a missing append-only guard is refused
before anything is written (:class:`NotADenominatorDatabase`, :class:`SchemaRefused`); a full
disk is :class:`DiskFull`, a disk I/O error :class:`DiskError`.

Labels are never lost or overwritten (DESIGN principle 3): ``labels`` and
``judge_labels`` are append-only (triggers refuse UPDATE and DELETE); a
correction is a new row; undo appends a retraction (a row whose value is
NULL); the newest row per (item, annotator) counts.

The path (or URL) comes from ``--db`` or ``DENOMINATOR_DB`` (default ``./denominator.db``).

:class:`Store` is one class assembled from one part per concern, each in its module:

- ``base``: the connection, :meth:`Store.write`, the errors, the item rows all share;
- ``migrations``: the schema (one list, run on either backend);
- ``postgres``: the PostgreSQL backend (the dialect translated, migrations recorded);
- ``transfer``: a whole store copied to another, verified (``python -m annotation migrate``);
- ``identity``: annotators, roles, access tokens;
- ``providers``: sign-in with the team's OpenID Connect provider: matching, its sessions, claim rules;
- ``imports``: corpora, queries, runs, label files, traces;
- ``retirements``: imports as records, retired and restored, and what a live row is;
- ``labels``: people's labels, appended and read back;
- ``judges``: judges, their names and versions, their answers and the models that served them,
  what they are asked, their calibrations;
- ``pools``: pools, samples, answer pairs, assignments;
- ``queue``: the labelling queue and what an item shows;
- ``corpus``: chunks, queries, traces, rankings and items read back whole;
- ``history``: recorded ``check`` reports of a run over time;
- ``guidelines``: each rubric's guidelines, versioned (an admin's edit is a new version);
- ``browse``: the admin's item browser, one item's history, settlements (adjudication);
- ``evidence_marks``: the sentences a person marked as the answer inside a chunk, as spans of its
  document (append-only);
- ``reviews``: the review pass: a person's labels agreed with or corrected by a reviewer.

Everything else asks the store: no SQL lives outside this package
(``tests/test_sql_home.py``).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from annotation.store.base import (
    BUSY_ENV,
    BUSY_TIMEOUT_MS,
    DEFAULT_DB,
    ITEM_KINDS,
    DiskError,
    DiskFull,
    ImportConflict,
    NotADenominatorDatabase,
    OffScale,
    SchemaRefused,
    StoreBase,
    StoreBusy,
    StoreError,
    busy_seconds,
    database_exists,
    default_db_path,
    empty_file,
    random_position,
    shown_location,
    utc_now,
)
from annotation.store.browse import Browse
from annotation.store.corpus import Corpus
from annotation.store.evidence_marks import EvidenceMarks, UnplacedChunk
from annotation.store.guidelines import GuidelineVersions
from annotation.store.history import History
from annotation.store.identity import REVOKED, ROLES, AnnotatorRow, Identity, token_hash
from annotation.store.imports import Imports, RunCounts
from annotation.store.judges import (
    CALIBRATION_COLUMNS,
    JUDGE_COLUMNS,
    Judges,
    changed_settings,
    check_judge_name,
    default_judge_name,
)
from annotation.store.labels import AGGREGATES, Labels, aggregate_grades
from annotation.store.migrations import MIGRATIONS
from annotation.store.pools import Pools
from annotation.store.postgres import PgDatabase, is_url
from annotation.store.providers import ClaimRule, ProviderAccess, ProviderClaims, Providers
from annotation.store.queue import Queue
from annotation.store.retirements import ImportChange, ImportRecord, UnknownImport
from annotation.store.reviews import Reviews

if TYPE_CHECKING:
    from annotation.model import Qrels, Run


def __getattr__(name: str) -> Any:
    """``Qrels`` and ``Run``, named here for the store's readers, imported on first use (numpy and
    pyarrow: opening the store loads neither, #42)."""
    if name in ("Qrels", "Run"):
        import annotation.model  # start-up: numpy and pyarrow (0.25 s of CPU), loaded on first use

        return getattr(annotation.model, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "Store",
    "borrowed",
    "StoreError",
    "StoreBusy",
    "DiskFull",
    "DiskError",
    "NotADenominatorDatabase",
    "SchemaRefused",
    "ImportConflict",
    "OffScale",
    "UnknownImport",
    "UnplacedChunk",
    "ImportRecord",
    "ImportChange",
    "AnnotatorRow",
    "ClaimRule",
    "ProviderAccess",
    "ProviderClaims",
    "RunCounts",
    "default_db_path",
    "database_exists",
    "empty_file",
    "shown_location",
    "AGGREGATES",
    "aggregate_grades",
    "token_hash",
    "random_position",
    "utc_now",
    "Qrels",
    "Run",
    "BUSY_ENV",
    "BUSY_TIMEOUT_MS",
    "busy_seconds",
    "DEFAULT_DB",
    "ITEM_KINDS",
    "REVOKED",
    "ROLES",
    "MIGRATIONS",
    "JUDGE_COLUMNS",
    "CALIBRATION_COLUMNS",
    "StoreBase",
    "default_judge_name",
    "check_judge_name",
    "changed_settings",
]


class Store(
    Imports,
    Reviews,
    Browse,
    Labels,
    Judges,
    Pools,
    Queue,
    Corpus,
    History,
    GuidelineVersions,
    EvidenceMarks,
    Providers,
    Identity,
    StoreBase,
):
    """A handle on the SQLite file; one per script run (or per session)."""


_IDLE: dict[str, list[Store]] = {}  # PostgreSQL handles of this process not in use, per URL
_IDLE_LOCK = threading.Lock()
IDLE_HANDLES = 8  # at most this many kept per URL; more at once are opened and closed


@contextmanager
def borrowed(location: str) -> Iterator[Store]:
    """A :class:`Store` on ``location`` for one short use: a key press and the pane it redraws, a
    page's run, who is signed in (every page of the app opens its store this way, #42).

    On PostgreSQL a handle this process used before and gave back is taken when one is idle, as
    a connection costs several round trips to open (about 10 ms here; ``bench/browser.py``). One
    whose socket has something to read (a server that shut down or restarted says goodbye or
    closes it; an idle connection is sent nothing) is first checked with a ``SELECT 1`` and
    replaced by a new connection when that fails; a quiet one is taken without a round trip (a
    key press borrows twice: its write, then the pane's redraw). It is given back when the block
    ends with no transaction open and no error;
    otherwise closed. On SQLite a new handle each time (opening costs under 1 ms, and a new
    handle sees a file replaced under a running app). One thread uses a handle at a time."""
    store = None
    if is_url(str(location)):
        with _IDLE_LOCK:
            idle = _IDLE.get(location)
            store = idle.pop() if idle else None
        if store is not None and not _quiet(store):
            try:
                store.db.execute("SELECT 1").fetchone()
            except Exception:  # the driver's error or the store's name for it: a new connection
                _close_quietly(store)
                store = None
    if store is None:
        store = Store(location)
    ok = False
    try:
        yield store
        ok = True
    finally:
        keep = ok and store.dialect == "postgresql" and not _in_transaction(store)
        if keep:
            with _IDLE_LOCK:
                idle = _IDLE.setdefault(location, [])
                keep = len(idle) < IDLE_HANDLES
                if keep:
                    idle.append(store)
        if not keep:
            _close_quietly(store)


def _quiet(store: Store) -> bool:
    return isinstance(store.db, PgDatabase) and store.db.quiet()


def _in_transaction(store: Store) -> bool:
    try:
        return bool(store.db.conn.in_transaction)
    except Exception:  # a connection that cannot say is not given back
        return True


def _close_quietly(store: Store) -> None:
    try:
        store.close()
    except Exception:  # a connection already lost: nothing to close
        pass
