"""``python -m annotation``: the label store from the command line.

    python -m annotation import [--db DB] [--corpus FILE] [--queries FILE] [--beir DIR]
        [--run FILE --name NAME [--stage fetch|keep]] [--labels FILE --annotator NAME]
    python -m annotation baseline [--db DB] [--method bm25] [--depth 100] [--name bm25-baseline]
    python -m annotation pool [--db DB] [--depth D] [--runs A,B] [--annotators X,Y --overlap SHARE] [--seed S]
    python -m annotation pool [--db DB] --holes FILE [--annotators X,Y --overlap SHARE] [--seed S]
    python -m annotation annotators add NAME --role annotator|admin [--email ADDRESS | --subject SUB] [--db DB]
    python -m annotation annotators map-claim CLAIM=VALUE (--role annotator|admin | --remove) [--by NAME] [--db DB]
    python -m annotation annotators list [--db DB]
    python -m annotation annotators revoke NAME [--db DB]
    python -m annotation handout [--db DB] [--mode open|assigned] [--labels N] [--by NAME]
    python -m annotation guidelines show RUBRIC [--version N] [--db DB]
    python -m annotation guidelines set RUBRIC [--file FILE] [--by NAME] [--db DB]
    python -m annotation export [--db DB] --format FORMAT [--annotator NAME] [--aggregate A]
        [--threshold G] [--judge NAME[@VERSION]|FP] -o PATH    (FORMAT: annotation.exports.FORMATS, e.g.
        golden, qrels, csv, ragas, deepeval, beir, trec, phoenix)
    python -m annotation chunk PATH... --size N [--overlap N] [--by fixed|paragraph] -o CHUNKS.jsonl
    python -m annotation import-chroma QUESTIONS.csv --corpora PATH [--grade G] -o golden.yaml

The database is ``--db``, else ``DENOMINATOR_DB``, else ``./denominator.db`` (what the app
and ``make run`` use too). A command that writes names it on stderr; one that only reads
refuses a missing file (``no such database``) instead of creating it.
Each import lands whole or not at all and prints what it added; importing
the same file again changes nothing. Exit codes: 0 success, 2 bad usage or
input (one line on stderr, nothing written).
"""

from __future__ import annotations

from annotation.quiet_start import exit_with, quiet_interrupt_until_main

if __name__ == "__main__":  # Ctrl-C while the modules below import: one line, exit 130
    quiet_interrupt_until_main()

import argparse
from collections.abc import Callable, Sequence

from annotation.cli_args import build_parser
from annotation.cli_base import lazy_commands, run_main

__all__ = ["COMMANDS", "build_parser", "main"]

NAMES = ("import", "pool", "baseline", "annotators", "handout", "guidelines", "imports", "migrate", "export")


COMMANDS: dict[str, Callable[[argparse.Namespace], str]] = lazy_commands(
    "annotation.commands_cli", NAMES
) | lazy_commands("annotation.spans_cli", ("chunk", "import-chroma"))


def main(argv: Sequence[str] | None = None) -> int:
    return run_main(build_parser(), lambda args: (COMMANDS[args.command](args), 0), argv)


if __name__ == "__main__":
    exit_with(main)
