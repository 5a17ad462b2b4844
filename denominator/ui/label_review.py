"""The Review labels page (reviewers and admins): a second pass over one person's labels (#43, item 7).

Choose a person and a rubric: the page shows their next label no one has reviewed yet, the item as
they saw it (its texts) and their grade, and the reviewer agrees (``a``) or corrects it to another
grade (its digit key). A correction is the reviewer's own label, a new row, and it settles the item,
so the exports give the corrected grade; the person's label is never overwritten
(:mod:`annotation.store.reviews`). Above, each person's share of reviewed labels corrected, with its
denominator. Nobody reviews their own labels. Session keys are namespaced ``labelreview:``.

The labelling pages never link here, and nothing of a review reaches a labeller's page (they stay
blind to every other label).
"""

from __future__ import annotations

from typing import Any, Literal

import pandas as pd
import streamlit as st

from annotation.access.identity import existing_db, require_reviewer
from annotation.render import md
from annotation.rubrics import KIND_OF_RUBRIC, RUBRICS, candidate_value, get_rubric
from annotation.store import StoreError, borrowed
from annotation.store.reviews import ReviewShare
from denominator.ui.browse import admin_name, render_texts

KEY = "labelreview:"
TITLE = "Review labels"


def share(part: int, whole: int) -> str:
    """``2 / 10 (20%)``; ``0 / 0`` when there is nothing to share."""
    return f"{part} / {whole}" + (f" ({part / whole:.0%})" if whole else "")


def shares_frame(shares: list[ReviewShare]) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {
                "person": s["person"],
                "labels": s["labels"],
                "reviewed": share(s["reviewed"], s["labels"]),
                "agreed": share(s["agreed"], s["reviewed"]),
                "corrected": share(s["corrected"], s["reviewed"]),
            }
            for s in shares
        ]
    )


def render_label_review_page() -> None:
    identity = require_reviewer()
    st.title(TITLE)
    db = existing_db()
    if db is None:
        return
    me = admin_name(identity)
    rubric = st.radio("rubric", list(RUBRICS), key=f"{KEY}rubric", horizontal=True)
    kind = KIND_OF_RUBRIC[rubric]
    try:
        with borrowed(db) as store:
            shares = store.review_shares(kind)
    except StoreError as exc:
        st.error(md(exc))
        return
    st.caption(
        "Each person's current labels (an admin's settlement is not one to review), how many were reviewed, "
        "and of those how many a reviewer agreed with or corrected (a label's newest review counts)."
    )
    if not shares:
        st.info(f"No one has a {rubric} label yet.")
        return
    st.dataframe(shares_frame(shares), hide_index=True, key=f"{KEY}shares")
    people = [s["person"] for s in shares if s["person"] != me]
    if not people:
        st.info("The only labels are your own: another reviewer or an admin reviews them.")
        return
    person = st.selectbox("whose labels", people, key=f"{KEY}person")
    if person is None:
        return
    render_next(db, me, person, kind)


def render_next(db: str, me: str, person: str, kind: str) -> None:
    """The person's next unreviewed label with its item, and the reviewer's answer to it."""
    try:
        with borrowed(db) as store:
            waiting = store.labels_to_review(person, kind)
            total = next(s["labels"] for s in store.review_shares(kind) if s["person"] == person)
            item = store.item_detail(waiting[0]["item_id"]) if waiting else None
    except StoreError as exc:
        st.error(md(exc))
        return
    done = total - len(waiting)
    st.progress(done / total if total else 1.0, text=f"{done} / {total} of {md(person)}'s labels reviewed")
    if not waiting or item is None:
        st.success(f"Every current {item_kind_words(kind)} label of {md(person)} is reviewed.")
        return
    label = waiting[0]
    scale = get_rubric(label["rubric"]).scale
    value = candidate_value(kind, label["value"], label["shown"])
    st.subheader(f"Item {label['item_id']}")
    render_texts(item)
    st.markdown(f"**{md(person)} said {value}**: {md(scale[value])}")
    note = st.text_input("note (optional, kept with the review)", key=f"{KEY}note:{label['label_id']}")
    keys = st.columns(1 + len(scale))
    if keys[0].button("Agree", key=f"{KEY}agree", shortcut="a", type="primary"):
        answer(db, label, me, "agree", None, note)
    for column, grade in zip(keys[1:], scale):
        if grade == value:
            continue
        if column.button(
            f"Correct to {grade}", key=f"{KEY}correct:{grade}", shortcut=str(grade), help=scale[grade]
        ):
            answer(db, label, me, "correct", grade, note)


def item_kind_words(kind: str) -> str:
    return {"chunk": "chunk", "trace": "trace", "pair": "answer-pair"}[kind]


def answer(
    db: str,
    label: dict[str, Any],
    me: str,
    verdict: Literal["agree", "correct"],
    grade: int | None,
    note: str,
) -> None:
    """Record the review; the page then shows the next label."""
    try:
        with borrowed(db) as store:
            store.review_label(label["label_id"], me, verdict, grade, note.strip() or None)
    except StoreError as exc:
        st.error(md(exc))
        return
    st.rerun()
