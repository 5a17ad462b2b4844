"""The holes over files (:mod:`calibration.holes.scoring` read and written): the queries a run's holes are
found on (:func:`calibration.actions.holes` finds them and draws the sample people label), record the sample
as golden.yaml's ``sampling`` section, and score a run with a judge's labels on its holes and,
with a hole sample, the corrected figure (``metrics --judge-labels [--hole-sample]``).

The hole sample is a golden.yaml file. Its ``sampling`` section is the design ``pool --estimate``
writes, with one stratum per sampled query, ``holes``, that takes every hole of its top k (so
``size`` equals the number ``sampled``)::

    sampling:
      method: uniform random sample of queries, without replacement; every hole of ...
      design: {kind: holes, k: 10, seed: 0, population: 225, sample: 20, run: tfidf.run}
      queries:
        q_milk:
          holes: {size: 3, sampled: [s2, x1, x3]}
    queries:
    - id: q_milk
      text: How can I get more milk from my dairy cows?
      grades: {}

People's grades on those holes go in its ``grades`` (or in GOLDEN, once labelled in the app and
exported). Nothing in the file is trusted: the queries it names must be the ones its seed draws
from the queries GOLDEN and RUN share, or the sample is refused (a hand-picked sample is not a
random one, and the interval would not hold).
"""

from __future__ import annotations

import datetime
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from annotation.formats.by_extension import read_judgments, read_ranked
from annotation.formats.columnar import NotStreamable
from annotation.formats.golden import write_golden
from annotation.hole_sample import HOLE_SAMPLE, HoleSample, read_hole_sample
from annotation.model import Qrels, Run, SamplingDesign, Stratum
from annotation.rubrics import RELEVANCE
from calibration.errors import InvalidInput
from calibration.holes.scoring import (
    Corrected,
    HoleScores,
    HolesError,
    check_sample_queries,
    correct_scores,
    corrected_mean,
    merged_scores,
    refuse_unlabelled,
    sample_queries,
    score_with_holes,
)
from calibration.holes.streamed import StreamedScores, sample_holes, streamed_scores
from calibration.inputs import min_grade_of
from calibration.metrics import Gain, top_ranked
from calibration.metrics_grouped import NotGrouped
from calibration.results import (
    CheckReport,
    CorrectedFigure,
    FilledComparison,
    FilledDelta,
    FilledMean,
    FilledQuery,
    FilledReport,
    HoleSampleInfo,
    HolesReport,
    JudgeAgreement,
)
from calibration.stats.verdict import MIN_QUERIES
from calibration.top_k import query_batches, top_of_table

if TYPE_CHECKING:
    from calibration.stats.kappa import Weights

WEIGHTS: dict[str, Weights] = {"unweighted": None, "linear": "linear", "quadratic": "quadratic"}

__all__ = [
    "HOLE_SAMPLE_METHOD",
    "HoleSample",
    "check_holes",
    "compare_filled",
    "filled_data",
    "shared_queries",
    "read_hole_sample",
    "read_judge_labels",
    "write_hole_sample",
]

PathLike = str | os.PathLike[str]
HOLE_SAMPLE_METHOD = (
    "uniform random sample of queries, without replacement; every hole of a sampled query's top k "
    "is labelled (python -m calibration holes --sample N --seed S)"
)


def shared_queries(qrels: Qrels, *rankings: Mapping[str, Sequence[str]]) -> list[str]:
    """The queries the judgments and every run (its rankings) share, bytewise."""
    shared = set(qrels.grades)
    for ranked in rankings:
        shared &= set(ranked)
    return sorted(shared, key=lambda q: q.encode("utf-8"))


def write_hole_sample(report: HolesReport, qrels: Qrels, path: PathLike) -> None:
    """The report's sample as a golden.yaml file: the design in ``sampling``, the sampled queries
    (with their texts) and no grades yet: people's go there, or into GOLDEN."""
    info = report["sample"]
    if info is None:
        raise InvalidInput("--out writes the hole sample: give --sample N")
    design = SamplingDesign(
        queries={
            qid: (Stratum(name=HOLE_SAMPLE, size=len(holes), sampled=tuple(holes)),)
            for qid in info["queries"]
            for holes in [report["queries"][qid]["holes"]]
        },
        parameters={
            "kind": HOLE_SAMPLE,
            "k": report["k"],
            "seed": info["seed"],
            "population": info["population"],
            "sample": info["n"],
            "runs": list(report["runs"]),
            "judgments": report["judgments"],
        },
        method=HOLE_SAMPLE_METHOD,
    )
    sample = Qrels(
        grades={qid: {} for qid in info["queries"]},
        texts={qid: qrels.texts[qid] for qid in info["queries"] if qid in qrels.texts},
        meta={
            "name": "hole-sample",
            "description": (
                f"A uniform random sample of {info['n']} of the {info['population']} queries of "
                f"{' and '.join(report['runs'])} (seed {info['seed']}): people grade every hole of each one's top "
                f"{report['k']} ({info['holes']} chunks) so the judge-filled metric can be corrected."
            ),
            "created": datetime.date.today().isoformat(),
            "shown": "query text and chunk text only (no ranks, scores or retriever names)",
        },
        sampling=design,
    )
    write_golden(sample, path)
    info["file"] = str(path)


def _check_sample(sample: HoleSample, population: Sequence[str], k: int) -> None:
    """The sample is the one its seed draws from these queries, at a depth that covers k."""
    if k > sample.k:
        raise InvalidInput(
            f"{sample.path}: the sample's people label the holes of the top {sample.k}; -k {k} "
            f"needs the top {k} (draw a sample at -k {k})"
        )
    if len(population) != sample.population:
        raise InvalidInput(
            f"{sample.path}: drawn from {sample.population} queries, but the run and the judgments "
            f"share {len(population)} now: the sample no longer describes them (draw it again)"
        )
    drawn = sample_queries(population, len(sample.holes), sample.seed) if sample.holes else []
    if sorted(sample.holes, key=lambda q: q.encode("utf-8")) != drawn:
        raise InvalidInput(
            f"{sample.path}: its {len(sample.holes)} queries are not the ones seed {sample.seed} draws "
            f"from the {len(population)} queries the run and the judgments share; a sample picked by "
            "hand is not random, and its interval would not hold (draw it with python -m calibration holes)"
        )


def _agreement(
    people: Qrels, judge: Qrels, trusted: float, statistic: str, min_queries: int = MIN_QUERIES
) -> JudgeAgreement | None:
    """The judge against people on the chunks both graded: kappa, interval and verdict from
    :func:`calibration.stats.judged.judged_kappa`, as the review reads them (issue #39): clustered by
    the chunks' queries, no verdict below ``min_queries`` queries, on the relevance scale when the
    grades are on it (else every grade from the lowest to the highest seen), the draw unknown (a
    file's: the reason says the verdict assumes a random one) and the people behind the grades too.
    None when no chunk was graded by both."""
    judged = judge.grades  # (a property: read once, not per chunk)
    shared = [
        (qid, grade, judged[qid][doc])
        for qid, docs in people.grades.items()
        for doc, grade in docs.items()
        if doc in judged.get(qid, {})
    ]
    if not shared:
        return None
    # start-up: the clustered interval (scipy.special), only with a judge's labels
    from calibration.stats.agreement import plain_design
    from calibration.stats.judged import judged_kappa
    from calibration.stats.kappa import InvalidRatings, grade_range

    queries = [qid for qid, _, _ in shared]
    by_people = [person for _, person, _ in shared]
    by_judge = [machine for _, _, machine in shared]
    scale = list(RELEVANCE.scale)
    labels = (
        scale if all(g in scale for g in (*by_people, *by_judge)) else grade_range([*by_people, *by_judge])
    )
    try:
        result = judged_kappa(
            by_people,
            by_judge,
            queries,
            labels=labels,
            weights=WEIGHTS.get(statistic),
            bar=trusted,
            min_queries=min_queries,
        )
    except InvalidRatings as exc:
        return {
            "n": len(shared),
            "kappa": None,
            "kappa_ci": None,
            "verdict": "undefined",
            "advice": "",
            "reason": str(exc),
            "method": "",
            "item_level_ci": None,
            "design": {},
            "per_query": None,
            "population": "",
            "read": "once",
        }
    return {
        "n": result["n"],
        "kappa": result["kappa"],
        "kappa_ci": result["ci"],
        "verdict": result["verdict"],
        "advice": result["advice"],
        "reason": result["reason"],
        "method": result["method"],
        "item_level_ci": result["item_level_ci"],
        "design": plain_design(result["design"]),
        "per_query": cast(dict[str, Any] | None, result["per_query"]),
        "population": result["population"],
        "read": result["read"],
    }


def _figure(c: Corrected) -> CorrectedFigure:
    return {
        "estimate": c.estimate,
        "ci": list(c.ci) if c.ci else None,
        "lam": c.lam,
        "n": c.n,
        "population": c.population,
        "changed": c.changed,
        "human_only": c.human_only,
        "human_only_ci": list(c.human_only_ci) if c.human_only_ci else None,
        "without_judge": c.without_judge,
        "without_judge_ci": list(c.without_judge_ci) if c.without_judge_ci else None,
        "note": c.note,
    }


def _value(x: float) -> float | None:
    return None if x != x else float(x)  # NaN: undefined


def filled_data(
    qrels: Qrels,
    run: Run | PathLike,
    ks: Sequence[int],
    judge: Qrels,
    *,
    min_grade: int | None = None,
    gain: Gain = "linear",
    sample: HoleSample | None = None,
    run_name: str = "the run",
    qrels_name: str = "the judgments",
    judge_name: str = "the judge",
    trusted: float = 0.6,
    statistic: str = "unweighted",
    min_queries: int = MIN_QUERIES,
) -> list[FilledReport]:
    """``metrics --judge-labels``: per cutoff, the run scored with holes as not relevant, with the
    judge's grades on the holes, and (with ``sample``) the corrected figure with its interval.
    ``run``: a :class:`Run`, or a run file, read in pieces when it is a clean TREC run grouped by
    query (:mod:`calibration.holes.streamed`), else whole."""
    threshold = min_grade_of(qrels, min_grade)
    depth = _depth(ks, sample)
    streamed = None
    if not isinstance(run, Run):
        streamed = streamed_scores(
            qrels, run, ks, depth, judge, min_grade=threshold, gain=gain, sample=sample
        )
        run = read_ranked(run) if streamed is None else run
    # the top k only: from the file's pieces, or from the metrics' sort
    ranked = streamed.ranked if streamed is not None else top_ranked(cast(Run, run), depth)
    population = shared_queries(qrels, ranked)
    if not population:
        raise InvalidInput(f"{run_name} and {qrels_name} share no query")
    if sample is not None:
        for k in ks:
            _check_sample(sample, population, k)
    agreement = _agreement(_with_sample(qrels, sample), judge, trusted, statistic, min_queries)
    reports: list[FilledReport] = []
    for k in ks:
        if streamed is None:
            scores = _scores(qrels, cast(Run, run), [ranked], k, judge, threshold, gain, sample)
        else:
            scores = _merged_scores(qrels, streamed, k, sample)
        means: list[FilledMean] = []
        for name in scores.measures:
            pool_mean, pool_n = scores.mean("pool", name)
            filled_mean, filled_n = scores.mean("filled", name)
            corrected = scores.corrected.get(name)
            means.append(
                {
                    "measure": name,
                    "holes_as_not_relevant": pool_mean,
                    "holes_as_not_relevant_n": pool_n,
                    "judge_filled": filled_mean,
                    "judge_filled_n": filled_n,
                    "corrected": _figure(corrected) if corrected else None,
                }
            )
        sampled = set(scores.sampled)
        queries: dict[str, FilledQuery] = {}
        for i, qid in enumerate(scores.qids):
            queries[qid] = {
                "holes": len(scores.holes[qid].holes),
                "filled": int(scores.filled_count[i]),
                "filled_relevant": int(scores.filled_relevant[i]),
                "ungraded": int(scores.ungraded[i]),
                "rel": int(scores.rel[i]),
                "sampled": qid in sampled,
                "values": {
                    name: [
                        _value(scores.pool[name][i]),
                        _value(scores.filled[name][i]),
                        _value(scores.people[name][i]),
                    ]
                    for name in scores.measures
                },
            }
        reports.append(
            {
                "k": k,
                "run": run_name,
                "judgments": qrels_name,
                "judge": judge_name,
                "holes": int(sum(len(h.holes) for h in scores.holes.values())),
                "filled": int(scores.filled_count.sum()),
                "filled_relevant": int(scores.filled_relevant.sum()),
                "ungraded": int(scores.ungraded.sum()),
                "agreement": agreement,
                "means": means,
                "queries": queries,
                "sample": _sample_info(sample, scores),
            }
        )
    return reports


def _depth(ks: Sequence[int], sample: HoleSample | None) -> int:
    """How deep the holes read a ranking: the deepest cutoff, or the sample's k if deeper."""
    return max([*ks, sample.k if sample is not None else 1, 1])


def read_judge_labels(path: PathLike) -> tuple[Qrels, str]:
    """A judge's grades (TREC qrels or golden.yaml) and the name to say them by."""
    qrels = read_judgments(path)
    return qrels, Path(path).name


def _scores(
    qrels: Qrels,
    run: Run,
    rankings: Sequence[Mapping[str, Sequence[str]]],
    k: int,
    judge: Qrels,
    threshold: int,
    gain: Gain,
    sample: HoleSample | None,
    hint: str = "",
) -> HoleScores:
    """The run (``rankings[0]``) scored three ways; ``rankings``: every run the sample serves
    (compare: both), whose top k of the sample's depth bound which of its chunks count as holes."""
    holes = sample_holes(sample, rankings) if sample is not None else None
    try:
        return score_with_holes(
            qrels,
            run,
            k=k,
            judge=judge.grades,
            min_grade=threshold,
            gain=gain,
            sample=holes,
            people=sample.grades if sample else None,
            rankings=rankings[0],
        )
    except HolesError as exc:
        where = f"{sample.path}: " if sample else ""
        raise InvalidInput(f"{where}{exc}{hint if sample else ''}") from None


def _merged_scores(
    qrels: Qrels,
    streamed: StreamedScores,
    k: int,
    sample: HoleSample | None,
    hint: str = "",
    rankings: Sequence[Mapping[str, Sequence[str]]] | None = None,
) -> HoleScores:
    """The batches' figures at ``k`` merged, checked and corrected as :func:`_scores` gives them;
    ``rankings``: every run the sample serves (None: this one), as :func:`_scores`'s."""
    try:
        if sample is not None:
            served = rankings if rankings is not None else [streamed.ranked]
            check_sample_queries(sample_holes(sample, served), qrels.grades, streamed.ranked)
        refuse_unlabelled(streamed.missing[k], k)
        scores = merged_scores(streamed.parts[k])
        correct_scores(scores)
    except HolesError as exc:
        raise InvalidInput(f"{sample.path}: {exc}{hint}" if sample else str(exc)) from None
    return scores


class _TopOf:
    """A run file's top k per query, read in pieces (:func:`calibration.top_k.top_ranked_file`):
    what ``compare`` with a sample reads first, before the figures (a second read in pieces)."""

    def __init__(self, path: PathLike, ranked: dict[str, list[str]]) -> None:
        self.path, self.ranked = path, ranked


def _top_or_whole(path: PathLike, depth: int) -> Run | _TopOf:
    """A run file's top ``depth`` from a read in pieces when it is a clean grouped TREC run, else the
    run read whole."""
    if str(path).lower().endswith(".jsonl"):
        return read_ranked(path)
    out: dict[str, list[str]] = {}
    try:
        for batch in query_batches(path):
            out.update(top_of_table(batch, depth))
    except (NotGrouped, NotStreamable):
        return read_ranked(path)
    return _TopOf(path, {qid: out[qid] for qid in sorted(out, key=lambda q: q.encode("utf-8"))})


def _ranked(run: Run | PathLike | _TopOf, depth: int) -> dict[str, list[str]]:
    if isinstance(run, _TopOf):
        return run.ranked
    return top_ranked(run if isinstance(run, Run) else read_ranked(run), depth)


def _either(
    run: Run | PathLike | _TopOf,
    streamed: StreamedScores | None,
    rankings: Sequence[Mapping[str, Sequence[str]]],
    qrels: Qrels,
    k: int,
    judge: Qrels,
    threshold: int,
    gain: Gain,
    sample: HoleSample | None,
    hint: str,
) -> HoleScores:
    """One run of ``compare`` scored at ``k``: its batches merged (``streamed``), else the run in
    memory (``rankings``: its top k and the other run's, as :func:`_scores` reads them)."""
    if streamed is not None:
        return _merged_scores(qrels, streamed, k, sample, hint, rankings)
    whole = run if isinstance(run, Run) else read_ranked(run.path if isinstance(run, _TopOf) else run)
    return _scores(qrels, whole, rankings, k, judge, threshold, gain, sample, hint)


def _read_both(
    qrels: Qrels,
    run_a: Run | PathLike,
    run_b: Run | PathLike,
    ks: Sequence[int],
    depth: int,
    judge: Qrels,
    threshold: int,
    gain: Gain,
    sample: HoleSample | None,
) -> tuple[
    list[Run | PathLike | _TopOf], dict[int, StreamedScores], dict[str, list[str]], dict[str, list[str]]
]:
    """``compare``'s two runs read: each in memory, or a run file's batches scored in pieces
    (``streamed``, by position) when it is a clean grouped TREC run; and both top ``depth``s."""
    streamed: dict[int, StreamedScores] = {}
    runs: list[Run | PathLike | _TopOf] = [run_a, run_b]
    if sample is None:  # each file read once: its top k and its figures from the same pieces
        for i, run in enumerate(runs):
            if not isinstance(run, (Run, _TopOf)):
                found = streamed_scores(
                    qrels, run, ks, depth, judge, min_grade=threshold, gain=gain, sample=None
                )
                if found is None:
                    runs[i] = read_ranked(run)
                else:
                    streamed[i] = found
    else:
        runs = [run if isinstance(run, (Run, _TopOf)) else _top_or_whole(run, depth) for run in runs]
    ranked_a, ranked_b = (
        streamed[i].ranked if i in streamed else _ranked(run, depth) for i, run in enumerate(runs)
    )
    if sample is not None:  # the files in pieces now, the sample's holes bounded by both runs' top k
        listed = sample_holes(sample, [ranked_a, ranked_b])
        for i, run in enumerate(runs):
            if isinstance(run, _TopOf):
                found = streamed_scores(
                    qrels,
                    run.path,
                    ks,
                    depth,
                    judge,
                    min_grade=threshold,
                    gain=gain,
                    sample=sample,
                    holes=listed,
                )
                if found is None:
                    runs[i] = read_ranked(run.path)
                else:
                    streamed[i] = found
    return runs, streamed, ranked_a, ranked_b


def compare_filled(
    qrels: Qrels,
    run_a: Run | PathLike,
    run_b: Run | PathLike,
    ks: Sequence[int],
    judge: Qrels,
    *,
    min_grade: int | None = None,
    gain: Gain = "linear",
    sample: HoleSample | None = None,
    names: tuple[str, str] = ("run A", "run B"),
    qrels_name: str = "the judgments",
    judge_name: str = "the judge",
    trusted: float = 0.6,
    statistic: str = "unweighted",
    min_queries: int = MIN_QUERIES,
) -> list[FilledComparison]:
    """``compare --judge-labels``: per cutoff and measure, B - A with holes as not relevant, with
    the judge's grades on both runs' holes and (with a sample drawn over both runs) corrected, with
    its interval: the uncertainty of the holes' labels over these queries, not the query sample's
    (compare's paired tests say that). A run file is read in pieces when it is a clean TREC run
    grouped by query (:mod:`calibration.holes.streamed`; with a sample, once more first for its
    top k, which bounds the sample's holes in the other run), else whole."""
    threshold = min_grade_of(qrels, min_grade)
    depth = _depth(ks, sample)  # the top k only, from the metrics' sort
    both = " (a sample for compare is drawn over both runs: holes GOLDEN RUN_A RUN_B)"
    runs, streamed, ranked_a, ranked_b = _read_both(
        qrels, run_a, run_b, ks, depth, judge, threshold, gain, sample
    )
    population = shared_queries(qrels, ranked_a, ranked_b)
    if not population:
        raise InvalidInput(f"{names[0]}, {names[1]} and {qrels_name} share no query")
    if sample is not None:
        for k in ks:
            _check_sample(sample, population, k)
    agreement = _agreement(_with_sample(qrels, sample), judge, trusted, statistic, min_queries)
    out: list[FilledComparison] = []
    for k in ks:
        scored = (qrels, k, judge, threshold, gain, sample, both)
        a = _either(runs[0], streamed.get(0), [ranked_a, ranked_b], *scored)
        b = _either(runs[1], streamed.get(1), [ranked_b, ranked_a], *scored)
        rows_a = {q: i for i, q in enumerate(a.qids)}
        rows_b = {q: i for i, q in enumerate(b.qids)}
        shared = [q for q in population if q in rows_a and q in rows_b]
        ia = np.array([rows_a[q] for q in shared], dtype=np.int64)
        ib = np.array([rows_b[q] for q in shared], dtype=np.int64)
        sampled = set(a.sampled)
        in_sample = np.array([q in sampled for q in shared], dtype=bool)
        deltas: list[FilledDelta] = []
        for name in a.measures:
            pool = b.pool[name][ib] - a.pool[name][ia]
            filled = b.filled[name][ib] - a.filled[name][ia]
            people = b.people[name][ib] - a.people[name][ia]
            domain = ~np.isnan(pool)
            corrected = None
            if sample is not None:
                pick = domain & in_sample
                corrected = _figure(
                    corrected_mean(
                        people[pick],
                        filled[pick],
                        filled[domain],
                        anchor_sampled=pool[pick],
                        anchor_all=pool[domain],
                        bounds=(-1.0, 1.0),
                        both_ends=True,
                    )
                )
            deltas.append(
                {
                    "measure": name,
                    "holes_as_not_relevant": float(pool[domain].mean()) if domain.any() else None,
                    "judge_filled": float(filled[domain].mean()) if domain.any() else None,
                    "n": int(domain.sum()),
                    "corrected": corrected,
                }
            )
        out.append(
            {
                "k": k,
                "runs": list(names),
                "judgments": qrels_name,
                "judge": judge_name,
                "holes": [int(sum(len(h.holes) for h in s.holes.values())) for s in (a, b)],
                "filled": [int(s.filled_count.sum()) for s in (a, b)],
                "agreement": agreement,
                "deltas": deltas,
                "sample": _sample_info(sample, a),
            }
        )
    return out


def _with_sample(qrels: Qrels, sample: HoleSample | None) -> Qrels:
    """People's grades with those the hole sample holds: the judge's kappa is read on every chunk
    both graded, the sampled holes included (the judge's agreement where it fills)."""
    if sample is None or not sample.grades:
        return qrels
    grades = {q: dict(docs) for q, docs in qrels.grades.items()}
    for q, docs in sample.grades.items():
        grades.setdefault(q, {}).update(docs)
    return Qrels(grades=grades)


def _sample_info(sample: HoleSample | None, scores: HoleScores) -> HoleSampleInfo | None:
    if sample is None:
        return None
    return {
        "seed": sample.seed,
        "n": len(sample.holes),
        "population": sample.population,
        "queries": sorted(sample.holes, key=lambda q: q.encode("utf-8")),
        "holes": sum(len(hs) for hs in sample.holes.values()),
        "file": sample.path,
        "graded_by": list(sample.graded_by),
    }


def check_holes(
    report: CheckReport,
    qrels: Qrels,
    run: Run | PathLike,
    judge: Qrels,
    judge_name: str = "the judge",
    sample: HoleSample | None = None,
    *,
    run_name: str = "the run",
    qrels_name: str = "the judgments",
    min_queries: int = MIN_QUERIES,
) -> CheckReport:
    """``check --judge-labels``: the report's run at its k with the holes filled
    (:func:`filled_data`: a run file read in pieces when grouped by query), kept in ``holes``; per query ``filled_at_k``, the share of the top k the
    judge filled, beside ``judged_at_k`` (people's judgments, which the rules read). ``min_queries``:
    the queries the judge's verdict needs (the policy's)."""
    (filled,) = filled_data(
        qrels,
        run,
        [report["k"]],
        judge,
        min_grade=report["min_grade"],
        sample=sample,
        run_name=run_name,
        qrels_name=qrels_name,
        judge_name=judge_name,
        min_queries=min_queries,
    )
    for qid, q in report["queries"].items():
        row = filled["queries"].get(qid)
        if row is not None:
            q["filled_at_k"] = row["filled"] / report["k"]
    report["holes"] = filled
    return report
