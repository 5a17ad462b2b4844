"""Guidelines beside the item (issue #43, item 6): each rubric's guidelines versioned in the store
(append-only, who and when), each label recording the version in force, the judge's fingerprint
changed by an edit and only by one, ``python -m annotation guidelines show|set``, the Guidelines
page (admins) and the labelling pages' ``g`` key."""

from __future__ import annotations

import pytest

from annotation.__main__ import main
from annotation.render import plain
from annotation.rubrics import (
    FAITHFULNESS,
    MAX_GUIDELINES_CHARS,
    PREFERENCE,
    RELEVANCE,
    InvalidGuidelines,
    check_guidelines_text,
    default_guidelines,
)
from annotation.store import Store, StoreError
from judge.prompts import build_messages, fingerprint, judge_settings, prompt_sha
from tests.conftest import cli, integrity_errors, page_test, page_text


@pytest.fixture
def store(db_at):
    with Store(db_at) as opened:
        yield opened


def chunk_item(store: Store, query: str = "q1", chunk: str = "c1") -> int:
    with store.write() as db:
        db.execute("INSERT INTO queries (id, text) VALUES (?, 'a query')", [query])
        db.execute("INSERT INTO chunks (id, text) VALUES (?, 'a chunk')", [chunk])
        db.execute("INSERT INTO items (kind, query_id, chunk_id) VALUES ('chunk', ?, ?)", [query, chunk])
    return int(
        store.db.execute(
            "SELECT id FROM items WHERE query_id = ? AND chunk_id = ?", [query, chunk]
        ).fetchone()[0]
    )


def label_versions(store: Store) -> list[tuple[int | None, int | None]]:
    return [tuple(r) for r in store.db.execute("SELECT value, guidelines FROM labels ORDER BY id").fetchall()]


def test_two_edits_make_three_versions_and_labels_point_to_the_one_in_force(store) -> None:
    store.add_annotator("ann", "annotator")
    first, second = chunk_item(store, "q1", "c1"), chunk_item(store, "q2", "c2")
    assert store.guidelines_version("relevance") == 0
    built_in = store.guidelines("relevance")
    assert (built_in.version, built_in.who, built_in.edited) == (0, None, False)
    assert built_in.text == default_guidelines(RELEVANCE).text

    store.add_label(first, "ann", 2)  # under the built-in guidelines: version 0
    one = store.set_guidelines("relevance", "Grade 3 only for the exact answer.\r\n", "root")
    assert (one.version, one.who, one.text) == (1, "root", "Grade 3 only for the exact answer.")
    store.add_label(first, "ann", 3)  # a correction, under version 1
    two = store.set_guidelines("relevance", "Grade 3 only for the exact answer, in full.", "lead")
    assert (two.version, two.who) == (2, "lead")
    store.add_label(second, "ann", 1)
    store.undo(second, "ann")  # a retraction records no version: it grades nothing

    assert label_versions(store) == [(2, 0), (3, 1), (1, 2), (None, None)]
    history = store.guideline_history("relevance")
    assert [(h["version"], h["who"], h["labels"]) for h in history] == [
        (0, None, 1),
        (1, "root", 1),
        (2, "lead", 1),
    ]
    assert history[1]["created_at"] <= history[2]["created_at"]
    # every version is read back as it was written; the other rubrics are untouched
    assert store.guidelines("relevance", 1).text == "Grade 3 only for the exact answer."
    assert store.guidelines("relevance", 0).text == built_in.text
    assert store.guidelines("relevance").version == 2
    assert store.guidelines_version("faithfulness") == 0
    with pytest.raises(StoreError, match="no version 3"):
        store.guidelines("relevance", 3)


def test_the_same_text_adds_no_version_and_bad_text_adds_nothing(store) -> None:
    store.set_guidelines("faithfulness", "Only the contexts count.", "root")
    same = store.set_guidelines("faithfulness", "Only the contexts count.  \n\n", "other")
    assert (same.version, same.who) == (1, "root")  # trailing spaces and blank lines are not an edit
    with pytest.raises(InvalidGuidelines, match="empty"):
        store.set_guidelines("faithfulness", " \n\t\n", "root")
    with pytest.raises(InvalidGuidelines, match=f"at most {MAX_GUIDELINES_CHARS:,}"):
        store.set_guidelines("faithfulness", "x" * (MAX_GUIDELINES_CHARS + 1), "root")
    with pytest.raises(InvalidGuidelines, match="line 2 .* control character"):
        store.set_guidelines("faithfulness", "fine\nnot \x1b[31mfine", "root")
    with pytest.raises(StoreError, match="who made it"):
        store.set_guidelines("faithfulness", "new", " ")
    with pytest.raises(KeyError, match="unknown rubric"):
        store.set_guidelines("tone", "new", "root")
    assert [h["version"] for h in store.guideline_history("faithfulness")] == [0, 1]


def test_guidelines_are_append_only(store) -> None:
    store.set_guidelines("preference", "Prefer the answer that answers.", "root")
    with pytest.raises(integrity_errors(), match="append-only"):
        store.db.execute("UPDATE guidelines SET text = 'rewritten'")
    with pytest.raises(integrity_errors(), match="append-only"):
        store.db.execute("DELETE FROM guidelines")
    assert store.guidelines("preference").text == "Prefer the answer that answers."


def test_built_in_guidelines_define_every_grade_with_an_example() -> None:
    for rubric in (RELEVANCE, FAITHFULNESS, PREFERENCE):
        text = default_guidelines(rubric).text
        assert text.startswith(rubric.question)
        for wording in rubric.scale.values():
            assert wording in text  # the scale's own words: what the buttons and the judge say
            name = wording.partition(":")[0]
            assert f"({name}):" in text or f"- {name}: " in text.split("Worked examples.")[1]
        assert check_guidelines_text(text) == text


def test_edited_guidelines_are_in_the_judge_prompt_and_change_its_fingerprint() -> None:
    plain_settings = judge_settings("relevance", "m", "http://h/v1")
    assert "guidelines" not in plain_settings  # built-in guidelines: the fingerprint as before
    edited = judge_settings("relevance", "m", "http://h/v1", guidelines="Grade 3 only for the exact answer.")
    other = judge_settings("relevance", "m", "http://h/v1", guidelines="Grade 3 for any answer.")
    assert len({fingerprint(plain_settings), fingerprint(edited), fingerprint(other)}) == 3
    assert edited["prompt_sha"] == prompt_sha("relevance", "Grade 3 only for the exact answer.")
    assert edited["prompt_sha"] != plain_settings["prompt_sha"] == prompt_sha("relevance")
    system = build_messages("relevance", {"query": "q", "chunk": "c"}, edited["guidelines"])[0]["content"]
    assert "Guidelines (the same the people labelling read):\nGrade 3 only for the exact answer." in system
    assert "Guidelines" not in build_messages("relevance", {"query": "q", "chunk": "c"})[0]["content"]


def test_a_judge_planned_after_an_edit_is_a_new_version(store) -> None:
    from judge.client import Endpoint
    from judge.commands_text import judge_name
    from judge.jobs import plan_llm, register_judge

    endpoint = Endpoint(base_url="http://127.0.0.1:9/v1", model="m")
    before = plan_llm(store, "relevance", [], endpoint, "json_schema")
    assert "guidelines" not in before.settings
    register_judge(store, before.fingerprint, before.settings)
    store.set_guidelines("relevance", "Grade 3 only for the exact answer.", "root")
    after = plan_llm(store, "relevance", [], endpoint, "json_schema")
    assert after.fingerprint != before.fingerprint
    assert after.settings["guidelines"] == "Grade 3 only for the exact answer."
    assert (after.identity["name"], after.identity["version"]) == ("m/relevance", 2)
    assert after.identity["changed"] == ["guidelines", "prompt_sha"]
    assert judge_name(before, "m", "relevance").endswith("relevance, prompt v1)")
    assert judge_name(after, "m", "relevance") == (
        f"judge m/relevance v2 (new version; changed: guidelines, prompt_sha), fingerprint "
        f"{after.fingerprint[:16]} (m at http://127.0.0.1:9/v1, relevance, prompt v1 with the rubric's "
        "edited guidelines)"
    )


def test_a_live_judge_run_sends_the_edited_guidelines(tmp_path, fake_openai) -> None:
    """The runner's system message, built once per run, carries the guidelines of the plan's
    settings: what the endpoint receives is what the fingerprint hashes."""
    from denominator.demo import build_demo
    from judge import actions as judge_actions
    from judge.client import Endpoint

    db = str(tmp_path / "demo.db")
    build_demo(db)
    server = fake_openai()
    endpoint = Endpoint(model="m", base_url=server.base_url)
    with Store(db) as store:
        store.set_guidelines("relevance", "Grade 3 only for the exact answer.", "root")
        done = judge_actions.grade(store, "relevance", endpoint=endpoint, limit=2, api_key="test")
        stored = store.db.execute("SELECT DISTINCT fingerprint FROM judge_labels").fetchall()
    assert done.progress is not None and done.progress.done == 2
    systems = [m["content"] for r in server.requests for m in r["body"]["messages"] if m["role"] == "system"]
    assert len(systems) == 2 and all(s == system_prompt_with(EDITED_RULE) for s in systems)
    assert stored == [(done.plan.fingerprint,)]
    assert done.plan.settings["prompt_sha"] == prompt_sha("relevance", EDITED_RULE)
    from judge.batch import batch_lines  # a Batch API file asks the same

    lines = batch_lines(done.plan, endpoint, "json_schema")
    assert len(lines) == 2
    assert all(line["body"]["messages"][0]["content"] == system_prompt_with(EDITED_RULE) for line in lines)


EDITED_RULE = "Grade 3 only for the exact answer."


def system_prompt_with(guidelines: str) -> str:
    from judge.prompts import system_prompt

    return system_prompt("relevance", guidelines)


def test_cli_shows_and_sets_guidelines(tmp_path, capsys, monkeypatch) -> None:
    db = str(tmp_path / "g.db")
    Store(db).close()
    code, out, err = cli(main, capsys, "guidelines", "show", "relevance", "--db", db)
    assert code == 0 and out == default_guidelines(RELEVANCE).text + "\n"
    assert "relevance guidelines, version 0 (built in)" in err
    rules = tmp_path / "rules.txt"
    rules.write_text("Grade 3 only for the exact answer.\n", encoding="utf-8")
    code, out, err = cli(
        main, capsys, "guidelines", "set", "relevance", "--file", str(rules), "--by", "lead", "--db", db
    )
    assert code == 0 and out.startswith("set: relevance guidelines, version 1, by lead at ")
    code, out, err = cli(
        main, capsys, "guidelines", "set", "relevance", "--file", str(rules), "--by", "lead", "--db", db
    )
    assert code == 0 and out.startswith("unchanged: relevance guidelines, version 1, by lead at ")
    code, out, err = cli(main, capsys, "guidelines", "show", "relevance", "--db", db)
    assert out == "Grade 3 only for the exact answer.\n"
    code, out, err = cli(main, capsys, "guidelines", "show", "relevance", "--version", "0", "--db", db)
    assert out == default_guidelines(RELEVANCE).text + "\n"
    code, out, err = cli(main, capsys, "guidelines", "show", "relevance", "--version", "4", "--db", db)
    assert (code, out, err) == (2, "", "error: the relevance guidelines have no version 4\n")
    empty = tmp_path / "empty.txt"
    empty.write_text("\n", encoding="utf-8")
    code, out, err = cli(main, capsys, "guidelines", "set", "relevance", "--file", str(empty), "--db", db)
    assert code == 2 and err.startswith("error: the guidelines are empty")
    latin = tmp_path / "latin.txt"
    latin.write_bytes("caf\xe9".encode("latin-1"))
    code, out, err = cli(main, capsys, "guidelines", "set", "relevance", "--file", str(latin), "--db", db)
    assert (code, err) == (2, f"error: {latin}: not UTF-8 text (byte 3)\n")
    code, out, err = cli(main, capsys, "guidelines", "set", "tone", "--db", db)
    assert code == 2 and "invalid choice: 'tone'" in err
    with Store(db) as store:
        assert [h["version"] for h in store.guideline_history("relevance")] == [0, 1]


# ---------------------------------------------------------------- the pages


def test_the_g_key_shows_the_guidelines_in_force(demo_db) -> None:
    at = page_test("denominator.ui.label.render_label_chunks_page", state={"label:annotator": "ann"}).run()
    assert not at.exception
    guide = at.button(key="label:guide")
    assert (guide.label, guide.proto.shortcut) == ("Guidelines (g)", "g")
    assert "Worked examples." not in page_text(at)  # hidden until asked for
    chunk = at.text[1].value
    guide.click().run()
    text = page_text(at)
    assert "**Guidelines**: relevance guidelines, version 0 (built in)" in text
    assert default_guidelines(RELEVANCE).text in [c.value for c in at.code]
    assert at.text[1].value == chunk  # the same item on screen
    with Store(demo_db) as store:
        store.set_guidelines("relevance", "Grade 3 only for the exact answer.", "root")
    at.button(key="label:grade2").click().run()  # the next item, the guidelines still shown: version 1
    assert "**Guidelines**: relevance guidelines, version 1, by root at" in page_text(at)
    assert "Grade 3 only for the exact answer." in [c.value for c in at.code]
    at.button(key="label:guide").click().run()
    assert "Grade 3 only for the exact answer." not in [c.value for c in at.code]
    assert at.button(key="label:guide").label == "Guidelines (g)"
    with Store(demo_db) as store:
        assert store.db.execute(
            "SELECT l.value, l.guidelines FROM labels l JOIN annotators a ON a.id = l.annotator_id "
            "WHERE a.name = 'ann'"
        ).fetchall() == [(2, 1)]


def test_the_compare_page_shows_the_preference_guidelines(demo_db) -> None:
    at = page_test("denominator.ui.label.render_compare_page", state={"label:annotator": "ann"}).run()
    assert not at.exception
    at.button(key="label:pair:guide").click().run()
    assert default_guidelines(PREFERENCE).text in [c.value for c in at.code]


def guidelines_page(token: str):
    return page_test("denominator.ui.guidelines.render_guidelines_page", state={"access:token": token}).run()


def test_an_admin_edits_the_guidelines_on_the_page(demo_db) -> None:
    with Store(demo_db) as store:
        root = store.add_annotator("root", "admin")
        ann = store.add_annotator("ann", "annotator")
    at = guidelines_page(root)
    assert not at.exception and [t.value for t in at.title] == ["Guidelines"]
    assert "In force: version 0" in page_text(at)
    area = at.text_area(key="guidelines:text:relevance:0")
    assert area.value == default_guidelines(RELEVANCE).text
    area.set_value("Grade 3 only for the exact answer.")
    at.button(key="FormSubmitter:guidelines:edit:relevance-Save as a new version").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    text = page_text(at)
    assert "Saved: relevance guidelines, version 1, by root at" in text and "In force: version 1" in text
    rows = at.table[0].value.to_dict("records")
    assert [(r["version"], r["by"], r["labels made under it"]) for r in rows] == [
        ("0", "built in", "0"),
        ("1", "root", "0"),
    ]
    with Store(demo_db) as store:  # the demo's relevance labels were stored without a version
        demo_labels = store.labels_by_guidelines("relevance")
    assert set(demo_labels) == {None} and demo_labels[None] > 0
    assert (
        f"0 of the {demo_labels[None]} relevance label rows with a grade record the version they were "
        f"made under; {demo_labels[None]} do not" in text
    )
    # the same text again: no version added
    at.button(key="FormSubmitter:guidelines:edit:relevance-Save as a new version").click().run()
    assert "Unchanged: the text is the same as version 1" in page_text(at)
    # empty: refused in one line, nothing stored
    at.text_area(key="guidelines:text:relevance:1").set_value("  ")
    at.button(key="FormSubmitter:guidelines:edit:relevance-Save as a new version").click().run()
    assert plain(at.error[0].value).startswith("the guidelines are empty")
    with Store(demo_db) as store:
        assert [h["version"] for h in store.guideline_history("relevance")] == [0, 1]
        assert store.guidelines("relevance").who == "root"
    # another rubric
    at.radio(key="guidelines:rubric").set_value("faithfulness").run()
    assert at.text_area(key="guidelines:text:faithfulness:0").value == default_guidelines(FAITHFULNESS).text
    # an annotator cannot open it
    denied = guidelines_page(ann)
    assert "This page is for admins only" in plain(denied.error[0].value)
    assert not denied.text_area


# ---------------------------------------------------------------- golden.yaml's provenance


def test_golden_provenance_says_which_guidelines_the_labels_were_made_under(demo_db, tmp_path) -> None:
    import yaml

    from annotation import actions
    from annotation.formats.golden import read_golden
    from annotation.provenance import GuidelinesUsed

    never = tmp_path / "never.yaml"
    with Store(demo_db) as store:
        actions.export(store, "golden", never)
    untouched = never.read_bytes()
    assert b"guidelines" not in untouched  # never edited: the file is what it was before guidelines

    with Store(demo_db) as store:
        items = [
            r[0] for r in store.db.execute("SELECT id FROM items WHERE kind = 'chunk' ORDER BY id").fetchall()
        ]
        before = store.current_label_guidelines()  # the demo's labels: imported, none recorded
        assert set(before) == {None}
        store.add_annotator("eve", "annotator")
        store.add_label(items[0], "eve", 1)
        store.set_guidelines("relevance", "Grade 3 only for the exact answer.", "root")
        store.add_label(items[1], "eve", 3)
        store.add_label(items[2], "eve", 2)
        edited = tmp_path / "edited.yaml"
        actions.export(store, "golden", edited)
        mine = tmp_path / "eve.yaml"
        actions.export(store, "golden", mine, annotator="eve")
    section = yaml.safe_load(edited.read_text())["provenance"]["guidelines"]
    assert section == [{"version": 1, "labels": 2}, {"version": 0, "labels": 1}, {"labels": before[None]}]
    assert yaml.safe_load(mine.read_text())["provenance"]["guidelines"] == [
        {"version": 1, "labels": 2},
        {"version": 0, "labels": 1},
    ]
    read = read_golden(edited)  # the file reads back: the section is part of the format
    assert read.provenance is not None and read.provenance.guidelines == (
        GuidelinesUsed(1, 2),
        GuidelinesUsed(0, 1),
        GuidelinesUsed(None, before[None]),
    )
