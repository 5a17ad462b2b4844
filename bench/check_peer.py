"""``check`` against the same command of another checkout, on the bench's 10M-line collection:
alternating rounds, wall and CPU time, peak memory, the load printed (a change's cost, measured
beside its peer in the same minutes).

    git worktree add /tmp/peer COMMIT
    .venv/bin/python bench/check_peer.py --peer /tmp/peer --rounds 5

The collection is ``bench/run.py``'s (``bench/make_data.py``, generated once under bench/data).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from run import ensure_data  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--peer", type=Path, required=True, help="another checkout (a git worktree)")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    qrels, run = ensure_data(10_000, 1_000, 20, 2)
    argv = ["-m", "calibration", "check", str(qrels), str(run), "-k", "10", "--fetch-depth", "100"]
    argv += ["--no-store", "--format", "json"]
    sides = {"this checkout": ROOT, f"peer ({args.peer})": args.peer}
    seen: dict[str, list[tuple[float, float, float]]] = {name: [] for name in sides}
    for number in range(args.rounds):
        for name, cwd in sides.items():
            start = time.perf_counter()
            child = subprocess.Popen([sys.executable, *argv], cwd=cwd, stdout=subprocess.DEVNULL)
            _, status, usage = os.wait4(child.pid, 0)
            if os.waitstatus_to_exitcode(status) not in (0, 1):
                print(f"{name}: exit {os.waitstatus_to_exitcode(status)}", file=sys.stderr)
                return 2
            seen[name].append(
                (time.perf_counter() - start, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024)
            )
        print(f"round {number + 1}: load {os.getloadavg()[0]:.2f}", flush=True)
    for name, rows in seen.items():
        walls = [r[0] for r in rows]
        print(
            f"{name}: wall {statistics.median(walls):.2f} s median ({min(walls):.2f}-{max(walls):.2f}), "
            f"CPU {statistics.median(r[1] for r in rows):.2f} s, peak {max(r[2] for r in rows):.0f} MiB"
        )
    mine, peer = (statistics.median(r[0] for r in rows) for rows in seen.values())
    print(f"this checkout / peer: {mine / peer:.2f}x (median wall)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
