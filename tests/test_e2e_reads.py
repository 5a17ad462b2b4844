"""The browser tests read what they assert through a retrying expectation (issue #38, item 12).

A browser test that reads the page once and asserts on what it read fails on a loaded machine
whenever the read lands before the page has drawn what is asserted (#38: a reload's item read as
``'Query\\n\\nChunk'``, its texts not drawn yet). The rule, for every ``tests/e2e/*.py``:

- what a test asserts about the page it reads through an expectation that retries until the page
  gets there: ``expect(locator).to_have_text(...)``, ``to_contain_text``, ``to_have_count``,
  ``to_be_visible``, ``not_to_contain_text(..., use_inner_text=True)`` (after a positive wait), or
  a wait for the final state (``page.wait_for_function``, ``page.wait_for_url``,
  ``tests.conftest.wait_until``);
- never a one-shot read (a call of one of ``READS`` below: ``inner_text()``, ``text_content()``,
  ``is_visible()``, ``count()``, ``get_attribute()``, ``page.content()``, ``page.evaluate()``, ...)
  whose value reaches an ``assert`` or the expected value of an ``expect(...)``, whether directly,
  through a variable (``text = main.inner_text()`` ... ``assert ... text``, ``seen[k] = ...``), or
  through a helper that returns it (``def shown(page): return ....inner_text()``);
- the one exception is a read genuinely after a completed wait for the element's final state
  (a retrying expectation just before it, on what is read), when no expectation can say what is
  checked (a value compared between two pages; the DOM's markup): the read's line carries
  ``# read-after-wait: <why>`` (or a comment line just above it does). The allow list stays tiny:
  ``MAX_ALLOWED`` markers in all.

A read whose value is not asserted (a loop bound, a value a ``wait_until`` polls) is not checked.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from dataclasses import dataclass
from pathlib import Path

E2E = Path(__file__).resolve().parent / "e2e"

# one-shot reads of the page: Locator, Page, Frame and ElementHandle methods that return what the
# page holds now, without waiting for it to change
READS = frozenset(
    {
        "inner_text",
        "inner_html",
        "text_content",
        "all_inner_texts",
        "all_text_contents",
        "input_value",
        "get_attribute",
        "is_visible",
        "is_hidden",
        "is_enabled",
        "is_disabled",
        "is_checked",
        "is_editable",
        "count",
        "content",
        "evaluate",
        "eval_on_selector",
        "eval_on_selector_all",
    }
)
NO_ARGUMENT_READS = frozenset({"count", "content"})  # str.count(x), list.count(x) take one
MARKER = re.compile(r"#\s*read-after-wait:\s*(?P<why>.*)")
MAX_ALLOWED = 7  # each one justified on its line; raise it only with a reason no expectation fits (the 4th:
# a script that must never have run, read once the page's own script has: no expectation waits for an absence to hold;
# the 5th to 7th, tests/e2e/test_team_browser.py: an item's number, a sign-in link and a grid's figures, each read once
# drawn and compared with another person's page or with scikit-learn's kappa to a tolerance)


@dataclass(frozen=True)
class Finding:
    path: str
    line: int
    what: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.what}"


def markers(source: str) -> dict[int, str]:
    """Line number -> the reason a ``# read-after-wait:`` comment gives for the read on that line:
    the comment's own line, or the next one when the comment stands on a line of its own."""
    found = {}
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT and (match := MARKER.search(token.string)):
            alone = token.line.lstrip().startswith("#")
            found[token.start[0] + alone] = match["why"].strip()
    return found


def _is_read(node: ast.AST) -> bool:
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
        return False
    name = node.func.attr
    if name not in READS:
        return False
    return not (name in NO_ARGUMENT_READS and (node.args or node.keywords))


def _targets(target: ast.AST) -> set[str]:
    """The names an assignment to ``target`` taints: ``x``, ``x[k]``, ``x.a``, ``a, b``."""
    if isinstance(target, ast.Name):
        return {target.id}
    if isinstance(target, (ast.Subscript, ast.Attribute)):
        return _targets(target.value)
    if isinstance(target, ast.Starred):
        return _targets(target.value)
    if isinstance(target, (ast.Tuple, ast.List)):
        return set().union(*(_targets(t) for t in target.elts)) if target.elts else set()
    return set()


def _is_expect_check(node: ast.AST) -> bool:
    """``expect(x).to_...(...)`` or ``expect(x, msg).not_to_...(...)``."""
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and (node.func.attr.startswith("to_") or node.func.attr.startswith("not_to_"))
        and isinstance(node.func.value, ast.Call)
        and isinstance(node.func.value.func, ast.Name)
        and node.func.value.func.id == "expect"
    )


class _Module:
    def __init__(self, tree: ast.Module, allowed: dict[int, str]) -> None:
        self.tree = tree
        self.allowed = allowed
        self.readers: set[str] = set()  # functions that return a one-shot read

    def unmarked_read(self, node: ast.AST) -> bool:
        return _is_read(node) and not any(
            self.allowed.get(line) for line in range(node.lineno, node.end_lineno + 1)
        )

    def tainted(self, expr: ast.AST, names: set[str]) -> bool:
        for node in ast.walk(expr):
            if self.unmarked_read(node):
                return True
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id in names:
                return True
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id in self.readers
            ):
                return True
        return False

    def taint(self, scope: ast.AST) -> set[str]:
        """The names in ``scope`` (nested functions included) that hold a one-shot read."""
        names: set[str] = set()
        while True:
            before = len(names)
            for node in ast.walk(scope):
                if isinstance(node, ast.Assign) and self.tainted(node.value, names):
                    for target in node.targets:
                        names |= _targets(target)
                elif isinstance(node, (ast.AugAssign, ast.AnnAssign)) and node.value is not None:
                    if self.tainted(node.value, names):
                        names |= _targets(node.target)
                elif isinstance(node, ast.NamedExpr) and self.tainted(node.value, names):
                    names |= _targets(node.target)
                elif isinstance(node, (ast.For, ast.comprehension)) and self.tainted(node.iter, names):
                    names |= _targets(node.target)
                elif isinstance(node, ast.withitem) and node.optional_vars is not None:
                    if self.tainted(node.context_expr, names):
                        names |= _targets(node.optional_vars)
            if len(names) == before:
                return names

    def find_readers(self) -> None:
        functions = [n for n in ast.walk(self.tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
        while True:
            before = len(self.readers)
            for function in functions:
                names = self.taint(function)
                returns = [n for n in ast.walk(function) if isinstance(n, ast.Return) and n.value is not None]
                if any(self.tainted(r.value, names) for r in returns):
                    self.readers.add(function.name)
            if len(self.readers) == before:
                return

    def findings(self, path: str) -> list[Finding]:
        self.find_readers()
        found = []
        scopes = [n for n in self.tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
        module_level = ast.Module(
            body=[n for n in self.tree.body if n not in scopes and not isinstance(n, ast.ClassDef)],
            type_ignores=[],
        )
        classes = [n for n in self.tree.body if isinstance(n, ast.ClassDef)]
        for scope in [*scopes, *classes, module_level]:
            names = self.taint(scope)
            for node in ast.walk(scope):
                if isinstance(node, ast.Assert) and self.tainted(node.test, names):
                    found.append(
                        Finding(path, node.lineno, f"assert on a one-shot read: {ast.unparse(node.test)}")
                    )
                elif _is_expect_check(node):
                    expected = [*node.args, *(k.value for k in node.keywords if k.arg != "timeout")]
                    if any(self.tainted(e, names) for e in expected):
                        found.append(
                            Finding(path, node.lineno, f"expectation on a one-shot read: {ast.unparse(node)}")
                        )
        return sorted(set(found), key=lambda f: f.line)


def one_shot_reads(source: str, path: str = "<test>") -> list[Finding]:
    """Every assert or expectation in ``source`` that checks a value read once from the page."""
    return _Module(ast.parse(source), markers(source)).findings(path)


def _stale_markers(source: str, path: str) -> list[Finding]:
    """``read-after-wait`` markers with no reason, or on a line holding no read."""
    tree = ast.parse(source)
    read_lines = {line for n in ast.walk(tree) if _is_read(n) for line in range(n.lineno, n.end_lineno + 1)}
    return [
        Finding(path, line, "read-after-wait marker " + ("with no reason" if not why else "on no read"))
        for line, why in markers(source).items()
        if not why or line not in read_lines
    ]


def _e2e_files() -> list[Path]:
    files = sorted(E2E.glob("*.py"))
    assert files, E2E
    return files


def test_no_browser_test_asserts_on_a_one_shot_read() -> None:
    found = [
        str(f)
        for path in _e2e_files()
        for f in one_shot_reads(path.read_text(), str(path.relative_to(E2E.parent.parent)))
    ]
    assert not found, (
        f"{len(found)} one-shot read(s) asserted in tests/e2e (read through expect(...).to_have_text / "
        "to_contain_text / to_have_count / to_be_visible, or a wait; see this file's docstring):\n"
        + "\n".join(found)
    )


def test_the_allow_list_stays_tiny_and_justified() -> None:
    stale: list[str] = []
    allowed: list[str] = []
    for path in _e2e_files():
        source, name = path.read_text(), str(path.relative_to(E2E.parent.parent))
        stale += [str(f) for f in _stale_markers(source, name)]
        allowed += [f"{name}:{line}: {why}" for line, why in markers(source).items()]
    assert not stale, "\n".join(stale)
    assert len(allowed) <= MAX_ALLOWED, "\n".join(allowed)


# ---------------------------------------------------------------- the checker itself


def test_the_checker_finds_each_shape_of_a_one_shot_read() -> None:
    source = """
def shown(page):
    return page.locator(".item").inner_text()

def test_x(page, main, expect):
    assert page.get_by_text("Page not found").count() == 0
    assert "x" in main.inner_text()
    text = main.inner_text()
    lines = text.splitlines()
    assert all("y" not in line for line in lines)
    seen = {}
    seen["a"] = main.text_content()
    assert not [v for v in seen.values() if v]
    before = shown(page)
    assert shown(page) == before
    expect(main).to_contain_text(before)
    assert page.evaluate("document.cookie") == ""
    assert main.get_attribute("href") and main.is_visible()
"""
    lines = [f.line for f in one_shot_reads(source)]
    assert lines == [6, 7, 10, 13, 15, 16, 17, 18], lines


def test_the_checker_passes_retrying_reads_and_marked_reads() -> None:
    source = """
def shown(page, expect):
    item = page.locator(".item")
    expect(item).to_have_text(ITEM)
    return item.inner_text()  # read-after-wait: the item drawn in full just above

def test_x(page, main, expect, wait_until):
    expect(page.get_by_text("Page not found")).to_have_count(0)
    expect(main).not_to_contain_text("bob", use_inner_text=True)
    first = shown(page)
    assert first != "x"
    expect(main).to_contain_text(first)
    tables = page.locator("table")
    for i in range(tables.count()):  # a loop bound, not asserted
        expect(tables.nth(i)).to_be_visible()
    now = main.inner_text()
    wait_until(lambda: main.inner_text() != now, "the next item")
    assert "a,b".count(",") == 1 and [1].count(1) == 1
"""
    assert one_shot_reads(source) == []
    assert _stale_markers(source, "<test>") == []


def test_a_marker_needs_a_reason_and_a_read() -> None:
    source = "x = page.inner_text()  # read-after-wait:\ny = 1  # read-after-wait: no read here\n"
    assert [(f.line, f.what) for f in _stale_markers(source, "t")] == [
        (1, "read-after-wait marker with no reason"),
        (2, "read-after-wait marker on no read"),
    ]
    # an empty reason does not allow the read
    assert [f.line for f in one_shot_reads(source + "assert x\n")] == [3]
    # a marker standing alone covers the line below it, and only that one
    above = "# read-after-wait: drawn just above\nx = page.inner_text()\ny = page.inner_text()\nassert x\nassert y\n"
    assert _stale_markers(above, "t") == []
    assert [f.line for f in one_shot_reads(above)] == [5]
