"""Weekly means weekly (issue #40, item 6): a week to come is refused; a week's sample is read on the
labels made for it, by the people it was assigned to; relevance judges get a weekly sample of chunks; a
verdict on old labels is stale, and the kappa rule does not pass it."""

from __future__ import annotations

import json
from datetime import date, timedelta

import pytest

from annotation.store import Store, StoreError
from calibration.__main__ import main
from calibration.review import draw_sample, review
from calibration.review_sample import check_week, current_week
from tests.conftest import cli
from tests.test_judged_review import FP, golden_and_run, labelled_store

EX = "examples/worked-example"


def test_a_week_to_come_is_refused(capsys, tmp_path) -> None:
    later = current_week(date.today() + timedelta(days=14))
    with pytest.raises(StoreError, match=f"week {later} has not begun"):
        check_week(later)
    labelled_store(tmp_path / "s.db", 6, 10)
    code, out, err = cli(main, capsys, "review", "--db", str(tmp_path / "s.db"), "--week", later)
    assert code == 2 and out == "" and err.count("\n") == 1 and "has not begun" in err
    with Store(tmp_path / "s.db") as store:
        assert store.db.execute("SELECT count(*) FROM calibrations").fetchone()[0] == 0  # nothing saved
        assert check_week(current_week()) == current_week()


def test_the_sample_reads_the_labels_made_for_it_by_its_people(tmp_path) -> None:
    """Only ann labelled, before the sample; the sample is assigned to bob and cat: 0 of its labels
    count, the relevance judge is uncalibrated on it, whatever ann's old labels said."""
    db = tmp_path / "s.db"
    labelled_store(db, 8, 10)
    with Store(db) as store:
        store.annotator_id("bob")
        store.annotator_id("cat")
        drawn = draw_sample(store, current_week(), n=40, annotators=["bob", "cat"])
        assert drawn["sampled"] == 0 and drawn["chunks_sampled"] == 40 and drawn["chunks_of"] == 80
        assert drawn["chunks_stratified_by"] == FP
        report = review(store, save=False, bar=0.6, statistic="unweighted")
        judge = next(j for j in report["judges"] if j["fingerprint"] == FP)
        # the W05 case: 0 labels this week by the people the sample went to: uncalibrated
        assert judge["scope"] == "this week's sample (40 items, 0 labelled this week by bob or cat)"
        assert judge["consensus"]["n"] == 0 and judge["verdict"] == "uncalibrated"
        # bob labels his share now: those labels count, ann's never do
        sample = store.review_sample(current_week())
        assigned = store.assignees(sample)
        mine = sorted(i for i in sample if "bob" in assigned[i])
        for item in mine:
            store.add_label(item, "bob", 1, "relevance")
        store.add_label(mine[0], "ann", 3, "relevance")  # ann is not assigned: not read
        report = review(store, save=False, bar=0.6, statistic="unweighted")
        judge = next(j for j in report["judges"] if j["fingerprint"] == FP)
        assert judge["consensus"]["n"] == len(mine) and judge["consensus"]["design"]["people"] == 1
        assert judge["consensus"]["drawn"]["how"] == f"drawn at random: review sample {current_week()}"


def test_a_verdict_on_old_labels_is_stale(capsys, tmp_path) -> None:
    """Every label stored ten weeks ago: the verdict is stale, and the kappa rule does not pass it; the
    same labels stored this week give a verdict."""
    db = tmp_path / "s.db"
    labelled_store(db, 8, 10)
    fresh = next(j for j in review(Store(db), save=False, bar=0.6, statistic="unweighted")["judges"])
    assert fresh["verdict"] in ("trusted", "not trusted", "undecided")
    old = (date.today() - timedelta(weeks=10)).isoformat() + "T09:00:00Z"
    aged = tmp_path / "aged.db"
    _aged_copy(db, aged, old)
    judge = next(j for j in review(Store(aged), save=False, bar=0.6, statistic="unweighted")["judges"])
    assert judge["verdict"] == "stale"
    assert judge["status_reason"].startswith(f"the newest of its labels is from {old[:10]}")
    assert "a verdict stays fresh 4 weeks" in judge["status_reason"]
    # the policy's stale_after_weeks: 12 weeks keeps it fresh
    kept = review(Store(aged), save=False, bar=0.6, statistic="unweighted", stale_after_weeks=12)
    assert kept["judges"][0]["verdict"] == fresh["verdict"]
    golden, run = golden_and_run(tmp_path, 8, 10)
    args = ["check", golden, run, "-k", "5", "--db", str(aged), "--format", "json"]
    code, out, _ = cli(main, capsys, *args)
    kappa = next(r for r in json.loads(out)["rules"] if r["rule"] == "kappa")
    entry = next(j for j in kappa["judges"] if j["fingerprint"] == FP)
    assert entry["verdict"] == "stale" and entry["outcome"] == "failed"  # not shown: fails by default
    code, out, _ = cli(main, capsys, *args, "--rule", "stale_after_weeks=12")
    kappa = next(r for r in json.loads(out)["rules"] if r["rule"] == "kappa")
    assert next(j for j in kappa["judges"] if j["fingerprint"] == FP)["verdict"] == fresh["verdict"]


def _aged_copy(source, target, when: str) -> None:
    """A copy of the SQLite store whose label rows were all stored at ``when`` (the append-only
    triggers dropped in the copy only, to age it)."""
    import shutil
    import sqlite3

    shutil.copy(source, target)
    con = sqlite3.connect(target)
    con.execute("DROP TRIGGER labels_no_update")
    con.execute("UPDATE labels SET created_at = ?", [when])
    con.execute(
        "CREATE TRIGGER labels_no_update BEFORE UPDATE ON labels "
        "BEGIN SELECT RAISE(ABORT, 'labels are append-only: add a new row instead'); END"
    )
    con.commit()
    con.close()
