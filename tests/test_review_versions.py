"""The review over judges with names and versions (#15): three refits of the offline judge are one
name with three versions and one connected trend line (CLI, JSON and the Review page); a served
model that moves under one fingerprint is flagged ``served_model_changed`` with its dates and the
review rests on the answers since; reviews saved under the old rule are marked on the trend."""

from __future__ import annotations

import pyarrow as pa
import sqlite_utils

from annotation.store import Store
from calibration.review import human_labels, review, trend
from denominator.ui.review import trend_frame
from judge.__main__ import main as judge_main
from judge.jobs import grade_offline
from tests.conftest import page_test, page_text

OFFLINE = "offline-lexical/relevance"
WEEKS = ("2026-W47", "2026-W48", "2026-W49")  # weeks that have begun: a week to come is refused (#40)


def unlabelled_chunk_items(store: Store, n: int) -> list[int]:
    labelled = {int(i) for i, v in store.newest_rubric_values("chunk", "relevance") if v is not None}
    return [int(i) for i, _, _ in store.chunk_item_texts() if int(i) not in labelled][:n]


def refit_three_times(db) -> None:
    """Week by week: label two more items (after the first week), refit, save the week's review."""
    grades = iter([0, 3, 1, 2])
    for week in WEEKS:
        with Store(db) as store:
            if week != WEEKS[0]:
                for item in unlabelled_chunk_items(store, 2):
                    store.add_label(item, "ann", next(grades))
            grade_offline(store, "relevance")
            review(store, week, min_labels=10, save=True, bar=0.6, statistic="unweighted")


def test_three_refits_are_one_name_three_versions_and_one_trend_line(demo_db) -> None:
    refit_three_times(demo_db)
    with Store(demo_db) as store:
        report = review(store, WEEKS[-1], min_labels=10, save=False, bar=0.6, statistic="unweighted")
        points = trend(store)
    # the review covers the current version; the earlier ones are listed, not reviewed again
    (judge,) = report["judges"]
    assert (judge["name"], judge["version"], judge["current"], judge["changed"]) == (
        OFFLINE,
        3,
        True,
        ["trained_on"],
    )
    assert [(j["name"], j["version"]) for j in report["superseded"]] == [(OFFLINE, 1), (OFFLINE, 2)]
    # one line: one point per week, all of one name, each week a new version
    assert [(p["week"], p["name"], p["version"], p["new_version"]) for p in points] == [
        (WEEKS[0], OFFLINE, 1, True),
        (WEEKS[1], OFFLINE, 2, True),
        (WEEKS[2], OFFLINE, 3, True),
    ]
    assert all(
        p["rule"] == "interval" and p["statistic"] == "unweighted" and not p["old_rule"] for p in points
    )
    assert [n for n in (p["n"] for p in points)] == [20, 22, 24]  # out-of-fold on every labelled item
    frame = trend_frame(points)
    assert frame["judge"].unique().tolist() == [f"{OFFLINE} (relevance)"]
    assert frame["mark"].tolist() == ["v1", "v2", "v3"]
    # saving the same week again after another refit keeps one point for the name: the newest version
    with Store(demo_db) as store:
        store.add_label(unlabelled_chunk_items(store, 1)[0], "ann", 1)
        grade_offline(store, "relevance")
        review(store, WEEKS[-1], min_labels=10, save=True, bar=0.6, statistic="unweighted")
        again = trend(store)
    assert [(p["week"], p["version"]) for p in again] == [(WEEKS[0], 1), (WEEKS[1], 2), (WEEKS[2], 4)]


def test_the_review_page_draws_one_line_for_the_refitted_judge(demo_db) -> None:
    refit_three_times(demo_db)
    at = page_test("denominator.ui.review.render_review_page", timeout=60).run()
    at.text_input(key="review:week").set_value(WEEKS[-1])
    at.number_input(key="review:min").set_value(10).run()
    assert not at.exception
    shown = page_text(at)
    assert f"relevance: {OFFLINE} v3 (current)" in shown
    assert "changed from v2: trained_on" in shown
    assert f"{OFFLINE} v1, {OFFLINE} v2" in shown  # superseded, named
    # the trend is the page's last chart: one judge (one line), its three versions marked
    trend_chart = at.get("vega_lite_chart")[-1].proto
    assert '"field": "judge"' in trend_chart.spec and '"field": "mark"' in trend_chart.spec
    dataset = trend_chart.datasets[0]  # the layers share one frame (the bar has its own)
    drawn = pa.ipc.open_stream(dataset.data.data).read_all().to_pandas()
    assert drawn["week"].tolist() == list(WEEKS)
    assert drawn["judge"].unique().tolist() == [f"{OFFLINE} (relevance)"]
    assert drawn["mark"].tolist() == ["v1", "v2", "v3"]


def test_a_served_model_that_moves_is_flagged_and_the_review_rests_on_the_answers_since(
    demo_db, capsys, fake_openai
) -> None:
    server = fake_openai(served_model_after={"n": 5, "model": "gpt-x-2026-06"})
    argv = ["grade", "--db", str(demo_db), "--rubric", "relevance", "--judge", "openai"]
    argv += ["--base-url", server.base_url, "--model", "fake-judge", "--limit", "12", "--concurrency", "1"]
    assert judge_main(argv) == 0
    capsys.readouterr()
    with Store(demo_db) as store:
        report = review(store, WEEKS[0], min_labels=1, save=True, bar=0.6, statistic="unweighted")
        people = human_labels(store, "relevance")
        values = store.judge_values(report["judges"][0]["fingerprint"])
        points = trend(store)
    (judge,) = report["judges"]
    (change,) = judge["served_model_changed"]
    assert (change["from"], change["to"]) == ("fake-judge", "gpt-x-2026-06")
    assert change["last_before"] <= change["first_after"]
    after = [v["item_id"] for v in values if v["served_model"] == "gpt-x-2026-06"]
    before = [v["item_id"] for v in values if v["served_model"] == "fake-judge"]
    assert (len(before), len(after)) == (5, 7)
    assert judge["consensus"]["n"] == sum(1 for i in after if i in people)  # the new model's answers only
    assert judge["left_out_served_before"] == 5
    assert judge["served_model"] == "gpt-x-2026-06"
    assert (judge["name"], judge["version"]) == ("fake-judge/relevance", 1)  # the fingerprint did not move
    from calibration.review_text import drift_text, summary_lines

    assert drift_text(judge).startswith("served_model_changed: the endpoint served fake-judge until ")
    heading, lines = summary_lines(report)[0]
    assert heading.startswith("relevance: fake-judge/relevance v1 (current), served gpt-x-2026-06 since ")
    assert any("5 items answered only before it are left out" in line for line in lines)
    assert [(p["name"], p["served_model"]) for p in points] == [("fake-judge/relevance", "gpt-x-2026-06")]


def test_reviews_saved_under_the_old_rule_are_marked_on_the_trend(tmp_path) -> None:
    """A store whose calibrations were saved before m010 (a point estimate on quadratic weights)."""
    from annotation.store.migrations import MIGRATIONS

    path = tmp_path / "old.db"
    db = sqlite_utils.Database(path)
    MIGRATIONS.apply(db, stop_before="m010_calibration_rule")
    db.execute(
        "INSERT INTO judges (fingerprint, name, version, kind, rubric, settings, created_at)"
        " VALUES ('fp', 'gpt-x/relevance', 1, 'llm', 'relevance', '{}', '2026-11-01')"
    )
    db.execute(
        """INSERT INTO calibrations (fingerprint, rubric, window, n, kappa, ci_low, ci_high, weights, verdict,
           sample, created_at) VALUES ('fp', 'relevance', '2026-W45', 40, 0.71, NULL, NULL, 'quadratic',
           'trusted', 'every labelled item', '2026-11-06')"""
    )
    db.conn.close()
    with Store(path) as store:
        (point,) = trend(store)
    assert point["old_rule"] and point["rule"] is None and point["statistic"] == "quadratic"
    from calibration.review_text import rule_text

    assert rule_text(point) == "old rule (point estimate, quadratic weights)"
    assert trend_frame([point])["rule"].tolist() == ["old rule (point, quadratic)"]


def test_a_trend_label_is_drawn_above_its_interval() -> None:
    """The version label above a point lay on the point's interval line, which runs up through it
    (#43, item 9: an overlapping label on the Review chart): it is drawn above the interval's top,
    and above the point when there is no interval."""
    base = {"fingerprint": "fp" * 8, "rubric": "relevance", "name": "j", "n": 40, "verdict": "undecided"}
    points = [
        {**base, "week": "2026-W47", "version": 1, "kappa": 0.52, "ci": [0.31, 0.74], "new_version": True},
        {**base, "week": "2026-W48", "version": 2, "kappa": 0.66, "ci": None, "new_version": True},
    ]
    frame = trend_frame(points)  # type: ignore[arg-type]
    assert frame["mark"].tolist() == ["v1", "v2"]
    assert frame["label_at"].tolist() == [0.74, 0.66]
