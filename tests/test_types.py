"""The type checker (#28): ``mypy --strict`` on every module of the product (``pyproject.toml``'s
``strict = true``, #41; before, only the pure modules and the actions modules were strict), clean; and the actions modules, what every face calls, return typed results, never a bare
``dict[str, Any]``."""

from __future__ import annotations

import ast
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tests.test_structure import product_files

ROOT = Path(__file__).resolve().parent.parent
ACTIONS = ["annotation/actions.py", "calibration/actions.py", "judge/actions.py"]


def dotted(path: str) -> str:
    return path.removesuffix(".py").replace("/", ".").removesuffix(".__init__")


def config() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["mypy"]


def test_every_module_is_strict() -> None:
    """One configuration for the whole product: --strict, no module let off (#41)."""
    mypy = config()
    assert mypy["strict"] is True
    assert "overrides" not in mypy, "a module let off --strict"
    assert mypy["files"] == ["annotation", "calibration", "judge", "denominator"]


def test_the_tree_type_checks(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--cache-dir", str(tmp_path / "cache")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"no issues found in {len(product_files())} source files" in done.stdout


def untyped_dicts(annotation: ast.expr | None) -> list[str]:
    """``dict[str, Any]`` (or a bare ``dict`` or ``Any``) anywhere in a return annotation."""
    if annotation is None:
        return ["no return annotation"]
    text = ast.unparse(annotation).replace(" ", "").strip("'\"")
    bad = [text] if text in ("dict", "Any", "typing.Any") else []
    return bad + (["dict[str,Any]"] if "dict[str,Any]" in text else [])


@pytest.mark.parametrize("path", ACTIONS)
def test_no_public_action_returns_an_untyped_dict(path: str) -> None:
    tree = ast.parse((ROOT / path).read_text(encoding="utf-8"))
    bad = [
        f"{path}:{node.lineno}: {node.name} returns {', '.join(found)}"
        for node in tree.body
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and not node.name.startswith("_")
        and (found := untyped_dicts(node.returns))
    ]
    assert not bad, "\n".join(bad)
