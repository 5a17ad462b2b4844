"""The labelling pages. Keyboard first, blind to every machine label.

- *Label chunks*: a query and one chunk; relevance 0-3, keys ``0``-``3``.
- *Label traces*: the question, the contexts the system was shown, its
  answer; faithfulness 0-2, keys ``0``-``2``, an optional note.
- *Compare answers*: two answers to one question in a random order (recorded
  with the label); keys ``a``, ``b``, ``t`` (tie), ``x`` (both bad).

On every page ``s`` skips and ``u`` undoes the last label of this session (and says what it
took back). Skipped items come back at the end of the queue in the same session. "Show my work"
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
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import streamlit as st

from annotation import access
from annotation.baseline import add_baseline, baseline_text
from annotation.beir import unpack_beir_zip
from annotation.exchange import ImportSources, import_files
from annotation.exports import FORMATS as EXPORT_FORMATS
from annotation.exports.download import export_download
from annotation.formats import FormatError
from annotation.pooling import (
    KINDS,
    is_open,
    item_summary,
    item_view,
    my_work,
    next_item,
    pool,
    pool_report,
    progress,
    sample_unjudged,
)
from annotation.render import md
from annotation.rubrics import FAITHFULNESS, PREFERENCE, RELEVANCE, Rubric
from annotation.store import AGGREGATES, Store, StoreError

KEY = "label:"


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
    return access.db_path()


def _render_page(page: LabelPage) -> None:
    st.title(page.title)
    identity = access.current()
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
    if access.existing_db() is None:
        return
    keys = ", ".join(
        f"{key} {page.rubric.wording(value).partition(':')[0]}" for value, key in page.keys.items()
    )
    st.caption(f"{page.rubric.question} Keys: {keys}; s skip, u undo.")
    render_label_pane(page, annotator)


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
    with Store(_db_path()) as store:
        identity = access.current(store)  # a token revoked since the page was drawn writes nothing
        if identity is None or (identity.mode == "token" and identity.name != annotator):
            _set(page, "message", "Your access token is no longer valid: nothing was saved. Sign in again.")
            return
        store.add_label(
            item["item_id"],
            annotator,
            value,
            page.rubric.name,
            note=note,
            seconds=seconds,
            shown=item.get("shown"),
        )
    _state(page, "history", []).append(item["item_id"])
    _set(page, "shown_at", None)
    _set(page, "current", None)


def _skip(page: LabelPage, item_id: int) -> None:
    if item_id != _get(page, "current"):
        return
    _state(page, "skipped", []).append(item_id)
    _set(page, "shown_at", None)
    _set(page, "current", None)


def _note_key(page: LabelPage) -> str:
    """The note box's key: the count of items shown in this session, never the item's id (ids
    follow import order, and a widget's key is in the page's HTML, where it would hint at the
    system that wrote the answer)."""
    return f"{page.prefix}note:{_state(page, 'screen', 0)}"


def _grade_name(page: LabelPage, value: int) -> str:
    """``2 · Relevant``: a grade as the page's buttons say it."""
    return f"{page.keys[value]} · {page.rubric.wording(value).partition(':')[0]}"


def _revisit(page: LabelPage, annotator: str, item_id: int, value: int | None) -> None:
    """Put an item from "my work" on screen: a skipped one to label now, or a past label to change
    (``value``: the label it has)."""
    if annotator != _who():
        return
    skipped = _state(page, "skipped", [])
    if item_id in skipped:
        skipped.remove(item_id)
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
        with Store(_db_path()) as store:
            identity = access.current(store)  # a token revoked since the page was drawn changes nothing
            if identity is None or (identity.mode == "token" and identity.name != annotator):
                _set(
                    page,
                    "message",
                    "Your access token is no longer valid: nothing was undone. Sign in again.",
                )
                return
            current = store.current_value(item_id, store.annotator_id(annotator))
            summary = item_summary(item_view(store, item_id, annotator))
            history.pop()
            store.undo(item_id, annotator)
    except StoreError as exc:
        _set(page, "message", str(exc))
        return
    took = _grade_name(page, current[0]) if current and current[0] is not None else "label"
    _set(page, "message", f"Took back your {took} on {summary}: it is on screen again.")
    _set(page, "current", item_id)  # the undone item comes back at once
    _set(page, "shown_at", None)


@st.fragment
def render_label_pane(page: LabelPage, annotator: str) -> None:
    """The labelling pane: reruns alone on each keypress."""
    try:
        with Store(_db_path()) as store:
            identity = access.current(store)  # a key press reruns only this pane: check the token here too
            if identity is None or (identity.mode == "token" and identity.name != annotator):
                st.error("Your access token is no longer valid. Sign in again.")
                return
            store.annotator_id(annotator)
            done, total = progress(store, annotator, page.kind)
            # the item on screen stays until it is graded or skipped (stable across reruns)
            current = _get(page, "current")
            item = item_view(store, current, annotator) if current is not None else None
            if item is None:
                skipped = _state(page, "skipped", [])
                item = next_item(store, annotator, skipped=skipped, kind=page.kind)
                while item is None and skipped:  # the queue is done: the skipped items come back, in order
                    back = skipped.pop(0)
                    if is_open(store, back, annotator):
                        item = item_view(store, back, annotator)
                        _set(page, "message", f"Back to an item you skipped ({len(skipped)} more after it).")
                _set(page, "current", item["item_id"] if item else None)
    except StoreError as exc:
        st.error(md(exc))
        return
    st.progress(
        done / total if total else 1.0, text=f"{done} / {total} in this batch labelled by {md(annotator)}"
    )
    message = st.session_state.pop(_key(page, "message"), None)
    if message:
        st.info(md(message))
    undo = dict(key=f"{page.prefix}undo", shortcut="u", on_click=_undo, args=(page, annotator))
    if item is None:
        st.success(f"Nothing left to label: {done} of {total} done.")
        st.button("Undo the last label (u)", **undo)
        render_my_work(page, annotator)
        return
    if _get(page, "shown_at") is None:
        _set(page, "shown_at", time.monotonic())
        _set(page, "screen", _state(page, "screen", 0) + 1)  # a new item on screen: a fresh note box
    with st.container(key=f"item-{page.kind}"):  # the item's texts (class st-key-item-<kind>)
        _render_item(page, item)
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
    left, right = st.columns(2)
    left.button(
        "Skip (s)", key=f"{page.prefix}skip", shortcut="s", on_click=_skip, args=(page, item["item_id"])
    )
    right.button("Undo the last label (u)", **undo)
    render_my_work(page, annotator)


def render_my_work(page: LabelPage, annotator: str) -> None:
    """The annotator's skipped items and their own past labels, only when asked for (the list is
    not drawn on every key press). Widget keys hold positions, never item ids (ids follow import
    order and would hint at the system)."""
    if not st.toggle("Show my work: skipped items and past labels", key=f"{page.prefix}mywork"):
        return
    try:
        with Store(_db_path()) as store:
            work = my_work(store, annotator, page.kind, _state(page, "skipped", []))
    except StoreError as exc:
        st.error(md(exc))
        return
    st.markdown(f"**Skipped in this session, {len(work['skipped'])} to label**")
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
    """A text from the data, shown as plain text (never as HTML or markdown)."""
    st.markdown(f"**{label}**")
    st.code(text, language=None, wrap_lines=True)


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


# ---------------------------------------------------------------- data (admin)

UPLOADS = {
    "corpus": ("Corpus: chunks, JSONL {id, text, ...}", ["jsonl"]),
    "queries": ("Queries: JSONL {id, text} or TSV id<TAB>text", ["jsonl", "tsv", "txt"]),
    "run": ("Run: TREC run or .jsonl rankings", None),
    "traces": ("Traces: JSONL {id, query_id, system, question, contexts, answer}", ["jsonl"]),
    "labels": ("Labels: TREC qrels or golden.yaml (grades 0-3)", None),
    "beir": ("A BEIR folder, zipped: corpus.jsonl, queries.jsonl, qrels/*.tsv", ["zip"]),
}


def import_uploads(
    uploads: dict[str, tuple[str, bytes]], name: str = "", stage: str = "fetch", annotator: str = ""
) -> list[str]:
    """Uploaded files (field -> (file name, bytes)) into the store in one
    transaction, through the same workflow as ``python -m annotation import``.
    Each is written to a temporary file named like the upload (the readers
    choose the format by its extension); messages name the upload."""
    with tempfile.TemporaryDirectory(prefix="denominator-") as tmp:
        paths: dict[str, Path] = {}
        for field, (filename, data) in uploads.items():
            folder = Path(tmp) / field  # one folder each: two uploads may share a name
            folder.mkdir()
            base = Path(filename).name
            paths[field] = folder / (base if base not in ("", ".", "..") else "upload")
            try:
                paths[field].write_bytes(data)
            except OSError as exc:
                raise FormatError(filename, None, None, f"cannot be read ({exc.strerror})") from None
            if field == "beir":  # the zip's folder is what the BEIR reader reads
                paths[field] = unpack_beir_zip(paths[field], folder / "unpacked", name=filename)

        def named(text: str) -> str:
            for field, path in sorted(paths.items(), key=lambda kv: -len(str(kv[1]))):
                text = text.replace(str(path), uploads[field][0])
            return text

        sources = ImportSources(**paths, name=name, stage=stage, annotator=annotator)
        try:
            with Store(_db_path()) as store:
                return [named(line) for line in import_files(store, sources)]
        except FormatError as exc:
            raise type(exc)(named(exc.path), exc.line, exc.field, named(exc.message)) from None
        except StoreError as exc:
            raise type(exc)(named(str(exc))) from None


def render_data_page() -> None:
    """Counts, each annotator's progress, import, the pool and what each run found alone, export."""
    access.require_admin()
    st.title("Data")
    if access.existing_db() is None:
        return
    overview = st.container()  # drawn last, so its counts include what this run imported or pooled
    render_import_form()
    depth = render_pool_section()
    render_estimate_form(depth)
    with overview:
        people = render_overview()
    render_export([p["name"] for p in people])


def render_overview() -> list[dict[str, Any]]:
    """The store's counts and each annotator's progress, as they are now; the annotators."""
    try:
        with Store(_db_path()) as store:
            counts = store.counts()
            people = store.annotators()
            rows = []
            for person in people:
                row = {"annotator": md(person["name"]), "role": person["role"], "access": person["access"]}
                for kind in KINDS:
                    done, total = progress(store, person["name"], kind)
                    row[f"{kind} items"] = f"{done} / {total}"
                rows.append(row)
    except StoreError as exc:
        st.error(md(exc))
        return []
    st.caption(f"Database: {md(_db_path())}")
    st.subheader("What the store holds")
    st.table([{"table": table, "rows": n} for table, n in counts.items()])
    st.subheader("Progress per annotator (labelled / in their queue)")
    if rows:
        st.table(rows)
    else:
        st.info("No annotator yet.")
    return people


def render_pool_section() -> int:
    """What each run's pool found alone, a baseline run, building a pool; the pool depth chosen."""
    st.subheader("The pool: what each run found")
    depth = int(st.number_input("pool depth", min_value=1, max_value=10_000, value=10, key="data:depth"))
    try:
        with Store(_db_path()) as store:
            report = pool_report(store, depth)
    except StoreError as exc:
        st.error(md(exc))
        return depth
    if report:
        st.table(
            [
                {
                    "run": md(r["run"]),
                    f"(query, chunk) pairs in its top {depth}": r["pooled"],
                    "judged relevant it found": f"{r['relevant_found']} of {r['relevant_judged']}",
                    "found by this run only": r["found_only_here"],
                }
                for r in report
            ]
        )
        lonely = [
            r for r in report if r["relevant_judged"] and r["found_only_here"] > r["relevant_judged"] / 2
        ]
        for r in lonely:
            st.warning(
                f"{md(r['run'])} alone found {r['found_only_here']} of the {r['relevant_judged']} judged-relevant chunks: "
                "the labels lean toward it; pool a second, different system (a BM25 baseline below)."
            )
    else:
        st.info("No runs yet: import one above (Import files: a run and its name), or add a BM25 baseline.")
    if st.button("Add a BM25 baseline run over the stored corpus", key="data:baseline"):
        try:
            with Store(_db_path()) as store:
                st.success(md(baseline_text(add_baseline(store))))
        except StoreError as exc:
            st.error(md(exc))
    with st.form("data:pool"):
        st.markdown("**Add a pool to the labelling queue**")
        annotators = st.text_input(
            "annotators (comma-separated; empty: everyone labels everything)", key="data:who"
        )
        overlap = st.number_input(
            "share given to two people", min_value=0.0, max_value=1.0, value=0.2, key="data:overlap"
        )
        if st.form_submit_button("Build the pool"):
            names = [a.strip() for a in annotators.split(",") if a.strip()]
            try:
                with Store(_db_path()) as store:
                    result = pool(store, depth, annotators=names, overlap=overlap if len(names) > 1 else 0.0)
                st.success(
                    f"{result['items_added']} new items from {result['pooled']} pooled pairs "
                    f"({result['already_judged']} already judged); {result['assignments']} assignments."
                )
                for warning in result["warnings"]:
                    st.warning(md(warning))
            except StoreError as exc:
                st.error(md(exc))
    return depth


def render_estimate_form(depth: int) -> None:
    """A random sample of the unjudged candidates beyond the pool, mixed blind into the queues,
    so that what the labels missed can be estimated (``pool --estimate`` of the command line)."""
    with st.form("data:estimate"):
        st.markdown(
            f"**Sample what the pool of depth {depth} did not judge** (for an estimate of the relevant "
            "chunks the labels missed, on the Metrics page)"
        )
        left, middle, right = st.columns(3)
        n = int(
            left.number_input("sampled per query", min_value=1, max_value=10_000, value=20, key="data:est-n")
        )
        bounds = middle.text_input("strata: bounds of best rank", value="50,100,1000", key="data:est-strata")
        corpus = right.checkbox("and a stratum of every other chunk", key="data:est-corpus")
        who = st.text_input("annotators (comma-separated; empty: everyone)", key="data:est-who")
        if not st.form_submit_button("Sample"):
            return
    try:
        strata = [int(b) for b in bounds.split(",") if b.strip()]
    except ValueError:
        st.error(f"Strata {md(repr(bounds))}: expected comma-separated ranks, e.g. 50,100,1000.")
        return
    names = [a.strip() for a in who.split(",") if a.strip()]
    try:
        with Store(_db_path()) as store:
            sample = sample_unjudged(store, depth, n, strata=strata, corpus=corpus, annotators=names)
    except StoreError as exc:
        st.error(md(exc))
        return
    if not sample["sampled"]:
        st.warning(f"No unjudged candidate beyond depth {depth}: nothing sampled.")
        return
    st.success(
        f"{sample['sampled']} unjudged candidates sampled over {sample['queries']} queries ("
        + ", ".join(
            f"{md(name)}: {k} of {sample['candidates'][name]}" for name, k in sorted(sample["strata"].items())
        )
        + "), mixed into the queues; export golden.yaml once they are labelled: it records the design."
    )


def render_import_form() -> None:
    st.subheader("Import files")
    with st.form("data:import", clear_on_submit=False):
        files = {
            field: st.file_uploader(label, type=types, key=f"data:up:{field}")
            for field, (label, types) in UPLOADS.items()
        }
        left, middle, right = st.columns(3)
        name = left.text_input("the run's name", key="data:run-name")
        stage = middle.selectbox("the run's stage", ["fetch", "keep"], key="data:stage")
        annotator = right.text_input("who made the labels", key="data:labels-by")
        submitted = st.form_submit_button("Import")
    st.caption(
        "Every file is read and checked before anything is written; then all of them land in one "
        "transaction, or none does. Importing the same file again changes nothing."
    )
    if not submitted:
        return
    uploads = {field: (f.name, f.getvalue()) for field, f in files.items() if f is not None}
    try:
        lines = import_uploads(uploads, name=name, stage=stage, annotator=annotator)
    except (FormatError, StoreError) as exc:
        st.error(f"Nothing was imported: {md(exc)}")
        return
    st.success("Imported:\n\n" + "\n\n".join(f"- {md(line)}" for line in lines))


def render_export(names: list[str]) -> None:
    st.subheader("Export labels")
    everyone = "everyone (one grade per item)"
    left, middle, right = st.columns(3)
    fmt = EXPORT_FORMATS[left.selectbox("format", list(EXPORT_FORMATS), key="data:export-format")]
    who = middle.selectbox("whose labels", [everyone, *names], key="data:export-who")
    aggregate = right.selectbox(
        "one grade from several people", list(AGGREGATES), key="data:export-aggregate"
    )
    threshold = 1
    if "threshold" in fmt.options:
        threshold = st.selectbox("relevant: grade at least", [1, 2, 3], key="data:export-threshold")
    st.caption(md(fmt.description) + (" (a .zip of the folder)" if fmt.writes == "folder" else ""))
    if st.button("Prepare the file", key="data:export"):
        try:
            with Store(_db_path()) as store:
                prepared = export_download(
                    store,
                    fmt.name,
                    annotator=None if who == everyone else who,
                    aggregate=aggregate,
                    threshold=threshold,
                )
        except (FormatError, StoreError) as exc:
            st.error(md(exc))
            return
        st.session_state["data:export-file"] = prepared
    prepared = st.session_state.get("data:export-file")
    if prepared:
        st.caption(md(prepared.summary))
        st.download_button(
            f"Download {prepared.filename}",
            data=prepared.data,
            file_name=prepared.filename,
            mime=prepared.mime,
            key="data:download",
        )
