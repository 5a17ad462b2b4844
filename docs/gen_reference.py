"""Writes the generated parts of docs/cli.md (every command's usage and options, read from the
argparse parsers, and the options table, ``annotation.options.options_markdown()``) and of
docs/api.md (every public action of the three packages: its signature, its docstring, what it
returns and raises, and an example that tests/test_docs.py runs).

    .venv/bin/python docs/gen_reference.py           # rewrite the pages' generated parts
    .venv/bin/python docs/gen_reference.py --check   # exit 1 when a page is out of date

Each generated part sits between ``<!-- generated: NAME -->`` and ``<!-- end generated: NAME
-->``; the text around them is written by hand. tests/test_docs.py holds the committed page to
what this script writes.
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
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


# ---------------------------------------------------------------- docs/api.md: the actions
# Each action's section: its signature (a ``py`` block: shown, not run), its docstring, what it
# returns (its return annotation, each type named by the module it comes from), what it raises
# (RAISES) and an example (EXAMPLES, a ``python`` block: tests/test_docs.py runs every one, in the
# page's order, each after API_SETUP in a namespace of its own).

API_MODULES = ("calibration", "annotation", "judge")

API_SETUP = """
import hashlib
import tempfile
from pathlib import Path

import annotation.actions
import calibration.actions
import judge.actions
from annotation.formats.by_extension import read_judgments, read_ranked
from annotation.store import Store
from denominator.demo import build_demo

EXAMPLE = Path("examples/worked-example")  # the worked example's files
golden = read_judgments(EXAMPLE / "golden.yaml")  # people's grades 0-3 of 4 queries
run = read_ranked(EXAMPLE / "run.jsonl")  # the retriever's top 10 of each query
tmp = Path(tempfile.mkdtemp())  # what the examples write goes here
DEMO = str(tmp / "demo.db")
build_demo(DEMO, with_judge=True)  # the worked example as a store: labels, traces, 2 judges, a review
"""

# What each action raises, read from its code path (the ``raise`` statements of what it calls), by
# the path a caller imports the error from, with when; every one is a DenominatorError, but for a
# builtin named plainly (a gap in the family, said so). A store's own refusals (busy, disk full, not
# a Denominator database) are StoreErrors wherever a store is read or written. The generator
# imports each name: one that moved or went fails here, and so does an action missing from the table.
RAISES: dict[str, list[tuple[str, str]]] = {
    "calibration.actions.metrics": [
        ("calibration.errors.NothingToEvaluate", "no query of the run is judged"),
        ("calibration.metrics.InvalidMeasure", "a cutoff below 1"),
        ("annotation.model.FormatError", "a run file it cannot read"),
        ("calibration.errors.InvalidInput", "with a judge: no shared query, a hole sample that does not fit"),
        ("calibration.audit.InvalidAudit", "a corpus size below the chunks judged for a query"),
    ],
    "calibration.actions.holes": [
        ("calibration.errors.InvalidInput", "no run, no shared query, k or a sample size it cannot use"),
    ],
    "calibration.actions.stored_hole_sample": [
        ("calibration.errors.InvalidInput", "a sample none of whose holes is an item of the store"),
        ("annotation.store.StoreError", "the store cannot be read"),
    ],
    "calibration.actions.audit": [
        ("calibration.errors.NothingToEvaluate", "no query of the run is judged"),
        ("calibration.audit.InvalidAudit", "a fetch depth below k, a corpus too small, a gate it cannot use"),
        ("annotation.model.FormatError", "a run file it cannot read"),
    ],
    "calibration.actions.estimate": [
        ("calibration.audit.InvalidAudit", "labels without a sampling section, or one it cannot use"),
    ],
    "calibration.actions.check": [
        ("calibration.errors.NothingToEvaluate", "no query of the run is judged"),
        ("calibration.audit.InvalidAudit", "a fetch depth below k, a corpus too small"),
        ("calibration.errors.InvalidInput", "a named store that is not there; with a judge, its holes"),
        ("annotation.model.FormatError", "a run file it cannot read"),
        ("annotation.store.StoreError", "the store cannot be read or the report kept"),
    ],
    "calibration.actions.record": [
        ("calibration.errors.InvalidInput", "no run name"),
        ("annotation.store.StoreError", "the store cannot be written"),
    ],
    "calibration.actions.history": [
        ("calibration.errors.InvalidInput", "a diff's id that is no recorded check, or one it cannot read"),
        ("annotation.store.StoreError", "the store cannot be read"),
    ],
    "calibration.actions.compare": [
        ("calibration.errors.NothingToEvaluate", "a run shares no query with the judgments"),
        ("calibration.metrics.InvalidMeasure", "a cutoff below 1"),
        ("calibration.errors.InvalidInput", "with a judge: no shared query, a hole sample that does not fit"),
    ],
    "calibration.actions.agree": [
        ("calibration.errors.InvalidInput", "not one source, the same file twice, ratings it cannot pair"),
        ("annotation.model.FormatError", "a labels CSV or qrels file it cannot read"),
    ],
    "calibration.actions.position": [
        ("calibration.errors.InvalidInput", "an order, choice or repeat off its values"),
        ("annotation.model.FormatError", "a CSV it cannot read"),
    ],
    "calibration.actions.ppi": [
        ("calibration.errors.InvalidInput", "alpha off (0, 1), too few items, an empty query_id"),
        ("annotation.model.FormatError", "a CSV it cannot read, a value that is no number"),
    ],
    "calibration.actions.review": [
        ("annotation.store.StoreError", "a week not begun, an unknown statistic, a sample it cannot draw"),
    ],
    "calibration.actions.draw_review_sample": [
        ("annotation.store.StoreError", "a week not begun or already drawn, nothing left to sample"),
    ],
    "calibration.actions.plan": [
        ("calibration.errors.InvalidInput", "a pilot file without the judge or rubric it names, a design"),
        ("annotation.model.FormatError", "a pilot file it cannot read"),
    ],
    "annotation.actions.import_": [
        ("annotation.model.FormatError", "a file it cannot read, a grade off the scale"),
        ("annotation.store.StoreError", "no file, a run without a name, a file in the wrong slot, a clash"),
    ],
    "annotation.actions.pool": [
        ("annotation.store.StoreError", "no run, a depth, overlap or estimate it cannot use"),
        ("annotation.hole_sample.InvalidHoleSample", "a file without a hole sample's design"),
        ("annotation.model.FormatError", "a hole sample it cannot read"),
    ],
    "annotation.actions.sample": [
        ("annotation.store.StoreError", "a depth, size or strata it cannot use, an unknown run or person"),
    ],
    "annotation.actions.baseline": [
        ("annotation.store.StoreError", "an unknown method, a depth below 1, no corpus or queries"),
    ],
    "annotation.actions.annotators": [
        ("annotation.store.StoreError", "no name, an unknown role or person, a claim rule it cannot map"),
    ],
    "annotation.actions.handout": [
        ("annotation.store.StoreError", "an unknown mode, labels off the range, no one named"),
    ],
    "annotation.actions.guidelines": [
        ("annotation.rubrics.UnknownRubric", "a rubric that is not relevance, faithfulness or preference"),
        ("annotation.rubrics.InvalidGuidelines", "empty text, over 20,000 characters, a control character"),
        ("annotation.store.StoreError", "a version never written, no text to set, no one named"),
    ],
    "annotation.actions.imports": [
        ("annotation.store.UnknownImport", "no import of that id"),
        ("annotation.store.StoreError", "no one named"),
    ],
    "annotation.actions.migrate": [
        ("annotation.store.transfer.TargetNotEmpty", "a target that holds data"),
        ("annotation.store.transfer.TransferFailed", "a copy that fails or does not verify"),
    ],
    "calibration.actions.project": [
        (
            "calibration.errors.InvalidInput",
            "a graded chunk whose offsets are unknown, min_overlap off [0, 1]",
        ),
    ],
    "calibration.actions.evidence": [
        (
            "calibration.errors.InvalidInput",
            "a golden set holding no evidence, a run chunk id the chunks do not place",
        ),
    ],
    "annotation.actions.chunk": [
        (
            "annotation.chunking.ChunkingError",
            "a size below 1, an overlap not below the size, a document id with spaces",
        ),
        ("annotation.model.FormatError", "a document it cannot read; the file it cannot write"),
    ],
    "annotation.actions.import_chroma": [
        ("annotation.model.FormatError", "a CSV it cannot read, a span its document does not hold"),
    ],
    "annotation.actions.export": [
        ("annotation.exports.NothingToExport", "no current labels to export"),
        ("annotation.store.StoreError", "an unknown format, aggregate or annotator"),
        ("TypeError", "an option no format takes"),
    ],
    "judge.actions.grade": [
        ("judge.actions.NothingToJudge", "no item to grade, holes graded for another rubric"),
        ("judge.lexical.NotEnoughLabels", "too few labels to fit the offline judge"),
        ("annotation.rubrics.UnknownRubric", "an unknown rubric, offline"),
        ("judge.client.EndpointRefused", "a live run the endpoint refuses, no model"),
        ("judge.batch.BatchError", "a batch it cannot submit"),
        ("annotation.store.StoreError", "an LLM run's unknown rubric, a judge name, answers not stored"),
        ("ValueError", "the offline judge asked to grade preference"),
    ],
    "judge.actions.compare": [
        ("judge.actions.NothingToJudge", "no answer pairs"),
        ("judge.client.EndpointRefused", "a live run the endpoint refuses, no model"),
        ("judge.batch.BatchError", "a batch it cannot submit"),
        ("annotation.store.StoreError", "a judge name it cannot have, answers not stored"),
    ],
    "judge.actions.fit_lexical": [
        ("judge.lexical.NotEnoughLabels", "too few labels, or one grade only"),
        ("annotation.rubrics.UnknownRubric", "an unknown rubric"),
        ("ValueError", "preference, which it does not grade"),
    ],
    "judge.actions.batch": [
        ("judge.batch.BatchError", "the endpoint does not answer, or the batch cannot be read or collected"),
        ("annotation.store.StoreError", "its answers cannot be stored"),
    ],
    "judge.actions.list_": [
        ("annotation.store.StoreError", "the store cannot be read"),
    ],
}

# One example per action, run after API_SETUP (its names: the three actions modules, ``golden``,
# ``run``, ``EXAMPLE``, ``tmp``, ``DEMO``, ``Store``, ``read_judgments``, ``read_ranked``,
# ``hashlib``); each asserts or prints what it got. No example reaches the network: the LLM judge's
# are dry runs, the batch's asks a port where nothing listens.
EXAMPLES: dict[str, str] = {
    "calibration.actions.metrics": """
from calibration.metrics import Measure

result = calibration.actions.metrics(golden, run, ks=[5, 10], corpus_size=24)
assert result.qids == ["q_broad", "q_faw", "q_milk", "q_store"]
print(result.mean(Measure("R", 5)), result.mean(Measure("nDCG", 10)))  # 0.6249999999999999 0.8194...
assert result.coverage == {"q_broad": 8 / 24, "q_faw": 3 / 24, "q_milk": 3 / 24, "q_store": 3 / 24}

judge_grades = read_judgments(EXAMPLE / "judge.qrels")  # a judge's grades of the run's holes
filled = calibration.actions.metrics(golden, run, ks=[5], judge=judge_grades)  # one report per k
print({m["measure"]: m["judge_filled"] for m in filled[0]["means"]})  # {'P@5': 0.65, ...}
""",
    "calibration.actions.holes": """
report = calibration.actions.holes(golden, [("retriever", run)], 5, sample=2, seed=1)
assert (report["holes"], report["judged_at_k"]) == (10, 0.5)  # half the top-5 slots unjudged
assert report["sample"]["queries"] == ["q_faw", "q_milk"]  # the queries of hole-sample.yaml
print(report["queries"]["q_faw"]["holes"])  # ['x3', 'p1', 'd2']
""",
    "calibration.actions.stored_hole_sample": """
from annotation.hole_sample import read_hole_sample

sample = read_hole_sample(EXAMPLE / "hole-sample.yaml")  # q_faw's and q_milk's holes at k 5, graded 0
with Store(DEMO) as store:  # people's grades on its holes from the store, as the Metrics page reads them
    stored = calibration.actions.stored_hole_sample(store, sample)
assert stored.graded_by == ("cat", "dan", "worked-example")  # cat and dan labelled q_faw's in the demo
filled = calibration.actions.metrics(
    golden, run, ks=[5], judge=read_judgments(EXAMPLE / "judge.qrels"), hole_sample=stored
)
print(filled[0]["means"][0]["corrected"]["estimate"])  # P@5 corrected: 0.5
""",
    "calibration.actions.audit": """
report = calibration.actions.audit(golden, EXAMPLE / "run.jsonl", 5)  # a run file, or a Run
broad = report["queries"]["q_broad"]
assert (broad["rel"], broad["recall_ceiling"]) == (8, 0.625)  # 8 relevant: R@5 is at most 5/8
print(report["summary"]["findings"])  # {'rel_above_k': 1, 'rel_below_k': 3, 'stage1_circular': 4}
""",
    "calibration.actions.estimate": """
labels = read_judgments(EXAMPLE / "sampled.yaml")  # golden.yaml's grades and a sample beyond them
report = calibration.actions.audit(labels, run, 5)
estimated = calibration.actions.estimate(labels, run, report)
assert estimated["k"] == 5 and estimated["summary"]["n_sampled"] == 24
print(estimated["summary"]["recall_estimated_mean"], estimated["summary"]["recall_estimated_mean_ci"])
""",
    "calibration.actions.check": """
report = calibration.actions.check(golden, run, 5, db=DEMO)  # the policy's rules, DEMO's judges
assert report["store"] == DEMO and report["passed"] is False
print([rule["rule"] for rule in report["rules"] if rule["passed"] is False])
""",
    "calibration.actions.record": """
report = calibration.actions.check(golden, run, 5, no_store=True)
digest = hashlib.sha256((EXAMPLE / "run.jsonl").read_bytes()).hexdigest()  # the run file's
with Store(DEMO) as store:
    recorded = calibration.actions.record(store, report, "retriever", golden, digest)
    assert recorded in [row["id"] for row in calibration.actions.history(store, name="retriever")]
""",
    "calibration.actions.history": """
for k in (5, 10):  # two checks kept under one run name
    calibration.actions.check(golden, run, k, db=DEMO, record_as="bm25")
with Store(DEMO) as store:
    rows = calibration.actions.history(store, name="bm25")
    assert [row["k"] for row in rows] == [5, 10]
    diff = calibration.actions.history(store, diff=(rows[0]["id"], rows[1]["id"]))
print(diff["settings_changed"])  # ['k 5 -> 10', 'fetch depth 10 -> none']
""",
    "calibration.actions.compare": """
from annotation.model import Run
from calibration.metrics import Measure

upside_down = Run.from_rankings({q: ranked[::-1] for q, ranked in run.rankings().items()})
comparison = calibration.actions.compare(golden, run, upside_down, ks=[5], names=("top", "reversed"))
ndcg = comparison.measures[Measure("nDCG", 5)]
assert ndcg["delta"] < 0  # B - A: the reversed ranking loses
print(ndcg["p_randomization"], comparison.notes)  # 4 queries: the note says it is too few
""",
    "calibration.actions.agree": """
pair = [EXAMPLE / "judge.qrels", EXAMPLE / "truth.qrels"]  # two raters' grades, named by their files
report = calibration.actions.agree(qrels_pair=pair)
kappa = report["pairs"][0]
assert kappa["n"] == 9  # the items both graded
print(kappa["kappa"], kappa["verdict"], kappa["reason"])  # 0.67... uncalibrated 4 queries: ...
""",
    "calibration.actions.position": """
asked = tmp / "orders.csv"  # each pair asked in both orders: which answer the judge chose
asked.write_text("item,order,choice\\np1,AB,A\\np1,BA,A\\np2,AB,A\\np2,BA,B\\np3,AB,B\\np3,BA,B\\n")
report = calibration.actions.position(asked)
assert (report["n_pairs"], report["n_consistent"]) == (3, 2)
print(report["position_consistency"], report["primacy_rate"])  # 0.666... 0.333...
""",
    "calibration.actions.ppi": """
labelled, unlabelled = tmp / "labelled.csv", tmp / "unlabelled.csv"
labelled.write_text("human,judge\\n" + "1,1\\n1,1\\n0,0\\n1,0\\n0,0\\n1,1\\n0,1\\n1,1\\n1,1\\n0,0\\n")
unlabelled.write_text("judge\\n" + "1\\n0\\n1\\n1\\n0\\n1\\n1\\n0\\n1\\n1\\n" * 3)
report = calibration.actions.ppi(labelled, unlabelled)
assert (report["n_labeled"], report["n_unlabeled"]) == (10, 30)
low, high = report["ci"]
assert low < report["estimate"] < high and "rogan_gladen" in report  # pass/fail: both estimates
""",
    "calibration.actions.review": """
with Store(DEMO) as store:
    report, drawn = calibration.actions.review(store, save=False)  # no sample asked: none drawn
assert drawn is None
print(report["week"], [(judge["name"], judge["verdict"]) for judge in report["judges"]])
""",
    "calibration.actions.draw_review_sample": """
with Store(DEMO) as store:
    drawn = calibration.actions.draw_review_sample(store, n=4, annotators=["ann", "bob"])
assert (drawn["sampled"], drawn["chunks_sampled"]) == (4, 4)  # traces, and chunks a judge graded
print(drawn["week"], drawn["strata"])
""",
    "calibration.actions.plan": """
with Store(DEMO) as store:
    plans = calibration.actions.plan(store, [(5, 10), (20, 10)])  # queries x chunks per query
relevance = next(entry for entry in plans if entry["rubric"] == "relevance")
print([(d["design"], d["verdict"], d["interval"]) for d in relevance["plan"]["designs"]])
""",
    "annotation.actions.import_": """
from annotation.exchange import ImportSources

sources = ImportSources(
    corpus=EXAMPLE / "corpus.jsonl",
    run=EXAMPLE / "run.jsonl",
    name="retriever",
    labels=EXAMPLE / "golden.yaml",
    annotator="worked-example",
)
with Store(str(tmp / "mine.db")) as store:  # a new store
    said = annotation.actions.import_(store, sources)
print("\\n".join(said))
assert said[-1].startswith("store now: 4 queries, 24 chunks, 1 run")
""",
    "annotation.actions.pool": """
with Store(DEMO) as store:  # the demo pooled the top 10; here the top 5, and 2 chunks per query below
    pooled = annotation.actions.pool(store, 5, annotators=["ann", "bob"], estimate=2)
assert pooled["pool"]["depth"] == 5 and pooled["sample"]["sampled"] == 4
print(pooled["found"], pooled["sample"]["strata"])  # what the run found; {'6-50': 4}
""",
    "annotation.actions.sample": """
fresh = str(tmp / "fresh.db")  # a store holds one estimate sample: pool's example drew the demo's
build_demo(fresh, with_judge=False)
with Store(fresh) as store:  # beyond the top 5: 2 unjudged chunks per query, for ann to label
    drawn = annotation.actions.sample(store, 5, 2, annotators=["ann"])
assert (drawn["sampled"], drawn["strata"], drawn["candidates"]) == (4, {"6-50": 4}, {"6-50": 10})
print(drawn["queries"])  # 2: the queries with unjudged candidates below rank 5
""",
    "annotation.actions.baseline": """
with Store(DEMO) as store:
    made = annotation.actions.baseline(store)  # BM25 over the stored chunks
assert (made["name"], made["queries"], made["chunks"]) == ("bm25-baseline", 4, 24)
print(made["source"])
""",
    "annotation.actions.annotators": """
with Store(DEMO) as store:
    token = annotation.actions.annotators(store, "add", name="eve")  # shown once
    listed = annotation.actions.annotators(store)
assert isinstance(token, str)
print([(person["name"], person["access"]) for person in listed["annotators"]])
""",
    "annotation.actions.handout": """
with Store(DEMO) as store:
    mode, labels = annotation.actions.handout(store)
    assert annotation.actions.handout(store, labels=3, who="admin") == (mode, 3)
print(mode, labels)
""",
    "annotation.actions.guidelines": """
with Store(DEMO) as store:
    built_in = annotation.actions.guidelines(store, rubric="relevance")  # version 0, the built-in text
    more = built_in.text + "\\nA table of figures counts as text."
    edited = annotation.actions.guidelines(store, "set", rubric="relevance", text=more, who="admin")
    assert edited.version == built_in.version + 1 and store.guidelines_version("relevance") == edited.version
print(edited.version, edited.who, edited.text.splitlines()[-1])
""",
    "annotation.actions.imports": """
with Store(DEMO) as store:
    done = annotation.actions.imports(store)
    dan = next(row for row in done if "by 'dan'" in row["name"])
    retired = annotation.actions.imports(store, "retire", import_id=dan["id"], who="admin")
    assert retired["state"] == "retired"
    annotation.actions.imports(store, "restore", import_id=dan["id"], who="admin")  # back again
print([(row["id"], row["name"]) for row in done])
""",
    "annotation.actions.migrate": """
with Store(DEMO) as source, Store(str(tmp / "copy.db")) as target:  # a PostgreSQL URL too
    copied = annotation.actions.migrate(source, target)
print(sum(table.rows for table in copied), "rows in", len(copied), "tables")
assert all(table.checksum for table in copied)
""",
    "calibration.actions.project": """
from annotation.model import ChunkSpan, Evidence, Qrels

spans = Qrels(grades={"q1": {}}, evidence={"q1": [Evidence("doc", 12, 18, 3)]})  # doc[12:18] answers q1
chunks = [ChunkSpan("b0", "doc", 0, 10), ChunkSpan("b1", "doc", 10, 20), ChunkSpan("b2", "doc", 20, 30)]
projected = calibration.actions.project(spans, chunks, min_overlap=0.5)
assert projected.golden.grades == {"q1": {"b1": 3}}  # b1 holds all 6 characters of the span
print(projected.totals("evidence"))  # ... 'kept': 6, 'evidence_chars': 6
""",
    "calibration.actions.evidence": """
from annotation.model import ChunkSpan, Evidence, Qrels, Run

spans = Qrels(grades={"q1": {}}, evidence={"q1": [Evidence("doc", 35, 50, 2), Evidence("doc", 60, 80, 1)]})
chunks = [ChunkSpan("b0", "doc", 0, 40), ChunkSpan("b1", "doc", 30, 70), ChunkSpan("b2", "doc", 70, 100)]
ranked = Run.from_rankings({"q1": ["b1", "b2", "b0"]})
result = calibration.actions.evidence(spans, ranked, chunks, [1, 3])
at = result.at("q1", 1)  # b1 = [30, 70) holds 25 of the 35 evidence characters
assert (at.shared, at.evidence, at.retrieved) == (25, 35, 40) and at.recall == 25 / 35
assert result.at("q1", 3).retrieved == 100  # b0 and b1 share 10 characters, counted once
print(result.mean(3, "precision"))  # (0.35, 1): the mean and the queries it is over
""",
    "annotation.actions.chunk": """
(tmp / "docs").mkdir()
(tmp / "docs" / "notes.txt").write_text("a" * 1000)
done = annotation.actions.chunk([tmp / "docs"], tmp / "chunks.jsonl", size=400, overlap=100)
assert done["chunks"] == 3  # [0, 400), [300, 700), [600, 1000)
""",
    "annotation.actions.import_chroma": """
import csv
import json

(tmp / "corpora").mkdir()
(tmp / "corpora" / "tale.md").write_text("The cat sat. The dog ran.")
refs = json.dumps([{"content": "The dog ran.", "start_index": 13, "end_index": 25}])
with (tmp / "questions.csv").open("w", newline="") as out:
    csv.writer(out).writerows([["question", "references", "corpus_id"], ["Who ran?", refs, "tale"]])
done = annotation.actions.import_chroma(tmp / "questions.csv", [tmp / "corpora"], tmp / "golden.yaml")
assert (done["queries"], done["spans"]) == (1, 1)
""",
    "annotation.actions.export": """
with Store(DEMO) as store:
    said = annotation.actions.export(store, "qrels", tmp / "labels.qrels")
print(said)
assert (tmp / "labels.qrels").read_text().startswith("q_faw 0 ")
""",
    "judge.actions.grade": """
from judge.client import Endpoint

with Store(DEMO) as store:
    offline = judge.actions.grade(store, "relevance", dry_run=True)  # no endpoint: the offline judge
    endpoint = Endpoint(base_url="https://api.openai.com/v1", model="gpt-4o-mini")
    planned = judge.actions.grade(store, "faithfulness", endpoint=endpoint, dry_run=True)
assert offline["items"] == 40 and offline["graded"] == 0  # a dry run grades nothing
assert planned.progress is None and planned.plan.left == 40  # planned, not asked
print(offline["agreement"]["kappa"], planned.plan.identity["name"])
""",
    "judge.actions.compare": """
from judge.client import Endpoint

endpoint = Endpoint(base_url="https://api.openai.com/v1", model="gpt-4o-mini")
with Store(DEMO) as store:
    result, summary = judge.actions.compare(store, endpoint=endpoint, repeats=2, dry_run=True)
assert summary is None  # nothing was asked
print(result.plan.left, "calls planned:", result.plan.identity["name"])  # each pair in both orders
""",
    "judge.actions.fit_lexical": """
with Store(DEMO) as store:
    agreement = judge.actions.fit_lexical(store, "faithfulness")  # cross-validated, nothing stored
assert agreement["n"] == 16 and agreement["folds"] == 5
print(agreement["kappa"], agreement["class_counts"])
""",
    "judge.actions.batch": """
from judge.batch import BatchError

try:  # a batch's state, asked of the endpoint that runs it: here nothing listens
    judge.actions.batch("http://127.0.0.1:9/v1", "batch_0001")
except BatchError as refused:
    said = str(refused)
assert said.endswith("not read: APIConnectionError")
print(said)  # http://127.0.0.1:9/v1: batch 'batch_0001' not read: APIConnectionError
""",
    "judge.actions.list_": """
with Store(DEMO) as store:
    judges, marks = judge.actions.list_(store)
assert [j["name"] for j in judges] == ["offline-lexical/relevance", "offline-lexical/faithfulness"]
assert set(marks) == {j["fingerprint"] for j in judges}
print(marks[judges[0]["fingerprint"]])  # uncalibrated (... human-labelled items, fewer than ...
""",
}


def api_markdown() -> str:
    """The setup of the examples, then every public action of ``calibration.actions``,
    ``annotation.actions`` and ``judge.actions``, in ``__all__``'s order: its signature (the
    annotations as written), its docstring, what it returns and raises, and its example."""
    import importlib
    import inspect

    _check_tables()
    sections = [
        "Each example below runs after this setup, from the repository's root (as tests/test_docs.py\n"
        "runs them all, in order):\n\n```python\n" + API_SETUP.strip() + "\n```\n"
    ]
    for package in API_MODULES:
        module = importlib.import_module(f"{package}.actions")
        first = inspect.cleandoc(module.__doc__ or "").split("\n\n")[0]  # its first paragraph
        sections.append(f"### `{package}.actions`\n\n{first}\n")
        for name in module.__all__:
            function = getattr(module, name)
            found = _definition(function)
            doc = inspect.cleandoc(function.__doc__ or "(no docstring)")
            full = f"{package}.actions.{name}"
            sections.append(
                f"#### `{full}`\n\n```py\n{name}{_signature(found)}\n```\n\n{doc}\n\n"
                f"{_returns(found, module)}\n\n{_raises(full)}\n\n"
                f"```python\n{EXAMPLES[full].strip()}\n```\n"
            )
    return "\n".join(sections)


def api_actions() -> list[str]:
    """Every public action, by its full name (``calibration.actions.metrics``), in the page's order."""
    import importlib

    return [
        f"{package}.actions.{name}"
        for package in API_MODULES
        for name in importlib.import_module(f"{package}.actions").__all__
    ]


def _check_tables() -> None:
    """Every action has its raises and its example, every entry is an action's, and every error
    named imports (a DenominatorError, or a builtin named plainly): else the page is not written."""
    import builtins
    import importlib

    from annotation.errors import DenominatorError

    actions = api_actions()
    problems = [f"{name}: no RAISES entry" for name in actions if name not in RAISES]
    problems += [f"{name}: no EXAMPLES entry" for name in actions if name not in EXAMPLES]
    problems += [f"{name}: not an action" for name in sorted({*RAISES, *EXAMPLES} - set(actions))]
    for action, raised in RAISES.items():
        for path, _ in raised:
            where, _, attr = path.rpartition(".")
            try:
                error = getattr(importlib.import_module(where) if where else builtins, attr)
            except (ImportError, AttributeError):
                problems.append(f"{action}: {path} does not import")
                continue
            if not (isinstance(error, type) and issubclass(error, BaseException)):
                problems.append(f"{action}: {path} is no exception")
            elif bool(where) != issubclass(error, DenominatorError):
                problems.append(f"{action}: {path}: a DenominatorError by its path, a builtin by its name")
    if problems:
        raise SystemExit("docs/gen_reference.py, the API tables:\n  " + "\n  ".join(problems))


def _raises(action: str) -> str:
    said = "; ".join(f"`{path}` ({when})" for path, when in RAISES[action])
    return f"**Raises** {said}."


def _returns(found: ast.FunctionDef, module: ModuleType) -> str:
    """``**Returns** `Evaluation | list[FilledReport]`: `calibration.metrics.Evaluation`, ...``: the
    return annotation as written, each name in it by the module the actions module takes it from
    (an import, under ``TYPE_CHECKING`` too) or by the actions module itself."""
    import builtins

    if found.returns is None:
        raise SystemExit(f"{module.__name__}.{found.name}: no return annotation")
    tree = ast.parse(Path(module.__file__ or "").read_text(encoding="utf-8"))
    imported = {
        alias.asname or alias.name: f"{node.module}.{alias.name}"
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module
        for alias in node.names
    }
    named = []
    names = [n for n in ast.walk(found.returns) if isinstance(n, ast.Name)]
    for node in sorted(names, key=lambda n: (n.lineno, n.col_offset)):  # as written
        if not hasattr(builtins, node.id):
            where = imported.get(node.id, f"{module.__name__}.{node.id}")
            if f"`{where}`" not in named:
                named.append(f"`{where}`")
    shown = f": {', '.join(named)}" if named else ""
    return f"**Returns** `{ast.unparse(found.returns)}`{shown}."


def _definition(function: Any) -> ast.FunctionDef:
    """The function's last definition in its source (an overloaded one's implementation)."""
    import inspect

    source = Path(inspect.getsourcefile(function) or "").read_text(encoding="utf-8")
    return [
        n for n in ast.parse(source).body if isinstance(n, ast.FunctionDef) and n.name == function.__name__
    ][-1]


def _signature(found: ast.FunctionDef) -> str:
    """``(qrels: Qrels, k: int | None = None, *, policy: Policy = DEFAULT_POLICY) -> CheckReport``: the
    parameters, annotations and defaults as written in the source, one per line when they do not
    fit one."""
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
