"""Docs cannot drift: every CLI command and option is in the docs (README.md and docs/*.md, the
text written by hand: docs/cli.md's generated parts are held to the parsers by
``test_the_cli_reference_is_generated``), the Layout page is held to the tree, and the docs site
builds with ``mkdocs build --strict``."""

from __future__ import annotations

import argparse
import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from annotation.__main__ import build_parser as annotation_parser
from calibration.__main__ import build_parser as calibration_parser
from judge.__main__ import build_parser as judge_parser
from tests.conftest import ROOT

README = (ROOT / "README.md").read_text()
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
GENERATED = re.compile(r"<!-- generated: (\w+) -->\n.*?<!-- end generated: \1 -->", re.S)
# what people wrote: the README and every docs page, without the parts docs/gen_reference.py writes
DOCS = "\n".join(GENERATED.sub("", page.read_text(encoding="utf-8")) for page in PAGES)
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
    assert f"python -m {module} {command}" in DOCS
    for option in options:
        assert re.search(rf"`{re.escape(option)}[ `]", DOCS), (
            f"{option} of `{module} {command}` missing from the docs"
        )


def test_two_commands_come_first() -> None:
    first_block = README.split("```", 2)[1]
    assert "make run" in first_block and "make test" in first_block
    assert README.index("make run") < README.index("##")


def test_ci_calls_make_test() -> None:
    assert "make test" in (ROOT / ".ci" / "run").read_text()


def layout_section() -> str:
    """docs/layout.md, the Layout section the README held before the docs site (#29)."""
    return (ROOT / "docs" / "layout.md").read_text(encoding="utf-8")


def test_the_layout_names_every_module_and_only_modules_that_exist() -> None:
    """The docs' layout page, held to the tree (#28): each package's bullet names every
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
    assert f"denominator {command}" in DOCS
    missing = [opt for opt in options if opt not in DOCS]
    assert not missing, f"denominator {command}: {missing} not in the docs"


def gen_reference() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_reference", ROOT / "docs" / "gen_reference.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_cli_reference_is_generated() -> None:
    """docs/cli.md's command and option tables are what docs/gen_reference.py writes from the
    parsers and ``annotation.options.options_markdown()``: a new command, option or help text
    fails here until the page is written anew."""
    page = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    assert page == gen_reference().render(page), (
        "docs/cli.md is out of date: run .venv/bin/python docs/gen_reference.py"
    )
    for title in (
        "python -m calibration metrics",
        "python -m annotation annotators add",
        "judge batch collect",
    ):
        assert title in page
    for name in ("denominator demo", "denominator serve"):
        assert f"### `{name}`" in page


def test_the_api_reference_is_generated() -> None:
    """docs/api.md's reference is every public action's signature, docstring, what it returns and
    raises, and its example (#41, item 7), as docs/gen_reference.py writes it: a new action,
    keyword or docstring fails here until the page is written anew (an action without its raises
    or its example fails the generator itself)."""
    gen = gen_reference()
    page = gen.API_PAGE.read_text(encoding="utf-8")
    assert page == gen.render(page, gen.PAGES[gen.API_PAGE]), (
        "docs/api.md is out of date: run .venv/bin/python docs/gen_reference.py"
    )
    from annotation import actions as annotation_actions
    from calibration import actions as calibration_actions
    from judge import actions as judge_actions

    sections = re.split(r"\n(?=#### )", page.split("<!-- generated: api -->")[1])
    for package, module in (
        ("annotation", annotation_actions),
        ("calibration", calibration_actions),
        ("judge", judge_actions),
    ):
        for name in module.__all__:
            heading = f"#### `{package}.actions.{name}`"
            assert heading in page
            section = next(s for s in sections if s.startswith(heading + "\n"))
            assert "\n**Returns** `" in section and "\n**Raises** `" in section, heading
            assert section.count("```python\n") == 1, f"{heading}: one example"


def test_the_api_pages_examples_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every ``python`` block of docs/api.md runs as written (a signature in the reference is a
    ``py`` block: shown, not run): the hand-written ones each on its own, then the reference's
    setup and, each in a copy of the setup's namespace, every action's example in the page's order
    (#41, item 7). They run in a temporary folder holding a link to the repository's examples/, as
    from the repository's root, with the temporary files (the setup's ``tmp``) under it: nothing
    is written into the checkout."""
    import tempfile

    page = (ROOT / "docs" / "api.md").read_text(encoding="utf-8")
    cut = page.index("<!-- generated: api -->")
    blocks = [
        (page.count("\n", 0, m.start(1)), m.group(1), m.start() > cut)
        for m in re.finditer(r"```python\n(.*?)```", page, re.S)
    ]
    hand = [(line, code) for line, code, generated in blocks if not generated]
    setup, *examples = [(line, code) for line, code, generated in blocks if generated]
    assert len(hand) >= 2
    assert len(examples) == len(gen_reference().api_actions())  # one per action, each run below
    (tmp_path / "examples").symlink_to(ROOT / "examples", target_is_directory=True)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.delenv("DENOMINATOR_DB", raising=False)  # check's store: the examples name theirs

    def run(line: int, code: str, namespace: dict[str, object]) -> None:
        # the block's own lines: a traceback names docs/api.md's line
        exec(compile("\n" * line + code, str(ROOT / "docs" / "api.md"), "exec"), namespace)

    shipped = sorted((ROOT / "examples").rglob("*"))
    for line, code in hand:
        run(line, code, {})
    shared: dict[str, object] = {}
    run(*setup, shared)
    for line, code in examples:
        run(line, code, dict(shared))
    assert sorted((ROOT / "examples").rglob("*")) == shipped  # nothing written beside the examples
    assert Path(str(shared["tmp"])).parent == tmp_path  # the setup's folder: under the test's


def test_the_readme_is_short_and_points_to_the_docs() -> None:
    assert len(README.splitlines()) <= 200
    assert "The reference lives in [docs/](docs/index.md)" in README
    for page in re.findall(r"\]\((docs/[\w.-]+\.md)(?:#[\w-]+)?\)", README):
        assert (ROOT / page).is_file(), page


def test_every_docs_page_is_in_the_site() -> None:
    """Each docs page is in mkdocs.yml's nav (a page left out is a warning, so the build below fails too)."""
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    missing = [p.name for p in PAGES[1:] if f": {p.name}" not in nav]
    assert not missing, missing


def test_the_docs_site_builds_strict(tmp_path: Path) -> None:
    """``mkdocs build --strict``: any warning (a broken link or anchor, a page outside the nav)
    fails the build. mkdocs-material and mkdocs's own search, no other plugin: nothing is fetched."""
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(tmp_path / "site")],
        cwd=ROOT,
        # mkdocs-material's banner about its end of life says nothing about these docs
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    assert not re.search(r"WARNING\s+-", result.stderr), result.stderr
    assert (tmp_path / "site" / "cli" / "index.html").is_file()
