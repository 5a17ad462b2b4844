"""The store's labels in the formats people and other evaluation tools read:
golden.yaml, TREC qrels and CSV (the store's own label files), RAGAS,
DeepEval, BEIR, TREC and Arize Phoenix.

:data:`FORMATS` (:mod:`annotation.exports.registry`) is the one list of them:
each name's :class:`ExportFormat` gives the function, whether it writes a file
or a folder, the options it takes and a one-line description. By destination:

- :mod:`~annotation.exports.common`: the one :class:`NothingToExport`, the
  common arguments (threshold, annotator, aggregate), the current grades and
  who gave them, the JSONL and CSV writers;
- :mod:`~annotation.exports.label_files`: golden.yaml, qrels, CSV;
- :mod:`~annotation.exports.stored_traces`: the traces as the trace formats
  read them; :mod:`~annotation.exports.trace_tools`: RAGAS and DeepEval;
- :mod:`~annotation.exports.folders`: the BEIR and TREC folders;
- :mod:`~annotation.exports.phoenix`: Arize Phoenix document annotations.

A file is written to a temporary file and renamed; a folder is built beside
the target and swapped in by renames. Every relevance export records its
threshold and who labelled: in the file's metadata where the format has a
place for it (DeepEval's ``additional_metadata``, Phoenix's ``metadata`` and
``explanation``), else in the summary line. A file that names people says so in
its summary line; ``anonymize`` (every format) writes stable pseudonyms instead
(:func:`~annotation.exports.common.export_names`). Every CSV is spreadsheet-safe
(:func:`~annotation.exports.common.spreadsheet_safe`).
"""

from __future__ import annotations

from annotation.exports.common import NothingToExport
from annotation.exports.folders import BEIR_QRELS_HEADER, export_beir, export_trec
from annotation.exports.label_files import CSV_COLUMNS, export_csv, export_golden, export_qrels
from annotation.exports.phoenix import PHOENIX_COLUMNS, PHOENIX_LABELS, export_phoenix
from annotation.exports.registry import (
    EXPORTS,
    FORMATS,
    OPTIONS,
    ExportFormat,
    export_format,
    export_labels,
    formats_taking,
)
from annotation.exports.trace_tools import export_deepeval, export_ragas

__all__ = [
    "FORMATS",
    "OPTIONS",
    "ExportFormat",
    "export_format",
    "formats_taking",
    "EXPORTS",
    "NothingToExport",
    "export_labels",
    "export_golden",
    "export_qrels",
    "export_csv",
    "export_ragas",
    "export_deepeval",
    "export_beir",
    "export_trec",
    "export_phoenix",
    "BEIR_QRELS_HEADER",
    "CSV_COLUMNS",
    "PHOENIX_COLUMNS",
    "PHOENIX_LABELS",
]
