"""What the estimate of missed relevant chunks costs: ``python -m calibration audit --estimate``
against the same audit without it, end to end, as fresh processes.

A seeded synthetic golden.yaml with a sampling section, as ``pool --estimate`` and
``export --format golden`` write it: Q queries (default 500), each with a judged pool of
20 chunks and a sample of 60 unjudged candidates over four strata (ranks 21-50: 30
candidates, 8 sampled; 51-100: 50, 10; 101-1000: 900, 16; a corpus stratum of 100,000
chunks, 26 sampled), relevance thinning with depth; a run with each query's top 100.
Both commands read the same files; the ratio of their median wall times is the cost of
the estimate (per query: the stratified mid-p intervals, exact convolutions of the strata's
distributions, for |Rel| and for recall@10).

    python bench/estimate.py [--queries 500] [--rounds 3] [--out FILE]
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
import yaml

ROOT = Path(__file__).resolve().parents[1]
STRATA = (("21-50", 30, 8, 0.15), ("51-100", 50, 10, 0.06), ("101-1000", 900, 16, 0.01))
CORPUS, CORPUS_SAMPLED, CORPUS_RATE = 100_000, 26, 0.0002


def write_files(folder: Path, queries: int, seed: int = 0) -> tuple[Path, Path]:
    rng = np.random.default_rng(seed)
    golden_queries, sampling, runs = [], {}, []
    for q in range(queries):
        qid = f"q{q}"
        grades = {f"{qid}-p{i}": int(rng.choice([0, 1, 2, 3], p=[0.5, 0.2, 0.2, 0.1])) for i in range(20)}
        strata = {}
        ranking = [f"{qid}-p{i}" for i in range(20)]
        for name, size, sampled, rate in STRATA:
            members = [f"{qid}-{name}-{i}" for i in range(size)]
            if name != "101-1000":
                ranking += members
            drawn = rng.choice(size, sampled, replace=False)
            strata[name] = {"size": size, "sampled": [members[i] for i in drawn]}
            for i in drawn:
                grades[members[i]] = int(rng.random() < rate) * int(rng.integers(1, 4))
        drawn = rng.choice(CORPUS, CORPUS_SAMPLED, replace=False)
        corpus = f"corpus (beyond {STRATA[-1][0].split('-')[1]})"
        strata[corpus] = {"size": CORPUS, "sampled": [f"c{i}" for i in drawn]}
        for i in drawn:
            grades[f"c{i}"] = int(rng.random() < CORPUS_RATE) * 2
        golden_queries.append({"id": qid, "text": f"query {q}", "grades": grades})
        sampling[qid] = strata
        runs.append({"query_id": qid, "ranking": ranking[:100]})
    golden = folder / "golden.yaml"
    doc = {
        "name": "bench-estimate",
        "judged_by": ["bench"],
        "sampling": {
            "method": "stratified simple random samples of unjudged candidates, without replacement",
            "design": {
                "depth": 20,
                "strata": [50, 100, 1000],
                "corpus": True,
                "runs": ["bench"],
                "seed": seed,
            },
            "queries": sampling,
        },
        "queries": golden_queries,
    }
    golden.write_text(yaml.safe_dump(doc, sort_keys=False))
    run = folder / "run.jsonl"
    run.write_text("".join(json.dumps(r) + "\n" for r in runs))
    return golden, run


def wall(cmd: list[str]) -> float:
    started = time.perf_counter()
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} exited {done.returncode}: {done.stderr.strip()[-300:]}")
    return elapsed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--queries", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", type=Path, default=None, help="also write the figures as JSON here")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        golden, run = write_files(Path(tmp), args.queries)
        base = [
            sys.executable,
            "-m",
            "calibration",
            "audit",
            str(golden),
            str(run),
            "-k",
            "10",
            "--format",
            "json",
        ]
        plain, estimate = [], []
        for _ in range(args.rounds):  # alternate, so that noise on the shared machine falls on both
            plain.append(wall(base))
            estimate.append(wall([*base, "--estimate"]))
        report = json.loads(
            subprocess.run([*base, "--estimate"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
        )
    summary = report["estimate"]["summary"]
    p, e = statistics.median(plain), statistics.median(estimate)
    figures = {
        "queries": args.queries,
        "rounds": args.rounds,
        "audit_s": p,
        "audit_estimate_s": e,
        "ratio": e / p,
        "estimate_ms_per_query": 1000 * (e - p) / args.queries,
        "n_sampled": summary["n_sampled"],
        "n_defined": summary["n_defined"],
    }
    print(
        f"audit of {args.queries} queries at k=10: median {p:.2f} s; with --estimate (|Rel| and recall@10 "
        f"with 95% intervals over 4 strata, {summary['n_sampled']} sampled labels): median {e:.2f} s, "
        f"{e / p:.1f}x, {figures['estimate_ms_per_query']:.0f} ms per query; {args.rounds} rounds"
    )
    if args.out:
        args.out.write_text(json.dumps(figures, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
