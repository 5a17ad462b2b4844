"""Issue #39 in ``calibration agree`` and the Holes section: the query is the unit of sampling.

Where the labels carry a query (a ``query_id`` column, the CSV ``annotation export --format csv``
writes, two qrels files), each verdict's interval is :func:`calibration.stats.judged.judged_kappa`'s,
clustered by query, below ``min_queries`` queries there is no verdict, and every verdict states its
design. Without a query the interval and verdict are the item-level ones, as before.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from annotation.__main__ import main as annotation_main
from annotation.formats.by_extension import read_judgments, read_ranked
from annotation.store import Store
from calibration import actions
from calibration.__main__ import main
from calibration.holes.files import filled_data
from calibration.stats.judged import design_line, judged_kappa
from calibration.stats.kappa_clustered import kappa_ci_clustered
from calibration.stats.kappa_interval import kappa_ci
from tests.conftest import EXAMPLE, cli

# 3 queries x 4 chunks, relevant (1) or not (0). alice marks the first two of each query relevant;
# bob agrees on 10 of 12: q2's second chunk he calls not relevant, q3's fourth relevant.
# Each gives 6 of 12 ones, so chance agreement is 0.5 * 0.5 + 0.5 * 0.5 = 0.5 and
# kappa = (10/12 - 0.5) / (1 - 0.5) = 2/3.
ALICE_3 = {"q1": [1, 1, 0, 0], "q2": [1, 1, 0, 0], "q3": [1, 1, 0, 0]}
BOB_3 = {"q1": [1, 1, 0, 0], "q2": [1, 0, 0, 0], "q3": [1, 1, 0, 1]}

# 8 queries x 6 chunks: bob agrees with alice on every chunk of q1..q4 and on 3 of 6 of q5..q8,
# so agreement differs from query to query and the clustered interval is wider than the item-level one
ALICE_8 = {f"q{q}": [1, 1, 1, 0, 0, 0] for q in range(1, 9)}
BOB_8 = {
    **{f"q{q}": [1, 1, 1, 0, 0, 0] for q in range(1, 5)},
    **{f"q{q}": [1, 0, 0, 1, 1, 0] for q in range(5, 9)},
}


def write_long(
    path: Path, alice: dict[str, list[int]], bob: dict[str, list[int]], query: bool = True
) -> Path:
    lines = ["item,rater,label" + (",query_id" if query else "")]
    for q, grades in alice.items():
        for i, (a, b) in enumerate(zip(grades, bob[q])):
            tail = f",{q}" if query else ""
            lines += [f"{q}-c{i},alice,{a}{tail}", f"{q}-c{i},bob,{b}{tail}"]
    path.write_text("\n".join(lines) + "\n")
    return path


def flat(grades: dict[str, list[int]]) -> tuple[list[int], list[str]]:
    return [g for q in grades for g in grades[q]], [q for q in grades for _ in grades[q]]


def test_three_queries_give_no_verdict_with_the_reason(tmp_path) -> None:
    (pair,) = actions.agree(
        write_long(tmp_path / "l.csv", ALICE_3, BOB_3), trusted=0.6, statistic="unweighted"
    )["pairs"]
    assert pair["kappa"] == pytest.approx(2 / 3)
    assert pair["verdict"] == "uncalibrated"
    assert pair["reason"] == "3 queries: a verdict needs 5"
    assert pair["kappa_ci"] is None  # no verdict-grade interval below min_queries
    assert pair["design"]["queries"] == 3 and pair["design"]["items"] == 12
    assert pair["design"]["people"] == 2 and pair["design"]["min_queries"] == 5
    assert pair["population"] == "queries drawn like these 3"
    assert "2 more queries" in pair["advice"]


def test_eight_queries_the_clustered_interval_not_the_item_level_one(tmp_path) -> None:
    report = actions.agree(
        write_long(tmp_path / "l.csv", ALICE_8, BOB_8), trusted=0.6, statistic="unweighted"
    )
    (pair,) = report["pairs"]
    a, queries = flat(ALICE_8)
    b, _ = flat(BOB_8)
    clustered = kappa_ci_clustered(a, b, queries, labels=[0, 1])
    item = kappa_ci(a, b, labels=[0, 1])
    assert pair["kappa_ci"] == pytest.approx([clustered.low, clustered.high], abs=1e-12)
    assert pair["item_level_ci"] == pytest.approx([item.low, item.high], abs=1e-12)
    assert pair["kappa_ci"][1] - pair["kappa_ci"][0] > pair["item_level_ci"][1] - pair["item_level_ci"][0]
    assert pair["design"]["queries"] == 8 and pair["design"]["design_effect"] > 1
    assert pair["method"] == "fixed-n score interval, by query"
    assert pair["per_query"]["queries"] == 8
    # one function, one answer: the same as judged_kappa on the same labels
    same = judged_kappa(a, b, queries, labels=[0, 1], weights=None, bar=0.6, raters=2)
    assert pair["verdict"] == same["verdict"] and pair["kappa_ci"] == same["ci"]
    assert pair["reason"] == same["reason"]  # a file's draw is unknown: the verdict assumes a random one
    assert "drawn at random" in (pair["reason"] or "")


def test_without_a_query_column_the_item_level_interval_and_verdict_stay(tmp_path) -> None:
    (pair,) = actions.agree(
        write_long(tmp_path / "l.csv", ALICE_8, BOB_8, query=False), trusted=0.6, statistic="unweighted"
    )["pairs"]
    a, _ = flat(ALICE_8)
    b, _ = flat(BOB_8)
    item = kappa_ci(a, b, labels=[0, 1])
    assert pair["kappa_ci"] == pytest.approx([item.low, item.high], abs=1e-12) == pair["item_level_ci"]
    assert pair["design"]["queries"] is None and pair["per_query"] is None
    assert pair["population"].startswith("items drawn like these 48")
    assert pair["method"] == "fixed-n score interval"


def test_min_queries_changes_the_verdict_and_its_reason(tmp_path, capsys) -> None:
    path = write_long(tmp_path / "l.csv", ALICE_3, BOB_3)
    code, out, _ = cli(main, capsys, "agree", path, "--format", "json")
    assert code == 0 and json.loads(out)["pairs"][0]["verdict"] == "uncalibrated"
    code, out, _ = cli(main, capsys, "agree", path, "--min-queries", "3", "--format", "json")
    (pair,) = json.loads(out)["pairs"]
    assert code == 0 and pair["verdict"] != "uncalibrated" and pair["kappa_ci"] is not None
    assert pair["design"]["min_queries"] == 3
    # the policy's min_queries when the option is left out
    policy = tmp_path / "denominator.yaml"
    policy.write_text("min_queries: 3\n")
    code, out, _ = cli(main, capsys, "agree", path, "--policy", policy, "--format", "json")
    assert code == 0 and json.loads(out)["pairs"][0]["design"]["min_queries"] == 3


@pytest.mark.parametrize("command", [["agree", "x.csv"], ["review"], ["check", "g.yaml", "r.run", "-k", "5"]])
@pytest.mark.parametrize("value", ["1", "x", "0", "-3"])
def test_a_bad_min_queries_is_one_line_exit_2(capsys, command: list[str], value: str) -> None:
    code, out, err = cli(main, capsys, *command, "--min-queries", value)
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and "--min-queries" in err and "from 2 to" in err


def test_the_table_prints_the_design_under_each_pair(tmp_path, capsys) -> None:
    code, out, _ = cli(main, capsys, "agree", write_long(tmp_path / "l.csv", ALICE_3, BOB_3))
    assert code == 0
    lines = out.splitlines()
    row = next(i for i, line in enumerate(lines) if line.startswith("alice vs bob "))
    assert lines[row + 1].startswith("  design: 3 queries, 12 items, 2 people, design effect")
    assert "alice vs bob: uncalibrated: 3 queries: a verdict needs 5" in out


def test_the_export_csv_read_as_it_is_written(tmp_path, capsys) -> None:
    db = tmp_path / "s.db"
    with Store(db) as store:
        store.import_queries({f"q{q}": f"query {q}" for q in range(1, 9)})
        store.import_corpus([{"id": f"q{q}-c{i}", "text": "chunk"} for q in range(1, 9) for i in range(6)])
        for who in ("alice", "bob"):
            store.annotator_id(who)
        first = None
        for position, (q, grades) in enumerate(ALICE_8.items()):
            for i, (a, b) in enumerate(zip(grades, BOB_8[q])):
                item = store.add_chunk_item(q, f"{q}-c{i}", "pool", 6 * position + i)
                first = first or item
                store.add_label(item, "alice", 3 - 3 * a)  # a wrong grade, corrected below
                store.add_label(item, "alice", 3 * a)
                store.add_label(item, "bob", 3 * b)
    export = tmp_path / "labels.csv"
    assert cli(annotation_main, capsys, "export", "--db", db, "--format", "csv", "-o", export)[0] == 0
    code, out, err = cli(main, capsys, "agree", export, "--format", "json")
    assert code == 0, err
    (pair,) = json.loads(out)["pairs"]
    a, queries = flat(ALICE_8)
    b, _ = flat(BOB_8)
    same = judged_kappa(
        [3 * x for x in a], [3 * y for y in b], queries, labels=[0, 1, 2, 3], weights=None, bar=0.6
    )
    assert pair["n"] == 48 and pair["kappa"] == pytest.approx(same["kappa"])  # the newest label counts
    assert pair["kappa_ci"] == pytest.approx(same["ci"]) and pair["verdict"] == same["verdict"]
    assert pair["design"]["queries"] == 8
    # a retraction is no label: that item drops out of the pair
    with Store(db) as store:
        store.undo(first, "bob")
    assert cli(annotation_main, capsys, "export", "--db", db, "--format", "csv", "-o", export)[0] == 0
    code, out, _ = cli(main, capsys, "agree", export, "--format", "json")
    assert code == 0 and json.loads(out)["pairs"][0]["n"] == 47
    code, out, _ = cli(main, capsys, "agree", export)  # the table too
    assert code == 0 and "design: 8 queries, 47 items, 2 people" in out


def test_an_export_of_several_rubrics_needs_rubric(tmp_path, capsys) -> None:
    path = tmp_path / "labels.csv"
    path.write_text(
        "label_id,item_id,kind,query_id,annotator,rubric,value\n"
        "1,1,chunk,q1,alice,relevance,2\n2,1,chunk,q1,bob,relevance,2\n"
        "3,2,trace,,alice,faithfulness,1\n4,2,trace,,bob,faithfulness,0\n"
    )
    code, _, err = cli(main, capsys, "agree", path)
    assert code == 2 and err.strip().endswith("labels of faithfulness, relevance; choose one with --rubric")
    code, out, _ = cli(main, capsys, "agree", path, "--rubric", "faithfulness", "--format", "json")
    (pair,) = json.loads(out)["pairs"]
    assert code == 0 and pair["n"] == 1 and pair["design"]["queries"] is None  # traces carry no query


def test_an_item_under_two_queries_is_refused(tmp_path, capsys) -> None:
    path = tmp_path / "l.csv"
    path.write_text("item,rater,label,query_id\ni1,a,1,q1\ni1,b,1,q2\n")
    code, _, err = cli(main, capsys, "agree", path)
    assert code == 2 and f"{path}:3: query_id: item 'i1' under the query 'q2' and the query 'q1'" in err


def test_a_header_of_neither_kind_is_refused_in_one_line(tmp_path, capsys) -> None:
    path = tmp_path / "l.csv"
    path.write_text("item,who,label\ni1,a,1\n")
    code, _, err = cli(main, capsys, "agree", path)
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "expected the columns item,rater,label[,query_id] or the CSV annotation export" in err


def test_two_qrels_files_are_clustered_by_their_query(tmp_path) -> None:
    people, judge = tmp_path / "people.qrels", tmp_path / "judge.qrels"
    people.write_text("".join(f"{q} 0 {q}-c{i} {g}\n" for q, gs in ALICE_8.items() for i, g in enumerate(gs)))
    judge.write_text("".join(f"{q} 0 {q}-c{i} {g}\n" for q, gs in BOB_8.items() for i, g in enumerate(gs)))
    (pair,) = actions.agree(qrels_pair=[people, judge], trusted=0.6, statistic="unweighted")["pairs"]
    a, queries = flat(ALICE_8)
    b, _ = flat(BOB_8)
    clustered = kappa_ci_clustered(a, b, queries, labels=[0, 1])
    assert pair["design"]["queries"] == 8 and pair["design"]["people"] is None  # a file's people: unknown
    assert sorted(pair["kappa_ci"]) == pytest.approx([clustered.low, clustered.high], abs=1e-12)
    assert pair["kappa_ci"] != pair["item_level_ci"]


def test_sequential_says_which_interval_kappa_ci_is(tmp_path) -> None:
    report = actions.agree(
        write_long(tmp_path / "l.csv", ALICE_8, BOB_8), trusted=0.6, statistic="unweighted", sequential=True
    )
    (pair,) = report["pairs"]
    assert "fixed-n interval" in pair["sequential"]["kappa_ci"]
    assert pair["verdict"] == pair["sequential"]["verdict"]
    assert pair["read"].startswith("as labelled")


def _shared(people, judge) -> tuple[list[int], list[int], list[str]]:
    rows = [
        (q, g, judge.grades[q][d])
        for q, docs in people.grades.items()
        for d, g in docs.items()
        if d in judge.grades.get(q, {})
    ]
    return [r[1] for r in rows], [r[2] for r in rows], [r[0] for r in rows]


@pytest.mark.parametrize("min_queries", [5, 2])
def test_the_holes_judge_agreement_is_judged_kappa_on_the_same_grades(min_queries: int) -> None:
    golden = read_judgments(EXAMPLE / "golden.yaml")
    judge = read_judgments(EXAMPLE / "judge.qrels")
    run = read_ranked(EXAMPLE / "run.jsonl")
    (report,) = filled_data(golden, run, [10], judge, min_queries=min_queries)
    agreement = report["agreement"]
    assert agreement is not None
    people, machine, queries = _shared(golden, judge)
    same = judged_kappa(
        people, machine, queries, labels=[0, 1, 2, 3], weights=None, bar=0.6, min_queries=min_queries
    )
    assert agreement["n"] == same["n"] and agreement["kappa"] == pytest.approx(same["kappa"])
    assert agreement["kappa_ci"] == same["ci"] and agreement["verdict"] == same["verdict"]
    assert (
        agreement["reason"] == same["reason"] and agreement["design"]["queries"] == same["design"]["queries"]
    )
    assert design_line(same) in design_line(agreement)  # type: ignore[arg-type]
    if min_queries == 5:  # the worked example's judge shares chunks of 4 queries with people
        assert (
            agreement["verdict"] == "uncalibrated" and agreement["reason"] == "4 queries: a verdict needs 5"
        )
    else:
        assert agreement["kappa_ci"] is not None


def test_the_holes_text_states_the_design(capsys) -> None:
    code, out, _ = cli(
        main,
        capsys,
        "metrics",
        EXAMPLE / "golden.yaml",
        EXAMPLE / "run.jsonl",
        "--judge-labels",
        EXAMPLE / "judge.qrels",
    )
    assert code == 0
    assert "(uncalibrated, no interval: 4 queries: a verdict needs 5); design: 4 queries, " in out


def test_check_min_queries_reaches_the_holes_verdict() -> None:
    golden = read_judgments(EXAMPLE / "golden.yaml")
    judge = read_judgments(EXAMPLE / "judge.qrels")
    run = read_ranked(EXAMPLE / "run.jsonl")
    report = actions.check(golden, run, 10, no_store=True, judge=judge, min_queries=3)
    assert report["holes"]["agreement"]["design"]["min_queries"] == 3
    assert report["holes"]["agreement"]["verdict"] != "uncalibrated"
    report = actions.check(golden, run, 10, no_store=True, judge=judge)  # the policy's: 5
    assert report["holes"]["agreement"]["verdict"] == "uncalibrated"


def test_review_passes_min_queries_the_policy_s_when_not_given(monkeypatch) -> None:
    import calibration.review

    seen: dict[str, object] = {}

    def fake_review(store, week=None, **options):
        seen.update(options)
        return {"week": week}

    monkeypatch.setattr(calibration.review, "review", fake_review)
    actions.review(object(), "2026-W01", min_queries=7)  # type: ignore[arg-type]
    assert seen["min_queries"] == 7
    actions.review(object(), "2026-W01")  # type: ignore[arg-type]
    assert seen["min_queries"] == 5
