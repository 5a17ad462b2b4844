"""Files into the store: the import workflow shared by the command line
(``python -m annotation import``) and the Data page.

Import reads and checks every file before the store is touched, then writes
them all in one transaction: all of it lands, or none. Exports (``python -m
annotation export``) are :mod:`annotation.exports`; ``export_labels`` and
``NothingToExport`` are importable from here too, for the callers that import them here.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import yaml

from annotation.beir import read_beir
from annotation.exports import NothingToExport, export_labels
from annotation.formats import (
    FormatError,
    Qrels,
    read_corpus,
    read_judgments,
    read_queries,
    read_ranked,
    read_traces,
)
from annotation.store import OffScale, Store, StoreError
from annotation.trace_sources import read_trace_source, to_store

__all__ = ["ImportSources", "NothingToImport", "NothingToExport", "import_files", "export_labels"]

TRACE_SOURCES = ("jsonl", "openinference", "langfuse", "langsmith")
PathLike = str | os.PathLike


class NothingToImport(StoreError):
    """An import request that names no file, or lacks a name it needs."""


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

    def check(self) -> None:
        if not any((self.corpus, self.queries, self.beir, self.run, self.traces, self.labels)):
            raise NothingToImport(
                "nothing to import; give a corpus, queries, a BEIR folder, a run, traces or labels"
            )
        if self.run and not (self.name or "").strip():
            raise NothingToImport("a run needs a name (--name)")
        if self.labels and not (self.annotator or "").strip():
            raise NothingToImport("labels need the name of who made them (--annotator)")
        if self.stage not in ("fetch", "keep"):
            raise NothingToImport(f"stage must be fetch or keep, not {self.stage!r}")
        if self.traces_from not in TRACE_SOURCES:
            raise NothingToImport(
                f"--from must be one of {', '.join(TRACE_SOURCES)}, not {self.traces_from!r}"
            )
        if (self.mapping or self.run_prefix) and (not self.traces or self.traces_from == "jsonl"):
            raise NothingToImport(
                "--map and --run-prefix go with --traces FILE --from openinference|langfuse|langsmith"
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
    lines = []
    with store.write():
        if corpus is not None:
            lines.append(_report(f"corpus {sources.corpus}", store.import_corpus(corpus)))
        if queries is not None:
            lines.append(_report(f"queries {sources.queries}", store.import_queries(queries)))
        if beir is not None:
            lines.extend(_import_beir(store, sources.beir, *beir))
        if run is not None:
            counts = store.import_run(run, sources.name.strip(), sources.stage)
            lines.append(_report(f"run {sources.name.strip()!r} ({sources.stage}) {sources.run}", counts))
        if traces is not None:
            lines.append(_report(f"traces {sources.traces}", store.import_traces(traces)))
        if traced is not None:
            counts = to_store(store, traced, run_prefix=sources.run_prefix)
            lines.append(_report(f"traces {sources.traces} ({sources.traces_from})", counts))
            lines += [f"  not imported: {problem}" for problem in traced.problems]
        if labels is not None:
            lines.append(_import_labels(store, labels, sources.annotator.strip(), sources.labels))
            lines += [f"  note: {note}" for note in labels.notes]  # e.g. queries named by their text
        totals = store.counts()
    lines.append("store now: " + ", ".join(f"{n} {table}" for table, n in totals.items()))
    return lines


def _import_beir(
    store: Store, folder: PathLike, chunks: list[dict], queries: dict[str, str], splits: dict[str, Qrels]
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


def _child(node, key: str):
    """A mapping node's value node for ``key`` (None when absent or not a mapping)."""
    if not isinstance(node, yaml.MappingNode):
        return None
    for k, v in node.value:
        if getattr(k, "value", None) == key:
            return v
    return None


def _report(what: str, counts: dict[str, int]) -> str:
    return f"{what}: " + ", ".join(f"{n} {key}" for key, n in counts.items())
