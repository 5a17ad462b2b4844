"""The store's labels as folders that information-retrieval evaluators read:
BEIR (``corpus.jsonl``, ``queries.jsonl``, ``qrels/<split>.tsv``) and TREC
(``qrels`` and one ``<run>.run`` per stored run).

A folder is built beside the target and swapped in by two renames
(:func:`write_folder`), so a reader sees the old export or the new one (for
an instant between the renames, none), never a mix; an existing folder is
replaced only if it holds nothing but files the export writes again. Both
keep every grade 0-3 whole; the summary says how to give their evaluators
the threshold.
"""

from __future__ import annotations

import errno
import json
import os
import re
import shutil
import stat
from pathlib import Path
from typing import Any

from annotation.exports.common import NothingToExport, PathLike, jsonl_record, judged_grades
from annotation.formats.atomic import create_exclusive, existing_mode, temporary_name
from annotation.formats.textio import check_trec_id, has_space, shown_value
from annotation.model import FormatError, InvalidQrels, InvalidRun, UnwritableId
from annotation.store import Store, StoreError

__all__ = ["BEIR_QRELS_HEADER", "write_folder", "export_beir", "export_trec"]

BEIR_QRELS_HEADER = "query-id\tcorpus-id\tscore"


def write_folder(path: PathLike, files: dict[str, str]) -> None:
    """Write ``files`` (relative path -> text) as the folder ``path``, atomically:
    built beside it, then swapped in by rename. An existing folder is replaced
    only if every file in it is one this export writes again (a new or empty
    folder, or an earlier export of the same kind): nothing else is ever deleted.

    ``path`` may not be a symbolic link, nor anything but a folder (refused before anything is
    written: :func:`annotation.formats.atomic.existing_mode`). The folder is built under a random name
    beside it, made exclusively (mkdir), its files created exclusively and never through a link;
    a folder replaced keeps its permission bits, and so does each file it held."""
    target = Path(path)
    folder_mode = existing_mode(target, path, folder=True)
    if not target.parent.is_dir():
        raise FormatError(
            path, None, None, "its parent folder does not exist; expected a writable folder path"
        )
    modes: dict[str, int] = {}
    if folder_mode is not None:
        present = sorted(
            p.relative_to(target).as_posix() for p in target.rglob("*") if p.is_symlink() or not p.is_dir()
        )
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
        for name in present:
            found = os.lstat(target / name)
            if stat.S_ISREG(found.st_mode):
                modes[name] = stat.S_IMODE(found.st_mode) & 0o777
    stage: Path | None = None
    try:
        stage = _new_folder(target, "tmp")
        made = {stage}
        for name, text in files.items():
            file = stage / name
            for folder in reversed(file.parents):
                if folder.is_relative_to(stage) and folder not in made:
                    os.mkdir(folder)  # exclusive: the stage is new, so nothing can be there yet
                    made.add(folder)
            create_exclusive(file, text.encode("utf-8"), modes.get(name))
        if folder_mode is not None:
            os.chmod(stage, folder_mode)
            old = _new_folder(target, "old")  # an empty folder the old export is renamed onto
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
        if stage is not None:
            shutil.rmtree(stage, ignore_errors=True)
        raise FormatError(
            path, None, None, f"cannot be written ({exc.strerror}); nothing was written"
        ) from None


def _new_folder(target: Path, kind: str) -> Path:
    """A new empty folder beside ``target`` under a random name (mkdir: exclusive, never a link)."""
    for _ in range(100):
        folder = temporary_name(target, kind)
        try:
            os.mkdir(folder)
        except FileExistsError:
            continue
        return folder
    raise FileExistsError(errno.EEXIST, "no free temporary name beside it")


def _check_tsv_id(value: str, path: PathLike, what: str) -> None:
    """An id BEIR's qrels reader (csv, TAB, QUOTE_MINIMAL) reads back as written."""
    if value and has_space(value):  # e.g. a query named by its text
        named, advice = (
            ("query id", "give the queries ids without whitespace (id: in golden.yaml)")
            if what == "query-id"
            else ("document id", "give the documents ids without whitespace")
        )
        raise UnwritableId(
            path,
            None,
            what,
            f"{named} {shown_value(value)} has whitespace; BEIR's qrels TSV cannot hold it: {advice}",
        )
    if not value or value.startswith('"'):
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
    anonymize: bool = False,
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
    evaluator counts a score >= 1 as relevant. The folder names no one; the summary names
    who labelled (by pseudonym with ``anonymize``).
    """
    if not split or any(ch in split for ch in "/\\") or split.startswith(".") or has_space(split):
        raise StoreError(f"split {split!r}; expected a file name such as test, dev or train")
    judged = judged_grades(store, threshold, annotator, aggregate, anonymize)
    corpus_lines = []
    skipped_chunks = 0
    for chunk_id, text, source, meta_text in store.chunks_in_import_order():
        if text is None or not text.strip():
            skipped_chunks += 1
            continue
        corpus_lines.append(jsonl_record(_beir_document(chunk_id, text, source, meta_text)))
    queries = store.queries_in_import_order()
    with_text = {qid for qid, text in queries if text is not None and text.strip()}
    query_lines = [jsonl_record({"_id": qid, "text": text}) for qid, text in queries if qid in with_text]
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
    write_folder(
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
    if title and text.startswith(title + "\n\n"):  # as annotation.formats.beir stored it
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
    store: Store,
    path: PathLike,
    threshold: int = 1,
    annotator: str | None = None,
    aggregate: str = "median",
    anonymize: bool = False,
) -> str:
    """A folder with ``qrels`` (TREC qrels ``qid 0 docid grade``, every current
    grade 0-3) and, per stored run, ``<run name>.run`` (``qid Q0 docid rank
    score tag``, the tag being the run's name), ranks and scores as stored,
    queries in import order. Read back with :func:`annotation.formats.by_extension.read_judgments`
    and :func:`annotation.formats.by_extension.read_ranked`.

    A run name that cannot be a file name or TREC column (whitespace,
    slashes, a leading '.') is written with '_' in their place; a stored
    ranking without a score gets the score ``n - rank + 1`` (n: the query's
    deepest rank), so trec_eval's order (score descending) is the stored rank order.
    The folder names no one; the summary names who labelled (by pseudonym with ``anonymize``).
    """
    judged = judged_grades(store, threshold, annotator, aggregate, anonymize)
    qrels_lines = []
    for qid, docs in judged.grades.items():  # annotation.formats.trec.write_qrels's format and checks
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
    write_folder(path, files)
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
