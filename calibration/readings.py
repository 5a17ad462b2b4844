"""One reading per judge (issue #40, item 7): every current judge's agreement with people as
``review`` and ``check`` read it now, and that reading in one line. ``judge list``, the Judge page,
the Metrics page's label sets and Holes section, and the Check section all quote these, so a judge
has one kappa, interval, n and verdict wherever it is shown.

The statistics (the review's, with scipy.special; no scikit-learn and no scipy.stats since #42) load
when a reading is asked for, not when this module is imported.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from annotation.render import num

if TYPE_CHECKING:
    from collections.abc import Collection

    from annotation.store import Store
    from calibration.policy.rules import Policy
    from calibration.results import PairSummary, ReviewReport


def current_readings(store: Store) -> dict[str, Any]:
    """fingerprint -> every current judge's agreement with people as ``review`` and ``check`` read it
    now: the policy's bar, statistic, min_queries and staleness, the design-aware interval, the
    verdict. The policy file is the default one (./denominator.yaml when present, else the
    defaults); a policy that does not parse falls back to the defaults."""
    # start-up: the review's statistics (scipy.special, ~0.3 s), only where a judge's reading is shown
    from calibration.gate import load_policy
    from calibration.policy.rules import DEFAULT_POLICY

    try:
        policy = load_policy()
    except ValueError:
        policy = DEFAULT_POLICY
    # a reading shows no pass rate: not computed (its interval would load scipy.stats, ~0.6 s of CPU)
    report = verdicts(store, policy, "judge list", pass_rates=False)
    return {j["fingerprint"]: j for j in report["judges"]}


def verdicts(
    store: Store,
    policy: Policy,
    face: str,
    scope_queries: Collection[str] | None = None,
    scope_name: str = "",
    *,
    pass_rates: bool = True,
) -> ReviewReport:
    """Every current judge's verdict under ``policy`` (its bar, statistic, min_queries and staleness),
    read by ``face`` and not saved: the one call behind :func:`current_readings` and ``check``'s judge
    rules (which scope it to a golden set's queries); ``pass_rates=False``: no judge's pass rate
    (None), for a face that shows none."""
    # start-up: the review's statistics, only where a verdict is read
    from calibration.gate import verdict_settings
    from calibration.review import review

    bar, statistic = verdict_settings(policy)
    return review(
        store,
        save=False,
        bar=bar,
        statistic=statistic,
        verdicts_only=True,
        min_queries=policy.min_queries,
        face=face,
        stale_after_weeks=policy.stale_after_weeks,
        scope_queries=scope_queries,
        scope_name=scope_name,
        pass_rates=pass_rates,
    )


def reading_mark(judge: Any) -> str:
    """One judge's current reading in a line: ``not trusted: unweighted kappa 0.145 [0.02, 0.31] against
    people (n = 37 over 6 queries)``, with the reason when there is no verdict."""
    c = judge["consensus"]
    kappa = num(c.get("kappa"), 3, "prose")
    ci = f" [{c['ci'][0]:.3f}, {c['ci'][1]:.3f}]" if c.get("ci") else ""
    queries = (c.get("design") or {}).get("queries")
    over = f" over {queries} {'query' if queries == 1 else 'queries'}" if queries is not None else ""
    why = f" ({judge['status_reason']})" if judge.get("status_reason") else ""
    return f"{judge['verdict']}{why}: {c.get('statistic', 'unweighted')} kappa {kappa}{ci} against people (n = {c.get('n', 0)}{over})"


def reading_of(store: Store, fingerprint: str) -> str | None:
    """The current reading of the judge with ``fingerprint`` in a line, or None when the review
    reads no such current judge."""
    found = current_readings(store).get(fingerprint)
    return reading_mark(found) if found is not None else None


def pair_summary(store: Store, fingerprint: str) -> PairSummary:
    """A pairwise judge's swap-and-average over the pairs it answered in both orders."""
    # start-up: the position statistics (numpy), only for a pairwise judge's summary
    from calibration.stats.position import summarize_pairs

    # boundary: calibration.stats.position.summarize_pairs gives this shape as dict[str, Any]
    return summarize_pairs(store.judge_values(fingerprint))


def agreement_mark(store: Store, judge: Mapping[str, Any], readings: dict[str, Any] | None = None) -> str:
    """What a judge's figures must carry beside them: its current reading (:func:`current_readings`,
    the one ``review`` and ``check`` give it now); for a judge the review does not read (an earlier
    version), its newest saved review, marked as saved; else the offline judge's cross-validated
    kappa, else "uncalibrated"."""
    readings = current_readings(store) if readings is None else readings
    if judge["fingerprint"] in readings:
        return reading_mark(readings[judge["fingerprint"]])
    from calibration.review import latest_calibration  # start-up: the review's statistics, ~0.3 s

    latest = latest_calibration(store, judge["fingerprint"])
    if latest is not None:
        kappa = num(latest["kappa"], 3, "prose")
        ci = f" [{latest['ci'][0]:.3f}, {latest['ci'][1]:.3f}]" if latest["ci"] else ""
        return (
            f"{latest['verdict']}: kappa {kappa}{ci} against people (n = {latest['n']}, saved review of week "
            f"{latest['week']}; not the current version)"
        )
    cv = judge["settings"].get("agreement") or {}
    if cv.get("kappa_quadratic") is not None:
        return (
            f"cross-validated kappa {cv['kappa_quadratic']:.3f} against people (n = {cv['n']}); no review yet"
        )
    return "uncalibrated: no review against people yet"
