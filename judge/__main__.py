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

import gc

from annotation.quiet_start import exit_with, quiet_interrupt_until_main

if __name__ == "__main__":  # Ctrl-C while the modules below import: one line, exit 130
    quiet_interrupt_until_main()
    # a young-object collection every 10,000 allocations, not 700: the imports (the SDK's models,
    # numpy) and a run's calls make millions of objects that live to the exit or die by
    # their count; 0.1-0.15 s of CPU less in the SDK's import, 0.1 s in 2,000 calls (#42)
    gc.set_threshold(10_000, 10, 10)

import argparse
from collections.abc import Callable, Sequence

from annotation.cli_base import lazy_commands, one_blas_thread, run_main
from judge.cli_args import build_parser

__all__ = ["COMMANDS", "build_parser", "main"]

NAMES = ("grade", "compare", "fit-lexical", "batch", "list")


COMMANDS: dict[str, Callable[[argparse.Namespace], tuple[str, int]]] = lazy_commands(
    "judge.commands_cli", NAMES
)


# the commands that multiply no matrices (the closing line's agreement is a K x K table), asked
# for one BLAS thread (annotation.cli_base.one_blas_thread); the offline judge's fit is
# scikit-learn's, left as the user set it
ONE_BLAS_THREAD = ("grade", "compare", "batch", "list")


def main(argv: Sequence[str] | None = None) -> int:
    return run_main(build_parser(), _dispatch, argv)


def _dispatch(args: argparse.Namespace) -> tuple[str, int]:
    if args.command in ONE_BLAS_THREAD:
        one_blas_thread()
    return COMMANDS[args.command](args)


if __name__ == "__main__":
    exit_with(main)
