"""Docs cannot drift: every CLI command and option is in the README."""

from __future__ import annotations

import argparse
import re

import pytest

from annotation.__main__ import build_parser as annotation_parser
from calibration.__main__ import build_parser as calibration_parser
from judge.__main__ import build_parser as judge_parser
from tests.conftest import ROOT

README = (ROOT / "README.md").read_text()
PARSERS = {"calibration": calibration_parser, "annotation": annotation_parser, "judge": judge_parser}


def commands_and_options(parser: argparse.ArgumentParser, prefix: str = "") -> list[tuple[str, list[str]]]:
    """Every command, nested ones too (``annotators add``), with its options."""
    out = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                options = [
                    opt for a in sub._actions for opt in a.option_strings if opt not in ("-h", "--help")
                ]
                out.append((prefix + name, options))
                out.extend(commands_and_options(sub, prefix=f"{prefix}{name} "))
    return out


CASES = [
    (module, command, options)
    for module, build in PARSERS.items()
    for command, options in commands_and_options(build())
]


@pytest.mark.parametrize(("module", "command", "options"), CASES)
def test_command_and_options_documented(module: str, command: str, options: list[str]) -> None:
    assert f"python -m {module} {command}" in README
    for option in options:
        assert re.search(rf"`{re.escape(option)}[ `]", README), (
            f"{option} of `{module} {command}` missing from README"
        )


def test_two_commands_come_first() -> None:
    first_block = README.split("```", 2)[1]
    assert "make run" in first_block and "make test" in first_block
    assert README.index("make run") < README.index("##")


def test_ci_calls_make_test() -> None:
    assert "make test" in (ROOT / ".ci" / "run").read_text()
