"""The judge's throughput against the local OpenAI-compatible server.

2,000 calls (relevance of 2,000 (query, chunk) items) against
``python -m tests.fake_openai`` answering after 200 ms, with concurrency 32:
the ideal is calls x latency / concurrency (12.5 s); the figure is the share
of that ideal reached (target: at least 0.9), median over rounds. Each round
runs the real CLI (``python -m judge grade``) on a fresh copy of the
database, and its own elapsed time (the run, without interpreter start-up)
is read from its report. Then the same job again on the same database: it
must make 0 calls (the server's log counts them).

    python bench/judge.py [--calls 2000] [--latency 0.2] [--concurrency 32] [--rounds 3] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from annotation.model import Run  # noqa: E402
from annotation.pooling import pool  # noqa: E402
from annotation.store import Store  # noqa: E402


def build(path: Path, calls: int) -> None:
    queries = max(1, calls // 100)
    per_query = calls // queries
    with Store(path) as store:
        store.import_queries({f"q{i}": f"how do I store maize number {i}" for i in range(queries)})
        store.import_corpus(
            [
                {"id": f"c{j}", "text": f"chunk {j}: dry the grain to 13% moisture " * 4}
                for j in range(per_query)
            ]
        )
        store.import_run(
            Run.from_rankings({f"q{i}": [f"c{j}" for j in range(per_query)] for i in range(queries)}), "r"
        )
        pool(store, per_query)


def start_server(latency: float, log: Path) -> tuple[subprocess.Popen, str]:
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tests.fake_openai",
            "--port",
            "0",
            "--latency",
            str(latency),
            "--log",
            str(log),
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    line = process.stdout.readline()
    if not line.startswith("listening on "):
        process.kill()
        raise SystemExit(f"the fake server did not start: {line!r}")
    return process, line.split()[-1]


def grade(db: Path, url: str, concurrency: int) -> tuple[str, float]:
    command = [
        sys.executable,
        "-m",
        "judge",
        "grade",
        "--db",
        str(db),
        "--rubric",
        "relevance",
        "--judge",
        "openai",
        "--base-url",
        url,
        "--model",
        "fake-judge",
        "--concurrency",
        str(concurrency),
    ]
    result = subprocess.run(
        command, cwd=ROOT, capture_output=True, text=True, env={"OPENAI_API_KEY": "bench"}
    )
    if result.returncode != 0:
        raise SystemExit(f"judge failed: {result.stderr}")
    seconds = float(re.search(r"; ([0-9.]+) s\n", result.stdout).group(1))
    return result.stdout, seconds


def received(log: Path) -> int:
    return sum(json.loads(line)["event"] == "received" for line in log.read_text().splitlines())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", default=str(ROOT / "bench" / "results" / "judge.json"))
    args = parser.parse_args(argv)
    ideal = args.calls * args.latency / args.concurrency
    with tempfile.TemporaryDirectory(prefix="denominator-bench-") as tmp:
        folder = Path(tmp)
        base = folder / "base.db"
        build(base, args.calls)
        log = folder / "calls.jsonl"
        server, url = start_server(args.latency, log)
        try:
            shares, times, loads = [], [], []
            for round_ in range(args.rounds):
                db = folder / f"round{round_}.db"
                shutil.copy(base, db)
                before = received(log)
                out, seconds = grade(db, url, args.concurrency)
                made = received(log) - before
                if f"{args.calls} calls made" not in out or made != args.calls:
                    raise SystemExit(f"expected {args.calls} calls, the server received {made}: {out}")
                times.append(seconds)
                shares.append(ideal / seconds)
                loads.append(os.getloadavg()[0])
                print(
                    f"round {round_ + 1}: {args.calls} calls in {seconds:.2f} s = {ideal / seconds:.3f} of ideal "
                    f"(load {loads[-1]:.1f} on {os.cpu_count()} cores)"
                )
            before = received(log)
            started = time.monotonic()
            out, _ = grade(db, url, args.concurrency)
            again = received(log) - before
            second = time.monotonic() - started
        finally:
            server.terminate()
            server.wait(timeout=10)
    share = statistics.median(shares)
    print(
        f"judge throughput: {args.calls} calls, latency {args.latency * 1000:.0f} ms, concurrency "
        f"{args.concurrency}: median {statistics.median(times):.2f} s against the ideal {ideal:.2f} s = "
        f"{share:.3f} of ideal (target >= 0.9), over {args.rounds} rounds: "
        f"{min(shares):.3f}-{max(shares):.3f}, load {min(loads):.1f}-{max(loads):.1f} on {os.cpu_count()} cores "
        "(the client and the local server share the machine: a loaded machine reads lower)"
    )
    print(f"the same job again: {again} calls made ({second:.1f} s, interpreter start included)")
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(
        json.dumps(
            {
                "calls": args.calls,
                "latency": args.latency,
                "concurrency": args.concurrency,
                "ideal_s": ideal,
                "seconds": times,
                "share_of_ideal": shares,
                "median_share": share,
                "load": loads,
                "second_run_calls": again,
            },
            indent=1,
        )
    )
    return 0 if share >= 0.9 and again == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
