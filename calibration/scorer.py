"""A run as the audit reads it (#27): a :class:`Scorer` answers "this run's :class:`Evaluation`
against these judgments at these cutoffs", so the audit and ``check`` read a run in memory
(:func:`run_scorer`) and a run file in pieces (``calibration.run_file.file_scorer``) alike,
without holding a 10-million-line run whole."""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import Executor
from typing import Literal, Protocol

import annotation.arrow_compute as pc
from annotation.model import Qrels, Run
from calibration.metrics import Evaluation, evaluate

__all__ = ["Scorer", "run_scorer", "run_depth", "scored_once"]


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
        unjudged_depth: int = 0,
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
        unjudged_depth: int = 0,
    ) -> Evaluation:
        result = evaluate(
            qrels,
            run,
            ks=ks,
            min_grade=min_grade,
            with_positional=with_positional,
            missing=missing,
            executor=executor,
            unjudged_depth=unjudged_depth,
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


def scored_once(score: Scorer, also_ks: Sequence[int] = (), also_unjudged: int = 0) -> Scorer:
    """``score`` that reads the run once for every question asked of it about the same judgments
    (threshold and missing-query rule): the first call scores at its cutoffs and ``also_ks``,
    positional counts included, the unjudged slots of each query's first ``also_unjudged`` (or
    as many as it asks), and the run's depth when it asks for it; a later call whose cutoffs are
    among those (and that asks for the depth only if it was counted, the unjudged slots no
    deeper) gets that result (``check``: the audit and the metrics from one read of a 10M-line run)."""
    memo: dict[tuple[int, int, str], tuple[Evaluation, bool]] = {}

    def once(
        qrels: Qrels,
        ks: Sequence[int],
        min_grade: int,
        *,
        with_positional: bool = False,
        missing: Literal["drop", "zero"] = "drop",
        with_depth: bool = False,
        unjudged_depth: int = 0,
    ) -> Evaluation:
        key = (id(qrels), min_grade, missing)
        kept, counted = memo.get(key, (None, False))
        deep_enough = kept is not None and kept.unjudged_depth >= unjudged_depth
        if kept is not None and set(ks) <= set(kept.ks) and (counted or not with_depth) and deep_enough:
            return kept
        result = score(
            qrels,
            sorted({*ks, *also_ks}),
            min_grade,
            with_positional=True,
            missing=missing,
            with_depth=with_depth,
            unjudged_depth=max(unjudged_depth, also_unjudged),
        )
        memo[key] = result, with_depth
        return result

    return once
