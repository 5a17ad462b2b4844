"""golden.yaml's ``provenance`` section: how its labels were made, as the store records it, so
that ``check`` and ``audit`` can tell labels pooled from the run under test (issue #40, item 3)::

    provenance:
      pools:                      # each pool of runs' top depth (python -m annotation pool)
      - batch: pool-d10-bm25
        runs: [bm25]
        depth: 10
        items: 12                 # chunk items the pool added
        labelled: 9               # of them, judgments in this file
        fingerprints: {bm25: sha256:1f0c...}   # what was pooled of each run (:func:`run_fingerprint`)
      other:                      # items from anything else: an estimate sample, a hole sample, imports
      - {batch: estimate sample, items: 4, labelled: 4}
      warning: the pool holds one run (bm25): ...   # pool's one-run warning, when one run was pooled
      guidelines:                 # once the relevance guidelines were edited: the labels behind
      - {version: 2, labels: 30}  # the file by the version they were made under (0: built in;
      - {version: 0, labels: 12}  # no version: not recorded, made before #43 or imported)

Pure: the types, the fingerprint and the one reading of "every label pooled from one run";
``annotation.formats.golden`` reads the section, ``annotation.exports.provenance`` builds it from a store.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "PooledBatch",
    "OtherBatch",
    "GuidelinesUsed",
    "Provenance",
    "run_fingerprint",
    "FINGERPRINT_PREFIX",
]

FINGERPRINT_PREFIX = "sha256:"
FINGERPRINT_HEX = 16  # hex digits kept: a short name of what was pooled, not a security check


def run_fingerprint(tops: Mapping[str, Sequence[str]]) -> str:
    """What a pool took of one run, named by its content whatever the run file is called:
    ``sha256:`` and the first 16 hex digits of the SHA-256 of the canonical JSON
    ``[[query id, [chunk ids]], ...]``: per query its top ``depth`` (trec_eval's order) as a set,
    sorted, distinct; queries sorted, a query with no chunk left out. The order inside the top
    ``depth`` does not change what was pooled, so it does not change the fingerprint."""
    canonical = [[qid, sorted(set(docs))] for qid, docs in sorted(tops.items()) if docs]
    text = json.dumps(canonical, ensure_ascii=False, separators=(",", ":"))
    import hashlib  # here, not at import: OpenSSL's load is 3 ms of every start-up (#42)

    return FINGERPRINT_PREFIX + hashlib.sha256(text.encode("utf-8")).hexdigest()[:FINGERPRINT_HEX]


@dataclass(frozen=True)
class PooledBatch:
    """One pool: the runs whose top ``depth`` it took, the chunk items it added, how many of
    them this file grades (None: the file does not say), each run's :func:`run_fingerprint`
    (a run no longer stored has none)."""

    runs: tuple[str, ...]
    depth: int
    items: int
    labelled: int | None = None
    batch: str | None = None
    fingerprints: dict[str, str] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.batch is not None:
            out["batch"] = self.batch
        out.update({"runs": list(self.runs), "depth": self.depth, "items": self.items})
        if self.labelled is not None:
            out["labelled"] = self.labelled
        if self.fingerprints:
            out["fingerprints"] = dict(self.fingerprints)
        return out


@dataclass(frozen=True)
class OtherBatch:
    """Items that came from anything but a pool of runs: ``batch`` names it (``estimate sample``,
    a hole sample's ``holes-...``, ``imported``)."""

    batch: str
    items: int
    labelled: int | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"batch": self.batch, "items": self.items}
        if self.labelled is not None:
            out["labelled"] = self.labelled
        return out


@dataclass(frozen=True)
class GuidelinesUsed:
    """How many of the file's labels were made under one version of the relevance guidelines
    (``version`` None: not recorded)."""

    version: int | None
    labels: int

    def to_dict(self) -> dict[str, Any]:
        return ({"version": self.version} if self.version is not None else {}) | {"labels": self.labels}


@dataclass(frozen=True)
class Provenance:
    """golden.yaml's ``provenance`` section, parsed and checked once (``annotation.formats.golden``)."""

    pools: tuple[PooledBatch, ...] = ()
    other: tuple[OtherBatch, ...] = ()
    warning: str | None = None
    guidelines: tuple[GuidelinesUsed, ...] = ()  # only once the guidelines were edited

    def to_dict(self) -> dict[str, Any]:
        """The section's plain values, as the export writes them."""
        out: dict[str, Any] = {
            "pools": [p.to_dict() for p in self.pools],
            "other": [o.to_dict() for o in self.other],
        }
        if self.warning is not None:
            out["warning"] = self.warning
        if self.guidelines:
            out["guidelines"] = [used.to_dict() for used in self.guidelines]
        return out

    def one_run_pool(self) -> PooledBatch | None:
        """The pool every label of the file came from when that pool took one run's top depth,
        else None: a pool of several runs, labels from two pools or from anything else (an
        estimate sample, an import) say nothing of one run. A batch without ``labelled`` counts
        as labelled when it holds items (the file does not say otherwise)."""

        def has_labels(labelled: int | None, items: int) -> bool:
            return (labelled if labelled is not None else items) > 0

        pools = [p for p in self.pools if has_labels(p.labelled, p.items)]
        if any(has_labels(o.labelled, o.items) for o in self.other) or len(pools) != 1:
            return None
        return pools[0] if len(pools[0].runs) == 1 else None
