"""The app through Streamlit's AppTest: the metrics page on the worked example and on uploads."""

from __future__ import annotations

import pandas as pd
from streamlit.testing.v1 import AppTest

from annotation.render import plain
from calibration.inputs import DEFAULT_K
from tests.conftest import EXAMPLE, app_test, page_text


def run_app(k: int | None = 5) -> AppTest:
    """The page, at k = 5 (the worked example's own cutoff) unless ``k`` is None (the page's default)."""
    at = app_test().run()
    assert not at.exception, [e.value for e in at.exception]
    if k is not None:
        at.number_input(key="metrics:k").set_value(k)
        at.run()
        assert not at.exception, [e.value for e in at.exception]
    return at


def shown(at: AppTest) -> str:
    """The page's text as a person reads it (markup removed)."""
    return plain(page_text(at))


def metrics_table(at: AppTest) -> pd.DataFrame:
    return at.table[0].value.map(plain).set_index("query")


def rerun_with(at: AppTest, key: str, value: int) -> AppTest:
    at.number_input(key=key).set_value(value)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def test_app_runs_without_exception_or_error():
    at = run_app(k=None)
    assert not at.error
    assert at.title[0].value == "Metrics and audit"
    # the page starts from the CLI's defaults: k = 10, relevant = the file's min_grade, else 1
    assert at.number_input(key="metrics:k").value == DEFAULT_K
    assert at.number_input(key="metrics:min_grade").value is None
    assert f"R@{DEFAULT_K}" in metrics_table(at).columns


def test_worked_example_metrics_with_their_denominators():
    table = metrics_table(run_app())
    assert table.loc["q_broad", "|Rel|"] == "8"
    assert table.loc["q_broad", "R@5"] == "0.500 = 4/8"
    assert table.loc["q_broad", "R@5 ceiling"] == "0.625"
    assert table.loc["q_broad", "share of ceiling"] == "80%"
    for qid in ("q_faw", "q_store", "q_milk"):
        assert table.loc[qid, "|Rel|"] == "3"
        assert table.loc[qid, "R@5"] == "0.667 = 2/3"
    assert table.loc["mean", "R@5"] == "0.625"
    assert table.loc["mean", "P@5"] == "0.500"
    assert table.loc["mean", "nDCG@5"] == "0.741"
    assert table.loc["queries in the mean", "R@5"] == "4 of 4 (0 undefined)"


def test_summary_says_what_each_mean_is_over():
    at = run_app()
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["mean R@5"] == "0.625"
    assert metrics["mean nDCG@5"] == "0.741"
    assert "over 4 of 4 queries, 0 undefined" in shown(at)


def test_capped_denominator_shown_only_as_inflation():
    text = shown(run_app())
    assert "would read 0.700 instead of 0.625 (+0.075, inflated), by hiding that q_broad" in text
    # at k = 10 no query has |Rel| > k: the same value, and no word of inflation
    text = shown(rerun_with(run_app(), "metrics:k", 10))
    assert "gives the same mean R@10 here, 1.000" in text and "inflated" not in text


def test_audit_findings_in_words():
    at = run_app()
    text = shown(at)
    assert "|Rel|=8 > k=5: recall can never exceed 0.625" in text
    assert "against the truth 0.417" in text
    audit_table = at.table[1].value.map(plain).set_index("query")
    assert audit_table.loc["q_broad", "R@5 against the truth set"] == "0.417 (|Rel| = 12)"
    assert audit_table.loc["q_broad", "label coverage"] == "0.333 of 24 chunks"


def test_duplicate_example_positional_three_distinct_two():
    at = run_app()
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["naive positional count in the top 5"] == "3 hits"
    assert metrics["distinct documents in the top 5"] == "2 hits"
    assert "a naive positional count finds 3 hits in the top 5, distinct documents give 2" in shown(at)
    assert "recall 2/3 = 0.667: distinct chunks; each repeat keeps its slot and scores nothing" in shown(at)


def test_recall_chart_is_drawn():
    at = run_app()
    charts = at.get("vega_lite_chart")
    assert len(charts) == 1
    assert '"title": "recall@5"' in charts[0].proto.spec


def test_recall_chart_data_is_recall_beside_ceiling():
    from annotation.formats.by_extension import read_judgments, read_ranked
    from calibration.metrics import evaluate
    from denominator.ui.metrics import EXAMPLE_DIR, recall_chart

    evaluation = evaluate(
        read_judgments(EXAMPLE_DIR / "golden.yaml"),
        read_ranked(EXAMPLE_DIR / "run.jsonl"),
        ks=(5,),
        min_grade=1,
    )
    data = recall_chart(evaluation).data
    broad = data[data["query"] == "q_broad (|Rel|=8)"].set_index("series")["value"]
    assert broad.to_dict() == {"ceiling min(1, 5/|Rel|)": 0.625, "R@5": 0.5}


def test_recall_spec_is_altairs_chart_as_a_dict():
    """The page draws ``recall_spec``, written as a dict (Altair's build and check cost ~0.05-0.1 s
    of every new k on 10,000 queries): the same spec as Altair's ``to_dict()`` of ``recall_chart``
    but the default theme's view size, which Streamlit leaves out."""
    from annotation.formats.by_extension import read_judgments, read_ranked
    from calibration.metrics import evaluate
    from denominator.ui.metrics import EXAMPLE_DIR, recall_chart, recall_spec

    qrels, run = read_judgments(EXAMPLE_DIR / "golden.yaml"), read_ranked(EXAMPLE_DIR / "run.jsonl")
    for k in (1, 5, 10):
        evaluation = evaluate(qrels, run, ks=(k,), min_grade=1)
        drawn, spec = recall_spec(evaluation)
        chart = recall_chart(evaluation)
        assert chart is not None and spec is not None
        expected = chart.to_dict()
        expected.pop("config")
        assert spec == expected
        assert drawn == len({row["query"] for row in next(iter(spec["datasets"].values()))})


def test_k_10_changes_the_numbers():
    at = rerun_with(run_app(), "metrics:k", 10)
    table = metrics_table(at)
    assert table.loc["q_broad", "R@10"] == "1.000 = 8/8"
    assert table.loc["q_broad", "R@10 ceiling"] == "1.000"
    assert "R@5" not in table.columns
    text = shown(at)
    assert "recall can never exceed" not in text  # |Rel|=8 <= k=10: no ceiling below 1


def test_min_grade_changes_rel():
    table = metrics_table(rerun_with(run_app(), "metrics:min_grade", 2))
    assert table.loc["q_broad", "|Rel|"] == "5"  # m1, m2 (3), m3, m4, s1 (2)
    assert table.loc["q_faw", "|Rel|"] == "2"


def test_undefined_is_never_zero():
    at = rerun_with(run_app(), "metrics:min_grade", 4)  # no grade reaches 4: recall undefined everywhere
    table = metrics_table(at)
    assert table.loc["q_broad", "R@5"] == "undefined (|Rel| = 0)"
    assert table.loc["mean", "R@5"] == "undefined"
    assert table.loc["queries in the mean", "R@5"] == "0 of 4 (4 undefined)"
    assert {m.label: m.value for m in at.metric}["mean R@5"] == "undefined"
    assert not at.error


def choose_own_files(at: AppTest) -> AppTest:
    at.radio(key="metrics:source").set_value("your files")
    at.run()
    assert not at.exception
    return at


def test_own_files_wait_for_both_uploads():
    at = choose_own_files(run_app())
    assert not at.error
    assert "Upload a judgments file and a run" in shown(at)


def test_uploaded_files_are_evaluated():
    at = choose_own_files(run_app())
    qrels = b"q1 0 a 2\nq1 0 b 1\nq1 0 c 0\nq2 0 x 0\n"
    run = b'{"query_id": "q1", "ranking": ["a", "z", "b"]}\n{"query_id": "q2", "ranking": ["x"]}\n'
    at.file_uploader(key="metrics:qrels_upload").set_value(("mine.qrels", qrels, "text/plain"))
    at.file_uploader(key="metrics:run_upload").set_value(("mine.jsonl", run, "application/jsonl"))
    at.run()
    assert not at.exception and not at.error
    table = metrics_table(at)
    assert table.loc["q1", "R@5"] == "1.000 = 2/2"
    assert table.loc["q2", "R@5"] == "undefined (|Rel| = 0)"
    assert table.loc["queries in the mean", "R@5"] == "1 of 2 (1 undefined)"
    assert "over 1 of 2 queries, 1 undefined" in shown(at)
    assert "q_dupe" not in shown(at)


def test_bad_upload_shows_the_readers_message():
    at = choose_own_files(run_app())
    at.file_uploader(key="metrics:qrels_upload").set_value(("mine.qrels", b"q1 0 a 1\n", "text/plain"))
    at.file_uploader(key="metrics:run_upload").set_value(("broken.jsonl", b"{not json\n", "text/plain"))
    at.run()
    assert not at.exception
    assert len(at.error) == 1
    message = plain(at.error[0].value)
    assert message.startswith("broken.jsonl:1:")
    assert "denominator-" not in message  # names the upload, not the temporary file
    assert not at.table


def test_fetch_depth_below_k_is_an_error_not_a_negative_loss() -> None:
    at = run_app()
    at.number_input(key="metrics:fetch_depth").set_value(2).run()
    assert not at.exception
    assert any("fetch depth 2 is below k = 5" in plain(e.value) for e in at.error)


def test_metrics_page_compares_a_second_run(tmp_path):
    import json

    lines = [json.loads(line) for line in (EXAMPLE / "run.jsonl").read_text().splitlines()]
    reversed_run = "".join(
        json.dumps({"query_id": r["query_id"], "ranking": r["ranking"][::-1]}) + "\n" for r in lines
    ).encode()
    at = run_app()
    at.file_uploader(key="metrics:compare_upload").set_value(
        ("reversed.jsonl", reversed_run, "text/plain")
    ).run()
    assert not at.exception and not at.error
    table = next(t.value for t in at.table if "wins / losses / ties" in t.value.columns)
    table = table.map(plain).set_index("measure")
    assert table.loc["R@5", "A"] == "0.625" and table.loc["R@5", "B"] == "0.375"
    assert table.loc["R@5", "wins / losses / ties"] == "0 / 3 / 1"
    assert table.loc["Success@5", "p (randomization)"] == "undefined"


def test_a_repeat_takes_its_slot_on_the_page():
    """Issue #14, as the CLI says it: d1 d1 x3 x2 x1 d2 at k = 5 shows d1 twice and never d2."""
    at = choose_own_files(run_app())
    golden = b"queries:\n  - id: q1\n    grades: {d1: 3, d2: 2, d3: 1}\n"
    run = b'{"query_id": "q1", "ranking": ["d1", "d1", "x3", "x2", "x1", "d2"]}\n'
    at.file_uploader(key="metrics:qrels_upload").set_value(("r.yaml", golden, "text/plain"))
    at.file_uploader(key="metrics:run_upload").set_value(("r.jsonl", run, "application/jsonl"))
    at.run()
    assert not at.exception and not at.error
    assert metrics_table(at).loc["q1", "R@5"] == "0.333 = 1/3"
    audit_table = at.table[1].value.map(plain).set_index("query")
    assert audit_table.loc["q1", "hits in top 5: positional / distinct"] == "2 / 1"
    assert audit_table.loc["q1", "judged@5"] == "0.200 = 1/5"
    text = shown(at)
    # one line per kind of finding, its queries in the expander under it
    kinds = [plain(e.label) for e in at.expander]
    assert "duplicate chunk ids in 1 of 1 queries: each repeat keeps its slot and scores nothing" in kinds
    assert "q1**: repeated ids d1: each repeat keeps its slot and scores nothing" in text
    assert "a naive positional count finds 2 hits in the top 5, distinct documents give 1" in text
    assert not at.warning  # the repeat is a finding, not a warning box per query
