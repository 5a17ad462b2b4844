"""``annotation.arrow_compute`` is ``pyarrow.compute`` for the calls the engine makes: each function
gives what pyarrow.compute's of the same name gives (values and types), on plain, chunked, sliced
and tabular inputs, with Python scalars where the engine passes them; and it refuses what
pyarrow.compute refuses (a cast that overflows, a take out of bounds)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from typing import Any

import pyarrow as pa
import pyarrow.compute as reference
import pytest

import annotation.arrow_compute as ours

WORDS = pa.chunked_array([pa.array(["b", "#a", "c", "b"]), pa.array(["a", "", "c d"])])
SLICED = pa.array(["z", "b", "b", "a", "q"]).slice(1, 3)
NUMBERS = pa.chunked_array([pa.array([1.5, float("nan"), -2.0]), pa.array([3.0])])
INTS = pa.array([3, 1, 2, 1], pa.int64())
FLAGS = pa.chunked_array([pa.array([True, False]), pa.array([False])])
TABLE = pa.table(
    {"q": pa.array([2, 1, 2, 1]), "s": pa.array([0.5, 0.5, 0.9, 0.1]), "d": pa.array(["x", "y", "z", "w"])}
)
KEYS = [("q", "ascending"), ("s", "descending"), ("d", "descending")]

CASES: list[tuple[str, Callable[[Any], Any]]] = [
    ("any", lambda pc: pc.any(FLAGS)),
    ("all", lambda pc: pc.all(FLAGS)),
    ("all empty", lambda pc: pc.all(pa.array([], pa.bool_()))),
    ("min", lambda pc: pc.min(INTS)),
    ("max", lambda pc: pc.max(pa.array([], pa.int64()))),
    ("equal scalar", lambda pc: pc.equal(WORDS, WORDS[0])),
    ("equal python", lambda pc: pc.equal(SLICED, "b")),
    ("equal arrays", lambda pc: pc.equal(SLICED, pa.array(["b", "a", "a"]))),
    ("not_equal", lambda pc: pc.not_equal(INTS.slice(1), INTS.slice(0, 3))),
    ("is_nan", lambda pc: pc.is_nan(NUMBERS)),
    ("coalesce", lambda pc: pc.coalesce(pa.array([1, None, 3]), pa.array([9, 9, 9]))),
    ("join", lambda pc: pc.binary_join_element_wise(SLICED, pa.array(["1", "2", "3"]), "\x1f")),
    ("cast int", lambda pc: pc.cast(pa.array(["7", "-2"]), pa.int64())),
    ("cast bool", lambda pc: pc.cast(pa.array([True, False]), pa.int8())),
    ("cast chunked", lambda pc: pc.cast(WORDS, pa.large_string())),
    ("dictionary_encode", lambda pc: pc.dictionary_encode(WORDS)),
    ("unique", lambda pc: pc.unique(WORDS)),
    ("value_counts", lambda pc: pc.value_counts(WORDS)),
    ("index_in", lambda pc: pc.index_in(WORDS, value_set=pa.array(["c", "b"]))),
    ("is_in", lambda pc: pc.is_in(SLICED, value_set=pa.array(["a"]))),
    ("starts_with", lambda pc: pc.starts_with(WORDS, "#")),
    ("match_substring", lambda pc: pc.match_substring(WORDS, " ")),
    ("match_substring_regex", lambda pc: pc.match_substring_regex(WORDS, "^[a-c]$")),
    ("utf8_length", lambda pc: pc.utf8_length(pa.array(["maïs", "", "穀物"]))),
    ("utf8_trim", lambda pc: pc.utf8_trim(pa.array(["  1 ", "2"]), " ")),
    ("sort_indices array", lambda pc: pc.sort_indices(pa.array(["b", "a", "c", "a"]))),
    ("sort_indices chunked", lambda pc: pc.sort_indices(WORDS)),
    ("sort_indices table", lambda pc: pc.sort_indices(TABLE, sort_keys=KEYS)),
    ("take", lambda pc: pc.take(WORDS, pa.array([6, 0, 3]))),
    ("take table", lambda pc: pc.take(TABLE, pa.array([3, 1], pa.uint64()))),
    ("filter", lambda pc: pc.filter(TABLE, pa.array([True, False, None, True]))),
]


@pytest.mark.parametrize("name, call", CASES, ids=[name for name, _ in CASES])
def test_each_function_gives_what_pyarrow_compute_gives(name: str, call: Callable[[Any], Any]) -> None:
    expected, got = call(reference), call(ours)
    assert type(got) is type(expected)
    assert got.equals(expected), (got, expected)


@pytest.mark.parametrize(
    "call",
    [
        lambda pc: pc.cast(pa.array([300]), pa.int8()),
        lambda pc: pc.cast(pa.array(["1.5"]), pa.int64()),
        lambda pc: pc.take(INTS, pa.array([9])),
    ],
    ids=["overflow", "not an integer", "out of bounds"],
)
def test_it_refuses_what_pyarrow_compute_refuses(call: Callable[[Any], Any]) -> None:
    with pytest.raises((pa.ArrowInvalid, IndexError)) as expected:
        call(reference)
    with pytest.raises(type(expected.value)) as got:
        call(ours)
    assert str(got.value) == str(expected.value)


def test_importing_it_does_not_import_pyarrow_compute() -> None:
    probe = "import sys, annotation.arrow_compute; print('pyarrow.compute' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"
