"""Coverage of the people's pass-rate interval by query against Wilson over independent traces.

:func:`calibration.stats.pass_rate.people_pass_rate` gives a pass rate Wilson's interval at the
effective n = n / design effect by query (the design effect kept at 1 or more; t(G - 1) for z when
some query holds two traces; Korn & Graubard 1998). This bench holds it against the interval the
same function gives without queries (Wilson over the n traces as if independent, the normal
quantile), on traces that come in queries.

Synthetic section: G queries x m traces each; query g's pass probability p_g ~ Beta(a, b) with mean
``mu`` and intra-class correlation ``rho`` (a = mu (1 - rho) / rho, b = (1 - mu) (1 - rho) / rho;
rho = 0: every p_g is mu), each trace passing with its query's p_g. The truth is mu, the mean over
the population of queries. Per cell (design x rho x mu), ``--samples`` samples: the coverage of
both 95% intervals, their median widths, the median of the per-sample width ratio (by query over
Wilson), and the share of samples in which a design effect was read (not read: every trace passes
or every one fails, or one trace a query), with the share of misses above the interval (truth over
its upper end; the rest fell under its lower end).

Real section: ``../shared/data/crowdrag25_webis/raw/study2_pointwise.jsonl.gz`` (CrowdRAG-25's
pointwise study: 410 RAG responses to 29 TREC RAG 2024 queries, 6 to 34 a query, each rated once by
a crowd worker; not described in the data's README, its keys say what they hold). The binary label
is ``correctness_topical`` (+1 / -1): a person's pass/fail on topical correctness, not on
faithfulness (no data set in ``../shared/data`` has a human supported/unsupported label of RAG
answers grouped by query; this is the nearest). Each sample draws G of the 29 queries without
replacement and m responses of each without replacement. Two truths are printed: the mean of the
29 query rates (what a draw of G queries x m answers estimates without bias, so coverage is read
against it) and the all-data rate over the 410 responses (larger queries weigh more in it; coverage
against it is shown beside). The queries are a finite population of 29 and the intervals carry no
finite-population correction, so with G near 29 they are conservative by design. This section is
printed for reading; the acceptance bound is on the synthetic cells only.

    python bench/pass_rate.py [--samples 2000] [--seed 1] [--design 4x4 ...] [--real-design 10x3 ...]
                              [--no-real] [--data ../shared/data/crowdrag25_webis]

(The data folder defaults to $DENOMINATOR_SHARED/data/crowdrag25_webis, else ../shared/data/...; in
a worktree outside /work give ``--data`` or set DENOMINATOR_SHARED.)

Acceptance: the interval by query covers mu in at least 93% of the samples in every synthetic cell
(rho > 0 and rho = 0 alike), at the default samples. Prints wall and CPU time and the load average.
Seeded: the same arguments print the same figures. Exits 1 when the bound is missed.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import sys
import time
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from scipy.stats import binom

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from calibration.stats.pass_rate import people_pass_rate  # noqa: E402

DESIGNS = ("4x4", "5x10", "10x5", "20x3", "30x1", "10x10")
RHOS = (0.0, 0.1, 0.3)
MUS = (0.7, 0.9)
COVERAGE_BOUND = 0.93
REAL_FILE = Path("raw") / "study2_pointwise.jsonl.gz"
REAL_LABEL = "correctness_topical"
REAL_DESIGNS = ("5x4", "10x3", "10x6", "20x3", "20x6")


def shared_data() -> Path:
    """``data/crowdrag25_webis`` of the shared folder ($DENOMINATOR_SHARED, else ../shared)."""
    for candidate in (os.environ.get("DENOMINATOR_SHARED"), ROOT.parent / "shared"):
        if candidate and (Path(candidate) / "data" / "crowdrag25_webis" / REAL_FILE).is_file():
            return Path(candidate) / "data" / "crowdrag25_webis"
    return ROOT.parent / "shared" / "data" / "crowdrag25_webis"


def wilson_exact(n: int, mu: float, alpha: float = 0.05) -> float:
    """Wilson's exact coverage of ``mu`` over ``n`` independent traces (a binomial sum through the
    product's interval without queries)."""
    total = 0.0
    for k in range(n + 1):
        low, high = people_pass_rate([True] * k + [False] * (n - k), alpha=alpha)["ci"]
        if low <= mu <= high:
            total += float(binom.pmf(k, n, mu))
    return total


def parse_design(design: str) -> tuple[int, int]:
    queries, per_query = (int(x) for x in design.lower().split("x"))
    if queries < 1 or per_query < 1:
        raise ValueError(f"design {design!r}: expected GxM with G, M >= 1")
    return queries, per_query


def draw_synthetic(
    rng: np.random.Generator, samples: int, queries: int, per_query: int, mu: float, rho: float
) -> np.ndarray:
    """``samples`` x ``queries`` x ``per_query`` booleans: each query's pass probability from
    Beta(mu, rho) (all mu when rho = 0), each trace a Bernoulli draw at its query's probability."""
    if rho > 0:
        a, b = mu * (1 - rho) / rho, (1 - mu) * (1 - rho) / rho
        p = rng.beta(a, b, size=(samples, queries))
    else:
        p = np.full((samples, queries), mu)
    return rng.random((samples, queries, per_query)) < p[:, :, None]


def score(passes: np.ndarray, truth: float) -> dict[str, Any]:
    """Both intervals of every sample of ``passes`` (samples x G x m) against ``truth``."""
    samples, queries, per_query = passes.shape
    q = np.repeat(np.arange(queries), per_query).tolist()
    cover = {"query": 0, "wilson": 0}
    above = {"query": 0, "wilson": 0}  # misses with the truth over the interval's upper end
    width: dict[str, list[float]] = {"query": [], "wilson": []}
    ratio: list[float] = []
    read = 0
    for s in range(samples):
        y = passes[s].reshape(-1).tolist()
        by_query = people_pass_rate(y, q)
        plain = people_pass_rate(y)
        read += by_query["design_effect"] is not None
        for key, result in (("query", by_query), ("wilson", plain)):
            low, high = result["ci"]
            cover[key] += low <= truth <= high
            above[key] += truth > high
            width[key].append(high - low)
        ratio.append(width["query"][-1] / width["wilson"][-1])
    out: dict[str, Any] = {"read": read / samples, "ratio": float(np.median(ratio))}
    for key in cover:
        misses = samples - cover[key]
        out[f"{key}_coverage"] = cover[key] / samples
        out[f"{key}_width"] = float(np.median(width[key]))
        out[f"{key}_above"] = above[key] / misses if misses else float("nan")
    return out


def share(x: float) -> str:
    return "-" if x != x else f"{x:.0%}"


class RealData:
    """CrowdRAG-25's pointwise study: one binary human label per response, responses by query."""

    def __init__(self, folder: Path, label: str = REAL_LABEL) -> None:
        by_query: dict[str, list[bool]] = defaultdict(list)
        with gzip.open(folder / REAL_FILE, "rt", encoding="utf-8") as handle:
            for line in handle:
                if line.strip():
                    row = json.loads(line)
                    by_query[row["query_id"]].append(row[label] > 0)
        self.label = label
        self.queries = sorted(by_query)
        self.labels = [np.array(by_query[k], dtype=bool) for k in self.queries]
        self.n = sum(len(x) for x in self.labels)
        self.pooled = float(sum(x.sum() for x in self.labels) / self.n)
        self.query_mean = float(np.mean([x.mean() for x in self.labels]))
        self.smallest = min(len(x) for x in self.labels)

    def draw(self, rng: np.random.Generator, samples: int, queries: int, per_query: int) -> np.ndarray:
        """``samples`` x G x m: G queries without replacement, m responses of each without replacement."""
        if queries > len(self.queries) or per_query > self.smallest:
            raise ValueError(
                f"design {queries}x{per_query}: at most {len(self.queries)} queries and "
                f"{self.smallest} responses a query"
            )
        out = np.empty((samples, queries, per_query), dtype=bool)
        for s in range(samples):
            for j, g in enumerate(rng.choice(len(self.queries), size=queries, replace=False)):
                labels = self.labels[g]
                out[s, j] = labels[rng.choice(labels.size, size=per_query, replace=False)]
        return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--samples", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--design", action="append", help=f"GxM (default: {' '.join(DESIGNS)})")
    parser.add_argument("--real-design", action="append", help=f"GxM (default: {' '.join(REAL_DESIGNS)})")
    parser.add_argument("--no-real", action="store_true", help="skip the CrowdRAG-25 section")
    parser.add_argument(
        "--data",
        type=Path,
        default=None,
        help="crowdrag25_webis folder (default: $DENOMINATOR_SHARED, else ../shared)",
    )
    args = parser.parse_args(argv)
    data = args.data or shared_data()
    rng = np.random.default_rng(args.seed)
    failures: list[str] = []
    wall, cpu = time.perf_counter(), time.process_time()
    load_before = os.getloadavg()[0]

    print(
        f"Synthetic: query pass probabilities Beta(mean mu, ICC rho), truth mu; {args.samples} samples a "
        f"cell, seed {args.seed}; 95% intervals of people_pass_rate by query and without queries (Wilson "
        "over independent traces)"
    )
    print(
        "| design | rho | mu | by query: coverage | by query: median width | Wilson: coverage "
        "| Wilson: median width | width ratio (median) | deff read | by query: misses above "
        "| Wilson: misses above |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for design in args.design or DESIGNS:
        queries, per_query = parse_design(design)
        for rho in RHOS:
            for mu in MUS:
                passes = draw_synthetic(rng, args.samples, queries, per_query, mu, rho)
                r = score(passes, mu)
                print(
                    f"| {design} | {rho:g} | {mu:g} | {r['query_coverage']:.1%} | {r['query_width']:.3f} "
                    f"| {r['wilson_coverage']:.1%} | {r['wilson_width']:.3f} | {r['ratio']:.2f}x "
                    f"| {r['read']:.0%} | {share(r['query_above'])} | {share(r['wilson_above'])} |"
                )
                if not r["query_coverage"] >= COVERAGE_BOUND:
                    failures.append(
                        f"{design}, rho {rho:g}, mu {mu:g}: coverage by query {r['query_coverage']:.1%} < "
                        f"{COVERAGE_BOUND:.0%} (short by {COVERAGE_BOUND - r['query_coverage']:.1%})"
                    )
    for design in args.design or DESIGNS:
        queries, per_query = parse_design(design)
        if per_query == 1:
            exact = ", ".join(f"{wilson_exact(queries, mu):.1%} at mu {mu:g}" for mu in MUS)
            print(
                f"({design}: one trace a query, so both intervals are Wilson's at n {queries}, and the traces are "
                f"independent Bernoulli(mu) whatever rho: its exact coverage is {exact})"
            )

    if args.no_real:
        print("\nReal section skipped (--no-real).")
    elif not (data / REAL_FILE).is_file():
        print(f"\nReal section skipped: {data / REAL_FILE} not found.")
    else:
        real = RealData(data)
        print(
            f"\nCrowdRAG-25 pointwise study, {real.label} > 0 as pass: {real.n} responses, "
            f"{len(real.queries)} queries ({real.smallest} or more a query); mean of the query rates "
            f"{real.query_mean:.4f} (coverage read against it), all-data rate {real.pooled:.4f}; "
            f"{args.samples} samples a design, G queries and m responses each drawn without replacement"
        )
        print(
            "| design | by query: coverage | by query: median width | Wilson: coverage | Wilson: median width "
            "| width ratio (median) | deff read | by query: coverage of the all-data rate "
            "| Wilson: coverage of the all-data rate |"
        )
        print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
        for design in args.real_design or REAL_DESIGNS:
            queries, per_query = parse_design(design)
            passes = real.draw(rng, args.samples, queries, per_query)
            r = score(passes, real.query_mean)
            pooled = score(passes, real.pooled)
            print(
                f"| {design} | {r['query_coverage']:.1%} | {r['query_width']:.3f} | {r['wilson_coverage']:.1%} "
                f"| {r['wilson_width']:.3f} | {r['ratio']:.2f}x | {r['read']:.0%} "
                f"| {pooled['query_coverage']:.1%} | {pooled['wilson_coverage']:.1%} |"
            )

    print(
        f"wall {time.perf_counter() - wall:.1f} s, CPU {time.process_time() - cpu:.1f} s, "
        f"load (1 min) {load_before:.2f} before, {os.getloadavg()[0]:.2f} after"
    )
    for failure in failures:
        print(f"MISSED: {failure}")
    print(
        "acceptance: " + (f"MISSED ({len(failures)} cells under {COVERAGE_BOUND:.0%})" if failures else "met")
    )
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
