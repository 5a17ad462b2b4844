"""The review's verdict knows how its labels were drawn (issue #39): clustered by query, fewer than
``min_queries`` queries uncalibrated, chosen labels without a verdict, a verdict read again on more
labels read from the confidence sequence, and the same design on ``review`` and ``check``.

The stores are built here with a hand-made judge of relevance over chunk items of Q queries x m chunks:
the people's grade and the judge's answer follow a fixed pattern, so each figure can be checked against
the statistics modules (:mod:`calibration.stats.kappa_clustered`, :mod:`calibration.stats.kappa_interval`)
computed on the same grades.
"""

from __future__ import annotations

import json

import pytest

from annotation.store import Store
from calibration.__main__ import main
from calibration.review import review
from calibration.stats.kappa_clustered import kappa_ci_clustered
from calibration.stats.kappa_interval import kappa_ci
from tests.conftest import cli

EX = "examples/worked-example"
FP = "fp-rel"


def grades(q: int, j: int) -> tuple[int, int]:
    """(people, judge) of chunk j of query q: the judge agrees except on one chunk in five, and on
    every query it disagrees on a different one, so per-query kappas differ."""
    person = (q + j) % 4
    judge = person if (j + q) % 5 else (person + 1) % 4
    return person, judge


def labelled_store(db, queries: int, per_query: int, batch: str = "holes-k10-seed0", start: int = 0) -> None:
    """Chunk items of ``queries`` queries (q{start}..) x ``per_query`` chunks, in ``batch`` (a hole
    sample's: drawn at random; ``pool-...``: chosen), graded by person ann and by the judge."""
    with Store(db) as store:
        qids = [f"q{q}" for q in range(start, start + queries)]
        store.import_queries({q: f"query {q}" for q in qids})
        store.import_corpus(
            [{"id": f"{q}-c{j}", "text": f"chunk {j} of {q}"} for q in qids for j in range(per_query)]
        )
        store.annotator_id("ann")
        store.register_judge(FP, {"model": "m", "endpoint": "e", "rubric": "relevance", "kind": "llm"})
        rows = []
        for qi, q in enumerate(qids, start=start):
            for j in range(per_query):
                item = store.add_chunk_item(q, f"{q}-c{j}", batch, qi * 1000 + j)
                person, judge = grades(qi, j)
                store.add_label(item, "ann", person, "relevance")
                rows.append({"item_id": item, "fingerprint": FP, "repeat": 0, "value": judge})
        store.add_judge_labels(rows)


def expected(queries: int, per_query: int, start: int = 0) -> tuple[list[int], list[int], list[str]]:
    people, judge, qs = [], [], []
    for q in range(start, start + queries):
        for j in range(per_query):
            p, g = grades(q, j)
            people.append(p)
            judge.append(g)
            qs.append(f"q{q}")
    return people, judge, qs


def golden_and_run(tmp_path, queries: int, per_query: int, start: int = 0) -> tuple[str, str]:
    """A golden qrels of the store's queries (the people's grades) and a run ranking their chunks:
    a check scoped to this golden set reads the store's labels (#40)."""
    golden = tmp_path / "golden.qrels"
    run = tmp_path / "run.jsonl"
    qrels, lines = [], []
    for q in range(start, start + queries):
        chunks = [f"q{q}-c{j}" for j in range(per_query)]
        qrels += [f"q{q} 0 {c} {grades(q, j)[0]}" for j, c in enumerate(chunks)]
        lines.append(json.dumps({"query_id": f"q{q}", "ranking": chunks}))
    golden.write_text("\n".join(qrels) + "\n")
    run.write_text("\n".join(lines) + "\n")
    return str(golden), str(run)


def the_judge(db, **options) -> dict:
    with Store(db) as store:
        report = review(store, save=False, bar=0.6, statistic="unweighted", **options)
    return next(j for j in report["judges"] if j["fingerprint"] == FP)


def test_three_queries_give_no_verdict(tmp_path) -> None:
    db = tmp_path / "s.db"
    labelled_store(db, 3, 20)
    judge = the_judge(db)
    c = judge["consensus"]
    assert judge["verdict"] == "uncalibrated" and judge["status_reason"] == "3 queries: a verdict needs 5"
    assert c["ci"] is None and c["kappa"] is not None and c["n"] == 60
    assert c["design"]["queries"] == 3 and c["design"]["items"] == 60 and c["design"]["people"] == 1
    assert "label items of 2 more queries" in judge["advice"]
    # the item-level interval is kept beside, for comparison: it is today's kappa_ci
    people, answers, _ = expected(3, 20)
    low, high = kappa_ci(answers, people, labels=[0, 1, 2, 3])
    assert c["item_level_ci"] == pytest.approx([low, high])
    # min_queries 3 (the policy key's option) lets three queries decide
    assert the_judge(db, min_queries=3)["verdict"] != "uncalibrated"


def test_eight_queries_read_the_clustered_interval(tmp_path) -> None:
    db = tmp_path / "s.db"
    labelled_store(db, 8, 10)
    judge = the_judge(db)
    c = judge["consensus"]
    people, answers, qs = expected(8, 10)
    clustered = kappa_ci_clustered(people, answers, qs, labels=[0, 1, 2, 3])
    assert c["ci"] == pytest.approx([clustered[0], clustered[1]])
    assert c["ci"] != pytest.approx(c["item_level_ci"])  # the design changed the interval
    assert c["design"]["design_effect"] == pytest.approx(clustered.design["design_effect"])
    assert c["population"] == "queries drawn like these 8"
    assert c["drawn"] == {"random": True, "how": "drawn at random: hole sample holes-k10-seed0"}
    # the median per-query kappa beside the pooled one
    assert c["per_query"]["queries"] == 8 and c["per_query"]["median"] is not None
    assert c["read"] == "once" and c["method"] == "fixed-n score interval, by query"


def test_chosen_labels_give_no_verdict(tmp_path) -> None:
    db = tmp_path / "s.db"
    labelled_store(db, 8, 10, batch="pool-d10-retriever")
    judge = the_judge(db)
    assert judge["verdict"] == "uncalibrated"
    assert judge["status_reason"].startswith("80 of 80 items were chosen, not drawn at random")
    assert judge["consensus"]["ci"] is not None  # the figures stay, with no verdict on them
    assert "draw the labels at random" in judge["advice"]


def test_a_verdict_read_again_on_more_labels_reads_the_sequence(tmp_path) -> None:
    db = tmp_path / "s.db"
    labelled_store(db, 6, 10)
    first = the_judge(db)["consensus"]
    assert first["read"] == "once"
    again = the_judge(db)["consensus"]  # the same labels read again: still one look
    assert again["read"] == "once" and again["ci"] == first["ci"]
    labelled_store(db, 4, 10, start=6)  # more labels arrive, the verdict is read again
    now = the_judge(db)["consensus"]
    assert now["read"] == "while labelling (1 earlier look)"
    assert now["method"] == "anytime-valid confidence sequence, by query"
    people, answers, qs = expected(10, 10)
    fixed = kappa_ci_clustered(people, answers, qs, labels=[0, 1, 2, 3])
    assert now["ci"][0] < fixed[0] and now["ci"][1] >= fixed[1]  # wider than the one-look interval
    with Store(db) as store:
        looks = store.db.execute("SELECT n, face FROM verdict_looks WHERE fingerprint = ?", [FP]).fetchall()
    assert [tuple(r) for r in looks] == [(60, "review"), (100, "review")]


def test_review_and_check_print_the_same_design_interval_and_verdict(capsys, tmp_path) -> None:
    db = tmp_path / "s.db"
    labelled_store(db, 8, 10)
    code, out, err = cli(main, capsys, "review", "--db", str(db), "--format", "json")
    assert code == 0, err
    reviewed = next(j for j in json.loads(out)["judges"] if j["fingerprint"] == FP)
    golden, run = golden_and_run(tmp_path, 8, 10)
    args = ["check", golden, run, "-k", "5", "--db", str(db), "--format", "json"]
    code, out, err = cli(main, capsys, *args)
    kappa = next(r for r in json.loads(out)["rules"] if r["rule"] == "kappa")
    checked = next(j for j in kappa["judges"] if j["fingerprint"] == FP)
    assert checked["evidence"].startswith(
        "on 80 labels over 8 of this golden set's 8 queries, 1 person, week"
    )
    c = reviewed["consensus"]
    assert checked["verdict"] == reviewed["verdict"]
    assert checked["ci"] == pytest.approx(c["ci"]) and checked["n"] == c["n"]
    # check read the same labels after review did: a second look at the same n, the same interval
    assert c["read"] == "once"


def test_the_review_page_reads_the_sequence_and_plans(monkeypatch, tmp_path) -> None:
    """The page is a face like review: the same design and interval; its reading is a look (face
    "page"), so after more labels it reads the sequence; the plan is calibration plan's."""
    from annotation.values import parse_designs
    from calibration import actions
    from calibration.review_text import design_text
    from denominator.ui.plan import plan_rows
    from tests.conftest import page_test, page_text

    db = tmp_path / "s.db"
    labelled_store(db, 6, 10)
    monkeypatch.setenv("DENOMINATOR_DB", str(db))
    monkeypatch.delenv("DENOMINATOR_ANNOTATOR", raising=False)
    at = page_test("denominator.ui.review.render_review_page", timeout=60).run()
    assert not at.exception, [e.value for e in at.exception]
    assert "read once (fixed-n score interval, by query)" in page_text(at)
    labelled_store(db, 4, 10, start=6)
    at.run()
    shown = page_text(at)
    judge = the_judge(db)  # the CLI's reading of the same labels, after the page's two looks
    assert f"Design: {design_text(judge['consensus'])}" in shown
    assert "read while labelling (1 earlier look) (anytime-valid confidence sequence, by query)" in shown
    with Store(db) as store:
        faces = [r[0] for r in store.db.execute("SELECT face FROM verdict_looks ORDER BY id").fetchall()]
    assert faces == ["page", "page"]  # the CLI's reading at the same n is the page's last look
    at.toggle(key="review:plan:on").set_value(True).run()
    assert not at.exception, [e.value for e in at.exception]
    with Store(db) as store:
        entries = actions.plan(store, parse_designs("5x20,5x60,10x30,20x15,30x10,10x60,20x30,40x15"))
    frame = at.dataframe[0].value
    assert frame.to_dict("records") == plan_rows(entries[0])


def test_advice_fits_the_case(tmp_path) -> None:
    """Issue #40, item 8: people below the bar among themselves; the offline judge; a judge that
    picks by position."""
    from calibration.stats.verdict import case_advice

    not_trusted = "do not use its figures: re-tune the prompt (show it the rubric's examples), swap the judge"
    ceiling = {"kappa": -0.169, "n": 20}
    said = case_advice(not_trusted, kind="llm", bar=0.6, ceiling=ceiling)
    assert said.startswith(
        "people agree with each other at kappa -0.169 (the ceiling, n = 20), below the bar 0.6"
    )
    assert "fix the rubric or the guidelines" in said and "prompt" not in said
    offline = case_advice(not_trusted, kind="lexical", bar=0.6)
    assert "no prompt" in offline and "re-tune" not in offline and "label more items" in offline
    position = {"position_consistency": 0.0, "primacy_rate": 1.0, "n_pairs": 26}
    picks = case_advice("label about 26 more items", kind="llm", bar=0.6, position=position)
    assert picks.startswith("the judge picks by position: order consistency 0.000 over 26 pairs")
    # the review gives it: the demo's offline judge never hears "prompt"
    db = tmp_path / "s.db"
    labelled_store(db, 8, 10)
    with Store(db) as store:
        store.register_judge(
            "fp-off", {"model": "logistic", "endpoint": "offline", "rubric": "relevance", "kind": "lexical"}
        )
        store.add_judge_labels(
            [
                {"item_id": i, "fingerprint": "fp-off", "repeat": 0, "value": 3 - v}
                for i, v in judge_items(store)
            ]
        )
        report = review(store, save=False, bar=0.6, statistic="unweighted")
    off = next(j for j in report["judges"] if j["fingerprint"] == "fp-off")
    assert off["verdict"] == "not trusted" and "re-tune the prompt" not in off["advice"]
    assert "the offline judge has no prompt" in off["advice"]


def judge_items(store) -> list[tuple[int, int]]:
    return [(int(r["item_id"]), int(r["value"])) for r in store.judge_values(FP)]


def test_check_reads_only_the_evidence_about_its_golden_set(capsys, tmp_path) -> None:
    """Issue #40: a store whose labels share no query with the golden set is no evidence for the run:
    its judge is out of scope, named, and the kappa rule does not pass on it."""
    db = tmp_path / "s.db"
    labelled_store(db, 8, 10)  # queries q0..q7; the worked example's are q_faw, q_store, ...
    args = ["check", f"{EX}/golden.yaml", f"{EX}/run.jsonl", "-k", "5", "--db", str(db), "--format", "json"]
    code, out, _ = cli(main, capsys, *args)
    report = json.loads(out)
    kappa = next(r for r in report["rules"] if r["rule"] == "kappa")
    assert kappa["judges"] == [] and kappa["passed"] is not True
    listed = {j["fingerprint"]: j["reason"] for j in kappa.get("superseded") or []}
    assert listed[FP].startswith("graded nothing of this golden set's queries")
    # half the golden set's queries labelled: the verdict reads those 4 of its 8
    golden, run = golden_and_run(tmp_path, 8, 10)
    labelled = tmp_path / "h.db"
    labelled_store(labelled, 4, 10)
    code, out, _ = cli(
        main,
        capsys,
        "check",
        golden,
        run,
        "-k",
        "5",
        "--db",
        str(labelled),
        "--rule",
        "min_queries=3",
        "--format",
        "json",
    )
    kappa = next(r for r in json.loads(out)["rules"] if r["rule"] == "kappa")
    entry = next(j for j in kappa["judges"] if j["fingerprint"] == FP)
    assert entry["evidence"].startswith("on 40 labels over 4 of this golden set's 8 queries")


def test_agree_on_the_same_labels_prints_the_same_design_interval_and_verdict(capsys, tmp_path) -> None:
    """Parity (issue #39): the store's labels written as agree's CSV (people's grade and the judge's,
    with the query) give agree the review's interval, verdict and design (queries, items, design
    effect); agree's "people" are its pair's two raters."""
    db = tmp_path / "s.db"
    labelled_store(db, 8, 10)
    reviewed = the_judge(db)["consensus"]
    people, answers, qs = expected(8, 10)
    rows = ["item,rater,label,query_id"]
    for i, (p, j, q) in enumerate(zip(people, answers, qs)):
        rows += [f"{i},people,{p},{q}", f"{i},judge,{j},{q}"]
    path = tmp_path / "labels.csv"
    path.write_text("\n".join(rows) + "\n")
    code, out, err = cli(main, capsys, "agree", str(path), "--format", "json")
    assert code == 0, err
    pair = json.loads(out)["pairs"][0]
    assert pair["kappa_ci"] == pytest.approx(reviewed["ci"])
    assert pair["verdict"] == the_judge(db)["verdict"]
    for key in ("queries", "items", "design_effect"):
        assert pair["design"][key] == pytest.approx(reviewed["design"][key])


def test_advice_when_people_disagree_among_themselves_end_to_end(capsys, tmp_path) -> None:
    """Issue #40, item 8, through ``review``: ann and bob grade the same 80 items (8 queries x 10)
    with bob one grade off on every item (their kappa below the bar), an LLM judge close to ann: the
    advice is the rubric's, not the prompt's, and names the ceiling's kappa and n."""
    from sklearn.metrics import cohen_kappa_score

    db = tmp_path / "s.db"
    labelled_store(db, 8, 10)
    with Store(db) as store:
        store.annotator_id("bob")
        for item, qid, chunk in store.chunk_items():
            ann = grades(int(qid[1:]), int(chunk.rsplit("-c", 1)[1]))[0]
            store.add_label(item, "bob", (ann + 1) % 4, "relevance")
    code, out, err = cli(main, capsys, "review", "--db", str(db), "--format", "json")
    assert code == 0, err
    judge = next(j for j in json.loads(out)["judges"] if j["fingerprint"] == FP)
    people, _judge, _qs = expected(8, 10)
    ceiling = cohen_kappa_score(people, [(p + 1) % 4 for p in people])
    assert judge["ceiling"]["kappa"] == pytest.approx(ceiling) and ceiling < 0.6
    assert judge["advice"] == (
        f"people agree with each other at kappa {ceiling:.3f} (the ceiling, n = 80), below the bar 0.6: "
        "fix the rubric or the guidelines before judging the judge"
    )
    code, out, err = cli(main, capsys, "review", "--db", str(db))
    assert f"what to do: people agree with each other at kappa {ceiling:.3f}" in out and "prompt" not in out


def test_advice_for_a_judge_that_picks_by_position_end_to_end(
    capsys, demo_db, fake_openai, monkeypatch
) -> None:
    """Issue #40, item 8, through ``judge compare`` and ``review``: an endpoint that always names the
    answer shown first (the fake server's bias) on the demo's 4 pairs, asked in both orders: order
    consistency 0 of 4, and the advice says the judge picks by position, whatever the label count."""
    from judge.__main__ import main as judge_main

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    server = fake_openai(bias="first")
    argv = ["compare", "--db", str(demo_db), "--base-url", server.base_url, "--model", "fake-judge"]
    code, _out, err = cli(judge_main, capsys, *argv)
    assert code == 0, err
    code, out, err = cli(main, capsys, "review", "--db", str(demo_db), "--format", "json")
    assert code == 0, err
    judge = next(j for j in json.loads(out)["judges"] if j["rubric"] == "preference")
    assert judge["position"]["position_consistency"] == 0.0 and judge["position"]["n_pairs"] == 4
    assert judge["advice"].startswith(
        "the judge picks by position: order consistency 0.000 over 4 pairs asked in both orders"
    )
    assert "label" not in judge["advice"].split(";")[0]  # not "label N more items" first
