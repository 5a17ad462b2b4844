"""The BM25 baseline run: ranking, deterministic ties, the worked example, the CLI."""

from __future__ import annotations

import math
import os
import socket
import subprocess
import sys

import pytest

from annotation.__main__ import main
from annotation.baseline import add_baseline, bm25_run
from annotation.store import Store, StoreError
from denominator.cli import main as denominator_main
from tests.conftest import ROOT, cli


def rankings(db, name: str = "bm25-baseline") -> dict[str, list[tuple[str, float]]]:
    with Store(db) as store:
        rows = store.db.execute(
            """SELECT r.query_id, r.chunk_id, r.score FROM rankings r JOIN runs u ON u.id = r.run_id
               WHERE u.name = ? ORDER BY r.query_id, r.rank""",
            [name],
        ).fetchall()
    out: dict[str, list[tuple[str, float]]] = {}
    for qid, doc, score in rows:
        out.setdefault(qid, []).append((doc, score))
    return out


def test_scores_by_hand() -> None:
    """Lucene's BM25: sum over query terms of ln(1 + (N - df + 0.5) / (df + 0.5))
    * tf / (tf + k1 * (1 - b + b * dl / avgdl)), k1 = 1.5, b = 0.75."""
    chunks = {"a": "maize maize pests", "b": "dairy cows", "c": "maize"}  # dl 3, 2, 1; avgdl 2
    idf = math.log(1 + (3 - 2 + 0.5) / (2 + 0.5))  # "maize" is in 2 of 3 chunks
    ranked = dict(bm25_run(chunks, {"q": "Maize"}, depth=3).ordered_rows()["q"])
    assert ranked["a"] == pytest.approx(idf * 2 / (2 + 1.5 * (0.25 + 0.75 * 3 / 2)), rel=1e-12)
    assert ranked["c"] == pytest.approx(idf * 1 / (1 + 1.5 * (0.25 + 0.75 * 1 / 2)), rel=1e-12)
    assert ranked["b"] == 0.0


def test_term_matches_first_ties_by_id_descending() -> None:
    chunks = {
        "a": "maize storage",
        "b": "dairy cows",
        "c": "maize storage",  # same text as a: same score, c before a (id descending)
        "d": "poultry",
        "e": "maize",
    }
    run = bm25_run(chunks, {"q": "maize storage?"}, depth=10)
    ranked = run.ordered_rows()["q"]
    assert [doc for doc, _ in ranked] == ["c", "a", "e", "d", "b"]  # no shared term: score 0, id desc
    scores = [score for _, score in ranked]
    assert scores[0] == scores[1] > scores[2] > 0 and scores[3] == scores[4] == 0.0
    # the cut at depth follows the same order: of the tied pair, the higher id is kept
    assert run_docs(bm25_run(chunks, {"q": "maize storage?"}, depth=1)) == ["c"]
    assert run_docs(bm25_run(chunks, {"q": "maize storage?"}, depth=4)) == ["c", "a", "e", "d"]


def run_docs(run) -> list[str]:
    return [doc for doc, _ in run.ordered_rows()["q"]]


def test_ties_break_bytewise_and_unknown_words_score_zero() -> None:
    # uppercase sorts before lowercase bytewise; "é" (two bytes) after both
    chunks = {"Z": "nothing here", "a": "nothing here", "é": "nothing here", "x": "cattle"}
    run = bm25_run(chunks, {"q": "zebra"}, depth=3)
    assert run.ordered_rows()["q"] == [("é", 0.0), ("x", 0.0), ("a", 0.0)]


def test_lowercase_and_stopwords_no_stemming() -> None:
    chunks = {"a": "The COWS", "b": "the cow", "c": "of the and"}
    ranked = bm25_run(chunks, {"q": "cows"}, depth=3).ordered_rows()["q"]
    assert ranked[0][0] == "a" and ranked[1][1] == 0.0  # "cow" is not "cows": no stemmer
    assert bm25_run(chunks, {"q": "the"}, depth=3).ordered_rows()["q"][0][1] == 0.0  # a stopword


def test_bad_depth_or_method(tmp_path) -> None:
    with pytest.raises(StoreError, match="baseline depth 0; expected an integer >= 1"):
        bm25_run({"a": "x"}, {"q": "x"}, depth=0)
    with Store(tmp_path / "d.db") as store:
        with pytest.raises(StoreError, match="baseline method 'tfidf'; expected one of bm25"):
            add_baseline(store, method="tfidf")


@pytest.fixture
def demo_db(tmp_path, capsys):
    """Here the demo comes from the `demo` command itself (as `make run` builds it)."""
    db = tmp_path / "demo.db"
    assert cli(denominator_main, capsys, "demo", "--db", db)[0] == 0
    return db


def test_worked_example_baseline(demo_db, capsys, monkeypatch) -> None:
    def no_network(*args, **kwargs):
        raise AssertionError("the baseline must not touch the network")

    monkeypatch.setattr(socket.socket, "connect", no_network)
    monkeypatch.setattr(socket, "create_connection", no_network)
    with Store(demo_db) as store:
        before = store.counts()
    code, out, err = cli(main, capsys, "baseline", "--db", demo_db)
    assert code == 0 and err == f"database: {demo_db}\n"  # a command that writes names its database
    assert out.startswith("baseline run 'bm25-baseline' (bm25s ")
    assert out.endswith(", fetch): top 24 of 24 chunks for 4 queries: 1 run, 96 rankings, 0 unchanged\n")
    ranked = rankings(demo_db)
    assert sorted(ranked) == ["q_broad", "q_faw", "q_milk", "q_store"]
    assert all(len(rows) == 24 for rows in ranked.values())  # min(depth 100, 24 chunks)
    top3 = [doc for doc, _ in ranked["q_faw"][:3]]
    assert {"m1", "m2", "m3"} & set(top3), top3
    assert ranked["q_store"][0][0] == "s1"  # the one chunk about aflatoxin in stored maize
    with Store(demo_db) as store:
        assert store.db.execute("SELECT stage FROM runs WHERE name = 'bm25-baseline'").fetchone() == (
            "fetch",
        )
        after = store.counts()
    assert after["runs"] == before["runs"] + 1 and after["rankings"] == before["rankings"] + 96

    # the same name again: nothing changes
    code, out, _ = cli(main, capsys, "baseline", "--db", demo_db)
    assert code == 0 and out.endswith(": 0 runs, 0 rankings, 96 unchanged\n")
    with Store(demo_db) as store:
        assert store.counts() == after

    # another depth under another name: a second run, min(5, 24) per query
    code, out, _ = cli(
        main, capsys, "baseline", "--db", demo_db, "--method", "bm25", "--depth", "5", "--name", "bm25-5"
    )
    assert code == 0 and "top 5 of 24 chunks for 4 queries: 1 run, 20 rankings" in out
    short = rankings(demo_db, "bm25-5")
    assert short == {qid: rows[:5] for qid, rows in ranked.items()}

    # another depth under a stored name is refused, and nothing lands
    code, out, err = cli(main, capsys, "baseline", "--db", demo_db, "--depth", "5")
    assert code == 2 and out == ""
    assert err == (
        "error: run 'bm25-baseline' is stored with other rankings or stage; expected another run name\n"
    )


@pytest.mark.slow  # four CLI processes
def test_same_run_under_any_hash_seed(demo_db, capsys, tmp_path) -> None:
    """Tokens, vocabulary and ties do not depend on Python's string hashing."""
    assert cli(main, capsys, "baseline", "--db", demo_db)[0] == 0
    expected = rankings(demo_db)
    for seed in ("1", "2"):
        db = tmp_path / f"seed{seed}.db"
        env = {**os.environ, "PYTHONHASHSEED": seed}
        for argv in (["denominator", "demo", "--db", db], ["annotation", "baseline", "--db", db]):
            done = subprocess.run(
                [sys.executable, "-m", *map(str, argv)],
                cwd=ROOT,
                env=env,
                capture_output=True,
                text=True,
                timeout=120,
            )
            assert done.returncode == 0, done.stderr
        assert rankings(db) == expected


def test_an_empty_store_is_a_clear_error(tmp_path, capsys) -> None:
    db = tmp_path / "empty.db"
    code, out, err = cli(main, capsys, "baseline", "--db", db)  # no file: refused, none created
    assert code == 2 and out == "" and err.startswith(f"error: no such database: {db} ")
    assert not db.exists()
    Store(db).close()
    code, out, err = cli(main, capsys, "baseline", "--db", db)
    assert code == 2 and out == ""
    assert err == f"error: {db}: no chunks with text to rank; import a corpus (or a BEIR folder) first\n"
    corpus = tmp_path / "c.jsonl"
    corpus.write_text('{"id": "a", "text": "maize"}\n')
    assert cli(main, capsys, "import", "--db", db, "--corpus", corpus)[0] == 0
    code, out, err = cli(main, capsys, "baseline", "--db", db)
    assert code == 2 and err == (
        f"error: {db}: no queries with text to rank for; import queries (or a BEIR folder) first\n"
    )
    with Store(db) as store:
        assert store.counts()["runs"] == 0


def test_queries_without_text_are_skipped_and_said(tmp_path, capsys) -> None:
    db = tmp_path / "d.db"
    corpus = tmp_path / "c.jsonl"
    corpus.write_text('{"id": "a", "text": "maize"}\n{"id": "b", "text": "cows"}\n')
    queries = tmp_path / "q.tsv"
    queries.write_text("q1\tmaize pests\n")
    qrels = tmp_path / "l.qrels"
    qrels.write_text("q2 0 a 1\n")  # q2 known only from a label: no text
    args = ["import", "--db", db, "--corpus", corpus, "--queries", queries, "--labels", qrels]
    assert cli(main, capsys, *args, "--annotator", "ann")[0] == 0
    code, out, _ = cli(main, capsys, "baseline", "--db", db, "--depth", "1")
    assert code == 0 and out.endswith(
        "top 1 of 2 chunks for 1 query (1 query without text skipped): 1 run, 1 ranking, 0 unchanged\n"
    )
    ranked = rankings(db)
    assert list(ranked) == ["q1"] and ranked["q1"][0][0] == "a" and ranked["q1"][0][1] > 0
