"""The commands of ``python -m calibration``, one public function each, and nothing else public:
what the command line calls and what a page calls when it offers the same command, so the two
faces read the same evidence with the same defaults (sqlite-utils' CLI over its Python API).

Each takes what a face has parsed (label sets, runs, a store, the options as keywords, defaults
from :mod:`annotation.options`) and returns the result the face renders; files are read and text
is written by the faces. A test holds this module's public functions equal to the CLI's commands.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Literal, overload

import pyarrow.compute as pc

from annotation.formats.by_extension import read_ranked
from annotation.formats.csv_tables import csv_numbers, read_csv_rows
from annotation.formats.records import shared_text_keys
from annotation.model import Qrels, Run
from annotation.options import default
from calibration.audit import Gate
from calibration.errors import InvalidInput
from calibration.estimate.audit import estimate_run
from calibration.gate import (
    check_data,
    check_store,
    diff_checks,
    history_data,
    record_check,
    verdict_settings,
)
from calibration.hole_files import HoleSample, check_holes, compare_filled, filled_data, holes_data
from calibration.inputs import ALPHA, DEFAULT_PERMUTATIONS, DEFAULT_SEED, cutoffs
from calibration.metrics import Evaluation, Gain
from calibration.policy.rules import DEFAULT_POLICY, Policy
from calibration.provenance import pooled_from_this_run
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
    HolesReport,
    PositionReport,
    PPIReport,
    ReviewReport,
    ReviewSample,
)
from calibration.run_file import evaluate_run_file, file_scorer
from calibration.scorer import Scorer
from calibration.stats.position import position_bias
from calibration.stats.verdict import DEFAULT_OVERLAP, MIN_LABELS, MIN_QUERIES, SAMPLE_SIZE
from calibration.workflows import (
    agree_files,
    audit_data,
    compare_runs,
    evaluate_run,
)

if TYPE_CHECKING:  # the store is imported by the command that opens it (--help never loads it)
    from annotation.store import Store
    from calibration.planning import PlanEntry

__all__ = [
    "metrics",
    "holes",
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
    judge: Qrels | None = None,
    judge_name: str = "the judge",
    hole_sample: HoleSample | None = None,
    trusted: float | None = None,
    statistic: str | None = None,
) -> Evaluation | list[FilledReport]:
    """P@k, R@k, MRR, nDCG@k, MAP, Success@k of a run: a :class:`Run`, or a run file read in pieces
    when it is grouped by query (:func:`calibration.run_file.evaluate_run_file`).

    With ``judge`` (a judge's grades): the run's holes (its top-k chunks the judgments do not
    grade) filled with them, and with ``hole_sample`` the corrected figure with its interval
    (:func:`calibration.hole_files.filled_data`), one report per cutoff; the judge's agreement
    with people is read against ``trusted`` and ``statistic`` (default: the policy's)."""
    if judge is not None:
        if not isinstance(run, Run):
            raise TypeError("metrics with a judge's labels scores a Run in memory")
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
        return evaluate_run(
            qrels, run, ks, min_grade, missing=missing, gain=gain, run_name=run_name, qrels_name=qrels_name
        )
    return evaluate_run_file(
        qrels, run, ks, min_grade, missing=missing, gain=gain, grouped=grouped, qrels_name=qrels_name
    )


def holes(
    qrels: Qrels,
    runs: Sequence[tuple[str, Run]],
    k: int,
    *,
    sample: int | None = None,
    seed: int = default("holes_seed"),
    qrels_name: str = "the judgments",
) -> HolesReport:
    """The runs' top-k chunks the judgments do not grade, per query (several runs, named: their
    union, for ``compare``); with ``sample``, a uniform random sample of that many queries whose
    holes people label (:func:`calibration.hole_files.holes_data`; the face writes it with
    ``write_hole_sample``)."""
    return holes_data(qrels, runs, k, sample=sample, seed=seed, qrels_name=qrels_name)


def audit(
    qrels: Qrels,
    run: Run | PathLike,
    k: int | None = None,
    min_grade: int | None = None,
    *,
    fetch_run: Run | None = None,
    fetch_depth: int | None = None,
    corpus_size: int | None = None,
    corpus_ids: set[str] | None = None,
    truth: Qrels | None = None,
    gates: Sequence[Gate] = (),
    policy: Policy = DEFAULT_POLICY,
    min_judged: float | None = None,
    stage1_min: float | None = None,
    missing: str = "drop",
    run_name: str = "the run",
    qrels_name: str = "the judgments",
    text_keys: Mapping[str, str] | None = None,
    same_text: Mapping[str, list[list[str]]] | None = None,
) -> AuditReport:
    """The denominators of one run at one cutoff (:func:`calibration.workflows.audit_data`): a
    :class:`Run`, or a run file read in pieces when it is grouped by query (read whole with
    ``text_keys``: comparing texts needs each query's ranking). The report's ``provenance`` says
    when golden.yaml's provenance pooled every label from this run (:func:`pooled_from_this_run`)."""
    if text_keys is not None and not isinstance(run, Run):
        run = read_ranked(run)
    claim = pooled_from_this_run(qrels, run)
    return audit_data(
        qrels,
        _readable(run),
        k,
        min_grade,
        fetch_run=fetch_run,
        fetch_depth=fetch_depth,
        corpus_size=corpus_size,
        corpus_ids=corpus_ids,
        truth=truth,
        gates=gates,
        policy=policy,
        min_judged=min_judged,
        stage1_min=stage1_min,
        missing=missing,
        run_name=run_name,
        qrels_name=qrels_name,
        text_keys=text_keys,
        same_text=same_text,
        provenance=claim,
    )


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
    ``hole_sample``, corrected (:func:`calibration.hole_files.check_holes`): the report's ``holes``
    and, per query, ``filled_at_k`` beside ``judged_at_k``, which still counts people's judgments
    only (the rules read people's evidence; the judge's fill is said, never counted as judged).
    ``min_queries``: the queries a judge verdict needs, overriding the policy's (None: the policy's)."""
    if min_queries is not None:
        policy = replace(policy, min_queries=min_queries)
    path = store_path or check_store(db, no_store=no_store)
    # the holes, and texts compared (text_keys), need all of it
    needs_whole = judge is not None or text_keys is not None
    whole = run if isinstance(run, Run) or not needs_whole else read_ranked(run)
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
        report = check_data(qrels, _readable(whole), k, min_grade, policy=policy, store_reason=why, **inputs)
        if judge is None:
            return report
        assert isinstance(whole, Run)
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
        report = check_data(qrels, _readable(whole), k, min_grade, policy=policy, store=store, **inputs)
        if judge is not None:
            assert isinstance(whole, Run)
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
    return record_check(store, report, name, qrels, run_digest)


@overload
def history(store: Store, *, name: str | None = None, diff: None = None) -> list[HistoryRow]: ...
@overload
def history(store: Store, *, name: str | None = None, diff: tuple[int, int]) -> CheckDiff: ...
def history(
    store: Store, *, name: str | None = None, diff: Sequence[int] | None = None
) -> list[HistoryRow] | CheckDiff:
    """The recorded checks of ``name`` (or all), or two of them per query (``diff``: two ids)."""
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
    run_a: Run,
    run_b: Run,
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
    run_a: Run,
    run_b: Run,
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
    """Two runs on the same judgments (:func:`calibration.workflows.compare_runs`: a paired
    randomization test of ``permutations`` sign flips seeded ``seed``). With ``judge`` (a judge's
    grades): B - A with the holes filled, and with ``hole_sample`` corrected with its interval
    (:func:`calibration.hole_files.compare_filled`; ``trusted`` and ``statistic``: the verdict's bar
    and statistic, None: the default policy's)."""
    if judge is None:
        return compare_runs(
            qrels,
            run_a,
            run_b,
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
) -> AgreementReport:
    """Agreement between every pair of raters, the verdict's bar and statistic resolved once
    (:func:`calibration.gate.verdict_settings`); ``sequential``: the file order is the
    labelling order and each verdict is the confidence sequence's (issue #39). ``min_queries``: the
    queries a verdict needs where the labels carry one (None: the policy's); ``rubric``: the rubric
    read from an annotation export holding several."""
    bar, chosen = verdict_settings(policy, trusted, statistic)
    return agree_files(
        labels_csv,
        qrels_pair,
        trusted=bar,
        statistic=chosen,
        sequential=sequential,
        min_queries=policy.min_queries if min_queries is None else min_queries,
        rubric=rubric,
    )


def position(path: PathLike) -> PositionReport:
    """Position bias of a CSV of pairwise judgments asked in both orders
    (``item,order,choice[,repeat]``): ``calibration.stats.position.position_bias``."""
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
    (pass/fail), the Rogan-Gladen correction of the judge's pass rate by its tpr and tnr on the
    labelled items is added as ``rogan_gladen`` (percentile bootstrap CI, seed 0), a second
    estimate to hold the first against."""
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
            result["rogan_gladen"] = rogan_gladen_from_labels(
                human, judge, judge_alone, seed=DEFAULT_SEED, alpha=alpha
            )
        return result
    except ValueError as exc:  # too few items, a lambda off [0, 1]: the input, said in one line
        text = str(exc)
        where = unlabeled if "unlabeled" in text.lower() else labeled
        raise InvalidInput(f"{where}: {text}") from None


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
    # start-up: the planning model (scipy), only for this command
    from calibration.planning import pilot_from_file, pilot_from_store, plan_pilots

    bar, chosen = verdict_settings(policy, trusted, statistic)
    if isinstance(pilot, (str, os.PathLike)):
        pilots = [pilot_from_file(pilot, judge=judge, rubric=rubric)]
    else:
        pilots = [p for p in pilot_from_store(pilot, judge=judge) if not rubric or p["rubric"] == rubric]
    return plan_pilots(pilots, designs, bar=bar, statistic=chosen, min_queries=min_queries)
