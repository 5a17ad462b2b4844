"""Blinding enforced on the code path, not only on the screen: every SQL statement the
labelling pages run is recorded (sqlite3's trace callback on every store connection), and
none may read judge labels, runs, rankings, scores, system names or another person's labels."""

from __future__ import annotations

import re

import pytest

import annotation.store as store_module
from annotation.store import Store
from denominator.demo import build_demo
from tests.conftest import page_test

FORBIDDEN_TABLES = ("judge_labels", "judges", "runs", "rankings", "calibrations", "review_samples")


@pytest.fixture
def statements(monkeypatch):
    seen: list[str] = []
    original = Store.__init__

    def traced(self, *args, **kwargs):
        original(self, *args, **kwargs)
        self.db.conn.set_trace_callback(seen.append)

    monkeypatch.setattr(store_module.Store, "__init__", traced)
    return seen


@pytest.fixture
def demo(tmp_path, monkeypatch):
    """`make run`'s demo (judge labels exist: the pages must not read them), the app pointed at it; ann's token."""
    db = tmp_path / "demo.db"
    build_demo(str(db), with_judge=True)
    monkeypatch.setenv("DENOMINATOR_DB", str(db))
    with Store(db) as store:
        token = store.add_annotator("ann", "annotator")
    return db, token


def _check(sql: str) -> list[str]:
    flat = " ".join(sql.split()).lower()
    problems = [f"reads {t}" for t in FORBIDDEN_TABLES if re.search(rf"\b{t}\b", flat)]
    if re.search(r"\bscore\b", flat):
        problems.append("reads a score")
    if re.search(r"\bsystem\b", flat):
        problems.append("reads a system name")
    if re.search(r"\blabels\b", flat) and not flat.startswith("insert") and "annotator_id =" not in flat:
        problems.append("reads labels without restricting them to one annotator")
    return problems


@pytest.mark.parametrize(
    "render", ["render_label_chunks_page", "render_label_traces_page", "render_compare_page"]
)
def test_the_labelling_pages_never_query_what_they_must_not_show(demo, statements, render) -> None:
    _, token = demo
    at = page_test(f"denominator.ui.label.{render}", timeout=60, state={"access:token": token}).run()
    assert not at.exception
    prefix = {"render_label_chunks_page": "label:", "render_label_traces_page": "label:trace:"}.get(
        render, "label:pair:"
    )
    at.button(key=f"{prefix}grade1").click().run()  # a label written
    at.button(key=f"{prefix}undo").click().run()  # and undone
    assert not at.exception
    reads = [
        s for s in statements if not s.lstrip().upper().startswith(("PRAGMA", "BEGIN", "COMMIT", "ROLLBACK"))
    ]
    assert len(reads) > 10  # the instrument saw the page's queries, the label written among them
    assert any(sql.lstrip().upper().startswith("INSERT INTO LABELS") for sql in reads)
    bad = {sql: _check(sql) for sql in reads if _check(sql)}
    assert not bad, bad


def test_the_instrument_catches_a_leak(demo, statements) -> None:
    """The check itself: the admin's Data page reads runs and everyone's labels."""
    db, _ = demo
    with Store(db) as store:
        admin = store.add_annotator("root", "admin")
    at = page_test("denominator.ui.data.render_data_page", timeout=60, state={"access:token": admin}).run()
    assert not at.exception and at.title[0].value == "Data"
    assert any(_check(sql) for sql in statements)
