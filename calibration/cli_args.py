"""The arguments of ``python -m calibration`` (its parser; the commands run in
:mod:`calibration.__main__`, which re-exports :func:`build_parser`). Defaults come from their one
home (:mod:`calibration.workflows`, :mod:`calibration.verdict`, :mod:`calibration.audit`)."""

from __future__ import annotations

import argparse

from annotation.cli_base import (
    OneLineParser,
    add_corpus_options,
    add_db_option,
    add_format_option,
    add_k_option,
    add_min_grade_option,
    add_verdict_options,
    finite_float,
    fraction,
    positive_int,
    seed,
)
from calibration.audit import JUDGED_BAR, STAGE1_BAR
from calibration.check_text import policy_help
from calibration.findings import EXAMPLES
from calibration.verdict import DEFAULT_OVERLAP, MIN_LABELS, SAMPLE_ADVICE, SAMPLE_SIZE, STATISTICS, TRUSTED
from calibration.workflows import DEFAULT_K, DEFAULT_PERMUTATIONS, DEFAULT_SEED

DESCRIPTION = (
    "Retrieval metrics with the audit of their denominators, a run checked against the policy, "
    "two runs compared, agreement between raters, position bias, prediction-powered means and "
    "the weekly judge review."
)


def add_stored_options(parser: argparse.ArgumentParser) -> None:
    """--stored-run NAME, --labels SET, --db: score a run of the store instead of QRELS RUN."""
    parser.add_argument(
        "--stored-run",
        metavar="NAME",
        help="score the run stored under NAME instead of QRELS RUN (label coverage: the store's chunks)",
    )
    parser.add_argument(
        "--labels",
        metavar="SET",
        help="with --stored-run, the store's labels to score against: median (the default), majority or mean "
        "of everyone's current labels, annotator:NAME (one person's), or judge:NAME (a judge's grades)",
    )
    add_db_option(parser)


def add_verbose_option(parser: argparse.ArgumentParser, what: str) -> None:
    """--verbose: every query under each kind of finding, not the first few."""
    parser.add_argument(
        "--verbose",
        action="store_true",
        help=f"list every query of {what} (default: one line per kind and its first {EXAMPLES} queries)",
    )


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog="python -m calibration", description=DESCRIPTION)
    sub = parser.add_subparsers(dest="command", required=True, parser_class=OneLineParser)

    m = sub.add_parser("metrics", help="P@k, R@k, MRR, nDCG@k, MAP, Success@k of a run")
    m.add_argument("qrels", metavar="QRELS", nargs="?", help="TREC qrels or golden.yaml")
    m.add_argument("run", metavar="RUN", nargs="?", help="TREC run, or .jsonl rankings")
    add_stored_options(m)
    add_k_option(m, default=DEFAULT_K)
    add_min_grade_option(m)
    m.add_argument(
        "--missing",
        choices=["drop", "zero"],
        default="drop",
        help="queries of the qrels absent from the run: drop and count them "
        "(default) or score them 0 (trec_eval -c)",
    )
    m.add_argument(
        "--gain",
        choices=["linear", "exp"],
        default="linear",
        help="nDCG gain: the grade (trec_eval) or 2^grade - 1",
    )
    m.add_argument(
        "--grouped",
        action="store_true",
        default=None,
        help="the run is grouped by query: read it in pieces (memory bounded by a piece); a query "
        "that comes back after others is an error, not a second, whole read (default: a grouped "
        "TREC run is read in pieces anyway, any other run whole, with a note)",
    )
    add_corpus_options(m)
    add_verbose_option(m, "the run's repeated ids")
    add_format_option(m, "table", "json", "trec")

    a = sub.add_parser("audit", help="denominators, ceilings, coverage, duplicates, stage-1 recall, gates")
    a.add_argument("qrels", metavar="QRELS", nargs="?", help="TREC qrels or golden.yaml")
    a.add_argument("run", metavar="RUN", nargs="?", help="TREC run, or .jsonl rankings")
    add_stored_options(a)
    add_k_option(a, one=True)
    fetch = a.add_mutually_exclusive_group()
    fetch.add_argument(
        "--fetch-depth",
        type=positive_int,
        metavar="D",
        help="stage 1 = the same run read to depth D (default: the run's own depth when deeper than k)",
    )
    fetch.add_argument("--fetch-run", metavar="RUN", help="stage 1 = this run (all of it)")
    add_corpus_options(a)
    a.add_argument("--truth", metavar="QRELS", help="a fuller label set to compare recall with")
    add_min_grade_option(a)
    a.add_argument(
        "--min-judged",
        type=fraction,
        metavar="X",
        help=f"finding low_judged_at_k when judged@k is not {JUDGED_BAR.op} X "
        f"(default: the policy's judged_at_k, {JUDGED_BAR})",
    )
    a.add_argument(
        "--stage1-min",
        type=fraction,
        metavar="X",
        help=f"finding stage1_recall_low when stage-1 recall is not {STAGE1_BAR.op} X "
        f"(default: the policy's stage1_recall, {STAGE1_BAR}: exactly 0.95 is low)",
    )
    a.add_argument(
        "--fail-on",
        action="append",
        default=[],
        metavar="RULE",
        help="gate: duplicates, undefined-recall, rel-above-k, rel-below-k, stage1-recall (the policy's rule), "
        "judged-at-k<X, stage1-recall<X (the policy's strictness at X), label-coverage<X; repeatable",
    )
    a.add_argument(
        "--policy", metavar="FILE", help="the policy file (default: ./denominator.yaml when present)"
    )
    a.add_argument(
        "--estimate",
        action="store_true",
        help="estimate true |Rel| and recall from the sample in golden.yaml's sampling section",
    )
    a.add_argument(
        "--interval",
        choices=["midp", "exact"],
        default="midp",
        help="with --estimate: midp (95%% on average over truths, the default) or exact "
        "(at least 95%% for every truth of one stratum, wider)",
    )
    add_verbose_option(a, "each kind of finding")
    add_format_option(a, "table", "json")
    ch = sub.add_parser(
        "check",
        help="one report per run held to the policy: the seven figures per query, the findings, every rule",
        description="The run's seven figures per query (fetch recall, keep recall, RR, nDCG@k, |Rel|, k, "
        "label coverage), the findings and the diagnosis in words, and every rule of the policy with "
        "passed / failed / not evaluated. Exit 0: no rule failed; 1: a rule failed; 2: bad input.",
        epilog="the policy (denominator.yaml, --policy FILE, else ./denominator.yaml, else these defaults):\n\n"
        + policy_help(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ch.add_argument("qrels", metavar="GOLDEN", help="golden.yaml or TREC qrels")
    ch.add_argument("run", metavar="RUN", help="TREC run, or .jsonl rankings")
    add_k_option(ch, one=True)
    fetch = ch.add_mutually_exclusive_group()
    fetch.add_argument(
        "--fetch-depth",
        type=positive_int,
        metavar="D",
        help="stage 1 = the same run read to depth D (default: the run's own depth when deeper than k)",
    )
    fetch.add_argument("--fetch-run", metavar="RUN", help="stage 1 = this run (all of it)")
    add_corpus_options(ch)
    add_min_grade_option(ch)
    ch.add_argument(
        "--missing",
        choices=["drop", "zero"],
        default="drop",
        help="golden queries absent from the run: the rule all_queries fails naming them (drop, the "
        "default), or they are scored 0 (zero, as metrics --missing zero)",
    )
    ch.add_argument(
        "--db",
        default=None,
        help="the store whose faithfulness grades and judges the rules read (default: $DENOMINATOR_DB, "
        "else ./denominator.db when it exists, as the Metrics page)",
    )
    ch.add_argument(
        "--no-store", action="store_true", help="leave the store out: the judge rules are not evaluated"
    )
    # the store is read by default now; kept so old scripts run (it still needs a store to be there)
    ch.add_argument("--with-store", action="store_true", help=argparse.SUPPRESS)
    ch.add_argument(
        "--policy", metavar="FILE", help="the policy file (default: ./denominator.yaml when present)"
    )
    ch.add_argument(
        "--rule",
        action="append",
        default=[],
        metavar="RULE",
        help="override one bar: 'stage1_recall>0.9', 'label_coverage>=0.01', 'kappa=off', 'corpus=broad'",
    )
    ch.add_argument(
        "--record",
        action="store_true",
        help="keep the report in the store it read (created when missing) under --name, for `history` "
        "and the Metrics page",
    )
    ch.add_argument(
        "--name", metavar="NAME", help="with --record: the run's name (default: the run file's name)"
    )
    add_format_option(ch, "table", "json", "markdown")

    hi = sub.add_parser("history", help="the recorded checks of a run over time, or two of them per query")
    hi.add_argument("--name", metavar="NAME", help="only this run name")
    hi.add_argument(
        "--diff",
        nargs=2,
        type=positive_int,
        metavar=("FIRST", "SECOND"),
        help="two recorded checks, per query",
    )
    add_db_option(hi)
    add_format_option(hi, "table", "json")

    c = sub.add_parser("compare", help="two runs on the same judgments: per-query deltas and paired tests")
    c.add_argument("qrels", metavar="QRELS", help="TREC qrels or golden.yaml")
    c.add_argument("run_a", metavar="RUN_A", help="the baseline run (TREC run or .jsonl rankings)")
    c.add_argument("run_b", metavar="RUN_B", help="the run compared with it")
    add_k_option(c, default=DEFAULT_K)
    add_min_grade_option(c)
    c.add_argument(
        "--permutations",
        type=positive_int,
        default=DEFAULT_PERMUTATIONS,
        metavar="N",
        help=f"random sign flips of the randomization test (default {DEFAULT_PERMUTATIONS})",
    )
    c.add_argument(
        "--seed",
        type=seed,
        default=DEFAULT_SEED,
        help=f"seed of the randomization test (default {DEFAULT_SEED})",
    )
    add_format_option(c, "table", "json")
    ag = sub.add_parser(
        "agree", help="agreement between raters: Cohen's kappa (weighted), CI, Fleiss, Krippendorff"
    )
    ag.add_argument("labels", metavar="LABELS.csv", nargs="?", help="long form, header item,rater,label")
    ag.add_argument(
        "--qrels", nargs=2, metavar=("A", "B"), help="compare two qrels files (raters named by file)"
    )
    # gone (kappa's interval is the score interval): refused with the reason, not "unrecognized"
    ag.add_argument("--bootstrap", help=argparse.SUPPRESS)
    ag.add_argument("--seed", help=argparse.SUPPRESS)
    add_verdict_options(ag, TRUSTED, STATISTICS)
    add_format_option(ag, "table", "json")

    po = sub.add_parser("position", help="position bias of pairwise judgments asked in both orders")
    po.add_argument("judgments", metavar="JUDGMENTS.csv", help="header item,order,choice[,repeat]")
    add_format_option(po, "table", "json")

    pp = sub.add_parser("ppi", help="a mean corrected by prediction-powered inference (PPI++ by default)")
    pp.add_argument("labeled", metavar="LABELED.csv", help="header human,judge: items both graded")
    pp.add_argument("unlabeled", metavar="UNLABELED.csv", help="header judge: items only the judge graded")
    pp.add_argument(
        "--alpha", type=finite_float, default=0.05, help="1 - confidence of the interval (default 0.05)"
    )
    pp.add_argument(
        "--lam",
        type=finite_float,
        default=None,
        metavar="L",
        help="lambda: 1 = classical PPI (default: tuned)",
    )
    add_format_option(pp, "table", "json")

    rv = sub.add_parser("review", help="the weekly judge review: kappa with CI and ceiling, verdict, trend")
    add_db_option(rv)
    rv.add_argument("--week", metavar="YYYY-Www", help="the ISO week (default: this week)")
    rv.add_argument(
        "--sample",
        type=positive_int,
        nargs="?",
        const=SAMPLE_SIZE,
        metavar="N",
        # argparse expands %-formats in help: the advice's "95%" would crash --help
        help=f"first draw this week's sample of N traces (default {SAMPLE_SIZE}: {SAMPLE_ADVICE.replace('%', '%%')})",
    )
    rv.add_argument(
        "--overlap",
        type=fraction,
        default=DEFAULT_OVERLAP,
        metavar="SHARE",
        help=f"with --annotators: the share of the sample two or more of them label, for the ceiling "
        f"(default {DEFAULT_OVERLAP}: everyone labels every item)",
    )
    rv.add_argument("--annotators", metavar="X,Y", help="with --sample: assign the sample to these people")
    rv.add_argument(
        "--min-labels",
        type=positive_int,
        default=MIN_LABELS,
        metavar="N",
        help=f"human-labelled items a judge needs before it gets a verdict (default {MIN_LABELS})",
    )
    rv.add_argument("--seed", type=seed, default=DEFAULT_SEED, help="seed of the sample (default 0)")
    add_verdict_options(rv, TRUSTED, STATISTICS)
    add_format_option(rv, "table", "json", "markdown", "html")
    rv.add_argument("-o", "--output", metavar="FILE", help="write the report here (replaced atomically)")
    return parser
