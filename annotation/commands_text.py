"""How the results of the annotation commands are said (pure): the words the command line and the
Data and Imports pages share for a baseline, the handout, an import and its retirement (#41: the
renderings, beside the workflows that return what they say)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from annotation.render import counted

if TYPE_CHECKING:
    from annotation.baseline import BaselineReport
    from annotation.rubrics import Guidelines
    from annotation.store.retirements import ImportChange, ImportRecord

__all__ = [
    "ROW_WORDS",
    "baseline_text",
    "guidelines_text",
    "handout_text",
    "import_state_text",
    "retirement_text",
    "rows_text",
]


def baseline_text(report: BaselineReport) -> str:
    """What :func:`add_baseline` did, in one line (the command line's and the Data page's words)."""

    skipped = report["queries_without_text"]
    return (
        f"baseline run {report['name']!r} ({report['engine']}, fetch): top {report['depth']} of "
        f"{counted(report['chunks'], 'chunk', 'chunks')} for {counted(report['queries'], 'query', 'queries')}"
        + (f" ({counted(skipped, 'query', 'queries')} without text skipped)" if skipped else "")
        + f": {counted(report['runs'], 'run', 'runs')}, {counted(report['rankings'], 'ranking', 'rankings')}, "
        f"{report['unchanged']} unchanged"
    )


def guidelines_text(guidelines: Guidelines) -> str:
    """Which guidelines these are, in one line (the command line's and the Guidelines page's words):
    ``relevance guidelines, version 2, by root at 2026-12-06 03:20 UTC`` or ``..., version 0
    (built in)``."""
    head = f"{guidelines.rubric} guidelines, version {guidelines.version}"
    if not guidelines.edited:
        return f"{head} (built in)"
    when = (guidelines.created_at or "").replace("T", " ")[:16]
    return f"{head}, by {guidelines.who} at {when} UTC"


def handout_text(mode: str, labels: int) -> str:
    """The handout in words, the same on every face."""
    if mode == "open":
        return (
            f"items are handed out open: each goes to whoever asks next, never twice to one person, "
            f"until {labels} different {'person has' if labels == 1 else 'people have'} labelled it; "
            "a person with items assigned (pool --annotators) gets those"
        )
    return (
        "items are handed out as assigned: each only to the people it is assigned to "
        "(pool --annotators); a person with nothing assigned gets nothing"
    )


def rows_text(rows: Mapping[str, int]) -> str:
    """What an import holds: ``4 queries, 24 chunks, 1 run, 30 labels`` (``no rows``)."""
    words = [counted(n, *ROW_WORDS.get(table, (table[:-1], table))) for table, n in rows.items()]
    return ", ".join(words) or "no rows"


def import_state_text(row: ImportRecord) -> str:
    """``live``, ``retired (by sam, wrong slot)``: an import's state and its newest change."""
    state = str(row["state"])
    if row.get("changed_by"):
        state += f" (by {row['changed_by']}{', ' + str(row['reason']) if row.get('reason') else ''})"
    return state


def retirement_text(done: ImportChange, action: str) -> str:
    """What a retire or restore did, in one sentence (every face says this; the CLI adds its
    command to undo it): ``retired import 2 (queries q.jsonl; 30 queries): its rows are out of
    queues, metrics, exports and reviews``."""
    head = f"import {done['id']} ({done['name']}; {rows_text(done['rows'])})"
    if not done["changed"]:
        when = f" (by {done['changed_by']}, {done['changed_at']})" if done.get("changed_by") else ""
        return f"{head} is already {done['state']}{when}; nothing changed"
    if action == "retire":
        return f"retired {head}: its rows are out of queues, metrics, exports and reviews"
    return f"restored {head}: its rows count again in queues, metrics, exports and reviews"


ROW_WORDS = {"queries": ("query", "queries"), "chunks": ("chunk", "chunks"), "runs": ("run", "runs")}
