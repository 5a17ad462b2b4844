"""golden.yaml's ``provenance`` section built from a store (:class:`annotation.provenance.Provenance`):
each pool read back from its batch name (``pool-d{depth}-{run}+{run}``, as
:func:`annotation.pooling.pool` names it) with a fingerprint of what it took of each stored run,
every other source of chunk items by name, pool's one-run warning when one run was pooled, and,
once the relevance guidelines were edited, the labels by the guidelines version they were made
under (never edited: no ``guidelines`` key, so the file is what it was before #43)."""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping

from annotation.pooling import one_run_warning
from annotation.provenance import GuidelinesUsed, OtherBatch, PooledBatch, Provenance, run_fingerprint
from annotation.store import Store

__all__ = ["provenance_of", "ESTIMATE_SAMPLE", "IMPORTED"]

ESTIMATE_SAMPLE = "estimate sample"  # pool --estimate's draw (its items have no batch)
IMPORTED = "imported"  # items made for imported labels (import --labels)
_POOL_BATCH = re.compile(r"pool-d([1-9][0-9]*)-(.+)", re.DOTALL)


def provenance_of(
    store: Store, grades: Mapping[str, Mapping[str, int]], annotator: str | None = None
) -> Provenance | None:
    """How the chunk items of ``store`` were made, and how many of each source ``grades`` (the
    file's judgments) holds; None when the store has no chunk item. ``annotator``: whose labels
    the file holds (None: everyone's), for the guidelines their labels were made under."""
    rows = store.chunk_item_batches()
    if not rows:
        return None
    sampled = store.estimate_sampled_pairs()
    items: dict[str, int] = {}
    labelled: dict[str, int] = {}
    for query_id, chunk_id, batch in rows:
        name = batch or (ESTIMATE_SAMPLE if (query_id, chunk_id) in sampled else IMPORTED)
        items[name] = items.get(name, 0) + 1
        if chunk_id in grades.get(query_id, {}):
            labelled[name] = labelled.get(name, 0) + 1
    stored = {name: run_id for run_id, name in store.stored_runs()}
    pools: list[PooledBatch] = []
    other: list[OtherBatch] = []
    for name in sorted(items):
        match = _POOL_BATCH.fullmatch(name)
        if match is None:
            other.append(OtherBatch(batch=name, items=items[name], labelled=labelled.get(name, 0)))
            continue
        depth, runs = int(match.group(1)), _run_names(match.group(2), stored)
        pools.append(
            PooledBatch(
                runs=runs,
                depth=depth,
                items=items[name],
                labelled=labelled.get(name, 0),
                batch=name,
                fingerprints={
                    run: _stored_fingerprint(store, stored[run], depth) for run in runs if run in stored
                },
            )
        )
    pooled = sorted({run for p in pools for run in p.runs})
    return Provenance(
        pools=tuple(pools),
        other=tuple(other),
        warning=one_run_warning(pooled) if pools else None,
        guidelines=_guidelines_used(store, annotator),
    )


def _guidelines_used(store: Store, annotator: str | None) -> tuple[GuidelinesUsed, ...]:
    """The labels by the relevance guidelines version they were made under, newest version first,
    the unrecorded last; () while the guidelines were never edited."""
    if store.guidelines_version("relevance") == 0:
        return ()
    counted = store.current_label_guidelines(annotator)
    recorded = sorted((v for v in counted if v is not None), reverse=True)
    return tuple(GuidelinesUsed(v, counted[v]) for v in recorded) + (
        (GuidelinesUsed(None, counted[None]),) if None in counted else ()
    )


def _run_names(joined: str, stored: Collection[str]) -> tuple[str, ...]:
    """The runs of a pool's batch name: ``a+b`` split into stored run names (a name may hold
    ``+``), else split at every ``+`` (a run no longer stored)."""
    known = sorted(stored, key=len, reverse=True)

    def split(rest: str) -> list[str] | None:
        if not rest:
            return []
        for name in known:
            if rest == name or rest.startswith(name + "+"):
                tail = split(rest[len(name) + 1 :])
                if tail is not None:
                    return [name, *tail]
        return None

    return tuple(split(joined) or joined.split("+"))


def _stored_fingerprint(store: Store, run_id: int, depth: int) -> str:
    """:func:`run_fingerprint` of a stored run's top ``depth`` (its ranks are trec_eval's order)."""
    tops: dict[str, list[str]] = {}
    for query_id, rank, chunk_id, _score in store.run_rankings(run_id):
        if rank <= depth:
            tops.setdefault(query_id, []).append(chunk_id)
    return run_fingerprint(tops)
