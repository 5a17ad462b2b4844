"""A whole labelling session in a real browser, keyboard only, then the server is
killed with SIGKILL: every label submitted is in the database, and the
golden.yaml export says exactly what was pressed.

Skipped when /usr/bin/chromium is missing, unless CI=true (then it fails).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from annotation.formats.golden import read_golden
from annotation.store import Store
from annotation.views import item_view, next_item
from tests.conftest import (
    ARTIFACTS,
    CHROMIUM_ARGS,
    CONTENT_TIMEOUT_MS,
    ROOT,
    add_tokens,
    build_demo_as_make_run,
    free_port,
    main_pane,
    open_sign_in_link,
    running_app,
    wait_for_script_run,
)

pytestmark = pytest.mark.slow  # a real server, a real browser, and a SIGKILL
PAGES = {  # the default page (Metrics) is served at /, not at its url_path
    "": "Findings",
    "label": "in this batch",
    "traces": "in this batch",
    "compare": "in this batch",
    "data": "What the store holds",
    "judge": "Judges in this database",
    "review": "Trend over weeks",
}

# the pages docs/img shows (README, docs/index.md): path -> picture name
DOCS_IMAGES = {"": "metrics", "label": "label-chunks", "judge": "judge", "review": "review"}


def _queue(db: Path, kind: str, n: int) -> list[int]:
    """The first n items ann will see, in order (the queue is deterministic for a given store)."""
    seen: list[int] = []
    with Store(db) as store:
        for _ in range(n):
            item = next_item(store, "ann", skipped=seen, kind=kind)
            seen.append(item["item_id"])
    return seen


def test_keyboard_session_survives_a_kill(chromium, tmp_path) -> None:
    from playwright.sync_api import expect, sync_playwright

    db = build_demo_as_make_run(tmp_path / "demo.db")
    chunks = _queue(db, "chunk", 24)  # ann's whole queue
    with running_app(db, kill=True) as url:  # SIGKILL at the end: no shutdown, no flush, a crash
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=str(chromium), args=CHROMIUM_ARGS)
            page = browser.new_page(viewport={"width": 1300, "height": 1000})
            ARTIFACTS.mkdir(exist_ok=True)
            for path, marker in PAGES.items():  # a screenshot of each page
                page.goto(f"{url}/{path}")
                expect(main_pane(page).get_by_text(marker).first).to_be_visible(timeout=CONTENT_TIMEOUT_MS)
                wait_for_script_run(page)  # the run over: a 'Page not found' dialog would be up by now
                expect(page.get_by_text("Page not found"), path).to_have_count(0)
                page.screenshot(path=str(ARTIFACTS / f"page-{path or 'metrics'}.png"), full_page=True)
                if path in DOCS_IMAGES:  # the docs' picture of the page (make docs-images copies it)
                    tables = page.locator("[data-testid='stDataFrame']")
                    for i in range(tables.count()):  # each table drawn (its canvas), not a grey box
                        expect(tables.nth(i).locator("canvas").first).to_be_visible(
                            timeout=CONTENT_TIMEOUT_MS
                        )
                    page.wait_for_timeout(500)  # the grid paints its cells a frame after the canvas shows
                    page.screenshot(path=str(ARTIFACTS / f"docs-{DOCS_IMAGES[path]}.png"))

            def press(path: str, keys: list[tuple[str, int]], total: int) -> None:
                page.goto(f"{url}/{path}")
                main = main_pane(page)
                expect(main.get_by_text(f"0 / {total} in this batch")).to_be_visible(
                    timeout=CONTENT_TIMEOUT_MS
                )
                # the whole pane drawn (its last button) before the first key
                expect(main.get_by_text("Undo the last label (u)")).to_be_visible(timeout=CONTENT_TIMEOUT_MS)
                wait_for_script_run(page)
                page.mouse.click(650, 30)
                for key, done in keys:
                    page.keyboard.press(key)
                    expect(main.get_by_text(f"{done} / {total} in this batch")).to_be_visible(
                        timeout=CONTENT_TIMEOUT_MS
                    )
                    # the run over (its shortcuts bound again) before the next key: on a loaded
                    # machine a key pressed while the page is still being redrawn is lost
                    wait_for_script_run(page)

            # five chunks graded 3 2 1 0 3, the last undone and graded 2 again
            press("label", [("3", 1), ("2", 2), ("1", 3), ("0", 4), ("3", 5), ("u", 4), ("2", 5)], 24)
            press("traces", [("1", 1)], 40)
            press("compare", [("t", 1)], 4)
            browser.close()

    expected_values = [3, 2, 1, 0, 2]
    with Store(db) as store:
        # the items graded, in order: five distinct ones of ann's queue, the fifth undone and graded
        # again (which five: the queue's, less any a tab left open still holds, denominator.ui.label)
        graded = [
            item
            for (item,) in store.db.execute(
                """SELECT l.item_id FROM labels l JOIN annotators a ON a.id = l.annotator_id
                   WHERE a.name = 'ann' AND l.rubric = 'relevance' ORDER BY l.id"""
            ).fetchall()
        ]
        assert len(set(graded[:5])) == 5 and graded[4] == graded[5] == graded[6], graded
        assert set(graded) <= set(chunks), (graded, chunks)
        expected = {}
        for item_id, value in zip(graded[:5], expected_values):
            view = store.db.execute("SELECT query_id, chunk_id FROM items WHERE id = ?", [item_id]).fetchone()
            expected.setdefault(view[0], {})[view[1]] = value
        rows = store.db.execute(
            "SELECT l.rubric, l.value FROM labels l JOIN annotators a ON a.id = l.annotator_id WHERE a.name = 'ann' "
            "ORDER BY l.id"
        ).fetchall()
        shown = store.db.execute("SELECT shown FROM labels WHERE rubric = 'preference'").fetchone()[0]
        pair_item = store.db.execute("SELECT item_id FROM labels WHERE rubric = 'preference'").fetchone()[0]
        assert shown == item_view(store, pair_item, "ann")["shown"]
    assert rows == [
        ("relevance", 3),
        ("relevance", 2),
        ("relevance", 1),
        ("relevance", 0),
        ("relevance", 3),
        ("relevance", None),
        ("relevance", 2),
        ("faithfulness", 1),
        ("preference", 2),
    ]
    out = tmp_path / "ann.yaml"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "annotation",
            "export",
            "--db",
            str(db),
            "--format",
            "golden",
            "--annotator",
            "ann",
            "-o",
            str(out),
        ],
        cwd=ROOT,
        check=True,
        capture_output=True,
    )
    assert read_golden(out).grades == expected


def test_a_server_killed_mid_labelling_loses_and_doubles_nothing(chromium, tmp_path) -> None:
    """#25: SIGKILL the app server right after a key press, start it again on the same port, and
    reload: the person is still signed in (the session is in the store), the page shows what
    the store holds and continues; every acknowledged label is stored once, no item twice."""
    from playwright.sync_api import expect, sync_playwright

    db = build_demo_as_make_run(tmp_path / "kill.db")
    tokens = add_tokens(db)
    port = free_port()

    def labelled() -> list[tuple[int, int]]:
        with Store(db) as store:
            return store.db.execute(
                """SELECT l.item_id, l.value FROM labels l JOIN annotators a ON a.id = l.annotator_id
                   WHERE a.name = 'ann' AND l.rubric = 'relevance' ORDER BY l.id"""
            ).fetchall()

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(chromium), args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1300, "height": 1000})
        main = main_pane(page)

        def press(key: str, done: int) -> None:
            page.keyboard.press(key)
            expect(main.get_by_text(f"{done} / 24 in this batch")).to_be_visible(timeout=CONTENT_TIMEOUT_MS)
            wait_for_script_run(page)

        with running_app(db, kill=True, port=port) as url:
            open_sign_in_link(page, f"{url}/label?token={tokens['ann']}")
            expect(main.get_by_text("0 / 24 in this batch")).to_be_visible(timeout=CONTENT_TIMEOUT_MS)
            wait_for_script_run(page)
            page.mouse.click(650, 30)
            for done, key in enumerate("321", start=1):
                press(key, done)
            page.keyboard.press("0")  # and the server dies at once, this press in flight or not
        before = labelled()
        assert [v for _, v in before[:3]] == [3, 2, 1] and len(before) in (3, 4)
        with running_app(db, port=port) as url:
            page.goto(f"{url}/label")
            expect(page.get_by_text("Signed in as ann")).to_be_visible(timeout=CONTENT_TIMEOUT_MS)
            expect(main.get_by_text(f"{len(before)} / 24 in this batch")).to_be_visible(
                timeout=CONTENT_TIMEOUT_MS
            )
            wait_for_script_run(page)
            page.mouse.click(650, 30)
            press("2", len(before) + 1)
            press("3", len(before) + 2)
        browser.close()
    after = labelled()
    assert after[: len(before)] == before and [v for _, v in after[len(before) :]] == [2, 3]
    items = [item for item, _ in after]
    assert len(items) == len(set(items)), after  # no item labelled twice
