"""The admin's item browser and adjudication (annotation/store/browse.py, denominator/ui/browse.py).

A store built by hand: two queries, four chunks, a run ``bm25`` that returned c1 and c2 for q1 and
c3 for q2 (c4 is an item no run returned), two traces and a pair of them.

    item  (query, chunk)  people's current labels       median  judge gpt-x  people disagree  judge disagrees
    c1    (q1, c1)        ann 1, bob 3                  1       3            yes              yes
    c2    (q1, c2)        ann 2, bob 2                  2       0            no               yes
    c3    (q2, c3)        ann 0 (bob's 1 undone)        0       0            no               no
    c4    (q2, c4)        ann 3                         3       3 (an error first)  no        no
    pair  (t1 vs t2)      ann A (shown AB), bob A (BA)  -       -            no               not compared

Settled at 3 by root (admin), c1's grade in every aggregate is 3; settled at 0, it is 0 where the
median of ann 1, bob 3 and root's 0 would be 1.
"""

from __future__ import annotations

import pytest

from annotation.exports import export_beir, export_qrels
from annotation.exports.common import judged_grades
from annotation.formats.by_extension import read_judgments
from annotation.model import Run
from annotation.render import plain
from annotation.store import Store, StoreError
from annotation.store.browse import judge_disagrees_of, people_disagree_of, people_grade_of
from tests.conftest import integrity_errors, page_test, page_text

FP = "f" * 64  # the judge's fingerprint


def build(db) -> dict[str, int]:
    """The store of the module docstring; item ids by name."""
    with Store(db) as store:
        store.import_queries(
            {"q1": "What is the capital of France?", "q2": "At what temperature does water boil?"}
        )
        store.import_corpus(
            [
                {"id": "c1", "text": "Paris is the capital of France."},
                {"id": "c2", "text": "France is a country in Europe."},
                {"id": "c3", "text": "Water boils at 100 degrees Celsius at sea level."},
                {"id": "c4", "text": "Ice melts at 0 degrees Celsius."},
            ]
        )
        store.import_run(Run.from_rankings({"q1": ["c1", "c2"], "q2": ["c3"]}), "bm25")
        store.import_traces(
            [
                {
                    "id": "t1",
                    "query_id": "q1",
                    "system": "sys-a",
                    "question": "Capital of France?",
                    "contexts": ["c1"],
                    "answer": "Paris.",
                },
                {
                    "id": "t2",
                    "query_id": "q1",
                    "system": "sys-b",
                    "question": "Capital of France?",
                    "contexts": ["c2"],
                    "answer": "Lyon.",
                },
            ]
        )
        items = {
            c: store.ensure_item("chunk", query_id=q, chunk_id=c)
            for q, c in (("q1", "c1"), ("q1", "c2"), ("q2", "c3"), ("q2", "c4"))
        }
        items["pair"] = store.ensure_item("pair", query_id="q1", trace_id="t1", trace_b_id="t2")
        for name in ("ann", "bob"):
            store.annotator_id(name)
        store.annotator_id("root", role="admin")
        store.add_label(items["c1"], "ann", 1)
        store.add_label(items["c1"], "bob", 3)
        store.add_label(items["c2"], "ann", 2)
        store.add_label(items["c2"], "bob", 2)
        store.add_label(items["c3"], "ann", 0)
        store.add_label(items["c3"], "bob", 1, note="close call")
        store.undo(items["c3"], "bob")
        store.add_label(items["c4"], "ann", 3)
        store.add_label(items["pair"], "ann", 0, "preference", shown="AB")  # A, shown first
        store.add_label(items["pair"], "bob", 1, "preference", shown="BA")  # A, shown second
        store.register_judge(
            FP, {"kind": "llm", "rubric": "relevance", "model": "gpt-x", "endpoint": "http://h"}
        )
        store.add_judge_labels(
            [
                {"item_id": items["c1"], "fingerprint": FP, "repeat": 0, "value": 3, "reason": "names Paris"},
                {"item_id": items["c2"], "fingerprint": FP, "repeat": 0, "value": 0, "reason": "no answer"},
                {"item_id": items["c3"], "fingerprint": FP, "repeat": 0, "value": 0, "reason": "off topic"},
                {"item_id": items["c4"], "fingerprint": FP, "repeat": 0, "error": "timeout"},
            ]
        )
        store.add_judge_labels(
            [{"item_id": items["c4"], "fingerprint": FP, "repeat": 0, "value": 3, "reason": "exact"}]
        )
    return items


@pytest.fixture
def hand(db_at, monkeypatch):
    db = db_at
    items = build(db)
    monkeypatch.setenv("DENOMINATOR_DB", str(db))
    return db, items


def ids(rows) -> list[int]:
    return [r["item_id"] for r in rows]


# ---------------------------------------------------------------- the definitions


def test_the_definitions() -> None:
    assert people_grade_of("chunk", [1, 3]) == 1  # the lower middle, as the exports' median
    assert people_grade_of("chunk", [0, 2, 3]) == 2
    assert people_grade_of("pair", [0, 1]) is None and people_grade_of("chunk", []) is None
    assert people_disagree_of([2, 3]) and people_disagree_of([0, 0, 1])
    assert not people_disagree_of([2, 2]) and not people_disagree_of([3])
    assert judge_disagrees_of(3, 1) is True and judge_disagrees_of(2, 2) is False
    assert judge_disagrees_of(None, 1) is None and judge_disagrees_of(1, None) is None


# ---------------------------------------------------------------- the store's filters


def test_browse_rows_and_filters(hand) -> None:
    db, items = hand
    with Store(db) as store:
        rows = {r["item_id"]: r for r in store.browse_items()}
        assert len(rows) == 7  # 4 chunks, 2 traces (import_traces makes trace items), 1 pair
        c1 = rows[items["c1"]]
        assert c1["people"] == {"ann": 1, "bob": 3} and c1["people_grade"] == 1 and c1["labels"] == 2
        assert c1["judges"] == {"gpt-x/relevance v1": 3}
        assert c1["people_disagree"] is True and c1["judge_disagrees"] is True
        assert (
            c1["query"] == "What is the capital of France?"
            and c1["shown"] == "Paris is the capital of France."
        )
        c3 = rows[items["c3"]]
        assert c3["people"] == {"ann": 0} and c3["judge_disagrees"] is False  # bob's 1 was undone
        assert rows[items["c4"]]["judges"] == {"gpt-x/relevance v1": 3}  # the error row never counts
        pair = rows[items["pair"]]
        assert pair["people"] == {"ann": 0, "bob": 0}  # both chose A, in their own order
        assert pair["people_disagree"] is False and pair["judge_disagrees"] is None
        assert pair["shown"] == "t1 vs t2"

        assert ids(store.browse_items(people_disagree=True)) == [items["c1"]]
        assert ids(store.browse_items(judge_disagrees=True)) == [items["c1"], items["c2"]]
        assert ids(store.browse_items(people_disagree=True, judge_disagrees=True)) == [items["c1"]]
        assert ids(store.browse_items(judge=FP, judge_grade=0, people_grade=2)) == [items["c2"]]
        assert ids(store.browse_items(judge=FP, judge_grade=3, people_grade=3)) == [items["c4"]]
        assert ids(store.browse_items(run="bm25")) == [items["c1"], items["c2"], items["c3"]]
        assert ids(store.browse_items(annotator="bob")) == [items["c1"], items["c2"], items["pair"]]
        assert ids(store.browse_items(query="boil")) == [items["c3"], items["c4"]]
        # the query id, case-insensitive: 2 chunks, 2 traces, the pair
        assert len(store.browse_items(query="Q1")) == 5
        assert ids(store.browse_items(rubric="preference")) == [items["pair"]]
        assert len(store.browse_items(rubric="faithfulness")) == 2
        assert ids(store.browse_items(judge=FP)) == [items["c1"], items["c2"], items["c3"], items["c4"]]
        assert store.browse_items(week="2026-W49") == []
        for bad in ({"run": "nope"}, {"annotator": "nobody"}, {"judge": "0" * 64}, {"rubric": "taste"}):
            with pytest.raises(StoreError):
                store.browse_items(**bad)


def test_item_labels_every_row_with_the_retraction(hand) -> None:
    db, items = hand
    with Store(db) as store:
        history = store.item_labels(items["c3"])
        detail = store.item_detail(items["c3"])
        pair = store.item_detail(items["pair"])
    labels = [
        (r["annotator"], r["value"], r["note"], r["retraction"], r["current"]) for r in history["labels"]
    ]
    assert labels == [
        ("ann", 0, None, False, True),
        ("bob", 1, "close call", False, False),
        ("bob", None, None, True, True),  # the undo: a row without a value, and it counts
    ]
    assert all(r["created_at"] for r in history["labels"])
    assert [(r["judge"], r["version"], r["value"], r["reason"]) for r in history["judge_labels"]] == [
        ("gpt-x/relevance", 1, 0, "off topic")
    ]
    assert history["settlements"] == []
    assert detail["query"] == "At what temperature does water boil?" and detail["chunk"].startswith(
        "Water boils"
    )
    assert pair["answer"] == "Paris." and pair["answer_b"] == "Lyon." and pair["system_b"] == "sys-b"
    with Store(db) as store:
        judged = store.item_labels(items["c4"])["judge_labels"]
        assert [(r["value"], r["error"]) for r in judged] == [(None, "timeout"), (3, None)]
        with pytest.raises(StoreError, match="no item 999"):
            store.item_labels(999)


# ---------------------------------------------------------------- adjudication


def test_settle_supersede_withdraw_append_only(hand) -> None:
    db, items = hand
    c1 = items["c1"]
    with Store(db) as store:
        first = store.settle(c1, "root", 3, note="Paris is the answer")
        assert store.browse_items(settled=True)[0]["settled"] == 3
        second = store.settle(c1, "root", 2)
        history = store.item_labels(c1)
        assert [s["value"] for s in history["settlements"]] == [3, 2]
        assert [s["current"] for s in history["settlements"]] == [False, True]  # the newer supersedes
        settling = [r["label_id"] for r in history["labels"] if r["settles"]]
        assert settling == [second["label_id"]] and first["label_id"] != second["label_id"]
        assert [r["note"] for r in history["labels"] if r["annotator"] == "root"] == [
            "Paris is the answer",
            None,
        ]
        row = {r["item_id"]: r for r in store.browse_items()}[c1]
        assert (row["settled"], row["settled_by"]) == (2, "root")
        assert ids(store.browse_items(settled=False, rubric="relevance")) == [
            items["c2"],
            items["c3"],
            items["c4"],
        ]
        for statement in ("UPDATE settlements SET label_id = NULL", "DELETE FROM settlements"):
            with pytest.raises(integrity_errors(), match="append-only"):
                store.db.execute(statement)
        store.unsettle(c1, "root")
        assert store.browse_items(settled=True) == []
        assert len(store.item_labels(c1)["settlements"]) == 3  # nothing was updated or deleted
        with pytest.raises(StoreError, match="not settled"):
            store.unsettle(c1, "root")


def test_only_an_admin_settles_and_nothing_half_written(hand) -> None:
    db, items = hand
    with Store(db) as store:
        before = len(store.label_history())
        with pytest.raises(StoreError, match="only an admin"):
            store.settle(items["c1"], "ann", 3)
        with pytest.raises(StoreError, match="not on the relevance scale"):
            store.settle(items["c1"], "root", 7)
        with pytest.raises(StoreError, match="no item 999"):
            store.settle(999, "root", 1)
        assert len(store.label_history()) == before
        assert store.item_labels(items["c1"])["settlements"] == []
        store.settle(items["c1"], "solo", 0)  # a new name (single-user local mode) is added as an admin
        assert {a["name"]: a["role"] for a in store.annotators()}["solo"] == "admin"


def test_exports_aggregate_honours_the_settlement(hand, tmp_path) -> None:
    db, items = hand
    with Store(db) as store:
        assert store.export_qrels(aggregate="median").grades["q1"]["c1"] == 1  # ann 1, bob 3: lower middle
        assert store.export_qrels(aggregate="mean").grades["q1"]["c1"] == 2  # 2.0
        assert store.export_qrels(aggregate="majority").grades["q1"]["c1"] == 1  # a tie: lower middle
        assert "settled" not in store.export_qrels().meta
        store.settle(items["c1"], "root", 3)
        for method in ("median", "majority", "mean"):
            assert store.export_qrels(aggregate=method).grades["q1"]["c1"] == 3
        store.settle(items["c1"], "root", 0)  # ann 1, bob 3, root 0: median 1, mean 1; settled 0
        for method in ("median", "majority", "mean"):
            qrels = store.export_qrels(aggregate=method)
            assert qrels.grades["q1"] == {"c1": 0, "c2": 2}
            assert qrels.meta["settled"] == 1
        assert store.export_qrels("ann").grades["q1"]["c1"] == 1  # one person's labels are theirs alone
        summary = export_qrels(store, tmp_path / "qrels.txt")
        assert "; 1 item settled by an admin (the settled grade, not the aggregate); " in summary
        assert read_judgments(tmp_path / "qrels.txt").grades["q1"]["c1"] == 0
        judged = judged_grades(store, 1, None, "median")
        assert judged.settled == 1
        assert judged.source() == (
            "the median grade over 3 annotators (ann, bob, root), "
            "1 item settled by an admin (the settled grade, not the aggregate), "
            # c1 (ann 1, bob 3, root 0) disagrees, c2 (ann 2, bob 2) agrees
            "1 of 2 items graded by more than one person had disagreeing grades, aggregated by the median, "
            "the lower middle grade (an even number of raters: the lower of the two middle grades) "
            "(1 of them settled by an admin, the settled grade kept)"
        )
        beir = export_beir(store, tmp_path / "beir")
        assert "1 item settled by an admin" in beir
        store.unsettle(items["c1"], "root")
        assert store.export_qrels().grades["q1"]["c1"] == 1  # back to the median of ann 1, bob 3, root 0
        assert "settled" not in store.export_qrels().meta


# ---------------------------------------------------------------- the page


@pytest.fixture
def tokens(hand):
    db, _ = hand
    with Store(db) as store:
        return {"ann": store.add_annotator("ann", "annotator"), "root": store.add_annotator("root", "admin")}


def items_page(token: str):
    return page_test("denominator.ui.browse.render_items_page", state={"access:token": token})


def test_the_items_page_filters_opens_and_settles(hand, tokens) -> None:
    db, items = hand
    at = items_page(tokens["root"]).run()
    assert not at.exception, [e.value for e in at.exception]
    assert "7 items match" in page_text(at)
    at.checkbox(key="browse:people_disagree").check().run()
    assert "1 item matches" in page_text(at)
    frame = at.dataframe[0].value
    assert frame["item"].tolist() == [items["c1"]] and frame["disagree"].tolist() == ["people, judge"]
    assert frame["people"].tolist() == ["ann 1, bob 3"] and frame["judges"].tolist() == [
        "gpt-x/relevance v1: 3"
    ]
    at.session_state["browse:table"] = {"selection": {"rows": [0], "columns": []}}
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    shown = page_text(at)
    assert f"Item {items['c1']}: chunk, relevance" in shown
    assert [c.value for c in at.code][:2] == [
        "What is the capital of France?",
        "Paris is the capital of France.",
    ]
    labels = at.dataframe[1].value
    assert labels["who"].tolist() == ["ann", "bob"] and labels["value"].tolist() == [
        "1 (related)",
        "3 (perfectly relevant)",
    ]
    judged = at.dataframe[2].value
    assert judged["reason"].tolist() == ["names Paris"] and judged["grade"].tolist() == ["3"]
    assert "Not settled" in shown
    at.selectbox(key=f"browse:value:{items['c1']}").set_value(3)
    submit = [b for b in at.button if b.label == "Settle at this grade"][0]
    submit.click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert f"Item {items['c1']} settled at 3 by root." in [plain(s.value) for s in at.success]
    assert "Settled at 3 (perfectly relevant) by root" in page_text(at)
    with Store(db) as store:
        assert store.export_qrels().grades["q1"]["c1"] == 3
        assert [s["admin"] for s in store.item_labels(items["c1"])["settlements"]] == ["root"]


def test_the_items_page_refuses_an_annotator(hand, tokens) -> None:
    at = items_page(tokens["ann"]).run()
    assert not at.exception
    assert [plain(e.value) for e in at.error] == [
        "This page is for admins only; you are signed in as ann (annotator)."
    ]
    assert not at.dataframe and not at.checkbox


def test_the_labelling_pages_never_reach_the_browser() -> None:
    """Blind by default: the annotators' pages and the queue read nothing of the browser."""
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    for path in ("denominator/ui/label.py", "annotation/pooling.py", "annotation/store/queue.py"):
        text = (root / path).read_text(encoding="utf-8")
        for name in ("browse_items", "item_labels", "item_detail", "browse_ui", "settle"):
            assert name not in text, f"{path} uses {name}"


def test_a_confusion_matrix_cell_opens_its_items(hand, tokens) -> None:
    """The review page lists the non-empty cells, judge's grade first (the matrix's rows are the
    judge's grades: cohen(judge, people)); opening one hands its filters to the Items page."""
    db, items = hand
    review = page_test(
        "denominator.ui.review.render_review_page", state={"access:token": tokens["root"]}, timeout=60
    ).run()
    assert not review.exception, [e.value for e in review.exception]
    cells = review.selectbox(key=f"review:cell:{FP}")
    assert cells.options == [
        "judge said 0, people said 0: 1 item (they agree)",
        "judge said 0, people said 2: 1 item",
        "judge said 3, people said 1: 1 item",
        "judge said 3, people said 3: 1 item (they agree)",
    ]
    cells.set_value(2).run()
    review.button(key=f"review:cell:{FP}:open").click().run()
    assert not review.exception, [e.value for e in review.exception]
    handed = review.session_state["browse:handed"]  # AppTest has no navigation to switch to
    assert (handed["judge"], handed["judge_grade"], handed["people_grade"]) == (FP, 3, 1)
    at = items_page(tokens["root"])
    at.session_state["browse:handed"] = handed
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert "1 item matches" in page_text(at)
    assert at.dataframe[0].value["item"].tolist() == [items["c1"]]
    assert at.selectbox(key="browse:judge_grade").value == 3
    assert at.selectbox(key="browse:people_grade").value == 1
