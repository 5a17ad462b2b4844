"""Evidence measures of a run over its own chunking (#44 item 4): per query and cutoff, the
characters its top k chunks share with the query's evidence, over the evidence's characters
(recall), the retrieved characters (precision) and their union (IoU)
(:func:`calibration.projection.evidence_at_k`). Their denominators are characters of the
documents, not chunks, so two runs over two chunkings of one corpus are compared on them."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from annotation.model import ChunkSpan, Qrels, Run
from calibration.errors import InvalidInput
from calibration.projection import EvidenceAtK, evidence_at_k

__all__ = ["MEASURES", "EvidenceRun", "evidence_run"]

MEASURES = ("recall", "precision", "iou")


@dataclass(frozen=True)
class EvidenceRun:
    """Per query (the golden set's order) and cutoff, an :class:`EvidenceAtK`; ``None`` for a
    query holding no evidence at grade >= ``min_grade``: every measure of it is undefined (its
    relevant characters are unknown), left out of the means and counted. ``absent``: the golden
    set's queries the run does not answer: with ``missing`` "drop" (as ``metrics``' default) every
    measure of them is undefined, left out and counted; with "zero", nothing retrieved (recall 0,
    precision undefined)."""

    ks: tuple[int, ...]
    min_grade: int
    queries: dict[str, dict[int, EvidenceAtK] | None]
    absent: tuple[str, ...]
    missing: str = "drop"

    def at(self, qid: str, k: int) -> EvidenceAtK | None:
        """The query's figures at ``k``; None where it holds no evidence or is dropped (absent)."""
        at = self.queries[qid]
        if at is None or (self.missing == "drop" and qid in self.absent):
            return None
        return at[k]

    def value(self, qid: str, k: int, measure: str) -> float | None:
        at = self.at(qid, k)
        return None if at is None else getattr(at, measure)

    def mean(self, k: int, measure: str) -> tuple[float | None, int]:
        """The mean over the queries where ``measure`` is defined at ``k``, and their number."""
        values = [v for qid in self.queries if (v := self.value(qid, k, measure)) is not None]
        return (math.fsum(values) / len(values) if values else None), len(values)

    def minus(self, a: EvidenceRun, k: int, measure: str) -> dict[str, float | None]:
        """Per query, this run's ``measure`` at ``k`` minus run ``a``'s (B - A); None where either
        is undefined."""
        out: dict[str, float | None] = {}
        for qid in a.queries:
            x, y = a.value(qid, k, measure), self.value(qid, k, measure)
            out[qid] = None if x is None or y is None else y - x
        return out

    def mean_minus(self, a: EvidenceRun, k: int, measure: str) -> tuple[float | None, int]:
        """The mean of B - A (:meth:`minus`) over the queries where both are defined, and their number."""
        values = [d for d in self.minus(a, k, measure).values() if d is not None]
        return (math.fsum(values) / len(values) if values else None), len(values)

    def totals(self, k: int) -> EvidenceAtK:
        """The characters shared, of evidence and retrieved, summed over the queries with evidence."""
        defined = [at for qid in self.queries if (at := self.at(qid, k)) is not None]
        return EvidenceAtK(
            sum(a.shared for a in defined),
            sum(a.evidence for a in defined),
            sum(a.retrieved for a in defined),
        )


def evidence_run(
    golden: Qrels,
    run: Run,
    chunks: Sequence[ChunkSpan],
    ks: Sequence[int],
    min_grade: int,
    *,
    chunks_name: str = "the chunks file",
    missing: str = "drop",
) -> EvidenceRun:
    """The evidence measures of ``run`` (whose chunk ids are ``chunks``'s) against ``golden``'s
    evidence. A golden set without evidence, or a run ranking a chunk ``chunks`` does not place,
    is refused (:class:`InvalidInput`), never scored as irrelevant."""
    golden_name = golden.path or "the golden set"
    if not any(golden.evidence.values()):
        raise InvalidInput(
            f"{golden_name}: no query holds evidence (spans of documents); evidence measures need them "
            "(annotation import-chroma, or marked spans in the app)"
        )
    place = {c.id: c for c in chunks}
    rankings = run.rankings()
    for qid, docs in rankings.items():
        unplaced = next((d for d in docs if d not in place), None)
        if unplaced is not None:
            raise InvalidInput(
                f"{run.path or run.name}: query {qid!r:.60} ranks chunk {unplaced!r:.60}, which is not in "
                f"{chunks_name}; give the chunks file of the chunking the run retrieved from"
            )
    queries: dict[str, dict[int, EvidenceAtK] | None] = {}
    order = [*golden.qids, *(qid for qid in golden.evidence if qid not in golden.grades)]
    for qid in order:
        evidence = [e for e in golden.evidence.get(qid, []) if e.grade >= min_grade]
        if not evidence:
            queries[qid] = None
            continue
        ranked = rankings.get(qid, [])
        queries[qid] = {k: evidence_at_k(evidence, [place[d] for d in ranked[:k]], min_grade) for k in ks}
    absent = tuple(qid for qid in order if qid not in rankings)
    return EvidenceRun(tuple(ks), min_grade, queries, absent, missing)
