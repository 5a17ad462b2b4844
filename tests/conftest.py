"""Shared test setup: make the repository's packages importable however pytest is started."""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def shared_dir() -> Path | None:
    """The shared folder beside the checkout (../shared), or where this
    workplace keeps it; DENOMINATOR_SHARED overrides both."""
    import os

    candidates = [os.environ.get("DENOMINATOR_SHARED"), ROOT.parent / "shared", "/work/shared"]
    for candidate in candidates:
        if candidate and (Path(candidate) / "data").is_dir():
            return Path(candidate)
    return None
