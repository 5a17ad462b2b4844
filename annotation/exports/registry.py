"""The one list of export formats: :data:`FORMATS` maps each name to an
:class:`ExportFormat`, the declaration the command line (``python -m annotation
export --format NAME``) and the Data page read their choices from and
dispatch through.

Every format's function takes ``(store, path, **options)``, writes
atomically and returns one line saying what was written and what the format
cannot hold; ``options`` are the keyword arguments it declares, a subset of
:data:`OPTIONS`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from annotation.exports.common import PathLike
from annotation.exports.folders import export_beir, export_trec
from annotation.exports.label_files import export_csv, export_golden, export_qrels
from annotation.exports.phoenix import export_phoenix
from annotation.exports.trace_tools import export_deepeval, export_ragas
from annotation.store import Store, StoreError

__all__ = [
    "OPTIONS",
    "ExportFormat",
    "FORMATS",
    "EXPORTS",
    "export_format",
    "formats_taking",
    "export_labels",
]

# what the faces may give a format: whose labels, how several people's become one
# grade, the lowest relevant grade, a relevance judge (name[@version] or fingerprint) instead of people,
# and people named by stable pseudonyms (every format takes it)
OPTIONS = ("annotator", "aggregate", "threshold", "judge", "anonymize")


@dataclass(frozen=True)
class ExportFormat:
    """One export format, declared: ``function(store, path, **options)`` writes it."""

    name: str
    function: Callable[..., str]
    writes: Literal["file", "folder"]
    # the keyword arguments of OPTIONS that function takes (the Python API's own extras,
    # export_phoenix's binary_score and export_beir's split, are not offered by the faces)
    options: tuple[str, ...]
    description: str  # one line, for a reader choosing a format
    default_name: str  # the name of what it writes when none is given (the page's download; a folder: + .zip)

    def export(self, store: Store, path: PathLike, **options: Any) -> str:
        """Write this format to ``path``. Of the given ``options`` (names from :data:`OPTIONS`),
        those it does not take are left out: one form or command line offers them all."""
        unknown = sorted(set(options) - set(OPTIONS))
        if unknown:
            raise TypeError(
                f"unknown export options {', '.join(unknown)}; expected some of {', '.join(OPTIONS)}"
            )
        return self.function(
            store, path, **{key: value for key, value in options.items() if key in self.options}
        )


RELEVANCE_OPTIONS = ("threshold", "annotator", "aggregate", "anonymize")

FORMATS: dict[str, ExportFormat] = {
    fmt.name: fmt
    for fmt in (
        ExportFormat(
            "golden",
            export_golden,
            "file",
            ("annotator", "aggregate", "anonymize"),
            "golden.yaml: the current labels, who judged, what they saw, the grade scale and sampling design",
            "golden.yaml",
        ),
        ExportFormat(
            "qrels",
            export_qrels,
            "file",
            ("annotator", "aggregate", "anonymize", "judge"),
            "TREC qrels of the current labels, or of a relevance judge's grades",
            "qrels.txt",
        ),
        ExportFormat(
            "csv",
            export_csv,
            "file",
            ("annotator", "anonymize"),
            "every label row as CSV, retractions included",
            "labels.csv",
        ),
        ExportFormat(
            "ragas",
            export_ragas,
            "file",
            RELEVANCE_OPTIONS,
            "RAGAS single-turn samples (JSONL), one per trace; reference: chunks graded >= threshold",
            "ragas.jsonl",
        ),
        ExportFormat(
            "deepeval",
            export_deepeval,
            "file",
            RELEVANCE_OPTIONS,
            "DeepEval goldens (JSON), one per trace; context: texts of chunks graded >= threshold",
            "deepeval.json",
        ),
        ExportFormat(
            "beir",
            export_beir,
            "folder",
            RELEVANCE_OPTIONS,
            "a BEIR folder: corpus.jsonl, queries.jsonl and qrels/test.tsv, every grade 0-3",
            "beir",
        ),
        ExportFormat(
            "trec",
            export_trec,
            "folder",
            RELEVANCE_OPTIONS,
            "a TREC folder: qrels (every grade 0-3) and one .run file per stored run",
            "trec",
        ),
        ExportFormat(
            "phoenix",
            export_phoenix,
            "file",
            (*RELEVANCE_OPTIONS, "judge"),
            "Arize Phoenix document annotations (JSONL; .csv: CSV) of people's or a judge's grades",
            "phoenix.jsonl",
        ),
    )
}

# the formats of other tools, which map grades to relevance by a threshold (a view of FORMATS)
EXPORTS: dict[str, Callable[..., str]] = {
    name: fmt.function for name, fmt in FORMATS.items() if "threshold" in fmt.options
}


def export_format(name: str) -> ExportFormat:
    """The declaration of format ``name``; StoreError naming the formats when there is none."""
    if name not in FORMATS:
        raise StoreError(f"format must be one of {', '.join(FORMATS)}, not {name!r}")
    return FORMATS[name]


def formats_taking(option: str) -> list[str]:
    """The names of the formats that take ``option`` (one of :data:`OPTIONS`)."""
    return [name for name, fmt in FORMATS.items() if option in fmt.options]


def export_labels(
    store: Store,
    fmt: str,
    output: PathLike,
    annotator: str | None = None,
    aggregate: str = "median",
    anonymize: bool = False,
) -> str:
    """One of the store's own label files by name (golden, qrels, csv: the formats
    without a relevance threshold), as :data:`FORMATS` declares it."""
    label_files = [name for name in FORMATS if name not in EXPORTS]
    if fmt not in label_files:
        raise StoreError(f"format must be one of {', '.join(label_files)}, not {fmt!r}")
    return FORMATS[fmt].export(store, output, annotator=annotator, aggregate=aggregate, anonymize=anonymize)
