"""Shared test setup: the repository's packages importable however pytest is started, and
every fixture and helper more than one test file needs, defined here once. A test file
imports helpers from here (``from tests.conftest import ...``), never from another test file.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from annotation.render import plain

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

if TYPE_CHECKING:
    from streamlit.testing.v1 import AppTest

    from tests.fake_openai import FakeOpenAI

APP = ROOT / "denominator" / "app.py"
EXAMPLE = ROOT / "examples" / "worked-example"
ARTIFACTS = ROOT / "test-artifacts"  # the browser tests' screenshots


def shared_dir() -> Path | None:
    """The shared data: $DENOMINATOR_SHARED when set, else ``shared`` in the checkout's parent
    folder; None when neither holds a ``data`` folder."""
    for candidate in (os.environ.get("DENOMINATOR_SHARED"), ROOT.parent / "shared"):
        if candidate and (Path(candidate) / "data").is_dir():
            return Path(candidate)
    return None


def wait_until(condition: Callable[[], Any], what: str, timeout: float = 60.0) -> Any:
    """``condition()``'s first true value, polled every 10 ms; fails naming ``what`` after ``timeout``
    seconds. A test waits for the event it needs (a log line, a lock held), never a guessed delay."""
    deadline = time.monotonic() + timeout
    while not (value := condition()):
        if time.monotonic() > deadline:
            pytest.fail(f"waited {timeout:.0f} s for {what}")
        time.sleep(0.01)
    return value


def cli(main: Callable[[list[str]], int], capsys, *argv) -> tuple[int, str, str]:
    """A package's ``main`` on ``argv`` (paths and numbers turned to strings): exit code, stdout, stderr."""
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


# ---------------------------------------------------------------- figures

# Figures the load and crash tests measure (rows written and stored, errors, calls
# repeated): printed at the end of every run, so `make test` itself reports them.
FIGURES: list[str] = []


@pytest.fixture
def figure():
    """``figure("...")`` records a measured figure for the end-of-run summary."""
    return FIGURES.append


def pytest_terminal_summary(terminalreporter) -> None:
    if FIGURES:
        terminalreporter.section("figures measured by the tests")
        for line in FIGURES:
            terminalreporter.write_line(line)


# ---------------------------------------------------------------- the two backends


@pytest.fixture(scope="session")
def postgres_server():
    """One PostgreSQL server for the whole run (tests/postgres_server.py); skipped with the
    reason when it cannot start here, a failure under CI=true."""
    from tests.postgres_server import PostgresServer, missing_reason

    reason = missing_reason()
    if reason:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI=true and no PostgreSQL server: {reason}")
        pytest.skip(reason)
    server = PostgresServer().start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def pg_url(postgres_server) -> str:
    """A new empty PostgreSQL database on the tests' server: its URL."""
    return postgres_server.database()


def integrity_errors() -> tuple[type[Exception], ...]:
    """What a broken constraint or an append-only guard raises, on either backend's driver."""
    import sqlite3

    import psycopg

    return (sqlite3.IntegrityError, psycopg.errors.IntegrityError)


class HeldWriteLock:
    """Another connection holding the store's write lock, as a long import does: SQLite's
    ``BEGIN IMMEDIATE`` on the file, or on PostgreSQL a transaction holding the advisory lock every
    write takes (annotation.store.postgres.WRITE_LOCK). :meth:`release` commits and closes."""

    def __init__(self, db: Path | str) -> None:
        from annotation.store import postgres

        if postgres.is_url(str(db)):
            import psycopg

            self.conn = psycopg.connect(str(db), autocommit=True)
            self.conn.execute("BEGIN")
            self.conn.execute(f"SELECT pg_advisory_xact_lock({postgres.WRITE_LOCK})")
        else:
            import sqlite3

            self.conn = sqlite3.connect(db, isolation_level=None)
            self.conn.execute("BEGIN IMMEDIATE")

    def release(self, commit: bool = True) -> None:
        self.conn.execute("COMMIT" if commit else "ROLLBACK")
        self.conn.close()


def as_independent_draws(db: Path | str, items: list[int] | None = None, week: str = "2020-W01") -> None:
    """The trace ``items`` (default: every trace item) recorded as an old week's random review sample:
    the judge's verdict then reads them (issue #39: only labels drawn at random give a verdict). Their
    queries stay: the demo's 4 (the worked example's), so a check scoped to its golden set reads them,
    clustered by query (tests pass ``--rule min_queries=4``). tests/test_judged_review.py holds what
    the review says of chosen labels and of too few queries."""
    from annotation.store import Store

    with Store(db) as store:
        if items is None:
            items = [int(i) for (i,) in store.db.execute("SELECT id FROM items WHERE kind = 'trace'")]
        store.add_review_sample(week, [(int(i), "test") for i in items])


def stored_bytes(db: Path | str) -> bytes:
    """Everything the store holds, as bytes to search: the SQLite file and its WAL, or on
    PostgreSQL every row of every table as text."""
    from annotation.store import Store, postgres

    if postgres.is_url(str(db)):
        with Store(db) as store:
            return "\n".join(
                str(row[0])
                for table in sorted(store._tables())
                for row in store.db.execute(f"SELECT t::text FROM {table} t").fetchall()
            ).encode()
    path = Path(db)
    wal = path.with_name(path.name + "-wal")
    return path.read_bytes() + (wal.read_bytes() if wal.exists() else b"")


BACKENDS = ["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)]


@pytest.fixture(params=BACKENDS)
def backend(request) -> str:
    """The store's backend under test: each test that takes it runs on SQLite and on PostgreSQL."""
    return request.param


@pytest.fixture
def db_at(backend, tmp_path, request) -> str:
    """Where a new empty store is, on the backend under test: a file path (SQLite) or a URL
    (a new database on the tests' PostgreSQL server)."""
    if backend == "postgresql":
        return request.getfixturevalue("postgres_server").database()
    return str(tmp_path / "store.db")


def store_copy(source: Path, backend: str, tmp_path: Path, request, name: str = "copy.db") -> Path | str:
    """A copy of the SQLite store ``source`` on the backend under test: a copied file, or a new
    PostgreSQL database it was copied into (annotation.store.transfer, what ``migrate`` runs)."""
    import shutil

    from annotation.store import Store
    from annotation.store.transfer import copy_store

    if backend == "postgresql":
        url = request.getfixturevalue("postgres_server").database()
        with Store(source) as lite, Store(url) as target:
            copy_store(lite, target)
        return url
    copied = tmp_path / name
    shutil.copy(source, copied)
    return copied


# ---------------------------------------------------------------- the demo database


@pytest.fixture
def demo_db(backend, tmp_path, monkeypatch, request) -> Path | str:
    """The demo database (build_demo: the worked example as a labelling project, no judge
    labels) on each backend: at tmp_path/demo.db (SQLite), or in a new PostgreSQL database (its
    URL); the app pointed at it (DENOMINATOR_DB); no annotator name or OpenAI setting comes in
    from the environment."""
    from denominator.demo import build_demo

    db = request.getfixturevalue("pg_url") if backend == "postgresql" else tmp_path / "demo.db"
    build_demo(str(db))
    monkeypatch.setenv("DENOMINATOR_DB", str(db))
    for name in ("DENOMINATOR_ANNOTATOR", "OPENAI_BASE_URL", "OPENAI_MODEL", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    return db


def add_tokens(db: Path) -> dict[str, str]:
    """Access tokens: ann an annotator, root an admin (the app then asks for a token)."""
    from annotation.store import Store

    with Store(db) as store:
        return {"ann": store.add_annotator("ann", "annotator"), "root": store.add_annotator("root", "admin")}


def plant_secrets(db: Path, reason: str) -> None:
    """What an annotator must never see, planted in a demo database to be looked for: every
    run score 0.987654, a judge 'gpt-x' whose label on every item gives ``reason``, and
    bob's label (3) on every item he shares with ann."""
    from annotation.store import Store

    with Store(db) as store, store.write():
        store.db.execute("UPDATE rankings SET score = 0.987654")
        store.db.execute(
            "INSERT INTO judges (fingerprint, name, version, model, endpoint, created_at) "
            "VALUES ('fp', 'gpt-x/relevance', 1, 'gpt-x', 'http://h', 'now')"
        )
        store.db.execute(
            """INSERT INTO judge_labels (item_id, fingerprint, value, reason, created_at)
               SELECT id, 'fp', 3, ?, 'now' FROM items""",
            [reason],
        )
    with Store(db) as store:
        for (item_id,) in store.db.execute(
            """SELECT s.item_id FROM assignments s JOIN annotators a ON a.id = s.annotator_id
               WHERE a.name = 'bob'"""
        ).fetchall():
            store.add_label(item_id, "bob", 3)


# ---------------------------------------------------------------- Streamlit's AppTest


def _clear_streamlit_caches() -> None:
    st = sys.modules.get("streamlit")  # not imported yet: nothing cached
    if st is not None:
        st.cache_data.clear()
        st.cache_resource.clear()
        # Streamlit reads .streamlit/config.toml from the folder it is first used in, once per
        # process: after a test that ran from another folder, the app would see no server.address
        # and refuse to serve token-less admin access. Every AppTest runs as `make run` serves it.
        st.config.set_option("server.address", "127.0.0.1")


@pytest.fixture(autouse=True)
def clear_streamlit_caches():
    """st.cache_data and st.cache_resource outlive an AppTest inside one pytest run: every
    test starts, and leaves, with both empty."""
    _clear_streamlit_caches()
    yield
    _clear_streamlit_caches()


def _render(render: str) -> None:
    import importlib

    module, _, name = render.rpartition(".")
    getattr(importlib.import_module(module), name)()


def app_test(timeout: float = 30) -> AppTest:
    """app.py as `make run` serves it (not run yet)."""
    from streamlit.testing.v1 import AppTest

    return AppTest.from_file(str(APP), default_timeout=timeout)


def page_test(render: str, timeout: float = 30, state: dict[str, Any] | None = None) -> AppTest:
    """One page on its own (not run yet): ``render`` is its function's dotted name, such as
    ``denominator.ui.label.render_label_chunks_page``; ``state`` goes into its session state first."""
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_function(_render, args=(render,), default_timeout=timeout)
    for key, value in (state or {}).items():
        at.session_state[key] = value
    return at


def page_text(at: AppTest) -> str:
    """Everything a person reads on the page (the sidebar too), tables and buttons included, as one string."""
    parts: list[str] = []
    for kind in "title header subheader markdown caption code text error warning info success".split():
        parts.extend(str(e.value) for e in getattr(at, kind))
    parts += [f"{m.label} {m.value}" for m in at.metric] + [b.label for b in at.button]
    parts += [p.text or "" for p in at.get("progress")]
    parts += [t.value.to_string() for t in at.table] + [d.value.to_string() for d in at.dataframe]
    return plain("\n".join(parts))  # data strings are escaped for Markdown: the text a person reads


# ---------------------------------------------------------------- the fake OpenAI endpoint


@pytest.fixture
def fake_openai() -> Iterator[Callable[..., FakeOpenAI]]:
    """``fake_openai(**options)``: a FakeOpenAI (tests/fake_openai.py) serving on 127.0.0.1,
    started now and stopped when the test ends."""
    from tests.fake_openai import FakeOpenAI

    servers: list[FakeOpenAI] = []

    def start(**options) -> FakeOpenAI:
        servers.append(FakeOpenAI(**options).start())
        return servers[-1]

    yield start
    for server in reversed(servers):
        server.stop()


class FakeOpenAIProcess:
    """``python -m tests.fake_openai --port 0 --control [options]`` in a process of its own, as
    the benchmarks and the kill-and-resume tests run it; its gate under the test's control."""

    def __init__(self, *options: str, log: Path | None = None):
        command = [sys.executable, "-m", "tests.fake_openai", "--port", "0", "--control", *options]
        self.log = log
        if log is not None:
            command += ["--log", str(log)]
        self.process = subprocess.Popen(
            command, cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        self.banner = self.process.stdout.readline().strip()
        if not self.banner.startswith("listening on "):
            self.stop()
            pytest.fail(f"the fake server did not start: {self.banner!r}")
        self.url = self.banner.removeprefix("listening on ")

    def _command(self, command: str) -> None:
        self.process.stdin.write(command + "\n")
        self.process.stdin.flush()
        answer = self.process.stdout.readline().strip()
        assert answer == f"ok {command}", answer  # the server holds to it from now on

    def hold(self) -> None:
        """Close the gate: replies wait, their calls in flight (FakeOpenAI.hold)."""
        self._command("hold")

    def allow(self, n: int) -> None:
        """Let n more replies through the closed gate."""
        self._command(f"allow {n}")

    def open(self) -> None:
        self._command("open")

    def events(self, since: float = 0.0) -> tuple[Counter, Counter]:
        """Calls received and served (Counters of call keys) logged at or after ``since``."""
        received, served = Counter(), Counter()
        for line in self.log.read_text().splitlines():
            event = json.loads(line)
            if event["t"] >= since:
                (received if event["event"] == "received" else served)[event["key"]] += 1
        return received, served

    def wait_served(self, n: int, since: float, client: subprocess.Popen) -> None:
        """Wait until ``n`` answers have been served since ``since``; fails if ``client`` ends first."""

        def served() -> bool:
            assert client.poll() is None, f"the client ended ({client.returncode}) before {n} answers"
            return sum(self.events(since)[1].values()) >= n

        wait_until(served, f"{n} answers served")

    def stop(self) -> int:
        """SIGTERM; its exit code."""
        self.process.terminate()
        try:
            code = self.process.wait(timeout=10)
        finally:
            self.process.stdin.close()
            self.process.stdout.close()
        return code


@contextlib.contextmanager
def fake_openai_process(*options: str, log: Path | None = None) -> Iterator[FakeOpenAIProcess]:
    server = FakeOpenAIProcess(*options, log=log)
    try:
        yield server
    finally:
        if server.process.returncode is None:
            server.stop()


# ---------------------------------------------------------------- the judge, interrupted

CONCURRENCY = 4  # the judge's calls in flight in the kill-and-resume tests


def start_judge(db: Path, url: str) -> subprocess.Popen:
    """`python -m judge grade` on the relevance rubric against ``url``, CONCURRENCY calls at once."""
    command = [sys.executable, "-m", "judge", "grade", "--db", str(db), "--rubric", "relevance", "--judge"]
    command += ["openai", "--base-url", url, "--model", "fake-judge", "--concurrency", str(CONCURRENCY)]
    return subprocess.Popen(
        command,
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={"PATH": "/usr/bin:/bin", "OPENAI_API_KEY": "test"},
    )


def judge_values(db: Path) -> dict[int, int]:
    """The judge's grade of each item; asserts each answer is stored once."""
    from annotation.store import Store

    with Store(db) as store:
        rows = store.db.execute("SELECT item_id, value FROM judge_labels WHERE value IS NOT NULL").fetchall()
    counts = Counter(item for item, _ in rows)
    assert max(counts.values()) == 1  # each answer stored once
    return dict(rows)


@pytest.fixture(scope="module")
def judge_server(tmp_path_factory) -> Iterator[FakeOpenAIProcess]:
    """The fake endpoint in its own process (0.15 s a reply, every call logged), gate open."""
    log = tmp_path_factory.mktemp("server") / "calls.jsonl"
    with fake_openai_process("--latency", "0.15", log=log) as server:
        yield server


@pytest.fixture(scope="module")
def uninterrupted(judge_server, tmp_path_factory) -> tuple[dict[int, int], Path]:
    """The labels of a judge run nobody stopped, and a copy of the demo database as it was before."""
    import shutil

    from denominator.demo import build_demo

    folder = tmp_path_factory.mktemp("fresh")
    fresh = folder / "fresh.db"
    build_demo(str(fresh))
    pristine = folder / "pristine.db"
    shutil.copy(fresh, pristine)
    process = start_judge(fresh, judge_server.url)
    out, err = process.communicate(timeout=120)
    assert process.returncode == 0, err
    assert "40 calls made, 0 of 40 already done, 0 errors" in out
    return judge_values(fresh), pristine


# ---------------------------------------------------------------- the browser tests

CHROMIUM = Path("/usr/bin/chromium")  # Debian's Chromium, never a downloaded browser
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
START_TIMEOUT = 60.0
CONTENT_TIMEOUT_MS = 30_000


@pytest.fixture(scope="module")
def chromium() -> Path:
    """/usr/bin/chromium; the test is skipped without it, unless CI=true (then it fails)."""
    if not CHROMIUM.exists():
        message = f"{CHROMIUM} is missing (apt-get install chromium)"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    return CHROMIUM


def build_demo_as_make_run(path: Path) -> Path:
    """`make run`'s demo database, built the same way (`python -m denominator demo`)."""
    subprocess.run([sys.executable, "-m", "denominator", "demo", "--db", str(path)], cwd=ROOT, check=True)
    return path


@pytest.fixture(scope="module")
def make_run_db(tmp_path_factory) -> Path:
    """`make run`'s demo database, one for the module."""
    return build_demo_as_make_run(tmp_path_factory.mktemp("demo") / "demo.db")


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextlib.contextmanager
def running_app(db: Path, kill: bool = False, port: int | None = None) -> Iterator[str]:
    """`make run`'s command on a free port (or ``port``: a server started again where it was),
    its URL; fails fast with the server's output. Stopped at the end (with SIGKILL, like a
    crash, when ``kill``)."""
    port = port or free_port()
    env = {
        **os.environ,
        "STREAMLIT_BROWSER_GATHER_USAGE_STATS": "false",
        "DENOMINATOR_DB": str(db),
        "DENOMINATOR_ANNOTATOR": "ann",  # the name a person would type in the sidebar
    }
    command = [sys.executable, "-m", "denominator", "serve", "--port", str(port)]
    with started_server(command, env, port, kill=kill) as server:
        yield server.url


class StartedServer:
    """A server a test started: its URL and its output so far."""

    def __init__(self, url: str, log: Any) -> None:
        self.url, self._log = url, log

    def output(self) -> str:
        return _output(self._log)


@contextlib.contextmanager
def started_server(
    command: list[str],
    env: dict[str, str],
    port: int,
    *,
    url: str | None = None,
    cwd: Path = ROOT,
    kill: bool = False,
) -> Iterator[StartedServer]:
    """``command``, a server on 127.0.0.1:``port``, once its health check answers (it fails fast
    with the server's output); reached at ``url`` (default http://127.0.0.1:PORT). Stopped at the
    end (with SIGKILL, like a crash, when ``kill``)."""
    # a file, not a pipe: a full pipe would block the server
    with tempfile.TemporaryFile(mode="w+") as log:
        process = subprocess.Popen(command, cwd=cwd, env=env, stdout=log, stderr=subprocess.STDOUT)
        try:
            _wait_until_healthy(f"http://127.0.0.1:{port}", process, log)
            yield StartedServer(url or f"http://127.0.0.1:{port}", log)
        finally:
            if kill:
                process.send_signal(signal.SIGKILL)
            else:
                process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=10)


def _wait_until_healthy(url: str, process: subprocess.Popen, log) -> None:
    def healthy() -> bool:
        if process.poll() is not None:
            pytest.fail(f"the server exited with {process.returncode}:\n{_output(log)}")
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as response:
                return response.status == 200
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            return False

    deadline = time.monotonic() + START_TIMEOUT
    while not healthy():
        if time.monotonic() > deadline:
            pytest.fail(f"the server did not answer within {START_TIMEOUT:.0f} s:\n{_output(log)}")
        time.sleep(0.2)


def _output(log) -> str:
    log.flush()
    log.seek(0)
    return log.read()


def main_pane(page):
    """The page's main pane (not the sidebar)."""
    return page.locator("[data-testid='stMain']").first


def open_sign_in_link(page, url: str) -> None:
    """Follow a ``?token=`` link as a person does: the link's own page (annotation.access.routes:
    a link never signs in by itself), then its button, which signs in and leads to the page."""
    page.goto(url)
    page.locator("#sign-in-by-link").click()
    page.wait_for_url(lambda address: "token=" not in address and "/_denominator/" not in address)


def wait_for_script_run(page) -> None:
    """Wait until the app's script run has ended (its elements all drawn, the stale ones gone):
    Streamlit marks it on the app's root element."""
    from playwright.sync_api import expect

    finished = page.locator("[data-testid='stApp'][data-test-script-state='notRunning']")
    expect(finished).to_have_count(1, timeout=CONTENT_TIMEOUT_MS)


# ---------------------------------------------------------------- wall-clock bounds on a loaded machine

QUIET_REFERENCE_SECONDS = 0.06  # reference_seconds() on a quiet 2-core machine of this kind


def reference_seconds() -> float:
    """A fixed piece of pure-Python work (a million multiply-adds), timed now."""
    started = time.perf_counter()
    total = 0
    for i in range(1_000_000):
        total += i * i
    return time.perf_counter() - started


class Timed:
    seconds: float = 0.0
    slowness: float = 1.0  # how much slower than quiet this machine ran, around the timed work

    def within(self, bound: float, what: str = "") -> None:
        """The work took under ``bound`` seconds on a quiet machine: ``bound`` times the slowness
        measured just before and after it (never less than ``bound``). A loaded machine (a shared
        CI runner, the browser tests beside) stretches the bound with the work."""
        limit = bound * self.slowness
        assert self.seconds < limit, (
            f"{what or 'the work'} took {self.seconds:.2f} s; bound {bound:g} s x slowness {self.slowness:.2f} "
            f"= {limit:.2f} s"
        )


@contextlib.contextmanager
def timed() -> Iterator[Timed]:
    """Time the block, and how loaded the machine was around it (:meth:`Timed.within`)."""
    result = Timed()
    before = reference_seconds()
    started = time.monotonic()
    try:
        yield result
    finally:
        result.seconds = time.monotonic() - started
        after = reference_seconds()
        result.slowness = max(1.0, before / QUIET_REFERENCE_SECONDS, after / QUIET_REFERENCE_SECONDS)
