"""The metrics' fixed cost: ``python -m calibration metrics`` against trec_eval on 1M lines (issue #42).

At 10M lines (bench/run.py) the reading and scoring dominate; at 1M a second of fixed cost
(imports, the parser, the threads) weighs as much as the work. bench/make_data.py's collection
of 1,000 queries x 1,000 documents (20 judgments each, seed 2), ``metrics -k 10 -k 100 --format
json`` against trec_eval 10.0's same measures (``-m P.10,100 -m recall.10,100 -m recip_rank -m
ndcg_cut.10,100 -m map -m success.10,100 -m num_q``), each a fresh process, their order alternating
round to round; CPU time (user + system, ``os.wait4``) beside wall time, the 1-minute load before
each run. One untimed run of each first (bytecode written, the files in the page cache).

Acceptance (#42): ours' median CPU time <= 0.7x trec_eval's (exit 1 above). trec_eval must be on
PATH (docs/benchmarks.md: how to build it); without it the bench says it is skipped (exit 0),
as bench/run.py skips its trec_eval contender.

    python bench/fixed_cost.py [--rounds 9] [--out FILE]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from run import ensure_data  # noqa: E402  (bench/run.py: the collection, generated once)

MAX_CPU_RATIO = 0.7  # ours' CPU over trec_eval's on 1M lines (issue #42)
MEASURES = ["P.10,100", "recall.10,100", "recip_rank", "ndcg_cut.10,100", "map", "success.10,100", "num_q"]


def child(argv: list[str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of one run; a failed run ends the bench."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"{' '.join(argv)} failed:\n{proc.stderr.read().decode() if proc.stderr else ''}")
    return wall, usage.ru_utime + usage.ru_stime


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--out", type=Path, default=None, help="also write the report to FILE")
    args = parser.parse_args()
    binary = shutil.which("trec_eval")
    if binary is None:
        print("fixed_cost: skipped: no trec_eval binary on PATH (docs/benchmarks.md: how to build it)")
        return 0
    qrels, run = ensure_data(1000, 1000, 20, 2)
    sides = {
        "ours": [sys.executable, "-m", "calibration", "metrics", "-k", "10", "-k", "100", "--format", "json"],
        "trec_eval": [binary, *[a for m in MEASURES for a in ("-m", m)]],
    }
    for argv in sides.values():
        child([*argv, str(qrels), str(run)])  # warm-up, untimed
    runs: dict[str, dict[str, list[float]]] = {side: {"wall": [], "cpu": [], "load": []} for side in sides}
    for r in range(args.rounds):
        for side in sides if r % 2 == 0 else list(sides)[::-1]:
            runs[side]["load"].append(os.getloadavg()[0])
            wall, cpu = child([*sides[side], str(qrels), str(run)])
            runs[side]["wall"].append(wall)
            runs[side]["cpu"].append(cpu)
    cpu_ratios = [a / b for a, b in zip(runs["ours"]["cpu"], runs["trec_eval"]["cpu"])]
    ratio = statistics.median(runs["ours"]["cpu"]) / statistics.median(runs["trec_eval"]["cpu"])
    wall_ratio = statistics.median(runs["ours"]["wall"]) / statistics.median(runs["trec_eval"]["wall"])
    loads = runs["ours"]["load"] + runs["trec_eval"]["load"]

    def shown(side: str, what: str) -> str:
        values = runs[side][what]
        return f"{statistics.median(values):.3f} s ({min(values):.3f}-{max(values):.3f})"

    verdict = "PASS" if ratio <= MAX_CPU_RATIO else "FAIL"
    report = "\n".join(
        [
            f"# The metrics' fixed cost: 1M lines against trec_eval ({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())})",
            "",
            f"- command: `{' '.join(['python', *sys.argv])}`; {args.rounds} rounds, the order alternating",
            f"- data: {qrels.parent.relative_to(ROOT)} (1,000 queries x 1,000 documents: 1,000,000 lines)",
            f"- ours: CPU {shown('ours', 'cpu')}, wall {shown('ours', 'wall')}",
            f"- trec_eval: CPU {shown('trec_eval', 'cpu')}, wall {shown('trec_eval', 'wall')}",
            f"- load (1 min) {min(loads):.2f}-{max(loads):.2f}",
            f"- {verdict}: ours {ratio:.3f}x trec_eval's CPU time, medians (by round "
            f"{min(cpu_ratios):.3f}x-{max(cpu_ratios):.3f}x; bound {MAX_CPU_RATIO}x); wall {wall_ratio:.3f}x",
            "",
        ]
    )
    print(report)
    if args.out is not None:
        args.out.write_text(report, encoding="utf-8")
    return 0 if verdict == "PASS" else 1


if __name__ == "__main__":
    sys.exit(main())
