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

import json
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from annotation.__main__ import build_demo
from annotation.store import Store

ROOT = Path(__file__).resolve().parents[1]
CONCURRENCY = 4


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    log = tmp_path_factory.mktemp("server") / "calls.jsonl"
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.fake_openai", "--port", "0", "--latency", "0.15", "--log", str(log)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        line = process.stdout.readline()
        assert line.startswith("listening on "), line
        yield line.split()[-1], log
    finally:
        process.terminate()
        process.wait(timeout=10)


def events(log: Path, since: float = 0.0) -> tuple[Counter, Counter]:
    received, served = Counter(), Counter()
    for line in log.read_text().splitlines():
        event = json.loads(line)
        if event["t"] >= since:
            (received if event["event"] == "received" else served)[event["key"]] += 1
    return received, served


def judge(db: Path, url: str) -> subprocess.Popen:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "judge",
            "grade",
            "--db",
            str(db),
            "--rubric",
            "relevance",
            "--judge",
            "openai",
            "--base-url",
            url,
            "--model",
            "fake-judge",
            "--concurrency",
            str(CONCURRENCY),
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={"PATH": "/usr/bin:/bin", "OPENAI_API_KEY": "test"},
    )


def values(db: Path) -> dict[int, int]:
    with Store(db) as store:
        rows = store.db.execute("SELECT item_id, value FROM judge_labels WHERE value IS NOT NULL").fetchall()
    counts = Counter(item for item, _ in rows)
    assert max(counts.values()) == 1  # each answer stored once
    return dict(rows)


@pytest.fixture(scope="module")
def uninterrupted(server, tmp_path_factory):
    url, log = server
    folder = tmp_path_factory.mktemp("fresh")
    fresh = folder / "fresh.db"
    build_demo(str(fresh))
    pristine = folder / "pristine.db"
    shutil.copy(fresh, pristine)
    process = judge(fresh, url)
    out, err = process.communicate(timeout=120)
    assert process.returncode == 0, err
    assert "40 calls made, 0 of 40 already done, 0 errors" in out
    return values(fresh), pristine


def interrupt_and_resume(db: Path, url: str, log: Path, sig: int) -> tuple[str, Counter, Counter]:
    started = time.monotonic()
    process = judge(db, url)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:  # stop it once a third of the calls are served
        if sum(events(log, since=started)[1].values()) >= 12:
            break
        time.sleep(0.02)
    process.send_signal(sig)
    out, _ = process.communicate(timeout=60)
    first = (process.returncode, out)
    resumed = judge(db, url)
    out2, err2 = resumed.communicate(timeout=120)
    assert resumed.returncode == 0, err2
    received, served = events(log, since=started)
    return first, out2, received, served


def test_sigterm_mid_run_resumes_without_a_repeated_or_missing_call(server, uninterrupted, tmp_path, figure):
    url, log = server
    expected, pristine = uninterrupted
    db = tmp_path / "term.db"
    shutil.copy(pristine, db)
    (code, out), out2, received, served = interrupt_and_resume(db, url, log, signal.SIGTERM)
    assert code == 130 and "interrupted:" in out and "run the same command again to resume" in out
    assert len(received) == 40 and set(received.values()) == {1}  # none repeated
    assert len(served) == 40 and set(served.values()) == {1}  # none missing
    done_before = int(out2.split(" calls made, ")[1].split(" of 40 already done")[0])
    assert 12 <= done_before < 40
    assert values(db) == expected
    figure(
        f"judge run, SIGTERM after {done_before} of 40 calls and a resume: {sum(received.values())} calls received, "
        f"{len(served)} answered, {sum(n - 1 for n in received.values())} repeated"
    )


def test_sigkill_mid_run_loses_at_most_the_calls_in_flight(server, uninterrupted, tmp_path):
    url, log = server
    expected, pristine = uninterrupted
    db = tmp_path / "kill.db"
    shutil.copy(pristine, db)
    (code, _), _, received, served = interrupt_and_resume(db, url, log, signal.SIGKILL)
    assert code == -signal.SIGKILL
    repeated = [key for key, n in received.items() if n > 1]
    # lost: the calls in flight (at most CONCURRENCY) and the answers received but not yet
    # committed (each worker queues one answer per call latency, so at most CONCURRENCY more)
    assert len(received) == 40 and len(repeated) <= 2 * CONCURRENCY
    assert all(n <= 2 for n in received.values())
    assert values(db) == expected  # nothing missing, nothing stored twice
