"""The code's shape in numbers (issue #41's before and after): modules and lines of the product's
packages, uses of ``typing.Any``, functions over 80 lines, the imports between packages both ways,
and the errors ``mypy --strict`` finds beyond the project's own configuration.

    python bench/code_counts.py [--no-mypy]

Reads the source only (ast); ``mypy --strict`` runs in a process of its own (about a minute).
"""

from __future__ import annotations

import argparse
import ast
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("annotation", "calibration", "judge", "denominator")
LONG = 80  # lines: a function longer than this is counted


def modules() -> list[Path]:
    return sorted(
        p
        for package in PACKAGES
        for p in (ROOT / package).rglob("*.py")
        if "examples" not in p.relative_to(ROOT).parts
    )


def counts() -> dict[str, object]:
    lines = anys = 0
    long_functions: list[tuple[str, int]] = []
    edges: Counter[tuple[str, str]] = Counter()
    for path in modules():
        text = path.read_text(encoding="utf-8")
        lines += text.count("\n")
        tree = ast.parse(text)
        own = path.relative_to(ROOT).parts[0]
        for node in ast.walk(tree):
            if isinstance(node, ast.Name) and node.id == "Any":
                anys += 1
            elif isinstance(node, ast.Attribute) and node.attr == "Any":
                anys += 1
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                if length > LONG:
                    long_functions.append((f"{path.relative_to(ROOT)}:{node.name}", length))
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                other = node.module.split(".")[0]
                if other in PACKAGES and other != own:
                    edges[(own, other)] += 1
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    other = alias.name.split(".")[0]
                    if other in PACKAGES and other != own:
                        edges[(own, other)] += 1
    both_ways = sorted({tuple(sorted(e)) for e in edges if (e[1], e[0]) in edges})
    return {
        "modules": len(modules()),
        "lines": lines,
        "Any": anys,
        "functions over 80 lines": sorted(long_functions, key=lambda f: -f[1]),
        "packages importing each other": both_ways,
    }


def strict_errors() -> int:
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", *PACKAGES],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    found = re.search(r"Found (\d+) errors?", done.stdout)
    return int(found.group(1)) if found else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--no-mypy", action="store_true", help="skip mypy --strict")
    args = parser.parse_args(argv)
    found = counts()
    long_functions = found["functions over 80 lines"]
    assert isinstance(long_functions, list)
    print(f"modules: {found['modules']}, lines: {found['lines']}, Any: {found['Any']}")
    print(f"functions over {LONG} lines: {len(long_functions)}")
    for name, length in long_functions:
        print(f"  {length:4d}  {name}")
    print(f"packages importing each other: {found['packages importing each other'] or 'none'}")
    if not args.no_mypy:
        print(f"mypy --strict errors: {strict_errors()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
