"""``check``: one report a team logs every run, held to the policy.

Per query, the seven figures the essay names (fetch recall, keep recall, RR,
nDCG@k, |Rel|, k, label coverage) with the audit's findings and the
diagnosis in words; the summary over queries; every rule of the policy
(:mod:`calibration.policy`) with passed / failed and the queries or judges that
failed it. A rule that cannot be evaluated (no stage-1 figure, no corpus, no
store, no judge) is listed with ``passed: None`` and its reason, never as
passed; the report passes when no rule failed.

Diagnosis (bars in the policy's ``diagnosis`` section; keep recall is read as
a share of its ceiling min(1, k/|Rel|), so a query with more relevant
documents than k is not blamed for what no ranking can reach):

- ``loss_at_cut``: stage-1 recall meets its bar, keep recall does not: the
  reranker or keep-n drops what fetch found;
- ``ranking_weak``: keep recall meets its bar, nDCG@k or RR is low: the order
  within the kept set;
- ``retrieval_weak``: keep recall low and the order low too, or stage 1 itself
  below its bar: chunking, embeddings or fetch depth;
- ``labels_thin``: judged@k or label coverage below its bar: the numbers rest
  on few labels.

Pure: the audit, the evaluation and the judges' figures are handed in by
:func:`calibration.workflows.check_data`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from annotation.render import decisive as render_decisive
from annotation.render import num
from calibration.metrics import Evaluation
from calibration.policy import MIN_QUERIES, Bar, Policy, few_queries_note
from calibration.results import AuditReport

__all__ = ["DIAGNOSES", "check_report", "diagnosis_text", "wilson", "decisive"]

DIAGNOSES = ("loss_at_cut", "ranking_weak", "retrieval_weak", "labels_thin")
FIGURES = ("fetch_recall", "keep_recall", "rr", "ndcg", "rel", "k", "label_coverage")


def wilson(successes: int, n: int, z: float = 1.959963984540054) -> tuple[float, float] | None:
    """The Wilson score interval of a proportion (95% by default); None when n = 0."""
    if n <= 0:
        return None
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def decisive(value: float, bar: Bar, digits: int = 3) -> str:
    """The figure with enough digits that its comparison with the bar reads right
    (``annotation.render.decisive``): 0.59964 against ``>= 0.6`` prints ``0.5996``, not ``0.600``."""
    return render_decisive(value, bar.value, digits=digits)


def _value(column: np.ndarray, i: int) -> float | None:
    x = float(column[i])
    return None if math.isnan(x) else x


def _mean(values: Sequence[float | None]) -> tuple[float | None, int]:
    """(mean over the defined values, how many were undefined)."""
    defined = [v for v in values if v is not None]
    return (sum(defined) / len(defined) if defined else None), len(values) - len(defined)


def _diagnose(q: Mapping[str, Any], policy: Policy) -> list[str]:
    d = policy.diagnosis
    codes: list[str] = []
    share = q.get("share_of_ceiling")
    stage1_bar = policy.bar("stage1_recall")
    fetch = q.get("fetch_recall")
    stage1_ok = None if fetch is None or stage1_bar is None else stage1_bar.holds(fetch)
    if share is not None:
        recall_low = share < d.recall_share
        order_low = (q.get("ndcg") is not None and q["ndcg"] < d.ndcg) or (
            q.get("rr") is not None and q["rr"] < d.rr
        )
        if recall_low and stage1_ok:
            codes.append("loss_at_cut")
        elif recall_low and (order_low or stage1_ok is False):
            codes.append("retrieval_weak")
        elif not recall_low and order_low:
            codes.append("ranking_weak")
    judged_bar, coverage_bar = policy.bar("judged_at_k"), policy.bar("label_coverage")
    thin = (
        judged_bar is not None and q.get("judged_at_k") is not None and not judged_bar.holds(q["judged_at_k"])
    ) or (
        coverage_bar is not None
        and q.get("label_coverage") is not None
        and not coverage_bar.holds(q["label_coverage"])
    )
    if thin:
        codes.append("labels_thin")
    return codes


def diagnosis_text(code: str, q: Mapping[str, Any], policy: Policy) -> str:
    """The diagnosis in words, with its figures and what the essay says to try next."""
    k = q.get("k")
    f = lambda v: num(v, 3, "prose")  # noqa: E731
    if code == "loss_at_cut":
        return (
            f"stage-1 recall {f(q['fetch_recall'])} meets its bar ({policy.bar('stage1_recall')}), recall@{k} "
            f"{f(q['keep_recall'])} is {f(q['share_of_ceiling'])} of its ceiling {f(q['recall_ceiling'])} "
            f"(bar {policy.diagnosis.recall_share:g}): the reranker or keep-n drops what fetch found; "
            "try a stronger reranker or keep more than k"
        )
    if code == "ranking_weak":
        return (
            f"recall@{k} {f(q['keep_recall'])} meets its bar but nDCG@{k} {f(q['ndcg'])} or RR {f(q['rr'])} "
            f"is low (bars {policy.diagnosis.ndcg:g} / {policy.diagnosis.rr:g}): the order within the kept set; "
            "look at the reranker"
        )
    if code == "retrieval_weak":
        return (
            f"recall@{k} {f(q['keep_recall'])} ({f(q['share_of_ceiling'])} of its ceiling) and nDCG@{k} "
            f"{f(q['ndcg'])} are both low"
            + (f", stage 1 finds {f(q['fetch_recall'])}" if q.get("fetch_recall") is not None else "")
            + ": look at chunking, embeddings or fetch depth"
        )
    if code == "labels_thin":
        return (
            f"judged@{k} {f(q.get('judged_at_k'))}, label coverage {f(q.get('label_coverage'))}: the numbers rest "
            "on few labels; label more (pool several systems)"
        )
    return code


def _query_rule(
    name: str, policy: Policy, queries: Mapping[str, Mapping[str, Any]], figure: str, k: int
) -> dict[str, Any]:
    rule = policy.rule(name)
    entry: dict[str, Any] = {
        "rule": name,
        "bar": rule.bar_text(policy.corpus, k),
        "scope": "query",
        "source": rule.source,
    }
    bar = rule.bar_for(policy.corpus)
    if policy.corpus not in rule.corpora:
        return {
            **entry,
            "passed": None,
            "queries": [],
            "reason": f"applies to broad corpora; the policy says corpus: {policy.corpus}",
        }
    if bar is None:
        return {**entry, "passed": None, "queries": [], "reason": "off (no bar set)"}
    failing: list[str] = []
    evaluated = 0
    for qid, q in queries.items():
        if name == "rel_at_least_k":
            value: float | None = q["rel"] / k
        elif name == "no_duplicates":
            value = float(len(q["duplicates"]))
        else:
            value = q.get(figure)
        if value is None:
            continue
        evaluated += 1
        if not bar.holds(value):
            failing.append(qid)
    if not evaluated:
        reasons = {
            "stage1_recall": "no stage-1 figure: give --fetch-run or --fetch-depth",
            "label_coverage": "label coverage unknown: give --corpus or --corpus-size",
        }
        return {
            **entry,
            "passed": None,
            "queries": [],
            "reason": reasons.get(name, "no query defines the figure"),
        }
    out = {**entry, "passed": not failing, "queries": failing, "evaluated": evaluated}
    if evaluated < len(queries):
        out["undefined"] = len(queries) - evaluated
    return out


def _judge_rule(
    name: str, policy: Policy, entries: Sequence[Mapping[str, Any]] | None, why_none: str
) -> dict[str, Any]:
    rule = policy.rule(name)
    bar = rule.bar_for(policy.corpus)
    entry: dict[str, Any] = {
        "rule": name,
        "bar": rule.bar_text(policy.corpus),
        "scope": "judge",
        "source": rule.source,
        "queries": [],
    }
    if bar is None:
        return {**entry, "passed": None, "judges": [], "reason": "off (no bar set)"}
    if entries is None or not entries:
        return {**entry, "passed": None, "judges": [], "reason": why_none}
    judged = [dict(e) for e in entries]
    verdicts = [e["passed"] for e in judged]
    passed = False if False in verdicts else (True if all(v is True for v in verdicts) else None)
    out = {**entry, "passed": passed, "judges": judged}
    if passed is None:
        out["reason"] = "; ".join(f"{e['judge']}: {e['reason']}" for e in judged if e["passed"] is None)
    return out


def faithfulness_entry(
    name: str, rate: float | None, ci: Sequence[float] | None, n: int, bar: Bar, how: str
) -> dict[str, Any]:
    """One source of a faithfulness pass rate held to its bar: passed when the interval's lower end
    meets the bar, failed when the estimate does not, undecided (None) in between."""
    out: dict[str, Any] = {"judge": name, "rate": rate, "ci": list(ci) if ci else None, "n": n, "how": how}
    if rate is None:
        return {**out, "passed": None, "reason": f"no pass rate ({how})"}
    if not bar.holds(rate):
        return {**out, "passed": False, "reason": f"{decisive(rate, bar)} is not {bar}"}
    if ci is None or bar.holds(ci[0]):
        return {**out, "passed": True, "reason": None}
    return {
        **out,
        "passed": None,
        "reason": f"{decisive(rate, bar)} meets {bar} but its interval reaches {ci[0]:.3f}: not shown, label more",
    }


def kappa_entry(judge: Mapping[str, Any], bar: Bar) -> dict[str, Any]:
    """One judge's calibration verdict held to the kappa rule (the review's verdict at the bar)."""
    consensus = judge.get("consensus") or {}
    kappa, n, ci = consensus.get("kappa"), consensus.get("n", 0), consensus.get("ci")
    out: dict[str, Any] = {
        "judge": judge.get("name") or judge["fingerprint"][:16],
        "fingerprint": judge["fingerprint"],
        "rubric": judge["rubric"],
        "kappa": kappa,
        "ci": ci,
        "n": n,
        "weights": consensus.get("weights"),
        "statistic": consensus.get("statistic"),
        "verdict": judge["verdict"],
    }
    if judge["verdict"] == "trusted":
        return {**out, "passed": True, "reason": None}
    if judge["verdict"] == "undecided":
        more = judge.get("more_labels")
        low = ci[0] if ci else None
        return {
            **out,
            "passed": None,
            "reason": f"undecided: kappa {num(kappa, 3, 'prose')} but its interval reaches {num(low, 3, 'prose')}"
            + (f"; about {more} more human-labelled items would decide it" if more else ""),
        }
    if judge["verdict"] in ("uncalibrated", "undefined"):
        reason = judge.get("status_reason") or consensus.get("undefined_reason") or judge["verdict"]
        return {**out, "passed": None, "reason": f"{judge['verdict']}: {reason}"}
    shown = decisive(kappa, bar) if kappa is not None else "undefined"
    return {**out, "passed": False, "reason": f"kappa {shown} is not {bar} (verdict: {judge['verdict']})"}


def check_report(
    audit: AuditReport,
    ev: Evaluation,
    policy: Policy,
    *,
    faithfulness: Sequence[Mapping[str, Any]] | None = None,
    judges: Sequence[Mapping[str, Any]] | None = None,
    store_reason: str = "no store: give --db",
) -> dict[str, Any]:
    """The check report (the JSON of ``python -m calibration check --format json``)."""
    k = audit["k"]
    index = {qid: i for i, qid in enumerate(ev.qids)}
    r20 = ev.values.get("R@20")
    queries: dict[str, dict[str, Any]] = {}
    for qid, a in audit["queries"].items():
        i = index[qid]
        q: dict[str, Any] = {
            "fetch_recall": a["recall_at_fetch"],
            "keep_recall": a["recall"],
            "rr": _value(ev.values["RR"], i),
            "ndcg": _value(ev.values[f"nDCG@{k}"], i),
            "rel": a["rel"],
            "k": k,
            "label_coverage": a["label_coverage"],
            "recall_ceiling": a["recall_ceiling"],
            "share_of_ceiling": a["share_of_ceiling"],
            "judged_at_k": a["judged_at_k"],
            "recall_at_20": _value(r20, i) if r20 is not None else None,
            "duplicates": a["duplicates"],
            "positional_hits": a["positional_hits"],
            "distinct_hits": a["distinct_hits"],
        }
        q["findings"] = list(a["findings"]) + _diagnose(q, policy)
        queries[qid] = q

    summary: dict[str, Any] = {"n_queries": len(queries)}
    for figure in (
        "fetch_recall",
        "keep_recall",
        "share_of_ceiling",
        "rr",
        "ndcg",
        "label_coverage",
        "judged_at_k",
        "recall_at_20",
    ):
        mean, undefined = _mean([q[figure] for q in queries.values()])
        summary[figure] = {"mean": mean, "undefined": undefined}
    means = {figure: summary[figure]["mean"] for figure in summary if figure != "n_queries"}
    summary["rel"] = sum(q["rel"] for q in queries.values())
    summary["diagnosis"] = _diagnose(means, policy)
    counts: dict[str, int] = {}
    for q in queries.values():
        for code in q["findings"]:
            counts[code] = counts.get(code, 0) + 1
    summary["findings"] = counts
    notes = []
    if len(queries) < MIN_QUERIES:
        notes.append(few_queries_note(len(queries)))
    summary["notes"] = notes

    figures = {
        "stage1_recall": "fetch_recall",
        "recall_at_20": "recall_at_20",
        "label_coverage": "label_coverage",
        "judged_at_k": "judged_at_k",
        "rel_at_least_k": "rel",
        "no_duplicates": "duplicates",
    }
    rules = []
    for rule in policy.rules:
        if rule.scope == "query":
            rules.append(_query_rule(rule.name, policy, queries, figures[rule.name], k))
        elif rule.name == "faithfulness":
            rules.append(
                _judge_rule(
                    rule.name,
                    policy,
                    faithfulness,
                    store_reason if faithfulness is None else "no faithfulness grades in the store",
                )
            )
        else:
            rules.append(
                _judge_rule(
                    rule.name,
                    policy,
                    judges,
                    store_reason if judges is None else "no judge has graded anything",
                )
            )
    return {
        "k": k,
        "min_grade": audit["min_grade"],
        "fetch_depth": audit["fetch_depth"],
        "corpus_size": audit["corpus_size"],
        "policy": policy.to_json(),
        "queries": queries,
        "missing_from_run": audit["missing_from_run"],
        "summary": summary,
        "rules": rules,
        "passed": not any(r["passed"] is False for r in rules),
    }
