"""golden.yaml in the essay's shape (a bare list of {query, grades, id?}), the TREC writers'
refusal of ids with whitespace, and what a golden.yaml export says of where its labels came from.

The essay set below, by hand: "how do I store maize against aflatoxin?" grades s1 3, s2 2,
x4 0 (|Rel| = 2 at min_grade 1); q7 ("what eats maize?") grades m1 1 (|Rel| = 1). The run
ranks s2, x4, s1 for the first (named by its text) and m9, m1 for q7. At k = 2:
P@2 = 1/2 and 1/2; R@2 = 1/2 (s2 of s1, s2) and 1/1; RR = 1 and 1/2, so MRR = 3/4;
AP = (1/1 + 2/3) / 2 = 5/6 and (1/2) / 1 = 1/2.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

from annotation.__main__ import main as annotation_main
from annotation.cli_base import shown_db
from annotation.exports import export_golden, export_qrels, export_trec
from annotation.exports.label_files import MADE_HERE_SHOWN
from annotation.formats.golden import DEFAULT_GRADE_SCALE, read_golden
from annotation.formats.trec import write_qrels, write_run
from annotation.model import InvalidGolden, Qrels, Run, UnwritableId
from annotation.rubrics import RELEVANCE
from annotation.store import Store, postgres
from calibration.__main__ import main as calibration_main
from tests.conftest import EXAMPLE, cli

STORE_Q = "how do I store maize against aflatoxin?"
ESSAY = f"""\
- query: "{STORE_Q}"
  grades: {{s1: 3, s2: 2, x4: 0}}
- query: "what eats maize?"
  id: q7
  grades: {{m1: 1}}
"""
# the same content in the mapping shape
MAPPING = f"""\
queries:
- id: "{STORE_Q}"
  text: "{STORE_Q}"
  grades: {{s1: 3, s2: 2, x4: 0}}
- id: q7
  text: what eats maize?
  grades: {{m1: 1}}
"""
RUN = (
    json.dumps({"query_id": STORE_Q, "ranking": ["s2", "x4", "s1"]})
    + "\n"
    + json.dumps({"query_id": "q7", "ranking": ["m9", "m1"]})
    + "\n"
)


def note_of(path, unnamed: int, total: int) -> str:
    have = "has no id; its text serves" if unnamed == 1 else "have no id; their text serves"
    return (
        f"{path}: {unnamed} of {total} queries {have} as the query id (a run's query_id must be that "
        "text; TREC qrels and runs need an id: without spaces)"
    )


# ---------------------------------------------------------------- reading the essay's shape


def test_the_essay_list_reads_as_the_mapping_does(tmp_path) -> None:
    path = tmp_path / "golden.yaml"
    path.write_text(ESSAY)
    essay = read_golden(path)
    assert essay.grades == {STORE_Q: {"s1": 3, "s2": 2, "x4": 0}, "q7": {"m1": 1}}
    assert essay.texts == {STORE_Q: STORE_Q, "q7": "what eats maize?"}
    assert essay.meta == {"grade_scale": DEFAULT_GRADE_SCALE}
    assert essay.notes == [note_of(path, 1, 2)]
    path.write_text(MAPPING)
    mapping = read_golden(path)
    assert mapping == essay and mapping.qids == essay.qids
    assert mapping.notes == []


def test_an_essay_list_with_every_id_has_no_note_and_none_gives_one(tmp_path) -> None:
    with_ids = tmp_path / "ids.yaml"
    with_ids.write_text("- query: maize pests\n  id: q1\n  grades: {d1: 2}\n")
    assert read_golden(with_ids).grades == {"q1": {"d1": 2}} and read_golden(with_ids).notes == []
    without = tmp_path / "texts.yaml"
    without.write_text("- query: maize pests\n  grades: {d1: 2}\n- query: milk yield\n  grades: {d2: 0}\n")
    golden = read_golden(without)
    assert golden.grades == {"maize pests": {"d1": 2}, "milk yield": {"d2": 0}}
    assert golden.notes == [note_of(without, 2, 2)]


ESSAY_ERRORS = [
    (
        "duplicate text",
        "- query: a\n  grades: {d1: 1}\n- query: a\n  grades: {d1: 2}\n",
        ":3: [1].query: 'a' already given on line 1; expected each query once",
    ),
    (
        "an id that is another query's text",
        "- query: q7\n  grades: {d1: 1}\n- query: b\n  id: q7\n  grades: {d1: 2}\n",
        ":4: [1].id: query 'q7' already given on line 1; expected each id once "
        "(a query without an id is named by its text)",
    ),
    (
        "duplicate id",
        "- query: a\n  id: q1\n  grades: {}\n- query: b\n  id: q1\n  grades: {}\n",
        ":5: [1].id: query 'q1' already given on line 2; expected each id once "
        "(a query without an id is named by its text)",
    ),
    (
        "grade off the scale",
        "- query: a\n  grades: {d1: 1, d2: 4}\n",
        ":2: [0].grades.d2: expected a grade in the grade_scale 0-3 (or negative), got 4",
    ),
    (
        "grade 1.5",
        "- query: a\n  grades: {d1: 1.5}\n",
        ":2: [0].grades.d1: expected an integer grade, got '1.5'",
    ),
    (
        "unknown key",
        "- query: a\n  text: b\n  grades: {d1: 1}\n",
        ":2: [0].text: unknown key; expected query, grades and an optional id",
    ),
    ("no grades", "- query: a\n", ":1: [0].grades: missing; expected {doc_id: grade}"),
    ("empty text", '- query: " "\n  grades: {d1: 1}\n', ":1: [0].query: expected the query's text"),
    ("an item not a mapping", "- a\n", ":1: [0]: expected a mapping {query, grades}"),
    ("an empty list", "[]\n", ":1: an empty list; expected at least one {query, grades}"),
]


@pytest.mark.parametrize(("case", "content", "message"), ESSAY_ERRORS, ids=[c[0] for c in ESSAY_ERRORS])
def test_the_essay_list_is_read_as_strictly(tmp_path, case, content, message) -> None:
    path = tmp_path / "golden.yaml"
    path.write_text(content)
    with pytest.raises(InvalidGolden) as info:
        read_golden(path)
    assert str(info.value) == f"{path}{message}"


def test_the_essay_shape_through_calibration_metrics(tmp_path, capsys) -> None:
    """A run names the query without an id by its text; the metrics are the hand-computed ones."""
    golden, run = tmp_path / "golden.yaml", tmp_path / "run.jsonl"
    golden.write_text(ESSAY)
    run.write_text(RUN)
    code, out, _ = cli(calibration_main, capsys, "metrics", golden, run, "-k", "2", "--format", "json")
    assert code == 0
    result = json.loads(out)
    assert result["n_queries"] == 2 and result["missing_from_run"] == 0 and result["not_in_qrels"] == 0
    by_text = result["queries"][STORE_Q]
    assert (by_text["rel"], by_text["P@2"], by_text["R@2"], by_text["RR"]) == (2, 0.5, 0.5, 1.0)
    assert by_text["AP"] == pytest.approx(5 / 6)
    q7 = result["queries"]["q7"]
    assert (q7["rel"], q7["P@2"], q7["R@2"], q7["RR"], q7["AP"]) == (1, 0.5, 1.0, 0.5, 0.5)
    assert result["mean"]["MRR"] == 0.75 and result["mean"]["R@2"] == 0.75


def test_calibration_metrics_says_on_stderr_that_texts_name_queries(tmp_path, capsys) -> None:
    golden, run = tmp_path / "golden.yaml", tmp_path / "run.jsonl"
    golden.write_text(ESSAY)
    run.write_text(RUN)
    code, _, err = cli(calibration_main, capsys, "metrics", golden, run, "-k", "2")
    assert code == 0 and err == f"note: {note_of(golden, 1, 2)}\n"


def test_import_says_once_that_texts_name_queries(db_at, tmp_path, capsys) -> None:
    golden, db = tmp_path / "golden.yaml", db_at
    golden.write_text(ESSAY)
    code, out, err = cli(
        annotation_main, capsys, "import", "--db", db, "--labels", golden, "--annotator", "e"
    )
    created = "" if postgres.is_url(db) else " (created)"  # a PostgreSQL database is there before
    assert code == 0 and err == f"database: {shown_db(db)}{created}\n"
    assert out.splitlines()[:2] == [
        f"labels {golden} by 'e': 4 labels, 0 unchanged",
        f"  note: {note_of(golden, 1, 2)}",
    ]
    with Store(db) as store:
        assert store.export_qrels("e").grades == {STORE_Q: {"s1": 3, "s2": 2, "x4": 0}, "q7": {"m1": 1}}


def test_an_off_scale_grade_of_the_essay_shape_names_its_line(db_at, tmp_path, capsys) -> None:
    """The store takes grades 0-3; the reader also takes negative ones: the refusal finds the line."""
    golden = tmp_path / "golden.yaml"
    golden.write_text("- query: a b\n  grades: {d1: 1}\n- query: c d\n  grades:\n    d1: 2\n    d2: -1\n")
    code, out, err = cli(
        annotation_main, capsys, "import", "--db", db_at, "--labels", golden, "--annotator", "e"
    )
    assert (code, out) == (2, "")
    assert err.startswith(
        f"error: {golden}:6: query 'c d' chunk 'd2': grade -1 is not on the relevance scale"
    )


# ---------------------------------------------------------------- ids with whitespace


def another_db(db_at: str, request, tmp_path: Path) -> str:
    """A second new store on db_at's backend: another PostgreSQL database, or another file."""
    if postgres.is_url(db_at):
        return request.getfixturevalue("postgres_server").database()
    return str(tmp_path / "other.db")


def test_writers_refuse_a_query_named_by_its_text(tmp_path) -> None:
    qrels_path, run_path = tmp_path / "out.qrels", tmp_path / "out.run"
    with pytest.raises(UnwritableId) as info:
        write_qrels(Qrels(grades={"q1": {"d1": 1}, STORE_Q: {"s1": 3}}), qrels_path)
    assert str(info.value) == (
        f"{qrels_path}: qid: query id '{STORE_Q}' has whitespace; a TREC qrels line cannot hold it: "
        "give the queries ids without whitespace (id: in golden.yaml)"
    )
    with pytest.raises(
        UnwritableId, match=re.escape(f"qid: query id '{STORE_Q}' has whitespace; a TREC run")
    ):
        write_run(Run.from_rankings({"q1": ["d1"], STORE_Q: ["s1"]}), run_path)
    assert not qrels_path.exists() and not run_path.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # no temporary file either


def test_exports_refuse_ids_with_whitespace_in_one_line(db_at, request, tmp_path, capsys) -> None:
    golden, run, db = tmp_path / "golden.yaml", tmp_path / "run.jsonl", db_at
    golden.write_text(ESSAY)
    run.write_text(RUN)
    assert cli(annotation_main, capsys, "import", "--db", db, "--labels", golden, "--annotator", "e")[0] == 0
    out = tmp_path / "out.qrels"
    code, stdout, err = cli(annotation_main, capsys, "export", "--db", db, "--format", "qrels", "-o", out)
    assert (code, stdout) == (2, "")
    assert err == (
        f"error: {out}: qid: query id '{STORE_Q}' has whitespace; a TREC qrels line cannot hold it: "
        "give the queries ids without whitespace (id: in golden.yaml)\n"
    )
    assert not out.exists()
    # the labels of q7 only, and a run whose query is named by its text: the run's line is refused
    ids_only, db2 = tmp_path / "ids.yaml", another_db(db_at, request, tmp_path)
    ids_only.write_text("- query: what eats maize?\n  id: q7\n  grades: {m1: 1}\n")
    for args in (("--labels", ids_only, "--annotator", "e"), ("--run", run, "--name", "bm25")):
        assert cli(annotation_main, capsys, "import", "--db", db2, *args)[0] == 0
    folder = tmp_path / "trec"
    code, stdout, err = cli(annotation_main, capsys, "export", "--db", db2, "--format", "trec", "-o", folder)
    assert (code, stdout) == (2, "")
    assert err == (
        f"error: {folder}: qid: query id '{STORE_Q}' has whitespace; a TREC run line cannot hold it: "
        "give the queries ids without whitespace (id: in golden.yaml)\n"
    )
    assert not folder.exists() and sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []
    with Store(db2) as store:  # the same store exports golden.yaml, which holds any id
        export_golden(store, tmp_path / "g.yaml")
    assert read_golden(tmp_path / "g.yaml").grades == {"q7": {"m1": 1}}


# ---------------------------------------------------------------- what a golden.yaml export says


def test_an_export_of_imported_qrels_says_shown_unknown(db_at, tmp_path) -> None:
    source = tmp_path / "nist.qrels"
    source.write_text("q1 0 d1 3\nq1 0 d2 0\nq2 0 d3 1\n")
    with Store(db_at) as store:
        store.import_labels(
            Qrels(grades={"q1": {"d1": 3, "d2": 0}, "q2": {"d3": 1}}, path=str(source)), "nist"
        )
        out = tmp_path / "golden.yaml"
        summary = export_golden(store, out)
    written = yaml.safe_load(out.read_text())
    assert written["shown"] == "unknown"
    assert written["grade_scale"] == {0: "unknown", 1: "unknown", 2: "unknown", 3: "unknown"}
    assert written["min_grade"] == 1 and written["judged_by"] == ["nist"]
    text = out.read_text()
    assert MADE_HERE_SHOWN not in text and not any(wording in text for wording in RELEVANCE.scale.values())
    assert summary == (
        f"wrote 3 judgments over 2 queries to {out}; the file names annotators (nist) in judged_by: anonymize to write pseudonyms instead; "
        "3 of 3 labels imported (nist); unknown, as their "
        "files did not say: what 3 of them were shown (shown), what the grades of 3 mean (grade_scale)"
    )
    back = read_golden(out)  # the file reads back, its grades whole
    assert back.grades == {"q1": {"d1": 3, "d2": 0}, "q2": {"d3": 1}} and back.meta["shown"] == "unknown"


def app_labelled_store(path) -> Store:
    """A store where ann graded q1/d1 3 and q1/d2 0 on the labelling page (Store.add_label)."""
    store = Store(path)
    store.add_annotator("ann")
    for chunk, grade in (("d1", 3), ("d2", 0)):
        store.ensure_ids("queries", {"q1"})
        store.ensure_ids("chunks", {chunk})
        store.add_label(store.ensure_item("chunk", query_id="q1", chunk_id=chunk), "ann", grade, shown=None)
    return store


def test_an_export_of_labels_made_here_keeps_the_pages_wording(db_at, tmp_path) -> None:
    with app_labelled_store(db_at) as store:
        out = tmp_path / "golden.yaml"
        summary = export_golden(store, out)
    written = yaml.safe_load(out.read_text())
    assert written["shown"] == (
        "query text and chunk text only (blind: no ranks, scores, retriever names or other labels)"
    )
    assert written["grade_scale"] == RELEVANCE.scale and written["min_grade"] == 1
    assert written["judged_by"] == ["ann"] and written["queries"] == [
        {"id": "q1", "grades": {"d1": 3, "d2": 0}}
    ]
    assert (
        summary
        == f"wrote 2 judgments over 1 query to {out}; the file names annotators (ann) in judged_by: anonymize to write pseudonyms instead"
    )


def test_an_export_of_labels_made_here_and_imported_says_both(db_at, tmp_path) -> None:
    with app_labelled_store(db_at) as store:
        store.import_labels(Qrels(grades={"q2": {"d3": 1}}, path="nist.qrels"), "nist")
        out = tmp_path / "golden.yaml"
        summary = export_golden(store, out)
    written = yaml.safe_load(out.read_text())
    assert written["shown"] == (
        f"mixed: {MADE_HERE_SHOWN} for 2 labels by ann made in this app; "
        "unknown for 1 label by nist imported from nist.qrels"
    )
    assert written["grade_scale"][3] == (
        f"mixed: {RELEVANCE.scale[3]} for 2 labels by ann made in this app; "
        "unknown for 1 label by nist imported from nist.qrels"
    )
    assert written["min_grade"] == 1 and written["judged_by"] == ["ann", "nist"]
    assert summary == (
        f"wrote 3 judgments over 2 queries to {out}; the file names annotators (ann, nist) in judged_by "
        "and what shown and grade_scale say of each origin: anonymize to write pseudonyms instead; "
        "1 of 3 labels imported (nist); unknown, as their "
        "files did not say: what 1 of them were shown (shown), what the grades of 1 mean (grade_scale)"
    )
    assert read_golden(out).grades == {"q1": {"d1": 3, "d2": 0}, "q2": {"d3": 1}}


def test_an_export_of_a_golden_file_keeps_what_it_said(db_at, tmp_path, capsys) -> None:
    """A golden.yaml's own shown, grade_scale and min_grade come back; a label corrected on the
    page afterwards makes the file mixed, and says so."""
    source = tmp_path / "in.yaml"
    source.write_text(
        "shown: the top 5 of bm25, with scores\nmin_grade: 2\ngrade_scale: {0: no, 1: maybe, 2: yes}\n"
        "queries:\n- id: q1\n  grades: {d1: 2, d2: 0}\n"
    )
    db = db_at
    assert (
        cli(annotation_main, capsys, "import", "--db", db, "--labels", source, "--annotator", "ann")[0] == 0
    )
    once = tmp_path / "once.yaml"
    with Store(db) as store:
        export_golden(store, once)
        written = yaml.safe_load(once.read_text())
        assert written["shown"] == "the top 5 of bm25, with scores" and written["min_grade"] == 2
        assert written["grade_scale"] == {0: "no", 1: "maybe", 2: "yes"}
        store.add_label(store.chunk_item("q1", "d2"), "ann", 1)  # a correction on the page
        again = tmp_path / "again.yaml"
        summary = export_golden(store, again)
    written = yaml.safe_load(again.read_text())
    assert written["shown"] == (
        f"mixed: {MADE_HERE_SHOWN} for 1 label by ann made in this app; "
        f"the top 5 of bm25, with scores for 1 label by ann imported from {source}"
    )
    assert written["grade_scale"][0] == (
        f"mixed: {RELEVANCE.scale[0]} for 1 label by ann made in this app; "
        f"no for 1 label by ann imported from {source}"
    )
    assert written["grade_scale"][3] == (
        f"mixed: {RELEVANCE.scale[3]} for 1 label by ann made in this app; "
        f"unknown for 1 label by ann imported from {source}"
    )
    # the file's min_grade 2 and the page's 1: the default is written, and the summary says so
    assert written["min_grade"] == 1
    assert summary.endswith(
        "; warning: its labels come with min_grade 1 and 2 (1 where made here or imported without one); "
        "wrote min_grade 1"
    )
    assert read_golden(again).grades == {"q1": {"d1": 2, "d2": 1}}


def test_the_worked_example_round_trips_with_its_min_grade(db_at, tmp_path, capsys) -> None:
    db = db_at
    cli(
        annotation_main, capsys, "import", "--db", db, "--labels", EXAMPLE / "golden.yaml", "--annotator", "w"
    )
    out = tmp_path / "g.yaml"
    code, stdout, _ = cli(annotation_main, capsys, "export", "--db", db, "--format", "golden", "-o", out)
    assert code == 0 and stdout == (
        f"wrote 17 judgments over 4 queries to {out}; the file names annotators (worked-example) in judged_by: anonymize to write pseudonyms instead; "
        "17 of 17 labels imported (w): shown and "
        "grade_scale as their files said\n"
    )
    original, exported = read_golden(EXAMPLE / "golden.yaml"), read_golden(out)
    assert exported.meta == {**original.meta, "min_grade": 1} and exported.grades == original.grades
    with Store(db) as store:  # qrels of the same labels: the ids have no whitespace
        assert export_qrels(store, tmp_path / "q.qrels").startswith("wrote 17 judgments")
        assert export_trec(store, tmp_path / "trec").startswith(f"wrote TREC folder {tmp_path / 'trec'}")
