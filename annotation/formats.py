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
             ``shown``, ``created``, ``min_grade``); or the essay's bare list
             ``[{query, grades: {doc_id: grade}, id?}]``, where a query without
             an id is named by its text (:attr:`Qrels.notes` says so).

The TREC writers refuse an id with whitespace (:class:`UnwritableId`, saying to
give the queries ids): its line would split wrongly.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from annotation.columnar import fast_table
from annotation.columnar import simple_table as simple_table  # re-exported for tests
from annotation.golden import DEFAULT_GRADE_SCALE, read_golden, write_golden
from annotation.model import (
    FormatError,
    InvalidCorpus,
    InvalidGolden,
    InvalidQrels,
    InvalidQueries,
    InvalidRankings,
    InvalidRun,
    InvalidTable,
    InvalidTraces,
    Qrels,
    Run,
    UnwritableId,
    arrow,
    as_numpy,
)
from annotation.records import (
    csv_numbers,
    parse_json_line,
    read_corpus,
    read_corpus_ids,
    read_csv_rows,
    read_queries,
    read_text_keys,
    read_traces,
)
from annotation.textio import (
    NUMBER_PATTERN,
    JudgmentLines,
    check_file_size,
    check_text,
    check_trec_id,
    clip_text,
    content_lines,
    has_space,
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
    "UnwritableId",
    "Qrels",
    "Run",
    "read_qrels",
    "read_golden",
    "read_judgments",
    "read_run",
    "read_rankings",
    "read_ranked",
    "read_corpus_ids",
    "read_text_keys",
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


def read_qrels(path: str | os.PathLike[str], scale: tuple[int, int] | None = None) -> Qrels:
    """TREC qrels ``qid iter docid grade``.

    ``scale=(lo, hi)`` also refuses grades outside lo..hi (negative grades
    are always allowed: trec_eval reads them as judged, not relevant).
    """
    require_file(path, InvalidQrels)
    check_file_size(path, InvalidQrels)
    fast = _fast_qrels(path, scale)
    if fast is not None:
        return fast
    return _slow_qrels(path, scale)


def _slow_qrels(path: str | os.PathLike[str], scale: tuple[int, int] | None = None) -> Qrels:
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


def _fast_qrels(path: str | os.PathLike[str], scale: tuple[int, int] | None) -> Qrels | None:
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
    # the separator an array, not the scalar "\x00": a scalar would import pandas (0.25 s)
    n = pairs.num_rows
    separator = pa.Array.from_buffers(
        pa.string(), n, [None, pa.py_buffer(np.arange(n + 1, dtype=np.int32)), pa.py_buffer(b"\x00" * n)]
    )
    distinct = len(pc.unique(pc.binary_join_element_wise(pairs["q"], pairs["d"], separator)))
    if distinct != pairs.num_rows:
        grades: dict[str, dict[str, int]] = {}
        for qid, doc, grade in zip(pairs["q"].to_pylist(), pairs["d"].to_pylist(), pairs["g"].to_pylist()):
            if grades.setdefault(qid, {}).setdefault(doc, grade) != grade:
                return None
        return Qrels(grades=grades, path=str(path))
    return Qrels(table=pairs, path=str(path))


def write_qrels(qrels: Qrels, path: str | os.PathLike[str]) -> None:
    """TREC qrels, queries and documents in their stored order, iter 0."""
    lines = []
    for qid, docs in qrels.grades.items():
        check_trec_id(qid, path, "qid", InvalidQrels)
        for doc, grade in docs.items():
            check_trec_id(doc, path, "docid", InvalidQrels)
            lines.append(f"{qid} 0 {doc} {int(grade)}\n")
    write_atomic(path, "".join(lines))


def read_judgments(path: str | os.PathLike[str]) -> Qrels:
    """golden.yaml (by extension .yaml/.yml) or TREC qrels."""
    if str(path).lower().endswith((".yaml", ".yml")):
        return read_golden(path)
    return read_qrels(path)


# ---------------------------------------------------------------- runs

_RUN_COLUMNS = ["q", "q0", "d", "r", "s", "t"]


def read_run(path: str | os.PathLike[str]) -> Run:
    """TREC run ``qid Q0 docid rank score tag``.

    A fast columnar reader (Arrow) handles clean files; anything it cannot
    read is re-read line by line, which names the first bad line exactly.
    """
    require_file(path, InvalidRun)
    table = _fast_run(path)
    if table is None:
        return _slow_run(path)
    return table


def _fast_run(path: str | os.PathLike[str]) -> Run | None:
    table = fast_table(path, _RUN_COLUMNS, int_columns=("r",), number_columns=("s",))
    if table is None:
        return None
    out = pa.table({"q": table["q"], "d": table["d"], "s": table["s"]})
    if "t" in table.column_names:
        tag = table["t"][0].as_py()
    else:  # the lean path keeps the tag as metadata
        tag = table.schema.metadata[b"tag"].decode("utf-8")
    return Run(table=out, name=tag, path=str(path))


def _slow_run(path: str | os.PathLike[str]) -> Run:
    """Line-by-line reader: the reference, and the one that names a bad line."""
    text = read_text_file(path, InvalidRun, limited=False)  # runs: metrics' own scale targets
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
    table = pa.table({"q": arrow(q, pa.string()), "d": arrow(d, pa.string()), "s": arrow(s, pa.float64())})
    return Run(table=table, name=tag or "run", path=str(path))


def write_run(run: Run, path: str | os.PathLike[str], tag: str | None = None) -> None:
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


def read_rankings(path: str | os.PathLike[str], name: str | None = None) -> Run:
    """JSONL ``{"query_id": str, "ranking": [docid, ...]}``, best first."""
    rankings: dict[str, list[str]] = {}
    seen_line: dict[str, int] = {}
    for number, line in content_lines(path, InvalidRankings, limited=False):  # as runs
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


def write_rankings(run: Run, path: str | os.PathLike[str]) -> None:
    """JSONL rankings in trec_eval order, one query per line."""
    lines = []
    for qid, docs in run.rankings().items():
        if not isinstance(qid, str) or not qid:
            raise InvalidRankings(path, None, "query_id", f"expected a non-empty string, got {qid!r}")
        for doc in docs:
            check_trec_id(doc, path, "docid", InvalidRankings)
        lines.append(json.dumps({"query_id": qid, "ranking": docs}) + "\n")
    write_atomic(path, "".join(lines))


def read_ranked(path: str | os.PathLike[str]) -> Run:
    """A TREC run, or JSONL rankings when the name ends in .jsonl."""
    if str(path).lower().endswith(".jsonl"):
        return read_rankings(path)
    return read_run(path)


def write_text(path: str | os.PathLike[str], text: str) -> None:
    """Write a text file atomically (a reader never sees half of it); :class:`FormatError` naming
    the path when it cannot be written."""
    write_atomic(path, text)
