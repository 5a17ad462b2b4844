"""Marking the answer inside a chunk on *Label chunks* (#44 item 2).

``e`` opens, for the chunk on screen, a picker of its sentences
(:func:`annotation.sentences.sentence_spans`), the person's own current marks ticked (never
another person's: the page stays blind); ``m`` saves the ticked ones as spans of the chunk's
document (:meth:`annotation.store.Store.mark_evidence`: a new row, append-only; none ticked
takes the marks back). The chunk's grade is a separate key press and stays what it is. The store is
read only while the picker is open: a grade's key press costs no extra query.
"""

from __future__ import annotations

from typing import Any

import streamlit as st

from annotation.access.identity import current, db_path
from annotation.render import counted, md
from annotation.store import StoreError, borrowed
from annotation.views import marking_view

__all__ = ["MARK_KEY", "SAVE_KEY", "render_mark_button", "render_marker"]

MARK_KEY = "e"  # free on Label chunks: grades 0-3, s skip, u undo, g guidelines
SAVE_KEY = "m"
STATE = "label:mark:"  # session keys of the picker: which item it is open on, its message, its boxes


def render_mark_button(column: Any, item_id: int) -> None:
    """The key that opens (or closes) the picker on ``item_id``."""
    shown = st.session_state.get(f"{STATE}open") == item_id
    column.button(
        "Close the marking (e)" if shown else "Mark the answer (e)",
        key=f"{STATE}toggle",
        shortcut=MARK_KEY,
        on_click=_toggle,
        args=(item_id,),
    )


def _toggle(item_id: int) -> None:
    shown = st.session_state.get(f"{STATE}open") == item_id
    st.session_state[f"{STATE}open"] = None if shown else item_id
    _clear_boxes()  # opened afresh: the boxes show the stored marks, not an earlier item's ticks


def _clear_boxes() -> None:
    for key in [k for k in st.session_state if str(k).startswith(f"{STATE}box-")]:
        del st.session_state[key]


def render_marker(item: dict[str, Any], annotator: str) -> None:
    """The picker, when it is open on ``item``; its last message either way."""
    message = st.session_state.pop(f"{STATE}message", None)
    if message:
        st.info(md(message))
    item_id = item["item_id"]
    if st.session_state.get(f"{STATE}open") != item_id:
        return
    text = item["chunk"]
    try:
        with borrowed(db_path()) as store:
            shown = marking_view(store, item_id, annotator, text)
    except StoreError as exc:
        st.warning(md(exc))
        return
    sentences = [(begin, finish) for begin, finish, _ in shown]
    with st.container(key="label-mark-sentences"):
        st.markdown(
            "**Which sentences answer the query?** Tick them, then save (m). Your grade is a separate key."
        )
        for number, (begin, finish, ticked) in enumerate(shown):
            st.checkbox(
                md(text[begin:finish]),
                value=ticked,
                key=f"{STATE}box-{number}",  # by position: no store id in the page (#17)
            )
        st.button(
            "Save the marks (m)",
            key=f"{STATE}save",
            shortcut=SAVE_KEY,
            on_click=_save,
            args=(item_id, annotator, sentences),
        )


def _save(item_id: int, annotator: str, sentences: list[tuple[int, int]]) -> None:
    ticked = [span for number, span in enumerate(sentences) if st.session_state.get(f"{STATE}box-{number}")]
    try:
        with borrowed(db_path()) as store:
            identity = current(store)  # a token revoked since the page was drawn writes nothing
            if identity is None or (identity.mode == "token" and identity.name != annotator):
                st.session_state[f"{STATE}message"] = (
                    "Your access is no longer valid: the marks were not saved. Sign in again."
                )
                return
            store.mark_evidence(item_id, annotator, ticked)
    except StoreError as exc:  # a callback's exception would show a traceback
        st.session_state[f"{STATE}message"] = f"The marks were not saved: {exc}"
        return
    st.session_state[f"{STATE}open"] = None
    _clear_boxes()
    st.session_state[f"{STATE}message"] = (
        f"Marked {counted(len(ticked), 'sentence', 'sentences')} of this chunk as the answer "
        "(its grade is unchanged: grade it with 0-3)."
        if ticked
        else "Took back your marks of this chunk."
    )
