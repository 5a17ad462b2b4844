"""End to end (issue #8): a sample of unjudged candidates drawn by `pool --estimate`, graded
with the worked example's truth, exported in golden.yaml, and `calibration audit --estimate`
printing judged and estimated recall side by side, each with its denominator."""

from __future__ import annotations

import json

from annotation.__main__ import build_demo
from annotation.__main__ import main as annotation_main
from annotation.formats import read_judgments
from annotation.store import Store
from calibration.__main__ import main as calibration_main
from tests.test_worked_example import EXAMPLE


def test_audit_estimate_on_the_worked_example(tmp_path, capsys) -> None:
    db = tmp_path / "demo.db"
    build_demo(str(db))
    truth = read_judgments(EXAMPLE / "truth.qrels").grades
    golden = read_judgments(EXAMPLE / "golden.yaml").grades
    with Store(db) as store:  # the depth-10 pool fully judged (with the truth), under one name
        from annotation.formats import Qrels

        store.import_labels(Qrels(grades=golden), annotator="pool")
        for item_id, qid, doc in store.db.execute(
            "SELECT id, query_id, chunk_id FROM items WHERE kind = 'chunk'"
        ).fetchall():
            store.add_label(item_id, "pool", truth.get(qid, {}).get(doc, 0))
    # every unjudged chunk of the corpus is a candidate (one corpus stratum); sample all of them
    assert (
        annotation_main(
            [
                "pool",
                "--db",
                str(db),
                "--depth",
                "10",
                "--estimate",
                "100",
                "--strata",
                "11",
                "--corpus-stratum",
                "--annotators",
                "pool",
            ]
        )
        == 0
    )
    capsys.readouterr()
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
    from annotation.formats import read_ranked

    top10 = read_ranked(EXAMPLE / "run.jsonl").rankings()["q_broad"][:10]
    pooled_relevant = sum(1 for d in top10 if truth["q_broad"].get(d, 0) >= 1)
    assert broad["n_sampled_relevant"] == 12 - pooled_relevant  # the rest were found by the sample
    # the judged recall includes the sampled labels (they are in the file): also 5/12 here
    assert calibration_main(["audit", str(out), str(EXAMPLE / "run.jsonl"), "-k", "5", "--estimate"]) == 0
    table = capsys.readouterr().out
    assert "R@5 estimated" in table and "relevant of" in table and "sampled labels" in table
    # the metrics page shows the same from an uploaded golden.yaml
    from streamlit.testing.v1 import AppTest

    from tests.test_app import APP

    at = AppTest.from_file(APP, default_timeout=60).run()
    from calibration.ui import OWN_FILES

    at.radio(key="metrics:source").set_value(OWN_FILES).run()
    at.file_uploader(key="metrics:qrels_upload").set_value(("golden.yaml", out.read_bytes(), "text/yaml"))
    run_bytes = (EXAMPLE / "run.jsonl").read_bytes()
    at.file_uploader(key="metrics:run_upload").set_value(("run.jsonl", run_bytes, "text/plain")).run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    shown = [t.value for t in at.table if "R@5 estimated" in t.value.columns]
    assert shown and shown[0].set_index("query").loc["q_broad", "|Rel| estimated"] == "12.0"


def test_audit_estimate_needs_a_sampling_section(capsys) -> None:
    code = calibration_main(
        ["audit", str(EXAMPLE / "golden.yaml"), str(EXAMPLE / "run.jsonl"), "-k", "5", "--estimate"]
    )
    assert code == 2 and "--estimate needs a golden.yaml with a sampling section" in capsys.readouterr().err
