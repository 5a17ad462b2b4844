"""The record files beside the rankings: a corpus (JSON lines, or one id per line), queries
(JSON lines or TSV) and traces (JSON lines), and the text keys that find two chunks with the same
text. Strict as every reader of the family: bad input raises a
:class:`~annotation.model.FormatError` subclass naming the file, the line and the field.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Mapping
from typing import Any

from annotation.formats.json_lines import parse_json_line
from annotation.formats.textio import (
    ASCII_SPACE,
    INT64_RANGE,
    check_id,
    check_text,
    check_text_size,
    content_lines,
    has_space,
    limits,
    shown_value,
)
from annotation.model import InvalidCorpus, InvalidQueries, InvalidTraces

__all__ = [
    "read_corpus",
    "read_queries",
    "read_traces",
    "read_corpus_ids",
    "text_key",
    "shared_text_keys",
    "read_text_keys",
]


def read_corpus(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """Chunks of a corpus, JSONL ``{"id": str, "text": str, "source"?: str, ...}``:
    each a dict, in file order; ids unique, texts non-empty strings."""
    chunks: list[dict[str, Any]] = []
    seen: dict[str, int] = {}
    text_limit = limits().text_bytes
    for number, line in content_lines(path, InvalidCorpus):
        obj = parse_json_line(line, path, number, InvalidCorpus)
        if not isinstance(obj, dict) or not isinstance(obj.get("id"), str) or not obj["id"]:
            raise InvalidCorpus(path, number, "id", 'expected {"id": "<non-empty string>", "text": ...}')
        if has_space(obj["id"]):
            raise InvalidCorpus(
                path,
                number,
                "id",
                f"{shown_value(obj['id'])} holds whitespace; expected an id without spaces",
            )
        if not isinstance(obj.get("text"), str) or not obj["text"].strip():
            raise InvalidCorpus(
                path, number, "text", "missing or empty; expected the chunk's text as a string"
            )
        if "source" in obj and not isinstance(obj["source"], str):
            raise InvalidCorpus(path, number, "source", "expected a string")
        _check_offsets(obj, path, number)
        for key in ("id", "text"):
            check_text(obj[key], path, number, key, InvalidCorpus)
        check_id(obj["id"], path, number, "id", InvalidCorpus)
        check_text_size(obj["text"], path, number, "text", InvalidCorpus, text_limit)
        if obj["id"] in seen:
            raise InvalidCorpus(
                path,
                number,
                "id",
                f"{shown_value(obj['id'])} already on line {seen[obj['id']]}; expected each id once",
            )
        seen[obj["id"]] = number
        chunks.append(obj)
    if not chunks:
        raise InvalidCorpus(path, None, None, "no chunks; expected one JSON object per line")
    return chunks


def _check_offsets(obj: dict[str, Any], path: str | os.PathLike[str], number: int) -> None:
    """Where a chunk comes from (#44): ``doc``, ``start`` and ``end`` all three or none; a
    non-empty document id, offsets whole numbers >= 0, end > start (end exclusive)."""
    given = [key for key in ("doc", "start", "end") if key in obj]
    if not given:
        return
    if len(given) < 3:
        missing = next(key for key in ("doc", "start", "end") if key not in obj)
        raise InvalidCorpus(
            path, number, missing, "missing; a chunk's origin is doc, start and end, all three"
        )
    if not isinstance(obj["doc"], str) or not obj["doc"]:
        raise InvalidCorpus(path, number, "doc", "expected the document's id as a non-empty string")
    check_text(obj["doc"], path, number, "doc", InvalidCorpus)
    check_id(obj["doc"], path, number, "doc", InvalidCorpus)
    for key in ("start", "end"):
        value = obj[key]
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= INT64_RANGE[1]:
            raise InvalidCorpus(
                path,
                number,
                key,
                f"{json.dumps(value)[:40]}; expected a character offset (a whole number >= 0)",
            )
    if obj["end"] <= obj["start"]:
        raise InvalidCorpus(
            path, number, "end", f"{obj['end']} is not after start {obj['start']}; expected end > start"
        )
    if obj["end"] - obj["start"] != len(obj["text"]):
        raise InvalidCorpus(
            path,
            number,
            "end",
            f"end - start is {obj['end'] - obj['start']}, the text has {len(obj['text'])} characters; "
            "expected the offsets of the chunk's own text",
        )


def read_queries(path: str | os.PathLike[str]) -> dict[str, str]:
    """Query texts: JSONL ``{"id": str, "text": str}`` (.jsonl) or TSV ``id<TAB>text``."""
    queries: dict[str, str] = {}
    seen: dict[str, int] = {}
    text_limit = limits().text_bytes
    jsonl = str(path).lower().endswith(".jsonl")
    for number, line in content_lines(path, InvalidQueries):
        if jsonl:
            obj = parse_json_line(line, path, number, InvalidQueries)
            if not isinstance(obj, dict) or not isinstance(obj.get("id"), str) or not obj["id"]:
                raise InvalidQueries(path, number, "id", 'expected {"id": "<non-empty string>", "text": ...}')
            qid, query = obj["id"], obj.get("text")
        else:
            qid, tab, query = line.partition("\t")
            if not tab:
                raise InvalidQueries(path, number, None, "no TAB; expected 'id<TAB>text'")
            if "\t" in query:
                raise InvalidQueries(
                    path,
                    number,
                    None,
                    f"expected 2 TAB-separated columns (id, text), got {line.count(chr(9)) + 1}",
                )
        if not isinstance(query, str) or not query.strip():
            raise InvalidQueries(path, number, "text", "missing or empty; expected the query text")
        if not qid or has_space(qid):
            raise InvalidQueries(
                path, number, "id", f"{shown_value(qid)}: expected a non-empty id without spaces"
            )
        for value, name in ((qid, "id"), (query, "text")):
            check_text(value, path, number, name, InvalidQueries)
        check_id(qid, path, number, "id", InvalidQueries)
        check_text_size(query, path, number, "text", InvalidQueries, text_limit)
        if qid in seen:
            raise InvalidQueries(
                path, number, "id", f"{shown_value(qid)} already on line {seen[qid]}; expected each id once"
            )
        seen[qid] = number
        queries[qid] = query
    if not queries:
        raise InvalidQueries(path, None, None, "no queries; expected one per line")
    return queries


_TRACE_FIELDS = ("id", "query_id", "system", "question", "contexts", "answer")


def read_traces(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """RAG traces, JSONL ``{"id", "query_id", "system", "question", "contexts":
    [chunk ids or texts], "answer"}``: the question a system was asked, the
    contexts it was shown, the answer it gave."""
    traces: list[dict[str, Any]] = []
    seen: dict[str, int] = {}
    text_limit = limits().text_bytes
    for number, line in content_lines(path, InvalidTraces):
        obj = parse_json_line(line, path, number, InvalidTraces)
        if not isinstance(obj, dict):
            raise InvalidTraces(path, number, None, "expected an object {" + ", ".join(_TRACE_FIELDS) + "}")
        for key in _TRACE_FIELDS:
            if key not in obj:
                raise InvalidTraces(path, number, key, "missing; expected it in every trace")
        for key in ("id", "query_id", "system", "question", "answer"):
            value = obj[key]
            if not isinstance(value, str) or not value.strip():
                raise InvalidTraces(
                    path, number, key, f"expected a non-empty string, got {json.dumps(value)[:40]}"
                )
            check_text(value, path, number, key, InvalidTraces)
            check_text_size(value, path, number, key, InvalidTraces, text_limit)
            if key in ("id", "query_id"):
                check_id(value, path, number, key, InvalidTraces)
        contexts = obj["contexts"]
        if not isinstance(contexts, list) or not all(isinstance(c, str) and c.strip() for c in contexts):
            raise InvalidTraces(
                path, number, "contexts", "expected a list of chunk ids or texts (non-empty strings)"
            )
        for position, context in enumerate(contexts):
            check_text(context, path, number, f"contexts[{position}]", InvalidTraces)
            check_text_size(context, path, number, f"contexts[{position}]", InvalidTraces, text_limit)
        if obj["id"] in seen:
            raise InvalidTraces(
                path,
                number,
                "id",
                f"{shown_value(obj['id'])} already on line {seen[obj['id']]}; expected each trace once",
            )
        seen[obj["id"]] = number
        traces.append({key: obj[key] for key in _TRACE_FIELDS})
    if not traces:
        raise InvalidTraces(path, None, None, "no traces; expected one JSON object per line")
    return traces


def read_corpus_ids(path: str | os.PathLike[str]) -> list[str]:
    """Document ids of a corpus: JSONL ``{"id": ..., "text": ...}`` or one id per line."""
    ids: list[str] = []
    seen: dict[str, int] = {}
    jsonl = str(path).lower().endswith(".jsonl")
    # the corpus an audit counts: exempt from the limits, as runs are (only ids are kept)
    for number, line in content_lines(path, InvalidCorpus, limited=False):
        if jsonl:
            obj = parse_json_line(line, path, number, InvalidCorpus)
            if not isinstance(obj, dict) or not isinstance(obj.get("id"), str) or not obj["id"]:
                raise InvalidCorpus(path, number, "id", 'expected {"id": "<non-empty string>", ...}')
            doc = obj["id"]
            check_text(doc, path, number, "id", InvalidCorpus)
        else:
            doc = line.strip(ASCII_SPACE)
        check_id(doc, path, number, "id", InvalidCorpus)
        if doc in seen:
            raise InvalidCorpus(
                path, number, "id", f"{shown_value(doc)} already on line {seen[doc]}; expected each id once"
            )
        seen[doc] = number
        ids.append(doc)
    return ids


def text_key(text: str) -> str:
    """The key two chunks with the same text share: a BLAKE2b (128-bit) hex digest of the text
    normalised by collapsing every run of whitespace (``str.split``'s, Unicode) to one space,
    stripping the ends, and case folding (``str.casefold``)."""
    normal = " ".join(text.split()).casefold()
    import hashlib  # here, not at import: OpenSSL's load is 3 ms of every start-up (#42)

    return hashlib.blake2b(normal.encode("utf-8"), digest_size=16).hexdigest()


def shared_text_keys(texts: Mapping[str, str | None]) -> dict[str, str] | None:
    """Per id whose text another id shares, its :func:`text_key` (only those can be duplicates by
    text); None when no text is known, ``{}`` when no two ids share one."""
    keys = {doc: text_key(text) for doc, text in texts.items() if text}
    if not keys:
        return None
    counts = Counter(keys.values())
    return {doc: key for doc, key in keys.items() if counts[key] > 1}


def read_text_keys(path: str | os.PathLike[str]) -> dict[str, str] | None:
    """Per document id of a JSONL corpus, the :func:`text_key` of its ``text`` (a line without a
    string text gets none); None when no text is known (one id per line, or no line has a text):
    duplicates are then found by id only. Only the keys are kept, never the texts."""
    if not str(path).lower().endswith(".jsonl"):
        return None
    keys: dict[str, str] = {}
    for number, line in content_lines(path, InvalidCorpus, limited=False):
        obj = parse_json_line(line, path, number, InvalidCorpus)
        if isinstance(obj, dict) and isinstance(obj.get("id"), str) and isinstance(obj.get("text"), str):
            keys[obj["id"]] = text_key(obj["text"])
    return keys or None
