"""One error root and one boundary per face (#25): every named error is a ``DenominatorError``;
every command line answers any error in one line (exit 2) and Ctrl-C with exit 130; every page
answers any error in one line in the page, its traceback in the server's log only; a store that
cannot be reached never reads as a signed-out user.
"""

from __future__ import annotations

import argparse
import errno
import importlib
import inspect
import logging
import pkgutil
import re
import socket
import sqlite3
from pathlib import Path

import pytest

from annotation.errors import DenominatorError, describe, masked
from tests.conftest import ROOT, add_tokens, app_test, page_text

PACKAGES = ("annotation", "calibration", "judge", "denominator")


def product_modules() -> list[str]:
    names = []
    for package in PACKAGES:
        names.append(package)
        for info in pkgutil.walk_packages([str(ROOT / package)], prefix=f"{package}."):
            names.append(info.name)
    return sorted(n for n in names if n != "denominator.__main__")  # it runs the command


def test_every_named_error_has_one_root() -> None:
    """Callers catch ``ValueError``/``KeyError`` where they did (kept as second bases); the
    boundaries catch ``DenominatorError``. A private control-flow class is the only exception."""
    named = {}
    for name in product_modules():
        module = importlib.import_module(name)
        for attr, value in vars(module).items():
            if (
                inspect.isclass(value)
                and issubclass(value, BaseException)
                and value.__module__ == name
                and not attr.startswith("_")
            ):
                named[f"{name}.{attr}"] = value
    assert len(named) >= 45, sorted(named)  # the 54 of the review, less the private and merged ones
    assert [n for n, cls in named.items() if not issubclass(cls, DenominatorError)] == []
    from annotation.model import FormatError
    from annotation.rubrics import UnknownRubric

    assert issubclass(FormatError, ValueError) and issubclass(UnknownRubric, KeyError)


def _drivers() -> list[tuple[str, BaseException, str]]:
    import psycopg
    import yaml

    return [
        (
            "sqlite",
            sqlite3.OperationalError("disk I/O error"),
            "the store is unavailable (the SQLite database: disk I/O error)",
        ),
        (
            "psycopg",
            psycopg.OperationalError(
                "connection to server at 127.0.0.1 failed: postgresql://u:S3cretPW@h/db?password=S3cretPW"
            ),
            "the store is unavailable (the PostgreSQL server: connection to server at 127.0.0.1 failed",
        ),
        (
            "yaml",
            yaml.YAMLError("found character '\\t' that cannot start any token"),
            "the YAML reader failed",
        ),
        ("oserror", OSError(errno.ENOSPC, "No space left on device", "/srv/x.db"), "No space left on device"),
        ("recursion", RecursionError("maximum recursion depth exceeded"), "nested too deeply"),
        ("memory", MemoryError(), "out of memory"),
        ("bug", TypeError("unsupported operand type(s)\n  File secret.py"), "unexpected TypeError (a bug"),
        ("named", DenominatorError("golden.yaml:3: grade: expected 0-3, not 'x'"), "golden.yaml:3: grade"),
    ]


def _commands() -> list[tuple[str, str]]:
    import annotation.__main__ as a
    import calibration.__main__ as c
    import judge.__main__ as j

    return [(m.__name__, name) for m in (a, c, j) for name in m.COMMANDS]


@pytest.mark.parametrize("module, command", _commands())
def test_every_command_says_any_error_in_one_line(module, command, monkeypatch, capsys) -> None:
    """Each command of the three command lines, made to raise each kind of error at its start:
    one line on stderr, exit 2, nothing on stdout, no password, no traceback."""
    cli = importlib.import_module(module)

    class Parser:
        def parse_args(self, argv):
            return argparse.Namespace(command=command)

    monkeypatch.setattr(cli, "build_parser", lambda *command: Parser())
    for _, error, says in _drivers():

        def boom(args, error=error):
            raise error

        monkeypatch.setitem(cli.COMMANDS, command, boom)
        assert cli.main([]) == 2
        out, err = capsys.readouterr()
        assert out == "" and err.startswith("error: ") and err.count("\n") == 1, err
        assert says in err and "S3cretPW" not in err and "Traceback" not in err and "secret.py" not in err


def test_ctrl_c_and_a_closed_pipe_at_the_boundary(monkeypatch, capsys) -> None:
    import calibration.__main__ as cli

    class Parser:
        def parse_args(self, argv):
            return argparse.Namespace(command="metrics")

    monkeypatch.setattr(cli, "build_parser", lambda *command: Parser())

    def interrupted(args):
        raise KeyboardInterrupt

    monkeypatch.setitem(cli.COMMANDS, "metrics", interrupted)
    assert cli.main([]) == 130
    assert (
        capsys.readouterr().err == "error: interrupted; nothing half-written (run the same command again)\n"
    )


def test_debug_shows_the_traceback_of_a_bug(monkeypatch) -> None:
    import judge.__main__ as cli

    class Parser:
        def parse_args(self, argv):
            return argparse.Namespace(command="list")

    def bug(args):
        raise ZeroDivisionError("a bug")

    monkeypatch.setattr(cli, "build_parser", lambda *command: Parser())
    monkeypatch.setitem(cli.COMMANDS, "list", bug)
    monkeypatch.setenv("DENOMINATOR_DEBUG", "1")
    with pytest.raises(ZeroDivisionError):
        cli.main([])


def test_masked_and_described() -> None:
    assert masked("postgresql://ann:pw@h:5/db?sslmode=require&password=x&user=ann") == (
        "postgresql://***@h:5/db?sslmode=require&password=***&user=***"
    )
    assert describe(ValueError("x" * 1000)).endswith("…") and len(describe(ValueError("x" * 1000))) < 500


# ---------------------------------------------------------------- the pages' boundary


@pytest.mark.parametrize("case", [c[0] for c in _drivers()])
def test_every_page_says_any_error_in_one_line(case, demo_db, monkeypatch, caplog) -> None:
    """The admin's home (the Metrics page) made to raise each kind of error: one error in the
    page, no traceback element, no server path; a driver's or a bug's traceback in the log."""
    import denominator.ui.metrics

    error = dict((c[0], c[1]) for c in _drivers())[case]

    def boom() -> None:
        raise error

    monkeypatch.setenv("DENOMINATOR_DB", str(demo_db))
    monkeypatch.setattr(denominator.ui.metrics, "render_metrics_page", boom)
    with caplog.at_level(logging.ERROR, logger="denominator.pages"):
        at = app_test().run()
    assert not at.exception
    [said] = [e.value.replace("\\", "") for e in at.error]  # as read: Markdown's escapes dropped
    assert "\n" not in said and "S3cretPW" not in said and "/srv/" not in said and "secret.py" not in said
    if case == "named":
        assert said.startswith("golden.yaml:3: grade")
    elif case in ("sqlite", "psycopg"):
        assert said.startswith("The store is unavailable:") and "stay signed in" in said
    else:
        assert said.startswith("This page stopped:") and "server's log" in said
        assert [r.exc_info[0] for r in caplog.records] == [type(error)]


def test_an_unreadable_store_is_no_signed_out_user(demo_db, tmp_path, monkeypatch) -> None:
    """Signed in, then the store cannot be opened (another file put in its place): the page says
    the store is unavailable, never the sign-in page; back in place, the same tab is still
    signed in, with no token given again."""
    tokens = add_tokens(demo_db)
    monkeypatch.setenv("DENOMINATOR_DB", str(demo_db))
    at = app_test()
    at.query_params["token"] = tokens["ann"]
    at.run()
    at.button(key="access:link-sign-in").click().run()
    assert "Signed in as **ann** (annotator)" in page_text(at)
    if "://" in str(demo_db):  # PostgreSQL: a server that does not answer (a port nothing serves)
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            dead = sock.getsockname()[1]
        monkeypatch.setenv("DENOMINATOR_DB", re.sub(r":\d+/", f":{dead}/", str(demo_db)))
    else:
        db = Path(demo_db)
        kept = db.read_bytes()
        db.write_bytes(b"this is no database" * 100)
    at.run()
    assert not at.exception and [t.value for t in at.title] != ["Sign in"]
    [said] = [e.value.replace("\\", "") for e in at.error]
    assert said.startswith("The store is unavailable:") and "stay signed in" in said
    if "://" in str(demo_db):
        monkeypatch.setenv("DENOMINATOR_DB", str(demo_db))
    else:
        db.write_bytes(kept)
    at.run()
    assert "Signed in as **ann** (annotator)" in page_text(at) and not at.error


# ---------------------------------------------------------------- unreadable records


def _corrupt(db: Path) -> str:
    """Rows another program could have written into an SQLite store (its columns hold anything):
    a judge's settings that are not JSON, a newer review whose figures are text, a judge's answer
    that is no grade. The relevance judge's fingerprint."""
    with sqlite3.connect(db) as conn:
        fp = conn.execute("SELECT fingerprint FROM judges WHERE rubric = 'relevance'").fetchone()[0]
        conn.execute("UPDATE judges SET settings = '{not json' WHERE fingerprint = ?", [fp])
        conn.execute(
            """INSERT INTO calibrations (fingerprint, rubric, window, n, kappa, ci_low, ci_high, weights,
                   verdict, created_at, rule, statistic)
               SELECT fingerprint, rubric, window, 'many', 'abc', 'x', 'y', weights, verdict, created_at,
                      rule, statistic FROM calibrations WHERE fingerprint = ?""",
            [fp],
        )
        item = conn.execute("SELECT max(item_id) FROM judge_labels WHERE fingerprint = ?", [fp]).fetchone()[0]
        conn.execute(
            """INSERT INTO judge_labels (item_id, fingerprint, repeat, value, reason, created_at)
               VALUES (?, ?, 0, 'zz', 'r', '2026-12-02T00:00:00')""",
            [item, fp],
        )
    return fp


@pytest.fixture
def demo_sqlite(make_run_db, tmp_path) -> Path:
    """make run's demo (with its offline judges and reviews), a copy of its own."""
    import shutil

    return Path(shutil.copy(make_run_db, tmp_path / "judged.db"))


SKIPPED = (
    "its stored settings cannot be read (not a JSON object): read as none",
    "n 'many', kappa 'abc', ci_low 'x', ci_high 'y' cannot be read: skipped",
)


def test_unreadable_records_are_named_and_skipped_by_the_commands(demo_sqlite, capsys) -> None:
    """judge list, review and a judge's export on a store holding unreadable rows: each row named
    in one ``note:`` line, the rest of the work done, exit 0 (a JSONDecodeError, then a
    ValueError from formatting 'abc', before)."""
    from annotation.__main__ import main as annotation_main
    from calibration.__main__ import main as calibration_main
    from judge.__main__ import main as judge_main

    fp = _corrupt(Path(demo_sqlite))
    db = str(demo_sqlite)
    # the list shows each current judge's reading now (#40), not a saved review
    assert judge_main(["list", "--db", db]) == 0
    out, err = capsys.readouterr()
    # (its settings unreadable, its out-of-fold answers are unknown: its own answers are read)
    line = next(x for x in out.splitlines() if x.startswith("offline-lexical/relevance v1 (current)"))
    assert "human-labelled items, fewer than the 30 needed): unweighted kappa" in line
    # the review's trend reads the saved reviews: the unreadable one named and skipped
    assert calibration_main(["review", "--db", db]) == 0
    out, err = capsys.readouterr()
    assert SKIPPED[1] in err
    runs = [
        (judge_main, ["list", "--db", db]),
        (calibration_main, ["review", "--db", db]),
        (
            annotation_main,
            ["export", "--db", db, "--format", "phoenix", "--judge", fp, "-o", f"{db}.phoenix"],
        ),
    ]
    for main, argv in runs:
        assert main(argv) == 0, argv
        out, err = capsys.readouterr()
        assert "Traceback" not in err and "error:" not in err, err
        notes = [line for line in err.splitlines() if line.startswith("note: ")]
        assert any(SKIPPED[0] in n for n in notes), (argv, err)
    calibration_main(["review", "--db", db])
    out, err = capsys.readouterr()
    assert "its value 'zz' is no grade: skipped" in err


def guarded_judge_page() -> None:
    from denominator.ui.boundary import guarded
    from denominator.ui.judge import render_judge_page

    guarded(render_judge_page)()


def guarded_review_page() -> None:
    from denominator.ui.boundary import guarded
    from denominator.ui.review import render_review_page

    guarded(render_review_page)()


@pytest.mark.parametrize("page", ["guarded_judge_page", "guarded_review_page"])
def test_unreadable_records_are_named_on_the_pages(page, demo_sqlite, monkeypatch) -> None:
    from tests.conftest import page_test

    _corrupt(Path(demo_sqlite))
    monkeypatch.setenv("DENOMINATOR_DB", str(demo_sqlite))
    at = page_test(f"tests.test_boundary.{page}").run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    warned = " ".join(w.value.replace("\\", "") for w in at.warning)
    assert SKIPPED[0] in warned, warned


def test_a_command_that_reads_leaves_an_empty_file_as_it_was(tmp_path, capsys) -> None:
    """A 0-byte file named as the store (``touch x.db``): the commands that only read refuse it
    in one line and leave it empty (``check`` wrote a whole schema into it before)."""
    from annotation.__main__ import main as annotation_main
    from calibration.__main__ import main as calibration_main
    from judge.__main__ import main as judge_main

    empty = tmp_path / "empty.db"
    empty.touch()
    example = ROOT / "examples" / "worked-example"
    runs = [
        (calibration_main, ["check", str(example / "golden.yaml"), str(example / "run.jsonl"), "-k", "5"]),
        (calibration_main, ["history"]),
        (judge_main, ["list"]),
        (annotation_main, ["annotators", "list"]),
    ]
    for main, argv in runs:
        assert main([*argv, "--db", str(empty)]) == 2, argv
        err = capsys.readouterr().err
        assert err.endswith("empty.db is an empty file, not a Denominator database; it was left as it was\n")
        assert empty.stat().st_size == 0


def test_a_closed_pipe_is_no_error(tmp_path) -> None:
    """``python -m calibration metrics ... --format trec | head -1``: the reader goes away after
    one line while the command still has about 2 MB to write; it ends quietly (no "Broken pipe",
    no traceback, no "a bug in Denominator"), as #25 promised, with exit 0 or the shell's own
    code for a pipe closed under it."""
    import subprocess
    import sys

    qrels, run = tmp_path / "big.qrels", tmp_path / "big.run"
    qrels.write_text("".join(f"q{q} 0 d{q}_0 1\n" for q in range(4000)))
    run.write_text(
        "".join(f"q{q} Q0 d{q}_{r} {r + 1} {100 - r} sys\n" for q in range(4000) for r in range(10))
    )
    cmd = [sys.executable, "-m", "calibration", "metrics", str(qrels), str(run), "--format", "trec"]
    proc = subprocess.Popen(cmd, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    first = proc.stdout.readline()
    proc.stdout.close()  # what `| head -1` does once it has its line
    err = proc.stderr.read().decode()
    code = proc.wait(timeout=120)
    assert first.strip(), "the command printed nothing before the pipe closed"
    assert err == "", err
    assert code in (0, 141, -13), code  # 0, or SIGPIPE as a shell reports it
