"""Each query's top k without ordering every row (issue #42, item 1): :func:`top_of_table` and
:func:`top_ranked_file` against ``Run.rankings()``, the reference path, on random runs with tied,
signed-zero and infinite scores, repeats, non-ASCII ids, queries of every length, grouped or not;
a run file read in pieces (a query cut between two), read whole when a query comes back or a line
is not lean, and the holes found from a file equal to those of the run read whole."""

from __future__ import annotations

import random
from functools import partial
from pathlib import Path

import pyarrow as pa
import pytest

import calibration.top_k as top_k
from annotation.formats.columnar import lean_pieces
from annotation.formats.trec import read_run
from annotation.model import Qrels, Run
from calibration import actions
from calibration.metrics import InvalidMeasure
from calibration.top_k import top_of_table, top_ranked_file

QUERIES = ["q1", "q2", "Ω", "a", "b10", "b2", "é"]
DOCS = [
    "d1",
    "d2",
    "D3",
    "é",
    "ä",
    "z",
    "d10",
    "a-much-longer-document-id-0001",
    "a-much-longer-document-id-0002",
]
SCORES = [0.0, -0.0, 1.0, 2.5, float("inf"), float("-inf")]


def random_rows(rng: random.Random, grouped: bool) -> list[tuple[str, str, float]]:
    rows: list[tuple[str, str, float]] = []
    for qid in rng.sample(QUERIES, rng.randint(1, 6)):
        n = rng.choice([1, 3, 8, 20, 40]) if rng.random() < 0.5 else rng.randint(1, 40)
        rows += [
            (qid, rng.choice(DOCS), rng.choice([*SCORES, float(rng.randint(0, 5)), rng.random()]))
            for _ in range(n)
        ]
    if not grouped:
        rng.shuffle(rows)
    return rows


def table_of(rows: list[tuple[str, str, float]]) -> pa.Table:
    q, d, s = zip(*rows)
    return pa.table({"q": list(q), "d": list(d), "s": list(s)})


def reference(run: Run, depth: int) -> dict[str, list[str]]:
    ranked = {qid: ranking[:depth] for qid, ranking in run.rankings().items()}
    return {qid: ranked[qid] for qid in sorted(ranked, key=lambda q: q.encode("utf-8"))}


@pytest.mark.parametrize("grouped", [True, False], ids=["grouped", "shuffled"])
def test_top_of_table_is_the_reference_cut(grouped: bool) -> None:
    rng = random.Random(17 if grouped else 23)
    for _ in range(150):
        table = table_of(random_rows(rng, grouped))
        for depth in (1, 2, 3, 10, 100):
            got = top_of_table(table, depth)
            want = reference(Run(table=table), depth)
            assert got == want and list(got) == list(want)


def test_top_of_table_cuts_at_the_tie_by_id() -> None:
    # five rows tie at the cut: the partition keeps every tied row, the ids decide (descending)
    rows = [("q", doc, 1.0) for doc in ["b", "e", "a", "d", "c"]] + [("q", "top", 2.0), ("q", "low", 0.5)]
    assert top_of_table(table_of(rows), 3) == {"q": ["top", "e", "d"]}
    assert top_of_table(table_of(rows), 1) == {"q": ["top"]}
    with pytest.raises(InvalidMeasure, match="depth 0"):
        top_of_table(table_of(rows), 0)


def write_trec(path: Path, rows: list[tuple[str, str, float]], separator: str = " ") -> Path:
    lines = [separator.join([q, "Q0", d, str(i + 1), repr(s), "tag"]) for i, (q, d, s) in enumerate(rows)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.mark.parametrize("piece_bytes", [64, 300, 1 << 20])
def test_a_run_file_in_pieces_is_the_reference_cut(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, piece_bytes: int
) -> None:
    """Pieces of 64 bytes cut nearly every query between two pieces; shuffled files are read whole."""
    monkeypatch.setattr(top_k, "lean_pieces", partial(lean_pieces, piece_bytes=piece_bytes))
    rng = random.Random(piece_bytes)
    for i in range(25):
        rows = [
            row for row in random_rows(rng, grouped=i % 4 != 3) if row[2] not in (float("inf"), float("-inf"))
        ]
        if not rows:
            continue
        path = write_trec(tmp_path / f"run{i}.txt", rows)
        for depth in (1, 3, 10):
            assert top_ranked_file(path, depth) == reference(read_run(path), depth)


def test_a_query_that_comes_back_is_read_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(top_k, "lean_pieces", partial(lean_pieces, piece_bytes=64))
    rows = [("a", "d1", 3.0), ("a", "d2", 2.0), ("b", "d1", 1.0), ("b", "d3", 5.0)] * 3
    rows += [("a", "late", 9.0)]  # query a again, pieces after its first lines
    path = write_trec(tmp_path / "back.txt", rows)
    with pytest.raises(top_k.NotGrouped, match="'a' comes back"):
        list(top_k.query_batches(path))
    assert top_ranked_file(path, 2) == {"a": ["late", "d1"], "b": ["d3", "d3"]}
    tabbed = write_trec(tmp_path / "tabbed.txt", rows, separator="\t")  # not lean: read whole
    assert top_ranked_file(tabbed, 2) == {"a": ["late", "d1"], "b": ["d3", "d3"]}


def test_holes_of_a_file_equal_those_of_the_run_read_whole(tmp_path: Path) -> None:
    rng = random.Random(8)
    for i in range(20):
        rows = random_rows(rng, grouped=i % 3 != 0)
        path = write_trec(tmp_path / f"run{i}.txt", [r for r in rows if abs(r[2]) != float("inf")])
        grades = {q: {d: rng.randint(0, 3) for d in rng.sample(DOCS, 3)} for q in QUERIES}
        qrels = Qrels(grades=grades)
        from_file = actions.holes(qrels, [("run", path)], 3)
        whole = actions.holes(qrels, [("run", read_run(path))], 3)
        assert from_file == whole
