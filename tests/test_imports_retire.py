"""Imports that can be taken back (issue #16 item 5): retire an import and the queues, metrics,
exports and the review no longer count it; restore it and they count it again.

The fixture is two imports made by hand, on disjoint rows:

- import A (by alice): corpus a1 a2 a3, queries qa1 qa2, run ``bm25`` (qa1: a1 a2 a3;
  qa2: a2 a1) and labels by ann (qa1 a1 3, qa1 a2 0, qa2 a2 2);
- import B (by bob): corpus b1 b2, query qb1, run ``dense`` (qb1: b1 b2) and labels by cat
  (qb1 b1 1, qb1 b2 0).

So the store holds 3 queries, 5 chunks, 2 runs, 5+2 = 7 rankings, 5 items, 5 labels; A's share is
2 queries, 3 chunks, 1 run, 5 rankings, 3 items, 3 labels. Every figure below is counted by hand
from these files.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from annotation.__main__ import main
from annotation.cli_base import shown_db
from annotation.exchange import ImportSources, WrongSlot, import_files
from annotation.exports import export_csv, export_qrels, export_trec
from annotation.formats.by_extension import read_judgments
from annotation.store import Store, StoreError, UnknownImport, postgres
from annotation.store.queue import CURRENT_LABEL, OTHER_LABELLERS
from annotation.store.retirements import HELD_TABLES, NONE_RETIRED, all_live, live, live_item
from calibration import actions
from calibration.errors import InvalidInput
from calibration.review import review
from calibration.stored import stored_data, stored_label_sets, stored_qrels, stored_runs
from tests.conftest import cli, integrity_errors

WEEK = "2026-W49"
JUDGE = "f" * 64
GRADES_A = {"qa1": {"a1": 3, "a2": 0}, "qa2": {"a2": 2}}
GRADES_B = {"qb1": {"b1": 1, "b2": 0}}
LIVE_BOTH = {
    "queries": 3,
    "chunks": 5,
    "runs": 2,
    "rankings": 7,
    "traces": 0,
    "items": 5,
    "annotators": 3,  # ann, cat, dan
    "labels": 5,
}
LIVE_B = {
    "queries": 1,
    "chunks": 2,
    "runs": 1,
    "rankings": 2,
    "traces": 0,
    "items": 2,
    "annotators": 3,  # people, never retired
    "labels": 2,
}
HELD_A = {"queries": 2, "chunks": 3, "runs": 1, "labels": 3}
HELD_B = {"queries": 1, "chunks": 2, "runs": 1, "labels": 2}


# ---------------------------------------------------------------- files made by hand


def jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def corpus(path: Path, ids: list[str], text: str = "A short passage about {}.") -> Path:
    return jsonl(path, [{"id": i, "text": text.format(i)} for i in ids])


def queries(path: Path, texts: dict[str, str]) -> Path:
    return jsonl(path, [{"id": q, "text": t} for q, t in texts.items()])


def qrels(path: Path, grades: dict[str, dict[str, int]]) -> Path:
    path.write_text("".join(f"{q} 0 {d} {g}\n" for q, docs in grades.items() for d, g in docs.items()))
    return path


def trec_run(path: Path, ranked: dict[str, list[str]], tag: str) -> Path:
    path.write_text(
        "".join(
            f"{q} Q0 {d} {rank} {10 - rank}.0 {tag}\n"
            for q, docs in ranked.items()
            for rank, d in enumerate(docs, start=1)
        )
    )
    return path


def sources_a(folder: Path, **extra) -> ImportSources:
    folder.mkdir(exist_ok=True)
    return ImportSources(
        corpus=corpus(folder / "a.jsonl", ["a1", "a2", "a3"]),
        queries=queries(folder / "qa.jsonl", {"qa1": "what is a one", "qa2": "where is a two"}),
        run=trec_run(folder / "a.run", {"qa1": ["a1", "a2", "a3"], "qa2": ["a2", "a1"]}, "bm25"),
        name="bm25",
        labels=qrels(folder / "a.qrels", GRADES_A),
        annotator="ann",
        import_name="A",
        who="alice",
        **extra,
    )


def sources_b(folder: Path) -> ImportSources:
    folder.mkdir(exist_ok=True)
    return ImportSources(
        corpus=corpus(folder / "b.jsonl", ["b1", "b2"]),
        queries=queries(folder / "qb.jsonl", {"qb1": "which is b"}),
        run=trec_run(folder / "b.run", {"qb1": ["b1", "b2"]}, "dense"),
        name="dense",
        labels=qrels(folder / "b.qrels", GRADES_B),
        annotator="cat",
        import_name="B",
        who="bob",
    )


@pytest.fixture
def two(db_at, tmp_path):
    """The store with imports A (id 1) and B (id 2), a relevance judge's answers on its 5 items
    (3 0 0 1 0 against the people's 3 0 2 1 0), and dan, who has labelled nothing; on each backend."""
    store = Store(db_at)
    import_files(store, sources_a(tmp_path / "in"))
    import_files(store, sources_b(tmp_path / "in"))
    items = {(q, c): i for i, q, c in store.chunk_items()}
    store.annotator_id("dan")
    store.register_judge(JUDGE, {"kind": "llm", "rubric": "relevance", "model": "m", "endpoint": "http://h"})
    said = {("qa1", "a1"): 3, ("qa1", "a2"): 0, ("qa2", "a2"): 0, ("qb1", "b1"): 1, ("qb1", "b2"): 0}
    store.add_judge_labels(
        [{"item_id": items[k], "fingerprint": JUDGE, "repeat": 0, "value": v} for k, v in said.items()]
    )
    yield store, items
    store.close()


def another_db(db_at: str, request, tmp_path: Path) -> str:
    """A second new store on db_at's backend: another PostgreSQL database, or another file."""
    if postgres.is_url(db_at):
        return request.getfixturevalue("postgres_server").database()
    return str(tmp_path / "other.db")


def leaves_nothing(db: str) -> bool:
    """A refused command left no store: no SQLite file, or (a PostgreSQL database being there
    before the command) no row in it."""
    if not postgres.is_url(db):
        return not Path(db).exists()
    with Store(db) as store:
        return not any(store.counts().values())


# ---------------------------------------------------------------- what each face counts


def queue(store: Store, annotator: str) -> tuple[tuple[int, int], set[int]]:
    """(labelled, total) of the annotator's chunk queue, and every item it offers unlabelled."""
    who = store.annotator_id(annotator)
    offered: list[int] = []
    while (item := store.next_unlabelled_item(who, "chunk", offered)) is not None:
        offered.append(item)
    return store.queue_progress(who, "chunk"), set(offered)


def exported(store: Store, folder: Path) -> dict:
    """The median qrels export read back, the CSV export's row count and the TREC folder's files."""
    folder.mkdir()
    export_qrels(store, folder / "labels.qrels")
    said = export_csv(store, folder / "labels.csv")
    export_trec(store, folder / "trec")
    return {
        "qrels": read_judgments(folder / "labels.qrels").grades,
        "csv": said.split(" label rows")[0],
        "trec": sorted(p.name for p in (folder / "trec").iterdir()),
        "trec qrels": (folder / "trec" / "qrels").read_text(),
    }


def reviewed(store: Store) -> tuple[int, float | None, int]:
    """The relevance judge's review: n, unweighted kappa; and how many answers judge_values gives."""
    (entry,) = review(store, WEEK, min_labels=1, save=False, bar=0.6, statistic="unweighted")["judges"]
    return entry["consensus"]["n"], entry["consensus"]["kappa"], len(store.judge_values(JUDGE))


def metrics(store: Store, run: str) -> dict[str, float | None]:
    data = stored_data(store, run)
    result = actions.metrics(data.qrels, data.run, ks=[2])
    return {name: result.mean(name) for name in ("P@2", "R@2", "RR")}


# ---------------------------------------------------------------- 1. retire A, restore A


def test_the_two_imports_are_recorded(two) -> None:
    store, _ = two
    listed = store.imports()
    assert [(r["id"], r["name"], r["kind"], r["who"], r["state"], r["rows"]) for r in listed] == [
        (1, "A", "corpus+queries+run+labels", "alice", "live", HELD_A),
        (2, "B", "corpus+queries+run+labels", "bob", "live", HELD_B),
    ]
    assert listed[0]["source"] == "a.jsonl, qa.jsonl, a.run, a.qrels"
    assert listed[0]["changed_by"] is None and listed[0]["reason"] is None
    assert store.live_counts() == LIVE_BOTH == store.counts()


def test_retire_a_takes_it_out_of_counts_queues_metrics_exports_and_review(two, tmp_path) -> None:
    store, items = two
    a_items = {items[("qa1", "a1")], items[("qa1", "a2")], items[("qa2", "a2")]}
    b_items = {items[("qb1", "b1")], items[("qb1", "b2")]}
    # before: everything counts
    assert queue(store, "dan") == ((0, 5), a_items | b_items)
    assert queue(store, "ann") == ((3, 5), b_items)
    assert queue(store, "cat") == ((2, 5), a_items)
    assert stored_runs(store) == ["bm25", "dense"]
    assert stored_qrels(store)[0].grades == GRADES_A | GRADES_B
    assert set(stored_label_sets(store)) >= {"annotator:ann", "annotator:cat"}
    # bm25 at 2, min grade 1: qa1 (a1 relevant, a2 not) P 1/2 R 1 RR 1; qa2 (a2 relevant) the same
    assert metrics(store, "bm25") == {"P@2": 0.5, "R@2": 1.0, "RR": 1.0}
    assert metrics(store, "dense") == {"P@2": 0.5, "R@2": 1.0, "RR": 1.0}
    assert stored_data(store, "dense").corpus_ids == {"a1", "a2", "a3", "b1", "b2"}
    before = exported(store, tmp_path / "before")
    assert before["qrels"] == GRADES_A | GRADES_B
    assert before["csv"] == "wrote 5"
    assert before["trec"] == ["bm25.run", "dense.run", "qrels"]
    # judge 3 0 0 1 0, people 3 0 2 1 0: p_o 4/5; p_e (2*3 + 1*1 + 1*0 + 1*1)/25 = 8/25; kappa 12/17
    n, kappa, answers = reviewed(store)
    assert (n, answers) == (5, 5) and kappa == pytest.approx(12 / 17)

    done = store.retire_import(1, "eve", "wrong corpus")
    assert done["changed"] is True and done["state"] == "retired"
    assert (done["changed_by"], done["reason"]) == ("eve", "wrong corpus")
    assert store.live_counts() == LIVE_B
    assert store.counts() == LIVE_BOTH  # nothing deleted
    assert queue(store, "dan") == ((0, 2), b_items)
    assert queue(store, "ann") == ((0, 2), b_items)
    assert queue(store, "cat") == ((2, 2), set())
    assert stored_runs(store) == ["dense"]
    with pytest.raises(InvalidInput, match="no run named 'bm25'.*stored runs: dense"):
        stored_data(store, "bm25")
    assert stored_qrels(store)[0].grades == GRADES_B
    assert "annotator:ann" not in stored_label_sets(store)
    assert metrics(store, "dense") == {"P@2": 0.5, "R@2": 1.0, "RR": 1.0}
    assert stored_data(store, "dense").corpus_ids == {"b1", "b2"}
    assert store.chunk_ids() == ["b1", "b2"] and store.queries_with_text() == {"qb1": "which is b"}
    assert store.export_qrels("ann").grades == {}
    after = exported(store, tmp_path / "after")
    assert after["qrels"] == GRADES_B
    assert after["csv"] == "wrote 2"
    assert after["trec"] == ["dense.run", "qrels"]
    assert after["trec qrels"] == "qb1 0 b1 1\nqb1 0 b2 0\n"
    # judge 1 0, people 1 0: kappa 1
    assert reviewed(store) == (2, 1.0, 2)

    done = store.restore_import(1, "eve")
    assert done["changed"] is True and done["state"] == "live" and done["reason"] is None
    assert store.live_counts() == LIVE_BOTH
    assert queue(store, "dan") == ((0, 5), a_items | b_items)
    assert queue(store, "ann") == ((3, 5), b_items)
    assert queue(store, "cat") == ((2, 5), a_items)
    assert stored_runs(store) == ["bm25", "dense"]
    assert metrics(store, "bm25") == {"P@2": 0.5, "R@2": 1.0, "RR": 1.0}
    assert stored_data(store, "dense").corpus_ids == {"a1", "a2", "a3", "b1", "b2"}
    assert exported(store, tmp_path / "restored") == before
    n, kappa, answers = reviewed(store)
    assert (n, answers) == (5, 5) and kappa == pytest.approx(12 / 17)


def test_a_queue_read_in_the_write_that_retires_sees_the_retirement(two) -> None:
    """The queue reads whether anything is retired once per write (#42: its statements drop their
    liveness tests while nothing is); a retirement inside that write is seen by the reads after it."""
    store, items = two
    b_items = {items[("qb1", "b1")], items[("qb1", "b2")]}
    dan = store.annotator_id("dan")
    reads: list[str] = []
    execute = store.db.execute

    def counted(sql, params=None):
        reads.append(sql)
        return execute(sql, params) if params is not None else execute(sql)

    store.db.execute = counted  # type: ignore[method-assign]
    try:
        with store.write():
            assert store.next_unlabelled_item(dan, "chunk") is not None  # nothing retired yet
            store.next_unlabelled_item(dan, "chunk")
            # once per write (on PostgreSQL in the write's first round trip, with its BEGIN)
            assert sum(NONE_RETIRED in sql for sql in reads) == 1
            store.retire_import(1, "eve")
            assert queue(store, "dan") == ((0, 2), b_items)
        assert queue(store, "dan") == ((0, 2), b_items)  # and after it
    finally:
        store.db.execute = execute  # type: ignore[method-assign]


def test_all_live_drops_every_liveness_test_and_nothing_else() -> None:
    """With nothing retired a liveness test is true of every row, NULL included: all_live writes
    each as TRUE and leaves the statement's other words as they were."""
    for table in HELD_TABLES:
        assert all_live(f"SELECT 1 WHERE {live('x.id', table)} AND y = 2") == "SELECT 1 WHERE TRUE AND y = 2"
    assert all_live(live_item("i")) == "TRUE AND TRUE AND TRUE AND TRUE"
    assert "import_rows" not in all_live(f"SELECT {CURRENT_LABEL}, {OTHER_LABELLERS}")
    assert all_live("SELECT id FROM import_rows") == "SELECT id FROM import_rows"


def test_the_judge_list_counts_answers_on_live_items(two) -> None:
    """judge list (store.judges) counts a judge's current answers on live items, as the review
    does; the rows stored (paid for) stay."""
    store, _ = two

    def counts():
        (judge,) = [j for j in store.judges() if j["fingerprint"] == JUDGE]
        return judge["labels"], judge["rows"]

    assert counts() == (5, 5)
    store.retire_import(1, "eve", "wrong corpus")
    assert counts() == (2, 5)  # A's 3 items left the count, as they left the review
    store.restore_import(1, "eve")
    assert counts() == (5, 5)


def test_retire_b_leaves_a_whole(two) -> None:
    store, items = two
    store.retire_import(2, "eve")
    assert store.live_counts() == {
        "queries": 2,
        "chunks": 3,
        "runs": 1,
        "rankings": 5,
        "traces": 0,
        "items": 3,
        "annotators": 3,
        "labels": 3,
    }
    assert stored_qrels(store)[0].grades == GRADES_A
    assert [r["state"] for r in store.imports()] == ["live", "retired"]
    # both retired: nothing left to count; both restored: all of it
    store.retire_import(1, "eve")
    assert store.live_counts() == dict.fromkeys(LIVE_BOTH, 0) | {"annotators": 3}
    assert store.chunk_items() == [] and store.current_labels() == []
    store.restore_import(2, "eve")
    store.restore_import(1, "eve")
    assert store.live_counts() == LIVE_BOTH


def test_the_annotators_list_counts_live_labels(two) -> None:
    store, _ = two
    labels = lambda: {a["name"]: a["labels"] for a in store.annotators()}  # noqa: E731
    assert labels() == {"ann": 3, "cat": 2, "dan": 0}
    store.retire_import(1, "eve")
    assert labels() == {"ann": 0, "cat": 2, "dan": 0}
    store.restore_import(1, "eve")
    assert labels() == {"ann": 3, "cat": 2, "dan": 0}


def test_the_admins_item_browser_counts_what_the_review_counts(two) -> None:
    """The Items page lists live items only: a confusion-matrix cell of the review opens the items
    the review counted, not a retired import's."""
    store, items = two
    every = {row["item_id"] for row in store.browse_items(rubric="relevance")}
    assert every == set(items.values())
    disagree = {row["item_id"] for row in store.browse_items(judge=JUDGE, judge_disagrees=True)}
    assert disagree == {items[("qa2", "a2")]}  # the judge's 0 against the people's 2
    store.retire_import(1, "eve")
    assert {row["item_id"] for row in store.browse_items(rubric="relevance")} == {
        items[("qb1", "b1")],
        items[("qb1", "b2")],
    }
    assert store.browse_items(judge=JUDGE, judge_disagrees=True) == []
    store.restore_import(1, "eve")
    assert {row["item_id"] for row in store.browse_items(rubric="relevance")} == every


# ---------------------------------------------------------------- 2. the grade a label file covered


def test_a_retired_label_file_brings_back_the_grade_it_covered(db_at, tmp_path) -> None:
    with Store(db_at) as store:
        import_files(
            store,
            ImportSources(
                corpus=corpus(tmp_path / "c.jsonl", ["c1", "c2"]),
                queries=queries(tmp_path / "q.jsonl", {"q1": "what is c"}),
                run=trec_run(tmp_path / "r.run", {"q1": ["c1", "c2"]}, "sys"),
                name="sys",
                who="alice",
            ),
        )
        item = store.ensure_item("chunk", query_id="q1", chunk_id="c1")
        store.annotator_id("ann")
        store.add_label(item, "ann", 1)  # in the app: held by no import
        said = import_files(
            store,
            ImportSources(
                labels=qrels(tmp_path / "ann.qrels", {"q1": {"c1": 3, "c2": 2}}), annotator="ann", who="bob"
            ),
        )
        assert "import 2: labels ann.qrels by 'ann', by bob" in said
        assert store.get_import(2)["rows"] == {"queries": 1, "chunks": 2, "labels": 2}
        other = store.ensure_item("chunk", query_id="q1", chunk_id="c2")
        ann = store.annotator_id("ann")

        def state() -> tuple:
            return (
                store.export_qrels("ann").grades,
                store.queue_progress(ann, "chunk"),
                store.next_unlabelled_item(ann, "chunk"),
                metrics(store, "sys"),
                [(r["item_id"], r["value"]) for r in store.my_labels("ann", "chunk")],
            )

        # the file's grades: c1 3 (over the app's 1), c2 2; sys ranks c1 c2: both relevant
        with_file = ({"q1": {"c1": 3, "c2": 2}}, (2, 2), None, {"P@2": 1.0, "R@2": 1.0, "RR": 1.0})
        assert state()[:4] == with_file
        store.retire_import(2, "eve")
        # the app's 1 is back on c1; c2 is unlabelled again, back in ann's queue
        assert state() == ({"q1": {"c1": 1}}, (1, 2), other, {"P@2": 0.5, "R@2": 1.0, "RR": 1.0}, [(item, 1)])
        assert store.live_counts()["labels"] == 1 and store.counts()["labels"] == 3
        # the texts of import 1 are not the label file's: they stay
        assert store.live_counts()["queries"] == 1 and store.live_counts()["chunks"] == 2
        store.restore_import(2, "eve")
        assert state()[:4] == with_file


def test_undo_does_not_reach_a_retired_grade(db_at, tmp_path) -> None:
    """ann's only grade of c2 is a label file's: with the file retired there is nothing to undo
    (a retraction appended then would cover the grade again once the file is restored)."""
    with Store(db_at) as store:
        import_files(
            store,
            ImportSources(
                corpus=corpus(tmp_path / "c.jsonl", ["c1", "c2"]),
                queries=queries(tmp_path / "q.jsonl", {"q1": "what is c"}),
                who="alice",
            ),
        )
        import_files(
            store, ImportSources(labels=qrels(tmp_path / "l.qrels", {"q1": {"c2": 2}}), annotator="ann")
        )
        item = store.ensure_item("chunk", query_id="q1", chunk_id="c2")
        store.retire_import(2, "eve")
        with pytest.raises(StoreError, match=f"^'ann' has no label on item {item} to undo$"):
            store.undo(item, "ann")
        store.restore_import(2, "eve")
        assert store.export_qrels("ann").grades == {"q1": {"c2": 2}}
        store.undo(item, "ann")  # live again: undone by a retraction
        assert store.export_qrels("ann").grades == {}


def test_a_retired_trace_import_leaves_the_trace_queue(db_at, tmp_path) -> None:
    traces = jsonl(
        tmp_path / "t.jsonl",
        [
            {
                "id": f"t{n}",
                "query_id": "q1",
                "system": "rag",
                "question": "what",
                "contexts": ["c1"],
                "answer": a,
            }
            for n, a in ((1, "one"), (2, "two"))
        ],
    )
    with Store(db_at) as store:
        import_files(store, ImportSources(queries=queries(tmp_path / "q.jsonl", {"q1": "what"}), who="alice"))
        import_files(store, ImportSources(traces=traces, who="bob"))
        assert store.get_import(2)["rows"] == {"queries": 1, "traces": 2}
        who = store.annotator_id("ann")
        items = [i for i, _, _ in store.trace_items()]
        store.add_label(items[0], "ann", 2, "faithfulness")
        assert store.queue_progress(who, "trace") == (1, 2)
        assert store.next_unlabelled_item(who, "trace") == items[1]
        assert [t[0] for t in store.traces_in_import_order()] == ["t1", "t2"]
        store.retire_import(2, "eve")
        assert store.queue_progress(who, "trace") == (0, 0)
        assert store.next_unlabelled_item(who, "trace") is None
        assert store.trace_items() == [] and store.traces_in_import_order() == []
        assert store.newest_labels_shown("faithfulness", "trace") == []
        # the query stays (import 1 holds it); ann's label stands on a retired trace: not counted
        assert store.live_counts() == {
            "queries": 1,
            "chunks": 0,
            "runs": 0,
            "rankings": 0,
            "traces": 0,
            "items": 0,
            "annotators": 1,
            "labels": 0,
        }
        store.restore_import(2, "eve")
        assert store.queue_progress(who, "trace") == (1, 2)
        assert [(i, w, v) for i, w, v, _ in store.newest_labels_shown("faithfulness", "trace")] == [
            (items[0], "ann", 2)
        ]


# ---------------------------------------------------------------- 3. a row held by two imports


def test_an_identical_re_import_keeps_its_rows_live_while_either_is(db_at, tmp_path) -> None:
    sources = sources_a(tmp_path / "in")
    with Store(db_at) as store:
        import_files(store, sources)
        said = import_files(store, sources)  # the same files again: nothing added, all of it named
        assert "import 2: A, by alice" in said
        assert store.get_import(2)["rows"] == HELD_A
        full = store.live_counts()
        assert full["labels"] == 3 and full["rankings"] == 5
        store.retire_import(1, "eve")
        assert store.live_counts() == full
        assert store.export_qrels("ann").grades == GRADES_A
        store.retire_import(2, "eve")
        assert store.live_counts() == dict.fromkeys(full, 0) | {"annotators": 1}
        store.restore_import(1, "eve")
        assert store.live_counts() == full
        assert store.export_qrels("ann").grades == GRADES_A


def test_two_imports_naming_one_query(db_at, tmp_path) -> None:
    with Store(db_at) as store:
        import_files(store, sources_a(tmp_path / "in"))
        # import 2: cat grades qa1 (A's query) on a new chunk n1 and on A's chunk a3
        import_files(
            store,
            ImportSources(
                corpus=corpus(tmp_path / "n.jsonl", ["n1"]),
                labels=qrels(tmp_path / "cat.qrels", {"qa1": {"n1": 2, "a3": 1}}),
                annotator="cat",
                who="bob",
            ),
        )
        assert store.get_import(2)["rows"] == {"queries": 1, "chunks": 2, "labels": 2}
        store.retire_import(1, "eve")
        # qa1, a3 and n1 stay (import 2 holds them); qa2, a1, a2, bm25 and ann's labels leave
        assert store.live_counts() == {
            "queries": 1,
            "chunks": 2,
            "runs": 0,
            "rankings": 0,
            "traces": 0,
            "items": 2,
            "annotators": 2,
            "labels": 2,
        }
        assert store.chunk_ids() == ["a3", "n1"]
        assert store.queries_with_text() == {"qa1": "what is a one"}
        assert store.export_qrels().grades == {"qa1": {"n1": 2, "a3": 1}}
        store.retire_import(2, "eve")
        assert store.live_counts()["queries"] == 0 and store.export_qrels().grades == {}
        store.restore_import(1, "eve")
        # A back, import 2 still retired: A's own rows only (a3 is A's; n1 and cat's grades are not)
        assert store.chunk_ids() == ["a1", "a2", "a3"]
        assert store.export_qrels().grades == GRADES_A


def test_rows_no_import_holds_are_never_retired(db_at, tmp_path) -> None:
    with Store(db_at) as store:
        store.import_queries({"q1": "what is c"})  # outside an import: held by none
        store.import_corpus([{"id": "c1", "text": "a passage"}])
        import_files(
            store,
            ImportSources(run=trec_run(tmp_path / "r.run", {"q1": ["c1"]}, "sys"), name="sys", who="bob"),
        )
        assert store.get_import(1)["rows"] == {"runs": 1}  # naming q1 and c1 does not hold them
        store.retire_import(1, "eve")
        assert store.live_counts() == {
            "queries": 1,
            "chunks": 1,
            "runs": 0,
            "rankings": 0,
            "traces": 0,
            "items": 0,
            "annotators": 0,
            "labels": 0,
        }


# ---------------------------------------------------------------- 4. the record is append-only


def test_the_record_is_append_only(two) -> None:
    store, _ = two
    store.retire_import(1, "eve")
    for sql in (
        "UPDATE imports SET name = 'x'",
        "DELETE FROM imports",
        "UPDATE import_rows SET row_key = 'x'",
        "DELETE FROM import_rows",
        "UPDATE retirements SET action = 'restore'",
        "DELETE FROM retirements",
    ):
        with pytest.raises(integrity_errors(), match="append-only"):
            store.db.execute(sql)
    assert store.db.execute("SELECT count(*) FROM retirements").fetchone()[0] == 1
    assert store.get_import(1)["state"] == "retired"


def test_retire_twice_adds_no_row_and_unknown_ids_are_refused(two, db_at, request, tmp_path) -> None:
    store, _ = two

    def rows() -> list[tuple]:
        return store.db.execute("SELECT import_id, action, who FROM retirements ORDER BY id").fetchall()

    assert store.restore_import(1, "eve")["changed"] is False  # live already
    assert rows() == []
    assert store.retire_import(1, "eve")["changed"] is True
    again = store.retire_import(1, "zoe", "again")
    assert again["changed"] is False and again["state"] == "retired"
    assert (again["changed_by"], again["reason"]) == ("eve", None)  # the first retire's row
    assert rows() == [(1, "retire", "eve")]
    assert store.restore_import(1, "eve")["changed"] is True
    assert store.restore_import(1, "eve")["changed"] is False
    assert rows() == [(1, "retire", "eve"), (1, "restore", "eve")]
    with pytest.raises(UnknownImport, match=r"^no import 9; the imports are 1, 2$"):
        store.retire_import(9, "eve")
    with pytest.raises(UnknownImport, match=r"^no import 9;"):
        store.restore_import(9, "eve")
    with Store(another_db(db_at, request, tmp_path)) as empty:
        with pytest.raises(UnknownImport, match="^no import 9; nothing has been imported yet$"):
            empty.get_import(9)
    with pytest.raises(StoreError, match="to retire an import, say who does it"):
        store.retire_import(1, "  ")
    assert rows() == [(1, "retire", "eve"), (1, "restore", "eve")]


# ---------------------------------------------------------------- 5. a file in the wrong slot

LONG = "A passage of a corpus: " + "words " * 40 + "{}."  # 268 characters and the id: a chunk


def test_a_corpus_given_as_queries_is_refused_with_nothing_written(db_at, tmp_path) -> None:
    passages = corpus(tmp_path / "passages.jsonl", ["p1", "p2", "p3"], LONG)
    with Store(db_at) as store:
        empty = store.counts()
        with pytest.raises(WrongSlot) as refused:
            import_files(
                store,
                ImportSources(corpus=corpus(tmp_path / "c.jsonl", ["c1"]), queries=passages, who="bob"),
            )
        median = len(LONG.format("p1"))
        assert str(refused.value) == (
            f"passages.jsonl, given as queries, looks like a corpus (chunks): its texts are passages: "
            f"median {median} characters (a query is a sentence, under 200); nothing was imported"
        )
        assert (refused.value.slot, refused.value.looks_like) == ("queries", "a corpus (chunks)")
        assert store.counts() == empty and store.imports() == []  # not even the good corpus
        said = import_files(store, ImportSources(queries=passages, who="bob", confirmed=True))
        assert said[0] == f"queries {passages}: 3 added, 0 filled, 0 unchanged"
        assert store.live_counts()["queries"] == 3 and len(store.imports()) == 1


def test_chunk_ids_or_too_many_rows_given_as_queries_are_refused(db_at, tmp_path) -> None:
    with Store(db_at) as store:
        import_files(store, ImportSources(corpus=corpus(tmp_path / "c.jsonl", ["c1", "c2"]), who="bob"))
        import_files(store, ImportSources(queries=queries(tmp_path / "q.jsonl", {"q1": "what"}), who="bob"))
        counts = store.counts()
        short = queries(tmp_path / "ids.jsonl", {"c1": "one", "c2": "two"})
        with pytest.raises(
            WrongSlot, match=r"looks like a corpus \(chunks\): 2 of its 2 ids are chunk ids of the store;"
        ):
            import_files(store, ImportSources(queries=short, who="bob"))
        many = queries(tmp_path / "many.jsonl", {f"n{i}": "a question" for i in range(4)})
        with pytest.raises(
            WrongSlot, match="4 rows, more than 3x the 1 queries the store holds, and 0 of its ids among them"
        ):
            import_files(store, ImportSources(queries=many, who="bob"))
        assert store.counts() == counts and len(store.imports()) == 2


def test_queries_given_as_corpus_are_refused(db_at, tmp_path) -> None:
    asked = corpus(tmp_path / "asked.jsonl", ["x1", "x2", "x3"], "Why is {} here?")
    with Store(db_at) as store:
        with pytest.raises(WrongSlot) as refused:
            import_files(store, ImportSources(corpus=asked, who="bob"))
        assert str(refused.value) == (
            "asked.jsonl, given as corpus, looks like queries: 3 of its 3 texts end with a question mark; "
            "nothing was imported"
        )
        assert store.counts()["chunks"] == 0 and store.imports() == []
        import_files(
            store, ImportSources(queries=queries(tmp_path / "q.jsonl", {"q1": "a", "q2": "b"}), who="bob")
        )
        known = corpus(tmp_path / "known.jsonl", ["q1", "q2"])  # the store's query ids, as chunks
        with pytest.raises(WrongSlot, match="looks like queries: 2 of its 2 ids are query ids of the store;"):
            import_files(store, ImportSources(corpus=known, who="bob"))
        assert store.counts()["chunks"] == 0 and len(store.imports()) == 1
        # the rule counts live rows: with the queries' import retired, the ids are no query's
        store.retire_import(1, "eve")
        import_files(store, ImportSources(corpus=known, who="bob"))
        store.restore_import(1, "eve")
        assert store.counts()["chunks"] == 2
        said = import_files(store, ImportSources(corpus=asked, who="bob", confirmed=True))
        assert said[0] == f"corpus {asked}: 3 added, 0 filled, 0 unchanged"
        assert store.live_counts()["chunks"] == 5


# ---------------------------------------------------------------- 6. the command line


def test_imports_list_retire_restore_on_the_command_line(db_at, tmp_path, capsys) -> None:
    missing = tmp_path / "c.db"  # a missing file: a URL names a server's database, never missing here
    code, out, err = cli(main, capsys, "imports", "list", "--db", missing)
    assert (code, out) == (2, "") and err.startswith("error: no such database: ") and not missing.exists()
    assert len(err.splitlines()) == 1
    src = sources_a(tmp_path / "in")
    code, out, _ = cli(
        main,
        capsys,
        *("import", "--db", db_at, "--corpus", src.corpus, "--queries", src.queries, "--run", src.run),
        *(
            "--name",
            "bm25",
            "--labels",
            src.labels,
            "--annotator",
            "ann",
            "--import-name",
            "A",
            "--by",
            "alice",
        ),
    )
    assert code == 0 and "import 1: A, by alice" in out.splitlines()
    code, out, _ = cli(
        main, capsys, "import", "--db", db_at, "--corpus", corpus(tmp_path / "b.jsonl", ["b1"])
    )
    assert code == 0 and any(line.startswith("import 2: corpus b.jsonl, by ") for line in out.splitlines())

    code, out, err = cli(main, capsys, "imports", "list", "--db", db_at)
    assert code == 0 and err == f"database: {shown_db(str(db_at))}\n"
    lines = out.splitlines()
    assert lines[0].split() == ["id", "when", "(UTC)", "kind", "who", "state", "rows", "name"]
    columns = [re.split(r"\s{2,}", line) for line in lines[1:3]]  # the columns are padded apart
    assert [c[:1] + c[2:] for c in columns] == [
        ["1", "corpus+queries+run+labels", "alice", "live", "2 queries, 3 chunks, 1 run, 3 labels", "A"],
        ["2", "corpus", columns[1][3], "live", "1 chunk", "corpus b.jsonl"],
    ]
    assert lines[3] == "2 imports, 0 retired" and len(lines) == 4

    code, out, err = cli(
        main, capsys, "imports", "retire", "1", "--db", db_at, "--by", "eve", "--reason", "wrong run"
    )
    assert code == 0 and err == f"database: {shown_db(db_at)}\n"
    assert out == (
        "retired import 1 (A; 2 queries, 3 chunks, 1 run, 3 labels): its rows are out of queues, metrics, "
        "exports and reviews; python -m annotation imports restore 1 brings them back\n"
    )
    with Store(db_at) as store:
        assert store.live_counts()["chunks"] == 1 and store.live_counts()["labels"] == 0
    code, out, _ = cli(main, capsys, "imports", "retire", "1", "--db", db_at, "--by", "zoe")
    assert code == 0 and out.startswith(
        "import 1 (A; 2 queries, 3 chunks, 1 run, 3 labels) is already retired (by eve, "
    )
    assert out.endswith("); nothing changed\n")
    code, out, _ = cli(main, capsys, "imports", "list", "--db", db_at)
    assert "retired (by eve, wrong run)" in out.splitlines()[1]
    assert out.splitlines()[-1] == "2 imports, 1 retired"

    code, out, err = cli(main, capsys, "imports", "retire", "7", "--db", db_at, "--by", "eve")
    assert (code, out, err) == (2, "", "error: no import 7; the imports are 1, 2\n")
    code, out, err = cli(main, capsys, "imports", "restore", "7", "--db", db_at)
    assert (code, out, err) == (2, "", "error: no import 7; the imports are 1, 2\n")
    code, out, err = cli(main, capsys, "imports", "retire", "0", "--db", db_at)
    assert code == 2 and out == "" and len(err.splitlines()) == 1 and "Traceback" not in err
    code, out, err = cli(main, capsys, "imports", "restore", "1", "--db", tmp_path / "missing.db")
    assert code == 2 and err.startswith("error: no such database: ") and len(err.splitlines()) == 1

    code, out, _ = cli(main, capsys, "imports", "restore", "1", "--db", db_at, "--by", "eve")
    assert code == 0 and out.startswith(
        "restored import 1 (A; 2 queries, 3 chunks, 1 run, 3 labels): its rows count again"
    )
    with Store(db_at) as store:
        assert store.live_counts() == store.counts()
    code, out, _ = cli(main, capsys, "imports", "restore", "1", "--db", db_at, "--by", "zoe")
    assert code == 0 and out.startswith(
        "import 1 (A; 2 queries, 3 chunks, 1 run, 3 labels) is already live (by eve, "
    )
    assert out.endswith("); nothing changed\n")
    with Store(db_at) as store:  # the two no-ops added no row
        assert store.db.execute("SELECT action, who FROM retirements ORDER BY id").fetchall() == [
            ("retire", "eve"),
            ("restore", "eve"),
        ]


def test_import_refuses_a_file_in_the_wrong_slot_unless_yes(db_at, tmp_path, capsys) -> None:
    db = db_at
    passages = corpus(tmp_path / "passages.jsonl", ["p1", "p2"], LONG)
    code, out, err = cli(main, capsys, "import", "--db", db, "--queries", passages)
    assert code == 2 and out == "" and len(err.splitlines()) == 1
    assert err.startswith(
        "error: passages.jsonl, given as queries, looks like a corpus (chunks): its texts are passages"
    )
    assert err.endswith("nothing was imported (--yes imports it as queries anyway)\n")
    assert leaves_nothing(db)  # a refused command leaves nothing
    code, out, _ = cli(main, capsys, "import", "--db", db, "--queries", passages, "--yes", "--by", "bob")
    assert code == 0 and f"queries {passages}: 2 added" in out
    assert "import 1: queries passages.jsonl, by bob" in out.splitlines()
    with Store(db) as store:
        assert store.live_counts()["queries"] == 2
        assert [(r["kind"], r["who"], r["rows"]) for r in store.imports()] == [
            ("queries", "bob", {"queries": 2})
        ]
