"""Kappa read after every label (issue #39, item 2): wrong verdicts and decisions under peeking.

On TREC RAG 2025 (``../shared/data/trec_rag_umbrela``: NIST's qrels as the person, UMBRELA-v2's as the
judge, relevant = grade >= 2; 10,284 chunks judged by both, all-topics kappa 0.431), each run puts
400 chunks drawn at random (without replacement) in a random order and reads the verdict after every
label from 30 to 400, stopping at the first decision, at bars of the all-topics kappa -0.15, -0.03,
+0.03 and +0.15. A wrong verdict: "not trusted" below the truth, "trusted" above it. Printed per bar,
for today's fixed-n score interval read at every look (:func:`calibration.stats.kappa_sequence.
score_intervals` with z = 1.96, equal to :func:`calibration.stats.kappa_interval.score_interval`), for
the same interval read once at n = 400, and for the confidence sequence
(:func:`calibration.stats.kappa_sequence.sequence_of_pair`): the share of runs with a wrong verdict, the
share decided by n = 400, and the median n of the first decision. Then ``agree --sequential`` (the
action behind the command) is run on the first runs written as CSVs, and its decisions compared.

    python bench/kappa_sequential.py [--runs 2000] [--seed 1] [--data DIR] [--check-cli 25]

Prints wall and CPU time and the load average. Exits 1 when an acceptance bound is missed.
"""

from __future__ import annotations

import argparse
import csv
import os
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.kappa_design import DATA, RELEVANT, Population  # noqa: E402
from calibration import actions  # noqa: E402
from calibration.stats.kappa_sequence import (  # noqa: E402
    HORIZON,
    multiplier,
    running_tables,
    score_intervals,
)

FIRST, LAST = 30, 400
OFFSETS = (-0.15, -0.03, 0.03, 0.15)
WRONG_BOUND, DECIDED_BOUND = 0.025, 0.40  # every bar; at +-0.15
Z95 = 1.959963984540054
CHUNK = 100  # runs a batch


def first_decisions(low: np.ndarray, high: np.ndarray, bar: float) -> tuple[np.ndarray, np.ndarray]:
    """Per run (rows): the index of the first deciding look (-1: none) and whether it said trusted."""
    decided = (low >= bar) | (high < bar)
    any_ = decided.any(axis=1)
    first = np.where(any_, decided.argmax(axis=1), -1)
    rows = np.arange(len(low))
    trusted = any_ & (low[rows, np.maximum(first, 0)] >= bar)
    return first, trusted


def simulate(population: Population, runs: int, seed: int) -> tuple[dict[str, dict[str, list[float]]], list]:
    rng = np.random.default_rng(seed)
    ns = np.arange(FIRST, LAST + 1)
    z_seq = multiplier(ns, 0.05, HORIZON)
    truth = population.kappa
    bars = [truth + o for o in OFFSETS]
    tally: dict[str, dict[str, list[float]]] = {
        name: {"wrong": [0.0] * 4, "decided": [0.0] * 4, "first": [[] for _ in bars]}  # type: ignore[misc]
        for name in ("fixed, every look", "fixed, n = 400 once", "sequence")
    }
    kept = []  # the first runs' orders and the sequence's decisions, for the CLI check
    done = 0
    while done < runs:
        batch = min(CHUNK, runs - done)
        orders = [rng.choice(len(population.person), LAST, replace=False) for _ in range(batch)]
        tables = np.stack(
            [running_tables(population.person[o], population.judge[o], 2)[FIRST - 1 :] for o in orders]
        ).reshape(-1, 2, 2)
        looks = len(ns)
        intervals = {
            "fixed, every look": score_intervals(tables, np.full(len(tables), Z95)),
            "sequence": score_intervals(tables, np.tile(z_seq, batch)),
        }
        for name, (_k, low, high) in intervals.items():
            low, high = low.reshape(batch, looks), high.reshape(batch, looks)
            missed = ((low > truth) | (high < truth)).any(axis=1)  # NaN (undefined) never misses
            tally[name].setdefault("missed", [0.0])[0] += float(missed.sum())  # type: ignore[index]
            for i, bar in enumerate(bars):
                first, trusted = first_decisions(low, high, bar)
                wrong = (first >= 0) & (trusted != (truth >= bar))
                tally[name]["wrong"][i] += float(wrong.sum())
                tally[name]["decided"][i] += float((first >= 0).sum())
                tally[name]["first"][i] += (ns[first[first >= 0]]).tolist()  # type: ignore[operator]
                if name == "fixed, every look":  # the last look alone: read once at n = 400
                    once, once_trusted = first_decisions(low[:, -1:], high[:, -1:], bar)
                    once_wrong = (once >= 0) & (once_trusted != (truth >= bar))
                    tally["fixed, n = 400 once"]["wrong"][i] += float(once_wrong.sum())
                    tally["fixed, n = 400 once"]["decided"][i] += float((once >= 0).sum())
                    tally["fixed, n = 400 once"]["first"][i] += [LAST] * int((once >= 0).sum())  # type: ignore[operator]
            if name == "sequence" and done == 0:
                for r, order in enumerate(orders):
                    decisions = []
                    for bar in bars:
                        f, t = first_decisions(low[r : r + 1], high[r : r + 1], bar)
                        decisions.append(
                            (None, "undecided")
                            if f[0] < 0
                            else (int(ns[f[0]]), "trusted" if t[0] else "not trusted")
                        )
                    kept.append((order, decisions))
        done += batch
    return tally, kept


def check_cli(population: Population, kept: list, bars: list[float], count: int) -> tuple[int, int]:
    """``agree --sequential``'s decisions on the first ``count`` runs written as CSVs: (agreeing, compared)."""
    same = compared = 0
    with tempfile.TemporaryDirectory() as folder:
        for r, (order, decisions) in enumerate(kept[:count]):
            path = Path(folder) / f"run{r}.csv"
            with path.open("w", newline="") as out:
                writer = csv.writer(out)
                writer.writerow(["item", "rater", "label"])
                for i in order:  # each chunk labelled by both, in the run's order
                    writer.writerow([f"c{i}", "nist", int(population.person[i])])
                    writer.writerow([f"c{i}", "umbrela", int(population.judge[i])])
            for bar, (at, said) in zip(bars, decisions):
                report = actions.agree(path, trusted=bar, sequential=True)
                seq = report["pairs"][0]["sequential"]
                compared += 1
                same += int(seq["decided_at"] == at and (at is None or seq["verdict"] == said))
    return same, compared


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument(
        "--check-cli", type=int, default=25, help="runs written as CSVs for agree --sequential"
    )
    args = parser.parse_args(argv)
    population = Population(args.data)
    truth = population.kappa
    bars = [truth + o for o in OFFSETS]
    print(
        f"TREC RAG 2025, NIST vs UMBRELA-v2, relevant = grade >= {RELEVANT}: {len(population.person)} chunks; "
        f"all-topics kappa {truth:.3f}; {args.runs} runs of {LAST} chunks in random order, seed {args.seed}; "
        f"the verdict read after every label from {FIRST} to {LAST}, first decision kept; "
        f"sequence: horizon {HORIZON}, alpha 0.05"
    )
    load_before = os.getloadavg()[0]
    wall, cpu = time.perf_counter(), time.process_time()
    tally, kept = simulate(population, args.runs, args.seed)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    print("| bar | offset | interval | wrong verdicts | decided by 400 | median n at decision |")
    print("|---:|---:|---|---:|---:|---:|")
    failed = False
    for i, (offset, bar) in enumerate(zip(OFFSETS, bars)):
        for name, t in tally.items():
            wrong, decided = t["wrong"][i] / args.runs, t["decided"][i] / args.runs
            firsts = t["first"][i]
            median = f"{np.median(firsts):.0f}" if firsts else "-"
            print(f"| {bar:.3f} | {offset:+.2f} | {name} | {wrong:.1%} | {decided:.1%} | {median} |")
            if name == "sequence":
                failed |= wrong > WRONG_BOUND
                failed |= abs(offset) >= 0.15 and decided < DECIDED_BOUND
    for name in ("fixed, every look", "sequence"):
        share = tally[name]["missed"][0] / args.runs
        print(
            f"{name}: the truth outside the interval at some look from {FIRST} to {LAST}: {share:.1%} of runs"
        )
    print(
        f"simulation: {wall:.1f} s wall, {cpu:.1f} s CPU; load {load_before:.1f} before, {os.getloadavg()[0]:.1f} after"
    )
    if args.check_cli:
        wall = time.perf_counter()
        same, compared = check_cli(population, kept, bars, args.check_cli)
        print(
            f"agree --sequential on {min(args.check_cli, len(kept))} runs x {len(bars)} bars written as CSVs: "
            f"{same} of {compared} decisions (n and verdict) the same ({time.perf_counter() - wall:.1f} s)"
        )
        failed |= same != compared
    print("acceptance: " + ("MISSED" if failed else "met"))
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
