"""#44 item 4: ``metrics --evidence`` and ``compare --evidence``: evidence recall, precision and IoU
at k over a run's own chunking, against a hand-computed fixture and, on Chroma's corpora chunked and
imported by the commands, an independent count of character positions (to 1e-9); the refusals."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from annotation.__main__ import main as annotation_main
from annotation.formats.golden import read_golden, write_golden
from annotation.model import ChunkSpan, Evidence, Qrels
from calibration.__main__ import main
from tests.conftest import cli, shared_dir

SHARED = shared_dir()
CHROMA = (SHARED / "data" / "chroma_chunking") if SHARED is not None else None
needs_chroma = pytest.mark.skipif(CHROMA is None, reason="the shared chroma_chunking data is not here")


def write_jsonl(path, rows) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def write_run(path, ranked: dict[str, list[str]]) -> None:
    """A TREC run whose scores keep the given order."""
    lines = [f"{q} Q0 {d} {i + 1} {len(ds) - i} x\n" for q, ds in ranked.items() for i, d in enumerate(ds)]
    path.write_text("".join(lines))


def tiny(tmp_path):
    """One document of 100 characters; chunking B: [0, 40), [30, 70) (overlapping b0 by 10), [70,
    100); chunking A: [0, 50), [50, 100). q1's evidence [35, 50) and [60, 80): 35 characters; q2
    holds none; q3's [0, 10) is asked of no run."""
    write_jsonl(
        tmp_path / "b.jsonl",
        [
            {"id": i, "doc": "d", "start": s, "end": e}
            for i, s, e in (("b0", 0, 40), ("b1", 30, 70), ("b2", 70, 100))
        ],
    )
    write_jsonl(
        tmp_path / "a.jsonl",
        [{"id": i, "doc": "d", "start": s, "end": e} for i, s, e in (("a0", 0, 50), ("a1", 50, 100))],
    )
    golden = Qrels(
        grades={"q1": {}, "q2": {}, "q3": {}},
        texts={"q1": "one", "q2": "two", "q3": "three"},
        evidence={
            "q1": [Evidence("d", 35, 50, 2), Evidence("d", 60, 80, 1)],
            "q3": [Evidence("d", 0, 10, 2)],
        },
    )
    write_golden(golden, tmp_path / "g.yaml")
    write_run(tmp_path / "run_b.txt", {"q1": ["b1", "b2", "b0"], "q2": ["b0"]})
    write_run(tmp_path / "run_a.txt", {"q1": ["a1", "a0"], "q2": ["a0"]})


def metrics_json(capsys, *argv):
    code, out, err = cli(main, capsys, "metrics", *argv, "--evidence", "--format", "json")
    assert (code, err) == (0, "")
    return json.loads(out)


def test_metrics_evidence_by_hand(tmp_path, capsys) -> None:
    tiny(tmp_path)
    got = metrics_json(
        capsys,
        tmp_path / "g.yaml",
        tmp_path / "run_b.txt",
        "--chunks",
        tmp_path / "b.jsonl",
        "-k",
        1,
        "-k",
        2,
        "-k",
        3,
    )
    q1 = got["evidence"]["queries"]["q1"]
    # k=1: b1 = [30, 70), 40 characters; shared [35, 50) + [60, 70) = 25
    assert (q1["1"]["shared"], q1["1"]["evidence"], q1["1"]["retrieved"]) == (25, 35, 40)
    assert (q1["1"]["recall"], q1["1"]["precision"], q1["1"]["iou"]) == (25 / 35, 25 / 40, 25 / 50)
    # k=2: b1 + b2 = [30, 100), 70; all 35 of the evidence
    assert (q1["2"]["recall"], q1["2"]["precision"], q1["2"]["iou"]) == (1.0, 35 / 70, 35 / 70)
    # k=3: b0 overlaps b1 by 10 characters, counted once: [0, 100), 100 retrieved, not 110
    assert (q1["3"]["retrieved"], q1["3"]["precision"], q1["3"]["iou"]) == (100, 0.35, 0.35)
    # q2 holds no evidence: undefined, never 0; q3 is absent from the run: dropped (the default)
    assert got["evidence"]["queries"]["q2"] == {"1": None, "2": None, "3": None}
    assert got["evidence"]["queries"]["q3"] == {"1": None, "2": None, "3": None}
    assert got["evidence"]["absent"] == ["q3"]
    assert got["evidence"]["mean"]["1"]["recall"] == {"value": 25 / 35, "n": 1}
    assert "grades none of" in got["chunk_level"]["absent"]
    # --missing zero: q3 retrieves nothing: recall 0 / 10, precision undefined, IoU 0 / 10
    zero = metrics_json(
        capsys,
        tmp_path / "g.yaml",
        tmp_path / "run_b.txt",
        "--chunks",
        tmp_path / "b.jsonl",
        "-k",
        1,
        "--missing",
        "zero",
    )
    q3 = zero["evidence"]["queries"]["q3"]["1"]
    assert (q3["recall"], q3["precision"], q3["iou"], q3["evidence"]) == (0.0, None, 0.0, 10)
    assert zero["evidence"]["mean"]["1"]["recall"] == {"value": (25 / 35 + 0) / 2, "n": 2}
    assert zero["evidence"]["mean"]["1"]["precision"] == {"value": 25 / 40, "n": 1}


def test_metrics_evidence_table_shows_denominators(tmp_path, capsys) -> None:
    tiny(tmp_path)
    code, out, err = cli(
        main,
        capsys,
        "metrics",
        tmp_path / "g.yaml",
        tmp_path / "run_b.txt",
        "--chunks",
        tmp_path / "b.jsonl",
        "--evidence",
        "-k",
        1,
    )
    assert (code, err) == (0, "")
    row = next(line for line in out.splitlines() if line.startswith("q1 "))
    assert row.split() == "q1 0.714 (25 / 35) 0.625 (25 / 40) 0.500 (25 / 50)".split()
    assert "undefined (no evidence)" in out and "chunk-level figures" in out
    assert "1 / 3 queries hold no evidence: undefined, left out of the means" in out


def test_chunk_level_figures_when_the_golden_set_grades_the_chunks(tmp_path, capsys) -> None:
    tiny(tmp_path)
    code, _, _ = cli(
        main,
        capsys,
        "project",
        tmp_path / "g.yaml",
        "--chunks",
        tmp_path / "b.jsonl",
        "-o",
        tmp_path / "gb.yaml",
    )
    assert code == 0
    got = metrics_json(
        capsys, tmp_path / "gb.yaml", tmp_path / "run_b.txt", "--chunks", tmp_path / "b.jsonl", "-k", 2
    )
    # projected at min-overlap 0.5: b1 holds 25 of 35 evidence characters of q1 (relevant), b2 holds
    # 10 of its 30 and 10 of the 20-character span [60, 80) (half of it: relevant), b0 5 of 40 and
    # 5 of 15 (below the bar): P@2 of q1 = 2 / 2
    assert got["chunk_level"]["queries"]["q1"]["P@2"] == 1.0
    assert got["evidence"]["queries"]["q1"]["2"]["recall"] == 1.0


def test_compare_evidence_by_hand(tmp_path, capsys) -> None:
    tiny(tmp_path)
    argv = [
        "compare",
        tmp_path / "g.yaml",
        tmp_path / "run_a.txt",
        tmp_path / "run_b.txt",
        "--chunks-a",
        tmp_path / "a.jsonl",
        "--chunks-b",
        tmp_path / "b.jsonl",
        "--evidence",
        "-k",
        1,
    ]
    code, out, err = cli(main, capsys, *argv, "--format", "json")
    assert (code, err) == (0, "")
    got = json.loads(out)
    # A at k=1: a1 = [50, 100): shared [60, 80) = 20 of 35; 20 / 50; 20 / 65
    a1 = got["a"]["queries"]["q1"]["1"]
    assert (a1["recall"], a1["precision"], a1["iou"]) == (20 / 35, 20 / 50, 20 / 65)
    deltas = got["b_minus_a"]["1"]
    assert deltas["recall"]["q1"] == pytest.approx(25 / 35 - 20 / 35, abs=1e-12)
    assert deltas["precision"]["q1"] == pytest.approx(25 / 40 - 20 / 50, abs=1e-12)
    assert deltas["iou"]["q1"] == pytest.approx(25 / 50 - 20 / 65, abs=1e-12)
    assert deltas["recall"]["q2"] is None
    assert "not comparable" in got["note"]
    code, out, err = cli(main, capsys, *argv)
    assert (code, err) == (0, "")
    assert sum("not comparable across two chunkings" in line for line in out.splitlines()) == 1
    assert "P@1" not in out and "nDCG" not in out.replace("nDCG@k", "")
    assert "+0.143 (mean over 1 / 3 queries)" in out


@pytest.mark.parametrize(
    "argv, words",
    [
        (
            ["metrics", "g.yaml", "run_b.txt", "--chunks", "a.jsonl", "--evidence"],
            "'b1', which is not in a.jsonl",
        ),
        (["metrics", "g.yaml", "run_b.txt", "--evidence"], "--evidence needs --chunks"),
        (["metrics", "q.qrels", "run_b.txt", "--chunks", "b.jsonl", "--evidence"], "no query holds evidence"),
        (["metrics", "g.yaml", "run_b.txt", "--chunks", "b.jsonl"], "--chunks goes with --evidence"),
        (
            ["metrics", "g.yaml", "run_b.txt", "--chunks", "b.jsonl", "--evidence", "--format", "trec"],
            "not trec",
        ),
        (
            ["compare", "g.yaml", "run_a.txt", "run_b.txt", "--chunks-a", "a.jsonl", "--evidence"],
            "--chunks-b",
        ),
        (
            [
                "compare",
                "g.yaml",
                "run_a.txt",
                "run_b.txt",
                "--chunks-a",
                "b.jsonl",
                "--chunks-b",
                "b.jsonl",
                "--evidence",
            ],
            "'a1', which is not in b.jsonl",
        ),
        (["compare", "g.yaml", "run_a.txt", "run_b.txt", "--chunks-a", "a.jsonl"], "go with --evidence"),
    ],
)
def test_refusals_are_one_line(tmp_path, capsys, monkeypatch, argv, words) -> None:
    tiny(tmp_path)
    (tmp_path / "q.qrels").write_text("q1 0 b1 1\n")
    monkeypatch.chdir(tmp_path)
    code, out, err = cli(main, capsys, *argv)
    assert code == 2 and out == "" and err.count("\n") == 1 and words in err, err


def test_a_golden_set_placing_a_chunk_elsewhere_is_refused(tmp_path, capsys, monkeypatch) -> None:
    """gb.yaml grades b1 under a chunking placing it at [0, 50) (its chunks section); b.jsonl places
    b1 at [30, 70): metrics and compare refuse in one line naming both places, never score it."""
    tiny(tmp_path)
    monkeypatch.chdir(tmp_path)
    golden = read_golden("g.yaml")
    golden.grades["q1"] = {"b1": 2}
    golden.chunk_spans = {"b1": ChunkSpan("b1", "d", 0, 50)}
    write_golden(golden, "gb.yaml")
    expected = (
        "error: b.jsonl places chunk 'b1' at 'd'[30:70], gb.yaml's chunks section at 'd'[0:50]: one id, two "
        "chunkings; expected the chunks file of the chunking the golden set grades (or a golden set "
        "without those ids)\n"
    )
    code, out, err = cli(main, capsys, "metrics", "gb.yaml", "run_b.txt", "--chunks", "b.jsonl", "--evidence")
    assert (code, out, err) == (2, "", expected)
    code, out, err = cli(
        main,
        capsys,
        "compare",
        "gb.yaml",
        "run_a.txt",
        "run_b.txt",
        "--chunks-a",
        "a.jsonl",
        "--chunks-b",
        "b.jsonl",
        "--evidence",
    )
    assert (code, out, err) == (2, "", expected)


def test_chunk_level_figures_say_what_they_rest_on(tmp_path, capsys, monkeypatch) -> None:
    """Grades of b1 with no chunks section: shown, saying they are taken by id; a chunks section
    that does not place the graded b1: not shown, saying why."""
    tiny(tmp_path)
    monkeypatch.chdir(tmp_path)
    golden = read_golden("g.yaml")
    golden.grades["q1"] = {"b1": 2}
    write_golden(golden, "gb.yaml")
    code, out, err = cli(
        main, capsys, "metrics", "gb.yaml", "run_b.txt", "--chunks", "b.jsonl", "--evidence", "-k", 1
    )
    assert (code, err) == (0, "")
    assert (
        "chunk-level figures (gb.yaml has no chunks section: its grades are taken as grades of b.jsonl's "
        "chunks by their ids alone):\n" in out
    )
    got = metrics_json(capsys, "gb.yaml", "run_b.txt", "--chunks", "b.jsonl", "-k", 1)
    assert got["chunk_level"]["queries"]["q1"]["P@1"] == 1.0  # b1 first, graded 2
    assert got["chunk_level"]["note"].startswith("gb.yaml has no chunks section")
    golden.chunk_spans = {"b0": ChunkSpan("b0", "d", 0, 40)}
    golden.grades["q1"] = {"b0": 0, "b1": 2}
    write_golden(golden, "gb.yaml")
    got = metrics_json(capsys, "gb.yaml", "run_b.txt", "--chunks", "b.jsonl", "-k", 1)
    assert got["chunk_level"]["absent"].startswith(
        "chunk-level figures (P@k, R@k, nDCG@k, ...): not shown: gb.yaml grades chunk 'b1' of b.jsonl but "
        "its chunks section does not place it (the grades may be of another chunking)"
    )


def test_a_run_of_one_chunking_is_refused_with_another_chunkings_file(tmp_path, capsys, monkeypatch) -> None:
    """annotation chunk names the chunking in its ids: a run over the paragraph chunking scored with
    the fixed chunking's file (the same document, the same numbers of chunks) is refused."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "d.txt").write_text("first line here\nsecond line\nthird\n")  # 34 characters
    for name, extra in (("F.jsonl", ["--size", "16"]), ("P.jsonl", ["--size", "16", "--by", "paragraph"])):
        code, _, _ = cli(annotation_main, capsys, "chunk", "d.txt", *extra, "-o", name)
        assert code == 0
    golden = Qrels(grades={"q1": {}}, texts={"q1": "one"}, evidence={"q1": [Evidence("d", 16, 27, 2)]})
    write_golden(golden, "g.yaml")
    # F: d#16-0#0 [0, 16), d#16-0#1 [16, 32), d#16-0#2 [32, 34); P: d#p16#0 [0, 15), d#p16#1 [16, 27),
    # d#p16#2 [28, 33)
    write_run(tmp_path / "run_p.txt", {"q1": ["d#p16#1", "d#p16#0"]})
    code, out, err = cli(main, capsys, "metrics", "g.yaml", "run_p.txt", "--chunks", "F.jsonl", "--evidence")
    assert (code, out) == (2, "") and err == (
        "error: run_p.txt: query 'q1' ranks chunk 'd#p16#1', which is not in F.jsonl; give the chunks "
        "file of the chunking the run retrieved from\n"
    )
    got = metrics_json(capsys, "g.yaml", "run_p.txt", "--chunks", "P.jsonl", "-k", 1)
    assert got["evidence"]["queries"]["q1"]["1"]["recall"] == 1.0  # [16, 27) is the span, whole


# ------------------------------------------------------------------ Chroma's corpora


def independent(golden: Qrels, chunks_file, ranked: dict[str, list[str]], k: int) -> dict[str, tuple]:
    """Per query with evidence: (recall, precision, IoU) from sets of character positions, the
    chunks' offsets read from the JSONL here."""
    place = {}
    for line in chunks_file.read_text().splitlines():
        row = json.loads(line)
        place[row["id"]] = (row["doc"], row["start"], row["end"])
    out = {}
    for qid, spans in golden.evidence.items():
        ev = {(e.doc, i) for e in spans if e.grade >= 1 for i in range(e.start, e.end)}
        ret = {(place[c][0], i) for c in ranked.get(qid, [])[:k] for i in range(place[c][1], place[c][2])}
        out[qid] = (len(ev & ret) / len(ev), len(ev & ret) / len(ret), len(ev & ret) / len(ev | ret))
    return out


def stand_in_run(golden: Qrels, chunks_file, seed: int) -> dict[str, list[str]]:
    """A seeded stand-in for a retriever: per query, the chunks touching its evidence and as many
    drawn at random, shuffled."""
    rows = [json.loads(line) for line in chunks_file.read_text().splitlines()]
    rng = np.random.default_rng(seed)
    ranked = {}
    for qid, spans in golden.evidence.items():
        touching = {
            r["id"]
            for r in rows
            for e in spans
            if r["doc"] == e.doc and r["start"] < e.end and e.start < r["end"]
        }
        pool = sorted(touching | {rows[i]["id"] for i in rng.choice(len(rows), len(touching))})
        ranked[qid] = [pool[i] for i in rng.permutation(len(pool))][:12]
    return ranked


@needs_chroma
def test_evidence_commands_equal_a_character_count(tmp_path, capsys) -> None:
    golden_path, a, b = tmp_path / "golden.yaml", tmp_path / "A.jsonl", tmp_path / "B.jsonl"
    code, _, _ = cli(
        annotation_main,
        capsys,
        "import-chroma",
        CHROMA / "questions.csv",
        "--corpora",
        CHROMA / "corpora",
        "-o",
        golden_path,
    )
    assert code == 0
    for path, size, overlap in ((a, 400, 0), (b, 800, 200)):
        code, _, _ = cli(
            annotation_main,
            capsys,
            "chunk",
            CHROMA / "corpora",
            "--size",
            size,
            "--overlap",
            overlap,
            "-o",
            path,
        )
        assert code == 0
    golden = read_golden(golden_path)
    ranked_a, ranked_b = stand_in_run(golden, a, 1), stand_in_run(golden, b, 2)
    write_run(tmp_path / "run_a.txt", ranked_a)
    write_run(tmp_path / "run_b.txt", ranked_b)
    got = metrics_json(capsys, golden_path, tmp_path / "run_b.txt", "--chunks", b, "-k", 5, "-k", 10)
    assert len(got["evidence"]["queries"]) == 319
    for k in (5, 10):
        expected = independent(golden, b, ranked_b, k)
        for qid, (recall, precision, iou) in expected.items():
            at = got["evidence"]["queries"][qid][str(k)]
            assert at["recall"] == pytest.approx(recall, abs=1e-9)
            assert at["precision"] == pytest.approx(precision, abs=1e-9)
            assert at["iou"] == pytest.approx(iou, abs=1e-9)
        mean = math.fsum(r for r, _, _ in expected.values()) / len(expected)
        assert got["evidence"]["mean"][str(k)]["recall"] == {"value": pytest.approx(mean, abs=1e-9), "n": 319}
    code, out, err = cli(
        main,
        capsys,
        "compare",
        golden_path,
        tmp_path / "run_a.txt",
        tmp_path / "run_b.txt",
        "--chunks-a",
        a,
        "--chunks-b",
        b,
        "--evidence",
        "-k",
        5,
        "--format",
        "json",
    )
    assert (code, err) == (0, "")
    cmp = json.loads(out)
    ea, eb = independent(golden, a, ranked_a, 5), independent(golden, b, ranked_b, 5)
    for i, measure in enumerate(("recall", "precision", "iou")):
        deltas = cmp["b_minus_a"]["5"][measure]
        assert all(deltas[q] == pytest.approx(eb[q][i] - ea[q][i], abs=1e-9) for q in ea)
        mean = math.fsum(eb[q][i] - ea[q][i] for q in ea) / len(ea)
        assert cmp["mean_b_minus_a"]["5"][measure] == pytest.approx(mean, abs=1e-9)
