"""The choices the command lines offer, named without importing what carries them out, so every
``python -m annotation ... --help`` starts without numpy, pyarrow or the store (#27): the
baseline's ranking methods, how several people's grades become one, and the export formats with
what each writes. The modules that carry them out read these names (:mod:`annotation.baseline`,
:mod:`annotation.store.labels`); the export registry (:data:`annotation.exports.FORMATS`) is held
to :data:`EXPORT_FORMATS` by a test."""

from __future__ import annotations

from typing import Literal

__all__ = ["METHODS", "AGGREGATES", "AGGREGATE_RULES", "EXPORT_FORMATS"]

METHODS = ("bm25",)  # python -m annotation baseline --method
AGGREGATES = ("median", "majority", "mean")  # one grade per item from several people
# each aggregate's rule in words, as the exports' summaries, the options table and the docs say it
# (annotation.store.labels.aggregate_grades carries them out)
AGGREGATE_RULES = {
    "median": "median, the lower middle grade (an even number of raters: the lower of the two middle grades)",
    "majority": "majority, the most frequent grade (a tie: the lower middle of the tied grades)",
    "mean": "mean rounded half up (1.5 -> 2)",
}
# python -m annotation export --format NAME: what it writes, in the registry's order
EXPORT_FORMATS: dict[str, Literal["file", "folder"]] = {
    "golden": "file",
    "qrels": "file",
    "csv": "file",
    "ragas": "file",
    "deepeval": "file",
    "beir": "folder",
    "trec": "folder",
    "phoenix": "file",
}
