"""The store's part of one key press on a labelling page, step by step, on SQLite and PostgreSQL.

What denominator/ui/label.py does between a key press and the next item, without the browser: the
callback (a handle from ``annotation.store.borrowed``, the access check, one write: may this tab
label the item, the label, the lease's end, the next item's lease, as ``_grade`` does) and the
pane's redraw (a handle, the next item's texts; then, once the item is drawn, a handle and the
batch's progress). Median milliseconds per step over ``--presses`` presses on the demo's page of
``--kind``, for a new person (the open items), the median number of statements sent per press
(each a round trip to PostgreSQL; statements sent together, one), and the server's CPU per press on PostgreSQL (``/proc``), with
the load average printed. PostgreSQL: a throwaway server from Debian's package with its durable
settings (tests/postgres_server.py).

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
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from annotation.store import Store, borrowed  # noqa: E402
from annotation.store.queue import TabSession  # noqa: E402
from annotation.views import item_view  # noqa: E402

RUBRIC = {"chunk": "relevance", "trace": "faithfulness", "pair": "preference"}
STEPS = ("handle", "access", "label write", "redraw handle", "item", "progress")
TICKS = os.sysconf("SC_CLK_TCK")
TAB = TabSession("bench", "session", lambda session: True)  # the page records its tab's connection


class Counted:
    """The handle's ``execute``, counting the statements sent."""

    def __init__(self, store: Store, sent: list[int]) -> None:
        self.execute = store.db.execute
        self.sent = sent

    def __call__(self, sql: str, params: Any = None) -> Any:
        self.sent[0] += 1
        return self.execute(sql, params) if params is not None else self.execute(sql)


class CountedAtOnce:
    """The handle's ``fetch_all_at_once`` (PostgreSQL: several statements in one round trip),
    counted as one."""

    def __init__(self, store: Store, sent: list[int]) -> None:
        self.fetch = store.db.fetch_all_at_once  # type: ignore[attr-defined]
        self.sent = sent

    def __call__(self, statements: Any) -> Any:
        self.sent[0] += 1
        return self.fetch(statements)


def _counting(store: Store, sent: list[int]) -> None:
    if not isinstance(store.db.execute, Counted):
        store.db.execute = Counted(store, sent)  # type: ignore[method-assign]
    store.db.execute.sent = sent  # type: ignore[attr-defined]
    if hasattr(store.db, "fetch_all_at_once"):
        if not isinstance(store.db.fetch_all_at_once, CountedAtOnce):
            store.db.fetch_all_at_once = CountedAtOnce(store, sent)  # type: ignore[attr-defined]
        store.db.fetch_all_at_once.sent = sent  # type: ignore[attr-defined]


def _server_cpu_ms(store: Store) -> float | None:
    """CPU time so far of the PostgreSQL backend serving ``store`` (None on SQLite)."""
    if store.dialect != "postgresql":
        return None
    pid = store.db._connection.info.backend_pid  # type: ignore[attr-defined]
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * 1000 / TICKS


def presses(
    db: str, kind: str, n: int, name: str = "bench", holder: str = "bench-tab-0001"
) -> dict[str, float]:
    times: dict[str, list[float]] = {step: [] for step in (*STEPS, "total")}
    statements: list[int] = []
    with Store(db) as store:
        leased = store.lease_item(store.annotator_id(name), kind, holder, tab=TAB)
    with borrowed(db) as store:
        server_before = _server_cpu_ms(store)
    for _ in range(n):
        if leased is None:  # the queue is done (the demo has 4 pair items)
            break
        item = leased  # on screen: the page keeps it in its session
        sent = [0]
        marks = [time.perf_counter()]
        with borrowed(db) as store:
            _counting(store, sent)
            marks.append(time.perf_counter())
            store.tokens_required()
            annotator_id = store.annotator_id(name)
            marks.append(time.perf_counter())
            with store.write():
                if store.label_refusal(annotator_id, kind, holder, item["item_id"]) is not None:
                    raise SystemExit("the tab lost its lease")
                store.add_label(item["item_id"], name, 1, RUBRIC[kind], annotator_id=annotator_id)
                store.end_lease(annotator_id, kind, holder)
                leased = store.lease_item(annotator_id, kind, holder, ended=True, tab=TAB)
            marks.append(time.perf_counter())
        with borrowed(db) as store:
            _counting(store, sent)
            marks.append(time.perf_counter())
            if leased is not None:
                item_view(store, leased["item_id"], name)
            marks.append(time.perf_counter())
        with borrowed(db) as store:
            _counting(store, sent)
            store.batch_progress(annotator_id, kind)
            marks.append(time.perf_counter())
        for step, start, end in zip(STEPS, marks, marks[1:]):
            times[step].append(end - start)
        times["total"].append(marks[-1] - marks[0])
        statements.append(sent[0])
    if not times["total"]:
        raise SystemExit(f"no {kind} item left to label for {name!r}")
    result = {step: statistics.median(values) * 1000 for step, values in times.items()}
    result["statements"] = statistics.median(statements)
    with borrowed(db) as store:
        server_after = _server_cpu_ms(store)
    if server_before is not None and server_after is not None:
        result["server CPU"] = (server_after - server_before) / len(statements)
    return result


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
    print("| backend | " + " | ".join(STEPS) + " | total (ms) | statements | server CPU (ms) |")
    print("|---|" + "---:|" * (len(STEPS) + 3))
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
        cpu = f"{result['server CPU']:.1f}" if "server CPU" in result else "-"
        cells = " | ".join(f"{result[s]:.2f}" for s in (*STEPS, "total"))
        print(f"| {backend} | {cells} | {result['statements']:.0f} | {cpu} |")
    print(f"load after: {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
