"""The Review page's plan of the labelling (issue #39, item 5): ``calibration plan`` on the store's
labels so far, per judge, as a table and a chart of the expected interval by design, with the answer
to "more queries or more chunks per query?". One computation with the CLI (:func:`calibration.actions.plan`)."""

from __future__ import annotations

import altair as alt
import pandas as pd
import streamlit as st

from annotation.options import default as option_default
from annotation.render import md
from annotation.store import StoreError, borrowed
from annotation.values import parse_designs
from calibration import actions
from calibration.planning import PlanEntry
from calibration.policy.rules import Policy

__all__ = ["render_plan", "plan_rows"]

KEY = "review:plan:"


def plan_rows(entry: PlanEntry) -> list[dict[str, object]]:
    """One row per design, as the CLI's table has them."""
    return [
        {
            "design": d["design"],
            "labels": d["labels"],
            "design effect": round(d["design_effect"], 2),
            "expected width": round(d["width"], 3),
            "low": round(d["interval"][0], 3),
            "high": round(d["interval"][1], 3),
            "verdict expected": d["verdict"],
            "labels to decide": d["labels_to_decide"],
        }
        for d in entry["plan"]["designs"]
    ]


def render_plan(db: str, policy: Policy, min_queries: int) -> None:
    """The plan, folded away: it reads every current judge's labels (a second or so)."""
    with st.expander("Plan the labelling: more queries or more chunks per query?"):
        text = st.text_input(
            "designs, queries x chunks per query", value=option_default("designs"), key=f"{KEY}designs"
        ).strip()
        try:
            designs = parse_designs(text)
        except ValueError as exc:
            st.error(md(f"designs: {exc}"))
            return
        if not st.toggle("compute the plan", key=f"{KEY}on"):
            st.caption(
                "The plan reads the store's labels so far as a pilot (the same as `calibration plan`)."
            )
            return
        try:
            with borrowed(db) as store:
                entries = actions.plan(store, designs, policy=policy, min_queries=min_queries)
        except (StoreError, ValueError) as exc:
            st.error(md(exc))
            return
        if not entries:
            st.info("No judge with labels to plan from: grade items with a judge and people first.")
            return
        for entry in entries:
            pilot = entry["plan"]["pilot"]
            st.markdown(md(f"**{entry['name']}**" + (f" ({entry['rubric']})" if entry["rubric"] else "")))
            if pilot["undefined_reason"]:
                st.caption(md(f"No plan: {pilot['undefined_reason']}"))
                continue
            st.caption(
                md(
                    f"Pilot: {pilot['n']} items over {pilot['queries']} queries, kappa "
                    f"{pilot['kappa']:.3f}; bar {entry['plan']['bar']:g}, min_queries {entry['plan']['min_queries']}."
                    if pilot["kappa"] is not None
                    else f"Pilot: {pilot['n']} items over {pilot['queries']} queries, kappa undefined."
                )
            )
            frame = pd.DataFrame(plan_rows(entry))
            st.dataframe(frame, hide_index=True)
            chart = (
                alt.Chart(frame)
                .mark_rule(strokeWidth=3)
                .encode(
                    y=alt.Y("design:N", sort=None, title="queries x chunks per query"),
                    x=alt.X("low:Q", title="expected kappa interval", scale=alt.Scale(domain=[-0.2, 1])),
                    x2="high:Q",
                    tooltip=["design", "labels", "expected width", "verdict expected"],
                )
            )
            bar = (
                alt.Chart(pd.DataFrame({"bar": [entry["plan"]["bar"]]}))
                .mark_rule(strokeDash=[4, 4])
                .encode(x="bar:Q")
            )
            st.altair_chart(
                (chart + bar).properties(height=28 * len(frame) + 40),
                alt=f"Expected kappa interval by design for {entry['name']}, the bar dashed",
            )
            if entry["plan"]["answer"]:
                st.markdown(md(f"More queries or more chunks per query? {entry['plan']['answer']['text']}"))
            st.caption(
                md(f"Model: {entry['plan']['model']}; labels to decide assume kappa stays at the pilot's.")
            )
