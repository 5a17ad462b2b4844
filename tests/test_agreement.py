"""Agreement (calibration/stats/agreement.py) against values computed by others.

1. Published tables (../shared/data/agreement_worked_examples/examples.json: statsmodels, R irr,
   irrCAC, fast-krippendorff test files): equal to the published value to the digits printed.
2. scikit-learn's ``cohen_kappa_score`` and statsmodels' ``fleiss_kappa`` as oracles on random data.
3. The vectorized bootstrap: every resample's kappa equals scikit-learn's on the same resample.
4. TREC RAG 2025: NIST assessors vs the UMBRELA-v2 LLM judge on the same 10,284 passages.
5. Undefined is not zero: one shared class, no common items, no pairable units -> None with a reason.
"""

from __future__ import annotations

import ast
import json
import math
import time
import warnings
from concurrent.futures import ThreadPoolExecutor
from decimal import Decimal
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.inter_rater import aggregate_raters, fleiss_kappa

from calibration.stats.agreement import (
    BootstrapCI,
    InvalidRatings,
    UnequalRaters,
    agreement_report,
    binarised,
    bootstrap_ci,
    bootstrap_kappas,
    cohen,
    cohen_all,
    fleiss,
    from_long,
    kappa_ci,
    krippendorff_alpha,
    resample_indices,
    verdict,
)
from tests.conftest import ROOT, shared_dir

SHARED = shared_dir()
needs_shared = pytest.mark.skipif(SHARED is None, reason="../shared/data not found")


def examples() -> dict:
    # Decimal keeps the printed digits ("0.210" has three) that float parsing would drop.
    path = SHARED / "data" / "agreement_worked_examples" / "examples.json"
    return json.loads(path.read_text(), parse_float=Decimal)


def assert_printed(value: float | None, printed: Decimal, what: str) -> None:
    """``value`` rounds to ``printed`` at the number of decimals printed."""
    assert value is not None, what
    decimals = -printed.as_tuple().exponent
    assert abs(value - float(printed)) <= 0.5 * 10.0**-decimals + 1e-12, f"{what}: {value} vs {printed}"


def expand(table) -> tuple[list[int], list[int]]:
    """A square contingency table -> the two raters' ratings (row index, column index) item by item."""
    a, b = [], []
    for i, row in enumerate(table):
        for j, count in enumerate(row):
            a += [i] * int(count)
            b += [j] * int(count)
    return a, b


def no_none(rows) -> list:
    return [[None if v is None else (float(v) if isinstance(v, Decimal) else v) for v in row] for row in rows]


# --------------------------------------------------------------------------- 1. published tables


@needs_shared
def test_sas_3x3_cohen_and_linear_weighted() -> None:
    case = examples()["sas_3x3_cohen"]
    a, b = expand(case["table"])
    result = cohen(a, b)
    # By hand: n = 19, p_o = (0 + 8 + 5)/19 = 13/19; margins a (5, 8, 6), b (0, 13, 6);
    # p_e = (5*0 + 8*13 + 6*6)/19^2 = 140/361; kappa = (247 - 140)/(361 - 140) = 107/221.
    assert result["n"] == 19
    assert result["observed_agreement"] == pytest.approx(13 / 19, abs=1e-15)
    assert result["chance_agreement"] == pytest.approx(140 / 361, abs=1e-15)
    assert result["kappa"] == pytest.approx(107 / 221, abs=1e-15)
    assert result["confusion"] == [[0, 4, 1], [0, 8, 0], [0, 1, 5]]
    assert_printed(result["kappa"], case["expected"]["cohen_kappa"]["value"], "SAS kappa")
    linear = cohen(a, b, weights="linear")
    assert_printed(
        linear["kappa"], case["expected"]["weighted_kappa_linear_scores_0_1_2"]["value"], "SAS linear"
    )
    # kappa_w = (p_o^w - p_e^w) / (1 - p_e^w) with agreement weights 1 - |i-j|/2.
    po, pe = linear["weighted_observed_agreement"], linear["weighted_chance_agreement"]
    assert linear["kappa"] == pytest.approx((po - pe) / (1 - pe), abs=1e-12)


@needs_shared
@pytest.mark.parametrize("name", ["gwet_cont3x3abstractors", "gwet_cont4x4diagnosis"])
def test_gwet_tables_unweighted_linear_quadratic(name: str) -> None:
    case = examples()[name]
    a, b = expand(case["table"])
    results = cohen_all(a, b)
    expected = case["expected_cohen_kappa"]
    for ours, theirs in (("unweighted", "unweighted"), ("linear", "linear"), ("quadratic", "quadratic")):
        assert_printed(results[ours]["kappa"], expected[theirs]["value"], f"{name} {ours}")


@needs_shared
def test_irr_anxiety_kappa2_unweighted_equal_squared() -> None:
    case = examples()["irr_anxiety_20subjects_3raters"]
    ratings = np.array(case["ratings"])
    rater2, rater3 = ratings[:, 1], ratings[:, 2]
    expected = case["expected"]
    # irr builds its table over the grades actually used (its caveat): pass those grades as the scale.
    used = sorted(set(rater2) | set(rater3))
    assert 5 not in used
    assert_printed(
        cohen(rater2, rater3, labels=used)["kappa"],
        expected["kappa2(raters 2,3) unweighted"]["value"],
        "unweighted",
    )
    assert_printed(
        cohen(rater2, rater3, weights="linear", labels=used)["kappa"],
        expected["kappa2(raters 2,3, 'equal') [linear]"]["value"],
        "linear",
    )
    assert_printed(
        cohen(rater2, rater3, weights="quadratic", labels=used)["kappa"],
        expected["kappa2(raters 2,3, 'squared') [quadratic]"]["value"],
        "quadratic",
    )
    # Without labels= the scale is every grade from the lowest to the highest seen (grade_range), the
    # rule `agree` uses: the unused grade 5 counts in the distances, a different (documented) figure.
    default = cohen(rater2, rater3, weights="linear")
    on_scale = cohen(rater2, rater3, weights="linear", labels=[1, 2, 3, 4, 5, 6])
    assert default["labels"] == on_scale["labels"] == [1, 2, 3, 4, 5, 6]
    assert (
        default["kappa"]
        == on_scale["kappa"]
        == pytest.approx(
            cohen_kappa_score(rater2, rater3, weights="linear", labels=[1, 2, 3, 4, 5, 6]), abs=1e-12
        )
    )
    assert abs(on_scale["kappa"] - 0.1459075) > 1e-3
    # the unweighted kappa does not depend on an unused grade
    assert cohen(rater2, rater3)["kappa"] == pytest.approx(
        cohen(rater2, rater3, labels=used)["kappa"], abs=1e-12
    )


@needs_shared
def test_fleiss_wikipedia_table() -> None:
    case = examples()["fleiss_wikipedia_10subjects_14raters"]
    result = fleiss(case["counts"])
    assert result["n_items"] == 10 and result["n_raters"] == 14
    assert_printed(result["kappa"], case["expected"]["fleiss_kappa"], "Fleiss Wikipedia")
    for ours, printed in zip(result["item_agreement"], case["per_subject_P_i"], strict=True):
        assert_printed(ours, printed, "P_i")
    assert result["kappa"] == pytest.approx(
        fleiss_kappa(np.array(case["counts"]), method="fleiss"), abs=1e-12
    )


@needs_shared
def test_fleiss_irr_diagnoses_table_and_long_form() -> None:
    case = examples()["irr_diagnoses_30subjects_6raters"]
    ratings = np.array(case["ratings"])
    counts, categories = aggregate_raters(ratings)
    assert counts.sum(axis=0).tolist() == case["expected"]["category_totals_check"]
    from_table = fleiss(counts)
    long_rows = [(item, rater, int(label)) for (item, rater), label in np.ndenumerate(ratings)]
    from_rows = fleiss(long_rows)
    assert from_rows["categories"] == [1, 2, 3, 4, 5]
    for result in (from_table, from_rows):
        assert_printed(result["kappa"], case["expected"]["fleiss_kappa"], "Fleiss diagnoses")
        assert result["kappa"] == pytest.approx(fleiss_kappa(counts, method="fleiss"), abs=1e-12)


@needs_shared
def test_fleiss_irrcac_complete_data_and_refusal_of_incomplete() -> None:
    raw = examples()["gwet_raw_datasets_krippendorff_and_fleiss"]
    # raw_gender is complete (4 raters on every unit): Gwet's generalised Fleiss is Fleiss' kappa there.
    gender = raw["raw_gender"]
    rows = [
        (unit, rater, label) for unit, row in enumerate(gender["ratings"]) for rater, label in enumerate(row)
    ]
    assert_printed(fleiss(rows)["kappa"], gender["expected"]["gwet_fleiss"], "Fleiss raw_gender")
    # The others have missing ratings: Fleiss' kappa is refused, not quietly computed on a subset.
    for name in ("raw_5observers", "raw_g1g2", "raw_ben_gerry"):
        rows = [
            (unit, rater, label)
            for unit, row in enumerate(raw[name]["ratings"])
            for rater, label in enumerate(row)
            if label is not None
        ]
        with pytest.raises(UnequalRaters, match="same number of ratings"):
            fleiss(rows)


@needs_shared
def test_krippendorff_2011_reliability_data() -> None:
    case = examples()["krippendorff_2011_4coders_12units"]
    data = no_none(case["reliability_data"])
    expected = case["expected"]
    for level in ("nominal", "ordinal", "interval"):
        result = krippendorff_alpha(data, level)
        assert_printed(result["alpha"], expected[f"krippendorff_alpha_{level}"]["value"], level)
        assert result["n_raters"] == 4 and result["n_items"] == 12
    assert krippendorff_alpha(data)["n_pairable_items"] == 11  # unit 12 has a single rating
    # Text labels on an ordered scale: ordinal alpha on their ranks (fast-krippendorff's docstring example).
    names = {1: "very low", 2: "low", 3: "mid", 4: "high", 5: "very high"}
    text = [[None if v is None else names[int(v)] for v in row] for row in data]
    ordinal = krippendorff_alpha(text, "ordinal", labels=list(names.values()))
    assert_printed(ordinal["alpha"], expected["krippendorff_alpha_ordinal"]["value"], "ordinal text")
    assert_printed(
        krippendorff_alpha(text)["alpha"], expected["krippendorff_alpha_nominal"]["value"], "nominal text"
    )


@needs_shared
def test_krippendorff_fast_krippendorff_examples() -> None:
    found = examples()
    case = found["fast_krippendorff_3coders_15units"]
    data = no_none(case["reliability_data"])
    assert_printed(
        krippendorff_alpha(data, "nominal")["alpha"], case["expected"]["krippendorff_alpha_nominal"], ""
    )
    assert_printed(
        krippendorff_alpha(data, "interval")["alpha"], case["expected"]["krippendorff_alpha_interval"], ""
    )
    strings = found["fast_krippendorff_string_labels"]
    result = krippendorff_alpha(strings["reliability_data"], "nominal")
    assert_printed(result["alpha"], strings["expected"]["krippendorff_alpha_nominal"], "string labels")
    with pytest.raises(InvalidRatings, match="interval alpha needs numeric labels"):
        krippendorff_alpha(strings["reliability_data"], "interval")
    with pytest.raises(InvalidRatings, match="ordered scale"):
        krippendorff_alpha(strings["reliability_data"], "ordinal")


@needs_shared
@pytest.mark.parametrize("name", ["raw_5observers", "raw_g1g2", "raw_gender", "raw_ben_gerry"])
def test_krippendorff_irrcac_raw_datasets(name: str) -> None:
    case = examples()["gwet_raw_datasets_krippendorff_and_fleiss"][name]
    units_by_raters = no_none(case["ratings"])
    raters_by_units = [list(column) for column in zip(*units_by_raters, strict=True)]
    result = krippendorff_alpha(raters_by_units, "nominal")
    assert_printed(result["alpha"], case["expected"]["krippendorff_alpha_nominal"], name)
    # The same data as long rows gives the same alpha.
    rows = [
        (unit, rater, label)
        for unit, row in enumerate(units_by_raters)
        for rater, label in enumerate(row)
        if label is not None
    ]
    assert krippendorff_alpha(rows, "nominal")["alpha"] == pytest.approx(result["alpha"], abs=1e-12)


# --------------------------------------------------------------------------- 2. Cohen vs scikit-learn

grades = st.integers(min_value=0, max_value=4)


@st.composite
def two_raters(draw, min_size: int = 1, max_size: int = 60):
    n = draw(st.integers(min_value=min_size, max_value=max_size))
    a = draw(st.lists(grades, min_size=n, max_size=n))
    b = draw(st.lists(grades, min_size=n, max_size=n))
    return a, b


def sklearn_kappa(a, b, weights, labels) -> float:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return cohen_kappa_score(a, b, weights=weights, labels=labels)


@pytest.mark.slow  # property test: 300 rater pairs
@given(pair=two_raters(), weights=st.sampled_from([None, "linear", "quadratic"]), full_scale=st.booleans())
@settings(max_examples=300, deadline=None)
def test_kappa_equals_sklearn_and_is_symmetric(pair, weights, full_scale) -> None:
    a, b = pair
    labels = [0, 1, 2, 3, 4] if full_scale else None
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing may leak: undefined is a reason, not a warning
        ours = cohen(a, b, weights=weights, labels=labels)
        swapped = cohen(b, a, weights=weights, labels=labels)
    seen = set(a) | set(b)
    scale = labels or list(range(min(seen), max(seen) + 1))  # grade_range: every grade between
    theirs = sklearn_kappa(a, b, weights, scale)
    if math.isnan(theirs):
        assert ours["kappa"] is None and "same label" in ours["undefined_reason"]
        assert len(set(a) | set(b)) == 1
    else:
        assert ours["kappa"] == pytest.approx(theirs, abs=1e-9)
        assert ours["undefined_reason"] is None
    assert swapped["kappa"] == ours["kappa"] or swapped["kappa"] == pytest.approx(ours["kappa"], abs=1e-12)
    assert np.array(swapped["confusion"]).T.tolist() == ours["confusion"]
    assert ours["observed_agreement"] == pytest.approx(np.mean(np.array(a) == np.array(b)), abs=1e-12)


@given(pair=two_raters(min_size=2))
@settings(max_examples=100, deadline=None)
def test_identical_raters_with_two_or_more_classes_have_kappa_one(pair) -> None:
    a, _ = pair
    if len(set(a)) < 2:
        a = a[:-1] + [(a[-1] + 1) % 5]
    for weights in (None, "linear", "quadratic"):
        assert cohen(a, a, weights=weights)["kappa"] == pytest.approx(1.0, abs=1e-12)


@pytest.mark.parametrize("weights", [None, "linear", "quadratic"])
def test_one_shared_class_is_undefined_never_zero(weights) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result = cohen([2, 2, 2, 2], [2, 2, 2, 2], weights=weights, labels=[0, 1, 2, 3])
        ci = bootstrap_ci([2, 2, 2], [2, 2, 2], weights=weights)
    assert result["kappa"] is None
    assert result["undefined_reason"].startswith("both raters gave all 4 items the same label 2")
    assert result["chance_agreement"] == 1.0 and result["observed_agreement"] == 1.0
    assert tuple(ci) == (None, None) and "same label" in ci.undefined_reason
    assert verdict(result["kappa"], ci=None, bar=0.6) == "undefined"
    # Two different single classes are defined: total disagreement at chance level, kappa 0.
    assert cohen([1, 1, 1], [2, 2, 2], weights=weights)["kappa"] == 0.0


def test_missing_ratings_are_dropped_and_counted() -> None:
    result = cohen([0, 1, None, 2, float("nan"), 1], [0, 1, 1, None, 2, 1])
    assert result["n"] == 3 and result["n_dropped"] == 3
    assert result["kappa"] == 1.0
    empty = cohen([None, 1], [2, None])
    assert empty["n"] == 0 and empty["kappa"] is None and "n = 0" in empty["undefined_reason"]
    series = cohen(pd.Series([1, 2, None, 2]), pd.Series([1, 2, 2, 2], dtype="Int64"))
    assert series["n"] == 3 and series["n_dropped"] == 1


def test_text_labels_and_labels_scale() -> None:
    a = ["neg", "pos", "neu", "pos", "neg"]
    b = ["neg", "pos", "pos", "pos", "neu"]
    result = cohen(a, b)
    assert result["labels"] == ["neg", "neu", "pos"]
    assert result["kappa"] == pytest.approx(cohen_kappa_score(a, b), abs=1e-12)
    ordered = cohen(a, b, labels=["neg", "neu", "pos"], weights="linear")
    assert ordered["kappa"] == pytest.approx(
        cohen_kappa_score(a, b, labels=["neg", "neu", "pos"], weights="linear"), abs=1e-12
    )


def test_bad_input_is_refused_with_a_clear_message() -> None:
    with pytest.raises(InvalidRatings, match="a has 3 ratings and b has 2"):
        cohen([1, 2, 3], [1, 2])
    with pytest.raises(InvalidRatings, match=r"b\[1\] = 7 is not on the scale \[0, 1, 2, 3\]"):
        cohen([0, 1, 2], [0, 7, 2], labels=[0, 1, 2, 3])
    with pytest.raises(InvalidRatings, match=r"a\[2\] = 'x' is not on the scale"):
        cohen(["a", "b", "x"], ["a", "b", "b"], labels=["a", "b"])
    with pytest.raises(InvalidRatings, match="weights must be"):
        cohen([0, 1], [0, 1], weights="cubic")
    with pytest.raises(InvalidRatings, match="repeats a label"):
        cohen([0, 1], [0, 1], labels=[0, 1, 1])
    with pytest.raises(InvalidRatings, match="no common order"):
        cohen([0, "a"], [0, "a"])
    with pytest.raises(InvalidRatings, match="expected a sequence"):
        cohen("abc", "abc")


# --------------------------------------------------------------------------- 3. bootstrap


@pytest.mark.parametrize("weights", [None, "linear", "quadratic"])
def test_every_resample_kappa_equals_sklearn_on_that_resample(weights) -> None:
    rng = np.random.default_rng(7)
    a = rng.integers(0, 4, 25)
    b = np.where(rng.random(25) < 0.6, a, rng.integers(0, 4, 25))
    kappas = bootstrap_kappas(a, b, weights=weights, n_resamples=300, seed=11)
    indices = np.concatenate(list(resample_indices(25, 300, seed=11)))
    assert indices.shape == (300, 25)
    scale = sorted(set(a) | set(b))  # the full sample's scale, fixed in every resample
    for kappa, idx in zip(kappas, indices, strict=True):
        assert kappa == pytest.approx(sklearn_kappa(a[idx], b[idx], weights, scale), abs=1e-9, nan_ok=True)


def test_undefined_resamples_are_dropped_and_counted() -> None:
    a, b = [0, 0, 0, 1], [0, 0, 0, 1]
    kappas = bootstrap_kappas(a, b, n_resamples=500, seed=3)
    indices = np.concatenate(list(resample_indices(4, 500, seed=3)))
    single_class = np.array([len(set(np.array(a)[idx])) == 1 for idx in indices])
    assert single_class.sum() > 0  # (3/4)^4 + (1/4)^4 of resamples hold one class only
    assert np.isnan(kappas[single_class]).all() and not np.isnan(kappas[~single_class]).any()
    ci = bootstrap_ci(a, b, n_resamples=500, seed=3, method="indices")
    assert ci.n_undefined == int(single_class.sum())
    assert ci == (1.0, 1.0) and ci.estimate == 1.0


def test_bootstrap_ci_is_seeded_and_independent_of_threads() -> None:
    rng = np.random.default_rng(0)
    a = rng.integers(0, 3, 300)
    b = np.where(rng.random(300) < 0.7, a, rng.integers(0, 3, 300))
    first = bootstrap_ci(a, b, n_resamples=1000, seed=5, method="indices")
    assert bootstrap_ci(a, b, n_resamples=1000, seed=5, method="indices") == first
    assert bootstrap_ci(a, b, n_resamples=1000, seed=6, method="indices") != first
    with ThreadPoolExecutor(max_workers=2) as pool:
        assert bootstrap_ci(a, b, n_resamples=1000, seed=5, method="indices", executor=pool) == first
        # large enough that the blocks really run on the caller's threads: the same interval
        big_a = rng.integers(0, 3, 3000)
        big_b = np.where(rng.random(3000) < 0.7, big_a, rng.integers(0, 3, 3000))
        alone = bootstrap_ci(big_a, big_b, n_resamples=2000, seed=1, method="indices")
        assert bootstrap_ci(big_a, big_b, n_resamples=2000, seed=1, method="indices", executor=pool) == alone
    assert isinstance(first, BootstrapCI) and len(first) == 2
    low, high = first
    assert low < first.estimate < high
    assert first.as_dict()["n_resamples"] == 1000 and first.n == 300
    assert json.loads(json.dumps(first)) == [low, high]


@st.composite
def agreeing_raters(draw):
    n = draw(st.integers(min_value=40, max_value=300))
    k = draw(st.integers(min_value=2, max_value=5))
    agreement = draw(st.floats(min_value=0.2, max_value=0.9))
    seed = draw(st.integers(min_value=0, max_value=2**32 - 1))
    rng = np.random.default_rng(seed)
    a = rng.integers(0, k, n)
    b = np.where(rng.random(n) < agreement, a, rng.integers(0, k, n))
    return a, b


@given(pair=agreeing_raters(), weights=st.sampled_from([None, "linear", "quadratic"]))
@settings(max_examples=40, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
def test_ci_brackets_the_estimate_on_non_degenerate_data(pair, weights) -> None:
    a, b = pair
    estimate = cohen(a, b, weights=weights)["kappa"]
    low, high = bootstrap_ci(a, b, weights=weights, n_resamples=1000, seed=1)
    assert low <= estimate <= high


def test_multinomial_method_gives_the_same_bootstrap_distribution() -> None:
    rng = np.random.default_rng(1)
    a = rng.integers(0, 4, 2000)
    b = np.where(rng.random(2000) < 0.6, a, rng.integers(0, 4, 2000))
    by_index = bootstrap_kappas(a, b, weights="quadratic", n_resamples=4000, seed=2)
    by_counts = bootstrap_kappas(a, b, weights="quadratic", n_resamples=4000, seed=2, method="multinomial")
    assert by_counts.mean() == pytest.approx(by_index.mean(), abs=0.003)
    assert by_counts.std() == pytest.approx(by_index.std(), rel=0.08)
    with pytest.raises(InvalidRatings, match="method must be"):
        bootstrap_ci(a, b, method="jackknife")


def test_bootstrap_2000_resamples_of_100000_items() -> None:
    """The size the lead benchmarks; timing is printed (pytest -s), never asserted."""
    rng = np.random.default_rng(42)
    a = rng.integers(0, 5, 100_000)
    b = np.clip(a + rng.integers(-1, 2, 100_000), 0, 4)
    started = time.perf_counter()
    ci = bootstrap_ci(a, b, weights="quadratic", labels=[0, 1, 2, 3, 4], n_resamples=2000, seed=0)
    seconds = time.perf_counter() - started
    print(f"\nbootstrap_ci 2000 x 100000 (indices): {seconds:.3f} s -> {tuple(ci)}")
    started = time.perf_counter()
    fast = bootstrap_ci(a, b, weights="quadratic", labels=[0, 1, 2, 3, 4], seed=0, method="multinomial")
    print(f"bootstrap_ci 2000 x 100000 (multinomial): {time.perf_counter() - started:.4f} s -> {tuple(fast)}")
    assert ci.low <= ci.estimate <= ci.high and ci.n_undefined == 0
    assert fast.low == pytest.approx(ci.low, abs=3e-4) and fast.high == pytest.approx(ci.high, abs=3e-4)


# --------------------------------------------------------------------------- Fleiss, Krippendorff, helpers


@st.composite
def fleiss_tables(draw):
    """Items x categories counts with 6 ratings per item."""
    items = draw(st.integers(min_value=1, max_value=12))
    categories = draw(st.integers(min_value=2, max_value=4))
    rows = []
    for _ in range(items):
        head = draw(
            st.lists(st.integers(min_value=0, max_value=2), min_size=categories - 1, max_size=categories - 1)
        )
        rows.append(head + [6 - sum(head)])
    return np.array(rows)


@given(counts=fleiss_tables())
@settings(max_examples=150, deadline=None)
def test_fleiss_equals_statsmodels(counts) -> None:
    result = fleiss(counts)
    assert result["n_raters"] == 6
    if (counts.sum(axis=0) > 0).sum() == 1:
        assert result["kappa"] is None and "chance agreement is 1" in result["undefined_reason"]
    else:
        assert result["kappa"] == pytest.approx(fleiss_kappa(counts, method="fleiss"), abs=1e-9)


def test_fleiss_refuses_unequal_raters_and_names_an_item() -> None:
    rows = [("q1", "ann", 1), ("q1", "bob", 1), ("q2", "ann", 0), ("q2", "bob", 1), ("q2", "cy", 1)]
    with pytest.raises(
        UnequalRaters, match=r"ratings per item: 2 on 1 item\(s\), 3 on 1 item\(s\) \(e.g. item 'q2' has 3\)"
    ):
        fleiss(rows)
    with pytest.raises(UnequalRaters):
        fleiss([[2, 0], [1, 2]])
    assert issubclass(UnequalRaters, ValueError)
    single = fleiss([[3, 0], [3, 0]])
    assert single["kappa"] is None and "every rating is 0" in single["undefined_reason"]
    assert fleiss([[1, 0], [0, 1]])["undefined_reason"].startswith("each item has 1 rating")
    with pytest.raises(InvalidRatings, match="non-negative counts"):
        fleiss([[1, -1], [0, 0]])
    # A list of tuples is read as long ratings unless told otherwise.
    assert fleiss([(2, 1, 0), (1, 2, 0)], form="table")["n_raters"] == 3


def test_krippendorff_undefined_cases_have_reasons() -> None:
    same = krippendorff_alpha([[1, 1, None], [1, 1, 2]], "interval")
    assert same["alpha"] is None and "every comparable rating is 1" in same["undefined_reason"]
    lonely = krippendorff_alpha([[1, None], [None, 2]], "nominal")
    assert lonely["alpha"] is None and "no item has two or more ratings" in lonely["undefined_reason"]
    with pytest.raises(InvalidRatings, match="level must be"):
        krippendorff_alpha([[1, 2], [1, 2]], "ratio")


def test_binarised_maps_grades_at_the_threshold() -> None:
    a = [0, 1, 2, 3, None, 2]
    b = [0, 2, 1, 3, 1, 0]
    result = binarised(a, b, threshold=2)
    assert result["threshold"] == 2 and result["labels"] == [0, 1]
    assert result["n"] == 5 and result["n_dropped"] == 1
    a_bin, b_bin = [0, 0, 1, 1, 1], [0, 1, 0, 1, 0]
    assert result["kappa"] == pytest.approx(cohen_kappa_score(a_bin, b_bin), abs=1e-12)
    assert result["confusion"] == [[1, 1], [2, 1]]
    assert binarised([3, 3], [2, 3], threshold=1)["kappa"] is None  # both all-relevant: undefined
    with pytest.raises(InvalidRatings, match="binarising needs numeric grades"):
        binarised(["a"], [1], threshold=1)


def test_verdict_thresholds() -> None:
    # the interval decides: its lower end at or above the bar, its upper end below it, or neither
    assert verdict(0.8, [0.6, 0.9], bar=0.6) == "trusted" and verdict(0.95, [0.61, 1.0], bar=0.6) == "trusted"
    assert verdict(0.716, [0.286, 1.0], bar=0.6) == "undecided"  # the n = 18 case
    assert verdict(0.3, [0.1, 0.5999], bar=0.6) == "not trusted"
    assert verdict(0.7, None, bar=0.6) == "undecided"  # no interval: nothing is shown
    assert (
        verdict(None, None, bar=0.6) == "undefined" and verdict(float("nan"), [0, 1], bar=0.6) == "undefined"
    )
    assert verdict(0.85, [0.75, 0.95], bar=0.8) == "undecided"


# --------------------------------------------------------------------------- long form and report

LONG = [
    ("q1", "ann", 0), ("q1", "bob", 0), ("q1", "judge", 0),
    ("q2", "ann", 3), ("q2", "bob", 3), ("q2", "judge", 2),
    ("q3", "ann", 1), ("q3", "bob", 2), ("q3", "judge", 1),
    ("q4", "ann", 2), ("q4", "bob", 2), ("q4", "judge", 3),
    ("q5", "ann", 0), ("q5", "bob", 1), ("q5", "judge", 0),
    ("q6", "ann", 3), ("q6", "bob", 3), ("q6", "judge", 3),
]  # fmt: skip


def plain_json(value) -> None:
    """Only dicts, lists, str, int, float (finite), bool and None."""
    if isinstance(value, dict):
        for key, inner in value.items():
            assert isinstance(key, str)
            plain_json(inner)
    elif isinstance(value, list):
        for inner in value:
            plain_json(inner)
    else:
        assert value is None or type(value) in (str, int, float, bool), (type(value), value)
        assert not isinstance(value, float) or math.isfinite(value)


def test_agreement_report_shape_and_values() -> None:
    report = agreement_report(LONG, trusted=0.6)
    plain_json(report)
    json.dumps(report, allow_nan=False)
    assert report["n_items"] == 6 and report["raters"] == ["ann", "bob", "judge"]
    assert [p["raters"] for p in report["pairs"]] == [["ann", "bob"], ["ann", "judge"], ["bob", "judge"]]
    by_rater = {r: [label for _i, who, label in LONG if who == r] for r in report["raters"]}
    for entry in report["pairs"]:
        a, b = (by_rater[r] for r in entry["raters"])
        assert set(entry) >= {"raters", "n", "observed_agreement", "kappa", "kappa_linear", "kappa_quadratic"}
        assert entry["n"] == 6
        assert entry["kappa"] == pytest.approx(cohen_kappa_score(a, b, labels=[0, 1, 2, 3]), abs=1e-12)
        quadratic = cohen_kappa_score(a, b, labels=[0, 1, 2, 3], weights="quadratic")
        assert entry["kappa_quadratic"] == pytest.approx(quadratic, abs=1e-12)
        ci = kappa_ci(a, b, labels=[0, 1, 2, 3])  # the score interval, tested in test_kappa_interval
        assert entry["kappa_ci"] == [ci.low, ci.high] and ci.low < entry["kappa"] < ci.high
        assert entry["verdict"] == verdict(entry["kappa"], entry["kappa_ci"], bar=0.6)
    matrix = [by_rater[r] for r in report["raters"]]
    for level in ("nominal", "ordinal", "interval"):
        assert report["krippendorff_alpha"][level] == pytest.approx(
            krippendorff_alpha(matrix, level)["alpha"]
        )
    counts = np.array(
        [[sum(1 for i, _w, g in LONG if i == f"q{q}" and g == grade) for grade in range(4)] for q in "123456"]
    )
    assert report["fleiss_kappa"] == pytest.approx(fleiss_kappa(counts, method="fleiss"), abs=1e-12)


def test_report_from_csv_like_rows_text_labels_and_gaps() -> None:
    # Numeric strings (a CSV) are grades; a blank cell is a missing label.
    rows = [{"item": i, "rater": r, "label": str(g)} for i, r, g in LONG] + [
        {"item": "q7", "rater": "ann", "label": ""},
        {"item": "q7", "rater": "bob", "label": "1"},
    ]
    report = agreement_report(pd.DataFrame(rows), trusted=0.6)
    assert report["labels"] == [0, 1, 2, 3] and report["n_missing"] == 1
    assert report["fleiss_kappa"] is None and "same number of ratings" in report["fleiss_undefined_reason"]
    assert report["krippendorff_alpha"]["interval"] is not None
    text = [(i, r, {0: "none", 1: "some", 2: "most", 3: "all"}[g]) for i, r, g in LONG]
    text_report = agreement_report(text, trusted=0.6)
    pair = text_report["pairs"][0]
    assert pair["kappa"] is not None and pair["kappa_linear"] is None and pair["kappa_quadratic"] is None
    assert "weighted kappa needs numeric labels" in pair["weighted_undefined_reason"]
    assert text_report["krippendorff_alpha"]["ordinal"] is None
    assert text_report["krippendorff_alpha"]["interval"] is None
    assert text_report["krippendorff_alpha"]["nominal"] == pytest.approx(
        report["krippendorff_alpha"]["nominal"], abs=1e-9
    )
    ordered = agreement_report(text, labels=["none", "some", "most", "all"], trusted=0.6)
    assert ordered["pairs"][0]["kappa_quadratic"] == pytest.approx(
        agreement_report(LONG, trusted=0.6)["pairs"][0]["kappa_quadratic"]
    )
    assert ordered["pairs"][0]["kappa_ci"] == agreement_report(LONG, trusted=0.6)["pairs"][0]["kappa_ci"]


def test_report_undefined_pairs_and_bad_rows() -> None:
    rows = [("q1", "ann", 2), ("q2", "ann", 2), ("q1", "bob", 2), ("q2", "bob", 2), ("q3", "cy", 1)]
    report = agreement_report(rows, trusted=0.6)
    ann_bob, ann_cy, _ = report["pairs"]
    assert ann_bob["kappa"] is None and ann_bob["kappa_ci"] is None and ann_bob["verdict"] == "undefined"
    assert "same label 2" in ann_bob["undefined_reason"]
    assert ann_cy["n"] == 0 and ann_cy["kappa"] is None and ann_cy["verdict"] == "undefined"
    json.dumps(report, allow_nan=False)
    with pytest.raises(InvalidRatings, match="rater 'ann' rated item 'q1' more than once"):
        from_long([("q1", "ann", 1), ("q1", "ann", 2)])
    with pytest.raises(InvalidRatings, match="row 1: expected"):
        from_long([("q1", "ann", 1), ("q1", "ann")])
    with pytest.raises(InvalidRatings, match="no key 'rater'"):
        from_long([{"item": "q1", "label": 1}])
    with pytest.raises(InvalidRatings, match="not on the scale"):
        from_long(LONG, labels=[0, 1, 2])


def test_from_long_gives_full_detail() -> None:
    detail = from_long(LONG)
    assert detail["labels"] == [0, 1, 2, 3] and detail["numeric"] is True
    first = detail["pairs"][0]
    assert first["raters"] == ["ann", "bob"]
    assert (
        first["quadratic"]["confusion"]
        == cohen(
            [g for _i, r, g in LONG if r == "ann"],
            [g for _i, r, g in LONG if r == "bob"],
            labels=[0, 1, 2, 3],
        )["confusion"]
    )
    assert detail["fleiss"]["n_raters"] == 3
    assert detail["krippendorff"]["ordinal"]["n_pairable_items"] == 6
    # Whole-number grades fill the scale between the lowest and highest seen (nobody used 2 here).
    gap = from_long(
        [("q1", "a", 0), ("q1", "b", 3), ("q2", "a", 1), ("q2", "b", 1), ("q3", "a", 3), ("q3", "b", 3)]
    )
    assert gap["labels"] == [0, 1, 2, 3]


# --------------------------------------------------------------------------- 4. TREC RAG 2025


def read_qrels(path: Path) -> dict[tuple[str, str], int]:
    grades = {}
    for line in path.read_text().splitlines():
        topic, _iteration, docid, grade = line.split()
        grades[(topic, docid)] = int(grade)
    return grades


@needs_shared
def test_trec_rag_2025_nist_vs_umbrela() -> None:
    folder = SHARED / "data" / "trec_rag_umbrela"
    nist = read_qrels(folder / "qrels.rag25.test.txt")
    umbrela = read_qrels(folder / "qrels.rag25.test-umbrela2.txt")
    assert len(nist) == len(umbrela) == 10_284 and nist.keys() == umbrela.keys()
    keys = sorted(nist)
    human = np.array([nist[k] for k in keys])
    judge = np.array([umbrela[k] for k in keys])
    scale = [0, 1, 2, 3, 4]
    results = cohen_all(human, judge, labels=scale)
    for weights, key in ((None, "unweighted"), ("linear", "linear"), ("quadratic", "quadratic")):
        assert results[key]["kappa"] == pytest.approx(
            cohen_kappa_score(human, judge, labels=scale, weights=weights), abs=1e-9
        )
        assert results[key]["n"] == 10_284
    confusion = np.array(results["unweighted"]["confusion"])
    assert confusion.sum(axis=1).tolist() == [3619, 1499, 3760, 1318, 88]  # NIST grade counts
    assert confusion.sum(axis=0).tolist() == [2524, 2399, 3790, 1263, 308]  # UMBRELA grade counts
    relevant = binarised(human, judge, threshold=1)
    human_bin, judge_bin = (human >= 1).astype(int), (judge >= 1).astype(int)
    assert relevant["kappa"] == pytest.approx(cohen_kappa_score(human_bin, judge_bin), abs=1e-9)
    ci = bootstrap_ci(human, judge, weights="quadratic", labels=scale, n_resamples=2000, seed=0)
    assert ci.low < results["quadratic"]["kappa"] < ci.high
    print(
        "\nTREC RAG 2025 NIST vs UMBRELA-v2 (n = 10,284): "
        f"kappa {results['unweighted']['kappa']:.4f}, linear {results['linear']['kappa']:.4f}, "
        f"quadratic {results['quadratic']['kappa']:.4f} [{ci.low:.4f}, {ci.high:.4f}], "
        f"binary (>= 1) {relevant['kappa']:.4f}, exact agreement {results['unweighted']['observed_agreement']:.4f}"
    )
    # PROVENANCE.md states no published agreement figure for these files: nothing published to compare.


# --------------------------------------------------------------------------- layering


AGREEMENT_MODULES = (
    "agreement",
    "kappa",
    "kappa_interval",
    "kappa_sequence",
    "bootstrap",
    "multirater",
    "interval",
    "kappa_clustered",  # the query-clustered interval and the verdict with its design (issue #39)
    "judged",
)


@pytest.mark.parametrize("module", AGREEMENT_MODULES)
def test_agreement_module_is_pure(module: str) -> None:
    source = (ROOT / "calibration" / "stats" / f"{module}.py").read_text()
    imported = set()
    calibration_modules = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            imported |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            imported.add(node.module.split(".")[0])
            if node.module.split(".")[0] in ("calibration", "annotation"):
                calibration_modules.add(node.module)
    third_party = imported - {
        "__future__", "collections", "concurrent", "itertools", "math", "numbers", "os", "statistics", "sys", "threading", "typing", "warnings"
    }  # fmt: skip
    assert third_party <= {
        "numpy",
        "pandas",
        "scipy",
        "sklearn",
        "krippendorff",
        "calibration",
        "annotation",
    }, third_party
    # of the product, only the agreement modules, the light pure module of the verdict's thresholds
    # and the errors' root (standard library only)
    allowed = {f"calibration.stats.{name}" for name in AGREEMENT_MODULES} | {
        "calibration.stats.verdict",
        "calibration.results",  # the report's TypedDicts (typing only, under TYPE_CHECKING)
        "annotation.errors",
    }
    assert calibration_modules <= allowed, calibration_modules
    if module == "agreement":
        assert "from calibration.stats.verdict import" in source


def test_all_public_names_exist() -> None:
    import calibration.stats.agreement as agreement

    for name in agreement.__all__:
        assert hasattr(agreement, name), name


def test_kappa_of_confusion_is_scikit_learns_to_1e12() -> None:
    """The kappa `agree` prints is computed from one confusion matrix per pair in numpy;
    scikit-learn's cohen_kappa_score is the oracle, on 300 random pairs of every weighting."""
    from calibration.stats.kappa import kappa_of_confusion

    rng = np.random.default_rng(7)
    for trial in range(300):
        k = int(rng.integers(2, 7))
        n = int(rng.integers(2, 400))
        a = rng.integers(0, k, n)
        b = np.where(rng.random(n) < 0.6, a, rng.integers(0, k, n))
        confusion = np.bincount(a * k + b, minlength=k * k).reshape(k, k)
        for weights in (None, "linear", "quadratic"):
            theirs = sklearn_kappa(a, b, weights, list(range(k)))
            ours = kappa_of_confusion(confusion, weights)
            if math.isnan(theirs):
                assert math.isnan(ours), (trial, weights)
            else:
                assert ours == pytest.approx(theirs, abs=1e-12), (trial, weights)


def test_cohen_of_pairs_is_cohen_of_each_pair_to_the_last_bit() -> None:
    """The report's kappas come from one stack a scale length (#42); each pair's dict is the one
    it has alone, bit for bit (``repr`` of every float), over scales of 2-11 grades, one and two
    items, perfect agreement, one shared class and no item at all, mixed scale lengths in one call."""
    from calibration.stats.kappa import RaterPair, _cohen_of_pair, cohen_of_pairs

    rng = np.random.default_rng(5)
    compared = 0
    for _trial in range(60):
        pairs = []
        for _ in range(int(rng.integers(1, 30))):
            k = int(rng.integers(2, 12))
            n = int(rng.choice([0, 1, 2, 3, 7, 20, 100, 2000]))
            a = rng.integers(0, k, n)
            mode = rng.random()
            if mode < 0.1:
                b = a.copy()
            elif mode < 0.15:
                a = np.zeros(n, dtype=np.int64)
                b = a.copy()
            else:
                b = np.where(rng.random(n) < 0.7, a, rng.integers(0, k, n))
            pairs.append(RaterPair.of_codes(a.astype(np.int64), b.astype(np.int64), list(range(k))))
        for weights in (None, "linear", "quadratic"):
            fresh = [RaterPair.of_codes(p.a, p.b, p.scale) for p in pairs]
            for pair, got in zip(pairs, cohen_of_pairs(fresh, weights)):
                assert repr(got) == repr(_cohen_of_pair(pair, weights)), (pair.k, pair.n, weights)
                compared += 1
    assert compared > 1000
    undefined = cohen_of_pairs(
        [RaterPair.of_codes(np.zeros(3, np.int64), np.zeros(3, np.int64), [0, 1])], None
    )
    assert undefined[0]["kappa"] is None and "same label 0" in undefined[0]["undefined_reason"]


def test_agree_on_a_csv_imports_neither_pandas_nor_scikit_learn(tmp_path) -> None:
    """Start-up: `agree` reads a CSV and computes kappa without pandas (0.3 s) or scikit-learn
    (a second): the modules a run imports, seen in the process that ran it."""
    import subprocess
    import sys

    csv = tmp_path / "labels.csv"
    csv.write_text(
        "item,rater,label\n" + "".join(f"i{i},r{r},{(i * r) % 4}\n" for i in range(30) for r in range(4))
    )
    probe = (
        "import sys, runpy; sys.argv = ['calibration', 'agree', sys.argv[1]]\n"
        "try:\n    runpy.run_module('calibration', run_name='__main__')\n"
        "except SystemExit:\n    pass\n"
        "print(sorted(m for m in ('pandas', 'sklearn') if m in sys.modules), file=sys.stderr)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe, str(csv)], capture_output=True, text=True, cwd=ROOT, timeout=120
    )
    assert "kappa" in done.stdout.lower(), done.stderr
    assert done.stderr.strip().splitlines()[-1] == "[]", done.stderr
