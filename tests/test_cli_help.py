"""Every ``--help`` is written for people (issue #16, build 8): no raw reStructuredText markup
(````python -m calibration````) carried over from a docstring, and no "1 runs"-style plural, in
the help of each module, each command and each nested command."""

from __future__ import annotations

import argparse
import re

import pytest

from annotation.__main__ import build_parser as annotation_parser
from calibration.__main__ import build_parser as calibration_parser
from judge.__main__ import build_parser as judge_parser

PARSERS = {"annotation": annotation_parser, "calibration": calibration_parser, "judge": judge_parser}
# "1 <word>s" where the word is a plural noun; singular words that end in s are listed
SINGULAR_S = {"is", "was", "has", "does", "process", "class", "analysis", "bias", "kappas"}
ONE_PLURAL = re.compile(r"\b1 ([a-z]+s)\b")


def helps(parser: argparse.ArgumentParser, prefix: str) -> list[tuple[str, str]]:
    """(command line, its help text) of the parser and every command under it."""
    out = [(prefix, parser.format_help())]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                out.extend(helps(sub, f"{prefix} {name}"))
    return out


CASES = [case for module, build in PARSERS.items() for case in helps(build(), f"python -m {module}")]


def test_every_command_is_walked() -> None:
    names = {command for command, _ in CASES}
    assert {
        "python -m annotation imports retire",
        "python -m calibration review",
        "python -m judge grade",
    } <= names
    assert len(CASES) >= 25


@pytest.mark.parametrize(("command", "text"), CASES, ids=[c for c, _ in CASES])
def test_help_is_written_for_people(command: str, text: str) -> None:
    assert "``" not in text, f"{command} --help shows raw markup"
    wrong = [m.group(0) for m in ONE_PLURAL.finditer(text) if m.group(1) not in SINGULAR_S]
    assert not wrong, f"{command} --help: {wrong}"


def test_the_checks_catch_what_they_are_for() -> None:
    """The two checks fail on the texts the issue quoted."""
    assert "``" in "``python -m calibration``: retrieval metrics"
    assert [m.group(0) for m in ONE_PLURAL.finditer("scored 1 runs over 3 queries")] == ["1 runs"]


def _commands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    return next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices


@pytest.mark.parametrize("command", list(_commands(calibration_parser())))
def test_a_command_line_parses_the_same_with_its_command_alone(command: str) -> None:
    """``python -m calibration COMMAND ...`` builds that command's parser alone (#42): its help, its
    arguments and its defaults are the whole parser's; a word that is no command gets them all."""
    whole, alone = _commands(calibration_parser()), _commands(calibration_parser(command))
    assert list(alone) == [command]
    assert alone[command].format_help() == whole[command].format_help()

    def arguments(parser: argparse.ArgumentParser) -> list[dict[str, object]]:
        return [{k: v for k, v in vars(a).items() if k != "container"} for a in parser._actions]

    assert arguments(alone[command]) == arguments(whole[command])
    assert list(_commands(calibration_parser("--help"))) == list(whole)
    assert list(_commands(calibration_parser("metric"))) == list(whole)
