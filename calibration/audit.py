"""The audit: what a recall, a precision and a ranking are fractions of.

Per query at cutoff k (relevant = grade >= ``min_grade``; |Rel| = judged
relevant documents of the query; a repeated document keeps its slot and
scores nothing the second time, so "the top k" is the first k positions,
repeats included, and a hit is a distinct relevant document among them):

- ``recall``            = distinct relevant in the top k / |Rel|   (None if |Rel| = 0)
- ``recall_ceiling``    = min(1, k / |Rel|): the best recall any ranking can reach
- ``share_of_ceiling``  = recall / recall_ceiling
- ``precision``         = distinct relevant in the top k / k
- ``precision_ceiling`` = min(1, |Rel| / k)
- ``recall_capped``     = relevant in the top k / min(|Rel|, k): the *wrong*
                          denominator some tools use, shown only to measure the
                          inflation it causes
- ``label_coverage``    = judged documents of the query / corpus size
- ``retrieved``         = positions (lines) retrieved, repeats included
- ``judged_at_k``       = distinct judged documents in the top k / min(k, retrieved)
- ``positional_hits``   = relevant positions among the first k lines, repeats
                          counted each time (what a naive count reports); ``distinct_hits``
                          counts each document once (the hits of recall and precision)
- ``recall_at_fetch``   = recall of stage 1 (the same run at ``fetch_depth``,
                          or a separate fetch run); ``lost_after_fetch`` =
                          recall_at_fetch - recall, what the cut to k lost
- ``recall_true``       = recall against a fuller "truth" label set

Duplicates: ``duplicates`` are the ids repeated in the ranking; when the chunk texts are known
(their keys handed in: ``annotation.formats.records.text_key``, the text with whitespace collapsed and
case folded, hashed), ``same_text`` adds the pairs of different ids in the top k whose text is
the same (:func:`same_text_pairs`). The ``duplicates`` gate and ``check``'s ``no_duplicates``
read both.

Findings (codes): ``recall_undefined``, ``duplicate_ids``, ``duplicate_text``,
``positional_mismatch``, ``run_short`` (the ranking fills fewer than k positions), ``rel_above_k``, ``rel_below_k``,
``low_judged_at_k``, ``stage1_recall_low``, ``stage1_circular`` (every judged chunk of the
query lies in stage 1: its recall there is 1 by construction, the labels having been pooled from
this run's top; ``stage1_circular`` in the query's figures), ``labels_incomplete``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from collections.abc import Set as AbstractSet
from concurrent.futures import Executor
from dataclasses import dataclass
from typing import Any, Literal, cast

from annotation.errors import DenominatorError
from annotation.model import Qrels, Run
from calibration.metrics import blank_repeats, evaluate, top_ranked
from calibration.policy.finding_words import (
    FINDINGS,
    JUDGED_BAR,
    REPEAT_RULE,
    STAGE1_BAR,
    finding_text,
    repeats_text,
)
from calibration.policy.rules import Bar, Policy
from calibration.results import AuditQuery, AuditReport, AuditSummary, GateResult
from calibration.scorer import Scorer, run_scorer

__all__ = [
    "label_coverage",
    "corpus_size_of",
    "InvalidAudit",
    "InvalidGate",
    "Gate",
    "parse_gate",
    "audit_query",
    "audit",
    "audit_run",
    "same_text_pairs",
    "same_text_of",
    "stage1_of",
    "coverage_of",
    "rule_bar",
    "finding_text",
    "repeats_text",
    "REPEAT_RULE",
    "FINDINGS",
]


class InvalidAudit(DenominatorError, ValueError):
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
_PLAIN_GATES = ("duplicates", "undefined-recall", "rel-above-k", "rel-below-k", "stage1-recall")


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


def label_coverage(
    grades: Mapping[str, int], corpus_size: int | None, corpus_ids: AbstractSet[str] | None
) -> float | None:
    if corpus_ids is not None:
        return _ratio(sum(1 for doc in grades if doc in corpus_ids), len(corpus_ids))
    return (len(grades) / corpus_size) if corpus_size else None


def same_text_pairs(ranking: Sequence[str], text_keys: Mapping[str, str], k: int) -> list[list[str]]:
    """The pairs ``[later, first]`` of different ids among the first k positions whose text keys
    are equal, in ranking order: each later id beside the first id of its text. An id repeated, or
    without a key (its text not known), pairs with nothing."""
    first: dict[str, str] = {}
    seen: set[str] = set()
    pairs: list[list[str]] = []
    for doc in ranking[:k]:
        if doc in seen:
            continue
        seen.add(doc)
        key = text_keys.get(doc)
        if key is None:
            continue
        if key in first:
            pairs.append([doc, first[key]])
        else:
            first[key] = doc
    return pairs


def audit_query(
    ranking: Sequence[str],
    grades: Mapping[str, int],
    k: int,
    *,
    min_grade: int,
    fetch_ranking: Sequence[str] | None = None,
    fetch_depth: int | None = None,
    corpus_size: int | None = None,
    corpus_ids: AbstractSet[str] | None = None,
    truth: Mapping[str, int] | None = None,
    min_judged: Bar = JUDGED_BAR,
    stage1_min: Bar = STAGE1_BAR,
    text_keys: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """Audit of one query. ``fetch_ranking`` is stage 1 (defaults to ``ranking``
    itself); it is read to ``fetch_depth`` (default: all of it). With
    ``corpus_ids`` label coverage counts only judged documents of the corpus
    (the others are counted in ``judged_outside_corpus``). With ``text_keys`` (document id ->
    text key) the top k's ids of the same text are paired in ``same_text``."""
    relevant = {doc for doc, g in grades.items() if g >= min_grade}
    slots, repeated = blank_repeats(ranking)  # a repeat is None: it keeps its slot, matches nothing
    top = slots[:k]
    stage1_hits = None
    circular = False
    if fetch_ranking is not None or fetch_depth is not None:
        fetched, _ = blank_repeats(list(fetch_ranking) if fetch_ranking is not None else list(ranking))
        stage1_hits = sum(1 for doc in fetched[:fetch_depth] if doc in relevant)
        in_fetch = sum(1 for doc in fetched[:fetch_depth] if doc is not None and doc in grades)
        circular = 0 < len(grades) == in_fetch
    true_relevant = {doc for doc, g in truth.items() if g >= min_grade} if truth is not None else None
    return _query_report(
        k,
        n_rel=len(relevant),
        retrieved=len(slots),
        distinct_hits=sum(1 for doc in top if doc in relevant),
        positional_hits=sum(1 for doc in ranking[:k] if doc in relevant),
        judged_in_top=sum(1 for doc in top if doc is not None and doc in grades),
        repeated=repeated,
        stage1_hits=stage1_hits,
        true_hits=sum(1 for doc in top if doc in true_relevant) if true_relevant is not None else None,
        n_true=len(true_relevant) if true_relevant is not None else None,
        truth_incomplete=bool(true_relevant - relevant) if true_relevant is not None else False,
        coverage=label_coverage(grades, corpus_size, corpus_ids),
        outside_corpus=sum(1 for doc in grades if doc not in corpus_ids) if corpus_ids is not None else None,
        min_judged=min_judged,
        stage1_min=stage1_min,
        circular=circular,
        same_text=same_text_pairs(ranking, text_keys, k) if text_keys is not None else None,
    )


def _query_report(
    k: int,
    *,
    n_rel: int,
    retrieved: int,
    distinct_hits: int,
    positional_hits: int,
    judged_in_top: int,
    repeated: list[str],
    stage1_hits: int | None,
    true_hits: int | None,
    n_true: int | None,
    truth_incomplete: bool,
    coverage: float | None,
    outside_corpus: int | None,
    min_judged: Bar,
    stage1_min: Bar,
    circular: bool = False,
    same_text: list[list[str]] | None = None,
) -> dict[str, Any]:
    """One query's audit from its counts: the figures, then the findings.
    Shared by the per-query reference and the batch path, so both say the same."""
    recall = _ratio(distinct_hits, n_rel)
    ceiling = recall_ceiling(k, n_rel)
    judged_at_k = _ratio(judged_in_top, min(k, retrieved))
    stage1 = _ratio(stage1_hits, n_rel) if stage1_hits is not None else None
    lost = stage1 - recall if stage1 is not None and recall is not None else None
    recall_true = _ratio(true_hits, n_true) if true_hits is not None and n_true is not None else None

    findings: list[str] = []
    if n_rel == 0:
        findings.append("recall_undefined")
    if repeated:
        findings.append("duplicate_ids")
    if same_text:
        findings.append("duplicate_text")
    if positional_hits != distinct_hits:
        findings.append("positional_mismatch")
    if retrieved < k:
        findings.append("run_short")
    if n_rel > k:
        findings.append("rel_above_k")
    if 0 < n_rel < k:
        findings.append("rel_below_k")
    if judged_at_k is not None and not min_judged.holds(judged_at_k):
        findings.append("low_judged_at_k")
    if stage1 is not None and not stage1_min.holds(stage1):
        findings.append("stage1_recall_low")
    circular = circular and n_rel > 0  # with nothing relevant, stage-1 recall is undefined, not circular
    if circular:
        findings.append("stage1_circular")
    if truth_incomplete:
        findings.append("labels_incomplete")

    return {
        "rel": n_rel,
        "retrieved": retrieved,
        "recall": recall,
        "recall_ceiling": ceiling,
        "share_of_ceiling": (recall / ceiling) if recall is not None and ceiling else None,
        "precision": distinct_hits / k,
        "precision_ceiling": precision_ceiling(k, n_rel),
        "recall_capped": _ratio(distinct_hits, min(n_rel, k)),
        "label_coverage": coverage,
        "judged_outside_corpus": outside_corpus,
        "judged_at_k": judged_at_k,
        "duplicates": repeated,
        "positional_hits": positional_hits,
        "distinct_hits": distinct_hits,
        "recall_at_fetch": stage1,
        "fetch_hits": stage1_hits,
        "stage1_circular": circular,
        "lost_after_fetch": lost,
        "recall_true": recall_true,
        "findings": findings,
        **({"same_text": same_text} if same_text is not None else {}),
    }


def audit(
    grades: Mapping[str, Mapping[str, int]],
    rankings: Mapping[str, Sequence[str]],
    k: int,
    *,
    min_grade: int,
    fetch_rankings: Mapping[str, Sequence[str]] | None = None,
    fetch_depth: int | None = None,
    corpus_size: int | None = None,
    corpus_ids: AbstractSet[str] | None = None,
    truth: Mapping[str, Mapping[str, int]] | None = None,
    gates: Sequence[Gate] = (),
    min_judged: Bar = JUDGED_BAR,
    stage1_min: Bar = STAGE1_BAR,
    text_keys: Mapping[str, str] | None = None,
) -> AuditReport:
    """Audit every query that has judgments and a ranking; then the gates.

    Returns the JSON shape of ``python -m calibration audit --format json``.
    Raises :class:`InvalidAudit` when the inputs cannot give honest figures.
    """
    corpus_size = _check_inputs(
        grades,
        k,
        fetch_depth,
        corpus_size,
        corpus_ids,
        gates,
        fetch_rankings is not None or fetch_depth is not None,
        stage1_min,
    )
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
            text_keys=text_keys,
        )
    not_in_qrels = sum(1 for q in rankings if q not in grades)
    if fetch_rankings is None and fetch_depth is not None:  # stage 1 is never deeper than the run
        deepest = max((len(r) for r in rankings.values()), default=0)
        fetch_depth = deepest if 0 < deepest < fetch_depth else fetch_depth
    report = _assemble(
        k, min_grade, fetch_depth, corpus_size, queries, missing, not_in_qrels, gates, stage1_min
    )
    report["missing_relevant"] = missing_relevant(grades, missing, min_grade)
    report["duplicates_by"] = "id and text" if text_keys is not None else "id"
    return report


def missing_relevant(
    grades: Mapping[str, Mapping[str, int]], missing: Sequence[str], min_grade: int
) -> list[str]:
    """The queries missing from the run that count: those with a judged relevant document
    (``check``'s ``all_queries``)."""
    return [qid for qid in missing if any(g >= min_grade for g in grades.get(qid, {}).values())]


def audit_run(
    qrels: Qrels,
    run: Run | Scorer,
    k: int,
    *,
    min_grade: int,
    fetch_run: Run | None = None,
    fetch_depth: int | None = None,
    corpus_size: int | None = None,
    corpus_ids: AbstractSet[str] | None = None,
    truth: Qrels | None = None,
    gates: Sequence[Gate] = (),
    min_judged: Bar = JUDGED_BAR,
    stage1_min: Bar = STAGE1_BAR,
    missing: Literal["drop", "zero"] = "drop",
    executor: Executor | None = None,
    own_depth: bool = False,
    same_text: Mapping[str, list[list[str]]] | None = None,
) -> AuditReport:
    """The same audit as :func:`audit`, counted by the vectorized engine
    (:func:`calibration.metrics.evaluate`, handed the caller's ``executor``) instead of one
    query at a time: what every face uses, so a 10-million-line run audits in seconds.
    ``missing="zero"``: a judged query absent from the run is audited as retrieving nothing
    (``check --missing zero``) instead of being left out and listed.

    ``run``: a :class:`Run`, or a :class:`Scorer` (a run file read in pieces: the run is read
    once, or twice with ``truth``). ``own_depth``: without ``fetch_run`` or ``fetch_depth``,
    stage 1 is the run read to its own depth when that is deeper than k (the report's
    ``fetch_depth``), known once the run has been read. ``same_text``: per query, the pairs of
    different ids of the same text in the top k (:func:`same_text_pairs`; None: texts not known,
    duplicates by id only)."""
    grades = qrels.grades
    corpus_size = _check_inputs(
        grades,
        k,
        fetch_depth,
        corpus_size,
        corpus_ids,
        gates,
        own_depth or fetch_run is not None or fetch_depth is not None,
        stage1_min,
    )
    score = run_scorer(run, executor) if isinstance(run, Run) else run
    own_depth = own_depth and fetch_run is None and fetch_depth is None
    ks = sorted({k} if fetch_depth is None else {k, fetch_depth})
    read_to = fetch_run is None and fetch_depth is not None  # --fetch-depth: the run read to a depth
    result = score(
        qrels, ks, min_grade, with_positional=True, missing=missing, with_depth=own_depth or read_to
    )
    c_fetch = None
    judged_fetch: list[int] | None = None  # distinct judged chunks in stage 1, per query
    if own_depth and result.depth > k:  # stage 1 = the run read to its own depth: every hit counts
        fetch_depth = result.depth
        c_fetch = result.num_rel_ret.tolist()
        judged_fetch = result.counts["judged_ret"].tolist()
    elif own_depth:  # no deeper than k: no stage 1, which a stage1-recall gate needs
        _check_inputs(grades, k, None, corpus_size, corpus_ids, gates, False, stage1_min)
    elif fetch_depth is not None:
        c_fetch = result.counts[f"hits@{fetch_depth}"].tolist()
        judged_fetch = result.counts[f"judged@{fetch_depth}"].tolist()
        if read_to and 0 < result.depth < fetch_depth:  # stage 1 is never deeper than the run
            fetch_depth = result.depth
    stage1_by_query: dict[str, int] = {}
    judged_by_query: dict[str, int] = {}
    if fetch_run is not None:
        fetched = evaluate(qrels, fetch_run, ks=[1], min_grade=min_grade, missing="zero", executor=executor)
        stage1_by_query = dict(zip(fetched.qids, fetched.num_rel_ret.tolist()))
        judged_by_query = dict(zip(fetched.qids, fetched.counts["judged_ret"].tolist()))
    truth_by_query: dict[str, tuple[int, int]] = {}
    if truth is not None:
        against_truth = score(truth, [k], min_grade, missing="zero")
        truth_by_query = {
            qid: (hits, n_true)
            for qid, hits, n_true in zip(
                against_truth.qids, against_truth.counts[f"hits@{k}"].tolist(), against_truth.num_rel.tolist()
            )
        }
    c = result.counts
    columns = zip(
        result.qids,
        result.evaluated.tolist(),
        result.num_rel.tolist(),
        result.num_ret.tolist(),
        c[f"hits@{k}"].tolist(),
        c[f"positional@{k}"].tolist(),
        c[f"judged@{k}"].tolist(),
        c_fetch if c_fetch is not None else [None] * len(result.qids),
        judged_fetch if judged_fetch is not None else [None] * len(result.qids),
        result.num_judged.tolist(),
    )
    queries: dict[str, dict[str, Any]] = {}
    for (
        qid,
        evaluated,
        n_rel,
        retrieved,
        hits,
        positional,
        judged,
        hits_at_fetch,
        in_fetch,
        n_judged,
    ) in columns:
        if not evaluated and (missing != "zero" or n_rel == 0):  # zero: a missing query that counts
            continue
        judged_grades = grades.get(qid, {})
        true_hits, n_true = truth_by_query.get(qid, (0, 0)) if truth is not None else (None, None)
        truth_incomplete = False
        if truth is not None:
            relevant = {doc for doc, g in judged_grades.items() if g >= min_grade}
            truth_incomplete = any(
                g >= min_grade and doc not in relevant for doc, g in truth.grades.get(qid, {}).items()
            )
        stage1_hits = hits_at_fetch
        if fetch_run is not None:
            stage1_hits = stage1_by_query.get(qid, 0)
            in_fetch = judged_by_query.get(qid, 0)
        # circular: every judged chunk of the query lies in stage 1, so stage-1 recall is 1 by
        # construction (labels pooled from this run's top: they cannot show it missing anything)
        circular = stage1_hits is not None and in_fetch is not None and 0 < n_judged == in_fetch
        queries[qid] = _query_report(
            k,
            n_rel=n_rel,
            retrieved=retrieved,
            distinct_hits=hits,
            positional_hits=positional,
            judged_in_top=judged,
            repeated=result.duplicates.get(qid, []),
            stage1_hits=stage1_hits,
            true_hits=true_hits,
            n_true=n_true,
            truth_incomplete=truth_incomplete,
            coverage=label_coverage(judged_grades, corpus_size, corpus_ids),
            outside_corpus=(
                sum(1 for doc in judged_grades if doc not in corpus_ids) if corpus_ids is not None else None
            ),
            min_judged=min_judged,
            stage1_min=stage1_min,
            circular=circular,
            same_text=same_text.get(qid, []) if same_text is not None else None,
        )
    report = _assemble(
        k,
        min_grade,
        fetch_depth,
        corpus_size,
        queries,
        result.missing_from_run,
        result.not_in_qrels,
        gates,
        stage1_min,
    )
    report["missing_relevant"] = missing_relevant(grades, result.missing_from_run, min_grade)
    report["duplicates_by"] = "id and text" if same_text is not None else "id"
    return report


def corpus_size_of(
    grades: Mapping[str, Mapping[str, int]], corpus_size: int | None, corpus_ids: AbstractSet[str] | None
) -> int | None:
    """What label coverage divides by: the corpus's ids, else the size given, refused when a query
    judged more documents than that (:class:`InvalidAudit`)."""
    if corpus_ids is not None:
        return len(corpus_ids)
    if corpus_size is not None:
        widest = max(grades, key=lambda q: len(grades[q]), default=None)
        if widest is not None and len(grades[widest]) > corpus_size:
            raise InvalidAudit(
                f"corpus size {corpus_size} is smaller than the {len(grades[widest])} documents "
                f"judged for query {widest!r}; expected the size of the whole corpus"
            )
    return corpus_size


def _check_inputs(
    grades: Mapping[str, Mapping[str, int]],
    k: int,
    fetch_depth: int | None,
    corpus_size: int | None,
    corpus_ids: AbstractSet[str] | None,
    gates: Sequence[Gate],
    has_stage1: bool,
    stage1: Bar = STAGE1_BAR,
) -> int | None:
    """Refuse inputs that cannot give honest figures; the corpus size to use."""
    if k < 1:
        raise InvalidAudit("k must be >= 1")
    if fetch_depth is not None and fetch_depth < k:
        raise InvalidAudit(
            f"fetch depth {fetch_depth} is below k = {k}; expected stage 1 to read at least as deep as the cut"
        )
    corpus_size = corpus_size_of(grades, corpus_size, corpus_ids)
    for gate in gates:
        if (
            gate.name == "stage1-recall"
            and gate.threshold is not None
            and not Bar(stage1.op, gate.threshold).holds(1.0)
        ):
            raise InvalidGate(
                f"gate {gate.rule!r}: stage-1 recall {Bar(stage1.op, gate.threshold)} (the policy's strictness "
                "at that bar) can never hold; give a lower bar"
            )
        if gate.name == "stage1-recall" and not has_stage1:
            raise InvalidGate(f"gate {gate.rule!r} needs --fetch-depth or --fetch-run")
        if gate.name == "label-coverage" and not corpus_size:
            raise InvalidGate(f"gate {gate.rule!r} needs --corpus-size or --corpus")
    return corpus_size


def _assemble(
    k: int,
    min_grade: int,
    fetch_depth: int | None,
    corpus_size: int | None,
    queries: dict[str, dict[str, Any]],
    missing: list[str],
    not_in_qrels: int,
    gates: Sequence[Gate],
    stage1: Bar = STAGE1_BAR,
) -> AuditReport:
    """Per-query audits -> the summary (means with their undefined count), the gates."""
    recalls = [q["recall"] for q in queries.values() if q["recall"] is not None]
    capped = [q["recall_capped"] for q in queries.values() if q["recall_capped"] is not None]
    counts = {code: 0 for code in FINDINGS}
    for q in queries.values():
        for code in q["findings"]:
            counts[code] += 1
    summary: AuditSummary = {
        "n_queries": len(queries),
        "mean_recall": sum(recalls) / len(recalls) if recalls else None,
        "mean_recall_capped": sum(capped) / len(capped) if capped else None,
        "undefined": len(queries) - len(recalls),
        "missing_from_run": len(missing),
        "not_in_qrels": not_in_qrels,
        "findings": {code: n for code, n in counts.items() if n},
    }
    gate_results = [_check_gate(gate, queries, stage1) for gate in gates]
    return {
        "k": k,
        "min_grade": min_grade,
        "fetch_depth": fetch_depth,
        "corpus_size": corpus_size,
        "queries": cast("dict[str, AuditQuery]", queries),  # each built by _query_report
        "missing_from_run": missing,
        "summary": summary,
        "gates": cast("list[GateResult]", gate_results),  # each built by _check_gate
        "passed": all(g["passed"] for g in gate_results),
    }


def _check_gate(
    gate: Gate, queries: Mapping[str, Mapping[str, Any]], stage1: Bar = STAGE1_BAR
) -> dict[str, Any]:
    """Which queries fail a gate. ``stage1-recall`` holds stage 1 to the policy's rule (``stage1``,
    ``> 0.95`` by default); ``stage1-recall<X`` to the same rule's strictness at bar X, so with the
    default ``>`` exactly X fails: no two commands disagree on 0.95."""
    failing: list[str] = []
    stage1_bar = stage1 if gate.threshold is None else Bar(stage1.op, gate.threshold)
    for qid, q in queries.items():
        if gate.name == "duplicates":
            bad = bool(q["duplicates"]) or bool(q.get("same_text"))
        elif gate.name == "undefined-recall":
            bad = q["recall"] is None
        elif gate.name == "rel-above-k":
            bad = "rel_above_k" in q["findings"]
        elif gate.name == "rel-below-k":
            bad = "rel_below_k" in q["findings"]
        elif gate.name == "judged-at-k":
            bad = q["judged_at_k"] is not None and q["judged_at_k"] < gate.threshold
        elif gate.name == "stage1-recall":
            bad = q["recall_at_fetch"] is not None and not stage1_bar.holds(q["recall_at_fetch"])
        elif gate.name == "label-coverage":
            bad = q["label_coverage"] is not None and q["label_coverage"] < gate.threshold
        else:  # parse_gate admits no other name
            raise InvalidGate(f"unknown gate {gate.rule!r}")
        if bad:
            failing.append(qid)
    out: dict[str, Any] = {"rule": gate.rule, "passed": not failing, "queries": failing}
    if gate.name == "stage1-recall":  # the comparison it was held to, with its strictness
        out["bar"] = f"stage-1 recall {stage1_bar}"
    return out


# ---------------------------------------------------------------- the audit's inputs in words (#41: from workflows)

_NO_BAR = Bar(">=", float("-inf"))


def rule_bar(policy: Policy, rule: str, value: float | None) -> Bar:
    """The policy's bar of ``rule``, at ``value`` when one is given (its strictness kept); a rule
    turned off never fires (a bar every figure meets)."""
    bar = policy.bar(rule)
    if bar is None:
        return _NO_BAR
    return bar if value is None else Bar(bar.op, value)


def stage1_of(k: int, fetch_run: Run | None, fetch_depth: int | None, read_to: int | None) -> str:
    """Stage 1 in words, the one rule of the CLI and the pages: ``--fetch-run``, else
    ``--fetch-depth``, else a run deeper than k is its own stage 1 (read to its full depth,
    ``read_to``: the audit's ``fetch_depth``); a run no deeper than k has none."""
    if fetch_run is not None:
        return f"stage 1 = the fetch run {fetch_run.name!r} (all of it)"
    if fetch_depth is not None and read_to is not None and read_to < fetch_depth:
        return f"stage 1 = the run read to depth {read_to}, all of it (--fetch-depth {fetch_depth} is deeper than the run)"
    if fetch_depth is not None:
        return f"stage 1 = the run read to depth {fetch_depth}"
    if read_to is not None:
        return f"stage 1 taken as the run's depth {read_to} (no --fetch-depth or --fetch-run)"
    return f"stage 1 unknown: the run is no deeper than k = {k} and no --fetch-depth or --fetch-run was given"


def same_text_of(run: Run | Scorer, text_keys: Mapping[str, str], k: int) -> dict[str, list[list[str]]]:
    """Per query of ``run``, the pairs of different ids of the same text in its top k
    (:func:`calibration.audit.same_text_pairs`). The run must be in memory (a :class:`Run`): a run
    file read in pieces gives counts, not rankings (:class:`InvalidAudit`)."""
    if not isinstance(run, Run):
        raise InvalidAudit(
            "comparing chunk texts needs the run read whole; give a Run, not a run file's scorer"
        )
    return {qid: same_text_pairs(ranking, text_keys, k) for qid, ranking in top_ranked(run, k).items()}


def coverage_of(
    qrels: Qrels, qids: Sequence[str], corpus_size: int | None = None, corpus_ids: set[str] | None = None
) -> dict[str, float | None] | None:
    """Label coverage (judged documents / corpus size) of each query, as the audit counts it;
    None when the corpus size is not known ("coverage unknown", never a made-up figure)."""
    if corpus_size is None and corpus_ids is None:
        return None  # before qrels.grades: a dict of every judgment (0.1 s, 200 MB at 2M)
    size = corpus_size_of(qrels.grades, corpus_size, corpus_ids)
    if size is None:
        return None
    return {qid: label_coverage(qrels.grades.get(qid, {}), size, corpus_ids) for qid in qids}
