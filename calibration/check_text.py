"""How a check report is said: the text table, the Markdown for a pull-request comment, and the
policy's table (``check --help``, the README, the page). One home for every face."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from annotation.render import align, num, signed
from calibration.audit import finding_text
from calibration.check import DIAGNOSES, diagnosis_text
from calibration.policy import DEFAULT_POLICY, Policy, policy_from_mapping, rules_table

__all__ = ["check_table", "check_markdown", "policy_help", "rule_status", "finding_line", "FIGURE_HEADER"]

FIGURE_HEADER = ["query", "R@fetch", "R@k", "RR", "nDCG@k", "|Rel|", "k", "coverage"]


def queries(n: int) -> str:
    """``1 query``, ``4 queries``."""
    return f"{n} {'query' if n == 1 else 'queries'}"


def _cell(value: float | None, what: str = "") -> str:
    if value is None and what == "coverage":
        return "unknown"
    if value is None and what == "fetch":
        return "n/a"
    return num(value, 3)


def figure_rows(report: Mapping[str, Any]) -> list[list[str]]:
    """The seven figures per query, then the means (with how many queries each rests on)."""
    rows = []
    for qid, q in report["queries"].items():
        rows.append(
            [
                qid,
                _cell(q["fetch_recall"], "fetch"),
                _cell(q["keep_recall"]),
                _cell(q["rr"]),
                _cell(q["ndcg"]),
                str(q["rel"]),
                str(q["k"]),
                _cell(q["label_coverage"], "coverage"),
            ]
        )
    s = report["summary"]
    rows.append(
        [
            f"mean of {s['n_queries']}",
            _cell(s["fetch_recall"]["mean"], "fetch"),
            _cell(s["keep_recall"]["mean"]),
            _cell(s["rr"]["mean"]),
            _cell(s["ndcg"]["mean"]),
            str(s["rel"]),
            str(report["k"]),
            _cell(s["label_coverage"]["mean"], "coverage"),
        ]
    )
    return rows


def finding_line(code: str, q: Mapping[str, Any], report: Mapping[str, Any]) -> str:
    """One finding of a query in words (the audit's wording, or the diagnosis's)."""
    policy = _policy(report)
    if code in DIAGNOSES:
        return diagnosis_text(code, q, policy)
    audit_like = {
        **q,
        "recall": q["keep_recall"],
        "recall_at_fetch": q["fetch_recall"],
        "precision_ceiling": min(1.0, q["rel"] / q["k"]),
    }
    return finding_text(code, audit_like, q["k"])


def rule_status(rule: Mapping[str, Any]) -> str:
    """``passed``, ``FAILED for q_faw, q_milk``, ``not evaluated: no store: give --db``."""
    if rule["passed"] is True:
        n = rule.get("evaluated")
        return "passed" + (f" ({queries(n)})" if n is not None else "")
    if rule["passed"] is None:
        judges = rule.get("judges") or []
        if judges:  # each judge's reason is on its own line below
            open_ = sum(1 for j in judges if j["passed"] is None)
            return f"not shown for {open_} of {len(judges)} (the reasons below)"
        return f"not evaluated: {rule.get('reason')}"
    if rule["scope"] == "judge":
        return "FAILED: " + "; ".join(
            f"{j['judge']}: {j['reason']}" for j in rule["judges"] if j["passed"] is False
        )
    return (
        f"FAILED for {len(rule['queries'])} of {rule.get('evaluated')} queries: {', '.join(rule['queries'])}"
    )


def _policy(report: Mapping[str, Any]) -> Policy:
    p = report["policy"]
    return policy_from_mapping({"corpus": p["corpus"], "diagnosis": p["diagnosis"]}, p["source"])


def check_table(report: Mapping[str, Any], qrels_path: str = "", run_path: str = "") -> str:
    k = report["k"]
    s = report["summary"]
    p = report["policy"]
    lines = [
        f"check at k = {k}"
        + (f" of {run_path}" if run_path else "")
        + (f" against {qrels_path}" if qrels_path else "")
        + f"; relevant = grade >= {report['min_grade']}; policy: {p['source']} (corpus: {p['corpus']})",
        "",
        align([FIGURE_HEADER] + figure_rows(report)),
        "",
    ]
    for note in s["notes"]:
        lines.append(f"note: {note}")
    if report["missing_from_run"]:
        lines.append(
            f"{len(report['missing_from_run'])} queries of the qrels are missing from the run: not checked"
        )
    lines.append("findings:")
    any_finding = False
    for qid, q in report["queries"].items():
        for code in q["findings"]:
            any_finding = True
            lines.append(f"  {qid}: [{code}] {finding_line(code, q, report)}")
    if not any_finding:
        lines.append("  none")
    if s["diagnosis"]:
        lines.append("over all queries (the means): " + ", ".join(s["diagnosis"]))
    lines += ["", "rules:"]
    width = max(len(r["rule"]) + len(r["bar"]) for r in report["rules"]) + 1
    for rule in report["rules"]:
        head = f"{rule['rule']} {rule['bar']}"
        lines.append(f"  {head.ljust(width)}  {rule_status(rule)}")
        for judge in rule.get("judges") or []:
            lines.append("    " + _judge_line(rule["rule"], judge))
    failed = [r["rule"] for r in report["rules"] if r["passed"] is False]
    lines.append("result: " + (f"FAILED: {', '.join(failed)} (exit 1)" if failed else "no rule failed"))
    return "\n".join(lines) + "\n"


def _judge_line(rule: str, j: Mapping[str, Any]) -> str:
    status = {True: "passed", False: "FAILED", None: "undecided"}[j["passed"]]
    if rule == "faithfulness":
        ci = j.get("ci")
        ci_text = f" [{ci[0]:.3f}, {ci[1]:.3f}]" if ci else ""
        figure = f"pass rate {num(j['rate'], 3, 'prose')}{ci_text}, n = {j['n']} ({j['how']})"
    else:
        ci = j.get("ci")
        ci_text = f" [{ci[0]:.3f}, {ci[1]:.3f}]" if ci else ""
        figure = f"kappa ({j.get('weights')}) {num(j['kappa'], 3, 'prose')}{ci_text}, n = {j['n']}, verdict {j['verdict']}"
    return f"{j['judge']}: {figure}: {status}" + (f" ({j['reason']})" if j.get("reason") else "")


def check_markdown(report: Mapping[str, Any], qrels_path: str = "", run_path: str = "") -> str:
    """The report as a pull-request comment: the verdict first, then the rules, the figures, the findings.
    Data strings (query ids, paths) are put in code spans so Markdown cannot act on them."""

    def code(text: object) -> str:
        value = str(text).replace("`", "'").replace("\n", " ")
        return f"`{value}`"

    k = report["k"]
    failed = [r["rule"] for r in report["rules"] if r["passed"] is False]
    lines = [
        "### Denominator check: " + ("FAILED: " + ", ".join(failed) if failed else "no rule failed"),
        "",
        f"k = {k}; relevant = grade >= {report['min_grade']}"
        + (f"; run {code(run_path)}" if run_path else "")
        + (f"; labels {code(qrels_path)}" if qrels_path else "")
        + f"; corpus: {report['policy']['corpus']}",
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
    for note in report["summary"]["notes"]:
        lines += ["", f"_Note: {note}_"]
    return "\n".join(lines) + "\n"


def policy_help(policy: Policy = DEFAULT_POLICY) -> str:
    """The thresholds table, each rule with its strictness and its source: ``check --help``."""
    rows = [["rule", "bar", "source"]] + [list(r) for r in rules_table(policy, every_corpus=True)]
    widths = [max(len(r[c]) for r in rows) for c in range(len(rows[0]) - 1)]
    return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(r[:-1], widths)) + "  " + r[-1] for r in rows)


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
    "result",
]


def history_rows(entries: list[Mapping[str, Any]]) -> list[list[str]]:
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
                "passed" if not e["failed"] else "FAILED: " + ", ".join(e["failed"]),
            ]
        )
    return rows


def history_table(entries: list[Mapping[str, Any]]) -> str:
    if not entries:
        return "no recorded check yet: `python -m calibration check ... --record --name NAME` keeps one\n"
    lines = [align([HISTORY_HEADER] + history_rows(entries)), ""]
    if any(e["labels_changed"] for e in entries):
        lines.append(
            "labels: the hash of the judgments (how many); 'changed' = not the labels of the run's previous "
            "report: a difference there may be the labels', not the system's"
        )
    return "\n".join(lines) + "\n"


DIFF_FIGURES = (
    ("keep_recall", "R@k"),
    ("fetch_recall", "R@fetch"),
    ("rr", "RR"),
    ("ndcg", "nDCG@k"),
    ("rel", "|Rel|"),
)


def diff_table(diff: Mapping[str, Any]) -> str:
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
    lines = [
        f"check {b['id']} ({b['name']}, {b['created_at'][:19]}) minus check {a['id']} ({a['name']}, "
        f"{a['created_at'][:19]}), per query; Δ = second - first",
        "",
        align(rows),
    ]
    if diff["labels_changed"]:
        lines += [
            "",
            f"the labels changed between the two ({a['golden_hash'][:8]}, {a['golden_labels']} labels -> "
            f"{b['golden_hash'][:8]}, {b['golden_labels']}): a difference may be the labels', not the system's",
        ]
    return "\n".join(lines) + "\n"


def signed_int(value: float | None) -> str:
    return "undef" if value is None else f"{int(value):+d}"
