"""TREC qrels and TREC runs, as trec_eval reads them: the readers (a columnar fast path,
:mod:`annotation.formats.columnar`, for clean files; the line reader the reference, and the one
that names a bad line) and the writers.

TREC qrels   ``qid iter docid grade``, whitespace separated; grade an integer
             (negative = judged, never relevant, as in trec_eval). Lines that
             start with ``#`` are comments (trec_eval 9.0.8 accepts them).
TREC run     ``qid Q0 docid rank score tag``; anything after the tag is
             ignored, as trec_eval ignores it. The rank column must be an
             integer but is never used to order: trec_eval orders by score
             descending, ties by docid descending (bytewise).

Fields are separated by ASCII whitespace only, as trec_eval splits them. The writers refuse an
id with whitespace (:class:`~annotation.model.UnwritableId`, saying to give the queries ids): its
line would split wrongly.
"""

from __future__ import annotations

import math
import os

import numpy as np
import pyarrow as pa

import annotation.arrow_compute as pc
from annotation.formats.atomic import write_atomic
from annotation.formats.columnar import NotStreamable, fast_table, lean_pieces
from annotation.formats.textio import (
    NUMBER_PATTERN,
    JudgmentLines,
    check_file_size,
    check_id,
    check_trec_id,
    parse_int,
    read_text_file,
    require_file,
    shown_value,
    split_fields,
)
from annotation.model import InvalidQrels, InvalidRun, Qrels, Run, arrow, as_numpy

__all__ = ["read_qrels", "write_qrels", "read_run", "write_run"]


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
        check_id(qid, path, number, "qid", InvalidQrels)
        check_id(doc, path, number, "docid", InvalidQrels)
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
    lean = _lean_run(path)
    if lean is not None:
        return lean
    table = fast_table(path, _RUN_COLUMNS, int_columns=("r",), number_columns=("s",))
    if table is None:
        return None
    out = pa.table({"q": table["q"], "d": table["d"], "s": table["s"]})
    if "t" in table.column_names:
        tag = table["t"][0].as_py()
    else:  # the lean path keeps the tag as metadata
        tag = table.schema.metadata[b"tag"].decode("utf-8")
    return Run(table=out, name=tag, path=str(path))


def read_run_bytes(data: bytes, name: str) -> Run | None:
    """A TREC run's content already in memory (an upload named ``name``), read by the lean reader
    without writing it to a file (#42 item 2: a 71 MB run in 0.20 s of CPU, 0.23 s through a file); None when
    the lean reader leaves it to the others, which read a file (:func:`read_run`: the same run, or
    the error naming the bad line)."""
    return _lean_run(data, name)


def _lean_run(path: str | os.PathLike[str] | bytes, name: str = "") -> Run | None:
    """The common file (single spaces, nothing odd) read in pieces and kept as its three scored
    columns: the same checks as a whole read (:func:`annotation.formats.columnar.lean_pieces`),
    but the columns nothing scores (Q0, rank, tag) are never held for the whole file, so a
    10M-line run peaks at its kept columns and one piece. None: the other readers judge it."""
    kept: list[pa.Table] = []
    tag = None
    try:
        for piece in lean_pieces(path, _RUN_COLUMNS, ("r",), ("s",)):
            if tag is None:
                tag = piece.schema.metadata[b"tag"].decode("utf-8")
            kept.append(piece.select(["q", "d", "s"]).replace_schema_metadata(None))
    except NotStreamable:
        return None
    if tag is None:
        return None
    return Run(table=pa.concat_tables(kept), name=tag, path=name if isinstance(path, bytes) else str(path))


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
        check_id(qid, path, number, "qid", InvalidRun)
        check_id(doc, path, number, "docid", InvalidRun)
        if tag is None:  # the run's name: the first line's tag (trec_eval reads no other)
            tag = check_id(run_tag, path, number, "tag", InvalidRun)
        q.append(qid)
        d.append(doc)
        s.append(score)
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
