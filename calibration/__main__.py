"""``python -m calibration``: retrieval metrics and the denominator audit.

    python -m calibration metrics QRELS RUN [-k K]... [--min-grade G]
        [--missing drop|zero] [--gain linear|exp] [--format table|json|trec]
    python -m calibration audit QRELS RUN -k K [--fetch-depth D | --fetch-run RUN]
        [--corpus-size N | --corpus FILE] [--truth QRELS] [--min-grade G]
        [--min-judged X] [--stage1-min X] [--fail-on RULE]... [--format table|json]
    python -m calibration check GOLDEN RUN -k K [--fetch-run RUN | --fetch-depth D]
        [--corpus FILE | --corpus-size N] [--db DB] [--policy FILE] [--rule RULE]...
        [--record [--name NAME]] [--format table|json|markdown]
    python -m calibration history [--name NAME] [--db DB] [--format table|json]
    python -m calibration compare QRELS RUN_A RUN_B [-k K]... [--min-grade G]
        [--permutations N] [--seed S] [--format table|json]
    python -m calibration agree LABELS.csv | --qrels A B [--statistic S] [--trusted X] [--format table|json]
    python -m calibration position JUDGMENTS.csv [--format table|json]
    python -m calibration ppi LABELED.csv UNLABELED.csv [--alpha A] [--lam L] [--format table|json]
    python -m calibration review [--db DB] [--week YYYY-Www] [--sample N [--annotators X,Y]]
        [--min-labels N] [--format table|json|markdown|html] [-o FILE]
    python -m calibration plan [--db DB [--judge NAME] | --pairs FILE] [--designs QxM,...]
        [--trusted K] [--min-queries N] [--format table|json]
    python -m calibration project GOLDEN --chunks B.jsonl [--from-chunks A.jsonl] [--docs PATH]...
        [--min-overlap F] [--source evidence|grades] [--format golden|qrels|json] [-o FILE]

Exit codes: 0 success (every gate passed), 1 a gate failed, 2 bad usage or
input (one line on stderr, no traceback).
"""

from __future__ import annotations

from annotation.quiet_start import exit_with, quiet_interrupt_until_main

if __name__ == "__main__":  # Ctrl-C while the modules below import: one line, exit 130
    quiet_interrupt_until_main()

import argparse
import sys
from collections.abc import Callable, Sequence

from annotation.cli_base import lazy_commands, one_blas_thread, run_main
from calibration.cli_args import build_parser

__all__ = ["COMMANDS", "build_parser", "main"]

NAMES = (
    "metrics",
    "holes",
    "audit",
    "check",
    "history",
    "compare",
    "agree",
    "position",
    "ppi",
    "review",
    "plan",
    "project",
)


COMMANDS: dict[str, Callable[[argparse.Namespace], tuple[str, int]]] = (
    lazy_commands("calibration.commands_cli", NAMES)
    | lazy_commands("calibration.plan_cli", ("plan",))
    | lazy_commands("calibration.project_cli", ("project",))
)


# the commands on the metrics engine multiply no matrices, and agree only K x K tables (too small
# for a second thread): one BLAS thread (annotation.cli_base.one_blas_thread)
ONE_BLAS_THREAD = ("metrics", "holes", "audit", "check", "compare", "agree")


def main(argv: Sequence[str] | None = None) -> int:
    words = sys.argv[1:] if argv is None else list(argv)
    return run_main(build_parser(words[0] if words else None), _dispatch, argv)


def _dispatch(args: argparse.Namespace) -> tuple[str, int]:
    if args.command in ONE_BLAS_THREAD:
        one_blas_thread()
    return COMMANDS[args.command](args)


if __name__ == "__main__":
    exit_with(main)
