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

A document repeated in a ranking counts once, at its first rank (trec_eval
refuses such runs; the audit reports them). Unjudged documents count as not
relevant. Negative grades are judged and never relevant.

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
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from annotation.formats import Qrels, Run

Gain = Literal["linear", "exp"]

__all__ = [
    "InvalidMeasure",
    "Measure",
    "parse_measure",
    "evaluate_query",
    "evaluate",
    "Evaluation",
    "dedupe_ranking",
]


class InvalidMeasure(ValueError):
    """A measure name that does not parse (``P@0``, ``nDCG@x``, ``foo``)."""


_MEASURE_RE = re.compile(r"^(P|R|nDCG|Success)@([1-9][0-9]*)$|^(RR|AP|MRR|MAP)$")
_CUT_MEASURES = ("P", "R", "nDCG", "Success")


@dataclass(frozen=True)
class Measure:
    """A measure with a name that round-trips: ``str(parse_measure("nDCG@10")) == "nDCG@10"``."""

    name: str  # P, R, nDCG, Success, RR, AP
    k: int | None = None

    def __str__(self) -> str:
        return f"{self.name}@{self.k}" if self.k is not None else self.name


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


def _gain(grade: int, gain: Gain) -> float:
    return float(grade) if gain == "linear" else float(2**grade - 1)


def dedupe_ranking(ranking: Sequence[str]) -> tuple[list[str], list[str]]:
    """(ranking with each document at its first rank only, the repeated ids)."""
    seen: set[str] = set()
    kept: list[str] = []
    repeated: list[str] = []
    for doc in ranking:
        if doc in seen:
            if doc not in repeated:
                repeated.append(doc)
            continue
        seen.add(doc)
        kept.append(doc)
    return kept, repeated


def evaluate_query(
    ranking: Sequence[str],
    grades: Mapping[str, int],
    ks: Iterable[int] = (5,),
    min_grade: int = 1,
    gain: Gain = "linear",
) -> dict[str, float | None]:
    """Reference implementation for one query; ``None`` means undefined.

    Returns P@k, R@k, nDCG@k, Success@k for each k, RR, AP, and the counts
    ``rel`` (|Rel|) and ``num_ret`` (distinct documents retrieved).
    """
    docs, _ = dedupe_ranking(ranking)
    n_rel = sum(1 for g in grades.values() if g >= min_grade)
    relevant = [grades.get(doc, -(10**9)) >= min_grade for doc in docs]
    out: dict[str, float | None] = {"rel": n_rel, "num_ret": len(docs)}
    ideal = sorted((_gain(g, gain) for g in grades.values() if g >= 1), reverse=True)
    for k in ks:
        hits = sum(relevant[:k])
        out[f"P@{k}"] = hits / k
        out[f"R@{k}"] = hits / n_rel if n_rel else None
        out[f"Success@{k}"] = (1.0 if hits else 0.0) if n_rel else None
        dcg = sum(
            _gain(grades[doc], gain) / math.log2(rank + 1)
            for rank, doc in enumerate(docs[:k], start=1)
            if grades.get(doc, 0) >= 1
        )
        idcg = sum(g / math.log2(rank + 1) for rank, g in enumerate(ideal[:k], start=1))
        out[f"nDCG@{k}"] = dcg / idcg if idcg > 0 else None
    first = next((rank for rank, rel in enumerate(relevant, start=1) if rel), None)
    out["RR"] = (1.0 / first if first else 0.0) if n_rel else None
    found = 0
    precision_sum = 0.0
    for rank, rel in enumerate(relevant, start=1):
        if rel:
            found += 1
            precision_sum += found / rank
    out["AP"] = precision_sum / n_rel if n_rel else None
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
    values: dict[str, np.ndarray]  # measure name -> float64 per query
    num_ret: np.ndarray
    num_rel: np.ndarray
    num_rel_ret: np.ndarray
    evaluated: np.ndarray  # bool: query had results in the run
    missing_from_run: list[str]  # qrels queries absent from the run (not scored unless zero)
    not_in_qrels: int  # run queries without any judgment (ignored)
    duplicates: dict[str, list[str]]  # qid -> repeated document ids
    run_name: str = "run"
    missing: str = "drop"
    measures: list[str] = field(default_factory=list)

    def mean(self, name: str) -> float | None:
        column = self.values[name]
        defined = ~np.isnan(column)
        return float(column[defined].mean()) if defined.any() else None

    def undefined(self, name: str) -> int:
        return int(np.isnan(self.values[name]).sum())

    def query(self, qid: str) -> dict[str, float | None]:
        i = self.qids.index(qid)
        out: dict[str, float | None] = {"rel": int(self.num_rel[i])}
        for name in self.measures:
            value = self.values[name][i]
            out[name] = None if np.isnan(value) else float(value)
        return out


def measure_names(ks: Sequence[int]) -> list[str]:
    names: list[str] = []
    for k in ks:
        names.append(f"P@{k}")
    for k in ks:
        names.append(f"R@{k}")
    names.append("RR")
    for k in ks:
        names.append(f"nDCG@{k}")
    names.append("AP")
    for k in ks:
        names.append(f"Success@{k}")
    return names


def evaluate(
    qrels: Qrels,
    run: Run,
    ks: Sequence[int] = (5,),
    min_grade: int = 1,
    missing: Literal["drop", "zero"] = "drop",
    gain: Gain = "linear",
) -> Evaluation:
    """Vectorized evaluation of a whole run; same values as :func:`evaluate_query`."""
    ks = sorted(set(int(k) for k in ks))
    if not ks or ks[0] < 1:
        raise InvalidMeasure("cutoffs k must be integers >= 1")
    qids_all = sorted(qrels.grades, key=lambda q: q.encode("utf-8"))
    nq = len(qids_all)
    qid_array = pa.array(qids_all, pa.string())

    # qrels, columnar: per judged (query, doc) its grade; the key qi * ndocs + di
    j_docs: list[str] = []
    j_qi: list[int] = []
    j_grade: list[int] = []
    for qi, qid in enumerate(qids_all):
        docs = qrels.grades[qid]
        j_docs.extend(docs.keys())
        j_qi.extend([qi] * len(docs))
        j_grade.extend(docs.values())
    judged_docs = pa.array(j_docs, pa.string())
    doc_dict = pc.unique(judged_docs)
    n_dict = max(len(doc_dict), 1)
    j_qi_np = np.asarray(j_qi, dtype=np.int64)
    j_di = pc.index_in(judged_docs, value_set=doc_dict).to_numpy(zero_copy_only=False).astype(np.int64)
    j_key = j_qi_np * n_dict + j_di
    j_order = np.argsort(j_key, kind="stable")
    j_key = j_key[j_order]
    j_grade_np = np.asarray(j_grade, dtype=np.int64)[j_order]
    num_rel = np.bincount(j_qi_np[np.asarray(j_grade) >= min_grade], minlength=nq).astype(np.int64)

    # run rows of judged queries only
    table = run.table
    run_qi = pc.index_in(table["q"], value_set=qid_array)
    run_qids_unique = pc.unique(table["q"])
    not_in_qrels = int(pc.sum(pc.is_null(pc.index_in(run_qids_unique, value_set=qid_array))).as_py() or 0)
    keep = pc.is_valid(run_qi)
    if not pc.all(keep).as_py():
        table = table.filter(keep)
        run_qi = run_qi.filter(keep)
    qi = run_qi.to_numpy(zero_copy_only=False).astype(np.int32)
    docs = table["d"].combine_chunks() if isinstance(table["d"], pa.ChunkedArray) else table["d"]
    scores = table["s"].to_numpy()

    with ThreadPoolExecutor(max_workers=2) as pool:
        # hashing every document id (judged lookup, fingerprints) overlaps the sort
        lookup = pool.submit(
            lambda: (
                pc.fill_null(pc.index_in(docs, value_set=doc_dict), -1).to_numpy(),
                _fingerprint(docs),
            )
        )
        order = _trec_order(qi, scores, docs)
        doc_index, fingerprints = lookup.result()
    identity = len(order) == 0 or bool(order[0] == 0 and (np.diff(order) == 1).all())
    if not identity:
        qi = qi[order]
        doc_index = doc_index[order]
        fingerprints = fingerprints[order]

    drop, duplicates_idx = _duplicates(qi, fingerprints, docs, order)
    duplicates = {qids_all[q]: ids for q, ids in duplicates_idx.items()}
    if drop is not None:
        keep_rows = ~drop
        qi = qi[keep_rows]
        doc_index = doc_index[keep_rows]

    num_ret = np.bincount(qi, minlength=nq).astype(np.int64)
    starts = np.concatenate([[0], np.cumsum(num_ret)[:-1]])

    # only rows whose document is judged for some query can be relevant or gain
    rows = np.flatnonzero(doc_index >= 0)
    row_q = qi[rows]
    key = row_q.astype(np.int64) * n_dict + doc_index[rows].astype(np.int64)
    pos = np.minimum(np.searchsorted(j_key, key), max(len(j_key) - 1, 0))
    found = j_key[pos] == key
    rows, row_q, pos = rows[found], row_q[found], pos[found]
    grade = j_grade_np[pos]
    rank = rows - starts[row_q] + 1
    is_rel = grade >= min_grade

    rel_q = row_q[is_rel]
    rel_rank = rank[is_rel]
    rel_rows = rel_rank
    num_rel_ret = np.bincount(rel_q, minlength=nq).astype(np.int64)

    defined = num_rel > 0
    values: dict[str, np.ndarray] = {}
    for k in ks:
        hits = np.bincount(rel_q[rel_rank <= k], minlength=nq).astype(np.float64)
        values[f"P@{k}"] = hits / k
        values[f"R@{k}"] = np.where(defined, hits / np.maximum(num_rel, 1), np.nan)
        values[f"Success@{k}"] = np.where(defined, (hits > 0).astype(np.float64), np.nan)

    rr = np.zeros(nq)
    if len(rel_rows):
        first_q, first_idx = np.unique(rel_q, return_index=True)
        rr[first_q] = 1.0 / rel_rank[first_idx]
    values["RR"] = np.where(defined, rr, np.nan)

    if len(rel_rows):
        rel_starts = np.concatenate([[0], np.cumsum(num_rel_ret)[:-1]])
        found_so_far = np.arange(len(rel_rows)) - rel_starts[rel_q] + 1
        ap_sum = np.bincount(rel_q, weights=found_so_far / rel_rank, minlength=nq)
    else:
        ap_sum = np.zeros(nq)
    values["AP"] = np.where(defined, ap_sum / np.maximum(num_rel, 1), np.nan)

    has_gain = grade >= 1
    g_q = row_q[has_gain]
    g_rank = rank[has_gain]
    g_gain = _gains(grade[has_gain], gain)
    g_disc = g_gain / np.log2(g_rank + 1.0)
    # ideal: judged grades >= 1 sorted descending per query
    ideal_mask = j_grade_np >= 1
    i_q = (j_key[ideal_mask] // n_dict).astype(np.int64)
    i_gain = _gains(j_grade_np[ideal_mask], gain)
    i_order = np.lexsort((-i_gain, i_q))
    i_q, i_gain = i_q[i_order], i_gain[i_order]
    i_count = np.bincount(i_q, minlength=nq)
    i_starts = np.concatenate([[0], np.cumsum(i_count)[:-1]])
    i_rank = np.arange(len(i_q)) - i_starts[i_q] + 1
    i_disc = i_gain / np.log2(i_rank + 1.0)
    for k in ks:
        dcg = np.bincount(g_q[g_rank <= k], weights=g_disc[g_rank <= k], minlength=nq)
        idcg = np.bincount(i_q[i_rank <= k], weights=i_disc[i_rank <= k], minlength=nq)
        values[f"nDCG@{k}"] = np.where(idcg > 0, dcg / np.where(idcg > 0, idcg, 1.0), np.nan)

    evaluated = num_ret > 0
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
        evaluated=evaluated[sel],
        missing_from_run=missing_qids,
        not_in_qrels=not_in_qrels,
        duplicates=duplicates,
        run_name=run.name,
        missing=missing,
        measures=names,
    )


def _gains(grades: np.ndarray, gain: Gain) -> np.ndarray:
    g = grades.astype(np.float64)
    return g if gain == "linear" else np.exp2(g) - 1.0


def _trec_order(qi: np.ndarray, scores: np.ndarray, docs: pa.Array) -> np.ndarray:
    """Row order: query, then score descending, then docid descending (bytewise).

    The query order is by index into the qrels' sorted qids. A run that is
    already in this order (the common case for files written by a tool) is
    detected in one vectorized pass and not sorted again.
    """
    n = len(qi)
    if n == 0:
        return np.arange(0)
    if n > 1:
        same_q = qi[1:] == qi[:-1]
        ordered_q = (qi[1:] > qi[:-1]) | same_q
        if ordered_q.all():
            s_next, s_prev = scores[1:], scores[:-1]
            strictly = s_prev > s_next
            tie = same_q & (s_prev == s_next)
            if (~same_q | strictly | tie).all():
                if not tie.any():
                    return np.arange(n)
                rows = np.flatnonzero(tie)
                prev_docs = docs.take(pa.array(rows))
                next_docs = docs.take(pa.array(rows + 1))
                if pc.all(pc.greater(prev_docs, next_docs)).as_py():
                    return np.arange(n)
    table = pa.table({"q": pa.array(qi), "s": pa.array(scores), "d": docs})
    indices = pc.sort_indices(
        table, sort_keys=[("q", "ascending"), ("s", "descending"), ("d", "descending")]
    )
    return indices.to_numpy()


def _fingerprint(docs: pa.Array) -> np.ndarray:
    """A 64-bit fingerprint of each string (length, first and last 8 bytes).

    Equal strings always get equal fingerprints; unequal strings rarely do,
    and every collision is checked exactly by the caller.
    """
    if isinstance(docs, pa.ChunkedArray):
        docs = docs.combine_chunks()
    if docs.type == pa.large_string():
        offsets_type = np.int64
    else:
        offsets_type = np.int32
    buffers = docs.buffers()
    offsets = np.frombuffer(buffers[1], dtype=offsets_type)[docs.offset : docs.offset + len(docs) + 1]
    data = np.frombuffer(buffers[2], dtype=np.uint8) if buffers[2] is not None else np.zeros(0, np.uint8)
    padded = np.concatenate([np.zeros(8, np.uint8), data, np.zeros(8, np.uint8)])
    windows = np.lib.stride_tricks.sliding_window_view(padded, 8)
    starts = offsets[:-1].astype(np.int64)
    ends = offsets[1:].astype(np.int64)
    lengths = ends - starts
    head = np.ascontiguousarray(windows[starts + 8]).view("<u8").ravel()
    tail = np.ascontiguousarray(windows[ends]).view("<u8").ravel()
    short = lengths < 8
    if short.any():
        bits = (lengths[short] * 8).astype(np.uint64)
        head[short] &= (np.uint64(1) << bits) - np.uint64(1)
        tail[short] >>= np.uint64(64) - bits
        tail[short & (lengths == 0)] = 0
    fp = head * np.uint64(0x9E3779B97F4A7C15)
    fp ^= (tail ^ (tail >> np.uint64(29))) * np.uint64(0xBF58476D1CE4E5B9)
    fp ^= lengths.astype(np.uint64) * np.uint64(0x94D049BB133111EB)
    return fp


def _duplicates(
    qi: np.ndarray, fingerprints: np.ndarray, docs: pa.Array, order: np.ndarray
) -> tuple[np.ndarray | None, dict[int, list[str]]]:
    """Rows to drop (a document seen before in the same query) and the repeated ids.

    ``qi`` and ``fingerprints`` are in trec order; ``docs[order]`` is too. The
    first occurrence in trec order is the one kept.
    """
    if len(qi) < 2:
        return None, {}
    with np.errstate(over="ignore"):
        mixed = fingerprints ^ (qi.astype(np.uint64) * np.uint64(0xD6E8FEB86659FD93))
        # 32 bits are enough to find candidates; each candidate is checked exactly
        key = (mixed ^ (mixed >> np.uint64(32))).astype(np.uint32)
    sorted_key = np.sort(key)
    repeated_keys = sorted_key[1:][sorted_key[1:] == sorted_key[:-1]]
    if len(repeated_keys) == 0:
        return None, {}
    # membership through a 2**24-bucket bitmap first: np.isin would sort again
    buckets = np.zeros(1 << 24, dtype=bool)
    buckets[repeated_keys >> np.uint32(8)] = True
    candidates = np.flatnonzero(buckets[key >> np.uint32(8)])
    candidates = candidates[np.isin(key[candidates], repeated_keys)]
    candidate_docs = docs.take(pa.array(order[candidates])).to_pylist()
    seen: set[tuple[int, str]] = set()
    drop = np.zeros(len(qi), dtype=bool)
    repeated: dict[int, list[str]] = {}
    for row, doc in zip(candidates.tolist(), candidate_docs):  # ascending rows = trec order
        pair = (int(qi[row]), doc)
        if pair in seen:
            drop[row] = True
            ids = repeated.setdefault(pair[0], [])
            if doc not in ids:
                ids.append(doc)
        else:
            seen.add(pair)
    if not drop.any():
        return None, {}
    return drop, repeated
