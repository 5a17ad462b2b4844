"""Sentences of a text as character offsets, for marking evidence in a chunk (#44).

A small pure splitter: a sentence ends after ``.``, ``!`` or ``?`` (and any closing quotes or
brackets right after it) followed by white space, or at a blank line; the white space between
sentences belongs to neither. Offsets are Python string indices, end exclusive, so
``text[start:end]`` is the sentence. No IO.
"""

from __future__ import annotations

import re

__all__ = ["sentence_spans"]

# the end of a sentence: its punctuation (and closers), then the white space that follows it
_BREAK = re.compile(r"(?<=[.!?])[\"')\]]*\s+|\n\s*\n\s*")


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """``(start, end)`` of each sentence of ``text``, in order, stripped of surrounding white
    space; empty for a text of white space only."""
    spans: list[tuple[int, int]] = []
    start = 0
    for found in _BREAK.finditer(text):
        closers = len(found.group(0)) - len(found.group(0).lstrip("\"')]"))
        _add(text, start, found.start() + closers, spans)
        start = found.end()
    _add(text, start, len(text), spans)
    return spans


def _add(text: str, start: int, end: int, spans: list[tuple[int, int]]) -> None:
    piece = text[start:end]
    if piece.strip():
        lead = len(piece) - len(piece.lstrip())
        spans.append((start + lead, start + len(piece.rstrip())))
