"""The real server in a real browser: `streamlit run app.py` driven by Debian's Chromium.

Skipped when /usr/bin/chromium is missing, unless CI=true (then it fails).
Never runs `playwright install`: the browser is the system's.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import (
    ARTIFACTS,
    CHROMIUM_ARGS,
    CONTENT_TIMEOUT_MS,
    main_pane,
    running_app,
    wait_for_script_run,
    wait_until,
)

pytestmark = pytest.mark.slow  # a real server and a real browser


@pytest.fixture(scope="module")
def server(chromium: Path, make_run_db: Path) -> Iterator[str]:
    with running_app(make_run_db) as url:
        yield url


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


def test_worked_example_in_the_browser(page):
    from playwright.sync_api import expect

    main = main_pane(page)
    expect(main.get_by_text("Findings", exact=True)).to_be_visible(timeout=CONTENT_TIMEOUT_MS)
    for expected in (  # at the CLI's default cutoff, k = 10
        "q_broad",
        "Per query at k = 10",
        "1.000 = 8/8",  # q_broad's recall with its |Rel|: all 8 in the top 10
        "0.800 = 8/10",  # and its precision with its k
        "over 4 of 4 queries, 0 undefined",
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

    main = main_pane(page)
    expect(main.get_by_text("Findings", exact=True)).to_be_visible(timeout=CONTENT_TIMEOUT_MS)
    k_input = page.get_by_label("k (cutoff)")
    k_input.fill("5")
    k_input.press("Enter")
    expect(main.get_by_text("0.500 = 4/8")).to_be_visible(timeout=CONTENT_TIMEOUT_MS)
    expect(main).to_contain_text("Per query at k = 5")
    for expected in (
        "0.625",  # mean recall, and q_broad's ceiling
        "would read 0.700 instead of 0.625",  # the capped denominator, shown as inflation
    ):
        expect(main).to_contain_text(expected)


def test_label_chunks_with_the_keyboard(browser, server, make_run_db):
    """An annotator grades with the keys alone, skips, undoes; every keypress is a row."""
    from playwright.sync_api import expect

    context = browser.new_context(viewport={"width": 1300, "height": 900})
    page = context.new_page()
    try:
        page.goto(f"{server}/label")
        main = main_pane(page)
        expect(main.get_by_text("0 / 24 in this batch labelled by ann")).to_be_visible(
            timeout=CONTENT_TIMEOUT_MS
        )
        item = main.locator(
            ".st-key-item-chunk [data-testid='stText']"
        )  # the query and the chunk, not the banner's code
        expect(item.nth(1)).to_contain_text(" ", timeout=CONTENT_TIMEOUT_MS)  # the chunk drawn
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "label-chunks.png"))
        # blind: no run, other person, score or rank
        expect(main).not_to_contain_text(
            re.compile("retriever|bob|score|rank", re.IGNORECASE), use_inner_text=True
        )
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
            wait_for_script_run(page)  # the run over, its shortcuts bound again, before the next key
            if key == "s":  # a skip moves on without a new count: wait for the next (query, chunk)
                wait_until(
                    lambda shown=shown: item_on_screen() != shown, "the next item", CONTENT_TIMEOUT_MS / 1000
                )
        expect(page.get_by_test_id("stException")).to_have_count(0)
    finally:
        context.close()
    with sqlite3.connect(make_run_db) as conn:
        values = [
            row[0]
            for row in conn.execute(
                "SELECT value FROM labels l JOIN annotators a ON a.id = l.annotator_id WHERE a.name = 'ann' ORDER BY l.id"
            )
        ]
    assert values == [3, 2, 1, None, 0]  # the undo is a retraction row; nothing was overwritten


def test_check_history_in_the_browser(browser, tmp_path):
    """Two recorded checks of one run name (the second with q_faw reordered): the Metrics page
    draws the trend with the policy's bars and shows the per-query diff (screenshot kept)."""
    import subprocess
    import sys

    from playwright.sync_api import expect

    from tests.conftest import EXAMPLE, ROOT, build_demo_as_make_run

    db = build_demo_as_make_run(tmp_path / "demo.db")
    second = tmp_path / "run.jsonl"
    second.write_text((EXAMPLE / "run.jsonl").read_text().replace('"m2", "x3", "m1"', '"m1", "m2", "x3"'))
    for run in (EXAMPLE / "run.jsonl", second):
        command = [sys.executable, "-m", "calibration", "check", str(EXAMPLE / "golden.yaml"), str(run)]
        command += ["-k", "5", "--fetch-depth", "10", "--record", "--name", "bm25", "--db", str(db)]
        assert subprocess.run(command, cwd=ROOT, capture_output=True).returncode == 1
    with running_app(db) as url:
        context = browser.new_context(viewport={"width": 1400, "height": 1000})
        page = context.new_page()
        try:
            page.goto(url)
            main = main_pane(page)
            heading = main.get_by_text("History of recorded checks")
            expect(heading).to_be_visible(timeout=CONTENT_TIMEOUT_MS)
            heading.scroll_into_view_if_needed()
            chart = main.locator("[data-testid='stVegaLiteChart']").last
            expect(chart).to_be_visible(timeout=CONTENT_TIMEOUT_MS)
            expect(chart.locator("canvas, svg").first).to_be_visible(timeout=CONTENT_TIMEOUT_MS)
            expect(main).to_contain_text("nDCG@k Δ")
            expect(main).to_contain_text("+0.160")  # q_faw's nDCG@5, m1 moved to rank 1
            # the demo's two offline judges are uncalibrated: not shown, so kappa fails too; the labels
            # were pooled from this run, so stage 1 is circular: not evaluated, which fails
            expect(main).to_contain_text("FAILED: stage1_recall, faithfulness, kappa, rel_at_least_k")
            expect(page.get_by_test_id("stException")).to_have_count(0)
            ARTIFACTS.mkdir(exist_ok=True)
            chart.screenshot(path=str(ARTIFACTS / "check-history.png"))
            page.screenshot(path=str(ARTIFACTS / "check-history-page.png"), full_page=True)
        finally:
            context.close()


def test_review_trend_of_a_refitted_judge_in_the_browser(browser, tmp_path):
    """The offline judge refitted three times over three weeks: the Review page draws one line for
    its name with v1, v2, v3 marked (screenshot kept)."""
    from playwright.sync_api import expect

    from tests.conftest import build_demo_as_make_run
    from tests.test_review_versions import OFFLINE, refit_three_times

    db = build_demo_as_make_run(tmp_path / "demo.db")
    refit_three_times(db)
    with running_app(db) as url:
        context = browser.new_context(viewport={"width": 1400, "height": 1000})
        page = context.new_page()
        try:
            page.goto(f"{url}/review")
            main = main_pane(page)
            heading = main.get_by_text("Trend over weeks")
            expect(heading).to_be_visible(timeout=CONTENT_TIMEOUT_MS)
            expect(main).to_contain_text(f"relevance: {OFFLINE} v3 (current)")
            expect(main).to_contain_text(f"{OFFLINE} v1, {OFFLINE} v2")
            heading.scroll_into_view_if_needed()
            chart = main.locator("[data-testid='stVegaLiteChart']").last
            expect(chart).to_be_visible(timeout=CONTENT_TIMEOUT_MS)
            expect(chart.locator("canvas, svg").first).to_be_visible(timeout=CONTENT_TIMEOUT_MS)
            expect(page.get_by_test_id("stException")).to_have_count(0)
            ARTIFACTS.mkdir(exist_ok=True)
            chart.screenshot(path=str(ARTIFACTS / "review-trend-versions.png"))
            page.screenshot(path=str(ARTIFACTS / "review-page.png"), full_page=True)
        finally:
            context.close()
