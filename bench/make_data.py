"""Write the seeded synthetic benchmark collection: a TREC run and its qrels.

Default shape (issue #2): 10,000 queries x 1,000 retrieved documents, 20
judgments per query (grades 0-3; about half of them on retrieved documents,
the rest on documents the run missed), scores rounded to 4 decimals so that
tied scores occur and the docno tie-break is exercised.

    python bench/make_data.py OUTDIR [--queries N] [--depth D] [--judged J] [--seed S]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np


def make(outdir: Path, queries: int, depth: int, judged: int, seed: int) -> tuple[Path, Path]:
    rng = np.random.default_rng(seed)
    outdir.mkdir(parents=True, exist_ok=True)
    corpus = 1_000_000
    run_path, qrels_path = outdir / "run.txt", outdir / "qrels.txt"
    with open(run_path, "w") as run, open(qrels_path, "w") as qrels:
        for q in range(queries):
            qid = f"q{q:05d}"
            docs = rng.choice(corpus, size=depth + judged, replace=False)
            retrieved = docs[:depth]
            scores = np.round(np.sort(rng.gamma(2.0, 2.0, size=depth))[::-1], 4)
            # write lines shuffled: trec_eval orders by score, not by line order
            order = rng.permutation(depth)
            run.write("".join(f"{qid} Q0 D{retrieved[i]:07d} {i + 1} {scores[i]:.4f} bench\n" for i in order))
            in_run = rng.choice(retrieved, size=judged // 2, replace=False)
            judged_docs = np.concatenate([in_run, docs[depth : depth + judged - judged // 2]])
            grades = rng.integers(0, 4, size=judged)
            qrels.write("".join(f"{qid} 0 D{d:07d} {g}\n" for d, g in zip(judged_docs, grades)))
    return qrels_path, run_path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("outdir", type=Path)
    parser.add_argument("--queries", type=int, default=10_000)
    parser.add_argument("--depth", type=int, default=1_000)
    parser.add_argument("--judged", type=int, default=20)
    parser.add_argument("--seed", type=int, default=2)
    args = parser.parse_args()
    qrels, run = make(args.outdir, args.queries, args.depth, args.judged, args.seed)
    print(f"wrote {qrels} and {run}")


if __name__ == "__main__":
    main()
