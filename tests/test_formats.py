"""annotation/formats/: strict readers, exact messages, trec_eval files, round trips, fuzz.

Every malformed input is checked for its exception class and its whole
message (``PATH:LINE: FIELD: what was expected``), because the message is
the product here: it is what a user sees instead of a traceback.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from annotation.formats import trec
from annotation.formats.golden import DEFAULT_GRADE_SCALE, read_golden, write_golden
from annotation.formats.rankings import read_rankings, write_rankings
from annotation.formats.records import read_corpus, read_corpus_ids, read_queries, read_traces
from annotation.formats.trec import read_qrels, read_run, write_qrels, write_run
from annotation.model import (
    FormatError,
    InvalidCorpus,
    InvalidGolden,
    InvalidQrels,
    InvalidRankings,
    InvalidRun,
    Qrels,
    Run,
)
from tests.conftest import EXAMPLE, shared_dir

_SHARED = shared_dir()
TREC_EVAL = _SHARED / "data" / "trec_eval_test" if _SHARED else None
needs_trec_eval = pytest.mark.skipif(TREC_EVAL is None, reason="../shared/data not found")

GOLDEN_OK = """\
name: demo
grade_scale:
  0: irrelevant
  1: related
  2: highly relevant
  3: perfectly relevant
queries:
  - id: q1
    text: what eats maize?
    grades: {d1: 3, d2: 0}
"""


def write(tmp_path: Path, name: str, content: str | bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(content.encode("utf-8") if isinstance(content, str) else content)
    return path


def raises_exactly(error: type[FormatError], message: str, read: Callable[[], object]) -> None:
    with pytest.raises(error) as info:
        read()
    assert type(info.value) is error
    assert str(info.value) == message


# ---------------------------------------------------------------- malformed inputs
#
# (reader, file name, content, error class, message after "PATH")

QRELS_CASES = [
    ("3 columns", "q1 0 d1\n", ":1: expected 4 columns (qid iter docid grade), got 3"),
    ("5 columns", "q1 0 d1 1\nq1 0 d2 1 x\n", ":2: expected 4 columns (qid iter docid grade), got 5"),
    ("grade 1.5", "q1 0 d1 1\nq1 0 d2 1.5\n", ":2: grade: expected an integer, got '1.5'"),
    ("grade high", "q1 0 d1 high\n", ":1: grade: expected an integer, got 'high'"),
    # Arrow's integer parser takes 0x10 as 16; Python's int() takes 1_0 as 10
    ("grade 0x10", "q1 0 d1 0x10\n", ":1: grade: expected an integer, got '0x10'"),
    ("grade 1_0", "q1 0 d1 1_0\n", ":1: grade: expected an integer, got '1_0'"),
    (
        "grade beyond 64 bits",
        "q1 0 d1 99999999999999999999\n",
        ":1: grade: expected an integer that fits in 64 bits, got '99999999999999999999'",
    ),
    (
        "conflicting duplicate",
        "q1 0 d1 1\nq1 0 d2 0\nq1 0 d1 2\n",
        ":3: grade: query 'q1' document 'd1' graded 2 here and 1 on line 1; expected one grade per pair",
    ),
    ("empty file", "", ": file is empty; expected at least one line"),
    ("whitespace only", " \n\t\n\n", ": file is empty; expected at least one line"),
    (
        "only comments",
        "# judged by A\n\n# and B\n",
        ": no judgments, only comments or blank lines; expected lines 'qid iter docid grade'",
    ),
    (
        "NUL byte",
        b"q1 0 d1 1\nq1 0 d\x002 1\n",
        ":2: NUL byte: this looks like a binary file; expected UTF-8 text",
    ),
    (
        "non-UTF-8",
        b"q1 0 d1 1\nq1 0 d2 0\nq1 0 d\xe93 1\n",
        ":3: byte 0xe9 is not UTF-8; expected UTF-8 text",
    ),
    # a tab-separated file whose id holds a space: the fast reader kept "q 1"
    (
        "space inside tab field",
        "q1\t0\td1\t1\nq 1\t0\td2\t1\n",
        ":2: expected 4 columns (qid iter docid grade), got 5",
    ),
    (
        "trailing empty column",
        "q1 0 d1 1\nq1 0 d2 \n",
        ":2: expected 4 columns (qid iter docid grade), got 3",
    ),
]

RUN_CASES = [
    ("5 columns", "q1 Q0 d1 1 2.5\n", ":1: expected 6 columns (qid Q0 docid rank score tag), got 5"),
    ("score high", "q1 Q0 d1 1 2.5 bm25\nq1 Q0 d2 2 high bm25\n", ":2: score: expected a number, got 'high'"),
    ("score NaN", "q1 Q0 d1 1 nan bm25\n", ":1: score: expected a number, got 'nan' (NaN cannot be ordered)"),
    ("score 1_0", "q1 Q0 d1 1 1_0 bm25\n", ":1: score: expected a number, got '1_0'"),
    ("rank 1.0", "q1 Q0 d1 1.0 2.5 bm25\n", ":1: rank: expected an integer, got '1.0'"),
    ("rank 0x1", "q1 Q0 d1 0x1 2.5 bm25\n", ":1: rank: expected an integer, got '0x1'"),
    ("empty file", "", ": file is empty; expected at least one line"),
    (
        "only comments",
        "# run\n# nothing else\n",
        ": no results, only comments or blank lines; expected lines 'qid Q0 docid rank score tag'",
    ),
    # "q Q0 d 1 2.0 " splits into 6 fields on ' ', the last one empty
    (
        "empty tag",
        "q1 Q0 d1 1 2.0 bm25\nq1 Q0 d2 2 1.0 \n",
        ":2: expected 6 columns (qid Q0 docid rank score tag), got 5",
    ),
    (
        "NUL byte",
        b"q1 Q0 d1 1 2.0 bm25\x00\n",
        ":1: NUL byte: this looks like a binary file; expected UTF-8 text",
    ),
]

RANKINGS_CASES = [
    (
        "invalid JSON",
        '{"query_id": "q1", "ranking": ["d1"]}\n{"query_id": "q2", \n',
        ":2: not valid JSON (Expecting property name enclosed in double quotes); expected one object per line",
    ),
    ("not an object", '["q1", ["d1"]]\n', ':1: expected an object {"query_id": ..., "ranking": [...]}'),
    ("missing query_id", '{"ranking": ["d1"]}\n', ":1: query_id: missing; expected the query id as a string"),
    (
        "numeric query_id",
        '{"query_id": 1, "ranking": ["d1"]}\n',
        ':1: query_id: expected a non-empty string (ids are text: write "1", not 1), got 1',
    ),
    (
        "missing ranking",
        '{"query_id": "q1"}\n',
        ":1: ranking: missing; expected a list of document ids, best first",
    ),
    (
        "ranking not a list",
        '{"query_id": "q1", "ranking": "d1 d2"}\n',
        ":1: ranking: expected a list of document ids, got a string",
    ),
    (
        "doc id a number",
        '{"query_id": "q1", "ranking": ["d1", 2]}\n',
        ":1: ranking[1]: expected a document id (a non-empty string without spaces), got 2",
    ),
    (
        "doc id with a space",
        '{"query_id": "q1", "ranking": ["d 1"]}\n',
        ':1: ranking[0]: expected a document id (a non-empty string without spaces), got "d 1"',
    ),
    (
        "duplicate query_id",
        '{"query_id": "q1", "ranking": ["d1"]}\n\n{"query_id": "q1", "ranking": ["d2"]}\n',
        ":3: query_id: 'q1' already given on line 1; expected each query once",
    ),
    ("only blank lines", "\n  \n", ": file is empty; expected at least one line"),
    ("nested too deeply", "[" * 100_000 + "\n", ":1: JSON nested too deeply; expected one object per line"),
]

GOLDEN_CASES = [
    (
        "not YAML",
        "queries: [\n",
        ":2: not valid YAML (expected the node content, but found '<stream end>'); "
        "expected a mapping with a 'queries' list, or a list of {query, grades}",
    ),
    (
        "top-level list of ids",  # a list is the essay's shape: each item needs its query's text
        "- id: q1\n- id: q2\n",
        ":1: [0].query: missing; expected the query's text (a list item is {query, grades, id?}; "
        "or write a mapping with a 'queries' list of {id, text, grades})",
    ),
    (
        "top-level scalar",
        "hello\n",
        ":1: expected a mapping with a 'queries' list or a list of {query, grades} at the top, got 'hello'",
    ),
    ("missing queries", "name: demo\n", ": queries: missing; expected a list of {id, text, grades}"),
    (
        "unknown top key",
        "queries:\n  - id: q1\n    grades: {d1: 1}\ncolour: red\n",
        ":4: colour: unknown key; expected one of chunks, created, description, grade_scale, judged_by, "
        "min_grade, name, provenance, queries, sampling, shown",
    ),
    (
        "duplicate top key",
        "queries: []\nname: a\nqueries: []\n",
        ":3: queries: key already given on line 1; expected each key once",
    ),
    ("complex key", "? [a]\n: 1\nqueries: []\n", ":1: expected plain keys"),
    ("queries not a list", "queries: q1\n", ":1: queries: expected a list of {id, text, grades}"),
    ("empty queries", "queries: []\n", ":1: queries: empty; expected at least one query"),
    (
        "grade out of scale",
        "queries:\n  - id: q1\n    grades:\n      d1: 1\n      d2: 4\n",
        ":5: queries[0].grades.d2: expected a grade in the grade_scale 0-3 (or negative), got 4",
    ),
    (
        "grade out of own scale",
        "grade_scale: {0: no, 1: yes}\nqueries:\n  - id: q1\n    grades: {d1: 2}\n",
        ":4: queries[0].grades.d1: expected a grade in the grade_scale 0-1 (or negative), got 2",
    ),
    (
        "grade 1.5",
        "queries:\n  - id: q1\n    grades: {d1: 1.5}\n",
        ":3: queries[0].grades.d1: expected an integer grade, got '1.5'",
    ),
    (
        "grade 0x1",
        "queries:\n  - id: q1\n    grades: {d1: 0x1}\n",
        ":3: queries[0].grades.d1: expected an integer grade, got '0x1'",
    ),
    (
        "grade octal 010",
        "queries:\n  - id: q1\n    grades: {d1: 010}\n",
        ":3: queries[0].grades.d1: expected an integer grade, got '010'",
    ),
    (
        "grade a list",
        "queries:\n  - id: q1\n    grades: {d1: [1]}\n",
        ":3: queries[0].grades.d1: expected an integer grade, got a list",
    ),
    (
        "duplicate query id",
        "queries:\n  - id: q1\n    grades: {d1: 1}\n  - id: q1\n    grades: {d2: 1}\n",
        ":4: queries[1].id: query 'q1' already given on line 2; expected each id once",
    ),
    (
        "duplicate doc key",
        "queries:\n  - id: q1\n    grades:\n      d1: 1\n      d1: 2\n",
        ":5: queries[0].grades.d1: key already given on line 4; expected each key once",
    ),
    (
        "alias",
        "x: &a {d1: 1}\nqueries:\n  - id: q1\n    grades: *a\n",
        ":1: YAML anchor or alias &a is not allowed; expected plain YAML, each value written out",
    ),
    (
        "python tag",
        "queries: !!python/object/apply:os.system [echo hi]\n",
        ":1: YAML tag !!python/object/apply:os.system is not allowed; expected plain YAML (no tags)",
    ),
    (
        "python tag in sampling",
        "queries:\n  - id: q1\n    grades: {d1: 1}\nsampling: !!python/name:os.system ''\n",
        ":4: YAML tag !!python/name:os.system is not allowed; expected plain YAML (no tags)",
    ),
    (
        "int tag on text",
        "queries:\n  - id: q1\n    grades: {d1: !!int abc}\n",
        ":3: YAML tag !!int is not allowed; expected plain YAML (no tags)",
    ),
    (
        "query without grades",
        "queries:\n  - id: q1\n    text: maize pests\n",
        ":2: queries[0].grades: missing; expected {doc_id: grade} (or evidence)",
    ),
    (
        "query without id",
        "queries:\n  - text: maize pests\n    grades: {d1: 1}\n",
        ":2: queries[0].id: missing; expected the query id",
    ),
    (
        "unknown query key",
        "queries:\n  - id: q1\n    grade: {d1: 1}\n",
        ":3: queries[0].grade: unknown key; expected id, text, grades",
    ),
    ("query not a mapping", "queries:\n  - q1\n", ":2: queries[0]: expected a mapping {id, text, grades}"),
    (
        "bad date in sampling",
        "queries:\n  - id: q1\n    grades: {d1: 1}\nsampling: {since: 2024-13-45}\n",
        ":4: sampling: expected plain values (month must be in 1..12)",
    ),
    (
        "control character",
        'queries:\n  - id: q1\n    grades: {d1: 1}\nname: "\x07"\n',
        ":4: not valid YAML (unacceptable character #x0007: special characters are not allowed); "
        "expected a mapping with a 'queries' list, or a list of {query, grades}",
    ),
    (
        "only a comment",
        "# nothing yet\n",
        ": no YAML content; expected a mapping with a 'queries' list, or a list of {query, grades}",
    ),
    (
        "nested too deeply",
        "queries:\n  - " + "[" * 100_000,
        ":2: nested more than 64 levels deep; expected a mapping with a 'queries' list, "
        "or a list of {query, grades}",
    ),
    # the top mapping is one level, so 63 brackets are still read (and refused as a query)
    (
        "nested 64 levels",
        "queries: " + "[" * 63 + "]" * 63 + "\n",
        ":1: queries[0]: expected a mapping {id, text, grades}",
    ),
    ("NUL byte", b"queries:\n\x00\n", ":2: NUL byte: this looks like a binary file; expected UTF-8 text"),
]

CORPUS_CASES = [
    ("duplicate id", "corpus.txt", "d1\nd2\nd1\n", ":3: id: 'd1' already on line 1; expected each id once"),
    (
        "JSONL without id",
        "corpus.jsonl",
        '{"id": "d1", "text": "x"}\n{"text": "y"}\n',
        ':2: id: expected {"id": "<non-empty string>", ...}',
    ),
    (
        "JSONL not JSON",
        "corpus.jsonl",
        "d1\n",
        ":1: not valid JSON (Expecting value); expected one object per line",
    ),
    ("empty", "corpus.txt", "\n\n", ": file is empty; expected at least one line"),
]


@pytest.mark.parametrize(("case", "content", "message"), QRELS_CASES, ids=[c[0] for c in QRELS_CASES])
def test_bad_qrels(tmp_path, case, content, message) -> None:
    path = write(tmp_path, "bad.qrels", content)
    raises_exactly(InvalidQrels, f"{path}{message}", lambda: read_qrels(path))


@pytest.mark.parametrize(("case", "content", "message"), RUN_CASES, ids=[c[0] for c in RUN_CASES])
def test_bad_run(tmp_path, case, content, message) -> None:
    path = write(tmp_path, "bad.run", content)
    raises_exactly(InvalidRun, f"{path}{message}", lambda: read_run(path))


@pytest.mark.parametrize(("case", "content", "message"), RANKINGS_CASES, ids=[c[0] for c in RANKINGS_CASES])
def test_bad_rankings(tmp_path, case, content, message) -> None:
    path = write(tmp_path, "bad.jsonl", content)
    raises_exactly(InvalidRankings, f"{path}{message}", lambda: read_rankings(path))


@pytest.mark.parametrize(("case", "content", "message"), GOLDEN_CASES, ids=[c[0] for c in GOLDEN_CASES])
def test_bad_golden(tmp_path, case, content, message) -> None:
    path = write(tmp_path, "golden.yaml", content)
    raises_exactly(InvalidGolden, f"{path}{message}", lambda: read_golden(path))


@pytest.mark.parametrize(("case", "content", "message"), GOLDEN_CASES, ids=[c[0] for c in GOLDEN_CASES])
def test_bad_golden_without_libyaml(tmp_path, monkeypatch, case, content, message) -> None:
    """The same messages where PyYAML was built without libyaml (the pure-Python loader)."""
    from annotation.formats import plain_yaml

    monkeypatch.setattr(plain_yaml, "_FAST_LOADER", None)
    path = write(tmp_path, "golden.yaml", content)
    raises_exactly(InvalidGolden, f"{path}{message}", lambda: read_golden(path))


def test_golden_reads_the_same_with_and_without_libyaml(monkeypatch) -> None:
    from annotation.formats import plain_yaml

    example = EXAMPLE / "sampled.yaml"
    fast = read_golden(example)
    monkeypatch.setattr(plain_yaml, "_FAST_LOADER", None)
    slow = read_golden(example)
    assert fast.grades == slow.grades and fast.texts == slow.texts and fast.meta == slow.meta
    assert fast.meta["sampling"]["queries"]["q_broad"]["unjudged corpus chunks"]["size"] == 16


@pytest.mark.parametrize(
    ("case", "name", "content", "message"), CORPUS_CASES, ids=[c[0] for c in CORPUS_CASES]
)
def test_bad_corpus(tmp_path, case, name, content, message) -> None:
    path = write(tmp_path, name, content)
    raises_exactly(InvalidCorpus, f"{path}{message}", lambda: read_corpus_ids(path))


READERS = [
    (read_qrels, InvalidQrels),
    (read_run, InvalidRun),
    (read_rankings, InvalidRankings),
    (read_golden, InvalidGolden),
    (read_corpus_ids, InvalidCorpus),
]


@pytest.mark.parametrize(("read", "error"), READERS, ids=[r[0].__name__ for r in READERS])
def test_missing_file_and_directory(tmp_path, read, error) -> None:
    missing = tmp_path / "nope.txt"
    raises_exactly(error, f"{missing}: no such file; expected a readable file", lambda: read(missing))
    raises_exactly(error, f"{tmp_path}: is a directory; expected a file", lambda: read(tmp_path))


def test_qrels_grade_outside_scale(tmp_path) -> None:
    path = write(tmp_path, "a.qrels", "q1 0 d1 3\nq1 0 d2 4\nq1 0 d3 -1\n")
    raises_exactly(
        InvalidQrels,
        f"{path}:2: grade: expected a grade in the scale 0-3 (or negative), got 4",
        lambda: read_qrels(path, scale=(0, 3)),
    )
    assert read_qrels(path).grades == {"q1": {"d1": 3, "d2": 4, "d3": -1}}


def test_identical_duplicate_judgment_is_accepted(tmp_path) -> None:
    path = write(tmp_path, "a.qrels", "q1 0 d1 2\nq1 0 d2 0\nq1 1 d1 2\n")
    qrels = read_qrels(path)
    assert qrels.grades == {"q1": {"d1": 2, "d2": 0}}
    assert qrels.n_judgments == 2


def test_negative_grades_are_judged_not_relevant(tmp_path) -> None:
    path = write(tmp_path, "a.qrels", "q1 0 d1 -1\nq1 0 d2 -2\n")
    assert read_qrels(path).grades == {"q1": {"d1": -1, "d2": -2}}


def test_error_message_parts() -> None:
    error = InvalidQrels("a.qrels", 7, "grade", "expected an integer, got 'x'")
    assert (error.path, error.line, error.field, error.kind) == ("a.qrels", 7, "grade", "qrels")
    assert str(error) == "a.qrels:7: grade: expected an integer, got 'x'"
    assert str(InvalidRun("r", None, None, "file is empty")) == "r: file is empty"
    assert isinstance(error, ValueError)


# ---------------------------------------------------------------- the fast path on a large file


def _clean_run_lines(n: int, seed: int = 7) -> list[str]:
    rng = random.Random(seed)
    lines = []
    for i in range(n):
        qid = f"{i // 1000:03d}"
        lines.append(f"{qid} Q0 doc{rng.randrange(10**6)} {i % 1000 + 1} {rng.uniform(-5, 50):.6f} bm25\n")
    return lines


@pytest.fixture(scope="module")
def clean_run_lines() -> list[str]:
    return _clean_run_lines(100_000)


BAD_LINE_100000 = [
    (
        "5 columns",
        "099 Q0 docX 1000 1.5\n",
        ":100000: expected 6 columns (qid Q0 docid rank score tag), got 5",
    ),
    ("score", "099 Q0 docX 1000 high bm25\n", ":100000: score: expected a number, got 'high'"),
    (
        "NaN",
        "099 Q0 docX 1000 NaN bm25\n",
        ":100000: score: expected a number, got 'NaN' (NaN cannot be ordered)",
    ),
    ("rank 0x10", "099 Q0 docX 0x10 1.5 bm25\n", ":100000: rank: expected an integer, got '0x10'"),
    (
        "empty tag",
        "099 Q0 docX 1000 1.5 \n",
        ":100000: expected 6 columns (qid Q0 docid rank score tag), got 5",
    ),
    ("tab in id", "099 Q0 doc\tX 1000 1.5 bm25\n", ":100000: rank: expected an integer, got 'X'"),
    ("non-UTF-8", b"099 Q0 doc\xff 1000 1.5 bm25\n", ":100000: byte 0xff is not UTF-8; expected UTF-8 text"),
    (
        "NUL",
        b"099 Q0 doc\x00 1000 1.5 bm25\n",
        ":100000: NUL byte: this looks like a binary file; expected UTF-8 text",
    ),
]


@pytest.mark.slow  # files of 100,000 lines
@pytest.mark.parametrize(
    ("case", "bad_line", "message"), BAD_LINE_100000, ids=[c[0] for c in BAD_LINE_100000]
)
def test_fast_path_hands_line_100000_to_the_line_reader(
    tmp_path, clean_run_lines, case, bad_line, message
) -> None:
    body = "".join(clean_run_lines[:-1]).encode("utf-8")
    tail = bad_line if isinstance(bad_line, bytes) else bad_line.encode("utf-8")
    path = write(tmp_path, "big.run", body + tail)
    assert trec._fast_run(path) is None
    raises_exactly(InvalidRun, f"{path}{message}", lambda: read_run(path))


def test_fast_path_reads_a_large_clean_run_like_the_line_reader(tmp_path, clean_run_lines) -> None:
    path = write(tmp_path, "big.run", "".join(clean_run_lines))
    fast = trec._fast_run(path)
    assert fast is not None, "a clean run must take the columnar path"
    slow = trec._slow_run(path)
    assert fast.n_rows == slow.n_rows == 100_000
    assert fast.table.equals(slow.table)
    assert fast.name == slow.name == "bm25"
    assert read_run(path).table.equals(slow.table)


@pytest.mark.slow  # files of 100,000 lines
def test_comment_and_crlf_deep_in_a_large_run_are_accepted(tmp_path, clean_run_lines) -> None:
    lines = list(clean_run_lines)
    lines[70_000] = "# a comment far past the first 64 KiB\n"
    lines[99_999] = lines[99_999].replace("\n", "\r\n")
    path = write(tmp_path, "big.run", "".join(lines))
    run = read_run(path)
    assert run.n_rows == 99_999
    assert run.table.equals(trec._slow_run(path).table)


# ---------------------------------------------------------------- positive cases


def test_comments_and_blank_lines(tmp_path) -> None:
    qrels = write(tmp_path, "a.qrels", "# judged 2024\n\nq1 0 d1 1\n   \n  # indented comment\nq1 0 d2 0\n")
    assert read_qrels(qrels).grades == {"q1": {"d1": 1, "d2": 0}}
    run = write(tmp_path, "a.run", "# run\nq1 Q0 d1 1 2.0 bm25\n\nq1 Q0 d2 2 1.0 bm25\n# end\n")
    assert read_run(run).rankings() == {"q1": ["d1", "d2"]}
    assert read_run(run).name == "bm25"


def test_tab_separated_run_with_padded_scores_takes_the_fast_path(tmp_path) -> None:
    path = write(
        tmp_path,
        "a.run",
        "301\tQ0\tFR1\t104\t  2.129133\tSTANDARD\n301\tQ0\tFR2\t414\t  1.724760\tSTANDARD\n",
    )
    assert trec._fast_run(path) is not None
    run = read_run(path)
    assert run.table.equals(trec._slow_run(path).table)
    assert run.table["s"].to_pylist() == [2.129133, 1.72476]
    assert run.name == "STANDARD"


def test_extra_columns_after_the_tag_are_ignored(tmp_path) -> None:
    path = write(tmp_path, "a.run", "q1 Q0 d1 1 2.0 bm25 more junk at\nq1 Q0 d2 2 1.0 bm25 end of lines.\n")
    run = read_run(path)
    assert run.rankings() == {"q1": ["d1", "d2"]}
    assert run.name == "bm25"


def test_crlf_line_endings(tmp_path) -> None:
    qrels = write(tmp_path, "a.qrels", "q1 0 d1 1\r\nq1 0 d2 0\r\n")
    assert read_qrels(qrels).grades == {"q1": {"d1": 1, "d2": 0}}
    run = write(tmp_path, "a.run", "q1 Q0 d1 1 2.0 bm25\r\nq1 Q0 d2 2 1.0 bm25\r\n")
    assert read_run(run).rankings() == {"q1": ["d1", "d2"]}
    assert read_run(run).name == "bm25"
    golden = write(tmp_path, "g.yaml", GOLDEN_OK.replace("\n", "\r\n"))
    assert read_golden(golden).grades == {"q1": {"d1": 3, "d2": 0}}
    rankings = write(tmp_path, "a.jsonl", '{"query_id": "q1", "ranking": ["d1"]}\r\n')
    assert read_rankings(rankings).rankings() == {"q1": ["d1"]}


def test_ids_are_text_leading_zeros_kept(tmp_path) -> None:
    qrels = write(tmp_path, "a.qrels", "001 0 0042 1\n1 0 42 2\n")
    assert read_qrels(qrels).grades == {"001": {"0042": 1}, "1": {"42": 2}}
    run = write(tmp_path, "a.run", "001 Q0 0042 1 1.0 r\n1 Q0 42 1 1.0 r\n")
    assert read_run(run).rankings() == {"001": ["0042"], "1": ["42"]}
    golden = write(
        tmp_path,
        "g.yaml",
        "queries:\n  - id: 001\n    grades: {0042: 1, 1.0: 2}\n  - id: 1\n    grades: {42: 2}\n",
    )
    assert read_golden(golden).grades == {"001": {"0042": 1, "1.0": 2}, "1": {"42": 2}}
    rankings = write(
        tmp_path,
        "a.jsonl",
        '{"query_id": "001", "ranking": ["0042"]}\n{"query_id": "1", "ranking": ["42"]}\n',
    )
    assert read_rankings(rankings).rankings() == {"001": ["0042"], "1": ["42"]}


def test_unicode_ids(tmp_path) -> None:
    # letters of any script are ids; a no-break space and U+2028 are whitespace: refused by the id
    # rule though trec_eval would keep them inside a field (it splits on ASCII whitespace only)
    qrels = write(tmp_path, "a.qrels", "q\u00e9 0 d\u00fcoc 1\nq\u00e9x 0 \u6587\u4ef6 2\n")
    assert read_qrels(qrels).grades == {"q\u00e9": {"d\u00fcoc": 1}, "q\u00e9x": {"\u6587\u4ef6": 2}}
    assert trec._fast_qrels(qrels, None).grades == trec._slow_qrels(qrels).grades
    run = write(tmp_path, "a.run", "q\u00e9 Q0 \u00e9a 1 1.0 r\nq\u00e9 Q0 \u00e9b 2 1.0 r\n")
    # equal scores: docid descending, bytewise
    assert read_run(run).rankings() == {"q\u00e9": ["\u00e9b", "\u00e9a"]}
    rankings = write(tmp_path, "a.jsonl", '{"query_id": "a\u00e9b", "ranking": ["\u6587"]}\n')
    assert read_rankings(rankings).rankings() == {"a\u00e9b": ["\u6587"]}
    spaced = write(tmp_path, "b.qrels", "q1 0 d1 1\nq\u00a0x 0 \u6587\u2028\u4ef6 2\n")
    with pytest.raises(InvalidQrels) as info:
        read_qrels(spaced)
    assert str(info.value) == (
        f"{spaced}:2: qid: 'q\\xa0x' holds U+00A0 (whitespace) at position 1; "
        "expected an id without whitespace, control or format characters"
    )
    broken = write(tmp_path, "b.jsonl", '{"query_id": "a\u2028b", "ranking": ["d"]}\n')
    with pytest.raises(InvalidRankings) as info:
        read_rankings(broken)
    assert str(info.value) == (
        f"{broken}:1: query_id: 'a\\u2028b' holds U+2028 (whitespace) at position 1; "
        "expected an id without whitespace other than spaces, control or format characters"
    )


def test_byte_order_mark_is_dropped(tmp_path) -> None:
    qrels = write(tmp_path, "a.qrels", b"\xef\xbb\xbfq1 0 d1 1\n# c\n")
    assert read_qrels(qrels).grades == {"q1": {"d1": 1}}
    qrels_fast = write(tmp_path, "b.qrels", b"\xef\xbb\xbfq1 0 d1 1\n")
    assert read_qrels(qrels_fast).grades == {"q1": {"d1": 1}}


def test_fast_and_slow_paths_give_identical_tables(tmp_path) -> None:
    lines = _clean_run_lines(5_000, seed=11)
    lines.append("zzz Q0 d9 1 1e3 bm25\n")
    lines.append("zzz Q0 d8 2 -inf bm25\n")
    lines.append("zzz Q0 d7 3 .5 bm25\n")
    lines.append("zzz Q0 d6 4 +7 bm25\n")
    path = write(tmp_path, "a.run", "".join(lines))
    fast = trec._fast_run(path)
    assert fast is not None
    slow = trec._slow_run(path)
    assert fast.table.schema == slow.table.schema
    assert fast.table.equals(slow.table)
    assert fast.rankings() == slow.rankings()
    assert fast.name == slow.name

    qrels = write(tmp_path, "a.qrels", "".join(f"{i % 50} 0 doc{i} {i % 4 - 1}\n" for i in range(3_000)))
    fast_qrels = trec._fast_qrels(qrels, None)
    assert fast_qrels is not None
    assert fast_qrels.grades == trec._slow_qrels(qrels).grades
    assert list(fast_qrels.grades) == list(trec._slow_qrels(qrels).grades)


@needs_trec_eval
def test_trec_eval_qrels_files() -> None:
    plain = read_qrels(TREC_EVAL / "qrels.test")
    assert plain.n_judgments == 3681
    assert sorted(plain.grades) == ["301", "302", "303"]
    commented = read_qrels(TREC_EVAL / "qrels.comment.test")
    assert commented.grades == plain.grades
    levels = read_qrels(TREC_EVAL / "qrels.rel_level")
    assert levels.n_judgments == 3681
    assert levels.grades["301"]["CR93E-5799"] == 4
    assert plain.grades["301"]["CR93E-5799"] == 1


@needs_trec_eval
def test_trec_eval_run_files() -> None:
    plain = read_run(TREC_EVAL / "results.test")
    assert plain.n_rows == 1500
    assert plain.name == "STANDARD"
    assert plain.table.equals(trec._slow_run(TREC_EVAL / "results.test").table)
    commented = read_run(TREC_EVAL / "results.comment.test")
    assert commented.table.equals(plain.table)
    trunc = read_run(TREC_EVAL / "results.trunc")
    assert trunc.n_rows == 584
    assert trunc.name == "STANDARD"


# ---------------------------------------------------------------- round trips


def test_qrels_round_trip(tmp_path) -> None:
    qrels = Qrels(grades={"001": {"d2": 3, "d1": 0}, "1": {"d\u00e9": -1}, "q3": {}})
    path = tmp_path / "a.qrels"
    write_qrels(qrels, path)
    back = read_qrels(path)
    assert back.grades == {"001": {"d2": 3, "d1": 0}, "1": {"d\u00e9": -1}}
    assert list(back.grades["001"]) == ["d2", "d1"]


def test_golden_round_trip_keeps_metadata(tmp_path) -> None:
    meta = {
        "name": "maize",
        "description": "pests and storage",
        "created": "2024-05-01",
        "judged_by": ["ana", "ben"],
        "shown": "top-10 of bm25",
        "min_grade": 2,
        "grade_scale": {0: "no", 1: "related", 2: "yes"},
        "sampling": {"depth": 10, "runs": ["bm25", "dense"]},
    }
    qrels = Qrels(
        grades={"001": {"1": 2, "d\u00e9": 0}, "q2": {"true": 1, "null": -1}},
        texts={"001": "what eats maize?"},
        meta=meta,
    )
    path = tmp_path / "golden.yaml"
    write_golden(qrels, path)
    back = read_golden(path)
    assert back.grades == qrels.grades
    assert back.texts == qrels.texts
    assert back.meta == meta


def test_golden_default_scale_and_reader_meta(tmp_path) -> None:
    path = write(
        tmp_path,
        "golden.yaml",
        "judged_by: ana\ncreated: 2024-05-01\nqueries:\n  - id: q1\n    grades: null\n",
    )
    golden = read_golden(path)
    assert golden.meta == {"grade_scale": DEFAULT_GRADE_SCALE, "judged_by": ["ana"], "created": "2024-05-01"}
    assert golden.grades == {"q1": {}}
    out = tmp_path / "again.yaml"
    write_golden(golden, out)
    assert read_golden(out).meta == golden.meta


def test_run_round_trip_keeps_trec_order(tmp_path) -> None:
    table = pa.table(
        {
            "q": ["q1", "q1", "q1", "q1", "001", "q1"],
            "d": ["d1", "d2", "d3", "d1", "x", "d4"],
            "s": [1.0, 3.5, 1.0, 0.25, float("inf"), 0.1 + 0.2],
        }
    )
    run = Run(table=table, name="mine")
    path = tmp_path / "a.run"
    write_run(run, path)
    back = read_run(path)
    assert back.name == "mine"
    assert back.rankings() == run.rankings() == {"q1": ["d2", "d3", "d1", "d4", "d1"], "001": ["x"]}
    assert back.ordered_rows() == run.ordered_rows()
    ranks = [line.split()[3] for line in path.read_text().splitlines()]
    assert ranks == ["1", "2", "3", "4", "5", "1"]


def test_rankings_round_trip(tmp_path) -> None:
    run = Run.from_rankings({"001": ["d3", "d1", "d3"], "1": ["\u6587"]}, name="x")
    path = tmp_path / "a.jsonl"
    write_rankings(run, path)
    assert read_rankings(path).rankings() == {"001": ["d3", "d1", "d3"], "1": ["\u6587"]}
    assert read_rankings(path).name == "a"


@pytest.mark.parametrize(
    ("write_file", "value", "message"),
    [
        (
            lambda p: write_qrels(Qrels(grades={"q 1": {"d1": 1}}), p),
            "qid",
            "query id 'q 1' has whitespace; a TREC qrels line cannot hold it: give the queries ids "
            "without whitespace (id: in golden.yaml)",
        ),
        (
            lambda p: write_qrels(Qrels(grades={"#q": {"d1": 1}}), p),
            "qid",
            "'#q' cannot be written as a TREC column; expected a non-empty string without spaces "
            "that does not start with '#'",
        ),
        (
            lambda p: write_run(Run.from_rankings({"q1": ["d\t1"]}), p),
            "docid",
            "document id 'd\\t1' has whitespace; a TREC run line cannot hold it: give the documents ids "
            "without whitespace",
        ),
        (
            lambda p: write_run(Run.from_rankings({"q1": ["d1"]}), p, tag="my run"),
            "tag",
            "run tag 'my run' has whitespace; a TREC run line cannot hold it: give the run a name "
            "without whitespace",
        ),
        (
            lambda p: write_rankings(Run.from_rankings({"q1": [""]}), p),
            "docid",
            "'' cannot be written as a TREC column; expected a non-empty string without spaces",
        ),
    ],
    ids=[
        "qrels qid with space",
        "qrels qid like a comment",
        "run docid with tab",
        "tag with space",
        "rankings empty docid",
    ],
)
def test_writers_refuse_ids_that_would_not_read_back(tmp_path, write_file, value, message) -> None:
    path = tmp_path / "out"
    with pytest.raises(FormatError) as info:
        write_file(path)
    assert str(info.value) == f"{path}: {value}: {message}"
    assert not path.exists(), "nothing half-written"


# ids that keep the id rule: no whitespace (Z*, and the controls str.isspace names: Cc), control
# or format characters (Cc, Cf)
TREC_ID = st.text(
    alphabet=st.characters(codec="utf-8", exclude_categories=("Cc", "Cf", "Cs", "Zs", "Zl", "Zp")),
    min_size=1,
    max_size=6,
).filter(lambda s: not s.startswith("#"))
SCORE = st.floats(allow_nan=False, width=64)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=st.lists(st.tuples(TREC_ID, TREC_ID, SCORE), min_size=1, max_size=30))
def test_write_run_read_run_property(tmp_path, rows) -> None:
    table = pa.table(
        {
            "q": [r[0] for r in rows],
            "d": [r[1] for r in rows],
            "s": pa.array([r[2] for r in rows], pa.float64()),
        }
    )
    run = Run(table=table, name="prop")
    path = tmp_path / "prop.run"
    write_run(run, path)
    back = read_run(path)
    assert back.ordered_rows() == run.ordered_rows()
    assert trec._slow_run(path).ordered_rows() == run.ordered_rows()


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    grades=st.dictionaries(
        TREC_ID, st.dictionaries(TREC_ID, st.integers(-3, 3), min_size=1, max_size=5), min_size=1, max_size=5
    )
)
def test_write_qrels_read_qrels_property(tmp_path, grades) -> None:
    path = tmp_path / "prop.qrels"
    write_qrels(Qrels(grades=grades), path)
    assert read_qrels(path).grades == grades
    assert trec._slow_qrels(path).grades == grades


# ---------------------------------------------------------------- fuzz: only FormatError escapes

VALID_FILES = {
    "qrels": b"# c\nq1 0 d1 1\nq1 0 d2 0\n001 0 d1 -1\n",
    "run": b"q1 Q0 d1 1 2.5 bm25\nq1 Q0 d2 2 1.5 bm25\n001 Q0 d3 1 0.5 bm25\n",
    "run_tab": b"301\tQ0\tFR1\t1\t  2.1\tSTANDARD\n301\tQ0\tFR2\t2\t  1.7\tSTANDARD\n",
    "jsonl": b'{"query_id": "q1", "ranking": ["d1", "d2"]}\n{"query_id": "q2", "ranking": []}\n',
    "golden": GOLDEN_OK.encode("utf-8") + b"sampling: {depth: 10}\njudged_by: [ana]\n",
    "corpus": b'{"id": "d1", "text": "a"}\n{"id": "d2", "text": "b"}\n',
}

FUZZ_TARGETS = [
    ("qrels", "f.qrels", read_qrels),
    ("run", "f.run", read_run),
    ("run_tab", "f.run", read_run),
    ("jsonl", "f.jsonl", read_rankings),
    ("golden", "f.yaml", read_golden),
    ("corpus", "f.jsonl", read_corpus_ids),
    ("corpus", "f.txt", read_corpus_ids),
]

NASTY = st.sampled_from(
    [
        b"\x00",
        b"\xff",
        b"\xef\xbb\xbf",
        b"\r",
        b"\r\n",
        b"\n",
        b"\t",
        b" ",
        b"  ",
        b"\x0b",
        b"\x0c",
        b"#",
        b"0x10",
        b"1_0",
        b"nan",
        b"inf",
        b"-",
        b"+",
        b".",
        b"e",
        b"1e999",
        b"99999999999999999999",
        b"\xc2\xa0",
        b"\xe2\x80\xa8",
        b"\xc2\x85",
        b"&a",
        b"*a",
        b"!!python/object:os.system",
        b"!!int",
        b"[",
        b"{",
        b"}",
        b"]",
        b":",
        b"- ",
        b'"',
        b"'",
        b"\\",
        b"=",
        b"<<",
        b"2024-13-45",
        b"~",
        b"null",
    ]
)


@st.composite
def mutated(draw, original: bytes) -> bytes:
    data = bytearray(original)
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, len(data)))
        action = draw(st.sampled_from(["insert", "delete", "replace"]))
        piece = draw(st.one_of(NASTY, st.binary(min_size=1, max_size=3)))
        if action == "insert":
            data[at:at] = piece
        elif action == "delete":
            del data[at : at + draw(st.integers(1, 4))]
        else:
            data[at : at + len(piece)] = piece
    return bytes(data)


def _outcome(read: Callable[[Path], object], path: Path) -> object:
    try:
        return read(path)
    except FormatError as error:
        return str(error)


@pytest.mark.slow  # fuzz: 200 examples a reader
@pytest.mark.parametrize(("kind", "name", "read"), FUZZ_TARGETS, ids=[f"{t[0]}-{t[1]}" for t in FUZZ_TARGETS])
@settings(max_examples=200, deadline=None)
@given(data=st.binary(max_size=200))
def test_fuzz_arbitrary_bytes(tmp_path_factory, kind, name, read, data) -> None:
    path = tmp_path_factory.mktemp("fuzz") / name
    path.write_bytes(data)
    _outcome(read, path)  # anything but a FormatError fails the test


@pytest.mark.slow  # fuzz: 200 examples a reader
@pytest.mark.parametrize(("kind", "name", "read"), FUZZ_TARGETS, ids=[f"{t[0]}-{t[1]}" for t in FUZZ_TARGETS])
@settings(max_examples=200, deadline=None)
@given(st.data())
def test_fuzz_mutated_valid_files(tmp_path_factory, kind, name, read, data) -> None:
    content = data.draw(mutated(VALID_FILES[kind]))
    path = tmp_path_factory.mktemp("fuzz") / name
    path.write_bytes(content)
    _outcome(read, path)


@pytest.mark.slow  # fuzz: 200 examples a reader
@settings(max_examples=200, deadline=None)
@given(st.data())
def test_fuzz_fast_and_slow_paths_agree(tmp_path_factory, data) -> None:
    """Whatever the columnar reader accepts, the line reader reads the same way."""
    kind = data.draw(st.sampled_from(["run", "run_tab", "qrels"]))
    content = data.draw(mutated(VALID_FILES[kind]))
    path = tmp_path_factory.mktemp("agree") / "f"
    path.write_bytes(content)
    if kind == "qrels":
        fast, slow = trec._fast_qrels(path, None), _outcome(trec._slow_qrels, path)
        if fast is not None:
            assert isinstance(slow, Qrels), slow
            assert fast.grades == slow.grades
            assert [list(d) for d in fast.grades.values()] == [list(d) for d in slow.grades.values()]
        assert _outcome(read_qrels, path) == slow
    else:
        fast, slow = trec._fast_run(path), _outcome(trec._slow_run, path)
        if fast is not None:
            assert isinstance(slow, Run), slow
            assert fast.table.equals(slow.table)
            assert fast.name == slow.name
        outcome = _outcome(read_run, path)
        if isinstance(slow, Run):
            assert isinstance(outcome, Run) and outcome.table.equals(slow.table)
        else:
            assert outcome == slow


@pytest.mark.slow  # fuzz: 200 examples a reader
@settings(max_examples=200, deadline=None)
@given(
    token=st.one_of(
        st.from_regex(r"\A[+-]?(?:[0-9]{0,4}\.?[0-9]{0,4}(?:[eE][+-]?[0-9]{1,3})?|inf|nan|Infinity|0x1)\Z"),
        st.text(alphabet="0123456789+-.eExna_ ", max_size=8),
    )
)
def test_fuzz_score_tokens_fast_equals_slow(tmp_path_factory, token) -> None:
    path = tmp_path_factory.mktemp("score") / "f.run"
    path.write_text(f"q1\tQ0\td1\t1\t{token}\tr\nq1\tQ0\td2\t2\t1.0\tr\n", encoding="utf-8")
    fast = trec._fast_run(path)
    slow = _outcome(trec._slow_run, path)
    if fast is not None:
        assert isinstance(slow, Run), (token, slow)
        assert fast.table.equals(slow.table), token
        assert not math.isnan(fast.table["s"][0].as_py())


GOLDEN_SLOT_VALUES = st.sampled_from(
    [
        "1",
        "0",
        "-1",
        "3",
        "4",
        "0x1",
        "0b11",
        "010",
        "1_0",
        "1:30",
        "1.5",
        ".nan",
        "=",
        "~",
        "null",
        "''",
        "2024-13-45",
        "2024-01-01",
        "!!int abc",
        "!!python/name:os.system ''",
        "&a 1",
        "*a",
        "[1]",
        "{a: 1}",
        "yes",
        '"q1"',
        "001",
        "<<",
        "|\n  text",
        "- x",
        "}",
        "? [a]",
    ]
)

GOLDEN_TEMPLATE = """\
name: {0}
created: {1}
judged_by: [{2}]
min_grade: {3}
grade_scale: {{{4}: a, 1: b, 2: c}}
sampling: {{depth: {5}, since: {6}}}
queries:
  - id: {7}
    text: {8}
    grades: {{{9}: {10}, d2: {11}}}
"""


@pytest.mark.slow  # fuzz: 200 examples a reader
@settings(max_examples=200, deadline=None)
@given(slots=st.lists(GOLDEN_SLOT_VALUES, min_size=12, max_size=12))
def test_fuzz_golden_values_in_every_slot(tmp_path_factory, slots) -> None:
    """YAML 1.1 oddities (0x1, =, bad dates, tags, anchors) in each field: a clean error or a read."""
    path = tmp_path_factory.mktemp("golden") / "g.yaml"
    path.write_text(GOLDEN_TEMPLATE.format(*slots), encoding="utf-8")
    outcome = _outcome(read_golden, path)
    if isinstance(outcome, Qrels):
        assert all(isinstance(g, int) for docs in outcome.grades.values() for g in docs.values())


def test_grades_from_a_table_keep_the_row_by_row_meaning() -> None:
    """``Qrels.grades`` from a table (each run of one query added at once) equals the row-by-row
    dict: a query whose rows lie apart merges, a (q, d) given twice keeps its first place and
    its last grade, in both string types and across chunks (issue #42)."""
    rng = random.Random(7)
    for _ in range(500):
        n = rng.randint(0, 25)
        q = [rng.choice(["a", "b", "é", "a b"]) for _ in range(n)]
        d = [rng.choice(["x", "y", "z"]) for _ in range(n)]
        g = [rng.randint(0, 3) for _ in range(n)]
        want: dict[str, dict[str, int]] = {}
        for qid, doc, grade in zip(q, d, g):
            want.setdefault(qid, {})[doc] = grade
        for kind in (pa.string(), pa.large_string()):
            half = n // 2
            table = pa.table(
                {
                    "q": pa.chunked_array([pa.array(q[:half], kind), pa.array(q[half:], kind)], type=kind),
                    "d": pa.array(d, pa.string()),
                    "g": pa.array(g, pa.int64()),
                }
            )
            got = Qrels(table=table).grades
            assert got == want
            assert [(k, list(v.items())) for k, v in got.items()] == [
                (k, list(v.items())) for k, v in want.items()
            ]


# ---------------------------------------------------------------- the id rule (M3)

_RULE = "expected an id without whitespace, control or format characters"


def test_the_id_rule_is_str_isspace_and_categories_cc_cf() -> None:
    import unicodedata

    from annotation.ids import ID_FORBIDDEN

    wanted = {c for c in range(0x110000) if chr(c).isspace() or unicodedata.category(chr(c)) in ("Cc", "Cf")}
    found = {c for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF and ID_FORBIDDEN.match(chr(c))}
    assert found == wanted
    assert len(found) == 247  # Python 3.11's Unicode 14.0


@pytest.mark.parametrize(
    ("name", "content", "read", "message"),
    [
        (
            "run.jsonl",
            '{"query_id": "qinj 0 m1 3\\nq_faw", "ranking": ["m2"]}\n',
            read_rankings,
            ":1: query_id: 'qinj 0 m1 3\\nq_faw' holds U+000A (whitespace) at position 11; "
            "expected an id without whitespace other than spaces, control or format characters",
        ),
        (
            "run.jsonl",
            '{"query_id": "qtab\\tx", "ranking": ["m2"]}\n',
            read_rankings,
            ":1: query_id: 'qtab\\tx' holds U+0009 (whitespace) at position 4; "
            "expected an id without whitespace other than spaces, control or format characters",
        ),
        (
            "run.jsonl",
            '{"query_id": "q1", "ranking": ["m\\u001b2"]}\n',
            read_rankings,
            f":1: ranking[0]: 'm\\x1b2' holds U+001B (a control character) at position 1; {_RULE}",
        ),
        (
            "run.trec",
            "q1 Q0 d1 1 2.0 r\nq\x1bx Q0 m\x1b2 1 1.0 r\n",
            read_run,
            f":2: qid: 'q\\x1bx' holds U+001B (a control character) at position 1; {_RULE}",
        ),
        (
            "run.trec",
            "q1 Q0 d\u202e1 1 2.0 r\n",
            read_run,
            f":1: docid: 'd\\u202e1' holds U+202E (a format character) at position 1; {_RULE}",
        ),
        (
            "run.trec",
            "q1 Q0 d1 1 2.0 r\x7f\n",
            read_run,
            f":1: tag: 'r\\x7f' holds U+007F (a control character) at position 1; {_RULE}",
        ),
        (
            "a.qrels",
            "q1 0 d1 1\nq2 0 d\u200b2 1\n",
            read_qrels,
            f":2: docid: 'd\\u200b2' holds U+200B (a format character) at position 1; {_RULE}",
        ),
        (
            "corpus.jsonl",
            '{"id": "c\\u202e\\u001b", "text": "x"}\n',
            read_corpus,
            f":1: id: 'c\\u202e\\x1b' holds U+202E (a format character) at position 1; {_RULE}",
        ),
        (
            "queries.tsv",
            "q1\tok\nq\x1by\ttext\n",
            read_queries,
            f":2: id: 'q\\x1by' holds U+001B (a control character) at position 1; {_RULE}",
        ),
        (
            "traces.jsonl",
            '{"id": "t1", "query_id": "tq sp", "system": "s", "question": "q?", "contexts": ["c"], '
            '"answer": "a"}\n',
            read_traces,
            f":1: query_id: 'tq sp' holds U+0020 (whitespace) at position 2; {_RULE}",
        ),
        (
            "traces.jsonl",
            '{"id": "t\\u2028x", "query_id": "q", "system": "s", "question": "q?", "contexts": ["c"], '
            '"answer": "a"}\n',
            read_traces,
            f":1: id: 't\\u2028x' holds U+2028 (whitespace) at position 1; {_RULE}",
        ),
        (
            "ids.txt",
            "d1\nd\x1b2\n",
            read_corpus_ids,
            f":2: id: 'd\\x1b2' holds U+001B (a control character) at position 1; {_RULE}",
        ),
    ],
    ids=[
        "rankings line break",
        "rankings tab",
        "rankings ESC docid",
        "trec run ESC",
        "trec run bidi",
        "trec run DEL tag",
        "qrels zero-width space",
        "corpus bidi",
        "queries tsv ESC",
        "traces space",
        "traces line separator",
        "corpus ids ESC",
    ],
)
def test_every_reader_refuses_ids_that_break_the_rule(tmp_path, name, content, read, message) -> None:
    path = write(tmp_path, name, content)
    with pytest.raises(FormatError) as info:
        read(path)
    assert str(info.value) == f"{path}{message}"


def test_the_columnar_readers_leave_a_bad_id_to_the_line_reader(tmp_path) -> None:
    lines = _clean_run_lines(5_000, seed=3)
    clean = write(tmp_path, "clean.run", "".join(lines))
    assert trec._fast_run(clean) is not None  # the lean path takes the clean file
    lines[4_321] = "q\x1b9 Q0 d1 1 1.0 bm25\n"
    bad = write(tmp_path, "bad.run", "".join(lines))
    assert trec._fast_run(bad) is None
    with pytest.raises(InvalidRun) as info:
        read_run(bad)
    assert str(info.value) == (
        f"{bad}:4322: qid: 'q\\x1b9' holds U+001B (a control character) at position 1; {_RULE}"
    )
    tabbed = write(tmp_path, "tab.qrels", "q1\t0\td1\t1\nq2\t0\td\u00a02\t1\n")
    assert trec._fast_qrels(tabbed, None) is None
    with pytest.raises(InvalidQrels, match="docid: 'd\\\\xa02' holds U\\+00A0 \\(whitespace\\)"):
        read_qrels(tabbed)
