"""NUL characters (#25): a text spelled with \\u0000 in a JSON or YAML file is refused at import
with one line naming the file, line and field, the same on SQLite and PostgreSQL (PostgreSQL
cannot hold one: a psycopg DataError traceback before, while SQLite stored it); a search for one
is a StoreError, not a driver's error."""

from __future__ import annotations

import json

import pytest

from annotation.__main__ import main
from annotation.store import Store, StoreError
from tests.conftest import cli

CASES = {
    "corpus.jsonl": ("--corpus", json.dumps({"id": "c1", "text": "a\u0000b"}) + "\n", "text"),
    "queries.jsonl": ("--queries", json.dumps({"id": "q1", "text": "milk\u0000"}) + "\n", "text"),
    "golden.yaml": ("--labels", 'queries:\n  - id: q1\n    text: "mi\\0lk"\n    grades: {c1: 1}\n', "text"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_nul_character_is_refused_at_import_on_both_backends(name, db_at, tmp_path, capsys):
    option, content, field = CASES[name]
    path = tmp_path / name
    path.write_text(content)
    extra = ["--annotator", "ann"] if option == "--labels" else []
    code, out, err = cli(main, capsys, "import", "--db", db_at, option, path, *extra)
    assert code == 2 and out == "" and err.count("\n") == 1 and "Traceback" not in err, err
    assert f"{path}:" in err and "NUL character (U+0000)" in err and field in err, err


def test_a_search_for_a_nul_character_is_a_store_error(db_at):
    with Store(db_at) as store, pytest.raises(StoreError, match="NUL character"):
        store.browse_items(query="a\u0000")
