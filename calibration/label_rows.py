"""The label CSVs ``calibration agree`` reads, as (item, rater, label) rows with the query of each item
(issue #39: the query is the unit of sampling, so a verdict's interval is clustered by it):

- ``item,rater,label``, with an optional ``query_id`` column (an empty cell: no query);
- the CSV ``annotation export --format csv`` writes (:data:`annotation.exports.label_files.CSV_COLUMNS`):
  item = ``item_id``, rater = ``annotator``, label = ``value`` (a pair's: the candidate it names,
  whichever order it was shown in), the query = ``query_id``. The file is
  every label row in the order they were made, so each annotator's newest row of an item counts (a
  correction is a newer row; an empty value, a retraction, is no label), in the order those rows were
  made (``agree --sequential``'s labelling order); labels of several rubrics need ``rubric``.

The long form is read a column at a time (:func:`annotation.formats.csv_tables.read_csv_columns`,
Arrow's reader for a plain file) and handed over encoded
(:class:`calibration.stats.multirater.EncodedRows`): no Python object a row.

Errors are :class:`annotation.model.InvalidTable`: one line naming the file (and the line).
"""

from __future__ import annotations

import os

import numpy as np

from annotation.formats.csv_tables import CsvColumns, read_csv_columns
from annotation.model import InvalidTable
from annotation.rubrics import candidate_value
from calibration.stats.multirater import EncodedRows

__all__ = ["EXPORT_COLUMNS", "LONG_COLUMNS", "LongRow", "long_labels"]

LONG_COLUMNS = ["item", "rater", "label"]  # agree's long CSV, with an optional query_id
EXPORT_COLUMNS = ["item_id", "annotator", "value"]  # of annotation export --format csv (query_id, rubric)

LongRow = tuple[str, str, int | str | None]  # (item, rater, label), None: no label
PathLike = str | os.PathLike[str]


def long_labels(
    path: PathLike, rubric: str | None = None
) -> tuple[list[LongRow] | EncodedRows, dict[str, str] | None]:
    """(item, rater, label) rows of ``path`` (the long form: encoded, :class:`EncodedRows`) and
    {item: its query} (None when the file has no ``query_id`` column). ``rubric``: which rubric's
    labels an export holding several is read for."""
    read = read_csv_columns(path, [])
    header = read.header
    if set(LONG_COLUMNS) <= set(header):
        if rubric is not None:
            raise InvalidTable(
                path, None, None, "--rubric reads an annotation export; this file has no rubric"
            )
        (items, item), (raters, rater), (labels, label) = (read.encoded(c) for c in LONG_COLUMNS)
        _required_codes(path, read, [(items, item, "item"), (raters, rater, "rater")])
        if "" in labels:  # an empty cell: no label
            label = np.where(label == labels.index(""), -1, label)
        rows = EncodedRows(items, item, raters, rater, labels, label)
        if "query_id" not in header:
            return rows, None
        return rows, _queries_of_codes(path, read, items, item, *read.encoded("query_id"))
    if set(EXPORT_COLUMNS) <= set(header):
        return _export_labels(path, read.rows(), rubric)
    raise InvalidTable(
        path,
        1,
        None,
        f"header {','.join(header)}; expected the columns {','.join(LONG_COLUMNS)}[,query_id] or the CSV "
        "annotation export --format csv writes (item_id, query_id, annotator, rubric, value)",
    )


def _required_codes(
    path: PathLike, read: CsvColumns, columns: list[tuple[list[str], np.ndarray, str]]
) -> None:
    """:func:`_required` of encoded columns: the first row with an empty one, the first such column."""
    empty = [
        codes == names.index("") if "" in names else np.zeros(len(codes), bool) for names, codes, _ in columns
    ]
    hits = [int(np.argmax(e)) if e.any() else len(read) for e in empty]
    row = min(hits)
    if row < len(read):
        column = columns[hits.index(row)][2]
        raise InvalidTable(path, int(read.lines[row]), column, "empty; expected a value")


def _queries_of_codes(
    path: PathLike,
    read: CsvColumns,
    items: list[str],
    item: np.ndarray,
    queries: list[str],
    query: np.ndarray,
) -> dict[str, str]:
    """:func:`_queries_of` of encoded columns: {item: its query} (an empty query: none), one query an item."""
    given = np.flatnonzero(query != queries.index("")) if "" in queries else np.arange(len(query))
    items_given, queries_given = item[given], query[given]
    distinct, first = np.unique(items_given, return_index=True)
    query_of = np.full(len(items), -1, dtype=np.int64)
    query_of[distinct] = queries_given[first]
    other = queries_given != query_of[items_given]
    if other.any():
        row = int(given[np.argmax(other)])
        name, found = items[int(item[row])], queries[int(query[row])]
        raise InvalidTable(
            path,
            int(read.lines[row]),
            "query_id",
            f"item {name!r} under the query {found!r} and the query {queries[int(query_of[item[row]])]!r}; an "
            "item is labelled under one query",
        )
    order = distinct[np.argsort(first)]  # the rows' order, as a dict filled row by row
    return {items[i]: queries[int(query_of[i])] for i in order.tolist()}


def _export_labels(
    path: PathLike, read: list[tuple[int, dict[str, str]]], rubric: str | None
) -> tuple[list[LongRow], dict[str, str] | None]:
    """The rows of an ``annotation export --format csv`` file (module docstring)."""
    _required(path, read, EXPORT_COLUMNS[:2])
    rubrics = sorted({r.get("rubric", "") for _, r in read} - {""})
    if rubric is None and len(rubrics) > 1:
        raise InvalidTable(path, None, None, f"labels of {', '.join(rubrics)}; choose one with --rubric")
    if rubric is not None and rubric not in rubrics:
        raise InvalidTable(
            path, None, None, f"no label of the rubric {rubric}; its rubrics: {', '.join(rubrics) or 'none'}"
        )
    newest: dict[tuple[str, str], str] = {}
    for _line, r in read:
        if rubric is None or r.get("rubric") == rubric:
            key = (r["item_id"], r["annotator"])
            newest.pop(key, None)  # the newest row's place in the order: the labelling order
            newest[key] = _candidate(r)
    rows: list[LongRow] = [(item, who, value or None) for (item, who), value in newest.items()]
    if "query_id" not in read[0][1]:
        return rows, None
    kept = {item for item, _who in newest}
    return rows, _queries_of(
        path, [(line, r["item_id"], r["query_id"]) for line, r in read if r["item_id"] in kept]
    )


def _candidate(row: dict[str, str]) -> str:
    """An export row's value as the candidate it names: a pair's choice is stored in the order the
    pair was shown (``shown`` BA: the first shown is B), so two people who preferred the same answer
    shown in other orders agree (:func:`annotation.rubrics.candidate_value`)."""
    value = row["value"]
    if row.get("kind") == "pair" and value in ("0", "1"):
        return str(candidate_value("pair", int(value), row.get("shown") or None))
    return value


def _required(path: PathLike, read: list[tuple[int, dict[str, str]]], columns: list[str]) -> None:
    for line, r in read:
        for column in columns:
            if r[column] == "":
                raise InvalidTable(path, line, column, "empty; expected a value")


def _queries_of(path: PathLike, rows: list[tuple[int, str, str]]) -> dict[str, str]:
    """{item: its query} of (line, item, query) rows (an empty query: none); one query an item."""
    queries: dict[str, str] = {}
    for line, item, query in rows:
        if query == "":
            continue
        if queries.setdefault(item, query) != query:
            raise InvalidTable(
                path,
                line,
                "query_id",
                f"item {item!r} under the query {query!r} and the query {queries[item]!r}; an item is "
                "labelled under one query",
            )
    return queries
