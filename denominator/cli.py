"""``denominator``: one command for the three command lines (``pip install .`` puts it on PATH).

    denominator annotation ...   the label store: import, export, pool, baseline, annotators, demo
    denominator judge ...        the judge: grade, compare, fit-lexical, list
    denominator calibration ...  metrics, audit, compare, agree, position, ppi, review

``denominator GROUP ARGS`` is ``python -m GROUP ARGS``: the same options, output and exit
codes (0 success, 1 a gate failed, 2 bad usage or input, 130 interrupted).
"""

from __future__ import annotations

import importlib
import signal
import sys
from collections.abc import Sequence

from annotation.quiet_start import quiet_interrupt_until_main

GROUPS = {
    "annotation": "the label store: import, export, pool, baseline, annotators, demo",
    "judge": "the judge: grade, compare, fit-lexical, list",
    "calibration": "metrics, audit, compare, agree, position, ppi, review",
}


def usage() -> str:
    lines = ["usage: denominator {annotation,judge,calibration} ...", "", "commands:"]
    lines += [f"  {name:<12} {text}" for name, text in GROUPS.items()]
    lines += ["", "denominator GROUP --help lists a group's commands and options."]
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    if argv is None:  # the installed command: Ctrl-C while the group's modules import is one line
        quiet_interrupt_until_main()
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help"):
        sys.stdout.write(usage())
        return 0
    group, rest = args[0], args[1:]
    if group not in GROUPS:
        print(
            f"error: denominator: unknown command {group!r}; expected one of {', '.join(GROUPS)}",
            file=sys.stderr,
        )
        return 2
    # each group's CLI is imported only when it runs: the others' start-up costs are not paid
    cli = importlib.import_module(f"{group}.__main__")
    code = cli.main(rest)
    if argv is None:  # the installed command has answered: a Ctrl-C while Python shuts down changes nothing
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    return code


if __name__ == "__main__":
    sys.exit(main())
