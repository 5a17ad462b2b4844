"""Judges: their fingerprints, names and versions, their answers and the models that served
them, what they are asked, and how far they were trusted (:class:`Judges`).

A judge is its fingerprint (DESIGN principle 5). A *name*, chosen by a person (default:
:func:`default_judge_name`, e.g. ``gpt-4.1-mini/relevance``, ``offline-lexical/relevance``), holds
the fingerprints that are one judge over time: each is a *version*, numbered 1, 2, ... in the order
they were registered; the newest is *current*. A fingerprint keeps the name it was first registered
under, and the judges of one name grade one rubric. ``changed`` says which settings differ from the
version before (:func:`changed_settings`): an offline judge refitted on new labels is the next
version of its name with ``changed == ["trained_on"]``, not a new judge.

Every judge label keeps the model the endpoint said it served (``served_model``, the reply's
``model``) and its ``system_fingerprint`` when the endpoint sends one: a provider alias that moves
to another model keeps the fingerprint (which hashes the model *asked for*) but shows up in
:meth:`Judges.served_models` as a new segment.

``judge_labels`` is append-only (triggers refuse UPDATE and DELETE): a failed call is a
row with ``error`` set and no value, never a made-up grade; the newest value per (item,
order, repeat) counts. ``calibrations`` keeps every weekly review of a judge.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from typing import Any

from annotation.errors import skip_record
from annotation.store.base import StoreBase, StoreError, utc_now
from annotation.store.retirements import live_item

__all__ = [
    "Judges",
    "JUDGE_COLUMNS",
    "CALIBRATION_COLUMNS",
    "NAME_MAX",
    "RESULT_KEYS",
    "default_judge_name",
    "check_judge_name",
    "changed_settings",
]


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
    "served_model",  # the reply's ``model``: what the endpoint says it served (None: not said)
    "system_fingerprint",  # the reply's ``system_fingerprint``, when the endpoint sends one
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
    "rule",  # how the verdict was reached (m010; NULL: the old rule, a point estimate on quadratic weights)
    "statistic",  # the kappa the verdict read (unweighted, linear, quadratic)
    "served_model",  # the model the endpoint served the answers this review rests on (None: not said)
)


NAME_MAX = 120  # characters of a judge name
# what a judge measured or was fitted to produce, not what it is: never a reason for a new version
RESULT_KEYS = frozenset(
    {"fingerprint", "agreement", "out_of_fold", "n_labels", "class_counts", "grades_predicted"}
)
# a digest is reported as the setting it digests (the training labels' grades and texts)
REPORTED_AS = {"trained_on_sha": "trained_on"}


def default_judge_name(settings: Mapping[str, Any]) -> str:
    """``offline-lexical/<rubric>`` for the offline judge (the same across refits), else
    ``<model>/<rubric>`` (``gpt-4.1-mini/relevance``). Migration m009 gave existing judges the same."""
    rubric = settings.get("rubric") or "unknown"
    if settings.get("kind") == "lexical" or settings.get("endpoint") == "offline":
        return f"offline-lexical/{rubric}"
    return f"{settings.get('model') or 'judge'}/{rubric}"


def check_judge_name(name: str) -> str:
    """The name without surrounding spaces; StoreError for an empty one, one longer than
    :data:`NAME_MAX` characters, or one holding a control character (a line break)."""
    stripped = str(name).strip()
    if not stripped:
        raise StoreError("a judge name cannot be empty")
    if len(stripped) > NAME_MAX:
        raise StoreError(f"judge name of {len(stripped)} characters; at most {NAME_MAX}")
    if any(ord(ch) < 32 or ord(ch) == 127 for ch in stripped):
        raise StoreError(f"judge name {stripped!r} holds a control character (a line break?)")
    return stripped


def changed_settings(previous: Mapping[str, Any], settings: Mapping[str, Any]) -> list[str]:
    """The setting keys whose values differ between two versions of a judge, sorted, leaving out
    what a judge measured rather than what it is (:data:`RESULT_KEYS`); the digest of the training
    labels is reported as ``trained_on``. A key missing on one side differs from a value."""
    keys = (set(previous) | set(settings)) - RESULT_KEYS
    return sorted(
        {
            REPORTED_AS.get(k, k)
            for k in keys
            if (k in previous, previous.get(k)) != (k in settings, settings.get(k))
        }
    )


def _as_stored(settings: Mapping[str, Any]) -> dict[str, Any]:
    """Settings as they read back from the store (JSON), so that old and new compare alike."""
    stored: dict[str, Any] = json.loads(json.dumps(dict(settings), sort_keys=True))
    return stored


def _lineage(rows: list[dict[str, Any]]) -> None:
    """Mark each row (with name, version and settings) ``current`` (the newest version of its
    name) and with ``changed`` against the version before it ([] for the first)."""
    by_name: dict[str, dict[int, dict[str, Any]]] = {}
    for row in rows:
        by_name.setdefault(row["name"], {})[row["version"]] = row
    for versions in by_name.values():
        ordered = sorted(versions)
        for before, version in zip([None, *ordered], ordered):
            row = versions[version]
            row["current"] = version == ordered[-1]
            row["changed"] = (
                [] if before is None else changed_settings(versions[before]["settings"], row["settings"])
            )


class Judges(StoreBase):
    """Judges, their answers, the items they are asked about, and their calibrations."""

    def judge_identity(
        self, fingerprint: str, settings: Mapping[str, Any], name: str | None = None
    ) -> dict[str, Any]:
        """``{"name", "version", "current", "changed", "registered"}`` of a judge: those it has when
        its fingerprint is registered, else those :meth:`register_judge` would give it (the next
        version of ``name``, default :func:`default_judge_name`; ``current`` True). StoreError: a
        name that is not one (:func:`check_judge_name`), another name than the one this fingerprint
        has, or a name whose judges grade another rubric."""
        chosen = None if name is None else check_judge_name(name)
        known = self.db.execute("SELECT name FROM judges WHERE fingerprint = ?", [fingerprint]).fetchone()
        if known is not None:
            if chosen is not None and chosen != known[0]:
                raise StoreError(
                    f"this judge ({fingerprint[:16]}) is named {known[0]!r}; a judge keeps its first name "
                    f"(its settings are those of a version of {known[0]!r}, not a new judge {chosen!r})"
                )
            (row,) = [r for r in self._judge_rows(known[0]) if r["fingerprint"] == fingerprint]
            return {k: row[k] for k in ("name", "version", "current", "changed")} | {"registered": True}
        chosen = chosen or default_judge_name(settings)
        versions = self._judge_rows(chosen)
        new = _as_stored(settings)
        if versions and versions[-1]["rubric"] != new.get("rubric"):
            raise StoreError(
                f"judge name {chosen!r} grades {versions[-1]['rubric']}; a {new.get('rubric')} judge needs another name"
            )
        return {
            "name": chosen,
            "version": versions[-1]["version"] + 1 if versions else 1,
            "current": True,
            "changed": changed_settings(versions[-1]["settings"], new) if versions else [],
            "registered": False,
        }

    def register_judge(
        self, fingerprint: str, settings: Mapping[str, Any], name: str | None = None
    ) -> dict[str, Any]:
        """A judge, once: its fingerprint, the settings it was computed from, and its name and
        version (the next of ``name``, default :func:`default_judge_name`). Registering a known
        fingerprint again changes nothing. Returns :meth:`judge_identity` (``registered`` True)."""
        with self.write():
            identity = self.judge_identity(fingerprint, settings, name)
            if identity["registered"]:
                return identity
            self.db.execute(
                """INSERT INTO judges (fingerprint, name, version, model, endpoint, prompt_version, prompt_sha,
                       temperature, seed, rubric, kind, settings, created_at)
                   VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)""",
                [
                    fingerprint,
                    identity["name"],
                    identity["version"],
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
        return identity | {"registered": True}

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

    def judge_error_keys(self, fingerprint: str, containing: str) -> set[tuple[int, str | None, int]]:
        """(item, order, repeat) of this judge's error rows whose error holds ``containing`` (a
        batch's collection finds the error rows it stored before by the batch they name)."""
        return {
            (int(item), order, int(repeat or 0))
            for item, order, repeat, error in self.db.execute(
                "SELECT item_id, ab_order, repeat, error FROM judge_labels WHERE fingerprint = ? AND error IS NOT NULL",
                [fingerprint],
            )
            if containing in str(error)
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
        """Every judge, oldest first, with its settings, name, ``version`` (int), ``current`` (the
        newest version of its name), ``changed`` (setting keys that differ from the version before;
        [] for version 1) and counts: labels (current values on live items: a retired import's
        items are in no review), errors, tokens, rows (every row stored: errors and tokens were
        paid for, retired or not)."""
        return self._judge_rows()

    def judge_versions(self, name: str) -> list[dict[str, Any]]:
        """The versions of one judge name, oldest first, with the fields of :meth:`judges`
        ([] for a name no judge has)."""
        return self._judge_rows(name)

    def _judge_rows(self, name: str | None = None) -> list[dict[str, Any]]:
        where, params = ("WHERE j.name = ?", [name]) if name is not None else ("", [])
        rows = self.db.execute(
            f"""SELECT j.fingerprint, j.name, j.version, j.kind, j.rubric, j.model, j.endpoint, j.settings,
                      j.created_at,
                      count(DISTINCT CASE WHEN l.value IS NOT NULL AND {live_item("i")}
                            THEN l.item_id || '/' || ifnull(l.ab_order, '') || '/' || l.repeat END),
                      count(l.error), sum(l.tokens_in), sum(l.tokens_out), count(l.id)
               FROM judges j LEFT JOIN judge_labels l ON l.fingerprint = j.fingerprint
               LEFT JOIN items i ON i.id = l.item_id {where}
               GROUP BY j.fingerprint ORDER BY j.created_at, j.rowid""",
            params,
        ).fetchall()
        judges = [
            {
                "fingerprint": fp,
                "name": judge_name,
                "version": int(version),
                "kind": kind,
                "rubric": rubric,
                "model": model,
                "endpoint": endpoint,
                **_settings(settings, fp, judge_name, version),
                "created_at": created,
                "labels": int(done or 0),
                "errors": int(errors or 0),
                "tokens_in": int(tin or 0),
                "tokens_out": int(tout or 0),
                "rows": int(n or 0),
            }
            for fp, judge_name, version, kind, rubric, model, endpoint, settings, created, done, errors, tin, tout, n in rows
        ]
        _lineage(judges)
        if name is not None:
            judges.sort(key=lambda j: j["version"])
        return judges

    def judge_values(self, fingerprint: str) -> list[dict[str, Any]]:
        """The newest value per (item, order, repeat) of one judge (errors left out), with its label
        ``id`` (the order labels were stored in), the model the endpoint said it served and its system
        fingerprint (None: not said or not recorded). Live items only (a retired import's items
        are in no review: :mod:`annotation.store.retirements`)."""
        rows = self.db.execute(
            f"""SELECT l.id, l.item_id, l.ab_order, l.repeat, l.value, l.reason, l.served_model,
                      l.system_fingerprint
               FROM judge_labels l JOIN items i ON i.id = l.item_id
               WHERE l.fingerprint = ? AND l.value IS NOT NULL AND {live_item("i")} AND l.id = (
                   SELECT max(id) FROM judge_labels m WHERE m.fingerprint = l.fingerprint
                   AND m.item_id = l.item_id AND m.ab_order IS l.ab_order AND m.repeat IS l.repeat
                   AND m.value IS NOT NULL)
               ORDER BY l.item_id, l.ab_order, l.repeat""",
            [fingerprint],
        ).fetchall()
        out = []
        for label_id, i, o, r, v, why, served, system in rows:
            value = _whole(v)
            if value is None:
                skip_record(f"judge answer {label_id} (item {i}, judge {fingerprint[:16]}): its value "
                            f"{str(v)[:40]!r} is no grade: skipped")  # fmt: skip
                continue
            out.append(
                {
                    "id": label_id,
                    "item_id": i,
                    "ab_order": o,
                    "repeat": r,
                    "value": value,
                    "reason": why,
                    "served_model": served,
                    "system_fingerprint": system,
                }
            )
        return out

    def judge_calls(self, fingerprint: str) -> list[tuple[int, bool]]:
        """(item, failed) of every call one judge made on a live item, in the order stored:
        ``failed`` when the row holds no value (an error: never a grade)."""
        return [
            (int(item), value is None)
            for item, value in self.db.execute(
                f"""SELECT l.item_id, l.value FROM judge_labels l JOIN items i ON i.id = l.item_id
                    WHERE l.fingerprint = ? AND {live_item("i")} ORDER BY l.id""",
                [fingerprint],
            ).fetchall()
        ]

    def served_models(self, fingerprint: str) -> list[dict[str, Any]]:
        """What served one judge's answers, in label order: one segment per run of labels with the
        same (served model, system fingerprint), a new one each time the pair changes:
        ``{"served_model", "system_fingerprint", "first_at", "last_at", "n", "from_label_id",
        "to_label_id"}``. Counted: every label the endpoint answered (a value, or an unusable
        reply); a call that failed without a reply is left out. ``served_model`` None: not recorded
        (the offline judge; labels stored before migration m009)."""
        rows = self.db.execute(
            """SELECT id, served_model, system_fingerprint, created_at FROM judge_labels
               WHERE fingerprint = ? AND (served_model IS NOT NULL OR error IS NULL) ORDER BY id""",
            [fingerprint],
        ).fetchall()
        segments: list[dict[str, Any]] = []
        for label_id, served, system, created in rows:
            last = segments[-1] if segments else None
            if last is None or (last["served_model"], last["system_fingerprint"]) != (served, system):
                last = {
                    "served_model": served,
                    "system_fingerprint": system,
                    "first_at": created,
                    "last_at": created,
                    "n": 0,
                    "from_label_id": label_id,
                    "to_label_id": label_id,
                }
                segments.append(last)
            last["last_at"], last["to_label_id"] = created, label_id
            last["n"] += 1
        return segments

    # ------------------------------------------------------------ batches sent

    def record_batch(
        self, batch_id: str, fingerprint: str, calls: Iterable[tuple[int, str | None, int]]
    ) -> int:
        """The calls (item, order, repeat) a Batch API job ``batch_id`` of judge ``fingerprint``
        asked, recorded once when it is sent, in one transaction (m017): what its collection may
        store. Returns how many."""
        now = utc_now()
        rows = [[batch_id, fingerprint, int(item), order, int(repeat), now] for item, order, repeat in calls]
        if not rows:
            return 0
        with self.write():
            self.db.conn.executemany(
                """INSERT INTO batch_submitted (batch_id, fingerprint, item_id, ab_order, repeat, created_at)
                   VALUES (?, ?, ?, ?, ?, ?)""",
                rows,
            )
        return len(rows)

    def batch_sent(self, batch_id: str, fingerprint: str) -> set[tuple[int, str | None, int]] | None:
        """(item, order, repeat) of every call recorded for batch ``batch_id`` of judge
        ``fingerprint`` when it was sent; None when none was (a batch sent before m017)."""
        rows = self.db.execute(
            "SELECT item_id, ab_order, repeat FROM batch_submitted WHERE batch_id = ? AND fingerprint = ?",
            [batch_id, fingerprint],
        ).fetchall()
        return {(int(item), order, int(repeat)) for item, order, repeat in rows} or None

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
                  AND {live_item("i")} ORDER BY i.id {cap}"""
        ).fetchall()

    def gradable_trace_items(self, limit: int | None = None) -> list[tuple[int, str, str | None, str]]:
        """(item, question, contexts as stored (a JSON list), answer) of every trace item whose
        trace has a question and an answer, by item id (``limit``: the first N)."""
        cap = f"LIMIT {int(limit)}" if limit else ""
        return self.db.execute(
            f"""SELECT i.id, t.question, t.contexts, t.answer FROM items i JOIN traces t ON t.id = i.trace_id
                WHERE i.kind = 'trace' AND ifnull(t.question, '') != '' AND ifnull(t.answer, '') != ''
                  AND {live_item("i")} ORDER BY i.id {cap}"""
        ).fetchall()

    def gradable_pair_items(self, limit: int | None = None) -> list[tuple[int, str, str, str]]:
        """(item, question, answer A, answer B) of every pair item with a question and both
        answers, by item id (``limit``: the first N pairs). A is the pair's first trace."""
        cap = f"LIMIT {int(limit)}" if limit else ""
        return self.db.execute(
            f"""SELECT i.id, a.question, a.answer, b.answer FROM items i
                JOIN traces a ON a.id = i.trace_id JOIN traces b ON b.id = i.trace_b_id
                WHERE i.kind = 'pair' AND ifnull(a.question, '') != '' AND ifnull(a.answer, '') != ''
                  AND ifnull(b.answer, '') != '' AND {live_item("i")} ORDER BY i.id {cap}"""
        ).fetchall()

    def chunk_item_texts(self) -> list[tuple[int, str | None, str | None]]:
        """(item, query text, chunk text) of every chunk item, by item id; a text not
        imported (yet) is None."""
        return self.db.execute(
            f"""SELECT i.id, q.text, c.text FROM items i
               LEFT JOIN queries q ON q.id = i.query_id LEFT JOIN chunks c ON c.id = i.chunk_id
               WHERE i.kind = 'chunk' AND {live_item("i")} ORDER BY i.id"""
        ).fetchall()

    def trace_item_answers(self) -> list[tuple[int, str | None, str | None]]:
        """(item, answer, contexts as stored (a JSON list)) of every trace item, by item id."""
        return self.db.execute(
            f"""SELECT i.id, t.answer, t.contexts FROM items i JOIN traces t ON t.id = i.trace_id
               WHERE i.kind = 'trace' AND {live_item("i")} ORDER BY i.id"""
        ).fetchall()

    # ------------------------------------------------------------ calibrations

    def add_calibrations(self, rows: list[Mapping[str, Any]]) -> None:
        """Reviews of judges (:data:`CALIBRATION_COLUMNS` each), in one transaction, all
        stamped with the same time."""
        now = utc_now()
        with self.write():
            for row in rows:
                self.db.execute(
                    f"INSERT INTO calibrations ({', '.join(CALIBRATION_COLUMNS)}, created_at) "
                    f"VALUES ({', '.join('?' * len(CALIBRATION_COLUMNS))}, ?)",
                    [*(row.get(c) for c in CALIBRATION_COLUMNS), now],
                )

    def calibration_trend(self) -> list[dict[str, Any]]:
        """The newest review per (judge, week), oldest week first: ``{"fingerprint", "name",
        "version", "rubric", "week", "n", "kappa", "ci", "verdict", "rule", "statistic",
        "served_model", "old_rule"}``; ``old_rule`` True for a review saved before m010 (a point
        estimate on quadratic weights), never to be read as one of today's."""
        rows = self.db.execute(
            """SELECT c.id, c.fingerprint, j.name, j.version, c.rubric, c.window, c.n, c.kappa, c.ci_low,
                      c.ci_high, c.verdict, c.rule, c.statistic, c.served_model, c.weights
               FROM calibrations c LEFT JOIN judges j ON j.fingerprint = c.fingerprint
               ORDER BY c.window, j.name, j.version, c.fingerprint, c.id"""
        ).fetchall()
        # the newest readable review of each (judge, week): an unreadable one is named and skipped,
        # and the one before it stands (rows of one judge and week are adjacent in this order)
        newest: dict[tuple[Any, Any], tuple[Any, ...]] = {}  # (fingerprint, week): its row
        for row in rows:
            if _readable_review(row):
                newest[(row[1], row[5])] = row
        rows = list(newest.values())
        return [
            {
                "fingerprint": fp,
                "name": name,
                "version": int(version) if version is not None else None,
                "rubric": rubric,
                "week": week,
                "n": n,
                "kappa": kappa,
                "ci": [low, high] if low is not None and high is not None else None,
                "verdict": verdict,
                "rule": rule,
                "statistic": statistic or ({"none": "unweighted"}.get(weights, weights) if weights else None),
                "served_model": served,
                "old_rule": rule is None,
            }
            for _, fp, name, version, rubric, week, n, kappa, low, high, verdict, rule, statistic, served, weights in rows
        ]


def _settings(text: str | None, fingerprint: str, name: Any, version: Any) -> dict[str, Any]:
    """``{"settings": ...}`` of a judge row; settings that are not a JSON object (written by
    something else) read as none, and the boundary names the row (never a traceback)."""
    try:
        value = json.loads(text or "{}")
    except (TypeError, ValueError, RecursionError):
        value = None
    if isinstance(value, dict):
        return {"settings": value}
    skip_record(f"judge {name} v{version} (fingerprint {str(fingerprint)[:16]}): its stored settings "
                "cannot be read (not a JSON object): read as none")  # fmt: skip
    return {"settings": {}}


def _number(value: Any) -> bool:
    """A stored figure a reader can use: a finite int or float (SQLite keeps whatever was written)."""
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _whole(value: Any) -> int | None:
    """A stored grade as the integer it is; None when it is none (text, a fraction, NaN)."""
    if isinstance(value, bool) or not _number(value) or value != int(value):
        return None
    return int(value)


def _readable_review(row: tuple[Any, ...]) -> bool:
    """A stored review a reader can use (its n a count, its kappa and interval numbers or none);
    else the boundary names it and it is skipped."""
    review_id, fp, name, version, _rubric, week, n, kappa, low, high, verdict = row[:11]
    bad = [
        f"{field} {str(value)[:40]!r}"
        for field, value, ok in (
            ("n", n, n is None or (_whole(n) is not None and n >= 0)),
            ("kappa", kappa, kappa is None or _number(kappa)),
            ("ci_low", low, low is None or _number(low)),
            ("ci_high", high, high is None or _number(high)),
            ("verdict", verdict, verdict is None or isinstance(verdict, str)),
            ("version", version, version is None or _whole(version) is not None),
        )
        if not ok
    ]
    if bad:
        skip_record(f"review {review_id} (judge {name or str(fp)[:16]}, week {week}): {', '.join(bad)} "
                    "cannot be read: skipped")  # fmt: skip
    return not bad
