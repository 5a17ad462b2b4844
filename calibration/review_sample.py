"""The weekly review's sample and the labels it reads (:mod:`calibration.review`'s first two steps).

- the week: an ISO week that has begun (:func:`check_week`; a week to come is refused in one line);
- the people's labels and the judge's answers (:func:`human_labels`, :func:`judge_answers`,
  :func:`consensus`);
- :func:`draw_sample`: this week's sample of traces (stratified by the faithfulness judge's grade and
  the trace's system) and of chunks the current relevance judge graded (by its grade), recorded and
  assigned to the people who will label it, blind;
- :func:`sample_people`: the labels made for the sample, after it was drawn, by the people it was
  assigned to (weekly means weekly, issue #40), and :func:`sample_progress`.
"""

from __future__ import annotations

import random
from collections import defaultdict
from datetime import date

from annotation.rubrics import NO_PREFERENCE
from annotation.store import Store, StoreError
from calibration.results import ReviewSample, SampleProgress
from calibration.stats.position import summarize_pairs
from calibration.stats.verdict import DEFAULT_OVERLAP, SAMPLE_SIZE

__all__ = [
    "RUBRIC_KIND",
    "check_week",
    "consensus",
    "current_week",
    "draw_sample",
    "human_labels",
    "judge_answers",
    "sample_judge",
    "sample_people",
    "sample_progress",
    "week_end",
]

RUBRIC_KIND = {"relevance": "chunk", "faithfulness": "trace", "preference": "pair"}


def current_week(today: date | None = None) -> str:
    year, week, _ = (today or date.today()).isocalendar()
    return f"{year}-W{week:02d}"


def check_week(week: str, today: date | None = None) -> str:
    """``week`` when it is an ISO week that has begun; else :class:`StoreError` in one line (a review
    of a week to come would save a verdict on labels nobody has made yet, issue #40)."""
    try:
        monday = date.fromisocalendar(int(week[:4]), int(week[6:]), 1)
        if week[4:6] != "-W" or len(week) != 8:
            raise ValueError
    except ValueError:
        raise StoreError(f"week {week!r}; expected an ISO week YYYY-Www, e.g. 2026-W49") from None
    if monday > (today or date.today()):
        raise StoreError(
            f"week {week} has not begun (this week is {current_week(today)}): nothing to review or draw yet"
        )
    return week


def week_end(week: str) -> date:
    """The Sunday of an ISO week."""
    return date.fromisocalendar(int(week[:4]), int(week[6:]), 7)


# ---------------------------------------------------------------- reading labels


def human_labels(store: Store, rubric: str) -> dict[int, dict[str, int]]:
    """item -> annotator -> current value. Preferences are mapped from the slot shown
    first to the candidate (0 = A, the pair's first trace; 1 = B; 2 = tie, "both bad" counting
    as a tie: the judge's answer is a swap-averaged preference, which cannot say more)."""
    rows = store.newest_labels_shown(rubric, RUBRIC_KIND[rubric])
    out: dict[int, dict[str, int]] = defaultdict(dict)
    for item, who, value, shown in rows:
        if value is None:
            continue
        if rubric == "preference" and shown == "BA" and value in (0, 1):
            value = 1 - value
        if rubric == "preference" and value in NO_PREFERENCE:
            value = NO_PREFERENCE[0]
        out[int(item)][who] = int(value)
    return dict(out)


def judge_answers(store: Store, fingerprint: str, rubric: str, since: int | None = None) -> dict[int, int]:
    """item -> the judge's answer: its grade (first repeat), or for pairs the candidate its
    swap-averaged preference favours (only pairs answered in both orders). ``since``: only labels
    stored from that label id on (those served by the model the endpoint serves now)."""
    rows = [r for r in store.judge_values(fingerprint) if since is None or r["id"] >= since]
    if rubric != "preference":
        return {r["item_id"]: r["value"] for r in rows if (r["repeat"] or 0) == 0}
    out = {}
    for pair in summarize_pairs(rows)["pairs"]:
        p = pair["preference_a"]
        if p is not None:
            out[pair["item_id"]] = 0 if p > 0.5 else (1 if p < 0.5 else 2)
    return out


def consensus(values: list[int], rubric: str) -> int:
    """The people's answer: the median (lower middle) of ordinal grades; for
    preferences the majority, a tie between choices counting as "tie"."""
    values = sorted(values)
    if rubric != "preference":
        return values[(len(values) - 1) // 2]
    counts = {v: values.count(v) for v in set(values)}
    best = max(counts.values())
    winners = [v for v, c in counts.items() if c == best]
    return winners[0] if len(winners) == 1 else 2


# ---------------------------------------------------------------- sampling


def sample_judge(store: Store, rubric: str = "faithfulness") -> str | None:
    """The judge of ``rubric`` a sample is stratified by: the newest one registered (of relevance:
    the newest current one, whose graded chunks are the chunk sample's population)."""
    judges = [
        j for j in store.judges() if j["rubric"] == rubric and (rubric == "faithfulness" or j["current"])
    ]
    return judges[-1]["fingerprint"] if judges else None


def _allocate(strata: dict[str, list[int]], n: int, rng: random.Random) -> list[tuple[int, str]]:
    """``n`` items (all when fewer) drawn from ``strata`` by proportional allocation, at least one per
    stratum, largest remainders for the rest."""
    total = sum(len(v) for v in strata.values())
    take = min(n, total)
    chosen: list[tuple[int, str]] = []
    if not take:
        return chosen
    quotas = {k: max(1, int(take * len(v) / total)) for k, v in strata.items()}
    while sum(quotas.values()) > take:
        biggest = max(quotas, key=lambda k: quotas[k])
        quotas[biggest] -= 1
    spare = take - sum(quotas.values())
    for key in sorted(strata, key=lambda k: -(take * len(strata[k]) / total - quotas[k]))[:spare]:
        quotas[key] += 1
    for key in sorted(strata):
        members = sorted(strata[key])
        rng.shuffle(members)
        chosen += [(item, key) for item in members[: min(quotas[key], len(members))]]
    return chosen


def draw_sample(
    store: Store,
    week: str | None = None,
    n: int = SAMPLE_SIZE,
    annotators: list[str] | tuple[str, ...] = (),
    seed: int = 0,
    fingerprint: str | None = None,
    overlap: float = DEFAULT_OVERLAP,
) -> ReviewSample:
    """This week's sample of ``n`` trace items not sampled in an earlier week (and of ``n`` chunk items
    the newest current relevance judge graded, by its grade, when it has graded any), stratified
    (proportional allocation, at least one per stratum) by the judge's grade and the trace's system
    (``fingerprint``, default :func:`sample_judge`; by system alone when no judge graded them), and
    assigned to ``annotators``: each item to one of them in turn, and a share ``overlap`` of the
    items to two (the items the human-human ceiling rests on; 1.0: every annotator labels all)."""
    week = check_week(week or current_week())
    if n < 1:
        raise StoreError(f"sample size {n}; expected at least 1")
    if not 0.0 <= overlap <= 1.0:
        raise StoreError(f"overlap {overlap}; expected a share between 0 and 1")
    if store.review_sample_exists(week):
        raise StoreError(f"week {week} already has a review sample; review it, or choose another week")
    rows = store.unsampled_trace_items()
    relevance = sample_judge(store, "relevance")
    chunk_rows = store.unsampled_chunk_items(relevance) if relevance else []
    if not rows and not chunk_rows:
        raise StoreError(
            "nothing left to sample: every trace, and every chunk a relevance judge graded, was in an "
            "earlier week's sample"
        )
    fingerprint = fingerprint or sample_judge(store)
    answers = judge_answers(store, fingerprint, "faithfulness") if fingerprint else {}
    strata: dict[str, list[int]] = defaultdict(list)
    for item, system in rows:
        key = (f"judge={answers[item]}, " if item in answers else "") + f"system={system}"
        strata[key].append(int(item))
    rng = random.Random(seed)
    total = len(rows)
    chosen = _allocate(strata, n, rng)
    # the relevance judge's weekly sample (issue #40): n of the chunks it graded, by its grade; drawn
    # across every query, so the verdict's query-clustered interval has queries to rest on
    chunk_strata: dict[str, list[int]] = defaultdict(list)
    for item, _query, grade in chunk_rows:
        chunk_strata[f"chunk, judge={grade}"].append(int(item))
    chunks = _allocate(chunk_strata, n, random.Random(seed + 1))
    chosen += chunks
    doubled = 0
    with store.write():
        store.add_review_sample(week, chosen)
        ids = [store.annotator_id(name) for name in annotators]
        if ids:
            order = [item for item, _ in chosen]
            rng.shuffle(order)
            n_double = len(order) if overlap >= 1.0 else round(overlap * len(order))
            assignments = []
            for position, item in enumerate(order):
                people = {ids[position % len(ids)]}
                if position < n_double:
                    people = set(ids) if overlap >= 1.0 else people | {ids[(position + 1) % len(ids)]}
                    doubled += len(people) > 1
                assignments += [(item, person, rng.getrandbits(48)) for person in sorted(people)]
            store.assign_many(assignments)
    counts: dict[str, int] = defaultdict(int)
    chunk_counts: dict[str, int] = defaultdict(int)
    for _, key in chosen:
        if key.startswith("chunk, "):
            chunk_counts[key] += 1
        else:
            counts[key] += 1
    return {
        "week": week,
        "sampled": len(chosen) - len(chunks),
        "of": total,
        "strata": dict(counts),
        "chunks_sampled": len(chunks),
        "chunks_of": len(chunk_rows),
        "chunk_strata": dict(chunk_counts),
        "chunks_stratified_by": relevance,
        "annotators": list(annotators),
        "doubly_assigned": doubled,
        "stratified_by": fingerprint,
    }


def sample_progress(store: Store, week: str) -> SampleProgress:
    """How far people are with this week's sample: items labelled by one person or more, by two
    or more (the ceiling's), of the sample's size."""
    sample = store.review_sample(check_week(week))
    traces = set(store.item_queries("trace"))
    people = sample_people(store, week, "faithfulness", sample)
    people.update(sample_people(store, week, "relevance", sample))
    labelled = [i for i in sample if people.get(i)]
    return {
        "week": week,
        "size": len(sample),
        "traces": len(sample & traces),
        "chunks": len(sample - traces),
        "labelled": len(labelled),
        "doubly": sum(1 for i in labelled if len(people[i]) >= 2),
    }


def sample_people(store: Store, week: str, rubric: str, sample: set[int]) -> dict[int, dict[str, int]]:
    """The people's labels on the ``week``'s sample that were made for it (issue #40: weekly means
    weekly): only label rows stored after the sample was drawn, and on an item assigned to people,
    only theirs. item -> annotator -> current value; items left with no label are left out."""
    drawn_at = store.review_sample_drawn_at(week)
    if drawn_at is None:
        return {}
    made = store.labelled_since(drawn_at)
    assigned = store.assignees(sample)
    out: dict[int, dict[str, int]] = {}
    for item, votes in human_labels(store, rubric).items():
        if item not in sample:
            continue
        kept = {
            name: value
            for name, value in votes.items()
            if (item, name) in made and (item not in assigned or name in assigned[item])
        }
        if kept:
            out[item] = kept
    return out
