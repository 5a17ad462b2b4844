"""The Items page (admins): every item with everyone's labels and the judges' grades side by side.

Filter by query, rubric, run, annotator and judge, by "people disagree" and "judge and people
disagree" (their definitions: :mod:`annotation.store.browse`), by a cell of the review's confusion
matrix (the judge's grade and the people's grade) and by a week's review sample; open an item (a
row of the table) to read its texts, every label row with who and when (retractions too), every
judge's grade and reason, and to settle it: the admin's grade is stored as their own label and
marked as the settled one (:meth:`Store.settle`, one transaction), which the exports' aggregate
then gives the item.

The labelling pages never link here: an annotator's navigation holds no admin page, and this page
stops at :func:`annotation.access.identity.require_admin` (checked on every run). The review page
opens it on a cell of its confusion matrix (:func:`open_items`). Session keys are namespaced
``browse:``.
"""

from __future__ import annotations

import os
from typing import Any, NoReturn

import pandas as pd
import streamlit as st

from annotation.access.identity import Identity, existing_db, require_admin
from annotation.render import md
from annotation.rubrics import get_rubric
from annotation.store import Store, StoreError, borrowed
from annotation.store.browse import KIND_OF_RUBRIC

KEY = "browse:"
HANDED = f"{KEY}handed"  # filters another page hands over (open_items), applied on the next run
TITLE = "Items"
URL_PATH = "items"  # app.py registers the page under this path: open_items switches to it
ANY = ""  # the "any" choice of a filter (None would read as no choice made)
FILTERS: dict[str, Any] = {  # every filter's widget key and its default
    "query": "",
    "rubric": ANY,
    "run": ANY,
    "annotator": ANY,
    "judge": ANY,
    "people_disagree": False,
    "judge_disagrees": False,
    "judge_grade": ANY,
    "people_grade": ANY,
    "week": "",
    "settled": ANY,
    "between": ANY,
}
SETTLED_CHOICES: dict[str | bool, str] = {
    ANY: "settled or not",
    True: "settled only",
    False: "not settled only",
}


def items_page() -> st.Page:
    """The page as app.py registers it (the review page switches to it by this)."""
    return st.Page(render_items_page, title=TITLE, url_path=URL_PATH)


def open_items(**filters: Any) -> NoReturn:
    """Switch to the Items page with these filters (names of :data:`FILTERS`; the rest at their
    defaults), e.g. the judge, its grade and the people's grade of a confusion-matrix cell."""
    unknown = sorted(set(filters) - set(FILTERS))
    if unknown:
        raise TypeError(f"unknown item filters {', '.join(unknown)}; expected some of {', '.join(FILTERS)}")
    st.session_state[HANDED] = {**FILTERS, **filters}
    st.switch_page(items_page())


def _any(value: Any) -> str:
    return "any" if _is_any(value) else str(value)


def _is_any(value: Any) -> bool:
    return isinstance(value, str) and value == ANY


def _chosen(value: Any) -> Any:
    """A filter's value, None for "any"."""
    return None if _is_any(value) else value


def render_items_page() -> None:
    identity = require_admin()
    st.title(TITLE)
    db = existing_db()
    if db is None:
        return
    handed = st.session_state.pop(HANDED, None)
    if handed:  # set before the widgets are drawn: they start from the handed filters
        for name, value in handed.items():
            st.session_state[f"{KEY}{name}"] = value
        st.session_state.pop(f"{KEY}table", None)
    try:
        with borrowed(db) as store:
            filters = render_filters(store)
            rows = store.browse_items(**filters)
    except StoreError as exc:
        st.error(md(exc))
        return
    st.caption(
        (f"{len(rows)} items match" if len(rows) != 1 else "1 item matches")
        + ". People disagree: two or more people's current labels differ (by any "
        "amount). Judge and people disagree: a judge's grade differs from the people's grade (the median "
        "of their current labels); without a chosen judge, the current version of every judge counts. "
        "Pairs are compared by people only. Choose a row to open its item."
    )
    if not rows:
        return
    event = st.dataframe(
        items_frame(rows),
        key=f"{KEY}table",
        on_select="rerun",
        selection_mode="single-row",
        hide_index=True,
        column_config={
            name: st.column_config.Column(width="small")
            for name in ("item", "rubric", "labels", "people's grade", "disagree", "settled")
        },
    )
    chosen = list(event.selection.rows) if event is not None else []
    if chosen and chosen[0] < len(rows):
        render_item(db, rows[chosen[0]]["item_id"], admin_name(identity))


def render_filters(store: Store) -> dict[str, Any]:
    """The filters, in two rows of widgets (the store's runs, annotators and judges to choose
    from); returns :meth:`Store.browse_items`'s keyword arguments."""
    judges = {j["fingerprint"]: j for j in store.judges()}
    runs = [name for _, name in store.stored_runs()]
    people = [a["name"] for a in store.annotators()]
    for name, default in FILTERS.items():
        st.session_state.setdefault(f"{KEY}{name}", default)
    first = st.columns(4)
    query = first[0].text_input("query (id or words)", key=f"{KEY}query").strip()
    rubric = first[1].selectbox("rubric", [ANY, *KIND_OF_RUBRIC], key=f"{KEY}rubric", format_func=_any)
    run = first[2].selectbox(
        "run (chunks it returned)", [ANY, *runs], key=f"{KEY}run", format_func=lambda r: _any(r)
    )
    annotator = first[3].selectbox(
        "labelled by",
        [ANY, *people],
        key=f"{KEY}annotator",
        format_func=lambda a: "anyone" if _is_any(a) else a,
    )
    second = st.columns(4)
    judge = second[0].selectbox(
        "judge",
        [ANY, *judges],
        key=f"{KEY}judge",
        format_func=lambda fp: (
            "every judge (current versions)"
            if _is_any(fp)
            else f"{judges[fp]['name']} v{judges[fp]['version']} ({judges[fp]['rubric']})"
        ),
    )
    grades = sorted({v for r in KIND_OF_RUBRIC for v in get_rubric(r).scale})
    judge_grade = second[1].selectbox(
        "judge's grade", [ANY, *grades], key=f"{KEY}judge_grade", format_func=_any
    )
    people_grade = second[2].selectbox(
        "people's grade (median)", [ANY, *grades], key=f"{KEY}people_grade", format_func=_any
    )
    settled = second[3].selectbox(
        "settled", list(SETTLED_CHOICES), key=f"{KEY}settled", format_func=SETTLED_CHOICES.__getitem__
    )
    third = st.columns([1, 1, 2, 2])
    people_disagree = third[0].checkbox("people disagree", key=f"{KEY}people_disagree")
    judge_disagrees = third[1].checkbox("judge and people disagree", key=f"{KEY}judge_disagrees")
    week = third[2].text_input("in the review sample of week (ISO, e.g. 2026-W49)", key=f"{KEY}week").strip()
    pairs = [(a, b) for i, a in enumerate(sorted(people)) for b in sorted(people)[i + 1 :]]
    handed_pair = st.session_state[f"{KEY}between"]
    if not _is_any(handed_pair) and tuple(handed_pair) not in pairs:  # a pair no longer both people
        st.session_state[f"{KEY}between"] = ANY
    between = third[3].selectbox(
        "two people disagree",
        [ANY, *pairs],
        key=f"{KEY}between",
        format_func=lambda p: "any two" if _is_any(p) else f"{p[0]} and {p[1]}",
    )
    return {
        "query": query or None,
        "rubric": _chosen(rubric),
        "run": _chosen(run),
        "annotator": _chosen(annotator),
        "judge": _chosen(judge),
        "people_disagree": people_disagree,
        "judge_disagrees": judge_disagrees,
        "judge_grade": _chosen(judge_grade),
        "people_grade": _chosen(people_grade),
        "week": week or None,
        "settled": _chosen(settled),
        "between": None if _is_any(between) else tuple(between),
    }


def items_frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    """The browser's table: one row per item (st.dataframe shows cells as text, never Markdown)."""
    return pd.DataFrame(
        [
            {
                "item": r["item_id"],
                "rubric": r["rubric"],
                "query": r["query"] or r["query_id"] or "",
                "shown": r["shown"],
                "labels": r["labels"],
                "people": ", ".join(f"{name} {value}" for name, value in r["people"].items()),
                "people's grade": _grade(r["people_grade"]),
                "judges": ", ".join(f"{name}: {value}" for name, value in r["judges"].items()),
                "disagree": _disagree(r),
                "settled": _grade(r["settled"]) + (f" by {r['settled_by']}" if r["settled_by"] else ""),
            }
            for r in rows
        ]
    )


def _grade(value: int | None) -> str:
    return "" if value is None else str(value)


def _disagree(row: dict[str, Any]) -> str:
    """Who disagrees on the item: "people", "judge" (with people), both, or "" (no one)."""
    return ", ".join(
        who for who, flag in (("people", row["people_disagree"]), ("judge", row["judge_disagrees"])) if flag
    )


def admin_name(identity: Identity) -> str:
    """Who settles: the signed-in admin; in single-user local mode, the name typed in the sidebar."""
    if identity.name:
        return identity.name
    return st.sidebar.text_input(
        "your name (admin)", value=os.environ.get("DENOMINATOR_ANNOTATOR") or "admin", key=f"{KEY}admin"
    ).strip()


# ---------------------------------------------------------------- one item


def _text(label: str, text: str | None) -> None:
    """A text from the data, shown as plain text (never as HTML or Markdown)."""
    st.markdown(f"**{label}**")
    st.code(text if text is not None else "(no text stored)", language=None, wrap_lines=True)


def render_item(db: str, item_id: int, admin: str) -> None:
    """The opened item: its texts, every label row, every judge row, and the settle form."""
    try:
        with borrowed(db) as store:
            item = store.item_detail(item_id)
            history = store.item_labels(item_id)
    except StoreError as exc:
        st.error(md(exc))
        return
    if item is None:
        st.error(f"Item {int(item_id)} is no longer stored.")
        return
    st.subheader(f"Item {item_id}: {item['kind']}, {item['rubric']}")
    render_texts(item)
    st.markdown("**People's labels** (every row, oldest first; a retraction has no value)")
    if history["labels"]:
        st.dataframe(labels_frame(history["labels"], item["rubric"]), hide_index=True, key=f"{KEY}labels")
    else:
        st.caption("No person has labelled this item.")
    st.markdown("**Judges' answers** (every row, oldest first; a failed call has an error and no grade)")
    if history["judge_labels"]:
        st.dataframe(judges_frame(history["judge_labels"]), hide_index=True, key=f"{KEY}judge-rows")
    else:
        st.caption("No judge has graded this item.")
    render_settle(db, item, history, admin)


def render_texts(item: dict[str, Any]) -> None:
    if item["kind"] == "chunk":
        st.caption(f"Query {md(item['query_id'])}, chunk {md(item['chunk_id'])}")
        _text("Query", item["query"])
        _text("Chunk", item["chunk"])
        return
    st.caption(
        f"Trace {md(item['trace_id'])} (system {md(item['system'])})"
        + (
            f"; B: trace {md(item['trace_b_id'])} (system {md(item['system_b'])})"
            if item["kind"] == "pair"
            else ""
        )
    )
    _text("Question", item["question"])
    if item["kind"] == "trace":
        for number, context in enumerate(item["contexts"], start=1):
            _text(f"Context {number} of {len(item['contexts'])}", context)
        _text("Answer", item["answer"])
        return
    first, second = st.columns(2)
    with first:
        _text("Answer A", item["answer"])
    with second:
        _text("Answer B", item["answer_b"])


def labels_frame(labels: list[dict[str, Any]], rubric: str) -> pd.DataFrame:
    scale = get_rubric(rubric).scale
    return pd.DataFrame(
        [
            {
                "when": label["created_at"],
                "who": label["annotator"],
                "role": label["role"],
                "value": "retracted (undo)"
                if label["retraction"]
                else f"{label['candidate']} ({scale.get(label['candidate'], '?').partition(':')[0]})",
                "shown": label["shown"] or "",
                "note": label["note"] or "",
                "counts": "current" if label["current"] and not label["retraction"] else "",
                "settles": "settled grade" if label["settles"] else "",
            }
            for label in labels
        ]
    )


def judges_frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {
                "when": r["created_at"],
                "judge": f"{r['judge']} v{r['version']}" if r["judge"] else r["fingerprint"][:16],
                "order": r["ab_order"] or "",
                "repeat": r["repeat"] or 0,
                "grade": _grade(r["value"]),
                "reason": r["reason"] or "",
                "error": r["error"] or "",
                "served model": r["served_model"] or "",
            }
            for r in rows
        ]
    )


def render_settle(db: str, item: dict[str, Any], history: dict[str, Any], admin: str) -> None:
    """The item's settlement, and the form that settles it (or withdraws it)."""
    item_id = item["item_id"]
    rubric = get_rubric(item["rubric"])
    current = history["settlements"][-1] if history["settlements"] else None
    st.markdown("**Adjudication**")
    if current and current["current"]:
        st.info(
            f"Settled at {current['value']} ({md(rubric.wording(current['value']).partition(':')[0])}) "
            f"by {md(current['admin'])} at {md(current['created_at'])}: the exports give this item that grade."
        )
    else:
        st.caption(
            "Not settled: the exports give this item the aggregate (median, majority or mean) of the people's labels."
        )
    message = st.session_state.pop(f"{KEY}message", None)
    if message:
        (st.error if message[0] == "error" else st.success)(md(message[1]))
    with st.form(f"{KEY}settle:{item_id}"):
        value = st.selectbox(
            "settled grade",
            list(rubric.scale),
            key=f"{KEY}value:{item_id}",
            format_func=lambda v: f"{v}: {rubric.wording(v)}",
        )
        note = st.text_input("why (optional, kept with the admin's label)", key=f"{KEY}note:{item_id}")
        st.form_submit_button(
            "Settle at this grade",
            on_click=_settle,
            args=(db, item_id, admin, value, note),
            disabled=not admin,
        )
    if current and current["current"]:
        st.button(
            "Withdraw the settlement",
            key=f"{KEY}unsettle:{item_id}",
            on_click=_unsettle,
            args=(db, item_id, admin),
        )


def _settle(db: str, item_id: int, admin: str, value: int, note: str) -> None:
    # a form's widgets hand their values to the callback through session state, not its args
    value = st.session_state.get(f"{KEY}value:{item_id}", value)
    note = (st.session_state.get(f"{KEY}note:{item_id}", note) or "").strip()
    try:
        with borrowed(db) as store:
            store.settle(item_id, admin, value, note=note or None)
    except StoreError as exc:
        st.session_state[f"{KEY}message"] = ("error", str(exc))
        return
    st.session_state[f"{KEY}message"] = ("ok", f"Item {item_id} settled at {value} by {admin}.")


def _unsettle(db: str, item_id: int, admin: str) -> None:
    try:
        with borrowed(db) as store:
            store.unsettle(item_id, admin)
    except StoreError as exc:
        st.session_state[f"{KEY}message"] = ("error", str(exc))
        return
    st.session_state[f"{KEY}message"] = ("ok", f"Item {item_id}: settlement withdrawn by {admin}.")
