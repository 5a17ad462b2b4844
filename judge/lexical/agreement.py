"""The offline judge's agreement with people: accuracy and Cohen's kappa of its grades against human grades.

Accuracy = share of items graded exactly as people graded them. Cohen's kappa unweighted and
quadratic-weighted are :func:`calibration.stats.kappa.cohen` with ``labels=`` the rubric's whole scale, so
the weights use the grades' distances on the scale and a grade nobody used does not shrink them.
Kappa is None, with ``undefined_reason``, when the human grades hold one value only (DESIGN
principle 2: undefined is not zero).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypedDict

from annotation.rubrics import get_rubric
from calibration.stats.kappa import cohen

__all__ = ["Agreement", "agreement"]


class Agreement(TypedDict):
    """:func:`agreement`'s result (a plain dict: the JSON ``fit-lexical`` and the judge's settings hold)."""

    n: int
    accuracy: float | None  # None: no items
    kappa: float | None  # None: undefined, with undefined_reason
    kappa_quadratic: float | None
    undefined_reason: str | None


def agreement(truth: Sequence[int], predicted: Sequence[int], rubric: str) -> Agreement:
    """Accuracy and Cohen's kappa (unweighted, quadratic) of predictions
    against human grades, on the rubric's whole scale (:func:`calibration.stats.kappa.cohen`,
    ``labels=`` the scale). Kappa is None with ``undefined_reason`` when the
    human grades hold fewer than two values."""
    scale = get_rubric(rubric)
    t = [int(g) for g in truth]
    p = [int(g) for g in predicted]
    if len(t) != len(p):
        raise ValueError(f"{len(t)} human grades but {len(p)} predictions; expected one of each")
    out: Agreement = {
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
    # two human grades or more: chance agreement is below 1, so neither kappa is undefined
    out["kappa"] = cohen(t, p, labels=labels)["kappa"]
    out["kappa_quadratic"] = cohen(t, p, labels=labels, weights="quadratic")["kappa"]
    return out
