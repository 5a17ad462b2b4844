"""The labelling queue and what a page shows of an item (:class:`Queue`).

Blind by construction: these queries read only items, assignments, queries, chunks,
traces' question/contexts/answer and the annotator's own labels; never runs, rankings,
system names, judge labels or other people's labels.

A queue holds live items only, and an annotator's label that counts is their newest live row
(:mod:`annotation.store.retirements`): an item standing on a retired import's rows leaves every
queue, and a retired label file's grades no longer mark an item done.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from annotation.store.base import ITEM_KINDS, StoreBase, StoreError
from annotation.store.retirements import live, live_item

__all__ = ["Queue", "CURRENT_LABEL"]

# The newest live label of this annotator on the item: NULL when there is none or
# when the newest row is a retraction (undo), i.e. the item still needs a grade.
CURRENT_LABEL = (
    "(SELECT value FROM labels WHERE item_id = i.id AND annotator_id = :annotator "
    f"AND {live('id', 'labels')} ORDER BY id DESC LIMIT 1)"
)


class Queue(StoreBase):
    """Each annotator's queue of items, and the texts an item shows."""

    def has_assignments(self, kind: str) -> bool:
        """Whether any ``kind`` item is assigned to anybody (else every annotator's queue
        is every item of the kind: single-user mode)."""
        return (
            self.db.execute(
                "SELECT 1 FROM assignments a JOIN items i ON i.id = a.item_id WHERE i.kind = ? LIMIT 1",
                [kind],
            ).fetchone()
            is not None
        )

    def _queue_source(self, kind: str) -> tuple[str, str]:
        """FROM/WHERE of an annotator's queue of ``kind`` items (the annotator's id bound as
        ``:annotator``), and its order: the assigned items, or every item of the kind when
        none is assigned to anybody (single-user mode)."""
        if kind not in ITEM_KINDS:
            raise StoreError(f"item kind {kind!r}; expected one of {', '.join(ITEM_KINDS)}")
        if not self.has_assignments(kind):
            return f"FROM items i WHERE i.kind = '{kind}' AND {live_item('i')}", "i.position"
        return (
            f"FROM assignments a JOIN items i ON i.id = a.item_id WHERE a.annotator_id = :annotator AND i.kind = '{kind}'"
            f" AND {live_item('i')}",
            "a.position",
        )

    def next_unlabelled_item(self, annotator_id: int, kind: str, skipped: Sequence[int] = ()) -> int | None:
        """The id of the next ``kind`` item in the annotator's queue that has no current label
        of theirs and is not in ``skipped``; None when there is none.

        The search starts after the item this annotator labelled last: in a session that goes
        down the queue, every item before it is labelled, so the search does not walk past them
        again (a fetch costs the same after 10 labels or 10,000). Then from the start, for
        items skipped or undone."""
        source, order = self._queue_source(kind)
        skip = ", ".join(str(int(i)) for i in skipped)
        unlabelled = f"{CURRENT_LABEL} IS NULL {f'AND i.id NOT IN ({skip})' if skip else ''}"
        last = self.db.execute(
            f"""SELECT {order} {source} AND i.id = (
                    SELECT l.item_id FROM labels l JOIN items k ON k.id = l.item_id
                    WHERE l.annotator_id = :annotator AND k.kind = '{kind}' ORDER BY l.id DESC LIMIT 1)""",
            {"annotator": annotator_id},
        ).fetchone()
        row = None
        if last is not None:
            row = self.db.execute(
                f"SELECT i.id {source} AND {order} > :after AND {unlabelled} ORDER BY {order} LIMIT 1",
                {"annotator": annotator_id, "after": last[0]},
            ).fetchone()
        if row is None:
            row = self.db.execute(
                f"SELECT i.id {source} AND {unlabelled} ORDER BY {order} LIMIT 1", {"annotator": annotator_id}
            ).fetchone()
        return row[0] if row else None

    def queue_progress(self, annotator_id: int, kind: str) -> tuple[int, int]:
        """(labelled, total) of the annotator's queue of ``kind`` items; labelled counts the
        items whose newest row of theirs has a value (not a retraction)."""
        source, _ = self._queue_source(kind)
        done, total = self.db.execute(
            f"SELECT count({CURRENT_LABEL}), count(*) {source}", {"annotator": annotator_id}
        ).fetchone()
        return int(done), int(total)

    # ------------------------------------------------------------ what an item shows

    def item_keys(self, item_id: int) -> tuple[str, str | None, str | None, str | None, str | None] | None:
        """(kind, query id, chunk id, trace id, trace B id) of the item; None when there is none."""
        return self.db.execute(
            "SELECT kind, query_id, chunk_id, trace_id, trace_b_id FROM items WHERE id = ?", [item_id]
        ).fetchone()

    def known_items(self, kind: str, item_ids: Iterable[int]) -> set[int]:
        """The ids among ``item_ids`` that are ``kind`` items."""
        wanted = sorted({int(i) for i in item_ids})
        if not wanted:
            return set()
        if len(wanted) <= 900:  # within SQLite's limit of bound parameters
            marks = ", ".join("?" * len(wanted))
            return {
                r[0]
                for r in self.db.execute(
                    f"SELECT id FROM items WHERE kind = ? AND id IN ({marks})", [kind, *wanted]
                ).fetchall()
            }
        return {r[0] for r in self.db.execute("SELECT id FROM items WHERE kind = ?", [kind]).fetchall()}

    def query_text(self, query_id: str | None) -> str | None:
        """The query's text; None when it has none or is not stored."""
        row = self.db.execute("SELECT text FROM queries WHERE id = ?", [query_id]).fetchone()
        return row[0] if row else None

    def chunk_text(self, chunk_id: str | None) -> str | None:
        """The chunk's text; None when it has none or is not stored."""
        row = self.db.execute("SELECT text FROM chunks WHERE id = ?", [chunk_id]).fetchone()
        return row[0] if row else None

    def trace_shown(self, trace_id: str | None) -> tuple[str | None, str | None, str | None] | None:
        """(question, contexts as stored (a JSON list), answer) of the trace; None when not stored."""
        return self.db.execute(
            "SELECT question, contexts, answer FROM traces WHERE id = ?", [trace_id]
        ).fetchone()

    def trace_answer(self, trace_id: str | None) -> str | None:
        """The trace's answer; None when it has none or is not stored."""
        row = self.db.execute("SELECT answer FROM traces WHERE id = ?", [trace_id]).fetchone()
        return row[0] if row else None
