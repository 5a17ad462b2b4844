"""Benchmark peer: ir_measures, read + calc_aggregate, means as JSON on stdout.

    python bench/peer_ir_measures.py QRELS RUN

The same measures as ``python -m calibration metrics QRELS RUN -k 10 -k 100``,
printed under the calibration CLI's names (ir_measures picks its provider,
pytrec_eval for all of these, and averages every query in).
"""

from __future__ import annotations

import json
import sys

import ir_measures
from ir_measures import AP, RR, P, R, Success, nDCG

MEASURES = [P @ 10, P @ 100, R @ 10, R @ 100, RR, nDCG @ 10, nDCG @ 100, AP, Success @ 10, Success @ 100]
RENAME = {"RR": "MRR", "AP": "MAP"}


def main(qrels_path: str, run_path: str) -> None:
    qrels = ir_measures.read_trec_qrels(qrels_path)
    run = ir_measures.read_trec_run(run_path)
    means = ir_measures.calc_aggregate(MEASURES, qrels, run)
    mean = {RENAME.get(str(m), str(m)): float(v) for m, v in means.items()}
    json.dump({"mean": mean}, sys.stdout)
    print()


if __name__ == "__main__":
    main(*sys.argv[1:3])
