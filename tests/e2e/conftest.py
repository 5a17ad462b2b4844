"""Browser-test fixtures: Debian's Chromium, never a downloaded browser."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

CHROMIUM = Path("/usr/bin/chromium")
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def chromium() -> Path:
    if not CHROMIUM.exists():
        message = f"{CHROMIUM} is missing (apt-get install chromium)"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    return CHROMIUM


@pytest.fixture(scope="module")
def demo_db(tmp_path_factory) -> Path:
    """`make run`'s demo database, built the same way."""
    path = tmp_path_factory.mktemp("demo") / "demo.db"
    subprocess.run([sys.executable, "-m", "annotation", "demo", "--db", str(path)], cwd=ROOT, check=True)
    return path
