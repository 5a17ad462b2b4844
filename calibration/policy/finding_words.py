"""The audit's findings in words, and the bars two of them are held to: what every face (the
CLI's table, the Metrics and Check pages, ``--help``) says of a finding, without loading the audit
itself (its arrays): ``python -m calibration metrics --help`` imports this, not
:mod:`calibration.audit`, which re-exports every name here."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from annotation.render import num
from calibration.policy.rules import DEFAULT_POLICY, Bar, Policy, rules_table

__all__ = [
    "coverage_denominator",
    "policy_help",
    "FINDINGS",
    "REPEAT_RULE",
    "STAGE1_BAR",
    "JUDGED_BAR",
    "BY_ID_ONLY",
    "BY_TEXT",
    "finding_text",
    "repeats_text",
    "same_text_text",
]

FINDINGS = (
    "recall_undefined",
    "duplicate_ids",
    "duplicate_text",
    "positional_mismatch",
    "run_short",
    "rel_above_k",
    "rel_below_k",
    "low_judged_at_k",
    "stage1_recall_low",
    "stage1_circular",
    "labels_incomplete",
)

REPEAT_RULE = "each repeat keeps its slot and scores nothing"
"""How a repeated document id is counted, in the words every face uses."""

BY_ID_ONLY = "duplicates by id only: give --corpus to compare text"
"""What a report says when no chunk text is known to compare."""
BY_TEXT = "duplicates by id and by text (whitespace collapsed, case folded)"
"""What a report says when the texts were compared too."""

# the bars of the findings low_judged_at_k and stage1_recall_low: the policy's rules (calibration.policy.rules)
STAGE1_BAR: Bar = DEFAULT_POLICY.bar("stage1_recall") or Bar(">", 0.95)
JUDGED_BAR: Bar = DEFAULT_POLICY.bar("judged_at_k") or Bar(">=", 0.25)


def finding_text(code: str, q: Mapping[str, Any], k: int, provenance: str | None = None) -> str:
    """The finding in words, with its numbers; ``provenance`` (the audit's: golden.yaml pooled every
    label from this run) is quoted as the reason of a circular stage 1."""
    rel = q["rel"]
    if code == "recall_undefined":
        return "no judged relevant document: recall is undefined (left out of the mean)"
    if code == "duplicate_ids":
        return repeats_text(q["duplicates"])
    if code == "duplicate_text":
        return same_text_text(q.get("same_text") or [])
    if code == "positional_mismatch":
        return (
            f"a naive positional count finds {q['positional_hits']} hits in the top {k}, "
            f"distinct documents give {q['distinct_hits']}"
        )
    if code == "run_short":
        n = q.get("retrieved", 0)  # a check recorded before run_short held none
        return (
            f"the run returns {n} {'chunk' if n == 1 else 'chunks'} for k = {k}: the {k - n} empty "
            f"{'slot counts' if k - n == 1 else 'slots count'} as not relevant (precision is over k)"
        )
    if code == "rel_above_k":
        return f"|Rel|={rel} > k={k}: recall can never exceed {q['recall_ceiling']:.3f}"
    if code == "rel_below_k":
        return f"|Rel|={rel} < k={k}: precision can never exceed {q['precision_ceiling']:.2f}"
    if code == "low_judged_at_k":
        return (
            f"only {q['judged_at_k']:.0%} of the top {k} is judged: unjudged documents count as not relevant"
        )
    if code == "stage1_recall_low":
        found = "none" if q.get("fetch_hits") == 0 else f"only {_stage1_share(q, rel)}"
        return f"stage 1 finds {found} of |Rel|={rel}: what the fetch misses no reranker can recover"
    if code == "stage1_circular":
        why = f"; {provenance}" if provenance else " (as when the labels were pooled from this run's top)"
        return (
            f"every judged chunk of this query is in the run's stage 1: stage-1 recall is 1 by construction{why}, "
            "and cannot show what the fetch misses; label chunks other systems find (pool several runs, or "
            "pool --estimate)"
        )
    if code == "labels_incomplete":
        return (
            f"the truth set has relevant documents the labels lack: recall against the labels "
            f"{_fmt(q['recall'])}, against the truth {_fmt(q['recall_true'])}"
        )
    if code == "labels_incomplete_estimated":
        est = q.get("recall_estimated") or {}
        low, high = est.get("ci") or (None, None)
        return (
            f"the sample of unjudged chunks says the labels miss relevant ones: recall against the labels "
            f"{_fmt(q['recall'])} lies outside the estimated {_fmt(est.get('estimate'))} "
            f"[{_fmt(low)}, {_fmt(high)}] (|Rel| estimated {est.get('rel', 0):.1f}, judged {rel})"
        )
    return code


def _stage1_share(q: Mapping[str, Any], rel: int) -> str:
    """``11 (0.6875)``: the hits themselves beside the share, so a share on its bar reads right."""
    hits = q.get("fetch_hits")
    if hits is None:
        return f"{q['recall_at_fetch']:.3f}"
    exact = f"{hits / rel:.6f}".rstrip("0").rstrip(".") if rel else "undefined"
    return f"{hits} ({exact})"


def repeats_text(ids: Sequence[str]) -> str:
    """The repeated ids of a ranking and how they count (the duplicate_ids finding,
    the metrics' notes on the CLI and on the page)."""
    return f"repeated ids {', '.join(ids)}: {REPEAT_RULE}"


def same_text_text(pairs: Sequence[Sequence[str]]) -> str:
    """``folderB/d1 = folderA/d1 (same text)``: the duplicate_text finding's pairs, each later id
    beside the first id of its text."""
    return ", ".join(f"{later} = {first} (same text)" for later, first in pairs)


def _fmt(value: float | None) -> str:
    return num(value, 3, "prose")


def policy_help(policy: Policy = DEFAULT_POLICY) -> str:
    """The thresholds table, each rule with its strictness and its source: ``check --help``."""
    rows = [["rule", "bar", "source"]] + [list(r) for r in rules_table(policy, every_corpus=True)]
    widths = [max(len(r[c]) for r in rows) for c in range(len(rows[0]) - 1)]
    table = "\n".join(
        "  ".join(cell.ljust(w) for cell, w in zip(r[:-1], widths)) + "  " + r[-1] for r in rows
    )
    return table + (
        "\n\nkappa and faithfulness pass when the interval's lower end meets the bar and fail when its upper "
        "end does not; a figure not shown (undecided, uncalibrated) fails too, unless the policy says "
        f"undecided: warn (now: {policy.undecided})"
    )


def coverage_denominator(corpus_size: int) -> str:
    """What a table's ``coverage`` column is a fraction of, said under the table (metrics, check, the
    Check page): ``coverage = judged chunks of the query / the 24 chunks of the corpus``."""
    return f"coverage = judged chunks of the query / the {corpus_size:,} chunks of the corpus"
