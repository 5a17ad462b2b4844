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
