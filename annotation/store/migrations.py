"""The store's schema: one list of migrations, applied in order at the first open that finds one
pending (:class:`StoreBase`). On SQLite they are sqlite-utils migrations, recorded in
``_sqlite_migrations``; on PostgreSQL the same functions run through
:class:`annotation.store.postgres.PgDatabase`, recorded in ``_migrations``
(:func:`annotation.store.postgres.apply`). sqlite-utils is imported only when an SQLite store has
one pending (:class:`MigrationSet`). The SQL is written once; it differs per dialect only
where the engines do (:func:`postgres`): the append-only triggers (:func:`append_only`) and m002's
random positions. A migration is never edited once released: a change of schema is a new
migration (SQLite runs exactly the SQL it ran before PostgreSQL came)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, TypeVar

from annotation.store.postgres import append_only_sql

if TYPE_CHECKING:
    import sqlite_utils

__all__ = [
    "MIGRATIONS",
    "APPEND_ONLY",
    "MigrationSet",
    "migration_names",
    "migration_functions",
    "append_only",
    "postgres",
]

_F = TypeVar("_F", bound=Callable[..., None])


class MigrationSet:
    """The store's migrations in order, each a name and a function of the database handle:
    registered as sqlite-utils' ``Migrations`` registers them (``@MIGRATIONS(name=...)``), and
    applied on SQLite by it (:meth:`apply`), so a file records them in ``_sqlite_migrations`` as
    it always has. Kept here, not in sqlite-utils' own registry, so that a store whose schema is
    current never imports sqlite-utils (~0.05 s of CPU at every command's start, #42)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._migrations: list[tuple[str, Callable[..., None]]] = []

    def __call__(self, *, name: str) -> Callable[[_F], _F]:
        def register(function: _F) -> _F:
            if any(known == name for known, _ in self._migrations):
                raise ValueError(f"migration {name!r} is already registered in set {self.name!r}")
            self._migrations.append((name, function))
            return function

        return register

    def functions(self) -> list[tuple[str, Callable[..., None]]]:
        """Every migration, in order, as (name, function)."""
        return list(self._migrations)

    def apply(self, db: Any, *, stop_before: str | Iterable[str] | None = None) -> None:
        """Apply the pending migrations to an SQLite database (a ``sqlite_utils.Database``, or the
        store's own handle: its connection), each with its record, by sqlite-utils' ``Migrations``
        (``stop_before``: as it takes it)."""
        from annotation.store.sqlite_lean import Migrations, sqlite_utils  # start-up: see the class

        migrations = Migrations(self.name)
        for name, function in self._migrations:
            migrations(name=name)(function)
        target = db if isinstance(db, sqlite_utils.Database) else sqlite_utils.Database(db.conn)
        migrations.apply(target, stop_before=stop_before)


MIGRATIONS = MigrationSet("denominator")

# The append-only guards (triggers refusing UPDATE and DELETE), by the migration that makes them:
# a store whose applied migrations should have made one that is missing is refused at open.
APPEND_ONLY = {
    "m001_schema": ("labels", "judge_labels"),
    "m008_check_history": ("check_reports",),
    "m012_imports": ("imports", "import_rows", "retirements"),
    "m013_settlements": ("settlements",),
    "m015_handout": ("handout",),
    "m017_batch_submitted": ("batch_submitted",),
    "m019_verdict_looks": ("verdict_looks",),
    "m022_label_reviews": ("label_reviews",),
    "m023_guidelines": ("guidelines",),
    "m025_evidence_marks": ("evidence_marks",),
}


def postgres(db: object) -> bool:
    """True when the migration runs on PostgreSQL (:class:`annotation.store.postgres.PgDatabase`)."""
    return getattr(db, "dialect", "sqlite") == "postgresql"


def append_only(db: sqlite_utils.Database, table: str, message: str) -> None:
    """The triggers refusing UPDATE and DELETE on ``table`` (``<table>_no_update``,
    ``<table>_no_delete``; on PostgreSQL also ``<table>_no_truncate``), raising ``message``."""
    if postgres(db):
        for statement in append_only_sql(table, message):
            db.execute(statement)
        return
    for action in ("UPDATE", "DELETE"):
        db.execute(
            f"""CREATE TRIGGER {table}_no_{action.lower()} BEFORE {action} ON {table}
                BEGIN SELECT RAISE(ABORT, '{message}'); END"""
        )


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
    for statement in statements:
        db.execute(statement)
    for table in ("labels", "judge_labels"):
        append_only(db, table, f"{table} are append-only: add a new row instead")


@MIGRATIONS(name="m002_queue_positions")
def _m002_queue_positions(db: sqlite_utils.Database) -> None:
    """A random position per item (single-user queue) and per assignment (each
    annotator's own order): the queue is read in position order through an
    index, so the next item costs the same with a thousand or a million chunks."""
    db.execute("ALTER TABLE items ADD COLUMN position INTEGER")
    db.execute("ALTER TABLE assignments ADD COLUMN position INTEGER")
    draw = "floor(random() * 281474976710656)" if postgres(db) else "abs(random()) % 281474976710656"
    db.execute(f"UPDATE items SET position = {draw}")
    db.execute(f"UPDATE assignments SET position = {draw}")
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


@MIGRATIONS(name="m008_check_history")
def _m008_check_history(db: sqlite_utils.Database) -> None:
    """Every recorded ``check`` report of a run name: the figures, the policy, the label file's
    hash and label count, the run's hash and when, so a figure can be followed over time and a
    change of labels is never read as a change of system. Append-only, like the labels."""
    db.execute(
        """CREATE TABLE check_reports (id INTEGER PRIMARY KEY, name TEXT NOT NULL, k INTEGER NOT NULL,
            golden_hash TEXT NOT NULL, golden_labels INTEGER NOT NULL, run_hash TEXT NOT NULL,
            passed INTEGER NOT NULL, report TEXT NOT NULL, created_at TEXT NOT NULL)"""
    )
    db.execute("CREATE INDEX check_reports_name ON check_reports (name, id)")
    append_only(db, "check_reports", "check reports are append-only: record a new one instead")


@MIGRATIONS(name="m009_judge_names")
def _m009_judge_names(db: sqlite_utils.Database) -> None:
    """A judge's name (chosen by a person; one name, many fingerprints) and its version under that
    name (1, 2, ... in creation order), so a refitted or re-prompted judge continues a line instead
    of starting a new one; and on every judge label the model the endpoint said it served and its
    ``system_fingerprint`` (NULL when not said, and on labels stored before this migration), so a
    provider alias that moves to a new model is seen. Existing judges get the default name
    (``offline-lexical/<rubric>`` for the offline judge, ``<model>/<rubric>`` otherwise), numbered
    by creation time."""
    db.execute("ALTER TABLE judges ADD COLUMN name TEXT")
    db.execute("ALTER TABLE judges ADD COLUMN version INTEGER")
    db.execute(
        """UPDATE judges SET name = CASE WHEN kind = 'lexical' OR endpoint = 'offline'
                THEN 'offline-lexical/' || ifnull(rubric, 'unknown')
                ELSE ifnull(nullif(model, ''), 'judge') || '/' || ifnull(rubric, 'unknown') END"""
    )
    db.execute(
        """WITH numbered AS (SELECT fingerprint,
                row_number() OVER (PARTITION BY name ORDER BY created_at, rowid) AS version FROM judges)
           UPDATE judges SET version = (SELECT n.version FROM numbered n WHERE n.fingerprint = judges.fingerprint)"""
    )
    db.execute("CREATE UNIQUE INDEX judges_name_version ON judges (name, version)")
    db.execute("ALTER TABLE judge_labels ADD COLUMN served_model TEXT")
    db.execute("ALTER TABLE judge_labels ADD COLUMN system_fingerprint TEXT")


@MIGRATIONS(name="m010_calibration_rule")
def _m010_calibration_rule(db: sqlite_utils.Database) -> None:
    """How each saved review reached its verdict: ``rule`` (``interval``: the interval against one
    bar), the ``statistic`` it read, and the ``served_model`` of the answers it rests on. Reviews
    saved before keep NULL: the old rule (a point estimate on quadratic weights), which the trend
    marks and never mixes in silently."""
    for column in ("rule", "statistic", "served_model"):
        db.execute(f"ALTER TABLE calibrations ADD COLUMN {column} TEXT")


@MIGRATIONS(name="m011_sessions")
def _m011_sessions(db: sqlite_utils.Database) -> None:
    """The app's sign-in sessions: who (``annotator_id``), under which token (``token_hash``: the
    session dies with it), when it began, when it expires and when it was ended (``revoked_at``:
    sign-out or the token's revocation). Only hashes are kept: of the session id the browser's
    cookie holds (``session_hash``, NULL until the browser claimed it) and of the one-time code
    that the browser trades for that cookie (``handoff_hash``, good once, until
    ``handoff_expires_at``)."""
    db.execute(
        """CREATE TABLE sessions (id INTEGER PRIMARY KEY,
            annotator_id INTEGER NOT NULL REFERENCES annotators(id), token_hash TEXT NOT NULL,
            session_hash TEXT UNIQUE, handoff_hash TEXT NOT NULL UNIQUE, handoff_expires_at TEXT NOT NULL,
            created_at TEXT NOT NULL, expires_at TEXT NOT NULL, claimed_at TEXT, revoked_at TEXT)"""
    )
    db.execute("CREATE INDEX sessions_annotator ON sessions (annotator_id)")


@MIGRATIONS(name="m012_imports")
def _m012_imports(db: sqlite_utils.Database) -> None:
    """Imports that can be taken back: each import (``imports``: a name, its kind, who ran it,
    from where, when), the rows it holds (``import_rows``: table and key; ``row_key`` has no type
    so a text id stays text and an integer id an integer), and ``retirements``: each retire or
    restore of an import, the newest row per import deciding (:mod:`annotation.store.retirements`).
    All three are append-only. Rows stored before this migration belong to no import: never
    retired."""
    db.execute(
        """CREATE TABLE imports (id INTEGER PRIMARY KEY, name TEXT NOT NULL, kind TEXT NOT NULL,
            who TEXT NOT NULL, source TEXT, created_at TEXT NOT NULL, meta TEXT)"""
    )
    db.execute(
        """CREATE TABLE import_rows (import_id INTEGER NOT NULL REFERENCES imports(id),
            tbl TEXT NOT NULL CHECK (tbl IN ('queries', 'chunks', 'runs', 'traces', 'labels')),
            row_key NOT NULL, PRIMARY KEY (import_id, tbl, row_key)) WITHOUT ROWID"""
    )
    db.execute("CREATE INDEX import_rows_row ON import_rows (tbl, row_key, import_id)")
    db.execute(
        """CREATE TABLE retirements (id INTEGER PRIMARY KEY, import_id INTEGER NOT NULL REFERENCES imports(id),
            action TEXT NOT NULL CHECK (action IN ('retire', 'restore')), who TEXT NOT NULL,
            created_at TEXT NOT NULL, reason TEXT)"""
    )
    db.execute("CREATE INDEX retirements_import ON retirements (import_id, id)")
    for table in ("imports", "import_rows", "retirements"):
        append_only(db, table, f"{table} are append-only: add a new row instead")


@MIGRATIONS(name="m013_settlements")
def _m013_settlements(db: sqlite_utils.Database) -> None:
    """Adjudication: an admin's label row (``label_id``) marked as the settled one for its item, by
    whom (``annotator_id``) and when. Append-only, like the labels: the newest row per item counts,
    a newer one supersedes, and a row without a label withdraws the settlement
    (:mod:`annotation.store.browse`)."""
    db.execute(
        """CREATE TABLE settlements (id INTEGER PRIMARY KEY, item_id INTEGER NOT NULL REFERENCES items(id),
            label_id INTEGER REFERENCES labels(id), annotator_id INTEGER NOT NULL REFERENCES annotators(id),
            created_at TEXT NOT NULL)"""
    )
    db.execute("CREATE INDEX settlements_item ON settlements (item_id, id)")
    append_only(db, "settlements", "settlements are append-only: settle again instead")


@MIGRATIONS(name="m014_leases")
def _m014_leases(db: sqlite_utils.Database) -> None:
    """Where each person is in their queue, in the store rather than in a browser session
    (:mod:`annotation.store.queue`): ``leases``, the item each of a person's tabs has on screen
    (``holder``: the tab's id, kept in its address so a reload keeps it), until a label, a skip
    or ``expires_at``; no other tab or server of the same person is shown a leased item.
    ``skips``: the items a person skipped, to come back once their queue is done. Both are
    working state, not records: rows come and go."""
    db.execute(
        """CREATE TABLE leases (annotator_id INTEGER NOT NULL REFERENCES annotators(id),
            kind TEXT NOT NULL, holder TEXT NOT NULL, item_id INTEGER NOT NULL REFERENCES items(id),
            revisit INTEGER NOT NULL DEFAULT 0, expires_at TEXT NOT NULL,
            PRIMARY KEY (annotator_id, kind, holder))"""
    )
    db.execute("CREATE INDEX leases_item ON leases (annotator_id, item_id)")
    db.execute(
        """CREATE TABLE skips (annotator_id INTEGER NOT NULL REFERENCES annotators(id),
            item_id INTEGER NOT NULL REFERENCES items(id), kind TEXT NOT NULL, created_at TEXT NOT NULL,
            PRIMARY KEY (annotator_id, item_id))"""
    )


@MIGRATIONS(name="m015_handout")
def _m015_handout(db: sqlite_utils.Database) -> None:
    """How the project hands items out (:meth:`annotation.store.queue.Queue.handout`): ``open``
    (an item goes to whoever asks next until ``per_item`` different people have labelled it) or
    ``assigned`` (only to the people it is assigned to). A record: each change is a new row, the
    newest counts; no row means the options table's default (open, 2 labels)."""
    db.execute(
        """CREATE TABLE handout (id INTEGER PRIMARY KEY,
            mode TEXT NOT NULL CHECK (mode IN ('open', 'assigned')),
            per_item INTEGER NOT NULL CHECK (per_item >= 1), who TEXT NOT NULL, created_at TEXT NOT NULL)"""
    )
    append_only(db, "handout", "the handout is a record: set it again instead")


@MIGRATIONS(name="m016_provider_sign_in")
def _m016_provider_sign_in(db: sqlite_utils.Database) -> None:
    """Sign-in with the team's OpenID Connect provider, beside tokens (:mod:`annotation.access.identity`):
    the person's verified e-mail (``email``, lower-cased) or the provider's subject (``subject``)
    on the annotator, each belonging to one annotator at most, and when that way in was revoked
    (``provider_revoked_at``: the e-mail stays, so a claim rule cannot add the person again).
    ``claim_rules``: a claim's value (``groups`` = ``labellers``) that adds a person at their first
    sign-in, with a role. ``provider_sessions``: each sign-in the app has let in, by the hash of
    what makes it one (the ID token's issuer, subject, time and nonce), until it expires or is
    ended (``revoked_at``: sign-out, or the person's revocation). Working state, like the leases."""
    for column in ("email", "subject", "provider_revoked_at"):
        db.execute(f"ALTER TABLE annotators ADD COLUMN {column} TEXT")
    db.execute("CREATE UNIQUE INDEX annotators_email ON annotators (email)")
    db.execute("CREATE UNIQUE INDEX annotators_subject ON annotators (subject)")
    db.execute(
        """CREATE TABLE claim_rules (claim TEXT NOT NULL, value TEXT NOT NULL,
            role TEXT NOT NULL CHECK (role IN ('annotator', 'admin')), who TEXT NOT NULL,
            created_at TEXT NOT NULL, PRIMARY KEY (claim, value))"""
    )
    db.execute(
        """CREATE TABLE provider_sessions (sign_in_hash TEXT PRIMARY KEY,
            annotator_id INTEGER NOT NULL REFERENCES annotators(id), created_at TEXT NOT NULL,
            expires_at TEXT NOT NULL, revoked_at TEXT)"""
    )
    db.execute("CREATE INDEX provider_sessions_annotator ON provider_sessions (annotator_id)")


@MIGRATIONS(name="m017_batch_submitted")
def _m017_batch_submitted(db: sqlite_utils.Database) -> None:
    """The calls each Batch API job asked, recorded when it was sent (``judge/batch.py``): per
    batch id and judge fingerprint, each (item, order, repeat) of its input file. Collecting a
    batch stores answers only for these, never for the ids the endpoint's copy of the input
    lists. Append-only: a record of what was sent. Batches sent before this migration have no
    rows (their collection falls back to the judge's calls on the store's items)."""
    db.execute(
        """CREATE TABLE batch_submitted (batch_id TEXT NOT NULL,
            fingerprint TEXT NOT NULL REFERENCES judges(fingerprint),
            item_id INTEGER NOT NULL REFERENCES items(id), ab_order TEXT, repeat INTEGER NOT NULL,
            created_at TEXT NOT NULL)"""
    )
    db.execute("CREATE INDEX batch_submitted_batch ON batch_submitted (batch_id, fingerprint)")
    append_only(db, "batch_submitted", "batch_submitted is append-only: a record of what was sent")


@MIGRATIONS(name="m018_subject_issuer")
def _m018_subject_issuer(db: sqlite_utils.Database) -> None:
    """The issuer of an annotator's ``subject`` when the store recorded it at a sign-in
    (:meth:`annotation.store.providers.Providers.provider_sign_in`): a subject is the provider's
    own id for the person, unique within its issuer only, so a recorded one matches sign-ins from
    that issuer alone. NULL for a subject an admin gave (``annotators add --subject``), which
    matches as before until its first sign-in records the issuer. Recording every signed-in
    person's subject is what holds a revocation whatever e-mail the same account comes back with."""
    db.execute("ALTER TABLE annotators ADD COLUMN subject_issuer TEXT")


@MIGRATIONS(name="m019_verdict_looks")
def _m019_verdict_looks(db: sqlite_utils.Database) -> None:
    """Each reading of a judge's verdict (issue #39): the judge, its rubric, the population read
    (``scope``: a week's sample or every labelled item), how many labels and queries it rested on,
    the verdict then and the face that read it. A verdict read again on more labels was read while
    people labelled: the review then reads the anytime-valid confidence sequence, not the fixed-n
    interval. Append-only: a record of what was shown."""
    db.execute(
        """CREATE TABLE verdict_looks (id INTEGER PRIMARY KEY, fingerprint TEXT NOT NULL, rubric TEXT NOT NULL,
            scope TEXT NOT NULL, n INTEGER NOT NULL, queries INTEGER, verdict TEXT, face TEXT,
            created_at TEXT NOT NULL)"""
    )
    db.execute("CREATE INDEX verdict_looks_judge ON verdict_looks (fingerprint, scope, n)")
    append_only(db, "verdict_looks", "verdict_looks are append-only: a record of what was shown")


@MIGRATIONS(name="m020_lease_sessions")
def _m020_lease_sessions(db: sqlite_utils.Database) -> None:
    """Where each lease's tab runs (:class:`annotation.store.queue.TabSession`): ``server session``,
    the app process's id and the id of the tab's connection to it, so a tab that closed gives its
    item back at the next lease on that server instead of after ``DENOMINATOR_LEASE_MINUTES`` (#43).
    NULL: a lease taken without one (it lapses as before)."""
    db.execute("ALTER TABLE leases ADD COLUMN session TEXT")


@MIGRATIONS(name="m021_batches")
def _m021_batches(db: sqlite_utils.Database) -> None:
    """Each person's batch per kind of item (:meth:`annotation.store.queue.Queue.batch_progress`):
    the highest item id (``upto``) and the number of items (``total``) in their queue when it
    began, so the progress total stays fixed while other people close open items (#43). Working
    state, like the leases: a new batch replaces the row."""
    db.execute(
        """CREATE TABLE batches (annotator_id INTEGER NOT NULL REFERENCES annotators(id),
            kind TEXT NOT NULL, upto INTEGER NOT NULL, total INTEGER NOT NULL, created_at TEXT NOT NULL,
            PRIMARY KEY (annotator_id, kind))"""
    )


@MIGRATIONS(name="m022_label_reviews")
def _m022_label_reviews(db: sqlite_utils.Database) -> None:
    """The review pass (#43, item 7). ``annotators.reviewer``: an annotator who may also review
    other people's labels (the role ``reviewer``; the role column keeps its two values). ``label_reviews``:
    each review of a label row, by whom and when: ``agree``, or ``correct`` with the reviewer's own
    label (``correction_id``, a new row of ``labels``: nothing is overwritten). Append-only: a
    record of what was reviewed; a second review of the same row is a new row, the newest counts."""
    db.execute("ALTER TABLE annotators ADD COLUMN reviewer INTEGER NOT NULL DEFAULT 0")
    db.execute(
        """CREATE TABLE label_reviews (id INTEGER PRIMARY KEY, label_id INTEGER NOT NULL REFERENCES labels(id),
            item_id INTEGER NOT NULL REFERENCES items(id), annotator_id INTEGER NOT NULL REFERENCES annotators(id),
            reviewer_id INTEGER NOT NULL REFERENCES annotators(id),
            verdict TEXT NOT NULL CHECK (verdict IN ('agree', 'correct')),
            correction_id INTEGER REFERENCES labels(id), note TEXT, created_at TEXT NOT NULL)"""
    )
    db.execute("CREATE INDEX label_reviews_label ON label_reviews (label_id)")
    db.execute("CREATE INDEX label_reviews_person ON label_reviews (annotator_id)")
    append_only(db, "label_reviews", "label reviews are append-only: review again instead")


@MIGRATIONS(name="m023_guidelines")
def _m023_guidelines(db: sqlite_utils.Database) -> None:
    """Each rubric's guidelines as an admin edits them (#43, :mod:`annotation.store.guidelines`):
    version 1, 2, ... per rubric, the whole text of each, who wrote it and when. Append-only: an
    edit is a new version, never an overwrite; no row means the built-in guidelines (version 0).
    On every label made here, the version in force when it was made (``labels.guidelines``); NULL
    on labels stored before this migration and on imported ones."""
    db.execute(
        """CREATE TABLE guidelines (id INTEGER PRIMARY KEY, rubric TEXT NOT NULL,
            version INTEGER NOT NULL CHECK (version >= 1), text TEXT NOT NULL, who TEXT NOT NULL,
            created_at TEXT NOT NULL, UNIQUE (rubric, version))"""
    )
    append_only(db, "guidelines", "guidelines are append-only: an edit is a new version")
    db.execute("ALTER TABLE labels ADD COLUMN guidelines INTEGER")


@MIGRATIONS(name="m024_chunk_spans")
def _m024_chunk_spans(db: sqlite_utils.Database) -> None:
    """Where a chunk comes from (#44): its document (``doc``) and character offsets into it
    (``doc_start``, ``doc_end``: end exclusive), kept by ``annotation import`` when the corpus
    gives them and written by the golden.yaml export in its ``chunks`` section. NULL: not known
    (every chunk imported before, and any corpus without offsets)."""
    db.execute("ALTER TABLE chunks ADD COLUMN doc TEXT")
    db.execute("ALTER TABLE chunks ADD COLUMN doc_start INTEGER")
    db.execute("ALTER TABLE chunks ADD COLUMN doc_end INTEGER")


@MIGRATIONS(name="m025_evidence_marks")
def _m025_evidence_marks(db: sqlite_utils.Database) -> None:
    """The sentences a person marked as the answer inside a chunk (#44 item 2,
    :mod:`annotation.store.evidence_marks`): one row per confirm, holding the whole set marked
    (``spans``: JSON ``[[start, end], ...]``, offsets into the document ``doc``; ``[]`` takes the
    marks back). Append-only: a new confirm is a new row, the newest per (item, annotator) counts."""
    db.execute(
        """CREATE TABLE evidence_marks (id INTEGER PRIMARY KEY, item_id INTEGER NOT NULL REFERENCES items(id),
            annotator_id INTEGER NOT NULL REFERENCES annotators(id), doc TEXT NOT NULL, spans TEXT NOT NULL,
            created_at TEXT NOT NULL)"""
    )
    db.execute("CREATE INDEX evidence_marks_item ON evidence_marks (item_id, annotator_id)")
    append_only(db, "evidence_marks", "evidence marks are append-only: mark again instead")


def migration_functions() -> list[tuple[str, object]]:
    """Every migration this code knows, in order, as (name, function): what PostgreSQL runs."""
    return [(name, function) for name, function in MIGRATIONS.functions()]


def migration_names() -> list[str]:
    """Every migration this code knows, in order (what an empty database has pending)."""
    return [name for name, _ in MIGRATIONS.functions()]
