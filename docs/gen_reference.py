"""Writes the generated parts of docs/cli.md (every command's usage and options, read from the
argparse parsers, and the options table, ``annotation.options.options_markdown()``) and of
docs/api.md (every public action of the three packages: its signature and its docstring).

    .venv/bin/python docs/gen_reference.py           # rewrite the pages' generated parts
    .venv/bin/python docs/gen_reference.py --check   # exit 1 when a page is out of date

Each generated part sits between ``<!-- generated: NAME -->`` and ``<!-- end generated: NAME
-->``; the text around them is written by hand. tests/test_docs.py holds the committed page to
what this script writes.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "cli.md"
API_PAGE = ROOT / "docs" / "api.md"
WIDTH = 100  # the usage lines' width, fixed so the page does not depend on the terminal

if str(ROOT) not in sys.path[:1]:  # this checkout's packages, whatever the venv's editable install says
    sys.path.insert(0, str(ROOT))


def parsers() -> list[tuple[str, argparse.ArgumentParser]]:
    """(title, parser) of every command line, in the order the page lists them."""
    from annotation.__main__ import build_parser as annotation_parser
    from calibration.__main__ import build_parser as calibration_parser
    from denominator.cli import demo_parser, serve_parser
    from judge.__main__ import build_parser as judge_parser

    return [
        ("python -m calibration", calibration_parser()),
        ("python -m annotation", annotation_parser()),
        ("python -m judge", judge_parser()),
        ("denominator demo", demo_parser()),
        ("denominator serve", serve_parser()),
    ]


def commands(
    parser: argparse.ArgumentParser, title: str, summary: str = ""
) -> Iterator[tuple[str, str, argparse.ArgumentParser]]:
    """(command line, its one-line help, its parser) of the parser and every command under it."""
    yield title, summary, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {choice.dest: choice.help or "" for choice in action._choices_actions}
            for name, sub in action.choices.items():
                yield from commands(sub, f"{title} {name}", helps.get(name, ""))


def cell(text: str) -> str:
    """Text for a Markdown table cell: pipes and stars escaped, no HTML."""
    return text.replace("|", "\\|").replace("*", "\\*").replace("<", "&lt;").replace("\n", " ")


def metavar(action: argparse.Action, formatter: argparse.HelpFormatter) -> str:
    """What follows the option: ``FILE``, ``table|json``, ``[N]``, ``FIRST SECOND``."""
    if action.metavar is None and action.choices is not None:
        shown = argparse.Action(action.option_strings, action.dest, nargs=action.nargs)
        shown.metavar = "|".join(str(choice) for choice in action.choices)
        action = shown
    return formatter._format_args(action, action.dest.upper())


def invocation(action: argparse.Action, formatter: argparse.HelpFormatter) -> str:
    """``-o FILE``, ``--output FILE`` in code, a pipe escaped as in every table of the docs (the
    site's hook, docs/hooks.py, shows it plain)."""
    if not action.option_strings:
        return f"`{metavar(action, formatter)}`".replace("|", "\\|")
    if action.nargs == 0:
        return ", ".join(f"`{option}`" for option in action.option_strings)
    shown = metavar(action, formatter).replace("|", "\\|")
    return ", ".join(f"`{option} {shown}`" for option in action.option_strings)


def meaning(action: argparse.Action, formatter: argparse.HelpFormatter) -> str:
    text = formatter._expand_help(action) if action.help else ""
    shown_default = action.default not in (None, False, [], argparse.SUPPRESS)
    if shown_default and action.option_strings and "default" not in text:
        text = f"{text} (default: {action.default})".strip()
    if action.required and action.option_strings:
        text = f"required; {text}" if text else "required"
    return cell(text)


def usage(parser: argparse.ArgumentParser) -> str:
    formatter = argparse.HelpFormatter(parser.prog, width=WIDTH)
    formatter.add_usage(parser.usage, parser._actions, parser._mutually_exclusive_groups, prefix="")
    return formatter.format_help().strip()


def command_section(title: str, summary: str, parser: argparse.ArgumentParser) -> str:
    formatter = argparse.HelpFormatter(parser.prog, width=WIDTH)
    lines = [f"### `{title}`", ""]
    if summary:
        lines += [cell(summary[0].upper() + summary[1:]) + ".", ""]
    lines += ["```text", usage(parser), "```", ""]
    rows = [
        f"| {invocation(a, formatter)} | {meaning(a, formatter)} |"
        for a in parser._actions
        if not isinstance(a, argparse._HelpAction | argparse._SubParsersAction | argparse._VersionAction)
        and a.help != argparse.SUPPRESS
    ]
    if rows:
        lines += ["| argument | meaning |", "|---|---|", *rows, ""]
    return "\n".join(lines)


def commands_markdown() -> str:
    """Every command of every command line: its usage and its arguments, as ``--help`` says them."""
    from denominator.cli import usage as denominator_usage

    sections = []
    for title, parser in parsers():
        if title == "denominator demo":  # the denominator command: its groups, then its own commands
            sections.append(f"## `denominator`\n\n```text\n{denominator_usage().strip()}\n```\n")
        for name, summary, command in commands(parser, title):
            subcommands = any(isinstance(a, argparse._SubParsersAction) for a in command._actions)
            if subcommands and name == title:  # the group itself: its usage lists the commands
                sections.append(f"## `{title}`\n\n```text\n{usage(command)}\n```\n")
            elif name == title:  # a command line without groups (denominator demo, serve)
                sections.append(command_section(name, command.description or "", command))
            else:
                sections.append(command_section(name, summary, command))
    return "\n".join(sections)


def options_table() -> str:
    from annotation.options import options_markdown

    return options_markdown()


def api_markdown() -> str:
    """Every public action of ``annotation.actions``, ``calibration.actions`` and ``judge.actions``, in
    ``__all__``'s order: its signature (the annotations as written) and its docstring."""
    import importlib
    import inspect

    sections = []
    for package in ("calibration", "annotation", "judge"):
        module = importlib.import_module(f"{package}.actions")
        sections.append(
            f"### `{package}.actions`\n\n{inspect.cleandoc(module.__doc__ or '').splitlines()[0]}\n"
        )
        for name in module.__all__:
            function = getattr(module, name)
            signature = _signature(function)
            doc = inspect.cleandoc(function.__doc__ or "(no docstring)")
            sections.append(
                f"#### `{package}.actions.{name}`\n\n```python\n{name}{signature}\n```\n\n{doc}\n"
            )
    return "\n".join(sections)


def _signature(function: Any) -> str:
    """``(qrels: Qrels, k: int | None = None, *, policy: Policy = DEFAULT_POLICY) -> CheckReport``: the
    parameters, annotations and defaults as written in the source (the function's last definition:
    an overloaded one's implementation), one per line when they do not fit one."""
    import ast
    import inspect

    source = Path(inspect.getsourcefile(function) or "").read_text(encoding="utf-8")
    found = [
        n for n in ast.parse(source).body if isinstance(n, ast.FunctionDef) and n.name == function.__name__
    ][-1]
    args = found.args

    def one(arg: ast.arg, default: ast.expr | None, prefix: str = "") -> str:
        text = prefix + arg.arg + (f": {ast.unparse(arg.annotation)}" if arg.annotation else "")
        return text + (f" = {ast.unparse(default)}" if default is not None else "")

    positional = args.posonlyargs + args.args
    defaults: list[ast.expr | None] = [None] * (len(positional) - len(args.defaults)) + list(args.defaults)
    parts = [one(a, d) for a, d in zip(positional, defaults)]
    if args.vararg:
        parts.append(one(args.vararg, None, "*"))
    elif args.kwonlyargs:
        parts.append("*")
    parts += [one(a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults)]
    if args.kwarg:
        parts.append(one(args.kwarg, None, "**"))
    returned = f" -> {ast.unparse(found.returns)}" if found.returns else ""
    one_line = f"({', '.join(parts)}){returned}"
    if len(one_line) <= WIDTH - 20:
        return one_line
    return "(\n" + "".join(f"    {part},\n" for part in parts) + f"){returned}"


PAGES: dict[Path, dict[str, Callable[[], str]]] = {
    PAGE: {"commands": commands_markdown, "options": options_table},
    API_PAGE: {"api": api_markdown},
}
PARTS = PAGES[PAGE]  # the CLI page's, as tests/test_docs.py reads them


def render(page: str, parts: dict[str, Callable[[], str]] | None = None) -> str:
    """The page with each generated part written anew (the CLI page's parts unless given)."""
    for name, make in (PARTS if parts is None else parts).items():
        start, end = f"<!-- generated: {name} -->\n", f"<!-- end generated: {name} -->"
        found = re.search(re.escape(start) + r".*?" + re.escape(end), page, re.S)
        if not found:
            raise SystemExit(f"no {start.strip()} ... {end} markers")
        part = f"{start}\n{make().strip()}\n\n{end}"
        page = page[: found.start()] + part + page[found.end() :]
    return page


def main(argv: list[str]) -> int:
    stale = []
    for path, parts in PAGES.items():
        current = path.read_text(encoding="utf-8")
        fresh = render(current, parts)
        if "--check" in argv:
            if fresh != current:
                stale.append(str(path.relative_to(ROOT)))
        else:
            path.write_text(fresh, encoding="utf-8")
    if stale:
        print(f"{', '.join(stale)} out of date: run .venv/bin/python docs/gen_reference.py")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
