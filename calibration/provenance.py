"""What golden.yaml's ``provenance`` says of the run under test (issue #40, item 3): when every
label of the file was pooled from one run's top D and the run under test took the same top D
(:func:`annotation.provenance.run_fingerprint`, computed here from the run), its stage-1 recall
against these labels is circular by construction, and ``check`` and ``audit`` say so."""

from __future__ import annotations

import os
from collections.abc import Iterable

import numpy as np
import pyarrow as pa

import annotation.arrow_compute as pc
from annotation.formats.by_extension import read_ranked
from annotation.formats.columnar import NotStreamable, lean_pieces
from annotation.model import Qrels, Run, arrow, as_numpy
from annotation.provenance import run_fingerprint
from calibration.unjudged import tops

__all__ = ["pooled_from_this_run", "top_fingerprint"]

_COLUMNS = ["q", "q0", "d", "r", "s", "t"]  # a TREC run's columns, as the lean reader names them


def pooled_from_this_run(qrels: Qrels, run: Run | str | os.PathLike[str]) -> str | None:
    """The sentence ``check`` and ``audit`` say when ``qrels``' provenance names one pooled run
    (:meth:`~annotation.provenance.Provenance.one_run_pool`) whose fingerprint at the pool's depth
    is ``run``'s; None otherwise (no provenance, several runs or sources, another run)."""
    provenance = qrels.provenance
    pool = provenance.one_run_pool() if provenance is not None else None
    if pool is None:
        return None
    (name,) = pool.runs
    recorded = pool.fingerprints.get(name)
    if recorded is None or top_fingerprint(run, pool.depth) != recorded:
        return None
    return (
        f"circular: the labels were pooled from this run's top {pool.depth} (golden.yaml's provenance: "
        f"every label from the pool of run {name}, whose fingerprint {recorded} this run has)"
    )


def top_fingerprint(run: Run | str | os.PathLike[str], depth: int) -> str:
    """:func:`~annotation.provenance.run_fingerprint` of a run's top ``depth`` per query, in
    trec_eval's order; a run file is read in pieces when the lean reader takes it (only each
    query's top ``depth`` is kept), else whole."""
    if isinstance(run, Run):
        whole = run
    elif str(run).lower().endswith(".jsonl"):
        whole = read_ranked(run)
    else:
        try:
            whole = Run(table=_top_rows(lean_pieces(run, _COLUMNS, ("r",), ("s",)), depth))
        except NotStreamable:
            whole = read_ranked(run)
    return run_fingerprint({qid: ranked.top for qid, ranked in tops(whole, depth, {}, 1).items()})


def _top_rows(pieces: Iterable[pa.Table], depth: int) -> pa.Table:
    """The rows (q, d, s) of each query's top ``depth`` over all pieces (a query may run over two):
    each piece's rows with the top kept so far, sorted as trec_eval orders them, cut to ``depth``."""
    kept = pa.table({"q": arrow([], pa.string()), "d": arrow([], pa.string()), "s": arrow([], pa.float64())})
    for piece in pieces:
        rows = pa.table({"q": piece["q"], "d": piece["d"], "s": pc.cast(piece["s"], pa.float64())})
        both = pa.concat_tables([kept, rows])
        order = pc.sort_indices(
            both, sort_keys=[("q", "ascending"), ("s", "descending"), ("d", "descending")]
        )
        both = pc.take(both, order)
        q = both["q"].combine_chunks()
        n = len(q)
        new = np.ones(n, dtype=bool)
        if n > 1:
            new[1:] = as_numpy(pc.not_equal(q.slice(1), q.slice(0, n - 1)))
        index = np.arange(n)
        slot = index - np.maximum.accumulate(np.where(new, index, 0))
        kept = pc.take(both, arrow(np.flatnonzero(slot < depth)))
    return kept
