"""A judge run's progress as it goes: calls to make, done, skipped, errors, retries, tokens, the
answers stored as not answered when a run was stopped, waits on the store's write lock, elapsed time
and an estimate of what is left. The runner counts into it; the faces and the renderers read it (no
renderer imports the runner for it).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

__all__ = ["Progress"]


@dataclass
class Progress:
    total: int = 0  # calls this run will make
    skipped: int = 0  # already done by an earlier run
    done: int = 0
    errors: int = 0
    retries: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    unanswered: int = 0  # stored as not answered: the run was stopped with them in flight
    lock_delayed: int = 0  # answers that waited for the store's write lock (another process held it)
    lock_seconds: float = 0.0  # the longest such wait
    started: float = field(default_factory=time.monotonic)
    stopped: bool = False

    @property
    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def eta(self) -> float | None:
        if not self.done:
            return None
        return self.elapsed / self.done * (self.total - self.done)
