"""Agreement: the vectorized bootstrap CI of kappa against a plain loop over
scikit-learn, and `python -m calibration agree --qrels` end to end.

1. 2,000 resamples of 100,000 items (4 grades, two raters agreeing 70% of the
   time): ``calibration.stats.agreement.bootstrap_ci`` against the loop a careful
   user would write (numpy resampling, ``sklearn.metrics.cohen_kappa_score``
   per resample). The loop is timed on 100 resamples and scaled to 2,000 (the
   full loop takes minutes); the ratio is reported, medians over rounds.
2. Two 10,000-line qrels files, ``python -m calibration agree --qrels A B``
   as a fresh process, wall time, median over rounds.

    python bench/agreement.py [--rounds 3] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
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
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(
        json.dumps(
            {"bootstrap_ours_s": ours, "bootstrap_loop_s": theirs, "ratio": ratio, "agree_qrels_s": walls}
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
