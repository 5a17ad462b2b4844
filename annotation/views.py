"""What the pages read of the store for a person and a pool (#41: readers, not workflows): the next
item and an item as a labeller sees it (blind by construction), one's own work, progress, and what
each run found at a depth."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from annotation.rubrics import DEFAULT_MIN_GRADE
from annotation.sentences import sentence_spans
from annotation.store.base import StoreError

if TYPE_CHECKING:
    from annotation.pooling import RunFound
    from annotation.store import Store
    from annotation.store.queue import Waiting

__all__ = [
    "SUMMARY_CHARS",
    "is_open",
    "item_summary",
    "item_view",
    "marking_view",
    "my_work",
    "next_item",
    "pool_report",
    "progress",
    "waiting_words",
]


def next_item(
    store: Store, annotator: str, skipped: Sequence[int] = (), kind: str = "chunk"
) -> dict[str, Any] | None:
    """The next item to label, with only what the page may show:

    - chunk: ``{"item_id", "query", "chunk"}``
    - trace: ``{"item_id", "question", "contexts": [texts], "answer"}``
    - pair: ``{"item_id", "question", "answers": [first, second], "shown": "AB" | "BA"}``
      (the order is random per annotator and item, and stable)

    Blind by construction: the queries read only items, assignments, queries,
    chunks, traces' question/contexts/answer and this annotator's own labels;
    never runs, rankings, system names, judge labels or other people's labels."""
    annotator_id = store.annotator_id(annotator)
    item_id = store.next_unlabelled_item(annotator_id, kind, skipped)
    return item_view(store, item_id, annotator) if item_id is not None else None


def item_view(store: Store, item_id: int, annotator: str) -> dict[str, Any] | None:
    """What the labelling page shows of one item (see :func:`next_item`): the item and its texts
    in one read, a trace's contexts given as chunk ids in a second."""
    shown = store.item_texts(item_id)
    if shown is None:
        return None
    if shown.kind == "chunk":
        return {"item_id": item_id, "query": shown.query or "", "chunk": shown.chunk or ""}
    if not shown.has_trace:  # an item's trace is stored (a foreign key)
        raise StoreError(f"item {item_id}: its trace is not stored")
    if shown.kind == "trace":
        contexts = json.loads(shown.contexts or "[]")
        ids = [c for c in contexts if isinstance(c, str)]
        texts = store.chunk_texts_shown(ids) if ids else {}
        return {
            "item_id": item_id,
            "question": shown.question,
            "contexts": [
                (texts.get(c) if isinstance(c, str) else store.chunk_text(c)) or c for c in contexts
            ],
            "answer": shown.answer,
        }
    flip = hashlib.sha256(f"{annotator}\0{item_id}".encode()).digest()[0] % 2 == 1
    answers = [shown.answer_b, shown.answer] if flip else [shown.answer, shown.answer_b]
    return {
        "item_id": item_id,
        "question": shown.question,
        "answers": answers,
        "shown": "BA" if flip else "AB",
    }


SUMMARY_CHARS = 90  # how much of an item's text the "your work" list shows


def _short(text: str | None, chars: int) -> str:
    flat = " ".join((text or "").split())
    return flat if len(flat) <= chars else flat[: chars - 1].rstrip() + "…"


def item_summary(view: dict[str, Any] | None) -> str:
    """One line that says which item it is (:func:`item_view`'s texts, never more): the query and
    the chunk's opening for a chunk, the question for a trace or a pair."""
    if view is None:
        return "an item no longer stored"
    if "chunk" in view:
        return f"“{_short(view['query'], 40)}” / “{_short(view['chunk'], SUMMARY_CHARS - 40)}”"
    return f"“{_short(view['question'], SUMMARY_CHARS)}”"


def is_open(store: Store, item_id: int, annotator: str) -> bool:
    """Whether the item has no current label of this annotator (a skipped item still to label)."""
    current = store.current_value(item_id, store.annotator_id(annotator))
    return current is None or current == (None,)


def my_work(
    store: Store, annotator: str, kind: str, skipped: Sequence[int] = (), limit: int = 20
) -> dict[str, Any]:
    """What an annotator has left aside and done on ``kind`` items, and nothing of anyone else:
    ``{"skipped": [{"item_id", "summary"}], "past": [{"item_id", "value", "rubric", "when",
    "summary"}]}``, the skipped items still open in their order, the past labels newest first
    (at most ``limit``)."""
    open_skipped = [i for i in skipped if is_open(store, i, annotator)]
    return {
        "skipped": [
            {"item_id": i, "summary": item_summary(item_view(store, i, annotator))} for i in open_skipped
        ],
        "past": [
            {
                "item_id": row["item_id"],
                "value": row["value"],
                "rubric": row["rubric"],
                "when": row["created_at"][:16].replace("T", " "),
                "summary": item_summary(item_view(store, row["item_id"], annotator)),
            }
            for row in store.my_labels(annotator, kind, limit)
        ],
    }


def progress(store: Store, annotator: str, kind: str = "chunk") -> tuple[int, int]:
    """(labelled, total) of this annotator's queue of ``kind`` items."""
    annotator_id = store.annotator_id(annotator)
    return store.queue_progress(annotator_id, kind)


def pool_report(store: Store, depth: int, min_grade: int = DEFAULT_MIN_GRADE) -> list[RunFound]:
    """Per run: pairs in its top ``depth``, judged-relevant chunks among them
    (current labels, median over annotators), and how many of those only this
    run found. If one run finds most relevant chunks alone, the labels lean
    toward it: the other systems' recall is measured against its finds."""
    grades: dict[tuple[str, str], list[int]] = {}
    for label in store.current_labels(kind="chunk"):
        grades.setdefault((label["query_id"], label["chunk_id"]), []).append(label["value"])
    relevant = {
        pair for pair, values in grades.items() if sorted(values)[(len(values) - 1) // 2] >= min_grade
    }
    found: dict[str, set[tuple[str, str]]] = {}
    for name, query_id, chunk_id in store.top_ranked(depth):
        found.setdefault(name, set()).add((query_id, chunk_id))
    report: list[RunFound] = []
    for name in sorted(found):
        mine = found[name] & relevant
        others = set().union(*(found[o] for o in found if o != name)) if len(found) > 1 else set()
        report.append(
            {
                "run": name,
                "pooled": len(found[name]),
                "relevant_found": len(mine),
                "relevant_judged": len(relevant),
                "found_only_here": len(mine - others),
            }
        )
    return report


def waiting_words(waiting: Waiting, now: datetime | None = None) -> str:
    """Why a queue with items left hands nothing out now, and when they come back
    (:meth:`annotation.store.queue.Queue.waiting`); "" when nothing waits on another screen."""
    count = waiting.own_tabs + waiting.others
    if not count or waiting.first_back is None or waiting.last_back is None:
        return ""
    now = now or datetime.now(UTC)
    where = [
        f"{waiting.own_tabs} on another tab of yours" if waiting.own_tabs else "",
        f"{waiting.others} on other people's (the last labels they need)" if waiting.others else "",
    ]

    def when(at: str) -> str:
        moment = datetime.fromisoformat(at)
        minutes = max(0, round((moment - now).total_seconds() / 60))
        return f"{moment:%H:%M} UTC (in {'under a minute' if minutes == 0 else f'about {minutes} min'})"

    first, last = when(waiting.first_back), when(waiting.last_back)
    return (
        f"{count} {'item is' if count == 1 else 'items are'} open on other screens "
        f"({', '.join(w for w in where if w)}). They come back as soon as they are skipped there or "
        f"their tab is closed; if those tabs stay idle, "
        + (f"at {first}." if first == last else f"from {first} to {last}.")
    )


def marking_view(store: Store, item_id: int, annotator: str, text: str) -> list[tuple[int, int, bool]]:
    """The sentences of ``item_id``'s chunk ``text`` (as the page shows it) a person may mark as
    the answer (#44 item 2): ``(start, end, ticked)``, offsets into the text, ticked when among
    ``annotator``'s own current marks (never another person's). StoreError (UnplacedChunk) when the
    chunk's place in its document is not known or its text is not that place's length."""
    doc, start, end = store.chunk_place(item_id)
    if len(text) != end - start:
        raise StoreError(
            f"this chunk's text ({len(text)} characters) does not match its place in {doc!r} "
            f"({start}-{end}), so it cannot be marked"
        )
    mine = set(store.my_marks(item_id, annotator))
    return [(begin, finish, (begin, finish) in mine) for begin, finish in sentence_spans(text)]
