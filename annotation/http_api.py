"""The HTTP API beside the app (#43, item 8): a pipeline pushes work and reads results without files.

``denominator serve --api`` serves :func:`api_app` at ``/api`` on the app's own server (one port, one
process, the same store, behind the same host check and framing rules as the pages:
:class:`ApiMiddleware`); ``api_app(db)``
alone is an ASGI app any server can run (the tests run it under uvicorn). Every route but the two
documentation routes takes ``Authorization: Bearer <token>``, the tokens ``python -m annotation
annotators add`` prints, with their roles:

- ``POST /api/import/{slot}`` (admin only): the body is one file of the import formats (``corpus``,
  ``queries``, ``run``, ``traces``), imported by :func:`annotation.actions.import_`, what ``python -m
  annotation import`` and the Data page run: the same validation, the same append-only rules, one
  transaction (a malformed body stores nothing). Traces become trace items: today's traces go to the
  labelling queue without a file.
- ``POST /api/pool`` (admin only): ``{"depth", "runs", "annotators"}``, the runs' top ``depth`` as
  chunk items (:func:`annotation.actions.pool`, what ``python -m annotation pool`` runs): chunks for
  a query, once the corpus, the queries and the run are pushed. ``POST /api/pairs`` (admin only):
  ``{"system_a", "system_b"}``, an answer pair per query both systems answered
  (:func:`annotation.pooling.pool_pairs`, what the demo builds its pairs with; no command has it).
- ``GET /api/labels``: the labels that count (the newest row per item and person, retractions
  dropped), in label-id order, ``after`` a label id, at most ``limit``. An annotator reads their own
  only (another's: 403); a reviewer or an admin reads anyone's.
- ``GET /api/verdicts`` (admin only): the latest weekly review of each judge (what ``calibration
  review`` records), read only.
- ``GET /api/me``: who the token is. ``GET /api/openapi.json`` and ``GET /api/docs``: the contract,
  as data and as a page that needs no network.

Every body is read through :func:`annotation.web.read_body` (a file at most :data:`DEFAULT_BODY_BYTES`,
or ``DENOMINATOR_API_MAX_BYTES``; a JSON request at most :data:`JSON_BYTES`; more: 413, unread; a pause
in it past ``DENOMINATOR_BODY_IDLE_SECONDS``: 408, nothing stored); a path or query string that is not
UTF-8 is 400; every query parameter is bounded and checked
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
from urllib.parse import unquote_to_bytes, urlsplit

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from annotation import actions
from annotation.errors import DenominatorError, describe
from annotation.exchange import ImportSources
from annotation.formats.textio import pushed
from annotation.http_contract import (
    API_ENV,
    API_PATH,
    BODY_BYTES_MAX,
    BODY_IDLE_DEFAULT,
    BODY_IDLE_ENV,
    DEFAULT_BODY_BYTES,
    DEPTH_MAX,
    ID_MAX,
    JSON_BYTES,
    KINDS,
    LIMIT_DEFAULT,
    LIMIT_MAX,
    MAX_BYTES_ENV,
    NAME_CHARS,
    NAMES_MAX,
    NO_STORE,
    SECONDS_MAX,
    SLOTS,
    TOKEN_CHARS,
    TRACE_SOURCES,
    docs_page,
    openapi,
)
from annotation.pooling import pool_pairs
from annotation.store import (
    DiskError,
    DiskFull,
    Store,
    StoreBusy,
    StoreError,
    database_exists,
    default_db_path,
)
from annotation.web import TOO_LARGE_HEADERS, BodyStalled, html_response, read_body

__all__ = [
    "API_ENV",
    "API_PATH",
    "BODY_BYTES_MAX",
    "BODY_IDLE_ENV",
    "DEFAULT_BODY_BYTES",
    "MAX_BYTES_ENV",
    "SLOTS",
    "ApiError",
    "ApiMiddleware",
    "api_app",
    "api_middleware",
    "body_idle_seconds",
    "body_limit",
    "openapi",
]


Role = Literal["annotator", "reviewer", "admin"]


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


def _setting(name: str, default: int, high: int, unit: str) -> int:
    """A whole number from 1 to ``high`` in the environment variable ``name``, else ``default``;
    anything else is the server's error (500; ``denominator serve`` refuses it at start)."""
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    digits = raw.lstrip("0") or "0"
    if not (
        digits.isascii() and digits.isdigit() and len(digits) <= len(str(high)) and 1 <= int(digits) <= high
    ):
        raise ApiError(500, f"{name} must be a whole number of {unit} from 1 to {high}")
    return int(digits)


def body_limit() -> int:
    """The most bytes a push may carry: ``DENOMINATOR_API_MAX_BYTES`` when set (1 to
    :data:`BODY_BYTES_MAX`), else :data:`DEFAULT_BODY_BYTES`."""
    return _setting(MAX_BYTES_ENV, DEFAULT_BODY_BYTES, BODY_BYTES_MAX, "bytes")


def body_idle_seconds() -> int:
    """The longest pause inside a request body before the API answers 408 and stores nothing:
    ``DENOMINATOR_BODY_IDLE_SECONDS`` when set (1 to :data:`SECONDS_MAX`), else
    :data:`BODY_IDLE_DEFAULT`."""
    return _setting(BODY_IDLE_ENV, BODY_IDLE_DEFAULT, SECONDS_MAX, "seconds")


async def _read(request: Request, limit: int) -> bytes:
    """The body, at most ``limit`` bytes (else 413), each part within :func:`body_idle_seconds` of
    the last (else 408); what came of a refused body is dropped."""
    try:
        body = await read_body(request, limit, body_idle_seconds())
    except BodyStalled as exc:
        raise ApiError(408, f"{exc}; send the whole body at once, nothing was stored") from None
    if body is None:
        raise ApiError(413, f"a request here carries at most {limit} bytes")
    return body


def _refuse_non_utf8(scope: Scope) -> None:
    """A path or query string whose %-escapes are not UTF-8 is refused (400), never read with
    U+FFFD in place of its bytes (a run named '\ufffd' is no name anyone sent)."""
    for what, raw in (
        ("the path", scope.get("raw_path") or b""),
        ("the query string", scope["query_string"]),
    ):
        try:
            unquote_to_bytes(raw.replace(b"+", b" ")).decode("utf-8")
        except UnicodeDecodeError:
            raise ApiError(400, f"{what} is not UTF-8 once its %-escapes are read") from None


def _error(status: int, message: str, extra: Mapping[str, str] | None = None) -> JSONResponse:
    headers = dict(NO_STORE) | dict(extra or {})
    if status == 401:
        headers["WWW-Authenticate"] = 'Bearer realm="denominator"'
    if status in (408, 413):  # the rest of the body is never read: the connection closes
        headers.update(TOO_LARGE_HEADERS)
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
        raise ApiError(403, f"the role {found['role']} may not do this; it takes: {' or '.join(roles)}")
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
    if not database_exists(db):  # a request never creates a store
        raise ApiError(
            503, "this server's store does not exist yet (python -m denominator demo, or an import)"
        )
    try:
        store = Store(db, patient=True)
    except StoreError as exc:  # cannot connect, not a Denominator database, a newer schema: the server's
        raise ApiError(503, describe(exc, db)) from None
    with store:
        try:
            return work(store)
        except (DiskFull, DiskError) as exc:  # the server's trouble, not the request's
            raise ApiError(503, describe(exc, db)) from None


def _endpoint(handler: Callable[[Request, str], Any]) -> Callable[[Request], Any]:
    """``handler(request, db)`` with the API's one error boundary: an :class:`ApiError` is its
    status, a busy or unreachable store 503, any other named error 400 (nothing stored: every write
    is one transaction), anything else 500, each one line (:func:`annotation.errors.describe`: no
    traceback, no password); the answer is never cached."""

    async def endpoint(request: Request) -> Response:
        db: str = request.app.state.db
        try:
            _refuse_non_utf8(request.scope)
            result = await handler(request, db)
        except ApiError as exc:
            return _error(exc.status, str(exc))
        except StoreBusy as exc:
            return _error(503, describe(exc, db))
        except DenominatorError as exc:
            return _error(400, describe(exc, db))
        except Exception as exc:  # a driver's or the system's failure: one line, the store's password masked
            said = describe(exc, db)
            return _error(503 if said.startswith("the store is unavailable") else 500, said)
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
    body = await _read(request, body_limit())  # 413 and 408 close the connection: the rest is unread
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
            with pushed(
                body_limit(), MAX_BYTES_ENV
            ):  # what a small Parquet file decodes to is bounded too (M2)
                lines = _in_store(db, lambda store: actions.import_(store, sources))
        except (ApiError, StoreBusy):
            raise
        except DenominatorError as exc:
            raise ApiError(400, _named(describe(exc, db), path)) from None
    return {"imported": [_named(line, path) for line in lines]}


def _named(text: str, path: Path) -> str:
    return text.replace(str(path), "body")


async def _json_body(request: Request, fields: tuple[str, ...]) -> dict[str, Any]:
    """The request's JSON object, at most :data:`JSON_BYTES` (else 413), each key once and none
    but ``fields`` (else 400)."""
    body = await _read(request, JSON_BYTES)
    try:
        value = json.loads(body, object_pairs_hook=_once)
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        said = str(exc) if isinstance(exc, _DuplicateKey) else "the body is not JSON; expected an object"
        raise ApiError(400, said) from None
    if not isinstance(value, dict):
        raise ApiError(400, "the body is not a JSON object")
    unknown = sorted(set(value) - set(fields))
    if unknown:
        raise ApiError(400, f"unknown field {unknown[0][:40]!r}; expected {', '.join(fields)}")
    return value


class _DuplicateKey(ValueError):
    pass


def _once(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object whose keys are each given once (``{"depth": 5, "depth": 1}`` is refused, as an
    import body's is: which one was meant is not ours to guess)."""
    value: dict[str, Any] = {}
    for key, item in pairs:
        if key in value:
            raise _DuplicateKey(f"the key {key[:40]!r} is given twice in one object")
        value[key] = item
    return value


def _names(value: Any, key: str) -> list[str]:
    if value is None:
        return []
    if (
        not isinstance(value, list)
        or len(value) > NAMES_MAX
        or not all(
            isinstance(v, str) and v.strip() and len(v) <= NAME_CHARS and v.isprintable() for v in value
        )
    ):
        raise ApiError(
            400, f"{key}: expected a list of at most {NAMES_MAX} names of 1 to {NAME_CHARS} characters"
        )
    return [v.strip() for v in value]


def _name(value: Any, key: str) -> str:
    if not isinstance(value, str) or not value.strip() or len(value) > NAME_CHARS or not value.isprintable():
        raise ApiError(400, f"{key}: expected a name of 1 to {NAME_CHARS} printable characters")
    return value.strip()


async def pool(request: Request, db: str) -> dict[str, Any]:
    """``POST /api/pool`` (admin): ``{"depth", "runs"?, "annotators"?}``, the pool of the runs' top
    ``depth`` as chunk items (what ``python -m annotation pool`` does), assigned to the people named."""
    token = _token(request)
    await run_in_threadpool(_in_store, db, lambda store: _who(store, token, ("admin",)))
    asked = await _json_body(request, ("depth", "runs", "annotators"))
    depth = asked.get("depth")
    if isinstance(depth, bool) or not isinstance(depth, int) or not 1 <= depth <= DEPTH_MAX:
        raise ApiError(400, f"depth: expected a whole number from 1 to {DEPTH_MAX}")
    runs = _names(asked.get("runs"), "runs") or None
    people = _names(asked.get("annotators"), "annotators")
    done = await run_in_threadpool(
        _in_store, db, lambda store: actions.pool(store, depth, runs=runs, annotators=people)
    )
    return {"pool": dict(done["pool"])}


async def pairs(request: Request, db: str) -> dict[str, int]:
    """``POST /api/pairs`` (admin): ``{"system_a", "system_b"}``, a pair item per query both systems
    answered (their first traces), what the demo builds its answer pairs with."""
    token = _token(request)
    await run_in_threadpool(_in_store, db, lambda store: _who(store, token, ("admin",)))
    asked = await _json_body(request, ("system_a", "system_b"))
    first, second = _name(asked.get("system_a"), "system_a"), _name(asked.get("system_b"), "system_b")
    if first == second:
        raise ApiError(400, "system_b: expected another system than system_a")
    return await run_in_threadpool(_in_store, db, lambda store: pool_pairs(store, first, second))


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
        rows = store.labels_after(after, limit + 1, chosen, kind)  # one more: whether more follow
        shown = [_label(row) for row in rows[:limit]]
        return {
            "labels": shown,
            "count": len(shown),
            "next_after": shown[-1]["label_id"] if len(rows) > limit else None,
        }

    return await run_in_threadpool(_in_store, db, read)


def _label(row: tuple[Any, ...]) -> Label:
    """A row of :meth:`Store.labels_after` as the API gives it."""
    return {
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
        "created_at": str(row[11]),
    }


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
    Route("/pool", _endpoint(pool), methods=["POST"]),
    Route("/pairs", _endpoint(pairs), methods=["POST"]),
    Route("/labels", _endpoint(labels), methods=["GET"]),
    Route("/verdicts", _endpoint(verdicts), methods=["GET"]),
    Route("/openapi.json", _endpoint(openapi_route), methods=["GET"]),
    Route("/docs", _endpoint(docs_route), methods=["GET"]),
]


async def _not_found(request: Request, exc: Exception) -> Response:
    return _error(404, "no such route; see /api/docs")


async def _not_allowed(request: Request, exc: Exception) -> Response:
    # Starlette's 405 names the route's methods (a set: sorted here, so the header is the same each time)
    methods = (getattr(exc, "headers", None) or {}).get("Allow", "")
    allow = {"Allow": ", ".join(sorted(m.strip() for m in methods.split(",") if m.strip()))}
    return _error(405, "this route does not take that method; see /api/docs", allow)


def api_app(db: str | None = None) -> Starlette:
    """The API over the store at ``db`` (default: ``DENOMINATOR_DB``, else ./denominator.db)."""
    app = Starlette(routes=ROUTES, exception_handlers={404: _not_found, 405: _not_allowed})
    app.state.db = db or default_db_path()
    return app


def _for_api(path: str) -> bool:
    return path == API_PATH or path.startswith(API_PATH + "/")


class ApiMiddleware:
    """``serve --api``: a request for :data:`API_PATH` goes to :func:`api_app` here, inside the host
    check and the framing rule, before the app's sign-in link page and Streamlit's own middleware:
    every answer under /api is the API's, in JSON (never the ``?token=`` page, never Streamlit's
    plain "Bad Request"). A whole address as the request target (``GET http://host/api/me``) is
    refused in JSON too. Anything else passes through untouched."""

    def __init__(self, app: ASGIApp, db: str | None = None) -> None:
        self.app = app
        self.api = api_app(db)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            path = scope.get("path", "")
            if _for_api(path):
                await self.api({**scope, "root_path": scope.get("root_path", "") + API_PATH}, receive, send)
                return
            if not path.startswith("/") and _for_api(urlsplit(path).path):
                said = f"the request target is a whole address; send its path only ({API_PATH}/...)"
                await _error(400, said)(scope, receive, send)
                return
        await self.app(scope, receive, send)


def api_middleware() -> list[Middleware]:
    """What the app adds to its middleware: :class:`ApiMiddleware` when :data:`API_ENV` is "1"
    (``denominator serve --api``), else nothing (the API is opt-in)."""
    if os.environ.get(API_ENV) != "1":
        return []
    return [Middleware(ApiMiddleware)]
