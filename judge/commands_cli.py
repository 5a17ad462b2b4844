"""The commands of ``python -m judge``, each a function of the parsed arguments: imported by
:mod:`judge.__main__` only once a command runs (the parser is :mod:`judge.cli_args`)."""

from __future__ import annotations

import argparse
import gc
import importlib
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import TYPE_CHECKING, TextIO

from annotation.cli_base import (
    UsageError,
    open_store,
    plural,
    say_notes,
)
from annotation.store import Store
from annotation.values import BadValue, endpoint_url
from calibration.readings import agreement_mark, pair_summary
from judge import actions
from judge.actions import LLMResult, NothingToJudge
from judge.cli_args import llm_only_given
from judge.client import Endpoint, EndpointRefused
from judge.commands_text import (
    agreement_line,
    holes_text,
    judge_name,
    judge_rows,
    judges_text,
    offline_text,
    pair_summary_text,
    plan_text,
    refused_text,
    run_text,
)
from judge.jobs import (
    LLMRun,
    OfflineReport,
    PairSummary,
    Plan,
)
from judge.limits import INT64, SEED32
from judge.prices import Prices
from judge.progress import Progress
from judge.runner import STOP_GRACE

if TYPE_CHECKING:  # a batch (openai's SDK) and --holes (the file readers, the metrics) load them
    from judge.batch import Submitted
    from judge.holes import HoleItems, HoleSpec


class ProgressLine:
    """A progress bar on stderr: calls done, errors, tokens, cost, ETA. Redrawn in
    place on a terminal (at most 10 times a second), a line per 10% otherwise."""

    def __init__(self, prices: Prices, model: str, stream: TextIO | None = None) -> None:
        # sys.stderr when drawn, not when this module was imported (a command imports it late)
        self.prices, self.model, self.stream = prices, model, stream or sys.stderr
        self.tty = self.stream.isatty()
        self._last = 0.0
        self._decile = -1

    def __call__(self, p: Progress, final: bool = False) -> None:
        now = time.monotonic()
        decile = p.done * 10 // max(p.total, 1)
        if not final and (now - self._last < 0.1 if self.tty else decile == self._decile):
            return
        self._last, self._decile = now, decile
        width = 24
        filled = width * p.done // max(p.total, 1)
        eta = p.eta()
        line = (
            f"[{'#' * filled}{'.' * (width - filled)}] {p.done}/{plural(p.total, 'call')}, "
            f"{plural(p.errors, 'error')}, "
            f"{p.tokens_in + p.tokens_out:,} tokens, {self.prices.describe(self.model, p.tokens_in, p.tokens_out)}"
            + (f", ETA {eta:.0f} s" if eta is not None and not final else f", {p.elapsed:.1f} s")
        )
        if self.tty:
            self.stream.write("\r" + line + ("\n" if final else ""))
        else:
            self.stream.write(line + "\n")
        self.stream.flush()


def _use_lexical(args: argparse.Namespace) -> bool:
    if args.judge:
        return bool(args.judge == "lexical")
    return not (args.base_url or os.environ.get("OPENAI_BASE_URL"))


def _check_env_url(args: argparse.Namespace) -> None:
    """``OPENAI_BASE_URL`` when no ``--base-url`` names the endpoint: read as ``--base-url`` is
    (:func:`annotation.values.endpoint_url`), before the store is opened or a call made."""
    url = os.environ.get("OPENAI_BASE_URL")
    if not args.base_url and url:
        try:
            endpoint_url(url)
        except BadValue as exc:
            raise UsageError(f"OPENAI_BASE_URL: {exc}") from None


def run_llm(
    args: argparse.Namespace, rubric: str, store: Store, repeats: int = 1, holes: HoleSpec | None = None
) -> tuple[str, str | None, int]:
    """(report, fingerprint, exit code) of an LLM judge run (:func:`judge.actions.grade` or, for
    preference, :func:`judge.actions.compare`), with this face's progress line and Ctrl-C handling;
    ``holes``: over the run's holes only, what became of them said after."""
    prices = Prices.load(args.prices)
    endpoint = Endpoint.from_env(
        model=args.model,
        base_url=args.base_url,
        temperature=args.temperature,
        seed=args.seed,
        timeout=args.timeout,
        concurrency=args.concurrency,
        max_retry_after=args.max_retry_after,
        max_reply_bytes=args.max_reply_bytes,
    )
    if not endpoint.model:
        raise UsageError("no model: pass --model NAME (or set OPENAI_MODEL)")
    if args.seed + repeats - 1 > INT64:  # repeat r asks with seed + r
        raise UsageError(
            f"--seed {args.seed} with --repeats {repeats}: seed + repeats - 1 must be at most {INT64:,}"
        )
    bar = ProgressLine(prices, endpoint.model)
    summary: PairSummary | None = None
    try:
        if rubric == "preference":
            result, summary = actions.compare(
                store,
                repeats=repeats,
                endpoint=endpoint,
                schema=args.schema,
                name=args.name,
                limit=args.limit,
                dry_run=args.dry_run,
                batch=args.batch,
                on_progress=bar,
                while_running=_stop_on_signals,
            )
        elif holes is not None:
            graded = actions.grade(
                store,
                rubric,
                holes=holes,
                endpoint=endpoint,
                schema=args.schema,
                name=args.name,
                limit=args.limit,
                dry_run=args.dry_run,
                batch=args.batch,
                on_progress=bar,
                while_running=_stop_on_signals,
            )
            if graded.result is None:  # no hole with texts: nothing to ask
                return holes_text(graded.holes, 0, 0, args.dry_run) + "\n", None, 0
            assert isinstance(graded.result, LLMResult)  # an endpoint: the LLM judge's result
            text, fingerprint, code = _llm_text(
                store, args, rubric, graded.result, endpoint.model, prices, bar
            )
            return text + _holes_line(store, graded.holes, graded.result, args), fingerprint, code
        else:
            result = actions.grade(
                store,
                rubric,
                endpoint=endpoint,
                schema=args.schema,
                name=args.name,
                limit=args.limit,
                dry_run=args.dry_run,
                batch=args.batch,
                on_progress=bar,
                while_running=_stop_on_signals,
            )
    except EndpointRefused as exc:
        raise UsageError(str(exc)) from None
    except NothingToJudge as exc:
        raise UsageError(str(exc)) from None
    return _llm_text(store, args, rubric, result, endpoint.model, prices, bar, summary)


def _llm_text(
    store: Store,
    args: argparse.Namespace,
    rubric: str,
    result: LLMResult,
    model: str,
    prices: Prices,
    bar: ProgressLine,
    summary: PairSummary | None = None,
) -> tuple[str, str | None, int]:
    """An LLM run said: its batch, its plan (a dry run) or what it did, and the exit code."""
    endpoint_model = model
    plan = result.plan
    if result.submitted is not None:  # --batch
        return submitted_text(store, plan, result.submitted, endpoint_model), None, 0
    progress = result.progress
    if progress is None:  # --dry-run: the plan, no call
        who = judge_name(plan, endpoint_model, rubric)
        text = plan_text(plan, prices, endpoint_model, batch=args.batch)
        return f"{who}: {text}; no call made\n", plan.fingerprint, 0
    bar(progress, final=True)
    who = judge_name(plan, endpoint_model, rubric)  # registered now: its version is no longer "new"
    report = f"{who}: {run_text(progress, plan, prices, endpoint_model)}\n"
    if progress.stopped:
        left = progress.total - progress.done + progress.unanswered
        text = report + f"interrupted: {plural(left, 'call')} left; run the same command again to resume\n"
        return (
            text + (pair_summary_text(summary) + "\n" if summary is not None else ""),
            plan.fingerprint,
            130,
        )
    mark = agreement_mark(store, {"fingerprint": plan.fingerprint, "settings": plan.settings})
    text = report + mark + "\n"
    if summary is not None:
        text += pair_summary_text(summary) + "\n"
    return text, plan.fingerprint, 0


def _holes_line(
    store: Store, found: HoleItems, result: LLMResult | OfflineReport, args: argparse.Namespace
) -> str:
    """``grade --holes``: the holes graded by this judge (now and before) of all the holes."""
    if args.dry_run:
        return holes_text(found, 0, 0, dry_run=True) + "\n"
    ids = set(found.item_ids)
    if isinstance(result, LLMResult):
        graded = _graded(store, result.plan.fingerprint, ids)
        before = len(ids & {item for item, _, _ in result.plan.done})
    else:  # the offline judge: it says what it graded now
        graded = _graded(store, result["fingerprint"], ids)
        before = graded - result["graded"]
    return holes_text(found, graded - before, before) + "\n"


def _graded(store: Store, fingerprint: str, ids: set[int]) -> int:
    """How many of ``ids`` the judge ``fingerprint`` has a grade of."""
    return len(ids & {item for item, _, _ in store.judge_done(fingerprint)})


# What the closing agreement line imports (the review, and the policy file's reader: numpy, pyarrow
# and yaml, ~0.3 s of CPU), loaded while the calls wait on the endpoint (#42, item 5)
AFTER_THE_RUN = ("calibration.gate", "calibration.review")
PRELOAD_AFTER = 0.1  # seconds into the run: the first calls are on their way


def _import_sdk() -> None:
    # no collection while the SDK makes its ~100,000 objects, which all live to the exit: a tenth of
    # its import's CPU (0.31-0.32 s against 0.35-0.37 s, #42)
    collecting = gc.isenabled()
    gc.disable()
    try:
        importlib.import_module("openai")
        # the SDK's models and the rest of the start-up's objects live to the exit: frozen, the run's
        # full collections (one or two in 2,000 calls, each walking them all) skip them (#42)
        gc.freeze()
    except ImportError:  # the client imports it again, and says what failed
        pass
    finally:
        if collecting:
            gc.enable()


def _preload() -> None:
    for module in AFTER_THE_RUN:
        try:
            importlib.import_module(module)
        except ImportError:  # the line after the run imports it again, and says what failed
            return


@contextmanager
def _stop_on_signals(llm: LLMRun) -> Iterator[None]:
    """Ctrl-C or SIGTERM while a run asks: the first starts no new call and gives the calls in flight
    a grace; the second abandons them (KeyboardInterrupt, which the action reads as stopped). The
    modules of the line after the run are imported meanwhile, in a thread (:data:`AFTER_THE_RUN`); the
    SDK (0.8 s of CPU) starts loading in a thread as the judge is registered, only when calls are left
    (a run with every call done, the resume of a finished job, never loads it)."""
    if llm.plan.left:
        threading.Thread(target=_import_sdk, daemon=True).start()
    preload = threading.Timer(PRELOAD_AFTER, _preload)
    preload.daemon = True
    preload.start()
    try:
        with _signals_stop(llm):
            yield
    finally:
        preload.cancel()  # a run shorter than PRELOAD_AFTER: the line imports them itself
        preload.join()


@contextmanager
def _signals_stop(llm: LLMRun) -> Iterator[None]:
    interrupts: list[int] = []

    def on_signal(signum: int, frame: FrameType | None) -> None:
        interrupts.append(signum)
        if len(interrupts) > 1:
            raise KeyboardInterrupt
        sys.stderr.write(
            f"\nstopping: no new call, no retry; the calls in flight have {STOP_GRACE:g} s to answer, "
            "then are stored as not answered (Ctrl-C again to abandon them now)\n"
        )
        sys.stderr.flush()
        llm.stop()

    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def submitted_text(store: Store, plan: Plan, done: Submitted, model: str) -> str:
    """``grade|compare --batch``: the batch submitted, or nothing left to ask."""
    who = judge_name(plan, model, plan.settings["rubric"])
    if done.batch_id is None:
        return f"{who}: nothing left to ask ({plan.already_done} of {plan.total} already done); no batch submitted\n"
    return (
        f"{who}: batch {done.batch_id} submitted: {plural(done.lines, 'request')} "
        f"({plan.already_done} of {plan.total} already done), {done.status}\n"
        f"collect it with: python -m judge batch collect {done.batch_id} --db {store.path}\n"
    )


def _batch_url(args: argparse.Namespace) -> str:
    _check_env_url(args)
    url = args.base_url or os.environ.get("OPENAI_BASE_URL")
    if not url:
        raise UsageError("no endpoint: pass --base-url URL (or set OPENAI_BASE_URL)")
    return url.rstrip("/")


def run_batch(args: argparse.Namespace) -> str:
    """``batch status ID`` and ``batch collect ID``."""
    url = _batch_url(args)
    if args.batch_command == "status":
        return actions.batch(url, args.batch_id).text() + "\n"
    prices = Prices.load(args.prices)
    with open_store(args.db, "write") as store:
        got = actions.batch(url, args.batch_id, store=store, max_reply_bytes=args.max_reply_bytes)
        if not got.state.ended:
            return f"{got.state.text()}: nothing to collect yet; run the same command again later\n"
        cost = prices.describe(got.model or "", got.tokens_in, got.tokens_out, batch=True)
        text = (
            f"{got.state.text()}: {plural(got.stored, 'row')} stored ({plural(got.values, 'answer')}, "
            f"{plural(got.errors, 'error row')}: asked again next run), {plural(got.already, 'line')} already stored"
            + f"; {got.tokens_in:,} tokens in, {got.tokens_out:,} out, {cost}\n"
        )
        if refused_text(got):
            text += refused_text(got) + "\n"
        if got.state.rubric == "preference" and got.state.fingerprint is not None:  # a judge batch: both set
            text += pair_summary_text(pair_summary(store, got.state.fingerprint)) + "\n"
    return text


def _hole_spec(args: argparse.Namespace) -> HoleSpec | None:
    """``--holes GOLDEN RUN -k K [--corpus FILE]`` read whole before the store is opened: a bad
    file is one line, exit 2, and nothing written."""
    if args.holes is None:
        for given, option in ((args.k, "-k"), (args.corpus, "--corpus")):
            if given is not None:
                raise UsageError(f"python -m judge grade: {option} goes with --holes GOLDEN RUN")
        return None
    if args.rubric != "relevance":
        raise UsageError(
            f"python -m judge grade: --holes goes with --rubric relevance (holes are chunks), not {args.rubric}"
        )
    if args.k is None:
        raise UsageError("python -m judge grade: --holes GOLDEN RUN needs -k K (the cutoff)")
    # start-up: the file readers (pyarrow) and the metrics' scoring, for --holes only
    from annotation.formats.by_extension import read_judgments, read_ranked
    from annotation.formats.records import read_corpus
    from judge.holes import HoleSpec

    golden, run_path = args.holes
    qrels = read_judgments(golden)
    say_notes(qrels.notes)
    run = read_ranked(run_path)
    corpus = {c["id"]: c["text"] for c in read_corpus(args.corpus)} if args.corpus else {}
    spec = HoleSpec(qrels, run, args.k, corpus)
    if not run.query_ids() & set(qrels.grades):
        raise UsageError(f"{run_path} and {golden} share no query: nothing has holes to find")
    return spec


def _refuse_llm_options(args: argparse.Namespace) -> None:
    """The offline judge runs: an option only the LLM judge reads (:data:`judge.cli_args.LLM_ONLY`)
    is a usage error, not ignored."""
    given = llm_only_given(args)
    if not given:
        return
    what = f"{', '.join(given)} {'is' if len(given) == 1 else 'are'} for an LLM judge"
    if args.judge == "lexical":
        raise UsageError(f"{what}, not --judge lexical (the offline judge)")
    raise UsageError(f"{what}: give --base-url (or OPENAI_BASE_URL)")


def run_grade(args: argparse.Namespace) -> tuple[str, int]:
    if args.judge != "lexical":
        _check_env_url(args)
    if _use_lexical(args):
        _refuse_llm_options(args)  # before the store is opened
    holes = _hole_spec(args)
    with open_store(args.db, "read" if args.dry_run else "write") as store:
        if _use_lexical(args):
            if not 0 <= args.seed <= SEED32:
                raise UsageError(
                    f"--seed {args.seed}: the offline judge's seed is an integer from 0 to {SEED32:,}"
                )
            if holes is not None:
                graded = actions.grade(
                    store,
                    args.rubric,
                    holes=holes,
                    seed=args.seed,
                    limit=args.limit,
                    dry_run=args.dry_run,
                    name=args.name,
                )
                if graded.result is None:
                    return holes_text(graded.holes, 0, 0, args.dry_run) + "\n", 0
                assert not isinstance(graded.result, LLMResult)  # no endpoint: the offline judge's report
                text = offline_text(graded.result, args.dry_run) + "\n"
                return text + _holes_line(store, graded.holes, graded.result, args), 0
            report = actions.grade(
                store, args.rubric, seed=args.seed, limit=args.limit, dry_run=args.dry_run, name=args.name
            )
            return offline_text(report, args.dry_run) + "\n", 0
        text, _, code = run_llm(args, args.rubric, store, holes=holes)
    return text, code


def run_compare(args: argparse.Namespace) -> tuple[str, int]:
    _check_env_url(args)
    if _use_lexical(args):
        raise UsageError(
            "the offline judge grades; it does not compare answers: give --base-url (or OPENAI_BASE_URL)"
        )
    with open_store(args.db, "read" if args.dry_run else "write") as store:
        text, _, code = run_llm(args, "preference", store, repeats=args.repeats)
    return text, code


def run_fit(args: argparse.Namespace) -> str:
    with open_store(args.db, "read") as store:
        cv = actions.fit_lexical(store, args.rubric, seed=args.seed)
    return agreement_line(cv) + "\n"


def run_list(args: argparse.Namespace) -> str:
    prices = Prices.load(args.prices)
    with open_store(args.db, "read") as store:
        judges, marks = actions.list_(store)
    if not judges:
        return "no judges yet: python -m judge grade --db DB --rubric relevance\n"
    return judges_text(judge_rows(judges, marks, prices))


COMMANDS: dict[str, Callable[[argparse.Namespace], tuple[str, int]]] = {
    "grade": run_grade,
    "compare": run_compare,
    "batch": lambda args: (run_batch(args), 0),
    "fit-lexical": lambda args: (run_fit(args), 0),
    "list": lambda args: (run_list(args), 0),
}


def run(name: str, args: argparse.Namespace) -> tuple[str, int]:
    """Command ``name`` on ``args``: what it prints and its exit code."""
    return COMMANDS[name](args)
