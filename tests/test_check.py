"""The policy (the essay's thresholds table as gates) and ``python -m calibration check``."""

from __future__ import annotations

import json
import math

import pytest

from annotation.store import Store
from calibration.__main__ import main
from calibration.gate import load_policy
from calibration.policy.check import decisive, faithfulness_entry
from calibration.policy.rules import (
    DEFAULT_POLICY,
    Bar,
    InvalidPolicy,
    override,
    parse_bar,
    policy_from_mapping,
    rules_table,
)
from calibration.stats.pass_rate import people_pass_rate
from tests.conftest import as_independent_draws, cli

EX = "examples/worked-example"


def run(capsys, *argv, expect=0, stream="stdout"):
    """``python -m calibration ARGV``: its stdout (or stderr), after checking the exit code."""
    code, out, err = cli(main, capsys, *argv)
    assert code == expect, (code, out, err)
    return out if stream == "stdout" else err


# ---------------------------------------------------------------- the policy


def test_the_default_policy_is_the_essays_table_with_its_strictness():
    table = {name: bar for name, bar, _source in rules_table(every_corpus=True)}
    assert table == {
        "all_queries": "every query",
        "stage1_recall": "> 0.95",
        "recall_at_20": ">= 0.8 (broad corpora)",
        "faithfulness": ">= 0.7 narrow, >= 0.5 broad",
        "kappa": ">= 0.6",
        "rel_at_least_k": ">= k",
        "no_duplicates": "= 0",
        "label_coverage": "off",
        "judged_at_k": ">= 0.25",
    }


def test_stage1_is_strict_exactly_095_fails():
    bar = DEFAULT_POLICY.bar("stage1_recall")
    assert not bar.holds(19 / 20)  # exactly 0.95
    assert bar.holds(0.9500001)
    assert DEFAULT_POLICY.bar("judged_at_k").holds(0.25)  # >= lets the bar itself pass


def test_corpus_decides_the_faithfulness_bar_and_recall_at_20():
    broad = policy_from_mapping({"corpus": "broad"})
    assert broad.bar("faithfulness") == Bar(">=", 0.5)
    assert broad.bar("recall_at_20") == Bar(">=", 0.8)
    assert DEFAULT_POLICY.bar("faithfulness") == Bar(">=", 0.7)
    assert DEFAULT_POLICY.bar("recall_at_20") is None  # narrow: does not apply


def test_faithfulness_off_is_off_whatever_the_corpus(tmp_path):
    """Issue #40 item 9: ``faithfulness: off`` with ``corpus: broad`` used to come back at 0.7 (a
    policy file, or ``--rule corpus=broad --rule faithfulness=off``) or at 0.5 (the two --rules the
    other way round). Off is off, in a file and in either order; one bar holds for both corpora."""
    path = tmp_path / "denominator.yaml"
    path.write_text("corpus: broad\nrules:\n  faithfulness: off\n")
    assert load_policy(path).bar("faithfulness") is None
    for texts in (["corpus=broad", "faithfulness=off"], ["faithfulness=off", "corpus=broad"]):
        assert override(DEFAULT_POLICY, texts).bar("faithfulness") is None, texts
    for texts in (["corpus=broad", "faithfulness>=0.8"], ["faithfulness>=0.8", "corpus=broad"]):
        assert override(DEFAULT_POLICY, texts).bar("faithfulness") == Bar(">=", 0.8), texts
    # a bar per corpus, and broad: off alone
    both = policy_from_mapping({"corpus": "broad", "rules": {"faithfulness": {"broad": "off"}}})
    assert both.bar("faithfulness") is None
    assert policy_from_mapping({"rules": {"faithfulness": {"broad": "off"}}}).bar("faithfulness") == Bar(
        ">=", 0.7
    )


def test_policy_file_and_command_line_overrides(tmp_path):
    path = tmp_path / "denominator.yaml"
    path.write_text(
        "corpus: broad\nrules:\n  stage1_recall: '>= 0.9'\n  label_coverage: '>= 0.01'\n"
        "  faithfulness: {narrow: '>= 0.8', broad: '> 0.6'}\ndiagnosis:\n  ndcg: 0.4\n"
    )
    policy = load_policy(path)
    assert policy.corpus == "broad"
    assert policy.bar("stage1_recall") == Bar(">=", 0.9)
    assert policy.bar("label_coverage") == Bar(">=", 0.01)
    assert policy.bar("faithfulness") == Bar(">", 0.6)
    assert policy.diagnosis.ndcg == 0.4
    # ./denominator.yaml is read when no --policy is given
    assert load_policy(cwd=tmp_path).corpus == "broad"
    assert load_policy(cwd=tmp_path / "nowhere") == DEFAULT_POLICY
    changed = override(policy, ["corpus=narrow", "kappa=off", "stage1_recall>0.99", "no_duplicates=off"])
    assert changed.corpus == "narrow" and changed.bar("faithfulness") == Bar(">=", 0.8)
    assert changed.bar("kappa") is None and changed.bar("no_duplicates") is None
    assert changed.bar("stage1_recall") == Bar(">", 0.99)


@pytest.mark.parametrize(
    "data, message",
    [
        ({"rules": {"stage_one": 0.9}}, "unknown rule 'stage_one'"),
        ({"rules": {"stage1_recall": "about 0.9"}}, "expected a bar such as"),
        ({"rules": {"kappa": 1.5}}, "between 0 and 1"),
        ({"corpus": "medium"}, "expected narrow or broad"),
        ({"colour": 1}, "unknown key 'colour'"),
        ({"rules": {"no_duplicates": 0.5}}, "expected true (on) or false (off)"),
    ],
)
def test_a_bad_policy_is_refused_in_one_line(data, message):
    with pytest.raises(InvalidPolicy, match=message.replace("(", r"\(").replace(")", r"\)")):
        policy_from_mapping(data, "denominator.yaml")


def test_parse_bar_off_and_bare_numbers():
    assert parse_bar("off", "x") is None and parse_bar(None, "x") is None
    assert parse_bar(0.8, "x") == Bar(">=", 0.8)
    assert parse_bar("> 0.95", "x") == Bar(">", 0.95)


# ---------------------------------------------------------------- small print


def test_decisive_prints_enough_digits_to_explain_the_verdict():
    bar = Bar(">=", 0.6)
    assert decisive(0.5996, bar) == "0.5996"
    assert decisive(0.59999, bar) == "0.59999"
    assert decisive(0.6, bar) == "0.600"
    assert decisive(0.71, bar) == "0.710"


def wilson(successes: int, n: int) -> list[float]:
    """The people's pass rate's interval over ``n`` traces of no query (Wilson's, unclustered)."""
    return people_pass_rate([True] * successes + [False] * (n - successes))["ci"]


def test_wilson_matches_the_published_interval():
    low, high = wilson(8, 10)  # the textbook example: 8 of 10, 95%: [0.490, 0.943]
    assert (round(low, 3), round(high, 3)) == (0.490, 0.943)
    with pytest.raises(ValueError, match="no labelled trace"):
        wilson(0, 0)
    low, high = wilson(0, 20)
    assert low == 0.0 and math.isclose(high, 0.16112, abs_tol=1e-4)


def test_faithfulness_passes_only_when_the_interval_clears_the_bar():
    bar = Bar(">=", 0.7)
    ok = faithfulness_entry("people", 0.9, wilson(90, 100), 100, bar, "")
    assert ok["outcome"] == "passed" and ok["reason"] is None
    # 30 of 100: Wilson [0.219, 0.396], the whole interval below 0.7: shown below, failed
    below = faithfulness_entry("people", 0.3, wilson(30, 100), 100, bar, "")
    assert below["outcome"] == "failed" and below["verdict"] == "shown below"
    assert "0.300, its interval [0.219, 0.396] is below >= 0.7" in below["reason"]
    # 8 of 10: 0.8 meets the bar, its interval [0.490, 0.943] reaches below it: not shown, so it
    # fails as kappa's undecided does; the same reading whichever side the estimate is on
    unsure = faithfulness_entry("people", 0.8, wilson(8, 10), 10, bar, "")
    assert unsure["outcome"] == "failed" and unsure["verdict"] == "undecided"
    assert "undecided: 0.800 but its interval [0.490, 0.943] reaches >= 0.7" in unsure["reason"]
    # the interval's lower side 0.8 - 0.4902 = 0.3098 shrinks like 1/sqrt(n) to |0.8 - 0.7| = 0.1:
    # n' = ceil(10 * (0.3098 / 0.1)^2) = 96, 86 more
    low = wilson(8, 10)[0]
    assert unsure["more_labels"] == math.ceil(10 * ((0.8 - low) / 0.1) ** 2) - 10 == 86
    also = faithfulness_entry("people", 0.6, wilson(6, 10), 10, bar, "")
    assert also["outcome"] == "failed" and also["verdict"] == "undecided"
    warned = faithfulness_entry("people", 0.8, wilson(8, 10), 10, bar, "", undecided="warn")
    assert warned["outcome"] == "warning"


def test_more_labels_than_the_store_holds_says_so():
    """8 of 10 needs about 86 more labels (above): with 30 traces left unlabelled of 40, the reason
    says the store cannot supply them; with 90 left (of 100) it does not (86 <= 90)."""
    bar = Bar(">=", 0.7)
    short = faithfulness_entry(
        "people", 0.8, wilson(8, 10), 10, bar, "", unlabelled=(30, "40 traces in the store")
    )
    assert short["more_labels"] == 86 and short["reason"] == (
        "undecided: 0.800 but its interval [0.490, 0.943] reaches >= 0.7; about 86 more human-labelled "
        "items would decide it, but only 30 of the 40 traces in the store are unlabelled: a rate this close "
        "to the bar may never be decided by labelling more"
    )
    enough = faithfulness_entry("people", 0.8, wilson(8, 10), 10, bar, "", unlabelled=(90, "100 traces"))
    assert enough["reason"].endswith("; about 86 more human-labelled items would decide it")


def test_check_on_the_demo_says_the_store_cannot_decide_the_pass_rate(capsys, demo_db):
    """The demo: 11 of 16 labelled traces pass, [0.317, 0.912] at t(3); 0.688 is 0.0125 under 0.7,
    so about 5165 more labels would decide it, of the 40 traces the store holds for the worked
    example's 4 queries, 40 - 16 = 24 unlabelled."""
    out = run(capsys, "check", f"{EX}/golden.yaml", f"{EX}/run.jsonl", "-k", "5", "--db", demo_db, expect=1)
    assert (
        "FAILED (undecided: 0.688 but its interval [0.317, 0.912] reaches >= 0.7; about 5165 more "
        "human-labelled items would decide it, but only 24 of the 40 traces of this golden set's queries "
        "are unlabelled: a rate this close to the bar may never be decided by labelling more)"
    ) in out


# ---------------------------------------------------------------- check on the worked example


def test_check_prints_the_seven_figures_and_fails_rel_at_least_k(capsys):
    out = run(
        capsys,
        "check",
        f"{EX}/golden.yaml",
        f"{EX}/run.jsonl",
        "-k",
        "5",
        "--fetch-depth",
        "10",
        "--corpus",
        f"{EX}/corpus.jsonl",
        "--format",
        "json",
        expect=1,
    )
    report = json.loads(out)
    assert report["k"] == 5
    q = report["queries"]
    assert set(q) == {"q_faw", "q_store", "q_milk", "q_broad"}
    # the seeds's expected values, at k = 5
    assert q["q_faw"]["keep_recall"] == pytest.approx(2 / 3)
    assert q["q_faw"]["rr"] == 1.0 and q["q_store"]["rr"] == 0.5
    assert q["q_faw"]["ndcg"] == pytest.approx(0.7350069851)
    assert q["q_store"]["ndcg"] == pytest.approx(0.5363218250)
    assert q["q_milk"]["ndcg"] == pytest.approx(0.8108918607)
    assert q["q_broad"]["ndcg"] == pytest.approx(0.8798281569)
    assert q["q_broad"]["keep_recall"] == 0.5 and q["q_broad"]["rel"] == 8
    assert all(v["fetch_recall"] == 1.0 for v in q.values())
    assert q["q_faw"]["label_coverage"] == pytest.approx(3 / 24)
    assert q["q_broad"]["label_coverage"] == pytest.approx(8 / 24)
    for v in q.values():
        assert set(v) >= {
            "fetch_recall",
            "keep_recall",
            "rr",
            "ndcg",
            "rel",
            "k",
            "label_coverage",
            "findings",
        }
    assert report["summary"]["keep_recall"]["mean"] == pytest.approx(0.625)
    assert report["summary"]["ndcg"]["mean"] == pytest.approx(0.7405122069)
    rules = {r["rule"]: r for r in report["rules"]}
    assert rules["rel_at_least_k"]["passed"] is False
    assert rules["rel_at_least_k"]["queries"] == ["q_faw", "q_milk", "q_store"]
    # every judged chunk is in the run's top 10 (the labels were pooled from it): circular, so not evaluated
    assert rules["stage1_recall"]["passed"] is False and rules["stage1_recall"]["status"] == "not evaluated"
    assert rules["stage1_recall"]["reason"].startswith("circular: every judged chunk of 4 of 4 queries")
    assert all(v["stage1_circular"] for v in q.values())
    assert rules["no_duplicates"]["passed"] is True
    assert rules["faithfulness"]["passed"] is None and "give --db" in rules["faithfulness"]["reason"]
    assert rules["kappa"]["passed"] is None
    assert rules["label_coverage"]["passed"] is None and rules["label_coverage"]["reason"].startswith("off")
    assert rules["recall_at_20"]["passed"] is None
    assert report["passed"] is False
    # stage 1 finds everything, the cut at 5 keeps 2 of 3: the loss is at the cut
    assert "loss_at_cut" in q["q_faw"]["findings"]
    assert "rel_below_k" in q["q_faw"]["findings"]
    assert report["summary"]["notes"] and "30-50" in report["summary"]["notes"][0]


def test_check_table_says_the_rules_and_findings_in_words(capsys):
    out = run(
        capsys,
        "check",
        f"{EX}/golden.yaml",
        f"{EX}/run.jsonl",
        "-k",
        "5",
        "--fetch-depth",
        "10",
        expect=1,
    )
    assert "R@fetch" in out and "coverage" in out and "unknown" in out
    assert "rel_at_least_k >= k (5)" in out
    assert "FAILED for 3 of 4 queries: q_faw, q_milk, q_store" in out
    assert "stage1_recall > 0.95" in out
    assert "the reranker or keep-n drops what fetch found" in out
    assert "result: FAILED: stage1_recall, rel_at_least_k (exit 1)" in out
    assert "not evaluated: circular: every judged chunk of 4 of 4 queries" in out


def test_check_fails_no_duplicates_on_the_dupe_example(capsys):
    out = run(capsys, "check", f"{EX}/dupe.yaml", f"{EX}/dupe.jsonl", "-k", "5", "--format", "json", expect=1)
    rules = {r["rule"]: r for r in json.loads(out)["rules"]}
    assert rules["no_duplicates"]["passed"] is False
    assert "q_dupe" in rules["no_duplicates"]["queries"]


def test_check_stage1_exactly_095_fails(capsys, tmp_path):
    # 20 relevant documents, stage 1 finds 19 of them: 0.95, which "> 0.95" does not let pass
    grades = "\n".join(f"q 0 d{i} 1" for i in range(20))
    (tmp_path / "q.qrels").write_text(grades + "\n")
    ranking = [f"d{i}" for i in range(19)] + ["x"]
    (tmp_path / "run.jsonl").write_text(json.dumps({"query_id": "q", "ranking": ranking}) + "\n")
    out = run(
        capsys,
        "check",
        str(tmp_path / "q.qrels"),
        str(tmp_path / "run.jsonl"),
        "-k",
        "20",
        "--fetch-depth",
        "20",
        "--format",
        "json",
        expect=1,
    )
    report = json.loads(out)
    stage1 = next(r for r in report["rules"] if r["rule"] == "stage1_recall")
    assert report["queries"]["q"]["fetch_recall"] == 0.95
    assert stage1["passed"] is False and stage1["queries"] == ["q"]
    # a user who means ">= 0.95" says so, and it passes
    out = run(
        capsys,
        "check",
        str(tmp_path / "q.qrels"),
        str(tmp_path / "run.jsonl"),
        "-k",
        "20",
        "--fetch-depth",
        "20",
        "--rule",
        "stage1_recall>=0.95",
        "--format",
        "json",
    )
    stage1 = next(r for r in json.loads(out)["rules"] if r["rule"] == "stage1_recall")
    assert stage1["passed"] is True and stage1["bar"] == ">= 0.95"


def test_check_help_prints_the_thresholds_table(capsys):
    with pytest.raises(SystemExit):
        main(["check", "--help"])
    out = capsys.readouterr().out
    assert "stage1_recall   > 0.95" in out
    assert "faithfulness    >= 0.7 narrow, >= 0.5 broad" in out
    assert "label_coverage  off" in out


def test_check_bad_policy_exits_2_in_one_line(capsys, tmp_path):
    bad = tmp_path / "p.yaml"
    bad.write_text("rules:\n  stage_one: 0.9\n")
    err = run(
        capsys,
        "check",
        f"{EX}/golden.yaml",
        f"{EX}/run.jsonl",
        "-k",
        "5",
        "--policy",
        str(bad),
        expect=2,
        stream="stderr",
    )
    assert err.count("\n") == 1 and "unknown rule 'stage_one'" in err


def test_check_markdown_is_a_pull_request_comment(capsys):
    out = run(
        capsys,
        "check",
        f"{EX}/golden.yaml",
        f"{EX}/run.jsonl",
        "-k",
        "5",
        "--format",
        "markdown",
        expect=1,
    )
    assert out.startswith("### Denominator check: FAILED: stage1_recall, rel_at_least_k")
    assert "| rel_at_least_k | >= k (5) | FAILED for 3 of 4 queries: `q_faw`, `q_milk`, `q_store` |" in out


# ---------------------------------------------------------------- history


def test_record_twice_then_history_lists_both_and_the_diff(capsys, tmp_path):
    db = tmp_path / "h.db"
    first = tmp_path / "run.jsonl"
    first.write_text(open(f"{EX}/run.jsonl").read())
    second = tmp_path / "run2.jsonl"  # q_faw's top 3 reordered: m1 first
    second.write_text(open(f"{EX}/run.jsonl").read().replace('"m2", "x3", "m1"', '"m1", "m2", "x3"'))
    assert first.read_text() != second.read_text()
    for path in (first, second):
        err = run(
            capsys,
            "check",
            f"{EX}/golden.yaml",
            path,
            "-k",
            "5",
            "--fetch-depth",
            "10",
            "--record",
            "--name",
            "bm25",
            "--db",
            db,
            expect=1,
            stream="stderr",
        )
        assert "recorded check" in err and "'bm25'" in err
    history = json.loads(run(capsys, "history", "--db", db, "--format", "json"))["checks"]
    assert [h["id"] for h in history] == [1, 2] and {h["name"] for h in history} == {"bm25"}
    assert history[0]["run_hash"] != history[1]["run_hash"]
    assert history[0]["golden_hash"] == history[1]["golden_hash"] and history[0]["golden_labels"] == 17
    assert history[1]["labels_changed"] is False
    assert history[0]["means"]["ndcg"] == pytest.approx(0.7405122069)
    assert history[1]["means"]["ndcg"] > history[0]["means"]["ndcg"]
    assert history[0]["failed"] == ["stage1_recall", "rel_at_least_k"]
    table = run(capsys, "history", "--db", db)
    assert "bm25" in table and "FAILED: stage1_recall, rel_at_least_k" in table
    diff = json.loads(run(capsys, "history", "--db", db, "--diff", "1", "2", "--format", "json"))
    faw = diff["queries"]["q_faw"]
    # m1 (grade 3) moves from rank 3 to rank 1: nDCG@5 of q_faw = (3 + 2/log2 3) / IDCG
    idcg = 3 + 2 / math.log2(3) + 1 / 2
    assert faw["ndcg"]["second"] == pytest.approx((3 + 2 / math.log2(3)) / idcg)
    assert faw["ndcg"]["delta"] == pytest.approx((3 + 2 / math.log2(3)) / idcg - 0.7350069851)
    assert faw["keep_recall"]["delta"] == 0.0
    assert diff["queries"]["q_milk"]["ndcg"]["delta"] == 0.0
    assert diff["labels_changed"] is False


def test_history_marks_a_change_of_labels(capsys, tmp_path):
    db = tmp_path / "h.db"
    golden = tmp_path / "golden.yaml"
    text = open(f"{EX}/golden.yaml").read()
    golden.write_text(text)
    args = ["check", golden, f"{EX}/run.jsonl", "-k", "5", "--record", "--name", "r", "--db", db]
    run(capsys, *args, expect=1)
    qrels = tmp_path / "more.qrels"  # the same queries, one more relevant chunk for q_faw
    from annotation.formats.by_extension import read_judgments

    grades = read_judgments(golden).grades
    lines = [f"{q} 0 {d} {g}" for q, docs in grades.items() for d, g in docs.items()] + ["q_faw 0 x3 1"]
    qrels.write_text("\n".join(lines) + "\n")
    run(capsys, "check", qrels, f"{EX}/run.jsonl", "-k", "5", "--record", "--name", "r", "--db", db, expect=1)
    history = json.loads(run(capsys, "history", "--db", db, "--name", "r", "--format", "json"))["checks"]
    assert [h["labels_changed"] for h in history] == [False, True]
    assert [h["golden_labels"] for h in history] == [17, 18]
    assert "changed" in run(capsys, "history", "--db", db)
    assert "the labels changed between the two" in run(capsys, "history", "--db", db, "--diff", "1", "2")


def test_labels_digest_ignores_the_file_format(tmp_path):
    from annotation.formats.by_extension import read_judgments
    from calibration.gate import labels_digest

    golden = read_judgments(f"{EX}/golden.yaml")
    lines = [f"{q} 0 {d} {g}" for q, docs in reversed(golden.grades.items()) for d, g in docs.items()]
    (tmp_path / "same.qrels").write_text("\n".join(lines) + "\n")
    digest, n = labels_digest(golden)
    assert n == 17 and (digest, n) == labels_digest(read_judgments(tmp_path / "same.qrels"))
    (tmp_path / "other.qrels").write_text("\n".join(lines[1:]) + "\n")
    assert labels_digest(read_judgments(tmp_path / "other.qrels"))[0] != digest


def test_history_of_an_unknown_check_exits_2(capsys, tmp_path):
    err = run(capsys, "history", "--db", tmp_path / "h.db", "--diff", "1", "2", expect=2, stream="stderr")
    assert f"no such database: {tmp_path / 'h.db'}" in err and err.count("\n") == 1  # never created
    assert not (tmp_path / "h.db").exists()
    Store(tmp_path / "h.db").close()
    err = run(capsys, "history", "--db", tmp_path / "h.db", "--diff", "1", "2", expect=2, stream="stderr")
    assert "no recorded check with id 1" in err and err.count("\n") == 1


def test_audit_reads_the_same_stage1_rule(capsys, tmp_path):
    """audit's finding and gate hold stage 1 to the policy's `> 0.95`: 19 of 20 is low, as in check."""
    (tmp_path / "q.qrels").write_text("\n".join(f"q 0 d{i} 1" for i in range(20)) + "\n")
    ranking = [f"d{i}" for i in range(19)] + ["x"]
    (tmp_path / "run.jsonl").write_text(json.dumps({"query_id": "q", "ranking": ranking}) + "\n")
    base = ["audit", tmp_path / "q.qrels", tmp_path / "run.jsonl", "-k", "20", "--fetch-depth", "20"]
    report = json.loads(
        run(
            capsys,
            *base,
            "--fail-on",
            "stage1-recall",
            "--fail-on",
            "stage1-recall<0.95",
            "--format",
            "json",
            expect=1,
        )
    )
    assert "stage1_recall_low" in report["queries"]["q"]["findings"]
    assert [(g["rule"], g["passed"], g["bar"]) for g in report["gates"]] == [
        ("stage1-recall", False, "stage-1 recall > 0.95"),
        ("stage1-recall<0.95", False, "stage-1 recall > 0.95"),
    ]
    # a gate at 0.9 keeps the strictness and passes; a policy that says >= 0.95 lets 0.95 pass everywhere
    assert json.loads(run(capsys, *base, "--fail-on", "stage1-recall<0.9", "--format", "json"))["passed"]
    policy = tmp_path / "denominator.yaml"
    policy.write_text("rules:\n  stage1_recall: '>= 0.95'\n")
    report = json.loads(
        run(capsys, *base, "--policy", policy, "--fail-on", "stage1-recall", "--format", "json")
    )
    assert report["passed"] and "stage1_recall_low" not in report["queries"]["q"]["findings"]
    err = run(capsys, *base, "--fail-on", "stage1-recall<1", expect=2, stream="stderr")
    assert "can never hold" in err


def test_agree_prints_the_digits_that_explain_a_verdict(capsys, tmp_path):
    """Cohen's kappa 0.5996 (45/39 agree, 13/8 disagree: sklearn 0.59960...) sits just under the 0.6
    bar; the table must not print it as 0.600."""
    from sklearn.metrics import cohen_kappa_score

    pairs = [(0, 0)] * 45 + [(1, 1)] * 39 + [(0, 1)] * 13 + [(1, 0)] * 8
    a, b = zip(*pairs)
    assert 0.5995 < cohen_kappa_score(a, b) < 0.6
    rows = ["item,rater,label"] + [f"i{i},ann,{x}" for i, (x, _) in enumerate(pairs)]
    rows += [f"i{i},bob,{y}" for i, (_, y) in enumerate(pairs)]
    (tmp_path / "labels.csv").write_text("\n".join(rows) + "\n")
    out = run(capsys, "agree", tmp_path / "labels.csv")
    line = next(line for line in out.splitlines() if line.startswith("ann vs bob"))
    # the verdict's statistic (the kappa column) shows its fourth digit; the weighted ones are context
    # same grade 45 + 39 = 84 of 105 (the observed agreement 0.800, as counts)
    assert "84 / 105  0.5996  [0.427, 0.730]" in line and line.rstrip().endswith("undecided")
    # the kappa bar is the policy's: a team that sets 0.35 gets "trusted" (the interval's lower end
    # 0.427 reaches it) from agree as from check
    (tmp_path / "denominator.yaml").write_text("rules:\n  kappa: '>= 0.35'\n")
    report = json.loads(
        run(
            capsys,
            "agree",
            tmp_path / "labels.csv",
            "--policy",
            tmp_path / "denominator.yaml",
            "--format",
            "json",
        )
    )
    assert report["verdict_thresholds"]["trusted"] == 0.35 and report["pairs"][0]["verdict"] == "trusted"


def test_audit_says_inflated_only_when_the_capped_value_differs(capsys):
    at5 = run(capsys, "audit", f"{EX}/golden.yaml", f"{EX}/run.jsonl", "-k", "5")
    assert "would read 0.700 instead of 0.625 (+0.075, inflated)" in at5
    at10 = run(capsys, "audit", f"{EX}/golden.yaml", f"{EX}/run.jsonl", "-k", "10")
    assert "gives the same mean R@10 here, 1.000" in at10 and "inflated" not in at10


def test_compare_notes_a_golden_set_under_30_queries(capsys, tmp_path):
    out = json.loads(
        run(
            capsys,
            "compare",
            f"{EX}/golden.yaml",
            f"{EX}/run.jsonl",
            f"{EX}/run.jsonl",
            "-k",
            "5",
            "--format",
            "json",
        )
    )
    assert out["notes"] == [
        "4 queries with a judged relevant chunk: the essay asks for 30-50 before comparing systems; "
        "a difference over so few queries is an anecdote"
    ]
    (tmp_path / "q.qrels").write_text("\n".join(f"q{i} 0 d{i} 1" for i in range(30)) + "\n")
    (tmp_path / "r.jsonl").write_text(
        "\n".join(json.dumps({"query_id": f"q{i}", "ranking": [f"d{i}", "x"]}) for i in range(30)) + "\n"
    )
    args = ["compare", tmp_path / "q.qrels", tmp_path / "r.jsonl", tmp_path / "r.jsonl", "-k", "2"]
    assert json.loads(run(capsys, *args, "--format", "json"))["notes"] == []
    assert "note:" not in run(capsys, *args)
    # 30 judged queries, 2 of them with nothing relevant (grade 0): 28 a difference rests on (#40 item 12)
    (tmp_path / "q.qrels").write_text("\n".join(f"q{i} 0 d{i} {int(i >= 2)}" for i in range(30)) + "\n")
    for command in ("compare", "check"):
        argv = [command, tmp_path / "q.qrels", tmp_path / "r.jsonl"]
        argv += (
            [tmp_path / "r.jsonl"] if command == "compare" else ["--no-store", "--rule", "rel_at_least_k=off"]
        )
        code = 0 if command == "compare" else 1  # check: a run no deeper than k has no stage 1
        report = json.loads(run(capsys, *argv, "-k", "2", "--format", "json", expect=code))
        notes = report["notes"] if command == "compare" else report["summary"]["notes"]
        assert notes and notes[0].startswith(
            "28 queries with a judged relevant chunk: the essay asks for 30-50"
        )


def test_metrics_prints_label_coverage_or_says_it_is_unknown(capsys):
    base = ["metrics", f"{EX}/golden.yaml", f"{EX}/run.jsonl", "-k", "5"]
    report = json.loads(run(capsys, *base, "--corpus", f"{EX}/corpus.jsonl", "--format", "json"))
    assert report["queries"]["q_broad"]["label_coverage"] == pytest.approx(8 / 24)
    assert report["queries"]["q_faw"]["label_coverage"] == pytest.approx(3 / 24)
    table = run(capsys, *base, "--corpus-size", "24")
    assert "coverage" in table.splitlines()[3] and "0.177" in table  # mean of 8, 3, 3, 3 of 24
    assert "label coverage unknown" not in table
    # the column's denominator said under the table: q_broad's 8 judged of 24 is 0.333
    assert "\ncoverage = judged chunks of the query / the 24 chunks of the corpus\n" in table
    with_ids = run(capsys, *base, "--corpus", f"{EX}/corpus.jsonl")
    assert "coverage = judged chunks of the query / the 24 chunks of the corpus" in with_ids
    check = run(capsys, "check", *base[1:], "--corpus-size", "24", "--no-store", expect=1)
    lines = check.splitlines()
    at = lines.index("mean of 4    1.000  0.625  0.875   0.741   4.25  5     0.177")
    assert lines[at + 1] == "coverage = judged chunks of the query / the 24 chunks of the corpus"
    assert "chunks of the corpus" not in run(capsys, "check", *base[1:], "--no-store", expect=1)
    assert "label coverage unknown: give --corpus FILE or --corpus-size N" in run(capsys, *base)
    assert "label_coverage" not in json.loads(run(capsys, *base, "--format", "json"))["queries"]["q_faw"]
    err = run(capsys, *base, "--corpus-size", "5", expect=2, stream="stderr")
    assert "corpus size 5 is smaller than the 8 documents judged for query 'q_broad'" in err


def test_the_duplicate_case_in_check(capsys, tmp_path):
    """[d1, d1, x3, x2, x1, d2] at k = 5, relevant {d1, d2, d3}: check says what metrics and audit say."""
    (tmp_path / "g.qrels").write_text("q 0 d1 3\nq 0 d2 2\nq 0 d3 1\n")
    ranking = ["d1", "d1", "x3", "x2", "x1", "d2"]
    (tmp_path / "r.jsonl").write_text(json.dumps({"query_id": "q", "ranking": ranking}) + "\n")
    report = json.loads(
        run(
            capsys,
            "check",
            tmp_path / "g.qrels",
            tmp_path / "r.jsonl",
            "-k",
            "5",
            "--format",
            "json",
            expect=1,
        )
    )
    q = report["queries"]["q"]
    assert q["keep_recall"] == pytest.approx(1 / 3)
    assert (q["positional_hits"], q["distinct_hits"]) == (2, 1)
    assert {"duplicate_ids", "positional_mismatch"} <= set(q["findings"])
    rules = {r["rule"]: r for r in report["rules"]}
    assert rules["no_duplicates"]["passed"] is False and rules["no_duplicates"]["queries"] == ["q"]


# ---------------------------------------------------------------- the rules read from the store


def judged_store(db, disagree: int = 0, new: int = 16, values=(2, 2, 2, 1)) -> list[int]:
    """The demo store plus a faithfulness judge. The demo's people-labelled traces (cat's 16) get
    the judge's agreement; person "ann" grades ``new`` more (cycling ``values``), the judge agreeing
    except on the first ``disagree`` of them (it says 0); every other trace the judge alone grades 2.
    Returns (the trace items, the people-labelled ones)."""
    from calibration.review import consensus, human_labels

    with Store(db) as store:
        traces = [row[0] for row in store.gradable_trace_items()]
        people = human_labels(store, "faithfulness")
        store.annotator_id("ann")
        store.register_judge(
            "fp-faith", {"model": "m", "endpoint": "e", "rubric": "faithfulness", "kind": "llm"}
        )
        rows, added = [], 0
        for item in traces:
            if item in people:
                value = consensus(list(people[item].values()), "faithfulness")
            elif added < new:
                value = values[added % len(values)]
                store.add_label(item, "ann", value, "faithfulness")
                value = 0 if added < disagree else value
                added += 1
            else:
                value = 2
            rows.append({"item_id": item, "fingerprint": "fp-faith", "repeat": 0, "value": value})
        store.add_judge_labels(rows)
    as_independent_draws(db)  # drawn at random (issue #39); the checks below pass min_queries=4
    return traces


def clustered_wilson(db) -> list[float]:
    """Korn and Graubard's Wilson interval of the people's pass rate by query, computed here from
    the store's labels (written out, not calibration.stats.pass_rate's code): the CR1 design effect
    kept at 1 or more, the effective n, t(G - 1)."""
    from scipy.stats import t

    from calibration.review import PASS, consensus, human_labels

    with Store(db) as store:
        people = human_labels(store, "faithfulness")
        queries = store.item_queries("trace")
    by_query: dict[str, list[float]] = {}
    for item, votes in people.items():
        by_query.setdefault(queries[item], []).append(
            float(consensus(list(votes.values()), "faithfulness") == PASS)
        )
    ys = [y for group in by_query.values() for y in group]
    n, g, p = len(ys), len(by_query), sum(ys) / len(ys)
    v_c = g / (g - 1) * (n - 1) / n * sum((sum(gr) - len(gr) * p) ** 2 for gr in by_query.values()) / n**2
    n_eff = n / max(1.0, v_c / (p * (1 - p) / n))
    z = t.ppf(0.975, g - 1)
    centre = (p + z * z / (2 * n_eff)) / (1 + z * z / n_eff)
    half = z * math.sqrt(p * (1 - p) / n_eff + z * z / (4 * n_eff**2)) / (1 + z * z / n_eff)
    return [centre - half, centre + half]


def test_kappa_and_faithfulness_from_the_store(capsys, demo_db):
    traces = judged_store(demo_db)
    assert len(traces) == 40
    args = ["check", f"{EX}/golden.yaml", f"{EX}/run.jsonl", "-k", "5", "--db", demo_db]
    # 32 traces of the demo's 4 queries, clustered by query (#39): a bar of 0.4 is what they can show
    args += ["--rule", "rel_at_least_k=off", "--rule", "min_queries=4", "--rule", "kappa>=0.4"]
    # the worked example's labels were pooled from this run: stage 1 is circular, not under test here
    args += ["--rule", "stage1_recall=off", "--format", "json"]
    report = json.loads(run(capsys, *args, expect=1))
    rules = {r["rule"]: r for r in report["rules"]}
    kappa = {j["fingerprint"]: j for j in rules["kappa"]["judges"]}
    judge = kappa["fp-faith"]
    assert (judge["verdict"], judge["n"], judge["outcome"]) == ("trusted", 32, "passed")
    assert judge["kappa"] == pytest.approx(1.0)
    assert judge["judge"] == "m/faithfulness v1 (fp-faith)"  # name and version, the fingerprint beside
    assert rules["kappa"]["passed"] is True and rules["kappa"]["status"] == "passed"
    faith = {j["judge"].split(" ")[0]: j for j in rules["faithfulness"]["judges"]}
    # people: cat's 16 traces (11 pass) and ann's 16 (12 pass): 23 of 32 over the 4 queries, Wilson
    # 95% at the effective n by query (#40, item 7: the interval the review gives the people too)
    people = faith["people"]
    assert (people["n"], people["rate"]) == (32, pytest.approx(23 / 32))
    assert people["ci"] == pytest.approx(clustered_wilson(demo_db))
    assert people["how"].startswith(
        "23 of 32 labelled traces fully supported (grade 2) over 4 queries; Wilson 95%"
    )
    # 0.719 meets >= 0.7, its interval does not: undecided, failed by default
    assert people["verdict"] == "undecided" and people["outcome"] == "failed"
    assert people["more_labels"] > 0
    assert rules["faithfulness"]["status"] == "failed"
    # undecided: warn turns a figure not shown into a warning, listed; it fails no build
    warned = json.loads(run(capsys, *args, "--rule", "undecided=warn"))
    assert warned["passed"] is True and warned["warnings"] == ["faithfulness"]
    outcomes = {j["judge"]: j["outcome"] for r in warned["rules"] for j in r.get("judges") or []}
    assert outcomes["people"] == "warning" and outcomes["m/faithfulness v1 (fp-faith)"] == "passed"
    # the trusted judge: PPI++ over 32 labelled and 8 judge-only traces (all 8 pass); it agrees with
    # people on every labelled one, so the estimate is 23/32 + lambda * (8/8 - 23/32), lambda in [0, 1]
    from calibration.stats.ppi import ppi_mean

    judged = faith["m/faithfulness"]
    assert judged["how"] == "trusted judge, corrected by PPI from 32 labelled and 8 judge-only traces"
    from calibration.review import PASS, consensus, human_labels

    with Store(demo_db) as store:  # the same items, clustered by their queries, as the review reads them
        people = human_labels(store, "faithfulness")
        queries = store.item_queries("trace")
    labelled = sorted(people)
    unlabelled = [i for i in traces if i not in people]
    y = [float(consensus(list(people[i].values()), "faithfulness") == PASS) for i in labelled]
    assert sum(y) == 23 and len(y) == 32
    expected = ppi_mean(
        y,
        y,
        [1.0] * 8,
        clusters_labeled=[queries[i] for i in labelled],
        clusters_unlabeled=[queries[i] for i in unlabelled],
    )
    assert judged["rate"] == pytest.approx(expected["estimate"]) and judged["ci"] == pytest.approx(
        expected["ci"]
    )
    assert 23 / 32 < judged["rate"] <= 1.0  # lambda in [0, 1]: 1 by query here


def test_a_judge_that_disagrees_fails_kappa(capsys, demo_db):
    judged_store(demo_db, disagree=16)  # all of ann's 16 answered 0 where she said 1 or 2
    report = json.loads(
        run(
            capsys,
            "check",
            f"{EX}/golden.yaml",
            f"{EX}/run.jsonl",
            "-k",
            "5",
            "--db",
            demo_db,
            "--rule",
            "min_queries=4",
            "--rule",
            "kappa>=0.7",
            "--format",
            "json",
            expect=1,
        )
    )
    kappa = next(r for r in report["rules"] if r["rule"] == "kappa")
    judge = next(j for j in kappa["judges"] if j["fingerprint"] == "fp-faith")
    # the interval's upper end is below the bar: not trusted, shown (32 labels over 4 queries: the
    # interval at t(3), about [-0.25, 0.61], reaches 0.6 since the design effect is kept at 1, #40)
    assert judge["verdict"] == "not trusted" and judge["ci"][1] < 0.7
    assert judge["outcome"] == "failed" and "is not >= 0.7" in judge["reason"]
    assert kappa["passed"] is False and "kappa" in [
        r["rule"] for r in report["rules"] if r["passed"] is False
    ]
