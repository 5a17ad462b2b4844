"""#38 item 8: batch collect checks an answer's id against the calls Denominator recorded when it
sent the batch (m017 ``batch_submitted``), never against the endpoint's copy of the input file;
an answer over the reply limit is an error row for its call (asked again next run), read without
holding it whole; a batch sent before the calls were recorded is checked against the judge's own
calls on the store's items."""

from __future__ import annotations

import tracemalloc

import pytest

from annotation.store import Store
from judge.__main__ import main
from tests.conftest import integrity_errors
from tests.test_judge_batch import collect, labels, submit

BIG = 10**30
# what a lying endpoint's copy of the input lists besides the five calls sent: an item that does not
# exist, a repeat of 10^30, a repeat never asked of an item that was, the item written "0<item>", and an
# order on a graded item
FOREIGN = [
    "{fp}/999999/-/0",
    "{fp}/{item}/-/" + str(BIG),
    "{fp}/{item}/-/1",
    "{fp}/0{item}/-/0",
    "{fp}/{item}/AB/0",
]


@pytest.fixture
def demo(demo_db, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    return demo_db


def sent_ids(server, batch_id: str) -> list[str]:
    """The ids Denominator uploaded: the batch's lines the endpoint did not add."""
    lines = server.batches[batch_id]["lines"]
    return [line["custom_id"] for line in lines[len(server.batch_input_extra or []) :]]


def keys(custom_ids: list[str]) -> set[tuple[int, str | None, int]]:
    return {
        (int(item), None if order == "-" else order, int(repeat))
        for item, order, repeat in (i.split("/")[1:] for i in custom_ids)
    }


def test_submit_records_the_calls_it_sent_and_the_record_is_append_only(demo, fake_openai, capsys):
    server = fake_openai(batch_polls=1)
    batch_id = submit(capsys, "compare", demo, server, "--limit", "2", "--repeats", "2")
    ids = sent_ids(server, batch_id)
    assert len(ids) == 8
    with Store(demo) as store:
        (judge,) = store.judges()
        assert store.batch_sent(batch_id, judge["fingerprint"]) == keys(ids)
        assert {order for _, order, _ in keys(ids)} == {"AB", "BA"}
        assert (
            store.batch_sent(batch_id, "0" * 64) is None
            and store.batch_sent("batch_9999", judge["fingerprint"]) is None
        )
        with pytest.raises(integrity_errors(), match="append-only"):
            store.db.execute("UPDATE batch_submitted SET repeat = 7")
        with pytest.raises(integrity_errors(), match="append-only"):
            store.db.execute("DELETE FROM batch_submitted")


def test_answers_for_ids_the_batch_did_not_send_are_ignored_whatever_the_endpoint_lists(
    demo, fake_openai, capsys
):
    """Before: the endpoint's copy of the input was trusted; the line for item 999999 aborted the
    whole collection (IntegrityError: FOREIGN KEY constraint failed), nothing kept."""
    server = fake_openai(batch_polls=1, batch_input_extra=FOREIGN)
    batch_id = submit(capsys, "grade", demo, server, "--limit", "5")
    ids = sent_ids(server, batch_id)
    assert len(ids) == 5 and server.batches[batch_id]["request_counts"]["total"] == 10  # the endpoint's claim
    out = collect(capsys, demo, server, batch_id)
    assert "5 rows stored (5 answers, 0 error rows" in out, out
    fp16, item = ids[0].split("/")[:2]
    assert f"5 answers for ids this batch did not send were ignored (e.g. '{fp16}/999999/-/0', " in out, out
    for foreign in (f"/{item}/-/{BIG}'", f"/{item}/-/1'", f"/0{item}/-/0'", f"/{item}/AB/0'"):
        assert foreign in out, foreign
    _, values, rows = labels(demo)
    assert rows == (5, 5, 0)
    assert set(values) == keys(ids)  # exactly the calls sent: no repeat 1, no order, no item 0<item>
    again = collect(capsys, demo, server, batch_id)
    assert "0 rows stored (0 answers, 0 error rows: asked again next run), 5 lines already stored" in again
    assert labels(demo)[2] == (5, 5, 0)


@pytest.mark.parametrize("id_last", [False, True], ids=["id-first", "id-after-the-answer"])
def test_answers_over_the_reply_limit_are_error_rows_asked_again_read_in_bounded_memory(
    demo, fake_openai, capsys, id_last
):
    """Five calls each answered with 50 MB of content. Before: nothing stored, not even an error
    row per call. Now each call gets an error row: the first line read as far as the limit lets
    (its custom_id from its first 64 KB, or none when the id comes after the answer), the calls the
    cut file never reached as unanswered; the next batch asks all five again. Peak of Python's
    allocations during collect well under 60 MB."""
    size = 50 * 2**20
    server = fake_openai(batch_polls=1, batch_huge=size, batch_id_last=id_last)
    batch_id = submit(capsys, "grade", demo, server, "--limit", "5")
    ids = sent_ids(server, batch_id)
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        out = collect(capsys, demo, server, batch_id)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    with capsys.disabled():
        print(f"\ncollect of 5 x 50 MB answers: peak {peak / 2**20:.1f} MB traced")
    assert peak < 30 * 2**20, f"peak {peak / 2**20:.1f} MB"
    assert "5 rows stored (0 answers, 5 error rows: asked again next run)" in out, out
    with Store(demo) as store:
        errors = dict(
            ((item, repeat), error)
            for item, repeat, error in store.db.execute("SELECT item_id, repeat, error FROM judge_labels")
        )
    assert set(errors) == {(item, repeat) for item, _, repeat in keys(ids)}
    first = (int(ids[0].split("/")[1]), 0)
    unanswered = f"batch {batch_id}: no answer for this call in the batch's files, read no further than 5,000,000 bytes"
    over = f"batch {batch_id}: an answer over the 1,000,000-byte reply limit, not read"
    assert errors.pop(first) == (unanswered if id_last else over)
    assert set(errors.values()) == {unanswered}
    if id_last:
        assert (
            "left out: 1 line over the 1,000,000-byte reply limit naming no call in its first 65,536 bytes; "
            "a file longer than the reply limit times the calls submitted, read no further (e.g. line 1 "
        ) in out, out
        assert "calls stored as error rows, asked again next run: 5 with no answer" in out, out
    else:
        assert (
            "calls stored as error rows, asked again next run: 1 over the 1,000,000-byte reply limit (not "
            "read); 4 with no answer in what was read of the batch's files"
        ) in out, out
    assert server.bytes_sent < 64 * 2**20  # the client stopped reading at its cap: 250 MB were on offer
    again = collect(capsys, demo, server, batch_id)
    assert "0 rows stored" in again and "5 lines already stored" in again, again
    assert labels(demo)[2] == (5, 0, 5)
    server.batch_huge = None  # the next batch asks the five again, and they are answered
    assert main(["grade", "--rubric", "relevance", "--db", str(demo), "--base-url", server.base_url,
                 "--model", "gpt-test", "--limit", "5", "--batch"]) == 0  # fmt: skip
    said = capsys.readouterr().out
    assert "5 requests (0 of 5 already done)" in said, said
    next_id = said.split("batch ", 1)[1].split(" ", 1)[0]
    assert "5 rows stored (5 answers, 0 error rows" in collect(capsys, demo, server, next_id)
    assert labels(demo)[2] == (10, 5, 5)


def test_a_batch_sent_before_its_calls_were_recorded_is_checked_against_the_judges_calls(
    demo, fake_openai, capsys, monkeypatch
):
    """A batch sent by a version before m017 (no recorded calls): never the endpoint's list; an
    answer is kept only for a call this judge makes on the store's items (its rubric's items and
    orders, a repeat below MAX_REPEATS), so item 999999, repeat 10^30, an order on a graded item and
    an id not written as Denominator writes it are ignored, and collect says how it checked."""
    server = fake_openai(batch_polls=1, batch_input_extra=FOREIGN)
    with monkeypatch.context() as old:
        old.setattr(Store, "record_batch", lambda self, *args: 0)  # what submit did before m017
        batch_id = submit(capsys, "grade", demo, server, "--limit", "5")
    ids = sent_ids(server, batch_id)
    with Store(demo) as store:
        (judge,) = store.judges()
        assert store.batch_sent(batch_id, judge["fingerprint"]) is None
    out = collect(capsys, demo, server, batch_id)
    assert "6 rows stored (6 answers, 0 error rows" in out, out  # the five, and repeat 1 of a real call
    assert "4 answers for ids this batch did not send were ignored" in out, out
    assert (
        "this batch's calls were not recorded when it was sent (an older version): answers kept only " in out
    )
    _, values, rows = labels(demo)
    item = int(ids[0].split("/")[1])
    assert rows == (6, 6, 0) and set(values) == keys(ids) | {(item, None, 1)}
    assert "0 rows stored" in collect(capsys, demo, server, batch_id)


def test_a_batch_whose_calls_could_not_be_recorded_is_named_and_still_collected(
    demo, fake_openai, capsys, monkeypatch
):
    """The store refuses the record after the endpoint created the batch: one line naming the
    batch (its id is not lost), exit 2; collect then checks it as a batch of an older version."""
    from annotation.store import StoreBusy

    server = fake_openai(batch_polls=1)

    def busy(self, *args):
        raise StoreBusy("the store is busy (fake)")

    with monkeypatch.context() as held:
        held.setattr(Store, "record_batch", busy)
        code = main(["grade", "--rubric", "relevance", "--db", str(demo), "--base-url", server.base_url,
                     "--model", "gpt-test", "--limit", "3", "--batch"])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1, err
    assert err.startswith(
        "error: batch batch_0001 was submitted but the calls it asked were not recorded ("
    ), err
    out = collect(capsys, demo, server, "batch_0001")
    assert "3 rows stored (3 answers, 0 error rows" in out and "were not recorded when it was sent" in out, (
        out
    )
