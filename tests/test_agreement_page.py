"""Agreement between people (issue #43, item 5): the Agreement page, ``agree --db`` and ``agree`` on
``annotation export --format csv`` give the same figures (one action); each pair's kappa is
scikit-learn's on the items both labelled; the items a pair disagrees on are listed with both
grades, and one button opens exactly them on the Items page, where an admin settles them.

A store built by hand, on both backends: six queries of four chunks (24 items); ann and bob label
all 24, cat the first 12 (queries q1-q3). Their grades (a chunk's index in its query i = 0..3):

    ann: i           (0, 1, 2, 3 in every query)
    bob: ann's, but 3 where ann said 2 in q1, q2 and q5 (3 disagreements)
    cat: ann's, but 0 where ann said 1 (q1-q3: 3 disagreements with ann and with bob)
"""

from __future__ import annotations

import subprocess
import sys

import pytest
from sklearn.metrics import cohen_kappa_score

from annotation.exports.label_files import export_csv
from annotation.store import Store
from calibration import actions
from calibration.policy.rules import DEFAULT_POLICY
from tests.conftest import page_test, page_text

PAGE = "denominator.ui.agreement.render_agreement_page"
QUERIES = [f"q{n}" for n in range(1, 7)]


def grade(person: str, query: str, i: int) -> int | None:
    """The module docstring's grades (None: not labelled)."""
    if person == "ann":
        return i
    if person == "bob":
        return 3 if i == 2 and query in ("q1", "q2", "q5") else i
    if query not in ("q1", "q2", "q3"):
        return None
    return 0 if i == 1 else i


def build(db) -> dict[tuple[str, int], int]:
    with Store(db) as store:
        store.import_queries({q: f"question {q}" for q in QUERIES})
        store.import_corpus(
            [{"id": f"{q}-c{i}", "text": f"chunk {i} of {q}"} for q in QUERIES for i in range(4)]
        )
        items = {
            (q, i): store.ensure_item("chunk", query_id=q, chunk_id=f"{q}-c{i}")
            for q in QUERIES
            for i in range(4)
        }
        for name in ("ann", "bob", "cat"):
            store.annotator_id(name)
        store.annotator_id("root", role="admin")
        for person in ("ann", "bob", "cat"):
            for (q, i), item in items.items():
                value = grade(person, q, i)
                if value is not None:
                    store.add_label(item, person, value)
        # a correction and a retraction: only the newest label of each person counts
        store.add_label(items[("q6", 0)], "bob", 1)
        store.add_label(items[("q6", 0)], "bob", 0)
        store.add_label(items[("q6", 3)], "ann", 2)
        store.undo(items[("q6", 3)], "ann")
        store.add_label(items[("q6", 3)], "ann", 3)
    return items


@pytest.fixture
def hand(db_at, monkeypatch):
    items = build(db_at)
    monkeypatch.setenv("DENOMINATOR_DB", str(db_at))
    return db_at, items


def pair_of(report, first: str, second: str):
    found = [p for p in report["pairs"] if sorted(map(str, p["raters"])) == sorted([first, second])]
    assert len(found) == 1, report["pairs"]
    return found[0]


def test_the_store_export_and_scikit_learn_agree(hand, tmp_path) -> None:
    db, items = hand
    with Store(db) as store:
        report = actions.agree(policy=DEFAULT_POLICY, store=store)
        export_csv(store, tmp_path / "labels.csv")
    from_file = actions.agree(tmp_path / "labels.csv", policy=DEFAULT_POLICY)
    assert report["raters"] == ["ann", "bob", "cat"] and report["n_items"] == 24
    assert report["n_ratings"] == 24 + 24 + 12
    for first, second, n in (("ann", "bob", 24), ("ann", "cat", 12), ("bob", "cat", 12)):
        pair = pair_of(report, first, second)
        same = pair_of(from_file, first, second)
        assert pair["n"] == n
        for key in ("kappa", "kappa_ci", "kappa_linear", "kappa_quadratic", "verdict", "observed_agreement"):
            assert pair[key] == same[key], (first, second, key)
        queries = QUERIES if n == 24 else QUERIES[:3]
        a = [grade(first, q, i) for q in queries for i in range(4)]
        b = [grade(second, q, i) for q in queries for i in range(4)]
        assert pair["kappa"] == pytest.approx(cohen_kappa_score(a, b), abs=1e-12)
        assert pair["kappa_quadratic"] == pytest.approx(
            cohen_kappa_score(a, b, weights="quadratic"), abs=1e-12
        )
        assert pair["design"]["queries"] == len(queries)  # clustered by query
    ann_bob = pair_of(report, "ann", "bob")
    assert ann_bob["observed_agreement"] == pytest.approx(21 / 24)
    assert ann_bob["kappa_ci"] is not None and ann_bob["verdict"] in ("trusted", "undecided", "not trusted")
    # 3 queries: no verdict (the policy asks 5), the reason said
    assert pair_of(report, "ann", "cat")["verdict"] == "uncalibrated"


def test_disagreements_of_one_pair(hand) -> None:
    db, items = hand
    with Store(db) as store:
        rows = store.browse_items(rubric="relevance", between=("ann", "bob"))
        assert [r["item_id"] for r in rows] == [items[(q, 2)] for q in ("q1", "q2", "q5")]
        assert [(r["people"]["ann"], r["people"]["bob"]) for r in rows] == [(2, 3)] * 3
        cat = store.browse_items(rubric="relevance", between=("bob", "cat"))
        assert [r["item_id"] for r in cat] == sorted(
            [items[(q, 1)] for q in ("q1", "q2", "q3")] + [items[(q, 2)] for q in ("q1", "q2")]
        )
        with pytest.raises(Exception, match="no annotator named 'zed'"):
            store.browse_items(between=("ann", "zed"))
        with pytest.raises(Exception, match="two different people"):
            store.browse_items(between=("ann", "ann"))


def test_the_page_shows_the_pairs_and_sends_disagreements_to_settle(hand) -> None:
    db, items = hand
    with Store(db) as store:
        root = store.add_annotator("root", "admin")
        report = actions.agree(policy=DEFAULT_POLICY, store=store)
    at = page_test(PAGE, state={"access:token": root}, timeout=60).run()
    assert not at.exception, [e.value for e in at.exception]
    table = at.dataframe[0].value
    rows = {r["people"]: r for r in table.to_dict("records")}
    assert set(rows) == {"ann and bob", "ann and cat", "bob and cat"}
    assert rows["ann and bob"]["same grade"] == "21 / 24" and rows["ann and bob"]["disagree"] == "3 / 24"
    assert rows["bob and cat"]["disagree"] == "5 / 12"
    kappa = pair_of(report, "ann", "bob")["kappa"]
    assert rows["ann and bob"]["kappa"] == f"{kappa:.3f}"
    assert rows["ann and cat"]["95% CI"].startswith("none: ")  # 3 queries: no interval for a verdict
    assert "6 queries, 24 items, 3 people" in rows["ann and bob"]["design"]
    assert "24 items labelled by 3 people (60 current labels)" in page_text(at)

    at.selectbox(key="agreement:pair").set_value(("bob", "cat")).run()
    shown = at.dataframe[1].value
    assert sorted(shown["item"].tolist()) == sorted(
        [items[(q, 1)] for q in ("q1", "q2", "q3")] + [items[(q, 2)] for q in ("q1", "q2")]
    )
    assert set(zip(shown["bob"], shown["cat"])) == {(1, 0), (3, 2)}
    at.button(key="agreement:open").click().run()
    assert not at.exception, [e.value for e in at.exception]
    handed = at.session_state["browse:handed"]  # AppTest has no navigation to switch to
    assert handed["between"] == ("bob", "cat") and handed["rubric"] == "relevance"

    items_page = page_test(
        "denominator.ui.browse.render_items_page", state={"access:token": root}, timeout=60
    )
    items_page.session_state["browse:handed"] = handed
    items_page.run()
    assert not items_page.exception, [e.value for e in items_page.exception]
    assert "5 items match" in page_text(items_page)
    assert sorted(items_page.dataframe[0].value["item"].tolist()) == sorted(shown["item"].tolist())


def test_a_pair_choice_is_read_as_the_candidate_it_names(db_at, tmp_path) -> None:
    """ann chose A shown first, bob chose A shown second: they agree, in the store and in the export."""
    with Store(db_at) as store:
        store.import_queries({"q1": "question"})
        store.import_traces(
            [
                {"id": t, "query_id": "q1", "system": t, "question": "q?", "contexts": [], "answer": t}
                for t in ("t1", "t2", "t3")
            ]
        )
        first = store.ensure_item("pair", query_id="q1", trace_id="t1", trace_b_id="t2")
        second = store.ensure_item("pair", query_id="q1", trace_id="t2", trace_b_id="t3")
        for name in ("ann", "bob"):
            store.annotator_id(name)
        store.add_label(first, "ann", 0, "preference", shown="AB")
        store.add_label(first, "bob", 1, "preference", shown="BA")
        store.add_label(second, "ann", 1, "preference", shown="AB")
        store.add_label(second, "bob", 1, "preference", shown="AB")
        report = actions.agree(policy=DEFAULT_POLICY, store=store, rubric="preference")
        export_csv(store, tmp_path / "labels.csv")
    from_file = actions.agree(tmp_path / "labels.csv", policy=DEFAULT_POLICY, rubric="preference")
    for r in (report, from_file):
        assert r["pairs"][0]["n"] == 2 and r["pairs"][0]["observed_agreement"] == 1.0


def test_agree_db_on_the_command_line(hand) -> None:
    db, _ = hand
    run = subprocess.run(
        [sys.executable, "-m", "calibration", "agree", "--db", str(db), "--format", "json"],
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stderr
    assert '"n_items": 24' in run.stdout
    both = subprocess.run(
        [sys.executable, "-m", "calibration", "agree", "x.csv", "--db", str(db)],
        capture_output=True,
        text=True,
    )
    assert both.returncode == 2 and both.stderr.strip().endswith(
        "give LABELS.csv, --qrels A B or --db DB (one of them)"
    )
    assert "Traceback" not in both.stderr


def test_an_undefined_kappa_reads_undefined_on_the_page(hand) -> None:
    """A page says "undefined" (annotation.render: ``undef`` is the CLIs' aligned tables' word); the
    Agreement page's table and heatmap said "undef" (#43, item 9). dee and ann both gave 0 to the
    two items both labelled: one grade only, kappa undefined."""
    db, items = hand
    with Store(db) as store:
        root = store.add_annotator("root", "admin")
        store.annotator_id("dee")
        for q in ("q1", "q2"):
            store.add_label(items[(q, 0)], "dee", 0)
    at = page_test(PAGE, state={"access:token": root}, timeout=60).run()
    assert not at.exception, [e.value for e in at.exception]
    rows = {r["people"]: r for r in at.dataframe[0].value.to_dict("records")}
    assert rows["ann and dee"]["kappa"] == "undefined"
    assert not [r for r in rows.values() if "undef" in r["kappa"] and r["kappa"] != "undefined"]


def test_one_person_only_reads_nothing_to_compare(db_at, monkeypatch) -> None:
    """ann alone labelled 3 items: the page says there is nothing to compare (agree's exit 2, the
    same action), not an error; the summary of three people gives alpha's items."""
    with Store(db_at) as store:
        store.import_queries({"q1": "question"})
        store.import_corpus([{"id": f"c{i}", "text": f"chunk {i}"} for i in range(3)])
        store.annotator_id("ann")
        root = store.add_annotator("root", "admin")
        for i in range(3):
            store.add_label(store.ensure_item("chunk", query_id="q1", chunk_id=f"c{i}"), "ann", i)
    monkeypatch.setenv("DENOMINATOR_DB", str(db_at))
    at = page_test(PAGE, state={"access:token": root}, timeout=60).run()
    assert not at.exception and not at.error, [e.value for e in at.exception]
    assert len(at.info) == 1 and page_text(at).endswith(
        "Nothing to compare yet: the store's relevance labels: 3 items, one rater (ann): agreement needs "
        "two raters who rated the same items (`python -m annotation pool --overlap SHARE` gives a share of "
        "the pooled items to a second person)."
    )


def test_the_summary_says_what_each_all_people_figure_is_over(hand) -> None:
    """ann and bob labelled all 24 items, cat 12: Fleiss' kappa is undefined (items differ in their
    number of labels), Krippendorff's alpha reads the 24 items labelled by two people or more."""
    db, _ = hand
    with Store(db) as store:
        root = store.add_annotator("root", "admin")
    at = page_test(PAGE, state={"access:token": root}, timeout=60).run()
    assert "over the 24 of 24 items labelled by two people or more." in page_text(at)
