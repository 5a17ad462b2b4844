"""Parsed traces into what the store holds: :class:`Builder` turns each
:class:`RawTrace` of one export into queries, chunks, one ranking per
(system, stage) and traces, collected in a :class:`TraceImport`.

Stages: ``fetch`` is the documents of a trace's outermost retrievers in start
order, ``keep`` the output of its last outermost reranker; a trace's contexts
are its keep chunks if it has a reranker, else its fetch chunks. A chunk
without an id gets ``c_`` + sha256(text)[:16], a question without a query id
``q_`` + sha256(question)[:16]. A trace without a question or an answer, a
document with neither id nor text, and a second different ranking of a query
by one system and stage are listed in ``TraceImport.problems``, not errors.
Errors: :class:`InvalidTraceSource` (bad ids, texts, scores),
:class:`ChunkConflict`, :class:`QueryConflict`.
"""

from __future__ import annotations

import hashlib
import json
import math
from typing import Any

from annotation.traces.base import (
    MISSING,
    ChunkConflict,
    InvalidTraceSource,
    Node,
    QueryConflict,
    RawTrace,
    TraceImport,
    ident,
    is_nan,
    short,
    utf8,
    where,
)
from annotation.traces.mapping import Spec, field_path, first_of, lookup, mapped_names

_QUESTION_KEYS = ("question", "query", "input", "query_str", "user_input", "prompt", "text", "content")
_ANSWER_KEYS = ("answer", "output", "response", "result", "completion", "generation", "text", "content")
_RERANK_WORDS = ("rerank", "compression")


class Builder:
    """Collects queries, chunks, runs and traces over the traces of one file:
    :meth:`add` each parsed trace, then :meth:`result`."""

    def __init__(self, source: str, path: str, spec: Spec, mapping: dict[str, str]) -> None:
        self.path = path
        self.spec = spec
        self.imp = TraceImport(source=source, path=path)
        self.question = field_path(mapping.get("question", spec.question))
        self.answer = field_path(mapping.get("answer", spec.answer))
        self.system = field_path(mapping.get("system", spec.system))
        self.query_id = field_path(mapping["query_id"]) if "query_id" in mapping else None
        self.chunk_id = field_path(mapping.get("chunk_id", spec.chunk_id))
        self.chunk_text = field_path(mapping.get("chunk_text", spec.chunk_text))
        self.score = field_path(mapping.get("score", spec.score))
        documents = mapping.get("documents", spec.documents)
        self.documents = field_path(documents) if documents else None
        self.retrievers = mapped_names(mapping, "retriever")
        self.rerankers = mapped_names(mapping, "reranker")
        self.chunk_text_of: dict[str, str | None] = {}
        self.chunk_seen: dict[str, tuple[int | None, str]] = {}
        self.query_seen: dict[str, tuple[int | None, str]] = {}
        self.ranked_by: dict[tuple[str, str, str], str] = {}

    # -- one trace

    def add(self, trace: RawTrace) -> None:
        nodes = sorted(trace.nodes, key=lambda n: n.order)
        roles = {n.id: _role(n, self.retrievers, self.rerankers) for n in nodes}
        question = _text(first_of(trace.root, self.question)[0], _QUESTION_KEYS)
        answer = _text(first_of(trace.root, self.answer)[0], _ANSWER_KEYS)
        system = self._system(trace)
        if question is None:
            self.imp.problems.append(
                f"trace {trace.id!r} ({self._at(trace)}): no question at {self.question.text}; "
                "not imported, and its retrievals are not counted (no query to file them under); "
                "give --map question=PATH"
            )
            return
        utf8(question, self.path, trace.line, where(trace.loc, "question"))
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
        utf8(answer, self.path, trace.line, where(trace.loc, "answer"))
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

    def _at(self, trace: RawTrace) -> str:
        if trace.line is not None:
            return f"line {trace.line}" + (f", {trace.loc}" if trace.loc else "")
        return trace.loc or "record"

    def _system(self, trace: RawTrace) -> str:
        for kind, spec, _ in self.system.alternatives:
            value = spec if kind == "const" else lookup(trace.root, spec)
            if isinstance(value, bool) or value is MISSING or value is None:
                continue
            if isinstance(value, float) and value.is_integer():
                value = str(int(value))  # a version read through a pandas float column
            elif isinstance(value, int | float) and not is_nan(value):
                value = str(value)
            if isinstance(value, str) and value.strip() and not value.startswith("unknown_service"):
                return value
        return self.spec.system_fallback

    def _query(self, trace: RawTrace, question: str) -> str:
        if self.query_id is not None:
            value, used = first_of(trace.root, self.query_id)
            query_id = ident(value, self.path, trace.line, trace.loc, used, required=False)
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
                where(trace.loc, "query_id"),
                f"query {query_id!r} asks {short(question)} here and {short(stored)} at {first}; "
                "expected one question per query id",
            )
        return query_id

    def _rank(
        self,
        trace: RawTrace,
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

    def _ranking(self, nodes: list[Node], role: str, trace: RawTrace) -> list[tuple[str, float | None]]:
        # each document comes with a Loc, made into text only for a message
        ranking: list[tuple[str, float | None]] = []
        for node in nodes:
            for doc, loc in self.spec.docs(node, role, self.documents):
                entry = self._document(doc, node, loc, trace)
                if entry is not None:
                    ranking.append(entry)
        return ranking

    def _document(self, doc: Any, node: Node, loc: Any, trace: RawTrace) -> tuple[str, float | None] | None:
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
        value, used = first_of(doc, self.chunk_id)
        chunk_id = ident(value, self.path, line, loc, used, required=False)
        text, used_text = first_of(doc, self.chunk_text)
        if text is MISSING or (isinstance(text, str) and not text.strip()):
            text = None
        elif not isinstance(text, str):
            raise InvalidTraceSource(
                self.path,
                line,
                where(loc, used_text),
                f"expected the chunk's text (a string), got {json.dumps(text, default=str)[:60]}",
            )
        else:
            utf8(text, self.path, line, where(loc, used_text))
        if chunk_id is None:
            if text is None:
                self.imp.problems.append(
                    f"trace {trace.id!r} ({self._at(trace)}): {loc} has neither a chunk id "
                    f"({self.chunk_id.text}) nor a text ({self.chunk_text.text}); left out"
                )
                return None
            chunk_id = _hash_id("c_", text)
        else:
            utf8(chunk_id, self.path, line, where(loc, used))
        score, used_score = first_of(doc, self.score)
        if score is MISSING:
            score = None
        elif isinstance(score, bool) or not isinstance(score, int | float):
            raise InvalidTraceSource(
                self.path,
                line,
                where(loc, used_score),
                f"expected a number (the score), got {json.dumps(score, default=str)[:60]}",
            )
        else:
            score = float(score)
            if math.isinf(score):
                raise InvalidTraceSource(
                    self.path, line, where(loc, used_score), f"expected a finite score, got {score}"
                )
        self._chunk(chunk_id, text, line, loc)
        return chunk_id, score

    def _chunk(self, chunk_id: str, text: str | None, line: int | None, loc: Any) -> None:
        stored = self.chunk_text_of.get(chunk_id, MISSING)
        if stored is MISSING or (stored is None and text is not None):  # new, or a text at last
            self.chunk_text_of[chunk_id] = text
            self.chunk_seen[chunk_id] = (line, loc)
            return
        if text is None or stored == text:
            return
        assert isinstance(stored, str)  # stored and not None: a None met a text above
        first_line, first_loc = self.chunk_seen[chunk_id]
        first = (f"line {first_line}, " if first_line is not None else "") + str(first_loc)
        raise ChunkConflict(
            self.path,
            line,
            str(loc),
            f"chunk {chunk_id!r} has the text {short(text)} here and {short(stored)} at {first}; "
            "expected one text per chunk id",
        )

    def result(self) -> TraceImport:
        self.imp.chunks = [{"id": cid, "text": text} for cid, text in self.chunk_text_of.items()]
        return self.imp


def _role(node: Node, retrievers: set[str] | None, rerankers: set[str] | None) -> str:
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


def _outermost(nodes: list[Node], roles: dict[str, str], role: str) -> list[Node]:
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


def _text(value: Any, keys: tuple[str, ...], depth: int = 0) -> str | None:
    """A question or answer as text: a string (a JSON-encoded object or string is
    opened), or the text under the first of ``keys`` in an object, or the only
    value of a one-key object. None when there is no text."""
    if value is MISSING or value is None or depth > 4:
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
