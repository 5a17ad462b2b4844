"""The labelling page's ``g`` key in a real browser (issue #43, item 6): the guidelines in force
(an admin's edit, version 1) are shown and hidden by the key alone, the item stays on screen, and
the label pressed meanwhile records version 1.

Skipped when /usr/bin/chromium is missing, unless CI=true (then it fails).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from annotation.store import Store
from tests.conftest import (
    CHROMIUM_ARGS,
    CONTENT_TIMEOUT_MS,
    build_demo_as_make_run,
    main_pane,
    running_app,
    wait_for_script_run,
)

pytestmark = pytest.mark.slow  # a real server and a real browser

EDITED = "Grade 3 only when the chunk holds the exact answer; a table of figures counts as text."


def test_the_g_key_shows_and_hides_the_guidelines(chromium: Path, tmp_path: Path) -> None:
    from playwright.sync_api import expect, sync_playwright

    db = build_demo_as_make_run(tmp_path / "demo.db")
    with Store(db) as store:
        store.set_guidelines("relevance", EDITED, "lead")
    with running_app(db) as url, sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(chromium), args=CHROMIUM_ARGS)
        try:
            page = browser.new_context(viewport={"width": 1300, "height": 900}).new_page()
            page.goto(f"{url}/label")
            main = main_pane(page)
            expect(main.get_by_text("0 / 24 in this batch labelled by ann")).to_be_visible(
                timeout=CONTENT_TIMEOUT_MS
            )
            guidelines = main.locator(".st-key-guidelines-chunk")
            expect(guidelines).to_have_count(0)  # hidden until asked for
            chunk = main.locator(".st-key-item-chunk [data-testid='stText']").nth(1)
            expect(chunk).to_contain_text(" ", timeout=CONTENT_TIMEOUT_MS)
            wait_for_script_run(page)
            page.mouse.click(650, 30)  # focus the page, not an input
            page.keyboard.press("g")
            expect(guidelines).to_contain_text(EDITED, timeout=CONTENT_TIMEOUT_MS)
            expect(guidelines).to_contain_text("relevance guidelines, version 1, by lead")
            # nothing labelled by the key: the same batch count, the chunk still on screen
            expect(main.get_by_text("0 / 24 in this batch labelled by ann")).to_be_visible()
            expect(chunk).to_contain_text(" ")
            wait_for_script_run(page)
            page.keyboard.press("2")  # a grade with the guidelines on screen: they stay
            expect(main.get_by_text("1 / 24 in this batch labelled by ann")).to_be_visible(
                timeout=CONTENT_TIMEOUT_MS
            )
            expect(guidelines).to_contain_text(EDITED, timeout=CONTENT_TIMEOUT_MS)
            wait_for_script_run(page)
            page.keyboard.press("g")
            expect(guidelines).to_have_count(0, timeout=CONTENT_TIMEOUT_MS)
            expect(page.get_by_test_id("stException")).to_have_count(0)
        finally:
            browser.close()
    with sqlite3.connect(db) as conn:
        rows = conn.execute(
            "SELECT value, guidelines FROM labels l JOIN annotators a ON a.id = l.annotator_id "
            "WHERE a.name = 'ann' ORDER BY l.id"
        ).fetchall()
    assert rows == [(2, 1)]  # the label records the guidelines in force
