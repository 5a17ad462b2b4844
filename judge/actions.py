"""The commands of ``python -m judge``, one public function each, and nothing else public: what the
command line calls and what the Judge page calls when it offers the same command.

Each takes an open store and the options as keywords and returns what the face renders. An LLM
run is planned, then asked (live, or submitted as one batch); the face that started it may hand in
``while_running``, a context manager around the run (the CLI's Ctrl-C handling: the first signal
stops new calls, the second abandons those in flight), and ``on_progress``; ``api_key`` None: the client's own (``OPENAI_API_KEY`` for the configured endpoint).
``list`` is
:func:`list_` (a builtin's name).

``grade`` with ``holes`` (a :class:`judge.holes.HoleSpec`: judgments, run, k, corpus texts) grades
the run's holes at k only: they are made chunk items first (their missing texts written, nobody
assigned; :mod:`judge.holes`), then graded as any item, restricted to those item ids.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from typing import TYPE_CHECKING, overload

from annotation.errors import DenominatorError
from annotation.store import Store
from calibration.readings import agreement_mark, current_readings, pair_summary
from judge.client import Endpoint
from judge.jobs import (
    LLMRun,
    OfflineReport,
    PairSummary,
    Plan,
    StoredJudge,
    grade_offline,
    llm_calls,
    plan_llm,
    stored_judges,
)
from judge.limits import MAX_REPLY_BYTES
from judge.progress import Progress
from judge.prompts import DEFAULT_SCHEMA, SchemaMode
from judge.runner import Call

if TYPE_CHECKING:
    from judge.batch import BatchState, Collected, Submitted  # openai's SDK: only a batch loads it
    from judge.holes import HoleItems, HoleSpec  # the metrics' scoring: only --holes loads it
    from judge.lexical import CrossValidation  # scikit-learn, only when the offline judge runs

__all__ = ["grade", "compare", "fit_lexical", "batch", "list_"]


class NothingToJudge(DenominatorError, ValueError):
    """No item of the rubric (or no answer pair) is there to ask the judge about."""


@dataclass
class LLMResult:
    """What an LLM judge command did: its plan; the progress of a live run (None for a dry run or a
    batch); the submitted batch (None unless ``batch``)."""

    plan: Plan
    progress: Progress | None = None
    submitted: Submitted | None = None


def _ask(
    store: Store,
    rubric: str,
    calls: Sequence[Call],
    endpoint: Endpoint,
    *,
    schema: SchemaMode,
    name: str | None,
    repeats: int,
    dry_run: bool,
    batch: bool,
    on_progress: Callable[[Progress], None] | None,
    while_running: Callable[[LLMRun], AbstractContextManager[object]] | None,
    api_key: str | None,
) -> LLMResult:
    plan = plan_llm(store, rubric, list(calls), endpoint, schema, name=name, repeats=repeats)
    if dry_run:
        return LLMResult(plan)
    if batch:
        from judge.batch import submit_batch  # start-up: openai's SDK (0.5 s of CPU), a batch's only

        return LLMResult(plan, submitted=submit_batch(store, plan, endpoint, schema))
    key = {} if api_key is None else {"api_key": api_key}
    llm = LLMRun(store.location, plan, endpoint, schema, on_progress=on_progress, **key)
    with while_running(llm) if while_running is not None else nullcontext():
        try:
            progress = llm.run()
        except KeyboardInterrupt:  # the face's second signal: what was stored stays, the rest is resumed
            progress = llm.progress
            progress.stopped = True
    return LLMResult(plan, progress)


@dataclass
class HolesResult:
    """What ``grade`` with ``holes`` did: the holes (their texts, items, what was skipped) and the
    judge's run over their items (None when no hole had texts to grade)."""

    holes: HoleItems
    result: LLMResult | OfflineReport | None


@overload
def grade(
    store: Store,
    rubric: str,
    *,
    holes: HoleSpec,
    endpoint: Endpoint | None = None,
    schema: SchemaMode = DEFAULT_SCHEMA,
    name: str | None = None,
    limit: int | None = None,
    seed: int = 0,
    dry_run: bool = False,
    batch: bool = False,
    on_progress: Callable[[Progress], None] | None = None,
    while_running: Callable[[LLMRun], AbstractContextManager[object]] | None = None,
    api_key: str | None = None,
) -> HolesResult: ...


@overload
def grade(
    store: Store,
    rubric: str,
    *,
    holes: None = None,
    endpoint: None = None,
    name: str | None = None,
    limit: int | None = None,
    seed: int = 0,
    dry_run: bool = False,
) -> OfflineReport: ...


@overload
def grade(
    store: Store,
    rubric: str,
    *,
    holes: None = None,
    endpoint: Endpoint,
    schema: SchemaMode = DEFAULT_SCHEMA,
    name: str | None = None,
    limit: int | None = None,
    dry_run: bool = False,
    batch: bool = False,
    on_progress: Callable[[Progress], None] | None = None,
    while_running: Callable[[LLMRun], AbstractContextManager[object]] | None = None,
    api_key: str | None = None,
) -> LLMResult: ...


def grade(
    store: Store,
    rubric: str,
    *,
    holes: HoleSpec | None = None,
    endpoint: Endpoint | None = None,
    schema: SchemaMode = DEFAULT_SCHEMA,
    name: str | None = None,
    limit: int | None = None,
    seed: int = 0,
    dry_run: bool = False,
    batch: bool = False,
    on_progress: Callable[[Progress], None] | None = None,
    while_running: Callable[[LLMRun], AbstractContextManager[object]] | None = None,
    api_key: str | None = None,
) -> LLMResult | OfflineReport | HolesResult:
    """Grade every item of ``rubric``: with an ``endpoint`` the LLM judge (an :class:`LLMResult`),
    without one the offline judge fitted on the people's labels (its report). With ``holes``
    (relevance only): the run's holes at k, made items (unless ``dry_run``: then the items that
    exist already), graded the same way (a :class:`HolesResult`)."""
    item_ids: list[int] | None = None
    found: HoleItems | None = None
    if holes is not None:
        if rubric != "relevance":
            raise NothingToJudge(f"holes are chunks: they are graded for relevance, not {rubric}")
        # start-up: the metrics' scoring (and the model), for --holes only
        from judge.holes import find_hole_items, make_hole_items

        found = find_hole_items(store, holes)
        if not dry_run and found.to_make:
            if endpoint is None:  # the offline judge must fit before any item is made for it
                _check_fit(store, rubric, seed)
            make_hole_items(store, found)
        item_ids = found.item_ids
        if not item_ids:
            return HolesResult(found, None)
    result = _grade(
        store,
        rubric,
        item_ids=item_ids,
        endpoint=endpoint,
        schema=schema,
        name=name,
        limit=limit,
        seed=seed,
        dry_run=dry_run,
        batch=batch,
        on_progress=on_progress,
        while_running=while_running,
        api_key=api_key,
    )
    return result if found is None else HolesResult(found, result)


def _check_fit(store: Store, rubric: str, seed: int) -> None:
    """NotEnoughLabels (nothing written) when the offline judge cannot be fitted on the store's labels."""
    # start-up: scikit-learn, ~1.1 s, only when the offline judge runs
    from judge.lexical import LexicalJudge, training_data

    data = training_data(store, rubric)
    LexicalJudge().fit([r[1] for r in data], [r[2] for r in data], [r[3] for r in data], rubric, seed=seed)


def _grade(
    store: Store,
    rubric: str,
    *,
    item_ids: list[int] | None,
    endpoint: Endpoint | None,
    schema: SchemaMode,
    name: str | None,
    limit: int | None,
    seed: int,
    dry_run: bool,
    batch: bool,
    on_progress: Callable[[Progress], None] | None,
    while_running: Callable[[LLMRun], AbstractContextManager[object]] | None,
    api_key: str | None,
) -> LLMResult | OfflineReport:
    """:func:`grade` over every item of ``rubric``, or over ``item_ids`` only."""
    if endpoint is None:
        return grade_offline(
            store, rubric, seed=seed, limit=limit, dry_run=dry_run, name=name, item_ids=item_ids
        )
    calls = llm_calls(store, rubric, limit=limit, item_ids=item_ids)
    if not calls:
        raise NothingToJudge(f"no items to grade for {rubric}")
    return _ask(
        store,
        rubric,
        calls,
        endpoint,
        schema=schema,
        name=name,
        repeats=1,
        dry_run=dry_run,
        batch=batch,
        on_progress=on_progress,
        while_running=while_running,
        api_key=api_key,
    )


def compare(
    store: Store,
    *,
    endpoint: Endpoint,
    schema: SchemaMode = DEFAULT_SCHEMA,
    name: str | None = None,
    limit: int | None = None,
    repeats: int = 1,
    dry_run: bool = False,
    batch: bool = False,
    on_progress: Callable[[Progress], None] | None = None,
    while_running: Callable[[LLMRun], AbstractContextManager[object]] | None = None,
    api_key: str | None = None,
) -> tuple[LLMResult, PairSummary | None]:
    """Every answer pair asked in both orders (``repeats`` times each); with the pairs' summary
    (swap-averaged preference, consistency) once a live run has answered."""
    calls = llm_calls(store, "preference", limit=limit)  # each order once; the plan repeats them
    if not calls:
        raise NothingToJudge("no answer pairs to compare (python -m denominator demo builds some)")
    result = _ask(
        store,
        "preference",
        calls,
        endpoint,
        schema=schema,
        name=name,
        repeats=repeats,
        dry_run=dry_run,
        batch=batch,
        on_progress=on_progress,
        while_running=while_running,
        api_key=api_key,
    )
    summary = pair_summary(store, result.plan.fingerprint) if result.progress is not None else None
    return result, summary


def fit_lexical(store: Store, rubric: str, *, seed: int = 0) -> CrossValidation:
    """The offline judge's cross-validated agreement with people on ``rubric`` (nothing stored)."""
    # start-up: scikit-learn, ~1.1 s, only for this command
    from judge.lexical import cross_validate, training_data

    data = training_data(store, rubric)
    return cross_validate([r[1] for r in data], [r[2] for r in data], [r[3] for r in data], rubric, seed=seed)


@overload
def batch(
    url: str, batch_id: str, *, store: None = None, max_reply_bytes: int = MAX_REPLY_BYTES
) -> BatchState: ...


@overload
def batch(url: str, batch_id: str, *, store: Store, max_reply_bytes: int = MAX_REPLY_BYTES) -> Collected: ...


def batch(
    url: str, batch_id: str, *, store: Store | None = None, max_reply_bytes: int = MAX_REPLY_BYTES
) -> BatchState | Collected:
    """A submitted batch: its state (no ``store``), or its answers collected into ``store`` (each
    line at most ``max_reply_bytes``, only the calls the batch submitted)."""
    from judge.batch import batch_state, collect_batch  # start-up: openai's SDK, a batch's only

    if store is None:
        return batch_state(url, batch_id)
    return collect_batch(store, url, batch_id, max_reply_bytes=max_reply_bytes)


def list_(store: Store) -> tuple[list[StoredJudge], dict[str, str]]:
    """Every judge, with the mark of its agreement with people (fingerprint -> mark)."""
    judges = stored_judges(store)
    readings = current_readings(store) if judges else {}  # one review for every judge (#40)
    return judges, {j["fingerprint"]: agreement_mark(store, j, readings) for j in judges}
