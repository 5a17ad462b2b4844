"""annotation.exports: RAGAS, DeepEval, BEIR, TREC and Phoenix exports of the demo store.

Exact rows are hand-checked against examples/worked-example: in the demo, cat
and dan graded the retriever's top 10 of q_faw and q_store; they disagree on
q_faw/m3 (cat 1, dan 0), so its median is 0 and its mean (rounded half up) 1.
Median grades: q_faw m1 3, m2 2, the 8 others 0; q_store s1 3, s2 2, s3 1,
the 7 others 0. q_milk and q_broad have no human label.

The library loaders (ragas, deepeval, phoenix.client) run where they are
installed and are skipped elsewhere; the documented schemas are checked
everywhere.
"""

from __future__ import annotations

import asyncio
import csv
import inspect
import io
import json
import math
import shutil
import warnings
import zipfile
from pathlib import Path

import pytest

from annotation import exchange
from annotation.__main__ import build_parser
from annotation.exchange import ImportSources, import_files
from annotation.exports import (
    BEIR_QRELS_HEADER,
    EXPORTS,
    FORMATS,
    OPTIONS,
    PHOENIX_COLUMNS,
    NothingToExport,
    export_beir,
    export_csv,
    export_deepeval,
    export_format,
    export_golden,
    export_labels,
    export_phoenix,
    export_qrels,
    export_ragas,
    export_trec,
    formats_taking,
)
from annotation.formats.beir import read_beir
from annotation.formats.by_extension import read_judgments, read_ranked
from annotation.formats.trec import read_run
from annotation.model import FormatError, Qrels
from annotation.store import Store, StoreError
from denominator.demo import EXAMPLE_DIR, build_demo
from tests.conftest import BACKENDS, page_test

CORPUS = {row["id"]: row for row in map(json.loads, (EXAMPLE_DIR / "corpus.jsonl").read_text().splitlines())}
TEXT = {chunk_id: row["text"] for chunk_id, row in CORPUS.items()}
Q_FAW = "How do I control fall armyworm in my maize?"
MEDIAN = {
    "q_faw": {"d2": 0, "d5": 0, "m1": 3, "m2": 2, "m3": 0, "p1": 0, "p3": 0, "s1": 0, "x1": 0, "x3": 0},
    "q_store": {"d1": 0, "d2": 0, "m4": 0, "p2": 0, "p5": 0, "s1": 3, "s2": 2, "s3": 1, "x2": 0, "x4": 0},
}

# the demo: cat and dan grade all 20 items, and disagree on one (#40 item 11)
DEMO_DISAGREEMENT = (
    "1 of 20 items graded by more than one person had disagreeing grades, aggregated by the med"
    "ian, the lower middle grade (an even number of raters: the lower of the two middle grades)"
)


def _loader(module: str):
    """The destination library whose own loader must read the export. It lives in the
    interop venv (`make interop`: ragas needs openai < 2, the product pins 3.x); there,
    DENOMINATOR_INTEROP=1 and a missing library is a failure, not a skip."""
    import importlib
    import os

    if os.environ.get("DENOMINATOR_INTEROP") == "1":
        return importlib.import_module(module)
    return pytest.importorskip(module)


@pytest.fixture(scope="module", params=BACKENDS)
def backend(request) -> str:
    """conftest's backend, for the whole module: the read-only demo below is built once per
    backend, and the tests taking ``db_at`` or ``demo_db`` run on both backends as well."""
    return request.param


@pytest.fixture(scope="module")
def demo(backend, tmp_path_factory, request):
    """The demo store on the backend under test, read only by the tests that use it."""
    if backend == "postgresql":
        path = request.getfixturevalue("postgres_server").database()
    else:
        path = str(tmp_path_factory.mktemp("demo") / "demo.db")
    build_demo(path)
    with Store(path) as store:
        yield store


@pytest.fixture
def own_demo(demo_db):
    """A demo store a test may change, on the backend under test."""
    with Store(demo_db) as store:
        yield store


def jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def by_name(rows: list[dict], key: str) -> dict[str, dict]:
    return {row[key]: row for row in rows}


# ---------------------------------------------------------------- registry and arguments


def test_registry_and_signatures() -> None:
    assert set(EXPORTS) == {"ragas", "deepeval", "beir", "trec", "phoenix"}
    for fn in EXPORTS.values():
        params = inspect.signature(fn).parameters
        assert list(params)[:5] == ["store", "path", "threshold", "annotator", "aggregate"]
        assert params["threshold"].default == 1 and params["aggregate"].default == "median"


def test_one_registry_declares_every_format() -> None:
    """FORMATS is the one list: each declaration's options are parameters of its function,
    EXPORTS is the view of the formats that take a threshold, and one NothingToExport."""
    assert list(FORMATS) == ["golden", "qrels", "csv", "ragas", "deepeval", "beir", "trec", "phoenix"]
    for name, fmt in FORMATS.items():
        params = inspect.signature(fmt.function).parameters
        assert fmt.name == name and list(params)[:2] == ["store", "path"]
        assert set(fmt.options) <= set(OPTIONS) and set(fmt.options) <= set(params), name
        assert fmt.writes == ("folder" if name in ("beir", "trec") else "file")
        assert fmt.description and "\n" not in fmt.description and fmt.default_name
    assert EXPORTS == {
        name: FORMATS[name].function for name in ("ragas", "deepeval", "beir", "trec", "phoenix")
    }
    assert formats_taking("judge") == ["qrels", "phoenix"] and formats_taking("aggregate") == [
        name for name in FORMATS if name != "csv"
    ]
    assert exchange.NothingToExport is NothingToExport and exchange.export_labels is export_labels
    assert (FORMATS["golden"].function, FORMATS["qrels"].function, FORMATS["csv"].function) == (
        export_golden,
        export_qrels,
        export_csv,
    )


def test_the_command_line_and_the_page_offer_the_registry() -> None:
    export = next(
        action.choices["export"] for action in build_parser()._actions if getattr(action, "choices", None)
    )
    choices = next(a.choices for a in export._actions if "--format" in a.option_strings)
    assert list(choices) == list(FORMATS)


def test_the_page_exports_every_format(own_demo, demo_db, tmp_path, monkeypatch) -> None:
    """The Data page lists every format of FORMATS (the command line's), and writes what the
    function writes; the threshold is offered to the formats that take one; a folder comes as a
    .zip of the folder, every file with its extension (#16)."""
    monkeypatch.setenv(
        "DENOMINATOR_DB", str(demo_db)
    )  # own_demo.path: the URL as printed, credentials hidden
    at = page_test("denominator.ui.data.render_data_page", state={"label:annotator": "ann"}).run()
    picker = at.selectbox(key="data:export-format")
    assert picker.options == list(FORMATS) and len(picker.options) == 8
    assert not [box for box in at.selectbox if box.key == "data:export-threshold"]  # golden takes none
    picker.set_value("ragas").run()
    at.selectbox(key="data:export-threshold").set_value(2)
    at.button(key="data:export").click().run()
    assert not at.exception and not at.error
    name, data, summary, _ = vars(at.session_state["data:export-file"]).values()
    export_ragas(own_demo, tmp_path / "ragas.jsonl", threshold=2)
    assert name == "ragas.jsonl" and data == (tmp_path / "ragas.jsonl").read_bytes()
    assert summary.startswith("wrote 40 RAGAS single-turn samples (one per trace) to ragas.jsonl")
    # a folder format: its folder, zipped under one top folder, byte for byte what the CLI writes
    at.selectbox(key="data:export-format").set_value("trec").run()
    at.button(key="data:export").click().run()
    assert not at.exception and not at.error
    prepared = at.session_state["data:export-file"]
    assert prepared.filename == "trec.zip" and prepared.mime == "application/zip"
    export_trec(own_demo, tmp_path / "trec", threshold=2)
    with zipfile.ZipFile(io.BytesIO(prepared.data)) as archive:
        names = sorted(archive.namelist())
        assert names == sorted(f"trec/{p.name}" for p in (tmp_path / "trec").iterdir())
        assert all(archive.read(n) == (tmp_path / n).read_bytes() for n in names)
    assert "trec.zip" in prepared.summary and "denominator-export" not in prepared.summary


def test_dispatch_leaves_out_the_options_a_format_does_not_take(demo, tmp_path) -> None:
    every = {"annotator": "cat", "aggregate": "mean", "threshold": 3, "judge": None}
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    said = FORMATS["csv"].export(demo, tmp_path / "a" / "labels.csv", **every)
    assert said == export_csv(demo, tmp_path / "b" / "labels.csv", "cat").replace("/b/", "/a/")
    FORMATS["ragas"].export(demo, tmp_path / "a" / "r.jsonl", **every)
    export_ragas(demo, tmp_path / "b" / "r.jsonl", threshold=3, annotator="cat", aggregate="mean")
    for name in ("labels.csv", "r.jsonl"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()
    with pytest.raises(TypeError, match="unknown export options binary_score"):
        FORMATS["phoenix"].export(demo, tmp_path / "p", binary_score=True)
    with pytest.raises(StoreError, match="format must be one of golden, qrels, csv, ragas, .*, not 'xml'"):
        export_format("xml")


def test_export_labels_names_the_label_files(demo, db_at, tmp_path) -> None:
    """The callers of exchange.export_labels get the same files as the registry's functions."""
    for fmt, function in (("golden", export_golden), ("qrels", export_qrels), ("csv", export_csv)):
        said = export_labels(demo, fmt, tmp_path / f"a-{fmt}", annotator="cat")
        assert said == function(demo, tmp_path / f"b-{fmt}", annotator="cat").replace("/b-", "/a-")
        assert (tmp_path / f"a-{fmt}").read_bytes() == (tmp_path / f"b-{fmt}").read_bytes()
    with pytest.raises(StoreError, match="format must be one of golden, qrels, csv, not 'ragas'"):
        export_labels(demo, "ragas", tmp_path / "r")
    with Store(db_at) as store:
        for fmt in ("golden", "qrels"):
            with pytest.raises(NothingToExport, match="^no current labels to export$"):
                export_labels(store, fmt, tmp_path / "out")


@pytest.mark.parametrize("name", sorted(EXPORTS))
@pytest.mark.parametrize("threshold", [0, 4, True, "2"])
def test_a_threshold_off_the_scale_is_refused(demo, tmp_path, name, threshold) -> None:
    with pytest.raises(
        StoreError, match="relevance threshold .*expected the lowest relevant grade, 1, 2 or 3"
    ):
        EXPORTS[name](demo, tmp_path / "out", threshold=threshold)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("name", sorted(EXPORTS))
def test_unknown_annotator_and_aggregate_are_refused(demo, tmp_path, name) -> None:
    with pytest.raises(StoreError, match="no annotator named 'zed'"):
        EXPORTS[name](demo, tmp_path / "out", annotator="zed")
    with pytest.raises(StoreError, match="aggregate 'max'; expected one of median, majority, mean"):
        EXPORTS[name](demo, tmp_path / "out", aggregate="max")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("name", sorted(EXPORTS))
def test_no_label_nothing_to_export(db_at, tmp_path, name) -> None:
    with Store(db_at) as store:
        with pytest.raises(NothingToExport, match="no current relevance labels to export"):
            EXPORTS[name](store, tmp_path / "out")
    assert not (tmp_path / "out").exists()


# ---------------------------------------------------------------- RAGAS


def test_ragas_rows(demo, tmp_path) -> None:
    out = tmp_path / "ragas.jsonl"
    summary = export_ragas(demo, out)
    rows = jsonl(out)
    assert len(rows) == 40  # one per trace, in import order
    assert rows[0] == {
        "user_input": Q_FAW,
        "retrieved_contexts": [TEXT["m2"], TEXT["x3"], TEXT["m1"]],
        "retrieved_context_ids": ["m2", "x3", "m1"],
        "response": rows[0]["response"],
        "reference_context_ids": ["m1", "m2"],  # grade 3, then grade 2
        "reference_contexts": [TEXT["m1"], TEXT["m2"]],
    }
    assert rows[0]["response"].startswith("Push-pull for fall armyworm: intercrop maize with desmodium")
    store_bm25_1 = rows[11]  # t_store_bm25_1: contexts s2, x4, s1
    assert store_bm25_1["retrieved_context_ids"] == ["s2", "x4", "s1"]
    assert store_bm25_1["reference_context_ids"] == ["s1", "s2", "s3"]  # 3, 2, 1
    milk = rows[20]  # t_milk_bm25_0: q_milk has no label
    assert milk["retrieved_context_ids"] == ["d1", "s2", "x1"]
    assert milk["reference_context_ids"] == [] and milk["reference_contexts"] == []
    # lists are JSON lists, never stringified
    first_line = out.read_text(encoding="utf-8").splitlines()[0]
    assert (
        '"retrieved_contexts": ["Push-pull' in first_line
        and '"reference_context_ids": ["m1", "m2"]' in first_line
    )
    assert all(
        isinstance(row[k], list) for row in rows for k in ("retrieved_contexts", "reference_context_ids")
    )
    assert (
        "RAGAS has no graded relevance: only the 5 chunks graded >= 1 are listed as reference context ids, "
        "the 15 judged below 1 and every grade are left out" in summary
    )
    assert (
        "relevance from the median grade over 2 annotators (cat, dan)"
        + ", "
        + DEMO_DISAGREEMENT
        + ", threshold 1"
        in summary
    )
    assert "20 traces' queries have no judgment at all" in summary
    assert "60 shown contexts are unjudged" in summary
    assert "the threshold and who labelled are not in the file" in summary
    assert "\n" not in summary


def test_ragas_threshold_annotator_and_aggregate(demo, tmp_path) -> None:
    out = tmp_path / "r.jsonl"
    summary = export_ragas(demo, out, threshold=2)
    rows = jsonl(out)
    assert rows[0]["reference_context_ids"] == ["m1", "m2"]
    assert rows[11]["reference_context_ids"] == ["s1", "s2"]  # s3 (grade 1) is below 2
    assert "only the 4 chunks graded >= 2" in summary and "the 16 judged below 2" in summary
    export_ragas(demo, out, threshold=3)
    assert jsonl(out)[0]["reference_context_ids"] == ["m1"]
    # cat graded m3 1: relevant in cat's labels, not in the median (cat 1, dan 0 -> 0)
    summary = export_ragas(demo, out, annotator="cat")
    assert jsonl(out)[0]["reference_context_ids"] == ["m1", "m2", "m3"]
    assert "only the 6 chunks graded >= 1" in summary and "relevance from cat's current labels" in summary
    export_ragas(demo, out, annotator="dan")
    assert jsonl(out)[0]["reference_context_ids"] == ["m1", "m2"]
    export_ragas(demo, out, aggregate="mean")  # (1 + 0) / 2 rounds half up to 1
    assert jsonl(out)[0]["reference_context_ids"] == ["m1", "m2", "m3"]
    export_ragas(demo, out, aggregate="majority")  # a tie of 0 and 1: the lower middle, 0
    assert jsonl(out)[0]["reference_context_ids"] == ["m1", "m2"]


def test_ragas_contexts_given_as_texts(own_demo, tmp_path) -> None:
    """A context that is a chunk's text takes the chunk's id; any other text keeps
    <trace id>#<position>, unjudged."""
    own_demo.import_traces(
        [
            {
                "id": "t_text",
                "query_id": "q_faw",
                "system": "raw",
                "question": Q_FAW,
                "contexts": [TEXT["m1"], "A text no chunk holds."],
                "answer": "Scout twice a week.",
            }
        ]
    )
    out = tmp_path / "r.jsonl"
    summary = export_ragas(own_demo, out)
    row = jsonl(out)[-1]
    assert row["retrieved_context_ids"] == ["m1", "t_text#1"]
    assert row["retrieved_contexts"] == [TEXT["m1"], "A text no chunk holds."]
    assert "1 contexts are texts of no stored chunk (id <trace id>#<position>" in summary
    assert "61 shown contexts are unjudged" in summary


def test_ragas_loader_reads_it(demo, tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("RAGAS_DO_NOT_TRACK", "true")
    ragas = _loader("ragas")
    out = tmp_path / "ragas.jsonl"
    export_ragas(demo, out)
    dataset = ragas.EvaluationDataset.from_jsonl(str(out))
    assert len(dataset) == 40
    sample = dataset[0]
    assert type(sample).__name__ == "SingleTurnSample"
    assert set(dataset.features()) == {
        "user_input",
        "retrieved_contexts",
        "retrieved_context_ids",
        "response",
        "reference_context_ids",
        "reference_contexts",
    }
    assert sample.to_dict() == jsonl(out)[0]  # nothing dropped or changed by its schema
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from ragas.metrics import IDBasedContextPrecision, IDBasedContextRecall
    assert asyncio.run(IDBasedContextRecall().single_turn_ascore(sample)) == 1.0  # m1 and m2 retrieved
    assert asyncio.run(IDBasedContextPrecision().single_turn_ascore(sample)) == pytest.approx(2 / 3)
    # no reference id: undefined (NaN), not 0
    assert math.isnan(asyncio.run(IDBasedContextRecall().single_turn_ascore(dataset[20])))


# ---------------------------------------------------------------- DeepEval


def test_deepeval_goldens(demo, tmp_path) -> None:
    out = tmp_path / "goldens.json"
    summary = export_deepeval(demo, out)
    goldens = json.loads(out.read_text(encoding="utf-8"))
    assert isinstance(goldens, list) and len(goldens) == 40  # a JSON list, not JSONL
    first = goldens[0]
    assert first == {
        "name": "t_faw_bm25_0",
        "input": Q_FAW,
        "actual_output": first["actual_output"],
        "retrieval_context": [TEXT["m2"], TEXT["x3"], TEXT["m1"]],
        "context": [TEXT["m1"], TEXT["m2"]],
        "additional_metadata": {
            "trace_id": "t_faw_bm25_0",
            "query_id": "q_faw",
            "system": "rag-bm25",
            "retrieval_context_ids": ["m2", "x3", "m1"],
            "retrieval_context_grades": [2, 0, 3],
            "context_ids": ["m1", "m2"],
            "context_grades": [3, 2],
            "relevance_threshold": 1,
            "judged_by": ["cat", "dan"],
            "aggregate": "median",
            "grade_scale": {
                "0": "irrelevant: nothing to do with the query",
                "1": "related: on the topic, but no answer in it",
                "2": "highly relevant: holds some of the answer, perhaps unclear or buried in other material",
                "3": "perfectly relevant: devoted to the query, holds the exact answer",
            },
        },
    }
    milk = goldens[20]
    assert milk["name"] == "t_milk_bm25_0" and milk["context"] is None  # nothing of q_milk is judged
    assert milk["additional_metadata"]["retrieval_context_grades"] == [None, None, None]
    assert (
        milk["additional_metadata"]["context_ids"] is None and milk["additional_metadata"]["judged_by"] == []
    )
    assert (
        "DeepEval has no graded relevance or context ids: context holds the texts of the 5 chunks" in summary
    )
    assert (
        "no expected_output" in summary
        and "(cat, dan)" + ", " + DEMO_DISAGREEMENT + ", threshold 1" in summary
    )


def test_deepeval_threshold_and_annotator(demo, tmp_path) -> None:
    out = tmp_path / "g.json"
    export_deepeval(demo, out, threshold=3, annotator="cat")
    store_rerank_1 = json.loads(out.read_text())[16]  # t_store_rerank_1: s2, s3, d2
    meta = store_rerank_1["additional_metadata"]
    assert store_rerank_1["context"] == [TEXT["s1"]]
    assert meta["retrieval_context_ids"] == ["s2", "s3", "d2"] and meta["retrieval_context_grades"] == [
        2,
        1,
        0,
    ]
    assert meta["context_ids"] == ["s1"] and meta["context_grades"] == [3]
    assert meta["relevance_threshold"] == 3 and meta["judged_by"] == ["cat"] and meta["aggregate"] is None


def test_deepeval_judged_but_nothing_relevant_is_an_empty_context(own_demo, tmp_path) -> None:
    own_demo.import_labels(Qrels(grades={"q_milk": {"d1": 0, "s2": 1}}), annotator="eve")
    out = tmp_path / "g.json"
    summary = export_deepeval(own_demo, out, threshold=2)
    milk = json.loads(out.read_text())[20]
    assert milk["context"] == [] and milk["additional_metadata"]["context_ids"] == []
    assert milk["additional_metadata"]["retrieval_context_grades"] == [0, 1, None]
    assert "10 traces' queries have no chunk graded >= 2 (context [])" in summary
    # 53: over examples/worked-example/traces.jsonl, the contexts outside cat's and dan's top 10 of
    # q_faw and q_store and eve's two q_milk chunks (counted from the file, by hand)
    assert "10 traces' queries have no judgment at all; 53 shown contexts are unjudged" in summary


def test_deepeval_loader_reads_it(demo, tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("DEEPEVAL_TELEMETRY_OPT_OUT", "1")
    _loader("deepeval")
    from deepeval.dataset import EvaluationDataset

    out = tmp_path / "goldens.json"
    export_deepeval(demo, out)
    dataset = EvaluationDataset()
    dataset.add_goldens_from_json_file(str(out))
    assert len(dataset.goldens) == 40
    golden = dataset.goldens[0]
    assert golden.name == "t_faw_bm25_0" and golden.input == Q_FAW
    assert golden.retrieval_context == [TEXT["m2"], TEXT["x3"], TEXT["m1"]]
    assert golden.context == [TEXT["m1"], TEXT["m2"]]
    assert golden.additional_metadata["context_grades"] == [3, 2]
    assert dataset.goldens[20].context is None


# ---------------------------------------------------------------- BEIR


def beir_loader(folder: Path, split: str = "test") -> tuple[dict, dict, dict]:
    """BEIR's documented loader (beir.datasets.data_loader.GenericDataLoader.load):
    corpus and queries JSONL by "_id"; qrels read by csv with TAB and
    QUOTE_MINIMAL, the header skipped, scores int(); queries kept only where
    the qrels name them (a qrels query missing from queries.jsonl is a KeyError)."""
    corpus, queries, qrels = {}, {}, {}
    with open(folder / "corpus.jsonl", encoding="utf8") as lines:
        for line in lines:
            obj = json.loads(line)
            corpus[obj.get("_id")] = {"text": obj.get("text"), "title": obj.get("title")}
    with open(folder / "queries.jsonl", encoding="utf8") as lines:
        for line in lines:
            obj = json.loads(line)
            queries[obj.get("_id")] = obj.get("text")
    with open(folder / "qrels" / f"{split}.tsv", encoding="utf-8") as handle:
        reader = csv.reader(handle, delimiter="\t", quoting=csv.QUOTE_MINIMAL)
        next(reader)
        for row in reader:
            qrels.setdefault(row[0], {})[row[1]] = int(row[2])
    queries = {qid: queries[qid] for qid in qrels}
    return corpus, queries, qrels


def test_beir_folder_of_the_demo(demo, tmp_path) -> None:
    out = tmp_path / "beir"
    summary = export_beir(demo, out)
    assert sorted(p.relative_to(out).as_posix() for p in out.rglob("*")) == [
        "corpus.jsonl",
        "qrels",
        "qrels/test.tsv",
        "queries.jsonl",
    ]
    corpus_lines = (out / "corpus.jsonl").read_text(encoding="utf-8").splitlines()
    assert json.loads(corpus_lines[0]) == {
        "_id": "m1",
        "title": "",
        "text": TEXT["m1"],
        "metadata": {"source": "maize pests"},
    }
    assert (out / "queries.jsonl").read_text(encoding="utf-8").splitlines()[0] == json.dumps(
        {"_id": "q_faw", "text": Q_FAW}
    )
    tsv = (out / "qrels" / "test.tsv").read_text(encoding="utf-8").splitlines()
    assert tsv[0] == BEIR_QRELS_HEADER
    assert tsv[1:4] == ["q_faw\td2\t0", "q_faw\td5\t0", "q_faw\tm1\t3"]
    assert len(tsv) == 21  # every grade, 0s included: the threshold is not applied
    # the product's own reader
    chunks, queries, splits = read_beir(out)
    assert [c["id"] for c in chunks] == list(CORPUS) and all(c["text"] == TEXT[c["id"]] for c in chunks)
    assert len(queries) == 4 and queries["q_faw"] == Q_FAW
    assert splits["test"].grades == MEDIAN
    # BEIR's documented loader rules
    corpus, beir_queries, qrels = beir_loader(out)
    assert qrels == MEDIAN and set(beir_queries) == {"q_faw", "q_store"} and len(corpus) == 24
    assert "24 documents, 4 queries, 20 judgments in qrels/test.tsv from the median grade" in summary
    assert "grades 0-3 kept whole: BEIR's evaluator counts score >= 1 as relevant" in summary
    assert "BEIR has no place for the threshold or who labelled" in summary
    assert "give your evaluator the threshold 2" in export_beir(demo, out, threshold=2)
    assert read_beir(out)[2]["test"].grades == MEDIAN  # same grades whatever the threshold


def canonical_beir(root: Path) -> Path:
    """A BEIR folder written the way export_beir writes one (so the round trip is byte for byte)."""
    corpus = [
        {
            "_id": "001",
            "title": "Fall armyworm",
            "text": "Scout maize twice a week.",
            "metadata": {"url": "x"},
        },
        {"_id": "d2", "title": "", "text": "Dry maize to 13% moisture — before storage.", "metadata": {}},
        {"_id": "t3", "title": "Title alone", "text": "", "metadata": {}},
        {
            "_id": "d4",
            "title": "Cows",
            "text": "Feed a balanced ration.\n\nGive clean water.",
            "metadata": {},
        },
    ]
    queries = [
        {"_id": "q1", "text": "How do I control fall armyworm?"},
        {"_id": "007", "text": "Maize store?"},
    ]
    qrels = BEIR_QRELS_HEADER + "\nq1\t001\t3\nq1\td2\t0\nq1\tt3\t1\n007\td2\t2\n007\td4\t0\n"
    (root / "qrels").mkdir(parents=True)
    (root / "corpus.jsonl").write_text("".join(json.dumps(d, ensure_ascii=False) + "\n" for d in corpus))
    (root / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries))
    (root / "qrels" / "test.tsv").write_text(qrels)
    return root


def test_beir_round_trip(db_at, tmp_path) -> None:
    source = canonical_beir(tmp_path / "source")
    with Store(db_at) as store:
        import_files(store, ImportSources(beir=source))
        out = tmp_path / "out"
        summary = export_beir(store, out, annotator="beir:test")
    for name in ("corpus.jsonl", "queries.jsonl", "qrels/test.tsv"):
        assert (out / name).read_bytes() == (source / name).read_bytes(), name
    assert read_beir(out)[2]["test"].grades == read_beir(source)[2]["test"].grades
    assert beir_loader(out) == beir_loader(source)
    assert "5 judgments in qrels/test.tsv from beir:test's current labels" in summary


def test_beir_leaves_out_queries_without_text(own_demo, tmp_path) -> None:
    own_demo.import_labels(Qrels(grades={"q_new": {"m1": 2, "m2": 0}}), annotator="eve")
    out = tmp_path / "beir"
    summary = export_beir(own_demo, out, split="dev")
    assert "2 judgments of 1 queries stored without text left out" in summary
    corpus, queries, qrels = beir_loader(out, "dev")  # no KeyError: every qrels query has its text
    assert "q_new" not in qrels and set(qrels) == {"q_faw", "q_store"}
    with pytest.raises(StoreError, match="split 'a/b'"):
        export_beir(own_demo, tmp_path / "x", split="a/b")


# ---------------------------------------------------------------- TREC


def test_trec_folder_of_the_demo(demo, tmp_path) -> None:
    out = tmp_path / "trec"
    summary = export_trec(demo, out)
    assert sorted(p.name for p in out.iterdir()) == ["qrels", "retriever.run"]
    qrels_lines = (out / "qrels").read_text().splitlines()
    assert qrels_lines[:3] == ["q_faw 0 d2 0", "q_faw 0 d5 0", "q_faw 0 m1 3"] and len(qrels_lines) == 20
    run_lines = (out / "retriever.run").read_text().splitlines()
    assert run_lines[:3] == [
        "q_faw Q0 m2 1 10.0 retriever",
        "q_faw Q0 x3 2 9.0 retriever",
        "q_faw Q0 m1 3 8.0 retriever",
    ]
    assert read_judgments(out / "qrels").grades == MEDIAN
    assert read_ranked(out / "retriever.run").rankings() == read_ranked(EXAMPLE_DIR / "run.jsonl").rankings()
    assert (
        "qrels (20 judgments over 2 queries from the median grade over 2 annotators (cat, dan)"
        + ", "
        + DEMO_DISAGREEMENT
        + ")"
        in summary
    )
    assert "1 run files (retriever.run)" in summary and "trec_eval -l 1" in summary
    assert "for threshold 2 run trec_eval -l 2" in export_trec(demo, out, threshold=2)
    assert read_judgments(out / "qrels").grades == MEDIAN


def test_trec_round_trip(db_at, tmp_path) -> None:
    """qrels and a run imported, then exported: the same files (ties in score keep trec_eval's order)."""
    qrels = "q1 0 d1 3\nq1 0 d2 0\nq1 0 d3 1\nq2 0 d1 2\n"
    run = (
        "q2 Q0 d3 1 2.5 sys\nq2 Q0 d1 2 1.0 sys\n"
        "q1 Q0 d2 1 0.5 sys\nq1 Q0 d9 2 0.25 sys\nq1 Q0 d1 3 0.25 sys\nq1 Q0 d3 4 -1.0 sys\n"
    )
    (tmp_path / "in.qrels").write_text(qrels)
    (tmp_path / "in.run").write_text(run)
    with Store(db_at) as store:
        sources = ImportSources(
            labels=tmp_path / "in.qrels", annotator="x", run=tmp_path / "in.run", name="sys"
        )
        import_files(store, sources)
        import_files(store, ImportSources(run=tmp_path / "in.run", name="sys two"))
        out = tmp_path / "out"
        summary = export_trec(store, out, annotator="x")
    assert (out / "qrels").read_text() == qrels
    assert (out / "sys.run").read_text() == run
    assert read_run(out / "sys.run").ordered_rows() == read_run(tmp_path / "in.run").ordered_rows()
    assert read_judgments(out / "qrels").grades == read_judgments(tmp_path / "in.qrels").grades
    # a name with a space becomes a file name and a tag without one
    assert (out / "sys_two.run").read_text() == run.replace(" sys\n", " sys_two\n")
    assert "runs renamed for the file system and the tag column: 'sys two' as sys_two.run" in summary


# ---------------------------------------------------------------- Phoenix


def test_phoenix_rows(demo, tmp_path) -> None:
    out = tmp_path / "phoenix.jsonl"
    summary = export_phoenix(demo, out)
    rows = jsonl(out)
    assert len(rows) == 60  # the 20 traces of q_faw and q_store, 3 judged documents each
    assert rows[0] == {
        "span_id": "t_faw_bm25_0",
        "document_position": 0,
        "name": "relevance",
        "annotator_kind": "HUMAN",
        "label": "relevant",
        "score": 2.0,
        "explanation": "grade 2 of 0-3 (highly relevant: holds some of the answer, perhaps unclear or buried "
        "in other material); relevant means grade >= 1; by the median of cat, dan",
        "metadata": {
            "grade": 2,
            "relevance_threshold": 1,
            "judged_by": ["cat", "dan"],
            "aggregate": "median",
            "trace_id": "t_faw_bm25_0",
            "query_id": "q_faw",
            "chunk_id": "m2",
        },
    }
    assert [(r["document_position"], r["label"], r["score"]) for r in rows[:3]] == [
        (0, "relevant", 2.0),
        (1, "unrelated", 0.0),
        (2, "relevant", 3.0),
    ]
    assert len({(r["span_id"], r["document_position"], r["name"]) for r in rows}) == 60  # one per document
    assert (
        "wrote 60 Phoenix document annotations (HUMAN, name 'relevance', label relevant if grade >= 1"
        in summary
    )
    assert "span ids: 0 from trace metadata, 40 assumed to be the trace id" in summary
    assert "40 traces' span ids are not 16-hex OpenTelemetry span ids" in summary
    assert "60 shown documents unjudged, no row" in summary


def test_phoenix_threshold_binary_and_annotator(demo, tmp_path) -> None:
    out = tmp_path / "p.jsonl"
    export_phoenix(demo, out, threshold=2)
    s3 = [r for r in jsonl(out) if r["metadata"]["chunk_id"] == "s3"][0]  # grade 1
    assert (s3["label"], s3["score"]) == ("unrelated", 1.0)
    summary = export_phoenix(demo, out, threshold=2, binary_score=True)
    s3 = [r for r in jsonl(out) if r["metadata"]["chunk_id"] == "s3"][0]
    assert (s3["label"], s3["score"], s3["metadata"]["grade"]) == ("unrelated", 0.0, 1)
    assert "score 1/0 by threshold 2" in summary
    export_phoenix(demo, out, annotator="cat")
    m3 = [r for r in jsonl(out) if r["metadata"]["chunk_id"] == "m3"][0]
    assert (m3["label"], m3["score"], m3["metadata"]["judged_by"], m3["metadata"]["aggregate"]) == (
        "relevant",
        1.0,
        ["cat"],
        None,
    )
    assert m3["explanation"].endswith("relevant means grade >= 1; by cat's label")


def test_phoenix_csv(demo, tmp_path) -> None:
    out = tmp_path / "phoenix.csv"
    summary = export_phoenix(demo, out)
    with open(out, newline="", encoding="utf-8") as handle:
        rows = list(csv.reader(handle))
    assert rows[0] == list(PHOENIX_COLUMNS)  # no metadata column
    assert rows[1][:6] == ["t_faw_bm25_0", "0", "relevance", "HUMAN", "relevant", "2.0"]
    assert len(rows) == 61 and "CSV has no metadata column" in summary


def test_phoenix_span_ids_from_trace_metadata(own_demo, tmp_path) -> None:
    """Where the traces table has a metadata column (the OpenInference import), the
    retriever span id comes from it."""
    own_demo.db.execute("ALTER TABLE traces ADD COLUMN meta TEXT")
    own_demo.db.execute(
        "UPDATE traces SET meta = ? WHERE id = 't_faw_bm25_0'",
        [json.dumps({"trace_id": "0" * 32, "retriever_span_id": "468d2810f529b6e9"})],
    )
    out = tmp_path / "p.jsonl"
    summary = export_phoenix(own_demo, out)
    rows = jsonl(out)
    assert [r["span_id"] for r in rows[:4]] == ["468d2810f529b6e9"] * 3 + ["t_faw_bm25_1"]
    assert rows[0]["metadata"]["trace_id"] == "t_faw_bm25_0"
    assert "span ids: 1 from trace metadata, 39 assumed to be the trace id" in summary
    assert "39 traces' span ids are not 16-hex" in summary


def test_phoenix_judge_labels(db_at, tmp_path) -> None:
    build_demo(db_at, with_judge=True)
    with Store(db_at) as store:
        judge = [j for j in store.judges() if j["rubric"] == "relevance"][0]
        out = tmp_path / "judge.jsonl"
        summary = export_phoenix(store, out, judge=judge["fingerprint"][:10])
        with pytest.raises(StoreError, match="grades faithfulness, not relevance"):
            other = [j for j in store.judges() if j["rubric"] == "faithfulness"][0]
            export_phoenix(store, out, judge=other["fingerprint"])
        with pytest.raises(StoreError, match="judge 'nope': no such judge"):
            export_phoenix(store, out, judge="nope")
    rows = jsonl(out)
    assert len(rows) == 120 and {r["annotator_kind"] for r in rows} == {"CODE"}  # the offline judge
    assert rows[0]["metadata"]["judged_by"] == [f"judge {judge['fingerprint'][:12]} (lexical, logistic)"]
    assert "wrote 120 Phoenix document annotations (CODE" in summary


def test_phoenix_follows_the_documented_dataframe(demo, tmp_path) -> None:
    """The columns and types Phoenix's log_document_annotations_dataframe asks for."""
    pd = pytest.importorskip("pandas")
    out = tmp_path / "phoenix.jsonl"
    export_phoenix(demo, out)
    df = pd.read_json(out, lines=True, dtype={"span_id": str})
    assert list(df.columns) == [*PHOENIX_COLUMNS, "metadata"]
    assert all(isinstance(v, str) and v.strip() for v in df["span_id"])
    assert all(isinstance(v, int) for v in df["document_position"].tolist())
    assert set(df["annotator_kind"]) <= {"LLM", "CODE", "HUMAN"} and set(df["name"]) == {"relevance"}
    assert all(isinstance(v, dict) for v in df["metadata"])
    legacy = df.set_index(["span_id", "document_position"])[["label", "score", "explanation"]]
    assert legacy.index.is_unique  # DocumentEvaluations' index


def test_phoenix_client_reads_it(demo, tmp_path) -> None:
    """Phoenix's own client turns the file into the request it would send (over a mock transport)."""
    pd = pytest.importorskip("pandas")
    httpx = pytest.importorskip("httpx")
    _loader("phoenix.client")
    from phoenix.client import Client

    sent: list[dict] = []

    def handler(request):
        body = json.loads(request.content)
        sent.append({"path": request.url.path, **body})
        return httpx.Response(200, json={"data": [{"id": str(i)} for i in range(len(body["data"]))]})

    http = httpx.Client(base_url="http://phoenix.test", transport=httpx.MockTransport(handler))
    client = Client(base_url="http://phoenix.test", http_client=http)
    for name in ("phoenix.jsonl", "phoenix.csv"):
        export_phoenix(demo, tmp_path / name)
        read = pd.read_json if name.endswith("jsonl") else pd.read_csv
        kwargs = {"lines": True} if name.endswith("jsonl") else {}
        df = read(tmp_path / name, dtype={"span_id": str}, **kwargs)
        inserted = client.spans.log_document_annotations_dataframe(dataframe=df, sync=True)
        assert len(inserted) == 60
    assert [s["path"] for s in sent] == ["/v1/document_annotations"] * 2
    first = sent[0]["data"][0]
    assert first["span_id"] == "t_faw_bm25_0" and first["document_position"] == 0
    assert first["annotator_kind"] == "HUMAN" and first["result"]["label"] == "relevant"
    assert first["result"]["score"] == 2.0 and first["metadata"]["grade"] == 2
    assert "metadata" not in sent[1]["data"][0]


# ---------------------------------------------------------------- atomic writing


@pytest.mark.parametrize("name", ["beir", "trec"])
def test_folder_exports_replace_only_their_own_files(demo, tmp_path, name) -> None:
    out = tmp_path / name
    EXPORTS[name](demo, out)
    first = {p.relative_to(out).as_posix(): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    EXPORTS[name](demo, out)  # an earlier export of the same format is replaced
    again = {p.relative_to(out).as_posix(): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    assert again == first
    (out / "notes.txt").write_text("mine")
    with pytest.raises(FormatError, match=r"holds files this export would not write again \(notes.txt\)"):
        EXPORTS[name](demo, out)
    assert (out / "notes.txt").read_text() == "mine"
    assert sorted(p.name for p in tmp_path.iterdir()) == [name]  # no staging folder left behind
    shutil.rmtree(out)
    out.write_text("a file")
    with pytest.raises(FormatError, match="is a file; expected a folder"):
        EXPORTS[name](demo, out)


@pytest.mark.parametrize("name", ["ragas", "deepeval", "phoenix"])
def test_file_exports_are_atomic(demo, tmp_path, name) -> None:
    out = tmp_path / "out.jsonl"
    EXPORTS[name](demo, out)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.jsonl"]
    (tmp_path / "dir").mkdir()
    with pytest.raises(FormatError, match="is a directory"):
        EXPORTS[name](demo, tmp_path / "dir")


# ---------------------------------------------------------------- edges


def test_ids_beir_cannot_hold_are_refused(own_demo, tmp_path) -> None:
    """BEIR's qrels reader is csv with QUOTE_MINIMAL: an id starting with '"' would read back otherwise."""
    own_demo.import_labels(Qrels(grades={"q_faw": {'"m9': 1}}), annotator="eve")
    with pytest.raises(FormatError, match="corpus-id: '\"m9' cannot be written to BEIR's qrels TSV"):
        export_beir(own_demo, tmp_path / "beir")
    assert not (tmp_path / "beir").exists()


def test_trec_run_without_scores(own_demo, tmp_path) -> None:
    own_demo.db.execute("UPDATE rankings SET score = NULL WHERE query_id = 'q_faw'")
    summary = export_trec(own_demo, tmp_path / "trec")
    lines = (tmp_path / "trec" / "retriever.run").read_text().splitlines()
    assert lines[0] == "q_faw Q0 m2 1 10.0 retriever" and lines[9] == "q_faw Q0 d5 10 1.0 retriever"
    assert "10 rankings stored without a score given n - rank + 1" in summary


def test_phoenix_judge_or_annotator_not_both(demo, tmp_path) -> None:
    with pytest.raises(StoreError, match="give a judge or an annotator, not both"):
        export_phoenix(demo, tmp_path / "p.jsonl", annotator="cat", judge="0b")
