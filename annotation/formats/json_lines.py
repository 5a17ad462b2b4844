"""Strict JSON lines (RFC 8259): :func:`parse_json_line`, the one parser every JSONL reader
of the family shares (rankings, corpus, queries, traces, BEIR). What Python's json module takes
but JSON is not (NaN, Infinity, a number beyond a double, a key twice in one object, a lone
surrogate) is refused, naming the line and the field.
"""

from __future__ import annotations

import json
import math
import os
import re
from typing import Any

from annotation.formats.textio import clip_text, field_label
from annotation.model import FormatError

__all__ = ["parse_json_line"]


class _NotJson(ValueError):
    """What Python's json module takes but JSON is not (RFC 8259): NaN and
    Infinity, a number beyond a double, a key given twice in one object."""

    def __init__(self, field_: str | None, message: str) -> None:
        super().__init__(message)
        self.field, self.message = field_, message


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        for key, _value in pairs:
            if key in seen:
                raise _NotJson(field_label(key), "given twice in one object; expected each key once")
            seen.add(key)
    return obj


def _no_constant(name: str) -> None:
    raise _NotJson(None, f"{name} is not JSON; expected a number, a string or null")


def _finite(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise _NotJson(
            None, f"the number {clip_text(text)} is beyond what a double holds; expected a finite number"
        )
    return value


# a \uD800-\uDFFF escape: JSON can spell a lone surrogate, which no UTF-8 text can hold
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


def _lone_surrogate(value: Any, where: str) -> tuple[str, str] | None:
    """(field, the surrogate) of the first string in a parsed JSON value that UTF-8 cannot encode."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:
            return where, value[exc.start]
        return None
    if isinstance(value, dict):
        for key, item in value.items():
            inner = f"{where}.{field_label(key)}" if where else field_label(key)
            found = _lone_surrogate(key, f"{inner} (the key)") or _lone_surrogate(item, inner)
            if found:
                return found
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found = _lone_surrogate(item, f"{where}[{index}]")
            if found:
                return found
    return None


def parse_json_line(line: str, path: str | os.PathLike[str], number: int, error: type[FormatError]) -> Any:
    """One JSONL line parsed, or the format's error naming the line (and the
    field, where one is to blame). Strict JSON: NaN, Infinity, numbers beyond
    a double, a key twice in one object and lone surrogates are refused."""
    try:
        obj = json.loads(
            line, object_pairs_hook=_unique_keys, parse_constant=_no_constant, parse_float=_finite
        )
    except json.JSONDecodeError as exc:
        raise error(path, number, None, f"not valid JSON ({exc.msg}); expected one object per line") from None
    except _NotJson as exc:
        raise error(path, number, exc.field, exc.message) from None
    except ValueError:  # int() refuses more than 4300 digits
        raise error(
            path, number, None, "a number with thousands of digits; expected one object per line"
        ) from None
    except RecursionError:
        raise error(path, number, None, "JSON nested too deeply; expected one object per line") from None
    if _SURROGATE_ESCAPE.search(line):
        try:
            found = _lone_surrogate(obj, "")
        except RecursionError:
            raise error(path, number, None, "JSON nested too deeply; expected one object per line") from None
        if found:
            field_, char = found
            raise error(
                path,
                number,
                clip_text(field_) or None,
                f"holds the lone surrogate U+{ord(char):04X}; expected text that UTF-8 can encode",
            )
    return obj
