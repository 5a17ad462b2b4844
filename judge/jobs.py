"""Judge jobs as the command line and the Judge page run them: the calls of a
rubric, plan an LLM run (its fingerprint, what is left to ask, an estimate of
tokens), run it (:class:`LLMRun`: register the judge, store every answer as it
comes, close the writer whatever happens), summarise a pairwise judge's
swap-and-average, and grade with the offline judge. Both faces call these and
only render; neither holds judge logic.

A run takes the judge's ``name`` (None: the store's default, ``<model>/<rubric>`` or
``offline-lexical/<rubric>``); a fingerprint new to that name is its next version
(:meth:`annotation.store.Store.judge_identity`).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, TypedDict, cast

from annotation.store import Store
from calibration.results import PairResult, PairSummary
from judge.client import Endpoint, JudgeClient
from judge.pairwise import pairwise_calls
from judge.pointwise import pointwise_calls
from judge.progress import Progress
from judge.prompts import SchemaMode, build_messages, fingerprint, judge_settings
from judge.runner import Call, Job, ResultWriter, run_job

if TYPE_CHECKING:  # scikit-learn, only when the offline judge runs
    from judge.lexical import CrossValidation

__all__ = [
    "JudgeIdentity",
    "RegisteredJudge",
    "StoredJudge",
    "PairResult",
    "PairSummary",
    "OfflineReport",
    "Plan",
    "LLMRun",
    "llm_calls",
    "plan_llm",
    "judge_identity",
    "register_judge",
    "stored_judges",
    "grade_offline",
    "OUT_TOKENS_ESTIMATE",
]

OUT_TOKENS_ESTIMATE = 80  # a reason of one or two sentences and the grade


class JudgeIdentity(TypedDict):
    """A judge's name and version (:meth:`annotation.store.Store.judge_identity`): those it has once
    registered, else those registering would give it."""

    name: str
    version: int
    current: bool  # the newest version of its name
    changed: list[str]  # the settings that differ from the version before ([] for version 1)
    registered: bool


class RegisteredJudge(TypedDict):
    """A judge as registered: its fingerprint and the settings it was computed from."""

    fingerprint: str
    settings: dict[str, Any]  # as stored (JSON): model, endpoint, rubric, prompt, seed, ...


class StoredJudge(RegisteredJudge):
    """A judge in the store (:meth:`annotation.store.Store.judges`): name, version, what it is, and
    its counts (labels: current values on live items; errors, tokens and rows: every row stored)."""

    name: str
    version: int
    kind: str | None  # "llm" or "lexical"
    rubric: str | None
    model: str | None
    endpoint: str | None
    created_at: str
    labels: int
    errors: int
    tokens_in: int
    tokens_out: int
    rows: int
    current: bool
    changed: list[str]


class OfflineReport(TypedDict):
    """:func:`grade_offline`'s report (a plain dict)."""

    fingerprint: str
    identity: JudgeIdentity
    features: str  # the features' version
    rubric: str
    fitted_on: int  # human labels
    items: int  # the rubric's items (the first ``limit``)
    already_done: int
    graded: int  # now (0 for a dry run)
    agreement: CrossValidation


@dataclass
class Plan:
    """A run's plan. ``calls`` are the base calls (for pairs: each order once); the job asks
    each ``repeats`` times (repeat r of a base call is its repeat + r), so a plan is counted,
    estimated and run without ever building the repeated list (#17: a dry run of 10^20
    repeats counts, it does not fill memory)."""

    fingerprint: str
    settings: dict[str, Any]
    calls: list[Call]  # the base calls
    done: set[tuple[int, str | None, int]]  # (item, order, repeat) this judge has a value for
    identity: JudgeIdentity  # updated when the run registers the judge
    repeats: int = 1

    @property
    def total(self) -> int:
        """Calls of the job: base calls x repeats."""
        return len(self.calls) * self.repeats

    def _done_per_call(self) -> list[int]:
        """Per base call, how many of its repeats are done (from the done keys, not the repeats)."""
        per_key: dict[tuple[int, str | None], list[int]] = {}
        for item, order, repeat in self.done:
            per_key.setdefault((item, order), []).append(repeat)
        return [
            sum(
                1 for r in per_key.get((c.item_id, c.ab_order), ()) if c.repeat <= r < c.repeat + self.repeats
            )
            for c in self.calls
        ]

    @property
    def already_done(self) -> int:
        return sum(self._done_per_call())

    @property
    def left(self) -> int:
        return self.total - self.already_done

    def todo(self) -> Iterator[Call]:
        """The calls left, repeat by repeat (every base call's first repeat before any second)."""
        for r in range(self.repeats):
            for c in self.calls:
                call = c if r == 0 else replace(c, repeat=c.repeat + r)
                if call.done_key not in self.done:
                    yield call

    def estimate(self) -> tuple[int, int]:
        """(input, output) tokens of the calls left: characters / 4, and a short reply each."""
        rubric = self.settings["rubric"]
        tokens_in = sum(
            sum(len(m["content"]) for m in build_messages(rubric, c.data, self.settings.get("guidelines")))
            // 4
            * (self.repeats - done)
            for c, done in zip(self.calls, self._done_per_call())
        )
        return tokens_in, OUT_TOKENS_ESTIMATE * self.left


def llm_calls(
    store: Store,
    rubric: str,
    *,
    limit: int | None = None,
    repeats: int = 1,
    item_ids: Collection[int] | None = None,
) -> list[Call]:
    """The calls of a rubric: both orders of every answer pair for ``preference`` (``repeats``
    times), one call per chunk or trace otherwise; ``limit``: the first N items; ``item_ids``
    (pointwise rubrics): only those items. A run gives the base calls (``repeats`` 1) and the
    repeats to :func:`plan_llm` instead."""
    if rubric == "preference":
        return pairwise_calls(store, repeats=repeats, limit=limit)
    return pointwise_calls(store, rubric, limit=limit, item_ids=item_ids)


def plan_llm(
    store: Store,
    rubric: str,
    calls: list[Call],
    endpoint: Endpoint,
    schema_mode: SchemaMode,
    name: str | None = None,
    repeats: int = 1,
) -> Plan:
    """The judge's fingerprint and settings, its name and version (``name`` None: the default;
    StoreError for a name it cannot have), and what is done of ``calls`` x ``repeats``. The
    rubric's guidelines in force go into the prompt when an admin has edited them
    (:func:`judge.prompts.judge_settings`): an edit is a new fingerprint."""
    guidelines = store.guidelines(rubric)
    settings = judge_settings(
        rubric,
        endpoint.model,
        endpoint.base_url,
        endpoint.temperature,
        endpoint.seed,
        schema_mode,
        guidelines.text if guidelines.edited else None,
    )
    fp = fingerprint(settings)
    identity = judge_identity(store, fp, settings, name)
    return Plan(fp, settings, calls, store.judge_done(fp), identity, repeats)


# The store's judges, typed at the boundary: annotation.store.judges gives an identity and a judge row as
# dict[str, Any], with the keys its docstrings name; these three read them as the TypedDicts above.
def judge_identity(
    store: Store, fingerprint: str, settings: Mapping[str, Any], name: str | None = None
) -> JudgeIdentity:
    """:meth:`Store.judge_identity`: the judge's name and version, registered or not yet."""
    return cast(JudgeIdentity, store.judge_identity(fingerprint, settings, name))


def register_judge(
    store: Store, fingerprint: str, settings: Mapping[str, Any], name: str | None = None
) -> JudgeIdentity:
    """:meth:`Store.register_judge`: the judge registered once, its name and version."""
    return cast(JudgeIdentity, store.register_judge(fingerprint, settings, name))


def stored_judges(store: Store) -> list[StoredJudge]:
    """:meth:`Store.judges`: every judge, oldest first."""
    return cast("list[StoredJudge]", store.judges())


_DEFAULT_KEY = object()  # JudgeClient's own default: OPENAI_API_KEY


class LLMRun:
    """One LLM judge run over a plan's calls left, as every face runs it: the judge is
    registered (its fingerprint and settings), every answer is stored as it comes by a
    :class:`ResultWriter` that is closed whatever happens (a refusal, an interrupt), and
    :meth:`stop` (from a signal handler or a button) lets the calls in flight finish."""

    def __init__(
        self,
        db_path: str,
        plan: Plan,
        endpoint: Endpoint,
        schema_mode: SchemaMode,
        *,
        api_key: Any = _DEFAULT_KEY,
        on_progress: Callable[[Progress], None] | None = None,
    ) -> None:
        self.db_path, self.plan, self.endpoint, self.schema_mode = db_path, plan, endpoint, schema_mode
        self.api_key, self.on_progress = api_key, on_progress
        self.job: Job | None = None
        self._stopped = False

    def stop(self) -> None:
        self._stopped = True
        if self.job is not None:
            self.job.stop()

    @property
    def progress(self) -> Progress:
        return self.job.progress if self.job is not None else Progress(total=self.plan.left)

    def run(self) -> Progress:
        """Run the calls left to their end (``EndpointRefused`` when the endpoint refuses)."""
        with Store(self.db_path) as store:
            self.plan.identity = register_judge(
                store, self.plan.fingerprint, self.plan.settings, self.plan.identity.get("name")
            )
        if not self.plan.left:  # every call done (a finished job run again): no client, no SDK (#42)
            return Progress(total=0)
        client = (
            JudgeClient(self.endpoint)
            if self.api_key is _DEFAULT_KEY
            else JudgeClient(self.endpoint, api_key=self.api_key)
        )
        writer = ResultWriter(self.db_path)
        writer.start()
        rubric = self.plan.settings["rubric"]
        self.job = Job(
            client,
            rubric,
            self.plan.fingerprint,
            self.schema_mode,
            self.plan.todo(),
            writer,
            on_progress=self.on_progress,
            total=self.plan.left,
            guidelines=self.plan.settings.get("guidelines"),
        )
        if self._stopped:
            self.job.stop()
        try:
            progress = run_job(self.job)
        finally:
            writer.close()  # whatever happened, every answer received is stored (or AnswersNotStored)
        progress.lock_delayed, progress.lock_seconds = writer.delayed, writer.longest_wait
        return progress


def grade_offline(
    store: Store,
    rubric: str,
    seed: int = 0,
    limit: int | None = None,
    dry_run: bool = False,
    name: str | None = None,
    item_ids: Collection[int] | None = None,
) -> OfflineReport:
    """Fit the offline judge on the human labels, report its cross-validated
    agreement with them, and (unless ``dry_run``) store its grade of every item
    of the rubric (``item_ids``: of those items only) not graded by this same judge before. A fit on other labels is
    the next version of ``name`` (default ``offline-lexical/<rubric>``); the report
    holds its ``identity`` (name, version, current, changed, registered)."""
    # start-up: scikit-learn, ~1.1 s, only when the offline judge runs
    from judge.lexical import FEATURES_VERSION, LexicalJudge, cross_validate, item_texts, training_data

    data = training_data(store, rubric)
    a, b, y = [r[1] for r in data], [r[2] for r in data], [r[3] for r in data]
    judge = LexicalJudge()
    judge.fit(a, b, y, rubric, seed=seed, item_ids=[r[0] for r in data])
    cv = cross_validate(a, b, y, rubric, seed=seed)
    fp = judge.fingerprint
    items = item_texts(store, rubric, item_ids)
    if limit:
        items = items[:limit]
    done = store.judge_done(fp)
    todo = [row for row in items if (row[0], None, 0) not in done]
    plain = {k: v for k, v in cv.items() if isinstance(v, (int, float, str, type(None)))}
    described = judge.describe()
    settings = {
        **described,
        "kind": "lexical",
        "rubric": rubric,
        "endpoint": "offline",
        "model": described.get("model"),
        "prompt_version": FEATURES_VERSION,
        "seed": seed,
        "agreement": plain,
        "trained_on": [int(r[0]) for r in data],
        # on the items it was fitted on, the review reads its out-of-fold answers (in-sample ones flatter)
        "out_of_fold": {str(int(r[0])): int(p) for r, p in zip(data, cv["predictions"])},
    }
    report: OfflineReport = {
        "fingerprint": fp,
        "identity": judge_identity(store, fp, settings, name),
        "features": FEATURES_VERSION,
        "rubric": rubric,
        "fitted_on": len(y),
        "items": len(items),
        "already_done": len(items) - len(todo),
        "graded": 0,
        "agreement": cv,
    }
    if dry_run or not todo:
        return report
    grades = judge.predict([r[1] for r in todo], [r[2] for r in todo])
    report["identity"] = register_judge(store, fp, settings, name)
    store.add_judge_labels(
        [
            {"item_id": row[0], "fingerprint": fp, "repeat": 0, "value": int(g), "reason": FEATURES_VERSION}
            for row, g in zip(todo, grades)
        ]
    )
    report["graded"] = len(todo)
    return report
