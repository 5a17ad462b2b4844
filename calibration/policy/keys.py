"""The policy's plain keys, read the same way from a policy file and from ``--rule``: the whole-number
keys (``min_queries``, ``stale_after_weeks``) and the fail-or-warn keys (``undecided``: a judge figure
not shown; ``not_evaluated``: a rule that applies but has no evidence to be evaluated on), and the
error a policy that does not parse raises. Pure."""

from __future__ import annotations

from typing import Any

from annotation.errors import DenominatorError

__all__ = ["InvalidPolicy", "quoted", "WHOLE_KEYS", "whole", "CHOICE_KEYS", "choice"]


def quoted(value: Any, most: int = 200) -> str:
    """A value from the file as an error quotes it: its repr, at most ``most`` characters."""
    text = repr(value)
    return text if len(text) <= most else f"{text[:most]}... ({len(text):,} characters)"


class InvalidPolicy(DenominatorError, ValueError):
    """A policy file or override that does not parse (an unknown rule, a bar that is no number)."""


# whole-number policy keys: (lowest, highest, what they count); min_queries >= 2: a query-level variance
WHOLE_KEYS = {"min_queries": (2, 100_000, "queries"), "stale_after_weeks": (1, 520, "weeks")}


def whole(value: Any, where: str, key: str) -> int:
    """A whole-number policy key's value (a policy file's or a --rule's text), within its range."""
    low, high, noun = WHOLE_KEYS[key]
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value.strip())
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise InvalidPolicy(
            f"{where}: {quoted(value)}; expected a whole number of {noun} from {low} to {high}"
        )
    return value


# fail-or-warn keys: undecided governs a judge with too few labels or queries for a verdict (undecided,
# uncalibrated, stale), not_evaluated a rule that applies with no evidence at all (issue #40)
CHOICE_KEYS = {"undecided": ("fail", "warn"), "not_evaluated": ("fail", "warn")}


def choice(value: Any, where: str, key: str) -> str:
    """A fail-or-warn key's value: ``fail`` or ``warn``, else :class:`InvalidPolicy` naming the key."""
    if value not in CHOICE_KEYS[key]:
        raise InvalidPolicy(f"{where}: {quoted(value)}; expected {key}: fail or {key}: warn")
    return str(value)
