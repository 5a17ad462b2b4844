"""BEIR folders: ``corpus.jsonl``, ``queries.jsonl`` and ``qrels/<split>.tsv``.

corpus.jsonl   ``{"_id": str, "title"?: str, "text": str, "metadata"?: {...}}``
               one document per line; the chunk's text is ``title + "\\n\\n" +
               text`` when the title is non-empty (the title alone when the
               text is empty); title and metadata are kept as the chunk's meta.
queries.jsonl  ``{"_id": str, "text": str, "metadata"?: {...}}``.
qrels/*.tsv    a header ``query-id<TAB>corpus-id<TAB>score``, then one
               judgment per line; the score an integer; one file per split
               (``test.tsv`` is the split ``test``).

Strict like the other readers: bad input raises :class:`InvalidBeir` naming
the file, the line and the field and saying what was expected; ids are text
(``"001"`` stays ``"001"``, a JSON number is refused, never converted). Other
keys of a JSON line are ignored. A qrels id missing from the corpus or the
queries is kept: the store holds it without text, as it does for ``--labels``.
Whether a score fits the relevance scale is the store's decision, not this
reader's (BEIR sets may grade -1 or 4).
"""

from __future__ import annotations

import json
import os
import struct
import zipfile
from pathlib import Path, PurePosixPath
from typing import Any

from annotation.formats.json_lines import parse_json_line
from annotation.formats.textio import (
    ASCII_SPACE,
    JudgmentLines,
    check_id,
    check_text,
    clip_text,
    has_space,
    numbered_lines,
    read_text_file,
    require_file,
    shown_value,
)
from annotation.model import FormatError, Qrels

__all__ = [
    "InvalidBeir",
    "read_beir",
    "unpack_beir_zip",
    "QRELS_HEADER",
    "ZIP_LIMIT_BYTES",
    "ZIP_MAX_ENTRIES",
]

QRELS_HEADER = "query-id\tcorpus-id\tscore"


class InvalidBeir(FormatError):
    kind = "BEIR"


def read_beir(
    folder: str | os.PathLike[str],
) -> tuple[list[dict[str, Any]], dict[str, str], dict[str, Qrels]]:
    """(chunks, queries, qrels per split) of a BEIR folder.

    chunks are ``{"id", "text", "title"?, "metadata"?}`` in file order, ready
    for :meth:`Store.import_corpus`; queries map id to text; splits come in
    name order.
    """
    root = Path(folder)
    if not root.is_dir():
        what = "is not a folder" if root.exists() else "no such folder"
        raise InvalidBeir(
            root,
            None,
            None,
            f"{what}; expected a BEIR folder with corpus.jsonl, queries.jsonl and qrels/*.tsv",
        )
    chunks = _read_corpus(root / "corpus.jsonl")
    queries = _read_queries(root / "queries.jsonl")
    qrels_dir = root / "qrels"
    files = sorted(qrels_dir.glob("*.tsv")) if qrels_dir.is_dir() else []
    if not files:
        raise InvalidBeir(
            qrels_dir, None, None, "no .tsv files; expected at least one split such as qrels/test.tsv"
        )
    return chunks, queries, {path.stem: _read_qrels(path) for path in files}


def _objects(path: Path) -> list[tuple[int, dict[str, Any]]]:
    """(line number, object) of each non-blank JSONL line."""
    require_file(path, InvalidBeir)
    text = read_text_file(path, InvalidBeir)
    out = []
    for number, line in numbered_lines(text):
        if not line.strip(ASCII_SPACE):
            continue
        obj = parse_json_line(line, path, number, InvalidBeir)
        if not isinstance(obj, dict):
            raise InvalidBeir(path, number, None, 'expected an object {"_id": ..., "text": ...}')
        out.append((number, obj))
    return out


def _id(obj: dict[str, Any], path: Path, number: int, seen: dict[str, int]) -> str:
    if "_id" not in obj:
        raise InvalidBeir(path, number, "_id", "missing; expected the id as a string")
    value = obj["_id"]
    if not isinstance(value, str) or not value:
        raise InvalidBeir(
            path,
            number,
            "_id",
            f'expected a non-empty string (ids are text: write "1", not 1), got {clip_text(json.dumps(value))}',
        )
    if has_space(value):
        raise InvalidBeir(
            path, number, "_id", f"{shown_value(value)} holds whitespace; expected an id without spaces"
        )
    check_text(value, path, number, "_id", InvalidBeir)
    check_id(value, path, number, "_id", InvalidBeir)
    if value in seen:
        raise InvalidBeir(
            path, number, "_id", f"{shown_value(value)} already on line {seen[value]}; expected each id once"
        )
    seen[value] = number
    return value


def _string(obj: dict[str, Any], key: str, path: Path, number: int, required: bool) -> str:
    if key not in obj:
        if required:
            raise InvalidBeir(path, number, key, "missing; expected a string")
        return ""
    value = obj[key]
    if not isinstance(value, str):
        raise InvalidBeir(path, number, key, f"expected a string, got {json.dumps(value)[:40]}")
    check_text(value, path, number, key, InvalidBeir)
    return value


def _metadata(obj: dict[str, Any], path: Path, number: int) -> None:
    if "metadata" in obj and not isinstance(obj["metadata"], dict):
        raise InvalidBeir(path, number, "metadata", "expected an object")


def _read_corpus(path: Path) -> list[dict[str, Any]]:
    chunks: list[dict[str, Any]] = []
    seen: dict[str, int] = {}
    for number, obj in _objects(path):
        doc = _id(obj, path, number, seen)
        title = _string(obj, "title", path, number, required=False)
        body = _string(obj, "text", path, number, required=True)
        _metadata(obj, path, number)
        parts = [part for part in (title, body) if part.strip()]
        if not parts:
            raise InvalidBeir(path, number, "text", "empty and no title; expected the document's text")
        chunk: dict[str, Any] = {"id": doc, "text": "\n\n".join(parts)}
        if title.strip():
            chunk["title"] = title
        if "metadata" in obj:
            chunk["metadata"] = obj["metadata"]
        chunks.append(chunk)
    if not chunks:
        raise InvalidBeir(path, None, None, "no documents; expected one JSON object per line")
    return chunks


def _read_queries(path: Path) -> dict[str, str]:
    queries: dict[str, str] = {}
    seen: dict[str, int] = {}
    for number, obj in _objects(path):
        qid = _id(obj, path, number, seen)
        text = _string(obj, "text", path, number, required=True)
        if not text.strip():
            raise InvalidBeir(path, number, "text", "empty; expected the query text")
        _metadata(obj, path, number)
        queries[qid] = text
    if not queries:
        raise InvalidBeir(path, None, None, "no queries; expected one JSON object per line")
    return queries


def _read_qrels(path: Path) -> Qrels:
    require_file(path, InvalidBeir)
    text = read_text_file(path, InvalidBeir)
    judgments = JudgmentLines(path, InvalidBeir, "score", "scored")
    lines = numbered_lines(text)
    _, header = next(iter(lines))
    if header != QRELS_HEADER:
        raise InvalidBeir(
            path,
            1,
            None,
            f"expected the header 'query-id<TAB>corpus-id<TAB>score', got {shown_value(header)}",
        )
    for number, line in lines:
        if not line.strip(ASCII_SPACE):
            continue
        fields = line.split("\t")
        if len(fields) != 3:
            raise InvalidBeir(
                path,
                number,
                None,
                f"expected 3 TAB-separated columns (query-id, corpus-id, score), got {len(fields)}",
            )
        qid, doc, raw_score = fields
        for value, name in ((qid, "query-id"), (doc, "corpus-id")):
            if not value or has_space(value):
                raise InvalidBeir(
                    path, number, name, f"{shown_value(value)}: expected a non-empty id without spaces"
                )
            check_id(value, path, number, name, InvalidBeir)
        judgments.add(qid, doc, judgments.parse(raw_score, number), number)
    grades = judgments.grades
    if not grades:
        raise InvalidBeir(
            path, None, None, "no judgments after the header; expected query-id, corpus-id, score lines"
        )
    return Qrels(grades=grades, path=str(path))


ZIP_LIMIT_BYTES = 2 * 1024**3  # what a zipped BEIR folder may unpack to (the Data page's upload)
# the entries a zipped BEIR folder may hold (it needs a handful: corpus, queries, a few qrels), and the
# bytes its central directory may take (1 KiB an entry): both read from the zip's last record, before
# the directory is parsed (200,000 empty entries in a 20 MB zip took a minute to unpack)
ZIP_MAX_ENTRIES = 1000
ZIP_DIRECTORY_BYTES = ZIP_MAX_ENTRIES * 1024
_END = struct.Struct("<4s4H2LH")  # the end of central directory record
_END64 = struct.Struct("<4sQ2H2L4Q")  # the ZIP64 one, just before its locator
_LOCATOR64 = struct.Struct("<4sLQL")


def _zip_directory(archive: str | os.PathLike[str]) -> tuple[int, int] | None:
    """(entries, bytes) of a zip's central directory as its last record (ZIP64's when there is one)
    says; None when there is no such record (not a zip: :class:`zipfile.ZipFile` says so)."""
    with open(archive, "rb") as f:
        f.seek(0, os.SEEK_END)
        size = f.tell()
        start = max(0, size - _END.size - 0xFFFF)  # the record, then a comment of up to 64 KiB
        f.seek(start)
        tail = f.read()
        at = tail.rfind(b"PK\x05\x06")
        if at < 0 or len(tail) - at < _END.size:
            return None
        _sig, _disk, _first, _here, entries, directory, _offset, _comment = _END.unpack_from(tail, at)
        where = start + at - _LOCATOR64.size - _END64.size
        if where >= 0:
            f.seek(where)
            block = f.read(_END64.size + _LOCATOR64.size)
            if block[_END64.size : _END64.size + 4] == b"PK\x06\x07" and block[:4] == b"PK\x06\x06":
                fields = _END64.unpack_from(block)
                entries, directory = fields[7], fields[8]
    return entries, directory


def unpack_beir_zip(
    archive: str | os.PathLike[str], dest: str | os.PathLike[str], name: str | None = None
) -> Path:
    """A BEIR folder uploaded as a .zip, unpacked into ``dest``: the folder that holds
    ``corpus.jsonl`` (the zip's root, or its one top folder). Refused, before anything is
    unpacked, with :class:`InvalidBeir` naming the upload (``name``): not a zip, a member
    whose path leaves ``dest`` (absolute, ``..``), a link, more than :data:`ZIP_LIMIT_BYTES`
    unpacked, more than :data:`ZIP_MAX_ENTRIES` entries (counted before the zip's directory is
    read), or no ``corpus.jsonl``."""
    shown = name or str(archive)
    directory = _zip_directory(archive)
    if directory is not None and (directory[0] > ZIP_MAX_ENTRIES or directory[1] > ZIP_DIRECTORY_BYTES):
        raise InvalidBeir(
            shown,
            None,
            None,
            f"holds {directory[0]:,} entries ({directory[1]:,} bytes of directory); the limit is "
            f"{ZIP_MAX_ENTRIES:,} entries ({ZIP_DIRECTORY_BYTES:,} bytes of directory): zip the BEIR "
            "folder alone (corpus.jsonl, queries.jsonl, qrels/*.tsv)",
        )
    try:
        with zipfile.ZipFile(archive) as zipped:
            members = zipped.infolist()
            if len(members) > ZIP_MAX_ENTRIES:  # a directory longer than its last record says
                raise InvalidBeir(
                    shown, None, None, f"holds {len(members):,} entries; the limit is {ZIP_MAX_ENTRIES:,}"
                )
            total = 0
            for member in members:
                parts = PurePosixPath(member.filename).parts
                if member.filename.startswith(("/", "\\")) or ".." in parts or ":" in member.filename:
                    raise InvalidBeir(shown, None, None, f"member {member.filename!r} leaves the folder")
                if (member.external_attr >> 16) & 0o170000 == 0o120000:
                    raise InvalidBeir(shown, None, None, f"member {member.filename!r} is a link")
                total += member.file_size
            if total > ZIP_LIMIT_BYTES:
                raise InvalidBeir(
                    shown, None, None, f"unpacks to {total:,} bytes; the limit is {ZIP_LIMIT_BYTES:,}"
                )
            corpora = sorted(
                PurePosixPath(m.filename).parent
                for m in members
                if PurePosixPath(m.filename).name == "corpus.jsonl"
            )
            if not corpora:
                raise InvalidBeir(
                    shown,
                    None,
                    None,
                    "no corpus.jsonl; expected a zipped BEIR folder (corpus.jsonl, "
                    "queries.jsonl, qrels/*.tsv)",
                )
            if len(corpora) > 1:
                raise InvalidBeir(
                    shown, None, None, f"{len(corpora)} corpus.jsonl files; expected one BEIR folder"
                )
            zipped.extractall(dest)
    except zipfile.BadZipFile as exc:
        raise InvalidBeir(shown, None, None, f"not a zip file ({exc})") from None
    return Path(dest).joinpath(*corpora[0].parts)
