"""What every export shares: the one :class:`NothingToExport`, the checks of the
common arguments, the current human grades with who gave them
(:class:`Judged`), and the JSONL and CSV writers.

Common arguments of the relevance formats:

threshold  the lowest grade that counts as relevant (1-3, default 1, like
           trec_eval's ``-l``). Binary formats (RAGAS's and DeepEval's
           reference contexts, Phoenix's label) apply it; graded formats
           (BEIR, TREC qrels) keep every grade 0-3 and the summary says how
           to pass the threshold to their evaluators.
annotator  one person's current labels; default: every annotator's, one
           grade per (query, chunk) by ``aggregate`` (median, majority or
           mean), exactly as :meth:`Store.export_qrels` gives them.
anonymize  (every format) people named by stable pseudonyms, ``annotator-N``
           (:func:`export_names`), in the file and the summary line.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from annotation.choices import AGGREGATE_RULES
from annotation.formats.atomic import write_atomic
from annotation.model import Qrels
from annotation.rubrics import RELEVANCE
from annotation.store import AGGREGATES, Store, StoreError

__all__ = [
    "PathLike",
    "NothingToExport",
    "Names",
    "export_names",
    "naming_clause",
    "Judged",
    "check_annotator",
    "check_args",
    "current_qrels",
    "judged_grades",
    "settled_words",
    "disagreement_words",
    "jsonl_record",
    "FORMULA_STARTS",
    "spreadsheet_safe",
    "write_csv",
]

PathLike = str | os.PathLike[str]


class NothingToExport(StoreError):
    """Nothing in the store that this format could hold."""


@dataclass(frozen=True)
class Names:
    """How an export names people: as they are (``pseudonyms`` None), or by pseudonym."""

    pseudonyms: dict[str, str] | None = None  # name -> pseudonym, in annotator id order

    @property
    def anonymized(self) -> bool:
        return self.pseudonyms is not None

    def __call__(self, name: str) -> str:
        # every annotator of the store has a pseudonym: a name without one is a bug, not a name to leak
        return name if self.pseudonyms is None else self.pseudonyms[name]

    def sorted(self, names: Iterable[str]) -> list[str]:
        """Names as written (each once): real ones by name, pseudonyms by their number."""
        if self.pseudonyms is None:
            return sorted(set(names))
        order = {pseudonym: n for n, pseudonym in enumerate(self.pseudonyms.values())}
        return sorted(set(names), key=order.__getitem__)


PSEUDONYM = "annotator-{}"


def export_names(store: Store, anonymize: bool) -> Names:
    """Real names, or with ``anonymize`` each annotator of the store as ``annotator-N``, N their
    place in the order they were added (annotator id). Stable: an annotator is never removed and
    ids only grow, so one person has one pseudonym in every export of a store, whoever joins
    later; the pseudonyms say nothing of the names (a hash of a name could be reversed by trying
    names, a keyed one would need a secret kept beside the store). Other stores number their own."""
    if not anonymize:
        return Names()
    people = sorted(
        (store.annotator_id(person["name"], create=False), person["name"]) for person in store.annotators()
    )
    return Names({name: PSEUDONYM.format(n) for n, (_, name) in enumerate(people, 1)})


def naming_clause(names: Names, who: Sequence[str], where: str, free_text: str = "") -> str:
    """The summary's clause for a file that names people (``who``, as written) in ``where``:
    that it does, or that the names are pseudonyms; "" when it names no one. ``free_text``:
    what anonymize leaves as people typed it."""
    if not who:
        return ""
    if names.anonymized:
        return (
            f"annotators are named by pseudonyms ({', '.join(who)}) in {where}, annotator-N by the order "
            "people were added to this store, the same in every export of it"
            + (f" ({free_text} written as typed: read them before sharing)" if free_text else "")
        )
    return f"the file names annotators ({', '.join(who)}) in {where}: anonymize to write pseudonyms instead"


@dataclass
class Judged:
    """Current grades per (query, chunk), who gave them, and the threshold."""

    grades: dict[str, dict[str, int]]
    names: dict[tuple[str, str], list[str]]  # (query, chunk) -> who graded it
    who: list[str]  # everyone whose labels are in the export
    threshold: int
    annotator: str | None
    aggregate: str
    settled: int = 0  # items an admin settled: their settled grade, not the aggregate (Store.export_qrels)
    disagreement: str = ""  # how many items had disagreeing people, and the rule (disagreement_words)
    naming: Names = field(default_factory=Names)  # names, annotator and who are already as written

    @property
    def count(self) -> int:
        return sum(len(docs) for docs in self.grades.values())

    def grade(self, qid: str, chunk: str | None) -> int | None:
        return None if chunk is None else self.grades.get(qid, {}).get(chunk)

    def relevant(self, qid: str) -> list[str]:
        """Chunks of the query graded >= threshold: highest grade first, then in label order."""
        docs = self.grades.get(qid, {})
        ranked = sorted(docs.items(), key=lambda kv: -kv[1])  # stable: ties keep label order
        return [doc for doc, grade in ranked if grade >= self.threshold]

    def source(self, pair: tuple[str, str] | None = None) -> str:
        """Who graded (one pair, or the whole export), in words."""
        names = self.names.get(pair, []) if pair else self.who
        if self.annotator:
            return f"{self.annotator}'s label" if pair else f"{self.annotator}'s current labels"
        settled = f", {settled_words(self.settled)}" if self.settled and not pair else ""
        settled += f", {self.disagreement}" if self.disagreement and not pair else ""
        if len(names) == 1:
            return f"{names[0]}'s label" if pair else f"the current labels of {names[0]}{settled}"
        return (
            f"the {self.aggregate} of {', '.join(names)}"
            if pair
            else (f"the {self.aggregate} grade over {len(names)} annotators ({', '.join(names)}){settled}")
        )

    def meta(self) -> dict[str, Any]:
        return {
            "relevance_threshold": self.threshold,
            "judged_by": list(self.who),
            "aggregate": None if self.annotator else self.aggregate,
            "grade_scale": {str(g): text for g, text in RELEVANCE.scale.items()},
        }


def check_annotator(store: Store, annotator: str | None) -> None:
    """StoreError ("no annotator named ...") when a named annotator is not in the store."""
    if annotator:
        store.annotator_id(annotator, create=False)


def check_args(store: Store, threshold: int, annotator: str | None, aggregate: str) -> None:
    """The relevance formats' common arguments, checked before anything is read or written."""
    if isinstance(threshold, bool) or not isinstance(threshold, int) or not 1 <= threshold <= 3:
        raise StoreError(
            f"relevance threshold {threshold!r}; expected the lowest relevant grade, 1, 2 or 3 "
            "(0 is 'irrelevant' on the 0-3 scale)"
        )
    if aggregate not in AGGREGATES:
        raise StoreError(f"aggregate {aggregate!r}; expected one of {', '.join(AGGREGATES)}")
    check_annotator(store, annotator)


def current_qrels(store: Store, annotator: str | None, aggregate: str, what: str) -> Qrels:
    """The current grades (:meth:`Store.export_qrels`); NothingToExport ("no current
    <what> to export [by NAME]") when there is none."""
    qrels = store.export_qrels(annotator, aggregate)
    if not qrels.grades:
        raise NothingToExport(f"no current {what} to export" + (f" by {annotator!r}" if annotator else ""))
    return qrels


def judged_grades(
    store: Store, threshold: int, annotator: str | None, aggregate: str, anonymize: bool = False
) -> Judged:
    """The current human relevance grades (Store.export_qrels) and who gave each, named as the
    export writes them (pseudonyms with ``anonymize``)."""
    check_args(store, threshold, annotator, aggregate)
    qrels = current_qrels(store, annotator, aggregate, "relevance labels")
    naming = export_names(store, anonymize)
    names: dict[tuple[str, str], list[str]] = {}
    for label in store.current_labels(annotator):
        names.setdefault((label["query_id"], label["chunk_id"]), []).append(naming(label["annotator"]))
    if naming.anonymized:  # in pseudonym order, as judged_by lists are
        names = {pair: naming.sorted(group) for pair, group in names.items()}
    who = naming.sorted(name for group in names.values() for name in group)
    return Judged(
        qrels.grades,
        names,
        who,
        threshold,
        naming(annotator) if annotator else None,
        aggregate,
        qrels.meta.get("settled", 0),
        "" if annotator else disagreement_words(qrels.meta, aggregate),
        naming,
    )


def settled_words(n: int) -> str:
    """How many items of an export an admin settled, in words ("1 item settled by an admin")."""
    return f"{n} item{'' if n == 1 else 's'} settled by an admin (the settled grade, not the aggregate)"


def disagreement_words(meta: dict[str, Any], aggregate: str) -> str:
    """How many items of an export (``meta`` of :meth:`Store.export_qrels`) had people giving
    different grades, of how many more than one person graded, and the rule that made them one
    grade (:data:`annotation.choices.AGGREGATE_RULES`); "" when no item had more than one person."""
    multi_rated = meta.get("multi_rated", 0)
    if not multi_rated:
        return ""
    disputes = [d for items in meta.get("disputed", {}).values() for d in items]
    settled = sum(1 for d in disputes if "settled" in d)
    return (
        f"{len(disputes)} of {multi_rated} item{'' if multi_rated == 1 else 's'} graded by more than one "
        f"person had disagreeing grades, aggregated by the {AGGREGATE_RULES[aggregate]}"
        + (f" ({settled} of them settled by an admin, the settled grade kept)" if settled else "")
    )


def jsonl_record(obj: Any) -> str:
    """One JSON object per line, UTF-8 as is; the characters some readers take
    for line ends (U+2028, U+2029, NEL) escaped, so each object stays on its line."""
    text = json.dumps(obj, ensure_ascii=False)
    for char in ("\u2028", "\u2029", "\x85"):
        text = text.replace(char, f"\\u{ord(char):04x}")
    return text + "\n"


# OWASP's advice on CSV injection: a spreadsheet runs a cell that begins with one of these
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")


def spreadsheet_safe(cell: Any) -> Any:
    """A CSV cell that a spreadsheet shows and does not run: text beginning with ``= + - @``,
    TAB or CR gets a leading ``'`` (OWASP), which spreadsheets hide and other readers keep.
    Numbers are left as they are (-1 stays a number), and so is text that is a plain number
    ("-1", "+2.5e3"): no formula can be in it, and an id stays as it was."""
    if isinstance(cell, str) and cell.startswith(FORMULA_STARTS) and not _NUMBER.fullmatch(cell):
        return "'" + cell
    return cell


def write_csv(path: PathLike, header: Sequence[str], rows: Iterable[Sequence[Any]]) -> None:
    """A header and rows as CSV (``\\n`` line ends), written atomically, every cell
    :func:`spreadsheet_safe`. A row with a CR in a text cell has its text cells quoted (Python's
    csv quotes only the line terminator's characters, and a bare CR ends a row for readers)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    quoted = csv.writer(out, lineterminator="\n", quoting=csv.QUOTE_NONNUMERIC)
    writer.writerow(header)
    for row in rows:
        safe = [spreadsheet_safe(cell) for cell in row]
        (quoted if any(isinstance(c, str) and "\r" in c for c in safe) else writer).writerow(safe)
    write_atomic(path, out.getvalue())
