"""The shapes the faces read: typed results of every command of ``python -m calibration``.

They are ``TypedDict``s: plain dicts at run time (the JSON every CLI prints is exactly these),
with names and types a reader and a type checker can follow instead of string keys. ``None``
is an undefined value (principle 2), never 0. In order: the audit, the check and its history,
agreement, position bias, PPI, the weekly review.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, NotRequired, TypedDict, final, get_args

if TYPE_CHECKING:  # a measure is a str at run time: no import of the engine for its name
    from calibration.metrics import Measure


class AuditQuery(TypedDict):  # one query of the audit at cutoff k
    rel: int  # |Rel|: judged relevant documents
    retrieved: int
    recall: float | None  # distinct relevant in the top k / |Rel|
    recall_ceiling: float | None  # min(1, k / |Rel|)
    share_of_ceiling: float | None
    precision: float  # distinct relevant in the top k / k
    precision_ceiling: float  # min(1, |Rel| / k)
    recall_capped: float | None  # what min(|Rel|, k) would report (only to measure the inflation)
    label_coverage: float | None  # judged documents / corpus size
    judged_outside_corpus: int | None
    judged_at_k: float | None
    duplicates: list[str]
    # texts known (audit --corpus FILE): [later id, first id] of the same text in the top k
    same_text: NotRequired[list[list[str]]]
    positional_hits: int
    distinct_hits: int
    recall_at_fetch: float | None  # stage 1
    fetch_hits: int | None  # distinct relevant documents stage 1 found
    stage1_circular: bool  # every judged document lies in stage 1: its recall there is 1 by construction
    lost_after_fetch: float | None
    recall_true: float | None  # against a fuller truth set
    findings: list[str]
    # audit --estimate, where the judged recall lies outside the estimate's interval
    recall_estimated: NotRequired[EstimatedRecall]


class EstimatedRecall(TypedDict):  # calibration.estimate.audit.estimate_run
    estimate: float | None
    ci: list[float] | None
    rel: float | None


class EstimateQuery(TypedDict):  # one query of calibration.estimate.audit.estimate_run
    recall_judged: float | None
    rel_judged: int | None
    recall_estimated: float | None
    recall_ci: list[float] | None
    rel_estimated: float | None
    rel_ci: list[float] | None
    n_sampled: int | None
    n_sampled_relevant: int | None
    labels_incomplete_estimated: bool
    unjudged_in_top_k: int
    n_drawn: int
    reason: str | None


class EstimateReport(TypedDict):  # audit --estimate (calibration.actions.estimate)
    design: dict[str, Any] | None  # golden.yaml's sampling section, as read
    k: int
    interval: str  # midp, wilson, ...
    queries: dict[str, EstimateQuery]
    note: NotRequired[str]  # what the estimate cannot place, or k past the pool's depth
    summary: dict[str, Any]  # judged and estimated recall@k over the queries where both are defined


class AuditSummary(TypedDict):
    n_queries: int
    mean_recall: float | None
    mean_recall_capped: float | None
    undefined: int  # queries left out of the mean
    missing_from_run: int
    not_in_qrels: int
    findings: dict[str, int]


class GateResult(TypedDict, total=False):
    rule: str
    passed: bool
    queries: list[str]
    bar: str  # stage1-recall: the comparison it was held to (the policy's strictness)


# calibration.audit.audit_run (python -m calibration audit --format json)
class AuditReport(TypedDict):
    k: int
    min_grade: int
    fetch_depth: int | None
    corpus_size: int | None
    queries: dict[str, AuditQuery]
    missing_from_run: list[str]
    missing_relevant: NotRequired[list[str]]  # of those, the ones with |Rel| > 0 (audit_run)
    summary: AuditSummary
    gates: list[GateResult]
    passed: bool
    stage1: NotRequired[str]  # how stage 1 was taken, in words (calibration.actions.audit)
    duplicates_by: NotRequired[str]  # "id and text" (the texts known) or "id"
    # golden.yaml's provenance says every label was pooled from this run's top D: the sentence that
    # says so (calibration.provenance.pooled_from_this_run); absent when it says nothing of this run
    provenance: NotRequired[str]


# the figures of one query of a check: the seven the essay names and what they rest on
class CheckFigures(TypedDict):
    fetch_recall: float | None  # stage-1 recall
    keep_recall: float | None  # recall@k
    rr: float | None
    ndcg: float | None
    rel: int
    k: int
    label_coverage: float | None
    recall_ceiling: float | None
    share_of_ceiling: float | None
    judged_at_k: float | None
    recall_at_20: float | None
    duplicates: list[str]
    same_text: NotRequired[list[list[str]]]  # the texts known: ids of the same text in the top k
    positional_hits: int
    distinct_hits: int
    fetch_hits: int | None
    stage1_circular: bool  # every judged document in stage 1 (stage1_recall leaves the query out)
    retrieved: NotRequired[int]  # positions the ranking fills, repeats included (run_short: < k)
    r20_circular: NotRequired[bool]  # every judged chunk in the top 20: recall_at_20 leaves it out
    # ranking figures below the diagnosis bars with unjudged chunks in the top k (#40 item 10):
    unjudged_top: NotRequired[list[str]]  # those chunks, in rank order
    rr_best: NotRequired[float | None]  # RR were they relevant
    ndcg_best: NotRequired[float | None]  # an upper bound of nDCG@k were they relevant
    filled_at_k: NotRequired[float]  # check --judge-labels: the share of the top k the judge filled


class CheckQuery(CheckFigures):  # one query of calibration.policy.check.check_report
    scored_zero: NotRequired[bool]  # not in the run: scored as retrieving nothing (--missing zero)
    findings: list[str]  # the audit's findings, then the diagnosis codes


class FigureMean(TypedDict):
    mean: float | None  # over the queries that define the figure
    undefined: int  # the queries left out of it


class RelMean(TypedDict):
    mean: float | None
    total: int


class CheckSummary(TypedDict):
    n_queries: int
    fetch_recall: FigureMean
    keep_recall: FigureMean
    share_of_ceiling: FigureMean
    rr: FigureMean
    ndcg: FigureMean
    label_coverage: FigureMean
    judged_at_k: FigureMean
    recall_at_20: FigureMean
    rel: RelMean
    findings: dict[str, int]  # each code with how many queries carry it
    notes: list[str]


class DiagnosisBars(TypedDict):
    ndcg: float
    rr: float


class PolicyJSON(TypedDict):  # a policy as a report names it (calibration.policy.rules.Policy.to_json)
    source: str
    corpus: str  # narrow or broad
    kappa_statistic: str
    undecided: str  # fail or warn: a judge figure not shown (undecided, uncalibrated, stale)
    not_evaluated: str  # fail or warn: a rule that applies with no evidence to evaluate it on
    min_queries: int  # queries a judge verdict needs (fewer: uncalibrated)
    stale_after_weeks: int  # a verdict on labels older than this is stale
    rules: dict[str, str | None]  # each rule's bar as printed (None: off)
    diagnosis: DiagnosisBars


# one judge (or the people) held to a judge rule: calibration.policy.check's kappa_entry (the judge's
# kappa against the people's consensus) or faithfulness_entry (a pass rate, and how it was found)
class JudgeOutcome(TypedDict):
    judge: str  # as the report names it (calibration.policy.check.judge_name), or "people"
    ci: list[float] | None
    n: int
    verdict: str
    more_labels: NotRequired[int | None]  # undecided: about how many more human-labelled items decide it
    outcome: str  # passed, failed, warning
    reason: str | None
    rate: NotRequired[float | None]
    how: NotRequired[str]
    name: NotRequired[str | None]
    version: NotRequired[int | None]
    fingerprint: NotRequired[str]
    rubric: NotRequired[str]
    kappa: NotRequired[float | None]
    weights: NotRequired[str | None]
    statistic: NotRequired[str | None]
    evidence: NotRequired[str]  # what the figure read: labels, queries of the golden set, people, weeks (#40)


class RuleHead(TypedDict):  # what every rule of a check report starts with
    rule: str
    bar: str  # as printed: "> 0.95", ">= k (5)", "off"
    scope: str  # query or judge
    source: str  # the sentence it comes from


class RuleResult(RuleHead):  # one rule of the policy held to a run (calibration.policy.check)
    passed: bool | None  # False: failed, or not evaluated (not_evaluated: fail); None: never passed
    queries: list[str]  # the queries that failed it
    status: str  # passed, failed, warning, not evaluated, not applicable, off
    reason: NotRequired[str]  # why it was not evaluated, not applicable or off
    evaluated: NotRequired[int]  # queries that define the figure
    undefined: NotRequired[int]  # queries that do not
    circular: NotRequired[int]  # stage1_recall: queries left out, every judged chunk in stage 1
    scored_zero: NotRequired[list[str]]  # all_queries under --missing zero
    superseded: NotRequired[list[SupersededOutcome]]  # judge rules: earlier versions, listed, not gated
    judges: NotRequired[list[JudgeOutcome]]  # judge rules
    note: NotRequired[str]  # no_duplicates: by id only, or by id and text


# calibration.policy.check.check_report (python -m calibration check --format json)
class CheckReport(TypedDict):
    k: int
    min_grade: int
    fetch_depth: int | None
    stage1: str | None
    corpus_size: int | None
    store: str | None  # the store the judge rules read, as printed (no credentials)
    duplicates_by: NotRequired[str]  # "id and text" (check --corpus FILE with texts) or "id"
    policy: PolicyJSON
    queries: dict[str, CheckQuery]
    missing_from_run: list[str]
    missing_relevant: list[str]
    missing: str  # drop or zero
    summary: CheckSummary
    rules: list[RuleResult]
    warnings: list[str]  # the rules that only warned
    passed: bool
    recorded: NotRequired[int]  # its id in the store (check --record)
    holes: NotRequired[FilledReport]  # check --judge-labels: the holes filled, corrected by a sample
    provenance: NotRequired[str]  # golden.yaml's provenance pooled every label from this run (the audit's)


class CheckRow(TypedDict):  # a recorded check as the store lists it (annotation.store.history)
    id: int
    name: str
    k: int
    golden_hash: str
    golden_labels: int
    run_hash: str
    passed: bool
    created_at: str


# one recorded check in calibration.gate.history_data (python -m calibration history --format json)
@final
class HistoryEntry(CheckRow):
    labels_changed: bool  # its label hash differs from the previous report of the same name
    settings_changed: list[str]  # "k 5 -> 10": measured under other settings than that report
    queries_changed: bool  # so does the query set the run held
    queries_hash: str
    queries_held: int
    n_queries: int
    missing_from_run: int
    means: dict[str, float | None]  # calibration.gate.HISTORY_FIGURES
    failed: list[str]  # the rules it failed
    bars: dict[str, str | None]  # the policy's bars it was held to


# a recorded check whose report cannot be read (not JSON, not a check report): named, skipped
@final
class UnreadableCheck(TypedDict):
    id: int
    name: str
    unreadable: str  # why


HistoryRow = HistoryEntry | UnreadableCheck


class FigureChange(TypedDict):
    first: float | None
    second: float | None
    delta: float | None  # second - first


class QueryChange(TypedDict):  # one query held by both checks of a diff
    fetch_recall: FigureChange
    keep_recall: FigureChange
    rr: FigureChange
    ndcg: FigureChange
    rel: FigureChange
    label_coverage: FigureChange
    findings_gained: list[str]
    findings_lost: list[str]


# two recorded checks per query (calibration.gate.diff_checks, python -m calibration history --diff)
class CheckDiff(TypedDict):
    first: CheckRow
    second: CheckRow
    settings_changed: list[str]  # "k 5 -> 10": the changes below follow the settings, not the system
    labels_changed: bool
    dropped: list[str]  # queries the first held and the second did not
    added: list[str]
    queries: dict[str, QueryChange]


class AgreementPair(TypedDict, total=False):  # one pair of raters in an AgreementReport
    raters: list[Any]  # the two raters as the ratings name them
    n: int
    observed_agreement: float | None
    kappa: float | None  # unweighted Cohen's kappa: the verdict's statistic
    kappa_linear: float | None
    kappa_quadratic: float | None
    kappa_ci: list[float] | None  # the score interval of the unweighted kappa (stats.kappa_interval)
    kappa_linear_ci: list[float] | None
    kappa_quadratic_ci: list[float] | None
    verdict: str  # trusted, undecided, not trusted, undefined (calibration.stats.verdict)
    statistic: str  # the kappa the verdict read: unweighted (default), linear or quadratic
    more_labels: int | None  # undecided: about how many more items would decide it
    advice: str
    undefined_reason: str | None
    confusion: list[list[int]]
    weighted_undefined_reason: str
    sequential: KappaSequence  # agree --sequential: the sequence read after every label; verdict is its
    # calibration.stats.judged.judged_kappa's, of the verdict's statistic (issue #39):
    reason: str | None  # why there is no verdict (uncalibrated, undefined), or what the verdict assumes
    method: str  # the interval kappa_ci is: fixed-n score interval, ", by query" when clustered
    item_level_ci: list[float] | None  # the item-level score interval, for comparison
    design: dict[str, Any]  # queries (None: none carried), items, people (None: unknown), design_effect, ...
    per_query: dict[str, Any] | None  # the median per-query kappa and range (None: no query carried)
    population: str  # what the interval speaks for: "queries drawn like these 8"
    read: str  # "once": a file's labels are read once (--sequential: see sequential)


class IntervalMethod(TypedDict):
    method: str
    alpha: float


class Thresholds(TypedDict):
    trusted: float  # the bar a kappa's interval is read against


# calibration.stats.agreement.agreement_report (python -m calibration agree --format json)
class AgreementReport(TypedDict):
    n_items: int
    raters: list[Any]  # as the ratings name them
    pairs: list[AgreementPair]
    pairs_possible: int
    pairs_note: str | None  # the pairs listed were cut short (None: every pair is listed)
    fleiss_kappa: float | None
    krippendorff_alpha: dict[str, float | None]  # nominal, ordinal, interval
    labels: list[Any]  # the scale, as read (numbers, or text)
    n_ratings: int
    n_missing: int
    fleiss_undefined_reason: str | None
    fleiss_ratings_per_item: int | None  # Fleiss' m (every item has it); None when items differ
    krippendorff_undefined_reason: dict[str, str | None]
    krippendorff_items: int  # the items alpha reads: those with two ratings or more (pairable)
    interval: IntervalMethod
    verdict_thresholds: Thresholds
    statistic: str


# calibration.stats.position.position_bias (python -m calibration position)
class PositionReport(TypedDict):
    n_pairs: int
    position_consistency: float | None
    primacy_rate: float | None
    recency_rate: float | None
    preference_fairness: float | None
    repetition_stability: float | None  # None without repeats
    mean_preference_A: float | None
    n_comparisons: int
    n_consistent: int
    n_primacy: int
    n_recency: int
    n_primacy_preferred: int
    n_recency_preferred: int
    incomplete_pairs: int
    unmatched_answers: int
    n_failed: int
    n_answers: int
    n_repeated_instances: int
    single_trial_instances: int
    undefined: dict[str, str]  # each figure that is None, with the reason


# calibration.stats.position.summarize_pairs: a pairwise judge's swap-and-average
class PairResult(TypedDict):
    """One answer pair of :class:`PairSummary`."""

    item_id: int
    preference_a: float | None  # swap-averaged; None: no repeat has both orders
    consistent: bool | None  # the two orders agree in every such repeat
    answers: int


class PairSummary(TypedDict):
    """A pairwise judge's swap-and-average (:func:`~calibration.stats.position.summarize_pairs`)."""

    pairs: list[PairResult]
    n_pairs: int  # pairs asked in both orders
    incomplete_pairs: int  # pairs with one order only, left out
    mean_preference_a: float | None
    consistent: int  # (pair, repeat) comparisons whose orders agree
    compared: int
    consistency: float | None  # consistent / compared


class HumanOnly(TypedDict):  # the people's mean alone
    estimate: float
    ci: list[float]
    n: NotRequired[int]  # pass/fail labels: the people's pass rate with its counts and interval in words
    passes: NotRequired[int]
    how: NotRequired[str]


# calibration.stats.ppi.rogan_gladen_from_labels: the judge's pass rate corrected by its tpr and tnr
class RoganGladen(TypedDict):
    estimate: float | None
    ci: list[float] | None
    unclipped: float | None
    tpr: float | None
    tnr: float | None
    judge_pass_rate: float
    tp: int
    fn: int
    fp: int
    tn: int
    n_labeled: int
    n_unlabeled: int
    n_boot: int
    n_boot_undefined: int | None
    alpha: float
    reason: str | None


# the design behind a PPI interval (calibration.stats.ppi._design_dict): labels in queries (#39, item 1)
class PPIDesign(TypedDict):
    queries: int | None  # labelled queries; None when no query was given
    items: int
    items_per_query: list[float] | None  # min, median, max
    unlabeled_queries: int | None
    unlabeled_items: int
    shared_queries: int  # queries holding labelled and unlabelled items
    clustered: bool  # a query holds two items: variances by query, t(df)
    design_effect: float | None  # the PPI variance by query over the item-level one
    human_design_effect: float | None
    df: int | None  # None: the normal critical value
    critical: str  # "normal" or "t(9)"


# calibration.stats.ppi.ppi_report (python -m calibration ppi --format json)
class PPIReport(TypedDict):
    estimate: float
    ci: list[float]
    lam: float
    n_labeled: int
    n_unlabeled: int
    human_only: HumanOnly
    design: NotRequired[PPIDesign]
    correlation: NotRequired[float | None]  # people vs judge on the labelled items (#39, item 7)
    weak_threshold: NotRequired[float | None]  # 1/sqrt(n - 2), Mani et al. 2025
    weak_note: NotRequired[str | None]  # why PPI cannot narrow the interval here; None: it can
    prefer: NotRequired[str | None]  # "ppi" or "people"
    rogan_gladen: NotRequired[RoganGladen]  # every value 0 or 1 (calibration.actions.ppi)
    ci_uncut: NotRequired[list[float]]  # every value 0 or 1: PPI's normal interval before its cut to [0, 1]
    few_labels: NotRequired[str]  # fewer labelled items than a judge verdict needs (MIN_LABELS)


class KappaFigure(TypedDict):
    kappa: float | None
    ci: list[float] | None


class KappaEntry(KappaFigure, total=False):  # a kappa with what it rests on, as the review reports it
    n: int
    weights: str | None
    statistic: str  # the kappa the verdict reads: unweighted (default), linear or quadratic
    bar: float
    kappas: dict[str, KappaFigure]  # every statistic
    observed_agreement: float | None
    labels: list[Any]
    confusion: list[list[int]]
    undefined_reason: str | None
    # how the labels were drawn (issue #39: calibration.stats.judged.judged_kappa)
    item_level_ci: list[float] | None  # the item-level fixed-n score interval, beside the verdict's
    method: str  # the interval's: fixed-n or the confidence sequence, by query or not
    design: dict[str, Any]  # queries, items, people, design effect, ... (queries None: not carried)
    per_query: dict[str, Any] | None  # the median per-query kappa and its range
    population: str  # whom the interval speaks for: "queries drawn like these 12"
    drawn: dict[str, Any] | None  # {"random": bool, "how": str}; None: not known
    read: str  # "once" or "while labelling (N earlier looks)"
    weeks: list[str] | None  # the ISO weeks of its oldest and newest label
    verdict: str
    reason: str | None
    more_labels: int | None
    advice: str


class HumanOnlyMean(TypedDict):  # the people's mean alone; no interval over labels not drawn at random
    estimate: float
    ci: NotRequired[list[float]]
    se: NotRequired[float]
    n: int
    how: NotRequired[str]  # the interval in words (calibration.stats.pass_rate.people_pass_rate)


# a faithfulness judge's pass rate corrected by PPI (calibration.stats.ppi.ppi_mean, with the judge's
# own rate and the population beside), or why it was not corrected
class PassRate(TypedDict):
    estimate: NotRequired[float]
    ci: NotRequired[list[float]]
    se: NotRequired[float]
    lam: NotRequired[float]
    lam_tuned: NotRequired[bool]
    lam_note: NotRequired[str | None]
    n_labeled: NotRequired[int]
    n_unlabeled: NotRequired[int]
    alpha: NotRequired[float]
    human_only: NotRequired[HumanOnlyMean]
    undefined_reason: NotRequired[str]  # too few items, or labels not drawn at random: not corrected
    judge_only: NotRequired[float]
    design: NotRequired[PPIDesign]  # calibration.stats.ppi.ppi_mean / ppi_or_reason (#39)
    correlation: NotRequired[float | None]
    weak_threshold: NotRequired[float | None]
    weak_note: NotRequired[str | None]
    prefer: NotRequired[str | None]
    drawn_at_random: NotRequired[bool | None]  # calibration.stats.ppi.ppi_or_reason
    how: NotRequired[str]
    scope: str


# the model an endpoint served changed under one fingerprint ("from" is a keyword: the functional form)
ServedModelChange = TypedDict(
    "ServedModelChange",
    {"from": str, "to": str, "last_before": str, "first_after": str, "since_label": int},
)


# one judge and rubric in the weekly review (calibration.review.review)
class ReviewJudge(TypedDict):
    fingerprint: str
    name: str | None  # the judge's name (one name, many fingerprints: its versions)
    version: int
    current: bool  # the newest version of its name
    changed: list[str]  # settings that differ from the version before ([] for version 1)
    served_model: str | None  # what the endpoint says it serves now (None: not said)
    served_model_changed: list[ServedModelChange]
    left_out_served_before: int  # items answered only before the served model changed
    kind: str
    rubric: str
    model: str | None
    endpoint: str | None
    scope: str
    left_out_fitted_on: int
    out_of_fold: int
    consensus: KappaEntry  # against the people's consensus
    annotators: dict[str, KappaEntry]
    ceiling: KappaEntry | None  # human-human, on doubly labelled items (None: check's reading)
    verdict: str  # trusted, undecided, not trusted, uncalibrated, undefined
    status_reason: str | None
    more_labels: int | None  # undecided: about how many more human-labelled items would decide it
    advice: str  # what to do about the verdict
    position: PositionReport | None  # pairwise judges
    pass_rate: PassRate | None  # faithfulness judges


class SupersededJudge(TypedDict):  # an earlier version of a judge's name: listed, not reviewed
    name: str | None
    version: int
    fingerprint: str
    rubric: str


class SupersededOutcome(SupersededJudge):  # under a check's judge rule: listed, not gated
    judge: str
    reason: str


# a saved review of one judge and week (Store.calibration_trend), as the trend shows it
class TrendPoint(TypedDict):
    fingerprint: str
    name: str | None
    version: int | None
    rubric: str
    week: str
    n: int
    kappa: float | None
    ci: list[float] | None
    verdict: str
    rule: str | None
    statistic: str | None
    served_model: str | None
    old_rule: bool  # saved before m010 (a point estimate on quadratic weights)
    # calibration.review.trend: the first point of its judge name, or its version or served model changed
    new_version: NotRequired[bool]


# calibration.review.review (python -m calibration review --format json)
class ReviewReport(TypedDict):
    week: str
    min_labels: int
    min_queries: int  # queries a verdict needs (issue #39)
    interval: str  # how kappa's interval is computed
    rule: str  # how verdicts are reached
    statistic: str
    bar: float
    thresholds: Thresholds
    judges: list[ReviewJudge]
    superseded: list[SupersededJudge]
    out_of_scope: list[SupersededJudge]  # judges that graded nothing of the scope's queries (check)
    trend: list[TrendPoint]


class ReviewSample(TypedDict):  # this week's sample, drawn (calibration.review.draw_sample)
    week: str
    sampled: int
    of: int
    strata: dict[str, int]
    annotators: list[str]
    doubly_assigned: int
    stratified_by: str | None  # the judge fingerprint whose grades the strata are by
    chunks_sampled: int  # chunks the current relevance judge graded, drawn too (issue #40)
    chunks_of: int
    chunk_strata: dict[str, int]
    chunks_stratified_by: str | None  # the relevance judge


class SampleProgress(TypedDict):  # how far people are with this week's sample
    week: str
    size: int
    labelled: int  # by one person or more, after the sample was drawn
    doubly: int  # by two or more
    traces: int  # of size: traces
    chunks: int  # of size: chunks


# ---------------------------------------------------------------- holes (calibration.holes.scoring)


class HoleRow(TypedDict):  # one query of ``python -m calibration holes``
    holes: list[str]  # the unjudged chunks of its top k, in rank order (several runs: their union)
    judged: list[int]  # per run, distinct judged chunks of its top k
    filled: list[int]  # per run, positions of its top k the ranking fills: min(k, retrieved)
    share: list[float]  # per run, its holes / k


class HoleSampleInfo(TypedDict):
    seed: int
    n: int  # sampled queries
    population: int  # the queries the run and the judgments share
    queries: list[str]
    holes: int  # holes of the sampled queries' top k: what people label
    file: str | None  # where the design was written (golden.yaml's sampling section)
    graded_by: list[str]  # who graded its holes (the file's judged_by, or the store's labellers); [] unknown


class HolesReport(TypedDict):
    k: int
    runs: list[str]
    judgments: str
    queries: dict[str, HoleRow]
    n_queries: int  # the queries the judgments and every run share
    positions: int  # k per query and run
    holes: int  # distinct chunks to grade (several runs: a chunk in two runs' top k counts once)
    unjudged_positions: int  # positions holding a hole, over every run
    judged_positions: int  # positions holding a judged chunk (its first slot), over every run
    filled_positions: int  # positions the rankings fill (min(k, retrieved) per query and run)
    repeated_positions: int  # of those, positions holding an id seen higher up (neither judged nor a hole)
    judged_at_k: float | None  # judged positions / filled positions, as the audit's judged@k
    not_shared: int  # run queries not in the judgments or not in every run (not listed)
    sample: HoleSampleInfo | None


class JudgeAgreement(TypedDict):  # the judge against people on the chunks both graded
    n: int
    kappa: float | None
    kappa_ci: list[float] | None  # the verdict's interval (by query: calibration.stats.judged.judged_kappa)
    verdict: str
    advice: str
    reason: str | None  # why there is no verdict, or what the verdict assumes
    method: str
    item_level_ci: list[float] | None
    design: dict[str, Any]  # queries, items, design effect, ... (empty when undefined)
    per_query: dict[str, Any] | None
    population: str
    read: str


class CorrectedFigure(TypedDict):
    estimate: float | None
    ci: list[float] | None
    lam: float | None
    n: int  # sampled queries where the measure is defined
    population: int
    changed: int  # sampled queries whose figure people's hole labels changed
    human_only: float | None
    human_only_ci: list[float] | None
    without_judge: float | None  # the pool's figure corrected by the sample alone (lambda 0)
    without_judge_ci: list[float] | None
    note: str | None


class FilledMean(TypedDict):
    measure: str
    holes_as_not_relevant: float | None
    holes_as_not_relevant_n: int  # queries where it is defined
    judge_filled: float | None
    judge_filled_n: int
    corrected: CorrectedFigure | None


class FilledQuery(TypedDict):
    holes: int
    filled: int  # holes the judge graded
    filled_relevant: int
    ungraded: int  # holes the judge did not grade: not relevant
    rel: int  # |Rel| from people's grades
    sampled: bool
    values: dict[str, list[float | None]]  # measure -> [holes as not relevant, judge-filled, people]


class FilledReport(TypedDict):  # ``metrics --judge-labels`` at one cutoff
    k: int
    run: str
    judgments: str
    judge: str
    holes: int
    filled: int
    filled_relevant: int
    ungraded: int
    agreement: JudgeAgreement | None
    means: list[FilledMean]
    queries: dict[str, FilledQuery]
    sample: HoleSampleInfo | None


class FilledDelta(TypedDict):  # one measure of ``compare --judge-labels``: B - A
    measure: str
    holes_as_not_relevant: float | None
    judge_filled: float | None
    n: int  # queries where both runs define it
    corrected: CorrectedFigure | None


class UnjudgedShare(TypedDict):  # compare: the part of one measure's B - A on chunks nobody judged
    depth: int | None  # the top d it reads: k, or None for the whole ranking (RR, AP)
    chunks_a: int  # unjudged chunks in A's top d, summed over the queries that define the measure
    chunks_b: int
    queries: int  # of those queries, the ones with an unjudged chunk in either top d
    interval: list[float] | None  # mean B - A with them relevant or not: [least, greatest]
    holds_zero: bool  # the unjudged chunks can undo the difference
    sign_could_flip: bool  # the interval holds differences of both signs
    exact: bool  # the exact range (P@k, R@k, Success@k); else the range of the 8 group fillings


class FilledComparison(TypedDict):
    k: int
    runs: list[str]  # A, B
    judgments: str
    judge: str
    holes: list[int]  # per run: holes in its top k
    filled: list[int]  # per run: holes the judge graded
    agreement: JudgeAgreement | None
    deltas: list[FilledDelta]
    sample: HoleSampleInfo | None


# kappa read after every label (calibration/stats/kappa_sequence.py, agree --sequential, #39)
class Look(TypedDict):
    n: int  # labels read so far (items rated by both, in labelling order)
    kappa: float | None
    low: float | None  # the sequence at n (None when kappa is undefined so far)
    high: float | None
    verdict: str  # trusted, not trusted, undecided (undefined while kappa is)


class KappaSequence(TypedDict):
    method: str
    alpha: float
    start: int  # the first look
    horizon: int
    bar: float
    looks: list[Look]  # every label from start on
    decided_at: int | None  # the first n whose look decided
    verdict: str  # the verdict then, else the last look's (undecided, undefined), "undecided" with no look
    more_labels: int | None  # undecided: about how many more labels would decide it
    kappa_ci: NotRequired[str]  # agree --sequential: which interval the pair's kappa_ci is


@dataclass
class Comparison:
    """Two runs on the same judgments: per measure the paired test, per query B - A."""

    min_grade: int
    ks: list[int]
    permutations: int
    seed: int
    measures: dict[Measure, dict[str, Any]] = field(default_factory=dict)
    queries: dict[str, dict[str, float | None]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)  # e.g. too few queries to compare systems


# the headline figures of a position report, in the order they are printed (the rest: its counts)
PositionFigure = Literal[
    "n_pairs",
    "position_consistency",
    "primacy_rate",
    "recency_rate",
    "preference_fairness",
    "repetition_stability",
    "mean_preference_A",
]
POSITION_KEYS: tuple[PositionFigure, ...] = get_args(PositionFigure)
