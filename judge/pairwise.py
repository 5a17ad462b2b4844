"""Pairwise judging, always in both orders (swap-and-average).

Every pair item (two traces answering the same question; A = the item's
first trace, B = its second) is asked twice: order ``AB`` shows A first,
``BA`` shows B first; ``repeats`` asks each order again (for repetition
stability; repeat r uses seed + r). A reply names the answer shown first or
second (stored as 0 = first, 1 = second, 2 = tie: the PREFERENCE scale, as
for people), so position and candidate stay apart.

Per pair, the swap-averaged preference for A is the mean over both orders
(and repeats) of win 1, tie 0.5, loss 0 (DESIGN, "Pairwise"): computed by
``calibration.stats.position.summarize_pairs``, which the review uses too. A judge that
always picks the first answer scores 1 in AB and 0 in BA: 0.5, cancelled.
The two orders agree (are consistent) when they pick the same candidate, or
both tie.
"""

from __future__ import annotations

from annotation.store import Store
from calibration.stats.position import preference_for_a, summarize_pairs  # re-exported: the swap-and-average
from judge.runner import Call

__all__ = ["pairwise_calls", "preference_for_a", "summarize_pairs", "ORDERS"]

ORDERS = ("AB", "BA")


def pairwise_calls(store: Store, repeats: int = 1, limit: int | None = None) -> list[Call]:
    """Both orders of every pair item (``limit``: the first N pairs), ``repeats`` times.
    A pair missing its question or an answer is not asked."""
    if repeats < 1:
        raise ValueError(f"repeats {repeats}; expected at least 1")
    if limit is not None and limit < 1:
        raise ValueError(f"limit {limit}; expected at least 1 (or no limit)")
    rows = store.gradable_pair_items(limit)
    calls = []
    for item_id, question, answer_a, answer_b in rows:
        for repeat in range(repeats):
            for order in ORDERS:
                first, second = (answer_a, answer_b) if order == "AB" else (answer_b, answer_a)
                data = {"question": question or "", "answer_A": first or "", "answer_B": second or ""}
                calls.append(Call(item_id, data, ab_order=order, repeat=repeat))
    return calls
