"""``metrics --judge-labels`` over a run file read in pieces, as the metrics read it (issue #42,
item 1): each batch of whole queries (:class:`calibration.metrics_grouped.QueryBatches`, checked by :class:`calibration.top_k.Grouped`) is sorted once
(``Run.memo``), gives its queries' top k from that sort, and is scored three ways against those
queries' grades (:func:`calibration.holes.scoring.query_scores`); the batches' figures are merged
once the file is read. Each query's figures read only its own grades and ranking, so they are a
whole read's (``tests/test_holes_streamed.py``); memory is a piece, a batch and the per-query
figures. A run file that is not grouped by query, or not a clean TREC run, is left to the whole
read (None)."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from annotation.formats.columnar import NotStreamable, lean_pieces
from annotation.hole_sample import HoleSample
from annotation.model import Qrels, Run
from calibration.holes.scoring import HoleScores, query_scores
from calibration.inputs import ENGINE_THREADS, PathLike
from calibration.metrics import Gain, top_ranked
from calibration.metrics_grouped import NotGrouped, QueryBatches
from calibration.run_file import RUN_COLUMNS
from calibration.top_k import Grouped

__all__ = ["StreamedScores", "sample_holes", "streamed_scores"]


@dataclass
class StreamedScores:
    """A run file scored batch by batch: every query's top ``depth`` (bytewise order of queries),
    and per cutoff the batches' :class:`HoleScores` with the sampled holes they found no people's
    grade for (to merge, check and correct once the file is read)."""

    ranked: dict[str, list[str]]
    parts: dict[int, list[HoleScores]] = field(default_factory=dict)
    missing: dict[int, int] = field(default_factory=dict)


def sample_holes(
    sample: HoleSample,
    rankings: Sequence[Mapping[str, Sequence[str]]],
    queries: Collection[str] | None = None,
) -> dict[str, list[str]]:
    """Per query the hole sample names (of ``queries`` only, when given), its listed holes that
    are in some run's top ``sample.k`` (``rankings``: every run the sample serves); a chunk the
    file names outside them is no hole, and is ignored."""
    holes: dict[str, list[str]] = {}
    for qid, listed in sample.holes.items():
        if queries is not None and qid not in queries:
            continue
        top = {d for ranked in rankings for d in ranked.get(qid, ())[: sample.k]}
        holes[qid] = [d for d in listed if d in top]
    return holes


def streamed_scores(
    qrels: Qrels,
    path: PathLike,
    ks: Sequence[int],
    depth: int,
    judge: Qrels,
    *,
    min_grade: int,
    gain: Gain,
    sample: HoleSample | None,
    holes: Mapping[str, Sequence[str]] | None = None,
) -> StreamedScores | None:
    """The run file at ``path`` scored batch by batch at every cutoff of ``ks``, its top ``depth``
    kept; None when it is not a clean TREC run grouped by query (read it whole). ``holes``: per
    sampled query the sample's holes that count (:func:`sample_holes` over every run the sample
    serves: ``compare``'s two); None: those in this run's top ``sample.k``."""
    if str(path).lower().endswith(".jsonl"):
        return None
    grades, judged = qrels.grades, judge.grades
    people = sample.grades if sample is not None else {}
    out = StreamedScores(ranked={}, parts={k: [] for k in ks}, missing=dict.fromkeys(ks, 0))
    try:
        with ThreadPoolExecutor(max_workers=ENGINE_THREADS) as pool:
            grouped, batches = Grouped(), QueryBatches(lean_pieces(path, RUN_COLUMNS, ("r",), ("s",)))
            for batch in batches:
                run = Run(table=batch)
                # the batch sorted once (Run.memo): its top k read from the sort the scores share,
                # its queries too (checked against the batches before: the run grouped by query)
                top = top_ranked(run, depth, pool)
                grouped.check(top.keys(), batches.read)
                out.ranked.update(top)
                base = {qid: grades[qid] for qid in top if qid in grades}
                if base:
                    if sample is None:
                        listed: dict[str, list[str]] = {}
                    elif holes is None:
                        listed = sample_holes(sample, [top], base)
                    else:
                        listed = {qid: list(h) for qid, h in holes.items() if qid in base}
                    _score_batch(out, Qrels(grades=base), run, ks, judged, min_grade, gain, listed, people)
    except (NotGrouped, NotStreamable):
        return None
    out.ranked = {qid: out.ranked[qid] for qid in sorted(out.ranked, key=lambda q: q.encode("utf-8"))}
    return out


def _score_batch(
    out: StreamedScores,
    qrels: Qrels,
    run: Run,
    ks: Sequence[int],
    judge: Mapping[str, Mapping[str, int]],
    min_grade: int,
    gain: Gain,
    holes: Mapping[str, Sequence[str]],
    people: Mapping[str, Mapping[str, int]],
) -> None:
    """One batch of whole queries (``qrels`` and ``run`` cut to them; ``holes``: the sample's, of
    its queries) scored at every cutoff."""
    for k in ks:
        part, missing = query_scores(
            qrels, run, k=k, judge=judge, min_grade=min_grade, gain=gain, sample=holes, people=people
        )
        out.parts[k].append(part)
        out.missing[k] += missing
