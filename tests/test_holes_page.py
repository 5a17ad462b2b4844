"""The Metrics page's Holes section (issue #30, item 5): the holes per query at k, "fill with
judge" (the offline judge grades exactly the holes), "sample to label" (a hole sample drawn,
written beside the store and queued for people) and the three figures per measure, on the
worked example and the demo store."""

from __future__ import annotations

import shutil

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from annotation.formats.by_extension import read_judgments
from annotation.formats.records import read_corpus
from annotation.options import option
from annotation.render import md, plain
from annotation.store import Store
from denominator.ui.holes import samples_folder, who_can_label
from denominator.ui.metrics_data import OWN_FILES
from tests.conftest import EXAMPLE, app_test, page_text

SAMPLED = {
    ("q_faw", "x3"),
    ("q_faw", "p1"),
    ("q_faw", "d2"),
    ("q_milk", "s2"),
    ("q_milk", "x1"),
    ("q_milk", "x3"),
}  # seed 1's sample of 2 of the worked example's 4 queries, every hole of their top 5


@pytest.fixture(autouse=True)
def no_samples_left(request):
    """A PostgreSQL store's samples go to the machine's temporary folder: removed after the test."""
    yield
    db = str(request.node.funcargs.get("demo_db", ""))
    if "://" in db:
        shutil.rmtree(samples_folder(db), ignore_errors=True)


def ok(at: AppTest) -> AppTest:
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    return at


def at_k5() -> AppTest:
    """The Metrics page on the worked example at k = 5."""
    at = app_test(timeout=120).run()
    at.number_input(key="metrics:k").set_value(5).run()
    return ok(at)


def table(at: AppTest, column: str, index: str) -> pd.DataFrame:
    found = next(t.value for t in at.table if column in t.value.columns)
    return found.map(plain).set_index(index)


def successes(at: AppTest) -> str:
    return "\n".join(plain(s.value) for s in at.success)


def test_the_holes_per_query_of_the_worked_example(demo_db) -> None:
    at = at_k5()
    holes = table(at, "holes", "query")
    assert holes.loc["q_milk", "holes"] == "s2, x1, x3"
    assert holes.loc["q_milk", "judged@5"] == "2 / 5 (0.40)"
    assert holes.loc["q_broad", "holes"] == "x1" and holes.loc["q_broad", "judged@5"] == "4 / 5 (0.80)"
    assert list(holes.index) == ["q_broad", "q_faw", "q_milk", "q_store"]
    text = page_text(at).replace("**", "")
    assert "10 of 20 positions unjudged in the top 5 of run.jsonl against golden.yaml" in text
    assert "(judged@5 0.50 = 10 / 20)" in text
    # no judge has graded them yet: the figures wait for one
    assert "No judge's grades in the store cover these 10 holes yet." in text
    assert not [t for t in at.table if "judge-filled" in t.value.columns]


def test_the_sample_widgets_read_the_options_table(demo_db) -> None:
    at = at_k5()
    size, seed = option("hole_sample"), option("holes_seed")
    n = at.number_input(key="metrics:holes:n")
    assert n.value is size.default is None  # the rule: no sample
    assert (n.min, n.max) == (size.minimum, size.maximum) == (1, 100_000)
    assert at.number_input(key="metrics:holes:seed").value == seed.default == 0
    assert at.button(key="metrics:holes:draw").disabled  # nothing to draw without a size


def test_the_sample_goes_to_people_chosen_from_the_store(demo_db) -> None:
    """#43 item 3: the page asks who labels the sample; without anyone chosen, the button waits and
    says why in one line (unassigned, its holes would go into every open queue)."""
    at = at_k5()
    people = at.multiselect(key="metrics:holes:people")
    assert people.options == ["ann", "bob", "cat", "dan"]  # the demo store's people, by name
    assert people.value == []
    at.number_input(key="metrics:holes:n").set_value(2).run()
    assert at.button(key="metrics:holes:draw").disabled  # a size, but nobody to label it
    reason = "Choose who labels the sample: without people its holes would go into every open queue."
    assert reason in [plain(c.value) for c in at.caption]
    at.multiselect(key="metrics:holes:people").set_value(["bob"]).run()
    assert not ok(at).button(key="metrics:holes:draw").disabled
    assert reason not in [plain(c.value) for c in at.caption]


def test_a_revoked_person_is_not_offered(tmp_path) -> None:
    db = str(tmp_path / "people.db")
    with Store(db) as store:
        store.add_annotator("eve", "annotator")  # a token, then revoked: no way in
        store.revoke_annotator("eve")
        store.add_annotator("fay", "annotator")
        store.add_annotator("gil", "annotator", email="gil@example.org")  # the provider's sign-in
        store.add_annotator("hal", "annotator", email="hal@example.org")
        store.revoke_annotator("hal")
        store.annotator_id("ivy")  # labels imported under a name: no way in
    assert who_can_label(db) == ["fay", "gil"]


def test_a_store_without_people_says_so(texts_only) -> None:
    at = at_k5()
    at.number_input(key="metrics:holes:n").set_value(2).run()
    assert at.multiselect(key="metrics:holes:people").options == []
    assert at.button(key="metrics:holes:draw").disabled
    assert "No one to label the sample yet: add people on the People page first." in [
        plain(c.value) for c in at.caption
    ]


def test_fill_with_judge_shows_the_judge_filled_figures(demo_db) -> None:
    at = at_k5()
    at.button(key="metrics:holes:fill").click().run()
    ok(at)
    said = successes(at)
    assert "Judge offline-lexical/relevance v1 (fitted on 20 people's labels) graded 10 holes now" in said
    figures = table(at, "judge-filled", "measure")
    assert figures.loc["P@5", "holes as not relevant"] == "0.5000 (4 of 4 queries)"
    assert figures.loc["P@5", "judge-filled"] == "0.6500 (4 of 4 queries)"
    assert figures.loc["P@5", "corrected, 95% CI"] == "(no hole sample)"
    text = page_text(at)
    assert "Judge offline-lexical/relevance graded 10 of the 10 holes (3 relevant)" in text
    # no sample: uncorrected, with the judge's one reading (#40 item 7): what review, check and
    # judge list say of it, not a second kappa on the worked example's chunks
    from calibration.readings import current_readings, reading_mark

    with Store(demo_db) as store:
        reading = next(
            j for j in current_readings(store).values() if j["name"] == "offline-lexical/relevance"
        )
    assert (
        "No hole sample: the judge-filled figures are uncorrected; the judge's reading (as review, check and "
        f"judge list give it): {reading_mark(reading)}." in text
    )
    # exactly the holes were graded: the judge's grades in the store are the 10 holes' and no more
    with Store(demo_db) as store:
        judge = next(j for j in store.judges() if j["rubric"] == "relevance")
        items = {item: (q, c) for item, q, c in store.chunk_items()}
        graded = {items[row["item_id"]] for row in store.judge_values(judge["fingerprint"])}
    golden = read_judgments(EXAMPLE / "golden.yaml")
    assert len(graded) == 10 and not any(c in golden.grades.get(q, {}) for q, c in graded)
    assert {("q_milk", "s2"), ("q_milk", "x1"), ("q_milk", "x3")} <= graded
    # the next visit reads the judge's grades from the store: no button needed
    again = at_k5()
    assert table(again, "judge-filled", "measure").loc["P@5", "judge-filled"] == "0.6500 (4 of 4 queries)"
    assert again.selectbox(key="metrics:holes:judge_set").value == "offline-lexical/relevance"


@pytest.fixture
def texts_only(backend, tmp_path, monkeypatch) -> str:
    """A store with the worked example's chunks and queries, nothing pooled or labelled yet."""
    if backend != "sqlite":
        pytest.skip("the page's folder for samples is beside a SQLite store")
    db = str(tmp_path / "texts.db")
    with Store(db) as store:
        store.import_corpus(list(read_corpus(EXAMPLE / "corpus.jsonl")))
        store.import_queries(read_judgments(EXAMPLE / "golden.yaml").texts)
    monkeypatch.setenv("DENOMINATOR_DB", db)
    return db


def draw(at: AppTest, n: int, seed: int, people: tuple[str, ...] = ("ann",)) -> AppTest:
    at.number_input(key="metrics:holes:n").set_value(n).run()
    at.number_input(key="metrics:holes:seed").set_value(seed).run()
    at.multiselect(key="metrics:holes:people").set_value(list(people)).run()
    at.button(key="metrics:holes:draw").click().run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def test_a_sample_of_two_queues_exactly_its_six_pairs(texts_only, tmp_path) -> None:
    with Store(texts_only) as store, store.write():
        for name in ("ann", "bob"):  # people without a token: the app stays in local mode
            store.annotator_id(name)
    at = draw(at_k5(), 2, 1, ("ann", "bob"))
    path = samples_folder(texts_only) / next(p.name for p in (tmp_path / "hole-samples").iterdir())
    said = successes(at)
    assert "Drawn: 2 of the 4 queries (seed 1), q_faw, q_milk, with 6 holes" in said
    with Store(texts_only) as store:
        items = {item: (q, c) for item, q, c in store.chunk_items()}
        assert set(items.values()) == SAMPLED  # the queue: exactly the 6 pairs
        assignees = store.assignees(items)
    # dealt to the two people chosen, a share of 0.2 (options table) to a second person: 1 of 6
    assert sorted(len(who) for who in assignees.values()) == [1, 1, 1, 1, 1, 2]
    assert set().union(*assignees.values()) == {"ann", "bob"}
    assert (
        "Queued for labelling: 6 items (6 new, 0 already items), shown blind; 7 assignments to ann, bob, "
        "1 of 6 items given to two of them." in said
    )
    assert (
        str(path) in said and path.name.startswith("hole-sample-k5-") and path.name.endswith("-n2-seed1.yaml")
    )
    # people's grades are not in yet: the corrected figure says why, in the CLI's words
    assert at.selectbox(key="metrics:holes:sample_choice").value == path.name


def test_a_sample_on_the_demo_store_leaves_out_what_people_judged(demo_db) -> None:
    """cat and dan graded q_faw's top 10 in the demo: its 3 holes are judged, not asked again."""
    at = draw(at_k5(), 2, 1)
    said = successes(at)
    assert "Queued for labelling: 3 items (0 new, 3 already items)" in said
    assert "3 already judged by someone (not asked again)." in said


def test_the_corrected_figure_once_people_labelled_the_sample(demo_db) -> None:
    at = at_k5()
    at.button(key="metrics:holes:fill").click().run()
    ok(draw(at, 2, 1))
    warned = " ".join(plain(w.value) for w in at.warning)
    assert "3 holes of the sampled queries' top 5 have no people's grade: label them" in warned
    with Store(demo_db) as store:  # people label q_milk's holes in the app (grade 0, as hole-sample.yaml)
        for chunk in ("s2", "x1", "x3"):
            item = store.chunk_item("q_milk", chunk)
            assert item is not None
            store.add_label(item, "ann", 0)
    again = ok(at_k5())
    figures = table(again, "judge-filled", "measure")
    assert figures.loc["P@5", "corrected, 95% CI"] == "0.5000 no interval (n 2 of 4)"
    notes = [plain(c.value) for c in again.caption if c.value.startswith("P@5: ")]
    assert notes == [
        "P@5: no interval: people's labels on the holes changed the figure of 0 of the 2 sampled "
        "queries; an interval needs at least 5 (label the holes of more queries)"
    ]


def test_a_hole_from_the_data_is_escaped(demo_db) -> None:
    qrels = b"q1 0 d1 1\n"
    run = b'{"query_id": "q1", "ranking": ["d1", "[x](http://e)"]}\n'
    at = app_test(timeout=120).run()
    at.radio(key="metrics:source").set_value(OWN_FILES).run()
    at.number_input(key="metrics:k").set_value(2).run()
    at.file_uploader(key="metrics:qrels_upload").set_value(("h.qrels", qrels, "text/plain"))
    at.file_uploader(key="metrics:run_upload").set_value(("h.jsonl", run, "text/plain"))
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    raw = next(t.value for t in at.table if "holes" in t.value.columns)
    assert raw.loc[0, "holes"] == md("[x](http://e)")


def test_the_samples_folder_beside_the_checkouts_store_is_ignored_by_git() -> None:
    """``make run`` serves ./denominator.db, so the page writes its samples into the checkout: git
    ignores that folder, as it ignores the store itself (#43, item 9: it showed as untracked)."""
    import subprocess
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    folder = samples_folder(str(root / "denominator.db"))
    sample = folder / "hole-sample-k5-0123456789abcdef.yaml"
    ignored = subprocess.run(["git", "check-ignore", "-q", str(sample)], cwd=root)
    assert ignored.returncode == 0, f"{folder.relative_to(root)}/ is not in .gitignore"


def test_a_big_run_finds_its_holes_on_request(demo_db) -> None:
    """Above 500 queries (#42 item 2) the section waits for its toggle: no holes found on a run of
    the page, or a new k, until asked; then the same holes as a small run shows. The data: 501
    queries, each judging d1 relevant; the run (tag r) ranks x, d1: one hole (x) of each top 2."""
    queries = [f"q{i:03d}" for i in range(501)]
    qrels = "".join(f"{q} 0 d1 1\n" for q in queries).encode()
    run = "".join(f"{q} Q0 {d} {rank} {3 - rank} r\n" for q in queries for rank, d in ((1, "x"), (2, "d1")))
    at = app_test(timeout=120).run()
    at.radio(key="metrics:source").set_value(OWN_FILES).run()
    at.number_input(key="metrics:k").set_value(2)
    at.file_uploader(key="metrics:qrels_upload").set_value(("qrels.txt", qrels, "text/plain"))
    at.file_uploader(key="metrics:run_upload").set_value(("run.txt", run.encode(), "text/plain"))
    text = page_text(ok(at.run())).replace("**", "")
    assert "Holes: unjudged chunks of the top 2" in text
    assert "positions unjudged" not in text
    assert at.toggle(key="metrics:holes:show").label == "Find the holes (501 queries: found on request)"
    at.toggle(key="metrics:holes:show").set_value(True)
    text = page_text(ok(at.run())).replace("**", "")
    assert "501 of 1,002 positions unjudged in the top 2 of r against the judgments" in text
