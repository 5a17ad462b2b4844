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

import hashlib
import json
import random
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from annotation.store import Store, StoreError

__all__ = [
    "pool",
    "pool_pairs",
    "check_estimate",
    "sample_unjudged",
    "sampling_design",
    "next_item",
    "item_view",
    "progress",
]


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
    unassigned: list[int] = []  # pooled before, by nobody's queue yet: assigned now too
    with store.write():
        for query_id, chunk_id in pairs:
            if (query_id, chunk_id) in judged:
                continue
            exists = db.execute(
                "SELECT id FROM items WHERE kind = 'chunk' AND query_id = ? AND chunk_id = ?",
                [query_id, chunk_id],
            ).fetchone()
            if exists:
                if db.execute("SELECT 1 FROM assignments WHERE item_id = ?", [exists[0]]).fetchone() is None:
                    unassigned.append(exists[0])
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
            order = added + unassigned
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


DEFAULT_STRATA = (50, 100, 1000)


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
    assigned = store.db.execute(
        "SELECT 1 FROM assignments a JOIN items i ON i.id = a.item_id WHERE i.kind = 'chunk' LIMIT 1"
    ).fetchone()
    if assigned and not annotators:
        raise StoreError("this store assigns chunk items to people: give --annotators for the sampled items")
    drawn = store.db.execute("SELECT count(*), min(created_at) FROM estimate_samples").fetchone()
    if drawn[0]:
        raise StoreError(
            f"this store already holds an estimate sample ({drawn[0]} chunks drawn {drawn[1][:10]}); a second "
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
) -> dict[str, Any]:
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
    db = store.db
    known = {name: run_id for run_id, name in db.execute("SELECT id, name FROM runs").fetchall()}
    chosen = list(runs) if runs else sorted(known)
    unknown = [name for name in chosen if name not in known]
    if unknown or not chosen:
        raise StoreError(
            f"no run named {', '.join(map(repr, unknown))}" if unknown else "no runs in the store"
        )
    placeholders = ", ".join("?" * len(chosen))
    best = db.execute(
        f"""SELECT query_id, chunk_id, min(rank) FROM rankings WHERE run_id IN ({placeholders})
            GROUP BY query_id, chunk_id""",
        [known[name] for name in chosen],
    ).fetchall()
    judged = {
        (q, c)
        for q, c in db.execute(
            """SELECT DISTINCT i.query_id, i.chunk_id FROM items i JOIN labels l ON l.item_id = i.id
               WHERE i.kind = 'chunk' AND l.value IS NOT NULL"""
        ).fetchall()
    }
    sampled_before = {
        (q, c) for q, c in db.execute("SELECT query_id, chunk_id FROM estimate_samples").fetchall()
    }
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
        all_chunks = [c for (c,) in db.execute("SELECT id FROM chunks ORDER BY id")]
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
            item_id = store._item(db, "chunk", query_id=query_id, chunk_id=chunk_id)
            db.execute(
                """INSERT INTO estimate_samples (query_id, chunk_id, item_id, stratum, stratum_size, stratum_sampled,
                       inclusion, design, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)""",
                [query_id, chunk_id, item_id, name, size, k, k / size, design, now],
            )
            if ids:  # one person each, in the seeded order, at a random place in their queue
                db.execute(
                    "INSERT OR IGNORE INTO assignments (item_id, annotator_id, position) VALUES (?, ?, ?)",
                    [item_id, ids[rng.randrange(len(ids))], rng.getrandbits(48)],
                )
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
    rows = store.db.execute(
        """SELECT query_id, stratum, stratum_size, chunk_id, design FROM estimate_samples
           ORDER BY query_id, stratum, chunk_id"""
    ).fetchall()
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


# The newest label of this annotator on the item: NULL when there is none or
# when the newest row is a retraction (undo), i.e. the item still needs a grade.
_CURRENT = (
    "(SELECT value FROM labels WHERE item_id = i.id AND annotator_id = :annotator ORDER BY id DESC LIMIT 1)"
)


KINDS = ("chunk", "trace", "pair")


def _queue_sql(store: Store, kind: str) -> tuple[str, str]:
    """FROM/WHERE of this annotator's queue of ``kind`` items, and its order:
    the assigned items, or every item of the kind when none is assigned to
    anybody (single-user mode)."""
    if kind not in KINDS:
        raise StoreError(f"item kind {kind!r}; expected one of {', '.join(KINDS)}")
    assigned = store.db.execute(
        "SELECT 1 FROM assignments a JOIN items i ON i.id = a.item_id WHERE i.kind = ? LIMIT 1", [kind]
    ).fetchone()
    if assigned is None:
        return f"FROM items i WHERE i.kind = '{kind}'", "i.position"
    return (
        f"FROM assignments a JOIN items i ON i.id = a.item_id WHERE a.annotator_id = :annotator AND i.kind = '{kind}'",
        "a.position",
    )


def next_item(
    store: Store, annotator: str, skipped: Sequence[int] = (), kind: str = "chunk"
) -> dict[str, Any] | None:
    """The next item to label, with only what the page may show:

    - chunk: ``{"item_id", "query", "chunk"}``
    - trace: ``{"item_id", "question", "contexts": [texts], "answer"}``
    - pair: ``{"item_id", "question", "answers": [first, second], "shown": "AB" | "BA"}``
      (the order is random per annotator and item, and stable)

    Blind by construction: the queries read only items, assignments, queries,
    chunks, traces' question/contexts/answer and this annotator's own labels;
    never runs, rankings, system names, judge labels or other people's labels."""
    annotator_id = store.annotator_id(annotator)
    source, order = _queue_sql(store, kind)
    skip = ", ".join(str(int(i)) for i in skipped)
    unlabelled = f"{_CURRENT} IS NULL {f'AND i.id NOT IN ({skip})' if skip else ''}"
    # Start after the item this annotator labelled last: in a session that goes down the queue,
    # every item before it is labelled, so the search does not walk past them again (a fetch
    # costs the same after 10 labels or 10,000). Then from the start, for items skipped or undone.
    last = store.db.execute(
        f"""SELECT {order} {source} AND i.id = (
                SELECT l.item_id FROM labels l JOIN items k ON k.id = l.item_id
                WHERE l.annotator_id = :annotator AND k.kind = '{kind}' ORDER BY l.id DESC LIMIT 1)""",
        {"annotator": annotator_id},
    ).fetchone()
    row = None
    if last is not None:
        row = store.db.execute(
            f"SELECT i.id {source} AND {order} > :after AND {unlabelled} ORDER BY {order} LIMIT 1",
            {"annotator": annotator_id, "after": last[0]},
        ).fetchone()
    if row is None:
        row = store.db.execute(
            f"SELECT i.id {source} AND {unlabelled} ORDER BY {order} LIMIT 1", {"annotator": annotator_id}
        ).fetchone()
    return item_view(store, row[0], annotator) if row else None


def item_view(store: Store, item_id: int, annotator: str) -> dict[str, Any] | None:
    """What the labelling page shows of one item (see :func:`next_item`)."""
    db = store.db
    row = db.execute(
        "SELECT kind, query_id, chunk_id, trace_id, trace_b_id FROM items WHERE id = ?", [item_id]
    ).fetchone()
    if row is None:
        return None
    kind, query_id, chunk_id, trace_id, trace_b_id = row
    if kind == "chunk":
        query = db.execute("SELECT text FROM queries WHERE id = ?", [query_id]).fetchone()
        chunk = db.execute("SELECT text FROM chunks WHERE id = ?", [chunk_id]).fetchone()
        return {"item_id": item_id, "query": (query and query[0]) or "", "chunk": (chunk and chunk[0]) or ""}
    trace = db.execute("SELECT question, contexts, answer FROM traces WHERE id = ?", [trace_id]).fetchone()
    if kind == "trace":
        return {
            "item_id": item_id,
            "question": trace[0],
            "contexts": [_context_text(store, c) for c in json.loads(trace[1] or "[]")],
            "answer": trace[2],
        }
    other = db.execute("SELECT answer FROM traces WHERE id = ?", [trace_b_id]).fetchone()
    flip = hashlib.sha256(f"{annotator}\0{item_id}".encode()).digest()[0] % 2 == 1
    answers = [other[0], trace[2]] if flip else [trace[2], other[0]]
    return {"item_id": item_id, "question": trace[0], "answers": answers, "shown": "BA" if flip else "AB"}


def _context_text(store: Store, context: str) -> str:
    """A context given as a chunk id shows the chunk's text; a text shows itself."""
    row = store.db.execute("SELECT text FROM chunks WHERE id = ?", [context]).fetchone()
    return row[0] if row and row[0] else context


def pool_pairs(store: Store, system_a: str, system_b: str) -> dict[str, int]:
    """A ``pair`` item per query answered by both systems (their first traces)."""
    db = store.db
    rows = db.execute(
        """SELECT a.query_id, min(a.id), min(b.id) FROM traces a JOIN traces b ON b.query_id = a.query_id
           WHERE a.system = ? AND b.system = ? GROUP BY a.query_id ORDER BY a.query_id""",
        [system_a, system_b],
    ).fetchall()
    if not rows:
        raise StoreError(f"no query has traces of both {system_a!r} and {system_b!r}")
    added = 0
    with store.write():
        for query_id, trace_a, trace_b in rows:
            exists = db.execute(
                "SELECT 1 FROM items WHERE kind = 'pair' AND trace_id = ? AND trace_b_id = ?",
                [trace_a, trace_b],
            ).fetchone()
            if exists is None:
                store._item(db, "pair", query_id=query_id, trace_id=trace_a, trace_b_id=trace_b)
                added += 1
    return {"pairs": len(rows), "added": added}


def progress(store: Store, annotator: str, kind: str = "chunk") -> tuple[int, int]:
    """(labelled, total) of this annotator's queue of ``kind`` items."""
    annotator_id = store.annotator_id(annotator)
    source, _ = _queue_sql(store, kind)
    done, total = store.db.execute(
        f"SELECT count({_CURRENT}), count(*) {source}", {"annotator": annotator_id}
    ).fetchone()
    return int(done), int(total)


def pool_report(store: Store, depth: int, min_grade: int = 1) -> list[dict[str, Any]]:
    """Per run: pairs in its top ``depth``, judged-relevant chunks among them
    (current labels, median over annotators), and how many of those only this
    run found. If one run finds most relevant chunks alone, the labels lean
    toward it: the other systems' recall is measured against its finds."""
    db = store.db
    current = db.execute(
        """SELECT i.query_id, i.chunk_id, l.value FROM labels l JOIN items i ON i.id = l.item_id
           WHERE i.kind = 'chunk' AND l.id = (SELECT max(id) FROM labels
                                              WHERE item_id = l.item_id AND annotator_id = l.annotator_id)
             AND l.value IS NOT NULL"""
    ).fetchall()
    grades: dict[tuple[str, str], list[int]] = {}
    for query_id, chunk_id, value in current:
        grades.setdefault((query_id, chunk_id), []).append(value)
    relevant = {
        pair for pair, values in grades.items() if sorted(values)[(len(values) - 1) // 2] >= min_grade
    }
    found: dict[str, set[tuple[str, str]]] = {}
    for name, query_id, chunk_id in db.execute(
        "SELECT r.name, k.query_id, k.chunk_id FROM rankings k JOIN runs r ON r.id = k.run_id WHERE k.rank <= ?",
        [depth],
    ).fetchall():
        found.setdefault(name, set()).add((query_id, chunk_id))
    report = []
    for name in sorted(found):
        mine = found[name] & relevant
        others = set().union(*(found[o] for o in found if o != name)) if len(found) > 1 else set()
        report.append(
            {
                "run": name,
                "pooled": len(found[name]),
                "relevant_found": len(mine),
                "relevant_judged": len(relevant),
                "found_only_here": len(mine - others),
            }
        )
    return report
