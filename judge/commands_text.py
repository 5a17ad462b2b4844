"""How a judge run is said, by the command line and the Judge page alike: the plan before it
(calls, tokens, cost), the run after it, the offline judge's fit, and the judges in a store.

The faces only place these sentences (the page may add Markdown around them); a wording has one
home. Every figure carries what it is a share of: calls of calls, tokens with their estimate
flagged, cost from a price list or "cost unknown". A judge is named by its name and version, the
current version marked, with its fingerprint beside it: ``offline-lexical/relevance v3 (current),
fingerprint 0b187b4953d3d59a``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypedDict, cast

from calibration.results import PairSummary
from calibration.review_text import version_label
from judge.jobs import JudgeIdentity, OfflineReport, Plan, StoredJudge
from judge.limits import BATCH_HEAD_BYTES, MAX_REPEATS
from judge.prices import Prices
from judge.progress import Progress

if TYPE_CHECKING:
    from judge.batch import Collected
    from judge.holes import HoleItems  # the metrics' scoring: loaded by --holes only
    from judge.lexical import CrossValidation


def identity_text(identity: JudgeIdentity) -> str:
    """A judge about to run or just run (:meth:`Store.judge_identity`): its name and version, and
    whether it is new (what changed from the version before), current, or an earlier version."""
    head = f"{identity['name']} v{identity['version']}"
    if not identity.get("registered"):
        if identity["version"] == 1:
            return f"{head} (new)"
        return f"{head} (new version; changed: {', '.join(identity['changed']) or 'nothing named'})"
    return f"{head} (current)" if identity.get("current") else f"{head} (an earlier version, not current)"


def judge_name(plan: Plan, model: str, rubric: str) -> str:
    """``judge gpt-x/relevance v2 (current), fingerprint 0b187b4953d3d59a (gpt-x at http://...,
    relevance, prompt v1)``; ``prompt v1 with the rubric's edited guidelines`` once an admin
    edited them (they are in the prompt: ``judge.prompts``)."""
    settings = plan.settings
    return (
        f"judge {identity_text(plan.identity)}, fingerprint {plan.fingerprint[:16]} "
        f"({model} at {settings['endpoint']}, {rubric}, prompt {settings['prompt_version']}"
        + (" with the rubric's edited guidelines" if "guidelines" in settings else "")
        + ")"
    )


def plan_text(plan: Plan, prices: Prices, model: str, batch: bool = False) -> str:
    """What a run would take: ``would make 8 calls (0 of 8 already done); about ... tokens, cost``
    (``batch``: as one batch, at the batch price when the price table has one)."""
    tokens_in, tokens_out = plan.estimate()
    what = f"would submit a batch of {plan.left:,} requests" if batch else f"would make {plan.left:,} calls"
    return (
        f"{what} ({plan.already_done:,} of {plan.total:,} already done); "
        f"about {tokens_in:,} input and {tokens_out:,} output tokens (estimated), "
        f"{prices.describe(model, tokens_in, tokens_out, batch=batch)}"
    )


def run_text(progress: Progress, plan: Plan, prices: Prices, model: str) -> str:
    """What a run did: calls made of those asked, errors (stored, asked again), retries, tokens, cost, time."""
    cost = prices.describe(model, progress.tokens_in, progress.tokens_out)
    text = (
        f"{progress.done} calls made, {plan.already_done} of {plan.total} already done, "
        f"{progress.errors} errors (stored as error rows; asked again next run), {progress.retries} retries; "
        f"{progress.tokens_in:,} tokens in, {progress.tokens_out:,} out, {cost}; {progress.elapsed:.1f} s"
    )
    if progress.unanswered:
        text += (
            f"; {progress.unanswered} of {progress.done} calls were in flight when the run was stopped "
            "(stored as not answered)"
        )
    if progress.lock_delayed:
        text += (
            f"; {progress.lock_delayed} of {progress.done} answers waited up to {progress.lock_seconds:.1f} s "
            "for the database's write lock (another process held it), every one stored"
        )
    return text


def progress_text(progress: Progress) -> str:
    """A progress bar's label: ``12 / 40 calls, 0 errors, 3,120 tokens``."""
    return (
        f"{progress.done} / {progress.total} calls, {progress.errors} errors, "
        f"{progress.tokens_in + progress.tokens_out:,} tokens"
    )


def offline_text(report: OfflineReport, dry_run: bool) -> str:
    """The offline judge: what it was fitted on, what it graded (or would), its agreement with people."""
    who = (
        f"offline judge {identity_text(report['identity'])}, fingerprint {report['fingerprint'][:16]} "
        f"({report['features']}, {report['rubric']}, fitted on {report['fitted_on']} human labels)"
    )
    left = report["items"] - report["already_done"]
    if dry_run:
        what = f"would grade {left} items ({report['already_done']} already done); no network"
    else:
        what = f"graded {report['graded']} items ({report['already_done']} already done)"
    return f"{who}: {what}\n{agreement_line(report['agreement'])}"


NAMED = 5  # skipped holes named, the rest counted


def holes_text(found: HoleItems, graded: int, before: int, dry_run: bool = False) -> str:
    """``grade --holes``: the holes graded of all the holes in the top k, the items made, and the
    holes skipped (no text for their query or chunk), the first few named."""
    n, where = len(found.holes), f"in the top {found.k} of {found.queries} queries"
    if dry_run:
        lines = [
            f"dry run: {n} holes {where}: {len(found.item_ids)} are items already, "
            f"{found.to_make} would be made (assigned to nobody); nothing written"
        ]
    else:
        done_before = f" ({before} already graded by this judge)" if before else ""
        lines = [f"graded {graded} of the {n} holes {where}{done_before}"]
        if found.made or found.texts_added:
            wrote = (
                f", wrote {found.texts_added} query and chunk texts the store lacked"
                if found.texts_added
                else ""
            )
            lines.append(f"made {found.made} new chunk items (assigned to nobody){wrote}")
    unknown = found.unknown
    if unknown:
        names = [h.chunk if not (h.chunk_text or "").strip() else f"query {h.qid}" for h in unknown]
        shown = list(dict.fromkeys(names))
        more = ", ..." if len(shown) > NAMED else ""
        hints = []
        if any(not (h.chunk_text or "").strip() for h in unknown):
            hints.append("a chunk's text: --corpus FILE")
        if any(not (h.query_text or "").strip() for h in unknown):
            hints.append("a query's text: golden.yaml or python -m annotation import --queries")
        lines.append(
            f"{len(unknown)} of the {n} holes skipped: text unknown ({', '.join(shown[:NAMED])}{more}); "
            + "; ".join(hints)
        )
    return "\n".join(lines)


FIRST = "first version"


def changed_text(judge: StoredJudge) -> str:
    """What changed from the version before: ``temperature, prompt_sha``, or ``first version``."""
    if judge["version"] == 1:
        return FIRST
    return ", ".join(judge["changed"]) or "nothing named"


# one judge in the list (the page's tables show these names as their columns)
JudgeRow = TypedDict(
    "JudgeRow",
    {
        "judge": str,
        "fingerprint": str,
        "changed": str,
        "kind": str | None,
        "rubric": str | None,
        "model": str,
        "answers": int,
        "error rows": int,
        "tokens": int,
        "cost": str,
        "agreement with people": str,
    },
)


def judge_rows(judges: list[StoredJudge], marks: dict[str, str], prices: Prices) -> list[JudgeRow]:
    """One row per judge: name and version (the current one marked), fingerprint, what changed from
    the version before, kind, rubric, model and endpoint, answers, error rows, tokens, cost (LLM
    judges), and its agreement with people (``agreement_mark``)."""
    return [
        {
            # boundary: calibration.review_text.version_label reads a judge row as dict[str, Any]
            "judge": version_label(cast("dict[str, Any]", j)),
            "fingerprint": j["fingerprint"][:16],
            "changed": changed_text(j),
            "kind": j["kind"],
            "rubric": j["rubric"],
            "model": f"{j['model']} at {j['endpoint']}",
            "answers": j["labels"],
            "error rows": j["errors"],
            "tokens": j["tokens_in"] + j["tokens_out"],
            "cost": prices.describe(j["model"] or "", j["tokens_in"], j["tokens_out"])
            if j["kind"] == "llm"
            else "no cost",
            "agreement with people": marks[j["fingerprint"]],
        }
        for j in judges
    ]


def judges_text(rows: list[JudgeRow]) -> str:
    """The command line's list of judges, one line each."""
    return "".join(
        f"{r['judge']}, fingerprint {r['fingerprint']}, "
        f"{r['changed'] if r['changed'] == FIRST else 'changed: ' + r['changed']}  {r['kind']:<7}  {r['rubric']:<12}  "
        f"{r['model']}: {r['answers']} answers, {r['error rows']} error rows, {r['tokens']:,} tokens, "
        f"{r['cost']}; {r['agreement with people']}\n"
        for r in rows
    )


def agreement_line(cv: CrossValidation) -> str:
    """The offline judge's cross-validated agreement, with its n."""
    kappa = cv.get("kappa_quadratic")
    if kappa is None:
        head = f"cross-validated agreement with people: kappa undefined ({cv.get('undefined_reason') or 'undefined'})"
    else:
        head = f"cross-validated agreement with people: quadratic-weighted kappa {kappa:.3f}"
    return (
        head + f", accuracy {cv['accuracy']:.3f}, over n = {cv['n']} labelled items ({cv['folds']} folds); "
        "a baseline an LLM judge must beat"
    )


def pair_summary_text(summary: PairSummary) -> str:
    """The swap-averaged preference in words, with its n (the CLI's and the page's wording)."""
    if summary["mean_preference_a"] is None:
        return "no pair has both orders answered yet"
    left_out = (
        f" ({summary['incomplete_pairs']} pairs with one order only left out)"
        if summary["incomplete_pairs"]
        else ""
    )
    return (
        f"swap-averaged preference for A (the pair's first trace): mean {summary['mean_preference_a']:.3f} "
        f"over {summary['n_pairs']} pairs asked in both orders{left_out}; the two orders agree in "
        f"{summary['consistent']} of {summary['compared']} comparisons ({summary['consistency']:.0%})"
    )


def refused_text(collected: Collected) -> str:
    """What a collection did not store as answers, counted, with the first few named, one
    line each: ids ignored, lines left out, error rows of calls with no answer read; and a note
    for a batch sent before its calls were recorded ("" when none)."""
    out = []

    def lines(n: int) -> str:
        return f"{n:,} line" + ("" if n == 1 else "s")

    if collected.unknown:
        n = collected.unknown
        what = "1 answer for an id" if n == 1 else f"{n:,} answers for ids"
        out.append(
            f"{what} this batch did not send {'was' if n == 1 else 'were'} ignored "
            f"(e.g. {', '.join(collected.ignored)})"
        )
    parts = []
    if collected.duplicates:
        parts.append(f"{lines(collected.duplicates)} repeating an id (the first of each kept)")
    if collected.malformed:
        parts.append(f"{lines(collected.malformed)} not JSON")
    if collected.unreadable:
        parts.append(
            f"{lines(collected.unreadable)} over the {collected.line_cap:,}-byte reply limit naming no call "
            f"in its first {BATCH_HEAD_BYTES:,} bytes"
        )
    if collected.truncated:
        parts.append("a file longer than the reply limit times the calls submitted, read no further")
    if parts:
        named = f" (e.g. {', '.join(collected.examples)})" if collected.examples else ""
        out.append("left out: " + "; ".join(parts) + named)
    unread = []
    if collected.too_long:
        unread.append(f"{collected.too_long:,} over the {collected.line_cap:,}-byte reply limit (not read)")
    if collected.missing:
        unread.append(f"{collected.missing:,} with no answer in what was read of the batch's files")
    if unread:
        out.append("calls stored as error rows, asked again next run: " + "; ".join(unread))
    if not collected.recorded:
        out.append(
            "this batch's calls were not recorded when it was sent (an older version): answers kept only "
            f"for this judge's calls on the store's items, repeats below {MAX_REPEATS:,}"
        )
    return "\n".join(out)
