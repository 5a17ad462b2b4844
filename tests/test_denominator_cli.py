"""``denominator``: one command over the three CLIs, installed by ``make`` into .venv."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from denominator.cli import GROUPS, main
from tests.conftest import EXAMPLE, ROOT


def test_help_lists_the_three_groups_and_the_demo(capsys) -> None:
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    for group in ("annotation", "judge", "calibration", "demo"):
        assert f"  {group} " in out
    assert set(GROUPS) == {"annotation", "judge", "calibration"}


@pytest.mark.parametrize("group", list(GROUPS))
def test_help_names_every_command_of_each_group(group) -> None:
    """`denominator --help` left out holes, check, plan, project, chunk and import-chroma."""
    import importlib

    listed = GROUPS[group].split(": ")[-1].split(", ")
    assert sorted(listed) == sorted(importlib.import_module(f"{group}.__main__").COMMANDS)


def test_the_demo_is_denominators_command_not_annotations(tmp_path, capsys) -> None:
    """#28: the demo builds with every package, so it is served from the top (``denominator
    demo``); ``python -m annotation`` (the bottom package) no longer offers it."""
    db = tmp_path / "d.db"
    assert main(["demo", "--db", str(db)]) == 0
    out, err = capsys.readouterr()
    assert (
        out.startswith(f"demo database {db}: 24 chunks, 4 queries") and err == f"database: {db} (created)\n"
    )
    assert main(["demo", "--db", str(db), "--if-empty"]) == 0
    assert capsys.readouterr().out == f"database {db} already holds data: the demo is not added\n"
    assert main(["demo", "--bogus"]) == 2
    assert capsys.readouterr().err == "error: denominator demo: unrecognized arguments: --bogus\n"
    from annotation.__main__ import main as annotation_main

    assert annotation_main(["demo"]) == 2
    assert "invalid choice: 'demo'" in capsys.readouterr().err


def test_a_group_is_its_python_m_command(capsys) -> None:
    args = [
        "metrics",
        str(EXAMPLE / "golden.yaml"),
        str(EXAMPLE / "run.jsonl"),
        "-k",
        "5",
        "--format",
        "json",
    ]
    assert main(["calibration", *args]) == 0
    through_denominator = capsys.readouterr().out
    from calibration.__main__ import main as calibration_main

    assert calibration_main(args) == 0
    assert capsys.readouterr().out == through_denominator


def test_unknown_group_is_one_line_and_exit_2(capsys) -> None:
    assert main(["metrics"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "unknown command 'metrics'" in err


def test_the_installed_command(tmp_path) -> None:
    """`make` installs the project into .venv: the console script runs from any folder."""
    script = Path(sys.executable).with_name("denominator")
    if not script.exists():
        if os.environ.get("CI") == "true":
            pytest.fail(f"{script} missing: the Makefile must install the project (pip install -e .)")
        pytest.skip("the project is not installed in this interpreter's environment")
    done = subprocess.run(
        [str(script), "calibration", "audit", str(EXAMPLE / "dupe.yaml"), str(EXAMPLE / "dupe.jsonl"), "-k", "5",
         "--fail-on", "duplicates"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 1, done.stderr  # the gate failed: q_dupe repeats d1
    assert "FAILED for q_dupe" in done.stdout
    help_text = subprocess.run(
        [str(script), "--help"], capture_output=True, text=True, timeout=60, cwd=ROOT
    ).stdout
    assert "calibration" in help_text and "judge" in help_text and "annotation" in help_text


def test_the_version_is_the_packages(capsys) -> None:
    assert main(["--version"]) == 0
    listed = next(
        line.split('"')[1]
        for line in (ROOT / "pyproject.toml").read_text().splitlines()
        if line.startswith("version")
    )
    assert capsys.readouterr().out == f"denominator {listed}\n"


def test_serve_passes_make_runs_settings_on_its_command_line(monkeypatch) -> None:
    """The settings `make run` had read from .streamlit/config.toml are the command's own (#29): an
    installed package serves the same from any folder."""
    from denominator.cli import APP, streamlit_command

    monkeypatch.delenv("STREAMLIT_SERVER_ALLOWED_HOSTS", raising=False)
    command = streamlit_command("127.0.0.1", 8600)
    # Streamlit's own command, run through denominator.server: its deadlines and connection cap first
    assert command[:5] == [sys.executable, "-m", "denominator.server", "run", str(APP)] and APP.is_file()
    pairs = dict(zip(command[5::2], command[6::2], strict=False))
    assert pairs["--server.address"] == "127.0.0.1" and pairs["--server.port"] == "8600"
    assert pairs["--server.headless"] == "true" and pairs["--client.toolbarMode"] == "viewer"
    assert pairs["--server.fileWatcherType"] == "none" and pairs["--browser.gatherUsageStats"] == "false"
    hosts = [command[i + 1] for i, word in enumerate(command) if word == "--server.allowedHosts"]
    assert hosts == ["localhost", "127.0.0.1", "::1"]
    monkeypatch.setenv("STREAMLIT_SERVER_ALLOWED_HOSTS", "localhost labels.example.com")
    assert "--server.allowedHosts" not in streamlit_command("0.0.0.0", 8600)  # the environment's list holds


@pytest.mark.parametrize(
    "argv, env, said",
    [
        (
            ["--port", "0"],
            {},
            "error: denominator serve: argument --port: expected a positive integer, got '0'\n",
        ),
        (
            ["--port", "70000"],
            {},
            "error: denominator serve: argument --port: expected a port from 1 to 65535, got 70000\n",
        ),
        ([], {"PORT": "abc"}, "error: PORT: expected a positive integer, got 'abc'\n"),
    ],
)
def test_serve_refuses_a_bad_port_in_one_line(argv, env, said, monkeypatch, capsys) -> None:
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert main(["serve", *argv]) == 2
    assert capsys.readouterr().err == said


def test_the_version_has_its_changelog_section() -> None:
    """A release is its version in pyproject.toml and a section of CHANGELOG.md (#29)."""
    listed = next(
        line.split('"')[1]
        for line in (ROOT / "pyproject.toml").read_text().splitlines()
        if line.startswith("version")
    )
    assert f"\n## [{listed}] - " in (ROOT / "CHANGELOG.md").read_text()


def test_the_demo_built_twice_adds_nothing_the_second_time(tmp_path, capsys) -> None:
    """Labels are append-only: a second ``demo`` on the same store appended cat's 16
    faithfulness labels again (56 labels became 72) and recorded the three imports again."""
    from annotation.store import Store

    db = tmp_path / "d.db"
    assert main(["demo", "--db", str(db)]) == 0
    capsys.readouterr()
    with Store(db) as store:
        before = (store.counts()["labels"], len(store.imports()))
    assert before == (56, 3)  # cat and dan: 20 chunk labels each; cat: 16 faithfulness grades
    assert main(["demo", "--db", str(db)]) == 0
    out, err = capsys.readouterr()
    assert out.startswith(f"demo database {db} already holds the demo (import 1, ")
    assert out.endswith("): nothing added\n") and err == f"database: {db}\n"
    with Store(db) as store:
        assert (store.counts()["labels"], len(store.imports())) == before


@pytest.mark.parametrize(
    "name, content, said",
    [
        (
            "notadb.yaml",
            b"a: b\n",
            "{db}: not a Denominator database (not an SQLite file); it was left as it was",
        ),
        ("empty.jsonl", b"", "{db} is an empty file, not a Denominator database; it was left as it was"),
        ("empty.db", b"", "{db} is an empty file, not a Denominator database; it was left as it was"),
    ],
)
def test_serve_refuses_a_file_that_is_no_database_before_it_starts(
    name, content, said, tmp_path, monkeypatch, capsys
) -> None:
    """Every command refused such a file; ``serve`` started, and its pages said the store was
    unavailable, to reload when it is back: it never would be."""
    db = tmp_path / name
    db.write_bytes(content)
    served = []
    monkeypatch.setattr("denominator.cli.os.execve", lambda *argv: served.append(argv))
    assert main(["serve", "--db", str(db), "--port", "8611"]) == 2
    assert capsys.readouterr().err == "error: " + said.format(db=db) + "\n"
    assert served == [] and db.read_bytes() == content


def test_serve_starts_on_a_missing_file_and_a_postgresql_url_unopened(tmp_path, monkeypatch, capsys) -> None:
    """A missing file stays missing (the pages say how to build one); a PostgreSQL server is not
    reached at start-up (the app waits for one that is down)."""
    served = []
    monkeypatch.setattr("denominator.cli.os.execve", lambda *argv: served.append(argv))
    missing = tmp_path / "new.db"
    for db in (str(missing), "postgresql://u:pw@127.0.0.1:1/den"):
        assert main(["serve", "--db", db, "--port", "8611"]) == 0
    err = capsys.readouterr().err
    assert err == (
        f"serving {missing} at http://127.0.0.1:8611 (Ctrl-C stops)\n"
        "serving postgresql://***@127.0.0.1:1/den at http://127.0.0.1:8611 (Ctrl-C stops)\n"
    )
    assert len(served) == 2 and not missing.exists()


def test_a_command_that_creates_the_store_leaves_an_empty_data_file_as_it_was(tmp_path, capsys) -> None:
    """``demo --db x.jsonl`` on an empty x.jsonl turned it into a database, where ``review``
    refuses it; an empty x.db stays a new database (``touch x.db``)."""
    from annotation.__main__ import main as annotation_main

    empty = tmp_path / "empty.jsonl"
    empty.touch()
    said = f"error: {empty} is an empty file, not a Denominator database; it was left as it was\n"
    for argv in (["demo"], ["demo", "--if-empty"]):
        assert main([*argv, "--db", str(empty)]) == 2
        assert capsys.readouterr().err == said
    corpus = str(EXAMPLE / "corpus.jsonl")
    assert annotation_main(["import", "--db", str(empty), "--corpus", corpus]) == 2
    assert capsys.readouterr().err == said
    assert empty.stat().st_size == 0
    touched = tmp_path / "touched.db"
    touched.touch()
    assert annotation_main(["import", "--db", str(touched), "--corpus", corpus]) == 0
    assert capsys.readouterr().err == f"database: {touched}\n" and touched.stat().st_size > 0
