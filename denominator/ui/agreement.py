"""The Agreement page (admins): how far the people agree with each other (issue #43, item 5).

For one rubric, every pair of people on the items both labelled: Cohen's kappa on their current
labels, its 95% interval clustered by query and the verdict against the policy's bar, with the design
the verdict rests on; exactly what ``python -m calibration agree --db DB --rubric R`` prints (one
action, :func:`calibration.actions.agree` with the store), and what ``agree`` reads from
``annotation export --format csv``. A heatmap of the pairs' kappas; then the items one pair
disagrees on, both grades side by side, and one button that opens them on the Items page
(:func:`denominator.ui.browse.open_items`, filter ``between``), where an admin settles each
(adjudication: the admin's grade stored as their own label and marked settled).

A pair's choice between two answers is read as the candidate it names, whichever order each person
saw it in. Session keys are namespaced ``agreement:``.
"""

from __future__ import annotations

from typing import Any, cast

import altair as alt
import pandas as pd
import streamlit as st

from annotation.access.identity import existing_db, require_admin
from annotation.render import counted, decisive, interval, md, num
from annotation.rubrics import RUBRICS
from annotation.store import StoreError, borrowed
from calibration import actions
from calibration.errors import InvalidInput, NothingToCompare
from calibration.gate import load_policy
from calibration.results import AgreementPair, AgreementReport, KappaEntry
from calibration.review_text import design_text, same_grade
from denominator.ui.browse import open_items

KEY = "agreement:"
TITLE = "Agreement between people"


def render_agreement_page() -> None:
    require_admin()
    st.title(TITLE)
    db = existing_db()
    if db is None:
        return
    rubric = st.radio("rubric", list(RUBRICS), key=f"{KEY}rubric", horizontal=True)
    try:
        policy = load_policy()
        with borrowed(db) as store:
            report = actions.agree(policy=policy, store=store, rubric=rubric)
            pairs = [people_of(p) for p in report["pairs"]]
            disagreements = {pair: store.browse_items(rubric=rubric, between=pair) for pair in pairs}
    except NothingToCompare as exc:  # one person, or people whose items do not meet: agree's exit 2
        st.info(
            md(
                f"Nothing to compare yet: {exc} (`python -m annotation pool --overlap SHARE` gives a "
                "share of the pooled items to a second person)."
            )
        )
        return
    except InvalidInput as exc:  # no labels of this rubric
        st.info(md(f"Nothing to compare yet: {exc}."))
        return
    except (StoreError, ValueError) as exc:  # a bad store, or a policy file that does not parse
        st.error(md(exc))
        return
    render_summary(report)
    render_pairs(report, disagreements)
    render_heatmap(report)
    render_disagreements(rubric, report, disagreements)


def people_of(pair: AgreementPair) -> tuple[str, str]:
    """A pair's two people, by name (the order the Items page's filter lists them in)."""
    first, second = sorted(map(str, pair["raters"]))
    return first, second


def render_summary(report: AgreementReport) -> None:
    bar = report["verdict_thresholds"]["trusted"]
    people = len(report["raters"])
    st.caption(
        md(
            f"{report['n_items']} items labelled by {people} people ({report['n_ratings']} current labels). "
            "Each pair of people is read on the items both labelled: Cohen's kappa "
            f"({report['statistic']}), its 95% interval clustered by query (people label whole queries, "
            f"so a query is the unit of the sample), and the verdict against the bar {bar}: trusted when "
            "the interval's lower end reaches it, not trusted when its upper end is below it, else "
            "undecided; no verdict below the policy's number of queries. The same figures as "
            "`python -m calibration agree --db DB`."
        )
    )
    alpha = report["krippendorff_alpha"]
    each = report.get("fleiss_ratings_per_item")
    all_people = (
        f"All {people} people together: Fleiss' kappa {num(report['fleiss_kappa'], medium='prose')}"
        + (
            f" (n = {report['n_items']} items, {each} labels each)"
            if report["fleiss_kappa"] is not None and each
            else ""
        )
        + f", Krippendorff's alpha {num(alpha['nominal'], medium='prose')} (nominal)"
        + (f", {num(alpha['ordinal'], medium='prose')} (ordinal)" if alpha.get("ordinal") is not None else "")
        + f" over the {report.get('krippendorff_items', report['n_items'])} of {report['n_items']} items "
        "labelled by two people or more."
    )
    st.write(md(all_people))
    if report.get("pairs_note"):
        st.caption(md(report["pairs_note"]))


def pairs_frame(report: AgreementReport, disagreements: dict[tuple[str, str], list[Any]]) -> pd.DataFrame:
    """One row per pair of people: what the verdict reads, each figure with its denominator."""
    bar = report["verdict_thresholds"]["trusted"]
    rows = []
    for pair in report["pairs"]:
        names = people_of(pair)
        ci = pair.get("kappa_ci")
        rows.append(
            {
                "people": " and ".join(names),
                "items both labelled": pair["n"],
                "same grade": same_grade(pair),
                "disagree": f"{len(disagreements.get(names, []))} / {pair['n']}",
                "kappa": decisive(pair["kappa"], bar, medium="prose"),  # a page: "undefined"
                "95% CI": interval(ci) if ci else f"none: {pair.get('reason') or 'undefined'}",
                "verdict": pair["verdict"],
                "design": design_text(cast(KappaEntry, pair)),
            }
        )
    return pd.DataFrame(rows)


def render_pairs(report: AgreementReport, disagreements: dict[tuple[str, str], list[Any]]) -> None:
    st.subheader("Each pair of people")
    st.dataframe(pairs_frame(report, disagreements), hide_index=True, key=f"{KEY}pairs")
    advice = [
        f"{' and '.join(map(str, p['raters']))}: {p['advice']}"
        for p in report["pairs"]
        if p["verdict"] != "trusted" and p.get("advice")
    ]
    for line in advice:
        st.caption(md(line))


def render_heatmap(report: AgreementReport) -> None:
    """The pairs' kappas as a matrix of people (each pair drawn on both sides of the diagonal)."""
    cells = []
    for pair in report["pairs"]:
        first, second = map(str, pair["raters"])
        for a, b in ((first, second), (second, first)):
            cells.append(
                {
                    "person": a,
                    "with": b,
                    "kappa": pair["kappa"],
                    "items": pair["n"],
                    "shown": num(pair["kappa"], 2, "prose"),
                }
            )
    if len(cells) < 2:
        return
    frame = pd.DataFrame(cells)
    base = alt.Chart(frame).encode(
        x=alt.X("with:N", title=None, axis=alt.Axis(labelAngle=0)),
        y=alt.Y("person:N", title=None),
    )
    heat = base.mark_rect().encode(
        color=alt.Color("kappa:Q", scale=alt.Scale(domain=[-1, 1], scheme="redblue"), title="kappa"),
        tooltip=["person", "with", "kappa", "items"],
    )
    text = base.mark_text().encode(text="shown:N")
    side = 60 * len(report["raters"]) + 80
    st.altair_chart(
        (heat + text).properties(width=side, height=side),
        alt=f"Cohen's kappa of each pair of {len(report['raters'])} people",
    )


def render_disagreements(
    rubric: str, report: AgreementReport, disagreements: dict[tuple[str, str], list[Any]]
) -> None:
    st.subheader("Where two people disagree")
    pairs = [people_of(p) for p in report["pairs"]]
    chosen = st.selectbox(
        "pair of people",
        pairs,
        key=f"{KEY}pair",
        format_func=lambda p: f"{p[0]} and {p[1]}: {counted(len(disagreements.get(p, [])), 'item', 'items')}",
    )
    if chosen is None:
        return
    rows = disagreements.get(chosen, [])
    if not rows:
        st.write(md(f"{chosen[0]} and {chosen[1]} gave the same grade on every item both labelled."))
        return
    first, second = chosen
    st.dataframe(
        pd.DataFrame(
            [
                {
                    "item": r["item_id"],
                    "query": r["query"] or r["query_id"] or "",
                    "shown": r["shown"],
                    first: r["people"][first],
                    second: r["people"][second],
                    "everyone": ", ".join(f"{name} {value}" for name, value in r["people"].items()),
                    "settled": "" if r["settled"] is None else f"{r['settled']} by {r['settled_by']}",
                }
                for r in rows
            ]
        ),
        hide_index=True,
        key=f"{KEY}items",
    )
    unsettled = sum(1 for r in rows if r["settled"] is None)
    st.caption(
        md(
            f"{unsettled} of {len(rows)} not settled yet. Settling an item (on the Items page) stores the "
            "admin's grade as their own label and marks it the item's grade in every export; neither "
            "person's label changes."
        )
    )
    what = "this item" if len(rows) == 1 else f"these {len(rows)} items"
    if st.button(f"Settle {what} on the Items page", key=f"{KEY}open"):
        open_items(rubric=rubric, between=chosen)
