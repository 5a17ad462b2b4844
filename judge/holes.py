"""The holes of a run's top k as chunk items a judge grades (``judge grade --holes``, #30).

A hole (:func:`calibration.holes.scoring.find_holes`) is a chunk in the run's top k that the judgments
(GOLDEN: golden.yaml or TREC qrels) do not grade. To be graded it must be a chunk item of the
store, standing on a query row and a chunk row that both have a text: the query's text is the
store's, else GOLDEN's (golden.yaml holds query texts); the chunk's is the store's, else the
corpus file's. A stored text is never overwritten (:meth:`annotation.store.Store.import_corpus`).
A hole whose query or chunk text is known nowhere is skipped and named, never made an item.

:func:`find_hole_items` only reads (a dry run stops there); :func:`make_hole_items` writes the
missing texts and items in one transaction. The items are assigned to nobody: this puts nothing
in anyone's queue by assignment (under the ``open`` handout a person without assignments is
offered every live item, as for any item).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from annotation.model import Qrels, Run
from annotation.store import Store
from annotation.store.base import random_position
from calibration.holes.scoring import find_holes

__all__ = ["HoleSpec", "Hole", "HoleItems", "find_hole_items", "make_hole_items", "HOLES_BATCH"]

HOLES_BATCH = "holes-k{k}"  # the items' batch: where they came from


@dataclass(frozen=True)
class HoleSpec:
    """What ``--holes`` names: the judgments, the run, the cutoff, and chunk texts (the corpus
    file's, id -> text; empty: the store's only)."""

    qrels: Qrels
    run: Run
    k: int
    corpus: Mapping[str, str] = field(default_factory=dict)


@dataclass
class Hole:
    """One hole: its query and chunk, their texts (None: known nowhere), its item (None: none yet)."""

    qid: str
    chunk: str
    query_text: str | None
    chunk_text: str | None
    item_id: int | None = None

    @property
    def known(self) -> bool:
        return bool(
            self.query_text and self.query_text.strip() and self.chunk_text and self.chunk_text.strip()
        )


@dataclass
class HoleItems:
    """The holes of a run's top k, in query (bytewise) then rank order, and what became of them."""

    k: int
    queries: int  # the queries both the run and the judgments hold
    holes: list[Hole]
    made: int = 0  # items added by this run (0 for a dry run)
    texts_added: int = 0  # query and chunk texts the store did not have, written by this run

    @property
    def known(self) -> list[Hole]:
        return [h for h in self.holes if h.known]

    @property
    def unknown(self) -> list[Hole]:
        return [h for h in self.holes if not h.known]

    @property
    def item_ids(self) -> list[int]:
        """The items of the holes with texts (those made or found), in hole order."""
        return [h.item_id for h in self.known if h.item_id is not None]

    @property
    def to_make(self) -> int:
        return sum(1 for h in self.known if h.item_id is None)


def find_hole_items(store: Store, spec: HoleSpec) -> HoleItems:
    """The holes and their texts (store first, then the files) and items, read only."""
    found = find_holes(spec.qrels, spec.run, spec.k)
    pairs = [(qid, chunk) for qid, h in found.items() for chunk in h.holes]
    stored_queries = store.queries_with_text()
    stored_chunks = store.chunk_texts({c for _, c in pairs})
    holes = []
    for qid, chunk in pairs:
        query_text = stored_queries.get(qid) or spec.qrels.texts.get(qid) or None
        chunk_text = stored_chunks.get(chunk) or spec.corpus.get(chunk) or None
        holes.append(Hole(qid, chunk, query_text, chunk_text, store.chunk_item(qid, chunk)))
    return HoleItems(spec.k, len(found), holes)


def make_hole_items(store: Store, items: HoleItems) -> HoleItems:
    """Write what the holes with texts lack (a query's or chunk's text, the item), in one
    transaction: it lands whole or not at all."""
    with store.write():
        stored_queries = store.queries_with_text()
        stored_chunks = store.chunk_texts({h.chunk for h in items.known})
        queries = {h.qid: h.query_text for h in items.known if not stored_queries.get(h.qid)}
        chunks = {h.chunk: h.chunk_text for h in items.known if not stored_chunks.get(h.chunk)}
        if queries:
            store.import_queries(queries)
        if chunks:
            store.import_corpus([{"id": c, "text": t} for c, t in chunks.items()])
        items.texts_added = len(queries) + len(chunks)
        batch = HOLES_BATCH.format(k=items.k)
        for hole in items.known:
            hole.item_id = store.chunk_item(hole.qid, hole.chunk)
            if hole.item_id is None:
                hole.item_id = store.add_chunk_item(hole.qid, hole.chunk, batch, random_position())
                items.made += 1
    return items
