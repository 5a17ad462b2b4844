"""Every text rendering of the calibration CLI: JSON, trec_eval's text, tables for people
(metrics, audit, the estimate, compare, agree, position, PPI, the review's text).

Every figure in a table carries its denominator: |Rel| and the ceiling beside
each recall, k beside each precision, the number of queries and how many
were left out (undefined) beside each mean. Undefined is printed as
``undef``, never as 0 (except in the ``trec`` rendering, which copies
trec_eval's conventions so the two outputs diff clean).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, cast

import numpy as np
import pyarrow as pa

from annotation import arrow_compute as pc
from annotation.model import arrow
from annotation.render import align, decisive, interval, num, signed
from calibration.audit import REPEAT_RULE, precision_ceiling, recall_ceiling
from calibration.metrics import AP, RR, Evaluation, Measure
from calibration.policy.finding_words import BY_ID_ONLY, BY_TEXT, coverage_denominator
from calibration.policy.findings import group_findings, group_text, repeats_group
from calibration.results import (
    AgreementReport,
    AuditReport,
    PositionReport,
    PPIDesign,
    PPIReport,
    ReviewReport,
    ReviewSample,
)

if TYPE_CHECKING:  # types only: the renderings never run a workflow
    from calibration.results import Comparison, EstimateReport, KappaSequence, PositionFigure

MEAN_NAMES = {"RR": "MRR", "AP": "MAP"}


def _mean_name(name: str) -> str:
    return MEAN_NAMES.get(name, name)


def _num(value: float | None, digits: int = 4) -> str:
    return num(value, digits)


# ---------------------------------------------------------------- metrics


def metrics_json(result: Evaluation, coverage: Mapping[str, float | None] | None = None) -> dict[str, Any]:
    return _metrics_document(result, _query_rows(result, coverage))


def _query_rows(result: Evaluation, coverage: Mapping[str, float | None] | None) -> dict[str, Any]:
    columns = {
        name: [None if v != v else v for v in result.values[name].tolist()]  # NaN -> None
        for name in result.measures
    }
    rel = result.num_rel.tolist()
    retrieved = result.num_ret.tolist()
    queries: dict[str, Any] = {}
    for i, qid in enumerate(result.qids):
        row: dict[str, Any] = {"rel": rel[i], "retrieved": retrieved[i]}
        if coverage is not None:
            row["label_coverage"] = coverage.get(qid)
        for name in result.measures:
            row[name] = columns[name][i]
        queries[qid] = row
    return queries


def _metrics_document(result: Evaluation, queries: Any) -> dict[str, Any]:
    mean = {_mean_name(name): result.mean(name) for name in result.measures}
    undefined = {_mean_name(name): result.undefined(name) for name in result.measures}
    return {
        "k": result.ks,
        "min_grade": result.min_grade,
        "gain": result.gain,
        "run": result.run_name,
        "n_queries": len(result.qids),
        "missing_from_run": len(result.missing_from_run),
        "missing": result.missing,
        "not_in_qrels": result.not_in_qrels,
        "duplicates": result.duplicates,
        "queries": queries,
        "mean": mean,
        "undefined": undefined,
    }


def metrics_json_text(result: Evaluation, coverage: Mapping[str, float | None] | None = None) -> str:
    """``dumps(metrics_json(result, coverage))``, the same text, with the per-query lines written a
    column at a time: each distinct value of a column is turned into JSON once (``json.dumps``, so
    every number reads as it does there) and the lines are joined by Arrow, not 10,000 ``dict`` s
    each encoded alone (10 measures x 10,000 queries: 38 ms against 72 ms of CPU, #42)."""
    queries: Any = _Rendered(_query_lines(result, coverage)) if result.qids else {}
    return dumps(_metrics_document(result, queries))


class _Rendered(str):
    """A ``one_line`` entry of :func:`dumps` already written: its lines, without the braces."""


def _query_lines(result: Evaluation, coverage: Mapping[str, float | None] | None) -> str:
    """The lines under "queries" in :func:`metrics_json`'s order of keys and rows."""
    qids = result.qids
    plain = " ".join(qids)
    if json.dumps(plain) == f'"{plain}"':  # no id needs an escape: each is itself in quotes
        keys = pc.binary_join_element_wise('    "', arrow(qids, pa.string()), '": {"rel": ', "")
    else:
        keys = arrow([f'    {json.dumps(qid)}: {{"rel": ' for qid in qids], pa.string())
    parts: list[Any] = [keys, _json_texts(result.num_rel), ', "retrieved": ', _json_texts(result.num_ret)]
    if coverage is not None:  # a few per run: each value as json.dumps writes it
        parts += [', "label_coverage": ', arrow([json.dumps(coverage.get(qid)) for qid in qids], pa.string())]
    for name in result.measures:
        parts += [f", {json.dumps(name)}: ", _json_texts(result.values[name])]
    parts.append("}")
    return ",\n".join(pc.binary_join_element_wise(*parts, "").to_pylist())


def _json_texts(values: np.ndarray) -> pa.Array:
    """Per value, its JSON text as :func:`metrics_json` writes it (a float's ``repr``, NaN as
    null): each distinct value (by its bits: 0.0 and -0.0 apart) written once, then taken."""
    if values.dtype.kind == "f":
        bits = np.ascontiguousarray(values, dtype=np.float64).view(np.uint64)
        distinct, inverse = np.unique(bits, return_inverse=True)
        numbers = distinct.view(np.float64)
        texts = list(map(float.__repr__, numbers.tolist()))  # json.dumps' text of a finite float
        for at in np.flatnonzero(~np.isfinite(numbers)).tolist():
            value = float(numbers[at])
            texts[at] = json.dumps(value) if value == value else "null"
    else:
        distinct, inverse = np.unique(values, return_inverse=True)
        texts = [json.dumps(v) for v in distinct.tolist()]
    return pc.take(arrow(texts, pa.string()), arrow(inverse.astype(np.int32, copy=False).ravel()))


def dumps(data: Mapping[str, Any], one_line: tuple[str, ...] = ("queries",)) -> str:
    """JSON for people and scripts: top-level keys indented, one entry per line
    under ``one_line`` keys (a run of 10,000 queries stays readable and fast)."""
    parts = []
    for key, value in data.items():
        if isinstance(value, _Rendered):
            parts.append(f"  {json.dumps(key)}: {{\n{value}\n  }}")
        elif key in one_line and isinstance(value, Mapping) and value:
            inner = ",\n".join(f"    {json.dumps(k)}: {json.dumps(v)}" for k, v in value.items())
            parts.append(f"  {json.dumps(key)}: {{\n{inner}\n  }}")
        else:
            parts.append(f"  {json.dumps(key)}: {json.dumps(value)}")
    return "{\n" + ",\n".join(parts) + "\n}\n"


def metrics_trec(result: Evaluation) -> str:
    """What ``trec_eval -q [-c] [-lG] -m num_ret -m num_rel -m num_rel_ret -m map
    -m recip_rank -m P.K -m recall.K -m ndcg_cut.K`` prints, in its order.

    trec_eval conventions: undefined values are 0 and averaged in; with
    ``missing="zero"`` the absent queries are not printed but count in
    ``num_q``, ``num_rel`` and the means (trec_eval -c). A golden.yaml query
    with no judgments has no line in a qrels file, so trec_eval never sees
    it: it is left out here too.
    """
    names = (
        [("map", AP), ("recip_rank", RR)]
        + [(f"P_{k}", Measure("P", k)) for k in result.ks]
        + [(f"recall_{k}", Measure("R", k)) for k in result.ks]
        + [(f"ndcg_cut_{k}", Measure("nDCG", k)) for k in result.ks]
    )
    known = result.num_judged > 0
    values = {ours: np.nan_to_num(result.values[ours][known], nan=0.0) for _, ours in names}
    qids = [qid for qid, keep in zip(result.qids, known) if keep]
    num_ret, num_rel = result.num_ret[known], result.num_rel[known]
    num_rel_ret, evaluated = result.num_rel_ret[known], result.evaluated[known]
    lines: list[str] = []

    def _line(name: str, qid: str, value: str) -> None:
        lines.append(f"{name:<22}\t{qid}\t{value}\n")

    for i in np.flatnonzero(evaluated):  # trec_eval's measure order
        _line("num_ret", qids[i], str(int(num_ret[i])))
        _line("num_rel", qids[i], str(int(num_rel[i])))
        _line("num_rel_ret", qids[i], str(int(num_rel_ret[i])))
        for trec_name, ours in names:
            _line(trec_name, qids[i], f"{values[ours][i]:.4f}")
    n = len(qids)
    _line("runid", "all", result.run_name)
    _line("num_q", "all", str(n))
    _line("num_ret", "all", str(int(num_ret.sum())))
    _line("num_rel", "all", str(int(num_rel.sum())))
    _line("num_rel_ret", "all", str(int(num_rel_ret.sum())))
    for trec_name, ours in names:
        _line(trec_name, "all", f"{(values[ours].sum() / n if n else 0.0):.4f}")
    return "".join(lines)


COVERAGE_UNKNOWN = "label coverage unknown: give --corpus FILE or --corpus-size N"


def metrics_table(
    result: Evaluation,
    qrels_path: str = "",
    run_path: str = "",
    coverage: Mapping[str, float | None] | None = None,
    verbose: bool = False,
    corpus_size: int | None = None,
) -> str:
    """Aligned per-query table; every recall with |Rel| and its ceiling; label coverage when the
    corpus size is known (``coverage``, with a line naming its denominator, ``corpus_size``), else a
    line saying it is unknown; the run's repeated ids as one line with a few of its queries (every
    one when ``verbose``)."""
    ks = result.ks
    header = ["query", "|Rel|", "ret"] + (["coverage"] if coverage is not None else [])
    for k in ks:
        header += [f"P@{k}", "(ceil)", f"R@{k}", "(ceil)"]
    header += ["RR"] + [f"nDCG@{k}" for k in ks] + ["AP"] + [f"Success@{k}" for k in ks]
    rows: list[list[str]] = []
    for i, qid in enumerate(result.qids):
        n_rel = int(result.num_rel[i])
        row = [qid, str(n_rel), str(int(result.num_ret[i]))]
        if coverage is not None:
            row.append(_num(coverage.get(qid), 3))
        for k in ks:
            row += [
                _num(result.values[Measure("P", k)][i], 3),
                f"({precision_ceiling(k, n_rel):.3f})",
                _num(result.values[Measure("R", k)][i], 3),
                f"({recall_ceiling(k, n_rel):.3f})" if n_rel else "(undef)",
            ]
        row += [_num(result.values[RR][i], 3)]
        row += [_num(result.values[Measure("nDCG", k)][i], 3) for k in ks]
        row += [_num(result.values[AP][i], 3)]
        row += [_num(result.values[Measure("Success", k)][i], 3) for k in ks]
        rows.append(row)
    n = len(result.qids)
    mean_row = ["mean", "", ""]
    undef_row = ["undefined", "", ""]
    if coverage is not None:
        defined = [v for v in coverage.values() if v is not None]
        mean_row.append(_num(sum(defined) / len(defined) if defined else None, 3))
        undef_row.append(f"{len(coverage) - len(defined)}/{n}")
    for k in ks:
        p, r = Measure("P", k), Measure("R", k)
        mean_row += [_num(result.mean(p), 3), "", _num(result.mean(r), 3), ""]
        undef_row += [f"{result.undefined(p)}/{n}", "", f"{result.undefined(r)}/{n}", ""]
    for name in [RR, *(Measure("nDCG", k) for k in ks), AP, *(Measure("Success", k) for k in ks)]:
        mean_row.append(_num(result.mean(name), 3))
        undef_row.append(f"{result.undefined(name)}/{n}")
    out = [
        f"metrics of run {result.run_name!r}"
        + (f" ({run_path})" if run_path else "")
        + (f" against {qrels_path}" if qrels_path else ""),
        f"relevant = grade >= {result.min_grade}; nDCG gain {result.gain}; "
        f"k = {', '.join(map(str, ks))}; repeated ids: {REPEAT_RULE}",
        "",
        align([header] + rows + [mean_row, undef_row]),
        "",
        f"means are over the queries where each measure is defined; 'undefined' = queries "
        f"left out of that mean (no judged relevant document) of {n} evaluated",
    ]
    if coverage is None:
        notes = [COVERAGE_UNKNOWN]
    else:
        notes = [coverage_denominator(corpus_size)] if corpus_size is not None else []
    if result.missing_from_run:
        verb = (
            "scored 0" if result.missing == "zero" else "not evaluated (use --missing zero to score them 0)"
        )
        notes.append(f"{len(result.missing_from_run)} queries of the qrels are missing from the run: {verb}")
    if result.not_in_qrels:
        notes.append(f"{result.not_in_qrels} queries of the run have no judgments: ignored")
    repeats = repeats_group(result.duplicates, int(result.evaluated.sum()) + result.not_in_qrels, ks[0])
    if repeats is not None:
        notes += group_text(repeats, verbose, tag=False, indent="")
    out += notes
    return "\n".join(out) + "\n"


# ---------------------------------------------------------------- audit


NAMED = 5  # queries a sentence names before it says how many more


def inflation_text(report: AuditReport) -> str:
    """What the capped denominator min(|Rel|, k) would have said, and whether that is an inflation:
    "inflated" only when it differs (the CLI's and the page's sentence)."""
    k = report["k"]
    honest, capped = report["summary"]["mean_recall"], report["summary"]["mean_recall_capped"]
    if honest is None or capped is None:
        return f"mean R@{k} is undefined (no query has a judged relevant document)"
    if abs(capped - honest) < 1e-12:
        return (
            f"the capped denominator min(|Rel|, k) gives the same mean R@{k} here, {num(honest, 3)}: "
            f"no query has more relevant chunks than k = {k}"
        )
    above = [qid for qid, q in report["queries"].items() if "rel_above_k" in q["findings"]]
    named = ", ".join(above[:NAMED]) + (
        f" and {len(above) - NAMED:,} more queries" if len(above) > NAMED else ""
    )
    return (
        f"with the capped denominator min(|Rel|, k) mean R@{k} would read {num(capped, 3)} instead of "
        f"{num(honest, 3)} (+{capped - honest:.3f}, inflated), by hiding that {named} "
        f"{'has' if len(above) == 1 else 'have'} more relevant chunks than k = {k}: shown only to measure "
        "the inflation, it is not a recall"
    )


def audit_table(result: AuditReport, qrels_path: str = "", run_path: str = "", verbose: bool = False) -> str:
    """The audit's table, its means, then the findings one line per kind with a few of its
    queries (every one when ``verbose``), then the gates."""
    k = result["k"]
    header = [
        "query",
        "|Rel|",
        f"R@{k}",
        "ceiling",
        "share",
        "capped",
        f"P@{k}",
        "ceiling",
        "judged@k",
        "coverage",
        "hits pos/dist",
        "R@fetch",
        "lost",
        "R(truth)",
    ]
    rows = []
    for qid, q in result["queries"].items():
        rows.append(
            [
                qid,
                str(q["rel"]),
                _num(q["recall"], 3),
                _num(q["recall_ceiling"], 3),
                _num(q["share_of_ceiling"], 3),
                _num(q["recall_capped"], 3),
                _num(q["precision"], 3),
                _num(q["precision_ceiling"], 3),
                _num(q["judged_at_k"], 3),
                "n/a" if q["label_coverage"] is None else f"{q['label_coverage']:.3f}",
                f"{q['positional_hits']}/{q['distinct_hits']}",
                # n/a: no stage 1; undef: a stage-1 figure that is undefined (nothing relevant: #43)
                "n/a" if result["fetch_depth"] is None else _num(q["recall_at_fetch"], 3),
                "n/a" if result["fetch_depth"] is None else _num(q["lost_after_fetch"], 3),
                "n/a" if q["recall_true"] is None else _num(q["recall_true"], 3),
            ]
        )
    s = result["summary"]
    n = s["n_queries"]
    lines = [
        f"audit at k = {k}"
        + (f" of {run_path}" if run_path else "")
        + (f" against {qrels_path}" if qrels_path else "")
        + f"; relevant = grade >= {result['min_grade']}",
        "",
        align([header] + rows),
        "",
        f"mean recall@{k} = {_num(s['mean_recall'], 3)} over {n - s['undefined']} of {n} queries "
        f"({s['undefined']} undefined, left out)",
        inflation_text(result),
    ]
    if s["missing_from_run"]:
        lines.append(f"{s['missing_from_run']} queries of the qrels are missing from the run: not audited")
    if "provenance" in result:  # golden.yaml's provenance pooled every label from this run
        lines.append(f"stage-1 recall is {result['provenance']}")
    lines.append("")
    groups = group_findings(result)
    lines.append("findings, by kind:" if groups else "findings:")
    for group in groups:
        lines += group_text(group, verbose)
    if not groups:
        lines.append("  none")
    if "duplicates_by" in result:  # which duplicates were looked for
        lines.append(BY_TEXT if result["duplicates_by"] == "id and text" else BY_ID_ONLY)
    if result["gates"]:
        lines.append("")
        lines.append("gates:")
        for gate in result["gates"]:
            status = "passed" if gate["passed"] else f"FAILED for {', '.join(gate['queries'])}"
            bar = f" ({gate['bar']})" if gate.get("bar") else ""
            lines.append(f"  {gate['rule']}{bar}: {status}")
        lines.append("result: " + ("all gates passed" if result["passed"] else "a gate failed (exit 1)"))
    return "\n".join(lines) + "\n"


def estimate_summary_line(estimates: EstimateReport) -> str:
    """The estimate over queries in one sentence, every figure with what it rests on."""
    s, k = estimates["summary"], estimates["k"]
    if not s["n_defined"]:
        return f"Over queries: no query has both a judged and an estimated R@{k} (0 of {s['n_queries']})."
    low, high = s["recall_estimated_mean_ci"]
    how = (
        f"95% bootstrap over queries, {s['n_boot']} resamples"
        if s["interval_over_queries"] == "bootstrap over queries"
        else "the one query's own 95% interval"
    )
    return (
        f"Over the {s['n_defined']} of {s['n_queries']} queries where both are defined: mean R@{k} judged "
        f"{s['recall_judged_mean']:.3f} (against {s['rel_judged_total']} judged relevant), estimated "
        f"{s['recall_estimated_mean']:.3f} [{low:.3f}, {high:.3f}] ({how}; against "
        f"{s['rel_estimated_total']:.1f} estimated relevant); "
        f"{s['n_sampled_relevant']} relevant of {s['n_sampled']} sampled labels; "
        f"labels_incomplete_estimated on {s['n_flagged']} of {s['n_queries']} queries."
    )


def sampled_labels(e: Mapping[str, Any], unit: str = "") -> str:
    """What one query's estimate rests on: ``2 relevant of 6 sampled labels (1 drawn, not labelled)``."""
    undrawn = e["n_drawn"] - e["n_sampled"]
    return f"{e['n_sampled_relevant']} relevant of {e['n_sampled']}{unit}" + (
        f" ({undrawn} drawn, not labelled)" if undrawn > 0 else ""
    )


# ---------------------------------------------------------------- the estimate


def design_text(design: Any) -> str:
    """golden.yaml's design in a line: ``depth 10; strata 50,100,1000; corpus True; ...``."""
    if not isinstance(design, dict):
        return "not recorded" if design is None else str(design)
    return "; ".join(
        f"{key} {','.join(map(str, value)) if isinstance(value, list) else value}"
        for key, value in design.items()
    )


def estimate_table(estimates: EstimateReport) -> str:
    k = estimates["k"]
    rows = [
        [
            "query",
            f"R@{k} judged",
            "|Rel| judged",
            f"R@{k} estimated",
            "95% CI",
            "|Rel| estimated",
            "95% CI",
            "sampled",
        ]
    ]
    for qid, e in estimates["queries"].items():
        rows.append(
            [
                qid,
                num(e["recall_judged"]),
                str(e["rel_judged"]),
                num(e["recall_estimated"]),
                interval(e["recall_ci"]) if e["recall_ci"] else "-",
                num(e["rel_estimated"], 1),
                interval(e["rel_ci"], 1) if e["rel_ci"] else "-",
                sampled_labels(e, " sampled labels"),
            ]
        )
    flagged = [qid for qid, e in estimates["queries"].items() if e["labels_incomplete_estimated"]]
    lines = [
        "",
        f"Estimated from the sample of unjudged candidates (design: {design_text(estimates['design'])}; "
        f"{'mid-p' if estimates['interval'] == 'midp' else 'exact'} 95% intervals):",
        align(rows),
        estimate_summary_line(estimates),
    ]
    lines += [f"{qid}: undefined: {e['reason']}" for qid, e in estimates["queries"].items() if e["reason"]]
    if estimates.get("note"):
        lines.append(estimates["note"])
    lines += [
        f"{qid}: labels_incomplete_estimated: judged R@{k} {estimates['queries'][qid]['recall_judged']:.3f} lies "
        "outside the estimated interval; the labels miss relevant chunks"
        for qid in flagged
    ]
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------- compare


def compare_json(comparison: Comparison, qrels_path: str, run_a: str, run_b: str) -> dict[str, Any]:
    return {
        "qrels": qrels_path,
        "run_a": run_a,
        "run_b": run_b,
        "min_grade": comparison.min_grade,
        "measures": comparison.measures,
        "queries": comparison.queries,
        "notes": comparison.notes,
    }


def compare_table(comparison: Comparison, qrels_path: str, run_a: str, run_b: str) -> str:
    header = ["measure", "n", "A", "B", "B - A", "wins/losses/ties", "p (randomization)", "p (t-test)"]
    rows = [header]
    notes = []
    for name, t in comparison.measures.items():
        rows.append(
            [
                name,
                f"{t['n']}" + (f" (+{t['left_out']} undef)" if t["left_out"] else ""),
                num(t["mean_a"], 4),
                num(t["mean_b"], 4),
                signed(t["delta"], 4),
                f"{t['wins']}/{t['losses']}/{t['ties']}",
                num(t["p_randomization"], 4),
                num(t["p_ttest"], 4),
            ]
        )
        if t["undefined_reason"]:
            notes.append(f"{name}: no p-value: {t['undefined_reason']}")
    measures = list(comparison.measures)
    per_query = [["query", *[f"d {m}" for m in measures]]]
    for qid, row in comparison.queries.items():
        per_query.append([qid, *(signed(row[m]) for m in measures)])
    lines = [
        f"A = {run_a}, B = {run_b}, judged by {qrels_path}; relevant = grade >= {comparison.min_grade}; "
        f"n = queries where the measure is defined for both runs; wins = queries where B is higher; "
        f"randomization test: {comparison.permutations} sign flips, seed {comparison.seed}; both tests two-sided",
        "",
        align(rows),
        *notes,
        *[f"note: {note}" for note in comparison.notes],
        "",
        *unjudged_lines(comparison, qrels_path, run_a, run_b),
        "",
        "per query, B - A:",
        align(per_query),
    ]
    return "\n".join(lines) + "\n"


def _top(depth: int | None) -> str:
    return f"top {depth}" if depth is not None else "ranking"


def unjudged_lines(comparison: Comparison, qrels_path: str, run_a: str, run_b: str) -> list[str]:
    """What of each measure's B - A sits on chunks nobody judged (``calibration.unjudged``): per
    measure the interval and the chunks, then one line per difference they could undo, saying
    what to label."""
    shares = {name: t["unjudged"] for name, t in comparison.measures.items() if "unjudged" in t}
    tops = " or ".join(dict.fromkeys(_top(s["depth"]) for s in shares.values()))
    if not any(s["chunks_a"] or s["chunks_b"] for s in shares.values()):
        return [
            f"unjudged chunks: none in either run's {tops}; every difference above rests on judged chunks"
        ]
    grade = max(comparison.min_grade, 1)
    lines = [
        f"unjudged chunks (not relevant in the table above): per measure, B - A [the least, the greatest] "
        f"with them relevant (grade {grade}) or not, and how many sit in each run's top k (RR, AP: the "
        "deepest k) over its n queries; exact for P, R and Success, the 8 group fillings for the others "
        "(docs/metrics.md, unjudged chunks in compare):"
    ]
    undo = []
    for name, s in shares.items():
        delta = comparison.measures[name]["delta"]
        if not (s["chunks_a"] or s["chunks_b"]) or s["interval"] is None:
            continue
        low, high = s["interval"]
        reach = (
            "they do not move it"
            if high - low <= 1e-12
            else "the sign could flip"
            if s["sign_could_flip"]
            else "holds 0"
            if s["holds_zero"]
            else "keeps its sign"
        )
        lines.append(
            f"{name}: {signed(delta, 4)} [{signed(low, 4)}, {signed(high, 4)}]: A {s['chunks_a']:,}, "
            f"B {s['chunks_b']:,} unjudged on {s['queries']:,} of {comparison.measures[name]['n']:,} queries; {reach}"
        )
        if s["sign_could_flip"] or (s["holds_zero"] and abs(delta or 0.0) > 1e-12):
            undo.append((name, s, delta))
    for name, s, delta in undo:
        lines.append(
            f"B's {signed(delta, 4)} {name}: {s['chunks_b']:,} unjudged chunks in B's {_top(s['depth'])} "
            f"(A: {s['chunks_a']:,}); relevant or not, they put B - A between {signed(s['interval'][0], 4)} "
            f"and {signed(s['interval'][1], 4)}, which holds 0 "
            f"({'the sign could flip' if s['sign_could_flip'] else 'the difference could vanish'}); "
            "label them or use --judge-labels"
        )
    depths = sorted({s["depth"] for _, s, _ in undo if s["depth"] is not None})
    if depths:
        lines.append(
            "the chunks to label, per query: "
            f"python -m calibration holes {qrels_path} {run_a} {run_b} -k {depths[-1]}"
        )
    return lines


# ---------------------------------------------------------------- agreement, position, PPI


def scale_text(labels: list[Any]) -> str:
    """The scale an agreement was computed on, as printed by every face: ``0, 1, 2, 3``."""
    return ", ".join(str(v) for v in labels)


def agree_table(report: AgreementReport) -> str:
    """``agree``'s text: the pairs' table, each pair's design under its row (issue #39), the notes."""
    # start-up: the design's words live beside the verdict (numpy, scipy.special), only for agree's text
    from calibration.stats.judged import design_line

    bar = report["verdict_thresholds"]["trusted"]
    # start-up: the pair's counts, in the Agreement page's words
    from calibration.review_text import same_grade

    rows = [["raters", "n", "same grade", "kappa", "95% CI", "linear", "quadratic", "verdict"]]
    notes = []
    designs = []
    for pair in report["pairs"]:
        raters = " vs ".join(map(str, pair["raters"]))
        rows.append(
            [
                raters,
                str(pair["n"]),
                same_grade(pair),
                decisive(pair["kappa"], bar),
                interval(pair.get("kappa_ci")),
                decisive(pair["kappa_linear"], bar),
                decisive(pair["kappa_quadratic"], bar),
                pair["verdict"],
            ]
        )
        designs.append(f"  design: {design_line(cast(Any, pair))}" if pair.get("design") else "")
        if pair["verdict"] == "uncalibrated":
            notes.append(f"{raters}: uncalibrated: {pair.get('reason')}; {pair['advice']}")
        elif pair["verdict"] in ("undecided", "not trusted"):
            notes.append(f"{raters}: {pair['verdict']}: {pair['advice']}")
    table = align(rows).split("\n")
    shown = [table[0]]
    for row, design in zip(table[1:], designs):
        shown += [row, *([design] if design else [])]
    alpha = report["krippendorff_alpha"]
    clustered = any((p.get("design") or {}).get("queries") is not None for p in report["pairs"])
    assumed = next(
        (
            p["reason"]
            for p in report["pairs"]
            if p.get("reason") and p["verdict"] not in ("uncalibrated", "undefined")
        ),
        None,
    )
    lines = [
        f"{report['n_items']} items, {len(report['raters'])} raters; kappa = Cohen's, 95% CI by the score "
        "interval (deterministic; it does not collapse at perfect agreement)"
        + (", clustered by query where the labels carry one" if clustered else "")
        + f"; verdict on the {report['statistic']} kappa against the bar {bar}: trusted when its interval's "
        "lower end reaches the bar, not trusted when its upper end is below it, else undecided",
        f"scale: {scale_text(report['labels'])}",
        "\n".join(shown),
        *([note] if (note := report.get("pairs_note")) else []),
        *(
            [
                "--sequential: each verdict is its confidence sequence's first decision (below), not the 95% CI's"
            ]
            if any("sequential" in p for p in report["pairs"])
            else []
        ),
        *(
            [f"verdicts: {assumed}"]
            if assumed and not any("sequential" in p for p in report["pairs"])
            else []
        ),
        *notes,
        *[
            f"{' vs '.join(map(str, p['raters']))}: kappa undefined: {p['undefined_reason']}"
            for p in report["pairs"]
            if p.get("undefined_reason")
        ],
        f"Fleiss' kappa: {num(report['fleiss_kappa'])}"
        + (f" ({report['fleiss_undefined_reason']})" if report.get("fleiss_undefined_reason") else "")
        + (
            f" (n = {report['n_items']} items, {m} ratings each)"
            if report["fleiss_kappa"] is not None and (m := report.get("fleiss_ratings_per_item"))
            else ""
        ),
        "Krippendorff's alpha: "
        + ", ".join(f"{level} {num(alpha[level])}" for level in ("nominal", "ordinal", "interval"))
        + (
            f" (n = {report['krippendorff_items']} of {report['n_items']} items: those rated two times or more)"
            if "krippendorff_items" in report
            else ""
        ),
    ]
    for pair in report["pairs"]:
        if "sequential" in pair:
            lines += sequence_lines(" vs ".join(map(str, pair["raters"])), pair["sequential"])
    return "\n".join(lines) + "\n"


SEQUENCE_SHOWN = 10  # agree --sequential's text shows every 10th look (JSON: every look)


def sequence_lines(raters: str, seq: KappaSequence) -> list[str]:
    """``agree --sequential``'s text for one pair: the sequence at every 10th look, the deciding and the
    last look, and the verdict of the first decision."""
    looks, at = seq["looks"], seq["decided_at"]
    head = (
        f"{raters}, read as labelled (the rows' order): kappa's {1 - seq['alpha']:.0%} {seq['method']}, tightest "
        f"near n = {seq['horizon']}, after every label from n = {seq['start']} (every {SEQUENCE_SHOWN}th look "
        f"shown, and the deciding and last); verdict at the bar {seq['bar']}: the first decision, kept"
    )
    rows = [["n", "kappa", "sequence", "verdict"]]
    for i, look in enumerate(looks):
        if (look["n"] - seq["start"]) % SEQUENCE_SHOWN == 0 or look["n"] == at or i == len(looks) - 1:
            low, high = look["low"], look["high"]
            ci = None if low is None or high is None else [low, high]
            mark = " <- decided" if look["n"] == at else ""
            rows.append([str(look["n"]), num(look["kappa"]), interval(ci), look["verdict"] + mark])
    if at is not None:
        last = f"{raters}: decided at n = {at}: {seq['verdict']} (the sequence holds at every look)"
    elif not looks:
        last = f"{raters}: undecided: fewer labels than the first look (n = {seq['start']})"
    else:
        more = f"; about {seq['more_labels']} more labels would decide it" if seq["more_labels"] else ""
        last = f"{raters}: not decided by n = {looks[-1]['n']}: {seq['verdict']}{more}"
    return ["", head, *([align(rows)] if looks else []), last]


def position_json(result: PositionReport, keys: tuple[PositionFigure, ...]) -> dict[str, object]:
    shown: dict[str, object] = {k: result[k] for k in keys}
    return shown | {"counts": {k: v for k, v in result.items() if k not in keys}}


def position_counts(result: PositionReport, key: PositionFigure) -> str:
    """What a figure of ``position`` is a fraction (or a mean) of, from the report's counts:
    ``1 / 2 comparisons``, ``mean over 2 pairs``."""
    n = result.get("n_comparisons", 0)
    if key == "position_consistency":
        return f"{result.get('n_consistent', 0)} / {n} comparisons pick the same candidate in both orders"
    if key == "primacy_rate":
        return f"{result.get('n_primacy', 0)} / {n} comparisons won by the first-shown answer in both orders"
    if key == "recency_rate":
        return f"{result.get('n_recency', 0)} / {n} comparisons won by the second-shown answer in both orders"
    if key == "preference_fairness":
        return (
            f"({result.get('n_recency_preferred', 0)} recency-preferred - {result.get('n_primacy_preferred', 0)} "
            f"primacy-preferred) / {n} comparisons"
        )
    if key == "repetition_stability":
        return (
            f"mean over {result.get('n_repeated_instances', 0)} (pair, order) instances asked more than once"
        )
    return f"mean over {result['n_pairs']} pairs"


def position_text(result: PositionReport, keys: tuple[PositionFigure, ...]) -> str:
    undefined = result.get("undefined") or {}
    lines = [f"{result['n_pairs']} pairs asked in both orders ({result.get('n_comparisons')} comparisons)"]
    for key in keys[1:]:
        value = result[key]
        why = undefined.get(key) if value is None else position_counts(result, key)
        lines.append(f"{key}: {num(value)}" + (f" ({why})" if why else ""))
    return "\n".join(lines) + "\n"


def ppi_design_text(design: PPIDesign) -> str:
    """The design behind a PPI interval in words: "10 queries, 80 labelled items (4 to 12 per
    query), 400 judge-only items in 10 queries (10 shared); design effect 2.31 (people only 3.10);
    critical value t(9)"."""

    def queries(k: int | None) -> str:
        return "" if k is None else f" in {k} {'query' if k == 1 else 'queries'}"

    lo, _, hi = design["items_per_query"] or (None, None, None)
    per = "" if lo is None else f" ({lo:g} per query)" if lo == hi else f" ({lo:g} to {hi:g} per query)"
    deff, human = design["design_effect"], design["human_design_effect"]
    effects = (
        "design effect "
        + ("undefined" if deff is None else f"{deff:.2f}")
        + ("" if human is None else f" (people only {human:.2f})")
    )
    return (
        f"{design['items']} labelled items{queries(design['queries'])}{per}, {design['unlabeled_items']} "
        f"judge-only items{queries(design['unlabeled_queries'])} ({design['shared_queries']} shared); "
        f"{effects}; critical value {design['critical']}"
        + ("" if design["clustered"] else " (no query holds two items: item-level)")
    )


def ppi_text(result: PPIReport, alpha: float, tuned: bool) -> str:
    level = f"{1 - alpha:.0%}"
    human = result["human_only"]
    uncut = result.get("ci_uncut")
    cut = f"the normal interval {interval(uncut, 4)} cut to a pass rate's [0, 1]; " if uncut else ""
    counts = f" ({human['passes']} / {human['n']})" if "passes" in human and "n" in human else ""
    how = f"; {human['how']}" if human.get("how") else ""
    text = (
        f"PPI{'++' if tuned else ''} estimate {result['estimate']:.4f}, {level} CI "
        f"{interval(result['ci'], 4)} ({cut}lambda {result['lam']:.3f}; "
        f"{result['n_labeled']} items graded by people and the judge, {result['n_unlabeled']} by the judge alone)\n"
        f"people only: {human['estimate']:.4f}{counts}, {level} CI {interval(human['ci'], 4)} "
        f"(n = {result['n_labeled']}{how})\n"
    )
    if result.get("few_labels"):
        text += f"few labels: {result['few_labels']}\n"
    design = result.get("design")
    if design is not None and (design["queries"] is not None or design["unlabeled_queries"] is not None):
        text += f"design: {ppi_design_text(design)}\n"
    if result.get("weak_note"):
        text += f"PPI cannot help here: {result['weak_note']}\n"
    rg = result.get("rogan_gladen")
    if rg is None:
        return text
    if rg["estimate"] is None:
        return text + f"Rogan-Gladen (pass/fail): undefined: {rg['reason']}\n"
    return text + (
        f"Rogan-Gladen (pass/fail): {rg['estimate']:.4f}, {level} CI {interval(rg['ci'], 4)}: the judge's pass "
        f"rate {rg['judge_pass_rate']:.4f} over {rg['n_unlabeled']} items corrected by its tpr {rg['tpr']:.3f} and "
        f"tnr {rg['tnr']:.3f} against people on {rg['n_labeled']} items\n"
    )


# ---------------------------------------------------------------- the weekly review


def review_text(
    report: ReviewReport,
    drawn: ReviewSample | None,
    summary: list[tuple[str, list[str]]],
    superseded: str = "",
) -> str:
    lines = [f"judge review, week {report['week']}"]
    if drawn:
        strata = ", ".join(f"{k}: {v}" for k, v in sorted(drawn["strata"].items()))
        lines.append(
            f"sampled {drawn['sampled']} of {drawn['of']} traces for week {drawn['week']}"
            + (f" ({strata})" if strata else "")
            + (f", assigned to {', '.join(drawn['annotators'])}" if drawn["annotators"] else "")
        )
        if drawn.get("chunks_sampled"):
            lines.append(
                f"sampled {drawn['chunks_sampled']} of {drawn['chunks_of']} chunks the relevance judge graded "
                f"({', '.join(f'{k}: {v}' for k, v in sorted(drawn['chunk_strata'].items()))})"
            )
    if not report["judges"]:
        lines.append("no judge has graded anything yet")
    for heading, body in summary:
        lines += ["", heading, *[f"  {line}" for line in body]]
    if superseded:
        lines += ["", superseded]
    return "\n".join(lines) + "\n"
