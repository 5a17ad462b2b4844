"""Each query's first k ids in trec_eval's order without ordering every row (issue #42, item 1):
what ``holes`` and ``metrics --judge-labels`` read of a run. :func:`top_of_table` finds, per
query, the k-th largest score (a partition, not a sort) and orders only the rows at or above it;
:func:`top_ranked_file` does that batch by batch over a run file read in pieces, as the metrics
read it (:class:`calibration.metrics_grouped.QueryBatches`), and reads the file whole when it is
not grouped by query or not a clean TREC run. Both equal ``{q: r[:k] for q, r in
run.rankings().items()}`` (``tests/test_top_k.py``)."""

from __future__ import annotations

from collections.abc import Collection, Iterator

import numpy as np
import pyarrow as pa

import annotation.arrow_compute as pc
from annotation.formats.by_extension import read_ranked
from annotation.formats.columnar import NotStreamable, lean_pieces
from annotation.model import Run, arrow, as_numpy
from calibration.inputs import PathLike
from calibration.metrics import InvalidMeasure, query_indices, top_ranked
from calibration.metrics_grouped import NotGrouped, QueryBatches
from calibration.run_file import RUN_COLUMNS

__all__ = ["Grouped", "query_batches", "top_of_table", "top_ranked_file"]


def top_of_table(table: pa.Table, depth: int) -> dict[str, list[str]]:
    """Per query of ``table`` (columns q, d, s; bytewise order of queries), its first ``depth``
    ids in trec_eval's order: score descending, ties by id descending (bytewise), a repeat in its
    slot. :func:`calibration.metrics.top_ranked` of the same rows, with only the rows at or above
    each query's ``depth``-th largest score ordered; a table whose queries' rows are not each
    together, or whose queries differ widely in length, goes to it."""
    if depth < 1:
        raise InvalidMeasure(f"depth {depth}; expected a whole number >= 1")
    n = table.num_rows
    if n == 0:
        return {}
    queries, qi = query_indices(table["q"])
    scores = as_numpy(table["s"])
    block_start = np.concatenate([[0], np.flatnonzero(qi[1:] != qi[:-1]) + 1]).astype(np.int64)
    lengths = np.diff(np.concatenate([block_start, [n]]))
    n_blocks, width = len(block_start), int(lengths.max())
    if n_blocks != len(queries) or n_blocks * width > 2 * n + 1024 or bool(np.isnan(scores).any()):
        return top_ranked(Run(table=table), depth)  # a query's rows apart, a padding too wide, a NaN
    if width > depth:  # the depth-th largest score of each query: rows below it are never in its top
        if bool((lengths == width).all()):
            negated = -scores.reshape(n_blocks, width)
        else:  # padded with +inf (a score of -inf), which a partition puts last
            negated = np.full((n_blocks, width), np.inf)
            block = np.repeat(np.arange(n_blocks, dtype=np.int64), lengths)
            negated[block, np.arange(n, dtype=np.int64) - block_start[block]] = -scores
        bar = -np.partition(negated, depth - 1, axis=1)[:, depth - 1]
        rows = np.flatnonzero(scores >= np.repeat(bar, lengths))
    else:
        rows = np.arange(n, dtype=np.int64)
    picked = pa.table({"q": arrow(qi[rows]), "s": arrow(scores[rows]), "d": pc.take(table["d"], arrow(rows))})
    order = as_numpy(
        pc.sort_indices(picked, sort_keys=[("q", "ascending"), ("s", "descending"), ("d", "descending")])
    )
    q_sorted = qi[rows][order]
    counts = np.bincount(q_sorted, minlength=len(queries))
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    head = order[np.arange(len(order), dtype=np.int64) - starts[q_sorted] < depth]
    ids = pc.take(picked["d"], arrow(head)).to_pylist()
    out: dict[str, list[str]] = {}
    at = 0
    for qid, count in zip(queries.to_pylist(), np.minimum(counts, depth).tolist()):
        out[qid] = ids[at : at + count]
        at += count
    return out


def query_batches(path: PathLike) -> Iterator[pa.Table]:
    """A clean TREC run file in batches of whole queries (tables q, d, s), each query in one batch;
    :class:`NotStreamable` (a file the lean reader leaves to the others, read at any point) or
    :class:`NotGrouped` (a query that comes back after other queries) stops it: read it whole.
    (A caller that sorts each batch anyway checks its queries from the sort: :class:`Grouped`.)"""
    grouped = Grouped()
    batches = QueryBatches(lean_pieces(path, RUN_COLUMNS, ("r",), ("s",)))
    for batch in batches:
        grouped.check(_queries_of(batch["q"]), batches.read)
        yield batch


class Grouped:
    """The queries of the batches read so far: :meth:`check` each batch's, in file order."""

    def __init__(self) -> None:
        self.seen: set[str] = set()

    def check(self, qids: Collection[str], piece: int) -> None:
        """:class:`NotGrouped` when a query of ``qids`` (a batch's, read up to piece ``piece``)
        came in an earlier batch."""
        if not self.seen.isdisjoint(qids):
            back = sorted(self.seen.intersection(qids), key=lambda q: q.encode("utf-8"))[0]
            raise NotGrouped(f"query {back!r} comes back in piece {piece}: the run is not grouped by query")
        self.seen.update(qids)


def _queries_of(column: pa.ChunkedArray) -> list[str]:
    """The ids of ``column`` where each run of one id begins: every query of the batch, a query
    whose rows lie apart once a run (cheaper than hashing every row: adjacent ids compared)."""
    q = column.combine_chunks()
    if len(q) < 2:
        return list(q.to_pylist())
    change = as_numpy(pc.not_equal(q.slice(1), q.slice(0, len(q) - 1)))
    starts = np.concatenate([np.zeros(1, np.int64), np.flatnonzero(change) + 1])
    return list(pc.take(q, arrow(starts)).to_pylist())


def top_ranked_file(path: PathLike, depth: int) -> dict[str, list[str]]:
    """:func:`calibration.metrics.top_ranked` of the run file at ``path`` (a TREC run, or JSONL
    rankings by the name): read in pieces when it is a clean TREC run grouped by query (memory: a
    piece and every query's top ``depth``), else read whole (``read_ranked``: a bad line named)."""
    if not str(path).lower().endswith(".jsonl"):
        out: dict[str, list[str]] = {}
        try:
            for batch in query_batches(path):
                out.update(top_of_table(batch, depth))
        except (NotGrouped, NotStreamable):
            pass
        else:
            return {qid: out[qid] for qid in sorted(out, key=lambda q: q.encode("utf-8"))}
    return top_ranked(read_ranked(path), depth)
