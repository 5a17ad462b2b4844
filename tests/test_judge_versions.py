"""Judges with names and versions, and drift caught (#15): the offline judge refitted on new labels
is the next version of one name, an LLM judge run with ``--name`` keeps that name and a changed
setting makes its next version, and the model the endpoint says it served is stored on every label
and read back as segments (the fake server's alias moves to a new model after 5 answers)."""

from __future__ import annotations

import hashlib
import json

import pytest
import sqlite_utils

from annotation.store import MIGRATIONS, Store, StoreError, changed_settings, default_judge_name
from judge.__main__ import main
from judge.jobs import grade_offline
from judge.prompts import fingerprint, judge_settings

OFFLINE = "offline-lexical/relevance"


def unlabelled_chunk_items(store: Store, n: int) -> list[int]:
    """The first n chunk items nobody has graded for relevance."""
    labelled = {int(i) for i, v in store.newest_rubric_values("chunk", "relevance") if v is not None}
    return [int(i) for i, _, _ in store.chunk_item_texts() if int(i) not in labelled][:n]


def llm_argv(db, server, *more: str) -> list[str]:
    base = ["grade", "--db", str(db), "--rubric", "relevance", "--judge", "openai"]
    return [*base, "--base-url", server.base_url, "--model", "fake-judge", "--limit", "6", *more]


# ---------------------------------------------------------------- names and versions


def test_default_names_and_what_changed() -> None:
    llm = judge_settings("relevance", "gpt-4.1-mini", "http://h/v1")
    assert default_judge_name(llm) == "gpt-4.1-mini/relevance"
    assert default_judge_name({"kind": "lexical", "rubric": "faithfulness", "model": "logistic"}) == (
        "offline-lexical/faithfulness"
    )
    assert changed_settings(llm, {**llm, "temperature": 0.7}) == ["temperature"]
    assert changed_settings(llm, {**llm, "prompt_sha": "edited", "model": "m2"}) == ["model", "prompt_sha"]
    # what a judge measured is not what it is; the training rows' digest reads as trained_on
    lexical = {"trained_on": [1, 2], "trained_on_sha": "a", "agreement": {"n": 2}, "fingerprint": "x"}
    assert changed_settings(lexical, {**lexical, "trained_on_sha": "b", "agreement": {"n": 3}}) == [
        "trained_on"
    ]
    assert changed_settings({"seed": 0}, {"seed": 0, "extra": None}) == ["extra"]  # missing != None


def test_three_refits_of_the_offline_judge_are_versions_of_one_name(demo_db, capsys) -> None:
    argv = ["grade", "--db", str(demo_db), "--rubric", "relevance"]  # no endpoint: the offline judge
    assert main(argv) == 0
    assert capsys.readouterr().out.startswith(f"offline judge {OFFLINE} v1 (current), fingerprint ")
    grades = iter([0, 3, 1, 2])
    added = []
    for _ in range(2):  # label two more items, refit
        with Store(demo_db) as store:
            for item in unlabelled_chunk_items(store, 2):
                store.add_label(item, "ann", next(grades))
                added.append(item)
        assert main([*argv, "--dry-run"]) == 0
        dry = capsys.readouterr().out
        assert " (new version; changed: trained_on), fingerprint " in dry
        assert main(argv) == 0
        capsys.readouterr()
    with Store(demo_db) as store:
        versions = store.judge_versions(OFFLINE)
        assert [(v["version"], v["current"], v["changed"]) for v in versions] == [
            (1, False, []),
            (2, False, ["trained_on"]),
            (3, True, ["trained_on"]),
        ]
        assert [len(v["settings"]["trained_on"]) for v in versions] == [20, 22, 24]
        assert [v["labels"] for v in versions] == [40, 40, 40]
        assert len({v["fingerprint"] for v in versions}) == 3
        assert [j["name"] for j in store.judges()] == [OFFLINE] * 3
        # a refit on the same labels is the same judge: no new version
        again = grade_offline(store, "relevance")
        assert again["identity"] == {
            "name": OFFLINE,
            "version": 3,
            "current": True,
            "changed": ["trained_on"],
            "registered": True,
        }
        # a grade corrected on an item it was trained on (same items): the next version all the same
        store.add_label(added[0], "ann", 3)  # was 0; ann alone graded it
        fourth = grade_offline(store, "relevance")["identity"]
        assert (fourth["version"], fourth["changed"]) == (4, ["trained_on"])
        assert len(store.judge_versions(OFFLINE)[3]["settings"]["trained_on"]) == 24
        assert store.judge_versions("no such judge") == []
    assert main(["list", "--db", str(demo_db)]) == 0
    listing = capsys.readouterr().out.splitlines()
    assert [line.split(", fingerprint ")[0] for line in listing] == [
        f"{OFFLINE} v1",
        f"{OFFLINE} v2",
        f"{OFFLINE} v3",
        f"{OFFLINE} v4 (current)",
    ]
    assert ", first version  lexical" in listing[0] and ", changed: trained_on  lexical" in listing[3]


def test_an_llm_judge_keeps_its_name_and_a_new_temperature_is_version_2(demo_db, capsys, fake_openai) -> None:
    server = fake_openai()
    assert main(llm_argv(demo_db, server, "--name", "house-judge", "--dry-run")) == 0
    assert capsys.readouterr().out.startswith("judge house-judge v1 (new), fingerprint ")
    assert main(llm_argv(demo_db, server, "--name", "house-judge")) == 0
    out = capsys.readouterr().out
    assert out.startswith("judge house-judge v1 (current), fingerprint ") and "6 calls made" in out
    hotter = ["--name", "house-judge", "--temperature", "0.5"]
    assert main(llm_argv(demo_db, server, *hotter, "--dry-run")) == 0
    assert "judge house-judge v2 (new version; changed: temperature)" in capsys.readouterr().out
    assert main(llm_argv(demo_db, server, *hotter)) == 0
    assert capsys.readouterr().out.startswith("judge house-judge v2 (current)")
    # the first settings again, without --name: the same fingerprint, so the same judge (v1)
    assert main(llm_argv(demo_db, server)) == 0
    assert "judge house-judge v1 (an earlier version, not current)" in capsys.readouterr().out
    with Store(demo_db) as store:
        versions = store.judge_versions("house-judge")
        assert [(v["version"], v["current"], v["changed"], v["labels"]) for v in versions] == [
            (1, False, [], 6),
            (2, True, ["temperature"], 6),
        ]
        assert versions[1]["settings"]["temperature"] == 0.5
        # another prompt text under the same name: the next version, and changed names it
        settings = {**versions[1]["settings"], "prompt_sha": "0" * 64}
        third = store.register_judge(fingerprint(settings), settings, "house-judge")
        assert (third["version"], third["changed"]) == (3, ["prompt_sha"])
        assert [j["current"] for j in store.judge_versions("house-judge")] == [False, False, True]
    assert sum(server.served.values()) == 12  # the earlier version's answers were all there: no call


def test_a_name_is_refused_when_it_cannot_be_this_judges(demo_db, capsys, fake_openai) -> None:
    server = fake_openai()
    assert main(llm_argv(demo_db, server)) == 0  # default name: fake-judge/relevance
    capsys.readouterr()
    assert main(llm_argv(demo_db, server, "--name", "renamed")) == 2  # same fingerprint, another name
    assert "is named 'fake-judge/relevance'; a judge keeps its first name" in capsys.readouterr().err
    faithful = ["grade", "--db", str(demo_db), "--rubric", "faithfulness", "--judge", "openai"]
    faithful += ["--base-url", server.base_url, "--model", "fake-judge", "--dry-run"]
    assert main([*faithful, "--name", "fake-judge/relevance"]) == 2
    assert "grades relevance; a faithfulness judge needs another name" in capsys.readouterr().err
    for bad in ("  ", "two\nlines", "x" * 121):
        assert main(llm_argv(demo_db, server, "--name", bad, "--dry-run")) == 2
        err = capsys.readouterr().err
        assert err.startswith("error: ") and err.count("\n") == 1


def test_an_old_store_gets_the_default_names_in_creation_order(tmp_path) -> None:
    path = tmp_path / "old.db"
    db = sqlite_utils.Database(path)
    MIGRATIONS.apply(db, stop_before="m009_judge_names")
    lexical = {"kind": "lexical", "rubric": "relevance", "endpoint": "offline", "agreement": {"n": 20}}
    rows = [  # (fingerprint, kind, model, endpoint, created_at, settings)
        ("fp-lex-1", "lexical", "logistic", "offline", "2026-11-01", {**lexical, "trained_on": [1, 2]}),
        ("fp-llm-1", "llm", "gpt-x", "http://h/v1", "2026-11-02", {"kind": "llm", "temperature": 0.0}),
        ("fp-lex-2", "lexical", "logistic", "offline", "2026-11-03", {**lexical, "trained_on": [1, 2, 3]}),
    ]
    for fp, kind, model, endpoint, created, settings in rows:
        db.execute(
            "INSERT INTO judges (fingerprint, kind, model, endpoint, rubric, settings, created_at)"
            " VALUES (?, ?, ?, ?, 'relevance', ?, ?)",
            [fp, kind, model, endpoint, json.dumps(settings), created],
        )
    db.execute("INSERT INTO items (id, kind) VALUES (1, 'chunk')")
    db.execute(
        "INSERT INTO judge_labels (item_id, fingerprint, repeat, value, created_at)"
        " VALUES (1, 'fp-llm-1', 0, 2, '2026-11-02')"
    )
    db.conn.close()
    with Store(path) as store:
        judges = {j["fingerprint"]: j for j in store.judges()}
        assert [(j["name"], j["version"], j["current"], j["changed"]) for j in judges.values()] == [
            (OFFLINE, 1, False, []),
            ("gpt-x/relevance", 1, True, []),
            (OFFLINE, 2, True, ["trained_on"]),
        ]
        assert store.judge_values("fp-llm-1") == [
            {
                "id": 1,
                "item_id": 1,
                "ab_order": None,
                "repeat": 0,
                "value": 2,
                "reason": None,
                "served_model": None,
                "system_fingerprint": None,
            }
        ]
        segment = store.served_models("fp-llm-1")
        assert [(s["served_model"], s["n"]) for s in segment] == [(None, 1)]  # not recorded then
        # the next fit continues the line
        assert store.register_judge("fp-lex-3", {**lexical, "trained_on": [1, 2, 3, 4]})["version"] == 3


# ---------------------------------------------------------------- drift


def test_a_served_model_that_changes_mid_run_is_two_segments(demo_db, capsys, fake_openai) -> None:
    server = fake_openai(
        system_fingerprint="fp_before", served_model_after={"n": 5, "model": "gpt-x-2026-06"}
    )
    argv = llm_argv(demo_db, server, "--concurrency", "1")
    argv[argv.index("--limit") + 1] = "8"
    assert main(argv) == 0
    assert "8 calls made" in capsys.readouterr().out
    with Store(demo_db) as store:
        (judge,) = store.judges()
        fp = judge["fingerprint"]
        values = store.judge_values(fp)
        assert len(values) == 8 and all(v["served_model"] for v in values)
        segments = store.served_models(fp)
    assert [(s["served_model"], s["system_fingerprint"], s["n"]) for s in segments] == [
        ("fake-judge", "fp_before", 5),
        ("gpt-x-2026-06", "fp_" + hashlib.sha256(b"gpt-x-2026-06").hexdigest()[:10], 3),
    ]
    first, second = segments
    assert (
        first["to_label_id"] - first["from_label_id"] == 4 and second["from_label_id"] > first["to_label_id"]
    )
    assert first["first_at"] <= first["last_at"] <= second["first_at"] <= second["last_at"]
    assert judge["name"] == "fake-judge/relevance" and judge["version"] == 1  # the fingerprint did not move


def test_served_model_segments_follow_label_order_and_skip_calls_without_a_reply(demo_db) -> None:
    with Store(demo_db) as store:
        settings = judge_settings("relevance", "alias", "http://h/v1")
        fp = fingerprint(settings)
        store.register_judge(fp, settings)
        served = [("m1", "s1"), ("m1", "s1"), None, ("m1", "s1"), ("m2", "s2"), ("m1", "s1"), ("m1", None)]
        rows = []
        for item, pair in enumerate(served, start=1):
            row = {"item_id": item, "fingerprint": fp, "repeat": 0}
            if pair is None:  # a call that failed with no reply: nobody served it
                rows.append({**row, "error": "call failed: HTTP 503 after 7 attempts"})
            else:
                rows.append({**row, "value": 1, "served_model": pair[0], "system_fingerprint": pair[1]})
        store.add_judge_labels(rows)
        segments = store.served_models(fp)
    assert [(s["served_model"], s["system_fingerprint"], s["n"]) for s in segments] == [
        ("m1", "s1", 3),
        ("m2", "s2", 1),
        ("m1", "s1", 1),
        ("m1", None, 1),
    ]
    # the failed call's row lies inside the first segment's span and is not counted
    assert segments[0]["to_label_id"] - segments[0]["from_label_id"] == 3


def test_register_judge_refuses_a_bad_name(demo_db) -> None:
    with Store(demo_db) as store:
        settings = judge_settings("relevance", "m", "http://h/v1")
        with pytest.raises(StoreError, match="control character"):
            store.register_judge(fingerprint(settings), settings, "a\tb")
        assert store.judges() == []
