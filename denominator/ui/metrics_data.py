"""What the Metrics page scores: the worked example, uploaded files, or a run already in the
store against one of the store's label sets; and the corpus label coverage divides by (an
uploaded corpus file or the store's chunks).

The store source calls :func:`calibration.stored.stored_data`, the function ``python -m
calibration metrics|audit --stored-run NAME --labels SET`` calls, so the page and the CLI answer
the same. Session keys are namespaced ``metrics:``; data strings are escaped with
:func:`annotation.render.md`.

Each :class:`DataSet` carries a ``key``, a digest of what it holds (the uploaded files' bytes and
names, the stored run, label set and the store's version, the worked example's files), and a
``corpus_key`` for the corpus: the page's cached results (:mod:`denominator.ui.metrics_cache`) are
kept under them, never under the objects, so one person's data never answers for another's. An
upload's bytes are digested once per upload (:func:`upload_digest`), not on every run of the page.

A data set read is kept as one object (``st.cache_resource``), not a copy per run of the page
(``st.cache_data`` unpickles 70 MB each time, ~0.2 s): its run is the same :class:`Run` from one
run of the page to the next, so what the engine derives from it once (``Run.memo``: trec_eval's
order, the judged rows) serves every k. Shared, it is never changed: :func:`render_corpus` gives
a copy with the corpus beside it.
"""

from __future__ import annotations

import hashlib
import io
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TypeVar

import streamlit as st
from streamlit.typing import UploadedFile

from annotation.access.identity import db_path, existing_db
from annotation.errors import DenominatorError
from annotation.formats.by_extension import ranked_in_memory, read_judgments, read_ranked
from annotation.formats.records import read_corpus_ids
from annotation.formats.textio import upload_file_name
from annotation.model import FormatError, Qrels, Run
from annotation.render import md
from annotation.shipped import WORKED_EXAMPLE as WORKED_EXAMPLE_DIR
from annotation.store import Store, borrowed, database_exists
from calibration.gate import file_digest
from calibration.stored import DEFAULT_LABELS, stored_data, stored_label_sets, stored_runs

EXAMPLE_DIR = WORKED_EXAMPLE_DIR  # shipped in the package (annotation.shipped)
KEY = "metrics:"  # namespace of the page's session-state keys
WORKED_EXAMPLE = "worked example"
OWN_FILES = "your files"
STORE = "a run in the store"
SOURCES = [WORKED_EXAMPLE, OWN_FILES, STORE]
NO_CORPUS = "none (coverage unknown)"
CORPUS_UPLOAD = "upload a corpus file"
CORPUS_STORE = "the store's chunks"

ON_REQUEST = 500  # above this many queries the page's check and holes are drawn on request (a toggle)
DIGESTS = 8  # uploads whose digest a session keeps (the page holds at most four files at once)
DATA_SETS = 4  # data sets the server keeps read: a 10,000 x 200 run is ~70 MB in memory

T = TypeVar("T")


class UploadError(DenominatorError, ValueError):
    """An uploaded file that a reader refused; the message names the uploaded file."""


@dataclass
class DataSet:
    """What the page evaluates: judgments, one run, and what the audit may add."""

    label: str
    qrels: Qrels
    run: Run
    corpus_size: int | None = None
    corpus_ids: set[str] | None = None  # the corpus's chunk ids: label coverage counts judged ones in it
    corpus_label: str = ""  # where the corpus came from, in words
    truth: Qrels | None = None
    dupe: tuple[Qrels, Run] | None = None  # the worked example's q_dupe
    sampled: Qrels | None = None  # the same labels plus a sample of unjudged chunks (a sampling section)
    run_digest: str = ""  # sha256 of the run file (or of a stored run's rankings), for a recorded check
    key: str = ""  # a digest of what the judgments, the run and the rest read from (metrics_cache's key)
    corpus_key: str = ""  # a digest of where the corpus came from ("": none, or the data's own size)


def content_key(*parts: object) -> str:
    """A digest of ``parts`` (names, digests, sizes): a cache key that holds no data."""
    return hashlib.sha256(repr(parts).encode("utf-8")).hexdigest()


def upload_digest(upload: UploadedFile) -> str:
    """sha256 of an uploaded file's bytes, computed once per upload (its ``file_id``) in this
    session: hashing a 71 MB run on every run of the page costs ~0.1 s each time."""
    digests: dict[str, str] = st.session_state.setdefault(f"{KEY}digests", {})
    if upload.file_id not in digests:
        while len(digests) >= DIGESTS:
            del digests[next(iter(digests))]  # the oldest upload's
        digests[upload.file_id] = file_digest(upload.getvalue())
    return digests[upload.file_id]


# ---------------------------------------------------------------- loading


@st.cache_resource(show_spinner=False)
def load_worked_example(folder: str = str(EXAMPLE_DIR)) -> DataSet:
    """The worked example: golden.yaml + run.jsonl, its truth set, corpus and q_dupe."""
    base = Path(folder)
    run = read_ranked(base / "run.jsonl")
    names = (
        "run.jsonl",
        "golden.yaml",
        "corpus.jsonl",
        "truth.qrels",
        "dupe.yaml",
        "dupe.jsonl",
        "sampled.yaml",
    )
    return DataSet(
        label="the worked example (examples/worked-example: golden.yaml, run.jsonl)",
        qrels=read_judgments(base / "golden.yaml"),
        run=run,
        corpus_size=len(read_corpus_ids(base / "corpus.jsonl")),
        truth=read_judgments(base / "truth.qrels"),
        dupe=(read_judgments(base / "dupe.yaml"), read_ranked(base / "dupe.jsonl")),
        sampled=read_judgments(base / "sampled.yaml"),
        run_digest=file_digest(base / "run.jsonl"),
        key=content_key(WORKED_EXAMPLE, *(file_digest(base / name) for name in names)),
    )


def read_upload(
    name: str,
    data: bytes,
    reader: Callable[[Path], T],
    in_memory: Callable[[bytes, str], T | None] | None = None,
) -> T:
    """Write the bytes to a temporary file named like the upload, then read it.

    The name keeps its extension (the readers choose the format by it); a name no file can have
    (``..``, a NUL, over 255 bytes) is refused (:func:`annotation.formats.textio.upload_file_name`); a
    reader's error is re-raised as :class:`UploadError` naming the upload, not the temporary path.
    ``in_memory``: a reader of the bytes themselves, tried first (no file written: #42 item 2, a
    71 MB run in 0.20 s of CPU against 0.23 s through the file); its None sends them to ``reader``.
    """
    safe_name = upload_file_name(name)
    if in_memory is not None:
        found = in_memory(data, safe_name)
        if found is not None:
            return found
    with tempfile.TemporaryDirectory(prefix="denominator-") as tmp:
        path = Path(tmp) / safe_name
        path.write_bytes(data)
        try:
            return reader(path)
        except FormatError as exc:
            raise UploadError(str(exc).replace(str(path), safe_name)) from None


@st.cache_resource(show_spinner=False, max_entries=DATA_SETS)
def load_uploads(
    qrels_name: str, qrels_digest: str, run_name: str, run_digest: str, _qrels: io.BytesIO, _run: io.BytesIO
) -> DataSet:
    """The two uploads (``st.file_uploader``'s files) read, kept under their names and digests
    (:func:`upload_digest`), not their bytes: hashing, even copying, 70 MB on every run of the page
    is what the digest saves. One object for every session that uploads the same files: never
    changed (:func:`render_corpus` copies it)."""
    return DataSet(
        label=f"{qrels_name} and {run_name}",
        qrels=read_upload(qrels_name, _qrels.getvalue(), read_judgments),
        run=read_upload(run_name, _run.getvalue(), read_ranked, ranked_in_memory),
        run_digest=run_digest,
        key=content_key(OWN_FILES, qrels_name, qrels_digest, run_name, run_digest),
    )


@st.cache_resource(show_spinner=False, max_entries=DATA_SETS)
def load_run_upload(name: str, digest: str, _file: io.BytesIO) -> Run:
    """One uploaded run (the Metrics page's second run, to compare), kept under its name and digest."""
    return read_upload(name, _file.getvalue(), read_ranked, ranked_in_memory)


@st.cache_resource(show_spinner=False, max_entries=DATA_SETS)
def load_stored(db: str, run: str, labels: str, version: tuple[object, ...]) -> DataSet:
    """A stored run and label set (:func:`calibration.stored.stored_data`); ``version`` (the
    store's row counts) only keys the cache, so a new label or import reads the store again."""
    with borrowed(db) as store:
        data = stored_data(store, run, labels)
    ranked = "".join(f"{q}\t{d}\n" for q, docs in data.run.rankings().items() for d in docs)
    return DataSet(
        label=f"{data.run_name} against {data.labels_name}",
        qrels=data.qrels,
        run=data.run,
        corpus_ids=data.corpus_ids,
        corpus_label=f"the store's {len(data.corpus_ids):,} chunks",
        run_digest=file_digest(ranked.encode()),
        key=content_key(STORE, db, run, labels, version),
        corpus_key=content_key(CORPUS_STORE, db, version),
    )


@st.cache_data(show_spinner=False, max_entries=4)
def label_sets(db: str, version: tuple[object, ...]) -> dict[str, str]:
    """The store's label sets in words (:func:`calibration.stored.stored_label_sets`, a judge's with
    its current reading: a review of the store), read again when ``version`` changes."""
    with borrowed(db) as store:
        return stored_label_sets(store)


@st.cache_data(show_spinner=False, max_entries=DATA_SETS)
def load_corpus_upload(name: str, digest: str, _file: io.BytesIO) -> set[str]:
    """An uploaded corpus's chunk ids, kept under its name and digest (:func:`upload_digest`)."""
    return set(read_upload(name, _file.getvalue(), read_corpus_ids))


def store_version(store: Store) -> tuple[object, ...]:
    """What changes when the store's runs, labels or judges' answers change: the rows of its
    append-only tables, each judge's answers, each import's state (a retired import's rows stop
    counting, no row is deleted) and the chunks' settled grades (a withdrawn settlement adds no label)."""
    judges = tuple((j["fingerprint"], j["rows"]) for j in store.judges())
    imports = tuple((i["id"], i["state"], i["changed_at"]) for i in store.imports())
    settled = content_key(sorted(store.settled_chunk_grades().items()))
    return tuple(store.counts().items()) + judges + imports + (settled,)


# ---------------------------------------------------------------- rendering


def render_data_source(source: str) -> DataSet | None:
    """The chosen data with its corpus; None (with a message on the page) when there is none."""
    if source == WORKED_EXAMPLE:
        return load_worked_example()
    data = render_store_source() if source == STORE else render_uploads()
    if data is None:
        return None
    return render_corpus(data, default_store=source == STORE)


def render_uploads() -> DataSet | None:
    with st.sidebar:
        qrels_file = st.file_uploader("Judgments: golden.yaml or TREC qrels", key=f"{KEY}qrels_upload")
        run_file = st.file_uploader("Run: TREC run or .jsonl rankings", key=f"{KEY}run_upload")
    if qrels_file is None or run_file is None:
        st.info("Upload a judgments file and a run (in the sidebar) to see their metrics and audit.")
        return None
    return load_uploads(
        qrels_file.name,
        upload_digest(qrels_file),
        run_file.name,
        upload_digest(run_file),
        qrels_file,
        run_file,
    )


def render_store_source() -> DataSet | None:
    """A stored run and a label set of the store, chosen in the sidebar."""
    db = existing_db()
    if db is None:
        return None
    with borrowed(db) as store:
        runs, version = stored_runs(store), store_version(store)
    sets = label_sets(db, version)
    if not runs:
        st.info("The store holds no run yet: import one on the Data page, or upload files here.")
        return None
    with st.sidebar:
        run = st.selectbox("Stored run", runs, key=f"{KEY}stored_run")
        specs = list(sets)
        labels = st.selectbox(
            "Label set",
            specs,
            index=specs.index(DEFAULT_LABELS),
            format_func=lambda spec: sets.get(spec, spec),
            key=f"{KEY}stored_labels",
            help="Everyone's current labels by an aggregate, one person's, or a judge's grades.",
        )
    with st.spinner(f"Reading run {md(run)} from the store…"):
        return load_stored(db, run, labels, version)


def render_corpus(data: DataSet, default_store: bool) -> DataSet:
    """The corpus label coverage divides by: none, an uploaded file, or the store's chunks; a copy
    of ``data`` (kept read, shared: never changed) with the corpus beside it, its run the same."""
    db = db_path()
    choices = [NO_CORPUS, CORPUS_UPLOAD] + ([CORPUS_STORE] if database_exists(db) else [])
    with st.sidebar:
        chosen = st.radio(
            "Corpus for label coverage",
            choices,
            index=choices.index(CORPUS_STORE) if default_store and CORPUS_STORE in choices else 0,
            key=f"{KEY}corpus_source",
            help="Label coverage = judged chunks of a query / the chunks of the corpus.",
        )
        upload = (
            st.file_uploader('Corpus: JSONL {"id": ...} or one id per line', key=f"{KEY}corpus_upload")
            if chosen == CORPUS_UPLOAD
            else None
        )
    if chosen == CORPUS_STORE:
        if data.corpus_ids is not None:
            return data
        with borrowed(db) as store:
            ids = set(store.chunk_ids())
            key = content_key(CORPUS_STORE, db, store_version(store))
        return replace(data, corpus_ids=ids, corpus_key=key, corpus_label=f"the store's {len(ids):,} chunks")
    if upload is None:
        return replace(data, corpus_ids=None, corpus_label="", corpus_key="")
    digest = upload_digest(upload)
    ids = load_corpus_upload(upload.name, digest, upload)
    return replace(
        data,
        corpus_ids=ids,
        corpus_label=f"{upload.name} ({len(ids):,} chunks)",
        corpus_key=content_key(CORPUS_UPLOAD, upload.name, digest),
    )
