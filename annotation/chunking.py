"""Two chunkers (#44): fixed size (documents cut into spans of ``size`` characters, each starting
``size - overlap`` characters after the one before) and by paragraph (whole lines packed into
chunks of at most ``size`` characters). No IO: the spans are offsets only; the
chunks file that records them is :mod:`annotation.formats.chunks`'s.

It exists so that two chunkings of one corpus can be made and compared (tests, the docs'
comparison, ``python -m annotation chunk``); a team's own splitter writes the same chunks file.

A chunk's id names its chunking: ``<doc>#<size>-<overlap>#<n>`` (fixed, e.g. ``pubmed#800-200#6``)
and ``<doc>#p<size>#<n>`` (by paragraph, e.g. ``pubmed#p800#6``), n from 0 in each document. Two
chunkings of the same documents never share an id, so a run made over one and scored with the
other's chunks file is refused (its ids are not there), never scored on the wrong offsets. Files
written before (ids ``<doc>#<n>``) read as ever: a chunks file's ids are whatever it says.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from annotation.errors import DenominatorError
from annotation.model import ChunkSpan

__all__ = ["ChunkingError", "fixed_chunks", "paragraph_chunks"]


class ChunkingError(DenominatorError, ValueError):
    """A chunking that cannot be made: a size or overlap out of range, a document id with spaces."""

    kind = "chunking"


def _check_id(doc: str) -> None:
    if not doc or any(c.isspace() for c in doc):
        raise ChunkingError(
            f"document id {doc!r:.60} holds whitespace; chunk ids are <doc>#<chunking>#<n>, without spaces"
        )


def fixed_chunks(documents: Mapping[str, str], size: int, overlap: int = 0) -> list[ChunkSpan]:
    """Each document cut into ``[start, min(start + size, len))`` for ``start = 0, step, 2 step,
    ...`` with ``step = size - overlap``, until a chunk reaches the document's end (an empty
    document has no chunk). Chunk ids are ``<doc>#<size>-<overlap>#<n>``, n from 0 in each document."""
    if size < 1:
        raise ChunkingError(f"a chunk size of {size} characters; expected at least 1")
    if not 0 <= overlap < size:
        raise ChunkingError(
            f"an overlap of {overlap} characters with size {size}; expected 0 <= overlap < size"
        )
    step = size - overlap
    chunks = []
    chunking = f"{size}-{overlap}"
    for doc, text in documents.items():
        _check_id(doc)
        start, n = 0, 0
        while start < len(text):
            end = min(start + size, len(text))
            chunks.append(ChunkSpan(f"{doc}#{chunking}#{n}", doc, start, end))
            if end == len(text):
                break
            start, n = start + step, n + 1
    return chunks


_LINE = re.compile(r"[^\r\n]+")


def paragraph_chunks(documents: Mapping[str, str], size: int) -> list[ChunkSpan]:
    """Each document's paragraphs (its lines: the text between line breaks; a blank or
    whitespace-only line is none) packed in order into chunks: a chunk runs from its first
    paragraph's start to its last one's end (the line breaks between them inside) and takes the
    next paragraph while it stays within ``size`` characters. A paragraph longer than ``size`` is
    first cut into pieces of ``size`` characters (the last one shorter), packed like paragraphs.
    Line breaks between two chunks belong to neither. Chunk ids are ``<doc>#p<size>#<n>``."""
    if size < 1:
        raise ChunkingError(f"a chunk size of {size} characters; expected at least 1")
    chunks: list[ChunkSpan] = []
    for doc, text in documents.items():
        _check_id(doc)
        pieces: list[tuple[int, int]] = []
        for line in _LINE.finditer(text):
            start, end = line.span()
            if not text[start:end].strip():
                continue
            while end - start > size:
                pieces.append((start, start + size))
                start += size
            pieces.append((start, end))
        spans: list[tuple[int, int]] = []
        for start, end in pieces:
            if spans and end - spans[-1][0] <= size:
                spans[-1] = (spans[-1][0], end)
            else:
                spans.append((start, end))
        chunks.extend(
            ChunkSpan(f"{doc}#p{size}#{n}", doc, start, end) for n, (start, end) in enumerate(spans)
        )
    return chunks
