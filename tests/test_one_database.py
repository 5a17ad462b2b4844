"""One database: `make run`, the app and every command line use $DENOMINATOR_DB, else
./denominator.db; a command that writes says which file on stderr, one that only reads refuses a
missing file ("no such database", exit 2) instead of creating it."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from annotation.__main__ import main as annotation_main
from annotation.access.identity import db_path
from annotation.cli_base import open_store, shown_db
from annotation.store import Store, StoreError, default_db_path
from annotation.store.base import holds_nothing
from calibration.__main__ import main as calibration_main
from denominator.cli import main as denominator_main
from judge.__main__ import main as judge_main
from tests.conftest import EXAMPLE, ROOT, app_test, cli, page_text


def make_run_recipe() -> list[str]:
    """The lines of the Makefile's ``run`` target."""
    lines = (ROOT / "Makefile").read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("run:"))
    recipe = []
    for line in lines[start + 1 :]:
        if not line.startswith("\t"):
            break
        recipe.append(line.strip())
    return recipe


def clean_env() -> dict[str, str]:
    """The environment of a fresh terminal: no DENOMINATOR_* setting; this checkout importable."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DENOMINATOR_", "OPENAI_"))}
    env["PYTHONPATH"] = str(ROOT)
    return env


def seed_as_make_run(folder: Path) -> subprocess.CompletedProcess[str]:
    """The Makefile's seeding step, run as `make run` runs it, in ``folder``."""
    (seed,) = [line for line in make_run_recipe() if "-m denominator demo" in line]
    argv = [sys.executable if word == "$(PY)" else word for word in shlex.split(seed)]
    return subprocess.run(argv, cwd=folder, env=clean_env(), capture_output=True, text=True, timeout=300)


def python_m(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", *args],
        cwd=folder,
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.fixture
def fresh_clone(tmp_path, monkeypatch) -> Path:
    """An empty working folder, the process in it, no DENOMINATOR_DB: what a fresh clone sees."""
    monkeypatch.chdir(tmp_path)
    for name in ("DENOMINATOR_DB", "DENOMINATOR_ANNOTATOR", "OPENAI_BASE_URL", "OPENAI_MODEL"):
        monkeypatch.delenv(name, raising=False)
    return tmp_path


def test_make_run_serves_the_default_database_it_seeds() -> None:
    recipe = " ".join(make_run_recipe())
    assert "$(PY) -m denominator demo --if-empty" in recipe  # no --db: the default
    assert "DENOMINATOR_DB=" not in recipe and "DEMO_DB" not in recipe  # the app is given no other file
    assert (
        "$(PY) -m denominator serve $(if $(PORT),--port $(PORT))" in recipe
    )  # the installed command's settings


def test_a_token_added_after_make_run_works_in_the_app(fresh_clone) -> None:
    """The acceptance of #16 without the browser: a fresh clone, `make run`'s seeding step, then
    `annotators add sam` in another terminal with no --db; sam's token opens the app."""
    seeded = seed_as_make_run(fresh_clone)
    assert seeded.returncode == 0, seeded.stderr
    assert seeded.stderr == "database: ./denominator.db (created)\n"
    assert seeded.stdout.startswith("demo database denominator.db: 24 chunks, 4 queries, ")
    added = python_m(fresh_clone, "annotation", "annotators", "add", "sam", "--role", "annotator")
    assert added.returncode == 0, added.stderr
    assert added.stderr == "database: ./denominator.db\n"
    token = added.stdout.splitlines()[1]
    assert db_path() == default_db_path() == "denominator.db"  # the app's rule is the CLI's
    with Store(db_path()) as store:
        assert store.identify(token) == {"name": "sam", "role": "annotator"}
        before = store.counts()
    at = app_test()  # denominator/app.py, reading ./denominator.db of this folder, as `make run` serves it
    at.query_params["token"] = token
    at.run()
    at.button(key="access:link-sign-in").click().run()  # a link signs in only by its button
    assert not at.exception
    assert "Signed in as **sam** (annotator)" in page_text(at)
    # `make run` again: the database holds data, so it is served as it is
    again = seed_as_make_run(fresh_clone)
    assert again.returncode == 0 and again.stderr == ""
    assert again.stdout == "database ./denominator.db already holds data: the demo is not added\n"
    with Store("denominator.db") as store:
        assert store.counts() == before and store.identify(token) is not None


def test_the_demo_goes_into_a_database_that_holds_only_people(fresh_clone, monkeypatch, capsys) -> None:
    """Tokens handed out before the first `make run`: the demo is added (people are no data)."""
    built: list[str] = []
    monkeypatch.setattr("denominator.demo.build_demo", lambda path, **_: built.append(path) or "built\n")
    assert annotation_main(["annotators", "add", "sam", "--role", "admin"]) == 0
    assert capsys.readouterr().err == "database: ./denominator.db (created)\n"
    assert denominator_main(["demo", "--if-empty"]) == 0
    assert built == ["denominator.db"] and capsys.readouterr() == ("built\n", "database: ./denominator.db\n")
    assert annotation_main(["import", "--corpus", str(EXAMPLE / "corpus.jsonl")]) == 0
    capsys.readouterr()
    assert denominator_main(["demo", "--if-empty"]) == 0
    assert built == ["denominator.db"]  # not again: the corpus is data
    assert capsys.readouterr().out == "database ./denominator.db already holds data: the demo is not added\n"
    assert denominator_main(["demo", "--if-empty", "--db", "other.db"]) == 0
    assert built == ["denominator.db", "other.db"]


def test_holds_nothing(tmp_path) -> None:
    db = tmp_path / "x.db"
    assert holds_nothing(db) and not db.exists()  # asked, not created
    Store(db).close()
    assert holds_nothing(db)
    with Store(db) as store:
        store.add_annotator("sam", "annotator")
    assert holds_nothing(db)  # people are no data
    assert annotation_main(["import", "--db", str(db), "--corpus", str(EXAMPLE / "corpus.jsonl")]) == 0
    assert not holds_nothing(db)
    text = tmp_path / "notes.db"
    text.write_text("not a database\n" * 200)
    with pytest.raises(StoreError, match="not a Denominator database"):
        holds_nothing(text)


def test_the_default_is_denominator_db_else_the_environment(fresh_clone, monkeypatch) -> None:
    assert default_db_path() == db_path() == "denominator.db"
    monkeypatch.setenv("DENOMINATOR_DB", str(fresh_clone / "team.db"))
    assert default_db_path() == db_path() == str(fresh_clone / "team.db")


READERS = [  # read only: a missing file is refused, never created
    (annotation_main, ["export", "--format", "golden", "-o", "out.yaml"]),
    (annotation_main, ["annotators", "list"]),
    (judge_main, ["list"]),
    (judge_main, ["fit-lexical", "--rubric", "relevance"]),
    (judge_main, ["grade", "--rubric", "relevance", "--dry-run"]),
    (calibration_main, ["history"]),
    (
        calibration_main,
        ["check", str(EXAMPLE / "golden.yaml"), str(EXAMPLE / "run.jsonl"), "-k", "5", "--with-store"],
    ),
]
NEED_DATA = [  # they write, but only into a database that holds what they work on
    (annotation_main, ["pool", "--depth", "5"]),
    (annotation_main, ["baseline"]),
    (annotation_main, ["annotators", "revoke", "sam"]),
    (judge_main, ["grade", "--rubric", "relevance"]),
    (calibration_main, ["review"]),
]


def case_id(main, argv: list[str]) -> str:
    """``judge grade --dry-run``: the module, the command words, a --dry-run."""
    words = [main.__module__.split(".")[0]]
    for word in argv:
        if word.startswith("-") or "/" in word:
            break
        words.append(word)
    return " ".join(words + (["--dry-run"] if "--dry-run" in argv else []))


@pytest.mark.parametrize(
    ("main", "argv"),
    [pytest.param(main, argv, id=case_id(main, argv)) for main, argv in READERS + NEED_DATA],
)
def test_a_missing_database_is_refused_not_created(main, argv, fresh_clone, capsys) -> None:
    code = main(argv)
    captured = capsys.readouterr()
    assert code == 2 and captured.out == ""
    assert captured.err == (
        "error: no such database: ./denominator.db (denominator demo or python -m annotation import creates one; "
        "--db or DENOMINATOR_DB names another)\n"
    )
    assert not (fresh_clone / "denominator.db").exists()
    code = main([*argv, "--db", "elsewhere/x.db"])
    assert code == 2 and capsys.readouterr().err.startswith("error: no such database: elsewhere/x.db (")
    assert list(fresh_clone.iterdir()) == []


def test_a_command_names_the_database_and_whether_it_was_created(tmp_path, capsys) -> None:
    db = tmp_path / "d.db"
    corpus = ["import", "--db", db, "--corpus", EXAMPLE / "corpus.jsonl"]
    code, out, err = cli(annotation_main, capsys, *corpus)
    assert code == 0 and "24 added" in out and err == f"database: {db} (created)\n"
    code, _, err = cli(annotation_main, capsys, *corpus)
    assert code == 0 and err == f"database: {db}\n"
    code, out, err = cli(annotation_main, capsys, "annotators", "list", "--db", db)
    assert code == 0 and out == "no annotators yet\n" and err == f"database: {db}\n"  # a read says it too


def test_every_command_that_reads_the_store_names_it_as_a_write_does(tmp_path, capsys) -> None:
    """``database: PATH`` was said by grade, demo, annotators add and check --record, not by
    fit-lexical, judge list or agree --db: a figure read from a store says which store."""
    from denominator.demo import build_demo

    db = tmp_path / "demo.db"
    build_demo(str(db), with_judge=True)
    golden, run = EXAMPLE / "golden.yaml", EXAMPLE / "run.jsonl"
    reads = [
        (judge_main, ["fit-lexical", "--rubric", "relevance"], "quadratic-weighted kappa"),
        (judge_main, ["list"], "offline-lexical/relevance v1 (current)"),
        (calibration_main, ["agree"], "20 items, 2 raters; "),
        (calibration_main, ["history"], "no recorded check yet"),
        (calibration_main, ["check", golden, run, "-k", "5"], "run.jsonl"),
        (calibration_main, ["metrics", "--stored-run", "retriever", "-k", "5"], "retriever"),
        (annotation_main, ["imports", "list"], "the worked example"),
    ]
    for main, argv, said in reads:
        code, out, err = cli(main, capsys, *argv, "--db", db)
        assert code in (0, 1) and said in out, (argv, out, err)
        assert err.splitlines()[-1] == f"database: {db}", (argv, err)


def test_a_refused_command_leaves_no_new_file(tmp_path, capsys) -> None:
    db = tmp_path / "d.db"
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"id": "c1"}\n')
    code, _, err = cli(annotation_main, capsys, "import", "--db", db, "--corpus", broken)
    assert code == 2 and err.count("\n") == 1 and err.startswith(f"error: {broken}:1: text")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["broken.jsonl"]


def test_check_record_creates_and_says_so(tmp_path, capsys) -> None:
    db = tmp_path / "checks.db"
    argv = ["check", EXAMPLE / "golden.yaml", EXAMPLE / "run.jsonl", "-k", "5", "--record", "--db", db]
    code, _, err = cli(calibration_main, capsys, *argv)
    assert code in (0, 1)  # the policy's verdict on the worked example; recorded either way
    assert err.splitlines()[-1] == f"database: {db} (created)"
    assert re.search(r"^recorded check 1 of 'run.jsonl' in ", err, re.M)


def test_open_store_access(tmp_path, capsys) -> None:
    db = str(tmp_path / "o.db")
    with pytest.raises(Exception, match="no such database"):
        with open_store(db, "write"):
            pass
    with open_store(db, "create") as store:
        store.add_annotator("sam", "annotator")
    assert capsys.readouterr().err == f"database: {db} (created)\n"
    with open_store(db, "read") as store:
        assert store.annotators()[0]["name"] == "sam"
    assert capsys.readouterr().err == f"database: {db}\n"  # a read names its store too


def test_shown_db() -> None:
    assert shown_db("denominator.db") == "./denominator.db"
    assert shown_db("/srv/team.db") == "/srv/team.db" and shown_db("data/x.db") == "data/x.db"
    assert shown_db("https://ann:s3cret@db.example/x") == "https://***@db.example/x"
    assert "s3cret" not in shown_db("libsql://u:s3cret@host/db?x=1")
