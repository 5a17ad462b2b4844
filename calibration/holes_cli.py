"""``python -m calibration holes``: its face, from the parsed arguments to (text, exit code)."""

from __future__ import annotations

import argparse

from annotation.cli_base import UsageError, say_notes
from annotation.formats.by_extension import read_judgments
from calibration import actions
from calibration.commands_text import dumps
from calibration.holes.files import write_hole_sample
from calibration.holes.holes_text import holes_csv, holes_table

__all__ = ["run_holes"]


def run_holes(args: argparse.Namespace) -> tuple[str, int]:
    if len(args.k) > 1:
        raise UsageError(f"python -m calibration holes: -k given {len(args.k)} times; holes takes one cutoff")
    if args.out and args.sample is None:
        raise UsageError("python -m calibration holes: --out writes the hole sample; give --sample N")
    if len(set(args.run)) != len(args.run):
        raise UsageError("python -m calibration holes: a run is named twice")
    qrels = read_judgments(args.qrels)
    say_notes(qrels.notes)
    # the run files are read by the action (in pieces when grouped by query)
    report = actions.holes(
        qrels,
        [(path, path) for path in args.run],
        args.k[0],
        sample=args.sample,
        seed=args.seed,
        qrels_name=args.qrels,
    )
    if args.out:
        write_hole_sample(report, qrels, args.out)
    if args.format == "json":
        return dumps(report), 0
    if args.format == "csv":
        return holes_csv(report), 0
    return holes_table(report), 0
