"""Roles and access: tokens (stored as hashes), sign-in, what an annotator can open.

The rendered-page assertions: an annotator's session, through the real
app.py, shows no retriever or system name, no rank, no score, no judge label
and no other person's label or name on any page it can open; admin pages
refuse it on the server.
"""

from __future__ import annotations

import re

import pytest
import streamlit as st

from annotation.__main__ import main
from annotation.store import Store, StoreError
from tests.conftest import add_tokens, app_test, page_test, page_text, plant_secrets

SECRET_REASON = "JUDGE-REASON-7781"  # a judge label's text, planted to be looked for


@pytest.fixture
def demo(demo_db):
    """The demo, with a judge label, distinctive run scores and a token for ann and for root."""
    plant_secrets(demo_db, SECRET_REASON)
    return demo_db, add_tokens(demo_db)


FORBIDDEN = ("retriever", "rag-bm25", "rag-rerank", "bob", "cat", "dan", "0.987654", SECRET_REASON, "gpt-x")


def assert_blind(text: str) -> None:
    """No forbidden word, as a word ("dan" may sit inside "dangerous")."""
    for word in FORBIDDEN:
        assert not re.search(rf"\b{re.escape(word)}\b", text, flags=re.IGNORECASE), word
    assert not re.search(r"\b(rank|scor)", text, flags=re.IGNORECASE)  # rank, ranked, score, scored


# ---------------------------------------------------------------- store


def test_tokens_are_shown_once_and_stored_as_hashes(tmp_path) -> None:
    db = tmp_path / "a.db"
    with Store(db) as store:
        assert not store.tokens_required()
        token = store.add_annotator("ann", "annotator")
        assert len(token) >= 32 and store.tokens_required()
        assert store.identify(token) == {"name": "ann", "role": "annotator"}
        assert store.identify(token + "x") is None and store.identify("") is None
        with pytest.raises(StoreError, match="already has a token; revoke it first"):
            store.add_annotator("ann", "admin")
        with pytest.raises(StoreError, match="role must be one of annotator, reviewer, admin"):
            store.add_annotator("eve", "owner")
        store.revoke_annotator("ann")
        assert store.identify(token) is None
        assert store.tokens_required()  # revoking the last token does not reopen local mode
        with pytest.raises(StoreError, match="has no active token"):
            store.revoke_annotator("ann")
        with pytest.raises(StoreError, match="no annotator named 'zed'"):
            store.revoke_annotator("zed")
        again = store.add_annotator("ann", "admin")  # a new token after a revocation
        assert store.identify(again) == {"name": "ann", "role": "admin"} and store.identify(token) is None
        assert [(r["name"], r["role"], r["access"]) for r in store.annotators()] == [
            ("ann", "admin", "token")
        ]
    wal = tmp_path / "a.db-wal"
    raw = db.read_bytes() + (wal.read_bytes() if wal.exists() else b"")
    assert b"sha256:" in raw  # the hashes are there to be found
    assert token.encode() not in raw and again.encode() not in raw


def test_annotators_command_line(tmp_path, capsys) -> None:
    db = str(tmp_path / "c.db")
    Store(db).close()  # an empty store (a missing file is no store to list)
    assert main(["annotators", "list", "--db", db]) == 0
    assert capsys.readouterr().out == "no annotators yet\n"
    assert main(["annotators", "add", "ann", "--role", "annotator", "--db", db]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "annotator 'ann' (annotator); access token, shown this once:"
    with Store(db) as store:
        assert store.identify(out[1]) == {"name": "ann", "role": "annotator"}
    assert main(["annotators", "add", "ann", "--role", "admin", "--db", db]) == 2
    assert "error: annotator 'ann' already has a token" in capsys.readouterr().err
    assert main(["annotators", "revoke", "ann", "--db", db]) == 0
    assert main(["annotators", "list", "--db", db]) == 0
    listing = capsys.readouterr().out.splitlines()
    assert listing[-2].split() == ["ann", "annotator", "revoked", "0"]
    assert listing[-1] == "the app asks for a token"
    assert main(["annotators", "add", "x", "--db", db]) == 2  # --role is required
    assert "--role" in capsys.readouterr().err


def test_annotators_add_and_link_print_the_whole_sign_in_link(tmp_path, capsys, monkeypatch) -> None:
    """``--url`` (or ``$DENOMINATOR_URL``) turns the token into the link people open; ``link``
    gives a known person a new one, ending the old token and its sessions; a bad address is one
    line, exit 2, before the store is opened."""
    db = str(tmp_path / "people.db")
    monkeypatch.delenv("DENOMINATOR_URL", raising=False)
    for bad in ("127.0.0.1:8502", "ftp://host/", "http://h:8502/?x=1"):
        assert main(["annotators", "add", "ann", "--role", "annotator", "--db", db, "--url", bad]) == 2
        err = capsys.readouterr().err
        assert err == f"error: --url: expected the app's http:// or https:// address, got {bad!r}\n", err
    assert not (tmp_path / "people.db").exists()  # nothing written, not even an empty store
    url = "http://127.0.0.1:8502/"
    assert main(["annotators", "add", "ann", "--role", "annotator", "--db", db, "--url", url]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "annotator 'ann' (annotator); sign-in link, shown this once:"
    assert out[1].startswith("http://127.0.0.1:8502/?token=") and len(out) == 2
    first = out[1].split("?token=", 1)[1]
    with Store(db) as store:
        assert store.identify(first) == {"name": "ann", "role": "annotator"}
        session = store.claim_session(store.start_session(first).handoff)
    monkeypatch.setenv("DENOMINATOR_URL", "https://labels.example.com/team")
    assert main(["annotators", "link", "ann", "--db", db]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "annotator 'ann': a new token (the old one stopped); sign-in link, shown this once:"
    assert out[1].startswith("https://labels.example.com/team/?token=")
    second = out[1].split("?token=", 1)[1]
    with Store(db) as store:
        assert store.identify(first) is None and store.identify(second) == {
            "name": "ann",
            "role": "annotator",
        }
        assert store.session_identity(session_id=session.session_id) is None  # the old sign-in ended
    assert main(["annotators", "link", "zed", "--db", db]) == 2
    assert capsys.readouterr().err == "error: no annotator named 'zed'\n"
    monkeypatch.setenv("DENOMINATOR_URL", "labels")
    assert main(["annotators", "link", "ann", "--db", db]) == 2
    assert (
        "error: $DENOMINATOR_URL: expected the app's http:// or https:// address" in capsys.readouterr().err
    )


# ---------------------------------------------------------------- the app


def test_local_mode_says_so_and_opens_every_page(demo_db) -> None:
    at = app_test().run()
    assert not at.exception
    assert at.title[0].value == "Metrics and audit"  # the admin's default page
    assert any("Single-user local mode" in i.value for i in at.info)


def test_local_mode_refuses_a_network_address(demo_db) -> None:
    st.config.set_option("server.address", "0.0.0.0")
    try:
        at = app_test().run()
    finally:
        st.config.set_option("server.address", "127.0.0.1")
    assert not at.exception
    assert "not bound to a loopback address" in at.error[0].value
    assert not at.title and not at.table  # no page at all


def test_without_a_token_only_the_sign_in_page(demo) -> None:
    at = app_test().run()
    assert not at.exception
    assert [t.value for t in at.title] == ["Sign in"]
    assert not at.table and not at.code and not at.error
    at.text_input[0].input("not-a-token")
    at.button[0].click().run()
    assert [t.value for t in at.title] == ["Sign in"]
    assert "not valid" in at.error[0].value


def test_token_in_the_address_signs_in_and_leaves_the_address(demo) -> None:
    db, tokens = demo
    at = app_test()
    at.query_params["token"] = tokens["ann"]
    at.run()
    at.button(key="access:link-sign-in").click().run()  # a link signs in only by its button
    assert not at.exception
    assert at.title[0].value == "Label chunks"  # an annotator's default page
    assert "Signed in as **ann** (annotator)" in page_text(at)
    assert "0 / 24 in this batch labelled by ann" in page_text(at)
    assert "token" not in at.query_params
    assert not at.text_input  # no name box: the name comes with the token
    assert_blind(page_text(at))
    at.button(key="label:grade2").click().run()
    with Store(db) as store:
        rows = store.db.execute(
            "SELECT l.value FROM labels l JOIN annotators a ON a.id = l.annotator_id WHERE a.name = 'ann'"
        ).fetchall()
    assert rows == [(2,)]


def test_a_token_link_on_the_page_waits_for_its_button(demo) -> None:
    """Served without the middleware, a ``?token=`` that reaches the page signs no one in: the
    page names whom it would sign in (and who is signed in now); only the button switches."""
    db, tokens = demo
    at = app_test()
    at.query_params["token"] = tokens["root"]
    at.run()
    at.button(key="access:link-sign-in").click().run()
    assert "Signed in as **root** (admin)" in page_text(at)
    at.query_params["token"] = tokens["ann"]
    at.run()
    assert "token" not in at.query_params and [t.value for t in at.title] == ["Sign in"]
    assert "This link signs this browser in as **ann** (annotator)." in page_text(at)
    assert "This browser is signed in as **root** (admin)" in at.warning[0].value
    with Store(db) as store:  # ann has no session yet
        names = store.db.execute(
            "SELECT a.name FROM sessions s JOIN annotators a ON a.id = s.annotator_id ORDER BY s.id"
        ).fetchall()
    assert names == [("root",)]
    at.button(key="access:link-cancel").click().run()
    assert "Signed in as **root** (admin)" in page_text(at)  # still himself
    at.query_params["token"] = "not-a-token"
    at.run()
    assert "not valid" in at.error[0].value
    at.button(key="access:link-cancel").click().run()
    assert "Signed in as **root** (admin)" in page_text(at)


PAGES = {
    "render_metrics_page": "denominator.ui.metrics",
    "render_judge_page": "denominator.ui.judge",
    "render_review_page": "denominator.ui.review",
    "render_data_page": "denominator.ui.data",
    "render_guidelines_page": "denominator.ui.guidelines",
}


def session_page(render: str, token: str):
    module = PAGES.get(render, "denominator.ui.label")
    return page_test(f"{module}.{render}", state={"access:token": token}).run()


@pytest.mark.parametrize(
    "render", ["render_label_chunks_page", "render_label_traces_page", "render_compare_page"]
)
def test_every_labelling_page_is_blind_for_an_annotator(demo, render) -> None:
    _, tokens = demo
    at = session_page(render, tokens["ann"])
    assert not at.exception and not at.error
    text = page_text(at)
    assert "labelled by ann" in text  # the page did render an item's progress
    assert_blind(text)


@pytest.mark.parametrize(
    "render",
    [
        "render_data_page",
        "render_metrics_page",
        "render_judge_page",
        "render_review_page",
        "render_guidelines_page",
    ],
)
def test_admin_pages_refuse_an_annotator_on_the_server(demo, render) -> None:
    _, tokens = demo
    at = session_page(render, tokens["ann"])
    assert not at.exception
    assert [e.value for e in at.error] == [
        "This page is for admins only; you are signed in as ann (annotator)."
    ]
    assert_blind(page_text(at))
    admin = session_page(render, tokens["root"])
    assert not admin.exception and not admin.error and admin.title
    if render == "render_data_page":  # what the annotator was spared is there for the admin
        assert "retriever" in page_text(admin) and "bob" in page_text(admin)


def test_a_revoked_token_writes_nothing(demo) -> None:
    db, tokens = demo
    at = session_page("render_label_chunks_page", tokens["ann"])
    with Store(db) as store:
        store.revoke_annotator("ann")
    at.button(key="label:grade3").click().run()
    assert not at.exception
    with Store(db) as store:
        n = store.db.execute(
            "SELECT count(*) FROM labels l JOIN annotators a ON a.id = l.annotator_id WHERE a.name = 'ann'"
        ).fetchone()[0]
    assert n == 0
