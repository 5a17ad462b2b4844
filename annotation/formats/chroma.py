"""Chroma's chunking-evaluation questions (#44): a CSV of ``question, references, corpus_id``, each
reference a JSON list of ``{content, start_index, end_index}``, the character span of the corpus
file that answers the question (github.com/brandonstarxel/chunking_evaluation). Read into a golden
set whose queries hold those spans as evidence (:class:`~annotation.model.Evidence`), no chunk
grades: a chunking-independent golden set that ``python -m calibration project`` puts onto any
chunking. Each span is checked against its document (known, within it, ``content`` equal to it).
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from annotation.formats.chunks import check_span
from annotation.formats.csv_tables import read_csv_rows
from annotation.formats.json_lines import parse_json_line
from annotation.formats.textio import shown_value
from annotation.model import Evidence, InvalidTable, Qrels

__all__ = ["read_chroma_questions", "CHROMA_GRADE"]

# a reference span holds (some of) the answer: "highly relevant" on the 0-3 scale; a question with
# several references needs them all, so no single span is "the exact answer" (grade 3) on its own
CHROMA_GRADE = 2

_REFERENCE = "expected a JSON list of {content, start_index, end_index}"


def _index(path: str | os.PathLike[str], line: int, ref: dict[str, object], where: str, key: str) -> int:
    value = ref.get(key)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InvalidTable(path, line, f"{where}{key}", f"{value!r:.40}; expected a whole number >= 0")
    return value


def read_chroma_questions(
    path: str | os.PathLike[str], documents: Mapping[str, str], grade: int = CHROMA_GRADE
) -> Qrels:
    """The questions as a golden set: query ``q<row>`` (the row's number among the questions, from
    1), its text the question, its evidence the references at ``grade``, each span in the document
    named by ``corpus_id``."""
    grades: dict[str, dict[str, int]] = {}
    texts: dict[str, str] = {}
    evidence: dict[str, list[Evidence]] = {}
    rows = read_csv_rows(path, ["question", "references", "corpus_id"])
    width = len(str(len(rows)))
    for index, (line, row) in enumerate(rows, start=1):
        qid = f"q{index:0{width}d}"
        if not row["question"]:
            raise InvalidTable(path, line, "question", "empty; expected the question's text")
        refs = parse_json_line(row["references"], path, line, InvalidTable)
        if not isinstance(refs, list) or not refs:
            raise InvalidTable(path, line, "references", _REFERENCE)
        spans = []
        for position, ref in enumerate(refs):
            where = f"references[{position}]."
            if not isinstance(ref, dict):
                raise InvalidTable(path, line, f"references[{position}]", _REFERENCE)
            start, end = (
                _index(path, line, ref, where, "start_index"),
                _index(path, line, ref, where, "end_index"),
            )
            if end <= start:
                raise InvalidTable(path, line, f"{where}end_index", f"{end} is not after {start}")
            check_span(path, line, row["corpus_id"], start, end, documents, InvalidTable, where)
            content = ref.get("content")
            if content is not None and content != documents[row["corpus_id"]][start:end]:
                raise InvalidTable(
                    path,
                    line,
                    f"{where}content",
                    f"differs from {shown_value(row['corpus_id'])}[{start}:{end}]; expected the "
                    "document's characters at the reference's offsets",
                )
            spans.append(Evidence(row["corpus_id"], start, end, grade))
        grades[qid], texts[qid], evidence[qid] = {}, row["question"], spans
    return Qrels(grades=grades, texts=texts, meta={}, path=str(path), evidence=evidence)
