"""Batch judging (#18): ``grade|compare --batch`` submits the calls left to the fake server's
Batch API (files + batches, the real ``openai`` client over HTTP); ``batch status|collect ID``
polls and stores the answers as a live run would."""

from __future__ import annotations

import json

import openai
import pytest

from annotation.store import Store
from annotation.store.transfer import copy_store
from judge.__main__ import main


@pytest.fixture
def demo(demo_db, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    return demo_db


def argv(command, db, server, *extra):
    rubric = ["--rubric", "relevance"] if command == "grade" else []
    return [command, *rubric, "--db", str(db), "--base-url", server.base_url, "--model", "gpt-test", *extra]


def labels(db):
    """Every stored row of the judge, as the live run and the batch must both leave it."""
    with Store(db) as store:
        (judge,) = store.judges()
        values = store.judge_values(judge["fingerprint"])
        rows = store.db.execute("SELECT count(*), count(value), count(error) FROM judge_labels").fetchone()
    return (
        judge["fingerprint"],
        {
            (v["item_id"], v["ab_order"], v["repeat"]): (v["value"], v["reason"], v["served_model"])
            for v in values
        },
        rows,
    )


def submit(capsys, command, db, server, *extra):
    assert main([*argv(command, db, server, *extra), "--batch"]) == 0
    out = capsys.readouterr().out
    assert "submitted" in out, out
    return out.split("batch ", 1)[1].split(" ", 1)[0]


def collect(capsys, db, server, batch_id, *extra):
    code = main(["batch", "collect", batch_id, "--db", str(db), "--base-url", server.base_url, *extra])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    return captured.out


@pytest.mark.parametrize("command", ["grade", "compare"])
def test_a_batch_stores_the_labels_a_live_run_stores_and_collecting_twice_stores_nothing(
    demo, db_at, fake_openai, capsys, command
):
    live_db = db_at  # a copy of the demo on the same backend (python -m annotation migrate's copy)
    with Store(demo) as source, Store(live_db) as target:
        copy_store(source, target)
    server = fake_openai(batch_polls=3)
    extra = ("--repeats", "2") if command == "compare" else ()
    assert main(argv(command, live_db, server, *extra)) == 0
    capsys.readouterr()

    batch_id = submit(capsys, command, demo, server, *extra)
    assert server.batch_lines == {}  # returned at once: nothing answered yet
    assert main(["batch", "status", batch_id, "--base-url", server.base_url]) == 0
    assert "in_progress" in capsys.readouterr().out
    out = collect(capsys, demo, server, batch_id)
    assert "nothing to collect yet" in out  # the third poll completes it
    out = collect(capsys, demo, server, batch_id)
    assert "completed" in out and " 0 error rows" in out, out

    live_fp, live, live_rows = labels(live_db)
    batch_fp, batched, batch_rows = labels(demo)
    assert batch_fp == live_fp  # the same judge: one fingerprint
    assert batched == live and len(batched) > 0  # same values, reasons, served model
    assert batch_rows == live_rows

    again = collect(capsys, demo, server, batch_id)
    assert "0 rows stored" in again, again
    assert labels(demo)[2] == batch_rows
    if command == "compare":
        assert "swap-averaged preference" in out


def test_failed_lines_are_error_rows_asked_again_and_stored_once(demo, fake_openai, capsys):
    faults = {1: "error", 3: "invalid_json", 5: "500"}
    server = fake_openai(batch_polls=1, batch_faults=lambda index, custom_id: faults.get(index))
    batch_id = submit(capsys, "grade", demo, server, "--limit", "8")
    out = collect(capsys, demo, server, batch_id)
    assert "8 rows stored (5 answers, 3 error rows" in out, out
    _, values, rows = labels(demo)
    assert rows == (8, 5, 3)
    with Store(demo) as store:
        errors = [r[0] for r in store.db.execute("SELECT error FROM judge_labels WHERE error IS NOT NULL")]
    assert any("not JSON" in e for e in errors) and any("fake failed line" in e for e in errors)
    assert any("HTTP 500" in e for e in errors)
    assert collect(capsys, demo, server, batch_id).count("0 rows stored") == 1  # error rows not twice
    assert labels(demo)[2] == (8, 5, 3)
    # the next batch asks the three failed calls again, and only them
    server.batch_faults = None
    assert main([*argv("grade", demo, server, "--limit", "8"), "--batch"]) == 0
    said = capsys.readouterr().out
    assert "3 requests (5 of 8 already done)" in said, said
    again = said.split("batch ", 1)[1].split(" ", 1)[0]
    out = collect(capsys, demo, server, again)
    assert "3 rows stored (3 answers, 0 error rows" in out, out
    assert labels(demo)[2] == (11, 8, 3)


def test_an_expired_batch_stores_what_was_answered(demo, fake_openai, capsys):
    server = fake_openai(batch_polls=1, batch_expire=4)
    batch_id = submit(capsys, "grade", demo, server, "--limit", "6")
    out = collect(capsys, demo, server, batch_id)
    assert "expired" in out and "6 rows stored (4 answers, 2 error rows" in out, out
    with Store(demo) as store:
        errors = [r[0] for r in store.db.execute("SELECT error FROM judge_labels WHERE error IS NOT NULL")]
    assert all("batch_expired" in e for e in errors) and len(errors) == 2


def test_a_batch_with_no_answer_stores_its_error_rows_once(demo, fake_openai, capsys):
    server = fake_openai(batch_polls=1, batch_expire=0)
    batch_id = submit(capsys, "compare", demo, server, "--limit", "2")
    assert "4 rows stored (0 answers, 4 error rows" in collect(capsys, demo, server, batch_id)
    assert "0 rows stored (0 answers, 0 error rows: asked again next run), 4 lines already stored" in collect(
        capsys, demo, server, batch_id
    )
    assert labels(demo)[2] == (4, 0, 4)


def test_the_batch_file_holds_the_live_requests(demo, fake_openai, capsys):
    server = fake_openai()
    batch_id = submit(capsys, "compare", demo, server, "--limit", "2", "--repeats", "2")
    batch = server.batches[batch_id]
    assert batch["metadata"]["made_by"] == "denominator-judge" and len(batch["metadata"]["fingerprint"]) == 64
    lines = batch["lines"]
    ids = [line["custom_id"] for line in lines]
    assert len(ids) == len(set(ids)) == 8  # 2 pairs x 2 orders x 2 repeats
    assert {i.split("/")[2] for i in ids} == {"AB", "BA"} and {i.split("/")[3] for i in ids} == {"0", "1"}
    for line in lines:  # repeat r asks with seed + r, as live
        assert line["body"]["seed"] == int(line["custom_id"].split("/")[3])
        assert line["body"]["model"] == "gpt-test" and line["url"] == "/v1/chat/completions"
    content = openai.OpenAI(base_url=server.base_url, api_key="x").files.content(batch["input_file_id"]).text
    assert [json.loads(x)["custom_id"] for x in content.splitlines()] == ids


def test_batch_cost_uses_the_batch_price(demo, tmp_path, fake_openai, capsys):
    prices = tmp_path / "prices.json"
    prices.write_text(
        json.dumps({"gpt-test": {"input": 1, "output": 2, "batch_input": 0.5, "batch_output": 1}})
    )
    server = fake_openai(batch_polls=1)
    assert (
        main([*argv("grade", demo, server, "--limit", "3", "--prices", str(prices)), "--batch", "--dry-run"])
        == 0
    )
    planned = capsys.readouterr().out
    assert "would submit a batch of 3 requests" in planned and "at the batch price" in planned, planned
    assert server.files == {} and server.batches == {}
    batch_id = submit(capsys, "grade", demo, server, "--limit", "3")
    out = collect(capsys, demo, server, batch_id, "--prices", str(prices))
    assert "at the batch price" in out, out
    prices.write_text(json.dumps({"gpt-test": {"input": 1, "output": 2, "batch_input": 0.5}}))
    assert (
        main(
            [
                "batch",
                "collect",
                batch_id,
                "--db",
                str(demo),
                "--base-url",
                server.base_url,
                "--prices",
                str(prices),
            ]
        )
        == 2
    )
    assert capsys.readouterr().err.count("\n") == 1


def test_bad_batch_input_is_one_line_and_exit_2(demo, tmp_path, fake_openai, capsys):
    server = fake_openai()
    for args in (
        ["batch", "status", "batch_nope", "--base-url", server.base_url],
        ["batch", "collect", "batch_nope", "--db", str(demo), "--base-url", server.base_url],
        ["grade", "--rubric", "relevance", "--db", str(demo), "--judge", "lexical", "--batch"],
        ["batch", "status", "x"],
    ):
        assert main(args) == 2, args
        err = capsys.readouterr().err
        assert err.startswith("error:") and err.count("\n") == 1 and "Traceback" not in err, err
    batch_id = submit(capsys, "grade", demo, server, "--limit", "2")
    from denominator.demo import build_demo

    fresh = tmp_path / "fresh.db"
    build_demo(str(fresh))
    assert main(["batch", "collect", batch_id, "--db", str(fresh), "--base-url", server.base_url]) == 2
    assert "give the --db it was submitted from" in capsys.readouterr().err
    assert main(["batch", "collect", batch_id, "--db", str(demo), "--base-url", server.base_url + "/"]) == 0
    assert "2 rows stored" in capsys.readouterr().out


def _collect_in_a_child(db, url: str, batch_id: str) -> tuple[int, str, str, int]:
    """``batch collect`` in a process of its own: (exit code, stdout, stderr, its peak RSS in KB)."""
    import subprocess
    import sys

    from tests.conftest import ROOT

    command = [
        sys.executable,
        "-m",
        "judge",
        "batch",
        "collect",
        batch_id,
        "--db",
        str(db),
        "--base-url",
        url,
    ]
    probe = (
        "import json, resource, subprocess, sys\n"
        f"done = subprocess.run({command!r}, capture_output=True, text=True)\n"
        "print(json.dumps([done.returncode, done.stdout, done.stderr, "
        "resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss]))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin", "OPENAI_API_KEY": "sk-test"},
    )
    assert result.returncode == 0, result.stderr
    return tuple(json.loads(result.stdout))


def test_collect_trusts_nothing_in_the_output_file(demo, capsys):
    """#25: the hostile batch server's output, every line twice with the other grade, a line that is
    not JSON, ids never submitted (an order on a graded item, a negative repeat, an item that does
    not exist, a repeat of 10^30), then six lines of 50 MB: exactly one row per submitted call, the
    rest counted in one line, the file read no further than 1 MB a call, exit 0; again: nothing."""
    from tests.conftest import fake_openai_process

    with fake_openai_process("--batch-hostile", str(50 * 2**20)) as server:
        server.base_url = server.url  # what argv() and submit() read
        batch_id = submit(capsys, "grade", demo, server, "--limit", "5")
        assert main(["batch", "status", batch_id, "--base-url", server.base_url]) == 0
        capsys.readouterr()
        code, out, err, peak_kb = _collect_in_a_child(demo, server.base_url, batch_id)
        assert code == 0, err
        assert "5 rows stored (5 answers, 0 error rows" in out, out
        left_out = next(line for line in out.splitlines() if line.startswith("left out: "))
        assert left_out.startswith(  # the five twins, and the first 50 MB line (its id read from its head)
            "left out: 6 lines repeating an id (the first of each kept); 1 line not JSON; a file longer than "
            "the reply limit times the calls submitted, read no further"
        ), left_out
        ignored = next(line for line in out.splitlines() if "did not send" in line)
        assert ignored.startswith("4 answers for ids this batch did not send were ignored (e.g. "), ignored
        for foreign in ("/AB/0'", "/-/-5'", "/999999/-/0'", f"/-/{10**30}'"):
            assert foreign in ignored
        assert err.count("\n") <= 1 and "Traceback" not in err
        assert peak_kb < 300 * 1024, f"peak RSS {peak_kb / 1024:.0f} MB"
        _, values, rows = labels(demo)
        assert rows == (5, 5, 0) and len(values) == 5  # one row per call, no contradicting twin
        with Store(demo) as store:
            (judge,) = store.judges()
            orders = {(v["ab_order"], v["repeat"]) for v in store.judge_values(judge["fingerprint"])}
        assert orders == {(None, 0)}  # nothing it never asked (an order, a repeat of -5 or 10^30)
        code, again, err, _ = _collect_in_a_child(demo, server.base_url, batch_id)
        assert code == 0 and "0 rows stored" in again, (again, err)
        assert labels(demo)[2] == (5, 5, 0)
