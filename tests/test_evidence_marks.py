"""#44 item 2: sentences marked as evidence inside a chunk (the splitter, the store's
append-only marks on both backends, the golden.yaml export, and `project` of what it writes)."""

from __future__ import annotations

import pytest

from annotation.__main__ import main as annotation_main
from annotation.formats.golden import read_golden
from annotation.model import ChunkSpan, Evidence
from annotation.sentences import sentence_spans
from annotation.store import Store, StoreError, UnplacedChunk
from annotation.views import marking_view
from calibration import actions
from tests.conftest import cli, integrity_errors

DOC = "Intro text here. Aspirin was first made in 1897. It thins the blood! Other things follow."
# chunk c1 is DOC[17:68] (two sentences); c2 has no place in a document


@pytest.mark.parametrize(
    "text, expected",
    [
        ("One. Two! Three?", ["One.", "Two!", "Three?"]),
        ("  lead and trail  ", ["lead and trail"]),
        ('He said "Stop." Then left.', ['He said "Stop."', "Then left."]),
        ("no stop\n\nnew paragraph", ["no stop", "new paragraph"]),
        ("version 1.5 is out. ok", ["version 1.5 is out.", "ok"]),
        ("   \n ", []),
    ],
)
def test_sentence_spans_by_hand(text, expected) -> None:
    spans = sentence_spans(text)
    assert [text[start:end] for start, end in spans] == expected
    assert all(text[start:end].strip() == text[start:end] for start, end in spans)


def test_sentence_offsets_exact() -> None:
    assert sentence_spans(DOC[17:68]) == [(0, 31), (32, 51)]


def _store_with_items(db: str, tmp_path, capsys) -> None:
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text(
        f'{{"id": "c1", "text": "{DOC[17:68]}", "doc": "d", "start": 17, "end": 68}}\n'
        '{"id": "c2", "text": "plain chunk"}\n'
    )
    labels = tmp_path / "labels.yaml"
    labels.write_text("queries:\n- id: q1\n  text: when was aspirin made?\n  grades:\n    c1: 3\n    c2: 0\n")
    assert cli(annotation_main, capsys, "import", "--db", db, "--corpus", corpus)[0] == 0
    code, _, err = cli(
        annotation_main, capsys, "import", "--db", db, "--labels", labels, "--annotator", "ann"
    )
    assert code == 0, err


def _item(store: Store, chunk: str) -> int:
    return next(item for item, _, c in store.chunk_items() if c == chunk)


def test_marks_are_spans_of_the_document_and_append_only(db_at, tmp_path, capsys) -> None:
    _store_with_items(db_at, tmp_path, capsys)
    with Store(db_at) as store:
        store.annotator_id("bob")
        c1, c2 = _item(store, "c1"), _item(store, "c2")
        assert store.chunk_place(c1) == ("d", 17, 68)
        with pytest.raises(UnplacedChunk, match="place in its document is not known"):
            store.mark_evidence(c2, "ann", [(0, 5)])
        with pytest.raises(StoreError, match="outside the chunk"):
            store.mark_evidence(c1, "ann", [(40, 60)])
        store.mark_evidence(c1, "ann", [(32, 51), (0, 31)])
        store.mark_evidence(c1, "ann", [(0, 31)])  # a correction: a new row, the newest counts
        store.mark_evidence(c1, "bob", [(32, 51)])
        assert store.my_marks(c1, "ann") == [(0, 31)] and store.my_marks(c1, "bob") == [(32, 51)]
        marks = store.current_marks()
        assert [(m["annotator"], m["doc"], m["spans"]) for m in marks] == [
            ("ann", "d", [(17, 48)]),
            ("bob", "d", [(49, 68)]),
        ]
        assert DOC[17:48] == "Aspirin was first made in 1897." and DOC[49:68] == "It thins the blood!"
        store.mark_evidence(c1, "bob", [])  # taken back
        assert [m["annotator"] for m in store.current_marks()] == ["ann"]
        assert store.current_marks("bob") == [] and store.my_marks(c1, "bob") == []
        with pytest.raises(integrity_errors(), match="append-only"):
            with store.write() as db:
                db.execute("DELETE FROM evidence_marks")
        assert store.db.execute("SELECT count(*) FROM evidence_marks").fetchone()[0] == 4


def test_golden_export_writes_marks_as_evidence_and_project_finds_the_chunk(tmp_path, capsys) -> None:
    db = str(tmp_path / "s.db")
    _store_with_items(db, tmp_path, capsys)
    with Store(db) as store:
        store.annotator_id("bob")
        c1 = _item(store, "c1")
        store.mark_evidence(c1, "ann", [(0, 31)])  # ann graded c1 3
        store.mark_evidence(c1, "bob", [(32, 51)])  # bob has no grade of c1: left out, said
    out = tmp_path / "golden.yaml"
    code, said, err = cli(annotation_main, capsys, "export", "--db", db, "--format", "golden", "-o", out)
    assert code == 0, err
    assert "1 marked chunk left out of evidence" in said + err
    golden = read_golden(out)
    assert golden.evidence == {"q1": [Evidence("d", 17, 48, 3)]}
    assert golden.grades == {"q1": {"c1": 3, "c2": 0}}  # the grade stays what it is
    # onto another chunking: [0, 30), [30, 60), [60, 90): the span [17, 48) lies 18/31 in the second, 13/31 in the first
    other = [ChunkSpan("d#0", "d", 0, 30), ChunkSpan("d#1", "d", 30, 60), ChunkSpan("d#2", "d", 60, 90)]
    projected = actions.project(golden, other)
    assert projected.golden.grades["q1"] == {"d#0": 0, "d#1": 3}  # d#0 holds 13/31: below the bar


def test_the_picker_shows_the_persons_own_marks_only(tmp_path, capsys) -> None:
    db = str(tmp_path / "s.db")
    _store_with_items(db, tmp_path, capsys)
    with Store(db) as store:
        store.annotator_id("bob")
        c1, c2 = _item(store, "c1"), _item(store, "c2")
        store.mark_evidence(c1, "bob", [(32, 51)])
        store.mark_evidence(c1, "ann", [(0, 31)])
        text = DOC[17:68]
        assert marking_view(store, c1, "ann", text) == [(0, 31, True), (32, 51, False)]
        assert marking_view(store, c1, "bob", text) == [(0, 31, False), (32, 51, True)]
        with pytest.raises(StoreError, match="does not match its place"):
            marking_view(store, c1, "ann", text + "!")
        with pytest.raises(UnplacedChunk):
            marking_view(store, c2, "ann", "plain chunk")
