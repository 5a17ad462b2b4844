"""The review pass (#43, item 7): a reviewer (an admin, or an annotator who may review) reads one
person's labels and agrees with each or corrects it (:class:`Reviews`).

A review is a row of ``label_reviews`` (append-only, m022) about one label row: ``agree``, or
``correct`` with the reviewer's own label. A correction never overwrites: the reviewer's grade is a
new row of ``labels`` under the reviewer's name, and it settles the item (a ``settlements`` row
pointing at it, as an admin's settlement on the Items page does), so every export gives the item the
corrected grade while the person's label stays as they made it. Only a person's current label is
reviewed (their newest live row of the item): a label they changed since the reviewer opened it is
refused, and the new one waits for its own review. Nobody reviews their own labels.

The share corrected per person is over their reviewed current labels: a label's newest review
counts (a second review is a new row).
"""

from __future__ import annotations

from typing import Any, Literal, TypedDict

from annotation.rubrics import RUBRIC_OF_KIND, get_rubric
from annotation.store.base import StoreError, inserted_id, utc_now
from annotation.store.browse import Browse
from annotation.store.identity import role_of
from annotation.store.retirements import live, live_item

__all__ = ["Reviews", "ReviewShare", "VERDICTS"]

VERDICTS = ("agree", "correct")

# a person's current label: their newest live row of the item, with a value
_CURRENT = (
    "l.value IS NOT NULL AND l.id = (SELECT max(id) FROM labels m WHERE m.item_id = l.item_id"
    f" AND m.annotator_id = l.annotator_id AND {live('m.id', 'labels')})"
)
# not an adjudication: a settlement's label (an admin's, or a review's correction) is not reviewed
_NOT_SETTLING = "NOT EXISTS (SELECT 1 FROM settlements s WHERE s.label_id = l.id)"
# a label row's newest review
_NEWEST_REVIEW = "r.id = (SELECT max(id) FROM label_reviews n WHERE n.label_id = r.label_id)"


class ReviewShare(TypedDict):
    """One person's labels under review: their current labels, how many were reviewed, agreed
    with and corrected (each label's newest review)."""

    person: str
    labels: int
    reviewed: int
    agreed: int
    corrected: int


class Reviews(Browse):
    """People's labels reviewed: agreed with or corrected, never overwritten."""

    def labels_to_review(
        self, person: str, kind: str, *, unreviewed_only: bool = True, limit: int | None = None
    ) -> list[dict[str, Any]]:
        """``person``'s current labels on ``kind`` items, oldest first: ``{"label_id", "item_id",
        "value", "shown", "rubric", "created_at", "review"}`` where ``review`` is the label's newest
        review (``{"verdict", "reviewer", "value" (the correction's), "created_at"}``) or None.
        ``unreviewed_only``: the labels no one reviewed yet."""
        person_id = self.annotator_id(person, create=False)
        rows = self.db.execute(
            f"""SELECT l.id, l.item_id, l.value, l.shown, l.rubric, l.created_at
                FROM labels l JOIN items i ON i.id = l.item_id
                WHERE l.annotator_id = ? AND i.kind = ? AND {live_item("i")} AND {_CURRENT} AND {_NOT_SETTLING}
                ORDER BY l.id""",
            [person_id, kind],
        ).fetchall()
        reviews = self._newest_reviews(person_id)
        out = []
        for label_id, item_id, value, shown, rubric, created_at in rows:
            review = reviews.get(int(label_id))
            if unreviewed_only and review is not None:
                continue
            out.append(
                {
                    "label_id": int(label_id),
                    "item_id": int(item_id),
                    "value": value,
                    "shown": shown,
                    "rubric": rubric,
                    "created_at": created_at,
                    "review": review,
                }
            )
            if limit is not None and len(out) >= limit:
                break
        return out

    def _newest_reviews(self, person_id: int) -> dict[int, dict[str, Any]]:
        """label id -> its newest review, for every reviewed label row of one person."""
        return {
            int(label_id): {
                "verdict": verdict,
                "reviewer": reviewer,
                "value": value,
                "created_at": created_at,
            }
            for label_id, verdict, reviewer, value, created_at in self.db.execute(
                f"""SELECT r.label_id, r.verdict, a.name, c.value, r.created_at FROM label_reviews r
                    JOIN annotators a ON a.id = r.reviewer_id LEFT JOIN labels c ON c.id = r.correction_id
                    WHERE r.annotator_id = ? AND {_NEWEST_REVIEW}""",
                [person_id],
            )
        }

    def review_label(
        self,
        label_id: int,
        reviewer: str,
        verdict: Literal["agree", "correct"],
        value: int | None = None,
        note: str | None = None,
    ) -> dict[str, int | None]:
        """Record a review of the label row ``label_id`` by ``reviewer``, in one transaction:
        ``agree``, or ``correct`` to ``value`` (the reviewer's own label, a new row, which settles the
        item). Returns ``{"review_id", "correction_id", "settlement_id"}`` (None for an agreement).
        StoreError, with nothing written, for a reviewer who may not review, one's own label, a label
        that is no longer its person's current one, a verdict other than :data:`VERDICTS`, a
        correction without a value, off the scale, or equal to the label's."""
        if verdict not in VERDICTS:
            raise StoreError(f"a review is one of {', '.join(VERDICTS)}, not {verdict!r}")
        with self.write() as db:
            reviewer_id = self._reviewer_id(reviewer)
            row = db.execute(
                f"""SELECT l.item_id, l.annotator_id, l.value, l.rubric, l.shown, i.kind, a.name
                    FROM labels l JOIN items i ON i.id = l.item_id JOIN annotators a ON a.id = l.annotator_id
                    WHERE l.id = ? AND {live_item("i")} AND {_CURRENT}""",
                [label_id],
            ).fetchone()
            if row is None:
                raise StoreError(
                    f"label {label_id} is not a current label (its person changed or withdrew it since, "
                    "or it was never stored): open the person's labels again"
                )
            item_id, person_id, current, rubric, shown, kind, person = row
            if int(person_id) == reviewer_id:
                raise StoreError(
                    f"{reviewer!r} cannot review their own label: another reviewer or an admin does"
                )
            correction_id = settlement_id = None
            if verdict == "correct":
                correction_id, settlement_id = self._correct(
                    int(item_id), kind, rubric, current, shown, value, reviewer, reviewer_id, note
                )
            elif value is not None:
                raise StoreError("an agreement carries no grade: correct the label to give another")
            cursor = db.execute(
                """INSERT INTO label_reviews (label_id, item_id, annotator_id, reviewer_id, verdict,
                       correction_id, note, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)""",
                [label_id, item_id, person_id, reviewer_id, verdict, correction_id, note, utc_now()],
            )
        return {
            "review_id": inserted_id(cursor),
            "correction_id": correction_id,
            "settlement_id": settlement_id,
        }

    def _correct(
        self,
        item_id: int,
        kind: str,
        rubric: str,
        current: int,
        shown: str | None,
        value: int | None,
        reviewer: str,
        reviewer_id: int,
        note: str | None,
    ) -> tuple[int, int]:
        """The reviewer's grade as their own label, settling the item: (label id, settlement id).
        On a pair, ``value`` is the candidate (0 = A, 1 = B, as the Items page settles)."""
        if value is None:
            raise StoreError("a correction needs the grade it corrects the label to")
        try:
            get_rubric(RUBRIC_OF_KIND[kind]).check(value)
        except ValueError as exc:
            raise StoreError(f"item {item_id}: {exc}") from None
        as_candidate = (1 - current) if kind == "pair" and shown == "BA" and current in (0, 1) else current
        if value == as_candidate:
            raise StoreError(f"the label already says {value}: agree with it instead")
        correction_id = self.add_label(
            item_id, reviewer, value, rubric, note=note, shown="AB" if kind == "pair" else None
        )
        cursor = self.db.execute(
            "INSERT INTO settlements (item_id, label_id, annotator_id, created_at) VALUES (?, ?, ?, ?)",
            [item_id, correction_id, reviewer_id, utc_now()],
        )
        return correction_id, inserted_id(cursor)

    def _reviewer_id(self, name: str) -> int:
        """The id of ``name`` when they may review (an admin, or a reviewer; a name the store does not
        know is added as an admin: single-user local mode); StoreError otherwise."""
        row = self.db.execute(
            f"SELECT a.id, {role_of('a')} FROM annotators a WHERE a.name = ?", [name]
        ).fetchone()
        if row is None:  # single-user local mode: the name typed is an admin's, as a settlement's
            if not str(name or "").strip():
                raise StoreError("a reviewer's name is needed to review a label")
            return self.annotator_id(name, role="admin")
        if row[1] not in ("admin", "reviewer"):
            raise StoreError(f"{name!r} is an {row[1]}: only a reviewer or an admin reviews labels")
        return int(row[0])

    def review_shares(self, kind: str) -> list[ReviewShare]:
        """Per person with a current label on ``kind`` items, by name: their current labels (a
        settlement's label left out: an adjudication, not a label to review), and of those the
        reviewed, agreed with and corrected ones (each label's newest review)."""
        rows = self.db.execute(
            f"""SELECT a.name, count(*),
                       count(r.id), sum(CASE WHEN r.verdict = 'agree' THEN 1 ELSE 0 END),
                       sum(CASE WHEN r.verdict = 'correct' THEN 1 ELSE 0 END)
                FROM labels l JOIN items i ON i.id = l.item_id JOIN annotators a ON a.id = l.annotator_id
                LEFT JOIN label_reviews r ON r.label_id = l.id AND {_NEWEST_REVIEW}
                WHERE i.kind = ? AND {live_item("i")} AND {_CURRENT} AND {_NOT_SETTLING}
                GROUP BY a.name ORDER BY a.name""",
            [kind],
        ).fetchall()
        return [
            {
                "person": name,
                "labels": int(n),
                "reviewed": int(reviewed),
                "agreed": int(agreed or 0),
                "corrected": int(corrected or 0),
            }
            for name, n, reviewed, agreed, corrected in rows
        ]

    def set_reviewer(self, name: str, may_review: bool) -> None:
        """Let an annotator review others' labels (the role ``reviewer``), or take it back; an admin
        reviews already (StoreError), as does nobody unknown to the store."""
        with self.write() as db:
            row = db.execute("SELECT role FROM annotators WHERE name = ?", [name]).fetchone()
            if row is None:
                raise StoreError(f"no annotator named {name!r}")
            if row[0] == "admin":
                raise StoreError(f"{name!r} is an admin: an admin reviews labels already")
            db.execute("UPDATE annotators SET reviewer = ? WHERE name = ?", [1 if may_review else 0, name])
