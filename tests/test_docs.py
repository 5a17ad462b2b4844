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


def layout_section() -> str:
    start = README.index("## Layout\n")
    end = README.find("\n## ", start + 1)
    return README[start : end if end != -1 else len(README)]


def test_the_layout_names_every_module_and_only_modules_that_exist() -> None:
    """The README's layout section, held to the tree (#28): each package's bullet names every
    module of the package by its path in it (a subpackage's ``__init__.py`` by the folder), and
    every module or folder it names exists."""
    bullets = re.split(r"\n- (?=`)", layout_section())
    named: set[str] = set()
    missing = []
    for bullet in bullets:
        head = re.match(r"`([\w.]+)/?`", bullet)
        if not head:
            continue
        package = head.group(1)
        if package not in ("annotation", "calibration", "judge", "denominator"):
            continue
        for token in re.findall(r"`([\w/]+(?:\.py|/))`", bullet[head.end() :]):
            path = ROOT / package / token
            if token.endswith("/"):
                (
                    named.add(f"{package}/{token}__init__.py")
                    if path.is_dir()
                    else missing.append(f"{package}/{token}")
                )
            elif path.is_file():
                named.add(f"{package}/{token}")
            else:
                missing.append(f"{package}/{token}")
    modules = {
        str(path.relative_to(ROOT))
        for package in ("annotation", "calibration", "judge", "denominator")
        for path in (ROOT / package).rglob("*.py")
        if (path.parent != ROOT / package or path.name != "__init__.py")
        and "examples" not in path.relative_to(ROOT).parts  # the demo data's scripts: named as a folder
    }
    assert not missing, f"the layout names what the tree has not: {missing}"
    assert not modules - named, f"the layout leaves out: {sorted(modules - named)}"


@pytest.mark.parametrize("command", ["demo", "serve"])
def test_denominators_own_commands_are_documented(command: str) -> None:
    from denominator import cli

    parser = getattr(cli, f"{command}_parser")()
    options = [opt for a in parser._actions for opt in a.option_strings if opt not in ("-h", "--help")]
    assert f"denominator {command}" in README
    missing = [opt for opt in options if opt not in README]
    assert not missing, f"denominator {command}: {missing} not in the README"
