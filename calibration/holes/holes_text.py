"""How the holes and the judge-filled metrics are said (pure): ``python -m calibration holes`` as
a table or CSV, ``metrics --judge-labels`` as text. Every figure with what it is a fraction of."""

from __future__ import annotations

import csv
import io
from typing import Any, cast

from calibration.results import (
    CorrectedFigure,
    FilledComparison,
    FilledReport,
    HoleSampleInfo,
    HolesReport,
    JudgeAgreement,
)

__all__ = [
    "check_holes_text",
    "judged_at_k_text",
    "judged_cell",
    "holes_table",
    "holes_csv",
    "graded_by",
    "filled_text",
    "compare_filled_text",
    "uncorrected_note",
    "figure_text",
    "corrected_text",
]

SHOWN_HOLES = 8  # ids listed per query in the table; the rest counted


def _share(part: int, whole: int) -> str:
    return f"{part / whole:.2f} = {part} / {whole}" if whole else f"undefined ({part} / 0)"


def judged_at_k_text(report: HolesReport) -> str:
    """judged@k of the report, said with what it is a fraction of: the judged positions over the
    positions the rankings fill (min(k, retrieved) per query and run, the audit's denominator), and,
    when that is not k x queries, why (a ranking shorter than k; a repeated id, whose second slot is
    filled but neither judged nor a hole)."""
    k = report["k"]
    positions, filled = report["positions"], report["filled_positions"]
    repeated = report["repeated_positions"]
    text = f"judged@{k} {_share(report['judged_positions'], filled)}"
    if filled == positions and not repeated:
        return text
    runs = len(report["runs"])
    times = f"{report['n_queries']:,} queries x {k}" + (f" x {runs} runs" if runs > 1 else "")
    notes = []
    if filled < positions:
        empty = positions - filled
        notes.append(
            f"{empty:,} of the {positions:,} positions ({times}) {'is' if empty == 1 else 'are'} empty, "
            f"the rankings being shorter than {k}, and judged@k divides by the {filled:,} filled, "
            "as the audit's does"
        )
    if repeated:
        notes.append(
            f"{repeated:,} {'repeats' if repeated == 1 else 'repeat'} an id ranked higher: "
            "a filled position, neither judged nor a hole"
        )
    return f"{text}: " + "; ".join(notes)


def unjudged_text(report: HolesReport) -> str:
    """How many positions are holes, over the positions they are a part of: the filled ones when
    a ranking is shorter than k ("23 of the 40 filled positions"), else all k x queries."""
    unjudged, positions, filled = (
        report["unjudged_positions"],
        report["positions"],
        report["filled_positions"],
    )
    if filled < positions:
        return f"{unjudged:,} of the {filled:,} filled positions"
    return f"{unjudged:,} of {positions:,} positions"


def judged_cell(judged: int, filled: int) -> str:
    """One query's judged@k for one run: judged / the positions its ranking fills."""
    return f"{judged} / {filled} ({judged / filled:.2f})" if filled else f"{judged} / 0 (empty ranking)"


def holes_table(report: HolesReport) -> str:
    k = report["k"]
    runs = " and ".join(report["runs"])
    lines = [
        f"Holes in the top {k} of {runs} against {report['judgments']}: "
        f"{unjudged_text(report)} over {report['n_queries']:,} queries are unjudged ({judged_at_k_text(report)})"
        + (f"; {report['holes']:,} distinct chunks." if len(report["runs"]) > 1 else "."),
    ]
    if report["not_shared"]:
        lines.append(
            f"{report['not_shared']:,} queries of the run{'s' if len(report['runs']) > 1 else ''} are not in "
            "the judgments (or not in every run): not listed."
        )
    sampled = set(report["sample"]["queries"]) if report["sample"] else set()
    width = max([len("query")] + [len(q) for q in report["queries"]])
    label = f"judged@{k}" + (" per run" if len(report["runs"]) > 1 else "")
    cells = {
        qid: (
            judged_cell(row["judged"][0], row["filled"][0])
            if len(row["judged"]) == 1
            else ", ".join(f"{j} / {f}" for j, f in zip(row["judged"], row["filled"]))
        )
        for qid, row in report["queries"].items()
    }
    column = max([len(label)] + [len(c) for c in cells.values()])
    lines += ["", f"{'query':<{width}}  {label:<{column}}  holes"]
    for qid, row in report["queries"].items():
        ids = ", ".join(row["holes"][:SHOWN_HOLES])
        more = len(row["holes"]) - SHOWN_HOLES
        if more > 0:
            ids += f" (+{more} more)"
        mark = "  [sampled]" if qid in sampled else ""
        lines.append(f"{qid:<{width}}  {cells[qid]:<{column}}  {ids or '-'}{mark}")
    info = report["sample"]
    if info is not None:
        lines += [
            "",
            f"Sample: {info['n']} of the {info['population']} queries, drawn uniformly (seed {info['seed']}); "
            f"their {info['holes']:,} holes are for people to label.",
        ]
        if info["file"]:
            lines.append(
                f"Written to {info['file']} (golden.yaml with the sampling design): put people's grades in it "
                f"(their names under judged_by), or queue the holes in the app with python -m annotation pool --holes "
                f"{info['file']}; then metrics --judge-labels J --hole-sample {info['file']}."
            )
        else:
            lines.append("Not written: --out FILE records it (golden.yaml's sampling section).")
    return "\n".join(lines) + "\n"


def graded_by(info: HoleSampleInfo) -> str:
    """Who graded a hole sample, in words: its judged_by (or the store's labellers), or that the
    file does not say (an older file, or grades typed in by hand)."""
    who = info.get("graded_by") or []
    if who:
        return f"graded by {', '.join(who)}"
    return "graded by people (who is not recorded: the file names no judged_by)"


def holes_csv(report: HolesReport) -> str:
    """One row per hole: ``query,chunk,hole,sampled`` (``hole``: its number among the query's
    holes, in rank order; not its rank, so the file says no more of the ranking than the table)."""
    sampled = set(report["sample"]["queries"]) if report["sample"] else set()
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["query", "chunk", "hole", "sampled"])
    for qid, row in report["queries"].items():
        for nth, chunk in enumerate(row["holes"], start=1):  # its number among the query's holes
            writer.writerow([qid, chunk, nth, "yes" if qid in sampled else "no"])
    return out.getvalue()


def figure_text(value: float | None, n: int) -> str:
    """A mean with the queries it is over: ``0.5000 (4 q)``, or undefined."""
    return f"{value:.4f} ({n} q)" if value is not None else f"undefined ({n} q)"


def _ci(ci: list[float] | None, digits: int = 4) -> str:
    return f"[{ci[0]:.{digits}f}, {ci[1]:.{digits}f}]" if ci else "no interval"


def _kappa(agreement: JudgeAgreement | None) -> str:
    """The judge's kappa with its interval, verdict and design (issue #39), as the review states them."""
    if agreement is None:
        return "unmeasured: no chunk was graded by both the judge and people"
    reason = agreement.get("reason")
    if agreement["kappa"] is None:
        return f"undefined on the {agreement['n']} chunks both graded" + (f" ({reason})" if reason else "")
    verdict = agreement["verdict"]
    ci = agreement["kappa_ci"]
    said = f"{verdict}, no interval: {reason}" if verdict == "uncalibrated" and reason else verdict
    shown = f"{agreement['kappa']:.2f}" + (f" {_ci(ci, 2)}" if ci or verdict != "uncalibrated" else "")
    text = f"{shown} on the {agreement['n']} chunks both graded ({said})"
    if not agreement.get("design"):
        return text
    # start-up: the design's words live beside the verdict (numpy, scipy.special), only with a kappa
    from calibration.stats.judged import design_line

    return text + f"; design: {design_line(cast(Any, agreement))}"


def uncorrected_note(agreement: JudgeAgreement | None) -> str:
    """What stands where a corrected figure would: the judge's agreement with people."""
    return f"uncorrected: the judge's kappa on this rubric is {_kappa(agreement)}"


def corrected_text(c: CorrectedFigure | None, sampled: bool) -> str:
    """The corrected figure with its 95% interval (or "no interval") and its n of N, as printed."""
    if c is None:
        return "-" if sampled else "(no hole sample)"
    if c["estimate"] is None:
        return "no sampled query defines it"
    return f"{c['estimate']:.4f} {_ci(c['ci'])} (n {c['n']} of {c['population']})"


def filled_text(reports: list[FilledReport]) -> str:
    parts = []
    for r in reports:
        k = r["k"]
        lines = [
            f"k = {k}: {str(r['run'])} against {str(r['judgments'])}, the holes filled with "
            f"{str(r['judge'])}'s grades.",
            f"The judge graded {r['filled']:,} of the {r['holes']:,} holes in the top {k} "
            f"({r['filled_relevant']:,} relevant); {r['ungraded']:,} it did not grade stay not relevant.",
        ]
        info = r["sample"]
        if info is None:
            lines.append(
                f"No hole sample: the judge-filled figures are {uncorrected_note(r['agreement'])}; "
                "no interval (a sample of queries whose holes people label backs one: python -m "
                "calibration holes GOLDEN RUN -k K --sample N --out FILE)."
            )
        else:
            lines.append(
                f"Hole sample {str(info['file'] or '')}: {info['n']} of {info['population']} queries "
                f"(seed {info['seed']}), {info['holes']:,} holes {graded_by(info)}. The judge against people "
                f"on the chunks both graded, the sampled holes included: kappa {_kappa(r['agreement'])}."
            )
        head = f"{'measure':<10}  {'holes as not relevant':<22}  {'judge-filled':<22}  corrected, 95% CI"
        lines += ["", head]
        notes = []
        for m in r["means"]:
            c = m["corrected"]
            lines.append(
                f"{m['measure']:<10}  {figure_text(m['holes_as_not_relevant'], m['holes_as_not_relevant_n']):<22}  "
                f"{figure_text(m['judge_filled'], m['judge_filled_n']):<22}  {corrected_text(c, info is not None)}"
            )
            if c is not None and c["estimate"] is not None:
                beside = (
                    f"  {m['measure']}: people only {c['human_only']:.4f} {_ci(c['human_only_ci'])}; "
                    f"the sample alone, no judge {c['without_judge']:.4f} {_ci(c['without_judge_ci'])}; "
                    f"lambda {c['lam']:.2f}"
                )
                changed = (
                    f"people's labels on the holes changed {c['changed']} of the {c['n']} sampled queries"
                )
                notes.append(f"{beside}; {c['note'] or changed}")
        if notes:
            lines += ["", "Beside the corrected figures (same sample, same labels):", *notes]
        measure = f"P@{k}"
        width = max([len("query")] + [len(str(q)) for q in r["queries"]])
        lines += [
            "",
            f"{'query':<{width}}  {'holes':>5}  {'filled':>6}  {'|Rel|':<14}  {measure}: as not relevant / "
            "judge-filled / people",
        ]
        for qid, q in r["queries"].items():
            rel = f"{q['rel']} + {q['filled_relevant']} filled" if q["filled_relevant"] else str(q["rel"])
            values = " / ".join("-" if v is None else f"{v:.4f}" for v in q["values"][measure])
            if not q["sampled"]:
                values = values.rsplit(" / ", 1)[0]
            lines.append(
                f"{str(qid):<{width}}  {q['holes']:>5}  {q['filled']:>6}  {rel:<14}  {values}"
                + ("  [sampled]" if q["sampled"] else "")
            )
        parts.append("\n".join(lines))
    parts.append(
        "Holes: chunks of the run's top k the judgments do not grade. |Rel| counts judge-filled relevant "
        'holes beside people\'s ("3 + 1 filled"); relevant chunks beyond the top k that nobody judged '
        "stay unknown (audit --estimate estimates them)."
    )
    return "\n\n".join(parts) + "\n"


def _delta(value: float | None) -> str:
    return "undefined" if value is None else f"{value:+.4f}"


def _delta_ci(ci: list[float] | None) -> str:
    return f"[{ci[0]:+.4f}, {ci[1]:+.4f}]" if ci else "no interval"


def compare_filled_text(reports: list[FilledComparison]) -> str:
    parts = []
    for r in reports:
        k = r["k"]
        a, b = r["runs"]
        lines = [
            f"k = {k}: {b} - {a} against {r['judgments']}, the holes filled with {r['judge']}'s grades "
            f"(holes in the top {k}: {r['holes'][0]:,} of {a}, {r['holes'][1]:,} of {b}; the judge graded "
            f"{r['filled'][0]:,} and {r['filled'][1]:,}).",
        ]
        (holes_a, holes_b), (filled_a, filled_b) = r["holes"], r["filled"]
        if (filled_a, filled_b) == (holes_a, holes_b):
            lines.append(
                f"Unjudged chunks: the judge's grades fill every unjudged chunk of both top {k}s ({holes_a:,} "
                f"of A's, {holes_b:,} of B's): the judge-filled column rests on no chunk left unjudged."
            )
        else:
            lines.append(
                f"Unjudged chunks: the judge's grades fill {filled_a:,} of A's {holes_a:,} and {filled_b:,} of "
                f"B's {holes_b:,} unjudged chunks in the top {k}; the other {holes_a - filled_a + holes_b - filled_b:,} "
                "count as not relevant in every column: label them, or have the judge grade them."
            )
        info = r["sample"]
        if info is None:
            lines.append(
                f"No hole sample: the judge-filled deltas are {uncorrected_note(r['agreement'])}; no interval."
            )
        else:
            lines.append(
                f"Hole sample {info['file'] or ''}: {info['n']} of {info['population']} queries (seed "
                f"{info['seed']}), {info['holes']:,} holes {graded_by(info)}. The interval is the holes' "
                "labels' uncertainty over these queries (not the query sample's: compare without "
                f"--judge-labels gives the paired tests). The judge against people on the chunks both "
                f"graded, the sampled holes included: kappa {_kappa(r['agreement'])}."
            )
        lines += [
            "",
            f"{'measure':<10}  {'holes as not relevant':<22}  {'judge-filled':<14}  corrected B - A, 95% CI",
        ]
        for d in r["deltas"]:
            c = d["corrected"]
            if c is None:
                corrected = "(no hole sample)"
            elif c["estimate"] is None:
                corrected = "no sampled query defines it"
            else:
                corrected = f"{_delta(c['estimate'])} {_delta_ci(c['ci'])} (n {c['n']} of {c['population']})"
                if c["note"]:
                    corrected += f"; {c['note']}"
            shown = f"{_delta(d['holes_as_not_relevant'])} ({d['n']} q)"
            lines.append(f"{d['measure']:<10}  {shown:<22}  {_delta(d['judge_filled']):<14}  {corrected}")
        parts.append("\n".join(lines))
    return "\n\n".join(parts) + "\n"


def check_holes_text(report: FilledReport, *, markdown: bool = False) -> str:
    """What ``check --judge-labels`` adds after the check: the holes' figures, said apart from the
    rules (which read people's judgments only); in a code block for markdown."""
    text = (
        "Holes (--judge-labels): the rules above read people's judgments only (judged@k counts them); "
        "the judge's fill and the corrected figures:\n\n" + filled_text([report])
    )
    return f"\n```\n{text.strip()}\n```\n" if markdown else "\n" + text
