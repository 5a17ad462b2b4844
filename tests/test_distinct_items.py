"""A labeller never sees "the same" item twice: the demo holds distinct items (by what the page
shows, not by ids), and an import does not add a trace whose question, contexts and answer are a
live trace's; it names it in its report and lands the rest."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from annotation.__main__ import main as annotation_main
from annotation.store import Store
from annotation.views import item_view
from tests.conftest import cli

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "worked-example"


def shown_items(store: Store) -> dict[str, list[str]]:
    """What the labelling page shows of every trace and pair item (for one person), as text."""
    shown: dict[str, list[str]] = {"trace": [], "pair": []}
    item_id = 1
    while (keys := store.item_keys(item_id)) is not None:
        if keys[0] in shown:
            view = item_view(store, item_id, "ann")
            view.pop("item_id")
            view.pop("shown", None)  # the pair's order for this person
            if keys[0] == "pair":
                view["answers"] = sorted(view["answers"])
            shown[keys[0]].append(json.dumps(view, sort_keys=True))
        item_id += 1
    return shown


def test_the_demo_shows_no_item_twice(demo_db):
    with Store(demo_db) as store:
        shown = shown_items(store)
    assert len(shown["trace"]) == 40 and len(shown["pair"]) == 4  # one pair per query
    for kind, views in shown.items():
        repeated = [view for view, n in Counter(views).items() if n > 1]
        assert repeated == [], f"{kind} items shown twice: {repeated[:2]}"
    for view in map(json.loads, shown["pair"]):
        first, second = view["answers"]
        assert first != second  # a pair whose two answers are one answer is no comparison


def test_the_demo_traces_file_is_distinct_by_content():
    rows = [json.loads(line) for line in (EXAMPLE / "traces.jsonl").read_text().splitlines()]
    contents = Counter(json.dumps([r["question"], r["contexts"], r["answer"]]) for r in rows)
    assert len(rows) == 40 and max(contents.values()) == 1


def _trace(tid: str, answer: str, contexts=("m1", "m2")) -> dict:
    return {
        "id": tid,
        "query_id": "q1",
        "system": "s",
        "question": "How do I store maize?",
        "contexts": list(contexts),
        "answer": answer,
    }


def test_an_import_skips_a_trace_identical_to_a_live_one(db_at):
    with Store(db_at) as store:
        assert store.import_traces([_trace("t1", "Dry it."), _trace("t2", "Bag it.")]) == {
            "traces": 2,
            "unchanged": 0,
            "identical": 0,
        }
        identical: list[tuple[str, str]] = []
        counts = store.import_traces(
            [
                _trace("t1", "Dry it."),  # the same trace again: unchanged
                _trace("t3", "Dry it."),  # t1's content under a new id: not an item
                _trace("t4", "Dry it.", contexts=("m2", "m1")),  # other contexts: a new item
                _trace("t5", "Cool it."),  # new
                _trace("t6", "Cool it."),  # t5's content, earlier in the same import
            ],
            identical,
        )
        assert counts == {"traces": 2, "unchanged": 1, "identical": 2}
        assert identical == [("t3", "t1"), ("t6", "t5")]
        assert [trace for _, trace, _ in store.trace_items()] == ["t1", "t2", "t4", "t5"]


def test_a_retired_trace_does_not_block_its_content(tmp_path, capsys):
    db = tmp_path / "store.db"
    first = tmp_path / "first.jsonl"
    first.write_text(json.dumps(_trace("t1", "Dry it.")) + "\n")
    again = tmp_path / "again.jsonl"
    again.write_text(json.dumps(_trace("t9", "Dry it.")) + "\n" + json.dumps(_trace("t8", "Sun it.")) + "\n")
    assert cli(annotation_main, capsys, "import", "--db", str(db), "--traces", str(first))[0] == 0
    code, out, err = cli(annotation_main, capsys, "import", "--db", str(db), "--traces", str(again))
    assert code == 0, err
    assert f"traces {again}: 1 trace, 0 unchanged, 1 identical" in out
    assert "  not imported: trace 't9': the same question, contexts and answer as trace 't1'" in out
    with Store(db) as store:
        assert [trace for _, trace, _ in store.trace_items()] == ["t1", "t8"]
        store.retire_import(1, "kim", "wrong file")
    code, out, err = cli(annotation_main, capsys, "import", "--db", str(db), "--traces", str(again))
    assert code == 0, err
    assert f"traces {again}: 1 trace, 1 unchanged" in out and "identical" not in out
    with Store(db) as store:
        assert [trace for _, trace, _ in store.trace_items()] == ["t8", "t9"]
