"""Trace exports of OpenInference (Phoenix), Langfuse and LangSmith: what
annotation.trace_sources reads from each documented shape, what it lands in a
real store, and how it refuses bad input. Fixtures: tests/data/formats/
(README.md there says which documentation each shape follows)."""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path

import pandas as pd
import pytest

from annotation.model import FormatError
from annotation.store import ImportConflict, Store, postgres
from annotation.trace_sources import (
    ChunkConflict,
    InvalidTraceSource,
    QueryConflict,
    TraceImport,
    parse_mapping,
    read_trace_source,
    to_store,
)
from bench.synthetic_traces import synthetic_openinference

DATA = Path(__file__).parent / "data" / "formats"

QA, AA = "What is the capital of France?", "Paris is the capital of France."
QB, AB = "Who wrote Hamlet?", "William Shakespeare wrote Hamlet."
QC = "What is the population of Lyon?"
# content-hash ids: "q_"/"c_" + sha256(text)[:16]; pinned so a change of the rule shows
Q_A, Q_B, Q_C = "q_115049a298532be2", "q_0b06d1b8c89496c5", "q_71385b40fdba7470"
TEXT = {
    "d1": "Paris is the capital and largest city of France.",
    "d2": "France is a country in Western Europe; its capital is Paris.",
    "d3": "Lyon is the third-largest city of France.",
    "d4": "Hamlet is a tragedy written by William Shakespeare around 1600.",
}
X_TEXT = "Shakespeare wrote Hamlet between 1599 and 1601."
C_X = "c_45bddd9a0e0069f3"
TA, TB, TC = (
    "0af7651916cd43dd8448eb211c80319c",
    "4bf92f3577b34da6a3ce929d0e0e4736",
    "9e2d3c1b0a8f4e6d8c7b6a5f4e3d2c1b",
)

FETCH_A = [("d1", 0.82), ("d2", 0.79), ("d3", 0.41)]
KEEP_A = [("d2", 0.98), ("d1", 0.95)]
FETCH_B = [("d4", 0.77), (C_X, 0.70), ("d1", 0.12)]
FETCH_C = [("d3", 0.66)]
CHUNKS = [
    {"id": "d1", "text": TEXT["d1"]},
    {"id": "d2", "text": TEXT["d2"]},
    {"id": "d3", "text": TEXT["d3"]},
    {"id": "d4", "text": TEXT["d4"]},
    {"id": C_X, "text": X_TEXT},
]


def trace(tid: str, system: str, which: str) -> dict:
    if which == "A":
        return {
            "id": tid,
            "query_id": Q_A,
            "system": system,
            "question": QA,
            "contexts": ["d2", "d1"],
            "answer": AA,
        }
    return {
        "id": tid,
        "query_id": Q_B,
        "system": system,
        "question": QB,
        "contexts": ["d4", C_X, "d1"],
        "answer": AB,
    }


def no_answer(tid: str, where: str, at: str) -> str:
    return (
        f"trace {tid!r} ({where}): no answer at {at}; not imported as a trace "
        f"(its retrievals count under query {Q_C!r})"
    )


def phoenix_rows() -> list[dict]:
    return [json.loads(line) for line in (DATA / "openinference-phoenix-df.jsonl").read_text().splitlines()]


def write_lines(path: Path, values: list) -> Path:
    path.write_text("".join(json.dumps(v) + "\n" for v in values), encoding="utf-8")
    return path


def rows(store: Store, sql: str) -> list[tuple]:
    return [tuple(r) for r in store.db.execute(sql).fetchall()]


# ---------------------------------------------------------------- hash ids


def test_content_hash_ids_are_stable():
    assert Q_A == "q_" + hashlib.sha256(QA.encode()).hexdigest()[:16]
    assert Q_C == "q_" + hashlib.sha256(QC.encode()).hexdigest()[:16]
    assert C_X == "c_" + hashlib.sha256(X_TEXT.encode()).hexdigest()[:16]


# ---------------------------------------------------------------- OpenInference


def test_phoenix_dataframe_jsonl_gives_queries_chunks_runs_traces_and_problems():
    imp = read_trace_source(DATA / "openinference-phoenix-df.jsonl", "openinference")
    assert imp.queries == {Q_A: QA, Q_B: QB, Q_C: QC}
    assert imp.chunks == CHUNKS  # d1 is retrieved three times and stored once
    assert imp.runs == {
        ("openinference", "fetch"): {Q_A: FETCH_A, Q_B: FETCH_B, Q_C: FETCH_C},
        ("openinference", "keep"): {Q_A: KEEP_A},  # reranker.output_documents
    }
    # contexts: the reranker's output where there is one, else the retriever's;
    # trace B's root input is JSON {"question": ...} (application/json), its output {"answer": ...}
    assert imp.traces == [trace(TA, "openinference", "A"), trace(TB, "openinference", "B")]
    assert imp.problems == [no_answer(TC, "line 8", "attributes.output.value")]
    assert imp.counts() == {"traces": 2, "queries": 3, "chunks": 5, "runs": 2, "rankings": 9, "problems": 1}
    assert isinstance(imp, TraceImport) and imp.source == "openinference"


def test_phoenix_dataframe_parquet_reads_as_the_json_records_do(tmp_path):
    df = pd.DataFrame.from_records(phoenix_rows()).set_index("context.span_id", drop=False)
    df.reset_index(drop=True).to_parquet(tmp_path / "spans.parquet")
    imp = read_trace_source(tmp_path / "spans.parquet", "openinference")
    jsonl = read_trace_source(DATA / "openinference-phoenix-df.jsonl", "openinference")
    assert (imp.queries, imp.chunks, imp.runs, imp.traces) == (
        jsonl.queries,
        jsonl.chunks,
        jsonl.runs,
        jsonl.traces,
    )
    assert imp.problems == [no_answer(TC, "row 7", "attributes.output.value")]


@pytest.mark.parametrize("orient", ["records", "columns", "split", "index", "table"])
def test_phoenix_dataframe_json_in_every_pandas_orient(tmp_path, orient):
    df = pd.DataFrame.from_records(phoenix_rows())
    df.to_json(tmp_path / "spans.json", orient=orient)
    imp = read_trace_source(tmp_path / "spans.json", "openinference")
    assert imp.runs[("openinference", "fetch")] == {Q_A: FETCH_A, Q_B: FETCH_B, Q_C: FETCH_C}
    assert imp.traces == [trace(TA, "openinference", "A"), trace(TB, "openinference", "B")]
    assert len(imp.problems) == 1


def test_phoenix_flattened_document_columns_rank_by_their_zero_based_index(tmp_path):
    # json_normalize-style columns: attributes.retrieval.documents.N.document.*, written out of order
    root = {"context.span_id": "r", "context.trace_id": "t", "parent_id": None, "span_kind": "CHAIN"}
    root |= {"attributes.input.value": QA, "attributes.output.value": AA}
    retriever = {"context.span_id": "s", "context.trace_id": "t", "parent_id": "r", "span_kind": "RETRIEVER"}
    for n, (doc, score) in reversed(list(enumerate(FETCH_A))):
        retriever[f"attributes.retrieval.documents.{n}.document.id"] = doc
        retriever[f"attributes.retrieval.documents.{n}.document.content"] = TEXT[doc]
        retriever[f"attributes.retrieval.documents.{n}.document.score"] = score
    imp = read_trace_source(write_lines(tmp_path / "wide.jsonl", [retriever, root]), "openinference")
    assert imp.runs == {("openinference", "fetch"): {Q_A: FETCH_A}}  # N = 0 is rank 1
    assert imp.traces == [
        {
            "id": "t",
            "query_id": Q_A,
            "system": "openinference",
            "question": QA,
            "contexts": ["d1", "d2", "d3"],
            "answer": AA,
        }
    ]


def test_phoenix_nested_attributes():
    imp = read_trace_source(DATA / "openinference-nested.json", "openinference")
    assert imp.queries == {Q_A: QA, Q_B: QB}
    assert imp.chunks == CHUNKS
    assert imp.runs == {
        ("openinference", "fetch"): {Q_A: FETCH_A, Q_B: FETCH_B},
        ("openinference", "keep"): {Q_A: KEEP_A},
    }
    assert imp.traces == [trace(TA, "openinference", "A"), trace(TB, "openinference", "B")]
    assert imp.problems == []


def test_phoenix_rest_page():
    imp = read_trace_source(DATA / "openinference-phoenix-rest.json", "openinference")
    assert imp.queries == {Q_A: QA, Q_B: QB, Q_C: QC}
    assert imp.chunks == CHUNKS
    assert imp.runs == {
        ("openinference", "fetch"): {Q_A: FETCH_A, Q_B: FETCH_B, Q_C: FETCH_C},
        ("openinference", "keep"): {Q_A: KEEP_A},
    }
    assert imp.traces == [trace(TA, "openinference", "A"), trace(TB, "openinference", "B")]
    assert imp.problems == [no_answer(TC, "data[5]", "attributes.output.value")]


def test_phoenix_rest_metadata_key_as_chunk_id():
    imp = read_trace_source(
        DATA / "openinference-phoenix-rest.json", "openinference", ["chunk_id=document.metadata.source"]
    )
    assert imp.runs[("openinference", "keep")] == {Q_A: [("france.md", 0.98), ("paris.md", 0.95)]}
    assert [c["id"] for c in imp.chunks] == ["paris.md", "france.md", "lyon.md", "hamlet.md", "notes.md"]


def test_otlp_json_system_from_service_name():
    imp = read_trace_source(DATA / "openinference-otlp.json", "openinference")
    assert imp.queries == {Q_A: QA, Q_B: QB}
    assert imp.chunks == CHUNKS
    assert imp.runs == {
        ("rag-otlp", "fetch"): {Q_A: FETCH_A, Q_B: FETCH_B},
        ("rag-otlp", "keep"): {Q_A: KEEP_A},
    }
    assert imp.traces == [trace(TA.upper(), "rag-otlp", "A"), trace(TB.upper(), "rag-otlp", "B")]
    assert imp.problems == []


def test_otlp_json_lines_one_export_per_line(tmp_path):
    export = json.loads((DATA / "openinference-otlp.json").read_text())
    spans = export["resourceSpans"][0]["scopeSpans"][0]["spans"]
    first = {"resourceSpans": [{**export["resourceSpans"][0], "scopeSpans": [{"spans": spans[:3]}]}]}
    second = {"resourceSpans": [{**export["resourceSpans"][0], "scopeSpans": [{"spans": spans[3:]}]}]}
    imp = read_trace_source(write_lines(tmp_path / "otlp.jsonl", [first, second]), "openinference")
    assert imp.traces == [trace(TA.upper(), "rag-otlp", "A"), trace(TB.upper(), "rag-otlp", "B")]


def test_phoenix_otlpv1_page_in_snake_case(tmp_path):
    # GET /v1/projects/{p}/spans/otlpv1: {"data": [OtlpSpan], "next_cursor"}, snake_case fields
    export = json.loads((DATA / "openinference-otlp.json").read_text())
    camel = {"traceId": "trace_id", "spanId": "span_id", "parentSpanId": "parent_span_id"}
    camel |= {"startTimeUnixNano": "start_time_unix_nano", "endTimeUnixNano": "end_time_unix_nano"}
    values = {"stringValue": "string_value", "intValue": "int_value", "doubleValue": "double_value"}
    spans = []
    for otlp_span in export["resourceSpans"][0]["scopeSpans"][0]["spans"]:
        snake = {camel.get(k, k): v for k, v in otlp_span.items() if k != "kind"}
        snake["attributes"] = [
            {"key": kv["key"], "value": {values[t]: v for t, v in kv["value"].items()}}
            for kv in snake["attributes"]
        ]
        spans.append(snake)
    (tmp_path / "page.json").write_text(json.dumps({"data": spans, "next_cursor": None}))
    imp = read_trace_source(tmp_path / "page.json", "openinference")  # no resource: no service.name
    assert imp.runs == {
        ("openinference", "fetch"): {Q_A: FETCH_A, Q_B: FETCH_B},
        ("openinference", "keep"): {Q_A: KEEP_A},
    }
    assert imp.traces == [trace(TA.upper(), "openinference", "A"), trace(TB.upper(), "openinference", "B")]


def test_otlp_unknown_service_name_falls_back(tmp_path):
    export = json.loads((DATA / "openinference-otlp.json").read_text())
    export["resourceSpans"][0]["resource"]["attributes"] = [
        {"key": "service.name", "value": {"stringValue": "unknown_service:python"}}
    ]
    (tmp_path / "otlp.json").write_text(json.dumps(export))
    imp = read_trace_source(tmp_path / "otlp.json", "openinference")
    assert sorted(imp.runs) == [("openinference", "fetch"), ("openinference", "keep")]


def test_integer_document_ids_are_text(tmp_path):
    root = {"context": {"trace_id": "t", "span_id": "r"}, "span_kind": "CHAIN"}
    root["attributes"] = {"input.value": QA, "output.value": AA}
    retriever = {"context": {"trace_id": "t", "span_id": "s"}, "parent_id": "r", "span_kind": "RETRIEVER"}
    retriever["attributes"] = {
        "retrieval.documents.0.document.id": 7,
        "retrieval.documents.0.document.content": "seven",
    }
    imp = read_trace_source(write_lines(tmp_path / "s.jsonl", [root, retriever]), "openinference")
    assert imp.runs == {("openinference", "fetch"): {Q_A: [("7", None)]}}
    assert imp.chunks == [{"id": "7", "text": "seven"}]


# ---------------------------------------------------------------- Langfuse


def test_langfuse_single_trace():
    imp = read_trace_source(DATA / "langfuse-trace.json", "langfuse")
    assert imp.queries == {Q_A: QA}
    assert imp.chunks == CHUNKS[:3]
    # RETRIEVER observation -> fetch (metadata.score); the SPAN named CohereRerank -> keep
    assert imp.runs == {("rag-v2", "fetch"): {Q_A: FETCH_A}, ("rag-v2", "keep"): {Q_A: KEEP_A}}
    assert imp.traces == [trace("lf-7c1d2e3f", "rag-v2", "A")]
    assert imp.problems == []


def test_langfuse_trace_list_with_null_trace_input_reads_the_root_observation(tmp_path):
    one = json.loads((DATA / "langfuse-trace.json").read_text())
    one |= {"input": None, "output": None, "version": None, "release": None}
    (tmp_path / "traces.json").write_text(json.dumps([one]))
    imp = read_trace_source(tmp_path / "traces.json", "langfuse")
    # the root observation (obs-root) gives question, answer and version
    assert imp.traces == [trace("lf-7c1d2e3f", "rag-v2", "A")]
    one["observations"][1]["version"] = None
    (tmp_path / "traces.json").write_text(json.dumps([one]))
    assert read_trace_source(tmp_path / "traces.json", "langfuse").traces[0]["system"] == "langfuse"


def test_langfuse_observations_page_with_a_mapping():
    mapping = {"retriever": "search-docs", "chunk_id": "metadata.doc_id", "score": "metadata.similarity"}
    imp = read_trace_source(DATA / "langfuse-observations.json", "langfuse", mapping)
    assert imp.queries == {Q_B: QB, Q_C: QC}
    assert imp.chunks == [CHUNKS[3], CHUNKS[4], CHUNKS[0], CHUNKS[2]]
    assert imp.runs == {("rag-v1", "fetch"): {Q_B: FETCH_B, Q_C: FETCH_C}}
    assert imp.traces == [trace("lf-trace-b", "rag-v1", "B")]
    assert imp.problems == [no_answer("lf-trace-c", "data[3]", "output|root_observation.output")]


def test_langfuse_observations_page_without_the_mapping_finds_no_retriever():
    imp = read_trace_source(DATA / "langfuse-observations.json", "langfuse")
    assert imp.runs == {}  # SPANs are retrievers only when named in --map retriever=NAME
    assert imp.traces == [{**trace("lf-trace-b", "rag-v1", "B"), "contexts": []}]


def test_langfuse_blob_export_with_json_encoded_input_and_output():
    imp = read_trace_source(DATA / "langfuse-blob.jsonl", "langfuse")
    assert imp.queries == {Q_A: QA, Q_B: QB}
    assert imp.chunks == CHUNKS
    assert imp.runs == {("rag-v3", "fetch"): {Q_A: FETCH_A, Q_B: FETCH_B}, ("rag-v3", "keep"): {Q_A: KEEP_A}}
    assert imp.traces == [trace("lf-blob-a", "rag-v3", "A"), trace("lf-blob-b", "rag-v3", "B")]
    assert imp.problems == []


def test_langfuse_pages_as_json_lines(tmp_path):
    page = json.loads((DATA / "langfuse-observations.json").read_text())
    pages = [{"data": page["data"][:2], "meta": {"page": 1}}, {"data": page["data"][2:], "meta": {"page": 2}}]
    mapping = ["retriever=search-docs", "chunk_id=metadata.doc_id", "score=metadata.similarity"]
    imp = read_trace_source(write_lines(tmp_path / "pages.jsonl", pages), "langfuse", mapping)
    assert imp.runs == {("rag-v1", "fetch"): {Q_B: FETCH_B, Q_C: FETCH_C}}
    assert imp.traces == [trace("lf-trace-b", "rag-v1", "B")]


# ---------------------------------------------------------------- LangSmith

LS_A, LS_B, LS_C = (
    "1b64098b-4ab7-43f6-afee-992304f198d8",
    "809ed3a2-0172-4f4d-8a02-a64e9b7a0f8a",
    "c8d9f4c5-6c5a-4b2d-9b1c-3d9d7a7c5c7c",
)


def test_langsmith_runs():
    imp = read_trace_source(DATA / "langsmith-runs.json", "langsmith")
    system = "rag-git-3f9a2c1"  # extra.metadata.revision_id
    assert imp.queries == {Q_A: QA, Q_B: QB, Q_C: QC}
    assert imp.chunks == CHUNKS
    unscored = lambda ranking: [(doc, None) for doc, _ in ranking]  # noqa: E731
    assert imp.runs == {
        # the VectorStoreRetriever inside ContextualCompressionRetriever fetched (no scores) ...
        (system, "fetch"): {Q_A: unscored(FETCH_A), Q_B: unscored(FETCH_B), Q_C: unscored(FETCH_C)},
        # ... and the compression retriever (CohereRerank: metadata.relevance_score) kept
        (system, "keep"): {Q_A: KEEP_A},
    }
    assert imp.traces == [trace(LS_A, system, "A"), trace(LS_B, system, "B")]
    assert imp.problems == [no_answer(LS_C, "record 6", "outputs")]


def test_langsmith_runs_object_without_trace_ids(tmp_path):
    runs = json.loads((DATA / "langsmith-runs.json").read_text())
    for run in runs:
        del run["trace_id"]  # grouped by following parent_run_id to the root
    (tmp_path / "runs.json").write_text(json.dumps({"runs": runs}))
    imp = read_trace_source(tmp_path / "runs.json", "langsmith")
    assert imp.runs == read_trace_source(DATA / "langsmith-runs.json", "langsmith").runs
    assert [t["id"] for t in imp.traces] == [LS_A, LS_B]


def test_langsmith_json_lines_and_a_reranker_mapping(tmp_path):
    runs = json.loads((DATA / "langsmith-runs.json").read_text())
    path = write_lines(tmp_path / "runs.jsonl", runs)
    assert (
        read_trace_source(path, "langsmith").runs
        == read_trace_source(DATA / "langsmith-runs.json", "langsmith").runs
    )
    # --map reranker=NAME replaces the name rule: the compression retriever is then the
    # outermost retriever (its output is the fetch) and there is no keep stage
    imp = read_trace_source(path, "langsmith", ["reranker=NoSuchReranker", 'system="rag-ls"'])
    assert imp.runs[("rag-ls", "fetch")][Q_A] == KEEP_A
    assert ("rag-ls", "keep") not in imp.runs
    assert imp.traces[0]["contexts"] == ["d2", "d1"]


# ---------------------------------------------------------------- the product's JSONL


def test_product_jsonl_source():
    imp = read_trace_source(DATA / "traces.jsonl", "jsonl")
    assert imp.queries == {"q1": QA}
    assert imp.chunks == [] and imp.runs == {} and imp.problems == []
    assert [t["id"] for t in imp.traces] == ["t1", "t2"]
    assert imp.traces[1]["contexts"] == [TEXT["d1"]]


# ---------------------------------------------------------------- mapping


def test_mapping_paths_alternatives_and_constants(tmp_path):
    root = {"context.span_id": "r", "context.trace_id": "t", "span_kind": "CHAIN"}
    root["attributes.input.value"] = json.dumps({"messages": [{"role": "user", "content": QA}], "k": 1})
    root["attributes.output.value"] = json.dumps({"text": AA, "sources": ["d1"]})
    root["attributes.metadata"] = {"ticket": "T-1", "app": {"build": 42}}
    retriever = {"context.span_id": "s", "context.trace_id": "t", "parent_id": "r", "span_kind": "RETRIEVER"}
    retriever["attributes.retrieval.documents"] = [
        {"document.content": TEXT["d1"], "document.metadata": {"doc_id": "d1", "relevance": 0.5}},
        {"document.content": TEXT["d2"], "document.metadata": json.dumps({"doc_id": "d2", "relevance": 0.4})},
    ]
    path = write_lines(tmp_path / "s.jsonl", [root, retriever])
    imp = read_trace_source(path, "openinference")
    assert imp.traces == [] and len(imp.problems) == 1  # a JSON object with no question key
    assert "no question at attributes.input.value" in imp.problems[0]
    mapping = [
        "question=attributes.input.value.messages.0.content",
        "answer=attributes.output.value.answer|attributes.output.value.text",
        "system=attributes.metadata.app.build",
        "query_id=attributes.metadata.ticket",
        "chunk_id=document.metadata.doc_id",
        "score=document.metadata.relevance",
    ]
    imp = read_trace_source(path, "openinference", mapping)
    assert imp.queries == {"T-1": QA}
    assert imp.runs == {("42", "fetch"): {"T-1": [("d1", 0.5), ("d2", 0.4)]}}
    assert imp.traces == [
        {"id": "t", "query_id": "T-1", "system": "42", "question": QA, "contexts": ["d1", "d2"], "answer": AA}
    ]


def test_parse_mapping_refuses_unknown_keys_and_bad_items():
    assert parse_mapping(["question=inputs.query", " score = metadata.s "]) == {
        "question": "inputs.query",
        "score": "metadata.s",
    }
    with pytest.raises(InvalidTraceSource, match=r"--map: colour: unknown key; expected one of question"):
        parse_mapping(["colour=red"])
    with pytest.raises(InvalidTraceSource, match=r"expected KEY=PATH"):
        parse_mapping(["question"])
    with pytest.raises(InvalidTraceSource, match=r"question: empty"):
        parse_mapping({"question": ""})
    with pytest.raises(InvalidTraceSource, match=r"documents applies to langfuse and langsmith"):
        read_trace_source(DATA / "openinference-otlp.json", "openinference", ["documents=output"])
    with pytest.raises(InvalidTraceSource, match=r"jsonl source has fixed fields"):
        read_trace_source(DATA / "traces.jsonl", "jsonl", ["question=q"])


# ---------------------------------------------------------------- problems and conflicts


def span(trace_id: str, span_id: str, parent: str | None, kind: str, **attributes) -> dict:
    record = {
        "context.span_id": span_id,
        "context.trace_id": trace_id,
        "parent_id": parent,
        "span_kind": kind,
    }
    return record | {f"attributes.{key}": value for key, value in attributes.items()}


def docs(*pairs) -> list[dict]:
    return [
        {"document.id": doc, "document.content": TEXT.get(doc, doc), "document.score": s} for doc, s in pairs
    ]


def test_a_question_asked_twice_keeps_the_first_ranking_and_says_so(tmp_path):
    spans = [
        span("t1", "r1", None, "CHAIN", **{"input.value": QA, "output.value": AA}),
        span("t1", "s1", "r1", "RETRIEVER", **{"retrieval.documents": docs(("d1", 0.9), ("d2", 0.8))}),
        span("t2", "r2", None, "CHAIN", **{"input.value": QA, "output.value": "Paris."}),
        span("t2", "s2", "r2", "RETRIEVER", **{"retrieval.documents": docs(("d2", 0.9), ("d1", 0.8))}),
        span("t3", "r3", None, "CHAIN", **{"input.value": QA, "output.value": "Paris!"}),
        span("t3", "s3", "r3", "RETRIEVER", **{"retrieval.documents": docs(("d1", 0.9), ("d2", 0.8))}),
    ]
    imp = read_trace_source(write_lines(tmp_path / "s.jsonl", spans), "openinference")
    assert imp.runs == {("openinference", "fetch"): {Q_A: [("d1", 0.9), ("d2", 0.8)]}}
    assert [t["id"] for t in imp.traces] == ["t1", "t2", "t3"]  # every trace is kept
    assert imp.traces[1]["contexts"] == ["d2", "d1"]
    assert imp.problems == [
        f"trace 't2' (line 3): system 'openinference' fetch: query {Q_A!r} was already ranked "
        "differently by trace 't1'; kept that first ranking"
    ]


def test_a_trace_without_a_question_is_listed_and_counts_nothing(tmp_path):
    spans = [
        span("t1", "r1", None, "CHAIN", **{"output.value": AA}),
        span("t1", "s1", "r1", "RETRIEVER", **{"retrieval.documents": docs(("d1", 0.9))}),
        span("t2", "s2", "r2", "RETRIEVER", **{"retrieval.documents": [{"document.score": 0.3}]}),
        span("t2", "r2", None, "CHAIN", **{"input.value": QB, "output.value": AB}),
    ]
    imp = read_trace_source(write_lines(tmp_path / "s.jsonl", spans), "openinference")
    assert imp.queries == {Q_B: QB}
    assert imp.chunks == []
    assert imp.runs == {("openinference", "fetch"): {Q_B: []}}
    assert imp.traces == [
        {"id": "t2", "query_id": Q_B, "system": "openinference", "question": QB, "contexts": [], "answer": AB}
    ]
    assert imp.problems == [
        "trace 't1' (line 1): no question at attributes.input.value; not imported, and its retrievals "
        "are not counted (no query to file them under); give --map question=PATH",
        "trace 't2' (line 3): attributes.retrieval.documents.0 has neither a chunk id (document.id) nor "
        "a text (document.content); left out",
    ]


def test_the_same_chunk_id_with_two_texts_is_refused(tmp_path):
    spans = [
        span("t1", "r1", None, "CHAIN", **{"input.value": QA, "output.value": AA}),
        span("t1", "s1", "r1", "RETRIEVER", **{"retrieval.documents": docs(("d1", 0.9))}),
        span("t2", "r2", None, "CHAIN", **{"input.value": QB, "output.value": AB}),
        span(
            "t2",
            "s2",
            "r2",
            "RETRIEVER",
            **{"retrieval.documents": [{"document.id": "d1", "document.content": "Something else."}]},
        ),
    ]
    path = write_lines(tmp_path / "s.jsonl", spans)
    with pytest.raises(ChunkConflict) as info:
        read_trace_source(path, "openinference")
    error = info.value
    assert isinstance(error, FormatError) and error.line == 4
    assert error.field == "attributes.retrieval.documents.0"
    assert str(error) == (
        f"{path}:4: attributes.retrieval.documents.0: chunk 'd1' has the text 'Something else.' here and "
        f"{TEXT['d1'][:40]!r}... (48 characters) at line 2, attributes.retrieval.documents.0; "
        "expected one text per chunk id"
    )


def test_a_query_id_with_two_questions_is_refused(tmp_path):
    spans = [
        span("t1", "r1", None, "CHAIN", **{"input.value": QA, "output.value": AA, "metadata": {"q": "Q1"}}),
        span("t2", "r2", None, "CHAIN", **{"input.value": QB, "output.value": AB, "metadata": {"q": "Q1"}}),
    ]
    path = write_lines(tmp_path / "s.jsonl", spans)
    with pytest.raises(
        QueryConflict, match=r"s\.jsonl:2: query_id: query 'Q1' asks 'Who wrote Hamlet\?' here"
    ):
        read_trace_source(path, "openinference", ["query_id=attributes.metadata.q"])


# ---------------------------------------------------------------- malformed input


def bad(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize(
    "source, name, text, expected",
    [
        ("openinference", "s.json", '{"data": [', r"s\.json:1: not JSON \(Expecting value, column 11\)"),
        ("openinference", "s.jsonl", '{"context.span_id": "a"}\n{oops}\n', r"s\.jsonl:2: not JSON"),
        ("openinference", "s.json", "", r"s\.json: file is empty"),
        (
            "openinference",
            "s.jsonl",
            '{"context.span_id": "a", "span_kind": "CHAIN"}\n',
            r"s\.jsonl:1: context\.trace_id: missing; expected an id",
        ),
        (
            "openinference",
            "s.json",
            '{"data": [{"context": {"trace_id": "t", "span_id": ["x"]}}]}',
            r"s\.json: data\[0\]\.context\.span_id: expected a string id, got \[\"x\"\]",
        ),
        (
            "openinference",
            "s.json",
            '{"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "t", "spanId": "s", "attributes": [1]}]}]}]}',
            r"resourceSpans\[0\]\.scopeSpans\[0\]\.spans\[0\]\.attributes\[0\]: expected \{\"key\"",
        ),
        ("openinference", "s.json", '{"hello": "world"}', r"s\.json: not a span; expected Phoenix spans"),
        (
            "langfuse",
            "o.json",
            '{"data": [{"id": "o1", "traceId": "t"}]}',
            r"data\[0\]: expected a Langfuse trace",
        ),
        (
            "langfuse",
            "o.jsonl",
            '{"id": "o1", "type": "SPAN"}\n',
            r"o\.jsonl:1: traceId: missing; expected the observation's trace id",
        ),
        ("langsmith", "r.json", '[{"id": "r1", "trace_id": "r1"}]', r"record 0: expected LangSmith runs"),
        (
            "langsmith",
            "r.json",
            '[{"id": "r1", "run_type": 3}]',
            r"record 0\.run_type: missing; expected the run type",
        ),
    ],
)
def test_malformed_input_names_file_record_and_field(tmp_path, source, name, text, expected):
    path = bad(tmp_path, name, text)
    with pytest.raises(InvalidTraceSource, match=expected) as info:
        read_trace_source(path, source)
    assert str(path) in str(info.value)
    assert isinstance(info.value, FormatError)


def root_and_retriever(document: dict) -> list[dict]:
    return [
        span("t", "r", None, "CHAIN", **{"input.value": QA, "output.value": AA}),
        span("t", "s", "r", "RETRIEVER", **{"retrieval.documents": [document]}),
    ]


@pytest.mark.parametrize(
    "document, expected",
    [
        (
            {"document.id": {"x": 1}, "document.content": "t"},
            r":2: attributes\.retrieval\.documents\.0\.document\.id: expected a string id",
        ),
        ({"document.id": True}, r"document\.id: expected a string id, got true"),
        (
            {"document.id": "d1", "document.score": "high"},
            r"attributes\.retrieval\.documents\.0\.document\.score: expected a number \(the score\), got \"high\"",
        ),
        ({"document.id": "d1", "document.content": ["a"]}, r"document\.content: expected the chunk's text"),
    ],
)
def test_malformed_documents_are_refused(tmp_path, document, expected):
    path = write_lines(tmp_path / "s.jsonl", root_and_retriever(document))
    with pytest.raises(InvalidTraceSource, match=expected):
        read_trace_source(path, "openinference")


def test_not_a_parquet_file_and_unknown_source(tmp_path):
    path = tmp_path / "spans.parquet"
    path.write_bytes(b"PAR1 this is not parquet")
    with pytest.raises(InvalidTraceSource, match=r"spans\.parquet: not a readable Parquet file"):
        read_trace_source(path, "openinference")
    with pytest.raises(InvalidTraceSource, match=r"source: 'phoenix'; expected one of openinference"):
        read_trace_source(DATA / "traces.jsonl", "phoenix")
    with pytest.raises(InvalidTraceSource, match=r"no such file"):
        read_trace_source(tmp_path / "missing.json", "langsmith")


# ---------------------------------------------------------------- the store


def another_db(db_at: str, request, tmp_path: Path) -> str:
    """A second new store on db_at's backend: another PostgreSQL database, or another file."""
    if postgres.is_url(db_at):
        return request.getfixturevalue("postgres_server").database()
    return str(tmp_path / "other.db")


def snapshot(store: Store) -> dict[str, list[tuple]]:
    return {
        "queries": rows(store, "SELECT id, text FROM queries ORDER BY id"),
        "chunks": rows(store, "SELECT id, text, source, meta FROM chunks ORDER BY id"),
        "runs": rows(store, "SELECT name, stage FROM runs ORDER BY name"),
        "rankings": rows(
            store,
            "SELECT r.name, k.query_id, k.rank, k.chunk_id, k.score FROM rankings k JOIN runs r ON r.id = k.run_id "
            "ORDER BY r.name, k.query_id, k.rank",
        ),
        "traces": rows(
            store, "SELECT id, query_id, system, question, contexts, answer FROM traces ORDER BY id"
        ),
        "items": rows(store, "SELECT kind, query_id, trace_id FROM items ORDER BY id"),
    }


def test_round_trip_through_a_store_and_reimport_changes_nothing(db_at):
    imp = read_trace_source(DATA / "openinference-phoenix-df.jsonl", "openinference")
    with Store(db_at) as store:
        counts = to_store(store, imp)
        assert counts == {
            "queries": 3,
            "chunks": 5,
            "runs": 2,
            "rankings": 9,
            "traces": 2,
            "unchanged": 0,
            "identical": 0,
            "positional": 0,
        }
        first = snapshot(store)
        assert first["queries"] == sorted([(Q_A, QA), (Q_B, QB), (Q_C, QC)])
        assert first["chunks"] == sorted((c["id"], c["text"], None, None) for c in CHUNKS)
        assert first["runs"] == [("openinference:fetch", "fetch"), ("openinference:keep", "keep")]
        fetch = [r[1:] for r in first["rankings"] if r[0] == "openinference:fetch"]
        assert fetch == sorted(
            [(Q_A, i + 1, d, s) for i, (d, s) in enumerate(FETCH_A)]
            + [(Q_B, i + 1, d, s) for i, (d, s) in enumerate(FETCH_B)]
            + [(Q_C, 1, "d3", 0.66)]
        )
        keep = [r[1:] for r in first["rankings"] if r[0] == "openinference:keep"]
        assert keep == [(Q_A, 1, "d2", 0.98), (Q_A, 2, "d1", 0.95)]
        assert first["traces"] == [
            (TA, Q_A, "openinference", QA, '["d2", "d1"]', AA),
            (TB, Q_B, "openinference", QB, f'["d4", "{C_X}", "d1"]', AB),
        ]
        assert first["items"] == [("trace", Q_A, TA), ("trace", Q_B, TB)]

        again = to_store(store, read_trace_source(DATA / "openinference-phoenix-df.jsonl", "openinference"))
        assert again == {
            "queries": 0,
            "chunks": 0,
            "runs": 0,
            "rankings": 0,
            "traces": 0,
            "unchanged": 3 + 5 + 9 + 2,
            "identical": 0,
            "positional": 0,
        }
        assert snapshot(store) == first


def test_two_sources_share_queries_and_chunks_in_one_store(db_at):
    with Store(db_at) as store:
        to_store(store, read_trace_source(DATA / "openinference-otlp.json", "openinference"))
        identical: list[tuple[str, str]] = []
        counts = to_store(
            store, read_trace_source(DATA / "langfuse-blob.jsonl", "langfuse"), identical=identical
        )
        snap = snapshot(store)
        assert len(snap["queries"]) == 2 and len(snap["chunks"]) == 5  # same questions, same chunks
        assert [name for name, _ in snap["runs"]] == [
            "rag-otlp:fetch",
            "rag-otlp:keep",
            "rag-v3:fetch",
            "rag-v3:keep",
        ]
        # the two exports hold the same two answers (question, contexts and answer): one item each,
        # the second export's traces named as not imported; its runs land
        assert counts["traces"] == 0 and counts["identical"] == 2 and counts["runs"] == 2
        assert identical == [
            ("lf-blob-a", "0AF7651916CD43DD8448EB211C80319C"),
            ("lf-blob-b", "4BF92F3577B34DA6A3CE929D0E0E4736"),
        ]
        assert len(snap["traces"]) == 2


def test_unscored_or_unordered_rankings_keep_their_rank_order_in_the_store(db_at):
    imp = read_trace_source(DATA / "langsmith-runs.json", "langsmith")
    imp.runs[("rag-git-3f9a2c1", "keep")][Q_A] = [("d2", 0.1), ("d1", 0.7)]  # distances: lower is better
    with Store(db_at) as store:
        counts = to_store(store, imp)
        assert counts["positional"] == 4  # three unscored fetch rankings and the distances
        snap = snapshot(store)
    fetch_a = [r[2:] for r in snap["rankings"] if r[0] == "rag-git-3f9a2c1:fetch" and r[1] == Q_A]
    assert fetch_a == [(1, "d1", 3.0), (2, "d2", 2.0), (3, "d3", 1.0)]
    keep_a = [r[2:] for r in snap["rankings"] if r[0] == "rag-git-3f9a2c1:keep"]
    assert keep_a == [(1, "d2", 2.0), (2, "d1", 1.0)]


def test_a_store_conflict_writes_nothing_and_a_run_prefix_takes_a_later_export(db_at, request, tmp_path):
    with Store(db_at) as store:
        store.import_corpus([{"id": "d1", "text": "Another text for d1."}])
        before = snapshot(store)
        imp = read_trace_source(DATA / "openinference-phoenix-df.jsonl", "openinference")
        with pytest.raises(ImportConflict):
            to_store(store, imp)
        assert snapshot(store) == before  # one transaction: nothing of the import landed

    with Store(another_db(db_at, request, tmp_path)) as store:
        to_store(store, read_trace_source(DATA / "openinference-nested.json", "openinference"))
        later = read_trace_source(DATA / "openinference-phoenix-df.jsonl", "openinference")  # adds query C
        with pytest.raises(ImportConflict, match="openinference:fetch"):
            to_store(store, later)
        counts = to_store(store, later, run_prefix="week-2/")
        assert counts["runs"] == 2 and counts["traces"] == 0  # the two traces were already there
        assert [name for name, _ in snapshot(store)["runs"]] == [
            "openinference:fetch",
            "openinference:keep",
            "week-2/openinference:fetch",
            "week-2/openinference:keep",
        ]


# ---------------------------------------------------------------- synthetic spans for benchmarks


@pytest.mark.parametrize("form", ["jsonl", "parquet", "otlp"])
def test_synthetic_openinference(tmp_path, form):
    path = synthetic_openinference(20, tmp_path / f"spans.{form}", form=form, fetch=5, keep=2)
    imp = read_trace_source(path, "openinference")
    assert imp.counts()["traces"] == 20 and imp.counts()["queries"] == 10 and imp.problems == []
    assert sorted(imp.runs) == [("rag-a", "fetch"), ("rag-a", "keep"), ("rag-b", "fetch"), ("rag-b", "keep")]
    assert all(len(r) == 5 for r in imp.runs[("rag-a", "fetch")].values())
    assert all(
        t["contexts"] == [d for d, _ in imp.runs[(t["system"], "keep")][t["query_id"]]] for t in imp.traces
    )
    jsonl = read_trace_source(
        synthetic_openinference(20, tmp_path / "same.jsonl", fetch=5, keep=2), "openinference"
    )
    # the same content whatever the form (OTLP groups spans by service, so the first-seen order differs)
    texts = {c["id"]: c["text"] for c in imp.chunks}
    assert (imp.queries, texts, imp.runs) == (
        jsonl.queries,
        {c["id"]: c["text"] for c in jsonl.chunks},
        jsonl.runs,
    )


def test_synthetic_import_speed(db_at, tmp_path, figure):
    n = 1000
    path = synthetic_openinference(n, tmp_path / "spans.jsonl")
    start = time.perf_counter()
    imp = read_trace_source(path, "openinference")
    read = time.perf_counter() - start
    with Store(db_at) as store:
        start = time.perf_counter()
        counts = to_store(store, imp)
        write = time.perf_counter() - start
    assert counts["traces"] == n and counts["rankings"] == n * 13
    figure(
        f"trace_sources: {n} synthetic OpenInference traces read in {read:.2f} s, "
        f"written in {write:.2f} s ({store.dialect})"
    )


def test_a_trace_not_imported_leaves_no_query_unless_a_ranking_names_it(db_at):
    """L4: to_store writes the queries of the traces it imports and of the rankings, and no other:
    a trace identical to a stored one under another query id, or a trace whose query nothing ranks,
    leaves no query row."""

    def trace(tid: str, qid: str) -> dict:
        return {
            "id": tid,
            "query_id": qid,
            "system": "s",
            "question": "why?",
            "contexts": ["c"],
            "answer": "a",
        }

    with Store(db_at) as store:
        first = TraceImport("openinference", "x", queries={"q_a": "why?"}, traces=[trace("t1", "q_a")])
        assert to_store(store, first)["queries"] == 1
        repeat = TraceImport(
            "openinference",
            "y",
            queries={"q_b": "why?", "q_ranked": "what?", "q_alone": "who?"},
            runs={("s", "fetch"): {"q_ranked": [("c1", 1.0)]}},
            traces=[trace("t2", "q_b")],
        )
        identical: list[tuple[str, str]] = []
        counts = to_store(store, repeat, identical=identical)
        assert (counts["queries"], counts["traces"], counts["identical"], counts["rankings"]) == (1, 0, 1, 1)
        assert identical == [("t2", "t1")]
        stored = {row[0] for row in store.db.execute("SELECT id FROM queries")}
        assert stored == {"q_a", "q_ranked"}
