"""``python -m calibration plan``: its face, from the parsed arguments to (text, exit code)."""

from __future__ import annotations

import argparse

from annotation.cli_base import UsageError, open_store
from annotation.values import parse_designs
from calibration import actions
from calibration.cli_args import check_verdict_options
from calibration.commands_text import dumps
from calibration.gate import load_policy, verdict_settings
from calibration.planning import PlanEntry
from calibration.stats.plan import Pilot
from calibration.stats.verdict import NOISY_GONE

__all__ = ["plan_table", "run", "run_plan"]


def _f(value: float | None, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _count(n: int, noun: str) -> str:
    plural = noun[:-1] + "ies" if noun.endswith("y") else noun + "s"
    return f"{n} {noun if n == 1 else plural}"


def _pilot_interval(p: Pilot, min_queries: int) -> str:
    """The pilot's own interval, or why it has none (below min_queries: how many of those it has)."""
    if p["interval"][0] is not None:
        return f" [{_f(p['interval'][0])}, {_f(p['interval'][1])}]"
    if p["kappa"] is not None and p["queries"] < min_queries:
        return f" (no pilot interval: {p['queries']} of the {min_queries} queries a verdict needs)"
    return f" (no interval: {p['interval_reason']})"


def plan_table(entries: list[PlanEntry]) -> str:
    """Each pilot's figures, its designs' expected widths and verdicts, and the answer."""
    if not entries:
        return "no judge with labels to plan from (grade items with a judge and people first)\n"
    lines: list[str] = []
    for entry in entries:
        result, p = entry["plan"], entry["plan"]["pilot"]
        low, mid, high = p["items_per_query"]
        lines.append(f"{entry['name']}" + (f" ({entry['rubric']})" if entry["rubric"] else ""))
        lines.append(
            f"  pilot: n {_count(p['n'], 'item')} over {_count(p['queries'], 'query')} "
            f"({low}-{high} a query, median {mid:g}); "
            f"kappa {_f(p['kappa'])}" + _pilot_interval(p, result["min_queries"])
        )
        if entry["no_query"]:
            lines.append(
                f"  {entry['no_query']} of {p['n']} items without a query, each counted as a query of its own"
            )
        if p["undefined_reason"]:
            lines.append(f"  no plan: {p['undefined_reason']}")
            lines.append("")
            continue
        if p["icc_note"]:
            lines.append(f"  ICC of agreement within a query {p['icc_note']}")
        else:
            lines.append(
                f"  ICC of agreement within a query {_f(p['icc'])} (median-unbiased, from "
                f"{_count(p['queries'], 'query')}); pilot design effect {_f(p['pilot_design_effect'], 2)}"
            )
        lines.append(
            f"  bar {result['bar']:g} ({1 - result['alpha']:.0%} interval); min_queries {result['min_queries']}"
        )
        lines.append(
            "  design   labels  deff   expected width  expected interval   verdict expected  labels to decide"
        )
        for d in result["designs"]:
            need = (
                f"about {d['labels_to_decide']} ({d['queries_to_decide']} x {d['per_query']})"
                if d["labels_to_decide"] is not None
                else "out of reach (kappa at the bar)"
            )
            lines.append(
                f"  {d['design']:<8} {d['labels']:>6}  {d['design_effect']:>5.2f}  {d['width']:>14.3f}  "
                f"[{d['interval'][0]:.3f}, {d['interval'][1]:.3f}]  {d['verdict']:<16}  {need}"
            )
        if result["answer"]:
            lines.append(f"  more queries or more chunks per query? {result['answer']['text']}")
        lines.append(f"  model: {result['model']}; labels to decide assume kappa stays at the pilot's")
        lines.append("")
    return "\n".join(lines)


def run_plan(args: argparse.Namespace) -> tuple[str, int]:
    args.trusted, args.statistic = verdict_settings(load_policy(args.policy), args.trusted, args.statistic)
    check_verdict_options(args.trusted, args.noisy, NOISY_GONE)
    try:
        designs = parse_designs(args.designs)
    except ValueError as exc:
        raise UsageError(f"python -m calibration plan --designs: {exc}") from None
    if args.pairs and args.db:
        raise UsageError("python -m calibration plan: give --pairs FILE or --db DB (one of them)")
    if args.pairs:
        entries = actions.plan(
            args.pairs,
            designs,
            judge=args.judge,
            rubric=args.rubric,
            trusted=args.trusted,
            statistic=args.statistic,
            min_queries=args.min_queries,
        )
    else:
        from annotation.store import StoreError  # start-up: the store, only when it is read

        try:
            with open_store(args.db, "read") as store:
                entries = actions.plan(
                    store,
                    designs,
                    judge=args.judge,
                    rubric=args.rubric,
                    trusted=args.trusted,
                    statistic=args.statistic,
                    min_queries=args.min_queries,
                )
        except StoreError as exc:
            raise UsageError(str(exc)) from None
    if args.format == "json":
        return dumps({"plans": entries}, one_line=()), 0
    return plan_table(entries), 0


def run(name: str, args: argparse.Namespace) -> tuple[str, int]:
    """The ``plan`` command (:func:`annotation.cli_base.lazy_commands` calls it by name)."""
    if name != "plan":
        raise UsageError(f"python -m calibration: no command {name!r} here")
    return run_plan(args)
