"""Could the unjudged chunks of a query's top k change what the diagnosis says of its ranking?
(issue #40, item 10: the diagnosis claims nothing about ranking when they could.)

``check``'s ``ranking_weak`` says the order within the kept set is weak: nDCG@k or RR below the
policy's ``diagnosis`` bars. Both count an unjudged chunk as not relevant, so a top k full of
chunks nobody labelled reads weak whatever its order. :func:`ranking_bound` gives, per query, the
best each figure could be were the unjudged chunks relevant:

- **RR**: exact up to the depth read. The larger of RR as judged (its first judged relevant
  chunk, anywhere in the ranking) and 1 / the first position holding an unjudged chunk within the
  depth read: at least k and at least 1 / the RR bar, so an unjudged chunk below it could not
  lift RR to the bar;
- **nDCG@k**: an upper bound. The DCG of the top k as judged plus every unjudged slot at the top
  grade people gave (the gain is the grade, as in ``calibration.metrics``), over the ideal DCG of
  the judged grades alone: a filled chunk can only add to the ideal, so no filling reaches higher.

The unjudged slots are counted in the same read of the run as the figures
(``calibration.metrics.evaluate``'s ``unjudged_depth``): a run file read in pieces is not read again.

The claim stands when it holds at the best: best nDCG@k below its bar, or best RR below its bar.
Otherwise the query's finding is ``ranking_unjudged``, naming the chunks to label.

Pure: no IO.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

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
    unjudged: Sequence[tuple[int, str]],
    grades: Mapping[str, int],
    k: int,
    min_grade: int,
    top_grade: int,
    rr: float | None,
    ndcg: float | None,
) -> RankingBound:
    """The best RR and an upper bound of nDCG@k of one query were its unjudged chunks relevant at
    ``top_grade``. ``unjudged``: (position, id) of the unjudged chunks of its first slots (at
    least k deep, :func:`rr_depth`; ``calibration.metrics.Evaluation.unjudged_top``); ``rr`` and
    ``ndcg``: its RR and nDCG@k as judged (None: undefined)."""
    in_top = sorted((p, doc) for p, doc in unjudged if p <= k)
    n_rel = sum(1 for g in grades.values() if g >= min_grade)
    first = min((p for p, _ in unjudged), default=None)
    rr_best = max(rr or 0.0, 1.0 / first if first else 0.0) if n_rel else None
    ideal = sorted((g for g in grades.values() if g >= 1), reverse=True)[:k]
    idcg = sum(g / math.log2(rank + 1) for rank, g in enumerate(ideal, start=1))
    ndcg_best = None
    if ndcg is not None and idcg > 0:  # the judged DCG, and each unjudged slot at the top grade
        filled = (ndcg * idcg + sum(top_grade / math.log2(p + 1) for p, _ in in_top)) / idcg
        ndcg_best = min(1.0, filled)  # no nDCG exceeds 1
    return RankingBound([doc for _, doc in in_top], rr_best, ndcg_best)
