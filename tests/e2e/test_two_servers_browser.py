"""Two app servers, one PostgreSQL database (issue #18): six people label the same pool through two
``streamlit run`` processes on two ports, each person going back and forth between the servers
(one key press on one, the next on the other, each on a freshly loaded page). Every key press is
one label row, stored once, under the right person, and no person is ever handed an item they
labelled already, whichever server they ask."""

from __future__ import annotations

import subprocess
import sys
from collections import Counter

import pytest

from annotation.store import Store
from tests.conftest import (
    CHROMIUM_ARGS,
    CONTENT_TIMEOUT_MS,
    ROOT,
    open_sign_in_link,
    running_app,
    wait_for_script_run,
)

pytestmark = [pytest.mark.slow, pytest.mark.postgres]  # two real servers, six people, a real database

PEOPLE = 6
PRESSES = 8


def test_two_servers_one_database_lose_and_double_nothing(chromium, postgres_server, figure):
    from playwright.sync_api import expect, sync_playwright

    url = postgres_server.database()
    subprocess.run([sys.executable, "-m", "denominator", "demo", "--db", url], cwd=ROOT, check=True)
    with Store(url) as store:
        tokens = {f"p{i}": store.add_annotator(f"p{i}", "annotator") for i in range(PEOPLE)}
        # every trace open to all six (and cat, who graded 16): each person's queue stays 40 long
        store.set_handout("open", PEOPLE + 1, "test")
    served = Counter()
    with running_app(url) as first, running_app(url) as second, sync_playwright() as playwright:
        servers = (first, second)
        browser = playwright.chromium.launch(executable_path=str(chromium), args=CHROMIUM_ARGS)
        try:
            people = []
            for i, (name, token) in enumerate(tokens.items()):
                context = browser.new_context(viewport={"width": 1200, "height": 900})
                pages = []
                for server in servers:  # the person signs in on both servers
                    page = context.new_page()
                    open_sign_in_link(page, f"{server}/traces?token={token}")
                    pages.append(page)
                people.append((i, name, pages))
            for done in range(PRESSES):
                for i, name, pages in people:
                    which = (done + i) % 2  # half the people start on each server; then they switch
                    page = pages[which]
                    page.goto(f"{servers[which]}/traces")  # a fresh page: the queue asked again
                    main = page.get_by_test_id("stMain")
                    expect(main.get_by_text(f"{done} / 40 in this batch labelled by {name}")).to_be_visible(
                        timeout=CONTENT_TIMEOUT_MS
                    )
                    # the whole pane drawn (its last button) and the run over before the key
                    expect(main.get_by_text("Undo the last label (u)")).to_be_visible(
                        timeout=CONTENT_TIMEOUT_MS
                    )
                    wait_for_script_run(page)
                    page.mouse.click(1100, 30)  # focus the page, not an input
                    page.keyboard.press(str(done % 3))
                    expect(
                        main.get_by_text(f"{done + 1} / 40 in this batch labelled by {name}")
                    ).to_be_visible(timeout=CONTENT_TIMEOUT_MS)
                    wait_for_script_run(page)  # the run over before this page's next key
                    served[which] += 1
        finally:
            browser.close()
    with Store(url) as store:
        rows = store.db.execute(
            """SELECT a.name, l.item_id, l.value FROM labels l JOIN annotators a ON a.id = l.annotator_id
               WHERE a.name LIKE 'p%' ORDER BY l.id"""
        ).fetchall()
    per_person = Counter(name for name, _, _ in rows)
    assert per_person == {name: PRESSES for name in tokens}  # every label stored, none twice
    for name in tokens:  # never the same item twice to one person, across the two servers
        assert len({item for n, item, _ in rows if n == name}) == PRESSES
    assert served == {0: PEOPLE * PRESSES // 2, 1: PEOPLE * PRESSES // 2}
    figure(
        f"two app servers, one PostgreSQL: {PEOPLE} people x {PRESSES} key presses alternating servers "
        f"({served[0]} on one, {served[1]} on the other) = {len(rows)} labels stored, each once, under "
        f"the right person, {len(set((n, item) for n, item, _ in rows))} distinct (person, item)"
    )
