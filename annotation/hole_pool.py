"""A hole sample's pairs as items to label (``python -m annotation pool --holes FILE``, #30).

``python -m calibration holes ... --sample N --seed S --out FILE`` writes a *hole sample*: a
golden.yaml file whose ``sampling`` section has ``design: {kind: holes, ...}`` and, per sampled
query, one stratum ``holes`` listing the chunks of the run's top k that the judgments do not
grade. People label exactly those (query, chunk) pairs; :func:`pool_holes` queues them the way
the pool of runs does (:func:`annotation.enqueue.queue_pairs`: blind, never an item twice, a
judged pair never asked again, the same seeded assignment).

The queries and chunks must be in the store already (imported, with a text to show): a pair
whose query or chunk is not is skipped and counted, the first few named, never a traceback.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any, TypedDict

from annotation.enqueue import check_overlap, queue_pairs
from annotation.hole_sample import read_hole_sample
from annotation.options import default
from annotation.store import Store

__all__ = ["NAMED", "HolePoolReport", "hole_pairs", "pool_holes"]

NAMED = 5  # the missing pairs named in the report (the rest are counted)


class HolePoolReport(TypedDict):
    """What :func:`pool_holes` did."""

    design: dict[str, Any]  # the sample's design as recorded (kind, k, seed, population, sample, run, ...)
    queries: int  # sampled queries in the file
    pairs: int  # (query, chunk) pairs the sample holds
    missing: int  # of pairs: query or chunk not in the store (or without a text), skipped
    missing_named: list[str]  # the first NAMED of them, "query/chunk (why)"
    already_judged: int  # of the pairs in the store: someone has judged them, no item
    items_added: int  # of the pairs in the store: new chunk items
    items_existing: int  # of the pairs in the store: an item already (kept, not duplicated)
    assignments: int
    items_assigned: int
    doubly_assigned: int
    batch: str


def hole_pairs(path: str | os.PathLike[str]) -> tuple[dict[str, Any], list[tuple[str, str]]]:
    """The design and the (query, chunk) pairs of a hole sample, by query and chunk as the file
    lists them (:func:`annotation.hole_sample.read_hole_sample`, which checks it)."""
    sample = read_hole_sample(path)
    return sample.design, [(qid, chunk) for qid, holes in sample.holes.items() for chunk in holes]


def pool_holes(
    store: Store,
    path: str | os.PathLike[str],
    annotators: Sequence[str] = (),
    overlap: float | None = None,
    seed: int = default("pool_seed"),
) -> HolePoolReport:
    """Queue the hole sample's (query, chunk) pairs at ``path`` as chunk items, assigned to
    ``annotators`` (``overlap`` as :func:`annotation.pooling.pool` reads it). Pairs whose query
    or chunk is not stored with a text are skipped and counted; nothing is written when the
    file is not a hole sample or an option is wrong."""
    overlap = check_overlap(annotators, overlap)
    design, pairs = hole_pairs(path)
    queries = store.queries_with_text()
    chunks = store.chunk_texts(c for _, c in pairs)
    present: list[tuple[str, str]] = []
    missing: list[str] = []
    for qid, chunk_id in pairs:
        why = [
            what
            for what, ok in (("query", qid in queries), ("chunk", chunks.get(chunk_id) is not None))
            if not ok
        ]
        if why:
            missing.append(f"{qid}/{chunk_id} ({' and '.join(why)} not in the store)")
        else:
            present.append((qid, chunk_id))
    batch = f"holes-k{design.get('k')}-seed{design.get('seed')}"
    queued = queue_pairs(store, present, batch, annotators, overlap, seed)
    return {
        "design": design,
        "queries": len({q for q, _ in pairs}),
        "pairs": len(pairs),
        "missing": len(missing),
        "missing_named": missing[:NAMED],
        **queued,
        "batch": batch,
    }
