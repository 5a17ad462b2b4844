"""Pooling and the Label chunks page: keys grade, skip and undo; the page is blind."""

from __future__ import annotations

import pytest

from annotation.model import Qrels, Run
from annotation.pooling import pool
from annotation.render import plain
from annotation.rubrics import PREFERENCE
from annotation.store import Store, StoreError
from annotation.views import next_item, progress
from denominator.ui.label import PAIRS
from tests.conftest import EXAMPLE, page_test, page_text


@pytest.fixture
def store(tmp_path):
    s = Store(tmp_path / "p.db")
    yield s
    s.close()


def test_pool_is_the_union_of_top_d_and_skips_judged(store) -> None:
    store.import_run(Run.from_rankings({"q": ["a", "b", "c", "d"]}), name="bm25")
    store.import_run(Run.from_rankings({"q": ["c", "e", "a", "f"]}), name="dense")
    store.import_labels(Qrels(grades={"q": {"a": 2}}), annotator="old")
    report = pool(store, 2, annotators=["x", "y"], overlap=0.5, seed=1)
    # top-2: {a, b} | {c, e} -> 4 pairs, a already judged -> 3 new items
    assert (report["pooled"], report["already_judged"], report["items_added"]) == (4, 1, 3)
    assert report["doubly_assigned"] == 2 and report["assignments"] == 5
    assert pool(store, 2)["items_added"] == 0  # again: nothing new
    assert pool(store, 2, runs=["dense"])["items_added"] == 0
    with pytest.raises(StoreError, match="no run named 'nope'"):
        pool(store, 2, runs=["nope"])
    with pytest.raises(StoreError, match="an overlap needs at least two annotators"):
        pool(store, 2, annotators=["x"], overlap=0.1)


def test_queue_is_blind_and_per_annotator(demo_db) -> None:
    with Store(demo_db) as store:
        item = next_item(store, "ann")
        assert set(item) == {"item_id", "query", "chunk"}  # no run, rank, score or label
        ann, bob = progress(store, "ann"), progress(store, "bob")
        assert ann == (0, 24) and bob == (0, 24)  # 40 items, 8 shared: 24 each
        store.add_label(item["item_id"], "ann", 2)
        assert progress(store, "ann") == (1, 24)
        assert next_item(store, "ann")["item_id"] != item["item_id"]


def run_function_page(render_name: str):
    """A labelling page (or the Data page), in local mode, for ann."""
    module = "denominator.ui.data" if render_name == "render_data_page" else "denominator.ui.label"
    return page_test(f"{module}.{render_name}", state={"label:annotator": "ann"})


def test_label_page_grades_skips_and_undoes(demo_db) -> None:
    db = demo_db
    at = run_function_page("render_label_chunks_page").run()
    assert not at.exception
    text = page_text(at)
    assert "0 / 24 in this batch labelled by ann" in text
    first_chunk = at.text[1].value
    # blind: no run name, no rank or score, no other person's name
    assert (
        "retriever" not in text
        and "rank" not in text.lower()
        and "score" not in text.lower()
        and "bob" not in text
    )
    at.button(key="label:grade3").click().run()
    assert "1 / 24 in this batch" in page_text(at)
    assert at.text[1].value != first_chunk
    second_chunk = at.text[1].value
    at.button(key="label:skip").click().run()
    assert at.text[1].value != second_chunk and "1 / 24" in page_text(at)
    at.button(key="label:undo").click().run()
    assert "0 / 24 in this batch" in page_text(at)
    assert at.text[1].value == first_chunk  # the undone chunk comes back
    at.button(key="label:grade1").click().run()
    with Store(db) as store:
        mine = "FROM labels l JOIN annotators a ON a.id = l.annotator_id WHERE a.name = 'ann'"
        values = [r[0] for r in store.db.execute(f"SELECT l.value {mine} ORDER BY l.id").fetchall()]
        seconds = store.db.execute(f"SELECT l.seconds {mine} AND l.value IS NOT NULL").fetchall()
    assert values == [3, None, 1]  # grade, retraction, new grade: nothing overwritten
    assert all(s[0] is not None and s[0] >= 0 for s in seconds)


def test_label_page_without_a_database(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("DENOMINATOR_DB", str(tmp_path / "missing.db"))
    at = run_function_page("render_label_chunks_page").run()
    assert not at.exception
    assert "No database at" in at.error[0].value


def test_label_traces_page_grades_faithfulness_with_a_note(demo_db) -> None:
    db = demo_db
    at = run_function_page("render_label_traces_page").run()
    assert not at.exception
    text = page_text(at)
    assert "0 / 40 in this batch labelled by ann" in text
    assert "rag-bm25" not in text and "rag-rerank" not in text  # blind: no system name
    assert "Context 1 of" in text and "Answer" in text
    # contexts given as chunk ids are shown as the chunks' texts, never as bare ids
    from annotation.formats.records import read_corpus

    corpus = {c["id"]: c["text"] for c in read_corpus(EXAMPLE / "corpus.jsonl")}
    shown = [c.value for c in at.text]
    assert not set(shown) & set(corpus) and sum(value in corpus.values() for value in shown) >= 2
    item_id = at.session_state["label:trace:ann:current"]
    # one note box for every item: its key never holds the item's id (#17)
    assert [box.key for box in at.text_input if "note" in box.key] == ["label:trace:note"]
    at.text_input(key="label:trace:note").input("the burning claim is not in the contexts").run()
    at.button(key="label:trace:grade1").click().run()
    assert "1 / 40 in this batch" in page_text(at)
    assert at.session_state["label:trace:ann:current"] != item_id
    assert [box.key for box in at.text_input if "note" in box.key] == ["label:trace:note"]
    assert at.text_input(key="label:trace:note").value == ""  # emptied for the next item
    with Store(db) as store:
        row = store.db.execute(
            """SELECT rubric, value, note FROM labels l JOIN annotators a ON a.id = l.annotator_id
               WHERE rubric = 'faithfulness' AND a.name = 'ann'"""
        ).fetchall()
    assert row == [("faithfulness", 1, "the burning claim is not in the contexts")]


def test_compare_page_records_the_order_shown(demo_db) -> None:
    db = demo_db
    at = run_function_page("render_compare_page").run()
    assert not at.exception
    assert "0 / 4 in this batch labelled by ann" in page_text(at)
    first_answer = at.text[1].value
    at.button(key="label:pair:grade0").click().run()  # 'a': the answer shown first
    at.button(key="label:pair:grade2").click().run()  # 't': a tie
    assert "2 / 4 in this batch" in page_text(at)
    # each key says what it means, in the rubric's words, "both bad" among them (#16)
    captions = [c.value for c in at.caption]
    for value, meaning in PREFERENCE.scale.items():
        key = at.button(key=f"label:pair:grade{value}")
        assert key.label == f"{PAIRS.keys[value]} · {meaning.partition(': ')[0]}"
        assert meaning.partition(": ")[2] in captions
    assert at.button(key="label:pair:grade3").label == "x · both bad"
    at.button(key="label:pair:grade3").click().run()  # 'x': both bad
    assert "3 / 4 in this batch" in page_text(at)
    with Store(db) as store:
        rows = store.db.execute(
            """SELECT l.value, l.shown, t.answer, tb.answer FROM labels l JOIN items i ON i.id = l.item_id
               JOIN traces t ON t.id = i.trace_id JOIN traces tb ON tb.id = i.trace_b_id ORDER BY l.id"""
        ).fetchall()
    assert [r[0] for r in rows] == [0, 2, 3] and all(r[1] in ("AB", "BA") for r in rows)
    with Store(db) as store:  # the review compares preferences: both bad is no preference, a tie
        from calibration.review import human_labels

        assert sorted(v["ann"] for v in human_labels(store, "preference").values() if "ann" in v)[1:] == [
            2,
            2,
        ]
    value, shown, answer_a, answer_b = rows[0]
    assert first_answer == (answer_a if shown == "AB" else answer_b)  # the order recorded is the order seen


def test_pool_report_says_what_each_run_found_alone(store) -> None:
    store.import_run(Run.from_rankings({"q": ["a", "b", "c"]}), name="bm25")
    store.import_run(Run.from_rankings({"q": ["c", "d", "e"]}), name="dense")
    store.import_labels(Qrels(grades={"q": {"a": 2, "b": 0, "c": 3, "d": 1, "e": 0}}), annotator="x")
    from annotation.views import pool_report

    report = {row["run"]: row for row in pool_report(store, 3)}
    # relevant (>= 1): a, c, d. bm25 finds a, c (a alone); dense finds c, d (d alone)
    assert report["bm25"] == {
        "run": "bm25",
        "pooled": 3,
        "relevant_found": 2,
        "relevant_judged": 3,
        "found_only_here": 1,
    }
    assert report["dense"]["relevant_found"] == 2 and report["dense"]["found_only_here"] == 1
    assert {r["run"]: r["found_only_here"] for r in pool_report(store, 1)} == {"bm25": 1, "dense": 1}


def test_data_page_counts_progress_and_pool(demo_db) -> None:
    at = run_function_page("render_data_page").run()
    assert not at.exception
    tables = [t.value for t in at.table]
    counts = dict(zip(tables[0]["table"], tables[0]["rows"]))
    assert counts["chunks"] == 24 and counts["items"] == 40 + 40 + 4
    progress_rows = tables[1].to_dict("records")
    assert {r["annotator"]: r["chunk items"] for r in progress_rows} == {
        "ann": "0 / 24",
        "bob": "0 / 24",
        "cat": "20 / 40",  # no assignment: their 20 labels and the 20 items still open (#26)
        "dan": "20 / 40",
    }  # cat, dan: an earlier round, nothing assigned: the open items (#26)
    imports = next(t for t in tables if "rows it holds" in t.columns).to_dict("records")
    assert [(r["id"], r["who"], r["state"]) for r in imports] == [(str(i), "demo", "live") for i in (3, 2, 1)]
    pool_rows = next(t for t in tables if "run" in t.columns).to_dict("records")
    # the earlier round judged q_faw and q_store; cat says m3 is 1, dan 0: the median (lower middle) is 0,
    # so 5 chunks are relevant, all in the run's top 10
    assert pool_rows[0]["run"] == "retriever" and pool_rows[0]["judged relevant it found"] == "5 of 5"


def test_items_pooled_before_assignment_are_assigned_later(store) -> None:
    store.import_run(Run.from_rankings({"q": ["a", "b", "c", "d"]}), name="bm25")
    pool(store, 2)  # single-user: a, b in everyone's queue
    assert progress(store, "ann") == (0, 2)
    pool(store, 4, annotators=["ann", "bob"], overlap=0.0)  # now with assignments: a, b must not drop out
    assert progress(store, "ann")[1] + progress(store, "bob")[1] == 4


def test_two_quick_keys_grade_one_item_once_and_names_do_not_mix(demo_db) -> None:
    """Review findings: two presses before a rerun must not grade the item on screen
    twice; undo after changing the name must not retract the other person's label."""
    db = demo_db
    at = run_function_page("render_label_chunks_page").run()
    at.button(key="label:grade2").click()
    at.button(key="label:grade3").click().run()
    with Store(db) as store:
        rows = store.db.execute(
            "SELECT item_id, value FROM labels l JOIN annotators a ON a.id = l.annotator_id WHERE a.name = 'ann'"
        ).fetchall()
    assert len(rows) == 1  # one label; the second press found no item of its own
    at.text_input(key="label:annotator").input("bob").run()
    at.button(key="label:undo").click().run()
    assert not at.exception
    assert "Nothing to undo in this session." in [plain(i.value) for i in at.info]
    with Store(db) as store:
        assert store.db.execute("SELECT count(*) FROM labels WHERE value IS NULL").fetchone()[0] == 0


def test_no_name_no_labelling(demo_db) -> None:
    at = page_test("denominator.ui.label.render_label_chunks_page").run()  # no DENOMINATOR_ANNOTATOR either
    assert "Type your name in the sidebar to start." in [i.value for i in at.info]
    assert not at.button


def data_page(db):
    return run_function_page("render_data_page").run(), db


def test_data_page_imports_uploads_in_one_transaction(demo_db) -> None:
    at, db = data_page(demo_db)
    assert not at.exception
    at.file_uploader(key="data:up:run").set_value(
        ("run.jsonl", (EXAMPLE / "run.jsonl").read_bytes(), "text/plain")
    )
    at.file_uploader(key="data:up:labels").set_value(
        ("truth.qrels", (EXAMPLE / "truth.qrels").read_bytes(), "text/plain")
    )
    at.text_input(key="data:run-name").input("second")
    at.text_input(key="data:labels-by").input("truth")
    at.button(key="FormSubmitter:data:import-Import").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    message = plain(at.success[0].value)
    assert "run 'second' (fetch) run.jsonl: 1 run, 40 rankings" in message
    assert "labels truth.qrels by 'truth':" in message and "denominator-" not in message
    with Store(db) as store:
        assert store.db.execute("SELECT count(*) FROM runs").fetchone()[0] == 2
        before = store.counts()
    # a bad label file beside a good run: neither lands, and the error names the upload
    at.file_uploader(key="data:up:run").set_value(
        ("run.jsonl", (EXAMPLE / "run.jsonl").read_bytes(), "text/plain")
    )
    at.file_uploader(key="data:up:labels").set_value(("bad.qrels", b"q1 0 d1 2\nq1 0 d2\n", "text/plain"))
    at.text_input(key="data:run-name").input("third")
    at.button(key="FormSubmitter:data:import-Import").click().run()
    assert not at.exception
    assert plain(at.error[0].value).startswith("Nothing was imported: bad.qrels:2")
    with Store(db) as store:
        assert store.counts() == before


def test_data_page_exports_a_download(demo_db) -> None:
    at, db = data_page(demo_db)
    at.selectbox(key="data:export-format").set_value("qrels")
    at.selectbox(key="data:export-who").set_value("cat")
    at.button(key="data:export").click().run()
    assert not at.exception and not at.error
    assert "wrote 20 judgments over 2 queries to qrels.txt" in [plain(c.value) for c in at.caption]
    with Store(db) as store:
        expected = store.export_qrels("cat")
    prepared = at.session_state["data:export-file"]
    assert prepared.filename == "qrels.txt" and prepared.mime == "text/plain"
    data = prepared.data.decode()
    lines = [line.split() for line in data.splitlines()]
    assert {(q, d): int(g) for q, _, d, g in lines} == {
        (q, d): g for q, docs in expected.grades.items() for d, g in docs.items()
    }
    at.selectbox(key="data:export-who").set_value("ann")  # ann has labelled nothing yet
    at.button(key="data:export").click().run()
    assert "no current labels to export by 'ann'" in plain(at.error[0].value)


def test_the_queue_resumes_after_the_last_label_and_comes_back_for_skipped_items(store) -> None:
    store.import_run(Run.from_rankings({"q": ["a", "b", "c", "d", "e"]}), name="bm25")
    pool(store, 5, annotators=["ann"])
    seen = []
    first = next_item(store, "ann")
    store.add_label(first["item_id"], "ann", 1)
    second = next_item(store, "ann")
    third = next_item(store, "ann", skipped=[second["item_id"]])  # the page skipped the second
    store.add_label(third["item_id"], "ann", 2)
    # a new session (nothing skipped in it): resumes after the third, not back at the skipped second
    fourth = next_item(store, "ann")
    assert fourth["item_id"] not in (first["item_id"], second["item_id"], third["item_id"])
    store.add_label(fourth["item_id"], "ann", 0)
    fifth = next_item(store, "ann")
    store.add_label(fifth["item_id"], "ann", 0)
    assert next_item(store, "ann")["item_id"] == second["item_id"]  # the end reached: the skipped one
    store.add_label(second["item_id"], "ann", 3)
    store.undo(first["item_id"], "ann")
    assert next_item(store, "ann")["item_id"] == first["item_id"]  # an undone label comes back
    store.add_label(first["item_id"], "ann", 1)
    assert next_item(store, "ann") is None
    seen = {first["item_id"], second["item_id"], third["item_id"], fourth["item_id"], fifth["item_id"]}
    assert len(seen) == 5 and progress(store, "ann") == (5, 5)


def test_data_page_samples_for_the_estimate(demo_db) -> None:
    """The Data page draws the estimate's sample as `pool --estimate` does: recorded, blind, assigned."""
    at, db = data_page(demo_db)
    assert not at.exception
    at.number_input(key="data:est-n").set_value(5)
    at.checkbox(key="data:est-corpus").check()
    at.text_input(key="data:est-who").input("ann")
    at.button(key="FormSubmitter:data:estimate-Sample").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    message = [plain(m.value) for m in at.success if "unjudged candidates sampled" in m.value][0]
    with Store(db) as store:
        rows = store.db.execute(
            "SELECT query_id, stratum, stratum_size, stratum_sampled, inclusion FROM estimate_samples"
        ).fetchall()
        assigned = store.db.execute(
            """SELECT count(*) FROM estimate_samples e JOIN assignments a ON a.item_id = e.item_id
               JOIN annotators p ON p.id = a.annotator_id WHERE p.name = 'ann'"""
        ).fetchone()[0]
    assert len(rows) == 4 * 5 and assigned == 20  # 4 queries, 5 each, all in ann's queue
    assert f"{len(rows)} unjudged candidates sampled over 4 queries" in message
    for _, stratum, size, sampled, inclusion in rows:
        assert stratum == "corpus (beyond 1000)" and sampled == 5 and inclusion == 5 / size
    at.text_input(key="data:est-strata").input("5")
    at.button(key="FormSubmitter:data:estimate-Sample").click().run()
    assert "each bound must exceed the pool depth 10" in plain(at.error[0].value)
    at.text_input(key="data:est-strata").input("50,x")  # the command line's words (cli_base.ranks)
    at.button(key="FormSubmitter:data:estimate-Sample").click().run()
    assert "'50,x': expected comma-separated ranks, e.g. 50,100,1000" in plain(at.error[0].value)


def test_skipped_items_come_back_a_past_label_changes_and_undo_says_what_it_took_back(demo_db) -> None:
    """#16: skip two, label the rest: the two come back; change a past label from "my work";
    undo names the grade and the item it retracted."""
    at = run_function_page("render_label_chunks_page").run()
    assert "0 / 24 in this batch labelled by ann" in page_text(at)
    skipped = []
    for _ in range(2):
        skipped.append(at.text[1].value)
        at.button(key="label:skip").click().run()
    # the two skipped are listed under "my work", to label now
    at.toggle(key="label:mywork").set_value(True).run()
    text = page_text(at)
    assert "Skipped, 2 to label" in text and "Your labels, newest first (0 shown)" in text
    at.toggle(key="label:mywork").set_value(False).run()
    seen = []
    for _ in range(22):
        seen.append(at.text[1].value)
        at.button(key="label:grade2").click().run()
    assert not set(skipped) & set(seen)
    assert "22 / 24 in this batch" in page_text(at)
    # the queue is done: the skipped items come back, in the order they were skipped
    assert at.text[1].value == skipped[0]
    assert "Back to an item you skipped (1 more after it)." in page_text(at)
    at.button(key="label:grade0").click().run()
    assert at.text[1].value == skipped[1]
    at.button(key="label:grade1").click().run()
    assert "Nothing left to label: 24 of 24 done." in page_text(at)

    # undo says what it took back, and the item is on screen again
    at.button(key="label:undo").click().run()
    text = page_text(at)
    assert "Took back your 1 · related on" in text and "it is on screen again" in text
    assert at.text[1].value == skipped[1]
    at.button(key="label:grade3").click().run()

    # change a past label: the newest is the 3 just given; the one before is skipped[0]'s 0
    at.toggle(key="label:mywork").set_value(True).run()
    text = page_text(at)
    assert "Your labels, newest first (20 shown)" in text
    assert "Skipped, 0 to label" in text
    at.button(key="label:change:1").click().run()
    assert at.text[1].value == skipped[0]
    assert "Your label on this item is 0 · irrelevant" in page_text(at)
    at.button(key="label:grade3").click().run()
    with Store(demo_db) as store:
        ann = store.annotator_id("ann")
        history = store.db.execute(
            "SELECT value FROM labels l JOIN items i ON i.id = l.item_id WHERE l.annotator_id = ? "
            "AND i.kind = 'chunk' ORDER BY l.id",
            [ann],
        ).fetchall()
        assert len([r for r in history if r[0] is not None]) >= 26  # 24 + the undone one + the change
        mine = store.my_labels("ann", "chunk", limit=30)
        assert len(mine) == 24 and mine[0]["value"] == 3
        assert sorted(r["value"] for r in mine).count(3) == 2  # skipped[1] and the changed skipped[0]
    assert not at.exception
