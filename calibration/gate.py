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

import math
import os
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

from annotation.formats.plain_yaml import read_plain_yaml
from annotation.model import FormatError, Qrels, Run
from calibration.errors import InvalidInput
from calibration.inputs import DEFAULT_K, ENGINE_THREADS, PathLike, refuse_nothing_evaluated
from calibration.policy.check import check_report, faithfulness_entry, judge_name, kappa_entry
from calibration.policy.history import (
    HISTORY_FIGURES,
    diff_checks,
    file_digest,
    history_data,
    labels_digest,
    query_digest,
    query_set,
    record_check,
    settings_changed,
)
from calibration.policy.rules import DEFAULT_POLICY, Policy, override, policy_from_mapping
from calibration.ranking_bound import ranking_bound, rr_depth
from calibration.results import (
    CheckReport,
    JudgeOutcome,
    SupersededOutcome,
)
from calibration.scorer import Scorer, run_scorer, scored_once
from calibration.stats.verdict import TRUSTED
from calibration.workflows import audit_data, same_text_of

__all__ = [
    "HISTORY_FIGURES",
    "check_data",
    "check_store",
    "diff_checks",
    "file_digest",
    "history_data",
    "kappa_bar",
    "labels_digest",
    "load_policy",
    "query_digest",
    "query_set",
    "record_check",
    "settings_changed",
    "shown_location_of",
    "verdict_settings",
]

if TYPE_CHECKING:  # the store is imported only by a check that reads one (check --no-store never loads it)
    from annotation.store import Store
    from calibration.metrics import Evaluation
    from calibration.ranking_bound import RankingBound

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
    k = k or DEFAULT_K
    same_text = None if text_keys is None else (same_text_of(run, text_keys, k) if text_keys else {})
    with ThreadPoolExecutor(max_workers=ENGINE_THREADS) as pool:
        # one read of the run for the audit and the metrics (a run file: in pieces)
        # the unjudged slots of each query's top too: can they lift a weak ranking? (#40 item 10)
        depth = rr_depth(k, policy.diagnosis.rr)
        score = scored_once(
            run_scorer(run, pool) if isinstance(run, Run) else run, also_ks=(k, 20), also_unjudged=depth
        )
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
            same_text=same_text,
            provenance=provenance,
        )
        ev = score(
            qrels,
            sorted({k, 20}),
            audit["min_grade"],
            missing="zero" if missing == "zero" else "drop",
            unjudged_depth=depth,
        )
    refuse_nothing_evaluated(ev, run_name, qrels_name)
    bounds = _ranking_bounds(qrels, ev, k, policy)
    if store is None:
        return check_report(
            audit,
            ev,
            policy,
            store_reason=store_reason or "no store: ./denominator.db is not there; give --db",
            bounds=bounds,
        )
    faithfulness, judges, superseded = _store_rules(store, policy, set(qrels.grades))
    return check_report(
        audit,
        ev,
        policy,
        faithfulness=faithfulness,
        judges=judges,
        superseded=superseded,
        store=shown_location_of(store),
        bounds=bounds,
    )


def _ranking_bounds(qrels: Qrels, ev: Evaluation, k: int, policy: Policy) -> dict[str, RankingBound]:
    """Per query whose nDCG@k or RR is below the diagnosis bars, what the unjudged chunks of its
    top (``ev.unjudged_top``, counted in the same read) could make of them."""
    d = policy.diagnosis
    ndcg, rr = ev.values[f"nDCG@{k}"], ev.values["RR"]
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


def shown_location_of(store: Store) -> str:
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
