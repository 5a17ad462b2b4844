"""Could the unjudged chunks of a query's top k change what the diagnosis says of its ranking?
(issue #40, item 10: the diagnosis claims nothing about ranking when they could.)

``check``'s ``ranking_weak`` says the order within the kept set is weak: nDCG@k or RR below the
policy's ``diagnosis`` bars. Both count an unjudged chunk as not relevant, so a top k full of
chunks nobody labelled reads weak whatever its order. :func:`ranking_bound` gives, per query, the
best each figure could be were the unjudged chunks relevant:

- **RR**: exact. 1 / the first position holding a judged relevant chunk (anywhere in the ranking)
  or an unjudged one (within the depth read, at least k and at least 1 / the RR bar: an unjudged
  chunk below that cannot lift RR to the bar);
- **nDCG@k**: an upper bound. The DCG of the top k with every unjudged chunk at the top grade
  people gave (the gain is the grade, as in ``calibration.metrics``), over the ideal DCG of the
  judged grades alone: a filled chunk can only add to the ideal, so no filling reaches higher.

The claim stands when it holds at the best: best nDCG@k below its bar, or best RR below its bar.
Otherwise the query's finding is ``ranking_unjudged``, naming the chunks to label.

Pure: no IO.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from calibration.metrics import blank_repeats
from calibration.unjudged import Ranked

__all__ = ["RankingBound", "ranking_bound", "rr_depth"]


@dataclass(frozen=True)
class RankingBound:
    """What the unjudged chunks of one query's top could make of its ranking figures."""

    unjudged: list[str]  # the unjudged chunks of the top k, in rank order (a repeat once)
    rr_best: float | None  # RR were every unjudged chunk of the depth read relevant (None: |Rel| = 0)
    ndcg_best: float | None  # an upper bound of nDCG@k over every filling (None: no ideal DCG)


def rr_depth(k: int, rr_bar: float) -> int:
    """The depth to read for RR's best: k, or deeper when a chunk below k could still lift RR to
    the bar (1 / position >= bar)."""
    return max(k, math.floor(1 / rr_bar) if rr_bar > 0 else k)


def ranking_bound(
    r: Ranked, grades: Mapping[str, int], k: int, min_grade: int, top_grade: int
) -> RankingBound:
    """The best RR and an upper bound of nDCG@k of one query were its unjudged chunks relevant
    at ``top_grade``; ``r``: its top (at least k deep, :func:`rr_depth`) and the positions of
    its judged relevant chunks (``calibration.unjudged.tops``)."""
    slots, _ = blank_repeats(r.top)
    unjudged = [doc for doc in slots[:k] if doc is not None and doc not in grades]
    n_rel = sum(1 for g in grades.values() if g >= min_grade)
    first_unjudged = next(
        (i for i, doc in enumerate(slots, start=1) if doc is not None and doc not in grades), None
    )
    firsts = [p for p in (first_unjudged, min(r.relevant_at.values(), default=None)) if p is not None]
    rr_best = (1.0 / min(firsts) if firsts else 0.0) if n_rel else None
    dcg = sum(
        grades.get(doc, top_grade) / math.log2(rank + 1)
        for rank, doc in enumerate(slots[:k], start=1)
        if doc is not None and grades.get(doc, top_grade) >= 1
    )
    ideal = sorted((g for g in grades.values() if g >= 1), reverse=True)[:k]
    idcg = sum(g / math.log2(rank + 1) for rank, g in enumerate(ideal, start=1))
    return RankingBound(unjudged, rr_best, dcg / idcg if idcg > 0 else None)
