"""Metrics over a run file, read in pieces when it is grouped by query (issue #19): the
workflow ``python -m calibration metrics QRELS RUN`` calls. Memory is bounded by a piece (16 MB
of lines), not by the run; a run that is not grouped, or not a clean TREC run, is read whole as
:func:`calibration.workflows.evaluate_run` reads it, and the result's notes say so."""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

from annotation.columnar import NotStreamable, lean_pieces
from annotation.formats import read_ranked
from annotation.model import Qrels
from calibration.metrics import Evaluation
from calibration.metrics_grouped import NotGrouped, evaluate_grouped
from calibration.workflows import (
    ENGINE_THREADS,
    InvalidInput,
    NothingToEvaluate,
    PathLike,
    cutoffs,
    evaluate_run,
    min_grade_of,
)

__all__ = ["evaluate_run_file", "RUN_COLUMNS"]


# a TREC run's columns as the lean reader names them (annotation.formats reads the same)
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
) -> Evaluation:
    """:func:`evaluate_run` over a run file, read in pieces when it is grouped by query.

    ``grouped``: None (default) streams a clean TREC run (``annotation.columnar.lean_pieces``,
    ``calibration.metrics.evaluate_grouped``: memory bounded by a piece, not by the run) and,
    when a query comes back after other queries or the file is not lean, reads it whole as
    :func:`evaluate_run` does, saying so in ``Evaluation.notes``; True: the run must be
    grouped (an ungrouped run is an :class:`InvalidInput`, never read twice; a file the lean
    reader leaves to others, e.g. tab-separated, is still read whole); False: read whole. JSONL rankings are always read whole. The values are the same on every path.
    """
    run_name = str(path)
    if grouped is not False and not run_name.lower().endswith(".jsonl"):
        pieces = lean_pieces(path, RUN_COLUMNS, ("r",), ("s",))
        try:
            with ThreadPoolExecutor(max_workers=ENGINE_THREADS) as pool:
                result = evaluate_grouped(
                    qrels,
                    pieces,
                    ks=cutoffs(ks),
                    min_grade=min_grade_of(qrels, min_grade),
                    missing=missing,  # type: ignore[arg-type]
                    gain=gain,  # type: ignore[arg-type]
                    executor=pool,
                    run_name=run_name,
                )
        except (NotGrouped, NotStreamable) as exc:
            if grouped and isinstance(exc, NotGrouped):
                raise InvalidInput(f"{path}: --grouped: {exc}") from None
            note = f"run read whole: {exc}"
        else:
            if not result.evaluated.any():
                raise NothingToEvaluate(
                    f"no query of {run_name} is in {qrels_name}: nothing to evaluate"
                    f" (run has {result.not_in_qrels} queries without judgments)"
                )
            return result
    else:
        note = "run read whole"
    result = evaluate_run(
        qrels,
        read_ranked(path),
        ks,
        min_grade,
        missing=missing,
        gain=gain,
        run_name=run_name,
        qrels_name=qrels_name,
    )
    result.notes.append(note)
    return result
