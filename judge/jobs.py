"""Judge jobs as the command line and the Judge page run them: plan an LLM run
(its fingerprint, what is left to ask, an estimate of tokens) and grade with
the offline judge. Both faces call these; neither holds judge logic.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from annotation.store import Store
from judge.client import Endpoint
from judge.prompts import build_messages, fingerprint, judge_settings
from judge.runner import Call

__all__ = ["Plan", "plan_llm", "grade_offline", "OUT_TOKENS_ESTIMATE"]

OUT_TOKENS_ESTIMATE = 80  # a reason of one or two sentences and the grade


@dataclass
class Plan:
    fingerprint: str
    settings: dict[str, Any]
    calls: list[Call]  # every call of the job
    todo: list[Call]  # those not done by an earlier run

    @property
    def already_done(self) -> int:
        return len(self.calls) - len(self.todo)

    def estimate(self) -> tuple[int, int]:
        """(input, output) tokens of the calls left: characters / 4, and a short reply each."""
        rubric = self.settings["rubric"]
        tokens_in = sum(
            sum(len(m["content"]) for m in build_messages(rubric, c.data)) // 4 for c in self.todo
        )
        return tokens_in, OUT_TOKENS_ESTIMATE * len(self.todo)


def plan_llm(store: Store, rubric: str, calls: list[Call], endpoint: Endpoint, schema_mode: str) -> Plan:
    settings = judge_settings(
        rubric, endpoint.model, endpoint.base_url, endpoint.temperature, endpoint.seed, schema_mode
    )
    fp = fingerprint(settings)
    done = store.judge_done(fp)
    return Plan(fp, settings, calls, [c for c in calls if c.done_key not in done])


def grade_offline(
    store: Store, rubric: str, seed: int = 0, limit: int | None = None, dry_run: bool = False
) -> dict[str, Any]:
    """Fit the offline judge on the human labels, report its cross-validated
    agreement with them, and (unless ``dry_run``) store its grade of every item
    of the rubric not graded by this same judge before."""
    from judge.lexical import FEATURES_VERSION, LexicalJudge, cross_validate, item_texts, training_data

    data = training_data(store, rubric)
    a, b, y = [r[1] for r in data], [r[2] for r in data], [r[3] for r in data]
    judge = LexicalJudge()
    judge.fit(a, b, y, rubric, seed=seed, item_ids=[r[0] for r in data])
    cv = cross_validate(a, b, y, rubric, seed=seed)
    fp = judge.fingerprint
    items = item_texts(store, rubric)
    if limit:
        items = items[:limit]
    done = store.judge_done(fp)
    todo = [row for row in items if (row[0], None, 0) not in done]
    report = {
        "fingerprint": fp,
        "features": FEATURES_VERSION,
        "rubric": rubric,
        "fitted_on": len(y),
        "items": len(items),
        "already_done": len(items) - len(todo),
        "graded": 0,
        "agreement": cv,
    }
    if dry_run or not todo:
        return report
    grades = judge.predict([r[1] for r in todo], [r[2] for r in todo])
    plain = {k: v for k, v in cv.items() if isinstance(v, (int, float, str, type(None)))}
    described = judge.describe()
    settings = {
        **described,
        "kind": "lexical",
        "rubric": rubric,
        "endpoint": "offline",
        "model": described.get("model"),
        "prompt_version": FEATURES_VERSION,
        "seed": seed,
        "agreement": plain,
        "trained_on": [int(r[0]) for r in data],
        # on the items it was fitted on, the review reads its out-of-fold answers (in-sample ones flatter)
        "out_of_fold": {str(int(r[0])): int(p) for r, p in zip(data, cv["predictions"])},
    }
    store.register_judge(fp, settings)
    store.add_judge_labels(
        [
            {"item_id": row[0], "fingerprint": fp, "repeat": 0, "value": int(g), "reason": FEATURES_VERSION}
            for row, g in zip(todo, grades)
        ]
    )
    report["graded"] = len(todo)
    return report


def agreement_line(cv: dict[str, Any]) -> str:
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


def agreement_mark(store: Store, judge: dict[str, Any]) -> str:
    """What a judge's figures must carry beside them: its newest saved review (verdict,
    kappa, CI, n, week), else the offline judge's cross-validated kappa, else "uncalibrated"."""
    from calibration.review import latest_calibration

    latest = latest_calibration(store, judge["fingerprint"])
    if latest is not None:
        kappa = "undefined" if latest["kappa"] is None else f"{latest['kappa']:.3f}"
        ci = f" [{latest['ci'][0]:.3f}, {latest['ci'][1]:.3f}]" if latest["ci"] else ""
        return f"{latest['verdict']}: kappa {kappa}{ci} against people (n = {latest['n']}, week {latest['week']})"
    cv = judge["settings"].get("agreement") or {}
    if cv.get("kappa_quadratic") is not None:
        return (
            f"cross-validated kappa {cv['kappa_quadratic']:.3f} against people (n = {cv['n']}); no review yet"
        )
    return "uncalibrated: no review against people yet"
