"""The record files beside the rankings: corpus, queries and traces (JSON lines, or a corpus
as one id per line, queries as TSV), and the CSV tables of ``calibration agree|position|ppi``;
and strict JSON lines (:func:`parse_json_line`), which the JSONL readers share.

Every reader is strict, as :mod:`annotation.formats` (which re-exports them) says: bad input
raises a :class:`FormatError` subclass naming the file, the line and the field.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import math
import os
import re
from collections import Counter
from collections.abc import Mapping
from typing import Any

from annotation.model import FormatError, InvalidCorpus, InvalidQueries, InvalidTable, InvalidTraces
from annotation.textio import (
    ASCII_SPACE,
    NUMBER_PATTERN,
    check_text,
    check_text_size,
    clip_text,
    content_lines,
    field_label,
    has_space,
    limits,
    read_text_file,
    require_file,
    shown_value,
)


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
        for key in ("id", "text"):
            check_text(obj[key], path, number, key, InvalidCorpus)
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


# ---------------------------------------------------------------- JSON lines


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


# ---------------------------------------------------------------- CSV tables (agree, position, ppi)


def read_csv_rows(
    path: str | os.PathLike[str], required: list[str], optional: tuple[str, ...] = ()
) -> list[tuple[int, dict[str, str]]]:
    """(line, row) of a CSV with a header; one clear line naming file, line and column otherwise.

    The bytes are checked as every reader checks them (UTF-8, no NUL, no lone
    CR; a UTF-8 byte order mark, as Excel writes, is dropped); every row has
    as many fields as the header; values are stripped; a required column
    other than ``label`` and ``choice`` may not be empty; blank lines are
    skipped; line numbers are the file's lines, a quoted field over several
    lines included. Raises :class:`InvalidTable`.
    """
    require_file(path, InvalidTable)
    text = read_text_file(path, InvalidTable)
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    expected = f"the columns {','.join(required)}" + (f"[,{','.join(optional)}]" if optional else "")
    done = 0  # the last line read so far: a row starts on the next one
    try:
        header = [h.strip() for h in next(reader, [])]
        done = reader.line_num
        missing = [c for c in required if c not in header]
        if missing:
            shown = clip_text(",".join(header)) if any(header) else "(empty)"
            raise InvalidTable(path, 1, None, f"header {shown}; expected {expected}")
        twice = next((h for i, h in enumerate(header) if h and h in header[:i]), None)
        if twice is not None:
            raise InvalidTable(
                path, 1, None, f"header names the column {twice!r} twice; expected {expected}, each once"
            )
        rows = []
        for fields in reader:
            number, done = done + 1, reader.line_num
            if not fields:  # a blank line
                continue
            if len(fields) != len(header):
                raise InvalidTable(
                    path,
                    number,
                    None,
                    f"{len(fields)} fields; expected {len(header)}, as the header {clip_text(','.join(header))} has",
                )
            row = {column: value.strip() for column, value in zip(header, fields)}
            for column in required:
                if row[column] == "" and column not in ("label", "choice"):
                    raise InvalidTable(path, number, column, "empty; expected a value")
            rows.append((number, row))
    except csv.Error as exc:
        raise InvalidTable(path, done + 1, None, f"not valid CSV ({exc}); expected {expected}") from None
    if not rows:
        raise InvalidTable(path, None, None, "no rows after the header")
    return rows


def csv_numbers(
    path: str | os.PathLike[str], rows: list[tuple[int, dict[str, str]]], column: str
) -> list[float]:
    """The column as finite numbers, written as trec_eval writes them (ASCII digits, no 1_000)."""
    out = []
    for number, row in rows:
        raw = row[column]
        value = float(raw) if NUMBER_PATTERN.fullmatch(raw) else None
        if value is None or not math.isfinite(value):
            raise InvalidTable(
                path,
                number,
                column,
                f"{shown_value(raw)} is not a finite number; expected a number such as 0, 1 or 0.5",
            )
        out.append(value)
    return out
