"""The commands of ``python -m annotation``, one public function each, and nothing else public: what
the command line calls and what a page calls when it offers the same command (the Data page's
pool and baseline, the imports section's retire and restore), with the defaults of the one options
table (:mod:`annotation.options`).

Each takes an open store (the face opens it by the one database rule, ``annotation.cli_base.open_store``
or the page's) and the options as keywords, and returns what the face renders. ``import`` is
:func:`import_` (a keyword of Python). ``demo`` is the one command not here: the demo is built from
every package, so it lives at the top (:mod:`denominator.demo`); a test names that exception.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Literal, TypedDict, overload

from annotation import exports as export_formats
from annotation.baseline import BaselineReport, add_baseline
from annotation.chunking import ChunkingError, fixed_chunks, paragraph_chunks
from annotation.exchange import ImportSources, import_files
from annotation.formats.chroma import CHROMA_GRADE, read_chroma_questions
from annotation.formats.chunks import document_files, read_documents, write_chunks
from annotation.formats.golden import DEFAULT_GRADE_SCALE, write_golden
from annotation.hole_pool import HolePoolReport, pool_holes
from annotation.options import default
from annotation.pooling import (
    DEFAULT_STRATA,
    EstimateSample,
    PoolReport,
    RunFound,
    check_estimate,
    sample_unjudged,
)
from annotation.pooling import pool as build_pool
from annotation.rubrics import Guidelines
from annotation.store import AnnotatorRow, ClaimRule, ImportChange, ImportRecord, Store, StoreError
from annotation.views import pool_report

if TYPE_CHECKING:
    from annotation.store.transfer import TableCopied

__all__ = [
    "import_",
    "pool",
    "sample",
    "baseline",
    "annotators",
    "handout",
    "guidelines",
    "imports",
    "migrate",
    "export",
    "chunk",
    "import_chroma",
]


class PoolResult(TypedDict):
    """What :func:`pool` did."""

    pool: PoolReport  # the pool's report
    found: list[RunFound]  # what each run found alone
    sample: EstimateSample | None  # the estimate's sample; None without one


class AnnotatorList(TypedDict):
    """What :func:`annotators` lists."""

    annotators: list[AnnotatorRow]
    tokens_required: bool  # whether the app asks everyone to sign in (a token or the provider)
    claim_rules: list[ClaimRule]  # the claim values that add a person at first sign-in (map-claim)


def import_(store: Store, sources: ImportSources) -> list[str]:
    """Corpus, queries, a BEIR folder, a run, traces, labels: one import, landed whole or not at all;
    what it added, in words, one line per file (:func:`annotation.exchange.import_files`)."""
    sources.check()
    return import_files(store, sources)


@overload
def pool(
    store: Store,
    depth: int = default("pool_depth"),
    *,
    runs: Sequence[str] | None = None,
    annotators: Sequence[str] = (),
    overlap: float | None = None,
    seed: int = default("pool_seed"),
    estimate: int | None = None,
    strata: Sequence[int] = DEFAULT_STRATA,
    corpus_stratum: bool = False,
    holes: None = None,
) -> PoolResult: ...


@overload
def pool(
    store: Store,
    *,
    annotators: Sequence[str] = (),
    overlap: float | None = None,
    seed: int = default("pool_seed"),
    holes: str | os.PathLike[str],
) -> HolePoolReport: ...


def pool(
    store: Store,
    depth: int | None = None,
    *,
    runs: Sequence[str] | None = None,
    annotators: Sequence[str] = (),
    overlap: float | None = None,
    seed: int = default("pool_seed"),
    estimate: int | None = None,
    strata: Sequence[int] = DEFAULT_STRATA,
    corpus_stratum: bool = False,
    holes: str | os.PathLike[str] | None = None,
) -> PoolResult | HolePoolReport:
    """The depth-``depth`` pool of ``runs`` as items, assigned to ``annotators`` (``overlap`` None:
    the table's share with two or more people); with ``estimate``, that many unjudged candidates per
    query sampled beyond it, refused before anything is written. Returns ``{"pool", "found",
    "sample"}``: the pool's report, what each run found alone, the sample (None without one).

    With ``holes`` (a hole sample, ``python -m calibration holes --out FILE``) instead: that
    sample's (query, chunk) pairs as items, assigned the same way
    (:func:`annotation.hole_pool.pool_holes`); a depth, runs or an estimate go without it."""
    if holes is not None:
        if depth is not None or runs or estimate or corpus_stratum:
            raise StoreError("a hole sample's pairs are pooled as they are: no depth, runs or estimate")
        return pool_holes(store, holes, annotators=annotators, overlap=overlap, seed=seed)
    depth = default("pool_depth") if depth is None else depth
    if estimate:
        check_estimate(store, depth, estimate, list(strata), annotators=list(annotators))
    report = build_pool(store, depth, runs=runs, annotators=annotators, overlap=overlap, seed=seed)
    found = pool_report(store, depth)
    drawn: EstimateSample | None = None
    if estimate:
        drawn = sample(
            store,
            depth,
            estimate,
            strata=strata,
            corpus_stratum=corpus_stratum,
            runs=runs,
            annotators=annotators,
            seed=seed,
        )
    return {"pool": report, "found": found, "sample": drawn}


def sample(
    store: Store,
    depth: int,
    n: int,
    *,
    strata: Sequence[int] = DEFAULT_STRATA,
    corpus_stratum: bool = False,
    runs: Sequence[str] | None = None,
    annotators: Sequence[str] = (),
    seed: int = default("pool_seed"),
) -> EstimateSample:
    """``pool --estimate``'s second step, on a pool already made (the Data page's Sample): per query a
    stratified random sample of ``n`` unjudged candidates beyond ``depth``, assigned to ``annotators``
    (everyone when none is named), for the estimate of what the labels missed
    (:func:`annotation.pooling.sample_unjudged`)."""
    return sample_unjudged(
        store,
        depth,
        n,
        strata=list(strata),
        corpus=corpus_stratum,
        runs=runs,
        annotators=list(annotators),
        seed=seed,
    )


def baseline(
    store: Store,
    *,
    method: str = default("baseline_method"),
    depth: int = default("baseline_depth"),
    name: str = default("baseline_name"),
) -> BaselineReport:
    """A lexical run over the stored corpus, stored under ``name`` (:func:`annotation.baseline.add_baseline`)."""
    return add_baseline(store, method=method, depth=depth, name=name)


@overload
def annotators(
    store: Store,
    action: Literal["add"],
    *,
    name: str = "",
    role: str = "annotator",
    email: str | None = None,
    subject: str | None = None,
) -> str | None: ...


@overload
def annotators(store: Store, action: Literal["revoke"], *, name: str = "") -> list[str]: ...


@overload
def annotators(store: Store, action: Literal["renew"], *, name: str = "") -> str: ...


@overload
def annotators(store: Store, action: Literal["reviewer"], *, name: str = "", remove: bool = False) -> str: ...


@overload
def annotators(store: Store, action: Literal["list"] = "list") -> AnnotatorList: ...


@overload
def annotators(
    store: Store,
    action: Literal["map-claim"],
    *,
    claim: str = "",
    value: str = "",
    role: str | None = None,
    remove: bool = False,
    who: str = "",
) -> list[ClaimRule]: ...


def annotators(
    store: Store,
    action: str = "list",
    *,
    name: str = "",
    role: str | None = "annotator",
    email: str | None = None,
    subject: str | None = None,
    claim: str = "",
    value: str = "",
    remove: bool = False,
    who: str = "",
) -> str | None | list[str] | AnnotatorList | list[ClaimRule]:
    """``add`` (the access token, shown once; None with ``email`` or ``subject``: the person signs
    in with the provider), ``revoke`` (every way in ends; the ways it ended), ``renew`` (a fresh
    token for a known person, their old one and its sessions ended: a new sign-in link), ``reviewer``
    (the person may review others' labels, or no longer with ``remove``; their role after), ``list`` (the rows, whether the
    app asks people to sign in, the claim rules) or ``map-claim`` (``claim`` = ``value`` adds a
    person at first sign-in with ``role``, or the rule goes with ``remove``; the rules after)."""
    if action == "add":
        return store.add_annotator(name, role or "annotator", email=email, subject=subject)
    if action == "revoke":
        return store.revoke_annotator(name)
    if action == "renew":
        return store.renew_token(name)
    if action == "reviewer":
        store.set_reviewer(name, not remove)
        return "annotator" if remove else "reviewer"
    if action == "map-claim":
        if remove:
            store.unmap_claim(claim, value)
        else:
            store.map_claim(claim, value, role or "", who)
        return store.claim_rules()
    return {
        "annotators": store.annotators(),
        "tokens_required": store.tokens_required(),
        "claim_rules": store.claim_rules(),
    }


def handout(
    store: Store, *, mode: str | None = None, labels: int | None = None, who: str = ""
) -> tuple[str, int]:
    """How the project hands items out, (mode, labels); with ``mode`` or ``labels`` given, that is
    recorded first (the other kept as it is) by ``who``, in one write: two admins changing one
    half each at once keep both changes."""
    if mode is not None or labels is not None:
        with store.write():
            now_mode, now_labels = store.handout()
            store.set_handout(mode or now_mode, now_labels if labels is None else labels, who)
    return store.handout()


def guidelines(
    store: Store,
    action: Literal["show", "set"] = "show",
    *,
    rubric: str,
    text: str | None = None,
    version: int | None = None,
    who: str = "",
) -> Guidelines:
    """``show`` a rubric's guidelines (in force, or as at ``version``; 0: the built-in ones), or
    ``set`` them to ``text`` by ``who``: a new version when the text differs from the guidelines in
    force (:meth:`annotation.store.guidelines.GuidelineVersions.set_guidelines`); the guidelines
    shown or in force after."""
    if action == "set":
        if text is None:
            raise StoreError("guidelines set needs the text of the guidelines")
        return store.set_guidelines(rubric, text, who)
    return store.guidelines(rubric, version)


@overload
def imports(
    store: Store,
    action: Literal["list"] = "list",
    *,
    import_id: int | None = None,
    who: str = "",
    reason: str | None = None,
) -> list[ImportRecord]: ...


@overload
def imports(
    store: Store,
    action: Literal["retire", "restore"],
    *,
    import_id: int,
    who: str = "",
    reason: str | None = None,
) -> ImportChange: ...


def imports(
    store: Store,
    action: str = "list",
    *,
    import_id: int | None = None,
    who: str = "",
    reason: str | None = None,
) -> list[ImportRecord] | ImportChange:
    """``list`` every import, or ``retire`` / ``restore`` one (its rows leave or come back; nothing
    is deleted)."""
    if action == "list":
        return store.imports()
    assert import_id is not None  # retire and restore name the import (their overload requires it)
    if action == "retire":
        return store.retire_import(import_id, who, reason)
    return store.restore_import(import_id, who, reason)


def migrate(
    source: Store, target: Store, progress: Callable[[str, int], None] | None = None
) -> list[TableCopied]:
    """Every table of ``source`` into the empty ``target``, verified by count and SHA-256 per table."""
    # start-up: only this command copies stores
    from annotation.store.transfer import copy_store

    return copy_store(source, target, progress=progress)


def export(store: Store, fmt: str, output: str | os.PathLike[str], **options: Any) -> str:
    """One export format (:data:`annotation.exports.FORMATS`) written to ``output``; what was written."""
    return export_formats.export_format(fmt).export(store, output, **options)


class ChunkReport(TypedDict):
    """What :func:`chunk` wrote: documents, chunks, the file; the file names read as documents
    (``read``) and the entries of the folders given that were not (``left``: subfolders and the
    like), each by name in reading order."""

    documents: int
    chunks: int
    output: str
    read: list[str]
    left: list[str]


def chunk(
    docs: Sequence[str | os.PathLike[str]],
    output: str | os.PathLike[str],
    *,
    size: int,
    overlap: int = 0,
    by: str = "fixed",
) -> ChunkReport:
    """The documents cut into chunks, written as a chunks file with each chunk's text (#44):
    ``by="fixed"``, chunks of ``size`` characters sharing ``overlap`` with the next
    (:func:`annotation.chunking.fixed_chunks`); ``by="paragraph"``, whole lines packed into chunks
    of at most ``size`` characters (:func:`annotation.chunking.paragraph_chunks`, no overlap)."""
    if by not in ("fixed", "paragraph"):
        raise ChunkingError(f"chunk by {by!r}; expected fixed or paragraph")
    if by == "paragraph" and overlap:
        raise ChunkingError(
            f"an overlap of {overlap} characters with --by paragraph; paragraphs do not overlap"
        )
    files, left = document_files(docs)
    documents = read_documents(files)
    chunks = (
        paragraph_chunks(documents, size) if by == "paragraph" else fixed_chunks(documents, size, overlap)
    )
    write_chunks(output, chunks, documents)
    return {
        "documents": len(documents),
        "chunks": len(chunks),
        "output": str(output),
        "read": [f.name for f in files],
        "left": [f.name + ("/" if f.is_dir() else "") for f in left],
    }


class ChromaReport(TypedDict):
    """What :func:`import_chroma` wrote: queries, evidence spans, the file."""

    queries: int
    spans: int
    output: str


def import_chroma(
    questions: str | os.PathLike[str],
    corpora: Sequence[str | os.PathLike[str]],
    output: str | os.PathLike[str],
    *,
    grade: int = CHROMA_GRADE,
) -> ChromaReport:
    """Chroma's questions (:mod:`annotation.formats.chroma`) written as a golden.yaml whose queries
    hold their references as evidence spans, checked against the corpora (#44)."""
    qrels = read_chroma_questions(questions, read_documents(corpora), grade)
    qrels.meta.update(
        {
            "name": "chroma-chunking-questions",
            "description": f"evidence spans from {os.path.basename(questions)} (Chroma's chunking evaluation)",
            "grade_scale": dict(DEFAULT_GRADE_SCALE),
        }
    )
    write_golden(qrels, output)
    return {
        "queries": len(qrels.evidence),
        "spans": sum(len(spans) for spans in qrels.evidence.values()),
        "output": str(output),
    }
