"""The commands of ``python -m calibration``, one public function each, and nothing else public:
what the command line calls and what a page calls when it offers the same command, so the two
faces read the same evidence with the same defaults (sqlite-utils' CLI over its Python API).

Each takes what a face has parsed (label sets, runs, a store, the options as keywords, defaults
from :mod:`annotation.options`) and returns the result the face renders; files are read and text
is written by the faces. A test holds this module's public functions equal to the CLI's commands.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Literal, overload

import annotation.arrow_compute as pc
from annotation.formats.by_extension import read_judgments, read_ranked
from annotation.formats.chunks import check_placements
from annotation.formats.records import shared_text_keys
from annotation.model import ChunkSpan, Qrels, Run
from annotation.options import default
from annotation.rubrics import KIND_OF_RUBRIC, candidate_value, get_rubric
from calibration.audit import Gate, audit_run, coverage_of, parse_gate, rule_bar, same_text_of, stage1_of
from calibration.errors import InvalidInput, NothingToCompare, NothingToEvaluate
from calibration.evidence import EvidenceRun, evidence_run
from calibration.inputs import (
    ALPHA,
    DEFAULT_K,
    DEFAULT_PERMUTATIONS,
    DEFAULT_SEED,
    ENGINE_THREADS,
    cutoffs,
    min_grade_of,
    refuse_nothing_evaluated,
)
from calibration.metrics import RR, Evaluation, Gain, Measure, evaluate, ranked_queries
from calibration.policy.rules import DEFAULT_POLICY, Policy, few_queries_note
from calibration.policy.rules import MIN_QUERIES as POLICY_QUERIES
from calibration.projection import (
    ChunkIndex,
    Projected,
    Projection,
    project_evidence,
    project_grades,
)
from calibration.results import (
    AgreementReport,
    AuditReport,
    CheckDiff,
    CheckReport,
    Comparison,
    EstimateReport,
    FilledComparison,
    FilledReport,
    HistoryRow,
    HoleRow,
    HoleSampleInfo,
    HolesReport,
    JudgeOutcome,
    PositionReport,
    PPIReport,
    ReviewReport,
    ReviewSample,
    SupersededOutcome,
)
from calibration.run_file import evaluate_run_file, file_scorer
from calibration.scorer import Scorer, run_scorer, scored_once
from calibration.stats.verdict import DEFAULT_OVERLAP, MIN_LABELS, MIN_QUERIES, SAMPLE_SIZE

if TYPE_CHECKING:  # the store is imported by the command that opens it (--help never loads it)
    from annotation.store import Store
    from calibration.holes.files import HoleSample
    from calibration.holes.scoring import HoleQuery
    from calibration.label_rows import LongRow
    from calibration.planning import PlanEntry
    from calibration.ranking_bound import RankingBound
    from calibration.stats.multirater import EncodedRows

__all__ = [
    "metrics",
    "holes",
    "stored_hole_sample",
    "audit",
    "estimate",
    "check",
    "record",
    "history",
    "compare",
    "agree",
    "position",
    "ppi",
    "review",
    "draw_review_sample",
    "plan",
    "project",
    "evidence",
]

PathLike = str | os.PathLike[str]


@overload
def metrics(
    qrels: Qrels,
    run: Run | PathLike,
    ks: Sequence[int] | None = None,
    min_grade: int | None = None,
    *,
    missing: Literal["drop", "zero"] = "drop",
    gain: Gain = "linear",
    grouped: bool | None = None,
    run_name: str = "the run",
    qrels_name: str = "the judgments",
    corpus_size: int | None = None,
    corpus_ids: set[str] | None = None,
    judge: None = None,
) -> Evaluation: ...
@overload
def metrics(
    qrels: Qrels,
    run: Run | PathLike,
    ks: Sequence[int] | None = None,
    min_grade: int | None = None,
    *,
    missing: Literal["drop", "zero"] = "drop",
    gain: Gain = "linear",
    grouped: bool | None = None,
    run_name: str = "the run",
    qrels_name: str = "the judgments",
    corpus_size: int | None = None,
    corpus_ids: set[str] | None = None,
    judge: Qrels,
    judge_name: str = "the judge",
    hole_sample: HoleSample | None = None,
    trusted: float | None = None,
    statistic: str | None = None,
) -> list[FilledReport]: ...
def metrics(
    qrels: Qrels,
    run: Run | PathLike,
    ks: Sequence[int] | None = None,
    min_grade: int | None = None,
    *,
    missing: Literal["drop", "zero"] = "drop",
    gain: Gain = "linear",
    grouped: bool | None = None,
    run_name: str = "the run",
    qrels_name: str = "the judgments",
    corpus_size: int | None = None,
    corpus_ids: set[str] | None = None,
    judge: Qrels | None = None,
    judge_name: str = "the judge",
    hole_sample: HoleSample | None = None,
    trusted: float | None = None,
    statistic: str | None = None,
) -> Evaluation | list[FilledReport]:
    """P@k, R@k, MRR, nDCG@k, MAP, Success@k of a run: a :class:`Run`, or a run file read in pieces
    when it is grouped by query (:func:`calibration.run_file.evaluate_run_file`); with ``corpus_size``
    or ``corpus_ids``, each query's label coverage too (``Evaluation.coverage``: judged documents
    over the corpus; None where the corpus is not known).

    With ``judge`` (a judge's grades): the run's holes (its top-k chunks the judgments do not
    grade) filled with them, and with ``hole_sample`` the corrected figure with its interval
    (:func:`calibration.holes.files.filled_data`), one report per cutoff; the judge's agreement
    with people is read against ``trusted`` and ``statistic`` (default: the policy's)."""
    if judge is not None:  # a run file: read in pieces when grouped by query (filled_data)
        # start-up: the holes' family and the policy file's reader load for --judge-labels only
        from calibration.gate import verdict_settings
        from calibration.holes.files import filled_data

        bar, stat = verdict_settings(DEFAULT_POLICY, trusted, statistic)
        return filled_data(
            qrels,
            run,
            cutoffs(ks),
            judge,
            min_grade=min_grade,
            gain=gain,
            sample=hole_sample,
            run_name=run_name,
            qrels_name=qrels_name,
            judge_name=judge_name,
            trusted=bar,
            statistic=stat,
        )
    if isinstance(run, Run):
        result = _evaluate(
            qrels, run, ks, min_grade, missing=missing, gain=gain, run_name=run_name, qrels_name=qrels_name
        )
    else:
        result = evaluate_run_file(
            qrels, run, ks, min_grade, missing=missing, gain=gain, grouped=grouped, qrels_name=qrels_name
        )
    result.coverage = coverage_of(qrels, result.qids, corpus_size, corpus_ids)
    return result


def stored_hole_sample(store: Store, sample: HoleSample) -> HoleSample:
    """A hole sample with people's grades on its holes read from ``store``
    (:func:`calibration.stored.stored_hole_sample`): what the Metrics page's corrected figure reads
    and ``metrics|compare|check --hole-sample FILE --db DB`` read, one source for both (#43)."""
    # start-up: the store's label sets (sqlite-utils), only for a sample read from a store
    from calibration.stored import stored_hole_sample as from_store

    return from_store(store, sample)


def holes(
    qrels: Qrels,
    runs: Sequence[tuple[str, Run | PathLike]],
    k: int,
    *,
    sample: int | None = None,
    seed: int = default("holes_seed"),
    qrels_name: str = "the judgments",
) -> HolesReport:
    """The runs' top-k chunks the judgments do not grade, per query the judgments and every run share
    (several runs, named: their union, for ``compare``); with ``sample``, a uniform random sample of
    that many of the queries (seeded), whose holes people label (the face writes it with
    :func:`calibration.holes.files.write_hole_sample`). A run is a :class:`Run` or a run file (read
    in pieces when it is grouped by query: :func:`calibration.top_k.top_ranked_file`)."""
    # start-up: imported when this command runs, not by every command (#42 item 4)
    from calibration.holes.scoring import HolesError, sample_queries

    if not runs:
        raise InvalidInput("holes needs a run")
    if k < 1:
        raise InvalidInput(f"k {k}; expected a whole number >= 1")
    try:
        found = [_run_holes(qrels, run, k) for _, run in runs]
    except HolesError as exc:
        raise InvalidInput(str(exc)) from None
    per_run = [holes for holes, _ in found]
    population = sorted(set(qrels.grades).intersection(*(ranked for _, ranked in found)), key=str.encode)
    if not population:
        names = " and ".join(name for name, _ in runs)
        raise InvalidInput(f"{names} and {qrels_name} share no query: nothing has holes to find")
    rows: dict[str, HoleRow] = {}
    for qid in population:
        if len(per_run) == 1:  # one run's holes are distinct already (a repeat keeps its slot)
            union = list(per_run[0][qid].holes)
        else:
            union = list(dict.fromkeys(doc for holes in per_run for doc in holes[qid].holes))
        rows[qid] = {
            "holes": union,
            "judged": [holes[qid].judged for holes in per_run],
            "filled": [holes[qid].filled for holes in per_run],
            "share": [holes[qid].share for holes in per_run],
        }
    total = sum(len(row["holes"]) for row in rows.values())
    positions = k * len(rows) * len(runs)
    unjudged = sum(len(holes[qid].holes) for holes in per_run for qid in population)
    judged = sum(holes[qid].judged for holes in per_run for qid in population)
    filled = sum(holes[qid].filled for holes in per_run for qid in population)
    repeated = filled - judged - unjudged  # a repeat's slot: filled, neither judged nor a hole
    info: HoleSampleInfo | None = None
    if sample is not None:
        try:
            picked = sample_queries(population, sample, seed)
        except HolesError as exc:
            raise InvalidInput(str(exc)) from None
        info = {
            "seed": seed,
            "n": len(picked),
            "population": len(population),
            "queries": picked,
            "holes": sum(len(rows[q]["holes"]) for q in picked),
            "file": None,
            "graded_by": [],  # drawn, not yet graded
        }
    left_out: set[str] = set()
    shared = set(population)
    for _, ranked in found:
        left_out |= ranked - shared
    return {
        "k": k,
        "runs": [name for name, _ in runs],
        "judgments": qrels_name,
        "queries": rows,
        "n_queries": len(rows),
        "positions": positions,
        "holes": total,
        "unjudged_positions": unjudged,
        "judged_positions": judged,
        "filled_positions": filled,
        "repeated_positions": repeated,
        # the audit's judged@k: judged positions / the positions the rankings fill (an empty
        # position of a short ranking is not judged, nor is a repeated id's second slot)
        "judged_at_k": judged / filled if filled else None,
        "not_shared": len(left_out),
        "sample": info,
    }


def _run_holes(qrels: Qrels, run: Run | PathLike, k: int) -> tuple[dict[str, HoleQuery], set[str]]:
    """One run's holes at ``k`` per query it shares with ``qrels``, and the queries it ranks. A
    :class:`Run`'s from the sort and the judged rows the metrics share (``Run.memo``: a new k
    re-reads neither, only the holes made strings); a run file's from its pieces' top k."""
    # start-up: imported when this command runs, not by every command (#42 item 4)
    from calibration.holes.scoring import find_holes, holes_of
    from calibration.top_k import top_ranked_file

    if isinstance(run, Run):
        return find_holes(qrels, run, k), set(ranked_queries(run))
    ranked = top_ranked_file(run, k)
    return holes_of(qrels.grades, ranked, k), set(ranked)


def audit(
    qrels: Qrels,
    run: Run | PathLike | Scorer,
    k: int | None = None,
    min_grade: int | None = None,
    *,
    fetch_run: Run | None = None,
    fetch_depth: int | None = None,
    corpus_size: int | None = None,
    corpus_ids: set[str] | None = None,
    truth: Qrels | None = None,
    gates: Sequence[Gate | str] = (),
    policy: Policy = DEFAULT_POLICY,
    min_judged: float | None = None,
    stage1_min: float | None = None,
    missing: str = "drop",
    run_name: str = "the run",
    qrels_name: str = "the judgments",
    text_keys: Mapping[str, str] | None = None,
    same_text: Mapping[str, list[list[str]]] | None = None,
    provenance: str | None = None,
) -> AuditReport:
    """The audit at one cutoff (default :data:`DEFAULT_K`) with the shared threshold rule; the bars
    of ``low_judged_at_k`` and ``stage1_recall_low`` (and the ``stage1-recall`` gate) are the
    policy's rules, ``min_judged`` / ``stage1_min`` moving a bar with the rule's strictness kept.
    Stage 1 is :func:`stage1_of`'s (said in the report's ``stage1``). ``run``: a :class:`Run`, a run
    file (read in pieces when it is grouped by query; read whole with ``text_keys``: comparing texts
    needs each query's ranking), or a run file's :class:`~calibration.scorer.Scorer` already made
    (``calibration.run_file.file_scorer``, as ``check`` reads it once for the audit and the metrics).
    ``gates``: ``--fail-on`` rules, parsed or as written. ``text_keys`` (document id -> text key,
    ``annotation.formats.records.read_text_keys``; the run then a :class:`Run`) or ``same_text``
    (:func:`same_text_of`, already found): duplicates by text too, else by id only (the report's
    ``duplicates_by``). ``provenance``: what golden.yaml's provenance says of this run
    (:func:`calibration.provenance.pooled_from_this_run`), kept as the report's ``provenance``; None: read from ``run``, unless it is a scorer (then given
    by the caller that read the run)."""
    # start-up: imported when this command runs, not by every command (#42 item 4)
    from calibration.provenance import pooled_from_this_run

    k = k or DEFAULT_K
    if isinstance(run, (str, os.PathLike)):
        if text_keys is not None:
            run = read_ranked(run)
        elif provenance is None:
            provenance = pooled_from_this_run(qrels, run)
    if isinstance(run, Run) and provenance is None:
        provenance = pooled_from_this_run(qrels, run)
    run = _readable(run) if isinstance(run, (str, os.PathLike)) else run
    if same_text is None and text_keys is not None:
        same_text = same_text_of(run, text_keys, k)
    with ThreadPoolExecutor(max_workers=ENGINE_THREADS) as pool:
        result = audit_run(
            qrels,
            run,
            k,
            min_grade=min_grade_of(qrels, min_grade),
            fetch_run=fetch_run,
            fetch_depth=fetch_depth,
            corpus_size=corpus_size,
            corpus_ids=corpus_ids,
            truth=truth,
            gates=[g if isinstance(g, Gate) else parse_gate(g) for g in gates],  # --fail-on as written
            min_judged=rule_bar(policy, "judged_at_k", min_judged),
            stage1_min=rule_bar(policy, "stage1_recall", stage1_min),
            missing="zero" if missing == "zero" else "drop",
            executor=pool,
            own_depth=True,
            same_text=same_text,
        )
    if not result["queries"]:
        raise NothingToEvaluate.no_shared_query(run_name, qrels_name, "audit")
    result["stage1"] = stage1_of(k, fetch_run, fetch_depth, result["fetch_depth"])
    if provenance:
        result["provenance"] = provenance
    return result


def estimate(
    labels: Qrels,
    run: Run,
    report: AuditReport,
    *,
    interval: str = "midp",
    on_query: Callable[[int, int], None] | None = None,
) -> EstimateReport:
    """``audit --estimate``'s second step: what the labels missed, estimated from the label file's
    sample (``calibration.estimate``) at the audit's own k and threshold; adds
    ``labels_incomplete_estimated`` to ``report``, the audit it follows (the CLI and the page alike)."""
    # start-up: imported when this command runs, not by every command (#42 item 4)
    from calibration.estimate.audit import estimate_run

    return estimate_run(
        labels, run, report["k"], report["min_grade"], report, on_query=on_query, interval=interval
    )


def _readable(run: Run | PathLike) -> Run | Scorer:
    """A run in memory as it is; a run file as its scorer (read in pieces, :func:`file_scorer`)."""
    return run if isinstance(run, Run) else file_scorer(run)


def check(
    qrels: Qrels,
    run: Run | PathLike,
    k: int | None = None,
    min_grade: int | None = None,
    *,
    db: str | None = None,
    no_store: bool = False,
    store_path: str | None = None,
    record_as: str | None = None,
    run_digest: str = "",
    policy: Policy = DEFAULT_POLICY,
    judge: Qrels | None = None,
    judge_name: str = "the judge",
    hole_sample: HoleSample | None = None,
    min_queries: int | None = None,
    fetch_run: Run | None = None,
    fetch_depth: int | None = None,
    corpus_size: int | None = None,
    corpus_ids: set[str] | None = None,
    missing: str = "drop",
    run_name: str = "the run",
    qrels_name: str = "the judgments",
    text_keys: Mapping[str, str] | None = None,
) -> CheckReport:
    """The run held to the policy, reading the store by the one rule (:func:`calibration.gate.check_store`:
    ``db``, else ``$DENOMINATOR_DB``, else ``./denominator.db`` when it exists; ``no_store``: none);
    ``store_path``: a store the face has just created (``check --record`` on a missing file).
    ``record_as``: keep the report in that store under this run name (its id in ``recorded``).

    With ``judge`` (a judge's grades): the run's holes at k filled with them and, with
    ``hole_sample``, corrected (:func:`calibration.holes.files.check_holes`): the report's ``holes``
    and, per query, ``filled_at_k`` beside ``judged_at_k``, which still counts people's judgments
    only (the rules read people's evidence; the judge's fill is said, never counted as judged).
    ``min_queries``: the queries a judge verdict needs, overriding the policy's (None: the policy's)."""
    # start-up: imported when this command runs, not by every command (#42 item 4)
    from calibration.gate import check_store, record_check
    from calibration.holes.files import check_holes
    from calibration.provenance import pooled_from_this_run

    if min_queries is not None:
        policy = replace(policy, min_queries=min_queries)
    path = store_path or check_store(db, no_store=no_store)
    # texts compared (text_keys) need all of it; the holes read a run file in pieces (filled_data)
    whole = run if isinstance(run, Run) or text_keys is None else read_ranked(run)
    names = {"run_name": run_name, "qrels_name": qrels_name}
    inputs: dict[str, Any] = dict(
        fetch_run=fetch_run,
        fetch_depth=fetch_depth,
        corpus_size=corpus_size,
        corpus_ids=corpus_ids,
        missing=missing,
        text_keys=text_keys,
        provenance=pooled_from_this_run(qrels, whole),  # labels pooled from this run: said
        **names,
    )
    if path is None:
        why = "no store: --no-store" if no_store else None
        report = _check(qrels, _readable(whole), k, min_grade, policy=policy, store_reason=why, **inputs)
        if judge is None:
            return report
        return check_holes(
            report,
            qrels,
            whole,
            judge,
            judge_name,
            hole_sample,
            min_queries=policy.min_queries,
            **names,
        )
    # start-up: the store (sqlite-utils, ~0.3 s), only for a check that reads one
    from annotation.store import Store

    with Store(path) as store:
        if inputs.get("text_keys") is None:  # no --corpus: the store's chunk texts, when it holds them
            ids = pc.unique(whole.table["d"]).to_pylist() if isinstance(whole, Run) else store.chunk_ids()
            inputs["text_keys"] = shared_text_keys(store.chunk_texts(ids))
            if inputs["text_keys"] and not isinstance(whole, Run):  # two ids share a text: read it all
                whole = read_ranked(whole)
        report = _check(qrels, _readable(whole), k, min_grade, policy=policy, store=store, **inputs)
        if judge is not None:
            report = check_holes(
                report,
                qrels,
                whole,
                judge,
                judge_name,
                hole_sample,
                min_queries=policy.min_queries,
                **names,
            )
        if record_as is not None:
            report["recorded"] = record_check(store, report, record_as, qrels, run_digest)
    return report


def record(store: Store, report: CheckReport, name: str, qrels: Qrels, run_digest: str) -> int:
    """Keep a check's ``report`` in ``store`` under the run name ``name`` (what ``check --record``
    and the page's "Record this check" do): its id."""
    # start-up: imported when this command runs, not by every command (#42 item 4)
    from calibration.gate import record_check

    return record_check(store, report, name, qrels, run_digest)


@overload
def history(store: Store, *, name: str | None = None, diff: None = None) -> list[HistoryRow]: ...
@overload
def history(store: Store, *, name: str | None = None, diff: tuple[int, int]) -> CheckDiff: ...
def history(
    store: Store, *, name: str | None = None, diff: Sequence[int] | None = None
) -> list[HistoryRow] | CheckDiff:
    """The recorded checks of ``name`` (or all), or two of them per query (``diff``: two ids)."""
    # start-up: imported when this command runs, not by every command (#42 item 4)
    from calibration.gate import diff_checks, history_data

    if diff:
        return diff_checks(store, *diff)
    return history_data(store, name)


@overload
def compare(
    qrels: Qrels,
    run_a: Run,
    run_b: Run,
    ks: Sequence[int] | None = None,
    min_grade: int | None = None,
    *,
    judge: None = None,
    permutations: int = ...,
    seed: int = ...,
    names: tuple[str, str] = ...,
    qrels_name: str = ...,
) -> Comparison: ...
@overload
def compare(
    qrels: Qrels,
    run_a: Run | PathLike,
    run_b: Run | PathLike,
    ks: Sequence[int] | None = None,
    min_grade: int | None = None,
    *,
    judge: Qrels,
    names: tuple[str, str] = ...,
    qrels_name: str = ...,
    judge_name: str = ...,
    hole_sample: HoleSample | None = ...,
    gain: Gain = ...,
    trusted: float | None = ...,
    statistic: str | None = ...,
    min_queries: int = ...,
) -> list[FilledComparison]: ...
def compare(
    qrels: Qrels,
    run_a: Run | PathLike,
    run_b: Run | PathLike,
    ks: Sequence[int] | None = None,
    min_grade: int | None = None,
    *,
    judge: Qrels | None = None,
    permutations: int = DEFAULT_PERMUTATIONS,
    seed: int = DEFAULT_SEED,
    names: tuple[str, str] = ("run A", "run B"),
    qrels_name: str = "the judgments",
    judge_name: str = "the judge",
    hole_sample: HoleSample | None = None,
    gain: Gain = "linear",
    trusted: float | None = None,
    statistic: str | None = None,
    min_queries: int = MIN_QUERIES,
) -> Comparison | list[FilledComparison]:
    """Two runs on the same judgments (:func:`_compare_runs`: a paired randomization test of ``permutations`` sign flips seeded ``seed``). With ``judge`` (a judge's
    grades): B - A with the holes filled, and with ``hole_sample`` corrected with its interval
    (:func:`calibration.holes.files.compare_filled`; ``trusted`` and ``statistic``: the verdict's bar
    and statistic, None: the default policy's; a run file read in pieces when it is a clean TREC
    run grouped by query)."""
    # start-up: imported when this command runs, not by every command (#42 item 4)
    from calibration.gate import verdict_settings
    from calibration.holes.files import compare_filled

    if judge is None:
        return _compare_runs(
            qrels,
            run_a if isinstance(run_a, Run) else read_ranked(run_a),
            run_b if isinstance(run_b, Run) else read_ranked(run_b),
            ks,
            min_grade,
            permutations=permutations,
            seed=seed,
            names=names,
            qrels_name=qrels_name,
        )
    bar, stat = verdict_settings(DEFAULT_POLICY, trusted, statistic)
    return compare_filled(
        qrels,
        run_a,
        run_b,
        cutoffs(ks),
        judge,
        min_grade=min_grade,
        sample=hole_sample,
        trusted=bar,
        statistic=stat,
        names=names,
        qrels_name=qrels_name,
        judge_name=judge_name,
        gain=gain,
        min_queries=min_queries,
    )


def agree(
    labels_csv: PathLike | None = None,
    qrels_pair: Sequence[PathLike] | None = None,
    *,
    policy: Policy = DEFAULT_POLICY,
    trusted: float | None = None,
    statistic: str | None = None,
    sequential: bool = False,
    min_queries: int | None = None,
    rubric: str | None = None,
    store: Store | None = None,
) -> AgreementReport:
    """Agreement between every pair of raters, the verdict's bar and statistic resolved once
    (:func:`calibration.gate.verdict_settings`); ``sequential``: the file order is the
    labelling order and each verdict is the confidence sequence's (issue #39). ``min_queries``: the
    queries a verdict needs where the labels carry one (None: the policy's); ``rubric``: the rubric
    read from an annotation export holding several, or from ``store``.

    ``store`` (instead of the files): the people's current labels of one ``rubric`` (relevance when
    None), each person a rater, what the Agreement page shows and ``agree --db`` prints: the same
    rows ``annotation export --format csv`` writes, read the same way (each person's newest label of
    an item, in the order they were made; a pair's choice as the candidate it names), each item's
    query the one the review clusters by (:meth:`Store.item_queries`)."""
    # start-up: imported when this command runs, not by every command (#42 item 4)
    from calibration.gate import verdict_settings

    bar, chosen = verdict_settings(policy, trusted, statistic)
    return _agree_files(
        labels_csv,
        qrels_pair,
        trusted=bar,
        statistic=chosen,
        sequential=sequential,
        min_queries=policy.min_queries if min_queries is None else min_queries,
        rubric=rubric,
        store=store,
    )


def _people_labels(store: Store, rubric: str) -> tuple[list[LongRow], dict[str, str]]:
    """(item, person, grade) of the store's people on ``rubric``'s items, as :func:`agree` reads them
    from an export: every label row in the order it was made, each person's newest counting (a
    retraction: no grade), text as the CSV has it, a settlement's label left out (an admin's or a
    review's correction, made reading the others' grades); and {item: its query} (the review's)."""
    kind = KIND_OF_RUBRIC[get_rubric(rubric).name]
    settling = store.settlement_labels()  # given while reading the others' grades: no rating of its own
    newest: dict[tuple[str, str], int | None] = {}
    for row in store.label_history():
        if row[2] != kind or row[8] != rubric or row[0] in settling:
            continue
        key = (str(row[1]), row[7])
        newest.pop(key, None)  # the newest row's place in the order: the labelling order
        newest[key] = candidate_value(kind, row[9], row[12])
    rows: list[LongRow] = [(item, who, None if v is None else str(v)) for (item, who), v in newest.items()]
    labelled = {item for item, _ in newest}
    queries = {str(i): q for i, q in store.item_queries(kind).items() if q is not None and str(i) in labelled}
    return rows, queries


ProjectSource = Literal["evidence", "grades"]
# what a projected golden.yaml keeps of the file it came from: the sampling and the provenance name
# the old chunking's chunk ids, so they are left behind
_PROJECTED_META = ("name", "description", "judged_by", "shown", "created", "min_grade", "grade_scale")


def project(
    golden: Qrels,
    chunks: Sequence[ChunkSpan],
    *,
    from_chunks: Sequence[ChunkSpan] | None = None,
    min_overlap: float = default("min_overlap"),
    source: ProjectSource | None = None,
    min_grade: int | None = None,
    chunks_name: str = "the chunks file",
    from_chunks_name: str = "the chunks file the grades were made under",
) -> Projection:
    """The golden set put onto ``chunks`` (:mod:`calibration.projection`): per query from its
    evidence, or from its chunk grades (``source``; a query without the one is projected from the
    other). ``source`` None (the default) prefers the evidence; a ``source`` named that no query
    of the golden set holds is refused (:class:`InvalidInput`), never replaced by the other.
    Graded chunks are placed by ``from_chunks``, else by the file's ``chunks`` section; a graded
    chunk placed by neither is refused (:class:`InvalidInput`), never dropped. A chunk id the
    ``chunks`` section and ``chunks`` or ``from_chunks`` place differently is refused
    (:class:`~annotation.model.ChunksDisagree`)."""
    if not 0.0 <= min_overlap <= 1.0:
        raise InvalidInput(f"min_overlap {min_overlap}; expected a share between 0 and 1")
    name = golden.path or "the golden set"
    section = f"{name}'s chunks section"
    check_placements(
        golden.chunk_spans,
        section,
        from_chunks or (),
        from_chunks_name,
        "the chunks file of the chunking the grades were made under",
    )
    check_placements(
        golden.chunk_spans,
        section,
        chunks,
        chunks_name,
        "a chunking whose ids are not the graded chunking's (python -m annotation chunk names each "
        "chunking in its ids)",
    )
    if source == "grades" and not any(golden.grades.values()):
        raise InvalidInput(
            f"{name}: --source grades, but no query holds chunk grades (it holds evidence only); "
            "drop --source to project from the evidence"
        )
    if source == "evidence" and not any(golden.evidence.values()):
        raise InvalidInput(
            f"{name}: --source evidence, but no query holds evidence spans; drop --source to project "
            "from the chunk grades"
        )
    threshold = min_grade_of(golden, min_grade)
    index = ChunkIndex(chunks)
    spans = dict(golden.chunk_spans)
    spans.update((c.id, c) for c in from_chunks or ())
    queries: dict[str, Projected] = {}
    for qid in golden.qids:
        evidence, grades = golden.evidence.get(qid, []), golden.grades.get(qid, {})
        if evidence and (source != "grades" or not grades):
            queries[qid] = project_evidence(evidence, index, min_overlap, threshold)
            continue
        unplaced = next((chunk for chunk in grades if chunk not in spans), None)
        if unplaced is not None:
            raise InvalidInput(
                f"{golden.path or 'the golden set'}: query {qid!r:.60} grades chunk {unplaced!r:.60}, whose "
                "document and offsets are unknown; give the chunking it was graded under (--from-chunks "
                "A.jsonl) or a 'chunks' section"
            )
        queries[qid] = project_grades(grades, spans, index, evidence, threshold)
    written = {chunk for p in queries.values() for chunk in p.grades}
    projected = Qrels(
        grades={qid: p.grades for qid, p in queries.items()},
        texts=dict(golden.texts),
        meta={key: golden.meta[key] for key in _PROJECTED_META if key in golden.meta},
        evidence={qid: list(spans_) for qid, spans_ in golden.evidence.items()},
        chunk_spans={c.id: c for c in chunks if c.id in written},
    )
    return Projection(queries, index.total, min_overlap, threshold, projected)


def evidence(
    golden: Qrels,
    run: Run,
    chunks: Sequence[ChunkSpan],
    ks: Sequence[int] | None = None,
    min_grade: int | None = None,
    *,
    chunks_name: str = "the chunks file",
    missing: Literal["drop", "zero"] = "drop",
) -> EvidenceRun:
    """Evidence recall, precision and IoU at each cutoff of a run over its own chunking (``chunks``
    places its chunk ids), against the golden set's evidence (:mod:`calibration.evidence`): the step
    of ``metrics --evidence`` and ``compare --evidence``. A golden query the run does not answer is
    dropped and counted (``missing="drop"``), or retrieves nothing (``"zero"``), as in ``metrics``.
    A chunk id the golden set's ``chunks`` section places elsewhere than ``chunks`` does is refused
    (:class:`~annotation.model.ChunksDisagree`): the set's grades are of another chunking."""
    check_placements(
        golden.chunk_spans,
        f"{golden.path or 'the golden set'}'s chunks section",
        chunks,
        chunks_name,
        "the chunks file of the chunking the golden set grades (or a golden set without those ids)",
    )
    return evidence_run(
        golden,
        run,
        chunks,
        cutoffs(ks),
        min_grade_of(golden, min_grade),
        chunks_name=chunks_name,
        missing=missing,
    )


def position(path: PathLike) -> PositionReport:
    """Position bias of a CSV of pairwise judgments asked in both orders
    (``item,order,choice[,repeat]``): ``calibration.stats.position.position_bias``."""
    # start-up: imported when this command runs, not by every command (#42 item 4)
    from annotation.formats.csv_tables import read_csv_rows
    from calibration.stats.position import position_bias

    judgments = []
    for line, r in read_csv_rows(path, ["item", "order", "choice"], optional=("repeat",)):
        if r["order"] not in ("AB", "BA"):
            raise InvalidInput(f"{path}:{line}: order: {r['order']!r}; expected AB or BA")
        if r["choice"] not in ("A", "B", "tie", ""):
            raise InvalidInput(f"{path}:{line}: choice: {r['choice']!r}; expected A, B or tie")
        repeat = r.get("repeat") or "0"
        if not (repeat.isascii() and repeat.isdigit() and len(repeat) <= 9):
            raise InvalidInput(f"{path}:{line}: repeat: {repeat!r}; expected an integer >= 0")
        judgments.append(
            {"item": r["item"], "order": r["order"], "choice": r["choice"] or None, "repeat": int(repeat)}
        )
    try:
        return position_bias(judgments)
    except ValueError as exc:
        raise InvalidInput(f"{path}: {exc}") from None


def ppi(
    labeled: PathLike, unlabeled: PathLike, *, alpha: float = ALPHA, lam: float | None = None
) -> PPIReport:
    """A mean by prediction-powered inference from ``human,judge[,query_id]`` and ``judge[,query_id]``
    CSVs: ``calibration.stats.ppi.ppi_report`` (PPI++ unless ``lam`` is given). A ``query_id`` column
    gives each item's query: the intervals are then clustered by query (issue #39; a file without the
    column counts each of its items as its own query), and the report states the design. When every value is 0 or 1
    (pass/fail), the report is read as a pass rate, as the review reads one: PPI's interval cut to
    [0, 1] (``ci_uncut``: what it was, when the cut acted), the people-only figure Wilson's interval
    of their pass rate with ``n``, ``passes`` and ``how``; and the Rogan-Gladen correction of the
    judge's pass rate by its tpr and tnr on the labelled items is added as ``rogan_gladen``
    (percentile bootstrap CI, seed 0), a second estimate to hold the first against. Fewer labelled
    items than a judge verdict needs (``MIN_LABELS``) add ``few_labels``, a sentence."""
    # start-up: imported when this command runs, not by every command (#42 item 4)
    from annotation.formats.csv_tables import csv_numbers, read_csv_rows

    # start-up: scipy, ~0.6 s that metrics and audit never need
    from calibration.stats.ppi import ppi_report, rogan_gladen_from_labels

    if not 0 < alpha < 1:
        raise InvalidInput(f"--alpha {alpha}; expected a number between 0 and 1")
    both = read_csv_rows(labeled, ["human", "judge"], optional=("query_id",))
    judge_only = read_csv_rows(unlabeled, ["judge"], optional=("query_id",))
    human, judge = csv_numbers(labeled, both, "human"), csv_numbers(labeled, both, "judge")
    judge_alone = csv_numbers(unlabeled, judge_only, "judge")
    try:
        result = ppi_report(
            human,
            judge,
            judge_alone,
            alpha=alpha,
            lam=lam,
            clusters_labeled=_queries(labeled, both),
            clusters_unlabeled=_queries(unlabeled, judge_only),
        )
        if all(v in (0.0, 1.0) for v in (*human, *judge, *judge_alone)):
            _as_pass_rate(result, human, judge, _queries(labeled, both), alpha)
            result["rogan_gladen"] = rogan_gladen_from_labels(
                human, judge, judge_alone, seed=DEFAULT_SEED, alpha=alpha
            )
        if result["n_labeled"] < MIN_LABELS:
            result["few_labels"] = (
                f"{result['n_labeled']} labelled items, fewer than the {MIN_LABELS} a judge needs before "
                "the review gives it a verdict (check uses a judge's corrected rate only once it is trusted): "
                "an interval from so few labels is a rough guide"
            )
        return result
    except ValueError as exc:  # too few items, a lambda off [0, 1]: the input, said in one line
        text = str(exc)
        where = unlabeled if "unlabeled" in text.lower() else labeled
        raise InvalidInput(f"{where}: {text}") from None


def _as_pass_rate(
    result: PPIReport, human: list[float], judge: list[float], queries: list[str] | None, alpha: float
) -> None:
    """Pass/fail labels: the report read as a pass rate, as the review reads one. PPI's normal
    interval cut to [0, 1] (``ci_uncut`` keeps what it was when the cut acted); the people-only
    figure the one interval of a pass rate (:func:`calibration.stats.pass_rate.people_pass_rate`,
    Wilson's, by query where the file gives one) with its counts; PPI held against that one."""
    # start-up: numpy and the PPI design's words, with the scipy this command has loaded already
    import numpy as np

    from calibration.stats.pass_rate import people_pass_rate, rate_interval
    from calibration.stats.ppi_design import weak_check

    cut = rate_interval(result["ci"])
    if cut != result["ci"]:
        result["ci_uncut"], result["ci"] = result["ci"], cut
    people = people_pass_rate([h == 1.0 for h in human], queries, alpha)
    result["human_only"] = {
        "estimate": people["estimate"],
        "ci": people["ci"],
        "n": people["n"],
        "passes": people["passes"],
        "how": people["how"],
    }
    checked = weak_check(np.asarray(human), np.asarray(judge), dict(result))
    result["correlation"], result["weak_threshold"] = checked["correlation"], checked["weak_threshold"]
    result["weak_note"], result["prefer"] = checked["weak_note"], checked["prefer"]


def _queries(path: PathLike, rows: list[tuple[int, dict[str, str]]]) -> list[str] | None:
    """The ``query_id`` of every row, or None when the file has no such column."""
    if not rows or "query_id" not in rows[0][1]:
        return None
    for number, row in rows:
        if row["query_id"] == "":
            raise InvalidInput(
                f"{path}:{number}: query_id: empty; expected the query the item was labelled under"
            )
    return [row["query_id"] for _, row in rows]


def review(
    store: Store,
    week: str | None = None,
    *,
    policy: Policy = DEFAULT_POLICY,
    trusted: float | None = None,
    statistic: str | None = None,
    min_labels: int = MIN_LABELS,
    sample: int | None = None,
    annotators: Sequence[str] = (),
    seed: int = default("review_seed"),
    overlap: float = DEFAULT_OVERLAP,
    save: bool = True,
    min_queries: int | None = None,
    face: str = "review",
) -> tuple[ReviewReport, ReviewSample | None]:
    """The weekly review (first drawing this week's sample of ``sample`` traces when asked; ``sample``
    0 or None: no draw), the verdict's bar and statistic resolved once; ``min_queries`` None: the
    policy's. ``face``: who reads the verdict (review, page), recorded with each look. Returns (report,
    the draw)."""
    # start-up: imported when this command runs, not by every command (#42 item 4)
    from calibration.gate import verdict_settings

    # start-up: the review's statistics (scikit-learn, scipy: ~1 s), only for this command
    from calibration.review import review as weekly_review

    bar, chosen = verdict_settings(policy, trusted, statistic)
    drawn = None
    if sample:
        drawn = draw_review_sample(store, week, n=sample, annotators=annotators, seed=seed, overlap=overlap)
    report = weekly_review(
        store,
        week,
        min_labels=min_labels,
        save=save,
        bar=bar,
        statistic=chosen,
        min_queries=policy.min_queries if min_queries is None else min_queries,
        face=face,
        stale_after_weeks=policy.stale_after_weeks,
    )
    return report, drawn


def draw_review_sample(
    store: Store,
    week: str | None = None,
    *,
    n: int = SAMPLE_SIZE,
    annotators: Sequence[str] = (),
    seed: int = default("review_seed"),
    overlap: float = DEFAULT_OVERLAP,
) -> ReviewSample:
    """This week's sample for the review, drawn and assigned (``review --sample N``'s first step;
    the Review page's "Draw" button): :func:`calibration.review_sample.draw_sample`."""
    # start-up: the review's statistics, only for this command
    from calibration.review import draw_sample

    return draw_sample(store, week, n=n, annotators=list(annotators), seed=seed, overlap=overlap)


def plan(
    pilot: Store | PathLike,
    designs: Sequence[tuple[int, int]],
    *,
    judge: str | None = None,
    rubric: str | None = None,
    policy: Policy = DEFAULT_POLICY,
    trusted: float | None = None,
    statistic: str | None = None,
    min_queries: int = 5,
) -> list[PlanEntry]:
    """Plan the labelling (issue #39): from a pilot (the store's judges and people so far, or a
    file of pairs), per design (queries x chunks per query) the expected kappa interval, its
    verdict at the bar and the labels to decide; ``judge`` picks one judge (a file: which
    annotator is on the judge's side), ``rubric`` one rubric. The bar and statistic resolved once."""
    # start-up: imported when this command runs, not by every command (#42 item 4)
    from calibration.gate import verdict_settings

    # start-up: the planning model (scipy), only for this command
    from calibration.planning import pilot_from_file, pilot_from_store, plan_pilots

    bar, chosen = verdict_settings(policy, trusted, statistic)
    if isinstance(pilot, (str, os.PathLike)):
        pilots = [pilot_from_file(pilot, judge=judge, rubric=rubric)]
    else:
        pilots = [p for p in pilot_from_store(pilot, judge=judge) if not rubric or p["rubric"] == rubric]
    return plan_pilots(pilots, designs, bar=bar, statistic=chosen, min_queries=min_queries)


# ---------------------------------------------------------------- the steps behind the commands
# (#41: calibration/workflows.py and gate's check folded in; private, each called by its action)


def _evaluate(
    qrels: Qrels,
    run: Run,
    ks: Sequence[int] | None = None,
    min_grade: int | None = None,
    *,
    missing: Literal["drop", "zero"] = "drop",
    gain: Gain = "linear",
    run_name: str = "the run",
    qrels_name: str = "the judgments",
    action: str = "evaluate",
) -> Evaluation:
    """``calibration.metrics.evaluate`` with the shared defaults; refuses a run that shares no
    query with the judgments (trec_eval too: "No queries with both results and relevance info"),
    saying what could not be done (``action``)."""
    with ThreadPoolExecutor(max_workers=ENGINE_THREADS) as pool:
        result = evaluate(
            qrels,
            run,
            ks=cutoffs(ks),
            min_grade=min_grade_of(qrels, min_grade),
            missing=missing,
            gain=gain,
            executor=pool,
        )
    refuse_nothing_evaluated(result, run_name, qrels_name, action)
    return result


def _check(
    qrels: Qrels,
    run: Run | Scorer,
    k: int | None = None,
    min_grade: int | None = None,
    *,
    policy: Policy = DEFAULT_POLICY,
    fetch_run: Run | None = None,
    fetch_depth: int | None = None,
    corpus_size: int | None = None,
    corpus_ids: set[str] | None = None,
    store: Store | None = None,
    store_reason: str | None = None,
    missing: str = "drop",
    run_name: str = "the run",
    qrels_name: str = "the judgments",
    text_keys: Mapping[str, str] | None = None,
    provenance: str | None = None,
) -> CheckReport:
    """``check``: the audit and the metrics of one run held to ``policy``; with a ``store``
    (:class:`annotation.store.Store`, chosen by :func:`check_store`) the faithfulness pass rate and
    each judge's calibration too. ``store_reason``: why there is none (said in the report).
    ``text_keys``: the chunks' text keys (the run then a :class:`Run`): ``no_duplicates`` reads
    ids of the same text too, else ids only (an empty mapping: the texts are known and none is
    shared, so the run need not be whole). The unjudged slots of each query's top are counted in
    the same read: could they lift a weak ranking? (:mod:`calibration.ranking_bound`). ``provenance``:
    what golden.yaml's provenance says of this run (:func:`calibration.provenance.pooled_from_this_run`):
    ``stage1_recall`` then says so."""
    # start-up: imported when this command runs, not by every command (#42 item 4)
    from calibration.policy.check import check_report
    from calibration.ranking_bound import rr_depth

    k = k or DEFAULT_K
    same_text = None if text_keys is None else (same_text_of(run, text_keys, k) if text_keys else {})
    with ThreadPoolExecutor(max_workers=ENGINE_THREADS) as pool:
        # one read of the run for the audit and the metrics (a run file: in pieces)
        # the unjudged slots of each query's top too: can they lift a weak ranking? (#40 item 10)
        depth = rr_depth(k, policy.diagnosis.rr)
        score = scored_once(
            run_scorer(run, pool) if isinstance(run, Run) else run, also_ks=(k, 20), also_unjudged=depth
        )
        report = audit(
            qrels,
            score,
            k,
            min_grade,
            fetch_run=fetch_run,
            fetch_depth=fetch_depth,
            corpus_size=corpus_size,
            corpus_ids=corpus_ids,
            policy=policy,
            missing=missing,
            run_name=run_name,
            qrels_name=qrels_name,
            same_text=same_text,
            provenance=provenance,
        )
        ev = score(
            qrels,
            sorted({k, 20}),
            report["min_grade"],
            missing="zero" if missing == "zero" else "drop",
            unjudged_depth=depth,
        )
    refuse_nothing_evaluated(ev, run_name, qrels_name)
    bounds = _ranking_bounds(qrels, ev, k, policy)
    if store is None:
        return check_report(
            report,
            ev,
            policy,
            store_reason=store_reason or "no store: ./denominator.db is not there; give --db",
            bounds=bounds,
        )
    faithfulness, judges, superseded = _store_rules(store, policy, set(qrels.grades))
    return check_report(
        report,
        ev,
        policy,
        faithfulness=faithfulness,
        judges=judges,
        superseded=superseded,
        store=_shown_location(store),
        bounds=bounds,
    )


def _ranking_bounds(qrels: Qrels, ev: Evaluation, k: int, policy: Policy) -> dict[str, RankingBound]:
    """Per query whose nDCG@k or RR is below the diagnosis bars, what the unjudged chunks of its
    top (``ev.unjudged_top``, counted in the same read) could make of them."""
    # start-up: imported when this command runs, not by every command (#42 item 4)
    from calibration.ranking_bound import ranking_bound

    d = policy.diagnosis
    ndcg, rr = ev.values[Measure("nDCG", k)], ev.values[RR]
    weak = {qid: i for i, qid in enumerate(ev.qids) if ndcg[i] < d.ndcg or rr[i] < d.rr}  # NaN: never
    if not weak:
        return {}
    top_grade = max((g for docs in qrels.grades.values() for g in docs.values()), default=ev.min_grade)
    top_grade = max(top_grade, ev.min_grade, 1)
    return {
        qid: ranking_bound(
            ev.unjudged_top.get(qid, []),
            qrels.grades.get(qid, {}),
            k,
            ev.min_grade,
            top_grade,
            _finite(rr[i]),
            _finite(ndcg[i]),
        )
        for qid, i in weak.items()
    }


def _finite(x: float) -> float | None:
    return None if math.isnan(x) else float(x)


def _shown_location(store: Store) -> str:
    """The store as the report names it (no credentials)."""
    # start-up: the store's package, already loaded by whoever opened ``store``
    from annotation.store import shown_location

    return shown_location(store.location)


def _store_rules(
    store: Store, policy: Policy, golden: set[str] | None = None
) -> tuple[list[JudgeOutcome], list[JudgeOutcome], list[SupersededOutcome]]:
    """The faithfulness pass rate (people: the consensus grade 2 of each labelled trace, Wilson
    95%; each trusted faithfulness judge: its PPI-corrected rate), every current judge's verdict, and
    the superseded versions (listed, not gated)."""
    # start-up: imported when this command runs, not by every command (#42 item 4)
    from calibration.policy.check import faithfulness_entry, judge_name, kappa_entry

    # start-up: the review's statistics (scikit-learn, scipy: ~1 s), only with a store
    from calibration.readings import verdicts
    from calibration.review import PASS, consensus, human_labels
    from calibration.stats.pass_rate import pass_rate_how, people_pass_rate

    bar_f = policy.bar("faithfulness")
    bar_k = policy.bar("kappa")
    report = verdicts(store, policy, "check", golden, "this golden set's queries")
    faithfulness: list[JudgeOutcome] = []
    if bar_f is not None:
        people = human_labels(store, "faithfulness")
        trace_queries = store.item_queries("trace")
        if golden is not None:  # the people's labels on this golden set's queries only (#40)
            people = {i: v for i, v in people.items() if trace_queries.get(i) in golden}
        in_scope = [i for i, q in trace_queries.items() if golden is None or q in golden]
        held = f"{len(in_scope)} traces" + (
            " of this golden set's queries" if golden is not None else " in the store"
        )
        if people:
            # one interval for a pass rate everywhere (#40, item 7): the review's people-only figure
            shared = people_pass_rate(
                [consensus(list(v.values()), "faithfulness") == PASS for v in people.values()],
                [trace_queries.get(i) for i in people],
            )
            faithfulness.append(
                faithfulness_entry(
                    "people",
                    shared["estimate"],
                    shared["ci"],
                    shared["n"],
                    bar_f,
                    pass_rate_how(shared, PASS),
                    policy.undecided,
                    unlabelled=(sum(1 for i in in_scope if i not in people), held),
                )
            )
        for judge in report["judges"]:
            rate = judge["pass_rate"]
            if (
                judge["rubric"] != "faithfulness"
                or judge["verdict"] != "trusted"
                or rate is None
                or rate.get("estimate") is None
            ):
                continue
            faithfulness.append(
                faithfulness_entry(
                    judge_name(judge),
                    rate["estimate"],
                    rate["ci"],
                    rate["n_labeled"] + rate["n_unlabeled"],
                    bar_f,
                    f"trusted judge, corrected by PPI from {rate['n_labeled']} labelled and "
                    f"{rate['n_unlabeled']} judge-only traces",
                    policy.undecided,
                    unlabelled=(
                        rate["n_unlabeled"],
                        f"{rate['n_labeled'] + rate['n_unlabeled']} traces the judge graded",
                    ),
                )
            )
    golden_queries = len(golden) if golden is not None else None
    judges = (
        [kappa_entry(j, bar_k, policy.undecided, golden_queries) for j in report["judges"]] if bar_k else []
    )
    superseded: list[SupersededOutcome] = [
        {
            **j,
            "judge": judge_name(j),
            "reason": "superseded by a later version of its name: listed, not gated",
        }
        for j in report["superseded"]
    ]
    for j in report["out_of_scope"]:  # no evidence about this run (#40): listed, not gated
        superseded.append(
            {
                **j,
                "judge": judge_name(j),
                "reason": "graded nothing of this golden set's queries: no evidence about this run, listed, not gated",
            }
        )
    return faithfulness, judges, superseded


def _compare_runs(
    qrels: Qrels,
    run_a: Run,
    run_b: Run,
    ks: Sequence[int] | None = None,
    min_grade: int | None = None,
    *,
    permutations: int = DEFAULT_PERMUTATIONS,
    seed: int = DEFAULT_SEED,
    names: tuple[str, str] = ("run A", "run B"),
    qrels_name: str = "the judgments",
) -> Comparison:
    """Score both runs, then per measure a paired randomization test and t-test over the queries
    where it is defined for both (``calibration.stats.significance.paired_test``) and per query B - A
    (None where either is undefined); each measure's ``unjudged``: the unjudged chunks in each
    run's top k and the interval of B - A as they are relevant or not (``calibration.unjudged``)."""
    # start-up: imported when this command runs, not by every command (#42 item 4)
    from calibration.stats.significance import (
        paired_test,  # start-up: scipy, ~0.6 s that metrics and audit never need
    )
    from calibration.unjudged import tops, unjudged_share

    grade = min_grade_of(qrels, min_grade)
    a, b = (
        _evaluate(qrels, run, ks, grade, run_name=name, qrels_name=qrels_name, action="compare")
        for run, name in zip((run_a, run_b), names)
    )
    if a.qids != b.qids:  # both are the judged queries, in the judgments' order
        raise NothingToEvaluate(f"{names[0]} and {names[1]} were scored over different queries")
    tests = {name: paired_test(a.values[name], b.values[name], permutations, seed) for name in a.measures}
    deltas: dict[str, dict[str, float | None]] = {}
    for i, qid in enumerate(a.qids):
        row: dict[str, float | None] = {}
        for name in a.measures:
            x, y = a.values[name][i], b.values[name][i]
            row[name] = None if x != x or y != y else float(y - x)
        deltas[qid] = row
    deepest = max(cutoffs(ks), default=0)
    top_a, top_b = (tops(run, deepest, qrels.grades, grade) for run in (run_a, run_b))
    shares = unjudged_share(qrels.grades, top_a, top_b, deltas, grade)
    for name in a.measures:
        if name in shares:
            tests[name]["unjudged"] = shares[name]
    relevant = sum(1 for qid in a.qids if any(g >= grade for g in qrels.grades.get(qid, {}).values()))
    notes = [few_queries_note(relevant)] if relevant < POLICY_QUERIES else []
    return Comparison(grade, cutoffs(ks), permutations, seed, tests, deltas, notes)


def _agree_files(
    labels_csv: PathLike | None = None,
    qrels_pair: Sequence[PathLike] | None = None,
    *,
    trusted: float,
    statistic: str,
    sequential: bool = False,
    min_queries: int = MIN_QUERIES,
    rubric: str | None = None,
    store: Store | None = None,
) -> AgreementReport:
    """Every pair of raters of a long CSV, of two qrels files (raters named after the files), or of
    the people of a ``store`` (:func:`agree`):
    ``calibration.stats.agreement.agreement_report``. ``sequential``: the rows' order (the CSV's, or
    the second qrels file's) is the labelling order.

    The CSV: ``item,rater,label`` with an optional ``query_id`` column, or the CSV ``annotation export
    --format csv`` writes (:func:`calibration.label_rows.long_labels`: each annotator's newest label of
    each item, of one ``rubric``). Where the labels carry a query (the query_id column, the qrels' query ids), each pair's
    interval is clustered by it and fewer than ``min_queries`` queries give no verdict (issue #39)."""
    # start-up: imported when this command runs, not by every command (#42 item 4)
    from calibration.label_rows import long_labels
    from calibration.stats.agreement import InvalidRatings, agreement_report  # start-up: scikit-learn, ~1 s

    if sum(map(bool, (labels_csv, qrels_pair, store is not None))) != 1:
        raise InvalidInput("give LABELS.csv, two qrels files or a store (one of them)")
    people: int | None = 2  # a CSV's pair: two raters; a qrels file may hold many people's grades
    queries: dict[Any, Any] | None
    rows: list[LongRow] | EncodedRows
    if store is not None:
        labelled, queries = _people_labels(store, rubric or "relevance")
        people = len({rater for _, rater, _ in labelled})
        rows = labelled
        where = f"the store's {rubric or 'relevance'} labels"
    elif qrels_pair:
        if rubric is not None:
            raise InvalidInput("--rubric reads an annotation export; two qrels files hold relevance grades")
        if len(qrels_pair) != 2:
            raise InvalidInput(f"two qrels files to compare; got {len(qrels_pair)}")
        if str(qrels_pair[0]) == str(qrels_pair[1]):
            raise InvalidInput("the two qrels files are the same file")
        graded: list[tuple[str, str, int | str | None]] = []
        queries = {}
        for path in qrels_pair:
            qrels = read_judgments(path)
            for q, docs in qrels.grades.items():
                for d, g in docs.items():
                    graded.append((f"{q}\t{d}", str(path), g))
                    queries[f"{q}\t{d}"] = q
        where = " and ".join(map(str, qrels_pair))
        people = None
        rows = graded
    else:
        rows, queries = long_labels(labels_csv or "", rubric)
        where = str(labels_csv)
    try:
        report = agreement_report(
            rows,
            trusted=trusted,
            statistic=statistic,
            sequential=sequential,
            queries=queries,
            min_queries=min_queries,
            people=people,
        )
    except InvalidRatings as exc:
        raise InvalidInput(f"{where}: {exc}") from None
    if qrels_pair:
        report = _files_in_given_order(report, [str(path) for path in qrels_pair])
    if not any(pair["n"] for pair in report["pairs"]):
        raise NothingToCompare(f"{where}: {_nothing_shared(report, bool(qrels_pair))}")
    return report


def _nothing_shared(report: AgreementReport, files: bool) -> str:
    """Why there is no agreement to measure: no item rated by two raters (one rater, or raters
    whose items do not meet), in one clause with the counts."""
    n, raters = report["n_items"], report["raters"]
    if files:
        return (
            f"no (query, chunk) is graded in both files ({n} graded in one only): "
            "nothing to compare; give two qrels of the same queries and chunks"
        )
    if len(raters) < 2:
        who = f"one rater ({raters[0]})" if raters else "no rater"
        return f"{n} items, {who}: agreement needs two raters who rated the same items"
    return (
        f"{n} items, {len(raters)} raters, and no item rated by two of them: "
        "agreement needs two raters who rated the same items"
    )


def _files_in_given_order(report: AgreementReport, names: list[str]) -> AgreementReport:
    """The report of two qrels files with the files as given (the table sorts raters by name): each
    pair's raters swapped where needed, its confusion matrix transposed with them (the kappas and
    their intervals do not depend on the order)."""
    report["raters"] = [r for r in names if r in report["raters"]]
    for pair in report["pairs"]:
        if [str(r) for r in pair["raters"]] == names[::-1]:
            pair["raters"] = list(reversed(pair["raters"]))
            if pair.get("confusion"):
                pair["confusion"] = [list(column) for column in zip(*pair["confusion"])]
    return report
