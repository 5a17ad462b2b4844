"""The layout DESIGN.md describes, checked on the code itself (``ast``, not grep on text):

- the pure modules import no IO (no yaml, file, sqlite, streamlit, openai; no threads of their own);
- packages point one way: ``annotation`` imports neither ``judge`` nor ``calibration``, ``calibration``
  does not import ``judge`` (judge -> calibration -> annotation); only the faces (``ui.py``,
  ``__main__.py``, ``app.py``) and ``denominator/`` (the command and the demo builder) may import every package;
- no private name (a leading underscore) is imported from another module, and no private module is
  imported from another package;
- no import hides inside a function unless a comment on its line says the start-up cost it saves;
- a module is as long as its idea needs; a function past 100 lines is listed here with the reason
  (and that list is kept short);
- a subpackage's ``__init__`` names its public API: the names it imports under ``TYPE_CHECKING``
  are the ones it gives at run time, and each resolves.
"""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("annotation", "judge", "calibration")

PURE = [
    "annotation/model.py",
    "annotation/provenance.py",
    "annotation/rubrics.py",
    "annotation/render.py",
    "annotation/ids.py",
    "annotation/chunking.py",
    "calibration/projection.py",
    "calibration/metrics.py",
    "calibration/metrics_grouped.py",
    "calibration/audit.py",
    "calibration/holes/scoring.py",
    "calibration/holes/interval.py",
    "calibration/unjudged.py",
    "calibration/scorer.py",
    "calibration/stats/agreement.py",
    "calibration/stats/kappa.py",
    "calibration/stats/kappa_interval.py",
    "calibration/stats/kappa_clustered.py",
    "calibration/stats/judged.py",
    "calibration/stats/plan.py",
    "calibration/stats/kappa_sequence.py",
    "calibration/stats/interval.py",
    "calibration/stats/bootstrap.py",
    "calibration/stats/multirater.py",
    "calibration/stats/verdict.py",
    "calibration/results.py",
    "calibration/stats/position.py",
    "calibration/stats/ppi.py",
    "calibration/stats/ppi_design.py",
    "calibration/stats/pass_rate.py",
    "calibration/stats/ppi_budget.py",
    "calibration/stats/significance.py",
    "calibration/policy/rules.py",
    "calibration/policy/check.py",
    "calibration/policy/check_text.py",
    "calibration/review_text.py",
    *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "calibration" / "estimate").glob("*.py")),
]
# what a pure module may not import (a module or any of its submodules)
IO_MODULES = (
    "yaml",
    "sqlite3",
    "sqlite_utils",
    "streamlit",
    "openai",
    "httpx",
    "pathlib",
    "io",
    "csv",
    "tempfile",
    "shutil",
    "socket",
    "subprocess",
    "annotation.formats",  # the whole family (#41): its readers, the YAML, the text and the writers
    "annotation.store",
)
# faces and the demo builder: the top layer, which may import any package
FACES = (
    {
        "denominator/app.py",
        "denominator/demo.py",
        "denominator/cli.py",
        "denominator/__main__.py",
        "denominator/__init__.py",
    }
    | {f"{p}/{face}" for p in PACKAGES for face in ("ui.py", "__main__.py", "cli_args.py")}
    | {str(path.relative_to(ROOT)) for path in (ROOT / "denominator" / "ui").glob("*.py")}  # the pages (#41)
    | {  # a page of its own (<name>_ui.py) or a command's own face (<name>_cli.py)
        str(path.relative_to(ROOT))
        for p in PACKAGES
        for pattern in ("*_ui.py", "*_cli.py")
        for path in (ROOT / p).glob(pattern)
    }
)
# a function past LONG_FUNCTION_LINES lines says why its idea needs them (#41: functions are capped,
# not files; LONG_MODULES, a cap on files that split ideas to meet it, gave way to this list)
LONG_FUNCTION_LINES = 100
LONG_FUNCTIONS: dict[str, str] = {
    "calibration/metrics.py:evaluate": "the vectorised engine: one sort, every measure read from it, so "
    "the oracle test holds one function",
    "calibration/review.py:review": "the weekly review's loop over judges: scope, labels, kappa, ceiling, "
    "verdict and pass rate of one judge read on one population",
    "calibration/policy/check.py:check_report": "the seven figures per query and the rules over them, "
    "computed together so a rule reads the figures it prints",
    "calibration/audit.py:audit_run": "every finding of one run and the denominator each is a fraction "
    "of, counted in one pass",
    "annotation/exports/phoenix.py:export_phoenix": "the Phoenix dataset's fields, mapped one by one "
    "beside the format they follow",
    "calibration/estimate/audit.py:estimate_run": "per query the sample's strata, the estimate and its "
    "interval, the finding beside the audit's",
    "calibration/estimate/recall.py:estimate_recall_at_k": "the Horvitz-Thompson estimator and its "
    "interval, written as the paper writes it",
    "calibration/holes/scoring.py:corrected_mean": "the corrected figure, its variance and interval, the "
    "formula in one place with its derivation",
    "calibration/stats/position.py:position_bias": "every position figure of pairwise answers in both "
    "orders, from one pass over the pairs",
    "annotation/pooling.py:sample_unjudged": "the estimate's stratified sample per query: strata, "
    "allocation, draw and assignment together",
    "denominator/ui/check.py:render_history": "the history section: table, chart, settings marks and "
    "the difference of two checks, one page section",
    "annotation/exports/label_files.py:export_golden": "golden.yaml's every section (queries, grades, "
    "disputed, provenance), written in the reader's order",
}
MAX_LONG_FUNCTIONS = 14  # and shrinking
SUBPACKAGES = ("calibration/estimate", "judge/lexical")  # the subpackages with an API of their own
INDEXES = (  # their __init__ a docstring index, nothing more (#41)
    "calibration/stats",
    "calibration/policy",
    "calibration/holes",
    "annotation/formats",
    "annotation/access",
)


def product_files() -> list[Path]:
    files = []
    for package in (*PACKAGES, "denominator"):
        files += sorted((ROOT / package).rglob("*.py"))
    return [f for f in files if "examples" not in f.relative_to(ROOT).parts]  # the demo data's scripts


def rel(path: Path) -> str:
    return str(path.relative_to(ROOT))


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path: Path) -> list[tuple[int, str, list[str], bool]]:
    """(line, module, names, inside a function) of every import, relative ones resolved; the line
    is the statement's last."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    here = module_name(path).split(".")
    if path.name != "__init__.py":
        here = here[:-1]
    out = []

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            nested = in_function or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda)
            if isinstance(child, ast.Import):
                for alias in child.names:
                    out.append((child.end_lineno or child.lineno, alias.name, [], in_function))
            elif isinstance(child, ast.ImportFrom):
                base = child.module or ""
                if child.level:
                    prefix = here[: len(here) - child.level + 1]
                    base = ".".join([*prefix, base] if base else prefix)
                out.append(
                    (child.end_lineno or child.lineno, base, [a.name for a in child.names], in_function)
                )
            visit(child, nested)

    visit(tree, False)
    return out


def is_within(module: str, parent: str) -> bool:
    return module == parent or module.startswith(parent + ".")


@pytest.mark.parametrize("path", PURE)
def test_pure_modules_import_no_io(path: str) -> None:
    bad = [
        f"{path}:{line}: imports {module}"
        for line, module, names, _inner in imports(ROOT / path)
        if any(is_within(module, io) for io in IO_MODULES)
        or (module == "concurrent.futures" and set(names) - {"Executor", "Future"})
        or (module == "threading" and False)
        or module.split(".")[0] in ("judge", "app", "denominator")
    ]
    assert not bad, "\n".join(bad)


def test_pure_modules_open_no_file() -> None:
    bad = []
    for path in PURE:
        for node in ast.walk(ast.parse((ROOT / path).read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "open":
                bad.append(f"{path}:{node.lineno}: open()")
    assert not bad, "\n".join(bad)


def test_packages_point_one_way() -> None:
    """judge -> calibration -> annotation: no cycle; faces and the demo builder may import all."""
    allowed = {"annotation": {"annotation"}, "calibration": {"annotation", "calibration"}}
    bad = []
    for path in product_files():
        if rel(path) in FACES:
            continue
        package = rel(path).split("/")[0]
        if package not in allowed:
            continue
        for line, module, _names, _inner in imports(path):
            top = module.split(".")[0]
            if top in PACKAGES + ("app", "denominator") and top not in allowed[package]:
                bad.append(f"{rel(path)}:{line}: {package} imports {module}")
    assert not bad, "\n".join(bad)


# the modules that read files or the store and those that say a result in words: none of them
# reaches up to a workflow, an action, the judge's client or its runner (#41)
READERS_AND_RENDERERS = (
    "calibration/run_file.py",
    "calibration/stored.py",
    "calibration/commands_text.py",
    "calibration/review_text.py",
    "calibration/holes/holes_text.py",
    "calibration/policy/check_text.py",
    "calibration/policy/findings.py",
    "calibration/policy/finding_words.py",
    "calibration/policy/history.py",
    "judge/commands_text.py",
)
ABOVE_THEM = ("calibration.actions", "judge.client", "judge.runner", "judge.actions")


def test_no_reader_or_renderer_imports_a_workflow_or_the_client() -> None:
    bad = [
        f"{path}:{line}: imports {module}"
        for path in READERS_AND_RENDERERS
        for line, module, _names, _inner in imports(ROOT / path)
        if any(is_within(module, above) for above in ABOVE_THEM)
    ]
    assert not bad, "\n".join(bad)


def test_no_package_imports_another_both_ways() -> None:
    """Faces included (#41): before, calibration/holes_ui.py imported judge.actions while judge imports
    calibration; the pages now live in denominator/ui/, the top."""
    edges: dict[tuple[str, str], str] = {}
    for path in product_files():
        own = rel(path).split("/")[0]
        if own not in PACKAGES:
            continue
        for line, module, _names, _inner in imports(path):
            other = module.split(".")[0]
            if other in PACKAGES and other != own:
                edges.setdefault((own, other), f"{rel(path)}:{line}")
    both = [f"{a} <-> {b}: {edges[(a, b)]}, {edges[(b, a)]}" for a, b in edges if a < b and (b, a) in edges]
    assert not both, "\n".join(both)


def test_no_private_name_crosses_a_module() -> None:
    bad = []
    for path in product_files():
        here = module_name(path)
        for line, module, names, _inner in imports(path):
            if module.split(".")[0] not in PACKAGES + ("app", "denominator") or module == here:
                continue
            private = [n for n in names if n.startswith("_") and not n.startswith("__")]
            if private:
                bad.append(f"{rel(path)}:{line}: imports {', '.join(private)} from {module}")
            private_module = next(
                (p for p in module.split(".") if p.startswith("_") and p != "__main__"), None
            )
            if private_module and module.split(".")[0] != here.split(".")[0]:
                bad.append(f"{rel(path)}:{line}: imports the private module {module} from another package")
    assert not bad, "\n".join(bad)


def test_no_import_hides_inside_a_function() -> None:
    """Except where a comment on the statement or just above it says why (a measured start-up cost)."""
    bad = []
    for path in product_files():
        lines = path.read_text(encoding="utf-8").splitlines()
        for line, module, _names, inner in imports(path):
            if inner and not any("start-up" in text for text in lines[max(0, line - 5) : line]):
                bad.append(f"{rel(path)}:{line}: imports {module} inside a function")
    assert not bad, "\n".join(bad)


def test_a_long_function_says_why() -> None:
    found: dict[str, int] = {}
    for path in product_files():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                if length > LONG_FUNCTION_LINES:
                    found[f"{rel(path)}:{node.name}"] = length
    assert not {name: n for name, n in found.items() if name not in LONG_FUNCTIONS}
    # a reason for a function that is no longer long (or gone) is dropped, and the list stays short
    assert not set(LONG_FUNCTIONS) - set(found)
    assert len(LONG_FUNCTIONS) <= MAX_LONG_FUNCTIONS


def type_checking_names(init: Path) -> dict[str, str]:
    """name -> submodule of the ``from ... import`` statements under ``if TYPE_CHECKING:``."""
    names = {}
    for node in ast.parse(init.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            for imp in node.body:
                assert isinstance(imp, ast.ImportFrom) and imp.module
                names |= {alias.name: imp.module.rsplit(".", 1)[1] for alias in imp.names}
    return names


@pytest.mark.parametrize("package", SUBPACKAGES)
def test_a_subpackage_names_its_public_api(package: str) -> None:
    module = importlib.import_module(package.replace("/", "."))
    assert module.__doc__ and module.__all__
    for name in module.__all__:
        assert getattr(module, name) is not None, name
    declared = type_checking_names(ROOT / package / "__init__.py")
    if declared:  # a lazy __init__: the names it gives are exactly the ones it declares
        assert sorted(declared) == sorted(module.__all__)
        for name, submodule in declared.items():
            assert getattr(module, name) is getattr(
                importlib.import_module(f"{module.__name__}.{submodule}"), name
            )


def calls(function: ast.FunctionDef, names: set[str]) -> bool:
    return any(
        isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in names
        for n in ast.walk(function)
    )


@pytest.mark.parametrize("package", INDEXES)
def test_an_index_package_is_its_docstring(package: str) -> None:
    """The lazy APIs of ``calibration.stats`` and ``calibration.policy`` were imported nowhere (#41):
    their ``__init__`` is a docstring that names each module, and every module it names exists."""
    init = ROOT / package / "__init__.py"
    tree = ast.parse(init.read_text(encoding="utf-8"))
    assert len(tree.body) == 1 and isinstance(tree.body[0], ast.Expr), "a docstring only"
    doc = ast.get_docstring(tree) or ""
    dotted = package.replace("/", ".")
    named = set(re.findall(r":mod:`~?([\w.]+)`", doc))
    assert named, "the docstring names the modules"
    for module in named:
        path = ROOT / (module.replace(".", "/") + ".py")
        assert path.exists(), f"{package}/__init__.py names {module}, which does not exist"
    inside = {f"{dotted}.{p.stem}" for p in (ROOT / package).glob("*.py") if p.stem != "__init__"}
    assert inside <= named, f"not named in the index: {sorted(inside - named)}"


FORMATS = ROOT / "annotation" / "formats"
# what the formats family stands on: the core types, no IO of the store, no workflow, no face
# the core types, and annotation.arrow_compute: Arrow's compute functions by name, which the model
# reads with too (no pyarrow.compute import, #42)
BELOW_THE_FORMATS = (
    "annotation.formats",
    "annotation.ids",  # the id rule's characters: the readers refuse them, render escapes them
    "annotation.model",
    "annotation.errors",
    "annotation.provenance",
    "annotation.arrow_compute",
)


def defined_names(path: Path) -> set[str]:
    """The names a module defines itself (a function, a class, an assignment), not those it imports."""
    names: set[str] = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {n.id for target in targets for n in ast.walk(target) if isinstance(n, ast.Name)}
    return names


def python_files() -> list[Path]:
    """Every module of the checkout: the product, its tests, the benchmarks, the docs' scripts."""
    found = {
        p.resolve()
        for p in ROOT.rglob("*.py")
        if not any(part.startswith(".") for part in p.relative_to(ROOT).parts)
    }
    return sorted(found)


def test_a_format_is_imported_from_the_module_that_defines_it() -> None:
    """``annotation/formats/`` is a family, not a façade (#41: seven modules behind one that eleven
    imports bypassed): its ``__init__`` gives no name, and a name taken from one of its modules is
    defined there, never forwarded from another (a submodule itself may be imported by name)."""
    defined = {
        "annotation.formats" + ("" if p.stem == "__init__" else f".{p.stem}"): defined_names(p)
        for p in FORMATS.glob("*.py")
    }
    bad = []
    for path in python_files():
        for line, module, names, _inner in imports(path):
            if module not in defined:
                continue
            forwarded = [n for n in names if n not in defined[module] and f"{module}.{n}" not in defined]
            if forwarded:
                bad.append(
                    f"{rel(path)}:{line}: imports {', '.join(forwarded)} from {module}, which does not define it"
                )
    assert not bad, "\n".join(bad)


def test_the_formats_family_stands_on_the_core_types() -> None:
    """The formats read and write files, nothing more: of the product they import the core types
    (``annotation.model``, ``annotation.errors``, ``annotation.provenance``, and
    ``annotation.arrow_compute``, Arrow's functions by name) and each other, never
    the store, a workflow, a face or another package (#41)."""
    bad = [
        f"{rel(path)}:{line}: imports {module}"
        for path in sorted(FORMATS.glob("*.py"))
        for line, module, _names, _inner in imports(path)
        if module.split(".")[0] in (*PACKAGES, "app", "denominator")
        and not any(is_within(module, below) for below in BELOW_THE_FORMATS)
    ]
    assert not bad, "\n".join(bad)


def test_the_policy_family_reads_no_store() -> None:
    """The policy is pure; the policy file and the store check reads live in calibration/gate.py (#41)."""
    bad = [
        f"{rel(path)}:{line}: imports {module}"
        for path in sorted((ROOT / "calibration" / "policy").glob("*.py"))
        for line, module, _names, _inner in imports(path)
        if is_within(module, "annotation.store") and not _type_only(path, line)
    ]
    assert not bad, "\n".join(bad)


def _type_only(path: Path, line: int) -> bool:
    """Is the import ending on ``line`` under ``if TYPE_CHECKING:``?"""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            if any((n.end_lineno or n.lineno) == line for n in node.body):
                return True
    return False


def test_the_access_family_points_one_way() -> None:
    """annotation/access.py split in three (#41): the identity imports neither the routes nor the
    sign-in pages, and speaks no HTTP; the routes import no page; the pages read both."""
    forbidden = {
        "annotation/access/identity.py": (
            "annotation.access.routes",
            "annotation.access.sign_in_pages",
            "starlette",
        ),
        "annotation/access/routes.py": ("annotation.access.sign_in_pages",),
    }
    bad = [
        f"{path}:{line}: imports {module}"
        for path, below in forbidden.items()
        for line, module, _names, _inner in imports(ROOT / path)
        if any(is_within(module, name) for name in below)
    ]
    assert not bad, "\n".join(bad)


def test_every_wall_clock_bound_is_marked() -> None:
    """A test that times work (``tests.conftest.timed``: the bound scaled by the machine's measured
    slowness) carries ``@pytest.mark.wall_clock``, so a run can name or leave out every such bound."""
    bad = []
    for path in sorted((ROOT / "tests").rglob("test_*.py")):
        functions = [
            n for n in ast.parse(path.read_text(encoding="utf-8")).body if isinstance(n, ast.FunctionDef)
        ]
        timing = {"timed"}  # and the module's helpers that call it
        timing |= {f.name for f in functions if not f.name.startswith("test") and calls(f, timing)}
        for node in functions:
            if not node.name.startswith("test"):
                continue
            times = calls(node, timing)
            marked = any(ast.unparse(d) == "pytest.mark.wall_clock" for d in node.decorator_list)
            if times != marked:
                bad.append(
                    f"{rel(path)}:{node.lineno}: {node.name} "
                    + ("unmarked" if times else "marked, times nothing")
                )
    assert not bad, "\n".join(bad)


# What a face may call (#41, item 1): its actions, what says a result in words, what reads or writes
# a file or the store, the options with their settings, and the app's own frame. From any other module
# a face takes types, errors and constants only (a class, or a name that is no function): a function
# called from there is a face reaching around the actions for what an action should hand it.
FACE_MAY_CALL = {
    "actions": ("annotation.actions", "calibration.actions", "judge.actions"),
    "renderers": (
        "annotation.render",
        "calibration.commands_text",
        "calibration.review_text",
        "calibration.holes.holes_text",
        "calibration.policy.check_text",
        "calibration.policy.finding_words",
        "calibration.policy.findings",
        "annotation.commands_text",
        "judge.commands_text",
    ),
    "readers and writers": (
        "annotation.formats",
        "annotation.values",
        "annotation.hole_sample",
        "annotation.store",
        "annotation.rubrics",
        "annotation.exports",
        "calibration.stored",
        "annotation.views",  # the store as a page shows it: an item, one's work, progress, what runs found
        "calibration.holes.files",
        "calibration.review_sample",  # the weekly sample in the store: its week, progress and labels
        "calibration.readings",  # each judge's reading as review computes it, read for every face
    ),
    "options": (
        "annotation.options",
        "annotation.choices",
        "calibration.inputs",
        "calibration.gate",
        "judge.limits",
    ),
    "frame": (
        "annotation.cli_base",
        "annotation.quiet_start",
        "annotation.access",
        "annotation.http_api",  # the HTTP API the app mounts beside its pages (serve --api), as access's routes
        "annotation.shipped",
        "annotation.errors",
        "denominator",
    ),
}


# formulas a face shows beside a figure, as the CLI's renderer does (one line each, no store, no file)
FACE_FORMULAS = {
    "calibration.audit.recall_ceiling": "min(1, k / |Rel|), beside R@k on the Metrics page and in the CLI table",
    "calibration.audit.precision_ceiling": "min(1, |Rel| / k), beside P@k on the Metrics page and in the CLI table",
}


def face_paths() -> list[str]:
    # the demo builder writes the worked example into a store as data (its answer pairs have no command)
    return sorted(p for p in FACES if (ROOT / p).exists() and p != "denominator/demo.py")


def may_call(module: str) -> bool:
    if any(is_within(module, allowed) for kind in FACE_MAY_CALL.values() for allowed in kind):
        return True
    path = module.replace(".", "/")
    return f"{path}.py" in FACES or f"{path}/__init__.py" in FACES  # a face's own helpers


def test_no_face_reaches_around_the_actions() -> None:
    """Before #41 the pages called the workflows behind the actions (``hole_files.holes_data``,
    ``workflows.audit_data``, ``pooling.sample_unjudged``...); now a face calls an action, a renderer,
    a reader or writer, an option, or its frame, and takes only types, errors and constants elsewhere."""
    bad = []
    for face in face_paths():
        for line, module, names, _inner in imports(ROOT / face):
            if module.split(".")[0] not in PACKAGES + ("denominator",) or may_call(module):
                continue
            target = importlib.import_module(module)
            for name in names:
                if (
                    importlib.util.find_spec(f"{module}.{name}") is not None
                    if hasattr(target, "__path__")
                    else False
                ):
                    if not may_call(f"{module}.{name}"):
                        bad.append(f"{face}:{line}: imports the module {module}.{name}")
                    continue
                value = getattr(target, name)
                is_type = (
                    isinstance(value, type) or type(value).__module__ == "typing"
                )  # a class, Literal, alias
                if callable(value) and not is_type and f"{module}.{name}" not in FACE_FORMULAS:
                    bad.append(f"{face}:{line}: calls {module}.{name}")
    assert not bad, "\n".join(bad)
