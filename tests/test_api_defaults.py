"""The Python API as a user calls it (issue #41): every public action at its defaults works, and its
keyword inputs are typed, so a misspelt option is a type error before it is a run-time one."""

from __future__ import annotations

import subprocess
import sys
import textwrap

from annotation.store import Store
from judge import actions as judge_actions
from judge.client import Endpoint
from judge.prompts import DEFAULT_SCHEMA, SCHEMA_MODES
from tests.conftest import ROOT

NOWHERE = "http://127.0.0.1:9/v1"  # a dry run makes no call: the port is never opened


def test_the_judge_actions_work_at_their_default_schema(demo_db) -> None:
    """``grade`` and ``compare`` defaulted to ``schema="json"``, which is not a mode: a dry run raised
    ``ValueError: schema mode 'json'``. The default is the CLI's and the page's, one of the modes."""
    assert DEFAULT_SCHEMA == "json_schema" and DEFAULT_SCHEMA in SCHEMA_MODES
    endpoint = Endpoint(model="m", base_url=NOWHERE)
    with Store(demo_db) as store:
        graded = judge_actions.grade(store, "relevance", endpoint=endpoint, dry_run=True)
        compared, _summary = judge_actions.compare(store, endpoint=endpoint, dry_run=True)
    assert graded.plan.left == 40 and graded.progress is None  # the demo's 40 chunk items, no call
    assert compared.plan.left == 8  # 4 pairs, each in both orders


def test_a_misspelt_option_is_a_type_error(tmp_path) -> None:
    """``actions.audit(qrels, run, 5, fetch_depht=3)`` passed mypy (``**options: Any``) and failed at
    run time; the options are keywords of their own now."""
    snippet = tmp_path / "user_code.py"
    snippet.write_text(
        textwrap.dedent(
            """
            from annotation.model import Qrels, Run
            from calibration import actions

            def use(qrels: Qrels, run: Run) -> None:
                actions.audit(qrels, run, 5, fetch_depht=3)
                actions.check(qrels, run, 5, corpus_sise=10)
                actions.compare(qrels, run, run, permutation=10)
                actions.audit(qrels, run, 5, fetch_depth=3)
            """
        )
    )
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--no-incremental", "--follow-imports=silent", str(snippet)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    errors = [line for line in done.stdout.splitlines() if ": error:" in line]
    # the three misspelt calls (lines 6-8) and not the right one (line 9)
    assert {int(e.split(":")[1]) for e in errors} == {6, 7, 8}, done.stdout
    for name in ("fetch_depht", "corpus_sise", "permutation"):
        assert any(f'Unexpected keyword argument "{name}"' in e for e in errors), done.stdout
