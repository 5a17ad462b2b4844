"""Review findings for the judge (client retries, runner, pairwise summary, CLI).

Each test states the behaviour the module docstrings promise and fails where
the code does otherwise.
"""

from __future__ import annotations

import asyncio
import json
import threading
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from annotation.store import Store
from judge.__main__ import main
from judge.client import Endpoint, JudgeClient
from judge.pairwise import pairwise_calls, summarize_pairs
from judge.pointwise import pointwise_calls
from judge.prompts import fingerprint, judge_settings
from judge.runner import Job, ResultWriter, run_job
from tests.conftest import page_test


@pytest.fixture
def demo(demo_db, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-review-secret")
    return demo_db


def _completion(content: str) -> bytes:
    return json.dumps(
        {
            "id": "chatcmpl-x",
            "object": "chat.completion",
            "created": 0,
            "model": "m",
            "choices": [
                {"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}
            ],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        }
    ).encode()


@contextmanager
def scripted_server(respond):
    """A tiny HTTP server: ``respond(index, call_key) -> (status, content_type, body_bytes)``."""
    state = {"n": 0, "lock": threading.Lock()}

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def do_POST(self):
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            with state["lock"]:
                index = state["n"]
                state["n"] += 1
            status, ctype, body = respond(index, self.headers.get("X-Denominator-Call") or "")
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    # shutdown() waits out a poll of serve_forever: 0.05 s, not the default 0.5 s
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1", state
    finally:
        server.shutdown()
        server.server_close()


def _writer_threads():
    return [t for t in threading.enumerate() if t.name == "judge-writer" and t.is_alive()]


@pytest.fixture
def no_leaked_writers():
    yield
    for t in _writer_threads():  # tidy up after a failing test: stop leaked writers
        t._queue.put(None)
        t.join(timeout=5)


GRADE = '{"reason": "r", "grade": 2}'


# ---------------------------------------------------------------- client: retries


def test_review_retry_after_that_is_neither_seconds_nor_a_date_still_retries(fake_openai) -> None:
    """client.py: a Retry-After the client cannot read should fall back to the
    backoff; it raises ValueError out of complete() (from parsedate_to_datetime)
    and kills the whole run."""

    async def go():
        server = fake_openai(faults=[("429", "soon")])
        client = JudgeClient(Endpoint(server.base_url, "fake-judge", backoff=0.01))
        try:
            msgs = [
                {"role": "system", "content": 'Reply schema: {"properties": {"grade": {"enum": [0,1]}}}'},
                {"role": "user", "content": "x"},
            ]
            return await client.complete(msgs, None, "fp/1/-/0")
        finally:
            await client.close()

    result = asyncio.run(go())
    assert result.attempts == 2


@pytest.mark.parametrize("status", [520, 522, 524, 529])
def test_review_transient_5xx_outside_the_list_are_retried(status) -> None:
    """client.py docstring: "429, 5xx, timeouts ... are retried". RETRYABLE_STATUS lists
    only 500/502/503/504, so a 524 (a gateway timeout in front of vLLM/Ollama) or
    529 (overloaded) raises EndpointRefused and stops the whole run."""

    def respond(index, key):
        if index == 0:
            return status, "application/json", b'{"error": {"message": "transient"}}'
        return 200, "application/json", _completion(GRADE)

    async def go(url):
        client = JudgeClient(Endpoint(url, "m", backoff=0.01))
        try:
            return await client.complete([{"role": "user", "content": "x"}], None, "fp/1/-/0")
        finally:
            await client.close()

    with scripted_server(respond) as (url, _):
        result = asyncio.run(go(url))
    assert result.text == GRADE and result.attempts == 2


def test_review_a_200_that_is_not_json_is_an_error_row_not_a_crash(demo, no_leaked_writers) -> None:
    """runner.py: "a failed call is a row with error set". A 200 whose body is an
    HTML page (a proxy's error page) makes client.complete raise AttributeError
    ('str' object has no attribute 'usage'); it is not CallFailed, so the whole
    run dies, the other calls in flight are cancelled and nothing says which call."""
    with Store(demo) as store:
        calls = pointwise_calls(store, "relevance", limit=4)
    bad = f"/{calls[1].item_id}/"

    def respond(index, key):
        if bad in key:
            return 200, "text/html", b"<html>502 from the proxy</html>"
        return 200, "application/json", _completion(GRADE)

    with scripted_server(respond) as (url, _):
        ep = Endpoint(url, "m", concurrency=2, backoff=0.01)
        settings = judge_settings("relevance", ep.model, ep.base_url)
        fp = fingerprint(settings)
        with Store(demo) as store:
            store.register_judge(fp, settings)
        writer = ResultWriter(str(demo))
        writer.start()
        try:
            progress = run_job(Job(JudgeClient(ep), "relevance", fp, "json_schema", calls, writer))
        finally:
            writer.close()
    assert progress.done == 4 and progress.errors == 1


# ---------------------------------------------------------------- the writer on failures


def test_review_cli_closes_the_writer_when_a_run_fails(demo, no_leaked_writers) -> None:
    """__main__.run_llm closes the writer only on EndpointRefused. Any other
    exception from the run (here: the HTML 200 above) leaves the daemon writer
    thread running with rows queued, and it is killed at interpreter exit."""

    def respond(index, key):
        return 200, "text/html", b"<html>proxy</html>"

    before = len(_writer_threads())
    with scripted_server(respond) as (url, _):
        try:
            main(
                [
                    "grade",
                    "--db",
                    str(demo),
                    "--rubric",
                    "relevance",
                    "--base-url",
                    url,
                    "--model",
                    "m",
                    "--limit",
                    "2",
                ]
            )
        except Exception:  # noqa: BLE001 - the crash itself is the previous test
            pass
    assert len(_writer_threads()) == before, "a judge-writer thread was left running"


def test_review_judge_page_closes_the_writer_when_a_run_fails(demo, monkeypatch, no_leaked_writers) -> None:
    """denominator/ui/judge.py render_llm: same as the CLI; any exception but EndpointRefused
    (including Streamlit stopping the script when the user clicks during a run)
    leaves the writer thread and its SQLite connection open, one per attempt."""

    def respond(index, key):
        return 200, "text/html", b"<html>proxy</html>"

    before = len(_writer_threads())
    with scripted_server(respond) as (url, _):
        monkeypatch.setenv("OPENAI_BASE_URL", url)
        monkeypatch.setenv("OPENAI_MODEL", "m")
        at = page_test("denominator.ui.judge.render_judge_page", timeout=60).run()
        at.number_input(key="judge:limit").set_value(2).run()
        at.button(key="judge:run").click().run()
    assert len(_writer_threads()) == before, "a judge-writer thread was left running"


# ---------------------------------------------------------------- pairwise


def test_review_repeats_use_seed_plus_r(demo, fake_openai) -> None:
    """pairwise.py: "repeat r uses seed + r". The client sends endpoint.seed for
    every call, so repeat 1 is the byte-identical request of repeat 0 and
    repetition stability is measured on nothing."""
    with Store(demo) as store:
        calls = [c for c in pairwise_calls(store, repeats=2, limit=1)]
    server = fake_openai()
    ep = Endpoint(server.base_url, "fake-judge", seed=7, concurrency=1, backoff=0.01)
    settings = judge_settings("preference", ep.model, ep.base_url, seed=7)
    fp = fingerprint(settings)
    with Store(demo) as store:
        store.register_judge(fp, settings)
    writer = ResultWriter(str(demo))
    writer.start()
    try:
        run_job(Job(JudgeClient(ep), "preference", fp, "json_schema", calls, writer))
    finally:
        writer.close()
    server.wait_idle()
    seeds = {r["key"].split("/")[-1]: r["body"].get("seed") for r in server.requests}
    assert seeds["0"] == 7
    assert seeds["1"] == 8


def test_review_pair_preference_uses_only_balanced_repeats() -> None:
    """summarize_pairs averages every answer of a pair, including a repeat that
    has one order only, so a position bias leaks into the "swap-averaged"
    preference: a judge that always picks the first answer scores 2/3 here
    instead of 0.5 (repeat 1's BA call failed and is an error row)."""
    values = [
        {"item_id": 1, "ab_order": "AB", "repeat": 0, "value": 0},
        {"item_id": 1, "ab_order": "BA", "repeat": 0, "value": 0},
        {"item_id": 1, "ab_order": "AB", "repeat": 1, "value": 0},
    ]
    summary = summarize_pairs(values)
    assert summary["pairs"][0]["preference_a"] == 0.5


# ---------------------------------------------------------------- command line


def test_review_limit_zero_means_no_items(demo, capsys) -> None:
    """--limit N is "only the first N items"; --limit 0 (falsy) silently means
    every item, i.e. a full paid run."""
    code = main(
        [
            "grade",
            "--db",
            str(demo),
            "--rubric",
            "relevance",
            "--base-url",
            "http://127.0.0.1:9/v1",
            "--model",
            "m",
            "--limit",
            "0",
            "--dry-run",
        ]
    )
    out = capsys.readouterr()
    assert code == 2 or "would make 0 calls" in out.out, out.out


def test_review_bad_price_table_is_a_one_line_error(demo, tmp_path, capsys) -> None:
    """Prices.load raises a plain ValueError (not InvalidPrices) for an entry that
    is not {"input", "output"}; main() re-raises ValueErrors, so the user gets a
    traceback instead of "error: ..." and exit 2."""
    prices = tmp_path / "prices.json"
    prices.write_text('{"m": 0.5}')
    assert main(["list", "--db", str(demo), "--prices", str(prices)]) == 2
    assert "error:" in capsys.readouterr().err


# ---------------------------------------------------------------- what the judge is sent


def test_review_an_item_without_text_is_not_graded_as_empty(tmp_path) -> None:
    """pointwise.py: an item whose chunk text is not imported yet (labels or a run
    name only ids) is sent as {"chunk": ""}. The judge's grade of an empty chunk
    is stored as a real value and the item counts as done for that fingerprint,
    so once the corpus is imported the judge never asks again."""
    from annotation.model import Qrels

    with Store(tmp_path / "t.db") as store:
        store.import_queries({"q1": "how do I store maize?"})
        store.import_labels(Qrels(grades={"q1": {"c1": 2}}), annotator="ann")  # chunk c1: id only
        calls = pointwise_calls(store, "relevance")
    assert calls == [] or all(c.data["chunk"] for c in calls), [c.data for c in calls]


def test_review_the_page_sends_the_server_key_only_to_the_configured_endpoint(
    demo, monkeypatch, fake_openai
) -> None:
    """denominator/ui/judge.py: the key comes from the server's OPENAI_API_KEY, but the page
    lets whoever holds the admin role type any base URL; the server then sends
    `Authorization: Bearer $OPENAI_API_KEY` to that URL (an admin of the app,
    who need not have the server's environment, can read the key off the wire)."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-server-secret")
    configured = fake_openai()
    elsewhere = fake_openai()
    monkeypatch.setenv("OPENAI_BASE_URL", configured.base_url)
    monkeypatch.setenv("OPENAI_MODEL", "fake-judge")
    at = page_test("denominator.ui.judge.render_judge_page", timeout=60).run()
    at.text_input(key="judge:base-url").input(elsewhere.base_url).run()
    at.number_input(key="judge:limit").set_value(1).run()
    at.button(key="judge:run").click().run()
    elsewhere.wait_idle()
    sent = [r["headers"].get("authorization", "") for r in elsewhere.requests]
    assert not any("sk-server-secret" in h for h in sent), sent
