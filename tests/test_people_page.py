"""The People page (issue #43, item 1), through AppTest on both backends: an admin adds a person
and gets the whole sign-in link (the address the page was opened at), which signs that person
in; a person signing in with the provider by e-mail; a new link ends the old one; revoking needs
its tick and ends every way in; the table's progress and last label are the store's; the first
person added in local mode ends it, with the link shown at once; an annotator cannot open it."""

from __future__ import annotations

from annotation.render import plain
from annotation.store import Store
from annotation.values import sign_in_link
from tests.conftest import page_test, page_text

PAGE = "denominator.ui.people.render_people_page"
HERE = "http://127.0.0.1:8502/people"  # the address the admin's browser shows


def people_page(token: str | None = None):
    at = page_test(PAGE, state={"access:token": token} if token else None)
    at.context = {"url": HERE}
    return at.run()


def submit_add(at, name: str, role: str = "annotator", email: str | None = None):
    form = [t for t in at.text_input if t.label.startswith("name")][0]
    form.set_value(name)
    at.radio[0].set_value(role)
    if email is not None:
        at.radio[1].set_value("the team's provider, by e-mail")
        [t for t in at.text_input if t.label.startswith("e-mail")][0].set_value(email)
    at.button(key="FormSubmitter:people:add-Add").click()
    return at.run()


def shown_link(at) -> str:
    links = [c.value for c in at.code if "?token=" in c.value]
    assert len(links) == 1, page_text(at)
    return links[0]


def test_add_link_renew_revoke_and_what_the_table_says(demo_db) -> None:
    with Store(demo_db) as store:
        root = store.add_annotator("root", "admin")
    at = people_page(root)
    assert not at.exception and [t.value for t in at.title] == ["People"]
    table = {row["person"]: row for row in at.table[0].value.to_dict("records")}
    assert set(table) == {"ann", "bob", "cat", "dan", "root"}
    # the demo: 40 chunk items for ann and bob, 8 of them shared, so 24 in ann's queue
    assert table["ann"]["chunk items labelled"] == "0 / 24" and table["ann"]["last label (UTC)"] == "none yet"
    assert table["cat"]["last label (UTC)"] != "none yet" and table["root"]["token"] == "token"
    with Store(demo_db) as store:
        newest = store.last_labelled()["cat"]
    assert table["cat"]["last label (UTC)"] == newest.replace("T", " ")[:19]

    at = submit_add(at, "eve")
    assert not at.exception and not at.error, [e.value for e in at.error]
    link = shown_link(at)
    assert link.startswith("http://127.0.0.1:8502/?token=")
    first = link.split("?token=", 1)[1]
    with Store(demo_db) as store:
        assert store.identify(first) == {"name": "eve", "role": "annotator"}
    table = {row["person"]: row for row in at.table[0].value.to_dict("records")}
    assert table["eve"]["token"] == "token"  # the table drawn again after the add

    at = submit_add(at, "eve")  # a name holding a token: refused, nothing shown
    assert plain(at.error[0].value) == "annotator 'eve' already has a token; revoke it first (below)"
    assert not shown_link_or_none(at)

    at = submit_add(at, "fay", email="Fay@Example.com")
    assert plain(at.success[0].value) == (
        "Added **fay** (annotator): they sign in with the provider as Fay@Example.com."
    )
    with Store(demo_db) as store:
        fay = [p for p in store.annotators() if p["name"] == "fay"][0]
    assert (fay["email"], fay["provider"], fay["access"]) == ("fay@example.com", "active", "none")

    at.selectbox(key="people:link-who").set_value("eve")
    at.button(key="FormSubmitter:people:link-New link").click().run()
    second = shown_link(at).split("?token=", 1)[1]
    with Store(demo_db) as store:
        assert store.identify(first) is None and store.identify(second)["name"] == "eve"

    at.selectbox(key="people:revoke-who").set_value("eve")
    at.button(key="FormSubmitter:people:revoke-Revoke").click().run()
    assert plain(at.error[0].value) == "Tick “yes, revoke this person” first."
    with Store(demo_db) as store:
        assert store.identify(second) is not None  # not without the tick
    at.selectbox(key="people:revoke-who").set_value("eve")
    at.checkbox(key="people:revoke-sure").check()
    at.button(key="FormSubmitter:people:revoke-Revoke").click().run()
    assert plain(at.success[0].value) == "Revoked the token of **eve**; their labels stay."
    with Store(demo_db) as store:
        assert store.identify(second) is None
    assert "root" not in at.selectbox(key="people:revoke-who").options  # never oneself


def shown_link_or_none(at) -> list[str]:
    return [c.value for c in at.code if "?token=" in c.value]


def test_the_first_person_in_local_mode_ends_it_and_the_link_is_shown_at_once(demo_db) -> None:
    at = people_page()  # local mode: no one has a way in
    assert any("first person you add ends that" in i.value for i in at.info)
    assert at.radio[0].value == "admin"  # the first person is offered admin
    at = submit_add(at, "lee", role="admin")
    link = shown_link(at)
    assert "Local mode has ended" in at.success[0].value
    with Store(demo_db) as store:
        assert store.tokens_required()
        assert store.identify(link.split("?token=", 1)[1]) == {"name": "lee", "role": "admin"}
    assert link == sign_in_link("http://127.0.0.1:8502", link.split("?token=", 1)[1])


def test_an_annotator_cannot_open_it(demo_db) -> None:
    with Store(demo_db) as store:
        ann = store.add_annotator("ann", "annotator")
    at = people_page(ann)
    assert "This page is for admins only" in at.error[0].value and not at.table
    assert "People" not in [t.value for t in at.title]
