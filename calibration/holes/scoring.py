"""Holes in a run's top k, filled by a judge, and the metric corrected with people's labels on
a random sample of queries (pure: numpy and scipy; no IO).

A *hole* is a chunk in a run's top k (distinct ids: a repeat keeps its slot and is not a
second hole) that the judgments (``GOLDEN``, people's grades) do not grade. A metric counts
it as not relevant, so a retriever that surfaces chunks nobody labelled reads worse than it
is. Three figures per measure, over the same queries:

- **holes as not relevant**: people's grades only (what ``metrics`` prints without a judge);
- **judge-filled**: people's grades where they exist, the judge's on the holes of the top k
  (a hole the judge did not grade stays not relevant, and is counted); measures whose
  denominator is |Rel| (R@k, AP) count the judge-filled relevant holes in |Rel|
  ("|Rel| 3 + 1 filled"); relevant chunks beyond the run's top k that nobody judged stay
  unknown (that is the audit's ``--estimate``, not this);
- **corrected** (with a hole sample): a uniform random sample of n of the N queries whose
  holes people labelled. For the query-level values ``p_i`` (holes as not relevant, every
  query), ``f_i`` (judge-filled, every query) and ``y_i`` (people's grades on the holes, the
  sampled queries), the target is the mean of ``y`` over all N queries (what people judging
  every hole of the top k would read). The judge predicts only what the holes add, ``f - p``:

      theta_hat = mean_N(p) + lam * mean_N(f - p) + mean_n((y - p) - lam * (f - p))
      se^2      = (1 - n/N) * var_n((y - p) - lam * (f - p)) / n
                  (var with n - 1 degrees of freedom, n - 2 when lam was tuned on the sample)
      CI        = theta_hat -/+ t_{n-1, 1-alpha/2} * se, widened (below), cut to
                  [0, 1] ([-1, 1] for a delta; for P@k, to [holes as not relevant, every hole
                  relevant], for R@k to [holes as not relevant, 1]: known bounds, which cut the
                  estimate too)

  ``mean_N(p)`` and ``mean_N(f - p)`` are known exactly (every query has both), so the only
  noise is which queries were drawn: the variance is the finite-population one of a simple
  random sample without replacement (the survey sampler's difference estimator; PPI's mean
  estimator, Angelopoulos et al., Science 2023, with the unlabelled set being the whole
  population, where the term for the unlabelled mean's own noise is zero). ``lam`` is
  tuned as PPI++ tunes it (the variance-minimising weight, ``cov_n(y - p, f - p) /
  var_n(f - p)``, clipped to [0, 1]; 0 when the judge's fill does not vary over the sample,
  which then shows nothing of its accuracy); ``lam = 0`` is the sample alone, anchored on the
  pool's figure, printed beside with the people-only mean of the sample (same labels): the
  judge earns its place only when the corrected interval is narrower. A Student t quantile
  rather than the normal one, because n is small by design (tens of queries) and lam is tuned
  on the same sample.

The t interval trusts the sample's variance, which a sample of gains can misread: one that drew
few of the rare large gains reads a low mean and a low variance, one whose queries all gained
alike reads none. So the interval is widened to the hull of the t interval and a score interval
(the variance tied to the mean, Wilson's reasoning: :mod:`calibration.holes.interval`). On
Cranfield (``bench/holes.py``, docs/benchmarks.md) its upper end took P@10's coverage from
93.2-94.7% to 95.7-96.6% at 40 sampled queries, 6% wider; its lower end took the coverage where
90% of queries gain one relevant hole from 61-63% to 95-98% at 10 sampled queries of 200, and
from 92-93% to 98-99% at 40 (``bench/holes.py --synthetic``), and left Cranfield's as it was.

The interval needs the sample to have seen what the holes do: when people's labels on the
holes changed the figure of fewer than ``MIN_CHANGED`` (5) sampled queries, no interval is
given (the point estimate is, with that said). A hole's effect is a rare event for some
measures (RR changes only when a relevant hole ranks above the first relevant chunk), and a
sample that saw none of them reads a residual variance of zero: measured on Cranfield
(``bench/holes.py``), such intervals covered the target in under half the samples.

Measures that can be undefined (R@k, nDCG@k, RR, AP need a relevant chunk) are corrected over
the queries where people's grades already define them (at least one chunk judged relevant
before any hole is filled): that set does not depend on the holes, so the sample's share of
it is still a uniform random sample. Queries left out are counted.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import ArrayLike

from annotation.errors import DenominatorError
from annotation.model import Qrels, Run
from calibration.holes.interval import ALIKE, score_bounds, widened
from calibration.metrics import (
    AP,
    RR,
    Evaluation,
    Gain,
    Measure,
    blank_repeats,
    evaluate,
    top_ranked,
    top_unjudged,
    with_grades,
)

__all__ = [
    "CORRECTED_MEASURES",
    "MIN_CHANGED",
    "Corrected",
    "HoleQuery",
    "HoleScores",
    "HolesError",
    "corrected_mean",
    "corrected_measures",
    "find_holes",
    "holes_of",
    "sample_queries",
    "score_with_holes",
    "check_sample_queries",
    "correct_scores",
    "merged_scores",
    "query_scores",
    "refuse_unlabelled",
]


MIN_CHANGED = 5  # sampled queries changed by people's hole labels an interval needs (see above)


class HolesError(DenominatorError, ValueError):
    """A hole sample or a judge's labels that cannot be used as asked."""


def corrected_measures(ks: Sequence[int]) -> list[Measure]:
    """The mean measures that get a corrected figure: P@k, R@k, nDCG@k per k, RR, AP."""
    names = [Measure(name, k) for name in ("P", "R", "nDCG") for k in ks]
    return [*names, RR, AP]


CORRECTED_MEASURES = corrected_measures  # the list for given cutoffs


@dataclass(frozen=True)
class HoleQuery:
    """One query's top k: its holes (unjudged ids, rank order), judged chunks, positions filled."""

    qid: str
    k: int
    holes: tuple[str, ...]
    judged: int  # distinct judged chunks among the first k positions
    filled: int  # positions of the first k the ranking holds (repeats too): min(k, retrieved)

    @property
    def share(self) -> float:
        """The share of the top k the holes take (of k positions, filled or not)."""
        return len(self.holes) / self.k

    @property
    def judged_at_k(self) -> float | None:  # the audit's: an empty or repeat's slot is not judged
        return self.judged / self.filled if self.filled else None


def find_holes(qrels: Qrels, run: Run, k: int) -> dict[str, HoleQuery]:
    """Per query that both the run and the judgments hold (bytewise order): the run's top k
    chunks that the judgments do not grade. A repeated id keeps its slot and is one hole.
    :func:`holes_of` over ``run.rankings()`` is the reference; here the sort and the judged rows
    the metrics share find them (:func:`calibration.metrics.top_unjudged`), only the holes made
    Python strings."""
    if k < 1:
        raise HolesError(f"k {k}; expected a whole number >= 1")
    graded = qrels.grades
    found = top_unjudged(run, qrels, k)
    return {
        qid: HoleQuery(qid=qid, k=k, holes=tuple(holes), judged=judged, filled=filled)
        for qid in sorted(found.keys() & graded.keys(), key=lambda q: q.encode("utf-8"))
        for holes, judged, filled in [found[qid]]
    }


def holes_of(
    grades: Mapping[str, Mapping[str, int]], rankings: Mapping[str, Sequence[str]], k: int
) -> dict[str, HoleQuery]:
    if k < 1:
        raise HolesError(f"k {k}; expected a whole number >= 1")
    out: dict[str, HoleQuery] = {}
    for qid in sorted(set(rankings) & set(grades), key=lambda q: q.encode("utf-8")):
        slots, _ = blank_repeats(rankings[qid][:k])
        top = [doc for doc in slots if doc is not None]
        holes = tuple(doc for doc in top if doc not in grades[qid])
        out[qid] = HoleQuery(qid=qid, k=k, holes=holes, judged=len(top) - len(holes), filled=len(slots))
    return out


def sample_queries(qids: Iterable[str], n: int, seed: int) -> list[str]:
    """A uniform random sample of ``n`` query ids without replacement (bytewise order in and
    out, so the same ids and seed give the same sample on any machine)."""
    population = sorted(set(qids), key=lambda q: q.encode("utf-8"))
    if n < 1:
        raise HolesError(f"a sample of {n} queries; expected at least 1")
    if n > len(population):
        raise HolesError(f"a sample of {n} queries, but the run has {len(population)} judged queries")
    rng = np.random.default_rng(seed)
    picked = rng.choice(len(population), size=n, replace=False)
    return sorted((population[i] for i in picked), key=lambda q: q.encode("utf-8"))


@dataclass(frozen=True)
class Corrected:
    """A corrected mean with its interval, beside two estimates from the same sample without
    the judge: people-only (the sample's own mean) and the pool-anchored one (lam = 0)."""

    estimate: float | None
    ci: tuple[float, float] | None
    se: float | None
    lam: float | None
    n: int  # sampled queries where the measure is defined
    population: int  # queries where it is defined
    human_only: float | None
    human_only_ci: tuple[float, float] | None
    without_judge: float | None
    without_judge_ci: tuple[float, float] | None
    note: str | None = None
    changed: int = 0  # sampled queries whose figure people's labels on the holes changed


def _vectors(*values: ArrayLike) -> list[np.ndarray]:
    return [np.asarray(v, dtype=float) for v in values]


def corrected_mean(
    y: ArrayLike,
    f_sampled: ArrayLike,
    f_all: ArrayLike,
    *,
    anchor_sampled: ArrayLike | None = None,
    anchor_all: ArrayLike | None = None,
    alpha: float = 0.05,
    lam: float | None = None,
    bounds: tuple[float, float] = (0.0, 1.0),
    both_ends: bool = False,
) -> Corrected:
    """The estimator of the module's docstring: ``y`` and ``f_sampled`` (and ``anchor_sampled``)
    on the n sampled queries, same order; ``f_all`` (and ``anchor_all``) on all N, the sampled
    ones included. Without an anchor it is 0: plain PPI on the whole figure. ``both_ends``: the
    lower end is lowered by the mirrored score interval too (a difference of two runs, whose
    gains may lean either way)."""
    yv, fs, fa = _vectors(y, f_sampled, f_all)
    n, big_n = yv.size, fa.size
    ps, pa = _vectors(
        anchor_sampled if anchor_sampled is not None else np.zeros(n),
        anchor_all if anchor_all is not None else np.zeros(big_n),
    )
    if fs.size != n or ps.size != n or pa.size != big_n:
        raise HolesError(
            f"{n} people's values, {fs.size} judge-filled and {ps.size} anchor values on the sample, "
            f"{big_n} judge-filled and {pa.size} anchor values in all; expected one of each per query"
        )
    if n > big_n:
        raise HolesError(f"{n} sampled queries of {big_n}; a sample cannot be larger than its population")
    if not 0 < alpha < 1:
        raise HolesError(f"alpha {alpha!r}; expected a number strictly between 0 and 1")
    if n == 0:
        return Corrected(None, None, None, None, 0, big_n, None, None, None, None, "no sampled query here")
    # what people's labels on the holes add to the anchor (the figure with holes as not
    # relevant, known for every query), and what the judge's add: the judge predicts only that
    gain_y, gain_f, gain_all = yv - ps, fs - ps, fa - pa
    note = None
    tuned = lam is None
    if lam is None:
        var_f = float(np.var(gain_f, ddof=1)) if n > 1 and float(np.ptp(gain_f)) >= ALIKE else 0.0
        if var_f == 0.0:  # (alike up to float noise: a weight fitted on noise would be noise)
            # nothing on the sample shows how right the judge's fill is: no weight on it
            lam, note = (
                0.0,
                "lambda 0: the judge's fill does not vary over the sample, so nothing shows its accuracy",
            )
        else:
            lam = float(np.clip(np.cov(gain_y, gain_f, ddof=1)[0, 1] / var_f, 0.0, 1.0))
    base = float(pa.mean())
    d = gain_y - lam * gain_f
    raw = base + lam * float(gain_all.mean()) + float(d.mean())
    estimate = min(max(raw, bounds[0]), bounds[1])
    human = float(yv.mean())
    plain = base + float(gain_y.mean())
    if n < 2:
        return Corrected(
            estimate, None, None, lam, n, big_n, human, None, plain, None, "one sampled query: no interval",
            int(np.count_nonzero(gain_y)),
        )  # fmt: skip
    from scipy.stats import t as student_t  # start-up: the metrics commands load no scipy

    q = float(student_t.ppf(1 - alpha / 2, n - 1))
    fpc = 1.0 - n / big_n

    def half(values: np.ndarray, ddof: int = 1) -> float:
        return q * math.sqrt(fpc * float(np.sum((values - values.mean()) ** 2)) / (n - ddof) / n)

    natural = (0.0, 1.0) if bounds[0] >= 0 else (-1.0, 1.0)

    def around(centre: float, width: float, cut: tuple[float, float] = natural) -> tuple[float, float]:
        """The interval, cut to [0, 1] for a measure, [-1, 1] for a difference of two; the corrected
        one to ``bounds`` too (its estimate lies inside them, so the cut interval holds it)."""
        return max(cut[0], centre - width), min(cut[1], centre + width)

    human_ci = around(human, half(yv)) if n >= MIN_CHANGED else None  # two alike queries: no spread
    changed = int(np.count_nonzero(gain_y))
    if changed < MIN_CHANGED:
        return Corrected(
            estimate, None, None, lam, n, big_n, human, human_ci, plain, None,
            f"no interval: people's labels on the holes changed the figure of {changed} of the {n} "
            f"sampled queries; an interval needs at least {MIN_CHANGED} (label the holes of more queries)",
            changed,
        )  # fmt: skip
    # a tuned lambda is one parameter fitted on the sample: its residuals' variance has n - 2
    # degrees of freedom, as the survey sampler's regression estimator counts them
    ddof = 2 if tuned and n > 2 and note is None else 1
    width = half(d, ddof)
    se = width / q
    # the hull of the t interval and the score interval (calibration/holes/interval.py)
    k2 = q * q * fpc / (n - ddof)
    low, high = around(estimate, width, bounds)
    score = score_bounds(gain_y, gain_f, lam, raw - base, k2)
    if score is not None:
        low, high = max(min(low, base + score[0]), bounds[0]), min(max(high, base + score[1]), bounds[1])
    if both_ends:  # a difference of two runs' gains may lean either way: the mirror's ends too
        mirror = score_bounds(-gain_y, -gain_f, lam, base - raw, k2)
        if mirror is not None:
            low, high = (
                max(min(low, base - mirror[1]), bounds[0]),
                min(max(high, base - mirror[0]), bounds[1]),
            )
    return Corrected(
        estimate=estimate,
        ci=(low, high),
        se=se,
        lam=lam,
        n=n,
        population=big_n,
        human_only=human,
        human_only_ci=human_ci,
        without_judge=plain,
        without_judge_ci=widened(around(plain, half(gain_y)), base, gain_y, q * q * fpc / (n - 1), natural),
        note=note,
        changed=changed,
    )


@dataclass
class HoleScores:
    """Per query and measure, the three figures' inputs, aligned on ``qids`` (bytewise).

    ``pool``: holes as not relevant; ``filled``: the judge's grades on the holes; ``people``:
    people's grades on the holes (NaN for queries outside the sample); NaN = undefined.
    ``filled_count``/``filled_relevant``: holes of the top k the judge graded / graded
    relevant; ``ungraded``: holes the judge did not grade (they stay not relevant);
    ``rel``: |Rel| from people's grades (before the sample's holes)."""

    k: int
    measures: list[Measure]
    qids: list[str]
    holes: dict[str, HoleQuery]
    sampled: list[str]
    pool: dict[Measure, np.ndarray]
    filled: dict[Measure, np.ndarray]
    people: dict[Measure, np.ndarray]
    rel: np.ndarray
    filled_count: np.ndarray
    filled_relevant: np.ndarray
    ungraded: np.ndarray
    corrected: dict[str, Corrected] = field(default_factory=dict)

    def mean(self, which: str, name: str) -> tuple[float | None, int]:
        """The mean of one figure over the queries where it is defined, and that count."""
        column = getattr(self, which)[name]
        defined = ~np.isnan(column)
        return (float(column[defined].mean()) if defined.any() else None), int(defined.sum())


def score_with_holes(
    qrels: Qrels,
    run: Run,
    *,
    k: int,
    judge: Mapping[str, Mapping[str, int]],
    min_grade: int,
    gain: Gain = "linear",
    sample: Mapping[str, Sequence[str]] | None = None,
    people: Mapping[str, Mapping[str, int]] | None = None,
    alpha: float = 0.05,
    rankings: Mapping[str, Sequence[str]] | None = None,
) -> HoleScores:
    """Score ``run`` at cutoff ``k`` three ways (see the module's docstring).

    ``qrels``: people's grades, which may already hold the sample's holes (labelled since);
    ``judge``: a judge's grades (only those on holes are used; people's grades win);
    ``sample``: the hole sample's design, per sampled query the chunk ids that were its holes;
    ``people``: people's grades on those holes when the judgments do not hold them. A sampled
    hole with no people's grade in either is an error (the sample would not be random any more
    if it were dropped).

    The steps, for a run scored batch by batch of whole queries (``metrics --judge-labels`` on a
    run file): :func:`check_sample_queries`, :func:`query_scores` per batch, :func:`merged_scores`,
    :func:`refuse_unlabelled`, :func:`correct_scores`."""
    sample = dict(sample or {})
    if k < 1:
        raise HolesError(f"k {k}; expected a whole number >= 1")
    if rankings is None:  # the caller's, when it has them already (at least the top k)
        rankings = top_ranked(run, k)
    check_sample_queries(sample, qrels.grades, rankings)
    scores, missing = query_scores(
        qrels,
        run,
        k=k,
        judge=judge,
        min_grade=min_grade,
        gain=gain,
        sample=sample,
        people=people or {},
    )
    refuse_unlabelled(missing, k)
    correct_scores(scores, alpha)
    return scores


def check_sample_queries(
    sample: Mapping[str, Sequence[str]], grades: Mapping[str, Mapping[str, int]], queries: Iterable[str]
) -> None:
    """Every query the hole sample names is one the judgments and the run (its ``queries``) hold."""
    strangers = sorted(set(sample) - (set(grades) & set(queries)))
    if strangers:
        raise HolesError(
            f"the hole sample names {len(strangers)} quer{'y' if len(strangers) == 1 else 'ies'} "
            f"the run and the judgments do not both hold (first {strangers[0]!r})"
        )


def refuse_unlabelled(missing: int, k: int) -> None:
    """``missing`` holes of the sampled queries without a people's grade: an error."""
    if missing:
        raise HolesError(
            f"{missing} hole{'' if missing == 1 else 's'} of the sampled queries' top {k} "
            f"{'has' if missing == 1 else 'have'} no people's grade: label them "
            "(python -m annotation pool --holes FILE) before the sample can correct the metric"
        )


def query_scores(
    qrels: Qrels,
    run: Run,
    *,
    k: int,
    judge: Mapping[str, Mapping[str, int]],
    min_grade: int,
    gain: Gain,
    sample: Mapping[str, Sequence[str]],
    people: Mapping[str, Mapping[str, int]],
) -> tuple[HoleScores, int]:
    """The per-query part of :func:`score_with_holes` (no corrected figure yet), and the count of
    the sampled queries' holes without a people's grade. Each query's figures read only its own
    grades and ranking, so a run scored batch by batch of whole queries (``qrels`` and ``run``
    cut to the batch's queries, ``sample`` to those of them it names) gives the figures of a whole
    read (:func:`merged_scores`). The run's rows are looked up against the grades once: the
    holes (:func:`find_holes`) and the three figures read that look-up, the judge's and people's
    grades on the holes looked up alone (:func:`calibration.metrics.with_grades`)."""
    base = qrels.grades
    # what people had graded before the sample: the sample's holes taken out again
    pool = dict(base)
    for qid, listed in sample.items():
        if qid in pool:
            drop = set(listed)
            pool[qid] = {d: g for d, g in pool[qid].items() if d not in drop}
    # the same judgments (and table) when the sample took none out (the engine reads tables)
    pool_qrels = qrels if not sample else Qrels(grades=pool)
    holes = find_holes(pool_qrels, run, k)
    qids = list(holes)
    truth: dict[str, dict[str, int]] = {}
    missing = 0
    for qid in sample:
        labelled = {}
        for doc in holes[qid].holes:
            grade = people.get(qid, {}).get(doc, base[qid].get(doc))
            if grade is None:
                missing += 1
            else:
                labelled[doc] = grade
        truth[qid] = labelled
    fill: dict[str, dict[str, int]] = {}
    counts = np.zeros((3, len(qids)), dtype=np.int64)
    for i, qid in enumerate(qids):
        graded = judge.get(qid, {})
        got = {doc: graded[doc] for doc in holes[qid].holes if doc in graded}
        fill[qid] = got
        counts[0, i] = len(got)
        counts[1, i] = sum(1 for g in got.values() if g >= min_grade)
        counts[2, i] = len(holes[qid].holes) - len(got)
    measures = corrected_measures([k])
    as_pool = evaluate(pool_qrels, run, ks=[k], min_grade=min_grade, gain=gain)
    filled_qrels = with_grades(run, pool_qrels, fill, qids, depth=k)
    as_filled = evaluate(filled_qrels, run, ks=[k], min_grade=min_grade, gain=gain)
    sampled = [qid for qid in qids if qid in sample]
    rows = {qid: i for i, qid in enumerate(qids)}
    people_values = {name: np.full(len(qids), np.nan) for name in measures}
    if sampled:
        people_qrels = with_grades(run, pool_qrels, truth, sampled, depth=k)
        as_people = evaluate(people_qrels, run, ks=[k], min_grade=min_grade, gain=gain)
        at = [rows[qid] for qid in as_people.qids]
        for name in measures:
            people_values[name][at] = as_people.values[name]
    scores = HoleScores(
        k=k,
        measures=measures,
        qids=qids,
        holes=holes,
        sampled=sampled,
        pool={name: _aligned(as_pool, name, rows) for name in measures},
        filled={name: _aligned(as_filled, name, rows) for name in measures},
        people=people_values,
        rel=_aligned_rel(as_pool, rows),
        filled_count=counts[0],
        filled_relevant=counts[1],
        ungraded=counts[2],
    )
    return scores, missing


def merged_scores(parts: Sequence[HoleScores]) -> HoleScores:
    """One :class:`HoleScores` from those of batches of whole queries (each query in one batch, all
    at the same k), in bytewise order of queries, as :func:`query_scores` gives a whole run's."""
    if not parts:
        raise HolesError("no batch of queries to merge")
    qids = [qid for part in parts for qid in part.qids]
    order = np.array(sorted(range(len(qids)), key=lambda i: qids[i].encode("utf-8")), dtype=np.int64)
    measures = parts[0].measures

    def joined(get: Callable[[HoleScores], np.ndarray]) -> np.ndarray:
        return np.concatenate([get(part) for part in parts])[order]

    def figures(which: str) -> dict[Measure, np.ndarray]:
        return {
            name: np.concatenate([getattr(part, which)[name] for part in parts])[order] for name in measures
        }

    holes = {qid: hole for part in parts for qid, hole in part.holes.items()}
    in_sample = {qid for part in parts for qid in part.sampled}
    merged_qids = [qids[i] for i in order.tolist()]
    return HoleScores(
        k=parts[0].k,
        measures=measures,
        qids=merged_qids,
        holes={qid: holes[qid] for qid in merged_qids},
        sampled=[qid for qid in merged_qids if qid in in_sample],
        pool=figures("pool"),
        filled=figures("filled"),
        people=figures("people"),
        rel=joined(lambda part: part.rel),
        filled_count=joined(lambda part: part.filled_count),
        filled_relevant=joined(lambda part: part.filled_relevant),
        ungraded=joined(lambda part: part.ungraded),
    )


def correct_scores(scores: HoleScores, alpha: float = 0.05) -> None:
    """The corrected figure of every measure (``scores.corrected``), when a sample was drawn:
    :func:`corrected_mean` over the queries where people's grades define the measure."""
    if not scores.sampled:
        return
    qids, holes, k = scores.qids, scores.holes, scores.k
    rows = {qid: i for i, qid in enumerate(qids)}
    in_sample = np.zeros(len(qids), dtype=bool)
    in_sample[[rows[q] for q in scores.sampled]] = True
    for name in scores.measures:
        domain = ~np.isnan(scores.pool[name])  # defined by people's grades: filled only adds
        pick = domain & in_sample
        undefined = pick & np.isnan(scores.people[name])
        if undefined.any():  # cannot happen: people's labels only add to the pool's
            raise HolesError(f"{name} undefined with people's grades on a sampled query")
        bounds = (0.0, 1.0)
        if name.startswith("P@"):  # holes only add relevant chunks: between none and all of them
            shares = np.array([len(holes[q].holes) / k for q in qids])
            low = float(scores.pool[name][domain].mean())
            bounds = (low, min(1.0, low + float(shares[domain].mean())))
        elif name.startswith("R@"):  # a relevant hole adds to hits and |Rel| alike: h/R only rises
            bounds = (float(scores.pool[name][domain].mean()), 1.0)
        scores.corrected[name] = corrected_mean(
            scores.people[name][pick],
            scores.filled[name][pick],
            scores.filled[name][domain],
            anchor_sampled=scores.pool[name][pick],
            anchor_all=scores.pool[name][domain],
            alpha=alpha,
            bounds=bounds,
        )


def _aligned(evaluation: Evaluation, name: Measure, rows: Mapping[str, int]) -> np.ndarray:
    out = np.full(len(rows), np.nan)
    at = [rows[qid] for qid in evaluation.qids]
    out[at] = evaluation.values[name]
    return out


def _aligned_rel(evaluation: Evaluation, rows: Mapping[str, int]) -> np.ndarray:
    out = np.zeros(len(rows), dtype=np.int64)
    at = [rows[qid] for qid in evaluation.qids]
    out[at] = evaluation.num_rel
    return out
