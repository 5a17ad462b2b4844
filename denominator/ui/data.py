"""The Data page (admins): what the store holds and each annotator's progress, importing files
(and taking an import back), the pool, a sample of what the pool did not judge, and every export
format as a download.

Every action goes through the function the command line calls (``actions.import_``, ``pool``,
``sample``, ``baseline``, ``export_download``, ``Store.retire_import``); the counts
at the top are drawn last, so they include what this run just did. Every string from the data is
escaped (:func:`annotation.render.md`); messages name the page's boxes, never a command's flags.
"""

from __future__ import annotations

import tempfile
from argparse import ArgumentTypeError
from pathlib import Path

import streamlit as st

from annotation import actions
from annotation.access.identity import db_path, existing_db, require_admin
from annotation.commands_text import baseline_text, handout_text
from annotation.exchange import ImportSources, NothingToImport, WrongSlot
from annotation.exports import FORMATS as EXPORT_FORMATS
from annotation.exports.download import export_download
from annotation.formats.beir import unpack_beir_zip
from annotation.formats.textio import upload_file_name
from annotation.model import FormatError
from annotation.options import default, option
from annotation.pooling import KINDS
from annotation.render import md, md_list
from annotation.store import AGGREGATES, AnnotatorRow, StoreError, borrowed
from annotation.store.postgres import shown_url
from annotation.values import ranks
from annotation.views import pool_report, progress
from denominator.ui.imports import (
    PENDING_IMPORT,
    page_words,
    render_imports_section,
    render_wrong_slot,
    who_acts,
)

__all__ = ["render_data_page", "import_uploads", "UPLOADS"]


def _db_path() -> str:
    return db_path()


UPLOADS = {
    "corpus": ("Corpus: chunks, JSONL {id, text, ...}", ["jsonl"]),
    "queries": ("Queries: JSONL {id, text} or TSV id<TAB>text", ["jsonl", "tsv", "txt"]),
    "run": ("Run: TREC run or .jsonl rankings", None),
    "traces": ("Traces: JSONL {id, query_id, system, question, contexts, answer}", ["jsonl"]),
    "labels": ("Labels: TREC qrels or golden.yaml (grades 0-3)", None),
    "beir": ("A BEIR folder, zipped: corpus.jsonl, queries.jsonl, qrels/*.tsv", ["zip"]),
}


def import_uploads(
    uploads: dict[str, tuple[str, bytes]],
    name: str = "",
    stage: str = "fetch",
    annotator: str = "",
    who: str = "",
    confirmed: bool = False,
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
            paths[field] = folder / upload_file_name(filename)  # '..', a NUL, too long: refused
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

        sources = ImportSources(
            corpus=paths.get("corpus"),
            queries=paths.get("queries"),
            beir=paths.get("beir"),
            run=paths.get("run"),
            traces=paths.get("traces"),
            labels=paths.get("labels"),
            name=name,
            stage=stage,
            annotator=annotator,
            who=who,
            confirmed=confirmed,
        )
        try:
            with borrowed(_db_path()) as store:
                return [named(line) for line in actions.import_(store, sources)]
        except FormatError as exc:
            raise type(exc)(named(exc.path), exc.line, exc.field, named(exc.message)) from None
        except WrongSlot as exc:
            raise WrongSlot(named(exc.path), exc.slot, exc.looks_like, exc.findings) from None
        except NothingToImport as exc:
            raise NothingToImport(named(str(exc)), exc.field) from None
        except StoreError as exc:
            raise type(exc)(named(str(exc))) from None


def render_data_page() -> None:
    """Counts, each annotator's progress, import, the pool and what each run found alone, export."""
    identity = require_admin()
    st.title("Data")
    db = existing_db()
    if db is None:
        return
    overview = st.container()  # drawn last, so its counts include what this run imported or pooled
    render_import_form(who_acts(identity.name))
    render_imports_section(db, who_acts(identity.name))
    render_handout_form(who_acts(identity.name))
    depth = render_pool_section()
    render_estimate_form(depth)
    with overview:
        people = render_overview()
    render_export([p["name"] for p in people])


def render_overview() -> list[AnnotatorRow]:
    """The store's counts and each annotator's progress, as they are now; the annotators."""
    try:
        with borrowed(_db_path()) as store:
            counts = store.live_counts()
            retired = [row for row in store.imports() if row["state"] == "retired"]
            people = store.annotators()
            rows = []
            for person in people:
                row = {
                    "annotator": md(person["name"]),
                    "role": person["role"],
                    "access": person["access"],  # the token's state
                    "provider": person[
                        "provider"
                    ],  # sign-in through the team's provider (none, active, revoked)
                }
                for kind in KINDS:
                    done, total = progress(store, person["name"], kind)
                    row[f"{kind} items"] = f"{done} / {total}"
                rows.append(row)
    except StoreError as exc:
        st.error(md(exc))
        return []
    st.caption(f"Database: {md(shown_url(_db_path()))}")  # a URL without its credentials
    st.subheader("What the store holds")
    st.table([{"table": table, "rows": n} for table, n in counts.items()])
    if retired:
        st.caption(
            f"Not counted: the rows of {len(retired)} retired import{'s' if len(retired) != 1 else ''} "
            f"({md_list(row['id'] for row in retired)}; Imports, below)."
        )
    st.subheader("Progress per annotator (labelled / in their queue)")
    if rows:
        st.table(rows)
    else:
        st.info("No annotator yet.")
    return people


def render_handout_form(who: str) -> None:
    """How items are handed out (``python -m annotation handout``): said, and changed by a form."""
    st.subheader("Handing out items")
    try:
        with borrowed(_db_path()) as store:
            mode, labels = store.handout()
    except StoreError as exc:
        st.error(md(exc))
        return
    st.caption(md(handout_text(mode, labels)))
    modes, needed = option("handout_mode"), option("handout_labels")
    assert modes.choices is not None  # the handout's modes
    with st.form("data:handout"):
        chosen = st.radio("hand items out", modes.choices, index=modes.choices.index(mode), horizontal=True)
        count = st.number_input(
            "labels from this many different people close an open item",
            min_value=needed.minimum,
            max_value=needed.maximum,
            value=labels,
            key="data:handout-labels",
        )
        if st.form_submit_button("Save how items are handed out"):
            try:
                with borrowed(_db_path()) as store:
                    saved = actions.handout(store, mode=chosen, labels=int(count), who=who)
                st.success("Saved: " + md(handout_text(*saved)))
            except StoreError as exc:
                st.error(md(exc))


def render_pool_section() -> int:
    """What each run's pool found alone, a baseline run, building a pool; the pool depth chosen."""
    st.subheader("The pool: what each run found")
    pool_depth = option("pool_depth")
    depth = int(
        st.number_input(
            "pool depth",
            min_value=pool_depth.minimum,
            max_value=pool_depth.maximum,
            value=pool_depth.default,
            key="data:depth",
        )
    )
    try:
        with borrowed(_db_path()) as store:
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
            with borrowed(_db_path()) as store:
                st.success(md(baseline_text(actions.baseline(store))))
        except StoreError as exc:
            st.error(md(exc))
    with st.form("data:pool"):
        st.markdown("**Add a pool to the labelling queue**")
        annotators = st.text_input(
            "annotators (comma-separated; empty: the items are open to anyone, as handed out above)",
            key="data:who",
        )
        share = option("pool_overlap")
        overlap = st.number_input(
            "share given to two people (with two or more annotators)",
            min_value=share.minimum,
            max_value=share.maximum,
            value=share.default,
            key="data:overlap",
        )
        if st.form_submit_button("Build the pool"):
            names = [a.strip() for a in annotators.split(",") if a.strip()]
            try:
                with borrowed(_db_path()) as store:
                    result = actions.pool(
                        store, depth, annotators=names, overlap=overlap if len(names) > 1 else None
                    )["pool"]
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
        bounds = middle.text_input(
            "strata: bounds of best rank", value=default("estimate_strata"), key="data:est-strata"
        )
        corpus = right.checkbox("and a stratum of every other chunk", key="data:est-corpus")
        who = st.text_input("annotators (comma-separated; empty: everyone)", key="data:est-who")
        if not st.form_submit_button("Sample"):
            return
    try:
        strata = list(ranks(bounds))
    except ArgumentTypeError as exc:  # the command line's words for the same box
        st.error(f"Strata {md(str(exc))}.")
        return
    names = [a.strip() for a in who.split(",") if a.strip()]
    try:
        with borrowed(_db_path()) as store:
            sample = actions.sample(store, depth, n, strata=strata, corpus_stratum=corpus, annotators=names)
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


def render_import_form(who: str) -> None:
    """The import form; ``who`` is recorded as who ran the import."""
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
    if submitted:
        st.session_state.pop(PENDING_IMPORT, None)
        uploads = {field: (f.name, f.getvalue()) for field, f in files.items() if f is not None}
        options = {"name": name, "stage": stage, "annotator": annotator, "who": who}
        confirmed = False
    elif PENDING_IMPORT in st.session_state:  # refused for its shape: the page asks before importing it
        uploads, options, refused = st.session_state[PENDING_IMPORT]
        asking = st.empty()
        with asking.container():
            if not render_wrong_slot(refused):
                return
        asking.empty()  # answered: the question goes, what the import did takes its place
        confirmed = True
    else:
        return
    try:
        lines = import_uploads(uploads, **options, confirmed=confirmed)
    except WrongSlot as exc:
        st.session_state[PENDING_IMPORT] = (uploads, options, exc)
        render_wrong_slot(exc)
        return
    except (FormatError, StoreError) as exc:
        st.session_state.pop(PENDING_IMPORT, None)
        st.error(f"Nothing was imported: {md(page_words(exc))}")
        return
    st.session_state.pop(PENDING_IMPORT, None)
    st.success("Imported:\n\n" + "\n\n".join(f"- {md(line)}" for line in lines))


def render_export(names: list[str]) -> None:
    st.subheader("Export labels")
    everyone = "everyone (one grade per item)"
    left, middle, right = st.columns(3)
    fmt = EXPORT_FORMATS[left.selectbox("format", list(EXPORT_FORMATS), key="data:export-format")]
    who = middle.selectbox("whose labels", [everyone, *names], key="data:export-who")
    aggregate = right.selectbox(
        "one grade from several people",
        list(AGGREGATES),
        index=list(AGGREGATES).index(option("aggregate").default),
        help=option("aggregate").help,
        key="data:export-aggregate",
    )
    threshold = 1
    if "threshold" in fmt.options:
        threshold = st.selectbox("relevant: grade at least", [1, 2, 3], key="data:export-threshold")
    anonymize = st.checkbox(
        "anonymize",
        key="data:export-anonymize",
        help="name people by stable pseudonyms (annotator-1, annotator-2, ... by the order they were "
        "added), in the file and its summary",
    )
    st.caption(md(fmt.description) + (" (a .zip of the folder)" if fmt.writes == "folder" else ""))
    if st.button("Prepare the file", key="data:export"):
        try:
            with borrowed(_db_path()) as store:
                prepared = export_download(
                    store,
                    fmt.name,
                    annotator=None if who == everyone else who,
                    aggregate=aggregate,
                    threshold=threshold,
                    anonymize=anonymize,
                )
        except (FormatError, StoreError) as exc:
            st.error(md(exc))
            return
        st.session_state["data:export-file"] = prepared
    ready = st.session_state.get("data:export-file")
    if ready:
        st.caption(md(ready.summary))
        st.download_button(
            f"Download {ready.filename}",
            data=ready.data,
            file_name=ready.filename,
            mime=ready.mime,
            key="data:download",
        )
