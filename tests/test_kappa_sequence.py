"""Kappa's confidence sequence (calibration/stats/kappa_sequence.py) and ``agree --sequential``."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from calibration.__main__ import main
from calibration.stats.kappa import InvalidRatings
from calibration.stats.kappa_interval import score_interval
from calibration.stats.kappa_sequence import (
    first_decision,
    kappa_sequence,
    labels_to_decide,
    multiplier,
    running_tables,
    score_intervals,
)
from tests.conftest import cli


def stream(
    rng: np.random.Generator, n: int, copy: float, share: float = 0.4
) -> tuple[np.ndarray, np.ndarray]:
    """A person (relevant with ``share``) and a judge that copies the person with probability
    ``copy``, else draws from the same margin: true kappa = ``copy``."""
    person = (rng.random(n) < share).astype(np.int64)
    own = (rng.random(n) < share).astype(np.int64)
    return person, np.where(rng.random(n) < copy, person, own)


def test_multiplier_by_hand() -> None:
    # rho^2 = (-2 log 0.05 + log(1 - 2 log 0.05)) / 200; at n = 200, n rho^2 = 7.938
    x = -2 * math.log(0.05) + math.log(1 - 2 * math.log(0.05))
    by_hand = math.sqrt((x + 1) / x * 2 * math.log(math.sqrt(x + 1) / 0.05))
    assert float(multiplier(200)) == pytest.approx(by_hand, rel=1e-12)
    assert float(multiplier(200)) == pytest.approx(3.035, abs=1e-3)
    values = multiplier(np.arange(30, 401))
    assert (values > 1.96).all() and values.min() == pytest.approx(multiplier(200), abs=1e-3)


def test_score_intervals_equal_todays_interval_at_z_196() -> None:
    rng = np.random.default_rng(5)
    for k in (2, 3, 4):
        for weights in (None, "linear", "quadratic"):
            for _ in range(20):
                counts = rng.multinomial(int(rng.integers(5, 200)), rng.dirichlet(np.ones(k * k))).reshape(
                    k, k
                )
                try:
                    expected = score_interval(counts, weights)
                except InvalidRatings:
                    continue
                _, low, high = score_intervals(counts[None], [1.959963984540054], weights)
                assert (low[0], high[0]) == pytest.approx(expected, abs=1e-9)


def test_hand_checkable_case() -> None:
    # 40 items in four blocks of 10: (1,1), (0,0), (1,0), (0,1) -> p_o 0.5, p_e 0.5, kappa 0 at n = 40
    a = [1] * 10 + [0] * 10 + [1] * 10 + [0] * 10
    b = [1] * 10 + [0] * 10 + [0] * 10 + [1] * 10
    seq = kappa_sequence(a, b, bar=0.6, start=20)
    first, last = seq["looks"][0], seq["looks"][-1]
    assert first["n"] == 20 and first["kappa"] == 1.0 and first["high"] == 1.0  # perfect agreement so far
    assert first["low"] < 1.0  # the score form: no collapse at perfect agreement
    assert last["n"] == 40 and last["kappa"] == pytest.approx(0.0)
    # the look is today's score interval with c_40 for z
    z = float(multiplier(40))
    _, low, high = score_intervals(running_tables(np.array(a), np.array(b), 2)[-1:], [z])
    assert (last["low"], last["high"]) == (low[0], high[0])
    assert last["high"] < 0.6 and last["verdict"] == "not trusted"
    assert seq["decided_at"] == next(look["n"] for look in seq["looks"] if look["high"] < 0.6)
    assert seq["verdict"] == "not trusted" and seq["more_labels"] is None


def test_first_decision_is_kept() -> None:
    assert first_decision([0.1, 0.65, 0.5], [0.9, 0.9, 0.9], 0.6) == (1, "trusted")
    assert first_decision([0.1, 0.2], [0.7, 0.55], 0.6) == (1, "not trusted")
    assert first_decision([np.nan, 0.1], [np.nan, 0.9], 0.6) == (None, "undecided")


def test_labels_to_decide_grows_with_the_sequence() -> None:
    more = labels_to_decide(0.7, 0.55, 0.82, 100, bar=0.6)
    assert more is not None and more > 0
    # the sequence's side at n + more clears the bar, one label earlier it does not
    scale = 0.15 / float(multiplier(100))

    def side(m: int) -> float:
        return scale * float(multiplier(m)) * math.sqrt(100 / m)

    assert side(100 + more) < 0.1 <= side(100 + more - 1)
    assert labels_to_decide(0.7, 0.65, 0.8, 100, bar=0.6) is None  # decided
    assert labels_to_decide(0.6, 0.5, 0.7, 100, bar=0.6) is None  # at the bar


def test_coverage_under_peeking_on_a_synthetic_stream() -> None:
    """Read after every label from 30 to 200, 200 streams a true kappa: the truth falls outside the
    sequence at some look in at most 5% of streams; today's interval read the same way misses more."""
    rng = np.random.default_rng(2024)
    ns = np.arange(30, 201)
    for truth in (0.3, 0.6, 0.85):
        seq_missed = fixed_missed = 0
        tables = []
        for _ in range(200):
            a, b = stream(rng, 200, truth)
            tables.append(running_tables(a, b, 2)[29:])
        stack = np.concatenate(tables)
        for z, name in ((np.tile(multiplier(ns), 200), "sequence"), (np.full(len(stack), 1.96), "fixed")):
            _, low, high = score_intervals(stack, z)
            low, high = low.reshape(200, -1), high.reshape(200, -1)
            missed = int(((low > truth) | (high < truth)).any(axis=1).sum())
            if name == "sequence":
                seq_missed = missed
            else:
                fixed_missed = missed
        assert seq_missed / 200 <= 0.05, (truth, seq_missed)
        assert fixed_missed > seq_missed


def test_refusals() -> None:
    with pytest.raises(InvalidRatings, match="alpha"):
        kappa_sequence([0, 1], [0, 1], bar=0.6, alpha=1.5)
    with pytest.raises(InvalidRatings, match="start"):
        kappa_sequence([0, 1], [0, 1], bar=0.6, start=1)
    with pytest.raises(InvalidRatings, match="horizon"):
        kappa_sequence([0, 1], [0, 1], bar=0.6, horizon=0)
    short = kappa_sequence([0, 1, 1], [0, 1, 0], bar=0.6)  # fewer labels than the first look
    assert short["looks"] == [] and short["decided_at"] is None
    assert short["verdict"] == "undecided" and short["more_labels"] == 27


def write_stream(path, a, b, judge_first: bool = False) -> None:
    rows = ["item,rater,label"]
    if judge_first:  # every judge row first: the person's rows make the pairs, in their order
        rows += [f"i{i},judge,{y}" for i, y in enumerate(b)]
        rows += [f"i{i},person,{x}" for i, x in enumerate(a)]
    else:
        for i, (x, y) in enumerate(zip(a, b)):
            rows += [f"i{i},person,{x}", f"i{i},judge,{y}"]
    path.write_text("\n".join(rows) + "\n")


@pytest.mark.parametrize("bar", [0.3, 0.55, 0.8])
def test_agree_sequential_matches_the_pure_function(tmp_path, capsys, bar) -> None:
    rng = np.random.default_rng(7)
    a, b = stream(rng, 160, 0.6)
    path = tmp_path / "labels.csv"
    write_stream(path, a, b)
    code, out, _ = cli(
        main, capsys, "agree", str(path), "--sequential", "--trusted", str(bar), "--format", "json"
    )
    assert code == 0
    pair = json.loads(out)["pairs"][0]
    assert pair["raters"] == ["judge", "person"]  # rows: judge, so the sequence reads judge as a
    expected = kappa_sequence(b, a, bar=bar)
    got = pair["sequential"]
    assert got["decided_at"] == expected["decided_at"] and got["verdict"] == expected["verdict"]
    assert [look["n"] for look in got["looks"]] == list(range(30, 161))
    assert [look["verdict"] for look in got["looks"]] == [look["verdict"] for look in expected["looks"]]
    assert pair["verdict"] == got["verdict"] and pair["more_labels"] == got["more_labels"]
    code, text, _ = cli(main, capsys, "agree", str(path), "--sequential", "--trusted", str(bar))
    assert code == 0
    if got["decided_at"] is not None:
        assert f"judge vs person: decided at n = {got['decided_at']}: {got['verdict']}" in text
    else:
        assert "judge vs person: not decided by n = 160" in text


def test_agree_sequential_reads_the_order_the_rows_made_pairs(tmp_path, capsys) -> None:
    rng = np.random.default_rng(8)
    a, b = stream(rng, 120, 0.5)
    order = rng.permutation(120)
    path = tmp_path / "labels.csv"
    rows = ["item,rater,label", *[f"i{i},judge,{b[i]}" for i in range(120)]]
    rows += [f"i{i},person,{a[i]}" for i in order]  # the person labels in another order
    path.write_text("\n".join(rows) + "\n")
    code, out, _ = cli(
        main, capsys, "agree", str(path), "--sequential", "--trusted", "0.3", "--format", "json"
    )
    assert code == 0
    got = json.loads(out)["pairs"][0]["sequential"]
    expected = kappa_sequence(b[order], a[order], bar=0.3)
    assert [look["low"] for look in got["looks"]] == [look["low"] for look in expected["looks"]]
    assert got["decided_at"] == expected["decided_at"]


def test_agree_without_sequential_has_no_sequence(tmp_path, capsys) -> None:
    path = tmp_path / "labels.csv"
    write_stream(path, [0, 1, 1, 0] * 10, [0, 1, 0, 0] * 10)
    code, out, _ = cli(main, capsys, "agree", str(path), "--format", "json")
    assert code == 0 and "sequential" not in json.loads(out)["pairs"][0]
