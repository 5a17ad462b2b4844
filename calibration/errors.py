"""The calibration package's named errors, under the one root :class:`annotation.errors.DenominatorError`
(its two boundaries, the CLIs' ``main`` and the pages, turn them into one line). Readers, workflows
and actions raise these; a face catches the root.

- :class:`NothingToEvaluate`: no query of a run is in the judgments, nothing to score;
- :class:`InvalidInput`: an input a computation refuses, said in one line that names the file.
"""

from __future__ import annotations

from annotation.errors import DenominatorError

__all__ = ["InvalidInput", "NothingToEvaluate"]


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
