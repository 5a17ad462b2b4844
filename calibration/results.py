"""The shapes the faces read: typed results of the audit, an agreement pair and the review.

They are ``TypedDict``s: plain dicts at run time (the JSON every CLI prints is exactly these),
with names and types a reader and a type checker can follow instead of string keys. ``None``
is an undefined value (principle 2), never 0.
"""

from __future__ import annotations

from typing import Any, NotRequired, TypedDict


class AuditQuery(TypedDict):
    """One query of the audit at cutoff k."""

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
    positional_hits: int
    distinct_hits: int
    recall_at_fetch: float | None  # stage 1
    fetch_hits: int | None  # distinct relevant documents stage 1 found
    lost_after_fetch: float | None
    recall_true: float | None  # against a fuller truth set
    findings: list[str]


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


class AuditReport(TypedDict):
    """``calibration.audit.audit_run`` (``python -m calibration audit --format json``)."""

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
    stage1: NotRequired[str]  # how stage 1 was taken, in words (calibration.workflows.audit_data)


class AgreementPair(TypedDict, total=False):
    """One pair of raters in ``calibration.stats.agreement.agreement_report``."""

    raters: list[Any]
    n: int
    observed_agreement: float | None
    kappa: float | None  # unweighted Cohen's kappa: the verdict's statistic
    kappa_linear: float | None
    kappa_quadratic: float | None
    kappa_ci: (
        list[float] | None
    )  # the score interval of the unweighted kappa (calibration.stats.kappa_interval)
    kappa_linear_ci: list[float] | None
    kappa_quadratic_ci: list[float] | None
    verdict: str  # trusted, undecided, not trusted, undefined (calibration.stats.verdict)
    statistic: str  # the kappa the verdict read: unweighted (default), linear or quadratic
    more_labels: int | None  # undecided: about how many more items would decide it
    advice: str
    undefined_reason: str | None
    confusion: list[list[int]]
    weighted_undefined_reason: str


class KappaEntry(TypedDict, total=False):
    """A kappa with what it rests on, as the review reports it."""

    kappa: float | None
    ci: list[float] | None
    n: int
    weights: str | None
    statistic: str  # the kappa the verdict reads: unweighted (default), linear or quadratic
    bar: float
    kappas: dict[str, dict[str, Any]]  # every statistic: {"kappa", "ci"}
    observed_agreement: float | None
    labels: list[Any]
    confusion: list[list[int]]
    undefined_reason: str | None


class ReviewJudge(TypedDict, total=False):
    """One judge and rubric in the weekly review (``calibration.review.review``)."""

    fingerprint: str
    name: str  # the judge's name (one name, many fingerprints: its versions)
    version: int
    current: bool  # the newest version of its name
    changed: list[str]  # settings that differ from the version before ([] for version 1)
    served_model: str | None  # what the endpoint says it serves now (None: not said)
    served_model_changed: list[dict[str, Any]]  # {"from", "to", "last_before", "first_after", "since_label"}
    left_out_served_before: int  # items answered only before the served model changed
    kind: str
    model: str
    endpoint: str
    rubric: str
    scope: str
    verdict: str  # trusted, undecided, not trusted, uncalibrated, undefined
    status_reason: str | None
    more_labels: int | None  # undecided: about how many more human-labelled items would decide it
    advice: str  # what to do about the verdict
    consensus: KappaEntry  # against the people's consensus
    ceiling: KappaEntry  # human-human, on doubly labelled items
    annotators: dict[str, KappaEntry]
    position: dict[str, Any] | None
    pass_rate: dict[str, Any] | None
    out_of_fold: int
    left_out_fitted_on: int
