"""Renderings of an evaluation and an audit: JSON, trec_eval's text, tables for people.

Every figure in a table carries its denominator: |Rel| and the ceiling beside
each recall, k beside each precision, the number of queries and how many
were left out (undefined) beside each mean. Undefined is printed as
``undef``, never as 0 (except in the ``trec`` rendering, which copies
trec_eval's conventions so the two outputs diff clean).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import numpy as np

from calibration.audit import finding_text, precision_ceiling, recall_ceiling
from calibration.metrics import Evaluation

MEAN_NAMES = {"RR": "MRR", "AP": "MAP"}


def _mean_name(name: str) -> str:
    return MEAN_NAMES.get(name, name)


def _num(value: float | None, digits: int = 4) -> str:
    return (
        "undef" if value is None or (isinstance(value, float) and np.isnan(value)) else f"{value:.{digits}f}"
    )


# ---------------------------------------------------------------- metrics


def metrics_json(result: Evaluation) -> dict[str, Any]:
    columns = {
        name: [None if v != v else v for v in result.values[name].tolist()]  # NaN -> None
        for name in result.measures
    }
    rel = result.num_rel.tolist()
    retrieved = result.num_ret.tolist()
    queries: dict[str, Any] = {}
    for i, qid in enumerate(result.qids):
        row: dict[str, Any] = {"rel": rel[i], "retrieved": retrieved[i]}
        for name in result.measures:
            row[name] = columns[name][i]
        queries[qid] = row
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


def dumps(data: Mapping[str, Any], one_line: tuple[str, ...] = ("queries",)) -> str:
    """JSON for people and scripts: top-level keys indented, one entry per line
    under ``one_line`` keys (a run of 10,000 queries stays readable and fast)."""
    parts = []
    for key, value in data.items():
        if key in one_line and isinstance(value, Mapping) and value:
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
        [("map", "AP"), ("recip_rank", "RR")]
        + [(f"P_{k}", f"P@{k}") for k in result.ks]
        + [(f"recall_{k}", f"R@{k}") for k in result.ks]
        + [(f"ndcg_cut_{k}", f"nDCG@{k}") for k in result.ks]
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


def metrics_table(result: Evaluation, qrels_path: str = "", run_path: str = "") -> str:
    """Aligned per-query table; every recall with |Rel| and its ceiling."""
    ks = result.ks
    header = ["query", "|Rel|", "ret"]
    for k in ks:
        header += [f"P@{k}", "(ceil)", f"R@{k}", "(ceil)"]
    header += ["RR"] + [f"nDCG@{k}" for k in ks] + ["AP"] + [f"Success@{k}" for k in ks]
    rows: list[list[str]] = []
    for i, qid in enumerate(result.qids):
        n_rel = int(result.num_rel[i])
        row = [qid, str(n_rel), str(int(result.num_ret[i]))]
        for k in ks:
            row += [
                _num(result.values[f"P@{k}"][i], 3),
                f"({precision_ceiling(k, n_rel):.3f})",
                _num(result.values[f"R@{k}"][i], 3),
                f"({recall_ceiling(k, n_rel):.3f})" if n_rel else "(undef)",
            ]
        row += [_num(result.values["RR"][i], 3)]
        row += [_num(result.values[f"nDCG@{k}"][i], 3) for k in ks]
        row += [_num(result.values["AP"][i], 3)]
        row += [_num(result.values[f"Success@{k}"][i], 3) for k in ks]
        rows.append(row)
    n = len(result.qids)
    mean_row = ["mean", "", ""]
    undef_row = ["undefined", "", ""]
    for k in ks:
        mean_row += [_num(result.mean(f"P@{k}"), 3), "", _num(result.mean(f"R@{k}"), 3), ""]
        undef_row += [f"{result.undefined(f'P@{k}')}/{n}", "", f"{result.undefined(f'R@{k}')}/{n}", ""]
    for name in ["RR"] + [f"nDCG@{k}" for k in ks] + ["AP"] + [f"Success@{k}" for k in ks]:
        mean_row.append(_num(result.mean(name), 3))
        undef_row.append(f"{result.undefined(name)}/{n}")
    out = [
        f"metrics of run {result.run_name!r}"
        + (f" ({run_path})" if run_path else "")
        + (f" against {qrels_path}" if qrels_path else ""),
        f"relevant = grade >= {result.min_grade}; nDCG gain {result.gain}; "
        f"k = {', '.join(map(str, ks))}; a repeated document counts once",
        "",
        _align([header] + rows + [mean_row, undef_row]),
        "",
        f"means are over the queries where each measure is defined; 'undefined' = queries "
        f"left out of that mean (no judged relevant document) of {n} evaluated",
    ]
    notes = []
    if result.missing_from_run:
        verb = (
            "scored 0" if result.missing == "zero" else "not evaluated (use --missing zero to score them 0)"
        )
        notes.append(f"{len(result.missing_from_run)} queries of the qrels are missing from the run: {verb}")
    if result.not_in_qrels:
        notes.append(f"{result.not_in_qrels} queries of the run have no judgments: ignored")
    for qid, ids in result.duplicates.items():
        notes.append(f"{qid}: repeated ids {', '.join(ids)} counted once, at their first rank")
    out += notes
    return "\n".join(out) + "\n"


def _align(rows: list[list[str]]) -> str:
    widths = [max(len(r[c]) for r in rows) for c in range(len(rows[0]))]
    lines = []
    for r in rows:
        cells = [r[0].ljust(widths[0])] + [cell.rjust(w) for cell, w in zip(r[1:], widths[1:])]
        lines.append("  ".join(cells).rstrip())
    return "\n".join(lines)


# ---------------------------------------------------------------- audit


def audit_table(result: Mapping[str, Any], qrels_path: str = "", run_path: str = "") -> str:
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
                "n/a" if q["recall_at_fetch"] is None else _num(q["recall_at_fetch"], 3),
                "n/a" if q["lost_after_fetch"] is None else _num(q["lost_after_fetch"], 3),
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
        _align([header] + rows),
        "",
        f"mean recall@{k} = {_num(s['mean_recall'], 3)} over {n - s['undefined']} of {n} queries "
        f"({s['undefined']} undefined, left out)",
        f"with the capped denominator min(|Rel|, k) it would read {_num(s['mean_recall_capped'], 3)} "
        "(inflated: shown only to measure the inflation)",
    ]
    if s["missing_from_run"]:
        lines.append(f"{s['missing_from_run']} queries of the qrels are missing from the run: not audited")
    lines.append("")
    lines.append("findings:")
    any_finding = False
    for qid, q in result["queries"].items():
        for code in q["findings"]:
            any_finding = True
            lines.append(f"  {qid}: [{code}] {finding_text(code, q, k)}")
    if not any_finding:
        lines.append("  none")
    if result["gates"]:
        lines.append("")
        lines.append("gates:")
        for gate in result["gates"]:
            status = "passed" if gate["passed"] else f"FAILED for {', '.join(gate['queries'])}"
            lines.append(f"  {gate['rule']}: {status}")
        lines.append("result: " + ("all gates passed" if result["passed"] else "a gate failed (exit 1)"))
    return "\n".join(lines) + "\n"


def estimate_summary_line(estimates: dict[str, Any]) -> str:
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
