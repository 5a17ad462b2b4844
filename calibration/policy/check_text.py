"""How a check report is said: the text table, the Markdown for a pull-request comment, and the
policy's table (``check --help``, docs/check.md, the page). One home for every face."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

from annotation.render import align, decisive, num, signed
from calibration.policy.check import DIAGNOSES, diagnosis_text
from calibration.policy.finding_words import coverage_denominator, finding_text, policy_help
from calibration.results import (
    CheckDiff,
    CheckQuery,
    CheckReport,
    FigureMean,
    HistoryEntry,
    HistoryRow,
    JudgeOutcome,
    RelMean,
    RuleResult,
)

__all__ = [
    "settings_lines",
    "check_table",
    "check_markdown",
    "policy_help",
    "rule_status",
    "result_text",
    "finding_line",
    "FIGURE_HEADER",
]

FIGURE_HEADER = ["query", "R@fetch", "R@k", "RR", "nDCG@k", "|Rel|", "k", "coverage"]


def queries(n: int | None) -> str:
    """``1 query``, ``4 queries``."""
    return f"{n} {'query' if n == 1 else 'queries'}"


def _cell(value: float | None, what: str = "") -> str:
    """A figure of the table: ``n/a`` for a stage-1 figure without a stage 1 (``what`` "no stage"),
    ``undef`` for one that is undefined (nothing relevant: it said n/a beside R@k's undef, #43)."""
    if value is None and what == "coverage":
        return "unknown"
    if value is None and what == "no stage":
        return "n/a"
    return num(value, 3)


def figure_rows(report: CheckReport) -> list[list[str]]:
    """The seven figures per query, then the means (with how many queries each rests on)."""
    fetch = "no stage" if report["fetch_depth"] is None else ""  # no stage 1: not applicable
    rows = [
        [qid, _cell(q["fetch_recall"], fetch), _cell(q["keep_recall"]), _cell(q["rr"]), _cell(q["ndcg"])]
        + [str(q["rel"]), str(q["k"]), _cell(q["label_coverage"], "coverage")]
        for qid, q in report["queries"].items()
    ]
    s = report["summary"]
    # "mean of N": N the queries the recall mean is over (those with a judged relevant chunk); a
    # figure defined on another count says its own ("0.875 (of 3)")
    n = s["n_queries"] - s["keep_recall"]["undefined"]

    def mean(figure: FigureMean, what: str = "") -> str:
        cell = _cell(figure["mean"], what)
        over = s["n_queries"] - figure["undefined"]
        return f"{cell} (of {over})" if figure["mean"] is not None and over != n else cell

    rows.append(
        [
            f"mean of {n}",
            mean(s["fetch_recall"], fetch),
            mean(s["keep_recall"]),
            mean(s["rr"]),
            mean(s["ndcg"]),
            _mean_rel(s["rel"]) + (f" (of {s['n_queries']})" if s["n_queries"] != n else ""),
            str(report["k"]),
            mean(s["label_coverage"], "coverage"),
        ]
    )
    return rows


def _mean_rel(rel: RelMean | int) -> str:
    """The mean |Rel| of the summary row (a report recorded before it was a mean held the total)."""
    if isinstance(rel, Mapping):
        return num(rel["mean"], 2)
    return f"total {rel}"


def finding_line(code: str, q: CheckQuery, report: CheckReport) -> str:
    """One finding of a query in words (the audit's wording, or the diagnosis's)."""
    if code in DIAGNOSES:
        return diagnosis_text(code, q, report["policy"])
    audit_like: Mapping[str, Any] = {
        **q,
        "recall": q["keep_recall"],
        "recall_at_fetch": q["fetch_recall"],
        "precision_ceiling": min(1.0, q["rel"] / q["k"]),
    }
    return finding_text(code, audit_like, q["k"], report.get("provenance"))


def rule_status(rule: RuleResult) -> str:
    """``passed``, ``FAILED for q_faw, q_milk``, ``warning for 2 of 2 judges``, ``not evaluated: ...``;
    then the rule's note (no_duplicates: by id only, or by text too)."""
    return _rule_words(rule) + (f"; {rule['note']}" if rule.get("note") else "")


def _rule_words(rule: RuleResult) -> str:
    status = rule.get("status") or {True: "passed", False: "failed", None: "not evaluated"}[rule["passed"]]
    if status == "not applicable":
        return f"not applicable: {rule.get('reason')}"
    if status == "off":
        return "off"
    judges = rule.get("judges") or []
    if rule["rule"] == "all_queries" and status in ("passed", "failed"):
        n = rule.get("evaluated")
        if rule.get("scored_zero"):
            return f"passed ({queries(n)}; not in the run, scored 0: {', '.join(rule['scored_zero'])})"
        if rule["passed"]:
            return f"passed (all {queries(n)} with judged relevant documents are in the run)"
        return (
            f"FAILED: {len(rule['queries'])} of {queries(n)} with judged relevant documents "
            f"not in the run: {', '.join(rule['queries'])} (--missing zero scores them 0)"
        )
    left = f"; {rule['circular']} circular, left out" if rule.get("circular") else ""
    if status == "passed":
        n = rule.get("evaluated")
        if judges:
            return f"passed ({len(judges)} of {len(judges)})"
        return "passed" + (f" ({queries(n)}{left})" if n is not None else "")
    if status == "warning":
        warned = [j["judge"] for j in judges if j.get("outcome") == "warning"]
        return (
            f"warning for {len(warned)} of {len(judges)}: {', '.join(warned)} "
            "(not shown; the policy says undecided: warn)"
        )
    if status == "not evaluated":
        said = "FAILED" if rule["passed"] is False else "warning"
        why = (
            "the policy says not_evaluated: warn"
            if rule["passed"] is None
            else "not_evaluated: warn makes it a warning"
        )
        return f"{said}, not evaluated: {rule.get('reason')} ({why})"
    if rule["scope"] == "judge":
        failed = [j["judge"] for j in judges if j.get("outcome") == "failed"]
        return f"FAILED for {len(failed)} of {len(judges)}: {', '.join(failed)}"
    n = rule.get("evaluated")
    head = f"FAILED for {len(rule['queries'])} of {queries(n) if n is not None else 'the queries'}"
    return f"{head}: {', '.join(rule['queries'])}" + (f" ({left[2:]})" if left else "")


def _header(report: CheckReport) -> list[str]:
    """What the report read: stage 1, the store (without credentials), the queries left out."""
    lines = []
    if stage1 := report.get("stage1"):
        lines.append(stage1)
    lines.append(
        f"store: {report['store']} (the judge rules read it)"
        if report.get("store")
        else f"store: none ({_store_reason(report)})"
    )
    return lines


def _store_reason(report: CheckReport) -> str:
    rule = next((r for r in report["rules"] if r["scope"] == "judge" and r.get("reason")), None)
    reason = rule["reason"] if rule else "not read"
    return reason.removeprefix("no store: ")


def missing_line(report: CheckReport) -> str | None:
    """The golden queries the run did not hold: those that count (a judged relevant document),
    scored 0 or not checked, and those with none (nothing to score either way)."""
    missing = report["missing_from_run"]
    if not missing:
        return None
    counted = report.get("missing_relevant", missing)
    others = len(missing) - len(counted)
    none = f"; {queries(others)} with no judged relevant document, nothing to score" if others else ""
    if not counted:
        return (
            f"{queries(len(missing))} of the golden set not in the run, none with a judged relevant document"
        )
    if report.get("missing") == "zero":
        return f"{queries(len(counted))} of the golden set not in the run: scored 0 (--missing zero){none}"
    shown = ", ".join(counted[:10]) + (f" and {len(counted) - 10} more" if len(counted) > 10 else "")
    return f"{queries(len(counted))} of the golden set not in the run: {shown}{none}"


def findings_summary(report: CheckReport) -> str | None:
    """``findings over 4 queries: loss_at_cut 4, ranking_weak 1``: each code with how many queries
    carry it, over how many (None when no query has one)."""
    counts = report["summary"]["findings"]
    if not counts:
        return None
    n = report["summary"]["n_queries"]
    return f"findings over {queries(n)}: " + ", ".join(f"{code} {c} of {n}" for code, c in counts.items())


def check_table(report: CheckReport, qrels_path: str = "", run_path: str = "") -> str:
    k = report["k"]
    s = report["summary"]
    p = report["policy"]
    lines = [
        f"check at k = {k}"
        + (f" of {run_path}" if run_path else "")
        + (f" against {qrels_path}" if qrels_path else "")
        + f"; relevant = grade >= {report['min_grade']}; policy: {p['source']} (corpus: {p['corpus']})",
        *_header(report),
        "",
        align([FIGURE_HEADER] + figure_rows(report)),
        *([coverage_denominator(size)] if (size := report.get("corpus_size")) is not None else []),
        "",
    ]
    for note in s["notes"]:
        lines.append(f"note: {note}")
    if missing := missing_line(report):
        lines.append(missing)
    lines.append("findings:")
    any_finding = False
    for qid, q in report["queries"].items():
        for code in q["findings"]:
            any_finding = True
            lines.append(f"  {qid}: [{code}] {finding_line(code, q, report)}")
    if not any_finding:
        lines.append("  none")
    if summary := findings_summary(report):
        lines.append(summary)
    lines += ["", "rules:"]
    width = max(len(r["rule"]) + len(r["bar"]) for r in report["rules"]) + 1
    for rule in report["rules"]:
        head = f"{rule['rule']} {rule['bar']}"
        lines.append(f"  {head.ljust(width)}  {rule_status(rule)}")
        for judge in rule.get("judges") or []:
            lines.append("    " + judge_line(rule, judge))
        for old in rule.get("superseded") or []:
            lines.append(f"    {old['judge']}: {old['reason']}")
    lines.append("result: " + result_text(report))
    return "\n".join(lines) + "\n"


def result_text(report: CheckReport) -> str:
    """``FAILED: kappa (exit 1); passed 5, failed 1, warned 0, not applicable 1 (faithfulness),
    off 2``, or ``no rule failed; ...``: the rules counted by status (a rule not evaluated counts
    as failed, or as warned under ``not_evaluated: warn``)."""
    rules = report["rules"]
    failed = [r["rule"] for r in rules if r["passed"] is False]
    warned = report.get("warnings") or []
    absent = [r["rule"] for r in rules if r.get("status") == "not applicable"]
    off = sum(1 for r in rules if r.get("status") == "off")
    passed = sum(1 for r in rules if r["passed"] is True)
    counts = (
        f"passed {passed}, failed {len(failed)}, warned {len(warned)}, not applicable {len(absent)}"
        + (f" ({', '.join(absent)})" if absent else "")
        + f", off {off} (of {len(rules)} rules)"
    )
    if failed:
        return f"FAILED: {', '.join(failed)} (exit 1); {counts}"
    return "no rule failed" + (f"; warnings: {', '.join(warned)}" if warned else "") + f"; {counts}"


def judge_line(rule: RuleResult, j: JudgeOutcome) -> str:
    """One judge (or the people) under a judge rule: the figure, its interval and n with the digits
    that show the comparison with the rule's bar, the verdict, the outcome and why."""
    outcome = j["outcome"]
    status = {"passed": "passed", "failed": "FAILED", "warning": "warning"}.get(outcome, outcome)
    bar = bar_value(rule.get("bar"))

    def shown(value: float | None) -> str:
        return decisive(value, *([] if bar is None else [bar]), medium="prose")

    ci = j.get("ci")
    ci_text = f" [{shown(ci[0])}, {shown(ci[1])}]" if ci else ""
    if rule["rule"] == "faithfulness":
        figure = f"pass rate {shown(j['rate'])}{ci_text}, n = {j['n']} ({j['how']})"
    else:
        figure = (
            f"{j.get('statistic') or 'unweighted'} kappa {shown(j['kappa'])}{ci_text}, n = {j['n']}, "
            f"verdict {j['verdict']}" + (f" ({j['evidence']})" if j.get("evidence") else "")
        )
    return f"{j['judge']}: {figure}: {status}" + (f" ({j['reason']})" if j.get("reason") else "")


def bar_value(text: object) -> float | None:
    """The number of a rule's bar as printed (``>= 0.7``, ``> 0.6875``); None for off, ``>= k``, ..."""
    try:
        return float(str(text).split()[-1])
    except (ValueError, IndexError):
        return None


def check_markdown(report: CheckReport, qrels_path: str = "", run_path: str = "") -> str:
    """The report as a pull-request comment: the verdict first, then the rules, the figures, the findings.
    Data strings (query ids, paths) are put in code spans so Markdown cannot act on them."""

    def code(text: object) -> str:
        value = str(text).replace("`", "'").replace("\n", " ")
        return f"`{value}`"

    k = report["k"]
    lines = [
        "### Denominator check: " + result_text(report).replace(" (exit 1)", ""),
        "",
        f"k = {k}; relevant = grade >= {report['min_grade']}"
        + (f"; run {code(run_path)}" if run_path else "")
        + (f"; labels {code(qrels_path)}" if qrels_path else "")
        + f"; corpus: {report['policy']['corpus']}",
        "",
        *[f"{line}  " for line in _header(report)],
        "",
        "| rule | bar | result |",
        "|---|---|---|",
    ]
    for rule in report["rules"]:
        status = rule_status(rule)
        if rule["scope"] == "query" and rule["queries"]:
            status = f"FAILED for {len(rule['queries'])} of {rule.get('evaluated')} queries: " + ", ".join(
                code(q) for q in rule["queries"]
            )
        lines.append(f"| {rule['rule']} | {rule['bar']} | {status.replace('|', '/')} |")
    judge_lines = [
        f"- {rule['rule']}: {judge_line(rule, j)}"
        for rule in report["rules"]
        for j in rule.get("judges") or []
    ]
    if judge_lines:
        lines += ["", *judge_lines]
    lines += [
        "",
        "| " + " | ".join(h.replace("|", "\\|") for h in FIGURE_HEADER) + " |",
        "|" + "---|" * len(FIGURE_HEADER),
    ]
    for row in figure_rows(report):
        lines.append(
            "| " + " | ".join([code(row[0]) if row[0] in report["queries"] else row[0]] + row[1:]) + " |"
        )
    findings = [
        f"- {code(qid)} **{c}**: {finding_line(c, q, report)}"
        for qid, q in report["queries"].items()
        for c in q["findings"]
    ]
    if findings:
        lines += ["", "Findings:", ""] + findings
    if missing_line(report):
        lines += ["", f"_{missing_line(report)}_"]
    for note in report["summary"]["notes"]:
        lines += ["", f"_Note: {note}_"]
    return "\n".join(lines) + "\n"


HISTORY_HEADER = [
    "id",
    "run",
    "recorded (UTC)",
    "k",
    "queries",
    "R@k",
    "R@fetch",
    "MRR",
    "nDCG@k",
    "coverage",
    "labels",
    "queries held",
    "result",
]


def history_rows(entries: Sequence[HistoryEntry]) -> list[list[str]]:
    """One row per recorded check; a label set that changed since the run's previous report is
    marked ``changed`` beside its hash, so a change of labels is not read as a change of system."""
    rows = []
    for e in entries:
        m = e["means"]
        labels = f"{e['golden_hash'][:8]} ({e['golden_labels']})" + (
            " changed" if e["labels_changed"] else ""
        )
        rows.append(
            [
                str(e["id"]),
                e["name"],
                e["created_at"][:19].replace("T", " "),
                str(e["k"]),
                str(e["n_queries"]),
                num(m["keep_recall"], 3),
                num(m["fetch_recall"], 3),
                num(m["rr"], 3),
                num(m["ndcg"], 3),
                num(m["label_coverage"], 3),
                labels,
                held_text(e),
                "passed" if not e["failed"] else "FAILED: " + ", ".join(e["failed"]),
            ]
        )
    return rows


def held_text(e: HistoryEntry) -> str:
    """``4``, ``1 (3 missing) changed``: the queries the run held, marked when the set changed."""
    text = str(e.get("queries_held", e["n_queries"]))
    if e.get("missing_from_run"):
        text += f" ({e['missing_from_run']} missing)"
    return text + (" changed" if e.get("queries_changed") else "")


def unreadable_lines(entries: Sequence[HistoryRow]) -> list[str]:
    """``check 3 (bm25): its report cannot be read (not JSON): skipped``, one per such row."""
    return [
        f"check {e['id']} ({e['name']}): its report cannot be read ({e['unreadable']}): skipped"
        for e in entries
        if "unreadable" in e
    ]


def readable(entries: Sequence[HistoryRow]) -> list[HistoryEntry]:
    """The recorded checks whose reports can be read (the rest: :func:`unreadable_lines`)."""
    return [e for e in entries if "unreadable" not in e]


def history_table(rows: Sequence[HistoryRow]) -> str:
    if not rows:
        return "no recorded check yet: `python -m calibration check ... --record --name NAME` keeps one\n"
    skipped = unreadable_lines(rows)
    entries = readable(rows)
    lines = ([align([HISTORY_HEADER] + history_rows(entries)), ""] if entries else []) + skipped
    lines += settings_lines(entries)
    if any(e["labels_changed"] for e in entries):
        lines.append(
            "labels: the hash of the judgments (how many); 'changed' = not the labels of the run's previous "
            "report: a difference there may be the labels', not the system's"
        )
    if any(e.get("queries_changed") for e in entries):
        lines.append(
            "queries held: the golden queries the run answered; 'changed' = not the query set of the run's "
            "previous report: its means are over other queries (a changed denominator, not a better system)"
        )
    return "\n".join(lines) + "\n"


DIFF_FIGURES: tuple[tuple[Literal["keep_recall", "fetch_recall", "rr", "ndcg", "rel"], str], ...] = (
    ("keep_recall", "R@k"),
    ("fetch_recall", "R@fetch"),
    ("rr", "RR"),
    ("ndcg", "nDCG@k"),
    ("rel", "|Rel|"),
)


def diff_table(diff: CheckDiff) -> str:
    a, b = diff["first"], diff["second"]
    header = (
        ["query"]
        + [f"{label} {which}" for _key, label in DIFF_FIGURES for which in ("first", "Δ")]
        + ["findings"]
    )
    rows = [header]
    for qid, row in diff["queries"].items():
        cells = [qid]
        for key, _label in DIFF_FIGURES:
            cell = row[key]
            cells.append(num(cell["first"], 3) if key != "rel" else str(cell["first"]))
            cells.append(signed(cell["delta"], 3) if key != "rel" else signed_int(cell["delta"]))
        change = [f"+{c}" for c in row["findings_gained"]] + [f"-{c}" for c in row["findings_lost"]]
        cells.append(" ".join(change) or "-")
        rows.append(cells)
    settings = diff.get("settings_changed") or []
    lines = (
        [
            f"settings changed: {', '.join(settings)}: the two checks measured differently; the changes "
            "below follow the settings, not the system",
            "",
        ]
        if settings
        else []
    )
    lines += [
        f"check {b['id']} ({b['name']}, {b['created_at'][:19]}) minus check {a['id']} ({a['name']}, "
        f"{a['created_at'][:19]}), per query held by both; Δ = second - first"
        + (" (under other settings)" if settings else ""),
        "",
        align(rows),
    ]
    for side, ids, what in (
        ("dropped", diff["dropped"], "in the first, not in the second"),
        ("added", diff["added"], "in the second, not in the first"),
    ):
        if ids:
            lines += ["", f"{side}: {', '.join(ids)} ({what}: the query set changed, not its figures)"]
    if diff["labels_changed"]:
        lines += [
            "",
            f"the labels changed between the two ({a['golden_hash'][:8]}, {a['golden_labels']} labels -> "
            f"{b['golden_hash'][:8]}, {b['golden_labels']}): a difference may be the labels', not the system's",
        ]
    return "\n".join(lines) + "\n"


def signed_int(value: float | None) -> str:
    return "undef" if value is None else f"{int(value):+d}"


def settings_lines(entries: Sequence[HistoryEntry]) -> list[str]:
    """``settings changed at check 2 (bm25): k 5 -> 10: ...``, one per recorded check measured under
    other settings than its run's previous one (issue #40: a setting is not the system)."""
    return [
        f"settings changed at check {e['id']} ({e['name']}): {', '.join(e['settings_changed'])}: its "
        "figures follow the settings, not the system"
        for e in entries
        if e.get("settings_changed")
    ]
