"""Pairwise judging, always in both orders (swap-and-average).

Every pair item (two traces answering the same question; A = the item's
first trace, B = its second) is asked twice: order ``AB`` shows A first,
``BA`` shows B first; ``repeats`` asks each order again (for repetition
stability; repeat r uses seed + r). A reply names the answer shown first or
second (stored as 0 = first, 1 = second, 2 = tie: the PREFERENCE scale, as
for people), so position and candidate stay apart.

Per pair, the swap-averaged preference for A is the mean over both orders
(and repeats) of win 1, tie 0.5, loss 0 (DESIGN, "Pairwise"). A judge that
always picks the first answer scores 1 in AB and 0 in BA: 0.5, cancelled.
The two orders agree (are consistent) when they pick the same candidate, or
both tie.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from typing import Any

from annotation.store import Store
from judge.runner import Call

__all__ = ["pairwise_calls", "preference_for_a", "summarize_pairs", "ORDERS"]

ORDERS = ("AB", "BA")
# (order, value) -> the preference for candidate A: value 0 = shown first won, 1 = second, 2 = tie
_FOR_A = {("AB", 0): 1.0, ("AB", 1): 0.0, ("AB", 2): 0.5, ("BA", 0): 0.0, ("BA", 1): 1.0, ("BA", 2): 0.5}


def pairwise_calls(store: Store, repeats: int = 1, limit: int | None = None) -> list[Call]:
    """Both orders of every pair item (``limit``: the first N pairs), ``repeats`` times.
    A pair missing its question or an answer is not asked."""
    if repeats < 1:
        raise ValueError(f"repeats {repeats}; expected at least 1")
    if limit is not None and limit < 1:
        raise ValueError(f"limit {limit}; expected at least 1 (or no limit)")
    cap = f"LIMIT {int(limit)}" if limit else ""
    rows = store.db.execute(
        f"""SELECT i.id, a.question, a.answer, b.answer FROM items i
            JOIN traces a ON a.id = i.trace_id JOIN traces b ON b.id = i.trace_b_id
            WHERE i.kind = 'pair' AND ifnull(a.question, '') != '' AND ifnull(a.answer, '') != ''
              AND ifnull(b.answer, '') != '' ORDER BY i.id {cap}"""
    ).fetchall()
    calls = []
    for item_id, question, answer_a, answer_b in rows:
        for repeat in range(repeats):
            for order in ORDERS:
                first, second = (answer_a, answer_b) if order == "AB" else (answer_b, answer_a)
                data = {"question": question or "", "answer_A": first or "", "answer_B": second or ""}
                calls.append(Call(item_id, data, ab_order=order, repeat=repeat))
    return calls


def preference_for_a(order: str, value: int) -> float:
    return _FOR_A[(order, value)]


def summarize_pairs(values: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """From judge values ``{"item_id", "ab_order", "repeat", "value"}``: per pair the
    swap-averaged preference for A and whether the orders agree (per repeat,
    over the repeats that have both orders); overall the mean preference for
    A and the share of consistent (pair, repeat) comparisons, with their n."""
    by_pair: dict[int, dict[tuple[int, str], int]] = defaultdict(dict)
    for v in values:
        by_pair[int(v["item_id"])][(int(v["repeat"] or 0), v["ab_order"])] = int(v["value"])
    pairs = []
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
