"""The calibration package's named errors, under the one root :class:`annotation.errors.DenominatorError`
(its two boundaries, the CLIs' ``main`` and the pages, turn them into one line). Readers, workflows
and actions raise these; a face catches the root.

- :class:`NothingToEvaluate`: no query of a run is in the judgments, nothing to score;
- :class:`InvalidInput`: an input a computation refuses, said in one line that names the file;
- :class:`NothingToCompare`: agreement asked of ratings where no two raters rated the same item.
"""

from __future__ import annotations

from annotation.errors import DenominatorError

__all__ = ["InvalidInput", "NothingToCompare", "NothingToEvaluate"]


class NothingToEvaluate(DenominatorError, ValueError):
    """No query of the run is in the judgments: there is nothing to score."""

    @classmethod
    def no_shared_query(
        cls, run_name: str, qrels_name: str, action: str, note: str = ""
    ) -> NothingToEvaluate:
        """The one message of a run that shares no query with the judgments."""
        return cls(f"no query of {run_name} is in {qrels_name}: nothing to {action}{note}")


class InvalidInput(DenominatorError, ValueError):
    """An input a computation refuses (too few items, a label off the scale), said in one line
    that names the file."""


class NothingToCompare(InvalidInput):
    """Agreement asked of ratings where no two raters rated the same item: nothing to measure (a
    face says so as it says any bad input; the Agreement page as "nothing to compare yet")."""
