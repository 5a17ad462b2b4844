"""What a calibration command's inputs mean when a face leaves them out, once, for the readers, the
workflows and the actions alike (none of them imports another layer for these):

- ``k``: :data:`DEFAULT_K` (10) when none is given, on the page as in the CLI (:func:`cutoffs`);
- the relevance threshold: :func:`min_grade_of`: the one given, else the label file's own
  ``min_grade`` (golden.yaml), else :data:`~annotation.rubrics.DEFAULT_MIN_GRADE` (1);
- the randomization test of a comparison: :data:`DEFAULT_PERMUTATIONS` sign flips, seed
  :data:`DEFAULT_SEED`;
- :data:`ALPHA`: 1 - the confidence of every interval (0.05);
- :data:`ENGINE_THREADS`: the threads the metrics engine hashes document ids in while it sorts;
- :func:`refuse_nothing_evaluated`: the one refusal of a run that shares no query with the judgments.

The defaults come from the one options table (:mod:`annotation.options`), which the argparse
options and the pages read.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING

from annotation.options import default
from annotation.rubrics import DEFAULT_MIN_GRADE
from calibration.errors import NothingToEvaluate

if TYPE_CHECKING:
    from annotation.model import Qrels
    from calibration.metrics import Evaluation

__all__ = [
    "DEFAULT_K",
    "DEFAULT_PERMUTATIONS",
    "DEFAULT_SEED",
    "ENGINE_THREADS",
    "ALPHA",
    "PathLike",
    "cutoffs",
    "min_grade_of",
    "refuse_nothing_evaluated",
]

DEFAULT_K: int = default("k")
DEFAULT_PERMUTATIONS: int = default("permutations")
DEFAULT_SEED: int = default("compare_seed")
ALPHA: float = default("alpha")  # every interval's level below the faces (the pure modules take it)
# The engine hashes document ids in two threads while it sorts (calibration.metrics.evaluate); the
# caller owns them, the pure module only uses what it is handed.
ENGINE_THREADS = 2

PathLike = str | os.PathLike[str]


def min_grade_of(qrels: Qrels, given: int | None = None) -> int:
    """The relevance threshold: ``given``, else the label file's ``min_grade``, else 1."""
    if given is not None:
        return given
    return int(qrels.meta.get("min_grade", DEFAULT_MIN_GRADE))


def cutoffs(ks: Sequence[int] | None) -> list[int]:
    """The cutoffs asked for, else ``[DEFAULT_K]``."""
    return list(ks) if ks else [DEFAULT_K]


def refuse_nothing_evaluated(
    result: Evaluation, run_name: str, qrels_name: str, action: str = "evaluate"
) -> None:
    """:class:`NothingToEvaluate` when the run shares no query with the judgments (trec_eval
    too: "No queries with both results and relevance info"), saying what could not be done."""
    if not result.evaluated.any():
        note = f" (run has {result.not_in_qrels} queries without judgments)" if action == "evaluate" else ""
        raise NothingToEvaluate.no_shared_query(run_name, qrels_name, action, note)
