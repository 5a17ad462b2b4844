"""``denominator``: one command for the three command lines (``pip install .`` puts it on PATH),
and the commands of the product as a whole.

    denominator annotation ...   the label store: import, export, pool, baseline, annotators
    denominator judge ...        the judge: grade, compare, fit-lexical, list
    denominator calibration ...  metrics, audit, compare, agree, position, ppi, review
    denominator demo [--db DB] [--if-empty]   the demo database (``make run`` builds it)

``denominator GROUP ARGS`` is ``python -m GROUP ARGS``: the same options, output and exit
codes (0 success, 1 a gate failed, 2 bad usage or input, 130 interrupted). ``python -m
denominator`` is the same command.
"""

from __future__ import annotations

import argparse
import importlib
import signal
import sys
from collections.abc import Sequence

from annotation.cli_base import OneLineParser, add_db_option, run_main, shown_db
from annotation.quiet_start import quiet_interrupt_until_main

GROUPS = {
    "annotation": "the label store: import, export, pool, baseline, annotators",
    "judge": "the judge: grade, compare, fit-lexical, list",
    "calibration": "metrics, audit, compare, agree, position, ppi, review",
}
COMMANDS = {"demo": "build the demo database: the worked example as a labelling project"}


def usage() -> str:
    lines = ["usage: denominator {annotation,judge,calibration,demo} ...", "", "commands:"]
    lines += [f"  {name:<12} {text}" for name, text in (GROUPS | COMMANDS).items()]
    lines += ["", "denominator GROUP --help lists a group's commands and options."]
    return "\n".join(lines) + "\n"


def demo_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog="denominator demo", description=COMMANDS["demo"])
    add_db_option(parser)
    parser.add_argument(
        "--if-empty",
        action="store_true",
        help="only when the database is missing or holds no data (what make run does)",
    )
    return parser


def run_demo(args: argparse.Namespace) -> tuple[str, int]:
    """The demo into the database; with ``--if-empty`` only when it is missing or holds no data
    (``make run``: a database that holds anything is served as it is)."""
    # start-up: the demo builder loads every package; `denominator --help` and the groups never pay
    from annotation.cli_base import open_store
    from annotation.store import default_db_path
    from annotation.store.base import holds_nothing
    from denominator.demo import build_demo

    path = args.db or default_db_path()
    if args.if_empty and not holds_nothing(path):
        return f"database {shown_db(path)} already holds data: the demo is not added\n", 0
    with open_store(path, "create"):  # said on stderr once the demo is built
        return build_demo(path, with_judge=True), 0


def main(argv: Sequence[str] | None = None) -> int:
    if argv is None:  # the installed command: Ctrl-C while the group's modules import is one line
        quiet_interrupt_until_main()
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help"):
        sys.stdout.write(usage())
        return 0
    group, rest = args[0], args[1:]
    if group == "demo":
        code = run_main(demo_parser(), run_demo, rest)
    elif group in GROUPS:
        # each group's CLI is imported only when it runs: the others' start-up costs are not paid
        code = importlib.import_module(f"{group}.__main__").main(rest)
    else:
        print(
            f"error: denominator: unknown command {group!r}; expected one of {', '.join(GROUPS | COMMANDS)}",
            file=sys.stderr,
        )
        return 2
    if argv is None:  # the installed command has answered: a Ctrl-C while Python shuts down changes nothing
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    return code


if __name__ == "__main__":
    sys.exit(main())
