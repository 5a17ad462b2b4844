"""The audit's estimate of what the labels missed (``audit --estimate``): per query the judged
recall and |Rel| beside the ones estimated from golden.yaml's sample of unjudged candidates
(:mod:`calibration.estimate`), with their intervals, and the finding
``labels_incomplete_estimated`` when the judged recall lies outside the interval.

Pure: it takes the parsed :class:`~annotation.model.Qrels` (its ``sampling`` design checked
where the file was read) and the audit's result, and returns plain data.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from annotation.model import Qrels
from calibration.audit import InvalidAudit
from calibration.metrics import top_ranked
from calibration.results import AuditReport, EstimateQuery, EstimateReport


def estimate_run(
    qrels: Qrels,
    run: Any,
    k: int,
    min_grade: int,
    result: AuditReport,
    on_query: Callable[[int, int], None] | None = None,
    interval: str = "midp",
) -> EstimateReport:
    """Judged recall beside the recall estimated from golden.yaml's sample of unjudged
    candidates (calibration.estimate), per query; a finding when the interval excludes the
    judged value. The sampled chunks' grades are in the file's grades; every other grade
    is the fully judged pool. ``on_query(done, total)`` is called after each query (a
    progress bar: a large corpus stratum costs tens of milliseconds per query). ``interval``:
    "midp" (95% on average over truths) or "exact" (at least 95% for every truth of one
    stratum; wider); docs/estimate.md says which to choose. The design is ``qrels.sampling``,
    checked where the file was read; what needs the grades is checked here."""
    # start-up: scipy, ~0.75 s
    from calibration.estimate.points import LabelledStratum
    from calibration.estimate.recall import aggregate_recall, estimate_recall_at_k

    design = qrels.sampling
    if design is None or not design.queries:
        raise InvalidAudit(
            "--estimate needs a golden.yaml with a sampling section: python -m annotation pool "
            "--estimate N, label the sampled chunks, then export --format golden"
        )
    depth = design.depth
    rankings = top_ranked(run, k)  # the top k only, from the metrics' sort
    parameters = dict(design.parameters) if design.parameters is not None else None
    out: EstimateReport = {"design": parameters, "k": k, "interval": interval, "queries": {}, "summary": {}}
    if depth is not None and k > depth:
        out["note"] = (
            f"k = {k} exceeds the pool depth {depth}: unsampled candidates in the top k are not "
            "counted; the estimate is a lower bound there"
        )
    estimates: dict[str, dict[str, Any]] = {}
    for done, qid in enumerate(result["queries"], 1):
        grades = qrels.grades.get(qid, {})
        drawn = design.strata(qid)
        sampled = {doc for stratum in drawn for doc in stratum.sampled}
        # the distinct documents of the first k positions: a repeat keeps its slot, scores nothing
        top = list(dict.fromkeys(rankings.get(qid, [])[:k]))
        pool_relevant = [d for d, g in grades.items() if d not in sampled and g >= min_grade]
        # Unjudged chunks in the top k that nobody sampled: in a corpus-wide design whose
        # query has one stratum, that stratum holds every unjudged chunk, so they are its
        # members in the top k; otherwise their stratum is unknown (said in the note).
        unplaced = [d for d in top if d not in grades and d not in sampled]
        only = drawn[0] if len(drawn) == 1 else None
        room = only.size - len(only.sampled) if only else 0
        # more unplaced chunks than its unsampled members: not all were candidates; none is placed
        lone = design.corpus and only is not None and len(unplaced) <= room
        strata = []
        for stratum in drawn:
            labelled = [d for d in stratum.sampled if d in grades]
            strata.append(  # the design is checked: its counts are whole and feasible by construction
                LabelledStratum.from_relevance(
                    stratum.name,
                    stratum.size,
                    [grades[d] >= min_grade for d in labelled],
                    in_top_k=[d in top for d in labelled],
                    N_top_k=sum(d in top for d in stratum.sampled) + (len(unplaced) if lone else 0),
                )
            )
        holes = 0 if lone else len(unplaced)
        try:
            estimate = estimate_recall_at_k(
                len(pool_relevant),
                sum(1 for d in pool_relevant if d in top),
                strata,
                k,
                min_grade=min_grade,
                interval=interval,
            )
        except ValueError as exc:  # a sampling section that contradicts the grades or the run
            raise InvalidAudit(f"query {qid!r}: the sampling section cannot be used: {exc}") from None
        judged = result["queries"][qid]
        recall = judged.get("recall")
        ci = estimate.get("ci")
        if ci is not None and holes:
            # h chunks in the top k the estimate cannot place: any of them may be relevant. With
            # T relevant in all, recall x / T becomes at most (x + h) / (T + h), largest for the
            # smallest T the interval allows, so the upper bound widens to cover them
            t = estimate["rel"]["ci"][0]
            ci = [ci[0], min(1.0, (ci[1] * t + holes) / (t + holes))]
        incomplete = recall is not None and ci is not None and not (ci[0] <= recall <= ci[1])
        if incomplete:
            judged.setdefault("findings", []).append("labels_incomplete_estimated")
            judged["recall_estimated"] = {
                "estimate": estimate["estimate"],
                "ci": ci,
                "rel": estimate["rel"]["estimate"],
            }
            counts = result.get("summary", {}).get("findings")
            if isinstance(counts, dict):
                counts["labels_incomplete_estimated"] = counts.get("labels_incomplete_estimated", 0) + 1
        out["queries"][qid] = {
            "recall_judged": recall,
            "rel_judged": judged.get("rel"),
            "recall_estimated": estimate.get("estimate"),
            "recall_ci": ci,
            "rel_estimated": estimate["rel"].get("estimate"),
            "rel_ci": estimate["rel"].get("ci"),
            "n_sampled": estimate.get("n_sampled"),
            "n_sampled_relevant": estimate.get("n_sampled_relevant"),
            "labels_incomplete_estimated": incomplete,
            "unjudged_in_top_k": holes,
            "n_drawn": sum(len(stratum.sampled) for stratum in drawn),
            "reason": estimate.get("reason"),
        }
        estimates[qid] = estimate
        if on_query:
            on_query(done, len(result["queries"]))
    holed = {  # the queries with unplaced chunks in the top k: how many
        qid: e["unjudged_in_top_k"] for qid, e in out["queries"].items() if e["unjudged_in_top_k"]
    }
    if holed:
        out["note"] = " ".join(
            filter(
                None,
                [
                    out.get("note"),
                    f"{sum(holed.values())} chunks in the top {k} of {len(holed)} of {len(out['queries'])} queries "
                    f"({', '.join(list(holed)[:5])}{', ...' if len(holed) > 5 else ''}) are neither labelled in "
                    "this file nor sampled (pool chunks nobody labelled, a run that was not pooled, or k beyond "
                    "the pool): the estimate counts them as not relevant, and its interval's upper bound allows them all "
                    "to be",
                ],
            )
        )
    out["summary"] = _estimate_summary(out["queries"], estimates, k, aggregate_recall)
    return out


def _estimate_summary(
    rows: dict[str, EstimateQuery], estimates: dict[str, dict[str, Any]], k: int, aggregate: Any
) -> dict[str, Any]:
    """Judged and estimated recall@k over the queries where both are defined (mean, with a
    seeded bootstrap interval over queries for the estimate), |Rel| summed over them, and the
    sampled labels everything rests on."""
    both = [
        qid for qid, e in rows.items() if e["recall_judged"] is not None and e["recall_estimated"] is not None
    ]
    agg = aggregate({qid: estimates[qid] for qid in both}, seed=0)
    method = "bootstrap over queries"
    if len(both) == 1:  # resampling one query says nothing: its own interval is the honest one
        only = rows[both[0]]["recall_ci"]
        agg["mean"]["ci"] = agg["ratio"]["ci"] = list(only) if only is not None else None
        method = "the one query's own interval"
    return {
        "interval_over_queries": method,
        "n_queries": len(rows),
        "n_defined": len(both),
        "undefined": [qid for qid in rows if qid not in both],
        "recall_judged_mean": sum(rows[q]["recall_judged"] or 0.0 for q in both) / len(both)
        if both
        else None,
        "recall_estimated_mean": agg["mean"]["estimate"],
        "recall_estimated_mean_ci": agg["mean"]["ci"],
        "recall_estimated_ratio": agg["ratio"]["estimate"],  # sum of numerators / sum of |Rel|
        "recall_estimated_ratio_ci": agg["ratio"]["ci"],
        "rel_judged_total": sum(rows[q]["rel_judged"] or 0 for q in both),
        "rel_estimated_total": sum(rows[q]["rel_estimated"] or 0.0 for q in both) if both else None,
        "n_sampled": sum(int(e["n_sampled"] or 0) for e in rows.values()),
        "n_sampled_relevant": sum(int(e["n_sampled_relevant"] or 0) for e in rows.values()),
        "n_boot": agg["n_boot"],
        "n_flagged": sum(1 for e in rows.values() if e["labels_incomplete_estimated"]),
    }
