"""What a command imports: a ``--help`` loads none of the numeric libraries, and the retrieval
commands (metrics, audit, compare) never load pandas, scipy, scikit-learn, the store or
Streamlit. Each runs in a new interpreter, as a user's shell starts it (#27: pandas alone was a
quarter of a second of every metrics run; ``metrics --help`` 0.35-0.40 s of CPU)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT.parent / "shared" / "data" / "trec_eval_test"
WORKED = ROOT / "examples" / "worked-example"
HEAVY = ("pandas", "scipy", "sklearn", "streamlit", "sqlite_utils", "psycopg", "openai")

PROBE = (
    "import sys, runpy\n"
    "package = sys.argv.pop(1)\n"
    "sys.argv = [package, *sys.argv[1:]]\n"
    "try:\n    runpy.run_module(package, run_name='__main__')\n"
    "except SystemExit as exc:\n    code = exc.code\n"
    "loaded = {m.split('.')[0] for m in sys.modules} | ({'pyarrow.compute'} & set(sys.modules))\n"
    "print('MODULES', ' '.join(sorted(loaded)), file=sys.stderr)\n"
    "sys.exit(code)\n"
)


def imported(*argv: str, package: str = "calibration") -> tuple[int, set[str], str]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, package, *argv], capture_output=True, text=True, cwd=ROOT, timeout=120
    )
    line = [x for x in done.stderr.splitlines() if x.startswith("MODULES ")][-1]
    return done.returncode, set(line.split()[1:]), done.stdout


@pytest.mark.parametrize(
    "command", ["metrics", "audit", "check", "compare", "agree", "position", "ppi", "review", "history"]
)
def test_help_imports_no_numeric_library(command: str) -> None:
    code, modules, out = imported(command, "--help")
    assert code == 0 and f"python -m calibration {command}" in out
    assert not modules & {"numpy", "pyarrow", *HEAVY}, modules & {"numpy", "pyarrow", *HEAVY}


@pytest.mark.skipif(not DATA.is_dir(), reason="the shared reference data is not beside the checkout")
@pytest.mark.parametrize(
    "argv",
    [
        ["metrics", str(DATA / "qrels.test"), str(DATA / "results.test")],
        ["metrics", str(DATA / "qrels.test"), str(DATA / "results.test"), "--format", "trec"],
        ["audit", str(DATA / "qrels.test"), str(DATA / "results.test"), "-k", "10", "--fetch-depth", "100"],
        ["compare", str(DATA / "qrels.test"), str(DATA / "results.test"), str(DATA / "results.test")],
        ["check", str(DATA / "qrels.test"), str(DATA / "results.test"), "-k", "10", "--no-store"],
    ],
    ids=["metrics", "metrics-trec", "audit", "compare", "check-no-store"],
)
def test_a_retrieval_command_imports_no_pandas(argv: list[str]) -> None:
    code, modules, out = imported(*argv)
    assert code in (0, 1) and out.strip()
    used = {"scipy"} if argv[0] == "compare" else set()  # the t distribution of the paired test
    assert not modules & (set(HEAVY) - used), modules & (set(HEAVY) - used)


@pytest.mark.skipif(not DATA.is_dir(), reason="the shared reference data is not beside the checkout")
@pytest.mark.parametrize("command", ["metrics", "audit", "check", "holes"])
def test_a_space_separated_run_read_in_pieces_imports_no_pandas(command: str, tmp_path: Path) -> None:
    """The most common TREC layout (single spaces, no tabs) goes through the lean reader in pieces
    and the grouped scorer, whose query boundaries are Arrow booleans (#42: a boolean column once
    fell back to ``to_numpy``, which imports pandas; holes' top k took Arrow's uint64 sort indices
    back through ``pa.array``, which imports it too). Nor ``pyarrow.compute``, whose import makes a
    wrapper for each of Arrow's functions (40-50 ms: ``annotation.arrow_compute`` calls them by name)."""
    run = tmp_path / "run.txt"
    lines = [" ".join(line.split()) for line in (DATA / "results.test").read_text().splitlines()]
    run.write_text("\n".join(lines) + "\n")
    argv = [command, str(DATA / "qrels.test"), str(run), "-k", "10"]
    if command == "check":
        argv.append("--no-store")
    code, modules, out = imported(*argv, "--format", "json")
    assert code in (0, 1) and '"301"' in out  # a query of the file, in the JSON
    assert not modules & {*HEAVY, "pyarrow.compute"}, modules & {*HEAVY, "pyarrow.compute"}


def test_a_lean_run_with_a_score_of_each_kind_imports_no_pandas(tmp_path: Path) -> None:
    """The same without the shared data: a generated run read in pieces, its scores checked for
    NaN over a view of Arrow's buffer (``Array.to_numpy`` imports pandas: 30 MB and a quarter of a
    second more on the 10M-line run, #42 item 4), its ids for comment lines."""
    run, qrels = tmp_path / "run.txt", tmp_path / "qrels.txt"
    run.write_text("".join(f"q{q} Q0 d{d} {d + 1} {10 - d}.5 tag\n" for q in range(3) for d in range(5)))
    qrels.write_text("".join(f"q{q} 0 d{q} 1\n" for q in range(3)))
    code, modules, out = imported("metrics", str(qrels), str(run), "-k", "10", "--format", "json")
    assert code == 0 and '"q2"' in out
    assert not modules & {*HEAVY, "pyarrow.compute"}, modules & {*HEAVY, "pyarrow.compute"}


@pytest.mark.parametrize("command", ["metrics", "audit", "check", "holes"])
def test_judged_queries_the_run_never_asked_import_no_pandas(command: str, tmp_path: Path) -> None:
    """Judgments of queries the run does not answer (the usual case: a golden set larger than one
    run) are scored against an empty run, whose query column once went through ``pa.array``,
    which imports pandas (0.3 s of every such run)."""
    run, qrels = tmp_path / "run.txt", tmp_path / "qrels.txt"
    run.write_text("".join(f"q{q} Q0 d{d} {d + 1} {10 - d}.5 tag\n" for q in range(3) for d in range(5)))
    qrels.write_text("".join(f"q{q} 0 d{q} 1\n" for q in range(6)))  # q3, q4, q5 never asked
    argv = [command, str(qrels), str(run), "-k", "10", "--format", "json"]
    code, modules, out = imported(*argv, *(["--no-store"] if command == "check" else []))
    assert code in (0, 1) and '"q2"' in out
    assert not modules & {*HEAVY, "pyarrow.compute"}, modules & {*HEAVY, "pyarrow.compute"}


@pytest.mark.parametrize("command", ["metrics", "audit", "check", "compare"])
def test_a_query_answered_with_nothing_imports_no_arrow_compute(command: str, tmp_path: Path) -> None:
    """A JSONL run's empty ranking (a query asked and answered with nothing) was found among the
    judged queries through Arrow's ``Array.drop_null``, which imports ``pyarrow.compute``."""
    run, qrels = tmp_path / "run.jsonl", tmp_path / "qrels.txt"
    rankings = {"q0": ["d0", "d1"], "q1": [], "q2": ["d2", "d0"]}
    run.write_text(
        "".join(f'{{"query_id": "{q}", "ranking": {json.dumps(r)}}}\n' for q, r in rankings.items())
    )
    qrels.write_text("".join(f"q{q} 0 d{q} 1\n" for q in range(3)))
    runs = [str(run), str(run)] if command == "compare" else [str(run)]
    extra = ["--no-store"] if command == "check" else []
    code, modules, out = imported(command, str(qrels), *runs, "-k", "10", "--format", "json", *extra)
    assert code in (0, 1) and ('"q1"' in out or command == "compare"), out
    assert not modules & {*HEAVY, "pyarrow.compute"} - {"scipy"}, modules & {*HEAVY, "pyarrow.compute"}


@pytest.mark.parametrize("case", ["extra-queries", "hole-sample"])
def test_judge_filled_figures_import_no_pandas(case: str, tmp_path: Path) -> None:
    """``--judge-labels`` on a run read whole, the judgments holding queries it never asked, and
    the worked example with its hole sample: the judged queries kept went to Arrow as a numpy
    boolean mask through ``pa.array``, which imports pandas (scipy is the judge's agreement's)."""
    if case == "hole-sample":
        argv = [str(WORKED / "golden.yaml"), str(WORKED / "run.jsonl"), "-k", "5"]
        argv += [
            "--judge-labels",
            str(WORKED / "judge.qrels"),
            "--hole-sample",
            str(WORKED / "hole-sample.yaml"),
        ]
    else:
        run, qrels, judge = tmp_path / "run.jsonl", tmp_path / "qrels.txt", tmp_path / "judge.qrels"
        run.write_text(
            "".join(f'{{"query_id": "q{q}", "ranking": ["d0", "d1", "d2", "d3"]}}\n' for q in range(3))
        )
        qrels.write_text("".join(f"q{q} 0 d{q} 1\n" for q in range(6)))  # q3-q5 never asked
        judge.write_text("".join(f"q{q} 0 d{d} {d % 3}\n" for q in range(3) for d in range(4)))
        argv = [str(qrels), str(run), "-k", "3", "--judge-labels", str(judge)]
    code, modules, out = imported("metrics", *argv, "--format", "json")
    assert code == 0 and '"judge_filled"' in out, out
    assert not modules & ({*HEAVY, "pyarrow.compute"} - {"scipy"}), modules & {*HEAVY, "pyarrow.compute"}


def test_agree_imports_neither_pandas_nor_arrows_compute_module(tmp_path: Path) -> None:
    """``agree`` on a labels CSV (#42: its CPU is held to 1.5x an import of numpy, scipy and pyarrow)."""
    labels = tmp_path / "labels.csv"
    rows = [f"i{i},r{r},{(i * (r + 1)) % 4}" for r in range(3) for i in range(40)]
    labels.write_text("item,rater,label\n" + "\n".join(rows) + "\n")
    code, modules, out = imported("agree", str(labels), "--format", "json")
    assert code in (0, 1) and '"r0"' in out
    assert not modules & {*HEAVY, "pyarrow.compute"}, modules & {*HEAVY, "pyarrow.compute"}


def test_the_worked_example_metrics_import_no_pandas() -> None:
    code, modules, out = imported(
        "metrics", str(WORKED / "golden.yaml"), str(WORKED / "run.jsonl"), "-k", "5", "--format", "json"
    )
    assert code == 0 and '"q_broad"' in out
    assert not modules & set(HEAVY), modules & set(HEAVY)


@pytest.mark.parametrize(
    "values, type_",
    [
        (["q1", "q2", "q1"], "string"),
        (["maïs", "", "穀物", "q"], "string"),
        ([], "string"),
        (["a", None, "b"], "string"),
        ([3.0, 1, 2.5], "float64"),
        ([1, 2, 3], "int64"),
        ([1, None], "int64"),
        ([1.5, 2.0], "int64"),
        ("numpy-int64", None),
        ("numpy-float64", None),
        ("numpy-uint32", None),
        ("numpy-int32-view", "int64"),
        ("numpy-bool", None),
        ("numpy-bool", "bool_"),
        ("numpy-bool-view", None),
        ("numpy-bool-empty", None),
    ],
)
def test_arrow_builds_what_pa_array_builds(values, type_) -> None:
    """``annotation.model.arrow`` (Arrow's buffers laid out directly, so pandas is never imported)
    gives the very array ``pa.array`` gives, nulls and non-ASCII text included."""
    import numpy as np
    import pyarrow as pa

    from annotation.model import arrow

    arrays = {
        "numpy-int64": np.array([5, -1, 7], dtype=np.int64),
        "numpy-float64": np.array([0.5, np.nan, 2.0]),
        "numpy-uint32": np.array([1, 4_000_000_000], dtype=np.uint32),
        "numpy-int32-view": np.arange(10, dtype=np.int32)[::3],
        "numpy-bool": np.array([True, False, False, True, True, False, True, True, False, True, True]),
        "numpy-bool-view": (np.arange(40) % 3 == 0)[1::2],
        "numpy-bool-empty": np.zeros(0, dtype=bool),
    }
    values = arrays.get(values, values) if isinstance(values, str) else values
    arrow_type = getattr(pa, type_)() if type_ else None
    got = arrow(values, arrow_type)
    want = pa.array(values, arrow_type)
    got.validate(full=True)
    assert (
        got.type == want.type
        and got.to_pylist() == want.to_pylist()
        or (got.type == want.type and str(got) == str(want))
    )


def test_arrow_refuses_what_pa_array_refuses() -> None:
    import pyarrow as pa

    from annotation.model import arrow

    with pytest.raises(pa.ArrowInvalid):
        pa.array(["1.5"], pa.float64())
    with pytest.raises(pa.ArrowInvalid):
        arrow(["1.5"], pa.float64())  # np.asarray would have parsed the text; pyarrow refuses it


def test_the_light_entry_names_every_command() -> None:
    """``calibration.__main__`` names the commands without importing them: the same names as the
    parser's and as the commands module's, so a new command cannot be parsed and then not found."""
    import argparse

    import calibration.__main__ as entry
    from calibration import commands_cli, plan_cli, project_cli

    parser = entry.build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    # `plan` and `project` live in their own faces (plan_cli.py, project_cli.py), every other
    # command in commands_cli
    assert set(entry.COMMANDS) == set(commands_cli.COMMANDS) | {"plan", "project"} == set(sub.choices)
    assert "plan" not in commands_cli.COMMANDS and plan_cli.run.__name__ == "run"
    assert "project" not in commands_cli.COMMANDS and project_cli.run.__name__ == "run"


@pytest.mark.parametrize(
    "argv",
    [[], ["import"], ["pool"], ["baseline"], ["annotators", "add"], ["handout"], ["imports", "retire"]]
    + [["migrate"], ["export"]],
    ids=lambda argv: " ".join(argv) or "annotation",
)
def test_annotation_help_imports_no_numeric_library(argv: list[str]) -> None:
    """``python -m annotation ... --help`` (1.45 s of CPU when it loaded the store, the exports,
    the judge and the demo's review)."""
    code, modules, out = imported(*argv, "--help", package="annotation")
    assert code == 0 and "python -m annotation" in out
    assert not modules & {"numpy", "pyarrow", "yaml", *HEAVY}, modules & {"numpy", "pyarrow", "yaml", *HEAVY}


def test_annotations_light_entry_names_every_command_and_choice() -> None:
    """The entry's names are the parser's and the commands module's; the choices named without
    loading them are the ones the code carries out (the export registry, the store's aggregates)."""
    import argparse

    import annotation.__main__ as entry
    from annotation import choices, commands_cli
    from annotation.exports import FORMATS
    from annotation.store.labels import aggregate_grades

    parser = entry.build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    spans = {"chunk", "import-chroma"}  # no store: their own face, annotation/spans_cli.py
    assert set(entry.NAMES) == set(commands_cli.COMMANDS) and not spans & set(entry.NAMES)
    assert set(entry.NAMES) | spans == set(entry.COMMANDS) == set(sub.choices)
    assert choices.EXPORT_FORMATS == {name: fmt.writes for name, fmt in FORMATS.items()}
    assert list(choices.EXPORT_FORMATS) == list(FORMATS)
    assert [aggregate_grades([1, 2, 2, 3], method) for method in choices.AGGREGATES] == [2, 2, 2]


@pytest.mark.parametrize(
    "argv",
    [[], ["grade"], ["compare"], ["fit-lexical"], ["batch", "collect"], ["list"]],
    ids=lambda argv: " ".join(argv) or "judge",
)
def test_judge_help_imports_no_client_nor_store(argv: list[str]) -> None:
    """``python -m judge grade --help`` (0.8 s of CPU when it loaded openai, numpy, pyarrow, pandas
    and the store)."""
    code, modules, out = imported(*argv, "--help", package="judge")
    assert code == 0 and "python -m judge" in out
    assert not modules & {"numpy", "pyarrow", "httpx", *HEAVY}, modules & {
        "numpy",
        "pyarrow",
        "httpx",
        *HEAVY,
    }


def test_the_judges_light_entry_names_every_command() -> None:
    import argparse

    import judge.__main__ as entry
    from judge import client, commands_cli, limits

    parser = entry.build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    assert set(entry.NAMES) == set(entry.COMMANDS) == set(commands_cli.COMMANDS) == set(sub.choices)
    assert client.MAX_REPLY_BYTES is limits.MAX_REPLY_BYTES  # one default, read by the client


def test_a_judge_run_imports_no_pandas(tmp_path: Path) -> None:
    """``python -m judge grade`` against an endpoint, start to exit: the calls go through the openai
    SDK (its own ``request``, which its ``post`` calls: the code path users run against OpenAI, vLLM
    or Ollama; loaded in a thread as the judge is registered, never by a dry run nor by a run with
    every call done), the store opens without pandas nor sqlite-utils (its schema is current: no
    migration to apply, the one use of sqlite-utils), and up to the
    first call nothing loads numpy or pyarrow (a dry run plans as the run does; the closing
    agreement line's statistics load numpy while the calls are in flight). Nothing of a judge run
    loads pyarrow: the policy's reader names its errors without the data model (#42). #42,
    item 5."""
    from annotation.model import Run
    from annotation.pooling import pool
    from annotation.store import Store
    from tests.fake_openai import FakeOpenAI

    db = tmp_path / "judge.db"
    with Store(db) as store:
        store.import_queries({"q1": "how do I store maize", "q2": "how do I dry beans"})
        store.import_corpus([{"id": f"c{j}", "text": f"chunk {j}: dry the grain first"} for j in range(3)])
        store.import_run(Run.from_rankings({q: ["c0", "c1", "c2"] for q in ("q1", "q2")}), "r")
        pool(store, 3)
    heavy = set(HEAVY)  # sqlite-utils too: a current store's schema needs no migration (#42)
    with FakeOpenAI(latency=0.0) as server:
        argv = ["grade", "--db", str(db), "--rubric", "relevance", "--base-url", server.base_url]
        argv += ["--model", "fake-judge"]
        code, planned, out = imported(*argv, "--dry-run", package="judge")
        assert code == 0 and "6 calls" in out and "no call made" in out, out
        assert not planned & {"numpy", "pyarrow", *heavy}, planned & {"numpy", "pyarrow", *heavy}
        code, modules, out = imported(*argv, package="judge")
        assert code == 0 and "6 calls made" in out and "uncalibrated" in out, out
        assert not modules & (heavy - {"openai"}), modules & heavy  # the calls are the SDK's
        assert "openai" in modules and "pyarrow" not in modules
        code, again, out = imported(*argv, package="judge")  # every call done: no client, no SDK
    assert code == 0 and "0 calls made, 6 of 6 already done" in out, out
    assert not again & (heavy | {"pyarrow"}), again & (heavy | {"pyarrow"})


def test_judge_list_loads_no_scipy_stats(tmp_path: Path) -> None:
    """``python -m judge list`` on the demo store (#43, item 9: 1.7 s of CPU for its judges): a
    judge's reading shows no pass rate, so the faithfulness judge's pass rate (whose interval loads
    scipy.stats, ~0.6 s) is not computed; the readings printed are those of the review."""
    db = tmp_path / "demo.db"
    subprocess.run([sys.executable, "-m", "denominator", "demo", "--db", str(db)], cwd=ROOT, check=True)
    probe = PROBE.replace("{m.split('.')[0] for m in sys.modules}", "set(sys.modules)")
    done = subprocess.run(
        [sys.executable, "-c", probe, "judge", "list", "--db", str(db)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    modules = set([x for x in done.stderr.splitlines() if x.startswith("MODULES ")][-1].split()[1:])
    assert done.returncode == 0, done.stderr
    assert "offline-lexical/faithfulness v1 (current)" in done.stdout
    assert "unweighted kappa 1.000 against people (n = 16 over 4 queries)" in done.stdout
    assert "scipy.stats" not in modules


BLAS_PROBE = PROBE.replace(
    "print('MODULES'",
    "import os\nprint('BLAS', os.environ.get('OPENBLAS_NUM_THREADS'), 'numpy' in sys.modules, file=sys.stderr)\n"
    "print('MODULES'",
)


@pytest.mark.parametrize("own", [None, "3"])
@pytest.mark.parametrize("package", ["calibration", "judge"])
def test_a_command_that_multiplies_no_matrix_starts_one_blas_thread(
    package: str, own: str | None, tmp_path: Path
) -> None:
    """#42: numpy's import starts OpenBLAS's thread per core, 0.05 s of CPU at every start of a
    command that multiplies no matrix (half of numpy's import). ``calibration metrics`` and
    ``judge list`` ask for one thread before numpy loads; a user's own OPENBLAS_NUM_THREADS stands."""
    import os

    if package == "calibration":
        argv = ["metrics", str(ROOT / "examples" / "worked-example" / "golden.yaml")]
        argv += [str(ROOT / "examples" / "worked-example" / "run.jsonl")]
    else:
        db = tmp_path / "demo.db"
        subprocess.run([sys.executable, "-m", "denominator", "demo", "--db", str(db)], cwd=ROOT, check=True)
        argv = ["list", "--db", str(db)]
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    if own is not None:
        env["OPENBLAS_NUM_THREADS"] = own
    done = subprocess.run(
        [sys.executable, "-c", BLAS_PROBE, package, *argv],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    [line] = [x for x in done.stderr.splitlines() if x.startswith("BLAS ")]
    assert line == f"BLAS {own or '1'} True"


@pytest.mark.parametrize("collecting", [True, False])
def test_the_sdk_loads_with_no_collection_and_is_frozen(collecting: bool) -> None:
    """The judge's start imports the SDK with the collector off (its ~100,000 objects live to the
    exit: a tenth of the import's CPU, #42), then freezes them, and leaves the collector as it was."""
    script = f"""
import gc, sys
from unittest import mock
import judge.commands_cli as cli
seen = []
real = cli.importlib.import_module
def watched(name, package=None):
    if name == "openai":
        seen.append(gc.isenabled())
    return real(name, package)
{"" if collecting else "gc.disable()"}
with mock.patch.object(cli.importlib, "import_module", watched):
    cli._import_sdk()
print(seen, gc.isenabled(), gc.get_freeze_count() > 50_000, "openai" in sys.modules)
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["[False]", str(collecting), "True", "True"]
