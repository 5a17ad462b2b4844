"""Kappa verdicts by design through the product's one path (issue #39, item 1's acceptance).

The sampler and data of ``bench/kappa_design.py`` (TREC RAG 2025, ``../shared/data/trec_rag_umbrela``:
NIST's qrels as the person, UMBRELA-v2's as the judge, relevant = grade >= 2; the all-topics kappa
0.431 is the target): Q topics drawn without replacement and m chunks of each without replacement
(``uniform300``: 300 chunks drawn uniformly, each carrying its topic as its query). Every sample goes
through :func:`calibration.stats.judged.judged_kappa` (the function ``review``, ``agree``, ``check``
and the Holes section give a verdict with), read once (``earlier_looks=0``), at the bar ``--bar``
(default 0.6, the product's). Printed per design: the coverage and median width of the interval the
verdict reads (``ci``) and of the item-level one beside it (``item_level_ci``), the width ratio, the
share of each verdict, and, on the first ``--check`` samples, how many of judged_kappa's intervals
differ from :func:`calibration.stats.kappa_clustered.kappa_ci_clustered`'s (they should not: with
the same seed the samples and figures are ``bench/kappa_design.py``'s).

    python bench/judged_design.py [--samples 3000] [--seed 1] [--design 5x60 ...] [--bar 0.6] [--check 200]

Prints wall and CPU time and the load average. Exits 1 when an acceptance bound is missed.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.kappa_design import DATA, RELEVANT, Population  # noqa: E402
from calibration.stats.judged import judged_kappa  # noqa: E402
from calibration.stats.kappa_clustered import kappa_ci_clustered  # noqa: E402
from calibration.stats.verdict import TRUSTED  # noqa: E402

DESIGNS = ("2x100", "3x100", "5x60", "10x30", "uniform300")
COVERAGE_BOUND = 0.93  # 5 x 60, 10 x 30 and uniform 300
WIDTH_BOUND, WIDTH_AIM = 1.4, 1.15  # uniform 300: judged_kappa's median width over the item-level one's
VERDICTS = ("trusted", "not trusted", "undecided", "uncalibrated", "undefined")


def run_design(
    population: Population, design: str, samples: int, seed: int, *, bar: float = TRUSTED, check: int = 0
) -> dict[str, float]:
    """Coverage, median width and verdict shares of ``samples`` samples of ``design`` through
    judged_kappa; ``mismatches``: of the first ``check`` samples, those whose interval differs from
    kappa_ci_clustered's (by more than 1e-12)."""
    rng = np.random.default_rng(seed)
    truth = population.kappa
    item_cover, item_width, cover, width = [], [], [], []
    verdicts: Counter[str] = Counter()
    mismatches = 0
    for s in range(samples):
        index = population.draw(rng, design)
        people, judge, topic = (
            population.person[index].tolist(),
            population.judge[index].tolist(),
            population.topic[index].tolist(),
        )
        result = judged_kappa(people, judge, topic, labels=[0, 1], weights=None, bar=bar)
        verdicts[result["verdict"]] += 1
        if result["item_level_ci"] is not None:
            low, high = result["item_level_ci"]
            item_cover.append(low <= truth <= high)
            item_width.append(high - low)
        if result["ci"] is not None:
            low, high = result["ci"]
            cover.append(low <= truth <= high)
            width.append(high - low)
        if s < check:
            direct = kappa_ci_clustered(people, judge, topic, labels=[0, 1])
            ours: list[float | None] = list(result["ci"]) if result["ci"] is not None else [None, None]
            same = (direct.low is None and ours[0] is None) or (
                direct.low is not None
                and ours[0] is not None
                and abs(direct.low - ours[0]) <= 1e-12
                and abs(direct.high - ours[1]) <= 1e-12  # type: ignore[operator]
            )
            mismatches += not same
    nan = float("nan")
    out = {
        "item_coverage": float(np.mean(item_cover)) if item_cover else nan,
        "item_width": float(np.median(item_width)) if item_width else nan,
        "coverage": float(np.mean(cover)) if cover else nan,
        "width": float(np.median(width)) if width else nan,
        "checked": float(min(check, samples)),
        "mismatches": float(mismatches),
    }
    for name in VERDICTS:
        out[name] = verdicts[name] / samples
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--samples", type=int, default=3000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--design", action="append", help=f"e.g. 5x60 or uniform300 (default: {' '.join(DESIGNS)})"
    )
    parser.add_argument("--bar", type=float, default=TRUSTED, help=f"the verdict's bar (default {TRUSTED})")
    parser.add_argument("--check", type=int, default=200, help="samples checked against kappa_ci_clustered")
    parser.add_argument("--data", type=Path, default=DATA)
    args = parser.parse_args(argv)
    population = Population(args.data)
    print(
        f"TREC RAG 2025, NIST vs UMBRELA-v2, relevant = grade >= {RELEVANT}: {len(population.person)} chunks, "
        f"{len(population.by_topic)} topics; all-topics kappa {population.kappa:.3f}; {args.samples} samples a "
        f"design, seed {args.seed}; judged_kappa read once (earlier_looks=0), bar {args.bar}"
    )
    print(
        "| design | item-level: coverage | item-level: median width | judged_kappa: coverage "
        "| judged_kappa: median width | width ratio | uncalibrated | trusted | not trusted | undecided "
        "| same as kappa_ci_clustered |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    failures = []
    wall, cpu = time.perf_counter(), time.process_time()
    load_before = os.getloadavg()[0]
    for design in args.design or DESIGNS:
        r = run_design(population, design, args.samples, args.seed, bar=args.bar, check=args.check)
        ratio = r["width"] / r["item_width"]
        calibrated = r["uncalibrated"] < 1
        print(
            f"| {design} | {r['item_coverage']:.1%} | {r['item_width']:.3f} | "
            + (f"{r['coverage']:.1%} | {r['width']:.3f} | {ratio:.2f}x" if calibrated else "- | - | -")
            + f" | {r['uncalibrated']:.1%} | {r['trusted']:.1%} | {r['not trusted']:.1%} | {r['undecided']:.1%}"
            + f" | {r['checked'] - r['mismatches']:.0f} of {r['checked']:.0f} |"
        )
        queries = 300 if design.startswith("uniform") else int(design.split("x")[0])
        if queries < 5 and r["uncalibrated"] < 1:
            failures.append(f"{design}: not uncalibrated in every sample ({r['uncalibrated']:.1%})")
        if queries >= 5 and not r["coverage"] >= COVERAGE_BOUND:
            failures.append(f"{design}: coverage {r['coverage']:.1%} < {COVERAGE_BOUND:.0%}")
        if r["mismatches"]:
            failures.append(f"{design}: {r['mismatches']:.0f} intervals differ from kappa_ci_clustered's")
        if design.startswith("uniform"):
            if not ratio <= WIDTH_BOUND:
                failures.append(f"{design}: median width {ratio:.2f}x the item-level one's > {WIDTH_BOUND}x")
            elif ratio > WIDTH_AIM:
                print(
                    f"  ({design}: {ratio:.2f}x the item-level width: within the bound {WIDTH_BOUND}x, "
                    f"over the aim {WIDTH_AIM}x)"
                )
    print(
        f"wall {time.perf_counter() - wall:.1f} s, CPU {time.process_time() - cpu:.1f} s, "
        f"load (1 min) {load_before:.2f} before, {os.getloadavg()[0]:.2f} after"
    )
    for failure in failures:
        print(f"MISSED: {failure}")
    print("acceptance: " + ("MISSED" if failures else "met"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
