"""The real server in a real browser: `streamlit run app.py` driven by Debian's Chromium.

Skipped when /usr/bin/chromium is missing, unless CI=true (then it fails).
Never runs `playwright install`: the browser is the system's.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
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


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextlib.contextmanager
def running_app(db: Path, kill: bool = False) -> Iterator[str]:
    """`make run`'s command on a free port, its URL; fails fast with the server's
    output. Stopped at the end (with SIGKILL, like a crash, when ``kill``)."""
    port = _free_port()
    env = {
        **os.environ,
        "STREAMLIT_BROWSER_GATHER_USAGE_STATS": "false",
        "DENOMINATOR_DB": str(db),
        "DENOMINATOR_ANNOTATOR": "ann",  # the name a person would type in the sidebar
    }
    command = [
        sys.executable,
        "-m",
        "streamlit",
        "run",
        "app.py",
        "--server.headless",
        "true",
        "--server.address",
        "127.0.0.1",
        "--server.port",
        str(port),
        "--server.fileWatcherType",
        "none",
    ]
    # a file, not a pipe: a full pipe would block the server
    with tempfile.TemporaryFile(mode="w+") as log:
        process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
        try:
            url = f"http://127.0.0.1:{port}"
            _wait_until_healthy(url, process, log)
            yield url
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


@pytest.fixture(scope="module")
def server(chromium: Path, demo_db: Path) -> Iterator[str]:
    with running_app(demo_db) as url:
        yield url


def _wait_until_healthy(url: str, process: subprocess.Popen, log) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"the server exited with {process.returncode}:\n{_output(log)}")
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as response:
                if response.status == 200:
                    return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass
        time.sleep(0.2)
    pytest.fail(f"the server did not answer within {START_TIMEOUT:.0f} s:\n{_output(log)}")


def _output(log) -> str:
    log.flush()
    log.seek(0)
    return log.read()


@pytest.fixture(scope="module")
def browser(chromium: Path):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        instance = playwright.chromium.launch(executable_path=str(chromium), args=CHROMIUM_ARGS)
        try:
            yield instance
        finally:
            instance.close()


@pytest.fixture
def page(browser, server: str):
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    page.goto(server)
    try:
        yield page
    finally:
        context.close()


def _main(page):
    return page.locator("[data-testid='stMain']").first


def test_worked_example_in_the_browser(page):
    from playwright.sync_api import expect

    main = _main(page)
    expect(main.get_by_text("Findings")).to_be_visible(timeout=CONTENT_TIMEOUT_MS)
    for expected in (
        "q_broad",
        "0.625",  # mean recall, and q_broad's ceiling
        "0.500 = 4/8",  # q_broad's recall with its |Rel|
        "over 4 of 4 queries, 0 undefined",
        "would have said 0.700",  # the capped denominator, shown as inflation
        "3 hits",  # q_dupe: naive positional count
        "2 hits",  # q_dupe: distinct documents
    ):
        expect(main).to_contain_text(expected)
    expect(page.get_by_test_id("stException")).to_have_count(0)
    # no error, warning or info box but the local-mode banner
    expect(page.get_by_test_id("stAlert")).to_have_count(1)
    expect(page.get_by_test_id("stAlert")).to_contain_text("Single-user local mode")


def test_changing_k_in_the_browser(page):
    from playwright.sync_api import expect

    main = _main(page)
    expect(main.get_by_text("Findings")).to_be_visible(timeout=CONTENT_TIMEOUT_MS)
    k_input = page.get_by_label("k (cutoff)")
    k_input.fill("10")
    k_input.press("Enter")
    expect(main.get_by_text("1.000 = 8/8")).to_be_visible(timeout=CONTENT_TIMEOUT_MS)
    expect(main).to_contain_text("Per query at k = 10")


ARTIFACTS = ROOT / "test-artifacts"


def test_label_chunks_with_the_keyboard(browser, server, demo_db):
    """An annotator grades with the keys alone, skips, undoes; every keypress is a row."""
    import sqlite3

    from playwright.sync_api import expect

    context = browser.new_context(viewport={"width": 1300, "height": 900})
    page = context.new_page()
    try:
        page.goto(f"{server}/label")
        main = _main(page)
        expect(main.get_by_text("0 / 24 in this batch labelled by ann")).to_be_visible(
            timeout=CONTENT_TIMEOUT_MS
        )
        item = main.locator(".st-key-item-chunk code")  # the query and the chunk, not the banner's code
        expect(item.nth(1)).to_contain_text(" ", timeout=CONTENT_TIMEOUT_MS)  # the chunk drawn
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "label-chunks.png"))
        text = main.inner_text()
        for hidden in ("retriever", "bob", "score", "rank"):  # blind: no run, other person, score or rank
            assert hidden not in text.lower()
        expect(main.get_by_text("Undo the last label (u)")).to_be_visible(timeout=CONTENT_TIMEOUT_MS)
        page.mouse.click(650, 30)  # focus the page, not an input

        def item_on_screen() -> tuple[str, str]:
            return item.nth(0).inner_text(), item.nth(1).inner_text()

        for key, done in (("3", 1), ("2", 2), ("s", 2), ("1", 3), ("u", 2), ("0", 3)):
            shown = item_on_screen()
            page.keyboard.press(key)
            expect(main.get_by_text(f"{done} / 24 in this batch labelled by ann")).to_be_visible(
                timeout=CONTENT_TIMEOUT_MS
            )
            if key == "s":  # a skip moves on without a new count: wait for the next (query, chunk)
                deadline = time.monotonic() + CONTENT_TIMEOUT_MS / 1000
                while item_on_screen() == shown and time.monotonic() < deadline:
                    page.wait_for_timeout(50)
                assert item_on_screen() != shown
        expect(page.get_by_test_id("stException")).to_have_count(0)
    finally:
        context.close()
    with sqlite3.connect(demo_db) as conn:
        values = [
            row[0]
            for row in conn.execute(
                "SELECT value FROM labels l JOIN annotators a ON a.id = l.annotator_id WHERE a.name = 'ann' ORDER BY l.id"
            )
        ]
    assert values == [3, 2, 1, None, 0]  # the undo is a retraction row; nothing was overwritten
