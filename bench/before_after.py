"""Two checkouts on the same commands and files: a change's cost, measured in the same minutes.

    python bench/before_after.py --before REV|PATH [--after REV|PATH] [--rounds R]
                                 [--queries N] [--out FILE]

``--before`` and ``--after`` are each a checkout (a directory holding ``calibration/``) or a
git revision, made into a temporary worktree (``git worktree add --detach``) removed at the
end; ``--after`` defaults to ``.``, the working directory. Each side runs, on bench/run.py's
collection (``bench/make_data.py``, generated once into bench/data/; ``--queries`` x 1,000
lines, 10,000 queries by default):

    python -m calibration metrics QRELS RUN -k 10 -k 100 --format json
    python -m calibration audit QRELS RUN -k 10 --fetch-depth 100 --format json
    python -m calibration check QRELS RUN -k 10 --fetch-depth 100 --no-store --format json

Each run is a fresh interpreter whose working directory is its checkout and whose
``PYTHONPATH`` is that checkout (checked before the rounds: ``calibration`` and ``annotation``
import from it), so imports, parsing and the command all count. One untimed warm-up run per
command and side writes the checkouts' bytecode and reads the files into the page cache. Then
R rounds (5 by default); in every round each command runs once on each side, the two runs
back to back, the side that goes first alternating from command to command and from round to
round (ABBA). Wall time is ``perf_counter`` around the subprocess; CPU time (user + system)
and peak RSS (``ru_maxrss``) are the child's, from ``os.wait4``; the load average (1 min) is
read before every run. A round's ratio is after / before of that round's two runs; the median
of the R ratios is reported with their range.

Acceptance (exit 1 if any fails): for every command, the median of the rounds' CPU-time
ratios after / before <= 1.05 (issue #41: "within 5% of before"). CPU time is the figure held,
not wall time: on a shared machine wall time moves with the load of others (the loads are
printed beside it), CPU time far less. And for every command, the stdout of every run, before
and after, byte-identical (and the same exit code): a refactoring changes no output.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from run import ensure_data  # noqa: E402  (stdlib only: keeps this parent small, see measure)

MAX_CPU_RATIO = 1.05
DEPTH, JUDGED, SEED = 1_000, 20, 2  # bench/run.py's defaults
COMMANDS = {  # name: argv after QRELS RUN; exit codes it may end with
    "metrics": (["-k", "10", "-k", "100", "--format", "json"], (0,)),
    "audit": (["-k", "10", "--fetch-depth", "100", "--format", "json"], (0, 1)),  # 1: a finding
    "check": (["-k", "10", "--fetch-depth", "100", "--no-store", "--format", "json"], (0, 1)),
}
SIDES = ("before", "after")


@dataclass
class Checkout:
    side: str
    path: Path
    label: str  # what was asked for, and the commit


@dataclass
class Runs:
    """One command on one side: a row per timed run."""

    seconds: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)
    peak_kib: list[int] = field(default_factory=list)
    loads: list[float] = field(default_factory=list)
    first: list[bool] = field(default_factory=list)  # ran first of the round's pair
    outputs: dict[str, bytes] = field(default_factory=dict)  # sha256 -> stdout (one of each)
    exit_codes: set[int] = field(default_factory=set)


def git(*args: str, cwd: Path = ROOT) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


@contextmanager
def checkout(side: str, given: str) -> Iterator[Checkout]:
    """``given`` as a checkout: a directory as it is, else a git revision in a temporary worktree
    (removed on the way out)."""
    path = Path(given).resolve()
    if path.is_dir():
        if not (path / "calibration" / "__main__.py").is_file():
            sys.exit(f"--{side} {given}: no calibration/__main__.py there (not a checkout)")
        commit = git("rev-parse", "--short", "HEAD", cwd=path)
        dirty = (
            " + uncommitted changes" if git("status", "--porcelain", "--untracked-files=no", cwd=path) else ""
        )
        yield Checkout(side, path, f"{given} = {path} ({commit}{dirty})")
        return
    try:
        commit = git("rev-parse", "--verify", "--short", f"{given}^{{commit}}")
    except subprocess.CalledProcessError:
        sys.exit(f"--{side} {given}: neither a directory nor a git revision")
    tmp = Path(tempfile.mkdtemp(prefix=f"before-after-{side}-"))
    git("worktree", "add", "--detach", str(tmp / "wt"), commit)
    try:
        yield Checkout(side, tmp / "wt", f"{given} ({commit}, temporary worktree)")
    finally:
        git("worktree", "remove", "--force", str(tmp / "wt"))
        tmp.rmdir()


def child_env(path: Path) -> dict[str, str]:
    """The environment of a run in ``path``: its modules first, whatever the caller's PYTHONPATH."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONSAFEPATH", "PYTHONPATH")}
    env["PYTHONPATH"] = str(path)
    return env


def imports_from(c: Checkout) -> None:
    """Exit unless a child run in ``c`` imports the product's packages from ``c`` (the project is
    installed editable, pointing at one checkout: the wrong one must not be timed)."""
    code = "import annotation, calibration; print(annotation.__file__); print(calibration.__file__)"
    argv = [sys.executable, "-c", code]
    out = subprocess.run(argv, cwd=c.path, env=child_env(c.path), check=True, capture_output=True, text=True)
    for file in out.stdout.split():
        if not Path(file).resolve().is_relative_to(c.path):
            sys.exit(f"{c.side}: {file} imported, not from {c.path}")


def measure(argv: list[str], cwd: Path) -> tuple[float, float, int, int, bytes]:
    """One run: wall seconds, CPU seconds, peak RSS (KiB), exit code and stdout.

    ``os.wait4`` gives the rusage of this one child. Linux carries the forking parent's RSS
    into the child's ru_maxrss across exec, so this script stays small (no numpy), and holds
    one stdout of each kind, not all of them.
    """
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        proc = subprocess.Popen(argv, cwd=cwd, env=child_env(cwd), stdout=out, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - start
        proc.returncode = code = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
        out.seek(0)
        err.seek(0)
        if code not in (0, 1):
            sys.exit(f"{shlex.join(argv)} (in {cwd}) exited {code}:\n{err.read().decode()}")
        return seconds, usage.ru_utime + usage.ru_stime, usage.ru_maxrss, code, out.read()


def run_once(c: Checkout, command: str, files: list[str], runs: Runs | None) -> None:
    """``command`` in ``c``; recorded in ``runs`` unless a warm-up (None)."""
    tail, exit_codes = COMMANDS[command]
    argv = [sys.executable, "-m", "calibration", command, *files, *tail]
    load = os.getloadavg()[0]
    seconds, cpu, peak_kib, code, stdout = measure(argv, c.path)
    if code not in exit_codes:
        sys.exit(f"{c.side} {command}: exit {code}")
    if runs is None:
        print(f"warm-up {c.side} {command}: {seconds:.2f} s", file=sys.stderr)
        return
    runs.seconds.append(seconds)
    runs.cpu.append(cpu)
    runs.peak_kib.append(peak_kib)
    runs.loads.append(load)
    runs.exit_codes.add(code)
    runs.outputs.setdefault(hashlib.sha256(stdout).hexdigest(), stdout)


def rounds(checkouts: dict[str, Checkout], files: list[str], n: int) -> dict[str, dict[str, Runs]]:
    """Every command on both sides, ``n`` times, the first of each pair alternating (ABBA)."""
    seen = {command: {side: Runs() for side in SIDES} for command in COMMANDS}
    for command in COMMANDS:
        for side in SIDES:
            run_once(checkouts[side], command, files, None)
    for r in range(n):
        for i, command in enumerate(COMMANDS):
            order = SIDES if (r + i) % 2 == 0 else SIDES[::-1]
            for side in order:
                runs = seen[command][side]
                run_once(checkouts[side], command, files, runs)
                runs.first.append(side == order[0])
            b, a = seen[command]["before"], seen[command]["after"]
            print(
                f"round {r + 1}/{n} {command}: before {b.seconds[-1]:.2f} s ({b.cpu[-1]:.2f} s CPU), "
                f"after {a.seconds[-1]:.2f} s ({a.cpu[-1]:.2f} s CPU), load {b.loads[-1]:.2f}/{a.loads[-1]:.2f}",
                file=sys.stderr,
            )
    return seen


def same_json(x: bytes, y: bytes) -> bool:
    try:
        return bool(json.loads(x) == json.loads(y))
    except ValueError:
        return False


def first_difference(x: bytes, y: bytes) -> str:
    """Where two outputs part, and whether they are the same JSON (a difference of key order)."""
    at = next((i for i, (p, q) in enumerate(zip(x, y)) if p != q), min(len(x), len(y)))
    what = "the same JSON value (key order or spacing only)" if same_json(x, y) else "different JSON values"
    return (
        f"{len(x):,} against {len(y):,} bytes, first difference at byte {at:,}: {x[at - 30 : at + 50]!r} "
        f"against {y[at - 30 : at + 50]!r}; {what}"
    )


def ratio_range(after: list[float], before: list[float]) -> tuple[float, float, float]:
    ratios = [a / b for a, b in zip(after, before)]
    return statistics.median(ratios), min(ratios), max(ratios)


def report(
    args: argparse.Namespace,
    checkouts: dict[str, Checkout],
    seen: dict[str, dict[str, Runs]],
    files: list[str],
) -> tuple[str, list[str]]:
    loads = [x for sides in seen.values() for runs in sides.values() for x in runs.loads]
    lines = [
        "# Before and after: the same commands from two checkouts",
        "",
        f"- command: `{shlex.join([sys.executable, *sys.argv])}`",
        f"- before: {checkouts['before'].label}",
        f"- after: {checkouts['after'].label}",
        f"- data: {args.queries:,} queries x {DEPTH:,} documents, {JUDGED} judgments per query, seed {SEED} "
        f"(`{files[0]}`, `{Path(files[1]).name}`)",
        f"- {args.rounds} rounds after a warm-up, before and after back to back, the first alternating (ABBA); "
        f"nproc {len(os.sched_getaffinity(0))}, load average (1 min) {min(loads):.2f}-{max(loads):.2f} "
        f"before the runs, {os.getloadavg()[0]:.2f} at the end",
        "",
        "| command | wall after/before, median (range) | CPU after/before, median (range) "
        "| wall (s) before / after | CPU (s) before / after | peak RSS (MiB, max) before / after "
        "| load (1 min) | output |",
        "|---|---:|---:|---:|---:|---:|---|---|",
    ]
    failures = []
    for command, sides in seen.items():
        b, a = sides["before"], sides["after"]
        wall, wall_lo, wall_hi = ratio_range(a.seconds, b.seconds)
        cpu, cpu_lo, cpu_hi = ratio_range(a.cpu, b.cpu)
        outputs = list(b.outputs.values()) + [o for h, o in a.outputs.items() if h not in b.outputs]
        if len(outputs) == 1 and b.exit_codes == a.exit_codes and len(b.exit_codes) == 1:
            output = f"identical ({len(outputs[0]):,} bytes, exit {next(iter(b.exit_codes))})"
        else:
            output = "DIFFERS (below)"
            if len(b.outputs) > 1 or len(a.outputs) > 1:
                failures.append(f"{command}: its stdout changed from run to run on one side")
            if b.outputs.keys() != a.outputs.keys():
                theirs, ours = next(iter(b.outputs.values())), next(iter(a.outputs.values()))
                output = "DIFFERS: " + ("same JSON, other bytes" if same_json(theirs, ours) else "other JSON")
                failures.append(
                    f"{command}: stdout before and after differ: {first_difference(theirs, ours)}"
                )
            if b.exit_codes != a.exit_codes or len(b.exit_codes) > 1:
                failures.append(
                    f"{command}: exit codes {sorted(b.exit_codes)} before, {sorted(a.exit_codes)} after"
                )
        if not cpu <= MAX_CPU_RATIO:
            failures.append(
                f"{command}: CPU time after/before {cpu:.3f}, median of the rounds (need <= {MAX_CPU_RATIO})"
            )
        run_loads = b.loads + a.loads
        lines.append(
            f"| {command} | {wall:.3f} ({wall_lo:.3f}-{wall_hi:.3f}) | {cpu:.3f} ({cpu_lo:.3f}-{cpu_hi:.3f}) "
            f"| {statistics.median(b.seconds):.2f} / {statistics.median(a.seconds):.2f} "
            f"| {statistics.median(b.cpu):.2f} / {statistics.median(a.cpu):.2f} "
            f"| {max(b.peak_kib) / 1024:.0f} / {max(a.peak_kib) / 1024:.0f} "
            f"| {min(run_loads):.2f}-{max(run_loads):.2f} | {output} |"
        )
    lines += ["", "Rounds (s; CPU in parentheses; * ran first; load before each run):", ""]
    lines += ["| command | round | before | after | wall ratio | CPU ratio | load before / after |"]
    lines += ["|---|---:|---:|---:|---:|---:|---|"]
    for command, sides in seen.items():
        b, a = sides["before"], sides["after"]
        for r in range(args.rounds):
            lines.append(
                f"| {command} | {r + 1} "
                f"| {'*' * b.first[r]}{b.seconds[r]:.2f} ({b.cpu[r]:.2f}) "
                f"| {'*' * a.first[r]}{a.seconds[r]:.2f} ({a.cpu[r]:.2f}) "
                f"| {a.seconds[r] / b.seconds[r]:.3f} | {a.cpu[r] / b.cpu[r]:.3f} "
                f"| {b.loads[r]:.2f} / {a.loads[r]:.2f} |"
            )
    checks = [f"median CPU ratio after/before <= {MAX_CPU_RATIO} for every command", "identical stdout"]
    lines += ["", "Acceptance (" + "; ".join(checks) + "):", ""]
    lines += [f"- FAIL {f}" for f in failures] or ["- PASS"]
    return "\n".join(lines) + "\n", failures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", required=True, help="a checkout (directory) or a git revision")
    parser.add_argument("--after", default=".", help="a checkout (directory) or a git revision (default: .)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--queries", type=int, default=10_000)
    parser.add_argument("--out", type=Path, help="also write the report here")
    args = parser.parse_args()
    if args.rounds < 1:
        parser.error("--rounds: at least 1")
    qrels, run = ensure_data(args.queries, DEPTH, JUDGED, SEED)
    files = [str(qrels), str(run)]  # absolute: the same files from both checkouts
    with ExitStack() as stack:
        checkouts = {side: stack.enter_context(checkout(side, getattr(args, side))) for side in SIDES}
        if checkouts["before"].path == checkouts["after"].path:
            print("note: before and after are the same checkout", file=sys.stderr)
        for c in checkouts.values():
            imports_from(c)
        seen = rounds(checkouts, files, args.rounds)
        text, failures = report(args, checkouts, seen, files)
    print(text)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text)
    for failure in failures:
        print(f"FAIL: {failure}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
