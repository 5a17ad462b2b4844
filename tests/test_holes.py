"""Holes in a run's top k, filled by a judge, corrected with a sample (calibration/holes/scoring.py): the
worked example by hand, the estimator's formula by hand, and its coverage on Cranfield."""

from __future__ import annotations

import math

import numpy as np
import pytest

from annotation.formats.golden import read_golden
from annotation.formats.rankings import read_rankings
from annotation.model import Qrels, Run
from calibration.holes.scoring import (
    MIN_CHANGED,
    HolesError,
    corrected_mean,
    find_holes,
    sample_queries,
    score_with_holes,
)
from calibration.metrics import evaluate_query
from tests.conftest import EXAMPLE


@pytest.fixture(scope="module")
def worked():
    return read_golden(EXAMPLE / "golden.yaml"), read_rankings(EXAMPLE / "run.jsonl")


def test_the_worked_example_holes_at_5(worked) -> None:
    qrels, run = worked
    holes = find_holes(qrels, run, 5)
    assert holes["q_milk"].holes == ("s2", "x1", "x3")  # the figure: judged@5 0.4
    assert holes["q_milk"].judged_at_k == pytest.approx(0.4)
    assert holes["q_milk"].share == pytest.approx(0.6)
    assert holes["q_faw"].holes == ("x3", "p1", "d2")
    assert holes["q_store"].holes == ("d2", "x4", "p2")
    assert holes["q_broad"].holes == ("x1",)
    assert holes["q_broad"].judged == 4
    assert list(holes) == ["q_broad", "q_faw", "q_milk", "q_store"]  # bytewise


def test_a_repeat_is_one_hole_and_keeps_its_slot() -> None:
    qrels = Qrels(grades={"q": {"d1": 3}})
    run = Run.from_rankings({"q": ["x1", "x1", "d1", "x2", "x3"]})
    got = find_holes(qrels, run, 4)["q"]
    assert got.holes == ("x1", "x2")  # the second x1 takes a slot, so x3 is beyond 4
    assert got.judged == 1


def test_the_judge_fills_q_milk_and_relevant_holes_join_rel(worked) -> None:
    qrels, run = worked
    judge = {"q_milk": {"s2": 0, "x1": 2, "x3": 0, "d1": 0}}  # d1 is people's: the judge's is ignored
    got = score_with_holes(qrels, run, k=5, judge=judge, min_grade=1)
    i = got.qids.index("q_milk")
    assert got.filled_count[i] == 3 and got.filled_relevant[i] == 1 and got.ungraded[i] == 0
    assert got.rel[i] == 3  # people's |Rel|; "3 + 1 filled"
    assert got.pool["P@5"][i] == pytest.approx(0.4)  # the worked example's own figure
    assert got.filled["P@5"][i] == pytest.approx(0.6)  # d1, x1, d2 of 5
    assert got.filled["R@5"][i] == pytest.approx(0.75)  # 3 of 3 + 1 filled
    dcg = 3 / 1 + 2 / math.log2(4) + 2 / math.log2(5)  # d1 at 1, x1 at 3, d2 at 4
    idcg = 3 / 1 + 2 / math.log2(3) + 2 / math.log2(4) + 1 / math.log2(5)  # 3, 2, 2, 1
    assert got.filled["nDCG@5"][i] == pytest.approx(dcg / idcg)
    assert got.filled["nDCG@5"][i] == pytest.approx(0.8539872, abs=1e-7)
    ranking = run.rankings()["q_milk"]
    reference = evaluate_query(ranking, {"d1": 3, "d2": 2, "d3": 1, "x1": 2}, ks=[5], min_grade=1)
    for name in ("P@5", "R@5", "nDCG@5", "RR", "AP"):
        assert got.filled[name][i] == pytest.approx(reference[name])
    # the other queries have no judge grade: their holes stay not relevant, and are counted
    j = got.qids.index("q_faw")
    assert got.filled_count[j] == 0 and got.ungraded[j] == 3
    assert got.filled["P@5"][j] == got.pool["P@5"][j]
    assert got.corrected == {}  # no sample, no corrected figure


def test_a_sample_whose_holes_people_have_not_labelled_is_refused(worked) -> None:
    qrels, run = worked
    with pytest.raises(HolesError, match="3 holes of the sampled queries' top 5 have no people's grade"):
        score_with_holes(qrels, run, k=5, judge={}, min_grade=1, sample={"q_milk": ["s2", "x1", "x3"]})
    with pytest.raises(HolesError, match="names 1 query the run and the judgments do not both hold"):
        score_with_holes(qrels, run, k=5, judge={}, min_grade=1, sample={"q_nope": []})


def test_labels_on_the_sample_in_the_golden_file_are_taken_out_of_the_pool(worked) -> None:
    """Once people have labelled the sample's holes, GOLDEN holds them: the holes-as-not-relevant
    figure must still be the pool's (before the sample), and people's figure uses them."""
    qrels, run = worked
    labelled = {qid: dict(g) for qid, g in qrels.grades.items()}
    labelled["q_milk"].update({"s2": 0, "x1": 1, "x3": 0})
    judge = {"q_milk": {"s2": 0, "x1": 0, "x3": 0}}
    got = score_with_holes(
        Qrels(grades=labelled), run, k=5, judge=judge, min_grade=1, sample={"q_milk": ["s2", "x1", "x3"]}
    )
    i = got.qids.index("q_milk")
    assert got.pool["P@5"][i] == pytest.approx(0.4)
    assert got.people["P@5"][i] == pytest.approx(0.6)
    assert got.filled["P@5"][i] == pytest.approx(0.4)
    assert np.isnan(got.people["P@5"][got.qids.index("q_faw")])
    assert got.sampled == ["q_milk"]
    assert got.corrected["P@5"].n == 1 and got.corrected["P@5"].ci is None  # one query: no interval


def test_the_corrected_mean_by_hand() -> None:
    """lam = 1, no anchor: theta = mean_N(f) + mean_n(y - f); se^2 = (1 - n/N) var_n(y - f) / n."""
    y = [0.3, 0.2, 0.5, 0.4, 0.1, 0.6]
    f = [0.2, 0.2, 0.3, 0.4, 0.0, 0.5]
    f_all = [*f, 0.1, 0.4, 0.3, 0.2]
    got = corrected_mean(y, f, f_all, lam=1.0)
    # d = [.1, 0, .2, 0, .1, .1]: mean 0.083333; mean_N(f) = 2.6 / 10 = 0.26
    assert got.estimate == pytest.approx(0.3433333, abs=1e-7)
    # var(d, ddof 1) = 0.0283333 / 5; se = sqrt(0.4 * 0.0056667 / 6) = 0.0194365; t(0.975, 5) = 2.5705818
    assert got.se == pytest.approx(0.0194365, abs=1e-7)
    assert got.ci is not None
    assert got.ci[1] == pytest.approx(0.3433333 + 0.0499634, abs=1e-6)  # the t interval's upper end
    # its lower end (0.2933699) is widened to the score interval's lower root
    # (calibration/holes/interval.py): share = var(y - f) / var(y) = 0.0047222 / 0.0291667;
    # a+ = sum y^2 / sum y = 0.91 / 2.1; K = t^2 * 0.4 / 5 * share = 0.0855879;
    # the smaller root of (1 + K) u^2 - (2 * 0.3433333 + K a+) u + 0.3433333^2 = 0
    assert got.ci[0] == pytest.approx(0.2829893, abs=1e-6)
    assert got.human_only == pytest.approx(0.35)
    assert got.changed == 6 and got.n == 6 and got.population == 10


def test_a_census_reads_the_target_exactly() -> None:
    rng = np.random.default_rng(3)
    y = rng.random(30)
    f = y + rng.normal(0, 0.1, 30)
    got = corrected_mean(y, f, f)  # every query sampled: nothing left to estimate
    assert got.estimate == pytest.approx(float(y.mean()))
    assert got.ci == pytest.approx((float(y.mean()), float(y.mean())))


def test_a_judge_that_knows_the_holes_gives_a_narrow_interval_and_a_useless_one_lam_0() -> None:
    rng = np.random.default_rng(11)
    anchor = rng.integers(0, 6, 200) / 10
    gain = rng.integers(0, 3, 200) / 10
    y_all = anchor + gain
    good = anchor + gain  # the judge is right on every hole
    noise = anchor + rng.integers(0, 3, 200) / 10  # the judge guesses
    pick = rng.choice(200, 40, replace=False)
    right = corrected_mean(y_all[pick], good[pick], good, anchor_sampled=anchor[pick], anchor_all=anchor)
    guess = corrected_mean(y_all[pick], noise[pick], noise, anchor_sampled=anchor[pick], anchor_all=anchor)
    assert right.lam == pytest.approx(1.0) and right.estimate == pytest.approx(float(y_all.mean()))
    assert right.ci is not None and right.ci[1] - right.ci[0] == pytest.approx(0.0, abs=1e-12)
    assert guess.lam is not None and guess.lam < 0.3  # tuned down: the guesses carry no signal
    assert guess.ci is not None and guess.without_judge_ci is not None
    width = guess.ci[1] - guess.ci[0]
    assert width <= 1.05 * (guess.without_judge_ci[1] - guess.without_judge_ci[0])


def test_no_interval_when_the_sample_saw_too_few_holes_matter() -> None:
    y = [0.2] * 20
    y[0] = 0.3  # people's hole labels changed one sampled query
    anchor = [0.2] * 20
    got = corrected_mean(y, anchor, anchor * 3, anchor_sampled=anchor, anchor_all=anchor * 3)
    assert got.ci is None and got.changed == 1 < MIN_CHANGED
    assert "changed the figure of 1 of the 20 sampled queries" in (got.note or "")
    assert got.estimate == pytest.approx(0.205)  # the point estimate is still given


def test_the_sample_is_uniform_and_seeded() -> None:
    qids = [f"q{i}" for i in range(100)]
    first = sample_queries(qids, 10, seed=4)
    assert first == sample_queries(reversed(qids), 10, seed=4)  # order in does not matter
    assert first != sample_queries(qids, 10, seed=5)
    assert len(set(first)) == 10
    counts = np.zeros(100)
    for seed in range(2000):
        for q in sample_queries(qids, 10, seed):
            counts[int(q[1:])] += 1
    assert counts.min() > 130 and counts.max() < 275  # 200 each expected: uniform
    with pytest.raises(HolesError, match="a sample of 101 queries, but the run has 100"):
        sample_queries(qids, 101, 0)


# ------------------------------------------------------------------ coverage on Cranfield


def test_coverage_on_cranfield_400_repetitions() -> None:
    """The acceptance test: a smaller run of bench/holes.py (400 samples of 40 queries, a fixed
    seed) holds the coverage of P@10's corrected 95% interval above 90%."""
    from bench.cranfield import cranfield_dir
    from bench.holes import setting, simulate

    if cranfield_dir() is None:
        pytest.skip("the shared Cranfield collection is absent")
    s = setting()
    assert s.holes == 815 and s.relevant_holes == 94  # the setting the docs describe
    got = simulate(s, reps=400, n=40, seed=20261203, measures=("P@10", "nDCG@10"))
    p = got["P@10"]
    assert p["interval_given"] == 1.0
    assert p["coverage"] > 0.90
    assert p["narrower"] > 0.25  # than people-only on the same samples
    assert p["error_corrected"] < p["error_holes_as_not_relevant"]
    assert p["target"] == pytest.approx(0.2284444, abs=1e-6)
    assert p["holes_as_not_relevant"] == pytest.approx(0.1866667, abs=1e-6)


def test_the_upper_end_reaches_further_when_the_gains_are_rare_and_large() -> None:
    """Most queries gain nothing from people's hole labels, a few gain much: the t interval's upper
    end is raised to the score interval's (the variance tied to the mean), its lower end kept."""
    from scipy.stats import t as student_t

    gain = np.zeros(40)
    gain[:5] = [0.3, 0.2, 0.2, 0.1, 0.1]  # 5 of 40 sampled queries changed
    anchor = np.full(40, 0.2)
    y = anchor + gain
    got = corrected_mean(
        y, anchor, np.full(200, 0.2), anchor_sampled=anchor, anchor_all=np.full(200, 0.2), lam=0.0
    )
    assert got.ci is not None
    centre = 0.2 + gain.mean()
    half = float(student_t.ppf(0.975, 39)) * math.sqrt((1 - 40 / 200) * np.var(gain, ddof=1) / 40)
    assert got.ci[0] == pytest.approx(centre - half)  # the t lower end
    assert got.ci[1] > centre + half + 0.005  # raised
    # by hand: a+ = sum g^2 / sum g = 0.19 / 0.9; k2 = t^2 (1 - n/N) / (n - 1); share 1 (lam 0)
    a_pos = 0.19 / 0.9
    k2 = float(student_t.ppf(0.975, 39)) ** 2 * 0.8 / 39
    u_hat = gain.mean()
    b = 2 * u_hat + k2 * a_pos
    root = (b + math.sqrt(b * b - 4 * (1 + k2) * u_hat * u_hat)) / (2 * (1 + k2))
    assert got.ci[1] == pytest.approx(0.2 + root)


def test_a_judge_whose_fill_does_not_vary_over_the_sample_gets_no_weight() -> None:
    """Nothing on the sample shows how right the judge is: lambda 0, the sample alone."""
    f_all = np.array([0.0] * 10 + [0.3] * 90)  # the judge fills only outside the sample
    y = np.array([0.1] * 5 + [0.0] * 5)
    got = corrected_mean(y, f_all[:10], f_all, anchor_sampled=np.zeros(10), anchor_all=np.zeros(100))
    assert got.lam == 0.0 and "nothing shows its accuracy" in (got.note or "")
    assert got.estimate == pytest.approx(0.05)
