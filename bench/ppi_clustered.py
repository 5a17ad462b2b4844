"""PPI's interval when labelled items repeat a query (issue #39, item 1): coverage and width.

A simulated pass rate with strong query effects (a superpopulation of queries: query q's pass
probability expit(mu + b_q), b_q ~ N(0, 1.5^2); the judge agrees with the person with probability
expit(1.7 + c_q), c_q ~ N(0, 1), so its accuracy differs from query to query too). Each sample draws
Q queries; each gives m labelled items (person and judge) and ``--unlabeled`` more judged by the judge
alone (the labels a random draw from the query's items, as a review sample is: the labelled and
unlabelled items share their queries). The target is the superpopulation's pass rate ("queries
drawn like these"), computed once from 2,000,000 queries. For each design, ``--samples`` samples
(default 2,000): coverage of the 95% interval and its median width, for PPI++ and the people-only
mean, item-level (today: :func:`calibration.stats.ppi.ppi_mean` without queries) and clustered by
query (with ``clusters_labeled`` / ``clusters_unlabeled``), and the share of samples with a
``weak_note``.

    python bench/ppi_clustered.py [--samples 2000] [--seed 1] [--design 10x8 ...] [--unlabeled 40]

Prints wall time. Seeded: the same arguments print the same figures.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from calibration.stats.ppi import ppi_mean  # noqa: E402

MU, SIGMA_B, ACC, SIGMA_C = -0.3, 1.5, 1.7, 1.0
DESIGNS = ("10x8", "20x4", "5x16", "80x1")


def expit(x: Any) -> Any:
    return 1.0 / (1.0 + np.exp(-x))


def target(seed: int = 12345, draws: int = 2_000_000) -> float:
    """The superpopulation pass rate E[expit(mu + b)], by Monte Carlo (seeded)."""
    rng = np.random.default_rng(seed)
    return float(expit(MU + SIGMA_B * rng.standard_normal(draws)).mean())


def draw(rng: np.random.Generator, queries: int, per_query: int, unlabeled: int) -> dict[str, Any]:
    """One sample: labelled (y, yhat, q) and unlabelled (yhat_u, q_u) items of ``queries`` queries."""
    b = SIGMA_B * rng.standard_normal(queries)
    acc = expit(ACC + SIGMA_C * rng.standard_normal(queries))
    m = per_query + unlabeled
    q = np.repeat(np.arange(queries), m)
    y = (rng.random(q.size) < expit(MU + b[q])).astype(float)
    agree = rng.random(q.size) < acc[q]
    yhat = np.where(agree, y, 1.0 - y)
    labelled = np.tile(np.arange(m) < per_query, queries)
    return {
        "y": y[labelled],
        "yhat": yhat[labelled],
        "q": q[labelled],
        "yhat_u": yhat[~labelled],
        "q_u": q[~labelled],
    }


def run_design(
    design: str, samples: int, rng: np.random.Generator, truth: float, unlabeled: int
) -> dict[str, Any]:
    queries, per_query = (int(x) for x in design.split("x"))
    hits = {k: 0 for k in ("ppi_item", "ppi_query", "people_item", "people_query")}
    widths: dict[str, list[float]] = {k: [] for k in hits}
    weak = 0
    for _ in range(samples):
        s = draw(rng, queries, per_query, unlabeled)
        item = ppi_mean(s["y"], s["yhat"], s["yhat_u"])
        clustered = ppi_mean(
            s["y"], s["yhat"], s["yhat_u"], clusters_labeled=s["q"], clusters_unlabeled=s["q_u"]
        )
        weak += clustered["weak_note"] is not None
        for key, ci in (
            ("ppi_item", item["ci"]),
            ("ppi_query", clustered["ci"]),
            ("people_item", item["human_only"]["ci"]),
            ("people_query", clustered["human_only"]["ci"]),
        ):
            hits[key] += ci[0] <= truth <= ci[1]
            widths[key].append(ci[1] - ci[0])
    return {
        "design": design,
        "coverage": {k: hits[k] / samples for k in hits},
        "median_width": {k: float(np.median(widths[k])) for k in widths},
        "weak_share": weak / samples,
    }


def simulate(
    designs: Sequence[str] = DESIGNS, samples: int = 2000, seed: int = 1, unlabeled: int = 40
) -> tuple[float, list[dict[str, Any]]]:
    truth = target()
    rng = np.random.default_rng(seed)
    return truth, [run_design(d, samples, rng, truth, unlabeled) for d in designs]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--samples", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--unlabeled", type=int, default=40, help="judge-only items per query (default 40)")
    parser.add_argument("--design", nargs="+", default=list(DESIGNS), help="QxM: Q queries, M labelled each")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    truth, rows = simulate(args.design, args.samples, args.seed, args.unlabeled)
    print(
        f"target pass rate {truth:.4f}; {args.samples} samples a design, {args.unlabeled} judge-only items "
        f"per query, seed {args.seed}; 95% intervals: coverage / median width"
    )
    print(
        f"{'design':>7}  {'PPI++ item':>15}  {'PPI++ query':>15}  {'people item':>15}  {'people query':>15}  weak"
    )
    for r in rows:
        cells = "  ".join(
            f"{r['coverage'][k]:>6.1%} / {r['median_width'][k]:.3f}"
            for k in ("ppi_item", "ppi_query", "people_item", "people_query")
        )
        print(f"{r['design']:>7}  {cells}  {r['weak_share']:.1%}")
    print(f"wall {time.perf_counter() - start:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
