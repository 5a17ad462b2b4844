"""One interval type for every interval of an agreement figure (#28): kappa's score interval
(:func:`calibration.stats.kappa_interval.kappa_ci`) and the percentile bootstrap it is checked against
(:func:`calibration.stats.bootstrap.bootstrap_ci`) were two classes that differed in one method.

An :class:`Interval` is the pair ``(low, high)`` (``(None, None)`` when undefined), so it unpacks
and compares as a tuple, with attributes that say how it was made: ``estimate``, ``n``,
``alpha``, ``weights``, ``undefined_reason`` (None when defined) and, by method, ``method`` (the
score interval's name, printed beside it) or ``n_resamples``, ``n_undefined`` and ``seed`` (the
bootstrap's)."""

from __future__ import annotations

from typing import Any

from calibration.stats.verdict import labels_to_decide

__all__ = ["Interval"]


class Interval(tuple[float | None, float | None]):
    """``(low, high)`` with how it was made as attributes (module docstring)."""

    estimate: float | None
    n: int

    def __new__(cls, low: float | None, high: float | None, **details: Any) -> Interval:
        interval = super().__new__(cls, (low, high))
        interval.__dict__.update(details)
        return interval

    @property
    def low(self) -> float | None:
        return self[0]

    @property
    def high(self) -> float | None:
        return self[1]

    def as_dict(self) -> dict[str, Any]:
        return {"low": self[0], "high": self[1], **self.__dict__}

    def labels_to_decide(self, *, bar: float) -> int | None:
        """About how many more human-labelled items would decide the verdict at ``bar``:
        :func:`calibration.stats.verdict.labels_to_decide` of this interval (its half-width on the bar's
        side shrinks like 1/sqrt(n) around the estimate; None unless the interval reaches the bar)."""
        return labels_to_decide(self.estimate, self, self.n, bar=bar)
