"""Benchmark peer: pytrec_eval, parse + evaluate, means as JSON on stdout.

    python bench/peer_pytrec_eval.py QRELS RUN

The same measures as ``python -m calibration metrics QRELS RUN -k 10 -k 100``,
printed under the calibration CLI's names. trec_eval's conventions: every
query of the run that has judgments is averaged in (0 where undefined).
"""

from __future__ import annotations

import json
import sys

import pytrec_eval

MEASURES = {"P.10,100", "recall.10,100", "recip_rank", "ndcg_cut.10,100", "map", "success.10,100"}
NAMES = {
    "P_10": "P@10",
    "P_100": "P@100",
    "recall_10": "R@10",
    "recall_100": "R@100",
    "recip_rank": "MRR",
    "ndcg_cut_10": "nDCG@10",
    "ndcg_cut_100": "nDCG@100",
    "map": "MAP",
    "success_10": "Success@10",
    "success_100": "Success@100",
}


def main(qrels_path: str, run_path: str) -> None:
    with open(qrels_path) as f:
        qrels = pytrec_eval.parse_qrel(f)
    with open(run_path) as f:
        run = pytrec_eval.parse_run(f)
    per_query = pytrec_eval.RelevanceEvaluator(qrels, MEASURES).evaluate(run)
    n = len(per_query)
    mean = {ours: sum(row[theirs] for row in per_query.values()) / n for theirs, ours in NAMES.items()}
    json.dump({"n_queries": n, "mean": mean}, sys.stdout)
    print()


if __name__ == "__main__":
    main(*sys.argv[1:3])
