"""Streamlit pages of the calibration package: the metrics and audit page.

``render_metrics_page`` is built from ``render_*`` helpers over the pure
library (``calibration.metrics``, ``calibration.audit``) and the readers of
``annotation.formats``. Every figure is shown with what it is a fraction of
(|Rel|, k, the ceiling, the number of queries in a mean and how many were
left out); undefined values read "undefined", never 0. Session keys are
namespaced ``metrics:``; bad input is shown with ``st.error``, never a
traceback.

Every result is read through :mod:`denominator.ui.metrics_cache` (the actions, cached under the
data's digest and the settings each reads), so a run of the page computes only what changed.
"""

from __future__ import annotations

import copy
import hashlib
import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import altair as alt
import numpy as np
import pandas as pd
import streamlit as st

from annotation.access.identity import require_admin
from annotation.model import FormatError
from annotation.options import option
from annotation.render import interval, md, md_list, over, signed
from annotation.render import num as _render_num
from calibration import actions
from calibration.audit import (
    REPEAT_RULE,
    InvalidAudit,
    precision_ceiling,
    recall_ceiling,
)
from calibration.commands_text import estimate_summary_line, inflation_text, sampled_labels
from calibration.errors import NothingToEvaluate
from calibration.gate import load_policy
from calibration.inputs import DEFAULT_PERMUTATIONS, DEFAULT_SEED, min_grade_of
from calibration.metrics import AP, RR, Evaluation, InvalidMeasure, Measure
from calibration.policy.finding_words import finding_text
from calibration.policy.findings import FindingGroup, group_findings
from calibration.policy.rules import InvalidPolicy
from calibration.results import AuditReport
from denominator.ui import metrics_cache
from denominator.ui.check import render_check, render_history
from denominator.ui.holes import render_holes
from denominator.ui.metrics_data import (
    EXAMPLE_DIR,
    KEY,
    ON_REQUEST,
    OWN_FILES,
    SOURCES,
    STORE,
    WORKED_EXAMPLE,
    DataSet,
    UploadError,
    content_key,
    load_run_upload,
    render_data_source,
    upload_digest,
)

__all__ = ["render_metrics_page", "EXAMPLE_DIR", "OWN_FILES", "STORE", "WORKED_EXAMPLE", "recall_chart"]

FINDINGS_LISTED = 200  # queries an expander lists under one kind of finding; a line says how many more
# a kind with more queries than this lists them when its expander is opened (a run of the page):
# the browser draws 200 Markdown lines per kind on every run otherwise (~0.1 s of its CPU each)
FINDINGS_OPENED = 20
TABLE_ROWS = 200  # a per-query table longer than this is a scrolling grid (st.dataframe, lazy), not HTML rows
CHART_QUERIES = 40  # the recall chart draws at most this many queries: those furthest below their ceiling
CHECK_QUERIES = (
    ON_REQUEST  # above this many queries the policy check (its per-query table) is drawn on request
)


@dataclass(frozen=True)
class Settings:
    k: int
    min_grade: int | None  # None: the label file's own min_grade, else 1 (calibration.inputs.min_grade_of)
    fetch_depth: int | None  # None: the run's own depth when deeper than k (calibration.audit.stage1_of)
    source: str


# ---------------------------------------------------------------- formatting


def fmt(value: float | None, digits: int = 3) -> str:
    """A value, or "undefined" for None/NaN (never 0): ``annotation.render.num`` on a page."""
    return _render_num(value, digits, "prose")


def _value(evaluation: Evaluation, name: Measure, i: int) -> float | None:
    value = float(evaluation.values[name][i])
    return None if math.isnan(value) else value


def _over(evaluation: Evaluation, name: Measure) -> str:
    return over(len(evaluation.qids), evaluation.undefined(name))


def _texts(values: np.ndarray) -> list[str]:
    """Each value of a column as :func:`fmt` writes it: three digits, or undefined for NaN."""
    undefined = fmt(None)
    return [undefined if math.isnan(v) else f"{v:.3f}" for v in values.tolist()]


def metrics_frame(evaluation: Evaluation, report: AuditReport, escape: bool = True) -> pd.DataFrame:
    """Per-query table of strings, each figure beside its denominator, then the means; query ids
    escaped for Markdown (``st.table``) unless ``escape`` is False (``st.dataframe`` shows text).
    Made a column at a time (10,000 queries: a new k draws it again)."""
    k = evaluation.ks[0]
    queries = report["queries"]
    qids = evaluation.qids
    n_rels = evaluation.num_rel.tolist()
    hits = [queries[qid]["distinct_hits"] if qid in queries else None for qid in qids]
    recalls = evaluation.values[Measure("R", k)].tolist()
    # a ceiling depends on |Rel| alone: computed and written once per distinct |Rel|
    ceiling_of = {n_rel: recall_ceiling(k, n_rel) for n_rel in set(n_rels)}
    ceilings = [ceiling_of[n_rel] for n_rel in n_rels]
    ceiling_text = {n_rel: fmt(ceiling) for n_rel, ceiling in ceiling_of.items()}
    precision_text = {n_rel: fmt(precision_ceiling(k, n_rel)) for n_rel in ceiling_of}
    texts = {
        name: _texts(evaluation.values[name])
        for name in (Measure("P", k), Measure("R", k), RR, Measure("nDCG", k), AP)
    }
    columns: dict[str, list[str]] = {
        "query": [md(qid) for qid in qids] if escape else list(qids),
        "|Rel|": [str(n_rel) for n_rel in n_rels],
        f"P@{k}": [f"{text} = {hit}/{k}" for text, hit in zip(texts[Measure("P", k)], hits)],
        f"P@{k} ceiling": [precision_text[n_rel] for n_rel in n_rels],
        f"R@{k}": [
            f"{text} = {hit}/{n_rel}" if not math.isnan(recall) else "undefined (|Rel| = 0)"
            for text, hit, n_rel, recall in zip(texts[Measure("R", k)], hits, n_rels, recalls)
        ],
        f"R@{k} ceiling": [ceiling_text[n_rel] for n_rel in n_rels],
        "share of ceiling": [
            f"{recall / ceiling:.0%}" if not math.isnan(recall) and ceiling else "undefined"
            for recall, ceiling in zip(recalls, ceilings)
        ],
        "RR": texts[RR],
        f"nDCG@{k}": texts[Measure("nDCG", k)],
        "AP": texts[AP],
    }
    measures = {str(m): m for m in (Measure("P", k), Measure("R", k), RR, Measure("nDCG", k), AP)}
    if not qids:  # no query: the means' rows alone, under the query and the measures
        columns = {column: [] for column in ("query", *measures)}
    n = len(qids)
    for column, values in columns.items():
        name = measures.get(column)
        if column == "query":
            values += ["mean", "queries in the mean"]
        elif name is None:
            values += ["", ""]
        else:
            left_out = evaluation.undefined(name)
            values += [fmt(evaluation.mean(name)), f"{n - left_out} of {n} ({left_out} undefined)"]
    return pd.DataFrame(columns)


def audit_frame(
    report: AuditReport, truth_rel: Mapping[str, int] | None, escape: bool = True
) -> pd.DataFrame:
    """Per-query audit figures: judged@k, label coverage, hits, stage-1 recall, truth recall.
    Made a column at a time, as :func:`metrics_frame`."""
    k = report["k"]
    queries = report["queries"]
    if not queries:
        return pd.DataFrame([])
    qids, rows = list(queries), list(queries.values())
    no_stage1 = report["fetch_depth"] is None

    def staged(values: list[float | None]) -> list[str]:
        return ["n/a (no stage 1)"] * len(values) if no_stage1 else [fmt(value) for value in values]

    def judged_text(judged: float | None, retrieved: int) -> str:
        if judged is None:
            return "undefined"
        shown = min(k, retrieved)
        return f"{fmt(judged)} = {round(judged * shown)}/{shown}"

    corpus = f" of {report['corpus_size']} chunks"
    columns: dict[str, list[str]] = {
        "query": [md(qid) for qid in qids] if escape else qids,
        f"judged@{k}": [judged_text(q["judged_at_k"], q["retrieved"]) for q in rows],
        "label coverage": [
            "n/a (corpus size unknown)" if q["label_coverage"] is None else fmt(q["label_coverage"]) + corpus
            for q in rows
        ],
        f"hits in top {k}: positional / distinct": [
            f"{q['positional_hits']} / {q['distinct_hits']}" for q in rows
        ],
        # n/a: no stage 1, as the CLI says; undefined: nothing relevant (#43, item 9)
        f"R@{report['fetch_depth'] or 'fetch'} (stage 1)": staged([q["recall_at_fetch"] for q in rows]),
        f"lost by the cut to {k}": staged([q["lost_after_fetch"] for q in rows]),
    }
    if truth_rel is not None:
        columns[f"R@{k} against the truth set"] = [
            f"{fmt(q['recall_true'])} (|Rel| = {truth_rel.get(qid, 0)})" for qid, q in zip(qids, rows)
        ]
    return pd.DataFrame(columns)


def charted(evaluation: Evaluation, most: int = CHART_QUERIES) -> list[int]:
    """The queries the recall chart draws: every one with a defined recall, or when there are more
    than ``most``, the ``most`` furthest below their ceiling (lowest share), in the run's order."""
    k = evaluation.ks[0]
    recalls = np.asarray(evaluation.values[Measure("R", k)], dtype=float)
    defined = np.flatnonzero(~np.isnan(recalls))
    if len(defined) <= most:
        return defined.tolist()
    # a defined recall has |Rel| >= 1: its ceiling min(1, k/|Rel|), as recall_ceiling computes it
    ceilings = np.minimum(1.0, k / np.asarray(evaluation.num_rel, dtype=float)[defined])
    shares = recalls[defined] / ceilings
    lowest = defined[np.argsort(shares, kind="stable")[:most]]  # stable: ties in the run's order
    return sorted(lowest.tolist())


def recall_records(evaluation: Evaluation, queries: list[int]) -> list[dict[str, Any]]:
    """The recall chart's rows: per query (``queries``: indices into ``evaluation.qids``), its
    ceiling min(1, k/|Rel|) and its recall@k, each with its label (three digits)."""
    k = evaluation.ks[0]
    records = []
    for i in queries:
        qid, recall, n_rel = (
            evaluation.qids[i],
            _value(evaluation, Measure("R", k), i),
            int(evaluation.num_rel[i]),
        )
        for name, value in ((f"ceiling min(1, {k}/|Rel|)", recall_ceiling(k, n_rel)), (f"R@{k}", recall)):
            records.append(
                {"query": f"{qid} (|Rel|={n_rel})", "series": name, "value": value, "label": f"{value:.3f}"}
            )
    return records


def recall_chart(
    evaluation: Evaluation, queries: list[int] | None = None
) -> alt.LayerChart | alt.FacetChart | None:
    """Per query, recall@k beside its ceiling min(1, k/|Rel|); undefined queries left out (at most
    :data:`CHART_QUERIES` of them: ``queries``, else :func:`charted`). The Altair chart
    :func:`recall_spec` writes as a Vega-Lite spec (the page draws the spec; tests hold the two
    equal)."""
    k = evaluation.ks[0]
    records = recall_records(evaluation, charted(evaluation) if queries is None else queries)
    if not records:
        return None
    data = pd.DataFrame(records)
    series = [f"ceiling min(1, {k}/|Rel|)", f"R@{k}"]
    base = alt.Chart().encode(
        y=alt.Y("query:N", sort=None, title=None),
        yOffset=alt.YOffset("series:N", sort=series),
        x=alt.X(
            "value:Q",
            scale=alt.Scale(domain=[0, 1.1]),
            title=f"recall@{k}",
            axis=alt.Axis(values=[0, 0.25, 0.5, 0.75, 1.0], format=".2f"),
        ),
    )
    bars = base.mark_bar().encode(
        color=alt.Color(
            "series:N",
            scale=alt.Scale(domain=series, range=["#c9d1d9", "#1f6feb"]),
            legend=alt.Legend(title=None, orient="top"),
        ),
        tooltip=["query", "series", "label"],
    )
    labels = base.mark_text(align="left", dx=4).encode(text="label:N")
    return alt.layer(bars, labels, data=data).properties(height=alt.Step(18))


# ---------------------------------------------------------------- rendering


BLANK = "default"  # an empty box's placeholder; the rule that decides it is written under the box
# (a placeholder of the whole rule was cut off at the sidebar's width: #43, item 9)


def render_controls() -> Settings:
    with st.sidebar:
        st.header("Settings")
        source = st.radio("Data", SOURCES, key=f"{KEY}source")
        k_option, grade_option, fetch_option = option("k"), option("min_grade"), option("fetch_depth")
        k = st.number_input(
            "k (cutoff)",
            min_value=k_option.minimum,
            max_value=k_option.maximum,
            value=k_option.default,
            step=1,
            key=f"{KEY}k",
        )
        min_grade = st.number_input(
            "min grade (relevant = grade >= this)",
            min_value=grade_option.minimum,
            max_value=grade_option.maximum,
            value=None,
            step=1,
            placeholder=BLANK,
            key=f"{KEY}min_grade",
        )
        st.caption(f"Empty: {grade_option.rule}, as in the CLI.")
        fetch_depth = st.number_input(
            "fetch depth (stage 1 = the run read this deep)",
            min_value=fetch_option.minimum,
            max_value=fetch_option.maximum,
            value=None,
            step=1,
            placeholder=BLANK,
            key=f"{KEY}fetch_depth",
        )
        st.caption(f"Empty: {fetch_option.rule} (as the CLI without --fetch-depth).")
    return Settings(
        k=int(k),
        min_grade=None if min_grade is None else int(min_grade),
        fetch_depth=None if fetch_depth is None else int(fetch_depth),
        source=str(source),
    )


def render_summary(evaluation: Evaluation) -> None:
    k = evaluation.ks[0]
    tiles = [
        (f"mean R@{k}", Measure("R", k), "each recall a share of its query's |Rel|"),
        (f"mean P@{k}", Measure("P", k), f"each precision a share of k = {k}"),
        (f"mean nDCG@{k}", Measure("nDCG", k), f"{evaluation.gain} gain, ideal from the judged grades"),
        ("MRR", RR, "1 / rank of the first relevant"),
    ]
    for column, (label, name, note) in zip(st.columns(len(tiles)), tiles):
        with column:
            st.metric(label, fmt(evaluation.mean(name)))
            st.caption(f"{_over(evaluation, name)}; {note}")


def render_metrics_table(evaluation: Evaluation, report: AuditReport, key: str) -> None:
    """``key``: what the figures read (the data, k, the threshold), the table's cache key."""
    k = evaluation.ks[0]
    st.subheader(f"Per query at k = {k}")
    render_frame(
        lambda escape: metrics_frame(evaluation, report, escape), len(evaluation.qids), "metrics", key
    )
    st.caption(
        f"R@{k} = distinct relevant in the top {k} / |Rel|, its ceiling min(1, {k}/|Rel|); "
        f"P@{k} = relevant in the top {k} / {k}, its ceiling min(1, |Rel|/{k}). "
        f"Means are over the queries where each measure is defined: R@{k} {_over(evaluation, Measure('R', k))}."
    )


def recall_spec(evaluation: Evaluation) -> tuple[int, dict[str, Any] | None]:
    """:func:`recall_chart` as the Vega-Lite spec ``st.altair_chart`` would send (Altair's
    ``to_dict()`` without the default theme's view size, which Streamlit leaves out), and how many
    queries it draws. Written as the dict itself: Altair's build and schema check took ~0.05-0.1 s
    of every new k on 10,000 queries; tests hold it equal to Altair's. Made once per result
    (:func:`metrics_cache.drawn`)."""
    queries = charted(evaluation)
    records = recall_records(evaluation, queries)
    if not records:
        return len(queries), None
    k = evaluation.ks[0]
    series = [f"ceiling min(1, {k}/|Rel|)", f"R@{k}"]
    position = {
        "x": {
            "axis": {"format": ".2f", "values": [0, 0.25, 0.5, 0.75, 1.0]},
            "field": "value",
            "scale": {"domain": [0, 1.1]},
            "title": f"recall@{k}",
            "type": "quantitative",
        },
        "y": {"field": "query", "sort": None, "title": None, "type": "nominal"},
        "yOffset": {"field": "series", "sort": series, "type": "nominal"},
    }
    bars = {
        "color": {
            "field": "series",
            "legend": {"orient": "top", "title": None},
            "scale": {"domain": series, "range": ["#c9d1d9", "#1f6feb"]},
            "type": "nominal",
        },
        "tooltip": [{"field": name, "type": "nominal"} for name in ("query", "series", "label")],
        **copy.deepcopy(position),
    }
    labels = {"text": {"field": "label", "type": "nominal"}, **copy.deepcopy(position)}
    name = "data-" + hashlib.sha256(json.dumps(records, sort_keys=True).encode()).hexdigest()[:32]
    spec = {
        "layer": [
            {"mark": {"type": "bar"}, "encoding": bars},
            {"mark": {"type": "text", "align": "left", "dx": 4}, "encoding": labels},
        ],
        "data": {"name": name},  # Altair's name for the rows (a digest of them)
        "height": {"step": 18},
        "$schema": f"https://vega.github.io/schema/vega-lite/{alt.SCHEMA_VERSION}.json",
        "datasets": {name: records},
    }
    return len(queries), spec


def render_recall_chart(evaluation: Evaluation, key: str) -> None:
    k = evaluation.ks[0]
    st.subheader("Recall against its ceiling")
    drawn, spec = metrics_cache.drawn("recall chart", key, lambda: recall_spec(evaluation))
    if spec is None:
        st.info(f"R@{k} is undefined for every query (no judged relevant document): nothing to draw.")
        return
    st.vega_lite_chart(  # a copy: Streamlit moves the data out of the spec it is given
        spec=copy.deepcopy(spec),
        width="stretch",
        alt=f"Per query, R@{k} beside its ceiling min(1, {k}/|Rel|)",
    )
    left_out = evaluation.undefined(Measure("R", k))
    note = f"; {left_out} queries with undefined recall left out" if left_out else ""
    defined = len(evaluation.qids) - left_out
    if drawn < defined:
        note += f"; drawn: the {drawn} of {defined:,} queries furthest below their ceiling"
    st.caption(
        f"A query with more relevant chunks than k cannot reach recall 1: the grey bar is its best{note}."
    )


def render_frame(frame: Callable[[bool], pd.DataFrame], n_queries: int, name: str, key: str) -> None:
    """A per-query table: HTML rows (``st.table``, ids escaped) up to :data:`TABLE_ROWS` queries,
    else a scrolling grid (``st.dataframe``, which shows text as text): 6,000 HTML rows freeze
    the browser. The grid is loaded lazily (``lazy=True``): the browser is sent its first 1,000
    rows and fetches the rest from the server as it scrolls, not 10,000 rows on every run of the
    page (its search and download go with it: a button below downloads the CSV, made when clicked).
    The table is kept under its ``name`` and ``key`` (what its figures read)."""
    escape = n_queries <= TABLE_ROWS
    table = metrics_cache.drawn(f"{name} table, escaped {escape}", key, lambda: frame(escape))
    if escape:
        st.table(table, hide_index=True)
        return
    st.dataframe(table, hide_index=True, height=420, lazy=True)
    st.download_button(  # the grid's own download goes with lazy loading: the CSV made on a click
        f"Download the {name} table ({n_queries:,} queries, CSV)",
        data=lambda: table.to_csv(index=False),
        file_name=f"{name}-per-query.csv",
        mime="text/csv",
        on_click="ignore",
        key=f"{KEY}{name}_csv",
    )


def render_inflation(report: AuditReport) -> None:
    text = inflation_text(report)
    st.markdown(md(text[0].upper() + text[1:] + "."))


def render_audit(report: AuditReport, data: DataSet, key: str) -> None:
    """``key``: what the audit read (the data, the settings, the corpus, the policy)."""
    k = report["k"]
    min_grade = report["min_grade"]
    st.subheader(f"Audit at k = {k}")
    parts = [
        f"relevant = grade >= {min_grade}",
        md(report.get("stage1") or ""),
    ]
    if report["corpus_size"]:
        parts.append(
            f"corpus: {md(data.corpus_label)}"
            if data.corpus_label
            else f"corpus of {report['corpus_size']} chunks"
        )
    if data.truth is not None:
        parts.append("truth set: a fuller label set to compare recall with")
    st.caption("; ".join(parts))
    truth_rel = None
    if data.truth is not None:
        truth_rel = {
            qid: sum(1 for g in grades.values() if g >= min_grade)
            for qid, grades in data.truth.grades.items()
        }
    render_frame(lambda escape: audit_frame(report, truth_rel, escape), len(report["queries"]), "audit", key)
    st.caption("The findings of these queries are grouped by kind under the summary, above.")


def render_findings(groups: list[FindingGroup], listed: int = FINDINGS_LISTED) -> None:
    """One line per kind of finding with its count over the queries, each an expander listing
    the queries (the first ``listed``, then how many more): a run of 6,000 queries stays one
    screen. The same groups as the CLI's table (``calibration.policy.findings.group_findings``).
    A kind of more than :data:`FINDINGS_OPENED` queries is listed once its expander is opened."""
    st.subheader("Findings")
    # one slot however many kinds: the elements below keep their places when k changes the count
    with st.container():
        render_finding_groups(groups, listed)


def render_finding_groups(groups: list[FindingGroup], listed: int) -> None:
    if not groups:
        st.success("No findings: every denominator is as it should be.")
        return
    for group in groups:
        lazy = group.count > FINDINGS_OPENED
        expander = st.expander(
            md(group.line), key=f"metrics_finding_{group.code}", on_change="rerun" if lazy else "ignore"
        )
        with expander:
            if lazy and not expander.open:
                continue
            shown = group.queries[:listed]
            st.markdown("\n".join(f"- **{md(qid)}**: {md(text)}" for qid, text in shown))
            if group.count > len(shown):
                st.caption(
                    f"… and {group.count - len(shown):,} more queries with this finding (the "
                    f"first {len(shown):,} are listed; the audit table above has every query)."
                )


def render_duplicate_example(data: DataSet, settings: Settings) -> None:
    if data.dupe is None:
        return
    qrels, dupe_run = data.dupe
    rankings = dupe_run.rankings()
    report = actions.audit(qrels, dupe_run, settings.k, settings.min_grade)
    k = settings.k
    for qid, q in report["queries"].items():
        st.subheader(f"A repeated chunk: {md(qid)}", anchor=False)  # no data in an element id
        text = qrels.texts.get(qid)
        st.caption((f"Query: {md(text)}. " if text else "") + f"Ranking: {md_list(rankings[qid])}.")
        rel = q["rel"]
        naive, distinct = q["positional_hits"], q["distinct_hits"]
        left, right = st.columns(2)
        with left:
            st.metric(f"naive positional count in the top {k}", f"{naive} hits")
            st.caption(f"recall {naive}/{rel} = {fmt(naive / rel if rel else None)}: a repeat counted again")
        with right:
            st.metric(f"distinct documents in the top {k}", f"{distinct} hits")
            st.caption(f"recall {distinct}/{rel} = {fmt(q['recall'])}: distinct chunks; {REPEAT_RULE}")
        for code in q["findings"]:
            if code in ("duplicate_ids", "positional_mismatch"):
                st.markdown(f"- {md(finding_text(code, q, k))}")


def render_metrics_page() -> None:
    """The metrics and audit page: controls, per-query table, chart, inflation, audit, q_dupe.
    Admins only (it names runs and shows their scores)."""
    require_admin()
    st.title("Metrics and audit")
    settings = render_controls()
    try:
        data = render_data_source(settings.source)
        if data is None:
            return
        policy = load_policy()
        evaluation = metrics_cache.metrics(data.key, settings.k, settings.min_grade, data)
        report = metrics_cache.audit(
            data.key, settings.k, settings.min_grade, settings.fetch_depth, data.corpus_key, policy, data
        )
    except (UploadError, FormatError, InvalidMeasure, InvalidAudit, InvalidPolicy, NothingToEvaluate) as exc:
        st.error(md(exc))
        return
    min_grade = min_grade_of(data.qrels, settings.min_grade)
    st.caption(
        f"Data: {md(data.label)}; {len(evaluation.qids)} queries evaluated; relevant = grade >= {min_grade}"
        + (" (the file's min_grade)" if settings.min_grade is None and "min_grade" in data.qrels.meta else "")
        + "."
    )
    render_summary(evaluation)  # first: above the fold, whatever the findings
    for note in data.qrels.notes:
        st.info(md(note))
    render_data_warnings(evaluation)
    scored = content_key(data.key, settings.k, settings.min_grade)  # what the metrics read
    audited = content_key(scored, settings.fetch_depth, data.corpus_key, policy)  # and the audit
    # each kind's first FINDINGS_LISTED queries in words: the rest are counted, not written
    findings = metrics_cache.drawn(
        f"findings, {FINDINGS_LISTED} listed", audited, lambda: group_findings(report, FINDINGS_LISTED)
    )
    render_findings(findings)
    render_metrics_table(evaluation, report, scored)
    render_inflation(report)
    render_recall_chart(evaluation, scored)
    render_audit(report, data, audited)
    render_duplicate_example(data, settings)
    render_estimate(data, report)
    n = len(evaluation.qids)
    render_holes(data, settings.k, settings.min_grade, settings.source, n)
    render_comparison(data, settings)
    if n > CHECK_QUERIES and not st.toggle(
        f"Check against the policy ({n:,} queries: drawn on request)", key=f"{KEY}check_big"
    ):
        render_history()
        return
    render_check(
        data.key,
        data.qrels,
        data.run,
        settings.k,
        settings.min_grade,
        settings.fetch_depth,
        len(data.corpus_ids) if data.corpus_ids is not None else data.corpus_size,
        data.run_digest,
        data.run.name if data.run.name != "run" else data.label.split(" (")[0],
    )
    render_history()


def render_estimate(data: DataSet, report: AuditReport) -> None:
    """Judged recall beside the recall estimated from the label file's sample of unjudged
    candidates (its ``sampling`` section), each with its denominator (as ``audit --estimate``)."""
    labels = data.sampled if data.sampled is not None else data.qrels
    if not labels.meta.get("sampling"):
        return
    k = report["k"]
    st.subheader("What the labels missed, estimated from a sample")
    chosen = st.radio(
        "intervals",
        ["midp", "exact"],
        format_func=lambda v: {
            "midp": "mid-p: 95% on average over truths",
            "exact": "exact: at least 95% for every truth of one stratum, wider",
        }[v],
        horizontal=True,
        key="metrics:interval",
    )
    bar = st.progress(0.0, text="Estimating what the labels missed…")

    def on_query(done: int, total: int) -> None:
        if done == total or done % 20 == 0:
            bar.progress(done / total, text=f"Estimating what the labels missed: {done} of {total} queries")

    try:
        # a deep copy: the estimate adds findings inside the report, which the cache shares
        estimates = actions.estimate(
            labels, data.run, copy.deepcopy(report), interval=chosen, on_query=on_query
        )
    except (InvalidAudit, ValueError) as exc:
        st.error(f"No estimate: {md(exc)}")
        return
    finally:
        bar.empty()

    rows = [
        {
            "query": md(qid),
            f"R@{k} judged": f"{fmt(e['recall_judged'])} (|Rel| = {e['rel_judged']})",
            f"R@{k} estimated": fmt(e["recall_estimated"]),
            "95% CI": interval(e["recall_ci"], 3, "prose") if e["recall_ci"] else "-",
            "|Rel| estimated": fmt(e["rel_estimated"], 1),
            "|Rel| 95% CI": interval(e["rel_ci"], 1, "prose") if e["rel_ci"] else "-",
            "sampled labels": sampled_labels(e),
            "finding": "labels_incomplete_estimated"
            if e["labels_incomplete_estimated"]
            else (f"undefined: {md(e['reason'])}" if e["reason"] else ""),
        }
        for qid, e in estimates["queries"].items()
    ]
    st.table(pd.DataFrame(rows), hide_index=True)
    st.markdown(md(estimate_summary_line(estimates)))
    st.caption(
        "Horvitz-Thompson over the sampling design in the label file (each sampled chunk weighs 1 / its "
        "inclusion probability); recall is a ratio estimator; "
        + ("95% stratified mid-p intervals " if chosen == "midp" else "exact 95% intervals ")
        + "(docs/estimate.md says which to choose)."
        + " A judged recall outside its interval means the labels miss relevant chunks."
        + (f" {md(estimates['note'])}" if estimates.get("note") else "")
        + (
            " The sample here: examples/worked-example/sampled.yaml, golden.yaml's labels plus a seeded random "
            "sample of the chunks they never judged, graded with truth.qrels (examples/make_sampled.py)."
            if data.sampled is not None
            else ""
        )
    )


def render_comparison(data: DataSet, settings: Settings) -> None:
    """A second run against the same judgments: ``calibration.actions.compare``, as
    ``python -m calibration compare`` (same k, threshold rule, permutations and seed)."""
    st.subheader("Compare with a second run")
    upload = st.file_uploader(
        "Second run (TREC run or .jsonl rankings), judged by the same labels", key=f"{KEY}compare_upload"
    )
    if upload is None:
        st.caption(
            "Upload a second run to see, per measure, B - A, per-query wins and losses and paired tests."
        )
        return
    name_a = data.label.split(" (")[0]
    try:
        digest = upload_digest(upload)
        other = load_run_upload(upload.name, digest, upload)
        comparison = metrics_cache.compare(
            data.key,
            f"{upload.name}:{digest}",
            settings.k,
            settings.min_grade,
            (name_a, upload.name),
            data,
            other,
        )
    except (UploadError, FormatError, InvalidMeasure, NothingToEvaluate) as exc:
        st.error(md(exc))
        return
    rows = [
        {
            "measure": name,
            "n queries": f"{t['n']}" + (f" (+{t['left_out']} undefined)" if t["left_out"] else ""),
            "A": fmt(t["mean_a"]),
            "B": fmt(t["mean_b"]),
            "B - A": signed(t["delta"], 3, "prose"),
            "wins / losses / ties": f"{t['wins']} / {t['losses']} / {t['ties']}",
            "p (randomization)": fmt(t["p_randomization"]),
            "p (t-test)": fmt(t["p_ttest"]),
        }
        for name, t in comparison.measures.items()
    ]
    st.table(pd.DataFrame(rows), hide_index=True)
    for note in comparison.notes:
        st.warning(md(note[0].upper() + note[1:] + "."))
    st.caption(
        f"A = {md(name_a)}, B = {md(upload.name)}; relevant = grade >= {comparison.min_grade}; wins = queries "
        "where B is higher; paired, two-sided tests over the queries where the measure is defined for both "
        f"runs (randomization: {DEFAULT_PERMUTATIONS:,} sign flips, seed {DEFAULT_SEED}). A measure equal on "
        "every query has no p-value. The same as `python -m calibration compare`."
    )


def render_data_warnings(evaluation: Evaluation, listed: int = 20) -> None:
    """What the run and the judgments do not share, one line each (the run's repeated ids are a
    kind of finding: :func:`render_findings`)."""
    missing = evaluation.missing_from_run
    if missing:
        more = f" and {len(missing) - listed:,} more" if len(missing) > listed else ""
        st.warning(
            f"{len(missing):,} queries of the judgments are missing from the run and "
            f"not evaluated: {md_list(missing[:listed])}{more}."
        )
    if evaluation.not_in_qrels:
        st.warning(f"{evaluation.not_in_qrels:,} queries of the run have no judgments: ignored.")
