"""The one way (query, chunk) pairs become chunk items in people's queues: the pool of runs'
top D (:func:`annotation.pooling.pool`) and a hole sample's pairs
(:func:`annotation.hole_pool.pool_holes`) both go through :func:`queue_pairs`, so an item is
never added twice, a judged pair is never asked again, and the assignment is the same seeded
round-robin with the same overlap."""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import TypedDict

from annotation.options import default
from annotation.store import Store, StoreError

__all__ = ["Queued", "check_overlap", "queue_pairs"]


class Queued(TypedDict):
    """What :func:`queue_pairs` did with the pairs it was given."""

    already_judged: int  # pairs someone has judged: no item
    items_added: int  # new chunk items
    items_existing: int  # pairs that had an item already (kept, not duplicated)
    assignments: int
    items_assigned: int
    doubly_assigned: int


def check_overlap(annotators: Sequence[str], overlap: float | None) -> float:
    """The share of items given to a second person: ``overlap``, or None for the options table's
    share (0.2) with two or more annotators, else none; StoreError for a share outside 0-1 or an
    overlap with fewer than two people."""
    if overlap is None:
        overlap = default("pool_overlap") if len(annotators) >= 2 else 0.0
    if not 0.0 <= overlap <= 1.0:
        raise StoreError(f"overlap {overlap}; expected a share between 0 and 1")
    if overlap > 0 and len(annotators) < 2:
        raise StoreError("an overlap needs at least two annotators")
    return overlap


def queue_pairs(
    store: Store,
    pairs: Sequence[tuple[str, str]],
    batch: str,
    annotators: Sequence[str],
    overlap: float,
    seed: int,
) -> Queued:
    """The one way (query, chunk) pairs become chunk items in people's queues (:func:`pool` and
    :func:`annotation.hole_pool.pool_holes`): a pair someone has judged is left out; a pair with an
    item already keeps it (never a second item); a new one is added from ``batch`` at a random
    queue position. With ``annotators``, the new items, those nobody's queue holds yet and those
    only others hold are dealt round-robin in a seeded random order, a share ``overlap`` of them to
    a second person too. One write."""
    judged = store.labelled_chunk_pairs()
    rng = random.Random(seed)
    added: list[int] = []
    unassigned: list[int] = []  # pooled before, by nobody's queue yet: assigned now too
    elsewhere: list[int] = []  # pooled before, in other people's queues: the people named now
    # get them too (a second opinion, new people given work), unless one of them has it already
    with store.write():
        for query_id, chunk_id in pairs:
            if (query_id, chunk_id) in judged:
                continue
            exists = store.chunk_item(query_id, chunk_id)
            if exists is not None:
                (unassigned if not store.is_assigned(exists) else elsewhere).append(exists)
                continue
            added.append(store.add_chunk_item(query_id, chunk_id, batch, rng.getrandbits(48)))
        assigned = doubled = 0
        order: list[int] = []
        if annotators:
            ids = [store.annotator_id(name) for name in annotators]
            theirs = store.assigned_items(ids)
            order = added + unassigned + [item for item in elsewhere if item not in theirs]
            rng.shuffle(order)
            n_double = round(overlap * len(order))
            for position, item_id in enumerate(order):
                first = ids[position % len(ids)]
                people = [first]
                if position < n_double:
                    people.append(ids[(position + 1) % len(ids)])
                    doubled += 1
                for person in people:
                    store.assign(item_id, person, rng.getrandbits(48))
                    assigned += 1
    return {
        "already_judged": sum(1 for pair in pairs if pair in judged),
        "items_added": len(added),
        "items_existing": len(unassigned) + len(elsewhere),
        "assignments": assigned,
        "items_assigned": len(order),
        "doubly_assigned": doubled,
    }
