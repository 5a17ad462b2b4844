"""Synthetic RAG traces as OpenInference spans, for the trace-import benchmark
(bench/trace_import.py) and its tests: :func:`synthetic_openinference`."""

from __future__ import annotations

import json
import os
import random
from datetime import date, datetime
from pathlib import Path
from typing import Any

import pandas as pd


def synthetic_openinference(
    n_traces: int,
    path: str | os.PathLike,
    *,
    form: str = "jsonl",
    fetch: int = 10,
    keep: int = 3,
    corpus: int = 2000,
    seed: int = 0,
) -> Path:
    """Write ``n_traces`` synthetic RAG traces as OpenInference spans (for
    benchmarks): per trace a CHAIN root (question, answer), a RETRIEVER with
    ``fetch`` documents, a RERANKER keeping ``keep`` and an LLM span. Two
    systems (``rag-a``, ``rag-b``) answer each question, so there are
    ``n_traces / 2`` queries. ``form``: ``jsonl`` (Phoenix dataframe records,
    one per line, documents as the ``attributes.retrieval.documents`` column,
    system in ``attributes.metadata``), ``parquet`` (the same records as
    pandas writes them) or ``otlp`` (OTLP JSON lines, system as
    ``service.name``). Deterministic for a seed."""
    rng = random.Random(seed)
    systems = ("rag-a", "rag-b")
    texts = [
        f"Passage {k} about topic {k % 97}: " + " ".join(f"w{(k * 7 + j) % 503}" for j in range(30))
        for k in range(corpus)
    ]
    records: list[dict[str, Any]] = []
    otlp: dict[str, list[dict[str, Any]]] = {s: [] for s in systems}
    base = 1_700_000_000_000_000_000
    for t in range(n_traces):
        system = systems[t % 2]
        question = f"Question {t // 2}: what does topic {(t // 2) % 97} say about w{(t // 2) % 503}?"
        picked = rng.sample(range(corpus), fetch)
        docs = [
            {
                "document.id": f"doc-{k}",
                "document.content": texts[k],
                "document.score": round(1.0 - i / (fetch + 1), 6),
            }
            for i, k in enumerate(picked)
        ]
        kept = sorted(docs[: keep + 2], key=lambda d: rng.random())[:keep]
        kept = [{**d, "document.score": round(0.99 - i * 0.1, 6)} for i, d in enumerate(kept)]
        answer = f"Answer {t}: " + kept[0]["document.content"][:80]
        trace_id = f"{t:032x}"
        span_ids = [f"{t:012x}{k:04x}" for k in range(4)]
        start = base + t * 10_000_000
        spans = [
            ("rag.query", "CHAIN", None, {"input.value": question, "output.value": answer}),
            ("retrieve", "RETRIEVER", span_ids[0], {"input.value": question, "retrieval.documents": docs}),
            (
                "rerank",
                "RERANKER",
                span_ids[0],
                {
                    "reranker.query": question,
                    "reranker.input_documents": docs,
                    "reranker.output_documents": kept,
                },
            ),
            ("llm", "LLM", span_ids[0], {"input.value": question, "output.value": answer}),
        ]
        for k, (name, kind, parent, attrs) in enumerate(spans):
            if form == "otlp":
                flat: dict[str, Any] = {}
                _flatten(attrs, "", flat)
                flat["openinference.span.kind"] = kind
                otlp[system].append(
                    {
                        "traceId": trace_id,
                        "spanId": span_ids[k],
                        "parentSpanId": parent or "",
                        "name": name,
                        "kind": 1,
                        "startTimeUnixNano": str(start + k * 1000),
                        "endTimeUnixNano": str(start + k * 1000 + 500),
                        "attributes": [{"key": key, "value": _otlp_any(v)} for key, v in flat.items()],
                    }
                )
                continue
            record: dict[str, Any] = {
                "name": name,
                "span_kind": kind,
                "parent_id": parent,
                "start_time": (start + k * 1000) // 1_000_000,
                "end_time": (start + k * 1000 + 500) // 1_000_000,
                "status_code": "OK",
                "context.span_id": span_ids[k],
                "context.trace_id": trace_id,
                "attributes.openinference.span.kind": kind,
            }
            for key, value in attrs.items():
                record[f"attributes.{key}"] = value
            if k == 0:
                record["attributes.metadata"] = {"version": system}
            records.append(record)
    target = Path(path)
    if form == "otlp":
        with target.open("w", encoding="utf-8") as out:
            for system, spans_of in otlp.items():
                resource = {"attributes": [{"key": "service.name", "value": {"stringValue": system}}]}
                export = {"resourceSpans": [{"resource": resource, "scopeSpans": [{"spans": spans_of}]}]}
                out.write(json.dumps(export) + "\n")
    elif form == "parquet":
        pd.DataFrame.from_records(records).to_parquet(target)
    elif form == "jsonl":
        with target.open("w", encoding="utf-8") as out:
            for record in records:
                out.write(json.dumps(record, default=_json_default) + "\n")
    else:
        raise ValueError(f"form {form!r}; expected jsonl, parquet or otlp")
    return target


def _otlp_any(value: Any) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, float):
        return {"doubleValue": value}
    return {"stringValue": str(value)}


def _json_default(value: Any) -> Any:
    if isinstance(value, datetime | date):
        return value.isoformat()
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


def _flatten(value: Any, prefix: str, out: dict[str, Any]) -> None:
    """Nested attributes as flat dotted keys; lists of objects by index; a
    ``metadata`` object stays whole (OpenInference keeps it as JSON text)."""
    if value is None or (value.__class__ is float and value != value):  # null or NaN: absent
        return
    if isinstance(value, dict):
        if prefix.endswith("metadata"):
            out[prefix] = value
            return
        for key, item in value.items():
            _flatten(item, f"{prefix}.{key}" if prefix else str(key), out)
    elif isinstance(value, list) and any(isinstance(item, dict) for item in value):
        for i, item in enumerate(value):
            _flatten(item, f"{prefix}.{i}", out)
    else:
        out[prefix] = value
