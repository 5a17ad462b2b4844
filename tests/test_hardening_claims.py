"""Issue #38, items 3, 4 and 11 (the lapsed lease): claim rules name only claims the provider
asserts about the person (an allow list, refused at ``map-claim``, ignored at sign-in for a rule
stored before); a revocation holds on the provider's account (issuer and subject), whatever
e-mail it comes back with; a key press after its tab's lease lapsed never makes an open item
exceed the handout's labels. On both backends where the store is touched."""

from __future__ import annotations

import time

import pytest

from annotation.__main__ import main
from annotation.store import ProviderClaims, Store, StoreError
from annotation.store.providers import MAPPABLE_CLAIMS, mappable
from tests.conftest import cli, page_test, page_text

ISSUER = "https://id.example.com"


def person(sub: str, email: str | None = None, issuer: str = ISSUER, **more) -> ProviderClaims:
    """A sign-in made now: an ID token's claims as Streamlit keeps them (``is_logged_in`` and
    ``provider`` are Streamlit's own fields, on every sign-in alike)."""
    claims = {
        "iss": issuer,
        "sub": sub,
        "aud": "denominator",
        "iat": int(time.time()),
        "nonce": f"n-{sub}-{time.time_ns()}",
        "is_logged_in": True,
        "provider": "default",
        "typ": "ID",
        "ver": "1.0",
    }
    if email is not None:
        claims |= {"email": email, "email_verified": True}
    found = ProviderClaims.from_claims(claims | more)
    assert found is not None
    return found


@pytest.fixture
def store(db_at):
    with Store(db_at) as opened:
        yield opened


# ---------------------------------------------------------------- item 3: claims about the person


def test_a_rule_may_name_only_claims_the_provider_asserts_about_the_person(store) -> None:
    for claim in ("is_logged_in", "provider", "typ", "ver", "sub", "iss", "email_verified", "email", "name"):
        with pytest.raises(StoreError) as refused:
            store.map_claim(claim, "true", "admin", "lee")
        said = str(refused.value)
        assert said.startswith(f"claim {claim!r} is not one the provider asserts about the person")
        assert said.endswith("a rule may name " + ", ".join(MAPPABLE_CLAIMS)) and "\n" not in said
    assert store.claim_rules() == []
    for claim in ("groups", "roles", "hd", "tid", "realm_access.roles", "resource_access.denominator.roles"):
        store.map_claim(claim, "x", "annotator", "lee")
    assert [r["claim"] for r in store.claim_rules()] == [
        "groups",
        "hd",
        "realm_access.roles",
        "resource_access.denominator.roles",
        "roles",
        "tid",
    ]
    assert not mappable("resource_access.CLIENT.roles.x") and not mappable("resource_access..roles")
    # nobody added by an admin, and a token that carries no group: not let in
    nobody = store.provider_sign_in(person("s-nobody", "nobody@gmail.com"))
    assert (nobody.status, nobody.name, nobody.role) == ("unknown", None, None)


def test_a_rule_stored_before_the_allow_list_matches_no_one(store) -> None:
    """The attack: ``map-claim is_logged_in=true --role admin`` let an account nobody added sign in
    as admin. A store holding such a rule (set before the list existed) still lets no one in."""
    with store.write():
        for claim, value in (
            ("is_logged_in", "true"),
            ("provider", "default"),
            ("typ", "ID"),
            ("ver", "1.0"),
        ):
            store.db.execute(
                "INSERT INTO claim_rules (claim, value, role, who, created_at) VALUES (?, ?, 'admin', 'old', 'then')",
                [claim, value],
            )
    stranger = store.provider_sign_in(person("s-stranger", "stranger@gmail.com"))
    assert (stranger.status, stranger.name, stranger.role) == ("unknown", None, None)
    assert store.annotators() == []  # nobody was added
    store.map_claim("groups", "labellers", "annotator", "lee")  # a rule on a group still works
    lab = store.provider_sign_in(person("s-lab", "lab@example.com", groups=["labellers"]))
    assert (lab.status, lab.name, lab.role) == ("signed-in", "lab@example.com", "annotator")  # not admin


def test_map_claim_refuses_a_claim_off_the_list_in_one_line(tmp_path, capsys) -> None:
    db = tmp_path / "m.db"
    for claim in ("is_logged_in", "provider", "typ", "iss"):
        code, out, err = cli(
            main, capsys, "annotators", "map-claim", f"{claim}=true", "--role", "admin", "--db", db
        )
        assert (code, out) == (2, "")
        assert err == (
            f"error: claim {claim!r} is not one the provider asserts about the person (a group, a role, "
            "the organisation or domain): a rule may name groups, roles, hd, tid, wids, org_id, org_name, "
            "department, team, groups_direct, cognito:groups, realm_access.roles, resource_access.CLIENT.roles\n"
        )
    assert not db.exists()  # refused before the store was opened
    with Store(db) as store, store.write():  # a rule from before the list
        store.db.execute(
            "INSERT INTO claim_rules (claim, value, role, who, created_at) "
            "VALUES ('is_logged_in', 'true', 'admin', 'old', 'then')"
        )
    code, out, _ = cli(main, capsys, "annotators", "list", "--db", db)
    assert out.splitlines()[1] == (
        "claim rule: is_logged_in=true (by old) is ignored: is_logged_in is not a claim a rule may name "
        "(drop it: annotators map-claim is_logged_in=true --remove)"
    )
    code, out, _ = cli(main, capsys, "annotators", "map-claim", "is_logged_in=true", "--remove", "--db", db)
    assert (code, out) == (0, "removed the claim rule is_logged_in=true; the people it added stay\n")


# ---------------------------------------------------------------- item 4: revocation on the subject


def test_a_revoked_person_added_by_a_rule_stays_out_under_another_email(store) -> None:
    store.map_claim("groups", "labellers", "annotator", "lee")
    first = store.provider_sign_in(person("s-kim", "kim@example.com", groups=["labellers"]))
    assert (first.status, first.name) == ("signed-in", "kim@example.com")
    store.revoke_annotator("kim@example.com")
    # the same provider account (same subject, same group), another verified e-mail
    back = store.provider_sign_in(person("s-kim", "kim.new@example.com", groups=["labellers"]))
    assert (back.status, back.name, back.role) == ("revoked", "kim@example.com", None)
    names = [r["name"] for r in store.annotators()]
    assert names == ["kim@example.com"]  # no second annotator for the same account
    [row] = store.annotators()
    assert (row["email"], row["subject"], row["provider"]) == ("kim@example.com", "s-kim", "revoked")
    # an admin lets the person in again under the revoked name: then they are back, once more recorded
    store.add_annotator("kim@example.com", "annotator", email="kim.new@example.com")
    again = store.provider_sign_in(person("s-kim", "kim.new@example.com", groups=["labellers"]))
    assert (again.status, again.name) == ("signed-in", "kim@example.com")


def test_a_revoked_person_added_by_email_stays_out_under_another_email(store) -> None:
    """Revoked before their account was ever seen: the first sign-in after the revocation records
    the account, and it stays out whatever e-mail it comes with next."""
    store.map_claim("hd", "example.com", "annotator", "lee")
    store.add_annotator("ann", "annotator", email="ann@example.com")
    store.revoke_annotator("ann")
    assert store.provider_sign_in(person("s-ann", "ann@example.com", hd="example.com")).status == "revoked"
    other = store.provider_sign_in(person("s-ann", "ann2@example.com", hd="example.com"))
    assert (other.status, other.name) == ("revoked", "ann")
    assert [r["name"] for r in store.annotators()] == ["ann"]


def test_a_recorded_subject_matches_its_own_issuer_only(store) -> None:
    store.map_claim("groups", "labellers", "annotator", "lee")
    store.add_annotator("ann", "admin", email="ann@example.com")
    assert store.provider_sign_in(person("42", "ann@example.com")).name == "ann"  # records 42 at ISSUER
    elsewhere = store.provider_sign_in(person("42", "eve@other.example", issuer="https://other.example"))
    assert (elsewhere.status, elsewhere.name) == ("unknown", None)  # another provider's 42 is not ann
    # a subject an admin gave matches any issuer until its first sign-in, then that issuer's only
    store.add_annotator("lee", "admin", subject="s-lee")
    assert store.provider_sign_in(person("s-lee", issuer="https://a.example")).name == "lee"
    assert store.provider_sign_in(person("s-lee", issuer="https://b.example")).status == "unknown"
    assert store.provider_sign_in(person("s-lee", issuer="https://a.example")).name == "lee"


# ---------------------------------------------------------------- item 11: a late key press


def _items(store: Store, n: int) -> list[int]:
    store.import_queries({"q": "a question"})
    store.import_corpus([{"id": f"c{i:02d}", "text": f"chunk {i}"} for i in range(n)])
    return [store.ensure_item("chunk", query_id="q", chunk_id=f"c{i:02d}") for i in range(n)]


def _lease_until(store: Store, who: int, holder: str, item_id: int) -> dict | None:
    """The tab's lease, skipping what it is shown until ``item_id`` comes: each person visits the
    open items in an order of their own (#43); None when it never comes."""
    leased = store.lease_item(who, "chunk", holder)
    for _ in range(100):
        if leased is None or leased["item_id"] == item_id:
            return leased
        store.skip_item(who, "chunk", holder, leased["item_id"])
        leased = store.lease_item(who, "chunk", holder)
    return None


def _press(store: Store, name: str, holder: str, item_id: int, value: int = 2) -> str | None:
    """A key press as the labelling page makes it: the check, the label and the lease's end in one
    write; None when the label was stored, else why not."""
    who = store.annotator_id(name)
    with store.write():
        refused = store.label_refusal(who, "chunk", holder, item_id)
        if refused is None:
            store.add_label(item_id, name, value)
            store.end_lease(who, "chunk", holder)
    return refused


def _labels(store: Store) -> dict[int, int]:
    rows = store.db.execute("SELECT item_id, count(DISTINCT annotator_id) FROM labels GROUP BY item_id")
    return {int(i): int(n) for i, n in rows.fetchall()}


def _lapse(store: Store, name: str) -> None:
    with store.write():
        store.db.execute(
            "UPDATE leases SET expires_at = '2000-01-01T00:00:00+00:00' WHERE annotator_id = ?",
            [store.annotator_id(name)],
        )


def test_a_late_key_press_never_makes_a_third_label_under_handout_2(store) -> None:
    """The report: 12 of 40 items with 3 labels under handout 2 and 0.3 s leases. Here each of 40
    items goes the same way, without a clock: ann is shown it, then bob (the second place); ann's
    lease lapses; cat is shown it (ann's place is free); bob and cat label it; ann's key press,
    still on her screen, comes last. Before: 40 of 40 items had 3 labels."""
    # one open item at a time: each person has an order of their own (#43), so with one item open
    # all three are shown it
    store.import_queries({"q": "a question"})
    store.import_corpus([{"id": f"c{i:02d}", "text": f"chunk {i}"} for i in range(40)])
    assert store.handout() == ("open", 2)
    ann, bob, cat = (store.annotator_id(n) for n in ("ann", "bob", "cat"))
    refused, items = [], []
    for i in range(40):
        items.append(store.ensure_item("chunk", query_id="q", chunk_id=f"c{i:02d}"))
        shown = store.lease_item(ann, "chunk", "tab-ann")["item_id"]
        assert shown == items[-1]
        assert store.lease_item(bob, "chunk", "tab-bob")["item_id"] == shown
        _lapse(store, "ann")
        assert store.lease_item(cat, "chunk", "tab-cat")["item_id"] == shown
        assert _press(store, "bob", "tab-bob", shown) is None
        assert _press(store, "cat", "tab-cat", shown) is None
        refused.append(_press(store, "ann", "tab-ann", shown))
    assert refused == ["closed"] * 40
    assert _labels(store) == dict.fromkeys(items, 2)  # no item with 3 labels (before: 40 of 40)
    assert store.queue_progress(ann, "chunk") == (0, 0)  # every item went to two people


def test_a_late_key_press_is_refused_while_two_others_hold_the_item(store) -> None:
    [item] = _items(store, 1)
    ann, bob, cat = (store.annotator_id(n) for n in ("ann", "bob", "cat"))
    store.lease_item(ann, "chunk", "tab-ann")
    store.lease_item(bob, "chunk", "tab-bob")
    _lapse(store, "ann")
    assert store.lease_item(cat, "chunk", "tab-cat")["item_id"] == item
    assert _press(store, "ann", "tab-ann", item) == "closed"  # bob and cat have the two places
    assert not store.may_label(ann, "chunk", "tab-ann", item)
    assert _press(store, "bob", "tab-bob", item) is None and _press(store, "cat", "tab-cat", item) is None
    assert _labels(store) == {item: 2}


def test_a_late_key_press_lands_while_the_item_still_has_a_place(store) -> None:
    """A person's work is not wasted when it still counts: ann's lease lapsed and bob took the
    item, one place left; ann's key press lands, and cat is then not shown the item."""
    items = _items(store, 2)
    ann, bob, cat = (store.annotator_id(n) for n in ("ann", "bob", "cat"))
    item = store.lease_item(ann, "chunk", "tab-ann")["item_id"]  # the first in the queue's order
    [other] = set(items) - {item}
    _lapse(store, "ann")
    assert _lease_until(store, bob, "tab-bob", item)["item_id"] == item
    assert _press(store, "ann", "tab-ann", item) is None
    assert store.lease_item(cat, "chunk", "tab-cat")["item_id"] == other  # ann's label + bob's lease
    assert _press(store, "bob", "tab-bob", item) is None
    assert _labels(store) == {item: 2}
    # the assigned handout: an item of nobody's assignments is in no queue, a late press is refused
    store.set_handout("assigned", 2, "lee")
    _lapse(store, "cat")
    assert _press(store, "cat", "tab-cat", other) == "closed"


def test_the_late_key_press_is_told_why_nothing_was_saved(demo_db) -> None:
    """On the labelling page: kim (nothing assigned, so the open items) idles past her lease, two
    others label the item, her key press stores nothing and says why; her next item is shown."""

    def tab():
        return page_test(
            "denominator.ui.label.render_label_chunks_page", state={"label:annotator": "kim"}
        ).run()

    kim = tab()
    held = kim.session_state["label:kim:current"]
    with Store(demo_db) as store:
        _lapse(store, "kim")
        for name in ("max", "ned"):  # each has an order of their own (#43): skip to kim's item
            who = store.annotator_id(name)
            leased = store.lease_item(who, "chunk", f"tab-{name}")
            for _ in range(100):
                if leased is None or leased["item_id"] == held:
                    break
                store.skip_item(who, "chunk", f"tab-{name}", leased["item_id"])
                leased = store.lease_item(who, "chunk", f"tab-{name}")
            assert leased is not None and leased["item_id"] == held
            assert _press(store, name, f"tab-{name}", held) is None
    kim.button(key="label:grade2").click().run()
    assert not kim.exception
    assert "meanwhile this item went to the other people it needed" in page_text(kim)
    assert kim.session_state["label:kim:current"] not in (None, held)
    with Store(demo_db) as store:
        assert _labels(store)[held] == 2
        assert store.db.execute(
            "SELECT count(*) FROM labels l JOIN annotators a ON a.id = l.annotator_id WHERE a.name = 'kim'"
        ).fetchone() == (0,)
