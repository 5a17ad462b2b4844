"""Shared test setup: make the repository's packages importable however pytest is started."""

import sys
from pathlib import Path

import pytest

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


# Figures the load and crash tests measure (rows written and stored, errors, calls
# repeated): printed at the end of every run, so `make test` itself reports them.
FIGURES: list[str] = []


@pytest.fixture
def figure():
    """``figure("...")`` records a measured figure for the end-of-run summary."""
    return FIGURES.append


def pytest_terminal_summary(terminalreporter) -> None:
    if FIGURES:
        terminalreporter.section("figures measured by the tests")
        for line in FIGURES:
            terminalreporter.write_line(line)
