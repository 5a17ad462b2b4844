"""Read, validate and write the exchange formats: TREC qrels, TREC runs,
JSONL rankings and golden.yaml.

Every reader is strict: bad input raises a subclass of :class:`FormatError`
whose message names the file, the line and the field and says what was
expected. Nothing is coerced silently ("001" stays "001": ids are text).

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

import json
import math
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pcsv
import yaml

__all__ = [
    "FormatError",
    "InvalidQrels",
    "InvalidRun",
    "InvalidRankings",
    "InvalidGolden",
    "InvalidCorpus",
    "Qrels",
    "Run",
    "read_qrels",
    "read_golden",
    "read_judgments",
    "read_run",
    "read_rankings",
    "read_ranked",
    "read_corpus_ids",
    "write_qrels",
    "write_golden",
    "write_run",
    "write_rankings",
    "DEFAULT_GRADE_SCALE",
]

# The project's own wording of TREC's 0-3 relevance scale (DESIGN.md).
DEFAULT_GRADE_SCALE: dict[int, str] = {
    0: "irrelevant: nothing to do with the query",
    1: "related: on the topic, but no answer in it",
    2: "highly relevant: holds some of the answer, perhaps unclear or buried",
    3: "perfectly relevant: devoted to the query, holds the exact answer",
}


class FormatError(ValueError):
    """Bad input: says which file, line and field, and what was expected."""

    kind = "input"

    def __init__(self, path: str | os.PathLike, line: int | None, field_: str | None, message: str):
        self.path = str(path)
        self.line = line
        self.field = field_
        self.message = message
        where = self.path if line is None else f"{self.path}:{line}"
        what = f"{field_}: {message}" if field_ else message
        super().__init__(f"{where}: {what}")


class InvalidQrels(FormatError):
    kind = "qrels"


class InvalidRun(FormatError):
    kind = "run"


class InvalidRankings(FormatError):
    kind = "rankings"


class InvalidGolden(FormatError):
    kind = "golden.yaml"


class InvalidCorpus(FormatError):
    kind = "corpus"


@dataclass
class Qrels:
    """Judgments: ``grades[qid][docid] = grade`` plus what golden.yaml adds."""

    grades: dict[str, dict[str, int]]
    texts: dict[str, str] = field(default_factory=dict)
    meta: dict[str, Any] = field(default_factory=dict)
    path: str = ""

    @property
    def n_judgments(self) -> int:
        return sum(len(g) for g in self.grades.values())

    def to_table(self) -> pa.Table:
        """Columnar form (q, d, g) for the batch engine."""
        q: list[str] = []
        d: list[str] = []
        g: list[int] = []
        for qid, docs in self.grades.items():
            q.extend([qid] * len(docs))
            d.extend(docs.keys())
            g.extend(docs.values())
        return pa.table(
            {"q": pa.array(q, pa.string()), "d": pa.array(d, pa.string()), "g": pa.array(g, pa.int64())}
        )


@dataclass
class Run:
    """A retriever's output, columnar: one row per (query, document, score).

    Order is decided by score (descending, ties by docid descending,
    bytewise), never by the file's line order or rank column. JSONL rankings
    get scores ``n, n-1, ..., 1`` so the same rule keeps their order.
    """

    table: pa.Table  # columns q (string), d (string), s (float64)
    name: str = "run"
    path: str = ""

    @property
    def n_rows(self) -> int:
        return self.table.num_rows

    def rankings(self) -> dict[str, list[str]]:
        """Per query, docids in trec_eval order (duplicates kept). Reference path."""
        q = self.table["q"].to_pylist()
        d = self.table["d"].to_pylist()
        s = self.table["s"].to_pylist()
        by_query: dict[str, list[tuple[float, bytes, str]]] = {}
        for qid, doc, score in zip(q, d, s):
            by_query.setdefault(qid, []).append((score, doc.encode("utf-8"), doc))
        return {
            qid: [doc for _, _, doc in sorted(rows, key=lambda r: (r[0], r[1]), reverse=True)]
            for qid, rows in by_query.items()
        }

    @classmethod
    def from_rankings(cls, rankings: dict[str, list[str]], name: str = "run") -> Run:
        q: list[str] = []
        d: list[str] = []
        s: list[float] = []
        for qid, docs in rankings.items():
            n = len(docs)
            q.extend([qid] * n)
            d.extend(docs)
            s.extend(float(n - i) for i in range(n))
        table = pa.table(
            {"q": pa.array(q, pa.string()), "d": pa.array(d, pa.string()), "s": pa.array(s, pa.float64())}
        )
        return cls(table=table, name=name)


# ---------------------------------------------------------------- raw bytes


def _read_text(path: str | os.PathLike, error: type[FormatError]) -> str:
    """Whole file as text; refuses missing, empty, binary and non-UTF-8 files."""
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        raise error(path, None, None, "no such file") from None
    except IsADirectoryError:
        raise error(path, None, None, "is a directory, expected a file") from None
    except PermissionError:
        raise error(path, None, None, "permission denied") from None
    _check_bytes(path, data, error)
    return data.decode("utf-8")


def _check_bytes(path: str | os.PathLike, data: bytes, error: type[FormatError]) -> None:
    if not data.strip():
        raise error(path, None, None, "file is empty, expected at least one line")
    nul = data.find(b"\x00")
    if nul >= 0:
        line = data.count(b"\n", 0, nul) + 1
        raise error(path, line, None, "NUL byte: this looks like a binary file, expected UTF-8 text")
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise error(
            path, line, None, f"byte 0x{data[exc.start]:02x} is not UTF-8, expected UTF-8 text"
        ) from None


def _lines(text: str) -> Iterable[tuple[int, list[str]]]:
    """(line number, whitespace-split fields) for each non-blank, non-comment line."""
    for number, line in enumerate(text.splitlines(), start=1):
        fields = line.split()
        if not fields or fields[0].startswith("#"):
            continue
        yield number, fields


def _parse_int(value: str) -> int | None:
    try:
        return int(value)
    except ValueError:
        return None


# ---------------------------------------------------------------- qrels


def read_qrels(path: str | os.PathLike, scale: tuple[int, int] | None = None) -> Qrels:
    """TREC qrels ``qid iter docid grade``.

    ``scale=(lo, hi)`` also refuses grades outside lo..hi (negative grades
    are always allowed: trec_eval reads them as judged, not relevant).
    """
    fast = _fast_qrels(path, scale)
    if fast is not None:
        return fast
    text = _read_text(path, InvalidQrels)
    grades: dict[str, dict[str, int]] = {}
    first_line: dict[tuple[str, str], int] = {}
    for number, fields in _lines(text):
        if len(fields) != 4:
            raise InvalidQrels(
                path, number, None,
                f"expected 4 columns (qid iter docid grade), got {len(fields)}",
            )
        qid, _iter, doc, raw_grade = fields
        grade = _parse_int(raw_grade)
        if grade is None:
            raise InvalidQrels(path, number, "grade", f"expected an integer, got {raw_grade!r}")
        if scale is not None and grade >= 0 and not scale[0] <= grade <= scale[1]:
            raise InvalidQrels(
                path, number, "grade", f"{grade} is outside the grade scale {scale[0]}-{scale[1]}"
            )
        docs = grades.setdefault(qid, {})
        if doc in docs:
            if docs[doc] != grade:
                raise InvalidQrels(
                    path, number, "grade",
                    f"query {qid!r} document {doc!r} graded {grade} here and "
                    f"{docs[doc]} on line {first_line[(qid, doc)]}; expected one grade per pair",
                )
            continue
        docs[doc] = grade
        first_line[(qid, doc)] = number
    if not grades:
        raise InvalidQrels(path, None, None, "no judgments found (only comments or blank lines)")
    return Qrels(grades=grades, path=str(path))


def _fast_qrels(path: str | os.PathLike, scale: tuple[int, int] | None) -> Qrels | None:
    """Columnar read of a clean qrels file; None sends it to the line reader."""
    head = _head(path)
    if head is None:
        return None
    first = head.split(b"\n", 1)[0]
    delimiter = "\t" if b"\t" in first else " "
    if delimiter == " " and (b"  " in head or b"\t" in head):
        return None
    try:
        table = pcsv.read_csv(
            path,
            read_options=pcsv.ReadOptions(column_names=["q", "i", "d", "g"]),
            parse_options=pcsv.ParseOptions(
                delimiter=delimiter, quote_char=False, escape_char=False, double_quote=False
            ),
            convert_options=pcsv.ConvertOptions(
                column_types={"q": pa.string(), "i": pa.string(), "d": pa.string(), "g": pa.int64()},
                include_columns=["q", "d", "g"],
                strings_can_be_null=False,
                null_values=[],
            ),
        )
    except (pa.ArrowInvalid, pa.ArrowTypeError, UnicodeDecodeError, OSError):
        return None
    if table.num_rows == 0:
        return None
    for name in ("q", "d"):
        if pc.min(pc.utf8_length(table[name])).as_py() == 0:
            return None
    if pc.any(pc.starts_with(table["q"], "#")).as_py():
        return None
    grades_col = table["g"].to_numpy()
    if scale is not None and ((grades_col >= 0) & ((grades_col < scale[0]) | (grades_col > scale[1]))).any():
        return None
    grades: dict[str, dict[str, int]] = {}
    for qid, doc, grade in zip(table["q"].to_pylist(), table["d"].to_pylist(), grades_col.tolist()):
        docs = grades.setdefault(qid, {})
        if docs.setdefault(doc, grade) != grade:
            return None  # conflicting grades: the line reader names both lines
    return Qrels(grades=grades, path=str(path))


def _head(path: str | os.PathLike) -> bytes | None:
    """First 64 KiB of a file that looks clean enough for the columnar readers."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(1 << 16)
    except OSError:
        return None
    if not head.strip() or b"#" in head or b"\x00" in head or b"\r" in head:
        return None
    return head


def write_qrels(qrels: Qrels, path: str | os.PathLike) -> None:
    """TREC qrels, queries and documents in their stored order, iter 0."""
    lines = [
        f"{qid} 0 {doc} {grade}\n" for qid, docs in qrels.grades.items() for doc, grade in docs.items()
    ]
    _write_atomic(path, "".join(lines))


# ---------------------------------------------------------------- golden.yaml

_GOLDEN_TOP_KEYS = {"name", "description", "grade_scale", "judged_by", "shown", "created",
                    "min_grade", "queries", "sampling"}


def read_golden(path: str | os.PathLike) -> Qrels:
    """golden.yaml: ``queries: [{id, text, grades: {doc: grade}}]`` plus metadata.

    Only plain YAML is read (no tags, no aliases); every error names the line.
    """
    text = _read_text(path, InvalidGolden)
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise InvalidGolden(path, line, None, f"not valid YAML: {problem}") from None
    _refuse_aliases_and_tags(path, root)
    if not isinstance(root, yaml.MappingNode):
        raise InvalidGolden(path, _line(root), None, "expected a mapping with a 'queries' list at the top")
    top = _mapping(path, root, "top level")
    for key, (knode, _v) in top.items():
        if key not in _GOLDEN_TOP_KEYS:
            raise InvalidGolden(
                path, _line(knode), key,
                f"unknown key; expected one of {', '.join(sorted(_GOLDEN_TOP_KEYS))}",
            )
    if "queries" not in top:
        raise InvalidGolden(path, 1, "queries", "missing; expected a list of {id, text, grades}")
    meta: dict[str, Any] = {}
    scale = dict(DEFAULT_GRADE_SCALE)
    if "grade_scale" in top:
        scale = {}
        node = top["grade_scale"][1]
        for key, (_knode, vnode) in _mapping(path, node, "grade_scale", keys_as_int=True).items():
            scale[key] = _scalar_str(path, vnode, f"grade_scale.{key}")
        if not scale:
            raise InvalidGolden(path, _line(node), "grade_scale", "empty; expected grade: wording pairs")
    meta["grade_scale"] = scale
    for key in ("name", "description", "shown", "created"):
        if key in top:
            meta[key] = _scalar_str(path, top[key][1], key)
    if "judged_by" in top:
        node = top["judged_by"][1]
        if isinstance(node, yaml.SequenceNode):
            meta["judged_by"] = [_scalar_str(path, n, "judged_by") for n in node.value]
        else:
            meta["judged_by"] = [_scalar_str(path, node, "judged_by")]
    if "min_grade" in top:
        meta["min_grade"] = _scalar_int(path, top["min_grade"][1], "min_grade")
    if "sampling" in top:
        meta["sampling"] = yaml.safe_load(yaml.serialize(top["sampling"][1]))
    lo, hi = min(scale), max(scale)

    qnode = top["queries"][1]
    if not isinstance(qnode, yaml.SequenceNode):
        raise InvalidGolden(path, _line(qnode), "queries", "expected a list of {id, text, grades}")
    grades: dict[str, dict[str, int]] = {}
    texts: dict[str, str] = {}
    for index, item in enumerate(qnode.value):
        where = f"queries[{index}]"
        if not isinstance(item, yaml.MappingNode):
            raise InvalidGolden(path, _line(item), where, "expected a mapping {id, text, grades}")
        fields = _mapping(path, item, where)
        for key, (knode, _v) in fields.items():
            if key not in ("id", "text", "grades", "notes"):
                raise InvalidGolden(path, _line(knode), f"{where}.{key}", "unknown key; expected id, text, grades")
        if "id" not in fields:
            raise InvalidGolden(path, _line(item), f"{where}.id", "missing; expected the query id")
        qid = _scalar_str(path, fields["id"][1], f"{where}.id")
        if qid in grades:
            raise InvalidGolden(path, _line(fields["id"][1]), f"{where}.id", f"query {qid!r} appears twice")
        if "text" in fields:
            texts[qid] = _scalar_str(path, fields["text"][1], f"{where}.text")
        if "grades" not in fields:
            raise InvalidGolden(path, _line(item), f"{where}.grades", "missing; expected {doc_id: grade}")
        gnode = fields["grades"][1]
        if isinstance(gnode, yaml.ScalarNode) and gnode.tag.endswith(":null"):
            doc_grades: dict[str, int] = {}
        else:
            doc_grades = {}
            for doc, (_k, vnode) in _mapping(path, gnode, f"{where}.grades").items():
                grade = _scalar_int(path, vnode, f"{where}.grades.{doc}")
                if grade >= 0 and not lo <= grade <= hi:
                    raise InvalidGolden(
                        path, _line(vnode), f"{where}.grades.{doc}",
                        f"{grade} is outside the grade scale {lo}-{hi}",
                    )
                doc_grades[doc] = grade
        grades[qid] = doc_grades
    if not grades:
        raise InvalidGolden(path, _line(qnode), "queries", "empty; expected at least one query")
    return Qrels(grades=grades, texts=texts, meta=meta, path=str(path))


def _line(node: yaml.Node) -> int:
    return node.start_mark.line + 1


def _refuse_aliases_and_tags(path: str | os.PathLike, root: yaml.Node | None) -> None:
    """Walk the node graph; an alias shows up as a node seen twice."""
    if root is None:
        raise InvalidGolden(path, None, None, "file is empty, expected a mapping with 'queries'")
    seen: set[int] = set()
    stack = [root]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            raise InvalidGolden(path, _line(node), None, "YAML aliases (*name) are not allowed in golden.yaml")
        seen.add(id(node))
        if isinstance(node, yaml.MappingNode):
            for k, v in node.value:
                stack.extend((k, v))
        elif isinstance(node, yaml.SequenceNode):
            stack.extend(node.value)


def _mapping(
    path: str | os.PathLike, node: yaml.Node, where: str, keys_as_int: bool = False
) -> dict[Any, tuple[yaml.Node, yaml.Node]]:
    if not isinstance(node, yaml.MappingNode):
        raise InvalidGolden(path, _line(node), where, "expected a mapping")
    out: dict[Any, tuple[yaml.Node, yaml.Node]] = {}
    for knode, vnode in node.value:
        if not isinstance(knode, yaml.ScalarNode):
            raise InvalidGolden(path, _line(knode), where, "expected plain keys")
        key: Any = _scalar_int(path, knode, where) if keys_as_int else knode.value
        if key in out:
            raise InvalidGolden(path, _line(knode), f"{where}.{key}", "key appears twice")
        out[key] = (knode, vnode)
    return out


def _scalar_str(path: str | os.PathLike, node: yaml.Node, where: str) -> str:
    if not isinstance(node, yaml.ScalarNode):
        raise InvalidGolden(path, _line(node), where, "expected a single value")
    if node.tag.endswith(":null"):
        raise InvalidGolden(path, _line(node), where, "is empty, expected a value")
    return node.value  # the text as written: 001 stays "001"


def _scalar_int(path: str | os.PathLike, node: yaml.Node, where: str) -> int:
    if not isinstance(node, yaml.ScalarNode) or not node.tag.endswith(":int"):
        shown = node.value if isinstance(node, yaml.ScalarNode) else "a structure"
        raise InvalidGolden(path, _line(node), where, f"expected an integer grade, got {shown!r}")
    return int(node.value)


def write_golden(qrels: Qrels, path: str | os.PathLike, meta: dict[str, Any] | None = None) -> None:
    """golden.yaml with metadata first, then the queries; ids written as strings."""
    info = {**qrels.meta, **(meta or {})}
    doc: dict[str, Any] = {}
    for key in ("name", "description", "created", "judged_by", "shown", "min_grade"):
        if key in info:
            doc[key] = info[key]
    doc["grade_scale"] = {int(k): v for k, v in info.get("grade_scale", DEFAULT_GRADE_SCALE).items()}
    if "sampling" in info:
        doc["sampling"] = info["sampling"]
    doc["queries"] = [
        {"id": qid, **({"text": qrels.texts[qid]} if qid in qrels.texts else {}), "grades": dict(docs)}
        for qid, docs in qrels.grades.items()
    ]
    text = yaml.safe_dump(doc, sort_keys=False, allow_unicode=True, default_flow_style=False)
    _write_atomic(path, text)


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
    table = _fast_run(path)
    if table is None:
        return _slow_run(path)
    return table


def _fast_run(path: str | os.PathLike) -> Run | None:
    head = _head(path)
    if head is None:
        return None
    first = head.split(b"\n", 1)[0]
    delimiter = "\t" if b"\t" in first else " "
    if delimiter == " " and (b"  " in head or b"\t" in head):
        return None
    if len(first.split()) != 6:
        return None
    try:
        table = pcsv.read_csv(
            path,
            read_options=pcsv.ReadOptions(column_names=_RUN_COLUMNS, block_size=1 << 24),
            parse_options=pcsv.ParseOptions(
                delimiter=delimiter, quote_char=False, escape_char=False, double_quote=False
            ),
            convert_options=pcsv.ConvertOptions(
                column_types={"q": pa.string(), "d": pa.string(), "r": pa.int64(), "s": pa.float64()},
                include_columns=["q", "d", "r", "s"],
                strings_can_be_null=False,
                quoted_strings_can_be_null=False,
                null_values=[],
            ),
        )
    except (pa.ArrowInvalid, pa.ArrowTypeError, UnicodeDecodeError, OSError):
        return None
    if table.num_rows == 0:
        return None
    # an empty id means a doubled delimiter; a NaN score cannot be ordered; a
    # '#' line is a comment: the line-by-line reader handles (or names) these
    for name in ("q", "d"):
        if pc.min(pc.utf8_length(table[name])).as_py() == 0:
            return None
    if pc.any(pc.starts_with(table["q"], "#")).as_py():
        return None
    if pc.any(pc.is_nan(table["s"])).as_py():
        return None
    tag = first.split()[5].decode("utf-8", "replace")
    out = pa.table({"q": table["q"], "d": table["d"], "s": table["s"]}).combine_chunks()
    return Run(table=out, name=tag, path=str(path))


def _slow_run(path: str | os.PathLike) -> Run:
    text = _read_text(path, InvalidRun)
    q: list[str] = []
    d: list[str] = []
    s: list[float] = []
    tag = None
    for number, fields in _lines(text):
        if len(fields) < 6:
            raise InvalidRun(
                path, number, None,
                f"expected 6 columns (qid Q0 docid rank score tag), got {len(fields)}",
            )
        qid, _q0, doc, rank, raw_score, run_tag = fields[:6]
        if _parse_int(rank) is None:
            raise InvalidRun(path, number, "rank", f"expected an integer, got {rank!r}")
        try:
            score = float(raw_score)
        except ValueError:
            raise InvalidRun(path, number, "score", f"expected a number, got {raw_score!r}") from None
        if math.isnan(score):
            raise InvalidRun(path, number, "score", "NaN cannot be ordered; expected a number")
        q.append(qid)
        d.append(doc)
        s.append(score)
        tag = tag or run_tag
    if not q:
        raise InvalidRun(path, None, None, "no results found (only comments or blank lines)")
    table = pa.table({"q": pa.array(q, pa.string()), "d": pa.array(d, pa.string()), "s": pa.array(s, pa.float64())})
    return Run(table=table, name=tag or "run", path=str(path))


def write_run(run: Run, path: str | os.PathLike, tag: str | None = None) -> None:
    """TREC run in trec_eval order, ranks 1..n per query; scores written with repr()."""
    name = tag or run.name
    lines = []
    for qid, docs in run.rankings().items():
        scores = _scores_by_doc(run, qid)
        for rank, doc in enumerate(docs, start=1):
            lines.append(f"{qid} Q0 {doc} {rank} {scores[doc]!r} {name}\n")
    _write_atomic(path, "".join(lines))


def _scores_by_doc(run: Run, qid: str) -> dict[str, float]:
    mask = pc.equal(run.table["q"], qid)
    sub = run.table.filter(mask)
    out: dict[str, float] = {}
    for doc, score in zip(sub["d"].to_pylist(), sub["s"].to_pylist()):
        out.setdefault(doc, score)
        out[doc] = max(out[doc], score)
    return out


# ---------------------------------------------------------------- JSONL rankings


def read_rankings(path: str | os.PathLike, name: str | None = None) -> Run:
    """JSONL ``{"query_id": str, "ranking": [docid, ...]}``, best first."""
    text = _read_text(path, InvalidRankings)
    rankings: dict[str, list[str]] = {}
    seen_line: dict[str, int] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InvalidRankings(path, number, None, f"not valid JSON ({exc.msg}); expected one object per line") from None
        if not isinstance(obj, dict):
            raise InvalidRankings(path, number, None, 'expected an object {"query_id": ..., "ranking": [...]}')
        if "query_id" not in obj:
            raise InvalidRankings(path, number, "query_id", "missing; expected the query id as a string")
        qid = obj["query_id"]
        if not isinstance(qid, str) or not qid:
            raise InvalidRankings(
                path, number, "query_id",
                f"expected a non-empty string (ids are text: write \"1\", not 1), got {json.dumps(qid)}",
            )
        if "ranking" not in obj:
            raise InvalidRankings(path, number, "ranking", "missing; expected a list of document ids, best first")
        ranking = obj["ranking"]
        if not isinstance(ranking, list):
            raise InvalidRankings(path, number, "ranking", f"expected a list of document ids, got {type(ranking).__name__}")
        for pos, doc in enumerate(ranking):
            if not isinstance(doc, str) or not doc or any(ch.isspace() for ch in doc):
                raise InvalidRankings(
                    path, number, f"ranking[{pos}]",
                    f"expected a document id (a non-empty string without spaces), got {json.dumps(doc)}",
                )
        if qid in rankings:
            raise InvalidRankings(path, number, "query_id", f"{qid!r} already given on line {seen_line[qid]}")
        rankings[qid] = ranking
        seen_line[qid] = number
    if not rankings:
        raise InvalidRankings(path, None, None, "no rankings found")
    run = Run.from_rankings(rankings, name=name or Path(path).stem)
    run.path = str(path)
    return run


def write_rankings(run: Run, path: str | os.PathLike) -> None:
    lines = [json.dumps({"query_id": qid, "ranking": docs}) + "\n" for qid, docs in run.rankings().items()]
    _write_atomic(path, "".join(lines))


def read_ranked(path: str | os.PathLike) -> Run:
    """A TREC run, or JSONL rankings when the name ends in .jsonl."""
    if str(path).lower().endswith(".jsonl"):
        return read_rankings(path)
    return read_run(path)


# ---------------------------------------------------------------- corpus


def read_corpus_ids(path: str | os.PathLike) -> list[str]:
    """Document ids of a corpus: JSONL ``{"id": ..., "text": ...}`` or one id per line."""
    text = _read_text(path, InvalidCorpus)
    ids: list[str] = []
    seen: dict[str, int] = {}
    jsonl = str(path).lower().endswith(".jsonl")
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        if jsonl:
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                raise InvalidCorpus(path, number, None, f"not valid JSON ({exc.msg})") from None
            if not isinstance(obj, dict) or not isinstance(obj.get("id"), str) or not obj["id"]:
                raise InvalidCorpus(path, number, "id", 'expected {"id": "<non-empty string>", ...}')
            doc = obj["id"]
        else:
            doc = line.strip()
        if doc in seen:
            raise InvalidCorpus(path, number, "id", f"{doc!r} already on line {seen[doc]}")
        seen[doc] = number
        ids.append(doc)
    return ids


# ---------------------------------------------------------------- writing


def _write_atomic(path: str | os.PathLike, text: str) -> None:
    """Write to a temporary file and rename: a reader never sees half a file."""
    target = Path(path)
    tmp = target.with_name(f".{target.name}.tmp-{os.getpid()}")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, target)


def as_numpy(array: pa.Array | pa.ChunkedArray) -> np.ndarray:
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks()
    return array.to_numpy(zero_copy_only=False)
