"""#26: one item to one person once, across tabs and servers. Each tab leases the item it shows
(annotation.store.queue); skips and the current item live in the store, so a reload keeps them."""

from __future__ import annotations

import threading

import pytest

from annotation.store import Store, StoreError
from annotation.store.queue import TabSession, lease_seconds
from tests.conftest import page_test, page_text


def _ann(store: Store) -> int:
    return store.annotator_id("ann")


def test_two_tabs_of_one_person_never_hold_the_same_item(demo_db) -> None:
    with Store(demo_db) as store:
        ann = _ann(store)
        first = store.lease_item(ann, "chunk", "tab-one-aaaa")["item_id"]
        second = store.lease_item(ann, "chunk", "tab-two-bbbb")["item_id"]
        assert first != second
        assert store.lease_item(ann, "chunk", "tab-one-aaaa")["item_id"] == first  # a reload: the same
        # a key press in tab two on tab one's item (a stale screen) may not label it
        assert not store.may_label(ann, "chunk", "tab-two-bbbb", first)
        assert store.may_label(ann, "chunk", "tab-two-bbbb", second)
        # another person is not held back by ann's tabs (each has their own queue)
        bob = store.annotator_id("bob")
        assert store.lease_item(bob, "chunk", "tab-bob-cccc") is not None


def test_skips_live_in_the_store_and_come_back_last(demo_db) -> None:
    with Store(demo_db) as store:
        ann = _ann(store)
        skipped = store.lease_item(ann, "chunk", "tab-one-aaaa")["item_id"]
        store.skip_item(ann, "chunk", "tab-one-aaaa", skipped)
        assert store.skipped_items(ann, "chunk") == [skipped]
        nxt = store.lease_item(ann, "chunk", "tab-new-dddd")["item_id"]  # another tab, another server
        assert nxt != skipped
        total = store.queue_progress(ann, "chunk")[1]
        seen = {nxt}
        for _ in range(total - 2):  # label everything else
            item = store.lease_item(ann, "chunk", "tab-new-dddd")["item_id"]
            store.add_label(item, "ann", 1)
            store.end_lease(ann, "chunk", "tab-new-dddd")
            seen.add(item)
        assert skipped not in seen
        store.add_label(store.lease_item(ann, "chunk", "tab-new-dddd")["item_id"], "ann", 1)
        store.end_lease(ann, "chunk", "tab-new-dddd")
        back = store.lease_item(ann, "chunk", "tab-new-dddd")
        assert back == {"item_id": skipped, "from_skips": True, "skips_left": 0}
        assert store.skipped_items(ann, "chunk") == []


def test_a_lapsed_lease_frees_the_item(demo_db, monkeypatch) -> None:
    with Store(demo_db) as store:
        ann = _ann(store)
        held = store.lease_item(ann, "chunk", "tab-one-aaaa")["item_id"]
        with store.write():
            store.db.execute("UPDATE leases SET expires_at = '2000-01-01T00:00:00+00:00'")
        assert store.lease_item(ann, "chunk", "tab-two-bbbb")["item_id"] == held  # the first in the queue
        assert store.may_label(ann, "chunk", "tab-two-bbbb", held)
        assert not store.may_label(ann, "chunk", "tab-one-aaaa", held)  # the idle tab's key press is refused


def test_the_lease_time_is_configurable_and_checked(monkeypatch) -> None:
    monkeypatch.setenv("DENOMINATOR_LEASE_MINUTES", "2")
    assert lease_seconds() == 120
    for bad in ("0", "-1", "x", "1e9"):
        monkeypatch.setenv("DENOMINATOR_LEASE_MINUTES", bad)
        with pytest.raises(StoreError, match="DENOMINATOR_LEASE_MINUTES must be"):
            lease_seconds()


def test_tabs_asking_at_once_get_distinct_items(demo_db) -> None:
    """Eight tabs of one person (threads, each its own connection) lease at the same moment."""
    got: list[int] = []
    barrier = threading.Barrier(8)

    def tab(n: int) -> None:
        with Store(demo_db) as store:
            ann = store.annotator_id("ann")
            barrier.wait()
            got.append(store.lease_item(ann, "chunk", f"tab-{n:04d}-xxxx")["item_id"])

    threads = [threading.Thread(target=tab, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(got) == 8 and len(set(got)) == 8


def _tab(tab: str | None = None):
    at = page_test("denominator.ui.label.render_label_chunks_page", state={"label:annotator": "ann"})
    if tab:
        at.query_params["tab"] = tab
    return at.run()


def _item(at) -> int:
    return at.session_state["label:ann:current"]


def test_two_tabs_show_two_items_and_a_reload_shows_the_same_item_and_skips(demo_db) -> None:
    one = _tab()
    two = _tab()
    assert not one.exception and not two.exception
    assert _item(one) != _item(two)
    tab_one = one.query_params["tab"]
    assert tab_one and tab_one != two.query_params["tab"]  # each tab's id, in its address
    one.button(key="label:skip").click().run()
    skipped, now = None, _item(one)
    with Store(demo_db) as store:
        [skipped] = store.skipped_items(store.annotator_id("ann"), "chunk")
    assert skipped != now
    reloaded = _tab(tab_one)  # a reload: a new session, the same address
    assert _item(reloaded) == now
    reloaded.toggle(key="label:mywork").set_value(True).run()
    assert "Skipped, 1 to label" in page_text(reloaded)


def test_a_stale_tab_cannot_label_an_item_another_tab_took(demo_db) -> None:
    """Tab two idles past its lease; tab three is then shown the same item (the first open in the
    queue); a key press in tab two, whose screen still shows it, stores nothing and says why."""
    two = _tab()
    held = _item(two)
    with Store(demo_db) as store, store.write():
        store.db.execute("UPDATE leases SET expires_at = '2000-01-01T00:00:00+00:00'")
    three = _tab()
    assert _item(three) == held
    two.button(key="label:grade2").click().run()
    assert "This item is on another of your tabs now" in page_text(two) and _item(two) != held
    three.button(key="label:grade3").click().run()
    with Store(demo_db) as store:
        rows = store.db.execute(
            """SELECT l.item_id, l.value FROM labels l JOIN annotators a ON a.id = l.annotator_id
               WHERE a.name = 'ann'"""
        ).fetchall()
    assert rows == [(held, 3)]  # one label on the item, tab three's


def test_a_person_added_later_gets_work_at_once(demo_db) -> None:
    """The demo assigns its chunk items to ann and bob; sam, added the README's way, was shown
    "0 / 0 ... Nothing left to label". Now sam's queue is the open items: those fewer than two
    other people have labelled; and two people leasing an item's last open places keep a third
    from being shown it."""
    from annotation.views import next_item, progress

    with Store(demo_db) as store:
        store.add_annotator("sam", "annotator")
        assert progress(store, "sam", "chunk") == (0, 20)  # 40 items, 20 labelled by cat and dan
        assert next_item(store, "sam", kind="chunk") is not None
        ann = store.annotator_id("ann")
        assert store.queue_progress(ann, "chunk") == (0, 24)  # ann's assigned queue as before
        # kim and lee, both new: an open item with no label yet has two places
        kim, lee, max_ = (store.annotator_id(n) for n in ("kim", "lee", "max"))
        taken = store.lease_item(kim, "chunk", "tab-kim-aaaa")["item_id"]
        # each open person has an order of their own (#43): lee's tab is put on kim's item (the second place)
        store.hold_item(lee, "chunk", "tab-lee-aaaa", taken, revisit=False)
        leased = [store.lease_item(max_, "chunk", f"tab-max-{n:04d}") for n in range(20)]
        shown = [lease["item_id"] for lease in leased if lease is not None]
        assert len(shown) == 19 and taken not in shown  # no third: max's 20 tabs get the 19 others


def test_pool_gives_named_people_the_items_already_in_the_store(demo_db, capsys) -> None:
    """``pool --annotators sam,kim`` on the demo printed "0 new items; 0 assignments"."""
    from annotation.__main__ import main

    assert main(["pool", "--db", str(demo_db), "--depth", "10", "--annotators", "sam,kim"]) == 0
    out = capsys.readouterr().out
    assert "0 new items; 24 assignments to 2 annotators, 4 of 20 items given to two of them" in out
    with Store(demo_db) as store:
        for name in ("sam", "kim"):
            assert store.queue_progress(store.annotator_id(name), "chunk")[1] > 0


def test_an_empty_queue_says_why(demo_db) -> None:
    with Store(demo_db) as store:
        # every chunk item labelled by two people: nothing is open to a new person
        for (item,) in store.db.execute("SELECT id FROM items WHERE kind = 'chunk'").fetchall():
            for who in ("cat", "dan"):
                store.add_label(item, who, 1)
    at = page_test("denominator.ui.label.render_label_chunks_page", state={"label:annotator": "zoe"}).run()
    assert "Nothing to label here for zoe" in page_text(at) and "--annotators zoe" in page_text(at)
    assert "an open item closes at 2 people's labels" in page_text(at)


def test_the_handout_is_the_projects_and_recorded(demo_db, capsys) -> None:
    """``handout``: open (the default: each item to whoever asks, until N people labelled it) or
    assigned (a person with nothing assigned gets nothing, and the page says so). Each change is
    a new row; the newest counts; the CLI prints it in the words the page uses."""
    from annotation.__main__ import main
    from annotation.options import default

    assert (default("handout_mode"), default("handout_labels")) == ("open", 2)
    with Store(demo_db) as store:
        assert store.handout() == ("open", 2)
        sam = store.annotator_id("sam")
        assert store.queue_progress(sam, "chunk") == (0, 20)  # 40 items, 20 with cat's and dan's labels
        assert store.queue_progress(sam, "trace") == (0, 40)  # cat's 16 faithfulness labels: one each
    assert main(["handout", "--db", str(demo_db), "--labels", "1", "--by", "kim"]) == 0
    assert "set: items are handed out open" in capsys.readouterr().out
    with Store(demo_db) as store:
        sam = store.annotator_id("sam")
        assert store.queue_progress(sam, "trace") == (0, 24)  # cat's 16 are closed at one label
        assert store.queue_progress(sam, "chunk") == (0, 20)
        ann = store.annotator_id("ann")
        assert store.queue_progress(ann, "chunk") == (0, 24)  # assigned work is the person's either way
    assert main(["handout", "--db", str(demo_db), "--mode", "assigned"]) == 0
    capsys.readouterr()
    with Store(demo_db) as store:
        assert store.handout() == ("assigned", 1)  # --labels kept as it was
        assert store.queue_progress(store.annotator_id("sam"), "chunk") == (0, 0)
        assert store.lease_item(store.annotator_id("sam"), "chunk", "tab-sam-aaaa") is None
        assert store.queue_progress(store.annotator_id("ann"), "chunk") == (0, 24)
        rows = store.db.execute("SELECT mode, per_item, who FROM handout ORDER BY id").fetchall()
        assert [tuple(r)[:2] for r in rows] == [("open", 1), ("assigned", 1)] and rows[0][2] == "kim"
        with pytest.raises(Exception, match="append-only|a record"):
            with store.write():
                store.db.execute("DELETE FROM handout")
    assert main(["handout", "--db", str(demo_db)]) == 0
    assert capsys.readouterr().out.startswith("items are handed out as assigned")
    at = page_test("denominator.ui.label.render_label_chunks_page", state={"label:annotator": "sam"}).run()
    assert "Nothing is assigned to you, sam" in page_text(at) and "--annotators sam" in page_text(at)
    with Store(demo_db) as store, pytest.raises(StoreError, match="expected one of open, assigned"):
        store.set_handout("shut", 2, "kim")


@pytest.mark.parametrize("key", ["label:grade2", "label:skip"])
def test_a_key_press_is_one_write_with_the_next_item_leased_in_it(demo_db, monkeypatch, key) -> None:
    """The label (or skip) and the next item's lease are one transaction: the pane's redraw that
    follows finds its item leased and only reads (no second write, no second commit)."""
    from annotation.store.base import StoreBase

    one = _tab()
    first = _item(one)
    begun: list[str] = []
    real_begin = StoreBase._begin

    def counting_begin(self) -> None:
        begun.append(self.dialect)
        real_begin(self)

    monkeypatch.setattr(StoreBase, "_begin", counting_begin)
    one.button(key=key).click().run()
    assert not one.exception
    second = _item(one)
    assert second not in (None, first)
    assert len(begun) == 1  # the press's own write; the redraw wrote nothing
    with Store(demo_db) as store:
        [(leased,)] = store.db.execute(
            "SELECT l.item_id FROM leases l JOIN annotators a ON a.id = l.annotator_id WHERE a.name = 'ann'"
        ).fetchall()
    assert leased == second


@pytest.mark.postgres
def test_borrowed_handles_are_reused_checked_and_dropped_when_unsafe(postgres_server) -> None:
    """On PostgreSQL a key press borrows an idle handle of the process (no new connection); one
    whose server restarted is replaced at the next borrow; one left in a transaction or by an
    error is closed, not given back. On SQLite every borrow is a new handle."""
    from annotation.store import borrowed

    url = postgres_server.database()
    with Store(url):
        pass  # the schema
    with borrowed(url) as first:
        pid = first.db.execute("SELECT pg_backend_pid()").fetchone()[0]
    with borrowed(url) as again:
        assert again is first and again.db.execute("SELECT pg_backend_pid()").fetchone()[0] == pid
    postgres_server.halt()
    postgres_server.restart()
    with borrowed(url) as after:  # the idle handle's connection died with the server
        assert after is not first
        assert after.db.execute("SELECT 1").fetchone()[0] == 1
    with pytest.raises(RuntimeError), borrowed(url) as failing:
        raise RuntimeError("a failure inside the block")
    with borrowed(url) as next_one:
        assert next_one is not failing  # a handle that saw an error is closed, not reused
    with borrowed(url) as left_open:
        left_open.db.execute("BEGIN")
    with borrowed(url) as fresh:
        assert fresh is not left_open and not fresh.db.conn.in_transaction


@pytest.mark.postgres
def test_a_label_pages_runs_on_postgresql_open_no_connection_after_the_first(
    postgres_server, monkeypatch
) -> None:
    """A whole run of the label page (a press in AppTest reruns all of it; in a browser, a page load
    or a sidebar change) reads who is signed in through a borrowed handle: no run opens a new
    connection once the process has one idle (a connection and its schema read are 4-6 round trips,
    more over TLS to a remote server)."""
    from annotation.store import postgres
    from denominator.demo import build_demo

    url = postgres_server.database()
    build_demo(url)
    monkeypatch.setenv("DENOMINATOR_DB", url)
    opened: list[str] = []
    connect = postgres.connect
    monkeypatch.setattr(postgres, "connect", lambda *a, **k: opened.append(a[0]) or connect(*a, **k))
    at = page_test("denominator.ui.label.render_label_chunks_page", state={"label:annotator": "ann"}).run()
    assert not at.exception and len(opened) <= 1
    first = len(opened)
    for _ in range(3):
        at.button(key="label:grade1").click().run()
        assert not at.exception
    with Store(url) as store:
        assert store.db.execute("SELECT count(*) FROM labels").fetchone()[0] >= 3
    assert len(opened) == first + 1  # the check just above, and no run of the page


def test_borrowed_sqlite_handles_are_new_each_time(tmp_path) -> None:
    from annotation.store import borrowed

    db = str(tmp_path / "s.db")
    with borrowed(db) as one:
        pass
    with borrowed(db) as two:
        assert two is not one and two.db.execute("SELECT 1").fetchone()[0] == 1


def test_the_data_page_says_and_sets_the_handout(demo_db) -> None:
    at = page_test("denominator.ui.data.render_data_page").run()
    assert not at.exception
    assert "items are handed out open: each goes to whoever asks next" in page_text(at)
    [radio] = [r for r in at.radio if r.label == "hand items out"]
    radio.set_value("assigned")
    at.number_input(key="data:handout-labels").set_value(3)
    [save] = [b for b in at.button if b.label == "Save how items are handed out"]
    save.click().run()
    assert not at.exception
    assert "Saved: items are handed out as assigned" in page_text(at)
    with Store(demo_db) as store:
        assert store.handout() == ("assigned", 3)


# ---------------------------------------------------------------- #43: queues that behave


def _open_order(store: Store, person: int) -> list[int]:
    """Every item the person would be handed next, in turn (each one skipped to see the next)."""
    order: list[int] = []
    while (item := store.next_unlabelled_item(person, "chunk", order)) is not None:
        order.append(item)
    return order


def test_each_open_person_has_an_order_of_their_own(demo_db) -> None:
    """#43: every open-mode person was handed the demo's open items in one order (49, 45, 69, 63 ...
    for two people). Now each has an order of their own, seeded by the person: the same 20 items,
    another order for each of sam, tom and una, the same order every time for one person, and a
    person labelling down their queue goes along their own order."""
    with Store(demo_db) as store:
        sam, tom, una = (store.annotator_id(n) for n in ("sam", "tom", "una"))
        orders = [_open_order(store, person) for person in (sam, tom, una)]
        assert [len(o) for o in orders] == [20, 20, 20] and len({frozenset(o) for o in orders}) == 1
        assert len({tuple(o[:4]) for o in orders}) == 3  # three different first four
        assert len({o[0] for o in orders}) == 3  # and three different first items
        assert _open_order(store, sam) == orders[0]  # deterministic per person
        walked = []
        for _ in range(10):  # sam labels ten, each the item his tab is handed
            item = store.lease_item(sam, "chunk", "tab-sam-aaaa")["item_id"]
            store.add_label(item, "sam", 1)
            store.end_lease(sam, "chunk", "tab-sam-aaaa")
            walked.append(item)
        assert walked == orders[0][:10]


def test_the_open_order_is_the_stretches_in_the_persons_order(demo_db) -> None:
    """#43's order, checked against one computed here from the items' positions (not by the
    store's statements): every open item sorted by its stretch's place in the person's order,
    then by position up or down the stretch as the person's seed says. The demo's 20 open items
    lie in stretches far down each person's order, so many looks are walked."""
    from annotation.store.queue import STRETCHES, open_order

    with Store(demo_db) as store:
        for name in ("sam", "tom"):
            person = store.annotator_id(name)
            rows = store.db.execute("SELECT id, position FROM items WHERE kind = 'chunk'").fetchall()
            place = {stretch: n for n, (stretch, _) in enumerate(open_order(person))}
            down = dict(open_order(person))
            span = (1 << 48) // STRETCHES

            def key(row, place=place, down=down, span=span):
                stretch = min(max(row[1] // span, 0), STRETCHES - 1)
                return (place[stretch], -row[1] if down[stretch] else row[1])

            walked = _open_order(store, person)
            queued = [row for row in rows if row[0] in set(walked)]  # the open ones (others closed the rest)
            assert len(walked) == len(queued) == 20
            assert walked == [item for item, _ in sorted(queued, key=key)]
            assert max(key(row)[0] for row in queued) >= 32  # half the stretches looked at, at least


def test_a_skipped_item_closed_by_others_never_comes_back(demo_db) -> None:
    """#43: sam skipped an open item, tom and una labelled it (the handout's 2), and once sam's
    queue was done it came back to him: 3 labels under a cap of 2. Now it is not handed back, not
    listed among his skipped items, and a key press on it (his tab put on it from a stale "my
    work") stores nothing: the item keeps its 2 labels."""
    with Store(demo_db) as store:
        sam = store.annotator_id("sam")
        for name in ("tom", "una"):
            store.annotator_id(name)  # added, as the app adds a person at their first visit
        skipped = store.lease_item(sam, "chunk", "tab-sam-aaaa")["item_id"]
        store.skip_item(sam, "chunk", "tab-sam-aaaa", skipped)
        for name in ("tom", "una"):
            store.add_label(skipped, name, 2)
        assert store.skipped_items(sam, "chunk") == []  # closed: no longer one of his to label
        while (lease := store.lease_item(sam, "chunk", "tab-sam-aaaa")) is not None:
            assert lease["item_id"] != skipped
            store.add_label(lease["item_id"], "sam", 1)
            store.end_lease(sam, "chunk", "tab-sam-aaaa")
        store.hold_item(sam, "chunk", "tab-sam-aaaa", skipped, revisit=False)
        assert store.label_refusal(sam, "chunk", "tab-sam-aaaa", skipped) == "closed"
        labellers = store.db.execute(
            "SELECT count(DISTINCT annotator_id) FROM labels WHERE item_id = ?", [skipped]
        ).fetchone()[0]
        assert labellers == 2


def _tab_on(server: str, session: str, alive: set[str]) -> TabSession:
    return TabSession(server, session, lambda other: other in alive)


def test_a_closed_tab_gives_its_item_back_at_once(demo_db) -> None:
    """#43: an item stayed leased to a closed tab for DENOMINATOR_LEASE_MINUTES (5), so the
    person's next tab was handed another item and "nothing left" came early. Now a lease records
    its tab's connection (server and session); the next lease on that server gives back the items
    of connections that have closed. A reload (a new connection, the same tab) keeps its item;
    another server's leases are left to lapse (this one cannot see its connections)."""
    with Store(demo_db) as store:
        sam = store.annotator_id("sam")
        first = store.lease_item(sam, "chunk", "tab-one-aaaa", tab=_tab_on("srv1", "s-1", {"s-1"}))
        # tab one is closed: the next tab of sam on the same server is handed tab one's item
        nxt = store.lease_item(sam, "chunk", "tab-two-bbbb", tab=_tab_on("srv1", "s-2", {"s-2"}))
        assert nxt["item_id"] == first["item_id"]
        assert (
            store.db.execute("SELECT count(*) FROM leases WHERE holder = 'tab-one-aaaa'").fetchone()[0] == 0
        )
        # a reload of tab two: a new connection, the old one closed; the same item
        again = store.lease_item(sam, "chunk", "tab-two-bbbb", tab=_tab_on("srv1", "s-3", {"s-3"}))
        assert again["item_id"] == first["item_id"]
        assert (
            store.db.execute("SELECT session FROM leases WHERE holder = 'tab-two-bbbb'").fetchone()[0]
            == "srv1 s-3"
        )
        # an open tab keeps its item; a tab of another server is not given back by this one
        third = store.lease_item(sam, "chunk", "tab-six-cccc", tab=_tab_on("srv2", "s-9", set()))
        fourth = store.lease_item(sam, "chunk", "tab-ten-dddd", tab=_tab_on("srv1", "s-4", {"s-3", "s-4"}))
        assert len({again["item_id"], third["item_id"], fourth["item_id"]}) == 3


def test_nothing_left_says_what_waits_on_other_screens(demo_db) -> None:
    """#43: "Nothing left to label" showed while items sat leased to the person's own other tab
    or to other people's idle tabs, unexplained. Store side: what waits and when it comes back."""
    with Store(demo_db) as store:
        sam, kim, lee = (store.annotator_id(n) for n in ("sam", "kim", "lee"))
        other_tab = store.lease_item(sam, "chunk", "tab-sam-aaaa")["item_id"]
        both = store.lease_item(kim, "chunk", "tab-kim-aaaa")["item_id"]
        if both == other_tab:  # kim's and sam's orders start alike: kim takes his next
            store.end_lease(kim, "chunk", "tab-kim-aaaa")
            both = store.lease_item(kim, "chunk", "tab-kim-bbbb")["item_id"]
        store.hold_item(lee, "chunk", "tab-lee-aaaa", both, revisit=False)  # kim and lee: its 2 places
        labelled = 0
        while (lease := store.lease_item(sam, "chunk", "tab-sam-bbbb")) is not None:
            store.add_label(lease["item_id"], "sam", 1)
            store.end_lease(sam, "chunk", "tab-sam-bbbb")
            labelled += 1
        assert labelled == 18  # of his 20 open items: one on his other tab, one on kim's and lee's
        waiting = store.waiting(sam, "chunk", "tab-sam-bbbb")
        assert (waiting.own_tabs, waiting.others) == (1, 1)
        assert waiting.first_back is not None and waiting.first_back <= waiting.last_back


def test_the_page_says_why_nothing_is_handed_out_and_when_it_comes_back(demo_db) -> None:
    """#43: the page said "Nothing left to label" while an item sat on the person's other tab."""
    with Store(demo_db) as store:
        sam = store.annotator_id("sam")
        order = _open_order(store, sam)
        store.lease_item(sam, "chunk", "tab-sam-other")  # his other tab: the first of his order
        for item in order[1:]:
            store.add_label(item, "sam", 1)
    at = page_test("denominator.ui.label.render_label_chunks_page", state={"label:annotator": "sam"}).run()
    text = page_text(at)
    assert "Nothing left to label" not in text
    assert (
        "Nothing to hand you right now (19 of 20 done): 1 item is open on other screens (1 on another "
        "tab of yours). They come back as soon as they are skipped there or their tab is closed; if "
        "those tabs stay idle, at " in text
    )
    assert "UTC (in about 5 min)." in text


def test_the_progress_total_is_fixed_for_a_batch(demo_db) -> None:
    """#43: the total moved while one worked (1 / 38, later 13 / 34): other people closing open
    items took them out of it. Now a batch's total is the person's queue when it began; items
    others close count as done (closed), and a new batch begins only when the queue gains items."""
    with Store(demo_db) as store:
        sam = store.annotator_id("sam")
        for name in ("tom", "una"):
            store.annotator_id(name)
        assert store.batch_progress(sam, "chunk") == (0, 20, 0, 0)
        order = _open_order(store, sam)
        store.add_label(order[0], "sam", 1)
        assert store.batch_progress(sam, "chunk") == (1, 20, 1, 0)
        for item in order[1:4]:  # tom and una close three of sam's items
            store.add_label(item, "tom", 2)
            store.add_label(item, "una", 2)
        assert store.queue_progress(sam, "chunk") == (1, 17)  # the queue shrank ...
        assert store.batch_progress(sam, "chunk") == (4, 20, 1, 3)  # ... the batch did not
    at = page_test("denominator.ui.label.render_label_chunks_page", state={"label:annotator": "sam"}).run()
    assert "4 / 20 in this batch done: 1 labelled by sam, 3 closed by other people's labels" in page_text(at)
    with Store(demo_db) as store:  # a new item (a later pool): a new batch, the queue as it stands
        sam = store.annotator_id("sam")
        store.add_chunk_item("q_broad", "d2", "later", 1)
        assert store.batch_progress(sam, "chunk") == (1, 18, 1, 0)


class _Undo(Exception):
    """Raised inside a write to roll it back."""


def _lease_in(store: Store, sam: int, holder: str, tab: TabSession, ended: bool) -> tuple[object, list]:
    """``lease_item`` after the tab's lease ended in the same write, then the write rolled back:
    what it returned and the leases it left, without keeping them."""
    got: list = []
    try:
        with store.write():
            store.end_lease(sam, "chunk", holder)
            got.append(store.lease_item(sam, "chunk", holder, ended=ended, tab=tab))
            got.append(
                sorted(store.db.execute("SELECT annotator_id, holder, item_id FROM leases").fetchall())
            )
            raise _Undo
    except _Undo:
        pass
    return got[0], got[1]


def test_a_key_press_lease_reads_at_once_what_a_lease_reads_in_turn(demo_db) -> None:
    """#42: after a label or a skip (``ended``), the lease's reads go together (one round trip on
    PostgreSQL) and give what the reads made one by one give. The next items in sam's order are
    made to need each read: the first is on another of sam's tabs, the second closed by others (ann
    labelled it and bob's screen shows it: the two labels an item wants), the third on a tab of
    sam's that has closed on this server (given back: the answer), the fourth the answer if that
    tab were not seen closed; two items are skipped."""
    with Store(demo_db) as store:
        sam, bob = store.annotator_id("sam"), store.annotator_id("bob")
        here = _tab_on("srv1", "s-1", {"s-1", "s-2", "s-3"})  # sam's three tabs, open on srv1
        skipped = []
        for _ in range(2):
            item = store.lease_item(sam, "chunk", "tab-aaaa", tab=here)
            store.skip_item(sam, "chunk", "tab-aaaa", item["item_id"])
            skipped.append(item["item_id"])
        pressed = store.lease_item(sam, "chunk", "tab-aaaa", tab=here)
        store.add_label(pressed["item_id"], "sam", 1)  # the press's label
        after: list[int] = []
        for _ in range(4):  # sam's next four items, the label made
            nxt = store.next_unlabelled_item(sam, "chunk", sorted({*skipped, *after, pressed["item_id"]}))
            assert nxt is not None
            after.append(nxt)
        first, second, third, fourth = after
        store.hold_item(sam, "chunk", "tab-bbbb", first, revisit=False, tab=here._replace(session="s-2"))
        store.add_label(second, "ann", 2)
        store.hold_item(bob, "chunk", "tab-dddd", second, revisit=False, tab=_tab_on("srv2", "b-1", {"b-1"}))
        store.hold_item(sam, "chunk", "tab-cccc", third, revisit=False, tab=here._replace(session="s-3"))
        closed = _tab_on("srv1", "s-1", {"s-1", "s-2"})  # tab-cccc (s-3) has closed
        at_once = _lease_in(store, sam, "tab-aaaa", closed, ended=True)
        assert at_once == _lease_in(store, sam, "tab-aaaa", closed, ended=False)
        item, leases = at_once
        assert item == {"item_id": third, "from_skips": False, "skips_left": 2}
        assert [row[1:] for row in leases if row[0] == sam] == [("tab-aaaa", third), ("tab-bbbb", first)]
        assert (bob, "tab-dddd", second) in leases
        # the same press with tab-cccc still open: its item stays its own, the next is the fourth
        still = _lease_in(store, sam, "tab-aaaa", here, ended=True)
        assert still == _lease_in(store, sam, "tab-aaaa", here, ended=False)
        assert still[0]["item_id"] == fourth and (sam, "tab-cccc", third) in still[1]


def test_a_write_reads_a_queue_rule_once_and_again_after_an_assignment_or_a_handout(demo_db) -> None:
    """#42: a key press's write reads the person's queue rule once (the label's check, then the
    next lease); an assignment or a new handout in the same write makes it read again."""
    with Store(demo_db) as store:
        sam = store.annotator_id("sam")
        item = store.next_unlabelled_item(sam, "chunk")
        assert item is not None
        sent: list[str] = []
        real = store.db.execute

        def counted(sql, *args):
            sent.append(sql)
            return real(sql, *args)

        store.db.execute = counted  # type: ignore[method-assign]
        try:
            with store.write():
                before = store.queue_rule(sam, "chunk")
                assert store.queue_rule(sam, "chunk") == before
                reads = sum("FROM handout" in sql for sql in sent)
                assert reads == 1
                store.assign(item, sam, 0)
                assert store.queue_rule(sam, "chunk") == before._replace(assigned=True)
                store.set_handout("assigned", 2, "kim")
                assert store.queue_rule(sam, "chunk").mode == "assigned"
                assert sum("FROM handout" in sql for sql in sent) == 3
                raise _Undo
        except _Undo:
            pass
        finally:
            store.db.execute = real  # type: ignore[method-assign]
        assert store.queue_rule(sam, "chunk") == before  # outside a write: read each time
