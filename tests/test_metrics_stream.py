"""Streaming evaluation of grouped runs (#19): the same Evaluation as reading the run whole."""

from __future__ import annotations

import io
import random
from pathlib import Path

import numpy as np
import pytest

from annotation.formats import columnar
from annotation.formats.columnar import NotStreamable, lean_pieces
from annotation.formats.trec import read_qrels, read_run
from calibration.errors import InvalidInput
from calibration.metrics import evaluate, evaluate_query
from calibration.metrics_grouped import NotGrouped, evaluate_grouped
from calibration.run_file import evaluate_run_file

RUN_COLUMNS = ["q", "q0", "d", "r", "s", "t"]


def write_collection(tmp_path: Path, seed: int, grouped: bool = True) -> tuple[Path, Path]:
    """A run with ties, repeats, queries the qrels lack, and qrels queries the run lacks."""
    rng = random.Random(seed)
    run_lines: list[str] = []
    qrels_lines: list[str] = []
    for q in range(60):
        qid = f"q{rng.randrange(10**6):06d}"  # queries in no particular order
        depth = rng.randrange(1, 40)
        docs = [f"D{rng.randrange(80)}" for _ in range(depth)]  # repeats happen
        if q % 7 != 3:  # some run queries have no judgments
            for doc in {f"D{rng.randrange(80)}" for _ in range(rng.randrange(1, 15))}:
                qrels_lines.append(f"{qid} 0 {doc} {rng.randrange(-1, 4)}\n")
        if q % 11 == 5:  # judged but never retrieved
            continue
        for rank, doc in enumerate(docs, start=1):
            score = rng.choice([1.0, 2.0, 2.5, rng.random()])  # ties
            run_lines.append(f"{qid} Q0 {doc} {rank} {score} tag{seed}\n")
    if not grouped:
        rng.shuffle(run_lines)
    qrels, run = tmp_path / "qrels.txt", tmp_path / "run.txt"
    qrels.write_text("".join(qrels_lines))
    run.write_text("".join(run_lines))
    return qrels, run


def assert_same(streamed, whole) -> None:
    assert streamed.qids == whole.qids
    assert streamed.measures == whole.measures
    for name in whole.measures:
        np.testing.assert_array_equal(streamed.values[name], whole.values[name], err_msg=name)
    for name in ("num_ret", "num_rel", "num_rel_ret", "num_judged", "evaluated"):
        np.testing.assert_array_equal(getattr(streamed, name), getattr(whole, name), err_msg=name)
    assert sorted(streamed.counts) == sorted(whole.counts)
    for name in whole.counts:
        np.testing.assert_array_equal(streamed.counts[name], whole.counts[name], err_msg=name)
    assert streamed.missing_from_run == whole.missing_from_run
    assert streamed.not_in_qrels == whole.not_in_qrels
    assert streamed.duplicates == whole.duplicates
    assert streamed.run_name == whole.run_name


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("piece_bytes", [64, 1000, 1 << 20])
def test_grouped_run_in_pieces_equals_the_whole_run(tmp_path: Path, seed: int, piece_bytes: int) -> None:
    qrels_path, run_path = write_collection(tmp_path, seed)
    qrels, run = read_qrels(qrels_path), read_run(run_path)
    for missing in ("drop", "zero"):
        for gain in ("linear", "exp"):
            pieces = lean_pieces(run_path, RUN_COLUMNS, ("r",), ("s",), piece_bytes=piece_bytes)
            streamed = evaluate_grouped(
                qrels,
                pieces,
                ks=[1, 5, 20],
                min_grade=2,
                missing=missing,
                gain=gain,
                with_positional=True,
                run_name="x",
            )
            whole = evaluate(
                qrels, run, ks=[1, 5, 20], min_grade=2, missing=missing, gain=gain, with_positional=True
            )
            assert_same(streamed, whole)
    if piece_bytes == 64:
        assert len(streamed.notes) == 1 and "pieces" in streamed.notes[0]


def test_streamed_values_match_the_reference(tmp_path: Path) -> None:
    """Independent of the batch engine: the per-query reference on every query."""
    qrels_path, run_path = write_collection(tmp_path, 42)
    qrels, run = read_qrels(qrels_path), read_run(run_path)
    pieces = lean_pieces(run_path, RUN_COLUMNS, ("r",), ("s",), piece_bytes=200)
    streamed = evaluate_grouped(qrels, pieces, ks=[3, 10], min_grade=1)
    rankings = run.rankings()
    for i, qid in enumerate(streamed.qids):
        expected = evaluate_query(rankings[qid], qrels.grades[qid], ks=[3, 10], min_grade=1)
        for name in streamed.measures:
            value = streamed.values[name][i]
            if expected[name] is None:
                assert np.isnan(value), (qid, name)
            else:
                assert value == pytest.approx(expected[name], abs=1e-12), (qid, name)


def test_an_ungrouped_run_is_refused_by_the_stream_and_read_whole_by_the_workflow(tmp_path: Path) -> None:
    qrels_path, run_path = write_collection(tmp_path, 3, grouped=False)
    qrels = read_qrels(qrels_path)
    with pytest.raises(NotGrouped, match="not grouped by query"):
        evaluate_grouped(
            qrels, lean_pieces(run_path, RUN_COLUMNS, ("r",), ("s",), piece_bytes=100), ks=[5], min_grade=1
        )
    result = evaluate_run_file(qrels, run_path, [5])
    assert any(note.startswith("run read whole: query") for note in result.notes)
    assert_same(result, evaluate(qrels, read_run(run_path), ks=[5], min_grade=1))
    with pytest.raises(InvalidInput, match="--grouped"):
        evaluate_run_file(qrels, run_path, [5], grouped=True)


def test_workflow_streams_a_grouped_run_and_reads_whole_on_request(tmp_path: Path) -> None:
    qrels_path, run_path = write_collection(tmp_path, 5)
    qrels = read_qrels(qrels_path)
    streamed = evaluate_run_file(qrels, run_path, [5, 10], grouped=True)
    whole = evaluate_run_file(qrels, run_path, [5, 10], grouped=False)
    assert "pieces" in streamed.notes[0] and whole.notes == ["run read whole"]
    assert_same(streamed, whole)


def test_a_file_the_lean_reader_leaves_to_others_is_read_whole(tmp_path: Path) -> None:
    qrels_path, run_path = write_collection(tmp_path, 7)
    run_path.write_text(run_path.read_text().replace(" Q0 ", "\tQ0\t", 1))
    with pytest.raises(NotStreamable):
        list(lean_pieces(run_path, RUN_COLUMNS, ("r",), ("s",)))
    for grouped in (None, True):
        result = evaluate_run_file(read_qrels(qrels_path), run_path, [5], grouped=grouped)
        assert result.notes[-1].startswith("run read whole: a tab")


def test_last_line_without_a_newline(tmp_path: Path) -> None:
    qrels_path, run_path = write_collection(tmp_path, 8)
    run_path.write_text(run_path.read_text().rstrip("\n"))
    qrels = read_qrels(qrels_path)
    pieces = lean_pieces(run_path, RUN_COLUMNS, ("r",), ("s",), piece_bytes=128)
    assert_same(
        evaluate_grouped(qrels, pieces, ks=[5], run_name="x", min_grade=1),
        evaluate(qrels, read_run(run_path), ks=[5], min_grade=1),
    )


def _pieces(data: bytes, piece_bytes: int, tmp_path: Path, mapped: bool) -> list[bytes] | str:
    """The pieces :mod:`annotation.formats.columnar` cuts ``data`` into, read from a mapped file
    or (``mapped`` False) from a stream that has no file number; or the refusal's message."""
    path = tmp_path / "pieces.txt"
    path.write_bytes(data)
    try:
        if mapped:
            with open(path, "rb") as fh:
                return [bytes(block[start:end]) for block, start, end in columnar._pieces_of(fh, piece_bytes)]
        stream = io.BufferedReader(io.BytesIO(data))  # no fileno: the piece-by-piece read
        return [bytes(block[start:end]) for block, start, end in columnar._pieces_of(stream, piece_bytes)]
    except NotStreamable as exc:
        return str(exc)


def test_a_mapped_run_is_cut_into_the_pieces_a_read_one_is(tmp_path: Path) -> None:
    """#42 item 4: a regular file is mapped, not read into buffers; its pieces (each ending at
    the last newline before the next multiple of the piece size) and its refusals (a BOM, a
    line longer than a piece) are the read ones. Random files of short lines, piece sizes 1-60."""
    rng = random.Random(42)
    for _ in range(600):
        lines = ["x" * rng.randint(0, 30) for _ in range(rng.randint(1, 12))]
        data = ("\n".join(lines) + ("\n" if rng.random() < 0.6 else "")).encode()
        if rng.random() < 0.1:
            data = "\ufeff".encode() + data
        piece_bytes = rng.randint(1, 60)
        assert _pieces(data, piece_bytes, tmp_path, True) == _pieces(data, piece_bytes, tmp_path, False)
    # by hand: pieces of 10 bytes over "aaaa\nbbbb\ncc\ndddddd" (no newline at the end)
    data = b"aaaa\nbbbb\ncc\ndddddd"
    expected = [b"aaaa\nbbbb\n", b"cc\n", b"dddddd"]
    assert _pieces(data, 10, tmp_path, True) == expected == _pieces(data, 10, tmp_path, False)
    assert _pieces(b"\xef\xbb\xbfq Q0 d 1 1 t\n", 64, tmp_path, True) == "a byte-order mark"
    assert _pieces(b"q Q0 d 1 1 t\n" * 3, 5, tmp_path, True) == "a line longer than 5 bytes"


def test_a_mapped_run_scores_as_a_read_one(tmp_path: Path) -> None:
    """The tables parsed from the mapped pieces equal those of the buffers read (q, d, s, tag)."""
    _, run_path = write_collection(tmp_path, 11)
    with open(run_path, "rb") as fh:
        mapped = [
            columnar._lean_piece(block, start, end, RUN_COLUMNS, ("r",), ("s",))
            for block, start, end in columnar._pieces_of(fh, 300)
        ]
    with open(run_path, "rb") as fh:
        read = [
            columnar._lean_piece(block, 0, end, RUN_COLUMNS, ("r",), ("s",))
            for block, end in columnar._line_blocks(fh, 300)
        ]
    assert len(mapped) == len(read) > 3
    for a, b in zip(mapped, read):
        assert a.equals(b) and a.schema.metadata == b.schema.metadata == {b"tag": b"tag11"}


def test_queries_in_bytewise_order_across_batches(tmp_path: Path) -> None:
    """trec_eval's order of queries, bytewise UTF-8 (code-point order): U+FF61 before U+1F600
    (UTF-16 puts the emoji's surrogates first), "Z" before "a" before "é"; the queries in several
    batches (pieces of 64 bytes), in the file in another order, whole and streamed alike."""
    qids = ["\U0001f600", "é", "a", "\uff61", "Z", "q10", "q2"]
    run_path, qrels_path = tmp_path / "run.txt", tmp_path / "qrels.txt"
    run_path.write_text(
        "".join(f"{q} Q0 D{i} {i} {3 - i}.5 t\n" for q in qids for i in range(3)), encoding="utf-8"
    )
    qrels_path.write_text("".join(f"{q} 0 D1 1\n" for q in reversed(qids)), encoding="utf-8")
    qrels, run = read_qrels(qrels_path), read_run(run_path)
    pieces = lean_pieces(run_path, RUN_COLUMNS, ("r",), ("s",), piece_bytes=64)
    streamed = evaluate_grouped(qrels, pieces, ks=[1], min_grade=1)
    expected = ["Z", "a", "q10", "q2", "é", "\uff61", "\U0001f600"]
    assert streamed.qids == expected
    assert evaluate(qrels, run, ks=[1], min_grade=1).qids == expected
    assert streamed.values["RR"].tolist() == [0.5] * 7


# Small crafted runs, each a clean base with one line changed: the streamed read (``grouped=None``:
# the lean pieces, or the whole read they leave the file to) must give what the whole read gives,
# the same values and run name, or the same error naming the same line.
_BASE = [
    "q1 Q0 d1 1 2.5 tagA",
    "q1 Q0 d2 2 1.5 tagA",
    "q1 Q0 d3 3 0.5 tagA",
    "q2 Q0 d1 1 9 tagA",
    "q2 Q0 d4 2 8 tagA",
    "q3 Q0 d2 1 1 tagA",
]
_CRAFTED = {
    "clean": _BASE,
    "double space in the Q0 field (an empty Q0)": [_BASE[0], "q1  d2 2 1.5 tagA", *_BASE[2:]],
    "double space after Q0 (seven fields)": [_BASE[0], "q1 Q0  d2 2 1.5 tagA", *_BASE[2:]],
    "trailing space on the tag": [_BASE[0], "q1 Q0 d2 2 1.5 tagA ", *_BASE[2:]],
    "trailing space on the last line, no newline": [*_BASE[:-1], "q3 Q0 d2 1 1 tagA "],
    "trailing space for a missing tag": [_BASE[0], "q1 Q0 d2 2 1.5 ", *_BASE[2:]],
    "leading space": [_BASE[0], " q1 Q0 d2 2 1.5 tagA", *_BASE[2:]],
    "leading space for a missing qid": [_BASE[0], " Q0 d2 2 1.5 tagA", *_BASE[2:]],
    "leading space on the first line": [" " + _BASE[0], *_BASE[1:]],
    "a blank line between": [*_BASE[:3], "", *_BASE[3:]],
    "blank lines first": ["", "", *_BASE],
    "a line of one space": [*_BASE[:3], " ", *_BASE[3:]],
    "the tag read from the first line": [_BASE[0], *(line.replace("tagA", "tagB") for line in _BASE[1:])],
    "the tag read from the first line after a blank one": [
        "",
        *_BASE[:1],
        *(line.replace("tagA", "tagB") for line in _BASE[1:]),
    ],
    "seven fields (the line reader ignores the rest)": [_BASE[0], "q1 Q0 d2 2 1.5 tagA extra", *_BASE[2:]],
    "five fields": [_BASE[0], "q1 Q0 d2 2 1.5", *_BASE[2:]],
    "rank +1": [_BASE[0], "q1 Q0 d2 +1 1.5 tagA", *_BASE[2:]],
    "rank -1": [_BASE[0], "q1 Q0 d2 -1 1.5 tagA", *_BASE[2:]],
    "rank 007": [_BASE[0], "q1 Q0 d2 007 1.5 tagA", *_BASE[2:]],
    "rank 1.0": [_BASE[0], "q1 Q0 d2 1.0 1.5 tagA", *_BASE[2:]],
    "rank abc": [_BASE[0], "q1 Q0 d2 abc 1.5 tagA", *_BASE[2:]],
    "rank 0x10": [_BASE[0], "q1 Q0 d2 0x10 1.5 tagA", *_BASE[2:]],
    "rank 1-2": [_BASE[0], "q1 Q0 d2 1-2 1.5 tagA", *_BASE[2:]],
    "rank -": [_BASE[0], "q1 Q0 d2 - 1.5 tagA", *_BASE[2:]],
    "rank beyond 64 bits": [_BASE[0], "q1 Q0 d2 99999999999999999999 1.5 tagA", *_BASE[2:]],
    "rank beyond 64 bits, negative": [_BASE[0], "q1 Q0 d2 -99999999999999999999 1.5 tagA", *_BASE[2:]],
    "score nan": [_BASE[0], "q1 Q0 d2 2 nan tagA", *_BASE[2:]],
    "score -NaN": [_BASE[0], "q1 Q0 d2 2 -NaN tagA", *_BASE[2:]],
    "score inf": [_BASE[0], "q1 Q0 d2 2 inf tagA", *_BASE[2:]],
    "score -Infinity": [_BASE[0], "q1 Q0 d2 2 -Infinity tagA", *_BASE[2:]],
    "score 1e400": [_BASE[0], "q1 Q0 d2 2 1e400 tagA", *_BASE[2:]],
    "score 0x10": [_BASE[0], "q1 Q0 d2 2 0x10 tagA", *_BASE[2:]],
    "score 1,5": [_BASE[0], "q1 Q0 d2 2 1,5 tagA", *_BASE[2:]],
    "a comment line first": ["# a comment", *_BASE],
    "a comment line between": [*_BASE[:3], "#q1 Q0 d9 4 0 tagA", *_BASE[3:]],
    "a hash inside a qid": [*_BASE[:3], *(line.replace("q2", "q#2") for line in _BASE[3:5]), _BASE[5]],
    "a hash starting a docid": [_BASE[0], "q1 Q0 #d2 2 1.5 tagA", *_BASE[2:]],
    "only comments": ["# a comment", "#q1 Q0 d1 1 1 t"],
    "a tab": [_BASE[0], "q1\tQ0 d2 2 1.5 tagA", *_BASE[2:]],
    "non-ASCII ids and tag": [line.replace("q1", "q\u00e91").replace("tagA", "t\u00e4g") for line in _BASE],
}
_CRAFTED_QRELS = "q1 0 d1 1\nq1 0 d3 2\nq2 0 d4 1\nq2 0 d9 0\nq3 0 d2 3\nq4 0 d1 1\n"


def _outcome(qrels, path: Path, grouped: bool | None):
    try:
        result = evaluate_run_file(qrels, path, [1, 5], grouped=grouped)
    except Exception as exc:  # noqa: BLE001 - the error itself is what is compared
        return type(exc), str(exc)
    return result


@pytest.mark.parametrize("piece_bytes", [40, 1 << 20])
@pytest.mark.parametrize("case", list(_CRAFTED))
def test_a_crafted_run_streamed_gives_what_the_whole_read_gives(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, case: str, piece_bytes: int
) -> None:
    """The lean pieces' checks (empty fields, rank, NaN, comment lines, the tag) accept only what
    the whole read accepts, with the same values, and leave the rest to it (the same error)."""
    from calibration import run_file

    monkeypatch.setattr(
        run_file, "lean_pieces", lambda *a, **kw: lean_pieces(*a, **{**kw, "piece_bytes": piece_bytes})
    )
    qrels_path, run_path = tmp_path / "qrels.txt", tmp_path / "run.txt"
    qrels_path.write_text(_CRAFTED_QRELS)
    lines = _CRAFTED[case]
    run_path.write_bytes(("\n".join(lines) + ("" if "no newline" in case else "\n")).encode("utf-8"))
    qrels = read_qrels(qrels_path)
    whole = _outcome(qrels, run_path, False)
    streamed = _outcome(qrels, run_path, None)
    if isinstance(whole, tuple):
        assert streamed == whole
    else:
        assert not isinstance(streamed, tuple), streamed
        assert_same(streamed, whole)


def test_crafted_runs_the_lean_pieces_take(tmp_path: Path) -> None:
    """Which crafted runs the lean pieces read themselves (the rest go whole), and the tag each
    piece carries: the first line's, after any blank line."""
    taken = {}
    for case, lines in _CRAFTED.items():
        path = tmp_path / "run.txt"
        path.write_bytes(("\n".join(lines) + ("" if "no newline" in case else "\n")).encode("utf-8"))
        try:
            pieces = list(lean_pieces(path, RUN_COLUMNS, ("r",), ("s",)))
        except NotStreamable:
            continue
        taken[case] = pieces[0].schema.metadata[b"tag"].decode("utf-8")
    assert taken == {
        "clean": "tagA",
        "a blank line between": "tagA",
        "blank lines first": "tagA",
        "the tag read from the first line": "tagA",
        "the tag read from the first line after a blank one": "tagA",
        "rank -1": "tagA",
        "rank 007": "tagA",
        "rank beyond 64 bits": "tagA",
        "score inf": "tagA",
        "score -Infinity": "tagA",
        "score 1e400": "tagA",
        "a hash inside a qid": "tagA",
        "a hash starting a docid": "tagA",
        "non-ASCII ids and tag": "t\u00e4g",
    }


@pytest.mark.parametrize("step", [1, 3, 7, 64])
def test_a_piece_scanned_in_steps_finds_what_one_pass_finds(
    monkeypatch: pytest.MonkeyPatch, step: int
) -> None:
    """The odd bytes and the non-ASCII one found a step at a time (the step in the cache, #42) at
    every position of the piece, the steps' edges and the last short step included, and none
    outside ``[start, end)``."""
    from annotation.formats import columnar

    monkeypatch.setattr(columnar, "_SCAN_STEP", step)
    base = b"q1 Q0 d1 1 2.5 t\nq1 Q0 d2 2 1.5 t\n"
    start, end = 3, len(base) - 2
    assert columnar._scan_piece(bytearray(base), start, end) == (False, True)
    for byte in [*columnar._ODD_BYTES, b"\xc3"]:
        for at in range(len(base)):
            block = bytearray(base)
            block[at : at + 1] = byte
            inside = start <= at < end
            found = columnar._scan_piece(block, start, end)
            if inside and byte != b"\xc3":  # an odd byte: the piece goes whole, ASCII or not
                assert found[0], (byte, at)
            else:
                assert found == (False, not inside), (byte, at)


@pytest.mark.parametrize("piece_bytes", [40, 1 << 20])
def test_a_run_in_memory_reads_as_its_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, piece_bytes: int
) -> None:
    """An upload's bytes read without a file (#42 item 2) give the run its file gives: the same
    rows, tag and name; every crafted run the lean reader leaves to others gives None (the file
    readers then judge it), and no other."""
    from annotation.formats import trec
    from annotation.formats.by_extension import ranked_in_memory, read_ranked

    monkeypatch.setattr(
        trec, "lean_pieces", lambda *a, **kw: lean_pieces(*a, **{**kw, "piece_bytes": piece_bytes})
    )
    taken = 0
    for case, lines in _CRAFTED.items():
        data = ("\n".join(lines) + ("" if "no newline" in case else "\n")).encode("utf-8")
        path = tmp_path / "run.txt"
        path.write_bytes(data)
        in_memory = ranked_in_memory(data, "run.txt")
        try:
            list(lean_pieces(path, RUN_COLUMNS, ("r",), ("s",), piece_bytes=piece_bytes))
            lean = True
        except NotStreamable:
            lean = False
        assert (in_memory is not None) == lean, case
        if in_memory is None:
            continue
        taken += 1
        from_file = read_ranked(path)
        assert in_memory.table.equals(from_file.table), case
        assert (in_memory.name, in_memory.path) == (from_file.name, "run.txt"), case
    assert taken == 14  # the runs test_crafted_runs_the_lean_pieces_take lists
    assert ranked_in_memory(b'{"query_id": "q1", "ranking": ["d1"]}\n', "run.jsonl") is None


def test_an_upload_writes_no_file_for_a_lean_run(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The Metrics page's read of an uploaded run: a clean TREC run from its bytes, no temporary
    file; a tab-separated one and JSONL rankings through the file, as before."""
    from annotation.formats.by_extension import ranked_in_memory, read_ranked
    from denominator.ui import metrics_data

    data = ("\n".join(_BASE) + "\n").encode("utf-8")
    written: list[str] = []
    real = metrics_data.tempfile.TemporaryDirectory

    def counted(*args, **kwargs):
        written.append("a file")
        return real(*args, **kwargs)

    monkeypatch.setattr(metrics_data.tempfile, "TemporaryDirectory", counted)
    run = metrics_data.read_upload("my run.txt", data, read_ranked, ranked_in_memory)
    assert written == [] and run.name == "tagA" and run.table.num_rows == len(_BASE)
    tabbed = data.replace(b" Q0 ", b"\tQ0\t", 1)
    again = metrics_data.read_upload("my run.txt", tabbed, read_ranked, ranked_in_memory)
    assert written == ["a file"] and again.table.equals(run.table)
    jsonl = b'{"query_id": "q1", "ranking": ["d1", "d2"]}\n'
    ranked = metrics_data.read_upload("r.jsonl", jsonl, read_ranked, ranked_in_memory)
    assert written == ["a file", "a file"] and ranked.rankings() == {"q1": ["d1", "d2"]}
