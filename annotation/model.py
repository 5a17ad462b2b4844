"""Core types, no IO: what every layer passes around.

- the :class:`FormatError` family: bad input, naming file, line and field (and
  :class:`UnwritableId`: an id a whitespace-separated format cannot hold); :class:`ChunksDisagree`,
  one chunk id placed at two places by two sources;
- :class:`Qrels` (judgments) and :class:`Run` (a retriever's output, columnar);
- :func:`as_numpy`, Arrow columns to numpy without pandas;
- :class:`SamplingDesign` and its :class:`Stratum`: golden.yaml's ``sampling``
  section, the sample of unjudged candidates an estimate of |Rel| rests on;
- :class:`ChunkSpan` (where a chunk comes from: its document and character offsets) and
  :class:`Evidence` (a graded span of a document: golden.yaml's ``evidence``, #44).

The pure modules (``calibration.metrics``, ``audit``, ``estimate``, ...)
import their types from here and nothing from the file readers: no yaml, no
file, no sqlite, no streamlit, no openai (``tests/test_structure.py``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

import annotation.arrow_compute as pc
from annotation.errors import DenominatorError
from annotation.errors import FormatError as FormatError  # re-exported: every reader's root error
from annotation.provenance import Provenance


class InvalidQrels(FormatError):
    kind = "qrels"


class InvalidRun(FormatError):
    kind = "run"


class InvalidRankings(FormatError):
    kind = "rankings"


class InvalidGolden(FormatError):
    kind = "golden.yaml"


class UnwritableId(FormatError):
    """An id a whitespace-separated format (TREC qrels, TREC run, BEIR's qrels TSV) cannot
    hold: it has whitespace (a query named by its text), so its line would split wrongly."""

    kind = "id"


class InvalidCorpus(FormatError):
    kind = "corpus"


class InvalidQueries(FormatError):
    kind = "queries"


class InvalidTraces(FormatError):
    kind = "traces"


class InvalidTable(FormatError):
    kind = "csv"


class InvalidChunks(FormatError):
    kind = "chunks"


class InvalidDocuments(FormatError):
    kind = "documents"


class ChunksDisagree(DenominatorError, ValueError):
    """Two sources place one chunk id at two places: a golden set's ``chunks`` section and a chunks
    file (#44). The id then names two chunks, and a figure read through it would put one
    chunking's grades or offsets on the other's chunks: refused, never scored."""


@dataclass(frozen=True)
class ChunkSpan:
    """Where a chunk comes from: ``doc[start:end]`` (character offsets, end exclusive)."""

    id: str
    doc: str
    start: int
    end: int

    @property
    def length(self) -> int:
        return self.end - self.start


@dataclass(frozen=True)
class Evidence:
    """A graded span of a document: ``doc[start:end]`` answers the query at ``grade``."""

    doc: str
    start: int
    end: int
    grade: int

    @property
    def length(self) -> int:
        return self.end - self.start


class Qrels:
    """Judgments: ``grades[qid][docid] = grade`` plus what golden.yaml adds.

    Built from a dict (golden.yaml, the line reader, code) or from the
    columnar reader's table (q, d, g); each form is made from the other on
    first use, so the batch engine never pays for a dict of dicts.
    """

    def __init__(
        self,
        grades: dict[str, dict[str, int]] | None = None,
        texts: dict[str, str] | None = None,
        meta: dict[str, Any] | None = None,
        path: str = "",
        table: pa.Table | None = None,
        sampling: SamplingDesign | None = None,
        notes: list[str] | None = None,
        provenance: Provenance | None = None,
        evidence: dict[str, list[Evidence]] | None = None,
        chunk_spans: dict[str, ChunkSpan] | None = None,
    ) -> None:
        if grades is None and table is None:
            raise ValueError("Qrels needs grades or a table")
        self._grades = grades
        self._table = table  # one row per distinct (q, d)
        self.texts = texts if texts is not None else {}
        self.meta = meta if meta is not None else {}
        self.path = path
        # golden.yaml's sampling section, parsed and checked where the file was read;
        # meta["sampling"] keeps its plain values as the file wrote them
        self.sampling = sampling
        # golden.yaml's provenance section (how the labels were made), parsed likewise
        self.provenance = provenance
        # what the reader wants the user told, one line each (queries named by their text):
        # the faces print them ("note: ..."); not part of equality
        self.notes = list(notes) if notes else []
        # golden.yaml's spans (#44): each query's evidence, and where each graded chunk comes from
        self.evidence = evidence if evidence is not None else {}
        self.chunk_spans = chunk_spans if chunk_spans is not None else {}

    def __repr__(self) -> str:
        return f"Qrels(path={self.path!r}, judgments={self.n_judgments})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Qrels):
            return NotImplemented
        return (self.grades, self.texts, self.meta, self.path, self.evidence, self.chunk_spans) == (
            other.grades,
            other.texts,
            other.meta,
            other.path,
            other.evidence,
            other.chunk_spans,
        )

    __hash__ = None  # type: ignore[assignment]  # mutable, like the dataclass it was

    @property
    def grades(self) -> dict[str, dict[str, int]]:
        if self._grades is None:
            table = self.to_table()  # holds no grades yet: the table it was made from
            self._grades = _grades_of(table["q"], table["d"].to_pylist(), table["g"].to_pylist())
        return self._grades

    @property
    def qids(self) -> list[str]:
        """Query ids in file order (a golden.yaml query may have no grades)."""
        if self._grades is not None:
            return list(self._grades)
        qids: list[str] = pc.unique(self.to_table()["q"]).to_pylist()
        return qids

    @property
    def n_judgments(self) -> int:
        if self._table is not None:
            rows: int = self._table.num_rows
            return rows
        return sum(len(g) for g in self.grades.values())

    def to_table(self) -> pa.Table:
        """Columnar form (q, d, g) for the batch engine."""
        if self._table is None:
            q: list[str] = []
            d: list[str] = []
            g: list[int] = []
            for qid, docs in self.grades.items():
                q.extend([qid] * len(docs))
                d.extend(docs.keys())
                g.extend(docs.values())
            self._table = pa.table(
                {"q": arrow(q, pa.string()), "d": arrow(d, pa.string()), "g": arrow(g, pa.int64())}
            )
        return self._table


@dataclass
class Run:
    """A retriever's output, columnar: one row per (query, document, score).

    Order is decided by score (descending, ties by docid descending,
    bytewise), never by the file's line order or rank column. JSONL rankings
    get scores ``n, n-1, ..., 1`` so the same rule keeps their order.
    """

    table: pa.Table  # columns q (string), d (string), s (float64)
    name: str = "run"
    path: str = ""
    # queries the run answered with nothing (a JSONL ranking []): they were
    # asked, so they count as retrieving nothing, not as missing from the run
    empty_queries: list[str] = field(default_factory=list)
    # what the engine derives from the table once per run (``calibration.metrics``: trec_eval's
    # row order, the repeats), so a run scored several ways is sorted once; a Run's table is never
    # changed after it is made, and the memo is no part of its value
    memo: dict[str, Any] = field(default_factory=dict, init=False, repr=False, compare=False)

    @property
    def n_rows(self) -> int:
        rows: int = self.table.num_rows
        return rows

    def query_ids(self) -> set[str]:
        """The queries the run answers (those answered with nothing too), without ordering a row."""
        return {*pc.unique(self.table["q"]).to_pylist(), *self.empty_queries}

    def rankings(self) -> dict[str, list[str]]:
        """Per query, docids in trec_eval order (duplicates kept). Reference path: every row a
        Python object; the engine's paths sort once, vectorised (``calibration.metrics.top_ranked``)."""
        out = {qid: [doc for doc, _ in rows] for qid, rows in self.ordered_rows().items()}
        for qid in self.empty_queries:
            out.setdefault(qid, [])
        return out

    def ordered_rows(self) -> dict[str, list[tuple[str, float]]]:
        """Per query, (docid, score) in trec_eval order: score descending, ties by
        docid descending (bytewise); duplicates kept."""
        q = self.table["q"].to_pylist()
        d = self.table["d"].to_pylist()
        s = self.table["s"].to_pylist()
        by_query: dict[str, list[tuple[float, bytes, str]]] = {}
        for qid, doc, score in zip(q, d, s):
            by_query.setdefault(qid, []).append((score, doc.encode("utf-8"), doc))
        return {
            qid: [(doc, score) for score, _, doc in sorted(rows, key=lambda r: (r[0], r[1]), reverse=True)]
            for qid, rows in by_query.items()
        }

    @classmethod
    def from_rankings(cls, rankings: dict[str, list[str]], name: str = "run") -> Run:
        q: list[str] = []
        d: list[str] = []
        s: list[float] = []
        for qid, docs in rankings.items():
            n = len(docs)
            q.extend([qid] * n)
            d.extend(docs)
            s.extend(float(n - i) for i in range(n))
        table = pa.table(
            {"q": arrow(q, pa.string()), "d": arrow(d, pa.string()), "s": arrow(s, pa.float64())}
        )
        empty = [qid for qid, docs in rankings.items() if not docs]
        return cls(table=table, name=name, empty_queries=empty)


def _grades_of(
    q: pa.ChunkedArray | pa.Array, docs: list[str], grades: list[int]
) -> dict[str, dict[str, int]]:
    """``{q: {d: g}}`` of a table's columns read row by row (a (q, d) given twice keeps its first
    place and its last grade): each run of rows with one query added at once (the rows' queries
    compared in Arrow, not one Python step a row)."""
    out: dict[str, dict[str, int]] = {}
    n = len(q)
    column = q.combine_chunks() if isinstance(q, pa.ChunkedArray) else q
    if n == 0 or column.null_count or column.type not in (pa.string(), pa.large_string()):
        for qid, doc, grade in zip(column.to_pylist(), docs, grades):
            out.setdefault(qid, {})[doc] = grade
        return out
    change = as_numpy(pc.not_equal(column.slice(1), column.slice(0, n - 1)))
    starts = np.concatenate([np.zeros(1, np.int64), np.flatnonzero(change) + 1])
    bounds = [*starts.tolist(), n]
    for qid, a, b in zip(pc.take(column, arrow(starts)).to_pylist(), bounds, bounds[1:]):
        block = out.get(qid)
        if block is None:
            out[qid] = dict(zip(docs[a:b], grades[a:b]))
        else:
            block.update(zip(docs[a:b], grades[a:b]))
    return out


def arrow(values: Any, type: pa.DataType | None = None) -> pa.Array:
    """``pa.array(values, type)`` without pandas: ``pa.array`` imports pandas (a quarter of a second
    of a command's start) to ask whether its input is a pandas object. Strings, floats, integers and
    numpy booleans (a mask) are laid out in Arrow's buffers directly (as fast as ``pa.array``);
    anything else goes to it."""
    n = len(values)
    if (
        isinstance(values, np.ndarray)
        and values.dtype == np.bool_
        and values.ndim == 1
        and type in (None, pa.bool_())
    ):
        # a mask (holes' kept queries): Arrow's bits, least significant first
        return pa.Array.from_buffers(
            pa.bool_(), n, [None, pa.py_buffer(np.packbits(values, bitorder="little"))]
        )
    if type is None:  # a numpy array's own type
        type = _ARROW_OF.get(values.dtype) if isinstance(values, np.ndarray) and values.ndim == 1 else None
        if type is None:
            return pa.array(values)
    if type == pa.string():
        texts = values if isinstance(values, list) else list(values)
        try:
            joined = "".join(texts)
        except TypeError:  # a None (a null) among them: pyarrow makes it a null
            return pa.array(values, type)
        offsets = np.zeros(n + 1, dtype=np.int64)
        if joined.isascii():
            data = joined.encode("ascii")
            np.cumsum(np.fromiter(map(len, texts), dtype=np.int64, count=n), out=offsets[1:])
        else:
            try:
                encoded = [t.encode("utf-8") for t in texts]
            except UnicodeEncodeError:  # a lone surrogate: pyarrow says so, as before
                return pa.array(values, type)
            data = b"".join(encoded)
            np.cumsum(np.fromiter(map(len, encoded), dtype=np.int64, count=n), out=offsets[1:])
        if offsets[-1] < 2**31:
            buffers = [None, pa.py_buffer(offsets.astype(np.int32)), pa.py_buffer(data)]
            return pa.Array.from_buffers(pa.string(), n, buffers)
    elif type in _NUMPY_OF:
        try:
            numbers = np.asarray(values)
        except ValueError:  # ragged: pyarrow says what it makes of it
            return pa.array(values, type)
        # numbers only, and no float made an integer: else pyarrow converts (or refuses) as before
        kinds = "iuf" if type == pa.float64() else "iu"
        if numbers.ndim == 1 and numbers.dtype.kind in kinds:
            numbers = np.ascontiguousarray(numbers, dtype=_NUMPY_OF[type])
            return pa.Array.from_buffers(type, n, [None, pa.py_buffer(numbers)])
    return pa.array(values, type)


_ARROW_OF = {
    np.dtype(np.float64): pa.float64(),
    np.dtype(np.int64): pa.int64(),
    np.dtype(np.int32): pa.int32(),
    np.dtype(np.uint32): pa.uint32(),
    np.dtype(np.uint64): pa.uint64(),  # Arrow's sort indices: taken back in holes' top k (#42)
}
_NUMPY_OF: dict[pa.DataType, Any] = {arrow_type: dtype for dtype, arrow_type in _ARROW_OF.items()}


def as_numpy(array: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """Arrow column to numpy without pandas (ChunkedArray.to_numpy imports
    pandas, a quarter of a second the CLI need not pay)."""
    if isinstance(array, pa.ChunkedArray):
        if array.num_chunks == 1:
            array = array.chunk(0)
        elif array.num_chunks == 0:
            return np.zeros(0, dtype=_NUMPY_TYPES.get(array.type, np.float64))
        else:
            return np.concatenate([as_numpy(chunk) for chunk in array.chunks])
    if array.type == pa.bool_() and array.null_count == 0:  # bits: as int8 bytes, then a view
        return as_numpy(pc.cast(array, pa.int8())).view(np.bool_)
    dtype = _NUMPY_TYPES.get(array.type)
    if dtype is not None and array.null_count == 0:
        # a view of the Arrow buffer (Array.to_numpy would import pandas)
        return np.frombuffer(array.buffers()[1], dtype=dtype)[array.offset : array.offset + len(array)]
    values: np.ndarray = array.to_numpy(zero_copy_only=False)
    return values


_NUMPY_TYPES = {
    pa.int8(): np.int8,
    pa.int16(): np.int16,
    pa.int32(): np.int32,
    pa.int64(): np.int64,
    pa.uint8(): np.uint8,
    pa.uint16(): np.uint16,
    pa.uint32(): np.uint32,
    pa.uint64(): np.uint64,
    pa.float32(): np.float32,
    pa.float64(): np.float64,
}


MAX_STRATUM = 2_000_000  # candidates in one stratum: the exact interval holds arrays this long


@dataclass(frozen=True)
class Stratum:
    """One stratum h of a query's unjudged candidates: ``size`` = N_h candidates, of which
    the chunks ``sampled`` (n_h of them, each once) were drawn by simple random sampling
    without replacement, so each drawn chunk has inclusion probability n_h / N_h.

    Their grades are the golden file's grades; a drawn chunk without one is drawn, not yet
    labelled. The reader guarantees 0 <= n_h <= N_h <= :data:`MAX_STRATUM`."""

    name: str
    size: int
    sampled: tuple[str, ...]


@dataclass(frozen=True)
class SamplingDesign:
    """golden.yaml's ``sampling`` section, as ``python -m annotation pool --estimate``
    records it and ``export --format golden`` writes it::

        sampling:
          method: <how the sample was drawn>
          design: {depth: 10, strata: [50, 100, 1000], corpus: true, runs: [...], ...}
          queries:
            <query id>:
              <stratum name>: {size: N_h, sampled: [chunk ids]}

    ``queries``: per query id, its strata in file order (no chunk in two of them).
    ``parameters``: the ``design`` mapping as recorded (None if the file has none); of it,
    ``depth`` (the pool depth, a whole number or None) and ``corpus`` (True when a stratum
    of corpus chunks takes every unjudged chunk no run ranked) are what the estimate reads.
    Parsed and checked once, by ``annotation.formats.golden.read_golden``; the code below it takes
    the type as it is."""

    queries: dict[str, tuple[Stratum, ...]]
    parameters: dict[str, Any] | None = None
    method: str | None = None
    depth: int | None = None
    corpus: bool = False

    def strata(self, qid: str) -> tuple[Stratum, ...]:
        """The query's strata; none when the design did not sample it."""
        return self.queries.get(qid, ())

    def to_dict(self) -> dict[str, Any]:
        """The section's plain values, as ``pool --estimate`` writes them (method, design,
        queries): what the golden.yaml writer dumps."""
        out: dict[str, Any] = {}
        if self.method is not None:
            out["method"] = self.method
        if self.parameters is not None:
            out["design"] = dict(self.parameters)
        out["queries"] = {
            qid: {s.name: {"size": s.size, "sampled": list(s.sampled)} for s in strata}
            for qid, strata in self.queries.items()
        }
        return out
