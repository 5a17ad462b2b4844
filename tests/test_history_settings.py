"""A setting is not the system (issue #40, item 4): two recorded checks of the same run and labels at
-k 5 and -k 10 differ in their settings, and ``history --diff`` says so first."""

from __future__ import annotations

import json

from calibration.__main__ import main
from tests.conftest import cli

EX = "examples/worked-example"


def test_a_diff_across_settings_says_so_first(capsys, tmp_path) -> None:
    db = str(tmp_path / "h.db")
    base = ["check", f"{EX}/golden.yaml", f"{EX}/run.jsonl", "--record", "--name", "r", "--db", db]
    for k in ("5", "10"):
        cli(main, capsys, *base, "-k", k)
    code, out, err = cli(main, capsys, "history", "--db", db, "--diff", "1", "2")
    assert code == 0, err
    lines = out.splitlines()
    # at -k 10 the run (10 deep) has no stage 1 beyond k: the fetch depth follows the k
    assert lines[0].startswith("settings changed: k 5 -> 10, fetch depth 10 -> none: the two checks measured")
    assert "the changes below follow the settings, not the system" in lines[0]
    assert "(under other settings)" in out
    code, out, _ = cli(main, capsys, "history", "--db", db, "--diff", "1", "2", "--format", "json")
    assert json.loads(out)["settings_changed"] == ["k 5 -> 10", "fetch depth 10 -> none"]
    # the same settings twice: no settings line
    cli(main, capsys, *base, "-k", "10")
    code, out, _ = cli(main, capsys, "history", "--db", db, "--diff", "2", "3")
    assert "settings changed" not in out


def test_the_history_and_its_chart_mark_the_change_of_settings(capsys, tmp_path) -> None:
    db = str(tmp_path / "h.db")
    base = ["check", f"{EX}/golden.yaml", f"{EX}/run.jsonl", "--record", "--name", "r", "--db", db]
    for k in ("5", "10", "10"):
        cli(main, capsys, *base, "-k", k)
    code, out, err = cli(main, capsys, "history", "--db", db)
    assert code == 0, err
    assert (
        "settings changed at check 2 (r): k 5 -> 10, fetch depth 10 -> none: its figures follow the "
        "settings, not the system" in out
    )
    assert "at check 3" not in out  # the same settings as check 2
    entries = json.loads(cli(main, capsys, "history", "--db", db, "--format", "json")[1])["checks"]
    assert [e["settings_changed"] for e in entries] == [[], ["k 5 -> 10", "fetch depth 10 -> none"], []]
    # the page's chart draws a rule at check 2, its tooltip the change
    from annotation.store import Store
    from calibration.policy.check_text import readable
    from calibration.policy.history import history_data
    from denominator.ui.check import history_chart

    with Store(db) as store:
        chart = history_chart(readable(history_data(store)))
    spec = json.dumps(chart.to_dict())
    assert "settings changed here" in spec and "k 5 -> 10, fetch depth 10 -> none" in spec
