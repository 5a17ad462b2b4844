"""The HTTP API (#43, item 8; annotation/http_api.py), driven with httpx against running servers on
SQLite and PostgreSQL: 1,000 traces pushed in one request, labelled by the store's labelling path
(``Store.add_label``, what a key press on the page writes), read back by token and role; the
refusals (401, 403, 413, 400) store nothing; two app servers (``denominator serve --api``) on one
PostgreSQL database serve the same data."""

from __future__ import annotations

import contextlib
import json
import socket
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn

from annotation.http_api import API_PATH, DEFAULT_BODY_BYTES, MAX_BYTES_ENV, ROUTES, api_app, openapi
from annotation.store import Store
from tests.conftest import free_port, started_server

QUERIES = ("q_faw", "q_store", "q_lag", "q_tls")  # the demo's four queries


@contextlib.contextmanager
def api_server(db: str | Path) -> Iterator[str]:
    """``api_app(db)`` under uvicorn in a thread on a free port of 127.0.0.1: its /api address."""
    port = free_port()
    config = uvicorn.Config(
        api_app(str(db)), host="127.0.0.1", port=port, log_level="warning", lifespan="off"
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the API server did not start")
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


def people(db: str | Path) -> dict[str, str]:
    """Tokens: root an admin, ann and bob annotators, rev a reviewer."""
    with Store(db) as store:
        tokens = {
            "root": store.add_annotator("root", "admin"),
            "ann": store.add_annotator("ann", "annotator"),
            "bob": store.add_annotator("bob", "annotator"),
            "rev": store.add_annotator("rev", "reviewer"),
        }
    return {name: token for name, token in tokens.items() if token}


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def traces_body(n: int, prefix: str = "today") -> bytes:
    """``n`` traces of today's pipeline as JSONL, each its own question and answer."""
    lines = [
        json.dumps(
            {
                "id": f"{prefix}-{i}",
                "query_id": QUERIES[i % 4],
                "system": "pipeline",
                "question": f"question {i} of {prefix}?",
                "contexts": [f"context {i}", "the shared context"],
                "answer": f"answer {i} of {prefix}",
            }
        )
        for i in range(n)
    ]
    return ("\n".join(lines) + "\n").encode()


def counts(db: str | Path) -> dict[str, int]:
    with Store(db) as store:
        return {
            table: int(store.db.execute(f"SELECT count(*) FROM {table}").fetchone()[0])
            for table in ("traces", "items", "labels", "imports", "chunks", "queries")
        }


def item_of(db: str | Path, trace_id: str) -> int:
    with Store(db) as store:
        return int(store.db.execute("SELECT id FROM items WHERE trace_id = ?", [trace_id]).fetchone()[0])


def test_push_1000_traces_label_them_and_read_them_back(demo_db: Path | str) -> None:
    tokens = people(demo_db)
    before = counts(demo_db)
    with api_server(demo_db) as url, httpx.Client(base_url=url, timeout=60) as client:
        pushed = client.post("/import/traces", content=traces_body(1000), headers=bearer(tokens["root"]))
        assert pushed.status_code == 200, pushed.text
        lines = pushed.json()["imported"]
        assert lines[0] == "traces body: 1000 traces, 0 unchanged"
        assert lines[1].endswith(": traces over HTTP, by root")
        after = counts(demo_db)
        assert after["traces"] - before["traces"] == 1000
        assert after["items"] - before["items"] == 1000  # each a trace item in the queue
        assert after["imports"] - before["imports"] == 1

        # labelled as the page labels (Store.add_label: a key press); a correction is a new row
        first, second, third = (item_of(demo_db, f"today-{i}") for i in (0, 1, 2))
        with Store(demo_db) as store:
            store.add_label(first, "ann", 2, "faithfulness")
            store.add_label(second, "ann", 0, "faithfulness")
            store.add_label(first, "ann", 1, "faithfulness")  # ann corrects herself: 1 counts
            store.add_label(third, "bob", 2, "faithfulness")
            store.add_label(second, "bob", 1, "faithfulness")
            store.undo(second, "bob")  # bob retracts: his label on the second item no longer counts

        mine = client.get("/labels", params={"kind": "trace"}, headers=bearer(tokens["ann"]))
        assert mine.status_code == 200, mine.text
        got = [
            (row["trace_id"], row["annotator"], row["value"], row["rubric"]) for row in mine.json()["labels"]
        ]
        # by label id: the second item's label (id n+2) before the correction of the first (n+3)
        assert got == [("today-1", "ann", 0, "faithfulness"), ("today-0", "ann", 1, "faithfulness")]
        assert mine.json()["count"] == 2 and mine.json()["next_after"] is None

        bobs = client.get(
            "/labels", params={"annotator": "bob", "kind": "trace"}, headers=bearer(tokens["root"])
        )
        assert [(r["trace_id"], r["value"]) for r in bobs.json()["labels"]] == [("today-2", 2)]
        seen = client.get("/labels", params={"annotator": "bob"}, headers=bearer(tokens["rev"]))
        assert seen.status_code == 200 and seen.json()["count"] == 1  # a reviewer reads anyone's

        # paging: all of ann's and bob's on the pushed traces, two at a time, by label id
        pages, after_id = [], 0
        while True:
            page = client.get(
                "/labels",
                params={"kind": "trace", "after": after_id, "limit": 2},
                headers=bearer(tokens["root"]),
            ).json()
            pages.append(
                [(r["trace_id"], r["annotator"]) for r in page["labels"] if r["trace_id"].startswith("today")]
            )
            if page["next_after"] is None:
                break
            after_id = page["next_after"]
        today = [pair for chunk in pages for pair in chunk]
        assert today == [("today-1", "ann"), ("today-0", "ann"), ("today-2", "bob")]

        # polled after the last id read, a correction made since comes once, and nothing else
        last = mine.json()["labels"][-1]["label_id"]
        with Store(demo_db) as store:
            store.add_label(second, "ann", 2, "faithfulness")
        polled = client.get("/labels", params={"after": last}, headers=bearer(tokens["ann"])).json()
        assert [(r["trace_id"], r["value"]) for r in polled["labels"]] == [("today-1", 2)]


def reviews(db: str | Path) -> None:
    """Weekly reviews of two judges, as `calibration review` stores them: judge-a in weeks 48 and 49,
    judge-b in week 48."""
    with Store(db) as store:
        for name in ("judge-a", "judge-b"):
            store.register_judge(name * 4, {"model": name}, name=name)
        row = {
            "rubric": "relevance",
            "weights": "none",
            "sample": "all",
            "rule": "interval",
            "statistic": "unweighted",
        }
        store.add_calibrations(
            [
                {
                    **row,
                    "fingerprint": "judge-a" * 4,
                    "window": "2026-W48",
                    "n": 50,
                    "kappa": 0.7,
                    "ci_low": 0.62,
                    "ci_high": 0.78,
                    "verdict": "trusted",
                },
                {
                    **row,
                    "fingerprint": "judge-b" * 4,
                    "window": "2026-W48",
                    "n": 40,
                    "kappa": 0.2,
                    "ci_low": 0.05,
                    "ci_high": 0.35,
                    "verdict": "not trusted",
                },
            ]
        )
        store.add_calibrations(
            [
                {
                    **row,
                    "fingerprint": "judge-a" * 4,
                    "window": "2026-W49",
                    "n": 60,
                    "kappa": 0.55,
                    "ci_low": 0.41,
                    "ci_high": 0.69,
                    "verdict": "undecided",
                }
            ]
        )


@pytest.mark.parametrize("backend", ["sqlite"])
def test_roles_and_tokens(demo_db: Path | str) -> None:
    tokens = people(demo_db)
    before = counts(demo_db)
    with api_server(demo_db) as url, httpx.Client(base_url=url, timeout=30) as client:
        assert client.get("/me", headers=bearer(tokens["ann"])).json() == {"name": "ann", "role": "annotator"}
        # an annotator may not read another's labels, nor push, nor read the judges' verdicts
        other = client.get("/labels", params={"annotator": "cat"}, headers=bearer(tokens["ann"]))
        assert other.status_code == 403
        assert other.json() == {"error": "an annotator reads their own labels only"}
        push = client.post("/import/traces", content=traces_body(5), headers=bearer(tokens["ann"]))
        assert push.status_code == 403
        assert client.get("/verdicts", headers=bearer(tokens["rev"])).status_code == 403
        # no token, a malformed header, an unknown token: 401, the token never echoed
        assert client.get("/labels").status_code == 401
        assert client.get("/labels", headers={"Authorization": "Basic abc"}).status_code == 401
        unknown = client.get("/labels", headers=bearer("not-a-token-XYZ"))
        assert unknown.status_code == 401 and "not-a-token-XYZ" not in unknown.text
        assert unknown.headers["www-authenticate"].startswith("Bearer")
        # a revoked token stops at once
        with Store(demo_db) as store:
            store.revoke_annotator("bob")
        assert client.get("/me", headers=bearer(tokens["bob"])).status_code == 401
        # the admin reads the latest review of each judge (what `calibration review` records)
        reviews(demo_db)
        verdicts = client.get("/verdicts", headers=bearer(tokens["root"])).json()
        assert verdicts["count"] == 2
        assert [
            (v["name"], v["week"], v["n"], v["kappa"], v["ci"], v["verdict"]) for v in verdicts["verdicts"]
        ] == [
            ("judge-a", "2026-W49", 60, 0.55, [0.41, 0.69], "undecided"),  # its W48 review is older
            ("judge-b", "2026-W48", 40, 0.2, [0.05, 0.35], "not trusted"),
        ]
    assert counts(demo_db) == before  # nothing stored by any refusal (the reviews are none of these)


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"annotator": "x" * 201}, "annotator"),
        ({"kind": "pairs"}, "kind"),
        ({"limit": "0"}, "limit"),
        ({"limit": "10001"}, "limit"),
        ({"after": "-1"}, "after"),
        ({"after": "1e3"}, "after"),
        ({"after": "9" * 30}, "after"),
    ],
)
@pytest.mark.parametrize("backend", ["sqlite"])
def test_query_parameters_are_bounded(demo_db: Path | str, params: dict[str, str], field: str) -> None:
    tokens = people(demo_db)
    with api_server(demo_db) as url:
        answer = httpx.get(f"{url}/labels", params=params, headers=bearer(tokens["root"]))
    assert answer.status_code == 400
    assert answer.json()["error"].startswith(f"{field}: expected")


def test_oversized_and_malformed_bodies_store_nothing(
    demo_db: Path | str, monkeypatch: pytest.MonkeyPatch
) -> None:
    tokens = people(demo_db)
    before = counts(demo_db)
    good = traces_body(999)
    with api_server(demo_db) as url, httpx.Client(base_url=url, timeout=60) as client:
        # a body past the limit: 413 before it is read
        monkeypatch.setenv(MAX_BYTES_ENV, str(len(good) - 1))
        over = client.post("/import/traces", content=good, headers=bearer(tokens["root"]))
        assert over.status_code == 413
        assert over.json() == {"error": f"a request here carries at most {len(good) - 1} bytes"}
        assert over.headers["connection"] == "close"
        monkeypatch.delenv(MAX_BYTES_ENV)
        # 999 good traces and one broken line: one error naming line 1000, none of the 999 kept
        broken = good + b'{"id": "today-999", "query_id": "q_faw"\n'
        bad = client.post("/import/traces", content=broken, headers=bearer(tokens["root"]))
        assert bad.status_code == 400
        assert bad.json()["error"].startswith("body:1000: not valid JSON")
        missing = good + json.dumps({"id": "x", "query_id": "q_faw"}).encode() + b"\n"
        refused = client.post("/import/traces", content=missing, headers=bearer(tokens["root"]))
        assert refused.status_code == 400
        assert refused.json()["error"].startswith("body:1000")
        # an empty body, an unknown slot, a format the slot has not, a run without its name
        assert (
            client.post("/import/traces", content=b" \n", headers=bearer(tokens["root"])).status_code == 400
        )
        assert (
            client.post("/import/..%2Fetc", content=good, headers=bearer(tokens["root"])).status_code == 404
        )
        assert (
            client.post(
                "/import/traces", params={"format": "csv"}, content=good, headers=bearer(tokens["root"])
            ).status_code
            == 400
        )
        assert (
            client.post("/import/run", content=b"q 0 d 1 1 x\n", headers=bearer(tokens["root"])).status_code
            == 400
        )
    assert counts(demo_db) == before
    assert DEFAULT_BODY_BYTES == 8 * 1024 * 1024


def test_chunks_for_a_query_and_answer_pairs_become_items(db_at: str) -> None:
    """An empty store: corpus, queries, a run and two systems' traces pushed, then pooled (depth 2 of
    two queries: 4 chunk items) and paired (two queries both systems answered: 2 pair items)."""
    with Store(db_at) as store:
        root = bearer(store.add_annotator("root", "admin") or "")
        store.add_annotator("ann", "annotator")
    corpus = "".join(json.dumps({"id": f"c{i}", "text": f"chunk text {i}"}) + "\n" for i in range(4))
    queries = "".join(json.dumps({"id": q, "text": f"what is {q}?"}) + "\n" for q in ("q1", "q2"))
    run = "".join(
        f"{q} Q0 c{i} {r} {1 - r / 10} bm25\n" for q in ("q1", "q2") for r, i in enumerate((0, 1, 2), 1)
    )
    traces = "".join(
        json.dumps(
            {
                "id": f"{s}-{q}",
                "query_id": q,
                "system": s,
                "question": f"{q}?",
                "contexts": ["c0"],
                "answer": f"{s} on {q}",
            }
        )
        + "\n"
        for s in ("sys-a", "sys-b")
        for q in ("q1", "q2")
    )
    with api_server(db_at) as url, httpx.Client(base_url=url, timeout=60) as client:
        for slot, body, params in (
            ("corpus", corpus, {}),
            ("queries", queries, {}),
            ("run", run, {"name": "bm25"}),
            ("traces", traces, {}),
        ):
            answer = client.post(f"/import/{slot}", params=params, content=body.encode(), headers=root)
            assert answer.status_code == 200, answer.text
        pooled = client.post(
            "/pool", json={"depth": 2, "runs": ["bm25"], "annotators": ["ann"]}, headers=root
        )
        assert pooled.status_code == 200, pooled.text
        report = pooled.json()["pool"]
        assert (report["pooled"], report["items_added"], report["items_assigned"]) == (4, 4, 4)
        paired = client.post("/pairs", json={"system_a": "sys-a", "system_b": "sys-b"}, headers=root)
        assert paired.json() == {"pairs": 2, "added": 2}
        again = client.post("/pairs", json={"system_a": "sys-a", "system_b": "sys-b"}, headers=root)
        assert again.json() == {"pairs": 2, "added": 0}
        # bounded and checked before any work
        assert client.post("/pool", json={"depth": 0}, headers=root).status_code == 400
        assert client.post("/pool", json={"depth": True}, headers=root).status_code == 400
        assert client.post("/pool", json={"depth": 2, "runs": ["x"] * 101}, headers=root).status_code == 400
        assert client.post("/pool", json={"depth": 2, "extra": 1}, headers=root).status_code == 400
        assert client.post("/pool", content=b"[1]", headers=root).status_code == 400
        assert client.post("/pool", content=b"{" * 70_000, headers=root).status_code == 413
        assert (
            client.post("/pairs", json={"system_a": "sys-a", "system_b": "sys-a"}, headers=root).status_code
            == 400
        )
        unknown = client.post("/pairs", json={"system_a": "sys-a", "system_b": "nobody"}, headers=root)
        assert unknown.status_code == 400
        assert unknown.json() == {"error": "no query has traces of both 'sys-a' and 'nobody'"}
    with Store(db_at) as store:
        kinds = dict(store.db.execute("SELECT kind, count(*) FROM items GROUP BY kind").fetchall())
    assert kinds == {"chunk": 4, "trace": 4, "pair": 2}


@pytest.mark.parametrize("backend", ["sqlite"])
def test_openapi_document_matches_the_routes(demo_db: Path | str) -> None:
    routes = {route.path for route in ROUTES} - {"/openapi.json", "/docs"}  # type: ignore[attr-defined]
    assert set(openapi()["paths"]) == routes
    with api_server(demo_db) as url:
        document = httpx.get(f"{url}/openapi.json").json()
        page = httpx.get(f"{url}/docs")
    assert document["openapi"] == "3.1.0" and document["servers"] == [{"url": API_PATH}]
    assert page.status_code == 200 and "<script" not in page.text
    assert "default-src 'none'" in page.headers["content-security-policy"]
    for path in routes:
        assert f"{API_PATH}{path}" in page.text


@contextlib.contextmanager
def served_app(db: str | Path, tmp_path: Path) -> Iterator[str]:
    """``denominator serve --api`` on a free port: the app's address."""
    port = free_port()
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp_path),
        "PYTHONPATH": str(Path(__file__).resolve().parent.parent),
        "STREAMLIT_BROWSER_GATHER_USAGE_STATS": "false",
    }
    command = [sys.executable, "-m", "denominator", "serve", "--db", str(db), "--port", str(port), "--api"]
    with started_server(command, env, port) as server:
        assert f"HTTP API at http://127.0.0.1:{port}/api" in server.output()
        yield server.url


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["sqlite"])
def test_serve_api_mounts_it_beside_the_app(demo_db: Path | str, tmp_path: Path) -> None:
    tokens = people(demo_db)
    with served_app(demo_db, tmp_path) as url:
        answer = httpx.get(f"{url}/api/me", headers=bearer(tokens["root"]))
        assert answer.json() == {"name": "root", "role": "admin"}
        assert answer.headers["x-frame-options"] == "DENY"  # the app's middleware applies
        assert (
            httpx.get(
                f"{url}/api/me", headers={**bearer(tokens["root"]), "Host": "rebind.example"}
            ).status_code
            == 403
        )


@pytest.mark.slow
@pytest.mark.postgres
@pytest.mark.parametrize("backend", ["postgresql"])
def test_two_app_servers_on_postgresql_serve_the_same_data(demo_db: Path | str, tmp_path: Path) -> None:
    tokens = people(demo_db)
    with served_app(demo_db, tmp_path) as one, served_app(demo_db, tmp_path) as two:
        root = bearer(tokens["root"])
        pushed = httpx.post(
            f"{one}/api/import/traces", content=traces_body(50, "shared"), headers=root, timeout=60
        )
        assert pushed.status_code == 200, pushed.text
        item = item_of(demo_db, "shared-7")
        with Store(demo_db) as store:
            store.add_label(item, "ann", 2, "faithfulness")
        read: list[Any] = []
        for url in (one, two):
            answer = httpx.get(f"{url}/api/labels", params={"kind": "trace"}, headers=bearer(tokens["ann"]))
            read.append(answer.json())
        assert read[0] == read[1]
        assert [(r["trace_id"], r["value"]) for r in read[0]["labels"]] == [("shared-7", 2)]
        # a second push of the same traces through the other server changes nothing
        again = httpx.post(
            f"{two}/api/import/traces", content=traces_body(50, "shared"), headers=root, timeout=60
        )
        assert again.json()["imported"][0] == "traces body: 0 traces, 50 unchanged"


def test_no_store_there_is_503_and_none_is_made(tmp_path: Path) -> None:
    missing = tmp_path / "none.db"
    with api_server(missing) as url:
        answer = httpx.get(f"{url}/me", headers=bearer("any-token"))
    assert answer.status_code == 503
    assert answer.json() == {
        "error": "this server's store does not exist yet (python -m denominator demo, or an import)"
    }
    assert not missing.exists()


def test_an_unreachable_store_is_503_without_its_password() -> None:
    with api_server("postgresql://someone:s3cret-pw@127.0.0.1:1/nothing") as url:
        answer = httpx.get(f"{url}/me", headers=bearer("any-token"), timeout=30)
    assert answer.status_code == 503
    said = answer.json()["error"]
    assert said.startswith("postgresql://***@127.0.0.1:1/nothing: cannot connect to the database")
    assert "s3cret" not in answer.text


def test_api_max_bytes_goes_with_api(capsys: pytest.CaptureFixture[str]) -> None:
    from denominator.cli import main

    assert main(["serve", "--db", "unused.db", "--api-max-bytes", "5"]) == 2
    assert capsys.readouterr().err == "error: --api-max-bytes goes with --api\n"


@pytest.mark.parametrize("backend", ["sqlite"])
def test_a_path_or_query_that_is_not_utf8_is_refused(demo_db: Path | str) -> None:
    """%ff, or an escaped UTF-16 surrogate, was read as U+FFFD and stored as a run's name."""
    tokens = people(demo_db)
    before = counts(demo_db)
    with httpx.Client(timeout=30) as client, api_server(demo_db) as url:
        root = bearer(tokens["root"])
        answers = [
            client.post(f"{url}/import/run?name=%ff", content=b"q_faw Q0 d1 1 1 x\n", headers=root),
            client.post(f"{url}/import/run?name=%ED%A0%80", content=b"q_faw Q0 d1 1 1 x\n", headers=root),
            client.post(f"{url}/import/%ff", content=b"x", headers=root),
            client.get(f"{url}/labels?annotator=%C3", headers=root),
        ]
        with Store(demo_db) as store:
            runs = [r[0] for r in store.db.execute("SELECT name FROM runs")]
    assert [a.status_code for a in answers] == [400, 400, 400, 400]
    assert [a.json()["error"] for a in answers] == [
        "the query string is not UTF-8 once its %-escapes are read",
        "the query string is not UTF-8 once its %-escapes are read",
        "the path is not UTF-8 once its %-escapes are read",
        "the query string is not UTF-8 once its %-escapes are read",
    ]
    assert not any("\ufffd" in name for name in runs)
    assert counts(demo_db) == before


@pytest.mark.parametrize("backend", ["sqlite"])
def test_json_requests_take_each_known_key_once_and_405_says_allow(demo_db: Path | str) -> None:
    tokens = people(demo_db)
    root = bearer(tokens["root"])
    before = counts(demo_db)
    with httpx.Client(timeout=30) as client, api_server(demo_db) as url:
        twice = client.post(f"{url}/pool", content=b'{"depth": 5, "depth": 1}', headers=root)
        extra = client.post(
            f"{url}/pairs", json={"system_a": "rag-bm25", "system_b": "rag-rerank", "extra": 1}, headers=root
        )
        wrong = client.delete(f"{url}/me", headers=root)
        posted = client.post(f"{url}/labels", headers=root)
    assert (twice.status_code, twice.json()) == (
        400,
        {"error": "the key 'depth' is given twice in one object"},
    )
    assert (extra.status_code, extra.json()) == (
        400,
        {"error": "unknown field 'extra'; expected system_a, system_b"},
    )
    assert (wrong.status_code, wrong.headers["allow"]) == (405, "GET, HEAD")
    assert (posted.status_code, posted.headers["allow"]) == (405, "GET, HEAD")
    assert wrong.json() == {"error": "this route does not take that method; see /api/docs"}
    assert counts(demo_db) == before


@pytest.mark.parametrize("backend", ["sqlite"])
def test_the_byte_limit_is_inclusive_and_leading_zeros_are_the_number(
    demo_db: Path | str, monkeypatch: pytest.MonkeyPatch
) -> None:
    tokens = people(demo_db)
    body = traces_body(3, "zeros")
    monkeypatch.setenv(MAX_BYTES_ENV, str(len(body)))
    with api_server(demo_db) as url:
        head = f"Authorization: Bearer {tokens['root']}\r\nConnection: close\r\n"

        def push(length: str, sent: bytes) -> bytes:
            with socket.create_connection(("127.0.0.1", int(url.rsplit(":", 1)[1]))) as sock:
                sock.sendall(
                    f"POST /import/traces HTTP/1.1\r\nHost: 127.0.0.1\r\n{head}Content-Length: {length}\r\n\r\n".encode()
                    + sent
                )
                got = b""
                while chunk := sock.recv(65536):
                    got += chunk
            return got

        exact = push(f"0000{len(body)}", body)  # exactly the limit, written with leading zeros
        over = push(f"000{len(body) + 1}", body + b"\n")
    assert exact.startswith(b"HTTP/1.1 200"), exact[:200]
    assert b"traces body: 3 traces, 0 unchanged" in exact
    assert over.startswith(b"HTTP/1.1 413")


def test_the_body_limit_has_one_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    from annotation.http_api import BODY_BYTES_MAX, ApiError, body_limit

    monkeypatch.setenv(MAX_BYTES_ENV, str(BODY_BYTES_MAX))
    assert body_limit() == 2**30
    monkeypatch.setenv(MAX_BYTES_ENV, str(BODY_BYTES_MAX + 1))
    with pytest.raises(ApiError, match="from 1 to 1073741824"):
        body_limit()


def _constant_parquet(rows: int, width: int) -> bytes:
    """An OpenInference export of ``rows`` spans with the same ``width``-character trace id and
    input: dictionary-encoded, a few KB whatever ``rows`` is."""
    import io

    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.table(
        {
            "context.span_id": ["s"] * rows,
            "context.trace_id": ["t" * width] * rows,
            "name": ["llm"] * rows,
            "attributes.input.value": ["i" * width] * rows,
        }
    )
    out = io.BytesIO()
    pq.write_table(table, out, use_dictionary=True, compression="zstd")
    return out.getvalue()


def test_a_small_parquet_push_that_decodes_to_much_is_refused_from_its_metadata(
    demo_db: Path | str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """M2: a push's decoded text is at most 8 times its byte limit and its rows one per 64 bytes of
    it, checked from the file's metadata and dictionaries before any row becomes objects; nothing
    stored, no import recorded. A local file keeps the file limits."""
    tokens = people(demo_db)
    before = counts(demo_db)
    monkeypatch.setenv(MAX_BYTES_ENV, "65536")  # 512 KiB of text, 1,024 rows
    many, wide = _constant_parquet(2_000, 4), _constant_parquet(1_000, 1_000)
    assert len(many) < 2_000 and len(wide) < 10_000  # bodies far under the 64 KiB
    with api_server(demo_db) as url, httpx.Client(base_url=url, timeout=60) as client:
        push = {"from": "openinference"}
        rows = client.post("/import/traces", params=push, content=many, headers=bearer(tokens["root"]))
        assert rows.status_code == 400
        assert rows.json()["error"] == (
            "body: 2,000 rows (its metadata says); a file pushed over HTTP takes at most 1,024 rows "
            f"(from its limit of 65,536 bytes (64 KiB) a push: set {MAX_BYTES_ENV} to raise it, "
            "or import the file with python -m annotation import)"
        )
        text = client.post("/import/traces", params=push, content=wide, headers=bearer(tokens["root"]))
        assert text.status_code == 400
        assert text.json()["error"].startswith(
            "body: 2,004,000 bytes of text once its dictionaries are expanded; a file pushed over HTTP "
            "takes at most 524,288 bytes (512 KiB) of text"
        )
    assert counts(demo_db) == before
    # the same file read locally: the file limits only (2 GiB of text, 1M rows)
    from annotation.traces.files import read_values

    local = tmp_path / "wide.parquet"
    local.write_bytes(wide)
    assert len(read_values(str(local))) == 1_000


def test_ids_that_break_the_id_rule_are_refused_by_every_push(demo_db: Path | str) -> None:
    """M3: a line break, a tab, ESC, a bidi override or a space in an id is refused over HTTP with
    the reader's line and field; nothing stored, no import recorded."""
    tokens = people(demo_db)
    before = counts(demo_db)
    rule = "expected an id without whitespace, control or format characters"
    cases = [
        (
            "run",
            {"format": "jsonl", "name": "inj"},
            b'{"query_id": "qinj 0 m1 3\\nq_faw", "ranking": ["m2"]}\n',
            "body:1: query_id: 'qinj 0 m1 3\\nq_faw' holds U+000A (whitespace) at position 11; "
            "expected an id without whitespace other than spaces, control or format characters",
        ),
        (
            "run",
            {"format": "trec", "name": "inj2"},
            b"q\x1bx Q0 m\x1b2 1 1.0 r\n",
            f"body:1: qid: 'q\\x1bx' holds U+001B (a control character) at position 1; {rule}",
        ),
        (
            "corpus",
            {},
            b'{"id": "c\\u202e\\u001b", "text": "x"}\n',
            f"body:1: id: 'c\\u202e\\x1b' holds U+202E (a format character) at position 1; {rule}",
        ),
        (
            "queries",
            {"format": "tsv"},
            b"q\x1by\ttext\n",
            f"body:1: id: 'q\\x1by' holds U+001B (a control character) at position 1; {rule}",
        ),
        (
            "traces",
            {},
            traces_body(1).replace(b'"q_faw"', b'"tq sp"'),
            f"body:1: query_id: 'tq sp' holds U+0020 (whitespace) at position 2; {rule}",
        ),
    ]
    with api_server(demo_db) as url, httpx.Client(base_url=url, timeout=60) as client:
        for slot, params, body, message in cases:
            answer = client.post(
                f"/import/{slot}", params=params, content=body, headers=bearer(tokens["root"])
            )
            assert (answer.status_code, answer.json()) == (400, {"error": message}), slot
    assert counts(demo_db) == before


def _rows(db: str | Path) -> dict[str, int]:
    with Store(db) as store:
        return {
            table: int(store.db.execute(f"SELECT count(*) FROM {table}").fetchone()[0])
            for table in ("queries", "traces", "items", "imports", "import_rows")
        }


def test_a_trace_not_imported_creates_no_query_and_a_repeat_only_records_the_push(
    demo_db: Path | str,
) -> None:
    """L4: (a) a trace with a new id and query id but the question, contexts and answer of a stored
    one is not imported, and its query is not created; (b) the same trace again adds no row, but
    the push is recorded as an import naming the trace and its query (docs/api-http.md)."""
    tokens = people(demo_db)
    first = traces_body(1, "orph")
    other = first.replace(b'"orph-0"', b'"orph-b"').replace(b'"q_faw"', b'"q_orph_b"')

    def push(body: bytes) -> tuple[list[str], dict[str, int]]:
        before = _rows(demo_db)
        answer = client.post("/import/traces", content=body, headers=bearer(tokens["root"]))
        assert answer.status_code == 200
        after = _rows(demo_db)
        return answer.json()["imported"], {k: after[k] - before[k] for k in before}

    with api_server(demo_db) as url, httpx.Client(base_url=url, timeout=60) as client:
        _, added = push(first)
        # q_faw is the demo's: the import holds the trace and names the query
        assert added == {"queries": 0, "traces": 1, "items": 1, "imports": 1, "import_rows": 2}
        lines, added = push(other)
        assert lines[0] == "traces body: 0 traces, 0 unchanged, 1 identical"
        assert lines[1] == (
            "  not imported: trace 'orph-b': the same question, contexts and answer as trace 'orph-0'"
        )
        assert added == {"queries": 0, "traces": 0, "items": 0, "imports": 1, "import_rows": 0}
        lines, added = push(first)
        assert lines[0] == "traces body: 0 traces, 1 unchanged"
        assert added == {"queries": 0, "traces": 0, "items": 0, "imports": 1, "import_rows": 2}
    with Store(demo_db) as store:
        assert store.db.execute("SELECT count(*) FROM queries WHERE id = 'q_orph_b'").fetchone()[0] == 0
