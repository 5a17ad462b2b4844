"""People's labels: appended, read back as the label that counts (:class:`Labels`).

Labels are never lost or overwritten (DESIGN principle 3): ``labels`` is append-only
(triggers refuse UPDATE and DELETE); a correction is a new row; undo appends a
retraction (a row whose value is NULL); the newest row per (item, annotator) counts.

Every read here counts live rows only (:mod:`annotation.store.retirements`): a label row of a
retired import, or on an item standing on a retired import's rows, is left out, and the newest
*live* row per (item, annotator) counts (the grade a retired label file had covered is back).
"""

from __future__ import annotations

import json
import math
from typing import TYPE_CHECKING, Any

from annotation.choices import AGGREGATES
from annotation.rubrics import get_rubric
from annotation.store.base import StoreError, inserted_id, utc_now
from annotation.store.guidelines import GUIDELINES_IN_FORCE
from annotation.store.identity import Identity
from annotation.store.retirements import live, live_item

if TYPE_CHECKING:  # numpy and pyarrow: the store's opening loads neither (#42)
    from annotation.model import Qrels

__all__ = ["Labels", "AGGREGATES", "aggregate_grades"]


def aggregate_grades(values: list[int], method: str = "median") -> int:
    """One grade from several people's grades of the same item.

    - median: the lower middle value (a grade someone gave);
    - majority: the most frequent grade, ties broken toward the median of the tied grades (lower middle);
    - mean: the mean rounded half up (1.5 -> 2).
    """
    if not values:
        raise StoreError("no grades to aggregate")
    ordered = sorted(values)
    if method == "median":
        return ordered[(len(ordered) - 1) // 2]
    if method == "majority":
        counts = {v: ordered.count(v) for v in ordered}
        top = max(counts.values())
        tied = sorted(v for v, n in counts.items() if n == top)
        return tied[(len(tied) - 1) // 2]
    if method == "mean":
        return int(math.floor(sum(values) / len(values) + 0.5))
    raise StoreError(f"aggregate {method!r}; expected one of {', '.join(AGGREGATES)}")


class Labels(Identity):
    """Human labels: append, undo, and the current label per (item, annotator)."""

    def add_label(
        self,
        item_id: int,
        annotator: str,
        value: int,
        rubric: str = "relevance",
        *,
        note: str | None = None,
        seconds: float | None = None,
        shown: str | None = None,
        annotator_id: int | None = None,
        item_found: bool = False,
    ) -> int:
        """Append a label (a correction is just a newer row), with the version of the rubric's
        guidelines in force as it is written (:mod:`annotation.store.guidelines`); returns its id.
        ``annotator_id``: the id of ``annotator``, when the caller read it (a key press: one round
        trip fewer). ``item_found``: the caller's write, which this label joins, found the item
        already, its lease or its queue (a key press's :meth:`label_refusal`: one round trip fewer
        on PostgreSQL); else a missing item is refused by name here."""
        get_rubric(rubric).check(value)
        if annotator_id is None:
            annotator_id = self.annotator_id(annotator, create=False)
        if item_found and not self.db.conn.in_transaction:
            raise StoreError("add_label(item_found=True) outside the write that found the item")
        with self.write() as db:
            if (
                not item_found
                and db.execute("SELECT 1 FROM items WHERE id = ?", [item_id]).fetchone() is None
            ):
                raise StoreError(f"no item {item_id}")
            cursor = db.execute(
                "INSERT INTO labels (item_id, annotator_id, rubric, value, note, seconds, shown, created_at,"
                f" guidelines) VALUES (?, ?, ?, ?, ?, ?, ?, ?, {GUIDELINES_IN_FORCE})",
                [item_id, annotator_id, rubric, value, note, seconds, shown, utc_now(), rubric],
            )
        return inserted_id(cursor)

    def undo(self, item_id: int, annotator: str) -> int:
        """Retract this annotator's current label on the item by appending a NULL row. The current
        label is their newest *live* row: a grade of a retired label file is none (a retraction
        appended over it would cover it again when the file is restored)."""
        annotator_id = self.annotator_id(annotator, create=False)
        with self.write() as db:
            current = db.execute(
                f"""SELECT value, rubric FROM labels WHERE item_id = ? AND annotator_id = ?
                    AND {live("id", "labels")} ORDER BY id DESC LIMIT 1""",
                [item_id, annotator_id],
            ).fetchone()
            if current is None or current[0] is None:
                raise StoreError(f"{annotator!r} has no label on item {item_id} to undo")
            rubric = current[1]
            cursor = db.execute(
                "INSERT INTO labels (item_id, annotator_id, rubric, value, created_at) VALUES (?, ?, ?, NULL, ?)",
                [item_id, annotator_id, rubric, utc_now()],
            )
        return inserted_id(cursor)

    def my_labels(self, annotator: str, kind: str, limit: int = 20) -> list[dict[str, Any]]:
        """One annotator's current labels on ``kind`` items, newest first (retracted ones left
        out): ``{"label_id", "item_id", "value", "rubric", "created_at"}``, at most ``limit``.
        Only their own rows: what the "your work" list of a labelling page may show."""
        annotator_id = self.annotator_id(annotator, create=False)
        rows = self.db.execute(
            f"""SELECT l.id, l.item_id, l.value, l.rubric, l.created_at
               FROM labels l JOIN items i ON i.id = l.item_id
               WHERE l.annotator_id = ? AND i.kind = ? AND l.value IS NOT NULL AND {live_item("i")} AND l.id = (
                   SELECT max(id) FROM labels m WHERE m.item_id = l.item_id AND m.annotator_id = l.annotator_id
                   AND {live("id", "labels")})
               ORDER BY l.id DESC LIMIT ?""",
            [annotator_id, kind, int(limit)],
        ).fetchall()
        return [
            {"label_id": r[0], "item_id": r[1], "value": r[2], "rubric": r[3], "created_at": r[4]}
            for r in rows
        ]

    def current_labels(self, annotator: str | None = None, kind: str = "chunk") -> list[dict[str, Any]]:
        """The label that counts per (item, annotator): the newest row, retractions dropped.
        Items in insertion order, then annotators by name."""
        where = "AND a.name = ?" if annotator else ""
        params: list[Any] = [kind] + ([annotator] if annotator else [])
        rows = self.db.execute(
            f"""SELECT i.id, i.query_id, i.chunk_id, a.name, l.value, l.rubric
                FROM labels l JOIN items i ON i.id = l.item_id JOIN annotators a ON a.id = l.annotator_id
                WHERE i.kind = ? {where} AND {live_item("i")} AND l.id = (
                    SELECT max(id) FROM labels WHERE item_id = l.item_id AND annotator_id = l.annotator_id
                    AND {live("id", "labels")})
                ORDER BY i.id, a.name""",
            params,
        ).fetchall()
        return [
            {
                "item_id": r[0],
                "query_id": r[1],
                "chunk_id": r[2],
                "annotator": r[3],
                "value": r[4],
                "rubric": r[5],
            }
            for r in rows
            if r[4] is not None
        ]

    def label_origins(self, annotator: str | None = None) -> list[dict[str, Any]]:
        """Where the current chunk labels (one person's or everyone's) came from: one entry per
        annotator and origin, ``{"annotator", "labels": how many, "imported": bool, "source":
        the file imported (None if made here), "meta": the metadata it carried ({} if none)}``,
        by annotator, then the labels made here, then imports in order.

        ``imported`` False: made in this app (the labelling pages). A row an import wrote has
        the time and annotator of its ``label_sets`` row (:meth:`Imports.import_labels` writes
        both in one transaction with one time, to the microsecond); no other row does."""
        rows = self.db.execute(
            f"""SELECT a.name, s.id, s.source, s.meta, count(*)
               FROM labels l JOIN items i ON i.id = l.item_id JOIN annotators a ON a.id = l.annotator_id
               LEFT JOIN label_sets s ON s.annotator_id = l.annotator_id AND s.created_at = l.created_at
               WHERE i.kind = 'chunk' AND l.value IS NOT NULL AND (CAST(? AS TEXT) IS NULL OR a.name = ?) AND {live_item("i")}
                 AND l.id = (SELECT max(id) FROM labels WHERE item_id = l.item_id AND annotator_id = l.annotator_id
                             AND {live("id", "labels")})
               GROUP BY a.name, s.id ORDER BY a.name, s.id IS NOT NULL, s.id""",
            [annotator, annotator],
        ).fetchall()
        return [
            {
                "annotator": name,
                "labels": count,
                "imported": set_id is not None,
                "source": source if set_id is not None else None,
                "meta": _label_set_meta(meta),
            }
            for name, set_id, source, meta, count in rows
        ]

    def export_qrels(self, annotator: str | None = None, aggregate: str = "median") -> Qrels:
        """Current labels as judgments: one annotator's, or one grade per item from
        all annotators' current labels (:func:`aggregate_grades`).

        Adjudication: in the grade from all annotators, an item with a current settlement takes
        its settled grade, whatever the method (:meth:`Browse.settled_chunk_grades`, the store's
        ``browse`` part); ``meta["settled"]`` says how many items did (absent when none). One
        annotator's export is theirs alone: no settlement changes it.

        Disagreement is kept: ``meta["disputed"]`` (absent when none) maps each query to its items
        whose people gave different grades, ``{"chunk", "grades": {name: grade}, "aggregate": the
        method's grade}`` plus ``"settled": grade`` when an admin settled the item (the grade the
        export gives it), items in label order."""
        by_item: dict[tuple[str, str], dict[str, int]] = {}
        for label in self.current_labels(annotator):
            by_item.setdefault((label["query_id"], label["chunk_id"]), {})[label["annotator"]] = label[
                "value"
            ]
        settled = {} if annotator else self.settled_chunk_grades()  # type: ignore[attr-defined]
        grades: dict[str, dict[str, int]] = {}
        disputed: dict[str, list[dict[str, Any]]] = {}
        for (qid, doc), given in by_item.items():
            grade = aggregate_grades(list(given.values()), aggregate)
            grades.setdefault(qid, {})[doc] = settled.get((qid, doc), grade)
            if len(set(given.values())) > 1:
                dispute: dict[str, Any] = {"chunk": doc, "grades": dict(given), "aggregate": grade}
                if (qid, doc) in settled:
                    dispute["settled"] = settled[(qid, doc)]
                disputed.setdefault(qid, []).append(dispute)
        texts = {
            qid: text
            for qid, text in self.db.execute(
                f"SELECT id, text FROM queries WHERE text IS NOT NULL AND {live('id', 'queries')}"
            ).fetchall()
            if qid in grades
        }
        from annotation.model import Qrels  # start-up: numpy and pyarrow (0.25 s), the exports only

        qrels = Qrels(grades=grades, texts=texts, path=self.path)
        n_settled = sum(1 for key in by_item if key in settled)
        if n_settled:
            qrels.meta["settled"] = n_settled
        multi_rated = sum(1 for given in by_item.values() if len(given) > 1)
        if multi_rated:  # items several people graded: what the disputed are a fraction of
            qrels.meta["multi_rated"] = multi_rated
        if disputed:
            qrels.meta["disputed"] = disputed
        return qrels

    # ------------------------------------------------------------ what the workflows read of labels

    def label_history(self, annotator: str | None = None) -> list[tuple[Any, ...]]:
        """Every label row (retractions included, value None), one person's or everyone's, by
        row id: (label id, item id, kind, query id, chunk id, trace id, trace B id, annotator,
        rubric, value, note, seconds, shown, created at). The CSV export writes them as they are."""
        return self.db.execute(
            f"""SELECT l.id, l.item_id, i.kind, i.query_id, i.chunk_id, i.trace_id, i.trace_b_id,
                      a.name, l.rubric, l.value, l.note, l.seconds, l.shown, l.created_at
               FROM labels l JOIN items i ON i.id = l.item_id JOIN annotators a ON a.id = l.annotator_id
               WHERE (CAST(? AS TEXT) IS NULL OR a.name = ?) AND {live("l.id", "labels")} AND {live_item("i")} ORDER BY l.id""",
            [annotator, annotator],
        ).fetchall()

    def labels_after(
        self, after: int, limit: int, annotator: str | None = None, kind: str | None = None
    ) -> list[tuple[Any, ...]]:
        """The labels that count (the newest live row per (item, annotator), retractions left out),
        one person's or everyone's, on ``kind`` items or all, whose row id is past ``after``: at most
        ``limit``, by row id. Polled with the last id read, each new or corrected label comes once
        (a correction is a newer row). Rows: (label id, item id, kind, query id, chunk id, trace id,
        trace B id, annotator, rubric, value, note, created at)."""
        return self.db.execute(
            f"""SELECT l.id, l.item_id, i.kind, i.query_id, i.chunk_id, i.trace_id, i.trace_b_id,
                       a.name, l.rubric, l.value, l.note, l.created_at
                FROM labels l JOIN items i ON i.id = l.item_id JOIN annotators a ON a.id = l.annotator_id
                WHERE l.id > ? AND (CAST(? AS TEXT) IS NULL OR a.name = ?)
                  AND (CAST(? AS TEXT) IS NULL OR i.kind = ?) AND {live_item("i")}
                  AND l.value IS NOT NULL AND l.id = (
                      SELECT max(id) FROM labels m WHERE m.item_id = l.item_id AND m.annotator_id = l.annotator_id
                      AND {live("m.id", "labels")})
                ORDER BY l.id LIMIT ?""",
            [int(after), annotator, annotator, kind, kind, int(limit)],
        ).fetchall()

    def annotators_with_labels(self) -> list[str]:
        """The names of everyone with a label row (a retraction counts), by name."""
        return [
            r[0]
            for r in self.db.execute(
                f"""SELECT DISTINCT a.name FROM labels l JOIN annotators a ON a.id = l.annotator_id
                    JOIN items i ON i.id = l.item_id WHERE {live("l.id", "labels")} AND {live_item("i")} ORDER BY a.name"""
            )
        ]

    def labelled_chunk_pairs(self) -> set[tuple[str, str]]:
        """(query, chunk) of every chunk item that any label row grades (a value, current or
        not): what a pool need not ask again and an estimate must not sample."""
        return {
            (q, c)
            for q, c in self.db.execute(
                f"""SELECT DISTINCT i.query_id, i.chunk_id FROM items i JOIN labels l ON l.item_id = i.id
                   WHERE i.kind = 'chunk' AND l.value IS NOT NULL AND {live("l.id", "labels")} AND {live_item("i")}"""
            ).fetchall()
        }

    def newest_labels_shown(self, rubric: str, kind: str) -> list[tuple[int, str, int | None, str | None]]:
        """(item, annotator, value, shown) of the newest label row per (item, annotator) on
        ``kind`` items, where that row is of ``rubric``; a retraction has value None. ``shown``
        is the order a pair was shown in (AB or BA)."""
        return self.db.execute(
            f"""SELECT l.item_id, a.name, l.value, l.shown FROM labels l
               JOIN annotators a ON a.id = l.annotator_id JOIN items i ON i.id = l.item_id
               WHERE l.rubric = ? AND i.kind = ? AND {live_item("i")} AND l.id = (
                   SELECT max(id) FROM labels m WHERE m.item_id = l.item_id AND m.annotator_id = l.annotator_id
                   AND {live("id", "labels")})""",
            [rubric, kind],
        ).fetchall()

    def newest_rubric_values(self, kind: str, rubric: str) -> list[tuple[int, int | None]]:
        """(item, value) of each annotator's newest ``rubric`` row on ``kind`` items (a
        retraction has value None), by item id."""
        return self.db.execute(
            f"""SELECT l.item_id, l.value FROM labels l JOIN items i ON i.id = l.item_id
               WHERE i.kind = ? AND l.rubric = ? AND {live_item("i")} AND l.id = (
                   SELECT max(id) FROM labels
                   WHERE item_id = l.item_id AND annotator_id = l.annotator_id AND rubric = l.rubric
                   AND {live("id", "labels")})
               ORDER BY l.item_id""",
            [kind, rubric],
        ).fetchall()


def _label_set_meta(text: str | None) -> dict[str, Any]:
    """A label set's stored metadata ({} if none), grade scale keys as the integers they are."""
    if not text:
        return {}
    meta: dict[str, Any] = json.loads(text)
    if "grade_scale" in meta:  # JSON keys are text; grades are integers
        meta["grade_scale"] = {int(k): v for k, v in meta["grade_scale"].items()}
    return meta
