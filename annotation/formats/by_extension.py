"""The two readers that choose a format by the file's name: :func:`read_judgments` (golden.yaml
or TREC qrels) and :func:`read_ranked` (JSONL rankings or a TREC run), what every command that
takes "labels" or "a run" reads.
"""

from __future__ import annotations

import os

from annotation.formats.trec import read_qrels, read_run, read_run_bytes
from annotation.model import Qrels, Run

__all__ = ["read_judgments", "read_ranked", "ranked_in_memory"]


def read_judgments(path: str | os.PathLike[str]) -> Qrels:
    """golden.yaml (by extension .yaml/.yml) or TREC qrels."""
    if str(path).lower().endswith((".yaml", ".yml")):
        # start-up: yaml and the golden reader load only for a golden.yaml (#42: a qrels file's
        # metrics do not pay for them)
        from annotation.formats.golden import read_golden

        return read_golden(path)
    return read_qrels(path)


def read_ranked(path: str | os.PathLike[str]) -> Run:
    """A TREC run, or JSONL rankings when the name ends in .jsonl."""
    if str(path).lower().endswith(".jsonl"):
        # start-up: the JSON lines reader loads only for JSONL rankings (#42)
        from annotation.formats.rankings import read_rankings

        return read_rankings(path)
    return read_run(path)


def ranked_in_memory(data: bytes, name: str) -> Run | None:
    """:func:`read_ranked` of a file's content already in memory (an upload named ``name``) when
    it is a TREC run the lean reader takes (:func:`annotation.formats.trec.read_run_bytes`); None
    for JSONL rankings and for any run the lean reader leaves to the file readers."""
    if name.lower().endswith(".jsonl"):
        return None
    return read_run_bytes(data, name)
