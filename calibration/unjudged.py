"""How much of ``compare``'s B - A sits on chunks nobody judged (issue #40, item 10).

Every measure counts an unjudged chunk as not relevant, so a run that surfaces chunks nobody
labelled reads worse than it may be. For each measure m, its depth d is k for P@k, R@k, nDCG@k
and Success@k and the whole ranking for RR and AP. Over the queries where m is defined for both
runs (compare's n):

- **the unjudged chunks**: per run, the distinct chunks of its top d that the query's judgments
  do not grade (a repeated id is one chunk), summed over the queries; for RR and AP, which read
  the whole ranking, d is the deepest k compare prints (deeper unjudged chunks stay not relevant,
  as in the table: a relevant one there would lift RR by less than 1/d and AP little);
- **the interval**: per query, the unjudged chunks of the two top d's fall in three groups (in
  A's only, in B's only, in both); B - A is recomputed under each of the 8 fillings (each group
  wholly relevant, at the threshold grade G, or wholly not), and the query's range is the least
  and the greatest of them. The interval is the mean over the queries of the least and of the
  greatest: each end is a difference that one filling (chosen per query) gives, so an interval
  that holds 0 means the unjudged chunks can undo the difference;
- **exact** for P@k, R@k and Success@k: these read only how many chunks of each group are
  relevant (or whether any is), B - A is linear-fractional in those counts, and such a function
  takes its least and greatest values at the corners, the all-or-nothing fillings. For RR,
  nDCG@k and AP the position of each chunk matters, and a chunk-by-chunk filling (or a higher
  grade, for nDCG) may reach a little further than the 8 fillings do.

Unjudged chunks outside both top d's stay not relevant: were one relevant, it would add to |Rel|
(and the ideal DCG) of both runs alike, which only draws R@k, nDCG@k and AP towards 0.

Fast: a run is read once, sorted by Arrow (trec_eval's order), and only its top d and the positions
of its judged relevant chunks reach Python (:func:`tops`); RR and AP under a filling come from those
positions, not from the whole ranking, so a 1,000-deep run costs what a 10-deep one does.

Pure: no IO; the faces print it (``calibration.commands_text``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from itertools import product

import numpy as np
import pyarrow as pa

import annotation.arrow_compute as pc
from annotation.model import Run, arrow, as_numpy
from calibration.metrics import Gain, blank_repeats, evaluate_query
from calibration.results import UnjudgedShare

__all__ = ["EXACT", "TOLERANCE", "Ranked", "depth_of", "ranked", "tops", "unjudged_share"]

EXACT = ("P", "R", "Success")  # the measures whose interval is the exact range
TOLERANCE = 1e-12  # a difference this close to 0 is 0


@dataclass
class Ranked:
    """What of one query's ranking the interval reads: its first ``depth`` slots (repeats kept, in
    trec_eval's order) and the 1-based position of each judged relevant chunk anywhere in it (its
    first occurrence)."""

    top: list[str]
    relevant_at: dict[str, int] = field(default_factory=dict)


def depth_of(measure: str) -> int | None:
    """The depth a measure reads: k of ``P@k`` and its kind; None (the whole ranking) for RR, AP."""
    return int(measure.split("@", 1)[1]) if "@" in measure else None


def ranked(
    rankings: Mapping[str, Sequence[str]],
    grades: Mapping[str, Mapping[str, int]],
    depth: int,
    min_grade: int,
) -> dict[str, Ranked]:
    """:class:`Ranked` per query from whole rankings (the reference path, and small inputs)."""
    out = {}
    for qid, ranking in rankings.items():
        judged = grades.get(qid, {})
        slots, _ = blank_repeats(ranking)
        at = {d: i for i, d in enumerate(slots, start=1) if d is not None and judged.get(d, -1) >= min_grade}
        out[qid] = Ranked(list(ranking[:depth]), at)
    return out


def tops(run: Run, depth: int, grades: Mapping[str, Mapping[str, int]], min_grade: int) -> dict[str, Ranked]:
    """:class:`Ranked` per query of a run, the same as :func:`ranked` of ``run.rankings()``: one
    Arrow sort (query, score descending, id descending bytewise), then only the top ``depth`` rows
    and the rows of judged relevant chunks go to Python."""
    table = run.table
    out = {qid: Ranked([]) for qid in run.empty_queries}
    if table.num_rows == 0:
        return out
    order = pc.sort_indices(table, sort_keys=[("q", "ascending"), ("s", "descending"), ("d", "descending")])
    q = pc.take(table["q"], order).combine_chunks()
    d = pc.take(table["d"], order).combine_chunks()
    n = len(q)
    new = np.ones(n, dtype=bool)
    if n > 1:
        new[1:] = as_numpy(pc.not_equal(q.slice(1), q.slice(0, n - 1)))
    index = np.arange(n)
    rank = index - np.maximum.accumulate(np.where(new, index, 0))  # 0-based slot within its query
    head = np.flatnonzero(rank < depth)
    for qid, doc in zip(pc.take(q, arrow(head)).to_pylist(), pc.take(d, arrow(head)).to_pylist()):
        out.setdefault(qid, Ranked([])).top.append(doc)
    relevant = {(qid, doc) for qid, docs in grades.items() for doc, g in docs.items() if g >= min_grade}
    if relevant:
        ids = arrow(sorted({doc for _, doc in relevant}), pa.string())
        hit = np.flatnonzero(as_numpy(pc.is_in(d, value_set=ids)))  # then the pair, in Python
        rows = zip(pc.take(q, arrow(hit)).to_pylist(), pc.take(d, arrow(hit)).to_pylist(), rank[hit].tolist())
        for qid, doc, slot in rows:
            if (qid, doc) in relevant:  # rows come in rank order: the first is the first occurrence
                out.setdefault(qid, Ranked([])).relevant_at.setdefault(doc, slot + 1)
    return out


def _unjudged(ranking: Sequence[str], grades: Mapping[str, int]) -> list[str]:
    slots, _ = blank_repeats(ranking)
    return [doc for doc in slots if doc is not None and doc not in grades]


def _snap(value: float) -> float:
    return 0.0 if abs(value) <= TOLERANCE else value


def _rr_ap(r: Ranked, filled: Sequence[str], n_rel: int) -> dict[str, float | None]:
    """RR and AP of a ranking when the unjudged chunks ``filled`` (of its top) become relevant: from
    the positions of its relevant chunks alone; |Rel| grows by every filled chunk (both runs')."""
    slots, _ = blank_repeats(r.top)
    first = {d: i for i, d in enumerate(slots, start=1) if d is not None}
    positions = sorted([*r.relevant_at.values(), *(first[d] for d in set(filled) if d in first)])
    if not n_rel:
        return {"RR": None, "AP": None}
    ap = sum((i + 1) / p for i, p in enumerate(positions)) / n_rel
    return {"RR": 1.0 / positions[0] if positions else 0.0, "AP": ap}


def unjudged_share(
    grades: Mapping[str, Mapping[str, int]],
    ranked_a: Mapping[str, Ranked],
    ranked_b: Mapping[str, Ranked],
    deltas: Mapping[str, Mapping[str, float | None]],
    min_grade: int,
    gain: Gain = "linear",
) -> dict[str, UnjudgedShare]:
    """Per measure of ``deltas`` (per query, B - A; None where either run leaves it undefined), the
    unjudged chunks of each run's top d and the interval of B - A as they are relevant or not
    (the module's docstring). ``grades``: the judgments per query; ``ranked_*``: each run's top
    (at least the deepest k) per query (:func:`tops`); a chunk counted relevant gets the grade
    ``min_grade`` (at least 1)."""
    names = list(next(iter(deltas.values()), {}))
    deepest = max((depth_of(name) or 0 for name in names), default=0)
    fill_grade = max(min_grade, 1)
    low = dict.fromkeys(names, 0.0)
    high = dict.fromkeys(names, 0.0)
    count = {name: [0, 0, 0, 0] for name in names}  # chunks of A, of B, queries with any, queries
    empty = Ranked([])
    for qid, row in deltas.items():
        judged = grades.get(qid, {})
        n_rel = sum(1 for g in judged.values() if g >= min_grade)
        a, b = ranked_a.get(qid, empty), ranked_b.get(qid, empty)
        for depth in {depth_of(name) for name in names}:
            at = [name for name in names if depth_of(name) == depth and row[name] is not None]
            if not at:
                continue
            cut = depth if depth is not None else deepest
            holes_a, holes_b = _unjudged(a.top[:cut], judged), _unjudged(b.top[:cut], judged)
            in_a, in_b = set(holes_a), set(holes_b)
            groups = [
                g
                for g in (
                    [h for h in holes_a if h not in in_b],
                    [h for h in holes_b if h not in in_a],
                    [h for h in holes_a if h in in_b],
                )
                if g
            ]
            least = {name: float(row[name] or 0.0) for name in at}
            most = dict(least)
            for choice in product((False, True), repeat=len(groups)):
                if not any(choice):
                    continue  # none relevant: the figure compare printed
                docs = [doc for group, on in zip(groups, choice) if on for doc in group]
                if depth is None:
                    va = _rr_ap(a, docs, n_rel + len(docs))
                    vb = _rr_ap(b, docs, n_rel + len(docs))
                else:
                    filled = {**judged, **dict.fromkeys(docs, fill_grade)}
                    va = evaluate_query(a.top[:depth], filled, ks=[depth], min_grade=min_grade, gain=gain)
                    vb = evaluate_query(b.top[:depth], filled, ks=[depth], min_grade=min_grade, gain=gain)
                for name in at:
                    x, y = va[name], vb[name]
                    if x is None or y is None:  # never: filling adds relevant chunks, it takes none away
                        continue
                    least[name] = min(least[name], float(y) - float(x))
                    most[name] = max(most[name], float(y) - float(x))
            for name in at:
                low[name] += least[name]
                high[name] += most[name]
                c = count[name]
                c[0] += len(holes_a)
                c[1] += len(holes_b)
                c[2] += bool(groups)
                c[3] += 1
    out: dict[str, UnjudgedShare] = {}
    for name in names:
        chunks_a, chunks_b, with_holes, n = count[name]
        pair = [_snap(low[name] / n), _snap(high[name] / n)] if n else None
        out[name] = {
            "depth": depth_of(name) if depth_of(name) is not None else (deepest or None),
            "chunks_a": chunks_a,
            "chunks_b": chunks_b,
            "queries": with_holes,
            "interval": pair,
            "holds_zero": bool(pair and pair[0] <= TOLERANCE and pair[1] >= -TOLERANCE),
            "sign_could_flip": bool(pair and pair[0] < -TOLERANCE and pair[1] > TOLERANCE),
            "exact": name.split("@", 1)[0] in EXACT,
        }
    return out
