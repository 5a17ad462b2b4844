"""python -m annotation import / export: counts, idempotence, atomicity, round trips."""

from __future__ import annotations

import csv

from annotation.__main__ import main
from annotation.formats.golden import read_golden
from annotation.formats.trec import read_qrels
from annotation.store import Store
from denominator.cli import main as denominator_main
from tests.conftest import EXAMPLE, cli


def test_import_then_again_changes_nothing(tmp_path, capsys) -> None:
    db = tmp_path / "d.db"
    args = [
        "import",
        "--db",
        db,
        "--corpus",
        EXAMPLE / "corpus.jsonl",
        "--labels",
        EXAMPLE / "golden.yaml",
        "--annotator",
        "ann",
        "--run",
        EXAMPLE / "run.jsonl",
        "--name",
        "bm25",
    ]
    code, out, _ = cli(main, capsys, *args)
    assert code == 0
    assert "corpus" in out and "24 added" in out and "17 labels, 0 unchanged" in out and "40 rankings" in out
    assert out.splitlines()[-1] == (
        "store now: 4 queries, 24 chunks, 1 run, 40 rankings, 0 traces, 17 items, 1 annotator, 17 labels"
    )
    assert out.splitlines()[-2].startswith(
        "import 1: corpus corpus.jsonl + run 'bm25' (run.jsonl) + labels golden.yaml by 'ann', by "
    )
    code, out, _ = cli(main, capsys, *args)
    assert code == 0 and "0 labels, 17 unchanged" in out and "24 unchanged" in out and "40 unchanged" in out
    assert out.splitlines()[-1].endswith("17 items, 1 annotator, 17 labels")
    assert out.splitlines()[-2].startswith(
        "import 2: "
    )  # an import again is recorded, and holds the same rows


def test_the_db_path_comes_from_the_environment(tmp_path, capsys, monkeypatch) -> None:
    monkeypatch.setenv("DENOMINATOR_DB", str(tmp_path / "env.db"))
    code, _, _ = cli(main, capsys, "import", "--corpus", EXAMPLE / "corpus.jsonl")
    assert code == 0 and (tmp_path / "env.db").exists()


def test_a_bad_file_or_grade_writes_nothing(tmp_path, capsys) -> None:
    db = tmp_path / "d.db"
    bad = tmp_path / "bad.qrels"
    bad.write_text("q1 0 c1 1\nq1 0 c2 4\n")
    code, out, err = cli(
        main,
        capsys,
        "import",
        "--db",
        db,
        "--corpus",
        EXAMPLE / "corpus.jsonl",
        "--labels",
        bad,
        "--annotator",
        "ann",
    )
    assert code == 2 and out == ""
    assert err == (
        f"error: {bad}:2: query 'q1' chunk 'c2': grade 4 is not on the relevance scale; expected one of 0, 1, 2, 3\n"
    )
    with Store(db) as store:  # the corpus of the same command did not land either
        assert store.counts()["chunks"] == 0
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"id": "c1", "text": "ok"}\n{"id": "c2"}\n')
    code, _, err = cli(main, capsys, "import", "--db", db, "--corpus", broken)
    assert (
        code == 2
        and err == f"error: {broken}:2: text: missing or empty; expected the chunk's text as a string\n"
    )


def test_usage_errors(tmp_path, capsys) -> None:
    db = tmp_path / "d.db"
    Store(db).close()  # an empty store: export says what it lacks (a missing file: no such database)
    for argv, message in [
        (["import", "--db", db], "nothing to import"),
        (["import", "--db", db, "--run", EXAMPLE / "run.jsonl"], "a run needs a name (--name)"),
        (
            ["import", "--db", db, "--labels", EXAMPLE / "golden.yaml"],
            "labels need the name of who made them (--annotator)",
        ),
        (["export", "--db", db, "--format", "qrels", "-o", tmp_path / "x"], "no current labels to export"),
        (
            ["export", "--db", db, "--format", "qrels", "--annotator", "zed", "-o", tmp_path / "x"],
            "no annotator named 'zed'",
        ),
    ]:
        code, out, err = cli(main, capsys, *argv)
        assert code == 2 and out == "" and message in err and err.count("\n") == 1


def test_qrels_round_trip_exactly(tmp_path, capsys) -> None:
    db = tmp_path / "d.db"
    source = tmp_path / "in.qrels"
    source.write_text("q2 0 b 3\nq2 0 a 0\n001 0 a 1\n1 0 z 2\n")
    assert cli(main, capsys, "import", "--db", db, "--labels", source, "--annotator", "nist")[0] == 0
    out_path = tmp_path / "out.qrels"
    code, out, _ = cli(
        main, capsys, "export", "--db", db, "--format", "qrels", "--annotator", "nist", "-o", out_path
    )
    assert code == 0 and out == f"wrote 4 judgments over 3 queries to {out_path}\n"
    assert out_path.read_text() == source.read_text()


def test_golden_and_csv_export(tmp_path, capsys) -> None:
    db = tmp_path / "d.db"
    cli(main, capsys, "import", "--db", db, "--labels", EXAMPLE / "golden.yaml", "--annotator", "ann")
    cli(main, capsys, "import", "--db", db, "--labels", EXAMPLE / "truth.qrels", "--annotator", "bob")
    golden_path = tmp_path / "g.yaml"
    assert (
        cli(
            main, capsys, "export", "--db", db, "--format", "golden", "--annotator", "ann", "-o", golden_path
        )[0]
        == 0
    )
    exported = read_golden(golden_path)
    original = read_golden(EXAMPLE / "golden.yaml")
    assert exported.grades == original.grades and exported.texts == original.texts
    # labels imported from a golden.yaml keep what that file said of them (who judged, what they saw)
    assert exported.meta["judged_by"] == ["worked-example"] and exported.meta["grade_scale"][3].startswith(
        "perfectly relevant"
    )
    # the median of two people: ann's grade or bob's, the lower of the two middle values
    both = tmp_path / "both.qrels"
    cli(main, capsys, "export", "--db", db, "--format", "qrels", "-o", both)
    assert read_qrels(both).grades["q_broad"]["x1"] == 1  # only bob judged x1
    csv_path = tmp_path / "l.csv"
    code, out, _ = cli(main, capsys, "export", "--db", db, "--format", "csv", "-o", csv_path)
    rows = list(csv.DictReader(csv_path.open()))
    assert code == 0 and len(rows) == 17 + 21 and out.startswith("wrote 38 label rows")
    assert {r["annotator"] for r in rows} == {"ann", "bob"} and rows[0]["rubric"] == "relevance"


def test_export_takes_the_options_its_format_declares(tmp_path, capsys) -> None:
    """--judge goes with the formats whose declaration (annotation.exports.FORMATS) takes a judge;
    --threshold is left out of the formats that hold grades whole."""
    db = tmp_path / "d.db"
    cli(main, capsys, "import", "--db", db, "--labels", EXAMPLE / "truth.qrels", "--annotator", "bob")
    for fmt in ("golden", "csv", "ragas", "beir"):
        code, out, err = cli(
            main, capsys, "export", "--db", db, "--format", fmt, "--judge", "0b18", "-o", tmp_path / fmt
        )
        assert (code, out, err) == (2, "", "error: --judge goes with --format qrels|phoenix\n")
        assert not (tmp_path / fmt).exists()
    plain, any_threshold = tmp_path / "plain.qrels", tmp_path / "t3.qrels"
    assert cli(main, capsys, "export", "--db", db, "--format", "qrels", "-o", plain)[0] == 0
    code, out, _ = cli(
        main, capsys, "export", "--db", db, "--format", "qrels", "--threshold", "3", "-o", any_threshold
    )
    assert code == 0 and plain.read_bytes() == any_threshold.read_bytes()


def test_golden_round_trips(tmp_path, capsys) -> None:
    """golden.yaml in, golden.yaml out: the same grades, texts and metadata; and
    the exported file, imported and exported again, comes back byte for byte."""
    first_db, second_db = tmp_path / "a.db", tmp_path / "b.db"
    cli(main, capsys, "import", "--db", first_db, "--labels", EXAMPLE / "golden.yaml", "--annotator", "ann")
    once = tmp_path / "once.yaml"
    cli(main, capsys, "export", "--db", first_db, "--format", "golden", "--annotator", "ann", "-o", once)
    original, exported = read_golden(EXAMPLE / "golden.yaml"), read_golden(once)
    assert exported.grades == original.grades and exported.texts == original.texts
    # name, description, created, judged_by, shown, grade scale; and the threshold, 1 where it gave none
    assert exported.meta == {**original.meta, "min_grade": 1}
    cli(main, capsys, "import", "--db", second_db, "--labels", once, "--annotator", "ann")
    twice = tmp_path / "twice.yaml"
    cli(main, capsys, "export", "--db", second_db, "--format", "golden", "--annotator", "ann", "-o", twice)
    assert twice.read_bytes() == once.read_bytes()


def test_pool_prints_what_each_run_found_alone(tmp_path, capsys) -> None:
    db = tmp_path / "d.db"
    assert cli(denominator_main, capsys, "demo", "--db", db)[0] == 0
    code, out, err = cli(main, capsys, "pool", "--db", db, "--depth", "5")
    assert code == 0
    assert out.splitlines() == [
        "pool of depth 5 over runs retriever: 20 (query, chunk) pairs, 10 already judged, 0 new items",
        "  retriever: 20 pairs in its top 5; found 4 of the 5 judged-relevant chunks, 4 of them found by no other run",
    ]
    # one run pooled: recall against these labels is recall against that run's own finds
    assert err.splitlines() == [
        f"database: {db}",
        "warning: the pool holds one run (retriever): recall against these labels is recall against what that "
        "run itself found; pool several systems (import another run, or python -m annotation baseline for BM25)",
    ]
    assert cli(main, capsys, "baseline", "--db", db, "--name", "bm25")[0] == 0
    code, _, err = cli(main, capsys, "pool", "--db", db, "--depth", "5")
    assert code == 0 and err == f"database: {db}\n"  # two runs pooled: no warning
