"""Retrieval metrics with trec_eval's semantics, and the product's honest means.

Definitions (a ranking is a list of document ids, best first; ``grades`` the
judged grades of one query; relevant = grade >= ``min_grade``, default 1;
|Rel| = number of judged relevant documents of the query):

- ``P@k``       = relevant in the top k / k (k even when fewer were retrieved)
- ``R@k``       = relevant in the top k / |Rel|                (undefined if |Rel| = 0)
- ``Success@k`` = 1 if any relevant in the top k, else 0        (undefined if |Rel| = 0)
- ``RR``        = 1 / rank of the first relevant, 0 if none     (undefined if |Rel| = 0); mean: MRR
- ``AP``        = sum over relevant retrieved of P@rank / |Rel| (undefined if |Rel| = 0); mean: MAP
- ``nDCG@k``    = DCG@k / IDCG@k; DCG@k = sum_{rank<=k} gain(grade) / log2(rank + 1),
                  gain = grade (``linear``, trec_eval's ndcg_cut) or 2**grade - 1
                  (``exp``); only grades >= 1 gain; IDCG from all judged grades
                  >= 1 sorted descending, cut at k (independent of ``min_grade``)
                  (undefined when IDCG = 0)

A document repeated in a ranking keeps its slot and scores nothing the second
time: each repeat is a non-relevant position with no gain. Ranks are positions
in the ranking, repeats included; "relevant in the top k" counts distinct
documents among the first k positions; ``num_ret`` counts positions (lines),
repeats included. (trec_eval refuses such runs; the audit reports them.)
Unjudged documents count as not relevant. Negative grades are judged and never
relevant.

trec_eval prints 0 for what is undefined here and averages it in; the
``trec`` view of an :class:`Evaluation` does exactly that, so its output can
be diffed with trec_eval's.

Two implementations: :func:`evaluate_query` is the plain per-query
reference (for tests and docs); :func:`evaluate` is the vectorized batch
engine (Arrow + numpy) that the CLI uses.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import pyarrow as pa

import annotation.arrow_compute as pc
from annotation.errors import DenominatorError
from annotation.model import Qrels, Run, arrow, as_numpy

Gain = Literal["linear", "exp"]

__all__ = [
    "InvalidMeasure",
    "Measure",
    "RR",
    "AP",
    "parse_measure",
    "evaluate_query",
    "evaluate",
    "top_ranked",
    "with_grades",
    "sorted_queries",
    "query_indices",
    "Evaluation",
    "blank_repeats",
]


class InvalidMeasure(DenominatorError, ValueError):
    """A measure name that does not parse (``P@0``, ``nDCG@x``, ``foo``)."""


_MEASURE_RE = re.compile(r"^(P|R|nDCG|Success)@([1-9][0-9]*)$|^(RR|AP|MRR|MAP)$")


class Measure(str):
    """A measure's name, built one way (#41: results are keyed by it, not by strings written by hand):
    ``Measure("nDCG", 10) == "nDCG@10"``, ``Measure("RR") == "RR"``. It is a ``str``, so a result
    keyed by it prints and serialises as before; it is its own type, so ``values[f"nDCG@{k}"]``
    is a mypy error where a :class:`Measure` is expected."""

    __slots__ = ()

    def __new__(cls, name: str, k: int | None = None) -> Measure:
        return super().__new__(cls, f"{name}@{k}" if k is not None else name)

    @property
    def name(self) -> str:
        """P, R, nDCG, Success, RR or AP."""
        return self.split("@", 1)[0]

    @property
    def k(self) -> int | None:
        _, _, k = self.partition("@")
        return int(k) if k else None


RR = Measure("RR")
AP = Measure("AP")


def parse_measure(text: str) -> Measure:
    match = _MEASURE_RE.match(text.strip())
    if not match:
        raise InvalidMeasure(
            f"unknown measure {text!r}; expected P@k, R@k, nDCG@k, Success@k (k >= 1), RR or AP"
        )
    if match.group(1):
        return Measure(match.group(1), int(match.group(2)))
    name = {"MRR": "RR", "MAP": "AP"}.get(match.group(3), match.group(3))
    return Measure(name)


MAX_EXP_GRADE = 63  # 2**63 - 1 is still exact enough; a real scale stops near 4


def _check_exp_grades(max_grade: int, gain: Gain) -> None:
    if gain == "exp" and max_grade > MAX_EXP_GRADE:
        raise InvalidMeasure(
            f"--gain exp: grade {max_grade} would overflow 2**grade - 1; "
            f"expected grades up to {MAX_EXP_GRADE} (or --gain linear)"
        )


def _gain(grade: int, gain: Gain) -> float:
    return float(grade) if gain == "linear" else float(2**grade - 1)


def blank_repeats(ranking: Sequence[str]) -> tuple[list[str | None], list[str]]:
    """(the ranking with every repeat of a document blanked to ``None``, the repeated ids).

    The blank keeps its slot (the positions below do not move up) and, matching no
    judgment, scores nothing: the rule of this module, in one place for the reference paths.
    """
    seen: set[str] = set()
    slots: list[str | None] = []
    repeated: list[str] = []
    for doc in ranking:
        if doc in seen:
            if doc not in repeated:
                repeated.append(doc)
            slots.append(None)
            continue
        seen.add(doc)
        slots.append(doc)
    return slots, repeated


def evaluate_query(
    ranking: Sequence[str],
    grades: Mapping[str, int],
    *,
    ks: Iterable[int],
    min_grade: int,
    gain: Gain = "linear",
) -> dict[str, float | int | None]:
    """Reference implementation for one query; ``None`` means undefined.

    Returns P@k, R@k, nDCG@k, Success@k for each k, RR, AP, and the counts
    ``rel`` (|Rel|) and ``num_ret`` (positions retrieved: lines, repeats included).
    A repeated document keeps its slot and scores nothing (see :func:`blank_repeats`).
    """
    docs, _ = blank_repeats(ranking)
    _check_exp_grades(max(grades.values(), default=0), gain)
    n_rel = sum(1 for g in grades.values() if g >= min_grade)
    relevant = [doc is not None and grades.get(doc, -(10**9)) >= min_grade for doc in docs]
    out: dict[str, float | int | None] = {"rel": n_rel, "num_ret": len(docs)}
    ideal = sorted((_gain(g, gain) for g in grades.values() if g >= 1), reverse=True)
    for k in ks:
        hits = sum(relevant[:k])
        out[Measure("P", k)] = hits / k
        out[Measure("R", k)] = hits / n_rel if n_rel else None
        out[Measure("Success", k)] = (1.0 if hits else 0.0) if n_rel else None
        dcg = sum(
            _gain(grades[doc], gain) / math.log2(rank + 1)
            for rank, doc in enumerate(docs[:k], start=1)
            if doc is not None and grades.get(doc, 0) >= 1
        )
        idcg = sum(g / math.log2(rank + 1) for rank, g in enumerate(ideal[:k], start=1))
        out[Measure("nDCG", k)] = dcg / idcg if idcg > 0 else None
    first = next((rank for rank, rel in enumerate(relevant, start=1) if rel), None)
    out[RR] = (1.0 / first if first else 0.0) if n_rel else None
    found = 0
    precision_sum = 0.0
    for rank, rel in enumerate(relevant, start=1):
        if rel:
            found += 1
            precision_sum += found / rank
    out[AP] = precision_sum / n_rel if n_rel else None
    return out


# ---------------------------------------------------------------- batch engine


@dataclass
class Evaluation:
    """Per-query values of a batch evaluation, columnar; NaN = undefined.

    ``qids`` are sorted bytewise (trec_eval's order). ``evaluated`` marks the
    queries that were in the run (the others are present only under
    ``missing="zero"``).
    """

    ks: list[int]
    min_grade: int
    gain: Gain
    qids: list[str]
    values: dict[Measure, np.ndarray]  # measure -> float64 per query
    num_ret: np.ndarray  # positions retrieved (lines), repeats included
    num_rel: np.ndarray
    num_rel_ret: np.ndarray  # distinct relevant documents retrieved
    num_judged: np.ndarray  # judgments of the query (0: a golden.yaml query with no grades)
    evaluated: np.ndarray  # bool: query is in the run
    missing_from_run: list[str]  # qrels queries absent from the run (not scored unless zero)
    not_in_qrels: int  # run queries without any judgment (ignored)
    duplicates: dict[str, list[str]]  # qid -> repeated document ids
    run_name: str = "run"
    missing: str = "drop"
    measures: list[Measure] = field(default_factory=list)
    counts: dict[str, np.ndarray] = field(default_factory=dict)  # hits@k, judged@k, positional@k
    notes: list[str] = field(default_factory=list)  # how the run was read, for the faces to say
    depth: int = 0  # the run's deepest ranking, all its queries (counted when a scorer is asked to)
    # with unjudged_depth D: per query, (position, id) of the unjudged chunks of its first D slots
    unjudged_top: dict[str, list[tuple[int, str]]] = field(default_factory=dict)
    unjudged_depth: int = 0
    # label coverage per query (judged documents / corpus size): calibration.actions.metrics, given the corpus
    coverage: dict[str, float | None] | None = None

    def mean(self, name: Measure) -> float | None:
        column = self.values[name]
        defined = ~np.isnan(column)
        return float(column[defined].mean()) if defined.any() else None

    def undefined(self, name: Measure) -> int:
        return int(np.isnan(self.values[name]).sum())

    def query(self, qid: str) -> dict[str, float | None]:
        i = self.qids.index(qid)
        out: dict[str, float | None] = {"rel": int(self.num_rel[i])}
        for name in self.measures:
            value = self.values[name][i]
            out[name] = None if np.isnan(value) else float(value)
        return out


def measure_names(ks: Sequence[int]) -> list[Measure]:
    """Every measure at cutoffs ``ks``, in the order the tables print them."""
    return [
        *(Measure("P", k) for k in ks),
        *(Measure("R", k) for k in ks),
        RR,
        *(Measure("nDCG", k) for k in ks),
        AP,
        *(Measure("Success", k) for k in ks),
    ]


def evaluate(
    qrels: Qrels,
    run: Run,
    *,
    ks: Sequence[int],
    min_grade: int,
    missing: Literal["drop", "zero"] = "drop",
    gain: Gain = "linear",
    with_positional: bool = False,
    executor: Executor | None = None,
    unjudged_depth: int = 0,
) -> Evaluation:
    """Vectorized evaluation of a whole run; same values as :func:`evaluate_query`.

    ``unjudged_depth`` D > 0: ``Evaluation.unjudged_top`` lists per query the (position, id) of
    each slot of its first D that holds a chunk its judgments do not grade (a repeat's slot is
    blank, not listed): what ``check``'s diagnosis asks before it blames the order.

    ``executor``: where to hash the document ids (twice) while the run is sorted; the caller
    owns it (``calibration.actions`` hands in two threads). Without one the work runs in turn.

    A repeated document keeps its slot and scores nothing; ``num_ret`` counts
    positions (lines), repeats included. Besides the measures,
    ``Evaluation.counts`` holds per query and k the ``hits@k`` (distinct relevant
    documents among the first k positions) and ``judged@k`` (distinct judged
    documents among the first k positions), ``judged_ret`` (distinct judged documents anywhere
    in the ranking), and with ``with_positional`` the
    ``positional@k`` hits a naive count of the first k lines would give
    (repeats counted each time).
    """
    ks = sorted(set(int(k) for k in ks))
    if not ks or ks[0] < 1:
        raise InvalidMeasure("cutoffs k must be integers >= 1")
    # bytewise (trec_eval's order): UTF-8 keeps code-point order, str's own, so no key is needed;
    # an id with a lone surrogate (no UTF-8) is refused by arrow() below as by an encode here
    qids_all = sorted(qrels.qids)
    nq = len(qids_all)
    qid_array = arrow(qids_all, pa.string())

    # qrels, columnar: per judgment (query, doc) its grade and its query's index
    judged = qrels.to_table()
    j_qi_np = as_numpy(pc.index_in(judged["q"], value_set=qid_array)).astype(np.int64)
    j_grade_all = as_numpy(judged["g"])
    _check_exp_grades(int(j_grade_all.max()) if len(j_grade_all) else 0, gain)
    num_rel = np.bincount(j_qi_np[j_grade_all >= min_grade], minlength=nq).astype(np.int64)

    # the run in trec_eval's order, sorted once per run (every evaluation of it shares the sort)
    ordered = _ordered(run, executor)
    # per sorted row, its query's index among the judged queries (-1: a query without judgments)
    to_judged = _index_or(ordered.queries, qid_array).astype(np.int32)
    # a batch's queries are all judged (the usual case): each row's index is already its query's
    identity = len(to_judged) == nq and bool((to_judged == np.arange(nq, dtype=np.int32)).all())
    qi = ordered.q_sorted if identity else to_judged[ordered.q_sorted]
    not_in_qrels = int((to_judged < 0).sum()) + len(set(run.empty_queries) - set(qids_all))
    judgment = ordered.judgments(judged)  # per sorted row: its judgment's row (kept per judgments)
    docs = ordered.docs
    order, repeat = ordered.order, ordered.repeat
    if bool((to_judged < 0).any()):  # the rows of judged queries only
        keep = np.flatnonzero(qi >= 0)
        qi, judgment = qi[keep], judgment[keep]
        repeat = repeat[keep] if repeat is not None else None
        order = keep if order is None else order[keep]
    judged_qids = set(qids_all)
    duplicates = {qid: ids for qid, ids in ordered.duplicates.items() if qid in judged_qids}

    # grades of the rows whose document is judged for this query (the only
    # rows that can be relevant or gain), in trec order, repeats included
    rows = np.flatnonzero(judgment >= 0)
    row_q = qi[rows]
    grade = j_grade_all[judgment[rows]].astype(np.int64)
    # ranks are positions in the ranking, repeats included
    num_ret = _ascending_counts(qi, nq)  # qi ascends: the rows are in trec order
    starts = np.concatenate([[0], np.cumsum(num_ret)[:-1]])
    rank = rows - starts[row_q] + 1
    counts: dict[str, np.ndarray] = {}
    if with_positional:
        # what a naive count over the first k lines finds: repeats counted each time
        for k in ks:
            hit = (grade >= min_grade) & (rank <= k)
            counts[f"positional@{k}"] = np.bincount(row_q[hit], minlength=nq)
    if repeat is not None:  # a repeat keeps its slot (no rank moves up) and scores nothing
        first = ~repeat[rows]
        row_q, rank, grade = row_q[first], rank[first], grade[first]
    is_rel = grade >= min_grade
    for k in ks:
        counts[f"judged@{k}"] = np.bincount(row_q[rank <= k], minlength=nq)
        counts[f"hits@{k}"] = np.bincount(row_q[is_rel & (rank <= k)], minlength=nq)
    counts["judged_ret"] = np.bincount(row_q, minlength=nq)  # distinct judged documents retrieved
    unjudged_top: dict[str, list[tuple[int, str]]] = {}
    if unjudged_depth > 0:
        position = np.arange(len(qi), dtype=np.int64) - starts[qi] + 1
        slot = position <= unjudged_depth
        slot[rows] = False  # judged for its query
        if repeat is not None:
            slot &= ~repeat
        at = np.flatnonzero(slot)
        ids = pc.take(docs, arrow(order[at] if order is not None else at)).to_pylist()
        for q, p, doc in zip(qi[at].tolist(), position[at].tolist(), ids):
            unjudged_top.setdefault(qids_all[q], []).append((p, doc))

    rel_q = row_q[is_rel]
    rel_rank = rank[is_rel]
    num_rel_ret = np.bincount(rel_q, minlength=nq).astype(np.int64)

    defined = num_rel > 0
    values: dict[str, np.ndarray] = {}
    for k in ks:
        hits = counts[f"hits@{k}"].astype(np.float64)
        values[Measure("P", k)] = hits / k
        values[Measure("R", k)] = np.where(defined, hits / np.maximum(num_rel, 1), np.nan)
        values[Measure("Success", k)] = np.where(defined, (hits > 0).astype(np.float64), np.nan)

    rr = np.zeros(nq)
    if len(rel_rank):
        first_q, first_idx = np.unique(rel_q, return_index=True)
        rr[first_q] = 1.0 / rel_rank[first_idx]
    values[RR] = np.where(defined, rr, np.nan)

    ap_sum: np.ndarray
    if len(rel_rank):
        rel_starts = np.concatenate([[0], np.cumsum(num_rel_ret)[:-1]])
        found_so_far = np.arange(len(rel_rank)) - rel_starts[rel_q] + 1
        ap_sum = np.bincount(rel_q, weights=found_so_far / rel_rank, minlength=nq)
    else:
        ap_sum = np.zeros(nq)
    values[AP] = np.where(defined, ap_sum / np.maximum(num_rel, 1), np.nan)

    has_gain = grade >= 1
    g_q = row_q[has_gain]
    g_rank = rank[has_gain]
    g_gain = _gains(grade[has_gain], gain)
    g_disc = g_gain / np.log2(g_rank + 1.0)
    # ideal: judged grades >= 1 sorted descending per query
    ideal_mask = j_grade_all >= 1
    i_q = j_qi_np[ideal_mask]
    i_gain = _gains(j_grade_all[ideal_mask], gain)
    i_order = np.lexsort((-i_gain, i_q))
    i_q, i_gain = i_q[i_order], i_gain[i_order]
    i_count = np.bincount(i_q, minlength=nq)
    i_starts = np.concatenate([[0], np.cumsum(i_count)[:-1]])
    i_rank = np.arange(len(i_q)) - i_starts[i_q] + 1
    i_disc = i_gain / np.log2(i_rank + 1.0)
    for k in ks:
        dcg = np.bincount(g_q[g_rank <= k], weights=g_disc[g_rank <= k], minlength=nq)
        idcg = np.bincount(i_q[i_rank <= k], weights=i_disc[i_rank <= k], minlength=nq)
        values[Measure("nDCG", k)] = np.where(idcg > 0, dcg / np.where(idcg > 0, idcg, 1.0), np.nan)

    evaluated = num_ret > 0
    if run.empty_queries:  # asked and answered with nothing: evaluated, retrieved 0
        # found as -1 where not judged (Arrow's Array.drop_null would import pyarrow.compute)
        asked = _judged_index(arrow(run.empty_queries, pa.string()), qid_array)
        evaluated[asked[asked >= 0].astype(np.int64)] = True
    missing_qids = [qids_all[i] for i in np.flatnonzero(~evaluated)]
    if missing == "zero":
        include = np.ones(nq, dtype=bool)
    else:
        include = evaluated
    sel = np.flatnonzero(include)
    names = measure_names(ks)
    return Evaluation(
        ks=list(ks),
        min_grade=min_grade,
        gain=gain,
        qids=[qids_all[i] for i in sel],
        values={name: values[name][sel] for name in names},
        num_ret=num_ret[sel],
        num_rel=num_rel[sel],
        num_rel_ret=num_rel_ret[sel],
        num_judged=np.bincount(j_qi_np, minlength=nq)[sel],
        counts={name: column[sel] for name, column in counts.items()},
        evaluated=evaluated[sel],
        missing_from_run=missing_qids,
        not_in_qrels=not_in_qrels,
        duplicates=duplicates,
        run_name=run.name,
        missing=missing,
        measures=names,
        unjudged_top=unjudged_top,
        unjudged_depth=unjudged_depth,
    )


def top_ranked(run: Run, depth: int, executor: Executor | None = None) -> dict[str, list[str]]:
    """Per query of ``run``, its first ``depth`` ids in trec_eval's order (score descending, ties
    by id descending, bytewise; a repeat keeps its slot): ``{q: r[:depth] for q, r in
    run.rankings().items()}`` from the sort the metrics share (one per run), with only the top
    ``depth`` rows of each query made Python strings. Queries in bytewise order, then the queries
    the run answered with nothing (an empty list). ``Run.rankings`` stays the reference
    (``tests/test_holes_fast.py``). ``executor``: where to hash the ids while the run is sorted,
    as :func:`evaluate`'s."""
    if depth < 1:
        raise InvalidMeasure(f"depth {depth}; expected a whole number >= 1")
    out: dict[str, list[str]] = {}
    if run.table.num_rows:
        ordered = _ordered(run, executor)
        counts = ordered.counts()
        head = ordered.head(depth)
        rows = head if ordered.order is None else ordered.order[head]
        ids = pc.take(ordered.docs, arrow(rows)).to_pylist()
        at = 0
        for qid, n in zip(ordered.queries.to_pylist(), np.minimum(counts, depth).tolist()):
            out[qid] = ids[at : at + n]
            at += n
    for qid in run.empty_queries:
        out.setdefault(qid, [])
    return out


def with_grades(
    run: Run,
    qrels: Qrels,
    extra: Mapping[str, Mapping[str, int]],
    qids: Sequence[str],
    *,
    depth: int | None = None,
) -> Qrels:
    """``qrels``' grades of the queries ``qids`` with ``extra``'s added, as
    ``Qrels(grades={q: {**qrels.grades.get(q, {}), **extra.get(q, {})} for q in qids})``, and the
    rows of ``run`` they judge found from those of ``qrels`` (``Run.memo``: found once) and a
    look-up of ``extra``'s few grades alone, so :func:`evaluate` of the sum does not look the
    run's rows up against every grade again (``metrics --judge-labels``: the judge's grades on
    the holes beside people's, issue #42). ``depth``: ``extra`` grades ids of the first ``depth``
    slots of their query's ranking (the holes of the top k), looked up there alone; everywhere
    when the run repeats an id or some of them are not there. ``extra`` adds ids ``qrels`` does
    not grade for the query; where it would change a grade, the sum is made and looked up afresh."""
    grades = qrels.grades
    merged: dict[str, dict[str, int]] = {}
    added_q: list[str] = []
    added_d: list[str] = []
    added_g: list[int] = []
    for qid in qids:
        base, more = grades.get(qid, {}), extra.get(qid)
        if not more:
            merged[qid] = dict(base)
            continue
        if not more.keys().isdisjoint(base):  # a grade changed: not a sum
            return Qrels(grades={q: {**grades.get(q, {}), **extra.get(q, {})} for q in qids})
        merged[qid] = {**base, **more}
        added_q += [qid] * len(more)
        added_d += more.keys()
        added_g += more.values()
    table = qrels.to_table()
    ordered = _ordered(run) if run.table.num_rows else None
    keep = as_numpy(pc.is_in(table["q"], value_set=arrow(list(qids), pa.string())))
    every = bool(keep.all())
    if not every:  # the grades of the other queries left out
        table = pc.filter(table, arrow(keep))
    schema = table.schema
    more_table = pa.table(
        {
            "q": pc.cast(arrow(added_q, pa.string()), schema.field("q").type),
            "d": pc.cast(arrow(added_d, pa.string()), schema.field("d").type),
            "g": pc.cast(arrow(added_g, pa.int64()), schema.field("g").type),
        }
    )
    summed = pa.concat_tables([table.select(["q", "d", "g"]), more_table]).combine_chunks()
    if ordered is not None:
        known = ordered.judgments(qrels.to_table())
        if every:
            rows = known.copy()
        else:  # the kept grades renumbered
            rows = np.full(len(known), -1, dtype=np.int32)
            found = np.flatnonzero(known >= 0)
            found = found[keep[known[found]]]
            rows[found] = (np.cumsum(keep) - 1)[known[found]]
        at, which = np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
        if depth is not None and ordered.repeat is None:  # each id once: its one row, if in the top
            at, which = ordered.matches(more_table["q"], more_table["d"], ordered.head(depth))
        if len(at) != len(added_q):
            at, which = ordered.matches(more_table["q"], more_table["d"])
        rows[at] = which + table.num_rows
        ordered.keep(summed, rows)
    return Qrels(grades=merged, table=summed)


def sorted_queries(run: Run, executor: Executor | None = None) -> list[str]:
    """The queries of ``run`` that have rows, bytewise, from the sort every evaluation of the run
    shares: the sort is made now (``executor``: as :func:`evaluate`'s) and kept in ``Run.memo``,
    so an :func:`evaluate` of the run that follows does not sort again."""
    queries: list[str] = _ordered(run, executor).queries.to_pylist()
    return queries


def ranked_queries(run: Run) -> list[str]:
    """The queries of ``run`` (bytewise, then those it answered with nothing): ``Run.query_ids``
    from the sort the metrics share, no pass over the rows when the run is sorted already."""
    queries: list[str] = _ordered(run).queries.to_pylist() if run.table.num_rows else []
    seen = set(queries)
    return queries + [qid for qid in dict.fromkeys(run.empty_queries) if qid not in seen]


def top_unjudged(run: Run, qrels: Qrels, depth: int) -> dict[str, tuple[list[str], int, int]]:
    """Per query of ``run`` (bytewise, then the queries it answered with nothing), its first
    ``depth`` slots in trec_eval's order read against ``qrels``: (the ids ``qrels`` does not grade
    for the query, in rank order, a repeat's slot skipped; the judged ids among them, distinct;
    the slots the ranking fills, repeats too: min(depth, lines)). From the sort and the judged
    rows the metrics share (``Run.memo``), only the unjudged ids made Python strings; a query
    ``qrels`` holds no grade for has every slot unjudged."""
    if depth < 1:
        raise InvalidMeasure(f"depth {depth}; expected a whole number >= 1")
    out: dict[str, tuple[list[str], int, int]] = {}
    if run.table.num_rows:
        ordered = _ordered(run)
        q_sorted = ordered.q_sorted
        n_queries = len(ordered.queries)
        counts = ordered.counts()
        head = ordered.head(depth)
        if ordered.repeat is not None:
            head = head[~ordered.repeat[head]]  # a repeat's slot: neither judged nor a hole
        judged = ordered.judgments(qrels.to_table())[head] >= 0
        holes = head[~judged]
        n_judged = np.bincount(q_sorted[head[judged]], minlength=n_queries).tolist()
        n_holes = np.bincount(q_sorted[holes], minlength=n_queries).tolist()
        rows = holes if ordered.order is None else ordered.order[holes]
        ids = pc.take(ordered.docs, arrow(rows)).to_pylist()
        filled = np.minimum(counts, depth).tolist()
        at = 0
        for q, qid in enumerate(ordered.queries.to_pylist()):
            out[qid] = (ids[at : at + n_holes[q]], n_judged[q], filled[q])
            at += n_holes[q]
    for qid in run.empty_queries:
        out.setdefault(qid, ([], 0, 0))
    return out


_ORDER = "trec_order"  # the key of :class:`_Ordered` in ``Run.memo``
_COMBINED_ROWS = 1 << 22  # a run's ids held in one array up to this many rows (a batch), chunked above
_JUDGMENTS_KEPT = 4  # judgment sets whose rows an _Ordered keeps (--judge-labels scores three)


@dataclass
class _Ordered:
    """A run in trec_eval's order, computed once per run (``Run.memo``) and shared by every
    evaluation of it (``metrics --judge-labels`` scores one run three ways, ``holes`` reads its
    top k): the sort, the repeats, and each row's 32-bit key of (query, id), which finds the
    judged rows of any set of judgments without hashing an id string again; and per set of
    judgments (the last few), those rows (:meth:`judgments`), which no cutoff moves."""

    queries: pa.Array  # the run's query ids, bytewise
    order: np.ndarray | None  # rows of the table in trec_eval's order; None: already in it
    q_sorted: np.ndarray  # per sorted row, its query's index in ``queries`` (int32)
    docs: pa.Array | pa.ChunkedArray  # the ids, in the table's order
    keys: np.ndarray  # per sorted row, :func:`_duplicate_keys` of (its query, its id)
    repeat: np.ndarray | None  # per sorted row: an id already above in its query
    duplicates: dict[str, list[str]]  # per query (bytewise), the ids it repeats
    # (judgments' table, judgment_of its columns): the table held, so its identity is never reused
    judged: list[tuple[pa.Table, np.ndarray]] = field(default_factory=list)
    heads: dict[int, np.ndarray] = field(default_factory=dict)  # :meth:`head` per depth
    per_query: np.ndarray | None = None  # :meth:`counts`, once asked

    def judgments(self, table: pa.Table) -> np.ndarray:
        """:meth:`judgment_of` the columns ``q`` and ``d`` of ``table`` (``Qrels.to_table``: one
        table per set of judgments, never changed), kept for the same table (read-only): a page
        that scores one run and one set of judgments at every k it is asked finds the rows once."""
        for kept, rows in self.judged:
            if kept is table:
                return rows
        return self.keep(table, self.judgment_of(table["q"], table["d"]))

    def keep(self, table: pa.Table, rows: np.ndarray) -> np.ndarray:
        """``rows``, the :meth:`judgment_of` of ``table``'s columns, kept for it (read-only)."""
        rows.flags.writeable = False
        self.judged = [*self.judged[-(_JUDGMENTS_KEPT - 1) :], (table, rows)]
        return rows

    def judgment_of(
        self, judged_q: pa.Array | pa.ChunkedArray, judged_d: pa.Array | pa.ChunkedArray
    ) -> np.ndarray:
        """Per sorted row, the index of the judgment (of the columns ``judged_q``, ``judged_d``)
        of its query and id, -1 if none (:meth:`matches` of every row)."""
        out = np.full(len(self.q_sorted), -1, dtype=np.int32)
        rows, which = self.matches(judged_q, judged_d)
        out[rows] = which
        return out

    def matches(
        self,
        judged_q: pa.Array | pa.ChunkedArray,
        judged_d: pa.Array | pa.ChunkedArray,
        among: np.ndarray | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """The sorted rows (of ``among``, sorted rows ascending; None: all) that a judgment of the
        columns ``judged_q``, ``judged_d`` names, ascending, and each one's judgment's index. The
        judgments get the rows' keys; a row whose key some judgment has (a bitmap,
        :func:`_maybe_in`, then a binary search) is compared exactly, its query's index and its
        id, so a key shared by chance never matches."""
        none = np.zeros(0, dtype=np.int64)
        j_q = _index_or(_combined(judged_q), self.queries)
        in_run = np.flatnonzero(j_q >= 0)  # judgments of the run's queries
        if len(self.q_sorted) == 0 or len(in_run) == 0:
            return none, none
        j_docs = pc.take(_combined(judged_d), arrow(in_run))
        j_q = j_q[in_run].astype(np.int32)
        j_keys = _duplicate_keys(j_docs, j_q)
        by_key = np.argsort(j_keys, kind="stable")
        sorted_keys = j_keys[by_key]
        if among is None:
            candidates = _maybe_in(self.keys, sorted_keys)
        else:
            candidates = among[_maybe_in(self.keys[among], sorted_keys)]
        keys = self.keys[candidates]
        low = np.searchsorted(sorted_keys, keys, side="left")
        count = np.searchsorted(sorted_keys, keys, side="right") - low
        rows = np.repeat(candidates, count)  # a row beside each judgment of its key
        offsets = np.arange(len(rows), dtype=np.int64) - np.repeat(np.cumsum(count) - count, count)
        which = by_key[np.repeat(low, count) + offsets]
        same = self.q_sorted[rows] == j_q[which]
        rows, which = rows[same], which[same]
        if not len(rows):
            return none, none
        source = rows if self.order is None else self.order[rows]
        same = as_numpy(pc.equal(pc.take(self.docs, arrow(source)), pc.take(j_docs, arrow(which))))
        return rows[same], in_run[which[same]]

    def counts(self) -> np.ndarray:
        """Per query (of ``queries``), its sorted rows, int64: a binary search per query in
        ``q_sorted`` (ascending), not a pass over the rows; kept."""
        if self.per_query is None:
            self.per_query = _ascending_counts(self.q_sorted, len(self.queries))
            self.per_query.flags.writeable = False
        return self.per_query

    def head(self, depth: int) -> np.ndarray:
        """The sorted rows of each query's first ``depth`` slots (repeats too), ascending; kept
        per depth (``holes`` and ``--judge-labels`` read the top k several times)."""
        rows = self.heads.get(depth)
        if rows is None:
            # per query its first min(rows, depth) sorted rows: a pass over the queries' tops,
            # not over every row (a 1,000-deep run read to k 10 touches a hundredth of it)
            counts = self.counts()
            starts = np.cumsum(counts) - counts
            taken = np.minimum(counts, depth)
            ends = np.cumsum(taken)
            rows = np.arange(int(ends[-1]) if len(ends) else 0, dtype=np.int64)
            rows += np.repeat(starts - (ends - taken), taken)
            rows.flags.writeable = False
            self.heads[depth] = rows
        return rows


def _combined(column: pa.Array | pa.ChunkedArray) -> pa.Array:
    return column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column


def _index_or(values: pa.Array, value_set: pa.Array) -> np.ndarray:
    """Per value, its index in ``value_set``; -1 where it is not there."""
    found: np.ndarray = _judged_index(values, value_set).astype(np.int64)
    return found


def _ordered(run: Run, executor: Executor | None = None) -> _Ordered:
    """The run's :class:`_Ordered`, from its memo or made now (``executor``: where to hash the
    ids for the repeats while the rows are sorted)."""
    memo = run.memo.get(_ORDER)
    if isinstance(memo, _Ordered):
        return memo
    table = run.table
    queries, qi = query_indices(table["q"])
    docs = table["d"]
    if isinstance(docs, pa.ChunkedArray) and docs.num_chunks > 1 and len(docs) <= _COMBINED_ROWS:
        docs = docs.combine_chunks()  # a batch of pieces: taking from chunks would join them each time
    scores = as_numpy(table["s"])
    if executor is not None:
        keys_job = executor.submit(_duplicate_keys, docs, qi)
        order, q_sorted = _trec_order(qi, scores, docs)
        keys = keys_job.result()
    else:
        keys = _duplicate_keys(docs, qi)
        order, q_sorted = _trec_order(qi, scores, docs)
    del qi, scores
    if order is not None:
        keys = keys[order]
    repeat, repeated = _duplicates(q_sorted, keys, docs, order)
    names = queries.to_pylist() if repeated else []
    ordered = _Ordered(
        queries=queries,
        order=order,
        q_sorted=q_sorted,
        docs=docs,
        keys=keys,
        repeat=repeat,
        duplicates={names[q]: ids for q, ids in repeated.items()},
    )
    run.memo[_ORDER] = ordered
    return ordered


def query_indices(column: pa.Array | pa.ChunkedArray) -> tuple[pa.Array, np.ndarray]:
    """(the column's distinct ids, bytewise: trec_eval's order of queries; per row, the index of
    its id among them, int32). A column whose ids come in blocks (each id's rows together, as in
    a TREC run) is read block by block: each row compared with the one before, no id hashed;
    any other through one Arrow dictionary for all its chunks (a run read in pieces is not
    copied whole)."""
    n = len(column)
    if n:
        change = np.empty(n, dtype=bool)
        change[0] = True
        change[1:] = as_numpy(pc.not_equal(column.slice(1), column.slice(0, n - 1)))
        starts = np.flatnonzero(change)
        del change
        if 4 * len(starts) <= n:  # blocks of 4 rows or more: sorting the blocks' ids is cheap
            block_ids = _combined(pc.take(column, arrow(starts)))
            sorted_at = pc.sort_indices(block_ids)
            queries = pc.take(block_ids, sorted_at)
            by_id = as_numpy(sorted_at)
            if (
                not len(queries) > 1
                or not pc.any(pc.equal(queries.slice(1), queries.slice(0, len(queries) - 1))).as_py()
            ):
                place = np.empty(len(queries), dtype=np.int32)
                place[by_id] = np.arange(len(queries), dtype=np.int32)
                lengths = np.diff(np.append(starts, n))
                return queries, np.repeat(place, lengths)
    encoded = pc.dictionary_encode(column)
    chunks = encoded.chunks if isinstance(encoded, pa.ChunkedArray) else [encoded]
    dictionary = chunks[-1].dictionary if chunks else arrow([], pa.string())  # pa.array: pandas
    by_id = pc.sort_indices(dictionary)  # bytewise
    queries = pc.take(dictionary, by_id)
    place = np.empty(len(queries), dtype=np.int32)
    place[as_numpy(by_id)] = np.arange(len(queries), dtype=np.int32)
    qi: np.ndarray = place[as_numpy(pa.chunked_array([chunk.indices for chunk in chunks], pa.int32()))]
    return queries, qi


def _ascending_counts(values: np.ndarray, size: int) -> np.ndarray:
    """``np.bincount(values, minlength=size)`` of ascending values in 0..size-1: a binary search
    per value of the range, not a pass over the rows (in the values' own type: int64 needles would
    make numpy cast the whole of int32 values first, 0.46 ms against 0.02 ms for 435,000 rows)."""
    return np.diff(np.searchsorted(values, np.arange(size + 1, dtype=values.dtype))).astype(np.int64)


def _gains(grades: np.ndarray, gain: Gain) -> np.ndarray:
    g = grades.astype(np.float64)
    return g if gain == "linear" else np.exp2(g) - 1.0


def _trec_order(qi: np.ndarray, scores: np.ndarray, docs: pa.Array) -> tuple[np.ndarray | None, np.ndarray]:
    """Row order: query, then score descending, then docid descending (bytewise).

    Returns (order, query index of each row in that order); order None means
    the rows are already in order. Queries are ordered by their index into
    the qrels' sorted qids. Three paths, same result: a run already in order
    is detected in one pass; a run grouped by query (each query's lines
    together, the usual file) is sorted block by block as one 2-D array;
    anything else goes through Arrow's multi-key sort. Tied scores are then
    put in docid order.
    """
    n = len(qi)
    if n < 2:
        return None, qi
    same_q = qi[1:] == qi[:-1]
    starts = np.concatenate([[0], np.flatnonzero(~same_q) + 1]).astype(np.int64)
    lengths = np.diff(np.concatenate([starts, [n]]))
    block_q = qi[starts]
    # each query in one block: no two blocks' ids equal (sorted, not np.unique: numpy 2.4's imports
    # numpy.ma, 10-20 ms of every metrics run)
    sorted_blocks = np.sort(block_q)
    grouped = not bool((sorted_blocks[1:] == sorted_blocks[:-1]).any())
    del sorted_blocks
    if grouped and bool((block_q[1:] > block_q[:-1]).all()):
        if bool(((~same_q) | (scores[:-1] >= scores[1:])).all()):
            return _order_ties(None, qi, scores, docs), qi
    del same_q
    n_blocks, width = len(starts), int(lengths.max())
    if grouped and n_blocks * width <= 2 * n + 1024:
        equal = bool((lengths == width).all())
        if equal:
            within = np.argsort(-scores.reshape(n_blocks, width), axis=1)
        else:  # pad every block to the widest with +inf, which sorts last
            padded = np.full((n_blocks, width), np.inf)
            block = np.repeat(np.arange(n_blocks, dtype=np.int32), lengths)
            column = np.arange(n, dtype=np.int64) - np.repeat(starts, lengths)
            padded[block, column] = -scores
            del block, column
            within = np.argsort(padded, axis=1)
            del padded
        within += starts[:, None]
        by_query = np.argsort(block_q, kind="stable")
        if not bool((by_query == np.arange(n_blocks)).all()):
            within = within[by_query]
        if equal:
            order = within.ravel()
        else:
            order = within[within < (starts + lengths)[by_query][:, None]]
        q_sorted = np.repeat(block_q[by_query], lengths[by_query])
        return _order_ties(order, q_sorted, scores, docs), q_sorted
    table = pa.table({"q": arrow(qi), "s": arrow(scores), "d": docs})
    indices = pc.sort_indices(table, sort_keys=[("q", "ascending"), ("s", "descending"), ("d", "descending")])
    order = as_numpy(indices)
    return order, qi[order]


def _order_ties(
    order: np.ndarray | None, q_sorted: np.ndarray, scores: np.ndarray, docs: pa.Array
) -> np.ndarray | None:
    """Within runs of equal (query, score) in ``order``, sort by docid descending.

    ``q_sorted`` is the query index of each row in ``order``; ties only move
    rows within a query, so it stays valid.
    """
    s_sorted = scores if order is None else scores[order]
    tie = s_sorted[1:] == s_sorted[:-1]
    del s_sorted
    tie &= q_sorted[1:] == q_sorted[:-1]
    if not tie.any():
        return order
    positions = np.flatnonzero(tie)
    # tied pairs (p, p+1): the positions in a tie segment, and where each segment starts
    in_tie = np.zeros(len(tie) + 1, dtype=bool)
    in_tie[positions] = True
    in_tie[positions + 1] = True
    positions = np.flatnonzero(in_tie)
    new_segment = np.ones(len(positions), dtype=bool)
    new_segment[1:] = ~tie[positions[1:] - 1]
    segment = np.cumsum(new_segment)
    rows = positions if order is None else order[positions]
    sub = pa.table({"seg": arrow(segment), "d": pc.take(docs, arrow(rows))})
    perm = as_numpy(pc.sort_indices(sub, sort_keys=[("seg", "ascending"), ("d", "descending")]))
    if order is None:
        if bool((perm == np.arange(len(perm))).all()):
            return None
        order = np.arange(len(tie) + 1)
    else:
        order = order.copy()
    order[positions] = rows[perm]
    return order


_CHUNK = 1 << 14  # rows: a chunk's temporaries stay in the cache (a third less time than 1 << 20)


def _maybe_in(keys: np.ndarray, members: np.ndarray) -> np.ndarray:
    """The rows of ``keys`` (uint32) whose key may be among ``members``: a superset, through a
    bitmap of the keys' top bits, 64 slots per member (from 2**16 to 2**24: a small table stays
    in the cache; about one row in 64 of the rest passes by chance)."""
    bits = min(24, max(16, int(len(members)).bit_length() + 6))
    shift = np.uint32(32 - bits)
    buckets = np.zeros(1 << bits, dtype=bool)
    buckets[members >> shift] = True
    # chunk by chunk into one mask: a chunk's slots (as intp, which a look-up would cast them to)
    # stay in the cache, a fifth less CPU than one look-up of every row (#42)
    found = np.empty(len(keys), dtype=bool)
    slots = np.empty(min(len(keys), _CHUNK), dtype=np.intp)
    for lo in range(0, len(keys), _CHUNK):
        part = keys[lo : lo + _CHUNK]
        np.right_shift(part, shift, out=slots[: len(part)], casting="unsafe")
        np.take(buckets, slots[: len(part)], out=found[lo : lo + len(part)])
    return np.flatnonzero(found)


def _judged_index(docs: pa.Array, doc_dict: pa.Array) -> np.ndarray:
    """Per row: index of its document among the judged ones, -1 if never judged."""
    found = pc.index_in(docs, value_set=doc_dict)
    if found.null_count == 0:
        return as_numpy(found)
    # not pc.fill_null(found, -1): its scalar would import pandas (a quarter of a second)
    return as_numpy(pc.coalesce(found, pc.cast(arrow(np.full(len(found), -1, dtype=np.int64)), found.type)))


def _duplicate_keys(docs: pa.Array, qi: np.ndarray) -> np.ndarray:
    """A 32-bit key per row from (query, docid): equal pairs always get equal
    keys; unequal pairs rarely do, and every collision is checked exactly by
    :func:`_duplicates`. Built from each id's length and first and last 8
    bytes, in chunks so the temporaries stay small."""
    if isinstance(docs, pa.ChunkedArray):  # chunk by chunk: no copy of the whole column
        keys = np.empty(len(docs), dtype=np.uint32)
        at = 0
        for chunk in docs.chunks:
            keys[at : at + len(chunk)] = _duplicate_keys(chunk, qi[at : at + len(chunk)])
            at += len(chunk)
        return keys
    n = len(docs)
    keys = np.empty(n, dtype=np.uint32)
    if n == 0:
        return keys
    buffers = docs.buffers()
    offsets_type = np.int64 if docs.type == pa.large_string() else np.int32
    offsets = np.frombuffer(buffers[1], dtype=offsets_type)[docs.offset : docs.offset + n + 1]
    data = np.frombuffer(buffers[2], dtype=np.uint8) if buffers[2] is not None else np.zeros(0, np.uint8)
    width = int(offsets[1] - offsets[0])
    if int(offsets[-1] - offsets[0]) == width * n and bool((np.diff(offsets) == width).all()):
        # ids of one length (the usual collection): their bytes as a table, the words its columns
        rows = data[int(offsets[0]) : int(offsets[-1])].reshape(n, width)
        fixed = np.full(_CHUNK, width, dtype=np.int64)
    else:
        padded = np.concatenate([np.zeros(8, np.uint8), data, np.zeros(8, np.uint8)])
        # the 8 bytes starting at every byte offset, read as one little-endian word
        words = np.ndarray((len(padded) - 7,), dtype="<u8", buffer=padded, strides=(1,))
        rows = None
    with np.errstate(over="ignore"):
        for lo in range(0, n, _CHUNK):
            hi = min(n, lo + _CHUNK)
            if rows is not None:
                head, tail = _fixed_words(rows[lo:hi], width)
                lengths = fixed[: hi - lo]
            else:
                starts = offsets[lo:hi].astype(np.int64)
                ends = offsets[lo + 1 : hi + 1].astype(np.int64)
                lengths = ends - starts
                head = words[starts + 8]
                tail = words[ends]
                short = lengths < 8
                if short.any():
                    bits = (lengths[short] * 8).astype(np.uint64)
                    head[short] &= (np.uint64(1) << bits) - np.uint64(1)
                    shifted = np.where(bits > 0, tail[short] >> (np.uint64(64) - np.maximum(bits, 1)), 0)
                    tail[short] = shifted
            mixed = head * np.uint64(0x9E3779B97F4A7C15)
            mixed ^= (tail ^ (tail >> np.uint64(29))) * np.uint64(0xBF58476D1CE4E5B9)
            mixed ^= lengths.astype(np.uint64) * np.uint64(0x94D049BB133111EB)
            mixed ^= qi[lo:hi].astype(np.uint64) * np.uint64(0xD6E8FEB86659FD93)
            keys[lo:hi] = (mixed ^ (mixed >> np.uint64(32))).astype(np.uint32)
    return keys


def _fixed_words(rows: np.ndarray, width: int) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_duplicate_keys`' two words of ids of one length ``width`` (a row of bytes each):
    the first and the last 8 bytes, little-endian; an id shorter than 8 bytes is both words, its
    bytes in the low ones (as the general path masks and shifts them)."""
    if width >= 8:
        head = np.ascontiguousarray(rows[:, :8]).view("<u8")[:, 0]
        tail = head if width == 8 else np.ascontiguousarray(rows[:, width - 8 :]).view("<u8")[:, 0]
        return head, tail
    low = np.zeros((len(rows), 8), dtype=np.uint8)
    low[:, :width] = rows
    word = low.view("<u8")[:, 0]
    return word, word


def _duplicates(
    qi: np.ndarray, keys: np.ndarray, docs: pa.Array, order: np.ndarray | None
) -> tuple[np.ndarray | None, dict[int, list[str]]]:
    """The repeat rows (a document seen before in the same query) and the repeated ids.

    ``qi`` and ``keys`` are in trec order; so is ``docs[order]``. The first
    occurrence in trec order is the one that scores; each later one is a repeat.
    """
    if len(qi) < 2:
        return None, {}
    counts = _ascending_counts(qi, int(qi[-1]) + 1)
    width = int(counts.max())
    if bool(((counts == width) | (counts == 0)).all()):
        # every query has the same depth: sort each query's keys alone (cache-sized rows)
        rows_sorted = np.sort(keys.reshape(-1, width), axis=1)
        if not bool((rows_sorted[:, 1:] == rows_sorted[:, :-1]).any()):
            return None, {}
        del rows_sorted
    sorted_keys = np.sort(keys)
    repeated_keys = sorted_keys[1:][sorted_keys[1:] == sorted_keys[:-1]]
    del sorted_keys
    if len(repeated_keys) == 0:
        return None, {}
    # membership through a bitmap first (:func:`_maybe_in`): np.isin would sort again
    candidates = _maybe_in(keys, repeated_keys)
    candidates = candidates[np.isin(keys[candidates], repeated_keys)]
    rows = candidates if order is None else order[candidates]
    candidate_docs = pc.take(docs, arrow(rows)).to_pylist()
    seen: set[tuple[int, str]] = set()
    repeat = np.zeros(len(qi), dtype=bool)
    repeated: dict[int, list[str]] = {}
    for row, doc in zip(candidates.tolist(), candidate_docs):  # ascending rows = trec order
        pair = (int(qi[row]), doc)
        if pair in seen:
            repeat[row] = True
            ids = repeated.setdefault(pair[0], [])
            if doc not in ids:
                ids.append(doc)
        else:
            seen.add(pair)
    if not repeat.any():
        return None, {}
    return repeat, repeated
