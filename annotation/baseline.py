"""A lexical baseline run over the stored corpus, so every pool has a second,
different system beside the user's own retriever (different systems miss
different documents, and a pool of one system flatters it).

BM25 through bm25s, Lucene's variant: score(q, d) = sum over the terms t of
q of ln(1 + (N - df_t + 0.5) / (df_t + 0.5)) * tf / (tf + k1 * (1 - b + b *
|d| / avgdl)), k1 = 1.5, b = 0.75, N chunks, df_t of them holding t. Tokens
are made the same way for chunks and queries, offline and deterministically:
lower case, runs of two or more word characters (scikit-learn's pattern),
bm25s's built-in English stopword list, no stemmer (nothing to download).

Every chunk with text is ranked, those that share no term with the query
included (score 0, as bm25s's own ``retrieve(k=...)`` returns them); the top
``depth`` are kept. The cut follows trec order: score descending,
ties by chunk id descending (bytewise), the order :class:`Run` and the store
apply, so the same store gives the same run, byte for byte.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pyarrow as pa

from annotation.choices import METHODS
from annotation.model import Run, arrow
from annotation.options import default
from annotation.store import RunCounts, Store, StoreError
from annotation.values import name_problem

__all__ = ["METHODS", "bm25_run", "add_baseline", "BM25_PARAMS", "BaselineReport"]

BM25_PARAMS = {"method": "lucene", "k1": 1.5, "b": 0.75}
_TOKENS = {"lower": True, "token_pattern": r"(?u)\b\w\w+\b", "stopwords": "en", "stemmer": None}


def _tokenize(texts: list[str]) -> list[list[str]]:
    import bm25s  # start-up: ~0.27 s that the other commands need not pay

    tokens: list[list[str]] = bm25s.tokenize(texts, return_ids=False, show_progress=False, **_TOKENS)
    return tokens


def bm25_run(chunks: Mapping[str, str], queries: Mapping[str, str], depth: int, name: str = "bm25") -> Run:
    """Per query, the top ``depth`` chunks by BM25 score (score desc, ties by id desc)."""
    import bm25s  # start-up: ~0.27 s (see above)

    if depth < 1:
        raise StoreError(f"baseline depth {depth}; expected an integer >= 1")
    problem = name_problem(name, "a run's name")  # the rule of import --run's --name too
    if problem is not None:
        raise StoreError(f"baseline: {problem}")
    ids = list(chunks)
    # numpy backends named outright: the same scores whether or not numba or scipy is installed
    index = bm25s.BM25(dtype="float64", backend="numpy", csc_backend="numpy", **BM25_PARAMS)
    index.index(_tokenize([chunks[i] for i in ids]), show_progress=False)
    # rank of each id in bytewise order: ties then break by this rank, descending
    id_rank = np.empty(len(ids), dtype=np.int64)
    id_rank[sorted(range(len(ids)), key=lambda i: ids[i].encode("utf-8"))] = np.arange(len(ids))
    keep = min(depth, len(ids))
    qids = list(queries)
    q: list[str] = []
    d: list[str] = []
    s: list[float] = []
    for qid, tokens in zip(qids, _tokenize([queries[qid] for qid in qids])):
        scores = index.get_scores_from_ids(index.get_tokens_ids(tokens))
        if keep < len(ids):  # only chunks that can reach the cut are sorted
            kth = np.partition(scores, len(ids) - keep)[len(ids) - keep]
            candidates = np.flatnonzero(scores >= kth)
        else:
            candidates = np.arange(len(ids))
        order = candidates[np.lexsort((-id_rank[candidates], -scores[candidates]))][:keep]
        q.extend([qid] * keep)
        d.extend(ids[i] for i in order)
        s.extend(float(scores[i]) for i in order)
    table = pa.table({"q": arrow(q, pa.string()), "d": arrow(d, pa.string()), "s": arrow(s, pa.float64())})
    return Run(table=table, name=name, path=describe())


def describe() -> str:
    """What made the run, kept in the run's meta."""
    import bm25s  # start-up: ~0.27 s (see above)

    return (
        f"bm25s {bm25s.__version__} ({BM25_PARAMS['method']}, k1={BM25_PARAMS['k1']}, b={BM25_PARAMS['b']}); "
        "tokens: lower case, \\w\\w+, English stopwords, no stemming"
    )


class BaselineReport(RunCounts):
    """What :func:`add_baseline` did: the run's counts (:class:`RunCounts`) and what it ranked."""

    name: str
    engine: str  # "bm25s <version>"
    source: str  # the run's path
    queries: int  # ranked for: the stored queries with text
    queries_without_text: int
    chunks: int  # ranked: the stored chunks with text
    depth: int


def add_baseline(
    store: Store,
    method: str = default("baseline_method"),
    depth: int = default("baseline_depth"),
    name: str = default("baseline_name"),
) -> BaselineReport:
    """Rank the stored chunks with text for every stored query with text; store
    the top ``depth`` as run ``name`` (stage fetch). The same store and name
    again changes nothing; a different result under a stored name is refused."""
    if method not in METHODS:
        raise StoreError(f"baseline method {method!r}; expected one of {', '.join(METHODS)}")
    if depth < 1:
        raise StoreError(f"baseline depth {depth}; expected an integer >= 1")
    problem = name_problem(name, "a run's name")  # the rule of import --run's --name too
    if problem is not None:
        raise StoreError(f"baseline: {problem}")
    # read outside the write: scoring a large corpus must not hold the write lock
    chunks = store.chunks_with_text(by_id=True)
    queries = store.queries_with_text()
    without_text = store.queries_without_text()
    if not chunks:
        raise StoreError(
            f"{store.path}: no chunks with text to rank; import a corpus (or a BEIR folder) first"
        )
    if not queries:
        raise StoreError(
            f"{store.path}: no queries with text to rank for; import queries (or a BEIR folder) first"
        )
    import bm25s  # start-up: ~0.27 s (see above)

    run = bm25_run(chunks, queries, depth, name=name)
    counts = store.import_run(run, name, stage="fetch")
    return {
        "name": name,
        "engine": f"bm25s {bm25s.__version__}",
        "source": run.path,
        "queries": len(queries),
        "queries_without_text": without_text,
        "chunks": len(chunks),
        "depth": min(depth, len(chunks)),
        **counts,
    }
