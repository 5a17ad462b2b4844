"""The commands of ``python -m calibration``, each from its parsed arguments to (text, exit code).

Imported by :mod:`calibration.__main__` only when a command runs: ``--help`` and a usage error
never load pyarrow, numpy or the store."""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable, Mapping
from contextlib import nullcontext
from typing import TYPE_CHECKING, Any, Literal, TextIO, overload

import pyarrow as pa

from annotation.cli_base import UsageError, open_store, plural, say_db, say_notes
from annotation.formats.atomic import write_atomic
from annotation.formats.by_extension import read_judgments, read_ranked
from annotation.formats.records import read_corpus_ids, read_text_keys
from annotation.model import Qrels, Run
from calibration import actions
from calibration.audit import REPEAT_RULE
from calibration.cli_args import check_verdict_options
from calibration.commands_text import (
    agree_table,
    audit_table,
    compare_json,
    compare_table,
    dumps,
    estimate_table,
    metrics_json_text,
    metrics_table,
    metrics_trec,
    position_json,
    position_text,
    ppi_text,
    review_text,
)
from calibration.policy.rules import Policy
from calibration.results import POSITION_KEYS
from calibration.stats.verdict import NOISY_GONE

if TYPE_CHECKING:  # the holes' family loads in the commands that use it (#42 item 4)
    from calibration.holes.files import HoleSample


def _verdict_settings(args: argparse.Namespace) -> Policy:
    """The policy; the verdict's bar and statistic resolved into ``args`` (:func:`verdict_settings`)."""
    # start-up: imported when this command runs, not by every command (#42 item 4)
    from calibration.gate import load_policy, verdict_settings

    policy = load_policy(args.policy)
    args.trusted, args.statistic = verdict_settings(policy, args.trusted, args.statistic)
    return policy


def _judgments(path: str) -> Qrels:
    """A label file, its notes (e.g. queries named by their text) said on stderr."""
    qrels = read_judgments(path)
    say_notes(qrels.notes)
    return qrels


@overload
def _scored(
    args: argparse.Namespace, read_run: Literal[True] = True
) -> tuple[Qrels, Run, str, str, set[str] | None]: ...
@overload
def _scored(
    args: argparse.Namespace, read_run: bool
) -> tuple[Qrels, Run | None, str, str, set[str] | None]: ...
def _scored(
    args: argparse.Namespace, read_run: bool = True
) -> tuple[Qrels, Run | None, str, str, set[str] | None]:
    """What metrics and audit score: QRELS and RUN, or a stored run and label set (--stored-run,
    --labels, --db: calibration.stored.stored_data, as the Metrics page); their names; the corpus ids
    (--corpus, else with --stored-run the store's chunks unless --corpus-size is given)."""
    corpus = set(read_corpus_ids(args.corpus)) if args.corpus else None
    if args.stored_run is None:
        if args.labels:
            raise UsageError(f"python -m calibration {args.command}: --labels goes with --stored-run")
        if args.db and not getattr(args, "hole_sample", None):
            also = " or --hole-sample FILE" if args.command == "metrics" else ""
            raise UsageError(f"python -m calibration {args.command}: --db goes with --stored-run{also}")
        if not args.run:  # argparse's words, as when both were required
            missing = "RUN" if args.qrels else "QRELS, RUN (or --stored-run NAME)"
            raise UsageError(
                f"python -m calibration {args.command}: the following arguments are required: {missing}"
            )
        return (
            _judgments(args.qrels),
            read_ranked(args.run) if read_run else None,
            args.qrels,
            args.run,
            corpus,
        )
    if args.qrels:
        raise UsageError(
            f"python -m calibration {args.command}: --stored-run replaces QRELS and RUN (--labels names the labels)"
        )
    # start-up: the store (sqlite-utils), only with --stored-run
    from annotation.store import Store, StoreError, database_exists, default_db_path
    from calibration.stored import DEFAULT_LABELS, stored_data

    path = args.db or default_db_path()
    if not database_exists(path):
        raise UsageError(f"no such database: {path}")
    try:
        with Store(path) as store:
            data = stored_data(store, args.stored_run, args.labels or DEFAULT_LABELS)
    except StoreError as exc:
        raise UsageError(str(exc)) from None
    say_db(path)
    if corpus is None and args.corpus_size is None:
        corpus = data.corpus_ids
    return data.qrels, data.run, data.labels_name, data.run_name, corpus


def run_metrics(args: argparse.Namespace) -> tuple[str, int]:
    if args.evidence:
        # start-up: the evidence measures' face loads with --evidence only (#44 item 4)
        from calibration.evidence_cli import run_metrics_evidence

        return run_metrics_evidence(args)
    if args.chunks:
        raise UsageError("python -m calibration metrics: --chunks goes with --evidence")
    if args.judge_labels:
        return _run_filled(args)
    if args.hole_sample:
        raise UsageError("python -m calibration metrics: --hole-sample goes with --judge-labels FILE")
    if args.stored_run is None and args.run:  # a run file: read in pieces when grouped by query
        qrels, _, qrels_name, run_name, corpus = _scored(args, read_run=False)
        result = actions.metrics(
            qrels,
            args.run,
            args.k,
            args.min_grade,
            missing=args.missing,
            gain=args.gain,
            grouped=args.grouped,
            qrels_name=qrels_name,
            corpus_size=args.corpus_size,
            corpus_ids=corpus,
        )
        # how the run was read: with --verbose, or when a TREC run could not be read in pieces
        say_notes([n for n in result.notes if args.verbose or n.startswith("run read whole: ")])
    else:
        if args.grouped:
            raise UsageError("python -m calibration metrics: --grouped goes with a RUN file")
        qrels, run, qrels_name, run_name, corpus = _scored(args)
        result = actions.metrics(
            qrels,
            run,
            args.k,
            args.min_grade,
            missing=args.missing,
            gain=args.gain,
            run_name=run_name,
            qrels_name=qrels_name,
            corpus_size=args.corpus_size,
            corpus_ids=corpus,
        )
    coverage = result.coverage
    if args.format == "json":
        return metrics_json_text(result, coverage), 0
    if args.format == "trec":
        if result.duplicates:
            n = sum(len(v) for v in result.duplicates.values())
            print(
                f"warning: {n} repeated document ids: {REPEAT_RULE} (trec_eval refuses such runs)",
                file=sys.stderr,
            )
        return metrics_trec(result), 0
    size = len(corpus) if corpus is not None else args.corpus_size
    return metrics_table(result, qrels_name, run_name, coverage, verbose=args.verbose, corpus_size=size), 0


def _run_filled(args: argparse.Namespace) -> tuple[str, int]:
    """``metrics --judge-labels FILE [--hole-sample FILE]``: the holes filled by a judge."""
    # start-up: imported when this command runs, not by every command (#42 item 4)
    from calibration.holes.files import read_judge_labels
    from calibration.holes.holes_text import filled_text

    unread = {
        "--format trec": args.format == "trec",
        "--missing zero": args.missing != "drop",
        "--corpus": args.corpus or args.corpus_size,
        "--grouped (a grouped run is read in pieces without it)": args.grouped,
    }
    for flag in (flag for flag, given in unread.items() if given):
        raise UsageError(f"python -m calibration metrics: {flag} does not go with --judge-labels")
    # a run file is read by the action (in pieces when grouped by query), a stored run here
    in_pieces = args.stored_run is None and bool(args.run)
    qrels, run, qrels_name, run_name, _corpus = _scored(args, read_run=not in_pieces)
    judge, judge_name = read_judge_labels(args.judge_labels)
    sample = _hole_sample(args)
    reports = actions.metrics(
        qrels,
        args.run if run is None else run,
        args.k,
        args.min_grade,
        gain=args.gain,
        run_name=run_name,
        qrels_name=qrels_name,
        judge=judge,
        judge_name=judge_name,
        hole_sample=sample,
    )
    if args.format == "json":
        return dumps({"cutoffs": reports}, one_line=()), 0
    return filled_text(reports), 0


def _hole_sample(args: argparse.Namespace) -> HoleSample | None:
    """``--hole-sample FILE``; with ``--db DB`` people's grades on its holes read from that store
    (:func:`calibration.actions.stored_hole_sample`), as the Metrics page reads them (#43)."""
    # start-up: the holes' reader, only when a sample is given
    from calibration.holes.files import read_hole_sample

    if not args.hole_sample:
        return None
    sample = read_hole_sample(args.hole_sample)
    if not args.db:
        return sample
    # start-up: the store (sqlite-utils), only when the sample's grades are read from one
    from annotation.store import StoreError

    try:
        with open_store(args.db, "read") as store:
            return actions.stored_hole_sample(store, sample)
    except StoreError as exc:
        raise UsageError(str(exc)) from None


def run_audit(args: argparse.Namespace) -> tuple[str, int]:
    # start-up: imported when this command runs, not by every command (#42 item 4)
    from calibration.gate import load_policy

    if len(args.k) > 1:
        raise UsageError(
            f"python -m calibration audit: -k given {len(args.k)} times; the audit takes one cutoff"
        )
    if args.interval != "midp" and not args.estimate:
        raise UsageError("python -m calibration audit: --interval is for the estimate; add --estimate")
    # a run file is read in pieces (never whole when grouped by query), but the estimate needs it all
    in_pieces = args.stored_run is None and args.run and not args.estimate
    qrels, run, qrels_name, run_name, corpus = _scored(args, read_run=not in_pieces)
    result = actions.audit(
        qrels,
        args.run if run is None else run,  # None: not read, the file is read in pieces
        args.k[0],
        args.min_grade,
        fetch_run=read_ranked(args.fetch_run) if args.fetch_run else None,
        fetch_depth=args.fetch_depth,
        corpus_size=args.corpus_size,
        corpus_ids=corpus,
        truth=_judgments(args.truth) if args.truth else None,
        gates=args.fail_on,
        policy=load_policy(args.policy),
        min_judged=args.min_judged,
        stage1_min=args.stage1_min,
        run_name=run_name,
        qrels_name=qrels_name,
        text_keys=read_text_keys(args.corpus) if args.corpus else None,  # texts: read the run whole
    )
    code = 0 if result["passed"] else 1
    estimates = None
    if args.estimate:  # before the report: it adds the finding labels_incomplete_estimated
        assert run is not None  # --estimate reads the run whole, never in pieces
        estimates = actions.estimate(qrels, run, result, interval=args.interval, on_query=_QueryProgress())
    if args.format == "json":
        shown: Mapping[str, Any] = result if estimates is None else {**result, "estimate": estimates}
        return dumps(shown), code
    table = audit_table(result, qrels_name, run_name, verbose=args.verbose)
    return table + (estimate_table(estimates) if estimates is not None else ""), code


def run_check(args: argparse.Namespace) -> tuple[str, int]:
    # start-up: imported when this command runs, not by every command (#42 item 4)
    from calibration.gate import NoStore, check_store, file_digest, load_policy
    from calibration.holes.files import read_judge_labels
    from calibration.holes.holes_text import check_holes_text
    from calibration.policy.check_text import check_markdown, check_table

    if len(args.k) > 1:
        raise UsageError(
            f"python -m calibration check: -k given {len(args.k)} times; the check takes one cutoff"
        )
    policy = load_policy(args.policy, args.rule)
    if args.name and not args.record:
        raise UsageError("python -m calibration check: --name goes with --record")
    if args.no_store and (args.db or args.with_store or args.record):
        given = "--db" if args.db else ("--with-store" if args.with_store else "--record")
        raise UsageError(f"python -m calibration check: --no-store leaves the store out; {given} needs it")
    qrels = _judgments(args.qrels)
    if args.hole_sample and not args.judge_labels:
        raise UsageError("python -m calibration check: --hole-sample goes with --judge-labels FILE")
    judged: dict[str, Any] = {}
    if args.judge_labels:
        judge, judge_name = read_judge_labels(args.judge_labels)
        judged = {"judge": judge, "judge_name": judge_name, "hole_sample": _hole_sample(args)}
    inputs = dict(
        policy=policy,
        fetch_run=read_ranked(args.fetch_run) if args.fetch_run else None,
        fetch_depth=args.fetch_depth,
        corpus_size=args.corpus_size,
        corpus_ids=set(read_corpus_ids(args.corpus)) if args.corpus else None,
        text_keys=read_text_keys(args.corpus) if args.corpus else None,  # duplicates by text too
        missing=args.missing,
        run_name=args.run,
        qrels_name=args.qrels,
        min_queries=args.min_queries,  # overrides the policy's
    )
    # one rule with the page: --db, else $DENOMINATOR_DB, else ./denominator.db when it is there
    try:
        path = check_store(args.db, no_store=args.no_store)
    except NoStore:
        if not args.record:
            raise
        path = None
    created = None
    if path is None and (args.record or args.with_store):
        # --record creates the store it names (removed again if the check fails); --with-store needs one
        created = open_store(args.db, "create" if args.record else "read")
    name = (args.name or os.path.basename(args.run)) if args.record else None
    store_errors: tuple[type[Exception], ...] = ()  # --no-store: no store, nothing of it loaded
    if path is not None or created is not None:
        # start-up: the store (sqlite-utils, pandas), only when the check reads it
        from annotation.store import StoreError

        store_errors = (StoreError,)
    try:
        with created if created is not None else nullcontext(None) as new:
            report = actions.check(
                qrels,
                args.run,  # read in pieces when grouped by query
                args.k[0],
                args.min_grade,
                db=args.db,
                no_store=args.no_store,
                store_path=new.location if new is not None else path,
                record_as=name,
                run_digest=file_digest(args.run) if args.record else "",
                **inputs,
                **judged,
            )
            if name is not None:  # before a created store says "database: ... (created)"
                print(
                    f"recorded check {report['recorded']} of {name!r} in {report['store']}", file=sys.stderr
                )
    except store_errors as exc:
        raise UsageError(str(exc)) from None
    if path is not None:  # a store that was there: read (and recorded into), said as open_store says it
        say_db(path)
    code = 0 if report["passed"] else 1
    if args.format == "json":
        return dumps(report), code
    markdown = args.format == "markdown"
    holes = check_holes_text(report["holes"], markdown=markdown) if "holes" in report else ""
    if markdown:
        return check_markdown(report, args.qrels, args.run) + holes, code
    return check_table(report, args.qrels, args.run) + holes, code


def run_history(args: argparse.Namespace) -> tuple[str, int]:
    # start-up: the store (sqlite-utils) and the history's words, only for this command
    from annotation.store import StoreError
    from calibration.policy.check_text import diff_table, history_table

    try:
        with open_store(args.db, "read") as store:
            if args.diff:
                first, second = args.diff
                diff = actions.history(store, diff=(first, second))
                return (dumps(diff) if args.format == "json" else diff_table(diff)), 0
            entries = actions.history(store, name=args.name)
    except StoreError as exc:
        raise UsageError(str(exc)) from None
    if args.format == "json":
        return dumps({"checks": entries}), 0
    return history_table(entries), 0


def run_compare(args: argparse.Namespace) -> tuple[str, int]:
    # start-up: imported when this command runs, not by every command (#42 item 4)
    from calibration.holes.files import read_judge_labels
    from calibration.holes.holes_text import compare_filled_text

    if args.evidence:
        # start-up: the evidence measures' face loads with --evidence only (#44 item 4)
        from calibration.evidence_cli import run_compare_evidence

        return run_compare_evidence(args)
    if args.chunks_a or args.chunks_b:
        raise UsageError("python -m calibration compare: --chunks-a and --chunks-b go with --evidence")
    if args.hole_sample and not args.judge_labels:
        raise UsageError("python -m calibration compare: --hole-sample goes with --judge-labels FILE")
    if args.db and not args.hole_sample:
        raise UsageError("python -m calibration compare: --db goes with --hole-sample FILE")
    if args.judge_labels:
        judge, judge_name = read_judge_labels(args.judge_labels)
        reports = actions.compare(
            _judgments(args.qrels),
            args.run_a,  # read in pieces when grouped by query
            args.run_b,
            args.k,
            args.min_grade,
            judge=judge,
            judge_name=judge_name,
            hole_sample=_hole_sample(args),
            names=(args.run_a, args.run_b),
            qrels_name=args.qrels,
        )
        if args.format == "json":
            return dumps({"cutoffs": reports}, one_line=()), 0
        return compare_filled_text(reports), 0
    comparison = actions.compare(
        _judgments(args.qrels),
        read_ranked(args.run_a),
        read_ranked(args.run_b),
        args.k,
        args.min_grade,
        permutations=args.permutations,
        seed=args.seed,
        names=(args.run_a, args.run_b),
        qrels_name=args.qrels,
    )
    if args.format == "json":
        return dumps(compare_json(comparison, args.qrels, args.run_a, args.run_b)), 0
    return compare_table(comparison, args.qrels, args.run_a, args.run_b), 0


def run_agree(args: argparse.Namespace) -> tuple[str, int]:
    policy = _verdict_settings(args)  # the bar, the statistic and min_queries when not given
    check_verdict_options(args.trusted, args.noisy, NOISY_GONE)
    if args.bootstrap is not None or args.seed is not None:
        # start-up: scipy, scikit-learn and pandas (~0.9 s), only for this refusal
        from calibration.stats.kappa_interval import BOOTSTRAP_GONE

        raise UsageError(BOOTSTRAP_GONE)
    if sum(map(bool, (args.labels, args.qrels, args.db))) != 1:
        raise UsageError("python -m calibration agree: give LABELS.csv, --qrels A B or --db DB (one of them)")
    if args.qrels and args.qrels[0] == args.qrels[1]:
        raise UsageError("python -m calibration agree --qrels: the two files are the same file")
    options = {
        key: getattr(args, key) for key in ("trusted", "statistic", "sequential", "min_queries", "rubric")
    }
    if args.db:
        with open_store(args.db, "read") as store:
            report = actions.agree(policy=policy, store=store, **options)
    else:
        report = actions.agree(args.labels, args.qrels, policy=policy, **options)
    return (dumps(report, one_line=()), 0) if args.format == "json" else (agree_table(report), 0)


def run_position(args: argparse.Namespace) -> tuple[str, int]:
    result = actions.position(args.judgments)
    if args.format == "json":
        return dumps(position_json(result, POSITION_KEYS), one_line=()), 0
    return position_text(result, POSITION_KEYS), 0


def run_ppi(args: argparse.Namespace) -> tuple[str, int]:
    result = actions.ppi(args.labeled, args.unlabeled, alpha=args.alpha, lam=args.lam)
    if args.format == "json":
        return dumps(result, one_line=()), 0
    return ppi_text(result, args.alpha, tuned=args.lam is None), 0


def run_review(args: argparse.Namespace) -> tuple[str, int]:
    # start-up: the review's words and the store, only for this command
    from annotation.store import StoreError
    from calibration.review_text import (
        sample_note,
        summary_lines,
        superseded_text,
        to_html,
        to_json,
        to_markdown,  # start-up: the review's words, only for this command
    )

    policy = _verdict_settings(args)  # the bar, the statistic and min_queries when not given
    check_verdict_options(args.trusted, args.noisy, NOISY_GONE)
    if args.annotators and not args.sample:
        raise UsageError("--annotators goes with --sample")
    if args.sample and (note := sample_note(args.sample)):
        say_notes([note])
    try:
        with open_store(args.db, "write") as store:  # the review is saved (the trend's next point)
            report, drawn = actions.review(
                store,
                args.week,
                policy=policy,
                trusted=args.trusted,
                statistic=args.statistic,
                min_labels=args.min_labels,
                sample=args.sample,
                annotators=[a for a in (args.annotators or "").split(",") if a],
                seed=args.seed,
                overlap=args.overlap,
                min_queries=args.min_queries,
            )
    except StoreError as exc:
        raise UsageError(str(exc)) from None
    if args.format == "table":
        text = review_text(report, drawn, summary_lines(report), superseded_text(report))
    else:
        text = {"json": to_json, "markdown": to_markdown, "html": to_html}[args.format](report)
    if args.output:
        write_atomic(args.output, text)
        return (
            f"wrote the week {report['week']} review of {plural(len(report['judges']), 'judge')} to {args.output}\n",
            0,
        )
    return text, 0


class _QueryProgress:
    """``estimating: 120 of 500 queries`` on stderr, redrawn in place, when stderr is a
    terminal and the work has lasted half a second; nothing in pipes and logs."""

    def __init__(self, stream: TextIO | None = None) -> None:
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
        self.stream.write(
            f"\restimating what the labels missed: {done} of {plural(total, 'query', 'queries')}{end}"
        )
        self.stream.flush()


def _use_jemalloc() -> None:
    """Arrow's default pool (mimalloc) hands big blocks back to the kernel and
    faults them in again; on a 10M-line run that costs 1-3 s of system time.
    jemalloc does not (measured in bench/: 2.6 s against 3.4-3.9 s wall)."""
    try:
        pa.set_memory_pool(pa.jemalloc_memory_pool())
    except NotImplementedError:  # a pyarrow built without jemalloc: keep the default
        pass


def run_holes(args: argparse.Namespace) -> tuple[str, int]:
    """``holes`` (:mod:`calibration.holes_cli`)."""
    # start-up: the holes' family loads when holes are asked for (#42 item 4)
    from calibration.holes_cli import run_holes as holes_command

    return holes_command(args)


COMMANDS: dict[str, Callable[[argparse.Namespace], tuple[str, int]]] = {
    "metrics": run_metrics,
    "holes": run_holes,
    "audit": run_audit,
    "check": run_check,
    "history": run_history,
    "compare": run_compare,
    "agree": run_agree,
    "position": run_position,
    "ppi": run_ppi,
    "review": run_review,
}


def run(name: str, args: argparse.Namespace) -> tuple[str, int]:
    """Run the command ``name`` (the command line's parse done by :mod:`calibration.__main__`)."""
    _use_jemalloc()
    return COMMANDS[name](args)
