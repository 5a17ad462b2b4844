"""The Judge page (admins): choose a judge, see what a run would cost before
starting it, run it with a progress bar, and see every judge by name and
version (the current one marked) with its fingerprint, what changed from the
version before, answers, errors and tokens, marked *uncalibrated* until its
agreement with people has been measured.

A judge is given a name in the name box (blank: the default, ``MODEL/RUBRIC`` or
``offline-lexical/RUBRIC``); settings new to that name make its next version.

With no endpoint configured the offline judge is the default: it needs no
network and is fitted on the human labels. With ``OPENAI_BASE_URL`` set the
LLM judge is. The key is read from ``OPENAI_API_KEY`` only: the page says
whether it is set, never what it is.
"""

from __future__ import annotations

import os
from collections.abc import Callable

import pandas as pd
import streamlit as st

from annotation.access.identity import existing_db, require_admin
from annotation.render import md
from annotation.store import Store, StoreError, borrowed, default_judge_name
from calibration.readings import agreement_mark, reading_of
from calibration.results import PairSummary
from judge import actions
from judge.actions import LLMResult
from judge.client import Endpoint, EndpointRefused
from judge.commands_text import (
    agreement_line,
    identity_text,
    judge_name,
    judge_rows,
    pair_summary_text,
    plan_text,
    progress_text,
    run_text,
)
from judge.limits import default_concurrency, max_concurrency
from judge.prices import Prices
from judge.progress import Progress
from judge.prompts import DEFAULT_SCHEMA, SCHEMA_MODES, SchemaMode

KEY = "judge:"
OFFLINE = "offline (lexical, no network)"
LLM = "LLM endpoint (OpenAI-compatible)"


def render_judge_page() -> None:
    require_admin()
    st.title("Judge")
    db = existing_db()
    if db is None:
        return
    configured = bool(os.environ.get("OPENAI_BASE_URL"))
    kind = st.radio("judge", [OFFLINE, LLM], index=1 if configured else 0, horizontal=True, key=f"{KEY}kind")
    if kind == OFFLINE:
        render_offline(db)
    else:
        render_llm(db)
    render_judges(db)


def render_offline(db: str) -> None:
    left, right = st.columns(2)
    rubric = left.selectbox("rubric", ["relevance", "faithfulness"], key=f"{KEY}offline-rubric")
    default = default_judge_name({"kind": "lexical", "rubric": rubric})
    name = right.text_input("judge name", placeholder=default, key=f"{KEY}offline-name").strip() or None
    try:
        with borrowed(db) as store:
            plan = actions.grade(store, rubric, dry_run=True, name=name)
            reading = reading_of(store, plan["fingerprint"]) if plan["already_done"] else None
    except StoreError as exc:  # a name this judge cannot have
        st.error(md(exc))
        return
    except ValueError as exc:  # NotEnoughLabels
        st.warning(f"The offline judge cannot be fitted yet: {md(exc)}")
        return
    st.caption(
        f"Fitted on {plan['fitted_on']} human labels ({plan['features']}): judge "
        f"{md(identity_text(plan['identity']))}, fingerprint {plan['fingerprint'][:16]}; "
        f"{agreement_line(plan['agreement'])}. "
        f"{plan['items'] - plan['already_done']} of {plan['items']} items left to grade."
    )
    # the fit's own figure above is not the verdict: the reading review, check and judge list give
    # this judge is (issue #40, item 7: one reading per judge)
    st.caption(
        f"Its reading against people (as review, check and judge list give it): {md(reading)}."
        if reading is not None
        else "No reading against people yet: grade with it, then review reads its answers."
    )
    if st.button("Fit and grade", key=f"{KEY}offline-run", type="primary"):
        with borrowed(db) as store:
            report = actions.grade(store, rubric, name=name)
        st.success(
            f"Graded {report['graded']} items ({report['already_done']} already done) as "
            f"{md(identity_text(report['identity']))}."
        )


def render_llm(db: str) -> None:
    left, middle, right = st.columns(3)
    base_url = left.text_input(
        "endpoint (base URL)", value=os.environ.get("OPENAI_BASE_URL", ""), key=f"{KEY}base-url"
    ).strip()
    model = middle.text_input("model", value=os.environ.get("OPENAI_MODEL", ""), key=f"{KEY}model").strip()
    rubric = right.selectbox("rubric", ["relevance", "faithfulness", "preference"], key=f"{KEY}rubric")
    left, middle, right = st.columns(3)
    most = max_concurrency()  # the CLI's bound: a connection each
    concurrency = int(
        left.number_input("concurrency", 1, most, default_concurrency(), key=f"{KEY}concurrency")
    )
    limit = int(middle.number_input("items (0: all)", 0, 10_000_000, 0, key=f"{KEY}limit"))
    schema = right.selectbox(
        "reply format", list(SCHEMA_MODES), index=SCHEMA_MODES.index(DEFAULT_SCHEMA), key=f"{KEY}schema"
    )
    default = default_judge_name({"kind": "llm", "model": model or "MODEL", "rubric": rubric})
    name = st.text_input("judge name", placeholder=default, key=f"{KEY}name").strip() or None
    if not os.environ.get("OPENAI_API_KEY"):
        key = "not set."
    elif _configured(base_url):
        key = "OPENAI_API_KEY is sent to this endpoint (never stored or shown)."
    else:
        key = "none sent: the server's OPENAI_API_KEY goes only to OPENAI_BASE_URL."
    st.caption(
        "API key: "
        + key
        + (" Preference pairs are asked in both orders (AB and BA)." if rubric == "preference" else "")
    )
    if not base_url or not model:
        st.info("Give the endpoint and the model to see what a run would take.")
        return
    endpoint = Endpoint(base_url=base_url.rstrip("/"), model=model, concurrency=concurrency)
    prices = Prices()
    try:
        with borrowed(db) as store:
            plan = _ask(store, rubric, endpoint, schema, name, limit, dry_run=True)[0].plan
    except (StoreError, ValueError) as exc:
        st.error(md(exc))
        return
    st.markdown(
        f"**Before starting:** {md(judge_name(plan, model, rubric))} {md(plan_text(plan, prices, model))}."
    )
    if not plan.left or not st.button("Run the judge", key=f"{KEY}run", type="primary"):
        return
    bar = st.progress(0.0, text=f"0 / {plan.left} calls")

    def on_progress(p: Progress) -> None:
        bar.progress(p.done / max(p.total, 1), text=progress_text(p))

    api_key = None if _configured(base_url) else "no-key"
    try:
        with borrowed(db) as store:
            result, summary = _ask(
                store, rubric, endpoint, schema, name, limit, on_progress=on_progress, api_key=api_key
            )
            mark = agreement_mark(store, {"fingerprint": plan.fingerprint, "settings": plan.settings})
    except (EndpointRefused, StoreError, ValueError) as exc:
        st.error(md(exc))
        return
    if result.progress is None:  # only a dry run or a batch has none: this was neither
        return
    st.success(
        f"{md(run_text(result.progress, result.plan, prices, model))} (judge {md(identity_text(result.plan.identity))})."
    )
    if summary is not None and summary["mean_preference_a"] is not None:
        st.markdown(
            f"Judge {md(identity_text(plan.identity))}, fingerprint `{plan.fingerprint[:16]}` ({md(mark)}): "
            f"{pair_summary_text(summary)}."
        )


def _ask(
    store: Store,
    rubric: str,
    endpoint: Endpoint,
    schema: SchemaMode,
    name: str | None,
    limit: int,
    *,
    dry_run: bool = False,
    on_progress: Callable[[Progress], None] | None = None,
    api_key: str | None = None,
) -> tuple[LLMResult, PairSummary | None]:
    """The judge command this page's rubric means (compare for preference, else grade): (result, pairs' summary)."""
    if rubric == "preference":
        return actions.compare(
            store,
            endpoint=endpoint,
            schema=schema,
            name=name,
            limit=limit or None,
            dry_run=dry_run,
            on_progress=on_progress,
            api_key=api_key,
        )
    return actions.grade(
        store,
        rubric,
        endpoint=endpoint,
        schema=schema,
        name=name,
        limit=limit or None,
        dry_run=dry_run,
        on_progress=on_progress,
        api_key=api_key,
    ), None


def _configured(base_url: str) -> bool:
    """Is this the endpoint the server was configured with (the only one its key may go to)?"""
    configured = os.environ.get("OPENAI_BASE_URL", "").strip().rstrip("/")
    return bool(configured) and base_url.strip().rstrip("/") == configured


def render_judges(db: str) -> None:
    st.subheader("Judges in this database")
    with borrowed(db) as store:
        judges, marks = actions.list_(store)
    if not judges:
        st.info("No judge has graded anything yet.")
        return
    # tables of few columns, each fitting the page's width (one of eleven ran off its right edge)
    rows = pd.DataFrame(judge_rows(judges, marks, Prices()))
    st.dataframe(rows[list(SUMMARY_COLUMNS)], hide_index=True, width="stretch")
    # a reading (verdict, why, kappa, n) is a sentence: a table of its own, a wide column whose rows
    # are three lines high, where it wraps (a column of the table above cut it off: #43, item 9)
    st.caption("Each judge's agreement with people, as review, check and judge list read it now:")
    st.dataframe(
        rows[list(READING_COLUMNS)],
        hide_index=True,
        width="stretch",
        row_height=READING_ROW_HEIGHT,
        column_config={"agreement with people": st.column_config.TextColumn(width="large")},
    )
    st.caption("Each judge's fingerprint, what changed from its version before, its model and endpoint:")
    st.dataframe(rows[list(IDENTITY_COLUMNS)], hide_index=True, width="stretch")


SUMMARY_COLUMNS = (
    "judge",
    "kind",
    "rubric",
    "answers",
    "error rows",
    "tokens",
    "cost",
)
READING_COLUMNS = ("judge", "agreement with people")
IDENTITY_COLUMNS = ("judge", "fingerprint", "changed", "model")
READING_ROW_HEIGHT = 72  # pixels: three lines of a table's text
