"""The sentences a person marked as the answer inside a chunk (#44 item 2, m025).

On *Label chunks* a person may mark, in a chunk whose place in its document is known
(``chunks.doc``, ``doc_start``, ``doc_end``: m024), the sentences that answer the query. A confirm
appends one row to ``evidence_marks`` holding the whole set marked, as spans of the document
(offsets into it, end exclusive); the newest row per (item, annotator) counts, and an empty set
takes the marks back. Nothing is updated or deleted (append-only, DESIGN principle 3). The
chunk's grade is a label like any other (``labels``): marking never changes it.
"""

from __future__ import annotations

import json
from typing import Any

from annotation.store.base import StoreBase, StoreError, inserted_id, utc_now
from annotation.store.retirements import live_item

__all__ = ["EvidenceMarks", "UnplacedChunk"]


class UnplacedChunk(StoreError):
    """The chunk's document and offsets are not known, so no span of it can be stored."""


class EvidenceMarks(StoreBase):
    """Marks written and read back."""

    def chunk_place(self, item_id: int) -> tuple[str, int, int]:
        """(document, start, end) of the chunk of ``item_id``; UnplacedChunk when not known."""
        row = self.db.execute(
            """SELECT c.doc, c.doc_start, c.doc_end FROM items i JOIN chunks c ON c.id = i.chunk_id
               WHERE i.id = ? AND i.kind = 'chunk'""",
            [int(item_id)],
        ).fetchone()
        if row is None or row[0] is None:
            raise UnplacedChunk(
                "this chunk's place in its document is not known, so no sentence of it can be marked "
                "(import the corpus with each chunk's doc, start and end)"
            )
        return str(row[0]), int(row[1]), int(row[2])

    def mark_evidence(self, item_id: int, annotator: str, spans: list[tuple[int, int]]) -> int:
        """Record ``spans`` (offsets into the chunk's *text*, end exclusive) as ``annotator``'s
        marks of ``item_id``'s chunk, stored as spans of its document; ``[]`` takes them back.
        StoreError for a span outside the chunk; returns the row's id."""
        doc, start, end = self.chunk_place(item_id)
        placed = []
        for begin, finish in sorted(set(spans)):
            if not 0 <= begin < finish <= end - start:
                raise StoreError(f"span {begin}-{finish} lies outside the chunk (0-{end - start})")
            placed.append([start + begin, start + finish])
        with self.write() as db:
            person = db.execute("SELECT id FROM annotators WHERE name = ?", [annotator]).fetchone()
            if person is None:
                raise StoreError(f"no annotator named {annotator!r}")
            annotator_id = int(person[0])
            cursor = db.execute(
                "INSERT INTO evidence_marks (item_id, annotator_id, doc, spans, created_at) VALUES (?, ?, ?, ?, ?)",
                [int(item_id), annotator_id, doc, json.dumps(placed), utc_now()],
            )
        return inserted_id(cursor)

    def my_marks(self, item_id: int, annotator: str) -> list[tuple[int, int]]:
        """``annotator``'s current marks of ``item_id``, as offsets into the chunk's text (what the
        picker shows them: their own, never another person's)."""
        row = self.db.execute(
            """SELECT m.spans, c.doc_start FROM evidence_marks m JOIN annotators a ON a.id = m.annotator_id
               JOIN items i ON i.id = m.item_id JOIN chunks c ON c.id = i.chunk_id
               WHERE m.item_id = ? AND a.name = ? ORDER BY m.id DESC LIMIT 1""",
            [int(item_id), annotator],
        ).fetchone()
        if row is None:
            return []
        return [(int(b) - int(row[1]), int(e) - int(row[1])) for b, e in json.loads(row[0])]

    def current_marks(self, annotator: str | None = None) -> list[dict[str, Any]]:
        """The marks that count (the newest row per item and annotator, non-empty), of live
        items: ``{"item_id", "query_id", "chunk_id", "annotator", "doc", "spans": [(start, end)]}``
        (document offsets), by item then annotator."""
        where = "AND a.name = ?" if annotator else ""
        rows = self.db.execute(
            f"""SELECT i.id, i.query_id, i.chunk_id, a.name, m.doc, m.spans
                FROM evidence_marks m JOIN items i ON i.id = m.item_id JOIN annotators a ON a.id = m.annotator_id
                WHERE {live_item("i")} {where} AND m.id = (
                    SELECT max(id) FROM evidence_marks WHERE item_id = m.item_id AND annotator_id = m.annotator_id)
                ORDER BY i.id, a.name""",
            [annotator] if annotator else [],
        ).fetchall()
        return [
            {
                "item_id": int(r[0]),
                "query_id": r[1],
                "chunk_id": r[2],
                "annotator": r[3],
                "doc": r[4],
                "spans": [(int(b), int(e)) for b, e in json.loads(r[5])],
            }
            for r in rows
            if json.loads(r[5])
        ]
