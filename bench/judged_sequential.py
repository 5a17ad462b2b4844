"""Verdicts read while people label whole queries (issue #39, item 2 with item 1): wrong verdicts under
clustered peeking, through :func:`calibration.stats.judged.judged_kappa`'s arithmetic.

On TREC RAG 2025 (``../shared/data/trec_rag_umbrela``: NIST's qrels as the person, UMBRELA-v2's as the
judge, relevant = grade >= 2; all-topics kappa 0.431, the target), each run has people label whole
queries in turn: topics in random order (``--topics without``: without replacement, at most 22;
``with``: with replacement, a topic drawn again brings m fresh chunks of it under a new query id), the
``--per-query`` m chunks of each in random order. The verdict is read after every completed query
(``--every query``) or after every label (``--every label``) from n = 30 to 400 (or 22 m when the topics
run out), stopping at the first decision, at bars of the all-topics kappa -0.15, -0.03, +0.03, +0.15.
A wrong verdict: "not trusted" with the truth at or above the bar, "trusted" with it below.

Four readings of the same runs, each what ``judged_kappa(people, judge, queries, labels=[0, 1],
weights=None, bar=...)`` returns on the labels so far:

- ``sequence, by query``: ``earlier_looks=1`` at every look after the first (0 at the first): the
  confidence sequence read at the clustered effective n = n / deff (z / t)^2;
- ``fixed, by query, every look``: ``earlier_looks=0`` at every look (the fixed clustered interval);
- ``fixed, by query, once``: the fixed clustered interval read once, at the last look;
- ``sequence, no queries``: ``queries=None`` (the labels' queries not carried), ``earlier_looks=1``
  after the first look: the item-level sequence, which counts each label as one draw.

Below 5 queries judged_kappa gives ``uncalibrated``, which decides nothing. judged_kappa takes 3-8 ms a
call, so the bench re-implements its arithmetic vectorised over runs and looks (the query jackknife's
design effect, t(Q - 1), n*, :func:`calibration.stats.kappa_sequence.score_intervals` at z or c_n*) and
checks it against judged_kappa itself on ``--check`` looks (every look of the first runs with
``--every query``, randomly drawn looks with ``--every label``): the intervals' largest difference and
the verdicts at the four bars must agree. A look where leaving a query out leaves kappa undefined (the
linearised variance) is computed by judged_kappa itself.

    python bench/judged_sequential.py [--runs 1000] [--per-query 20] [--topics without|with]
        [--every query|label] [--seed 1] [--check 300] [--data DIR]

Prints wall and CPU time and the load average. Exits 1 when an acceptance bound is missed (wrong
verdicts <= 2.5% at every bar, decided by the last look in >= 40% of runs at +-0.15, for the sequence
by query) or the check finds a difference.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from statistics import NormalDist
from typing import Any

import numpy as np
from scipy.special import stdtrit

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.kappa_design import DATA, RELEVANT, Population  # noqa: E402
from calibration.stats.judged import JudgedKappa, judged_kappa  # noqa: E402
from calibration.stats.kappa import disagreement_weights  # noqa: E402
from calibration.stats.kappa_clustered import MIN_QUERIES  # noqa: E402
from calibration.stats.kappa_interval import MIN_ITEMS, kappa_and_variance  # noqa: E402
from calibration.stats.kappa_sequence import HORIZON, multiplier, score_intervals  # noqa: E402

FIRST, LAST = 30, 400
OFFSETS = (-0.15, -0.03, 0.03, 0.15)
WRONG_BOUND, DECIDED_BOUND = 0.025, 0.40  # every bar; at +-0.15
ALPHA = 0.05
Z = NormalDist().inv_cdf(1 - ALPHA / 2)
READINGS = (
    "sequence, by query",
    "fixed, by query, every look",
    "fixed, by query, once",
    "sequence, no queries",
)
TOLERANCE = 1e-6  # judged_kappa's fixed interval is found by Brent's method, score_intervals by bisection
BATCH = 50  # runs a batch


def draw_run(
    population: Population, rng: np.random.Generator, per_query: int, queries: int, replace: bool
) -> np.ndarray:
    """The chunks of one run in labelling order: ``queries`` topics in random order, ``per_query``
    chunks of each in random order (a topic drawn again: its next chunks)."""
    topics = rng.choice(len(population.by_topic), queries, replace=replace)
    shuffled: dict[int, np.ndarray] = {}
    used: dict[int, int] = {}
    parts = []
    for t in topics.tolist():
        if t not in shuffled:
            shuffled[t] = rng.permutation(population.by_topic[t])
        k = used.get(t, 0)
        used[t] = k + 1
        parts.append(shuffled[t][k * per_query : (k + 1) * per_query])
    return np.concatenate(parts)


def looks_of(per_query: int, last: int, every: str) -> np.ndarray:
    if every == "label":
        return np.arange(FIRST, last + 1)
    ns = np.arange(per_query, last + 1, per_query)
    return ns[ns >= FIRST]


def readings(
    person: np.ndarray, judge: np.ndarray, per_query: int, ns: np.ndarray
) -> tuple[dict[str, tuple[np.ndarray, np.ndarray]], np.ndarray, np.ndarray]:
    """judged_kappa's intervals, vectorised: for runs (rows of ``person``, ``judge``, labelling order,
    query j the items j m .. (j + 1) m - 1) at looks ``ns``: {reading: (low, high)} (runs x looks, NaN
    where judged_kappa gives no interval: uncalibrated or undefined), the kappa, and the looks
    (run, look) to compute by judged_kappa itself (a query left out leaves kappa undefined)."""
    runs, items = person.shape
    d = disagreement_weights(2, None)
    cells = np.zeros((runs, items + 1, 4))
    np.put_along_axis(cells[:, 1:], (2 * person + judge)[..., None], 1.0, axis=2)
    cumulative = np.cumsum(cells, axis=1)  # runs x (items + 1) x 4: counts of the first i items
    queries = -(-items // per_query)
    starts = np.arange(queries) * per_query
    high_at = np.minimum(ns[:, None], starts[None, :] + per_query)
    low_at = np.minimum(ns[:, None], starts[None, :])
    tables = cumulative[:, high_at] - cumulative[:, low_at]  # runs x looks x queries x 4
    present = (starts[None, :] < ns[:, None])[None, :, :]  # looks x queries (broadcast over runs)
    q = present.sum(axis=2)[0].astype(float)  # queries per look
    n = ns.astype(float)
    pooled = cumulative[:, ns]  # runs x looks x 4
    kappa, v = kappa_and_variance((pooled / n[None, :, None]).reshape(runs, len(ns), 2, 2), d)
    v_item = v / n[None, :]
    left = pooled[:, :, None, :] - tables
    size = left.sum(axis=3)
    with np.errstate(invalid="ignore", divide="ignore"):
        loo, _ = kappa_and_variance((left / size[..., None]).reshape(runs, len(ns), queries, 2, 2), d)
    loo = np.where(present, loo, 0.0)
    bad = (present & ~np.isfinite(loo)).any(axis=2) | (present & (size <= 0)).any(axis=2)
    loo = np.where(np.isfinite(loo), loo, 0.0)
    mean = loo.sum(axis=2) / q[None, :]
    spread = (np.where(present, (loo - mean[..., None]) ** 2, 0.0)).sum(axis=2)
    v_jack = (q - 1) / np.maximum(q, 1) * spread
    with np.errstate(invalid="ignore", divide="ignore"):
        deff = np.maximum(np.where((v_item > 0) & (v_jack > 0), v_jack / v_item, 1.0), 1.0)  # kept at 1
        t = stdtrit(np.maximum(q - 1, 1), 1 - ALPHA / 2)
        effective = n[None, :] / deff * (Z / t[None, :]) ** 2
    gate = (q[None, :] >= MIN_QUERIES) & np.isfinite(kappa) & (n[None, :] >= MIN_ITEMS)
    slow = gate & bad
    gate &= ~bad
    out: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    flat = pooled.reshape(-1, 2, 2)
    for name, sequential in (("fixed", False), ("sequence", True)):
        low, high = np.full(kappa.shape, np.nan), np.full(kappa.shape, np.nan)
        wide = gate & (effective < MIN_ITEMS)
        low[wide], high[wide] = -1.0, 1.0
        ok = (gate & ~wide).reshape(-1)
        if ok.any():
            eff = effective.reshape(-1)[ok]
            scaled = flat[ok] * (eff / np.broadcast_to(n, kappa.shape).reshape(-1)[ok])[:, None, None]
            crit = multiplier(eff, ALPHA, HORIZON) if sequential else np.full(len(eff), Z)
            _, lo, hi = score_intervals(scaled, crit)
            low.reshape(-1)[ok], high.reshape(-1)[ok] = lo, hi
        out[name] = (low, high)
    # no queries carried: the item-level sequence (no query gate; undefined kappa gives no interval)
    crit = np.broadcast_to(multiplier(n, ALPHA, HORIZON), kappa.shape).reshape(-1)
    _, lo, hi = score_intervals(flat, crit)
    out["items"] = (lo.reshape(kappa.shape), hi.reshape(kappa.shape))
    _, lo0, hi0 = score_intervals(flat.reshape(runs, len(ns), 2, 2)[:, 0], np.full(runs, Z))
    out["items_first"] = (lo0, hi0)
    return out, kappa, slow


def by_judged_kappa(
    person: np.ndarray,
    judge: np.ndarray,
    per_query: int,
    n: int,
    *,
    earlier: int,
    queries: bool,
    bar: float = 0.6,
) -> JudgedKappa:
    qids = (np.arange(n) // per_query).tolist() if queries else None
    return judged_kappa(
        person[:n].tolist(),
        judge[:n].tolist(),
        qids,
        labels=[0, 1],
        weights=None,
        bar=bar,
        earlier_looks=earlier,
    )


def assemble(
    parts: dict[str, tuple[np.ndarray, np.ndarray]],
) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """The four readings (module docstring) from the vectorised intervals: the first look of a
    sequence reading is read with earlier_looks=0 (the fixed interval)."""
    seq_low, seq_high = parts["sequence"][0].copy(), parts["sequence"][1].copy()
    seq_low[:, 0], seq_high[:, 0] = parts["fixed"][0][:, 0], parts["fixed"][1][:, 0]
    item_low, item_high = parts["items"][0].copy(), parts["items"][1].copy()
    item_low[:, 0], item_high[:, 0] = parts["items_first"]
    fixed_low, fixed_high = parts["fixed"]
    once_low, once_high = np.full_like(fixed_low, np.nan), np.full_like(fixed_high, np.nan)
    once_low[:, -1], once_high[:, -1] = fixed_low[:, -1], fixed_high[:, -1]
    return {
        "sequence, by query": (seq_low, seq_high),
        "fixed, by query, every look": (fixed_low, fixed_high),
        "fixed, by query, once": (once_low, once_high),
        "sequence, no queries": (item_low, item_high),
    }


def first_decisions(low: np.ndarray, high: np.ndarray, bar: float) -> tuple[np.ndarray, np.ndarray]:
    """Per run: the index of the first deciding look (-1: none) and whether it said trusted (NaN never decides)."""
    with np.errstate(invalid="ignore"):
        decided = (low >= bar) | (high < bar)
    any_ = decided.any(axis=1)
    first = np.where(any_, decided.argmax(axis=1), -1)
    trusted = any_ & (low[np.arange(len(low)), np.maximum(first, 0)] >= bar)
    return first, trusted


def verdict_of(low: float, high: float, bar: float) -> str:
    if np.isnan(low):
        return "none"
    return "trusted" if low >= bar else "not trusted" if high < bar else "undecided"


def check(
    person: np.ndarray,
    judge: np.ndarray,
    per_query: int,
    ns: np.ndarray,
    found: dict[str, tuple[np.ndarray, np.ndarray]],
    cases: list[tuple[int, int]],
    bars: list[float],
) -> tuple[int, int, float]:
    """(looks x readings compared, verdicts differing, largest interval difference) against judged_kappa."""
    compared = differing = 0
    largest = 0.0
    for r, j in cases:
        n = int(ns[j])
        first = j == 0
        for name, earlier, queries in (
            ("sequence, by query", 0 if first else 1, True),
            ("fixed, by query, every look", 0, True),
            ("sequence, no queries", 0 if first else 1, False),
        ):
            result = by_judged_kappa(person[r], judge[r], per_query, n, earlier=earlier, queries=queries)
            low, high = found[name][0][r, j], found[name][1][r, j]
            ci = result["ci"]
            compared += 1
            if ci is None or result["verdict"] in ("uncalibrated", "undefined"):
                differing += int(not np.isnan(low))
                continue
            if np.isnan(low):
                differing += 1
                continue
            largest = max(largest, abs(ci[0] - low), abs(ci[1] - high))
            for bar in bars:
                differing += int(verdict_of(ci[0], ci[1], bar) != verdict_of(low, high, bar))
    return compared, differing, largest


def simulate(args: argparse.Namespace, population: Population) -> dict[str, Any]:
    rng = np.random.default_rng(args.seed)
    replace = args.topics == "with"
    queries = -(-LAST // args.per_query)
    if not replace:
        queries = min(queries, len(population.by_topic))
    last = min(LAST, queries * args.per_query)
    ns = looks_of(args.per_query, last, args.every)
    truth = population.kappa
    bars = [truth + o for o in OFFSETS]
    tally: dict[str, dict[str, Any]] = {
        name: {"wrong": np.zeros(4), "decided": np.zeros(4), "first": [[] for _ in bars], "missed": 0.0}
        for name in READINGS
    }
    checked: dict[str, Any] = {"compared": 0, "differing": 0, "largest": 0.0, "slow": 0}
    check_rng = np.random.default_rng(args.seed + 1)
    done = 0
    while done < args.runs:
        batch = min(BATCH, args.runs - done)
        orders = np.stack([draw_run(population, rng, args.per_query, queries, replace) for _ in range(batch)])
        orders = orders[:, :last]
        person, judge = population.person[orders], population.judge[orders]
        parts, _kappa, slow = readings(person, judge, args.per_query, ns)
        for r, j in zip(*np.nonzero(slow)):  # the linearised variance: judged_kappa itself
            checked["slow"] += 1
            for key, earlier in (("fixed", 0), ("sequence", 1)):
                ci = by_judged_kappa(
                    person[r], judge[r], args.per_query, int(ns[j]), earlier=earlier, queries=True
                )["ci"]
                if ci is not None:
                    parts[key][0][r, j], parts[key][1][r, j] = ci
        found = assemble(parts)
        if checked["compared"] < 3 * args.check:
            want = args.check - checked["compared"] // 3
            if args.every == "query":
                cases = [(r, j) for r in range(batch) for j in range(len(ns))][:want]
            else:
                cases = [
                    (int(check_rng.integers(batch)), int(check_rng.integers(len(ns)))) for _ in range(want)
                ]
            c, dif, big = check(person, judge, args.per_query, ns, found, cases, bars)
            checked["compared"] += c
            checked["differing"] += dif
            checked["largest"] = max(checked["largest"], big)
        for name, (low, high) in found.items():
            with np.errstate(invalid="ignore"):
                tally[name]["missed"] += float(((low > truth) | (high < truth)).any(axis=1).sum())
            for i, bar in enumerate(bars):
                first, trusted = first_decisions(low, high, bar)
                wrong = (first >= 0) & (trusted != (truth >= bar))
                tally[name]["wrong"][i] += wrong.sum()
                tally[name]["decided"][i] += (first >= 0).sum()
                tally[name]["first"][i] += ns[first[first >= 0]].tolist()
        done += batch
    return {"tally": tally, "checked": checked, "ns": ns, "last": last, "queries": queries, "bars": bars}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--per-query", type=int, default=20, help="chunks labelled a query (default 20)")
    parser.add_argument(
        "--topics",
        choices=("without", "with"),
        default="without",
        help="topics drawn with or without replacement",
    )
    parser.add_argument(
        "--every", choices=("query", "label"), default="query", help="read after every query or every label"
    )
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--check", type=int, default=300, help="looks checked against judged_kappa itself")
    parser.add_argument("--data", type=Path, default=DATA)
    args = parser.parse_args(argv)
    population = Population(args.data)
    truth = population.kappa
    load_before = os.getloadavg()[0]
    wall, cpu = time.perf_counter(), time.process_time()
    result = simulate(args, population)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    ns = result["ns"]
    print(
        f"TREC RAG 2025, NIST vs UMBRELA-v2, relevant = grade >= {RELEVANT}: {len(population.person)} chunks, "
        f"{len(population.by_topic)} topics; all-topics kappa {truth:.3f}; {args.runs} runs of {result['queries']} "
        f"queries x {args.per_query} chunks (topics {args.topics} replacement, in random order, chunks in random "
        f"order), seed {args.seed}; verdict read after every {args.every}, {len(ns)} looks from n = {ns[0]} to "
        f"{ns[-1]}, first decision kept; judged_kappa's arithmetic (min_queries {MIN_QUERIES}, alpha {ALPHA}, "
        f"horizon {HORIZON})"
    )
    print(f"| bar | offset | reading | wrong verdicts | decided by {ns[-1]} | median n at decision |")
    print("|---:|---:|---|---:|---:|---:|")
    failed = []
    for i, (offset, bar) in enumerate(zip(OFFSETS, result["bars"])):
        for name in READINGS:
            t = result["tally"][name]
            wrong, decided = t["wrong"][i] / args.runs, t["decided"][i] / args.runs
            firsts = t["first"][i]
            median = f"{np.median(firsts):.0f}" if firsts else "-"
            print(f"| {bar:.3f} | {offset:+.2f} | {name} | {wrong:.1%} | {decided:.1%} | {median} |")
            if name == "sequence, by query":
                if wrong > WRONG_BOUND:
                    failed.append(f"bar {offset:+.2f}: wrong verdicts {wrong:.1%} > {WRONG_BOUND:.1%}")
                if abs(offset) >= 0.15 and decided < DECIDED_BOUND:
                    failed.append(f"bar {offset:+.2f}: decided {decided:.1%} < {DECIDED_BOUND:.0%}")
    for name in READINGS:
        share = result["tally"][name]["missed"] / args.runs
        print(f"{name}: the all-topics kappa outside the interval at some look: {share:.1%} of runs")
    c = result["checked"]
    print(
        f"checked against judged_kappa: {c['compared']} (look, reading) pairs, {c['differing']} verdicts or "
        f"refusals differ (4 bars a pair), largest interval difference {c['largest']:.1e}; "
        f"{c['slow']} looks computed by judged_kappa itself (linearised variance)"
    )
    if c["differing"] or c["largest"] > TOLERANCE:
        failed.append("the vectorised arithmetic differs from judged_kappa's")
    print(
        f"wall {wall:.1f} s, CPU {cpu:.1f} s; load (1 min) {load_before:.2f} before, {os.getloadavg()[0]:.2f} after"
    )
    for failure in failed:
        print(f"MISSED: {failure}")
    print("acceptance (sequence, by query): " + ("MISSED" if failed else "met"))
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
