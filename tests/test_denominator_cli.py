"""``denominator``: one command over the three CLIs, installed by ``make`` into .venv."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from denominator.cli import GROUPS, main
from tests.conftest import EXAMPLE, ROOT


def test_help_lists_the_three_groups(capsys) -> None:
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    for group in ("annotation", "judge", "calibration"):
        assert f"  {group} " in out
    assert set(GROUPS) == {"annotation", "judge", "calibration"}


def test_a_group_is_its_python_m_command(capsys) -> None:
    args = [
        "metrics",
        str(EXAMPLE / "golden.yaml"),
        str(EXAMPLE / "run.jsonl"),
        "-k",
        "5",
        "--format",
        "json",
    ]
    assert main(["calibration", *args]) == 0
    through_denominator = capsys.readouterr().out
    from calibration.__main__ import main as calibration_main

    assert calibration_main(args) == 0
    assert capsys.readouterr().out == through_denominator


def test_unknown_group_is_one_line_and_exit_2(capsys) -> None:
    assert main(["metrics"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "unknown command 'metrics'" in err


def test_the_installed_command(tmp_path) -> None:
    """`make` installs the project into .venv: the console script runs from any folder."""
    script = Path(sys.executable).with_name("denominator")
    if not script.exists():
        if os.environ.get("CI") == "true":
            pytest.fail(f"{script} missing: the Makefile must install the project (pip install -e .)")
        pytest.skip("the project is not installed in this interpreter's environment")
    done = subprocess.run(
        [str(script), "calibration", "audit", str(EXAMPLE / "dupe.yaml"), str(EXAMPLE / "dupe.jsonl"), "-k", "5",
         "--fail-on", "duplicates"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 1, done.stderr  # the gate failed: q_dupe repeats d1
    assert "FAILED for q_dupe" in done.stdout
    help_text = subprocess.run(
        [str(script), "--help"], capture_output=True, text=True, timeout=60, cwd=ROOT
    ).stdout
    assert "calibration" in help_text and "judge" in help_text and "annotation" in help_text
