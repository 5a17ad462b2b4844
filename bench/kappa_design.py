"""Kappa's interval when labels come in queries (issue #39, item 1): coverage and width by design.

On TREC RAG 2025 (``../shared/data/trec_rag_umbrela``: NIST's qrels as the person, UMBRELA-v2's as
the judge, relevant = grade >= 2; 10,284 chunks judged by both over 22 topics) the target is the
all-topics kappa (0.431). Each design draws Q topics without replacement and m chunks of each
without replacement (``uniform``: 300 chunks drawn uniformly from all 10,284), 3,000 samples a
design, and prints for today's item-level score interval
(:func:`calibration.stats.kappa_interval.kappa_ci`) and the query-clustered one
(:func:`calibration.stats.kappa_clustered.kappa_ci_clustered`): coverage of the all-topics kappa,
median width, the share of samples the clustered one refuses (fewer than 5 queries:
``uncalibrated``) and the median design effect. The method was tuned on 5 x 40 and 10 x 20 (and the
uniform design's width seen); 5 x 60, 10 x 30, 2 x 100 and 3 x 100 were run only after it was fixed.

    python bench/kappa_design.py [--samples 3000] [--seed 1] [--design 5x60 ...] [--data DIR]

Prints wall and CPU time and the load average. Exits 1 when an acceptance bound is missed.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from calibration.stats.kappa import cohen  # noqa: E402
from calibration.stats.kappa_clustered import kappa_ci_clustered  # noqa: E402

DATA = ROOT.parent / "shared" / "data" / "trec_rag_umbrela"
PEOPLE, JUDGE = "qrels.rag25.test.txt", "qrels.rag25.test-umbrela2.txt"
RELEVANT = 2  # grade >= 2 is relevant
DESIGNS = ("2x100", "3x100", "5x40", "10x20", "5x60", "10x30", "uniform300")
TUNED = ("5x40", "10x20")  # the designs the method was chosen on (uniform300's width seen too)
COVERAGE_BOUND = 0.93  # 5 x 60, 10 x 30 and uniform 300
WIDTH_BOUND, WIDTH_AIM = 1.4, 1.15  # uniform 300: the new interval's median width over today's


def read_qrels(path: Path) -> dict[tuple[str, str], int]:
    grades = {}
    with path.open() as lines:
        for line in lines:
            topic, _, doc, grade = line.split()
            grades[(topic, doc)] = int(grade)
    return grades


class Population:
    """The chunks both NIST and UMBRELA judged: person and judge relevance (0/1) and the topic."""

    def __init__(self, folder: Path) -> None:
        people, judge = read_qrels(folder / PEOPLE), read_qrels(folder / JUDGE)
        keys = sorted(set(people) & set(judge))
        self.person = np.array([int(people[k] >= RELEVANT) for k in keys])
        self.judge = np.array([int(judge[k] >= RELEVANT) for k in keys])
        topics = sorted({k[0] for k in keys})
        number = {t: i for i, t in enumerate(topics)}
        self.topic = np.array([number[k[0]] for k in keys])
        self.by_topic = [np.flatnonzero(self.topic == i) for i in range(len(topics))]
        self.kappa = float(cohen(self.person.tolist(), self.judge.tolist())["kappa"])

    def draw(self, rng: np.random.Generator, design: str) -> np.ndarray:
        if design.startswith("uniform"):
            return rng.choice(len(self.person), int(design.removeprefix("uniform")), replace=False)
        queries, per_query = (int(x) for x in design.split("x"))
        topics = rng.choice(len(self.by_topic), queries, replace=False)
        return np.concatenate([rng.choice(self.by_topic[t], per_query, replace=False) for t in topics])


def run_design(population: Population, design: str, samples: int, seed: int) -> dict[str, float]:
    rng = np.random.default_rng(seed)
    truth = population.kappa
    old_cover, old_width, new_cover, new_width, deffs = [], [], [], [], []
    refused = 0
    for _ in range(samples):
        index = population.draw(rng, design)
        result = kappa_ci_clustered(
            population.person[index], population.judge[index], population.topic[index], labels=[0, 1]
        )
        low, high = result.item_level
        if low is not None and high is not None:
            old_cover.append(low <= truth <= high)
            old_width.append(high - low)
        if result.design["design_effect"] is not None:
            deffs.append(result.design["design_effect"])
        if result.low is None or result.high is None:
            refused += 1
            continue
        new_cover.append(result.low <= truth <= result.high)
        new_width.append(result.high - result.low)
    nan = float("nan")
    return {
        "old_coverage": float(np.mean(old_cover)) if old_cover else nan,
        "old_width": float(np.median(old_width)) if old_width else nan,
        "new_coverage": float(np.mean(new_cover)) if new_cover else nan,
        "new_width": float(np.median(new_width)) if new_width else nan,
        "uncalibrated": refused / samples,
        "deff": float(np.median(deffs)) if deffs else nan,
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--samples", type=int, default=3000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--design", action="append", help=f"e.g. 5x60 or uniform300 (default: {' '.join(DESIGNS)})"
    )
    parser.add_argument("--data", type=Path, default=DATA)
    args = parser.parse_args(argv)
    population = Population(args.data)
    print(
        f"TREC RAG 2025, NIST vs UMBRELA-v2, relevant = grade >= {RELEVANT}: {len(population.person)} chunks, "
        f"{len(population.by_topic)} topics; all-topics kappa {population.kappa:.3f}; {args.samples} samples a "
        f"design, seed {args.seed}; tuned on {', '.join(TUNED)}"
    )
    print(
        "| design | today: coverage | today: median width | clustered: coverage | clustered: median width "
        "| width ratio | uncalibrated | median deff | tuned on |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---|")
    failures = []
    wall, cpu = time.perf_counter(), time.process_time()
    load_before = os.getloadavg()[0]
    for design in args.design or DESIGNS:
        r = run_design(population, design, args.samples, args.seed)
        ratio = r["new_width"] / r["old_width"]
        print(
            f"| {design} | {r['old_coverage']:.1%} | {r['old_width']:.3f} | "
            + (
                f"{r['new_coverage']:.1%} | {r['new_width']:.3f} | {ratio:.2f}x"
                if r["uncalibrated"] < 1
                else "- | - | -"
            )
            + f" | {r['uncalibrated']:.0%} | {r['deff']:.2f} | {'yes' if design in TUNED else 'no'} |"
        )
        queries = 300 if design.startswith("uniform") else int(design.split("x")[0])
        if queries < 5 and r["uncalibrated"] < 1:
            failures.append(f"{design}: not uncalibrated in every sample")
        if design in ("5x60", "10x30", "uniform300") and not r["new_coverage"] >= COVERAGE_BOUND:
            failures.append(f"{design}: coverage {r['new_coverage']:.1%} < {COVERAGE_BOUND:.0%}")
        if design == "uniform300":
            if not ratio <= WIDTH_BOUND:
                failures.append(f"{design}: median width {ratio:.2f}x today's > {WIDTH_BOUND}x")
            elif ratio > WIDTH_AIM:
                print(
                    f"  ({design}: {ratio:.2f}x today's width: within the bound {WIDTH_BOUND}x, over the aim {WIDTH_AIM}x)"
                )
    print(
        f"wall {time.perf_counter() - wall:.1f} s, CPU {time.process_time() - cpu:.1f} s, "
        f"load (1 min) {load_before:.2f} before, {os.getloadavg()[0]:.2f} after"
    )
    for failure in failures:
        print(f"MISSED: {failure}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
