"""What is judged, read back whole: chunks, queries, traces, runs' rankings and items
as the exports, the baseline and the demo read them (:class:`Corpus`).

Live rows only (:mod:`annotation.store.retirements`): what a retired import holds is in no export."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from annotation.store.base import StoreBase
from annotation.store.retirements import live, live_item, live_ranking

__all__ = ["Corpus"]

ID_BATCH = 500  # ids per IN (...) list: well within SQLite's limit of bound parameters


class Corpus(StoreBase):
    """Reads of chunks, queries, traces, rankings and items for exports and baselines."""

    # ------------------------------------------------------------ chunks and queries

    def chunk_texts(self, chunk_ids: Iterable[str]) -> dict[str, str | None]:
        """chunk id -> text (None: stored without text) of the stored ones among ``chunk_ids``."""
        wanted = sorted(set(chunk_ids))
        out: dict[str, str | None] = {}
        for start in range(0, len(wanted), ID_BATCH):
            batch = wanted[start : start + ID_BATCH]
            marks = ", ".join("?" * len(batch))
            out.update(
                self.db.execute(
                    f"SELECT id, text FROM chunks WHERE id IN ({marks}) AND {live('id', 'chunks')}", batch
                ).fetchall()
            )
        return out

    def chunk_spans(self, chunk_ids: Iterable[str]) -> dict[str, tuple[str, int, int]]:
        """chunk id -> (document, start, end) of the stored ones among ``chunk_ids`` whose offsets
        are known (#44)."""
        wanted = sorted(set(chunk_ids))
        out: dict[str, tuple[str, int, int]] = {}
        for start in range(0, len(wanted), ID_BATCH):
            batch = wanted[start : start + ID_BATCH]
            marks = ", ".join("?" * len(batch))
            for chunk, doc, begin, end in self.db.execute(
                f"SELECT id, doc, doc_start, doc_end FROM chunks WHERE id IN ({marks}) "
                f"AND doc IS NOT NULL AND {live('id', 'chunks')}",
                batch,
            ).fetchall():
                out[chunk] = (doc, int(begin), int(end))
        return out

    def chunks_with_text(self, by_id: bool = False) -> dict[str, str]:
        """chunk id -> text of every chunk stored with a text: in the table's order, or by id."""
        order = " ORDER BY id" if by_id else " ORDER BY rowid"  # said: both backends the same order
        return dict(
            self.db.execute(
                f"SELECT id, text FROM chunks WHERE text IS NOT NULL AND {live('id', 'chunks')}{order}"
            ).fetchall()
        )

    def chunk_ids(self) -> list[str]:
        """Every stored chunk id, sorted."""
        return [
            c for (c,) in self.db.execute(f"SELECT id FROM chunks WHERE {live('id', 'chunks')} ORDER BY id")
        ]

    def chunks_in_import_order(self) -> list[tuple[str, str | None, str | None, str | None]]:
        """(id, text, source, meta JSON) of every chunk, in the order they were stored."""
        return self.db.execute(
            f"SELECT id, text, source, meta FROM chunks WHERE {live('id', 'chunks')} ORDER BY rowid"
        ).fetchall()

    def queries_with_text(self) -> dict[str, str]:
        """query id -> text of every query stored with a text, by id."""
        return dict(
            self.db.execute(
                f"SELECT id, text FROM queries WHERE text IS NOT NULL AND {live('id', 'queries')} ORDER BY id"
            ).fetchall()
        )

    def queries_without_text(self) -> int:
        """How many stored queries have no text (known only from a run or a label file)."""
        count: int = self.db.execute(
            f"SELECT count(*) FROM queries WHERE text IS NULL AND {live('id', 'queries')}"
        ).fetchone()[0]
        return count

    def queries_in_import_order(self) -> list[tuple[str, str | None]]:
        """(id, text) of every query, in the order they were stored."""
        return self.db.execute(
            f"SELECT id, text FROM queries WHERE {live('id', 'queries')} ORDER BY rowid"
        ).fetchall()

    # ------------------------------------------------------------ traces, rankings, items

    def traces_in_import_order(self) -> list[tuple[Any, ...]]:
        """(id, query id, system, question, contexts JSON, answer, meta) of every trace, in the
        order they were stored; meta is the text of a ``meta`` (or ``metadata``) column where
        the table has one, else None."""
        columns = self.columns("traces")
        meta_column = next((c for c in ("meta", "metadata") if c in columns), "NULL")
        return self.db.execute(
            f"SELECT id, query_id, system, question, contexts, answer, {meta_column} FROM traces "
            f"WHERE {live('id', 'traces')} AND {live('query_id', 'queries')} ORDER BY rowid"
        ).fetchall()

    def run_rankings(self, run_id: int) -> list[tuple[str, int, str, float | None]]:
        """(query, rank, chunk, score) of a run's rankings, in the order they were stored."""
        return self.db.execute(
            f"SELECT query_id, rank, chunk_id, score FROM rankings k WHERE run_id = ? AND {live_ranking('k')} "
            "ORDER BY rowid",
            [run_id],
        ).fetchall()

    def chunk_items(self) -> list[tuple[int, str, str]]:
        """(item, query, chunk) of every chunk item."""
        return self.db.execute(
            f"SELECT id, query_id, chunk_id FROM items i WHERE kind = 'chunk' AND {live_item('i')}"
        ).fetchall()

    def trace_items(self) -> list[tuple[int, str, str | None]]:
        """(item, trace id, answer) of every trace item, by trace id."""
        return self.db.execute(
            f"""SELECT i.id, t.id, t.answer FROM items i JOIN traces t ON t.id = i.trace_id
               WHERE i.kind = 'trace' AND {live_item("i")} ORDER BY t.id"""
        ).fetchall()
