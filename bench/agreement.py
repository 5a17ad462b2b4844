"""Agreement: the vectorized bootstrap CI of kappa against a plain loop over
scikit-learn, and `python -m calibration agree --qrels` end to end.

1. 2,000 resamples of 100,000 items (4 grades, two raters agreeing 70% of the
   time): ``calibration.stats.agreement.bootstrap_ci`` against the loop a careful
   user would write (numpy resampling, ``sklearn.metrics.cohen_kappa_score``
   per resample). The loop is timed on 100 resamples and scaled to 2,000 (the
   full loop takes minutes); the ratio is reported, medians over rounds.
2. Two 10,000-line qrels files, ``python -m calibration agree --qrels A B``
   as a fresh process, wall time, median over rounds.
3. ``python -m calibration agree LABELS.csv --format json`` on 50 raters x 2,000 items (every
   rater every item, random grades 0-3: 100,000 rows, 1,225 pairs of which 200 are listed, 600
   kappa intervals) against the import floor, a fresh interpreter that runs ``import numpy,
   scipy, pyarrow`` (issue #42). One untimed warm-up of each (bytecode written, the file in the
   page cache), then the rounds, the two alternating (the one that goes first alternating too);
   CPU time (user + system, ``os.wait4``) beside wall time, the 1-minute load printed before
   each run. The ratio is agree's median CPU time over the floor's; exit 1 above
   ``MAX_FLOOR_RATIO`` (1.5).

    python bench/agreement.py [--rounds 3] [--out FILE]
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from sklearn.metrics import cohen_kappa_score

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from calibration.stats.agreement import bootstrap_ci  # noqa: E402

MAX_FLOOR_RATIO = 1.5  # agree 50 x 2,000 over the import floor, CPU time (issue #42)
FLOOR = [sys.executable, "-c", "import numpy, scipy, pyarrow"]


def raters(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 4, n)
    b = np.where(rng.random(n) < 0.7, a, rng.integers(0, 4, n))
    return a, b


def loop_ci(a: np.ndarray, b: np.ndarray, resamples: int, seed: int = 0) -> float:
    rng = np.random.default_rng(seed)
    started = time.perf_counter()
    kappas = []
    for _ in range(resamples):
        index = rng.integers(0, len(a), len(a))
        kappas.append(cohen_kappa_score(a[index], b[index]))
    np.percentile(kappas, [2.5, 97.5])
    return time.perf_counter() - started


def qrels_pair(folder: Path, lines: int) -> tuple[Path, Path]:
    rng = np.random.default_rng(1)
    a_path, b_path = folder / "people.qrels", folder / "judge.qrels"
    grades = rng.integers(0, 4, lines)
    other = np.where(rng.random(lines) < 0.6, grades, rng.integers(0, 4, lines))
    with a_path.open("w") as a, b_path.open("w") as b:
        for i in range(lines):
            q, d = f"q{i // 100}", f"d{i}"
            a.write(f"{q} 0 {d} {grades[i]}\n")
            b.write(f"{q} 0 {d} {other[i]}\n")
    return a_path, b_path


def many_raters(path: Path, raters: int = 50, items: int = 2000, seed: int = 1) -> Path:
    """Every rater grades every item 0-3 at random (tests/test_hostile_inputs.py's many_raters)."""
    rng = random.Random(seed)
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["item", "rater", "label"])
        writer.writerows(
            (f"i{i}", f"r{r:04d}", rng.randint(0, 3)) for r in range(raters) for i in range(items)
        )
    return path


def child_run(argv: list[str]) -> tuple[float, float, bytes]:
    """(wall seconds, CPU seconds of the child alone, stdout); bytecode written as a user's is."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    with tempfile.TemporaryFile() as out:
        started = time.perf_counter()
        proc = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=out, stderr=subprocess.DEVNULL)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - started
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode != 0:
            raise SystemExit(f"{' '.join(argv)} exited {proc.returncode}")
        out.seek(0)
        return wall, usage.ru_utime + usage.ru_stime, out.read()


def against_floor(rounds: int) -> dict[str, list[float]]:
    """agree 50 x 2,000 and the import floor, alternating (module docstring, 3)."""
    runs: dict[str, dict[str, list[float]]] = {
        side: {"wall": [], "cpu": [], "load": []} for side in ("agree", "floor")
    }
    with tempfile.TemporaryDirectory() as tmp:
        labels = many_raters(Path(tmp) / "labels.csv")
        argv = {
            "agree": [sys.executable, "-m", "calibration", "agree", str(labels), "--format", "json"],
            "floor": FLOOR,
        }
        for side in argv:  # warm-up: bytecode, page cache
            child_run(argv[side])
        for r in range(rounds):
            for side in ("agree", "floor") if r % 2 == 0 else ("floor", "agree"):
                load = os.getloadavg()[0]
                wall, cpu, out = child_run(argv[side])
                runs[side]["wall"].append(wall)
                runs[side]["cpu"].append(cpu)
                runs[side]["load"].append(load)
        report = json.loads(out if side == "agree" else child_run(argv["agree"])[2])
    cpu = statistics.median(runs["agree"]["cpu"]) / statistics.median(runs["floor"]["cpu"])
    wall = statistics.median(runs["agree"]["wall"]) / statistics.median(runs["floor"]["wall"])
    loads = runs["agree"]["load"] + runs["floor"]["load"]

    def shown(values: list[float]) -> str:
        return ", ".join(f"{v:.2f}" for v in values)

    print(
        f"agree 50 raters x 2,000 items ({len(report['pairs'])} of {report['pairs_possible']:,} pairs listed): "
        f"CPU median {statistics.median(runs['agree']['cpu']):.2f} s ({shown(runs['agree']['cpu'])}), wall "
        f"{statistics.median(runs['agree']['wall']):.2f} s ({shown(runs['agree']['wall'])}); import floor "
        f"(numpy, scipy, pyarrow) CPU {statistics.median(runs['floor']['cpu']):.2f} s ({shown(runs['floor']['cpu'])}), "
        f"wall {statistics.median(runs['floor']['wall']):.2f} s ({shown(runs['floor']['wall'])}); "
        f"ratio CPU {cpu:.2f}x (bound {MAX_FLOOR_RATIO}x), wall {wall:.2f}x; load {min(loads):.2f}-{max(loads):.2f} "
        f"(1 min, before each run)"
    )
    return {
        "agree_cpu_s": runs["agree"]["cpu"],
        "agree_wall_s": runs["agree"]["wall"],
        "floor_cpu_s": runs["floor"]["cpu"],
        "floor_wall_s": runs["floor"]["wall"],
        "load": loads,
        "cpu_ratio": [cpu],
        "wall_ratio": [wall],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", default=str(ROOT / "bench" / "results" / "agreement.json"))
    args = parser.parse_args()
    a, b = raters(100_000)
    ours, theirs = [], []
    for _ in range(args.rounds):
        started = time.perf_counter()
        bootstrap_ci(a, b, n_resamples=2000, seed=0)
        ours.append(time.perf_counter() - started)
        theirs.append(loop_ci(a, b, 100) * 20)
    ratio = statistics.median(theirs) / statistics.median(ours)
    print(
        f"bootstrap CI of kappa, 2,000 resamples x 100,000 items: ours median {statistics.median(ours):.2f} s "
        f"({', '.join(f'{t:.2f}' for t in ours)}); a loop over scikit-learn {statistics.median(theirs):.1f} s "
        f"(100 resamples timed, x20) = {ratio:.0f}x"
    )
    with tempfile.TemporaryDirectory() as tmp:
        people, judge = qrels_pair(Path(tmp), 10_000)
        walls = []
        for _ in range(args.rounds):
            started = time.perf_counter()
            result = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "calibration",
                    "agree",
                    "--qrels",
                    str(people),
                    str(judge),
                    "--format",
                    "json",
                ],
                cwd=ROOT,
                capture_output=True,
                text=True,
            )
            walls.append(time.perf_counter() - started)
            if result.returncode != 0:
                raise SystemExit(result.stderr)
        pair = json.loads(result.stdout)["pairs"][0]
    print(
        f"agree --qrels on two 10,000-line qrels, end to end (interpreter start included): median "
        f"{statistics.median(walls):.2f} s ({', '.join(f'{t:.2f}' for t in walls)}); n = {pair['n']}, "
        f"kappa {pair['kappa']:.3f} [{pair['kappa_ci'][0]:.3f}, {pair['kappa_ci'][1]:.3f}]"
    )
    floor = against_floor(args.rounds)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(
        json.dumps(
            {
                "bootstrap_ours_s": ours,
                "bootstrap_loop_s": theirs,
                "ratio": ratio,
                "agree_qrels_s": walls,
                "agree_against_floor": floor,
            }
        )
    )
    if floor["cpu_ratio"][0] > MAX_FLOOR_RATIO:
        print(
            f"FAIL: agree 50 x 2,000 took {floor['cpu_ratio'][0]:.2f}x the import floor's CPU (bound {MAX_FLOOR_RATIO}x)"
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
