"""The review pass (issue #43, item 7; annotation/store/reviews.py, denominator/ui/label_review.py),
on both backends: a reviewer agrees with or corrects a person's labels; a correction is a new label
of the reviewer's that settles the item (the export gives it), the person's row untouched; the share
corrected per person; the refusals (one's own label, an annotator reviewing, a stale label, a
correction equal to the label); the role ``reviewer`` given and taken back; the page, its keys and
its figures; agreement between people leaves a correction out.

The demo store: cat and dan labelled the same 20 chunks (one disagreement), cat 16 traces too."""

from __future__ import annotations

import subprocess
import sys

import pytest

from annotation import actions as annotation_actions
from annotation.exports.label_files import export_qrels
from annotation.formats.by_extension import read_judgments
from annotation.render import plain
from annotation.store import Store, StoreError
from calibration import actions
from calibration.policy.rules import DEFAULT_POLICY
from tests.conftest import integrity_errors, page_test, page_text

PAGE = "denominator.ui.label_review.render_label_review_page"


def test_agree_correct_and_the_shares(demo_db, tmp_path) -> None:
    with Store(demo_db) as store:
        store.add_annotator("rev", "reviewer")
        waiting = store.labels_to_review("cat", "chunk")
        assert len(waiting) == 20 and [w["label_id"] for w in waiting] == sorted(
            w["label_id"] for w in waiting
        )
        first, second, third = waiting[:3]
        before = store.label_history("cat")
        store.review_label(first["label_id"], "rev", "agree")
        new = (second["value"] + 1) % 4
        done = store.review_label(second["label_id"], "rev", "correct", new, note="the answer is in it")
        assert done["correction_id"] is not None and done["settlement_id"] is not None
        assert store.label_history("cat") == before  # the person's rows untouched
        history = store.item_labels(second["item_id"])
        assert [s["admin"] for s in history["settlements"]] == ["rev"]
        # the export gives the item the corrected grade
        export_qrels(store, tmp_path / "qrels.txt")
        item = store.item_detail(second["item_id"])
        assert read_judgments(tmp_path / "qrels.txt").grades[item["query_id"]][item["chunk_id"]] == new
        shares = {s["person"]: s for s in store.review_shares("chunk")}
        assert shares["cat"] == {"person": "cat", "labels": 20, "reviewed": 2, "agreed": 1, "corrected": 1}
        assert shares["dan"]["reviewed"] == 0 and "rev" not in shares  # a correction is not a label to review
        assert len(store.labels_to_review("cat", "chunk")) == 18
        # a second review of the same row: the newest counts
        store.review_label(first["label_id"], "rev", "correct", (first["value"] + 1) % 4)
        shares = {s["person"]: s for s in store.review_shares("chunk")}
        assert (shares["cat"]["reviewed"], shares["cat"]["agreed"], shares["cat"]["corrected"]) == (2, 0, 2)
        # cat changes a label: the new row waits for its review, the old review stays on the old row
        store.add_label(third["item_id"], "cat", (third["value"] + 2) % 4)
        with pytest.raises(StoreError, match="not a current label"):
            store.review_label(third["label_id"], "rev", "agree")
        assert store.labels_to_review("cat", "chunk")[0]["item_id"] == waiting[3]["item_id"]


def test_the_refusals_write_nothing(demo_db) -> None:
    with Store(demo_db) as store:
        store.add_annotator("rev", "reviewer")
        label = store.labels_to_review("cat", "chunk")[0]
        own = store.labels_to_review("dan", "chunk")[0]
        store.add_label(own["item_id"], "rev", 1)
        mine = store.labels_to_review("rev", "chunk")[0]
        count = len(store.label_history())
        cases = [
            ((mine["label_id"], "rev", "agree"), "their own label"),
            ((label["label_id"], "dan", "agree"), "only a reviewer or an admin"),
            ((label["label_id"], "rev", "correct", label["value"]), "agree with it instead"),
            ((label["label_id"], "rev", "correct"), "needs the grade"),
            ((label["label_id"], "rev", "correct", 7), "not on the relevance scale"),
            ((label["label_id"], "rev", "agree", 2), "carries no grade"),
            ((label["label_id"], "rev", "maybe"), "one of agree, correct"),
        ]
        for arguments, message in cases:
            with pytest.raises(StoreError, match=message):
                store.review_label(*arguments)
        assert len(store.label_history()) == count
        assert store.review_shares("chunk")[0]["reviewed"] == 0


def test_the_reviews_are_append_only(demo_db) -> None:
    with Store(demo_db) as store:
        store.add_annotator("rev", "reviewer")
        label = store.labels_to_review("cat", "chunk")[0]
        store.review_label(label["label_id"], "rev", "agree")
        for statement in ("UPDATE label_reviews SET verdict = 'correct'", "DELETE FROM label_reviews"):
            with pytest.raises(integrity_errors(), match="append-only"):
                store.db.execute(statement)
        assert store.review_shares("chunk")[0]["agreed"] == 1


def test_the_role_reviewer(demo_db) -> None:
    with Store(demo_db) as store:
        token = store.add_annotator("eve", "reviewer")
        roles = {a["name"]: a["role"] for a in store.annotators()}
        assert roles["eve"] == "reviewer" and roles["cat"] == "annotator"
        assert store.identify(token) == {"name": "eve", "role": "reviewer"}
        assert annotation_actions.annotators(store, "reviewer", name="cat") == "reviewer"
        assert annotation_actions.annotators(store, "reviewer", name="eve", remove=True) == "annotator"
        roles = {a["name"]: a["role"] for a in store.annotators()}
        assert roles["eve"] == "annotator" and roles["cat"] == "reviewer"
        store.add_annotator("root", "admin")
        with pytest.raises(StoreError, match="an admin reviews labels already"):
            store.set_reviewer("root", True)
        with pytest.raises(StoreError, match="claim rule's role must be one of annotator, admin"):
            store.map_claim("groups", "reviewers", "reviewer", "root")


def test_agreement_leaves_a_correction_out(demo_db) -> None:
    """A correction (a settlement) is given while reading the person's grade: it is no rating of its own."""
    with Store(demo_db) as store:
        store.add_annotator("rev", "reviewer")
        before = actions.agree(policy=DEFAULT_POLICY, store=store)
        for label in store.labels_to_review("cat", "chunk")[:3]:
            store.review_label(label["label_id"], "rev", "correct", (label["value"] + 1) % 4)
        after = actions.agree(policy=DEFAULT_POLICY, store=store)
    assert before["raters"] == after["raters"] == ["cat", "dan"]
    assert after["pairs"][0]["kappa"] == before["pairs"][0]["kappa"]


def test_the_page(demo_db) -> None:
    with Store(demo_db) as store:
        token = store.add_annotator("rev", "reviewer")
        first = store.labels_to_review("cat", "chunk")[0]
        item = store.item_detail(first["item_id"])
    at = page_test(PAGE, state={"access:token": token}, timeout=60).run()
    assert not at.exception, [e.value for e in at.exception]
    shares = {r["person"]: r for r in at.dataframe[0].value.to_dict("records")}
    assert shares["cat"]["reviewed"] == "0 / 20 (0%)" and shares["cat"]["corrected"] == "0 / 0"
    assert at.selectbox(key="labelreview:person").options == ["cat", "dan"]
    text = page_text(at)
    assert "0 / 20 of cat's labels reviewed" in text and item["chunk"] in text
    assert f"cat said {first['value']}" in text
    labels = {b.label for b in at.button}
    assert "Agree" in labels and f"Correct to {first['value']}" not in labels
    at.button(key="labelreview:agree").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert "1 / 20 of cat's labels reviewed" in page_text(at)
    with Store(demo_db) as store:
        second = store.labels_to_review("cat", "chunk")[0]
    assert f"cat said {second['value']}" in page_text(at)
    new = (second["value"] + 2) % 4
    at.button(key=f"labelreview:correct:{new}").click().run()
    assert not at.exception, [e.value for e in at.exception]
    shares = {r["person"]: r for r in at.dataframe[0].value.to_dict("records")}
    assert (shares["cat"]["reviewed"], shares["cat"]["agreed"], shares["cat"]["corrected"]) == (
        "2 / 20 (10%)",
        "1 / 2 (50%)",
        "1 / 2 (50%)",
    )
    with Store(demo_db) as store:
        assert store.item_labels(second["item_id"])["settlements"][0]["admin"] == "rev"


def test_an_annotator_cannot_open_the_page(demo_db) -> None:
    with Store(demo_db) as store:
        token = store.add_annotator("ann2", "annotator")
    at = page_test(PAGE, state={"access:token": token}).run()
    assert [plain(e.value) for e in at.error] == [
        "This page is for reviewers and admins; you are signed in as ann2 (annotator)."
    ]
    assert not at.dataframe and not at.button


def test_the_command_line(demo_db) -> None:
    run = [sys.executable, "-m", "annotation", "annotators"]
    made = subprocess.run([*run, "reviewer", "cat"], capture_output=True, text=True)
    assert made.returncode == 0, made.stderr
    assert made.stdout == "annotator 'cat' is now a reviewer\n"
    off = subprocess.run([*run, "reviewer", "cat", "--off"], capture_output=True, text=True)
    assert off.stdout == "annotator 'cat' is now an annotator\n"
    nobody = subprocess.run([*run, "reviewer", "zed"], capture_output=True, text=True)
    assert (
        nobody.returncode == 2
        and "no annotator named 'zed'" in nobody.stderr
        and "Traceback" not in nobody.stderr
    )
