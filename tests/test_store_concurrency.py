"""Several people labelling at once: every label lands, none is lost, no 'database is locked'."""

from __future__ import annotations

import multiprocessing

from annotation.__main__ import build_demo
from annotation.pooling import next_item
from annotation.store import Store

WORKERS = 4
LABELS_EACH = 60


def _label(db: str, annotator: str, n: int) -> int:
    written = 0
    with Store(db) as store:
        for i in range(n):
            item = next_item(store, annotator, kind="chunk") or {"item_id": 1}
            store.add_label(item["item_id"], annotator, i % 4, seconds=0.1)
            written += 1
    return written


def test_parallel_writers_lose_nothing(tmp_path) -> None:
    db = str(tmp_path / "demo.db")
    build_demo(db)
    context = multiprocessing.get_context("spawn")  # separate processes, separate connections
    with context.Pool(WORKERS) as workers:
        written = workers.starmap(_label, [(db, f"person{w}", LABELS_EACH) for w in range(WORKERS)])
    assert written == [LABELS_EACH] * WORKERS
    with Store(db) as store:
        rows = store.db.execute(
            "SELECT a.name, count(*) FROM labels l JOIN annotators a ON a.id = l.annotator_id GROUP BY a.name"
        ).fetchall()
        integrity = store.db.execute("PRAGMA integrity_check").fetchone()[0]
    assert dict(rows) == {f"person{w}": LABELS_EACH for w in range(WORKERS)}
    assert integrity == "ok"
