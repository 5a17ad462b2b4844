"""Six people labelling at once through the real app (Chromium, token mode): every
key press is one label row, stored once, under the right person."""

from __future__ import annotations

import shutil
from collections import Counter

import pytest

from annotation.store import Store
from annotation.store.transfer import copy_store
from tests.conftest import (
    CHROMIUM_ARGS,
    CONTENT_TIMEOUT_MS,
    open_sign_in_link,
    running_app,
    wait_for_script_run,
)

pytestmark = pytest.mark.slow  # six browser sessions on one real server

PEOPLE = 6
PRESSES = 8


def test_six_browser_sessions_label_at_once(chromium, make_run_db, backend, tmp_path, request, figure):
    from playwright.sync_api import expect, sync_playwright

    if backend == "postgresql":  # make run's demo, copied into PostgreSQL (python -m annotation migrate)
        db = request.getfixturevalue("postgres_server").database()
        with Store(make_run_db) as source, Store(db) as target:
            copy_store(source, target)
    else:
        db = tmp_path / "six.db"
        shutil.copy(make_run_db, db)
    with Store(db) as store:
        tokens = {f"p{i}": store.add_annotator(f"p{i}", "annotator") for i in range(PEOPLE)}
        # every trace open to all six (and cat, who graded 16): each person's queue stays 40 long
        # (at the default of 2 labels an item closes once two people have it: the queues shrink)
        store.set_handout("open", PEOPLE + 1, "test")
    with running_app(db) as url, sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(chromium), args=CHROMIUM_ARGS)
        try:
            sessions = []
            for name, token in tokens.items():
                page = browser.new_context(viewport={"width": 1200, "height": 900}).new_page()
                open_sign_in_link(page, f"{url}/traces?token={token}")
                main = page.get_by_test_id("stMain")
                expect(main.get_by_text(f"0 / 40 in this batch labelled by {name}")).to_be_visible(
                    timeout=CONTENT_TIMEOUT_MS
                )
                page.mouse.click(1100, 30)  # focus the page, not an input
                sessions.append((name, page, main))
            for done in range(1, PRESSES + 1):
                for _, page, _ in sessions:  # six key presses in a row: the server reruns six panes at once
                    page.keyboard.press(str(done % 3))
                for name, page, main in sessions:
                    expect(main.get_by_text(f"{done} / 40 in this batch labelled by {name}")).to_be_visible(
                        timeout=CONTENT_TIMEOUT_MS
                    )
                    wait_for_script_run(page)  # the run over before the next key
        finally:
            browser.close()
    with Store(db) as store:
        rows = store.db.execute(
            """SELECT a.name, l.item_id, l.value FROM labels l JOIN annotators a ON a.id = l.annotator_id
               WHERE a.name LIKE 'p%' ORDER BY l.id"""
        ).fetchall()
    per_person = Counter(name for name, _, _ in rows)
    assert per_person == {name: PRESSES for name in tokens}  # every label stored, none twice
    assert all(
        len({item for n, item, _ in rows if n == name}) == PRESSES for name in tokens
    )  # distinct items
    figure(
        f"browser load ({backend}): {PEOPLE} sessions x {PRESSES} key presses = {PEOPLE * PRESSES} labels pressed, "
        f"{len(rows)} stored, each once, under the right person"
    )
