"""The calibration command-line contracts: agree, position, ppi, review."""

from __future__ import annotations

import json

import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score

from annotation.cli_base import shown_db
from annotation.store import Store
from calibration.__main__ import main
from judge.jobs import grade_offline
from tests.conftest import EXAMPLE, cli, shared_dir

SHARED = shared_dir()
UMBRELA = (SHARED / "data" / "trec_rag_umbrela") if SHARED is not None else None


def test_agree_json_contract_against_sklearn(tmp_path, capsys) -> None:
    rng = np.random.default_rng(3)
    a = rng.integers(0, 4, 200)
    b = np.where(rng.random(200) < 0.7, a, rng.integers(0, 4, 200))
    path = tmp_path / "labels.csv"
    lines = (
        ["item,rater,label"]
        + [f"i{i},ann,{x}" for i, x in enumerate(a)]
        + [f"i{i},bob,{y}" for i, y in enumerate(b)]
    )
    lines.append("i200,ann,2")  # a rating bob never gave: a missing rating is a missing row
    path.write_text("\n".join(lines) + "\n")
    code, out, _ = cli(main, capsys, "agree", path, "--format", "json")
    assert code == 0
    report = json.loads(out)
    assert {"n_items", "raters", "pairs", "fleiss_kappa", "krippendorff_alpha"} <= set(report)
    assert report["n_items"] == 201 and report["raters"] == ["ann", "bob"]
    pair = report["pairs"][0]
    assert {
        "raters",
        "n",
        "observed_agreement",
        "kappa",
        "kappa_linear",
        "kappa_quadratic",
        "kappa_ci",
        "verdict",
    } <= set(pair)
    assert pair["n"] == 200
    assert pair["kappa"] == pytest.approx(cohen_kappa_score(a, b), abs=1e-9)
    assert pair["kappa_quadratic"] == pytest.approx(cohen_kappa_score(a, b, weights="quadratic"), abs=1e-9)
    assert pair["kappa_ci"][0] < pair["kappa"] < pair["kappa_ci"][1]
    assert report["fleiss_kappa"] is None  # i200 has one rater: not every item has the same number
    assert set(report["krippendorff_alpha"]) == {"nominal", "ordinal", "interval"}


def test_agree_text_labels_have_no_ordinal_alpha(tmp_path, capsys) -> None:
    path = tmp_path / "text.csv"
    path.write_text("item,rater,label\n1,x,cat\n1,y,cat\n2,x,dog\n2,y,cat\n3,x,dog\n3,y,dog\n")
    code, out, _ = cli(main, capsys, "agree", path, "--format", "json")
    alpha = json.loads(out)["krippendorff_alpha"]
    assert (
        code == 0 and alpha["ordinal"] is None and alpha["interval"] is None and alpha["nominal"] is not None
    )


def test_agree_text_gives_each_figure_its_counts(tmp_path, capsys) -> None:
    """Three raters on four items (0/1): ann-bob agree on i1, i2, i4 (3 / 4), ann-cat on i1, i4
    (2 / 4). Fleiss by hand: P_i = 1, 1/3, 1/3, 1 (mean 2/3); p_1 = 5/12, p_0 = 7/12, P_e = 74/144;
    kappa = (96/144 - 74/144) / (70/144) = 22/70 = 0.314, over 4 items with 3 ratings each."""
    path = tmp_path / "three.csv"
    path.write_text(
        "item,rater,label\ni1,ann,1\ni1,bob,1\ni1,cat,1\ni2,ann,0\ni2,bob,0\ni2,cat,1\n"
        "i3,ann,1\ni3,bob,0\ni3,cat,0\ni4,ann,0\ni4,bob,0\ni4,cat,0\n"
    )
    code, out, _ = cli(main, capsys, "agree", path)
    assert code == 0
    assert "ann vs bob  4       3 / 4  0.500" in out and "ann vs cat  4       2 / 4  0.000" in out
    assert "raters      n  same grade  kappa" in out
    assert "Fleiss' kappa: 0.314 (n = 4 items, 3 ratings each)\n" in out
    assert "(n = 4 of 4 items: those rated two times or more)\n" in out
    report = json.loads(cli(main, capsys, "agree", path, "--format", "json")[1])
    assert report["fleiss_kappa"] == pytest.approx(22 / 70)
    assert (report["fleiss_ratings_per_item"], report["krippendorff_items"]) == (3, 4)


def test_agree_with_nothing_shared_is_a_usage_error(tmp_path, capsys) -> None:
    """No item rated by two raters: nothing to measure, one line and exit 2 (it printed a row of
    undef and exited 0); two qrels files keep the order given (they printed B vs A)."""
    one = tmp_path / "one.csv"
    one.write_text("item,rater,label\ni1,ann,1\ni2,ann,0\ni3,ann,2\n")
    code, out, err = cli(main, capsys, "agree", one)
    assert (code, out) == (2, "")
    assert (
        err
        == f"error: {one}: 3 items, one rater (ann): agreement needs two raters who rated the same items\n"
    )
    apart = tmp_path / "apart.csv"
    apart.write_text("item,rater,label\ni1,ann,1\ni2,bob,0\n")
    code, _, err = cli(main, capsys, "agree", apart)
    assert code == 2 and "2 items, 2 raters, and no item rated by two of them" in err
    truth, other = tmp_path / "z-truth.qrels", tmp_path / "a-other.qrels"
    truth.write_text("q1 0 d1 1\nq1 0 d2 0\n")
    other.write_text("q2 0 d1 1\n")
    code, out, err = cli(main, capsys, "agree", "--qrels", truth, other)
    assert (code, out) == (2, "")
    assert err == (
        f"error: {truth} and {other}: no (query, chunk) is graded in both files (3 graded in one only): "
        "nothing to compare; give two qrels of the same queries and chunks\n"
    )
    # the files as given, z before a; the confusion's rows are the first file's grades
    other.write_text("q1 0 d1 1\nq1 0 d2 1\n")
    code, out, _ = cli(main, capsys, "agree", "--qrels", truth, other, "--format", "json")
    report = json.loads(out)
    assert code == 0 and report["raters"] == [str(truth), str(other)]
    assert report["pairs"][0]["raters"] == [str(truth), str(other)]
    assert report["pairs"][0]["confusion"] == [[0, 1], [0, 1]]  # truth 0 / other 1 on d2
    code, out, _ = cli(main, capsys, "agree", "--qrels", truth, other)
    assert f"{truth} vs {other}  2       1 / 2" in out


@pytest.mark.skipif(UMBRELA is None, reason="../shared/data not found")
def test_agree_qrels_nist_vs_umbrela(capsys) -> None:
    nist, llm = UMBRELA / "qrels.rag25.test.txt", UMBRELA / "qrels.rag25.test-umbrela2.txt"
    code, out, _ = cli(main, capsys, "agree", "--qrels", nist, llm, "--format", "json")
    assert code == 0
    pair = json.loads(out)["pairs"][0]
    grades = {}
    for path in (nist, llm):
        for line in path.read_text().splitlines():
            q, _, d, g = line.split()
            grades.setdefault((q, d), []).append(int(g))
    both = [v for v in grades.values() if len(v) == 2]
    x, y = [v[0] for v in both], [v[1] for v in both]
    assert pair["n"] == len(both) == 10284
    assert pair["kappa"] == pytest.approx(cohen_kappa_score(x, y), abs=1e-9)
    assert pair["kappa_quadratic"] == pytest.approx(cohen_kappa_score(x, y, weights="quadratic"), abs=1e-9)
    assert round(pair["kappa_quadratic"], 4) == 0.4918 and pair["verdict"] == "not trusted"


def test_position_contract(tmp_path, capsys) -> None:
    path = tmp_path / "judgments.csv"
    # p1: the first-shown wins in both orders (primacy); p2: A in both orders (consistent)
    path.write_text("item,order,choice\np1,AB,A\np1,BA,B\np2,AB,A\np2,BA,A\n")
    code, out, _ = cli(main, capsys, "position", path, "--format", "json")
    assert code == 0
    result = json.loads(out)
    assert result["n_pairs"] == 2 and result["position_consistency"] == 0.5
    assert result["primacy_rate"] == 0.5 and result["recency_rate"] == 0.0
    assert result["mean_preference_A"] == 0.75 and result["repetition_stability"] is None
    bad = tmp_path / "bad.csv"
    bad.write_text("item,order,choice\np1,CD,A\n")
    code, _, err = cli(main, capsys, "position", bad)
    assert code == 2 and err == f"error: {bad}:2: order: 'CD'; expected AB or BA\n"


def test_position_text_gives_each_rate_its_counts(tmp_path, capsys) -> None:
    """Pair 1 twice: FF (repeat 1: A first wins, B first wins), FS (A both times: consistent); pair 2
    once: ST (B in AB, a tie in BA: recency-preferred). 3 comparisons: consistency 1/3, primacy 1/3,
    recency 0/3, fairness (1 - 1)/3 = 0; stability over the 2 repeated (pair, order) instances:
    (1 + 1/2)/2 = 0.75; preference for A per pair (1 + 1/2)/2 = 0.75 and (0 + 1/2)/2 = 0.25: 0.5."""
    path = tmp_path / "judgments.csv"
    path.write_text(
        "item,order,choice,repeat\n1,AB,A,1\n1,AB,A,2\n1,BA,B,1\n1,BA,A,2\n2,AB,B,1\n2,BA,tie,1\n"
    )
    code, out, _ = cli(main, capsys, "position", path)
    assert code == 0
    assert out.splitlines() == [
        "2 pairs asked in both orders (3 comparisons)",
        "position_consistency: 0.333 (1 / 3 comparisons pick the same candidate in both orders)",
        "primacy_rate: 0.333 (1 / 3 comparisons won by the first-shown answer in both orders)",
        "recency_rate: 0.000 (0 / 3 comparisons won by the second-shown answer in both orders)",
        "preference_fairness: 0.000 ((1 recency-preferred - 1 primacy-preferred) / 3 comparisons)",
        "repetition_stability: 0.750 (mean over 2 (pair, order) instances asked more than once)",
        "mean_preference_A: 0.500 (mean over 2 pairs)",
    ]


def test_ppi_contract(tmp_path, capsys) -> None:
    from ppi_py import ppi_mean_ci, ppi_mean_pointestimate

    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 80).astype(float)
    yhat = np.where(rng.random(80) < 0.8, y, 1 - y)
    yhat_u = rng.integers(0, 2, 400).astype(float)
    labeled, unlabeled = tmp_path / "labeled.csv", tmp_path / "unlabeled.csv"
    labeled.write_text("human,judge\n" + "".join(f"{a:g},{b:g}\n" for a, b in zip(y, yhat)))
    unlabeled.write_text("judge\n" + "".join(f"{b:g}\n" for b in yhat_u))
    code, out, _ = cli(main, capsys, "ppi", labeled, unlabeled, "--format", "json")
    assert code == 0
    result = json.loads(out)
    # pass/fail labels: the Rogan-Gladen correction rides along (test_ppi_adds_rogan_gladen_for_pass_fail_labels)
    assert set(result) == {
        "estimate",
        "ci",
        "lam",
        "n_labeled",
        "n_unlabeled",
        "human_only",
        "rogan_gladen",
    } | {
        "design",
        "correlation",
        "weak_threshold",
        "weak_note",
        "prefer",
    }
    assert result["estimate"] == pytest.approx(float(ppi_mean_pointestimate(y, yhat, yhat_u)[0]), abs=1e-6)
    low, high = ppi_mean_ci(y, yhat, yhat_u, alpha=0.05)
    assert result["ci"] == pytest.approx([float(low[0]), float(high[0])], abs=1e-6)
    code, out, _ = cli(main, capsys, "ppi", labeled, unlabeled, "--lam", "1", "--format", "json")
    assert json.loads(out)["lam"] == 1.0
    code, _, err = cli(main, capsys, "ppi", unlabeled, unlabeled)
    assert code == 2 and "expected the columns human,judge" in err


def test_review_on_the_demo(demo_db, tmp_path, capsys) -> None:
    db = demo_db
    with Store(db) as store:
        grade_offline(store, "faithfulness")
        grade_offline(store, "relevance")
    code, out, _ = cli(main, capsys, "review", "--db", db, "--week", "2026-W49", "--min-labels", "10")
    assert code == 0
    # the demo's labels come from 2 queries (relevance) and 4 (faithfulness): no verdict-grade interval
    # (issue #39); the kappa is printed, the weighted ones beside it, the item-level interval in the JSON
    assert (
        "verdict: uncalibrated (2 queries: a verdict needs 5): unweighted kappa 0.145 (n = 20; no interval: "
        "2 queries, an interval needs 5) against the bar 0.6, not shown until the evidence is there" in out
    )
    assert (
        "beside it (not the verdict's statistic): linear 0.342 (no interval); quadratic 0.491 (no interval)"
        in out
    )
    assert "human-human kappa (the ceiling, unweighted): 0.889 (n = 20; no interval: 2 queries" in out
    assert (
        "design: 2 queries, 20 items, 2 people, design effect 0.89, kept at 1; for queries drawn like these 2"
        in out
    )
    assert "20 of 20 items were chosen, not drawn at random" in out
    assert "verdict: uncalibrated (4 queries: a verdict needs 5): unweighted kappa 1.000 (n = 16;" in out
    # one doubly labelled item or none: the ceiling is undefined with its reason, never 0.000
    assert "undefined (0 items labelled by two people: a ceiling needs at least 2)" in out
    code, out, _ = cli(main, capsys, "review", "--db", db, "--week", "2026-W49", "--format", "json")
    report = json.loads(out)
    assert {j["verdict"] for j in report["judges"]} == {"uncalibrated"}  # 20 and 16 labels < the default 30
    item_level = {j["rubric"]: j["consensus"]["item_level_ci"] for j in report["judges"]}
    assert item_level["relevance"] == pytest.approx([-0.152, 0.478], abs=5e-4)  # today's, beside
    assert item_level["faithfulness"] == pytest.approx([0.562, 1.0], abs=5e-4)
    # uncalibrated, its deciding kappa is printed all the same
    code, out, _ = cli(main, capsys, "review", "--db", db, "--week", "2026-W49")
    assert (
        "verdict: uncalibrated (20 human-labelled items, fewer than the 30 needed): unweighted kappa 0.145 "
        "(n = 20; no interval: 2 queries, an interval needs 5) against the bar 0.6, not shown until the "
        "evidence is there" in out
    )
    assert [t["week"] for t in report["trend"]] == ["2026-W49", "2026-W49"]
    html_file = tmp_path / "review.html"
    code, out, _ = cli(
        main, capsys, "review", "--db", db, "--week", "2026-W49", "--format", "html", "-o", html_file
    )
    assert code == 0 and html_file.read_text().startswith("<!doctype html>")
    code, _, err = cli(main, capsys, "review", "--db", db, "--week", "2026-49")
    assert code == 2 and "expected an ISO week YYYY-Www" in err


def test_review_sample_is_stratified_and_assigned(demo_db, capsys) -> None:
    db = demo_db
    code, out, _ = cli(
        main, capsys, "review", "--db", db, "--week", "2026-W45", "--sample", "10", "--annotators", "eve,fay"
    )
    assert (
        code == 0
        and "sampled 10 of 40 traces for week 2026-W45 (system=rag-bm25: 5, system=rag-rerank: 5)" in out
    )
    with Store(db) as store:
        assigned = store.db.execute(
            """SELECT count(*) FROM assignments s JOIN annotators a ON a.id = s.annotator_id
               WHERE a.name IN ('eve', 'fay')"""
        ).fetchone()[0]
    assert assigned == 20
    code, _, err = cli(main, capsys, "review", "--db", db, "--week", "2026-W45", "--sample", "5")
    assert code == 2 and "already has a review sample" in err


def test_verdict_thresholds_are_configurable(tmp_path, capsys) -> None:
    path = tmp_path / "l.csv"
    path.write_text("item,rater,label\n1,x,1\n1,y,1\n2,x,0\n2,y,1\n3,x,2\n3,y,2\n4,x,3\n4,y,3\n")
    code, out, _ = cli(main, capsys, "agree", path, "--format", "json")
    pair = json.loads(out)["pairs"][0]
    # kappa 0.667 on 4 items: its score interval [0.053, 0.941] holds the bar: nothing is shown either way
    assert pair["kappa"] == pytest.approx(2 / 3)
    assert pair["kappa_ci"] == pytest.approx([0.0525, 0.9406], abs=5e-4)
    assert pair["verdict"] == "undecided" and pair["more_labels"] > 100
    code, out, _ = cli(main, capsys, "agree", path, "--format", "json", "--trusted", "0.0")
    assert json.loads(out)["pairs"][0]["verdict"] == "trusted"  # the lower end 0.053 reaches a bar of 0
    code, out, _ = cli(main, capsys, "agree", path, "--format", "json", "--statistic", "quadratic")
    report = json.loads(out)
    assert report["statistic"] == "quadratic" and report["pairs"][0]["statistic"] == "quadratic"
    code, _, err = cli(main, capsys, "agree", path, "--trusted", "0.7", "--noisy", "0.5")
    assert code == 2 and err.startswith("error: --noisy is gone: a verdict is now trusted")
    code, _, err = cli(main, capsys, "agree", path, "--trusted", "1.5")
    assert code == 2 and "expected a kappa between -1 and 1" in err


def test_ppi_adds_rogan_gladen_for_pass_fail_labels(tmp_path, capsys) -> None:
    """Pass/fail labels: the judge's pass rate 7/10 corrected by its tpr 4/5 and tnr 2/3 on the
    labelled items, (0.7 + 2/3 - 1) / (4/5 + 2/3 - 1) = 11/14, beside PPI; graded labels: no line."""
    labeled = tmp_path / "labeled.csv"
    labeled.write_text("human,judge\n1,1\n1,1\n0,0\n1,0\n0,1\n1,1\n0,0\n1,1\n")
    unlabeled = tmp_path / "unlabeled.csv"
    unlabeled.write_text("judge\n1\n1\n0\n1\n0\n1\n1\n1\n0\n1\n")
    assert main(["ppi", str(labeled), str(unlabeled), "--format", "json"]) == 0
    rg = json.loads(capsys.readouterr().out)["rogan_gladen"]
    assert rg["estimate"] == pytest.approx(11 / 14) and (rg["tpr"], rg["tnr"]) == (0.8, pytest.approx(2 / 3))
    assert (rg["n_labeled"], rg["n_unlabeled"], rg["tp"], rg["fn"], rg["fp"], rg["tn"]) == (8, 10, 4, 1, 1, 2)
    assert main(["ppi", str(labeled), str(unlabeled)]) == 0
    assert "Rogan-Gladen (pass/fail): 0.7857" in capsys.readouterr().out
    graded = tmp_path / "graded.csv"
    graded.write_text("human,judge\n2,1\n1,1\n0,0\n2,2\n")
    assert main(["ppi", str(graded), str(unlabeled), "--format", "json"]) == 0
    assert "rogan_gladen" not in json.loads(capsys.readouterr().out)


def test_ppi_of_a_pass_rate_keeps_its_interval_within_0_and_1(tmp_path, capsys) -> None:
    """The newcomer's files: people 1,0,1,1,1,0 and the judge 1,1,1,0,1,0 on 6 items, the judge alone
    6 passes of 8. By hand: cov(Y, Yhat) = 1/18 (ddof 0), the pooled judge variance 10 of 14: 20/91
    (ddof 1), lambda = (1/18) / ((1 + 6/8) * 20/91) = 13/90; estimate 13/90 * 6/8 + mean(Y - 13/90 Yhat)
    = 733/1080; se^2 = lambda^2 (3/16) / 8 + var(Y - lambda Yhat) / 6. Its normal interval's upper end
    733/1080 + 1.96 se = 1.0486 is cut to 1 and said; the people's 4 of 6 get Wilson's interval
    (centre (2/3 + z^2/12) / (1 + z^2/6)), as the review's people-only figure."""
    from statistics import NormalDist

    labeled, unlabeled = tmp_path / "lab.csv", tmp_path / "unlab.csv"
    labeled.write_text("human,judge\n1,1\n0,1\n1,1\n1,0\n1,1\n0,0\n")
    unlabeled.write_text("judge\n1\n1\n0\n1\n1\n1\n0\n1\n")
    lam = (1 / 18) / ((1 + 6 / 8) * 20 / 91)
    y, yhat = np.array([1, 0, 1, 1, 1, 0.0]), np.array([1, 1, 1, 0, 1, 0.0])
    resid = y - lam * yhat
    estimate = lam * 6 / 8 + resid.mean()
    se = (lam**2 * (3 / 16) / 8 + resid.var() / 6) ** 0.5
    z = NormalDist().inv_cdf(0.975)
    assert lam == pytest.approx(13 / 90) and estimate == pytest.approx(733 / 1080)
    centre = (2 / 3 + z * z / 12) / (1 + z * z / 6)
    half = z * (2 / 9 / 6 + z * z / 144) ** 0.5 / (1 + z * z / 6)
    code, out, _ = cli(main, capsys, "ppi", labeled, unlabeled, "--format", "json")
    result = json.loads(out)
    assert code == 0 and result["estimate"] == pytest.approx(733 / 1080)
    assert result["ci_uncut"] == pytest.approx([estimate - z * se, estimate + z * se])
    assert result["ci_uncut"][1] == pytest.approx(1.0486, abs=1e-4)
    assert result["ci"] == pytest.approx([estimate - z * se, 1.0])
    human = result["human_only"]
    assert (human["passes"], human["n"]) == (4, 6) and human["estimate"] == pytest.approx(4 / 6)
    assert human["ci"] == pytest.approx([centre - half, centre + half])
    assert human["ci"] == pytest.approx([0.3000, 0.9032], abs=1e-4)
    assert result["few_labels"].startswith("6 labelled items, fewer than the 30 a judge needs")
    code, out, _ = cli(main, capsys, "ppi", labeled, unlabeled)
    assert out.splitlines()[:3] == [
        "PPI++ estimate 0.6787, 95% CI [0.3088, 1.0000] (the normal interval [0.3088, 1.0486] cut to a pass "
        "rate's [0, 1]; lambda 0.144; 6 items graded by people and the judge, 8 by the judge alone)",
        "people only: 0.6667 (4 / 6), 95% CI [0.3000, 0.9032] (n = 6; Wilson 95% (no query given))",
        "few labels: 6 labelled items, fewer than the 30 a judge needs before the review gives it a verdict "
        "(check uses a judge's corrected rate only once it is trusted): an interval from so few labels is "
        "a rough guide",
    ]


def test_ppi_inside_0_and_1_is_not_cut(tmp_path, capsys) -> None:
    """test_ppi_adds_rogan_gladen_for_pass_fail_labels's files: PPI's interval lies within [0, 1], so
    it is ppi_py's as it was (no ci_uncut); grades 0-2 are a mean, not a rate: no cut, no Wilson."""
    from calibration.stats.ppi import ppi_report

    labeled = tmp_path / "labeled.csv"
    labeled.write_text("human,judge\n1,1\n1,1\n0,0\n1,0\n0,1\n1,1\n0,0\n1,1\n")
    unlabeled = tmp_path / "unlabeled.csv"
    unlabeled.write_text("judge\n1\n1\n0\n1\n0\n1\n1\n1\n0\n1\n")
    y, yhat = [1, 1, 0, 1, 0, 1, 0, 1], [1, 1, 0, 0, 1, 1, 0, 1]
    plain = ppi_report(y, yhat, [1, 1, 0, 1, 0, 1, 1, 1, 0, 1])
    code, out, _ = cli(main, capsys, "ppi", labeled, unlabeled, "--format", "json")
    result = json.loads(out)
    assert code == 0 and "ci_uncut" not in result
    assert 0 < result["ci"][0] and result["ci"][1] < 1 and result["ci"] == pytest.approx(plain["ci"])
    assert result["human_only"]["passes"] == 5 and result["human_only"]["n"] == 8
    graded = tmp_path / "graded.csv"
    graded.write_text("human,judge\n2,1\n1,1\n0,0\n2,2\n")
    code, out, _ = cli(main, capsys, "ppi", graded, unlabeled, "--format", "json")
    result = json.loads(out)
    assert "ci_uncut" not in result and "how" not in result["human_only"]
    assert result["human_only"]["ci"] == pytest.approx(
        ppi_report([2, 1, 0, 2], [1, 1, 0, 2], [1, 1, 0, 1, 0, 1, 1, 1, 0, 1])["human_only"]["ci"]
    )


# ---------------------------------------------------------------- metrics and audit: findings by kind


def repeated_run(tmp_path, n_queries: int = 40, repeated: int = 25):
    """Queries q00.. with 3 relevant chunks each; the first ``repeated`` rank their first chunk twice."""
    qrels, run = [], []
    for i in range(n_queries):
        qid = f"q{i:02d}"
        qrels += [f"{qid} 0 {qid}-d{j} 1\n" for j in range(3)]
        second = f"{qid}-d0" if i < repeated else f"{qid}-x"
        run.append(json.dumps({"query_id": qid, "ranking": [f"{qid}-d0", second, f"{qid}-d1"]}) + "\n")
    (tmp_path / "r.qrels").write_text("".join(qrels))
    (tmp_path / "r.jsonl").write_text("".join(run))
    return tmp_path / "r.qrels", tmp_path / "r.jsonl"


def test_audit_groups_findings_by_kind(tmp_path, capsys) -> None:
    qrels, run = repeated_run(tmp_path)
    code, out, _ = cli(main, capsys, "audit", qrels, run, "-k", "5")
    assert code == 0
    findings = out[out.index("findings, by kind:") :].splitlines()
    assert findings[1:6] == [
        "  duplicate chunk ids in 25 of 40 queries: each repeat keeps its slot and scores nothing",
        "    q00: [duplicate_ids] repeated ids q00-d0: each repeat keeps its slot and scores nothing",
        "    q01: [duplicate_ids] repeated ids q01-d0: each repeat keeps its slot and scores nothing",
        "    q02: [duplicate_ids] repeated ids q02-d0: each repeat keeps its slot and scores nothing",
        "    ... and 22 more (--verbose lists them)",
    ]
    assert (
        "  more hits by a naive positional count than distinct relevant chunks in 25 of 40 queries: "
        "a repeated relevant chunk counted again" in findings
    )
    assert "  fewer relevant chunks than k = 5 in 40 of 40 queries: precision can never reach 1" in findings
    assert "    ... and 37 more (--verbose lists them)" in findings
    assert sum("[duplicate_ids]" in line for line in findings) == 3
    # --verbose: every finding, one line each, as before the grouping
    code, out, _ = cli(main, capsys, "audit", qrels, run, "-k", "5", "--verbose")
    assert code == 0
    assert sum("[duplicate_ids]" in line for line in out.splitlines()) == 25
    assert sum("[rel_below_k]" in line for line in out.splitlines()) == 40
    assert "more (--verbose lists them)" not in out
    # JSON is unchanged: every query with its findings
    code, out, _ = cli(main, capsys, "audit", qrels, run, "-k", "5", "--format", "json")
    report = json.loads(out)
    assert report["summary"]["findings"] == {
        "duplicate_ids": 25,
        "positional_mismatch": 25,
        "rel_below_k": 40,
        "run_short": 40,  # every ranking fills fewer than k = 5 positions
    }
    assert report["queries"]["q24"]["findings"] == [
        "duplicate_ids",
        "positional_mismatch",
        "run_short",
        "rel_below_k",
    ]


def test_metrics_groups_the_repeated_ids(tmp_path, capsys) -> None:
    qrels, run = repeated_run(tmp_path)
    code, out, _ = cli(main, capsys, "metrics", qrels, run, "-k", "5")
    assert code == 0
    lines = out.splitlines()
    start = lines.index(
        "duplicate chunk ids in 25 of 40 queries of the run: each repeat keeps its slot and scores nothing"
    )
    assert lines[start + 1] == "  q00: repeated ids q00-d0: each repeat keeps its slot and scores nothing"
    assert lines[start + 4] == "  ... and 22 more (--verbose lists them)"
    assert sum("repeated ids q" in line for line in lines) == 3
    code, out, _ = cli(main, capsys, "metrics", qrels, run, "-k", "5", "--verbose")
    assert sum("repeated ids q" in line for line in out.splitlines()) == 25
    code, out, _ = cli(main, capsys, "metrics", qrels, run, "-k", "5", "--format", "json")
    assert len(json.loads(out)["duplicates"]) == 25


# ---------------------------------------------------------------- metrics and audit of a stored run


def test_metrics_of_a_stored_run(demo_db, capsys) -> None:
    code, out, err = cli(main, capsys, "metrics", "--stored-run", "retriever", "--db", demo_db)
    assert code == 0, err
    assert out.splitlines()[0] == (
        f"metrics of run 'retriever' (run 'retriever' of the store {shown_db(str(demo_db))}) against everyone's current "
        "labels, the median per chunk (cat, dan)"
    )
    rows = {line.split()[0]: line.split() for line in out.splitlines()[3:7]}
    # query |Rel| ret coverage P@10 (ceil) R@10 (ceil) RR nDCG@10: coverage over the store's 24 chunks
    assert rows["q_faw"][1:9] == ["2", "10", "0.417", "0.200", "(0.200)", "1.000", "(1.000)", "1.000"]
    assert rows["mean"][1:2] == ["0.417"] and "0.716" in rows["mean"]
    assert "coverage = judged chunks of the query / the 24 chunks of the corpus" in out  # 10 of 24: 0.417
    assert "2 queries of the run have no judgments: ignored" in out
    code, out, err = cli(
        main,
        capsys,
        "audit",
        "--stored-run",
        "retriever",
        "--db",
        demo_db,
        "-k",
        "10",
        "--labels",
        "annotator:cat",
    )
    assert code == 0, err
    q_faw = next(line.split() for line in out.splitlines() if line.startswith("q_faw"))
    assert q_faw[1:3] == ["3", "1.000"] and q_faw[9] == "0.417"  # |Rel|, R@10, coverage


def test_a_stored_run_refused_with_one_line(demo_db, tmp_path, capsys) -> None:
    for argv, message in (
        (["--stored-run", "nope"], "error: no run named 'nope' in the store"),
        (["--stored-run", "retriever", "--labels", "nope"], "error: no label set 'nope' in the store"),
        (["--labels", "median"], "--labels goes with --stored-run"),
        (["--db", str(demo_db)], "--db goes with --stored-run"),
        ([str(EXAMPLE / "golden.yaml"), "--stored-run", "retriever"], "--stored-run replaces QRELS and RUN"),
        ([], "the following arguments are required: QRELS, RUN (or --stored-run NAME)"),
    ):
        code, _, err = cli(main, capsys, "metrics", *argv)
        assert code == 2 and message in err and len(err.splitlines()) == 1, (argv, err)
    code, _, err = cli(
        main, capsys, "audit", "--stored-run", "retriever", "-k", "5", "--db", tmp_path / "none.db"
    )
    assert code == 2 and err == f"error: no such database: {tmp_path / 'none.db'}\n"
    assert not (tmp_path / "none.db").exists()


def test_the_review_s_position_sentence_gives_each_rate_its_counts() -> None:
    """The weekly review's sentence on the same judgments as above: 3 comparisons, 1 consistent,
    1 won by the first-shown answer both times, 0 by the second-shown."""
    from calibration.review_text import position_text as review_position_text
    from calibration.stats.position import position_bias

    rows = [
        {"item": "1", "order": "AB", "choice": "A", "repeat": 1},
        {"item": "1", "order": "AB", "choice": "A", "repeat": 2},
        {"item": "1", "order": "BA", "choice": "B", "repeat": 1},
        {"item": "1", "order": "BA", "choice": "A", "repeat": 2},
        {"item": "2", "order": "AB", "choice": "B", "repeat": 1},
        {"item": "2", "order": "BA", "choice": "tie", "repeat": 1},
    ]
    assert review_position_text(position_bias(rows)) == (
        "position bias over 2 pairs asked in both orders (3 comparisons): consistency 0.333 (1 / 3), "
        "primacy 0.333 (1 / 3), recency 0.000 (0 / 3), preference fairness 0.000, repetition stability "
        "0.750, mean swap-averaged preference for A 0.500"
    )
