"""#43's acceptance, as a team in a real browser (one browser context per person, one server):

1. an admin adds two people on the People page and copies their sign-in links;
2. they sign in and label at once, from the keyboard, in open mode, each in an order of their own
   (each is handed first the first item of their own order; the two orders differ);
3. a third person, added later on the same page, gets work; when all that is left for them is an
   item on another person's screen (its last place), that person closes their tab and the item is
   the third person's at once (a "Look again", not the 5 minutes of a lease);
4. the Agreement page shows the first two people's kappa, equal to scikit-learn's over the grades
   this test pressed, and lists exactly the items they disagree on, with both grades;
5. a reviewer (the admin) corrects one label on Review labels, and ``annotation export`` carries
   the corrected grade (the person's label is still there: a new row, never an overwrite).

The queue: 2 queries x 4 chunks, pooled with no one named (8 open items, 2 people's labels each).
Each person's grade of a chunk follows from its number, so the test knows every grade it pressed.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from annotation.store import Store
from tests.conftest import (
    CHROMIUM_ARGS,
    CONTENT_TIMEOUT_MS,
    ROOT,
    main_pane,
    open_sign_in_link,
    running_app,
    wait_for_script_run,
    wait_until,
)

pytestmark = pytest.mark.slow  # a real server, a real browser

CHUNKS = 8
ITEM = re.compile(r"^Query\s+question number \d+\s+Chunk\s+chunk number (\d+) about crops and soils\s*$")
LINK = re.compile(r"^http://127\.0\.0\.1:\d+/\?token=\S+$")


def grade(person: str, chunk: int) -> int:
    """What ``person`` gives chunk ``chunk``: bob differs from ann on odd chunks, so any 5 of the 8
    chunks hold an agreement and a disagreement, and ann's grades vary (kappa is defined)."""
    if person == "bob" and chunk % 2:
        return (chunk + 1) % 4
    return chunk % 4


def small_open_queue(folder: Path, db: str) -> None:
    corpus, queries, run = folder / "corpus.jsonl", folder / "queries.jsonl", folder / "run.jsonl"
    corpus.write_text(
        "".join(
            json.dumps({"id": f"c{c}", "text": f"chunk number {c} about crops and soils"}) + "\n"
            for c in range(CHUNKS)
        )
    )
    queries.write_text(
        "".join(json.dumps({"id": f"q{q}", "text": f"question number {q}"}) + "\n" for q in range(2))
    )
    run.write_text(
        "".join(
            json.dumps({"query_id": f"q{q}", "ranking": [f"c{q * 4 + i}" for i in range(4)]}) + "\n"
            for q in range(2)
        )
    )
    for argv in (
        [
            "import",
            "--db",
            db,
            "--corpus",
            str(corpus),
            "--queries",
            str(queries),
            "--run",
            str(run),
            "--name",
            "r",
        ],
        # seed 2: the two people's orders begin on other items (8 items: two orders of one's own
        # begin alike about 1 time in 8; under seed 0 ann's and bob's both begin on chunk 1)
        ["pool", "--db", db, "--depth", "4", "--seed", "2"],
    ):
        subprocess.run([sys.executable, "-m", "annotation", *argv], cwd=ROOT, check=True, capture_output=True)


def on_screen(page) -> int:
    """The chunk number of the item on the page, once drawn in full."""
    from playwright.sync_api import expect

    item = page.locator(".st-key-item-chunk")
    expect(item).to_have_text(ITEM, use_inner_text=True, timeout=CONTENT_TIMEOUT_MS)
    # read-after-wait: the item drawn in full just above; its number is compared across people's pages
    found = ITEM.match(item.inner_text())
    assert found is not None
    return int(found.group(1))


def press(page, key: str, then: str) -> None:
    """Press ``key`` on the page (after its script run ended), and wait for ``then`` and the run's end.

    A press that lands before the page's shortcuts are bound is lost (the server never hears of
    it): seen on a person's first press right after signing in, 3 runs in 4 once the item's texts
    were drawn faster (``st.text``), none with a 0.7 s pause before the press. So it is pressed
    again, at most twice more, only when the run has ended and ``then`` has still not appeared
    (as tests/e2e/test_mark_evidence_browser.py does for its ``e``)."""
    from playwright.sync_api import expect

    for attempt in range(3):
        wait_for_script_run(page)
        page.bring_to_front()
        page.mouse.click(650, 30)  # focus the page, not an input
        page.keyboard.press(key)
        try:
            expect(main_pane(page).get_by_text(then).first).to_be_visible(
                timeout=10_000 if attempt < 2 else CONTENT_TIMEOUT_MS
            )
            break
        except AssertionError:
            if attempt == 2:
                raise
            wait_for_script_run(page)
            if main_pane(page).get_by_text(then).count():  # it came, late: no second press
                break
    wait_for_script_run(page)


def label(page, person: str, done: int, pressed: dict[str, dict[int, int]]) -> None:
    """``person`` grades the item on screen (their ``done + 1``-th label)."""
    chunk = on_screen(page)
    pressed[person][chunk] = grade(person, chunk)
    press(page, str(grade(person, chunk)), f"{done + 1} / {CHUNKS} in this batch")


def add_person(page, name: str) -> str:
    """Add ``name`` (annotator, a sign-in link) on the People page; the link it shows once."""
    from playwright.sync_api import expect

    main = main_pane(page)
    wait_for_script_run(page)
    main.get_by_label("name (as their labels will carry it)").fill(name)
    main.get_by_role("button", name="Add").click()
    expect(main.get_by_text(f"Sign-in link for {name}, shown this once")).to_be_visible(
        timeout=CONTENT_TIMEOUT_MS
    )
    code = main.get_by_test_id("stCode").first
    expect(code).to_have_text(LINK, timeout=CONTENT_TIMEOUT_MS)
    # read-after-wait: the link drawn just above (its form expected); it is opened on another person's page
    link = code.inner_text().strip()
    assert LINK.match(link), link
    wait_for_script_run(page)
    return link


def choose(page, label: str, option: str) -> None:
    """Pick ``option`` in the select box labelled ``label`` (typed into its search, as a person may)."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout
    from playwright.sync_api import expect

    box = main_pane(page).get_by_test_id("stSelectbox").filter(has_text=label).get_by_role("combobox")
    wait_for_script_run(page)
    for attempt in range(3):  # a rerun still drawing the page may close the list: opened again
        if box.input_value() == option:
            break
        box.click()
        page.keyboard.type(option)
        try:
            page.get_by_role("option", name=option, exact=True).click(timeout=10_000)
        except PlaywrightTimeout:
            if attempt == 2:
                raise
            page.keyboard.press("Escape")
            wait_for_script_run(page)
    expect(box).to_have_value(option, timeout=CONTENT_TIMEOUT_MS)
    wait_for_script_run(page)


def grid_rows(frame) -> list[list[str]]:
    """An st.dataframe's rows as cell texts (its grid is drawn on a canvas; its accessible table
    holds the cells)."""
    rows = []
    for row in frame.locator("table tr").all():
        # (each caller expects the grid's table drawn first; its figures are compared with
        # scikit-learn's kappa and the grades pressed on other pages: a number to a tolerance)
        # read-after-wait: the grid's table expected drawn by each caller just before
        rows.append([cell.inner_text().strip() for cell in row.locator("th, td").all()])
    return rows


def order_of(db: str, person: str) -> list[int]:
    """The chunk numbers of the open items in ``person``'s own order, read from the store."""
    with Store(db) as store:
        annotator = store.annotator_id(person)
        order: list[int] = []
        while (item := store.next_unlabelled_item(annotator, "chunk", order)) is not None:
            order.append(item)
        chunk_of = {i: int(c[1:]) for i, c in store.db.execute("SELECT id, chunk_id FROM items").fetchall()}
    return [chunk_of[i] for i in order]


def exported_grades(db: str, folder: Path) -> dict[int, int]:
    out = folder / "qrels.txt"
    subprocess.run(
        [sys.executable, "-m", "annotation", "export", "--db", db, "--format", "qrels", "-o", str(out)],
        cwd=ROOT,
        check=True,
        capture_output=True,
    )
    return {int(line.split()[2][1:]): int(line.split()[3]) for line in out.read_text().splitlines()}


def test_a_team_labels_agrees_and_is_reviewed(chromium, tmp_path) -> None:
    from playwright.sync_api import expect, sync_playwright
    from sklearn.metrics import cohen_kappa_score

    db = str(tmp_path / "team.db")
    small_open_queue(tmp_path, db)
    with Store(db) as store:
        admin_token = store.add_annotator("lee", "admin")
    pressed: dict[str, dict[int, int]] = {"ann": {}, "bob": {}, "carl": {}}
    with running_app(db) as url, sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(chromium), args=CHROMIUM_ARGS)
        try:

            def person_page():
                return browser.new_context(viewport={"width": 1300, "height": 1000}).new_page()

            # 1. the admin adds two people on the People page and copies their links
            admin = person_page()
            open_sign_in_link(admin, f"{url}/people?token={admin_token}")
            expect(main_pane(admin).get_by_text("Add a person")).to_be_visible(timeout=CONTENT_TIMEOUT_MS)
            links = {name: add_person(admin, name) for name in ("ann", "bob")}

            # 2. they sign in and label at once, each in their own order
            pages = {}
            for name in ("ann", "bob"):
                page = person_page()
                open_sign_in_link(page, links[name])
                expect(
                    main_pane(page).get_by_text(f"0 / {CHUNKS} in this batch labelled by {name}")
                ).to_be_visible(timeout=CONTENT_TIMEOUT_MS)
                pages[name] = page
            orders = {name: order_of(db, name) for name in ("ann", "bob")}
            assert orders["ann"] != orders["bob"]  # an order of one's own
            firsts = {name: on_screen(pages[name]) for name in ("ann", "bob")}
            assert firsts == {name: orders[name][0] for name in ("ann", "bob")}, orders
            assert firsts["ann"] != firsts["bob"]
            for done in range(5):  # in alternation: ann, bob, ann, bob ...
                label(pages["ann"], "ann", done, pressed)
                label(pages["bob"], "bob", done, pressed)
            for done in range(5, CHUNKS):  # ann labels every item; bob keeps his sixth on screen
                label(pages["ann"], "ann", done, pressed)
            expect(
                main_pane(pages["ann"]).get_by_text(f"Nothing left to label: {CHUNKS} of {CHUNKS} done")
            ).to_be_visible(timeout=CONTENT_TIMEOUT_MS)
            held = on_screen(pages["bob"])  # ann labelled it: bob's tab holds its last place
            assert held in pressed["ann"] and held not in pressed["bob"]
            # each was handed the items in their own order (no item closed meanwhile: each needs both)
            assert list(pressed["ann"]) == orders["ann"]
            assert [*pressed["bob"], held] == orders["bob"][:6]

            # 3. a third person added later gets work: the items only ann labelled, bob's held one last
            links["carl"] = add_person(admin, "carl")
            carl = person_page()
            open_sign_in_link(carl, links["carl"])
            open_to_carl = set(range(CHUNKS)) - set(pressed["bob"])
            assert len(open_to_carl) == 3
            for done in range(2):
                chunk = on_screen(carl)
                assert chunk in open_to_carl - {held}
                pressed["carl"][chunk] = grade("carl", chunk)
                press(carl, str(grade("carl", chunk)), f"{done + 1} / ")
            expect(main_pane(carl).get_by_text("1 item is open on other screens")).to_be_visible(
                timeout=CONTENT_TIMEOUT_MS
            )
            pages["bob"].context.close()  # bob closes his tab: its item is carl's at once

            def handed_over() -> bool:
                from playwright.sync_api import TimeoutError as PlaywrightTimeout

                wait_for_script_run(carl)
                if main_pane(carl).locator(".st-key-item-chunk").count():
                    return True
                try:  # the page may rerun on its own meanwhile: "Look again" then leaves the DOM
                    main_pane(carl).get_by_role("button", name="Look again").click(timeout=3_000)
                except PlaywrightTimeout:
                    return False
                wait_for_script_run(carl)
                return main_pane(carl).locator(".st-key-item-chunk").count() > 0

            wait_until(handed_over, "bob's item handed to carl", 15)
            assert on_screen(carl) == held
            pressed["carl"][held] = grade("carl", held)
            press(carl, str(grade("carl", held)), "Nothing left to label")

            # 4. the Agreement page: ann and bob's kappa, and the items they disagree on
            shared = sorted(pressed["bob"])
            kappa = cohen_kappa_score(
                [pressed["ann"][c] for c in shared], [pressed["bob"][c] for c in shared]
            )
            disagreed = {c for c in shared if pressed["ann"][c] != pressed["bob"][c]}
            assert 0 < len(disagreed) < len(shared)
            admin.goto(f"{url}/agreement")
            main = main_pane(admin)
            expect(main.get_by_text("Each pair of people", exact=True)).to_be_visible(
                timeout=CONTENT_TIMEOUT_MS
            )
            wait_for_script_run(admin)
            pairs = main.get_by_test_id("stDataFrame").first
            expect(pairs.locator("table")).to_contain_text("ann and bob", timeout=CONTENT_TIMEOUT_MS)
            header, *rows = grid_rows(pairs)
            row = dict(zip(header, next(r for r in rows if "ann and bob" in r)))
            assert row["items both labelled"] == str(len(shared))
            assert row["disagree"] == f"{len(disagreed)} / {len(shared)}"
            assert float(row["kappa"]) == pytest.approx(kappa, abs=5e-4)
            choose(
                admin,
                "pair of people",
                f"ann and bob: {len(disagreed)} item{'s' if len(disagreed) > 1 else ''}",
            )
            listed = main.get_by_test_id("stDataFrame").nth(1)
            expect(listed.locator("table")).to_contain_text("chunk number", timeout=CONTENT_TIMEOUT_MS)
            header, *rows = grid_rows(listed)
            shown = [dict(zip(header, r)) for r in rows]
            chunks = {int(re.search(r"chunk number (\d+)", r["shown"]).group(1)): r for r in shown}
            assert set(chunks) == disagreed
            for chunk, r in chunks.items():
                assert (int(r["ann"]), int(r["bob"])) == (pressed["ann"][chunk], pressed["bob"][chunk])

            # 5. the admin reviews bob's labels and corrects the first one
            before = exported_grades(db, tmp_path)
            with Store(db) as store:
                first = store.labels_to_review("bob", "chunk")[0]
                chunk = int(store.item_detail(first["item_id"])["chunk_id"][1:])
            assert first["value"] == pressed["bob"][chunk]
            correction = next(g for g in range(4) if g not in (pressed["ann"][chunk], pressed["bob"][chunk]))
            assert before[chunk] == min(
                pressed["ann"][chunk], pressed["bob"][chunk]
            )  # the lower middle of two
            admin.goto(f"{url}/review-labels")
            expect(main.get_by_text("whose labels")).to_be_visible(timeout=CONTENT_TIMEOUT_MS)
            wait_for_script_run(admin)
            choose(admin, "whose labels", "bob")
            expect(main.get_by_text(f"bob said {pressed['bob'][chunk]}")).to_be_visible(
                timeout=CONTENT_TIMEOUT_MS
            )
            expect(main.get_by_text(f"0 / {len(shared)} of bob's labels reviewed")).to_be_visible()
            press(admin, str(correction), f"1 / {len(shared)} of bob's labels reviewed")
        finally:
            browser.close()
    after = exported_grades(db, tmp_path)
    assert after[chunk] == correction
    assert {c: g for c, g in after.items() if c != chunk} == {c: g for c, g in before.items() if c != chunk}
    with Store(db) as store:  # bob's label is still his: the correction is the reviewer's own row
        rows = store.db.execute(
            """SELECT a.name, l.value FROM labels l JOIN annotators a ON a.id = l.annotator_id
               WHERE l.item_id = ? ORDER BY l.id""",
            [first["item_id"]],
        ).fetchall()
    assert sorted(rows) == sorted(
        [("ann", pressed["ann"][chunk]), ("bob", pressed["bob"][chunk]), ("lee", correction)]
        + ([("carl", pressed["carl"][chunk])] if chunk in pressed["carl"] else [])
    )
