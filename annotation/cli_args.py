"""The parser of ``python -m annotation``: every command and option, built from light modules
only (the options table, the choices, the common options), so ``--help`` and a mistyped option
answer without loading numpy, pyarrow or the store; the commands themselves are in
:mod:`annotation.commands_cli`, imported once a command runs (#27)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, TypeAlias

from annotation.choices import EXPORT_FORMATS
from annotation.cli_base import OneLineParser, add_db_option
from annotation.options import add_option, option
from annotation.rubrics import RUBRICS
from annotation.values import bounded_int, judge_name, positive_int, run_name, small_file

RUBRIC_NAMES = tuple(RUBRICS)

__all__ = ["DESCRIPTION", "build_parser", "add_import_options", "add_imports_parser"]

DESCRIPTION = (
    "The label store: import data, pool it into items to label, hand out access tokens, "
    "export the labels. Every command works on --db, else $DENOMINATOR_DB, else ./denominator.db."
)


if (
    TYPE_CHECKING
):  # the subcommands' container (argparse names its type privately; generic to the checker only)
    Subcommands: TypeAlias = argparse._SubParsersAction[OneLineParser]


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog="python -m annotation", description=DESCRIPTION)
    sub = parser.add_subparsers(dest="command", required=True, parser_class=OneLineParser)
    _add_import(sub)
    _add_pool(sub)
    _add_baseline(sub)
    _add_annotators(sub)
    _add_handout(sub)
    _add_guidelines(sub)
    _add_migrate(sub)
    _add_export(sub)
    _add_chunk(sub)
    _add_import_chroma(sub)
    return parser


def _add_chunk(sub: Subcommands) -> None:
    """``chunk``'s arguments (#44)."""
    ch = sub.add_parser(
        "chunk", help="cut documents into chunks (fixed size or by paragraph): a chunks file with offsets"
    )
    ch.add_argument(
        "docs",
        metavar="PATH",
        nargs="+",
        help="a text file or a folder of them (a document's id is its file name without extension)",
    )
    ch.add_argument("--size", type=positive_int, required=True, metavar="N", help="characters a chunk")
    ch.add_argument(
        "--overlap",
        type=bounded_int(0, 10**9),
        default=0,
        metavar="N",
        help="characters shared with the next chunk (fixed only)",
    )
    ch.add_argument(
        "--by",
        choices=("fixed", "paragraph"),
        default="fixed",
        help="fixed: chunks of --size characters; paragraph: whole lines packed into chunks of at most --size",
    )
    ch.add_argument("-o", "--output", required=True, metavar="FILE", help="the chunks file (JSONL) to write")


def _add_import_chroma(sub: Subcommands) -> None:
    """``import-chroma``'s arguments (#44)."""
    ic = sub.add_parser(
        "import-chroma",
        help="Chroma's chunking-evaluation questions as a golden.yaml of evidence spans",
    )
    ic.add_argument("questions", metavar="QUESTIONS.csv", help="question, references, corpus_id")
    ic.add_argument(
        "--corpora",
        required=True,
        action="append",
        metavar="PATH",
        help="the corpus files (or their folder) the references point into; repeat for several",
    )
    ic.add_argument(
        "--grade",
        type=bounded_int(0, 3, " (the 0-3 scale)"),
        default=2,
        metavar="G",
        help="the grade of every span (default 2)",
    )
    ic.add_argument("-o", "--output", required=True, metavar="FILE", help="the golden.yaml to write")


def _add_import(sub: Subcommands) -> None:
    """``import``'s arguments."""
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
    imp.add_argument("--name", type=run_name, help="the run's name in the store")
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


def _add_pool(sub: Subcommands) -> None:
    """``pool``'s arguments."""
    pl = sub.add_parser(
        "pool",
        help="the union of every run's top D per query becomes items to label; or, with --holes, "
        "a hole sample's (query, chunk) pairs",
    )
    add_db_option(pl)
    add_option(pl, "pool_depth", default=None)  # None: not given (--holes goes without it)
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
    add_option(pl, "estimate_strata", default=None)  # None: not given (it goes with --estimate only)
    pl.add_argument(
        "--corpus-stratum",
        action="store_true",
        help="with --estimate: one more stratum of chunks no run returned in its top B_last",
    )
    pl.add_argument(
        "--holes",
        metavar="FILE",
        help="instead of a pool of runs: the (query, chunk) pairs of a hole sample (python -m calibration "
        "holes --sample N --out FILE) become items, blind as ever; its queries and chunks must be imported "
        "(a pair that is not is skipped and counted); needs --annotators (unassigned, its holes would go "
        "into every open queue); not with --depth, --runs, --estimate",
    )


def _add_baseline(sub: Subcommands) -> None:
    """``baseline``'s arguments."""
    bl = sub.add_parser("baseline", help="add a lexical run (BM25) over the stored corpus, for pooling")
    add_db_option(bl)
    add_option(bl, "baseline_method")
    add_option(bl, "baseline_depth")
    add_option(bl, "baseline_name")


def _add_annotators(sub: Subcommands) -> None:
    """``annotators``'s arguments."""
    people = sub.add_parser(
        "annotators",
        help="who may open the app: access tokens, sign-in with the team's provider, roles (annotator or admin)",
    )
    acts = people.add_subparsers(dest="action", required=True, parser_class=OneLineParser)
    add = acts.add_parser(
        "add",
        help="give a person a role and an access token (printed once, never stored), or with --email "
        "or --subject sign-in with the team's OpenID Connect provider",
    )
    add.add_argument("name", help="the person's name, as their labels will carry it")
    add.add_argument(
        "--role",
        choices=["annotator", "reviewer", "admin"],
        required=True,
        help="annotator: the labelling pages and their own progress; reviewer: those and Review labels "
        "(agree with or correct others' labels); admin: every page",
    )
    add.add_argument(
        "--email",
        metavar="ADDRESS",
        help="signs in with the provider as this e-mail, when the provider says it is verified (no token)",
    )
    add.add_argument(
        "--subject",
        metavar="SUB",
        help="signs in with the provider as this subject (the ID token's sub claim; no token)",
    )
    link = acts.add_parser(
        "link",
        help="a new sign-in link for a person (a fresh token: the old one and its sessions end; "
        "a sign-in with the provider stays)",
    )
    link.add_argument("name", help="whose link")
    for p in (add, link):
        p.add_argument(
            "--url",
            metavar="URL",
            default=None,
            help="the app's address as people open it (e.g. http://127.0.0.1:8502): the token is "
            "printed as a whole sign-in link (default: $DENOMINATOR_URL, else the token alone)",
        )
    ls = acts.add_parser(
        "list", help="every annotator: role, access, current labels, provider sign-in; claim rules"
    )
    rv = acts.add_parser(
        "revoke", help="every way in of the person stops at once (token, provider sign-in); their labels stay"
    )
    rv.add_argument("name", help="whose access to revoke")
    rw = acts.add_parser(
        "reviewer",
        help="let an annotator review others' labels (the role reviewer: the Review labels page), or "
        "take it back with --off; their way in stays",
    )
    rw.add_argument("name", help="whose review rights")
    rw.add_argument("--off", action="store_true", help="take the review rights back (the role annotator)")
    mc = acts.add_parser(
        "map-claim",
        help="a person whose provider's ID token carries CLAIM=VALUE (e.g. groups=labellers) is added "
        "at first sign-in with --role, named by their verified e-mail",
    )
    mc.add_argument("rule", metavar="CLAIM=VALUE", help="a claim of the ID token and one of its values")
    mc.add_argument(
        "--role", choices=["annotator", "admin"], help="the role it gives (required unless --remove)"
    )
    mc.add_argument(
        "--remove", action="store_true", help="the rule goes (people it added stay, with their roles)"
    )
    mc.add_argument("--by", metavar="NAME", help="who sets it (default: your login name)")
    for p in (add, link, ls, rv, rw, mc):
        add_db_option(p)


def _add_handout(sub: Subcommands) -> None:
    """``handout``'s arguments."""
    ho = sub.add_parser(
        "handout", help="how items are handed out: open to whoever asks next, or only as assigned"
    )
    add_db_option(ho)
    add_option(ho, "handout_mode", default=None)
    add_option(ho, "handout_labels", default=None)
    ho.add_argument("--by", default="", metavar="NAME", help="who sets it (default: your login name)")


def _add_guidelines(sub: Subcommands) -> None:
    """``guidelines``'s arguments."""
    gl = sub.add_parser(
        "guidelines",
        help="each rubric's guidelines (grade definitions and worked examples): print them, or set a "
        "new version from a file",
    )
    acts = gl.add_subparsers(dest="action", required=True, parser_class=OneLineParser)
    show = acts.add_parser("show", help="print the guidelines in force (or as at --version) on stdout")
    show.add_argument(
        "--version", type=bounded_int(0, 1_000_000), metavar="N", help="as at version N (0: built in)"
    )
    put = acts.add_parser(
        "set",
        help="a new version of the guidelines from --file (else stdin); the same text adds none",
    )
    put.add_argument("--file", type=small_file, metavar="FILE", help="UTF-8 text (default: stdin)")
    put.add_argument("--by", default="", metavar="NAME", help="who sets them (default: your login name)")
    for p in (show, put):
        p.add_argument("rubric", choices=RUBRIC_NAMES, help="the rubric")
        add_db_option(p)


def _add_migrate(sub: Subcommands) -> None:
    """``migrate``'s arguments."""
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


def _add_export(sub: Subcommands) -> None:
    """``export``'s arguments."""
    exp = sub.add_parser(
        "export",
        help="write the current labels as "
        + ", ".join(
            f"{name} (a folder)" if writes == "folder" else name for name, writes in EXPORT_FORMATS.items()
        ),
    )
    add_db_option(exp)
    exp.add_argument(
        "--format",
        choices=list(EXPORT_FORMATS),
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
    exp.add_argument(
        "--judge",
        type=judge_name,
        metavar="NAME[@VERSION]",
        help="qrels, phoenix: a relevance judge's grades instead of people's: the judge NAME's newest version, "
        "NAME@VERSION (python -m judge list names them), or a FINGERPRINT or its prefix; "
        "a failed call is no grade (left out, counted)",
    )
    add_option(exp, "aggregate")
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


def add_import_options(imp: argparse.ArgumentParser) -> None:
    """``import``'s options that name the import and confirm a file that looks like another slot."""
    imp.add_argument(
        "--import-name", metavar="TEXT", default="", help="the import's name (default: the files it holds)"
    )
    imp.add_argument("--by", metavar="NAME", help="who runs the import (default: your login name)")
    imp.add_argument(
        "--yes",
        action="store_true",
        help="import a queries or corpus file even when its shape looks like the other slot",
    )


def add_imports_parser(sub: Subcommands) -> None:
    """The ``imports`` command and its actions."""
    imports = sub.add_parser(
        "imports", help="what was imported, by whom; take an import back (retire) or bring it back (restore)"
    )
    acts = imports.add_subparsers(dest="action", required=True, parser_class=OneLineParser)
    ls = acts.add_parser(
        "list", help="every import: id, when, kind, who, rows it holds, live or retired, name"
    )
    rt = acts.add_parser(
        "retire", help="take an import back: its rows leave queues, metrics, exports and reviews"
    )
    rs = acts.add_parser("restore", help="bring a retired import back")
    for act in (rt, rs):
        act.add_argument("id", type=positive_int, help="the import's id (imports list)")
        act.add_argument("--by", metavar="NAME", help="who does it (default: your login name)")
        act.add_argument("--reason", metavar="TEXT", help="why, kept with the record")
    for act in (ls, rt, rs):
        add_db_option(act)
