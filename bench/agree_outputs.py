"""``python -m calibration agree`` in two checkouts on the same files: the same output (issue #42).

    python bench/agree_outputs.py --before PATH [--after PATH]

Each checkout (a directory holding ``calibration/``; ``--after`` defaults to this one) runs, as a
fresh interpreter with that checkout first on its path, on: 50 raters x 2,000 items with random
grades 0-3 (bench/agreement.py's file), the same with raters who agree with a true grade, the same
with a ``query_id`` (20 items a query: the interval by query), text labels A/B/N on a sparse design
(each of 2,000 items rated by 2-5 of 40 raters, some cells empty), and the worked example's qrels
(``--qrels truth.qrels judge.qrels``); each with ``--format json``, ``--format table`` and
``--sequential --format json``. A JSON output is byte-identical, or else every number within 1e-12
and everything else equal (the kappa intervals are computed as a stack since #42: a sum's order can
move the last bit); a table byte-identical. Exit 1 on any other difference.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import random
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TOLERANCE = 1e-12


def write_labels(
    path: Path, *, seed: int, agree: bool = False, queries: bool = False, text: bool = False
) -> Path:
    rng = random.Random(seed)
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["item", "rater", "label"] + (["query_id"] if queries else []))
        if text:
            rows = []
            for i in range(2000):
                for r in rng.sample(range(40), rng.randint(2, 5)):
                    label = "" if rng.random() < 0.02 else rng.choice("ABN")
                    rows.append([f"i{i}", f"w{r:02d}", label])
            writer.writerows(rows)
            return path
        truth = [rng.randint(0, 3) for _ in range(2000)]
        skill = [rng.uniform(0.3, 0.95) for _ in range(50)]
        for r in range(50):
            for i in range(2000):
                grade = truth[i] if agree and rng.random() < skill[r] else rng.randint(0, 3)
                writer.writerow([f"i{i}", f"r{r:04d}", grade] + ([f"q{i // 20}"] if queries else []))
    return path


def run(checkout: Path, argv: list[str]) -> tuple[int, bytes, bytes]:
    env = {**os.environ, "PYTHONPATH": str(checkout)}
    done = subprocess.run(
        [sys.executable, "-m", "calibration", "agree", *argv], cwd=checkout, env=env, capture_output=True
    )
    return done.returncode, done.stdout, done.stderr


def differences(a: object, b: object, path: str = "") -> list[str]:
    if isinstance(a, dict) and isinstance(b, dict):
        if list(a) != list(b):
            return [f"{path}: keys {list(a)} != {list(b)}"]
        return [d for k in a for d in differences(a[k], b[k], f"{path}.{k}")]
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return [f"{path}: {len(a)} != {len(b)} entries"]
        return [d for i, (x, y) in enumerate(zip(a, b)) for d in differences(x, y, f"{path}[{i}]")]
    if isinstance(a, float) and isinstance(b, float):
        return [] if abs(a - b) <= TOLERANCE else [f"{path}: {a!r} != {b!r}"]
    return [] if type(a) is type(b) and a == b else [f"{path}: {a!r} != {b!r}"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", type=Path, required=True)
    parser.add_argument("--after", type=Path, default=ROOT)
    args = parser.parse_args()
    worked = ROOT / "examples" / "worked-example"
    failed = False
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        inputs = {
            "random 50 x 2,000": [str(write_labels(folder / "random.csv", seed=1))],
            "agreeing 50 x 2,000": [str(write_labels(folder / "agreeing.csv", seed=2, agree=True))],
            "by query 50 x 2,000": [
                str(write_labels(folder / "queries.csv", seed=3, agree=True, queries=True))
            ],
            "text, sparse": [str(write_labels(folder / "text.csv", seed=4, text=True))],
            "worked example qrels": ["--qrels", str(worked / "truth.qrels"), str(worked / "judge.qrels")],
        }
        for name, files in inputs.items():
            for tail in (["--format", "json"], ["--format", "table"], ["--sequential", "--format", "json"]):
                before, after = run(args.before, files + tail), run(args.after, files + tail)
                what = f"{name}, {' '.join(tail)}"
                if before == after:
                    print(f"{what}: byte-identical (exit {after[0]}, {len(after[1]):,} bytes)")
                    continue
                found = (
                    ["exit codes or stderr differ"] if before[0] != after[0] or before[2] != after[2] else []
                )
                if not found and "json" in tail:
                    found = differences(json.loads(before[1]), json.loads(after[1]))
                    if not found:
                        print(f"{what}: equal to {TOLERANCE:g} (numbers only; not byte-identical)")
                        continue
                found = found or ["the text differs"]
                failed = True
                print(f"{what}: DIFFERS: {'; '.join(found[:3])}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
