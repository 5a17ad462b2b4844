"""The offline judge: text features and a scikit-learn model fitted on the store's human labels.

No network, no download, deterministic for a seed. It grades what people grade
(relevance of a chunk to a query, 0-3; faithfulness of an answer to the
contexts shown, 0-2) from lexical features alone. It is the baseline an LLM
judge must beat, and the judge the demo uses when no endpoint is configured.
Like every judge it is an instrument (DESIGN principle 5): its
:attr:`LexicalJudge.fingerprint` names the features, the model and its
settings, the rubric, the seed and the labels it was fitted on.

Features
--------
Each item is a pair of texts (a, b): relevance (query, chunk); faithfulness
(answer, the trace's contexts joined with newlines). Tokens are made as in
``annotation/baseline.py``: lower case, runs of two or more word characters
(scikit-learn's pattern ``(?u)\\b\\w\\w+\\b``), bm25s's English stopwords
removed, no stemmer. A, B are the sets of distinct tokens of a and b.
:data:`FEATURES` (version :data:`FEATURES_VERSION`), in order:

``bm25``
    Lucene's BM25 score of b for a's tokens (each occurrence counts, as in
    bm25s): sum over t of ln(1 + (N - df_t + 0.5) / (df_t + 0.5)) * tf /
    (tf + k1 * (1 - b + b * |b| / avgdl)), k1 = 1.5, b = 0.75, where N, df_t and
    avgdl come from the reference b-texts (see *Reference statistics*).
``tfidf_cosine``
    Cosine similarity of the TF-IDF vectors of a and b (scikit-learn's
    ``TfidfVectorizer`` on the same tokens, smoothed idf, l2 norm), fitted on
    the reference a- and b-texts.
``a_coverage``
    |A & B| / |A|: share of a's distinct tokens found in b (0 when a has none).
    For faithfulness this is the share of the answer's content words that the
    contexts hold.
``b_coverage``
    |A & B| / |B| (0 when b has no token).
``jaccard``
    |A & B| / |A | B| (0 when both are empty).
``log_len_a``, ``log_len_b``
    ln(1 + number of tokens) of a and of b.
``min_sentence_coverage``
    The lowest ``a_coverage`` over a's sentences (split after . ! ? ; and at
    line breaks; sentences without a token ignored; 0 when a has no token): an
    answer with one unsupported sentence among supported ones shows here,
    where the whole answer's coverage hides it.
``number_support``
    Share of a's distinct numbers that b holds (1 when a has no number). A
    number is a run of digits with an optional decimal part and an optional
    ``%`` ("13%", "2.5", "1,000" read as "1000"); "13%" is supported only by
    "13%", a bare "13" by "13" or "13%". Unsupported numbers are a strong sign
    of an unfaithful answer.
``unsupported_numbers``
    ln(1 + count of a's distinct numbers that b does not hold).

Reference statistics
--------------------
BM25's N, df and avgdl and the TF-IDF vocabulary and idf come from reference
texts: by default the texts of the call (:func:`pair_features` without
``stats``). A fitted judge keeps the statistics of its training texts and
uses them for every prediction, so the grade of an item does not depend on
which other items are graded in the same call.

Model
-----
``StandardScaler`` then ``LogisticRegression`` (lbfgs, multinomial, C = 1,
``class_weight="balanced"``): ``model="logistic"``, the default. The
alternative ``model="ridge"`` is a ``Ridge`` regression on the grade
(alpha = 1) rounded to the nearest grade seen in training. Cross-validated
(5 folds, mean over seeds 0-4; accuracy / kappa / quadratic kappa):

===========================================  ==================  ==================
labels                                       logistic            ridge
===========================================  ==================  ==================
demo relevance: cat and dan, top 10 of two   0.58 / 0.22 / 0.51  0.52 / 0.15 / 0.51
queries (20 items, 15 of them 0)
demo faithfulness: cat, 16 traces (0 or 2)   1.00 / 1.00 / 1.00  1.00 / 1.00 / 1.00
demo, all 40 pooled chunks graded as the     0.53 / 0.31 / 0.58  0.49 / 0.25 / 0.58
worked example says (22 of them 0)
the 18 pooled chunks the worked example      0.53 / 0.31 / 0.50  0.61 / 0.41 / 0.61
grades (1-3, no 0)
synthetic, 200 pairs, 4 grades, noisy        0.83 / 0.77 / 0.93  0.83 / 0.78 / 0.93
synthetic, 4 grades, mostly 0                0.90 / 0.83 / 0.96  0.93 / 0.87 / 0.97
===========================================  ==================  ==================

The logistic model is the default because it does better on the demo's
relevance labels, which look like real pooled labels (many 0s, few 3s):
more grades exactly right and a higher unweighted kappa, the same quadratic
kappa. Ridge does better on the 18 labels without a 0 and a little better
on the synthetic sets. A classifier also never predicts a grade it has not
seen, its balanced class weights keep the rare top grades from being
swamped, and its class probabilities are there if a later step needs them.

Agreement
---------
:func:`cross_validate` gives out-of-fold predictions and their agreement with
people: accuracy, Cohen's kappa unweighted and quadratic-weighted (the
weights use the grades' distances on the whole scale, so a grade nobody
used does not shrink them). Kappa is None, with ``undefined_reason``, when
the human grades hold one value only (DESIGN principle 2: undefined is not
zero).
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import sklearn
from bm25s.stopwords import STOPWORDS_EN
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.metrics import cohen_kappa_score
from sklearn.model_selection import KFold, StratifiedKFold
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import StandardScaler

from annotation.rubrics import Rubric, get_rubric
from annotation.store import Store, aggregate_grades

__all__ = [
    "FEATURES_VERSION",
    "FEATURES",
    "MIN_LABELS",
    "MODELS",
    "RUBRIC_KINDS",
    "NotEnoughLabels",
    "NotFitted",
    "LexicalStats",
    "LexicalJudge",
    "tokenize",
    "numbers",
    "fit_stats",
    "pair_features",
    "agreement",
    "cross_validate",
    "training_data",
    "item_texts",
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
MIN_LABELS = 8
BM25_K1 = 1.5
BM25_B = 0.75
# the item kind each rubric grades; preference (two answers) is not a pair of texts to compare
RUBRIC_KINDS = {"relevance": "chunk", "faithfulness": "trace"}
MODELS = {
    "logistic": {
        "estimator": "sklearn.linear_model.LogisticRegression",
        "scaler": "sklearn.preprocessing.StandardScaler",
        "C": 1.0,
        "class_weight": "balanced",
        "solver": "lbfgs",
        "max_iter": 1000,
    },
    "ridge": {
        "estimator": "sklearn.linear_model.Ridge",
        "scaler": "sklearn.preprocessing.StandardScaler",
        "alpha": 1.0,
        "decode": "round to the nearest grade seen in training (ties to the lower)",
    },
}
DEFAULT_MODEL = "logistic"

_TOKEN = re.compile(r"(?u)\b\w\w+\b")
_STOPWORDS = frozenset(STOPWORDS_EN)
_SENTENCE_END = re.compile(r"(?<=[.!?;])\s+|\n+")
_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}(?!\d))")
_NUMBER = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)(?!\.?\d)(\s?%)?")


class NotEnoughLabels(ValueError):
    """Too few human labels, or too few distinct grades, to fit or cross-validate the judge."""


class NotFitted(RuntimeError):
    """A LexicalJudge used before :meth:`LexicalJudge.fit`."""


# ---------------------------------------------------------------- features


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
        df = self.df.get(token, 0)
        return math.log(1.0 + (self.n_docs - df + 0.5) / (df + 0.5))


def fit_stats(a_texts: Sequence[str | None], b_texts: Sequence[str | None]) -> LexicalStats:
    """Reference statistics of these texts (see the module's *Reference statistics*)."""
    b_tokens = [tokenize(b) for b in b_texts]
    df: Counter[str] = Counter()
    for tokens in b_tokens:
        df.update(set(tokens))
    n_docs = len(b_tokens)
    avgdl = sum(map(len, b_tokens)) / n_docs if n_docs else 0.0
    texts = [t or "" for t in [*a_texts, *b_texts]]
    tfidf: TfidfVectorizer | None = TfidfVectorizer(analyzer=tokenize, dtype=np.float64)
    if any(tokenize(t) for t in texts):
        tfidf.fit(texts)
    else:
        tfidf = None  # no vocabulary: the cosine is 0 for every pair
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
    a_texts = [a or "" for a in a_texts]
    b_texts = [b or "" for b in b_texts]
    if stats is None:
        stats = fit_stats(a_texts, b_texts)
    out = np.zeros((len(a_texts), len(FEATURES)), dtype=np.float64)
    if not a_texts:
        return out
    if stats.tfidf is not None:
        va = stats.tfidf.transform(a_texts)
        vb = stats.tfidf.transform(b_texts)
        cosine = np.asarray(va.multiply(vb).sum(axis=1)).ravel()  # rows are l2-normalised
    else:
        cosine = np.zeros(len(a_texts))
    for i, (a, b) in enumerate(zip(a_texts, b_texts)):
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


# ---------------------------------------------------------------- model


def _text_rubric(rubric: str) -> Rubric:
    scale = get_rubric(rubric)
    if scale.name not in RUBRIC_KINDS:
        raise ValueError(
            f"the lexical judge grades {' and '.join(RUBRIC_KINDS)}, not {scale.name!r} "
            "(a preference compares two answers, not a text with its evidence)"
        )
    return scale


def _check_grades(grades: Sequence[int], scale: Rubric) -> np.ndarray:
    for i, g in enumerate(grades):
        try:
            scale.check(int(g) if isinstance(g, np.integer) else g)
        except ValueError as exc:
            raise ValueError(f"grade {i}: {exc}") from None
    return np.asarray([int(g) for g in grades], dtype=np.int64)


def _class_counts(y: np.ndarray, scale: Rubric) -> dict[int, int]:
    return {g: int(np.sum(y == g)) for g in sorted(scale.scale)}


def _require_enough(y: np.ndarray, scale: Rubric) -> None:
    seen = sorted(set(y.tolist()))
    if len(y) >= MIN_LABELS and len(seen) >= 2:
        return
    counts = ", ".join(f"{g}: {n}" for g, n in _class_counts(y, scale).items() if n)
    raise NotEnoughLabels(
        f"found {len(y)} {scale.name} label{'s' if len(y) != 1 else ''}"
        + (f" (grade {counts})" if counts else "")
        + f"; the lexical judge needs at least {MIN_LABELS} labels with at least 2 distinct grades"
        + f" of {', '.join(map(str, sorted(scale.scale)))}"
        + (f" (it found {len(seen)})" if len(seen) < 2 else "")
    )


def _training_digest(
    a_texts: Sequence[str], b_texts: Sequence[str], y: np.ndarray, item_ids: Sequence[Any] | None
) -> str:
    """sha256 over the sorted (item id, sha256 of a, sha256 of b, grade) rows."""
    ids = list(item_ids) if item_ids is not None else [None] * len(y)
    rows = sorted(
        json.dumps(
            [
                None if i is None else str(i),
                hashlib.sha256(a.encode()).hexdigest(),
                hashlib.sha256(b.encode()).hexdigest(),
                int(g),
            ]
        )
        for i, a, b, g in zip(ids, a_texts, b_texts, y)
    )
    return hashlib.sha256("\n".join(rows).encode()).hexdigest()


class LexicalJudge:
    """Grades (a, b) text pairs on a rubric's scale from :data:`FEATURES`.

    ``fit`` refuses (:class:`NotEnoughLabels`) fewer than :data:`MIN_LABELS`
    labels or fewer than 2 distinct grades; ``predict`` only ever returns
    grades seen in training, so always values on the scale."""

    def __init__(self, model: str = DEFAULT_MODEL) -> None:
        if model not in MODELS:
            raise ValueError(f"model {model!r}; expected one of {', '.join(MODELS)}")
        self.model = model
        self._fitted: dict[str, Any] | None = None

    # fit ------------------------------------------------------------

    def fit(
        self,
        a_texts: Sequence[str | None],
        b_texts: Sequence[str | None],
        grades: Sequence[int],
        rubric: str,
        seed: int = 0,
        item_ids: Sequence[Any] | None = None,
    ) -> LexicalJudge:
        """Fit on human grades; ``item_ids`` (one per pair) name the training
        items in the fingerprint (texts are always part of it)."""
        scale = _text_rubric(rubric)
        y = _check_grades(grades, scale)
        if not (len(a_texts) == len(b_texts) == len(y)):
            raise ValueError(
                f"{len(a_texts)} a-texts, {len(b_texts)} b-texts and {len(y)} grades; expected as many of each"
            )
        if item_ids is not None and len(item_ids) != len(y):
            raise ValueError(f"{len(item_ids)} item ids for {len(y)} grades; expected one per grade")
        _require_enough(y, scale)
        return self._fit(a_texts, b_texts, y, scale, seed, item_ids)

    def _fit(
        self,
        a_texts: Sequence[str | None],
        b_texts: Sequence[str | None],
        y: np.ndarray,
        scale: Rubric,
        seed: int,
        item_ids: Sequence[Any] | None = None,
    ) -> LexicalJudge:
        """Fit without the minimum-size check (cross-validation folds); one
        grade only gives a constant judge."""
        a_texts = [a or "" for a in a_texts]
        b_texts = [b or "" for b in b_texts]
        stats = fit_stats(a_texts, b_texts)
        x = pair_features(a_texts, b_texts, stats)
        seen = np.unique(y)
        pipeline: Pipeline | None = None
        if len(seen) >= 2:
            pipeline = self._pipeline(seed)
            pipeline.fit(x, y.astype(np.float64) if self.model == "ridge" else y)
        self._fitted = {
            "rubric": scale,
            "seed": int(seed),
            "stats": stats,
            "pipeline": pipeline,
            "seen": seen,
            "n": int(len(y)),
            "class_counts": _class_counts(y, scale),
            "digest": _training_digest(a_texts, b_texts, y, item_ids),
        }
        return self

    def _pipeline(self, seed: int) -> Pipeline:
        params = MODELS[self.model]
        if self.model == "logistic":
            estimator: Any = LogisticRegression(
                C=params["C"],
                class_weight=params["class_weight"],
                solver=params["solver"],
                max_iter=params["max_iter"],
                random_state=seed,
            )
        else:
            estimator = Ridge(alpha=params["alpha"], random_state=seed)
        return Pipeline([("scale", StandardScaler()), ("model", estimator)])

    # predict --------------------------------------------------------

    def _state(self) -> dict[str, Any]:
        if self._fitted is None:
            raise NotFitted(
                "this LexicalJudge is not fitted; call fit(a_texts, b_texts, grades, rubric) first"
            )
        return self._fitted

    def predict(self, a_texts: Sequence[str | None], b_texts: Sequence[str | None]) -> np.ndarray:
        """One grade per pair, each a grade seen in training."""
        state = self._state()
        if len(a_texts) != len(b_texts):
            raise ValueError(
                f"{len(a_texts)} a-texts but {len(b_texts)} b-texts; expected one of each per pair"
            )
        seen: np.ndarray = state["seen"]
        if len(a_texts) == 0:
            return np.zeros(0, dtype=np.int64)
        if state["pipeline"] is None:
            return np.full(len(a_texts), int(seen[0]), dtype=np.int64)
        x = pair_features(a_texts, b_texts, state["stats"])
        raw = state["pipeline"].predict(x)
        if self.model == "ridge":  # nearest seen grade; argmin takes the lower on a tie
            raw = seen[np.argmin(np.abs(np.asarray(raw)[:, None] - seen[None, :]), axis=1)]
        return np.asarray(raw, dtype=np.int64)

    # identity -------------------------------------------------------

    @property
    def fingerprint(self) -> str:
        """sha256 of the features version, model and settings, rubric and scale,
        seed, scikit-learn version and the training data's digest."""
        state = self._state()
        scale: Rubric = state["rubric"]
        payload = {
            "features_version": FEATURES_VERSION,
            "features": list(FEATURES),
            "model": self.model,
            "hyperparameters": MODELS[self.model],
            "bm25": {"k1": BM25_K1, "b": BM25_B},
            "rubric": scale.name,
            "scale": {str(k): v for k, v in sorted(scale.scale.items())},
            "seed": state["seed"],
            "sklearn": sklearn.__version__,
            "training": state["digest"],
        }
        return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()

    def describe(self) -> dict[str, Any]:
        state = self._state()
        return {
            "kind": "lexical",
            "fingerprint": self.fingerprint,
            "features_version": FEATURES_VERSION,
            "features": list(FEATURES),
            "model": self.model,
            "hyperparameters": dict(MODELS[self.model]),
            "sklearn": sklearn.__version__,
            "rubric": state["rubric"].name,
            "seed": state["seed"],
            "n_labels": state["n"],
            "class_counts": dict(state["class_counts"]),
            "grades_predicted": [int(g) for g in state["seen"]],
        }


# ---------------------------------------------------------------- agreement


def agreement(truth: Sequence[int], predicted: Sequence[int], rubric: str) -> dict[str, Any]:
    """Accuracy and Cohen's kappa (unweighted, quadratic) of predictions
    against human grades. Kappa is None with ``undefined_reason`` when the
    human grades hold fewer than two values."""
    scale = get_rubric(rubric)
    t = [int(g) for g in truth]
    p = [int(g) for g in predicted]
    if len(t) != len(p):
        raise ValueError(f"{len(t)} human grades but {len(p)} predictions; expected one of each")
    out: dict[str, Any] = {
        "n": len(t),
        "accuracy": (sum(a == b for a, b in zip(t, p)) / len(t)) if t else None,
        "kappa": None,
        "kappa_quadratic": None,
        "undefined_reason": None,
    }
    classes = sorted(set(t))
    if not t:
        out["undefined_reason"] = "no items: kappa needs at least two human grades"
        return out
    if len(classes) < 2:
        out["undefined_reason"] = (
            f"the human grades hold one value only ({classes[0]}, n={len(t)}): "
            "kappa needs at least two distinct grades"
        )
        return out
    labels = sorted(scale.scale)  # weights by distance on the whole scale
    kappa = float(cohen_kappa_score(t, p, labels=labels))
    quadratic = float(cohen_kappa_score(t, p, labels=labels, weights="quadratic"))
    if not (math.isfinite(kappa) and math.isfinite(quadratic)):
        out["undefined_reason"] = "chance agreement is complete: kappa is 0/0"
        return out
    out["kappa"], out["kappa_quadratic"] = kappa, quadratic
    return out


def cross_validate(
    a_texts: Sequence[str | None],
    b_texts: Sequence[str | None],
    grades: Sequence[int],
    rubric: str,
    seed: int = 0,
    folds: int = 5,
    model: str = DEFAULT_MODEL,
) -> dict[str, Any]:
    """Out-of-fold grades and their agreement with people.

    Folds: min(folds, n); stratified (shuffled, seeded) when every grade has at
    least that many labels, else plain shuffled, seeded KFold. Each fold's
    judge sees only its training part (features' reference statistics
    included); a training part with one grade only predicts that grade.
    Refuses what :meth:`LexicalJudge.fit` refuses."""
    scale = _text_rubric(rubric)
    y = _check_grades(grades, scale)
    if not (len(a_texts) == len(b_texts) == len(y)):
        raise ValueError(
            f"{len(a_texts)} a-texts, {len(b_texts)} b-texts and {len(y)} grades; expected as many of each"
        )
    if folds < 2:
        raise ValueError(f"folds {folds}; expected an integer >= 2")
    _require_enough(y, scale)
    a = [t or "" for t in a_texts]
    b = [t or "" for t in b_texts]
    k = min(folds, len(y))
    counts = Counter(y.tolist())
    if min(counts.values()) >= k:
        splitter: Any = StratifiedKFold(n_splits=k, shuffle=True, random_state=seed)
        kind = "stratified"
    else:
        splitter = KFold(n_splits=k, shuffle=True, random_state=seed)
        kind = "kfold"
    oof = np.full(len(y), -1, dtype=np.int64)
    for train, test in splitter.split(np.zeros(len(y)), y):
        judge = LexicalJudge(model)._fit([a[i] for i in train], [b[i] for i in train], y[train], scale, seed)
        oof[test] = judge.predict([a[i] for i in test], [b[i] for i in test])
    result = agreement(y.tolist(), oof.tolist(), scale.name)
    return {
        "rubric": scale.name,
        "model": model,
        "features_version": FEATURES_VERSION,
        "seed": seed,
        "folds": k,
        "splitter": kind,
        **result,
        "class_counts": _class_counts(y, scale),
        "truth": y.tolist(),
        "predictions": oof.tolist(),
    }


# ---------------------------------------------------------------- store glue (read-only)


def _kind(rubric: str) -> str:
    return RUBRIC_KINDS[_text_rubric(rubric).name]


def _texts(store: Store, kind: str) -> dict[int, tuple[str, str]]:
    """item id -> (a, b) for every item of ``kind`` with text on both sides."""
    out: dict[int, tuple[str, str]] = {}
    if kind == "chunk":
        for item_id, a, b in store.chunk_item_texts():
            if a and a.strip() and b and b.strip():
                out[int(item_id)] = (a, b)
        return out
    chunk_text = store.chunks_with_text()
    for item_id, answer, contexts in store.trace_item_answers():
        # a context naming a chunk shows the chunk's text; any other shows itself (as the labelling page)
        shown = [chunk_text.get(c) or c for c in json.loads(contexts or "[]") if isinstance(c, str)]
        joined = "\n".join(s for s in shown if s.strip())
        if answer and answer.strip() and joined:
            out[int(item_id)] = (answer, joined)
    return out


def training_data(store: Store, rubric: str) -> list[tuple[int, str, str, int]]:
    """(item id, a, b, grade) per labelled item of the rubric's kind, by item id.

    Per annotator the current label counts: the newest row of that rubric on
    the item; an annotator whose newest row is a retraction (NULL) is left
    out. The grade is the median (lower middle value) of the annotators'
    current labels. Items without text on either side are skipped."""
    name = _text_rubric(rubric).name
    kind = RUBRIC_KINDS[name]
    rows = store.newest_rubric_values(kind, name)
    values: dict[int, list[int]] = {}
    for item_id, value in rows:
        if value is not None:
            values.setdefault(int(item_id), []).append(int(value))
    texts = _texts(store, kind)
    return [
        (item_id, *texts[item_id], aggregate_grades(grades, "median"))
        for item_id, grades in sorted(values.items())
        if item_id in texts
    ]


def item_texts(
    store: Store, rubric: str, item_ids: Iterable[int] | None = None
) -> list[tuple[int, str, str]]:
    """(item id, a, b) of every item of the rubric's kind (or of ``item_ids``),
    by item id; items without text on either side are skipped (nothing to grade).
    An id that is not an item of that kind is an error."""
    kind = _kind(rubric)
    texts = _texts(store, kind)
    if item_ids is None:
        return [(i, a, b) for i, (a, b) in texts.items()]
    wanted = sorted({int(i) for i in item_ids})
    if wanted:
        known = store.known_items(kind, wanted)
        unknown = [i for i in wanted if i not in known]
        if unknown:
            shown = ", ".join(map(str, unknown[:10])) + (", ..." if len(unknown) > 10 else "")
            raise ValueError(f"no {kind} item with id {shown} ({rubric} grades {kind} items)")
    return [(i, *texts[i]) for i in wanted if i in texts]
