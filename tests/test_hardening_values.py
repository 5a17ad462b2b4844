"""Hostile values, issue #38 (item 11's command-line part, and the value readers of its Build list):
a number, a size, an address scheme, a name or a special file that a command took and then ran
with for a minute, read until memory ran out, retried six times, hung on, or ended with "a bug
in Denominator". Each is now read by :mod:`annotation.values` before any work starts: exit 2,
nothing on stdout, one line on stderr saying what was expected, nothing written.

The catalogue runs each command as a process (``python -m ...``, with this tree first on the
path) under a timeout: a hang is a failure, never a stuck suite, and ``serve`` cannot replace the
test's own process.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.conftest import EXAMPLE, ROOT
from tests.test_hostile import assert_untouched, checkpoint, snapshot

GOLDEN = EXAMPLE / "golden.yaml"
RUN = EXAMPLE / "run.jsonl"
SECONDS = 30  # each refusal takes well under 5 s; before #38 some hung or ran for minutes


@dataclass(frozen=True)
class Case:
    """A hostile command line: its argv (``{db}``, ``{fifo}``, ``{out}``, ``{tmp}`` filled in), the
    environment it adds, a piece of the one error line, whether it names the demo store."""

    id: str
    argv: tuple[str, ...]
    says: str
    env: dict[str, str] = field(default_factory=dict)
    store: bool = False


CASES = [
    # judge list --prices /dev/zero read until memory ran out
    Case(
        "prices-dev-zero",
        ("judge", "list", "--db", "{db}", "--prices", "/dev/zero"),
        "argument --prices: /dev/zero is a character device, not a regular file",
        store=True,
    ),
    Case(
        "prices-fifo",
        ("judge", "list", "--db", "{db}", "--prices", "{fifo}"),
        "is a FIFO (named pipe), not a regular file",
        store=True,
    ),
    Case(
        "prices-too-big",
        ("judge", "list", "--db", "{db}", "--prices", "{tmp}/big.json"),
        "bytes; at most 1,048,576 are read",
        store=True,
    ),
    # compare --permutations 2^63 - 1 ran past a minute
    Case(
        "permutations-int64",
        ("calibration", "compare", str(GOLDEN), str(RUN), str(RUN), "--permutations", "9223372036854775807"),
        "argument --permutations: '9223372036854775807': expected an integer from 1 to 1,000,000",
    ),
    Case(
        "permutations-one-over",
        ("calibration", "compare", str(GOLDEN), str(RUN), str(RUN), "--permutations", "1000001"),
        "expected an integer from 1 to 1,000,000",
    ),
    # judge grade --base-url ftp://x retried six times
    Case(
        "base-url-ftp",
        ("judge", "grade", "--db", "{db}", "--rubric", "relevance", "--model", "m", "--base-url", "ftp://x"),
        "argument --base-url: expected an http:// or https:// address, got 'ftp://x'",
        store=True,
    ),
    Case(
        "base-url-no-host",
        ("judge", "grade", "--db", "{db}", "--rubric", "relevance", "--model", "m", "--base-url", "http://"),
        "expected an http:// or https:// address with a host",
        store=True,
    ),
    Case(
        "base-url-file",
        ("judge", "compare", "--db", "{db}", "--model", "m", "--base-url", "file:///etc/passwd"),
        "expected an http:// or https:// address",
        store=True,
    ),
    # a password in the endpoint's address: refused, never repeated (redact kept a piece of it)
    Case(
        "base-url-userinfo",
        (
            "judge",
            "grade",
            "--db",
            "{db}",
            "--rubric",
            "relevance",
            "--model",
            "m",
            "--base-url",
            "https://u:abcd/efgh@h/v1",
        ),
        "cannot carry a user name or password (user:password@host; not repeated here)",
        store=True,
    ),
    Case(
        "base-url-userinfo-plain",
        (
            "judge",
            "compare",
            "--db",
            "{db}",
            "--model",
            "m",
            "--base-url",
            "http://u:S3cretPw@127.0.0.1:9/v1",
        ),
        "cannot carry a user name or password",
        store=True,
    ),
    Case(
        "base-url-env",
        ("judge", "grade", "--db", "{db}", "--rubric", "relevance", "--model", "m"),
        "OPENAI_BASE_URL: expected an http:// or https:// address, got 'ftp://x'",
        env={"OPENAI_BASE_URL": "ftp://x"},
        store=True,
    ),
    Case(
        "batch-base-url",
        ("judge", "batch", "status", "batch_1", "--base-url", "gopher://x"),
        "expected an http:// or https:// address",
    ),
    # export --format qrels --judge '' wrote people's grades
    Case(
        "export-judge-empty",
        ("annotation", "export", "--db", "{db}", "--format", "qrels", "--judge", "", "-o", "{out}"),
        "argument --judge: a judge's name cannot be empty",
        store=True,
    ),
    # baseline --name '' stored a run import --run refuses: one rule for both
    Case(
        "baseline-name-empty",
        ("annotation", "baseline", "--db", "{db}", "--name", ""),
        "argument --name: a run's name cannot be empty",
        store=True,
    ),
    Case(
        "baseline-name-blank",
        ("annotation", "baseline", "--db", "{db}", "--name", "   "),
        "argument --name: a run's name cannot be empty",
        store=True,
    ),
    Case(
        "import-run-name-empty",
        ("annotation", "import", "--db", "{db}", "--run", str(RUN), "--name", ""),
        "argument --name: a run's name cannot be empty",
        store=True,
    ),
    Case(
        "baseline-name-line-break",
        ("annotation", "baseline", "--db", "{db}", "--name", "a\nb"),
        "holds a control character",
        store=True,
    ),
    # "a bug in Denominator" for judge batch collect ''
    Case(
        "batch-collect-empty-id",
        ("judge", "batch", "collect", "", "--db", "{db}", "--base-url", "http://127.0.0.1:9/v1"),
        "argument ID: a batch id cannot be empty",
        store=True,
    ),
    # "a bug in Denominator" for history --diff on a corrupt row
    Case(
        "history-diff-corrupt-row",
        ("calibration", "history", "--db", "{history}", "--diff", "1", "2"),
        "recorded check 2 cannot be read (its stored report is broken: query 'q_faw': rr is str, not a number)",
    ),
    Case(
        "history-diff-corrupt-findings",
        ("calibration", "history", "--db", "{history}", "--diff", "3", "1", "--format", "json"),
        "recorded check 3 cannot be read (its stored report is broken: query 'q_faw': findings are not a list",
    ),
    # "a bug in Denominator" for a non-UTF-8 secrets file; a hang on a FIFO
    Case(
        "secrets-not-utf8",
        ("denominator", "serve", "--db", "{db}", "--secrets", "{tmp}/latin1.toml", "--port", "9"),
        "--secrets {tmp}/latin1.toml: not UTF-8 text (at byte",
        store=True,
    ),
    Case(
        "secrets-fifo",
        ("denominator", "serve", "--db", "{db}", "--secrets", "{fifo}", "--port", "9"),
        "--secrets {fifo}: {fifo} is a FIFO (named pipe), not a regular file; nothing was opened",
        store=True,
    ),
    # "a bug in Denominator" for DENOMINATOR_SESSION_HOURS=1e9 (at the first sign-in)
    Case(
        "session-hours-1e9",
        ("denominator", "serve", "--db", "{db}", "--port", "9"),
        "DENOMINATOR_SESSION_HOURS must be a positive number of hours, not '1e9': above 0 and at most 8,760",
        env={"DENOMINATOR_SESSION_HOURS": "1e9"},
        store=True,
    ),
    # hangs on DENOMINATOR_DB=FIFO
    Case(
        "db-fifo-serve",
        ("denominator", "serve", "--port", "9"),
        "the database: {fifo} is a FIFO (named pipe), not a regular file; nothing was opened",
        env={"DENOMINATOR_DB": "{fifo}"},
    ),
    Case(
        "db-fifo-import",
        ("annotation", "import", "--corpus", str(EXAMPLE / "corpus.jsonl")),
        "the database: {fifo} is a FIFO (named pipe)",
        env={"DENOMINATOR_DB": "{fifo}"},
    ),
    Case(
        "db-fifo-demo",
        ("denominator", "demo", "--if-empty"),
        "the database: {fifo} is a FIFO (named pipe)",
        env={"DENOMINATOR_DB": "{fifo}"},
    ),
    Case(
        "db-flag-fifo-export",
        ("annotation", "export", "--db", "sqlite:{fifo}", "--format", "qrels", "-o", "{out}"),
        "the database: {fifo} is a FIFO (named pipe)",
    ),
]


def command(group: str) -> list[str]:
    return [sys.executable, "-m", group]


def run(argv: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess:
    """``python -m GROUP ...`` with this tree first on the path; a hang past :data:`SECONDS` fails."""
    inherited = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "DENOMINATOR_"))}
    full = {**inherited, "PYTHONPATH": str(ROOT), **env}
    try:
        return subprocess.run(
            command(argv[0]) + argv[1:], cwd=cwd, env=full, capture_output=True, text=True, timeout=SECONDS
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"{' '.join(argv)}: still running after {SECONDS} s (a hang or a long run)")


def the_error_line(err: str, says: str) -> str:
    """The one stderr line: ``error: ...`` holding ``says``, no traceback, no 'a bug'."""
    assert err.endswith("\n") and err.count("\n") == 1, err
    assert err.startswith("error: "), err
    assert "a bug in Denominator" not in err and "Traceback" not in err, err
    assert says in err, (err, says)
    return err.removesuffix("\n")


@pytest.fixture(scope="module")
def demo_template(tmp_path_factory) -> Path:
    from denominator.demo import build_demo

    db = tmp_path_factory.mktemp("demo38") / "demo.db"
    build_demo(str(db))
    checkpoint(db)
    return db


@pytest.fixture(scope="module")
def history_db(tmp_path_factory) -> Path:
    """A store with one recorded check (1) and two rows whose stored report is JSON a diff cannot
    read: a figure that is text (2), findings that are a number (3)."""
    from annotation.store import Store

    db = tmp_path_factory.mktemp("history38") / "h.db"
    done = run(
        [
            "calibration",
            "check",
            str(GOLDEN),
            str(RUN),
            "-k",
            "10",
            "--record",
            "--name",
            "r",
            "--db",
            str(db),
        ],
        {},
        db.parent,
    )
    assert "recorded check 1" in done.stderr, done.stderr
    with Store(db) as store, store.write():
        for report in ('{"queries": {"q_faw": {"rr": "x"}}}', '{"queries": {"q_faw": {"findings": 5}}}'):
            store.db.execute(
                "INSERT INTO check_reports (name, k, golden_hash, golden_labels, run_hash, passed, report, "
                "created_at) VALUES ('r', 10, 'h', 1, 'h', 0, ?, '2026-12-02T00:00:00')",
                [report],
            )
    checkpoint(db)
    return db


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_a_hostile_value_is_refused_before_work_starts(case, demo_template, history_db, tmp_path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo, 0o600)
    with open(tmp_path / "big.json", "wb") as handle:
        handle.truncate(2 << 20)
    (tmp_path / "latin1.toml").write_bytes(b'[auth]\nredirect_uri = "caf\xe9"\n')
    (tmp_path / "latin1.toml").chmod(0o600)
    db = tmp_path / "demo.db"
    db.write_bytes(demo_template.read_bytes())
    out = tmp_path / "out.qrels"
    fill = {
        "db": str(db),
        "fifo": str(fifo),
        "out": str(out),
        "tmp": str(tmp_path),
        "history": str(history_db),
    }
    argv = [a.format(**fill) for a in case.argv]
    env = {k: v.format(**fill) for k, v in case.env.items()}
    before = snapshot(db) if case.store else None
    history_before = snapshot(history_db)
    done = run(argv, env, tmp_path)
    assert (done.returncode, done.stdout) == (2, ""), (done.returncode, done.stdout, done.stderr)
    the_error_line(done.stderr, case.says.format(**fill))
    for secret in ("abcd", "efgh", "S3cretPw"):  # an endpoint's password is never repeated
        assert secret not in done.stderr, done.stderr
    assert not out.exists(), "a refused export wrote its file"
    if before is not None:
        assert_untouched(db, before)
    assert snapshot(history_db) == history_before
    assert fifo.exists() and not (tmp_path / "pipe-journal").exists()


# --------------------------------------------------------------------------- the readers themselves


def test_the_store_does_not_load_the_command_lines() -> None:
    """#41: options imported cli_base and the store imports options, so importing the store loaded
    the CLI's boundary; the options table now reads :mod:`annotation.values`."""
    code = "import sys, annotation.store; print('annotation.cli_base' in sys.modules)"
    done = subprocess.run(
        [sys.executable, "-c", code],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=SECONDS,
    )
    assert done.stdout == "False\n", done.stderr


def test_values_is_light_and_cli_base_re_exports_it() -> None:
    import ast

    from annotation import cli_base, values

    tree = ast.parse((ROOT / "annotation" / "values.py").read_text(encoding="utf-8"))
    modules = [
        str(node.module) if isinstance(node, ast.ImportFrom) else alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.Import | ast.ImportFrom)
        for alias in node.names
    ]
    ours = {m for m in modules if m.split(".")[0] == "annotation"}
    assert ours == {"annotation.errors"}  # the standard library's, and the errors' root, only
    assert all(m.split(".")[0] in sys.stdlib_module_names | {"__future__"} for m in set(modules) - ours)
    for name in ("positive_int", "int64", "seed", "grade", "finite_float", "fraction", "ranks", "MAX_INT"):
        assert getattr(cli_base, name) is getattr(values, name)


def test_a_bad_value_is_an_argparse_error_and_a_named_error() -> None:
    import argparse

    from annotation.errors import DenominatorError
    from annotation.values import BadValue, positive_int

    with pytest.raises(BadValue) as info:
        positive_int("0")
    assert isinstance(info.value, argparse.ArgumentTypeError)
    assert isinstance(info.value, DenominatorError)


@pytest.mark.parametrize(
    ("url", "ok"),
    [
        ("http://127.0.0.1:8000/v1", True),
        ("https://api.example.com/v1", True),
        ("HTTPS://Example.com", True),
        ("ftp://x", False),
        ("file:///etc/passwd", False),
        ("http://", False),
        ("https:///v1", False),
        ("127.0.0.1:8000", False),
        ("", False),
        ("http://[::1", False),
        ("https://u:abcd/efgh@h/v1", False),
        ("http://user:pw@127.0.0.1/v1", False),
        ("http://127.0.0.1/v1?who=a@b", True),
    ],
)
def test_endpoint_addresses(url, ok) -> None:
    from annotation.values import BadValue, endpoint_url

    if ok:
        assert endpoint_url(url) == url
    else:
        with pytest.raises(BadValue):
            endpoint_url(url)


def test_the_one_name_rule() -> None:
    from annotation.values import name_problem, run_name

    assert name_problem("bm25-baseline") is None
    assert name_problem("") == name_problem("  ") == name_problem(None) == "a name cannot be empty"
    assert "control character" in (name_problem("a\tb") or "")
    assert "at most 200" in (name_problem("x" * 201) or "")
    assert run_name(" spaced ") == " spaced "  # kept as given: the store's rule on spaces stands


def test_a_baseline_named_nothing_is_refused_by_the_library_too(demo_template, tmp_path) -> None:
    """The Data page and actions.baseline go through add_baseline: the same rule as the flag."""
    from annotation.baseline import add_baseline
    from annotation.store import Store, StoreError

    db = tmp_path / "demo.db"
    db.write_bytes(demo_template.read_bytes())
    before = snapshot(db)
    with Store(db) as store, pytest.raises(StoreError, match="a run's name cannot be empty"):
        add_baseline(store, name=" ")
    assert_untouched(db, before)


def test_permutations_up_to_the_bound_are_taken() -> None:
    from annotation.options import option
    from annotation.values import MAX_PERMUTATIONS, BadValue, permutations

    assert permutations("1000000") == MAX_PERMUTATIONS == option("permutations").maximum
    assert option("permutations").type is permutations
    for bad in ("0", "1000001", "1_000", "١٠", "9" * 5000):
        with pytest.raises(BadValue):
            permutations(bad)


def test_session_hours_are_bounded(monkeypatch) -> None:
    from annotation.store import StoreError
    from annotation.store.identity import MAX_SESSION_HOURS, SESSION_HOURS_ENV, session_hours

    monkeypatch.setenv(SESSION_HOURS_ENV, "8760")
    assert session_hours() == MAX_SESSION_HOURS == 8760
    for bad in ("1e9", "8760.5", "1e308"):
        monkeypatch.setenv(SESSION_HOURS_ENV, bad)
        with pytest.raises(StoreError, match="above 0 and at most 8,760"):
            session_hours()


def opened_as_writer_later(fifo: Path) -> threading.Thread:
    """A writer that opens ``fifo`` after a while and closes it: a reader stuck on it is let go (the
    test then fails on what the reader did, never hangs)."""

    def let_go() -> None:
        time.sleep(5)
        try:
            fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
        except OSError:  # no reader: nobody to let go
            return
        os.close(fd)

    thread = threading.Thread(target=let_go, daemon=True)
    thread.start()
    return thread


def test_small_files_refuse_fifos_devices_and_size_without_reading(tmp_path) -> None:
    from annotation.values import BadValue, read_small_file, small_file

    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    opened_as_writer_later(fifo)
    started = time.monotonic()
    for special, kind in (
        (fifo, "a FIFO"),
        (Path("/dev/zero"), "a character device"),
        (tmp_path, "a folder"),
    ):
        with pytest.raises(BadValue, match=kind):
            read_small_file(special, "--x")
        with pytest.raises(BadValue, match=kind):
            small_file(str(special))
    assert time.monotonic() - started < 2, "a FIFO was opened and waited on"
    big = tmp_path / "big"
    with open(big, "wb") as handle:
        handle.truncate(5 << 20)
    with pytest.raises(BadValue, match="5,242,880 bytes; at most 1,048,576"):
        read_small_file(big, "--x")
    (tmp_path / "ok.json").write_text("{}")
    assert read_small_file(tmp_path / "ok.json", "--x") == b"{}"
    with pytest.raises(FileNotFoundError):
        read_small_file(tmp_path / "missing", "--x")


def test_a_price_table_that_is_a_fifo_or_not_utf8_is_named(tmp_path) -> None:
    """judge's Prices.load (every --prices): the reader is bounded too, not only the flag."""
    from annotation.values import BadValue
    from judge.prices import InvalidPrices, Prices

    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    opened_as_writer_later(fifo)
    with pytest.raises(BadValue, match="the price table: .* is a FIFO"):
        Prices.load(fifo)
    latin = tmp_path / "latin1.json"
    latin.write_bytes(b'{"caf\xe9": 1}')
    with pytest.raises(InvalidPrices, match="not a JSON price table"):
        Prices.load(latin)
