"""The weekly review a team can trust (#15): verdicts that respect their interval, a ceiling that is
undefined rather than 0.000, a trace sample that scopes only the trace rubrics."""

from __future__ import annotations

import math

import pytest

from annotation.store import Store
from calibration.__main__ import main
from calibration.review import draw_sample, human_labels, review, sample_progress
from calibration.stats.verdict import advice, labels_to_decide, verdict
from judge.jobs import grade_offline
from tests.conftest import cli


def test_the_issues_case_is_undecided_with_a_label_count() -> None:
    """kappa 0.716 [0.286, 1.000] with n = 18 was "trusted" by its point estimate; its interval
    reaches far below 0.6, so nothing has been shown."""
    assert verdict(0.716, [0.286, 1.000], bar=0.6) == "undecided"
    # the lower side is 0.716 - 0.286 = 0.430 wide, the bar 0.116 away: n' = ceil(18 (0.430/0.116)^2)
    expected = math.ceil(18 * (0.430 / 0.116) ** 2) - 18
    assert labels_to_decide(0.716, [0.286, 1.000], 18, bar=0.6) == expected == 230
    text = advice("undecided", more=230, n=18)
    assert text.startswith("label about 230 more items")


def test_not_trusted_needs_the_upper_end_below_the_bar() -> None:
    assert verdict(0.45, [0.30, 0.59], bar=0.6) == "not trusted"
    assert verdict(0.45, [0.30, 0.61], bar=0.6) == "undecided"
    assert verdict(0.62, [0.60, 0.70], bar=0.6) == "trusted"  # the lower end reaches the bar exactly
    assert labels_to_decide(0.62, [0.60, 0.70], 50, bar=0.6) is None  # decided: nothing to add
    assert labels_to_decide(0.6, [0.5, 0.7], 50, bar=0.6) is None  # on the bar: no number of items decides it
    assert "re-tune the prompt" in advice("not trusted") and "swap the judge" in advice("not trusted")
    assert advice("uncalibrated", n=12, min_labels=30).startswith("label 18 more items")


def judged_demo(db) -> None:
    with Store(db) as store:
        grade_offline(store, "relevance")
        grade_offline(store, "faithfulness")


def test_the_weekly_sample_scopes_each_judge_to_its_own_items(demo_db) -> None:
    """The sample holds traces and, since #40, chunks the relevance judge graded: each judge is read on
    its own kind's share of it, on the labels made for it (none yet: the demo's were made before)."""
    judged_demo(demo_db)
    with Store(demo_db) as store:
        before = {
            j["rubric"]: j
            for j in review(store, "2026-W49", save=False, bar=0.6, statistic="unweighted")["judges"]
        }
        drawn = draw_sample(store, "2026-W46", n=10, annotators=["eve", "fay"])
        after = {
            j["rubric"]: j
            for j in review(store, "2026-W46", save=False, bar=0.6, statistic="unweighted")["judges"]
        }
    assert drawn["sampled"] == 10 and drawn["chunks_sampled"] == 10 and drawn["chunks_of"] == 40
    assert (
        before["relevance"]["consensus"]["n"] == 20 and before["relevance"]["scope"] == "every labelled item"
    )
    # the labels read are those made after the draw by the items' assignees (the demo's ann and bob too)
    assert (
        after["relevance"]["scope"]
        == "this week's sample (10 items, 0 labelled this week by ann, bob, eve or fay)"
    )
    assert (
        after["faithfulness"]["scope"] == "this week's sample (10 items, 0 labelled this week by eve or fay)"
    )
    assert after["relevance"]["consensus"]["n"] == 0 and after["faithfulness"]["consensus"]["n"] == 0
    # within the faithfulness judge's block, kappa, the ceiling and PPI rest on the same population
    assert after["faithfulness"]["pass_rate"]["scope"] == after["faithfulness"]["scope"]


def test_a_ceiling_of_one_item_is_undefined_with_its_reason(demo_db) -> None:
    judged_demo(demo_db)
    with Store(demo_db) as store:
        faithful = sorted(human_labels(store, "faithfulness"))
        store.annotator_id("zoe")
        store.add_label(faithful[0], "zoe", 2, "faithfulness")  # one item labelled by two people
        report = review(store, "2026-W49", save=False, bar=0.6, statistic="unweighted")
    ceiling = next(j for j in report["judges"] if j["rubric"] == "faithfulness")["ceiling"]
    assert ceiling["kappa"] is None and ceiling["ci"] is None and ceiling["n"] == 1
    assert ceiling["undefined_reason"] == "1 item labelled by two people: a ceiling needs at least 2"


def test_review_sample_defaults_to_60_and_reports_progress(demo_db, capsys) -> None:
    judged_demo(demo_db)
    code, out, _ = cli(main, capsys, "review", "--db", demo_db, "--week", "2026-W47", "--sample")
    assert code == 0
    # 40 traces in the demo: the default 60 takes all of them, stratified by the judge's grade and system
    assert "sampled 40 of 40 traces for week 2026-W47" in out
    assert "judge=" in out and "system=" in out
    with Store(demo_db) as store:
        progress = sample_progress(store, "2026-W47")
    # 40 traces and the 40 chunks the offline relevance judge graded; cat's 16 labels were made before
    # the sample was drawn: not this week's (#40)
    assert (progress["size"], progress["traces"], progress["chunks"]) == (80, 40, 40)
    assert progress["labelled"] == 0 and progress["doubly"] == 0


def test_noisy_is_refused_with_the_reason(demo_db, capsys) -> None:
    code, _, err = cli(main, capsys, "review", "--db", demo_db, "--noisy", "0.4")
    assert code == 2 and err.count("\n") == 1 and "--noisy is gone" in err


@pytest.mark.parametrize("overlap, doubled", [(1.0, 10), (0.3, 3), (0.0, 0)])
def test_the_sample_is_shared_with_an_overlap_for_the_ceiling(demo_db, overlap, doubled) -> None:
    with Store(demo_db) as store:
        drawn = draw_sample(store, "2026-W46", n=10, annotators=["eve", "fay"], overlap=overlap)
    assert drawn["doubly_assigned"] == doubled


def test_the_review_page_draws_the_sample_and_shows_its_progress(demo_db) -> None:
    from annotation.render import plain
    from tests.conftest import page_test, page_text

    judged_demo(demo_db)
    at = page_test("denominator.ui.review.render_review_page", timeout=60).run()
    at.text_input(key="review:week").set_value("2026-W47").run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.number_input(key="review:sample_size").value == 60  # the CLI's default
    at.number_input(key="review:sample_size").set_value(10)
    at.multiselect(key="review:sample_who").set_value(["ann", "bob"])
    at.number_input(key="review:sample_overlap").set_value(0.5)
    next(b for b in at.button if b.label == "Draw this week's sample").click().run()
    assert not at.exception, [e.value for e in at.exception]
    success = [plain(s.value) for s in at.success]
    assert any(s.startswith("Sampled 10 of 40 traces for week 2026-W47") for s in success), success
    assert any("and 10 of 40 chunks the relevance judge graded" in s for s in success)
    assert any("assigned to 2 annotators, 10 items to two or more" in s for s in success)
    at.run()
    text = page_text(at)
    assert (
        "0 of 20 sampled items (10 traces, 10 chunks) labelled by people since the sample was drawn" in text
    )
    with Store(demo_db) as store:
        assert len(store.review_sample("2026-W47")) == 20


def test_agree_refuses_bootstrap_and_seed_with_the_reason(tmp_path, capsys) -> None:
    path = tmp_path / "l.csv"
    path.write_text("item,rater,label\n1,x,1\n1,y,1\n2,x,0\n2,y,1\n")
    for option in ("--bootstrap", "--seed"):
        code, _, err = cli(main, capsys, "agree", path, option, "100")
        assert code == 2 and err.count("\n") == 1
        assert "kappa's interval is now the score interval" in err
