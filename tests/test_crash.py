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
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from tests.conftest import CONCURRENCY, ROOT, judge_values, start_judge, wait_until

pytestmark = pytest.mark.slow  # real processes killed and resumed
KILLS = 10


def test_ten_sigkills_and_resumes_end_with_the_uninterrupted_labels(
    judge_server, uninterrupted, tmp_path, figure
):
    server = judge_server
    expected, pristine = uninterrupted
    db = tmp_path / "killed.db"
    shutil.copy(pristine, db)
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
        f"judge run, {kills} SIGKILLs at random moments and resumes: 40 calls, {len(served)} answered, "
        f"{repeated} answers served twice (on their way at a kill), labels equal to an uninterrupted run"
    )


def _dump(db: Path) -> list[str]:
    with sqlite3.connect(db) as conn:
        return list(conn.iterdump())


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
    with sqlite3.connect(db) as conn:  # wait until the import holds the write lock: it is writing
        conn.execute("PRAGMA busy_timeout = 0")

        def locked() -> bool:
            try:
                conn.execute("BEGIN IMMEDIATE")
                conn.execute("ROLLBACK")
            except sqlite3.OperationalError:  # locked: the import is inside its transaction
                return True
            return False

        def writing() -> bool:
            assert process.poll() is None, "the import ended before it could be killed"
            return locked()

        wait_until(writing, "the import to hold the write lock")
        process.send_signal(signal.SIGSTOP)  # frozen: it can neither commit nor let go now
        assert locked(), "the import committed before it could be killed"
        process.send_signal(signal.SIGKILL)  # inside its transaction, for certain
        assert process.wait(timeout=30) == -signal.SIGKILL
    assert _dump(db) == before  # nothing of the import, the rest intact
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert Counter(r[0] for r in conn.execute("SELECT id FROM chunks WHERE id LIKE 'big%'")) == Counter()
    figure("import of 300,000 chunks killed with SIGKILL mid-transaction: database dump identical to before")
