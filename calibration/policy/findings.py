"""Findings grouped by kind: what a run of 6,000 queries shows instead of one line per query.

An audit gives each query its findings (``calibration.audit``: ``duplicate_ids``,
``rel_above_k``, ...). A face shows them one line per kind with its count and its denominator
(``duplicate chunk ids in 1,095 of 6,000 queries: each repeat keeps its slot and scores
nothing``), then the queries behind it: a few in the CLI's table (every one with
``--verbose``), a capped list in the Metrics page's expander. Pure: plain data in, plain data out.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from calibration.policy.finding_words import FINDINGS, REPEAT_RULE, finding_text, repeats_text
from calibration.results import AuditReport

__all__ = [
    "EXAMPLES",
    "KIND_TEXT",
    "FindingGroup",
    "kind_line",
    "group_findings",
    "repeats_group",
    "group_text",
]

EXAMPLES = 3  # queries a text table lists under each kind of finding; --verbose lists them all
KIND_TEXT = {  # what a kind of finding says of a query, and why it matters (``{k}``: the cutoff)
    "recall_undefined": ("no judged relevant chunk", "recall undefined, left out of the mean"),
    "duplicate_ids": ("duplicate chunk ids", REPEAT_RULE),
    "duplicate_text": ("the same text under different chunk ids", "the model is shown the same text twice"),
    "positional_mismatch": (
        "more hits by a naive positional count than distinct relevant chunks",
        "a repeated relevant chunk counted again",
    ),
    "run_short": ("fewer chunks in the ranking than k = {k}", "the empty slots count as not relevant"),
    "rel_above_k": ("more relevant chunks than k = {k}", "recall can never reach 1"),
    "rel_below_k": ("fewer relevant chunks than k = {k}", "precision can never reach 1"),
    "low_judged_at_k": ("few judged chunks in the top {k}", "unjudged chunks count as not relevant"),
    "stage1_recall_low": ("stage-1 recall below the bar", "what the fetch misses no reranker can recover"),
    "stage1_circular": (
        "every judged chunk in stage 1 (labels pooled from this run)",
        "stage-1 recall is 1 by construction: it cannot show what the fetch misses",
    ),
    "labels_incomplete": ("relevant chunks in the truth set the labels lack", "recall reads too high"),
    "labels_incomplete_estimated": (
        "judged recall outside the interval estimated from the sample",
        "the labels miss relevant chunks",
    ),
}


@dataclass(frozen=True)
class FindingGroup:
    """One kind of finding over a run: how many queries have it, of how many, and each one's
    finding in words (query id, text), in the report's order."""

    code: str
    line: str  # ``duplicate chunk ids in 1,095 of 6,000 queries: each repeat keeps its slot ...``
    count: int
    total: int
    queries: list[tuple[str, str]]


def kind_line(code: str, count: int, total: int, k: int, where: str = "queries") -> str:
    """A kind of finding in one line, its count with its denominator."""
    what, why = KIND_TEXT.get(code, (code, ""))
    return f"{what.format(k=k)} in {count:,} of {total:,} {where}" + (f": {why}" if why else "")


def group_findings(report: AuditReport, listed: int | None = None) -> list[FindingGroup]:
    """The audit's findings, one group per kind (in :data:`~calibration.audit.FINDINGS` order, then
    any other kind): what the page and the text table show instead of one line per query. With
    ``listed``, each group's ``queries`` holds its first ``listed`` queries in words, its ``count``
    all of them (a page that lists 200 of 10,000 writes 200)."""
    k, total = report["k"], len(report["queries"])
    provenance = report.get("provenance")
    by_code: dict[str, list[tuple[str, str]]] = {}
    counts: dict[str, int] = {}
    for qid, q in report["queries"].items():
        for code in q["findings"]:
            counts[code] = counts.get(code, 0) + 1
            if listed is None or counts[code] <= listed:
                by_code.setdefault(code, []).append((qid, finding_text(code, q, k, provenance)))
    order = [c for c in FINDINGS if c in counts] + [c for c in counts if c not in FINDINGS]
    return [
        FindingGroup(
            code, kind_line(code, counts[code], total, k), counts[code], total, by_code.get(code, [])
        )
        for code in order
    ]


def repeats_group(duplicates: Mapping[str, list[str]], run_queries: int, k: int) -> FindingGroup | None:
    """The run's repeated ids (``Evaluation.duplicates``) as one group over the run's queries."""
    if not duplicates:
        return None
    queries = [(qid, repeats_text(ids)) for qid, ids in duplicates.items()]
    line = kind_line("duplicate_ids", len(queries), run_queries, k, "queries of the run")
    return FindingGroup("duplicate_ids", line, len(queries), run_queries, queries)


def group_text(group: FindingGroup, verbose: bool = False, tag: bool = True, indent: str = "  ") -> list[str]:
    """A group as text lines: its line, then its queries (the first :data:`EXAMPLES`, all when
    ``verbose``) and how many more there are."""
    shown = group.queries if verbose else group.queries[:EXAMPLES]
    label = f"[{group.code}] " if tag else ""
    lines = [f"{indent}{group.line}"]
    lines += [f"{indent}  {qid}: {label}{text}" for qid, text in shown]
    if len(shown) < len(group.queries):
        lines.append(f"{indent}  ... and {len(group.queries) - len(shown):,} more (--verbose lists them)")
    return lines
