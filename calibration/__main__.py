"""``python -m calibration``: retrieval metrics and the denominator audit.

    python -m calibration metrics QRELS RUN [-k K]... [--min-grade G]
        [--missing drop|zero] [--gain linear|exp] [--format table|json|trec]
    python -m calibration audit QRELS RUN -k K [--fetch-depth D | --fetch-run RUN]
        [--corpus-size N | --corpus FILE] [--truth QRELS] [--min-grade G]
        [--min-judged X] [--stage1-min X] [--fail-on RULE]... [--format table|json]
    python -m calibration compare QRELS RUN_A RUN_B [-k K]... [--min-grade G]
        [--permutations N] [--seed S] [--format table|json]

Exit codes: 0 success (every gate passed), 1 a gate failed, 2 bad usage or
input (one line on stderr, no traceback).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

from annotation._cli import OneLineParser, UsageError
from annotation.formats import FormatError, Qrels, read_corpus_ids, read_judgments, read_ranked
from calibration.audit import (
    DEFAULT_MIN_JUDGED,
    DEFAULT_STAGE1_MIN,
    InvalidAudit,
    audit_run,
    parse_gate,
)
from calibration.metrics import InvalidMeasure, evaluate
from calibration.report import audit_table, dumps, metrics_json, metrics_table, metrics_trec


def _fraction(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number between 0 and 1, got {text!r}") from None
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"expected a number between 0 and 1, got {text!r}")
    return value


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
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
    return parser


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
    if args.format == "json":
        return dumps(result), code
    return audit_table(result, qrels_path=args.qrels, run_path=args.run), code


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
        handler: Any = {"metrics": run_metrics, "audit": run_audit, "compare": run_compare}[args.command]
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
