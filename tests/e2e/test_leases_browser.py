"""#26 in a real browser: one person labelling in two places at once (two tabs of one server on
SQLite; one tab on each of two servers on PostgreSQL), 40 key presses in alternation over a
queue of 120 open items: 40 labels on 40 distinct items, and never the same item on both
screens. Then a reload with an item skipped and one on screen: the same item and the same
skipped list."""

from __future__ import annotations

import contextlib
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from annotation.store import Store
from tests.conftest import (
    CHROMIUM_ARGS,
    CONTENT_TIMEOUT_MS,
    ROOT,
    main_pane,
    running_app,
    wait_for_script_run,
    wait_until,
)

pytestmark = pytest.mark.slow  # real servers, a real browser

PRESSES = 40


def open_queue(folder: Path, db: str) -> None:
    """4 queries x 30 chunks, pooled at depth 30 with no one named: 120 items open to everyone."""
    corpus, queries, run = folder / "corpus.jsonl", folder / "queries.jsonl", folder / "run.jsonl"
    with corpus.open("w") as out:
        for c in range(120):
            out.write(json.dumps({"id": f"c{c}", "text": f"chunk number {c} about crops and soils"}) + "\n")
    with queries.open("w") as out:
        for q in range(4):
            out.write(json.dumps({"id": f"q{q}", "text": f"question number {q}"}) + "\n")
    with run.open("w") as out:
        for q in range(4):
            out.write(
                json.dumps({"query_id": f"q{q}", "ranking": [f"c{q * 30 + i}" for i in range(30)]}) + "\n"
            )
    for argv in (
        [
            "import",
            "--db",
            db,
            "--corpus",
            str(corpus),
            "--queries",
            str(queries),
            "--run",
            str(run),
            "--name",
            "r",
        ],
        ["pool", "--db", db, "--depth", "30"],
    ):
        subprocess.run([sys.executable, "-m", "annotation", *argv], cwd=ROOT, check=True, capture_output=True)


# an item drawn in full: both labels and both texts (on a loaded machine the labels come first,
# the texts a moment later: #38 read 'Query\n\nChunk')
ITEM = re.compile(r"^Query\s+question number \d+\s+Chunk\s+chunk number \d+ about crops and soils\s*$")


def on_screen(page):
    """The element holding the item on a page."""
    return page.locator(".st-key-item-chunk")


def shown(page) -> str:
    """The item on a page: its texts, as the person reads them, once drawn in full."""
    from playwright.sync_api import expect

    expect(on_screen(page)).to_have_text(ITEM, use_inner_text=True, timeout=CONTENT_TIMEOUT_MS)
    return on_screen(page).inner_text()  # read-after-wait: the item drawn in full, just above


@pytest.mark.parametrize(
    "where", ["two_tabs_sqlite", pytest.param("two_servers_postgresql", marks=pytest.mark.postgres)]
)
def test_one_person_in_two_places_labels_each_item_once(where, chromium, tmp_path, request) -> None:
    from playwright.sync_api import expect, sync_playwright

    if where == "two_tabs_sqlite":
        db = str(tmp_path / "open.db")
    else:
        db = request.getfixturevalue("postgres_server").database()
    open_queue(tmp_path, db)
    with contextlib.ExitStack() as stack:
        first = stack.enter_context(running_app(db))
        second = first if where == "two_tabs_sqlite" else stack.enter_context(running_app(db))
        playwright = stack.enter_context(sync_playwright())
        browser = playwright.chromium.launch(executable_path=str(chromium), args=CHROMIUM_ARGS)
        stack.callback(browser.close)
        context = browser.new_context(viewport={"width": 1300, "height": 1000})
        pages = []
        for url in (first, second):
            page = context.new_page()
            page.goto(f"{url}/label")
            expect(main_pane(page).get_by_text("in this batch labelled by ann")).to_be_visible(
                timeout=CONTENT_TIMEOUT_MS
            )
            wait_for_script_run(page)
            pages.append(page)
        for done in range(PRESSES):
            items = [shown(p) for p in pages]
            assert items[0] != items[1], (done, items)  # never one item in two places
            page = pages[done % 2]
            page.bring_to_front()
            page.mouse.click(650, 30)  # focus the page, not an input
            page.keyboard.press(str(done % 4))
            expect(main_pane(page).get_by_text(f"{done + 1} / 120 in this batch")).to_be_visible(
                timeout=CONTENT_TIMEOUT_MS
            )
            wait_for_script_run(page)
    with Store(db) as store:
        rows = store.db.execute(
            "SELECT l.item_id FROM labels l JOIN annotators a ON a.id = l.annotator_id WHERE a.name = 'ann'"
        ).fetchall()
    assert len(rows) == PRESSES and len({r[0] for r in rows}) == PRESSES


def test_a_reload_keeps_the_item_on_screen_and_the_skipped_list(chromium, tmp_path) -> None:
    from playwright.sync_api import expect, sync_playwright

    db = str(tmp_path / "open.db")
    open_queue(tmp_path, db)
    with running_app(db) as url, sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(chromium), args=CHROMIUM_ARGS)
        try:
            page = browser.new_context(viewport={"width": 1300, "height": 1000}).new_page()
            page.goto(f"{url}/label")
            main = main_pane(page)
            expect(main.get_by_text("0 / 120 in this batch")).to_be_visible(timeout=CONTENT_TIMEOUT_MS)
            wait_for_script_run(page)
            skipped = shown(page)
            page.mouse.click(650, 30)
            page.keyboard.press("s")
            wait_until(
                lambda: shown(page) != skipped, "the next item after the skip", CONTENT_TIMEOUT_MS / 1000
            )
            wait_for_script_run(page)
            current = shown(page)
            # the tab's id reaches the address when the browser has applied the run's query string;
            # a reload before that is a new tab (another item), which is what a new tab should get
            wait_until(lambda: "tab=" in page.url, "the tab's id in the address", CONTENT_TIMEOUT_MS / 1000)
            before = page.url
            page.reload()
            expect(main.get_by_text("0 / 120 in this batch")).to_be_visible(timeout=CONTENT_TIMEOUT_MS)
            wait_for_script_run(page)
            # the same item on screen
            expect(on_screen(page), f"after the reload of {before}").to_have_text(
                current, use_inner_text=True, timeout=CONTENT_TIMEOUT_MS
            )
            page.get_by_text("Show my work").click()
            expect(main.get_by_text("Skipped, 1 to label")).to_be_visible(timeout=CONTENT_TIMEOUT_MS)
            query, _, chunk = skipped.partition("\n")
            # the skipped item, listed (drawn in the same run as the heading, but read until it is there)
            expect(main).to_contain_text(chunk.strip().split("\n")[-1][:20], timeout=CONTENT_TIMEOUT_MS)
        finally:
            browser.close()


def test_a_closed_tab_gives_its_item_back_at_once(chromium, tmp_path) -> None:
    """#43: a closed tab's item stayed leased for DENOMINATOR_LEASE_MINUTES (5), so the person's
    next tab was handed another one. The server drops a tab's connection from its sessions when
    the browser closes it, and the next lease on that server gives the item back: the next tab,
    opened at once, is handed the closed tab's item (the first of the person's order)."""
    from playwright.sync_api import expect, sync_playwright

    db = str(tmp_path / "open.db")
    open_queue(tmp_path, db)
    with running_app(db) as url, sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(chromium), args=CHROMIUM_ARGS)
        try:
            context = browser.new_context(viewport={"width": 1300, "height": 1000})
            first = context.new_page()
            first.goto(f"{url}/label")
            expect(main_pane(first).get_by_text("0 / 120 in this batch")).to_be_visible(
                timeout=CONTENT_TIMEOUT_MS
            )
            wait_for_script_run(first)
            closed = shown(first)
            first.close()
            second = context.new_page()
            second.goto(f"{url}/label")
            expect(main_pane(second).get_by_text("0 / 120 in this batch")).to_be_visible(
                timeout=CONTENT_TIMEOUT_MS
            )
            wait_for_script_run(second)
            expect(on_screen(second)).to_have_text(closed, use_inner_text=True, timeout=CONTENT_TIMEOUT_MS)
        finally:
            browser.close()
    with Store(db) as store:  # one lease left, the second tab's
        assert store.db.execute("SELECT count(*) FROM leases").fetchone()[0] == 1
