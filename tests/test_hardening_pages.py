"""Issue #38, item 11, the pages: a stored value in the Metrics page's history is text, never
Markdown; the store's path or host is named to no one who is not a signed-in admin; an upload's
name no file can have is refused in words; a zipped BEIR folder's entries are counted before its
directory is read."""

from __future__ import annotations

import io
import re
import sqlite3
import struct
import zipfile
from pathlib import Path

import pytest

from annotation.formats.beir import ZIP_MAX_ENTRIES, InvalidBeir, unpack_beir_zip
from annotation.formats.textio import upload_file_name
from annotation.render import plain
from annotation.store import Store, StoreError
from calibration.__main__ import main as calibration_main
from tests.conftest import EXAMPLE, app_test, page_test

BEACON = "![x](http://127.0.0.1:1/beacon)"
ACTIVE = re.compile(r"(?<!\\)!\[|(?<!\\)\]\(")  # an image or a link Markdown would act on


def markdown_strings(at) -> list[str]:
    """Every string the page hands to Streamlit's Markdown renderer (tables' cells included)."""
    parts: list[str] = []
    for kind in ("markdown", "caption", "error", "warning", "info", "success", "subheader", "title"):
        parts += [str(e.value) for e in getattr(at, kind)]
    for table in at.table:
        parts += [str(v) for v in table.value.to_numpy().ravel()]
    return parts


def table_with(at, column: str):
    return next(t.value for t in at.table if column in t.value.columns)


# ---------------------------------------------------------------- the history's stored values


def _record_hostile(db, capsys, change) -> None:
    """One check recorded by the CLI, then a second whose stored report ``change`` alters."""
    code = calibration_main(
        [
            "check",
            str(EXAMPLE / "golden.yaml"),
            str(EXAMPLE / "run.jsonl"),
            "-k",
            "5",
            "--record",
            "--name",
            "r",
            "--db",
            str(db),
        ]
    )
    capsys.readouterr()
    assert code in (0, 1)
    with Store(db) as store:
        entry = store.check_report(1)
        assert entry is not None
        report = entry["report"]
        change(report)
        store.record_check(
            "r",
            report,
            golden_hash=entry["golden_hash"] if "hash" not in report else report.pop("hash"),
            golden_labels=entry["golden_labels"],
            run_hash=entry["run_hash"],
            created_at=report.pop("created", None),
        )


def test_a_stored_value_in_the_history_and_its_diff_is_text(demo_db, capsys) -> None:
    """A recorded check written by something else: its time, label hash, failed rules and a query's
    findings hold an image; the history table and the per-query diff show each as text."""

    def hostile(report: dict) -> None:
        for rule in report["rules"]:
            rule["rule"], rule["passed"] = BEACON, False
        report["queries"]["q_faw"]["findings"] = [BEACON]
        report["hash"], report["created"] = BEACON, BEACON

    _record_hostile(demo_db, capsys, hostile)
    at = app_test().run()
    at.number_input(key="metrics:k").set_value(5).run()
    assert not at.exception, [e.value for e in at.exception]
    assert not [s for s in markdown_strings(at) if ACTIVE.search(s)]
    history = table_with(at, "recorded (UTC)").set_index("check")
    assert plain(history.loc["2", "recorded (UTC)"]) == BEACON[:19]  # the time's first 19 characters
    assert plain(history.loc["2", "labels"]) == f"{BEACON[:8]} (17) changed"
    assert plain(history.loc["2", "result"]).startswith(f"FAILED: {BEACON}, {BEACON}")
    diff = table_with(at, "nDCG@k Δ")
    diff = diff.set_index(diff["query"].map(plain))
    assert plain(diff.loc["q_faw", "findings"]).startswith(f"+{BEACON} -")


def test_a_stored_report_of_the_wrong_shape_is_named_not_a_bug(demo_db, capsys) -> None:
    """A mean stored as text, or a bar that is no number: the history names the check it cannot
    read, or leaves the bar undrawn; the page never stops."""

    def text_mean(report: dict) -> None:
        report["summary"]["rr"]["mean"] = BEACON

    _record_hostile(demo_db, capsys, text_mean)
    at = app_test().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert "Check 2 (r): its report cannot be read (not a check report): skipped." in [
        plain(c.value) for c in at.caption
    ]

    def odd_bar(report: dict) -> None:
        report["policy"]["rules"]["stage1_recall"] = f"> {BEACON}"

    _record_hostile(demo_db, capsys, odd_bar)  # checks 3 and 4, both readable
    at = app_test().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert list(table_with(at, "recorded (UTC)")["check"]) == ["1", "3", "4"]


def test_a_stored_import_time_is_text_on_the_data_page(tmp_path, monkeypatch) -> None:
    """The imports table's time is a stored string like the history's: escaped, never Markdown."""
    db = tmp_path / "d.db"
    monkeypatch.setenv("DENOMINATOR_DB", str(db))
    Store(db).close()
    with sqlite3.connect(db) as conn:
        conn.execute(
            "INSERT INTO imports (name, kind, who, source, created_at) VALUES ('n', 'queries', 'w', 's', ?)",
            [BEACON],
        )
    at = page_test("denominator.ui.data.render_data_page", state={"label:annotator": "ann"}).run()
    assert not at.exception, [e.value for e in at.exception]
    assert not [s for s in markdown_strings(at) if ACTIVE.search(s)]
    imports = table_with(at, "when (UTC)")
    assert plain(imports.loc[0, "when (UTC)"]) == BEACON[:19]


# ---------------------------------------------------------------- the store down, before sign-in


@pytest.mark.parametrize(
    "where",
    ["sqlite", "postgresql://reader:pw@store-host.invalid:5432/secretdb"],
)
def test_the_store_down_names_no_path_or_host_before_sign_in(where, tmp_path, monkeypatch, caplog) -> None:
    if where == "sqlite":
        folder = tmp_path / "secret-folder"
        folder.mkdir()
        (folder / "store.db").write_bytes(b"this is no database" * 100)
        where = str(folder / "store.db")
    monkeypatch.setenv("DENOMINATOR_DB", where)
    at = app_test().run()
    assert not at.exception
    [said] = [plain(e.value) for e in at.error]
    assert said == (
        "The store is unavailable: its details are in the server's log. Nothing was lost and you stay "
        "signed in: reload the page when it is back."
    )
    assert "secret" not in said and "store-host" not in said and "tmp" not in said
    # the operator still finds the reason in the server's log
    assert any("secret" in r.getMessage() for r in caplog.records)


def test_a_signed_in_admin_reads_the_stores_own_words(demo_db, monkeypatch) -> None:
    import denominator.ui.metrics

    def down() -> None:
        raise StoreError("/srv/stores/denominator.db: cannot write (disk I/O error); nothing was written")

    monkeypatch.setattr(denominator.ui.metrics, "render_metrics_page", down)
    at = app_test().run()  # the demo has no tokens: local mode, an admin
    [said] = [plain(e.value) for e in at.error]
    assert said.startswith("The store is unavailable: /srv/stores/denominator.db: cannot write")


# ---------------------------------------------------------------- an upload's name


NAMES = {
    "..": "'..' names a folder, not a file",
    "run\0.jsonl": "it holds a NUL character",
    "r" * 300 + ".jsonl": "it is 306 bytes long; the limit is 255 bytes",
}


@pytest.mark.parametrize("name", list(NAMES), ids=["dotdot", "nul", "long"])
def test_an_upload_name_no_file_can_have_is_refused_on_the_metrics_page(name) -> None:
    at = app_test().run()
    at.radio(key="metrics:source").set_value("your files").run()
    at.file_uploader(key="metrics:qrels_upload").set_value(
        ("golden.yaml", (EXAMPLE / "golden.yaml").read_bytes(), "text/plain")
    )
    at.file_uploader(key="metrics:run_upload").set_value(
        (name, (EXAMPLE / "run.jsonl").read_bytes(), "text/plain")
    )
    at.run()
    assert not at.exception
    [said] = [plain(e.value) for e in at.error]
    assert "a bug" not in said
    assert said.endswith(
        f"not a name a file can be saved under ({NAMES[name]}): rename the file and upload it again"
    )


@pytest.mark.parametrize("name", list(NAMES), ids=["dotdot", "nul", "long"])
def test_an_upload_name_no_file_can_have_is_refused_on_the_data_page(name, tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("DENOMINATOR_DB", str(tmp_path / "d.db"))
    Store(tmp_path / "d.db").close()
    at = page_test("denominator.ui.data.render_data_page", state={"label:annotator": "ann"}).run()
    at.file_uploader(key="data:up:run").set_value((name, (EXAMPLE / "run.jsonl").read_bytes(), "text/plain"))
    at.button(key="FormSubmitter:data:import-Import").click().run()
    assert not at.exception
    [said] = [plain(e.value) for e in at.error]
    assert said.startswith("Nothing was imported:") and "a bug" not in said
    assert f"({NAMES[name]}): rename the file" in said


def test_upload_file_name_keeps_an_ordinary_name() -> None:
    assert upload_file_name("run.jsonl") == "run.jsonl"
    assert upload_file_name("folder/run.tsv") == "run.tsv"
    assert upload_file_name("") == "upload"
    assert upload_file_name("é" * 126 + ".ts") == "é" * 126 + ".ts"  # 255 bytes in UTF-8
    with pytest.raises(ValueError, match=r"it is 256 bytes long; the limit is 255 bytes"):
        upload_file_name("é" * 126 + ".tsv")


# ---------------------------------------------------------------- a zip's entries


def _many(entries: int) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("corpus.jsonl", '{"_id": "1", "text": "t"}\n')
        for i in range(entries - 1):
            archive.writestr(f"e{i}", "")
    return buffer.getvalue()


def test_a_zip_of_too_many_entries_is_refused_before_its_directory_is_read(tmp_path) -> None:
    (tmp_path / "many.zip").write_bytes(_many(ZIP_MAX_ENTRIES + 1))
    with pytest.raises(InvalidBeir) as caught:
        unpack_beir_zip(tmp_path / "many.zip", tmp_path / "out", name="many.zip")
    assert str(caught.value).startswith("many.zip: holds 1,001 entries (")
    assert "the limit is 1,000 entries" in str(caught.value)
    assert not (tmp_path / "out").exists()


def test_a_zip_whose_last_record_undercounts_is_refused_too(tmp_path) -> None:
    """The last record says 1 entry; the directory holds 1,500 (zipfile reads the directory by its
    size, not its count): counted again once read, refused before anything is unpacked."""
    data = bytearray(_many(1500))
    end = data.rfind(b"PK\x05\x06")
    struct.pack_into("<HH", data, end + 8, 1, 1)
    (tmp_path / "liar.zip").write_bytes(bytes(data))
    with pytest.raises(InvalidBeir, match=r"^liar\.zip: holds 1,500 entries; the limit is 1,000$"):
        unpack_beir_zip(tmp_path / "liar.zip", tmp_path / "out", name="liar.zip")
    assert not (tmp_path / "out").exists()


def test_the_data_page_refuses_a_zip_of_200000_empty_entries(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("DENOMINATOR_DB", str(tmp_path / "d.db"))
    Store(tmp_path / "d.db").close()
    at = page_test("denominator.ui.data.render_data_page", state={"label:annotator": "ann"}).run()
    at.file_uploader(key="data:up:beir").set_value(("many.zip", _many(200_000), "application/zip"))
    at.button(key="FormSubmitter:data:import-Import").click().run()
    assert not at.exception
    [said] = [plain(e.value) for e in at.error]
    assert said.startswith("Nothing was imported: many.zip: holds 200,000 entries (")
    assert "the limit is 1,000 entries" in said
    with Store(tmp_path / "d.db") as store:
        assert store.counts()["chunks"] == 0


def test_the_limits_are_in_the_docs() -> None:
    text = (Path(__file__).resolve().parent.parent / "docs" / "formats.md").read_text(encoding="utf-8")
    assert f"at most {ZIP_MAX_ENTRIES:,} entries" in text and "at most 255 bytes in UTF-8" in text
