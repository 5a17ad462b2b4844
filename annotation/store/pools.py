"""What people are asked to label: pools of run results, the estimate's sample of
unjudged candidates, answer pairs, the weekly review's sample, and who is assigned what
(:class:`Pools`); how each labelled item was drawn (its query, whether at random) and each reading
of a judge's verdict (``verdict_looks``), which the verdicts read (issue #39).

The workflows (``annotation.pooling``, ``calibration.review``) decide what to add and in
what order; these methods read and write the rows, inside the workflow's ``write()`` when
it has one (a write inside a write is part of it).

Reads give live rows only (:mod:`annotation.store.retirements`): a retired run is not a
candidate, a retired import's queries, chunks and traces are in no pool, pair or sample.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from annotation.store.base import StoreBase, inserted_id, utc_now
from annotation.store.retirements import live, live_item, live_ranking

__all__ = ["Pools"]


class Pools(StoreBase):
    """Runs' rankings as candidates, items to label, samples and assignments."""

    # ------------------------------------------------------------ runs as candidates

    def stored_runs(self) -> list[tuple[int, str]]:
        """(run id, name) of every live stored run, by id (import order)."""
        return self.db.execute(f"SELECT id, name FROM runs WHERE {live('id', 'runs')} ORDER BY id").fetchall()

    def pooled_pairs(self, run_ids: Sequence[int], depth: int) -> list[tuple[str, str]]:
        """The depth-``depth`` pool of these runs: distinct (query, chunk) in any one's top
        ``depth``, by query and chunk."""
        placeholders = ", ".join("?" * len(run_ids))
        return self.db.execute(
            f"""SELECT DISTINCT query_id, chunk_id FROM rankings k
                WHERE run_id IN ({placeholders}) AND rank <= ? AND {live_ranking("k")} ORDER BY query_id, chunk_id""",
            [*run_ids, depth],
        ).fetchall()

    def best_ranks(self, run_ids: Sequence[int]) -> list[tuple[str, str, int]]:
        """(query, chunk, best rank over these runs) of every chunk they rank."""
        placeholders = ", ".join("?" * len(run_ids))
        return self.db.execute(
            f"""SELECT query_id, chunk_id, min(rank) FROM rankings k WHERE run_id IN ({placeholders})
                AND {live_ranking("k")} GROUP BY query_id, chunk_id""",
            list(run_ids),
        ).fetchall()

    def top_ranked(self, depth: int) -> list[tuple[str, str, str]]:
        """(run name, query, chunk) of every ranking row within the top ``depth``."""
        return self.db.execute(
            "SELECT r.name, k.query_id, k.chunk_id FROM rankings k JOIN runs r ON r.id = k.run_id"
            f" WHERE k.rank <= ? AND {live_ranking('k')}",
            [depth],
        ).fetchall()

    def chunk_item_batches(self) -> list[tuple[str, str, str | None]]:
        """(query, chunk, batch) of every live chunk item; batch None for an item added outside
        a pool (an import's labels, the estimate's sample)."""
        return self.db.execute(
            f"SELECT query_id, chunk_id, batch FROM items i WHERE kind = 'chunk' AND {live_item('i')}"
        ).fetchall()

    # ------------------------------------------------------------ items and assignments

    def chunk_item(self, query_id: str, chunk_id: str) -> int | None:
        """The id of the chunk item of (query, chunk), None when there is none."""
        row = self.db.execute(
            "SELECT id FROM items WHERE kind = 'chunk' AND query_id = ? AND chunk_id = ?",
            [query_id, chunk_id],
        ).fetchone()
        return row[0] if row else None

    def add_chunk_item(self, query_id: str, chunk_id: str, batch: str, position: int) -> int:
        """A new chunk item of (query, chunk) from ``batch`` at queue ``position``; its id."""
        with self.write() as db:
            return inserted_id(
                db.execute(
                    "INSERT INTO items (kind, query_id, chunk_id, batch, position) VALUES ('chunk', ?, ?, ?, ?)",
                    [query_id, chunk_id, batch, position],
                )
            )

    def pair_item_exists(self, trace_a: str, trace_b: str) -> bool:
        """Whether a pair item compares trace A with trace B (in that order)."""
        return (
            self.db.execute(
                "SELECT 1 FROM items WHERE kind = 'pair' AND trace_id = ? AND trace_b_id = ?",
                [trace_a, trace_b],
            ).fetchone()
            is not None
        )

    def is_assigned(self, item_id: int) -> bool:
        """Whether anybody's queue holds the item."""
        return (
            self.db.execute("SELECT 1 FROM assignments WHERE item_id = ?", [item_id]).fetchone() is not None
        )

    def assigned_items(self, annotator_ids: Iterable[int]) -> set[int]:
        """The items in any of these annotators' queues."""
        ids = sorted({int(i) for i in annotator_ids})
        if not ids:
            return set()
        marks = ", ".join("?" * len(ids))
        rows = self.db.execute(
            f"SELECT DISTINCT item_id FROM assignments WHERE annotator_id IN ({marks})", ids
        )
        return {int(r[0]) for r in rows.fetchall()}

    def assign(self, item_id: int, annotator_id: int, position: int) -> None:
        """Put the item in the annotator's queue at ``position``; already there, nothing changes."""
        with self.write() as db:
            db.execute(
                "INSERT OR IGNORE INTO assignments (item_id, annotator_id, position) VALUES (?, ?, ?)",
                [item_id, annotator_id, position],
            )
            self._rules_changed()

    def assign_many(self, rows: Iterable[tuple[int, int, int]]) -> None:
        """:meth:`assign` for each (item, annotator, position), in one transaction."""
        with self.write() as db:
            db.conn.executemany(
                "INSERT OR IGNORE INTO assignments (item_id, annotator_id, position) VALUES (?, ?, ?)", rows
            )
            self._rules_changed()

    # ------------------------------------------------------------ answer pairs

    def first_trace_pairs(self, system_a: str, system_b: str) -> list[tuple[str, str, str]]:
        """(query, trace A, trace B) per query both systems answered: each system's first
        trace (lowest id) of the query, by query."""
        return self.db.execute(
            f"""SELECT a.query_id, min(a.id), min(b.id) FROM traces a JOIN traces b ON b.query_id = a.query_id
               WHERE a.system = ? AND b.system = ? AND {live("a.id", "traces")} AND {live("b.id", "traces")}
                 AND {live("a.query_id", "queries")} GROUP BY a.query_id ORDER BY a.query_id""",
            [system_a, system_b],
        ).fetchall()

    # ------------------------------------------------------------ the estimate's sample

    def estimate_sample_size(self) -> tuple[int, str | None]:
        """(chunks drawn for the estimate, when the first was drawn); (0, None) before any draw."""
        count, first = self.db.execute("SELECT count(*), min(created_at) FROM estimate_samples").fetchone()
        return count, first

    def estimate_sampled_pairs(self) -> set[tuple[str, str]]:
        """(query, chunk) of every chunk drawn for the estimate."""
        return {
            (q, c) for q, c in self.db.execute("SELECT query_id, chunk_id FROM estimate_samples").fetchall()
        }

    def add_estimate_sample(
        self,
        query_id: str,
        chunk_id: str,
        item_id: int,
        *,
        stratum: str,
        stratum_size: int,
        stratum_sampled: int,
        inclusion: float,
        design: str,
        created_at: str,
    ) -> None:
        """One drawn chunk with its stratum, the stratum's size and draw, its inclusion
        probability, and the design (JSON) it was drawn under."""
        with self.write() as db:
            db.execute(
                """INSERT INTO estimate_samples (query_id, chunk_id, item_id, stratum, stratum_size, stratum_sampled,
                       inclusion, design, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)""",
                [
                    query_id,
                    chunk_id,
                    item_id,
                    stratum,
                    stratum_size,
                    stratum_sampled,
                    inclusion,
                    design,
                    created_at,
                ],
            )

    def estimate_samples(self) -> list[tuple[str, str, int, str, str]]:
        """(query, stratum, stratum size, chunk, design JSON) of every drawn chunk, by query,
        stratum and chunk."""
        return self.db.execute(
            f"""SELECT e.query_id, e.stratum, e.stratum_size, e.chunk_id, e.design FROM estimate_samples e
               JOIN items i ON i.id = e.item_id WHERE {live_item("i")}
               ORDER BY e.query_id, e.stratum, e.chunk_id"""
        ).fetchall()

    # ------------------------------------------------------------ the weekly review's sample

    def review_sample_exists(self, week: str) -> bool:
        """Whether the ISO ``week`` has a review sample."""
        return (
            self.db.execute("SELECT 1 FROM review_samples WHERE week = ? LIMIT 1", [week]).fetchone()
            is not None
        )

    def unsampled_trace_items(self) -> list[tuple[int, str | None]]:
        """(item, system) of every trace item no week's review sample holds, by item id."""
        return self.db.execute(
            f"""SELECT i.id, t.system FROM items i JOIN traces t ON t.id = i.trace_id
               WHERE i.kind = 'trace' AND i.id NOT IN (SELECT item_id FROM review_samples) AND {live_item("i")}
               ORDER BY i.id"""
        ).fetchall()

    def add_review_sample(self, week: str, drawn: Iterable[tuple[int, str]]) -> None:
        """The ``week``'s sample: (item, stratum) each, in one transaction, stamped with one time."""
        now = utc_now()
        with self.write() as db:
            db.conn.executemany(
                "INSERT INTO review_samples (week, item_id, stratum, created_at) VALUES (?, ?, ?, ?)",
                [(week, item, stratum, now) for item, stratum in drawn],
            )

    def review_sample(self, week: str) -> set[int]:
        """The live items of the ``week``'s review sample (empty when it has none)."""
        return {
            int(i)
            for (i,) in self.db.execute(
                f"""SELECT s.item_id FROM review_samples s JOIN items i ON i.id = s.item_id
                    WHERE s.week = ? AND {live_item("i")}""",
                [week],
            )
        }

    # ------------------------------------------------------------ how labels were drawn (issue #39)

    def item_queries(self, kind: str) -> dict[int, str | None]:
        """item -> the query it was labelled under, for every live ``kind`` item: a chunk's query, a
        trace's query, a pair's first trace's query; None when the store has none."""
        if kind == "chunk":
            sql = f"SELECT i.id, i.query_id FROM items i WHERE i.kind = 'chunk' AND {live_item('i')}"
        else:
            sql = f"""SELECT i.id, coalesce(i.query_id, t.query_id) FROM items i
                      LEFT JOIN traces t ON t.id = i.trace_id WHERE i.kind = ? AND {live_item("i")}"""
        rows = self.db.execute(sql, [] if kind == "chunk" else [kind]).fetchall()
        return {int(i): q for i, q in rows}

    def random_draws(self) -> dict[int, str]:
        """item -> the random draw it came from: "review sample YYYY-Www", "estimate sample"
        (``pool --estimate``) or "hole sample <batch>" (``pool --holes``). Items not listed were
        chosen (a pool of runs' top k, an import, a hand-made queue)."""
        out: dict[int, str] = {}
        for item, week in self.db.execute("SELECT item_id, week FROM review_samples").fetchall():
            out[int(item)] = f"review sample {week}"
        for (item,) in self.db.execute("SELECT item_id FROM estimate_samples").fetchall():
            out.setdefault(int(item), "estimate sample")
        for item, batch in self.db.execute(
            "SELECT id, batch FROM items WHERE batch LIKE 'holes-%'"
        ).fetchall():
            out.setdefault(int(item), f"hole sample {batch}")
        return out

    def add_look(self, row: dict[str, object]) -> None:
        """One reading of a judge's verdict (``fingerprint``, ``rubric``, ``scope``, ``n``, ``queries``,
        ``verdict``, ``face``), append-only: a verdict read again on more labels is read while labelling.
        A reading at the same n and verdict as the judge's newest one on that scope is the same look (a
        page drawn again): not recorded twice."""
        with self.write():
            newest = self.db.execute(
                """SELECT n, verdict FROM verdict_looks WHERE fingerprint = ? AND scope = ?
                   ORDER BY id DESC LIMIT 1""",
                [row.get("fingerprint"), row.get("scope")],
            ).fetchone()
            if newest is not None and tuple(newest) == (row.get("n"), row.get("verdict")):
                return
            self.db.execute(
                """INSERT INTO verdict_looks (fingerprint, rubric, scope, n, queries, verdict, face, created_at)
                   VALUES (?, ?, ?, ?, ?, ?, ?, ?)""",
                [row.get(c) for c in ("fingerprint", "rubric", "scope", "n", "queries", "verdict", "face")]
                + [utc_now()],
            )

    def earlier_looks(self, fingerprint: str, scope: str, n: int) -> int:
        """How many recorded readings of the judge's verdict on ``scope`` rested on fewer than ``n``
        labels: 0 when the labels were read once (or only at this n)."""
        (count,) = self.db.execute(
            "SELECT count(*) FROM verdict_looks WHERE fingerprint = ? AND scope = ? AND n < ?",
            [fingerprint, scope, n],
        ).fetchone()
        return int(count)

    def review_sample_drawn_at(self, week: str) -> str | None:
        """When the ``week``'s review sample was drawn (None: it has none)."""
        row = self.db.execute("SELECT min(created_at) FROM review_samples WHERE week = ?", [week]).fetchone()
        return row[0] if row else None

    def assignees(self, items: Iterable[int]) -> dict[int, set[str]]:
        """item -> the people it is assigned to (items assigned to no one are not listed)."""
        wanted = {int(i) for i in items}
        out: dict[int, set[str]] = {}
        for item, name in self.db.execute(
            "SELECT s.item_id, a.name FROM assignments s JOIN annotators a ON a.id = s.annotator_id"
        ).fetchall():
            if int(item) in wanted:
                out.setdefault(int(item), set()).add(name)
        return out

    def labelled_since(self, since: str) -> set[tuple[int, str]]:
        """(item, annotator) of every label row stored at or after ``since``."""
        return {
            (int(item), name)
            for item, name in self.db.execute(
                """SELECT l.item_id, a.name FROM labels l JOIN annotators a ON a.id = l.annotator_id
                   WHERE l.created_at >= ?""",
                [since],
            ).fetchall()
        }

    def label_span(self, items: Iterable[int]) -> tuple[str | None, str | None]:
        """When the oldest and the newest label rows of ``items`` were stored ((None, None): none)."""
        wanted = {int(i) for i in items}
        oldest = newest = None
        for item, first, last in self.db.execute(
            "SELECT item_id, min(created_at), max(created_at) FROM labels GROUP BY item_id"
        ).fetchall():
            if int(item) in wanted and first is not None:
                oldest = first if oldest is None or first < oldest else oldest
                newest = last if newest is None or last > newest else newest
        return oldest, newest

    def newest_label_at(self, items: Iterable[int]) -> str | None:
        """When the newest label row of ``items`` was stored (None: they have none)."""
        wanted = {int(i) for i in items}
        newest = None
        for item, at in self.db.execute(
            "SELECT item_id, max(created_at) FROM labels GROUP BY item_id"
        ).fetchall():
            if int(item) in wanted and at is not None and (newest is None or at > newest):
                newest = at
        return newest

    def unsampled_chunk_items(self, fingerprint: str) -> list[tuple[int, str | None, int | None]]:
        """(item, query, the judge's grade) of every live chunk item the judge graded that no week's
        review sample holds, by item id: the population of a relevance judge's weekly sample."""
        return self.db.execute(
            f"""SELECT i.id, i.query_id, min(j.value) FROM items i JOIN judge_labels j ON j.item_id = i.id
               WHERE i.kind = 'chunk' AND j.fingerprint = ? AND j.value IS NOT NULL
               AND i.id NOT IN (SELECT item_id FROM review_samples) AND {live_item("i")}
               GROUP BY i.id, i.query_id ORDER BY i.id""",
            [fingerprint],
        ).fetchall()
