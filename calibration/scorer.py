"""A run as the audit reads it (#27): a :class:`Scorer` answers "this run's :class:`Evaluation`
against these judgments at these cutoffs", so the audit and ``check`` read a run in memory
(:func:`run_scorer`) and a run file in pieces (``calibration.run_file.file_scorer``) alike,
without holding a 10-million-line run whole."""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import Executor
from typing import Literal, Protocol

import pyarrow.compute as pc

from annotation.model import Qrels, Run
from calibration.metrics import Evaluation, evaluate

__all__ = ["Scorer", "run_scorer", "run_depth"]


class Scorer(Protocol):
    """A run as the audit reads it: its :class:`Evaluation` against ``qrels`` at ``ks``; with
    ``with_depth`` the result's ``depth`` is the run's deepest ranking (all its queries).
    :func:`run_scorer` for a :class:`Run` in memory; ``calibration.run_file.file_scorer`` for a
    run file read in pieces."""

    def __call__(
        self,
        qrels: Qrels,
        ks: Sequence[int],
        min_grade: int,
        *,
        with_positional: bool = False,
        missing: Literal["drop", "zero"] = "drop",
        with_depth: bool = False,
    ) -> Evaluation: ...


def run_scorer(run: Run, executor: Executor | None = None) -> Scorer:
    """:class:`Scorer` of a run in memory (:func:`calibration.metrics.evaluate` on ``executor``)."""

    def score(
        qrels: Qrels,
        ks: Sequence[int],
        min_grade: int,
        *,
        with_positional: bool = False,
        missing: Literal["drop", "zero"] = "drop",
        with_depth: bool = False,
    ) -> Evaluation:
        result = evaluate(
            qrels,
            run,
            ks=ks,
            min_grade=min_grade,
            with_positional=with_positional,
            missing=missing,
            executor=executor,
        )
        if with_depth:
            result.depth = run_depth(run)
        return result

    return score


def run_depth(run: Run) -> int:
    """The deepest ranking of a run (lines of its longest query; 0 for an empty run)."""
    if run.n_rows == 0:
        return 0
    counts = pc.value_counts(run.table["q"]).field("counts")
    return int(pc.max(counts).as_py())
