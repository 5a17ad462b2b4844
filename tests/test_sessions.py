"""Sign-in sessions: in the store (only hashes kept, expiry, one-time codes, ended by sign-out
and by the token's revocation), through the app (AppTest: the form and ``?token=`` trade the
token for a session and forget it; the hint; sign-out), and the HTTP routes that set and expire
the HttpOnly cookie (Starlette's test client over the same routes and middleware app.py serves).
"""

from __future__ import annotations

import pytest
from starlette.applications import Starlette
from starlette.responses import PlainTextResponse
from starlette.routing import Route
from starlette.testclient import TestClient

from annotation.access import identity, routes
from annotation.store import Store, StoreError, token_hash
from annotation.store.identity import DEFAULT_SESSION_HOURS, SESSION_HOURS_ENV, session_hours
from tests.conftest import add_tokens, app_test, page_text


@pytest.fixture
def store(tmp_path):
    with Store(tmp_path / "s.db") as opened:
        yield opened


def rows(store: Store) -> list[dict]:
    cursor = store.db.execute("SELECT * FROM sessions ORDER BY id")
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


# ---------------------------------------------------------------- store


def test_a_session_keeps_hashes_only_and_its_code_works_once(store, tmp_path) -> None:
    token = store.add_annotator("ann", "annotator")
    started = store.start_session(token)
    assert started is not None and started.session == 1
    assert store.session_identity(session=started.session)["name"] == "ann"  # the tab's own session
    claimed = store.claim_session(started.handoff)
    assert claimed is not None and len(claimed.session_id) >= 40
    assert 12 * 3600 - 5 <= claimed.max_age <= 12 * 3600  # the default lifetime, in the cookie's Max-Age
    assert store.claim_session(started.handoff) is None  # once only
    found = store.session_identity(session_id=claimed.session_id)
    assert (found["session"], found["name"], found["role"]) == (1, "ann", "annotator")
    assert store.session_identity(session_id=claimed.session_id + "x") is None
    assert store.session_identity(session_id=token) is None  # a token is not a session id
    [row] = rows(store)
    assert row["session_hash"] == token_hash(claimed.session_id)
    assert row["handoff_hash"] == token_hash(started.handoff)
    assert row["token_hash"] == token_hash(token) and row["revoked_at"] is None
    assert row["claimed_at"] is not None and row["created_at"] < row["expires_at"]
    raw = b"".join(p.read_bytes() for p in tmp_path.glob("s.db*"))
    for secret in (claimed.session_id, started.handoff, token):
        assert secret.encode() not in raw  # what the browser holds is nowhere in the file


def test_a_wrong_or_empty_token_starts_nothing(store) -> None:
    store.add_annotator("ann", "annotator")
    assert store.start_session("not-a-token") is None
    assert store.start_session("") is None and store.start_session(None) is None
    assert store.claim_session("") is None and store.claim_session("nope") is None
    assert rows(store) == []


def test_sessions_expire(store, monkeypatch) -> None:
    token = store.add_annotator("ann", "annotator")
    gone = store.start_session(token, hours=-1 / 3600)  # ended a second ago
    assert store.session_identity(session=gone.session) is None
    assert store.claim_session(gone.handoff) is None  # an expired session cannot be claimed
    live = store.start_session(token, hours=2)
    claimed = store.claim_session(live.handoff)
    assert 2 * 3600 - 5 <= claimed.max_age <= 2 * 3600
    with store.write():  # the handoff code is good for minutes, not for the session's hours
        store.db.execute("UPDATE sessions SET handoff_expires_at = '2000-01-01T00:00:00+00:00'")
    late = store.start_session(token)
    with store.write():
        store.db.execute(
            "UPDATE sessions SET handoff_expires_at = '2000-01-01T00:00:00+00:00' WHERE id = ?",
            [late.session],
        )
    assert store.claim_session(late.handoff) is None
    assert store.session_identity(session_id=claimed.session_id)["name"] == "ann"  # claimed before: still on


def test_session_hours_come_from_one_place(monkeypatch) -> None:
    monkeypatch.delenv(SESSION_HOURS_ENV, raising=False)
    assert session_hours() == DEFAULT_SESSION_HOURS == 12
    monkeypatch.setenv(SESSION_HOURS_ENV, "0.5")
    assert session_hours() == 0.5
    for bad in ("0", "-3", "soon", "inf", "nan"):
        monkeypatch.setenv(SESSION_HOURS_ENV, bad)
        with pytest.raises(
            StoreError, match=f"DENOMINATOR_SESSION_HOURS must be a positive number of hours, not '{bad}'"
        ):
            session_hours()


def test_session_hours_set_the_expiry(store, monkeypatch) -> None:
    token = store.add_annotator("ann", "annotator")
    monkeypatch.setenv(SESSION_HOURS_ENV, "1")
    claimed = store.claim_session(store.start_session(token).handoff)
    assert 3600 - 5 <= claimed.max_age <= 3600


def test_revoking_the_token_ends_its_sessions(store) -> None:
    token = store.add_annotator("ann", "annotator")
    other = store.add_annotator("bob", "admin")
    first = store.claim_session(store.start_session(token).handoff)
    pending = store.start_session(token)  # started, not yet claimed by its browser
    bobs = store.claim_session(store.start_session(other).handoff)
    store.revoke_annotator("ann")
    assert store.session_identity(session_id=first.session_id) is None
    assert store.session_identity(session=pending.session) is None
    assert store.claim_session(pending.handoff) is None
    assert store.session_identity(session_id=bobs.session_id)["name"] == "bob"  # others' stay
    assert [(r["annotator_id"], r["revoked_at"] is not None) for r in rows(store)] == [
        (1, True),
        (1, True),
        (2, False),
    ]
    again = store.add_annotator("ann", "annotator")  # a new token does not revive old sessions
    assert store.session_identity(session_id=first.session_id) is None
    assert store.claim_session(store.start_session(again).handoff) is not None


def test_a_replaced_token_matches_no_old_session(store) -> None:
    """Even without revoked_at set (a token hash changed by hand), the session is tied to its token."""
    token = store.add_annotator("ann", "annotator")
    claimed = store.claim_session(store.start_session(token).handoff)
    with store.write():
        store.db.execute("UPDATE annotators SET token_hash = 'sha256:other' WHERE name = 'ann'")
    assert store.session_identity(session_id=claimed.session_id) is None


def test_sign_out_ends_one_session(store) -> None:
    token = store.add_annotator("ann", "annotator")
    laptop = store.claim_session(store.start_session(token).handoff)
    phone = store.claim_session(store.start_session(token).handoff)
    assert store.end_session(session_id=laptop.session_id) is True
    assert store.end_session(session_id=laptop.session_id) is False  # already ended
    assert store.session_identity(session_id=laptop.session_id) is None
    assert store.session_identity(session_id=phone.session_id)["name"] == "ann"
    assert store.end_session(session=2) is True and store.session_identity(session=2) is None
    assert store.end_session() is False and store.end_session(session_id="") is False
    assert [r["revoked_at"] is not None for r in rows(store)] == [True, True]


# ---------------------------------------------------------------- the app (AppTest)


@pytest.fixture
def demo(demo_db):
    return demo_db, add_tokens(demo_db)


def test_the_sign_in_page_says_where_a_token_comes_from(demo) -> None:
    at = app_test().run()
    assert [t.value for t in at.title] == ["Sign in"]
    assert [i.value for i in at.info] == [
        "Ask your admin for an access token (they create it with "
        "`python -m annotation annotators add NAME --role annotator`)."
    ]
    assert not at.error  # no complaint before a token was tried


def test_the_form_trades_the_token_for_a_session_and_forgets_it(demo) -> None:
    db, tokens = demo
    at = app_test().run()
    at.text_input[0].input(tokens["ann"])
    at.button[0].click().run()
    assert not at.exception
    assert "Signed in as **ann** (annotator)" in page_text(at)
    assert identity.TOKEN not in at.session_state and at.session_state[identity.SESSION] == 1
    assert tokens["ann"] not in repr(at.session_state.to_dict())  # the token is not kept
    html = at.get("html")  # the page posts its one-time code for the cookie, once
    assert len(html) == 1 and routes.SESSION_ROUTE in html[0].proto.body
    at.run()
    assert at.get("html") == [] and "Signed in as **ann** (annotator)" in page_text(at)
    with Store(db) as store:
        [row] = rows(store)
    assert row["token_hash"] == token_hash(tokens["ann"]) and row["session_hash"] is None  # not claimed here


def test_a_link_token_is_dropped_from_the_address(demo) -> None:
    _, tokens = demo
    at = app_test()
    at.query_params["token"] = tokens["root"]
    at.run()
    at.button(key="access:link-sign-in").click().run()  # a link signs in only by its button
    assert "token" not in at.query_params
    assert "Signed in as **root** (admin)" in page_text(at)
    assert at.session_state[identity.SESSION] == 1


def test_sign_out_ends_the_session_and_asks_to_expire_the_cookie(demo) -> None:
    db, tokens = demo
    at = app_test()
    at.query_params["token"] = tokens["ann"]
    at.run()
    at.button(key="access:link-sign-in").click().run()  # a link signs in only by its button
    at.button(key="access:sign-out").click().run()
    assert not at.exception
    assert [t.value for t in at.title] == ["Sign in"]
    assert [h.proto.body for h in at.get("html")] == [
        '<script>fetch("/_denominator/sign-out", {method: \'POST\', body: "", '
        "credentials: 'same-origin', cache: 'no-store'});</script>"
    ]
    with Store(db) as store:
        assert [r["revoked_at"] is not None for r in rows(store)] == [True]
    at.run()  # and stays signed out
    assert [t.value for t in at.title] == ["Sign in"] and not at.error


def test_a_wrong_token_says_so(demo) -> None:
    at = app_test().run()
    at.text_input[0].input("not-a-token")
    at.button[0].click().run()
    assert "not valid" in at.error[0].value
    assert identity.SESSION not in at.session_state


# ---------------------------------------------------------------- the cookie's routes


def client(db_path, monkeypatch) -> TestClient:
    monkeypatch.setenv("DENOMINATOR_DB", str(db_path))

    async def page(request):
        return PlainTextResponse(f"page {request.url.path}?{request.url.query}")

    app = Starlette(routes=[*routes.ROUTES, Route("/{path:path}", page)], middleware=routes.MIDDLEWARE)
    return TestClient(app, base_url="http://localhost")


ORIGIN = {"origin": "http://localhost"}


def test_the_code_buys_an_httponly_strict_cookie(demo, monkeypatch) -> None:
    db, tokens = demo
    http = client(db, monkeypatch)
    with Store(db) as store:
        started = store.start_session(tokens["ann"])
    assert http.post(routes.SESSION_ROUTE, content=started.handoff).status_code == 403  # no origin
    foreign = http.post(routes.SESSION_ROUTE, content=started.handoff, headers={"origin": "http://evil.test"})
    assert foreign.status_code == 403
    answer = http.post(routes.SESSION_ROUTE, content=started.handoff, headers=ORIGIN)
    assert answer.status_code == 204
    header = answer.headers["set-cookie"]
    session_id = http.cookies[identity.COOKIE]
    assert header.startswith(f"{identity.COOKIE}={session_id};")
    for attribute in ("HttpOnly", "SameSite=strict", "Path=/", "Max-Age="):
        assert attribute in header
    assert "Secure" not in header  # plain http here; https adds it
    assert answer.headers["cache-control"] == "no-store"
    assert http.post(routes.SESSION_ROUTE, content=started.handoff, headers=ORIGIN).status_code == 403  # once
    with Store(db) as store:
        assert store.session_identity(session_id=session_id)["name"] == "ann"
    gone = http.post(routes.SIGN_OUT_ROUTE, headers=ORIGIN)
    assert gone.status_code == 204 and 'denominator_session=""' in gone.headers["set-cookie"]
    assert "Max-Age=0" in gone.headers["set-cookie"]
    with Store(db) as store:
        assert store.session_identity(session_id=session_id) is None


def test_a_token_link_answers_with_its_page_and_signs_in_only_by_its_button(demo, monkeypatch) -> None:
    db, tokens = demo
    http = client(db, monkeypatch)
    page = http.get(f"/label?x=1&token={tokens['ann']}", follow_redirects=False)
    assert page.status_code == 200 and "set-cookie" not in page.headers  # no one signed in by a GET
    assert "This link signs this browser in as <b>ann</b> (annotator).</p>" in page.text
    assert "Anyone signed in on this browser is signed out by it." in page.text  # no cookie came
    # the token leaves the bar: a script file of this server, its target an attribute (no inline script)
    assert '<script src="/_denominator/link.js" data-target="/label?x=1"></script>' in page.text
    assert page.headers["x-frame-options"] == "DENY"
    assert "frame-ancestors 'none'" in page.headers["content-security-policy"]
    with Store(db) as store:
        assert store.db.execute("SELECT count(*) FROM sessions").fetchone() == (0,)
    form = {"token": tokens["ann"], "next": "/label?x=1"}
    assert http.post(routes.LINK_ROUTE, data=form, follow_redirects=False).status_code == 403  # no origin
    foreign = {"origin": "http://evil.test"}
    assert http.post(routes.LINK_ROUTE, data=form, headers=foreign, follow_redirects=False).status_code == 403
    answer = http.post(routes.LINK_ROUTE, data=form, headers=ORIGIN, follow_redirects=False)
    assert answer.status_code == 303 and answer.headers["location"] == "/label?x=1"
    assert "HttpOnly" in answer.headers["set-cookie"] and tokens["ann"] not in answer.headers["set-cookie"]
    first = http.cookies[identity.COOKIE]
    # with the cookie, the link's page names who is signed in; its button ends that session
    page = http.get(f"/?token={tokens['root']}")
    said = "This browser is signed in as <b>ann</b> (annotator): signing in as root signs ann out here."
    assert said in page.text
    form = {"token": tokens["root"], "next": "/"}
    answer = http.post(routes.LINK_ROUTE, data=form, headers=ORIGIN, follow_redirects=False)
    assert answer.status_code == 303 and answer.headers["location"] == "/"
    with Store(db) as store:
        assert store.session_identity(session_id=first) is None
        assert store.session_identity(session_id=http.cookies[identity.COOKIE])["name"] == "root"
    wrong = http.get("/label?token=not-a-token", follow_redirects=False)
    assert wrong.status_code == 200 and "This sign-in link is not valid" in wrong.text
    assert 'id="sign-in-by-link"' not in wrong.text
    refused = http.post(routes.LINK_ROUTE, data={"token": "not-a-token"}, headers=ORIGIN)
    assert refused.status_code == 403 and "not valid" in refused.text
    assert http.get("/label?x=1").text == "page /label?x=1"


def test_the_link_page_escapes_the_name(demo, monkeypatch) -> None:
    db, _ = demo
    with Store(db) as store:
        token = store.add_annotator("<img src=x onerror=alert(1)>", "annotator")
    page = client(db, monkeypatch).get(f"/?token={token}")
    assert "<img" not in page.text and "&lt;img src=x onerror=alert(1)&gt;" in page.text


def test_the_redirect_stays_on_this_site(demo, monkeypatch) -> None:
    """A ``next`` of ``//host/path`` must not answer ``Location: //host/path`` (another site)."""
    db, tokens = demo
    http = client(db, monkeypatch)
    for target, expected in (
        ("//evil.test/x", "/evil.test/x"),
        ("https://evil.test/", "/"),
        ("/\\evil.test", "/evil.test"),
    ):
        form = {"token": tokens["ann"], "next": target}
        answer = http.post(routes.LINK_ROUTE, data=form, headers=ORIGIN, follow_redirects=False)
        assert answer.status_code == 303 and answer.headers["location"] == expected, target


def test_the_link_button_with_the_store_down_says_so(demo, monkeypatch) -> None:
    """A store that cannot be read when the button is pressed is not "a token not valid"."""
    db, tokens = demo
    http = client(db, monkeypatch)
    monkeypatch.setattr(routes, "_sign_in_by_link", lambda *a: (_ for _ in ()).throw(StoreError("down")))
    answer = http.post(routes.LINK_ROUTE, data={"token": tokens["ann"]}, headers=ORIGIN)
    assert answer.status_code == 503 and "The store is unavailable; nothing was changed." in answer.text
    assert "not valid" not in answer.text
