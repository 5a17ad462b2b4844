"""Recorded ``check`` reports: a run's figures over time (``calibration check --record``,
``calibration history``, the Metrics page's history view). Append-only."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from annotation.store.base import StoreBase, utc_now

__all__ = ["History"]

_COLUMNS = ("id", "name", "k", "golden_hash", "golden_labels", "run_hash", "passed", "created_at")


class History(StoreBase):
    """Check reports, one row per ``--record``."""

    def record_check(
        self,
        name: str,
        report: Mapping[str, Any],
        *,
        golden_hash: str,
        golden_labels: int,
        run_hash: str,
        created_at: str | None = None,
    ) -> int:
        """Store one report; its id."""
        with self.write():
            cursor = self.db.execute(
                """INSERT INTO check_reports (name, k, golden_hash, golden_labels, run_hash, passed, report,
                       created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)""",
                [
                    name,
                    int(report["k"]),
                    golden_hash,
                    int(golden_labels),
                    run_hash,
                    int(bool(report["passed"])),
                    json.dumps(report, sort_keys=True),
                    created_at or utc_now(),
                ],
            )
            return int(cursor.lastrowid or 0)

    def check_reports(self, name: str | None = None, *, with_report: bool = False) -> list[dict[str, Any]]:
        """Recorded reports, oldest first (of one run name, or all); ``with_report`` adds the
        whole report (parsed)."""
        columns = ", ".join(_COLUMNS) + (", report" if with_report else "")
        where, args = ("WHERE name = ?", [name]) if name is not None else ("", [])
        rows = self.db.execute(f"SELECT {columns} FROM check_reports {where} ORDER BY id", args).fetchall()
        out = []
        for row in rows:
            entry = dict(zip(_COLUMNS, row))
            entry["passed"] = bool(entry["passed"])
            if with_report:
                entry["report"] = _parsed(row[-1])
            out.append(entry)
        return out

    def check_report(self, report_id: int) -> dict[str, Any] | None:
        """One recorded report, whole."""
        row = self.db.execute(
            f"SELECT {', '.join(_COLUMNS)}, report FROM check_reports WHERE id = ?", [report_id]
        ).fetchone()
        if row is None:
            return None
        entry = dict(zip(_COLUMNS, row))
        entry["passed"] = bool(entry["passed"])
        entry["report"] = _parsed(row[-1])
        return entry


def _parsed(text: Any) -> Any:
    """A stored report parsed; a row that is not JSON (written by something else) is returned as
    None, for the reader to skip and name, never a traceback."""
    try:
        return json.loads(text)
    except (TypeError, ValueError, RecursionError):
        return None
