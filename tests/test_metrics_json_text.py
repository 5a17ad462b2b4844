"""``metrics --format json`` writes its per-query lines a column at a time
(:func:`calibration.commands_text.metrics_json_text`, #42): the text must be the one
``dumps(metrics_json(...))`` writes, byte for byte, whatever the values and ids."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from calibration.commands_text import dumps, metrics_json, metrics_json_text
from calibration.metrics import AP, RR, Evaluation, Measure

NAN = float("nan")


def evaluation(qids: list[str], columns: dict[Measure, list[float]], rel: list[int]) -> Evaluation:
    n = len(qids)
    return Evaluation(
        ks=[10],
        min_grade=1,
        gain="linear",
        qids=qids,
        values={name: np.array(values, dtype=np.float64) for name, values in columns.items()},
        num_ret=np.array([1000] * n, dtype=np.int64),
        num_rel=np.array(rel, dtype=np.int64),
        num_rel_ret=np.zeros(n, dtype=np.int64),
        num_judged=np.ones(n, dtype=np.int64),
        evaluated=np.ones(n, dtype=bool),
        missing_from_run=[],
        not_in_qrels=0,
        duplicates={},
        measures=list(columns),
    )


# values json.dumps writes in every form it has: shortest repr, exponents, integers as x.0,
# both zeros, NaN (null), the infinities, and the same value twice
TRICKY = [
    0.1,
    1 / 3,
    3.3333333333333335e-05,
    1e-05,
    1.0,
    0.0,
    -0.0,
    NAN,
    float("inf"),
    -float("inf"),
    1 / 3,
    2.5e16,
]


def test_tricky_values_are_written_as_json_dumps_writes_them() -> None:
    qids = [f"q{i}" for i in range(len(TRICKY))]
    p10, rr = Measure("P", 10), RR
    result = evaluation(
        qids, {p10: TRICKY, rr: TRICKY[::-1], AP: [NAN] * len(TRICKY)}, list(range(len(TRICKY)))
    )
    text = metrics_json_text(result)
    assert text == dumps(metrics_json(result))
    assert '"q6": {"rel": 6, "retrieved": 1000, "P@10": -0.0,' in text  # -0.0 kept apart from 0.0
    assert '"q7": {"rel": 7, "retrieved": 1000, "P@10": null,' in text
    assert '"q8": {"rel": 8, "retrieved": 1000, "P@10": Infinity,' in text


@pytest.mark.parametrize(
    "qid",
    ['quote"d', "back\\slash", "caf\u00e9", "tab\there", "with space", "\u65e5\u672c", "new\nline"],
)
def test_ids_that_need_an_escape_are_escaped_as_json_dumps_escapes_them(qid: str) -> None:
    result = evaluation(["plain", qid], {Measure("P", 10): [0.5, 0.25]}, [1, 2])
    assert metrics_json_text(result) == dumps(metrics_json(result))


def test_label_coverage_is_written_when_given() -> None:
    result = evaluation(["a", "b", "c"], {Measure("R", 10): [0.5, NAN, 1.0]}, [2, 0, 1])
    coverage = {"a": 0.001, "c": NAN}  # "b" absent: null
    text = metrics_json_text(result, coverage)
    assert text == dumps(metrics_json(result, coverage))
    assert '"a": {"rel": 2, "retrieved": 1000, "label_coverage": 0.001, "R@10": 0.5}' in text


def test_no_queries_write_an_empty_object() -> None:
    result = evaluation([], {Measure("P", 10): []}, [])
    assert metrics_json_text(result) == dumps(metrics_json(result))
    assert json.loads(metrics_json_text(result))["queries"] == {}


def test_many_random_queries_read_back_as_the_values() -> None:
    rng = np.random.default_rng(7)
    n = 5_000
    values = rng.random(n)
    values[rng.integers(0, n, 50)] = NAN
    grades = np.round(rng.random(n) * 10) / 10  # P@10-like: a few distinct values
    qids = [f"q{i:05d}" for i in range(n)]
    result = evaluation(
        qids, {Measure("nDCG", 10): values.tolist(), Measure("P", 10): grades.tolist()}, [3] * n
    )
    text = metrics_json_text(result)
    assert text == dumps(metrics_json(result))
    read = json.loads(text)["queries"]
    assert [read[q]["nDCG@10"] for q in qids[:3]] == values[:3].tolist()


def test_writing_imports_no_pandas() -> None:
    """A string scalar made by ``pa.scalar`` would import pandas (a quarter of a second)."""
    code = (
        "import sys, numpy as np\n"
        "from calibration.commands_text import metrics_json_text\n"
        "from calibration.metrics import Evaluation, Measure\n"
        "z = np.zeros(2, dtype=np.int64)\n"
        "r = Evaluation([10], 1, 'linear', ['a', 'b'], {Measure('P', 10): np.array([0.5, 0.1])}, z, z, z, z,"
        " np.ones(2, bool), [], 0, {}, measures=[Measure('P', 10)])\n"
        'assert \'"b": {"rel": 0\' in metrics_json_text(r)\n'
        "print('pandas' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert done.stdout.strip() == "False"


ROOT = Path(__file__).resolve().parents[1]
