"""The judge's throughput and CPU against the local OpenAI-compatible server.

2,000 calls (relevance of 2,000 (query, chunk) items) against
``python -m tests.fake_openai`` answering after 200 ms, with concurrency 32:
the ideal is calls x latency / concurrency (12.5 s); the figure is the share
of that ideal reached (target: at least 0.9), median over rounds. Each round
runs the real CLI (``python -m judge grade``) on a fresh copy of the
database and times the whole process, interpreter start and the closing
agreement line included (#42: the run's own figure, which leaves them out, is
printed beside it). The client's CPU is the process's (user + system, from
``wait4``) over its calls (target: at most 2 ms a call); the fake server's CPU over
the same round is printed beside it. Then the same job again on the same database:
it must make 0 calls (the server's log counts them).

``--peer DIR`` runs the same job with another checkout's ``python -m judge`` (a git
worktree of main, say) in alternating rounds against the same server, and prints
this checkout's figures as ratios of the peer's: a change's effect measured in the
same minutes, whatever the machine's load (it is printed beside every figure).

    python bench/judge.py [--calls 2000] [--latency 0.2] [--concurrency 32] [--rounds 3]
                          [--peer DIR] [--out FILE]
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
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from annotation.model import Run  # noqa: E402
from annotation.pooling import pool  # noqa: E402
from annotation.store import Store  # noqa: E402

CPU_TARGET_MS = 2.0  # the client's CPU a call, start and stop included
SHARE_TARGET = 0.9


@dataclass
class Round:
    side: str
    wall: float  # the process, start to exit
    run: float  # the run's own figure (its report): no start-up, no closing line
    cpu: float  # the client process's user + system seconds
    server_cpu: float | None  # the fake server's over the same round (None: not readable)
    load: float  # 1-minute load average at the round's end


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


def start_server(latency: float, log: Path) -> tuple[subprocess.Popen[str], str]:
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
    assert process.stdout is not None
    line = process.stdout.readline()
    if not line.startswith("listening on "):
        process.kill()
        raise SystemExit(f"the fake server did not start: {line!r}")
    return process, line.split()[-1]


def cpu_of(pid: int) -> float | None:
    """A running process's user + system seconds (Linux's /proc), None where unreadable."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def grade(cwd: Path, db: Path, url: str, concurrency: int, out: Path) -> tuple[str, float, float, float]:
    """One ``python -m judge grade`` from ``cwd``: (its stdout, wall seconds of the whole process,
    its own elapsed figure, its CPU seconds)."""
    command = [sys.executable, "-m", "judge", "grade", "--db", str(db), "--rubric", "relevance"]
    command += ["--judge", "openai", "--base-url", url, "--model", "fake-judge"]
    command += ["--concurrency", str(concurrency)]
    env = {"OPENAI_API_KEY": "bench", "PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    with open(out, "w") as stdout, open(out.with_suffix(".err"), "w") as stderr:
        started = time.monotonic()
        child = subprocess.Popen(command, cwd=cwd, stdout=stdout, stderr=stderr, env=env)
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.monotonic() - started
    text = out.read_text()
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"judge failed ({cwd}): {out.with_suffix('.err').read_text()[-2000:]}")
    found = re.search(r"; ([0-9.]+) s\n", text)
    if found is None:
        raise SystemExit(f"no elapsed time in the judge's report ({cwd}): {text[-500:]}")
    return text, wall, float(found.group(1)), usage.ru_utime + usage.ru_stime


def received(log: Path) -> int:
    return sum(json.loads(line)["event"] == "received" for line in log.read_text().splitlines())


def median(rounds: list[Round], field: str) -> float:
    return statistics.median(float(getattr(r, field)) for r in rounds)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--peer", type=Path, help="another checkout, run in alternating rounds")
    parser.add_argument("--out", default=str(ROOT / "bench" / "results" / "judge.json"))
    args = parser.parse_args(argv)
    ideal = args.calls * args.latency / args.concurrency
    sides = {"this": ROOT} | ({"peer": args.peer.resolve()} if args.peer else {})
    cores = os.cpu_count()
    with tempfile.TemporaryDirectory(prefix="denominator-bench-") as tmp:
        folder = Path(tmp)
        base = folder / "base.db"
        build(base, args.calls)
        log = folder / "calls.jsonl"
        server, url = start_server(args.latency, log)
        rounds: list[Round] = []
        try:
            for number in range(args.rounds):
                # alternate which side goes first, so neither always follows the other
                order = list(sides.items()) if number % 2 == 0 else list(reversed(sides.items()))
                for side, cwd in order:
                    db = folder / f"{side}{number}.db"
                    shutil.copy(base, db)
                    before, server_before = received(log), cpu_of(server.pid)
                    out, wall, run, cpu = grade(
                        cwd, db, url, args.concurrency, folder / f"{side}{number}.out"
                    )
                    server_after = cpu_of(server.pid)
                    made = received(log) - before
                    if f"{args.calls} calls made" not in out or made != args.calls:
                        raise SystemExit(f"expected {args.calls} calls, the server received {made}: {out}")
                    spent = (
                        server_after - server_before
                        if server_after is not None and server_before is not None
                        else None
                    )
                    rounds.append(Round(side, wall, run, cpu, spent, os.getloadavg()[0]))
                    r = rounds[-1]
                    served = f", server CPU {r.server_cpu:.1f} s" if r.server_cpu is not None else ""
                    print(
                        f"round {number + 1} {side}: {args.calls} calls in {wall:.2f} s start to exit = "
                        f"{ideal / wall:.3f} of ideal (the run alone {run:.2f} s = {ideal / run:.3f}); "
                        f"client CPU {cpu:.2f} s = {cpu / args.calls * 1000:.2f} ms a call{served} "
                        f"(load {r.load:.2f} on {cores} cores)",
                        flush=True,
                    )
            before = received(log)
            out, again_wall, _, again_cpu = grade(
                ROOT, folder / "this0.db", url, args.concurrency, folder / "again.out"
            )
            again = received(log) - before
        finally:
            server.terminate()
            server.wait(timeout=10)
    mine = [r for r in rounds if r.side == "this"]
    wall, cpu = median(mine, "wall"), median(mine, "cpu")
    share, per_call = ideal / wall, cpu / args.calls * 1000
    loads = [r.load for r in mine]
    print(
        f"judge: {args.calls} calls, latency {args.latency * 1000:.0f} ms, concurrency {args.concurrency}, "
        f"start to exit: median {wall:.2f} s against the ideal {ideal:.2f} s = {share:.3f} of ideal "
        f"(target >= {SHARE_TARGET}; rounds {min(ideal / r.wall for r in mine):.3f}-"
        f"{max(ideal / r.wall for r in mine):.3f}; the run alone {ideal / median(mine, 'run'):.3f}); "
        f"client CPU median {cpu:.2f} s = {per_call:.2f} ms a call (target <= {CPU_TARGET_MS:g}), "
        f"over {len(mine)} rounds, load {min(loads):.2f}-{max(loads):.2f} on {cores} cores "
        "(the client and the local server share the machine: a loaded machine reads lower)"
    )
    if args.peer:
        peer = [r for r in rounds if r.side == "peer"]
        print(
            f"peer ({args.peer}): median {median(peer, 'wall'):.2f} s = {ideal / median(peer, 'wall'):.3f} of "
            f"ideal, client CPU {median(peer, 'cpu'):.2f} s = {median(peer, 'cpu') / args.calls * 1000:.2f} ms "
            f"a call; this / peer: wall {wall / median(peer, 'wall'):.3f}x, CPU {cpu / median(peer, 'cpu'):.3f}x "
            f"(medians of alternating rounds, load {min(r.load for r in rounds):.2f}-"
            f"{max(r.load for r in rounds):.2f})"
        )
    print(
        f"the same job again: {again} calls made ({again_wall:.1f} s, {again_cpu:.2f} s CPU, interpreter "
        f"start included; load {os.getloadavg()[0]:.2f})"
    )
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(
        json.dumps(
            {
                "calls": args.calls,
                "latency": args.latency,
                "concurrency": args.concurrency,
                "ideal_s": ideal,
                "rounds": [asdict(r) for r in rounds],
                "median_share": share,
                "median_cpu_ms_per_call": per_call,
                "second_run_calls": again,
            },
            indent=1,
        )
    )
    return 0 if share >= SHARE_TARGET and per_call <= CPU_TARGET_MS and again == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
