"""The id rule's characters: what no id (of a query, a document or chunk, a trace, a run's tag) may
hold, whichever reader reads it: whitespace of any kind (``str.isspace``: ASCII, the Unicode
spaces, line and paragraph separators) and the control and format characters (Unicode categories
Cc and Cf: ESC, DEL, the C1 controls, bidi overrides such as U+202E, zero-width spaces and joiners,
U+FEFF). Such a character splits a TREC line, forges a row of a printed table or hides what an id
says. The readers refuse it (:func:`annotation.formats.textio.check_id`); the text outputs show it
escaped (:func:`annotation.render.printable`). Standard library only: the CLIs' start-up loads it.

The ranges are Python 3.11's (Unicode 14.0); tests/test_formats.py checks them against
``str.isspace`` and ``unicodedata.category`` over every code point.
"""

from __future__ import annotations

import re

__all__ = ["ID_FORBIDDEN_RANGES", "ID_FORBIDDEN", "ID_FORBIDDEN_RE2"]

ID_FORBIDDEN_RANGES: tuple[tuple[int, int], ...] = (
    (0x00, 0x20), (0x7F, 0xA0), (0xAD, 0xAD), (0x600, 0x605), (0x61C, 0x61C), (0x6DD, 0x6DD),
    (0x70F, 0x70F), (0x890, 0x891), (0x8E2, 0x8E2), (0x1680, 0x1680), (0x180E, 0x180E),
    (0x2000, 0x200F), (0x2028, 0x202F), (0x205F, 0x2064), (0x2066, 0x206F), (0x3000, 0x3000),
    (0xFEFF, 0xFEFF), (0xFFF9, 0xFFFB), (0x110BD, 0x110BD), (0x110CD, 0x110CD),
    (0x13430, 0x13438), (0x1BCA0, 0x1BCA3), (0x1D173, 0x1D17A), (0xE0001, 0xE0001),
    (0xE0020, 0xE007F),
)  # fmt: skip
ID_FORBIDDEN = re.compile("[" + "".join(f"\\U{lo:08x}-\\U{hi:08x}" for lo, hi in ID_FORBIDDEN_RANGES) + "]")
# the same class in RE2's syntax (Arrow's compute functions)
ID_FORBIDDEN_RE2 = "[" + "".join(f"\\x{{{lo:x}}}-\\x{{{hi:x}}}" for lo, hi in ID_FORBIDDEN_RANGES) + "]"
