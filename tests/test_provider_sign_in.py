"""Sign-in with the team's OpenID Connect provider (issue #29), below the browser: the store's
matching rules on both backends (subject, verified e-mail, claim rules; revocation, sign-out and
expiry end a sign-in on the server), the command line (``annotators add --email/--subject``,
``map-claim``, ``list``, ``revoke``: errors one line, exit 2), ``denominator serve --secrets``'s
checks (never printing a value), and the app through AppTest (claims as ``st.user`` gives them
from Streamlit's verified cookie): a configured provider ends local mode, an unknown address gets a
page naming it and nothing else, the blind labelling pages and the admin split hold, a revoked
person writes nothing. The real provider and browser: tests/e2e/test_provider_browser.py.
"""

from __future__ import annotations

import time

import pytest
import streamlit as st

from annotation.__main__ import main
from annotation.access.identity import elsewhere
from annotation.render import md
from annotation.store import ProviderClaims, Store, StoreError
from annotation.values import origin
from denominator.cli import main as denominator_main
from denominator.cli import streamlit_command
from tests.conftest import app_test, cli, page_text, plant_secrets, stored_bytes

ISSUER = "https://id.example.com"


def claims(sub: str, email: str | None = None, verified: object = True, **more) -> dict:
    """An ID token's claims as Streamlit keeps them, for a sign-in made now."""
    out = {
        "iss": ISSUER,
        "sub": sub,
        "aud": "denominator",
        "iat": int(time.time()),
        "nonce": f"n-{sub}-{time.time_ns()}",
    }
    if email is not None:
        out |= {"email": email, "email_verified": verified}
    return out | more


def person(sub: str, email: str | None = None, verified: object = True, **more) -> ProviderClaims:
    found = ProviderClaims.from_claims(claims(sub, email, verified, **more))
    assert found is not None
    return found


@pytest.fixture
def store(db_at):
    with Store(db_at) as opened:
        yield opened


# ---------------------------------------------------------------- the store, on both backends


def test_a_verified_email_matches_and_an_unverified_one_does_not(store) -> None:
    store.add_annotator("ann", "annotator", email="Ann@Example.com")
    found = store.provider_sign_in(person("s-ann", "ANN@example.COM"))
    assert (found.status, found.name, found.role, found.shown) == (
        "signed-in",
        "ann",
        "annotator",
        "ann@example.com",
    )
    for verified in (False, None, "false", "yes"):
        unverified = store.provider_sign_in(person("s-ann-2", "ann@example.com", verified=verified))
        assert unverified.status == "unknown" and unverified.name is None and unverified.role is None
        assert "not say is verified" in unverified.shown
    assert store.provider_sign_in(person("s-ann-3", "ann@example.com", verified="true")).status == "signed-in"
    assert store.provider_sign_in(person("s-zed", "zed@example.com")).status == "unknown"
    assert store.provider_sign_in(person("s-none")).shown == "subject s-none"


def test_the_subject_comes_before_the_email(store) -> None:
    store.add_annotator("ann", "annotator", email="ann@example.com")
    store.add_annotator("root", "admin", subject="s-root")
    found = store.provider_sign_in(person("s-root", "ann@example.com"))  # root's account, ann's address
    assert (found.name, found.role) == ("root", "admin")


def test_one_sign_in_is_one_session_until_sign_out_or_expiry(store) -> None:
    store.add_annotator("ann", "annotator", email="ann@example.com")
    first = person("s-ann", "ann@example.com")
    a, b = store.provider_sign_in(first), store.provider_sign_in(first)  # a reload, a new tab
    assert a.status == b.status == "signed-in" and a.session == b.session
    assert store.db.execute("SELECT count(*) FROM provider_sessions").fetchone()[0] == 1
    assert store.end_provider_session(a.session) and not store.end_provider_session(a.session)
    assert store.provider_sign_in(first).status == "ended"  # the same cookie, replayed: over
    again = person("s-ann", "ann@example.com")  # a new sign-in: a new nonce
    assert store.provider_sign_in(again).status == "signed-in"
    stale = ProviderClaims.from_claims(claims("s-ann", "ann@example.com") | {"iat": time.time() - 13 * 3600})
    assert store.provider_sign_in(stale).status == "ended"  # 12 hours from the provider's sign-in
    assert store.provider_sign_in(stale, hours=14).status == "signed-in"
    later = person("s-ann", "ann@example.com")
    key = store.provider_sign_in(later).session
    with store.write():  # the recorded expiry passes
        store.db.execute(
            "UPDATE provider_sessions SET expires_at = '2000-01-01T00:00:00+00:00' WHERE sign_in_hash = ?",
            [key],
        )
    assert store.provider_sign_in(later).status == "ended"


def test_revoking_ends_every_way_in_and_a_rule_cannot_bring_the_person_back(store) -> None:
    token = store.add_annotator("ann", "annotator")
    store.add_annotator("ann", "annotator", email="ann@example.com")  # both ways in
    store.map_claim("groups", "labellers", "annotator", "test")
    session = store.claim_session(store.start_session(token).handoff)
    signed = store.provider_sign_in(me := person("s-ann", "ann@example.com", groups=["labellers"]))
    assert signed.status == "signed-in"
    assert store.revoke_annotator("ann") == ["token", "provider sign-in"]
    assert store.session_identity(session_id=session.session_id) is None
    assert store.provider_sign_in(me).status == "revoked"
    assert (
        store.provider_sign_in(person("s-ann", "ann@example.com", groups=["labellers"])).status == "revoked"
    )
    with pytest.raises(StoreError, match="has no active token or sign-in with the provider"):
        store.revoke_annotator("ann")
    assert store.tokens_required()  # revoking does not reopen local mode
    store.add_annotator("ann", "admin", email="ann@example.com")  # let in again, by an admin
    assert store.provider_sign_in(me).status == "ended"  # the sign-in before stays over
    back = store.provider_sign_in(person("s-ann", "ann@example.com"))
    assert (back.status, back.role) == ("signed-in", "admin")


def test_a_claim_rule_adds_a_person_named_by_the_verified_email(store) -> None:
    store.map_claim("groups", "labellers", "annotator", "lee")
    store.map_claim("realm_access.roles", "lead", "admin", "lee")
    lab = store.provider_sign_in(person("s-lab", "Lab@Example.com", groups=["staff", "labellers"]))
    assert (lab.status, lab.name, lab.role) == ("signed-in", "lab@example.com", "annotator")
    lead = store.provider_sign_in(
        person("s-lead", "lead@example.com", groups=["labellers"], realm_access={"roles": ["lead"]})
    )
    assert (lead.name, lead.role) == ("lead@example.com", "admin")  # admin when any rule says so
    assert store.provider_sign_in(person("s-out", "out@example.com", groups=["staff"])).status == "unknown"
    nameless = person("s-x", "x@example.com", verified=False, groups=["labellers"])
    assert store.provider_sign_in(nameless).status == "unknown"  # no verified e-mail to name them by
    assert store.provider_sign_in(person("s-y", groups="labellers")).status == "unknown"
    rows = {r["name"]: r for r in store.annotators()}
    assert (
        rows["lab@example.com"]["email"] == "lab@example.com" and rows["lab@example.com"]["access"] == "none"
    )
    assert rows["lab@example.com"]["provider"] == "active"
    # the role stays the store's: a rule changed later does not change who was added
    store.map_claim("groups", "labellers", "admin", "lee")
    assert (
        store.provider_sign_in(person("s-lab", "lab@example.com", groups=["labellers"])).role == "annotator"
    )
    store.unmap_claim("groups", "labellers")
    assert store.provider_sign_in(person("s-lab", "lab@example.com")).status == "signed-in"  # they stay
    assert [r["claim"] for r in store.claim_rules()] == ["realm_access.roles"]
    with pytest.raises(StoreError, match="no claim rule groups=labellers"):
        store.unmap_claim("groups", "labellers")


def test_a_rule_links_a_name_known_without_access_and_never_takes_someone_elses(store) -> None:
    store.annotator_id("old@example.com")  # labels imported under the address, no access yet
    store.add_annotator("tok@example.com", "admin")  # an admin's token under the address
    store.add_annotator("other", "annotator", email="mine@example.com")
    store.map_claim("hd", "example.com", "annotator", "lee")
    old = store.provider_sign_in(person("s-old", "old@example.com", hd="example.com"))
    assert (old.status, old.name, old.role) == ("signed-in", "old@example.com", "annotator")
    tok = store.provider_sign_in(person("s-tok", "tok@example.com", hd="example.com"))
    assert (tok.name, tok.role) == ("tok@example.com", "admin")  # the role an admin gave stays
    store.revoke_annotator("tok@example.com")
    assert store.provider_sign_in(person("s-tok", "tok@example.com", hd="example.com")).status == "revoked"


def test_each_way_in_ends_local_mode_and_adding_is_checked(store) -> None:
    assert not store.tokens_required()
    store.map_claim("groups", "labellers", "annotator", "lee")
    assert store.tokens_required()
    store.unmap_claim("groups", "labellers")
    assert not store.tokens_required()
    assert store.add_annotator("sub", "annotator", subject="s-1") is None  # no token
    assert store.tokens_required()
    for bad in ("no-at", "a@b@c", "@x", "a b@c"):
        with pytest.raises(StoreError, match="not an e-mail address"):
            store.add_annotator("x", "annotator", email=bad)
    with pytest.raises(StoreError, match="the subject 's-1' already belongs to annotator 'sub'"):
        store.add_annotator("x", "annotator", subject="s-1")
    store.add_annotator("ann", "annotator", email="ann@example.com")
    with pytest.raises(StoreError, match="the e-mail 'ann@example.com' already belongs to annotator 'ann'"):
        store.add_annotator("x", "annotator", email="ANN@example.com")
    with pytest.raises(
        StoreError, match="already signs in with the provider as ann@example.com; revoke it first"
    ):
        store.add_annotator("ann", "admin", email="ann2@example.com")
    with pytest.raises(StoreError, match="role must be one of"):
        store.add_annotator("y", "owner", email="y@example.com")
    for claim in ("iss", "email_verified", "aud", "nonce"):
        with pytest.raises(StoreError, match="is not one the provider asserts about the person"):
            store.map_claim(claim, "x", "annotator", "lee")


def test_what_a_sign_in_needs_and_what_the_store_keeps(store, db_at) -> None:
    base = claims("s-ann", "ann@example.com")
    for missing in ("iss", "sub", "iat", "nonce"):
        assert ProviderClaims.from_claims({k: v for k, v in base.items() if k != missing}) is None
    assert ProviderClaims.from_claims(base | {"iat": True}) is None
    assert ProviderClaims.from_claims(base | {"sub": " "}) is None
    store.add_annotator("ann", "annotator", email="ann@example.com")
    found = store.provider_sign_in(ProviderClaims.from_claims(base))
    assert found.session and found.session.startswith("sha256:")
    raw = stored_bytes(db_at)
    assert base["nonce"].encode() not in raw  # a sign-in's key is a hash of its claims


@pytest.mark.postgres
def test_migrate_copies_the_providers_tables(tmp_path, postgres_server) -> None:
    from annotation.store.transfer import copy_store

    lite = tmp_path / "p.db"
    with Store(lite) as store:
        store.add_annotator("ann", "annotator", email="ann@example.com")
        store.map_claim("groups", "labellers", "annotator", "lee")
        store.provider_sign_in(person("s-ann", "ann@example.com"))
    url = postgres_server.database()
    with Store(lite) as source, Store(url) as target:
        copied = {t.table: t.rows for t in copy_store(source, target)}
    assert copied["claim_rules"] == copied["provider_sessions"] == 1
    with Store(url) as store:
        assert store.provider_sign_in(person("s-ann", "ann@example.com")).name == "ann"
        assert store.claim_rules()[0]["value"] == "labellers"


# ---------------------------------------------------------------- the command line


def test_annotators_add_with_an_email_or_subject_and_list(tmp_path, capsys) -> None:
    db = tmp_path / "c.db"
    code, out, err = cli(
        main,
        capsys,
        "annotators",
        "add",
        "ann",
        "--role",
        "annotator",
        "--email",
        "Ann@Example.com",
        "--db",
        db,
    )
    assert (code, out) == (
        0,
        "annotator 'ann' (annotator) signs in with the provider as e-mail ann@example.com\n",
    )
    code, out, _ = cli(
        main,
        capsys,
        "annotators",
        "add",
        "cy",
        "--role",
        "admin",
        "--subject",
        "s-cy",
        "--email",
        "cy@x.org",
        "--db",
        db,
    )
    assert out == "annotator 'cy' (admin) signs in with the provider as e-mail cy@x.org and subject s-cy\n"
    code, out, _ = cli(main, capsys, "annotators", "add", "bob", "--role", "annotator", "--db", db)
    assert out.startswith("annotator 'bob' (annotator); access token, shown this once:")
    code, out, err = cli(
        main, capsys, "annotators", "add", "dd", "--role", "admin", "--email", "ann@example.com", "--db", db
    )
    assert (code, out, err) == (
        2,
        "",
        "error: the e-mail 'ann@example.com' already belongs to annotator 'ann'\n",
    )
    code, _, err = cli(
        main, capsys, "annotators", "add", "ee", "--role", "admin", "--email", "nope", "--db", db
    )
    assert (code, err) == (2, "error: not an e-mail address: 'nope'\n")
    code, out, _ = cli(main, capsys, "annotators", "revoke", "ann", "--db", db)
    assert out == "revoked the provider sign-in of 'ann'; their labels stay\n"
    code, out, _ = cli(main, capsys, "annotators", "revoke", "bob", "--db", db)
    assert out == "revoked the token of 'bob'; their labels stay\n"
    code, out, _ = cli(main, capsys, "annotators", "list", "--db", db)
    assert out.splitlines() == [
        "name  role       access   current labels  provider",
        "ann   annotator  none     0               ann@example.com (revoked)",
        "bob   annotator  revoked  0",
        "cy    admin      none     0               cy@x.org",
        "the app asks for a token or a sign-in with the provider",
    ]


def test_map_claim_on_the_command_line(tmp_path, capsys) -> None:
    db = tmp_path / "m.db"
    code, out, _ = cli(
        main,
        capsys,
        "annotators",
        "map-claim",
        "groups=labellers",
        "--role",
        "annotator",
        "--by",
        "lee",
        "--db",
        db,
    )
    assert code == 0 and out == (
        "claim rule: a person whose ID token carries groups=labellers is added at first sign-in as "
        "annotator, named by their verified e-mail\n"
    )
    code, out, _ = cli(main, capsys, "annotators", "list", "--db", db)
    assert out.splitlines()[-2:] == [
        "claim rule: groups=labellers adds people as annotator (by lee)",
        "the app asks for a token or a sign-in with the provider",
    ]
    for argv, said in (
        (["groups"], "error: map-claim takes CLAIM=VALUE (e.g. groups=labellers), not 'groups'\n"),
        (["=x", "--role", "admin"], "error: map-claim takes CLAIM=VALUE (e.g. groups=labellers), not '=x'\n"),
        (["groups=x"], "error: map-claim takes --role ROLE, or --remove to drop the rule\n"),
        (
            ["groups=x", "--role", "admin", "--remove"],
            "error: map-claim takes --role ROLE, or --remove to drop the rule\n",
        ),
        (
            ["iss=x", "--role", "admin"],
            "error: claim 'iss' is not one the provider asserts about the person (a group, a role, the "
            "organisation or domain): a rule may name groups, roles, hd, tid, wids, org_id, org_name, "
            "department, team, groups_direct, cognito:groups, realm_access.roles, resource_access.CLIENT.roles\n",
        ),
        (["groups=nobody", "--remove"], "error: no claim rule groups=nobody\n"),
    ):
        code, out, err = cli(main, capsys, "annotators", "map-claim", *argv, "--db", db)
        assert (code, out, err.splitlines()[-1] + "\n") == (2, "", said), argv
        assert len([line for line in err.splitlines() if line.startswith("error")]) == 1
    code, _, err = cli(main, capsys, "annotators", "map-claim", "groups=x", "--role", "owner", "--db", db)
    assert code == 2 and "invalid choice: 'owner'" in err
    code, out, _ = cli(main, capsys, "annotators", "map-claim", "groups=labellers", "--remove", "--db", db)
    assert out == "removed the claim rule groups=labellers; the people it added stay\n"
    code, out, _ = cli(main, capsys, "annotators", "list", "--db", db)
    assert out == "no annotators yet\n"


# ---------------------------------------------------------------- denominator serve --secrets

SECRET = "client-secret-3b1f0e9d"
COOKIE = "cookie-secret-" + "x" * 40


def secrets_file(tmp_path, body: str | None = None, mode: int = 0o600):
    path = tmp_path / "secrets.toml"
    path.write_text(
        body
        if body is not None
        else (
            "[auth]\n"
            'redirect_uri = "https://labels.example.com/oauth2callback"\n'
            f'cookie_secret = "{COOKIE}"\n'
            'client_id = "denominator"\n'
            f'client_secret = "{SECRET}"\n'
            'server_metadata_url = "https://id.example.com/.well-known/openid-configuration"\n'
        )
    )
    path.chmod(mode)
    return path


def test_serve_checks_the_secrets_file_and_prints_no_value(tmp_path, capsys, monkeypatch) -> None:
    good = secrets_file(tmp_path)
    base = good.read_text()
    cases = [
        (good, 0o644, f"other users may read it (mode 0644); chmod 600 {good}"),
        (tmp_path / "none.toml", None, "no such file"),
        (None, "[auth\n", "not TOML ("),
        (None, "x = 1\n", "no [auth] section (docs/sign-in.md says what it holds)"),
        (
            None,
            base.replace("client_id", "#client_id").replace("cookie_secret", "#cookie_secret"),
            "[auth] lacks cookie_secret, client_id (docs/sign-in.md)",
        ),
        (
            None,
            base.replace("/oauth2callback", "/callback"),
            "[auth] redirect_uri must end in /oauth2callback",
        ),
        (
            None,
            base.replace("https://id.example.com", "id.example.com"),
            "[auth] server_metadata_url must be an http",
        ),
        (None, base.replace(COOKIE, "short"), "[auth] cookie_secret is shorter than 32 characters"),
    ]
    for path, how, said in cases:
        if path is None:
            path = secrets_file(tmp_path, how)
        elif how is not None:
            path.chmod(how)
        code, out, err = cli(denominator_main, capsys, "serve", "--secrets", path)
        assert code == 2 and out == "" and len(err.splitlines()) == 1, err
        assert err.startswith(f"error: --secrets {path}: ") and said in err, err
        assert SECRET not in err and COOKIE not in err and 'short"' not in err
        good.chmod(0o600)
    ran = []
    monkeypatch.setattr("os.execve", lambda *argv: ran.append(argv))
    assert denominator_main(["serve", "--secrets", str(secrets_file(tmp_path)), "--port", "8611"]) == 0
    err = capsys.readouterr().err
    assert "sign-in with id.example.com" in err and SECRET not in err and COOKIE not in err
    # the address people must open: the one the provider sends them back to, not the one served
    assert "people open https://labels.example.com, where its redirect_uri sends them back" in err
    here = secrets_file(tmp_path, base.replace("https://labels.example.com", "http://127.0.0.1:8611"))
    assert denominator_main(["serve", "--secrets", str(here), "--port", "8611"]) == 0
    err = capsys.readouterr().err
    assert "at http://127.0.0.1:8611; sign-in with id.example.com (Ctrl-C stops)" in err, err
    command = ran[0][1]
    assert command[command.index("--secrets.files") + 1] == str(good.resolve())  # its path, not its contents
    assert not any(SECRET in word or COOKIE in word for word in command)
    assert "--secrets.files" not in streamlit_command("127.0.0.1", 8600)


# ---------------------------------------------------------------- the app (AppTest)

AUTH = {
    "redirect_uri": "http://127.0.0.1:8501/oauth2callback",
    "cookie_secret": "c" * 40,
    "client_id": "denominator",
    "client_secret": "s" * 20,
    "server_metadata_url": "https://id.example.com/.well-known/openid-configuration",
}
SECRET_REASON = "JUDGE-REASON-5512"
FORBIDDEN = ("retriever", "rag-bm25", "rag-rerank", "bob", "cat", "dan", "0.987654", SECRET_REASON, "gpt-x")


def signed_in_app(user: dict | None = None):
    """app.py with a provider configured and ``user`` as ``st.user`` gives it (not run yet)."""
    at = app_test()
    at.secrets["auth"] = dict(AUTH)
    at.user = {"is_logged_in": True, **user} if user is not None else {}
    return at


@pytest.fixture
def demo(demo_db):
    plant_secrets(demo_db, SECRET_REASON)
    with Store(demo_db) as store:
        store.add_annotator("ann", "annotator", email="ann@example.com")
        store.add_annotator("root", "admin", subject="s-root")
    return demo_db


def test_a_configured_provider_ends_local_mode(demo_db) -> None:
    at = signed_in_app().run()  # no one has a token; a provider is configured
    assert not at.exception
    assert [t.value for t in at.title] == ["Sign in"]
    assert "Sign in with id.example.com" in page_text(at)
    assert "Single-user local mode" not in page_text(at) and not at.table
    st.config.set_option("server.address", "0.0.0.0")  # a network address is fine: sign-in is required
    try:
        at = signed_in_app().run()
    finally:
        st.config.set_option("server.address", "127.0.0.1")
    assert [t.value for t in at.title] == ["Sign in"] and not at.error


def test_origin_and_a_sign_in_started_elsewhere() -> None:
    assert origin("http://LocalHost:8501/oauth2callback") == "http://localhost:8501"
    assert origin("https://labels.example.com:443/oauth2callback") == "https://labels.example.com"
    assert origin("http://example.com:80/x?y=1") == "http://example.com"
    assert origin("http://[::1]:8501/") == "http://[::1]:8501"
    for bad in ("localhost:8501", "ftp://example.com/", "http://:8501/", "http://h:99999/", ""):
        assert origin(bad) is None, bad
    back = "http://localhost:8501"
    assert elsewhere("http://localhost:8501/label", back) is None
    assert elsewhere(None, back) is None and elsewhere("http://127.0.0.1:8501/", None) is None
    assert elsewhere("http://127.0.0.1:8501/label", back) == (
        "Sign in at http://localhost:8501: the provider sends people back there, not to http://127.0.0.1:8501."
    )
    assert elsewhere("http://localhost:8502/", back) is not None  # another port: another server


def test_the_sign_in_page_sends_people_to_the_address_the_provider_returns_to(demo_db) -> None:
    """Opened at http://localhost:8501 while the redirect URL is http://127.0.0.1:8501: no
    provider button (its sign-in would come back signed in as nobody), the address to open
    instead; the token form stays (a token signs in on any address)."""
    at = signed_in_app()
    at.context = {"url": "http://localhost:8501/"}
    at.run()
    assert not at.exception
    text = page_text(at)
    assert "Sign in with id.example.com" not in text
    assert [e.value for e in at.error] == [
        md(
            "Sign in at http://127.0.0.1:8501: the provider sends people back there, not to http://localhost:8501."
        )
    ]
    assert at.get("link_button")[0].proto.url == "http://127.0.0.1:8501"
    assert "access token" in text
    at = signed_in_app()
    at.context = {"url": "http://127.0.0.1:8501/label"}
    at.run()
    assert "Sign in with id.example.com" in page_text(at) and not at.error


def test_signed_in_with_the_provider_labels_blind_and_admin_pages_refuse(demo) -> None:
    import re

    at = signed_in_app(claims("s-ann", "ann@example.com")).run()
    assert not at.exception
    assert at.title[0].value == "Label chunks"
    text = page_text(at)
    assert "Signed in as **ann** (annotator)" in text and "labelled by ann" in text
    assert not at.text_input  # the name comes with the sign-in
    for word in FORBIDDEN:
        assert not re.search(rf"\b{re.escape(word)}\b", text, flags=re.IGNORECASE), word
    at.button(key="label:grade2").click().run()
    with Store(demo) as store:
        assert store.db.execute(
            "SELECT l.value FROM labels l JOIN annotators a ON a.id = l.annotator_id WHERE a.name = 'ann'"
        ).fetchall() == [(2,)]
    admin = signed_in_app(claims("s-root", "someone@example.com")).run()
    assert admin.title[0].value == "Metrics and audit" and "Signed in as **root** (admin)" in page_text(admin)


def test_an_unknown_address_gets_a_page_naming_it_and_nothing_else(demo) -> None:
    at = signed_in_app(claims("s-zed", "zed@example.com")).run()
    assert not at.exception
    assert [t.value for t in at.title] == ["Not added yet"]
    text = page_text(at)
    assert "You are signed in as **zed@example.com**" in text
    assert "annotators add NAME --role annotator --email zed@example.com" in at.code[0].value
    assert "annotator)" not in text and "admin)" not in text and not at.table and not at.metric
    assert "labelled by" not in text and "Label chunks" not in text


def test_a_revoked_person_writes_nothing_and_is_told(demo) -> None:
    at = signed_in_app(claims("s-ann", "ann@example.com")).run()
    with Store(demo) as store:
        store.revoke_annotator("ann")
    at.button(key="label:grade3").click().run()  # the next key press: nothing written, signed out
    assert not at.exception
    with Store(demo) as store:
        assert (
            store.db.execute(
                "SELECT count(*) FROM labels l JOIN annotators a ON a.id = l.annotator_id WHERE a.name = 'ann'"
            ).fetchone()[0]
            == 0
        )
    assert [t.value for t in at.title] == ["Sign in"]
    assert "Your access (ann@example.com) has been revoked" in page_text(at)


def test_claims_are_not_read_while_headers_may_name_someone(demo) -> None:
    st.config.set_option("server.trustedUserHeaders", {"X-Email": "email"})
    try:
        at = signed_in_app(claims("s-ann", "ann@example.com")).run()
    finally:
        st.config.set_option("server.trustedUserHeaders", {})
    assert [t.value for t in at.title] == ["Sign in"]
    assert "server.trustedUserHeaders is set" in at.error[0].value
    assert "Signed in as" not in page_text(at)


def test_an_unverified_or_incomplete_identity_is_named_and_let_in_nowhere(demo) -> None:
    at = signed_in_app(
        claims("s-ann-2", "ann@example.com", verified=False)
    ).run()  # ann's address, unverified
    assert [t.value for t in at.title] == ["Not added yet"]
    assert "does not say is verified" in page_text(at) and "--email ADDRESS" in at.code[0].value
    incomplete = {k: v for k, v in claims("s-ann", "ann@example.com").items() if k != "nonce"}
    at = signed_in_app(incomplete).run()
    assert [t.value for t in at.title] == ["Not added yet"]
    assert "lacks a claim a sign-in needs" in page_text(at) and "Signed in as" not in page_text(at)
