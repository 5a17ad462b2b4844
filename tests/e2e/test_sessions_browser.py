"""Sign-in sessions in a real browser (`streamlit run app.py`, Debian's Chromium): a person
signs in (with the form, and with a ``?token=`` link), labels with a key press, reloads and
keeps labelling, opens a new tab of the same browser and is still signed in, signs out, and
a reload shows the sign-in page. The token is in no address the browser visited after sign-in
and in no line the server printed; the cookie holds a session id, HttpOnly and SameSite=Strict.

Skipped when /usr/bin/chromium is missing, unless CI=true (then it fails).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from annotation.access.identity import COOKIE
from annotation.access.routes import LINK_ROUTE
from annotation.store import Store, token_hash
from tests.conftest import (
    CHROMIUM_ARGS,
    CONTENT_TIMEOUT_MS,
    StartedServer,
    add_tokens,
    free_port,
    main_pane,
    open_sign_in_link,
    started_server,
    wait_for_script_run,
)

pytestmark = pytest.mark.slow  # a real server and a real browser

TOTAL = 24  # chunk items in ann's batch of the demo


@contextlib.contextmanager
def serving(db: Path) -> Iterator[StartedServer]:
    """The app on a free port, its output kept to be read."""
    port = free_port()
    env = {**os.environ, "STREAMLIT_BROWSER_GATHER_USAGE_STATS": "false", "DENOMINATOR_DB": str(db)}
    command = [sys.executable, "-m", "streamlit", "run", "denominator/app.py", "--server.headless", "true"]
    command += [
        "--server.address",
        "127.0.0.1",
        "--server.port",
        str(port),
        "--server.fileWatcherType",
        "none",
    ]
    with started_server(command, env, port) as server:
        yield server


def _db(make_run_db: Path, folder: Path) -> tuple[Path, dict[str, str]]:
    db = folder / "sessions.db"
    shutil.copy(make_run_db, db)
    return db, add_tokens(db)


def _labels(db: Path, name: str) -> int:
    with Store(db) as store:
        return store.db.execute(
            """SELECT count(*) FROM labels l JOIN annotators a ON a.id = l.annotator_id
               WHERE a.name = ? AND l.value IS NOT NULL""",
            [name],
        ).fetchone()[0]


def _label_one(page, done: int) -> None:
    """One key press on the labelling page: grade 2; the count moves to ``done``."""
    from playwright.sync_api import expect

    main = main_pane(page)
    expect(main.get_by_text(f"{done - 1} / {TOTAL} in this batch")).to_be_visible(timeout=CONTENT_TIMEOUT_MS)
    expect(main.get_by_text("Undo the last label (u)")).to_be_visible(timeout=CONTENT_TIMEOUT_MS)
    wait_for_script_run(page)
    page.mouse.click(650, 30)  # focus the page, not an input
    page.keyboard.press("2")
    expect(main.get_by_text(f"{done} / {TOTAL} in this batch")).to_be_visible(timeout=CONTENT_TIMEOUT_MS)
    wait_for_script_run(page)  # the run over before the next key or reload


def _signed_in(page, name: str) -> None:
    from playwright.sync_api import expect

    expect(page.get_by_text(f"Signed in as {name}")).to_be_visible(timeout=CONTENT_TIMEOUT_MS)


def _session_cookie(context, timeout: float = 30.0) -> dict:
    """The session cookie once the page has traded its one-time code for it."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = [c for c in context.cookies() if c["name"] == COOKIE]
        if found:
            return found[0]
        time.sleep(0.1)
    raise AssertionError(f"no {COOKIE} cookie within {timeout:.0f} s: {context.cookies()}")


def _watch(context, seen: list[str]) -> None:
    """Every address any page of the context asks for (navigations, fetches, websockets)."""
    context.on("request", lambda request: seen.append(request.url))
    context.on("page", lambda page: page.on("websocket", lambda ws: seen.append(ws.url)))


def _no_trace_in_history(page, *secrets: str) -> None:
    """The tab's back/forward entries' addresses, as far as the page can see (the current entry
    and its state; Chromium gives scripts no list of past entries), hold none of ``secrets``:
    a wait in the page, not a value read once and asserted."""
    page.wait_for_function(
        "secrets => !secrets.some(s => (location.href + JSON.stringify(history.state)).includes(s))",
        arg=list(secrets),
        timeout=CONTENT_TIMEOUT_MS,
    )


@pytest.fixture
def browser(chromium):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        instance = playwright.chromium.launch(executable_path=str(chromium), args=CHROMIUM_ARGS)
        try:
            yield instance
        finally:
            instance.close()


def _session_rows(db: Path) -> list[tuple]:
    with Store(db) as store:
        return store.db.execute(
            """SELECT a.name, s.session_hash IS NOT NULL, s.revoked_at IS NOT NULL
               FROM sessions s JOIN annotators a ON a.id = s.annotator_id ORDER BY s.id"""
        ).fetchall()


def test_signed_in_through_refresh_and_new_tab_until_sign_out(browser, make_run_db, tmp_path) -> None:
    from playwright.sync_api import expect

    db, tokens = _db(make_run_db, tmp_path)
    token = tokens["ann"]
    with serving(db) as server:
        context = browser.new_context(viewport={"width": 1300, "height": 1000})
        seen: list[str] = []
        page = context.new_page()
        page.goto(server.url)
        expect(page.get_by_text("Ask your admin for an access token")).to_be_visible(
            timeout=CONTENT_TIMEOUT_MS
        )
        _watch(context, seen)  # from here on, after the token was typed
        page.get_by_test_id("stTextInputField").fill(token)
        page.get_by_role("button", name="Sign in").click()
        _signed_in(page, "ann")
        cookie = _session_cookie(context)
        assert cookie["httpOnly"] and cookie["sameSite"] == "Strict" and cookie["path"] == "/"
        assert cookie["value"] != token and token not in cookie["value"]
        with Store(db) as store:  # the store holds the id's hash, the browser the id
            assert (
                store.db.execute(
                    "SELECT count(*) FROM sessions WHERE session_hash = ?", [token_hash(cookie["value"])]
                ).fetchone()[0]
                == 1
            )
        page.wait_for_function(  # no script can read it
            "name => !document.cookie.includes(name)", arg=COOKIE, timeout=CONTENT_TIMEOUT_MS
        )

        page.goto(f"{server.url}/label")
        _label_one(page, 1)
        page.reload()  # F5
        _signed_in(page, "ann")
        _label_one(page, 2)
        assert _labels(db, "ann") == 2

        second = context.new_page()  # a new tab of the same browser
        second.goto(f"{server.url}/label")
        _signed_in(second, "ann")
        _label_one(second, 3)
        for tab in (page, second):
            _no_trace_in_history(tab, token, cookie["value"])
        second.close()

        page.get_by_role("button", name="Sign out").click()
        expect(page.get_by_text("Ask your admin for an access token")).to_be_visible(
            timeout=CONTENT_TIMEOUT_MS
        )
        deadline = time.monotonic() + 30
        while any(c["name"] == COOKIE for c in context.cookies()) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not [c for c in context.cookies() if c["name"] == COOKIE]  # expired by the server
        page.reload()
        expect(page.get_by_role("button", name="Sign in")).to_be_visible(timeout=CONTENT_TIMEOUT_MS)
        wait_for_script_run(page)
        expect(page.get_by_text("Signed in as")).to_have_count(0)
        # the cookie's old value, put back, is refused: the session ended in the store, not only here
        context.add_cookies([{"name": COOKIE, "value": cookie["value"], "url": server.url}])
        page.reload()
        expect(page.get_by_role("button", name="Sign in")).to_be_visible(timeout=CONTENT_TIMEOUT_MS)
        assert _session_rows(db) == [("ann", 1, 1)]  # one session: claimed, then ended
        assert _labels(db, "ann") == 3
        context.close()

        addresses = seen
        assert addresses and all(token not in a for a in addresses), [a for a in addresses if token in a]
        assert all(cookie["value"] not in a for a in addresses)
        output = server.output()
        assert token not in output and cookie["value"] not in output, output


def test_a_token_link_becomes_a_cookie_and_leaves_no_trace(browser, make_run_db, tmp_path) -> None:
    from playwright.sync_api import expect

    db, tokens = _db(make_run_db, tmp_path)
    token = tokens["ann"]
    with serving(db) as server:
        context = browser.new_context(viewport={"width": 1300, "height": 1000})
        seen: list[str] = []
        _watch(context, seen)
        answers: list[tuple[str, int, str]] = []
        context.on(
            "response",
            lambda response: (
                answers.append((response.url, response.status, response.headers.get("location", "")))
                if token in response.url or response.url.endswith(LINK_ROUTE)
                else None
            ),
        )
        page = context.new_page()
        page.goto(f"{server.url}/label?token={token}")
        # the link's page: whom it signs in, and a button; nothing signed in yet
        expect(page.get_by_text("This link signs this browser in as ann (annotator).")).to_be_visible(
            timeout=CONTENT_TIMEOUT_MS
        )
        assert page.url == f"{server.url}/label"  # the token left the address bar at once
        assert _session_rows(db) == [] and not [c for c in context.cookies() if c["name"] == COOKIE]
        page.locator("#sign-in-by-link").click()
        _signed_in(page, "ann")
        # the address stays: an annotator reaches the page at /label too
        assert page.url.partition("?")[0] == f"{server.url}/label"  # and the tab's id (denominator.ui.label)
        # one request carried the token in its address (the link's page); the button's POST
        # carried it in its body and was answered with a redirect
        assert [a for a in seen if token in a] == [f"{server.url}/label?token={token}"]
        assert [(status, location) for _, status, location in answers] == [(200, ""), (303, "/label")]
        after = seen[seen.index(f"{server.url}/label?token={token}") + 1 :]
        assert after and all(token not in a for a in after)
        cookie = _session_cookie(context)
        assert cookie["httpOnly"] and cookie["sameSite"] == "Strict"
        _label_one(page, 1)
        page.reload()
        _signed_in(page, "ann")
        _label_one(page, 2)
        _no_trace_in_history(page, token)

        # a wrong token reaches the page, which says so and drops it from the address
        other = browser.new_context()
        wrong = other.new_page()
        wrong.goto(f"{server.url}/?token=not-a-token")
        expect(wrong.get_by_text("This sign-in link is not valid")).to_be_visible(timeout=CONTENT_TIMEOUT_MS)
        assert "token" not in wrong.url
        expect(wrong.locator("#sign-in-by-link")).to_have_count(0)
        other.close()

        # revoking the token ends the session: the next load of the same browser is signed out
        with Store(db) as store:
            store.revoke_annotator("ann")
        page.reload()
        expect(page.get_by_role("button", name="Sign in")).to_be_visible(timeout=CONTENT_TIMEOUT_MS)
        context.close()
        output = server.output()
        assert token not in output and cookie["value"] not in output, output


@contextlib.contextmanager
def attacker_site(pages: dict[str, str]) -> Iterator[str]:
    """Another site: ``http://localhost:PORT`` (a different site from the app's 127.0.0.1 to a
    browser: its cookies and SameSite rules apply), serving ``pages`` by path."""
    import http.server
    import threading

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (the standard library's name)
            body = pages.get(self.path, "").encode()
            self.send_response(200 if body else 404)
            self.send_header("Content-Type", "text/html")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args) -> None:
            pass

    site = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=site.serve_forever, daemon=True).start()
    try:
        yield f"http://localhost:{site.server_address[1]}"
    finally:
        site.shutdown()


def test_a_link_from_another_site_signs_no_one_in(browser, make_run_db, tmp_path) -> None:
    """Login CSRF: an admin signed in visits another site, which sends his browser to an
    annotator's ``?token=`` link (a navigation, and a form POSTed straight to the button's
    route). He stays signed in as himself until he presses the button on the link's page."""
    from playwright.sync_api import expect

    db, tokens = _db(make_run_db, tmp_path)
    with serving(db) as server:
        link = f"{server.url}/label?token={tokens['ann']}"
        pages = {
            "/go": f"<script>location.href = {link!r};</script>",
            "/post": (
                f'<form id="f" method="post" action="{server.url}{LINK_ROUTE}">'
                f'<input name="token" value="{tokens["ann"]}"><input name="next" value="/label"></form>'
                "<script>document.getElementById('f').submit();</script>"
            ),
        }
        context = browser.new_context(viewport={"width": 1300, "height": 1000})
        page = context.new_page()
        open_sign_in_link(page, f"{server.url}/?token={tokens['root']}")
        _signed_in(page, "root")
        cookie = _session_cookie(context)
        with attacker_site(pages) as evil:
            page.goto(f"{evil}/go")
            # the link's page, reached from another site: no cookie came with it (SameSite=Strict),
            # so it cannot name who is signed in here, and it signs no one in
            expect(page.get_by_text("This link signs this browser in as ann (annotator).")).to_be_visible(
                timeout=CONTENT_TIMEOUT_MS
            )
            expect(page.get_by_text("Anyone signed in on this browser is signed out by it.")).to_be_visible()
            page.goto(f"{server.url}/metrics")
            _signed_in(page, "root")
            # a form POSTed from the other site straight to the button's route: refused
            with page.expect_response(lambda r: r.url.endswith(LINK_ROUTE)) as answer:
                page.goto(f"{evil}/post")
            assert answer.value.status == 403
            page.goto(f"{server.url}/metrics")
            _signed_in(page, "root")
        with Store(db) as store:
            assert store.session_identity(session_id=cookie["value"])["name"] == "root"
            assert _session_rows(db) == [("root", 1, 0)]  # no session was ever started for ann
        # the same link followed on this site names who is signed in, and only the button switches
        page.goto(link)
        expect(page.get_by_text("This browser is signed in as root (admin)")).to_be_visible(
            timeout=CONTENT_TIMEOUT_MS
        )
        page.locator("#sign-in-by-link").click()
        _signed_in(page, "ann")
        assert [row[0] for row in _session_rows(db)] == ["root", "ann"]
        assert _session_rows(db)[0][2] == 1  # root's session on this browser ended
        context.close()
