"""What comes in: corpora, queries, runs, label files and traces (:class:`Imports`).

Each import is one transaction: it lands whole or not at all. The same input again
changes nothing; an input that would change what is stored is refused
(:class:`ImportConflict`): stored texts, rankings and traces are never overwritten.

Inside :meth:`Retirements.recording` (``annotation.exchange.import_files``), every method
here says which rows the import holds (:meth:`Retirements.hold`): the rows it added, and the
rows it names that another import holds already; the rules are in
:mod:`annotation.store.retirements`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypedDict

from annotation.rubrics import get_rubric
from annotation.store.base import ImportConflict, OffScale, StoreError, inserted_id, utc_now
from annotation.store.identity import Identity
from annotation.store.retirements import Retirements, live

ONE_ROW = {"chunks": "chunk", "queries": "query"}  # a table's row, named in a conflict's message

if TYPE_CHECKING:  # numpy and pyarrow: the store's opening loads neither (#42)
    from annotation.model import Qrels, Run

__all__ = ["Imports", "RunCounts"]


class RunCounts(TypedDict):
    """What :meth:`Imports.import_run` did: the run added (1) or already stored as it is (0), its
    ranking rows added, and the rows already stored as they are."""

    runs: int
    rankings: int
    unchanged: int


class Imports(Retirements, Identity):
    """Imports of what is judged (chunks, queries, traces), of runs, and of existing labels."""

    def import_corpus(self, chunks: Sequence[Mapping[str, Any]]) -> dict[str, int]:
        """Chunks ``{"id", "text", "source"?, "doc"?, "start"?, "end"?, ...}``: where the chunk comes
        from (its document and offsets, #44) in their own columns; other keys kept as ``meta``."""
        rows = []
        own = ("id", "text", "source", "doc", "start", "end")
        for chunk in chunks:
            meta = {k: v for k, v in chunk.items() if k not in own}
            rows.append(
                (
                    chunk["id"],
                    chunk.get("text"),
                    chunk.get("source"),
                    json.dumps(meta) if meta else None,
                    chunk.get("doc"),
                    chunk.get("start"),
                    chunk.get("end"),
                )
            )
        columns = ["id", "text", "source", "meta", "doc", "doc_start", "doc_end"]
        return self._upsert_texts("chunks", columns, rows)

    def import_queries(self, queries: Mapping[str, str | None]) -> dict[str, int]:
        """Queries ``{id: text}`` (a None text: an id known, its text to come later)."""
        return self._upsert_texts("queries", ["id", "text"], [(qid, text) for qid, text in queries.items()])

    def _upsert_texts(self, table: str, columns: list[str], rows: list[tuple[Any, ...]]) -> dict[str, int]:
        """Insert new ids; fill a stored NULL text; refuse a different text."""
        added = filled = unchanged = 0
        new: list[str] = []
        named: list[str] = []
        with self.write() as db:
            for row in rows:
                stored = db.execute(
                    f"SELECT {', '.join(columns)} FROM {table} WHERE id = ?", [row[0]]
                ).fetchone()
                if stored is None:
                    db.execute(
                        f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})",
                        row,
                    )
                    added += 1
                    new.append(row[0])
                elif tuple(stored) == tuple(row):
                    unchanged += 1
                    named.append(row[0])
                elif stored[1] is None and all(s is None or s == r for s, r in zip(stored[2:], row[2:])):
                    sets = ", ".join(f"{c} = ?" for c in columns[1:])
                    db.execute(f"UPDATE {table} SET {sets} WHERE id = ?", [*row[1:], row[0]])
                    filled += 1
                    new.append(row[0])  # the text is this import's
                elif row[1] is None:
                    unchanged += 1  # a label file naming a known id: nothing new
                    named.append(row[0])
                else:
                    raise ImportConflict(
                        f"{ONE_ROW[table]} {row[0]!r} is stored with other text; expected the same text "
                        "(stored texts are never overwritten)"
                    )
            self.hold(table, new, named)
        return {"added": added, "filled": filled, "unchanged": unchanged}

    def _ensure_held_ids(self, table: str, ids: set[str]) -> None:
        """:meth:`ensure_ids`, and the import being recorded holds the rows it created and
        names the others."""
        if self._import_id is None:
            self.ensure_ids(table, ids)
            return
        wanted = sorted(ids)
        stored: set[str] = set()
        for start in range(0, len(wanted), 500):
            batch = wanted[start : start + 500]
            stored.update(
                r[0]
                for r in self.db.execute(
                    f"SELECT id FROM {table} WHERE id IN ({', '.join('?' * len(batch))})", batch
                )
            )
        self.ensure_ids(table, ids)
        self.hold(table, [i for i in wanted if i not in stored], [i for i in wanted if i in stored])

    def import_run(self, run: Run, name: str, stage: str = "fetch") -> RunCounts:
        """A run's rankings in trec order (rank 1..n per query); the same run again changes nothing."""
        if stage not in ("fetch", "keep"):
            raise StoreError(f"stage {stage!r}; expected fetch or keep")
        rows = [
            (qid, rank, doc, score)
            for qid, ranked in run.ordered_rows().items()
            for rank, (doc, score) in enumerate(ranked, start=1)
        ]
        with self.write() as db:
            existing = db.execute("SELECT id, stage FROM runs WHERE name = ?", [name]).fetchone()
            if existing:
                stored = db.execute(
                    "SELECT query_id, rank, chunk_id, score FROM rankings WHERE run_id = ? ORDER BY query_id, rank",
                    [existing[0]],
                ).fetchall()
                if existing[1] == stage and sorted(map(tuple, stored)) == sorted(rows):
                    self.hold("runs", named=[existing[0]])
                    self._ensure_held_ids("queries", {r[0] for r in rows} | set(run.empty_queries))
                    self._ensure_held_ids("chunks", {r[2] for r in rows})
                    return {"runs": 0, "rankings": 0, "unchanged": len(rows)}
                raise ImportConflict(
                    f"run {name!r} is stored with other rankings or stage; expected another run name"
                )
            self._ensure_held_ids("queries", {r[0] for r in rows} | set(run.empty_queries))
            self._ensure_held_ids("chunks", {r[2] for r in rows})
            run_id = db.execute(
                "INSERT INTO runs (name, stage, meta) VALUES (?, ?, ?)",
                [name, stage, json.dumps({"source": run.path, "tag": run.name})],
            ).lastrowid
            self.hold("runs", added=[run_id])
            db.conn.executemany(
                "INSERT INTO rankings (run_id, query_id, rank, chunk_id, score) VALUES (?, ?, ?, ?, ?)",
                [(run_id, *row) for row in rows],
            )
        return {"runs": 1, "rankings": len(rows), "unchanged": 0}

    def import_labels(self, qrels: Qrels, annotator: str, rubric: str = "relevance") -> dict[str, int]:
        """Existing judgments under a named annotator: one label per (query, chunk),
        skipped where that annotator's current label already says the same."""
        scale = get_rubric(rubric)
        for qid, docs in qrels.grades.items():
            for doc, grade in docs.items():
                if grade not in scale.scale:
                    raise OffScale(
                        f"query {qid!r} chunk {doc!r}: grade {grade} is not on the {rubric} scale; "
                        f"expected one of {', '.join(map(str, scale.scale))}",
                        qid,
                        doc,
                        grade,
                    )
        added = unchanged = 0
        with self.write() as db:
            annotator_id = self.annotator_id(annotator)
            self._ensure_held_ids("queries", set(qrels.qids))
            if qrels.texts:
                for qid, text in qrels.texts.items():
                    db.execute("UPDATE queries SET text = ? WHERE id = ? AND text IS NULL", [text, qid])
            self._ensure_held_ids("chunks", {d for docs in qrels.grades.values() for d in docs})
            now = utc_now()  # the label set's time and its rows': what ties them (Labels.label_origins)
            meta = json.dumps(qrels.meta, sort_keys=True, ensure_ascii=False) if qrels.meta else None
            # a label file imported once is never imported again: a second import
            # would bring its grades back over later corrections and undos
            digest = hashlib.sha256(
                json.dumps([qrels.grades, meta], sort_keys=True, ensure_ascii=False).encode()
            ).hexdigest()
            if db.execute(
                "SELECT 1 FROM label_sets WHERE annotator_id = ? AND digest = ?", [annotator_id, digest]
            ).fetchone():
                self.hold("labels", named=self._current_rows_saying(qrels, annotator_id))
                return {"labels": 0, "unchanged": qrels.n_judgments}
            db.execute(
                "INSERT INTO label_sets (annotator_id, source, meta, digest, created_at) VALUES (?, ?, ?, ?, ?)",
                [annotator_id, qrels.path, meta, digest, now],
            )
            new: list[int] = []
            for qid, docs in qrels.grades.items():
                for doc, grade in docs.items():
                    item_id = self.ensure_item("chunk", query_id=qid, chunk_id=doc)
                    if self.current_value(item_id, annotator_id) == (grade,):
                        unchanged += 1
                        continue
                    new.append(
                        inserted_id(
                            db.execute(
                                "INSERT INTO labels (item_id, annotator_id, rubric, value, created_at)"
                                " VALUES (?, ?, ?, ?, ?)",
                                [item_id, annotator_id, rubric, int(grade), now],
                            )
                        )
                    )
                    added += 1
            self.hold("labels", new, self._current_rows_saying(qrels, annotator_id) if unchanged else ())
        return {"labels": added, "unchanged": unchanged}

    def _current_rows_saying(self, qrels: Qrels, annotator_id: int) -> list[int]:
        """The ids of the annotator's newest label rows that give the file's grade (what an
        identical re-import names)."""
        if self._import_id is None:
            return []
        rows = []
        for qid, docs in qrels.grades.items():
            for doc, grade in docs.items():
                row = self.db.execute(
                    """SELECT l.id, l.value FROM labels l JOIN items i ON i.id = l.item_id
                       WHERE i.kind = 'chunk' AND i.query_id = ? AND i.chunk_id = ? AND l.annotator_id = ?
                       ORDER BY l.id DESC LIMIT 1""",
                    [qid, doc, annotator_id],
                ).fetchone()
                if row is not None and row[1] == grade:
                    rows.append(row[0])
        return rows

    def import_traces(
        self, traces: Sequence[Mapping[str, Any]], identical: list[tuple[str, str]] | None = None
    ) -> dict[str, int]:
        """Traces as read by :func:`annotation.formats.records.read_traces`; each also
        becomes a ``trace`` item (faithfulness). The same trace again adds no row (the import
        being recorded names it: see :mod:`annotation.store.retirements`); the same id with other
        content is refused. A trace with a new id whose question, contexts and answer are those
        of a live trace (or of one earlier in ``traces``) is not imported: a labeller would see
        "the same" item twice; nor is its query created. Counted as ``identical``; each is
        appended to ``identical`` as (its id, the id of the trace it repeats) when a list is given."""
        with self.write() as db:
            new, named, skipped = self._trace_plan(traces)
            # the queries of the traces imported or named; none for a trace not imported (L4)
            self._ensure_held_ids(
                "queries", {trace["query_id"] for trace, _ in new} | {trace["query_id"] for trace in named}
            )
            now = utc_now()
            for trace, row in new:
                db.execute(
                    "INSERT INTO traces (id, query_id, system, question, contexts, answer, created_at)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?)",
                    [*row, now],
                )
                self.ensure_item("trace", query_id=trace["query_id"], trace_id=trace["id"])
            self.hold("traces", [trace["id"] for trace, _ in new], [trace["id"] for trace in named])
        if identical is not None:
            identical.extend(skipped)
        return {"traces": len(new), "unchanged": len(named), "identical": len(skipped)}

    def identical_traces(self, traces: Sequence[Mapping[str, Any]]) -> dict[str, str]:
        """The traces of ``traces`` that :meth:`import_traces` would not import, each with the id
        of the trace it repeats (nothing is written)."""
        return dict(self._trace_plan(traces)[2])

    def _trace_plan(
        self, traces: Sequence[Mapping[str, Any]]
    ) -> tuple[
        list[tuple[Mapping[str, Any], tuple[Any, ...]]], list[Mapping[str, Any]], list[tuple[str, str]]
    ]:
        """What :meth:`import_traces` does with each trace: (the new ones with their rows, the
        ones stored as they are, (id, the trace it repeats) of the ones not imported);
        ImportConflict for an id stored with other content."""
        new: list[tuple[Mapping[str, Any], tuple[Any, ...]]] = []
        named: list[Mapping[str, Any]] = []
        skipped: list[tuple[str, str]] = []
        seen = self._live_trace_contents()
        for trace in traces:
            row = (
                trace["id"],
                trace["query_id"],
                trace["system"],
                trace["question"],
                json.dumps(trace["contexts"], ensure_ascii=False),
                trace["answer"],
            )
            stored = self.db.execute(
                "SELECT id, query_id, system, question, contexts, answer FROM traces WHERE id = ?",
                [trace["id"]],
            ).fetchone()
            if stored is not None:
                if tuple(stored) != row:
                    raise ImportConflict(
                        f"trace {trace['id']!r} is stored with other content; expected a new id"
                    )
                named.append(trace)
                continue
            content = _trace_content(*row[3:])
            if content in seen:
                skipped.append((trace["id"], seen[content]))
                continue
            seen[content] = trace["id"]
            new.append((trace, row))
        return new, named, skipped

    def _live_trace_contents(self) -> dict[bytes, str]:
        """A digest of each live trace's question, contexts and answer: its id."""
        rows = self.db.execute(
            f"SELECT id, question, contexts, answer FROM traces t WHERE {live('t.id', 'traces')} ORDER BY id"
        )
        return {_trace_content(question, contexts, answer): tid for tid, question, contexts, answer in rows}


def _trace_content(question: str, contexts: str, answer: str) -> bytes:
    """What a labeller sees of a trace, as a digest: two traces with equal digests are one item."""
    return hashlib.sha256(json.dumps([question, contexts, answer], ensure_ascii=False).encode()).digest()
