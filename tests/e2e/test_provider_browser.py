"""Sign-in with a real OpenID Connect provider in a real browser (issue #29): the provider is
``oidc-provider-mock`` (a real OIDC server: discovery, authorization code flow with PKCE, RS256
ID tokens, end-session) serving on 127.0.0.1; the app is ``denominator serve --secrets FILE``
with its ``[auth]`` section; the browser is Debian's Chromium.

A person added with ``annotators add ann --email ...`` signs in through the provider's page,
labels with a key press, reloads and is still signed in, and signs out (the provider's end-session
page, then the sign-in page). A verified e-mail the store does not know gets the page that names it
and no labelling page. A revoked person is out at the next key press: nothing written. No secret
of the ``[auth]`` section is in any line the server printed.

Skipped when /usr/bin/chromium is missing, unless CI=true (then it fails).
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from annotation.store import Store
from tests.conftest import (
    CHROMIUM_ARGS,
    CONTENT_TIMEOUT_MS,
    ROOT,
    StartedServer,
    free_port,
    main_pane,
    started_server,
    wait_for_script_run,
)

pytestmark = pytest.mark.slow  # a real provider, a real server and a real browser

TOTAL = 24  # chunk items in ann's batch of the demo
PEOPLE = {  # the provider's accounts, one button each on its sign-in page
    "ann-sub": {"email": "ann@example.com", "email_verified": True, "name": "Ann"},
    "zed-sub": {"email": "zed@example.com", "email_verified": True, "name": "Zed"},
    "lab-sub": {"email": "lab@example.com", "email_verified": True, "groups": ["labellers", "staff"]},
}


@contextlib.contextmanager
def oidc_provider() -> Iterator[str]:
    """oidc-provider-mock on 127.0.0.1 (a free port), in a thread; its base URL."""
    import werkzeug.serving
    from oidc_provider_mock import User, app

    provider = app(user_claims=[User(sub=sub, claims=claims) for sub, claims in PEOPLE.items()])
    server = werkzeug.serving.make_server("127.0.0.1", 0, provider, threaded=True)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        server.server_close()


def write_secrets(
    folder: Path, app_url: str, provider_url: str, cookie_secret: str
) -> tuple[Path, list[str]]:
    """The app's secrets file (mode 0600) for this server and provider; the secrets it holds."""
    client_secret = secrets.token_urlsafe(24)
    path = folder / f"secrets-{app_url.rsplit(':', 1)[1]}.toml"
    path.write_text(
        "[auth]\n"
        f'redirect_uri = "{app_url}/oauth2callback"\n'
        f'cookie_secret = "{cookie_secret}"\n'
        'client_id = "denominator"\n'
        f'client_secret = "{client_secret}"\n'
        f'server_metadata_url = "{provider_url}/.well-known/openid-configuration"\n'
    )
    path.chmod(0o600)
    return path, [client_secret, cookie_secret]


@contextlib.contextmanager
def serving(
    db: Path | str, secrets_file: Path, port: int, host_name: str = "127.0.0.1"
) -> Iterator[StartedServer]:
    """``denominator serve --secrets FILE`` on 127.0.0.1:``port``, reached as ``host_name``."""
    env = {**os.environ, "STREAMLIT_BROWSER_GATHER_USAGE_STATS": "false", "DENOMINATOR_DB": str(db)}
    env.pop("DENOMINATOR_ANNOTATOR", None)
    command = [
        sys.executable,
        "-m",
        "denominator",
        "serve",
        "--port",
        str(port),
        "--secrets",
        str(secrets_file),
    ]
    with started_server(command, env, port, url=f"http://{host_name}:{port}") as served:
        yield served


@pytest.fixture
def browser(chromium):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        instance = playwright.chromium.launch(executable_path=str(chromium), args=CHROMIUM_ARGS)
        try:
            yield instance
        finally:
            instance.close()


def labels_of(db: Path | str, name: str) -> int:
    with Store(db) as store:
        return store.db.execute(
            """SELECT count(*) FROM labels l JOIN annotators a ON a.id = l.annotator_id
               WHERE a.name = ? AND l.value IS NOT NULL""",
            [name],
        ).fetchone()[0]


def sign_in_with_provider(page, app_url: str, sub: str) -> None:
    """The app's sign-in page, its provider button, the provider's page, the account's button;
    back on the app."""
    from playwright.sync_api import expect

    button = page.get_by_role("button", name="Sign in with 127.0.0.1")
    expect(button).to_be_visible(timeout=CONTENT_TIMEOUT_MS)
    wait_for_script_run(page)
    button.click()
    page.wait_for_url(lambda address: "/oauth2/authorize" in address, timeout=CONTENT_TIMEOUT_MS)
    page.get_by_role("button", name=sub, exact=True).click()
    page.wait_for_url(lambda address: address.startswith(app_url) and "oauth2callback" not in address)


def label_one(page, done: int, total: int = TOTAL, name: str = "ann") -> None:
    """One key press on the labelling page: grade 2; the count moves to ``done``."""
    from playwright.sync_api import expect

    main = main_pane(page)
    expect(main.get_by_text(f"{done - 1} / {total} in this batch labelled by {name}")).to_be_visible(
        timeout=CONTENT_TIMEOUT_MS
    )
    expect(main.get_by_text("Undo the last label (u)")).to_be_visible(timeout=CONTENT_TIMEOUT_MS)
    wait_for_script_run(page)
    page.mouse.click(650, 30)  # focus the page, not an input
    page.keyboard.press("2")
    expect(main.get_by_text(f"{done} / {total} in this batch labelled by {name}")).to_be_visible(
        timeout=CONTENT_TIMEOUT_MS
    )
    wait_for_script_run(page)


def shown(text: str) -> re.Pattern[str]:
    """``text`` as the page shows it: an e-mail's ``@`` is followed by a word joiner (Markdown
    would make it a link otherwise)."""
    return re.compile(re.escape(text).replace("@", "@\u2060?"))


def signed_in(page, text: str) -> None:
    from playwright.sync_api import expect

    expect(page.get_by_text(shown(text))).to_be_visible(timeout=CONTENT_TIMEOUT_MS)


@pytest.mark.parametrize("backend", ["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def test_sign_in_label_reload_sign_out_unknown_and_revoked(
    browser, make_run_db, tmp_path, backend, request
) -> None:
    from playwright.sync_api import expect

    db: Path | str
    if backend == "sqlite":
        db = tmp_path / "provider.db"
        db.write_bytes(make_run_db.read_bytes())
    else:  # the same on PostgreSQL: the demo as make run builds it, in a new database
        db = request.getfixturevalue("postgres_server").database()
        subprocess.run([sys.executable, "-m", "denominator", "demo", "--db", db], cwd=ROOT, check=True)
    with Store(db) as store:  # ann, who labelled in local mode, now signs in with the provider
        store.add_annotator("ann", "annotator", email="ann@example.com")
    port = free_port()
    with oidc_provider() as provider_url:
        app_url = f"http://127.0.0.1:{port}"
        secrets_file, secret_values = write_secrets(
            tmp_path, app_url, provider_url, secrets.token_urlsafe(32)
        )
        with serving(db, secrets_file, port) as server:
            context = browser.new_context(viewport={"width": 1300, "height": 1000})
            page = context.new_page()
            page.goto(app_url)
            expect(page.get_by_role("heading", name="Sign in")).to_be_visible(timeout=CONTENT_TIMEOUT_MS)
            expect(page.get_by_text("Label chunks")).to_have_count(0)  # no page before sign-in
            sign_in_with_provider(page, app_url, "ann-sub")
            signed_in(page, "Signed in as ann (annotator) with ann@example.com")
            page.goto(f"{app_url}/label")
            label_one(page, 1)
            page.reload()  # F5: still signed in (Streamlit's cookie, the store's sign-in)
            signed_in(page, "Signed in as ann (annotator)")
            label_one(page, 2)
            assert labels_of(db, "ann") == 2
            second = context.new_page()  # a new tab of the same browser: signed in too
            second.goto(f"{app_url}/label")
            signed_in(second, "Signed in as ann (annotator)")
            second.close()

            page.get_by_role("button", name="Sign out").click()
            # the provider's end-session page (this provider has one), then back to the app
            page.get_by_role("button", name="End session").click()
            page.wait_for_url(lambda address: address.startswith(app_url), timeout=CONTENT_TIMEOUT_MS)
            expect(page.get_by_role("button", name="Sign in with 127.0.0.1")).to_be_visible(
                timeout=CONTENT_TIMEOUT_MS
            )
            expect(page.get_by_text("Signed in as")).to_have_count(0)
            with Store(db) as store:
                ended = store.db.execute(
                    "SELECT count(*), count(revoked_at) FROM provider_sessions"
                ).fetchone()
            assert ended == (1, 1)  # one sign-in, ended on the server

            # a verified e-mail no one here signs in as: a page naming it, no labelling page
            other = browser.new_context(viewport={"width": 1300, "height": 1000})
            stranger = other.new_page()
            stranger.goto(app_url)
            sign_in_with_provider(stranger, app_url, "zed-sub")
            expect(stranger.get_by_role("heading", name="Not added yet")).to_be_visible(
                timeout=CONTENT_TIMEOUT_MS
            )
            expect(stranger.get_by_text(shown("You are signed in as zed@example.com"))).to_be_visible()
            for path in ("label", "traces", "metrics", "data"):
                stranger.goto(f"{app_url}/{path}")
                expect(stranger.get_by_role("heading", name="Not added yet")).to_be_visible(
                    timeout=CONTENT_TIMEOUT_MS
                )
                wait_for_script_run(stranger)
                for word in ("in this batch", "annotator)", "admin)"):
                    expect(main_pane(stranger), f"/{path}").not_to_contain_text(word, use_inner_text=True)
            other.close()

            # a revoked person is out at the next key press, and nothing is written
            page.goto(app_url)
            sign_in_with_provider(page, app_url, "ann-sub")
            page.goto(f"{app_url}/label")
            label_one(page, 3)
            with Store(db) as store:
                store.revoke_annotator("ann")
            page.mouse.click(650, 30)
            page.keyboard.press("1")
            expect(main_pane(page).get_by_text("no longer valid")).to_be_visible(timeout=CONTENT_TIMEOUT_MS)
            wait_for_script_run(page)
            assert labels_of(db, "ann") == 3
            page.reload()
            expect(page.get_by_text(shown("Your access (ann@example.com) has been revoked"))).to_be_visible(
                timeout=CONTENT_TIMEOUT_MS
            )
            context.close()
            output = server.output()
            assert all(value not in output for value in secret_values), output


def test_a_claim_rule_adds_a_person_at_first_sign_in(browser, make_run_db, tmp_path) -> None:
    """``annotators map-claim groups=labellers --role annotator``: lab@example.com, unknown to the
    store, carries the group and is added at first sign-in, named by the e-mail."""
    from playwright.sync_api import expect

    db = tmp_path / "rules.db"
    db.write_bytes(make_run_db.read_bytes())
    with Store(db) as store:
        store.map_claim("groups", "labellers", "annotator", "test")
        store.set_handout("open", 3, "test")  # items open to whoever asks, lab among them
    port = free_port()
    with oidc_provider() as provider_url:
        app_url = f"http://127.0.0.1:{port}"
        secrets_file, _ = write_secrets(tmp_path, app_url, provider_url, secrets.token_urlsafe(32))
        with serving(db, secrets_file, port) as _server:
            page = browser.new_page(viewport={"width": 1300, "height": 1000})
            page.goto(app_url)
            sign_in_with_provider(page, app_url, "lab-sub")
            signed_in(page, "Signed in as lab@example.com (annotator)")
            expect(page.get_by_text("Metrics and audit")).to_have_count(0)  # an annotator's pages only
    with Store(db) as store:
        row = store.db.execute(
            "SELECT role, email, token_hash FROM annotators WHERE name = 'lab@example.com'"
        ).fetchone()
    assert row == ("annotator", "lab@example.com", None)


def test_opened_at_another_address_the_page_says_where_to_sign_in(browser, make_run_db, tmp_path) -> None:
    """The redirect URL on localhost (the docs' example), the app opened at the 127.0.0.1 address
    a server prints: a sign-in started there would come back to localhost signed in as nobody (the
    browser keeps the sign-in's state cookie per host). The page says where to sign in instead of
    offering the provider's button, its link leads there, and the sign-in there works."""
    from playwright.sync_api import expect

    db = tmp_path / "elsewhere.db"
    db.write_bytes(make_run_db.read_bytes())
    with Store(db) as store:
        store.add_annotator("ann", "annotator", email="ann@example.com")
    port = free_port()
    with oidc_provider() as provider_url:
        back_to = f"http://localhost:{port}"
        secrets_file, _ = write_secrets(tmp_path, back_to, provider_url, secrets.token_urlsafe(32))
        with serving(db, secrets_file, port) as server:
            assert f"people open {back_to}, where its redirect_uri sends them back" in server.output()
            page = browser.new_page(viewport={"width": 1300, "height": 1000})
            page.goto(f"http://127.0.0.1:{port}")
            said = re.compile(
                rf"Sign in at http\u2060?://localhost:{port}: the provider sends people back there, "
                rf"not to http\u2060?://127\.0\.0\.1:{port}\."
            )
            expect(page.get_by_text(said)).to_be_visible(timeout=CONTENT_TIMEOUT_MS)
            wait_for_script_run(page)
            expect(page.get_by_role("button", name="Sign in with 127.0.0.1")).to_have_count(0)
            link = page.locator(f'a[href="{back_to}"]')
            expect(link).to_have_text(re.compile(rf"^Open http\u2060?://localhost:{port}$"))
            with page.context.expect_page() as opened:  # Streamlit's link button opens a new tab
                link.click()
            page = opened.value
            page.wait_for_url(lambda address: address.startswith(back_to), timeout=CONTENT_TIMEOUT_MS)
            sign_in_with_provider(page, back_to, "ann-sub")
            signed_in(page, "Signed in as ann (annotator) with ann@example.com")


@pytest.mark.postgres
def test_two_servers_one_postgresql_one_cookie_secret(browser, postgres_server, tmp_path) -> None:
    """Two app servers on one PostgreSQL database, each with its own address and redirect URL
    (127.0.0.1:A and localhost:B: two sites to the browser, so two sign-ins), sharing one cookie
    secret: ann signs in on both and labels on each in turn, every label stored once; revoked,
    she is out on both at their next key press."""
    from playwright.sync_api import expect

    url = postgres_server.database()
    subprocess.run([sys.executable, "-m", "denominator", "demo", "--db", url], cwd=ROOT, check=True)
    with Store(url) as store:
        store.add_annotator("ann", "annotator", email="ann@example.com")
    shared = secrets.token_urlsafe(32)
    ports = (free_port(), free_port())
    with oidc_provider() as provider_url:
        urls = (f"http://127.0.0.1:{ports[0]}", f"http://localhost:{ports[1]}")
        files = [write_secrets(tmp_path, app_url, provider_url, shared) for app_url in urls]
        with (
            serving(url, files[0][0], ports[0]) as first,
            serving(url, files[1][0], ports[1], host_name="localhost") as second,
        ):
            context = browser.new_context(viewport={"width": 1300, "height": 1000})
            pages = []
            for server in (first, second):
                page = context.new_page()
                page.goto(server.url)
                sign_in_with_provider(page, server.url, "ann-sub")
                signed_in(page, "Signed in as ann (annotator)")
                page.goto(f"{server.url}/label")
                pages.append(page)
            for done in range(1, 5):  # one key press on each server in turn, each page reloaded
                page = pages[done % 2]
                page.reload()
                label_one(page, done)
            assert labels_of(url, "ann") == 4
            with Store(url) as store:
                rows = store.db.execute(
                    "SELECT count(*), count(DISTINCT annotator_id) FROM provider_sessions WHERE revoked_at IS NULL"
                ).fetchone()
                store.revoke_annotator("ann")
            assert rows == (2, 1)  # one sign-in per server, both ann's
            for page in pages:
                page.mouse.click(650, 30)
                page.keyboard.press("1")
                expect(main_pane(page).get_by_text("no longer valid")).to_be_visible(
                    timeout=CONTENT_TIMEOUT_MS
                )
                wait_for_script_run(page)
            assert labels_of(url, "ann") == 4
            context.close()
            for server, (_, values) in zip((first, second), files, strict=True):
                output = server.output()
                assert all(value not in output for value in values), output
