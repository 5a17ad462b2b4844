"""The store's part of one key press on a labelling page, step by step, on SQLite and PostgreSQL.

What denominator/ui/label.py does between a key press and the next item, without the browser: the
callback (a handle from ``annotation.store.borrowed``, the access check, one write: may this
tab label the item, the label, the lease's end, the next item's lease) and the pane's redraw
(a handle, the access check, the progress, the tab's lease read back, the item's texts).
Median milliseconds per step over ``--presses`` presses on the demo's trace page, for a new
person (the open items), with the load average printed. PostgreSQL: a throwaway server from
Debian's package with its durable settings (tests/postgres_server.py).

    python bench/keypress_store.py [--presses 20] [--kind trace] [--backends sqlite,postgresql]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from annotation.store import Store, borrowed  # noqa: E402
from annotation.views import item_view  # noqa: E402

RUBRIC = {"chunk": "relevance", "trace": "faithfulness", "pair": "preference"}
STEPS = (
    "handle",
    "access",
    "label write",
    "redraw handle",
    "redraw access",
    "progress",
    "lease read",
    "item",
)


def presses(
    db: str, kind: str, n: int, name: str = "bench", holder: str = "bench-tab-0001"
) -> dict[str, float]:
    times: dict[str, list[float]] = {step: [] for step in (*STEPS, "total")}
    with Store(db) as store:
        store.lease_item(store.annotator_id(name), kind, holder)
    for _ in range(n):
        marks = [time.perf_counter()]
        with borrowed(db) as store:
            marks.append(time.perf_counter())
            store.tokens_required()
            annotator_id = store.annotator_id(name)
            marks.append(time.perf_counter())
            item = store.lease_item(annotator_id, kind, holder)
            if item is None:  # the queue is done (the demo has 4 pair items)
                break
            with store.write():
                if not store.may_label(annotator_id, kind, holder, item["item_id"]):
                    raise SystemExit("the tab lost its lease")
                store.add_label(item["item_id"], name, 1, RUBRIC[kind])
                store.end_lease(annotator_id, kind, holder)
                store.lease_item(annotator_id, kind, holder, ended=True)
            marks.append(time.perf_counter())
        with borrowed(db) as store:
            marks.append(time.perf_counter())
            store.tokens_required()
            annotator_id = store.annotator_id(name)
            marks.append(time.perf_counter())
            store.queue_progress(annotator_id, kind)
            marks.append(time.perf_counter())
            leased = store.lease_item(annotator_id, kind, holder)
            marks.append(time.perf_counter())
            if leased is not None:
                item_view(store, leased["item_id"], name)
            marks.append(time.perf_counter())
        for step, start, end in zip(STEPS, marks, marks[1:]):
            times[step].append(end - start)
        times["total"].append(marks[-1] - marks[0])
    if not times["total"]:
        raise SystemExit(f"no {kind} item left to label for {name!r}")
    return {step: statistics.median(values) * 1000 for step, values in times.items()}


def demo(db: str) -> None:
    subprocess.run(
        [sys.executable, "-m", "denominator", "demo", "--db", db], cwd=ROOT, check=True, capture_output=True
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--presses", type=int, default=20, help="presses measured (default 20)")
    parser.add_argument("--kind", default="trace", choices=sorted(RUBRIC), help="the page (default trace)")
    parser.add_argument("--backends", default="sqlite,postgresql")
    args = parser.parse_args()
    print(f"load before: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print("| backend | " + " | ".join(STEPS) + " | total (ms) |")
    print("|---|" + "---:|" * (len(STEPS) + 1))
    for backend in [b.strip() for b in args.backends.split(",") if b.strip()]:
        if backend == "sqlite":
            with tempfile.TemporaryDirectory() as tmp:
                db = str(Path(tmp) / "demo.db")
                demo(db)
                result = presses(db, args.kind, args.presses)
        else:
            from tests.postgres_server import PostgresServer

            server = PostgresServer(durable=True).start()
            try:
                db = server.database()
                demo(db)
                result = presses(db, args.kind, args.presses)
            finally:
                server.stop()
        print(f"| {backend} | " + " | ".join(f"{result[s]:.2f}" for s in (*STEPS, "total")) + " |")
    print(f"load after: {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
