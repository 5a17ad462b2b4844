"""The HTTP API's acceptance in a browser (#43, item 8): a pipeline pushes 1,000 traces to
``denominator serve --api`` over HTTP, a person signed in on the app labels some by key on the
traces page, and the pipeline reads exactly those labels back over HTTP; the person's token reads
their own labels only and may not push."""

from __future__ import annotations

import re
import sys

import httpx
import pytest

from annotation.store import Store
from tests.conftest import (
    CHROMIUM_ARGS,
    CONTENT_TIMEOUT_MS,
    free_port,
    open_sign_in_link,
    started_server,
    wait_for_script_run,
)
from tests.test_http_api import bearer, traces_body

pytestmark = pytest.mark.slow  # a real server and a browser

PRESSES = (2, 0, 1)  # the faithfulness grades pressed, in order


def test_traces_pushed_over_http_are_labelled_in_the_app_and_read_back(chromium, tmp_path):
    from playwright.sync_api import expect, sync_playwright

    db = tmp_path / "api.db"
    with Store(db) as store:  # an empty store: every trace the person sees came over HTTP
        root = store.add_annotator("root", "admin") or ""
        ann = store.add_annotator("ann", "annotator") or ""
        store.set_handout("open", 1, "test")
    port = free_port()
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "STREAMLIT_BROWSER_GATHER_USAGE_STATS": "false"}
    command = [sys.executable, "-m", "denominator", "serve", "--db", str(db), "--port", str(port), "--api"]
    with started_server(command, env, port) as server, sync_playwright() as playwright:
        api = f"{server.url}/api"
        pushed = httpx.post(
            f"{api}/import/traces", content=traces_body(1000), headers=bearer(root), timeout=120
        )
        assert pushed.status_code == 200, pushed.text
        assert pushed.json()["imported"][0] == "traces body: 1000 traces, 0 unchanged"
        assert (
            httpx.post(f"{api}/import/traces", content=traces_body(3, "x"), headers=bearer(ann)).status_code
            == 403
        )

        browser = playwright.chromium.launch(executable_path=str(chromium), args=CHROMIUM_ARGS)
        try:
            page = browser.new_context(viewport={"width": 1200, "height": 900}).new_page()
            open_sign_in_link(page, f"{server.url}/traces?token={ann}")
            main = page.get_by_test_id("stMain")
            for done, grade in enumerate(PRESSES):
                progress = re.compile(rf"^{done} / \d+ in this batch labelled by ann")
                expect(main.get_by_text(progress)).to_be_visible(timeout=CONTENT_TIMEOUT_MS)
                expect(main.get_by_text("Undo the last label (u)")).to_be_visible(timeout=CONTENT_TIMEOUT_MS)
                wait_for_script_run(page)  # the run over before the key (shortcuts bound)
                page.mouse.click(1100, 30)  # focus the page, not an input
                page.keyboard.press(str(grade))
                done_text = re.compile(rf"^{done + 1} / \d+ in this batch labelled by ann")
                expect(main.get_by_text(done_text)).to_be_visible(timeout=CONTENT_TIMEOUT_MS)
                wait_for_script_run(page)
        finally:
            browser.close()

        mine = httpx.get(f"{api}/labels", params={"kind": "trace"}, headers=bearer(ann)).json()
        everyone = httpx.get(f"{api}/labels", headers=bearer(root)).json()
        refused = httpx.get(f"{api}/labels", params={"annotator": "root"}, headers=bearer(ann))
    with Store(db) as store:
        stored = store.db.execute(
            """SELECT l.id, t.id, l.value FROM labels l JOIN items i ON i.id = l.item_id
               JOIN traces t ON t.id = i.trace_id ORDER BY l.id"""
        ).fetchall()
    assert [value for _, _, value in stored] == list(PRESSES)  # one row per key press
    read = [(r["label_id"], r["trace_id"], r["value"], r["annotator"]) for r in mine["labels"]]
    assert read == [(label_id, trace, value, "ann") for label_id, trace, value in stored]
    assert all(trace.startswith("today-") for _, trace, _ in stored)  # traces that came over HTTP
    assert everyone["labels"] == mine["labels"]  # the admin reads the same three
    assert refused.status_code == 403
