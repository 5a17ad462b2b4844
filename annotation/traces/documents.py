"""LangChain-style documents, as Langfuse observations and LangSmith runs hold
them: ``[{"page_content", "metadata", "id"?}]`` at a documents path, and the
:class:`Spec` those two sources share (the same document defaults, only their
question, answer, system and documents paths differ)."""

from __future__ import annotations

from typing import Any

from annotation.traces.base import Loc, Node, where
from annotation.traces.mapping import FieldPath, Spec, decode, first_of

DOC_ID = "id|metadata.id|metadata.chunk_id|metadata.doc_id|node.id_"
DOC_TEXT = "page_content|pageContent|content|text|node.text"
DOC_SCORE = "score|metadata.score|metadata.relevance_score|relevance_score"


def record_docs(node: Node, role: str, documents: FieldPath | None) -> list[tuple[Any, Loc]]:
    """Documents of a Langfuse observation or LangSmith run: a list at the
    documents path (a JSON-encoded list too), or under ``documents``/``nodes``/
    ``output`` of the object found there."""
    if documents is None:
        return []
    value, used = first_of(node.record, documents)
    value = decode(value)
    for _ in range(3):
        if isinstance(value, dict):
            for key in ("documents", "nodes", "source_nodes", "output"):
                if isinstance(decode(value.get(key)), list):
                    value, used = decode(value[key]), f"{used}.{key}"
                    break
            else:
                break
    if not isinstance(value, list):
        return []
    base = where(node.loc, used)
    return [(doc, Loc(base, i)) for i, doc in enumerate(value)]


def record_spec(*, question: str, answer: str, system: str, system_fallback: str, documents: str) -> Spec:
    """The Spec of a source of LangChain documents: chunk id, text and score by
    the defaults above, documents found by :func:`record_docs`."""
    return Spec(
        question=question,
        answer=answer,
        system=system,
        system_fallback=system_fallback,
        chunk_id=DOC_ID,
        chunk_text=DOC_TEXT,
        score=DOC_SCORE,
        documents=documents,
        docs=record_docs,
    )
