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

import os
import stat
from pathlib import Path

import pytest

from annotation.exports import folders
from annotation.formats import FormatError
from annotation.textio import write_atomic
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
    from annotation import textio

    def no_write(*args, **kwargs):
        raise AssertionError("a write was started for a device target")

    # whatever the writer does, it cannot create, rename or replace anything here
    monkeypatch.setattr(textio, "create_exclusive", no_write, raising=False)
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
    from annotation import textio

    secret = _secret(tmp_path)
    names = iter(["aaaa", "bbbb"])
    monkeypatch.setattr(textio.secrets, "token_hex", lambda n: next(names))
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
