"""One default per option (issue #24): the options table (``annotation.options``) is what the
argparse options, the pages' widgets and the docs' table (docs/cli.md) all say; no face writes its own."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

from annotation.options import OPTIONS, default, option, options_markdown
from tests.conftest import app_test, page_test

ROOT = Path(__file__).resolve().parent.parent


def parsers() -> dict[str, argparse.ArgumentParser]:
    """``"calibration metrics"`` -> its subparser, for every command of the three packages' CLIs."""
    from annotation.__main__ import build_parser as annotation_parser
    from calibration.cli_args import build_parser as calibration_parser
    from judge.cli_args import build_parser as judge_parser

    out = {}
    clis = (
        ("annotation", annotation_parser()),
        ("calibration", calibration_parser()),
        ("judge", judge_parser()),
    )
    for package, parser in clis:
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        for name, command in sub.choices.items():
            out[f"{package} {name}"] = command
    return out


CLI_USES = [
    (o.name, where)
    for o in OPTIONS
    for where in o.where
    if where.split()[0] in ("annotation", "calibration", "judge")
]


@pytest.mark.parametrize(("name", "where"), CLI_USES)
def test_every_command_reads_its_default_from_the_table(name, where) -> None:
    o = option(name)
    command = parsers()[where]
    action = next(a for a in command._actions if o.flag in a.option_strings)
    assert f"(default: {o.shown_default})" in action.help.replace("%%", "%"), (where, action.help)
    if action.default is not None and name == "concurrency":  # bounded by this machine's open files
        from judge.limits import max_concurrency

        assert action.default == min(o.default, max_concurrency()), (where, action.default)
    elif action.default is not None:  # None: a rule below the face decides (or the option is off)
        assert action.default == o.default, (where, action.default, o.default)
    if o.type is not None and action.type is not None:
        assert action.type is o.type
    if o.choices is not None:
        assert tuple(action.choices) == o.choices


def test_the_constants_below_the_faces_are_the_tables() -> None:
    from calibration.inputs import DEFAULT_K, DEFAULT_PERMUTATIONS, DEFAULT_SEED
    from calibration.stats.verdict import DEFAULT_OVERLAP, MIN_LABELS, SAMPLE_SIZE

    assert (DEFAULT_K, DEFAULT_PERMUTATIONS, DEFAULT_SEED) == (10, 10_000, 0)
    assert (MIN_LABELS, SAMPLE_SIZE, DEFAULT_OVERLAP) == (30, 60, 1.0)
    assert (DEFAULT_K, MIN_LABELS, SAMPLE_SIZE) == (default("k"), default("min_labels"), default("sample"))


def test_the_docs_table_is_the_table() -> None:
    """The docs' options table (docs/cli.md, where the README's moved in #29), written there by
    docs/gen_reference.py."""
    page = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    assert options_markdown() in page, (
        "docs/cli.md's options table is out of date: run .venv/bin/python docs/gen_reference.py"
    )
    for (
        o
    ) in OPTIONS:  # the list: k, min grade, the bar and statistic, min labels, sample, overlaps, ...
        assert re.search(rf"\| `{o.name}` \| `{re.escape(o.flag)}` \|", page)


def test_the_metrics_page_widgets_read_the_table(demo_db) -> None:
    at = app_test(timeout=60).run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.number_input(key="metrics:k").value == default("k") == 10
    assert at.number_input(key="metrics:min_grade").value is None  # the rule: golden.yaml's, else 1
    assert at.number_input(key="metrics:fetch_depth").value is None  # the rule: the run's own depth


def test_the_data_page_widgets_read_the_table(demo_db) -> None:
    at = page_test("denominator.ui.data.render_data_page", timeout=60).run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.number_input(key="data:depth").value == default("pool_depth") == 10
    assert at.number_input(key="data:overlap").value == default("pool_overlap") == 0.2


def test_pool_takes_the_tables_depth_and_overlap(demo_db, capsys) -> None:
    """``pool`` with no --depth pools to 10, as the Data page; two annotators get the table's 20%
    overlap, one gets none (an overlap needs two people), and an explicit overlap with one is refused."""
    from annotation.__main__ import main
    from tests.conftest import cli

    code, out, err = cli(main, capsys, "pool", "--db", demo_db, "--annotators", "sam,kim")
    assert code == 0, err
    assert "pool of depth 10" in out
    code, _, err = cli(main, capsys, "pool", "--db", demo_db, "--annotators", "sam", "--overlap", "0.5")
    assert code == 2 and "an overlap needs at least two annotators" in err


def test_the_judges_options_are_the_tables(demo_db) -> None:
    """The judge's rows (#41): concurrency 8 was written in three places with caps 1024 and 256; the
    schema's modes and default live in judge.prompts' Literal and the table, held equal here."""
    from judge.client import Endpoint
    from judge.limits import max_concurrency
    from judge.prompts import DEFAULT_SCHEMA, SCHEMA_MODES

    assert Endpoint(base_url="http://127.0.0.1:9/v1", model="m").concurrency == default("concurrency") == 8
    assert SCHEMA_MODES == option("schema").choices and DEFAULT_SCHEMA == default("schema")
    at = page_test("denominator.ui.judge.render_judge_page", timeout=60)
    at.session_state["judge:kind"] = "LLM endpoint (OpenAI-compatible)"
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    box = at.number_input(key="judge:concurrency")
    assert box.value == min(default("concurrency"), max_concurrency()) and box.max == max_concurrency()
    assert at.selectbox(key="judge:schema").value == default("schema")


def test_the_estimate_strata_are_the_tables() -> None:
    from annotation.actions import pool
    from annotation.pooling import DEFAULT_STRATA, sample_unjudged

    assert DEFAULT_STRATA == (50, 100, 1000) and option("estimate_strata").default == "50,100,1000"
    assert pool.__kwdefaults__["strata"] is DEFAULT_STRATA  # annotation.actions wrote its own before
    assert sample_unjudged.__defaults__[0] is DEFAULT_STRATA


def test_a_default_is_typed_by_its_option() -> None:
    """#41 item 2: ``default("k")`` is an int to mypy; the lists it is typed by hold every option
    once, by the type of its default (None: a rule decides it)."""
    from typing import get_args

    from annotation.options import OPTIONS, FloatOption, IntOption, RuleOption, TextOption

    listed = {
        t: set(get_args(alias))
        for t, alias in ((int, IntOption), (float, FloatOption), (str, TextOption), (type(None), RuleOption))
    }
    assert sum(len(names) for names in listed.values()) == len(OPTIONS) == len(set().union(*listed.values()))
    for o in OPTIONS:
        assert o.name in listed[type(o.default)], (o.name, o.default)
