"""Interrupting a judge run and resuming it, with real processes: the server
(`python -m tests.fake_openai`) logs every call it receives and serves; the
judge (`python -m judge grade`) is stopped mid-run and started again.

SIGTERM (like Ctrl-C) lets the calls in flight finish: no call repeated,
none missing, the same labels as an uninterrupted run. SIGKILL can lose the
answers in flight and those not yet committed; the resumed run asks those
again (at most twice the concurrency), and still ends with the same labels,
each stored once.
"""

from __future__ import annotations

import signal
import time
from collections import Counter

import pytest

from tests.conftest import CONCURRENCY, FakeOpenAIProcess, judge_values, start_judge, store_copy

pytestmark = pytest.mark.slow  # real processes stopped and resumed


def interrupt_and_resume(
    db, server: FakeOpenAIProcess, sig: int
) -> tuple[tuple[int, str], str, Counter, Counter]:
    """Stop the judge with ``sig`` once a third of the calls (12) are answered, then resume it.

    The server's gate lets exactly 12 answers out and holds the next calls in flight until
    the signal is in: the run cannot end first, however slow the machine."""
    started = time.monotonic()
    server.hold()
    try:
        server.allow(12)
        process = start_judge(db, server.url)
        server.wait_served(12, since=started, client=process)
        process.send_signal(sig)
        if sig == signal.SIGTERM:  # the held calls go out once it has stopped starting new ones
            said = next(
                (line for line in iter(process.stderr.readline, "") if line.startswith("stopping:")), None
            )
            assert said, "the judge ended without saying it was stopping"
    finally:
        server.open()
    out, _ = process.communicate(timeout=60)
    first = (process.returncode, out)
    resumed = start_judge(db, server.url)
    out2, err2 = resumed.communicate(timeout=120)
    assert resumed.returncode == 0, err2
    received, served = server.events(since=started)
    return first, out2, received, served


def test_sigterm_mid_run_resumes_without_a_repeated_or_missing_call(
    judge_server, uninterrupted, backend, tmp_path, request, figure
):
    expected, pristine = uninterrupted
    db = store_copy(pristine, backend, tmp_path, request, "term.db")
    (code, out), out2, received, served = interrupt_and_resume(db, judge_server, signal.SIGTERM)
    assert code == 130 and "interrupted:" in out and "run the same command again to resume" in out
    assert len(received) == 40 and set(received.values()) == {1}  # none repeated
    assert len(served) == 40 and set(served.values()) == {1}  # none missing
    done_before = int(out2.split(" calls made, ")[1].split(" of 40 already done")[0])
    assert 12 <= done_before < 40
    assert judge_values(db) == expected
    figure(
        f"judge run ({backend}), SIGTERM after {done_before} of 40 calls and a resume: {sum(received.values())} calls received, "
        f"{len(served)} answered, {sum(n - 1 for n in received.values())} repeated"
    )


def test_sigkill_mid_run_loses_at_most_the_calls_in_flight(
    judge_server, uninterrupted, backend, tmp_path, request
):
    expected, pristine = uninterrupted
    db = store_copy(pristine, backend, tmp_path, request, "kill.db")
    (code, _), _, received, served = interrupt_and_resume(db, judge_server, signal.SIGKILL)
    assert code == -signal.SIGKILL
    repeated = [key for key, n in received.items() if n > 1]
    # lost: the calls in flight (at most CONCURRENCY) and the answers received but not yet
    # committed (each worker queues one answer per call latency, so at most CONCURRENCY more)
    assert len(received) == 40 and len(repeated) <= 2 * CONCURRENCY
    assert all(n <= 2 for n in received.values())
    assert judge_values(db) == expected  # nothing missing, nothing stored twice


@pytest.mark.postgres
def test_the_store_dying_mid_run_is_one_line_and_the_run_resumes(judge_server, uninterrupted, tmp_path):
    """#25: PostgreSQL goes away while the judge runs (an immediate shutdown after 12 answers):
    one line on stderr, exit 2, no traceback (a StoreError traceback chained to psycopg's
    OperationalError, exit 1, before); back up, the same command finishes with every item graded
    once and the same labels."""
    from annotation.store import Store
    from annotation.store.transfer import copy_store
    from tests.postgres_server import PostgresServer, missing_reason

    if missing_reason():
        pytest.skip(missing_reason())
    expected, pristine = uninterrupted
    pg = PostgresServer().start()
    try:
        url = pg.database()
        with Store(pristine) as lite, Store(url) as target:
            copy_store(lite, target)
        started = time.monotonic()
        judge_server.hold()
        try:
            judge_server.allow(12)
            process = start_judge(url, judge_server.url)
            judge_server.wait_served(12, since=started, client=process)
            time.sleep(0.5)  # the answers stored
            pg.halt()
        finally:
            judge_server.open()
        out, err = process.communicate(timeout=120)
        assert process.returncode == 2, (process.returncode, err[-1500:])
        assert "Traceback" not in err, err[-1500:]
        errors = [line for line in err.splitlines() if line.startswith("error: ")]
        assert errors == [
            "error: the store is unavailable (the PostgreSQL server: the connection is closed); what was "
            "stored before stays: run the same command again when it is back"
        ], err[-800:]
        pg.restart()
        resumed = start_judge(url, judge_server.url)
        out2, err2 = resumed.communicate(timeout=120)
        assert resumed.returncode == 0, err2[-1500:]
        assert judge_values(url) == expected
    finally:
        pg.stop()
