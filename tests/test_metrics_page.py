"""The Metrics page (issue #16, build 7): findings grouped by kind under the summary, a run
already in the store scored against one of the store's label sets, and a corpus for label
coverage (an uploaded file or the store's chunks)."""

from __future__ import annotations

import json

import pytest
from streamlit.testing.v1 import AppTest

from annotation.render import md, plain
from denominator.ui.metrics import FINDINGS_LISTED
from denominator.ui.metrics_data import CORPUS_STORE, CORPUS_UPLOAD, NO_CORPUS, OWN_FILES, STORE
from tests.conftest import EXAMPLE, app_test, page_text


def ok(at: AppTest) -> AppTest:
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    return at


def with_source(source: str) -> AppTest:
    at = app_test(timeout=60).run()
    at.radio(key="metrics:source").set_value(source).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def upload(at: AppTest, qrels: tuple[str, bytes], run: tuple[str, bytes]) -> AppTest:
    at.file_uploader(key="metrics:qrels_upload").set_value((*qrels, "text/plain"))
    at.file_uploader(key="metrics:run_upload").set_value((*run, "text/plain"))
    return at.run()


def table(at: AppTest, column: str):
    """The first table with ``column``, its cells as a person reads them, by query."""
    found = next(t.value for t in at.table if column in t.value.columns)
    return found.map(plain).set_index("query")


def kinds(at: AppTest) -> dict[str, str]:
    """The expanders' labels (one line per kind of finding), as read."""
    return {plain(e.label).split(" in ")[0]: plain(e.label) for e in at.expander}


def big_run(n_queries: int, repeated: int) -> tuple[bytes, bytes]:
    """Queries q000.. with 3 relevant chunks each; the first ``repeated`` rank their first chunk twice."""
    qrels, run = [], []
    for i in range(n_queries):
        qid = f"q{i:03d}"
        qrels += [f"{qid} 0 {qid}-d{j} 1\n" for j in range(3)]
        ranking = [f"{qid}-d0", f"{qid}-d0" if i < repeated else f"{qid}-x", f"{qid}-d1", f"{qid}-y"]
        run.append(json.dumps({"query_id": qid, "ranking": ranking}) + "\n")
    return "".join(qrels).encode(), "".join(run).encode()


# ---------------------------------------------------------------- findings grouped by kind


def test_findings_are_one_line_per_kind_with_their_counts() -> None:
    qrels, run = big_run(300, 250)
    at = ok(upload(with_source(OWN_FILES), ("big.qrels", qrels), ("big.jsonl", run)))
    lines = kinds(at)
    assert lines["duplicate chunk ids"] == (
        "duplicate chunk ids in 250 of 300 queries: each repeat keeps its slot and scores nothing"
    )
    # k = 10 > |Rel| = 3 everywhere; the repeated d0 is a relevant chunk counted twice positionally
    assert lines["fewer relevant chunks than k = 10"].startswith(
        "fewer relevant chunks than k = 10 in 300 of 300"
    )
    assert lines["more hits by a naive positional count than distinct relevant chunks"].startswith(
        "more hits by a naive positional count than distinct relevant chunks in 250 of 300 queries"
    )
    assert len(at.expander) == len(lines)  # one expander per kind, none per query
    assert not at.warning  # no yellow box per repeated query
    # a kind of more than FINDINGS_OPENED queries lists them once its expander is opened
    assert "q000**: repeated ids" not in page_text(at)
    at.session_state["metrics_finding_duplicate_ids"] = True
    text = page_text(ok(at.run()))
    # the expander lists the first FINDINGS_LISTED queries, then says how many more
    assert "q000**: repeated ids q000-d0: each repeat keeps its slot and scores nothing" in text
    assert f"q{FINDINGS_LISTED - 1:03d}**: repeated ids" in text
    assert f"q{FINDINGS_LISTED:03d}**: repeated ids" not in text
    assert f"… and {250 - FINDINGS_LISTED} more queries with this finding" in text


def test_a_group_writes_its_listed_queries_and_counts_them_all() -> None:
    """``group_findings(report, listed)`` (the page's: #42 item 2) writes each kind's first ``listed``
    queries in words and counts every one; without ``listed`` (the CLI's) it writes them all."""
    from calibration.policy.findings import group_findings

    queries = {f"q{i}": {"findings": ["recall_undefined"], "rel": 0} for i in range(5)}
    report = {"k": 10, "queries": queries}
    (whole,) = group_findings(report)  # type: ignore[arg-type]
    (cut,) = group_findings(report, 2)  # type: ignore[arg-type]
    assert whole.count == cut.count == 5 and whole.line == cut.line
    assert whole.line.startswith("no judged relevant chunk in 5 of 5 queries")
    assert [qid for qid, _ in whole.queries] == ["q0", "q1", "q2", "q3", "q4"]
    assert cut.queries == whole.queries[:2]


def test_the_summary_comes_before_the_findings_and_the_tables() -> None:
    qrels, run = big_run(30, 12)
    at = ok(upload(with_source(OWN_FILES), ("big.qrels", qrels), ("big.jsonl", run)))
    order = [node.type for node in at.main]
    first_metric = next(i for i, kind in enumerate(order) if kind == "metric" or kind == "columns")
    assert first_metric < order.index("expander") < order.index("table")
    assert {m.label: m.value for m in at.metric}["mean R@10"] == "0.667"
    assert "over 30 of 30 queries, 0 undefined" in page_text(at)


def test_a_change_of_k_keeps_every_element_in_its_place() -> None:
    """The kinds of finding are one slot of the page however many there are: when k changes
    their number, the elements below keep their places, so the browser updates each one in place
    instead of building every element below again (#42: a new k on 10,000 queries)."""
    qrels, run = big_run(30, 12)
    at = ok(upload(with_source(OWN_FILES), ("big.qrels", qrels), ("big.jsonl", run)))

    def layout(at: AppTest) -> list[tuple[int, str]]:
        return [(i, node.type) for i, node in at.main.children.items()]

    before, groups = layout(at), len(kinds(at))
    at.number_input(key="metrics:k").set_value(3).run()
    assert len(kinds(ok(at))) != groups  # k = 3 < |Rel|: another number of kinds
    assert layout(at) == before


def test_a_finding_from_the_data_is_escaped() -> None:
    qrels = b"q[x](http://e) 0 d1 1\n"
    run = b'{"query_id": "q[x](http://e)", "ranking": ["d1", "d1"]}\n'
    at = ok(upload(with_source(OWN_FILES), ("h.qrels", qrels), ("h.jsonl", run)))
    markdown = [m.value for m in at.markdown if "repeated ids" in m.value]
    assert markdown and md("q[x](http://e)") in markdown[0]


# ---------------------------------------------------------------- a run already in the store


@pytest.fixture
def store_page(demo_db) -> AppTest:
    return ok(with_source(STORE))


def test_the_store_source_scores_the_demo_run(store_page) -> None:
    at = store_page
    assert at.selectbox(key="metrics:stored_run").value == "retriever"
    assert at.selectbox(key="metrics:stored_labels").value == "median"
    metrics = table(at, "R@10")
    # cat and dan graded the retriever's top 10 of q_faw and q_store; the median of their grades
    assert list(metrics.index[:2]) == ["q_faw", "q_store"]
    assert metrics.loc["q_faw", "|Rel|"] == "2" and metrics.loc["q_faw", "R@10"] == "1.000 = 2/2"
    assert metrics.loc["q_store", "|Rel|"] == "3" and metrics.loc["q_store", "R@10"] == "1.000 = 3/3"
    text = page_text(at)
    assert "run 'retriever' of the store" in text
    assert "the median per chunk (cat, dan)" in text
    assert "2 queries of the run have no judgments: ignored." in text
    # the same figures as the CLI on the same store (one workflow, calibration.stored.stored_data)
    assert {m.label: m.value for m in at.metric}["mean nDCG@10"] == "0.716"


def test_the_store_source_takes_one_annotators_labels(store_page) -> None:
    at = store_page
    at.selectbox(key="metrics:stored_labels").set_value("annotator:dan").run()
    metrics = table(ok(at), "R@10")
    assert metrics.loc["q_faw", "|Rel|"] == "2"  # dan graded m3 0 where cat gave it 1
    at.selectbox(key="metrics:stored_labels").set_value("annotator:cat").run()
    assert table(ok(at), "R@10").loc["q_faw", "|Rel|"] == "3"


def test_label_coverage_from_the_stores_chunks(store_page) -> None:
    at = store_page
    assert at.radio(key="metrics:corpus_source").value == CORPUS_STORE
    audit = table(at, "label coverage")
    # q_faw: 10 judged chunks of the store's 24
    assert audit.loc["q_faw", "label coverage"] == "0.417 of 24 chunks"
    assert "corpus: the store's 24 chunks" in page_text(at)
    at.radio(key="metrics:corpus_source").set_value(NO_CORPUS).run()
    assert table(ok(at), "label coverage").loc["q_faw", "label coverage"] == "n/a (corpus size unknown)"


def test_label_coverage_from_an_uploaded_corpus(demo_db) -> None:
    qrels = (EXAMPLE / "golden.yaml").read_bytes()
    run = (EXAMPLE / "run.jsonl").read_bytes()
    at = ok(upload(with_source(OWN_FILES), ("golden.yaml", qrels), ("run.jsonl", run)))
    assert at.radio(key="metrics:corpus_source").value == NO_CORPUS
    assert table(at, "label coverage").loc["q_broad", "label coverage"] == "n/a (corpus size unknown)"
    at.radio(key="metrics:corpus_source").set_value(CORPUS_UPLOAD).run()
    corpus = (EXAMPLE / "corpus.jsonl").read_bytes()
    at.file_uploader(key="metrics:corpus_upload").set_value(("corpus.jsonl", corpus, "text/plain")).run()
    audit = table(ok(at), "label coverage")
    assert audit.loc["q_broad", "label coverage"] == "0.333 of 24 chunks"  # 8 judged of 24
    assert "corpus: corpus.jsonl (24 chunks)" in page_text(at)


def test_the_store_source_without_a_database(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("DENOMINATOR_DB", str(tmp_path / "none.db"))
    at = with_source(STORE)
    assert not at.exception
    assert any("No database at" in plain(e.value) for e in at.error)
    assert not (tmp_path / "none.db").exists()  # reading never creates a database


# ---------------------------------------------------------------- a big run's tables (#42 item 2)


def test_a_big_runs_tables_are_grids_with_every_query_and_a_download() -> None:
    """Above TABLE_ROWS queries a per-query table is a grid loaded lazily (the browser fetches rows
    as it scrolls; AppTest reads every row), each with a button that makes its CSV when clicked."""
    qrels, run = big_run(300, 250)
    at = ok(upload(with_source(OWN_FILES), ("big.qrels", qrels), ("big.jsonl", run)))
    assert not [t for t in at.table if "P@10 ceiling" in t.value.columns]  # no HTML rows
    grids = {tuple(d.value.columns)[1]: d.value.set_index("query") for d in at.dataframe}
    metrics, audit = grids["|Rel|"], grids["judged@10"]
    assert len(metrics) == 302 and len(audit) == 300  # every query, and the means' two rows
    # q000 ranks d0 twice, then x, d1, y: 2 distinct relevant of 3 in the top 10
    assert metrics.loc["q000", "R@10"] == "0.667 = 2/3" and metrics.loc["q299", "R@10"] == "0.667 = 2/3"
    assert metrics.loc["mean", "R@10"] == "0.667"
    downloads = [plain(b.proto.label) for b in at.get("download_button")]
    assert downloads == [
        "Download the metrics table (300 queries, CSV)",
        "Download the audit table (300 queries, CSV)",
        "Download the holes table (300 queries, CSV)",
    ]


def test_stage_1_figures_say_n_a_without_a_stage_1(demo_db) -> None:
    """k = 10 on the worked example's 10-deep run: no stage 1, so its figures are not applicable,
    as the CLI's n/a says, not "undefined" (#43, item 9: one word per meaning); --fetch-depth 10
    at k = 5 gives them."""
    at = ok(app_test(timeout=60).run())
    audit = table(at, "label coverage")
    assert list(audit["R@fetch (stage 1)"]) == ["n/a (no stage 1)"] * 4
    assert list(audit["lost by the cut to 10"]) == ["n/a (no stage 1)"] * 4
    at.number_input(key="metrics:k").set_value(5).run()
    at.number_input(key="metrics:fetch_depth").set_value(10).run()
    audit = table(ok(at), "label coverage")
    assert audit.loc["q_faw", "R@10 (stage 1)"] == "1.000"
