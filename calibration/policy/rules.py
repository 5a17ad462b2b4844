"""The policy: every bar a build is held to, in one place (``denominator.yaml``).

The defaults are the thresholds table of the essay this product is built on,
each rule with the sentence it comes from. A rule has a name, a comparison
(its strictness is part of it: ``> 0.95`` lets 0.95 fail) and a scope:

- rules about **queries** (``all_queries``, ``stage1_recall``, ``recall_at_20``,
  ``rel_at_least_k``, ``no_duplicates``, ``label_coverage``, ``judged_at_k``)
  are judged per query and fail when any query fails (the failing queries are
  listed); ``all_queries`` fails when a golden query with judged relevant
  documents is not in the run (a smaller run is a changed denominator, never an
  improvement);
- rules about **judges** (``faithfulness``, ``kappa``) are judged per judge and
  rubric on one reading of an interval: passed when its lower end meets the bar,
  failed when its upper end does not; in between (undecided), or with too few
  labels (uncalibrated), or undefined, the figure is not shown and the rule
  fails, unless the policy says ``undecided: warn`` (a warning, listed, that
  fails no build).

``corpus: narrow | broad`` (default narrow) decides which faithfulness bar
applies (0.7 or 0.5; one bar given, or off, holds for both) and whether ``recall_at_20`` applies at all. A rule with no bar
(``label_coverage`` until a team sets one: the essay names none) is off.

The ``diagnosis`` section holds the product's own bars for ``ranking_weak``
(nDCG@k and RR; :mod:`calibration.policy.check`); they are not the essay's, and say
so. ``loss_at_cut`` needs no bar (the kept top k holds fewer relevant chunks
than stage 1 found and k could hold), ``retrieval_weak`` reads
``stage1_recall`` and ``labels_thin`` reads ``judged_at_k`` and
``label_coverage``.

Pure: :func:`policy_from_mapping` takes what a YAML file or a page gave; the
file is read by :func:`calibration.gate.load_policy`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from calibration.policy.keys import CHOICE_KEYS, WHOLE_KEYS, InvalidPolicy, choice, quoted, whole
from calibration.results import PolicyJSON
from calibration.stats.verdict import DEFAULT_STATISTIC, STALE_AFTER_WEEKS, STATISTICS, TRUSTED
from calibration.stats.verdict import MIN_QUERIES as VERDICT_QUERIES

__all__ = [
    "InvalidPolicy",
    "Bar",
    "Rule",
    "Policy",
    "RULES",
    "DEFAULT_POLICY",
    "parse_bar",
    "policy_from_mapping",
    "override",
    "rules_table",
    "UNDECIDED",
]

Corpus = Literal["narrow", "broad"]
CORPORA: tuple[Corpus, ...] = ("narrow", "broad")
# what a judge rule does with a figure that is not shown (undecided, uncalibrated, undefined)
UNDECIDED = CHOICE_KEYS["undecided"]


@dataclass(frozen=True)
class Bar:
    """``value`` compared by ``op``: what a figure must satisfy to pass."""

    op: str
    value: float

    def holds(self, x: float) -> bool:
        """Compares the unrounded figure: 0.5996 does not meet ``>= 0.6``."""
        return {
            ">=": x >= self.value,
            ">": x > self.value,
            "<=": x <= self.value,
            "<": x < self.value,
            "=": x == self.value,
        }[self.op]

    def __str__(self) -> str:
        return f"{self.op} {self.value:g}"


_BAR_RE = re.compile(r"^\s*(>=|<=|>|<|=)?\s*([-+0-9.eE]+)\s*$")


def parse_bar(text: Any, where: str, default_op: str = ">=") -> Bar | None:
    """``"> 0.95"``, ``">= 0.8"``, a bare number (``default_op``), or off (``off``, ``null``, ``false``)."""
    if (
        text is None
        or text is False
        or (isinstance(text, str) and text.strip().lower() in ("off", "none", ""))
    ):
        return None
    if isinstance(text, bool):
        raise InvalidPolicy(f"{where}: {quoted(text)}; expected a bar such as '>= 0.8', or off")
    if isinstance(text, (int, float)):
        value, op = float(text), default_op
    else:
        match = _BAR_RE.match(str(text))
        if not match:
            raise InvalidPolicy(
                f"{where}: {quoted(str(text))}; expected a bar such as '>= 0.8' or '> 0.95', or off"
            )
        op = match.group(1) or default_op
        try:
            value = float(match.group(2))
        except ValueError:
            raise InvalidPolicy(f"{where}: {quoted(str(text))}; expected a number after {op}") from None
    if not math.isfinite(value):
        raise InvalidPolicy(f"{where}: {quoted(text)}; expected a finite number")
    return Bar(op, value)


@dataclass(frozen=True)
class Rule:
    """One row of the thresholds table."""

    name: str
    scope: Literal["query", "judge"]
    figure: str  # what is compared, in words
    bar: Bar | None  # None: off
    source: str  # the sentence it comes from
    broad_bar: Bar | None = None  # faithfulness: the bar for broad corpora
    corpora: tuple[Corpus, ...] = CORPORA  # where the rule applies
    split: bool = False  # a bar per corpus (faithfulness): broad reads broad_bar, off there is off

    def bar_for(self, corpus: Corpus) -> Bar | None:
        if corpus not in self.corpora:
            return None
        return self.broad_bar if corpus == "broad" and self.split else self.bar

    def bar_text(self, corpus: Corpus | None, k: int | None = None) -> str:
        """The bar as printed beside the rule: ``> 0.95``, ``>= k (5)``, ``off``, ``broad corpora only``;
        ``corpus`` None: the bars of every corpus (the table of docs/check.md and ``check --help``)."""
        if corpus is None:
            if self.split and self.broad_bar != self.bar:
                return f"{self.bar or 'off'} narrow, {self.broad_bar} broad"
            if self.corpora != CORPORA:
                return f"{self.bar or 'off'} ({' and '.join(self.corpora)} corpora)"
            corpus = "narrow"
        if corpus not in self.corpora:
            return f"{' and '.join(self.corpora)} corpora only"
        bar = self.bar_for(corpus)
        if bar is None:
            return "off"
        if self.name == "rel_at_least_k":
            return ">= k" + (f" ({k})" if k is not None else "")
        if self.name == "no_duplicates":
            return "= 0"
        if self.name == "all_queries":
            return "every query"
        return str(bar)


ESSAY = "the essay's thresholds table"
RULES: tuple[Rule, ...] = (
    Rule(
        "all_queries",
        "query",
        "golden queries with |Rel| > 0 that the run holds",
        Bar("=", 0.0),  # queries missing from the run: none
        "every query of the golden set counts: a run that leaves one out changes the denominator "
        "(check --missing zero scores it 0 instead)",
    ),
    Rule(
        "stage1_recall",
        "query",
        "stage-1 (fetch) recall",
        Bar(">", 0.95),
        "stage-1 recall above 0.95: what the fetch misses no reranker can recover",
    ),
    Rule(
        "recall_at_20",
        "query",
        "R@20 of the run",
        Bar(">=", 0.8),
        "R@20 >= 0.8 for broad corpora",
        corpora=("broad",),
    ),
    Rule(
        "faithfulness",
        "judge",
        "pass rate of faithfulness grades (people, or a trusted judge corrected by PPI)",
        Bar(">=", 0.7),
        "faithfulness 0.7+ for narrow corpora, 0.5+ for broad ones",
        broad_bar=Bar(">=", 0.5),
        split=True,
    ),
    Rule(
        "kappa",
        "judge",
        "the judge's calibration verdict against people",
        Bar(">=", TRUSTED),
        "judge kappa >= 0.6, or re-tune or swap the judge",
    ),
    Rule(
        "rel_at_least_k",
        "query",
        "|Rel|, judged relevant documents of the query",
        Bar(">=", 1.0),  # a factor of k: |Rel| >= 1 * k
        "fail the build on |Rel| < k: below it precision@k can never reach 1",
    ),
    Rule(
        "no_duplicates",
        "query",
        "document ids repeated in a ranking",
        Bar("=", 0.0),
        "fail the build on duplicates: a repeated chunk shows the model the same text twice",
    ),
    Rule(
        "label_coverage",
        "query",
        "judged documents / corpus size",
        None,
        "fail the build on low label coverage (the essay names no bar: off until a team sets one)",
    ),
    Rule(
        "judged_at_k",
        "query",
        "share of the top k that has a judgment",
        Bar(">=", 0.25),
        "unjudged documents count as not relevant: a top k mostly unjudged says little (the audit's bar)",
    ),
)
RULE_NAMES = tuple(rule.name for rule in RULES)

# "30-50 queries before comparing systems": below it, every comparison carries a note
MIN_QUERIES = 30


def few_queries_note(n: int) -> str:
    """The one wording of "too few queries to compare systems" (compare, check, the pages); ``n``
    counts the queries with a judged relevant chunk, the ones a recall or a difference rests on."""
    return (
        f"{n} {'query' if n == 1 else 'queries'} with a judged relevant chunk: the essay asks for "
        f"{MIN_QUERIES}-50 before comparing systems; "
        "a difference over so few queries is an anecdote"
    )


ON_OFF_RULES = ("all_queries", "rel_at_least_k", "no_duplicates")  # on or off, no bar to set


@dataclass(frozen=True)
class Diagnosis:
    """The product's bars for ``ranking_weak`` (not the essay's): nDCG@k or RR below them."""

    ndcg: float = 0.5
    rr: float = 0.5


RECALL_SHARE_GONE = (
    "diagnosis.recall_share is gone: loss_at_cut now needs no bar (the kept top k holds fewer relevant "
    "chunks than stage 1 found and k could hold); remove it"
)


@dataclass(frozen=True)
class Policy:
    corpus: Corpus = "narrow"
    rules: tuple[Rule, ...] = RULES
    diagnosis: Diagnosis = field(default_factory=Diagnosis)
    source: str = "the defaults (the essay's table)"
    kappa_statistic: str = DEFAULT_STATISTIC  # what the kappa bar applies to (the essay: unweighted)
    undecided: str = "fail"  # a judge figure not shown (undecided, uncalibrated): fail, or warn
    not_evaluated: str = "fail"  # a rule that applies with no evidence to evaluate it on: fail, or warn
    min_queries: int = VERDICT_QUERIES  # queries a judge verdict needs (issue #39): fewer, uncalibrated
    stale_after_weeks: int = STALE_AFTER_WEEKS  # a verdict on older labels is stale (issue #40)

    def rule(self, name: str) -> Rule:
        for rule in self.rules:
            if rule.name == name:
                return rule
        raise InvalidPolicy(f"unknown rule {quoted(name)}; expected one of {', '.join(RULE_NAMES)}")

    def bar(self, name: str) -> Bar | None:
        return self.rule(name).bar_for(self.corpus)

    def to_json(self) -> PolicyJSON:
        return {
            "source": self.source,
            "corpus": self.corpus,
            "kappa_statistic": self.kappa_statistic,
            "undecided": self.undecided,
            "not_evaluated": self.not_evaluated,
            "min_queries": self.min_queries,
            "stale_after_weeks": self.stale_after_weeks,
            "rules": {
                r.name: (None if r.bar_for(self.corpus) is None else r.bar_text(self.corpus))
                for r in self.rules
            },
            "diagnosis": {
                "ndcg": self.diagnosis.ndcg,
                "rr": self.diagnosis.rr,
            },
        }


DEFAULT_POLICY = Policy()


def _with_bar(rule: Rule, value: Any, where: str) -> Rule:
    if rule.name in ON_OFF_RULES:
        if value in (True, "on", "true"):
            return replace(rule, bar=_default(rule.name).bar)
        if value in (False, None, "off", "false"):
            return replace(rule, bar=None)
        raise InvalidPolicy(f"{where}: {quoted(value)}; expected true (on) or false (off)")
    if rule.name == "faithfulness" and isinstance(value, Mapping):
        unknown = set(value) - set(CORPORA)
        if unknown:
            raise InvalidPolicy(
                f"{where}: unknown key {quoted(sorted(map(str, unknown))[0])}; expected narrow and/or broad"
            )
        out = rule
        if "narrow" in value:
            out = replace(out, bar=parse_bar(value["narrow"], f"{where}.narrow"))
        if "broad" in value:
            out = replace(out, broad_bar=parse_bar(value["broad"], f"{where}.broad"))
        return out
    bar = parse_bar(value, where)
    if bar is not None and not 0.0 <= bar.value <= 1.0:
        raise InvalidPolicy(f"{where}: {quoted(value)}; expected a bar between 0 and 1")
    if rule.name == "faithfulness":  # one bar (or off) for both corpora, whichever is in force
        return replace(rule, bar=bar, broad_bar=bar)
    if rule.name == "kappa" and bar is not None and bar.op != ">=":
        # the verdict reads an interval against one bar: trusted when its lower end reaches it
        raise InvalidPolicy(
            f"{where}: {quoted(value)}; the kappa bar is '>= K' (trusted when the interval's lower end reaches K), "
            "e.g. '>= 0.6', or off"
        )
    return replace(rule, bar=bar)


def _default(name: str) -> Rule:
    return next(rule for rule in RULES if rule.name == name)


def policy_from_mapping(data: Any, source: str = "the policy") -> Policy:
    """A policy from a YAML mapping: ``corpus``, ``rules: {name: bar}``, ``diagnosis: {...}``."""
    if data is None:
        return replace(DEFAULT_POLICY, source=source)
    if not isinstance(data, Mapping):
        raise InvalidPolicy(f"{source}: expected a mapping with corpus, rules and diagnosis")
    unknown = set(data) - {"corpus", "rules", "diagnosis", "kappa_statistic", *CHOICE_KEYS, *WHOLE_KEYS}
    if unknown:
        raise InvalidPolicy(
            f"{source}: unknown key {quoted(sorted(map(str, unknown))[0])}; expected corpus, kappa_statistic, "
            "undecided, not_evaluated, min_queries, stale_after_weeks, rules, diagnosis"
        )
    numbers = {k: whole(data[k], f"{source}: {k}", k) for k in WHOLE_KEYS if k in data}
    choices = {k: choice(data[k], f"{source}: {k}", k) for k in CHOICE_KEYS if k in data}
    statistic = data.get("kappa_statistic", DEFAULT_STATISTIC)
    if statistic not in STATISTICS:
        raise InvalidPolicy(
            f"{source}: kappa_statistic: {quoted(statistic)}; expected one of {', '.join(STATISTICS)}"
        )
    corpus = data.get("corpus", "narrow")
    if corpus not in CORPORA:
        raise InvalidPolicy(f"{source}: corpus: {quoted(corpus)}; expected narrow or broad")
    rules = {rule.name: rule for rule in RULES}
    given = data.get("rules") or {}
    if not isinstance(given, Mapping):
        raise InvalidPolicy(f"{source}: rules: expected a mapping of rule name to bar")
    for name, value in given.items():
        if name not in rules:
            raise InvalidPolicy(
                f"{source}: rules: unknown rule {quoted(name)}; expected one of {', '.join(RULE_NAMES)}"
            )
        rules[name] = _with_bar(rules[name], value, f"{source}: rules.{name}")
    diagnosis = Diagnosis()
    given_d = data.get("diagnosis") or {}
    if not isinstance(given_d, Mapping):
        raise InvalidPolicy(f"{source}: diagnosis: expected a mapping")
    for key, value in given_d.items():
        if key == "recall_share":
            raise InvalidPolicy(f"{source}: {RECALL_SHARE_GONE}")
        if key not in ("ndcg", "rr"):
            raise InvalidPolicy(f"{source}: diagnosis: unknown key {quoted(key)}; expected ndcg, rr")
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
            raise InvalidPolicy(
                f"{source}: diagnosis.{key}: {quoted(value)}; expected a number between 0 and 1"
            )
        diagnosis = replace(diagnosis, **{key: float(value)})
    policy = Policy(corpus, tuple(rules[r.name] for r in RULES), diagnosis, source, statistic)
    for key, number in numbers.items():
        policy = _set(policy, key, number)
    for key, said in choices.items():
        policy = _set(policy, key, said)
    return policy


def _set(policy: Policy, key: str, value: int | str) -> Policy:
    """The policy with one plain key (``calibration.policy.keys``) set."""
    if key == "min_queries":
        return replace(policy, min_queries=int(value))
    if key == "stale_after_weeks":
        return replace(policy, stale_after_weeks=int(value))
    if key == "undecided":
        return replace(policy, undecided=str(value))
    return replace(policy, not_evaluated=str(value))


_OVERRIDE_RE = re.compile(r"^\s*([a-z0-9_]+)\s*(>=|<=|>|<|=)\s*(.+?)\s*$")


def override(policy: Policy, texts: Sequence[str]) -> Policy:
    """Command-line overrides: ``stage1_recall>0.9``, ``label_coverage>=0.01``, ``kappa=off``,
    ``corpus=broad``, ``no_duplicates=off``, ``undecided=warn``, ``not_evaluated=warn``."""
    for text in texts:
        match = _OVERRIDE_RE.match(text)
        if not match:
            raise InvalidPolicy(
                f"--rule {quoted(text)}; expected NAME OP BAR, e.g. 'stage1_recall>0.95' or 'kappa=off'"
            )
        name, op, value = match.groups()
        if name == "kappa_statistic":
            if op != "=" or value not in STATISTICS:
                raise InvalidPolicy(f"--rule {quoted(text)}; expected kappa_statistic={'|'.join(STATISTICS)}")
            policy = replace(policy, kappa_statistic=value)
            continue
        if name in CHOICE_KEYS or name in WHOLE_KEYS:
            if op != "=":
                expected = "N" if name in WHOLE_KEYS else "fail|warn"
                raise InvalidPolicy(f"--rule {quoted(text)}; expected {name}={expected}")
            where = f"--rule {quoted(text)}"
            setting = whole(value, where, name) if name in WHOLE_KEYS else choice(value, where, name)
            policy = _set(policy, name, setting)
            continue
        if name == "corpus":
            if op != "=" or value not in CORPORA:
                raise InvalidPolicy(f"--rule {quoted(text)}; expected corpus=narrow or corpus=broad")
            policy = replace(policy, corpus=value)
            continue
        rule = policy.rule(name)
        where = f"--rule {quoted(text)}"
        if op == "=" and value.lower() in ("off", "on", "true", "false"):
            given: Any = value.lower()
            if name not in ON_OFF_RULES:
                if given == "off":
                    given = None
                else:
                    given = str(_default(name).bar_for(policy.corpus) or "off")
        else:
            given = f"{op} {value}"
        new = _with_bar(rule, given, where)
        policy = replace(policy, rules=tuple(new if r.name == name else r for r in policy.rules))
    return policy


def rules_table(
    policy: Policy = DEFAULT_POLICY, k: int | None = None, every_corpus: bool = False
) -> list[tuple[str, str, str]]:
    """(rule, bar with its strictness, source) per rule: the table ``check --help`` and docs/check.md
    print (``every_corpus``: both faithfulness bars), and the one a report prints for its corpus."""
    corpus = None if every_corpus else policy.corpus
    return [(rule.name, rule.bar_text(corpus, k), rule.source) for rule in policy.rules]
