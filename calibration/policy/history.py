"""The history of recorded checks (``check --record``, ``history``, ``history --diff``): the hashes that
say whether the labels, the run or the query set changed, the rows, and the per-query difference of two
reports, which says first when their settings differ (issue #40: a setting is not the system).
Moved out of :mod:`calibration.gate`, which re-exports its names."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

from calibration.errors import InvalidInput
from calibration.inputs import PathLike
from calibration.results import (
    CheckDiff,
    CheckReport,
    CheckRow,
    FigureChange,
    HistoryRow,
    QueryChange,
)

if TYPE_CHECKING:
    from annotation.model import Qrels
    from annotation.store import Store


# ---------------------------------------------------------------- history of checks

HISTORY_FIGURES = ("keep_recall", "fetch_recall", "rr", "ndcg", "label_coverage", "judged_at_k")


def labels_digest(qrels: Qrels) -> tuple[str, int]:
    """(sha256 of the judgments, sorted; how many): the same labels give the same hash whatever
    file or face they came through, so a new hash means the labels changed."""
    digest = hashlib.sha256()
    n = 0
    for qid in sorted(qrels.grades):
        for doc, grade in sorted(qrels.grades[qid].items()):
            digest.update(f"{qid}\t{doc}\t{grade}\n".encode())
            n += 1
    return digest.hexdigest(), n


def file_digest(source: PathLike | bytes) -> str:
    """sha256 of a run file (a path, or the bytes a page received)."""
    if isinstance(source, bytes):
        return hashlib.sha256(source).hexdigest()
    digest = hashlib.sha256()
    with open(source, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def record_check(store: Store, report: CheckReport, name: str, qrels: Qrels, run_digest: str) -> int:
    """Keep a check report in the store under the run's ``name``; its id."""
    if not name.strip():
        raise InvalidInput("a recorded check needs a run name (--name)")
    golden_hash, golden_labels = labels_digest(qrels)
    return store.record_check(
        name, report, golden_hash=golden_hash, golden_labels=golden_labels, run_hash=run_digest
    )


def query_set(report: Mapping[str, Any]) -> list[str]:
    """The queries a recorded report was asked about: those it scored and those missing from the run
    (a smaller run is a different query set, never a better score over the same one)."""
    asked = set(report.get("queries") or {}) | set(report.get("missing_from_run") or [])
    return sorted(asked, key=lambda q: q.encode("utf-8"))


def query_digest(report: Mapping[str, Any]) -> tuple[str, int]:
    """(sha256 of the queries the report's means are over, each marked held or scored 0; how many the
    run held): a new hash means the means are over other queries (the run answered another set, or
    missing ones were scored 0 where they were left out before), a change of the denominator."""
    scored = report.get("queries") or {}
    marked = sorted(
        (f"{q}\t{'zero' if v.get('scored_zero') else 'held'}" for q, v in scored.items()),
        key=lambda line: line.encode("utf-8"),
    )
    held = sum(1 for v in scored.values() if not v.get("scored_zero"))
    return hashlib.sha256("\n".join(marked).encode()).hexdigest(), held


def _check_shapes(means: Mapping[str, Any], failed: Sequence[Any], bars: Any, n_queries: Any) -> None:
    """TypeError unless a stored report's parts the history shows have the shapes a check report
    writes (a row written by something else is skipped and named, never a traceback on the page)."""
    number = (int, float)
    if not all(v is None or (isinstance(v, number) and not isinstance(v, bool)) for v in means.values()):
        raise TypeError("a mean is not a number")
    if not all(isinstance(rule, str) for rule in failed):
        raise TypeError("a rule name is not text")
    if not isinstance(bars, dict) or not all(
        isinstance(k, str) and (v is None or isinstance(v, str)) for k, v in bars.items()
    ):
        raise TypeError("the bars are not text")
    if not isinstance(n_queries, int) or isinstance(n_queries, bool):
        raise TypeError("the number of queries is not a number")


def history_data(store: Store, name: str | None = None) -> list[HistoryRow]:
    """The recorded checks (of one run name, or all), oldest first: per report its means, the
    rules it failed, ``labels_changed`` when its label hash differs from the previous report of the
    same name and ``queries_changed`` when the queries the run held did (a change of labels or of
    the query set is never to be read as a change of system). A row whose report cannot be read
    (not JSON, or not a check report) is kept as ``{"id", "name", "unreadable": why}`` and skipped
    by the comparisons."""
    out: list[HistoryRow] = []
    previous: dict[str, tuple[str, str]] = {}
    previous_report: dict[str, Mapping[str, Any]] = {}  # the run's previous report: its settings
    for entry in store.check_reports(name, with_report=True):
        report = entry.pop("report")
        try:
            summary = report["summary"]
            queries_hash, held = query_digest(report)
            means = {figure: summary[figure]["mean"] for figure in HISTORY_FIGURES}
            failed = [r["rule"] for r in report["rules"] if r["passed"] is False]
            bars = report["policy"]["rules"]
            n_queries = summary["n_queries"]
            missing = len(report.get("missing_from_run") or [])
            _check_shapes(means, failed, bars, n_queries)
        except (KeyError, TypeError, AttributeError, IndexError):
            why = "not JSON" if report is None else "not a check report"
            out.append({"id": entry["id"], "name": entry["name"], "unreadable": why})
            continue
        # the store's row (dict[str, Any] at this boundary: annotation.store.history) is a CheckRow
        row = cast(CheckRow, entry)
        before = previous.get(row["name"])
        previous[row["name"]] = (row["golden_hash"], queries_hash)
        earlier = previous_report.get(row["name"])
        previous_report[row["name"]] = report
        out.append(
            {
                **row,
                "labels_changed": before is not None and before[0] != row["golden_hash"],
                "settings_changed": settings_changed(earlier, report) if earlier is not None else [],
                "queries_changed": before is not None and before[1] != queries_hash,
                "queries_hash": queries_hash,
                "queries_held": held,
                "n_queries": n_queries,
                "missing_from_run": missing,
                "means": means,
                "failed": failed,
                "bars": bars,
            }
        )
    return out


def _row(entry: Mapping[str, Any]) -> CheckRow:
    """A recorded check's row as a diff names it (its report left out)."""
    return {
        "id": entry["id"],
        "name": entry["name"],
        "created_at": entry["created_at"],
        "golden_hash": entry["golden_hash"],
        "golden_labels": entry["golden_labels"],
        "run_hash": entry["run_hash"],
        "passed": entry["passed"],
        "k": entry["k"],
    }


def _change(x: float | None, y: float | None) -> FigureChange:
    return {"first": x, "second": y, "delta": None if x is None or y is None else y - x}


def _recorded(store: Store, report_id: int) -> dict[str, Any]:
    """A recorded check, whole, that a diff can read: else :class:`InvalidInput` saying why not."""
    entry = store.check_report(report_id)
    if entry is None:
        raise InvalidInput(
            f"no recorded check with id {report_id}; `python -m calibration history` lists them"
        )
    queries = entry["report"].get("queries") if isinstance(entry["report"], dict) else None
    if not isinstance(queries, dict) or not all(isinstance(q, dict) for q in queries.values()):
        why = "not JSON" if entry["report"] is None else "not a check report"
        raise InvalidInput(f"recorded check {report_id} cannot be read ({why}): nothing to compare")
    for qid, figures in queries.items():
        broken = _broken_query(qid, figures)
        if broken is not None:
            raise InvalidInput(
                f"recorded check {report_id} cannot be read (its stored report is broken: {broken}): "
                "nothing to compare"
            )
    return entry


_DIFFED = ("fetch_recall", "keep_recall", "rr", "ndcg", "rel", "label_coverage")


def _broken_query(qid: str, figures: Mapping[str, Any]) -> str | None:
    """What a diff cannot read in one query of a stored report (a figure that is no number, findings
    that are no list of names), said in a few words; None when it reads."""
    for key in _DIFFED:
        value = figures.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int | float)):
            return f"query {qid[:40]!r}: {key} is {type(value).__name__}, not a number"
    findings = figures.get("findings", [])
    if not isinstance(findings, list) or not all(isinstance(f, str) for f in findings):
        return f"query {qid[:40]!r}: findings are not a list of names"
    return None


SETTINGS = (("k", "k"), ("min_grade", "min grade"), ("fetch_depth", "fetch depth"), ("missing", "missing"))


def settings_changed(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[str]:
    """The settings two recorded reports differ in, as "k 5 -> 10" (issue #40: a setting is not the
    system): k, min grade, fetch depth, missing queries, the corpus and the policy's bars (read from
    the recorded report itself, which holds them)."""

    def said(value: Any) -> str:  # a setting not given reads as such, never as Python's None
        return "none" if value is None else str(value)

    changes = [
        f"{words} {said(a.get(key))} -> {said(b.get(key))}"
        for key, words in SETTINGS
        if a.get(key) != b.get(key)
    ]
    pa, pb = a.get("policy") or {}, b.get("policy") or {}
    if pa.get("corpus") != pb.get("corpus"):
        changes.append(f"corpus {said(pa.get('corpus'))} -> {said(pb.get('corpus'))}")
    rules = sorted(
        r
        for r in set(pa.get("rules") or {}) | set(pb.get("rules") or {})
        if (pa.get("rules") or {}).get(r) != (pb.get("rules") or {}).get(r)
    )
    changes += [
        f"{r} {said((pa.get('rules') or {}).get(r))} -> {said((pb.get('rules') or {}).get(r))}" for r in rules
    ]
    return changes


def diff_checks(store: Store, first: int, second: int) -> CheckDiff:
    """Per query held by both reports, the figures of each and second - first, the findings each has
    that the other lacks; the settings they differ in (``settings_changed``: then the per-query changes
    follow the settings, not the system); the queries one report held and the other did not, as ``dropped`` and
    ``added`` (never as findings gained or lost); whether the labels changed between them."""
    a, b = _recorded(store, first), _recorded(store, second)
    qa, qb = a["report"]["queries"], b["report"]["queries"]
    held_a = {q for q, v in qa.items() if not v.get("scored_zero")}
    held_b = {q for q, v in qb.items() if not v.get("scored_zero")}
    queries: dict[str, QueryChange] = {}
    for qid in sorted(held_a & held_b, key=lambda q: q.encode("utf-8")):
        x, y = qa[qid], qb[qid]
        fa, fb = set(x.get("findings", [])), set(y.get("findings", []))
        queries[qid] = {
            "fetch_recall": _change(x.get("fetch_recall"), y.get("fetch_recall")),
            "keep_recall": _change(x.get("keep_recall"), y.get("keep_recall")),
            "rr": _change(x.get("rr"), y.get("rr")),
            "ndcg": _change(x.get("ndcg"), y.get("ndcg")),
            "rel": _change(x.get("rel"), y.get("rel")),
            "label_coverage": _change(x.get("label_coverage"), y.get("label_coverage")),
            "findings_gained": sorted(fb - fa),
            "findings_lost": sorted(fa - fb),
        }
    return {
        "first": _row(a),
        "second": _row(b),
        "settings_changed": settings_changed(a["report"], b["report"]),
        "labels_changed": a["golden_hash"] != b["golden_hash"],
        "dropped": _in_byte_order(held_a - held_b),
        "added": _in_byte_order(held_b - held_a),
        "queries": queries,
    }


def _in_byte_order(ids: set[str]) -> list[str]:
    """Query ids in trec_eval's order: by their UTF-8 bytes."""
    return sorted(ids, key=lambda q: q.encode("utf-8"))
