"""``python -m denominator``: the same as the ``denominator`` command."""

import sys

from denominator.cli import main

sys.exit(main())
