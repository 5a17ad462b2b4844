"""Metrics over a run file, read in pieces when it is grouped by query (issue #19): the
workflow ``python -m calibration metrics QRELS RUN`` calls. Memory is bounded by a piece (16 MB
of lines), not by the run; a run that is not grouped, or not a clean TREC run, is read whole as
:func:`calibration.actions.metrics` reads it, and the result's notes say so."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Literal

import numpy as np
import pyarrow as pa

import annotation.arrow_compute as pc
from annotation.formats.by_extension import read_ranked
from annotation.formats.columnar import NotStreamable, lean_pieces
from annotation.model import Qrels, as_numpy
from calibration.errors import InvalidInput
from calibration.inputs import ENGINE_THREADS, PathLike, cutoffs, min_grade_of, refuse_nothing_evaluated
from calibration.metrics import Evaluation, evaluate
from calibration.metrics_grouped import NotGrouped, evaluate_grouped
from calibration.scorer import run_depth

__all__ = ["FileScorer", "evaluate_run_file", "file_scorer", "RUN_COLUMNS"]


# a TREC run's columns as the lean reader names them (annotation.formats.trec reads the same)
RUN_COLUMNS = ["q", "q0", "d", "r", "s", "t"]


def evaluate_run_file(
    qrels: Qrels,
    path: PathLike,
    ks: Sequence[int] | None = None,
    min_grade: int | None = None,
    *,
    missing: str = "drop",
    gain: str = "linear",
    grouped: bool | None = None,
    qrels_name: str = "the judgments",
    with_positional: bool = False,
    with_depth: bool = False,
    refuse_empty: bool = True,
    unjudged_depth: int = 0,
) -> Evaluation:
    """:func:`evaluate_run` over a run file, read in pieces when it is grouped by query.

    ``grouped``: None (default) streams a clean TREC run (``annotation.formats.columnar.lean_pieces``,
    ``calibration.metrics.evaluate_grouped``: memory bounded by a piece, not by the run) and,
    when a query comes back after other queries or the file is not lean, reads it whole as
    :func:`evaluate_run` does, saying so in ``Evaluation.notes``; True: the run must be
    grouped (an ungrouped run is an :class:`InvalidInput`, never read twice; a file the lean
    reader leaves to others, e.g. tab-separated, is still read whole); False: read whole. JSONL
    rankings are always read whole. The values are the same on every path.

    ``with_positional``: the audit's positional counts too; ``with_depth``: the result's ``depth``
    is the run's deepest ranking (every query of the file, judged or not); ``refuse_empty``:
    a run that shares no query with the judgments is a :class:`NothingToEvaluate` (the audit
    refuses in its own words).
    """
    run_name = str(path)
    ks = cutoffs(ks)
    min_grade = min_grade_of(qrels, min_grade)
    if grouped is not False and not run_name.lower().endswith(".jsonl"):
        depth = _Depth()
        pieces = lean_pieces(path, RUN_COLUMNS, ("r",), ("s",))
        try:
            with ThreadPoolExecutor(max_workers=ENGINE_THREADS) as pool:
                result = evaluate_grouped(
                    qrels,
                    depth.count(pieces) if with_depth else pieces,
                    ks=ks,
                    min_grade=min_grade,
                    missing=missing,  # type: ignore[arg-type]
                    gain=gain,  # type: ignore[arg-type]
                    with_positional=with_positional,
                    executor=pool,
                    run_name=run_name,
                    unjudged_depth=unjudged_depth,
                )
        except (NotGrouped, NotStreamable) as exc:
            if grouped and isinstance(exc, NotGrouped):
                raise InvalidInput(f"{path}: --grouped: {exc}") from None
            note = f"run read whole: {exc}"
        else:
            result.depth = depth.deepest
            if refuse_empty:
                refuse_nothing_evaluated(result, run_name, qrels_name)
            return result
    else:
        note = "run read whole"
    run = read_ranked(path)
    with ThreadPoolExecutor(max_workers=ENGINE_THREADS) as pool:
        result = evaluate(
            qrels,
            run,
            ks=ks,
            min_grade=min_grade,
            missing=missing,  # type: ignore[arg-type]
            gain=gain,  # type: ignore[arg-type]
            with_positional=with_positional,
            executor=pool,
            unjudged_depth=unjudged_depth,
        )
    if refuse_empty:
        refuse_nothing_evaluated(result, run_name, qrels_name)
    if with_depth:
        result.depth = run_depth(run)
    result.notes.append(note)
    return result


class FileScorer:
    """The audit's :class:`~calibration.scorer.Scorer` of a run file: each call reads it once,
    in pieces when it is grouped by query (:func:`evaluate_run_file`); ``path`` is kept for a
    reader that needs a few queries' rankings again (:func:`queries_of`)."""

    def __init__(self, path: PathLike, grouped: bool | None = None) -> None:
        self.path = path
        self.grouped = grouped

    def __call__(
        self,
        qrels: Qrels,
        ks: Sequence[int],
        min_grade: int,
        *,
        with_positional: bool = False,
        missing: Literal["drop", "zero"] = "drop",
        with_depth: bool = False,
        unjudged_depth: int = 0,
    ) -> Evaluation:
        return evaluate_run_file(
            qrels,
            self.path,
            ks,
            min_grade,
            missing=missing,
            grouped=self.grouped,
            with_positional=with_positional,
            with_depth=with_depth,
            refuse_empty=False,
            unjudged_depth=unjudged_depth,
        )


def file_scorer(path: PathLike, grouped: bool | None = None) -> FileScorer:
    """The audit's :class:`~calibration.scorer.Scorer` of a run file (:class:`FileScorer`)."""
    return FileScorer(path, grouped)


class _Depth:
    """The lines of a grouped run's longest query, counted as its pieces go by (a query cut
    between two pieces counted whole)."""

    def __init__(self) -> None:
        self.deepest = 0
        self._last: str | None = None
        self._lines = 0

    def count(self, pieces: Iterable[pa.Table]) -> Iterator[pa.Table]:
        for piece in pieces:
            if piece.num_rows:
                counts = pc.value_counts(piece["q"])  # in the order each query first appears
                lines = as_numpy(counts.field("counts")).astype(np.int64)
                first, last = counts.field("values")[0].as_py(), counts.field("values")[-1].as_py()
                if first == self._last:
                    lines[0] += self._lines
                self.deepest = max(self.deepest, int(lines.max()))
                self._last, self._lines = last, int(lines[-1])
            yield piece
