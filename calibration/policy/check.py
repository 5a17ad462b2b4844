"""``check``: one report a team logs every run, held to the policy.

Per query, the seven figures the essay names (fetch recall, keep recall, RR,
nDCG@k, |Rel|, k, label coverage) with the audit's findings and the
diagnosis in words; the summary over queries; every rule of the policy
(:mod:`calibration.policy.rules`) with passed / failed / warning and the queries or
judges behind it. A rule that cannot be evaluated (no stage-1 figure, no
corpus, no store, no judge) is listed with ``passed: None`` and its reason,
never as passed; the report passes when no rule failed.

Judge rules (``kappa``, ``faithfulness``) read an interval one way: passed
when its lower end meets the bar, failed when its upper end does not; a figure
not shown (undecided between the two, uncalibrated, undefined) fails the rule
too, with about how many more human-labelled items would decide it, unless the
policy says ``undecided: warn`` (a warning, listed, that fails no build).

Diagnosis: a query carries every code that applies, each with its own
evidence in words.

- ``loss_at_cut``: the kept top k holds fewer relevant documents than stage 1
  found and k could hold (keep hits < min(stage-1 hits, k), i.e. keep recall <
  min(stage-1 recall, the ceiling min(1, k/|Rel|))): the reranker or keep-n drops
  what fetch found;
- ``ranking_weak``: nDCG@k or RR below the policy's ``diagnosis`` bars, whatever
  the recall, with at least one relevant chunk kept (else there is no order to blame): the order; claimed only when it holds were every unjudged chunk of the top k
  relevant (:mod:`calibration.ranking_bound`), else
- ``ranking_unjudged``: the figures are below the bars, but the unjudged chunks of the top k
  could lift them: label those (named) before blaming the order;
- ``retrieval_weak``: stage 1 is known and its recall is not what
  ``stage1_recall`` asks: chunking, embeddings or fetch depth. Without a
  stage-1 figure no code claims the cause is retrieval;
- ``labels_thin``: judged@k or label coverage below its bar: the numbers rest
  on few labels.

Pure: the audit, the evaluation and the judges' figures are handed in by
:func:`calibration.actions.check`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, Literal, TypeGuard, cast

import numpy as np

from annotation.render import decisive as render_decisive
from annotation.render import num
from calibration.metrics import RR, Evaluation, Measure
from calibration.policy.finding_words import BY_ID_ONLY, BY_TEXT
from calibration.policy.rules import MIN_QUERIES, Bar, Diagnosis, Policy, few_queries_note
from calibration.ranking_bound import RankingBound
from calibration.results import (
    AuditReport,
    CheckFigures,
    CheckQuery,
    CheckReport,
    CheckSummary,
    FigureMean,
    JudgeOutcome,
    PolicyJSON,
    ReviewJudge,
    RuleHead,
    RuleResult,
    SupersededOutcome,
)
from calibration.stats.verdict import labels_to_decide

__all__ = [
    "DIAGNOSES",
    "check_report",
    "diagnosis_text",
    "decisive",
    "judge_name",
    "kappa_entry",
    "faithfulness_entry",
]

DIAGNOSES = ("loss_at_cut", "ranking_weak", "ranking_unjudged", "retrieval_weak", "labels_thin")
# what a circular stage 1 asks for, said by both of its reasons (the evidence's and the provenance's)
CIRCULAR_ADVICE = "label chunks other systems find (pool several runs, or pool --estimate)"
FIGURES = ("fetch_recall", "keep_recall", "rr", "ndcg", "rel", "k", "label_coverage")
# the figures of a query whose mean over queries the summary gives, in its order
MeanFigure = Literal[
    "fetch_recall",
    "keep_recall",
    "share_of_ceiling",
    "rr",
    "ndcg",
    "label_coverage",
    "judged_at_k",
    "recall_at_20",
]


def decisive(value: float | None, bar: Bar, digits: int = 3) -> str:
    """The figure with enough digits that its comparison with the bar reads right
    (``annotation.render.decisive``): 0.59964 against ``>= 0.6`` prints ``0.5996``, not ``0.600``."""
    return render_decisive(value, bar.value, digits=digits)


def _value(column: np.ndarray, i: int) -> float | None:
    x = float(column[i])
    return None if math.isnan(x) else x


def _mean(values: Sequence[float | None]) -> FigureMean:
    """The mean over the defined values, and how many were undefined."""
    defined = [v for v in values if v is not None]
    return {"mean": sum(defined) / len(defined) if defined else None, "undefined": len(values) - len(defined)}


def _defined(value: float | None) -> TypeGuard[float]:
    """A figure there is: not None, not NaN."""
    return value is not None and not (isinstance(value, float) and math.isnan(value))


def _below(ndcg: float | None, rr: float | None, d: Diagnosis) -> bool:
    """nDCG@k or RR below the diagnosis bars."""
    return (_defined(ndcg) and ndcg < d.ndcg) or (_defined(rr) and rr < d.rr)


def _diagnose(q: CheckFigures, policy: Policy, bound: RankingBound | None = None) -> list[str]:
    """Every code of :data:`DIAGNOSES` that applies to one query (see the module docstring);
    ``bound``: what the unjudged chunks of its top k could make of its ranking figures."""
    d = policy.diagnosis
    codes: list[str] = []
    fetch_hits, hits, rel, k = q["fetch_hits"], q["distinct_hits"], q["rel"], q["k"]
    if fetch_hits is not None and rel > 0 and hits < min(fetch_hits, k):
        codes.append("loss_at_cut")
    ndcg, rr = q["ndcg"], q["rr"]
    if _below(ndcg, rr, d) and hits > 0:  # nothing relevant kept: no order to blame (the cut, the fetch)
        # weak only if weak at the best the unjudged chunks could make of it (#40 item 10)
        holds = bound is None or not bound.unjudged or _below(bound.ndcg_best, bound.rr_best, d)
        codes.append("ranking_weak" if holds else "ranking_unjudged")
    stage1_bar, fetch = policy.bar("stage1_recall"), q["fetch_recall"]
    if stage1_bar is not None and _defined(fetch) and not stage1_bar.holds(fetch):
        codes.append("retrieval_weak")
    judged_bar, coverage_bar = policy.bar("judged_at_k"), policy.bar("label_coverage")
    judged, coverage = q["judged_at_k"], q["label_coverage"]
    thin = (judged_bar is not None and _defined(judged) and not judged_bar.holds(judged)) or (
        coverage_bar is not None and _defined(coverage) and not coverage_bar.holds(coverage)
    )
    if thin:
        codes.append("labels_thin")
    return codes


def _bar_of(policy_json: PolicyJSON, rule: str) -> Bar | None:
    """A rule's bar back from a report's policy (``"> 0.95"``), None when off or not a figure."""
    text = (policy_json.get("rules") or {}).get(rule)
    if not text:
        return None
    op, _, value = str(text).partition(" ")
    try:
        return Bar(op, float(value))
    except ValueError:
        return None


def diagnosis_text(code: str, q: CheckFigures, policy_json: PolicyJSON) -> str:
    """One code of one query in words, with the figures that put it there and what the essay says
    to try next. ``policy_json``: the report's ``policy`` (the bars it was held to)."""
    k = q["k"]

    def f(value: float | None) -> str:
        return num(value, 3, "prose")

    fetch_hits = q["fetch_hits"]
    if code == "loss_at_cut" and fetch_hits is not None:  # diagnosed only with a stage-1 count
        fit = min(fetch_hits, k)
        return (
            f"the kept top {k} holds {q['distinct_hits']} of the {fetch_hits} relevant chunks stage 1 "
            f"found, and {fit} would fit (recall@{k} {f(q['keep_recall'])} against stage-1 recall "
            f"{f(q['fetch_recall'])}, ceiling {f(q['recall_ceiling'])}): the reranker or keep-n drops what "
            "fetch found; try a stronger reranker or keep more than k"
        )
    if code == "ranking_weak":
        d = policy_json["diagnosis"]
        low = []
        for name, value, floor in ((f"nDCG@{k}", q["ndcg"], d["ndcg"]), ("RR", q["rr"], d["rr"])):
            if _defined(value) and value < floor:
                low.append(f"{name} {render_decisive(value, floor, medium='prose')} is below {floor:g}")
        return " and ".join(low) + ": the order within the kept set; look at the reranker"
    if code == "ranking_unjudged":
        d = policy_json["diagnosis"]
        low = [
            f"{name} {render_decisive(value, floor, medium='prose')}"
            for name, value, floor in ((f"nDCG@{k}", q["ndcg"], d["ndcg"]), ("RR", q["rr"], d["rr"]))
            if _defined(value) and value < floor
        ]
        ids = q.get("unjudged_top") or []
        n = len(ids)
        return (
            f"{' and '.join(low)} below the bars ({d['ndcg']:g}, {d['rr']:g}), but {n} unjudged "
            f"{'chunk' if n == 1 else 'chunks'} in the top {k} ({', '.join(ids)}) could lift "
            f"{'it' if len(low) == 1 else 'them'} (best nDCG@{k} {f(q.get('ndcg_best'))}, RR "
            f"{f(q.get('rr_best'))}): label {'it' if n == 1 else 'them'} before blaming the order"
        )
    if code == "retrieval_weak":
        bar = _bar_of(policy_json, "stage1_recall")
        shown = decisive(q["fetch_recall"], bar) if bar is not None else f(q["fetch_recall"])
        hits = f" ({fetch_hits} of {q['rel']})" if fetch_hits is not None else ""
        return (
            f"stage-1 recall {shown}{hits} is not {bar}: what the fetch misses no reranker can recover; "
            "look at chunking, embeddings or fetch depth"
        )
    if code == "labels_thin":
        parts = []
        for value, rule, name in (
            (q["judged_at_k"], "judged_at_k", f"judged@{k}"),
            (q["label_coverage"], "label_coverage", "label coverage"),
        ):
            bar = _bar_of(policy_json, rule)
            if bar is not None and _defined(value) and not bar.holds(value):
                parts.append(f"{name} {decisive(value, bar)} is not {bar}")
        return " and ".join(parts) + ": the numbers rest on few labels; label more (pool several systems)"
    return code


def _query_rule(
    name: str,
    policy: Policy,
    queries: Mapping[str, CheckQuery],
    figure: MeanFigure | None,
    k: int,
    missing: Sequence[str] = (),
    scored_zero: bool = False,
    stage1_known: bool = False,
    fetch_depth: int | None = None,
) -> RuleResult:
    rule = policy.rule(name)
    entry: RuleHead = {
        "rule": name,
        "bar": rule.bar_text(policy.corpus, k),
        "scope": "query",
        "source": rule.source,
    }
    bar = rule.bar_for(policy.corpus)
    if policy.corpus not in rule.corpora:
        return _not_applicable(entry, f"applies to broad corpora; the policy says corpus: {policy.corpus}")
    if bar is None:
        return _off(entry)
    if name == "all_queries":
        # the golden queries that count: a judged relevant document (a missing one scored 0 is in queries)
        evaluated = sum(1 for q in queries.values() if q["rel"] > 0) + (0 if scored_zero else len(missing))
        if not evaluated:
            return _not_evaluated(entry, "no golden query has a judged relevant document", policy)
        if scored_zero and missing:
            result = _rule(entry, True, [], _status(True))
            result["evaluated"], result["scored_zero"] = evaluated, list(missing)
            return _status_last(result)
        result = _rule(entry, not missing, list(missing), _status(not missing))
        result["evaluated"] = evaluated
        return _status_last(result)
    failing: list[str] = []
    evaluated = 0
    circular = 0  # stage1_recall: queries whose every judged chunk lies in stage 1 (1 by construction)
    for qid, q in queries.items():
        if (name == "stage1_recall" and q["stage1_circular"]) or (
            name == "recall_at_20" and q.get("r20_circular")
        ):
            circular += 1
            continue
        if name == "rel_at_least_k":
            value: float | None = q["rel"] / k
        elif name == "no_duplicates":  # repeated ids, and ids of the same text when texts are known
            value = float(len(q["duplicates"]) + len(q.get("same_text", [])))
        else:
            value = q[figure] if figure is not None else None
        if value is None:
            continue
        evaluated += 1
        if not bar.holds(value):
            failing.append(qid)
    if not evaluated:
        stage1 = "no stage-1 figure: the run is no deeper than k; give --fetch-run or --fetch-depth"
        if stage1_known:
            stage1 = "no query has a judged relevant document: stage-1 recall is undefined for every query"
        if circular:
            stage1 = (
                f"circular: every judged chunk of {circular} of {len(queries)} queries is in this run's stage 1 "
                f"({f'its top {fetch_depth}' if fetch_depth else 'the fetch run'}), so stage-1 recall is 1 by "
                "construction (as when the labels were pooled "
                f"from this run): {CIRCULAR_ADVICE}"
            )
        reasons = {
            "stage1_recall": stage1,
            "recall_at_20": (
                f"circular: every judged chunk of {circular} of {len(queries)} queries is in this run's top 20, "
                f"so R@20 is 1 by construction: {CIRCULAR_ADVICE}"
                if circular
                else "no query defines the figure"
            ),
            "label_coverage": "label coverage unknown: give --corpus or --corpus-size",
        }
        return _not_evaluated(entry, reasons.get(name, "no query defines the figure"), policy)
    passed = not failing
    result = _rule(entry, passed, failing, _status(passed))
    result["evaluated"] = evaluated
    if evaluated < len(queries):
        result["undefined"] = len(queries) - evaluated - circular
        if circular:
            result["circular"] = circular
    return _status_last(result)


def _rule(head: RuleHead, passed: bool | None, queries: list[str], status: str) -> RuleResult:
    """A rule's result: its head, whether it passed, the queries that failed it, its status (the
    keys a rule may add are set on it after: a TypedDict built whole, not spread from another)."""
    return {
        "rule": head["rule"],
        "bar": head["bar"],
        "scope": head["scope"],
        "source": head["source"],
        "passed": passed,
        "queries": queries,
        "status": status,
    }


def _status_last(result: RuleResult) -> RuleResult:
    """``status`` after the keys a rule adds, where check's JSON has always printed it (its bytes kept)."""
    shown = cast(dict[str, Any], result)
    shown["status"] = shown.pop("status")
    return result


def _not_evaluated(entry: RuleHead, reason: str, policy: Policy) -> RuleResult:
    """A rule that applies but has no evidence to be evaluated on, with why: never a pass. It fails
    (passed False) unless the policy says ``not_evaluated: warn`` (passed None, listed as a warning)."""
    result = _rule(entry, False if policy.not_evaluated == "fail" else None, [], "not evaluated")
    result["reason"] = reason
    return _status_last(result)


def _pooled_here(result: RuleResult, claim: str, policy: Policy) -> RuleResult:
    """``stage1_recall`` when golden.yaml's provenance pooled every label from this run (``claim``,
    the audit's ``provenance``): not evaluated, the claim first, then what the evidence said."""
    if result["status"] in ("off", "not applicable"):
        return result
    entry: RuleHead = {
        "rule": result["rule"],
        "bar": result["bar"],
        "scope": result["scope"],
        "source": result["source"],
    }
    said = result.get("reason")
    if result["status"] == "not evaluated" and said:
        return _not_evaluated(entry, f"{claim}; {said.removeprefix('circular: ')}", policy)
    return _not_evaluated(entry, f"{claim}: {CIRCULAR_ADVICE}", policy)


def _not_applicable(entry: RuleHead, reason: str) -> RuleResult:
    """A rule whose subject is absent (no judge for this run; a broad-corpus rule on a narrow
    corpus): named, with why; it passes nothing and fails nothing."""
    result = _rule(entry, None, [], "not applicable")
    result["reason"] = reason
    return _status_last(result)


def _off(entry: RuleHead) -> RuleResult:
    """A rule the policy turned off (or never set a bar for)."""
    result = _rule(entry, None, [], "off")
    result["reason"] = "off (no bar set)"
    return _status_last(result)


OUTCOME_PASSED = {"passed": True, "failed": False, "warning": None}


def _judge_rule(
    name: str,
    policy: Policy,
    entries: Sequence[JudgeOutcome] | None,
    why_none: str,
    superseded: Sequence[SupersededOutcome] = (),
) -> RuleResult:
    rule = policy.rule(name)
    bar = rule.bar_for(policy.corpus)
    head: RuleHead = {
        "rule": name,
        "bar": rule.bar_text(policy.corpus),
        "scope": "judge",
        "source": rule.source,
    }
    listed = [s.copy() for s in superseded]

    def result(passed: bool | None, status: str, judges: list[JudgeOutcome], reason: str = "") -> RuleResult:
        out = _rule(head, passed, [], status)
        out["superseded"], out["judges"] = listed, judges
        shown = cast(dict[str, Any], out)  # the keys in the order check's JSON has always had them
        for key in ("queries", "superseded", "passed", "status", "judges"):
            shown[key] = shown.pop(key)
        if reason:
            out["reason"] = reason
        return out

    if bar is None:
        return result(None, "off", [], "off (no bar set)")
    if entries is None or not entries:  # no judge (or no grade) bears on this run: nothing to judge
        return result(None, "not applicable", [], why_none)
    judged = [e.copy() for e in entries]
    outcomes = [e["outcome"] for e in judged]
    status = "failed" if "failed" in outcomes else ("warning" if "warning" in outcomes else "passed")
    return result(OUTCOME_PASSED[status], status, judged)


def _unshown(policy_undecided: str) -> str:
    """The outcome of a figure not shown: ``failed`` unless the policy says ``undecided: warn``."""
    return "warning" if policy_undecided == "warn" else "failed"


def faithfulness_entry(
    name: str,
    rate: float | None,
    ci: Sequence[float] | None,
    n: int,
    bar: Bar,
    how: str,
    undecided: str = "fail",
    *,
    unlabelled: tuple[int, str] | None = None,
) -> JudgeOutcome:
    """One source of a faithfulness pass rate held to its bar, read as ``kappa`` reads its interval:
    passed when the interval's lower end meets the bar, failed when its upper end does not; in between
    it is undecided (not shown): failed, or a warning under ``undecided: warn``, with about how many
    more human-labelled items would decide it. ``unlabelled`` (how many items are left to label, and
    what they are of: "40 traces of this golden set's queries") says so when that estimate is more
    than could be labelled."""
    shown_ci = list(ci) if ci else None

    def entry(outcome: str, verdict: str, reason: str | None) -> JudgeOutcome:
        return {
            "judge": name,
            "rate": rate,
            "ci": shown_ci,
            "n": n,
            "how": how,
            "outcome": outcome,
            "verdict": verdict,
            "reason": reason,
        }

    if rate is None or not ci:
        return entry(_unshown(undecided), "undefined", f"no pass rate with an interval ({how}): not shown")
    shown = decisive(rate, bar)
    low, high = decisive(ci[0], bar), decisive(ci[1], bar)
    if bar.holds(ci[0]):
        return entry("passed", "shown above", None)
    if not bar.holds(ci[1]):
        return entry("failed", "shown below", f"{shown}, its interval [{low}, {high}] is below {bar}")
    more = labels_to_decide(rate, ci, n, bar=bar.value)
    return {
        "judge": name,
        "rate": rate,
        "ci": shown_ci,
        "n": n,
        "how": how,
        "outcome": _unshown(undecided),
        "verdict": "undecided",
        "more_labels": more,
        "reason": f"undecided: {shown} but its interval [{low}, {high}] reaches {bar}"
        + (f"; about {more} more human-labelled items would decide it" if more else "")
        + (_beyond_reach(more, unlabelled) if more else ""),
    }


def _beyond_reach(more: int, unlabelled: tuple[int, str] | None) -> str:
    """When the labels that would decide a rate outnumber the items left to label: the store's count,
    and what it means (the estimate assumes the same rate on more items, which may not exist)."""
    if unlabelled is None or more <= unlabelled[0]:
        return ""
    left, of = unlabelled
    return (
        f", but only {left} of the {of} are unlabelled: a rate this close to the bar may never be decided "
        "by labelling more"
    )


def judge_name(judge: Mapping[str, Any]) -> str:
    """How a report names a judge: name and version, the fingerprint beside (and the rubric when the
    name does not say it): ``gpt-4o-mini/relevance v2 (0b187b4953d3d59a)``; an unnamed one by
    fingerprint."""
    fingerprint = str(judge.get("fingerprint") or "")[:16]
    if judge.get("name"):
        rubric = "" if judge["rubric"] in judge["name"] else f", {judge['rubric']}"
        return f"{judge['name']} v{judge.get('version', 1)} ({fingerprint}{rubric})"
    return f"judge {fingerprint} ({judge.get('model') or judge.get('kind')}, {judge['rubric']})"


def evidence_text(consensus: Mapping[str, Any], golden_queries: int | None = None) -> str:
    """What a judge's figure read (issue #40): "on 120 labels over 12 of this golden set's 30 queries,
    3 people, weeks 2026-W47 to 2026-W48"."""
    design = consensus.get("design") or {}
    parts = [f"on {consensus.get('n', 0)} labels"]
    queries = design.get("queries")
    if queries is not None:
        parts[0] += (
            f" over {queries} of this golden set's {golden_queries} queries"
            if golden_queries is not None
            else f" over {queries} queries"
        )
    if design.get("people") is not None:
        parts.append(f"{design['people']} {'person' if design['people'] == 1 else 'people'}")
    weeks = consensus.get("weeks")
    if weeks:
        parts.append(f"week {weeks[0]}" if weeks[0] == weeks[1] else f"weeks {weeks[0]} to {weeks[1]}")
    return ", ".join(parts)


def kappa_entry(
    judge: ReviewJudge, bar: Bar, undecided: str = "fail", golden_queries: int | None = None
) -> JudgeOutcome:
    """One judge's calibration verdict held to the kappa rule (the review's verdict at the bar):
    trusted passes, not trusted fails; undecided, uncalibrated, stale and undefined are not shown: they fail,
    or warn under ``undecided: warn``, with the deciding kappa, its interval and n beside."""
    consensus = judge["consensus"]
    kappa, n, ci = consensus.get("kappa"), consensus.get("n", 0), consensus.get("ci")

    def entry(outcome: str, reason: str | None) -> JudgeOutcome:
        return {
            "judge": judge_name(judge),
            "name": judge.get("name"),
            "version": judge.get("version"),
            "fingerprint": judge["fingerprint"],
            "rubric": judge["rubric"],
            "kappa": kappa,
            "ci": ci,
            "n": n,
            "weights": consensus.get("weights"),
            "statistic": consensus.get("statistic"),
            "verdict": judge["verdict"],
            "more_labels": judge.get("more_labels"),
            "outcome": outcome,
            "reason": reason,
            "evidence": evidence_text(consensus, golden_queries),
        }

    shown = decisive(kappa, bar) if kappa is not None else "undefined"
    if judge["verdict"] == "trusted":
        return entry("passed", None)
    if judge["verdict"] == "undecided":
        more = judge.get("more_labels")
        return entry(
            _unshown(undecided),
            f"undecided: kappa {shown}, its interval reaches {bar}: not shown"
            + (f"; about {more} more human-labelled items would decide it" if more else ""),
        )
    if judge["verdict"] in ("uncalibrated", "undefined", "stale"):
        why = judge.get("status_reason") or consensus.get("undefined_reason") or judge["verdict"]
        return entry(_unshown(undecided), f"{judge['verdict']}: {why}: not shown")
    return entry("failed", f"kappa {shown} is not {bar}: its interval's upper end is below the bar")


def check_report(
    audit: AuditReport,
    ev: Evaluation,
    policy: Policy,
    *,
    faithfulness: Sequence[JudgeOutcome] | None = None,
    judges: Sequence[JudgeOutcome] | None = None,
    superseded: Sequence[SupersededOutcome] = (),
    store: str | None = None,
    store_reason: str = "no store: ./denominator.db is not there; give --db",
    bounds: Mapping[str, RankingBound] | None = None,
) -> CheckReport:
    """The check report (the JSON of ``python -m calibration check --format json``). ``store``: the
    store the judge rules read, as printed (no credentials); None: ``store_reason`` says why none.
    ``bounds``: per query whose ranking figures are below the diagnosis bars, what its unjudged
    chunks could make of them (:func:`calibration.ranking_bound.ranking_bound`)."""
    k = audit["k"]
    index = {qid: i for i, qid in enumerate(ev.qids)}
    r20 = ev.values.get(Measure("R", 20))
    scored_zero = ev.missing == "zero"
    missing = list(audit.get("missing_relevant", audit["missing_from_run"]))
    queries: dict[str, CheckQuery] = {}
    for qid, a in audit["queries"].items():
        i = index[qid]
        row: CheckFigures = {
            "fetch_recall": a["recall_at_fetch"],
            "keep_recall": a["recall"],
            "rr": _value(ev.values[RR], i),
            "ndcg": _value(ev.values[Measure("nDCG", k)], i),
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
            "fetch_hits": a.get("fetch_hits"),
            "stage1_circular": bool(a.get("stage1_circular")),
            "retrieved": a["retrieved"],
        }
        if "judged@20" in ev.counts and a["rel"] > 0:  # R@20 circular: every judged chunk in the top 20
            row["r20_circular"] = bool(ev.counts["judged@20"][i] == ev.num_judged[i])
        if "same_text" in a:  # the texts were compared
            row["same_text"] = a["same_text"]
        bound = bounds.get(qid) if bounds is not None else None
        if bound is not None and bound.unjudged:
            row["unjudged_top"] = bound.unjudged
            row["rr_best"] = bound.rr_best
            row["ndcg_best"] = bound.ndcg_best
        findings = list(a["findings"]) + _diagnose(row, policy, bound)
        query: CheckQuery = {**row, "scored_zero": True, "findings": findings}
        if not (scored_zero and qid in audit["missing_from_run"]):
            del query["scored_zero"]  # said only of a query not in the run, scored as retrieving nothing
        queries[qid] = query

    def mean_of(figure: MeanFigure) -> FigureMean:
        return _mean([q[figure] for q in queries.values()])

    total_rel = sum(q["rel"] for q in queries.values())
    counts: dict[str, int] = {}
    for q in queries.values():
        for code in q["findings"]:
            counts[code] = counts.get(code, 0) + 1
    summary: CheckSummary = {
        "n_queries": len(queries),
        "fetch_recall": mean_of("fetch_recall"),
        "keep_recall": mean_of("keep_recall"),
        "share_of_ceiling": mean_of("share_of_ceiling"),
        "rr": mean_of("rr"),
        "ndcg": mean_of("ndcg"),
        "label_coverage": mean_of("label_coverage"),
        "judged_at_k": mean_of("judged_at_k"),
        "recall_at_20": mean_of("recall_at_20"),
        "rel": {"mean": total_rel / len(queries) if queries else None, "total": total_rel},
        "findings": counts,
        "notes": [few_queries_note(relevant)]
        if (relevant := sum(q["rel"] > 0 for q in queries.values())) < MIN_QUERIES
        else [],
    }

    # the figure each query rule reads (all_queries: the missing queries; rel_at_least_k: |Rel| / k;
    # no_duplicates: the repeated ids, and the ids of the same text when the texts are known)
    figures: dict[str, MeanFigure | None] = {
        "all_queries": None,
        "stage1_recall": "fetch_recall",
        "recall_at_20": "recall_at_20",
        "label_coverage": "label_coverage",
        "judged_at_k": "judged_at_k",
        "rel_at_least_k": None,
        "no_duplicates": None,
    }
    # stage 1 was taken (a fetch run, or the run read to a depth), whether or not any query defines it
    stage1_known = audit["fetch_depth"] is not None or (audit.get("stage1") or "").startswith(
        "stage 1 = the fetch run"
    )
    by_text = audit.get("duplicates_by") == "id and text"
    rules: list[RuleResult] = []
    for rule in policy.rules:
        if rule.scope == "query":
            result = _query_rule(
                rule.name,
                policy,
                queries,
                figures[rule.name],
                k,
                missing,
                scored_zero,
                stage1_known,
                audit["fetch_depth"],
            )
            if rule.name == "no_duplicates" and result["status"] in ("passed", "failed"):
                result["note"] = BY_TEXT if by_text else BY_ID_ONLY
            if rule.name == "stage1_recall" and "provenance" in audit:
                result = _pooled_here(result, audit["provenance"], policy)
            rules.append(result)
        elif rule.name == "faithfulness":
            rules.append(
                _judge_rule(
                    rule.name,
                    policy,
                    faithfulness,
                    store_reason
                    if faithfulness is None
                    else f"no faithfulness label in the store {store} on traces of this golden set's queries",
                )
            )
        else:
            rules.append(
                _judge_rule(
                    rule.name,
                    policy,
                    judges,
                    store_reason
                    if judges is None
                    else f"no judge in the store {store} graded items of this golden set's queries: nothing is claimed",
                    superseded,
                )
            )
    report: CheckReport = {
        "k": k,
        "min_grade": audit["min_grade"],
        "fetch_depth": audit["fetch_depth"],
        "stage1": audit.get("stage1"),
        "corpus_size": audit["corpus_size"],
        "duplicates_by": "id and text" if by_text else "id",
        "store": store,
        "policy": policy.to_json(),
        "queries": queries,
        "missing_from_run": audit["missing_from_run"],
        "missing_relevant": missing,
        "missing": "zero" if scored_zero else "drop",
        "summary": summary,
        "rules": rules,
        "warnings": [
            r["rule"]
            for r in rules
            if r["status"] == "warning" or (r["status"] == "not evaluated" and r["passed"] is None)
        ],
        "passed": not any(r["passed"] is False for r in rules),
    }
    if "provenance" in audit:  # the claim the circular findings quote
        report["provenance"] = audit["provenance"]
    return report


def _status(passed: bool) -> str:
    return "passed" if passed else "failed"
