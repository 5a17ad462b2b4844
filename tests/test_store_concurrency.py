"""Several people labelling at once: every label lands, none is lost, no 'database is locked'.

Each writer is its own process (its own connection), started as a plain
subprocess so nothing depends on how the test runner was launched.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from annotation.__main__ import build_demo
from annotation.store import Store

ROOT = Path(__file__).resolve().parents[1]
WORKERS = 16  # issue #6: 16 processes, 500 labels each, at once
LABELS_EACH = 500
WRITER = """
import sys
from annotation.store import Store
db, annotator, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
with Store(db) as store:
    store.annotator_id(annotator)
    for i in range(n):
        store.add_label(1 + i % 40, annotator, i % 4, seconds=0.1)
print(n)
"""
# every writer waits for the same moment before its first label, so they really overlap
START = """
import time, sys
deadline = float(sys.argv[4])
while time.time() < deadline:
    time.sleep(0.001)
"""


def test_parallel_writers_lose_nothing(tmp_path, figure) -> None:
    db = str(tmp_path / "demo.db")
    build_demo(db)
    start = time.time() + 3.0  # time for 16 interpreters to start
    writers = [
        subprocess.Popen(
            [sys.executable, "-c", START + WRITER, db, f"person{w}", str(LABELS_EACH), str(start)],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for w in range(WORKERS)
    ]
    outputs = [writer.communicate(timeout=600) for writer in writers]
    assert [writer.returncode for writer in writers] == [0] * WORKERS, [err for _, err in outputs]
    assert [out.strip() for out, _ in outputs] == [str(LABELS_EACH)] * WORKERS
    with Store(db) as store:
        rows = store.db.execute(
            "SELECT a.name, count(*) FROM labels l JOIN annotators a ON a.id = l.annotator_id"
            " WHERE a.name LIKE 'person%' GROUP BY a.name"
        ).fetchall()
        integrity = store.db.execute("PRAGMA integrity_check").fetchone()[0]
    assert dict(rows) == {f"person{w}": LABELS_EACH for w in range(WORKERS)}  # 8,000 rows, none lost
    assert not any("locked" in err for _, err in outputs)
    figure(
        f"store load: {WORKERS} processes x {LABELS_EACH} labels = {WORKERS * LABELS_EACH} written, "
        f"{sum(n for _, n in rows)} stored, {sum(bool(err.strip()) for _, err in outputs)} errors"
    )
    assert integrity == "ok"
