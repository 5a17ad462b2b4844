"""``python -m annotation imports list|retire ID|restore ID`` and what ``import``'s options that
name an import (``--import-name``, ``--by``, ``--yes``; parsed in :mod:`annotation.cli_args`)
become: thin faces over :meth:`Store.imports`,
:meth:`Store.retire_import`, :meth:`Store.restore_import` and
:func:`annotation.exchange.import_files` (the rules: :mod:`annotation.store.retirements`)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from annotation import actions
from annotation.cli_base import UsageError, open_store, plural
from annotation.commands_text import import_state_text, retirement_text, rows_text
from annotation.exchange import (
    ImportSources,
    NothingToImport,
    WrongSlot,
)
from annotation.options import login_name

if TYPE_CHECKING:
    from annotation.store import ImportRecord, Store

__all__ = [
    "import_options",
    "cli_import",
    "cli_words",
    "run_imports",
]


def import_options(args: argparse.Namespace) -> dict[str, Any]:
    """The :class:`ImportSources` fields of :func:`add_import_options`."""
    return {"import_name": args.import_name, "who": args.by or login_name(), "confirmed": args.yes}


# what a NothingToImport is about, as this command names it (the Data page names its boxes)
FLAGS = {
    "name": "--name",
    "annotator": "--annotator",
    "stage": "--stage",
    "traces_from": "--from",
    "mapping": "--traces FILE --from ...",
    "files": "--corpus, --queries, --beir, --run, --traces or --labels",
}


def cli_words(exc: NothingToImport) -> str:
    """The refusal with the flag it is about: ``a run needs a name (--name)``."""
    flag = FLAGS.get(exc.field)
    return f"{exc} ({flag})" if flag else str(exc)


def cli_import(store: Store, sources: ImportSources) -> list[str]:
    """:func:`import_files`; a file that looks like another slot is refused with the flag that
    imports it anyway (exit 2)."""
    try:
        return actions.import_(store, sources)
    except WrongSlot as exc:
        raise UsageError(f"{exc} (--yes imports it as {exc.slot} anyway)") from None


def run_imports(args: argparse.Namespace) -> str:
    with open_store(args.db, "read" if args.action == "list" else "write") as store:
        if args.action == "list":
            return _list(actions.imports(store))
        done = actions.imports(
            store, args.action, import_id=args.id, who=args.by or login_name(), reason=args.reason
        )
    text = retirement_text(done, args.action)
    if done["changed"] and args.action == "retire":
        text += f"; python -m annotation imports restore {done['id']} brings them back"
    return text + "\n"


def _list(imports: list[ImportRecord]) -> str:
    if not imports:
        return "no imports yet\n"
    table = [("id", "when (UTC)", "kind", "who", "state", "rows", "name")]
    for row in imports:
        table.append(
            (
                str(row["id"]),
                row["created_at"][:19],
                row["kind"],
                row["who"],
                import_state_text(row),
                rows_text(row["rows"]),
                row["name"],
            )
        )
    widths = [max(len(r[c]) for r in table) for c in range(len(table[0]) - 1)]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(r[:-1], widths)) + "  " + r[-1] for r in table]
    retired = sum(1 for r in imports if r["state"] == "retired")
    lines.append(f"{plural(len(imports), 'import')}, {retired} retired")
    return "\n".join(lines) + "\n"
