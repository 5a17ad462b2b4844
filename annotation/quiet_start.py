"""Ctrl-C before a command line's modules are imported: ``python -m GROUP`` installs this first
(standard library only, nothing else imported, so the window before it is the interpreter's own
start-up), and :func:`annotation.cli_base.run_main` hands Ctrl-C back to Python once the
imports are done."""

import os
import signal

INTERRUPTED = 130  # a shell's 128 + SIGINT
INTERRUPTED_LINE = "error: interrupted; nothing half-written (run the same command again)"


def _handler(signum: int, frame: object) -> None:
    os.write(2, (INTERRUPTED_LINE + "\n").encode())
    os._exit(INTERRUPTED)  # nothing has been written yet: only imports were running


def quiet_interrupt_until_main() -> None:
    """Ctrl-C while the command's modules are still importing (before ``run_main`` can catch
    it) is the same one line and exit 130, not a traceback."""
    signal.signal(signal.SIGINT, _handler)
