"""``python -m annotation``: the label store from the command line.

    python -m annotation import [--db DB] [--corpus FILE] [--queries FILE] [--beir DIR]
        [--run FILE --name NAME [--stage fetch|keep]] [--labels FILE --annotator NAME]
    python -m annotation baseline [--db DB] [--method bm25] [--depth 100] [--name bm25-baseline]
    python -m annotation pool [--db DB] [--depth D] [--runs A,B] [--annotators X,Y --overlap SHARE] [--seed S]
    python -m annotation annotators add NAME --role annotator|admin [--db DB]
    python -m annotation annotators list [--db DB]
    python -m annotation annotators revoke NAME [--db DB]
    python -m annotation handout [--db DB] [--mode open|assigned] [--labels N] [--by NAME]
    python -m annotation demo [--db DB] [--if-empty]
    python -m annotation export [--db DB] --format FORMAT [--annotator NAME] [--aggregate A]
        [--threshold G] [--judge FP] -o PATH    (FORMAT: annotation.exports.FORMATS, e.g.
        golden, qrels, csv, ragas, deepeval, beir, trec, phoenix)

The database is ``--db``, else ``DENOMINATOR_DB``, else ``./denominator.db`` (what the app
and ``make run`` use too). A command that writes names it on stderr; one that only reads
refuses a missing file (``no such database``) instead of creating it.
Each import lands whole or not at all and prints what it added; importing
the same file again changes nothing. Exit codes: 0 success, 2 bad usage or
input (one line on stderr, nothing written).
"""

from __future__ import annotations

from annotation.quiet_start import exit_with, quiet_interrupt_until_main

if __name__ == "__main__":  # Ctrl-C while the modules below import: one line, exit 130
    quiet_interrupt_until_main()

import argparse
import sys
from collections.abc import Sequence

from annotation import actions, exports
from annotation.baseline import METHODS, baseline_text
from annotation.cli_base import (
    OneLineParser,
    UsageError,
    add_db_option,
    interrupt_as_usual,
    open_store,
    plural,
    positive_int,
    run_main,
    shown_db,
)
from annotation.exchange import ImportSources, NothingToImport, login_name
from annotation.imports_cli import (
    add_import_options,
    add_imports_parser,
    cli_import,
    cli_words,
    import_options,
    run_imports,
)
from annotation.options import add_option, option
from annotation.pooling import handout_text
from annotation.store import AGGREGATES, default_db_path
from annotation.store.base import holds_nothing
from denominator.demo import EXAMPLE_DIR, build_demo  # noqa: F401  (EXAMPLE_DIR re-exported for scripts)

DESCRIPTION = (
    "The label store: import data, pool it into items to label, hand out access tokens, "
    "export the labels. Every command works on --db, else $DENOMINATOR_DB, else ./denominator.db."
)


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog="python -m annotation", description=DESCRIPTION)
    sub = parser.add_subparsers(dest="command", required=True, parser_class=OneLineParser)

    imp = sub.add_parser(
        "import",
        help="add a corpus, queries, a run, RAG traces (JSONL, Phoenix, Langfuse or LangSmith), "
        "a BEIR folder or existing labels to the store",
    )
    add_db_option(imp)
    imp.add_argument("--corpus", metavar="FILE", help='chunks, JSONL {"id", "text", "source"?, ...}')
    imp.add_argument("--queries", metavar="FILE", help='queries, JSONL {"id", "text"} or TSV id<TAB>text')
    imp.add_argument(
        "--beir",
        metavar="DIR",
        help="a BEIR folder: corpus.jsonl, queries.jsonl, qrels/*.tsv (labels under beir:<split>)",
    )
    imp.add_argument("--run", metavar="FILE", help="a TREC run or .jsonl rankings (needs --name)")
    imp.add_argument("--name", help="the run's name in the store")
    imp.add_argument(
        "--stage", choices=["fetch", "keep"], default="fetch", help="fetch (stage 1) or keep (rerank)"
    )
    imp.add_argument(
        "--traces",
        metavar="FILE",
        help='RAG traces: JSONL {"id", "query_id", "system", "question", "contexts", "answer"}, '
        "or an export of the tool named by --from",
    )
    imp.add_argument(
        "--from",
        dest="traces_from",
        choices=["jsonl", "openinference", "langfuse", "langsmith"],
        default="jsonl",
        help="what --traces is: the product's JSONL (default), Phoenix/OpenInference spans, "
        "a Langfuse export or LangSmith runs",
    )
    imp.add_argument(
        "--map",
        action="append",
        default=[],
        metavar="KEY=PATH",
        help="where a field lives in the export, e.g. question=inputs.query (repeatable)",
    )
    imp.add_argument("--run-prefix", default="", metavar="P", help="before each imported system's run name")
    imp.add_argument(
        "--labels", metavar="FILE", help="existing judgments: TREC qrels or golden.yaml (needs --annotator)"
    )
    imp.add_argument("--annotator", help="who made the imported labels")
    add_import_options(imp)
    add_imports_parser(sub)

    pl = sub.add_parser("pool", help="the union of every run's top D per query becomes items to label")
    add_db_option(pl)
    add_option(pl, "pool_depth")
    pl.add_argument("--runs", metavar="A,B", help="runs to pool, comma-separated (default: all)")
    pl.add_argument(
        "--annotators", metavar="X,Y", help="assign the new items to these people, comma-separated"
    )
    add_option(
        pl,
        "pool_overlap",
        default=None,
        help=option("pool_overlap").help + " (with two or more --annotators)",
    )
    add_option(pl, "pool_seed")
    pl.add_argument(
        "--estimate",
        type=positive_int,
        metavar="N",
        help="also N sampled unjudged candidates per query beyond the pool, to estimate what the labels missed",
    )
    pl.add_argument(
        "--strata",
        default="50,100,1000",
        metavar="B1,B2,...",
        help="with --estimate: strata of unjudged candidates by best rank, depth+1-B1, B1+1-B2, ... (default 50,100,1000)",
    )
    pl.add_argument(
        "--corpus-stratum",
        action="store_true",
        help="with --estimate: one more stratum of chunks no run returned in its top B_last",
    )

    bl = sub.add_parser("baseline", help="add a lexical run (BM25) over the stored corpus, for pooling")
    add_db_option(bl)
    bl.add_argument("--method", choices=list(METHODS), default="bm25", help="ranking method (default bm25)")
    bl.add_argument("--depth", type=int, default=100, metavar="D", help="chunks kept per query (default 100)")
    bl.add_argument(
        "--name", default="bm25-baseline", help="the run's name in the store (default bm25-baseline)"
    )

    people = sub.add_parser(
        "annotators", help="who may open the app: access tokens and roles (annotator or admin)"
    )
    acts = people.add_subparsers(dest="action", required=True, parser_class=OneLineParser)
    add = acts.add_parser("add", help="give a person a role and an access token (printed once, never stored)")
    add.add_argument("name", help="the person's name, as their labels will carry it")
    add.add_argument(
        "--role",
        choices=["annotator", "admin"],
        required=True,
        help="annotator: the labelling pages and their own progress; admin: every page",
    )
    ls = acts.add_parser("list", help="every annotator: role, access and current labels")
    rv = acts.add_parser("revoke", help="the person's token stops working at once; their labels stay")
    rv.add_argument("name", help="whose token to revoke")
    for p in (add, ls, rv):
        add_db_option(p)

    ho = sub.add_parser(
        "handout", help="how items are handed out: open to whoever asks next, or only as assigned"
    )
    add_db_option(ho)
    add_option(ho, "handout_mode", default=None)
    add_option(ho, "handout_labels", default=None)
    ho.add_argument("--by", default="", metavar="NAME", help="who sets it (default: your login name)")

    dm = sub.add_parser("demo", help="build the demo database from examples/worked-example")
    add_db_option(dm)
    dm.add_argument(
        "--if-empty",
        action="store_true",
        help="only when the database is missing or holds no data (what make run does)",
    )

    mg = sub.add_parser(
        "migrate",
        help="copy every table of one store into another, empty one (SQLite to PostgreSQL or back), "
        "verified table by table",
    )
    mg.add_argument(
        "--from",
        dest="source",
        required=True,
        metavar="DB",
        help="the store to copy (a file or a postgresql:// URL)",
    )
    mg.add_argument(
        "--to",
        dest="target",
        required=True,
        metavar="DB",
        help="the empty store to copy into (created when a missing file)",
    )

    exp = sub.add_parser(
        "export",
        help="write the current labels as "
        + ", ".join(
            f"{f.name} (a folder)" if f.writes == "folder" else f.name for f in exports.FORMATS.values()
        ),
    )
    add_db_option(exp)
    exp.add_argument(
        "--format",
        choices=list(exports.FORMATS),
        required=True,
        help="golden.yaml, TREC qrels, every label row as CSV, or a file (folder for beir, trec) "
        "that RAGAS, DeepEval, BEIR, TREC tools or Phoenix load as it is",
    )
    exp.add_argument(
        "--threshold",
        type=int,
        default=1,
        metavar="G",
        help="relevant = grade >= G, for the formats that hold no grades (ragas, deepeval, phoenix labels)",
    )
    exp.add_argument("--judge", metavar="FINGERPRINT", help="phoenix: a judge's grades instead of people's")
    exp.add_argument(
        "--aggregate",
        choices=list(AGGREGATES),
        default="median",
        help="one grade per item from several people: median (lower middle), majority, or mean rounded half up",
    )
    exp.add_argument("--annotator", help="only this person's labels (default: all, aggregated)")
    exp.add_argument(
        "--anonymize",
        action="store_true",
        help="name people by stable pseudonyms (annotator-N, N by the order they were added to the "
        "store) in the file and the summary, in every format",
    )
    exp.add_argument(
        "-o", "--output", required=True, metavar="FILE", help="file to write (replaced atomically)"
    )
    return parser


def run_import(args: argparse.Namespace) -> str:
    sources = ImportSources(
        corpus=args.corpus,
        queries=args.queries,
        beir=args.beir,
        run=args.run,
        name=args.name,
        stage=args.stage,
        traces=args.traces,
        labels=args.labels,
        annotator=args.annotator,
        traces_from=args.traces_from,
        mapping=tuple(args.map),
        run_prefix=args.run_prefix,
        **import_options(args),
    )
    try:
        sources.check()
    except NothingToImport as exc:
        raise UsageError(f"python -m annotation import: {cli_words(exc)}") from None
    with open_store(args.db, "create") as store:
        return "\n".join(cli_import(store, sources)) + "\n"


def run_baseline(args: argparse.Namespace) -> str:
    with open_store(args.db, "write") as store:
        report = actions.baseline(store, method=args.method, depth=args.depth, name=args.name)
    return baseline_text(report) + "\n"


def run_export(args: argparse.Namespace) -> str:
    """The format's declaration (annotation.exports.FORMATS) says which options it takes;
    NothingToExport, a StoreError, ends as one line and exit 2 like any other."""
    with open_store(args.db, "read") as store:
        fmt = exports.export_format(args.format)
        if args.judge and "judge" not in fmt.options:
            raise UsageError(f"--judge goes with --format {'|'.join(exports.formats_taking('judge'))}")
        options = {option: getattr(args, option) for option in exports.OPTIONS}
        return actions.export(store, fmt.name, args.output, **options) + "\n"


def run_annotators(args: argparse.Namespace) -> str:
    mode = {"add": "create", "revoke": "write"}.get(args.action, "read")  # list only reads
    with open_store(args.db, mode) as store:
        if args.action == "add":
            token = actions.annotators(store, "add", name=args.name, role=args.role)
            return (
                f"annotator {args.name.strip()!r} ({args.role}); access token, shown this once:\n{token}\n"
                "open the app with ?token=<token> or paste it at the sign-in prompt\n"
            )
        if args.action == "revoke":
            actions.annotators(store, "revoke", name=args.name)
            return f"revoked the token of {args.name!r}; their labels stay\n"
        listed = actions.annotators(store, "list")
        rows, required = listed["annotators"], listed["tokens_required"]
    if not rows:
        return "no annotators yet\n"
    width = max(len("name"), *(len(r["name"]) for r in rows))

    def line(name: str, role: str, access: str, labels: object) -> str:  # the header's layout is the rows'
        return f"{name:<{width}}  {role:<9}  {access:<7}  {labels}"

    lines = [line("name", "role", "access", "current labels")]
    lines += [line(r["name"], r["role"], r["access"], r["labels"]) for r in rows]
    lines.append(
        "the app asks for a token"
        if required
        else "no token given yet: the app runs in single-user local mode on 127.0.0.1"
    )
    return "\n".join(lines) + "\n"


def run_handout(args: argparse.Namespace) -> str:
    """Without --mode or --labels: how items are handed out now (only reads)."""
    changing = args.mode is not None or args.labels is not None
    with open_store(args.db, "write" if changing else "read") as store:
        mode, labels = actions.handout(
            store, mode=args.mode, labels=args.labels, who=(args.by or "").strip() or login_name()
        )
    return ("set: " if changing else "") + handout_text(mode, labels) + "\n"


def run_pool(args: argparse.Namespace) -> str:
    runs = [r for r in (args.runs or "").split(",") if r] or None
    annotators = [a for a in (args.annotators or "").split(",") if a]
    strata: list[int] = []
    if args.estimate:
        try:
            strata = [int(b) for b in args.strata.split(",") if b.strip()]
        except ValueError:
            raise UsageError(
                f"--strata {args.strata!r}; expected comma-separated ranks, e.g. 50,100,1000"
            ) from None
    elif args.corpus_stratum or args.strata != "50,100,1000":
        raise UsageError("--strata and --corpus-stratum go with --estimate N")
    with open_store(args.db, "write") as store:
        done = actions.pool(
            store,
            args.depth,
            runs=runs,
            annotators=annotators,
            overlap=args.overlap,
            seed=args.seed,
            estimate=args.estimate,
            strata=strata,
            corpus_stratum=args.corpus_stratum,
        )
    report, found, sample = done["pool"], done["found"], done["sample"]
    text = (
        f"pool of depth {report['depth']} over runs {', '.join(report['runs'])}: "
        f"{report['pooled']} (query, chunk) pairs, {report['already_judged']} already judged, "
        f"{report['items_added']} new items"
    )
    if annotators:
        text += (
            f"; {plural(report['assignments'], 'assignment')} to {plural(len(annotators), 'annotator')}, "
            f"{report['doubly_assigned']} of {report['items_assigned']} items given to two of them"
        )
    if sample is not None and sample["sampled"]:
        text += (
            f"; for the estimate, {sample['sampled']} unjudged candidates sampled over {sample['queries']} queries ("
            + ", ".join(
                f"{'ranks ' if name[0].isdigit() else ''}{name}: {k} of {sample['candidates'][name]}"
                for name, k in sorted(sample["strata"].items())
            )
            + "), mixed into the queues"
        )
    elif sample is not None:
        text += (
            f"; for the estimate, nothing to sample: no run ranks an unjudged chunk below depth {args.depth} "
            "(import runs ranked deeper than the pool, e.g. python -m annotation baseline, or add --corpus-stratum)"
        )
    for row in found:  # if one run finds most relevant chunks alone, the labels lean toward it
        text += (
            f"\n  {row['run']}: {row['pooled']} pairs in its top {args.depth}; found "
            f"{row['relevant_found']} of the {row['relevant_judged']} judged-relevant chunks, "
            f"{row['found_only_here']} of them found by no other run"
        )
    for warning in report["warnings"]:
        print(f"warning: {warning}", file=sys.stderr)
    return text + "\n"


def run_demo(args: argparse.Namespace) -> str:
    """The demo into the database; with ``--if-empty`` only when it is missing or holds no data
    (``make run``: a database that holds anything is served as it is)."""
    path = args.db or default_db_path()
    if args.if_empty and not holds_nothing(path):
        return f"database {shown_db(path)} already holds data: the demo is not added\n"
    with open_store(path, "create"):  # said on stderr once the demo is built
        return build_demo(path, with_judge=True)


def run_migrate(args: argparse.Namespace) -> str:
    """Every table of ``--from`` into the empty ``--to`` (:func:`annotation.store.transfer.copy_store`)."""
    with open_store(args.source, "read") as source, open_store(args.target, "create") as target:
        copied = actions.migrate(
            source, target, progress=lambda table, n: print(f"  {table}: {n:,}", file=sys.stderr)
        )
    rows = sum(t.rows for t in copied)
    lines = [
        f"copied {len(copied)} tables, {rows:,} rows, from {shown_db(args.source)} to {shown_db(args.target)}:"
    ]
    lines += [
        f"  {t.table:<17} {t.rows:>10,} rows  sha256 {t.checksum[:16]}  equal on both sides" for t in copied
    ]
    return "\n".join(lines) + "\n"


COMMANDS = {
    "import": run_import,
    "pool": run_pool,
    "baseline": run_baseline,
    "annotators": run_annotators,
    "handout": run_handout,
    "imports": run_imports,
    "demo": run_demo,
    "migrate": run_migrate,
    "export": run_export,
}


def main(argv: Sequence[str] | None = None) -> int:
    interrupt_as_usual()
    return run_main(build_parser(), lambda args: (COMMANDS[args.command](args), 0), argv)


if __name__ == "__main__":
    exit_with(main)
