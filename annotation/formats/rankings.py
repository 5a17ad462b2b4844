"""JSONL rankings: ``{"query_id": "q1", "ranking": ["d3", "d1", ...]}`` one object per line,
best first; the reader (strict JSON lines, :func:`annotation.formats.json_lines.parse_json_line`)
and the writer (trec_eval's order, one query per line).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from annotation.formats.atomic import write_atomic
from annotation.formats.json_lines import parse_json_line
from annotation.formats.textio import (
    check_id,
    check_text,
    check_trec_id,
    clip_text,
    content_lines,
    has_space,
    shown_value,
)
from annotation.model import InvalidRankings, Run

__all__ = ["read_rankings", "write_rankings"]


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
        # a query may be named by its text (golden.yaml's essay shape): spaces kept, nothing else
        check_id(qid, path, number, "query_id", InvalidRankings, spaces=True)
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
            check_id(doc, path, number, f"ranking[{pos}]", InvalidRankings)
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
