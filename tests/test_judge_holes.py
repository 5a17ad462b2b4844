"""``judge grade --holes GOLDEN RUN -k K``: the run's holes (its top-k chunks the judgments do not
grade) made chunk items and graded by the offline judge or an LLM endpoint, and nothing else (#30).

On the worked example at k = 5 the holes are q_broad: x1; q_faw: x3, p1, d2; q_milk: s2, x1, x3;
q_store: d2, x4, p2 (10 holes over 4 queries)."""

from __future__ import annotations

import json

import pytest

from annotation.formats.by_extension import read_judgments, read_ranked
from annotation.store import Store
from judge import actions
from judge.__main__ import main
from judge.holes import HoleSpec
from tests.conftest import EXAMPLE, cli

GOLDEN, RUN, CORPUS = EXAMPLE / "golden.yaml", EXAMPLE / "run.jsonl", EXAMPLE / "corpus.jsonl"
HOLES = {
    ("q_broad", "x1"),
    ("q_faw", "x3"),
    ("q_faw", "p1"),
    ("q_faw", "d2"),
    ("q_milk", "s2"),
    ("q_milk", "x1"),
    ("q_milk", "x3"),
    ("q_store", "d2"),
    ("q_store", "x4"),
    ("q_store", "p2"),
}
HOLES_ARGS = ["--rubric", "relevance", "--holes", GOLDEN, RUN, "-k", 5]


def graded_pairs(db) -> dict[str, set[tuple[str, str]]]:
    """fingerprint -> (query, chunk) of every item the judge has a grade of."""
    with Store(db) as store:
        rows = store.db.execute(
            "SELECT j.fingerprint, i.query_id, i.chunk_id FROM judge_labels j JOIN items i ON i.id = j.item_id "
            "WHERE j.value IS NOT NULL"
        ).fetchall()
    out: dict[str, set[tuple[str, str]]] = {}
    for fp, qid, chunk in rows:
        out.setdefault(fp, set()).add((qid, chunk))
    return out


def counts(db) -> tuple[int, ...]:
    """Rows of the tables this command may write: items, assignments, judge labels, judges, chunks, queries."""
    with Store(db) as store:
        return tuple(
            store.db.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
            for t in ("items", "assignments", "judge_labels", "judges", "chunks", "queries")
        )


def test_the_offline_judge_grades_exactly_the_holes_once(demo_db, capsys) -> None:
    before = counts(demo_db)
    code, out, err = cli(main, capsys, "grade", "--db", demo_db, *HOLES_ARGS)
    assert code == 0, err
    assert "graded 10 items (0 already done)" in out
    assert "graded 10 of the 10 holes in the top 5 of 4 queries\n" in out
    graded = graded_pairs(demo_db)
    assert (
        len(graded) == 1 and next(iter(graded.values())) == HOLES
    )  # the demo pooled every hole: no new item
    after = counts(demo_db)
    assert after[:2] == before[:2] and after[2] == before[2] + 10  # no item made, nobody assigned
    code, out, _ = cli(main, capsys, "grade", "--db", demo_db, *HOLES_ARGS)
    assert (
        code == 0
        and "graded 0 of the 10 holes in the top 5 of 4 queries (10 already graded by this judge)" in out
    )
    assert counts(demo_db) == after


def test_the_endpoint_judge_asks_only_the_holes(demo_db, capsys, fake_openai, monkeypatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "test")
    server = fake_openai()
    argv = ["grade", "--db", demo_db, *HOLES_ARGS, "--base-url", server.base_url, "--model", "fake-judge"]
    code, out, _ = cli(main, capsys, *argv, "--dry-run")
    assert code == 0 and "would make 10 calls (0 of 10 already done)" in out
    assert "dry run: 10 holes in the top 5 of 4 queries: 10 are items already, 0 would be made" in out
    assert sum(server.received.values()) == 0 and graded_pairs(demo_db) == {}
    code, out, err = cli(main, capsys, *argv)
    assert code == 0, err
    server.wait_idle()
    assert sum(server.served.values()) == 10
    assert "10 calls made, 0 of 10 already done, 0 errors" in out
    assert "graded 10 of the 10 holes in the top 5 of 4 queries\n" in out
    (fp, pairs), *others = graded_pairs(demo_db).items()
    assert pairs == HOLES and not others
    code, out, _ = cli(main, capsys, *argv)  # again: nothing asked
    assert code == 0 and "0 calls made, 10 of 10 already done" in out
    assert "graded 0 of the 10 holes in the top 5 of 4 queries (10 already graded by this judge)" in out
    assert sum(server.received.values()) == 10


def test_a_store_without_the_holes_gets_them_as_items_assigned_to_nobody(tmp_path, capsys) -> None:
    """People's labels and the corpus without five of the holes' chunks imported: the holes become
    items, their queries' texts from golden.yaml, the missing chunks' texts from --corpus."""
    from annotation.__main__ import main as annotation_main

    missing = {"x1", "x3", "p1", "x4", "p2"}
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text(
        "".join(
            line + "\n" for line in CORPUS.read_text().splitlines() if json.loads(line)["id"] not in missing
        )
    )
    db = tmp_path / "labels.db"
    argv = ["import", "--db", db, "--corpus", corpus, "--labels", GOLDEN, "--annotator", "gold"]
    code, _, err = cli(annotation_main, capsys, *argv)
    assert code == 0, err
    assert counts(db)[0] == 17  # the 17 labelled items
    code, out, err = cli(main, capsys, "grade", "--db", db, *HOLES_ARGS)
    assert code == 0, err
    assert "graded 3 of the 10 holes in the top 5 of 4 queries\n" in out  # q_faw d2, q_milk s2, q_store d2
    assert (
        "7 of the 10 holes skipped: text unknown (x1, x3, p1, x4, p2); a chunk's text: --corpus FILE" in out
    )
    assert "made 3 new chunk items (assigned to nobody)" in out
    code, out, err = cli(main, capsys, "grade", "--db", db, *HOLES_ARGS, "--corpus", CORPUS)
    assert code == 0, err
    assert "graded 7 of the 10 holes in the top 5 of 4 queries (3 already graded by this judge)" in out
    assert "made 7 new chunk items (assigned to nobody), wrote 5 query and chunk texts" in out
    assert "skipped" not in out
    (pairs,) = graded_pairs(db).values()
    assert pairs == HOLES
    items, assigned, *_ = counts(db)
    assert items == 27 and assigned == 0
    with Store(db) as store:
        assert store.queries_with_text()["q_milk"] == "How can I get more milk from my dairy cows?"
        assert missing <= set(store.chunks_with_text())


def test_holes_with_unknown_text_are_skipped_counted_and_named(demo_db, tmp_path, capsys) -> None:
    run = tmp_path / "run.jsonl"
    lines = [json.loads(line) for line in RUN.read_text().splitlines()]
    for row in lines:
        if row["query_id"] == "q_faw":
            row["ranking"] = ["zz1", "m1", "zz2", *row["ranking"]]  # top 5: zz1 m1 zz2 m2 x3
    lines.append({"query_id": "q_new", "ranking": ["m1", "m2"]})
    run.write_text("".join(json.dumps(r) + "\n" for r in lines))
    qrels = tmp_path / "golden.qrels"  # TREC qrels: no query text; q_new is in no store
    qrels.write_text(
        "".join(
            f"{q} 0 {d} {g}\n" for q, docs in read_judgments(GOLDEN).grades.items() for d, g in docs.items()
        )
        + "q_new 0 d1 1\n"
    )
    argv = ["grade", "--db", demo_db, "--rubric", "relevance", "--holes", qrels, run, "-k", 5]
    code, out, err = cli(main, capsys, *argv)
    assert code == 0, err
    # q_faw's holes: zz1, zz2, x3; the rest as before; q_new: m1, m2 (no text for the query)
    assert "graded 8 of the 12 holes in the top 5 of 5 queries\n" in out
    assert "4 of the 12 holes skipped: text unknown (zz1, zz2, query q_new)" in out
    assert "--corpus FILE" in out and "--queries" in out
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text(json.dumps({"id": "zz1", "text": "Armyworm larvae in the maize funnel."}) + "\n")
    code, out, err = cli(main, capsys, *argv, "--corpus", corpus)
    assert code == 0, err
    assert "graded 1 of the 12 holes in the top 5 of 5 queries (8 already graded by this judge)" in out
    assert "made 1 new chunk items (assigned to nobody), wrote 1 query and chunk texts" in out
    assert "3 of the 12 holes skipped: text unknown (zz2, query q_new)" in out
    (pairs,) = graded_pairs(demo_db).values()
    assert pairs == (HOLES - {("q_faw", "p1"), ("q_faw", "d2")}) | {("q_faw", "zz1")}


def test_the_action_is_grade_with_holes(demo_db) -> None:
    spec = HoleSpec(read_judgments(GOLDEN), read_ranked(RUN), 5)
    with Store(demo_db) as store:
        done = actions.grade(store, "relevance", holes=spec, limit=3)
        assert isinstance(done, actions.HolesResult) and len(done.holes.holes) == 10
        assert done.holes.made == 0 and len(done.holes.item_ids) == 10
        assert isinstance(done.result, dict) and done.result["graded"] == 3  # the first 3 hole items
    with pytest.raises(actions.NothingToJudge, match="relevance"):
        with Store(demo_db) as store:
            actions.grade(store, "faithfulness", holes=spec)


def _one_line_error(capsys, *argv) -> str:
    code, out, err = cli(main, capsys, *argv)
    assert code == 2 and out == "" and err.count("\n") == 1, (code, out, err)
    return err


def test_bad_input_is_one_line_exit_2_and_nothing_written(demo_db, tmp_path, capsys) -> None:
    before = counts(demo_db)
    db = ["grade", "--db", demo_db]
    err = _one_line_error(capsys, *db, "--rubric", "faithfulness", "--holes", GOLDEN, RUN, "-k", 5)
    assert "--holes goes with --rubric relevance" in err
    assert "needs -k" in _one_line_error(capsys, *db, "--rubric", "relevance", "--holes", GOLDEN, RUN)
    assert "-k goes with --holes" in _one_line_error(capsys, *db, "--rubric", "relevance", "-k", 5)
    assert "--corpus goes with --holes" in _one_line_error(
        capsys, *db, "--rubric", "relevance", "--corpus", CORPUS
    )
    _one_line_error(capsys, *db, *HOLES_ARGS[:-1], 0)  # k 0
    missing = tmp_path / "missing.yaml"
    assert str(missing) in _one_line_error(
        capsys, *db, "--rubric", "relevance", "--holes", missing, RUN, "-k", 5
    )
    bad_run = tmp_path / "run.jsonl"
    bad_run.write_text('{"query_id": "q_faw", "ranking": "m1"}\n')
    assert str(bad_run) in _one_line_error(
        capsys, *db, "--rubric", "relevance", "--holes", GOLDEN, bad_run, "-k", 5
    )
    bad_corpus = tmp_path / "corpus.jsonl"
    bad_corpus.write_text('{"id": "zz1"}\n')
    err = _one_line_error(capsys, *db, *HOLES_ARGS, "--corpus", bad_corpus)
    assert str(bad_corpus) in err and "text" in err
    other = tmp_path / "other.jsonl"
    other.write_text('{"query_id": "q_other", "ranking": ["m1"]}\n')
    assert "share no query" in _one_line_error(
        capsys, *db, "--rubric", "relevance", "--holes", GOLDEN, other, "-k", 5
    )
    assert counts(demo_db) == before


def test_the_offline_judge_without_labels_makes_no_item(tmp_path, capsys) -> None:
    db = tmp_path / "empty.db"
    Store(db).close()
    before = counts(db)
    err = _one_line_error(capsys, "grade", "--db", db, *HOLES_ARGS, "--corpus", CORPUS)
    assert err.startswith("error: found 0 relevance labels")
    assert counts(db) == before


def test_a_dry_run_writes_nothing(demo_db, tmp_path, capsys) -> None:
    run = tmp_path / "run.jsonl"  # q_faw's top 5: zz1 m2 x3 m1 p1; zz1 is in no store
    run.write_text(RUN.read_text().replace('"ranking": ["m2", "x3"', '"ranking": ["zz1", "m2", "x3"'))
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text(json.dumps({"id": "zz1", "text": "Armyworm larvae in the maize funnel."}) + "\n")
    before = counts(demo_db)
    argv = ["grade", "--db", demo_db, "--rubric", "relevance", "--holes", GOLDEN, run, "-k", 5]
    code, out, err = cli(main, capsys, *argv, "--corpus", corpus, "--dry-run")
    assert code == 0, err
    assert "would grade 9 items (0 already done); no network" in out
    assert "dry run: 10 holes in the top 5 of 4 queries: 9 are items already, 1 would be made" in out
    assert counts(demo_db) == before


def test_a_batch_asks_only_the_holes(demo_db, capsys, fake_openai, monkeypatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "test")
    server = fake_openai(batch_polls=1)
    endpoint = ["--base-url", server.base_url, "--model", "fake-judge"]
    code, out, err = cli(main, capsys, "grade", "--db", demo_db, *HOLES_ARGS, *endpoint, "--batch")
    assert code == 0, err
    assert "submitted: 10 requests (0 of 10 already done)" in out
    assert "graded 0 of the 10 holes in the top 5 of 4 queries\n" in out
    batch_id = out.split("batch ", 1)[1].split(" ", 1)[0]
    code, out, err = cli(
        main, capsys, "batch", "collect", batch_id, "--db", demo_db, "--base-url", server.base_url
    )
    assert code == 0 and "10 rows stored" in out, (out, err)
    (pairs,) = graded_pairs(demo_db).values()
    assert pairs == HOLES
