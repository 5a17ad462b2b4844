"""Every option that has a default, once: the table the command lines (argparse) and the pages
(Streamlit widgets) both read, and the docs' options table (docs/cli.md) is written from.

Modelled on datasette's ``SETTINGS`` (a list of ``Setting(name, default, help)`` that the CLI, the
config file and the docs read) and ir_measures' ``ParamInfo(default, desc)``: a default written in
a signature, a widget and a parser is three defaults, and then two faces gate on different evidence.

An option whose default is a rule rather than a value (``min_grade``: the label file's own, else 1;
``trusted``: the policy's kappa bar) has ``default=None`` and says the rule in ``rule``; the one
function that applies the rule lives below the faces (:func:`calibration.inputs.min_grade_of`,
:func:`calibration.gate.verdict_settings`, :func:`calibration.audit.stage1_of`).

Light on purpose (no numpy, no store): every ``--help`` reads it.
"""

from __future__ import annotations

import argparse
import getpass
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, overload

from annotation.choices import AGGREGATE_RULES, AGGREGATES, METHODS
from annotation.values import (
    MAX_PERMUTATIONS,
    bounded_int,
    finite_float,
    fraction,
    grade,
    int64,
    permutations,
    positive_int,
    ranks,
    run_name,
    seed,
)

__all__ = ["Option", "OPTIONS", "option", "default", "add_option", "options_markdown", "login_name"]


@dataclass(frozen=True)
class Option:
    """One option: its name in this table, its flag, its default (or the rule that decides it), what
    it means, where it is read; the bounds a page's widget takes."""

    name: str
    flag: str
    default: Any
    help: str
    where: tuple[str, ...]  # the commands and pages that read it
    type: Callable[[str], Any] | None = None
    metavar: str | None = None
    choices: tuple[str, ...] | None = None
    rule: str | None = None  # default None: what decides it
    minimum: float | None = None
    maximum: float | None = None

    @property
    def shown_default(self) -> str:
        """The default as people read it: ``10``, ``10,000``, ``0.2``, or the rule."""
        if self.default is None:
            return self.rule or "none"
        if isinstance(self.default, int) and not isinstance(self.default, bool):
            return f"{self.default:,}"
        return str(self.default)


OPTIONS: tuple[Option, ...] = (
    Option(
        "k",
        "-k",
        10,
        "cutoff",
        ("calibration metrics", "calibration compare", "the Metrics page"),
        positive_int,
        "K",
        minimum=1,
        maximum=10_000,
    ),
    Option(
        "min_grade",
        "--min-grade",
        None,
        "relevant = grade >= G (trec_eval -l)",
        (
            "calibration metrics",
            "calibration audit",
            "calibration check",
            "calibration compare",
            "the Metrics page",
        ),
        grade,
        "G",
        rule="golden.yaml's min_grade, else 1",
        minimum=0,
        maximum=100,
    ),
    Option(
        "aggregate",
        "--aggregate",
        "median",
        "one grade per item from several people's current labels: "
        + "; ".join(AGGREGATE_RULES[name] for name in AGGREGATES)
        + "; an admin's settled grade wins; disputed items listed in golden.yaml",
        ("annotation export", "the Data page"),
        choices=AGGREGATES,
    ),
    Option(
        "fetch_depth",
        "--fetch-depth",
        None,
        "stage 1 = the same run read to depth D",
        ("calibration audit", "calibration check", "the Metrics page"),
        positive_int,
        "D",
        rule="the run's own depth when deeper than k, else no stage 1",
        minimum=1,
        maximum=100_000,
    ),
    Option(
        "missing",
        "--missing",
        "drop",
        "golden queries absent from the run: drop them (and count them; check's all_queries fails) or "
        "score them 0 (trec_eval -c)",
        ("calibration metrics", "calibration check"),
        choices=("drop", "zero"),
    ),
    Option(
        "trusted",
        "--trusted",
        None,
        "the verdict's one bar: trusted when the kappa's interval's lower end reaches K",
        ("calibration agree", "calibration review", "the Review page"),
        finite_float,
        "K",
        rule="the policy's kappa bar, else 0.6",
    ),
    Option(
        "statistic",
        "--statistic",
        None,
        "the kappa the bar applies to",
        ("calibration agree", "calibration review", "the Review page"),
        choices=("unweighted", "linear", "quadratic"),
        rule="the policy's kappa_statistic, else unweighted",
    ),
    Option(
        "min_labels",
        "--min-labels",
        30,
        "human-labelled items a judge needs before it gets a verdict",
        ("calibration review", "the Review page"),
        positive_int,
        "N",
        minimum=1,
        maximum=100_000,
    ),
    Option(
        "min_queries",
        "--min-queries",
        None,
        "queries a judge's labels must span before it gets a verdict (labels come in queries: fewer "
        "give no verdict-grade interval)",
        ("calibration agree", "calibration review", "calibration check", "the Review page"),
        bounded_int(2, 100_000, " (a query-level variance needs two queries)"),
        "N",
        rule="the policy's min_queries, else 5",
        minimum=2,
        maximum=100_000,
    ),
    Option(
        "sample",
        "--sample",
        60,
        "this week's sample of N traces (the essay: 50-100 a week)",
        ("calibration review", "the Review page"),
        positive_int,
        "N",
        minimum=1,
        maximum=10_000,
    ),
    Option(
        "review_overlap",
        "--overlap",
        1.0,
        "the share of the weekly sample two or more of the chosen annotators label, for the ceiling",
        ("calibration review", "the Review page"),
        fraction,
        "SHARE",
        minimum=0.0,
        maximum=1.0,
    ),
    Option(
        "pool_depth",
        "--depth",
        10,
        "pool depth: each run's top D per query",
        ("annotation pool", "the Data page"),
        positive_int,
        "D",
        minimum=1,
        maximum=10_000,
    ),
    Option(
        "pool_overlap",
        "--overlap",
        0.2,
        "share of pooled items also given to a second person, for agreement",
        ("annotation pool", "the Data page"),
        fraction,
        "SHARE",
        minimum=0.0,
        maximum=1.0,
    ),
    Option(
        "handout_mode",
        "--mode",
        "open",
        "how items are handed out: open (to whoever asks next, never twice to one person, until "
        "--labels people have labelled each) or assigned (only to the people each is assigned to); "
        "a person with items assigned gets those either way",
        ("annotation handout", "the Data page"),
        choices=("open", "assigned"),
    ),
    Option(
        "handout_labels",
        "--labels",
        2,
        "labels from this many different people close an open item (2: the people's own "
        "agreement, the ceiling a judge is held to, can be measured on it)",
        ("annotation handout", "the Data page"),
        positive_int,
        "N",
        minimum=1,
        maximum=100,
    ),
    Option(
        "pool_seed",
        "--seed",
        0,
        "seed of the pool's assignment order and sample",
        ("annotation pool", "the Data page"),
        int64,
        "S",
    ),
    Option(
        "estimate_strata",
        "--strata",
        "50,100,1000",
        "with --estimate: strata of unjudged candidates by best rank, depth+1-B1, B1+1-B2, ...",
        ("annotation pool", "the Data page"),
        ranks,
        "B1,B2,...",
    ),
    Option(
        "review_seed",
        "--seed",
        0,
        "seed of the weekly sample",
        ("calibration review", "the Review page"),
        seed,
        "S",
    ),
    Option(
        "min_overlap",
        "--min-overlap",
        0.5,
        "a chunk takes a span's grade when they share at least this share of the span's characters "
        "or of the chunk's (docs/spans.md measures the choice)",
        ("calibration project",),
        fraction,
        "F",
        minimum=0.0,
        maximum=1.0,
    ),
    Option(
        "permutations",
        "--permutations",
        10_000,
        "random sign flips of the randomization test",
        ("calibration compare", "the Metrics page"),
        permutations,
        "N",
        minimum=1,
        maximum=MAX_PERMUTATIONS,
    ),
    Option(
        "hole_sample",
        "--sample",
        None,
        "draw a uniform random sample of N queries whose holes people label (recorded with --out)",
        ("calibration holes", "the Metrics page"),
        positive_int,
        "N",
        rule="no sample",
        minimum=1,
        maximum=100_000,
    ),
    Option(
        "designs",
        "--designs",
        "5x20,5x60,10x30,20x15,30x10,10x60,20x30,40x15",
        "designs, queries x chunks per query",
        ("calibration plan", "the Review page"),
        metavar="QxM,...",
    ),
    Option(
        "holes_seed",
        "--seed",
        0,
        "seed of the hole sample",
        ("calibration holes", "the Metrics page"),
        seed,
        "S",
    ),
    Option(
        "compare_seed",
        "--seed",
        0,
        "seed of the randomization test",
        ("calibration compare", "the Metrics page"),
        seed,
        "S",
    ),
    Option(
        "baseline_method",
        "--method",
        "bm25",
        "ranking method of the lexical baseline run",
        ("annotation baseline", "the Data page"),
        choices=METHODS,
    ),
    Option(
        "baseline_depth",
        "--depth",
        100,
        "chunks the baseline run keeps per query",
        ("annotation baseline", "the Data page"),
        positive_int,
        "D",
        minimum=1,
    ),
    Option(
        "baseline_name",
        "--name",
        "bm25-baseline",
        "the baseline run's name in the store",
        ("annotation baseline", "the Data page"),
        run_name,
        "NAME",
    ),
    Option(
        "alpha",
        "--alpha",
        0.05,
        "1 - the confidence of an interval (0.05: 95%), the level of every interval a face prints",
        ("calibration ppi", "the review's, the plan's and the pages' intervals"),
        finite_float,
        "A",
        minimum=0.0,
        maximum=1.0,
    ),
    # the judge's (#41): the bound on concurrency is the machine's (judge.limits.max_concurrency)
    Option(
        "concurrency",
        "--concurrency",
        8,
        "calls to the endpoint at once, a connection each (at most half this process's open-file "
        "limit, at most 1024)",
        ("judge grade", "judge compare", "the Judge page"),
        metavar="N",
        minimum=1,
    ),
    Option(
        "schema",
        "--schema",
        "json_schema",
        "how the JSON reply is requested: json_schema, json_object, or prompt only",
        ("judge grade", "judge compare", "the Judge page"),
        choices=("json_schema", "json_object", "prompt"),
    ),
)

_BY_NAME = {o.name: o for o in OPTIONS}


def option(name: str) -> Option:
    """The option called ``name`` (a KeyError names a typo at import time, in every test)."""
    return _BY_NAME[name]


# The options by the type of their default, so ``default("k")`` is an int to mypy (#41, item 2: a
# typed default); ``tests/test_options.py`` holds these lists to the table.
IntOption = Literal[
    "k",
    "min_labels",
    "sample",
    "pool_depth",
    "handout_labels",
    "pool_seed",
    "review_seed",
    "permutations",
    "holes_seed",
    "compare_seed",
    "baseline_depth",
    "concurrency",
]
FloatOption = Literal[
    "min_overlap",
    "review_overlap",
    "pool_overlap",
    "alpha",
]
TextOption = Literal[
    "aggregate",
    "missing",
    "handout_mode",
    "estimate_strata",
    "designs",
    "baseline_method",
    "baseline_name",
    "schema",
]
RuleOption = Literal[
    "min_grade",
    "fetch_depth",
    "trusted",
    "statistic",
    "min_queries",
    "hole_sample",
]  # no default value: a rule decides (``Option.rule``)


@overload
def default(name: IntOption) -> int: ...
@overload
def default(name: FloatOption) -> float: ...
@overload
def default(name: TextOption) -> str: ...
@overload
def default(name: RuleOption) -> None: ...
def default(name: str) -> int | float | str | None:
    """The option's default value (None when a rule decides it), typed by the lists above."""
    value: int | float | str | None = _BY_NAME[name].default
    return value


def add_option(
    parser: argparse.ArgumentParser | argparse._ActionsContainer,
    name: str,
    *,
    help: str | None = None,
    **extra: Any,
) -> None:
    """``parser.add_argument`` from the table: its flag, type, choices, metavar and default, the help
    ending with the default as the table says it (``extra``: argparse keywords the table has no
    column for, such as ``nargs`` and ``const``)."""
    o = _BY_NAME[name]
    text = (help or o.help) + f" (default: {o.shown_default})"
    kwargs: dict[str, Any] = {"default": o.default, "help": text.replace("%", "%%")}
    if o.type is not None:
        kwargs["type"] = o.type
    if o.choices is not None:
        kwargs["choices"] = list(o.choices)
    if o.metavar is not None:
        kwargs["metavar"] = o.metavar
    kwargs.update(extra)
    parser.add_argument(o.flag, **kwargs)


def options_markdown(options: Sequence[Option] = OPTIONS) -> str:
    """The docs' table (docs/cli.md): one row per option, its flag, default and where it is read."""
    rows = ["| option | flag | default | meaning | read by |", "|---|---|---|---|---|"]
    for o in options:
        shown = o.shown_default.replace("|", "\\|")
        rows.append(f"| `{o.name}` | `{o.flag}` | {shown} | {o.help} | {', '.join(o.where)} |")
    return "\n".join(rows) + "\n"


def login_name() -> str:
    """The person at this machine (who runs an import or a retirement when no one signed in):
    the login name, else ``unknown``."""
    try:
        return getpass.getuser() or "unknown"
    except (KeyError, OSError):  # no login name (a container without a passwd entry)
        return "unknown"
