"""The Metrics page's Holes section in a real browser (#30): on a demo store whose judge has not
graded anything yet, "Fill with judge" has the offline judge grade the worked example's holes
at k = 5, and the judge-filled figure appears beside holes as not relevant.

Skipped when /usr/bin/chromium is missing, unless CI=true (then it fails). Never runs
`playwright install`: the browser is the system's.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import CHROMIUM_ARGS, CONTENT_TIMEOUT_MS, main_pane, running_app, wait_for_script_run

pytestmark = pytest.mark.slow  # a real server and a real browser


def test_fill_with_judge_in_the_browser(chromium: Path, tmp_path: Path) -> None:
    from playwright.sync_api import expect, sync_playwright

    from denominator.demo import build_demo

    db = tmp_path / "demo.db"
    build_demo(str(db))  # the demo without the judge's grades: the button has work to do
    with running_app(db) as url, sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(chromium), args=CHROMIUM_ARGS)
        try:
            page = browser.new_context(viewport={"width": 1400, "height": 1000}).new_page()
            page.goto(url)
            main = main_pane(page)
            expect(main.get_by_text("Findings", exact=True)).to_be_visible(timeout=CONTENT_TIMEOUT_MS)
            k_input = page.get_by_label("k (cutoff)")
            k_input.fill("5")
            k_input.press("Enter")
            expect(main.get_by_text("Holes: unjudged chunks of the top 5")).to_be_visible(
                timeout=CONTENT_TIMEOUT_MS
            )
            wait_for_script_run(page)
            expect(main).to_contain_text("10 of 20 positions unjudged")
            expect(main).to_contain_text("No judge's grades in the store cover these 10 holes yet.")
            button = main.get_by_role("button", name="Fill with judge")
            button.scroll_into_view_if_needed()
            button.click()
            figures = main.locator("[data-testid='stTable']").filter(has_text="judge-filled")
            expect(figures).to_be_visible(timeout=CONTENT_TIMEOUT_MS)
            expect(figures).to_contain_text("0.6500 (4 of 4 queries)")  # P@5, the holes filled
            expect(figures).to_contain_text("0.5000 (4 of 4 queries)")  # P@5, holes as not relevant
            expect(main).to_contain_text("graded 10 holes now")
            expect(page.get_by_test_id("stException")).to_have_count(0)
        finally:
            browser.close()
