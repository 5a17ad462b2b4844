"""``calibration plan``'s predicted interval width against the realised one (issue #39, item 5).

On TREC RAG 2025 (``../shared/data/trec_rag_umbrela``: NIST's qrels as the person, UMBRELA-v2's as
the judge, relevant = grade >= 2), the sampler of ``bench/kappa_design.py``: Q topics drawn without
replacement, m chunks of each without replacement. For each pilot seed a pilot (default 5 topics x
20 chunks) is drawn and :func:`calibration.stats.plan.plan` predicts the median width of
``kappa_ci_clustered``'s interval for each design; the realised median width is that of
``--samples`` samples of the design (seed ``--seed``, as ``bench/kappa_design.py`` draws them).
Printed per design: the realised median width, the prediction from the whole population as the
pilot (the model's own error, without the pilot's), and over the pilots the median prediction, the
median and quartiles of predicted / realised, and the share of pilots within 15%.

    python bench/plan.py [--pilot 5x20] [--pilots 20] [--samples 2000] [--seed 1] [--design 5x60 ...]

Exits 1 when the median pilot's prediction is off by more than 15% for a design.
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
sys.path.insert(0, str(ROOT / "bench"))

from kappa_design import DATA, RELEVANT, Population, run_design  # noqa: E402

from annotation.values import parse_designs  # noqa: E402
from calibration.stats.plan import plan  # noqa: E402

DESIGNS = ("5x60", "10x30", "20x15")
BOUND = 0.15  # |predicted / realised - 1|, the median pilot's, each design


def predicted(
    population: Population, index: np.ndarray, designs: list[tuple[int, int]], estimator: str = "median"
) -> list[float]:
    result = plan(
        population.person[index].tolist(),
        population.judge[index].tolist(),
        population.topic[index].tolist(),
        designs,
        bar=0.6,
        labels=[0, 1],
        icc_estimator=estimator,
    )
    return [d["width"] for d in result["designs"]]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--pilot", default="5x20", help="the pilot's design QxM (default 5x20)")
    parser.add_argument("--pilots", type=int, default=20, help="pilot seeds (default 20)")
    parser.add_argument("--samples", type=int, default=2000, help="samples a design (default 2000)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--design", action="append", help=f"e.g. 5x60 (default: {' '.join(DESIGNS)})")
    parser.add_argument(
        "--icc", choices=("median", "anova"), default="median", help="the ICC's estimator (default median)"
    )
    parser.add_argument("--data", type=Path, default=DATA)
    args = parser.parse_args(argv)
    names = args.design or list(DESIGNS)
    designs = parse_designs(",".join(names))
    population = Population(args.data)
    wall, cpu, load = time.perf_counter(), time.process_time(), os.getloadavg()[0]
    whole = predicted(population, np.arange(len(population.person)), designs, args.icc)
    pilots = []
    for seed in range(args.pilots):
        index = population.draw(np.random.default_rng(1000 + seed), args.pilot)
        pilots.append(predicted(population, index, designs, args.icc))
    per_pilot = np.array(pilots)  # pilots x designs
    print(
        f"TREC RAG 2025, NIST vs UMBRELA-v2, relevant = grade >= {RELEVANT}: {len(population.person)} chunks, "
        f"{len(population.by_topic)} topics; all-topics kappa {population.kappa:.3f}; pilots {args.pilots} x "
        f"{args.pilot} (seeds 1000-{1000 + args.pilots - 1}), ICC {args.icc}; realised: {args.samples} samples a design, seed {args.seed}"
    )
    print(
        "| design | realised median width | predicted (whole population as pilot) | ratio | "
        "predicted (median pilot) | ratio (median pilot) | ratio quartiles | pilots within 15% |"
    )
    print("|---|---:|---:|---:|---:|---:|---|---:|")
    failures = []
    for j, name in enumerate(names):
        realised = run_design(population, name, args.samples, args.seed)["new_width"]
        ratios = per_pilot[:, j] / realised
        q1, med, q3 = np.quantile(ratios, [0.25, 0.5, 0.75])
        within = float(np.mean(np.abs(ratios - 1) <= BOUND))
        print(
            f"| {name} | {realised:.3f} | {whole[j]:.3f} | {whole[j] / realised:.2f} | "
            f"{np.median(per_pilot[:, j]):.3f} | {med:.2f} | {q1:.2f}-{q3:.2f} | {within:.0%} |"
        )
        if abs(med - 1) > BOUND:
            failures.append(f"{name}: the median pilot's prediction is {med:.2f}x the realised width")
    print(
        f"wall {time.perf_counter() - wall:.1f} s, CPU {time.process_time() - cpu:.1f} s, "
        f"load (1 min) {load:.2f} before, {os.getloadavg()[0]:.2f} after"
    )
    for failure in failures:
        print(f"MISSED: {failure}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
