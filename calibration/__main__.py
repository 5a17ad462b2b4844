"""``python -m calibration``: retrieval metrics and the denominator audit.

    python -m calibration metrics QRELS RUN [-k K]... [--min-grade G]
        [--missing drop|zero] [--gain linear|exp] [--format table|json|trec]
    python -m calibration audit QRELS RUN -k K [--fetch-depth D | --fetch-run RUN]
        [--corpus-size N | --corpus FILE] [--truth QRELS] [--min-grade G]
        [--min-judged X] [--stage1-min X] [--fail-on RULE]... [--format table|json]
    python -m calibration compare QRELS RUN_A RUN_B [-k K]... [--min-grade G]
        [--permutations N] [--seed S] [--format table|json]
    python -m calibration agree LABELS.csv | --qrels A B [--bootstrap N] [--seed S] [--format table|json]
    python -m calibration position JUDGMENTS.csv [--format table|json]
    python -m calibration ppi LABELED.csv UNLABELED.csv [--alpha A] [--lam L] [--format table|json]
    python -m calibration review [--db DB] [--week YYYY-Www] [--sample N [--annotators X,Y]]
        [--min-labels N] [--format table|json|markdown|html] [-o FILE]

Exit codes: 0 success (every gate passed), 1 a gate failed, 2 bad usage or
input (one line on stderr, no traceback).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

from annotation._cli import OneLineParser, UsageError, add_db_option
from annotation._cli import positive_int as _positive
from annotation.formats import FormatError, Qrels, read_corpus_ids, read_judgments, read_ranked
from calibration.audit import (
    DEFAULT_MIN_JUDGED,
    DEFAULT_STAGE1_MIN,
    InvalidAudit,
    audit_run,
    estimate_run,
    parse_gate,
)
from calibration.metrics import InvalidMeasure, evaluate
from calibration.report import (
    audit_table,
    dumps,
    estimate_summary_line,
    metrics_json,
    metrics_table,
    metrics_trec,
    sampled_labels,
)


def _fraction(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number between 0 and 1, got {text!r}") from None
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"expected a number between 0 and 1, got {text!r}")
    return value


def _grade(text: str) -> int:
    """A relevance threshold: an integer >= 0 (negative grades are never relevant)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(
            f"expected an integer >= 0 (negative grades are judged, never relevant), got {text!r}"
        )
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog="python -m calibration", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True, parser_class=OneLineParser)

    m = sub.add_parser("metrics", help="P@k, R@k, MRR, nDCG@k, MAP, Success@k of a run")
    m.add_argument("qrels", metavar="QRELS", help="TREC qrels or golden.yaml")
    m.add_argument("run", metavar="RUN", help="TREC run, or .jsonl rankings")
    m.add_argument(
        "-k",
        dest="k",
        action="append",
        type=_positive,
        metavar="K",
        help="cutoff; repeat for several (default 10)",
    )
    m.add_argument(
        "--min-grade",
        type=_grade,
        default=None,
        metavar="G",
        help="relevant = grade >= G (trec_eval -l; default: golden.yaml's min_grade, else 1)",
    )
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
    m.add_argument("--format", choices=["table", "json", "trec"], default="table")

    a = sub.add_parser("audit", help="denominators, ceilings, coverage, duplicates, stage-1 recall, gates")
    a.add_argument("qrels", metavar="QRELS", help="TREC qrels or golden.yaml")
    a.add_argument("run", metavar="RUN", help="TREC run, or .jsonl rankings")
    a.add_argument(
        "-k", dest="k", type=_positive, action="append", required=True, metavar="K", help="cutoff (one)"
    )
    fetch = a.add_mutually_exclusive_group()
    fetch.add_argument(
        "--fetch-depth", type=_positive, metavar="D", help="stage 1 = the same run read to depth D"
    )
    fetch.add_argument("--fetch-run", metavar="RUN", help="stage 1 = this run (all of it)")
    corpus = a.add_mutually_exclusive_group()
    corpus.add_argument("--corpus-size", type=_positive, metavar="N", help="documents in the corpus")
    corpus.add_argument(
        "--corpus", metavar="FILE", help='corpus: JSONL {"id": ...} or one id per line (its size is used)'
    )
    a.add_argument("--truth", metavar="QRELS", help="a fuller label set to compare recall with")
    a.add_argument(
        "--min-grade",
        type=_grade,
        default=None,
        metavar="G",
        help="relevant = grade >= G (default: golden.yaml's min_grade, else 1)",
    )
    a.add_argument(
        "--min-judged",
        type=_fraction,
        default=DEFAULT_MIN_JUDGED,
        metavar="X",
        help=f"finding low_judged_at_k below this share (default {DEFAULT_MIN_JUDGED})",
    )
    a.add_argument(
        "--stage1-min",
        type=_fraction,
        default=DEFAULT_STAGE1_MIN,
        metavar="X",
        help=f"finding stage1_recall_low below this recall (default {DEFAULT_STAGE1_MIN})",
    )
    a.add_argument(
        "--fail-on",
        action="append",
        default=[],
        metavar="RULE",
        help="gate: duplicates, undefined-recall, rel-above-k, rel-below-k, "
        "judged-at-k<X, stage1-recall<X, label-coverage<X; repeatable",
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
    a.add_argument("--format", choices=["table", "json"], default="table")
    c = sub.add_parser("compare", help="two runs on the same judgments: per-query deltas and paired tests")
    c.add_argument("qrels", metavar="QRELS", help="TREC qrels or golden.yaml")
    c.add_argument("run_a", metavar="RUN_A", help="the baseline run (TREC run or .jsonl rankings)")
    c.add_argument("run_b", metavar="RUN_B", help="the run compared with it")
    c.add_argument(
        "-k",
        dest="k",
        action="append",
        type=_positive,
        metavar="K",
        help="cutoff; repeat for several (default 10)",
    )
    c.add_argument(
        "--min-grade",
        type=_grade,
        default=None,
        metavar="G",
        help="relevant = grade >= G (default: golden.yaml's min_grade, else 1)",
    )
    c.add_argument(
        "--permutations",
        type=_positive,
        default=10_000,
        metavar="N",
        help="random sign flips of the randomization test (default 10000)",
    )
    c.add_argument("--seed", type=int, default=0, help="seed of the randomization test (default 0)")
    c.add_argument("--format", choices=["table", "json"], default="table")
    ag = sub.add_parser(
        "agree", help="agreement between raters: Cohen's kappa (weighted), CI, Fleiss, Krippendorff"
    )
    ag.add_argument("labels", metavar="LABELS.csv", nargs="?", help="long form, header item,rater,label")
    ag.add_argument(
        "--qrels", nargs=2, metavar=("A", "B"), help="compare two qrels files (raters named by file)"
    )
    ag.add_argument(
        "--bootstrap", type=_positive, default=2000, metavar="N", help="resamples of the CI (default 2000)"
    )
    ag.add_argument("--seed", type=int, default=0, help="seed of the bootstrap (default 0)")
    ag.add_argument(
        "--trusted", type=float, default=0.6, metavar="K", help="verdict: kappa >= K is trusted (default 0.6)"
    )
    ag.add_argument(
        "--noisy",
        type=float,
        default=0.4,
        metavar="K",
        help="verdict: kappa >= K is noisy, below not trusted (default 0.4)",
    )
    ag.add_argument("--format", choices=["table", "json"], default="table")

    po = sub.add_parser("position", help="position bias of pairwise judgments asked in both orders")
    po.add_argument("judgments", metavar="JUDGMENTS.csv", help="header item,order,choice[,repeat]")
    po.add_argument("--format", choices=["table", "json"], default="table")

    pp = sub.add_parser("ppi", help="a mean corrected by prediction-powered inference (PPI++ by default)")
    pp.add_argument("labeled", metavar="LABELED.csv", help="header human,judge: items both graded")
    pp.add_argument("unlabeled", metavar="UNLABELED.csv", help="header judge: items only the judge graded")
    pp.add_argument("--alpha", type=float, default=0.05, help="1 - confidence of the interval (default 0.05)")
    pp.add_argument(
        "--lam", type=float, default=None, metavar="L", help="lambda: 1 = classical PPI (default: tuned)"
    )
    pp.add_argument("--format", choices=["table", "json"], default="table")

    rv = sub.add_parser("review", help="the weekly judge review: kappa with CI and ceiling, verdict, trend")
    add_db_option(rv)
    rv.add_argument("--week", metavar="YYYY-Www", help="the ISO week (default: this week)")
    rv.add_argument("--sample", type=_positive, metavar="N", help="first draw this week's sample of N traces")
    rv.add_argument("--annotators", metavar="X,Y", help="with --sample: assign the sample to these people")
    rv.add_argument(
        "--min-labels",
        type=_positive,
        default=30,
        metavar="N",
        help="human-labelled items a judge needs before it gets a verdict (default 30)",
    )
    rv.add_argument("--seed", type=int, default=0, help="seed of the sample and the bootstrap (default 0)")
    rv.add_argument(
        "--trusted", type=float, default=0.6, metavar="K", help="verdict: kappa >= K is trusted (default 0.6)"
    )
    rv.add_argument(
        "--noisy",
        type=float,
        default=0.4,
        metavar="K",
        help="verdict: kappa >= K is noisy, below not trusted (default 0.4)",
    )
    rv.add_argument("--format", choices=["table", "json", "markdown", "html"], default="table")
    rv.add_argument("-o", "--output", metavar="FILE", help="write the report here (replaced atomically)")
    return parser


def _read_csv(path: str, required: list[str], optional: tuple[str, ...] = ()) -> list[dict[str, str]]:
    """Rows of a CSV with a header; one clear line naming file, line and column otherwise.

    The bytes are checked as every reader checks them (UTF-8, no NUL, no lone
    CR; a UTF-8 byte order mark, as Excel writes, is dropped); every row has
    as many fields as the header; line numbers are the file's lines, a quoted
    field over several lines included.
    """
    import csv
    import io

    from annotation._base import _clip, _read_text
    from annotation.formats import FormatError, _require_file

    _require_file(path, FormatError)
    text = _read_text(path, FormatError)
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    expected = f"the columns {','.join(required)}" + (f"[,{','.join(optional)}]" if optional else "")
    done = 0  # the last line read so far: a row starts on the next one
    try:
        header = [h.strip() for h in next(reader, [])]
        done = reader.line_num
        missing = [c for c in required if c not in header]
        if missing:
            shown = _clip(",".join(header)) if any(header) else "(empty)"
            raise UsageError(f"{path}:1: header {shown}; expected {expected}")
        twice = next((h for i, h in enumerate(header) if h and h in header[:i]), None)
        if twice is not None:
            raise UsageError(
                f"{path}:1: header names the column {twice!r} twice; expected {expected}, each once"
            )
        rows = []
        for fields in reader:
            number, done = done + 1, reader.line_num
            if not fields:  # a blank line
                continue
            if len(fields) != len(header):
                raise UsageError(
                    f"{path}:{number}: {len(fields)} fields; expected {len(header)}, as the header "
                    f"{_clip(','.join(header))} has"
                )
            row = {column: value.strip() for column, value in zip(header, fields)}
            for column in required:
                if row[column] == "" and column not in ("label", "choice"):
                    raise UsageError(f"{path}:{number}: {column}: empty; expected a value")
            row["_line"] = str(number)
            rows.append(row)
    except csv.Error as exc:
        raise UsageError(f"{path}:{done + 1}: not valid CSV ({exc}); expected {expected}") from None
    if not rows:
        raise UsageError(f"{path}: no rows after the header")
    return rows


def _numbers(path: str, rows: list[dict[str, str]], column: str) -> list[float]:
    """The column as finite numbers, written as trec_eval writes them (ASCII digits, no 1_000)."""
    import math

    from annotation._base import _NUMBER, _shown

    out = []
    for row in rows:
        raw = row[column]
        value = float(raw) if _NUMBER.fullmatch(raw) else None
        if value is None or not math.isfinite(value):
            raise UsageError(
                f"{path}:{row['_line']}: {column}: {_shown(raw)} is not a finite number; "
                "expected a number such as 0, 1 or 0.5"
            )
        out.append(value)
    return out


def _check_thresholds(args: argparse.Namespace) -> None:
    if not -1 <= args.noisy <= args.trusted <= 1:
        raise UsageError(
            f"--noisy {args.noisy} and --trusted {args.trusted}; expected -1 <= noisy <= trusted <= 1"
        )


def run_agree(args: argparse.Namespace) -> tuple[str, int]:
    from calibration.agreement import InvalidRatings, agreement_report

    _check_thresholds(args)

    if bool(args.labels) == bool(args.qrels):
        raise UsageError("python -m calibration agree: give LABELS.csv or --qrels A B (one of them)")
    if args.qrels:
        rows = []
        for path in args.qrels:
            qrels = read_judgments(path)
            rows += [(f"{q}\t{d}", path, g) for q, docs in qrels.grades.items() for d, g in docs.items()]
        if args.qrels[0] == args.qrels[1]:
            raise UsageError("python -m calibration agree --qrels: the two files are the same file")
    else:
        rows = [
            (r["item"], r["rater"], r["label"] or None)
            for r in _read_csv(args.labels, ["item", "rater", "label"])
        ]
    try:
        report = agreement_report(
            rows, bootstrap=args.bootstrap, seed=args.seed, trusted=args.trusted, noisy=args.noisy
        )
    except InvalidRatings as exc:
        raise UsageError(f"{args.labels or ' and '.join(args.qrels)}: {exc}") from None
    if args.format == "json":
        return dumps(report, one_line=()), 0
    return agree_table(report), 0


def _fmt(value: Any, digits: int = 3) -> str:
    return "undefined" if value is None else f"{value:.{digits}f}"


def agree_table(report: dict[str, Any]) -> str:
    from calibration.report import _align

    rows = [["raters", "n", "observed", "kappa", "95% CI", "linear", "quadratic", "verdict"]]
    for pair in report["pairs"]:
        ci = pair.get("kappa_ci")
        rows.append(
            [
                " vs ".join(pair["raters"]),
                str(pair["n"]),
                _fmt(pair["observed_agreement"]),
                _fmt(pair["kappa"]),
                f"[{ci[0]:.3f}, {ci[1]:.3f}]" if ci else "undefined",
                _fmt(pair["kappa_linear"]),
                _fmt(pair["kappa_quadratic"]),
                pair["verdict"],
            ]
        )
    alpha = report["krippendorff_alpha"]
    lines = [
        f"{report['n_items']} items, {len(report['raters'])} raters; kappa = Cohen's (unweighted), CI by "
        f"bootstrap over items; verdict: >= {report['verdict_thresholds']['trusted']} trusted, "
        f"{report['verdict_thresholds']['noisy']}-{report['verdict_thresholds']['trusted']} noisy, "
        f"< {report['verdict_thresholds']['noisy']} not trusted",
        _align(rows),
        *[
            f"{' vs '.join(p['raters'])}: kappa undefined: {p['undefined_reason']}"
            for p in report["pairs"]
            if p.get("undefined_reason")
        ],
        f"Fleiss' kappa: {_fmt(report['fleiss_kappa'])}"
        + (f" ({report['fleiss_undefined_reason']})" if report.get("fleiss_undefined_reason") else ""),
        "Krippendorff's alpha: "
        + ", ".join(f"{level} {_fmt(alpha[level])}" for level in ("nominal", "ordinal", "interval")),
    ]
    return "\n".join(lines) + "\n"


def run_position(args: argparse.Namespace) -> tuple[str, int]:
    from calibration.position import position_bias

    rows = _read_csv(args.judgments, ["item", "order", "choice"], optional=("repeat",))
    judgments = []
    for r in rows:
        if r["order"] not in ("AB", "BA"):
            raise UsageError(f"{args.judgments}:{r['_line']}: order: {r['order']!r}; expected AB or BA")
        if r["choice"] not in ("A", "B", "tie", ""):
            raise UsageError(f"{args.judgments}:{r['_line']}: choice: {r['choice']!r}; expected A, B or tie")
        repeat = r.get("repeat") or "0"
        if not (repeat.isascii() and repeat.isdigit() and len(repeat) <= 9):
            raise UsageError(f"{args.judgments}:{r['_line']}: repeat: {repeat!r}; expected an integer >= 0")
        judgments.append(
            {"item": r["item"], "order": r["order"], "choice": r["choice"] or None, "repeat": int(repeat)}
        )
    try:
        result = position_bias(judgments)
    except ValueError as exc:
        raise UsageError(f"{args.judgments}: {exc}") from None
    keys = (
        "n_pairs",
        "position_consistency",
        "primacy_rate",
        "recency_rate",
        "preference_fairness",
        "repetition_stability",
        "mean_preference_A",
    )
    if args.format == "json":
        return dumps(
            {k: result[k] for k in keys} | {"counts": {k: v for k, v in result.items() if k not in keys}},
            one_line=(),
        ), 0
    undefined = result.get("undefined") or {}
    lines = [f"{result['n_pairs']} pairs asked in both orders ({result.get('n_comparisons')} comparisons)"]
    for key in keys[1:]:
        value = result[key]
        lines.append(
            f"{key}: {_fmt(value)}" + (f" ({undefined[key]})" if value is None and key in undefined else "")
        )
    return "\n".join(lines) + "\n", 0


def run_ppi(args: argparse.Namespace) -> tuple[str, int]:
    from calibration.ppi import ppi_report

    if not 0 < args.alpha < 1:
        raise UsageError(f"--alpha {args.alpha}; expected a number between 0 and 1")
    labeled = _read_csv(args.labeled, ["human", "judge"])
    unlabeled = _read_csv(args.unlabeled, ["judge"])
    try:
        result = ppi_report(
            _numbers(args.labeled, labeled, "human"),
            _numbers(args.labeled, labeled, "judge"),
            _numbers(args.unlabeled, unlabeled, "judge"),
            alpha=args.alpha,
            lam=args.lam,
        )
    except ValueError as exc:  # too few items, a lambda off [0, 1]: the input, said in one line
        text = str(exc)
        where = args.unlabeled if "unlabeled" in text.lower() else args.labeled
        raise UsageError(f"{where}: {text}") from None
    if args.format == "json":
        return dumps(result, one_line=()), 0
    level = f"{1 - args.alpha:.0%}"
    human = result["human_only"]
    return (
        f"PPI{'++' if args.lam is None else ''} estimate {result['estimate']:.4f}, {level} CI "
        f"[{result['ci'][0]:.4f}, {result['ci'][1]:.4f}] (lambda {result['lam']:.3f}; "
        f"{result['n_labeled']} items graded by people and the judge, {result['n_unlabeled']} by the judge alone)\n"
        f"people only: {human['estimate']:.4f}, {level} CI [{human['ci'][0]:.4f}, {human['ci'][1]:.4f}] "
        f"(n = {result['n_labeled']})\n",
        0,
    )


def run_review(args: argparse.Namespace) -> tuple[str, int]:
    from annotation.formats import _write_atomic
    from annotation.store import Store, StoreError, default_db_path
    from calibration.review import draw_sample, review, summary_lines, to_html, to_json, to_markdown

    _check_thresholds(args)

    try:
        with Store(args.db or default_db_path()) as store:
            drawn = None
            if args.sample:
                names = [a for a in (args.annotators or "").split(",") if a]
                drawn = draw_sample(store, args.week, n=args.sample, annotators=names, seed=args.seed)
            elif args.annotators:
                raise UsageError("--annotators goes with --sample")
            report = review(
                store,
                args.week,
                min_labels=args.min_labels,
                seed=args.seed,
                thresholds=(args.trusted, args.noisy),
            )
    except StoreError as exc:
        raise UsageError(str(exc)) from None
    if args.format == "json":
        text = to_json(report)
    elif args.format == "markdown":
        text = to_markdown(report)
    elif args.format == "html":
        text = to_html(report)
    else:
        lines = [f"judge review, week {report['week']}"]
        if drawn:
            lines.append(
                f"sampled {drawn['sampled']} of {drawn['of']} traces for week {drawn['week']} "
                f"({', '.join(f'{k}: {v}' for k, v in sorted(drawn['strata'].items()))})"
                + (f", assigned to {', '.join(drawn['annotators'])}" if drawn["annotators"] else "")
            )
        if not report["judges"]:
            lines.append("no judge has graded anything yet")
        for heading, body in summary_lines(report):
            lines += ["", heading, *[f"  {line}" for line in body]]
        text = "\n".join(lines) + "\n"
    if args.output:
        _write_atomic(args.output, text)
        return (
            f"wrote the week {report['week']} review of {len(report['judges'])} judges to {args.output}\n",
            0,
        )
    return text, 0


def run_compare(args: argparse.Namespace) -> tuple[str, int]:
    from calibration.significance import paired_test

    qrels = read_judgments(args.qrels)
    ks = args.k or [10]
    min_grade = _min_grade(args, qrels)
    evaluations = []
    for path in (args.run_a, args.run_b):
        result = evaluate(qrels, read_ranked(path), ks=ks, min_grade=min_grade)
        if not result.evaluated.any():
            raise UsageError(f"no query of {path} is in {args.qrels}: nothing to compare")
        evaluations.append(result)
    a, b = evaluations
    tests = {
        name: paired_test(a.values[name], b.values[name], args.permutations, args.seed) for name in a.measures
    }
    deltas = {}
    for i, qid in enumerate(a.qids):
        row = {}
        for name in a.measures:
            x, y = a.values[name][i], b.values[name][i]
            row[name] = None if x != x or y != y else float(y - x)
        deltas[qid] = row
    if args.format == "json":
        return dumps(
            {
                "qrels": args.qrels,
                "run_a": args.run_a,
                "run_b": args.run_b,
                "min_grade": min_grade,
                "measures": tests,
                "queries": deltas,
            }
        ), 0
    return compare_table(tests, deltas, args), 0


def compare_table(tests: dict[str, dict[str, Any]], deltas: dict[str, dict], args: argparse.Namespace) -> str:
    from calibration.report import _align, _num

    header = ["measure", "n", "A", "B", "B - A", "wins/losses/ties", "p (randomization)", "p (t-test)"]
    rows = [header]
    notes = []
    for name, t in tests.items():
        rows.append(
            [
                name,
                f"{t['n']}" + (f" (+{t['left_out']} undef)" if t["left_out"] else ""),
                _num(t["mean_a"], 4),
                _num(t["mean_b"], 4),
                "undef" if t["delta"] is None else f"{t['delta']:+.4f}",
                f"{t['wins']}/{t['losses']}/{t['ties']}",
                _num(t["p_randomization"], 4),
                _num(t["p_ttest"], 4),
            ]
        )
        if t["undefined_reason"]:
            notes.append(f"{name}: no p-value: {t['undefined_reason']}")
    measures = list(tests)
    per_query = [["query", *[f"d {m}" for m in measures]]]
    for qid, row in deltas.items():
        per_query.append([qid, *("undef" if row[m] is None else f"{row[m]:+.3f}" for m in measures)])
    lines = [
        f"A = {args.run_a}, B = {args.run_b}, judged by {args.qrels}; n = queries where the measure is "
        f"defined for both runs; wins = queries where B is higher; randomization test: "
        f"{args.permutations} sign flips, seed {args.seed}; both tests two-sided",
        "",
        _align(rows),
        *notes,
        "",
        "per query, B - A:",
        _align(per_query),
    ]
    return "\n".join(lines) + "\n"


def _min_grade(args: argparse.Namespace, qrels: Qrels) -> int:
    """--min-grade, else the label file's own (golden.yaml ``min_grade``), else 1."""
    if args.min_grade is not None:
        return args.min_grade
    return int(qrels.meta.get("min_grade", 1))


def run_metrics(args: argparse.Namespace) -> tuple[str, int]:
    qrels = read_judgments(args.qrels)
    run = read_ranked(args.run)
    ks = args.k or [10]
    result = evaluate(
        qrels, run, ks=ks, min_grade=_min_grade(args, qrels), missing=args.missing, gain=args.gain
    )
    if not result.evaluated.any():  # trec_eval too: "No queries with both results and relevance info"
        raise UsageError(
            f"no query of {args.run} is in {args.qrels}: nothing to evaluate "
            f"(run has {result.not_in_qrels} queries without judgments)"
        )
    if args.format == "json":
        return dumps(metrics_json(result)), 0
    if args.format == "trec":
        if result.duplicates:
            n = sum(len(v) for v in result.duplicates.values())
            print(
                f"warning: {n} repeated document ids counted once at their first rank "
                "(trec_eval refuses such runs)",
                file=sys.stderr,
            )
        return metrics_trec(result), 0
    return metrics_table(result, qrels_path=args.qrels, run_path=args.run), 0


def run_audit(args: argparse.Namespace) -> tuple[str, int]:
    if len(args.k) > 1:
        raise UsageError(
            f"python -m calibration audit: -k given {len(args.k)} times; the audit takes one cutoff"
        )
    if args.interval != "midp" and not args.estimate:
        raise UsageError("python -m calibration audit: --interval is for the estimate; add --estimate")
    gates = [parse_gate(rule) for rule in args.fail_on]
    qrels = read_judgments(args.qrels)
    run = read_ranked(args.run)
    fetch_run = read_ranked(args.fetch_run) if args.fetch_run else None
    corpus_ids = set(read_corpus_ids(args.corpus)) if args.corpus else None
    truth = read_judgments(args.truth) if args.truth else None
    result = audit_run(
        qrels,
        run,
        args.k[0],
        min_grade=_min_grade(args, qrels),
        fetch_run=fetch_run,
        fetch_depth=args.fetch_depth,
        corpus_size=args.corpus_size,
        corpus_ids=corpus_ids,
        truth=truth,
        gates=gates,
        min_judged=args.min_judged,
        stage1_min=args.stage1_min,
    )
    if not result["queries"]:
        raise UsageError(f"no query of {args.run} is in {args.qrels}: nothing to audit")
    code = 0 if result["passed"] else 1
    estimates = None
    if args.estimate:  # before the report: it adds the finding labels_incomplete_estimated
        estimates = estimate_run(
            qrels,
            run,
            args.k[0],
            _min_grade(args, qrels),
            result,
            on_query=_QueryProgress(),
            interval=args.interval,
        )
    if args.format == "json":
        if estimates is not None:
            result["estimate"] = estimates
        return dumps(result), code
    table = audit_table(result, qrels_path=args.qrels, run_path=args.run)
    return table + (estimate_table(estimates) if estimates is not None else ""), code


class _QueryProgress:
    """``estimating: 120 of 500 queries`` on stderr, redrawn in place, when stderr is a
    terminal and the work has lasted half a second; nothing in pipes and logs."""

    def __init__(self, stream: Any = None) -> None:
        import time

        self.stream = stream or sys.stderr
        self.clock = time.monotonic
        self.started = self.clock()
        self.last = 0.0
        self.tty = hasattr(self.stream, "isatty") and self.stream.isatty()

    def __call__(self, done: int, total: int) -> None:
        now = self.clock()
        if not self.tty or (now - self.last < 0.2 and done < total) or now - self.started < 0.5:
            return
        self.last = now
        end = "\n" if done == total else ""
        self.stream.write(f"\restimating what the labels missed: {done} of {total} queries{end}")
        self.stream.flush()


def _design_text(design: Any) -> str:
    """golden.yaml's design in a line: ``depth 10; strata 50,100,1000; corpus True; ...``."""
    if not isinstance(design, dict):
        return "not recorded" if design is None else str(design)
    return "; ".join(
        f"{key} {','.join(map(str, value)) if isinstance(value, list) else value}"
        for key, value in design.items()
    )


def estimate_table(estimates: dict[str, Any]) -> str:
    from calibration.report import _align

    k = estimates["k"]
    rows = [
        [
            "query",
            f"R@{k} judged",
            "|Rel| judged",
            f"R@{k} estimated",
            "95% CI",
            "|Rel| estimated",
            "95% CI",
            "sampled",
        ]
    ]
    for qid, e in estimates["queries"].items():

        def num(x, digits=3):
            return "undefined" if x is None else f"{x:.{digits}f}"

        def ci(pair, digits=3):
            return "-" if not pair else f"[{pair[0]:.{digits}f}, {pair[1]:.{digits}f}]"

        rows.append(
            [
                qid,
                num(e["recall_judged"]),
                str(e["rel_judged"]),
                num(e["recall_estimated"]),
                ci(e["recall_ci"]),
                num(e["rel_estimated"], 1),
                ci(e["rel_ci"], 1),
                sampled_labels(e, " sampled labels"),
            ]
        )
    flagged = [qid for qid, e in estimates["queries"].items() if e["labels_incomplete_estimated"]]
    lines = [
        "",
        f"Estimated from the sample of unjudged candidates (design: {_design_text(estimates['design'])}; "
        f"{'mid-p' if estimates['interval'] == 'midp' else 'exact'} 95% intervals):",
        _align(rows),
        estimate_summary_line(estimates),
    ]
    lines += [f"{qid}: undefined: {e['reason']}" for qid, e in estimates["queries"].items() if e["reason"]]
    if estimates.get("note"):
        lines.append(estimates["note"])
    lines += [
        f"{qid}: labels_incomplete_estimated: judged R@{k} {estimates['queries'][qid]['recall_judged']:.3f} lies "
        "outside the estimated interval; the labels miss relevant chunks"
        for qid in flagged
    ]
    return "\n".join(lines) + "\n"


def _use_jemalloc() -> None:
    """Arrow's default pool (mimalloc) hands big blocks back to the kernel and
    faults them in again; on a 10M-line run that costs 1-3 s of system time.
    jemalloc does not (measured in bench/: 2.6 s against 3.4-3.9 s wall)."""
    import pyarrow as pa

    try:
        pa.set_memory_pool(pa.jemalloc_memory_pool())
    except NotImplementedError:  # a pyarrow built without jemalloc: keep the default
        pass


def main(argv: Sequence[str] | None = None) -> int:
    _use_jemalloc()
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
        handler: Any = {
            "metrics": run_metrics,
            "audit": run_audit,
            "compare": run_compare,
            "agree": run_agree,
            "position": run_position,
            "ppi": run_ppi,
            "review": run_review,
        }[args.command]
        text, code = handler(args)
    except (UsageError, FormatError, InvalidAudit, InvalidMeasure) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except BrokenPipeError:  # `| head` closed the pipe: not an error of ours
        pass
    return code


if __name__ == "__main__":
    sys.exit(main())
