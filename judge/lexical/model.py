"""The offline judge's model: :class:`LexicalJudge` (fit, predict, fingerprint) and its cross-validation.

Model: :data:`FEATURES` standardised (``StandardScaler``), then ``model="logistic"`` (the default):
``LogisticRegression`` (lbfgs, multinomial, C = 1, ``class_weight="balanced"``); or
``model="ridge"``: ``Ridge`` regression on the grade (alpha = 1) rounded to the nearest grade seen
in training (ties to the lower). Settings: :data:`MODELS`.

Contract: ``fit`` refuses (:class:`NotEnoughLabels`) fewer than :data:`MIN_LABELS` labels or fewer
than 2 distinct grades; ``predict`` returns only grades seen in training, from the features of the
training texts' reference statistics, so the grade of an item does not depend on which other items
are graded in the same call. The fingerprint is sha256 over the features version, the model and its
settings, the rubric and its scale, the seed, scikit-learn's version and the training data's digest
(DESIGN principle 5: a judge is an instrument).

Cross-validation (:func:`cross_validate`): out-of-fold grades, each fold's judge fitted on its
training part only, and their agreement with people (:func:`judge.lexical.agreement.agreement`).
Why logistic is the default, and the agreement measured on the demo and on synthetic labels:
docs/lexical.md.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Sequence
from typing import Any

import numpy as np
import sklearn
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.model_selection import KFold, StratifiedKFold
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import StandardScaler

from annotation.errors import DenominatorError
from annotation.rubrics import Rubric, get_rubric
from judge.lexical.agreement import Agreement, agreement
from judge.lexical.features import BM25_B, BM25_K1, FEATURES, FEATURES_VERSION, fit_stats, pair_features

__all__ = [
    "MIN_LABELS",
    "MODELS",
    "DEFAULT_MODEL",
    "RUBRIC_KINDS",
    "NotEnoughLabels",
    "NotFitted",
    "LexicalJudge",
    "CrossValidation",
    "text_rubric",
    "cross_validate",
]

MIN_LABELS = 8
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


class NotEnoughLabels(DenominatorError, ValueError):
    """Too few human labels, or too few distinct grades, to fit or cross-validate the judge."""


class NotFitted(DenominatorError, RuntimeError):
    """A LexicalJudge used before :meth:`LexicalJudge.fit`."""


class CrossValidation(Agreement):
    """:func:`cross_validate`'s result (a plain dict: what ``python -m judge fit-lexical`` reads and
    the offline judge's report holds): the settings, the agreement of the out-of-fold grades with
    people (:class:`judge.lexical.agreement.Agreement`'s keys), the grades themselves."""

    rubric: str
    model: str
    features_version: str
    seed: int
    folds: int
    splitter: str  # "stratified" or "kfold"
    class_counts: dict[int, int]  # grade -> human labels, every grade of the scale
    truth: list[int]  # the human grades, in the order given
    predictions: list[int]  # the out-of-fold grades


def text_rubric(rubric: str) -> Rubric:
    """The rubric named ``rubric`` if the lexical judge grades it (one of :data:`RUBRIC_KINDS`);
    else ValueError (:func:`annotation.rubrics.get_rubric`'s for an unknown name)."""
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
        scale = text_rubric(rubric)
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
        a = [text or "" for text in a_texts]
        b = [text or "" for text in b_texts]
        stats = fit_stats(a, b)
        x = pair_features(a, b, stats)
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
            "digest": _training_digest(a, b, y, item_ids),
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
        """The judge's settings as the store registers them: fingerprint, features, model, training."""
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
            # the training rows' digest: a correction of a grade on the same items is a new version too
            "trained_on_sha": state["digest"],
        }


# ---------------------------------------------------------------- cross-validation


def cross_validate(
    a_texts: Sequence[str | None],
    b_texts: Sequence[str | None],
    grades: Sequence[int],
    rubric: str,
    seed: int = 0,
    folds: int = 5,
    model: str = DEFAULT_MODEL,
) -> CrossValidation:
    """Out-of-fold grades and their agreement with people.

    Folds: min(folds, n); stratified (shuffled, seeded) when every grade has at
    least that many labels, else plain shuffled, seeded KFold. Each fold's
    judge sees only its training part (features' reference statistics
    included); a training part with one grade only predicts that grade.
    Refuses what :meth:`LexicalJudge.fit` refuses."""
    scale = text_rubric(rubric)
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
