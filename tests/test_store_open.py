"""Opening a store (issue #17): readers never wait for a writer, the schema is checked once per
process (a write transaction only when a migration is pending), a database of a newer or broken
schema and a foreign file are refused (the foreign file left byte for byte as it was), and a full
disk or a disk I/O error is reported as such, with nothing rolled back twice."""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

import pytest

from annotation.store import Store, StoreError
from annotation.store.migrations import migration_names
from tests.conftest import HeldWriteLock, timed


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def held(path: Path) -> sqlite3.Connection:
    """A second connection holding the write lock (BEGIN IMMEDIATE), as a long import does."""
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("BEGIN IMMEDIATE")
    return conn


@pytest.mark.wall_clock
def test_opening_and_reading_never_wait_for_a_writer(tmp_path, figure) -> None:
    path = tmp_path / "r.db"
    with Store(path) as store:
        store.import_queries({"q1": "what"})
    lock = held(path)
    try:
        with timed() as opened:
            with Store(path) as store:  # before #17: BEGIN IMMEDIATE at every open, 10 s, then 'busy'
                counts = store.counts()
        took = opened.seconds
    finally:
        lock.execute("ROLLBACK")
        lock.close()
    figure(f"store open + counts under a held write lock: {took * 1000:.1f} ms")
    assert counts["queries"] == 1
    opened.within(1.0, "an open under a held write lock")


def test_an_open_of_a_current_store_starts_no_write(tmp_path) -> None:
    path = tmp_path / "w.db"
    Store(path).close()  # the migrations, once
    statements: list[str] = []
    original = sqlite3.connect

    def traced(*args, **kwargs):
        conn = original(*args, **kwargs)
        conn.set_trace_callback(statements.append)
        return conn

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(sqlite3, "connect", traced)
        with Store(path) as store:
            store.counts()
    assert not [s for s in statements if s.upper().startswith(("BEGIN", "INSERT", "CREATE"))], statements


@pytest.mark.parametrize("kind", ["other tables", "another migration set"])
def test_a_foreign_sqlite_file_is_refused_untouched(tmp_path, kind) -> None:
    path = tmp_path / "notes.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)")
    conn.execute("INSERT INTO notes (body) VALUES ('keep me')")
    if kind == "another migration set":
        conn.execute(
            "CREATE TABLE _sqlite_migrations (id INTEGER PRIMARY KEY, migration_set TEXT, name TEXT, applied_at TEXT)"
        )
        conn.execute(
            "INSERT INTO _sqlite_migrations (migration_set, name, applied_at) VALUES ('blog', 'm001', 'now')"
        )
    conn.commit()
    conn.close()
    before = digest(path)
    with pytest.raises(StoreError, match="not a Denominator database"):
        Store(path)
    assert digest(path) == before  # before #17: switched to WAL (header bytes 18-19) first
    assert not Path(f"{path}-wal").exists()
    check = sqlite3.connect(path)
    assert check.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
    check.close()


def test_a_file_that_is_not_sqlite_is_refused_untouched(tmp_path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("not a database\n" * 200)
    before = digest(path)
    with pytest.raises(StoreError, match="not a Denominator database"):
        Store(path)
    assert digest(path) == before


def test_a_newer_schema_is_refused_with_its_version_named(tmp_path) -> None:
    path = tmp_path / "newer.db"
    Store(path).close()
    conn = sqlite3.connect(path)
    conn.execute(
        "INSERT INTO _sqlite_migrations (migration_set, name, applied_at) VALUES ('denominator', 'm099_future', 'now')"
    )
    conn.commit()
    conn.close()
    with pytest.raises(StoreError, match="newer Denominator.*m099_future") as info:
        Store(path)
    assert migration_names()[-1] in str(info.value)  # what this version knows


def test_missing_append_only_triggers_are_refused_with_the_version(tmp_path) -> None:
    path = tmp_path / "guardless.db"
    Store(path).close()
    conn = sqlite3.connect(path)
    conn.execute("DROP TRIGGER labels_no_update")
    conn.commit()
    conn.close()
    with pytest.raises(StoreError, match="labels_no_update") as info:
        Store(path)
    assert migration_names()[-1] in str(info.value)


def test_disk_full_says_so_and_rolls_back_once(tmp_path) -> None:
    path = tmp_path / "full.db"
    with Store(path) as store:
        pages = store.db.execute("PRAGMA page_count").fetchone()[0]
        store.db.execute(f"PRAGMA max_page_count = {pages + 5}")  # the disk, nearly full
        with pytest.raises(StoreError, match="disk full.*nothing was written"):
            store.import_queries({f"q{i}": "x" * 2000 for i in range(200)})
        assert not store.db.conn.in_transaction
        assert store.counts()["queries"] == 0  # the import landed not at all
        store.db.execute("PRAGMA max_page_count = 1073741823")  # room again: the same handle writes
        store.import_queries({"q1": "what"})
        assert store.counts()["queries"] == 1


def test_a_disk_io_error_at_open_is_reported_as_such(tmp_path, monkeypatch) -> None:
    """A full disk at open (the WAL index cannot be made) is a disk I/O error, not 'not a Denominator
    database'. The error is injected at the first statement the open runs."""
    path = tmp_path / "io.db"
    Store(path).close()
    original = sqlite3.connect

    class Failing(sqlite3.Connection):
        def execute(self, sql, *args):  # type: ignore[override]
            raise sqlite3.OperationalError("disk I/O error")

    def connect(*args, **kwargs):
        return original(*args, **{**kwargs, "factory": Failing})

    monkeypatch.setattr(sqlite3, "connect", connect)
    with pytest.raises(StoreError) as info:
        Store(path)
    assert "disk I/O error" in str(info.value)
    assert "not a Denominator database" not in str(info.value)


# ---------------------------------------------------------------- the same on PostgreSQL


@pytest.mark.wall_clock
@pytest.mark.postgres
def test_postgresql_reads_never_wait_for_a_writer(postgres_server) -> None:
    url = postgres_server.database()
    with Store(url) as store:
        store.import_queries({"q1": "what"})
    lock = HeldWriteLock(url)
    try:
        with timed() as opened:
            with Store(url) as store:
                counts = store.counts()
    finally:
        lock.release(commit=False)
    assert counts["queries"] == 1
    opened.within(1.0, "an open under a held write lock")


@pytest.mark.postgres
def test_a_foreign_postgresql_database_is_refused_untouched(postgres_server) -> None:
    import psycopg

    url = postgres_server.database()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE TABLE notes (id SERIAL PRIMARY KEY, body TEXT)")
        conn.execute("INSERT INTO notes (body) VALUES ('keep me')")
    with pytest.raises(StoreError, match="not a Denominator database .*notes"):
        Store(url)
    with psycopg.connect(url, autocommit=True) as conn:
        tables = {r[0] for r in conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")}
        assert tables == {"notes"}  # nothing created
        assert conn.execute("SELECT body FROM notes").fetchall() == [("keep me",)]


@pytest.mark.postgres
def test_a_newer_postgresql_schema_and_a_missing_guard_are_refused(postgres_server) -> None:
    newer, guardless = postgres_server.database(), postgres_server.database()
    for url in (newer, guardless):
        Store(url).close()
    with Store(newer) as store:
        store.db.execute(
            "INSERT INTO _migrations (migration_set, name, applied_at) VALUES ('denominator', 'm099_future', 'now')"
        )
    with pytest.raises(StoreError, match="newer Denominator.*m099_future"):
        Store(newer)
    with Store(guardless) as store:
        store.db.execute("DROP TRIGGER labels_no_update ON labels")
    with pytest.raises(StoreError, match="labels_no_update") as info:
        Store(guardless)  # seen at once by this process, which had checked the schema before
    assert migration_names()[-1] in str(info.value)


@pytest.mark.parametrize("threads", [1, 2])
def test_a_migration_hides_pandas_only_while_the_process_has_one_thread(tmp_path, threads) -> None:
    """#42: sqlite-utils is imported when a store is first migrated, which may be in a process with
    other threads (the app's server). Hiding pandas and numpy there would make another thread's
    import of them fail, so they are hidden only while the process has one thread: alone, a new
    store loads sqlite-utils without pandas; with a thread beside it, sqlite-utils loads it as usual."""
    import subprocess
    import sys

    code = (
        "import sys, threading, time\n"
        f"if {threads} > 1: threading.Thread(target=time.sleep, args=(2,), daemon=True).start()\n"
        "from annotation.store import Store\n"
        f"Store({str(tmp_path / 'new.db')!r}).close()\n"
        "print('sqlite_utils' in sys.modules, sys.modules.get('pandas', 'absent') is None, 'pandas' in sys.modules)\n"
    )
    from tests.conftest import ROOT

    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True", "False", "False" if threads == 1 else "True"]
