"""Ctrl-C (#25, #26): every command line answers an interruption with one line and exit 130, never a
traceback, and leaves nothing half-written. `annotation import` of a large corpus, interrupted while
it reads: a `KeyboardInterrupt` traceback and exit -2 before; the database it was creating is gone."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time

import pytest

from tests.conftest import ROOT

pytestmark = pytest.mark.slow


def test_an_interrupted_import_is_one_line_exit_130_and_leaves_nothing(tmp_path):
    corpus = tmp_path / "corpus.jsonl"
    with corpus.open("w") as out:
        for i in range(400_000):  # about 16 s to import here: interrupted well before its end
            out.write(
                json.dumps({"id": f"c{i}", "text": "a chunk about maize pests and storage " * 3}) + "\n"
            )
    db = tmp_path / "new.db"
    command = [sys.executable, "-m", "annotation", "import", "--db", str(db), "--corpus", str(corpus)]
    process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while not db.exists() and time.monotonic() < deadline:  # the command has started: its store is open
        assert process.poll() is None, process.communicate()
        time.sleep(0.05)
    time.sleep(0.5)
    assert process.poll() is None, process.communicate()
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=60)
    assert process.returncode == 130, (process.returncode, err[-500:])
    assert err == "error: interrupted; nothing half-written (run the same command again)\n", err[-500:]
    assert out == ""
    assert not db.exists()  # the file it created for this import is removed: nothing was imported


@pytest.mark.parametrize(
    "package", ["annotation", "judge", "calibration"], ids=["annotation", "judge", "calibration"]
)
def test_every_cli_turns_ctrl_c_into_one_line(package, monkeypatch, capsys):
    """Each CLI's boundary, hit by a KeyboardInterrupt from inside a command."""
    import importlib

    main_module = importlib.import_module(f"{package}.__main__")
    command = {"annotation": "export", "judge": "list", "calibration": "position"}[package]
    argv = {
        "annotation": ["export", "--format", "qrels", "-o", "x.qrels"],
        "judge": ["list"],
        "calibration": ["position", "x.csv"],
    }[package]

    def interrupt(*_args, **_kwargs):
        raise KeyboardInterrupt

    monkeypatch.setitem(main_module.COMMANDS, command, interrupt)
    assert main_module.main(argv) == 130
    captured = capsys.readouterr()
    assert captured.err == "error: interrupted; nothing half-written (run the same command again)\n"


@pytest.mark.parametrize("command", [["annotation", "export"], ["calibration", "metrics"], ["judge", "list"]])
def test_ctrl_c_while_the_modules_import_is_one_line(command, tmp_path):
    """SIGINT while ``python -m GROUP`` is importing its modules (sent once numpy's library is
    mapped into the process: past the interpreter's own start-up, inside the command's imports,
    however loaded the machine): one line and exit 130 (a KeyboardInterrupt traceback before);
    never a traceback."""
    process = subprocess.Popen(
        [sys.executable, "-m", *command, "--help"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    maps = f"/proc/{process.pid}/maps"
    deadline = time.monotonic() + 60
    while process.poll() is None and time.monotonic() < deadline:
        try:
            with open(maps) as handle:
                if "numpy" in handle.read():
                    break
        except OSError:
            pass
        time.sleep(0.001)
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=60)
    assert "Traceback" not in err, err[-800:]
    if process.returncode == 130:
        assert err == "error: interrupted; nothing half-written (run the same command again)\n", err
    else:  # the help was out before the signal came
        assert process.returncode == 0 and out.startswith("usage:"), (process.returncode, err)


def _counts(db) -> dict:
    from annotation.store import Store

    with Store(db) as store:
        return store.counts()


@pytest.mark.parametrize("delay", [0.15, 0.4, 0.8, 1.5, 2.5])
@pytest.mark.parametrize("command", ["import", "export", "pool", "migrate", "fit-lexical"])
def test_ctrl_c_at_any_point_of_a_command_is_one_line_and_nothing_half_written(
    command, delay, make_run_db, tmp_path
):
    """#26: SIGINT at several points of five commands that write (start-up, the store's open, the
    work, the output): exit 130 with one line, or 0 when it had finished; never a traceback; a
    store, a target or an output file either whole or untouched."""
    import shutil

    db = tmp_path / "demo.db"
    shutil.copy(make_run_db, db)
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text(
        "".join(json.dumps({"id": f"n{i}", "text": f"chunk {i}"}) + "\n" for i in range(20_000))
    )
    out, target = tmp_path / "labels.csv", tmp_path / "copy.db"
    argv = {
        "import": ["annotation", "import", "--db", str(db), "--corpus", str(corpus)],
        "export": ["annotation", "export", "--db", str(db), "--format", "csv", "-o", str(out)],
        "pool": ["annotation", "pool", "--db", str(db), "--depth", "10", "--annotators", "sam,kim"],
        "migrate": ["annotation", "migrate", "--from", str(db), "--to", str(target)],
        "fit-lexical": ["judge", "fit-lexical", "--db", str(db), "--rubric", "relevance"],
    }[command]
    before = _counts(db)
    process = subprocess.Popen(
        [sys.executable, "-m", *argv], cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    time.sleep(delay)
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=120)
    assert "Traceback" not in err, err[-800:]
    assert process.returncode in (0, 130), (process.returncode, err[-500:])
    if process.returncode == 0:
        return
    assert err.splitlines()[-1] == "error: interrupted; nothing half-written (run the same command again)", (
        err
    )
    if command in ("import", "pool", "fit-lexical") and (after := _counts(db)) != before:
        # the signal came after the commit (while the command printed or exited): the store whole,
        # exactly as the command run to its end leaves it (running it again changes nothing)
        whole = tmp_path / "whole.db"
        shutil.copy(make_run_db, whole)
        done = subprocess.run(
            [sys.executable, "-m", *[str(whole) if a == str(db) else a for a in argv]],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, done.stderr
        assert after == _counts(whole)  # whole, never half-written
    if command == "export":
        assert not out.exists()
    if command == "migrate" and target.exists() and any(_counts(target).values()):
        # the signal came after the commit: the copy is whole, and the same command says so
        assert _counts(target) == _counts(db)
        again = subprocess.run([sys.executable, "-m", *argv], cwd=tmp_path, capture_output=True, text=True)
        assert again.returncode == 0 and "equal on both sides" in again.stdout, again.stderr
