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
"""

from __future__ import annotations

import csv
import io
import json
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from annotation.formats import Qrels, write_atomic
from annotation.rubrics import RELEVANCE
from annotation.store import AGGREGATES, Store, StoreError

__all__ = [
    "PathLike",
    "NothingToExport",
    "Judged",
    "check_annotator",
    "check_args",
    "current_qrels",
    "judged_grades",
    "settled_words",
    "jsonl_record",
    "write_csv",
]

PathLike = str | os.PathLike


class NothingToExport(StoreError):
    """Nothing in the store that this format could hold."""


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


def judged_grades(store: Store, threshold: int, annotator: str | None, aggregate: str) -> Judged:
    """The current human relevance grades (Store.export_qrels) and who gave each."""
    check_args(store, threshold, annotator, aggregate)
    qrels = current_qrels(store, annotator, aggregate, "relevance labels")
    names: dict[tuple[str, str], list[str]] = {}
    for label in store.current_labels(annotator):
        names.setdefault((label["query_id"], label["chunk_id"]), []).append(label["annotator"])
    who = sorted({name for group in names.values() for name in group})
    return Judged(qrels.grades, names, who, threshold, annotator, aggregate, qrels.meta.get("settled", 0))


def settled_words(n: int) -> str:
    """How many items of an export an admin settled, in words ("1 item settled by an admin")."""
    return f"{n} item{'' if n == 1 else 's'} settled by an admin (the settled grade, not the aggregate)"


def jsonl_record(obj: Any) -> str:
    """One JSON object per line, UTF-8 as is; the characters some readers take
    for line ends (U+2028, U+2029, NEL) escaped, so each object stays on its line."""
    text = json.dumps(obj, ensure_ascii=False)
    for char in ("\u2028", "\u2029", "\x85"):
        text = text.replace(char, f"\\u{ord(char):04x}")
    return text + "\n"


def write_csv(path: PathLike, header: Sequence[str], rows: Iterable[Sequence[Any]]) -> None:
    """A header and rows as CSV (``\\n`` line ends), written atomically."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)
    write_atomic(path, out.getvalue())
