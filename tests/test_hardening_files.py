"""Issue #38, items 7, 9, 10 and 11's golden.yaml text limit: the writers' files and folders, the
holes' judged@k, NUL characters in trace exports, and golden.yaml's query texts.

- 7: ``write_atomic`` and the folder export refuse a symbolic link and anything but a regular file
  (a folder) at the output path before writing anything, never write through a link planted at a
  temporary name, and keep the permission bits of what they replace (before: ``--out`` onto a
  FIFO or a link replaced it with a regular file; a link at ``.<name>.tmp-<pid>`` was written
  through; a 0640 file came back 0644).
- 9: ``holes`` -k 20 on the worked example (rankings of 10): judged@20 is 17 / 40, the judged of
  the positions the rankings fill, as the audit's judged@k (before: 0.71 = 57 / 80, empty
  positions counted as judged); a repeated id's second slot is filled and not judged.
- 10: a NUL character anywhere in a Langfuse, LangSmith or OpenInference export is refused at read
  time naming the file, line and field, both backends unchanged (before: stored on SQLite).
- 11: a golden.yaml query text over the text limit is refused naming the file, line and query
  (before: stored).
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from annotation.__main__ import main as annotation_main
from annotation.exports import folders
from annotation.formats.atomic import write_atomic
from annotation.formats.golden import read_golden
from annotation.formats.textio import MAX_TEXT_BYTES_ENV
from annotation.model import FormatError, InvalidGolden
from annotation.store import Store
from annotation.trace_sources import InvalidTraceSource, read_trace_source
from calibration.__main__ import main as calibration_main
from tests.conftest import EXAMPLE, cli

ROOT = Path(__file__).resolve().parents[1]
FORMATS = ROOT / "tests" / "data" / "formats"
GOLDEN = EXAMPLE / "golden.yaml"
RUN = EXAMPLE / "run.jsonl"


# ---------------------------------------------------------------- 7: the atomic writer


def _secret(tmp_path: Path) -> Path:
    secret = tmp_path / "secret"
    secret.write_text("root only\n")
    secret.chmod(0o600)
    return secret


def test_a_fifo_target_is_refused_and_stays_a_fifo(tmp_path) -> None:
    fifo = tmp_path / "out.fifo"
    os.mkfifo(fifo)
    with pytest.raises(FormatError, match="is not a regular file .*refused, nothing was written"):
        write_atomic(fifo, "text\n")
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.fifo"]  # no temporary file left


def test_a_symlink_target_is_refused_and_what_it_points_to_is_untouched(tmp_path) -> None:
    secret = _secret(tmp_path)
    link = tmp_path / "out.txt"
    link.symlink_to(secret)
    with pytest.raises(FormatError, match="is a symbolic link; refused, nothing was written"):
        write_atomic(link, "overwritten\n")
    assert link.is_symlink() and os.readlink(link) == str(secret)
    assert secret.read_text() == "root only\n" and stat.S_IMODE(secret.stat().st_mode) == 0o600
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.txt", "secret"]


def test_a_device_is_refused_before_anything_is_written(monkeypatch) -> None:
    from annotation.formats import atomic

    def no_write(*args, **kwargs):
        raise AssertionError("a write was started for a device target")

    # whatever the writer does, it cannot create, rename or replace anything here
    monkeypatch.setattr(atomic, "create_exclusive", no_write, raising=False)
    monkeypatch.setattr(Path, "write_text", no_write)
    monkeypatch.setattr(os, "replace", no_write)
    monkeypatch.setattr(os, "rename", no_write)
    with pytest.raises(FormatError, match="/dev/null: is not a regular file"):
        write_atomic("/dev/null", "text\n")
    assert stat.S_ISCHR(os.lstat("/dev/null").st_mode)


def test_a_link_planted_at_the_old_temporary_name_is_not_written_through(tmp_path) -> None:
    secret = _secret(tmp_path)
    target = tmp_path / "out.txt"
    planted = tmp_path / f".out.txt.tmp-{os.getpid()}"  # the name the writer used before
    planted.symlink_to(secret)
    write_atomic(target, "the report\n")
    assert target.read_text() == "the report\n" and not target.is_symlink()
    assert secret.read_text() == "root only\n"
    assert planted.is_symlink()


def test_a_link_planted_at_the_random_temporary_name_is_passed_over(tmp_path, monkeypatch) -> None:
    from annotation.formats import atomic

    secret = _secret(tmp_path)
    names = iter(["aaaa", "bbbb"])
    monkeypatch.setattr(atomic, "random_part", lambda: next(names))
    planted = tmp_path / ".out.txt.aaaa.tmp"  # someone guessed the first name
    planted.symlink_to(secret)
    write_atomic(tmp_path / "out.txt", "the report\n")
    assert (tmp_path / "out.txt").read_text() == "the report\n"
    assert secret.read_text() == "root only\n" and planted.is_symlink()
    assert not (tmp_path / ".out.txt.bbbb.tmp").exists()  # renamed onto out.txt


def test_a_replaced_file_keeps_its_mode_and_a_new_one_gets_the_umasks(tmp_path) -> None:
    kept = tmp_path / "kept.txt"
    kept.write_text("old\n")
    kept.chmod(0o640)
    write_atomic(kept, "new\n")
    assert kept.read_text() == "new\n" and stat.S_IMODE(kept.stat().st_mode) == 0o640
    umask = os.umask(0o022)
    os.umask(umask)
    write_atomic(tmp_path / "new.txt", "new\n")
    assert stat.S_IMODE((tmp_path / "new.txt").stat().st_mode) == 0o666 & ~umask


@pytest.mark.parametrize("kind", ["fifo", "symlink"])
def test_holes_out_onto_a_fifo_or_a_link_one_line_exit_2_nothing_written(kind, tmp_path, capsys) -> None:
    secret = _secret(tmp_path)
    out = tmp_path / "sample.yaml"
    if kind == "fifo":
        os.mkfifo(out)
    else:
        out.symlink_to(secret)
    code, stdout, err = cli(
        calibration_main, capsys, "holes", GOLDEN, RUN, "-k", 5, "--sample", 2, "--out", out
    )
    assert code == 2 and stdout == "" and err.count("\n") == 1 and "Traceback" not in err, err
    assert err.startswith(f"error: {out}: ")
    if kind == "fifo":
        assert "is not a regular file (a device, a FIFO or a socket)" in err
        assert stat.S_ISFIFO(os.lstat(out).st_mode)
    else:
        assert "is a symbolic link; refused" in err and out.is_symlink()
    assert secret.read_text() == "root only\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["sample.yaml", "secret"]


FILES = {"qrels": "q1 0 d1 1\n", "sub/run.run": "q1 Q0 d1 1 1.0 run\n"}


def test_the_folder_export_does_not_write_through_a_link_at_its_old_stage_name(tmp_path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    target = tmp_path / "export"
    (tmp_path / f".export.tmp-{os.getpid()}").symlink_to(elsewhere)  # the stage's name before
    folders.write_folder(target, FILES)
    assert list(elsewhere.iterdir()) == []
    assert not target.is_symlink() and (target / "sub" / "run.run").read_text() == FILES["sub/run.run"]
    assert sorted(p.name for p in tmp_path.iterdir()) == [f".export.tmp-{os.getpid()}", "elsewhere", "export"]


def test_the_folder_export_refuses_a_link_and_a_fifo(tmp_path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    (real / "qrels").write_text("kept\n")
    link = tmp_path / "export"
    link.symlink_to(real)
    with pytest.raises(FormatError, match="is a symbolic link; refused"):
        folders.write_folder(link, FILES)
    assert link.is_symlink() and sorted(p.name for p in real.iterdir()) == ["qrels"]
    assert (real / "qrels").read_text() == "kept\n"
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(FormatError, match="is not a regular file .*expected a folder"):
        folders.write_folder(fifo, FILES)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["export", "fifo", "real"]


def test_the_folder_export_keeps_the_folders_and_its_files_modes(tmp_path) -> None:
    target = tmp_path / "export"
    folders.write_folder(target, FILES)
    target.chmod(0o750)
    (target / "qrels").chmod(0o600)
    folders.write_folder(target, {**FILES, "qrels": "q1 0 d1 2\n"})
    assert (target / "qrels").read_text() == "q1 0 d1 2\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o750
    assert stat.S_IMODE((target / "qrels").stat().st_mode) == 0o600
    assert sorted(p.name for p in tmp_path.iterdir()) == ["export"]  # no stage or old folder left


# ---------------------------------------------------------------- 9: judged@k


def test_holes_at_20_judged_is_the_rows_sum_over_the_positions_filled(capsys) -> None:
    # the worked example's rankings hold 10 chunks each; judged in them: q_broad 8 (m1 s1 m2 m3
    # m4 m5 m6 s2), q_faw, q_milk and q_store 3 each: 17 judged of the 40 positions filled
    code, out, err = cli(calibration_main, capsys, "holes", GOLDEN, RUN, "-k", 20)
    assert code == 0 and err == ""
    first = out.splitlines()[0]
    assert "23 of the 40 filled positions over 4 queries are unjudged (judged@20 0.42 = 17 / 40: " in first
    assert "40 of the 80 positions (4 queries x 20) are empty, the rankings being shorter than 20" in first
    assert "0.71" not in out and "57" not in out
    rows = {line.split()[0]: line.split()[1:4] for line in out.splitlines()[3:7]}
    assert rows == {
        "q_broad": ["8", "/", "10"],
        "q_faw": ["3", "/", "10"],
        "q_milk": ["3", "/", "10"],
        "q_store": ["3", "/", "10"],
    }
    assert "q_broad  8 / 10 (0.80)" in out
    code, out, _ = cli(calibration_main, capsys, "holes", GOLDEN, RUN, "-k", 20, "--format", "json")
    report = json.loads(out)
    assert (report["positions"], report["filled_positions"], report["judged_positions"]) == (80, 40, 17)
    assert report["unjudged_positions"] == 23 and report["repeated_positions"] == 0
    assert report["judged_at_k"] == pytest.approx(17 / 40)
    assert sum(row["judged"][0] for row in report["queries"].values()) == 17
    assert report["queries"]["q_broad"] == {
        "holes": ["x1", "d1"],
        "judged": [8],
        "filled": [10],
        "share": [0.1],
    }
    # the audit's judged@k, query by query
    code, out, _ = cli(calibration_main, capsys, "audit", GOLDEN, RUN, "-k", 20, "--format", "json")
    audit = json.loads(out)["queries"]
    assert {q: v["judged_at_k"] for q, v in audit.items()} == {
        q: row["judged"][0] / row["filled"][0] for q, row in report["queries"].items()
    }


def test_holes_at_5_full_rankings_say_what_they_said(capsys) -> None:
    code, out, _ = cli(calibration_main, capsys, "holes", GOLDEN, RUN, "-k", 5)
    assert "10 of 20 positions over 4 queries are unjudged (judged@5 0.50 = 10 / 20)." in out


def test_a_repeated_id_keeps_its_slot_and_is_not_judged(tmp_path, capsys) -> None:
    # dupe.jsonl: q_dupe ranks d1, d1, x3, d2, x1; d1 and d2 judged. At k 4: d1 judged, d1's
    # repeat (filled, not judged, not a hole), x3 a hole, d2 judged: 2 / 4 (before: 3 / 4)
    qrels = tmp_path / "dupe.qrels"
    qrels.write_text("q_dupe 0 d1 2\nq_dupe 0 d2 1\n")
    dupe = EXAMPLE / "dupe.jsonl"
    code, out, _ = cli(calibration_main, capsys, "holes", qrels, dupe, "-k", 4, "--format", "json")
    report = json.loads(out)
    assert report["queries"]["q_dupe"] == {"holes": ["x3"], "judged": [2], "filled": [4], "share": [0.25]}
    assert (report["judged_positions"], report["filled_positions"], report["repeated_positions"]) == (2, 4, 1)
    assert report["judged_at_k"] == 0.5
    code, out, _ = cli(calibration_main, capsys, "audit", qrels, dupe, "-k", 4, "--format", "json")
    assert json.loads(out)["queries"]["q_dupe"]["judged_at_k"] == 0.5
    code, out, _ = cli(calibration_main, capsys, "holes", qrels, dupe, "-k", 6)
    assert "(judged@6 0.40 = 2 / 5: 1 of the 6 positions (1 queries x 6) is empty" in out
    assert "1 repeats an id ranked higher: a filled position, neither judged nor a hole)" in out
    assert "q_dupe  2 / 5 (0.40)  x3, x1" in out


def test_the_metrics_page_says_judged_at_20_as_the_cli(demo_db) -> None:
    from annotation.render import plain
    from tests.conftest import app_test, page_text

    at = app_test(timeout=120).run()
    at.number_input(key="metrics:k").set_value(20).run()
    assert not at.exception and not at.error, [e.value for e in [*at.exception, *at.error]]
    holes = next(t.value for t in at.table if "holes" in t.value.columns).map(plain).set_index("query")
    assert holes.loc["q_broad", "judged@20"] == "8 / 10 (0.80)"
    assert holes.loc["q_milk", "judged@20"] == "3 / 10 (0.30)"
    text = page_text(at).replace("**", "")
    assert "23 of the 40 filled positions unjudged in the top 20" in text
    assert "(judged@20 0.42 = 17 / 40: 40 of the 80 positions (4 queries x 20) are empty" in text
    assert "0.71 = 57 / 80" not in text


# ---------------------------------------------------------------- 10: NUL in trace exports


def _with_nul(name: str, tmp_path: Path) -> Path:
    text = (FORMATS / name).read_text()
    first = text.index("What is the capital of France?")
    out = tmp_path / f"nul-{name}"
    out.write_text(text[:first] + "What is\\u0000 the capital of France?" + text[first + 30 :])
    return out


NUL_CASES = {
    "langfuse": ("langfuse-trace.json", 6, "input.question"),
    "langsmith": ("langsmith-runs.json", 22, "record 0.inputs.question"),
    "openinference": ("openinference-phoenix-rest.json", 17, "data[0].attributes.input.value"),
}


@pytest.mark.parametrize("source", sorted(NUL_CASES))
def test_a_nul_in_a_trace_export_is_refused_and_the_store_is_unchanged(
    source, db_at, tmp_path, capsys
) -> None:
    name, line, field = NUL_CASES[source]
    code, _, err = cli(annotation_main, capsys, "import", "--db", db_at, "--traces", EXAMPLE / "traces.jsonl")
    assert code == 0, err
    with Store(db_at) as store:
        before = store.counts()
    bad = _with_nul(name, tmp_path)
    code, out, err = cli(annotation_main, capsys, "import", "--db", db_at, "--traces", bad, "--from", source)
    assert code == 2 and out == "" and "Traceback" not in err, err
    assert err.splitlines()[-1] == (
        f"error: {bad}:{line}: {field}: holds a NUL character (U+0000) at position 7; expected text "
        "without it (a PostgreSQL store cannot hold one, so neither backend takes it)"
    )
    with Store(db_at) as store:
        assert store.counts() == before


def test_a_nul_in_json_lines_names_its_line_and_a_nul_in_a_key_its_name(tmp_path) -> None:
    runs = json.loads((FORMATS / "langsmith-runs.json").read_text())
    path = tmp_path / "runs.jsonl"
    lines = [json.dumps(run) for run in runs]
    lines[2] = lines[2].replace('"inputs": {', '"inputs": {"no\\u0000te": 1, ', 1)
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(InvalidTraceSource) as caught:
        read_trace_source(path, "langsmith")
    assert str(caught.value).startswith(
        f"{path}:3: inputs.no\\u0000te (a field's name): holds a NUL character"
    )


def test_a_nul_spelled_inside_a_json_text_is_refused_when_decoded(tmp_path) -> None:
    text = (FORMATS / "langsmith-runs.json").read_text()
    # the question is a JSON text whose own escape spells NUL: no NUL in the file's strings
    text = text.replace(
        '"question": "What is the capital of France?"', '"question": "{\\"q\\": \\"a\\\\u0000b\\"}"', 1
    )
    path = tmp_path / "runs.json"
    path.write_text(text)
    with pytest.raises(InvalidTraceSource, match=r"record 0\.question: holds a NUL character"):
        read_trace_source(path, "langsmith")


def test_an_escaped_backslash_before_u0000_is_text_not_nul(tmp_path) -> None:
    text = (FORMATS / "langsmith-runs.json").read_text()
    text = text.replace("What is the capital of France?", "What is \\\\u0000 the capital of France?", 1)
    path = tmp_path / "runs.json"
    path.write_text(text)
    imported = read_trace_source(path, "langsmith")
    assert "What is \\u0000 the capital of France?" in imported.queries.values()


# ---------------------------------------------------------------- 11: golden.yaml's query texts


@pytest.fixture
def small_texts(monkeypatch) -> int:
    monkeypatch.setenv(MAX_TEXT_BYTES_ENV, "64")
    return 64


def test_a_golden_query_text_over_the_limit_is_refused_naming_the_query(small_texts, tmp_path) -> None:
    path = tmp_path / "golden.yaml"
    path.write_text(f"queries:\n  - id: q_ok\n    text: {'a' * 64}\n    grades: {{c1: 1}}\n"
                    f"  - id: q_big\n    text: {'é' * 33}\n    grades: {{c1: 1}}\n")  # fmt: skip
    with pytest.raises(InvalidGolden) as caught:
        read_golden(path)
    assert str(caught.value) == (
        f"{path}:6: queries[1].text (query 'q_big'): 66 bytes of text; at most 64 bytes a text "
        f"(set {MAX_TEXT_BYTES_ENV} to raise the limit)"
    )
    essay = tmp_path / "essay.yaml"
    essay.write_text(f"- query: {'b' * 65}\n  grades: {{c1: 1}}\n")
    with pytest.raises(InvalidGolden, match=r"essay\.yaml:1: \[0\]\.query: 65 bytes of text; at most 64"):
        read_golden(essay)
    path.write_text(f"queries:\n  - id: q_ok\n    text: {'a' * 64}\n    grades: {{c1: 1}}\n")
    assert read_golden(path).texts == {"q_ok": "a" * 64}


def test_a_golden_query_text_over_the_limit_is_not_stored(small_texts, db_at, tmp_path, capsys) -> None:
    path = tmp_path / "golden.yaml"
    path.write_text(f"queries:\n  - id: q_big\n    text: {'x' * 65}\n    grades: {{c1: 1}}\n")
    code, out, err = cli(
        annotation_main, capsys, "import", "--db", db_at, "--labels", path, "--annotator", "ann"
    )
    assert code == 2 and out == "" and "Traceback" not in err, err
    assert err.splitlines()[-1].startswith(
        f"error: {path}:3: queries[0].text (query 'q_big'): 65 bytes of text"
    )
    with Store(db_at) as store:
        assert store.counts()["queries"] == 0
