"""The fake OpenAI server (tests/fake_openai.py), driven by the real openai client over HTTP."""

import asyncio
import hashlib
import json
import time

import openai
import pytest

from tests.conftest import fake_openai_process, wait_until

GRADES = [0, 1, 2, 3]


def pointwise_format(grades=GRADES):
    schema = {
        "type": "object",
        "properties": {"reason": {"type": "string"}, "grade": {"type": "integer", "enum": grades}},
        "required": ["reason", "grade"],
        "additionalProperties": False,
    }
    return {"type": "json_schema", "json_schema": {"name": "grade", "strict": True, "schema": schema}}


def pairwise_format():
    schema = {
        "type": "object",
        "properties": {"reason": {"type": "string"}, "winner": {"type": "string", "enum": ["A", "B", "tie"]}},
        "required": ["reason", "winner"],
        "additionalProperties": False,
    }
    return {"type": "json_schema", "json_schema": {"name": "verdict", "strict": True, "schema": schema}}


def messages(user="Query: milk\nChunk: cows give milk"):
    return [{"role": "system", "content": "You grade relevance."}, {"role": "user", "content": user}]


def client(server):
    return openai.OpenAI(base_url=server.base_url, api_key="test", max_retries=0, timeout=10)


def ask(c, response_format=None, user="Query: milk\nChunk: cows give milk", call=None, msgs=None):
    extra = {"X-Denominator-Call": call} if call else None
    kwargs = {"response_format": response_format} if response_format else {}
    return c.chat.completions.create(
        model="judge-model", messages=msgs or messages(user), extra_headers=extra, **kwargs
    )


def test_pointwise_reply_parses_is_in_enum_and_deterministic(fake_openai):
    server = fake_openai()
    with client(server) as c:
        first = ask(c, pointwise_format())
        second = ask(c, pointwise_format())
        reply = json.loads(first.choices[0].message.content)
        assert reply["grade"] in GRADES and reply["reason"]
        assert second.choices[0].message.content == first.choices[0].message.content
        assert first.model == "judge-model" and first.object == "chat.completion"
        assert first.id.startswith("chatcmpl-") and first.choices[0].finish_reason == "stop"
        assert first.usage.prompt_tokens >= 1 and first.usage.completion_tokens >= 1
        assert first.usage.total_tokens == first.usage.prompt_tokens + first.usage.completion_tokens
        # A narrower enum is respected; the grade spreads over items.
        seen = {
            json.loads(ask(c, pointwise_format([1, 2]), user=f"item {i}").choices[0].message.content)["grade"]
            for i in range(20)
        }
        assert seen == {1, 2}


def test_seed_changes_the_pick_and_schema_from_system_line(fake_openai):
    schema = pointwise_format()["json_schema"]["schema"]
    msgs = [
        {"role": "system", "content": "Grade it.\nReply schema: " + json.dumps(schema) + "\nBe brief."},
        {"role": "user", "content": "item"},
    ]
    grades = []
    for seed in range(8):
        server = fake_openai(seed=seed)
        with client(server) as c:
            grades.append(
                json.loads(ask(c, {"type": "json_object"}, msgs=msgs).choices[0].message.content)["grade"]
            )
    assert len(set(grades)) > 1


def test_no_schema_is_a_400(fake_openai):
    server = fake_openai()
    with client(server) as c:
        with pytest.raises(openai.BadRequestError) as info:
            ask(c)
        assert info.value.status_code == 400
        assert server.received and not server.served


def test_pairwise_bias_and_default(fake_openai):
    server = fake_openai(bias="first")
    with client(server) as c:
        for i in range(10):
            assert (
                json.loads(ask(c, pairwise_format(), user=f"pair {i}").choices[0].message.content)["winner"]
                == "A"
            )
    server = fake_openai(bias="second")
    with client(server) as c:
        assert json.loads(ask(c, pairwise_format()).choices[0].message.content)["winner"] == "B"
    server = fake_openai()
    with client(server) as c:
        winners = {
            json.loads(ask(c, pairwise_format(), user=f"pair {i}").choices[0].message.content)["winner"]
            for i in range(30)
        }
        assert winners == {"A", "B", "tie"}


def test_the_served_model_moves_after_n_answers(fake_openai):
    server = fake_openai()
    with client(server) as c:
        reply = ask(c, pointwise_format())
        assert (reply.model, reply.system_fingerprint) == ("judge-model", None)  # none sent by default
    server = fake_openai(system_fingerprint="fp_old", served_model_after={"n": 2, "model": "gpt-x-2026-06"})
    with client(server) as c:
        served = [(r.model, r.system_fingerprint) for r in (ask(c, pointwise_format()) for _ in range(4))]
    moved = ("gpt-x-2026-06", "fp_" + hashlib.sha256(b"gpt-x-2026-06").hexdigest()[:10])
    assert served == [("judge-model", "fp_old")] * 2 + [moved] * 2
    with pytest.raises(ValueError, match="served_model_after"):
        fake_openai(served_model_after={"n": "5", "model": "m"})


def test_policy_overrides_the_default(fake_openai):
    server = fake_openai(policy=lambda body: "custom " + body["model"])
    with client(server) as c:
        assert ask(c).choices[0].message.content == "custom judge-model"


def test_error_faults_surface_as_openai_errors(fake_openai):
    faults = [("429", 7), "500", "503", "drop", None]
    server = fake_openai(faults=faults)
    with client(server) as c:
        with pytest.raises(openai.RateLimitError) as info:
            ask(c, pointwise_format(), call="k429")
        assert info.value.response.headers["retry-after"] == "7"
        assert info.value.body["type"] == "rate_limit_exceeded"
        with pytest.raises(openai.InternalServerError) as info:
            ask(c, pointwise_format(), call="k500")
        assert info.value.status_code == 500
        with pytest.raises(openai.InternalServerError) as info:
            ask(c, pointwise_format(), call="k503")
        assert info.value.status_code == 503
        with pytest.raises(openai.APIConnectionError):
            ask(c, pointwise_format(), call="kdrop")
        ask(c, pointwise_format(), call="kok")  # the client recovers on a fresh connection
        assert server.wait_idle()
        assert server.received == {"k429": 1, "k500": 1, "k503": 1, "kdrop": 1, "kok": 1}
        assert server.served == {"kok": 1}
        assert [r["status"] for r in server.requests] == [429, 500, 503, None, 200]


def test_faulty_200s_count_as_served(fake_openai):
    faults = lambda index, key, body: {0: "invalid_json", 1: "out_of_range", 2: "missing_field"}.get(index)  # noqa: E731
    server = fake_openai(faults=faults)
    with client(server) as c:
        assert ask(c, pointwise_format(), call="a").choices[0].message.content == "Sure! The grade is 3."
        assert json.loads(ask(c, pointwise_format(), call="b").choices[0].message.content)["grade"] == 7
        assert json.loads(ask(c, pointwise_format(), call="c").choices[0].message.content) == {"reason": "x"}
        assert "grade" in json.loads(ask(c, pointwise_format(), call="d").choices[0].message.content)
        assert server.wait_idle()
        assert server.served == {"a": 1, "b": 1, "c": 1, "d": 1}
    server = fake_openai(faults=["out_of_range"])
    with client(server) as c:
        assert json.loads(ask(c, pairwise_format()).choices[0].message.content) == {
            "reason": "x",
            "winner": "C",
        }


def test_keys_counts_and_request_log(fake_openai):
    server = fake_openai()
    with client(server) as c:
        ask(c, pointwise_format(), call="fp/item1/AB/0")
        ask(c, pointwise_format(), call="fp/item1/AB/0")
        ask(c, pointwise_format(), user="no header")
        assert server.wait_idle()
        assert server.received["fp/item1/AB/0"] == 2 and server.served["fp/item1/AB/0"] == 2
        hashed = [k for k in server.received if k != "fp/item1/AB/0"]
        assert len(hashed) == 1 and len(hashed[0]) == 64
        record = server.requests[0]
        assert record["status"] == 200 and record["body"]["model"] == "judge-model"
        assert record["headers"]["x-denominator-call"] == "fp/item1/AB/0"
        assert record["t"] <= server.requests[1]["t"]


def test_a_client_that_gave_up_is_not_served(fake_openai):
    server = fake_openai()
    server.hold()  # the reply waits until the client has given up and gone
    with openai.OpenAI(base_url=server.base_url, api_key="test", max_retries=0, timeout=0.05) as c:
        with pytest.raises(openai.APITimeoutError):
            ask(c, pointwise_format(), call="gone")
    server.open()
    assert server.wait_idle()
    assert server.received == {"gone": 1} and not server.served
    assert server.requests[0]["status"] == 200 and not server.requests[0]["served"]


def test_models_and_unknown_route(fake_openai):
    server = fake_openai()
    with client(server) as c:
        assert [m.id for m in c.models.list()] == ["fake-judge"]
        with pytest.raises(openai.NotFoundError) as info:
            c.completions.create(model="x", prompt="hi")
        assert info.value.body["type"] == "not_found"
        assert not server.received


def test_latency_and_concurrency_with_async_client(fake_openai):
    async def run(server):
        async with openai.AsyncOpenAI(base_url=server.base_url, api_key="test", max_retries=0) as c:
            calls = [
                c.chat.completions.create(
                    model="m",
                    messages=messages(f"item {i}"),
                    response_format=pointwise_format(),
                    extra_headers={"X-Denominator-Call": f"call-{i}"},
                )
                for i in range(16)
            ]
            start = time.monotonic()
            replies = asyncio.gather(*calls)
            deadline = start + 60
            while len(server.requests) < 16 and time.monotonic() < deadline:
                await asyncio.sleep(0.01)
            assert len(server.requests) == 16  # all 16 taken in at once, none answered yet
            server.open()
            return await replies, time.monotonic() - start

    server = fake_openai()
    server.latency = 0.2
    server.hold()  # no reply before the 16th call is in: they are all in flight together
    replies, elapsed = asyncio.run(run(server))
    assert elapsed >= 0.2, elapsed  # the latency was waited
    assert server.wait_idle() and server.max_in_flight == 16
    assert all(json.loads(r.choices[0].message.content)["grade"] in GRADES for r in replies)
    assert sum(server.served.values()) == 16 and len(server.received) == 16


def test_cli_subprocess_logs_events(tmp_path):
    log = tmp_path / "events.jsonl"
    with fake_openai_process("--latency", "0.01", log=log) as server:
        assert server.banner.startswith("listening on http://127.0.0.1:") and server.banner.endswith("/v1")
        with openai.OpenAI(base_url=server.url, api_key="test", max_retries=0, timeout=10) as c:
            reply = ask(c, pointwise_format(), call="cli-1")
        assert json.loads(reply.choices[0].message.content)["grade"] in GRADES
        # "served" is logged just after the reply is flushed: wait for it.
        wait_until(lambda: log.read_text().count("\n") >= 2, "the served event in the log")
        events = [json.loads(line) for line in log.read_text().splitlines()]
        assert [(e["key"], e["event"]) for e in events] == [("cli-1", "received"), ("cli-1", "served")]
        assert all(isinstance(e["t"], float) for e in events)
        assert server.stop() == 0


def test_cli_fail_every():
    with fake_openai_process("--fail-every", "2") as server:
        with openai.OpenAI(base_url=server.url, api_key="test", max_retries=0, timeout=10) as c:
            ask(c, pointwise_format())
            with pytest.raises(openai.InternalServerError):
                ask(c, pointwise_format())
            ask(c, pointwise_format())


def test_cli_gate_holds_replies_until_allowed(tmp_path):
    """--control: the gate the kill-and-resume tests stop the judge with, from another process."""
    log = tmp_path / "events.jsonl"
    with fake_openai_process(log=log) as server:
        server.hold()
        server.allow(1)
        with openai.OpenAI(base_url=server.url, api_key="test", max_retries=0, timeout=10) as c:
            ask(c, pointwise_format(), call="let-through")
            with pytest.raises(openai.APITimeoutError):  # the budget spent: held until the client gives up
                ask(c.with_options(timeout=0.1), pointwise_format(), call="held")
            server.open()
            ask(c, pointwise_format(), call="after")
        wait_until(lambda: server.events()[1].total() == 2, "the served events in the log")
        received, served = server.events()
        assert received == {"let-through": 1, "held": 1, "after": 1}
        assert served == {"let-through": 1, "after": 1}


# ---------------------------------------------------------------- hostile modes (#17)


def test_drip_writes_the_reply_one_byte_at_a_time(fake_openai):
    server = fake_openai(drip=0.002)
    started = time.monotonic()
    with client(server) as c:
        reply = ask(c, pointwise_format())
    seconds = time.monotonic() - started
    assert json.loads(reply.choices[0].message.content)["grade"] in GRADES
    assert server.bytes_sent > 200 and seconds >= server.bytes_sent * 0.002


def test_a_huge_reply_is_padded_to_its_size_with_or_without_a_length(fake_openai):
    import httpx2

    for chunked in (False, True):
        server = fake_openai(huge_reply=3_000_000, huge_chunked=chunked)
        with client(server) as c:
            raw = c.chat.completions.with_raw_response.create(
                model="m", messages=messages(), response_format=pointwise_format()
            )
        assert ("content-length" in raw.headers) is not chunked
        assert len(raw.parse().choices[0].message.content) == 3_000_000
        assert isinstance(raw.http_response, httpx2.Response)


def test_a_redirect_names_its_target_and_a_huge_retry_after_is_sent(fake_openai):
    other = fake_openai()
    server = fake_openai(redirect_to=f"http://127.0.0.1:{other.port}")
    with openai.OpenAI(
        base_url=server.base_url,
        api_key="t",
        max_retries=0,
        http_client=openai.DefaultHttpxClient(follow_redirects=False),
    ) as c:
        with pytest.raises(openai.APIStatusError) as caught:
            ask(c, pointwise_format())
    assert caught.value.status_code == 307
    assert caught.value.response.headers["location"] == f"http://127.0.0.1:{other.port}/v1/chat/completions"
    assert sum(other.received.values()) == 0
    huge = fake_openai(faults=[("429", 999999)])
    with client(huge) as c, pytest.raises(openai.RateLimitError) as caught:
        ask(c, pointwise_format())
    assert caught.value.response.headers["retry-after"] == "999999"
