"""One function per action of the calibration package, used by every face.

The CLI (``python -m calibration``) and the Metrics page call these and only
render what they return, so the two can never answer the same question
differently. The defaults live here, once:

- ``k``: :data:`DEFAULT_K` (10) when none is given, on the page as in the CLI;
- the relevance threshold: :func:`min_grade_of`: the one given, else the
  label file's own ``min_grade`` (golden.yaml), else :data:`DEFAULT_MIN_GRADE` (1);
- the randomization test of a comparison: :data:`DEFAULT_PERMUTATIONS` sign
  flips, seed :data:`DEFAULT_SEED`;
- the agreement verdict's bar and statistic: :data:`TRUSTED`, :data:`DEFAULT_STATISTIC`
  (``calibration.agreement``).

Errors are named: :class:`NothingToEvaluate` when no query of a run is in the
judgments, the readers' :class:`~annotation.model.FormatError` family for bad
files, :class:`InvalidInput` for inputs the pure modules refuse.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import yaml

from annotation.formats import csv_numbers, read_csv_rows, read_judgments
from annotation.model import FormatError, Qrels, Run
from annotation.rubrics import DEFAULT_MIN_GRADE
from annotation.textio import read_text_file
from calibration.audit import Gate, audit_run, corpus_size_of, label_coverage
from calibration.audit_estimate import estimate_run
from calibration.check import check_report, faithfulness_entry, kappa_entry, wilson
from calibration.metrics import Evaluation, evaluate
from calibration.policy import (
    DEFAULT_POLICY,
    MIN_QUERIES,
    Bar,
    InvalidPolicy,
    Policy,
    few_queries_note,
    override,
    policy_from_mapping,
)
from calibration.position import position_bias
from calibration.results import AuditReport
from calibration.verdict import DEFAULT_STATISTIC, TRUSTED

DEFAULT_K = 10
DEFAULT_PERMUTATIONS = 10_000
DEFAULT_SEED = 0
# The engine hashes document ids in two threads while it sorts (calibration.metrics.evaluate);
# the workflow owns them, the pure module only uses what it is handed.
ENGINE_THREADS = 2

PathLike = str | os.PathLike
_NO_BAR = Bar(">=", float("-inf"))


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


def coverage_of(
    qrels: Qrels, qids: Sequence[str], corpus_size: int | None = None, corpus_ids: set[str] | None = None
) -> dict[str, float | None] | None:
    """Label coverage (judged documents / corpus size) of each query, as the audit counts it;
    None when the corpus size is not known ("coverage unknown", never a made-up figure)."""
    if corpus_size is None and corpus_ids is None:
        return None  # before qrels.grades: a dict of every judgment (0.1 s, 200 MB at 2M)
    size = corpus_size_of(qrels.grades, corpus_size, corpus_ids)
    if size is None:
        return None
    return {qid: label_coverage(qrels.grades.get(qid, {}), size, corpus_ids) for qid in qids}


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
    policy: Policy = DEFAULT_POLICY,
    min_judged: float | None = None,
    stage1_min: float | None = None,
    run_name: str = "the run",
    qrels_name: str = "the judgments",
) -> AuditReport:
    """The audit at one cutoff (default :data:`DEFAULT_K`) with the shared threshold rule; the bars
    of ``low_judged_at_k`` and ``stage1_recall_low`` (and the ``stage1-recall`` gate) are the
    policy's rules, ``min_judged`` / ``stage1_min`` moving a bar with the rule's strictness kept."""
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
            min_judged=_bar(policy, "judged_at_k", min_judged),
            stage1_min=_bar(policy, "stage1_recall", stage1_min),
            executor=pool,
        )
    if not result["queries"]:
        raise NothingToEvaluate(f"no query of {run_name} is in {qrels_name}: nothing to audit")
    return result


def _bar(policy: Policy, rule: str, value: float | None) -> Bar:
    """The policy's bar of ``rule``, at ``value`` when one is given (its strictness kept); a rule
    turned off never fires (a bar every figure meets)."""
    bar = policy.bar(rule)
    if bar is None:
        return _NO_BAR
    return bar if value is None else Bar(bar.op, value)


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


# ---------------------------------------------------------------- policy and check

POLICY_FILE = "denominator.yaml"


def load_policy(
    path: PathLike | None = None, overrides: Sequence[str] = (), *, cwd: PathLike = "."
) -> Policy:
    """The policy in force: ``path``, else ``./denominator.yaml`` when present, else the defaults
    (the essay's table); then the command line's ``overrides`` (``stage1_recall>0.9``)."""
    where = path if path is not None else os.path.join(cwd, POLICY_FILE)
    if path is None and not os.path.exists(where):
        policy = DEFAULT_POLICY
    else:
        text = read_text_file(where, PolicyFileError)
        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            line = f":{mark.line + 1}" if mark is not None else ""
            raise InvalidPolicy(f"{where}{line}: not valid YAML; expected corpus, rules, diagnosis") from None
        policy = policy_from_mapping(data, str(where))
    return override(policy, overrides)


def kappa_bar(policy: Policy) -> float:
    """The kappa a judge needs for the verdict ``trusted``: the policy's ``kappa`` rule, else
    :data:`~calibration.verdict.TRUSTED` (what ``agree``, ``review``, ``check`` and the pages use)."""
    bar = policy.bar("kappa")
    return bar.value if bar is not None else TRUSTED


class PolicyFileError(FormatError):
    """A policy file that cannot be read (missing, not text)."""


def check_data(
    qrels: Qrels,
    run: Run,
    k: int | None = None,
    min_grade: int | None = None,
    *,
    policy: Policy = DEFAULT_POLICY,
    fetch_run: Run | None = None,
    fetch_depth: int | None = None,
    corpus_size: int | None = None,
    corpus_ids: set[str] | None = None,
    store: Any = None,
    run_name: str = "the run",
    qrels_name: str = "the judgments",
) -> dict[str, Any]:
    """``check``: the audit and the metrics of one run held to ``policy``; with a ``store``
    (:class:`annotation.store.Store`) the faithfulness pass rate and each judge's calibration too."""
    k = k or DEFAULT_K
    audit = audit_data(
        qrels,
        run,
        k,
        min_grade,
        fetch_run=fetch_run,
        fetch_depth=fetch_depth,
        corpus_size=corpus_size,
        corpus_ids=corpus_ids,
        policy=policy,
        run_name=run_name,
        qrels_name=qrels_name,
    )
    ev = evaluate_run(
        qrels, run, sorted({k, 20}), audit["min_grade"], run_name=run_name, qrels_name=qrels_name
    )
    faithfulness = judges = None
    if store is not None:
        faithfulness, judges = _store_rules(store, policy)
    return check_report(audit, ev, policy, faithfulness=faithfulness, judges=judges)


def _store_rules(store: Any, policy: Policy) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The faithfulness pass rate (people: the consensus grade 2 of each labelled trace, Wilson
    95%; each trusted faithfulness judge: its PPI-corrected rate) and every judge's verdict."""
    # start-up: the review's statistics (scikit-learn, scipy: ~1 s), only with --db
    from calibration.review import PASS, consensus, human_labels, review

    bar_f = policy.bar("faithfulness")
    bar_k = policy.bar("kappa")
    report = review(store, save=False, bar=kappa_bar(policy), statistic=policy.kappa_statistic)
    faithfulness: list[dict[str, Any]] = []
    if bar_f is not None:
        people = human_labels(store, "faithfulness")
        if people:
            passes = sum(consensus(list(v.values()), "faithfulness") == PASS for v in people.values())
            faithfulness.append(
                faithfulness_entry(
                    "people",
                    passes / len(people),
                    wilson(passes, len(people)),
                    len(people),
                    bar_f,
                    f"{passes} of {len(people)} labelled traces fully supported (grade {PASS}); Wilson 95%",
                )
            )
        for judge in report["judges"]:
            rate = judge.get("pass_rate") or {}
            if (
                judge["rubric"] != "faithfulness"
                or judge["verdict"] != "trusted"
                or rate.get("estimate") is None
            ):
                continue
            faithfulness.append(
                faithfulness_entry(
                    judge_label(judge),
                    rate["estimate"],
                    rate["ci"],
                    rate["n_labeled"] + rate["n_unlabeled"],
                    bar_f,
                    f"trusted judge, corrected by PPI from {rate['n_labeled']} labelled and "
                    f"{rate['n_unlabeled']} judge-only traces",
                )
            )
    judges = [kappa_entry({**j, "name": judge_label(j)}, bar_k) for j in report["judges"]] if bar_k else []
    return faithfulness, judges


def judge_label(judge: dict[str, Any]) -> str:
    """``judge 0b187b4953d3d59a (gpt-4o-mini, relevance)``: how a judge is named in a report."""
    return f"judge {judge['fingerprint'][:16]} ({judge.get('model') or judge.get('kind')}, {judge['rubric']})"


# ---------------------------------------------------------------- history of checks

HISTORY_FIGURES = ("keep_recall", "fetch_recall", "rr", "ndcg", "label_coverage", "judged_at_k")


def labels_digest(qrels: Qrels) -> tuple[str, int]:
    """(sha256 of the judgments, sorted; how many): the same labels give the same hash whatever
    file or face they came through, so a new hash means the labels changed."""
    digest = hashlib.sha256()
    n = 0
    for qid in sorted(qrels.grades):
        for doc, grade in sorted(qrels.grades[qid].items()):
            digest.update(f"{qid}\t{doc}\t{grade}\n".encode())
            n += 1
    return digest.hexdigest(), n


def file_digest(source: PathLike | bytes) -> str:
    """sha256 of a run file (a path, or the bytes a page received)."""
    if isinstance(source, bytes):
        return hashlib.sha256(source).hexdigest()
    digest = hashlib.sha256()
    with open(source, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def record_check(store: Any, report: dict[str, Any], name: str, qrels: Qrels, run_digest: str) -> int:
    """Keep a check report in the store under the run's ``name``; its id."""
    if not name.strip():
        raise InvalidInput("a recorded check needs a run name (--name)")
    golden_hash, golden_labels = labels_digest(qrels)
    return store.record_check(
        name, report, golden_hash=golden_hash, golden_labels=golden_labels, run_hash=run_digest
    )


def history_data(store: Any, name: str | None = None) -> list[dict[str, Any]]:
    """The recorded checks (of one run name, or all), oldest first: per report its means, the
    rules it failed, and ``labels_changed`` when its label hash differs from the previous report
    of the same name (a change of labels is never to be read as a change of system)."""
    out = []
    previous: dict[str, str] = {}
    for entry in store.check_reports(name, with_report=True):
        report = entry.pop("report")
        summary = report["summary"]
        entry["labels_changed"] = (
            entry["name"] in previous and previous[entry["name"]] != entry["golden_hash"]
        )
        previous[entry["name"]] = entry["golden_hash"]
        entry["n_queries"] = summary["n_queries"]
        entry["means"] = {figure: summary[figure]["mean"] for figure in HISTORY_FIGURES}
        entry["failed"] = [r["rule"] for r in report["rules"] if r["passed"] is False]
        entry["bars"] = report["policy"]["rules"]
        out.append(entry)
    return out


def diff_checks(store: Any, first: int, second: int) -> dict[str, Any]:
    """Per query, the figures of two recorded reports and second - first; the findings each has
    that the other lacks; whether the labels changed between them."""
    a, b = store.check_report(first), store.check_report(second)
    for report_id, entry in ((first, a), (second, b)):
        if entry is None:
            raise InvalidInput(
                f"no recorded check with id {report_id}; `python -m calibration history` lists them"
            )
    qa, qb = a["report"]["queries"], b["report"]["queries"]
    queries: dict[str, dict[str, Any]] = {}
    for qid in sorted(set(qa) | set(qb), key=lambda q: q.encode("utf-8")):
        row: dict[str, Any] = {}
        for figure in ("fetch_recall", "keep_recall", "rr", "ndcg", "rel", "label_coverage"):
            x = qa.get(qid, {}).get(figure)
            y = qb.get(qid, {}).get(figure)
            row[figure] = {"first": x, "second": y, "delta": None if x is None or y is None else y - x}
        fa, fb = set(qa.get(qid, {}).get("findings", [])), set(qb.get(qid, {}).get("findings", []))
        row["findings_gained"] = sorted(fb - fa)
        row["findings_lost"] = sorted(fa - fb)
        row["in"] = "both" if qid in qa and qid in qb else ("first" if qid in qa else "second")
        queries[qid] = row
    meta = ("id", "name", "created_at", "golden_hash", "golden_labels", "run_hash", "passed", "k")
    return {
        "first": {key: a[key] for key in meta},
        "second": {key: b[key] for key in meta},
        "labels_changed": a["golden_hash"] != b["golden_hash"],
        "queries": queries,
    }


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
    notes: list[str] = field(default_factory=list)  # e.g. too few queries to compare systems


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
    notes = [few_queries_note(len(deltas))] if len(deltas) < MIN_QUERIES else []
    return Comparison(grade, cutoffs(ks), permutations, seed, tests, deltas, notes)


# ---------------------------------------------------------------- agreement, position, PPI


def agree_files(
    labels_csv: PathLike | None = None,
    qrels_pair: Sequence[PathLike] | None = None,
    *,
    trusted: float = TRUSTED,
    statistic: str = DEFAULT_STATISTIC,
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
        return agreement_report(rows, trusted=trusted, statistic=statistic)
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
