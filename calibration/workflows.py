"""One function per action of the calibration package, used by every face.

The CLI (``python -m calibration``) and the Metrics page call these and only
render what they return, so the two can never answer the same question
differently. The defaults live here, once:

- ``k``: :data:`DEFAULT_K` (10) when none is given, on the page as in the CLI;
- the relevance threshold: :func:`min_grade_of`: the one given, else the
  label file's own ``min_grade`` (golden.yaml), else :data:`DEFAULT_MIN_GRADE` (1);
- the randomization test of a comparison: :data:`DEFAULT_PERMUTATIONS` sign
  flips, seed :data:`DEFAULT_SEED`;
- the agreement verdict's thresholds: :data:`TRUSTED` and :data:`NOISY`
  (``calibration.agreement``).

Errors are named: :class:`NothingToEvaluate` when no query of a run is in the
judgments, the readers' :class:`~annotation.model.FormatError` family for bad
files, :class:`InvalidInput` for inputs the pure modules refuse.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from annotation.formats import csv_numbers, read_csv_rows, read_judgments
from annotation.model import Qrels, Run
from calibration.audit import DEFAULT_MIN_JUDGED, DEFAULT_STAGE1_MIN, Gate, audit_run
from calibration.audit_estimate import estimate_run
from calibration.metrics import Evaluation, evaluate
from calibration.position import position_bias
from calibration.results import AuditReport
from calibration.verdict import NOISY, TRUSTED

DEFAULT_K = 10
DEFAULT_MIN_GRADE = 1
DEFAULT_PERMUTATIONS = 10_000
DEFAULT_SEED = 0
DEFAULT_BOOTSTRAP = 2000
# The engine hashes document ids in two threads while it sorts (calibration.metrics.evaluate);
# the workflow owns them, the pure module only uses what it is handed.
ENGINE_THREADS = 2

PathLike = str | os.PathLike


class NothingToEvaluate(ValueError):
    """No query of the run is in the judgments: there is nothing to score."""


class InvalidInput(ValueError):
    """An input a computation refuses (too few items, a label off the scale), said in one line
    that names the file."""


def min_grade_of(qrels: Qrels, given: int | None = None) -> int:
    """The relevance threshold: ``given``, else the label file's ``min_grade``, else 1."""
    if given is not None:
        return given
    return int(qrels.meta.get("min_grade", DEFAULT_MIN_GRADE))


def cutoffs(ks: Sequence[int] | None) -> list[int]:
    """The cutoffs asked for, else ``[DEFAULT_K]``."""
    return list(ks) if ks else [DEFAULT_K]


# ---------------------------------------------------------------- metrics


def evaluate_run(
    qrels: Qrels,
    run: Run,
    ks: Sequence[int] | None = None,
    min_grade: int | None = None,
    *,
    missing: str = "drop",
    gain: str = "linear",
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
    if not result.evaluated.any():
        raise NothingToEvaluate(
            f"no query of {run_name} is in {qrels_name}: nothing to {action}"
            + (f" (run has {result.not_in_qrels} queries without judgments)" if action == "evaluate" else "")
        )
    return result


# ---------------------------------------------------------------- audit


def audit_data(
    qrels: Qrels,
    run: Run,
    k: int | None = None,
    min_grade: int | None = None,
    *,
    fetch_run: Run | None = None,
    fetch_depth: int | None = None,
    corpus_size: int | None = None,
    corpus_ids: set[str] | None = None,
    truth: Qrels | None = None,
    gates: Sequence[Gate] = (),
    min_judged: float = DEFAULT_MIN_JUDGED,
    stage1_min: float = DEFAULT_STAGE1_MIN,
    run_name: str = "the run",
    qrels_name: str = "the judgments",
) -> AuditReport:
    """The audit at one cutoff (default :data:`DEFAULT_K`) with the shared threshold rule."""
    with ThreadPoolExecutor(max_workers=ENGINE_THREADS) as pool:
        result = audit_run(
            qrels,
            run,
            k or DEFAULT_K,
            min_grade=min_grade_of(qrels, min_grade),
            fetch_run=fetch_run,
            fetch_depth=fetch_depth,
            corpus_size=corpus_size,
            corpus_ids=corpus_ids,
            truth=truth,
            gates=gates,
            min_judged=min_judged,
            stage1_min=stage1_min,
            executor=pool,
        )
    if not result["queries"]:
        raise NothingToEvaluate(f"no query of {run_name} is in {qrels_name}: nothing to audit")
    return result


def estimate_data(
    labels: Qrels,
    run: Run,
    report: dict[str, Any],
    *,
    interval: str = "midp",
    on_query: Callable[[int, int], None] | None = None,
) -> dict[str, Any]:
    """What the labels missed, estimated from the label file's sample (``audit --estimate``),
    at the audit's own k and threshold; it adds ``labels_incomplete_estimated`` to ``report``."""
    return estimate_run(
        labels, run, report["k"], report["min_grade"], report, on_query=on_query, interval=interval
    )


# ---------------------------------------------------------------- compare


@dataclass
class Comparison:
    """Two runs on the same judgments: per measure the paired test, per query B - A."""

    min_grade: int
    ks: list[int]
    permutations: int
    seed: int
    measures: dict[str, dict[str, Any]] = field(default_factory=dict)
    queries: dict[str, dict[str, float | None]] = field(default_factory=dict)


def compare_runs(
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
    where it is defined for both (``calibration.significance.paired_test``) and per query B - A
    (None where either is undefined)."""
    from calibration.significance import (
        paired_test,  # start-up: scipy, ~0.6 s that metrics and audit never need
    )

    grade = min_grade_of(qrels, min_grade)
    a, b = (
        evaluate_run(qrels, run, ks, grade, run_name=name, qrels_name=qrels_name, action="compare")
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
    return Comparison(grade, cutoffs(ks), permutations, seed, tests, deltas)


# ---------------------------------------------------------------- agreement, position, PPI


def agree_files(
    labels_csv: PathLike | None = None,
    qrels_pair: Sequence[PathLike] | None = None,
    *,
    bootstrap: int = DEFAULT_BOOTSTRAP,
    seed: int = DEFAULT_SEED,
    trusted: float = TRUSTED,
    noisy: float = NOISY,
) -> dict[str, Any]:
    """Every pair of raters of a long CSV (``item,rater,label``), or of two qrels files (raters
    named after the files): ``calibration.agreement.agreement_report``."""
    from calibration.agreement import InvalidRatings, agreement_report  # start-up: scikit-learn, ~1 s

    if bool(labels_csv) == bool(qrels_pair):
        raise InvalidInput("give LABELS.csv or two qrels files (one of them)")
    if qrels_pair:
        if len(qrels_pair) != 2:
            raise InvalidInput(f"two qrels files to compare; got {len(qrels_pair)}")
        if str(qrels_pair[0]) == str(qrels_pair[1]):
            raise InvalidInput("the two qrels files are the same file")
        rows = []
        for path in qrels_pair:
            qrels = read_judgments(path)
            rows += [(f"{q}\t{d}", str(path), g) for q, docs in qrels.grades.items() for d, g in docs.items()]
        where = " and ".join(map(str, qrels_pair))
    else:
        rows = [
            (r["item"], r["rater"], r["label"] or None)
            for _line, r in read_csv_rows(labels_csv or "", ["item", "rater", "label"])
        ]
        where = str(labels_csv)
    try:
        return agreement_report(rows, bootstrap=bootstrap, seed=seed, trusted=trusted, noisy=noisy)
    except InvalidRatings as exc:
        raise InvalidInput(f"{where}: {exc}") from None


POSITION_KEYS = (
    "n_pairs",
    "position_consistency",
    "primacy_rate",
    "recency_rate",
    "preference_fairness",
    "repetition_stability",
    "mean_preference_A",
)


def position_file(path: PathLike) -> dict[str, Any]:
    """Position bias of a CSV of pairwise judgments asked in both orders
    (``item,order,choice[,repeat]``): ``calibration.position.position_bias``."""
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


def ppi_files(
    labeled: PathLike, unlabeled: PathLike, *, alpha: float = 0.05, lam: float | None = None
) -> dict[str, Any]:
    """A mean by prediction-powered inference from ``human,judge`` and ``judge`` CSVs:
    ``calibration.ppi.ppi_report`` (PPI++ unless ``lam`` is given). When every value is 0 or 1
    (pass/fail), the Rogan-Gladen correction of the judge's pass rate by its tpr and tnr on the
    labelled items is added as ``rogan_gladen`` (percentile bootstrap CI, seed 0), a second
    estimate to hold the first against."""
    # start-up: scipy, ~0.6 s that metrics and audit never need
    from calibration.ppi import ppi_report, rogan_gladen_from_labels

    if not 0 < alpha < 1:
        raise InvalidInput(f"--alpha {alpha}; expected a number between 0 and 1")
    both = read_csv_rows(labeled, ["human", "judge"])
    judge_only = read_csv_rows(unlabeled, ["judge"])
    human, judge = csv_numbers(labeled, both, "human"), csv_numbers(labeled, both, "judge")
    judge_alone = csv_numbers(unlabeled, judge_only, "judge")
    try:
        result = ppi_report(human, judge, judge_alone, alpha=alpha, lam=lam)
        if all(v in (0.0, 1.0) for v in (*human, *judge, *judge_alone)):
            result["rogan_gladen"] = rogan_gladen_from_labels(
                human, judge, judge_alone, seed=DEFAULT_SEED, alpha=alpha
            )
        return result
    except ValueError as exc:  # too few items, a lambda off [0, 1]: the input, said in one line
        text = str(exc)
        where = unlabeled if "unlabeled" in text.lower() else labeled
        raise InvalidInput(f"{where}: {text}") from None
