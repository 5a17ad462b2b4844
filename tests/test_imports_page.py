"""The Data page's imports (issue #16, build 5 and 6): a file in the wrong slot asks before it
lands, an import is retired and restored from the page (the counts follow at once), and a
refused import speaks of the page's boxes, never of a command's flags."""

from __future__ import annotations

import json

from annotation.exchange import login_name
from annotation.render import plain
from annotation.store import Store
from tests.conftest import page_test

SUBMIT = "FormSubmitter:data:import-Import"


def data_page(db, monkeypatch):
    monkeypatch.setenv("DENOMINATOR_DB", str(db))
    Store(db).close()
    return page_test("denominator.ui.data.render_data_page", state={"label:annotator": "ann"}).run(), db


def counts(at) -> dict[str, int]:
    return {row["table"]: row["rows"] for row in at.table[0].value.to_dict("records")}


def jsonl(rows: list[dict]) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in rows).encode()


QUERIES = jsonl([{"id": "q1", "text": "when to plant maize?"}, {"id": "q2", "text": "fall armyworm"}])
PASSAGE = "Scout maize twice a week from emergence; look for window panes on the leaves. " * 4
PASSAGES = jsonl([{"id": f"c{i}", "text": f"{PASSAGE} ({i})"} for i in range(3)])


def upload(at, field: str, name: str, data: bytes):
    at.file_uploader(key=f"data:up:{field}").set_value((name, data, "application/octet-stream"))
    return at


def test_wrong_slot_asks_then_retire_and_restore_from_the_page(db_at, monkeypatch) -> None:
    at, db = data_page(db_at, monkeypatch)
    upload(at, "queries", "queries.jsonl", QUERIES).button(key=SUBMIT).click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert "import 1: queries queries.jsonl, by " in plain(at.success[0].value)
    assert counts(at)["queries"] == 2

    # a corpus in the queries slot: what it looks like, nothing written, a button to go on
    at.file_uploader(key="data:up:queries").set_value(
        ("passages.jsonl", PASSAGES, "application/octet-stream")
    )
    at.button(key=SUBMIT).click().run()
    assert not at.exception
    warning = plain(at.warning[0].value)
    assert warning.startswith(
        "Nothing was imported: passages.jsonl, given as queries, looks like a corpus (chunks)"
    )
    assert "its texts are passages: median" in warning and "(a query is a sentence, under 200)" in warning
    assert counts(at)["queries"] == 2
    with Store(db) as store:
        assert [row["id"] for row in store.imports()] == [1]
    anyway = at.button(key="data:imports:anyway")
    assert plain(anyway.label) == "Import passages.jsonl as queries anyway"
    anyway.click().run()
    assert not at.exception and not at.warning
    assert "import 2: queries passages.jsonl, by " in plain(at.success[-1].value)
    assert counts(at)["queries"] == 5

    # the imports table, newest first; retire import 2 with a reason: the counts drop at once
    rows = at.table[-1].value.to_dict("records")
    assert [(r["id"], r["state"], r["rows it holds"]) for r in rows] == [
        ("2", "live", "3 queries"),
        ("1", "live", "2 queries"),
    ]
    at.selectbox(key="data:imports:chosen").set_value(2)
    at.text_input(key="data:imports:reason").set_value("a corpus, not queries")
    at.button(key="data:imports:retire").click().run()
    assert not at.exception and not at.error
    said = plain(at.success[0].value)
    assert said == (
        "Retired import 2 (queries passages.jsonl; 3 queries): its rows are out of queues, metrics, "
        "exports and reviews."
    )
    assert counts(at)["queries"] == 2
    assert "Not counted: the rows of 1 retired import (2; Imports, below)." in [
        plain(c.value) for c in at.caption
    ]
    who = f"{login_name()} (local mode)"
    state = at.table[-1].value.to_dict("records")[0]["state"]
    assert plain(state) == f"retired (by {who}, a corpus, not queries)"
    with Store(db) as store:
        assert store.queries_with_text() == {"q1": "when to plant maize?", "q2": "fall armyworm"}

    # restore: the button says so, and the three queries count again
    restore = at.button(key="data:imports:restore")
    assert restore.label == "Restore import 2"
    restore.click().run()
    assert plain(at.success[0].value).startswith("Restored import 2 (queries passages.jsonl; 3 queries)")
    assert counts(at)["queries"] == 5
    with Store(db) as store:
        assert [(r["state"], r["changed_by"]) for r in store.imports()] == [("live", None), ("live", who)]
        actions = store.db.execute("SELECT import_id, action FROM retirements ORDER BY id").fetchall()
    assert actions == [(2, "retire"), (2, "restore")]  # both are rows; nothing was updated


def test_a_refused_import_names_the_pages_boxes(db_at, monkeypatch) -> None:
    at, _ = data_page(db_at, monkeypatch)
    run = b"q1 Q0 c1 1 1.0 sys\n"
    upload(at, "run", "run.trec", run).button(key=SUBMIT).click().run()
    assert [plain(e.value) for e in at.error] == [
        "Nothing was imported: a run needs a name: fill in the run's name"
    ]
    at.button(key=SUBMIT).click()
    at.file_uploader(key="data:up:run").set_value(None)
    upload(at, "labels", "l.qrels", b"q1 0 c1 2\n").run()
    assert [plain(e.value) for e in at.error] == [
        "Nothing was imported: labels need the name of who made them: fill in who made the labels"
    ]
    at.button(key=SUBMIT).click()
    at.file_uploader(key="data:up:labels").set_value(None).run()
    assert [plain(e.value) for e in at.error] == [
        "Nothing was imported: nothing to import: no file was given: choose at least one file above"
    ]
    assert "--" not in " ".join(plain(e.value) for e in at.error)
