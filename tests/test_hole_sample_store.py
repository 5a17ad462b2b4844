"""One source for people's grades on a hole sample (issue #43, item 4): the Metrics page's
corrected figure and ``metrics|compare|check --judge-labels J --hole-sample FILE --db DB`` read
them from the store alike (:func:`calibration.actions.stored_hole_sample`), so they print the same
figures; a store that does not exist, or does not hold the sample's holes, is one line, exit 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from annotation.formats.by_extension import read_judgments
from annotation.formats.trec import write_qrels
from annotation.hole_sample import read_hole_sample
from annotation.render import plain
from annotation.store import Store
from calibration import actions
from calibration.__main__ import main
from calibration.holes.holes_text import corrected_text
from calibration.stored import stored_qrels
from denominator.ui.holes import samples_folder
from tests.conftest import EXAMPLE, cli
from tests.test_holes_page import at_k5, draw, no_samples_left, ok, table

# its samples removed after each test (a PostgreSQL store's are in the temporary folder)
__all__ = ["no_samples_left"]

GOLDEN = EXAMPLE / "golden.yaml"
RUN = EXAMPLE / "run.jsonl"
LABELLED = {("q_milk", "s2"): 2, ("q_milk", "x1"): 0, ("q_milk", "x3"): 1}  # q_faw's: the demo's (cat, dan)


@pytest.fixture
def labelled(demo_db, tmp_path) -> tuple[str, Path, Path]:
    """On the demo store, as a team does on the page: the offline judge fills the holes, a sample
    of 2 queries (seed 1) is drawn and queued, and ann grades q_milk's 3 holes in the app (q_faw's 3
    were graded by cat and dan in the demo). The store, the sample file, the judge's grades as qrels."""
    at = at_k5()
    at.button(key="metrics:holes:fill").click().run()
    ok(draw(ok(at), 2, 1))
    with Store(demo_db) as store:
        for (qid, chunk), grade in LABELLED.items():
            item = store.chunk_item(qid, chunk)
            assert item is not None
            store.add_label(item, "ann", grade)
        judge, _ = stored_qrels(store, "judge:offline-lexical/relevance")
    sample = next(samples_folder(str(demo_db)).glob("hole-sample-k5-*-n2-seed1.yaml"))
    judge_file = tmp_path / "judge.qrels"
    write_qrels(judge, judge_file)
    return str(demo_db), sample, judge_file


def test_the_page_and_the_command_print_the_same_corrected_figures(labelled, capsys) -> None:
    db, sample, judge_file = labelled
    page = table(ok(at_k5()), "judge-filled", "measure")
    argv = ["metrics", GOLDEN, RUN, "-k", 5, "--judge-labels", judge_file, "--hole-sample", sample]
    code, out, err = cli(main, capsys, *argv, "--db", db, "--format", "json")
    assert code == 0, err
    (report,) = json.loads(out)["cutoffs"]
    queries = len(report["queries"])

    def figure(value: float, n: int) -> str:
        return f"{value:.4f} ({n} of {queries} queries)"

    for m in report["means"]:
        row = page.loc[m["measure"]]
        assert row["holes as not relevant"] == figure(
            m["holes_as_not_relevant"], m["holes_as_not_relevant_n"]
        )
        assert row["judge-filled"] == figure(m["judge_filled"], m["judge_filled_n"])
        assert row["corrected, 95% CI"] == plain(corrected_text(m["corrected"], True))
    # the figures by hand, P@5 (people's grades on the holes from the store): q_milk's holes graded
    # 2, 0, 1 by ann lift it from 2/5 to 4/5 (the judge's fill: 5/5); q_faw's, graded by cat and
    # dan, leave it at 2/5 (the judge's too). Gains on the sample: people (0, 0.4), judge (0, 0.6):
    # lambda = cov / var = 0.12 / 0.18 = 2/3; over all 4 queries the judge adds 0.6 / 4 = 0.15, so
    # 0.5 + 2/3 * 0.15 + mean(0 - 0, 0.4 - 2/3 * 0.6) = 0.6; without the judge 0.5 + 0.2 = 0.7
    p5 = next(m for m in report["means"] if m["measure"] == "P@5")
    assert p5["holes_as_not_relevant"] == pytest.approx(0.5) and p5["judge_filled"] == pytest.approx(0.65)
    assert p5["corrected"]["lam"] == pytest.approx(2 / 3) and p5["corrected"]["n"] == 2
    assert p5["corrected"]["estimate"] == pytest.approx(0.6)
    assert p5["corrected"]["without_judge"] == pytest.approx(0.7)
    assert report["queries"]["q_milk"]["values"]["P@5"][2] == pytest.approx(0.8)
    assert report["sample"]["graded_by"] == ["ann", "cat", "dan"]
    # the same action the page calls, on the same store and files: the same reports
    with Store(db) as store:
        stored = actions.stored_hole_sample(store, read_hole_sample(sample))
    direct = actions.metrics(
        read_judgments(GOLDEN),
        str(RUN),
        [5],
        judge=read_judgments(judge_file),
        judge_name=judge_file.name,
        hole_sample=stored,
        run_name=str(RUN),
        qrels_name=str(GOLDEN),
    )
    assert json.loads(json.dumps(direct)) == [report]
    # check reads them alike: its holes section is metrics'
    code, out, err = cli(
        main, capsys, "check", GOLDEN, RUN, "-k", 5, "--judge-labels", judge_file,
        "--hole-sample", sample, "--db", db, "--format", "json",
    )  # fmt: skip
    assert code in (0, 1), err
    assert json.loads(out)["holes"]["means"] == report["means"]
    # without --db the file holds no grade: the refusal, said in one line
    code, out, err = cli(main, capsys, *argv)
    assert code == 2 and out == ""
    assert err.startswith("error: ") and "6 holes of the sampled queries' top 5 have no people's grade" in err


def test_compare_reads_the_sample_from_the_store(labelled, capsys, tmp_path) -> None:
    """``compare --db``: with the store's grades every hole of the sample is graded (no refusal),
    and B = A gives a corrected B - A of 0 on every measure."""
    db, sample, judge_file = labelled
    code, out, err = cli(
        main, capsys, "compare", GOLDEN, RUN, RUN, "-k", 5, "--judge-labels", judge_file,
        "--hole-sample", sample, "--db", db, "--format", "json",
    )  # fmt: skip
    assert code == 0, err
    (report,) = json.loads(out)["cutoffs"]
    assert {d["measure"]: d["corrected"]["estimate"] for d in report["deltas"]} == {
        d["measure"]: 0.0 for d in report["deltas"]
    }
    assert report["sample"]["graded_by"] == ["ann", "cat", "dan"]


def test_a_missing_store_or_one_without_the_holes_is_one_line(labelled, db_at, capsys, tmp_path) -> None:
    db, sample, judge_file = labelled
    base = ["--judge-labels", judge_file, "--hole-sample", sample]
    missing = tmp_path / "nope.db"
    for argv in (
        ["metrics", GOLDEN, RUN, "-k", 5, *base],
        ["compare", GOLDEN, RUN, RUN, "-k", 5, *base],
        ["check", GOLDEN, RUN, "-k", 5, *base],
    ):
        code, out, err = cli(main, capsys, *argv, "--db", missing)
        assert (code, out) == (2, "") and err.count("\n") == 1
        assert err.startswith("error: no such database: ") and "nope.db" in err
    # a store that never queued the sample: its holes are no items there
    with Store(db_at) as store:
        store.import_queries(read_judgments(GOLDEN).texts)
    for argv in (["metrics", GOLDEN, RUN, "-k", 5, *base], ["compare", GOLDEN, RUN, RUN, "-k", 5, *base]):
        code, out, err = cli(main, capsys, *argv, "--db", db_at)
        assert (code, out) == (2, "") and err.count("\n") == 1
        assert f"{sample}: none of its 6 holes is an item of the store" in err
    code, out, err = cli(main, capsys, "compare", GOLDEN, RUN, RUN, "--db", db)
    assert (code, err) == (2, "error: python -m calibration compare: --db goes with --hole-sample FILE\n")
    code, out, err = cli(main, capsys, "metrics", GOLDEN, RUN, "--db", db)
    assert code == 2 and "--db goes with --stored-run or --hole-sample FILE" in err
