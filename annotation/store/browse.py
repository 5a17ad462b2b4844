"""What an admin browses: items with everyone's labels and the judges' grades side by side, one
item's whole history, and adjudication (:class:`Browse`).

Admins only: these reads see every person's and every judge's labels, so no labelling page calls
them (blind by default, DESIGN principle 4; ``annotation.pooling`` never reads them).

The definitions every face uses, made here once:

- **people's labels** on an item: each annotator's current label (the newest row per (item,
  annotator); a retraction removes it). On a pair the value is mapped from the slot shown first to
  the candidate (0 = A, the pair's first trace; 1 = B); tie (2) and both bad (3) stay apart.
- **people's grade** (:func:`people_grade_of`): the median (lower middle) of the people's current
  grades, :func:`aggregate_grades` ``"median"``: the exports' default and the review's consensus.
  None on a pair (choices have no median) and on an item nobody labelled.
- **people disagree** (:func:`people_disagree_of`): two or more people hold a current label on the
  item and their values are not all equal. Any difference counts, 2 against 3 as much as 0
  against 3: with a relevance threshold of 2 a 1-grade difference is the one that flips a
  document, and the admin who settles decides how far apart is too far.
- **a judge's grade**: its newest value on the item in its first repeat (repeat 0); an error row
  never counts (as the review's ``judge_answers`` reads it). Pairs are left out: a pairwise judge's
  answer is its swap-averaged preference over both orders, which the review computes; the opened
  item lists its answers in each order. Without a chosen judge, the current version (the newest of
  its name) of every judge counts.
- **judge and people disagree** (:func:`judge_disagrees_of`): a judge's grade differs from the
  people's grade; None (neither) when the item has no people's grade or no grade of that judge.
- **a settlement**: an admin's label row marked as the settled one for its item (``settlements``,
  append-only, migration m013). The newest settlement per item counts; a newer one supersedes,
  and one whose ``label_id`` is NULL withdraws it (the item is unsettled again). The settled value
  is that label row's value, whatever the admin labels later. The exports' aggregate
  (:meth:`Labels.export_qrels`) gives a settled item its settled value under every method.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from annotation.rubrics import KIND_OF_RUBRIC, RUBRIC_OF_KIND, candidate_value, get_rubric
from annotation.store.base import StoreError, inserted_id, utc_now
from annotation.store.labels import Labels, aggregate_grades
from annotation.store.retirements import live, live_item

__all__ = [
    "Browse",
    "KIND_OF_RUBRIC",
    "RUBRIC_OF_KIND",
    "people_grade_of",
    "people_disagree_of",
    "judge_disagrees_of",
    "candidate_value",
]

SHOWN_CHARS = 100  # characters of a chunk or an answer in a row of the browser's table

# the newest row per (item, annotator): the label that counts (a retraction has value NULL)
# its newest live row (annotation.store.retirements): a retired label file's grade is not counted
_NEWEST_LABEL = (
    "l.id = (SELECT max(id) FROM labels m WHERE m.item_id = l.item_id AND m.annotator_id = l.annotator_id"
    f" AND {live('m.id', 'labels')})"
)
# the current settlement of an item: its newest settlements row
_NEWEST_SETTLEMENT = "s.id = (SELECT max(id) FROM settlements n WHERE n.item_id = s.item_id)"


def people_grade_of(kind: str, values: list[int]) -> int | None:
    """The people's grade: the median (lower middle) of their current grades; None on a pair or
    with no grade (module docstring)."""
    if kind == "pair" or not values:
        return None
    return aggregate_grades(values, "median")


def people_disagree_of(values: list[int]) -> bool:
    """Two or more people's current values, not all equal (module docstring)."""
    return len(values) >= 2 and len(set(values)) > 1


def judge_disagrees_of(judge: int | None, people: int | None) -> bool | None:
    """Whether a judge's grade differs from the people's grade; None when either is missing."""
    if judge is None or people is None:
        return None
    return judge != people


def _short(text: str | None, limit: int = SHOWN_CHARS) -> str:
    text = " ".join((text or "").split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


class Browse(Labels):
    """Items as an admin browses them, one item's history, and settlements."""

    # ------------------------------------------------------------ the browser's rows

    def _item_filter(
        self,
        query: str | None,
        rubric: str | None,
        run: str | None,
        annotator: str | None,
        judge: str | None,
        week: str | None,
    ) -> tuple[str, list[Any]]:
        """WHERE over ``items i`` (with ``queries q`` and ``traces t`` joined) and its parameters;
        StoreError for a rubric, run, annotator or judge the store does not have."""
        clauses, params = [live_item("i")], []  # the items the queues, exports and reviews count
        if rubric:
            if rubric not in KIND_OF_RUBRIC:
                raise StoreError(f"rubric {rubric!r}; expected one of {', '.join(KIND_OF_RUBRIC)}")
            clauses.append("i.kind = ?")
            params.append(KIND_OF_RUBRIC[rubric])
        if query and "\x00" in query:  # PostgreSQL cannot hold one; no stored text has one
            raise StoreError("a search with a NUL character (U+0000); expected text without it")
        if query:
            clauses.append(
                "(instr(lower(ifnull(i.query_id, '')), lower(?)) > 0 OR instr(lower(ifnull(q.text, '')), lower(?)) > 0"
                " OR instr(lower(ifnull(t.question, '')), lower(?)) > 0)"
            )
            params += [query] * 3
        if run:
            row = self.db.execute("SELECT id FROM runs WHERE name = ?", [run]).fetchone()
            if row is None:
                raise StoreError(f"no run named {run!r}")
            clauses.append(
                "EXISTS (SELECT 1 FROM rankings r WHERE r.run_id = ? AND r.query_id = i.query_id"
                " AND r.chunk_id = i.chunk_id)"
            )
            params.append(row[0])
        if annotator:
            person = self.db.execute("SELECT id FROM annotators WHERE name = ?", [annotator]).fetchone()
            if person is None:
                raise StoreError(f"no annotator named {annotator!r}")
            clauses.append(
                "EXISTS (SELECT 1 FROM labels l WHERE l.item_id = i.id AND l.annotator_id = ?"
                f" AND l.value IS NOT NULL AND {_NEWEST_LABEL})"
            )
            params.append(person[0])
        if judge:
            if self.db.execute("SELECT 1 FROM judges WHERE fingerprint = ?", [judge]).fetchone() is None:
                raise StoreError(f"no judge with fingerprint {judge!r}")
            clauses.append(
                "EXISTS (SELECT 1 FROM judge_labels j WHERE j.item_id = i.id AND j.fingerprint = ?"
                " AND j.value IS NOT NULL)"
            )
            params.append(judge)
        if week:
            clauses.append("i.id IN (SELECT item_id FROM review_samples WHERE week = ?)")
            params.append(week)
        return " AND ".join(clauses), params

    def browse_items(
        self,
        *,
        query: str | None = None,
        rubric: str | None = None,
        run: str | None = None,
        annotator: str | None = None,
        judge: str | None = None,
        people_disagree: bool = False,
        judge_disagrees: bool = False,
        judge_grade: int | None = None,
        people_grade: int | None = None,
        week: str | None = None,
        settled: bool | None = None,
        between: tuple[str, str] | None = None,
    ) -> list[dict[str, Any]]:
        """The items that pass every filter given, by item id. Filters (module docstring for the
        terms): ``query`` a piece of the query id, query text or trace question (ASCII letters
        case-insensitive); ``rubric`` the items of that rubric's kind; ``run`` chunk items whose
        (query, chunk) that run returned; ``annotator`` items with a current label of theirs;
        ``judge`` (a fingerprint) items that judge graded, and the judge the judge filters read;
        ``people_disagree``; ``judge_disagrees``; ``judge_grade`` and ``people_grade`` (a cell of
        the review's confusion matrix: the judge's grade, the people's grade); ``week`` the items
        of that week's review sample; ``settled`` True: settled items only, False: unsettled only;
        ``between`` (two people's names) the items both have a current label on, the two differing
        (the disagreements of one pair on the Agreement page).

        Each row: ``{"item_id", "kind", "rubric", "query_id", "query" (the query text, or a
        trace's question), "shown" (the chunk's or answer's opening; a pair's two trace ids),
        "labels" (current people's labels), "people" ({annotator: value}), "people_grade",
        "judges" ({"name vN": grade}), "people_disagree", "judge_disagrees" (True when any judge
        counted disagrees, None when no judge could be compared), "settled" (the settled value or
        None), "settled_by"}``."""
        where, params = self._item_filter(query, rubric, run, annotator, judge, week)
        if between is not None:
            self._check_pair(between)
        source = (
            "FROM items i LEFT JOIN queries q ON q.id = i.query_id LEFT JOIN traces t ON t.id = i.trace_id "
            f"WHERE {where}"
        )
        candidates = f"SELECT i.id {source}"
        rows = self.db.execute(
            f"""SELECT i.id, i.kind, i.query_id, q.text, t.question, c.text, t.answer, i.chunk_id,
                       i.trace_id, i.trace_b_id
                FROM items i LEFT JOIN queries q ON q.id = i.query_id LEFT JOIN traces t ON t.id = i.trace_id
                LEFT JOIN chunks c ON c.id = i.chunk_id WHERE {where} ORDER BY i.id""",
            params,
        ).fetchall()
        people = self._people_votes(candidates, params)
        judges: dict[int, dict[str, int]] = {}
        for item, name, version, value in self.db.execute(
            f"""SELECT j.item_id, g.name, g.version, j.value FROM judge_labels j
                JOIN judges g ON g.fingerprint = j.fingerprint
                WHERE j.item_id IN ({candidates}) AND j.value IS NOT NULL AND j.ab_order IS NULL
                  AND ifnull(j.repeat, 0) = 0
                  AND j.id = (SELECT max(id) FROM judge_labels m WHERE m.fingerprint = j.fingerprint
                      AND m.item_id = j.item_id AND m.ab_order IS NULL AND ifnull(m.repeat, 0) = 0
                      AND m.value IS NOT NULL)
                  AND (g.fingerprint = ? OR (CAST(? AS TEXT) IS NULL
                      AND g.version = (SELECT max(version) FROM judges h WHERE h.name = g.name)))
                ORDER BY g.name, g.version""",
            [*params, judge, judge],
        ):
            judges.setdefault(item, {})[f"{name} v{version}"] = value
        settlements = self._current_settlements(f"s.item_id IN ({candidates})", params)
        out = []
        for item, kind, query_id, query_text, question, chunk, answer, chunk_id, trace_id, trace_b_id in rows:
            votes = people.get(item, {})
            grade = people_grade_of(kind, list(votes.values()))
            graded = judges.get(item, {})
            differs = [judge_disagrees_of(value, grade) for value in graded.values()]
            compared = [d for d in differs if d is not None]
            settlement = settlements.get(item)
            row = {
                "item_id": item,
                "kind": kind,
                "rubric": RUBRIC_OF_KIND[kind],
                "query_id": query_id,
                "query": query_text if kind == "chunk" else question,
                "shown": _short(chunk)
                if kind == "chunk"
                else (_short(answer) if kind == "trace" else f"{trace_id} vs {trace_b_id}"),
                "chunk_id": chunk_id,
                "labels": len(votes),
                "people": votes,
                "people_grade": grade,
                "judges": graded,
                "people_disagree": people_disagree_of(list(votes.values())),
                "judge_disagrees": any(compared) if compared else None,
                "settled": settlement["value"] if settlement else None,
                "settled_by": settlement["admin"] if settlement else None,
            }
            if not _passes(row, people_disagree, judge_disagrees, judge_grade, people_grade, settled):
                continue
            if between is not None and not _pair_differs(votes, between):
                continue
            out.append(row)
        return out

    def _people_votes(self, candidates: str, params: list[Any]) -> dict[int, dict[str, int]]:
        """{item: {person: current value}} of the ``candidates`` (a SELECT of item ids), a pair's
        value as the candidate it names, people by name."""
        people: dict[int, dict[str, int]] = {}
        for item, kind, name, value, shown in self.db.execute(
            f"""SELECT l.item_id, i.kind, a.name, l.value, l.shown FROM labels l
                JOIN annotators a ON a.id = l.annotator_id JOIN items i ON i.id = l.item_id
                WHERE l.item_id IN ({candidates}) AND l.value IS NOT NULL AND {_NEWEST_LABEL}
                ORDER BY a.name""",
            params,
        ):
            people.setdefault(item, {})[name] = candidate_value(kind, value, shown)
        return people

    def _check_pair(self, between: tuple[str, str]) -> None:
        """StoreError unless ``between`` names two different people of the store."""
        if len(between) != 2 or between[0] == between[1]:
            raise StoreError(
                f"disagreements between two different people; got {', '.join(between) or 'none'}"
            )
        for name in between:
            if self.db.execute("SELECT 1 FROM annotators WHERE name = ?", [name]).fetchone() is None:
                raise StoreError(f"no annotator named {name!r}")

    # ------------------------------------------------------------ one item, whole

    def item_detail(self, item_id: int) -> dict[str, Any] | None:
        """What an admin reads of one item: ``{"item_id", "kind", "rubric", "query_id", "query",
        "chunk_id", "chunk", "trace_id", "system", "question", "contexts" (texts: a context given
        as a chunk id shows the chunk's text), "answer", "trace_b_id", "system_b", "answer_b"}``
        (None where the kind has none); None when there is no such item. A pair's A is its first
        trace, as stored (the labelling page shows each person the two in their own order)."""
        row = self.db.execute(
            """SELECT i.kind, i.query_id, q.text, i.chunk_id, c.text, i.trace_id, t.system, t.question,
                      t.contexts, t.answer, i.trace_b_id, b.system, b.answer
               FROM items i LEFT JOIN queries q ON q.id = i.query_id LEFT JOIN chunks c ON c.id = i.chunk_id
               LEFT JOIN traces t ON t.id = i.trace_id LEFT JOIN traces b ON b.id = i.trace_b_id
               WHERE i.id = ?""",
            [item_id],
        ).fetchone()
        if row is None:
            return None
        kind, query_id, query, chunk_id, chunk, trace_id, system, question, contexts, answer = row[:10]
        trace_b_id, system_b, answer_b = row[10:]
        texts = []
        if contexts:
            listed = _json_list(contexts)
            known = (
                dict(
                    self.db.execute(
                        f"SELECT id, text FROM chunks WHERE id IN ({', '.join('?' * len(listed))})", listed
                    ).fetchall()
                )
                if listed
                else {}
            )
            texts = [known.get(c) or c for c in listed]
        return {
            "item_id": item_id,
            "kind": kind,
            "rubric": RUBRIC_OF_KIND[kind],
            "query_id": query_id,
            "query": query,
            "chunk_id": chunk_id,
            "chunk": chunk,
            "trace_id": trace_id,
            "system": system,
            "question": question,
            "contexts": texts,
            "answer": answer,
            "trace_b_id": trace_b_id,
            "system_b": system_b,
            "answer_b": answer_b,
        }

    def item_labels(self, item_id: int) -> dict[str, list[dict[str, Any]]]:
        """Every row ever stored about one item, oldest first:

        - ``labels``: people's label rows, retractions included (value None): ``{"label_id",
          "annotator", "role", "rubric", "value" (as stored), "candidate" (a pair's value as the
          candidate it names: :func:`candidate_value`), "note", "seconds", "shown", "created_at",
          "retraction", "current" (the newest row of this annotator on the item), "settles" (the
          row the item's current settlement points to)}``;
        - ``judge_labels``: every judge row, errors included: ``{"id", "judge", "version",
          "fingerprint", "ab_order", "repeat", "value", "reason", "error", "served_model",
          "created_at"}``;
        - ``settlements``: ``{"id", "label_id" (None: a withdrawal), "admin", "value",
          "created_at", "current"}``.

        StoreError when there is no such item."""
        kind = self.db.execute("SELECT kind FROM items WHERE id = ?", [item_id]).fetchone()
        if kind is None:
            raise StoreError(f"no item {item_id}")
        settlements = [
            {"id": sid, "label_id": label_id, "admin": admin, "value": value, "created_at": created}
            for sid, label_id, admin, value, created in self.db.execute(
                """SELECT s.id, s.label_id, a.name, l.value, s.created_at FROM settlements s
                   JOIN annotators a ON a.id = s.annotator_id LEFT JOIN labels l ON l.id = s.label_id
                   WHERE s.item_id = ? ORDER BY s.id""",
                [item_id],
            )
        ]
        for entry in settlements:
            entry["current"] = entry is settlements[-1] and entry["label_id"] is not None
        settling = settlements[-1]["label_id"] if settlements else None
        labels = []
        for label_id, name, role, rubric, value, note, seconds, shown, created, newest in self.db.execute(
            """SELECT l.id, a.name, a.role, l.rubric, l.value, l.note, l.seconds, l.shown, l.created_at,
                      l.id = (SELECT max(id) FROM labels m WHERE m.item_id = l.item_id
                              AND m.annotator_id = l.annotator_id)
               FROM labels l JOIN annotators a ON a.id = l.annotator_id WHERE l.item_id = ? ORDER BY l.id""",
            [item_id],
        ):
            labels.append(
                {
                    "label_id": label_id,
                    "annotator": name,
                    "role": role,
                    "rubric": rubric,
                    "value": value,
                    "candidate": candidate_value(kind[0], value, shown),
                    "note": note,
                    "seconds": seconds,
                    "shown": shown,
                    "created_at": created,
                    "retraction": value is None,
                    "current": bool(newest),
                    "settles": settling is not None and label_id == settling,
                }
            )
        judge_rows = [
            dict(
                zip(
                    (
                        "id",
                        "judge",
                        "version",
                        "fingerprint",
                        "ab_order",
                        "repeat",
                        "value",
                        "reason",
                        "error",
                        "served_model",
                        "created_at",
                    ),
                    row,
                )
            )
            for row in self.db.execute(
                """SELECT j.id, g.name, g.version, j.fingerprint, j.ab_order, j.repeat, j.value, j.reason,
                          j.error, j.served_model, j.created_at
                   FROM judge_labels j LEFT JOIN judges g ON g.fingerprint = j.fingerprint
                   WHERE j.item_id = ? ORDER BY j.id""",
                [item_id],
            )
        ]
        return {"labels": labels, "judge_labels": judge_rows, "settlements": settlements}

    # ------------------------------------------------------------ adjudication

    def settle(self, item_id: int, admin: str, value: int, note: str | None = None) -> dict[str, int]:
        """Settle an item: the admin's label (a new row, ``value`` on the item's rubric; on a pair
        the candidate, 0 = A, 1 = B, 2 tie, 3 both bad) and a settlement pointing to it, in one
        transaction: ``{"label_id", "settlement_id"}``. A name the store does not know is added as
        an admin (single-user local mode); StoreError when ``admin`` is an annotator's name, for
        an item that does not exist, or a value off the rubric's scale (nothing is written)."""
        with self.write() as db:
            kind = db.execute("SELECT kind FROM items WHERE id = ?", [item_id]).fetchone()
            if kind is None:
                raise StoreError(f"no item {item_id}")
            rubric = RUBRIC_OF_KIND[kind[0]]
            try:
                get_rubric(rubric).check(value)
            except ValueError as exc:
                raise StoreError(f"item {item_id}: {exc}") from None
            admin_id = self._admin_id(admin)
            label_id = self.add_label(
                item_id, admin, value, rubric, note=note, shown="AB" if kind[0] == "pair" else None
            )
            cursor = db.execute(
                "INSERT INTO settlements (item_id, label_id, annotator_id, created_at) VALUES (?, ?, ?, ?)",
                [item_id, label_id, admin_id, utc_now()],
            )
        return {"label_id": label_id, "settlement_id": inserted_id(cursor)}

    def unsettle(self, item_id: int, admin: str) -> int:
        """Withdraw an item's settlement: a settlements row without a label (the id of the row).
        StoreError when the item is not settled or ``admin`` is an annotator's name."""
        with self.write() as db:
            admin_id = self._admin_id(admin)
            if not self._current_settlements("s.item_id = ?", [item_id]):
                raise StoreError(f"item {item_id} is not settled")
            cursor = db.execute(
                "INSERT INTO settlements (item_id, label_id, annotator_id, created_at) VALUES (?, NULL, ?, ?)",
                [item_id, admin_id, utc_now()],
            )
        return inserted_id(cursor)

    def settled_chunk_grades(self) -> dict[tuple[str, str], int]:
        """(query, chunk) -> settled grade of every chunk item with a current settlement: what the
        exports' aggregate gives those items (:meth:`Labels.export_qrels`)."""
        return {
            (q, c): v
            for q, c, v in self.db.execute(
                f"""SELECT i.query_id, i.chunk_id, l.value FROM settlements s
                    JOIN labels l ON l.id = s.label_id JOIN items i ON i.id = s.item_id
                    WHERE i.kind = 'chunk' AND {_NEWEST_SETTLEMENT} ORDER BY i.id"""
            )
        }

    def settlement_labels(self) -> set[int]:
        """The ids of every label row a settlement points at (current or withdrawn): grades given
        while reading everyone else's, which agreement between people leaves out."""
        return {
            int(r[0])
            for r in self.db.execute("SELECT label_id FROM settlements WHERE label_id IS NOT NULL").fetchall()
        }

    def _current_settlements(self, where: str, params: list[Any]) -> dict[int, dict[str, Any]]:
        """item -> ``{"value", "admin", "label_id"}`` of the current settlement of the items that
        pass ``where`` (over ``settlements s``); a withdrawn one is no settlement."""
        return {
            item: {"value": candidate_value(kind, value, shown), "admin": admin, "label_id": label_id}
            for item, kind, value, shown, admin, label_id in self.db.execute(
                f"""SELECT s.item_id, i.kind, l.value, l.shown, a.name, s.label_id FROM settlements s
                    JOIN labels l ON l.id = s.label_id JOIN items i ON i.id = s.item_id
                    JOIN annotators a ON a.id = s.annotator_id
                    WHERE {where} AND {_NEWEST_SETTLEMENT}""",
                params,
            )
        }

    def _admin_id(self, name: str) -> int:
        """The id of the admin ``name`` (a new name is added as an admin); StoreError when the name
        is an annotator's."""
        if not str(name or "").strip():
            raise StoreError("an admin's name is needed to settle an item")
        row = self.db.execute("SELECT id, role FROM annotators WHERE name = ?", [name]).fetchone()
        if row is None:
            return self.annotator_id(name, role="admin")
        if row[1] != "admin":
            raise StoreError(f"{name!r} is an annotator: only an admin settles an item")
        return int(row[0])


def _passes(
    row: Mapping[str, Any],
    people_disagree: bool,
    judge_disagrees: bool,
    judge_grade: int | None,
    people_grade: int | None,
    settled: bool | None,
) -> bool:
    """Whether a browser row passes the filters computed from its labels."""
    if people_disagree and not row["people_disagree"]:
        return False
    if judge_disagrees and not row["judge_disagrees"]:
        return False
    if judge_grade is not None and judge_grade not in row["judges"].values():
        return False
    if people_grade is not None and row["people_grade"] != people_grade:
        return False
    if settled is not None and (row["settled"] is not None) != settled:
        return False
    return True


def _pair_differs(votes: Mapping[str, int], between: tuple[str, str]) -> bool:
    """Whether both people of ``between`` have a current value in ``votes`` and the two differ."""
    first, second = between
    return first in votes and second in votes and votes[first] != votes[second]


def _json_list(text: str) -> list[str]:
    """A stored contexts list (JSON) as strings."""
    value = json.loads(text)
    return [str(v) for v in value] if isinstance(value, list) else []
