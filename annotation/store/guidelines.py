"""Each rubric's guidelines, versioned (:class:`GuidelineVersions`, #43).

The built-in guidelines (:func:`annotation.rubrics.default_guidelines`) are version 0 and are
never stored; an admin's edit appends version 1, 2, ... of its rubric (``guidelines``, m022:
append-only, who and when kept), the newest counting. A label made here records the version in
force when it was written (``labels.guidelines``, set inside the label's INSERT:
:meth:`annotation.store.labels.Labels.add_label`), so a golden set can say which guidelines its
labels were made under.
"""

from __future__ import annotations

from typing import Any

from annotation.rubrics import Guidelines, check_guidelines_text, default_guidelines, get_rubric
from annotation.store.base import StoreBase, StoreError, utc_now
from annotation.store.retirements import live, live_item

__all__ = ["GuidelineVersions", "GUIDELINES_IN_FORCE"]

# The version in force for the rubric bound to the one parameter: what a label's INSERT records
GUIDELINES_IN_FORCE = "(SELECT coalesce(max(version), 0) FROM guidelines WHERE rubric = ?)"


class GuidelineVersions(StoreBase):
    """Guidelines read and edited: the version in force, one version, the history, a new edit."""

    def guidelines_version(self, rubric: str) -> int:
        """The version in force of ``rubric``'s guidelines: 0 (built in) until an admin edits them.
        One indexed read: what the labelling page asks before it shows guidelines it has cached."""
        get_rubric(rubric)
        row = self.db.execute("SELECT max(version) FROM guidelines WHERE rubric = ?", [rubric]).fetchone()
        return int(row[0]) if row and row[0] is not None else 0

    def guidelines(self, rubric: str, version: int | None = None) -> Guidelines:
        """``rubric``'s guidelines in force (``version`` None) or as they were at ``version``
        (0: the built-in ones); StoreError for a version that was never written."""
        get_rubric(rubric)
        if version is None:
            row = self.db.execute(
                "SELECT version, text, who, created_at FROM guidelines WHERE rubric = ? ORDER BY version DESC LIMIT 1",
                [rubric],
            ).fetchone()
        elif version == 0:
            row = None
        else:
            row = self.db.execute(
                "SELECT version, text, who, created_at FROM guidelines WHERE rubric = ? AND version = ?",
                [rubric, int(version)],
            ).fetchone()
            if row is None:
                raise StoreError(f"the {rubric} guidelines have no version {version}")
        if row is None:
            return default_guidelines(rubric)
        return Guidelines(rubric, int(row[0]), str(row[1]), str(row[2]), str(row[3]))

    def labels_by_guidelines(self, rubric: str) -> dict[int | None, int]:
        """The label rows of ``rubric`` with a grade (current or not) by the guidelines version
        they were made under; None: not recorded (stored before versions were, or imported)."""
        get_rubric(rubric)
        rows = self.db.execute(
            """SELECT guidelines, count(*) FROM labels WHERE rubric = ? AND value IS NOT NULL
               GROUP BY guidelines""",
            [rubric],
        ).fetchall()
        return {(None if version is None else int(version)): int(count) for version, count in rows}

    def guideline_history(self, rubric: str) -> list[dict[str, Any]]:
        """Every version of ``rubric``'s guidelines, the built-in one first: ``{"version", "who"
        (None for the built-in), "created_at" (None), "labels": the label rows with a grade made
        under it, current or not}`` (:meth:`labels_by_guidelines`)."""
        counts = self.labels_by_guidelines(rubric)
        history: list[dict[str, Any]] = [
            {"version": 0, "who": None, "created_at": None, "labels": counts.get(0, 0)}
        ]
        for version, who, created_at in self.db.execute(
            "SELECT version, who, created_at FROM guidelines WHERE rubric = ? ORDER BY version", [rubric]
        ).fetchall():
            history.append(
                {
                    "version": int(version),
                    "who": who,
                    "created_at": created_at,
                    "labels": counts.get(int(version), 0),
                }
            )
        return history

    def current_label_guidelines(self, annotator: str | None = None) -> dict[int | None, int]:
        """The current chunk labels (one person's or everyone's; retractions and retired rows
        left out, as :meth:`annotation.store.labels.Labels.current_labels` reads them) counted by
        the relevance guidelines version they were made under; None: not recorded (made before
        guidelines were, or imported)."""
        rows = self.db.execute(
            f"""SELECT l.guidelines, count(*) FROM labels l JOIN items i ON i.id = l.item_id
                JOIN annotators a ON a.id = l.annotator_id
                WHERE i.kind = 'chunk' AND l.value IS NOT NULL AND (CAST(? AS TEXT) IS NULL OR a.name = ?)
                AND {live_item("i")} AND l.id = (
                    SELECT max(id) FROM labels WHERE item_id = l.item_id AND annotator_id = l.annotator_id
                    AND {live("id", "labels")})
                GROUP BY l.guidelines""",
            [annotator, annotator],
        ).fetchall()
        return {(None if version is None else int(version)): int(count) for version, count in rows}

    def set_guidelines(self, rubric: str, text: str, who: str) -> Guidelines:
        """Append ``text`` as the next version of ``rubric``'s guidelines, by ``who``; the
        guidelines in force after. Text equal to the guidelines in force adds no version (an
        edit that changes nothing is no new rubric, and no new judge). InvalidGuidelines for
        text that cannot be kept (:func:`annotation.rubrics.check_guidelines_text`)."""
        get_rubric(rubric)
        kept = check_guidelines_text(text)
        if not (who or "").strip():
            raise StoreError("an edit of the guidelines needs the name of who made it")
        with self.write() as db:
            now = self.guidelines(rubric)
            if kept == now.text:
                return now
            db.execute(
                "INSERT INTO guidelines (rubric, version, text, who, created_at) VALUES (?, ?, ?, ?, ?)",
                [rubric, now.version + 1, kept, who.strip(), utc_now()],
            )
        return self.guidelines(rubric)
