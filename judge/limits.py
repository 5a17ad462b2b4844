"""The judge's bounds and defaults that its command line offers, in a module that imports
nothing but the standard library's ``resource`` and the options table (``python -m judge ... --help``
loads neither openai nor the store, #27); the client, the runner and the Judge page read them from here."""

from __future__ import annotations

import resource

from annotation.options import default

__all__ = [
    "INT64",
    "SEED32",
    "MAX_SECONDS",
    "MAX_REPLY_CAP",
    "MAX_REPEATS",
    "MAX_RETRY_AFTER",
    "MAX_REPLY_BYTES",
    "BATCH_HEAD_BYTES",
    "max_concurrency",
    "default_concurrency",
]

INT64 = 2**63 - 1  # what SQLite stores and an endpoint's seed holds
SEED32 = 2**32 - 1  # the offline judge's seed: scikit-learn's random_state
MAX_SECONDS = 86_400.0  # a day: no call waits longer
MAX_REPLY_CAP = 100_000_000  # a reply is held in memory several times over while parsed
MAX_REPEATS = 1_000_000
MAX_RETRY_AFTER = 60.0  # the longest Retry-After honoured by default
MAX_REPLY_BYTES = 1_000_000  # the largest reply read by default
BATCH_HEAD_BYTES = 65_536  # of a batch line over the reply limit, the first bytes kept: its custom_id


def max_concurrency() -> int:
    """A connection (an open file) per call in flight: half the process's open-file limit, at most
    1024; the bound of ``--concurrency`` and of the Judge page's box alike."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    return max(1, min(1024, soft // 2 if soft != resource.RLIM_INFINITY else 1024))


def default_concurrency() -> int:
    """The options table's concurrency, within :func:`max_concurrency` on this machine: the default
    of ``--concurrency`` and of the Judge page's box alike (one rule, #41)."""
    return min(default("concurrency"), max_concurrency())
