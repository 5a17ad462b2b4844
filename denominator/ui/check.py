"""The Metrics page's check and history views (admins).

``render_check``: the run held to the policy (``./denominator.yaml`` when
present, else the essay's table, as ``python -m calibration check``): every
rule with passed / FAILED / not evaluated and why, the seven figures per query,
the findings and the diagnosis in words, and a button that records the report
in the store. ``render_history``: each figure of a run name over time with the
policy's bars drawn and a mark where the labels changed, and the per-query
difference between any two recorded reports. Both render what
``calibration.actions`` and ``calibration.policy.check_text`` return, so the page
and the CLI say the same; every data string goes through ``md``.
"""

from __future__ import annotations

from typing import Any

import altair as alt
import pandas as pd
import streamlit as st

from annotation.access.identity import db_path
from annotation.model import Qrels, Run
from annotation.render import md, md_list, num, signed
from annotation.store import StoreError, borrowed, database_exists
from calibration import actions
from calibration.gate import check_store, load_policy
from calibration.policy.check_text import (
    FIGURE_HEADER,
    figure_rows,
    finding_line,
    held_text,
    judge_line,
    missing_line,
    readable,
    result_text,
    rule_status,
    settings_lines,
    unreadable_lines,
)
from calibration.policy.finding_words import coverage_denominator
from calibration.policy.rules import InvalidPolicy, Policy
from calibration.results import CheckReport, HistoryEntry
from denominator.ui import metrics_cache
from denominator.ui.metrics_data import content_key, store_version

KEY = "check:"
STATUS = {
    "passed": "passed",
    "failed": "FAILED",
    "warning": "warning",
    "not evaluated": "not evaluated",
    "not applicable": "not applicable",
    "off": "off",
}
# the figure of a history chart -> the rule whose bar is drawn on it
BARS = {"fetch_recall": "stage1_recall", "judged_at_k": "judged_at_k", "label_coverage": "label_coverage"}
LABELS = {
    "keep_recall": "R@k",
    "fetch_recall": "R@fetch (stage 1)",
    "rr": "MRR",
    "ndcg": "nDCG@k",
    "label_coverage": "label coverage",
    "judged_at_k": "judged@k",
}


def _db() -> str | None:
    """The store's path when there is one (the page never creates a database by reading)."""
    db = db_path()
    return db if database_exists(db) else None


def _policy() -> Policy | None:
    try:
        return load_policy()
    except (InvalidPolicy, ValueError) as exc:
        st.error(md(exc))
        return None


def render_check(
    key: str,
    qrels: Qrels,
    run: Run,
    k: int,
    min_grade: int | None,
    fetch_depth: int | None,
    corpus_size: int | None,
    run_digest: str,
    run_label: str,
) -> None:
    st.header("Check against the policy")
    policy = _policy()
    if policy is None:
        return
    try:
        db = check_store()  # the CLI's rule: $DENOMINATOR_DB, else ./denominator.db when it is there
        version = ""
        if db is not None:  # what the check reads of the store: a new label or answer checks again
            with borrowed(db) as store:
                version = content_key(store_version(store))
        report = metrics_cache.check(
            key, k, min_grade, fetch_depth, corpus_size, policy, db, version, qrels, run
        )
        checked = content_key(key, k, min_grade, fetch_depth, corpus_size, policy, db, version)
    except (StoreError, ValueError) as exc:
        st.error(md(exc))
        return
    failed = [r["rule"] for r in report["rules"] if r["passed"] is False]
    st.caption(
        f"Policy: {md(report['policy']['source'])} (corpus: {report['policy']['corpus']}); "
        f"k = {k}; {md(report['stage1'] or '')}; store: {md(report['store'] or 'none')}; "
        "the same report as `python -m calibration check`."
    )
    said = md(result_text(report))  # the CLI's result line: the rules counted by status
    if failed:  # a verdict, not an error of the page: coloured text, not an alert box
        st.markdown(f"**Result:** :red[{said}]")
    elif report["warnings"]:
        st.markdown(f"**Result:** :orange[{said}]")
    else:
        st.markdown(f"**Result:** :green[{said}]")
    rules = pd.DataFrame(
        [
            {
                "rule": r["rule"],
                "bar": md(r["bar"]),
                "result": STATUS[r["status"]],
                "detail": md(rule_status(r)),
            }
            for r in report["rules"]
        ]
    )
    st.table(rules, hide_index=True)
    judges = [
        f"- {r['rule']}: {md(judge_line(r, j))}" for r in report["rules"] for j in r.get("judges") or []
    ]
    if judges:
        st.markdown("**Each judge and rubric**\n\n" + "\n".join(judges))
    figures = metrics_cache.drawn("check figures", checked, lambda: figure_table(report))
    st.table(figures, hide_index=True)
    if (size := report.get("corpus_size")) is not None:
        st.caption(md(coverage_denominator(size)))
    for note in report["summary"]["notes"]:
        st.caption(f"Note: {md(note)}")
    if missing_line(report):
        st.caption(md(missing_line(report)))
    findings = metrics_cache.drawn("check findings", checked, lambda: findings_text(report))
    if findings:
        st.markdown("**What the check found, per query**\n\n" + findings)
    if db is None:
        st.caption(f"No database at {md(db_path())}: nothing to record into.")
        return
    with st.form(f"{KEY}record"):
        name = st.text_input("run name", value=run_label, key=f"{KEY}name")
        if st.form_submit_button("Record this check"):
            try:
                with borrowed(db) as store:
                    report_id = actions.record(store, report, name, qrels, run_digest)
                st.success(f"Recorded check {report_id} of {md(name)}.")
            except (StoreError, ValueError) as exc:
                st.error(md(exc))


def figure_table(report: CheckReport) -> pd.DataFrame:
    """The seven figures per query, query ids escaped (``st.table`` renders Markdown)."""
    rows = [[md(row[0]), *row[1:]] for row in figure_rows(report)]
    return pd.DataFrame(rows, columns=FIGURE_HEADER)


def findings_text(report: CheckReport) -> str:
    """Each query's findings, a Markdown line each ("" when none)."""
    return "\n".join(
        f"- {md(qid)} [{code}] {md(finding_line(code, q, report))}"
        for qid, q in report["queries"].items()
        for code in q["findings"]
    )


def history_frame(entries: list[HistoryEntry]) -> pd.DataFrame:
    """One row per (recorded check, figure): the long form the chart draws."""
    rows = []
    for e in entries:
        for figure, label in LABELS.items():
            value = e["means"].get(figure)
            if value is None:
                continue
            rows.append(
                {
                    "check": e["id"],
                    "recorded": e["created_at"][:19].replace("T", " "),
                    "figure": label,
                    "value": value,
                    "labels": f"{e['golden_hash'][:8]} ({e['golden_labels']})"
                    + (" changed" if e["labels_changed"] else ""),
                    "labels changed": e["labels_changed"],
                    "settings": ", ".join(e.get("settings_changed") or []),
                }
            )
    return pd.DataFrame(rows)


def history_chart(entries: list[HistoryEntry]) -> alt.LayerChart | alt.FacetChart | None:
    frame = history_frame(entries)
    if frame.empty:
        return None
    x = alt.X("check:O", title="recorded check (id)", axis=alt.Axis(labelAngle=0))
    base = alt.Chart(frame)
    lines = base.mark_line(point=True).encode(
        x=x,
        y=alt.Y("value:Q", title="mean over queries", scale=alt.Scale(domain=[0, 1])),
        color=alt.Color("figure:N", legend=alt.Legend(orient="bottom", columns=3, labelLimit=0)),
        tooltip=["check", "recorded", "figure", alt.Tooltip("value:Q", format=".3f"), "labels"],
    )
    layers: list[alt.Chart] = [lines]
    changed = frame[frame["labels changed"]].drop_duplicates("check")
    if not changed.empty:
        layers.append(
            alt.Chart(changed)
            .mark_rule(strokeDash=[2, 2], color="gray")
            .encode(x=x, tooltip=[alt.Tooltip("labels:N", title="labels changed here")])
        )
    settings = frame[frame["settings"] != ""].drop_duplicates("check")
    if not settings.empty:  # measured under other settings: the figures move with them (#40)
        layers.append(
            alt.Chart(settings)
            .mark_rule(strokeDash=[8, 2], color="darkorange", strokeWidth=2)
            .encode(x=x, tooltip=[alt.Tooltip("settings:N", title="settings changed here")])
        )
    bars = []
    last = entries[-1]["bars"]
    for figure, rule in BARS.items():
        text = last.get(rule)
        if text and any(op in text for op in (">", "<")):
            try:
                value = float(text.split()[-1])
            except ValueError:  # not a bar this page can draw (a stored report written by something else)
                continue
            bars.append({"figure": LABELS[figure], "bar": value, "rule": f"{rule} {text}"})
    if bars:
        layers.append(
            alt.Chart(pd.DataFrame(bars))
            .mark_rule(strokeDash=[6, 3])
            .encode(y="bar:Q", color=alt.Color("figure:N"), tooltip=["rule"])
        )
    return alt.layer(*layers).properties(height=320)


def render_history() -> None:
    st.header("History of recorded checks")
    db = _db()
    if db is None:
        st.caption(f"No database at {md(db_path())}: recorded checks live in the store.")
        return
    try:
        with borrowed(db) as store:
            recorded = actions.history(store)
    except StoreError as exc:
        st.error(md(exc))
        return
    if not recorded:
        st.caption(
            "No recorded check yet: record one above, or `python -m calibration check ... --record --name NAME`."
        )
        return
    for line in unreadable_lines(recorded):
        st.caption(md(line[0].upper() + line[1:]) + ".")
    entries = readable(recorded)
    if not entries:
        return
    names = sorted({e["name"] for e in entries})
    name = st.selectbox("run name", names, key=f"{KEY}history_name")
    mine = [e for e in entries if e["name"] == name]
    chart = history_chart(mine)
    if chart is not None:
        st.altair_chart(chart, width="stretch")
    st.caption(
        "Means over the queries of each recorded check; dashed lines: the policy's bars; a dotted vertical "
        "line: the labels changed there (a new label hash), so a difference may be the labels', not the system's; "
        "'changed' beside the queries held: the run answered another query set (a changed denominator); "
        "an orange vertical line: the settings changed there (k, min grade, fetch depth, the bars)."
    )
    for line in settings_lines(mine):
        st.caption(md(line[0].upper() + line[1:]) + ".")
    table = pd.DataFrame(
        [
            {
                "check": str(e["id"]),
                "run": md(e["name"]),
                "recorded (UTC)": md(e["created_at"][:19].replace("T", " ")),
                "k": md(e["k"]),
                "queries held": md(held_text(e)),
                **{LABELS[f]: num(e["means"][f], 3, "prose") for f in LABELS},
                "labels": md(f"{e['golden_hash'][:8]} ({e['golden_labels']})")
                + (" changed" if e["labels_changed"] else ""),
                "result": "passed" if not e["failed"] else "FAILED: " + md_list(e["failed"]),
            }
            for e in mine
        ]
    )
    st.table(table, hide_index=True)
    if len(entries) < 2:
        return
    ids = [e["id"] for e in entries]
    left, right = st.columns(2)
    first = left.selectbox("first check", ids, index=max(len(ids) - 2, 0), key=f"{KEY}diff_first")
    second = right.selectbox("second check", ids, index=len(ids) - 1, key=f"{KEY}diff_second")
    if first == second:
        st.caption("Choose two different checks to see what changed per query.")
        return
    try:
        with borrowed(db) as store:
            diff = actions.history(store, diff=(int(first), int(second)))
    except (StoreError, ValueError) as exc:
        st.error(md(exc))
        return
    if diff["settings_changed"]:
        st.warning(
            f"Settings changed: {md(', '.join(diff['settings_changed']))}: the two checks measured "
            "differently; the changes below follow the settings, not the system."
        )
    if diff["labels_changed"]:
        st.warning(
            f"The labels changed between check {first} and check {second}: a difference may be the labels', "
            "not the system's."
        )
    for key, moved, what in (
        ("dropped", diff["dropped"], "in the first check, not in the second"),
        ("added", diff["added"], "in the second, not the first"),
    ):
        if moved:
            st.warning(
                f"{key.capitalize()}: {md(', '.join(moved))} ({what}): the query set changed, so the means "
                "are over other queries; these are not fixes or losses."
            )
    rows = []
    for qid, row in diff["queries"].items():
        entry: dict[str, Any] = {"query": md(qid)}
        for change, label in (
            (row["keep_recall"], "R@k"),
            (row["fetch_recall"], "R@fetch"),
            (row["rr"], "RR"),
            (row["ndcg"], "nDCG@k"),
        ):
            entry[f"{label} first"] = num(change["first"], 3, "prose")
            entry[f"{label} second"] = num(change["second"], 3, "prose")
            entry[f"{label} Δ"] = signed(change["delta"], 3, "prose")
        entry["findings"] = " ".join(
            [f"+{md(c)}" for c in row["findings_gained"]] + [f"-{md(c)}" for c in row["findings_lost"]]
        )
        rows.append(entry)
    st.table(pd.DataFrame(rows), hide_index=True)
