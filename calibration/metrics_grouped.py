"""Scoring a run grouped by query, a batch of whole queries at a time (issue #19): memory stays
flat with the run's size. Each batch is scored by :func:`calibration.metrics.evaluate` against
that batch's judgments only, and the parts are merged in query-id order, so the values, counts,
repeated ids and missing queries equal a whole read's (``tests/test_metrics_stream.py``).

Pure: it takes Arrow tables (``annotation.formats.columnar.lean_pieces`` reads them from a file).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Executor
from functools import partial
from typing import Literal

import numpy as np
import pyarrow as pa

import annotation.arrow_compute as pc
from annotation.errors import DenominatorError
from annotation.model import Qrels, Run, arrow, as_numpy
from calibration.metrics import Evaluation, Gain, Measure, evaluate, measure_names, sorted_queries

__all__ = ["NotGrouped", "QueryBatches", "evaluate_grouped"]


class NotGrouped(DenominatorError, ValueError):
    """The run cannot be scored batch by batch: a query's lines come back after other
    queries' (the run is not grouped by query), or a label file query has no grades."""


def evaluate_grouped(
    qrels: Qrels,
    pieces: Iterable[pa.Table],
    *,
    ks: Sequence[int],
    min_grade: int,
    missing: Literal["drop", "zero"] = "drop",
    gain: Gain = "linear",
    with_positional: bool = False,
    executor: Executor | None = None,
    run_name: str = "run",
    unjudged_depth: int = 0,
) -> Evaluation:
    """:func:`evaluate` over a run given in pieces (tables q, d, s in file order), holding one
    batch of whole queries at a time; the same values, queries, counts and duplicates.

    The run must be grouped by query (each query's lines together, in any order of queries):
    the rows of a piece's last query wait for the next piece, every batch ends at a query
    boundary, and each batch is scored by :func:`evaluate` against its queries' judgments
    only. A query that comes back after its batch raises :class:`NotGrouped` (read the run
    whole). Memory: one piece, one batch and the per-query results.
    """
    judged = qrels.to_table()
    # bytewise: UTF-8 keeps str's code-point order (a lone surrogate is refused by arrow() below)
    qids_all = sorted(qrels.qids)
    qid_array = arrow(qids_all, pa.string())
    position = {qid: i for i, qid in enumerate(qids_all)}  # one lookup table for every batch
    j_qi = as_numpy(pc.index_in(judged["q"], value_set=qid_array)).astype(np.int64)
    j_order = np.argsort(j_qi, kind="stable")
    j_counts = np.bincount(j_qi, minlength=len(qids_all))
    j_starts = np.concatenate([[0], np.cumsum(j_counts)[:-1]]).astype(np.int64)
    # a golden.yaml query with no grades has no row to hand a batch: such labels go whole
    if (j_counts == 0).any():
        raise NotGrouped(f"query {qids_all[int(np.flatnonzero(j_counts == 0)[0])]!r} has no grades")
    seen = np.zeros(len(qids_all), dtype=bool)
    seen_elsewhere: set[str] = set()  # run queries without judgments
    parts: list[Evaluation] = []

    def judged_of(indices: np.ndarray) -> Qrels:
        lengths = j_counts[indices]
        starts = np.repeat(j_starts[indices] - np.concatenate([[0], np.cumsum(lengths)[:-1]]), lengths)
        rows = j_order[starts + np.arange(int(lengths.sum()))]
        return Qrels(table=pc.take(judged, arrow(rows)), meta=qrels.meta)

    def score(batch: pa.Table, number: int) -> None:
        run = Run(table=batch, name=run_name)
        # the batch in trec_eval's order (its queries beside), which evaluate then reads from the memo
        batch_qids = sorted_queries(run, executor)
        known = np.array([position[q] for q in batch_qids if q in position], dtype=np.int64)
        if seen[known].any():
            raise NotGrouped(_comes_back(qids_all[int(known[seen[known]][0])], number))
        seen[known] = True
        others = [q for q in batch_qids if q not in position]
        if seen_elsewhere.intersection(others):
            raise NotGrouped(_comes_back(sorted(seen_elsewhere.intersection(others))[0], number))
        seen_elsewhere.update(others)
        if not len(known):
            parts.append(_empty_part(ks, min_grade, gain, len(others), run_name, missing))
            return
        part = evaluate(
            judged_of(known),
            run,
            ks=ks,
            min_grade=min_grade,
            missing="drop",
            gain=gain,
            with_positional=with_positional,
            executor=executor,
            unjudged_depth=unjudged_depth,
        )
        part.not_in_qrels = len(others)
        parts.append(part)

    batches = QueryBatches(pieces)
    for batch in batches:
        score(batch, batches.read)
    number = batches.read
    tag = batches.tag

    unseen = np.flatnonzero(~seen)
    if len(unseen):  # the judged queries the run never asked: missing, or zero with missing="zero"
        empty = pa.table(
            {"q": arrow([], pa.string()), "d": arrow([], pa.string()), "s": arrow([], pa.float64())}
        )
        parts.append(
            evaluate(
                judged_of(unseen),
                Run(table=empty),
                ks=ks,
                min_grade=min_grade,
                missing=missing,
                gain=gain,
                with_positional=with_positional,
            )
        )
    merged = _merge(parts, ks, min_grade, gain, missing, tag if tag is not None else run_name, number)
    merged.unjudged_top = {qid: top for part in parts for qid, top in part.unjudged_top.items()}
    merged.unjudged_depth = unjudged_depth
    return merged


def _last_block(q: pa.ChunkedArray) -> int:
    """Where the column's last block of equal ids begins (0: every row has the last id), found
    from the end in growing windows: the rest of the column is not compared."""
    n = len(q)
    last = q[n - 1]
    width = 1024
    while True:
        start = max(0, n - width)
        tail = as_numpy(pc.equal(q.slice(start), last))
        if not tail.all():
            return start + len(tail) - int(np.argmin(tail[::-1]))
        if start == 0:
            return 0
        width *= 8


class QueryBatches:
    """A run's pieces (tables q, d, s in file order, as ``lean_pieces`` reads them) as batches of
    whole queries: the rows of a piece's last query wait for the next piece, so a batch ends at a
    query boundary when the run is grouped by query. Iterating yields the batches (tables q, d, s;
    none empty); ``read`` is the pieces read so far, ``tag`` the run's tag (the first piece's
    metadata) once read. A query that comes back after other queries is not caught here: that is
    the caller's check (:class:`NotGrouped`)."""

    def __init__(self, pieces: Iterable[pa.Table]) -> None:
        self.pieces = pieces
        self.read = 0
        self.tag: str | None = None

    def __iter__(self) -> Iterator[pa.Table]:
        carry: pa.Table | None = None
        for piece in self.pieces:
            self.read += 1
            if self.tag is None and piece.schema.metadata and b"tag" in piece.schema.metadata:
                self.tag = piece.schema.metadata[b"tag"].decode("utf-8")
            piece = piece.select(["q", "d", "s"]).replace_schema_metadata(None)
            cut = _last_block(piece["q"])
            head = piece.slice(0, cut)
            if carry is not None and cut:
                batch = pa.concat_tables([carry, head])
                carry = piece.slice(cut)
            elif carry is not None:
                batch, carry = None, pa.concat_tables([carry, piece])
            else:
                batch, carry = head, piece.slice(cut)
            if batch is not None and batch.num_rows:
                yield batch
        if carry is not None and carry.num_rows:
            yield carry


def _comes_back(qid: str, piece: int) -> str:
    return f"query {qid!r} comes back in piece {piece} after other queries: the run is not grouped by query"


def _empty_part(
    ks: Sequence[int], min_grade: int, gain: Gain, not_in_qrels: int, run_name: str, missing: str
) -> Evaluation:
    ks = sorted(set(int(k) for k in ks))
    return Evaluation(
        ks=list(ks),
        min_grade=min_grade,
        gain=gain,
        qids=[],
        values={},
        num_ret=np.zeros(0, np.int64),
        num_rel=np.zeros(0, np.int64),
        num_rel_ret=np.zeros(0, np.int64),
        num_judged=np.zeros(0, np.int64),
        evaluated=np.zeros(0, bool),
        missing_from_run=[],
        not_in_qrels=not_in_qrels,
        duplicates={},
        run_name=run_name,
        missing=missing,
    )


def _merge(
    parts: list[Evaluation],
    ks: Sequence[int],
    min_grade: int,
    gain: Gain,
    missing: str,
    run_name: str,
    pieces: int,
) -> Evaluation:
    """One :class:`Evaluation` from the batches' (each query in one of them), in qid order."""
    ks = sorted(set(int(k) for k in ks))
    names = measure_names(ks)
    qids = [qid for part in parts for qid in part.qids]
    # bytewise: UTF-8 keeps str's code-point order (the batches' ids went through Arrow: no surrogate)
    order = np.array(sorted(range(len(qids)), key=qids.__getitem__), dtype=np.int64)

    def joined(get: Callable[[Evaluation], np.ndarray], dtype: type) -> np.ndarray:
        columns = [get(part) for part in parts if len(part.qids)]
        return np.concatenate(columns)[order] if columns else np.zeros(0, dtype)

    # the counts every scored batch holds (a batch of queries without judgments holds none)
    counts_names = next((list(part.counts) for part in parts if part.counts), [])
    duplicates = {qid: ids for part in parts for qid, ids in part.duplicates.items()}
    missing_from_run = sorted(
        (qid for part in parts for qid in part.missing_from_run), key=lambda q: q.encode("utf-8")
    )
    return Evaluation(
        ks=list(ks),
        min_grade=min_grade,
        gain=gain,
        qids=[qids[i] for i in order.tolist()],
        values={name: joined(partial(_value_of, name=name), np.float64) for name in names},
        num_ret=joined(lambda p: p.num_ret, np.int64),
        num_rel=joined(lambda p: p.num_rel, np.int64),
        num_rel_ret=joined(lambda p: p.num_rel_ret, np.int64),
        num_judged=joined(lambda p: p.num_judged, np.int64),
        counts={name: joined(partial(_count_of, name=name), np.int64) for name in counts_names},
        evaluated=joined(lambda p: p.evaluated, bool),
        missing_from_run=missing_from_run,
        not_in_qrels=sum(part.not_in_qrels for part in parts),
        duplicates={qid: duplicates[qid] for qid in sorted(duplicates, key=lambda q: q.encode("utf-8"))},
        run_name=run_name,
        missing=missing,
        measures=names,
        notes=[f"run read in {pieces} pieces, scored in {len(parts)} batches of whole queries"],
    )


def _value_of(part: Evaluation, name: Measure) -> np.ndarray:
    return part.values[name]


def _count_of(part: Evaluation, name: str) -> np.ndarray:
    return part.counts[name]
