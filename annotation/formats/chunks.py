"""Chunks files and the documents they cut (#44): where a chunk comes from.

A chunks file is JSON lines, one chunk a line: ``{"id", "doc", "start", "end", "text"?}``, the
character offsets into the document (Python string indices, end exclusive). With the documents at
hand every span is checked against its document (known, within its length) and a ``text`` given
beside it against ``doc[start:end]``. Strict as every reader of the family: bad input raises
:class:`~annotation.model.InvalidChunks` naming the file, the line and the field.

The documents are plain text files; a document's id is its file name without the extension
(``corpora/pubmed.md`` is ``pubmed``), as Chroma's questions name their corpus.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from annotation.formats.atomic import write_atomic
from annotation.formats.json_lines import parse_json_line
from annotation.formats.textio import check_text, content_lines, has_space, read_text_file, shown_value
from annotation.model import ChunksDisagree, ChunkSpan, FormatError, InvalidChunks, InvalidDocuments

__all__ = [
    "read_chunks",
    "write_chunks",
    "chunk_lines",
    "read_documents",
    "document_files",
    "check_span",
    "check_placements",
]

_EXPECTED = 'expected {"id": str, "doc": str, "start": int, "end": int, "text"?: str}'


def document_files(paths: Sequence[str | os.PathLike[str]]) -> tuple[list[Path], list[Path]]:
    """(the files :func:`read_documents` reads, the entries of the folders given it leaves: their
    subfolders and anything else not a file), each in name order per path given. A folder holding
    no file is refused (:class:`InvalidDocuments`), naming the subfolders it holds instead."""
    files: list[Path] = []
    left: list[Path] = []
    for given in paths:
        folder = Path(given)
        if not folder.is_dir():
            files.append(folder)
            continue
        entries = sorted(folder.iterdir())
        found = [p for p in entries if p.is_file()]
        others = [p for p in entries if not p.is_file()]
        if not found:
            inside = (
                f" ({len(others)} other {'entry' if len(others) == 1 else 'entries'}, such as {shown_value(others[0].name)}: subfolders are not "
                "read; give a subfolder itself to read its files)"
                if others
                else ""
            )
            raise InvalidDocuments(given, None, None, f"holds no file{inside}; expected text files")
        files.extend(found)
        left.extend(others)
    return files, left


def read_documents(paths: Sequence[str | os.PathLike[str]]) -> dict[str, str]:
    """The documents, by id: each path a text file, or a folder whose files (not its subfolders)
    are read in name order; the id is the file name without its extension, each id once."""
    documents: dict[str, str] = {}
    where: dict[str, str] = {}
    files, _left = document_files(paths)
    for file in files:
        doc = file.stem
        if doc in documents:
            raise InvalidDocuments(
                file,
                None,
                None,
                f"document {shown_value(doc)} already read from {where[doc]}; "
                "expected each file name (without its extension) once",
            )
        documents[doc] = read_text_file(file, InvalidDocuments)
        where[doc] = str(file)
    return documents


def check_span(
    path: str | os.PathLike[str],
    line: int | None,
    doc: str,
    start: int,
    end: int,
    documents: Mapping[str, str],
    error: type[FormatError],
    where: str = "",
) -> None:
    """A span ``doc[start:end]`` that its document holds, or ``error`` naming the line."""
    if doc not in documents:
        raise error(
            path,
            line,
            f"{where}doc",
            f"{shown_value(doc)} is not a document given; expected one of "
            + ", ".join(shown_value(d) for d in list(documents)[:5])
            + (" ..." if len(documents) > 5 else ""),
        )
    if end > len(documents[doc]):
        raise error(
            path,
            line,
            f"{where}end",
            f"{end} is past the end of {shown_value(doc)} ({len(documents[doc])} characters)",
        )


def _place(chunk: ChunkSpan) -> str:
    return f"{shown_value(chunk.doc)}[{chunk.start}:{chunk.end}]"


def check_placements(
    placed: Mapping[str, ChunkSpan],
    placed_name: str,
    chunks: Iterable[ChunkSpan],
    chunks_name: str,
    expected: str,
) -> None:
    """Every chunk id both ``placed`` (a golden set's ``chunks`` section) and ``chunks`` (a chunks
    file) place, placed alike (document, start, end); else :class:`ChunksDisagree` naming the first
    such id, both placements and what was ``expected``."""
    if not placed:
        return
    for chunk in chunks:
        other = placed.get(chunk.id)
        if other is not None and (other.doc, other.start, other.end) != (chunk.doc, chunk.start, chunk.end):
            raise ChunksDisagree(
                f"{chunks_name} places chunk {shown_value(chunk.id)} at {_place(chunk)}, {placed_name} at "
                f"{_place(other)}: one id, two chunkings; expected {expected}"
            )


def _offset(obj: dict[str, Any], key: str, path: str | os.PathLike[str], number: int) -> int:
    value = obj.get(key)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InvalidChunks(
            path, number, key, f"{json.dumps(value)[:40]}; expected a character offset (a whole number >= 0)"
        )
    return value


def read_chunks(path: str | os.PathLike[str], documents: Mapping[str, str] | None = None) -> list[ChunkSpan]:
    """The chunks of a chunks file, in file order: ids unique and without whitespace, ``end >
    start``; with ``documents``, each span inside its document and a ``text`` equal to it."""
    chunks: list[ChunkSpan] = []
    seen: dict[str, int] = {}
    for number, line in content_lines(path, InvalidChunks):
        obj = parse_json_line(line, path, number, InvalidChunks)
        if not isinstance(obj, dict):
            raise InvalidChunks(path, number, None, _EXPECTED)
        for key in ("id", "doc"):
            if not isinstance(obj.get(key), str) or not obj[key]:
                raise InvalidChunks(path, number, key, f"missing or empty; {_EXPECTED}")
            check_text(obj[key], path, number, key, InvalidChunks)
        chunk = obj["id"]
        if has_space(chunk):
            raise InvalidChunks(
                path, number, "id", f"{shown_value(chunk)} holds whitespace; expected an id without spaces"
            )
        if chunk in seen:
            raise InvalidChunks(
                path,
                number,
                "id",
                f"{shown_value(chunk)} already on line {seen[chunk]}; expected each id once",
            )
        seen[chunk] = number
        start, end = _offset(obj, "start", path, number), _offset(obj, "end", path, number)
        if end <= start:
            raise InvalidChunks(
                path, number, "end", f"{end} is not after start {start}; expected end > start (end exclusive)"
            )
        if "text" in obj and not isinstance(obj["text"], str):
            raise InvalidChunks(path, number, "text", "expected the chunk's text as a string")
        if documents is not None:
            check_span(path, number, obj["doc"], start, end, documents, InvalidChunks)
            if "text" in obj and obj["text"] != documents[obj["doc"]][start:end]:
                raise InvalidChunks(
                    path,
                    number,
                    "text",
                    f"differs from {shown_value(obj['doc'])}[{start}:{end}]; expected the document's "
                    "characters at the chunk's offsets",
                )
        chunks.append(ChunkSpan(chunk, obj["doc"], start, end))
    if not chunks:
        raise InvalidChunks(path, None, None, f"no chunks; {_EXPECTED}, one a line")
    return chunks


def chunk_lines(chunks: Iterable[ChunkSpan], documents: Mapping[str, str] | None = None) -> str:
    """The chunks as JSON lines, each with its ``text`` when the documents are given."""
    lines = []
    for c in chunks:
        obj: dict[str, Any] = {"id": c.id, "doc": c.doc, "start": c.start, "end": c.end}
        if documents is not None:
            obj["text"] = documents[c.doc][c.start : c.end]
        lines.append(json.dumps(obj, ensure_ascii=False) + "\n")
    return "".join(lines)


def write_chunks(
    path: str | os.PathLike[str], chunks: Iterable[ChunkSpan], documents: Mapping[str, str] | None = None
) -> None:
    """A chunks file, written whole or not at all (:func:`write_atomic`)."""
    write_atomic(path, chunk_lines(chunks, documents))
