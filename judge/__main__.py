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

import argparse
import math
import os
import resource
import signal
import sys
import time
from collections.abc import Sequence
from typing import TextIO

from annotation.cli_base import OneLineParser, UsageError, add_db_option, open_store, plural
from annotation.store import Store, StoreError
from judge.batch import BatchError, batch_state, collect_batch, submit_batch
from judge.client import MAX_REPLY_BYTES, MAX_RETRY_AFTER, Endpoint, EndpointRefused, InvalidPrices, Prices
from judge.jobs import (
    LLMRun,
    agreement_line,
    agreement_mark,
    grade_offline,
    llm_calls,
    pair_summary,
    pair_summary_text,
    plan_llm,
)
from judge.prompts import SCHEMA_MODES
from judge.report import judge_name, judge_rows, judges_text, offline_text, plan_text, run_text
from judge.runner import STOP_GRACE, Call, Progress

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
    args: argparse.Namespace, rubric: str, calls: list[Call], store: Store, repeats: int = 1
) -> tuple[str, str | None, int]:
    """(report, fingerprint, exit code) of an LLM judge run over ``calls`` x ``repeats``."""
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
    plan = plan_llm(store, rubric, calls, endpoint, args.schema, name=args.name, repeats=repeats)
    who = judge_name(plan, endpoint.model, rubric)
    if args.dry_run:
        text = plan_text(plan, prices, endpoint.model, batch=args.batch)
        return f"{who}: {text}; no call made\n", plan.fingerprint, 0
    if args.batch:
        return run_submit(store, plan, endpoint, args.schema), None, 0
    bar = ProgressLine(prices, endpoint.model)
    llm = LLMRun(store.location, plan, endpoint, args.schema, on_progress=bar)
    interrupts = []

    def on_signal(signum, frame) -> None:  # first: a grace for the calls in flight; second: abandon them
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
        progress = llm.run()
    except KeyboardInterrupt:
        progress = llm.progress
        progress.stopped = True
    except EndpointRefused as exc:
        raise UsageError(str(exc)) from None
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    bar(progress, final=True)
    who = judge_name(plan, endpoint.model, rubric)  # registered now: its version is no longer "new"
    report = f"{who}: {run_text(progress, plan, prices, endpoint.model)}\n"
    if progress.stopped:
        left = progress.total - progress.done + progress.unanswered
        return (
            report + f"interrupted: {plural(left, 'call')} left; run the same command again to resume\n",
            plan.fingerprint,
            130,
        )
    mark = agreement_mark(store, {"fingerprint": plan.fingerprint, "settings": plan.settings})
    return report + mark + "\n", plan.fingerprint, 0


def run_submit(store: Store, plan, endpoint: Endpoint, schema: str) -> str:
    """``grade|compare --batch``: the calls left submitted as one batch."""
    done = submit_batch(store, plan, endpoint, schema)
    who = judge_name(plan, endpoint.model, plan.settings["rubric"])
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
        return batch_state(url, args.batch_id).text() + "\n"
    prices = Prices.load(args.prices)
    with open_store(args.db, "write") as store:
        got = collect_batch(store, url, args.batch_id)
        if not got.state.ended:
            return f"{got.state.text()}: nothing to collect yet; run the same command again later\n"
        cost = prices.describe(got.model or "", got.tokens_in, got.tokens_out, batch=True)
        text = (
            f"{got.state.text()}: {plural(got.stored, 'row')} stored ({plural(got.values, 'answer')}, "
            f"{plural(got.errors, 'error row')}: asked again next run), {plural(got.already, 'line')} already stored"
            + (f", {got.unknown} lines not of this judge left out" if got.unknown else "")
            + f"; {got.tokens_in:,} tokens in, {got.tokens_out:,} out, {cost}\n"
        )
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
            text = run_lexical(
                store, args.rubric, seed=args.seed, limit=args.limit, dry_run=args.dry_run, name=args.name
            )
            return text, 0
        calls = llm_calls(store, args.rubric, limit=args.limit)
        if not calls:
            raise UsageError(f"no items to grade for {args.rubric}")
        text, _, code = run_llm(args, args.rubric, calls, store)
    return text, code


def run_compare(args: argparse.Namespace) -> tuple[str, int]:
    if _use_lexical(args):
        raise UsageError(
            "the offline judge grades; it does not compare answers: give --base-url (or OPENAI_BASE_URL)"
        )
    with open_store(args.db, "read" if args.dry_run else "write") as store:
        calls = llm_calls(store, "preference", limit=args.limit)  # each order once; the plan repeats them
        if not calls:
            raise UsageError("no answer pairs to compare (python -m annotation demo builds some)")
        text, fp, code = run_llm(args, "preference", calls, store, repeats=args.repeats)
        if args.dry_run or fp is None:
            return text, code
        summary = pair_summary(store, fp)
    return text + pair_summary_text(summary) + "\n", code


def run_lexical(
    store: Store,
    rubric: str,
    seed: int = 0,
    limit: int | None = None,
    dry_run: bool = False,
    name: str | None = None,
) -> str:
    report = grade_offline(store, rubric, seed=seed, limit=limit, dry_run=dry_run, name=name)
    return offline_text(report, dry_run) + "\n"


def run_fit(args: argparse.Namespace) -> str:
    from judge.lexical import cross_validate, training_data  # start-up: scikit-learn, ~1.1 s

    with open_store(args.db, "read") as store:
        data = training_data(store, args.rubric)
    cv = cross_validate(
        [r[1] for r in data], [r[2] for r in data], [r[3] for r in data], args.rubric, seed=args.seed
    )
    return agreement_line(cv) + "\n"


def run_list(args: argparse.Namespace) -> str:
    prices = Prices.load(args.prices)
    with open_store(args.db, "read") as store:
        judges = store.judges()
        marks = {j["fingerprint"]: agreement_mark(store, j) for j in judges}
    if not judges:
        return "no judges yet: python -m judge grade --db DB --rubric relevance\n"
    return judges_text(judge_rows(judges, marks, prices))


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    code = 0
    try:
        args = parser.parse_args(argv)
        if args.command == "grade":
            text, code = run_grade(args)
        elif args.command == "compare":
            text, code = run_compare(args)
        elif args.command == "batch":
            text = run_batch(args)
        elif args.command == "fit-lexical":
            text = run_fit(args)
        else:
            text = run_list(args)
    except (UsageError, StoreError, EndpointRefused, InvalidPrices, BatchError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except ValueError as exc:  # the offline judge's NotEnoughLabels (imported only when it runs)
        if type(exc).__name__ != "NotEnoughLabels":
            raise
        print(f"error: {exc}", file=sys.stderr)
        return 2
    sys.stdout.write(text)
    return code


if __name__ == "__main__":
    sys.exit(main())
