"""Position bias of both-order pairwise judgments: hand-computed cases, the product's
stored form, and real judges (LLMBar Natural, CrowdRAG-25 GPT-4o)."""

from __future__ import annotations

import gzip
import json
from collections import Counter
from fractions import Fraction

import pytest

from calibration.results import POSITION_KEYS
from calibration.stats.position import from_slots, position_bias
from judge.pairwise import summarize_pairs
from tests.conftest import shared_dir

SHARED = shared_dir()
needs_shared = pytest.mark.skipif(SHARED is None, reason="../shared/data not found")
KEYS = set(POSITION_KEYS)  # what `calibration position` prints


def both(item, ab, ba, repeat=0):
    """One comparison: the candidate chosen in order AB and in order BA."""
    return [
        {"item": item, "order": "AB", "choice": ab, "repeat": repeat},
        {"item": item, "order": "BA", "choice": ba, "repeat": repeat},
    ]


def test_always_first_slot_judge():
    # order AB shows A first, BA shows B first: always the first slot = A then B
    rows = [r for i in range(5) for r in both(i, "A", "B")]
    out = position_bias(rows)
    assert KEYS <= out.keys()
    assert out["n_pairs"] == 5 and out["n_comparisons"] == 5
    assert out["position_consistency"] == 0.0
    assert out["primacy_rate"] == 1.0
    assert out["recency_rate"] == 0.0
    assert out["preference_fairness"] == pytest.approx(-1.0)
    assert out["mean_preference_A"] == 0.5  # swap-and-average cancels the slot preference
    assert out["repetition_stability"] is None
    assert "repeat" in out["undefined"]["repetition_stability"]


def test_always_second_slot_judge():
    rows = [r for i in range(3) for r in both(i, "B", "A")]
    out = position_bias(rows)
    assert out["position_consistency"] == 0.0
    assert out["primacy_rate"] == 0.0 and out["recency_rate"] == 1.0
    assert out["preference_fairness"] == pytest.approx(1.0)
    assert out["mean_preference_A"] == 0.5


def test_perfectly_consistent_judge():
    rows = both("p1", "A", "A") + both("p2", "B", "B") + both("p3", "tie", "tie") + both("p4", "A", "A")
    out = position_bias(rows)
    assert out["position_consistency"] == 1.0
    assert out["primacy_rate"] == 0.0 and out["recency_rate"] == 0.0
    # no inconsistent comparison: PF_raw = 0, and 0 is a defined, fair value here
    assert out["preference_fairness"] == 0.0
    assert "preference_fairness" not in out["undefined"]
    assert out["mean_preference_A"] == pytest.approx((1 + 0 + 0.5 + 1) / 4)
    assert out["n_consistent"] == 4


def test_mixture_hand_computed():
    rows = (
        both("p1", "A", "A")  # consistent (FS); preference 1
        + both("p2", "A", "B")  # first slot both times (FF): primacy; 0.5
        + both("p3", "B", "A")  # second slot both times (SS): recency; 0.5
        + both("p4", "A", "tie")  # F + tie: primacy-preferred, not strict primacy; 0.75
        + both("p5", "tie", "A")  # tie + S: recency-preferred; 0.75
        + both("p6", "B", "B")  # consistent (SF); 0
        + both("p8", "A", "B")  # FF again; 0.5
        + [{"item": "p7", "order": "AB", "choice": "A"}]  # one order only: incomplete
    )
    out = position_bias(rows)
    n = 7
    assert out["n_comparisons"] == n
    assert out["n_pairs"] == 7
    assert out["incomplete_pairs"] == 1
    assert out["unmatched_answers"] == 1
    assert out["position_consistency"] == pytest.approx(2 / n)
    assert out["primacy_rate"] == pytest.approx(2 / n)
    assert out["recency_rate"] == pytest.approx(1 / n)
    assert (out["n_primacy_preferred"], out["n_recency_preferred"]) == (3, 2)
    # Shi et al.: ipr = 3/5, irr = 2/5, PF_raw = 2*2/5 - 3*3/5 = -1; scaled between -7 and 7
    pf_raw = 2 * Fraction(2, 5) - 3 * Fraction(3, 5)
    pf = (pf_raw + n) / (2 * n) * 2 - 1
    assert pf == Fraction(-1, 7)
    assert out["preference_fairness"] == pytest.approx(float(pf))
    assert out["mean_preference_A"] == pytest.approx((1 + 0.5 + 0.5 + 0.75 + 0.75 + 0 + 0.5) / 7)


def test_preference_fairness_equals_count_difference():
    # PF = (rcn - pcn) / n, algebraically, whatever the mix
    rows = []
    mix = [("A", "B")] * 5 + [("B", "A")] * 2 + [("A", "A")] * 4 + [("tie", "B")] * 3 + [("B", "tie")]
    for i, (ab, ba) in enumerate(mix):
        rows += both(i, ab, ba)
    out = position_bias(rows)
    pcn, rcn, n = 5 + 3, 2 + 1, len(mix)
    assert (out["n_primacy_preferred"], out["n_recency_preferred"]) == (pcn, rcn)
    assert out["preference_fairness"] == pytest.approx((rcn - pcn) / n)


def test_repeats_hand_computed():
    rows = (
        both("x", "A", "A", 0)
        + both("x", "A", "A", 1)
        + both("x", "B", "A", 2)  # SS: recency
        + both("y", "B", "tie", 0)  # S + tie: recency-preferred
        + both("y", "B", "B", 1)
    )
    out = position_bias(rows)
    assert out["n_comparisons"] == 5  # (pair, repeat) comparisons
    assert out["n_pairs"] == 2
    assert out["position_consistency"] == pytest.approx(3 / 5)
    assert out["primacy_rate"] == 0.0
    assert out["recency_rate"] == pytest.approx(1 / 5)
    assert out["preference_fairness"] == pytest.approx(2 / 5)
    # RS per (pair, order): x-AB A,A,B -> 2/3; x-BA A,A,A -> 1; y-AB B,B -> 1; y-BA tie,B -> 1/2
    assert out["repetition_stability"] == pytest.approx((2 / 3 + 1 + 1 + 1 / 2) / 4)
    assert out["n_repeated_instances"] == 4
    # preference: x (mean AB 2/3, mean BA 1) -> 5/6; y (AB 0, BA 1/4) -> 1/8
    assert out["mean_preference_A"] == pytest.approx((5 / 6 + 1 / 8) / 2)


def test_repetition_stability_leaves_out_single_trials():
    rows = both("x", "A", "A", 0) + both("x", "B", "A", 1) + both("y", "A", "A", 0)
    out = position_bias(rows)
    assert out["repetition_stability"] == pytest.approx((1 / 2 + 1) / 2)  # x-AB A,B; x-BA A,A
    assert out["n_repeated_instances"] == 2
    assert out["single_trial_instances"] == 2  # y-AB, y-BA


def test_unbalanced_repeats_average_within_order_first():
    # AB asked 3 times (A won each time), BA once (B won): 1 and 0 -> 0.5, not 3/4
    rows = both("p", "A", "B", 0) + [
        {"item": "p", "order": "AB", "choice": "A", "repeat": 1},
        {"item": "p", "order": "AB", "choice": "A", "repeat": 2},
    ]
    out = position_bias(rows)
    assert out["mean_preference_A"] == 0.5
    assert out["n_comparisons"] == 1
    assert out["unmatched_answers"] == 2


def test_failed_calls_are_left_out_and_counted():
    rows = both("ok", "A", "A") + both("half", "A", None) + both("none", None, None)
    out = position_bias(rows)
    assert out["n_failed"] == 3
    assert out["n_comparisons"] == 1
    assert out["n_pairs"] == 1
    assert out["incomplete_pairs"] == 2
    assert out["position_consistency"] == 1.0


def test_nothing_to_compare_is_undefined_not_zero():
    out = position_bias([{"item": 1, "order": "AB", "choice": "A"}])
    for key in ("position_consistency", "primacy_rate", "recency_rate", "preference_fairness"):
        assert out[key] is None
        assert out["undefined"][key]
    assert out["mean_preference_A"] is None and out["undefined"]["mean_preference_A"]
    assert out["n_pairs"] == 0 and out["incomplete_pairs"] == 1
    empty = position_bias([])
    assert empty["n_pairs"] == 0 and empty["position_consistency"] is None


def test_bad_rows_are_loud():
    with pytest.raises(ValueError, match="row 0: field 'order'"):
        position_bias([{"item": 1, "order": "BB", "choice": "A"}])
    with pytest.raises(ValueError, match="row 1: field 'choice'"):
        position_bias(
            [{"item": 1, "order": "AB", "choice": "A"}, {"item": 1, "order": "BA", "choice": "first"}]
        )
    with pytest.raises(ValueError, match="row 1: .*already given in row 0"):
        position_bias(both(1, "A", "A")[:1] * 2)
    with pytest.raises(ValueError, match="missing field 'choice'"):
        position_bias([{"item": 1, "order": "AB"}])
    with pytest.raises(ValueError, match="field 'repeat'"):
        position_bias([{"item": 1, "order": "AB", "choice": "A", "repeat": -1}])
    with pytest.raises(ValueError, match="field 'value'"):
        from_slots([{"item_id": 1, "ab_order": "AB", "value": 4}])
    with pytest.raises(ValueError, match="field 'ab_order'"):
        from_slots([{"item_id": 1, "ab_order": "ba", "value": 0}])


def test_from_slots_maps_positions_to_candidates():
    stored = [
        {"item_id": 7, "ab_order": "AB", "value": 0, "repeat": 0},  # first shown = A
        {"item_id": 7, "ab_order": "BA", "value": 0, "repeat": 0},  # first shown = B
        {"item_id": 8, "ab_order": "AB", "value": 1, "repeat": None},  # second shown = B
        {"item_id": 8, "ab_order": "BA", "value": 1},  # second shown = A
        {"item_id": 9, "ab_order": "AB", "value": 2, "repeat": 1},
        {"item_id": 9, "ab_order": "BA", "value": None, "repeat": 1},  # a failed call
    ]
    assert [(r["item"], r["order"], r["choice"], r["repeat"]) for r in from_slots(stored)] == [
        (7, "AB", "A", 0),
        (7, "BA", "B", 0),
        (8, "AB", "B", 0),
        (8, "BA", "A", 0),
        (9, "AB", "tie", 1),
        (9, "BA", None, 1),
    ]
    out = position_bias(from_slots(stored))
    assert out["primacy_rate"] == 0.5 and out["recency_rate"] == 0.5
    assert out["n_failed"] == 1 and out["incomplete_pairs"] == 1


def test_both_bad_is_no_preference_like_a_tie():
    """ "both bad" (value 3) prefers neither answer: the candidate choice is a tie, the
    swap-averaged preference for A is 0.5, and both orders saying it are consistent (#16)."""
    from calibration.stats.position import preference_for_a

    stored = [
        {"item_id": 1, "ab_order": "AB", "value": 3},
        {"item_id": 1, "ab_order": "BA", "value": 3},
        {"item_id": 2, "ab_order": "AB", "value": 0},  # the first shown in AB (A) ...
        {"item_id": 2, "ab_order": "BA", "value": 3},  # ... and both bad in BA: primacy-preferred
    ]
    assert [r["choice"] for r in from_slots(stored)] == ["tie", "tie", "A", "tie"]
    assert preference_for_a("AB", 3) == preference_for_a("BA", 3) == 0.5
    out = position_bias(from_slots(stored))
    assert out["position_consistency"] == 0.5 and out["preference_fairness"] == -0.5
    with pytest.raises(ValueError, match=r"3 \(both bad\)"):
        from_slots([{"item_id": 1, "ab_order": "AB", "value": 4}])


def test_dataframe_rows():
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame(both(1, "A", "B") + both(2, "A", "A"))
    out = position_bias(frame)
    assert out["position_consistency"] == 0.5 and out["primacy_rate"] == 0.5


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_agrees_with_the_products_summary(seed):
    """Balanced stored judgments: the same consistency and mean preference as judge/pairwise.py."""
    import random

    rng = random.Random(seed)
    stored = []
    for item in range(40):
        for repeat in range(rng.choice([1, 2, 3])):
            for order in ("AB", "BA"):
                stored.append(
                    {"item_id": item, "ab_order": order, "repeat": repeat, "value": rng.choice([0, 1, 2])}
                )
    ours = position_bias(from_slots(stored))
    theirs = summarize_pairs(stored)
    assert ours["n_pairs"] == theirs["n_pairs"]
    assert ours["n_comparisons"] == theirs["compared"]
    assert ours["position_consistency"] == pytest.approx(theirs["consistency"])
    assert ours["mean_preference_A"] == pytest.approx(theirs["mean_preference_a"])


# --- LLMBar Natural: six judges' outputs asked in both orders -----------------------------

LLMBAR_JUDGES = ("GPT-4", "ChatGPT", "ChatGPT-0301", "LLaMA2", "PaLM2", "Falcon")
# Position consistency we compute per judge and prompt (first round of both orders); items
# whose output could not be parsed (winner None) are failed calls, left out of n.
LLMBAR_PC = {
    ("GPT-4", "Vanilla"): (95, 100),
    ("GPT-4", "CoT"): (91, 100),
    ("ChatGPT", "Vanilla"): (71, 100),
    ("ChatGPT", "CoT"): (64, 99),
    ("ChatGPT-0301", "Vanilla"): (78, 100),
    ("ChatGPT-0301", "CoT"): (74, 100),
    ("LLaMA2", "Vanilla"): (79, 100),
    ("LLaMA2", "CoT"): (67, 100),
    ("PaLM2", "Vanilla"): (78, 98),
    ("PaLM2", "CoT"): (63, 99),
    ("Falcon", "Vanilla"): (52, 100),
    ("Falcon", "CoT"): (14, 100),
}


def llmbar_rows(judge: str, prompt: str, round_: int = 0) -> tuple[list[dict], list[dict]]:
    path = SHARED / "data" / "llmbar" / "Natural" / "evaluators" / judge / prompt / "result.json"
    results = json.loads(path.read_text())
    rows = []
    for i, instance in enumerate(results):
        answer = instance["results"][round_]
        for order, key in (("AB", "swap = False"), ("BA", "swap = True")):
            # LLMBar stores the winner as the candidate ("1" = output_1 = our A), already un-swapped
            winner = answer[key]["winner"]
            rows.append({"item": i, "order": order, "choice": {"1": "A", "2": "B", None: None}[winner]})
    return rows, results


@needs_shared
@pytest.mark.parametrize("judge,prompt", sorted(LLMBAR_PC))
def test_llmbar_position_consistency(judge, prompt):
    rows, results = llmbar_rows(judge, prompt)
    out = position_bias(rows)
    consistent, n = LLMBAR_PC[(judge, prompt)]
    assert (out["n_consistent"], out["n_comparisons"]) == (consistent, n)
    assert out["position_consistency"] == pytest.approx(consistent / n)

    # LLMBar's own statistics.json: "equal" = both orders name the same winner, over all 100
    # items, where two unparsed outputs (None == None) count as equal. Same data, their rule.
    stats = json.loads(
        (SHARED / "data/llmbar/Natural/evaluators" / judge / prompt / "statistics.json").read_text()
    )
    equal, total = (int(x) for x in stats["equal"].split("%")[0].split(" = ")[0].split(" / "))
    none_none = sum(
        r["results"][0]["swap = False"]["winner"] is None and r["results"][0]["swap = True"]["winner"] is None
        for r in results
    )
    assert total == 100 == out["n_comparisons"] + (100 - n)
    assert equal == consistent + none_none

    # the figures hang together: consistent + primacy- + recency-preferred = n; PF = (rcn - pcn)/n
    assert out["n_consistent"] + out["n_primacy_preferred"] + out["n_recency_preferred"] == n
    assert out["preference_fairness"] == pytest.approx(
        (out["n_recency_preferred"] - out["n_primacy_preferred"]) / n
    )
    assert out["repetition_stability"] is None  # asked once per order


@needs_shared
def test_llmbar_falcon_prefers_the_first_slot():
    out = position_bias(llmbar_rows("Falcon", "CoT")[0])
    assert out["primacy_rate"] == pytest.approx(0.86)
    assert out["recency_rate"] == 0.0
    assert out["preference_fairness"] == pytest.approx(-0.86)
    assert out["mean_preference_A"] == 0.5  # every item 1 then 0 (or consistent): cancelled
    gpt4 = position_bias(llmbar_rows("GPT-4", "Vanilla")[0])
    assert gpt4["preference_fairness"] == pytest.approx(-0.01)  # 3 primacy, 2 recency of 100


@needs_shared
def test_llmbar_swap_strategy_first_round():
    # "Swap" re-asks inconsistent items in a second round; statistics.json "equal" scores that final
    # round, so it is not the raw judge's position consistency. Ours reads the first round only.
    out = position_bias(llmbar_rows("GPT-4", "Swap")[0])
    assert (out["n_consistent"], out["n_comparisons"]) == (93, 100)


# --- CrowdRAG-25: GPT-4o judgments, partly asked in both orders and partly twice ------------


@needs_shared
@pytest.mark.parametrize("inference", ["combined", "individual"])
def test_crowdrag_gpt4o_quality_overall(inference):
    path = SHARED / "data" / "crowdrag25_webis" / "artifacts" / "llm_ratings.jsonl.gz"
    with gzip.open(path, "rt") as fh:
        ratings = [json.loads(line) for line in fh]
    stored, seen = [], Counter()
    for r in ratings:
        if r["inference"] != inference:
            continue
        a, b = sorted([r["response_a"], r["response_b"]])  # candidate A: the smaller id
        order = "AB" if r["response_a"] == a else "BA"
        key = (r["query_id"], a, b, order)
        # the same prompt stored twice = a repeat (numbered in file order)
        value = {"a": 0, "b": 1, "n": 2}.get(r["quality_overall"])  # a = first shown better; n = neither
        stored.append({"item_id": key[:3], "ab_order": order, "value": value, "repeat": seen[key]})
        seen[key] += 1
    out = position_bias(from_slots(stored))
    assert out["n_pairs"] == 377 and out["incomplete_pairs"] == 0
    assert out["n_failed"] == (1 if inference == "combined" else 0)  # one rating has no value
    assert out["n_answers"] + out["n_failed"] == len(stored)
    assert out["repetition_stability"] is not None and 0.9 < out["repetition_stability"] <= 1.0
    assert (
        out["n_consistent"] + out["n_primacy_preferred"] + out["n_recency_preferred"] == out["n_comparisons"]
    )
    assert 0.0 <= out["position_consistency"] <= 1.0
