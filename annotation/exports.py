"""The store's labels in the formats other evaluation tools read: RAGAS, DeepEval,
BEIR, TREC and Arize Phoenix.

Each ``export_<format>(store, path, threshold=1, annotator=None, aggregate="median")``
writes atomically and returns one line saying what was written and what the
format cannot hold; :data:`EXPORTS` maps each format's name to its function.
A file is written to a temporary file and renamed; a folder (BEIR, TREC) is
built beside the target and swapped in by two renames, so a reader sees the
old export or the new one (for an instant between the renames, none), never
a mix; an existing folder is replaced only if it holds nothing but files the
export writes again.

Common arguments:

threshold  the lowest grade that counts as relevant (1-3, default 1, like
           trec_eval's ``-l``). Binary formats (RAGAS's and DeepEval's
           reference contexts, Phoenix's label) apply it; graded formats
           (BEIR, TREC qrels) keep every grade 0-3 and the summary says how
           to pass the threshold to their evaluators.
annotator  one person's current labels; default: every annotator's, one
           grade per (query, chunk) by ``aggregate`` (median, majority or
           mean), exactly as :meth:`Store.export_qrels` gives them.

Every export records its threshold and who labelled: in the file's metadata
where the format has a place for it (DeepEval's ``additional_metadata``,
Phoenix's ``metadata`` and ``explanation``), else in the summary line.

A trace's ``contexts`` are chunk ids or texts (``python -m annotation import
--traces``): a chunk id takes the chunk's text; a text takes the id of the
stored chunk with exactly that text; a text that matches no chunk keeps the
id ``<trace id>#<position>``, which no label can match (it counts as
unjudged, and the summary says how many there were).
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from annotation.formats import FormatError, InvalidQrels, InvalidRun, write_atomic
from annotation.rubrics import RELEVANCE
from annotation.store import AGGREGATES, Store, StoreError, aggregate_grades
from annotation.textio import check_trec_id

__all__ = [
    "EXPORTS",
    "NothingToExport",
    "export_ragas",
    "export_deepeval",
    "export_beir",
    "export_trec",
    "export_phoenix",
    "BEIR_QRELS_HEADER",
    "PHOENIX_COLUMNS",
]

PathLike = str | os.PathLike
BEIR_QRELS_HEADER = "query-id\tcorpus-id\tscore"
# the columns of Phoenix's document-annotation dataframe
# (Client().spans.log_document_annotations_dataframe); JSONL adds "metadata"
PHOENIX_COLUMNS = ("span_id", "document_position", "name", "annotator_kind", "label", "score", "explanation")
PHOENIX_LABELS = ("relevant", "unrelated")  # the rails of Phoenix's own relevance evaluator
_SPAN_ID = re.compile(r"[0-9a-f]{16}")  # an OpenTelemetry span id: 8 bytes, lower-case hex


class NothingToExport(StoreError):
    """Nothing in the store that this format could hold."""


# ---------------------------------------------------------------- shared pieces


def has_space(value: str) -> bool:
    return any(ch in value for ch in " \t\n\r\f\v")


@dataclass
class _Judged:
    """Current grades per (query, chunk), who gave them, and the threshold."""

    grades: dict[str, dict[str, int]]
    names: dict[tuple[str, str], list[str]]  # (query, chunk) -> who graded it
    who: list[str]  # everyone whose labels are in the export
    threshold: int
    annotator: str | None
    aggregate: str

    @property
    def count(self) -> int:
        return sum(len(docs) for docs in self.grades.values())

    def grade(self, qid: str, chunk: str | None) -> int | None:
        return None if chunk is None else self.grades.get(qid, {}).get(chunk)

    def relevant(self, qid: str) -> list[str]:
        """Chunks of the query graded >= threshold: highest grade first, then in label order."""
        docs = self.grades.get(qid, {})
        ranked = sorted(docs.items(), key=lambda kv: -kv[1])  # stable: ties keep label order
        return [doc for doc, grade in ranked if grade >= self.threshold]

    def source(self, pair: tuple[str, str] | None = None) -> str:
        """Who graded (one pair, or the whole export), in words."""
        names = self.names.get(pair, []) if pair else self.who
        if self.annotator:
            return f"{self.annotator}'s label" if pair else f"{self.annotator}'s current labels"
        if len(names) == 1:
            return f"{names[0]}'s label" if pair else f"the current labels of {names[0]}"
        return (
            f"the {self.aggregate} of {', '.join(names)}"
            if pair
            else (f"the {self.aggregate} grade over {len(names)} annotators ({', '.join(names)})")
        )

    def meta(self) -> dict[str, Any]:
        return {
            "relevance_threshold": self.threshold,
            "judged_by": list(self.who),
            "aggregate": None if self.annotator else self.aggregate,
            "grade_scale": {str(g): text for g, text in RELEVANCE.scale.items()},
        }


def _check_args(store: Store, threshold: int, annotator: str | None, aggregate: str) -> None:
    if isinstance(threshold, bool) or not isinstance(threshold, int) or not 1 <= threshold <= 3:
        raise StoreError(
            f"relevance threshold {threshold!r}; expected the lowest relevant grade, 1, 2 or 3 "
            "(0 is 'irrelevant' on the 0-3 scale)"
        )
    if aggregate not in AGGREGATES:
        raise StoreError(f"aggregate {aggregate!r}; expected one of {', '.join(AGGREGATES)}")
    if annotator:
        store.annotator_id(annotator, create=False)  # StoreError: no annotator named ...


def _judged(store: Store, threshold: int, annotator: str | None, aggregate: str) -> _Judged:
    """The current human relevance grades (Store.export_qrels) and who gave each."""
    _check_args(store, threshold, annotator, aggregate)
    qrels = store.export_qrels(annotator, aggregate)
    if not qrels.grades:
        raise NothingToExport(
            "no current relevance labels to export" + (f" by {annotator!r}" if annotator else "")
        )
    names: dict[tuple[str, str], list[str]] = {}
    for label in store.current_labels(annotator):
        names.setdefault((label["query_id"], label["chunk_id"]), []).append(label["annotator"])
    who = sorted({name for group in names.values() for name in group})
    return _Judged(qrels.grades, names, who, threshold, annotator, aggregate)


@dataclass
class _Context:
    chunk_id: str | None  # None: a text that matches no stored chunk
    text: str | None  # None: a chunk stored without text
    id: str  # the chunk id, or <trace id>#<position>


@dataclass
class _Trace:
    id: str
    query_id: str
    system: str
    question: str
    answer: str
    contexts: list[_Context]
    meta: dict[str, Any] = field(default_factory=dict)


def _traces(store: Store) -> list[_Trace]:
    """Every stored trace in import order, its contexts resolved to (chunk id, text)."""
    rows = store.traces_in_import_order()
    if not rows:
        raise NothingToExport("no traces to export; import some with python -m annotation import --traces")
    raw = [(row, json.loads(row[4] or "[]")) for row in rows]
    wanted = sorted({c for _, contexts in raw for c in contexts})
    texts = store.chunk_texts(wanted)
    by_text: dict[str, str] = {}
    unknown = {c for c in wanted if c not in texts}
    if unknown:  # contexts given as texts: one pass over the chunks finds their ids
        for chunk_id, text in store.chunks_with_text().items():
            if text in unknown and text not in by_text:
                by_text[text] = chunk_id
    traces = []
    for row, contexts in raw:
        resolved = []
        for position, context in enumerate(contexts):
            if context in texts:
                resolved.append(_Context(context, texts[context], context))
            elif context in by_text:
                resolved.append(_Context(by_text[context], context, by_text[context]))
            else:
                resolved.append(_Context(None, context, f"{row[0]}#{position}"))
        meta = {}
        if row[6]:
            try:
                loaded = json.loads(row[6])
            except ValueError:
                loaded = None
            meta = loaded if isinstance(loaded, dict) else {}
        traces.append(_Trace(row[0], row[1], row[2], row[3], row[5], resolved, meta))
    return traces


def _jsonl_record(obj: Any) -> str:
    """One JSON object per line, UTF-8 as is; the characters some readers take
    for line ends (U+2028, U+2029, NEL) escaped, so each object stays on its line."""
    text = json.dumps(obj, ensure_ascii=False)
    for char in ("\u2028", "\u2029", "\x85"):
        text = text.replace(char, f"\\u{ord(char):04x}")
    return text + "\n"


@dataclass
class _TraceCounts:
    """What the trace formats leave out or cannot tell, counted over the exported traces."""

    traces: int = 0
    relevant: set[tuple[str, str]] = field(default_factory=set)  # (query, chunk) graded >= t
    below: set[tuple[str, str]] = field(default_factory=set)  # judged, < t
    unjudged_queries: int = 0  # traces whose query has no judgment
    none_relevant: int = 0  # traces whose query is judged, nothing >= t
    unjudged_contexts: int = 0  # shown contexts without a grade
    unmatched_texts: int = 0  # contexts that are texts of no stored chunk
    no_text: int = 0  # contexts or reference chunks stored without text

    def add(self, trace: _Trace, judged: _Judged) -> None:
        self.traces += 1
        docs = judged.grades.get(trace.query_id, {})
        for doc, grade in docs.items():
            (self.relevant if grade >= judged.threshold else self.below).add((trace.query_id, doc))
        if not docs:
            self.unjudged_queries += 1
        elif not judged.relevant(trace.query_id):
            self.none_relevant += 1
        for context in trace.contexts:
            if judged.grade(trace.query_id, context.chunk_id) is None:
                self.unjudged_contexts += 1
            if context.chunk_id is None:
                self.unmatched_texts += 1
            if context.text is None:
                self.no_text += 1

    def clauses(self, threshold: int, empty: str) -> list[str]:
        out = []
        if self.none_relevant:
            out.append(f"{self.none_relevant} traces' queries have no chunk graded >= {threshold} ({empty})")
        if self.unjudged_queries:
            out.append(f"{self.unjudged_queries} traces' queries have no judgment at all")
        if self.unjudged_contexts:
            out.append(f"{self.unjudged_contexts} shown contexts are unjudged (count as not relevant)")
        if self.unmatched_texts:
            out.append(
                f"{self.unmatched_texts} contexts are texts of no stored chunk "
                "(id <trace id>#<position>, which no label matches)"
            )
        if self.no_text:
            out.append(f"{self.no_text} contexts or reference chunks have no stored text (written as '')")
        return out


# ---------------------------------------------------------------- RAGAS


def export_ragas(
    store: Store, path: PathLike, threshold: int = 1, annotator: str | None = None, aggregate: str = "median"
) -> str:
    """RAGAS single-turn samples, JSONL, one per stored trace, in import order.

    Each line is a ``ragas.SingleTurnSample`` (load with
    ``ragas.EvaluationDataset.from_jsonl(path)``): ``user_input`` (the
    question), ``retrieved_contexts`` (texts of the contexts shown, in order)
    and ``retrieved_context_ids`` (their chunk ids), ``response`` (the
    answer), ``reference_context_ids`` (the query's chunks graded >=
    threshold, highest grade first) and ``reference_contexts`` (their texts).
    Lists are JSON lists. A query with no chunk graded >= threshold gets
    empty reference lists: RAGAS's ID-based context recall is then NaN
    (undefined), never 0. RAGAS samples have no metadata field: the grades,
    the threshold and who labelled are only in the returned summary line.
    """
    judged = _judged(store, threshold, annotator, aggregate)
    traces = _traces(store)
    texts = store.chunk_texts(d for t in traces for d in judged.relevant(t.query_id))
    counts = _TraceCounts()
    lines = []
    for trace in traces:
        counts.add(trace, judged)
        reference = judged.relevant(trace.query_id)
        counts.no_text += sum(texts.get(doc) is None for doc in reference)
        sample = {
            "user_input": trace.question,
            "retrieved_contexts": [c.text or "" for c in trace.contexts],
            "retrieved_context_ids": [c.id for c in trace.contexts],
            "response": trace.answer,
            "reference_context_ids": reference,
            "reference_contexts": [texts.get(doc) or "" for doc in reference],
        }
        lines.append(_jsonl_record(sample))
    write_atomic(path, "".join(lines))
    t = threshold
    parts = [
        f"wrote {counts.traces} RAGAS single-turn samples (one per trace) to {path}, "
        f"relevance from {judged.source()}, threshold {t}",
        f"RAGAS has no graded relevance: only the {len(counts.relevant)} chunks graded >= {t} are listed "
        f"as reference context ids, the {len(counts.below)} judged below {t} and every grade are left out",
        *counts.clauses(t, "empty reference ids: RAGAS's ID-based recall is NaN, undefined"),
        "the threshold and who labelled are not in the file (a RAGAS sample has no metadata field)",
    ]
    return "; ".join(parts)


# ---------------------------------------------------------------- DeepEval


def export_deepeval(
    store: Store, path: PathLike, threshold: int = 1, annotator: str | None = None, aggregate: str = "median"
) -> str:
    """DeepEval goldens, one JSON list, one golden per stored trace.

    Load with ``deepeval.dataset.EvaluationDataset().add_goldens_from_json_file(path)``
    (JSON only: DeepEval's CSV joins list cells with a pipe, which a chunk's
    text may hold). Each golden: ``name`` (the trace id), ``input`` (the
    question), ``actual_output`` (the answer), ``retrieval_context`` (texts of
    the contexts shown, in order), ``context`` (texts of the query's chunks
    graded >= threshold, highest grade first; ``[]`` when it has judged
    chunks but none that high, ``null`` when nothing of it is judged) and
    ``additional_metadata``: trace, query and system ids, the chunk ids and
    grades of both lists (``null`` = unjudged), the threshold, who labelled,
    the aggregate and the grade scale. No ``expected_output``: the store holds
    no reference answers.
    """
    judged = _judged(store, threshold, annotator, aggregate)
    traces = _traces(store)
    texts = store.chunk_texts(d for t in traces for d in judged.relevant(t.query_id))
    counts = _TraceCounts()
    goldens = []
    for trace in traces:
        counts.add(trace, judged)
        qid = trace.query_id
        reference = judged.relevant(qid)
        counts.no_text += sum(texts.get(doc) is None for doc in reference)
        judged_here = bool(judged.grades.get(qid))
        pairs = [(qid, c.chunk_id) for c in trace.contexts if c.chunk_id] + [(qid, d) for d in reference]
        who = sorted({name for pair in pairs for name in judged.names.get(pair, [])})
        metadata = {
            "trace_id": trace.id,
            "query_id": qid,
            "system": trace.system,
            "retrieval_context_ids": [c.id for c in trace.contexts],
            "retrieval_context_grades": [judged.grade(qid, c.chunk_id) for c in trace.contexts],
            "context_ids": reference if judged_here else None,
            "context_grades": [judged.grades[qid][d] for d in reference] if judged_here else None,
            **judged.meta(),
            "judged_by": who,
        }
        goldens.append(
            {
                "name": trace.id,
                "input": trace.question,
                "actual_output": trace.answer,
                "retrieval_context": [c.text or "" for c in trace.contexts],
                "context": [texts.get(doc) or "" for doc in reference] if judged_here else None,
                "additional_metadata": metadata,
            }
        )
    write_atomic(path, json.dumps(goldens, ensure_ascii=False, indent=2) + "\n")
    t = threshold
    parts = [
        f"wrote {counts.traces} DeepEval goldens (one per trace) to {path}, relevance from "
        f"{judged.source()}, threshold {t}",
        f"DeepEval has no graded relevance or context ids: context holds the texts of the "
        f"{len(counts.relevant)} chunks graded >= {t}; grades, ids, threshold and annotators are only in "
        "additional_metadata, which its metrics do not read",
        *counts.clauses(t, "context []"),
        "no expected_output (the store holds no reference answers)",
    ]
    return "; ".join(parts)


# ---------------------------------------------------------------- folders


def _write_folder(path: PathLike, files: dict[str, str]) -> None:
    """Write ``files`` (relative path -> text) as the folder ``path``, atomically:
    built beside it, then swapped in by rename. An existing folder is replaced
    only if every file in it is one this export writes again (a new or empty
    folder, or an earlier export of the same kind): nothing else is ever deleted."""
    target = Path(path)
    if target.exists() and not target.is_dir():
        raise FormatError(path, None, None, "is a file; expected a folder (created if missing)")
    if not target.parent.is_dir():
        raise FormatError(
            path, None, None, "its parent folder does not exist; expected a writable folder path"
        )
    if target.is_dir():
        present = sorted(p.relative_to(target).as_posix() for p in target.rglob("*") if not p.is_dir())
        foreign = [name for name in present if name not in files]
        if foreign:
            shown = ", ".join(foreign[:3]) + (f" and {len(foreign) - 3} more" if len(foreign) > 3 else "")
            raise FormatError(
                path,
                None,
                None,
                f"holds files this export would not write again ({shown}); expected a new or empty "
                "folder, or an earlier export of the same format (nothing was written)",
            )
    stage = target.with_name(f".{target.name}.tmp-{os.getpid()}")
    old = target.with_name(f".{target.name}.old-{os.getpid()}")
    try:
        shutil.rmtree(stage, ignore_errors=True)
        for name, text in files.items():
            file = stage / name
            file.parent.mkdir(parents=True, exist_ok=True)
            file.write_text(text, encoding="utf-8")
        if target.is_dir():
            shutil.rmtree(old, ignore_errors=True)
            os.rename(target, old)
            try:
                os.rename(stage, target)
            except OSError:
                os.rename(old, target)
                raise
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.rename(stage, target)
    except OSError as exc:
        shutil.rmtree(stage, ignore_errors=True)
        raise FormatError(
            path, None, None, f"cannot be written ({exc.strerror}); nothing was written"
        ) from None


def _check_tsv_id(value: str, path: PathLike, what: str) -> None:
    """An id BEIR's qrels reader (csv, TAB, QUOTE_MINIMAL) reads back as written."""
    if not value or has_space(value) or value.startswith('"'):
        raise FormatError(
            path,
            None,
            what,
            f"{value!r} cannot be written to BEIR's qrels TSV; expected a non-empty id without "
            "whitespace that does not start with '\"'",
        )


# ---------------------------------------------------------------- BEIR


def export_beir(
    store: Store,
    path: PathLike,
    threshold: int = 1,
    annotator: str | None = None,
    aggregate: str = "median",
    split: str = "test",
) -> str:
    """A BEIR folder: ``corpus.jsonl``, ``queries.jsonl`` and ``qrels/<split>.tsv``.

    corpus.jsonl  every stored chunk with text, in import order:
                  ``{"_id", "title", "text", "metadata"}``. A chunk imported
                  from BEIR gets its title and text back (the store keeps
                  ``title + "\\n\\n" + text``); others have title ``""``, and
                  their source and other metadata in ``metadata``.
    queries.jsonl every stored query with text: ``{"_id", "text"}``.
    qrels         the header ``query-id<TAB>corpus-id<TAB>score``, then every
                  current grade 0-3 as an integer (0s included).

    BEIR's loader needs every qrels query in queries.jsonl, so the grades of
    a query stored without text are left out (the summary counts them).
    Grades are kept whole: the threshold is not applied, and BEIR's
    evaluator counts a score >= 1 as relevant.
    """
    if not split or any(ch in split for ch in "/\\") or split.startswith(".") or has_space(split):
        raise StoreError(f"split {split!r}; expected a file name such as test, dev or train")
    judged = _judged(store, threshold, annotator, aggregate)
    corpus_lines = []
    skipped_chunks = 0
    for chunk_id, text, source, meta_text in store.chunks_in_import_order():
        if text is None or not text.strip():
            skipped_chunks += 1
            continue
        corpus_lines.append(_jsonl_record(_beir_document(chunk_id, text, source, meta_text)))
    queries = store.queries_in_import_order()
    with_text = {qid for qid, text in queries if text is not None and text.strip()}
    query_lines = [_jsonl_record({"_id": qid, "text": text}) for qid, text in queries if qid in with_text]
    qrels_lines = [BEIR_QRELS_HEADER + "\n"]
    dropped = dropped_queries = 0
    for qid, docs in judged.grades.items():
        if qid not in with_text:
            dropped += len(docs)
            dropped_queries += 1
            continue
        _check_tsv_id(qid, path, "query-id")
        for doc, grade in docs.items():
            _check_tsv_id(doc, path, "corpus-id")
            qrels_lines.append(f"{qid}\t{doc}\t{int(grade)}\n")
    if len(qrels_lines) == 1:
        raise NothingToExport("no judgment of a query with text to export; BEIR needs each query's text")
    if not corpus_lines:
        raise NothingToExport("no chunk with text to export; BEIR's corpus.jsonl needs each document's text")
    _write_folder(
        path,
        {
            "corpus.jsonl": "".join(corpus_lines),
            "queries.jsonl": "".join(query_lines),
            f"qrels/{split}.tsv": "".join(qrels_lines),
        },
    )
    n = len(qrels_lines) - 1
    t = threshold
    parts = [
        f"wrote BEIR folder {path}: {len(corpus_lines)} documents, {len(query_lines)} queries, {n} judgments "
        f"in qrels/{split}.tsv from {judged.source()}",
        "grades 0-3 kept whole: BEIR's evaluator counts score >= 1 as relevant"
        + ("" if t == 1 else f", not >= {t}: give your evaluator the threshold {t} yourself"),
        "BEIR has no place for the threshold or who labelled (only this line says them), nor for runs, "
        "traces or label history",
    ]
    if dropped:
        parts.append(
            f"{dropped} judgments of {dropped_queries} queries stored without text left out "
            "(BEIR's loader needs each qrels query in queries.jsonl)"
        )
    if skipped_chunks:
        parts.append(f"{skipped_chunks} chunks stored without text left out of corpus.jsonl")
    return "; ".join(parts)


def _beir_document(chunk_id: str, text: str, source: str | None, meta_text: str | None) -> dict[str, Any]:
    meta = json.loads(meta_text) if meta_text else {}
    if not isinstance(meta, dict):
        meta = {"meta": meta}
    title = meta.get("title") if isinstance(meta.get("title"), str) else ""
    body = text
    if title and text.startswith(title + "\n\n"):  # as annotation.beir stored it
        body = text[len(title) + 2 :]
    elif title and text == title:  # a BEIR document with a title and no text
        body = ""
    else:
        title = ""
    metadata = dict(meta["metadata"]) if isinstance(meta.get("metadata"), dict) else {}
    extra = {k: v for k, v in meta.items() if k not in ("title", "metadata")}
    if not title and isinstance(meta.get("title"), str):
        extra["title"] = meta["title"]
    if source is not None:
        extra["source"] = source
    for key, value in extra.items():
        metadata.setdefault(key, value)
    return {"_id": chunk_id, "title": title, "text": body, "metadata": metadata}


# ---------------------------------------------------------------- TREC


_UNSAFE_NAME = re.compile(r"[\s/\\\x00-\x1f\x7f]")


def _run_file_name(name: str) -> str:
    """A run's name as a file name and TREC tag: whitespace, slashes and control
    characters become '_', a leading '.' too (no hidden files)."""
    safe = _UNSAFE_NAME.sub("_", name)
    if not safe or safe.startswith("."):
        safe = "_" + safe[1:] if safe else "_"
    return safe


def export_trec(
    store: Store, path: PathLike, threshold: int = 1, annotator: str | None = None, aggregate: str = "median"
) -> str:
    """A folder with ``qrels`` (TREC qrels ``qid 0 docid grade``, every current
    grade 0-3) and, per stored run, ``<run name>.run`` (``qid Q0 docid rank
    score tag``, the tag being the run's name), ranks and scores as stored,
    queries in import order. Read back with :func:`annotation.formats.read_judgments`
    and :func:`annotation.formats.read_ranked`.

    A run name that cannot be a file name or TREC column (whitespace,
    slashes, a leading '.') is written with '_' in their place; a stored
    ranking without a score gets the score ``n - rank + 1`` (n: the query's
    deepest rank), so trec_eval's order (score descending) is the stored rank order.
    """
    judged = _judged(store, threshold, annotator, aggregate)
    qrels_lines = []
    for qid, docs in judged.grades.items():  # annotation.formats.write_qrels's format and checks
        check_trec_id(qid, path, "qid", InvalidQrels)
        for doc, grade in docs.items():
            check_trec_id(doc, path, "docid", InvalidQrels)
            qrels_lines.append(f"{qid} 0 {doc} {int(grade)}\n")
    files = {"qrels": "".join(qrels_lines)}
    runs = store.stored_runs()
    renamed: list[str] = []
    filled = 0
    names: list[str] = []
    for run_id, name in runs:
        safe = _run_file_name(name)
        file_name = f"{safe}.run"
        if file_name in files:
            raise FormatError(
                path,
                None,
                None,
                f"runs {name!r} and another both become {file_name!r}; expected distinct names",
            )
        if safe != name:
            renamed.append(f"{name!r} as {file_name}")
        rows = store.run_rankings(run_id)
        depth: dict[str, int] = {}
        for qid, rank, _doc, _score in rows:
            depth[qid] = max(depth.get(qid, 0), rank)
        lines = []
        for qid, rank, doc, score in rows:
            check_trec_id(qid, path, "qid", InvalidRun)
            check_trec_id(doc, path, "docid", InvalidRun)
            if score is None:
                score = float(depth[qid] - rank + 1)
                filled += 1
            lines.append(f"{qid} Q0 {doc} {rank} {float(score)!r} {safe}\n")
        files[file_name] = "".join(lines)
        names.append(file_name)
    _write_folder(path, files)
    t = threshold
    parts = [
        f"wrote TREC folder {path}: qrels ({judged.count} judgments over {len(judged.grades)} queries "
        f"from {judged.source()}) and {len(names)} run files" + (f" ({', '.join(names)})" if names else ""),
        f"grades 0-3 kept whole: for threshold {t} run trec_eval -l {t}"
        + (" (its default, -l 1)" if t == 1 else ""),
        "TREC files have no place for the threshold, who labelled, query or chunk texts, nor a run's stage",
    ]
    if renamed:
        parts.append("runs renamed for the file system and the tag column: " + ", ".join(renamed))
    if filled:
        parts.append(f"{filled} rankings stored without a score given n - rank + 1")
    return "; ".join(parts)


# ---------------------------------------------------------------- Phoenix


def _judge_grades(
    store: Store, fingerprint: str, aggregate: str
) -> tuple[dict[str, dict[str, int]], str, str]:
    """A relevance judge's current grades per (query, chunk) (repeats aggregated),
    Phoenix's annotator kind for it, and its description."""
    judges = {j["fingerprint"]: j for j in store.judges()}
    matches = [fp for fp in judges if fp.startswith(fingerprint)] if fingerprint else []
    if len(matches) != 1:
        raise StoreError(
            f"judge {fingerprint!r}: "
            + (
                "no such judge"
                if not matches
                else f"{len(matches)} judges start so; give more of the fingerprint"
            )
        )
    judge = judges[matches[0]]
    if judge["rubric"] != "relevance":
        raise StoreError(f"judge {matches[0][:12]} grades {judge['rubric']}, not relevance")
    items = {item_id: (query_id, chunk_id) for item_id, query_id, chunk_id in store.chunk_items()}
    values: dict[tuple[str, str], list[int]] = {}
    for row in store.judge_values(matches[0]):
        if row["item_id"] in items:
            values.setdefault(items[row["item_id"]], []).append(int(row["value"]))
    grades: dict[str, dict[str, int]] = {}
    for (qid, doc), vals in values.items():
        grades.setdefault(qid, {})[doc] = aggregate_grades(vals, aggregate)
    # the offline judge is a fitted scikit-learn model, not a language model
    kind = "CODE" if judge["kind"] == "lexical" else "LLM"
    return grades, kind, f"judge {matches[0][:12]} ({judge['kind']}, {judge['model']})"


def _span_id(trace: _Trace) -> tuple[str, str]:
    """(span id, where it came from): the trace's metadata, else its id."""
    for key in ("retriever_span_id", "span_id", "context.span_id"):
        value = trace.meta.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip(), "metadata"
    return trace.id, "id"


def export_phoenix(
    store: Store,
    path: PathLike,
    threshold: int = 1,
    annotator: str | None = None,
    aggregate: str = "median",
    judge: str | None = None,
    binary_score: bool = False,
) -> str:
    """Arize Phoenix document annotations: one row per judged (retriever span,
    document position) of every stored trace, as JSONL (``.csv``: CSV).

    Columns: ``span_id``, ``document_position`` (0-based), ``name``
    ("relevance"), ``annotator_kind`` ("HUMAN" for people; with
    ``judge=<fingerprint or its prefix>`` a relevance judge's grades instead,
    "LLM" for an LLM judge, "CODE" for the offline lexical judge), ``label``
    ("relevant" if the grade >= threshold, else "unrelated", the rails of
    Phoenix's own relevance evaluator), ``score`` (the grade 0-3; 1.0/0.0 by
    the threshold with ``binary_score=True``),
    ``explanation`` (the grade's wording, the threshold, who graded) and, in
    JSONL only, ``metadata`` (grade, threshold, who, trace, query and chunk
    ids). Load with::

        df = pandas.read_json(path, lines=True, dtype={"span_id": str})
        phoenix.client.Client().spans.log_document_annotations_dataframe(dataframe=df)
        # or, the legacy client:
        px.Client().log_evaluations(DocumentEvaluations(eval_name="relevance",
                dataframe=df.set_index(["span_id", "document_position"])[["label", "score", "explanation"]]))

    Assumption (the OpenInference trace import is being written): a trace's
    span id is its metadata's ``retriever_span_id`` (or ``span_id``) where the
    traces table has a metadata column, else the trace's own id, and its
    contexts are the retriever span's documents in document order. An
    unjudged document gets no row: Phoenix scores that position NaN, so the
    span's nDCG and precision are undefined, not a miss. Phoenix keeps one annotation per (name, span,
    position), so people's grades are one per document: one annotator's, or
    the ``aggregate`` over everyone's.
    """
    _check_args(store, threshold, annotator, aggregate)
    if judge and annotator:
        raise StoreError("give a judge or an annotator, not both: a row holds one annotator kind's grade")
    if judge:
        grades, kind, source = _judge_grades(store, judge, aggregate)
        judged = _Judged(grades, {}, [source], threshold, None, aggregate)
        if not grades:
            raise NothingToExport(f"{source} has no relevance grade of a (query, chunk) to export")
    else:
        judged = _judged(store, threshold, annotator, aggregate)
        kind = "HUMAN"
    traces = _traces(store)
    rows = []
    from_meta = not_span_ids = unjudged = 0
    spans_with_rows = set()
    for trace in traces:
        span_id, origin = _span_id(trace)
        from_meta += origin == "metadata"
        not_span_ids += not _SPAN_ID.fullmatch(span_id)
        for position, context in enumerate(trace.contexts):
            grade = judged.grade(trace.query_id, context.chunk_id)
            if grade is None:
                unjudged += 1
                continue
            relevant = grade >= threshold
            pair = (trace.query_id, context.chunk_id)
            who = source if judge else judged.source(pair)
            explanation = (
                f"grade {grade} of 0-3 ({RELEVANCE.scale[grade]}); "
                f"relevant means grade >= {threshold}; by {who}"
            )
            metadata = {
                "grade": grade,
                "relevance_threshold": threshold,
                "judged_by": [source] if judge else judged.names.get(pair, []),
                "aggregate": None if (annotator and not judge) else aggregate,
                "trace_id": trace.id,
                "query_id": trace.query_id,
                "chunk_id": context.chunk_id,
            }
            rows.append(
                {
                    "span_id": span_id,
                    "document_position": position,
                    "name": "relevance",
                    "annotator_kind": kind,
                    "label": PHOENIX_LABELS[0] if relevant else PHOENIX_LABELS[1],
                    "score": (1.0 if relevant else 0.0) if binary_score else float(grade),
                    "explanation": explanation,
                    "metadata": metadata,
                }
            )
            spans_with_rows.add(span_id)
    if not rows:
        raise NothingToExport("no shown context of any trace is judged; Phoenix would get no annotation")
    as_csv = str(path).lower().endswith(".csv")
    if as_csv:
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(PHOENIX_COLUMNS)
        writer.writerows([[row[c] for c in PHOENIX_COLUMNS] for row in rows])
        write_atomic(path, out.getvalue())
    else:
        write_atomic(path, "".join(_jsonl_record(row) for row in rows))
    from_id = len(traces) - from_meta
    score_words = (
        f"score 1/0 by threshold {threshold} (grades are in metadata only"
        + (")" if not as_csv else ", which CSV leaves out)")
        if binary_score
        else "score = grade 0-3 (Phoenix's precision, hit and reciprocal rank count any score > 0 as relevant"
        + ("" if threshold == 1 else f", not >= {threshold}: use binary_score for that")
        + ")"
    )
    parts = [
        f"wrote {len(rows)} Phoenix document annotations ({kind}, name 'relevance', "
        f"label relevant if grade >= {threshold}, {score_words}) for {len(spans_with_rows)} spans "
        f"of {len(traces)} traces to {path}, "
        f"from {judged.source() if not judge else source}",
        f"span ids: {from_meta} from trace metadata, {from_id} assumed to be the trace id (the OpenInference "
        "import keeps the retriever span id and the documents' order)",
    ]
    if not_span_ids:
        parts.append(
            f"{not_span_ids} traces' span ids are not 16-hex OpenTelemetry span ids: Phoenix will not find "
            "those spans"
        )
    if unjudged:
        parts.append(
            f"{unjudged} shown documents unjudged, no row (Phoenix scores a position without one NaN: "
            "nDCG and precision of those spans are undefined)"
        )
    if as_csv:
        parts.append(
            "CSV has no metadata column (Phoenix's loader needs a dict there): the explanation says "
            "the threshold and who graded"
        )
    if judge:
        parts.append(f"the judge's grades only, its repeats aggregated by {aggregate}")
    elif annotator:
        parts.append(f"{annotator}'s grades only")
    else:
        parts.append(
            "Phoenix keeps one annotation per (name, span, position): individual people's grades are not kept"
        )
    return "; ".join(parts)


EXPORTS: dict[str, Callable[..., str]] = {
    "ragas": export_ragas,
    "deepeval": export_deepeval,
    "beir": export_beir,
    "trec": export_trec,
    "phoenix": export_phoenix,
}
