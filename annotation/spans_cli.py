"""``python -m annotation chunk`` and ``import-chroma`` (#44): their face, from the parsed arguments
to the text printed. Neither opens the store: they write a chunks file and a golden.yaml."""

from __future__ import annotations

import argparse

from annotation import actions
from annotation.cli_base import UsageError, plural

__all__ = ["run"]


def run_chunk(args: argparse.Namespace) -> str:
    done = actions.chunk(args.docs, args.output, size=args.size, overlap=args.overlap, by=args.by)
    how = (
        f"paragraphs, at most {args.size} characters"
        if args.by == "paragraph"
        else f"{args.size} characters, overlap {args.overlap}"
    )
    lines = [
        f"wrote {plural(done['chunks'], 'chunk')} of {plural(done['documents'], 'document')} ({how}) to {done['output']}",
        f"read as documents: {_names(done['read'])}",
    ]
    if done["left"]:
        lines.append(
            f"skipped, not files (subfolders are not read; give a subfolder itself to read its files): "
            f"{_names(done['left'])}"
        )
    return "\n".join(lines) + "\n"


def _names(names: list[str], shown: int = 5) -> str:
    """The first ``shown`` names, then how many more."""
    more = len(names) - shown
    return ", ".join(names[:shown]) + (f" and {more} more" if more > 0 else "")


def run_import_chroma(args: argparse.Namespace) -> str:
    done = actions.import_chroma(args.questions, args.corpora, args.output, grade=args.grade)
    return (
        f"wrote {plural(done['queries'], 'query', 'queries')} with {plural(done['spans'], 'evidence span')} "
        f"(grade {args.grade}) to {done['output']}\n"
    )


def run(name: str, args: argparse.Namespace) -> str:
    """A command by name (:func:`annotation.cli_base.lazy_commands` calls it)."""
    if name == "chunk":
        return run_chunk(args)
    if name == "import-chroma":
        return run_import_chroma(args)
    raise UsageError(f"python -m annotation: no command {name!r} here")
