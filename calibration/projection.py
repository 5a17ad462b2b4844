"""A golden set put onto another chunking (#44): pure, offsets in, grades out.

Two sources, per query:

- **Evidence** (graded spans ``doc[start:end]``): a chunk *overlaps* a span when they share
  ``o > 0`` characters and ``o >= min_overlap * len(span)`` (the chunk holds that share of the
  span) or ``o >= min_overlap * len(chunk)`` (the span covers that share of the chunk). A chunk
  that overlaps spans gets the highest of their grades; a chunk that touches evidence without
  overlapping it gets 0; every other chunk is irrelevant by the evidence (the evidence is the
  answer, whole) and is not written.
- **Chunk grades made under another chunking A** (A's offsets known): each character of a B
  chunk is bounded above by the lowest grade of the labelled A chunks holding it (no label: no
  bound), and the B chunk is bounded below by the highest grade of the labelled A chunks lying
  wholly inside it (it holds all the text that earned that grade). A B chunk whose bounds meet is
  *decided* at that grade: wholly inside judged-irrelevant text gives 0; a relevant A chunk inside
  it, the rest of it no better, gives that grade. A B chunk its labels touch but cannot decide is
  a *hole*, listed; one no label touches is *unjudged*, as it was under A.

"The share of the evidence's characters a projection keeps": the characters of the query's
evidence (the union of its spans with grade >= min_grade) that lie inside a chunk the projection
calls relevant (grade >= min_grade), over all of them.
"""

from __future__ import annotations

import math
from bisect import bisect_left
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from annotation.model import ChunkSpan, Evidence, Qrels

__all__ = [
    "Projected",
    "Projection",
    "ChunkIndex",
    "overlap",
    "overlaps",
    "project_evidence",
    "project_grades",
    "covered_characters",
    "EvidenceAtK",
    "evidence_at_k",
]


@dataclass
class Projected:
    """One query's projection: the grades decided (``grades``), the holes (touched by labels,
    undecided), how many chunks no label touches (``unjudged``), and the evidence's characters
    kept (``kept`` of ``evidence_chars``; both 0 when the query has no evidence)."""

    source: str  # "evidence" or "grades"
    grades: dict[str, int] = field(default_factory=dict)
    holes: list[str] = field(default_factory=list)
    unjudged: int = 0
    kept: int = 0
    evidence_chars: int = 0


class ChunkIndex:
    """The chunks of a chunking by document, sorted by start, for the chunks touching a span."""

    def __init__(self, chunks: Iterable[ChunkSpan]) -> None:
        by_doc: dict[str, list[ChunkSpan]] = {}
        for chunk in chunks:
            by_doc.setdefault(chunk.doc, []).append(chunk)
        self.by_doc = {doc: sorted(cs, key=lambda c: (c.start, c.end)) for doc, cs in by_doc.items()}
        self.starts = {doc: [c.start for c in cs] for doc, cs in self.by_doc.items()}
        self.longest = {doc: max(c.length for c in cs) for doc, cs in self.by_doc.items()}
        self.total = sum(len(cs) for cs in self.by_doc.values())

    def touching(self, doc: str, start: int, end: int) -> list[ChunkSpan]:
        """The chunks of ``doc`` sharing at least one character with ``[start, end)``."""
        if doc not in self.by_doc:
            return []
        chunks, starts = self.by_doc[doc], self.starts[doc]
        first = bisect_left(starts, start - self.longest[doc] + 1)
        last = bisect_left(starts, end)
        return [c for c in chunks[first:last] if c.end > start]


def overlap(a_start: int, a_end: int, b_start: int, b_end: int) -> int:
    """Characters ``[a_start, a_end)`` and ``[b_start, b_end)`` share."""
    return max(0, min(a_end, b_end) - max(a_start, b_start))


def overlaps(chunk: ChunkSpan, span: Evidence, min_overlap: float) -> bool:
    """The rule above: shared characters > 0 and at least ``min_overlap`` of the span's or of
    the chunk's."""
    if chunk.doc != span.doc:
        return False
    shared = overlap(chunk.start, chunk.end, span.start, span.end)
    return shared > 0 and (shared >= min_overlap * span.length or shared >= min_overlap * chunk.length)


def merged(spans: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    """Half-open intervals merged into disjoint ones, sorted."""
    out: list[tuple[int, int]] = []
    for start, end in sorted(spans):
        if out and start <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], end))
        else:
            out.append((start, end))
    return out


def covered_characters(
    evidence: Sequence[Evidence], chunks: Iterable[ChunkSpan], min_grade: int
) -> tuple[int, int]:
    """(characters of the relevant evidence inside ``chunks``, characters of the relevant
    evidence): each a count over the union of spans, per document."""
    kept = total = 0
    by_doc: dict[str, list[tuple[int, int]]] = {}
    for chunk in chunks:
        by_doc.setdefault(chunk.doc, []).append((chunk.start, chunk.end))
    docs = {e.doc for e in evidence if e.grade >= min_grade}
    for doc in docs:
        spans = merged((e.start, e.end) for e in evidence if e.doc == doc and e.grade >= min_grade)
        total += sum(end - start for start, end in spans)
        cover = merged(by_doc.get(doc, []))
        kept += sum(overlap(s, e, cs, ce) for s, e in spans for cs, ce in cover)
    return kept, total


def project_evidence(
    evidence: Sequence[Evidence], chunks: ChunkIndex, min_overlap: float, min_grade: int
) -> Projected:
    """One query's evidence put onto a chunking (the rule at the top of the module)."""
    out = Projected("evidence")
    for span in evidence:
        for chunk in chunks.touching(span.doc, span.start, span.end):
            grade = span.grade if overlaps(chunk, span, min_overlap) else 0
            out.grades[chunk.id] = max(out.grades.get(chunk.id, 0), grade)
    relevant = [c for doc in chunks.by_doc.values() for c in doc if out.grades.get(c.id, -1) >= min_grade]
    out.kept, out.evidence_chars = covered_characters(evidence, relevant, min_grade)
    return out


def _upper_bound(chunk: ChunkSpan, labelled: Sequence[tuple[ChunkSpan, int]]) -> float:
    """The highest grade any character of ``chunk`` may hold: per character the lowest grade of
    the labelled chunks holding it (none: no bound, infinity), the highest over the characters."""
    cuts = sorted(
        {chunk.start, chunk.end}
        | {p for a, _g in labelled for p in (a.start, a.end) if chunk.start < p < chunk.end}
    )
    highest = -math.inf
    for left, right in zip(cuts, cuts[1:]):
        holding = [g for a, g in labelled if a.start <= left and right <= a.end]
        highest = max(highest, min(holding) if holding else math.inf)
        if highest == math.inf:
            break
    return highest


def project_grades(
    grades: Mapping[str, int],
    spans: Mapping[str, ChunkSpan],
    chunks: ChunkIndex,
    evidence: Sequence[Evidence],
    min_grade: int,
) -> Projected:
    """One query's chunk grades, made under the chunking ``spans`` describes, put onto ``chunks``
    (the bounds at the top of the module). ``evidence``, when the query has some, only measures
    the characters kept. Every graded chunk needs its span (the caller checks)."""
    out = Projected("grades")
    labelled_grade: dict[str, int] = {}
    for chunk_id, grade in grades.items():
        labelled_grade[chunk_id] = max(grade, 0)  # a negative grade (judged, never relevant) bounds as 0
    labels = ChunkIndex(spans[chunk_id] for chunk_id in grades)
    touched = 0
    for doc, labelled in labels.by_doc.items():
        seen: set[str] = set()
        for start, end in merged((a.start, a.end) for a in labelled):
            for chunk in chunks.touching(doc, start, end):
                if chunk.id in seen:
                    continue
                seen.add(chunk.id)
                near = [(a, labelled_grade[a.id]) for a in labels.touching(doc, chunk.start, chunk.end)]
                lower = max((g for a, g in near if chunk.start <= a.start and a.end <= chunk.end), default=0)
                if _upper_bound(chunk, near) == lower:
                    out.grades[chunk.id] = lower
                else:
                    out.holes.append(chunk.id)
        touched += len(seen)
    out.unjudged = chunks.total - touched
    relevant = [c for doc in chunks.by_doc.values() for c in doc if out.grades.get(c.id, -1) >= min_grade]
    out.kept, out.evidence_chars = covered_characters(evidence, relevant, min_grade)
    return out


@dataclass
class Projection:
    """A golden set put onto a chunking: each query's :class:`Projected`, the chunking's size, the
    rule's ``min_overlap`` and ``min_grade``, and the golden set the projection makes (the grades
    decided, the written chunks' spans, the evidence carried over)."""

    queries: dict[str, Projected]
    chunks: int
    min_overlap: float
    min_grade: int
    golden: Qrels

    def totals(self, source: str) -> dict[str, int]:
        """Over the queries projected from ``source``: queries, chunks decided (relevant, not),
        holes, unjudged, evidence characters kept and in all."""
        chosen = [p for p in self.queries.values() if p.source == source]
        relevant = sum(1 for p in chosen for g in p.grades.values() if g >= self.min_grade)
        decided = sum(len(p.grades) for p in chosen)
        return {
            "queries": len(chosen),
            "decided": decided,
            "relevant": relevant,
            "irrelevant": decided - relevant,
            "holes": sum(len(p.holes) for p in chosen),
            "unjudged": sum(p.unjudged for p in chosen),
            "kept": sum(p.kept for p in chosen),
            "evidence_chars": sum(p.evidence_chars for p in chosen),
        }


@dataclass(frozen=True)
class EvidenceAtK:
    """One query's evidence measures over its top k chunks (#44 item 4), each with its
    denominator: ``recall = shared / evidence`` (the evidence's characters the top k cover),
    ``precision = shared / retrieved`` (the top k's characters that are evidence) and ``iou =
    shared / (evidence + retrieved - shared)``. Characters are counted once: the top k's are the
    union of its chunks (two overlapping chunks do not count their shared characters twice), the
    evidence's the union of its spans with grade >= min_grade. A measure whose denominator is 0 is
    None (undefined), never 0."""

    shared: int
    evidence: int
    retrieved: int

    @property
    def recall(self) -> float | None:
        return self.shared / self.evidence if self.evidence else None

    @property
    def precision(self) -> float | None:
        return self.shared / self.retrieved if self.retrieved else None

    @property
    def iou(self) -> float | None:
        union = self.evidence + self.retrieved - self.shared
        return self.shared / union if union else None


def evidence_at_k(evidence: Sequence[Evidence], top: Sequence[ChunkSpan], min_grade: int) -> EvidenceAtK:
    """The characters the top chunks and the relevant evidence share, and each one's total (above)."""
    docs = {c.doc for c in top} | {e.doc for e in evidence if e.grade >= min_grade}
    shared = spans_total = retrieved = 0
    for doc in docs:
        spans = merged((e.start, e.end) for e in evidence if e.doc == doc and e.grade >= min_grade)
        cover = merged((c.start, c.end) for c in top if c.doc == doc)
        spans_total += sum(end - start for start, end in spans)
        retrieved += sum(end - start for start, end in cover)
        shared += sum(overlap(s, e, cs, ce) for s, e in spans for cs, ce in cover)
    return EvidenceAtK(shared, spans_total, retrieved)
