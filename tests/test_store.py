"""The label store: append-only labels, undo, newest wins, atomic and idempotent imports."""

from __future__ import annotations

import sqlite3

import pytest

from annotation.formats.golden import read_golden
from annotation.formats.rankings import read_rankings
from annotation.formats.records import read_corpus, read_queries
from annotation.model import Qrels, Run
from annotation.store import ImportConflict, Store, StoreError
from annotation.store.migrations import migration_names
from tests.conftest import EXAMPLE, integrity_errors


@pytest.fixture
def store(db_at):
    """A new store on each backend (SQLite and PostgreSQL: the ``db_at`` fixture)."""
    s = Store(db_at)
    yield s
    s.close()  # every test database is closed (STYLE)


def test_sqlite_is_wal(tmp_path) -> None:
    with Store(tmp_path / "m.db") as first:
        assert first.db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_schema_and_migrations_once(db_at) -> None:
    with Store(db_at) as first:
        tables = first._tables()
    assert {
        "queries",
        "chunks",
        "runs",
        "rankings",
        "traces",
        "items",
        "assignments",
        "labels",
        "annotators",
        "judges",
        "judge_labels",
        "calibrations",
    } <= tables
    with Store(db_at) as again:  # opening again applies nothing twice
        applied = again._applied()
    # m001 schema ... m016 provider sign-in, m017 batch calls, m018 subject issuer, m019 verdict looks, m020 lease sessions, m021 batches, m022 label reviews, m023 guidelines, m024 chunk spans, m025 evidence marks: each once, in order
    assert list(applied) == migration_names() and len(migration_names()) == 25


def test_labels_are_append_only(store) -> None:
    store.import_labels(Qrels(grades={"q": {"d": 2}}), annotator="ann")
    with pytest.raises(integrity_errors(), match="append-only"):
        store.db.execute("UPDATE labels SET value = 0")
    with pytest.raises(integrity_errors(), match="append-only"):
        store.db.execute("DELETE FROM labels")
    if store.dialect == "postgresql":  # TRUNCATE fires no row trigger: its own guard
        with pytest.raises(integrity_errors(), match="append-only"):
            store.db.execute("TRUNCATE labels CASCADE")
    assert store.db.execute("SELECT value FROM labels").fetchall() == [(2,)]


def test_correction_newest_wins_and_undo_appends(store) -> None:
    store.import_labels(Qrels(grades={"q": {"d": 1}}), annotator="ann")
    item = store.current_labels("ann")[0]["item_id"]
    store.add_label(item, "ann", 3, seconds=4.5)
    assert [label["value"] for label in store.current_labels("ann")] == [3]
    store.undo(item, "ann")
    assert store.current_labels("ann") == []  # the retraction counts, nothing deleted
    assert [r[0] for r in store.db.execute("SELECT value FROM labels ORDER BY id").fetchall()] == [1, 3, None]
    with pytest.raises(StoreError, match="no label on item"):
        store.undo(item, "ann")
    with pytest.raises(ValueError, match="not on the relevance scale"):
        store.add_label(item, "ann", 7)
    with pytest.raises(StoreError, match="no annotator named 'nobody'"):
        store.add_label(item, "nobody", 1)


def test_worked_example_imports_whole_and_again_changes_nothing(store) -> None:
    corpus = read_corpus(EXAMPLE / "corpus.jsonl")
    golden = read_golden(EXAMPLE / "golden.yaml")
    run = read_rankings(EXAMPLE / "run.jsonl")
    assert store.import_corpus(corpus) == {"added": 24, "filled": 0, "unchanged": 0}
    assert store.import_labels(golden, annotator="worked-example") == {"labels": 17, "unchanged": 0}
    assert store.import_run(run, name="retriever", stage="fetch") == {
        "runs": 1,
        "rankings": 40,
        "unchanged": 0,
    }
    before = store.counts()
    assert before == {
        "queries": 4,
        "chunks": 24,
        "runs": 1,
        "rankings": 40,
        "traces": 0,
        "items": 17,
        "annotators": 1,
        "labels": 17,
    }
    assert store.import_corpus(corpus)["unchanged"] == 24
    assert store.import_labels(golden, annotator="worked-example") == {"labels": 0, "unchanged": 17}
    assert store.import_run(run, name="retriever", stage="fetch")["unchanged"] == 40
    assert store.counts() == before
    exported = store.export_qrels("worked-example")
    assert exported.grades == golden.grades
    assert exported.texts == golden.texts


def test_a_conflicting_import_writes_nothing(store) -> None:
    store.import_corpus([{"id": "c1", "text": "first"}])
    before = store.counts()
    with pytest.raises(ImportConflict, match="chunk 'c1' is stored with other text"):
        store.import_corpus([{"id": "c0", "text": "new"}, {"id": "c1", "text": "changed"}])
    assert store.counts() == before  # c0 did not land either
    store.import_run(Run.from_rankings({"q": ["c1"]}), name="r")
    with pytest.raises(ImportConflict, match="run 'r' is stored with other rankings"):
        store.import_run(Run.from_rankings({"q": ["c0", "c1"]}), name="r")


def test_queries_fill_placeholders_from_a_label_file(store, tmp_path) -> None:
    store.import_labels(Qrels(grades={"001": {"d": 1}}), annotator="ann")  # query known by id only
    path = tmp_path / "q.tsv"
    path.write_text("001\thow to store maize\n1\tanother query\n")
    assert store.import_queries(read_queries(path)) == {"added": 1, "filled": 1, "unchanged": 0}
    assert store.db.execute("SELECT id, text FROM queries ORDER BY id").fetchall() == [
        ("001", "how to store maize"),
        ("1", "another query"),
    ]


def test_two_annotators_median(store) -> None:
    store.import_labels(Qrels(grades={"q": {"a": 3, "b": 0}}), annotator="x")
    store.import_labels(Qrels(grades={"q": {"a": 1, "b": 0}}), annotator="y")
    store.import_labels(Qrels(grades={"q": {"a": 2}}), annotator="z")
    assert store.export_qrels().grades == {"q": {"a": 2, "b": 0}}
    assert store.export_qrels("y").grades == {"q": {"a": 1, "b": 0}}


def test_not_a_database(tmp_path) -> None:
    bad = tmp_path / "bad.db"
    bad.write_text("this is not sqlite" * 100)
    with pytest.raises(StoreError, match="not a Denominator database"):
        Store(bad)


def test_aggregates() -> None:
    from annotation.store import aggregate_grades

    assert aggregate_grades([3, 1, 2], "median") == 2
    assert aggregate_grades([3, 1], "median") == 1  # lower middle: a grade someone gave
    assert aggregate_grades([3, 3, 0, 1], "majority") == 3
    assert aggregate_grades([3, 0], "majority") == 0  # tie: lower middle of the tied grades
    assert aggregate_grades([2, 1], "mean") == 2 and aggregate_grades([1, 1, 2], "mean") == 1
    with pytest.raises(StoreError, match="aggregate 'mode'"):
        aggregate_grades([1], "mode")


def test_export_aggregates(store) -> None:
    store.import_labels(Qrels(grades={"q": {"a": 3, "b": 0}}), annotator="x")
    store.import_labels(Qrels(grades={"q": {"a": 3, "b": 2}}), annotator="y")
    store.import_labels(Qrels(grades={"q": {"a": 0, "b": 1}}), annotator="z")
    assert store.export_qrels(aggregate="median").grades == {"q": {"a": 3, "b": 1}}
    assert store.export_qrels(aggregate="majority").grades == {"q": {"a": 3, "b": 1}}
    assert store.export_qrels(aggregate="mean").grades == {"q": {"a": 2, "b": 1}}


def test_reimporting_a_label_file_does_not_undo_later_work(store) -> None:
    """Review finding: a second import of the same file must not bring old grades
    back over a correction or an undo."""
    qrels = Qrels(grades={"q1": {"d1": 2, "d2": 1}})
    store.import_labels(qrels, annotator="cat")
    by_chunk = {label["chunk_id"]: label["item_id"] for label in store.current_labels("cat")}
    store.add_label(by_chunk["d1"], "cat", 3)
    store.undo(by_chunk["d2"], "cat")
    assert store.import_labels(qrels, annotator="cat") == {"labels": 0, "unchanged": 2}
    assert [(lab["chunk_id"], lab["value"]) for lab in store.current_labels("cat")] == [("d1", 3)]


def test_write_errors_are_store_errors(tmp_path) -> None:
    """A database the process cannot write (opened read-only here: file modes do
    not stop root) gives a StoreError naming the cause, and nothing is written."""
    import sqlite_utils

    path = tmp_path / "ro.db"
    with Store(path) as store:
        store.db.conn.close()
        store.db = sqlite_utils.Database(
            sqlite3.connect(f"file:{path}?mode=ro", uri=True, isolation_level=None)
        )
        with pytest.raises(StoreError, match="cannot write .*readonly"):
            store.import_queries({"q": "text"})
    with Store(path) as store:
        assert store.counts()["queries"] == 0


@pytest.mark.postgres
def test_the_tables_whose_insert_returns_its_id_are_the_schemas(pg_url) -> None:
    """postgres.ID_TABLES (a one-row INSERT into them returns its id) is every table keyed by an
    identity ``id`` column, and a returned id is the row's."""
    from annotation.store import postgres

    with Store(pg_url) as store:
        rows = store.db.execute(
            "SELECT table_name FROM information_schema.columns WHERE table_schema = current_schema() "
            "AND column_name = 'id' AND is_identity = 'YES' AND table_name <> '_migrations'"
        ).fetchall()
        assert {r[0] for r in rows} == postgres.ID_TABLES
        store.annotator_id("ann")
        first = store.add_label(store.ensure_item("chunk", query_id=None, chunk_id=None), "ann", 2)
        store.ensure_ids("queries", {"q"})
        second = store.add_label(store.ensure_item("chunk", query_id="q"), "ann", 1)
        assert (first, second) == (1, 2)
        assert store.db.execute("SELECT id, value FROM labels ORDER BY id").fetchall() == [(1, 2), (2, 1)]


def test_a_sqlite_prefix_names_the_same_file(tmp_path) -> None:
    path = tmp_path / "p.db"
    with Store(f"sqlite:{path}") as store:
        store.import_queries({"q1": "one"})
        assert store.path == str(path) and store.dialect == "sqlite"
    with Store(f"sqlite:///{path}") as again, Store(path) as plain:
        assert again.counts()["queries"] == plain.counts()["queries"] == 1


def test_a_label_whose_item_the_write_found_is_one_statement(store) -> None:
    """``add_label(item_found=True)`` (a key press, inside the write whose refusal check found the
    item) writes the label alone, no read of the item first (one round trip fewer on PostgreSQL);
    outside a write it is refused; without it a missing item is refused by name, nothing written."""
    item = store.ensure_item("chunk", query_id=None, chunk_id=None)
    annotator = store.annotator_id("ann")
    sent: list[str] = []
    execute = store.db.execute
    store.db.execute = lambda sql, *a, **k: sent.append(" ".join(sql.split())[:40]) or execute(sql, *a, **k)
    try:
        with store.write():
            sent.clear()  # the write's own BEGIN (PostgreSQL: with its lock)
            first = store.add_label(item, "ann", 2, annotator_id=annotator, item_found=True)
            assert [s.split(" (")[0] for s in sent] == ["INSERT INTO labels"]
        sent.clear()
        with pytest.raises(StoreError, match="outside the write"):
            store.add_label(item, "ann", 1, annotator_id=annotator, item_found=True)
        with pytest.raises(StoreError, match="no item 999"):
            store.add_label(999, "ann", 1, annotator_id=annotator)
        assert any(s.startswith("SELECT 1 FROM items") for s in sent)
    finally:
        store.db.execute = execute
    rows = store.db.execute("SELECT id, value FROM labels WHERE annotator_id = ?", [annotator]).fetchall()
    assert [tuple(r) for r in rows] == [(first, 2)]
