"""``python -m judge``: the judge from the command line.

    python -m judge grade --db DB --rubric relevance|faithfulness [--judge openai|lexical] [--name NAME] [options]
    python -m judge compare --db DB [--repeats R] [--name NAME] [options]
    python -m judge fit-lexical --db DB --rubric relevance|faithfulness [--seed S]
    python -m judge list --db DB [--prices FILE]

The LLM judge is any OpenAI-compatible endpoint: ``--base-url`` or
``OPENAI_BASE_URL``, the key only from ``OPENAI_API_KEY``. Without an
endpoint the offline (lexical) judge grades. A run stores every answer as it
comes and skips what an earlier run did: run the same command again to
resume. A judge has a name (``--name``; default MODEL/RUBRIC, or
offline-lexical/RUBRIC for the offline judge): a run whose settings are new to
that name (another prompt, temperature or model; the offline judge refitted on
other labels) is its next version. Ctrl-C (or SIGTERM) starts no new call and
ends every retry's wait at once; the calls in flight have 2 s to answer (stored),
then are stored as not answered; a second Ctrl-C abandons them at once. Every
number is bounded (the bound is in the error): ``--timeout`` is a call's whole
deadline, retries included. Exit codes: 0 done, 2 bad usage or input or an
endpoint that refuses, 130 interrupted.
"""

from __future__ import annotations

from annotation.quiet_start import exit_with, quiet_interrupt_until_main

if __name__ == "__main__":  # Ctrl-C while the modules below import: one line, exit 130
    quiet_interrupt_until_main()

import argparse
import math
import os
import resource
import signal
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TextIO

from annotation.cli_base import (
    OneLineParser,
    UsageError,
    add_db_option,
    interrupt_as_usual,
    open_store,
    plural,
    run_main,
)
from annotation.store import Store
from judge import actions
from judge.actions import NothingToJudge
from judge.batch import refused_text
from judge.client import MAX_REPLY_BYTES, MAX_RETRY_AFTER, Endpoint, EndpointRefused, Prices
from judge.jobs import (
    LLMRun,
    agreement_line,
    agreement_mark,
    pair_summary,
    pair_summary_text,
)
from judge.prompts import SCHEMA_MODES
from judge.report import judge_name, judge_rows, judges_text, offline_text, plan_text, run_text
from judge.runner import STOP_GRACE, Progress

INT64 = 2**63 - 1  # what SQLite stores and an endpoint's seed holds
SEED32 = 2**32 - 1  # the offline judge's seed: scikit-learn's random_state
MAX_SECONDS = 86_400.0  # a day: no call waits longer
MAX_REPLY_CAP = 100_000_000  # a reply is held in memory several times over while parsed
MAX_REPEATS = 1_000_000


def _max_concurrency() -> int:
    """A connection (an open file) per call in flight: half the process's open-file limit, at most 1024."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    return max(1, min(1024, soft // 2 if soft != resource.RLIM_INFINITY else 1024))


def bounded_int(low: int, high: int, why: str = ""):
    """An argparse type: an integer from ``low`` to ``high`` (the bound said in the error)."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = None
        if value is None or not low <= value <= high:
            raise argparse.ArgumentTypeError(f"{text!r}: expected an integer from {low:,} to {high:,}{why}")
        return value

    return parse


def bounded_float(low: float, high: float, low_open: bool = False):
    """An argparse type: a finite number from ``low`` (excluded when ``low_open``) to ``high``;
    nan and inf refused."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if not math.isfinite(value) or not (low < value if low_open else low <= value) or value > high:
            span = f"above {low:g} and at most {high:g}" if low_open else f"from {low:g} to {high:g}"
            raise argparse.ArgumentTypeError(f"{text!r}: expected a finite number {span}")
        return value

    return parse


def _add_llm_options(p: argparse.ArgumentParser) -> None:
    add_db_option(p)
    p.add_argument(
        "--judge",
        choices=["openai", "lexical"],
        default=None,
        help="openai: an OpenAI-compatible endpoint; lexical: the offline judge "
        "(default: openai when --base-url or OPENAI_BASE_URL is set, else lexical)",
    )
    p.add_argument(
        "--name",
        help="the judge's name (default: MODEL/RUBRIC, or offline-lexical/RUBRIC for the offline judge); "
        "new settings under a name are its next version",
    )
    p.add_argument("--model", help="the model name the endpoint serves (or OPENAI_MODEL)")
    p.add_argument("--base-url", help="the endpoint, e.g. http://127.0.0.1:8000/v1 (or OPENAI_BASE_URL)")
    most = _max_concurrency()
    p.add_argument(
        "--concurrency",
        type=bounded_int(1, most, " (a connection each; half this process's open-file limit, at most 1024)"),
        default=min(8, most),
        help=f"calls at once (default 8, at most {most})",
    )
    p.add_argument(
        "--limit",
        type=bounded_int(1, INT64),
        default=None,
        metavar="N",
        help="only the first N items (N >= 1)",
    )
    p.add_argument("--dry-run", action="store_true", help="say how many calls, tokens and cost; make none")
    p.add_argument(
        "--schema",
        choices=SCHEMA_MODES,
        default="json_schema",
        help="how the JSON reply is requested: json_schema (default), json_object, or prompt only",
    )
    p.add_argument(
        "--temperature",
        type=bounded_float(0.0, 2.0),
        default=0.0,
        help="sampling temperature, 0 to 2 (default 0)",
    )
    p.add_argument(
        "--seed",
        type=bounded_int(-(2**63), INT64, " (a 64-bit integer)"),
        default=0,
        help="sampling seed sent to the endpoint (default 0; the offline judge's: 0 to 4294967295)",
    )
    p.add_argument(
        "--timeout",
        type=bounded_float(0.0, MAX_SECONDS, low_open=True),
        default=60.0,
        help="seconds a call may take in all: connect, every read, retries and their waits (default 60)",
    )
    p.add_argument(
        "--max-retry-after",
        type=bounded_float(0.0, MAX_SECONDS),
        default=MAX_RETRY_AFTER,
        metavar="S",
        help=f"the longest Retry-After honoured; a longer one makes the call an error row (default {MAX_RETRY_AFTER:g})",
    )
    p.add_argument(
        "--max-reply-bytes",
        type=bounded_int(1024, MAX_REPLY_CAP),
        default=MAX_REPLY_BYTES,
        metavar="N",
        help=f"the largest reply read; a longer one is an error row with its first KB (default {MAX_REPLY_BYTES:,})",
    )
    p.add_argument("--prices", metavar="FILE", help='JSON {"model": {"input": $/1M, "output": $/1M}}')
    p.add_argument(
        "--batch",
        action="store_true",
        help="submit the calls left as an OpenAI Batch API job and return at once with its id "
        "(collect with: python -m judge batch collect ID)",
    )


DESCRIPTION = (
    "The judge: grade items or compare answer pairs with an LLM behind any OpenAI-compatible "
    "endpoint, or with the offline judge fitted on people's labels; list every judge and its cost."
)


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog="python -m judge", description=DESCRIPTION)
    sub = parser.add_subparsers(dest="command", required=True, parser_class=OneLineParser)
    grade = sub.add_parser(
        "grade", help="grade every item of a rubric: relevance (chunks) or faithfulness (traces)"
    )
    grade.add_argument("--rubric", choices=["relevance", "faithfulness"], required=True)
    _add_llm_options(grade)
    compare = sub.add_parser("compare", help="compare every answer pair, in both orders")
    compare.add_argument(
        "--repeats",
        type=bounded_int(1, MAX_REPEATS),
        default=1,
        metavar="R",
        help=f"ask each order R times (default 1, at most {MAX_REPEATS:,})",
    )
    _add_llm_options(compare)
    fit = sub.add_parser(
        "fit-lexical", help="fit the offline judge on the human labels; its agreement with people"
    )
    add_db_option(fit)
    fit.add_argument("--rubric", choices=["relevance", "faithfulness"], required=True)
    fit.add_argument(
        "--seed",
        type=bounded_int(0, SEED32, " (scikit-learn's seed)"),
        default=0,
        help="seed of the folds and the model (default 0)",
    )
    batch = sub.add_parser("batch", help="a batch submitted with --batch: its status, or collect its answers")
    batch_sub = batch.add_subparsers(dest="batch_command", required=True, parser_class=OneLineParser)
    status = batch_sub.add_parser("status", help="a batch's status and counts")
    collect = batch_sub.add_parser("collect", help="store a finished batch's answers as a live run would")
    for p in (status, collect):
        p.add_argument("batch_id", metavar="ID", help="the batch id printed by --batch")
        p.add_argument("--base-url", help="the endpoint the batch was submitted to (or OPENAI_BASE_URL)")
    add_db_option(collect)
    collect.add_argument("--prices", metavar="FILE", help='JSON {"model": {"input": $/1M, "output": $/1M}}')
    collect.add_argument(
        "--max-reply-bytes",
        type=bounded_int(1024, MAX_REPLY_CAP),
        default=MAX_REPLY_BYTES,
        metavar="N",
        help="the longest line of the batch's files stored; a longer one is counted and left out, and a file is "
        f"read no further than N times the calls submitted (default {MAX_REPLY_BYTES:,}, a live reply's limit)",
    )
    listing = sub.add_parser("list", help="every judge: fingerprint, labels, errors, tokens, cost")
    add_db_option(listing)
    listing.add_argument("--prices", metavar="FILE", help='JSON {"model": {"input": $/1M, "output": $/1M}}')
    return parser


class ProgressLine:
    """A progress bar on stderr: calls done, errors, tokens, cost, ETA. Redrawn in
    place on a terminal (at most 10 times a second), a line per 10% otherwise."""

    def __init__(self, prices: Prices, model: str, stream: TextIO = sys.stderr) -> None:
        self.prices, self.model, self.stream = prices, model, stream
        self.tty = stream.isatty()
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
        return args.judge == "lexical"
    return not (args.base_url or os.environ.get("OPENAI_BASE_URL"))


def run_llm(
    args: argparse.Namespace, rubric: str, store: Store, repeats: int = 1
) -> tuple[str, str | None, int]:
    """(report, fingerprint, exit code) of an LLM judge run (:func:`judge.actions.grade` or, for
    preference, :func:`judge.actions.compare`), with this face's progress line and Ctrl-C handling."""
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
    options = dict(
        endpoint=endpoint,
        schema=args.schema,
        name=args.name,
        limit=args.limit,
        dry_run=args.dry_run,
        batch=args.batch,
        on_progress=bar,
        while_running=_stop_on_signals,
    )
    try:
        if rubric == "preference":
            result, summary = actions.compare(store, repeats=repeats, **options)
        else:
            result, summary = actions.grade(store, rubric, **options), None
    except EndpointRefused as exc:
        raise UsageError(str(exc)) from None
    except NothingToJudge as exc:
        raise UsageError(str(exc)) from None
    plan = result.plan
    if args.dry_run:
        who = judge_name(plan, endpoint.model, rubric)
        text = plan_text(plan, prices, endpoint.model, batch=args.batch)
        return f"{who}: {text}; no call made\n", plan.fingerprint, 0
    if args.batch:
        return submitted_text(store, plan, result.submitted, endpoint.model), None, 0
    progress = result.progress
    bar(progress, final=True)
    who = judge_name(plan, endpoint.model, rubric)  # registered now: its version is no longer "new"
    report = f"{who}: {run_text(progress, plan, prices, endpoint.model)}\n"
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


@contextmanager
def _stop_on_signals(llm: LLMRun) -> Iterator[None]:
    """Ctrl-C or SIGTERM while a run asks: the first starts no new call and gives the calls in flight
    a grace; the second abandons them (KeyboardInterrupt, which the action reads as stopped)."""
    interrupts = []

    def on_signal(signum, frame) -> None:
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


def submitted_text(store: Store, plan, done, model: str) -> str:
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
        if got.state.rubric == "preference":
            text += pair_summary_text(pair_summary(store, got.state.fingerprint)) + "\n"
    return text


def run_grade(args: argparse.Namespace) -> tuple[str, int]:
    with open_store(args.db, "read" if args.dry_run else "write") as store:
        if _use_lexical(args):
            if args.batch:
                raise UsageError("--batch is for an LLM judge: give --base-url (or OPENAI_BASE_URL)")
            if not 0 <= args.seed <= SEED32:
                raise UsageError(
                    f"--seed {args.seed}: the offline judge's seed is an integer from 0 to {SEED32:,}"
                )
            report = actions.grade(
                store, args.rubric, seed=args.seed, limit=args.limit, dry_run=args.dry_run, name=args.name
            )
            return offline_text(report, args.dry_run) + "\n", 0
        text, _, code = run_llm(args, args.rubric, store)
    return text, code


def run_compare(args: argparse.Namespace) -> tuple[str, int]:
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


def main(argv: Sequence[str] | None = None) -> int:
    interrupt_as_usual()
    return run_main(build_parser(), lambda args: COMMANDS[args.command](args), argv)


if __name__ == "__main__":
    exit_with(main)
