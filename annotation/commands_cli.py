"""The commands of ``python -m annotation``, each a function of the parsed arguments that
returns its standard output: imported by :mod:`annotation.__main__` only once a command runs
(the parser is :mod:`annotation.cli_args`)."""

from __future__ import annotations

import argparse
import os
import sys
from urllib.parse import urlsplit

from annotation import actions, exports
from annotation.cli_base import Access, UsageError, open_store, plural, shown_db
from annotation.commands_text import baseline_text, guidelines_text, handout_text
from annotation.exchange import ImportSources, NothingToImport
from annotation.imports_cli import cli_import, cli_words, import_options, run_imports
from annotation.options import default, login_name
from annotation.store import AnnotatorRow
from annotation.store.providers import mappable, unmappable
from annotation.values import SMALL_FILE, origin, ranks, read_small_file, sign_in_link

__all__ = ["COMMANDS", "run"]


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


URL_ENV = "DENOMINATOR_URL"  # the app's address as people open it, for whole sign-in links


def app_url(given: str | None) -> str | None:
    """``--url``, else ``$DENOMINATOR_URL``, else None: the app's address as people open it (an
    http(s) address; a path is kept, for a server under a prefix). Anything else is a UsageError
    before the store is written."""
    url = (given if given is not None else os.environ.get(URL_ENV, "")).strip()
    if not url:
        return None
    where = "--url" if given is not None else f"${URL_ENV}"
    parts = urlsplit(url)
    if origin(url) is None or parts.query or parts.fragment:
        raise UsageError(f"{where}: expected the app's http:// or https:// address, got {url!r}")
    return url.rstrip("/")


def shown_token(token: str, url: str | None) -> str:
    if url is not None:
        return f"sign-in link, shown this once:\n{sign_in_link(url, token)}\n"
    return (
        f"access token, shown this once:\n{token}\n"
        "open the app with ?token=<token> or paste it at the sign-in prompt "
        "(with --url, the whole link is printed)\n"
    )


def run_annotators(args: argparse.Namespace) -> str:
    modes: dict[str, Access] = {
        "add": "create",
        "link": "write",
        "revoke": "write",
        "reviewer": "write",
        "map-claim": "create",
    }
    mode = modes.get(args.action, "read")  # list only reads
    if args.action == "map-claim":
        return map_claim(args, mode)
    url = app_url(args.url) if args.action in ("add", "link") else None  # before the store opens
    with open_store(args.db, mode) as store:
        if args.action == "add":
            name = args.name.strip()
            if args.email is not None or args.subject is not None:
                actions.annotators(
                    store, "add", name=name, role=args.role, email=args.email, subject=args.subject
                )
                way = " and ".join(
                    f"{what} {value.strip().lower() if what == 'e-mail' else value.strip()}"
                    for what, value in (("e-mail", args.email), ("subject", args.subject))
                    if value is not None
                )
                return f"annotator {name!r} ({args.role}) signs in with the provider as {way}\n"
            token = actions.annotators(store, "add", name=name, role=args.role)
            assert token is not None  # neither --email nor --subject: a token
            return f"annotator {name!r} ({args.role}); " + shown_token(token, url)
        if args.action == "link":
            token = actions.annotators(store, "renew", name=args.name)
            return f"annotator {args.name!r}: a new token (the old one stopped); " + shown_token(token, url)
        if args.action == "reviewer":
            role = actions.annotators(store, "reviewer", name=args.name, remove=args.off)
            return f"annotator {args.name!r} is now a{'n' if role == 'annotator' else ''} {role}\n"
        if args.action == "revoke":
            ended = actions.annotators(store, "revoke", name=args.name)
            return f"revoked the {' and the '.join(ended)} of {args.name!r}; their labels stay\n"
        listed = actions.annotators(store, "list")
        rows, required, rules = listed["annotators"], listed["tokens_required"], listed["claim_rules"]
    if not rows and not rules:
        return "no annotators yet\n"
    width = max([len("name"), *(len(r["name"]) for r in rows)])

    def line(name: str, role: str, access: str, labels: object, provider: str = "") -> str:
        return f"{name:<{width}}  {role:<9}  {access:<7}  {labels!s:<14}  {provider}".rstrip()

    def signs_in(row: AnnotatorRow) -> str:  # the provider's way in, when the person has one
        way = row["email"] or (f"subject {row['subject']}" if row["subject"] else "")
        return f"{way} (revoked)" if way and row["provider"] == "revoked" else way

    lines = [line("name", "role", "access", "current labels", "provider" if any(map(signs_in, rows)) else "")]
    lines += [line(r["name"], r["role"], r["access"], r["labels"], signs_in(r)) for r in rows]
    lines += [
        f"claim rule: {r['claim']}={r['value']} adds people as {r['role']} (by {r['who']})"
        if mappable(r["claim"])  # a rule stored before the allow list: shown, matching no one
        else f"claim rule: {r['claim']}={r['value']} (by {r['who']}) is ignored: {r['claim']} is not a claim "
        f"a rule may name (drop it: annotators map-claim {r['claim']}={r['value']} --remove)"
        for r in rules
    ]
    providers = any(signs_in(r) for r in rows) or rules
    lines.append(
        (
            "the app asks for a token or a sign-in with the provider"
            if providers
            else "the app asks for a token"
        )
        if required
        else "no token given yet: the app runs in single-user local mode on 127.0.0.1 (unless a provider is configured)"
    )
    return "\n".join(lines) + "\n"


def map_claim(args: argparse.Namespace, mode: Access) -> str:
    """``annotators map-claim CLAIM=VALUE --role ROLE`` (or ``--remove``): the rules after it."""
    claim, sep, value = args.rule.partition("=")
    if not sep or not claim.strip() or not value.strip():
        raise UsageError(f"map-claim takes CLAIM=VALUE (e.g. groups=labellers), not {args.rule!r}")
    if args.remove == (args.role is not None):
        raise UsageError("map-claim takes --role ROLE, or --remove to drop the rule")
    if not args.remove and not mappable(claim.strip()):  # refused before the store is opened
        raise UsageError(unmappable(claim.strip()))
    with open_store(args.db, "write" if args.remove else mode) as store:
        actions.annotators(
            store,
            "map-claim",
            claim=claim,
            value=value,
            role=args.role,
            remove=args.remove,
            who=(args.by or "").strip() or login_name(),
        )
    if args.remove:
        return f"removed the claim rule {claim.strip()}={value.strip()}; the people it added stay\n"
    return (
        f"claim rule: a person whose ID token carries {claim.strip()}={value.strip()} is added at first "
        f"sign-in as {args.role}, named by their verified e-mail\n"
    )


def run_handout(args: argparse.Namespace) -> str:
    """Without --mode or --labels: how items are handed out now (only reads)."""
    changing = args.mode is not None or args.labels is not None
    with open_store(args.db, "write" if changing else "read") as store:
        mode, labels = actions.handout(
            store, mode=args.mode, labels=args.labels, who=(args.by or "").strip() or login_name()
        )
    return ("set: " if changing else "") + handout_text(mode, labels) + "\n"


def run_guidelines(args: argparse.Namespace) -> str:
    """``show``: the text on stdout (what ``set --file`` reads back), its version on stderr;
    ``set``: a new version from ``--file`` or stdin, said in one line."""
    if args.action == "show":
        with open_store(args.db, "read") as store:
            shown = actions.guidelines(store, "show", rubric=args.rubric, version=args.version)
        print(guidelines_text(shown), file=sys.stderr)
        return shown.text + "\n"
    if args.file is not None:
        try:
            raw = read_small_file(args.file, "--file")
        except OSError as exc:
            raise UsageError(f"--file: {args.file}: {exc.strerror or exc}") from None
    else:
        raw = sys.stdin.buffer.read(SMALL_FILE + 1)
        if len(raw) > SMALL_FILE:
            raise UsageError(f"stdin: more than {SMALL_FILE:,} bytes; at most {SMALL_FILE:,} are read")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UsageError(f"{args.file or 'stdin'}: not UTF-8 text (byte {exc.start})") from None
    with open_store(args.db, "write") as store:
        before = actions.guidelines(store, "show", rubric=args.rubric)
        after = actions.guidelines(
            store, "set", rubric=args.rubric, text=text, who=(args.by or "").strip() or login_name()
        )
    if after.version == before.version:
        return f"unchanged: {guidelines_text(after)} (the same text)\n"
    return f"set: {guidelines_text(after)}\n"


def run_pool(args: argparse.Namespace) -> str:
    runs = [r for r in (args.runs or "").split(",") if r] or None
    annotators = [a for a in (args.annotators or "").split(",") if a]
    if args.holes is not None:
        return pool_holes(args, annotators)
    args.depth = default("pool_depth") if args.depth is None else args.depth
    strata: list[int] = []
    if args.estimate:
        strata = list(args.strata or ranks(default("estimate_strata")))
    elif args.corpus_stratum or args.strata is not None:
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


HOLES_ALONE = (  # pool's options that choose what a pool of runs holds: a hole sample says it itself
    ("depth", "--depth"),
    ("runs", "--runs"),
    ("estimate", "--estimate"),
    ("strata", "--strata"),
    ("corpus_stratum", "--corpus-stratum"),
)


def pool_holes(args: argparse.Namespace, annotators: list[str]) -> str:
    """``pool --holes FILE``: the hole sample's pairs as items; what was queued, in one paragraph."""
    given = [flag for dest, flag in HOLES_ALONE if getattr(args, dest) not in (None, False)]
    if given:
        raise UsageError(
            f"--holes FILE pools the hole sample's own (query, chunk) pairs: it goes without {', '.join(given)}"
        )
    if not annotators:  # unassigned, the holes would go into every open queue (#43)
        raise UsageError(
            "--holes FILE needs the people who label the sample: name them with --annotators X,Y "
            "(without them its holes would go into every open queue)"
        )
    with open_store(args.db, "write") as store:
        done = actions.pool(
            store, holes=args.holes, annotators=annotators, overlap=args.overlap, seed=args.seed
        )
    design, pairs, missing = done["design"], done["pairs"], done["missing"]
    stored = pairs - missing
    runs = design.get("runs")
    named = " and ".join(map(str, runs)) if isinstance(runs, list) and runs else "a run"
    text = (
        f"hole sample {args.holes} (the holes of {named}'s top {design.get('k', '?')}"
        + (
            f" in {design['sample']} of {design['population']} queries, seed {design.get('seed')}"
            if "sample" in design and "population" in design
            else ""
        )
        + f"): {plural(pairs, '(query, chunk) pair')} over {plural(done['queries'], 'query', 'queries')}; "
        f"{missing} of {pairs} not in the store, skipped"
        + (
            f" ({', '.join(done['missing_named'])}{', ...' if missing > len(done['missing_named']) else ''}; "
            "import the corpus and queries first)"
            if missing
            else ""
        )
        + f"; of the {stored} in the store, {done['already_judged']} already judged, "
        f"{done['items_added']} new items, {done['items_existing']} already items (kept, not added again)"
    )
    if annotators:
        text += (
            f"; {plural(done['assignments'], 'assignment')} to {plural(len(annotators), 'annotator')}, "
            f"{done['doubly_assigned']} of {done['items_assigned']} items given to two of them"
        )
    return text + "\n"


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
    "guidelines": run_guidelines,
    "imports": run_imports,
    "migrate": run_migrate,
    "export": run_export,
}


def run(name: str, args: argparse.Namespace) -> str:
    """Command ``name`` on ``args``: what it prints."""
    return COMMANDS[name](args)
