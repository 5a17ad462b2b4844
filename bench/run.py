"""Benchmark ``python -m calibration metrics`` against pytrec_eval and ir_measures.

    python bench/run.py [--queries N] [--depth D] [--judged J] [--seed S]
                        [--rounds R] [--out FILE]

Seeded synthetic data (bench/make_data.py, written once into bench/data/).
Each contender is a fresh interpreter, so imports, parsing and evaluation all
count; the contenders alternate within every round. Wall time is
``perf_counter`` around the subprocess, peak memory its ``ru_maxrss`` from
``os.wait4``. Medians are reported; the means of the peers must equal ours.

Acceptance (exit 1 if any fails): ours >= 3x faster than pytrec_eval, peak
memory no higher than pytrec_eval's, every mean within 1e-9 of each peer's.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench"
MIN_SPEEDUP = 3.0
TOLERANCE = 1e-9
MEASURES = "P@10 P@100 R@10 R@100 MRR nDCG@10 nDCG@100 MAP Success@10 Success@100".split()


@dataclass
class Contender:
    name: str
    argv: list[str]  # QRELS and RUN are appended
    seconds: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)  # user + system seconds
    peak_kib: list[int] = field(default_factory=list)
    output: dict[str, Any] = field(default_factory=dict)


def display(path: str) -> str:
    """A path as it reads from the repository root, if it is under it."""
    return os.path.relpath(path, ROOT) if Path(path).is_relative_to(ROOT) else path


def ensure_data(queries: int, depth: int, judged: int, seed: int) -> tuple[Path, Path]:
    """The collection of this shape, generated once (in a subprocess: see ``measure``)."""
    data = BENCH / "data" / f"q{queries}-d{depth}-j{judged}-s{seed}"
    qrels, run = data / "qrels.txt", data / "run.txt"
    if not (qrels.exists() and run.exists()):
        tmp = data.with_name(data.name + ".tmp")
        print(f"generating {data.relative_to(ROOT)} ...", file=sys.stderr)
        options = {"--queries": queries, "--depth": depth, "--judged": judged, "--seed": seed}
        argv = [sys.executable, str(BENCH / "make_data.py"), str(tmp)]
        argv += [str(x) for option in options.items() for x in option]
        subprocess.run(argv, check=True, cwd=ROOT, stdout=subprocess.DEVNULL)
        tmp.rename(data)  # only a complete collection gets the real name
    return qrels, run


def measure(argv: list[str]) -> tuple[float, float, int, str]:
    """Run one contender; its wall seconds, CPU seconds, peak RSS (KiB) and stdout.

    ``os.wait4`` gives the rusage of this one child (RUSAGE_CHILDREN would be
    the max over all of them). Linux carries the forking parent's RSS into the
    child's ru_maxrss across exec, so this script stays small (no numpy).
    """
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        proc = subprocess.Popen(argv, cwd=ROOT, stdout=out, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
        out.seek(0)
        err.seek(0)
        if proc.returncode != 0:
            sys.exit(f"{shlex.join(argv)} exited {proc.returncode}:\n{err.read().decode()}")
        return seconds, usage.ru_utime + usage.ru_stime, usage.ru_maxrss, out.read().decode()


def peer_means(peer: Contender, ours: Contender) -> dict[str, float]:
    """The peer's means over the queries ours averages.

    pytrec_eval and ir_measures score a query without a relevant document 0 on
    every measure and average it in; ours leaves it out (counted in
    "undefined"). Rescaling by n / (n - undefined) removes exactly those zeros.
    """
    n = ours.output["n_queries"]
    undefined = ours.output["undefined"]
    return {
        m: peer.output["mean"][m] * n / (n - undefined[m]) if n > undefined[m] else float("nan")
        for m in MEASURES
    }


def report(
    args: argparse.Namespace, contenders: list[Contender], qrels: Path, run: Path
) -> tuple[str, list[str]]:
    ours, peers = contenders[0], contenders[1:]
    time_ours = statistics.median(ours.seconds)
    mib = {c.name: statistics.median(c.peak_kib) / 1024 for c in contenders}
    mean_failures: list[str] = []
    undefined = sum(ours.output["undefined"].values())
    lines = [
        "# Benchmark: `python -m calibration metrics` vs pytrec_eval and ir_measures",
        "",
        f"- command: `{shlex.join([display(sys.executable), *sys.argv])}`",
        f"- date: {datetime.now(UTC).strftime('%Y-%m-%d %H:%M:%S UTC')}",
        f"- machine: nproc {len(os.sched_getaffinity(0))}, Python {platform.python_version()}, "
        f"{platform.system()} {platform.machine()}, load average {os.getloadavg()[0]:.2f} at the end",
        f"- data: {args.queries:,} queries x {args.depth:,} documents, {args.judged} judgments per query, "
        f"seed {args.seed} (`{qrels.relative_to(ROOT)}`, `{run.name}`); "
        f"{ours.output['n_queries']:,} queries evaluated, {undefined} undefined values",
        f"- {args.rounds} rounds, contenders alternating; each run a fresh interpreter "
        "(import + parse + evaluate)",
        "",
        "| contender | median wall (s) | runs (s) | median time / ours | median CPU (s) "
        "| median peak RSS (MiB) | max abs diff of the means vs ours |",
        "|---|---:|---|---:|---:|---:|---|",
    ]
    for c in contenders:
        runs = ", ".join(f"{s:.2f}" for s in c.seconds)
        ratio = statistics.median(c.seconds) / time_ours
        if c is ours:
            diff = "-"
        else:
            theirs = peer_means(c, ours)
            worst = max(MEASURES, key=lambda m: abs(theirs[m] - ours.output["mean"][m]))
            diff = f"{abs(theirs[worst] - ours.output['mean'][worst]):.1e} ({worst})"
        wall, cpu = statistics.median(c.seconds), statistics.median(c.cpu)
        lines.append(
            f"| {c.name} | {wall:.2f} | {runs} | {ratio:.2f}x | {cpu:.2f} | {mib[c.name]:.0f} | {diff} |"
        )
    lines += ["", "| mean | ours | " + " | ".join(f"ours - {p.name}" for p in peers) + " |"]
    lines.append("|---|---:|" + "---:|" * len(peers))
    for m in MEASURES:
        value = ours.output["mean"][m]
        deltas = [value - peer_means(p, ours)[m] for p in peers]
        lines.append(f"| {m} | {value:.6f} | " + " | ".join(f"{d:.1e}" for d in deltas) + " |")
        for p, d in zip(peers, deltas):
            if not abs(d) <= TOLERANCE:  # also catches NaN
                mean_failures.append(
                    f"{m}: ours {value!r} != {p.name} {peer_means(p, ours)[m]!r} (diff {d:.3e})"
                )

    pytrec = contenders[1]
    speedup = statistics.median(pytrec.seconds) / time_ours
    checks = [
        (
            f"speed: ours {speedup:.2f}x faster than pytrec_eval (need >= {MIN_SPEEDUP:g}x)",
            speedup >= MIN_SPEEDUP,
        ),
        (
            f"memory: ours {mib[ours.name]:.0f} MiB, pytrec_eval {mib[pytrec.name]:.0f} MiB (need <=)",
            mib[ours.name] <= mib[pytrec.name],
        ),
        (f"means: every mean within {TOLERANCE:g} of every peer's", not mean_failures),
    ]
    failures = [text for text, ok in checks if not ok] + mean_failures
    lines += ["", "Acceptance:", ""] + [f"- {'PASS' if ok else 'FAIL'} {text}" for text, ok in checks]
    lines += ["", "Contenders (+ QRELS RUN):", ""] + [
        f"- {c.name}: `{shlex.join([display(c.argv[0]), *c.argv[1:]])}`" for c in contenders
    ]
    return "\n".join(lines) + "\n", failures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=10_000)
    parser.add_argument("--depth", type=int, default=1_000)
    parser.add_argument("--judged", type=int, default=20)
    parser.add_argument("--seed", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--out", type=Path, default=BENCH / "results" / "latest.md")
    args = parser.parse_args()

    qrels, run = ensure_data(args.queries, args.depth, args.judged, args.seed)
    py = sys.executable
    contenders = [
        Contender("ours", [py, "-m", "calibration", "metrics", "-k", "10", "-k", "100", "--format", "json"]),
        Contender("pytrec_eval", [py, "bench/peer_pytrec_eval.py"]),
        Contender("ir_measures", [py, "bench/peer_ir_measures.py"]),
    ]
    for r in range(args.rounds):
        for c in contenders:
            seconds, cpu, peak_kib, stdout = measure([*c.argv, display(str(qrels)), display(str(run))])
            output = json.loads(stdout)
            if c.output and output["mean"] != c.output["mean"]:
                sys.exit(f"{c.name}: means changed between runs")
            c.output = output
            c.seconds.append(seconds)
            c.cpu.append(cpu)
            c.peak_kib.append(peak_kib)
            print(
                f"round {r + 1}/{args.rounds} {c.name}: {seconds:.2f} s ({cpu:.2f} s CPU), "
                f"{peak_kib / 1024:.0f} MiB",
                file=sys.stderr,
            )

    ours = contenders[0].output
    if ours["missing_from_run"] or ours["not_in_qrels"]:
        sys.exit(
            f"the run and the qrels do not cover the same queries: {ours['missing_from_run']} "
            f"missing from the run, {ours['not_in_qrels']} not in the qrels"
        )
    if contenders[1].output["n_queries"] != ours["n_queries"]:
        sys.exit(
            f"pytrec_eval evaluated {contenders[1].output['n_queries']} queries, ours {ours['n_queries']}"
        )

    text, failures = report(args, contenders, qrels, run)
    print(text)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text)
    print(f"written to {args.out}", file=sys.stderr)
    for failure in failures:
        print(f"FAIL: {failure}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
