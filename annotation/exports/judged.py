"""A judge's grades as the exports write them (``export --judge``): the judge chosen by its name
and version (``NAME`` is the newest version, ``NAME@VERSION`` or ``NAME@vVERSION`` one of them,
as :mod:`annotation.store.judges` numbers them) or by its fingerprint (or a prefix of it), and
its current grades per (query, chunk), the repeats of one item made one grade by ``aggregate``.

A failed call (a row with an error and no value) is never a grade: it is left out, and counted
(:class:`JudgeGrades`), so the summary can say how many calls failed and how many pairs the
judge was asked about have no grade at all."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from annotation.store import Store, StoreError, aggregate_grades

__all__ = ["JudgeGrades", "find_judge", "judge_grades", "judge_title"]


def _version(text: str) -> int | None:
    digits = text.strip().removeprefix("v")
    return int(digits) if digits.isdigit() else None


def _names(judges: list[dict[str, Any]]) -> str:
    versions: dict[str, list[int]] = {}
    for j in judges:
        versions.setdefault(j["name"], []).append(j["version"])
    return "; ".join(
        f"{name} (version{'s' if len(v) > 1 else ''} {', '.join(map(str, sorted(v)))})"
        for name, v in sorted(versions.items())
    )


def find_judge(store: Store, spec: str) -> dict[str, Any]:
    """The judge ``spec`` names (a :meth:`Store.judges` row): a name (its newest version),
    ``NAME@VERSION``, or a fingerprint or a prefix of one; StoreError in one line otherwise,
    naming the versions that exist (an unknown version) or the judges stored (no such judge)."""
    judges = store.judges()
    wanted = spec.strip()
    by_name = {j["name"] for j in judges}
    name, at, version = wanted.rpartition("@")
    if wanted in by_name or (at and name in by_name):
        chosen = wanted if wanted in by_name else name
        versions = sorted((j for j in judges if j["name"] == chosen), key=lambda j: j["version"])
        if wanted in by_name:
            return versions[-1]
        number = _version(version)
        for judge in versions:
            if judge["version"] == number:
                return judge
        raise StoreError(
            f"judge {chosen!r} has no version {version!r}; its versions: "
            f"{', '.join(str(j['version']) for j in versions)} (without @VERSION: the newest, "
            f"{versions[-1]['version']})"
        )
    matches = [j for j in judges if j["fingerprint"].startswith(wanted)] if wanted else []
    if len(matches) == 1:
        return matches[0]
    raise StoreError(
        f"judge {spec!r}: "
        + (
            f"{len(matches)} judges' fingerprints start so; give more of the fingerprint"
            if matches
            else "no such judge (a name, NAME@VERSION or a fingerprint); "
            + (f"judges stored: {_names(judges)}" if judges else "none stored yet (python -m judge grade)")
        )
    )


def judge_title(judge: dict[str, Any]) -> str:
    """``judge NAME vN (fingerprint 0b18..., KIND, MODEL)``: which judge, in words."""
    return (
        f"judge {judge['name']} v{judge['version']} (fingerprint {judge['fingerprint'][:12]}, "
        f"{judge['kind']}, {judge['model']})"
    )


@dataclass(frozen=True)
class JudgeGrades:
    """One relevance judge's current grades: ``grades[qid][chunk]``, and its failed calls."""

    judge: dict[str, Any]  # the Store.judges() row
    grades: dict[str, dict[str, int]]
    calls: int  # calls on live chunk items (a value or an error)
    failed: int  # of calls: an error, no value (left out)
    asked: int  # (query, chunk) pairs it was called on
    ungraded: int  # of asked: every call failed, so no grade

    def failures(self) -> str:
        """The failed calls in words, for a summary ('' when none failed)."""
        if not self.failed:
            return ""
        return (
            f"{self.failed} of its {self.calls} calls failed (an error, no value): left out, not grades"
            + (
                f"; {self.ungraded} of the {self.asked} (query, chunk) pairs it was asked about have "
                "no grade (every call on them failed)"
                if self.ungraded
                else ""
            )
        )


def judge_grades(store: Store, spec: str, aggregate: str = "median") -> JudgeGrades:
    """The relevance grades of the judge ``spec`` names (:func:`find_judge`) on chunk items, one
    per (query, chunk) (repeats by ``aggregate``); StoreError for a judge of another rubric."""
    judge = find_judge(store, spec)
    if judge["rubric"] != "relevance":
        raise StoreError(
            f"judge {judge['fingerprint'][:12]} ({judge['name']} v{judge['version']}) grades "
            f"{judge['rubric']}, not relevance"
        )
    items = {item_id: (query_id, chunk_id) for item_id, query_id, chunk_id in store.chunk_items()}
    values: dict[tuple[str, str], list[int]] = {}
    for row in store.judge_values(judge["fingerprint"]):
        if row["item_id"] in items:
            values.setdefault(items[row["item_id"]], []).append(int(row["value"]))
    grades: dict[str, dict[str, int]] = {}
    for (qid, doc), vals in sorted(values.items()):
        grades.setdefault(qid, {})[doc] = aggregate_grades(vals, aggregate)
    calls = [
        (items[item], failed) for item, failed in store.judge_calls(judge["fingerprint"]) if item in items
    ]
    asked = {pair for pair, _ in calls}
    return JudgeGrades(
        judge=judge,
        grades=grades,
        calls=len(calls),
        failed=sum(1 for _, failed in calls if failed),
        asked=len(asked),
        ungraded=len(asked - set(values)),
    )
