"""#43 in a real browser: a reviewer signs in with their link and reviews cat's labels from the
keyboard (``a`` agrees, a digit corrects), the progress and the shares following; the reviewer's
navigation holds Review labels beside the labelling pages and no admin page. Then an admin opens
the Agreement page on the same store: cat and dan's kappa and their one disagreement."""

from __future__ import annotations

import pytest

from annotation.store import Store
from tests.conftest import (
    CHROMIUM_ARGS,
    CONTENT_TIMEOUT_MS,
    build_demo_as_make_run,
    main_pane,
    open_sign_in_link,
    running_app,
    wait_for_script_run,
)

pytestmark = pytest.mark.slow  # a real server, a real browser


def test_a_reviewer_reviews_from_the_keyboard_and_an_admin_reads_agreement(chromium, tmp_path) -> None:
    from playwright.sync_api import expect, sync_playwright

    db = build_demo_as_make_run(tmp_path / "demo.db")
    with Store(db) as store:
        reviewer = store.add_annotator("rev", "reviewer")
        admin = store.add_annotator("lee", "admin")
        waiting = store.labels_to_review("cat", "chunk")
    second = waiting[1]["value"]
    correction = (second + 1) % 4
    with running_app(db) as url, sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(chromium), args=CHROMIUM_ARGS)
        try:
            page = browser.new_context(viewport={"width": 1300, "height": 1000}).new_page()
            open_sign_in_link(page, f"{url}/review-labels?token={reviewer}")
            main = main_pane(page)
            expect(main.get_by_text("0 / 20 of cat's labels reviewed")).to_be_visible(
                timeout=CONTENT_TIMEOUT_MS
            )
            wait_for_script_run(page)
            nav = page.locator("[data-testid='stSidebarNav']")
            expect(nav.get_by_text("Review labels")).to_be_visible()
            expect(nav.get_by_text("Label chunks")).to_be_visible()
            expect(nav.get_by_text("People")).to_have_count(0)
            page.mouse.click(650, 30)  # focus the page, not an input
            page.keyboard.press("a")
            expect(main.get_by_text("1 / 20 of cat's labels reviewed")).to_be_visible(
                timeout=CONTENT_TIMEOUT_MS
            )
            expect(main.get_by_text(f"cat said {second}")).to_be_visible(timeout=CONTENT_TIMEOUT_MS)
            wait_for_script_run(page)
            page.mouse.click(650, 30)
            page.keyboard.press(str(correction))
            expect(main.get_by_text("2 / 20 of cat's labels reviewed")).to_be_visible(
                timeout=CONTENT_TIMEOUT_MS
            )
            wait_for_script_run(page)
            # the shares table is drawn on a canvas (st.dataframe): read from the store below

            admin_page = browser.new_context(viewport={"width": 1300, "height": 1000}).new_page()
            open_sign_in_link(admin_page, f"{url}/agreement?token={admin}")
            pane = main_pane(admin_page)
            expect(pane.get_by_text("Each pair of people", exact=True)).to_be_visible(
                timeout=CONTENT_TIMEOUT_MS
            )
            wait_for_script_run(admin_page)
            expect(pane.get_by_text("1 of 1 not settled yet", exact=False)).to_be_visible(
                timeout=CONTENT_TIMEOUT_MS
            )
            expect(pane.get_by_role("button", name="Settle this item on the Items page")).to_be_visible(
                timeout=CONTENT_TIMEOUT_MS
            )
        finally:
            browser.close()
    with Store(db) as store:
        shares = {s["person"]: s for s in store.review_shares("chunk")}
        assert (shares["cat"]["agreed"], shares["cat"]["corrected"]) == (1, 1)
        assert store.item_labels(waiting[1]["item_id"])["settlements"][0]["admin"] == "rev"
