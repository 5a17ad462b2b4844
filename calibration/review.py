"""The weekly review: how far to trust each judge this week.

1. :func:`draw_sample` draws this week's sample of traces (seeded, stratified by
   the judge's answer when a judge has graded them, else by system, so that
   disagreements cannot all hide in one class), records it (``review_samples``)
   and assigns the items to the annotators who will label them, blind, on the
   same rubric as the judge.
2. :func:`review` then computes, for every judge fingerprint and its rubric:
   Cohen's kappa of the judge against the people's consensus, unweighted (the essay's statistic,
   which the verdict reads unless the policy or ``statistic`` says otherwise) and, for the ordinal
   grades of relevance and faithfulness, linear and quadratic beside it, each with its interval
   and n; kappa against each annotator; the human-human kappa on doubly labelled items as the
   ceiling (undefined below two such items); the verdict (:mod:`calibration.stats.verdict`: trusted when
   the interval's lower end reaches the bar, not trusted when its upper end is below it, else
   undecided, with about how many more labels would decide it, and what to do); position-bias
   figures for pairwise judges; for faithfulness, the pass rate (grade 2) corrected by
   prediction-powered inference next to the human-only one. A judge with fewer human-labelled
   items than ``min_labels`` is ``uncalibrated``, whatever its kappa. A weekly sample is of traces:
   it scopes the judges of trace rubrics only; within one judge, kappa, the ceiling and the PPI line
   rest on the same population. Each review is saved (``calibrations``, with its rule, statistic
   and served model), so a trend across weeks can be shown: one line per judge name, its versions
   marked where they change; reviews saved under the old rule (before m010) are marked, never mixed
   in silently.

   A judge is reviewed in its current version (the newest of its name; earlier ones are listed as
   superseded). When the model its endpoint says it served changed under one fingerprint (a
   provider alias moved), ``served_model_changed`` says from what to what and when, and the review
   rests on the answers since the change only: they are a new version for calibration.
3. ``calibration.review_text`` says it (text, Markdown, HTML, JSON).

Honesty rules: the offline judge is fitted on human labels, so the items it
was fitted on are left out of its review (counted); a pairwise judge's
answer to a pair is its swap-averaged preference (> 0.5 A, < 0.5 B, = 0.5
tie), so position bias cannot pass for agreement; undefined figures are None
with the reason, never 0.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from datetime import date
from typing import Any, cast

import numpy as np

from annotation.store import Store, StoreError
from calibration.inputs import ALPHA
from calibration.results import (
    KappaEntry,
    KappaFigure,
    PassRate,
    PositionReport,
    ReviewJudge,
    ReviewReport,
    ServedModelChange,
    TrendPoint,
)
from calibration.review_sample import (
    RUBRIC_KIND,
    check_week,
    consensus,
    current_week,
    draw_sample,
    human_labels,
    judge_answers,
    sample_people,
    sample_progress,
    week_end,
)
from calibration.stats.agreement import INTERVAL_METHOD, cohen
from calibration.stats.judged import Drawn, JudgedKappa, judged_kappa
from calibration.stats.kappa import Weights
from calibration.stats.pass_rate import people_pass_rate, rate_interval
from calibration.stats.position import from_slots, position_bias
from calibration.stats.ppi import ppi_or_reason
from calibration.stats.ppi_design import weak_check
from calibration.stats.verdict import (
    MIN_LABELS,
    MIN_QUERIES,
    STALE_AFTER_WEEKS,
    STATISTICS,
    case_advice,
)

__all__ = [
    "MIN_LABELS",
    "RUBRIC_KIND",
    "consensus",
    "current_week",
    "draw_sample",
    "human_labels",
    "judge_answers",
    "review",
    "sample_progress",
]

SCALES = {"relevance": [0, 1, 2, 3], "faithfulness": [0, 1, 2], "preference": [0, 1, 2]}
ORDINAL = ("relevance", "faithfulness")  # grades with an order: weighted kappas are printed beside
RULE = "interval"  # how verdicts are reached (saved with each calibration): the interval against one bar
CHOICES = ("A", "B", "tie")  # preference values, by candidate: 0 = A (the pair's first trace), 1 = B, 2 = tie
PASS = 2  # faithfulness: fully supported
# each statistic's weighting of Cohen's kappa
WEIGHTS: dict[str, Weights] = {"unweighted": None, "linear": "linear", "quadratic": "quadratic"}


# ---------------------------------------------------------------- the review


def served_model_changes(store: Store, fingerprint: str) -> list[ServedModelChange]:
    """Each time the model the endpoint said it served changed under one judge fingerprint (a
    provider alias moved): ``{"from", "to", "last_before", "first_after", "since_label"}``, oldest
    first; [] when it never changed. Labels without a served model (the offline judge, labels
    stored before m009) neither start nor end a change. Answers from ``since_label`` on are the new
    model's: the review calibrates them apart, as a new version."""
    segments = [s for s in store.served_models(fingerprint) if s["served_model"] is not None]
    return [
        {
            "from": before["served_model"],
            "to": after["served_model"],
            "last_before": before["last_at"],
            "first_after": after["first_at"],
            "since_label": after["from_label_id"],
        }
        for before, after in zip(segments, segments[1:])
        if before["served_model"] != after["served_model"]
    ]


def _served_now(store: Store, fingerprint: str) -> str | None:
    """The model the endpoint says it serves this judge now (its newest label's), None when not said."""
    segments = [s for s in store.served_models(fingerprint) if s["served_model"] is not None]
    return segments[-1]["served_model"] if segments else None


def _kappas(
    judge: list[int],
    people: list[int],
    rubric: str,
    statistic: str,
    bar: float,
    design: Design | None = None,
) -> KappaEntry:
    """Every Cohen's kappa of the pair (unweighted; for ordinal grades linear and quadratic too),
    each with its interval, and which one the verdict reads (``statistic``; preferences are nominal:
    unweighted only). The flat keys (``kappa``, ``ci``, ``weights``) are the verdict's statistic, with
    the verdict of :func:`calibration.stats.judged.judged_kappa` and the design it states: the
    ``design``'s queries (the interval is clustered by query), people, how the items were drawn and how
    often the verdict was read (issue #39)."""
    names = STATISTICS if rubric in ORDINAL else ("unweighted",)
    chosen = statistic if statistic in names else "unweighted"
    design = design or Design()
    kappas: dict[str, KappaFigure] = {}
    judged: dict[str, JudgedKappa] = {}
    for name in names:
        judged[name] = judged_kappa(
            people,
            judge,
            design.queries,
            labels=SCALES[rubric],
            weights=WEIGHTS[name],
            bar=bar,
            min_labels=design.min_labels,
            min_queries=design.min_queries,
            raters=design.raters,
            drawn=design.drawn,
            earlier_looks=design.earlier_looks,
        )
        kappas[name] = {"kappa": judged[name]["kappa"], "ci": judged[name]["ci"]}
    first = cohen(judge, people, labels=SCALES[rubric], weights=None)
    main = judged[chosen]
    return {
        "n": int(first.get("n", len(judge))),
        "kappa": main["kappa"],
        "ci": main["ci"],
        "weights": "none" if chosen == "unweighted" else chosen,
        "statistic": chosen,
        "bar": bar,
        "kappas": kappas,
        "observed_agreement": first.get("observed_agreement"),
        "undefined_reason": first.get("undefined_reason"),
        "confusion": first["confusion"],
        "labels": SCALES[rubric],
        "item_level_ci": main["item_level_ci"],
        "method": main["method"],
        "design": main["design"],
        "per_query": cast(dict[str, Any] | None, main["per_query"]),
        "population": main["population"],
        "drawn": cast(dict[str, Any] | None, main["drawn"]),
        "read": main["read"],
        "verdict": main["verdict"],
        "reason": main["reason"],
        "more_labels": main["more_labels"],
        "advice": main["advice"],
    }


@dataclass(frozen=True)
class Design:
    """How one set of labels was drawn and read, for :func:`_kappas`: the query of each item (None: not
    carried), the people behind the grades, the draw (None: not known), earlier readings of the verdict,
    and the verdict's minimums (0 items: none)."""

    queries: list[Any] | None = None
    raters: int | None = None
    drawn: Drawn | None = None
    earlier_looks: int = 0
    min_labels: int = 0
    min_queries: int = MIN_QUERIES


def _queries_of(items: list[int], queries: dict[int, Any]) -> list[Any] | None:
    """Each item's query (an item without one is its own query); None when no item has one."""
    if not any(queries.get(i) is not None for i in items):
        return None
    return [queries[i] if queries.get(i) is not None else f"item {i}" for i in items]


def _drawn(items: list[int], draws: dict[int, str]) -> Drawn:
    """Whether every item was drawn at random, and how (the store's record of its draws)."""
    chosen = [i for i in items if i not in draws]
    if chosen:
        return {
            "random": False,
            "how": f"{len(chosen)} of {len(items)} items were chosen, not drawn at random",
        }
    if not items:
        return {"random": True, "how": "no labelled item to read yet"}
    return {"random": True, "how": "drawn at random: " + ", ".join(sorted({draws[i] for i in items}))}


def _ceiling(
    humans: dict[int, dict[str, int]],
    rubric: str,
    statistic: str,
    bar: float,
    queries: dict[int, Any] | None = None,
) -> KappaEntry:
    """Human-human kappa on the items two or more people labelled (the first two by name), clustered by
    query when the items carry one; undefined, with its reason, below two such items (an interval of
    one item is no interval)."""
    a, b, items = [], [], []
    for item, votes in humans.items():
        if len(votes) >= 2:
            first, second = sorted(votes)[:2]
            a.append(votes[first])
            b.append(votes[second])
            items.append(item)
    if len(a) < 2:
        return {
            "n": len(a),
            "kappa": None,
            "ci": None,
            "statistic": statistic,
            "undefined_reason": f"{len(a)} item{'' if len(a) == 1 else 's'} labelled by two people: "
            "a ceiling needs at least 2",
        }
    return _kappas(a, b, rubric, statistic, bar, Design(queries=_queries_of(items, queries or {}), raters=2))


def _position(store: Store, fingerprint: str) -> PositionReport:
    return position_bias(from_slots(store.judge_values(fingerprint)))


def _pass_rate(
    humans: dict[int, dict[str, int]],
    answers: dict[int, int],
    rubric: str,
    scope: str,
    alpha: float = ALPHA,
    *,
    draws: dict[int, str] | None = None,
    queries: dict[int, Any] | None = None,
) -> PassRate | None:
    """The faithfulness pass rate by PPI over the labelled items of the judge's population
    (``humans``, already scoped) and every item the judge alone graded: corrected only when every
    labelled item was drawn at random (``draws``, the store's record; issue #39), clustered by the
    items' ``queries``, with the weak-correlation note when PPI cannot help at this n."""
    if rubric != "faithfulness":
        return None
    labelled = [i for i in humans if i in answers]
    unlabelled = [i for i in answers if i not in humans]
    if len(labelled) < 2 or not unlabelled:
        return {
            "undefined_reason": f"{len(labelled)} items graded by both people and the judge ({scope}), "
            f"{len(unlabelled)} by the judge alone: too few for a corrected estimate",
            "scope": scope,
        }
    y = [float(consensus(list(humans[i].values()), rubric) == PASS) for i in labelled]
    yhat = [float(answers[i] == PASS) for i in labelled]
    yhat_u = [float(answers[i] == PASS) for i in unlabelled]
    drawn = _drawn(labelled, draws or {})
    clusters = queries or {}
    result = cast(
        PassRate,
        ppi_or_reason(
            y,
            yhat,
            yhat_u,
            drawn_at_random=drawn["random"],
            how=drawn["how"]
            if drawn["random"]
            else f"{sum(1 for i in labelled if i not in (draws or {}))} of {len(labelled)} labelled items",
            alpha=alpha,
            clusters_labeled=[clusters.get(i) or f"item {i}" for i in labelled],
            clusters_unlabeled=[clusters.get(i) or f"item {i}" for i in unlabelled],
        ),
    )
    # a pass rate lies in [0, 1]: the normal intervals are cut there (people-only 0.667 [0.133, 1.200]
    # on 6 items read as a rate above 1)
    if result.get("ci"):
        result["ci"] = rate_interval(result["ci"])
    human = result.get("human_only")
    if human is not None:
        # one interval for the people's pass rate everywhere (#40, item 7): check's, clustered by query
        people = people_pass_rate([bool(v) for v in y], [clusters.get(i) for i in labelled], alpha)
        human["ci"], human["how"] = people["ci"], people["how"]
        if result.get("ci"):  # is PPI narrower than the people-only figure now shown beside it?
            result.update(cast(PassRate, weak_check(np.asarray(y), np.asarray(yhat), dict(result))))
    result["scope"] = scope
    return result


def review(
    store: Store,
    week: str | None = None,
    min_labels: int = MIN_LABELS,
    save: bool = True,
    *,
    bar: float,
    statistic: str,
    verdicts_only: bool = False,
    min_queries: int = MIN_QUERIES,
    face: str = "review",
    stale_after_weeks: int = STALE_AFTER_WEEKS,
    scope_queries: Collection[str] | None = None,
    scope_name: str = "",
    pass_rates: bool = True,
) -> ReviewReport:
    """Every judge's agreement with people this week (see the module docstring): the verdict is
    :func:`calibration.stats.verdict.verdict` of ``statistic``'s kappa and interval at ``bar``.
    ``verdicts_only`` (``check``'s reading): each judge's kappa against the people's consensus, its
    verdict and pass rate, without the kappa against each person, the ceiling, position bias and the
    trend, which the verdict does not read. ``scope_queries`` (check's reading, issue #40): only the
    labels and answers on items of these queries (``scope_name`` says which, e.g. "this golden set's
    queries"); a judge that graded none of them is listed in ``out_of_scope``, not reviewed.
    ``min_queries``: queries a verdict needs (labels carrying a
    query are clustered by it). ``face``: who reads the verdict (review, page, check), recorded with
    each look: a verdict read again on more labels reads the confidence sequence (issue #39).
    ``pass_rates=False`` (a judge's reading on ``judge list`` and the pages, which show no pass rate):
    each judge's ``pass_rate`` is None, not computed (its interval loads scipy.stats: ~0.6 s of CPU)."""
    if statistic not in STATISTICS:
        raise StoreError(f"verdict statistic {statistic!r}; expected one of {', '.join(STATISTICS)}")
    week = check_week(week or current_week())
    sample = store.review_sample(week)
    draws = store.random_draws()
    judges: list[ReviewJudge] = []
    superseded: list[dict[str, Any]] = []  # the store's judge rows
    out_of_scope: list[dict[str, Any]] = []  # judges that graded nothing of ``scope_queries``
    for judge in store.judges():
        rubric = judge["rubric"]
        if rubric not in RUBRIC_KIND:
            continue
        if not judge["current"]:  # a later version of its name replaced it: the trend keeps its weeks
            superseded.append(judge)
            continue
        queries = store.item_queries(RUBRIC_KIND[rubric])
        # this week's sample scopes the judges of its items' kinds (traces, chunks), never another's;
        # it reads the labels made for it: after it was drawn, by the people it was assigned to
        kind_sample = {i for i in sample if i in queries}
        scoped = bool(kind_sample)
        humans = sample_people(store, week, rubric, kind_sample) if scoped else human_labels(store, rubric)
        if scope_queries is not None:  # check's reading: the evidence about this golden set only (#40)
            humans = {i: v for i, v in humans.items() if queries.get(i) in scope_queries}
        drift = served_model_changes(store, judge["fingerprint"])
        since = drift[-1]["since_label"] if drift else None
        answers = judge_answers(store, judge["fingerprint"], rubric, since)
        before = len(judge_answers(store, judge["fingerprint"], rubric)) - len(answers) if drift else 0
        # an offline judge is fitted on human labels: on those items its own answers are in-sample,
        # so the review reads its out-of-fold (cross-validated) answers there instead
        out_of_fold = {int(i): int(v) for i, v in (judge["settings"].get("out_of_fold") or {}).items()}
        answers.update(out_of_fold)
        if scope_queries is not None:
            answers = {i: v for i, v in answers.items() if queries.get(i) in scope_queries}
            if not answers:  # it graded nothing of this golden set's queries: no evidence about it
                out_of_scope.append(judge)
                continue
        trained = set(judge["settings"].get("trained_on") or []) - set(out_of_fold)
        scope = "every labelled item"
        if scoped:  # what this week's reading rests on: the labels made for it, by whom (#40)
            who = sorted({p for people in store.assignees(kind_sample).values() for p in people})
            by = (
                f" by {', '.join(who[:-1])} or {who[-1]}"
                if len(who) > 1
                else (f" by {who[0]}" if who else "")
            )
            scope = f"this week's sample ({len(kind_sample)} items, {len(humans)} labelled this week{by})"
        if scope_queries is not None:
            scope = (scope_name or "the given queries") + ("; " + scope if scoped else "")
        people_in_scope = {
            i: v for i, v in humans.items() if (not scoped or i in sample) and i not in trained
        }
        items = sorted(i for i in people_in_scope if i in answers)
        people = [consensus(list(humans[i].values()), rubric) for i in items]
        item_queries = _queries_of(items, queries)
        look_scope = week if scoped else "every labelled item"
        design = Design(
            queries=item_queries,
            raters=len({name for i in items for name in humans[i]}),
            drawn=_drawn(items, draws),
            earlier_looks=store.earlier_looks(judge["fingerprint"], look_scope, len(items)),
            min_labels=min_labels,
            min_queries=min_queries,
        )
        agreement = _kappas([answers[i] for i in items], people, rubric, statistic, bar, design)
        names = [] if verdicts_only else sorted({name for i in items for name in humans[i]})
        annotators: dict[str, KappaEntry] = {}
        for name in names:
            mine = [i for i in items if name in humans[i]]
            annotators[name] = _kappas(
                [answers[i] for i in mine],
                [humans[i][name] for i in mine],
                rubric,
                statistic,
                bar,
                Design(queries=_queries_of(mine, queries), raters=1),
            )
        n = agreement["n"]
        first, last = store.label_span(items)
        agreement["weeks"] = [_week_of(first), _week_of(last)] if first and last else None
        stale = _stale(last, week, stale_after_weeks)
        if stale and agreement["verdict"] in ("trusted", "not trusted", "undecided"):
            agreement["verdict"], agreement["reason"] = "stale", stale
            agreement["more_labels"] = None
            agreement["advice"] = (
                "label this week's sample (calibration review --sample) and review again; until then, treat "
                "its figures as unshown"
            )
        found = agreement["verdict"]
        store.add_look(
            {
                "fingerprint": judge["fingerprint"],
                "rubric": rubric,
                "scope": look_scope,
                "n": n,
                "queries": (agreement["design"] or {}).get("queries"),
                "verdict": found,
                "face": face,
            }
        )
        # the ceiling and position bias decide the advice (issue #40), so check's reading computes them too
        ceiling = _ceiling(humans, rubric, statistic, bar, queries)
        position = _position(store, judge["fingerprint"]) if rubric == "preference" else None
        judges.append(
            {
                "fingerprint": judge["fingerprint"],
                "name": judge["name"],
                "version": judge["version"],
                "current": judge["current"],
                "changed": judge["changed"],
                "served_model": drift[-1]["to"] if drift else _served_now(store, judge["fingerprint"]),
                "served_model_changed": drift,
                "left_out_served_before": before,
                "kind": judge["kind"],
                "rubric": rubric,
                "model": judge["model"],
                "endpoint": judge["endpoint"],
                "scope": scope,
                "left_out_fitted_on": len(trained & set(humans)),
                "out_of_fold": len(set(out_of_fold) & set(items)),
                "consensus": agreement,
                "annotators": annotators,
                "ceiling": None if verdicts_only else ceiling,
                "verdict": found,
                "status_reason": agreement["reason"] if found in ("uncalibrated", "stale") else None,
                "more_labels": agreement["more_labels"],
                "advice": case_advice(
                    agreement["advice"], kind=judge["kind"], bar=bar, ceiling=ceiling, position=position
                ),
                "position": None if verdicts_only else position,
                "pass_rate": _pass_rate(people_in_scope, answers, rubric, scope, draws=draws, queries=queries)
                if pass_rates
                else None,
            }
        )
    if save:
        _save(store, week, judges)
    return {
        "week": week,
        "min_labels": min_labels,
        "min_queries": min_queries,
        "interval": INTERVAL_METHOD,
        "rule": RULE,
        "statistic": statistic,
        "bar": bar,
        "thresholds": {"trusted": bar},
        "judges": judges,
        "superseded": [
            {
                "name": j["name"],
                "version": j["version"],
                "fingerprint": j["fingerprint"],
                "rubric": j["rubric"],
            }
            for j in superseded
        ],
        "out_of_scope": [
            {
                "name": j["name"],
                "version": j["version"],
                "fingerprint": j["fingerprint"],
                "rubric": j["rubric"],
            }
            for j in out_of_scope
        ],
        "trend": [] if verdicts_only else trend(store),  # after the save: this week's review is in it
    }


def _week_of(stamp: str) -> str:
    """The ISO week of a stored time."""
    return current_week(date.fromisoformat(stamp[:10]))


def _stale(newest: str | None, week: str, weeks: int) -> str | None:
    """Why a verdict is stale: its newest label is more than ``weeks`` weeks before the reviewed week's
    end (None: fresh, or no label)."""
    if newest is None:
        return None
    made = date.fromisoformat(newest[:10])
    age = (week_end(week) - made).days
    if age <= weeks * 7:
        return None
    return (
        f"the newest of its labels is from {made.isoformat()}, {age // 7} weeks before the end of {week}: "
        f"a verdict stays fresh {weeks} weeks"
    )


def _save(store: Store, week: str, judges: list[ReviewJudge]) -> None:
    """This week's review of each judge, kept for the trend (its rule: :data:`RULE`)."""
    rows: list[Mapping[str, Any]] = []
    for j in judges:
        c = j["consensus"]
        low, high = c["ci"] or (None, None)
        rows.append(
            {
                "fingerprint": j["fingerprint"],
                "rubric": j["rubric"],
                "window": week,
                "n": c["n"],
                "kappa": c["kappa"],
                "ci_low": low,
                "ci_high": high,
                "weights": c["weights"],
                "verdict": j["verdict"],
                "sample": j["scope"],
                "rule": RULE,
                "statistic": c["statistic"],
                "served_model": j["served_model"],
            }
        )
    store.add_calibrations(rows)


def _saved_reviews(store: Store) -> list[TrendPoint]:
    """The store's saved reviews, newest per (judge, week): its rows (dict[str, Any] at this boundary,
    annotation.store.judges) are trend points before they are marked."""
    return cast(list[TrendPoint], store.calibration_trend())


def trend(store: Store) -> list[TrendPoint]:
    """The newest review per (judge name, week), oldest week first (:meth:`Store.calibration_trend`;
    of two versions reviewed in one week, the later version's), each marked ``new_version`` when it is the first point of its judge name or its version or
    served model differs from the point before of the same name (where the line changes judge)."""
    newest: dict[tuple[str, str], TrendPoint] = {}
    for point in _saved_reviews(store):  # one point per judge name and week: its newest version's
        key = (point["name"] or point["fingerprint"], point["week"])
        if key not in newest or (point["version"] or 0) >= (newest[key]["version"] or 0):
            newest[key] = point
    points = sorted(newest.values(), key=lambda p: (p["week"], p["name"] or p["fingerprint"]))
    last: dict[str, tuple[int | None, str | None]] = {}
    for point in points:
        name = point["name"] or point["fingerprint"]
        now = (point["version"], point["served_model"])
        point["new_version"] = last.get(name) != now
        last[name] = now
    return points


def latest_calibration(store: Store, fingerprint: str) -> TrendPoint | None:
    """A judge's newest saved review: what every judge-derived figure must carry beside it."""
    for row in reversed(_saved_reviews(store)):
        if row["fingerprint"] == fingerprint:
            return row
    return None
