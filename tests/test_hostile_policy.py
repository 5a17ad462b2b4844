"""A hostile policy file (#25): read as golden.yaml is, so an alias bomb, deep nesting, a key given
twice, a huge value or a FIFO is one line on stderr and exit 2, at once, with nothing built from it.
Each case gave 35 s and 1.18 GB (the bomb), a RecursionError traceback (20,000 deep), a silent last
value (the key twice), a 351 MB error line, or a hang (the FIFO) before."""

from __future__ import annotations

import os
import tracemalloc

import pytest

from calibration.__main__ import main
from tests.conftest import EXAMPLE, cli


def check(capsys, policy, *extra):
    """``check`` on the worked example under ``--policy policy``: (exit code, stdout, stderr)."""
    argv = [
        "check",
        EXAMPLE / "golden.yaml",
        EXAMPLE / "run.jsonl",
        "-k",
        "5",
        "--no-store",
        "--policy",
        policy,
    ]
    return cli(main, capsys, *argv, *extra)


def alias_bomb(levels: int = 8) -> str:
    """A 300-byte YAML document that expands to 9^levels strings."""
    lines = ['a0: &a0 ["x","x","x","x","x","x","x","x","x"]']
    for i in range(1, levels + 1):
        lines.append(f"a{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * 9) + "]")
    return "corpus:\n" + "".join(f"  {line}\n" for line in lines)


CASES = {
    "bomb": (alias_bomb(), "YAML anchor or alias &a0 is not allowed"),
    "bomb-under-a-rule": (alias_bomb().replace("corpus:", "rules:\n stage1_recall:"), "YAML anchor or alias"),
    "deep": ("rules: " + "[" * 20_000 + "]" * 20_000 + "\n", "nested more than 64 levels deep"),
    "twice": (
        "corpus: narrow\ncorpus: broad\n",
        "corpus: key already given on line 1; expected each key once",
    ),
    "twice-inside": ("rules:\n  kappa: 0.6\n  kappa: off\n", "kappa: key already given on line 2"),
    "huge-value": (
        "corpus: " + "x" * 1_000_000 + "\n",
        "... (1,000,002 characters); expected narrow or broad",
    ),
    "tag": ("corpus: !!python/object:os.system narrow\n", "YAML tag"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_hostile_policy_file_is_one_short_line_and_exit_2(case, tmp_path, capsys):
    text, expected = CASES[case]
    policy = tmp_path / "denominator.yaml"
    policy.write_text(text)
    tracemalloc.start()
    code, out, err = check(capsys, policy)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert code == 2 and out == "" and err.count("\n") == 1, (code, err[:300])
    assert expected in err and len(err) < 300 + len(str(policy)), err[:400]
    assert peak < 100 * 2**20, f"{peak / 2**20:.0f} MB traced"  # nothing expanded (the bomb: 1.18 GB)


def test_a_fifo_as_the_policy_is_refused_before_it_is_opened(tmp_path, capsys):
    fifo = tmp_path / "policy.yaml"
    os.mkfifo(fifo)  # opening it for reading would block until a writer came
    code, out, err = check(capsys, fifo)
    assert code == 2 and "is not a regular file" in err and err.count("\n") == 1


def test_the_same_file_written_plainly_is_read(tmp_path, capsys):
    policy = tmp_path / "denominator.yaml"
    policy.write_text("corpus: broad\nundecided: warn\nrules:\n  kappa: 0.7\n")
    code, out, err = check(
        capsys,
        policy,
        "--format",
        "json",
    )
    assert code == 1, err
    import json

    read = json.loads(out)["policy"]
    assert (read["corpus"], read["undecided"], read["rules"]["kappa"]) == ("broad", "warn", ">= 0.7")
