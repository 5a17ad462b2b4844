"""The Cranfield collection (shared data: 1,400 abstracts, 225 queries, every pair judged) as
the week the essay describes: one system's pool judged, a second system's run with holes.

- chunks: each document's title and abstract (``.T`` and ``.W``); queries: ``cran.qry``'s
  ``.W`` (query i of the file is query i of the qrels);
- the pool: the product's own lexical baseline (:func:`annotation.baseline.bm25_run`, BM25,
  k1 1.5, b 0.75) top ``depth`` per query, each graded from the full judgments (0 when the
  full judgments do not list it);
- the run: TF-IDF cosine (scikit-learn's ``TfidfVectorizer`` with its defaults), top 100;
- grades: Cranfield's 1 (a complete answer) .. 4 (minimum interest) become this product's
  0-3 scale as 1 -> 3, 2 -> 2, 3 -> 1, 4 -> 1 (every judged grade 1-4 is relevant, as the
  estimate's coverage test reads it); the one -1 per query, which the readme does not
  explain, is left out (not relevant).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
GRADES = {1: 3, 2: 2, 3: 1, 4: 1}


def cranfield_dir() -> Path | None:
    """``data/cranfield`` of the shared folder ($DENOMINATOR_SHARED, else ../shared); None if absent."""
    for candidate in (os.environ.get("DENOMINATOR_SHARED"), ROOT.parent / "shared"):
        if candidate and (Path(candidate) / "data" / "cranfield" / "cranqrel").exists():
            return Path(candidate) / "data" / "cranfield"
    return None


def parse(path: Path, fields: set[str]) -> list[str]:
    """The texts of an SGML-ish Cranfield file: per ``.I`` record, the lines of ``fields`` joined."""
    texts: list[list[str]] = []
    current: list[str] = []
    field = None
    for line in path.read_text().splitlines():
        line = line.rstrip("\r")
        if line.startswith(".I"):
            current = []
            texts.append(current)
            field = None
        elif line.startswith("."):
            field = line[:2]
        elif field in fields:
            current.append(line)
    return [" ".join(t).strip() for t in texts]


@dataclass
class Collection:
    chunks: dict[str, str]  # id -> title and abstract
    queries: dict[str, str]  # id -> text
    truth: dict[str, dict[str, int]]  # the full judgments, on the 0-3 scale (relevant ones only)
    pool: dict[str, dict[str, int]]  # the pool's judgments: BM25's top depth, graded from truth
    run: dict[str, list[str]]  # TF-IDF's top 100 per query


def load(folder: Path, depth: int = 10) -> Collection:
    from sklearn.feature_extraction.text import TfidfVectorizer

    from annotation.baseline import bm25_run

    docs = parse(folder / "cran.all.1400", {".T", ".W"})
    texts = parse(folder / "cran.qry", {".W"})
    chunks = {str(i + 1): text for i, text in enumerate(docs)}
    queries = {str(i + 1): text for i, text in enumerate(texts)}
    truth: dict[str, dict[str, int]] = {qid: {} for qid in queries}
    for line in (folder / "cranqrel").read_text().splitlines():
        parts = line.split()
        if len(parts) >= 3 and int(parts[2]) in GRADES:
            truth[parts[0]][parts[1]] = GRADES[int(parts[2])]
    bm25 = bm25_run(chunks, queries, depth, name="bm25").rankings()
    pool = {qid: {doc: truth[qid].get(doc, 0) for doc in bm25[qid]} for qid in queries}
    vectorizer = TfidfVectorizer()
    matrix = vectorizer.fit_transform(docs)
    scores = (vectorizer.transform(texts) @ matrix.T).toarray()
    order = np.argsort(-scores, axis=1, kind="stable")[:, :100]
    run = {qid: [str(j + 1) for j in order[i]] for i, qid in enumerate(queries)}
    return Collection(chunks=chunks, queries=queries, truth=truth, pool=pool, run=run)
