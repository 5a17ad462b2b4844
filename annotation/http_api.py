"""The HTTP API beside the app (#43, item 8): a pipeline pushes work and reads results without files.

``denominator serve --api`` mounts :func:`api_app` at ``/api`` on the app's own server (one port, one
process, the same store, behind the same host check and framing rules as the pages); ``api_app(db)``
alone is an ASGI app any server can run (the tests run it under uvicorn). Every route but the two
documentation routes takes ``Authorization: Bearer <token>``, the tokens ``python -m annotation
annotators add`` prints, with their roles:

- ``POST /api/import/{slot}`` (admin only): the body is one file of the import formats (``corpus``,
  ``queries``, ``run``, ``traces``), imported by :func:`annotation.actions.import_`, what ``python -m
  annotation import`` and the Data page run: the same validation, the same append-only rules, one
  transaction (a malformed body stores nothing). Traces become trace items: today's traces go to the
  labelling queue without a file.
- ``GET /api/labels``: the labels that count (the newest row per item and person, retractions
  dropped), in label-id order, ``after`` a label id, at most ``limit``. An annotator reads their own
  only (another's: 403); a reviewer or an admin reads anyone's.
- ``GET /api/verdicts`` (admin only): the latest weekly review of each judge (what ``calibration
  review`` records), read only.
- ``GET /api/me``: who the token is. ``GET /api/openapi.json`` and ``GET /api/docs``: the contract,
  as data and as a page that needs no network.

Every body is read through :func:`annotation.web.read_body` (at most :data:`DEFAULT_BODY_BYTES`, or
``DENOMINATOR_API_MAX_BYTES``; more: 413, unread); every query parameter is bounded and checked
before the store is opened; an unknown token is 401, a known one of the wrong role 403; the token is
never written in an answer. Errors are one JSON object ``{"error": "..."}``.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Literal, TypedDict, TypeVar

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Mount, Route

from annotation import actions
from annotation.errors import DenominatorError
from annotation.exchange import ImportSources
from annotation.store import Store, StoreBusy, default_db_path
from annotation.web import Html, html_response, page, read_body, render, too_large

__all__ = [
    "API_ENV",
    "API_PATH",
    "DEFAULT_BODY_BYTES",
    "MAX_BYTES_ENV",
    "SLOTS",
    "ApiError",
    "api_app",
    "api_routes",
    "body_limit",
    "openapi",
]

API_ENV = "DENOMINATOR_API"  # "1": the app serves the API (``denominator serve --api`` sets it)
API_PATH = "/api"  # where ``serve --api`` mounts it (Streamlit reserves /_stcore and the like)
DEFAULT_BODY_BYTES = 8 * 1024 * 1024  # one push: 1,000 traces of a few KB each fit in it
MAX_BYTES_ENV = "DENOMINATOR_API_MAX_BYTES"
TOKEN_CHARS = 512  # the longest Authorization value read (a token is 32 characters)
NAME_CHARS = 200  # an annotator's name, a run's name, an import's name given as a parameter
LIMIT_MAX = 10_000  # the most labels one answer carries
LIMIT_DEFAULT = 1_000
ID_MAX = 2**63 - 1
KINDS = ("chunk", "trace", "pair")
Role = Literal["annotator", "reviewer", "admin"]

# slot: the file name each body is written under (the readers choose the format by extension)
SLOTS: dict[str, dict[str, str]] = {
    "corpus": {"jsonl": "corpus.jsonl"},
    "queries": {"jsonl": "queries.jsonl", "tsv": "queries.tsv"},
    "run": {"trec": "run.trec", "jsonl": "run.jsonl"},
    "traces": {"jsonl": "traces.jsonl", "json": "traces.json"},
}
TRACE_SOURCES = ("jsonl", "openinference", "langfuse", "langsmith")
NO_STORE = {"Cache-Control": "no-store"}


class ApiError(DenominatorError):
    """A request the API refuses: its HTTP status and one line that says why."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class Who(TypedDict):
    name: str
    role: str


class Label(TypedDict):
    label_id: int
    item_id: int
    kind: str
    query_id: str | None
    chunk_id: str | None
    trace_id: str | None
    trace_b_id: str | None
    annotator: str
    rubric: str
    value: int
    note: str | None
    created_at: str


def body_limit() -> int:
    """The most bytes a push may carry: ``DENOMINATOR_API_MAX_BYTES`` when set (a whole number >= 1),
    else :data:`DEFAULT_BODY_BYTES`."""
    raw = os.environ.get(MAX_BYTES_ENV, "").strip()
    if not raw:
        return DEFAULT_BODY_BYTES
    if not (raw.isascii() and raw.isdigit() and len(raw) <= 12 and int(raw) >= 1):
        raise ApiError(500, f"{MAX_BYTES_ENV} must be a whole number of bytes >= 1")
    return int(raw)


def _error(status: int, message: str) -> JSONResponse:
    headers = dict(NO_STORE)
    if status == 401:
        headers["WWW-Authenticate"] = 'Bearer realm="denominator"'
    return JSONResponse({"error": message}, status_code=status, headers=headers)


def _token(request: Request) -> str:
    """The bearer token of the request (never echoed); 401 when there is none."""
    value = request.headers.get("authorization", "")
    if not value or len(value) > TOKEN_CHARS:
        raise ApiError(401, "a token is needed: Authorization: Bearer <token>")
    scheme, _, token = value.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise ApiError(401, "a token is needed: Authorization: Bearer <token>")
    return token.strip()


def _who(store: Store, token: str, roles: tuple[Role, ...]) -> Who:
    found = store.identify(token)
    if found is None:
        raise ApiError(401, "this token is not valid (unknown or revoked)")
    if found["role"] not in roles:
        raise ApiError(403, f"a {found['role']} may not do this; it takes: {' or '.join(roles)}")
    return {"name": found["name"], "role": found["role"]}


def _text(request: Request, key: str, default: str | None = None, limit: int = NAME_CHARS) -> str | None:
    value = request.query_params.get(key)
    if value is None:
        return default
    value = value.strip()
    if not value or len(value) > limit or not value.isprintable():
        raise ApiError(400, f"{key}: expected a non-empty printable text of at most {limit} characters")
    return value


def _choice(request: Request, key: str, choices: tuple[str, ...] | list[str], default: str) -> str:
    value = _text(request, key, default)
    if value is None or value not in choices:
        raise ApiError(400, f"{key}: expected one of {', '.join(choices)}")
    return value


def _whole(request: Request, key: str, default: int, low: int, high: int) -> int:
    raw = request.query_params.get(key)
    if raw is None:
        return default
    raw = raw.strip()
    if not (raw.isascii() and raw.isdigit() and len(raw) <= 19) or not low <= int(raw) <= high:
        raise ApiError(400, f"{key}: expected a whole number from {low} to {high}")
    return int(raw)


T = TypeVar("T")


def _in_store(db: str, work: Callable[[Store], T]) -> T:
    with Store(db, patient=True) as store:
        return work(store)


def _endpoint(handler: Callable[[Request, str], Any]) -> Callable[[Request], Any]:
    """``handler(request, db)`` with the API's one error boundary: an :class:`ApiError` is its
    status, a busy store 503, any other named error 400 (nothing stored: every write is one
    transaction); the answer is never cached."""

    async def endpoint(request: Request) -> Response:
        db: str = request.app.state.db
        try:
            result = await handler(request, db)
        except ApiError as exc:
            return _error(exc.status, str(exc))
        except StoreBusy as exc:
            return _error(503, str(exc))
        except DenominatorError as exc:
            return _error(400, str(exc))
        if isinstance(result, Response):
            return result
        return JSONResponse(result, headers=NO_STORE)

    return endpoint


# ---------------------------------------------------------------- routes


async def me(request: Request, db: str) -> Who:
    token = _token(request)
    return await run_in_threadpool(
        _in_store, db, lambda store: _who(store, token, ("annotator", "reviewer", "admin"))
    )


async def push(request: Request, db: str) -> Any:
    """``POST /api/import/{slot}``: the body, one file of the slot's format, imported whole or not."""
    token = _token(request)
    slot = request.path_params["slot"]
    if slot not in SLOTS:
        raise ApiError(404, f"no import slot {str(slot)[:40]!r}; expected one of {', '.join(SLOTS)}")
    fmt = _choice(request, "format", list(SLOTS[slot]), next(iter(SLOTS[slot])))
    name = _text(request, "name", "")
    stage = _choice(request, "stage", ("fetch", "keep"), "fetch")
    source = _choice(request, "from", TRACE_SOURCES, "jsonl")
    import_name = _text(request, "import_name", "")
    # who may push is known before the body is read: a refused token costs no upload
    who = await run_in_threadpool(_in_store, db, lambda store: _who(store, token, ("admin",)))
    limit = body_limit()
    body = await read_body(request, limit)
    if body is None:
        return too_large(limit)
    if not body.strip():
        raise ApiError(400, f"the body is empty: expected the {slot} file ({fmt})")
    if slot == "run" and not name:
        raise ApiError(400, "a run needs a name (?name=)")
    file_name = SLOTS[slot][fmt]
    return await run_in_threadpool(
        _import_body, db, slot, file_name, body, name or "", stage, source, import_name or "", who["name"]
    )


def _import_body(
    db: str,
    slot: str,
    file_name: str,
    body: bytes,
    name: str,
    stage: str,
    source: str,
    import_name: str,
    who: str,
) -> dict[str, Any]:
    """The body as a file named for its format, imported as ``python -m annotation import`` does;
    the messages name the body, not the temporary file."""
    with tempfile.TemporaryDirectory(prefix="denominator-api-") as tmp:
        path = Path(tmp) / file_name
        path.write_bytes(body)
        sources = ImportSources(
            corpus=path if slot == "corpus" else None,
            queries=path if slot == "queries" else None,
            run=path if slot == "run" else None,
            traces=path if slot == "traces" else None,
            name=name,
            stage=stage,
            traces_from=source,
            import_name=import_name or f"{slot} over HTTP",
            who=who,
        )
        try:
            with Store(db, patient=True) as store:
                lines = actions.import_(store, sources)
        except DenominatorError as exc:
            raise ApiError(400, _named(str(exc), path)) from None
    return {"imported": [_named(line, path) for line in lines]}


def _named(text: str, path: Path) -> str:
    return text.replace(str(path), "body")


async def labels(request: Request, db: str) -> dict[str, Any]:
    """``GET /api/labels``: the labels that count, by label id."""
    token = _token(request)
    person = _text(request, "annotator")
    kind = _text(request, "kind")
    if kind is not None and kind not in KINDS:
        raise ApiError(400, f"kind: expected one of {', '.join(KINDS)}")
    after = _whole(request, "after", 0, 0, ID_MAX)
    limit = _whole(request, "limit", LIMIT_DEFAULT, 1, LIMIT_MAX)

    def read(store: Store) -> dict[str, Any]:
        who = _who(store, token, ("annotator", "reviewer", "admin"))
        if who["role"] == "annotator":
            if person is not None and person != who["name"]:
                raise ApiError(403, "an annotator reads their own labels only")
            chosen: str | None = who["name"]
        else:
            chosen = person
        rows = current_labels(store.label_history(chosen), kind)
        page_rows = [row for row in rows if row["label_id"] > after][:limit]
        more = len([row for row in rows if row["label_id"] > after]) > limit
        return {
            "labels": page_rows,
            "count": len(page_rows),
            "next_after": page_rows[-1]["label_id"] if more else None,
        }

    return await run_in_threadpool(_in_store, db, read)


def current_labels(history: list[tuple[Any, ...]], kind: str | None = None) -> list[Label]:
    """The label that counts per (item, person): their newest row, dropped when it is a retraction
    (value None). ``history`` is :meth:`Store.label_history`'s rows, by label id; the result too."""
    newest: dict[tuple[int, str], tuple[Any, ...]] = {}
    for row in history:
        newest[(row[1], row[7])] = row
    kept = sorted((row for row in newest.values() if row[9] is not None), key=lambda row: row[0])
    return [
        {
            "label_id": int(row[0]),
            "item_id": int(row[1]),
            "kind": row[2],
            "query_id": row[3],
            "chunk_id": row[4],
            "trace_id": row[5],
            "trace_b_id": row[6],
            "annotator": row[7],
            "rubric": row[8],
            "value": int(row[9]),
            "note": row[10],
            "created_at": str(row[13]),
        }
        for row in kept
        if kind is None or row[2] == kind
    ]


async def verdicts(request: Request, db: str) -> dict[str, Any]:
    """``GET /api/verdicts``: each judge's newest weekly review (``calibration review``), read only."""
    token = _token(request)

    def read(store: Store) -> dict[str, Any]:
        _who(store, token, ("admin",))
        latest: dict[str, dict[str, Any]] = {}
        for review in store.calibration_trend():  # oldest week first: the last of a judge is its newest
            if not review["old_rule"]:
                latest[str(review["fingerprint"])] = review
        rows = sorted(
            latest.values(), key=lambda r: (str(r["name"]), r["version"] or 0, str(r["fingerprint"]))
        )
        return {"verdicts": [_verdict(row) for row in rows], "count": len(rows)}

    return await run_in_threadpool(_in_store, db, read)


def _verdict(review: Mapping[str, Any]) -> dict[str, Any]:
    keys = (
        "fingerprint",
        "name",
        "version",
        "rubric",
        "week",
        "n",
        "kappa",
        "ci",
        "verdict",
        "rule",
        "statistic",
    )
    return {key: review[key] for key in keys}


async def openapi_route(request: Request, db: str) -> dict[str, Any]:
    return openapi()


async def docs_route(request: Request, db: str) -> Response:
    return html_response(docs_page(openapi()), headers=NO_STORE)


ROUTES = [
    Route("/me", _endpoint(me), methods=["GET"]),
    Route("/import/{slot}", _endpoint(push), methods=["POST"]),
    Route("/labels", _endpoint(labels), methods=["GET"]),
    Route("/verdicts", _endpoint(verdicts), methods=["GET"]),
    Route("/openapi.json", _endpoint(openapi_route), methods=["GET"]),
    Route("/docs", _endpoint(docs_route), methods=["GET"]),
]


async def _not_found(request: Request, exc: Exception) -> Response:
    return _error(404, "no such route; see /api/docs")


async def _not_allowed(request: Request, exc: Exception) -> Response:
    return _error(405, "this route does not take that method; see /api/docs")


def api_app(db: str | None = None) -> Starlette:
    """The API over the store at ``db`` (default: ``DENOMINATOR_DB``, else ./denominator.db)."""
    app = Starlette(routes=ROUTES, exception_handlers={404: _not_found, 405: _not_allowed})
    app.state.db = db or default_db_path()
    return app


def api_routes() -> list[BaseRoute]:
    """What the app serves beside its pages: the API at :data:`API_PATH` when :data:`API_ENV` is
    "1" (``denominator serve --api``), else nothing (the API is opt-in)."""
    if os.environ.get(API_ENV) != "1":
        return []
    return [Mount(API_PATH, app=api_app())]


# ---------------------------------------------------------------- the contract

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


def _query(name: str, text: str, schema: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, "in": "query", "required": False, "description": text, "schema": schema}


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
