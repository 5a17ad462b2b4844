"""Several people labelling at once: every label lands, none is lost, no 'database is locked'.

Each writer is its own process (its own connection), started as a plain
subprocess so nothing depends on how the test runner was launched.
"""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from annotation.store import Store
from tests.conftest import ROOT

pytestmark = pytest.mark.slow  # a load test: 16 processes writing at once
WORKERS = 16  # issue #6: 16 processes, 500 labels each, at once
LABELS_EACH = 500
WRITER = """
import sys
from annotation.store import Store
db, annotator, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
with Store(db, patient=True) as store:  # a load test is a bulk writer
    store.annotator_id(annotator)
    print("ready", flush=True)  # then every writer waits for the same go: the labels really overlap
    assert sys.stdin.readline() == "go\\n"
    for i in range(n):
        store.add_label(1 + i % 40, annotator, i % 4, seconds=0.1)
print(n)
"""


def test_parallel_writers_lose_nothing(demo_db, figure) -> None:
    db = str(demo_db)
    writers = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, db, f"person{w}", str(LABELS_EACH)],
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for w in range(WORKERS)
    ]
    assert [writer.stdout.readline() for writer in writers] == ["ready\n"] * WORKERS  # all 16 started
    started = time.monotonic()
    for writer in writers:  # then all released at once
        writer.stdin.write("go\n")
        writer.stdin.flush()
    outputs = [writer.communicate(timeout=600) for writer in writers]
    seconds = time.monotonic() - started
    assert [writer.returncode for writer in writers] == [0] * WORKERS, [err for _, err in outputs]
    assert [out.strip() for out, _ in outputs] == [str(LABELS_EACH)] * WORKERS
    with Store(db) as store:
        rows = store.db.execute(
            "SELECT a.name, count(*) FROM labels l JOIN annotators a ON a.id = l.annotator_id"
            " WHERE a.name LIKE 'person%' GROUP BY a.name"
        ).fetchall()
        if store.dialect == "sqlite":
            integrity = store.db.execute("PRAGMA integrity_check").fetchone()[0]
        else:  # PostgreSQL checks its own pages; here: every row its own id, none twice
            distinct, total = store.db.execute("SELECT count(DISTINCT id), count(*) FROM labels").fetchone()
            integrity = "ok" if distinct == total else f"{total - distinct} repeated ids"
    assert dict(rows) == {f"person{w}": LABELS_EACH for w in range(WORKERS)}  # 8,000 rows, none lost
    assert not any("locked" in err for _, err in outputs)
    figure(
        f"store load ({store.dialect}): {WORKERS} processes x {LABELS_EACH} labels = {WORKERS * LABELS_EACH} "
        f"written, {sum(n for _, n in rows)} stored, {sum(bool(err.strip()) for _, err in outputs)} errors, "
        f"{seconds:.1f} s ({WORKERS * LABELS_EACH / seconds:,.0f} labels/s)"
    )
    assert integrity == "ok"
