"""End to end (issue #8): a sample of unjudged candidates drawn by `pool --estimate`, graded
with the worked example's truth, exported in golden.yaml, and `calibration audit --estimate`
printing judged and estimated recall side by side, each with its denominator."""

from __future__ import annotations

import json

import pytest

from annotation.__main__ import main as annotation_main
from annotation.formats.by_extension import read_judgments, read_ranked
from annotation.render import plain
from annotation.store import Store
from calibration.__main__ import main as calibration_main
from tests.conftest import EXAMPLE, app_test, cli


def test_audit_estimate_on_the_worked_example(demo_db, tmp_path, capsys) -> None:
    db = demo_db
    truth = read_judgments(EXAMPLE / "truth.qrels").grades
    golden = read_judgments(EXAMPLE / "golden.yaml").grades
    with Store(db) as store:  # the depth-10 pool fully judged (with the truth), under one name
        from annotation.model import Qrels

        store.import_labels(Qrels(grades=golden), annotator="pool")
        for item_id, qid, doc in store.db.execute(
            "SELECT id, query_id, chunk_id FROM items WHERE kind = 'chunk'"
        ).fetchall():
            store.add_label(item_id, "pool", truth.get(qid, {}).get(doc, 0))
    # every unjudged chunk of the corpus is a candidate (one corpus stratum); sample all of them
    argv = ["pool", "--db", db, "--depth", "10", "--estimate", "100", "--strata", "11", "--corpus-stratum"]
    assert cli(annotation_main, capsys, *argv, "--annotators", "pool")[0] == 0
    with Store(db) as store:  # the annotator grades the sampled chunks with the truth
        rows = store.db.execute("SELECT item_id, query_id, chunk_id FROM estimate_samples").fetchall()
        for item_id, qid, doc in rows:
            store.add_label(item_id, "pool", truth.get(qid, {}).get(doc, 0))
    out = tmp_path / "golden.yaml"
    assert (
        annotation_main(
            ["export", "--db", str(db), "--format", "golden", "--annotator", "pool", "-o", str(out)]
        )
        == 0
    )
    capsys.readouterr()
    code = calibration_main(
        ["audit", str(out), str(EXAMPLE / "run.jsonl"), "-k", "5", "--estimate", "--format", "json"]
    )
    report = json.loads(capsys.readouterr().out)
    assert code == 0
    broad = report["estimate"]["queries"]["q_broad"]
    # the whole corpus was sampled: the estimate is exact, |Rel| = 12, recall@5 = 5/12
    assert broad["rel_estimated"] == 12 and abs(broad["recall_estimated"] - 5 / 12) < 1e-9
    from annotation.formats.by_extension import read_ranked

    top10 = read_ranked(EXAMPLE / "run.jsonl").rankings()["q_broad"][:10]
    pooled_relevant = sum(1 for d in top10 if truth["q_broad"].get(d, 0) >= 1)
    assert broad["n_sampled_relevant"] == 12 - pooled_relevant  # the rest were found by the sample
    # the judged recall includes the sampled labels (they are in the file): also 5/12 here
    assert calibration_main(["audit", str(out), str(EXAMPLE / "run.jsonl"), "-k", "5", "--estimate"]) == 0
    table = capsys.readouterr().out
    assert "R@5 estimated" in table and "relevant of" in table and "sampled labels" in table
    # over queries: the census makes every estimate exact, so the means agree and |Rel| sums to the truth's
    summary = report["estimate"]["summary"]
    per_query = report["estimate"]["queries"]
    assert (summary["n_queries"], summary["n_defined"], summary["undefined"]) == (4, 4, [])
    mean = sum(e["recall_estimated"] for e in per_query.values()) / 4
    assert abs(mean - (5 / 12 + 3 * 2 / 3) / 4) < 1e-12
    assert summary["recall_estimated_mean"] == summary["recall_judged_mean"] == mean
    low, high = summary["recall_estimated_mean_ci"]
    assert 5 / 12 <= low <= mean <= high <= 2 / 3  # a bootstrap over queries stays within their range
    # the ratio estimator weighs each query by its |Rel|: (5 + 3 * 2) / (12 + 3 * 3)
    assert abs(summary["recall_estimated_ratio"] - 11 / 21) < 1e-12
    total = sum(1 for q in per_query for g in truth[q].values() if g >= 1)
    assert summary["rel_estimated_total"] == summary["rel_judged_total"] == total == 21
    assert summary["n_sampled"] == sum(e["n_sampled"] for e in per_query.values()) == 56
    assert "Over the 4 of 4 queries where both are defined: mean R@5 judged 0.604" in table
    assert "estimated 0.604 [" in table and "3 relevant of 56 sampled labels" in table

    # a run whose top k holds chunks nobody judged or sampled: said, with how many and where
    other = tmp_path / "other.jsonl"
    lines = (EXAMPLE / "run.jsonl").read_text().splitlines()
    other.write_text(
        "\n".join(
            json.dumps({"query_id": "q_faw", "ranking": ["zz1", "zz2", *json.loads(line)["ranking"]]})
            if '"q_faw"' in line
            else line
            for line in lines
        )
        + "\n"
    )
    assert calibration_main(["audit", str(out), str(other), "-k", "5", "--estimate", "--format", "json"]) == 0
    est = json.loads(capsys.readouterr().out)["estimate"]
    assert (
        est["queries"]["q_faw"]["unjudged_in_top_k"] == 2
        and est["queries"]["q_milk"]["unjudged_in_top_k"] == 0
    )
    assert (
        "2 chunks in the top 5 of 1 of 4 queries (q_faw) are neither labelled in this file nor sampled"
        in est["note"]
    )
    # the metrics page shows the same from an uploaded golden.yaml
    at = app_test(timeout=60).run()
    at.number_input(key="metrics:k").set_value(5).run()
    from denominator.ui.metrics import OWN_FILES

    at.radio(key="metrics:source").set_value(OWN_FILES).run()
    at.file_uploader(key="metrics:qrels_upload").set_value(("golden.yaml", out.read_bytes(), "text/yaml"))
    run_bytes = (EXAMPLE / "run.jsonl").read_bytes()
    at.file_uploader(key="metrics:run_upload").set_value(("run.jsonl", run_bytes, "text/plain")).run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    shown = [t.value.map(plain) for t in at.table if "R@5 estimated" in t.value.columns]
    assert shown and shown[0].set_index("query").loc["q_broad", "|Rel| estimated"] == "12.0"
    assert any(
        "Over the 4 of 4 queries where both are defined: mean R@5 judged 0.604" in plain(m.value)
        for m in at.markdown
    )


def test_audit_estimate_needs_a_sampling_section(capsys) -> None:
    code = calibration_main(
        ["audit", str(EXAMPLE / "golden.yaml"), str(EXAMPLE / "run.jsonl"), "-k", "5", "--estimate"]
    )
    assert code == 2 and "--estimate needs a golden.yaml with a sampling section" in capsys.readouterr().err


def test_estimate_progress_only_on_a_terminal() -> None:
    import io

    from calibration.commands_cli import _QueryProgress

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    ticks = iter([0.0, 0.1, 0.7, 0.8, 1.5])
    tty = Terminal()
    bar = _QueryProgress(tty)
    bar.clock = lambda: next(ticks)
    bar.started = 0.0
    for done in (1, 2, 3, 4, 5):  # at 0 and 0.1 s (too early), 0.7, 0.8 (throttled), 1.5 (the last)
        bar(done, 5)
    assert tty.getvalue() == (
        "\restimating what the labels missed: 3 of 5 queries"
        "\restimating what the labels missed: 5 of 5 queries\n"
    )
    pipe = io.StringIO()
    quiet = _QueryProgress(pipe)
    quiet.started = -10.0
    quiet(5, 5)
    assert pipe.getvalue() == ""


def test_the_worked_example_sample_is_reproducible(tmp_path) -> None:
    """examples/worked-example/sampled.yaml is what examples/make_sampled.py writes."""
    import examples.make_sampled as make

    qrels, sampling = make.build()
    from annotation.formats.golden import write_golden

    write_golden(qrels, tmp_path / "sampled.yaml")
    assert (tmp_path / "sampled.yaml").read_bytes() == (EXAMPLE / "sampled.yaml").read_bytes()
    golden = read_judgments(EXAMPLE / "golden.yaml").grades
    truth = read_judgments(EXAMPLE / "truth.qrels").grades
    for qid, strata in sampling["queries"].items():
        (entry,) = strata.values()
        frame = 24 - len(golden[qid])  # every corpus chunk the labels do not grade
        assert entry["size"] == frame and len(entry["sampled"]) == 6
        for doc in entry["sampled"]:
            assert doc not in golden[qid] and qrels.grades[qid][doc] == truth[qid].get(doc, 0)


def test_the_worked_example_estimate(capsys) -> None:
    """q_broad: 8 judged relevant, 12 truly relevant (4 unjudged), recall@5 0.500 against the
    labels and 5/12 against the truth. From the shipped sample (6 of its 16 unjudged chunks,
    2 of them relevant) the 95% intervals hold the truth and exclude the judged recall."""
    code = calibration_main(
        [
            "audit",
            str(EXAMPLE / "sampled.yaml"),
            str(EXAMPLE / "run.jsonl"),
            "-k",
            "5",
            "--estimate",
            "--format",
            "json",
        ]
    )
    assert code == 0
    broad = json.loads(capsys.readouterr().out)["estimate"]["queries"]["q_broad"]
    assert (broad["n_sampled"], broad["n_sampled_relevant"]) == (6, 2)
    assert broad["rel_ci"][0] <= 12 <= broad["rel_ci"][1]
    assert broad["recall_ci"][0] <= 5 / 12 <= broad["recall_ci"][1] < 0.5
    assert broad["unjudged_in_top_k"] == 0  # its unjudged top-5 chunk is placed in the corpus-wide stratum


def test_the_metrics_page_shows_the_worked_example_estimate() -> None:
    at = app_test(timeout=60).run()
    at.number_input(key="metrics:k").set_value(5).run()
    assert not at.exception and not at.error
    (table,) = [t.value.map(plain) for t in at.table if "R@5 estimated" in t.value.columns]
    broad = table.set_index("query").loc["q_broad"]
    assert broad["R@5 judged"] == "0.500 (|Rel| = 8)" and broad["finding"] == "labels_incomplete_estimated"
    assert broad["sampled labels"] == "2 relevant of 6"
    assert any("examples/worked-example/sampled.yaml" in c.value for c in at.caption)
    # the exact intervals on request: the same estimates, the interval of q_broad's recall as the CLI prints it
    at.radio(key="metrics:interval").set_value("exact").run()
    (table,) = [t.value.map(plain) for t in at.table if "R@5 estimated" in t.value.columns]
    broad = table.set_index("query").loc["q_broad"]
    assert broad["R@5 estimated"] == "0.325" and broad["95% CI"] == "[0.222, 0.455]"
    assert any("exact 95% intervals" in c.value for c in at.caption)


def test_a_sampling_section_that_contradicts_itself_is_refused(tmp_path, capsys) -> None:
    text = (EXAMPLE / "sampled.yaml").read_text()
    bad = tmp_path / "bad.yaml"
    bad.write_text(text.replace("size: 16", "size: 3", 1))
    assert "size: 3" in bad.read_text()
    code = calibration_main(["audit", str(bad), str(EXAMPLE / "run.jsonl"), "-k", "5", "--estimate"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "the sampling section cannot be used" in err


def test_the_exact_interval_on_request(capsys) -> None:
    args = ["audit", str(EXAMPLE / "sampled.yaml"), str(EXAMPLE / "run.jsonl"), "-k", "5", "--estimate"]
    assert calibration_main([*args, "--format", "json"]) == 0
    midp = json.loads(capsys.readouterr().out)["estimate"]
    assert calibration_main([*args, "--interval", "exact", "--format", "json"]) == 0
    exact = json.loads(capsys.readouterr().out)["estimate"]
    assert (midp["interval"], exact["interval"]) == ("midp", "exact")
    for qid, e in exact["queries"].items():  # the same estimates; exact intervals at least as wide here
        m = midp["queries"][qid]
        assert e["recall_estimated"] == m["recall_estimated"] and e["rel_estimated"] == m["rel_estimated"]
        assert e["rel_ci"][0] <= m["rel_ci"][0] and m["rel_ci"][1] <= e["rel_ci"][1]
    assert calibration_main([*args, "--interval", "exact"]) == 0
    assert "exact 95% intervals" in capsys.readouterr().out
    assert calibration_main(args[:-1] + ["--interval", "exact"]) == 2
    assert "--interval is for the estimate; add --estimate" in capsys.readouterr().err


def _edit(doc: dict, path: str, value) -> dict:
    import copy

    doc = copy.deepcopy(doc)
    node, keys = doc, path.split("/")
    for key in keys[:-1]:
        node = node[key]
    if value is _DROP:
        del node[keys[-1]]
    else:
        node[keys[-1]] = value
    return doc


_DROP = object()
_STRATUM = "sampling/queries/q_broad/unjudged corpus chunks"
HAND_EDITS = [
    ("size missing", f"{_STRATUM}/size", _DROP, "size None; expected a whole number"),
    ("size a word", f"{_STRATUM}/size", "five", "size 'five'; expected a whole number"),
    ("size true", f"{_STRATUM}/size", True, "size True; expected a whole number"),
    ("size a fraction", f"{_STRATUM}/size", 5.5, "size 5.5; expected a whole number"),
    ("size a billion", f"{_STRATUM}/size", 10**9, "size 1,000,000,000; at most 2,000,000 candidates"),
    ("depth a word", "sampling/design/depth", "ten", "design.depth: 'ten'; expected a whole number"),
    ("sampling a number", "sampling", 3, "the sampling section is int; expected a mapping"),
    ("queries a list", "sampling/queries", ["q_broad"], "queries: expected a mapping"),
    ("a stratum a number", _STRATUM, 7, "expected {size, sampled}"),
    ("sampled a number", f"{_STRATUM}/sampled", 4, "sampled: expected a list of chunk ids"),
    ("a chunk sampled twice", f"{_STRATUM}/sampled", ["b3", "b3", "x1"], "chunk 'b3' sampled twice"),
]


@pytest.mark.parametrize(("case", "path", "value", "message"), HAND_EDITS, ids=[c[0] for c in HAND_EDITS])
def test_a_hand_edited_sampling_section_is_refused_in_one_line(tmp_path, capsys, case, path, value, message):
    import yaml

    doc = yaml.safe_load((EXAMPLE / "sampled.yaml").read_text())
    if path == "sampling/design/depth":
        doc["sampling"]["design"]["depth"] = 10
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump(_edit(doc, path, value)))
    code = calibration_main(["audit", str(bad), str(EXAMPLE / "run.jsonl"), "-k", "5", "--estimate"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and message in err, err


def test_one_chunk_in_two_strata_is_refused(tmp_path, capsys) -> None:
    import yaml

    doc = yaml.safe_load((EXAMPLE / "sampled.yaml").read_text())
    strata = doc["sampling"]["queries"]["q_broad"]
    first = strata["unjudged corpus chunks"]["sampled"][0]
    strata["another"] = {"size": 3, "sampled": [first]}
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump(doc))
    assert calibration_main(["audit", str(bad), str(EXAMPLE / "run.jsonl"), "-k", "5", "--estimate"]) == 2
    assert f"chunk {first!r} sampled twice" in capsys.readouterr().err


def test_the_finding_in_words_and_counted() -> None:
    """golden.yaml's judged recall beside sampled.yaml's estimate (as the Metrics page does):
    q_broad is flagged, its finding said in words, and counted in the summary."""
    from calibration.audit import audit, finding_text
    from calibration.commands_text import audit_table
    from calibration.estimate.audit import estimate_run

    golden = read_judgments(EXAMPLE / "golden.yaml")
    run = read_ranked(EXAMPLE / "run.jsonl")
    report = audit(golden.grades, run.rankings(), 5, min_grade=1)
    estimate_run(read_judgments(EXAMPLE / "sampled.yaml"), run, 5, 1, report)
    broad = report["queries"]["q_broad"]
    assert "labels_incomplete_estimated" in broad["findings"]
    assert report["summary"]["findings"]["labels_incomplete_estimated"] == 1
    text = finding_text("labels_incomplete_estimated", broad, 5)
    assert text == (
        "the sample of unjudged chunks says the labels miss relevant ones: recall against the labels 0.500 "
        "lies outside the estimated 0.325 [0.235, 0.417] (|Rel| estimated 13.3, judged 8)"
    )
    assert "q_broad: [labels_incomplete_estimated] the sample of unjudged chunks" in audit_table(report)


def test_one_query_over_queries_is_its_own_interval_and_undrawn_labels_are_said(tmp_path, capsys) -> None:
    import yaml

    run = tmp_path / "one.jsonl"
    run.write_text(
        "".join(
            line + "\n" for line in (EXAMPLE / "run.jsonl").read_text().splitlines() if '"q_broad"' in line
        )
    )
    doc = yaml.safe_load((EXAMPLE / "sampled.yaml").read_text())
    broad = next(q for q in doc["queries"] if q["id"] == "q_broad")
    sampled = doc["sampling"]["queries"]["q_broad"]["unjudged corpus chunks"]["sampled"]
    del broad["grades"][sampled[0]]  # drawn, not yet labelled
    partial = tmp_path / "partial.yaml"
    partial.write_text(yaml.safe_dump(doc, sort_keys=False))
    assert (
        calibration_main(["audit", str(partial), str(run), "-k", "5", "--estimate", "--format", "json"]) == 0
    )
    est = json.loads(capsys.readouterr().out)["estimate"]
    row, summary = est["queries"]["q_broad"], est["summary"]
    assert (row["n_drawn"], row["n_sampled"]) == (6, 5)
    assert summary["interval_over_queries"] == "the one query's own interval"
    assert summary["recall_estimated_mean_ci"] == row["recall_ci"]
    assert calibration_main(["audit", str(partial), str(run), "-k", "5", "--estimate"]) == 0
    out = capsys.readouterr().out
    assert "of 5 sampled labels (1 drawn, not labelled)" in out and "the one query's own 95% interval" in out
    for doc_id in sampled[1:]:  # none of the draw labelled: undefined, and the table says why
        del broad["grades"][doc_id]
    partial.write_text(yaml.safe_dump(doc, sort_keys=False))
    assert calibration_main(["audit", str(partial), str(run), "-k", "5", "--estimate"]) == 0
    out = capsys.readouterr().out
    assert "q_broad: undefined: no sample from stratum 'unjudged corpus chunks' (N=16)" in out
    assert "no query has both a judged and an estimated R@5 (0 of 1)" in out


def test_unplaced_chunks_widen_the_upper_bound(tmp_path, capsys) -> None:
    """A run nobody pooled: its top 5 holds chunks neither labelled nor sampled, in no known
    stratum (the design is not corpus-wide here). The estimate treats them as not relevant, so
    its interval's upper bound widens to allow them all to be: (u T + h) / (T + h)."""
    import yaml

    doc = yaml.safe_load((EXAMPLE / "sampled.yaml").read_text())
    doc["sampling"]["design"]["corpus"] = False
    labels = tmp_path / "labels.yaml"
    labels.write_text(yaml.safe_dump(doc, sort_keys=False))
    run = tmp_path / "new.jsonl"
    run.write_text(json.dumps({"query_id": "q_faw", "ranking": ["n1", "n2", "n3", "m1", "n4"]}) + "\n")
    args = ["audit", str(labels), str(run), "-k", "5", "--estimate", "--format", "json"]
    assert calibration_main(args) == 0
    row = json.loads(capsys.readouterr().out)["estimate"]["queries"]["q_faw"]
    assert row["unjudged_in_top_k"] == 4
    # what the estimate alone says: m1 is the one known hit of 3 judged relevant
    from calibration.estimate import estimate_recall_at_k

    alone = estimate_recall_at_k(
        3, 1, [{"stratum": "s", "N": 21, "labels": [0] * 6, "in_top_k": [False] * 6, "N_top_k": 0}], 5
    )
    u, t = alone["ci"][1], alone["rel"]["ci"][0]
    assert row["recall_estimated"] == alone["estimate"] == 1 / 3
    assert row["recall_ci"] == [alone["ci"][0], (u * t + 4) / (t + 4)]
    assert (u, t) == (1 / 3, 3.0) and row["recall_ci"][
        1
    ] == 5 / 7  # (1 + 4) / (3 + 4): four more possible hits
