"""RAG traces exported from observability tools: queries, chunks, runs and traces.

:func:`read_trace_source` reads one export file of OpenInference (Phoenix),
Langfuse or LangSmith spans, or the product's own trace JSONL, and returns a
:class:`TraceImport`: the questions asked (queries), the chunks retrieved, one
run per system and stage (``fetch`` from retriever spans, ``keep`` from
reranker output), and the traces (question, the chunk ids shown to the LLM,
answer) in the shape :func:`annotation.formats.read_traces` gives. It only
parses: :func:`to_store` writes a :class:`TraceImport` in one store
transaction. Bad input raises :class:`InvalidTraceSource` (a
:class:`~annotation._base.FormatError`) naming the file, line or record, and
field; a trace without a question or an answer is not an error but is listed
in ``TraceImport.problems`` and not imported as a trace.

What is read, per source (every default can be overridden with a mapping,
``--map KEY=PATH``; see below):

openinference  Phoenix's spans dataframe (``px.Client().get_spans_dataframe()``)
               saved as Parquet, or as JSON (records, columns, split, index or
               table orient) or JSON lines, with the documents either as the
               ``attributes.retrieval.documents`` column (a list of
               ``{"document.id", ...}``) or flattened
               (``attributes.retrieval.documents.0.document.id``) or nested
               (``{"attributes": {"retrieval": {"documents": [{"document": {...}}]}}}``);
               Phoenix REST pages (``GET /v1/projects/{p}/spans``:
               ``{"data": [{"context": {"trace_id", "span_id"}, "parent_id",
               "span_kind", "attributes": {flat keys}}], "next_cursor"}`` and its
               ``/spans/otlpv1`` twin); OTLP JSON (``{"resourceSpans": [{"resource",
               "scopeSpans": [{"spans": [...]}]}]}``, one export per line allowed,
               camelCase or snake_case). Spans are grouped by trace id; the
               root span (no parent) gives question ``attributes.input.value``
               and answer ``attributes.output.value``; spans of kind RETRIEVER give
               ``retrieval.documents.N.document.{id,content,score}`` (rank N + 1);
               spans of kind RERANKER give ``reranker.output_documents.N...``.
               system: resource ``service.name`` (``unknown_service...`` skipped),
               else resource ``openinference.project.name``, else the root's
               ``metadata.version``, else ``openinference``.
langfuse       A trace as the UI or ``GET /api/public/traces/{id}`` gives it
               (``{"id", "input", "output", "version", "release",
               "observations": [...]}``), a list of them, Observations API pages
               (``{"data": [observations], "meta": {...}}``, one page per line
               allowed) or blob-storage export rows (JSON or JSONL, snake_case,
               ``input``/``output`` JSON-encoded strings). Observations are
               grouped by ``traceId``/``trace_id``; retrievers are observations of
               type RETRIEVER (or named in ``--map retriever=NAME``); their
               documents are ``output`` (a list, or ``{"documents": [...]}``),
               each ``{"page_content", "metadata", "id"?}``. question/answer: the
               trace's ``input``/``output``, else the root observation's.
               system: ``version``, else ``release``, else the root observation's
               ``version``, else ``langfuse``.
langsmith      ``Client().list_runs(...)`` saved as a JSON list of runs (or
               ``{"runs": [...]}``, or JSON lines). Runs are grouped by
               ``trace_id``; the root run (no ``parent_run_id``) gives question
               ``inputs`` and answer ``outputs`` (a text, or the text under a
               key such as ``question``/``query``/``input`` and
               ``answer``/``output``/``result``); runs with ``run_type``
               ``retriever`` give ``outputs.documents`` (or ``outputs.output``)
               ``[{"page_content", "metadata", "type": "Document"}]``. system:
               ``extra.metadata.ls_version``, else ``extra.metadata.revision_id``,
               else ``langsmith``.
jsonl          The product's trace JSONL (:func:`annotation.formats.read_traces`):
               traces and their queries only (contexts may be ids or texts, so
               no chunks and no runs).

Defaults for documents in Langfuse and LangSmith: chunk id ``id``, else
``metadata.id``, ``metadata.chunk_id``, ``metadata.doc_id``, ``node.id_``;
text ``page_content``, ``pageContent``, ``content``, ``text``, ``node.text``;
score ``score``, ``metadata.score``, ``metadata.relevance_score``,
``relevance_score``. A span, observation or run whose name contains
"rerank" or "compression" (e.g. LangChain's ContextualCompressionRetriever)
is a reranker, in every source.

Stages: ``fetch`` is the documents of the outermost retrievers of a trace (a
retriever inside another retriever is part of it), in start order;
``keep`` is the output of the last outermost reranker. The contexts of a
trace (what the LLM was shown) are the keep chunks if the trace has a
reranker, else the fetch chunks. A chunk without an id gets ``c_`` +
sha256(text)[:16]; a question without a query id (the default) gets ``q_`` +
sha256(question)[:16], so the same question asked of two systems is one
query. Two rankings of one query by one system and stage: the first is kept
and the second listed as a problem.

Mapping keys (a dotted path into the JSON object; ``a|b`` tries ``a`` then
``b``; ``"text"`` in double quotes is a constant; a path may run into a
JSON-encoded string; a key that holds dots, like ``input.value``, is found
as written):

question, answer, system, query_id   from the trace's root record: the root
               span (openinference: ``{"name", "span_kind", "context", "parent_id",
               "attributes": {...}, "resource": {...}}``, attributes as the file
               has them, flat or nested: ``attributes.input.value`` reads both), the
               Langfuse trace (with ``root_observation``) or root observation,
               the LangSmith root run.
chunk_id, chunk_text, score   from each document (openinference:
               ``{"document.id", "document.content", "document.score",
               "document.metadata"}``, e.g. ``chunk_id=document.metadata.doc_id``).
documents      (langfuse, langsmith) where a retriever's or reranker's documents are.
retriever, reranker   comma-separated names of spans/observations/runs that are
               retrievers or rerankers; ``reranker`` replaces the name rule above.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import random
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import date, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from annotation._base import InvalidTraces, Run, _read_text, _require_file

if TYPE_CHECKING:
    from annotation.store import Store

__all__ = [
    "SOURCES",
    "MAPPING_KEYS",
    "InvalidTraceSource",
    "ChunkConflict",
    "QueryConflict",
    "TraceImport",
    "parse_mapping",
    "read_trace_source",
    "to_store",
    "synthetic_openinference",
]

SOURCES = ("openinference", "langfuse", "langsmith", "jsonl")
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


class InvalidTraceSource(InvalidTraces):
    """A trace export that cannot be read: names the file, line or record, and field."""

    kind = "trace source"


class ChunkConflict(InvalidTraceSource):
    """The same chunk id with two different texts."""


class QueryConflict(InvalidTraceSource):
    """The same query id with two different question texts."""


@dataclass
class TraceImport:
    """What one trace export holds, ready for :func:`to_store`."""

    source: str
    path: str
    queries: dict[str, str] = field(default_factory=dict)
    chunks: list[dict[str, Any]] = field(default_factory=list)
    # (system, stage) -> query id -> [(chunk id, score or None)] in rank order
    runs: dict[tuple[str, str], dict[str, list[tuple[str, float | None]]]] = field(default_factory=dict)
    traces: list[dict[str, Any]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        return {
            "traces": len(self.traces),
            "queries": len(self.queries),
            "chunks": len(self.chunks),
            "runs": len(self.runs),
            "rankings": sum(len(r) for run in self.runs.values() for r in run.values()),
            "problems": len(self.problems),
        }

    def summary(self) -> str:
        """One line: what was read and how many problems."""
        return f"{self.source} {self.path}: " + ", ".join(f"{n} {k}" for k, n in self.counts().items())


# ---------------------------------------------------------------- mapping and paths

_MISSING = object()
_QUESTION_KEYS = ("question", "query", "input", "query_str", "user_input", "prompt", "text", "content")
_ANSWER_KEYS = ("answer", "output", "response", "result", "completion", "generation", "text", "content")
_RERANK_WORDS = ("rerank", "compression")


@dataclass(frozen=True)
class _Path:
    """Alternatives tried in order: ("path", parts, text) or ("const", value, text)."""

    text: str
    alternatives: tuple[tuple[str, Any, str], ...]


def _path(text: str) -> _Path:
    alternatives = []
    for part in text.split("|"):
        part = part.strip()
        if len(part) >= 2 and part.startswith('"') and part.endswith('"'):
            alternatives.append(("const", part[1:-1], part))
        elif part:
            alternatives.append(("path", tuple(part.split(".")), part))
    return _Path(text, tuple(alternatives))


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
        if not value or not _path(value).alternatives:
            raise InvalidTraceSource("--map", None, key, "empty; expected a dotted path, e.g. inputs.query")
        mapping[key] = value
    return mapping


def _decode(value: Any) -> Any:
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


def _lookup(obj: Any, parts: tuple[str, ...]) -> Any:
    """The value at a dotted path: at each level the longest key that matches
    (so ``input.value`` is found flat or nested), list indexes by number, and
    JSON-encoded strings entered when the path goes on."""
    if not parts:
        return obj
    if isinstance(obj, str):
        obj = _decode(obj)
        if isinstance(obj, str):
            return _MISSING
    if isinstance(obj, dict):
        for n in range(len(parts), 0, -1):
            key = parts[0] if n == 1 else ".".join(parts[:n])
            if key in obj:
                found = _lookup(obj[key], parts[n:])
                if found is not _MISSING:
                    return found
        return _MISSING
    if isinstance(obj, list) and parts[0].isdigit():
        index = int(parts[0])
        return _lookup(obj[index], parts[1:]) if index < len(obj) else _MISSING
    return _MISSING


def _first(obj: Any, path: _Path) -> tuple[Any, str]:
    """(value, the alternative that gave it) of the first alternative present and not null."""
    for kind, spec, text in path.alternatives:
        if kind == "const":
            return spec, text
        value = _lookup(obj, spec)
        if value is not _MISSING and value is not None and not _is_nan(value):
            return value, text
    return _MISSING, path.text


def _is_nan(value: Any) -> bool:
    return isinstance(value, float) and math.isnan(value)


def _text(value: Any, keys: tuple[str, ...], depth: int = 0) -> str | None:
    """A question or answer as text: a string (a JSON-encoded object or string is
    opened), or the text under the first of ``keys`` in an object, or the only
    value of a one-key object. None when there is no text."""
    if value is _MISSING or value is None or depth > 4:
        return None
    if isinstance(value, str):
        stripped = value.strip()
        if stripped[:1] in ("{", '"'):
            try:
                decoded = json.loads(stripped)
            except ValueError:
                decoded = None
            if isinstance(decoded, dict | str):
                return _text(decoded, keys, depth + 1)
        return value if stripped else None
    if isinstance(value, dict):
        for key in keys:
            if key in value:
                found = _text(value[key], keys, depth + 1)
                if found is not None:
                    return found
        if len(value) == 1:
            return _text(next(iter(value.values())), keys, depth + 1)
    return None


def _hash_id(prefix: str, text: str) -> str:
    return prefix + hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


# ---------------------------------------------------------------- the common model


@dataclass
class _Node:
    """A span, observation or run, as the common assembly sees it."""

    id: str
    parent: str | None
    name: str
    kind: str  # upper case: RETRIEVER, RERANKER, CHAIN, ...
    order: tuple
    record: Any
    loc: str  # where it is, for messages (line given apart)
    line: int | None


@dataclass
class _RawTrace:
    id: str
    nodes: list[_Node]
    root: dict[str, Any]  # what question/answer/system/query_id paths read
    loc: str
    line: int | None


@dataclass
class _Spec:
    """A source's defaults and its way to reach documents."""

    question: str
    answer: str
    system: str
    system_fallback: str
    chunk_id: str
    chunk_text: str
    score: str
    documents: str | None
    docs: Callable[[_Node, str, _Path | None], list[tuple[Any, _Loc]]]


def _order(value: Any, index: int) -> tuple:
    """A sort key for start times of any export (ns numbers, ISO text, datetimes)."""
    if isinstance(value, bool) or value is None or _is_nan(value):
        return (2, 0.0, "", index)
    if isinstance(value, int | float):
        return (0, float(value), "", index)
    if isinstance(value, datetime):
        return (0, value.timestamp() * 1e9, "", index)
    if isinstance(value, str):
        if value.isdigit():
            return (0, float(value), "", index)
        return (1, 0.0, value, index)
    return (2, 0.0, "", index)


def _where(loc: Any, name: str) -> str:
    return f"{loc}.{name}" if loc else name


class _Loc:
    """Where a document is (``base.index``), made into text only for a message."""

    __slots__ = ("base", "index")

    def __init__(self, base: str, index: int) -> None:
        self.base, self.index = base, index

    def __str__(self) -> str:
        return f"{self.base}.{self.index}"


def _ident(value: Any, path: str, line: int | None, loc: str, name: str, required: bool = True) -> str | None:
    """An id as text: a non-empty string, or an integer (written in decimal)."""
    if isinstance(value, bool):
        raise InvalidTraceSource(
            path, line, _where(loc, name), f"expected a string id, got {json.dumps(value)}"
        )
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, str) and value.strip():
        return value
    if value is None or value is _MISSING or value == "" or _is_nan(value):
        if required:
            raise InvalidTraceSource(path, line, _where(loc, name), "missing; expected an id (a string)")
        return None
    raise InvalidTraceSource(
        path, line, _where(loc, name), f"expected a string id, got {json.dumps(value, default=str)[:60]}"
    )


def _utf8(value: str, path: str, line: int | None, where: str) -> None:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidTraceSource(
            path, line, where, f"holds the lone surrogate U+{ord(value[exc.start]):04X}; expected UTF-8 text"
        ) from None


def _root(nodes: list[_Node]) -> _Node | None:
    """The node without a parent (else one whose parent is not in the trace), earliest first."""
    ids = {n.id for n in nodes}
    roots = [n for n in nodes if not n.parent] or [n for n in nodes if n.parent not in ids]
    return min(roots, key=lambda n: n.order) if roots else None


def _names(mapping: dict[str, str], key: str) -> set[str] | None:
    if key not in mapping:
        return None
    return {name.strip() for name in mapping[key].split(",") if name.strip()}


def _role(node: _Node, retrievers: set[str] | None, rerankers: set[str] | None) -> str:
    if node.kind == "RERANKER":
        return "reranker"
    if rerankers is not None:
        if node.name in rerankers:
            return "reranker"
    elif any(word in node.name.lower() for word in _RERANK_WORDS):
        return "reranker"
    if node.kind == "RETRIEVER" or (retrievers is not None and node.name in retrievers):
        return "retriever"
    return "other"


def _outermost(nodes: list[_Node], roles: dict[str, str], role: str) -> list[_Node]:
    """Nodes of ``role`` with no ancestor of the same role, in start order."""
    by_id = {n.id: n for n in nodes}
    out = []
    for node in nodes:
        if roles[node.id] != role:
            continue
        parent, seen = node.parent, {node.id}
        nested = False
        while parent and parent in by_id and parent not in seen:
            if roles[parent] == role:
                nested = True
                break
            seen.add(parent)
            parent = by_id[parent].parent
        if not nested:
            out.append(node)
    return sorted(out, key=lambda n: n.order)


class _Builder:
    """Collects queries, chunks, runs and traces over the traces of one file."""

    def __init__(self, source: str, path: str, spec: _Spec, mapping: dict[str, str]) -> None:
        self.path = path
        self.spec = spec
        self.imp = TraceImport(source=source, path=path)
        self.question = _path(mapping.get("question", spec.question))
        self.answer = _path(mapping.get("answer", spec.answer))
        self.system = _path(mapping.get("system", spec.system))
        self.query_id = _path(mapping["query_id"]) if "query_id" in mapping else None
        self.chunk_id = _path(mapping.get("chunk_id", spec.chunk_id))
        self.chunk_text = _path(mapping.get("chunk_text", spec.chunk_text))
        self.score = _path(mapping.get("score", spec.score))
        documents = mapping.get("documents", spec.documents)
        self.documents = _path(documents) if documents else None
        self.retrievers = _names(mapping, "retriever")
        self.rerankers = _names(mapping, "reranker")
        self.chunk_text_of: dict[str, str | None] = {}
        self.chunk_seen: dict[str, tuple[int | None, str]] = {}
        self.query_seen: dict[str, tuple[int | None, str]] = {}
        self.ranked_by: dict[tuple[str, str, str], str] = {}

    # -- one trace

    def add(self, trace: _RawTrace) -> None:
        nodes = sorted(trace.nodes, key=lambda n: n.order)
        roles = {n.id: _role(n, self.retrievers, self.rerankers) for n in nodes}
        question = _text(_first(trace.root, self.question)[0], _QUESTION_KEYS)
        answer = _text(_first(trace.root, self.answer)[0], _ANSWER_KEYS)
        system = self._system(trace)
        if question is None:
            self.imp.problems.append(
                f"trace {trace.id!r} ({self._at(trace)}): no question at {self.question.text}; "
                "not imported, and its retrievals are not counted (no query to file them under); "
                "give --map question=PATH"
            )
            return
        _utf8(question, self.path, trace.line, _where(trace.loc, "question"))
        query_id = self._query(trace, question)
        fetch_nodes = _outermost(nodes, roles, "retriever")
        keep_nodes = _outermost(nodes, roles, "reranker")
        fetch = self._ranking(fetch_nodes, "retriever", trace) if fetch_nodes else None
        keep = self._ranking(keep_nodes[-1:], "reranker", trace) if keep_nodes else None
        for stage, ranking in (("fetch", fetch), ("keep", keep)):
            if ranking is not None:
                self._rank(trace, system, stage, query_id, ranking)
        if answer is None:
            self.imp.problems.append(
                f"trace {trace.id!r} ({self._at(trace)}): no answer at {self.answer.text}; "
                f"not imported as a trace (its retrievals count under query {query_id!r})"
            )
            return
        _utf8(answer, self.path, trace.line, _where(trace.loc, "answer"))
        shown = keep if keep is not None else (fetch or [])
        self.imp.traces.append(
            {
                "id": trace.id,
                "query_id": query_id,
                "system": system,
                "question": question,
                "contexts": [chunk_id for chunk_id, _ in shown],
                "answer": answer,
            }
        )

    def _at(self, trace: _RawTrace) -> str:
        if trace.line is not None:
            return f"line {trace.line}" + (f", {trace.loc}" if trace.loc else "")
        return trace.loc or "record"

    def _system(self, trace: _RawTrace) -> str:
        for kind, spec, _ in self.system.alternatives:
            value = spec if kind == "const" else _lookup(trace.root, spec)
            if isinstance(value, bool) or value is _MISSING or value is None:
                continue
            if isinstance(value, float) and value.is_integer():
                value = str(int(value))  # a version read through a pandas float column
            elif isinstance(value, int | float) and not _is_nan(value):
                value = str(value)
            if isinstance(value, str) and value.strip() and not value.startswith("unknown_service"):
                return value
        return self.spec.system_fallback

    def _query(self, trace: _RawTrace, question: str) -> str:
        if self.query_id is not None:
            value, used = _first(trace.root, self.query_id)
            query_id = _ident(value, self.path, trace.line, trace.loc, used, required=False)
        else:
            query_id = None
        if query_id is None:
            query_id = _hash_id("q_", question)
        stored = self.imp.queries.get(query_id)
        if stored is None:
            self.imp.queries[query_id] = question
            self.query_seen[query_id] = (trace.line, trace.loc or f"trace {trace.id!r}")
        elif stored != question:
            line, loc = self.query_seen[query_id]
            first = f"line {line}" if line is not None else loc
            raise QueryConflict(
                self.path,
                trace.line,
                _where(trace.loc, "query_id"),
                f"query {query_id!r} asks {_short(question)} here and {_short(stored)} at {first}; "
                "expected one question per query id",
            )
        return query_id

    def _rank(
        self,
        trace: _RawTrace,
        system: str,
        stage: str,
        query_id: str,
        ranking: list[tuple[str, float | None]],
    ) -> None:
        run = self.imp.runs.setdefault((system, stage), {})
        if query_id not in run:
            run[query_id] = ranking
            self.ranked_by[(system, stage, query_id)] = trace.id
        elif run[query_id] != ranking:
            first = self.ranked_by[(system, stage, query_id)]
            self.imp.problems.append(
                f"trace {trace.id!r} ({self._at(trace)}): system {system!r} {stage}: query {query_id!r} "
                f"was already ranked differently by trace {first!r}; kept that first ranking"
            )

    # -- documents

    def _ranking(self, nodes: list[_Node], role: str, trace: _RawTrace) -> list[tuple[str, float | None]]:
        # each document comes with a _Loc, made into text only for a message
        ranking: list[tuple[str, float | None]] = []
        for node in nodes:
            for doc, loc in self.spec.docs(node, role, self.documents):
                entry = self._document(doc, node, loc, trace)
                if entry is not None:
                    ranking.append(entry)
        return ranking

    def _document(self, doc: Any, node: _Node, loc: Any, trace: _RawTrace) -> tuple[str, float | None] | None:
        line = node.line
        if isinstance(doc, str):
            doc = {"text": doc, "page_content": doc, "document.content": doc}
        if not isinstance(doc, dict):
            raise InvalidTraceSource(
                self.path,
                line,
                str(loc),
                f"expected a document object, got {json.dumps(doc, default=str)[:60]}",
            )
        value, used = _first(doc, self.chunk_id)
        chunk_id = _ident(value, self.path, line, loc, used, required=False)
        text, used_text = _first(doc, self.chunk_text)
        if text is _MISSING or (isinstance(text, str) and not text.strip()):
            text = None
        elif not isinstance(text, str):
            raise InvalidTraceSource(
                self.path,
                line,
                _where(loc, used_text),
                f"expected the chunk's text (a string), got {json.dumps(text, default=str)[:60]}",
            )
        else:
            _utf8(text, self.path, line, _where(loc, used_text))
        if chunk_id is None:
            if text is None:
                self.imp.problems.append(
                    f"trace {trace.id!r} ({self._at(trace)}): {loc} has neither a chunk id "
                    f"({self.chunk_id.text}) nor a text ({self.chunk_text.text}); left out"
                )
                return None
            chunk_id = _hash_id("c_", text)
        else:
            _utf8(chunk_id, self.path, line, _where(loc, used))
        score, used_score = _first(doc, self.score)
        if score is _MISSING:
            score = None
        elif isinstance(score, bool) or not isinstance(score, int | float):
            raise InvalidTraceSource(
                self.path,
                line,
                _where(loc, used_score),
                f"expected a number (the score), got {json.dumps(score, default=str)[:60]}",
            )
        else:
            score = float(score)
            if math.isinf(score):
                raise InvalidTraceSource(
                    self.path, line, _where(loc, used_score), f"expected a finite score, got {score}"
                )
        self._chunk(chunk_id, text, line, loc)
        return chunk_id, score

    def _chunk(self, chunk_id: str, text: str | None, line: int | None, loc: Any) -> None:
        if chunk_id not in self.chunk_text_of:
            self.chunk_text_of[chunk_id] = text
            self.chunk_seen[chunk_id] = (line, loc)
            return
        stored = self.chunk_text_of[chunk_id]
        if text is None or stored == text:
            return
        if stored is None:
            self.chunk_text_of[chunk_id] = text
            self.chunk_seen[chunk_id] = (line, loc)
            return
        first_line, first_loc = self.chunk_seen[chunk_id]
        first = (f"line {first_line}, " if first_line is not None else "") + str(first_loc)
        raise ChunkConflict(
            self.path,
            line,
            str(loc),
            f"chunk {chunk_id!r} has the text {_short(text)} here and {_short(stored)} at {first}; "
            "expected one text per chunk id",
        )

    def result(self) -> TraceImport:
        self.imp.chunks = [{"id": cid, "text": text} for cid, text in self.chunk_text_of.items()]
        return self.imp


def _short(text: str) -> str:
    return repr(text) if len(text) <= 40 else f"{text[:40]!r}... ({len(text)} characters)"


# ---------------------------------------------------------------- reading files


def _values(path: str, *, lines: bool | None = None) -> list[tuple[Any, int | None, str]]:
    """Top-level JSON values of a file: (value, line or None, location)."""
    if str(path).lower().endswith(".parquet") or _is_parquet(path):
        return [(row, None, f"row {i}") for i, row in enumerate(_parquet_rows(path))]
    text = _read_text(path, InvalidTraceSource)
    if lines is None:
        lines = str(path).lower().endswith((".jsonl", ".ndjson"))
    if not lines:
        try:
            return [(json.loads(text), None, "")]
        except json.JSONDecodeError as exc:
            if exc.msg != "Extra data":
                raise InvalidTraceSource(
                    path,
                    exc.lineno,
                    None,
                    f"not JSON ({exc.msg}, column {exc.colno}); expected a JSON document",
                ) from None
    values = []
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            values.append((json.loads(line), number, ""))
        except json.JSONDecodeError as exc:
            raise InvalidTraceSource(
                path,
                number,
                None,
                f"not JSON ({exc.msg}, column {exc.colno}); expected one JSON value per line",
            ) from None
    if not values:
        raise InvalidTraceSource(path, None, None, "no JSON values; expected spans, observations or runs")
    return values


def _is_parquet(path: str) -> bool:
    try:
        with open(path, "rb") as handle:
            return handle.read(4) == b"PAR1"
    except OSError:
        return False


def _parquet_rows(path: str) -> list[dict[str, Any]]:
    _require_file(path, InvalidTraceSource)
    import pyarrow.parquet as pq

    try:
        table = pq.read_table(path)
    except (pa.ArrowException, OSError) as exc:
        raise InvalidTraceSource(path, None, None, f"not a readable Parquet file ({exc})") from None
    return table.to_pylist()


def _items(value: Any, line: int | None, loc: str) -> Iterable[tuple[Any, int | None, str]]:
    """A list's items with their locations."""
    for i, item in enumerate(value):
        yield item, line, f"{loc}[{i}]" if loc else f"record {i}"


def _frame_records(value: dict[str, Any]) -> list[dict[str, Any]] | None:
    """pandas ``DataFrame.to_json`` in the columns, index or split orient, as records."""
    if isinstance(value.get("columns"), list) and isinstance(value.get("data"), list):
        columns = value["columns"]
        return [dict(zip(columns, row)) for row in value["data"] if isinstance(row, list)]
    if value and all(isinstance(v, dict) for v in value.values()):
        keys = set(value)
        if keys & {"context.span_id", "context.trace_id"}:  # columns orient: {column: {index: value}}
            index: list[str] = []
            for column in value.values():
                for label in column:
                    if label not in index:
                        index.append(label)
            return [{col: cells.get(label) for col, cells in value.items()} for label in index]
        if all("context.span_id" in v or "context" in v for v in value.values()):  # index orient
            return list(value.values())
    return None


# ---------------------------------------------------------------- OpenInference


def _flatten(value: Any, prefix: str, out: dict[str, Any]) -> None:
    """Nested attributes as flat dotted keys; lists of objects by index; a
    ``metadata`` object stays whole (OpenInference keeps it as JSON text)."""
    if value is None or (value.__class__ is float and value != value):  # null or NaN: absent
        return
    if isinstance(value, dict):
        if prefix.endswith("metadata"):
            out[prefix] = value
            return
        for key, item in value.items():
            _flatten(item, f"{prefix}.{key}" if prefix else str(key), out)
    elif isinstance(value, list) and any(isinstance(item, dict) for item in value):
        for i, item in enumerate(value):
            _flatten(item, f"{prefix}.{i}", out)
    else:
        out[prefix] = value


def _otlp_value(value: Any) -> Any:
    """An OTLP AnyValue (camelCase or snake_case) as a plain value."""
    if not isinstance(value, dict):
        return value
    for key in ("stringValue", "string_value", "boolValue", "bool_value", "bytesValue", "bytes_value"):
        if key in value:
            return value[key]
    for key in ("intValue", "int_value"):
        if key in value:
            raw = value[key]
            return int(raw) if isinstance(raw, str) and raw.lstrip("-").isdigit() else raw
    for key in ("doubleValue", "double_value"):
        if key in value:
            raw = value[key]
            return float(raw) if isinstance(raw, str) else raw
    for key in ("arrayValue", "array_value"):
        if key in value:
            return [_otlp_value(v) for v in (value[key] or {}).get("values") or []]
    for key in ("kvlistValue", "kvlist_value"):
        if key in value:
            return {
                kv.get("key"): _otlp_value(kv.get("value")) for kv in (value[key] or {}).get("values") or []
            }
    return None


def _otlp_attributes(items: Any, path: str, line: int | None, loc: str) -> dict[str, Any]:
    if not isinstance(items, list):
        raise InvalidTraceSource(path, line, _where(loc, "attributes"), "expected a list of {key, value}")
    out: dict[str, Any] = {}
    for i, kv in enumerate(items):
        if not isinstance(kv, dict) or not isinstance(kv.get("key"), str):
            raise InvalidTraceSource(
                path, line, f"{_where(loc, 'attributes')}[{i}]", 'expected {"key": "...", "value": {...}}'
            )
        out[kv["key"]] = _otlp_value(kv.get("value"))
    return out


def _oi_span(
    obj: Any, path: str, line: int | None, loc: str, resource: dict[str, Any], index: int
) -> tuple[str, _Node]:
    if not isinstance(obj, dict):
        raise InvalidTraceSource(path, line, loc or None, "expected a span object")
    attrs: dict[str, Any] = {}
    if isinstance(obj.get("attributes"), list):  # OTLP
        trace_id = obj.get("traceId", obj.get("trace_id"))
        span_id = obj.get("spanId", obj.get("span_id"))
        parent = obj.get("parentSpanId", obj.get("parent_span_id"))
        start = obj.get("startTimeUnixNano", obj.get("start_time_unix_nano"))
        attrs = _otlp_attributes(obj["attributes"], path, line, loc)
        kind = None
        names = ("traceId", "spanId")
    else:
        context = obj.get("context") if isinstance(obj.get("context"), dict) else {}
        trace_id = context.get("trace_id", obj.get("context.trace_id"))
        span_id = context.get("span_id", obj.get("context.span_id"))
        parent = obj.get("parent_id")
        start = obj.get("start_time")
        # as given: nested ({"input": {"value": ...}}), flat ({"input.value": ...}) or
        # dataframe columns ("attributes.input.value"); _lookup reads all three
        if isinstance(obj.get("attributes"), dict):
            attrs.update(obj["attributes"])
        for key, value in obj.items():
            if key.startswith("attributes.") and value is not None and not _is_nan(value):
                attrs[key[len("attributes.") :]] = value
        kind = obj.get("span_kind")
        names = ("context.trace_id", "context.span_id")
    trace = _ident(trace_id, path, line, loc, names[0])
    span = _ident(span_id, path, line, loc, names[1])
    parent_id = _ident(parent, path, line, loc, "parent_id", required=False)
    given = _lookup(attrs, ("openinference", "span", "kind"))
    kind = (given if isinstance(given, str) else None) or kind or ""
    name = obj.get("name") if isinstance(obj.get("name"), str) else ""
    record = {
        "name": name,
        "span_kind": kind,
        "context": {"trace_id": trace, "span_id": span},
        "parent_id": parent_id,
        "attributes": attrs,
        "resource": resource,
    }
    node = _Node(span, parent_id, name, str(kind).upper(), _order(start, index), record, loc, line)
    return trace, node


def _oi_spans(path: str) -> list[tuple[str, _Node]]:
    spans: list[tuple[str, _Node]] = []

    def add(obj: Any, line: int | None, loc: str, resource: dict[str, Any] | None = None) -> None:
        spans.append(_oi_span(obj, path, line, loc, resource or {}, len(spans)))

    def visit(value: Any, line: int | None, loc: str) -> None:
        if isinstance(value, list):
            for item, item_line, item_loc in _items(value, line, loc):
                visit(item, item_line, item_loc)
            return
        if not isinstance(value, dict):
            raise InvalidTraceSource(path, line, loc or None, "expected spans (objects)")
        groups = value.get("resourceSpans", value.get("resource_spans"))
        if isinstance(groups, list):
            key = "resourceSpans" if "resourceSpans" in value else "resource_spans"
            for i, group in enumerate(groups):
                group_loc = f"{_where(loc, key)}[{i}]"
                if not isinstance(group, dict):
                    raise InvalidTraceSource(path, line, group_loc, "expected an object")
                res = group.get("resource") if isinstance(group.get("resource"), dict) else {}
                resource = _otlp_attributes(res.get("attributes") or [], path, line, group_loc + ".resource")
                scopes_key = "scopeSpans" if "scopeSpans" in group else "scope_spans"
                if scopes_key not in group and "instrumentationLibrarySpans" in group:
                    scopes_key = "instrumentationLibrarySpans"
                for j, scope in enumerate(group.get(scopes_key) or []):
                    scope_loc = f"{group_loc}.{scopes_key}[{j}]"
                    for k, span in enumerate((scope or {}).get("spans") or []):
                        add(span, line, f"{scope_loc}.spans[{k}]", resource)
            return
        if (
            isinstance(value.get("context"), dict)
            or isinstance(value.get("context.span_id"), str | int)
            or "spanId" in value
            or "span_id" in value
        ):
            add(value, line, loc)  # one span (a dataframe record, a REST span, an OTLP span)
            return
        records = _frame_records(value)
        if records is not None:
            for item, item_line, item_loc in _items(records, line, loc):
                add(item, item_line, item_loc)
            return
        if isinstance(value.get("data"), list) and "context" not in value and "attributes" not in value:
            for item, item_line, item_loc in _items(value["data"], line, _where(loc, "data")):
                add(item, item_line, item_loc)
            return
        if "context" in value or "context.span_id" in value:
            add(value, line, loc)  # a span whose context is malformed: named by the span reader
            return
        raise InvalidTraceSource(
            path,
            line,
            loc or None,
            "not a span; expected Phoenix spans (records with context.span_id), a Phoenix REST page "
            '{"data": [...]} or OTLP JSON {"resourceSpans": [...]}',
        )

    for value, line, loc in _values(path):
        visit(value, line, loc)
    return spans


def _oi_docs(node: _Node, role: str, documents: _Path | None) -> list[tuple[Any, _Loc]]:
    attrs = node.record["attributes"]
    prefixes = (
        ["reranker.output_documents", "retrieval.documents"]
        if role == "reranker"
        else ["retrieval.documents"]
    )
    for prefix in prefixes:
        docs = _indexed(attrs, prefix)
        if docs is not None:
            base = _where(node.loc, f"attributes.{prefix}")
            return [(doc, _Loc(base, i)) for i, doc in docs]
    return []


def _indexed(attrs: dict[str, Any], prefix: str) -> list[tuple[int, Any]] | None:
    """The documents under ``prefix``: a list there (the dataframe column, the
    nested form, a JSON-encoded list), else ``prefix.N.rest`` keys as
    [(N, {rest: value})] by N (REST and OTLP flatten them)."""
    whole = _decode(_lookup(attrs, tuple(prefix.split("."))))
    if isinstance(whole, list):
        return list(enumerate(whole))
    start = prefix + "."
    docs: dict[int, dict[str, Any]] = {}
    for key, value in attrs.items():
        if key.startswith(start):
            index, _, rest = key[len(start) :].partition(".")
            if index.isdigit() and rest:
                docs.setdefault(int(index), {})[rest] = value
    if not docs:
        return None
    return sorted(docs.items())


def _read_openinference(path: str) -> list[_RawTrace]:
    by_trace: dict[str, dict[str, _Node]] = {}
    for trace_id, node in _oi_spans(path):
        by_trace.setdefault(trace_id, {}).setdefault(node.id, node)  # a span seen twice: the first
    traces = []
    for trace_id, nodes_by_id in by_trace.items():
        nodes = list(nodes_by_id.values())
        root = _root(nodes)
        first = min(nodes, key=lambda n: n.order[-1])
        traces.append(_RawTrace(trace_id, nodes, root.record if root else {}, first.loc, first.line))
    return traces


# ---------------------------------------------------------------- Langfuse and LangSmith


_DOC_ID = "id|metadata.id|metadata.chunk_id|metadata.doc_id|node.id_"
_DOC_TEXT = "page_content|pageContent|content|text|node.text"
_DOC_SCORE = "score|metadata.score|metadata.relevance_score|relevance_score"


def _record_docs(node: _Node, role: str, documents: _Path | None) -> list[tuple[Any, _Loc]]:
    """Documents of a Langfuse observation or LangSmith run: a list at the
    documents path (a JSON-encoded list too), or under ``documents``/``nodes``/
    ``output`` of the object found there."""
    if documents is None:
        return []
    value, used = _first(node.record, documents)
    value = _decode(value)
    for _ in range(3):
        if isinstance(value, dict):
            for key in ("documents", "nodes", "source_nodes", "output"):
                if isinstance(_decode(value.get(key)), list):
                    value, used = _decode(value[key]), f"{used}.{key}"
                    break
            else:
                break
    if not isinstance(value, list):
        return []
    base = _where(node.loc, used)
    return [(doc, _Loc(base, i)) for i, doc in enumerate(value)]


def _get(obj: dict[str, Any], *keys: str) -> Any:
    for key in keys:
        if key in obj and obj[key] is not None:
            return obj[key]
    return None


def _langfuse_node(obj: Any, path: str, line: int | None, loc: str, index: int) -> tuple[str | None, _Node]:
    if not isinstance(obj, dict):
        raise InvalidTraceSource(path, line, loc or None, "expected an observation object")
    obs_id = _ident(obj.get("id"), path, line, loc, "id")
    trace_id = _ident(_get(obj, "traceId", "trace_id"), path, line, loc, "traceId", required=False)
    parent = _ident(
        _get(obj, "parentObservationId", "parent_observation_id"),
        path,
        line,
        loc,
        "parentObservationId",
        False,
    )
    kind = _get(obj, "type")
    if not isinstance(kind, str):
        raise InvalidTraceSource(path, line, _where(loc, "type"), "missing; expected the observation type")
    name = obj.get("name") if isinstance(obj.get("name"), str) else ""
    start = _get(obj, "startTime", "start_time")
    return trace_id, _Node(obs_id, parent, name, kind.upper(), _order(start, index), obj, loc, line)


def _read_langfuse(path: str) -> list[_RawTrace]:
    traces: dict[str, dict[str, Any]] = {}  # trace id -> {"record", "nodes", "loc", "line"}
    loose: list[tuple[str | None, _Node]] = []
    count = 0

    def add_trace(obj: dict[str, Any], line: int | None, loc: str) -> None:
        nonlocal count
        trace_id = _ident(obj.get("id"), path, line, loc, "id")
        entry = traces.setdefault(trace_id, {"record": obj, "nodes": {}, "loc": loc, "line": line})
        entry["record"] = entry["record"] or obj
        for item, item_line, item_loc in _items(
            obj.get("observations") or [], line, _where(loc, "observations")
        ):
            owner, node = _langfuse_node(item, path, item_line, item_loc, count)
            count += 1
            entry["nodes"].setdefault(node.id, node)

    def visit(value: Any, line: int | None, loc: str) -> None:
        nonlocal count
        if isinstance(value, list):
            for item, item_line, item_loc in _items(value, line, loc):
                visit(item, item_line, item_loc)
            return
        if not isinstance(value, dict):
            raise InvalidTraceSource(
                path, line, loc or None, "expected a trace, observations or a page of them"
            )
        if isinstance(value.get("observations"), list) or (
            "id" in value and "type" not in value and ("input" in value or "output" in value)
        ):
            add_trace(value, line, loc)  # a trace (a trace row without observations too)
        elif isinstance(value.get("data"), list) and "type" not in value:
            for item, item_line, item_loc in _items(value["data"], line, _where(loc, "data")):
                visit(item, item_line, item_loc)
        elif "type" in value and "id" in value:
            loose.append(_langfuse_node(value, path, line, loc, count))
            count += 1
        else:
            raise InvalidTraceSource(
                path,
                line,
                loc or None,
                'expected a Langfuse trace {"id", "observations": [...]}, an observation '
                '{"id", "traceId", "type", ...} or a page {"data": [...], "meta": {...}}',
            )

    for value, line, loc in _values(path):
        visit(value, line, loc)
    for trace_id, node in loose:
        if trace_id is None:
            raise InvalidTraceSource(
                path, node.line, _where(node.loc, "traceId"), "missing; expected the observation's trace id"
            )
        entry = traces.setdefault(trace_id, {"record": None, "nodes": {}, "loc": node.loc, "line": node.line})
        entry["nodes"].setdefault(node.id, node)
    out = []
    for trace_id, entry in traces.items():
        nodes = list(entry["nodes"].values())
        root_node = _root(nodes)
        root_obs = root_node.record if root_node else {}
        base = entry["record"] if entry["record"] is not None else root_obs
        out.append(
            _RawTrace(trace_id, nodes, {**base, "root_observation": root_obs}, entry["loc"], entry["line"])
        )
    return out


def _read_langsmith(path: str) -> list[_RawTrace]:
    runs: list[tuple[dict[str, Any], _Node]] = []

    def add(obj: Any, line: int | None, loc: str) -> None:
        if not isinstance(obj, dict):
            raise InvalidTraceSource(path, line, loc or None, "expected a run object")
        run_id = _ident(obj.get("id"), path, line, loc, "id")
        parent = _ident(obj.get("parent_run_id"), path, line, loc, "parent_run_id", required=False)
        run_type = obj.get("run_type")
        if not isinstance(run_type, str):
            raise InvalidTraceSource(path, line, _where(loc, "run_type"), "missing; expected the run type")
        name = obj.get("name") if isinstance(obj.get("name"), str) else ""
        start = obj.get("dotted_order") or obj.get("start_time")
        node = _Node(run_id, parent, name, run_type.upper(), _order(start, len(runs)), obj, loc, line)
        runs.append((obj, node))

    def visit(value: Any, line: int | None, loc: str) -> None:
        if isinstance(value, list):
            for item, item_line, item_loc in _items(value, line, loc):
                visit(item, item_line, item_loc)
        elif isinstance(value, dict) and isinstance(value.get("runs"), list) and "run_type" not in value:
            for item, item_line, item_loc in _items(value["runs"], line, _where(loc, "runs")):
                add(item, item_line, item_loc)
        elif isinstance(value, dict) and "run_type" in value:
            add(value, line, loc)
        else:
            raise InvalidTraceSource(
                path, line, loc or None, 'expected LangSmith runs {"id", "run_type", "trace_id", ...}'
            )

    for value, line, loc in _values(path):
        visit(value, line, loc)
    parents = {node.id: node.parent for _, node in runs}

    def trace_of(obj: dict[str, Any], node: _Node) -> str:
        given = _ident(obj.get("trace_id"), path, node.line, node.loc, "trace_id", required=False)
        if given:
            return given
        current, seen = node.id, set()
        while parents.get(current) and current not in seen:
            seen.add(current)
            current = parents[current]
        return current

    by_trace: dict[str, dict[str, _Node]] = {}
    for obj, node in runs:
        by_trace.setdefault(trace_of(obj, node), {}).setdefault(node.id, node)
    out = []
    for trace_id, nodes_by_id in by_trace.items():
        nodes = list(nodes_by_id.values())
        root = _root(nodes)
        first = min(nodes, key=lambda n: n.order[-1])
        out.append(_RawTrace(trace_id, nodes, root.record if root else {}, first.loc, first.line))
    return out


# ---------------------------------------------------------------- the product's JSONL


def _read_jsonl(path: str) -> TraceImport:
    from annotation.formats import read_traces

    traces = read_traces(path)
    imp = TraceImport(source="jsonl", path=path, traces=traces)
    first: dict[str, str] = {}
    for trace in traces:
        stored = imp.queries.setdefault(trace["query_id"], trace["question"])
        first.setdefault(trace["query_id"], trace["id"])
        if stored != trace["question"]:
            raise QueryConflict(
                path,
                None,
                f"trace {trace['id']!r}.question",
                f"query {trace['query_id']!r} asks {_short(trace['question'])} here and {_short(stored)} "
                f"in trace {first[trace['query_id']]!r}; expected one question per query id",
            )
    return imp


# ---------------------------------------------------------------- entry points


_SPECS = {
    "openinference": _Spec(
        question="attributes.input.value",
        answer="attributes.output.value",
        system="resource.service.name|resource.openinference.project.name|attributes.metadata.version",
        system_fallback="openinference",
        chunk_id="document.id",
        chunk_text="document.content",
        score="document.score",
        documents=None,
        docs=_oi_docs,
    ),
    "langfuse": _Spec(
        question="input|root_observation.input",
        answer="output|root_observation.output",
        system="version|release|root_observation.version",
        system_fallback="langfuse",
        chunk_id=_DOC_ID,
        chunk_text=_DOC_TEXT,
        score=_DOC_SCORE,
        documents="output",
        docs=_record_docs,
    ),
    "langsmith": _Spec(
        question="inputs",
        answer="outputs",
        system="extra.metadata.ls_version|extra.metadata.revision_id",
        system_fallback="langsmith",
        chunk_id=_DOC_ID,
        chunk_text=_DOC_TEXT,
        score=_DOC_SCORE,
        documents="outputs.documents|outputs.output|outputs",
        docs=_record_docs,
    ),
}
_READERS: dict[str, Callable[[str], list[_RawTrace]]] = {
    "openinference": _read_openinference,
    "langfuse": _read_langfuse,
    "langsmith": _read_langsmith,
}


def read_trace_source(
    path: str | os.PathLike,
    source: str,
    mapping: Mapping[str, str] | Iterable[str] | None = None,
) -> TraceImport:
    """Read one export of ``source`` (one of :data:`SOURCES`); see the module
    docstring for what each source reads and the mapping keys. Raises
    :class:`InvalidTraceSource` (or :class:`ChunkConflict`, :class:`QueryConflict`)."""
    path = str(path)
    if source not in SOURCES:
        raise InvalidTraceSource(path, None, "source", f"{source!r}; expected one of {', '.join(SOURCES)}")
    mapping = parse_mapping(mapping)
    if source == "jsonl":
        if mapping:
            raise InvalidTraceSource(
                "--map",
                None,
                None,
                "the jsonl source has fixed fields; a mapping applies to the other sources",
            )
        return _read_jsonl(path)
    if "documents" in mapping and source == "openinference":
        raise InvalidTraceSource(
            "--map",
            None,
            "documents",
            "openinference documents are retrieval.documents / reranker.output_documents; "
            "documents applies to langfuse and langsmith",
        )
    _require_file(path, InvalidTraceSource)
    raw = _READERS[source](path)
    if not raw:
        raise InvalidTraceSource(
            path, None, None, "no traces; expected at least one span, observation or run"
        )
    builder = _Builder(source, path, _SPECS[source], mapping)
    for trace in raw:
        builder.add(trace)
    return builder.result()


def _run(rankings: dict[str, list[tuple[str, float | None]]], name: str) -> tuple[Run, int]:
    """A store Run that keeps each ranking's order: the source's scores where they
    strictly fall with rank, else scores n..1 (the store orders by score, ties by
    chunk id). Returns the run and how many rankings got positional scores."""
    q: list[str] = []
    d: list[str] = []
    s: list[float] = []
    positional = 0
    empty = []
    for query_id, ranking in rankings.items():
        if not ranking:
            empty.append(query_id)
            continue
        scores = [score for _, score in ranking]
        if all(x is not None for x in scores) and all(a > b for a, b in zip(scores, scores[1:])):
            use = [float(x) for x in scores]  # type: ignore[arg-type]
        else:
            use = [float(len(ranking) - i) for i in range(len(ranking))]
            positional += 1
        q.extend([query_id] * len(ranking))
        d.extend(chunk_id for chunk_id, _ in ranking)
        s.extend(use)
    table = pa.table(
        {"q": pa.array(q, pa.string()), "d": pa.array(d, pa.string()), "s": pa.array(s, pa.float64())}
    )
    return Run(table=table, name=name, empty_queries=empty), positional


def to_store(store: Store, imp: TraceImport, run_prefix: str = "") -> dict[str, int]:
    """Write a :class:`TraceImport` in one ``store.write()`` transaction: queries,
    chunks, one run per (system, stage) named ``{run_prefix}{system}:{stage}``,
    traces. All of it lands or none; the same import again changes nothing. A
    run name already stored with other rankings is refused (ImportConflict):
    give a ``run_prefix`` for a later export of the same systems.

    Returns what was added (queries, chunks, runs, rankings rows, traces), how
    many rows were already stored as they are (``unchanged``: queries, chunks,
    ranking rows and traces together), and how many rankings were stored with
    scores n..1 (``positional``) because the source's scores were missing, tied
    or not falling with rank (distances), so that the stored order is the rank."""
    counts = dict.fromkeys(("queries", "chunks", "runs", "rankings", "traces", "unchanged", "positional"), 0)
    with store.write():
        if imp.queries:
            result = store.import_queries(imp.queries)
            counts["queries"] += result["added"] + result["filled"]
            counts["unchanged"] += result["unchanged"]
        if imp.chunks:
            result = store.import_corpus(imp.chunks)
            counts["chunks"] += result["added"] + result["filled"]
            counts["unchanged"] += result["unchanged"]
        for (system, stage), rankings in sorted(imp.runs.items()):
            name = f"{run_prefix}{system}:{stage}"
            run, positional = _run(rankings, name)
            run.path = imp.path
            result = store.import_run(run, name, stage)
            counts["runs"] += result["runs"]
            counts["rankings"] += result["rankings"]
            counts["unchanged"] += result["unchanged"]
            counts["positional"] += positional
        if imp.traces:
            result = store.import_traces(imp.traces)
            counts["traces"] += result["traces"]
            counts["unchanged"] += result["unchanged"]
    return counts


# ---------------------------------------------------------------- synthetic data


def synthetic_openinference(
    n_traces: int,
    path: str | os.PathLike,
    *,
    form: str = "jsonl",
    fetch: int = 10,
    keep: int = 3,
    corpus: int = 2000,
    seed: int = 0,
) -> Path:
    """Write ``n_traces`` synthetic RAG traces as OpenInference spans (for
    benchmarks): per trace a CHAIN root (question, answer), a RETRIEVER with
    ``fetch`` documents, a RERANKER keeping ``keep`` and an LLM span. Two
    systems (``rag-a``, ``rag-b``) answer each question, so there are
    ``n_traces / 2`` queries. ``form``: ``jsonl`` (Phoenix dataframe records,
    one per line, documents as the ``attributes.retrieval.documents`` column,
    system in ``attributes.metadata``), ``parquet`` (the same records as
    pandas writes them) or ``otlp`` (OTLP JSON lines, system as
    ``service.name``). Deterministic for a seed."""
    rng = random.Random(seed)
    systems = ("rag-a", "rag-b")
    texts = [
        f"Passage {k} about topic {k % 97}: " + " ".join(f"w{(k * 7 + j) % 503}" for j in range(30))
        for k in range(corpus)
    ]
    records: list[dict[str, Any]] = []
    otlp: dict[str, list[dict[str, Any]]] = {s: [] for s in systems}
    base = 1_700_000_000_000_000_000
    for t in range(n_traces):
        system = systems[t % 2]
        question = f"Question {t // 2}: what does topic {(t // 2) % 97} say about w{(t // 2) % 503}?"
        picked = rng.sample(range(corpus), fetch)
        docs = [
            {
                "document.id": f"doc-{k}",
                "document.content": texts[k],
                "document.score": round(1.0 - i / (fetch + 1), 6),
            }
            for i, k in enumerate(picked)
        ]
        kept = sorted(docs[: keep + 2], key=lambda d: rng.random())[:keep]
        kept = [{**d, "document.score": round(0.99 - i * 0.1, 6)} for i, d in enumerate(kept)]
        answer = f"Answer {t}: " + kept[0]["document.content"][:80]
        trace_id = f"{t:032x}"
        span_ids = [f"{t:012x}{k:04x}" for k in range(4)]
        start = base + t * 10_000_000
        spans = [
            ("rag.query", "CHAIN", None, {"input.value": question, "output.value": answer}),
            ("retrieve", "RETRIEVER", span_ids[0], {"input.value": question, "retrieval.documents": docs}),
            (
                "rerank",
                "RERANKER",
                span_ids[0],
                {
                    "reranker.query": question,
                    "reranker.input_documents": docs,
                    "reranker.output_documents": kept,
                },
            ),
            ("llm", "LLM", span_ids[0], {"input.value": question, "output.value": answer}),
        ]
        for k, (name, kind, parent, attrs) in enumerate(spans):
            if form == "otlp":
                flat: dict[str, Any] = {}
                _flatten(attrs, "", flat)
                flat["openinference.span.kind"] = kind
                otlp[system].append(
                    {
                        "traceId": trace_id,
                        "spanId": span_ids[k],
                        "parentSpanId": parent or "",
                        "name": name,
                        "kind": 1,
                        "startTimeUnixNano": str(start + k * 1000),
                        "endTimeUnixNano": str(start + k * 1000 + 500),
                        "attributes": [{"key": key, "value": _otlp_any(v)} for key, v in flat.items()],
                    }
                )
                continue
            record: dict[str, Any] = {
                "name": name,
                "span_kind": kind,
                "parent_id": parent,
                "start_time": (start + k * 1000) // 1_000_000,
                "end_time": (start + k * 1000 + 500) // 1_000_000,
                "status_code": "OK",
                "context.span_id": span_ids[k],
                "context.trace_id": trace_id,
                "attributes.openinference.span.kind": kind,
            }
            for key, value in attrs.items():
                record[f"attributes.{key}"] = value
            if k == 0:
                record["attributes.metadata"] = {"version": system}
            records.append(record)
    target = Path(path)
    if form == "otlp":
        with target.open("w", encoding="utf-8") as out:
            for system, spans_of in otlp.items():
                resource = {"attributes": [{"key": "service.name", "value": {"stringValue": system}}]}
                export = {"resourceSpans": [{"resource": resource, "scopeSpans": [{"spans": spans_of}]}]}
                out.write(json.dumps(export) + "\n")
    elif form == "parquet":
        import pandas as pd

        pd.DataFrame.from_records(records).to_parquet(target)
    elif form == "jsonl":
        with target.open("w", encoding="utf-8") as out:
            for record in records:
                out.write(json.dumps(record, default=_json_default) + "\n")
    else:
        raise ValueError(f"form {form!r}; expected jsonl, parquet or otlp")
    return target


def _otlp_any(value: Any) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, float):
        return {"doubleValue": value}
    return {"stringValue": str(value)}


def _json_default(value: Any) -> Any:
    if isinstance(value, datetime | date):
        return value.isoformat()
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")
