"""The labelling pages. Keyboard first, blind to every machine label.

*Label chunks*: the query and one chunk, the four relevance grades with their
wording; keys ``0``-``3`` grade and advance, ``s`` skips, ``u`` undoes the last
label of this session. Only the query text, the chunk text, the rubric and the
annotator's own progress are shown: no run, rank, score, judge label or other
person's label (the queue itself never reads them: annotation.pooling).

Session keys are namespaced ``label:``; the store is opened per script run
(cheap) and closed at the end of it.
"""

from __future__ import annotations

import os
import time

import streamlit as st

from annotation.pooling import next_item, progress
from annotation.rubrics import RELEVANCE
from annotation.store import Store, StoreError, default_db_path

KEY = "label:"


def _state(name: str, default):
    return st.session_state.setdefault(f"{KEY}{name}", default)


def _db_path() -> str:
    return os.environ.get("DENOMINATOR_DB") or default_db_path()


def render_label_chunks_page() -> None:
    st.title("Label chunks")
    annotator = st.sidebar.text_input(
        "annotator", value=os.environ.get("DENOMINATOR_ANNOTATOR", "ann"), key=f"{KEY}annotator"
    ).strip()
    if not annotator:
        st.info("Type your name in the sidebar to start.")
        return
    if not os.path.exists(_db_path()):
        st.error(
            f"No database at {_db_path()}: build the demo with `python -m annotation demo` "
            "or import data with `python -m annotation import`."
        )
        return
    st.caption(RELEVANCE.question + " Keys: 0-3 grade, s skip, u undo.")
    render_label_pane(annotator)


def _grade(annotator: str, item_id: int, value: int) -> None:
    started = st.session_state.get(f"{KEY}shown_at")
    seconds = round(time.monotonic() - started, 3) if started else None
    with Store(_db_path()) as store:
        store.add_label(item_id, annotator, value, seconds=seconds)
    _state("history", []).append(item_id)
    st.session_state[f"{KEY}shown_at"] = None
    st.session_state[f"{KEY}current"] = None


def _skip(item_id: int) -> None:
    _state("skipped", []).append(item_id)
    st.session_state[f"{KEY}shown_at"] = None
    st.session_state[f"{KEY}current"] = None


def _undo(annotator: str) -> None:
    history = _state("history", [])
    if not history:
        st.session_state[f"{KEY}message"] = "Nothing to undo in this session."
        return
    item_id = history.pop()
    with Store(_db_path()) as store:
        store.undo(item_id, annotator)
    st.session_state[f"{KEY}current"] = item_id  # the undone item comes back at once
    st.session_state[f"{KEY}shown_at"] = None


@st.fragment
def render_label_pane(annotator: str) -> None:
    """The labelling pane: reruns alone on each keypress."""
    try:
        with Store(_db_path()) as store:
            store.annotator_id(annotator)
            done, total = progress(store, annotator)
            # the item on screen stays until it is graded or skipped (stable across reruns)
            current = st.session_state.get(f"{KEY}current")
            item = _item_by_id(store, current) if current is not None else None
            if item is None:
                item = next_item(store, annotator, skipped=_state("skipped", []))
                st.session_state[f"{KEY}current"] = item["item_id"] if item else None
    except StoreError as exc:
        st.error(str(exc))
        return
    st.progress(
        done / total if total else 1.0, text=f"{done} / {total} in this batch labelled by {annotator}"
    )
    message = st.session_state.pop(f"{KEY}message", None)
    if message:
        st.info(message)
    if item is None:
        skipped = len(_state("skipped", []))
        st.success(
            f"Nothing left to label: {done} of {total} done"
            + (f", {skipped} skipped in this session." if skipped else ".")
        )
        st.button(
            "Undo the last label (u)", key=f"{KEY}undo", shortcut="u", on_click=_undo, args=(annotator,)
        )
        return
    if st.session_state.get(f"{KEY}shown_at") is None:
        st.session_state[f"{KEY}shown_at"] = time.monotonic()
    st.markdown("**Query**")
    st.code(item["query"], language=None, wrap_lines=True)
    st.markdown("**Chunk**")
    st.code(item["chunk"], language=None, wrap_lines=True)
    columns = st.columns(len(RELEVANCE.scale))
    for column, (value, wording) in zip(columns, RELEVANCE.scale.items()):
        name, _, meaning = wording.partition(": ")
        column.button(
            f"{value} · {name}",
            key=f"{KEY}grade{value}",
            shortcut=str(value),
            on_click=_grade,
            args=(annotator, item["item_id"], value),
            width="stretch",
        )
        column.caption(meaning)
    left, right = st.columns(2)
    left.button("Skip (s)", key=f"{KEY}skip", shortcut="s", on_click=_skip, args=(item["item_id"],))
    right.button("Undo the last label (u)", key=f"{KEY}undo", shortcut="u", on_click=_undo, args=(annotator,))


def _item_by_id(store: Store, item_id: int) -> dict | None:
    row = store.db.execute(
        """SELECT q.text, c.text FROM items i JOIN queries q ON q.id = i.query_id
           JOIN chunks c ON c.id = i.chunk_id WHERE i.id = ? AND i.kind = 'chunk'""",
        [item_id],
    ).fetchone()
    return {"item_id": item_id, "query": row[0] or "", "chunk": row[1] or ""} if row else None
