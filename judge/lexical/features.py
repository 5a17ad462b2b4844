"""The offline judge's text features: tokens, reference statistics and the feature matrix.

Each item is a pair of texts (a, b): relevance (query, chunk); faithfulness (answer, the trace's
contexts joined with newlines). Tokens are made as in ``annotation/baseline.py``: lower case, runs
of two or more word characters (scikit-learn's pattern ``(?u)\\b\\w\\w+\\b``), bm25s's English
stopwords removed, no stemmer. A, B are the sets of distinct tokens of a and b.
:data:`FEATURES` (version :data:`FEATURES_VERSION`), in order:

``bm25``
    Lucene's BM25 score of b for a's tokens (each occurrence counts, as in bm25s): sum over t of
    ln(1 + (N - df_t + 0.5) / (df_t + 0.5)) * tf / (tf + k1 * (1 - b + b * |b| / avgdl)),
    k1 = 1.5, b = 0.75, where N, df_t and avgdl come from the reference b-texts.
``tfidf_cosine``
    Cosine similarity of the TF-IDF vectors of a and b (scikit-learn's ``TfidfVectorizer`` on the
    same tokens, smoothed idf, l2 norm), fitted on the reference a- and b-texts.
``a_coverage``
    |A & B| / |A|: share of a's distinct tokens found in b (0 when a has none).
``b_coverage``
    |A & B| / |B| (0 when b has no token).
``jaccard``
    |A & B| / |A | B| (0 when both are empty).
``log_len_a``, ``log_len_b``
    ln(1 + number of tokens) of a and of b.
``min_sentence_coverage``
    The lowest ``a_coverage`` over a's sentences (split after . ! ? ; and at line breaks;
    sentences without a token ignored; 0 when a has no token).
``number_support``
    Share of a's distinct numbers that b holds (1 when a has no number). A number is a run of
    digits with an optional decimal part and an optional ``%`` ("13%", "2.5", "1,000" read as
    "1000"); "13%" is supported only by "13%", a bare "13" by "13" or "13%".
``unsupported_numbers``
    ln(1 + count of a's distinct numbers that b does not hold).

Reference statistics (:class:`LexicalStats`): BM25's N, df and avgdl and the TF-IDF vocabulary
and idf come from reference texts, by default the texts of the call (:func:`pair_features`
without ``stats``). Why each feature, and why a fitted judge keeps its training texts'
statistics: docs/lexical.md.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
from bm25s.stopwords import STOPWORDS_EN
from sklearn.feature_extraction.text import TfidfVectorizer

__all__ = [
    "FEATURES_VERSION",
    "FEATURES",
    "BM25_K1",
    "BM25_B",
    "LexicalStats",
    "tokenize",
    "numbers",
    "fit_stats",
    "pair_features",
]

FEATURES_VERSION = "lexical-v1"
FEATURES = (
    "bm25",
    "tfidf_cosine",
    "a_coverage",
    "b_coverage",
    "jaccard",
    "log_len_a",
    "log_len_b",
    "min_sentence_coverage",
    "number_support",
    "unsupported_numbers",
)
BM25_K1 = 1.5
BM25_B = 0.75

_TOKEN = re.compile(r"(?u)\b\w\w+\b")
_STOPWORDS = frozenset(STOPWORDS_EN)
_SENTENCE_END = re.compile(r"(?<=[.!?;])\s+|\n+")
_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}(?!\d))")
_NUMBER = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)(?!\.?\d)(\s?%)?")


def tokenize(text: str | None) -> list[str]:
    """Tokens as ``annotation/baseline.py`` makes them (bm25s.tokenize with
    lower case, ``(?u)\\b\\w\\w+\\b``, English stopwords, no stemmer)."""
    return [t for t in _TOKEN.findall((text or "").lower()) if t not in _STOPWORDS]


def numbers(text: str | None) -> set[str]:
    """The distinct numbers of a text: "13%", "2.5", "1000" (from "1,000")."""
    found = set()
    for value, percent in _NUMBER.findall(_THOUSANDS.sub("", text or "")):
        found.add(value + ("%" if percent else ""))
    return found


def _sentences(text: str) -> list[str]:
    return [s for s in _SENTENCE_END.split(text or "") if s.strip()]


@dataclass(frozen=True)
class LexicalStats:
    """Reference statistics: BM25's document frequencies over the b-texts, and
    a TF-IDF vectorizer fitted on the a- and b-texts (None if they hold no token)."""

    n_docs: int
    avgdl: float
    df: dict[str, int]
    tfidf: TfidfVectorizer | None

    def idf(self, token: str) -> float:
        """BM25's idf: ln(1 + (N - df + 0.5) / (df + 0.5))."""
        df = self.df.get(token, 0)
        return math.log(1.0 + (self.n_docs - df + 0.5) / (df + 0.5))


def fit_stats(a_texts: Sequence[str | None], b_texts: Sequence[str | None]) -> LexicalStats:
    """Reference statistics of these texts: N, df and avgdl over the b-texts, TF-IDF over both."""
    b_tokens = [tokenize(b) for b in b_texts]
    df: Counter[str] = Counter()
    for tokens in b_tokens:
        df.update(set(tokens))
    n_docs = len(b_tokens)
    avgdl = sum(map(len, b_tokens)) / n_docs if n_docs else 0.0
    texts = [t or "" for t in [*a_texts, *b_texts]]
    tfidf: TfidfVectorizer | None = None  # no vocabulary: the cosine is 0 for every pair
    if any(tokenize(t) for t in texts):
        tfidf = TfidfVectorizer(analyzer=tokenize, dtype=np.float64)
        tfidf.fit(texts)
    return LexicalStats(n_docs=n_docs, avgdl=avgdl, df=dict(df), tfidf=tfidf)


def _bm25(a_tokens: list[str], b_tokens: list[str], stats: LexicalStats) -> float:
    if not a_tokens or not b_tokens:
        return 0.0
    tf = Counter(b_tokens)
    avgdl = stats.avgdl if stats.avgdl > 0 else float(len(b_tokens))
    norm = BM25_K1 * (1.0 - BM25_B + BM25_B * len(b_tokens) / avgdl)
    score = 0.0
    for token in a_tokens:
        f = tf.get(token, 0)
        if f:
            score += stats.idf(token) * f / (f + norm)
    return score


def _coverage(tokens: Iterable[str], present: set[str]) -> float:
    distinct = set(tokens)
    return len(distinct & present) / len(distinct) if distinct else 0.0


def pair_features(
    a_texts: Sequence[str | None], b_texts: Sequence[str | None], stats: LexicalStats | None = None
) -> np.ndarray:
    """The feature matrix, one row per pair (a_texts[i], b_texts[i]), columns
    :data:`FEATURES`. ``stats`` default to :func:`fit_stats` of these texts."""
    if len(a_texts) != len(b_texts):
        raise ValueError(f"{len(a_texts)} a-texts but {len(b_texts)} b-texts; expected one of each per pair")
    texts_a = [a or "" for a in a_texts]
    texts_b = [b or "" for b in b_texts]
    if stats is None:
        stats = fit_stats(texts_a, texts_b)
    out = np.zeros((len(texts_a), len(FEATURES)), dtype=np.float64)
    if not texts_a:
        return out
    if stats.tfidf is not None:
        va = stats.tfidf.transform(texts_a)
        vb = stats.tfidf.transform(texts_b)
        cosine = np.asarray(va.multiply(vb).sum(axis=1)).ravel()  # rows are l2-normalised
    else:
        cosine = np.zeros(len(texts_a))
    for i, (a, b) in enumerate(zip(texts_a, texts_b)):
        ta, tb = tokenize(a), tokenize(b)
        sa, sb = set(ta), set(tb)
        shared = len(sa & sb)
        union = len(sa | sb)
        sentence_cov = [_coverage(tokenize(s), sb) for s in _sentences(a) if tokenize(s)]
        na, nb = numbers(a), numbers(b)
        bare = {n.rstrip("%") for n in nb}
        missing = sum(1 for n in na if not (n in nb or (not n.endswith("%") and n in bare)))
        out[i] = (
            _bm25(ta, tb, stats),
            min(1.0, max(0.0, float(cosine[i]))),
            shared / len(sa) if sa else 0.0,
            shared / len(sb) if sb else 0.0,
            shared / union if union else 0.0,
            math.log1p(len(ta)),
            math.log1p(len(tb)),
            min(sentence_cov) if sentence_cov else 0.0,
            (len(na) - missing) / len(na) if na else 1.0,
            math.log1p(missing),
        )
    return out
