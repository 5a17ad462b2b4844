"""``calibration plan`` (issue #39, item 5): the expected kappa interval of designs Q x m from a pilot.

The predictions are checked against figures computed here by hand (kappa's gradient by finite
differences, the ICC by its formula), the CLI on a small file, and the refusals."""

from __future__ import annotations

import json
import math
from pathlib import Path
from statistics import NormalDist

import numpy as np
import pytest
from scipy.special import chdtri, fdtri, stdtrit

from annotation.options import default
from annotation.values import parse_designs
from calibration.__main__ import main
from calibration.stats.kappa_interval import score_interval
from calibration.stats.plan import median_factor, pilot, plan, predict


def kappa_of(table: np.ndarray) -> float:
    p = table / table.sum()
    po = float(np.trace(p))
    pe = float(p.sum(axis=1) @ p.sum(axis=0))
    return (po - pe) / (1 - pe)


def influences(person: list[int], judge: list[int]) -> tuple[float, np.ndarray]:
    """(V, u_i) by finite differences of kappa in the table's shares."""
    table = np.zeros((2, 2))
    for a, b in zip(person, judge):
        table[a, b] += 1
    p = table / table.sum()
    h = 1e-7
    grad = np.zeros((2, 2))
    for i in range(2):
        for j in range(2):
            q = p.copy()
            q[i, j] += h
            grad[i, j] = (kappa_of(q) - kappa_of(p)) / h
    g = np.array([grad[a, b] for a, b in zip(person, judge)])
    u = g - float((p * grad).sum())
    return float((p * grad**2).sum() - (p * grad).sum() ** 2), u


# two queries, the same table in each: no difference between queries, ICC 0
SAME = ([1, 1, 0, 0, 1, 1, 0, 0], [1, 1, 0, 1, 1, 1, 0, 1], ["a"] * 4 + ["b"] * 4)
# three queries: agreement in two, disagreement in one
PERSON = [1, 1, 0, 0, 1, 0] * 3 + [1, 1, 0, 0, 1, 1]
JUDGE = [1, 1, 0, 0, 1, 0] * 3 + [0, 0, 1, 1, 0, 1]
QUERY = ["q1"] * 6 + ["q2"] * 6 + ["q3"] * 6 + ["q4"] * 6


def test_pilot_with_alike_queries_has_icc_0_and_the_variance_by_hand() -> None:
    found, shares = pilot(*SAME, labels=[0, 1])
    v, _ = influences(SAME[0], SAME[1])
    assert found["kappa"] == pytest.approx(0.5)
    assert found["variance"] == pytest.approx(v, rel=1e-5)
    assert found["icc"] == 0.0
    assert shares is not None
    # Q x m = 10 x 30 with ICC 0: deff 1, the score interval at n* = 300 / c^2 x (z / t(9))^2
    width, ci, deff = predict(shares, 0.0, 10, 30)
    z, t = NormalDist().inv_cdf(0.975), float(stdtrit(9, 0.975))
    c2 = float(chdtri(9, 0.5)) / 9
    low, high = score_interval(shares * (300 / c2 * (z / t) ** 2))
    assert deff == 1.0
    assert ci == pytest.approx([low, high])
    assert width == pytest.approx(high - low)
    assert median_factor(10) == pytest.approx(math.sqrt(c2))


def test_icc_by_hand_and_the_design_effect_it_gives() -> None:
    found, shares = pilot(PERSON, JUDGE, QUERY, labels=[0, 1])
    _, u = influences(PERSON, JUDGE)
    groups = [u[i * 6 : (i + 1) * 6] for i in range(4)]
    msb = sum(6 * (g.mean() - u.mean()) ** 2 for g in groups) / 3
    msw = sum(((g - g.mean()) ** 2).sum() for g in groups) / (24 - 4)
    ratio = msb / msw / float(fdtri(3, 20, 0.5))  # median-unbiased: F over its median
    between = max(ratio - 1, 0) * msw / 6
    rho = between / (between + msw)
    assert rho > 0.3
    assert found["icc"] == pytest.approx(rho, rel=1e-5)
    assert found["m0"] == pytest.approx(6.0)
    assert shares is not None
    width, _, deff = predict(shares, rho, 20, 15)
    assert deff == pytest.approx(1 + 14 * rho)
    # near the centre: about 2 t c sqrt(V deff / n) (a large design, where the score interval is Wald-like)
    width, _, deff = predict(shares, rho, 2000, 15)
    assert found["variance"] is not None
    wald = 2 * float(stdtrit(1999, 0.975)) * median_factor(2000) * math.sqrt(found["variance"] * deff / 30000)
    assert width == pytest.approx(wald, rel=0.02)


def test_more_queries_narrower_and_labels_to_decide() -> None:
    result = plan(PERSON, JUDGE, QUERY, [(5, 60), (10, 30), (20, 15)], bar=0.6, labels=[0, 1])
    widths = [d["width"] for d in result["designs"]]
    assert widths[0] > widths[1] > widths[2]
    assert result["answer"] is not None
    assert result["answer"]["choice"] == "more queries"
    assert result["answer"]["narrowest"] == "20x15"
    for d in result["designs"]:
        q = d["queries_to_decide"]
        assert q is not None and d["labels_to_decide"] == q * d["per_query"]
        _, ci, _ = predict(np.asarray(_shares()), result["pilot"]["icc"] or 0.0, q, d["per_query"])
        kappa = result["pilot"]["kappa"]
        assert kappa is not None and (ci[1] < 0.6 or ci[0] >= 0.6)
        _, before, _ = predict(np.asarray(_shares()), result["pilot"]["icc"] or 0.0, q - 1, d["per_query"])
        assert q == 5 or before[0] < 0.6 <= before[1]


def _shares() -> np.ndarray:
    _, shares = pilot(PERSON, JUDGE, QUERY, labels=[0, 1])
    assert shares is not None
    return shares


def test_one_query_is_no_plan() -> None:
    result = plan([1, 0, 1, 0], [1, 0, 0, 0], ["a"] * 4, [(10, 30)], bar=0.6)
    assert result["designs"] == []
    assert "1 query" in (result["pilot"]["undefined_reason"] or "")


def test_parse_designs() -> None:
    assert parse_designs("5x60, 10X30,20x15") == [(5, 60), (10, 30), (20, 15)]
    for bad in ("", "5x", "x3", "1x30", "5x0", "5*60", "5x60,abc"):
        with pytest.raises(ValueError):
            parse_designs(bad)


@pytest.fixture
def pairs_file(tmp_path):
    path = tmp_path / "pilot.csv"
    path.write_text(
        "query_id,person,judge\n" + "".join(f"{q},{a},{b}\n" for q, a, b in zip(QUERY, PERSON, JUDGE))
    )
    return path


def test_cli_on_a_small_file(pairs_file, capsys) -> None:
    assert main(["plan", "--pairs", str(pairs_file), "--designs", "5x60,10x30,20x15"]) == 0
    out = capsys.readouterr().out
    assert "pilot: n 24 items over 4 queries" in out
    assert "(no pilot interval: 4 of the 5 queries a verdict needs)" in out
    assert "ICC of agreement within a query" in out
    for design in ("5x60", "10x30", "20x15"):
        assert f"  {design} " in out
    assert "more queries or more chunks per query? more queries: at 300 labels" in out
    assert main(["plan", "--pairs", str(pairs_file), "--designs", "5x60,10x30", "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    (entry,) = data["plans"]
    expected = plan(PERSON, JUDGE, QUERY, [(5, 60), (10, 30)], bar=0.6, labels=None)
    assert [d["width"] for d in entry["plan"]["designs"]] == pytest.approx(
        [d["width"] for d in expected["designs"]]
    )
    assert entry["plan"]["bar"] == 0.6


def test_cli_reads_the_export_csv(tmp_path, capsys) -> None:
    rows = ["label_id,item_id,kind,query_id,chunk_id,annotator,rubric,value"]
    for i, (q, a, b) in enumerate(zip(QUERY, PERSON, JUDGE)):
        rows.append(f"{2 * i},{i},chunk,{q},c{i},ann,relevance,{2 * a}")
        rows.append(f"{2 * i + 1},{i},chunk,{q},c{i},bob,relevance,{2 * b}")
    path = tmp_path / "labels.csv"
    path.write_text("\n".join(rows) + "\n")
    assert main(["plan", "--pairs", str(path), "--designs", "10x30", "--format", "json"]) == 0
    (entry,) = json.loads(capsys.readouterr().out)["plans"]
    assert entry["plan"]["pilot"]["n"] == 24 and entry["plan"]["pilot"]["queries"] == 4


@pytest.mark.parametrize("designs", ["5x", "10x30,3", "1x30", "abc"])
def test_bad_designs_one_line_exit_2(pairs_file, capsys, designs: str) -> None:
    assert main(["plan", "--pairs", str(pairs_file), "--designs", designs]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--designs" in err and "Traceback" not in err


def test_a_file_of_other_columns_is_refused(tmp_path, capsys) -> None:
    path = tmp_path / "x.csv"
    path.write_text("a,b\n1,2\n")
    assert main(["plan", "--pairs", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "query_id,person,judge" in err


# ------------------------------------------------------------ perfect agreement (the demo's faithfulness)

# the demo store's faithfulness pilot: 16 items over 4 queries, grades 0 (5 items) and 2 (11), every
# item agreed on (kappa 1, V 0: no disagreement, so no ICC to estimate)
PERFECT = [2, 2, 2, 0, 0, 2, 2, 2, 2, 0, 0, 2, 2, 2, 2, 0]
PERFECT_QUERIES = [q for q in ("q_faw", "q_store", "q_milk", "q_broad") for _ in range(4)]
DEFAULT = parse_designs(default("designs"))


def _perfect_plan() -> dict:
    return dict(plan(PERFECT, PERFECT, PERFECT_QUERIES, DEFAULT, bar=0.6, labels=[0, 1, 2]))


def test_perfect_agreement_gives_an_interval_below_1_for_every_design() -> None:
    result = _perfect_plan()
    found = result["pilot"]
    assert found["kappa"] == 1.0 and found["variance"] == 0.0 and found["icc"] == 0.0
    assert found["pilot_design_effect"] is None and "no disagreement" in (found["icc_note"] or "")
    widths = {d["design"]: d["width"] for d in result["designs"]}
    assert set(widths) == {f"{q}x{m}" for q, m in DEFAULT}
    for d in result["designs"]:
        assert d["design_effect"] == 1.0
        assert d["width"] > 0.005 and d["interval"][0] < 1.0 and d["interval"][1] == 1.0, d
        assert d["width"] == pytest.approx(d["interval"][1] - d["interval"][0])
    # equal deff (1): more queries at the same labels, or more labels, is never wider
    assert widths["40x15"] <= widths["20x30"] <= widths["10x60"]
    assert widths["30x10"] <= widths["20x15"] <= widths["10x30"] <= widths["5x60"]
    assert widths["10x60"] <= widths["10x30"] and widths["5x60"] <= widths["5x20"]
    assert widths["20x30"] <= widths["20x15"]


def test_perfect_agreement_40x15_by_hand() -> None:
    # n* = 600 / c^2 x (z / t(39))^2 with c^2 = median chi2(39) / 39; the table is perfect with equal
    # margins (5/16, 11/16), so the lower end is Wilson's bound on p_o = 1 through the chance
    # correction: W = n* / (n* + z^2), p_e = (25 + 121) / 256, L = (W - p_e) / (1 - p_e).
    z, t = NormalDist().inv_cdf(0.975), float(stdtrit(39, 0.975))
    n_star = 600 / (float(chdtri(39, 0.5)) / 39) * (z / t) ** 2
    assert n_star == pytest.approx(573.13, abs=0.01)
    wilson = n_star / (n_star + z * z)
    chance = 146 / 256
    low = (wilson - chance) / (1 - chance)
    (design,) = [d for d in _perfect_plan()["designs"] if d["design"] == "40x15"]
    assert design["interval"][0] == pytest.approx(low, abs=1e-6)
    assert design["width"] == pytest.approx(0.0155, abs=1e-4)


def test_perfect_agreement_labels_to_decide_and_the_cli_note(tmp_path, capsys) -> None:
    path = tmp_path / "perfect.csv"
    path.write_text(
        "query_id,person,judge\n" + "".join(f"{q},{a},{a}\n" for q, a in zip(PERFECT_QUERIES, PERFECT))
    )
    assert main(["plan", "--pairs", str(path)]) == 0
    out = capsys.readouterr().out
    assert "kappa 1.000 (no pilot interval: 4 of the 5 queries a verdict needs)" in out
    assert "ICC of agreement within a query taken as 0 (deff 1: queries assumed not to cluster)" in out
    assert "pilot design effect -" not in out
    assert "[1.000, 1.000]" not in out and " 0.000  [" not in out


# ------------------------------------------------------------ the store (--db)


@pytest.fixture(scope="module")
def demo_store(tmp_path_factory) -> Path:
    """The store `python -m denominator demo` builds: people's labels and the offline judge's."""
    from denominator.demo import build_demo

    db = tmp_path_factory.mktemp("plan_demo") / "demo.db"
    build_demo(str(db), with_judge=True)
    return db


def test_the_demo_store_plans_each_judge(demo_store, capsys) -> None:
    assert main(["plan", "--db", str(demo_store)]) == 0
    out = capsys.readouterr().out
    relevance, faithfulness = out.split("\n\n")[:2]
    assert relevance.startswith("offline-lexical/relevance v1 (relevance)\n")
    assert "  pilot: n 20 items over 2 queries (10-10 a query, median 10); kappa 0.145 " in relevance
    assert "(no pilot interval: 2 of the 5 queries a verdict needs)" in relevance
    assert "ICC of agreement within a query 0.068 (median-unbiased, from 2 queries)" in relevance
    assert faithfulness.startswith("offline-lexical/faithfulness v1 (faithfulness)\n")
    assert "  pilot: n 16 items over 4 queries (4-4 a query, median 4); kappa 1.000 " in faithfulness
    assert "[1.000, 1.000]" not in out
    # the same numbers in JSON
    assert main(["plan", "--db", str(demo_store), "--format", "json"]) == 0
    by_rubric = {e["rubric"]: e for e in json.loads(capsys.readouterr().out)["plans"]}
    assert set(by_rubric) == {"relevance", "faithfulness"}
    rel = by_rubric["relevance"]["plan"]["pilot"]
    assert (rel["n"], rel["queries"], round(rel["kappa"], 3), round(rel["icc"], 3)) == (20, 2, 0.145, 0.068)
    assert rel["interval"] == [None, None] and rel["icc_note"] is None
    faith = by_rubric["faithfulness"]["plan"]
    assert (faith["pilot"]["n"], faith["pilot"]["queries"], faith["pilot"]["kappa"]) == (16, 4, 1.0)
    expected = plan(PERFECT, PERFECT, PERFECT_QUERIES, DEFAULT, bar=0.6, labels=[0, 1, 2])
    assert [d["width"] for d in faith["designs"]] == pytest.approx([d["width"] for d in expected["designs"]])
    assert min(d["width"] for d in faith["designs"]) > 0
    # --rubric keeps one judge
    assert main(["plan", "--db", str(demo_store), "--rubric", "faithfulness", "--format", "json"]) == 0
    assert [e["rubric"] for e in json.loads(capsys.readouterr().out)["plans"]] == ["faithfulness"]


def test_a_store_without_judge_labels_says_so_in_one_line(tmp_path, capsys) -> None:
    from denominator.demo import build_demo

    db = tmp_path / "people_only.db"
    build_demo(str(db))  # people's labels, no judge's
    assert main(["plan", "--db", str(db)]) == 0  # as `review`: "no judge has graded anything yet", exit 0
    out = capsys.readouterr().out
    assert out == "no judge with labels to plan from (grade items with a judge and people first)\n"
    assert main(["plan", "--db", str(db), "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out) == {"plans": []}
