"""The metrics engine against an oracle (pytrec_eval) and against its own reference.

1. ``evaluate`` vs pytrec_eval (trec_eval 9.x) on random graded qrels and
   random runs full of tied scores, shuffled line order, docids whose
   bytewise order differs from case-insensitive, numeric and UTF-16 order.
   Where the product deliberately differs (undefined where trec_eval prints
   0), the comparison is "undefined <-> 0", and *when* a value is undefined
   is checked independently.
2. ``evaluate`` (vectorized batch engine) vs ``evaluate_query`` (plain
   reference) on each query's trec-ordered ranking, with repeated documents,
   exponential gain, any cutoffs, and runs laid out in trec order (the
   engine's no-sort fast path), shuffled, chunked or sliced. A repeated
   document keeps its slot and scores nothing: both agree with counts taken
   straight from the ranking, and with the same ranking where every repeat
   is replaced by a fresh unjudged document.
3. Hand-computed fixtures, with the arithmetic beside each.
"""

from __future__ import annotations

import math

import numpy as np
import pyarrow as pa
import pytest
import pytrec_eval
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from annotation.model import Qrels, Run
from calibration.metrics import evaluate, evaluate_query

ORACLE_KS = (1, 3, 5, 10)
TOL = 1e-12

# Bytewise (UTF-8) order: "10" < "9" < "B" < "Z" < "a" < "b" < "é" < "｡" < "😀".
# Numeric, case-insensitive and UTF-16 orders all disagree somewhere here.
# The two "doc-0000…tail0000" ids share length, first 8 and last 8 bytes:
# the engine's 64-bit fingerprint of them collides and must be resolved exactly.
DOCS = [
    "a",
    "A",
    "b",
    "B",
    "Z",
    "z",
    "ab",
    "10",
    "9",
    "01",
    "1a",
    "é",
    "É",
    "e\u0301",
    "ß",
    "日本",
    "Ω",
    "\U0001f600",
    "\uff61",
    "abcdefgh",
    "abcdefghi",
    "doc-0000-x-tail0000",
    "doc-0000-y-tail0000",
    "zzzzzzzzzz",
]
UNJUDGED = ["u", "U9", "ü", "not-judged-anywhere"]
QIDS = ["q1", "Q1", "q10", "q2", "1", "é", "日"]
RUN_ONLY_QIDS = ["q-only-in-run", "Ω-run"]

# multiples of 0.25 (exact in float32, as pytrec_eval stores scores) with -0.0,
# which is a tie with 0.0, and the infinities (the run readers accept "inf")
SCORES = st.one_of(st.integers(-4, 4).map(lambda i: i * 0.25), st.sampled_from([-0.0, math.inf, -math.inf]))

PYTREC_MEASURES = {
    "P.1,3,5,10",
    "recall.1,3,5,10",
    "recip_rank",
    "ndcg_cut.1,3,5,10",
    "map",
    "success.1,3,5,10",
    "num_ret",
    "num_rel",
    "num_rel_ret",
}

HYPOTHESIS = settings(
    max_examples=300,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def pytrec_key(name: str) -> str:
    if "@" not in name:
        return {"RR": "recip_rank", "AP": "map"}[name]
    base, k = name.split("@")
    return {"P": "P", "R": "recall", "nDCG": "ndcg_cut", "Success": "success"}[base] + "_" + k


def run_from_rows(rows: list[tuple[str, str, float]]) -> Run:
    return Run(
        table=pa.table(
            {
                "q": pa.array([r[0] for r in rows], pa.string()),
                "d": pa.array([r[1] for r in rows], pa.string()),
                "s": pa.array([r[2] for r in rows], pa.float64()),
            }
        )
    )


def bytewise(qids) -> list[str]:
    return sorted(qids, key=lambda q: q.encode("utf-8"))


def repeated_ids(ranking: list[str]) -> list[str]:
    """The ids seen earlier in the ranking (written independently of the engine's helpers)."""
    return sorted({doc for i, doc in enumerate(ranking) if doc in ranking[:i]})


def filled(ranking: list[str]) -> list[str]:
    """The ranking with every repeat replaced by a fresh, never judged document in its slot."""
    return [doc if doc not in ranking[:i] else f"filler-{i}" for i, doc in enumerate(ranking)]


def trec_rankings(rows) -> dict[str, list[str]]:
    """Per query, docids by score descending, ties by docid descending bytewise
    (written independently of ``Run.rankings``)."""
    out: dict[str, list[tuple[float, bytes]]] = {}
    for q, d, s in rows:
        out.setdefault(q, []).append((s, d.encode("utf-8")))
    return {q: [d.decode("utf-8") for _, d in sorted(v, reverse=True)] for q, v in out.items()}


# ----------------------------------------------------------------- strategies


@st.composite
def oracle_cases(draw):
    """(grades, run rows in shuffled line order, min_grade); no repeated (q, d)."""
    qrels_qids = draw(st.lists(st.sampled_from(QIDS), min_size=1, max_size=6, unique=True))
    grades = {
        q: draw(st.dictionaries(st.sampled_from(DOCS), st.integers(-1, 4), min_size=1, max_size=12))
        for q in qrels_qids
    }
    judged_in_run = draw(st.lists(st.sampled_from(qrels_qids), min_size=1, max_size=6, unique=True))
    others = [q for q in QIDS + RUN_ONLY_QIDS if q not in grades]
    unjudged_in_run = draw(st.lists(st.sampled_from(others), max_size=2, unique=True))
    rows = []
    for q in judged_in_run + unjudged_in_run:
        docs = draw(st.lists(st.sampled_from(DOCS + UNJUDGED), min_size=1, max_size=20, unique=True))
        rows.extend((q, d, draw(SCORES)) for d in docs)
    rows = draw(st.permutations(rows))
    min_grade = draw(st.integers(1, 3))
    return grades, rows, min_grade


@st.composite
def engine_cases(draw):
    """Like ``oracle_cases`` but with repeated documents, any cutoffs, both gains,
    empty judgment sets, and several physical layouts of the run table."""
    qrels_qids = draw(st.lists(st.sampled_from(QIDS), min_size=1, max_size=6, unique=True))
    grades = {
        q: draw(st.dictionaries(st.sampled_from(DOCS), st.integers(-1, 4), min_size=0, max_size=12))
        for q in qrels_qids
    }
    judged_in_run = draw(st.lists(st.sampled_from(qrels_qids), max_size=6, unique=True))
    others = [q for q in QIDS + RUN_ONLY_QIDS if q not in grades]
    unjudged_in_run = draw(st.lists(st.sampled_from(others), max_size=2, unique=True))
    rows = []
    for q in judged_in_run + unjudged_in_run:
        docs = draw(st.lists(st.sampled_from(DOCS + UNJUDGED), min_size=1, max_size=25))
        rows.extend((q, d, draw(SCORES)) for d in docs)
        # the same document again, possibly with another score
        for d in draw(st.lists(st.sampled_from(docs), max_size=3)):
            rows.append((q, d, draw(SCORES)))
    layout = draw(st.sampled_from(["shuffled", "trec", "grouped", "grouped_equal", "chunked", "sliced"]))
    if layout == "trec":
        # the order a tool writing trec runs would use (the engine's no-sort path)
        rows.sort(key=lambda r: (r[0].encode(), -r[2], _Desc(r[1].encode())))
    elif layout.startswith("grouped"):
        # each query's lines together, queries and lines in any order (the engine's
        # block-sort path; with blocks of equal length, its reshape path)
        blocks: dict[str, list] = {}
        for row in rows:
            blocks.setdefault(row[0], []).append(row)
        if layout == "grouped_equal":
            width = min((len(b) for b in blocks.values()), default=0)
            blocks = {q: b[:width] for q, b in blocks.items()}
        rows = []
        for q in draw(st.permutations(list(blocks))):
            rows.extend(draw(st.permutations(blocks[q])))
    else:
        rows = draw(st.permutations(rows))
    ks = draw(st.lists(st.integers(1, 30), min_size=1, max_size=4, unique=True))
    min_grade = draw(st.integers(0, 4))
    gain = draw(st.sampled_from(["linear", "exp"]))
    split = draw(st.integers(0, len(rows)))
    return grades, rows, layout, split, ks, min_grade, gain


class _Desc:
    """Sort key wrapper that reverses the order of bytes values."""

    def __init__(self, value: bytes):
        self.value = value

    def __lt__(self, other: _Desc) -> bool:
        return self.value > other.value

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Desc) and self.value == other.value


def build_run(rows, layout: str, split: int) -> Run:
    run = run_from_rows(rows)
    if layout == "chunked":
        table = pa.concat_tables([run.table.slice(0, split), run.table.slice(split)])
        return Run(table=table)
    if layout == "sliced":
        # arrays with a non-zero offset into their buffers
        junk = [("q1", "junk-" + str(i), 9.0) for i in range(3)]
        table = run_from_rows(junk + list(rows) + junk).table.slice(len(junk), len(rows))
        return Run(table=Run(table=table).table)
    return run


# ------------------------------------------------------- 1. against pytrec_eval


@pytest.mark.slow  # oracle property test: 300 cases
@HYPOTHESIS
@given(oracle_cases())
def test_evaluate_matches_pytrec_eval(case):
    grades, rows, min_grade = case
    run = run_from_rows(rows)
    ev = evaluate(Qrels(grades=grades), run, ks=ORACLE_KS, min_grade=min_grade)

    run_dict: dict[str, dict[str, float]] = {}
    for q, d, s in rows:
        run_dict.setdefault(q, {})[d] = s
    oracle = pytrec_eval.RelevanceEvaluator(grades, PYTREC_MEASURES, relevance_level=min_grade).evaluate(
        run_dict
    )

    # only queries both judged and retrieved, in bytewise order
    assert ev.qids == bytewise(set(grades) & set(run_dict))
    assert set(oracle) == set(ev.qids)
    assert ev.missing_from_run == bytewise(set(grades) - set(run_dict))
    assert ev.not_in_qrels == len(set(run_dict) - set(grades))
    assert ev.duplicates == {}

    for i, qid in enumerate(ev.qids):
        expected = oracle[qid]
        n_rel = sum(1 for g in grades[qid].values() if g >= min_grade)
        has_gain = any(g >= 1 for g in grades[qid].values())
        assert ev.num_ret[i] == expected["num_ret"] == len(run_dict[qid])
        assert ev.num_rel[i] == expected["num_rel"] == n_rel
        assert ev.num_rel_ret[i] == expected["num_rel_ret"]
        for name in ev.measures:
            got = ev.values[name][i]
            want = expected[pytrec_key(name)]
            if name.startswith("P@"):
                should_be_undefined = False
            elif name.startswith("nDCG@"):
                should_be_undefined = not has_gain
            else:
                should_be_undefined = n_rel == 0
            where = f"{qid!r} {name}: got {got}, pytrec_eval {want}"
            if should_be_undefined:
                assert math.isnan(got), where
                assert want == 0.0, where
            else:
                assert not math.isnan(got), where
                assert abs(got - want) <= TOL, where


# ------------------------------------------- 2. batch engine == reference


@pytest.mark.slow  # oracle property test: 300 cases
@HYPOTHESIS
@given(engine_cases())
def test_batch_engine_matches_reference(case):
    grades, rows, layout, split, ks, min_grade, gain = case
    run = build_run(rows, layout, split)
    qrels = Qrels(grades=grades)
    rankings = trec_rankings(rows)
    assert run.rankings() == rankings
    for missing in ("drop", "zero"):
        ev = evaluate(qrels, run, ks=ks, min_grade=min_grade, missing=missing, gain=gain)
        retrieved = set(rankings) & set(grades)
        if missing == "drop":
            assert ev.qids == bytewise(retrieved)
        else:
            assert ev.qids == bytewise(grades)
        assert ev.missing_from_run == bytewise(set(grades) - retrieved)
        assert ev.not_in_qrels == len(set(rankings) - set(grades))
        assert list(ev.evaluated) == [q in retrieved for q in ev.qids]

        expected_dups = {q: repeated_ids(rankings[q]) for q in retrieved if repeated_ids(rankings[q])}
        assert {q: sorted(ids) for q, ids in ev.duplicates.items()} == expected_dups

        for i, qid in enumerate(ev.qids):
            ranking = rankings.get(qid, [])
            ref = evaluate_query(ranking, grades[qid], ks=ks, min_grade=min_grade, gain=gain)
            relevant = {d for d, g in grades[qid].items() if g >= min_grade}
            # a repeat keeps its slot: num_ret counts positions, hits distinct documents
            assert ev.num_ret[i] == ref["num_ret"] == len(ranking)
            assert ev.num_rel[i] == ref["rel"]
            assert ev.num_rel_ret[i] == len(relevant & set(ranking))
            for k in ks:
                hits = len(relevant & set(ranking[:k]))
                assert ev.values[f"P@{k}"][i] == pytest.approx(hits / k, abs=TOL)
                if relevant:
                    assert ev.values[f"R@{k}"][i] == pytest.approx(hits / len(relevant), abs=TOL)
            for name in ev.measures:
                got, want = ev.values[name][i], ref[name]
                where = f"{qid!r} {name} ({layout}, {missing}): got {got}, reference {want}"
                if want is None:
                    assert math.isnan(got), where
                else:
                    assert abs(got - want) <= TOL, where
            assert ev.query(qid).keys() == {"rel", *ev.measures}

        for name in ev.measures:
            column = ev.values[name]
            defined = column[~np.isnan(column)]
            assert ev.undefined(name) == len(column) - len(defined)
            if len(defined):
                assert ev.mean(name) == pytest.approx(float(defined.mean()), abs=TOL)
            else:
                assert ev.mean(name) is None


@pytest.mark.slow  # oracle property test: 300 cases
@HYPOTHESIS
@given(engine_cases())
def test_a_repeat_scores_as_a_fresh_unjudged_document_in_its_slot(case):
    """The rule as a relation: the engine on a run with repeats gives exactly what it gives
    on the same rankings with every repeat replaced by a never judged document."""
    grades, rows, _layout, _split, ks, min_grade, gain = case
    rankings = trec_rankings(rows)
    qrels = Qrels(grades=grades)
    with_repeats = evaluate(qrels, Run.from_rankings(rankings), ks=ks, min_grade=min_grade, gain=gain)
    without = evaluate(
        qrels,
        Run.from_rankings({q: filled(r) for q, r in rankings.items()}),
        ks=ks,
        min_grade=min_grade,
        gain=gain,
    )
    assert without.duplicates == {}
    assert with_repeats.qids == without.qids
    for name in with_repeats.measures:
        np.testing.assert_allclose(with_repeats.values[name], without.values[name], rtol=0, atol=TOL)
    np.testing.assert_array_equal(with_repeats.num_ret, without.num_ret)
    np.testing.assert_array_equal(with_repeats.num_rel_ret, without.num_rel_ret)


@pytest.mark.slow  # oracle property test: 300 cases
@HYPOTHESIS
@given(oracle_cases(), st.data())
def test_line_order_never_matters(case, data):
    """Any permutation of the same rows gives bit-identical values."""
    grades, rows, min_grade = case
    first = evaluate(Qrels(grades=grades), run_from_rows(rows), ks=ORACLE_KS, min_grade=min_grade)
    again = evaluate(
        Qrels(grades=grades),
        run_from_rows(data.draw(st.permutations(rows))),
        ks=ORACLE_KS,
        min_grade=min_grade,
    )
    assert first.qids == again.qids
    for name in first.measures:
        np.testing.assert_array_equal(first.values[name], again.values[name])
    np.testing.assert_array_equal(first.num_rel_ret, again.num_rel_ret)


# ------------------------------------------------------------ 3. hand fixtures


def both(grades: dict[str, int], run: Run | list[str], ks, min_grade: int = 1, gain: str = "linear"):
    """evaluate()'s values for the single query "q", after checking evaluate_query agrees."""
    if isinstance(run, list):
        run = Run.from_rankings({"q": run})
    ev = evaluate(Qrels(grades={"q": grades}), run, ks=ks, min_grade=min_grade, gain=gain)
    assert ev.qids == ["q"]
    got = ev.query("q")
    got["num_ret"] = int(ev.num_ret[0])
    got["num_rel_ret"] = int(ev.num_rel_ret[0])
    ref = evaluate_query(run.rankings()["q"], grades, ks=ks, min_grade=min_grade, gain=gain)
    for name in ev.measures:
        if ref[name] is None:
            assert got[name] is None, name
        else:
            assert got[name] == pytest.approx(ref[name], abs=TOL), name
    assert got["rel"] == ref["rel"] and got["num_ret"] == ref["num_ret"]
    return got


def approx(x: float):
    return pytest.approx(x, abs=TOL)


LOG2_3 = math.log2(3)


def test_all_relevant_retrieved():
    # grades a3 b2 c1 n0; ranking a b c n (ideal order)
    # P@3 = 3/3 = 1;  P@5 = 3/5 = 0.6 (divides by k even with 4 retrieved)
    # R@3 = 3/3;  RR = 1/1;  AP = (1/1 + 2/2 + 3/3) / 3 = 1;  nDCG@3 = nDCG@5 = 1
    v = both({"a": 3, "b": 2, "c": 1, "n": 0}, ["a", "b", "c", "n"], ks=(1, 3, 5))
    assert v["P@3"] == 1.0 and v["P@5"] == approx(0.6) and v["P@1"] == 1.0
    assert v["R@1"] == approx(1 / 3) and v["R@3"] == 1.0 and v["R@5"] == 1.0
    assert v["RR"] == 1.0 and v["AP"] == approx(1.0)
    assert v["nDCG@3"] == approx(1.0) and v["nDCG@5"] == approx(1.0) and v["nDCG@1"] == approx(1.0)
    assert v["Success@1"] == 1.0
    assert (v["rel"], v["num_ret"], v["num_rel_ret"]) == (3, 4, 3)


def test_no_relevant_retrieved_is_zero_not_undefined():
    # grades a2 b1; ranking x y z (all unjudged): |Rel| = 2 > 0 so everything is defined
    # P@3 = 0/3, R@3 = 0/2, RR = 0, AP = 0/2, nDCG@3 = 0 / (2 + 1/log2 3) = 0, Success@3 = 0
    v = both({"a": 2, "b": 1}, ["x", "y", "z"], ks=(3,))
    for name in ("P@3", "R@3", "RR", "AP", "nDCG@3", "Success@3"):
        assert v[name] == 0.0, name
    assert (v["rel"], v["num_ret"], v["num_rel_ret"]) == (2, 3, 0)


def test_one_of_three_relevant():
    # grades a1 b1 c1; ranking x b y z w: one hit at rank 2
    # P@5 = 1/5;  R@5 = 1/3;  RR = 1/2;  AP = (1/2) / 3 = 1/6
    # DCG@5 = 1/log2 3;  IDCG@5 = 1/log2 2 + 1/log2 3 + 1/log2 4 = 1 + 1/log2 3 + 1/2
    v = both({"a": 1, "b": 1, "c": 1}, ["x", "b", "y", "z", "w"], ks=(1, 3, 5))
    assert v["P@5"] == approx(0.2) and v["P@3"] == approx(1 / 3) and v["P@1"] == 0.0
    assert v["R@5"] == approx(1 / 3) and v["R@1"] == 0.0
    assert v["RR"] == approx(0.5) and v["AP"] == approx(1 / 6)
    assert v["nDCG@5"] == approx((1 / LOG2_3) / (1 + 1 / LOG2_3 + 0.5))
    assert v["Success@1"] == 0.0 and v["Success@3"] == 1.0


def test_hit_just_below_the_cutoff():
    # grades r2 n0; ranking n x y r: the only relevant document is at rank 4 = k + 1 for k = 3
    # @3: P = R = nDCG = Success = 0;  @5: P = 1/5, R = 1, Success = 1,
    # nDCG@5 = (2/log2 5) / (2/log2 2) = 1/log2 5;  RR = 1/4;  AP = (1/4) / 1
    v = both({"r": 2, "n": 0}, ["n", "x", "y", "r"], ks=(3, 5))
    for name in ("P@3", "R@3", "nDCG@3", "Success@3"):
        assert v[name] == 0.0, name
    assert v["P@5"] == approx(0.2) and v["R@5"] == 1.0 and v["Success@5"] == 1.0
    assert v["nDCG@5"] == approx(1 / math.log2(5))
    assert v["RR"] == 0.25 and v["AP"] == 0.25


def test_fewer_results_than_k():
    # grades a1 b1; ranking a b; k = 10: P@10 = 2/10 (not 2/2), R@10 = 2/2, nDCG@10 = 1
    v = both({"a": 1, "b": 1}, ["a", "b"], ks=(1, 10))
    assert v["P@10"] == approx(0.2) and v["P@1"] == 1.0
    assert v["R@10"] == 1.0 and v["nDCG@10"] == approx(1.0) and v["AP"] == approx(1.0)
    assert v["num_ret"] == 2


def test_empty_relevant_set_is_undefined_not_zero():
    # grades a0 b-1: |Rel| = 0 and no grade >= 1 gains, so R, RR, AP, Success and nDCG
    # are all undefined; P@3 = 0/3 is still defined
    v = both({"a": 0, "b": -1}, ["a", "b", "c"], ks=(3,))
    for name in ("R@3", "RR", "AP", "Success@3", "nDCG@3"):
        assert v[name] is None, name
    assert v["P@3"] == 0.0
    assert v["rel"] == 0


def test_empty_relevant_set_at_threshold_keeps_ndcg():
    # grades a1 b2, min_grade 3: |Rel| = 0, so R, RR, AP, Success undefined and P@2 = 0/2;
    # nDCG's ideal is from all grades >= 1 whatever the threshold: ranking b a is ideal, nDCG@2 = 1
    v = both({"a": 1, "b": 2}, ["b", "a"], ks=(2,), min_grade=3)
    for name in ("R@2", "RR", "AP", "Success@2"):
        assert v[name] is None, name
    assert v["P@2"] == 0.0
    assert v["nDCG@2"] == approx(1.0)


def test_undefined_left_out_of_the_mean():
    # q1 (a1): ranking a -> R@3 = 1;  q2 (a0): R@3 undefined.  Mean R@3 = 1 over 1 query, 1 undefined
    # (trec_eval would print 0 for q2 and average to 0.5)
    qrels = Qrels(grades={"q1": {"a": 1}, "q2": {"a": 0}})
    ev = evaluate(qrels, Run.from_rankings({"q1": ["a"], "q2": ["a"]}), ks=(3,), min_grade=1)
    assert ev.mean("R@3") == 1.0 and ev.undefined("R@3") == 1
    assert ev.mean("P@3") == approx(1 / 6) and ev.undefined("P@3") == 0


def test_duplicated_chunk_keeps_its_slot():
    # ranking a a a b (from_rankings scores 4 3 2 1); grades a1 b1
    # positions: a, repeat, repeat, b (rank 4; nothing moves up).  Top 3 holds one distinct
    # relevant document: P@3 = 1/3 (a naive positional count: 3/3 and R@3 = 3/2), R@3 = 1/2,
    # RR = 1, AP = (1/1 + 2/4)/2 = 3/4;  num_ret = 4 positions, num_rel_ret = 2
    run = Run.from_rankings({"q": ["a", "a", "a", "b"]})
    v = both({"a": 1, "b": 1}, run, ks=(3,))
    assert v["P@3"] == approx(1 / 3) and v["R@3"] == 0.5
    assert v["RR"] == 1.0 and v["AP"] == approx(3 / 4)
    assert (v["num_ret"], v["num_rel_ret"]) == (4, 2)
    ev = evaluate(Qrels(grades={"q": {"a": 1, "b": 1}}), run, ks=(3,), min_grade=1)
    assert ev.duplicates == {"q": ["a"]}


def test_repeat_takes_the_slot_of_a_relevant_document_below():
    # issue #14: ranking d1 d1 x3 x2 x1 d2, grades d1 3, d2 2, d3 1 (|Rel| = 3), k = 5.
    # The user sees d1 twice in the top 5 and never d2 (rank 6): one distinct relevant.
    # R@5 = 1/3 (not 2/3 from moving d2 up);  P@5 = 1/5;  RR = 1/1;  Success@5 = 1
    # AP = (1/1 + 2/6) / 3 = 4/9  (d2 at rank 6, where 2 of 6 are relevant)
    # nDCG@5 = 3/log2 2 / IDCG@5, IDCG@5 = 3/1 + 2/log2 3 + 1/log2 4 = 3.5 + 2/log2 3
    # nDCG@6 = (3 + 2/log2 7) / (3.5 + 2/log2 3);  exp gain: (7 + 3/log2 7) / (7 + 3/log2 3 + 1/2)
    # num_ret = 6 positions, num_rel_ret = 2
    grades = {"d1": 3, "d2": 2, "d3": 1}
    ranking = ["d1", "d1", "x3", "x2", "x1", "d2"]
    v = both(grades, ranking, ks=(5, 6))
    assert v["R@5"] == approx(1 / 3) and v["P@5"] == approx(1 / 5) and v["RR"] == 1.0
    assert v["Success@5"] == 1.0 and v["AP"] == approx(4 / 9)
    idcg = 3.5 + 2 / LOG2_3
    assert v["nDCG@5"] == approx(3 / idcg)
    assert v["nDCG@6"] == approx((3 + 2 / math.log2(7)) / idcg)
    assert v["R@6"] == approx(2 / 3) and v["P@6"] == approx(2 / 6)
    assert (v["num_ret"], v["num_rel_ret"]) == (6, 2)
    exp = both(grades, ranking, ks=(6,), gain="exp")
    assert exp["nDCG@6"] == approx((7 + 3 / math.log2(7)) / (7 + 3 / LOG2_3 + 0.5))
    ev = evaluate(
        Qrels(grades={"q": grades}),
        Run.from_rankings({"q": ranking}),
        ks=(5,),
        with_positional=True,
        min_grade=1,
    )
    assert ev.duplicates == {"q": ["d1"]}
    assert ev.counts["positional@5"][0] == 2 and ev.counts["hits@5"][0] == 1
    assert ev.counts["judged@5"][0] == 1  # d1 once; x1 x2 x3 unjudged


def test_duplicate_scores_at_its_first_rank_in_score_order():
    # rows (a 1.0) (b 3.0) (a 5.0): trec order a(5) b(3) a(1): the repeat is the last a (rank 3)
    # grades b1: RR = 1/2 (not 1/1 from line order, not 1/3 from scoring the last a); P@2 = 1/2;
    # num_ret = 3 positions
    run = run_from_rows([("q", "a", 1.0), ("q", "b", 3.0), ("q", "a", 5.0)])
    v = both({"b": 1}, run, ks=(2,))
    assert v["RR"] == 0.5 and v["P@2"] == 0.5 and v["num_ret"] == 3
    # grades a1: the a at rank 1 scores, its repeat at rank 3 does not: AP = (1/1) / 1, P@3 = 1/3
    w = both({"a": 1}, run, ks=(3,))
    assert w["AP"] == 1.0 and w["P@3"] == approx(1 / 3) and w["num_rel_ret"] == 1


def test_fingerprint_collision_is_not_a_duplicate():
    # same length, same first 8 and last 8 bytes: distinct documents, both count
    x, y = "doc-0000-x-tail0000", "doc-0000-y-tail0000"
    v = both({x: 1, y: 1}, [x, y], ks=(2,))
    assert v["P@2"] == 1.0 and v["num_ret"] == 2
    ev = evaluate(
        Qrels(grades={"q": {x: 1, y: 1}}), Run.from_rankings({"q": [x, y, x]}), ks=(2,), min_grade=1
    )
    assert ev.duplicates == {"q": [x]} and ev.num_ret[0] == 3 and ev.num_rel_ret[0] == 2


def test_ties_by_docid_descending_bytewise():
    # all scores 1.0; bytewise descending: "é"(C3 A9) > "b" > "a" > "B" > "9" > "10"
    # (not numeric: 10 > 9; not case-insensitive: B next to b)
    # grades B2 "10"1: ranks 4 and 6.  RR = 1/4;  AP = (1/4 + 2/6)/2 = 7/24;  P@5 = 1/5
    docs = ["b", "B", "a", "10", "9", "é"]
    run = run_from_rows([("q", d, 1.0) for d in docs])
    assert run.rankings()["q"] == ["é", "b", "a", "B", "9", "10"]
    grades = {"B": 2, "10": 1}
    v = both(grades, run, ks=(5,))
    assert v["RR"] == 0.25 and v["AP"] == approx(7 / 24) and v["P@5"] == approx(0.2)
    oracle = pytrec_eval.RelevanceEvaluator({"q": grades}, {"recip_rank", "map"}).evaluate(
        {"q": {d: 1.0 for d in docs}}
    )
    assert oracle["q"]["recip_rank"] == 0.25 and oracle["q"]["map"] == approx(7 / 24)


def test_ties_between_zero_and_negative_zero():
    # -0.0 == 0.0 is a tie, broken by docid descending: b then a
    run = run_from_rows([("q", "a", 0.0), ("q", "b", -0.0)])
    assert run.rankings()["q"] == ["b", "a"]
    v = both({"a": 1}, run, ks=(1,))
    assert v["RR"] == 0.5 and v["P@1"] == 0.0


def test_line_order_is_not_rank_order():
    # lines (q1 c 1.0) (q2 y 0.5) (q1 a 3.0) (q2 x 2.0) (q1 b 2.0)
    # q1 by score: a b c; grades c1 -> RR = 1/3 (line order would give 1/1), P@1 = 0
    # q2 by score: x y;   grades y2 -> RR = 1/2, nDCG@2 = (2/log2 3) / 2 = 1/log2 3
    rows = [("q1", "c", 1.0), ("q2", "y", 0.5), ("q1", "a", 3.0), ("q2", "x", 2.0), ("q1", "b", 2.0)]
    ev = evaluate(Qrels(grades={"q1": {"c": 1}, "q2": {"y": 2}}), run_from_rows(rows), ks=(1, 2), min_grade=1)
    q1, q2 = ev.query("q1"), ev.query("q2")
    assert q1["RR"] == approx(1 / 3) and q1["P@1"] == 0.0 and q1["AP"] == approx(1 / 3)
    assert q2["RR"] == 0.5 and q2["nDCG@2"] == approx(1 / LOG2_3)


def test_graded_ndcg_linear_and_exp():
    # grades a3 b2 c0 d1; ranking b c a
    # linear: DCG@3 = 2/1 + 0 + 3/2 = 3.5;  IDCG@3 = 3 + 2/log2 3 + 1/2
    # exp (2^g - 1): DCG@3 = 3/1 + 7/2 = 6.5;  IDCG@3 = 7 + 3/log2 3 + 1/2
    grades = {"a": 3, "b": 2, "c": 0, "d": 1}
    lin = both(grades, ["b", "c", "a"], ks=(3,))
    assert lin["nDCG@3"] == approx(3.5 / (3 + 2 / LOG2_3 + 0.5))
    exp = both(grades, ["b", "c", "a"], ks=(3,), gain="exp")
    assert exp["nDCG@3"] == approx(6.5 / (7 + 3 / LOG2_3 + 0.5))


def test_negative_grade_is_judged_never_relevant_and_never_gains():
    # grades n-1 a1; ranking n a: n is not relevant and gains nothing.
    # RR = 1/2;  nDCG@2 = (1/log2 3) / 1;  exp gain of -1 would be 2^-1 - 1 < 0 and must not count
    for gain in ("linear", "exp"):
        v = both({"n": -1, "a": 1}, ["n", "a"], ks=(2,), gain=gain)
        assert v["RR"] == 0.5 and v["nDCG@2"] == approx(1 / LOG2_3) and v["rel"] == 1


def test_run_queries_not_in_qrels_are_ignored():
    ev = evaluate(
        Qrels(grades={"q": {"a": 1}}), Run.from_rankings({"q": ["a"], "other": ["a"]}), ks=(1,), min_grade=1
    )
    assert ev.qids == ["q"] and ev.not_in_qrels == 1


def test_run_with_no_judged_query():
    # nothing to evaluate: no query, no crash
    ev = evaluate(
        Qrels(grades={"q": {"a": 1}}), Run.from_rankings({"other": ["a", "b"]}), ks=(1,), min_grade=1
    )
    assert ev.qids == [] and ev.missing_from_run == ["q"] and ev.not_in_qrels == 1
    assert ev.mean("P@1") is None


def test_empty_run():
    ev = evaluate(Qrels(grades={"q": {"a": 1}}), Run.from_rankings({}), ks=(1,), missing="zero", min_grade=1)
    assert ev.qids == ["q"] and ev.values["P@1"][0] == 0.0 and ev.values["R@1"][0] == 0.0


def test_run_longer_than_one_hashing_chunk():
    # the engine hashes docids in chunks of 2**20 rows; a repeat whose two copies
    # fall in different chunks is still one document.  Ranking d0 .. d(n-1), then d0
    # again at the lowest score (rank n + 1, a repeat: it scores nothing); grades d0 1, d(n-1) 1.
    # num_ret = n + 1 positions;  RR = 1;  AP = (1/1 + 2/n) / 2;  P@10 = 1/10
    n = (1 << 20) + 5
    docs = [f"d{i}" for i in range(n)] + ["d0"]
    grades = {"d0": 1, f"d{n - 1}": 1}
    run = run_from_rows([("q", d, float(len(docs) - i)) for i, d in enumerate(docs)])
    ev = evaluate(Qrels(grades={"q": grades}), run, ks=(10,), min_grade=1)
    assert ev.duplicates == {"q": ["d0"]}
    assert ev.num_ret[0] == n + 1 and ev.num_rel_ret[0] == 2
    assert ev.values["AP"][0] == approx((1 + 2 / n) / 2)
    assert ev.values["RR"][0] == 1.0 and ev.values["P@10"][0] == approx(0.1)


@pytest.mark.parametrize(
    "ids",
    [
        ["q2", "q2", "q10", "q10", "q10", "q1", "q1", "q1"],  # in blocks: compared row by row
        ["q2", "q10", "q2", "q10", "q1", "q10", "q1", "q1"],  # not: through a dictionary
        ["q2", "q2", "q2", "q2", "q10", "q10", "q10", "q10", "q2", "q1"],  # a query comes back
    ],
)
def testquery_indices_in_blocks_or_not(ids):
    from calibration.metrics import query_indices

    expected = sorted(set(ids), key=lambda q: q.encode("utf-8"))
    for column in (pa.array(ids), pa.chunked_array([ids[:3], ids[3:]])):
        queries, index = query_indices(column)
        assert queries.to_pylist() == ["q1", "q10", "q2"]  # bytewise
        assert index.dtype == np.int32
        assert [expected[i] for i in index] == ids


@pytest.mark.parametrize("width", [0, 3, 7, 8, 9, 16, 23])
def test_ids_of_one_length_get_the_general_paths_keys(width):
    """The hash of ids of one length reads their bytes as a table; the keys must be the general
    path's, since a run's keys meet those of judgments hashed apart (any mix of lengths)."""
    from calibration.metrics import _duplicate_keys

    rng = np.random.default_rng(width)
    ids = ["".join(chr(c) for c in rng.integers(33, 127, width)) for _ in range(500)]
    ids.append("é" * (width // 2) + "a" * (width % 2))  # two-byte characters, the same byte length
    qi = rng.integers(0, 20, len(ids)).astype(np.int32)
    mixed = pa.array([*ids, "an id of another length" + "x" * width])  # the general path
    general = _duplicate_keys(mixed, np.append(qi, 0).astype(np.int32))[:-1]
    assert (_duplicate_keys(pa.array(ids), qi) == general).all()
    assert (_duplicate_keys(pa.array(ids).slice(7, 100), qi[7:107]) == general[7:107]).all()


@pytest.mark.parametrize("rows", [0, 1, (1 << 14) - 1, 1 << 14, (1 << 14) * 3 + 5])
def test_the_bitmap_of_judged_keys_is_read_chunk_by_chunk_as_whole(rows):
    """:func:`_maybe_in` reads the keys a cache-sized chunk at a time (#42): its rows are those of
    one look-up of every key in the same bitmap, every row whose key is a member among them."""
    from calibration.metrics import _maybe_in

    rng = np.random.default_rng(rows)
    keys = rng.integers(0, 1 << 32, rows, dtype=np.uint64).astype(np.uint32)
    members = np.sort(
        np.concatenate([keys[::97], rng.integers(0, 1 << 32, 300, dtype=np.uint64).astype(np.uint32)])
    )
    bits = min(24, max(16, len(members).bit_length() + 6))
    buckets = np.zeros(1 << bits, dtype=bool)
    buckets[members >> (32 - bits)] = True
    whole = np.flatnonzero(buckets[keys >> (32 - bits)])
    found = _maybe_in(keys, members)
    assert found.dtype == whole.dtype and found.tolist() == whole.tolist()
    assert set(np.flatnonzero(np.isin(keys, members)).tolist()) <= set(found.tolist())
    assert len(found) >= len(keys[::97])
