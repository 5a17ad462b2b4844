"""What the offline judge reads from the store (read-only): the (a, b) texts of the items its rubrics
grade and the human grades it is fitted on.

Texts: relevance grades chunk items, a = the query, b = the chunk; faithfulness grades trace items,
a = the answer, b = the contexts shown, joined with newlines (a context naming a chunk shows the
chunk's text, any other shows itself, as on the labelling page). An item without text on either
side has nothing to grade and is skipped.

Grades: per annotator the newest label of the rubric on the item counts (a retraction, NULL, leaves
the annotator out); the item's grade is the median (lower middle value) of those labels.
"""

from __future__ import annotations

import json
from collections.abc import Iterable

from annotation.store import Store, aggregate_grades
from judge.lexical.model import RUBRIC_KINDS, text_rubric

__all__ = ["training_data", "item_texts"]


def _texts(store: Store, kind: str) -> dict[int, tuple[str, str]]:
    """item id -> (a, b) for every item of ``kind`` with text on both sides."""
    out: dict[int, tuple[str, str]] = {}
    if kind == "chunk":
        for item_id, a, b in store.chunk_item_texts():
            if a and a.strip() and b and b.strip():
                out[int(item_id)] = (a, b)
        return out
    chunk_text = store.chunks_with_text()
    for item_id, answer, contexts in store.trace_item_answers():
        # a context naming a chunk shows the chunk's text; any other shows itself (as the labelling page)
        shown = [chunk_text.get(c) or c for c in json.loads(contexts or "[]") if isinstance(c, str)]
        joined = "\n".join(s for s in shown if s.strip())
        if answer and answer.strip() and joined:
            out[int(item_id)] = (answer, joined)
    return out


def training_data(store: Store, rubric: str) -> list[tuple[int, str, str, int]]:
    """(item id, a, b, grade) per labelled item of the rubric's kind, by item id.

    Per annotator the current label counts: the newest row of that rubric on
    the item; an annotator whose newest row is a retraction (NULL) is left
    out. The grade is the median (lower middle value) of the annotators'
    current labels. Items without text on either side are skipped."""
    name = text_rubric(rubric).name
    kind = RUBRIC_KINDS[name]
    rows = store.newest_rubric_values(kind, name)
    values: dict[int, list[int]] = {}
    for item_id, value in rows:
        if value is not None:
            values.setdefault(int(item_id), []).append(int(value))
    texts = _texts(store, kind)
    return [
        (item_id, *texts[item_id], aggregate_grades(grades, "median"))
        for item_id, grades in sorted(values.items())
        if item_id in texts
    ]


def item_texts(
    store: Store, rubric: str, item_ids: Iterable[int] | None = None
) -> list[tuple[int, str, str]]:
    """(item id, a, b) of every item of the rubric's kind (or of ``item_ids``),
    by item id; items without text on either side are skipped (nothing to grade).
    An id that is not an item of that kind is an error."""
    kind = RUBRIC_KINDS[text_rubric(rubric).name]
    texts = _texts(store, kind)
    if item_ids is None:
        return [(i, a, b) for i, (a, b) in texts.items()]
    wanted = sorted({int(i) for i in item_ids})
    if wanted:
        known = store.known_items(kind, wanted)
        unknown = [i for i in wanted if i not in known]
        if unknown:
            shown = ", ".join(map(str, unknown[:10])) + (", ..." if len(unknown) > 10 else "")
            raise ValueError(f"no {kind} item with id {shown} ({rubric} grades {kind} items)")
    return [(i, *texts[i]) for i in wanted if i in texts]
