"""The offline judge: text features and a scikit-learn model fitted on the store's human labels.

No network, no download, deterministic for a seed. It grades what people grade (relevance of a
chunk to a query, 0-3; faithfulness of an answer to the contexts shown, 0-2) from lexical features
alone: the baseline an LLM judge must beat, and the judge the demo uses when no endpoint is
configured. Its :attr:`LexicalJudge.fingerprint` names the features, the model and its settings,
the rubric, the seed and the labels it was fitted on.

This module re-exports the public names of four, lowest first, each with its formulas and
contract in its docstring:

- :mod:`judge.lexical.features`: tokens, reference statistics and the feature matrix
  (:data:`FEATURES`, :func:`tokenize`, :func:`numbers`, :func:`fit_stats`, :func:`pair_features`);
- :mod:`judge.lexical.agreement`: accuracy and Cohen's kappa of grades against people's
  (:func:`agreement`, an :class:`Agreement`; the kappa is :func:`calibration.stats.kappa.cohen`);
- :mod:`judge.lexical.model`: :class:`LexicalJudge` (fit, predict, fingerprint), its errors, and
  :func:`cross_validate` (a :class:`CrossValidation`);
- :mod:`judge.lexical.data`: the texts and human grades it reads from the store
  (:func:`training_data`, :func:`item_texts`).

Why these features and this model, and the agreement measured: docs/lexical.md.
"""

from __future__ import annotations

from judge.lexical.agreement import Agreement, agreement
from judge.lexical.data import item_texts, training_data
from judge.lexical.features import (
    BM25_B,
    BM25_K1,
    FEATURES,
    FEATURES_VERSION,
    LexicalStats,
    fit_stats,
    numbers,
    pair_features,
    tokenize,
)
from judge.lexical.model import (
    DEFAULT_MODEL,
    MIN_LABELS,
    MODELS,
    RUBRIC_KINDS,
    CrossValidation,
    LexicalJudge,
    NotEnoughLabels,
    NotFitted,
    cross_validate,
    text_rubric,
)

__all__ = [
    "FEATURES_VERSION",
    "FEATURES",
    "BM25_K1",
    "BM25_B",
    "MIN_LABELS",
    "MODELS",
    "DEFAULT_MODEL",
    "RUBRIC_KINDS",
    "NotEnoughLabels",
    "NotFitted",
    "LexicalStats",
    "LexicalJudge",
    "text_rubric",
    "tokenize",
    "numbers",
    "fit_stats",
    "pair_features",
    "Agreement",
    "agreement",
    "CrossValidation",
    "cross_validate",
    "training_data",
    "item_texts",
]
