"""One actions module per package whose public functions are that package's CLI commands, every
one of them (issue #24): the command line and the pages call the same function."""

from __future__ import annotations

import argparse
import ast
import importlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def commands(parser: argparse.ArgumentParser) -> set[str]:
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return {name.replace("-", "_") for name in sub.choices}


def public_functions(module: str) -> set[str]:
    tree = ast.parse((ROOT / (module.replace(".", "/") + ".py")).read_text(encoding="utf-8"))
    return {n.name for n in tree.body if isinstance(n, ast.FunctionDef) and not n.name.startswith("_")}


# the commands an actions module does not hold, each with its reason
ELSEWHERE: set[tuple[str, str]] = set()  # none: the demo is `denominator demo`, at the top
# the actions that are a step of a command, which a face also calls on its own (#41: no face reaches
# around the actions for them), each with its command
STEPS = {
    ("calibration", "estimate"): "audit --estimate",
    ("calibration", "record"): "check --record",
    ("calibration", "draw_review_sample"): "review --sample",
    ("calibration", "stored_hole_sample"): "metrics --hole-sample FILE --db DB",
    ("calibration", "evidence"): "metrics --evidence, compare --evidence",
    ("annotation", "sample"): "pool --estimate",
}
PARSERS = {
    "calibration": "calibration.cli_args",
    "annotation": "annotation.__main__",
    "judge": "judge.__main__",
}


@pytest.mark.parametrize("package", ["calibration", "annotation", "judge"])
def test_the_actions_are_the_commands(package: str) -> None:
    parser = importlib.import_module(PARSERS[package]).build_parser()
    actions = importlib.import_module(f"{package}.actions")
    functions = {name.rstrip("_") for name in public_functions(f"{package}.actions")}  # import_: import
    expected = commands(parser) - {name for p, name in ELSEWHERE if p == package}
    expected |= {name for p, name in STEPS if p == package}
    assert functions == expected == {name.rstrip("_") for name in actions.__all__}


def test_the_cli_and_the_pages_call_the_actions() -> None:
    """The faces reach the workflows behind a command only through the actions."""
    behind = {
        *("check_data", "audit_data", "compare_runs", "agree_files", "history_data", "diff_checks"),
        *("holes_data", "filled_data", "compare_filled", "pool_holes", "grade_offline"),
        *("pilot_from_store", "pilot_from_file", "plan_pilots"),
        *("estimate_data", "estimate_run", "record_check", "draw_sample"),
    }
    for face in (
        "calibration/__main__.py",
        "calibration/commands_cli.py",
        "calibration/plan_cli.py",
        "denominator/ui/metrics.py",
        "denominator/ui/check.py",
        "denominator/ui/review.py",
        "denominator/ui/holes.py",
    ):
        tree = ast.parse((ROOT / face).read_text(encoding="utf-8"))
        called = {
            n.func.id if isinstance(n.func, ast.Name) else n.func.attr
            for n in ast.walk(tree)
            if isinstance(n, ast.Call) and isinstance(n.func, (ast.Name, ast.Attribute))
        }
        assert not called & behind, (face, called & behind)
