"""The Calibration review page through AppTest, on the demo with the offline judge."""

from __future__ import annotations

import pytest

from annotation.render import plain
from annotation.store import Store
from judge.jobs import grade_offline
from tests.conftest import page_test, page_text


@pytest.fixture
def demo(demo_db):
    """The demo database, graded by the offline judge."""
    with Store(demo_db) as store:
        grade_offline(store, "relevance")
    return demo_db


def page():
    return page_test("denominator.ui.review.render_review_page", timeout=60)


def test_review_page_shows_kappa_ci_n_verdict_ceiling_and_trend(demo) -> None:
    at = page()
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    at.text_input(key="review:week").set_value("2026-W49")
    at.number_input(key="review:min").set_value(10).run()
    shown = page_text(at)
    # the verdict reads the unweighted kappa (the essay's); the weighted ones stand beside it
    assert "kappa vs people (unweighted, the verdict's) 0.145" in shown
    assert "quadratic 0.491" in shown
    # the demo's 20 labels come from 2 queries: no verdict-grade interval, uncalibrated (issue #39)
    assert "verdict: uncalibrated (2 queries: a verdict needs 5): unweighted kappa 0.145" in shown
    assert "Design: 2 queries, 20 items, 2 people, design effect 0.89" in shown
    assert "human-human kappa (the ceiling) 0.889" in shown and "n = 20 doubly labelled items" in shown
    assert "n = 20 items" in shown and "out-of-fold" in shown
    assert "No saved review yet" in shown
    at.button(key="review:save").click().run()
    assert "Saved the week 2026-W49 review of 1 judges." in [plain(s.value) for s in at.success]
    at.run()
    assert "No saved review yet" not in page_text(at)  # the trend has its first point


def test_a_changed_judge_is_uncalibrated(demo) -> None:
    """A new fingerprint (here: another model) with 5 human-labelled items of its own."""
    from calibration.review import human_labels

    with Store(demo) as store:
        items = sorted(human_labels(store, "relevance"))[:5]
        store.register_judge(
            "f" * 64, {"kind": "llm", "rubric": "relevance", "model": "m2", "endpoint": "http://h"}
        )
        store.add_judge_labels(
            [{"item_id": i, "fingerprint": "f" * 64, "repeat": 0, "value": 1} for i in items]
        )
    at = page()
    at.run()
    at.text_input(key="review:week").set_value("2026-W49")
    at.number_input(key="review:min").set_value(10).run()
    assert not at.exception
    shown = page_text(at)
    # two judges of relevance, each by its name and version
    assert "relevance: offline-lexical/relevance v1 (current)" in shown
    assert "relevance: m2/relevance v1 (current)" in shown
    assert "5 human-labelled items, fewer than the 10 needed" in shown
    badges = [m.value for m in at.markdown if "-badge[" in m.value]
    assert badges == [":gray-badge[uncalibrated]", ":gray-badge[uncalibrated]"]  # 2 queries; 5 items
