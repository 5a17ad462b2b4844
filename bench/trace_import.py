"""Import 10,000 OpenInference traces (`python -m annotation import --traces FILE --from openinference`).

The file is a synthetic Phoenix spans dataframe (bench/synthetic_traces.py, synthetic_openinference:
4 spans and 13 ranked documents per trace, two systems), written as Parquet and as JSON lines;
each is imported end to end as a fresh process into a fresh database, then again into the same
database (nothing changes). Medians over rounds.

    python bench/trace_import.py [--traces 10000] [--rounds 3] [--out FILE]
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

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.synthetic_traces import synthetic_openinference  # noqa: E402


def run(db: Path, path: Path) -> tuple[float, str]:
    started = time.perf_counter()
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "annotation",
            "import",
            "--db",
            str(db),
            "--traces",
            str(path),
            "--from",
            "openinference",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    if result.returncode != 0:
        raise SystemExit(result.stderr)
    return time.perf_counter() - started, result.stdout.splitlines()[0]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--traces", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", default=str(ROOT / "bench" / "results" / "trace_import.json"))
    args = parser.parse_args()
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for form, name in (("parquet", "spans.parquet"), ("jsonl", "spans.jsonl")):
            path = folder / name
            synthetic_openinference(args.traces, path, form=form)
            first, again, line = [], [], ""
            for round_ in range(args.rounds):
                db = folder / f"{form}-{round_}.db"
                seconds, line = run(db, path)
                first.append(seconds)
                again.append(run(db, path)[0])
            results[form] = {"first": first, "again": again}
            size = path.stat().st_size / 1e6
            print(
                f"{args.traces:,} OpenInference traces ({form}, {size:.1f} MB), end to end: median "
                f"{statistics.median(first):.2f} s ({', '.join(f'{t:.2f}' for t in first)}); "
                f"again into the same db (nothing changes): {statistics.median(again):.2f} s\n  {line}"
            )
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
