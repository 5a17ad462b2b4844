"""#43, item 9, the small things a newcomer met, in a real browser on `make run`'s server: the
Metrics page answers at /metrics too (it said "Page not found" there: the default page answers at /
only), every placeholder of an empty box fits the box (the sidebar's min grade and fetch depth were
cut off), and the server's log holds no "No runtime found" line (the pages' cached functions were
decorated while the server imported the app, before Streamlit's runtime existed)."""

from __future__ import annotations

import os
import sys

import pytest

from tests.conftest import (
    CHROMIUM_ARGS,
    CONTENT_TIMEOUT_MS,
    build_demo_as_make_run,
    free_port,
    main_pane,
    started_server,
    wait_for_script_run,
)

pytestmark = pytest.mark.slow  # a real server, a real browser

# each visible placeholder: its text, the text's width in the box's font, the width the box gives it
PLACEHOLDERS = """() => {
  const canvas = document.createElement('canvas').getContext('2d');
  return [...document.querySelectorAll('input[placeholder], textarea[placeholder]')]
    .filter(e => e.placeholder && e.offsetParent)
    .map(e => {
      const s = getComputedStyle(e);
      canvas.font = `${s.fontStyle} ${s.fontWeight} ${s.fontSize} ${s.fontFamily}`;
      const room = e.clientWidth - parseFloat(s.paddingLeft) - parseFloat(s.paddingRight);
      return [e.placeholder, canvas.measureText(e.placeholder).width, room];
    });
}"""
WHOLE = f"() => ({PLACEHOLDERS})().every(([text, width, room]) => width <= room)"


def test_metrics_at_its_address_placeholders_whole_and_a_quiet_log(chromium, tmp_path) -> None:
    from playwright.sync_api import expect, sync_playwright

    db = build_demo_as_make_run(tmp_path / "demo.db")
    port = free_port()
    env = {**os.environ, "STREAMLIT_BROWSER_GATHER_USAGE_STATS": "false", "DENOMINATOR_DB": str(db)}
    command = [sys.executable, "-m", "denominator", "serve", "--port", str(port)]
    with started_server(command, env, port) as server, sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(chromium), args=CHROMIUM_ARGS)
        try:
            page = browser.new_context(viewport={"width": 1300, "height": 1000}).new_page()
            page.goto(f"{server.url}/metrics")  # local mode: everyone is an admin
            main = main_pane(page)
            expect(main.get_by_role("heading", name="Metrics and audit")).to_be_visible(
                timeout=CONTENT_TIMEOUT_MS
            )
            expect(main.get_by_text("over 4 of 4 queries", exact=False).first).to_be_visible(
                timeout=CONTENT_TIMEOUT_MS
            )
            wait_for_script_run(page)
            expect(page.get_by_text("Page not found")).to_have_count(0)
            expect(page).to_have_url(f"{server.url}/metrics")
            # min grade and fetch depth, empty: "default", the rule written under each
            expect(page.get_by_placeholder("default", exact=True)).to_have_count(2)
            for path, title in (("/judge", "Judge"), ("/review", "Calibration review"), ("/data", "Data")):
                # every placeholder on the page whole in its box (a wait for it, failing past the timeout)
                page.wait_for_function(WHOLE, timeout=CONTENT_TIMEOUT_MS)
                page.goto(f"{server.url}{path}")
                expect(main.get_by_role("heading", name=title, exact=True)).to_be_visible(
                    timeout=CONTENT_TIMEOUT_MS
                )
                wait_for_script_run(page)
            page.wait_for_function(WHOLE, timeout=CONTENT_TIMEOUT_MS)
        finally:
            browser.close()
        output = server.output()
    assert "No runtime found" not in output, output
    assert f"serving {db} at http://127.0.0.1:{port}" in output
