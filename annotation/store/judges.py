"""Judges: their fingerprints and answers, what they are asked, and how far they were
trusted (:class:`Judges`).

``judge_labels`` is append-only (triggers refuse UPDATE and DELETE): a failed call is a
row with ``error`` set and no value, never a made-up grade; the newest value per (item,
order, repeat) counts. ``calibrations`` keeps every weekly review of a judge.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from annotation.store.base import StoreBase, utc_now

__all__ = ["Judges", "JUDGE_COLUMNS", "CALIBRATION_COLUMNS"]


JUDGE_COLUMNS = (
    "item_id",
    "fingerprint",
    "ab_order",
    "repeat",
    "value",
    "reason",
    "raw",
    "tokens_in",
    "tokens_out",
    "latency_ms",
    "error",
)


CALIBRATION_COLUMNS = (
    "fingerprint",
    "rubric",
    "window",
    "n",
    "kappa",
    "ci_low",
    "ci_high",
    "weights",
    "verdict",
    "sample",
)


class Judges(StoreBase):
    """Judges, their answers, the items they are asked about, and their calibrations."""

    def register_judge(self, fingerprint: str, settings: Mapping[str, Any]) -> None:
        """A judge, once: its fingerprint and the settings it was computed from."""
        with self.write():
            self.db.execute(
                """INSERT OR IGNORE INTO judges (fingerprint, model, endpoint, prompt_version, prompt_sha,
                       temperature, seed, rubric, kind, settings, created_at)
                   VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)""",
                [
                    fingerprint,
                    settings.get("model"),
                    settings.get("endpoint"),
                    settings.get("prompt_version"),
                    settings.get("prompt_sha"),
                    settings.get("temperature"),
                    settings.get("seed"),
                    settings.get("rubric"),
                    settings.get("kind"),
                    json.dumps(dict(settings), sort_keys=True),
                    utc_now(),
                ],
            )

    def judge_done(self, fingerprint: str) -> set[tuple[int, str | None, int]]:
        """(item, order, repeat) this judge has a value for: a re-run skips them.
        An error row is not done: a re-run asks again."""
        return {
            (int(item), order, int(repeat or 0))
            for item, order, repeat in self.db.execute(
                "SELECT item_id, ab_order, repeat FROM judge_labels WHERE fingerprint = ? AND value IS NOT NULL",
                [fingerprint],
            )
        }

    def add_judge_labels(self, rows: list[Mapping[str, Any]]) -> int:
        """Judge results (a value, or an error and no value), in one transaction."""
        if not rows:
            return 0
        now = utc_now()
        with self.write():
            self.db.conn.executemany(
                f"INSERT INTO judge_labels ({', '.join(JUDGE_COLUMNS)}, created_at) "
                f"VALUES ({', '.join('?' * len(JUDGE_COLUMNS))}, ?)",
                [[row.get(c) for c in JUDGE_COLUMNS] + [now] for row in rows],
            )
        return len(rows)

    def judges(self) -> list[dict[str, Any]]:
        """Every judge with its settings and counts: labels (current values), errors, tokens."""
        rows = self.db.execute(
            """SELECT j.fingerprint, j.kind, j.rubric, j.model, j.endpoint, j.settings, j.created_at,
                      count(DISTINCT CASE WHEN l.value IS NOT NULL
                            THEN l.item_id || '/' || ifnull(l.ab_order, '') || '/' || l.repeat END),
                      sum(l.error IS NOT NULL), sum(l.tokens_in), sum(l.tokens_out), count(l.id)
               FROM judges j LEFT JOIN judge_labels l ON l.fingerprint = j.fingerprint
               GROUP BY j.fingerprint ORDER BY j.created_at"""
        ).fetchall()
        return [
            {
                "fingerprint": fp,
                "kind": kind,
                "rubric": rubric,
                "model": model,
                "endpoint": endpoint,
                "settings": json.loads(settings or "{}"),
                "created_at": created,
                "labels": int(done or 0),
                "errors": int(errors or 0),
                "tokens_in": int(tin or 0),
                "tokens_out": int(tout or 0),
                "rows": int(n or 0),
            }
            for fp, kind, rubric, model, endpoint, settings, created, done, errors, tin, tout, n in rows
        ]

    def judge_values(self, fingerprint: str) -> list[dict[str, Any]]:
        """The newest value per (item, order, repeat) of one judge (errors left out)."""
        rows = self.db.execute(
            """SELECT l.item_id, l.ab_order, l.repeat, l.value, l.reason FROM judge_labels l
               WHERE l.fingerprint = ? AND l.value IS NOT NULL AND l.id = (
                   SELECT max(id) FROM judge_labels m WHERE m.fingerprint = l.fingerprint
                   AND m.item_id = l.item_id AND m.ab_order IS l.ab_order AND m.repeat IS l.repeat
                   AND m.value IS NOT NULL)
               ORDER BY l.item_id, l.ab_order, l.repeat""",
            [fingerprint],
        ).fetchall()
        return [
            {"item_id": i, "ab_order": o, "repeat": r, "value": v, "reason": why} for i, o, r, v, why in rows
        ]

    # ------------------------------------------------------------ what a judge is asked

    def gradable_chunk_items(self, limit: int | None = None) -> list[tuple[int, str, str]]:
        """(item, query text, chunk text) of every chunk item whose query and chunk both have
        a text, by item id (``limit``: the first N). A judge is asked only these: a grade of an
        empty text would count as done and never be asked again."""
        cap = f"LIMIT {int(limit)}" if limit else ""
        return self.db.execute(
            f"""SELECT i.id, q.text, c.text FROM items i
                JOIN queries q ON q.id = i.query_id JOIN chunks c ON c.id = i.chunk_id
                WHERE i.kind = 'chunk' AND ifnull(q.text, '') != '' AND ifnull(c.text, '') != ''
                ORDER BY i.id {cap}"""
        ).fetchall()

    def gradable_trace_items(self, limit: int | None = None) -> list[tuple[int, str, str | None, str]]:
        """(item, question, contexts as stored (a JSON list), answer) of every trace item whose
        trace has a question and an answer, by item id (``limit``: the first N)."""
        cap = f"LIMIT {int(limit)}" if limit else ""
        return self.db.execute(
            f"""SELECT i.id, t.question, t.contexts, t.answer FROM items i JOIN traces t ON t.id = i.trace_id
                WHERE i.kind = 'trace' AND ifnull(t.question, '') != '' AND ifnull(t.answer, '') != ''
                ORDER BY i.id {cap}"""
        ).fetchall()

    def gradable_pair_items(self, limit: int | None = None) -> list[tuple[int, str, str, str]]:
        """(item, question, answer A, answer B) of every pair item with a question and both
        answers, by item id (``limit``: the first N pairs). A is the pair's first trace."""
        cap = f"LIMIT {int(limit)}" if limit else ""
        return self.db.execute(
            f"""SELECT i.id, a.question, a.answer, b.answer FROM items i
                JOIN traces a ON a.id = i.trace_id JOIN traces b ON b.id = i.trace_b_id
                WHERE i.kind = 'pair' AND ifnull(a.question, '') != '' AND ifnull(a.answer, '') != ''
                  AND ifnull(b.answer, '') != '' ORDER BY i.id {cap}"""
        ).fetchall()

    def chunk_item_texts(self) -> list[tuple[int, str | None, str | None]]:
        """(item, query text, chunk text) of every chunk item, by item id; a text not
        imported (yet) is None."""
        return self.db.execute(
            """SELECT i.id, q.text, c.text FROM items i
               LEFT JOIN queries q ON q.id = i.query_id LEFT JOIN chunks c ON c.id = i.chunk_id
               WHERE i.kind = 'chunk' ORDER BY i.id"""
        ).fetchall()

    def trace_item_answers(self) -> list[tuple[int, str | None, str | None]]:
        """(item, answer, contexts as stored (a JSON list)) of every trace item, by item id."""
        return self.db.execute(
            """SELECT i.id, t.answer, t.contexts FROM items i JOIN traces t ON t.id = i.trace_id
               WHERE i.kind = 'trace' ORDER BY i.id"""
        ).fetchall()

    # ------------------------------------------------------------ calibrations

    def add_calibrations(self, rows: list[Mapping[str, Any]]) -> None:
        """Reviews of judges (:data:`CALIBRATION_COLUMNS` each), in one transaction, all
        stamped with the same time."""
        now = utc_now()
        with self.write():
            for row in rows:
                self.db.execute(
                    """INSERT INTO calibrations (fingerprint, rubric, window, n, kappa, ci_low, ci_high, weights,
                           verdict, sample, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)""",
                    [*(row[c] for c in CALIBRATION_COLUMNS), now],
                )

    def calibration_trend(self) -> list[tuple]:
        """(fingerprint, rubric, week, n, kappa, ci low, ci high, verdict) of the newest
        review per (judge, week), oldest week first."""
        return self.db.execute(
            """SELECT c.fingerprint, c.rubric, c.window, c.n, c.kappa, c.ci_low, c.ci_high, c.verdict FROM calibrations c
               WHERE c.id = (SELECT max(id) FROM calibrations d WHERE d.fingerprint = c.fingerprint
                             AND d.window = c.window)
               ORDER BY c.window, c.fingerprint"""
        ).fetchall()
