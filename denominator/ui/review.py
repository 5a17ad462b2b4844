"""The Calibration review page (admins): this week's kappa of every judge against
people, with its CI, n and verdict, the human-human ceiling beside it, the
confusion matrix as a heatmap, the trend over weeks, position bias for
pairwise judges, the corrected pass rate, and the report to download.

The page computes the review without saving it; "Save this week's review"
records it, so the trend has a point for the week.
"""

from __future__ import annotations

from typing import Literal

import altair as alt
import pandas as pd
import streamlit as st

from annotation.access.identity import existing_db, require_admin
from annotation.options import option
from annotation.render import interval, md, num
from annotation.store import StoreError, borrowed
from calibration import actions
from calibration.gate import load_policy
from calibration.results import KappaEntry, ReviewJudge, ReviewReport, TrendPoint
from calibration.review import RUBRIC_KIND
from calibration.review_sample import current_week, sample_progress
from calibration.review_text import (
    design_text,
    drift_text,
    judge_title,
    no_interval,
    pass_rate_text,
    position_text,
    sample_note,
    superseded_text,
    to_html,
    to_markdown,
    verdict_text,
    weighted_text,
)
from calibration.stats.verdict import MIN_LABELS, SAMPLE_ADVICE
from denominator.ui.browse import open_items
from denominator.ui.plan import render_plan

KEY = "review:"
BADGE: dict[str, Literal["green", "orange", "red", "gray"]] = {
    "trusted": "green",
    "undecided": "orange",
    "not trusted": "red",
    "uncalibrated": "gray",
    "undefined": "gray",
}


def _k(entry: KappaEntry) -> str:
    return num(entry.get("kappa"), 3, "prose")


def _ci(entry: KappaEntry) -> str:
    if entry.get("kappa") is not None and not entry.get("ci"):
        return no_interval(entry)
    return interval(entry.get("ci"), 3, "prose")


def _policy_ok() -> bool:
    """Whether the policy file parses (its error is shown once, below, where the review reads it)."""
    try:
        load_policy()
    except ValueError:
        return False
    return True


def render_review_page() -> None:
    require_admin()
    st.title("Calibration review")
    db = existing_db()
    if db is None:
        return
    left, right = st.columns(2)
    week = left.text_input("week (ISO)", value=current_week(), key=f"{KEY}week").strip()
    min_labels = int(
        right.number_input(
            "human-labelled items a judge needs for a verdict",
            option("min_labels").minimum,
            option("min_labels").maximum,
            option("min_labels").default,
            key=f"{KEY}min",
        )
    )
    min_queries = int(
        left.number_input(
            "queries a judge's labels must span for a verdict",
            option("min_queries").minimum,
            option("min_queries").maximum,
            load_policy().min_queries if _policy_ok() else 5,
            key=f"{KEY}min_queries",
        )
    )
    render_sample(db, week)
    try:
        policy = load_policy()
        with borrowed(db) as store:
            report, _ = actions.review(
                store,
                week,
                policy=policy,
                min_labels=min_labels,
                min_queries=min_queries,
                save=False,
                face="page",
            )
            sampled = store.review_sample(week)
            kinds = {kind for kind in set(RUBRIC_KIND.values()) if sampled & set(store.item_queries(kind))}
    except (StoreError, ValueError) as exc:  # a bad store, or a policy file that does not parse
        st.error(md(exc))
        return
    if not report["judges"]:
        st.info("No judge has graded anything yet: run one on the Judge page, or `python -m judge grade`.")
        return
    for judge in report["judges"]:
        # the review reads a judge on this week's sample when it holds items of its kind (calibration.review)
        scoped = RUBRIC_KIND.get(judge["rubric"]) in kinds
        render_judge(judge, week if scoped else None)
    if superseded_text(report):
        st.caption(md(superseded_text(report)[0].upper() + superseded_text(report)[1:]) + ".")
    render_trend(report)
    render_plan(db, policy, min_queries)
    left, middle, right = st.columns(3)
    if left.button("Save this week's review", key=f"{KEY}save"):
        with borrowed(db) as store:
            actions.review(
                store, week, policy=policy, min_labels=min_labels, min_queries=min_queries, save=True
            )
        st.success(f"Saved the week {md(week)} review of {len(report['judges'])} judges.")
    middle.download_button(
        "Download Markdown", to_markdown(report), file_name=f"review-{week}.md", key=f"{KEY}md"
    )
    right.download_button("Download HTML", to_html(report), file_name=f"review-{week}.html", key=f"{KEY}html")


def render_sample(db: str, week: str) -> None:
    """This week's sample: its progress when drawn, else a form to draw it (the CLI's
    ``review --sample``, the same defaults)."""
    try:
        with borrowed(db) as store:
            progress = sample_progress(store, week)
            people = [a["name"] for a in store.annotators()]
    except StoreError as exc:
        st.error(md(exc))
        return
    st.subheader("This week's sample")
    if progress["size"]:
        st.progress(
            progress["labelled"] / progress["size"],
            text=f"{progress['labelled']} of {progress['size']} sampled items ({progress['traces']} traces, "
            f"{progress['chunks']} chunks) labelled by people since the sample was drawn, "
            f"{progress['doubly']} by two or more (the ceiling's items)",
        )
        st.caption(
            "The review below reads the sample for the faithfulness judges once it is labelled; a judge "
            f"needs {MIN_LABELS} human-labelled items for a verdict by default."
        )
        return
    with st.form(f"{KEY}sample"):
        st.caption(f"No sample for week {md(week)} yet. {SAMPLE_ADVICE[0].upper()}{SAMPLE_ADVICE[1:]}.")
        left, middle, right = st.columns(3)
        sample = option("sample")
        size = left.number_input(
            "traces to sample", sample.minimum, sample.maximum, sample.default, key=f"{KEY}sample_size"
        )
        who = middle.multiselect("annotators", people, key=f"{KEY}sample_who", format_func=str)
        share = option("review_overlap")
        overlap = right.number_input(
            "share labelled by two or more (the ceiling)",
            share.minimum,
            share.maximum,
            share.default,
            key=f"{KEY}sample_overlap",
        )
        if st.form_submit_button("Draw this week's sample"):
            try:
                with borrowed(db) as store:
                    drawn = actions.draw_review_sample(
                        store, week, n=int(size), annotators=who, overlap=float(overlap)
                    )
            except StoreError as exc:
                st.error(md(exc))
                return
            if note := sample_note(int(size)):
                st.warning(md(note[0].upper() + note[1:]) + ".")
            strata = ", ".join(f"{md(k)}: {v}" for k, v in sorted(drawn["strata"].items()))
            st.success(
                f"Sampled {drawn['sampled']} of {drawn['of']} traces for week {md(week)} ({strata})"
                + (
                    f" and {drawn['chunks_sampled']} of {drawn['chunks_of']} chunks the relevance judge graded"
                    if drawn.get("chunks_sampled")
                    else ""
                )
                + f"; assigned to {len(who)} annotators, {drawn['doubly_assigned']} items to two or more."
            )


def render_judge(judge: ReviewJudge, sample_week: str | None = None) -> None:
    """One judge's review; ``sample_week``: the week whose sample it was reviewed on (None: every
    labelled item), which the confusion matrix's link to the Items page keeps."""
    consensus, ceiling = judge["consensus"], judge["ceiling"]
    assert ceiling is not None  # the page's review is a whole one (only check's reading has no ceiling)
    st.subheader(md(f"{judge['rubric']}: {judge_title(judge)}"), anchor=False)  # no data in an element id
    st.badge(judge["verdict"], color=BADGE.get(judge["verdict"], "gray"))
    st.caption(
        f"{judge['kind']} judge, {md(judge['model'])} at {md(judge['endpoint'])}; {md(judge['scope'])}"
        + (f"; {md(judge['status_reason'])}" if judge["status_reason"] else "")
    )
    if judge.get("version", 1) > 1:
        st.caption(
            f"Fingerprint {judge['fingerprint'][:16]}; changed from v{judge['version'] - 1}: "
            f"{md(', '.join(judge['changed']) or 'nothing named')}."
        )
    if drift_text(judge):
        st.warning(md(drift_text(judge)))
    st.markdown(md(verdict_text(judge)))
    st.caption(f"What to do: {md(judge['advice'])}")
    if design_text(consensus):
        st.caption(f"Design: {md(design_text(consensus))}")
    left, right = st.columns(2)
    left.metric(
        f"kappa vs people ({consensus['statistic']}, the verdict's)",
        _k(consensus),
        help="Cohen's kappa of the judge against the people's consensus (median grade, majority choice); "
        f"the verdict reads it against the bar {consensus['bar']}",
    )
    left.caption(
        f"95% CI {_ci(consensus)}, n = {consensus['n']} items"
        + (f"; beside it: {md(weighted_text(consensus))}" if weighted_text(consensus) else "")
    )
    right.metric("human-human kappa (the ceiling)", _k(ceiling))
    right.caption(
        f"95% CI {_ci(ceiling)}, n = {ceiling['n']} doubly labelled items"
        if ceiling.get("kappa") is not None
        else f"undefined: {md(ceiling.get('undefined_reason'))}"
    )
    if consensus.get("kappa") is None and consensus.get("undefined_reason"):
        st.caption(f"kappa undefined: {md(consensus['undefined_reason'])}")
    if judge.get("out_of_fold"):
        st.caption(
            f"On the {judge['out_of_fold']} items this offline judge was fitted on, its out-of-fold "
            "(cross-validated) answers are compared, not its in-sample ones."
        )
    if consensus.get("confusion") and consensus["n"]:
        left, right = st.columns(2)
        with left:
            render_confusion(judge)
        with right:
            render_against_ceiling(judge)
        render_cell_link(judge, sample_week)
    if judge["annotators"]:
        st.table(
            pd.DataFrame(
                [
                    {"annotator": md(name), "kappa": _k(entry), "n": entry["n"]}
                    for name, entry in judge["annotators"].items()
                ]
            ),
            hide_index=True,
        )
    if position := judge.get("position"):
        text = position_text(position)
        st.markdown(md(text[0].upper() + text[1:]) + ".")
    rate = judge.get("pass_rate")
    if rate:
        text = pass_rate_text(rate)
        if rate.get("estimate") is not None:
            text += f" (judge {judge['fingerprint'][:16]}, kappa {_k(consensus)})"
        st.markdown(md(text[0].upper() + text[1:]) + ".")


def confusion_cells(judge: ReviewJudge) -> list[dict[str, str | int]]:
    """The confusion matrix as cells ``{"judge", "people", "items"}`` (grades as text), in the
    scale's order: rows are the judge's grades, columns the people's (the review's kappa is
    ``cohen(judge, people)``, whose confusion has the first rater in its rows)."""
    consensus = judge["consensus"]
    labels = consensus["labels"]
    return [
        {"judge": str(labels[i]), "people": str(labels[j]), "items": int(n)}
        for i, row in enumerate(consensus["confusion"])
        for j, n in enumerate(row)
    ]


def render_confusion(judge: ReviewJudge) -> None:
    consensus = judge["consensus"]
    frame = pd.DataFrame(confusion_cells(judge))
    base = alt.Chart(frame).encode(
        x=alt.X("judge:O", title="judge's grade", axis=alt.Axis(labelAngle=0)),
        y=alt.Y(
            "people:O", title="people's grade", axis=alt.Axis(labelAngle=0, titleAngle=0, titleAlign="right")
        ),
    )
    heat = base.mark_rect().encode(
        color=alt.Color("items:Q", scale=alt.Scale(scheme="blues"), legend=None),
        tooltip=["people", "judge", "items"],
    )
    text = base.mark_text().encode(text="items:Q")
    st.altair_chart(
        (heat + text).properties(height=180, width=220),
        alt=f"Confusion matrix of judge {judge['fingerprint'][:16]} against people, {consensus['n']} items",
    )


def render_cell_link(judge: ReviewJudge, sample_week: str | None) -> None:
    """Open the items behind a cell of the confusion matrix on the Items page (graded judges only:
    a pairwise judge's answer is its swap-averaged preference, which the Items page does not
    compute)."""
    if judge["rubric"] == "preference":
        return
    cells = [c for c in confusion_cells(judge) if c["items"]]
    if not cells:
        return
    key = f"{KEY}cell:{judge['fingerprint']}"
    left, right = st.columns([3, 1], vertical_alignment="bottom")
    cell = left.selectbox(
        "open the items behind a cell",
        range(len(cells)),
        key=key,
        format_func=lambda i: (
            f"judge said {cells[i]['judge']}, people said {cells[i]['people']}: "
            f"{cells[i]['items']} item{'' if cells[i]['items'] == 1 else 's'}"
            + (" (they agree)" if cells[i]["judge"] == cells[i]["people"] else "")
        ),
    )
    if right.button("Open these items", key=f"{key}:open"):
        chosen = cells[cell]
        open_items(
            rubric=judge["rubric"],
            judge=judge["fingerprint"],
            judge_grade=int(chosen["judge"]),
            people_grade=int(chosen["people"]),
            week=sample_week or "",
        )
    st.caption(
        "The Items page finds them by this judge's grade and the people's median"
        + (f" in week {md(sample_week)}'s sample" if sample_week else "")
        + ". Where the review reads other answers (an offline judge's out-of-fold answers on the items it was "
        "fitted on, or only the answers since its served model changed) its count can differ."
    )


def against_ceiling_frame(judge: ReviewJudge) -> pd.DataFrame:
    """The judge's kappa and the human-human ceiling, each with its interval (rows without a
    defined kappa are left out: never drawn as 0)."""
    rows = []
    for what, entry in (
        ("judge vs people", judge["consensus"]),
        ("people vs people (ceiling)", judge["ceiling"]),
    ):
        if entry is None or (kappa := entry.get("kappa")) is None:
            continue
        ci = entry.get("ci") or [kappa, kappa]
        rows.append({"what": what, "kappa": kappa, "low": ci[0], "high": ci[1], "n": entry["n"]})
    return pd.DataFrame(rows)


def render_against_ceiling(judge: ReviewJudge) -> None:
    """The judge's kappa beside the ceiling, both with their intervals, and the bar."""
    frame = against_ceiling_frame(judge)
    if frame.empty:
        return
    bar = judge["consensus"]["bar"]
    y = alt.Y("what:N", title=None, axis=alt.Axis(labelLimit=0))
    x = alt.X("kappa:Q", title=f"{judge['consensus']['statistic']} kappa", scale=alt.Scale(domain=[-0.2, 1]))
    points = (
        alt.Chart(frame)
        .mark_point(filled=True, size=80)
        .encode(x=x, y=y, tooltip=["what", alt.Tooltip("kappa:Q", format=".3f"), "n"])
    )
    bars = alt.Chart(frame).mark_rule(strokeWidth=2).encode(x="low:Q", x2="high:Q", y=y)
    rule = (
        alt.Chart(pd.DataFrame({"bar": [bar]})).mark_rule(strokeDash=[4, 4], color="gray").encode(x="bar:Q")
    )
    st.altair_chart(
        (bars + points + rule).properties(height=120),
        width="stretch",
        alt=f"kappa of the judge and of people with each other, with 95% intervals, against the bar {bar}",
    )
    st.caption(f"Dashed: the bar {bar}. The judge cannot be expected to agree with people more than they do.")


def trend_frame(points: list[TrendPoint]) -> pd.DataFrame:
    """One row per saved review of a judge and week: the judge's name (its versions connect),
    the version, kappa with its interval (its label drawn at ``label_at``), n, the verdict, and whether it was saved under the old
    rule (a point estimate on quadratic weights: drawn apart, never mixed in silently)."""
    return pd.DataFrame(
        [
            {
                "week": t["week"],
                "judge": f"{t.get('name') or t['fingerprint'][:16]} ({t['rubric']})",
                "version": f"v{t['version']}" if t.get("version") else t["fingerprint"][:8],
                # the label above a point: only where the judge's line changes version or served model
                "mark": (
                    (f"v{t['version']}" if t.get("version") else t["fingerprint"][:8])
                    + (f" {t['served_model']}" if t.get("served_model") else "")
                )
                if t.get("new_version", True)
                else "",
                "kappa": t["kappa"],
                # where the label is drawn: above the interval's top (above the point, it lay on
                # the interval's line: #43, item 9), above the point when there is no interval
                "label_at": t["ci"][1] if t["ci"] else t["kappa"],
                "low": t["ci"][0] if t["ci"] else None,
                "high": t["ci"][1] if t["ci"] else None,
                "n": t["n"],
                "verdict": t["verdict"],
                "rule": "old rule (point, quadratic)" if t.get("old_rule") else "interval rule",
            }
            for t in points
            if t["kappa"] is not None
        ]
    )


def render_trend(report: ReviewReport) -> None:
    points = report.get("trend") or []
    st.subheader("Trend over weeks")
    frame = trend_frame(points)
    if frame.empty:
        st.caption("No saved review yet: save this week's to start the trend.")
        return
    x = alt.X("week:O", title="ISO week", axis=alt.Axis(labelAngle=0))
    color = alt.Color("judge:N", legend=alt.Legend(orient="bottom", columns=2, labelLimit=0, title="judge"))
    offset = alt.XOffset("judge:N")  # one week's judges side by side, not piled on one position
    tooltip = [
        "week",
        "judge",
        "version",
        alt.Tooltip("kappa:Q", format=".3f"),
        "low",
        "high",
        "n",
        "verdict",
        "rule",
    ]
    base = alt.Chart(frame)
    line = base.mark_line(opacity=0.7).encode(x=x, xOffset=offset, y=alt.Y("kappa:Q"), color=color)
    points_ = base.mark_point(filled=True, size=70).encode(
        x=x,
        xOffset=offset,
        y=alt.Y(
            "kappa:Q",
            title=f"{report.get('statistic', 'unweighted')} kappa vs people",
            scale=alt.Scale(domain=[-0.2, 1]),
        ),
        color=color,
        shape=alt.Shape("rule:N", legend=alt.Legend(orient="bottom", title=None)),
        tooltip=tooltip,
    )
    band = base.mark_rule(strokeWidth=2, opacity=0.6).encode(
        x=x, xOffset=offset, y="low:Q", y2="high:Q", color=color
    )
    labels = base.mark_text(dy=-10, fontSize=10).encode(
        x=x, xOffset=offset, y="label_at:Q", text="mark:N", color=color
    )
    trusted = report["thresholds"]["trusted"]
    rule = (
        alt.Chart(pd.DataFrame({"y": [trusted]})).mark_rule(strokeDash=[4, 4], color="gray").encode(y="y:Q")
    )
    st.altair_chart(
        alt.layer(line, band, points_, labels, rule).properties(height=320),
        width="stretch",
        alt="Kappa against people per judge and week, with its 95% interval, the bar, and the judge's versions",
    )
    st.caption(
        f"Each point: a saved weekly review, its 95% interval as a vertical line; the judge's version is written "
        "above the first point of each version (and the served model when the endpoint said it); "
        f"dashed: the bar, kappa {trusted}. A version change is a new judge to calibrate; points saved under "
        "the old rule (point estimate, quadratic weights) have their own shape."
    )
