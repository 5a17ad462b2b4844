"""The Judge page through AppTest: the offline judge by default, the LLM judge against the local server."""

from __future__ import annotations

import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from annotation.__main__ import build_demo
from annotation.store import Store
from tests.fake_openai import FakeOpenAI


@pytest.fixture(autouse=True)
def _clear_caches():
    st.cache_data.clear()
    st.cache_resource.clear()
    yield
    st.cache_data.clear()


@pytest.fixture
def demo(tmp_path, monkeypatch):
    db = tmp_path / "demo.db"
    build_demo(str(db))
    monkeypatch.setenv("DENOMINATOR_DB", str(db))
    for name in ("OPENAI_BASE_URL", "OPENAI_MODEL", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    return db


def judge_page() -> AppTest:
    def page():
        from judge.ui import render_judge_page

        render_judge_page()

    return AppTest.from_function(page, default_timeout=60)


def test_offline_judge_by_default_fits_and_grades(demo) -> None:
    at = judge_page().run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.radio(key="judge:kind").value.startswith("offline")
    caption = " ".join(c.value for c in at.caption)
    assert "Fitted on 20 human labels" in caption and "over n = 20 labelled items" in caption
    assert "40 of 40 items left to grade" in caption
    at.button(key="judge:offline-run").click().run()
    assert not at.exception
    assert "Graded 40 items (0 already done)." in [s.value for s in at.success]
    table = at.dataframe[0].value
    assert list(table["kind"]) == ["lexical"] and list(table["answers"]) == [40]
    with Store(demo) as store:
        assert (
            store.db.execute("SELECT count(*) FROM judge_labels WHERE value IS NOT NULL").fetchone()[0] == 40
        )


def test_llm_judge_on_the_page_asks_pairs_in_both_orders(demo, monkeypatch) -> None:
    with FakeOpenAI(bias="first") as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_MODEL", "fake-judge")
        at = judge_page().run()
        assert at.radio(key="judge:kind").value.startswith("LLM")
        at.selectbox(key="judge:rubric").set_value("preference").run()
        text = " ".join(m.value for m in at.markdown)
        assert "8 calls to make (0 of 8 already done)" in text and "cost unknown" in text
        assert sum(server.received.values()) == 0  # the estimate makes no call
        at.button(key="judge:run").click().run()
        assert not at.exception, [e.value for e in at.exception]
        server.wait_idle()
        assert sum(server.served.values()) == 8
    assert at.success[0].value.startswith("8 calls made, 0 errors")
    text = " ".join(m.value for m in at.markdown)
    assert "mean 0.500 over 4 pairs asked in both orders" in text
    table = at.dataframe[0].value
    assert list(table["agreement with people"]) == ["uncalibrated: no review against people yet"]


def test_an_annotator_cannot_run_the_judge(demo) -> None:
    with Store(demo) as store:
        token = store.add_annotator("ann", "annotator")
    at = judge_page()
    at.session_state["access:token"] = token
    at.run()
    assert [e.value for e in at.error] == [
        "This page is for admins only; you are signed in as ann (annotator)."
    ]
    assert not at.button
