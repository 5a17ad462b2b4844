"""Crash safety with SIGKILL (issue #6 item 4), with real processes.

- A judge run killed with SIGKILL at 10 random moments, resumed after each,
  ends with exactly the labels of an uninterrupted run, each stored once.
  Calls repeated at the server: only answers that were on their way when
  the process died (the server served them, the dead process never stored
  them). No client can avoid those against an endpoint without idempotency
  keys; the test measures them and bounds them by the calls in flight.
- An import killed mid-way leaves the database as it was.
"""

from __future__ import annotations

import json
import random
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from annotation.store import Store, postgres
from annotation.store.transfer import TABLES, table_checksum
from tests.conftest import CONCURRENCY, ROOT, judge_values, start_judge, store_copy, wait_until

pytestmark = pytest.mark.slow  # real processes killed and resumed
KILLS = 10


def test_ten_sigkills_and_resumes_end_with_the_uninterrupted_labels(
    judge_server, uninterrupted, backend, tmp_path, request, figure
):
    server = judge_server
    expected, pristine = uninterrupted
    db = store_copy(pristine, backend, tmp_path, request, "killed.db")
    rng = random.Random(20261130)
    started = time.monotonic()
    kills = 0
    server.hold()  # each run gets a few answers, then its next calls wait in flight: it cannot finish first
    try:
        for _ in range(KILLS):
            attempt = time.monotonic()
            answers = rng.randint(
                1, 3
            )  # a random moment while it is calling: after its 1st, 2nd or 3rd answer
            server.allow(answers)
            process = start_judge(db, server.url)
            server.wait_served(answers, since=attempt, client=process)
            process.send_signal(signal.SIGKILL)
            assert process.wait(timeout=30) == -signal.SIGKILL  # killed mid-run, not ended
            kills += 1
    finally:
        server.open()
    final = start_judge(db, server.url)
    out, err = final.communicate(timeout=120)
    assert final.returncode == 0, err
    received, served = server.events(since=started)
    assert kills == KILLS  # the run really was interrupted, every time
    assert judge_values(db) == expected  # the labels of an uninterrupted run, each stored once
    assert len(served) == 40  # none missing
    repeated = sum(n - 1 for n in served.values())
    # at most the answers on their way at each kill (in flight, or received and not yet committed)
    assert repeated <= kills * 2 * CONCURRENCY, (repeated, kills)
    figure(
        f"judge run ({backend}), {kills} SIGKILLs at random moments and resumes: 40 calls, {len(served)} answered, "
        f"{repeated} answers served twice (on their way at a kill), labels equal to an uninterrupted run"
    )


def _dump(db: Path | str) -> list:
    """Everything the store holds: SQLite's dump, or on PostgreSQL every table's rows and checksum."""
    if postgres.is_url(str(db)):
        with Store(db) as store:
            return [(table, table_checksum(store, table)) for table in TABLES]
    with sqlite3.connect(db) as conn:
        return list(conn.iterdump())


class WriteLockProbe:
    """Whether another process holds the store's write lock, asked without waiting."""

    def __init__(self, db: Path | str) -> None:
        self.pg = postgres.is_url(str(db))
        if self.pg:
            import psycopg

            self.conn = psycopg.connect(str(db), autocommit=True)
        else:
            self.conn = sqlite3.connect(db)
            self.conn.execute("PRAGMA busy_timeout = 0")

    def locked(self) -> bool:
        if self.pg:
            with self.conn.transaction():
                got = self.conn.execute(
                    f"SELECT pg_try_advisory_xact_lock({postgres.WRITE_LOCK})"
                ).fetchone()[0]
            return not got
        try:
            self.conn.execute("BEGIN IMMEDIATE")
            self.conn.execute("ROLLBACK")
        except sqlite3.OperationalError:  # locked: the import is inside its transaction
            return True
        return False

    def close(self) -> None:
        self.conn.close()


def test_an_import_killed_mid_way_leaves_the_database_as_it_was(demo_db, tmp_path, figure):
    db = demo_db
    before = _dump(db)
    corpus = tmp_path / "big.jsonl"
    with corpus.open("w") as handle:
        for i in range(300_000):
            handle.write(
                json.dumps({"id": f"big{i}", "text": f"chunk {i} about maize storage and pests"}) + "\n"
            )
    process = subprocess.Popen(
        [sys.executable, "-m", "annotation", "import", "--db", str(db), "--corpus", str(corpus)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    probe = WriteLockProbe(db)  # wait until the import holds the write lock: it is writing
    locked = probe.locked
    try:

        def writing() -> bool:
            assert process.poll() is None, "the import ended before it could be killed"
            return locked()

        wait_until(writing, "the import to hold the write lock")
        process.send_signal(signal.SIGSTOP)  # frozen: it can neither commit nor let go now
        assert locked(), "the import committed before it could be killed"
        process.send_signal(signal.SIGKILL)  # inside its transaction, for certain
        assert process.wait(timeout=30) == -signal.SIGKILL
    finally:
        probe.close()
    assert _dump(db) == before  # nothing of the import, the rest intact
    with Store(db) as store:
        if store.dialect == "sqlite":
            assert store.db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert store.db.execute("SELECT id FROM chunks WHERE id LIKE 'big%'").fetchall() == []
        assert not store.db.conn.in_transaction
    backend = "postgresql" if postgres.is_url(str(db)) else "sqlite"
    figure(
        f"import of 300,000 chunks killed with SIGKILL mid-transaction ({backend}): database dump identical to before"
    )
