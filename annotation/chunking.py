"""A fixed-size chunker (#44): documents cut into spans of ``size`` characters, each starting
``size - overlap`` characters after the one before. No IO: the spans are offsets only; the
chunks file that records them is :mod:`annotation.formats.chunks`'s.

It exists so that two chunkings of one corpus can be made and compared (tests, the docs'
comparison, ``python -m annotation chunk``); a team's own splitter writes the same chunks file.
"""

from __future__ import annotations

from collections.abc import Mapping

from annotation.errors import DenominatorError
from annotation.model import ChunkSpan

__all__ = ["ChunkingError", "fixed_chunks"]


class ChunkingError(DenominatorError, ValueError):
    """A chunking that cannot be made: a size or overlap out of range, a document id with spaces."""

    kind = "chunking"


def fixed_chunks(documents: Mapping[str, str], size: int, overlap: int = 0) -> list[ChunkSpan]:
    """Each document cut into ``[start, min(start + size, len))`` for ``start = 0, step, 2 step,
    ...`` with ``step = size - overlap``, until a chunk reaches the document's end (an empty
    document has no chunk). Chunk ids are ``<doc>#<n>``, n from 0 in each document."""
    if size < 1:
        raise ChunkingError(f"a chunk size of {size} characters; expected at least 1")
    if not 0 <= overlap < size:
        raise ChunkingError(
            f"an overlap of {overlap} characters with size {size}; expected 0 <= overlap < size"
        )
    step = size - overlap
    chunks = []
    for doc, text in documents.items():
        if not doc or any(c.isspace() for c in doc):
            raise ChunkingError(
                f"document id {doc!r:.60} holds whitespace; chunk ids are <doc>#<n>, without spaces"
            )
        start, n = 0, 0
        while start < len(text):
            end = min(start + size, len(text))
            chunks.append(ChunkSpan(f"{doc}#{n}", doc, start, end))
            if end == len(text):
                break
            start, n = start + step, n + 1
    return chunks
