"""The offline lexical judge: features by hand, the model's guarantees,
cross-validated agreement, and the store glue (median, newest wins, retractions)."""

from __future__ import annotations

import math
import random

import bm25s
import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score

from annotation.model import Qrels
from annotation.rubrics import get_rubric
from annotation.store import Store, aggregate_grades
from denominator.demo import EXAMPLE_DIR
from judge.lexical import (
    FEATURES,
    FEATURES_VERSION,
    MIN_LABELS,
    LexicalJudge,
    NotEnoughLabels,
    NotFitted,
    agreement,
    cross_validate,
    fit_stats,
    item_texts,
    numbers,
    pair_features,
    tokenize,
    training_data,
)

COL = {name: i for i, name in enumerate(FEATURES)}


def feature(a: str, b: str, name: str) -> float:
    return float(pair_features([a], [b])[0, COL[name]])


# ---------------------------------------------------------------- features


def test_tokens_are_the_baselines() -> None:
    texts = ["The 13% moisture, of GRAIN!", "", "a b I", "Über straße 6-7 x2 in the store"]
    expected = bm25s.tokenize(
        texts,
        return_ids=False,
        show_progress=False,
        lower=True,
        token_pattern=r"(?u)\b\w\w+\b",
        stopwords="en",
        stemmer=None,
    )
    assert [tokenize(t) for t in texts] == expected
    assert tokenize(None) == []


def test_overlap_features_by_hand() -> None:
    # A = {fall, armyworm, maize}; B = {armyworm, maize, fields} ("in" is a stopword)
    a, b = "Fall armyworm maize", "armyworm in maize fields"
    row = dict(zip(FEATURES, pair_features([a], [b])[0]))
    assert row["a_coverage"] == 2 / 3
    assert row["b_coverage"] == 2 / 3
    assert row["jaccard"] == 2 / 4
    assert row["log_len_a"] == math.log(4)
    assert row["log_len_b"] == math.log(4)
    # one b-text: N = 1, df = 1, dl = avgdl = 3: two matching terms, tf 1
    idf = math.log(1 + (1 - 1 + 0.5) / (1 + 0.5))
    assert row["bm25"] == pytest.approx(2 * idf * 1 / (1 + 1.5 * (0.25 + 0.75 * 3 / 3)), rel=1e-12)
    # TF-IDF on [a, b], smoothed idf ln((1 + 2) / (1 + df)) + 1: shared terms weigh 1, the others w
    w = math.log(3 / 2) + 1
    assert row["tfidf_cosine"] == pytest.approx(2 / (2 + w * w), rel=1e-12)
    assert row["min_sentence_coverage"] == 2 / 3
    assert row["number_support"] == 1.0 and row["unsupported_numbers"] == 0.0


def test_asymmetric_coverage() -> None:
    # A = {maize, pests}, B = {maize, storage, grain}
    assert feature("maize pests maize", "maize storage grain", "a_coverage") == 1 / 2
    assert feature("maize pests maize", "maize storage grain", "b_coverage") == 1 / 3
    assert feature("maize pests maize", "maize storage grain", "jaccard") == 1 / 4


def test_bm25_is_bm25s_over_the_b_texts() -> None:
    a = ["maize grain", "cow milk cow", "poultry", "maize store dry"]
    b = ["maize grain maize", "cow milk", "maize store dry grain", "dry the grain in the store"]
    index = bm25s.BM25(dtype="float64", backend="numpy", csc_backend="numpy", method="lucene", k1=1.5, b=0.75)
    index.index([tokenize(t) for t in b], show_progress=False)
    mine = pair_features(a, b)[:, COL["bm25"]]
    for i, query in enumerate(a):
        tokens = tokenize(query)
        expected = index.get_scores(tokens)[i] if tokens else 0.0
        assert mine[i] == pytest.approx(expected, rel=1e-12)


def test_sentence_and_number_features() -> None:
    answer = "Maize needs 13% moisture. Cows need water."
    contexts = "Dry maize grain to 13% moisture."
    # sentence 1: {maize, needs, 13, moisture} has 3 of 4 in the contexts; sentence 2: none
    assert feature(answer, contexts, "a_coverage") == 3 / 7
    assert feature(answer, contexts, "min_sentence_coverage") == 0.0
    assert feature(answer, contexts, "number_support") == 1.0
    # 14% is nowhere in the contexts; 13% is
    assert feature("Dry to 14% or 13%.", contexts, "number_support") == 1 / 2
    assert feature("Dry to 14% or 13%.", contexts, "unsupported_numbers") == math.log(2)
    # a bare number is supported by the same number with %; a percentage is not supported by a bare number
    assert feature("about 13 of them", contexts, "number_support") == 1.0
    assert feature("keep 60% of it", "a cow drinks 60 litres", "number_support") == 0.0


def test_numbers() -> None:
    assert numbers("13% and 13 % and 2.5 kg, 1,000 birds, x2, v1.2.3, 32-35 C. End 7.") == {
        "13%",
        "2.5",
        "1000",
        "32",
        "35",
        "7",
    }
    assert numbers(None) == set()


def test_empty_texts_give_zeros_not_errors() -> None:
    x = pair_features(["", None, "maize"], ["maize", "grain", ""])
    assert x.shape == (3, len(FEATURES))
    assert np.all(np.isfinite(x))
    assert x[0, COL["a_coverage"]] == 0.0 and x[2, COL["bm25"]] == 0.0
    assert pair_features([], []).shape == (0, len(FEATURES))
    with pytest.raises(ValueError, match="2 a-texts but 1 b-texts"):
        pair_features(["a", "b"], ["c"])


# ---------------------------------------------------------------- data for the model

VOCAB = [f"w{i:03d}" for i in range(400)]


def synthetic(n: int, seed: int, grades: tuple[int, ...] = (0, 3)) -> tuple[list[str], list[str], list[int]]:
    """Queries of 6 words; a chunk of grade g shares round(6 g / 3) of them, the rest are random words."""
    rng = random.Random(seed)
    a, b, y = [], [], []
    for _ in range(n):
        query = rng.sample(VOCAB, 6)
        grade = rng.choice(grades)
        shared = round(6 * grade / 3)
        others = [w for w in VOCAB if w not in query]
        chunk = query[:shared] + rng.sample(others, 20 - shared)
        rng.shuffle(chunk)
        a.append(" ".join(query))
        b.append(" ".join(chunk))
        y.append(grade)
    return a, b, y


# ---------------------------------------------------------------- model


def test_the_judge_learns_overlap() -> None:
    a, b, y = synthetic(200, seed=1)
    result = cross_validate(a, b, y, "relevance", seed=0)
    assert result["n"] == 200 and result["folds"] == 5 and result["splitter"] == "stratified"
    assert result["accuracy"] >= 0.9
    assert result["kappa"] is not None and result["kappa"] >= 0.8


def test_not_enough_labels_says_what_it_found_and_needs() -> None:
    a, b, _ = synthetic(10, seed=2)
    with pytest.raises(NotEnoughLabels) as caught:
        LexicalJudge().fit(a[:6], b[:6], [3, 2, 0, 3, 2, 1], "relevance")
    message = str(caught.value)
    assert "found 6 relevance labels (grade 0: 1, 1: 1, 2: 2, 3: 2)" in message
    assert f"at least {MIN_LABELS} labels with at least 2 distinct grades" in message
    with pytest.raises(NotEnoughLabels, match=r"found 10 relevance labels \(grade 2: 10\).*\(it found 1\)"):
        LexicalJudge().fit(a, b, [2] * 10, "relevance")
    with pytest.raises(NotEnoughLabels, match="found 0 faithfulness labels;"):
        LexicalJudge().fit([], [], [], "faithfulness")
    with pytest.raises(NotEnoughLabels):
        cross_validate(a, b, [2] * 10, "relevance")
    assert issubclass(NotEnoughLabels, ValueError)


def test_bad_input_is_refused() -> None:
    a, b, y = synthetic(10, seed=2)
    with pytest.raises(ValueError, match="grade 3: 4 is not on the relevance scale"):
        LexicalJudge().fit(a, b, [0, 3, 0, 4, 0, 3, 0, 3, 0, 3], "relevance")
    with pytest.raises(ValueError, match="10 a-texts, 9 b-texts and 10 grades"):
        LexicalJudge().fit(a, b[:9], y, "relevance")
    with pytest.raises(ValueError, match="not 'preference'"):
        LexicalJudge().fit(a, b, y, "preference")
    with pytest.raises(KeyError, match="unknown rubric"):
        LexicalJudge().fit(a, b, y, "helpfulness")
    with pytest.raises(NotFitted):
        LexicalJudge().predict(a, b)
    with pytest.raises(NotFitted):
        _ = LexicalJudge().fingerprint
    with pytest.raises(ValueError, match="model 'forest'"):
        LexicalJudge("forest")


@pytest.mark.parametrize("model", ["logistic", "ridge"])
def test_predictions_only_grades_seen_in_training(model: str) -> None:
    a, b, y = synthetic(40, seed=3, grades=(0, 3))  # no 1 and no 2 in training
    judge = LexicalJudge(model).fit(a, b, y, "relevance")
    ta, tb, _ = synthetic(300, seed=4, grades=(0, 1, 2, 3))
    predicted = judge.predict(ta + ["", "w001"], tb + ["w001 w002", ""])
    assert predicted.dtype == np.int64
    assert set(predicted.tolist()) <= {0, 3}
    assert judge.describe()["grades_predicted"] == [0, 3]
    assert judge.predict([], []).shape == (0,)


def test_faithfulness_grades_stay_on_its_scale() -> None:
    a, b, y = synthetic(30, seed=5, grades=(0, 3))
    y = [2 if g == 3 else 0 for g in y]
    judge = LexicalJudge().fit(a, b, y, "faithfulness")
    assert set(judge.predict(a, b).tolist()) <= {0, 1, 2}
    assert judge.describe()["class_counts"] == {0: y.count(0), 1: 0, 2: y.count(2)}


def test_a_prediction_does_not_depend_on_the_batch() -> None:
    a, b, y = synthetic(40, seed=6, grades=(0, 1, 2, 3))
    judge = LexicalJudge().fit(a, b, y, "relevance")
    ta, tb, _ = synthetic(30, seed=7, grades=(0, 1, 2, 3))
    together = judge.predict(ta, tb)
    alone = [int(judge.predict([x], [z])[0]) for x, z in zip(ta, tb)]
    assert together.tolist() == alone


def test_determinism_and_fingerprint() -> None:
    a, b, y = synthetic(60, seed=8, grades=(0, 1, 2, 3))
    ta, tb, _ = synthetic(50, seed=9, grades=(0, 1, 2, 3))
    one = LexicalJudge().fit(a, b, y, "relevance", seed=0)
    two = LexicalJudge().fit(a, b, y, "relevance", seed=0)
    assert one.predict(ta, tb).tolist() == two.predict(ta, tb).tolist()
    assert one.fingerprint == two.fingerprint
    assert len(one.fingerprint) == 64
    # the same labels in another order: the same training data
    order = list(reversed(range(len(y))))
    shuffled = LexicalJudge().fit(
        [a[i] for i in order], [b[i] for i in order], [y[i] for i in order], "relevance"
    )
    assert shuffled.fingerprint == one.fingerprint
    changed = list(y)
    changed[0] = (changed[0] + 1) % 4
    others = {
        "labels": LexicalJudge().fit(a, b, changed, "relevance").fingerprint,
        "seed": LexicalJudge().fit(a, b, y, "relevance", seed=1).fingerprint,
        "model": LexicalJudge("ridge").fit(a, b, y, "relevance").fingerprint,
        "text": LexicalJudge().fit([a[0] + " w399", *a[1:]], b, y, "relevance").fingerprint,
        "item ids": LexicalJudge().fit(a, b, y, "relevance", item_ids=list(range(60))).fingerprint,
    }
    assert one.fingerprint not in others.values()
    assert len(set(others.values())) == len(others)
    first = cross_validate(a, b, y, "relevance", seed=3)
    assert first == cross_validate(a, b, y, "relevance", seed=3)


def test_describe() -> None:
    a, b, y = synthetic(20, seed=10, grades=(0, 2, 3))
    judge = LexicalJudge().fit(a, b, y, "relevance", seed=4)
    info = judge.describe()
    assert info["kind"] == "lexical"
    assert info["features_version"] == FEATURES_VERSION == "lexical-v1"
    assert info["features"] == list(FEATURES)
    assert info["model"] == "logistic"
    assert info["hyperparameters"]["class_weight"] == "balanced"
    assert info["n_labels"] == 20
    assert info["class_counts"] == {g: y.count(g) for g in (0, 1, 2, 3)}
    assert info["rubric"] == "relevance" and info["seed"] == 4
    assert info["fingerprint"] == judge.fingerprint


# ---------------------------------------------------------------- agreement


def test_kappa_is_undefined_on_one_class_not_zero() -> None:
    result = agreement([2, 2, 2, 2], [2, 2, 1, 2], "relevance")
    assert result["kappa"] is None and result["kappa_quadratic"] is None
    assert "one value only (2, n=4)" in result["undefined_reason"]
    assert result["accuracy"] == 3 / 4
    empty = agreement([], [], "relevance")
    assert empty["kappa"] is None and empty["accuracy"] is None and empty["undefined_reason"]
    defined = agreement([0, 1, 2, 3], [0, 1, 2, 2], "relevance")
    assert defined["undefined_reason"] is None and defined["kappa"] is not None


def test_kappas_are_sklearns() -> None:
    a, b, y = synthetic(120, seed=11, grades=(0, 1, 2, 3))
    result = cross_validate(a, b, y, "relevance", seed=0)
    truth, oof = result["truth"], result["predictions"]
    assert truth == y and len(oof) == 120 and set(oof) <= {0, 1, 2, 3}
    assert set(truth) | set(oof) == {0, 1, 2, 3}  # every grade present: the plain call is the same
    assert result["kappa_quadratic"] == pytest.approx(cohen_kappa_score(truth, oof, weights="quadratic"))
    assert result["kappa"] == pytest.approx(cohen_kappa_score(truth, oof))
    assert result["accuracy"] == pytest.approx(np.mean(np.array(truth) == np.array(oof)))
    # a grade nobody used keeps its place on the scale: 0 vs 3 is three steps, not one
    gap = agreement([0, 0, 3, 3], [0, 3, 3, 3], "relevance")
    assert gap["kappa_quadratic"] == pytest.approx(
        cohen_kappa_score([0, 0, 3, 3], [0, 3, 3, 3], weights="quadratic", labels=[0, 1, 2, 3])
    )


def test_folds_follow_the_data() -> None:
    a, b, y = synthetic(9, seed=12, grades=(0, 3))
    y = [0, 0, 0, 0, 0, 0, 0, 3, 3]  # two 3s cannot fill five stratified folds
    result = cross_validate(a, b, y, "relevance", seed=0, folds=5)
    assert result["folds"] == 5 and result["splitter"] == "kfold"
    assert len(result["predictions"]) == 9 and set(result["predictions"]) <= {0, 3}
    a, b, y = synthetic(8, seed=13, grades=(0, 3))
    y = [0, 3] * 4
    result = cross_validate(a, b, y, "relevance", seed=0, folds=10)
    assert result["folds"] == 8 and result["splitter"] == "kfold"
    result = cross_validate(a, b, y, "relevance", seed=0, folds=4)
    assert result["folds"] == 4 and result["splitter"] == "stratified"


# ---------------------------------------------------------------- store glue


def small_store(tmp_path) -> Store:
    store = Store(tmp_path / "s.db")
    store.import_corpus(
        [
            {"id": "c1", "text": "Dry maize to 13% moisture before storage."},
            {"id": "c2", "text": "Cows need clean water."},
            {"id": "c3", "text": "Hermetic bags stop weevils."},
            {"id": "c4"},  # no text
        ]
    )
    store.import_queries({"q1": "How do I store maize?", "q2": None})
    store.import_labels(Qrels(grades={"q1": {"c1": 3, "c2": 0, "c3": 2, "c4": 1}}), annotator="ann")
    store.import_labels(Qrels(grades={"q1": {"c1": 2, "c2": 1, "c3": 1}, "q2": {"c1": 3}}), annotator="bob")
    store.import_labels(Qrels(grades={"q1": {"c1": 1}}), annotator="cy")
    return store


def item(store: Store, query_id: str, chunk_id: str) -> int:
    return store.db.execute(
        "SELECT id FROM items WHERE kind = 'chunk' AND query_id = ? AND chunk_id = ?", [query_id, chunk_id]
    ).fetchone()[0]


def test_training_data_median_newest_and_retractions(tmp_path) -> None:
    with small_store(tmp_path) as store:
        c1, c2, c3 = item(store, "q1", "c1"), item(store, "q1", "c2"), item(store, "q1", "c3")
        rows = {r[0]: r for r in training_data(store, "relevance")}
        # c1: ann 3, bob 2, cy 1 -> 2; c2: 0, 1 -> lower middle 0; c3: 2, 1 -> 1
        assert {i: r[3] for i, r in rows.items()} == {c1: 2, c2: 0, c3: 1}  # c4 and q2 have no text
        assert rows[c1][1:3] == ("How do I store maize?", "Dry maize to 13% moisture before storage.")
        store.add_label(c2, "bob", 3)  # a correction: bob's newest label counts (0, 3 -> 0)
        store.add_label(c2, "ann", 2)  # ann: 0 -> 2; now 2, 3 -> 2
        store.undo(c1, "ann")  # ann retracts: bob 2, cy 1 -> 1
        store.add_label(c3, "cy", 2, rubric="faithfulness")  # another rubric: not a relevance label
        store.add_label(c3, "bob", 3)
        store.undo(c3, "bob")  # bob's 3 retracted; his earlier 1 does not come back
        grades = {r[0]: r[3] for r in training_data(store, "relevance")}
        assert grades == {c1: 1, c2: 2, c3: 2}
        store.undo(c3, "ann")  # nobody's current label left on c3
        assert {r[0] for r in training_data(store, "relevance")} == {c1, c2}
        assert [r[0] for r in training_data(store, "relevance")] == sorted([c1, c2])
        assert training_data(store, "faithfulness") == []  # cy's faithfulness row is on a chunk item


def test_faithfulness_training_data_and_item_texts(tmp_path) -> None:
    with small_store(tmp_path) as store:
        store.import_traces(
            [
                {
                    "id": "t1",
                    "query_id": "q1",
                    "system": "rag",
                    "question": "How do I store maize?",
                    "contexts": ["c1", "Keep the store clean."],
                    "answer": "Dry it to 13% moisture.",
                },
                {
                    "id": "t2",
                    "query_id": "q1",
                    "system": "rag",
                    "question": "How do I store maize?",
                    "contexts": ["c4"],  # a chunk without text shows its id, as on the labelling page
                    "answer": "Use hermetic bags.",
                },
                {
                    "id": "t3",
                    "query_id": "q1",
                    "system": "rag",
                    "question": "How do I store maize?",
                    "contexts": [],
                    "answer": "No idea.",
                },
            ]
        )
        ids = dict(store.db.execute("SELECT trace_id, id FROM items WHERE kind = 'trace'").fetchall())
        store.annotator_id("eve")
        store.add_label(ids["t1"], "eve", 2, rubric="faithfulness")
        store.add_label(ids["t1"], "ann", 1, rubric="faithfulness")
        store.add_label(ids["t2"], "eve", 0, rubric="faithfulness")
        store.add_label(ids["t3"], "eve", 1, rubric="faithfulness")  # no contexts: skipped
        rows = training_data(store, "faithfulness")
        assert rows == [
            (
                ids["t1"],
                "Dry it to 13% moisture.",
                "Dry maize to 13% moisture before storage.\nKeep the store clean.",
                1,
            ),
            (ids["t2"], "Use hermetic bags.", "c4", 0),
        ]
        every = item_texts(store, "faithfulness")
        assert [r[0] for r in every] == sorted([ids["t1"], ids["t2"]])
        chunks = item_texts(store, "relevance")
        assert [r[0] for r in chunks] == sorted(item(store, "q1", c) for c in ("c1", "c2", "c3"))
        assert item_texts(store, "relevance", [item(store, "q1", "c2")]) == [
            (item(store, "q1", "c2"), "How do I store maize?", "Cows need clean water.")
        ]
        assert item_texts(store, "relevance", [item(store, "q1", "c4")]) == []  # no text: nothing to grade
        with pytest.raises(ValueError, match=f"no chunk item with id {ids['t1']}"):
            item_texts(store, "relevance", [ids["t1"]])
        with pytest.raises(ValueError, match="not 'preference'"):
            training_data(store, "preference")


# ---------------------------------------------------------------- the demo


def truth_grades() -> dict[tuple[str, str], int]:
    grades = {}
    for line in (EXAMPLE_DIR / "truth.qrels").read_text().splitlines():
        qid, _, doc, grade = line.split()
        grades[(qid, doc)] = int(grade)
    return grades


def current_medians(store: Store, kind: str, rubric: str) -> dict[int, int]:
    """The grade per item by another road: the store's own current_labels, then the median."""
    values: dict[int, list[int]] = {}
    for label in store.current_labels(kind=kind):
        if label["rubric"] == rubric:
            values.setdefault(label["item_id"], []).append(label["value"])
    return {item_id: aggregate_grades(v, "median") for item_id, v in values.items()}


@pytest.mark.parametrize(("rubric", "kind"), [("relevance", "chunk"), ("faithfulness", "trace")])
def test_demo_cross_validated_agreement(demo_db, rubric: str, kind: str) -> None:
    """Fit on the demo's human labels (relevance: cat and dan; faithfulness: cat) and print
    the cross-validated agreement with them."""
    with Store(demo_db) as store:
        rows = training_data(store, rubric)
        assert {r[0]: r[3] for r in rows} == current_medians(store, kind, rubric)
        n_items = store.db.execute("SELECT count(*) FROM items WHERE kind = ?", [kind]).fetchone()[0]
        assert len(item_texts(store, rubric)) == n_items
    ids, a, b, y = ([r[i] for r in rows] for i in range(4))
    result = cross_validate(a, b, y, rubric, seed=0)
    judge = LexicalJudge().fit(a, b, y, rubric, seed=0, item_ids=ids)
    print(
        f"\ndemo {rubric}: n={result['n']} folds={result['folds']} ({result['splitter']}) "
        f"class counts {result['class_counts']}: accuracy {result['accuracy']:.3f}, "
        f"kappa {result['kappa']:.3f}, quadratic kappa {result['kappa_quadratic']:.3f}; "
        f"judge {judge.fingerprint[:12]}"
    )
    assert result["n"] == len(rows) >= MIN_LABELS
    assert result["undefined_reason"] is None
    scale = sorted(get_rubric(rubric).scale)  # a grade nobody used keeps its place (faithfulness: 1)
    assert result["kappa_quadratic"] == pytest.approx(
        cohen_kappa_score(result["truth"], result["predictions"], weights="quadratic", labels=scale)
    )
    assert result["kappa_quadratic"] > 0.3  # it learns something from the words alone
    assert result == cross_validate(a, b, y, rubric, seed=0)
    assert set(judge.predict(a, b).tolist()) <= set(y)


def test_demo_after_a_labelling_session(demo_db) -> None:
    """ann and bob grade their pooled demo chunks as the worked example says
    (its truth; a chunk it does not list is irrelevant, 0), beside cat and dan."""
    truth = truth_grades()
    with Store(demo_db) as store:
        assigned = store.db.execute(
            """SELECT i.id, i.query_id, i.chunk_id, a.name FROM assignments s
               JOIN items i ON i.id = s.item_id JOIN annotators a ON a.id = s.annotator_id ORDER BY i.id, a.name"""
        ).fetchall()
        for item_id, qid, doc, name in assigned:
            store.add_label(item_id, name, truth.get((qid, doc), 0))
        rows = training_data(store, "relevance")
        n_items = store.db.execute("SELECT count(*) FROM items WHERE kind = 'chunk'").fetchone()[0]
    ids, a, b, y = ([r[i] for r in rows] for i in range(4))
    result = cross_validate(a, b, y, "relevance", seed=0)
    print(
        f"\ndemo relevance after ann and bob: n={result['n']} folds={result['folds']} ({result['splitter']}) "
        f"class counts {result['class_counts']}: accuracy {result['accuracy']:.3f}, "
        f"kappa {result['kappa']:.3f}, quadratic kappa {result['kappa_quadratic']:.3f}"
    )
    assert result["n"] == len(rows) == n_items
    assert result["kappa_quadratic"] == pytest.approx(
        cohen_kappa_score(result["truth"], result["predictions"], weights="quadratic")
    )
    assert result["kappa_quadratic"] > 0.3


def test_fit_stats_without_tokens() -> None:
    stats = fit_stats(["", "a"], ["", "b"])
    assert stats.tfidf is None and stats.n_docs == 2 and stats.avgdl == 0.0
    assert np.all(pair_features(["", "a"], ["", "b"], stats)[:, COL["tfidf_cosine"]] == 0.0)
