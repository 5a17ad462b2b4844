"""An annotator in a real browser, in token mode: every address they can type
shows no retriever or system name, rank, score, judge label or other person's
label; admin pages are not served to them.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from tests.conftest import (
    CHROMIUM_ARGS,
    CONTENT_TIMEOUT_MS,
    add_tokens,
    open_sign_in_link,
    plant_secrets,
    running_app,
    wait_for_script_run,
)

pytestmark = pytest.mark.slow  # a real server and a real browser

SECRET_REASON = "JUDGE-REASON-4410"
FORBIDDEN = ("retriever", "rag-bm25", "rag-rerank", "bob", "cat", "dan", "0.987654", SECRET_REASON, "gpt-x")


def _token_db(demo_db: Path, folder: Path) -> tuple[Path, dict[str, str]]:
    db = folder / "tokens.db"
    shutil.copy(demo_db, db)
    plant_secrets(db, SECRET_REASON)
    return db, add_tokens(db)


# what an annotator's page must not show, as patterns an expectation reads (and reads again until
# the page is drawn): a forbidden word, a rank or score word; an admin page's title as a line
BLIND = re.compile(
    "|".join(rf"\b{re.escape(w)}\b" for w in FORBIDDEN) + r"|\b(?:rank|scor)\w*", re.IGNORECASE
)
ADMIN_TITLES = re.compile(r"^(?:Metrics and audit|Data|Judge|Calibration review)$", re.MULTILINE)


def test_an_annotator_sees_only_blind_labelling_pages(chromium, make_run_db, tmp_path):
    from playwright.sync_api import expect, sync_playwright

    db, tokens = _token_db(make_run_db, tmp_path)
    with running_app(db) as url, sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(chromium), args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1300, "height": 900})
            open_sign_in_link(page, f"{url}/?token={tokens['ann']}")
            app = page.get_by_test_id("stApp")
            expect(app.get_by_text("labelled by ann")).to_be_visible(timeout=CONTENT_TIMEOUT_MS)
            assert "token" not in page.url  # taken from the address bar into the session
            for path, expected in (
                ("label", "0 / 24 in this batch labelled by ann"),
                ("traces", "in this batch labelled by ann"),
                ("compare", "in this batch labelled by ann"),
                ("data", "labelled by ann"),  # not served: the default (labelling) page instead
                ("metrics", "labelled by ann"),
                ("judge", "labelled by ann"),
                ("review", "labelled by ann"),
                ("sign-in", "labelled by ann"),
            ):
                # a new page load: the token must come again, as a person would open a link
                open_sign_in_link(page, f"{url}/{path}?token={tokens['ann']}")
                expect(app.get_by_text(expected).first).to_be_visible(timeout=CONTENT_TIMEOUT_MS)
                wait_for_script_run(page)  # every element of the page drawn before it is read
                expect(app, f"/{path}").not_to_contain_text(BLIND, use_inner_text=True)
                expect(app, f"/{path}").not_to_contain_text(ADMIN_TITLES, use_inner_text=True)
            # the same server gives an admin the pages the annotator could not reach
            open_sign_in_link(page, f"{url}/data?token={tokens['root']}")
            expect(app.get_by_text("retriever").first).to_be_visible(timeout=CONTENT_TIMEOUT_MS)
        finally:
            browser.close()
