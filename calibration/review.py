"""The weekly review: how far to trust each judge this week.

1. :func:`draw_sample` draws this week's sample of traces (seeded, stratified by
   the judge's answer when a judge has graded them, else by system, so that
   disagreements cannot all hide in one class), records it (``review_samples``)
   and assigns the items to the annotators who will label them, blind, on the
   same rubric as the judge.
2. :func:`review` then computes, for every judge fingerprint and its rubric:
   kappa of the judge against the people's consensus (quadratic weights for
   the ordinal grades of relevance and faithfulness; unweighted for
   preferences) with a bootstrap CI and n; kappa against each annotator; the
   human-human kappa on doubly labelled items beside it as the ceiling; the
   verdict (>= 0.6 trusted, 0.4-0.6 noisy, < 0.4 not trusted); position-bias
   figures for pairwise judges; for faithfulness, the pass rate (grade 2)
   corrected by prediction-powered inference next to the human-only one. A
   judge with fewer human-labelled items than ``min_labels`` is
   ``uncalibrated``, whatever its kappa. Each review is saved
   (``calibrations``), so a trend across weeks can be shown.
3. :func:`to_markdown` and :func:`to_html` export the report.

Honesty rules: the offline judge is fitted on human labels, so the items it
was fitted on are left out of its review (counted); a pairwise judge's
answer to a pair is its swap-averaged preference (> 0.5 A, < 0.5 B, = 0.5
tie), so position bias cannot pass for agreement; undefined figures are None
with the reason, never 0.
"""

from __future__ import annotations

import html
import json
import random
from collections import defaultdict
from datetime import date
from typing import Any

from annotation.render import interval, num
from annotation.store import Store, StoreError
from calibration.agreement import bootstrap_ci, cohen
from calibration.position import from_slots, position_bias, summarize_pairs
from calibration.ppi import ppi_mean
from calibration.verdict import MIN_LABELS, NOISY, TRUSTED, verdict

__all__ = ["draw_sample", "review", "to_markdown", "to_html", "current_week", "MIN_LABELS"]

RUBRIC_KIND = {"relevance": "chunk", "faithfulness": "trace", "preference": "pair"}
SCALES = {"relevance": [0, 1, 2, 3], "faithfulness": [0, 1, 2], "preference": [0, 1, 2]}
WEIGHTS = {"relevance": "quadratic", "faithfulness": "quadratic", "preference": None}
CHOICES = ("A", "B", "tie")  # preference values, by candidate: 0 = A (the pair's first trace), 1 = B, 2 = tie
PASS = 2  # faithfulness: fully supported


def current_week(today: date | None = None) -> str:
    year, week, _ = (today or date.today()).isocalendar()
    return f"{year}-W{week:02d}"


def _check_week(week: str) -> str:
    try:
        date.fromisocalendar(int(week[:4]), int(week[6:]), 1)
        if week[4:6] != "-W" or len(week) != 8:
            raise ValueError
    except ValueError:
        raise StoreError(f"week {week!r}; expected an ISO week YYYY-Www, e.g. 2026-W49") from None
    return week


# ---------------------------------------------------------------- reading labels


def human_labels(store: Store, rubric: str) -> dict[int, dict[str, int]]:
    """item -> annotator -> current value. Preferences are mapped from the slot shown
    first to the candidate (0 = A, the pair's first trace; 1 = B; 2 = tie)."""
    rows = store.newest_labels_shown(rubric, RUBRIC_KIND[rubric])
    out: dict[int, dict[str, int]] = defaultdict(dict)
    for item, who, value, shown in rows:
        if value is None:
            continue
        if rubric == "preference" and shown == "BA" and value in (0, 1):
            value = 1 - value
        out[int(item)][who] = int(value)
    return dict(out)


def judge_answers(store: Store, fingerprint: str, rubric: str) -> dict[int, int]:
    """item -> the judge's answer: its grade (first repeat), or for pairs the candidate its
    swap-averaged preference favours (only pairs answered in both orders)."""
    rows = store.judge_values(fingerprint)
    if rubric != "preference":
        return {r["item_id"]: r["value"] for r in rows if (r["repeat"] or 0) == 0}
    out = {}
    for pair in summarize_pairs(rows)["pairs"]:
        p = pair["preference_a"]
        if p is not None:
            out[pair["item_id"]] = 0 if p > 0.5 else (1 if p < 0.5 else 2)
    return out


def consensus(values: list[int], rubric: str) -> int:
    """The people's answer: the median (lower middle) of ordinal grades; for
    preferences the majority, a tie between choices counting as "tie"."""
    values = sorted(values)
    if rubric != "preference":
        return values[(len(values) - 1) // 2]
    counts = {v: values.count(v) for v in set(values)}
    best = max(counts.values())
    winners = [v for v, c in counts.items() if c == best]
    return winners[0] if len(winners) == 1 else 2


# ---------------------------------------------------------------- sampling


def draw_sample(
    store: Store,
    week: str | None = None,
    n: int = 60,
    annotators: list[str] | tuple[str, ...] = (),
    seed: int = 0,
    fingerprint: str | None = None,
) -> dict[str, Any]:
    """This week's sample of ``n`` trace items not sampled in an earlier week,
    stratified (proportional allocation, at least one per stratum) by the
    judge's grade when ``fingerprint`` is given, else by system."""
    week = _check_week(week or current_week())
    if n < 1:
        raise StoreError(f"sample size {n}; expected at least 1")
    if store.review_sample_exists(week):
        raise StoreError(f"week {week} already has a review sample; review it, or choose another week")
    rows = store.unsampled_trace_items()
    if not rows:
        raise StoreError("no trace left to sample: every trace was in an earlier week's sample")
    answers = judge_answers(store, fingerprint, "faithfulness") if fingerprint else {}
    strata: dict[str, list[int]] = defaultdict(list)
    for item, system in rows:
        key = f"judge={answers[item]}" if fingerprint and item in answers else f"system={system}"
        strata[key].append(int(item))
    rng = random.Random(seed)
    total = len(rows)
    take = min(n, total)
    chosen: list[tuple[int, str]] = []
    # proportional allocation, at least one per stratum, largest remainders for the rest
    quotas = {k: max(1, int(take * len(v) / total)) for k, v in strata.items()}
    while sum(quotas.values()) > take:
        biggest = max(quotas, key=lambda k: quotas[k])
        quotas[biggest] -= 1
    spare = take - sum(quotas.values())
    for key in sorted(strata, key=lambda k: -(take * len(strata[k]) / total - quotas[k]))[:spare]:
        quotas[key] += 1
    for key in sorted(strata):
        members = sorted(strata[key])
        rng.shuffle(members)
        chosen += [(item, key) for item in members[: min(quotas[key], len(members))]]
    with store.write():
        store.add_review_sample(week, chosen)
        for name in annotators:
            annotator_id = store.annotator_id(name)
            store.assign_many([(item, annotator_id, rng.getrandbits(48)) for item, _ in chosen])
    counts: dict[str, int] = defaultdict(int)
    for _, key in chosen:
        counts[key] += 1
    return {
        "week": week,
        "sampled": len(chosen),
        "of": total,
        "strata": dict(counts),
        "annotators": list(annotators),
    }


# ---------------------------------------------------------------- the review


def _kappa(judge: list[int], people: list[int], rubric: str, bootstrap: int, seed: int) -> dict[str, Any]:
    result = cohen(judge, people, labels=SCALES[rubric], weights=WEIGHTS[rubric])
    kappa = result.get("kappa")
    ci = None
    if kappa is not None and bootstrap:
        low, high = bootstrap_ci(
            judge, people, weights=WEIGHTS[rubric], labels=SCALES[rubric], n_resamples=bootstrap, seed=seed
        )
        ci = None if low is None or high is None else [float(low), float(high)]
    return {
        "n": int(result.get("n", len(judge))),
        "kappa": kappa,
        "ci": ci,
        "weights": WEIGHTS[rubric] or "none",
        "observed_agreement": result.get("observed_agreement"),
        "undefined_reason": result.get("undefined_reason"),
        "confusion": result.get("confusion"),
        "labels": SCALES[rubric],
    }


def _ceiling(humans: dict[int, dict[str, int]], rubric: str, bootstrap: int, seed: int) -> dict[str, Any]:
    """Human-human kappa on the items two or more people labelled (the first two by name)."""
    a, b = [], []
    for votes in humans.values():
        if len(votes) >= 2:
            first, second = sorted(votes)[:2]
            a.append(votes[first])
            b.append(votes[second])
    if not a:
        return {"n": 0, "kappa": None, "ci": None, "undefined_reason": "no item labelled by two people"}
    return _kappa(a, b, rubric, bootstrap, seed)


def _position(store: Store, fingerprint: str) -> dict[str, Any]:

    return position_bias(from_slots(store.judge_values(fingerprint)))


def _pass_rate(
    humans: dict[int, dict[str, int]], answers: dict[int, int], rubric: str, alpha: float = 0.05
) -> dict[str, Any] | None:
    if rubric != "faithfulness":
        return None

    labelled = [i for i in humans if i in answers]
    unlabelled = [i for i in answers if i not in humans]
    if len(labelled) < 2 or not unlabelled:
        return {
            "undefined_reason": f"{len(labelled)} items graded by both people and the judge, "
            f"{len(unlabelled)} by the judge alone: too few for a corrected estimate"
        }
    y = [float(consensus(list(humans[i].values()), rubric) == PASS) for i in labelled]
    yhat = [float(answers[i] == PASS) for i in labelled]
    yhat_u = [float(answers[i] == PASS) for i in unlabelled]
    result = ppi_mean(y, yhat, yhat_u, alpha=alpha)
    result["judge_only"] = sum(yhat_u) / len(yhat_u)
    return result


def review(
    store: Store,
    week: str | None = None,
    min_labels: int = MIN_LABELS,
    bootstrap: int = 2000,
    seed: int = 0,
    save: bool = True,
    thresholds: tuple[float, float] = (TRUSTED, NOISY),
) -> dict[str, Any]:
    """Every judge's agreement with people this week (see the module docstring);
    ``thresholds``: (trusted, noisy) kappa of the verdict."""
    week = _check_week(week or current_week())
    sample = store.review_sample(week)
    judges = []
    for judge in store.judges():
        rubric = judge["rubric"]
        if rubric not in RUBRIC_KIND:
            continue
        humans = human_labels(store, rubric)
        answers = judge_answers(store, judge["fingerprint"], rubric)
        # an offline judge is fitted on human labels: on those items its own answers are in-sample,
        # so the review reads its out-of-fold (cross-validated) answers there instead
        out_of_fold = {int(i): int(v) for i, v in (judge["settings"].get("out_of_fold") or {}).items()}
        answers.update(out_of_fold)
        trained = set(judge["settings"].get("trained_on") or []) - set(out_of_fold)
        items = sorted(i for i in humans if i in answers and i not in trained and (not sample or i in sample))
        people = [consensus(list(humans[i].values()), rubric) for i in items]
        entry: dict[str, Any] = {
            "fingerprint": judge["fingerprint"],
            "kind": judge["kind"],
            "rubric": rubric,
            "model": judge["model"],
            "endpoint": judge["endpoint"],
            "scope": f"this week's sample ({len(sample)} items)" if sample else "every labelled item",
            "left_out_fitted_on": len(trained & set(humans)),
            "out_of_fold": len(set(out_of_fold) & set(items)),
            "consensus": _kappa([answers[i] for i in items], people, rubric, bootstrap, seed),
            "annotators": {},
            "ceiling": _ceiling(
                {i: humans[i] for i in humans if not sample or i in sample}, rubric, bootstrap, seed
            ),
        }
        names = sorted({name for i in items for name in humans[i]})
        for name in names:
            mine = [i for i in items if name in humans[i]]
            entry["annotators"][name] = _kappa(
                [answers[i] for i in mine], [humans[i][name] for i in mine], rubric, 0, seed
            )
        n = entry["consensus"]["n"]
        kappa = entry["consensus"]["kappa"]
        entry["verdict"] = "uncalibrated" if n < min_labels else verdict(kappa, *thresholds)
        entry["status_reason"] = (
            f"{n} human-labelled items, fewer than the {min_labels} needed" if n < min_labels else None
        )
        entry["position"] = _position(store, judge["fingerprint"]) if rubric == "preference" else None
        entry["pass_rate"] = _pass_rate({i: humans[i] for i in humans if i not in trained}, answers, rubric)
        judges.append(entry)
    report = {
        "week": week,
        "min_labels": min_labels,
        "bootstrap": bootstrap,
        "seed": seed,
        "thresholds": {"trusted": thresholds[0], "noisy": thresholds[1]},
        "judges": judges,
    }
    if save:
        _save(store, report)
    report["trend"] = trend(store)
    return report


def _save(store: Store, report: dict[str, Any]) -> None:
    rows = []
    for j in report["judges"]:
        c = j["consensus"]
        ci = c["ci"] or [None, None]
        rows.append(
            {
                "fingerprint": j["fingerprint"],
                "rubric": j["rubric"],
                "window": report["week"],
                "n": c["n"],
                "kappa": c["kappa"],
                "ci_low": ci[0],
                "ci_high": ci[1],
                "weights": c["weights"],
                "verdict": j["verdict"],
                "sample": j["scope"],
            }
        )
    store.add_calibrations(rows)


def trend(store: Store) -> list[dict[str, Any]]:
    """The newest review per (judge, week), oldest week first."""
    rows = store.calibration_trend()
    return [
        {
            "fingerprint": fp,
            "rubric": r,
            "week": w,
            "n": n,
            "kappa": k,
            "ci": [lo, hi] if lo is not None else None,
            "verdict": v,
        }
        for fp, r, w, n, k, lo, hi, v in rows
    ]


def latest_calibration(store: Store, fingerprint: str) -> dict[str, Any] | None:
    """A judge's newest saved review: what every judge-derived figure must carry beside it."""
    for row in reversed(trend(store)):
        if row["fingerprint"] == fingerprint:
            return row
    return None


# ---------------------------------------------------------------- export


def _k(entry: dict[str, Any]) -> str:
    if entry.get("kappa") is None:
        return f"undefined ({entry.get('undefined_reason') or 'no items'})"
    ci = entry.get("ci")
    return f"{entry['kappa']:.3f}" + (f" [{ci[0]:.3f}, {ci[1]:.3f}]" if ci else "") + f" (n = {entry['n']})"


def position_text(p: dict[str, Any]) -> str:
    """A pairwise judge's position bias in one sentence (the report's and the page's wording)."""

    def f(key: str) -> str:
        return num(p.get(key), 3, "prose")

    return (
        f"position bias over {p['n_pairs']} pairs asked in both orders: consistency "
        f"{f('position_consistency')}, primacy {f('primacy_rate')}, recency {f('recency_rate')}, "
        f"preference fairness {f('preference_fairness')}, repetition stability {f('repetition_stability')}, "
        f"mean swap-averaged preference for A {f('mean_preference_A')}"
    )


def pass_rate_text(rate: dict[str, Any]) -> str:
    """The faithfulness pass rate corrected by PPI beside the people-only one, with what each rests
    on, or why it was not corrected (the report's and the page's wording)."""
    if rate.get("estimate") is None:
        return f"faithfulness pass rate: not corrected ({rate['undefined_reason']})"
    human = rate["human_only"]
    return (
        f"faithfulness pass rate, corrected (PPI): {rate['estimate']:.3f} {interval(rate['ci'], 3, 'prose')} "
        f"from {rate['n_labeled']} labelled and {rate['n_unlabeled']} judge-only items; people only: "
        f"{human['estimate']:.3f} {interval(human['ci'], 3, 'prose')}; the judge alone says {rate['judge_only']:.3f}"
    )


def summary_lines(report: dict[str, Any]) -> list[tuple[str, list[str]]]:
    """(heading, lines) per judge: the figures every export shows, in words."""
    out = []
    for j in report["judges"]:
        lines = [
            f"judge {j['fingerprint'][:16]} ({j['kind']}, {j['model']} at {j['endpoint']}), rubric {j['rubric']}, "
            f"{j['scope']}",
            f"verdict: {j['verdict']}" + (f" ({j['status_reason']})" if j["status_reason"] else ""),
            f"kappa vs the people's consensus ({j['consensus']['weights']} weights): {_k(j['consensus'])}",
            f"human-human kappa (the ceiling): {_k(j['ceiling'])}",
        ]
        if j["left_out_fitted_on"]:
            lines.append(f"left out: {j['left_out_fitted_on']} items this judge was fitted on")
        if j["out_of_fold"]:
            lines.append(
                f"on the {j['out_of_fold']} items this offline judge was fitted on, its out-of-fold "
                "(cross-validated) answers are compared, not its in-sample ones"
            )
        for name, entry in j["annotators"].items():
            lines.append(f"kappa vs {name}: {_k(entry)}")
        if j["position"]:
            lines.append(position_text(j["position"]))
        if j["pass_rate"]:
            lines.append(pass_rate_text(j["pass_rate"]))
        out.append((f"{j['rubric']}: judge {j['fingerprint'][:16]}", lines))
    return out


def to_markdown(report: dict[str, Any]) -> str:
    parts = [f"# Judge review, week {report['week']}", ""]
    if not report["judges"]:
        parts.append("No judge has graded anything yet.")
    for heading, lines in summary_lines(report):
        parts += [f"## {heading}", "", *[f"- {line}" for line in lines], ""]
    if report.get("trend"):
        parts += [
            "## Trend",
            "",
            "| week | judge | rubric | n | kappa | CI | verdict |",
            "|---|---|---|---:|---:|---|---|",
        ]
        for t in report["trend"]:
            kappa = num(t["kappa"], 3, "prose")
            ci = "" if not t["ci"] else f"[{t['ci'][0]:.3f}, {t['ci'][1]:.3f}]"
            parts.append(
                f"| {t['week']} | {t['fingerprint'][:16]} | {t['rubric']} | {t['n']} | {kappa} | {ci} | {t['verdict']} |"
            )
    return "\n".join(parts).rstrip() + "\n"


def to_html(report: dict[str, Any]) -> str:
    body = [f"<h1>Judge review, week {html.escape(report['week'])}</h1>"]
    for heading, lines in summary_lines(report):
        body.append(f"<h2>{html.escape(heading)}</h2><ul>")
        body += [f"<li>{html.escape(line)}</li>" for line in lines]
        body.append("</ul>")
    if report.get("trend"):
        body.append(
            "<h2>Trend</h2><table><tr><th>week</th><th>judge</th><th>rubric</th><th>n</th>"
            "<th>kappa</th><th>verdict</th></tr>"
        )
        for t in report["trend"]:
            kappa = num(t["kappa"], 3, "prose")
            body.append(
                "<tr>"
                + "".join(
                    f"<td>{html.escape(str(c))}</td>"
                    for c in (t["week"], t["fingerprint"][:16], t["rubric"], t["n"], kappa, t["verdict"])
                )
                + "</tr>"
            )
        body.append("</table>")
    return (
        "<!doctype html><html><head><meta charset='utf-8'><title>Judge review "
        f"{html.escape(report['week'])}</title></head><body>" + "\n".join(body) + "</body></html>\n"
    )


def to_json(report: dict[str, Any]) -> str:
    return json.dumps(report, indent=1, default=str) + "\n"
