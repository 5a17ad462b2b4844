"""README snapshot: the commands the docs show (README.md and docs/*.md), run as a user runs them,
against a stored snapshot; ``test_every_command_the_docs_show_is_run`` holds SPEC to the docs.

Every invocation runs as a subprocess (``sys.executable -m calibration|annotation|judge ...``) from
the repository root, offline, on examples/worked-example and a demo store built once per module
(``python -m denominator demo``; copied into each scenario that uses it). The snapshot of an
invocation holds its exit code; for JSON output its key structure (dict keys sorted, a list by its
first element, a dict keyed by query, chunk, trace or annotator ids as ``{"*": one value}``, leaves
as str/number/bool/null); else the first line of stdout; the first line of stderr; and for exports
the structure of the file written or the files of the folder written. Temporary paths read
``<tmp>``; lines that carry a date, an ISO week taken from today or a token are not recorded.

Regenerate tests/data/readme_snapshot.json (then review its diff)::

    DENOMINATOR_UPDATE_SNAPSHOT=1 .venv/bin/python -m pytest tests/test_readme_snapshot.py

Not run here because they need a live LLM endpoint: ``judge grade|compare --base-url URL --model M``
without ``--dry-run`` (also with ``--repeats``, ``--concurrency``, ``--schema``, ``--timeout``,
``--prices``), their Ctrl-C/resume behaviour, and ``make run``/``make bench``/``make test``; nor
the commands in NOT_RUN (a server they start or need).
"""

from __future__ import annotations

import difflib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
SNAPSHOT = ROOT / "tests" / "data" / "readme_snapshot.json"
W = "examples/worked-example"
F = "tests/data/formats"
BAD = "tests/data/bad"
ID_PATHS = frozenset({"$.queries", "$.estimate.queries"})  # always keyed by query id
ANNOTATORS = {"ann", "bob", "cat", "dan", "lee", "worked-example"}


def _data_ids() -> frozenset[str]:
    """Query, chunk and trace ids of the worked example, and the demo's annotators."""
    ids = set(ANNOTATORS)
    for name in ("corpus.jsonl", "run.jsonl", "dupe.jsonl", "traces.jsonl"):
        for line in (ROOT / W / name).read_text().splitlines():
            row = json.loads(line)
            ids.update(str(row[k]) for k in ("id", "query_id") if k in row)
            ids.update(row.get("ranking", []))
    return frozenset(ids)


DATA_IDS = _data_ids()


def shape(value: Any, path: str = "$") -> Any:
    """The key structure of a JSON value (see the module docstring)."""
    if isinstance(value, dict):
        if value and (path in ID_PATHS or all(key in DATA_IDS for key in value)):
            return {"*": shape(value[min(value)], f"{path}.*")}
        return {key: shape(value[key], f"{path}.{key}") for key in sorted(value)}
    if isinstance(value, list):
        return [shape(value[0], f"{path}[]")] if value else []
    if value is None or isinstance(value, bool | str):
        return {type(None): "null", bool: "bool", str: "str"}[type(value)]
    return "number"


@dataclass(frozen=True)
class Step:
    name: str
    args: str  # module and arguments, with {W}, {F}, {BAD}, {GR} and {T} (the scenario's folder)
    json: bool = False  # stdout is JSON: record its structure instead of its first line
    stdout: bool = True  # False: the first line carries a date, this week or a token
    stderr: bool = True
    env: dict[str, str] = field(default_factory=dict)
    out: str = ""  # a JSON (first line of JSONL) file the command writes, relative to {T}
    tree: str = ""  # a folder the command writes, relative to {T}
    subcommands: bool = False  # --help: record the subcommand choices


# One invocation a line: ``name | flags | module and arguments``; ``[scenario]`` starts a scenario
# (``[scenario demo]``: with a copy of the demo store at {T}/demo.db); a scenario's lines run in
# order, scenarios in parallel. Flags: json (stdout is JSON), help (record the subcommands),
# -stdout / -stderr (that first line names a date, this week or a token), out=FILE (a JSON or
# JSONL file written), tree=DIR (a folder written), env:KEY=VALUE. {GR} = golden.yaml run.jsonl.
SPEC = """
[help]
calibration --help                 | help | calibration --help
annotation --help                  | help | annotation --help
annotation annotators --help       | help | annotation annotators --help
judge --help                       | help | judge --help
calibration (no command)           |      | calibration
annotation (no command)            |      | annotation
judge (no command)                 |      | judge
[metrics]
metrics table                      |      | calibration metrics {GR} -k 5
metrics json                       | json | calibration metrics {GR} -k 5 --format json
metrics trec                       |      | calibration metrics {GR} -k 5 --format trec
metrics qrels options json         | json | calibration metrics {W}/truth.qrels {W}/run.jsonl -k 5 -k 10 --min-grade 2 --missing zero --gain exp --format json
metrics dupe json                  | json | calibration metrics {W}/dupe.yaml {W}/dupe.jsonl -k 5 --format json
metrics usage: no files            |      | calibration metrics
metrics usage: bad format          |      | calibration metrics {GR} --format csv
metrics input: missing run         |      | calibration metrics {W}/golden.yaml {T}/missing.jsonl
metrics input: qrels line          |      | calibration metrics {T}/bad.qrels {W}/run.jsonl
metrics input: run score           |      | calibration metrics {W}/truth.qrels {T}/run.txt
metrics input: yaml tag            |      | calibration metrics {BAD}/golden-python-tag.yaml {W}/run.jsonl
[holes]
holes table                        |      | calibration holes {GR} -k 5
holes json                         | json | calibration holes {GR} -k 5 --sample 2 --seed 1 --format json
holes csv                          |      | calibration holes {GR} -k 5 --format csv
holes usage: out without sample    |      | calibration holes {GR} -k 5 --out {T}/sample.yaml
metrics judge-filled               |      | calibration metrics {GR} -k 5 --judge-labels {W}/judge.qrels
metrics judge-filled json          | json | calibration metrics {GR} -k 5 --judge-labels {W}/judge.qrels --format json
metrics corrected                  |      | calibration metrics {GR} -k 5 --judge-labels {W}/judge.qrels --hole-sample {W}/hole-sample.yaml
metrics corrected json             | json | calibration metrics {GR} -k 5 --judge-labels {W}/judge.qrels --hole-sample {W}/hole-sample.yaml --format json
metrics input: not a hole sample   |      | calibration metrics {GR} -k 5 --judge-labels {W}/judge.qrels --hole-sample {W}/sampled.yaml
metrics usage: sample alone        |      | calibration metrics {GR} -k 5 --hole-sample {W}/hole-sample.yaml
compare judge-filled               |      | calibration compare {GR} {W}/run.jsonl -k 5 --judge-labels {W}/judge.qrels
check judge-filled                 |      | calibration check {GR} -k 5 --no-store --judge-labels {W}/judge.qrels --hole-sample {W}/hole-sample.yaml
[audit]
audit table                        |      | calibration audit {GR} -k 5 --fetch-depth 10 --corpus {W}/corpus.jsonl --truth {W}/truth.qrels
audit json                         | json | calibration audit {GR} -k 5 --fetch-depth 10 --corpus {W}/corpus.jsonl --truth {W}/truth.qrels --format json
audit gate duplicates              |      | calibration audit {W}/dupe.yaml {W}/dupe.jsonl -k 5 --fail-on duplicates
audit gate duplicates json         | json | calibration audit {W}/dupe.yaml {W}/dupe.jsonl -k 5 --fail-on duplicates --format json
audit gates pass                   |      | calibration audit {GR} -k 5 --fetch-run {W}/run.jsonl --corpus-size 24 --fail-on undefined-recall --fail-on 'judged-at-k<0.2' --fail-on 'label-coverage<0.1'
audit estimate table               |      | calibration audit {W}/sampled.yaml {W}/run.jsonl -k 5 --estimate
audit estimate exact json          | json | calibration audit {W}/sampled.yaml {W}/run.jsonl -k 5 --estimate --interval exact --format json
audit usage: no -k                 |      | calibration audit {GR}
audit usage: unknown gate          |      | calibration audit {GR} -k 5 --fail-on bogus
audit input: missing truth         |      | calibration audit {GR} -k 5 --truth {T}/missing.qrels
[compare]
compare table                      |      | calibration compare {GR} {T}/candidate.jsonl -k 5 -k 10
compare json                       | json | calibration compare {GR} {T}/candidate.jsonl -k 5 --permutations 1000 --seed 1 --format json
compare equal runs json            | json | calibration compare {GR} {W}/run.jsonl -k 5 --format json
compare usage: one run             |      | calibration compare {GR}
compare input: no shared query     |      | calibration compare {GR} {W}/dupe.jsonl
[check]
check README                       |      | calibration check {GR} -k 5 --corpus {W}/corpus.jsonl --no-store
check with the default store       |      | calibration check {GR} -k 5 --corpus {W}/corpus.jsonl
[agree-position-ppi]
agree table                        |      | calibration agree {T}/labels.csv
agree json                         | json | calibration agree {T}/labels.csv --format json
agree qrels table                  |      | calibration agree --qrels {W}/golden.yaml {W}/truth.qrels --trusted 0.7
agree qrels json                   | json | calibration agree --qrels {W}/golden.yaml {W}/truth.qrels --format json
agree usage: nothing               |      | calibration agree
agree input: missing column        |      | calibration agree {BAD}/agree-missing-column.csv
agree usage: bootstrap gone        |      | calibration agree {T}/labels.csv --bootstrap 500
position table                     |      | calibration position {T}/position.csv
position json                      | json | calibration position {T}/position.csv --format json
position input: bad order          |      | calibration position {BAD}/position-bad-order.csv
ppi table                          |      | calibration ppi {T}/labeled.csv {T}/unlabeled.csv
ppi json                           | json | calibration ppi {T}/labeled.csv {T}/unlabeled.csv --alpha 0.1 --format json
ppi classical json                 | json | calibration ppi {T}/labeled.csv {T}/unlabeled.csv --lam 1 --format json
ppi usage: one file                |      | calibration ppi {T}/labeled.csv
ppi input: wrong header            |      | calibration ppi {T}/unlabeled.csv {T}/unlabeled.csv
[review demo]
review table                       |      | calibration review --db {T}/demo.db --week 2026-W01
review json                        | json | calibration review --db {T}/demo.db --week 2026-W01 --format json
review markdown                    |      | calibration review --db {T}/demo.db --week 2026-W01 --format markdown
review html                        |      | calibration review --db {T}/demo.db --week 2026-W01 --format html
review to file                     |      | calibration review --db {T}/demo.db --week 2026-W01 --min-labels 10 --trusted 0.5 --format markdown -o {T}/review.md
review sample                      |      | calibration review --db {T}/demo.db --week 2026-W02 --sample 4 --annotators ann,bob
review usage: bad format           |      | calibration review --db {T}/demo.db --format pdf
review input: bad week             |      | calibration review --db {T}/demo.db --week 2026-49
review this week                   | -stdout | calibration review --db {T}/demo.db
[imports-handout demo]
imports list                       |      | annotation imports list --db {T}/demo.db
imports retire                     |      | annotation imports retire 3 --db {T}/demo.db --reason "corpus in the queries slot"
imports restore                    |      | annotation imports restore 3 --db {T}/demo.db
handout                            |      | annotation handout --db {T}/demo.db
handout assigned                   |      | annotation handout --db {T}/demo.db --mode assigned
[import-pool-export]
import README                      |      | annotation import --db {T}/new.db --corpus {W}/corpus.jsonl --run {W}/run.jsonl --name retriever --stage fetch --labels {W}/golden.yaml --annotator worked-example
import README again                |      | annotation import --db {T}/new.db --corpus {W}/corpus.jsonl --run {W}/run.jsonl --name retriever --stage fetch --labels {W}/golden.yaml --annotator worked-example
baseline README                    |      | annotation baseline --db {T}/new.db --depth 100
pool README                        |      | annotation pool --db {T}/new.db --depth 10 --runs retriever,bm25-baseline
export README                      |      | annotation export --db {T}/new.db --format golden -o {T}/golden.yaml
import traces jsonl                |      | annotation import --db {T}/new.db --traces {W}/traces.jsonl
import queries                     |      | annotation import --db {T}/new.db --queries {T}/queries.tsv
baseline usage: method             |      | annotation baseline --db {T}/new.db --method tfidf
pool at the default depth (10)     |      | annotation pool --db {T}/new.db
import usage: run without name     |      | annotation import --db {T}/new.db --run {W}/run.jsonl
import usage: labels without annotator |  | annotation import --db {T}/new.db --labels {W}/golden.yaml
import input: missing corpus       |      | annotation import --db {T}/new.db --corpus {T}/missing.jsonl
import input: duplicate id         |      | annotation import --db {T}/new.db --corpus {BAD}/corpus-duplicate-id.jsonl
import input: other text           |      | annotation import --db {T}/new.db --traces {F}/langfuse-trace.json --from langfuse
[trace-imports]
import openinference               |      | annotation import --db {T}/oi.db --traces {F}/openinference-nested.json --from openinference
import openinference again         |      | annotation import --db {T}/oi.db --traces {F}/openinference-nested.json --from openinference
import langfuse map                |      | annotation import --db {T}/lf.db --traces {F}/langfuse-observations.json --from langfuse --map retriever=search-docs --map chunk_id=metadata.doc_id --map score=metadata.similarity
import langsmith prefix            |      | annotation import --db {T}/ls.db --traces {F}/langsmith-runs.json --from langsmith --run-prefix v2:
import usage: bad map              |      | annotation import --db {T}/lf.db --traces {F}/langfuse-trace.json --from langfuse --map nokey
import usage: bad from             |      | annotation import --db {T}/lf.db --traces {F}/traces.jsonl --from otel
[exports demo]
export golden                      |      | annotation export --db {T}/demo.db --format golden -o {T}/ex-golden
export qrels                       |      | annotation export --db {T}/demo.db --format qrels -o {T}/ex-qrels
export csv                         |      | annotation export --db {T}/demo.db --format csv -o {T}/ex-csv
export ragas                       | out=ex-ragas | annotation export --db {T}/demo.db --format ragas -o {T}/ex-ragas
export deepeval                    | out=ex-deepeval | annotation export --db {T}/demo.db --format deepeval -o {T}/ex-deepeval
export beir                        | tree=ex-beir | annotation export --db {T}/demo.db --format beir -o {T}/ex-beir
export trec                        | tree=ex-trec | annotation export --db {T}/demo.db --format trec -o {T}/ex-trec
export phoenix                     | out=ex-phoenix | annotation export --db {T}/demo.db --format phoenix -o {T}/ex-phoenix
export one annotator               |      | annotation export --db {T}/demo.db --format qrels --annotator cat -o {T}/cat
export majority                    |      | annotation export --db {T}/demo.db --format golden --aggregate majority -o {T}/m
export threshold                   |      | annotation export --db {T}/demo.db --format ragas --threshold 2 -o {T}/r2
export usage: no output            |      | annotation export --db {T}/demo.db --format golden
import beir export                 |      | annotation import --db {T}/beir.db --beir {T}/ex-beir
import input: beir off scale       |      | annotation import --db {T}/beir.db --beir {BAD}/beir-score-off-the-scale
[estimate demo]
pool estimate without annotators   |      | annotation pool --db {T}/demo.db --depth 10 --estimate 6
baseline default                   |      | annotation baseline --db {T}/demo.db
pool estimate                      |      | annotation pool --db {T}/demo.db --depth 10 --estimate 6 --strata 50,100 --corpus-stratum --annotators ann,bob --overlap 0.25 --seed 3
pool second estimate               | -stderr | annotation pool --db {T}/demo.db --depth 10 --estimate 6 --annotators ann
export sampled golden              |      | annotation export --db {T}/demo.db --format golden -o {T}/sampled.yaml
audit estimate of export           | json | calibration audit {T}/sampled.yaml {W}/run.jsonl -k 5 --estimate --format json
[annotators demo]
annotators add annotator           |      | annotation annotators add ann --role annotator --db {T}/demo.db
annotators add admin               |      | annotation annotators add lee --role admin --db {T}/demo.db --url http://127.0.0.1:8502
annotators add with link           |      | annotation annotators add ann --role annotator --db {T}/demo.db --url http://127.0.0.1:8502
annotators new link                |      | annotation annotators link ann --db {T}/demo.db --url http://127.0.0.1:8502
annotators usage: bad url          |      | annotation annotators link ann --db {T}/demo.db --url 127.0.0.1:8502
annotators add again               |      | annotation annotators add ann --role admin --db {T}/demo.db
annotators usage: no role          |      | annotation annotators add zed --db {T}/demo.db
annotators list                    |      | annotation annotators list --db {T}/demo.db
annotators revoke                  |      | annotation annotators revoke ann --db {T}/demo.db
annotators revoke unknown          |      | annotation annotators revoke nobody --db {T}/demo.db
annotators list after revoke       |      | annotation annotators list --db {T}/demo.db
[sign-in demo]
sign-in add by e-mail              |      | annotation annotators add ann --role annotator --email ann@example.com --db {T}/demo.db
sign-in add by subject             |      | annotation annotators add lee --role admin --subject 1094788923384 --db {T}/demo.db
sign-in map-claim groups           |      | annotation annotators map-claim groups=labellers --role annotator --db {T}/demo.db
sign-in map-claim admins           |      | annotation annotators map-claim groups=eval-leads --role admin --db {T}/demo.db
sign-in map-claim domain           |      | annotation annotators map-claim hd=example.com --role annotator --db {T}/demo.db
sign-in map-claim dotted           |      | annotation annotators map-claim realm_access.roles=labeller --role annotator --db {T}/demo.db
sign-in list                       |      | annotation annotators list --db {T}/demo.db
sign-in map-claim remove           |      | annotation annotators map-claim groups=labellers --remove --db {T}/demo.db
sign-in revoke                     |      | annotation annotators revoke ann --db {T}/demo.db
[judge demo]
judge fit-lexical relevance        |      | judge fit-lexical --db {T}/demo.db --rubric relevance
judge fit-lexical faithfulness     |      | judge fit-lexical --db {T}/demo.db --rubric faithfulness --seed 1
judge grade faithfulness           |      | judge grade --db {T}/demo.db --rubric faithfulness
judge grade lexical limit          |      | judge grade --db {T}/demo.db --rubric relevance --judge lexical --limit 5
judge list                         | -stdout | judge list --db {T}/demo.db
judge list missing store           |      | judge list --db {T}/empty.db
judge compare dry-run              | env:OPENAI_BASE_URL=http://127.0.0.1:8000/v1 | judge compare --db {T}/demo.db --model my-model --dry-run
judge grade dry-run                |      | judge grade --db {T}/demo.db --rubric relevance --model my-model --dry-run --base-url http://127.0.0.1:8000/v1 --schema prompt --limit 3
judge compare offline              |      | judge compare --db {T}/demo.db
judge usage: no rubric             |      | judge grade --db {T}/demo.db
judge usage: bad rubric            |      | judge fit-lexical --db {T}/demo.db --rubric style
judge input: missing prices        |      | judge list --db {T}/demo.db --prices {T}/missing.json
"""


def parse_spec(spec: str) -> dict[str, tuple[bool, list[Step]]]:
    """SPEC as {scenario: (uses the demo store, its steps)}."""
    scenarios: dict[str, tuple[bool, list[Step]]] = {}
    for line in spec.strip().splitlines():
        if line.startswith("["):
            name, *demo = line.strip("[]").split()
            steps: list[Step] = []
            scenarios[name] = (bool(demo), steps)
            continue
        name, flags, args = (part.strip() for part in line.split("|", 2))
        opts = dict(flag.split("=", 1) if "=" in flag else (flag, "") for flag in flags.split())
        env = {key[4:]: value for key, value in opts.items() if key.startswith("env:")}
        keep = {"stdout": "-stdout" not in opts, "stderr": "-stderr" not in opts}
        written = {"out": opts.get("out", ""), "tree": opts.get("tree", "")}
        steps.append(Step(name, args, "json" in opts, **keep, env=env, **written, subcommands="help" in opts))
    return scenarios


SCENARIOS = parse_spec(SPEC)
# the demo store every ``[scenario demo]`` copies; its stdout names this week
DEMO = Step("denominator demo", "denominator demo --db {T}/demo.db", stdout=False)

API_SCRIPT = r"""
import ast, json, re, sys
block = re.search(r"# Python API.*?```python\n(.*?)```", open("docs/api.md").read(), re.S).group(1)
ns, values, imports = {}, [], []
for node in ast.parse(block).body:
    if isinstance(node, ast.Expr):
        values.append(eval(compile(ast.Expression(node.value), "<readme>", "eval"), ns))
    else:
        imports += [ast.unparse(node)] if isinstance(node, ast.ImportFrom) else []
        exec(compile(ast.Module([node], []), "<readme>", "exec"), ns)
public = {n: [type(ns[n]).__name__, sorted(a for a in dir(ns[n]) if a[0] != "_")] for n in ("qrels", "run", "result")}
json.dump({"imports": imports, "objects": public, "values": values}, sys.stdout, default=repr)
"""


def write_fixtures(folder: Path) -> None:
    """The small input files the README describes but does not ship."""
    runs = [json.loads(line) for line in (ROOT / W / "run.jsonl").read_text().splitlines()]
    candidate = [{**r, "ranking": r["ranking"][1:] + r["ranking"][:1]} for r in runs]  # each top-1 sinks
    files = {
        "candidate.jsonl": "".join(json.dumps(r) + "\n" for r in candidate),
        "labels.csv": "item,rater,label\n1,ann,1\n1,bob,1\n2,ann,0\n2,bob,1\n3,ann,2\n3,bob,2\n4,ann,3\n4,bob,3\n5,ann,0\n5,bob,0\n",
        "position.csv": "item,order,choice\np1,AB,A\np1,BA,B\np2,AB,A\np2,BA,A\np3,AB,tie\np3,BA,tie\n",
        "labeled.csv": "human,judge\n1,1\n0,1\n1,1\n0,0\n1,0\n1,1\n",
        "unlabeled.csv": "judge\n1\n0\n1\n1\n0\n1\n1\n1\n",
        "bad.qrels": "q1 0 d1\n",
        "run.txt": "q1 Q0 d1 1 1.0 run\nq1 Q0 d2 2 high run\n",  # README: run.txt:2: score: ...
        "queries.tsv": "q_new\tHow do I store grain?\n",
    }
    for name, text in files.items():
        (folder / name).write_text(text)


def first_line(text: str, folder: Path) -> str:
    line = text.splitlines()[0] if text.strip() else ""
    for path in {str(folder.resolve()), str(folder)}:
        line = line.replace(path, "<tmp>")
    return line


def run(argv: list[str], folder: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "DENOMINATOR_"))}
    clean.update(COLUMNS="80", PYTHONHASHSEED="0", **(env or {}))
    return subprocess.run(
        [sys.executable, *argv], cwd=ROOT, env=clean, capture_output=True, text=True, timeout=600
    )


def run_step(step: Step, folder: Path) -> dict[str, Any]:
    command = step.args.format(W=W, F=F, BAD=BAD, T=folder, GR=f"{W}/golden.yaml {W}/run.jsonl")
    result = run(["-m", *shlex.split(command)], folder, step.env)
    entry: dict[str, Any] = {"cmd": first_line(command, folder), "exit": result.returncode}
    if step.subcommands:
        entry["subcommands"] = re.search(r"\{([^}]*)\}", result.stdout).group(1).split(",")
    elif step.json and result.stdout.startswith("{"):
        entry["json"] = shape(json.loads(result.stdout))
    elif step.stdout:
        entry["stdout"] = first_line(result.stdout, folder)
    if step.stderr:
        entry["stderr"] = first_line(result.stderr, folder)
    if step.out:
        written = (folder / step.out).read_text()
        entry["file"] = shape(json.loads(written.splitlines()[0] if written.startswith("{") else written))
    if step.tree:
        entry["files"] = sorted(
            p.relative_to(folder / step.tree).as_posix() for p in (folder / step.tree).rglob("*")
        )
    return entry


def run_scenario(item: tuple[str, tuple[bool, list[Step]]], base: Path, demo_db: Path) -> dict[str, Any]:
    name, (uses_demo, steps) = item
    folder = base / name
    folder.mkdir()
    write_fixtures(folder)
    if uses_demo:
        shutil.copy(demo_db, folder / "demo.db")
    return {step.name: run_step(step, folder) for step in steps}


def python_api() -> dict[str, Any]:
    result = run(["-c", API_SCRIPT], ROOT)
    assert result.returncode == 0, result.stderr
    api = json.loads(result.stdout)
    (mean, undefined), query, audited = api["values"]
    assert mean == pytest.approx(0.625, abs=1e-12) and undefined == 0  # README: (0.625, 0)
    return {
        "exit": result.returncode,
        "imports": api["imports"],
        "objects": api["objects"],
        "R@5 mean, undefined": [round(mean, 9), undefined],
        "evaluate_query": shape(query),
        "audit": shape(audited),
    }


# Commands the docs show on files of their own (``demo.db``, ``candidate.jsonl``, a trace export):
# the step that runs the same command on the snapshot's files.
RUN_AS = {
    "calibration compare golden.yaml baseline.jsonl candidate.jsonl -k 5 -k 10": "compare table",
    "annotation import --db demo.db --corpus examples/worked-example/corpus.jsonl --run "
    "examples/worked-example/run.jsonl --name retriever --stage fetch --labels "
    "examples/worked-example/golden.yaml --annotator worked-example": "import README",
    "annotation baseline --db demo.db --depth 100": "baseline README",
    "annotation export --db demo.db --format golden -o golden.yaml": "export README",
    "annotation import --db demo.db --traces spans.parquet --from openinference": "import openinference",
    "annotation import --db demo.db --traces trace.json --from langfuse --map retriever=search-docs "
    "--map chunk_id=metadata.doc_id --map score=metadata.similarity": "import langfuse map",
    "annotation import --db demo.db --traces runs.json --from langsmith --run-prefix v2:": "import langsmith prefix",
    # docs/sign-in.md: on the default database; run here on the demo's
    "annotation annotators add ann --role annotator --email ann@example.com": "sign-in add by e-mail",
    "annotation annotators add lee --role admin --subject 1094788923384": "sign-in add by subject",
    "annotation annotators map-claim groups=labellers --role annotator": "sign-in map-claim groups",
    "annotation annotators map-claim groups=eval-leads --role admin": "sign-in map-claim admins",
    "annotation annotators map-claim hd=example.com --role annotator": "sign-in map-claim domain",
    "annotation annotators list": "sign-in list",
    "annotation annotators map-claim realm_access.roles=labeller --role annotator": "sign-in map-claim dotted",
    "annotation annotators map-claim groups=labellers --remove": "sign-in map-claim remove",
    "annotation annotators revoke ann": "sign-in revoke",
}
# Shown and not run here: each needs a server.
NOT_RUN = {
    "denominator serve --db demo.db --port 8502": "serves the app until stopped (tests/e2e/test_wheel.py serves it)",
    "denominator serve --secrets /etc/denominator/secrets.toml --host 0.0.0.0 --port 8501": (
        "a provider and a server (tests/e2e/test_provider_browser.py)"
    ),
    "annotation migrate --from denominator.db --to postgresql://denominator@db.internal/labels": (
        "a PostgreSQL server (tests/test_migrate.py)"
    ),
    'annotation migrate --from "$DENOMINATOR_DB" --to back.db': "a PostgreSQL server (tests/test_migrate.py)",
    # docs/spans.md: on Chroma's corpora in the shared data, not in the snapshot's files
    "annotation chunk corpora/ --size 400 -o A.jsonl": "the shared chroma data (tests/test_spans.py chunks it)",
    "annotation chunk corpora/ --size 800 --overlap 200 -o B.jsonl": (
        "the shared chroma data (tests/test_spans.py runs this chunking)"
    ),
    "annotation chunk corpora/ --size 800 --by paragraph -o P.jsonl": (
        "the shared chroma data (bench/chunkers.py runs this chunking; tests/test_spans.py tests --by paragraph)"
    ),
    "annotation import-chroma questions.csv --corpora corpora/ -o golden.yaml": (
        "the shared chroma data (tests/test_spans.py runs it and checks its line)"
    ),
    # docs/labelling.md: a redirect to a file and back (tests/test_guidelines.py runs show and set on a store)
    "annotation guidelines show relevance --db demo.db > relevance.txt": "tests/test_guidelines.py runs it",
    "annotation guidelines set relevance --file relevance.txt --db demo.db": "tests/test_guidelines.py runs it",
    # docs/metrics.md: the sample file the Metrics page draws, its name ending in the run's digest
    "calibration metrics examples/worked-example/golden.yaml examples/worked-example/run.jsonl -k 5 "
    "--judge-labels judge.qrels --hole-sample hole-samples/hole-sample-k5-....yaml --db demo.db": (
        "a sample the page drew (tests/test_hole_sample_store.py runs metrics --hole-sample --db on one)"
    ),
    "calibration project golden.yaml --chunks B.jsonl --docs corpora/ -o golden-B.yaml": (
        "the shared chroma data (tests/test_projection.py runs project on a small case)"
    ),
}
SHOWN = re.compile(
    r"^(?:[A-Z_]+=\S+\s+)*(?:(?:\.venv/bin/)?python -m )?((?:calibration|annotation|judge|denominator)\b.*)$"
)


def shown_commands() -> list[tuple[str, str]]:
    """(page, command) of every command in a shell block of the docs: ``python -m`` and an
    environment set before it dropped, continued lines joined, a trailing comment cut."""
    out = []
    for page in DOCS:
        for block in re.findall(r"```(?:sh|bash)\n(.*?)```", page.read_text(encoding="utf-8"), re.S):
            for line in block.replace("\\\n", " ").splitlines():
                match = SHOWN.match(re.sub(r"\s+#.*$", "", line).strip())
                if match:
                    out.append((page.name, " ".join(match.group(1).split())))
    return out


def step_commands() -> dict[str, str]:
    """Each step's command as the docs would show it: {T}/ dropped, {W}, {F}, {GR} written out."""
    out = {}
    for step in [DEMO, *(step for _, steps in SCENARIOS.values() for step in steps)]:
        command = step.args.format(W=W, F=F, BAD=BAD, T="<T>", GR=f"{W}/golden.yaml {W}/run.jsonl")
        out[step.name] = " ".join(command.replace("<T>/", "").split())
    return out


def test_every_command_the_docs_show_is_run() -> None:
    """A command in a shell block of README.md or docs/*.md is a step of SPEC, the same command;
    or RUN_AS names the step that runs it on the snapshot's files; or NOT_RUN says why not."""
    steps = step_commands()
    by_command = {command: name for name, command in steps.items()}
    shown = shown_commands()
    assert len(shown) >= 20, shown  # the blocks were found
    missing = [
        f"{page}: {command}"
        for page, command in shown
        if command not in NOT_RUN and command not in by_command and command not in RUN_AS
    ]
    listed = "\n".join(missing)
    assert not missing, f"shown in the docs, run by no step of SPEC (add one, or RUN_AS):\n{listed}"
    unknown = {name for name in RUN_AS.values() if name not in steps}
    assert not unknown, f"RUN_AS names no step: {unknown}"
    stale = (RUN_AS.keys() | NOT_RUN.keys()) - {command for _, command in shown}
    assert not stale, f"RUN_AS or NOT_RUN lists what the docs no longer show: {stale}"


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """The demo store, built once; its stdout names this week, so only the exit code and stderr count."""
    folder = tmp_path_factory.mktemp("demo")
    entry = run_step(DEMO, folder)
    assert entry["exit"] == 0, entry
    return folder / "demo.db", entry


@pytest.mark.slow
def test_readme_snapshot(demo: tuple[Path, dict[str, Any]], tmp_path_factory: pytest.TempPathFactory) -> None:
    demo_db, demo_entry = demo
    names = [step.name for _, steps in SCENARIOS.values() for step in steps]
    assert len(names) == len(set(names)), "step names must be unique"
    base = tmp_path_factory.mktemp("scenarios")
    actual: dict[str, Any] = {"denominator demo": demo_entry, "python api": python_api()}
    with ThreadPoolExecutor(max_workers=2) as pool:
        for entries in pool.map(lambda item: run_scenario(item, base, demo_db), SCENARIOS.items()):
            actual.update(entries)
    text = json.dumps(actual, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    assert str(base) not in text and str(demo_db.parent) not in text
    if os.environ.get("DENOMINATOR_UPDATE_SNAPSHOT") == "1":
        SNAPSHOT.write_text(text)
        return
    assert SNAPSHOT.exists(), f"no {SNAPSHOT}: run with DENOMINATOR_UPDATE_SNAPSHOT=1 first"
    stored = SNAPSHOT.read_text()
    if text != stored:
        expected = json.loads(stored)
        changed = sorted(k for k in expected.keys() | actual.keys() if expected.get(k) != actual.get(k))
        diff = difflib.unified_diff(
            stored.splitlines(), text.splitlines(), "snapshot", "now", lineterm="", n=2
        )
        pytest.fail(
            f"README contract changed for {len(changed)} invocation(s): {changed}\n" + "\n".join(diff)
        )
