"""An annotator's DOM holds no store id (issue #17, Build 5): no widget key, element id, CSS
class, URL or text of the labelling pages carries a query id, a trace id, a run or system name,
or an item's id or queue position, with "Show my work" open and after labelling, skipping and
undoing. Item ids follow import order (one system's traces, then the other's), so an id in a
key would tell an annotator which system wrote the answer. Keys name list positions in the
page's own lists, or a count of items shown in this session.

Skipped when /usr/bin/chromium is missing, unless CI=true (then it fails).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from annotation.store import Store
from tests.conftest import (
    CHROMIUM_ARGS,
    CONTENT_TIMEOUT_MS,
    add_tokens,
    main_pane,
    open_sign_in_link,
    running_app,
    wait_for_script_run,
)

pytestmark = pytest.mark.slow  # a real server and a real browser

KEY = re.compile(
    r"st-key-(?:"
    r"label(?:-trace|-pair)?-(?:grade[0-3]|skip|undo|guide|mywork|now-\d{1,2}|change-\d{1,2})"
    r"|label-mark-(?:toggle|save|sentences|box-\d{1,3})"  # #44: the answer marked, by sentence position
    r"|label-trace-note"  # one note box for every item, emptied for the next
    r"|item-(?:chunk|trace|pair)"
    r"|access-sign-out"
    r")"
)


def store_ids(db: Path) -> dict[str, set[str]]:
    with Store(db) as store:
        q = store.db.execute
        return {
            "query ids": {r[0] for r in q("SELECT id FROM queries")},
            "trace ids": {r[0] for r in q("SELECT id FROM traces")},
            "runs": {r[0] for r in q("SELECT name FROM runs")},
            "systems": {r[0] for r in q("SELECT DISTINCT system FROM traces")},
            "item ids": {f"item-{r[0]}" for r in q("SELECT id FROM items")}
            | {f"item_id={r[0]}" for r in q("SELECT id FROM items")},
        }


def dom_keys(page) -> set[str]:
    """Every widget key's class in the DOM (classes: no expectation reads them)."""
    script = "els => els.flatMap(e => [...e.classList].filter(c => c.startsWith('st-key-')))"
    # read-after-wait: called once the list's Change buttons are drawn and the run is over
    return set(page.eval_on_selector_all("[class*='st-key-']", script))


def test_the_annotators_dom_holds_no_store_id(chromium: Path, make_run_db: Path) -> None:
    from playwright.sync_api import expect, sync_playwright

    tokens = add_tokens(make_run_db)
    ids = store_ids(make_run_db)
    assert ids["runs"] == {"retriever"} and {"rag-bm25", "rag-rerank"} <= ids["systems"]
    with running_app(make_run_db) as url, sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(chromium), args=CHROMIUM_ARGS)
        try:
            page = browser.new_context(viewport={"width": 1400, "height": 1000}).new_page()
            open_sign_in_link(page, f"{url}/?token={tokens['ann']}")
            wait_for_script_run(page)
            seen_keys: set[str] = set()
            for path, key in (
                ("label", "2"),
                ("traces", "1"),
                ("compare", "a"),
            ):  # /label: the admins' address too
                page.goto(f"{url}/{path}")
                wait_for_script_run(page)
                expect(main_pane(page)).to_contain_text("labelled by ann")
                expect(page.get_by_text("Page not found")).to_have_count(0)  # /label was, for an annotator
                for press in (key, "s", key, "u", key):  # label, skip, label, undo, label
                    page.keyboard.press(press)
                    wait_for_script_run(page)
                page.get_by_text("Show my work").click()  # skipped items and past labels, listed
                # the list drawn (its past labels' Change buttons), then the run over: the DOM is
                # final before it is read
                changes = main_pane(page).get_by_role("button", name="Change", exact=True)
                expect(changes).not_to_have_count(0, timeout=CONTENT_TIMEOUT_MS)
                wait_for_script_run(page)
                html = page.content()  # read-after-wait: the whole markup, which no expectation reads
                for kind, values in ids.items():
                    found = sorted(
                        v for v in values if re.search(rf"(?<![\w-]){re.escape(v)}(?![\w-])", html)
                    )
                    assert not found, f"/{path}: {kind} in the DOM: {found}"
                keys = dom_keys(page)
                assert keys, f"/{path}: no keyed element found (the test would see nothing)"
                assert {k for k in keys if not KEY.fullmatch(k)} == set(), f"/{path}: {sorted(keys)}"
                # no id in the address either: only the tab's random id (its leases, denominator.ui.label)
                address, _, query = page.url.partition("?")
                assert address == f"{url}/{path}" and re.fullmatch(r"(tab=[A-Za-z0-9_-]{8,32})?", query), (
                    page.url
                )
                seen_keys |= keys
        finally:
            browser.close()
    # the lists were open: their rows' keys are there, by position
    assert any(k.startswith("st-key-label-change-") for k in seen_keys), sorted(seen_keys)
