"""``metrics --evidence`` and ``compare --evidence`` (#44 item 4): their face, from the parsed
arguments to (text, exit code). The figures are :func:`calibration.actions.evidence`'s; each is
shown with its numerator and denominator in characters."""

from __future__ import annotations

import argparse
from typing import Any

from annotation.cli_base import UsageError, plural
from annotation.formats.by_extension import read_judgments, read_ranked
from annotation.formats.chunks import read_chunks
from annotation.model import ChunkSpan, Qrels
from calibration import actions
from calibration.commands_text import dumps, metrics_json, metrics_table
from calibration.evidence import MEASURES, EvidenceRun
from calibration.projection import EvidenceAtK

__all__ = ["run_metrics_evidence", "run_compare_evidence", "evidence_text", "evidence_json"]

LABELS = {"recall": "recall", "precision": "precision", "iou": "IoU"}
DENOMINATORS = (
    "recall = evidence characters in the top k / characters of evidence; precision = the same / characters\n"
    "retrieved; IoU = the same / characters in either (overlapping chunks and spans counted once)"
)
NOT_COMPARABLE = (
    "chunk-level figures (P@k, R@k, nDCG@k, ...) are not comparable across two chunkings (a chunk of one "
    "is not a chunk of the other), so their difference is not shown"
)


def _cell(result: EvidenceRun, qid: str, k: int, measure: str) -> str:
    at = result.at(qid, k)
    absent = qid in result.absent
    if at is None:
        return (
            "undefined (absent from the run)"
            if result.queries[qid] is not None
            else "undefined (no evidence)"
        )
    value = getattr(at, measure)
    if measure == "recall":
        return f"{value:.3f} ({at.shared:,} / {at.evidence:,})"
    if value is None:
        return "undefined (nothing retrieved)" if absent else "undefined"
    whole = at.retrieved if measure == "precision" else at.evidence + at.retrieved - at.shared
    return f"{value:.3f} ({at.shared:,} / {whole:,})"


def _mean(result: EvidenceRun, k: int, measure: str) -> str:
    value, n = result.mean(k, measure)
    of = f"{n:,} / {len(result.queries):,} queries"
    return (
        f"undefined (over 0 / {len(result.queries):,} queries)"
        if value is None
        else f"{value:.3f} (mean over {of})"
    )


def _table(rows: list[list[str]]) -> list[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in rows]


def evidence_text(result: EvidenceRun, golden: str, run: str, chunks: str) -> str:
    """Per cutoff: each query's recall, precision and IoU with numerator / denominator, the means
    with the queries they are over, and the characters summed over the queries."""
    no_evidence = sum(1 for at in result.queries.values() if at is None)
    lines = [
        f"evidence measures of {run} (chunks placed by {chunks}) against the evidence of {golden} "
        f"(spans of grade >= {result.min_grade}); {plural(len(result.queries), 'query', 'queries')}",
        DENOMINATORS,
    ]
    if no_evidence:
        lines.append(
            f"{no_evidence:,} / {len(result.queries):,} queries hold no evidence: undefined, left out of the means"
        )
    if result.absent:
        how = (
            "undefined, left out of the means (with --missing zero: recall 0)"
            if result.missing == "drop"
            else "nothing retrieved (recall 0, precision undefined)"
        )
        lines.append(f"{len(result.absent):,} / {len(result.queries):,} queries absent from the run: {how}")
    for k in result.ks:
        rows = [["query", *(f"{LABELS[m]}@{k}" for m in MEASURES)]]
        for qid in result.queries:
            rows.append([qid, *(_cell(result, qid, k, m) for m in MEASURES)])
        rows.append(["mean", *(_mean(result, k, m) for m in MEASURES)])
        total = result.totals(k)
        lines.append("")
        lines.extend(_table(rows))
        lines.append(
            f"over the queries with evidence, at k={k}: {total.shared:,} / {total.evidence:,} characters of "
            f"evidence retrieved; {total.shared:,} / {total.retrieved:,} characters retrieved are evidence"
        )
    return "\n".join(lines) + "\n"


def evidence_json(result: EvidenceRun) -> dict[str, Any]:
    def one(at: EvidenceAtK) -> dict[str, Any]:
        return {
            "shared": at.shared,
            "evidence": at.evidence,
            "retrieved": at.retrieved,
            **{m: getattr(at, m) for m in MEASURES},
        }

    return {
        "min_grade": result.min_grade,
        "cutoffs": list(result.ks),
        "absent": list(result.absent),
        "missing": result.missing,
        "mean": {
            str(k): {m: dict(zip(("value", "n"), result.mean(k, m))) for m in MEASURES} for k in result.ks
        },
        "totals": {str(k): one(result.totals(k)) for k in result.ks},
        "queries": {
            qid: {str(k): None if (at := result.at(qid, k)) is None else one(at) for k in result.ks}
            for qid in result.queries
        },
    }


def _chunks(path: str | None, flag: str, command: str) -> list[ChunkSpan]:
    if not path:
        raise UsageError(f"python -m calibration {command}: --evidence needs {flag} (the run's chunks file)")
    return read_chunks(path)


def _graded_here(
    golden: Qrels, chunks: list[ChunkSpan], golden_name: str, chunks_name: str
) -> tuple[bool, str]:
    """Whether the golden set's grades are grades of this chunking's chunks (then the chunk-level
    figures mean something for the run), and what stands behind that: the set grades some chunk
    of the file, and its ``chunks`` section places each graded chunk of the file (alike:
    :func:`calibration.actions.evidence` refused a disagreement before); without a section, only
    the ids say so, and the note says that."""
    ids = {c.id for c in chunks}
    graded = {doc for docs in golden.grades.values() for doc in docs if doc in ids}
    if not graded:
        return False, f"grades none of {chunks_name}'s chunks"
    if not golden.chunk_spans:
        return True, (
            f"{golden_name} has no chunks section: its grades are taken as grades of {chunks_name}'s chunks "
            "by their ids alone"
        )
    unplaced = sorted(graded - set(golden.chunk_spans))
    if unplaced:
        return False, (
            f"grades chunk {unplaced[0]!r:.60} of {chunks_name} but its chunks section does not place it "
            "(the grades may be of another chunking)"
        )
    return True, ""


def run_metrics_evidence(args: argparse.Namespace) -> tuple[str, int]:
    """``metrics GOLDEN RUN --chunks B.jsonl --evidence``: the evidence measures, and the chunk-level
    figures when the golden set grades the run's chunks (else why they are absent)."""
    for flag, given in (("--stored-run", args.stored_run), ("--judge-labels", args.judge_labels)):
        if given:
            raise UsageError(f"python -m calibration metrics: {flag} does not go with --evidence")
    if args.format == "trec":
        raise UsageError("python -m calibration metrics: --evidence prints a table or json, not trec")
    if not args.qrels or not args.run:
        raise UsageError("python -m calibration metrics: --evidence needs GOLDEN and RUN")
    chunks = _chunks(args.chunks, "--chunks B.jsonl", "metrics")
    golden, run = read_judgments(args.qrels), read_ranked(args.run)
    result = actions.evidence(
        golden, run, chunks, args.k, args.min_grade, chunks_name=args.chunks, missing=args.missing
    )
    chunk_level = None
    graded, why = _graded_here(golden, chunks, args.qrels, args.chunks)
    if graded:
        chunk_level = actions.metrics(
            golden,
            run,
            args.k,
            args.min_grade,
            missing=args.missing,
            gain=args.gain,
            run_name=args.run,
            qrels_name=args.qrels,
        )
    absent = (
        f"chunk-level figures (P@k, R@k, nDCG@k, ...): not shown: {args.qrels} {why} (python -m calibration "
        f"project {args.qrels} --chunks {args.chunks} -o GOLDEN-B.yaml grades them)"
    )
    if args.format == "json":
        level: dict[str, Any] = {"absent": absent} if chunk_level is None else metrics_json(chunk_level)
        if chunk_level is not None and why:
            level["note"] = why
        return dumps({"evidence": evidence_json(result), "chunk_level": level}, one_line=()), 0
    text = evidence_text(result, args.qrels, args.run, args.chunks)
    if chunk_level is None:
        return text + "\n" + absent + "\n", 0
    note = f" ({why})" if why else ""
    return text + f"\nchunk-level figures{note}:\n" + metrics_table(chunk_level, args.qrels, args.run), 0


def run_compare_evidence(args: argparse.Namespace) -> tuple[str, int]:
    """``compare GOLDEN RUN_A RUN_B --chunks-a A.jsonl --chunks-b B.jsonl --evidence``: each run's
    evidence measures and B - A, per query and mean; the chunk-level figures are not compared."""
    if args.judge_labels or args.hole_sample or args.db:
        raise UsageError(
            "python -m calibration compare: --evidence does not go with --judge-labels, --hole-sample or --db"
        )
    chunks_a = _chunks(args.chunks_a, "--chunks-a A.jsonl", "compare")
    chunks_b = _chunks(args.chunks_b, "--chunks-b B.jsonl", "compare")
    golden = read_judgments(args.qrels)
    a = actions.evidence(
        golden, read_ranked(args.run_a), chunks_a, args.k, args.min_grade, chunks_name=args.chunks_a
    )
    b = actions.evidence(
        golden, read_ranked(args.run_b), chunks_b, args.k, args.min_grade, chunks_name=args.chunks_b
    )
    if args.format == "json":
        data = {
            "a": evidence_json(a),
            "b": evidence_json(b),
            "b_minus_a": {str(k): {m: b.minus(a, k, m) for m in MEASURES} for k in a.ks},
            "mean_b_minus_a": {str(k): {m: b.mean_minus(a, k, m)[0] for m in MEASURES} for k in a.ks},
            "note": NOT_COMPARABLE,
        }
        return dumps(data, one_line=()), 0
    lines = [
        f"A: {args.run_a} over {args.chunks_a}; B: {args.run_b} over {args.chunks_b}; evidence of {args.qrels} "
        f"(spans of grade >= {a.min_grade}), {plural(len(a.queries), 'query', 'queries')}",
        DENOMINATORS,
        NOT_COMPARABLE,
    ]
    for k in a.ks:
        rows = [["measure", "A", "B", "B - A"]]
        for m in MEASURES:
            delta, n = b.mean_minus(a, k, m)
            shown = (
                "undefined (no query defined for both)"
                if delta is None
                else f"{delta:+.3f} (mean over {n:,} / {len(a.queries):,} queries)"
            )
            rows.append([f"{LABELS[m]}@{k}", _mean(a, k, m), _mean(b, k, m), shown])
        ta, tb = a.totals(k), b.totals(k)
        lines.append("")
        lines.extend(_table(rows))
        lines.append(
            f"characters at k={k}: A retrieves {ta.shared:,} / {ta.evidence:,} of the evidence in {ta.retrieved:,} "
            f"characters; B {tb.shared:,} / {tb.evidence:,} in {tb.retrieved:,}"
        )
        per = [["query", *(f"B - A {LABELS[m]}@{k}" for m in MEASURES)]]
        deltas = {m: b.minus(a, k, m) for m in MEASURES}
        for qid in a.queries:
            per.append(
                [qid, *("undefined" if (d := deltas[m][qid]) is None else f"{d:+.3f}" for m in MEASURES)]
            )
        lines.append("")
        lines.extend(_table(per))
    return "\n".join(lines) + "\n", 0
