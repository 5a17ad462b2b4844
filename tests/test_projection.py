"""#44 item 3: a golden set projected onto another chunking, from evidence spans and from chunk grades
made under another chunking: hand-computed fixtures, the acceptance on Chroma's corpora against an
independent computation character by character, and the command."""

from __future__ import annotations

import json

import numpy as np
import pytest

from annotation.chunking import fixed_chunks
from annotation.formats.chroma import read_chroma_questions
from annotation.formats.chunks import read_documents, write_chunks
from annotation.formats.golden import read_golden, write_golden
from annotation.model import ChunkSpan, Evidence, Qrels
from calibration import actions
from calibration.__main__ import main
from calibration.errors import InvalidInput
from calibration.projection import (
    ChunkIndex,
    covered_characters,
    evidence_at_k,
    overlaps,
    project_evidence,
    project_grades,
)
from tests.conftest import cli, shared_dir

SHARED = shared_dir()
CHROMA = (SHARED / "data" / "chroma_chunking") if SHARED is not None else None
needs_chroma = pytest.mark.skipif(CHROMA is None, reason="the shared chroma_chunking data is not here")


def test_overlap_rule_by_hand() -> None:
    span = Evidence("d", 10, 20, 2)  # 10 characters
    # shares 5 of the span's 10: half the span
    assert overlaps(ChunkSpan("c", "d", 15, 100), span, 0.5)
    # shares 4 of 10 (0.4 of the span) and 4 of the chunk's 90: neither half
    assert not overlaps(ChunkSpan("c", "d", 16, 106), span, 0.5)
    # shares 4 of the chunk's 6: two thirds of the chunk
    assert overlaps(ChunkSpan("c", "d", 16, 22), span, 0.5)
    assert not overlaps(ChunkSpan("c", "d", 20, 30), span, 0.0)  # touching ends share nothing
    assert overlaps(ChunkSpan("c", "d", 19, 300), span, 0.0)  # min-overlap 0: any shared character
    assert not overlaps(ChunkSpan("c", "e", 10, 20), span, 0.5)  # another document


def test_project_evidence_by_hand() -> None:
    chunks = ChunkIndex(
        [
            ChunkSpan("a", "d", 0, 10),
            ChunkSpan("b", "d", 10, 20),
            ChunkSpan("c", "d", 20, 30),
            ChunkSpan("x", "e", 0, 9),
        ]
    )
    # span 1 [8, 14) grade 3: a holds 2 of 6 (and 2 of its 10): below; b holds 4 of 6: 3
    # span 2 [18, 28) grade 1: b holds 2 of 10: below, c holds 8: 1
    got = project_evidence([Evidence("d", 8, 14, 3), Evidence("d", 18, 28, 1)], chunks, 0.5, 1)
    assert got.grades == {"a": 0, "b": 3, "c": 1}
    # evidence characters 6 + 10 = 16; kept inside b and c (relevant): [10, 14) and [18, 28) = 4 + 10
    assert (got.kept, got.evidence_chars) == (14, 16)
    assert got.holes == []


def test_project_grades_by_hand() -> None:
    # chunking A: [0,10) grade 0, [10,20) grade 2, [20,30) grade 0, [30,40) unlabelled
    spans = {
        "A0": ChunkSpan("A0", "d", 0, 10),
        "A1": ChunkSpan("A1", "d", 10, 20),
        "A2": ChunkSpan("A2", "d", 20, 30),
    }
    grades = {"A0": 0, "A1": 2, "A2": 0}
    b = ChunkIndex(
        [
            ChunkSpan("inside0", "d", 2, 8),  # wholly in judged-irrelevant text: 0
            ChunkSpan("holds1", "d", 5, 25),  # holds all of A1, the rest graded 0: 2
            ChunkSpan("in1", "d", 12, 18),  # inside the relevant A1 only: undecided (0..2)
            ChunkSpan("edge", "d", 25, 35),  # half irrelevant, half unlabelled: undecided
            ChunkSpan("far", "d", 40, 50),  # no label touches it: unjudged
            ChunkSpan("other", "e", 0, 5),  # another document: unjudged
        ]
    )
    got = project_grades(grades, spans, b, [Evidence("d", 12, 16, 2)], 1)
    assert got.grades == {"inside0": 0, "holds1": 2}
    assert got.holes == ["in1", "edge"]
    assert got.unjudged == 2
    assert (got.kept, got.evidence_chars) == (4, 4)  # [12, 16) lies inside holds1


def test_covered_characters_counts_each_character_once() -> None:
    evidence = [Evidence("d", 0, 10, 2), Evidence("d", 5, 15, 2), Evidence("d", 100, 110, 0)]
    # union of relevant evidence: [0, 15) = 15; chunks [3, 8) and [6, 12): union [3, 12) = 9
    assert covered_characters(evidence, [ChunkSpan("a", "d", 3, 8), ChunkSpan("b", "d", 6, 12)], 1) == (9, 15)


def test_a_graded_chunk_without_offsets_is_refused() -> None:
    golden = Qrels(grades={"q": {"A0": 2}}, path="g.yaml")
    with pytest.raises(InvalidInput, match="--from-chunks"):
        actions.project(golden, [ChunkSpan("b", "d", 0, 5)])


# ------------------------------------------------------------------ acceptance on Chroma's corpora


def independent_evidence_grades(
    evidence: list[Evidence], chunks: list[ChunkSpan], min_overlap: float
) -> dict[str, int]:
    """Every chunk against every span, overlap counted as a set of character positions."""
    out: dict[str, int] = {}
    for chunk in chunks:
        cells = set(range(chunk.start, chunk.end))
        for span in evidence:
            if span.doc != chunk.doc:
                continue
            shared = len(cells & set(range(span.start, span.end)))
            if shared == 0:
                continue
            fits = (
                shared / (span.end - span.start) >= min_overlap
                or shared / (chunk.end - chunk.start) >= min_overlap
            )
            out[chunk.id] = max(out.get(chunk.id, 0), span.grade if fits else 0)
    return out


def independent_grade_bounds(
    grades: dict[str, int], spans: dict[str, ChunkSpan], chunks: list[ChunkSpan], lengths: dict[str, int]
) -> tuple[dict[str, int], set[str]]:
    """(decided grades, holes): per character of each document the lowest grade of the labels holding
    it (an array, 99 where none), a chunk decided when the highest of its characters equals the
    highest grade of the labels lying wholly inside it."""
    bound = {doc: np.full(n, 99, dtype=np.int64) for doc, n in lengths.items()}
    labelled = {doc: np.zeros(n, dtype=bool) for doc, n in lengths.items()}
    for chunk, grade in grades.items():
        s = spans[chunk]
        bound[s.doc][s.start : s.end] = np.minimum(bound[s.doc][s.start : s.end], grade)
        labelled[s.doc][s.start : s.end] = True
    table = {
        doc: np.array(
            [(spans[k].start, spans[k].end, g) for k, g in grades.items() if spans[k].doc == doc]
        ).reshape(-1, 3)
        for doc in lengths
    }
    decided, holes = {}, set()
    for c in chunks:
        if not labelled[c.doc][c.start : c.end].any():
            continue
        rows = table[c.doc]
        inside = rows[(rows[:, 0] >= c.start) & (rows[:, 1] <= c.end), 2]
        lower = int(inside.max()) if inside.size else 0
        if bound[c.doc][c.start : c.end].max() == lower:
            decided[c.id] = lower
        else:
            holes.add(c.id)
    return decided, holes


@pytest.fixture(scope="module")
def chroma():
    documents = read_documents([CHROMA / "corpora"])
    golden = read_chroma_questions(CHROMA / "questions.csv", documents)
    first, second = fixed_chunks(documents, 400, 0), fixed_chunks(documents, 800, 200)
    return documents, golden, first, second


@needs_chroma
@pytest.mark.parametrize("which", [2, 3])
def test_evidence_projection_equals_an_independent_computation(chroma, which) -> None:
    documents, golden, first, second = chroma
    chunks = {2: first, 3: second}[which]
    result = actions.project(golden, chunks, min_overlap=0.5)
    assert len(result.queries) == 319
    relevant = 0
    for qid, evidence in golden.evidence.items():
        mine = result.queries[qid]
        assert mine.source == "evidence"
        # only the chunks of the evidence's documents can touch it: the brute force over those
        near = [c for c in chunks if c.doc in {e.doc for e in evidence}]
        assert mine.grades == independent_evidence_grades(evidence, near, 0.5), qid
        relevant += sum(1 for g in mine.grades.values() if g >= 1)
    # figures of this data set at min-overlap 0.5 (docs/spans.md quotes them)
    assert relevant == {2: 455, 3: 540}[which]


@needs_chroma
def test_grades_under_one_chunking_projected_onto_another(chroma) -> None:
    """People grade the 400-character chunks (a chunk holding any of the answer is relevant; every
    other chunk of the corpus they read is judged 0); projected onto 800/200, the decided relevant
    chunks match the second chunking's span-derived grades with F1 >= 0.9 (undecided ones count as
    misses), and every undecided chunk the labels touch is listed as a hole."""
    documents, golden, first, second = chroma
    lengths = {doc: len(text) for doc, text in documents.items()}
    spans_a = {c.id: c for c in first}
    by_evidence = actions.project(golden, second, min_overlap=0.5)
    tp = fp = fn = holes_total = 0
    grades: dict[str, dict[str, int]] = {}
    for qid, evidence in golden.evidence.items():
        docs = {e.doc for e in evidence}
        touched = independent_evidence_grades(evidence, [c for c in first if c.doc in docs], 0.0)
        grades[qid] = {c.id: touched.get(c.id, 0) for c in first if c.doc in docs}
    graded = Qrels(grades=grades, texts=golden.texts, evidence=golden.evidence, path="graded")
    result = actions.project(graded, second, from_chunks=first, source="grades")
    for qid in golden.evidence:
        mine = result.queries[qid]
        assert mine.source == "grades"
        decided, holes = independent_grade_bounds(grades[qid], spans_a, second, lengths)
        assert mine.grades == decided and set(mine.holes) == holes and len(mine.holes) == len(holes), qid
        truth = {c for c, g in by_evidence.queries[qid].grades.items() if g >= 1}
        predicted = {c for c, g in mine.grades.items() if g >= 1}
        tp, fp, fn = tp + len(truth & predicted), fp + len(predicted - truth), fn + len(truth - predicted)
        assert truth - predicted <= set(mine.holes)  # a miss is a hole, never a wrong decision
        holes_total += len(holes)
    f1 = 2 * tp / (2 * tp + fp + fn)
    assert f1 >= 0.9
    assert (tp, fp, fn, holes_total) == (485, 47, 55, 215)  # the figures docs/spans.md quotes


# ------------------------------------------------------------------ the command


def small_case(tmp_path):
    doc = tmp_path / "d.txt"
    doc.write_text("a" * 30)
    documents = read_documents([doc])
    write_chunks(
        tmp_path / "b.jsonl",
        [ChunkSpan("b0", "d", 0, 10), ChunkSpan("b1", "d", 10, 20), ChunkSpan("b2", "d", 20, 30)],
        documents,
    )
    write_chunks(tmp_path / "a.jsonl", [ChunkSpan("a0", "d", 0, 15), ChunkSpan("a1", "d", 15, 30)], documents)
    golden = Qrels(
        grades={"q1": {}, "q2": {"a0": 2, "a1": 0}},
        texts={"q1": "one", "q2": "two"},
        evidence={"q1": [Evidence("d", 12, 18, 3)]},
        meta={"name": "small", "grade_scale": {0: "no", 1: "some", 2: "more", 3: "all"}},
    )
    write_golden(golden, tmp_path / "g.yaml")
    return doc


def test_project_command_writes_golden_and_reports(tmp_path, capsys) -> None:
    doc = small_case(tmp_path)
    out_path = tmp_path / "out.yaml"
    code, out, err = cli(
        main,
        capsys,
        "project",
        tmp_path / "g.yaml",
        "--chunks",
        tmp_path / "b.jsonl",
        "--from-chunks",
        tmp_path / "a.jsonl",
        "--docs",
        doc,
        "-o",
        out_path,
    )
    assert code == 0 and err == ""
    projected = read_golden(out_path)
    # q1: span [12, 18): b1 holds 6 of 6 -> 3; b0, b2 share nothing
    # q2: b0 [0,10) inside a0 (grade 2): undecided; b1 [10,20) partly a0 (2), partly a1 (0): hole;
    #     b2 [20,30) inside a1 (0): 0
    assert projected.grades == {"q1": {"b1": 3}, "q2": {"b2": 0}}
    assert projected.evidence == {"q1": [Evidence("d", 12, 18, 3)]}
    assert projected.chunk_spans == {"b1": ChunkSpan("b1", "d", 10, 20), "b2": ChunkSpan("b2", "d", 20, 30)}
    assert "evidence kept in relevant chunks: 6 / 6 characters (1.000)" in out
    assert "1 of 3 chunks the labels touch decided (0 relevant, 1 not), 2 holes" in out
    assert "  q2: b0 b1" in out
    assert f"wrote the projected set (golden) to {out_path}" in out


def test_project_command_qrels_and_json(tmp_path, capsys) -> None:
    small_case(tmp_path)
    qrels = tmp_path / "out.qrels"
    code, _, _ = cli(
        main,
        capsys,
        "project",
        tmp_path / "g.yaml",
        "--chunks",
        tmp_path / "b.jsonl",
        "--from-chunks",
        tmp_path / "a.jsonl",
        "--format",
        "qrels",
        "-o",
        qrels,
    )
    assert code == 0 and qrels.read_text() == "q1 0 b1 3\nq2 0 b2 0\n"
    code, out, err = cli(
        main,
        capsys,
        "project",
        tmp_path / "g.yaml",
        "--chunks",
        tmp_path / "b.jsonl",
        "--from-chunks",
        tmp_path / "a.jsonl",
        "--format",
        "json",
        "--min-overlap",
        "0.7",
    )
    report = json.loads(out)
    assert code == 0 and "projected" in err
    assert report["min_overlap"] == 0.7 and report["queries"]["q2"]["holes"] == ["b0", "b1"]
    assert report["totals"]["evidence"]["kept"] == 6


@pytest.mark.parametrize(
    "extra, words",
    [
        ([], "--from-chunks"),  # q2's grades have no offsets
        (["--from-chunks", "missing.jsonl"], "missing.jsonl"),
        (["--from-chunks", "a.jsonl", "--min-overlap", "2"], "between 0 and 1"),
        (["--from-chunks", "a.jsonl", "--format", "qrels"], "give -o FILE"),
    ],
)
def test_project_command_refusals_are_one_line(tmp_path, capsys, monkeypatch, extra, words) -> None:
    small_case(tmp_path)
    monkeypatch.chdir(tmp_path)
    code, out, err = cli(main, capsys, "project", "g.yaml", "--chunks", "b.jsonl", *extra)
    assert code == 2 and out == "" and err.count("\n") == 1 and words in err


def test_nothing_half_written_on_error(tmp_path, capsys) -> None:
    small_case(tmp_path)
    out_path = tmp_path / "out.yaml"
    out_path.write_text("before\n")
    code, _, _ = cli(
        main, capsys, "project", tmp_path / "g.yaml", "--chunks", tmp_path / "b.jsonl", "-o", out_path
    )
    assert code == 2 and out_path.read_text() == "before\n"


# ------------------------------------------------------------------ item 4: evidence at k (pure)


def test_evidence_at_k_by_hand() -> None:
    # evidence [10, 30) and [25, 40) (union [10, 40) = 30 characters); a grade-0 span is left out
    evidence = [Evidence("d", 10, 30, 2), Evidence("d", 25, 40, 1), Evidence("d", 90, 99, 0)]
    # top chunks [0, 20) and [15, 35) overlap: their union [0, 35) = 35 characters, counted once
    got = evidence_at_k(evidence, [ChunkSpan("a", "d", 0, 20), ChunkSpan("b", "d", 15, 35)], 1)
    assert (got.shared, got.evidence, got.retrieved) == (25, 30, 35)  # shared: [10, 35)
    assert (got.recall, got.precision, got.iou) == (25 / 30, 25 / 35, 25 / 40)
    nothing = evidence_at_k([], [ChunkSpan("a", "d", 0, 20)], 1)
    assert nothing.recall is None and nothing.precision == 0.0 and nothing.iou == 0.0


@needs_chroma
def test_evidence_at_k_equals_a_character_count(chroma) -> None:
    """Every query of Chroma's set, a top 5 and 10 of the 800/200 chunking (a seeded stand-in for a
    retriever: the chunks touching the evidence and as many drawn at random, shuffled), against
    sets of character positions, to 1e-9."""
    _documents, golden, _first, second = chroma
    index, rng, found = ChunkIndex(second), np.random.default_rng(44), 0
    for evidence in golden.evidence.values():
        touching = {c for e in evidence for c in index.touching(e.doc, e.start, e.end)}
        candidates = sorted(
            touching | {second[i] for i in rng.choice(len(second), len(touching))},
            key=lambda c: (c.doc, c.start),
        )
        for k in (5, 10):
            top = [candidates[i] for i in rng.permutation(len(candidates))[:k]]
            got = evidence_at_k(evidence, top, 1)
            ev = {(e.doc, i) for e in evidence for i in range(e.start, e.end)}
            ret = {(c.doc, i) for c in top for i in range(c.start, c.end)}
            found += bool(ev & ret)
            assert got.recall == pytest.approx(len(ev & ret) / len(ev), abs=1e-9)
            assert got.precision == pytest.approx(len(ev & ret) / len(ret), abs=1e-9)
            assert got.iou == pytest.approx(len(ev & ret) / len(ev | ret), abs=1e-9)
    assert found == 2 * 319  # every top k holds some evidence: the figures are not all 0


def test_project_refuses_a_chunks_file_placing_a_graded_id_elsewhere(tmp_path, capsys, monkeypatch) -> None:
    """The golden set's chunks section places a0 at [0, 15); a chunks file (--from-chunks or
    --chunks) placing a0 elsewhere is refused in one line naming both placements, nothing written."""
    small_case(tmp_path)
    monkeypatch.chdir(tmp_path)
    golden = read_golden("g.yaml")
    golden.chunk_spans = {"a0": ChunkSpan("a0", "d", 0, 15), "a1": ChunkSpan("a1", "d", 15, 30)}
    write_golden(golden, "g.yaml")
    write_chunks("a2.jsonl", [ChunkSpan("a0", "d", 0, 12), ChunkSpan("a1", "d", 12, 30)])
    code, out, err = cli(
        main, capsys, "project", "g.yaml", "--chunks", "b.jsonl", "--from-chunks", "a2.jsonl", "-o", "p.yaml"
    )
    assert (code, out) == (2, "") and err == (
        "error: a2.jsonl places chunk 'a0' at 'd'[0:12], g.yaml's chunks section at 'd'[0:15]: one id, "
        "two chunkings; expected the chunks file of the chunking the grades were made under\n"
    )
    write_chunks("b2.jsonl", [ChunkSpan("b0", "d", 0, 10), ChunkSpan("a1", "d", 10, 20)])
    code, out, err = cli(main, capsys, "project", "g.yaml", "--chunks", "b2.jsonl", "-o", "p.yaml")
    assert (code, out) == (2, "") and err.count("\n") == 1
    assert "b2.jsonl places chunk 'a1' at 'd'[10:20], g.yaml's chunks section at 'd'[15:30]" in err
    assert not (tmp_path / "p.yaml").exists()
    # the same placements agree: projected as before (a1 [15, 30) again in a.jsonl)
    code, _, _ = cli(
        main, capsys, "project", "g.yaml", "--chunks", "b.jsonl", "--from-chunks", "a.jsonl", "-o", "p.yaml"
    )
    assert code == 0 and read_golden("p.yaml").grades == {"q1": {"b1": 3}, "q2": {"b2": 0}}


def test_an_explicit_source_no_query_holds_is_refused(tmp_path, capsys, monkeypatch) -> None:
    """--source grades on a set holding evidence only (and --source evidence on grades only) is
    refused; without --source the set is projected from what it holds."""
    small_case(tmp_path)
    monkeypatch.chdir(tmp_path)
    evidence_only = Qrels(grades={"q1": {}}, texts={"q1": "one"}, evidence={"q1": [Evidence("d", 12, 18, 3)]})
    write_golden(evidence_only, "e.yaml")
    code, out, err = cli(
        main, capsys, "project", "e.yaml", "--chunks", "b.jsonl", "--source", "grades", "-o", "p.yaml"
    )
    assert (code, out) == (2, "") and err == (
        "error: e.yaml: --source grades, but no query holds chunk grades (it holds evidence only); drop "
        "--source to project from the evidence\n"
    )
    assert not (tmp_path / "p.yaml").exists()
    grades_only = Qrels(grades={"q2": {"a0": 2, "a1": 0}}, texts={"q2": "two"})
    write_golden(grades_only, "r.yaml")
    code, out, err = cli(
        main,
        capsys,
        "project",
        "r.yaml",
        "--chunks",
        "b.jsonl",
        "--from-chunks",
        "a.jsonl",
        "--source",
        "evidence",
        "-o",
        "p.yaml",
    )
    assert (code, out) == (2, "") and "--source evidence, but no query holds evidence spans" in err
    assert not (tmp_path / "p.yaml").exists()
    # the default falls back: e.yaml from its evidence (b1 holds all 6 characters: 3), r.yaml from
    # its grades (b2 [20, 30) inside a1 graded 0)
    code, out, _ = cli(main, capsys, "project", "e.yaml", "--chunks", "b.jsonl", "-o", "p.yaml")
    assert code == 0 and read_golden("p.yaml").grades == {"q1": {"b1": 3}}
    code, out, _ = cli(
        main, capsys, "project", "r.yaml", "--chunks", "b.jsonl", "--from-chunks", "a.jsonl", "-o", "p2.yaml"
    )
    assert code == 0 and read_golden("p2.yaml").grades == {"q2": {"b2": 0}}
    assert "from grades: 1 query; 1 of 3 chunks the labels touch decided" in out


def test_project_json_to_a_file_says_where(tmp_path, capsys, monkeypatch) -> None:
    small_case(tmp_path)
    monkeypatch.chdir(tmp_path)
    code, out, err = cli(
        main,
        capsys,
        "project",
        "g.yaml",
        "--chunks",
        "b.jsonl",
        "--from-chunks",
        "a.jsonl",
        "--format",
        "json",
        "-o",
        "p.json",
    )
    assert (code, err) == (0, "") and out.endswith("wrote the projected set (json) to p.json\n")
    assert json.loads((tmp_path / "p.json").read_text())["queries"]["q1"]["grades"] == {"b1": 3}
