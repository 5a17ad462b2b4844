"""``python -m denominator``: the same as the ``denominator`` command."""

from annotation.quiet_start import exit_with
from denominator.cli import main

exit_with(main)
