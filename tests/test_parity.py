"""The CLI and the page answer the same question the same way, each with its own defaults.

Each test runs one input through ``python -m calibration ... --format json`` (the CLI's main)
and through the page (AppTest), leaving every setting at the face's default unless the test
says otherwise, and compares the numbers the two show. Before #13 the Metrics page started
from k = 5 and relevance grade >= 1 while the CLI started from k = 10 and golden.yaml's
``min_grade``: one file, two sets of numbers.
"""

from __future__ import annotations

import json

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from annotation.render import plain
from annotation.rubrics import DEFAULT_MIN_GRADE
from calibration.__main__ import main as calibration_main
from calibration.inputs import DEFAULT_K
from calibration.review import current_week
from calibration.stats.agreement import cohen
from judge.jobs import grade_offline
from tests.conftest import APP, EXAMPLE, cli, page_test


def cli_json(capsys, *argv) -> dict:
    code, out, err = cli(calibration_main, capsys, *argv, "--format", "json")
    assert code in (0, 1), err
    return json.loads(out)


def page(uploads: dict[str, tuple[str, bytes]] | None = None) -> AppTest:
    """The Metrics page at its defaults: the worked example, or the uploaded files."""
    at = AppTest.from_file(str(APP), default_timeout=60).run()
    assert not at.exception, [e.value for e in at.exception]
    if uploads:
        at.radio(key="metrics:source").set_value("your files").run()
        for key, (name, data) in uploads.items():
            at.file_uploader(key=key).set_value((name, data, "text/plain"))
        at.run()
        assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [plain(e.value) for e in at.error]
    return at


def table(at: AppTest, column: str, index: str = "query") -> pd.DataFrame:
    """The first table on the page with ``column``, as a person reads it, indexed by ``index``."""
    found = [t.value.map(plain) for t in at.table if column in t.value.columns]
    assert found, f"no table with {column!r}"
    return found[0].set_index(index)


def shown(value: float | None) -> str:
    """A figure as the page shows it."""
    return "undefined" if value is None else f"{value:.3f}"


def metrics_parity(capsys, at: AppTest, golden, run) -> dict:
    """The CLI's metrics of (golden, run) at its defaults equal the page's, query by query."""
    result = cli_json(capsys, "metrics", golden, run)
    k = result["k"][0]
    assert k == DEFAULT_K
    frame = table(at, f"R@{k}")
    for qid, q in result["queries"].items():
        assert frame.loc[qid, "|Rel|"] == str(q["rel"])
        assert frame.loc[qid, f"P@{k}"].startswith(shown(q[f"P@{k}"]))
        assert frame.loc[qid, f"R@{k}"].startswith(shown(q[f"R@{k}"]))
        assert frame.loc[qid, "RR"] == shown(q["RR"])
        assert frame.loc[qid, f"nDCG@{k}"] == shown(q[f"nDCG@{k}"])
        assert frame.loc[qid, "AP"] == shown(q["AP"])
    for column, name in (
        (f"R@{k}", f"R@{k}"),
        (f"P@{k}", f"P@{k}"),
        ("RR", "MRR"),
        (f"nDCG@{k}", f"nDCG@{k}"),
    ):
        assert frame.loc["mean", column] == shown(result["mean"][name])
    return result


def test_metrics_worked_example_same_numbers_at_both_faces_defaults(capsys) -> None:
    result = metrics_parity(capsys, page(), EXAMPLE / "golden.yaml", EXAMPLE / "run.jsonl")
    assert result["min_grade"] == DEFAULT_MIN_GRADE
    # every judged relevant chunk is in its query's top 10: 8 + 3 + 3 + 3 hits of 40 slots
    assert result["mean"]["R@10"] == 1.0 and result["mean"]["P@10"] == pytest.approx(17 / 40)


def test_metrics_a_golden_min_grade_is_the_default_of_both_faces(capsys, tmp_path) -> None:
    """golden.yaml's ``min_grade: 2``: the page used to count grade 1 as relevant; now both don't."""
    golden = tmp_path / "golden.yaml"
    golden.write_text((EXAMPLE / "golden.yaml").read_text() + "min_grade: 2\n")
    run = EXAMPLE / "run.jsonl"
    at = page(
        {
            "metrics:qrels_upload": ("golden.yaml", golden.read_bytes()),
            "metrics:run_upload": ("run.jsonl", run.read_bytes()),
        }
    )
    result = metrics_parity(capsys, at, golden, run)
    assert result["min_grade"] == 2
    # grade >= 2: 5 + 2 + 2 + 2 hits of 40 slots, where grade >= 1 (the page's old default) gave 17 of 40
    assert result["mean"]["P@10"] == pytest.approx(11 / 40)
    assert cli_json(capsys, "metrics", golden, run, "--min-grade", "1")["mean"]["P@10"] == pytest.approx(
        17 / 40
    )
    assert any("relevant = grade >= 2 (the file's min_grade)" in plain(c.value) for c in at.caption)


def test_audit_same_numbers_at_both_faces_defaults(capsys) -> None:
    at = page()
    result = cli_json(
        capsys,
        "audit",
        EXAMPLE / "golden.yaml",
        EXAMPLE / "run.jsonl",
        "-k",
        DEFAULT_K,
    )
    # the same stage-1 default on both faces: the worked example's run is 10 deep, no deeper than
    # k = 10, so stage 1 is unknown on both (never a depth one face assumes)
    assert result["fetch_depth"] is None and "stage 1 unknown" in result["stage1"]
    frame = table(at, f"judged@{DEFAULT_K}")
    for qid, q in result["queries"].items():
        judged = frame.loc[qid, f"judged@{DEFAULT_K}"]
        assert judged.startswith(shown(q["judged_at_k"]))
        assert frame.loc[qid, f"hits in top {DEFAULT_K}: positional / distinct"] == (
            f"{q['positional_hits']} / {q['distinct_hits']}"
        )
        # no stage 1: not applicable, the CLI table's n/a (JSON null), not "undefined" (#43, item 9)
        assert q["recall_at_fetch"] is None and frame.loc[qid, "R@fetch (stage 1)"] == "n/a (no stage 1)"


def test_compare_same_numbers_on_the_cli_and_the_page(capsys, tmp_path) -> None:
    worse = tmp_path / "worse.jsonl"
    with (EXAMPLE / "run.jsonl").open() as lines:
        rows = [json.loads(line) for line in lines]
    for row in rows:  # the second run puts its first two chunks last
        row["ranking"] = row["ranking"][2:] + row["ranking"][:2]
    worse.write_text("".join(json.dumps(r) + "\n" for r in rows))
    result = cli_json(capsys, "compare", EXAMPLE / "golden.yaml", EXAMPLE / "run.jsonl", worse)
    at = page()
    at.file_uploader(key="metrics:compare_upload").set_value(
        ("worse.jsonl", worse.read_bytes(), "text/plain")
    )
    at.run()
    assert not at.exception and not at.error
    frame = table(at, "B - A", index="measure")
    assert set(frame.index) == set(result["measures"])
    for name, t in result["measures"].items():
        assert frame.loc[name, "A"] == shown(t["mean_a"]) and frame.loc[name, "B"] == shown(t["mean_b"])
        assert frame.loc[name, "wins / losses / ties"] == f"{t['wins']} / {t['losses']} / {t['ties']}"
        assert frame.loc[name, "p (randomization)"] == shown(t["p_randomization"])
        assert frame.loc[name, "p (t-test)"] == shown(t["p_ttest"])
    assert result["measures"]["RR"]["losses"] > 0  # the comparison shows something


def test_agree_and_the_python_api_use_one_scale(capsys, tmp_path) -> None:
    """Grades 1..6 with 5 unused: the CLI and cohen() print the same weighted kappas on the same scale."""
    a = [1, 2, 3, 4, 6, 6, 2, 3, 1, 4, 6, 3]
    b = [1, 3, 3, 4, 4, 6, 2, 2, 1, 6, 6, 4]
    labels = tmp_path / "labels.csv"
    labels.write_text(
        "item,rater,label\n" + "".join(f"i{i},ann,{x}\ni{i},bob,{y}\n" for i, (x, y) in enumerate(zip(a, b)))
    )
    report = cli_json(capsys, "agree", labels)
    (pair,) = report["pairs"]
    assert report["labels"] == [1, 2, 3, 4, 5, 6]
    for weights, key in ((None, "kappa"), ("linear", "kappa_linear"), ("quadratic", "kappa_quadratic")):
        api = cohen(a, b, weights=weights)
        assert api["labels"] == [1, 2, 3, 4, 5, 6]
        assert pair[key] == pytest.approx(api["kappa"], abs=1e-12)
    code, out, _ = cli(calibration_main, capsys, "agree", labels)
    assert code == 0 and "scale: 1, 2, 3, 4, 5, 6" in out


def test_review_same_numbers_on_the_cli_and_the_page(capsys, demo_db) -> None:
    from annotation.store import Store
    from calibration.review_text import no_interval

    with Store(demo_db) as store:
        grade_offline(store, "relevance")
    week = current_week()
    report = cli_json(capsys, "review", "--db", demo_db, "--week", week)
    at = page_test("denominator.ui.review.render_review_page").run()
    assert not at.exception, [e.value for e in at.exception]
    metrics = {plain(m.label): plain(str(m.value)) for m in at.metric}
    captions = [plain(c.value) for c in at.caption]
    assert report["judges"]
    for judge in report["judges"]:
        consensus = judge["consensus"]
        label = f"kappa vs people ({consensus['statistic']}, the verdict's)"
        assert metrics[label] == shown(consensus["kappa"])
        ci = consensus["ci"]
        interval = f"[{ci[0]:.3f}, {ci[1]:.3f}]" if ci else no_interval(consensus)
        assert any(c.startswith(f"95% CI {interval}, n = {consensus['n']} items") for c in captions)
        badges = [plain(m.value) for m in at.markdown if "-badge[" in m.value]
        assert any(judge["verdict"] in b for b in badges)


# ---------------------------------------------------------------- pool and review (issue #24)


def _fresh_store(path) -> None:
    """The worked example's corpus, queries and run, nothing pooled yet."""
    from annotation.formats.by_extension import read_judgments, read_ranked
    from annotation.formats.records import read_corpus
    from annotation.store import Store

    golden = read_judgments(EXAMPLE / "golden.yaml")
    with Store(path) as store:
        store.import_corpus(read_corpus(EXAMPLE / "corpus.jsonl"))
        store.import_queries(golden.texts)
        store.import_run(read_ranked(EXAMPLE / "run.jsonl"), name="retriever", stage="fetch")


def _assignments(path) -> list[tuple[str, str, str]]:
    from annotation.store import Store

    with Store(path) as store:
        rows = store.db.execute(
            "SELECT i.query_id, i.chunk_id, a.name FROM assignments s JOIN items i ON i.id = s.item_id "
            "JOIN annotators a ON a.id = s.annotator_id"
        ).fetchall()
    return sorted(tuple(r) for r in rows)


def test_pool_same_items_and_assignments_on_the_cli_and_the_page(capsys, tmp_path, monkeypatch) -> None:
    """``pool --annotators ann,bob`` at its defaults and the Data page's "Build the pool" at its
    defaults (depth 10, overlap 0.2, seed 0, from the one options table): the same pool, the same
    people, the same doubly assigned items."""
    from annotation.__main__ import main as annotation_main
    from tests.conftest import cli, page_test

    by_cli, by_page = tmp_path / "cli.db", tmp_path / "page.db"
    for path in (by_cli, by_page):
        _fresh_store(path)
    code, out, err = cli(annotation_main, capsys, "pool", "--db", by_cli, "--annotators", "ann,bob")
    assert code == 0, err
    monkeypatch.setenv("DENOMINATOR_DB", str(by_page))
    at = page_test("denominator.ui.data.render_data_page", timeout=60).run()
    assert not at.exception, [e.value for e in at.exception]
    at.text_input(key="data:who").set_value("ann,bob")
    next(b for b in at.button if b.label == "Build the pool").click().run()
    assert not at.exception and not at.error, [plain(e.value) for e in at.error]
    cli_rows, page_rows = _assignments(by_cli), _assignments(by_page)
    assert cli_rows == page_rows and len(cli_rows) > 0
    doubled = {(q, c) for q, c, _ in cli_rows if sum(1 for r in cli_rows if r[:2] == (q, c)) == 2}
    items = {(q, c) for q, c, _ in cli_rows}
    assert len(doubled) == round(0.2 * len(items))  # the table's overlap on both faces


def test_review_same_verdicts_on_the_cli_and_the_page(capsys, demo_db) -> None:
    """The review of the demo graded by the offline judge: the CLI's JSON and the Review page give
    each judge the same kappa, interval, n and verdict (the bar and statistic resolved once)."""
    from annotation.store import Store
    from calibration.__main__ import main as calibration_main
    from calibration.review_text import design_text, verdict_text
    from judge.jobs import grade_offline
    from tests.conftest import cli, page_test, page_text

    with Store(demo_db) as store:
        grade_offline(store, "relevance")
    code, out, err = cli(
        calibration_main, capsys, "review", "--db", demo_db, "--week", "2026-W49", "--format", "json"
    )
    assert code == 0, err
    report = json.loads(out)
    at = page_test("denominator.ui.review.render_review_page", timeout=60).run()
    at.text_input(key="review:week").set_value("2026-W49").run()
    assert not at.exception, [e.value for e in at.exception]
    shown = page_text(at)
    assert report["judges"]
    for judge in report["judges"]:
        c = judge["consensus"]
        assert f"verdict: {judge['verdict']}" in shown
        # the same verdict line (kappa, interval or why there is none, n, bar) and the same design
        # (queries, items, people, design effect, population, how drawn and read: issue #39)
        assert verdict_text(judge) in shown
        assert design_text(c) and f"Design: {design_text(c)}" in shown


def test_the_relevance_judge_has_one_reading_everywhere(capsys, demo_db) -> None:
    """Issue #40, item 7, on the demo store with its offline judge: review, check, judge list and the
    Metrics page's Holes section give the relevance judge the same kappa, interval, n and verdict."""
    from annotation.store import Store
    from calibration.readings import current_readings, reading_mark
    from judge.__main__ import main as judge_main

    with Store(demo_db) as store:
        grade_offline(store, "relevance")
        reading = next(j for j in current_readings(store).values() if j["rubric"] == "relevance")
    mark = reading_mark(reading)
    consensus = reading["consensus"]
    review = cli_json(capsys, "review", "--db", demo_db)
    reviewed = next(j for j in review["judges"] if j["rubric"] == "relevance")
    assert (reviewed["verdict"], reviewed["consensus"]["n"]) == (reading["verdict"], consensus["n"])
    assert (
        reviewed["consensus"]["kappa"] == consensus["kappa"]
        and reviewed["consensus"]["ci"] == consensus["ci"]
    )
    checked = cli_json(
        capsys, "check", EXAMPLE / "golden.yaml", EXAMPLE / "run.jsonl", "-k", "5", "--db", demo_db
    )
    kappa = next(r for r in checked["rules"] if r["rule"] == "kappa")
    judged = next(j for j in kappa["judges"] if j["fingerprint"] == reading["fingerprint"])
    assert (judged["verdict"], judged["n"], judged["kappa"], judged["ci"]) == (
        reading["verdict"],
        consensus["n"],
        consensus["kappa"],
        consensus["ci"],
    )
    code, out, err = cli(judge_main, capsys, "list", "--db", demo_db)
    assert code == 0, err
    assert mark in out


def test_the_relevance_judge_has_one_reading_on_every_page(capsys, demo_db) -> None:
    """Issue #40, item 7, the pages: the Judge page (beside the offline judge's cross-validated fit,
    and in its table of judges), the Metrics page's label sets of the store and its Check section
    give the relevance judge the reading review and check give it (before: the label sets quoted
    the newest saved review, the Judge page only the fit's quadratic 0.491)."""
    from annotation.store import Store
    from calibration.policy.check_text import judge_line
    from calibration.readings import current_readings, reading_mark
    from denominator.ui.metrics_data import STORE
    from tests.conftest import page_test, page_text

    with Store(demo_db) as store:
        grade_offline(store, "relevance")
        reading = next(j for j in current_readings(store).values() if j["rubric"] == "relevance")
    mark = reading_mark(reading)
    consensus = reading["consensus"]
    assert reading["verdict"] == "uncalibrated" and consensus["n"] == 20  # the demo: 20 labels, 2 queries

    judge_page = page_test("denominator.ui.judge.render_judge_page", timeout=60).run()
    assert not judge_page.exception, [e.value for e in judge_page.exception]
    text = page_text(judge_page)
    assert "cross-validated agreement with people: quadratic-weighted kappa" in text  # the fit, kept
    assert f"Its reading against people (as review, check and judge list give it): {mark}." in text
    table = next(d.value for d in judge_page.dataframe if "agreement with people" in d.value.columns)
    assert list(table["agreement with people"].map(plain)) == [mark]

    at = AppTest.from_file(str(APP), default_timeout=90).run()
    assert not at.exception, [e.value for e in at.exception]
    checked = cli_json(
        capsys, "check", EXAMPLE / "golden.yaml", EXAMPLE / "run.jsonl", "-k", "5", "--db", demo_db
    )
    kappa = next(r for r in checked["rules"] if r["rule"] == "kappa")
    judged = next(j for j in kappa["judges"] if j["fingerprint"] == reading["fingerprint"])
    assert (judged["verdict"], judged["n"], judged["kappa"]) == (
        reading["verdict"],
        consensus["n"],
        consensus["kappa"],
    )
    at.number_input(key="metrics:k").set_value(5).run()
    assert not at.exception, [e.value for e in at.exception]
    assert f"kappa: {judge_line(kappa, judged)}" in page_text(at)

    at.radio(key="metrics:source").set_value(STORE).run()
    assert not at.exception, [e.value for e in at.exception]
    labels = at.selectbox(key="metrics:stored_labels")
    described = [o for o in labels.options if o.startswith("judge offline-lexical/relevance")]
    assert described == [
        f"judge offline-lexical/relevance v1 (logistic): its 40 grades; agreement with people: {mark}"
    ]
