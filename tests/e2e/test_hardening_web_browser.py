"""Issue #38, items 1 and 6, in a real browser (Debian's Chromium) against `denominator serve`,
with a page of another site (a small http.server on another port, reached as ``localhost``
while the app is ``127.0.0.1``):

1. a link from that site to ``/</script><script>...</script>?token=...`` runs no script of its
   own and signs no one in (not even with a valid token and a script that presses the button);
2. that site's frames of the app's pages (``/`` and ``/data``, local mode: every page open)
   are refused by the browser: nothing of Streamlit's renders in them.

Skipped when /usr/bin/chromium is missing, unless CI=true (then it fails).
"""

from __future__ import annotations

import contextlib
import functools
import http.server
import re
import shutil
import threading
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from annotation.access.identity import COOKIE
from annotation.store import Store
from tests.conftest import CHROMIUM_ARGS, CONTENT_TIMEOUT_MS, add_tokens, free_port, running_app

pytestmark = pytest.mark.slow  # a real server and a real browser

# the link: "/</script><script>window.pwned=1</script>" once the path is decoded
PWNED = "/%3C%2Fscript%3E%3Cscript%3Ewindow.pwned%3D1%3C%2Fscript%3E"
# the attack that signed an admin in: a script that presses the link page's button
PRESSES = (
    "/%3C%2Fscript%3E%3Cscript%3Ewindow.pwned%3D2%3B"
    "document.getElementById(%27sign-in-by-link%27).click()%3C%2Fscript%3E"
)


@contextlib.contextmanager
def other_site(folder: Path, files: dict[str, str]) -> Iterator[str]:
    """``files`` served by a plain http.server on another free port; its address, as
    ``http://localhost:PORT`` (another site than the app's ``127.0.0.1``)."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (folder / name).write_text(text, encoding="utf-8")
    port = free_port()
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(folder))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://localhost:{port}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def _sessions(db: Path) -> int:
    with Store(db) as store:
        return store.db.execute("SELECT count(*) FROM sessions").fetchone()[0]


def test_a_link_from_another_site_runs_no_script_and_signs_no_one_in(chromium, make_run_db, tmp_path) -> None:
    from playwright.sync_api import expect, sync_playwright

    db = tmp_path / "tokens.db"
    shutil.copy(make_run_db, db)
    tokens = add_tokens(db)
    with running_app(db) as url:
        links = (
            '<!doctype html><meta charset="utf-8"><title>elsewhere</title>'
            f'<a id="pwned" href="{url}{PWNED}?token=x">a link</a> '
            f'<a id="presses" href="{url}{PRESSES}?token={tokens["ann"]}">another</a>'
        )
        with other_site(tmp_path / "site", {"links.html": links}) as site, sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=str(chromium), args=CHROMIUM_ARGS)
            try:
                context = browser.new_context()
                page = context.new_page()
                dialogs: list[str] = []
                errors: list[str] = []
                page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
                page.on("pageerror", lambda error: errors.append(str(error)))
                for link, says in (
                    ("#pwned", "This sign-in link is not valid"),
                    ("#presses", "Sign in as ann"),
                ):
                    page.goto(f"{site}/links.html")
                    page.locator(link).click()
                    page.wait_for_url(re.compile(re.escape(url) + "/"), timeout=CONTENT_TIMEOUT_MS)
                    page.wait_for_load_state("networkidle")  # a button pressed: its POST over too
                    # no one signed in: no cookie, no session in the store
                    assert [c["name"] for c in context.cookies()] == [], link
                    assert _sessions(db) == 0, link
                    expect(page.get_by_text(says)).to_be_visible(timeout=CONTENT_TIMEOUT_MS)
                    # the server's own script ran: the token left the address bar, the path stayed
                    expect(page).to_have_url(re.compile(r"/%3C/script%3E%3Cscript%3Ewindow\.pwned"))
                    expect(page).not_to_have_url(re.compile("token="))
                    # no script of the link's ran: no mark, no dialog, no error of a broken script
                    pwned = page.evaluate(
                        "typeof window.pwned"
                    )  # read-after-wait: the page's own script ran (above)
                    assert pwned == "undefined", link
                    assert (dialogs, errors) == ([], []), link
                    # the page's one style, allowed by its hash: applied
                    expect(page.locator("body")).to_have_css("font-family", re.compile("sans-serif"))
                # the button itself still signs in, pressed by a person
                page.locator("#sign-in-by-link").click()
                page.wait_for_url(lambda address: "/_denominator/" not in address)
                assert [c["name"] for c in context.cookies()] == [COOKIE]
                assert _sessions(db) == 1
            finally:
                browser.close()


FRAMES = """<!doctype html><meta charset="utf-8"><title>framer</title>
<iframe id="home" src="{url}/" width="600" height="300" onload="done('home')"></iframe>
<iframe id="data" src="{url}/data" width="600" height="300" onload="done('data')"></iframe>
<iframe id="own" src="own.html" width="600" height="100" onload="done('own')"></iframe>
<script>window.loaded = []; function done(name) {{ window.loaded.push(name); }}</script>
"""


def test_another_site_cannot_frame_the_app(chromium, make_run_db, tmp_path) -> None:
    """Local mode (no token: every page open, to anyone on this machine): a page of another site
    frames ``/`` and ``/data``; the browser refuses both (an error page in the frame, nothing of
    Streamlit's), while that site's frame of its own page renders."""
    from playwright.sync_api import expect, sync_playwright

    db = tmp_path / "local.db"
    shutil.copy(make_run_db, db)
    with running_app(db) as url:
        # every answer of the served app says so: Streamlit's pages, its files, the app's routes
        index = urllib.request.urlopen(f"{url}/", timeout=30).read().decode()
        static = re.findall(r'src="\.?(/static/js/[^"]+\.js)"', index)
        assert static, index[:500]
        for path in ("/", "/data", "/_stcore/health", static[0], "/_denominator/link.js", "/?token=x"):
            with urllib.request.urlopen(f"{url}{path}", timeout=30) as answer:
                assert answer.headers["X-Frame-Options"] == "DENY", path
                policies = answer.headers.get_all("Content-Security-Policy")
                assert any("frame-ancestors 'none'" in p for p in policies), (path, policies)
                if path in ("/", "/data", static[0]):  # Streamlit's: that directive alone
                    assert policies == ["frame-ancestors 'none'"], (path, policies)
        files = {"frames.html": FRAMES.format(url=url), "own.html": "<p id='own'>a page of its own</p>"}
        with other_site(tmp_path / "site", files) as site, sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=str(chromium), args=CHROMIUM_ARGS)
            try:
                page = browser.new_page()
                page.goto(f"{site}/frames.html")
                # every frame has finished loading (a refused one loads the browser's error page)
                page.wait_for_function(
                    "window.loaded && window.loaded.length === 3", timeout=CONTENT_TIMEOUT_MS
                )
                expect(page.frame_locator("#own").locator("#own")).to_have_text("a page of its own")
                for name in ("home", "data"):
                    frame = page.locator(f"#{name}").element_handle().content_frame()
                    assert frame is not None
                    assert frame.url.startswith("chrome-error://"), (name, frame.url)
                    expect(page.frame_locator(f"#{name}").locator("[data-testid='stApp']")).to_have_count(0)
                    expect(page.frame_locator(f"#{name}").locator("#root")).to_have_count(0)
                # the same pages open at their own address: the refusal is the frame's only
                page.goto(f"{url}/data")
                expect(page.get_by_test_id("stApp").get_by_text("What the store holds")).to_be_visible(
                    timeout=CONTENT_TIMEOUT_MS
                )
            finally:
                browser.close()
