"""The judge's bounds against a hostile endpoint (#17, "Hardening, found by attacking it"):
a reply dripped a byte a second, a huge Retry-After, a huge reply, a redirect to another
host, numbers no machine holds, SIGTERM while waiting, and another process holding the
store's write lock. Each test drives `python -m judge` (its `main`) against the local fake
endpoint (tests/fake_openai.py) with the real `openai` client, and prints its figures."""

from __future__ import annotations

import os
import resource
import signal
import threading
import time

import pytest

from annotation.store import Store
from judge.__main__ import main
from judge.runner import NOT_ANSWERED
from tests.conftest import HeldWriteLock, cli, timed, wait_until


@pytest.fixture
def demo(demo_db, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "test")
    return demo_db


def grade(db, url, *extra):
    return ["grade", "--db", db, "--rubric", "relevance", "--judge", "openai", "--base-url", url] + [
        "--model",
        "fake-judge",
        *extra,
    ]


def rows(db):
    with Store(db) as store:
        return store.db.execute("SELECT item_id, value, error, raw FROM judge_labels ORDER BY id").fetchall()


def signal_once(server, n: int = 1) -> threading.Thread:
    """SIGTERM to this process once the server has ``n`` requests in (main's handler is set)."""

    def send() -> None:
        wait_until(lambda: len(server.requests) >= n, f"{n} requests in")
        time.sleep(0.2)
        os.kill(os.getpid(), signal.SIGTERM)

    thread = threading.Thread(target=send, daemon=True)
    thread.start()
    return thread


@pytest.mark.wall_clock
def test_a_dripping_endpoint_is_cut_at_the_calls_total_deadline(demo, capsys, fake_openai, figure) -> None:
    server = fake_openai(drip=1.0)  # one byte a second: a read never times out
    with timed() as took:
        code, out, err = cli(main, capsys, *grade(demo, server.base_url, "--limit", "1", "--timeout", "2"))
    seconds = took.seconds
    assert code == 0, err
    [(_, value, error, _)] = rows(demo)
    assert value is None and "no complete reply within the call's deadline of 2 s" in error
    took.within(6, "a call with a 2 s deadline")
    figure(
        f"drip 1 byte/s, --timeout 2: the call ended after {seconds:.1f} s ({server.bytes_sent} bytes read)"
    )


@pytest.mark.wall_clock
def test_sigterm_ends_a_dripping_call_within_the_grace(demo, capsys, fake_openai, figure) -> None:
    server = fake_openai(drip=1.0)
    signal_once(server)
    with timed() as took:
        code, out, err = cli(main, capsys, *grade(demo, server.base_url, "--limit", "1", "--timeout", "600"))
    seconds = took.seconds
    assert code == 130 and "stopping:" in err and "interrupted: 1 call left" in out
    assert "1 of 1 calls were in flight when the run was stopped (stored as not answered)" in out
    assert rows(demo) == [(rows(demo)[0][0], None, NOT_ANSWERED, None)]
    took.within(6, "a run stopped 0.2 s in")
    figure(
        f"drip 1 byte/s, SIGTERM after 0.2 s: the run ended after {seconds:.1f} s, the call stored as not answered"
    )


@pytest.mark.wall_clock
def test_a_huge_retry_after_is_an_error_row_not_a_wait(demo, capsys, fake_openai, figure) -> None:
    server = fake_openai(faults=lambda index, key, body: ("429", 999999))
    with timed() as took:
        code, out, err = cli(main, capsys, *grade(demo, server.base_url, "--limit", "2"))
    seconds = took.seconds
    assert code == 0, err
    errors = [e for _, _, e, _ in rows(demo)]
    assert len(errors) == 2 and all(
        "Retry-After 999,999 s, over the 60 s honoured (--max-retry-after)" in e for e in errors
    )
    assert sum(server.received.values()) == 2
    took.within(5, "two calls answered Retry-After 999999")
    # a Retry-After under the cap but past the call's deadline is not waited for either
    server2 = fake_openai(faults=[("429", 30)])
    code, out, err = cli(
        main, capsys, *grade(demo, server2.base_url, "--limit", "1", "--timeout", "5", "--name", "b")
    )
    assert code == 0 and "past the call's deadline of 5 s" in rows(demo)[-1][2]
    figure(f"Retry-After 999999 (cap 60 s): 2 calls, 2 error rows, {seconds:.1f} s")


@pytest.mark.wall_clock
def test_sigterm_ends_a_retry_after_wait_at_once(demo, capsys, fake_openai, figure) -> None:
    server = fake_openai(faults=lambda index, key, body: ("429", 50))
    signal_once(server)
    with timed() as took:
        code, out, err = cli(main, capsys, *grade(demo, server.base_url, "--limit", "1", "--timeout", "600"))
    seconds = took.seconds
    assert code == 130
    [(_, value, error, _)] = rows(demo)
    assert value is None and error == "not answered: stopped while waiting to retry (HTTP 429)"
    took.within(3, "a run stopped while waiting to retry")
    figure(f"Retry-After 50 s honoured, SIGTERM after 0.2 s: the run ended after {seconds:.1f} s")


@pytest.mark.parametrize("chunked", [False, True])
def test_a_huge_reply_is_an_error_row_with_its_first_kb(demo, capsys, fake_openai, figure, chunked) -> None:
    server = fake_openai(huge_reply=20_000_000, huge_chunked=chunked)
    code, out, err = cli(
        main, capsys, *grade(demo, server.base_url, "--limit", "1", "--max-reply-bytes", "1000000")
    )
    assert code == 0, err
    [(_, value, error, raw)] = rows(demo)
    assert value is None and "a reply over 1,000,000 bytes (--max-reply-bytes), not read further" in error
    assert len(raw) == 1024 and raw.startswith('{"id": "chatcmpl-')
    size = sum(os.path.getsize(p) for p in (demo, f"{demo}-wal") if os.path.exists(p))
    assert size < 2_000_000
    figure(
        f"a 20,000,000-byte reply ({'chunked' if chunked else 'with a length'}), cap 1,000,000: "
        f"{len(raw)} bytes stored, database + WAL {size:,} bytes"
    )


def test_a_redirect_is_not_followed_and_names_its_target(demo, capsys, fake_openai) -> None:
    other = fake_openai()
    server = fake_openai(redirect_to=f"http://127.0.0.1:{other.port}")
    code, out, err = cli(main, capsys, *grade(demo, server.base_url, "--limit", "2"))
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in err
    assert f"HTTP 307: a redirect to http://127.0.0.1:{other.port}/v1/chat/completions, not followed" in err
    assert sum(other.received.values()) == 0 and rows(demo) == []


@pytest.mark.parametrize(
    "argv, said",
    [
        (
            ["--seed", "99999999999999999999"],
            "expected an integer from -9,223,372,036,854,775,808 to 9,223,372,036,854,775,807",
        ),
        (["--timeout", "nan"], "expected a finite number above 0 and at most 86400"),
        (["--timeout", "inf"], "expected a finite number above 0 and at most 86400"),
        (["--timeout", "0"], "expected a finite number above 0 and at most 86400"),
        (["--temperature", "nan"], "expected a finite number from 0 to 2"),
        (["--max-retry-after", "-1"], "expected a finite number from 0 to 86400"),
        (["--max-reply-bytes", "10"], "expected an integer from 1,024 to 100,000,000"),
        (["--concurrency", "99999999999999999999"], "expected an integer from 1 to"),
        (["--limit", "99999999999999999999"], "expected an integer from 1 to 9,223,372,036,854,775,807"),
    ],
)
def test_numbers_no_machine_holds_are_one_line_exit_2(demo, capsys, argv, said) -> None:
    code, out, err = cli(main, capsys, *grade(demo, "http://127.0.0.1:9/v1", *argv))
    assert code == 2 and err.count("\n") == 1 and said in err and out == ""
    with Store(demo) as store:
        assert store.judges() == []  # nothing registered


def test_the_offline_judges_seed_is_bounded_too(demo_db, capsys) -> None:
    code, _, err = cli(main, capsys, "grade", "--db", demo_db, "--rubric", "relevance", "--seed", "-1")
    assert code == 2 and "the offline judge's seed is an integer from 0 to 4,294,967,295" in err
    code, _, err = cli(
        main, capsys, "fit-lexical", "--db", demo_db, "--rubric", "relevance", "--seed", str(2**32)
    )
    assert code == 2 and "expected an integer from 0 to 4,294,967,295" in err


@pytest.mark.wall_clock
def test_a_dry_run_counts_repeats_without_building_them(demo, capsys, figure) -> None:
    argv = [
        "compare",
        "--db",
        demo,
        "--base-url",
        "http://127.0.0.1:9/v1",
        "--model",
        "fake-judge",
        "--dry-run",
    ]
    code, _, err = cli(main, capsys, *argv, "--repeats", "99999999999999999999")
    assert code == 2 and err.count("\n") == 1 and "expected an integer from 1 to 1,000,000" in err
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with timed() as took:
        code, out, err = cli(main, capsys, *argv, "--repeats", "1000000")
    seconds = took.seconds
    grown_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    assert code == 0, err
    assert "would make 8,000,000 calls (0 of 8,000,000 already done)" in out and "no call made" in out
    assert grown_mb < 100
    took.within(5, "a dry run of 8,000,000 calls")
    figure(
        f"compare --repeats 1000000 --dry-run: 8,000,000 calls counted in {seconds:.2f} s, peak RSS +{grown_mb:.0f} MB"
    )


def test_a_held_write_lock_loses_no_answer(demo, capsys, fake_openai, figure, monkeypatch) -> None:
    # The attack held the lock 15 s against a 10 s busy timeout; here 3 s against 1 s.
    import annotation.store.base as base

    monkeypatch.setattr(base, "BUSY_TIMEOUT_MS", 1000)
    server = fake_openai(latency=0.05)
    held = {}

    def hold_the_lock() -> None:
        wait_until(lambda: sum(server.served.values()) >= 5, "5 answers served")
        lock = HeldWriteLock(demo)
        held["at"] = sum(server.served.values())
        time.sleep(3)
        lock.release()

    locker = threading.Thread(target=hold_the_lock, daemon=True)
    locker.start()
    code, out, err = cli(main, capsys, *grade(demo, server.base_url, "--concurrency", "2"))
    locker.join()
    server.wait_idle()
    received, stored = sum(server.served.values()), len(rows(demo))
    assert code == 0, err
    assert received == stored == 40 and all(v is not None for _, v, _, _ in rows(demo))
    assert "for the database's write lock (another process held it), every one stored" in out
    figure(
        f"write lock held 3 s by another connection from answer {held['at']}: {received} answers received, "
        f"{stored} stored"
    )


def test_a_lock_held_past_the_writers_wait_says_how_many_answers(demo, fake_openai) -> None:
    from judge.runner import AnswersNotStored, ResultWriter

    writer = ResultWriter(str(demo), lock_wait=0.5)
    writer.start()
    lock = HeldWriteLock(demo)
    try:
        row = {"item_id": 1, "fingerprint": "fp", "repeat": 0, "value": 1}
        writer.put(row)
        writer.put(dict(row, item_id=2))
        with pytest.raises(
            AnswersNotStored, match=r"2 of 2 answers received could not be stored: .* 0 stored"
        ):
            writer.close()
    finally:
        lock.release(commit=False)
