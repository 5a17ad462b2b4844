"""The store under a team's load, on both backends: 16 processes write 500 labels each at once
(the load test of tests/test_store_concurrency.py), against an SQLite file (WAL, synchronous=FULL)
and a PostgreSQL database on a server started here from Debian's postgresql package with its
default durability (fsync and synchronous_commit on: each commit waits for the disk, as SQLite's
does). The backends take turns for ``--rounds`` rounds; medians of the wall time from the go to
the last label, and labels per second. Every label must be stored once (else exit 1).

    python bench/store_load.py [--rounds 3] [--workers 16] [--labels 500]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from annotation.store import Store  # noqa: E402
from denominator.demo import build_demo  # noqa: E402
from tests.postgres_server import PostgresServer, missing_reason  # noqa: E402
from tests.test_store_concurrency import WRITER  # noqa: E402


def one_round(db: str, workers: int, labels: int) -> float:
    build_demo(db)
    writers = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, db, f"person{w}", str(labels)],
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for w in range(workers)
    ]
    assert [w.stdout.readline() for w in writers] == ["ready\n"] * workers
    started = time.monotonic()
    for writer in writers:
        writer.stdin.write("go\n")
        writer.stdin.flush()
    outputs = [writer.communicate(timeout=900) for writer in writers]
    seconds = time.monotonic() - started
    errors = [err for (_, err), w in zip(outputs, writers) if w.returncode != 0]
    with Store(db) as store:
        stored = store.db.execute(
            "SELECT count(*) FROM labels l JOIN annotators a ON a.id = l.annotator_id WHERE a.name LIKE 'person%'"
        ).fetchone()[0]
    if errors or stored != workers * labels:
        print(f"FAILED: {stored} of {workers * labels} stored; {errors[:1]}")
        sys.exit(1)
    return seconds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--workers", type=int, default=16)
    parser.add_argument("--labels", type=int, default=500)
    args = parser.parse_args()
    reason = missing_reason()
    if reason:
        print(f"bench/store_load.py: PostgreSQL skipped ({reason}); SQLite only")
    server = None if reason else PostgresServer(durable=True).start()
    times: dict[str, list[float]] = {"sqlite": [], "postgresql": []}
    try:
        with tempfile.TemporaryDirectory() as folder:
            for r in range(args.rounds):
                order = ["sqlite", "postgresql"] if r % 2 == 0 else ["postgresql", "sqlite"]
                for backend in order:
                    if backend == "postgresql" and server is None:
                        continue
                    db = server.database() if backend == "postgresql" else str(Path(folder) / f"r{r}.db")
                    times[backend].append(one_round(db, args.workers, args.labels))
    finally:
        if server:
            server.stop()
    n = args.workers * args.labels
    print(
        f"store load, {args.workers} processes x {args.labels} labels = {n:,} labels, {args.rounds} alternating rounds:"
    )
    for backend, seconds in times.items():
        if seconds:
            med = statistics.median(seconds)
            shown = ", ".join(f"{s:.1f}" for s in seconds)
            print(
                f"  {backend:<10} median {med:.1f} s ({n / med:,.0f} labels/s; runs {shown} s), every label stored once"
            )
    if times["postgresql"]:
        ratio = statistics.median(times["postgresql"]) / statistics.median(times["sqlite"])
        print(f"  PostgreSQL / SQLite wall time: {ratio:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
