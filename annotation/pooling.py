"""Pooling: what people should label, so that the denominator is honest.

A depth-D pool is the union of every run's top D per query (TREC's method:
labels collected only for what one retriever found make its recall look
better than it is). Each new (query, chunk) becomes a ``chunk`` item, unless
someone has already judged it. Items are assigned to annotators round-robin
in a seeded random order, and a share ``overlap`` of them to a second person,
so agreement between people can be measured.

The labelling queue (:func:`next_item`) is blind: it gives the query and the
chunk and nothing else (no run, rank, score or other label), in an order
that is random per annotator, so the position in the queue leaks no rank.
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any, TypedDict

from annotation.enqueue import check_overlap, queue_pairs
from annotation.options import default
from annotation.store import ITEM_KINDS, Store, StoreError
from annotation.values import ranks

__all__ = [
    "pool",
    "pool_pairs",
    "check_estimate",
    "sample_unjudged",
    "sampling_design",
    "PoolReport",
    "EstimateSample",
    "RunFound",
]


class PoolReport(TypedDict):
    """What :func:`pool` did."""

    runs: list[str]
    depth: int
    pooled: int  # (query, chunk) pairs in the runs' top ``depth``
    already_judged: int
    items_added: int
    assignments: int
    items_assigned: int
    doubly_assigned: int
    batch: str
    warnings: list[str]


class EstimateSample(TypedDict):
    """What :func:`sample_unjudged` drew."""

    queries: int
    sampled: int
    strata: dict[str, int]  # stratum -> chunks drawn
    candidates: dict[str, int]  # stratum -> unjudged candidates, summed over queries
    design: str  # the design as recorded (JSON)


class RunFound(TypedDict):
    """One run's row of :func:`pool_report`."""

    run: str
    pooled: int
    relevant_found: int
    relevant_judged: int
    found_only_here: int


def one_run_warning(runs: Sequence[str]) -> str | None:
    """The one wording of "a pool of one system": recall against it is recall against that run's finds."""
    if len(runs) != 1:
        return None
    return (
        f"the pool holds one run ({runs[0]}): recall against these labels is recall against what that run "
        "itself found; pool several systems (import another run, or python -m annotation baseline for BM25)"
    )


def pool(
    store: Store,
    depth: int,
    runs: Sequence[str] | None = None,
    annotators: Sequence[str] = (),
    overlap: float | None = None,
    seed: int = default("pool_seed"),
) -> PoolReport:
    """Add the depth-``depth`` pool of ``runs`` (default: all) as items; assign them. ``overlap``
    None: the options table's share (0.2) when two or more annotators are given, else none."""
    if depth < 1:
        raise StoreError(f"pool depth {depth}; expected an integer >= 1")
    overlap = check_overlap(annotators, overlap)
    known = {name: run_id for run_id, name in store.stored_runs()}
    chosen = list(runs) if runs else sorted(known)
    unknown = [name for name in chosen if name not in known]
    if unknown:
        raise StoreError(
            f"no run named {', '.join(map(repr, unknown))}; stored runs: {', '.join(sorted(known)) or 'none'}"
        )
    if not chosen:
        raise StoreError(
            "no runs in the store; import one first (python -m annotation import --run, or POST /api/import/run)"
        )
    pairs = store.pooled_pairs([known[name] for name in chosen], depth)
    batch = f"pool-d{depth}-" + "+".join(chosen)
    queued = queue_pairs(store, pairs, batch, annotators, overlap, seed)
    return {
        "runs": chosen,
        "depth": depth,
        "pooled": len(pairs),
        "already_judged": queued["already_judged"],
        "items_added": queued["items_added"],
        "assignments": queued["assignments"],
        "items_assigned": queued["items_assigned"],
        "doubly_assigned": queued["doubly_assigned"],
        "batch": batch,
        "warnings": [w for w in (one_run_warning(chosen),) if w],
    }


DEFAULT_STRATA: tuple[int, ...] = ranks(
    default("estimate_strata")
)  # the options table's, parsed as --strata is


def check_estimate(
    store: Store, depth: int, n: int, strata: Sequence[int], annotators: Sequence[str] = ()
) -> list[int]:
    """What :func:`sample_unjudged` would refuse, checked before anything is written (so that
    ``pool --estimate`` refuses before it pools): the sorted strata bounds, or StoreError.

    One design per store: the estimate weighs each sampled chunk by its inclusion probability
    in one draw; a second draw over the candidates the first left would need the two designs
    combined (each stratum's size and sample from both), which the estimator does not do."""
    if n < 1:
        raise StoreError(f"estimate sample {n} per query; expected at least 1")
    bounds = sorted(set(int(b) for b in strata))
    if not bounds or bounds[0] <= depth:
        raise StoreError(f"strata {list(strata)}: each bound must exceed the pool depth {depth}")
    if store.has_assignments("chunk") and not annotators:
        raise StoreError("this store assigns chunk items to people: give --annotators for the sampled items")
    drawn, first = store.estimate_sample_size()
    if drawn:
        assert first is not None  # a drawn chunk's time (NOT NULL)
        raise StoreError(
            f"this store already holds an estimate sample ({drawn} chunks drawn {first[:10]}); a second "
            "draw would mix two designs and weigh its chunks wrongly: label the first (or start a new store)"
        )
    return bounds


def sample_unjudged(
    store: Store,
    depth: int,
    n: int,
    strata: Sequence[int] = DEFAULT_STRATA,
    corpus: bool = False,
    runs: Sequence[str] | None = None,
    annotators: Sequence[str] = (),
    seed: int = 0,
) -> EstimateSample:
    """For each query, a stratified random sample of ``n`` unjudged candidates beyond the
    depth-``depth`` pool, so that what the labels missed can be estimated
    (calibration.estimate; Horvitz-Thompson, as TREC's infAP and statAP do).

    A candidate's stratum is its best rank over the runs: ranks depth+1 to strata[0],
    strata[0]+1 to strata[1], ...; with ``corpus``, one more stratum of the chunks no run
    returned in its top strata[-1]. Each stratum h of N_h unjudged candidates gets n_h of
    the n draws (proportional allocation, at least one per non-empty stratum), drawn
    without replacement, so each drawn chunk's inclusion probability is n_h / N_h; the
    design is recorded (``estimate_samples``). The drawn chunks become ordinary chunk
    items, assigned like the pool's and placed at random positions in each queue:
    annotators cannot tell them from the pool's items (blind)."""
    bounds = check_estimate(store, depth, n, strata, annotators)
    known = {name: run_id for run_id, name in store.stored_runs()}
    chosen = list(runs) if runs else sorted(known)
    unknown = [name for name in chosen if name not in known]
    if unknown or not chosen:
        raise StoreError(
            f"no run named {', '.join(map(repr, unknown))}" if unknown else "no runs in the store"
        )
    best = store.best_ranks([known[name] for name in chosen])
    judged = store.labelled_chunk_pairs()
    sampled_before = store.estimate_sampled_pairs()
    names = [f"{lo + 1}-{hi}" for lo, hi in zip([depth, *bounds[:-1]], bounds)]
    candidates: dict[str, dict[str, list[str]]] = {}
    for query_id, chunk_id, rank in best:
        if rank <= depth or (query_id, chunk_id) in judged or (query_id, chunk_id) in sampled_before:
            continue
        for name, hi in zip(names, bounds):
            if rank <= hi:
                candidates.setdefault(query_id, {}).setdefault(name, []).append(chunk_id)
                break
    if corpus:
        retrieved = {(q, c) for q, c, rank in best if rank <= bounds[-1]}
        all_chunks = store.chunk_ids()
        for query_id in sorted({q for q, _, _ in best}):
            rest = [
                c
                for c in all_chunks
                if (query_id, c) not in retrieved
                and (query_id, c) not in judged
                and (query_id, c) not in sampled_before
            ]
            if rest:
                candidates.setdefault(query_id, {})[f"corpus (beyond {bounds[-1]})"] = rest
    rng = random.Random(seed)
    design = json.dumps(
        {"depth": depth, "strata": bounds, "corpus": corpus, "runs": chosen, "per_query": n, "seed": seed}
    )
    drawn: list[tuple[str, str, str, int, int]] = []
    for query_id in sorted(candidates):
        groups = {name: sorted(members) for name, members in candidates[query_id].items() if members}
        total = sum(len(m) for m in groups.values())
        take = min(n, total)
        quotas = {name: max(1, int(take * len(m) / total)) for name, m in groups.items()}
        while sum(quotas.values()) > take:
            quotas[max(quotas, key=lambda k: (quotas[k], k))] -= 1
        spare = take - sum(quotas.values())
        for name in sorted(groups, key=lambda k: (-(take * len(groups[k]) / total - quotas[k]), k))[:spare]:
            quotas[name] += 1
        for name, members in sorted(groups.items()):
            size, k = len(members), min(quotas.get(name, 0), len(members))
            for chunk_id in rng.sample(members, k):
                drawn.append((query_id, chunk_id, name, size, k))
    now = datetime.now(UTC).isoformat(timespec="microseconds")
    ids = [store.annotator_id(name) for name in annotators]
    with store.write():
        for query_id, chunk_id, name, size, k in drawn:
            item_id = store.ensure_item("chunk", query_id=query_id, chunk_id=chunk_id)
            store.add_estimate_sample(
                query_id,
                chunk_id,
                item_id,
                stratum=name,
                stratum_size=size,
                stratum_sampled=k,
                inclusion=k / size,
                design=design,
                created_at=now,
            )
            if ids:  # one person each, in the seeded order, at a random place in their queue
                store.assign(item_id, ids[rng.randrange(len(ids))], rng.getrandbits(48))
    per_stratum: dict[str, int] = {}
    for _, _, name, _, _ in drawn:
        per_stratum[name] = per_stratum.get(name, 0) + 1
    sizes: dict[str, int] = {}  # candidates per stratum, summed over queries
    for groups in candidates.values():
        for name, members in groups.items():
            sizes[name] = sizes.get(name, 0) + len(members)
    return {
        "queries": len({q for q, *_ in drawn}),
        "sampled": len(drawn),
        "strata": per_stratum,
        "candidates": sizes,
        "design": design,
    }


def sampling_design(store: Store) -> dict[str, Any]:
    """The recorded design, as golden.yaml's ``sampling`` section keeps it: per query and
    stratum its size and the drawn chunk ids (their grades are in the golden file's grades)."""
    rows = store.estimate_samples()
    if not rows:
        return {}
    queries: dict[str, dict[str, dict[str, Any]]] = {}
    for query_id, stratum, size, chunk_id, _ in rows:
        entry = queries.setdefault(query_id, {}).setdefault(stratum, {"size": size, "sampled": []})
        entry["sampled"].append(chunk_id)
    return {
        "method": "stratified simple random samples of unjudged candidates, without replacement",
        "design": json.loads(rows[-1][4]),
        "queries": queries,
    }


KINDS = ITEM_KINDS


def pool_pairs(store: Store, system_a: str, system_b: str) -> dict[str, int]:
    """A ``pair`` item per query answered by both systems (their first traces)."""
    rows = store.first_trace_pairs(system_a, system_b)
    if not rows:
        raise StoreError(f"no query has traces of both {system_a!r} and {system_b!r}")
    added = 0
    with store.write():
        for query_id, trace_a, trace_b in rows:
            if not store.pair_item_exists(trace_a, trace_b):
                store.ensure_item("pair", query_id=query_id, trace_id=trace_a, trace_b_id=trace_b)
                added += 1
    return {"pairs": len(rows), "added": added}
