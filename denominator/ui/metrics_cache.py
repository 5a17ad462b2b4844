"""The Metrics page's results, cached (#42): each action's answer kept under what it reads.

A page run calls these instead of :mod:`calibration.actions` directly; each is the action, cached
with ``st.cache_data`` under the data's ``key`` (:class:`~denominator.ui.metrics_data.DataSet`: a
digest of the files' bytes and names, or of the stored run, label set and store version) and the
settings the action reads, nothing more: a change of k computes again what depends on k, a change
of the fetch depth only the audit and the check, a change of the minimum grade neither the holes
nor the corpus; a run of the page with the same inputs computes nothing. The data themselves are
passed unhashed (``_data``): hashing a 70 MB run on every run of the page is what the key saves.

``st.cache_data`` hands each caller its own copy (unpickled on every run of the page), so a page
may change what it is given without touching the cache. The audit and the holes, a dict per query
(~0.03 and ~0.07 s to pickle and unpickle on 10,000 x 200 at k = 20, on every run), are kept as
the objects themselves (``st.cache_resource``, :data:`SHARED` of each): read-only, whoever reads
them (the estimate, which adds findings to the audit's report, is handed a deep copy). Each other
function keeps at most :data:`RESULTS` answers and :data:`RESULT_BYTES` of them. An error is not
cached: it is raised again on the next run, as the action raises it.

:func:`drawn` keeps what a page makes of a result (a per-query table of escaped text, the findings
in words, the chart's spec) under the key of the result it reads, as the object itself (shared,
read-only, as the audit): 10,000 rows take longer to write than to read back, and longer to
unpickle on every run than to share.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import streamlit as st

from annotation.hole_sample import HoleSample
from annotation.model import Qrels, Run
from calibration import actions
from calibration.metrics import Evaluation
from calibration.policy.rules import Policy
from calibration.results import AuditReport, CheckReport, Comparison, FilledReport, HolesReport
from denominator.ui.metrics_data import DataSet

__all__ = [
    "RESULTS",
    "RESULT_BYTES",
    "SHARED",
    "metrics",
    "audit",
    "holes",
    "filled",
    "check",
    "compare",
    "drawn",
]

RESULTS = 16  # answers kept per function: a few settings of a few data sets
RESULT_BYTES = "256MB"  # and at most this much of them, pickled
SHARED = 8  # audits and holes kept as objects: a 10,000-query audit is ~20 MB in memory
# a check is read again after an hour whatever its key: a judge's verdict turns stale with the
# calendar week, which no key of the store's rows sees
CHECK_SECONDS = 3600

T = TypeVar("T")


@st.cache_data(show_spinner=False, max_entries=RESULTS, max_size=RESULT_BYTES)
def metrics(key: str, k: int, min_grade: int | None, _data: DataSet) -> Evaluation:
    """``actions.metrics`` at one cutoff: reads the judgments and the run."""
    return actions.metrics(_data.qrels, _data.run, [k], min_grade)


@st.cache_resource(show_spinner=False, max_entries=SHARED)
def audit(
    key: str,
    k: int,
    min_grade: int | None,
    fetch_depth: int | None,
    corpus_key: str,
    policy: Policy,
    _data: DataSet,
) -> AuditReport:
    """``actions.audit``: reads the data (its truth set and corpus size among them: ``key``), the
    corpus chosen beside it (``corpus_key``) and the policy's bars. Shared: never changed."""
    return actions.audit(
        _data.qrels,
        _data.run,
        k,
        min_grade,
        fetch_depth=fetch_depth,
        corpus_size=_data.corpus_size,
        corpus_ids=_data.corpus_ids,
        truth=_data.truth,
        policy=policy,
    )


@st.cache_resource(show_spinner=False, max_entries=SHARED)
def holes(key: str, k: int, run_name: str, qrels_name: str, _data: DataSet) -> HolesReport:
    """``actions.holes`` of the data's run: the judgments and the run at k (no grade threshold:
    a hole is a chunk with no grade at all). Shared: never changed."""
    return actions.holes(_data.qrels, [(run_name, _data.run)], k, qrels_name=qrels_name)


@st.cache_data(show_spinner=False, max_entries=RESULTS, max_size=RESULT_BYTES)
def filled(
    key: str,
    k: int,
    min_grade: int | None,
    judge_key: str,
    judge_name: str,
    sample: HoleSample | None,
    run_name: str,
    qrels_name: str,
    _data: DataSet,
    _judge: Qrels,
) -> list[FilledReport]:
    """``actions.metrics`` with a judge's grades on the holes (``judge_key``: where they were read,
    and the store's version then) and a hole sample with people's grades (hashed: a few queries)."""
    return actions.metrics(
        _data.qrels,
        _data.run,
        [k],
        min_grade,
        judge=_judge,
        judge_name=judge_name,
        hole_sample=sample,
        run_name=run_name,
        qrels_name=qrels_name,
    )


@st.cache_data(show_spinner=False, max_entries=RESULTS, max_size=RESULT_BYTES, ttl=CHECK_SECONDS)
def check(
    key: str,
    k: int,
    min_grade: int | None,
    fetch_depth: int | None,
    corpus_size: int | None,
    policy: Policy,
    store_path: str | None,
    store_key: str,
    _qrels: Qrels,
    _run: Run,
) -> CheckReport:
    """``actions.check``: reads the data, the settings, the policy and the store (``store_key``:
    its version, :func:`denominator.ui.metrics_data.store_version`, so a new label or judge's
    answer checks again)."""
    return actions.check(
        _qrels,
        _run,
        k,
        min_grade,
        store_path=store_path,
        policy=policy,
        fetch_depth=fetch_depth,
        corpus_size=corpus_size,
    )


@st.cache_data(show_spinner=False, max_entries=RESULTS, max_size=RESULT_BYTES)
def compare(
    key: str,
    other_key: str,
    k: int,
    min_grade: int | None,
    names: tuple[str, str],
    _data: DataSet,
    _other: Run,
) -> Comparison:
    """``actions.compare`` of the data's run (A) with a second run (B, ``other_key``: its upload's
    name and digest) at one cutoff."""
    return actions.compare(_data.qrels, _data.run, _other, [k], min_grade, names=names)


@st.cache_resource(show_spinner=False, max_entries=4 * RESULTS)
def drawn(what: str, key: str, _make: Callable[[], T]) -> T:
    """``_make()``, kept under ``what`` it is (a table's name, escaped or not) and ``key``: the
    digest of everything the result it is made from reads (:func:`~denominator.ui.metrics_data.content_key`).
    Kept as the object itself, never changed by whoever reads it: three 10,000-row tables of text
    took ~0.15 s to unpickle on every run of the page as ``st.cache_data`` copies."""
    return _make()
