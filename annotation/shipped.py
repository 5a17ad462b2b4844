"""What ships inside the package (#29): the worked example's files, ``denominator/examples/``
(package data of the wheel), found beside the installed packages, so ``denominator demo`` and the
Metrics page's worked example work from an installed wheel as from the checkout (whose
``examples/`` is a link to the same folder). Paths only: nothing here imports the top package."""

from __future__ import annotations

from pathlib import Path

EXAMPLES = Path(__file__).resolve().parent.parent / "denominator" / "examples"
WORKED_EXAMPLE = EXAMPLES / "worked-example"

__all__ = ["EXAMPLES", "WORKED_EXAMPLE"]
