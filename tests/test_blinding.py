"""Blinding enforced on the code path, not only on the screen: every SQL statement the
labelling pages run is recorded (sqlite3's trace callback on every store connection), and
none may read judge labels, runs, rankings, scores, system names or another person's labels."""

from __future__ import annotations

import re

import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

import annotation.store as store_module
from annotation.__main__ import build_demo
from annotation.store import Store

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
    db = tmp_path / "demo.db"
    build_demo(str(db), with_judge=True)  # judge labels exist: the pages must not read them
    monkeypatch.setenv("DENOMINATOR_DB", str(db))
    with Store(db) as store:
        token = store.add_annotator("ann", "annotator")
    st.cache_data.clear()
    return token


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
    def page(render):
        import annotation.ui as ui

        getattr(ui, render)()

    at = AppTest.from_function(page, args=(render,), default_timeout=60)
    at.session_state["access:token"] = demo
    at.run()
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

    def page():
        from annotation.ui import render_data_page

        render_data_page()

    with Store(demo_db()) as store:
        admin = store.add_annotator("root", "admin")
    at = AppTest.from_function(page, default_timeout=60)
    at.session_state["access:token"] = admin
    at.run()
    assert not at.exception and at.title[0].value == "Data"
    assert any(_check(sql) for sql in statements)


def demo_db() -> str:
    import os

    return os.environ["DENOMINATOR_DB"]
