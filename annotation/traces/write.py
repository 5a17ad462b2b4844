"""Writing a :class:`TraceImport` into the store: :func:`to_store`, in one
transaction; each (system, stage) ranking becomes a store :class:`Run`."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pyarrow as pa

from annotation.model import Run
from annotation.traces.base import TraceImport

if TYPE_CHECKING:
    from annotation.store import Store


def to_store(
    store: Store, imp: TraceImport, run_prefix: str = "", identical: list[tuple[str, str]] | None = None
) -> dict[str, int]:
    """Write a :class:`TraceImport` in one ``store.write()`` transaction: queries,
    chunks, one run per (system, stage) named ``{run_prefix}{system}:{stage}``,
    traces. All of it lands or none; the same import again adds no row; a query only for a trace
    imported or a ranking (a trace not imported leaves none). A
    run name already stored with other rankings is refused (ImportConflict):
    give a ``run_prefix`` for a later export of the same systems.

    Returns what was added (queries, chunks, runs, rankings rows, traces), how
    many rows were already stored as they are (``unchanged``: queries, chunks,
    ranking rows and traces together), and how many rankings were stored with
    scores n..1 (``positional``) because the source's scores were missing, tied
    or not falling with rank (distances), so that the stored order is the rank; and how many
    traces were not imported because a live trace has their question, contexts and answer
    (``identical``; each appended to ``identical`` as (its id, the live trace's id) when a
    list is given)."""
    keys = ("queries", "chunks", "runs", "rankings", "traces", "unchanged", "identical", "positional")
    counts = dict.fromkeys(keys, 0)

    def texts(key: str, result: dict[str, int]) -> None:
        counts[key] += result["added"] + result["filled"]
        counts["unchanged"] += result["unchanged"]

    with store.write():
        # the queries of the traces imported and of the rankings: none for a trace that is not
        # imported (identical to a live one) and ranks nothing (L4)
        repeats = store.identical_traces(imp.traces) if imp.traces else {}
        used = {t["query_id"] for t in imp.traces if t["id"] not in repeats}
        used.update(qid for rankings in imp.runs.values() for qid in rankings)
        queries = {qid: text for qid, text in imp.queries.items() if qid in used}
        if queries:
            texts("queries", store.import_queries(queries))
        if imp.chunks:
            texts("chunks", store.import_corpus(imp.chunks))
        for (system, stage), rankings in sorted(imp.runs.items()):
            name = f"{run_prefix}{system}:{stage}"
            run, positional = _run(rankings, name)
            run.path = imp.path
            ranked = store.import_run(run, name, stage)
            counts["runs"] += ranked["runs"]
            counts["rankings"] += ranked["rankings"]
            counts["unchanged"] += ranked["unchanged"]
            counts["positional"] += positional
        if imp.traces:
            result = store.import_traces(imp.traces, identical)
            counts["traces"] += result["traces"]
            counts["unchanged"] += result["unchanged"]
            counts["identical"] += result["identical"]
    return counts


def _run(rankings: dict[str, list[tuple[str, float | None]]], name: str) -> tuple[Run, int]:
    """A store Run that keeps each ranking's order: the source's scores where they
    strictly fall with rank, else scores n..1 (the store orders by score, ties by
    chunk id). Returns the run and how many rankings got positional scores."""
    q: list[str] = []
    d: list[str] = []
    s: list[float] = []
    positional = 0
    empty = []
    for query_id, ranking in rankings.items():
        if not ranking:
            empty.append(query_id)
            continue
        scores = [score for _, score in ranking if score is not None]
        if len(scores) == len(ranking) and all(a > b for a, b in zip(scores, scores[1:])):
            use = [float(x) for x in scores]
        else:
            use = [float(len(ranking) - i) for i in range(len(ranking))]
            positional += 1
        q.extend([query_id] * len(ranking))
        d.extend(chunk_id for chunk_id, _ in ranking)
        s.extend(use)
    table = pa.table(
        {"q": pa.array(q, pa.string()), "d": pa.array(d, pa.string()), "s": pa.array(s, pa.float64())}
    )
    return Run(table=table, name=name, empty_queries=empty), positional
