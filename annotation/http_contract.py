"""The HTTP API's contract (:mod:`annotation.http_api`): its bounds and names, once, and the OpenAPI
3.1 document kept by hand beside the routes (a test holds the two together), with the plain page
``/api/docs`` that shows it (no script, nothing fetched from elsewhere: many users are offline)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from annotation.web import Html, page, render

__all__ = [
    "API_ENV",
    "API_PATH",
    "DEFAULT_BODY_BYTES",
    "MAX_BYTES_ENV",
    "BODY_BYTES_MAX",
    "BODY_IDLE_ENV",
    "SLOTS",
    "openapi",
    "docs_page",
]

API_ENV = "DENOMINATOR_API"  # "1": the app serves the API (``denominator serve --api`` sets it)
API_PATH = "/api"  # where ``serve --api`` mounts it (Streamlit reserves /_stcore and the like)
DEFAULT_BODY_BYTES = 8 * 1024 * 1024  # one push: 1,000 traces of a few KB each fit in it
MAX_BYTES_ENV = "DENOMINATOR_API_MAX_BYTES"
BODY_BYTES_MAX = 2**30  # the most --api-max-bytes may say: a push is held in memory whole (1 GiB)
BODY_IDLE_ENV = "DENOMINATOR_BODY_IDLE_SECONDS"  # the longest pause inside a body before 408
BODY_IDLE_DEFAULT = 30
SECONDS_MAX = 3600  # the longest deadline a setting may give (an hour)
TOKEN_CHARS = 512  # the longest Authorization value read (a token is 32 characters)
NAME_CHARS = 200  # an annotator's name, a run's name, an import's name given as a parameter
LIMIT_MAX = 10_000  # the most labels one answer carries
LIMIT_DEFAULT = 1_000
JSON_BYTES = 64 * 1024  # a pool's or pairs' request: a few names and numbers
NAMES_MAX = 100  # runs or people named in one request
DEPTH_MAX = 1_000  # the deepest pool one request asks for
ID_MAX = 2**63 - 1
KINDS = ("chunk", "trace", "pair")

# slot: the file name each body is written under (the readers choose the format by extension)
SLOTS: dict[str, dict[str, str]] = {
    "corpus": {"jsonl": "corpus.jsonl"},
    "queries": {"jsonl": "queries.jsonl", "tsv": "queries.tsv"},
    "run": {"trec": "run.trec", "jsonl": "run.jsonl"},
    "traces": {"jsonl": "traces.jsonl", "json": "traces.json"},
}
TRACE_SOURCES = ("jsonl", "openinference", "langfuse", "langsmith")
NO_STORE = {"Cache-Control": "no-store"}


_ERROR = {
    "description": "one line that says why",
    "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}},
}
_AUTH = {
    "401": {**_ERROR, "description": "no token, or not a valid one"},
    "403": {**_ERROR, "description": "the token's role may not"},
}


_COMPONENTS: dict[str, Any] = {
    "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
    "schemas": {
        "Error": {
            "type": "object",
            "required": ["error"],
            "properties": {"error": {"type": "string"}},
        },
        "Who": {
            "type": "object",
            "properties": {
                "name": {"type": "string"},
                "role": {"enum": ["annotator", "reviewer", "admin"]},
            },
        },
        "Imported": {
            "type": "object",
            "properties": {"imported": {"type": "array", "items": {"type": "string"}}},
        },
        "Label": {
            "type": "object",
            "properties": {
                **{key: {"type": "integer"} for key in ("label_id", "item_id", "value")},
                "kind": {"enum": list(KINDS)},
                **{
                    key: {"type": ["string", "null"]}
                    for key in ("query_id", "chunk_id", "trace_id", "trace_b_id", "note")
                },
                **{key: {"type": "string"} for key in ("annotator", "rubric", "created_at")},
            },
        },
        "Labels": {
            "type": "object",
            "properties": {
                "labels": {"type": "array", "items": {"$ref": "#/components/schemas/Label"}},
                "count": {"type": "integer"},
                "next_after": {"type": ["integer", "null"]},
            },
        },
        "Pooled": {"type": "object", "properties": {"pool": {"type": "object"}}},
        "Paired": {
            "type": "object",
            "properties": {"pairs": {"type": "integer"}, "added": {"type": "integer"}},
        },
        "Verdicts": {
            "type": "object",
            "properties": {
                "verdicts": {"type": "array", "items": {"type": "object"}},
                "count": {"type": "integer"},
            },
        },
    },
}


def _json_ok(ref: str, text: str) -> dict[str, Any]:
    return {
        "description": text,
        "content": {"application/json": {"schema": {"$ref": f"#/components/schemas/{ref}"}}},
    }


def _json_request(schema: dict[str, Any]) -> dict[str, Any]:
    return {"required": True, "content": {"application/json": {"schema": schema}}}


def _name_list() -> dict[str, Any]:
    return {"type": "array", "maxItems": NAMES_MAX, "items": {"type": "string", "maxLength": NAME_CHARS}}


def _query(name: str, text: str, schema: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, "in": "query", "required": False, "description": text, "schema": schema}


def _work_paths() -> dict[str, Any]:
    """The routes that turn pushed data into items: a pool of runs, pairs of answers."""
    return {
        "/pool": {
            "post": {
                "summary": "Pool the runs' top depth as chunk items (admin only)",
                "description": "What python -m annotation pool does: the (query, chunk) pairs of the runs' "
                "top depth become items, assigned to the people named (none: open to everyone).",
                "requestBody": _json_request(
                    {
                        "type": "object",
                        "required": ["depth"],
                        "additionalProperties": False,
                        "properties": {
                            "depth": {"type": "integer", "minimum": 1, "maximum": DEPTH_MAX},
                            "runs": _name_list(),
                            "annotators": _name_list(),
                        },
                    }
                ),
                "responses": {"200": _json_ok("Pooled", "the pool's report"), "400": _ERROR, **_AUTH},
            }
        },
        "/pairs": {
            "post": {
                "summary": "A pair item per query two systems answered (admin only)",
                "description": "Their first traces per query, compared A against B (pushed as traces first).",
                "requestBody": _json_request(
                    {
                        "type": "object",
                        "required": ["system_a", "system_b"],
                        "properties": {
                            "system_a": {"type": "string", "maxLength": NAME_CHARS},
                            "system_b": {"type": "string", "maxLength": NAME_CHARS},
                        },
                    }
                ),
                "responses": {
                    "200": _json_ok("Paired", "pairs found and items added"),
                    "400": _ERROR,
                    **_AUTH,
                },
            }
        },
    }


def openapi() -> dict[str, Any]:
    """The API's OpenAPI 3.1 document, kept by hand beside the routes (tests hold the two together)."""
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "Denominator HTTP API",
            "version": "1",
            "description": "Push work to the labelling queue and read labels and judges' verdicts. "
            "Authorization: Bearer <token> (python -m annotation annotators add). Bodies at most "
            f"{DEFAULT_BODY_BYTES} bytes by default ({MAX_BYTES_ENV}).",
        },
        "servers": [{"url": API_PATH}],
        "security": [{"bearer": []}],
        "paths": {
            "/me": {
                "get": {
                    "summary": "Who the token is",
                    "responses": {"200": _json_ok("Who", "name and role"), **_AUTH},
                }
            },
            **_work_paths(),
            "/import/{slot}": {
                "post": {
                    "summary": "Import one file of the import formats (admin only)",
                    "description": "The body is the file: corpus (JSONL chunks), queries (JSONL or TSV), "
                    "run (TREC or JSONL rankings; ?name= required) or traces (JSONL; ?from= another "
                    "source's export). One transaction: a malformed body stores nothing. Traces become "
                    "trace items in the labelling queue.",
                    "parameters": [
                        {"name": "slot", "in": "path", "required": True, "schema": {"enum": list(SLOTS)}},
                        _query(
                            "format",
                            "the body's format (default: the slot's first)",
                            {"enum": sorted({f for s in SLOTS.values() for f in s})},
                        ),
                        _query("name", "a run's name", {"type": "string", "maxLength": NAME_CHARS}),
                        _query("stage", "a run's stage", {"enum": ["fetch", "keep"]}),
                        _query("from", "where traces come from", {"enum": list(TRACE_SOURCES)}),
                        _query(
                            "import_name",
                            "the import's name in `imports list`",
                            {"type": "string", "maxLength": NAME_CHARS},
                        ),
                    ],
                    "requestBody": {
                        "required": True,
                        "content": {
                            "application/octet-stream": {"schema": {"type": "string", "format": "binary"}}
                        },
                    },
                    "responses": {
                        "200": _json_ok("Imported", "what the import added, line by line"),
                        "400": {
                            **_ERROR,
                            "description": "a malformed body (the line and field named); nothing stored",
                        },
                        **_AUTH,
                        "413": {"description": "a body past the limit; nothing read further, nothing stored"},
                        "408": {
                            **_ERROR,
                            "description": f"the body paused past its deadline ({BODY_IDLE_ENV}); nothing stored",
                        },
                        "503": {**_ERROR, "description": "the store is busy; nothing stored"},
                    },
                }
            },
            "/labels": {
                "get": {
                    "summary": "The labels that count (newest per item and person), by label id",
                    "description": "An annotator reads their own only; a reviewer or an admin anyone's.",
                    "parameters": [
                        _query(
                            "annotator", "one person's labels", {"type": "string", "maxLength": NAME_CHARS}
                        ),
                        _query("kind", "the items' kind", {"enum": list(KINDS)}),
                        _query("after", "labels after this label id", {"type": "integer", "minimum": 0}),
                        _query(
                            "limit",
                            "at most this many",
                            {"type": "integer", "minimum": 1, "maximum": LIMIT_MAX},
                        ),
                    ],
                    "responses": {
                        "200": _json_ok("Labels", "the labels, and next_after when more follow"),
                        **_AUTH,
                    },
                }
            },
            "/verdicts": {
                "get": {
                    "summary": "Each judge's latest weekly review (admin only)",
                    "responses": {"200": _json_ok("Verdicts", "one review per judge"), **_AUTH},
                }
            },
        },
        "components": _COMPONENTS,
    }


_DOCS_ROUTE = (
    "<h2>{method:text} {path:text}</h2><p>{summary:text}</p><p>{description:text}</p><ul>{params:html}</ul>"
)
_DOCS_PARAM = "<li><code>{name:text}</code> ({where:text}): {text:text}</li>"
_DOCS_BODY = (
    "<h1>{title:text}</h1><p>{intro:text}</p>"
    '<p>The machine-readable contract: <a href="{json:url}">{json:text}</a>.</p>{routes:html}'
)


def docs_page(document: Mapping[str, Any]) -> Html:
    """The OpenAPI document as a plain page (no script, no font, nothing fetched from elsewhere)."""
    parts: list[str] = []
    for path, methods in document["paths"].items():
        for method, spec in methods.items():
            params = "".join(
                render(
                    _DOCS_PARAM,
                    name=p["name"],
                    where=p["in"],
                    text=p.get("description") or json.dumps(p.get("schema")),
                )
                for p in spec.get("parameters", [])
            )
            parts.append(
                render(
                    _DOCS_ROUTE,
                    method=method.upper(),
                    path=API_PATH + path,
                    summary=spec.get("summary", ""),
                    description=spec.get("description", ""),
                    params=Html(params),
                )
            )
    body = render(
        _DOCS_BODY,
        title=document["info"]["title"],
        intro=document["info"]["description"],
        json=f"{API_PATH}/openapi.json",
        routes=Html("".join(parts)),
    )
    return page("HTTP API", body)
