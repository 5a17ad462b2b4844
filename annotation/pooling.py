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

import random
from collections.abc import Sequence
from typing import Any

from annotation.store import Store, StoreError

__all__ = ["pool", "next_item", "progress"]


def pool(
    store: Store,
    depth: int,
    runs: Sequence[str] | None = None,
    annotators: Sequence[str] = (),
    overlap: float = 0.0,
    seed: int = 0,
) -> dict[str, Any]:
    """Add the depth-``depth`` pool of ``runs`` (default: all) as items; assign them."""
    if depth < 1:
        raise StoreError(f"pool depth {depth}; expected an integer >= 1")
    if not 0.0 <= overlap <= 1.0:
        raise StoreError(f"overlap {overlap}; expected a share between 0 and 1")
    if overlap > 0 and len(annotators) < 2:
        raise StoreError("an overlap needs at least two annotators")
    db = store.db
    known = {name: run_id for run_id, name in db.execute("SELECT id, name FROM runs").fetchall()}
    chosen = list(runs) if runs else sorted(known)
    unknown = [name for name in chosen if name not in known]
    if unknown:
        raise StoreError(
            f"no run named {', '.join(map(repr, unknown))}; stored runs: {', '.join(sorted(known)) or 'none'}"
        )
    if not chosen:
        raise StoreError("no runs in the store; import one with python -m annotation import --run")
    placeholders = ", ".join("?" * len(chosen))
    pairs = db.execute(
        f"""SELECT DISTINCT query_id, chunk_id FROM rankings
            WHERE run_id IN ({placeholders}) AND rank <= ? ORDER BY query_id, chunk_id""",
        [*(known[name] for name in chosen), depth],
    ).fetchall()
    judged = {
        (q, c)
        for q, c in db.execute(
            """SELECT DISTINCT i.query_id, i.chunk_id FROM items i JOIN labels l ON l.item_id = i.id
               WHERE i.kind = 'chunk' AND l.value IS NOT NULL"""
        ).fetchall()
    }
    batch = f"pool-d{depth}-" + "+".join(chosen)
    rng = random.Random(seed)
    added: list[int] = []
    with store.write():
        for query_id, chunk_id in pairs:
            if (query_id, chunk_id) in judged:
                continue
            exists = db.execute(
                "SELECT id FROM items WHERE kind = 'chunk' AND query_id = ? AND chunk_id = ?",
                [query_id, chunk_id],
            ).fetchone()
            if exists:
                continue
            added.append(
                db.execute(
                    "INSERT INTO items (kind, query_id, chunk_id, batch, position) VALUES ('chunk', ?, ?, ?, ?)",
                    [query_id, chunk_id, batch, rng.getrandbits(48)],
                ).lastrowid
            )
        assigned = doubled = 0
        if annotators:
            ids = [store.annotator_id(name) for name in annotators]
            order = added[:]
            rng.shuffle(order)
            n_double = round(overlap * len(order))
            for position, item_id in enumerate(order):
                first = ids[position % len(ids)]
                people = [first]
                if position < n_double:
                    people.append(ids[(position + 1) % len(ids)])
                    doubled += 1
                for person in people:
                    db.execute(
                        "INSERT OR IGNORE INTO assignments (item_id, annotator_id, position) VALUES (?, ?, ?)",
                        [item_id, person, rng.getrandbits(48)],
                    )
                    assigned += 1
    return {
        "runs": chosen,
        "depth": depth,
        "pooled": len(pairs),
        "already_judged": sum(1 for pair in pairs if pair in judged),
        "items_added": len(added),
        "assignments": assigned,
        "doubly_assigned": doubled,
        "batch": batch,
    }


# The newest label of this annotator on the item: NULL when there is none or
# when the newest row is a retraction (undo), i.e. the item still needs a grade.
_CURRENT = (
    "(SELECT value FROM labels WHERE item_id = i.id AND annotator_id = :annotator ORDER BY id DESC LIMIT 1)"
)


def _queue_sql(store: Store) -> tuple[str, str]:
    """FROM/WHERE of this annotator's chunk queue, ordered by position: the
    assigned items, or every chunk item when nobody has assignments
    (single-user mode)."""
    if store.db.execute("SELECT 1 FROM assignments LIMIT 1").fetchone() is None:
        return "FROM items i WHERE i.kind = 'chunk'", "i.position"
    return (
        "FROM assignments a JOIN items i ON i.id = a.item_id WHERE a.annotator_id = :annotator AND i.kind = 'chunk'",
        "a.position",
    )


def next_item(store: Store, annotator: str, skipped: Sequence[int] = ()) -> dict[str, Any] | None:
    """The next chunk to grade: ``{"item_id", "query", "chunk"}`` and nothing else.

    Blind by construction: the query reads only items, assignments, queries,
    chunks and this annotator's own labels, never runs, rankings, judge labels
    or other people's labels."""
    annotator_id = store.annotator_id(annotator)
    source, order = _queue_sql(store)
    skip = ", ".join(str(int(i)) for i in skipped)
    row = store.db.execute(
        f"""SELECT i.id, (SELECT text FROM queries WHERE id = i.query_id),
                   (SELECT text FROM chunks WHERE id = i.chunk_id)
            {source} AND {_CURRENT} IS NULL {f"AND i.id NOT IN ({skip})" if skip else ""}
            ORDER BY {order} LIMIT 1""",
        {"annotator": annotator_id},
    ).fetchone()
    if row is None:
        return None
    return {"item_id": row[0], "query": row[1] or "", "chunk": row[2] or ""}


def progress(store: Store, annotator: str) -> tuple[int, int]:
    """(labelled, total) of this annotator's queue."""
    annotator_id = store.annotator_id(annotator)
    source, _ = _queue_sql(store)
    done, total = store.db.execute(
        f"SELECT count({_CURRENT}), count(*) {source}", {"annotator": annotator_id}
    ).fetchone()
    return int(done), int(total)
