"""The kappa verdict and its thresholds: their one home (DESIGN.md, "Kappa verdict").

Light on purpose (no numpy, scipy or scikit-learn): the CLIs declare their
``--trusted``, ``--noisy`` and ``--min-labels`` defaults from here without
paying for the statistics they may not run.
"""

from __future__ import annotations

import math

TRUSTED = 0.6  # kappa >= this: trusted
NOISY = 0.4  # kappa >= this (and below TRUSTED): noisy; below: not trusted
MIN_LABELS = 30  # human-labelled items a judge needs before the review gives it a verdict


def verdict(kappa: float | None, trusted: float = TRUSTED, noisy: float = NOISY) -> str:
    """The verdict on a kappa: "trusted" (kappa >= trusted), "noisy" (noisy <= kappa < trusted),
    "not trusted" (below noisy), or "undefined" when kappa is None or NaN."""
    if noisy > trusted:
        raise ValueError(f"verdict thresholds: noisy ({noisy}) must not exceed trusted ({trusted})")
    if kappa is None or math.isnan(float(kappa)):
        return "undefined"
    if kappa >= trusted:
        return "trusted"
    if kappa >= noisy:
        return "noisy"
    return "not trusted"
