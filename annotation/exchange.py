"""Files into the store: the import workflow shared by the command line
(``python -m annotation import``) and the Data page.

Import reads and checks every file before the store is touched, then writes
them all in one transaction: all of it lands, or none. Exports (``python -m
annotation export``) are :mod:`annotation.exports`; ``export_labels`` and
``NothingToExport`` are importable from here too, for the callers that import them here.

Each call is one *import*: an id, a name, who ran it (:meth:`Store.recording`); it can be
taken back whole (``python -m annotation imports retire ID``, the Data page's imports table:
:mod:`annotation.store.retirements`). Before anything is written, a queries or corpus file whose
shape matches the other slot is refused with what it looks like (:class:`WrongSlot`,
:func:`slot_findings`) unless the import is ``confirmed``.
"""

from __future__ import annotations

import os
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from annotation.commands_text import rows_text
from annotation.exports import NothingToExport, export_labels
from annotation.formats.beir import read_beir
from annotation.formats.by_extension import read_judgments, read_ranked
from annotation.formats.records import read_corpus, read_queries, read_traces
from annotation.model import FormatError, Qrels
from annotation.options import login_name
from annotation.store import OffScale, Store, StoreError
from annotation.trace_sources import read_trace_source, to_store

__all__ = [
    "ImportSources",
    "NothingToImport",
    "NothingToExport",
    "WrongSlot",
    "import_files",
    "export_labels",
    "slot_findings",
    "PASSAGE_CHARS",
    "ROWS_FACTOR",
]

TRACE_SOURCES = ("jsonl", "openinference", "langfuse", "langsmith")
PathLike = str | os.PathLike[str]


class NothingToImport(StoreError):
    """An import request that names no file, or lacks a name it needs. ``field`` is the
    :class:`ImportSources` field the message is about (``name``, ``annotator``, ``stage``,
    ``traces_from``, ``mapping``, ``files``; "" for none): each face names it in its own words (the CLI
    its flag, the Data page its box), so the sentence here names neither."""

    def __init__(self, message: str, field: str = "") -> None:
        super().__init__(message)
        self.field = field


class WrongSlot(NothingToImport):
    """A file whose shape matches another slot than the one it was given in (nothing written);
    ``confirmed`` imports it as given."""

    def __init__(self, path: PathLike, slot: str, looks_like: str, findings: Sequence[str]) -> None:
        self.path, self.slot, self.looks_like, self.findings = str(path), slot, looks_like, list(findings)
        super().__init__(
            f"{Path(path).name}, given as {slot}, looks like {looks_like}: {'; '.join(findings)}; "
            "nothing was imported"
        )


# The shape rules (slot_findings). A query is a sentence; a chunk is a passage.
PASSAGE_CHARS = 200  # a queries file whose median text is this long or longer holds passages
ROWS_FACTOR = 3  # a queries file with more than 3x the rows of the store's queries, mostly new ids
QUESTION_SHARE = 0.5  # a corpus file more than half of whose texts end with "?" holds questions


def slot_findings(store: Store, slot: str, rows: Mapping[str, str | None]) -> tuple[str, list[str]]:
    """What a file given in the ``queries`` or ``corpus`` slot looks like, when its shape matches
    the other slot: (what it looks like, the findings that say so); ([]: it looks like its slot).
    ``rows`` is id -> text. The rules, any one of which is enough:

    queries slot, looks like a corpus:
      1. the median text is ``PASSAGE_CHARS`` (200) characters or more (queries are sentences);
      2. at least half its ids are chunk ids the store holds, and more of them than query ids;
      3. the store holds Q >= 1 queries, the file has more than ``ROWS_FACTOR`` x Q rows (3x), and
         fewer than half its ids are among the store's queries.

    corpus slot, looks like queries:
      1. at least half its ids are query ids the store holds, and more of them than chunk ids;
      2. more than half its texts (``QUESTION_SHARE``) end with a question mark.

    Counts are of live rows (:mod:`annotation.store.retirements`)."""
    if not rows:
        return "", []
    ids = list(rows)
    n = len(ids)
    as_queries = store.known_ids("queries", ids)
    as_chunks = store.known_ids("chunks", ids)
    texts = [t for t in rows.values() if t]
    findings: list[str] = []
    if slot == "queries":
        median = statistics.median(len(t) for t in texts) if texts else 0
        if median >= PASSAGE_CHARS:
            findings.append(
                f"its texts are passages: median {median:g} characters (a query is a sentence, "
                f"under {PASSAGE_CHARS})"
            )
        if as_chunks * 2 >= n and as_chunks > as_queries:
            findings.append(f"{as_chunks} of its {n} ids are chunk ids of the store")
        held = store.count_live("queries")
        if held and n > ROWS_FACTOR * held and as_queries * 2 < n:
            findings.append(
                f"{n} rows, more than {ROWS_FACTOR}x the {held} queries the store holds, "
                f"and {as_queries} of its ids among them"
            )
        return "a corpus (chunks)", findings
    if slot == "corpus":
        if as_queries * 2 >= n and as_queries > as_chunks:
            findings.append(f"{as_queries} of its {n} ids are query ids of the store")
        questions = sum(1 for t in texts if t.rstrip().endswith("?"))
        if questions > QUESTION_SHARE * n:
            findings.append(f"{questions} of its {n} texts end with a question mark")
        return "queries", findings
    return "", []


@dataclass(frozen=True)
class ImportSources:
    corpus: PathLike | None = None
    queries: PathLike | None = None
    beir: PathLike | None = None
    run: PathLike | None = None
    name: str | None = None  # the run's name
    stage: str = "fetch"
    traces: PathLike | None = None
    labels: PathLike | None = None
    annotator: str | None = None  # who made the imported labels
    traces_from: str = "jsonl"  # or openinference, langfuse, langsmith (annotation.trace_sources)
    mapping: tuple[str, ...] = ()  # --map KEY=PATH for those sources
    run_prefix: str = ""  # before each imported system's run name
    import_name: str = ""  # the import's name (default: what it holds, e.g. "run 'bm25' (run.trec)")
    who: str = ""  # who ran the import (default "unknown")
    confirmed: bool = False  # import a file whose shape matches another slot (WrongSlot) as given

    def check(self) -> None:
        if not any((self.corpus, self.queries, self.beir, self.run, self.traces, self.labels)):
            raise NothingToImport("nothing to import: no file was given", "files")
        if self.run and not (self.name or "").strip():
            raise NothingToImport("a run needs a name", "name")
        if self.labels and not (self.annotator or "").strip():
            raise NothingToImport("labels need the name of who made them", "annotator")
        if self.stage not in ("fetch", "keep"):
            raise NothingToImport(f"a run's stage is fetch or keep, not {self.stage!r}", "stage")
        if self.traces_from not in TRACE_SOURCES:
            raise NothingToImport(
                f"traces come from one of {', '.join(TRACE_SOURCES)}, not {self.traces_from!r}", "traces_from"
            )
        if (self.mapping or self.run_prefix) and (not self.traces or self.traces_from == "jsonl"):
            raise NothingToImport(
                "a field mapping and a run prefix go with traces from openinference, langfuse or langsmith",
                "mapping",
            )


def import_files(store: Store, sources: ImportSources) -> list[str]:
    """Every named file into the store in one transaction; a line per file of
    what it added, then the store's totals. FormatError or StoreError: nothing
    written."""
    sources.check()
    corpus = read_corpus(sources.corpus) if sources.corpus else None
    queries = read_queries(sources.queries) if sources.queries else None
    beir = read_beir(sources.beir) if sources.beir else None
    run = read_ranked(sources.run) if sources.run else None
    traced = None
    if sources.traces and sources.traces_from != "jsonl":
        traced = read_trace_source(sources.traces, sources.traces_from, list(sources.mapping) or None)
    traces = read_traces(sources.traces) if sources.traces and traced is None else None
    labels = read_judgments(sources.labels) if sources.labels else None
    if not sources.confirmed:
        for slot, path, rows in (
            ("queries", sources.queries, queries),
            ("corpus", sources.corpus, {c["id"]: c.get("text") for c in corpus or []}),
        ):
            looks_like, findings = slot_findings(store, slot, rows or {})
            if findings:
                assert path is not None  # findings are of a file's rows
                raise WrongSlot(path, slot, looks_like, findings)
    name, kind = _import_name(sources)
    who = (sources.who or "").strip() or login_name()
    lines = []
    with store.write(), store.recording(name, kind, who, source=_file_names(sources)) as import_id:
        if corpus is not None:
            lines.append(_report(f"corpus {sources.corpus}", store.import_corpus(corpus)))
        if queries is not None:
            lines.append(_report(f"queries {sources.queries}", store.import_queries(queries)))
        if beir is not None:
            assert sources.beir is not None  # the folder it was read from
            lines.extend(_import_beir(store, sources.beir, *beir))
        if run is not None:
            run_name = (sources.name or "").strip()  # given: sources.check()
            ranked = store.import_run(run, run_name, sources.stage)
            lines.append(_report(f"run {run_name!r} ({sources.stage}) {sources.run}", ranked))
        identical: list[tuple[str, str]] = []
        if traces is not None:
            lines.append(_report(f"traces {sources.traces}", store.import_traces(traces, identical)))
        if traced is not None:
            counts = to_store(store, traced, run_prefix=sources.run_prefix, identical=identical)
            lines.append(_report(f"traces {sources.traces} ({sources.traces_from})", counts))
            lines += [f"  not imported: {problem}" for problem in traced.problems]
        lines += [
            f"  not imported: trace {trace!r}: the same question, contexts and answer as trace {live!r}"
            for trace, live in identical
        ]
        if labels is not None:
            assert sources.labels is not None  # the file they were read from
            annotator = (sources.annotator or "").strip()  # given: sources.check()
            lines.append(_import_labels(store, labels, annotator, sources.labels))
            lines += [f"  note: {note}" for note in labels.notes]  # e.g. queries named by their text
        totals = store.live_counts()
    lines.append(f"import {import_id}: {name}, by {who}")
    lines.append("store now: " + rows_text(totals))  # the words every face says
    return lines


IMPORT_FIELDS = ("corpus", "queries", "beir", "run", "traces", "labels")


def _import_name(sources: ImportSources) -> tuple[str, str]:
    """The import's name (``import_name``, else what it holds: ``run 'bm25' (run.trec) + labels
    qrels.txt by 'sam'``) and its kind (the slots given, e.g. ``run+labels``)."""
    parts, kinds = [], []
    for field in IMPORT_FIELDS:
        path = getattr(sources, field)
        if not path:
            continue
        kinds.append(field)
        base = Path(path).name
        if field == "run":
            parts.append(f"run {(sources.name or '').strip()!r} ({base})")
        elif field == "labels":
            parts.append(f"labels {base} by {(sources.annotator or '').strip()!r}")
        elif field == "beir":
            parts.append(f"BEIR {base}")
        else:
            parts.append(f"{field} {base}")
    return (sources.import_name or "").strip() or " + ".join(parts), "+".join(kinds)


def _file_names(sources: ImportSources) -> str:
    """The files an import read, by their names (not their folders: a page's upload is a
    temporary file named like the upload)."""
    return ", ".join(Path(getattr(sources, f)).name for f in IMPORT_FIELDS if getattr(sources, f))


def _import_beir(
    store: Store,
    folder: PathLike,
    chunks: list[dict[str, Any]],
    queries: dict[str, str],
    splits: dict[str, Qrels],
) -> list[str]:
    """A BEIR folder's corpus, queries and each split's qrels as labels by ``beir:<split>``
    (inside the caller's transaction: all of it lands, or none)."""
    root = Path(folder)
    lines = [
        _report(f"corpus {root / 'corpus.jsonl'}", store.import_corpus(chunks)),
        _report(f"queries {root / 'queries.jsonl'}", store.import_queries(queries)),
    ]
    for split, qrels in splits.items():
        annotator = f"beir:{split}"
        try:
            lines.append(_import_labels(store, qrels, annotator, qrels.path))
        except StoreError as exc:  # not the off-scale grade: that is a FormatError naming its line
            raise StoreError(f"{qrels.path} (split {split!r}, annotator {annotator!r}): {exc}") from None
    return lines


def _import_labels(store: Store, labels: Qrels, annotator: str, path: PathLike) -> str:
    """The labels of one file under ``annotator``, as a report line; a grade off the
    scale is refused with the file and the line that gave it."""
    try:
        counts = store.import_labels(labels, annotator)
    except OffScale as exc:
        raise _located(exc, path) from None
    return _report(f"labels {path} by {annotator!r}", counts)


def _located(exc: OffScale, path: PathLike) -> FormatError:
    """The store's off-scale refusal, with the file and the line that gave the grade."""
    return FormatError(path, _grade_line(path, exc.qid, exc.doc), None, str(exc))


def _grade_line(path: PathLike, qid: str, doc: str) -> int | None:
    """The line of a (query, document) grade: a qrels or BEIR TSV line, or the
    golden.yaml grade's node (found by composing the YAML, never constructing it)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    if str(path).endswith((".yaml", ".yml")):
        try:
            root = yaml.compose(text, Loader=yaml.SafeLoader)
        except yaml.YAMLError:
            return None
        # a mapping's queries list, or the essay's list, whose query without an id is its text
        items = root if isinstance(root, yaml.SequenceNode) else _child(root, "queries")
        for query in getattr(items, "value", None) or []:
            named = _child(query, "id") or _child(query, "query")
            if getattr(named, "value", None) == qid:
                grade = _child(_child(query, "grades"), doc)
                return grade.start_mark.line + 1 if grade is not None else None
        return None
    for number, line in enumerate(text.splitlines(), start=1):
        parts = line.split("\t") if "\t" in line and len(line.split("\t")) == 3 else line.split()
        if len(parts) == 4 and (parts[0], parts[2]) == (qid, doc):
            return number
        if len(parts) == 3 and (parts[0], parts[1]) == (qid, doc):
            return number
    return None


def _child(node: yaml.Node | None, key: str) -> yaml.Node | None:
    """A mapping node's value node for ``key`` (None when absent or not a mapping)."""
    if not isinstance(node, yaml.MappingNode):
        return None
    for k, v in node.value:
        if getattr(k, "value", None) == key:
            return v
    return None


def _report(what: str, counts: Mapping[str, object]) -> str:
    """``run 'bm25' (run.trec): 1 run, 40 rankings, 0 unchanged``: a noun is singular for 1;
    ``identical`` (traces not imported, named on their own lines) only when there are some."""
    nouns = ("labels", "runs", "rankings", "traces")
    return f"{what}: " + ", ".join(
        f"{n} {key[:-1] if n == 1 and key in nouns else key}"
        for key, n in counts.items()
        if n or key != "identical"
    )
