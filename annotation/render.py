"""The one home of how a figure, an undefined value and a data string are shown.

Every face (the three CLIs, the Streamlit pages, the review's text, Markdown
and HTML reports) formats through these, so a wording has one home:

- **Undefined** is spelled once per medium (principle 2: never 0):
  ``undef`` in the CLIs' aligned text tables (medium ``"table"``), ``undefined``
  wherever it is read as prose: the pages, findings, the review's reports
  (medium ``"prose"``), and ``null`` in JSON (None).
- **A figure with its denominator**: ``0.500 = 4/8``.
- **A data string** (a name, an id, a run name, a note, a value quoted in an
  error) is passed through :func:`md` before any Streamlit call that renders
  Markdown (``st.markdown``, ``st.table`` cells, ``st.caption``, ``st.error``,
  ``st.warning``, ``st.metric`` labels, sidebar text): every ASCII punctuation
  mark is backslash-escaped (CommonMark lets any of them be escaped), so a
  link, an image, a Streamlit directive (``:red[...]``), LaTeX (``$``), HTML
  or a table pipe in the data stays text; line breaks become spaces, so a
  value cannot start a block of its own; a bare URL or e-mail address gets an invisible
  word joiner (U+2060) after its scheme, ``www`` or ``@``, since GitHub-flavoured Markdown
  links those in the rendered text whatever was escaped.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from typing import Literal

from annotation.ids import ID_FORBIDDEN_RANGES

Medium = Literal["table", "prose"]

UNDEFINED: dict[str, str] = {"table": "undef", "prose": "undefined"}

_PUNCTUATION = re.compile(r"([!-/:-@\[-`{-~])")
_BREAKS = re.compile(r"[\r\n\u0085\u2028\u2029]+")
# GitHub-flavoured Markdown turns a bare URL (``http://``, ``www.``) or e-mail address in the
# *rendered* text into a link, escapes or not; an invisible word joiner after the scheme, the
# ``www`` or the ``@`` breaks the pattern and leaves the text as it reads
WORD_JOINER = "\u2060"
_AUTOLINKED = re.compile(r"(?i)(\b(?:https?|ftp|mailto|xmpp)(?=:)|\bwww(?=\.)|@)")


# the same but the space, which a text output keeps
_UNPRINTABLE = re.compile(
    "["
    + "".join(f"\\U{lo:08x}-\\U{min(hi, 0x1F) if lo == 0 else hi:08x}" for lo, hi in ID_FORBIDDEN_RANGES)
    + "]"
)


def printable(value: object) -> str:
    """A data string (an id, a name) as a text output shows it: each control or format character
    and each whitespace character but the space written as its Python escape (``\\n``,
    ``\\x1b``, ``\\u202e``), so an id stored before the id rule cannot break a line, forge a row
    of a table or reorder what a terminal shows; anything else as it is."""
    text = str(value)
    if _UNPRINTABLE.search(text) is None:
        return text
    return _UNPRINTABLE.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), text)


def is_undefined(value: float | None) -> bool:
    """None or NaN: a value that is not defined (never shown as 0)."""
    return value is None or (isinstance(value, float) and math.isnan(value))


def num(value: float | None, digits: int = 3, medium: Medium = "table") -> str:
    """``0.625``, or the medium's spelling of undefined for None and NaN."""
    if is_undefined(value):
        return UNDEFINED[medium]
    return f"{value:.{digits}f}"


def decisive(value: float | None, *bars: float, digits: int = 3, medium: Medium = "table") -> str:
    """The figure with enough digits that its comparison with each bar reads right: 0.5996 against
    a bar of 0.6 prints ``0.5996``, not ``0.600`` (a verdict compares the unrounded value); a figure
    equal to its bar prints as the bar does (0.6875 against 0.6875, not ``0.688``)."""
    if value is None or is_undefined(value):  # None narrowed for the type checker too
        return UNDEFINED[medium]

    def side(x: float, bar: float) -> int:
        return (x > bar) - (x < bar)

    text = f"{value:.{digits}f}"
    while digits < 12 and any(side(float(text), bar) != side(value, bar) for bar in bars):
        digits += 1
        text = f"{value:.{digits}f}"
    return text


def signed(value: float | None, digits: int = 3, medium: Medium = "table") -> str:
    """A difference with its sign (``+0.125``), or undefined."""
    if is_undefined(value):
        return UNDEFINED[medium]
    return f"{value:+.{digits}f}"


def interval(
    pair: tuple[float, float] | list[float] | None, digits: int = 3, medium: Medium = "table"
) -> str:
    """``[0.286, 1.000]``, or undefined when there is no interval."""
    if not pair or is_undefined(pair[0]) or is_undefined(pair[1]):
        return UNDEFINED[medium]
    return f"[{pair[0]:.{digits}f}, {pair[1]:.{digits}f}]"


def figure(
    value: float | None, numerator: int, denominator: int, digits: int = 3, medium: Medium = "table"
) -> str:
    """A share with what it is a share of: ``0.500 = 4/8`` (undefined when the denominator is 0)."""
    if is_undefined(value) or denominator == 0:
        return f"{UNDEFINED[medium]} ({numerator}/{denominator})"
    return f"{value:.{digits}f} = {numerator}/{denominator}"


def over(n: int, undefined: int) -> str:
    """Which queries a mean is over: ``over 3 of 4 queries, 1 undefined``."""
    return f"over {n - undefined} of {n} queries, {undefined} undefined"


def counted(n: int, one: str, many: str) -> str:
    """``1 query``, ``3 queries``: a count with its noun, singular for one."""
    return f"{n:,} {one if n == 1 else many}"


def md(value: object) -> str:
    """A data string made inert for Streamlit's Markdown (see the module docstring)."""
    text = _AUTOLINKED.sub(rf"\1{WORD_JOINER}", _BREAKS.sub(" ", str(value)))
    return _PUNCTUATION.sub(r"\\\1", text)


def md_list(values: Iterable[object], sep: str = ", ") -> str:
    """Several data strings, each escaped, joined."""
    return sep.join(md(v) for v in values)


def align(rows: list[list[str]]) -> str:
    """A text table: the first column left-aligned, the others right-aligned, two spaces apart;
    every cell :func:`printable` (an id cannot break a row)."""
    rows = [[printable(cell) for cell in r] for r in rows]
    widths = [max(len(r[c]) for r in rows) for c in range(len(rows[0]))]
    lines = []
    for r in rows:
        cells = [r[0].ljust(widths[0])] + [cell.rjust(w) for cell, w in zip(r[1:], widths[1:])]
        lines.append("  ".join(cells).rstrip())
    return "\n".join(lines)


_ESCAPED = re.compile(r"\\([!-/:-@\[-`{-~])")


def plain(text: str) -> str:
    """What a reader sees of a string escaped by :func:`md` (the inverse on escaped text)."""
    return _ESCAPED.sub(r"\1", text).replace(WORD_JOINER, "")
