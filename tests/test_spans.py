"""#44 items 1-2: chunks files, the fixed chunker, evidence spans and chunk offsets in golden.yaml,
Chroma's questions read into evidence."""

from __future__ import annotations

import csv
import json

import pytest

from annotation.__main__ import main as annotation_main
from annotation.chunking import ChunkingError, fixed_chunks, paragraph_chunks
from annotation.formats.chroma import read_chroma_questions
from annotation.formats.chunks import read_chunks, read_documents, write_chunks
from annotation.formats.golden import read_golden, write_golden
from annotation.formats.records import read_corpus
from annotation.model import (
    ChunkSpan,
    Evidence,
    InvalidChunks,
    InvalidCorpus,
    InvalidGolden,
    InvalidTable,
    Qrels,
)
from annotation.store import Store
from tests.conftest import EXAMPLE, cli, shared_dir

SHARED = shared_dir()
CHROMA = (SHARED / "data" / "chroma_chunking") if SHARED is not None else None
needs_chroma = pytest.mark.skipif(CHROMA is None, reason="the shared chroma_chunking data is not here")


def test_fixed_chunks_by_hand() -> None:
    docs = {"a": "0123456789", "b": "xyz"}
    # size 4, overlap 1: starts 0, 3, 6 (6..10 reaches the end)
    assert fixed_chunks(docs, 4, 1) == [
        ChunkSpan("a#4-1#0", "a", 0, 4),
        ChunkSpan("a#4-1#1", "a", 3, 7),
        ChunkSpan("a#4-1#2", "a", 6, 10),
        ChunkSpan("b#4-1#0", "b", 0, 3),
    ]
    assert [(c.start, c.end) for c in fixed_chunks({"a": "0123456789"}, 5)] == [(0, 5), (5, 10)]
    with pytest.raises(ChunkingError, match="0 <= overlap < size"):
        fixed_chunks(docs, 4, 4)
    with pytest.raises(ChunkingError, match="whitespace"):
        fixed_chunks({"a b": "text"}, 4)


def test_paragraph_chunks_by_hand() -> None:
    # lines at [0, 3) "aaa", [4, 6) "bb", a blank line, [8, 18) "cccccccccc", "  " (whitespace only),
    # [22, 23) "d"; size 7: "aaa\nbb" packs (6 characters), the 10-character line is cut 7 + 3, and
    # its piece [15, 18) takes "d" ([15, 23): 8 characters > 7, so not)
    text = "aaa\nbb\n\ncccccccccc\n  \nd"
    assert [(c.id, c.start, c.end) for c in paragraph_chunks({"a": text}, 7)] == [
        ("a#p7#0", 0, 6),
        ("a#p7#1", 8, 15),
        ("a#p7#2", 15, 18),
        ("a#p7#3", 22, 23),
    ]
    assert [(c.start, c.end) for c in paragraph_chunks({"a": text}, 100)] == [(0, 23)]
    # every chunk starts and ends on a line's characters, never a line break; each at most size
    for size in (1, 2, 5, 9, 40):
        chunks = paragraph_chunks({"a": text, "b": "x\r\ny y\n"}, size)
        for c in chunks:
            body = {"a": text, "b": "x\r\ny y\n"}[c.doc][c.start : c.end]
            assert 0 < len(body) <= size and body[0] not in "\r\n" and body[-1] not in "\r\n"
    assert paragraph_chunks({"e": "", "f": "\n \n"}, 5) == []
    with pytest.raises(ChunkingError, match="at least 1"):
        paragraph_chunks({"a": text}, 0)
    with pytest.raises(ChunkingError, match="whitespace"):
        paragraph_chunks({"a b": text}, 4)


def test_chunks_file_round_trip_and_text_check(tmp_path) -> None:
    docs = {"a": "hello world", "b": "second"}
    chunks = [ChunkSpan("a#0", "a", 0, 5), ChunkSpan("a#1", "a", 6, 11), ChunkSpan("b#0", "b", 0, 6)]
    path = tmp_path / "c.jsonl"
    write_chunks(path, chunks, docs)
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert lines[1] == {"id": "a#1", "doc": "a", "start": 6, "end": 11, "text": "world"}
    assert read_chunks(path, docs) == chunks
    assert read_chunks(path) == chunks  # without documents: offsets only
    bad = tmp_path / "bad.jsonl"
    bad.write_text(path.read_text().replace('"world"', '"worle"'))
    with pytest.raises(InvalidChunks) as exc:
        read_chunks(bad, docs)
    assert exc.value.line == 2 and exc.value.field == "text"


@pytest.mark.parametrize(
    "line, field, words",
    [
        ('{"id": "c", "doc": "a", "start": 3, "end": 3}', "end", "not after start 3"),
        ('{"id": "c", "doc": "a", "start": -1, "end": 3}', "start", "offset"),
        ('{"id": "c", "doc": "a", "start": true, "end": 3}', "start", "offset"),
        ('{"id": "c d", "doc": "a", "start": 0, "end": 3}', "id", "whitespace"),
        ('{"id": "c", "doc": "zz", "start": 0, "end": 3}', "doc", "not a document given"),
        ('{"id": "c", "doc": "a", "start": 0, "end": 12}', "end", "past the end of 'a' (11 characters)"),
        ('{"id": "c", "start": 0, "end": 3}', "doc", "missing"),
    ],
)
def test_chunks_file_errors_name_line_and_field(tmp_path, line, field, words) -> None:
    path = tmp_path / "c.jsonl"
    path.write_text('{"id": "ok", "doc": "a", "start": 0, "end": 2}\n' + line + "\n")
    with pytest.raises(InvalidChunks) as exc:
        read_chunks(path, {"a": "hello world"})
    assert (exc.value.line, exc.value.field) == (2, field)
    assert words in str(exc.value)


def test_duplicate_chunk_id_names_the_first_line(tmp_path) -> None:
    path = tmp_path / "c.jsonl"
    path.write_text(
        '{"id": "x", "doc": "a", "start": 0, "end": 2}\n{"id": "x", "doc": "a", "start": 2, "end": 4}\n'
    )
    with pytest.raises(InvalidChunks, match="already on line 1"):
        read_chunks(path)


GOLDEN_SPANS = """\
grade_scale:
  0: none
  1: some
  2: most
chunks:
  c1:
    doc: d
    start: 0
    end: 10
queries:
- id: q1
  text: where
  grades:
    c1: 2
  evidence:
  - doc: d
    start: 3
    end: 7
    grade: 2
- id: q2
  evidence:
  - doc: e
    start: 0
    end: 4
    grade: 1
"""


def test_golden_reads_and_writes_spans_byte_identical(tmp_path) -> None:
    path = tmp_path / "g.yaml"
    path.write_text(GOLDEN_SPANS)
    golden = read_golden(path)
    assert golden.chunk_spans == {"c1": ChunkSpan("c1", "d", 0, 10)}
    assert golden.evidence == {"q1": [Evidence("d", 3, 7, 2)], "q2": [Evidence("e", 0, 4, 1)]}
    assert golden.grades == {"q1": {"c1": 2}, "q2": {}}
    out = tmp_path / "out.yaml"
    write_golden(golden, out)
    assert out.read_text() == GOLDEN_SPANS


@pytest.mark.parametrize("name", ["golden.yaml", "sampled.yaml", "dupe.yaml"])
def test_golden_without_spans_round_trips_unchanged(tmp_path, name) -> None:
    """An older file (no chunks, no evidence): read and written twice, the same bytes, no new key."""
    first, second = tmp_path / "1.yaml", tmp_path / "2.yaml"
    write_golden(read_golden(EXAMPLE / name), first)
    write_golden(read_golden(first), second)
    assert first.read_bytes() == second.read_bytes()
    text = first.read_text()
    assert "evidence:" not in text and "\nchunks:" not in text
    assert read_golden(first).evidence == {} and read_golden(first).chunk_spans == {}


@pytest.mark.parametrize(
    "old, new, field, words",
    [
        (
            "    start: 3\n    end: 7",
            "    start: 7\n    end: 7",
            "queries[0].evidence[0].end",
            "not after start 7",
        ),
        ("    grade: 2\n- id: q2", "    grade: 5\n- id: q2", "queries[0].evidence[0].grade", "0-2"),
        ("    start: 0\n    end: 10", "    start: -1\n    end: 10", "chunks.c1.start", "offset >= 0"),
        ("    grade: 1\n", "    grade: 1\n    why: no\n", "queries[1].evidence[0].why", "unknown key"),
        ("- id: q2\n  evidence:", "- id: q2\n  other:", "queries[1].other", "unknown key"),
    ],
)
def test_golden_span_errors_name_line_and_field(tmp_path, old, new, field, words) -> None:
    path = tmp_path / "g.yaml"
    assert old in GOLDEN_SPANS
    path.write_text(GOLDEN_SPANS.replace(old, new))
    with pytest.raises(InvalidGolden) as exc:
        read_golden(path)
    assert exc.value.field == field and words in str(exc.value)
    assert exc.value.line is not None


def test_a_query_without_grades_or_evidence_is_refused(tmp_path) -> None:
    path = tmp_path / "g.yaml"
    path.write_text("queries:\n- id: q1\n  text: t\n")
    with pytest.raises(InvalidGolden, match="or evidence"):
        read_golden(path)


def test_chroma_reader_by_hand(tmp_path) -> None:
    corpus = tmp_path / "corp.md"
    corpus.write_text("The cat sat. The dog ran.")
    questions = tmp_path / "q.csv"
    refs = json.dumps([{"content": "The dog ran.", "start_index": 13, "end_index": 25}])
    questions.write_text('question,references,corpus_id\nWho ran?,"' + refs.replace('"', '""') + '",corp\n')
    golden = read_chroma_questions(questions, read_documents([corpus]))
    assert golden.evidence == {"q1": [Evidence("corp", 13, 25, 2)]} and golden.texts == {"q1": "Who ran?"}
    questions.write_text(questions.read_text().replace("The dog ran.", "The dog sat."))
    with pytest.raises(InvalidTable) as exc:
        read_chroma_questions(questions, read_documents([corpus]))
    assert exc.value.line == 2 and exc.value.field == "references[0].content"


@needs_chroma
def test_import_chroma_and_chunk_commands(tmp_path, capsys) -> None:
    golden = tmp_path / "golden.yaml"
    code, out, err = cli(
        annotation_main,
        capsys,
        "import-chroma",
        CHROMA / "questions.csv",
        "--corpora",
        CHROMA / "corpora",
        "-o",
        golden,
    )
    assert (code, err) == (0, "")
    assert out == f"wrote 319 queries with 539 evidence spans (grade 2) to {golden}\n"
    qrels = read_golden(golden)
    documents = read_documents([CHROMA / "corpora"])
    assert sum(len(v) for v in qrels.evidence.values()) == 539
    # every span is the text Chroma quoted: checked against the CSV independently of the reader
    rows = list(csv.DictReader((CHROMA / "questions.csv").open(encoding="utf-8")))
    for row, (_qid, spans) in zip(rows, qrels.evidence.items()):
        refs = json.loads(row["references"])
        assert [documents[s.doc][s.start : s.end] for s in spans] == [r["content"] for r in refs]
    chunks = tmp_path / "b.jsonl"
    code, out, _ = cli(
        annotation_main, capsys, "chunk", CHROMA / "corpora", "--size", 800, "--overlap", 200, "-o", chunks
    )
    sizes = {doc: len(text) for doc, text in documents.items()}
    # chunks per document: 1 + ceil((len - 800) / 600), computed here from the lengths
    expected = sum(1 + -(-(n - 800) // 600) for n in sizes.values())
    assert code == 0 and out.startswith(f"wrote {expected} chunks of 3 documents")
    assert len(read_chunks(chunks, documents)) == expected


def test_chunk_command_refuses_bad_overlap(tmp_path, capsys) -> None:
    doc = tmp_path / "d.txt"
    doc.write_text("some text here")
    code, out, err = cli(
        annotation_main, capsys, "chunk", doc, "--size", 4, "--overlap", 4, "-o", tmp_path / "c.jsonl"
    )
    assert code == 2 and out == "" and err.count("\n") == 1 and "overlap" in err
    assert not (tmp_path / "c.jsonl").exists()
    code, out, err = cli(
        annotation_main,
        capsys,
        "chunk",
        doc,
        "--size",
        4,
        "--overlap",
        1,
        "--by",
        "paragraph",
        "-o",
        tmp_path / "c.jsonl",
    )
    assert code == 2 and out == "" and err.count("\n") == 1 and "paragraphs do not overlap" in err
    assert not (tmp_path / "c.jsonl").exists()


def test_chunk_command_by_paragraph(tmp_path, capsys) -> None:
    doc = tmp_path / "d.txt"
    doc.write_text("first line\nsecond\n\nthird one here\n")
    code, out, err = cli(
        annotation_main, capsys, "chunk", doc, "--size", 20, "--by", "paragraph", "-o", tmp_path / "c.jsonl"
    )
    assert (code, err) == (0, "")
    assert out == (
        f"wrote 2 chunks of 1 document (paragraphs, at most 20 characters) to {tmp_path / 'c.jsonl'}\n"
        "read as documents: d.txt\n"
    )
    got = [(c.id, c.start, c.end) for c in read_chunks(tmp_path / "c.jsonl", read_documents([doc]))]
    assert got == [("d#p20#0", 0, 17), ("d#p20#1", 19, 33)]


def test_chunk_command_names_what_it_read_and_skipped(tmp_path, capsys) -> None:
    """A folder's files are read (named, the first five and how many more), its subfolders are not
    (named too); a folder holding only subfolders is refused, nothing written."""
    folder = tmp_path / "docs"
    (folder / "corpora").mkdir(parents=True)
    (folder / "corpora" / "inner.md").write_text("not read")
    for name in ("LICENSE", "notes.md", "questions.csv"):
        (folder / name).write_text("0123456789")
    out_path = tmp_path / "c.jsonl"
    code, out, err = cli(annotation_main, capsys, "chunk", folder, "--size", 4, "-o", out_path)
    assert (code, err) == (0, "")
    # 10 characters in chunks of 4: 3 chunks a document
    assert out == (
        f"wrote 9 chunks of 3 documents (4 characters, overlap 0) to {out_path}\n"
        "read as documents: LICENSE, notes.md, questions.csv\n"
        "skipped, not files (subfolders are not read; give a subfolder itself to read its files): corpora/\n"
    )
    many = tmp_path / "many"
    many.mkdir()
    for n in range(7):
        (many / f"d{n}.txt").write_text("abc")
    code, out, _ = cli(annotation_main, capsys, "chunk", many, "--size", 4, "-o", out_path)
    assert code == 0 and out.splitlines()[1:] == [
        "read as documents: d0.txt, d1.txt, d2.txt, d3.txt, d4.txt and 2 more"
    ]
    only = tmp_path / "only"
    (only / "corpora").mkdir(parents=True)
    code, out, err = cli(annotation_main, capsys, "chunk", only, "--size", 4, "-o", tmp_path / "none.jsonl")
    assert (code, out) == (2, "") and err == (
        f"error: {only}: holds no file (1 other entry, such as 'corpora': subfolders are not read; give a "
        "subfolder itself to read its files); expected text files\n"
    )
    assert not (tmp_path / "none.jsonl").exists()


def test_two_chunkings_never_share_an_id(tmp_path) -> None:
    """Ids name their chunking: 400/0, 400/100, 800/0 and paragraphs of 400 of one document share
    none; such an id is a TREC line's docno and a golden.yaml key as it is; old ids (d#0) still read."""
    docs = {"d": ("word " * 100 + "\n") * 5}  # 2,505 characters
    chunkings = [fixed_chunks(docs, 400), fixed_chunks(docs, 400, 100), fixed_chunks(docs, 800)]
    chunkings.append(paragraph_chunks(docs, 400))
    ids = [{c.id for c in chunking} for chunking in chunkings]
    assert [len(i) for i in ids] == [7, 9, 4, 10]  # ceil(2505/400), 1 + ceil(2105/300), ceil(2505/800), 2 x 5
    assert sum(len(i) for i in ids) == len(set().union(*ids))
    assert chunkings[0][1].id == "d#400-0#1" and chunkings[3][1].id == "d#p400#1"
    golden = Qrels(
        grades={"q1": {"d#400-0#1": 2, "d#0": 1}},
        texts={"q1": "q"},
        chunk_spans={"d#400-0#1": ChunkSpan("d#400-0#1", "d", 400, 800), "d#0": ChunkSpan("d#0", "d", 0, 10)},
    )
    write_golden(golden, tmp_path / "g.yaml")
    back = read_golden(tmp_path / "g.yaml")
    assert back.grades == golden.grades and back.chunk_spans == golden.chunk_spans


def test_import_keeps_a_chunks_origin_and_the_golden_export_writes_it(tmp_path, capsys) -> None:
    """A corpus line with doc/start/end: kept in the store's own columns (m022), not in meta, and
    written by the golden.yaml export as its chunks section; a chunk without them has no entry."""
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text(
        '{"id": "c1", "text": "hello", "doc": "d", "start": 6, "end": 11}\n{"id": "c2", "text": "plain chunk"}\n'
    )
    golden_in = tmp_path / "labels.yaml"
    golden_in.write_text("queries:\n- id: q1\n  text: hi\n  grades:\n    c1: 2\n    c2: 0\n")
    db = tmp_path / "s.db"
    code, _, err = cli(annotation_main, capsys, "import", "--db", db, "--corpus", corpus)
    assert code == 0, err
    code, _, err = cli(
        annotation_main, capsys, "import", "--db", db, "--labels", golden_in, "--annotator", "ann"
    )
    assert code == 0, err
    with Store(str(db)) as store:
        assert store.chunk_spans(["c1", "c2", "zz"]) == {"c1": ("d", 6, 11)}
        assert store.chunks_in_import_order()[0][3] is None  # the offsets are not kept twice, in meta
    out = tmp_path / "out.yaml"
    code, _, err = cli(annotation_main, capsys, "export", "--db", db, "--format", "golden", "-o", out)
    assert code == 0, err
    exported = read_golden(out)
    assert exported.chunk_spans == {"c1": ChunkSpan("c1", "d", 6, 11)}
    assert exported.grades == {"q1": {"c1": 2, "c2": 0}}


@pytest.mark.parametrize(
    "line, field",
    [
        ('{"id": "c", "text": "hello", "doc": "d", "start": 6}', "end"),
        ('{"id": "c", "text": "hello", "doc": "d", "start": 6, "end": 10}', "end"),  # 4 != 5 characters
        ('{"id": "c", "text": "hello", "doc": "", "start": 6, "end": 11}', "doc"),
        ('{"id": "c", "text": "hello", "doc": "d", "start": -6, "end": 11}', "start"),
    ],
)
def test_corpus_offsets_are_checked(tmp_path, line, field) -> None:
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text(line + "\n")
    with pytest.raises(InvalidCorpus) as exc:
        read_corpus(corpus)
    assert (exc.value.line, exc.value.field) == (1, field)
