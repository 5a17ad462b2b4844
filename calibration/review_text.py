"""How the weekly review is said: the lines every export shows, Markdown, HTML and JSON (one
wording for the CLI, the page and the files)."""

from __future__ import annotations

import html
import json
from collections.abc import Mapping
from typing import Any

from annotation.render import decisive, interval, num
from calibration.results import (
    AgreementPair,
    KappaEntry,
    PassRate,
    PositionReport,
    ReviewJudge,
    ReviewReport,
    TrendPoint,
)
from calibration.stats.verdict import SAMPLE_RANGE, design_line

__all__ = [
    "same_grade",
    "sample_note",
    "design_text",
    "no_interval",
    "version_label",
    "judge_title",
    "drift_text",
    "superseded_text",
    "position_text",
    "pass_rate_text",
    "summary_lines",
    "to_markdown",
    "to_html",
    "to_json",
]


def version_label(judge: Mapping[str, Any]) -> str:
    """A judge's name and version, the current one marked: ``gpt-4.1-mini/relevance v3 (current)``
    (the Judge page's, the judge list's and the review's wording: a store's judge row or a
    :class:`~calibration.results.ReviewJudge`)."""
    return f"{judge['name']} v{judge['version']}" + (" (current)" if judge.get("current") else "")


def judge_title(j: ReviewJudge) -> str:
    """How the review names a judge: its name and version, and the served model when it moved
    (``gpt-x/relevance v1 (current), served gpt-x-0613 since 2026-12-01``)."""
    title = version_label(j) if j.get("name") else f"judge {j['fingerprint'][:16]}"
    drift = j.get("served_model_changed")
    if drift:
        title += f", served {drift[-1]['to']} since {drift[-1]['first_after'][:10]}"
    return title


def drift_text(j: ReviewJudge) -> str:
    """``served_model_changed``: what the endpoint served before and after, when, and what this
    review rests on ("" when it never changed)."""
    drift = j.get("served_model_changed")
    if not drift:
        return ""
    moves = "; ".join(
        f"{d['from']} until {d['last_before'][:19]}, then {d['to']} from {d['first_after'][:19]}"
        for d in drift
    )
    return (
        f"served_model_changed: the endpoint served {moves} (same fingerprint: the model asked for did not "
        f"change); the answers since the change are calibrated as a new version, "
        f"{j.get('left_out_served_before', 0)} items answered only before it are left out"
    )


def no_interval(entry: Mapping[str, Any]) -> str:
    """Why a defined kappa has no interval: too few queries (the design), else too few items."""
    design = entry.get("design") or {}
    queries = design.get("queries")
    if queries is not None and queries < design.get("min_queries", 0):
        return f"no interval: {queries} {'query' if queries == 1 else 'queries'}, an interval needs {design['min_queries']}"
    return "no interval"


def _k(entry: KappaEntry) -> str:
    """``0.716 [0.286, 1.000] (n = 18)``, or undefined with its reason (never 0.000); a kappa with no
    interval says why (``0.145 (n = 20; no interval: 2 queries, an interval needs 5)``)."""
    if entry.get("kappa") is None:
        return f"undefined ({entry.get('undefined_reason') or 'no items'})"
    ci = entry.get("ci")
    shown = (
        decisive(entry["kappa"], entry["bar"]) if entry.get("bar") is not None else f"{entry['kappa']:.3f}"
    )
    if not ci:
        return shown + f" (n = {entry['n']}; {no_interval(entry)})"
    return shown + f" {interval(ci, 3, 'prose')} (n = {entry['n']})"


def weighted_text(entry: KappaEntry) -> str:
    """The kappas the verdict did not read, beside it: ``quadratic 0.820 [0.700, 0.900]``."""
    parts = []
    for name, k in (entry.get("kappas") or {}).items():
        if name == entry.get("statistic"):
            continue
        ci = interval(k["ci"], 3, "prose") if k["ci"] or k["kappa"] is None else "(no interval)"
        parts.append(f"{name} {num(k['kappa'], 3, 'prose')} {ci}")
    return "; ".join(parts)


def same_grade(pair: AgreementPair) -> str:
    """The items both raters of a pair gave the same grade, over the items both rated: ``21 / 24``
    (the confusion matrix's diagonal; the observed agreement as counts, what ``agree`` and the
    Agreement page show)."""
    confusion = pair.get("confusion") or []
    return f"{sum(int(row[i]) for i, row in enumerate(confusion))} / {pair.get('n', 0)}"


def design_text(entry: KappaEntry) -> str:
    """How the verdict's labels were drawn and read, in words ("" for an entry without a design)."""
    line = design_line(entry)
    drawn = entry.get("drawn")
    if line and drawn:
        line += f"; {drawn['how']}"
    elif line and entry.get("kappa") is not None:
        line += "; how the items were drawn is not known"
    return line


def verdict_text(j: ReviewJudge) -> str:
    """The verdict with the evidence that decides it: the statistic, its interval, n and the bar."""
    c = j["consensus"]
    head = f"verdict: {j['verdict']}"
    if c.get("kappa") is None:
        reason = j["status_reason"] if j["verdict"] == "uncalibrated" else c.get("undefined_reason")
        return head + f" ({reason})"
    if j["verdict"] == "uncalibrated":  # the deciding kappa is printed, calibrated or not
        return (
            head + f" ({j['status_reason']}): {c['statistic']} kappa {_k(c)} against the bar {c['bar']}, "
            "not shown until the evidence is there"
        )
    rule = {
        "trusted": "its lower end reaches the bar",
        "not trusted": "its upper end is below the bar",
        "undecided": "its interval reaches the bar",
    }.get(j["verdict"], "")
    more = (
        f"; about {j['more_labels']} more human-labelled items would decide it"
        if j.get("more_labels")
        else ""
    )
    return f"{head}: {c['statistic']} kappa {_k(c)} against the bar {c['bar']}: {rule}{more}"


def superseded_text(report: ReviewReport) -> str:
    """The earlier versions the review leaves out ("" when none)."""
    old = report.get("superseded") or []
    if not old:
        return ""
    return "not reviewed, a later version replaced them (their weeks stay in the trend): " + ", ".join(
        f"{j['name']} v{j['version']}" for j in old
    )


def position_text(p: PositionReport) -> str:
    """A pairwise judge's position bias in one sentence (the report's and the page's wording)."""

    def f(value: float | None) -> str:
        return num(value, 3, "prose")

    n = p.get("n_comparisons", 0)

    def of(count: str) -> str:
        return f" ({p.get(count, 0)} / {n})"

    return (
        f"position bias over {p['n_pairs']} pairs asked in both orders ({n} comparisons): consistency "
        f"{f(p.get('position_consistency'))}{of('n_consistent')}, primacy {f(p.get('primacy_rate'))}"
        f"{of('n_primacy')}, recency {f(p.get('recency_rate'))}{of('n_recency')}, preference fairness "
        f"{f(p.get('preference_fairness'))}, repetition stability {f(p.get('repetition_stability'))}, "
        f"mean swap-averaged preference for A {f(p.get('mean_preference_A'))}"
    )


def judge_alone(rate: PassRate) -> str:
    """The judge's own pass rate over the traces only it graded, with its counts: ``the judge alone
    says 0.833 (20 / 24 traces no person labelled)``."""
    n = int(rate.get("n_unlabeled") or 0)
    passes = round(rate["judge_only"] * n)
    return f"the judge alone says {rate['judge_only']:.3f} ({passes} / {n} traces no person labelled)"


def pass_rate_text(rate: PassRate) -> str:
    """The faithfulness pass rate corrected by PPI beside the people-only one, with what each rests
    on, or why it was not corrected (the people's own rate beside it when there is one), and when PPI
    cannot help at this n, that note (the report's and the page's wording)."""
    if rate.get("estimate") is None:
        text = f"faithfulness pass rate: not corrected ({rate['undefined_reason']})"
        human = rate.get("human_only")
        if human and human.get("estimate") is not None:
            text += (
                f"; people only: {human['estimate']:.3f}{' ' + interval(human['ci'], 3, 'prose') if human.get('ci') else ''} "
                f"over these {human.get('n', rate.get('n_labeled'))} items"
                + (f" ({human['how']})" if human.get("how") else "")
            )
            if rate.get("judge_only") is not None:
                text += f"; {judge_alone(rate)}"
        return text
    human = rate["human_only"]
    text = (
        f"faithfulness pass rate, corrected (PPI): {rate['estimate']:.3f} {interval(rate['ci'], 3, 'prose')} "
        f"from {rate['n_labeled']} labelled ({rate.get('scope', 'every labelled item')}) and "
        f"{rate['n_unlabeled']} judge-only items; people only: "
        f"{human['estimate']:.3f} {interval(human.get('ci'), 3, 'prose')}"
        + (f" ({human['how']})" if human.get("how") else "")
        + f"; {judge_alone(rate)}"
    )
    if rate.get("weak_note"):
        text += f"; {rate['weak_note']}"
    return text


def summary_lines(report: ReviewReport) -> list[tuple[str, list[str]]]:
    """(heading, lines) per judge: the figures every export shows, in words."""
    out = []
    for j in report["judges"]:
        changed = (
            f"; changed from v{j['version'] - 1}: {', '.join(j['changed']) or 'nothing named'}"
            if j.get("version", 1) > 1
            else ""
        )
        lines = [
            f"fingerprint {j['fingerprint'][:16]} ({j['kind']}, {j['model']} at {j['endpoint']}), "
            f"rubric {j['rubric']}, {j['scope']}{changed}",
            verdict_text(j),
            f"what to do: {j['advice']}",
        ]
        labelled = bool(j["consensus"].get("n"))  # no label read: no design, no figure beside it
        if labelled and design_text(j["consensus"]):
            lines.append(f"design: {design_text(j['consensus'])}")
        if drift_text(j):
            lines.append(drift_text(j))
        beside = weighted_text(j["consensus"]) if labelled else ""
        if beside:
            lines.append(f"beside it (not the verdict's statistic): {beside}")
        if (ceiling := j["ceiling"]) is not None:  # None only in check's reading (verdicts only)
            lines.append(f"human-human kappa (the ceiling, {j['consensus']['statistic']}): {_k(ceiling)}")
        if j["left_out_fitted_on"]:
            lines.append(f"left out: {j['left_out_fitted_on']} items this judge was fitted on")
        if j["out_of_fold"]:
            lines.append(
                f"on the {j['out_of_fold']} items this offline judge was fitted on, its out-of-fold "
                "(cross-validated) answers are compared, not its in-sample ones"
            )
        for name, entry in j["annotators"].items():
            lines.append(f"kappa vs {name}: {_k(entry)}")
        if j["position"]:
            lines.append(position_text(j["position"]))
        if j["pass_rate"]:
            lines.append(pass_rate_text(j["pass_rate"]))
        out.append((f"{j['rubric']}: {judge_title(j)}", lines))
    return out


def trend_judge(t: TrendPoint) -> str:
    """A trend point's judge: ``offline-lexical/relevance v2`` (its fingerprint when unnamed), with
    the served model when the endpoint said one."""
    who = f"{t['name']} v{t['version']}" if t.get("name") else t["fingerprint"][:16]
    return who + (f", served {t['served_model']}" if t.get("served_model") else "")


def rule_text(t: TrendPoint) -> str:
    """How a saved review reached its verdict: the interval rule on its statistic, or the old rule
    (a point estimate on quadratic weights) for reviews saved before it."""
    if t.get("old_rule"):
        return "old rule (point estimate, quadratic weights)"
    return f"interval, {t.get('statistic') or 'unweighted'}"


def to_markdown(report: ReviewReport) -> str:
    parts = [f"# Judge review, week {report['week']}", ""]
    if not report["judges"]:
        parts.append("No judge has graded anything yet.")
    for heading, lines in summary_lines(report):
        parts += [f"## {heading}", "", *[f"- {line}" for line in lines], ""]
    if superseded_text(report):
        parts += [superseded_text(report)[0].upper() + superseded_text(report)[1:] + ".", ""]
    if report.get("trend"):
        parts += [
            "## Trend",
            "",
            "| week | judge | rubric | n | kappa | CI | verdict | rule |",
            "|---|---|---|---:|---:|---|---|---|",
        ]
        for t in report["trend"]:
            kappa = num(t["kappa"], 3, "prose")
            ci = "" if not t["ci"] else f"[{t['ci'][0]:.3f}, {t['ci'][1]:.3f}]"
            parts.append(
                f"| {t['week']} | {trend_judge(t)} | {t['rubric']} | {t['n']} | {kappa} | {ci} | {t['verdict']} "
                f"| {rule_text(t)} |"
            )
    return "\n".join(parts).rstrip() + "\n"


def to_html(report: ReviewReport) -> str:
    body = [f"<h1>Judge review, week {html.escape(report['week'])}</h1>"]
    for heading, lines in summary_lines(report):
        body.append(f"<h2>{html.escape(heading)}</h2><ul>")
        body += [f"<li>{html.escape(line)}</li>" for line in lines]
        body.append("</ul>")
    if superseded_text(report):
        body.append(f"<p>{html.escape(superseded_text(report))}</p>")
    if report.get("trend"):
        body.append(
            "<h2>Trend</h2><table><tr><th>week</th><th>judge</th><th>rubric</th><th>n</th>"
            "<th>kappa</th><th>verdict</th><th>rule</th></tr>"
        )
        for t in report["trend"]:
            kappa = num(t["kappa"], 3, "prose")
            body.append(
                "<tr>"
                + "".join(
                    f"<td>{html.escape(str(c))}</td>"
                    for c in (
                        t["week"],
                        trend_judge(t),
                        t["rubric"],
                        t["n"],
                        kappa,
                        t["verdict"],
                        rule_text(t),
                    )
                )
                + "</tr>"
            )
        body.append("</table>")
    return (
        "<!doctype html><html><head><meta charset='utf-8'><title>Judge review "
        f"{html.escape(report['week'])}</title></head><body>" + "\n".join(body) + "</body></html>\n"
    )


def to_json(report: ReviewReport) -> str:
    return json.dumps(report, indent=1, default=str) + "\n"


def sample_note(n: int) -> str | None:
    """What the essay asks when a weekly sample of ``n`` is outside 50-100 (None inside): said beside
    the draw, which goes on."""
    low, high = SAMPLE_RANGE
    if low <= n <= high:
        return None
    why = (
        "fewer items give a kappa interval too wide to decide a verdict"
        if n < low
        else "more is more labelling than a weekly review needs"
    )
    return f"a sample of {n}: the essay asks for {low}-{high} traces a week ({why}); drawn as asked"
