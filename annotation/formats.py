"""Read, validate and write the exchange formats: TREC qrels, TREC runs,
JSONL rankings and golden.yaml.

Every reader is strict: bad input raises a subclass of :class:`FormatError`
whose message names the file, the line and the field and says what was
expected. Nothing is coerced silently ("001" stays "001": ids are text).
Lines end at LF (CRLF is fine); TREC fields are separated by ASCII whitespace
only, as trec_eval splits them; a leading UTF-8 byte order mark is dropped.

TREC qrels   ``qid iter docid grade``, whitespace separated; grade an integer
             (negative = judged, never relevant, as in trec_eval). Lines that
             start with ``#`` are comments (trec_eval 9.0.8 accepts them).
TREC run     ``qid Q0 docid rank score tag``; anything after the tag is
             ignored, as trec_eval ignores it. The rank column must be an
             integer but is never used to order: trec_eval orders by score
             descending, ties by docid descending (bytewise).
JSONL        ``{"query_id": "q1", "ranking": ["d3", "d1", ...]}`` one object
rankings     per line, best first.
golden.yaml  ``queries: [{id, text, grades: {doc_id: grade}}]`` plus metadata
             (``grade_scale`` with the wording of each grade, ``judged_by``,
             ``shown``, ``created``).
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from annotation.columnar import fast_table
from annotation.columnar import simple_table as simple_table  # re-exported for tests
from annotation.golden import DEFAULT_GRADE_SCALE, read_golden, write_golden
from annotation.textio import (
    ASCII_SPACE,
    NUMBER_PATTERN,
    FormatError,
    InvalidCorpus,
    InvalidGolden,
    InvalidQrels,
    InvalidQueries,
    InvalidRankings,
    InvalidRun,
    InvalidTable,
    InvalidTraces,
    JudgmentLines,
    Qrels,
    Run,
    as_numpy,
    check_text,
    check_trec_id,
    clip_text,
    field_label,
    has_space,
    numbered_lines,
    parse_int,
    read_text_file,
    require_file,
    shown_value,
    split_fields,
    write_atomic,
)

__all__ = [
    "FormatError",
    "InvalidQrels",
    "InvalidRun",
    "InvalidRankings",
    "InvalidGolden",
    "InvalidCorpus",
    "InvalidQueries",
    "InvalidTraces",
    "InvalidTable",
    "Qrels",
    "Run",
    "read_qrels",
    "read_golden",
    "read_judgments",
    "read_run",
    "read_rankings",
    "read_ranked",
    "read_corpus_ids",
    "read_corpus",
    "read_queries",
    "read_traces",
    "read_csv_rows",
    "csv_numbers",
    "write_text",
    "write_qrels",
    "write_golden",
    "write_run",
    "write_rankings",
    "DEFAULT_GRADE_SCALE",
]


# ---------------------------------------------------------------- qrels


def read_qrels(path: str | os.PathLike, scale: tuple[int, int] | None = None) -> Qrels:
    """TREC qrels ``qid iter docid grade``.

    ``scale=(lo, hi)`` also refuses grades outside lo..hi (negative grades
    are always allowed: trec_eval reads them as judged, not relevant).
    """
    require_file(path, InvalidQrels)
    fast = _fast_qrels(path, scale)
    if fast is not None:
        return fast
    return _slow_qrels(path, scale)


def _slow_qrels(path: str | os.PathLike, scale: tuple[int, int] | None = None) -> Qrels:
    """Line-by-line reader: the reference, and the one that names a bad line."""
    text = read_text_file(path, InvalidQrels)
    judgments = JudgmentLines(path, InvalidQrels, "grade", "graded")
    for number, fields in split_fields(text):
        if len(fields) != 4:
            raise InvalidQrels(
                path,
                number,
                None,
                f"expected 4 columns (qid iter docid grade), got {len(fields)}",
            )
        qid, _iter, doc, raw_grade = fields
        grade = judgments.parse(raw_grade, number)
        if scale is not None and grade >= 0 and not scale[0] <= grade <= scale[1]:
            raise InvalidQrels(
                path,
                number,
                "grade",
                f"expected a grade in the scale {scale[0]}-{scale[1]} (or negative), got {grade}",
            )
        judgments.add(qid, doc, grade, number)
    grades = judgments.grades
    if not grades:
        raise InvalidQrels(
            path,
            None,
            None,
            "no judgments, only comments or blank lines; expected lines 'qid iter docid grade'",
        )
    return Qrels(grades=grades, path=str(path))


def _fast_qrels(path: str | os.PathLike, scale: tuple[int, int] | None) -> Qrels | None:
    """Columnar read of a clean qrels file; None sends it to the line reader."""
    table = fast_table(path, ["q", "i", "d", "g"], int_columns=("g",), number_columns=())
    if table is None:
        return None
    grades_col = as_numpy(table["g"])
    if scale is not None and ((grades_col >= 0) & ((grades_col < scale[0]) | (grades_col > scale[1]))).any():
        return None
    # one grade per (query, doc): identical repeats collapse, conflicts go to
    # the line reader, which names both lines
    pairs = pa.table({"q": table["q"], "d": table["d"], "g": table["g"]}).combine_chunks()
    distinct = len(pc.unique(pc.binary_join_element_wise(pairs["q"], pairs["d"], "\x00")))
    if distinct != pairs.num_rows:
        grades: dict[str, dict[str, int]] = {}
        for qid, doc, grade in zip(pairs["q"].to_pylist(), pairs["d"].to_pylist(), pairs["g"].to_pylist()):
            if grades.setdefault(qid, {}).setdefault(doc, grade) != grade:
                return None
        return Qrels(grades=grades, path=str(path))
    return Qrels(table=pairs, path=str(path))


def write_qrels(qrels: Qrels, path: str | os.PathLike) -> None:
    """TREC qrels, queries and documents in their stored order, iter 0."""
    lines = []
    for qid, docs in qrels.grades.items():
        check_trec_id(qid, path, "qid", InvalidQrels)
        for doc, grade in docs.items():
            check_trec_id(doc, path, "docid", InvalidQrels)
            lines.append(f"{qid} 0 {doc} {int(grade)}\n")
    write_atomic(path, "".join(lines))


def read_judgments(path: str | os.PathLike) -> Qrels:
    """golden.yaml (by extension .yaml/.yml) or TREC qrels."""
    if str(path).lower().endswith((".yaml", ".yml")):
        return read_golden(path)
    return read_qrels(path)


# ---------------------------------------------------------------- runs

_RUN_COLUMNS = ["q", "q0", "d", "r", "s", "t"]


def read_run(path: str | os.PathLike) -> Run:
    """TREC run ``qid Q0 docid rank score tag``.

    A fast columnar reader (Arrow) handles clean files; anything it cannot
    read is re-read line by line, which names the first bad line exactly.
    """
    require_file(path, InvalidRun)
    table = _fast_run(path)
    if table is None:
        return _slow_run(path)
    return table


def _fast_run(path: str | os.PathLike) -> Run | None:
    table = fast_table(path, _RUN_COLUMNS, int_columns=("r",), number_columns=("s",))
    if table is None:
        return None
    out = pa.table({"q": table["q"], "d": table["d"], "s": table["s"]})
    if "t" in table.column_names:
        tag = table["t"][0].as_py()
    else:  # the lean path keeps the tag as metadata
        tag = table.schema.metadata[b"tag"].decode("utf-8")
    return Run(table=out, name=tag, path=str(path))


def _slow_run(path: str | os.PathLike) -> Run:
    """Line-by-line reader: the reference, and the one that names a bad line."""
    text = read_text_file(path, InvalidRun)
    q: list[str] = []
    d: list[str] = []
    s: list[float] = []
    tag = None
    for number, fields in split_fields(text):
        if len(fields) < 6:
            raise InvalidRun(
                path,
                number,
                None,
                f"expected 6 columns (qid Q0 docid rank score tag), got {len(fields)}",
            )
        qid, _q0, doc, rank, raw_score, run_tag = fields[:6]
        if parse_int(rank) is None:
            raise InvalidRun(path, number, "rank", f"expected an integer, got {shown_value(rank)}")
        if not NUMBER_PATTERN.fullmatch(raw_score):
            raise InvalidRun(path, number, "score", f"expected a number, got {shown_value(raw_score)}")
        score = float(raw_score)
        if math.isnan(score):
            raise InvalidRun(
                path, number, "score", f"expected a number, got {raw_score!r} (NaN cannot be ordered)"
            )
        q.append(qid)
        d.append(doc)
        s.append(score)
        tag = tag or run_tag
    if not q:
        raise InvalidRun(
            path,
            None,
            None,
            "no results, only comments or blank lines; expected lines 'qid Q0 docid rank score tag'",
        )
    table = pa.table(
        {"q": pa.array(q, pa.string()), "d": pa.array(d, pa.string()), "s": pa.array(s, pa.float64())}
    )
    return Run(table=table, name=tag or "run", path=str(path))


def write_run(run: Run, path: str | os.PathLike, tag: str | None = None) -> None:
    """TREC run in trec_eval order, ranks 1..n per query; scores written with repr().

    Every row keeps its own score, so reading the file back gives the same
    order, duplicates included.
    """
    name = tag or run.name
    check_trec_id(name, path, "tag", InvalidRun)
    lines = []
    for qid, rows in run.ordered_rows().items():
        check_trec_id(qid, path, "qid", InvalidRun)
        for rank, (doc, score) in enumerate(rows, start=1):
            check_trec_id(doc, path, "docid", InvalidRun)
            if math.isnan(score):
                raise InvalidRun(
                    path, None, "score", f"query {qid!r} document {doc!r}: expected a number, got NaN"
                )
            lines.append(f"{qid} Q0 {doc} {rank} {score!r} {name}\n")
    write_atomic(path, "".join(lines))


# ---------------------------------------------------------------- JSONL rankings


def _content_lines(path: str | os.PathLike, error: type[FormatError]) -> Iterator[tuple[int, str]]:
    """(line number, line) of every non-blank line of a text file; the file is
    checked first (exists, regular, UTF-8, not empty, no NUL or lone CR)."""
    require_file(path, error)
    for number, line in numbered_lines(read_text_file(path, error)):
        if line.strip(ASCII_SPACE):
            yield number, line


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


def parse_json_line(line: str, path: str | os.PathLike, number: int, error: type[FormatError]) -> Any:
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


def read_rankings(path: str | os.PathLike, name: str | None = None) -> Run:
    """JSONL ``{"query_id": str, "ranking": [docid, ...]}``, best first."""
    rankings: dict[str, list[str]] = {}
    seen_line: dict[str, int] = {}
    for number, line in _content_lines(path, InvalidRankings):
        obj = parse_json_line(line, path, number, InvalidRankings)
        if not isinstance(obj, dict):
            raise InvalidRankings(
                path, number, None, 'expected an object {"query_id": ..., "ranking": [...]}'
            )
        if "query_id" not in obj:
            raise InvalidRankings(path, number, "query_id", "missing; expected the query id as a string")
        qid = obj["query_id"]
        if not isinstance(qid, str) or not qid:
            raise InvalidRankings(
                path,
                number,
                "query_id",
                f'expected a non-empty string (ids are text: write "1", not 1), got {clip_text(json.dumps(qid))}',
            )
        check_text(qid, path, number, "query_id", InvalidRankings)
        if "ranking" not in obj:
            raise InvalidRankings(
                path, number, "ranking", "missing; expected a list of document ids, best first"
            )
        ranking = obj["ranking"]
        if not isinstance(ranking, list):
            raise InvalidRankings(
                path, number, "ranking", f"expected a list of document ids, got {_json_kind(ranking)}"
            )
        for pos, doc in enumerate(ranking):
            if not isinstance(doc, str) or not doc or has_space(doc):
                raise InvalidRankings(
                    path,
                    number,
                    f"ranking[{pos}]",
                    f"expected a document id (a non-empty string without spaces), got {clip_text(json.dumps(doc))}",
                )
            check_text(doc, path, number, f"ranking[{pos}]", InvalidRankings)
        if qid in rankings:
            raise InvalidRankings(
                path,
                number,
                "query_id",
                f"{shown_value(qid)} already given on line {seen_line[qid]}; expected each query once",
            )
        rankings[qid] = ranking
        seen_line[qid] = number
    if not rankings:
        raise InvalidRankings(
            path,
            None,
            None,
            'no rankings, only blank lines; expected {"query_id": ..., "ranking": [...]} lines',
        )
    run = Run.from_rankings(rankings, name=name or Path(path).stem)
    run.path = str(path)
    return run


def _json_kind(value: Any) -> str:
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, bool):
        return json.dumps(value)
    if isinstance(value, (int, float)):
        return "a number"
    return "null" if value is None else type(value).__name__


def write_rankings(run: Run, path: str | os.PathLike) -> None:
    """JSONL rankings in trec_eval order, one query per line."""
    lines = []
    for qid, docs in run.rankings().items():
        if not isinstance(qid, str) or not qid:
            raise InvalidRankings(path, None, "query_id", f"expected a non-empty string, got {qid!r}")
        for doc in docs:
            check_trec_id(doc, path, "docid", InvalidRankings)
        lines.append(json.dumps({"query_id": qid, "ranking": docs}) + "\n")
    write_atomic(path, "".join(lines))


def read_ranked(path: str | os.PathLike) -> Run:
    """A TREC run, or JSONL rankings when the name ends in .jsonl."""
    if str(path).lower().endswith(".jsonl"):
        return read_rankings(path)
    return read_run(path)


# ---------------------------------------------------------------- corpus


def read_corpus(path: str | os.PathLike) -> list[dict[str, Any]]:
    """Chunks of a corpus, JSONL ``{"id": str, "text": str, "source"?: str, ...}``:
    each a dict, in file order; ids unique, texts non-empty strings."""
    chunks: list[dict[str, Any]] = []
    seen: dict[str, int] = {}
    for number, line in _content_lines(path, InvalidCorpus):
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


def read_queries(path: str | os.PathLike) -> dict[str, str]:
    """Query texts: JSONL ``{"id": str, "text": str}`` (.jsonl) or TSV ``id<TAB>text``."""
    queries: dict[str, str] = {}
    seen: dict[str, int] = {}
    jsonl = str(path).lower().endswith(".jsonl")
    for number, line in _content_lines(path, InvalidQueries):
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


def read_traces(path: str | os.PathLike) -> list[dict[str, Any]]:
    """RAG traces, JSONL ``{"id", "query_id", "system", "question", "contexts":
    [chunk ids or texts], "answer"}``: the question a system was asked, the
    contexts it was shown, the answer it gave."""
    traces: list[dict[str, Any]] = []
    seen: dict[str, int] = {}
    for number, line in _content_lines(path, InvalidTraces):
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
        contexts = obj["contexts"]
        if not isinstance(contexts, list) or not all(isinstance(c, str) and c.strip() for c in contexts):
            raise InvalidTraces(
                path, number, "contexts", "expected a list of chunk ids or texts (non-empty strings)"
            )
        for position, context in enumerate(contexts):
            check_text(context, path, number, f"contexts[{position}]", InvalidTraces)
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


def read_corpus_ids(path: str | os.PathLike) -> list[str]:
    """Document ids of a corpus: JSONL ``{"id": ..., "text": ...}`` or one id per line."""
    ids: list[str] = []
    seen: dict[str, int] = {}
    jsonl = str(path).lower().endswith(".jsonl")
    for number, line in _content_lines(path, InvalidCorpus):
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


# ---------------------------------------------------------------- CSV tables (agree, position, ppi)


def read_csv_rows(
    path: str | os.PathLike, required: list[str], optional: tuple[str, ...] = ()
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


def csv_numbers(path: str | os.PathLike, rows: list[tuple[int, dict[str, str]]], column: str) -> list[float]:
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


def write_text(path: str | os.PathLike, text: str) -> None:
    """Write a text file atomically (a reader never sees half of it); :class:`FormatError` naming
    the path when it cannot be written."""
    write_atomic(path, text)
