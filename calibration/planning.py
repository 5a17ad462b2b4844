"""Plan the labelling (issue #39, item 5): the pilot read from the store or a file, then
:func:`calibration.stats.plan.plan` for each judge's pairs (person, judge, query).

The store: each current judge of a rubric the review reads, its answers and the people's
(consensus of their newest labels) on every labelled item, read by the review's own readers
(:mod:`calibration.review`: ``human_labels``, ``judge_answers``, ``consensus``,
``served_model_changes``), the item's query from the label rows. A file: ``query_id,person,judge``
(one row an item), or the CSV ``annotation export --format csv`` writes (the newest row of each
(item, annotator) counts, a retraction removes it; two annotators, or ``judge`` naming the one on
the judge's side, the others' consensus the person's). An item without a query is a query of its own.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any, TypedDict

from annotation.formats.csv_tables import read_csv_rows
from annotation.store import Store
from calibration.errors import InvalidInput
from calibration.inputs import ALPHA
from calibration.review import (
    RUBRIC_KIND,
    SCALES,
    WEIGHTS,
    consensus,
    human_labels,
    judge_answers,
    served_model_changes,
)
from calibration.stats.kappa import InvalidRatings
from calibration.stats.plan import Plan, plan

__all__ = ["PilotPairs", "PlanEntry", "pilot_from_file", "pilot_from_store", "plan_pilots"]


class PilotPairs(TypedDict):
    name: str  # the judge (or the file's rater pair)
    rubric: str | None
    person: list[Any]
    judge: list[Any]
    queries: list[Any]
    labels: list[Any] | None
    no_query: int  # items without a query, each counted as a query of its own


class PlanEntry(TypedDict):
    name: str
    rubric: str | None
    no_query: int
    plan: Plan


def _query(item: Any, query: Any, missing: list[int]) -> Any:
    if query in (None, ""):
        missing[0] += 1
        return f"(item {item})"
    return str(query)


def pilot_from_store(store: Store, judge: str | None = None) -> list[PilotPairs]:
    """Each current judge's pairs with people on every labelled item (``judge``: that one only, by
    name, NAME@VERSION or fingerprint prefix)."""
    from annotation.exports.judged import find_judge  # start-up: only with a --judge to find

    wanted = find_judge(store, judge)["fingerprint"] if judge else None
    query_of = {int(row[1]): row[3] for row in store.label_history()}
    out: list[PilotPairs] = []
    for row in store.judges():
        rubric = row["rubric"]
        if rubric not in RUBRIC_KIND or (wanted and row["fingerprint"] != wanted):
            continue
        if not wanted and not row["current"]:
            continue
        humans = human_labels(store, rubric)
        drift = served_model_changes(store, row["fingerprint"])
        answers = judge_answers(
            store, row["fingerprint"], rubric, drift[-1]["since_label"] if drift else None
        )
        out_of_fold = {int(i): int(v) for i, v in (row["settings"].get("out_of_fold") or {}).items()}
        answers.update(out_of_fold)
        trained = set(row["settings"].get("trained_on") or []) - set(out_of_fold)
        items = sorted(i for i in humans if i in answers and i not in trained)
        missing = [0]
        out.append(
            {
                "name": f"{row['name']} v{row['version']}",
                "rubric": rubric,
                "person": [consensus(list(humans[i].values()), rubric) for i in items],
                "judge": [answers[i] for i in items],
                "queries": [_query(i, query_of.get(i), missing) for i in items],
                "labels": SCALES[rubric],
                "no_query": missing[0],
            }
        )
    return out


def _value(text: str) -> Any:
    try:
        return int(text)
    except ValueError:
        return text


def pilot_from_file(
    path: str | os.PathLike[str], judge: str | None = None, rubric: str | None = None
) -> PilotPairs:
    """The pairs of ``query_id,person,judge`` or of an ``annotation export --format csv`` file."""
    rows = read_csv_rows(path, [])
    header = set(rows[0][1])
    missing = [0]
    if {"query_id", "person", "judge"} <= header:
        kept = [(n, r) for n, r in rows if r["person"] != "" and r["judge"] != ""]
        return {
            "name": f"{path}: person vs judge",
            "rubric": rubric,
            "person": [_value(r["person"]) for _, r in kept],
            "judge": [_value(r["judge"]) for _, r in kept],
            "queries": [_query(f"line {n}", r["query_id"], missing) for n, r in kept],
            "labels": None,
            "no_query": missing[0],
        }
    if not {"item_id", "query_id", "annotator", "value"} <= header:
        raise InvalidInput(
            f"{path}: header {','.join(rows[0][1])}; expected query_id,person,judge or the columns "
            "annotation export --format csv writes (item_id, query_id, annotator, rubric, value)"
        )
    rubrics = sorted({r.get("rubric", "") for _, r in rows} - {""})
    if rubric is None and len(rubrics) > 1:
        raise InvalidInput(f"{path}: labels of {', '.join(rubrics)}; choose one with --rubric")
    newest: dict[tuple[str, str], str] = {}
    query_of: dict[str, str] = {}
    for _, r in rows:
        if rubric is not None and r.get("rubric", rubric) != rubric:
            continue
        newest[(r["item_id"], r["annotator"])] = r["value"]  # row order: the newest last
        query_of[r["item_id"]] = r["query_id"]
    by_item: dict[str, dict[str, Any]] = {}
    for (item, who), value in newest.items():
        if value != "":
            by_item.setdefault(item, {})[who] = _value(value)
    raters = sorted({who for values in by_item.values() for who in values})
    if judge is None and len(raters) != 2:
        raise InvalidInput(
            f"{path}: {len(raters)} annotators ({', '.join(raters) or 'none'}); with other than two, "
            "name the one on the judge's side with --judge"
        )
    side = judge if judge is not None else raters[1]
    if side not in raters:
        raise InvalidInput(f"{path}: no annotator {side!r}; the annotators: {', '.join(raters)}")
    chosen = rubric or (rubrics[0] if rubrics else "")
    person, answers, queries = [], [], []
    for item in sorted(by_item, key=lambda i: (len(i), i)):
        values = by_item[item]
        others = [v for who, v in values.items() if who != side]
        if side not in values or not others:
            continue
        if len(others) == 1 or chosen in RUBRIC_KIND:
            person.append(others[0] if len(others) == 1 else consensus(others, chosen))
        else:
            raise InvalidInput(f"{path}: item {item} has several people's labels of an unknown rubric")
        answers.append(values[side])
        queries.append(_query(item, query_of[item], missing))
    return {
        "name": f"{path}: {', '.join(r for r in raters if r != side)} vs {side}",
        "rubric": chosen or None,
        "person": person,
        "judge": answers,
        "queries": queries,
        "labels": SCALES.get(chosen),
        "no_query": missing[0],
    }


def plan_pilots(
    pilots: Sequence[PilotPairs],
    designs: Sequence[tuple[int, int]],
    *,
    bar: float,
    statistic: str,
    min_queries: int,
    alpha: float = ALPHA,
) -> list[PlanEntry]:
    """:func:`calibration.stats.plan.plan` of each pilot: the verdict's statistic's weights (nominal
    labels: unweighted)."""
    out: list[PlanEntry] = []
    for p in pilots:
        ordinal = p["rubric"] in ("relevance", "faithfulness") or p["rubric"] is None
        weights = WEIGHTS[statistic] if ordinal else None
        try:
            result = plan(
                p["person"],
                p["judge"],
                p["queries"],
                designs,
                bar=bar,
                weights=weights,
                labels=p["labels"],
                alpha=alpha,
                min_queries=min_queries,
            )
        except InvalidRatings as exc:
            raise InvalidInput(f"{p['name']}: {exc}") from None
        out.append({"name": p["name"], "rubric": p["rubric"], "no_query": p["no_query"], "plan": result})
    return out
