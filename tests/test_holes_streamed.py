"""``metrics --judge-labels`` on a run file read in pieces (issue #42, item 1): a batch of whole
queries scored at a time, merged, gives the figures of the whole read, which
:func:`score_with_holes` (the reference, one run in memory) computes: random grouped runs with
ties, repeats and non-ASCII ids, pieces that cut queries in two, a hole sample with people's
grades (the corrected figures and their intervals too), and a run read whole when it must be."""

from __future__ import annotations

import random
from functools import partial
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

import calibration.top_k as top_k
from annotation.formats.columnar import lean_pieces
from annotation.formats.trec import read_run
from annotation.model import Qrels, Run
from calibration.holes.files import filled_data
from calibration.holes.scoring import (
    HoleScores,
    correct_scores,
    merged_scores,
    query_scores,
    score_with_holes,
)
from calibration.holes.streamed import streamed_scores

QUERIES = [f"q{i}" for i in range(12)] + ["Ω", "é"]
DOCS = [f"d{i}" for i in range(30)] + ["é", "ä", "a-much-longer-document-id-0001"]


def random_case(
    rng: random.Random, grouped: bool = True
) -> tuple[list[tuple[str, str, float]], Qrels, Qrels]:
    """Rows of a run, people's grades (some queries none), the judge's (on other chunks too)."""
    rows: list[tuple[str, str, float]] = []
    for qid in rng.sample(QUERIES, rng.randint(3, len(QUERIES))):
        rows += [(qid, rng.choice(DOCS), float(rng.randint(0, 6))) for _ in range(rng.randint(1, 30))]
    if not grouped:
        rng.shuffle(rows)
    people = {q: {d: rng.randint(0, 3) for d in rng.sample(DOCS, rng.randint(1, 8))} for q in QUERIES[:-2]}
    judge = {q: {d: rng.randint(0, 3) for d in rng.sample(DOCS, 15)} for q in QUERIES}
    return rows, Qrels(grades=people), Qrels(grades=judge)


def write_trec(path: Path, rows: list[tuple[str, str, float]]) -> Path:
    path.write_text("".join(f"{q} Q0 {d} {i + 1} {s!r} tag\n" for i, (q, d, s) in enumerate(rows)), "utf-8")
    return path


def figures(scores: HoleScores) -> dict[str, object]:
    out: dict[str, object] = {
        "qids": scores.qids,
        "holes": scores.holes,
        "sampled": scores.sampled,
        "counts": [
            c.tolist() for c in (scores.rel, scores.filled_count, scores.filled_relevant, scores.ungraded)
        ],
        "corrected": scores.corrected,
    }
    for which in ("pool", "filled", "people"):
        out[which] = {name: np.nan_to_num(v, nan=-1.0).tolist() for name, v in getattr(scores, which).items()}
    return out


@pytest.mark.parametrize("piece_bytes", [64, 500, 1 << 20])
def test_a_file_in_pieces_is_filled_as_the_run_read_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, piece_bytes: int
) -> None:
    monkeypatch.setattr(top_k, "lean_pieces", partial(lean_pieces, piece_bytes=piece_bytes))
    rng = random.Random(piece_bytes)
    for i in range(12):
        rows, people, judge = random_case(rng)
        path = write_trec(tmp_path / f"run{i}.txt", rows)
        streamed = streamed_scores(people, path, [1, 3], 3, judge, min_grade=1, gain="linear", sample=None)
        assert streamed is not None  # grouped and clean: read in pieces
        from_file = filled_data(people, path, [1, 3], judge, run_name="r")
        whole = filled_data(people, read_run(path), [1, 3], judge, run_name="r")
        assert from_file == whole


def test_a_run_not_grouped_is_read_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(top_k, "lean_pieces", partial(lean_pieces, piece_bytes=64))
    rng = random.Random(4)
    rows, people, judge = random_case(rng, grouped=False)
    path = write_trec(tmp_path / "shuffled.txt", rows)
    assert streamed_scores(people, path, [3], 3, judge, min_grade=1, gain="linear", sample=None) is None
    assert filled_data(people, path, [3], judge) == filled_data(people, read_run(path), [3], judge)


def test_batches_with_a_sample_merge_to_the_whole_runs_figures() -> None:
    """Per batch of whole queries :func:`query_scores`, then merged and corrected: the figures,
    counts and corrected intervals of :func:`score_with_holes` on the whole run."""
    rng = random.Random(9)
    for _ in range(30):
        rows, people, judge = random_case(rng)
        run = Run(
            table=pa.table({"q": [r[0] for r in rows], "d": [r[1] for r in rows], "s": [r[2] for r in rows]})
        )
        k = rng.choice([2, 5])
        ranked = run.rankings()
        shared = sorted(set(ranked) & set(people.grades))
        sampled = rng.sample(shared, min(len(shared), 6))
        sample: dict[str, list[str]] = {}
        labels: dict[str, dict[str, int]] = {}
        for qid in sampled:  # every hole of a sampled query's top k, graded by people
            slots = list(dict.fromkeys(ranked[qid][:k]))
            sample[qid] = [d for d in slots if d not in people.grades[qid]]
            labels[qid] = {d: rng.randint(0, 3) for d in sample[qid]}
        whole = score_with_holes(
            people, run, k=k, judge=judge.grades, min_grade=1, sample=sample, people=labels
        )
        parts = []
        queries = list(dict.fromkeys(r[0] for r in rows))
        cut = rng.randint(1, len(queries) - 1)
        for batch_queries in (queries[:cut], queries[cut:]):
            batch = Run(table=pa.table({"q": [r[0] for r in rows if r[0] in batch_queries],
                                        "d": [r[1] for r in rows if r[0] in batch_queries],
                                        "s": [r[2] for r in rows if r[0] in batch_queries]}))  # fmt: skip
            base = {q: people.grades[q] for q in batch_queries if q in people.grades}
            if not base:  # no graded query here: nothing to score (as the stream skips it)
                continue
            part, missing = query_scores(
                Qrels(grades=base),
                batch,
                k=k,
                judge=judge.grades,
                min_grade=1,
                gain="linear",
                sample={q: h for q, h in sample.items() if q in batch_queries},
                people=labels,
            )
            assert missing == 0
            parts.append(part)
        merged = merged_scores(parts)
        correct_scores(merged)
        assert figures(merged) == figures(whole)


def test_check_with_a_judge_reads_a_grouped_run_file_in_pieces(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``check --judge-labels`` on a grouped TREC file: the report of the run read whole, the file
    never read whole (the check's figures and the holes both read it in pieces)."""
    import calibration.actions as actions
    import calibration.holes.files as hole_files

    monkeypatch.setattr(top_k, "lean_pieces", partial(lean_pieces, piece_bytes=200))
    rng = random.Random(21)
    for i in range(6):
        rows, people, judge = random_case(rng)
        path = write_trec(tmp_path / f"run{i}.txt", rows)
        whole = actions.check(people, read_run(path), 3, judge=judge, no_store=True, run_name="r")
        assert whole["holes"]["queries"]  # the holes were scored

        def never(*_: object) -> Run:
            raise AssertionError("the run file was read whole")

        with monkeypatch.context() as patched:
            patched.setattr(actions, "read_ranked", never)
            patched.setattr(hole_files, "read_ranked", never)
            in_pieces = actions.check(people, path, 3, judge=judge, no_store=True, run_name="r")
        assert in_pieces == whole


def test_compare_with_a_judge_reads_grouped_run_files_in_pieces(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``compare --judge-labels`` on two grouped TREC files, with and without a hole sample drawn
    over both (people's grades on every hole): the reports of the runs read whole, the files never
    read whole."""
    import dataclasses

    import calibration.actions as actions
    import calibration.holes.files as hole_files
    from annotation.hole_sample import read_hole_sample

    monkeypatch.setattr(top_k, "lean_pieces", partial(lean_pieces, piece_bytes=300))
    rng = random.Random(33)
    for i in range(6):
        rows_a, people, judge = random_case(rng)
        rows_b, _, _ = random_case(rng)
        path_a = write_trec(tmp_path / f"a{i}.txt", rows_a)
        path_b = write_trec(tmp_path / f"b{i}.txt", rows_b)
        run_a, run_b = read_run(path_a), read_run(path_b)
        drawn = actions.holes(people, [(str(path_a), run_a), (str(path_b), run_b)], 3, sample=2, seed=i)
        hole_files.write_hole_sample(drawn, people, tmp_path / f"sample{i}.yaml")
        sample = read_hole_sample(tmp_path / f"sample{i}.yaml")
        graded = {q: {d: rng.randint(0, 3) for d in holes} for q, holes in sample.holes.items()}
        sample = dataclasses.replace(sample, grades=graded)
        for with_sample in (None, sample):
            whole = actions.compare(people, run_a, run_b, [1, 3], judge=judge, hole_sample=with_sample)

            def never(*_: object) -> Run:
                raise AssertionError("a run file was read whole")

            with monkeypatch.context() as patched:
                patched.setattr(hole_files, "read_ranked", never)
                patched.setattr(actions, "read_ranked", never)
                in_pieces = actions.compare(
                    people, path_a, path_b, [1, 3], judge=judge, hole_sample=with_sample
                )
            assert in_pieces == whole
            assert with_sample is None or whole[0]["deltas"][0]["corrected"] is not None
