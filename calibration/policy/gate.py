"""The policy as a build gate: which policy and which store ``check`` reads, the check itself, the
verdict settings every face resolves the same way, and the history of recorded checks.

One rule each, for the CLI and the pages alike:

- the policy: ``--policy FILE``, else ``./denominator.yaml`` when present, else the essay's table
  (:func:`load_policy`), then ``--rule`` overrides;
- the verdict's bar and statistic: the option given, else the policy's (:func:`verdict_settings`);
- the store ``check`` reads: ``--db``, else ``$DENOMINATOR_DB``, else ``./denominator.db`` when it
  exists; ``--no-store`` leaves it out (:func:`check_store`);
- stage 1: ``--fetch-run``, else ``--fetch-depth``, else the run's own depth when deeper than k
  (:func:`calibration.workflows.stage1_of`).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, cast

from annotation.model import FormatError, Qrels, Run
from annotation.plain_yaml import read_plain_yaml
from calibration.policy.check import check_report, faithfulness_entry, judge_name, kappa_entry, wilson
from calibration.policy.rules import DEFAULT_POLICY, Policy, override, policy_from_mapping
from calibration.results import (
    CheckDiff,
    CheckReport,
    CheckRow,
    FigureChange,
    HistoryRow,
    JudgeOutcome,
    QueryChange,
    SupersededOutcome,
)
from calibration.scorer import Scorer, run_scorer
from calibration.stats.verdict import TRUSTED
from calibration.workflows import (
    DEFAULT_K,
    ENGINE_THREADS,
    InvalidInput,
    PathLike,
    audit_data,
    refuse_nothing_evaluated,
    scored_once,
)

if TYPE_CHECKING:  # the store is imported only by a check that reads one (check --no-store never loads it)
    from annotation.store import Store

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
        # read as golden.yaml is: a regular file, plain YAML (no alias bomb), not too deep, each key once
        data = read_plain_yaml(where, PolicyFileError, "expected corpus, undecided, rules, diagnosis")
        policy = policy_from_mapping(data, str(where))
    return override(policy, overrides)


def kappa_bar(policy: Policy) -> float:
    """The kappa a judge needs for the verdict ``trusted``: the policy's ``kappa`` rule, else
    :data:`~calibration.stats.verdict.TRUSTED` (what ``agree``, ``review``, ``check`` and the pages use)."""
    bar = policy.bar("kappa")
    return bar.value if bar is not None else TRUSTED


def verdict_settings(
    policy: Policy, trusted: float | None = None, statistic: str | None = None
) -> tuple[float, str]:
    """The verdict's bar and statistic, the one resolution every face and ``check`` call: the option
    given (``--trusted``, ``--statistic``, a page's widget), else the policy's (its ``kappa`` rule and
    ``kappa_statistic``), else the defaults (:data:`~calibration.stats.verdict.TRUSTED`, unweighted)."""
    bar = float(trusted) if trusted is not None else kappa_bar(policy)
    return bar, statistic or policy.kappa_statistic


class PolicyFileError(FormatError):
    """A policy file that cannot be read (missing, not text)."""


class NoStore(InvalidInput):
    """A store named by ``--db`` or ``DENOMINATOR_DB`` that is not there."""


def check_store(db: str | None = None, *, no_store: bool = False) -> str | None:
    """The store ``check`` reads, one rule for the CLI and the page: ``db`` (``--db``), else
    ``$DENOMINATOR_DB``, else ``./denominator.db``; a named one (``--db`` or the variable) must be there
    (:class:`NoStore`), the default file may be missing (then no store). ``no_store``: None."""
    if no_store:  # before the store's import: check --no-store loads neither it nor pandas
        return None
    # start-up: the store (sqlite-utils, ~0.3 s), only for check, which is about to open it
    from annotation.store import database_exists, default_db_path, empty_file, shown_location

    named = db or os.environ.get("DENOMINATOR_DB")
    path = named or default_db_path()
    if empty_file(path):  # check only reads: no schema is written into it
        raise NoStore(
            f"{shown_location(path)} is an empty file, not a Denominator database; it was left as it was"
        )
    if database_exists(path):
        return path
    if named:
        where = "--db" if db else "DENOMINATOR_DB"
        raise NoStore(
            f"no such database: {shown_location(path)} (named by {where}); --no-store leaves the store out"
        )
    return None


def check_data(
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
) -> CheckReport:
    """``check``: the audit and the metrics of one run held to ``policy``; with a ``store``
    (:class:`annotation.store.Store`, chosen by :func:`check_store`) the faithfulness pass rate and
    each judge's calibration too. ``store_reason``: why there is none (said in the report)."""
    k = k or DEFAULT_K
    with ThreadPoolExecutor(max_workers=ENGINE_THREADS) as pool:
        # one read of the run for the audit and the metrics (a run file: in pieces)
        score = scored_once(run_scorer(run, pool) if isinstance(run, Run) else run, also_ks=(k, 20))
        audit = audit_data(
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
        )
        ev = score(
            qrels, sorted({k, 20}), audit["min_grade"], missing="zero" if missing == "zero" else "drop"
        )
    refuse_nothing_evaluated(ev, run_name, qrels_name)
    if store is None:
        return check_report(
            audit,
            ev,
            policy,
            store_reason=store_reason or "no store: ./denominator.db is not there; give --db",
        )
    faithfulness, judges, superseded = _store_rules(store, policy)
    return check_report(
        audit,
        ev,
        policy,
        faithfulness=faithfulness,
        judges=judges,
        superseded=superseded,
        store=shown_location_of(store),
    )


def shown_location_of(store: Store) -> str:
    """The store as the report names it (no credentials)."""
    # start-up: the store's package, already loaded by whoever opened ``store``
    from annotation.store import shown_location

    return shown_location(store.location)


def _store_rules(
    store: Store, policy: Policy
) -> tuple[list[JudgeOutcome], list[JudgeOutcome], list[SupersededOutcome]]:
    """The faithfulness pass rate (people: the consensus grade 2 of each labelled trace, Wilson
    95%; each trusted faithfulness judge: its PPI-corrected rate), every current judge's verdict, and
    the superseded versions (listed, not gated)."""
    # start-up: the review's statistics (scikit-learn, scipy: ~1 s), only with a store
    from calibration.review import PASS, consensus, human_labels, review

    bar_f = policy.bar("faithfulness")
    bar_k = policy.bar("kappa")
    bar, statistic = verdict_settings(policy)
    report = review(
        store, save=False, bar=bar, statistic=statistic, verdicts_only=True, min_queries=policy.min_queries
    )
    faithfulness: list[JudgeOutcome] = []
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
                    policy.undecided,
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
                )
            )
    judges = [kappa_entry(j, bar_k, policy.undecided) for j in report["judges"]] if bar_k else []
    superseded: list[SupersededOutcome] = [
        {
            **j,
            "judge": judge_name(j),
            "reason": "superseded by a later version of its name: listed, not gated",
        }
        for j in report["superseded"]
    ]
    return faithfulness, judges, superseded


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


def record_check(store: Store, report: CheckReport, name: str, qrels: Qrels, run_digest: str) -> int:
    """Keep a check report in the store under the run's ``name``; its id."""
    if not name.strip():
        raise InvalidInput("a recorded check needs a run name (--name)")
    golden_hash, golden_labels = labels_digest(qrels)
    return store.record_check(
        name, report, golden_hash=golden_hash, golden_labels=golden_labels, run_hash=run_digest
    )


def query_set(report: Mapping[str, Any]) -> list[str]:
    """The queries a recorded report was asked about: those it scored and those missing from the run
    (a smaller run is a different query set, never a better score over the same one)."""
    asked = set(report.get("queries") or {}) | set(report.get("missing_from_run") or [])
    return sorted(asked, key=lambda q: q.encode("utf-8"))


def query_digest(report: Mapping[str, Any]) -> tuple[str, int]:
    """(sha256 of the queries the report's means are over, each marked held or scored 0; how many the
    run held): a new hash means the means are over other queries (the run answered another set, or
    missing ones were scored 0 where they were left out before), a change of the denominator."""
    scored = report.get("queries") or {}
    marked = sorted(
        (f"{q}\t{'zero' if v.get('scored_zero') else 'held'}" for q, v in scored.items()),
        key=lambda line: line.encode("utf-8"),
    )
    held = sum(1 for v in scored.values() if not v.get("scored_zero"))
    return hashlib.sha256("\n".join(marked).encode()).hexdigest(), held


def _check_shapes(means: Mapping[str, Any], failed: Sequence[Any], bars: Any, n_queries: Any) -> None:
    """TypeError unless a stored report's parts the history shows have the shapes a check report
    writes (a row written by something else is skipped and named, never a traceback on the page)."""
    number = (int, float)
    if not all(v is None or (isinstance(v, number) and not isinstance(v, bool)) for v in means.values()):
        raise TypeError("a mean is not a number")
    if not all(isinstance(rule, str) for rule in failed):
        raise TypeError("a rule name is not text")
    if not isinstance(bars, dict) or not all(
        isinstance(k, str) and (v is None or isinstance(v, str)) for k, v in bars.items()
    ):
        raise TypeError("the bars are not text")
    if not isinstance(n_queries, int) or isinstance(n_queries, bool):
        raise TypeError("the number of queries is not a number")


def history_data(store: Store, name: str | None = None) -> list[HistoryRow]:
    """The recorded checks (of one run name, or all), oldest first: per report its means, the
    rules it failed, ``labels_changed`` when its label hash differs from the previous report of the
    same name and ``queries_changed`` when the queries the run held did (a change of labels or of
    the query set is never to be read as a change of system). A row whose report cannot be read
    (not JSON, or not a check report) is kept as ``{"id", "name", "unreadable": why}`` and skipped
    by the comparisons."""
    out: list[HistoryRow] = []
    previous: dict[str, tuple[str, str]] = {}
    for entry in store.check_reports(name, with_report=True):
        report = entry.pop("report")
        try:
            summary = report["summary"]
            queries_hash, held = query_digest(report)
            means = {figure: summary[figure]["mean"] for figure in HISTORY_FIGURES}
            failed = [r["rule"] for r in report["rules"] if r["passed"] is False]
            bars = report["policy"]["rules"]
            n_queries = summary["n_queries"]
            missing = len(report.get("missing_from_run") or [])
            _check_shapes(means, failed, bars, n_queries)
        except (KeyError, TypeError, AttributeError, IndexError):
            why = "not JSON" if report is None else "not a check report"
            out.append({"id": entry["id"], "name": entry["name"], "unreadable": why})
            continue
        # the store's row (dict[str, Any] at this boundary: annotation.store.history) is a CheckRow
        row = cast(CheckRow, entry)
        before = previous.get(row["name"])
        previous[row["name"]] = (row["golden_hash"], queries_hash)
        out.append(
            {
                **row,
                "labels_changed": before is not None and before[0] != row["golden_hash"],
                "queries_changed": before is not None and before[1] != queries_hash,
                "queries_hash": queries_hash,
                "queries_held": held,
                "n_queries": n_queries,
                "missing_from_run": missing,
                "means": means,
                "failed": failed,
                "bars": bars,
            }
        )
    return out


def _row(entry: Mapping[str, Any]) -> CheckRow:
    """A recorded check's row as a diff names it (its report left out)."""
    return {
        "id": entry["id"],
        "name": entry["name"],
        "created_at": entry["created_at"],
        "golden_hash": entry["golden_hash"],
        "golden_labels": entry["golden_labels"],
        "run_hash": entry["run_hash"],
        "passed": entry["passed"],
        "k": entry["k"],
    }


def _change(x: float | None, y: float | None) -> FigureChange:
    return {"first": x, "second": y, "delta": None if x is None or y is None else y - x}


def _recorded(store: Store, report_id: int) -> dict[str, Any]:
    """A recorded check, whole, that a diff can read: else :class:`InvalidInput` saying why not."""
    entry = store.check_report(report_id)
    if entry is None:
        raise InvalidInput(
            f"no recorded check with id {report_id}; `python -m calibration history` lists them"
        )
    queries = entry["report"].get("queries") if isinstance(entry["report"], dict) else None
    if not isinstance(queries, dict) or not all(isinstance(q, dict) for q in queries.values()):
        why = "not JSON" if entry["report"] is None else "not a check report"
        raise InvalidInput(f"recorded check {report_id} cannot be read ({why}): nothing to compare")
    for qid, figures in queries.items():
        broken = _broken_query(qid, figures)
        if broken is not None:
            raise InvalidInput(
                f"recorded check {report_id} cannot be read (its stored report is broken: {broken}): "
                "nothing to compare"
            )
    return entry


_DIFFED = ("fetch_recall", "keep_recall", "rr", "ndcg", "rel", "label_coverage")


def _broken_query(qid: str, figures: Mapping[str, Any]) -> str | None:
    """What a diff cannot read in one query of a stored report (a figure that is no number, findings
    that are no list of names), said in a few words; None when it reads."""
    for key in _DIFFED:
        value = figures.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int | float)):
            return f"query {qid[:40]!r}: {key} is {type(value).__name__}, not a number"
    findings = figures.get("findings", [])
    if not isinstance(findings, list) or not all(isinstance(f, str) for f in findings):
        return f"query {qid[:40]!r}: findings are not a list of names"
    return None


def diff_checks(store: Store, first: int, second: int) -> CheckDiff:
    """Per query held by both reports, the figures of each and second - first, the findings each has
    that the other lacks; the queries one report held and the other did not, as ``dropped`` and
    ``added`` (never as findings gained or lost); whether the labels changed between them."""
    a, b = _recorded(store, first), _recorded(store, second)
    qa, qb = a["report"]["queries"], b["report"]["queries"]
    held_a = {q for q, v in qa.items() if not v.get("scored_zero")}
    held_b = {q for q, v in qb.items() if not v.get("scored_zero")}
    queries: dict[str, QueryChange] = {}
    for qid in sorted(held_a & held_b, key=lambda q: q.encode("utf-8")):
        x, y = qa[qid], qb[qid]
        fa, fb = set(x.get("findings", [])), set(y.get("findings", []))
        queries[qid] = {
            "fetch_recall": _change(x.get("fetch_recall"), y.get("fetch_recall")),
            "keep_recall": _change(x.get("keep_recall"), y.get("keep_recall")),
            "rr": _change(x.get("rr"), y.get("rr")),
            "ndcg": _change(x.get("ndcg"), y.get("ndcg")),
            "rel": _change(x.get("rel"), y.get("rel")),
            "label_coverage": _change(x.get("label_coverage"), y.get("label_coverage")),
            "findings_gained": sorted(fb - fa),
            "findings_lost": sorted(fa - fb),
        }
    order = lambda ids: sorted(ids, key=lambda q: q.encode("utf-8"))  # noqa: E731
    return {
        "first": _row(a),
        "second": _row(b),
        "labels_changed": a["golden_hash"] != b["golden_hash"],
        "dropped": order(held_a - held_b),
        "added": order(held_b - held_a),
        "queries": queries,
    }
