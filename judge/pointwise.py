"""Pointwise judging: relevance 0-3 of (query, chunk) items, faithfulness 0-2
of traces (is every claim of the answer supported by the contexts shown).

The judge sees what a person sees on the labelling pages, and nothing more:
the query and the chunk; the question, the contexts and the answer. Never a
run, rank, score or another label.
"""

from __future__ import annotations

import json
from collections.abc import Collection

from annotation.rubrics import FAITHFULNESS, RELEVANCE
from annotation.store import Store, StoreError
from judge.runner import Call

__all__ = ["pointwise_calls", "KIND_OF_RUBRIC"]

KIND_OF_RUBRIC = {RELEVANCE.name: "chunk", FAITHFULNESS.name: "trace"}


def pointwise_calls(
    store: Store, rubric: str, limit: int | None = None, item_ids: Collection[int] | None = None
) -> list[Call]:
    """A call per item of the rubric's kind, in item order (``limit``: the first N; ``item_ids``:
    only those items, e.g. a run's holes).
    An item whose texts are not imported yet (a run or label file names a chunk
    the corpus does not have) is not asked: a grade of an empty text would count
    as done and never be asked again."""
    if rubric not in KIND_OF_RUBRIC:
        raise StoreError(f"pointwise rubric {rubric!r}; expected relevance or faithfulness")
    if limit is not None and limit < 1:
        raise StoreError(f"limit {limit}; expected at least 1 (or no limit)")
    if item_ids is not None:  # the limit applies to those items
        wanted = set(item_ids)
        calls = pointwise_calls(store, rubric, item_ids=None)
        picked = [c for c in calls if c.item_id in wanted]
        return picked[:limit] if limit else picked
    if rubric == RELEVANCE.name:
        rows = store.gradable_chunk_items(limit)
        return [Call(item_id, {"query": query or "", "chunk": chunk or ""}) for item_id, query, chunk in rows]
    traces = store.gradable_trace_items(limit)
    texts = store.chunks_with_text()
    return [
        Call(
            item_id,
            {
                "question": question or "",
                "contexts": [texts.get(c, c) for c in json.loads(contexts or "[]")],
                "answer": answer or "",
            },
        )
        for item_id, question, contexts, answer in traces
    ]
