"""The arguments of ``python -m calibration`` (its parser; the commands run in
:mod:`calibration.__main__`, which re-exports :func:`build_parser`). Every default comes from the
one options table (:mod:`annotation.options`), which the pages read too."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, TypeAlias

from annotation.cli_base import OneLineParser, UsageError, add_db_option, add_format_option
from annotation.options import add_option, default
from annotation.options import option as table_option
from annotation.values import finite_float, fraction, positive_int
from calibration.policy.finding_words import JUDGED_BAR, STAGE1_BAR, policy_help
from calibration.policy.findings import EXAMPLES
from calibration.stats.verdict import SAMPLE_ADVICE

DESCRIPTION = (
    "Retrieval metrics with the audit of their denominators, a run checked against the policy, "
    "two runs compared, agreement between raters, position bias, prediction-powered means and "
    "the weekly judge review."
)


def option_help(name: str) -> str:
    return table_option(name).help


def add_k_option(parser: argparse.ArgumentParser, *, one: bool = False) -> None:
    """``-k K``: repeatable cutoffs (the table's default), or exactly one (``one``, required)."""
    if one:
        parser.add_argument(
            "-k",
            dest="k",
            type=positive_int,
            action="append",
            required=True,
            metavar="K",
            help="cutoff (one)",
        )
        return
    add_option(parser, "k", dest="k", action="append", default=None, help="cutoff; repeat for several")


def add_corpus_options(parser: argparse.ArgumentParser) -> None:
    """``--corpus-size N`` or ``--corpus FILE`` (one of them): what label coverage divides by."""
    corpus = parser.add_mutually_exclusive_group()
    corpus.add_argument("--corpus-size", type=positive_int, metavar="N", help="documents in the corpus")
    corpus.add_argument(
        "--corpus",
        metavar="FILE",
        help='corpus: JSONL {"id": ..., "text"?: ...} or one id per line (its size is used; audit, check: '
        "the texts find duplicates by text too)",
    )


def add_judge_label_options(parser: argparse.ArgumentParser) -> None:
    """``--judge-labels FILE`` and ``--hole-sample FILE``: score the run with a judge's grades on its
    holes, corrected by people's on a sample of queries (:mod:`calibration.holes.files`)."""
    parser.add_argument(
        "--judge-labels",
        metavar="FILE",
        help="a judge's grades (TREC qrels or golden.yaml): the holes of the top k are filled with "
        "them (people's grades win where both exist)",
    )
    parser.add_argument(
        "--hole-sample",
        metavar="FILE",
        help="with --judge-labels: the hole sample (python -m calibration holes --sample N --out FILE) "
        "with people's grades on its holes (in it or in QRELS; with --db, labelled in that store): the "
        "corrected figure and its 95%% interval",
    )


def add_verdict_options(parser: argparse.ArgumentParser) -> None:
    """``--trusted K`` and ``--statistic`` (left out: the policy's, :func:`calibration.gate.verdict_settings`),
    ``--policy FILE``, and ``--noisy``, kept only to be refused in one line."""
    add_option(parser, "trusted")
    add_option(parser, "statistic")
    parser.add_argument("--noisy", type=float, default=None, metavar="K", help=argparse.SUPPRESS)
    parser.add_argument(
        "--policy", metavar="FILE", help="the policy file (default: ./denominator.yaml when present)"
    )


def check_verdict_options(trusted: float, noisy: float | None, noisy_gone: str) -> None:
    """-1 <= trusted <= 1, else one line; ``--noisy`` given: ``noisy_gone`` (why it went)."""
    if noisy is not None:
        raise UsageError(noisy_gone)
    if not -1 <= trusted <= 1:
        raise UsageError(f"--trusted {trusted}; expected a kappa between -1 and 1")


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


if (
    TYPE_CHECKING
):  # the subcommands' container (argparse names its type privately; generic to the checker only)
    Subcommands: TypeAlias = argparse._SubParsersAction[OneLineParser]


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser of every command; or, when ``command`` names one (the first word of a command
    line), of that command alone: the parse of such a line is the same, and the other eleven
    parsers are not built (about 10 ms of every start, #42). Any other first word (``--help``, a
    typo) gets the whole parser, whose usage and errors list every command."""
    parser = OneLineParser(prog="python -m calibration", description=DESCRIPTION)
    sub = parser.add_subparsers(dest="command", required=True, parser_class=OneLineParser)
    adders = _ADDERS if command not in _ADDERS else {command: _ADDERS[command]}
    for add in adders.values():
        add(sub)
    return parser


def _add_project(sub: Subcommands) -> None:
    """``project``'s arguments (#44)."""
    pr = sub.add_parser(
        "project",
        help="a golden set put onto another chunking: evidence spans, or chunk grades made under another",
    )
    pr.add_argument("golden", metavar="GOLDEN", help="golden.yaml (evidence and/or grades) or TREC qrels")
    pr.add_argument(
        "--chunks",
        required=True,
        metavar="B.jsonl",
        help='the chunking to project onto: JSONL {"id", "doc", "start", "end", "text"?}',
    )
    pr.add_argument(
        "--from-chunks",
        metavar="A.jsonl",
        help="the chunking the grades were made under (else the golden set's chunks section)",
    )
    pr.add_argument(
        "--docs",
        metavar="PATH",
        action="append",
        help="the documents (a text file, or a folder of them; id = file name without extension): "
        "every span checked against them; repeat for several",
    )
    add_option(pr, "min_overlap")
    pr.add_argument(
        "--source",
        choices=["evidence", "grades"],
        help="what a query holding both is projected from (default: evidence; a query holding one uses "
        "it; a source no query holds is refused)",
    )
    add_option(pr, "min_grade")
    add_format_option(pr, "golden", "qrels", "json")
    pr.add_argument(
        "-o",
        "--output",
        metavar="FILE",
        help="write the projected set here (replaced atomically; the report goes to stdout); "
        "needed for golden and qrels; json without it goes to stdout, the report to stderr",
    )


def _add_metrics(sub: Subcommands) -> None:
    """``metrics``'s arguments."""
    m = sub.add_parser("metrics", help="P@k, R@k, MRR, nDCG@k, MAP, Success@k of a run")
    m.add_argument("qrels", metavar="QRELS", nargs="?", help="TREC qrels or golden.yaml")
    m.add_argument("run", metavar="RUN", nargs="?", help="TREC run, or .jsonl rankings")
    add_stored_options(m)
    add_k_option(m)
    add_option(m, "min_grade")
    add_option(
        m,
        "missing",
        help="queries of the qrels absent from the run: drop and count them, or score them 0 (trec_eval -c)",
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
    add_judge_label_options(m)
    m.add_argument(
        "--evidence",
        action="store_true",
        help="evidence recall, precision and IoU at k: characters of the golden set's evidence spans the "
        "top k chunks cover (needs --chunks; table or json)",
    )
    m.add_argument(
        "--chunks",
        metavar="B.jsonl",
        help="with --evidence: the run's chunks file, placing each chunk id in its document",
    )
    add_format_option(m, "table", "json", "trec")


def _add_holes(sub: Subcommands) -> None:
    """``holes``'s arguments."""
    h = sub.add_parser(
        "holes", help="the unjudged chunks of a run's top k; a sample of queries whose holes people label"
    )
    h.add_argument("qrels", metavar="GOLDEN", help="TREC qrels or golden.yaml: people's grades")
    h.add_argument(
        "run",
        metavar="RUN",
        nargs="+",
        help="TREC run, or .jsonl rankings; several (for compare): the union of their holes per query",
    )
    add_k_option(h, one=True)
    add_option(h, "hole_sample")
    add_option(h, "holes_seed")
    h.add_argument(
        "--out",
        metavar="FILE",
        help="with --sample: write the sample as golden.yaml (its sampling section records the design "
        "and the seed; people's grades go in it)",
    )
    add_format_option(h, "table", "json", "csv")


def _add_audit(sub: Subcommands) -> None:
    """``audit``'s arguments."""
    a = sub.add_parser("audit", help="denominators, ceilings, coverage, duplicates, stage-1 recall, gates")
    a.add_argument("qrels", metavar="QRELS", nargs="?", help="TREC qrels or golden.yaml")
    a.add_argument("run", metavar="RUN", nargs="?", help="TREC run, or .jsonl rankings")
    add_stored_options(a)
    add_k_option(a, one=True)
    fetch = a.add_mutually_exclusive_group()
    add_option(fetch, "fetch_depth")
    fetch.add_argument("--fetch-run", metavar="RUN", help="stage 1 = this run (all of it)")
    add_corpus_options(a)
    a.add_argument("--truth", metavar="QRELS", help="a fuller label set to compare recall with")
    add_option(a, "min_grade")
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


def _add_check(sub: Subcommands) -> None:
    """``check``'s arguments."""
    ch = sub.add_parser(
        "check",
        help="one report per run held to the policy: the seven figures per query, the findings, every rule",
        description="The run's seven figures per query (fetch recall, keep recall, RR, nDCG@k, |Rel|, k, "
        "label coverage), the findings and the diagnosis in words, and every rule of the policy with "
        "passed / failed / warning / not evaluated (fails unless not_evaluated: warn) / not applicable / off. Exit 0: no rule failed; 1: a rule failed; 2: bad input.",
        epilog="the policy (denominator.yaml, --policy FILE, else ./denominator.yaml, else these defaults):\n\n"
        + policy_help(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ch.add_argument("qrels", metavar="GOLDEN", help="golden.yaml or TREC qrels")
    ch.add_argument("run", metavar="RUN", help="TREC run, or .jsonl rankings")
    add_k_option(ch, one=True)
    fetch = ch.add_mutually_exclusive_group()
    add_option(fetch, "fetch_depth")
    fetch.add_argument("--fetch-run", metavar="RUN", help="stage 1 = this run (all of it)")
    add_corpus_options(ch)
    add_option(ch, "min_grade")
    add_option(
        ch,
        "missing",
        help="golden queries absent from the run: the rule all_queries fails naming them (drop), or they "
        "are scored 0 (zero, as metrics --missing zero)",
    )
    ch.add_argument(
        "--db",
        default=None,
        help="the store whose faithfulness grades and judges the rules read (default: $DENOMINATOR_DB, "
        "else ./denominator.db when it exists, as the Metrics page)",
    )
    ch.add_argument(
        "--no-store", action="store_true", help="leave the store out: the judge rules are not applicable"
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
        help="override one bar: 'stage1_recall>0.9', 'label_coverage>=0.01', 'kappa=off', 'corpus=broad', "
        "'undecided=warn' (a judge figure not shown warns instead of failing)",
    )
    add_option(ch, "min_queries")
    ch.add_argument(
        "--record",
        action="store_true",
        help="keep the report in the store it read (created when missing) under --name, for `history` "
        "and the Metrics page",
    )
    ch.add_argument(
        "--name", metavar="NAME", help="with --record: the run's name (default: the run file's name)"
    )
    add_judge_label_options(ch)
    add_format_option(ch, "table", "json", "markdown")


def _add_history(sub: Subcommands) -> None:
    """``history``'s arguments."""
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


def _add_compare(sub: Subcommands) -> None:
    """``compare``'s arguments."""
    c = sub.add_parser("compare", help="two runs on the same judgments: per-query deltas and paired tests")
    c.add_argument("qrels", metavar="QRELS", help="TREC qrels or golden.yaml")
    c.add_argument("run_a", metavar="RUN_A", help="the baseline run (TREC run or .jsonl rankings)")
    c.add_argument("run_b", metavar="RUN_B", help="the run compared with it")
    add_k_option(c)
    add_option(c, "min_grade")
    add_option(c, "permutations")
    add_option(c, "compare_seed")
    add_judge_label_options(c)
    c.add_argument(
        "--db",
        default=None,
        help="with --hole-sample: people's grades on the sample's holes read from this store (the median "
        "of everyone's current labels, as the Metrics page reads them)",
    )
    c.add_argument(
        "--evidence",
        action="store_true",
        help="compare on evidence recall, precision and IoU at k (characters of the golden set's evidence "
        "spans): two runs over two chunkings of one corpus (needs --chunks-a and --chunks-b)",
    )
    c.add_argument("--chunks-a", metavar="A.jsonl", help="with --evidence: RUN_A's chunks file")
    c.add_argument("--chunks-b", metavar="B.jsonl", help="with --evidence: RUN_B's chunks file")
    add_format_option(c, "table", "json")


def _add_agree(sub: Subcommands) -> None:
    """``agree``'s arguments."""
    ag = sub.add_parser(
        "agree", help="agreement between raters: Cohen's kappa (weighted), CI, Fleiss, Krippendorff"
    )
    ag.add_argument(
        "labels",
        metavar="LABELS.csv",
        nargs="?",
        help="long form, header item,rater,label[,query_id]; or the CSV annotation export --format csv writes",
    )
    ag.add_argument(
        "--qrels", nargs=2, metavar=("A", "B"), help="compare two qrels files (raters named by file)"
    )
    # gone (kappa's interval is the score interval): refused with the reason, not "unrecognized"
    ag.add_argument("--bootstrap", help=argparse.SUPPRESS)
    ag.add_argument("--seed", help=argparse.SUPPRESS)
    ag.add_argument(
        "--sequential",
        action="store_true",
        help="the rows' order is the labelling order: read kappa's confidence sequence after every label "
        "from the 30th and give the verdict of the first decision (safe however often it is read)",
    )
    ag.add_argument(
        "--rubric",
        choices=("relevance", "faithfulness", "preference"),
        help="an annotation export with labels of several rubrics, or --db: this rubric's (with --db: "
        "relevance by default)",
    )
    ag.add_argument(
        "--db",
        metavar="DB",
        help="instead of a file: the people's current labels in this store (a path or a PostgreSQL URL), "
        "each person a rater: what the Agreement page shows",
    )
    add_option(ag, "min_queries")
    add_verdict_options(ag)
    add_format_option(ag, "table", "json")


def _add_position(sub: Subcommands) -> None:
    """``position``'s arguments."""
    po = sub.add_parser("position", help="position bias of pairwise judgments asked in both orders")
    po.add_argument("judgments", metavar="JUDGMENTS.csv", help="header item,order,choice[,repeat]")
    add_format_option(po, "table", "json")


def _add_ppi(sub: Subcommands) -> None:
    """``ppi``'s arguments."""
    pp = sub.add_parser("ppi", help="a mean corrected by prediction-powered inference (PPI++ by default)")
    pp.add_argument(
        "labeled",
        metavar="LABELED.csv",
        help="header human,judge[,query_id]: items both graded (query_id: intervals clustered by query)",
    )
    pp.add_argument(
        "unlabeled", metavar="UNLABELED.csv", help="header judge[,query_id]: items only the judge graded"
    )
    add_option(pp, "alpha")
    pp.add_argument(
        "--lam",
        type=finite_float,
        default=None,
        metavar="L",
        help="lambda: 1 = classical PPI (default: tuned)",
    )
    add_format_option(pp, "table", "json")


def _add_plan(sub: Subcommands) -> None:
    """``plan``'s arguments."""
    pl = sub.add_parser(
        "plan",
        help="plan the labelling: the kappa interval's expected width for designs queries x chunks per query",
    )
    add_db_option(pl)
    pl.add_argument(
        "--pairs",
        metavar="FILE",
        help="the pilot from a file: query_id,person,judge, or the CSV annotation export --format csv writes",
    )
    pl.add_argument(
        "--judge",
        metavar="NAME",
        help="the judge to plan for (default: every current one); with --pairs: the annotator on the judge's side",
    )
    pl.add_argument(
        "--rubric", choices=("relevance", "faithfulness", "preference"), help="only this rubric's labels"
    )
    add_option(pl, "designs")
    pl.add_argument(
        "--min-queries",
        type=positive_int,
        default=5,
        metavar="N",
        help="fewer queries give no verdict (default 5)",
    )
    add_verdict_options(pl)
    add_format_option(pl, "table", "json")


def _add_review(sub: Subcommands) -> None:
    """``review``'s arguments."""
    rv = sub.add_parser("review", help="the weekly judge review: kappa with CI and ceiling, verdict, trend")
    add_db_option(rv)
    rv.add_argument("--week", metavar="YYYY-Www", help="the ISO week (default: this week)")
    add_option(
        rv,
        "sample",
        nargs="?",
        const=default("sample"),
        default=None,
        help=f"first draw this week's sample of N traces ({SAMPLE_ADVICE}); N left out",
    )
    add_option(rv, "review_overlap", help="with --annotators: " + option_help("review_overlap"))
    rv.add_argument("--annotators", metavar="X,Y", help="with --sample: assign the sample to these people")
    add_option(rv, "min_labels")
    add_option(rv, "min_queries")
    add_option(rv, "review_seed")
    add_verdict_options(rv)
    add_format_option(rv, "table", "json", "markdown", "html")
    rv.add_argument("-o", "--output", metavar="FILE", help="write the report here (replaced atomically)")


# each command's arguments, in the order the help lists them
_ADDERS = {
    "metrics": _add_metrics,
    "holes": _add_holes,
    "audit": _add_audit,
    "check": _add_check,
    "history": _add_history,
    "compare": _add_compare,
    "agree": _add_agree,
    "position": _add_position,
    "ppi": _add_ppi,
    "plan": _add_plan,
    "review": _add_review,
    "project": _add_project,
}
