"""golden.yaml: the strict reader (plain YAML only: no tags, anchors, aliases
or deep nesting, decimal integer grades, every error naming its line) of both
shapes (a mapping with a ``queries`` list and metadata, or the essay's bare list
of ``{query, grades, id?}``), the writer (metadata first, then the queries), the
YAML node helpers they share, and :data:`DEFAULT_GRADE_SCALE`, the wording used
when a file gives none.

The ``sampling`` section is parsed here into a
:class:`~annotation.model.SamplingDesign` and checked once (sizes, draws,
shapes); the estimate takes the type as it is. The ``provenance`` section
likewise into a :class:`~annotation.provenance.Provenance`.
"""

from __future__ import annotations

import math
import os
import re
from typing import Any

import yaml

from annotation.formats.atomic import write_atomic
from annotation.formats.plain_yaml import construct, read_yaml_tree, yaml_problem
from annotation.formats.textio import (
    INT64_RANGE,
    YAML_BREAK,
    check_id,
    check_text,
    check_text_size,
    clip_text,
    field_label,
    limits,
    shown_value,
)
from annotation.model import (
    MAX_STRATUM,
    ChunkSpan,
    Evidence,
    InvalidGolden,
    Qrels,
    SamplingDesign,
    Stratum,
)
from annotation.provenance import GuidelinesUsed, OtherBatch, PooledBatch, Provenance

# The project's own wording of TREC's 0-3 relevance scale (DESIGN.md).
DEFAULT_GRADE_SCALE: dict[int, str] = {
    0: "irrelevant: nothing to do with the query",
    1: "related: on the topic, but no answer in it",
    2: "highly relevant: holds some of the answer, perhaps unclear or buried",
    3: "perfectly relevant: devoted to the query, holds the exact answer",
}

# what every refusal of the file as a whole says it expected
_EXPECTED = "expected a mapping with a 'queries' list, or a list of {query, grades}"

_GOLDEN_TOP_KEYS = {
    "name",
    "description",
    "grade_scale",
    "judged_by",
    "shown",
    "created",
    "min_grade",
    "queries",
    "sampling",
    "provenance",
    "chunks",
}


def read_golden(path: str | os.PathLike[str]) -> Qrels:
    """golden.yaml in either shape, each error naming the line:

    - a mapping: ``queries: [{id, text, grades: {doc: grade}, evidence?}]`` plus metadata
      (``grade_scale``, ``judged_by``, ``shown``, ``created``, ``min_grade``, ``sampling``,
      ``provenance``) and ``chunks: {chunk: {doc, start, end}}`` (where graded chunks come from);
      a query's ``evidence: [{doc, start, end, grade}]`` (graded spans of documents, #44) stands
      beside its grades or instead of them;
    - a list, as the essay writes a golden set: ``[{query, grades: {doc: grade}, id?}]``,
      no metadata (the default grade scale). A query without ``id`` is named by its text,
      which a run's query_id must then match; :attr:`Qrels.notes` says how many.

    Both give the same :class:`Qrels` for the same content. Only plain YAML is read (no tags,
    no aliases).
    """
    root = read_yaml_tree(path, InvalidGolden, _EXPECTED)
    if root is None:
        raise InvalidGolden(path, None, None, f"no YAML content; {_EXPECTED}")
    if isinstance(root, yaml.SequenceNode):
        return _read_query_list(path, root)
    if not isinstance(root, yaml.MappingNode):
        raise InvalidGolden(
            path,
            _line(root),
            None,
            f"expected a mapping with a 'queries' list or a list of {{query, grades}} at the top, "
            f"got {root.value!r}",
        )
    top = _mapping(path, root, "")
    for key, (knode, _v) in top.items():
        if key not in _GOLDEN_TOP_KEYS:
            raise InvalidGolden(
                path,
                _line(knode),
                field_label(key),
                f"unknown key; expected one of {', '.join(sorted(_GOLDEN_TOP_KEYS))}",
            )
    if "queries" not in top:
        raise InvalidGolden(path, None, "queries", "missing; expected a list of {id, text, grades}")
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
        node = top["min_grade"][1]
        meta["min_grade"] = _scalar_int(path, node, "min_grade")
        if meta["min_grade"] < 0:
            raise InvalidGolden(
                path,
                _line(node),
                "min_grade",
                f"expected an integer >= 0 (negative grades are judged, never relevant), got {node.value}",
            )
    sampling = None
    if "sampling" in top:
        meta["sampling"], sampling = _read_sampling(path, top["sampling"][1])
    provenance = None
    if "provenance" in top:
        provenance = _read_provenance(path, top["provenance"][1])
        if provenance is not None:
            meta["provenance"] = provenance.to_dict()

    chunk_spans = _read_chunk_spans(path, top["chunks"][1]) if "chunks" in top else {}
    qnode = top["queries"][1]
    if not isinstance(qnode, yaml.SequenceNode):
        raise InvalidGolden(path, _line(qnode), "queries", "expected a list of {id, text, grades}")
    disputed: dict[str, list[dict[str, Any]]] = {}
    evidence: dict[str, list[Evidence]] = {}
    grades, texts, _unnamed = _read_queries(
        path, qnode.value, scale, essay=False, disputed=disputed, evidence=evidence
    )
    if not grades:
        raise InvalidGolden(path, _line(qnode), "queries", "empty; expected at least one query")
    if disputed:
        meta["disputed"] = disputed
    return Qrels(grades, texts, meta, str(path), None, sampling, None, provenance, evidence, chunk_spans)


def _offset(path: str | os.PathLike[str], node: yaml.Node, where: str) -> int:
    """A character offset: a whole number >= 0 that fits in 64 bits."""
    value = _scalar_int(path, node, where)
    if value < 0:
        raise InvalidGolden(path, _line(node), where, f"expected a character offset >= 0, got {value}")
    return value


def _span_fields(
    path: str | os.PathLike[str], node: yaml.Node, where: str, keys: tuple[str, ...]
) -> tuple[str, int, int, dict[Any, tuple[yaml.Node, yaml.Node]]]:
    """(doc, start, end, the fields) of a span mapping holding exactly ``keys``; start < end."""
    fields = _mapping(path, node, where)
    for key, (knode, _v) in fields.items():
        if key not in keys:
            raise InvalidGolden(
                path, _line(knode), f"{where}.{field_label(key)}", f"unknown key; expected {', '.join(keys)}"
            )
    for key in keys:
        if key not in fields:
            raise InvalidGolden(path, _line(node), f"{where}.{key}", f"missing; expected {', '.join(keys)}")
    doc = _scalar_str(path, fields["doc"][1], f"{where}.doc")
    start = _offset(path, fields["start"][1], f"{where}.start")
    end = _offset(path, fields["end"][1], f"{where}.end")
    if end <= start:
        raise InvalidGolden(
            path,
            _line(fields["end"][1]),
            f"{where}.end",
            f"{end} is not after start {start}; expected end > start (end exclusive)",
        )
    return doc, start, end, fields


def _read_chunk_spans(path: str | os.PathLike[str], node: yaml.Node) -> dict[str, ChunkSpan]:
    """The ``chunks`` section: ``{chunk: {doc, start, end}}``, where each graded chunk comes from."""
    if isinstance(node, yaml.ScalarNode) and node.tag.endswith(":null"):
        return {}
    spans = {}
    for chunk, (_knode, vnode) in _mapping(path, node, "chunks").items():
        doc, start, end, _fields = _span_fields(
            path, vnode, f"chunks.{field_label(chunk)}", ("doc", "start", "end")
        )
        spans[chunk] = ChunkSpan(chunk, doc, start, end)
    return spans


def _read_evidence(
    path: str | os.PathLike[str], node: yaml.Node, where: str, lo: int, hi: int
) -> list[Evidence]:
    """A query's ``evidence``: ``[{doc, start, end, grade}]``, each grade on the scale lo-hi."""
    if not isinstance(node, yaml.SequenceNode):
        raise InvalidGolden(path, _line(node), where, "expected a list of {doc, start, end, grade}")
    out = []
    for index, item in enumerate(node.value):
        at = f"{where}[{index}]"
        doc, start, end, fields = _span_fields(path, item, at, ("doc", "start", "end", "grade"))
        grade = _scalar_int(path, fields["grade"][1], f"{at}.grade")
        if not lo <= grade <= hi:
            raise InvalidGolden(
                path, _line(fields["grade"][1]), f"{at}.grade", f"expected a grade in {lo}-{hi}, got {grade}"
            )
        out.append(Evidence(doc, start, end, grade))
    return out


def _read_query_list(path: str | os.PathLike[str], root: yaml.SequenceNode) -> Qrels:
    """The essay's shape: a top-level list of ``{query, grades, id?}``, on the default scale."""
    scale = dict(DEFAULT_GRADE_SCALE)
    grades, texts, unnamed = _read_queries(path, root.value, scale, essay=True)
    if not grades:
        raise InvalidGolden(path, _line(root), None, "an empty list; expected at least one {query, grades}")
    notes = []
    if unnamed:
        have = "has no id; its text serves" if unnamed == 1 else "have no id; their text serves"
        notes.append(
            f"{path}: {unnamed} of {len(grades)} queries {have} as the query id (a run's query_id "
            "must be that text; TREC qrels and runs need an id: without spaces)"
        )
    return Qrels(grades=grades, texts=texts, meta={"grade_scale": scale}, path=str(path), notes=notes)


def _read_queries(
    path: str | os.PathLike[str],
    items: list[yaml.Node],
    scale: dict[int, str],
    essay: bool,
    disputed: dict[str, list[dict[str, Any]]] | None = None,
    evidence: dict[str, list[Evidence]] | None = None,
) -> tuple[dict[str, dict[str, int]], dict[str, str], int]:
    """(grades, texts, how many queries are named by their text) of the query items:
    ``{id, text?, grades, disputed?}`` in the mapping's ``queries`` list (``disputed`` read into
    ``disputed`` by query, :func:`_read_disputed`; ``evidence`` likewise, where it may stand for
    ``grades``), or ``{query, grades, id?}`` in the essay's list (each query's text given once;
    without an id, the text is the id)."""
    lo, hi = min(scale), max(scale)
    allowed = (
        ("query", "id", "grades", "notes")
        if essay
        else ("id", "text", "grades", "notes", "disputed", "evidence")
    )
    expected = "query, grades and an optional id" if essay else "id, text, grades"
    grades: dict[str, dict[str, int]] = {}
    texts: dict[str, str] = {}
    id_line: dict[str, int] = {}
    text_line: dict[str, int] = {}
    unnamed = 0
    text_limit = limits().text_bytes  # a query's text: at most what any reader takes of a text
    for index, item in enumerate(items):
        where = f"[{index}]" if essay else f"queries[{index}]"
        if not isinstance(item, yaml.MappingNode):
            shape = "{query, grades}" if essay else "{id, text, grades}"
            raise InvalidGolden(path, _line(item), where, f"expected a mapping {shape}")
        fields = _mapping(path, item, where)
        for key, (knode, _v) in fields.items():
            if key not in allowed:
                raise InvalidGolden(
                    path, _line(knode), f"{where}.{field_label(key)}", f"unknown key; expected {expected}"
                )
        if essay:
            if "query" not in fields:
                raise InvalidGolden(
                    path,
                    _line(item),
                    f"{where}.query",
                    "missing; expected the query's text (a list item is {query, grades, id?}; "
                    "or write a mapping with a 'queries' list of {id, text, grades})",
                )
            text_node = fields["query"][1]
            query_text = _scalar_str(path, text_node, f"{where}.query")
            if not query_text.strip():
                raise InvalidGolden(path, _line(text_node), f"{where}.query", "expected the query's text")
            if query_text in text_line:
                raise InvalidGolden(
                    path,
                    _line(text_node),
                    f"{where}.query",
                    f"{shown_value(query_text)} already given on line {text_line[query_text]}; "
                    "expected each query once",
                )
            text_line[query_text] = _line(text_node)
        if "id" in fields:
            id_node, id_field = fields["id"][1], f"{where}.id"
            qid = _scalar_str(path, id_node, id_field)
        elif essay:  # the essay's own way: the query is named by its text
            id_node, id_field, qid = text_node, f"{where}.query", query_text
            unnamed += 1
        else:
            raise InvalidGolden(path, _line(item), f"{where}.id", "missing; expected the query id")
        if not qid:
            raise InvalidGolden(path, _line(id_node), id_field, "expected a non-empty query id")
        # a query may be named by its text (spaces kept); line breaks, tabs and controls never
        check_id(qid, path, _line(id_node), id_field, InvalidGolden, spaces=True)
        if qid in grades:
            named = " (a query without an id is named by its text)" if essay else ""
            raise InvalidGolden(
                path,
                _line(id_node),
                id_field,
                f"query {shown_value(qid)} already given on line {id_line[qid]}; expected each id once"
                + named,
            )
        id_line[qid] = _line(id_node)
        if essay:
            text_node, text_field = fields["query"][1], f"{where}.query"
            texts[qid] = query_text
        elif "text" in fields:
            text_node, text_field = fields["text"][1], f"{where}.text"
            texts[qid] = _scalar_str(path, text_node, text_field)
        if qid in texts:
            check_text_size(
                texts[qid],
                path,
                _line(text_node),
                text_field if id_node is text_node else f"{text_field} (query {shown_value(qid)})",
                InvalidGolden,
                text_limit,
            )
        grades[qid] = _read_judged(path, item, fields, where, lo, hi, qid, evidence)
        if "disputed" in fields and disputed is not None:
            disputed[qid] = _read_disputed(path, fields["disputed"][1], f"{where}.disputed", lo, hi)
    return grades, texts, unnamed


def _read_judged(
    path: str | os.PathLike[str],
    item: yaml.Node,
    fields: dict[Any, tuple[yaml.Node, yaml.Node]],
    where: str,
    lo: int,
    hi: int,
    qid: str,
    evidence: dict[str, list[Evidence]] | None,
) -> dict[str, int]:
    """A query's ``grades`` (none when its ``evidence`` stands for them), its evidence read into
    ``evidence``; one of the two is required."""
    if "evidence" in fields and evidence is not None:
        evidence[qid] = _read_evidence(path, fields["evidence"][1], f"{where}.evidence", lo, hi)
    elif "grades" not in fields:
        alternative = " (or evidence)" if evidence is not None else ""  # the essay's list holds none
        raise InvalidGolden(
            path, _line(item), f"{where}.grades", "missing; expected {doc_id: grade}" + alternative
        )
    return _read_grades(path, fields["grades"][1], f"{where}.grades", lo, hi) if "grades" in fields else {}


_DISPUTE_KEYS = ("chunk", "grades", "aggregate", "settled")


def _read_disputed(
    path: str | os.PathLike[str], node: yaml.Node, where: str, lo: int, hi: int
) -> list[dict[str, Any]]:
    """A query's ``disputed`` list, as the export writes it: ``[{chunk, grades: {person: grade},
    aggregate, settled?}]`` (each grade on the scale; the file's grades stay what ``grades`` says)."""
    if not isinstance(node, yaml.SequenceNode):
        raise InvalidGolden(
            path, _line(node), where, "expected a list of {chunk, grades, aggregate, settled?}"
        )
    out = []
    for index, item in enumerate(node.value):
        at = f"{where}[{index}]"
        fields = _mapping(path, item, at)
        for key, (knode, _v) in fields.items():
            if key not in _DISPUTE_KEYS:
                raise InvalidGolden(
                    path,
                    _line(knode),
                    f"{at}.{field_label(key)}",
                    "unknown key; expected chunk, grades, aggregate, settled",
                )
        for key in _DISPUTE_KEYS[:3]:
            if key not in fields:
                raise InvalidGolden(
                    path, _line(item), f"{at}.{key}", "missing; expected chunk, grades, aggregate"
                )
        dispute: dict[str, Any] = {
            "chunk": _scalar_str(path, fields["chunk"][1], f"{at}.chunk"),
            "grades": _read_grades(path, fields["grades"][1], f"{at}.grades", lo, hi),
        }
        for key in ("aggregate", "settled"):
            if key in fields:
                dispute[key] = _scalar_int(path, fields[key][1], f"{at}.{key}")
        out.append(dispute)
    return out


def _read_grades(
    path: str | os.PathLike[str], node: yaml.Node, where: str, lo: int, hi: int
) -> dict[str, int]:
    """``{doc_id: grade}`` (null: none), each grade an integer on the scale lo-hi or negative."""
    if isinstance(node, yaml.ScalarNode) and node.tag.endswith(":null"):
        return {}
    doc_grades: dict[str, int] = {}
    for doc, (knode, vnode) in _mapping(path, node, where).items():
        if not doc:
            raise InvalidGolden(path, _line(knode), where, "expected a non-empty document id")
        check_id(doc, path, _line(knode), f"{where}.{field_label(doc)}", InvalidGolden)
        grade = _scalar_int(path, vnode, f"{where}.{field_label(doc)}")
        if grade >= 0 and not lo <= grade <= hi:
            raise InvalidGolden(
                path,
                _line(vnode),
                f"{where}.{field_label(doc)}",
                f"expected a grade in the grade_scale {lo}-{hi} (or negative), got {grade}",
            )
        doc_grades[doc] = grade
    return doc_grades


def _read_sampling(path: str | os.PathLike[str], node: yaml.Node) -> tuple[Any, SamplingDesign | None]:
    """The ``sampling`` section: its plain values (kept in meta, written back as they are)
    and the design they record, checked once; None when the section is empty. Only what JSON
    holds is taken (the store keeps the section as JSON): text keys, and values that are text,
    finite numbers, true/false, null, lists and mappings; a date or a number as a key is refused."""
    try:
        value = construct(node)
    except (yaml.YAMLError, ValueError, TypeError, OverflowError) as exc:
        # e.g. a date like 2024-13-45, or a bare '=' (YAML 1.1's value tag)
        problem = yaml_problem(exc) if isinstance(exc, yaml.YAMLError) else str(exc)
        if "integer string conversion" in problem:  # Python's limit of 4300 digits
            problem = "a number with thousands of digits"
        raise InvalidGolden(path, _line(node), "sampling", f"expected plain values ({problem})") from None
    _refuse_non_json(path, node, "sampling")
    if not value:  # null or empty: no design
        return value, None
    if not isinstance(node, yaml.MappingNode):
        raise InvalidGolden(
            path,
            _line(node),
            "sampling",
            f"the sampling section is {type(value).__name__}; expected a mapping with 'queries'",
        )
    fields = _mapping(path, node, "sampling")
    method = None
    if "method" in fields and value.get("method") is not None:
        method = _scalar_str(path, fields["method"][1], "sampling.method")
    parameters, depth, corpus = None, None, False
    if "design" in fields and value.get("design") is not None:
        dnode = fields["design"][1]
        if not isinstance(dnode, yaml.MappingNode):
            raise InvalidGolden(
                path, _line(dnode), "sampling.design", "expected a mapping (depth, strata, ...)"
            )
        design_fields = _mapping(path, dnode, "sampling.design")
        parameters = value["design"]
        depth = parameters.get("depth")
        if depth is not None and (isinstance(depth, bool) or not isinstance(depth, int) or depth < 0):
            raise InvalidGolden(
                path,
                _line(design_fields["depth"][1]),
                "sampling.design.depth",
                f"{_plain(depth)}; expected a whole number",
            )
        corpus = parameters.get("corpus")
        if corpus is not None and not isinstance(corpus, bool):
            raise InvalidGolden(
                path,
                _line(design_fields["corpus"][1]),
                "sampling.design.corpus",
                f"{_plain(corpus)}; expected true (a stratum of corpus chunks) or false",
            )
    queries: dict[str, tuple[Stratum, ...]] = {}
    if "queries" in fields and value.get("queries"):  # null or empty: no query sampled
        qnode = fields["queries"][1]
        if not isinstance(qnode, yaml.MappingNode):
            raise InvalidGolden(
                path, _line(qnode), "sampling.queries", "expected a mapping query id -> strata"
            )
        for qid, (_knode, snode) in _mapping(path, qnode, "sampling.queries").items():
            queries[qid] = _read_strata(path, snode, f"sampling.queries.{field_label(qid)}")
    return value, SamplingDesign(
        queries=queries, parameters=parameters, method=method, depth=depth, corpus=bool(corpus)
    )


_POOL_KEYS = ("batch", "runs", "depth", "items", "labelled", "fingerprints")
_OTHER_KEYS = ("batch", "items", "labelled")


def _read_provenance(path: str | os.PathLike[str], node: yaml.Node) -> Provenance | None:
    """The ``provenance`` section (:mod:`annotation.provenance`): ``pools`` of ``{batch?, runs,
    depth, items, labelled?, fingerprints?}``, ``other`` of ``{batch, items, labelled?}``,
    ``warning?``, ``guidelines?`` of ``{version?, labels}``; None when it is empty. Every count a whole number, every name text."""
    if isinstance(node, yaml.ScalarNode) and node.tag.endswith(":null"):
        return None
    fields = _mapping(path, node, "provenance")
    for key, (knode, _v) in fields.items():
        if key not in ("pools", "other", "warning", "guidelines"):
            raise InvalidGolden(
                path,
                _line(knode),
                f"provenance.{field_label(key)}",
                "unknown key; expected pools, other, warning, guidelines",
            )
    pools = tuple(
        PooledBatch(
            runs=tuple(_texts(path, entry["runs"][1], f"{at}.runs")),
            depth=_count(path, entry["depth"][1], f"{at}.depth", least=1),
            items=_count(path, entry["items"][1], f"{at}.items"),
            labelled=_count(path, entry["labelled"][1], f"{at}.labelled") if "labelled" in entry else None,
            batch=_scalar_str(path, entry["batch"][1], f"{at}.batch") if "batch" in entry else None,
            fingerprints={
                run: _scalar_str(path, vnode, f"{at}.fingerprints.{field_label(run)}")
                for run, (_k, vnode) in _mapping(path, entry["fingerprints"][1], f"{at}.fingerprints").items()
            }
            if "fingerprints" in entry
            else {},
        )
        for at, entry in _entries(path, fields, "pools", _POOL_KEYS, ("runs", "depth", "items"))
    )
    other = tuple(
        OtherBatch(
            batch=_scalar_str(path, entry["batch"][1], f"{at}.batch"),
            items=_count(path, entry["items"][1], f"{at}.items"),
            labelled=_count(path, entry["labelled"][1], f"{at}.labelled") if "labelled" in entry else None,
        )
        for at, entry in _entries(path, fields, "other", _OTHER_KEYS, ("batch", "items"))
    )
    for pool in pools:
        unknown = sorted(set(pool.fingerprints) - set(pool.runs))
        if unknown:
            raise InvalidGolden(
                path,
                _line(node),
                "provenance.pools",
                f"a fingerprint of {shown_value(unknown[0])}, a run the pool does not name; "
                f"expected fingerprints of its runs ({', '.join(pool.runs)})",
            )
    warning = _scalar_str(path, fields["warning"][1], "provenance.warning") if "warning" in fields else None
    guidelines = tuple(
        GuidelinesUsed(
            version=_count(path, entry["version"][1], f"{at}.version") if "version" in entry else None,
            labels=_count(path, entry["labels"][1], f"{at}.labels"),
        )
        for at, entry in _entries(path, fields, "guidelines", ("version", "labels"), ("labels",))
    )
    return Provenance(pools=pools, other=other, warning=warning, guidelines=guidelines)


def _entries(
    path: str | os.PathLike[str],
    fields: dict[Any, tuple[yaml.Node, yaml.Node]],
    key: str,
    allowed: tuple[str, ...],
    required: tuple[str, ...],
) -> list[tuple[str, dict[Any, tuple[yaml.Node, yaml.Node]]]]:
    """``provenance.<key>``: a list of mappings of ``allowed`` keys, each with ``required``."""
    if key not in fields or (
        isinstance(fields[key][1], yaml.ScalarNode) and fields[key][1].tag.endswith(":null")
    ):
        return []
    node = fields[key][1]
    if not isinstance(node, yaml.SequenceNode):
        raise InvalidGolden(
            path, _line(node), f"provenance.{key}", f"expected a list of {{{', '.join(allowed)}}}"
        )
    out = []
    for index, item in enumerate(node.value):
        at = f"provenance.{key}[{index}]"
        entry = _mapping(path, item, at)
        for name, (knode, _v) in entry.items():
            if name not in allowed:
                raise InvalidGolden(
                    path,
                    _line(knode),
                    f"{at}.{field_label(name)}",
                    f"unknown key; expected {', '.join(allowed)}",
                )
        for name in required:
            if name not in entry:
                raise InvalidGolden(
                    path, _line(item), f"{at}.{name}", f"missing; expected {', '.join(required)}"
                )
        out.append((at, entry))
    return out


def _texts(path: str | os.PathLike[str], node: yaml.Node, where: str) -> list[str]:
    """A non-empty list of names (a single name is a list of one)."""
    names = (
        [_scalar_str(path, n, where) for n in node.value]
        if isinstance(node, yaml.SequenceNode)
        else [_scalar_str(path, node, where)]
    )
    if not names or not all(names):
        raise InvalidGolden(path, _line(node), where, "expected a list of run names")
    return names


def _count(path: str | os.PathLike[str], node: yaml.Node, where: str, least: int = 0) -> int:
    """A whole number >= ``least``."""
    if (
        not (
            isinstance(node, yaml.ScalarNode)
            and node.tag.endswith(":int")
            and _GOLDEN_INT.fullmatch(node.value)
        )
        or len(node.value.lstrip("+-")) > 19
    ):
        shown = shown_value(node.value) if isinstance(node, yaml.ScalarNode) else "a list or mapping"
        raise InvalidGolden(path, _line(node), where, f"expected a whole number, got {shown}")
    value = int(node.value)
    if value < least:
        raise InvalidGolden(path, _line(node), where, f"expected a whole number >= {least}, got {value}")
    return value


def _read_strata(path: str | os.PathLike[str], node: yaml.Node, where: str) -> tuple[Stratum, ...]:
    """One query's strata: each a whole number of candidates (at most MAX_STRATUM) and the
    chunk ids drawn from them, no chunk drawn twice in the query (a draw without replacement,
    one stratum per chunk), never more drawn than the stratum holds."""
    if not isinstance(node, yaml.MappingNode):
        raise InvalidGolden(path, _line(node), where, "expected a mapping stratum -> {size, sampled}")
    strata: list[Stratum] = []
    first_line: dict[str, int] = {}  # chunk id -> the line that drew it first, in any stratum
    for name, (_knode, enode) in _mapping(path, node, where).items():
        at = f"{where}.{field_label(name)}"
        if not isinstance(enode, yaml.MappingNode):
            raise InvalidGolden(path, _line(enode), at, "expected {size, sampled}")
        entry = _mapping(path, enode, at)
        size_node = entry["size"][1] if "size" in entry else None
        size = _stratum_size(size_node)
        if isinstance(size, bool) or not isinstance(size, int) or size < 0:
            raise InvalidGolden(
                path,
                _line(size_node or enode),
                at,
                f"size {_plain(size)}; expected a whole number of candidates",
            )
        if size > MAX_STRATUM:
            shown = f"{size:,}" if size < 10**30 else f"a number of {len(str(size))} digits"
            raise InvalidGolden(
                path,
                _line(size_node or enode),
                at,
                f"size {shown}; at most {MAX_STRATUM:,} candidates per stratum",
            )
        snode = entry["sampled"][1] if "sampled" in entry else None
        if not isinstance(snode, yaml.SequenceNode) or not all(
            isinstance(item, yaml.ScalarNode) and item.tag.endswith(":str") for item in snode.value
        ):
            raise InvalidGolden(path, _line(snode or enode), at, "sampled: expected a list of chunk ids")
        sampled = []
        for item in snode.value:
            check_text(item.value, path, _line(item), f"{at}.sampled", InvalidGolden)
            if item.value in first_line:
                raise InvalidGolden(
                    path,
                    _line(item),
                    at,
                    f"chunk {shown_value(item.value)} sampled twice (first on line {first_line[item.value]}); "
                    "a draw without replacement",
                )
            first_line[item.value] = _line(item)
            sampled.append(item.value)
        if len(sampled) > size:
            raise InvalidGolden(
                path,
                _line(enode),
                at,
                f"the sampling section cannot be used: {len(sampled)} sampled of {size} candidates",
            )
        strata.append(Stratum(name=name, size=size, sampled=tuple(sampled)))
    return tuple(strata)


def _refuse_non_json(path: str | os.PathLike[str], node: yaml.Node, where: str) -> None:
    """Refuse, naming the line, what JSON (the store's copy of the section) cannot hold: a key
    that is not text (``1:``, ``true:``, a date), a date or time, NaN or infinity."""
    stack: list[tuple[yaml.Node, str]] = [(node, where)]
    while stack:  # the tree is at most _YAML_MAX_DEPTH deep, but no recursion is needed
        current, at = stack.pop()
        if isinstance(current, yaml.MappingNode):
            for knode, vnode in current.value:
                if not (isinstance(knode, yaml.ScalarNode) and knode.tag.endswith(":str")):
                    shown = clip_text(knode.value) if isinstance(knode, yaml.ScalarNode) else "{...}"
                    kind = knode.tag.rsplit(":", 1)[-1]
                    raise InvalidGolden(
                        path,
                        _line(knode),
                        at,
                        f"the key {shown} is not text (YAML type {kind}); expected text keys (quote it)",
                    )
                stack.append((vnode, f"{at}.{field_label(knode.value)}"))
        elif isinstance(current, yaml.SequenceNode):
            stack.extend((item, f"{at}[{i}]") for i, item in enumerate(current.value))
        elif not current.tag.endswith((":str", ":int", ":bool", ":null")) and not (
            current.tag.endswith(":float") and math.isfinite(construct(current))
        ):
            raise InvalidGolden(
                path,
                _line(current),
                at,
                f"{clip_text(current.value)} (YAML type {current.tag.rsplit(':', 1)[-1]}); expected text, "
                "a finite number, true/false or null (a date is written quoted)",
            )


def _stratum_size(node: yaml.Node | None) -> Any:
    """A stratum's size as YAML reads it (None when missing), for the caller to check."""
    if node is None:
        return None
    if isinstance(node, yaml.ScalarNode) and node.tag.endswith(":int") and _GOLDEN_INT.fullmatch(node.value):
        if len(node.value.lstrip("+-")) <= 19:
            return int(node.value)
    return construct(node)


def _plain(value: Any) -> str:
    """A plain value from the file as a message shows it: repr, cut short."""
    return shown_value(value) if isinstance(value, str) else field_label(repr(value))


def _line(node: yaml.Node) -> int:
    line: int = node.start_mark.line + 1
    return line


def _mapping(
    path: str | os.PathLike[str], node: yaml.Node, where: str, keys_as_int: bool = False
) -> dict[Any, tuple[yaml.Node, yaml.Node]]:
    if not isinstance(node, yaml.MappingNode):
        raise InvalidGolden(path, _line(node), where, "expected a mapping")
    out: dict[Any, tuple[yaml.Node, yaml.Node]] = {}
    for knode, vnode in node.value:
        if not isinstance(knode, yaml.ScalarNode):
            raise InvalidGolden(path, _line(knode), where or None, "expected plain keys")
        key: Any = _scalar_int(path, knode, where) if keys_as_int else knode.value
        if not keys_as_int:
            check_text(key, path, _line(knode), f"{where}.{key!r}" if where else "key", InvalidGolden)
        if key in out:
            raise InvalidGolden(
                path,
                _line(knode),
                f"{where}.{field_label(str(key))}" if where else field_label(str(key)),
                f"key already given on line {_line(out[key][0])}; expected each key once",
            )
        out[key] = (knode, vnode)
    return out


def _scalar_str(path: str | os.PathLike[str], node: yaml.Node, where: str) -> str:
    if not isinstance(node, yaml.ScalarNode):
        raise InvalidGolden(path, _line(node), where, "expected a single value")
    if node.tag.endswith(":null"):
        raise InvalidGolden(path, _line(node), where, "is empty, expected a value")
    text: str = node.value  # the text as written: 001 stays "001"
    check_text(text, path, _line(node), where, InvalidGolden)
    return text


_GOLDEN_INT = re.compile(r"[-+]?(?:0|[1-9][0-9]*)")


def _scalar_int(path: str | os.PathLike[str], node: yaml.Node, where: str) -> int:
    """A plain decimal integer; YAML 1.1's 0x1F, 0b1, 010 (octal 8), 1_000 and
    1:30 (sexagesimal) are refused rather than guessed."""
    if not (
        isinstance(node, yaml.ScalarNode) and node.tag.endswith(":int") and _GOLDEN_INT.fullmatch(node.value)
    ):
        if isinstance(node, yaml.ScalarNode):
            shown = shown_value(node.value)
        else:
            shown = "a list" if isinstance(node, yaml.SequenceNode) else "a mapping"
        raise InvalidGolden(path, _line(node), where, f"expected an integer grade, got {shown}")
    # a grade beyond 64 bits fits no array (and int() refuses more than 4300 digits)
    if len(node.value.lstrip("+-")) > 19 or not INT64_RANGE[0] <= int(node.value) <= INT64_RANGE[1]:
        raise InvalidGolden(
            path,
            _line(node),
            where,
            f"expected an integer grade that fits in 64 bits, got {shown_value(node.value)}",
        )
    return int(node.value)


def write_golden(qrels: Qrels, path: str | os.PathLike[str], meta: dict[str, Any] | None = None) -> None:
    """golden.yaml with metadata first, then the queries; ids written as strings. A query with
    ``info["disputed"][qid]`` (:meth:`Store.export_qrels`) lists them under its ``disputed``."""
    info = {**qrels.meta, **(meta or {})}
    disputed = info.get("disputed") or {}
    doc: dict[str, Any] = {}
    for key in ("name", "description", "created", "judged_by", "shown", "min_grade"):
        if key in info:
            doc[key] = info[key]
    doc["grade_scale"] = {int(k): v for k, v in info.get("grade_scale", DEFAULT_GRADE_SCALE).items()}
    if "sampling" in info or qrels.sampling is not None:
        sampling = info.get("sampling", qrels.sampling)  # the section as read (or built), else the design
        doc["sampling"] = sampling.to_dict() if isinstance(sampling, SamplingDesign) else sampling
    if "provenance" in info or qrels.provenance is not None:
        provenance = info.get("provenance", qrels.provenance)
        doc["provenance"] = provenance.to_dict() if isinstance(provenance, Provenance) else provenance
    if qrels.chunk_spans:  # where the graded chunks come from (#44): only when known
        doc["chunks"] = {
            chunk: {"doc": span.doc, "start": span.start, "end": span.end}
            for chunk, span in qrels.chunk_spans.items()
        }
    doc["queries"] = [
        {
            "id": qid,
            **({"text": qrels.texts[qid]} if qid in qrels.texts else {}),
            # a query held by its evidence alone is written without grades, as it was read
            **(
                {"grades": {doc: int(grade) for doc, grade in docs.items()}}
                if docs or qid not in qrels.evidence
                else {}
            ),
            **({"disputed": disputed[qid]} if disputed.get(qid) else {}),
            **(
                {
                    "evidence": [
                        {"doc": e.doc, "start": e.start, "end": e.end, "grade": e.grade}
                        for e in qrels.evidence[qid]
                    ]
                }
                if qid in qrels.evidence
                else {}
            ),
        }
        for qid, docs in qrels.grades.items()
    ]
    text = yaml.dump(doc, Dumper=_GoldenDumper, sort_keys=False, allow_unicode=True, default_flow_style=False)
    write_atomic(path, text)


class _GoldenDumper(yaml.SafeDumper):  # type: ignore[misc]  # PyYAML ships no stubs here: SafeDumper is Any
    """safe_dump, but a text holding a YAML line break other than LF (NEL,
    U+2028, U+2029) is double-quoted, where the emitter escapes it: written
    raw it would fold into a space, and the reader refuses it."""


def _represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = '"' if YAML_BREAK.search(value) else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_GoldenDumper.add_representer(str, _represent_str)
