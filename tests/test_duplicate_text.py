"""Duplicates by text (#40 item 5): with ``--corpus FILE`` holding the chunk texts, ``audit`` and
``check`` also count two different ids of the same normalised text (whitespace collapsed, case
folded) in one query's top k as a duplicate; without texts they say the duplicates are by id only."""

from __future__ import annotations

import json

from annotation.formats.records import read_text_keys, text_key
from calibration.__main__ import main
from calibration.audit import audit, same_text_pairs
from calibration.policy.finding_words import BY_ID_ONLY, BY_TEXT
from tests.conftest import cli

SAME = "Fall armyworm: scout twice a week."


def write_inputs(tmp_path):
    """Three queries at k = 3. q1: folderB/d1 has folderA/d1's text (case and spacing differ) in
    the top 3; q2: the same pair, but folderB/d1 is 4th (outside k), and a repeated id; q3: the
    pair and a third id of the same text, plus a repeated id, all in the top 3 of 5 positions."""
    qrels = tmp_path / "labels.qrels"
    qrels.write_text(
        "q1 0 folderA/d1 2\nq1 0 x 1\nq2 0 folderA/d1 2\nq2 0 x 1\nq3 0 folderA/d1 2\nq3 0 y 1\n",
        encoding="utf-8",
    )
    run = tmp_path / "run.jsonl"
    rankings = {
        "q1": ["folderA/d1", "x", "folderB/d1", "y"],
        "q2": ["folderA/d1", "x", "x", "folderB/d1"],
        "q3": ["folderB/d1", "folderA/d1", "folderC/d1", "y", "y"],
    }
    run.write_text(
        "".join(json.dumps({"query_id": q, "ranking": r}) + "\n" for q, r in rankings.items()),
        encoding="utf-8",
    )
    corpus = tmp_path / "corpus.jsonl"
    texts = {
        "folderA/d1": SAME,
        "folderB/d1": "  FALL armyworm:\n scout   twice a WEEK. ",
        "folderC/d1": SAME.lower(),
        "x": "Milk cooling within two hours.",
        "y": "Store grain below 13% moisture.",
    }
    corpus.write_text(
        "".join(json.dumps({"id": d, "text": t}) + "\n" for d, t in texts.items()), encoding="utf-8"
    )
    ids = tmp_path / "corpus.txt"  # one id per line: no text known
    ids.write_text("".join(f"{d}\n" for d in texts), encoding="utf-8")
    return str(qrels), str(run), str(corpus), str(ids)


def run_cli(capsys, *argv, expect):
    code, out, err = cli(main, capsys, *argv)
    assert code == expect, (code, out, err)
    return out


def test_text_key_collapses_whitespace_and_folds_case():
    assert text_key("Fall  armyworm\n\tSCOUT ") == text_key("fall armyworm scout")
    assert text_key("Straße") == text_key("STRASSE")  # casefold, not lower
    assert text_key("fall-armyworm") != text_key("fall armyworm")


def test_same_text_pairs_in_the_top_k_by_hand():
    keys = {"a": "K1", "b": "K2", "c": "K1", "d": "K1", "e": "K2"}
    # top 5: a b a(repeat: an id repeat, not a text pair) c d; e is 6th
    assert same_text_pairs(["a", "b", "a", "c", "d", "e"], keys, 5) == [["c", "a"], ["d", "a"]]
    assert same_text_pairs(["a", "b", "a", "c", "d", "e"], keys, 3) == []
    assert same_text_pairs(["a", "z", "c"], {"a": "K1"}, 3) == []  # no key: nothing to compare


def test_read_text_keys(tmp_path):
    _, _, corpus, ids = write_inputs(tmp_path)
    keys = read_text_keys(corpus)
    assert keys is not None and keys["folderA/d1"] == keys["folderB/d1"] == keys["folderC/d1"]
    assert keys["x"] != keys["y"]
    assert read_text_keys(ids) is None  # ids only: duplicates by id only


def test_check_fails_no_duplicates_on_the_same_text_with_corpus(tmp_path, capsys):
    qrels, run, corpus, _ = write_inputs(tmp_path)
    out = run_cli(
        capsys, "check", qrels, run, "-k", "3", "--corpus", corpus, "--no-store", "--format", "json", expect=1
    )
    report = json.loads(out)
    rule = next(r for r in report["rules"] if r["rule"] == "no_duplicates")
    # q1: 1 text pair; q2: 1 repeated id (its pair is 4th, outside k); q3: 2 text pairs and 1 repeat
    assert rule["status"] == "failed" and rule["queries"] == ["q1", "q2", "q3"]
    assert rule["note"] == BY_TEXT
    assert report["duplicates_by"] == "id and text"
    assert report["queries"]["q1"]["same_text"] == [["folderB/d1", "folderA/d1"]]
    assert report["queries"]["q2"]["same_text"] == [] and report["queries"]["q2"]["duplicates"] == ["x"]
    assert report["queries"]["q3"]["same_text"] == [
        ["folderA/d1", "folderB/d1"],
        ["folderC/d1", "folderB/d1"],
    ]
    text = run_cli(capsys, "check", qrels, run, "-k", "3", "--corpus", corpus, "--no-store", expect=1)
    assert "q1: [duplicate_text] folderB/d1 = folderA/d1 (same text)" in text
    assert f"no_duplicates = 0                FAILED for 3 of 3 queries: q1, q2, q3; {BY_TEXT}" in text


def test_check_without_texts_passes_by_id_only(tmp_path, capsys):
    qrels, run, _, ids = write_inputs(tmp_path)
    # q1 alone: the same text under two ids, no id repeated
    q1_run = tmp_path / "q1.jsonl"
    q1_run.write_text(open(run, encoding="utf-8").readline(), encoding="utf-8")
    for extra in ([], ["--corpus", ids]):  # no corpus, or ids without text
        out = run_cli(
            capsys, "check", qrels, str(q1_run), "-k", "3", *extra, "--no-store", "--format", "json", expect=1
        )
        report = json.loads(out)
        rule = next(r for r in report["rules"] if r["rule"] == "no_duplicates")
        assert rule["status"] == "passed" and rule["note"] == BY_ID_ONLY
        assert report["duplicates_by"] == "id" and "same_text" not in report["queries"]["q1"]
    text = run_cli(capsys, "check", qrels, str(q1_run), "-k", "3", "--no-store", expect=1)
    assert "no_duplicates = 0                passed (1 query); " + BY_ID_ONLY in text


def test_audit_json_names_the_pairs_and_counts(tmp_path, capsys):
    qrels, run, corpus, _ = write_inputs(tmp_path)
    args = ("audit", qrels, run, "-k", "3", "--fail-on", "duplicates", "--format", "json")
    report = json.loads(run_cli(capsys, *args, "--corpus", corpus, expect=1))
    assert report["duplicates_by"] == "id and text"
    q = report["queries"]
    assert q["q1"]["same_text"] == [["folderB/d1", "folderA/d1"]] and q["q1"]["duplicates"] == []
    assert q["q3"]["duplicates"] == ["y"] and len(q["q3"]["same_text"]) == 2
    # by hand: text pairs in q1 and q3, repeated ids in q2 and q3
    assert report["summary"]["findings"]["duplicate_text"] == 2
    assert report["summary"]["findings"]["duplicate_ids"] == 2
    assert report["gates"] == [{"rule": "duplicates", "passed": False, "queries": ["q1", "q2", "q3"]}]
    # without texts: the ids only, q1 passes the gate
    plain = json.loads(run_cli(capsys, *args, expect=1))
    assert plain["duplicates_by"] == "id" and "same_text" not in plain["queries"]["q1"]
    assert "duplicate_text" not in plain["summary"]["findings"]
    assert plain["gates"][0]["queries"] == ["q2", "q3"]
    text = run_cli(capsys, "audit", qrels, run, "-k", "3", expect=0)
    assert BY_ID_ONLY in text


def test_the_pure_audit_takes_the_keys(tmp_path):
    grades = {"q1": {"a": 1}}
    report = audit(grades, {"q1": ["a", "b", "c"]}, 3, min_grade=1, text_keys={"a": "K", "c": "K"})
    assert report["queries"]["q1"]["same_text"] == [["c", "a"]]
    assert "duplicate_text" in report["queries"]["q1"]["findings"]
    assert report["duplicates_by"] == "id and text"
    assert audit(grades, {"q1": ["a", "b", "c"]}, 3, min_grade=1)["duplicates_by"] == "id"


def test_the_store_gives_the_texts_when_no_corpus_is_given(capsys, tmp_path):
    """The issue: "when the text is known (corpus, store)". check --db reads the store's chunk texts
    (no --corpus): the same pairs as with the corpus file; a store whose texts are all different
    compares texts too, and needs no whole read of the run."""
    from annotation.store import Store

    qrels, run, corpus, _ = write_inputs(tmp_path)
    db = tmp_path / "s.db"
    with Store(db) as store:
        store.import_corpus([json.loads(line) for line in open(corpus).read().splitlines()])
    args = ["check", qrels, run, "-k", "3", "--rule", "rel_at_least_k=off", "--format", "json"]
    code, out, err = cli(main, capsys, *args, "--db", db)
    with_store = json.loads(out)
    code, out, err = cli(main, capsys, *args, "--corpus", corpus, "--no-store")
    with_corpus = json.loads(out)
    assert with_store["duplicates_by"] == "id and text"
    for qid in ("q1", "q2", "q3"):
        assert with_store["queries"][qid].get("same_text") == with_corpus["queries"][qid].get("same_text"), (
            qid
        )
    rule = next(r for r in with_store["rules"] if r["rule"] == "no_duplicates")
    assert rule["status"] == "failed" and "q1" in rule["queries"] and rule["note"] == BY_TEXT
    other = tmp_path / "other.db"
    with Store(other) as store:
        store.import_corpus(
            [{"id": doc, "text": f"text of {doc}"} for doc in ("folderA/d1", "folderB/d1", "x")]
        )
    code, out, err = cli(main, capsys, *args, "--db", other)
    report = json.loads(out)
    assert report["duplicates_by"] == "id and text"
    assert not any(q.get("same_text") for q in report["queries"].values())
