"""Ctrl-C before a command line's modules are imported: ``python -m GROUP`` installs this first
(standard library only, nothing else imported, so the window before it is the interpreter's own
start-up), and :func:`annotation.cli_base.run_main` hands Ctrl-C back to Python once the
imports are done."""

import gc
import os
import signal
import sys
from collections.abc import Callable

INTERRUPTED = 130  # a shell's 128 + SIGINT
INTERRUPTED_LINE = "error: interrupted; nothing half-written (run the same command again)"


def _handler(signum: int, frame: object) -> None:
    os.write(2, (INTERRUPTED_LINE + "\n").encode())
    os._exit(INTERRUPTED)  # nothing has been written yet: only imports were running


def quiet_interrupt_until_main() -> None:
    """Ctrl-C while the command's modules are still importing (before ``run_main`` can catch
    it) is the same one line and exit 130, not a traceback."""
    signal.signal(signal.SIGINT, _handler)


def exit_with(main: Callable[[], int]) -> None:
    """Run ``main`` as ``python -m GROUP`` does and exit with its code. A KeyboardInterrupt that
    escapes it anyway is the same one line and 130; once it has answered, a Ctrl-C while the
    interpreter shuts down changes nothing (Python would otherwise end the process by SIGINT after
    a complete run, with no word and no exit code of ours). The shutdown skips the garbage
    collector's walk of the objects left (``gc.freeze``)."""
    try:
        code = main()
    except KeyboardInterrupt:
        os.write(2, (INTERRUPTED_LINE + "\n").encode())
        code = INTERRUPTED
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if _pressed[0] or code == INTERRUPTED:
        # interrupted: every store is closed (context managers), nothing is left to write. A Ctrl-C
        # that landed in an extension module's import can leave CPython's private "unhandled
        # KeyboardInterrupt" mark set, and its shutdown would then end the process by SIGINT
        # (exit -2) after our line; leave without that shutdown
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
        os._exit(code)
    # the shutdown's collections would walk every object the imports made (the SDK's models, numpy,
    # pyarrow: 0.2-0.35 s of a judge run's exit, #42); frozen, they are skipped. Objects are still
    # freed as their references go, atexit handlers and the streams' flush still run
    gc.freeze()
    sys.exit(code)


_pressed = [False]


def on_interrupt(signum: int, frame: object) -> None:
    """Ctrl-C while a command runs: a KeyboardInterrupt (the command's code and the boundary
    handle it), remembered (:func:`was_interrupted`: a library may turn it into another error,
    as an extension module's import does into ``ImportError: initialization failed``); a second
    Ctrl-C ends the process at once, with the same line."""
    if _pressed[0]:
        os.write(2, (INTERRUPTED_LINE + "\n").encode())
        os._exit(INTERRUPTED)
    _pressed[0] = True
    raise KeyboardInterrupt


def was_interrupted(reset: bool = False) -> bool:
    """Whether Ctrl-C was pressed since the command started (``reset``: forget it, a new one starts)."""
    pressed = _pressed[0]
    if reset:
        _pressed[0] = False
    return pressed
