"""The audit: what a recall, a precision and a ranking are fractions of.

Per query at cutoff k (relevant = grade >= ``min_grade``; |Rel| = judged
relevant documents of the query; a repeated document counts once, at its
first rank):

- ``recall``            = distinct relevant in the top k / |Rel|   (None if |Rel| = 0)
- ``recall_ceiling``    = min(1, k / |Rel|): the best recall any ranking can reach
- ``share_of_ceiling``  = recall / recall_ceiling
- ``precision``         = distinct relevant in the top k / k
- ``precision_ceiling`` = min(1, |Rel| / k)
- ``recall_capped``     = relevant in the top k / min(|Rel|, k): the *wrong*
                          denominator some tools use, shown only to measure the
                          inflation it causes
- ``label_coverage``    = judged documents of the query / corpus size
- ``judged_at_k``       = share of the top k (or of all retrieved, when fewer)
                          that has any judgment
- ``positional_hits``   = relevant positions among the first k lines, repeats
                          counted each time (what a naive count reports);
                          ``distinct_hits`` counts each document once
- ``recall_at_fetch``   = recall of stage 1 (the same run at ``fetch_depth``,
                          or a separate fetch run); ``lost_after_fetch`` =
                          recall_at_fetch - recall, what the cut to k lost
- ``recall_true``       = recall against a fuller "truth" label set

Findings (codes): ``recall_undefined``, ``duplicate_ids``,
``positional_mismatch``, ``rel_above_k``, ``rel_below_k``,
``low_judged_at_k``, ``stage1_recall_low``, ``labels_incomplete``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import Any

from calibration.metrics import dedupe_ranking

__all__ = [
    "InvalidAudit",
    "InvalidGate",
    "Gate",
    "parse_gate",
    "audit_query",
    "audit",
    "finding_text",
    "FINDINGS",
]

FINDINGS = (
    "recall_undefined",
    "duplicate_ids",
    "positional_mismatch",
    "rel_above_k",
    "rel_below_k",
    "low_judged_at_k",
    "stage1_recall_low",
    "labels_incomplete",
)

DEFAULT_MIN_JUDGED = 0.25
DEFAULT_STAGE1_MIN = 0.95


class InvalidAudit(ValueError):
    """Audit inputs that cannot give honest figures (a fetch depth below k,
    a corpus smaller than what was judged, ...)."""


class InvalidGate(InvalidAudit):
    """A ``--fail-on`` rule that does not parse, or needs data that was not given."""


@dataclass(frozen=True)
class Gate:
    """A build gate: ``rule`` as written, ``name`` and an optional threshold."""

    rule: str
    name: str
    threshold: float | None = None


_GATE_RE = re.compile(r"^(judged-at-k|stage1-recall|label-coverage)<(.+)$")
_PLAIN_GATES = ("duplicates", "undefined-recall", "rel-above-k", "rel-below-k")


def parse_gate(rule: str) -> Gate:
    text = rule.strip()
    if text in _PLAIN_GATES:
        return Gate(rule=text, name=text)
    match = _GATE_RE.match(text)
    if not match:
        raise InvalidGate(
            f"unknown gate {rule!r}; expected one of {', '.join(_PLAIN_GATES)}, "
            "judged-at-k<X, stage1-recall<X, label-coverage<X (X a number in 0..1)"
        )
    try:
        threshold = float(match.group(2))
    except ValueError:
        threshold = float("nan")
    if not 0.0 <= threshold <= 1.0:
        raise InvalidGate(f"gate {rule!r}: threshold must be between 0 and 1")
    return Gate(rule=text, name=match.group(1), threshold=threshold)


def _ratio(num: float, den: float) -> float | None:
    return num / den if den else None


def recall_ceiling(k: int, n_rel: int) -> float | None:
    """min(1, k / |Rel|): the best recall@k any ranking can reach; None if |Rel| = 0."""
    return min(1.0, k / n_rel) if n_rel else None


def precision_ceiling(k: int, n_rel: int) -> float:
    """min(1, |Rel| / k): the best precision@k any ranking can reach."""
    return min(1.0, n_rel / k)


def _coverage(
    grades: Mapping[str, int], corpus_size: int | None, corpus_ids: AbstractSet[str] | None
) -> float | None:
    if corpus_ids is not None:
        return _ratio(sum(1 for doc in grades if doc in corpus_ids), len(corpus_ids))
    return (len(grades) / corpus_size) if corpus_size else None


def audit_query(
    ranking: Sequence[str],
    grades: Mapping[str, int],
    k: int,
    *,
    min_grade: int = 1,
    fetch_ranking: Sequence[str] | None = None,
    fetch_depth: int | None = None,
    corpus_size: int | None = None,
    corpus_ids: AbstractSet[str] | None = None,
    truth: Mapping[str, int] | None = None,
    min_judged: float = DEFAULT_MIN_JUDGED,
    stage1_min: float = DEFAULT_STAGE1_MIN,
) -> dict[str, Any]:
    """Audit of one query. ``fetch_ranking`` is stage 1 (defaults to ``ranking``
    itself); it is read to ``fetch_depth`` (default: all of it). With
    ``corpus_ids`` label coverage counts only judged documents of the corpus
    (the others are counted in ``judged_outside_corpus``)."""
    relevant = {doc for doc, g in grades.items() if g >= min_grade}
    n_rel = len(relevant)
    distinct, repeated = dedupe_ranking(ranking)
    top = distinct[:k]
    distinct_hits = sum(1 for doc in top if doc in relevant)
    positional_hits = sum(1 for doc in ranking[:k] if doc in relevant)
    recall = _ratio(distinct_hits, n_rel)
    ceiling = recall_ceiling(k, n_rel)
    retrieved_top = len(top)
    judged_at_k = _ratio(sum(1 for doc in top if doc in grades), retrieved_top)

    stage1 = None
    lost = None
    if fetch_ranking is not None or fetch_depth is not None:
        source = list(fetch_ranking) if fetch_ranking is not None else list(ranking)
        fetched, _ = dedupe_ranking(source)
        if fetch_depth is not None:
            fetched = fetched[:fetch_depth]
        stage1 = _ratio(sum(1 for doc in fetched if doc in relevant), n_rel)
        if stage1 is not None and recall is not None:
            lost = stage1 - recall

    recall_true = None
    truth_incomplete = False
    if truth is not None:
        true_relevant = {doc for doc, g in truth.items() if g >= min_grade}
        recall_true = _ratio(sum(1 for doc in top if doc in true_relevant), len(true_relevant))
        truth_incomplete = bool(true_relevant - relevant)

    findings: list[str] = []
    if n_rel == 0:
        findings.append("recall_undefined")
    if repeated:
        findings.append("duplicate_ids")
    if positional_hits != distinct_hits:
        findings.append("positional_mismatch")
    if n_rel > k:
        findings.append("rel_above_k")
    if 0 < n_rel < k:
        findings.append("rel_below_k")
    if judged_at_k is not None and judged_at_k < min_judged:
        findings.append("low_judged_at_k")
    if stage1 is not None and stage1 < stage1_min:
        findings.append("stage1_recall_low")
    if truth_incomplete:
        findings.append("labels_incomplete")

    return {
        "rel": n_rel,
        "retrieved": len(distinct),
        "recall": recall,
        "recall_ceiling": ceiling,
        "share_of_ceiling": (recall / ceiling) if recall is not None and ceiling else None,
        "precision": distinct_hits / k,
        "precision_ceiling": precision_ceiling(k, n_rel),
        "recall_capped": _ratio(distinct_hits, min(n_rel, k)),
        "label_coverage": _coverage(grades, corpus_size, corpus_ids),
        "judged_outside_corpus": (
            sum(1 for doc in grades if doc not in corpus_ids) if corpus_ids is not None else None
        ),
        "judged_at_k": judged_at_k,
        "duplicates": repeated,
        "positional_hits": positional_hits,
        "distinct_hits": distinct_hits,
        "recall_at_fetch": stage1,
        "lost_after_fetch": lost,
        "recall_true": recall_true,
        "findings": findings,
    }


def audit(
    grades: Mapping[str, Mapping[str, int]],
    rankings: Mapping[str, Sequence[str]],
    k: int,
    *,
    min_grade: int = 1,
    fetch_rankings: Mapping[str, Sequence[str]] | None = None,
    fetch_depth: int | None = None,
    corpus_size: int | None = None,
    corpus_ids: AbstractSet[str] | None = None,
    truth: Mapping[str, Mapping[str, int]] | None = None,
    gates: Sequence[Gate] = (),
    min_judged: float = DEFAULT_MIN_JUDGED,
    stage1_min: float = DEFAULT_STAGE1_MIN,
) -> dict[str, Any]:
    """Audit every query that has judgments and a ranking; then the gates.

    Returns the JSON shape of ``python -m calibration audit --format json``.
    Raises :class:`InvalidAudit` when the inputs cannot give honest figures.
    """
    if k < 1:
        raise InvalidAudit("k must be >= 1")
    if fetch_depth is not None and fetch_depth < k:
        raise InvalidAudit(
            f"fetch depth {fetch_depth} is below k = {k}; expected stage 1 to read at least as deep as the cut"
        )
    if corpus_ids is not None:
        corpus_size = len(corpus_ids)
    if corpus_size is not None and corpus_ids is None:
        widest = max(grades, key=lambda q: len(grades[q]), default=None)
        if widest is not None and len(grades[widest]) > corpus_size:
            raise InvalidAudit(
                f"corpus size {corpus_size} is smaller than the {len(grades[widest])} documents "
                f"judged for query {widest!r}; expected the size of the whole corpus"
            )
    has_stage1 = fetch_rankings is not None or fetch_depth is not None
    for gate in gates:
        if gate.name == "stage1-recall" and not has_stage1:
            raise InvalidGate(f"gate {gate.rule!r} needs --fetch-depth or --fetch-run")
        if gate.name == "label-coverage" and not corpus_size:
            raise InvalidGate(f"gate {gate.rule!r} needs --corpus-size or --corpus")
    qids = sorted((q for q in grades if q in rankings), key=lambda q: q.encode("utf-8"))
    missing = sorted((q for q in grades if q not in rankings), key=lambda q: q.encode("utf-8"))
    queries: dict[str, dict[str, Any]] = {}
    for qid in qids:
        fetch = None
        if fetch_rankings is not None:
            fetch = fetch_rankings.get(qid, [])
        queries[qid] = audit_query(
            rankings[qid],
            grades[qid],
            k,
            min_grade=min_grade,
            fetch_ranking=fetch,
            fetch_depth=fetch_depth,
            corpus_size=corpus_size,
            corpus_ids=corpus_ids,
            truth=(truth.get(qid, {}) if truth is not None else None),
            min_judged=min_judged,
            stage1_min=stage1_min,
        )
    recalls = [q["recall"] for q in queries.values() if q["recall"] is not None]
    capped = [q["recall_capped"] for q in queries.values() if q["recall_capped"] is not None]
    counts = {code: 0 for code in FINDINGS}
    for q in queries.values():
        for code in q["findings"]:
            counts[code] += 1
    summary = {
        "n_queries": len(queries),
        "mean_recall": sum(recalls) / len(recalls) if recalls else None,
        "mean_recall_capped": sum(capped) / len(capped) if capped else None,
        "undefined": len(queries) - len(recalls),
        "missing_from_run": len(missing),
        "not_in_qrels": sum(1 for q in rankings if q not in grades),
        "findings": {code: n for code, n in counts.items() if n},
    }
    gate_results = [_check_gate(gate, queries) for gate in gates]
    return {
        "k": k,
        "min_grade": min_grade,
        "fetch_depth": fetch_depth,
        "corpus_size": corpus_size,
        "queries": queries,
        "missing_from_run": missing,
        "summary": summary,
        "gates": gate_results,
        "passed": all(g["passed"] for g in gate_results),
    }


def _check_gate(gate: Gate, queries: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    failing: list[str] = []
    for qid, q in queries.items():
        if gate.name == "duplicates":
            bad = bool(q["duplicates"])
        elif gate.name == "undefined-recall":
            bad = q["recall"] is None
        elif gate.name == "rel-above-k":
            bad = "rel_above_k" in q["findings"]
        elif gate.name == "rel-below-k":
            bad = "rel_below_k" in q["findings"]
        elif gate.name == "judged-at-k":
            bad = q["judged_at_k"] is not None and q["judged_at_k"] < gate.threshold
        elif gate.name == "stage1-recall":
            bad = q["recall_at_fetch"] is not None and q["recall_at_fetch"] < gate.threshold
        elif gate.name == "label-coverage":
            bad = q["label_coverage"] is not None and q["label_coverage"] < gate.threshold
        else:  # parse_gate admits no other name
            raise InvalidGate(f"unknown gate {gate.rule!r}")
        if bad:
            failing.append(qid)
    return {"rule": gate.rule, "passed": not failing, "queries": failing}


def finding_text(code: str, q: Mapping[str, Any], k: int) -> str:
    """The finding in words, with its numbers."""
    rel = q["rel"]
    if code == "recall_undefined":
        return "no judged relevant document: recall is undefined (left out of the mean)"
    if code == "duplicate_ids":
        return f"repeated ids {', '.join(q['duplicates'])}: each counted once, at its first rank"
    if code == "positional_mismatch":
        return (
            f"a naive positional count finds {q['positional_hits']} hits in the top {k}, "
            f"distinct documents give {q['distinct_hits']}"
        )
    if code == "rel_above_k":
        return f"|Rel|={rel} > k={k}: recall can never exceed {q['recall_ceiling']:.3f}"
    if code == "rel_below_k":
        return f"|Rel|={rel} < k={k}: precision can never exceed {q['precision_ceiling']:.2f}"
    if code == "low_judged_at_k":
        return (
            f"only {q['judged_at_k']:.0%} of the top {k} is judged: unjudged documents count as not relevant"
        )
    if code == "stage1_recall_low":
        return (
            f"stage 1 finds only {q['recall_at_fetch']:.3f} of |Rel|={rel}: "
            "what the fetch misses no reranker can recover"
        )
    if code == "labels_incomplete":
        return (
            f"the truth set has relevant documents the labels lack: recall against the labels "
            f"{_fmt(q['recall'])}, against the truth {_fmt(q['recall_true'])}"
        )
    return code


def _fmt(value: float | None) -> str:
    return "undefined" if value is None else f"{value:.3f}"
