"""Benchmark ``python -m calibration metrics`` against pytrec_eval and ir_measures.

    python bench/run.py [--queries N] [--depth D] [--judged J] [--seed S]
                        [--rounds R] [--out FILE]
    python bench/run.py --large [--rounds R]    (10M against 100M lines, ours only)

Seeded synthetic data (bench/make_data.py, written once into bench/data/).
Each contender is a fresh interpreter, so imports, parsing and evaluation all
count; the contenders alternate within every round. Wall time is
``perf_counter`` around the subprocess, peak memory its ``ru_maxrss`` from
``os.wait4``. Medians are reported; the means of the peers must equal ours.

Acceptance (exit 1 if any fails): ours >= 3x faster than pytrec_eval, peak
memory (the highest over the rounds) no higher than pytrec_eval's and at most 0.5 GB,
every mean within 1e-9 of each peer's; with trec_eval on PATH, the median of the
rounds' ratios trec_eval / ours >= 4x (their range printed beside). ``audit
--fetch-depth 100`` and ``check --no-store`` (ours, on the same files, taking turns
with the rest) at most 0.5 GB and a median time at most 1.5x the metrics'. Each
round's load average (1 min) is printed beside its times.

"ours" is ``python -m calibration metrics`` when it streams grouped runs (its help lists
``--grouped``); until then the stand-in ``bench/run.py --ours QRELS RUN -k ..`` runs
the same workflow (``calibration.run_file.evaluate_run_file``) and prints the same JSON,
and the CLI as it is today runs beside it as "ours, whole read".

``--large``: the same collection at 10x the queries (100M lines, ~3.5 GB, generated
in ``bench/data/`` and deleted afterwards unless ``--keep``), ours alone on the 10M and
the 100M file alternating; acceptance: peak RSS under 1 GB on the 100M file and its
median wall time at most 12x the 10M file's (an upper bound: better than linear passes).

``holes -k 10`` and ``metrics --judge-labels`` (a judge's grades on the top-10 holes, written
once beside the data as judge.txt) take turns too, held to 1 GB and 1.3x the metrics' median
time (issue #42). Every contender's CPU time (user + system) is printed beside its wall time,
and with trec_eval the median of the rounds' CPU-time ratios (issue #42 asks >= 4x).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench"
MIN_SPEEDUP = 3.0
TOLERANCE = 1e-9
MAX_PEAK_MIB = 500 * 1000**2 / 1024**2  # 0.5 GB
LARGE_MAX_PEAK_MIB = 1000**3 / 1024**2  # 1 GB
MAX_AUDIT_TIME = 1.5  # audit and check: their median wall time over the metrics' median
MAX_HOLES_TIME = 1.3  # holes and metrics --judge-labels (issue #42)
LARGE_RATIO = 12.0  # 100M lines within 12x the 10M time: an upper bound (better than linear passes)
MEASURES = "P@10 P@100 R@10 R@100 MRR nDCG@10 nDCG@100 MAP Success@10 Success@100".split()


@dataclass
class Contender:
    name: str
    argv: list[str]  # QRELS and RUN are appended
    seconds: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)  # user + system seconds
    peak_kib: list[int] = field(default_factory=list)
    output: dict[str, Any] = field(default_factory=dict)
    parse: Callable[[str], dict[str, Any]] = json.loads  # its stdout as {"n_queries", "mean"}
    tolerance: float = 1e-9  # how far its means may be from ours (trec_eval prints 4 decimals)
    loads: list[float] = field(default_factory=list)  # load average (1 min) before each run
    exit_codes: tuple[int, ...] = (0,)  # audit and check exit 1 when a finding fails a gate
    scores: bool = True  # False: another of our commands, timed beside the metrics (no means)
    bound: float = 1.5  # another command: its median wall time over the metrics', at most
    max_mib: float = 500 * 1000**2 / 1024**2  # another command: its peak RSS, at most (MiB)


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


def measure(argv: list[str], exit_codes: tuple[int, ...] = (0,)) -> tuple[float, float, int, str]:
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
        if proc.returncode not in exit_codes:
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
    ours, peers = contenders[0], [c for c in contenders[1:] if c.scores]
    extra = [c for c in contenders[1:] if not c.scores]
    time_ours = statistics.median(ours.seconds)
    mib = {c.name: statistics.median(c.peak_kib) / 1024 for c in contenders}
    top_mib = {c.name: max(c.peak_kib) / 1024 for c in contenders}  # the bounds hold every round
    loads = [x for c in contenders for x in c.loads]
    mean_failures: list[str] = []
    undefined = sum(ours.output["undefined"].values())
    lines = [
        "# Benchmark: `python -m calibration metrics` vs pytrec_eval and ir_measures",
        "",
        f"- command: `{shlex.join([display(sys.executable), *sys.argv])}`",
        f"- date: {datetime.now(UTC).strftime('%Y-%m-%d %H:%M:%S UTC')}",
        f"- machine: nproc {len(os.sched_getaffinity(0))}, Python {platform.python_version()}, "
        f"{platform.system()} {platform.machine()}, load average (1 min) {min(loads):.1f}-{max(loads):.1f} "
        f"before the runs, {os.getloadavg()[0]:.1f} at the end",
        f"- data: {args.queries:,} queries x {args.depth:,} documents, {args.judged} judgments per query, "
        f"seed {args.seed} (`{qrels.relative_to(ROOT)}`, `{run.name}`); "
        f"{ours.output['n_queries']:,} queries evaluated, {undefined} undefined values",
        f"- {args.rounds} round{'s' * (args.rounds != 1)}, contenders alternating; each run a fresh interpreter "
        "(import + parse + evaluate)",
        "",
        "| contender | median wall (s) | runs (s) | median time / ours | median CPU (s) | median CPU / ours "
        "| peak RSS (MiB), median (max) | max abs diff of the means vs ours |",
        "|---|---:|---|---:|---:|---:|---:|---|",
    ]
    for c in contenders:
        runs = ", ".join(f"{s:.2f}" for s in c.seconds)
        ratio = statistics.median(c.seconds) / time_ours
        if c is ours or not c.scores:
            diff = "-"
        elif c.name == WHOLE:
            same = c.output["mean"] == ours.output["mean"] and c.output["queries"] == ours.output["queries"]
            diff = "identical output" if same else "DIFFERENT output"
            if not same:
                mean_failures.append(f"{WHOLE}: its JSON differs from ours")
        else:
            theirs = peer_means(c, ours)
            worst = max(MEASURES, key=lambda m: abs(theirs[m] - ours.output["mean"][m]))
            diff = f"{abs(theirs[worst] - ours.output['mean'][worst]):.1e} ({worst})"
        wall, cpu = statistics.median(c.seconds), statistics.median(c.cpu)
        cpu_ratio = cpu / statistics.median(ours.cpu)
        lines.append(
            f"| {c.name} | {wall:.2f} | {runs} | {ratio:.2f}x | {cpu:.2f} | {cpu_ratio:.2f}x | {mib[c.name]:.0f} "
            f"({top_mib[c.name]:.0f}) | {diff} |"
        )
    peers = [p for p in peers if "mean" in p.output and p.name != WHOLE]
    lines += ["", "| mean | ours | " + " | ".join(f"ours - {p.name}" for p in peers) + " |"]
    lines.append("|---|---:|" + "---:|" * len(peers))
    for m in MEASURES:
        value = ours.output["mean"][m]
        deltas = [value - peer_means(p, ours)[m] for p in peers]
        lines.append(f"| {m} | {value:.6f} | " + " | ".join(f"{d:.1e}" for d in deltas) + " |")
        for p, d in zip(peers, deltas):
            if not abs(d) <= p.tolerance:  # also catches NaN
                mean_failures.append(
                    f"{m}: ours {value!r} != {p.name} {peer_means(p, ours)[m]!r} (diff {d:.3e})"
                )

    pytrec = next(c for c in contenders if c.name == "pytrec_eval")
    speedup, low, high = round_ratios(pytrec, ours)
    checks = [
        (
            f"speed: ours {speedup:.2f}x faster than pytrec_eval, median of the rounds "
            f"({low:.2f}x-{high:.2f}x) (need >= {MIN_SPEEDUP:g}x)",
            speedup >= MIN_SPEEDUP,
        ),
        (
            f"memory: ours {top_mib[ours.name]:.0f} MiB at most, pytrec_eval {mib[pytrec.name]:.0f} MiB "
            f"(need <= and <= {MAX_PEAK_MIB:.0f} MiB = 0.5 GB)",
            top_mib[ours.name] <= min(mib[pytrec.name], MAX_PEAK_MIB),
        ),
        (
            "means: every mean within "
            + ", ".join(f"{p.tolerance:g} of {p.name}'s" for p in peers)
            + " (trec_eval prints 4 decimals)" * any(p.name == "trec_eval" for p in peers),
            not mean_failures,
        ),
    ]
    trec = next((c for c in contenders if c.name == "trec_eval"), None)
    if trec is not None:
        versus, low, high = round_ratios(trec, ours)
        cpu_versus = [a / b for a, b in zip(trec.cpu, ours.cpu)]
        checks += [
            (
                f"CPU: ours {statistics.median(cpu_versus):.2f}x less CPU time than trec_eval, median of the "
                f"rounds ({min(cpu_versus):.2f}x-{max(cpu_versus):.2f}x) (issue #42 asks >= 4x)",
                statistics.median(cpu_versus) >= MIN_VS_TREC_EVAL,
            ),
            (
                f"speed: ours {versus:.2f}x faster than trec_eval, median of the rounds "
                f"({low:.2f}x-{high:.2f}x) (need >= {MIN_VS_TREC_EVAL:g}x)",
                versus >= MIN_VS_TREC_EVAL,
            ),
            (
                f"memory: ours {top_mib[ours.name]:.0f} MiB at most, trec_eval {mib[trec.name]:.0f} MiB (need <=)",
                top_mib[ours.name] <= mib[trec.name],
            ),
        ]
    for c in extra:
        slower, low, high = round_ratios(c, ours)
        cpu_slower = statistics.median([a / b for a, b in zip(c.cpu, ours.cpu)])
        checks.append(
            (
                f"{c.name}: {top_mib[c.name]:.0f} MiB at most (need <= {c.max_mib:.0f} MiB), "
                f"{slower:.2f}x the metrics' time, median of the rounds ({low:.2f}x-{high:.2f}x) "
                f"(need <= {c.bound:g}x); {cpu_slower:.2f}x their CPU time",
                top_mib[c.name] <= c.max_mib and slower <= c.bound,
            )
        )
    failures = [text for text, ok in checks if not ok] + mean_failures
    lines += ["", "Acceptance:", ""] + [f"- {'PASS' if ok else 'FAIL'} {text}" for text, ok in checks]
    lines += ["", "Contenders (+ QRELS RUN):", ""] + [
        f"- {c.name}: `{shlex.join([display(c.argv[0]), *c.argv[1:]])}`" for c in contenders
    ]
    return "\n".join(lines) + "\n", failures


WHOLE = "ours, whole read (CLI today)"
MIN_VS_TREC_EVAL = 4.0


def round_ratios(slow: Contender, fast: Contender) -> tuple[float, float, float]:
    """``slow``'s time over ``fast``'s in each round (they ran in the same minutes): the median
    and the range."""
    ratios = [a / b for a, b in zip(slow.seconds, fast.seconds)]
    return statistics.median(ratios), min(ratios), max(ratios)


def trec_eval_output(stdout: str) -> dict[str, Any]:
    """trec_eval's summary lines (``measure<TAB>all<TAB>value``) as the peers' JSON."""
    from peer_pytrec_eval import NAMES  # trec_eval's measure names are pytrec_eval's

    values = {}
    for line in stdout.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] == "all":
            values[parts[0]] = parts[2]
    return {
        "n_queries": int(values["num_q"]),
        "mean": {ours: float(values[theirs]) for theirs, ours in NAMES.items()},
    }


def trec_eval_contender() -> Contender | None:
    """trec_eval's own C program when a ``trec_eval`` binary is on PATH (docs/benchmarks.md says
    how to build it); None, with a line saying so, when there is none."""
    binary = shutil.which("trec_eval")
    if binary is None:
        print(
            "trec_eval: skipped: no trec_eval binary on PATH (docs/benchmarks.md: how to build it)",
            file=sys.stderr,
        )
        return None
    from peer_pytrec_eval import MEASURES  # the same measures, by the same names

    # num_q: how many queries it averaged over (printed only when asked for, with -m)
    argv = [binary] + [a for m in [*sorted(MEASURES), "num_q"] for a in ("-m", m)]
    return Contender("trec_eval", argv, parse=trec_eval_output, tolerance=5e-5)


def ensure_judge(qrels: Path, run: Path) -> Path:
    """A judge's grades on the run's top-10 holes (seeded, 0-3), written once beside the data:
    what ``metrics --judge-labels`` fills the holes with."""
    judge = run.with_name("judge.txt")
    if not judge.exists():
        argv = [
            sys.executable,
            "-m",
            "calibration",
            "holes",
            str(qrels),
            str(run),
            "-k",
            "10",
            "--format",
            "json",
        ]
        holes = json.loads(subprocess.run(argv, cwd=ROOT, check=True, capture_output=True, text=True).stdout)
        lines = []
        for n, (qid, row) in enumerate(holes["queries"].items()):
            lines += [f"{qid} 0 {doc} {(n * 7 + i * 3) % 4}\n" for i, doc in enumerate(row["holes"])]
        tmp = judge.with_suffix(".tmp")
        tmp.write_text("".join(lines))
        tmp.rename(judge)
    return judge


def holes_contenders(judge: Path) -> list[Contender]:
    """``holes -k 10`` and ``metrics --judge-labels`` (issue #42): a whole read, held to 1.3x the
    metrics' time and 1 GB."""
    cli = [sys.executable, "-m", "calibration"]
    bound = {"scores": False, "bound": MAX_HOLES_TIME, "max_mib": LARGE_MAX_PEAK_MIB}
    return [
        Contender("ours: holes", [*cli, "holes", "-k", "10", "--format", "json"], **bound),  # type: ignore[arg-type]
        Contender(
            "ours: metrics --judge-labels",
            [*cli, "metrics", "-k", "10", "--judge-labels", display(str(judge)), "--format", "json"],
            **bound,  # type: ignore[arg-type]
        ),
    ]


def audit_contenders() -> list[Contender]:
    """``audit`` and ``check`` on the same files: held to the metrics' memory bound and 1.5x
    their time (both read a grouped run in pieces)."""
    cli = [sys.executable, "-m", "calibration"]
    return [
        Contender(
            "ours: audit",
            [*cli, "audit", "-k", "10", "--fetch-depth", "100", "--format", "json"],
            exit_codes=(0, 1),
            scores=False,
        ),
        Contender(
            "ours: check",
            [*cli, "check", "-k", "10", "--fetch-depth", "100", "--no-store", "--format", "json"],
            exit_codes=(0, 1),
            scores=False,
        ),
    ]


def cli_streams() -> bool:
    """Whether ``python -m calibration metrics`` takes ``--grouped`` (reads grouped runs in pieces)."""
    argv = [sys.executable, "-m", "calibration", "metrics", "--help"]
    return "--grouped" in subprocess.run(argv, cwd=ROOT, capture_output=True, text=True).stdout


def ours_argv() -> list[Contender]:
    py = sys.executable
    cli = [py, "-m", "calibration", "metrics", "-k", "10", "-k", "100", "--format", "json"]
    if cli_streams():
        return [Contender("ours", cli)]
    stand_in = [py, "bench/run.py", "--ours", "-k", "10", "-k", "100"]
    return [Contender("ours", stand_in), Contender(WHOLE, cli)]


def run_ours(argv: list[str]) -> int:
    """The stand-in: what ``python -m calibration metrics QRELS RUN -k .. --format json`` prints,
    through ``calibration.run_file.evaluate_run_file`` (streams a grouped run)."""
    import pyarrow as pa

    from annotation.formats.by_extension import read_judgments
    from calibration.audit import coverage_of
    from calibration.commands_text import metrics_json_text
    from calibration.run_file import evaluate_run_file

    parser = argparse.ArgumentParser(prog="bench/run.py --ours")
    parser.add_argument("qrels")
    parser.add_argument("run")
    parser.add_argument("-k", type=int, action="append")
    args = parser.parse_args(argv)
    pa.set_memory_pool(pa.jemalloc_memory_pool())  # as the CLI does
    qrels = read_judgments(args.qrels)
    result = evaluate_run_file(qrels, args.run, args.k)
    for note in result.notes:
        print(f"note: {note}", file=sys.stderr)
    sys.stdout.write(metrics_json_text(result, coverage_of(qrels, result.qids)))
    return 0


def run_rounds(contenders: list[Contender], files: list[tuple[Path, Path]], rounds: int) -> None:
    """Every contender on every (qrels, run), alternating within each round."""
    for r in range(rounds):
        for c, (qrels, run) in [(c, f) for f in files for c in contenders]:
            c.loads.append(os.getloadavg()[0])
            seconds, cpu, peak_kib, stdout = measure(
                [*c.argv, display(str(qrels)), display(str(run))], c.exit_codes
            )
            if c.scores:
                output = c.parse(stdout)
                if c.output and output["mean"] != c.output["mean"]:
                    sys.exit(f"{c.name}: means changed between runs")
                c.output = output
            c.seconds.append(seconds)
            c.cpu.append(cpu)
            c.peak_kib.append(peak_kib)
            print(
                f"round {r + 1}/{rounds} {c.name}: {seconds:.2f} s ({cpu:.2f} s CPU), "
                f"{peak_kib / 1024:.0f} MiB, load {c.loads[-1]:.1f}",
                file=sys.stderr,
            )


def large(args: argparse.Namespace) -> int:
    """Ours on the 10M-line and the 100M-line collection, alternating; the 100M one deleted after."""

    small = ensure_data(args.queries, args.depth, args.judged, args.seed)
    big = ensure_data(args.queries * 10, args.depth, args.judged, args.seed)
    try:
        base = ours_argv()[0].argv
        contenders = [Contender("10M", base), Contender("100M", base)]
        for _ in range(args.rounds):
            for c, files in zip(contenders, (small, big)):
                run_rounds([c], [files], 1)
        lines_small, lines_big = args.queries * args.depth, args.queries * 10 * args.depth
        t_small, t_big = (statistics.median(c.seconds) for c in contenders)
        mib_big = max(contenders[1].peak_kib) / 1024  # the bound holds in every round
        ratio = t_big / t_small
        lines = [
            "# Benchmark --large: ours on 10M and 100M grouped lines",
            "",
            f"- command: `{shlex.join([display(sys.executable), *sys.argv])}`",
            f"- date: {datetime.now(UTC).strftime('%Y-%m-%d %H:%M:%S UTC')}, load average "
            f"{os.getloadavg()[0]:.2f} at the end; ours: `{shlex.join([display(base[0]), *base[1:]])}`",
            "",
            "| file | lines | median wall (s) | runs (s) | median CPU (s) | peak RSS (MiB), runs |",
            "|---|---:|---:|---|---:|---|",
        ]
        for c, n in zip(contenders, (lines_small, lines_big)):
            lines.append(
                f"| {c.name} | {n:,} | {statistics.median(c.seconds):.2f} | "
                + ", ".join(f"{s:.2f}" for s in c.seconds)
                + f" | {statistics.median(c.cpu):.2f} | "
                + ", ".join(f"{k / 1024:.0f}" for k in c.peak_kib)
                + " |"
            )
        checks = [
            (
                f"memory: 100M-line peak {mib_big:.0f} MiB at most (need < {LARGE_MAX_PEAK_MIB:.0f} MiB = 1 GB)",
                mib_big < LARGE_MAX_PEAK_MIB,
            ),
            (
                f"linear: 100M / 10M median wall = {t_big:.2f} / {t_small:.2f} = {ratio:.2f}x "
                f"(need <= {LARGE_RATIO:g}x)",
                ratio <= LARGE_RATIO,
            ),
        ]
        lines += ["", "Acceptance:", ""] + [f"- {'PASS' if ok else 'FAIL'} {text}" for text, ok in checks]
        text = "\n".join(lines) + "\n"
        print(text)
        out = args.out.with_name("large.md") if args.out.name == "latest.md" else args.out
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text)
        return 0 if all(ok for _, ok in checks) else 1
    finally:
        if not args.keep:
            shutil.rmtree(big[1].parent, ignore_errors=True)
            print(f"deleted {display(str(big[1].parent))}", file=sys.stderr)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=10_000)
    parser.add_argument("--depth", type=int, default=1_000)
    parser.add_argument("--judged", type=int, default=20)
    parser.add_argument("--seed", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--out", type=Path, default=BENCH / "results" / "latest.md")
    parser.add_argument("--large", action="store_true", help="10M against 100M lines, ours only")
    parser.add_argument("--keep", action="store_true", help="keep the --large collection")
    if sys.argv[1:2] == ["--ours"]:
        return run_ours(sys.argv[2:])
    args = parser.parse_args()
    if args.large:
        return large(args)

    qrels, run = ensure_data(args.queries, args.depth, args.judged, args.seed)
    py = sys.executable
    contenders = [
        *ours_argv(),
        Contender("pytrec_eval", [py, "bench/peer_pytrec_eval.py"]),
        Contender("ir_measures", [py, "bench/peer_ir_measures.py"]),
        *filter(None, [trec_eval_contender()]),
        *audit_contenders(),
        *holes_contenders(ensure_judge(qrels, run)),
    ]
    run_rounds(contenders, [(qrels, run)], args.rounds)

    ours = contenders[0].output
    if ours["missing_from_run"] or ours["not_in_qrels"]:
        sys.exit(
            f"the run and the qrels do not cover the same queries: {ours['missing_from_run']} "
            f"missing from the run, {ours['not_in_qrels']} not in the qrels"
        )
    pytrec = next(c for c in contenders if c.name == "pytrec_eval").output
    if pytrec["n_queries"] != ours["n_queries"]:
        sys.exit(f"pytrec_eval evaluated {pytrec['n_queries']} queries, ours {ours['n_queries']}")

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
