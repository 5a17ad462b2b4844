"""The Judge page through AppTest: the offline judge by default, the LLM judge against the local server;
judges shown by name and version, the current one marked."""

from __future__ import annotations

import json

from annotation.render import plain
from annotation.store import Store
from denominator.ui.judge import IDENTITY_COLUMNS, READING_COLUMNS, READING_ROW_HEIGHT, SUMMARY_COLUMNS
from tests.conftest import page_test


def judge_page():
    return page_test("denominator.ui.judge.render_judge_page", timeout=60)


def test_offline_judge_by_default_fits_and_grades(demo_db) -> None:
    at = judge_page().run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.radio(key="judge:kind").value.startswith("offline")
    caption = " ".join(c.value for c in at.caption)
    assert "Fitted on 20 human labels" in caption and "over n = 20 labelled items" in caption
    assert "40 of 40 items left to grade" in caption
    assert "judge offline-lexical/relevance v1 (new), fingerprint " in plain(caption)
    at.button(key="judge:offline-run").click().run()
    assert not at.exception
    assert [plain(s.value) for s in at.success] == [
        "Graded 40 items (0 already done) as offline-lexical/relevance v1 (current)."
    ]
    table = at.dataframe[0].value
    assert list(table["kind"]) == ["lexical"] and list(table["answers"]) == [40]
    assert list(table["judge"]) == ["offline-lexical/relevance v1 (current)"]
    identity = at.dataframe[2].value  # the third table: fingerprint, what changed, model
    assert list(identity["changed"]) == ["first version"] and len(identity["fingerprint"][0]) == 16
    assert list(table.columns) == list(SUMMARY_COLUMNS) and list(identity.columns) == list(IDENTITY_COLUMNS)
    # the reading, a sentence, in a table of its own: a wide column, rows of three lines where it
    # wraps (#43, item 9: a column of the summary cut it off at "uncalibrated (20 human-labelled i")
    reading = at.dataframe[1]
    assert list(reading.value.columns) == list(READING_COLUMNS)
    assert reading.value["agreement with people"][0].startswith("uncalibrated (20 human-labelled items")
    assert reading.proto.row_height == READING_ROW_HEIGHT >= 3 * 21
    assert json.loads(reading.proto.columns)["agreement with people"]["width"] == "large"
    with Store(demo_db) as store:
        assert (
            store.db.execute("SELECT count(*) FROM judge_labels WHERE value IS NOT NULL").fetchone()[0] == 40
        )


def test_llm_judge_on_the_page_asks_pairs_in_both_orders(demo_db, monkeypatch, fake_openai) -> None:
    server = fake_openai(bias="first")
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    monkeypatch.setenv("OPENAI_MODEL", "fake-judge")
    at = judge_page().run()
    assert at.radio(key="judge:kind").value.startswith("LLM")
    at.selectbox(key="judge:rubric").set_value("preference").run()
    assert at.text_input(key="judge:name").placeholder == "fake-judge/preference"  # blank: the default
    at.text_input(key="judge:name").set_value("house-judge").run()
    text = plain(" ".join(m.value for m in at.markdown))
    # the CLI's own wording (judge.commands_text): `python -m judge compare --dry-run` says the same
    assert "would make 8 calls (0 of 8 already done)" in text and "cost unknown" in text
    assert "judge house-judge v1 (new), fingerprint " in text and "fake-judge at" in text
    assert sum(server.received.values()) == 0  # the estimate makes no call
    at.button(key="judge:run").click().run()
    assert not at.exception, [e.value for e in at.exception]
    server.wait_idle()
    assert sum(server.served.values()) == 8
    assert plain(at.success[0].value).startswith("8 calls made, 0 of 8 already done, 0 errors")
    text = " ".join(m.value for m in at.markdown)
    assert "mean 0.500 over 4 pairs asked in both orders" in text
    table = at.dataframe[1].value
    # the current reading, as review and check give it (#40): no person labelled its pairs yet
    assert list(table["agreement with people"]) == [
        "uncalibrated (0 human-labelled items, fewer than the 30 needed): unweighted kappa undefined "
        "against people (n = 0)"
    ]
    assert list(table["judge"]) == ["house-judge v1 (current)"]
    assert plain(at.success[0].value).endswith("(judge house-judge v1 (current)).")


def test_a_refit_on_new_labels_is_the_next_version_and_current(demo_db) -> None:
    at = judge_page().run()
    at.button(key="judge:offline-run").click().run()
    with Store(demo_db) as store:  # two more relevance labels: the offline judge is refitted on 22
        labelled = {i for i, v in store.newest_rubric_values("chunk", "relevance") if v is not None}
        fresh = [i for i, _, _ in store.chunk_item_texts() if i not in labelled][:2]
        for item, grade in zip(fresh, (0, 3)):
            store.add_label(item, "ann", grade)
    at.run()
    caption = plain(" ".join(c.value for c in at.caption))
    assert "Fitted on 22 human labels" in caption
    assert "judge offline-lexical/relevance v2 (new version; changed: trained_on)" in caption
    at.button(key="judge:offline-run").click().run()
    assert not at.exception, [e.value for e in at.exception]
    table = at.dataframe[0].value
    assert list(table["judge"]) == ["offline-lexical/relevance v1", "offline-lexical/relevance v2 (current)"]
    assert list(at.dataframe[2].value["changed"]) == ["first version", "trained_on"]
    assert list(table["answers"]) == [40, 40]


def test_an_annotator_cannot_run_the_judge(demo_db) -> None:
    with Store(demo_db) as store:
        token = store.add_annotator("ann", "annotator")
    at = judge_page()
    at.session_state["access:token"] = token
    at.run()
    assert [e.value for e in at.error] == [
        "This page is for admins only; you are signed in as ann (annotator)."
    ]
    assert not at.button
