"""``python -m calibration project``: its face (#44), from the parsed arguments to (text, exit code).

The projected set (golden.yaml, TREC qrels or JSON) goes to ``-o FILE``, written atomically, and
the report to stdout; without ``-o`` the set goes to stdout and the report to stderr."""

from __future__ import annotations

import argparse
import sys

from annotation.cli_base import UsageError, plural
from annotation.formats.atomic import write_atomic
from annotation.formats.by_extension import read_judgments
from annotation.formats.chunks import read_chunks, read_documents
from annotation.formats.golden import write_golden
from annotation.formats.trec import write_qrels
from calibration import actions
from calibration.commands_text import dumps
from calibration.projection import Projection

__all__ = ["project_text", "project_json", "run", "run_project"]


def _share(part: int, whole: int) -> str:
    """``kept / all characters (share)``; no evidence: said, never 0."""
    if whole == 0:
        return "no evidence characters to keep (undefined)"
    return f"{part:,} / {whole:,} characters ({part / whole:.3f})"


def project_text(result: Projection, golden: str, chunks: str) -> str:
    """The report: per source, queries, chunks decided, holes, unjudged, evidence kept; the holes."""
    lines = [
        f"projected {golden} onto {chunks} ({plural(result.chunks, 'chunk')}): "
        f"min-overlap {result.min_overlap:g}, relevant at grade >= {result.min_grade}"
    ]
    ev = result.totals("evidence")
    if ev["queries"]:
        lines.append(
            f"from evidence: {plural(ev['queries'], 'query', 'queries')}; {ev['decided']:,} chunks touch "
            f"the evidence: {ev['relevant']:,} relevant, {ev['irrelevant']:,} below the bar (grade 0); "
            "every other chunk is irrelevant by the evidence (not written)"
        )
        lines.append(f"  evidence kept in relevant chunks: {_share(ev['kept'], ev['evidence_chars'])}")
    gr = result.totals("grades")
    if gr["queries"]:
        touched = gr["decided"] + gr["holes"]
        lines.append(
            f"from grades: {plural(gr['queries'], 'query', 'queries')}; {gr['decided']:,} of {touched:,} "
            f"chunks the labels touch decided ({gr['relevant']:,} relevant, {gr['irrelevant']:,} not), "
            f"{gr['holes']:,} holes; {gr['unjudged']:,} chunk-query pairs no label touches (unjudged)"
        )
        lines.append(f"  evidence kept in relevant chunks: {_share(gr['kept'], gr['evidence_chars'])}")
    holed = {qid: p.holes for qid, p in result.queries.items() if p.holes}
    if holed:
        lines.append(
            f"holes (the labels touch them but cannot decide them; for the judge and a sample): "
            f"{sum(len(h) for h in holed.values()):,} over {plural(len(holed), 'query', 'queries')}"
        )
        lines.extend(f"  {qid}: {' '.join(holes)}" for qid, holes in holed.items())
    return "\n".join(lines) + "\n"


def project_json(result: Projection) -> str:
    """The projection as JSON: the settings, the totals per source, each query's grades and holes."""
    return dumps(
        {
            "chunks": result.chunks,
            "min_overlap": result.min_overlap,
            "min_grade": result.min_grade,
            "totals": {source: result.totals(source) for source in ("evidence", "grades")},
            "queries": {
                qid: {
                    "source": p.source,
                    "grades": p.grades,
                    "holes": p.holes,
                    "unjudged": p.unjudged,
                    "evidence_kept": p.kept,
                    "evidence_chars": p.evidence_chars,
                }
                for qid, p in result.queries.items()
            },
        },
        one_line=(),
    )


def run_project(args: argparse.Namespace) -> tuple[str, int]:
    documents = read_documents(args.docs) if args.docs else None
    golden = read_judgments(args.golden)
    chunks = read_chunks(args.chunks, documents)
    from_chunks = read_chunks(args.from_chunks, documents) if args.from_chunks else None
    result = actions.project(
        golden,
        chunks,
        from_chunks=from_chunks,
        min_overlap=args.min_overlap,
        source=args.source,
        min_grade=args.min_grade,
        chunks_name=args.chunks,
        from_chunks_name=args.from_chunks or "--from-chunks",
    )
    report = project_text(result, args.golden, args.chunks)
    if args.format == "json":
        if args.output:
            write_atomic(args.output, project_json(result))
            return report + f"wrote the projected set (json) to {args.output}\n", 0
        print(report, end="", file=sys.stderr)
        return project_json(result), 0
    if not args.output:
        raise UsageError(f"python -m calibration project --format {args.format}: give -o FILE to write it")
    if args.format == "qrels":
        write_qrels(result.golden, args.output)
    else:
        write_golden(result.golden, args.output)
    return report + f"wrote the projected set ({args.format}) to {args.output}\n", 0


def run(name: str, args: argparse.Namespace) -> tuple[str, int]:
    """The ``project`` command (:func:`annotation.cli_base.lazy_commands` calls it by name)."""
    if name != "project":
        raise UsageError(f"python -m calibration: no command {name!r} here")
    return run_project(args)
