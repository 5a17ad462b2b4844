"""Next-item fetch and label write with 1,000 vs 1,000,000 chunks in the store.

Each database holds N chunks, N/100 queries and every chunk as an item in one
annotator's queue (the worst case: the whole corpus to label). Then the
labelling loop of the app, through the store API: fetch the next item, write
its label; median per operation over the timed rounds, the two stores taking
turns in blocks of 50 operations. Target (issue #3): the
larger database costs at most 1.3x the smaller.

    python bench/labelling.py [--sizes 1000,1000000] [--ops 300] [--out FILE]
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from annotation.store import Store  # noqa: E402
from annotation.views import next_item  # noqa: E402


def build(path: str, n_chunks: int, seed: int = 1) -> None:
    rng = random.Random(seed)
    with Store(path) as store:
        annotator = store.annotator_id("ann")
        with store.write() as db:
            db.conn.executemany(
                "INSERT INTO queries (id, text) VALUES (?, ?)",
                ((f"q{i}", f"query {i}") for i in range(max(1, n_chunks // 100))),
            )
            db.conn.executemany(
                "INSERT INTO chunks (id, text) VALUES (?, ?)",
                ((f"c{i}", f"chunk number {i} " * 8) for i in range(n_chunks)),
            )
            db.conn.executemany(
                "INSERT INTO items (id, kind, query_id, chunk_id, position) VALUES (?, 'chunk', ?, ?, ?)",
                ((i + 1, f"q{i // 100}", f"c{i}", rng.getrandbits(48)) for i in range(n_chunks)),
            )
            db.conn.executemany(
                "INSERT INTO assignments (item_id, annotator_id, position) VALUES (?, ?, ?)",
                ((i + 1, annotator, rng.getrandbits(48)) for i in range(n_chunks)),
            )


BLOCK, WARMUP = 50, 5


def measure(paths: list[str], ops: int) -> list[tuple[float, float]]:
    """Median seconds of next_item and of add_label per store, over ``ops`` rounds.
    The stores take turns in blocks of 50 operations (after 5 warm-up ones), so a
    noisy moment on the shared machine hits both alike."""
    stores = [Store(path) for path in paths]
    fetch: list[list[float]] = [[] for _ in paths]
    write: list[list[float]] = [[] for _ in paths]
    try:
        rounds = 0
        while rounds < ops:
            # blocks of BLOCK operations on one store, then on the other: long enough for each
            # store's hot pages to stay in the CPU's caches, short enough that noise hits both
            for i in range(len(stores)) if (rounds // BLOCK) % 2 == 0 else reversed(range(len(stores))):
                store = stores[i]
                for round_ in range(BLOCK + WARMUP):
                    start = time.perf_counter()
                    item = next_item(store, "ann")
                    middle = time.perf_counter()
                    store.add_label(item["item_id"], "ann", round_ % 4, seconds=1.0)
                    end = time.perf_counter()
                    if round_ >= WARMUP:
                        fetch[i].append(middle - start)
                        write[i].append(end - middle)
            rounds += BLOCK
    finally:
        for store in stores:
            store.close()
    return [(statistics.median(f), statistics.median(w)) for f, w in zip(fetch, write)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,1000000")
    parser.add_argument("--ops", type=int, default=300)
    parser.add_argument("--out", default="bench/results/labelling.md")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        paths, built = [], []
        for n in sizes:
            paths.append(os.path.join(tmp, f"store-{n}.db"))
            started = time.perf_counter()
            build(paths[-1], n)
            built.append(time.perf_counter() - started)
        for n, (fetch, write), seconds in zip(sizes, measure(paths, args.ops), built):
            rows.append((n, fetch, write, seconds))
            print(
                f"{n:>9,} chunks: next item {fetch * 1e3:.2f} ms, label write {write * 1e3:.2f} ms "
                f"(median of {args.ops}, in alternating blocks; built in {seconds:.1f} s)",
                flush=True,
            )
    small, large = rows[0], rows[-1]
    fetch_ratio, write_ratio = large[1] / small[1], large[2] / small[2]
    lines = [
        "# Labelling loop: next item and label write",
        "",
        f"- command: `python bench/labelling.py --sizes {args.sizes} --ops {args.ops}`",
        f"- date: {time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime())}; nproc {os.cpu_count()}",
        "",
        "| chunks in the store | next item (ms, median) | label write (ms, median) |",
        "|---:|---:|---:|",
        *[f"| {n:,} | {f * 1e3:.2f} | {w * 1e3:.2f} |" for n, f, w, _ in rows],
        "",
        f"ratio largest/smallest: next item {fetch_ratio:.2f}x, label write {write_ratio:.2f}x (target <= 1.3x)",
    ]
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text("\n".join(lines) + "\n")
    print(lines[-1])
    return 0 if max(fetch_ratio, write_ratio) <= 1.3 else 1


if __name__ == "__main__":
    sys.exit(main())
