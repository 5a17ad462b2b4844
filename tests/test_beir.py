"""BEIR folders: the reader (strict, exact messages) and python -m annotation import --beir."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from annotation.__main__ import main
from annotation.exchange import login_name
from annotation.formats.beir import InvalidBeir, read_beir
from annotation.store import Store
from tests.conftest import cli

HEADER = "query-id\tcorpus-id\tscore\n"


def write_beir(root: Path, corpus=None, queries=None, qrels=None) -> Path:
    """A small BEIR folder; each part may be replaced by the caller (text or a list of objects)."""
    corpus = (
        corpus
        if corpus is not None
        else [
            {
                "_id": "001",
                "title": "Fall armyworm",
                "text": "Scout maize twice a week.",
                "metadata": {"url": "x"},
            },
            {"_id": "1", "title": "", "text": "Dry maize to 13% moisture before storage."},
            {"_id": "d3", "text": "Feed dairy cows a balanced ration."},
        ]
    )
    queries = (
        queries
        if queries is not None
        else [
            {"_id": "q1", "text": "How do I control fall armyworm?", "metadata": {}},
            {"_id": "007", "text": "How do I store maize?"},
        ]
    )
    qrels = (
        qrels
        if qrels is not None
        else {
            "test": HEADER + "q1\t001\t2\nq1\td3\t0\n007\t1\t1\n",
            "dev": HEADER + "007\t1\t3\n",
        }
    )
    root.mkdir(parents=True, exist_ok=True)
    for name, part in (("corpus.jsonl", corpus), ("queries.jsonl", queries)):
        text = part if isinstance(part, (str, bytes)) else "".join(json.dumps(o) + "\n" for o in part)
        (root / name).write_bytes(text if isinstance(text, bytes) else text.encode())
    (root / "qrels").mkdir(exist_ok=True)
    for split, text in qrels.items():
        (root / "qrels" / f"{split}.tsv").write_bytes(text if isinstance(text, bytes) else text.encode())
    return root


def test_read_beir(tmp_path) -> None:
    chunks, queries, qrels = read_beir(write_beir(tmp_path / "b"))
    assert chunks == [
        {
            "id": "001",
            "text": "Fall armyworm\n\nScout maize twice a week.",
            "title": "Fall armyworm",
            "metadata": {"url": "x"},
        },
        {"id": "1", "text": "Dry maize to 13% moisture before storage."},  # empty title: the text alone
        {"id": "d3", "text": "Feed dairy cows a balanced ration."},
    ]
    assert queries == {"q1": "How do I control fall armyworm?", "007": "How do I store maize?"}
    assert list(qrels) == ["dev", "test"]  # splits in name order
    assert qrels["test"].grades == {"q1": {"001": 2, "d3": 0}, "007": {"1": 1}}  # ids stay text
    assert qrels["dev"].grades == {"007": {"1": 3}}
    assert qrels["dev"].path == str(tmp_path / "b" / "qrels" / "dev.tsv")


def test_title_alone_and_crlf(tmp_path) -> None:
    root = write_beir(
        tmp_path / "b",
        corpus='{"_id": "a", "title": "Only a title", "text": ""}\r\n',
        qrels={"test": "query-id\tcorpus-id\tscore\r\nq1\ta\t1\r\n"},
    )
    chunks, _, qrels = read_beir(root)
    assert chunks == [{"id": "a", "text": "Only a title", "title": "Only a title"}]
    assert qrels["test"].grades == {"q1": {"a": 1}}


def _bad_cases(tmp_path: Path) -> list[tuple[dict, str]]:
    b = tmp_path / "b"
    return [
        (
            {"qrels": {"test": "qid\tdocid\tscore\nq1\t001\t1\n"}},
            f"{b}/qrels/test.tsv:1: expected the header 'query-id<TAB>corpus-id<TAB>score', "
            "got 'qid\\tdocid\\tscore'",
        ),
        (
            {"qrels": {"test": HEADER + "q1\t001\t1\nq1\td3\t1.0\n"}},
            f"{b}/qrels/test.tsv:3: score: expected an integer, got '1.0'",
        ),
        (
            {"qrels": {"test": HEADER + "q1\t001\thigh\n"}},
            f"{b}/qrels/test.tsv:2: score: expected an integer, got 'high'",
        ),
        (
            {"qrels": {"test": HEADER + "q1 001 1\n"}},
            f"{b}/qrels/test.tsv:2: expected 3 TAB-separated columns (query-id, corpus-id, score), got 1",
        ),
        (
            {"qrels": {"test": HEADER + "q1\t001\t1\nq1\t001\t2\n"}},
            f"{b}/qrels/test.tsv:3: score: query 'q1' document '001' scored 2 here and 1 on line 2; "
            "expected one score per pair",
        ),
        (
            {"qrels": {"test": HEADER}},
            f"{b}/qrels/test.tsv: no judgments after the header; expected query-id, corpus-id, score lines",
        ),
        (
            {"qrels": {"test": HEADER + "q 1\t001\t1\n"}},
            f"{b}/qrels/test.tsv:2: query-id: 'q 1': expected a non-empty id without spaces",
        ),
        (
            {"corpus": '{"_id": "a", "text": "x"}\n{"title": "t", "text": "no id"}\n'},
            f"{b}/corpus.jsonl:2: _id: missing; expected the id as a string",
        ),
        (
            {"corpus": '{"_id": 1, "text": "x"}\n'},
            f'{b}/corpus.jsonl:1: _id: expected a non-empty string (ids are text: write "1", not 1), got 1',
        ),
        (
            {"corpus": '{"_id": "a", "text": "x"}\n\n{"_id": "a", "text": "y"}\n'},
            f"{b}/corpus.jsonl:3: _id: 'a' already on line 1; expected each id once",
        ),
        (
            {"corpus": '{"_id": "a"}\n'},
            f"{b}/corpus.jsonl:1: text: missing; expected a string",
        ),
        (
            {"corpus": '{"_id": "a", "title": "", "text": " "}\n'},
            f"{b}/corpus.jsonl:1: text: empty and no title; expected the document's text",
        ),
        (
            {"corpus": '{"_id": "a", "text": "x", "metadata": []}\n'},
            f"{b}/corpus.jsonl:1: metadata: expected an object",
        ),
        (
            {"corpus": '{"_id": "a", "text": "x"\n'},
            f"{b}/corpus.jsonl:1: not valid JSON (Expecting ',' delimiter); expected one object per line",
        ),
        (
            {"corpus": b'{"_id": "a", "text": "caf\xe9"}\n'},
            f"{b}/corpus.jsonl:1: byte 0xe9 is not UTF-8; expected UTF-8 text",
        ),
        (
            {"queries": b'{"_id": "q1", "text": "ok"}\n{"_id": "q2", "text": "\xff"}\n'},
            f"{b}/queries.jsonl:2: byte 0xff is not UTF-8; expected UTF-8 text",
        ),
        (
            {"qrels": {"test": HEADER.encode() + b"q1\t\xfe\t1\n"}},
            f"{b}/qrels/test.tsv:2: byte 0xfe is not UTF-8; expected UTF-8 text",
        ),
        (
            {"queries": '{"_id": "q1", "text": ""}\n'},
            f"{b}/queries.jsonl:1: text: empty; expected the query text",
        ),
        (
            {"queries": '["q1", "text"]\n'},
            f'{b}/queries.jsonl:1: expected an object {{"_id": ..., "text": ...}}',
        ),
        (
            {"qrels": {}},
            f"{b}/qrels: no .tsv files; expected at least one split such as qrels/test.tsv",
        ),
    ]


def test_malformed_folders_name_file_line_and_field(tmp_path) -> None:
    for parts, message in _bad_cases(tmp_path):
        root = tmp_path / "b"
        shutil.rmtree(root, ignore_errors=True)
        write_beir(root, **parts)
        with pytest.raises(InvalidBeir) as caught:
            read_beir(root)
        assert str(caught.value) == message, parts


def test_not_a_folder(tmp_path) -> None:
    with pytest.raises(InvalidBeir) as caught:
        read_beir(tmp_path / "nowhere")
    assert str(caught.value) == (
        f"{tmp_path}/nowhere: no such folder; expected a BEIR folder with corpus.jsonl, queries.jsonl "
        "and qrels/*.tsv"
    )
    (tmp_path / "b").mkdir()
    with pytest.raises(InvalidBeir) as caught:
        read_beir(tmp_path / "b")
    assert str(caught.value) == f"{tmp_path}/b/corpus.jsonl: no such file; expected a readable file"


def test_import_beir_lands_everything_once(tmp_path, capsys) -> None:
    root = write_beir(tmp_path / "b")
    db = tmp_path / "d.db"
    code, out, err = cli(main, capsys, "import", "--db", db, "--beir", root)
    assert code == 0 and err == f"database: {db} (created)\n"
    assert out == (
        f"corpus {root}/corpus.jsonl: 3 added, 0 filled, 0 unchanged\n"
        f"queries {root}/queries.jsonl: 2 added, 0 filled, 0 unchanged\n"
        f"labels {root}/qrels/dev.tsv by 'beir:dev': 1 label, 0 unchanged\n"
        f"labels {root}/qrels/test.tsv by 'beir:test': 3 labels, 0 unchanged\n"
        f"import 1: BEIR b, by {login_name()}\n"
        "store now: 2 queries, 3 chunks, 0 runs, 0 rankings, 0 traces, 3 items, 2 annotators, 4 labels\n"
    )
    code, out, _ = cli(main, capsys, "import", "--db", db, "--beir", root)  # again: nothing changes
    assert code == 0
    assert "3 unchanged" in out.splitlines()[0] and "1 label," not in out and "3 labels" not in out
    assert out.splitlines()[-1].endswith("3 items, 2 annotators, 4 labels")
    with Store(db) as store:
        assert store.export_qrels("beir:test").grades == {"q1": {"001": 2, "d3": 0}, "007": {"1": 1}}
        assert store.export_qrels("beir:dev").grades == {"007": {"1": 3}}
        text, meta = store.db.execute("SELECT text, meta FROM chunks WHERE id = '001'").fetchone()
        assert text == "Fall armyworm\n\nScout maize twice a week."
        assert json.loads(meta) == {"title": "Fall armyworm", "metadata": {"url": "x"}}
        assert store.db.execute("SELECT text FROM queries WHERE id = '007'").fetchone() == (
            "How do I store maize?",
        )


@pytest.mark.parametrize("grade", ["4", "-1"])
def test_a_grade_off_the_scale_writes_nothing(tmp_path, capsys, grade) -> None:
    root = write_beir(tmp_path / "b", qrels={"test": HEADER + f"q1\t001\t2\n007\t1\t{grade}\n"})
    db = tmp_path / "d.db"
    code, out, err = cli(main, capsys, "import", "--db", db, "--beir", root)
    assert code == 2 and out == ""
    assert err == (
        f"error: {root}/qrels/test.tsv:3: query '007' chunk '1': "
        f"grade {grade} is not on the relevance scale; expected one of 0, 1, 2, 3\n"
    )
    with Store(db) as store:  # corpus and queries of the same command did not land either
        counts = store.counts()
        assert counts["chunks"] == counts["queries"] == counts["labels"] == counts["annotators"] == 0


def test_a_malformed_folder_through_the_cli(tmp_path, capsys) -> None:
    root = write_beir(tmp_path / "b", qrels={"test": HEADER + "q1\t001\tone\n"})
    code, out, err = cli(main, capsys, "import", "--db", tmp_path / "d.db", "--beir", root)
    assert code == 2 and out == ""
    assert err == f"error: {root}/qrels/test.tsv:2: score: expected an integer, got 'one'\n"


def zipped(root: Path, top: str = "") -> bytes:
    """A BEIR folder as the bytes of a zip, its files under ``top`` (or at the root)."""
    import io
    import zipfile

    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for path in sorted(p for p in root.rglob("*") if p.is_file()):
            archive.write(path, str(Path(top) / path.relative_to(root)))
    return buffer.getvalue()


@pytest.mark.parametrize("top", ["", "scifact"])
def test_a_zipped_folder_unpacks_to_the_folder_holding_the_corpus(tmp_path, top) -> None:
    from annotation.formats.beir import unpack_beir_zip

    (tmp_path / "up.zip").write_bytes(zipped(write_beir(tmp_path / "b"), top))
    folder = unpack_beir_zip(tmp_path / "up.zip", tmp_path / "out", name="up.zip")
    assert folder == tmp_path / "out" / top if top else folder == tmp_path / "out"
    chunks, queries, splits = read_beir(folder)
    assert (len(chunks), sorted(queries), sorted(splits)) == (3, ["007", "q1"], ["dev", "test"])


def test_a_zip_that_leaves_its_folder_or_holds_no_corpus_is_refused_before_unpacking(tmp_path) -> None:
    import zipfile

    from annotation.formats.beir import unpack_beir_zip

    cases = {
        "slip.zip": (
            [("corpus.jsonl", "{}"), ("../evil.txt", "x")],
            "member '../evil.txt' leaves the folder",
        ),
        "abs.zip": ([("/etc/evil", "x")], "member '/etc/evil' leaves the folder"),
        "none.zip": ([("readme.txt", "x")], "no corpus.jsonl; expected a zipped BEIR folder"),
        "two.zip": ([("a/corpus.jsonl", "{}"), ("b/corpus.jsonl", "{}")], "2 corpus.jsonl files"),
    }
    for name, (members, message) in cases.items():
        with zipfile.ZipFile(tmp_path / name, "w") as archive:
            for member, text in members:
                archive.writestr(member, text)
        with pytest.raises(InvalidBeir, match=message.replace("(", r"\(").replace(".", r"\.")) as caught:
            unpack_beir_zip(tmp_path / name, tmp_path / f"out-{name}", name=name)
        assert str(caught.value).startswith(name) and not (tmp_path / f"out-{name}").exists()
    (tmp_path / "text.zip").write_text("not a zip")
    with pytest.raises(InvalidBeir, match="text.zip: not a zip file"):
        unpack_beir_zip(tmp_path / "text.zip", tmp_path / "o", name="text.zip")


def test_the_data_page_imports_a_zipped_beir_folder(tmp_path, monkeypatch) -> None:
    from annotation.render import plain
    from tests.conftest import page_test

    monkeypatch.setenv("DENOMINATOR_DB", str(tmp_path / "d.db"))
    Store(tmp_path / "d.db").close()
    at = page_test("denominator.ui.data.render_data_page", state={"label:annotator": "ann"}).run()
    at.file_uploader(key="data:up:beir").set_value(
        ("scifact.zip", zipped(write_beir(tmp_path / "b"), "scifact"), "application/zip")
    )
    at.button(key="FormSubmitter:data:import-Import").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    message = plain(at.success[0].value)
    assert "corpus scifact.zip/corpus.jsonl: 3 added" in message and "denominator-" not in message
    assert "labels scifact.zip/qrels/test.tsv by 'beir:test': 3 labels" in message
    # the counts at the top of the page are the store's after the import, not before it
    table = {row["table"]: row["rows"] for row in at.table[0].value.to_dict("records")}
    assert (table["queries"], table["chunks"], table["labels"]) == (2, 3, 4)
    with Store(tmp_path / "d.db") as store:
        assert store.export_qrels("beir:dev").grades == {"007": {"1": 3}}
