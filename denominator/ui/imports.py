"""The Data page's imports: what was imported, by whom, and taking an import back (retire) or
bringing it back (restore); and the confirmation a file asks for when its shape matches another
slot (a corpus given as queries).

A thin face over :func:`annotation.actions.imports` (:meth:`Store.imports`, :meth:`Store.retire_import`, :meth:`Store.restore_import`)
(the rules: :mod:`annotation.store.retirements`) with the sentences of
:mod:`annotation.commands_text` (:func:`retirement_text`, :func:`rows_text`), the ones ``python -m
annotation imports`` prints. Every string from the data is escaped (:func:`annotation.render.md`).
"""

from __future__ import annotations

from typing import Literal

import streamlit as st

from annotation import actions
from annotation.commands_text import import_state_text, retirement_text, rows_text
from annotation.exchange import (
    NothingToImport,
    WrongSlot,
)
from annotation.model import FormatError
from annotation.options import login_name
from annotation.render import md
from annotation.store import ImportRecord, StoreError, borrowed

__all__ = [
    "render_imports_section",
    "who_acts",
    "page_words",
    "render_wrong_slot",
    "PAGE_FIELDS",
    "PENDING_IMPORT",
]

KEY = "data:imports:"
PENDING_IMPORT = "data:pending-import"  # a refused import (uploads, options, WrongSlot) until confirmed
DONE = "data:imports:done"  # what the last retire or restore did, said once after the rerun

# what a refused import is about, as this page names it (the command line names its flags)
PAGE_FIELDS = {
    "name": "fill in the run's name",
    "annotator": "fill in who made the labels",
    "stage": "choose the run's stage",
    "files": "choose at least one file above",
}


def who_acts(name: str | None) -> str:
    """Who the page records as running an import or a retirement: the signed-in person, else
    (single-user local mode) the login name at this machine, marked as such."""
    return name or f"{login_name()} (local mode)"


def page_words(exc: StoreError | FormatError) -> str:
    """A refused import in the page's words: the box it is about, never a command-line flag."""
    hint = PAGE_FIELDS.get(exc.field) if isinstance(exc, NothingToImport) else None
    return f"{exc}: {hint}" if hint else str(exc)


def render_wrong_slot(exc: WrongSlot) -> bool:
    """A file whose shape matches the other slot: what it looks like, and a button that imports it
    as given; True when that button was pressed."""
    st.warning(f"Nothing was imported: {md(exc)}.")
    name = exc.path.replace("\\", "/").rsplit("/", 1)[-1]
    return st.button(f"Import {md(name)} as {exc.slot} anyway", key=f"{KEY}anyway")


def imports_rows(imports: list[ImportRecord]) -> list[dict[str, str]]:
    """The imports table, newest first, each cell escaped."""
    return [
        {
            "id": str(row["id"]),
            "when (UTC)": md(row["created_at"][:19].replace("T", " ")),
            "kind": md(row["kind"]),
            "who": md(row["who"]),
            "state": md(import_state_text(row)),
            "rows it holds": rows_text(row["rows"]),
            "name": md(row["name"]),
        }
        for row in reversed(imports)
    ]


def render_imports_section(db: str, who: str) -> None:
    """Every import, and a form that retires or restores one."""
    st.subheader("Imports: take one back")
    done = st.session_state.pop(DONE, None)
    if done:
        st.success(md(done))
    try:
        with borrowed(db) as store:
            imports = actions.imports(store)
    except StoreError as exc:
        st.error(md(exc))
        return
    if not imports:
        st.info(
            "Nothing has been imported yet (rows stored before imports were recorded, or made on "
            "these pages, belong to no import and cannot be retired)."
        )
        return
    retired = sum(1 for row in imports if row["state"] == "retired")
    st.caption(
        f"{len(imports)} import{'s' if len(imports) != 1 else ''}, {retired} retired. A retired import's rows "
        "leave the queues, metrics, exports and reviews; nothing is deleted, and restoring it brings them back."
    )
    st.table(imports_rows(imports), hide_index=True)
    by_id = {row["id"]: row for row in imports}
    chosen = st.selectbox(
        "import",
        list(reversed(by_id)),
        format_func=lambda i: f"{i}: {by_id[i]['name']} ({by_id[i]['state']})",
        key=f"{KEY}chosen",
    )
    row = by_id[chosen]
    action: Literal["retire", "restore"] = "restore" if row["state"] == "retired" else "retire"
    reason = st.text_input("why (kept with the record)", key=f"{KEY}reason")
    if st.button(f"{action.capitalize()} import {chosen}", key=f"{KEY}{action}"):
        try:
            with borrowed(db) as store:
                done = actions.imports(store, action, import_id=chosen, who=who, reason=reason)
        except StoreError as exc:
            st.error(md(exc))
            return
        text = retirement_text(done, action)
        st.session_state[DONE] = text[0].upper() + text[1:] + "."
        st.rerun()  # the whole page again: its counts, queues and this table without the import
