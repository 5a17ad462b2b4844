"""Position bias of pairwise judgments asked in both orders (pure: plain data in, a dict out).

A *pair* is two candidates, A and B. The judge is asked in order ``AB`` (A shown
first) and in order ``BA`` (B shown first), possibly several times (``repeat``).
Each judgment here names the CANDIDATE it chose (``"A"``, ``"B"`` or ``"tie"``), not
the slot; :func:`from_slots` converts the product's stored form (``value`` 0 = the
answer shown first won, 1 = the second, 2 = tie; see ``judge/pairwise.py``).

Counted units
-------------
- a *comparison* is one (pair, repeat) with an answer in both orders; the two
  answers form a slot pair (F = first-shown won, S = second-shown won, T = tie):
  the answer in ``AB`` and the answer in ``BA``.
- a *pair* counts for the mean preference when it has at least one answer in each
  order; a pair with answers in one order only (or none: every call failed) is
  *incomplete*: left out, counted.
- a failed call (``choice`` None) is no answer: left out, counted (``n_failed``).

Metrics
-------
Position consistency (PC), preference fairness (PF) and repetition stability (RS)
follow L. Shi, C. Ma, W. Liang, X. Diao, W. Ma, S. Vosoughi, "Judging the Judges: A
Systematic Study of Position Bias in LLM-as-a-Judge", arXiv:2406.07791 (v9; AACL-IJCNLP
2025): the three metric definitions (RS, PC and the PF_raw / min-max scaling equations)
in the paper's methodology section, before the experiments. The full paper text could
not be read from here, so no section or equation number is cited; each definition was
instead checked against the authors' public analysis code
(github.com/Slimshilin/Position-Bias-Analyzer at 0eb0ce93,
``judging_the_judges/calculate_consistency_and_preference/consistency_preference_calculation.py``
and ``judging_the_judges/repetitional_consistency/calculate_repetitional_consistency.py``)
and against secondary quotations of the paper's formulas:

- PC = (1/n) * #{comparisons whose two answers pick the same candidate, or both tie}.
  In slot terms the consistent pairs are FS, SF, TT.
- PF: the inconsistent comparisons split into *primacy-preferred* (slot pairs FF, FT,
  TF; count ``pcn``) and *recency-preferred* (SS, ST, TS; count ``rcn``). With the
  inconsistent primacy/recency rates ``ipr = pcn/(pcn+rcn)`` and ``irr = rcn/(pcn+rcn)``,
  ``PF_raw = rcn*irr - pcn*ipr`` and it is min-max scaled to [-1, 1] between the
  extremes ``S_min = -n`` (every comparison primacy-preferred) and ``S_max = +n`` (every
  one recency-preferred): ``PF = (PF_raw - S_min)/(S_max - S_min)*2 - 1``. -1 = always
  the first slot, +1 = always the second, 0 = fair. (Algebraically PF = (rcn - pcn)/n.)
  With no inconsistent comparison PF_raw = 0 and PF = 0, which is defined: fair.
  The paper computes PF per (judge, model, task) unit and averages; this function gives
  PF for the rows it is handed, so call it once per unit to follow that aggregation.
- RS = mean over (pair, order) instances asked t >= 2 times of
  ``max_k |choices equal to k| / t``: the share of the most frequent choice among the
  repeated trials. As in the authors' code, the two orders are separate instances.
  Instances asked once say nothing about stability: left out, counted; without any
  repeated instance RS is None.

The remaining figures are this project's (DESIGN, "Pairwise"):

- primacy rate = share of comparisons in which the first-shown answer won in both
  orders (FF); recency rate = share in which the second-shown answer won in both (SS).
  One-tie comparisons (FT, TF, ST, TS) count in PF's primacy/recency-preferred counts
  (as in Shi et al.) but not in these strict rates.
- mean preference for A: per pair, win 1 / tie 0.5 / loss 0 averaged within each order
  (over its repeats), then over the two orders (swap-and-average), then over pairs. A
  judge that always picks the first slot scores 1 in AB and 0 in BA: 0.5, cancelled.
  (``judge/pairwise.summarize_pairs`` averages all answers of a pair at once; the two
  agree whenever both orders have the same number of answers.)

Undefined figures are None with a reason in ``undefined``; never 0.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Hashable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from calibration.results import PairResult, PairSummary, PositionReport

__all__ = ["CHOICES", "ORDERS", "from_slots", "position_bias"]

ORDERS = ("AB", "BA")
CHOICES = ("A", "B", "tie")

# stored slot value -> the candidate chosen, per order (judge/pairwise.py: 0 first shown, 1 second, 2 tie)
_SLOT_TO_CHOICE = {
    ("AB", 0): "A",
    ("AB", 1): "B",
    ("AB", 2): "tie",
    ("AB", 3): "tie",  # both bad: no preference, counted as a tie (annotation.rubrics.PREFERENCE)
    ("BA", 0): "B",
    ("BA", 1): "A",
    ("BA", 2): "tie",
    ("BA", 3): "tie",
}
# (order, candidate chosen) -> slot: F first shown won, S second shown won, T tie
_SLOT = {
    ("AB", "A"): "F",
    ("AB", "B"): "S",
    ("BA", "B"): "F",
    ("BA", "A"): "S",
    ("AB", "tie"): "T",
    ("BA", "tie"): "T",
}
_FOR_A = {"A": 1.0, "B": 0.0, "tie": 0.5}
_CONSISTENT = {("F", "S"), ("S", "F"), ("T", "T")}
_PRIMACY_PREFERRED = {("F", "F"), ("F", "T"), ("T", "F")}
_RECENCY_PREFERRED = {("S", "S"), ("S", "T"), ("T", "S")}


def _field(row: Mapping[str, Any], names: tuple[str, ...], index: int, required: bool = True) -> Any:
    for name in names:
        if name in row:
            return row[name]
    if required:
        raise ValueError(f"row {index}: missing field {names[0]!r}; got fields {sorted(row)}")
    return None


def _repeat(value: Any, index: int) -> int:
    if _is_missing(value):
        return 0
    try:
        repeat = int(value)
    except (TypeError, ValueError):
        raise ValueError(f"row {index}: field 'repeat' is {value!r}; expected an integer >= 0") from None
    if repeat != value or repeat < 0:
        raise ValueError(f"row {index}: field 'repeat' is {value!r}; expected an integer >= 0")
    return repeat


def _rows(rows: Any) -> list[Mapping[str, Any]]:
    if hasattr(rows, "to_dict") and hasattr(rows, "columns"):  # a pandas DataFrame
        rows = rows.to_dict("records")
    out = list(rows)
    for i, row in enumerate(out):
        if not isinstance(row, Mapping):
            raise ValueError(
                f"row {i}: expected a mapping with item, order, choice; got {type(row).__name__}"
            )
    return out


def _is_missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and value != value)  # None or NaN


def from_slots(rows: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The product's stored judge values -> candidate choices.

    Each row has ``item_id``, ``ab_order`` ("AB" = candidate A shown first, "BA"),
    ``value`` (0 = the answer shown first won, 1 = the second, 2 = tie, 3 = both bad, counted
    as a tie; None = a failed
    call, kept as choice None) and optional ``repeat`` (default 0). Returns rows
    ``{"item", "order", "choice", "repeat"}`` for :func:`position_bias`.
    """
    out = []
    for i, row in enumerate(_rows(rows)):
        item = _field(row, ("item_id", "item"), i)
        order = _field(row, ("ab_order", "order"), i)
        if order not in ORDERS:
            raise ValueError(f"row {i}: field 'ab_order' is {order!r}; expected 'AB' or 'BA'")
        value = _field(row, ("value",), i)
        if _is_missing(value):
            choice = None
        else:
            if isinstance(value, bool) or value not in (0, 1, 2, 3):
                raise ValueError(
                    f"row {i}: field 'value' is {value!r}; expected 0 (first shown won), "
                    "1 (second shown won), 2 (tie), 3 (both bad) or None (failed call)"
                )
            choice = _SLOT_TO_CHOICE[(order, int(value))]
        repeat = _repeat(_field(row, ("repeat",), i, required=False), i)
        out.append({"item": item, "order": order, "choice": choice, "repeat": repeat})
    return out


def _ratio(num: int, den: int) -> float | None:
    return num / den if den else None


def position_bias(rows: Iterable[Mapping[str, Any]]) -> PositionReport:
    """Position bias of both-order pairwise judgments (see the module docstring).

    ``rows``: mappings (or a DataFrame) with ``item`` (any hashable pair id),
    ``order`` ("AB" | "BA"), ``choice`` (the candidate: "A" | "B" | "tie"; None = a
    failed call) and optional ``repeat`` (int >= 0, default 0). A (item, order, repeat)
    given twice is an error: pick the newest row per key first.

    Returns ``n_pairs``, ``position_consistency``, ``primacy_rate``, ``recency_rate``,
    ``preference_fairness``, ``repetition_stability`` (None without repeats),
    ``mean_preference_A``; the counts behind them (``n_comparisons``, ``n_consistent``,
    ``n_primacy``, ``n_recency``, ``n_primacy_preferred``, ``n_recency_preferred``,
    ``incomplete_pairs``, ``unmatched_answers``, ``n_failed``, ``n_answers``,
    ``n_repeated_instances``, ``single_trial_instances``); and ``undefined``: for each
    figure that is None, the reason.
    """
    answers: dict[Hashable, dict[str, dict[int, str]]] = defaultdict(lambda: {"AB": {}, "BA": {}})
    failed = 0
    seen: dict[tuple[Hashable, str, int], int] = {}
    n_answers = 0
    for i, row in enumerate(_rows(rows)):
        item = _field(row, ("item", "item_id"), i)
        try:
            hash(item)
        except TypeError:
            raise ValueError(f"row {i}: field 'item' is {item!r}; expected a hashable id") from None
        order = _field(row, ("order", "ab_order"), i)
        if order not in ORDERS:
            raise ValueError(f"row {i}: field 'order' is {order!r}; expected 'AB' or 'BA'")
        choice = _field(row, ("choice",), i)
        repeat = _repeat(_field(row, ("repeat",), i, required=False), i)
        key = (item, order, repeat)
        if key in seen:
            raise ValueError(
                f"row {i}: item {item!r}, order {order}, repeat {repeat} already given in row {seen[key]}; "
                "expected one judgment per (item, order, repeat) (keep the newest)"
            )
        seen[key] = i
        if _is_missing(choice):
            failed += 1
            answers[item]  # the pair exists, even if this call failed
            continue
        if choice not in CHOICES:
            raise ValueError(
                f"row {i}: field 'choice' is {choice!r}; expected the candidate chosen: 'A', 'B' or 'tie'"
            )
        answers[item][order][repeat] = choice
        n_answers += 1

    comparisons: Counter[tuple[str, str]] = Counter()
    unmatched = 0
    preferences = []
    incomplete = 0
    stability = []
    single_trial = 0
    for by_order in answers.values():
        ab, ba = by_order["AB"], by_order["BA"]
        for repeat in ab.keys() & ba.keys():
            comparisons[(_SLOT[("AB", ab[repeat])], _SLOT[("BA", ba[repeat])])] += 1
        unmatched += len(ab.keys() ^ ba.keys())
        if ab and ba:
            per_order = [sum(_FOR_A[c] for c in d.values()) / len(d) for d in (ab, ba)]
            preferences.append(sum(per_order) / 2)
        else:
            incomplete += 1
        for d in (ab, ba):
            trials = len(d)
            if trials >= 2:
                stability.append(max(Counter(d.values()).values()) / trials)
            elif trials == 1:
                single_trial += 1

    n = sum(comparisons.values())
    consistent = sum(comparisons[k] for k in _CONSISTENT)
    pcn = sum(comparisons[k] for k in _PRIMACY_PREFERRED)
    rcn = sum(comparisons[k] for k in _RECENCY_PREFERRED)
    undefined: dict[str, str] = {}
    if n:
        inconsistent = pcn + rcn
        ipr = pcn / inconsistent if inconsistent else 0.0
        irr = rcn / inconsistent if inconsistent else 0.0
        pf_raw = rcn * irr - pcn * ipr  # 0 when every comparison is consistent
        s_min, s_max = -float(n), float(n)
        preference_fairness: float | None = (pf_raw - s_min) / (s_max - s_min) * 2 - 1
    else:
        preference_fairness = None
        reason = "no pair has an answer in both orders for the same repeat"
        for name in ("position_consistency", "primacy_rate", "recency_rate", "preference_fairness"):
            undefined[name] = reason
    if not preferences:
        undefined["mean_preference_A"] = "no pair has answers in both orders"
    if not stability:
        undefined["repetition_stability"] = "no (pair, order) was asked more than once (no repeats)"

    return {
        "n_pairs": len(preferences),
        "position_consistency": _ratio(consistent, n),
        "primacy_rate": _ratio(comparisons[("F", "F")], n),
        "recency_rate": _ratio(comparisons[("S", "S")], n),
        "preference_fairness": preference_fairness,
        "repetition_stability": sum(stability) / len(stability) if stability else None,
        "mean_preference_A": sum(preferences) / len(preferences) if preferences else None,
        "n_comparisons": n,
        "n_consistent": consistent,
        "n_primacy": comparisons[("F", "F")],
        "n_recency": comparisons[("S", "S")],
        "n_primacy_preferred": pcn,
        "n_recency_preferred": rcn,
        "incomplete_pairs": incomplete,
        "unmatched_answers": unmatched,
        "n_failed": failed,
        "n_answers": n_answers,
        "n_repeated_instances": len(stability),
        "single_trial_instances": single_trial,
        "undefined": undefined,
    }


# ---------------------------------------------------------------- swap-and-average of a judge's pairs

# (order, value) -> the preference for candidate A: value 0 = shown first won, 1 = second,
# 2 = tie, 3 = both bad (no preference: as a tie)
_SLOT_VALUE_FOR_A = {
    ("AB", 0): 1.0,
    ("AB", 1): 0.0,
    ("AB", 2): 0.5,
    ("AB", 3): 0.5,
    ("BA", 0): 0.0,
    ("BA", 1): 1.0,
    ("BA", 2): 0.5,
    ("BA", 3): 0.5,
}


def preference_for_a(order: str, value: int) -> float:
    return _SLOT_VALUE_FOR_A[(order, value)]


def summarize_pairs(values: Iterable[Mapping[str, Any]]) -> PairSummary:
    """From judge values ``{"item_id", "ab_order", "repeat", "value"}``: per pair the
    swap-averaged preference for A and whether the orders agree (per repeat,
    over the repeats that have both orders); overall the mean preference for
    A and the share of consistent (pair, repeat) comparisons, with their n."""
    by_pair: dict[int, dict[tuple[int, str], int]] = defaultdict(dict)
    for v in values:
        by_pair[int(v["item_id"])][(int(v["repeat"] or 0), v["ab_order"])] = int(v["value"])
    pairs: list[PairResult] = []
    consistent = compared = 0
    for item_id, answers in sorted(by_pair.items()):
        prefs, agree = [], []
        for repeat in sorted({r for r, _ in answers}):
            if (repeat, "AB") in answers and (
                repeat,
                "BA",
            ) in answers:  # a repeat counts with both orders only
                ab = preference_for_a("AB", answers[(repeat, "AB")])
                ba = preference_for_a("BA", answers[(repeat, "BA")])
                prefs += [ab, ba]
                agree.append(ab == ba)
        both = bool(agree)
        pairs.append(
            {
                "item_id": item_id,
                "preference_a": sum(prefs) / len(prefs)
                if both
                else None,  # one order alone is not swap-averaged
                "consistent": all(agree) if both else None,
                "answers": len(answers),
            }
        )
        consistent += sum(agree)
        compared += len(agree)
    averaged = [p["preference_a"] for p in pairs if p["preference_a"] is not None]
    return {
        "pairs": pairs,
        "n_pairs": len(averaged),
        "incomplete_pairs": len(pairs) - len(averaged),
        "mean_preference_a": sum(averaged) / len(averaged) if averaged else None,
        "consistent": consistent,
        "compared": compared,
        "consistency": consistent / compared if compared else None,
    }
