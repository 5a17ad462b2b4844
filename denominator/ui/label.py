"""The labelling pages. Keyboard first, blind to every machine label.

- *Label chunks*: a query and one chunk; relevance 0-3, keys ``0``-``3``.
- *Label traces*: the question, the contexts the system was shown, its
  answer; faithfulness 0-2, keys ``0``-``2``, an optional note.
- *Compare answers*: two answers to one question in a random order (recorded
  with the label); keys ``a``, ``b``, ``t`` (tie), ``x`` (both bad).

On every page ``s`` skips and ``u`` undoes the last label of this session (and says what it
took back); on *Label chunks* ``e`` marks the sentences that answer the query
(:mod:`denominator.ui.mark_evidence`); ``g`` shows or hides the rubric's guidelines (its grade definitions and worked
examples, as an admin last edited them: :func:`render_guidelines`). Skipped items come back at
the end of the queue. Where a person is lives in the
store (annotation.store.queue: leases and skips), not in the browser session: each tab (its id
in the address, ``?tab=``) leases the item it shows, so a reload shows the same item and the
same skipped list, and two tabs or servers of one person never show the same item; a tab that
is closed gives its item back at the next lease on its server (the lease records the tab's
connection, :func:`_tab_session`). With nothing to hand out while items sit on other screens,
the pane says how many and when they come back. The bar counts the person's batch
(:meth:`annotation.store.queue.Queue.batch_progress`): its total stays fixed while others close
open items. "Show my work"
lists the annotator's skipped items (to label now) and their own past labels, newest first, each
of which can be changed (a new row; the old one stays in the history).
Only the item's texts, the rubric and the annotator's own progress are shown:
no run, rank, score, system name, judge label or other person's label (the
queue never reads them: annotation.pooling). The pane is an ``st.fragment``,
so a keypress reruns only it. Session keys are namespaced ``label:`` (chunk
page) and ``label:trace:`` / ``label:pair:``; the store is opened per script
run and closed at its end.
"""

from __future__ import annotations

import os
import re
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypedDict

import streamlit as st
from streamlit.runtime import Runtime
from streamlit.runtime.scriptrunner import get_script_run_ctx

from annotation.access.identity import current, db_path, existing_db
from annotation.commands_text import guidelines_text
from annotation.render import md
from annotation.rubrics import FAITHFULNESS, PREFERENCE, RELEVANCE, Rubric
from annotation.store import Store, StoreBusy, StoreError, borrowed
from annotation.store.queue import BatchProgress, TabSession
from annotation.views import item_summary, item_view, my_work, waiting_words
from denominator.ui.mark_evidence import render_mark_button, render_marker

KEY = "label:"
# this app process's id in the leases' ``session`` (annotation.store.queue.TabSession): a lease
# taken here by a tab whose connection has closed is given back at the next lease on this server
SERVER = secrets.token_hex(8)
HOLDER = "label:tab"  # this tab's id in the store's leases, kept in its address as ?tab=
_HOLDER_SHAPE = re.compile(r"[A-Za-z0-9_-]{8,32}")
TAKEN = (
    "This item is on another of your tabs now (this tab was idle, or it was labelled there): "
    "nothing was saved here; here is your next item."
)
# a key press after the tab's lease lapsed, on an item others were handed meanwhile (the handout's
# labels reached) or that left the person's queue
CLOSED = (
    "This tab was idle past its lease, and meanwhile this item went to the other people it needed "
    "(or left your queue): nothing was saved here; here is your next item."
)
# a key press that met a long write (an import): said in the page's words, the item stays on screen
BUSY_LABEL = "The store is busy (an import is running); your label was not saved, press the key again."
BUSY_UNDO = "The store is busy (an import is running); nothing was undone, press u again."


@dataclass(frozen=True)
class LabelPage:
    kind: str
    title: str
    rubric: Rubric
    keys: dict[int, str]  # value -> shortcut key

    @property
    def prefix(self) -> str:
        return KEY if self.kind == "chunk" else f"{KEY}{self.kind}:"


CHUNKS = LabelPage("chunk", "Label chunks", RELEVANCE, {0: "0", 1: "1", 2: "2", 3: "3"})
TRACES = LabelPage("trace", "Label traces", FAITHFULNESS, {0: "0", 1: "1", 2: "2"})
PAIRS = LabelPage("pair", "Compare answers", PREFERENCE, {0: "a", 1: "b", 2: "t", 3: "x"})


def render_label_chunks_page() -> None:
    _render_page(CHUNKS)


def render_label_traces_page() -> None:
    _render_page(TRACES)


def render_compare_page() -> None:
    _render_page(PAIRS)


def _db_path() -> str:
    return db_path()


def _render_page(page: LabelPage) -> None:
    st.title(page.title)
    identity = current()
    if identity is None:
        st.error("Sign in with your access token first.")
        return
    if identity.mode == "token":  # the name comes with the token, not from a text box
        st.session_state[f"{KEY}annotator"] = annotator = identity.name
    else:
        # no default identity: two people who both skip the name would label as one
        annotator = st.sidebar.text_input(
            "annotator", value=os.environ.get("DENOMINATOR_ANNOTATOR", ""), key=f"{KEY}annotator"
        ).strip()
    if not annotator:
        st.info("Type your name in the sidebar to start.")
        return
    if existing_db() is None:
        return
    keys = ", ".join(
        f"{key} {page.rubric.wording(value).partition(':')[0]}" for value, key in page.keys.items()
    )
    st.caption(f"{page.rubric.question} Keys: {keys}; s skip, u undo, g guidelines.")
    _show_holder()
    render_label_pane(page, annotator)


def _holder() -> str:
    """This tab's id for its leases (annotation.store.queue): kept in the session and in the
    address (``?tab=``), so a reload of the tab keeps its item and a new tab gets another."""
    holder = st.session_state.get(HOLDER) or st.query_params.get("tab") or ""
    if not _HOLDER_SHAPE.fullmatch(holder):
        holder = secrets.token_urlsafe(12)
    st.session_state[HOLDER] = holder
    return holder


def _show_holder() -> None:
    """Keep the tab's id in its address (a full run; a fragment's rerun cannot change it)."""
    holder = _holder()
    if st.query_params.get("tab") != holder:
        st.query_params["tab"] = holder


def _tab_session() -> TabSession | None:
    """Where this tab runs, for its lease: this server and the tab's connection (Streamlit's
    session id), with the runtime's word on whether a connection is still open. Streamlit has no
    hook that runs when a tab closes; it drops the tab's connection from its active sessions the
    moment the browser closes the websocket, which is what the next lease reads. None outside a
    server (nothing is given back early then: leases lapse as before)."""
    ctx = get_script_run_ctx(suppress_warning=True)
    if ctx is None or not Runtime.exists():
        return None
    runtime = Runtime.instance()
    return TabSession(SERVER, ctx.session_id, lambda session: bool(runtime.is_active_session(session)))


def _who() -> str:
    return (st.session_state.get(f"{KEY}annotator") or "").strip()


def _key(page: LabelPage, name: str) -> str:
    """Session state per page and per annotator: changing the name in the
    sidebar starts a fresh queue, history and undo stack."""
    return f"{page.prefix}{_who()}:{name}"


def _state(page: LabelPage, name: str, default: Any) -> Any:
    return st.session_state.setdefault(_key(page, name), default)


def _set(page: LabelPage, name: str, value: Any) -> None:
    st.session_state[_key(page, name)] = value


def _get(page: LabelPage, name: str) -> Any:
    return st.session_state.get(_key(page, name))


def _grade(page: LabelPage, annotator: str, item: dict[str, Any], value: int) -> None:
    if annotator != _who() or item["item_id"] != _get(page, "current"):
        return  # a second key before the rerun, or a stale screen: the item on screen was already graded
    started = _get(page, "shown_at")
    seconds = round(time.monotonic() - started, 3) if started else None
    note = (st.session_state.get(_note_key(page)) or "").strip() or None
    try:
        with borrowed(_db_path()) as store:
            identity = current(store)  # a token revoked since the page was drawn writes nothing
            if identity is None or (identity.mode == "token" and identity.name != annotator):
                _set(
                    page,
                    "message",
                    "Your access is no longer valid (revoked, or your sign-in ended): nothing was saved. Sign in again.",
                )
                return
            annotator_id = store.annotator_id(annotator)
            with store.write():  # one transaction: the check, the label and the lease's end
                refused = store.label_refusal(annotator_id, page.kind, _holder(), item["item_id"])
                if refused is not None:
                    _set(page, "message", CLOSED if refused == "closed" else TAKEN)
                    _set(page, "shown_at", None)
                    _set(page, "current", None)
                    return
                store.add_label(
                    item["item_id"],
                    annotator,
                    value,
                    page.rubric.name,
                    note=note,
                    seconds=seconds,
                    shown=item.get("shown"),
                    annotator_id=annotator_id,
                    item_found=True,  # the refusal's reads, in this write, found it
                )
                # the lease's end and the next lease's reads in one round trip; no write of its own at the next draw
                leased = _lease_next(store, page, annotator_id, end=True)
    except StoreBusy:  # waited the bounded time: nothing stored, the same item stays on screen
        _set(page, "message", BUSY_LABEL)
        return
    except StoreError as exc:  # a callback's exception would show a traceback with server paths
        _set(page, "message", f"Your label was not saved: {exc}")
        return
    _state(page, "history", []).append(item["item_id"])
    _set(page, "shown_at", None)
    _set(page, "current", None)
    _set(page, "pressed", Pressed(time.monotonic(), annotator, annotator_id, leased, checked=True))


def _skip(page: LabelPage, annotator: str, item_id: int) -> None:
    if item_id != _get(page, "current") or annotator != _who():
        return
    try:
        with borrowed(_db_path()) as store:  # the skipped list lives in the store: a reload keeps it
            annotator_id = store.annotator_id(annotator)
            with store.write():  # the skip and the next item's lease, at once
                store.skip_item(annotator_id, page.kind, _holder(), item_id)
                leased = _lease_next(store, page, annotator_id)
    except StoreBusy:
        _set(page, "message", "The store is busy (an import is running); nothing was skipped, press s again.")
        return
    except StoreError as exc:
        _set(page, "message", f"Nothing was skipped: {exc}")
        return
    _set(page, "shown_at", None)
    _set(page, "current", None)
    _set(page, "pressed", Pressed(time.monotonic(), annotator, annotator_id, leased, checked=False))


def _lease_next(store: Store, page: LabelPage, annotator_id: int, end: bool = False) -> dict[str, Any] | None:
    """Lease the tab's next item inside the write that ended its lease (a label or a skip; ``end``:
    end it here, with the lease's reads), so the pane's next draw finds it leased and only reads
    (:meth:`Queue.lease_item`); the lease."""
    leased = store.lease_item(annotator_id, page.kind, _holder(), ended=True, end=end, tab=_tab_session())
    if leased and leased["from_skips"]:
        _set(page, "message", f"Back to an item you skipped ({leased['skips_left']} more after it).")
    return leased


@dataclass(frozen=True)
class Pressed:
    """What a key press's callback (a label, a skip) found, for the pane it reruns a moment later
    in the same script run, so the redraw does not read it again: when, who (their id), the
    tab's next item as the press's write leased it (committed), and whether the sign-in was
    checked against the store then."""

    at: float  # time.monotonic() when the press's write committed
    annotator: str
    annotator_id: int
    leased: dict[str, Any] | None
    checked: bool


PRESSED_FRESH_S = 2.0  # a press older than this is not the one whose rerun draws the pane


def _pressed(page: LabelPage, annotator: str) -> Pressed | None:
    """The press this pane's rerun follows (taken: it serves one redraw), when fresh and the
    same person's; else None and the pane reads everything itself."""
    pressed = st.session_state.pop(_key(page, "pressed"), None)
    if (
        isinstance(pressed, Pressed)
        and pressed.annotator == annotator
        and 0 <= time.monotonic() - pressed.at < PRESSED_FRESH_S
    ):
        return pressed
    return None


def _note_key(page: LabelPage) -> str:
    """The note box's key: one for every item, never the item's id (ids follow import order, and
    a widget's key is in the page's HTML, where it would hint at the system that wrote the answer).
    The box is emptied when the next item comes on screen. A key per item would give the same
    empty box, but the browser builds a new box for a new key at every press: 6 ms of the 48 ms
    from a key press to the next trace on screen (``bench/browser.py``, #42)."""
    return f"{page.prefix}note"


def _grade_name(page: LabelPage, value: int) -> str:
    """``2 · Relevant``: a grade as the page's buttons say it."""
    return f"{page.keys[value]} · {page.rubric.wording(value).partition(':')[0]}"


def _revisit(page: LabelPage, annotator: str, item_id: int, value: int | None) -> None:
    """Put an item from "my work" on screen: a skipped one to label now, or a past label to change
    (``value``: the label it has)."""
    if annotator != _who():
        return
    try:
        with borrowed(_db_path()) as store:
            store.hold_item(
                store.annotator_id(annotator),
                page.kind,
                _holder(),
                item_id,
                revisit=value is not None,
                tab=_tab_session(),
            )
    except StoreError as exc:
        _set(page, "message", f"That item could not be put on screen: {exc}")
        return
    _set(page, "current", item_id)
    _set(page, "shown_at", None)
    _set(
        page,
        "message",
        "An item you skipped: label it now (s skips it again)."
        if value is None
        else f"Your label on this item is {_grade_name(page, value)}: press the new grade to change it "
        "(a new label; the old one stays in the history).",
    )


def _undo(page: LabelPage, annotator: str) -> None:
    history = _state(page, "history", [])
    if not history:
        _set(page, "message", "Nothing to undo in this session.")
        return
    if annotator != _who():
        return
    item_id = history[-1]
    try:
        with borrowed(_db_path()) as store:
            identity = current(store)  # a token revoked since the page was drawn changes nothing
            if identity is None or (identity.mode == "token" and identity.name != annotator):
                _set(
                    page,
                    "message",
                    "Your access is no longer valid (revoked, or your sign-in ended): nothing was undone. Sign in again.",
                )
                return
            taken_back = store.current_value(item_id, store.annotator_id(annotator))
            summary = item_summary(item_view(store, item_id, annotator))
            with store.write():  # the label taken back and the item on this tab's screen, at once
                store.undo(item_id, annotator)
                store.hold_item(
                    store.annotator_id(annotator),
                    page.kind,
                    _holder(),
                    item_id,
                    revisit=False,
                    tab=_tab_session(),
                )
            history.pop()  # only once undone: a busy store keeps it to undo at the next press
    except StoreBusy:
        _set(page, "message", BUSY_UNDO)
        return
    except StoreError as exc:
        _set(page, "message", str(exc))
        return
    took = _grade_name(page, taken_back[0]) if taken_back and taken_back[0] is not None else "label"
    _set(page, "message", f"Took back your {took} on {summary}: it is on screen again.")
    _set(page, "current", item_id)  # the undone item comes back at once
    _set(page, "shown_at", None)


class _ButtonOptions(TypedDict):
    """What two buttons share (``st.button``'s keywords)."""

    key: str
    shortcut: str
    on_click: Callable[[LabelPage, str], None]
    args: tuple[LabelPage, str]


@st.fragment
def render_label_pane(page: LabelPage, annotator: str) -> None:
    """The labelling pane: reruns alone on each keypress."""
    pressed = _pressed(page, annotator)  # a label or skip just written: its check and lease hold
    try:
        with borrowed(_db_path()) as store:
            if pressed is None or not pressed.checked:
                identity = current(store)  # a key press reruns only this pane: check the token here too
                if identity is None or (identity.mode == "token" and identity.name != annotator):
                    st.error(
                        "Your access is no longer valid (revoked, or your sign-in ended). Sign in again."
                    )
                    return
            annotator_id = store.annotator_id(annotator) if pressed is None else pressed.annotator_id
            leased = _tab_lease(store, page, annotator_id, pressed)
            item = item_view(store, leased["item_id"], annotator) if leased else None
            if (item["item_id"] if item else None) != _get(page, "current"):
                _set(page, "shown_at", None)
            _set(page, "current", item["item_id"] if item else None)
            # with an item to show, the progress is read once it is on screen (below)
            counted = (
                store.batch_progress(annotator_id, page.kind) if item is None else BatchProgress(0, 0, 0, 0)
            )
            total = counted.total
            handout = store.handout() if item is None and total == 0 else None  # why the queue is empty
            # why a queue with items left hands nothing out now (other screens hold them), and when
            waits = (
                waiting_words(store.waiting(annotator_id, page.kind, _holder()))
                if item is None and total
                else ""
            )
    except StoreError as exc:
        st.error(md(exc))
        return
    progress = st.empty()  # the bar's place, above the item
    if item is None:
        _show_progress(progress, counted, annotator)
    message = st.session_state.pop(_key(page, "message"), None)
    if message:
        st.info(md(message))
    undo: _ButtonOptions = {
        "key": f"{page.prefix}undo",
        "shortcut": "u",
        "on_click": _undo,
        "args": (page, annotator),
    }
    if item is None:
        _render_nothing_here(page, annotator, counted, handout, waits, undo)
        return
    if _get(page, "shown_at") is None:
        _set(page, "shown_at", time.monotonic())
        _set(page, "screen", _state(page, "screen", 0) + 1)  # a new item on screen
        if page.kind == "trace":  # the one page with a note box: emptied before it is drawn
            st.session_state[_note_key(page)] = ""
    with st.container(key=f"item-{page.kind}"):  # the item's texts (class st-key-item-<kind>)
        _render_item(page, item)
    try:  # after the item: a key press waits for the next item, not for the count
        with borrowed(_db_path()) as store:
            counted = store.batch_progress(annotator_id, page.kind)
    except StoreError as exc:
        st.error(md(exc))
        return
    _show_progress(progress, counted, annotator)
    columns = st.columns(len(page.rubric.scale))
    for column, (value, wording) in zip(columns, page.rubric.scale.items()):
        name, _, meaning = wording.partition(": ")
        column.button(
            f"{page.keys[value]} · {name}",
            key=f"{page.prefix}grade{value}",
            shortcut=page.keys[value],
            on_click=_grade,
            args=(page, annotator, item, value),
            width="stretch",
        )
        if meaning:
            column.caption(meaning)
    left, right, guide, *mark = st.columns(4 if page.kind == "chunk" else 3)
    if mark:  # the answer marked inside the chunk (#44): a span of its document
        render_mark_button(mark[0], item["item_id"])
    left.button(
        "Skip (s)",
        key=f"{page.prefix}skip",
        shortcut="s",
        on_click=_skip,
        args=(page, annotator, item["item_id"]),
    )
    right.button("Undo the last label (u)", **undo)
    shown = bool(st.session_state.get(f"{page.prefix}guidelines"))
    guide.button(
        "Hide the guidelines (g)" if shown else "Guidelines (g)",
        key=f"{page.prefix}guide",
        shortcut=GUIDELINES_KEY,
        on_click=_toggle_guidelines,
        args=(page,),
    )
    if mark:
        render_marker(item, annotator)
    if shown:
        render_guidelines(page)
    render_my_work(page, annotator)


GUIDELINES_KEY = "g"  # free on every page: grades 0-3, a b t x, s skip, u undo


def _toggle_guidelines(page: LabelPage) -> None:
    key = f"{page.prefix}guidelines"
    st.session_state[key] = not st.session_state.get(key)


@st.cache_data(max_entries=64, show_spinner=False)
def _guidelines_at(db: str, rubric: str, version: int) -> tuple[str, str]:
    """(heading, text) of one version of a rubric's guidelines: a version never changes once
    written (append-only), so a key press reads the text once per version and process."""
    with borrowed(db) as store:
        guidelines = store.guidelines(rubric, version)
    return guidelines_text(guidelines), guidelines.text


def render_guidelines(page: LabelPage) -> None:
    """The rubric's guidelines in force, shown while ``g`` has them on: one read of the version in
    force per draw, the text from the cache by version (no read at all while they are hidden)."""
    try:
        with borrowed(_db_path()) as store:
            version = store.guidelines_version(page.rubric.name)
        heading, text = _guidelines_at(_db_path(), page.rubric.name, version)
    except StoreError as exc:
        st.error(md(exc))
        return
    with st.container(key=f"guidelines-{page.kind}"):  # class st-key-guidelines-<kind>
        st.markdown(f"**Guidelines**: {md(heading)}")
        st.code(text, language=None, wrap_lines=True)  # an admin's text, shown as plain text


def _render_nothing_here(
    page: LabelPage,
    annotator: str,
    counted: BatchProgress,
    handout: tuple[str, int] | None,
    waits: str,
    undo: _ButtonOptions,
) -> None:
    """No item for this tab: why (nothing in the queue, as the handout says; items on other
    screens, and when they come back; or all done), then the person's work."""
    done, total = counted.done, counted.total
    if handout is not None:  # total == 0: the handout is read then, and only then
        assign = f"`python -m annotation pool --depth D --annotators {md(annotator)}`"
        mode, needed = handout  # read in the same store visit whenever the queue is empty
        if mode == "assigned":
            st.info(
                f"Nothing is assigned to you, {md(annotator)}: this project hands items out only as "
                f"assigned. An admin assigns work with {assign}."
            )
        else:
            st.info(
                f"Nothing to label here for {md(annotator)}: no item of this page is in your queue and "
                f"none needs another person's label now (an open item closes at {needed} people's "
                f"labels). An admin gives you work with {assign} (or imports more)."
            )
    elif waits:
        st.info(f"Nothing to hand you right now ({done} of {total} done): {md(waits)}")
        st.button("Look again", key=f"{page.prefix}again")  # a rerun of the pane
        st.button("Undo the last label (u)", **undo)
    else:
        st.success(f"Nothing left to label: {done} of {total} done.")
        st.button("Undo the last label (u)", **undo)
    render_my_work(page, annotator)


def _tab_lease(
    store: Store, page: LabelPage, annotator_id: int, pressed: Pressed | None
) -> dict[str, Any] | None:
    """The item this tab leases: it stays on screen until it is graded or skipped, across reruns,
    reloads and servers; no other tab of this person is shown it (annotation.store.queue). After a
    press, the lease its write took (the press said so if it came from the skips)."""
    if pressed is not None:
        return pressed.leased
    leased = store.lease_item(annotator_id, page.kind, _holder(), tab=_tab_session())
    if leased and leased["from_skips"]:
        _set(page, "message", f"Back to an item you skipped ({leased['skips_left']} more after it).")
    return leased


def _show_progress(slot: Any, counted: BatchProgress, annotator: str) -> None:
    """The bar in its place: ``done / total in this batch labelled by NAME``; with items other
    people closed meanwhile, how many of the done were labelled and how many closed."""
    done, total = counted.done, counted.total
    text = f"{done} / {total} in this batch labelled by {md(annotator)}"
    if counted.closed:
        text = (
            f"{done} / {total} in this batch done: {counted.labelled} labelled by {md(annotator)}, "
            f"{counted.closed} closed by other people's labels"
        )
    slot.progress(done / total if total else 1.0, text=text)


def render_my_work(page: LabelPage, annotator: str) -> None:
    """The annotator's skipped items and their own past labels, only when asked for (the list is
    not drawn on every key press). Widget keys hold positions, never item ids (ids follow import
    order and would hint at the system)."""
    if not st.toggle("Show my work: skipped items and past labels", key=f"{page.prefix}mywork"):
        return
    try:
        with borrowed(_db_path()) as store:
            skipped = store.skipped_items(store.annotator_id(annotator), page.kind)
            work = my_work(store, annotator, page.kind, skipped)
    except StoreError as exc:
        st.error(md(exc))
        return
    st.markdown(f"**Skipped, {len(work['skipped'])} to label**")
    for position, entry in enumerate(work["skipped"]):
        text, button = st.columns([6, 1], vertical_alignment="center")
        text.markdown(md(entry["summary"]))
        button.button(
            "Label now",
            key=f"{page.prefix}now:{position}",
            on_click=_revisit,
            args=(page, annotator, entry["item_id"], None),
        )
    st.markdown(f"**Your labels, newest first ({len(work['past'])} shown)**")
    if not work["past"]:
        st.caption("None yet.")
    for position, entry in enumerate(work["past"]):
        when, text, grade, button = st.columns([2, 6, 2, 1], vertical_alignment="center")
        when.caption(md(entry["when"]))
        text.markdown(md(entry["summary"]))
        grade.markdown(md(_grade_name(page, entry["value"])))
        button.button(
            "Change",
            key=f"{page.prefix}change:{position}",
            on_click=_revisit,
            args=(page, annotator, entry["item_id"], entry["value"]),
        )


def _text(label: str, text: str) -> None:
    """A text from the data, shown as plain text (never as HTML or markdown; its line breaks and
    spaces kept, long words wrapped). ``st.text``, not a code block: the browser draws a code block
    with its highlighter and copy button, a fifth of a key press's time to the next item (#42)."""
    st.markdown(f"**{label}**")
    st.text(text)


def _render_item(page: LabelPage, item: dict[str, Any]) -> None:
    if page.kind == "chunk":
        _text("Query", item["query"])
        _text("Chunk", item["chunk"])
    elif page.kind == "trace":
        _text("Question", item["question"])
        for number, context in enumerate(item["contexts"], start=1):
            _text(f"Context {number} of {len(item['contexts'])}", context)
        _text("Answer", item["answer"])
        st.text_input("note (optional)", key=_note_key(page))
    else:
        _text("Question", item["question"])
        first, second = st.columns(2)
        with first:
            _text("Answer A", item["answers"][0])
        with second:
            _text("Answer B", item["answers"][1])
