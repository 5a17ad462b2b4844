"""The mapping language of ``--map KEY=PATH``: which keys there are, how a path
is read out of a JSON record, and each source's defaults (:class:`Spec`).

A path is dotted (``inputs.query``); ``a|b`` tries ``a`` then ``b``; ``"text"``
in double quotes is a constant; a path may run into a JSON-encoded string; a
key that holds dots (``input.value``) is found as written. The keys are
described in docs/trace-sources.md. Errors: :class:`InvalidTraceSource`
naming ``--map`` and the key.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from annotation.traces.base import MISSING, InvalidTraceSource, Loc, Node, is_nan

MAPPING_KEYS = (
    "question",
    "answer",
    "system",
    "query_id",
    "chunk_id",
    "chunk_text",
    "score",
    "documents",
    "retriever",
    "reranker",
)


@dataclass(frozen=True)
class FieldPath:
    """Alternatives tried in order: ("path", parts, text) or ("const", value, text)."""

    text: str
    alternatives: tuple[tuple[str, Any, str], ...]


def field_path(text: str) -> FieldPath:
    """``a.b|"constant"|c`` as its alternatives."""
    alternatives: list[tuple[str, Any, str]] = []
    for part in text.split("|"):
        part = part.strip()
        if len(part) >= 2 and part.startswith('"') and part.endswith('"'):
            alternatives.append(("const", part[1:-1], part))
        elif part:
            alternatives.append(("path", tuple(part.split(".")), part))
    return FieldPath(text, tuple(alternatives))


@dataclass
class Spec:
    """A source's default paths and its way to reach a node's documents:
    ``docs(node, role, documents path)`` gives (document, where it is) pairs."""

    question: str
    answer: str
    system: str
    system_fallback: str
    chunk_id: str
    chunk_text: str
    score: str
    documents: str | None
    docs: Callable[[Node, str, FieldPath | None], list[tuple[Any, Loc]]]


def parse_mapping(items: Iterable[str] | Mapping[str, str] | None) -> dict[str, str]:
    """``["question=inputs.query", ...]`` (the CLI's ``--map``) or a dict, checked."""
    if items is None:
        return {}
    pairs: list[tuple[str, str]] = []
    if isinstance(items, Mapping):
        pairs = [(str(k), str(v)) for k, v in items.items()]
    else:
        for item in items:
            key, sep, value = str(item).partition("=")
            if not sep:
                raise InvalidTraceSource(
                    "--map", None, None, f"{item!r}: expected KEY=PATH, e.g. question=inputs.query"
                )
            pairs.append((key.strip(), value.strip()))
    mapping: dict[str, str] = {}
    for key, value in pairs:
        if key not in MAPPING_KEYS:
            raise InvalidTraceSource(
                "--map", None, key, f"unknown key; expected one of {', '.join(MAPPING_KEYS)}"
            )
        if not value or not field_path(value).alternatives:
            raise InvalidTraceSource("--map", None, key, "empty; expected a dotted path, e.g. inputs.query")
        mapping[key] = value
    return mapping


def mapped_names(mapping: dict[str, str], key: str) -> set[str] | None:
    """The comma-separated names of ``retriever`` or ``reranker``; None when not mapped."""
    if key not in mapping:
        return None
    return {name.strip() for name in mapping[key].split(",") if name.strip()}


def decode(value: Any) -> Any:
    """A JSON-encoded object or list inside a string (Langfuse blob export, OTLP
    metadata), decoded; anything else as it is."""
    if isinstance(value, str):
        stripped = value.lstrip()
        if stripped[:1] in ("{", "["):
            try:
                return json.loads(value)
            except ValueError:
                return value
    return value


def lookup(obj: Any, parts: tuple[str, ...]) -> Any:
    """The value at a dotted path (MISSING if none): at each level the longest
    key that matches (so ``input.value`` is found flat or nested), list indexes
    by number, and JSON-encoded strings entered when the path goes on."""
    if not parts:
        return obj
    if isinstance(obj, str):
        obj = decode(obj)
        if isinstance(obj, str):
            return MISSING
    if isinstance(obj, dict):
        for n in range(len(parts), 0, -1):
            key = parts[0] if n == 1 else ".".join(parts[:n])
            if key in obj:
                found = lookup(obj[key], parts[n:])
                if found is not MISSING:
                    return found
        return MISSING
    if isinstance(obj, list) and parts[0].isdigit():
        index = int(parts[0])
        return lookup(obj[index], parts[1:]) if index < len(obj) else MISSING
    return MISSING


def first_of(obj: Any, path: FieldPath) -> tuple[Any, str]:
    """(value, the alternative that gave it) of the first alternative present and
    not null; (MISSING, the whole path) when there is none."""
    for kind, spec, text in path.alternatives:
        if kind == "const":
            return spec, text
        value = lookup(obj, spec)
        if value is not MISSING and value is not None and not is_nan(value):
            return value, text
    return MISSING, path.text
