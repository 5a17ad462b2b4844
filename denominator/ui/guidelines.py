"""The Guidelines page (admins): each rubric's guidelines (the grade definitions and worked
examples people read on the labelling pages' ``g`` key), edited here, and every version of them.

An edit goes through the function ``python -m annotation guidelines set`` calls
(:func:`annotation.actions.guidelines`): it appends a new version, never overwrites one, and
records who and when; the same text adds none. Labels made from then on record the new version,
and an LLM judge's next run on the rubric reads the edited guidelines in its prompt: a new
fingerprint, so a new version of the judge, uncalibrated until measured (``judge.prompts``).
Every string from the store is escaped (:func:`annotation.render.md`); the text itself is shown
in a text box and as plain text, never as Markdown.
"""

from __future__ import annotations

import streamlit as st

from annotation import actions
from annotation.access.identity import existing_db, require_admin
from annotation.commands_text import guidelines_text
from annotation.options import login_name
from annotation.render import md
from annotation.rubrics import RUBRICS, InvalidGuidelines
from annotation.store import StoreError, borrowed

__all__ = ["render_guidelines_page"]

SAVED = "guidelines:saved"  # what the last save did, for the run it reruns into


def render_guidelines_page() -> None:
    identity = require_admin()
    st.title("Guidelines")
    db = existing_db()
    if db is None:
        return
    st.caption(
        "What people read on the labelling pages' g key: each grade's definition and worked examples. "
        "An edit is a new version (the old ones stay); labels made from then on record it, and an LLM "
        "judge's next run on the rubric reads it in its prompt, as a new version of the judge "
        "(uncalibrated until measured against people)."
    )
    rubric = st.radio("rubric", tuple(RUBRICS), horizontal=True, key="guidelines:rubric") or "relevance"
    try:
        with borrowed(db) as store:
            now = actions.guidelines(store, "show", rubric=rubric)
            history = store.guideline_history(rubric)
            unrecorded = store.labels_by_guidelines(rubric).get(None, 0)
    except StoreError as exc:
        st.error(md(exc))
        return
    saved = st.session_state.pop(SAVED, None)  # shown on the one run after the save
    if saved is not None:
        st.success(md(saved))
    st.subheader(f"In force: version {now.version}")
    st.caption(md(guidelines_text(now)))
    with st.form(f"guidelines:edit:{rubric}"):
        text = st.text_area(
            "the guidelines (plain text)",
            value=now.text,
            height=420,
            key=f"guidelines:text:{rubric}:{now.version}",
        )
        if st.form_submit_button("Save as a new version", type="primary"):
            save(db, rubric, text, identity.name or login_name(), now.version)
    st.subheader("Versions")
    st.table(
        [
            {
                "version": str(row["version"]),
                "by": md(row["who"]) if row["who"] else "built in",
                "when (UTC)": (row["created_at"] or "").replace("T", " ")[:19] or "",
                "labels made under it": str(row["labels"]),
            }
            for row in history
        ]
    )
    recorded = sum(row["labels"] for row in history)
    st.caption(
        f"{recorded} of the {recorded + unrecorded} {rubric} label rows with a grade record the version "
        f"they were made under; {unrecorded} do not (stored before versions were recorded, or imported)."
    )


def save(db: str, rubric: str, text: str, who: str, version: int) -> None:
    """Append ``text`` as the next version (the same text: none), then draw the page again."""
    try:
        with borrowed(db) as store:
            after = actions.guidelines(store, "set", rubric=rubric, text=text, who=who)
    except (StoreError, InvalidGuidelines) as exc:  # empty, too long, a control character
        st.error(md(exc))
        return
    if after.version == version:
        st.session_state[SAVED] = f"Unchanged: the text is the same as version {version}; no version added."
    else:
        st.session_state[SAVED] = f"Saved: {guidelines_text(after)}."
    st.rerun()
