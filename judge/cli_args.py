"""The parser of ``python -m judge``: every command and option, from light modules only (the
bounds in :mod:`judge.limits`, the reply modes in :mod:`judge.prompts`), so ``--help`` and a
mistyped option answer without loading openai, numpy or the store; the commands are in
:mod:`judge.commands_cli`, imported once a command runs (#27)."""

from __future__ import annotations

import argparse

from annotation.cli_base import OneLineParser, add_db_option
from annotation.options import add_option
from annotation.values import batch_id, bounded_float, bounded_int, endpoint_url, small_file
from judge.limits import (
    INT64,
    MAX_REPEATS,
    MAX_REPLY_BYTES,
    MAX_REPLY_CAP,
    MAX_RETRY_AFTER,
    MAX_SECONDS,
    SEED32,
    default_concurrency,
    max_concurrency,
)

__all__ = ["DESCRIPTION", "LLM_ONLY", "build_parser", "bounded_int", "bounded_float", "llm_only_given"]


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
    p.add_argument(
        "--base-url",
        type=endpoint_url,
        help="the endpoint, e.g. http://127.0.0.1:8000/v1 (or OPENAI_BASE_URL)",
    )
    most = max_concurrency()
    add_option(
        p,
        "concurrency",
        type=bounded_int(1, most, " (a connection each; half this process's open-file limit, at most 1024)"),
        default=default_concurrency(),
    )
    p.add_argument(
        "--limit",
        type=bounded_int(1, INT64),
        default=None,
        metavar="N",
        help="only the first N items (N >= 1)",
    )
    p.add_argument("--dry-run", action="store_true", help="say how many calls, tokens and cost; make none")
    add_option(p, "schema")
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
    p.add_argument(
        "--prices", metavar="FILE", type=small_file, help='JSON {"model": {"input": $/1M, "output": $/1M}}'
    )
    p.add_argument(
        "--batch",
        action="store_true",
        help="submit the calls left as an OpenAI Batch API job and return at once with its id "
        "(collect with: python -m judge batch collect ID)",
    )


# the options of grade that only the LLM judge reads (--seed, --limit, --name and --dry-run are the
# offline judge's too): given while the offline judge runs, they would be ignored without a word
LLM_ONLY = (
    "model",
    "base_url",
    "concurrency",
    "schema",
    "temperature",
    "timeout",
    "max_retry_after",
    "max_reply_bytes",
    "prices",
    "batch",
)


def llm_only_given(args: argparse.Namespace) -> list[str]:
    """The flags of :data:`LLM_ONLY` whose value in ``args`` is not their default, in the order
    ``--help`` lists them (a default given on the command line changes nothing, so is not seen)."""
    defaults = argparse.ArgumentParser(add_help=False)
    _add_llm_options(defaults)
    return [
        "--" + dest.replace("_", "-")
        for dest in LLM_ONLY
        if getattr(args, dest, None) != defaults.get_default(dest)
    ]


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
    grade.add_argument(
        "--holes",
        nargs=2,
        metavar=("GOLDEN", "RUN"),
        help="grade only the run's holes: its top-k chunks GOLDEN (golden.yaml or TREC qrels) does not "
        "grade, made chunk items first (assigned to nobody); needs -k and --rubric relevance",
    )
    grade.add_argument(
        "-k", dest="k", type=bounded_int(1, INT64), metavar="K", help="with --holes: the cutoff of the top k"
    )
    grade.add_argument(
        "--corpus",
        metavar="FILE",
        help='with --holes: chunk texts, JSONL {"id", "text"}, for holes whose chunk the store has no text of',
    )
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
        p.add_argument("batch_id", metavar="ID", type=batch_id, help="the batch id printed by --batch")
        p.add_argument(
            "--base-url",
            type=endpoint_url,
            help="the endpoint the batch was submitted to (or OPENAI_BASE_URL)",
        )
    add_db_option(collect)
    collect.add_argument(
        "--prices", metavar="FILE", type=small_file, help='JSON {"model": {"input": $/1M, "output": $/1M}}'
    )
    collect.add_argument(
        "--max-reply-bytes",
        type=bounded_int(1024, MAX_REPLY_CAP),
        default=MAX_REPLY_BYTES,
        metavar="N",
        help="the longest line of the batch's output read; a longer one is its call's error row (asked again next "
        f"run), and a file is read no further than N times the calls sent (default {MAX_REPLY_BYTES:,}, a live "
        "reply's limit)",
    )
    listing = sub.add_parser("list", help="every judge: fingerprint, labels, errors, tokens, cost")
    add_db_option(listing)
    listing.add_argument(
        "--prices", metavar="FILE", type=small_file, help='JSON {"model": {"input": $/1M, "output": $/1M}}'
    )
    return parser
