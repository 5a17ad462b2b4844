"""agree read a column at a time (issue #42): Arrow's reader gives read_csv_rows' table, encoded rows
give the tuples' long table and report, and a stack of kappa intervals gives each table's own."""

from __future__ import annotations

import random

import numpy as np
import pytest

from annotation.formats.csv_tables import read_csv_columns, read_csv_rows
from annotation.model import InvalidTable
from calibration.stats.agreement import InvalidRatings, agreement_report
from calibration.stats.kappa_interval import brent_root, brent_roots, score_interval, score_intervals
from calibration.stats.multirater import EncodedRows, LongTable

FILES = {
    "plain": "item,rater,label\ni1,ann,1\ni1,bob,2\ni2,ann,0\n",
    "crlf, no last line end": "item,rater,label\r\ni1,ann,1\r\ni1,bob,\r\ni2,ann,0",
    "quoted": 'item,rater,label\n"i,1",ann,1\ni1,bob,"2"\n',
    "padded": "item,rater,label\ni1, ann ,1\ni1,bob,2 \n",
    "inner space": "item,rater,label\nitem one,ann,very good\ni1,bob,bad\n",
    "blank line": "item,rater,label\ni1,ann,1\n\ni1,bob,2\n",
    "byte order mark": "\ufeffitem,rater,label\ni1,ann,1\n",
    "non-ASCII padding": "item,rater,label\ni1,ann,1\u00a0\ni1,bob,2\n",
}
BAD = {
    "missing field": "item,rater,label\ni1,ann\n",
    "extra field": "item,rater,label\ni1,ann,1,2\n",
    "empty item": "item,rater,label\ni1,ann,1\n,bob,2\n",
    "header only": "item,rater,label\n",
    "missing column": "item,rater\ni1,ann\n",
}


def _message(call, path):
    with pytest.raises(InvalidTable) as caught:
        call(path, ["item", "rater", "label"])
    return str(caught.value)


@pytest.mark.parametrize("name", FILES)
def test_arrow_reads_the_table_read_csv_rows_reads(tmp_path, name: str) -> None:
    path = tmp_path / "labels.csv"
    path.write_bytes(FILES[name].encode("utf-8"))
    assert read_csv_columns(path, ["item", "rater"]).rows() == read_csv_rows(path, ["item", "rater"])


@pytest.mark.parametrize("name", BAD)
def test_a_bad_file_gets_read_csv_rows_error_word_for_word(tmp_path, name: str) -> None:
    path = tmp_path / "labels.csv"
    path.write_text(BAD[name], encoding="utf-8")
    assert _message(read_csv_columns, path) == _message(read_csv_rows, path)


def _encoded(rows: list[tuple[str, str, str]]) -> EncodedRows:
    def codes(values: list[str]) -> tuple[list[str], np.ndarray]:
        names = list(dict.fromkeys(values))
        index = {v: i for i, v in enumerate(names)}
        return names, np.array([index[v] for v in values], dtype=np.int64)

    (items, item), (raters, rater), (labels, label) = (codes([r[k] for r in rows]) for k in range(3))
    if "" in labels:
        label = np.where(label == labels.index(""), -1, label)
    return EncodedRows(items, item, raters, rater, labels, label)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("labels", [["0", "1", "3"], ["1", "01", "1.0", "2.5"], ["A", "B", "N"], ["x", " y"]])
def test_encoded_rows_give_the_tuples_table_and_report(seed: int, labels: list[str]) -> None:
    rng = random.Random(seed)
    rows = [
        (f"i{i}", f"r{r:02d}", "" if rng.random() < 0.05 else rng.choice(labels))
        for i in range(60)
        for r in rng.sample(range(25), rng.randint(1, 6))
    ]
    rng.shuffle(rows)
    encoded, plain = LongTable(_encoded(rows)), LongTable(rows)
    for name in ("items", "raters", "scale", "numeric", "ordered", "n_rows", "n_missing", "n_ratings"):
        assert getattr(encoded, name) == getattr(plain, name), name
    for name in ("item_of", "rater_of", "label_of"):
        assert getattr(encoded, name).tolist() == getattr(plain, name).tolist(), name
    assert (encoded.numbers is None) == (plain.numbers is None)
    assert agreement_report(_encoded(rows), trusted=0.6, sequential=True) == agreement_report(
        rows, trusted=0.6, sequential=True
    )


def test_encoded_rows_name_the_same_repeated_rating() -> None:
    rows = [
        ("i1", "ann", "1"),
        ("i2", "ann", "1"),
        ("i1", "bob", "0"),
        ("i2", "ann", "2"),
        ("i1", "bob", "3"),
    ]
    with pytest.raises(InvalidRatings) as plain:
        LongTable(rows)
    with pytest.raises(InvalidRatings) as encoded:
        LongTable(_encoded(rows))
    assert str(encoded.value) == str(plain.value) and "'ann' rated item 'i2'" in str(plain.value)


def test_a_stack_of_intervals_is_each_tables_own() -> None:
    rng = np.random.default_rng(5)
    tables = [rng.multinomial(n, rng.dirichlet(np.ones(9))).reshape(3, 3) for n in (2, 5, 30, 400, 5000)]
    tables += [np.diag([3, 4, 5]), np.array([[0, 4, 0], [3, 0, 0], [0, 0, 0]]), np.diag([6, 0, 0])]
    for weights in (None, "linear", "quadratic"):
        low, high = score_intervals(np.array(tables), weights)
        for table, lo, hi in zip(tables, low.tolist(), high.tolist()):
            if np.isnan(lo):
                with pytest.raises(InvalidRatings):
                    score_interval(table, weights)
            else:
                assert score_interval(table, weights) == (lo, hi)


def test_brent_roots_take_brent_roots_steps() -> None:
    shifts = np.array([0.1, 0.3, 0.7, 0.123456789])

    def f(x: float, c: float) -> float:
        return (x - c) ** 3 + 0.01 * (x - c)

    roots = brent_roots(lambda x, rows: f(x, shifts[rows]), np.zeros(4), np.ones(4), np.full(4, 1e-13))
    assert roots.tolist() == [brent_root(lambda x, c=c: f(x, c), 0.0, 1.0, xtol=1e-13) for c in shifts]
