"""The kappa verdict: one rule, used by ``agree``, ``review``, the Judge and Review pages and the
``kappa`` rule of the policy (DESIGN.md, "Kappa verdict").

A verdict respects the interval, not only the point estimate:

- ``trusted``: the interval's lower end reaches the bar (kappa >= bar has been shown);
- ``not trusted``: the interval's upper end is below the bar (kappa < bar has been shown);
- ``undecided``: the interval reaches the bar from both sides; with about how many more human-labelled items
  would decide it (:func:`labels_to_decide`);
- ``uncalibrated``: fewer human-labelled items than :data:`MIN_LABELS` (the review says so
  whatever the interval);
- ``undefined``: kappa itself is undefined (one class only, no item), with its reason.

The statistic the bar applies to is the essay's unweighted Cohen's kappa unless a user chooses
another (:data:`STATISTICS`); the weighted kappas are always printed beside it.

The old middle verdict ``noisy`` (0.4 <= kappa < 0.6 by the point estimate) is gone: a point
estimate between two bars says nothing its interval does not say better.

Light on purpose (no numpy, scipy or scikit-learn): the CLIs declare their defaults from here
without paying for the statistics they may not run.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from annotation.options import default

TRUSTED = 0.6  # the bar: kappa >= this, shown by the interval's lower end, is trusted
# the options table's defaults (annotation.options: the CLI and the pages read the same)
MIN_LABELS: int = default(
    "min_labels"
)  # human-labelled items a judge needs before the review gives it a verdict
MIN_QUERIES = (
    5  # queries a judge verdict needs (issue #39: "3 queries: a verdict needs 5"); the policy may say
)
# a verdict whose newest label is older than this many weeks is stale (issue #40); the policy may say
STALE_AFTER_WEEKS = 4
STATISTICS = ("unweighted", "linear", "quadratic")  # what the bar may apply to
DEFAULT_STATISTIC = "unweighted"  # the essay's "Cohen's kappa >= 0.6"

# the weekly sample (calibration.review.draw_sample): one default for the CLI and the page
SAMPLE_SIZE: int = default("sample")
SAMPLE_ADVICE = (
    "50-100 traces a week, as the essay says: at 60 items a kappa's 95% interval is roughly +-0.15, "
    "narrow enough to tell 0.6 from 0.8 over a few weeks, and an afternoon's labelling for two people"
)
SAMPLE_RANGE = (50, 100)  # what the essay asks a week


DEFAULT_OVERLAP: float = default(
    "review_overlap"
)  # the share of the sample that two or more of the chosen annotators label

NOISY_GONE = (
    "--noisy is gone: a verdict is now trusted (the interval's lower end reaches the bar), "
    "not trusted (its upper end is below it) or undecided; --trusted sets the one bar"
)


def _undefined(value: float | None) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def verdict(kappa: float | None, ci: Sequence[float | None] | None, *, bar: float) -> str:
    """``trusted``, ``not trusted`` or ``undecided`` from the interval ``ci`` against ``bar``;
    ``undefined`` when kappa is; ``undecided`` when there is no interval (nothing is shown)."""
    if _undefined(kappa):
        return "undefined"
    if not ci or _undefined(ci[0]) or _undefined(ci[1]):
        return "undecided"
    low, high = float(ci[0]), float(ci[1])  # type: ignore[arg-type]
    if low >= bar:
        return "trusted"
    if high < bar:
        return "not trusted"
    return "undecided"


def labels_to_decide(
    kappa: float | None, ci: Sequence[float | None] | None, n: int, *, bar: float
) -> int | None:
    """About how many more human-labelled items would decide an ``undecided`` verdict.

    Rule: the interval's half-width on the side of the bar shrinks like 1/sqrt(n) around the
    estimate (the same kappa, more items); the answer is the smallest n' >= n at which that side no
    longer reaches the bar, minus n: n' = ceil(n * (w / d)^2), w the side's current width
    (kappa - low when kappa >= bar, high - kappa when below), d = |kappa - bar|. None when the
    verdict is not undecided or kappa equals the bar (no number of items decides it)."""
    if verdict(kappa, ci, bar=bar) != "undecided" or not ci or ci[0] is None or ci[1] is None or n < 1:
        return None
    k, low, high = float(kappa), float(ci[0]), float(ci[1])  # type: ignore[arg-type]
    distance = abs(k - bar)
    if distance == 0:
        return None
    width = (k - low) if k >= bar else (high - k)
    needed = math.ceil(n * (width / distance) ** 2)
    return max(needed - n, 1)


def advice(verdict_: str, *, more: int | None = None, n: int = 0, min_labels: int = MIN_LABELS) -> str:
    """What to do about a verdict, from the essay's table (one wording for every face)."""
    if verdict_ == "trusted":
        return "use it; keep the weekly sample going to catch drift"
    if verdict_ == "undecided":
        about = f"label about {more} more items" if more else "label more items"
        return f"{about} (same sample design) and review again; until then, treat its figures as unshown"
    if verdict_ == "not trusted":
        return (
            "do not use its figures: re-tune the prompt (show it the rubric's examples), swap the judge, "
            "or compare with the offline judge fitted on your labels"
        )
    if verdict_ == "uncalibrated":
        return f"label {max(min_labels - n, 1)} more items to reach the {min_labels} a verdict needs"
    return "nothing to measure: the people or the judge used one grade only; label items of other grades"


def design_line(result: Mapping[str, Any]) -> str:
    """The design of a verdict (:func:`calibration.stats.judged.judged_kappa`'s, or an entry carrying its
    keys) in words, as every face prints it: "12 queries, 120 items, 2 people, design effect
    1.84; for queries drawn like these 12; read once (fixed-n score interval, by query)"."""
    design = result.get("design") or {}
    if not design:
        return ""
    parts = []
    if design.get("queries") is not None:
        parts.append(f"{design['queries']} {'query' if design['queries'] == 1 else 'queries'}")
    parts.append(f"{design['items']} items")
    if design.get("people") is not None:
        parts.append(f"{design['people']} {'person' if design['people'] == 1 else 'people'}")
    if design.get("queries") is not None:
        deff = design.get("design_effect")
        parts.append(
            "design effect "
            + (
                "undefined (taken as 1)"
                if deff is None
                else f"{deff:.2f}" + (", kept at 1" if deff < 1 else "")
            )
        )
    text = (
        ", ".join(parts)
        + f"; for {result.get('population')}; read {result.get('read')} ({result.get('method')})"
    )
    pq = result.get("per_query")
    if pq and pq["median"] is not None:
        text += (
            f"; median per-query kappa {pq['median']:.3f} over {pq['defined']} of {pq['queries']} queries "
            f"(range {pq['low']:.3f} to {pq['high']:.3f})"
        )
    return text


CONSISTENCY_BAR = 0.5  # order consistency under which position, not content, decides a pairwise judge


def case_advice(
    advice_: str,
    *,
    kind: str | None,
    bar: float,
    ceiling: Mapping[str, Any] | None = None,
    position: Mapping[str, Any] | None = None,
) -> str:
    """The advice that fits the case (issue #40, item 8), each naming the figure it rests on:

    - a pairwise judge whose order consistency is under :data:`CONSISTENCY_BAR` picks by position,
      whatever the label count (fewer than half its pairs keep their winner when the order swaps);
    - people whose own agreement (the ceiling) is below the bar: the rubric or the guidelines first,
      no judge can be held to agreement the people do not reach;
    - the offline judge has no prompt: more labels or another feature set, never "re-tune the prompt".
    Else ``advice_`` unchanged."""
    consistency = (position or {}).get("position_consistency")
    if consistency is not None and consistency < CONSISTENCY_BAR:
        return (
            f"the judge picks by position: order consistency {consistency:.3f} over "
            f"{(position or {}).get('n_pairs')} pairs "
            f"asked in both orders (under {CONSISTENCY_BAR}: the order, not the answers, decides); fix how the "
            "prompt presents the pair or swap the judge before labelling more"
        )
    ceiling_kappa = (ceiling or {}).get("kappa")
    if ceiling_kappa is not None and ceiling_kappa < bar:
        return (
            f"people agree with each other at kappa {ceiling_kappa:.3f} (the ceiling, n = {(ceiling or {}).get('n')}), "
            f"below the bar {bar}: fix the rubric or the guidelines before judging the judge"
        )
    if kind == "lexical" and "prompt" in advice_:
        return (
            "do not use its figures: the offline judge has no prompt; label more items (it is fitted on them) "
            "or give it another feature set, or compare with an LLM judge"
        )
    return advice_
