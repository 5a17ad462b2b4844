"""Hostile input, issue #17 (the readers' and the numeric options' part): each case that gave a
traceback, an exit 1, or a memory or time bomb from a small input, now refused the way DESIGN.md
principle 7 asks (exit 2, nothing on stdout, one line on stderr naming file, line and field, the
database byte for byte as it was), within the limits the README lists.

Big inputs are made here under ``tmp_path``: sparse files (``truncate``) for sizes, small limits
set through the environment for rows and lengths; nothing big is committed.
"""

from __future__ import annotations

import csv
import itertools
import json
import random
import tracemalloc
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from annotation.__main__ import main as annotation_main
from annotation.formats.by_extension import read_judgments, read_ranked
from annotation.formats.golden import read_golden
from annotation.formats.records import read_corpus
from annotation.formats.textio import DEFAULT_LIMITS, LimitSetting, limits
from annotation.model import FormatError, InvalidGolden
from annotation.trace_sources import InvalidTraceSource, read_trace_source
from calibration.__main__ import main as calibration_main
from calibration.stats.agreement import MAX_PAIRS, agreement_report, from_long, krippendorff_alpha
from tests.conftest import EXAMPLE, cli, timed
from tests.test_hostile import Bad, assert_untouched, one_error_line, snapshot

GOOD_QRELS = EXAMPLE / "truth.qrels"
GOOD_RUN = EXAMPLE / "run.jsonl"
GIB = 1 << 30


@pytest.fixture(scope="module")
def demo_template(tmp_path_factory) -> Path:
    from denominator.demo import build_demo
    from tests.test_hostile import checkpoint

    db = tmp_path_factory.mktemp("demo17") / "demo.db"
    build_demo(str(db))
    checkpoint(db)
    return db


@pytest.fixture
def demo_db(demo_template, tmp_path) -> Path:
    db = tmp_path / "demo.db"
    db.write_bytes(demo_template.read_bytes())
    return db


def refused(main, capsys, argv: list, case: Bad, path: Path, db: Path | None = None) -> str:
    """Run a command that must refuse: exit 2, no stdout, one error line; the store untouched."""
    before = snapshot(db) if db is not None else None
    code, out, err = cli(main, capsys, *argv)
    assert (code, out) == (2, ""), err
    if db is not None:
        assert_untouched(db, before)
    return one_error_line(err, case, path)


def import_labels(db: Path, path: Path) -> list:
    return ["import", "--db", db, "--labels", path, "--annotator", "mallory"]


# --------------------------------------------------------------------------- golden.yaml sampling

GOLDEN_HEAD = "queries:\n  - id: q_milk\n    text: milk\n    grades: {d1: 1}\nsampling:\n"
SAMPLING_CASES = [
    # (what, the section's body, line, field, a piece of the message); each was a traceback at import
    (
        "a date",
        "  drawn: 2024-01-01\n  queries: {}\n",
        6,
        "sampling.drawn",
        "2024-01-01 (YAML type timestamp); expected text, a finite number",
    ),
    (
        "a number key beside a text key",
        "  1: x\n  b: y\n",
        6,
        "sampling",
        "the key 1 is not text (YAML type int); expected text keys",
    ),
    ("a date in a list", "  log: [2024-01-01T10:00:00]\n", 6, "sampling.log[0]", "(YAML type timestamp)"),
    (
        "a key true",
        "  design:\n    true: 1\n",
        7,
        "sampling.design",
        "the key true is not text (YAML type bool)",
    ),
    (
        "NaN",
        "  design:\n    rate: .nan\n",
        7,
        "sampling.design.rate",
        ".nan (YAML type float); expected text, a finite number",
    ),
]


@pytest.mark.parametrize(
    ("what", "body", "line", "field", "says"), SAMPLING_CASES, ids=[c[0] for c in SAMPLING_CASES]
)
def test_a_sampling_section_json_cannot_hold_is_refused(
    what, body, line, field, says, tmp_path, demo_db, capsys
) -> None:
    path = tmp_path / "golden.yaml"
    path.write_text(GOLDEN_HEAD + body, encoding="utf-8")
    case = Bad("", "labels", line, field, says)
    refused(annotation_main, capsys, import_labels(demo_db, path), case, path, demo_db)
    refused(calibration_main, capsys, ["metrics", path, GOOD_RUN], case, path)
    with pytest.raises(InvalidGolden) as info:
        read_golden(path)
    assert (info.value.line, info.value.field) == (line, field)


def test_a_sampling_date_through_the_data_page(tmp_path, demo_db, monkeypatch) -> None:
    """The Data page showed a full traceback; now the reader's message, nothing imported."""
    from denominator.ui.data import import_uploads

    monkeypatch.setenv("DENOMINATOR_DB", str(demo_db))
    before = snapshot(demo_db)
    data = (GOLDEN_HEAD + SAMPLING_CASES[0][1]).encode()
    with pytest.raises(FormatError) as info:
        import_uploads({"labels": ("golden.yaml", data)}, name="x", annotator="mallory")
    assert_untouched(demo_db, before)
    assert str(info.value).startswith("golden.yaml:6: sampling.drawn: ")


def test_a_quoted_date_and_plain_values_are_still_read(tmp_path) -> None:
    path = tmp_path / "golden.yaml"
    path.write_text(
        GOLDEN_HEAD + "  drawn: '2024-01-01'\n  note: [1, 2.5, true, null, text]\n  queries: {}\n",
        encoding="utf-8",
    )
    assert read_golden(path).meta["sampling"]["drawn"] == "2024-01-01"


# --------------------------------------------------------------------------- deep trace exports


@pytest.mark.parametrize("source", ["openinference", "langfuse", "langsmith"])
@pytest.mark.parametrize(("name", "depth"), [("deep.json", 990), ("deep.jsonl", 990), ("d.json", 129)])
def test_deeply_nested_trace_exports_are_refused(source, name, depth, tmp_path, demo_db, capsys) -> None:
    """~990 levels gave a RecursionError (exit 1); 128 levels is what the readers take."""
    path = tmp_path / name
    path.write_text("[" * depth + "]" * depth + "\n", encoding="utf-8")
    case = Bad("", "traces", 1 if name.endswith("l") else None, None, "nested more than 128 levels deep")
    argv = ["import", "--db", demo_db, "--traces", path, "--from", source]
    refused(annotation_main, capsys, argv, case, path, demo_db)


def test_nesting_within_the_limit_reaches_the_reader(tmp_path) -> None:
    path = tmp_path / "ok.json"
    path.write_text('{"data": [' * 60 + "]}" * 60, encoding="utf-8")
    with pytest.raises(InvalidTraceSource) as info:
        read_trace_source(path, "langfuse")
    assert "nested" not in str(info.value)


# --------------------------------------------------------------------------- sizes and rows


def sparse(path: Path, size: int) -> Path:
    """A file of ``size`` bytes that takes no disk and no time to make (NUL bytes, read as zeros)."""
    with open(path, "wb") as handle:
        handle.truncate(size)
    return path


LIMITED = [
    # (file name, argv before the path, after it, the message's line)
    ("big.jsonl", ["import", "--corpus"], []),
    ("big.tsv", ["import", "--queries"], []),
    ("big.qrels", ["import", "--labels"], ["--annotator", "mallory"]),
    ("big.yaml", ["import", "--labels"], ["--annotator", "mallory"]),
    ("traces.jsonl", ["import", "--traces"], []),
    ("spans.json", ["import", "--traces"], ["--from", "openinference"]),
    ("spans.parquet", ["import", "--traces"], ["--from", "openinference"]),
]


@pytest.mark.parametrize(("name", "before", "after"), LIMITED, ids=[c[0] for c in LIMITED])
def test_a_file_over_the_size_limit_is_refused_before_it_is_read(
    name, before, after, tmp_path, demo_db, capsys
) -> None:
    """A 1.5 GB file was read whole (1.8 GB RSS) before its first byte was judged; now its size
    alone refuses it (a sparse file: reading it would take seconds and the memory)."""
    path = sparse(tmp_path / name, DEFAULT_LIMITS.file_bytes + 1)
    case = Bad("", "corpus", None, None, "2,147,483,649 bytes (2.0 GiB); the readers take files of at most")
    argv = [before[0], "--db", demo_db, *before[1:], path, *after]
    tracemalloc.start()
    try:
        line = refused(annotation_main, capsys, argv, case, path, demo_db)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert "DENOMINATOR_MAX_FILE_BYTES" in line
    assert peak < 64 << 20, peak


def test_the_agree_csv_is_size_limited_too(tmp_path, capsys) -> None:
    path = sparse(tmp_path / "labels.csv", DEFAULT_LIMITS.file_bytes + 1)
    refused(calibration_main, capsys, ["agree", path], Bad("", "agree", None, None, "(2.0 GiB)"), path)


@pytest.mark.wall_clock
def test_run_files_are_exempt_and_a_nul_byte_is_refused_at_its_block(tmp_path, capsys) -> None:
    """Run files (metrics, audit) have no size limit; a file of NUL bytes is refused at the first
    block read, not after reading 2 GiB (was: 1.8 GB RSS and 3-11 s for a 1.5 GB file)."""
    for name in ("nul.run", "nul.jsonl"):
        path = sparse(tmp_path / name, DEFAULT_LIMITS.file_bytes + 1)
        tracemalloc.start()
        try:
            with timed() as took, pytest.raises(FormatError) as info:
                read_ranked(path)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert str(info.value) == f"{path}:1: NUL byte: this looks like a binary file; expected UTF-8 text"
        assert peak < 64 << 20, peak
        took.within(10, "a NUL byte found in a 1 GiB file")
    code, out, err = cli(calibration_main, capsys, "metrics", GOOD_QRELS, tmp_path / "nul.run")
    assert (code, out) == (2, "") and "NUL byte" in err, err


def test_a_nul_byte_in_a_1_gib_file_is_refused_at_its_block(tmp_path, monkeypatch) -> None:
    """Under a raised size limit, the NUL check streams: refused at the block that holds it."""
    monkeypatch.setenv("DENOMINATOR_MAX_FILE_BYTES", str(4 * GIB))
    path = tmp_path / "late-nul.qrels"
    with open(path, "wb") as handle:
        handle.write(b"q1 0 d1 1\n" * 3)
        handle.truncate(GIB)
    tracemalloc.start()
    try:
        with pytest.raises(FormatError) as info:
            read_judgments(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert str(info.value).startswith(f"{path}:4: NUL byte")
    assert peak < 64 << 20, peak


def write_corpus_line(path: Path, text_bytes: int) -> None:
    path.write_text(json.dumps({"id": "c1", "text": "a" * text_bytes}) + "\n", encoding="utf-8")


def test_a_chunk_text_over_1_mib_is_refused(tmp_path, demo_db, capsys) -> None:
    """A 1 GB chunk text took 4.2 GB RSS, then 'string or blob too big' (a traceback, exit 1)."""
    path = tmp_path / "corpus.jsonl"
    write_corpus_line(path, DEFAULT_LIMITS.text_bytes)  # exactly the limit: taken
    assert read_corpus(path)[0]["text"] == "a" * (1 << 20)
    write_corpus_line(path, DEFAULT_LIMITS.text_bytes + 1)
    case = Bad("", "corpus", 1, "text", "1,048,577 bytes (1.0 MiB) of text; at most 1,048,576 bytes (1 MiB)")
    line = refused(
        annotation_main, capsys, ["import", "--db", demo_db, "--corpus", path], case, path, demo_db
    )
    assert "DENOMINATOR_MAX_TEXT_BYTES" in line


def test_a_line_over_the_line_limit_is_refused_before_it_is_held(
    tmp_path, demo_db, capsys, monkeypatch
) -> None:
    """The 1 GB chunk text, at a small scale: a JSON line longer than the line limit is refused by
    the scan, before any line is read (the default, 64 MiB, keeps a 1 GB line out)."""
    monkeypatch.setenv("DENOMINATOR_MAX_LINE_BYTES", "1000")
    path = tmp_path / "corpus.jsonl"
    path.write_text('{"id": "c0", "text": "fine"}\n' + json.dumps({"id": "c1", "text": "a" * 2000}) + "\n")
    case = Bad("", "corpus", 2, None, "a line of more than 1,000 bytes")
    refused(annotation_main, capsys, ["import", "--db", demo_db, "--corpus", path], case, path, demo_db)


def test_the_line_limit_at_its_default_bounds_memory(tmp_path) -> None:
    """A line just over the default limit (64 MiB): refused having held a block, not the line."""
    path = tmp_path / "corpus.jsonl"
    with open(path, "wb") as handle:
        handle.write(b'{"id": "c1", "text": "' + b"a" * (DEFAULT_LIMITS.line_bytes + 10) + b'"}\n')
    tracemalloc.start()
    try:
        with pytest.raises(FormatError) as info:
            read_corpus(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert "a line of more than 67,108,864 bytes (64 MiB)" in str(info.value)
    assert peak < 48 << 20, peak


@pytest.mark.parametrize(
    ("name", "record", "field"),
    [
        ("queries.jsonl", {"id": "q1", "text": "T"}, "text"),
        (
            "traces.jsonl",
            {"id": "t1", "query_id": "q1", "system": "s", "question": "T", "contexts": ["c"], "answer": "a"},
            "question",
        ),
        (
            "traces.jsonl",
            {"id": "t1", "query_id": "q1", "system": "s", "question": "q", "contexts": ["c"], "answer": "T"},
            "answer",
        ),
        (
            "traces.jsonl",
            {"id": "t1", "query_id": "q1", "system": "s", "question": "q", "contexts": ["T"], "answer": "a"},
            "contexts[0]",
        ),
    ],
)
def test_other_texts_over_the_text_limit(name, record, field, tmp_path, demo_db, capsys, monkeypatch) -> None:
    monkeypatch.setenv("DENOMINATOR_MAX_TEXT_BYTES", "100")
    path = tmp_path / name
    text = json.dumps(record).replace('"T"', json.dumps("é" * 51))  # 102 bytes in UTF-8, 51 characters
    path.write_text(text + "\n", encoding="utf-8")
    flag = "--queries" if name.startswith("queries") else "--traces"
    case = Bad("", "x", 1, field, "102 bytes of text; at most 100 bytes a text")
    refused(annotation_main, capsys, ["import", "--db", demo_db, flag, path], case, path, demo_db)


def test_a_chunk_text_of_a_trace_export_over_the_text_limit(tmp_path, monkeypatch) -> None:
    source = Path(__file__).parent / "data" / "formats" / "openinference-phoenix-df.jsonl"
    long_text = "Paris is the capital and largest city of France." * 3  # 144 bytes
    path = tmp_path / "spans.jsonl"
    path.write_text(
        source.read_text(encoding="utf-8").replace(
            "Paris is the capital and largest city of France.", long_text
        ),
        encoding="utf-8",
    )
    assert read_trace_source(path, "openinference").chunks
    monkeypatch.setenv("DENOMINATOR_MAX_TEXT_BYTES", "100")
    with pytest.raises(InvalidTraceSource, match="144 bytes of text; at most 100 bytes a text") as info:
        read_trace_source(path, "openinference")
    assert info.value.line == 2


def dictionary_parquet(path: Path, rows: int) -> Path:
    """``rows`` rows of one dictionary-encoded column: a few KB on disk."""
    indices = pa.array(np.zeros(rows, dtype=np.int32))
    pq.write_table(pa.table({"name": pa.DictionaryArray.from_arrays(indices, pa.array(["span"]))}), path)
    return path


@pytest.mark.wall_clock
def test_a_parquet_file_over_the_row_limit_is_refused_from_its_metadata(tmp_path, demo_db, capsys) -> None:
    """20M dictionary-encoded rows in a small file took 2 GB RSS (8 GB and 115 s here); the
    metadata's row count refuses it before a row is read."""
    path = dictionary_parquet(tmp_path / "rows.parquet", DEFAULT_LIMITS.rows + 1)
    assert path.stat().st_size < 100_000
    case = Bad(
        "", "traces", None, None, "1,000,001 rows (its metadata says); the readers take at most 1,000,000"
    )
    argv = ["import", "--db", demo_db, "--traces", path, "--from", "langsmith"]
    with timed() as took:
        line = refused(annotation_main, capsys, argv, case, path, demo_db)
    took.within(5, "a parquet file over the row limit refused")
    assert "DENOMINATOR_MAX_ROWS" in line


def test_the_row_limit_is_configurable(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("DENOMINATOR_MAX_ROWS", "10")
    path = dictionary_parquet(tmp_path / "rows.parquet", 11)
    with pytest.raises(InvalidTraceSource, match="11 rows .* at most 10 "):
        read_trace_source(path, "openinference")


def test_a_parquet_file_that_expands_past_the_size_limit(tmp_path, monkeypatch) -> None:
    """Under the row limit, a dictionary can still repeat one big value in every row (1,000 rows
    of a 4 MB value: 197 KB on disk, 4.4 GB RSS before); a compressed page can hide its size."""
    monkeypatch.setenv("DENOMINATOR_MAX_FILE_BYTES", str(10 << 20))
    path = tmp_path / "expands.parquet"
    values = pa.DictionaryArray.from_arrays(
        pa.array(np.zeros(100, dtype=np.int32)), pa.array(["x" * (1 << 20)])
    )
    pq.write_table(pa.table({"name": values}), path)
    with pytest.raises(
        InvalidTraceSource, match="104,857,600 bytes of text once its dictionaries are expanded"
    ):
        read_trace_source(path, "openinference")
    pq.write_table(pa.table({"name": ["x" * (20 << 20)]}), path, compression="zstd", use_dictionary=False)
    assert path.stat().st_size < 100_000
    with pytest.raises(
        InvalidTraceSource, match=r"bytes uncompressed \(its metadata says\); the readers take at most"
    ):
        read_trace_source(path, "openinference")


@pytest.mark.parametrize("value", ["0", "-1", "1e6", "lots", "99999999999999999999", "1_000"])
def test_a_bad_limit_setting_is_one_line(value, tmp_path, demo_db, capsys, monkeypatch) -> None:
    monkeypatch.setenv("DENOMINATOR_MAX_TEXT_BYTES", value)
    with pytest.raises(LimitSetting):
        limits()
    path = tmp_path / "corpus.jsonl"
    write_corpus_line(path, 10)
    case = Bad("", "x", None, None, "expected a whole number >= 1 (default 1048576)")
    refused(
        annotation_main,
        capsys,
        ["import", "--db", demo_db, "--corpus", path],
        case,
        "DENOMINATOR_MAX_TEXT_BYTES",
        demo_db,
    )


def test_the_streaming_checks_keep_the_old_messages(tmp_path) -> None:
    """Bytes cut by the block boundary, CR at a block's end: the same refusals and lines as the
    whole-file check (the block is made small to put the boundary where it hurts)."""
    from annotation.formats import textio

    cases = [
        (
            b"".join(b'{"id": "c%d", "text": "caf\xc3\xa9"}\n' % n for n in range(3)),
            None,
        ),  # a 2-byte character: fine
        (b'{"id": "c1", "text": "t"}\n{"id": "c2", "text": "caf\xe9"}\n', ":2: byte 0xe9 is not UTF-8"),
        (b'{"id": "c1", "text": "t"}\r{"id": "c2", "text": "t"}\n', ":1: carriage return inside a line"),
        (b'{"id": "c1", "text": "t"}\r\n{"id": "c2", "text": "t"}\r', ":2: carriage return inside a line"),
        (b'{"id": "c1", "text": "t"}\n\n \n{"id": "c2", "text": "t\x00"}\n', ":4: NUL byte"),
        (b"\xef\xbb\xbf" + b'{"id": "c1", "text": "t"}\n', None),  # a UTF-8 BOM: dropped
        (b"\xff\xfe{\x00", ":1: starts with the UTF-16 byte order mark"),
        (b" \n\n", ": file is empty"),
    ]
    for block in (1, 2, 3, 5, 7, 4 << 20):
        textio._BLOCK = block
        try:
            for number, (data, says) in enumerate(cases):
                path = tmp_path / f"c{number}.jsonl"
                path.write_bytes(data)
                if says is None:
                    assert read_corpus(path)
                    continue
                with pytest.raises(FormatError) as info:
                    read_corpus(path)
                assert str(info.value).startswith(f"{path}{says}"), (block, data, str(info.value))
        finally:
            textio._BLOCK = 4 << 20


# --------------------------------------------------------------------------- numeric options


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (
            ["--depth", "99999999999999999999"],
            "argument --depth: expected a positive integer of at most 9223372036854775807",
        ),
        (["--depth", "0"], "argument --depth: expected a positive integer, got '0'"),
        (["--depth", "\u0663"], "argument --depth: expected a positive integer, got '\u0663'"),
        (
            ["--depth", "5", "--overlap", "nan"],
            "argument --overlap: expected a number between 0 and 1, got 'nan'",
        ),
        (["--depth", "5", "--overlap", "inf"], "argument --overlap: expected a number between 0 and 1"),
        (
            ["--depth", "5", "--seed", "99999999999999999999"],
            "argument --seed: expected an integer of at most",
        ),
    ],
)
def test_pool_numbers_are_bounded(argv, says, demo_db, capsys) -> None:
    """--depth 99999999999999999999 was an OverflowError from SQLite (a traceback, exit 1)."""
    before = snapshot(demo_db)
    code, out, err = cli(annotation_main, capsys, "pool", "--db", demo_db, *argv)
    assert (code, out) == (2, ""), err
    assert err.startswith(f"error: python -m annotation pool: {says}") and err.count("\n") == 1, err
    assert_untouched(demo_db, before)


def test_the_largest_pool_depth_works(demo_db, capsys) -> None:
    code, out, err = cli(annotation_main, capsys, "pool", "--db", demo_db, "--depth", str(2**63 - 1))
    assert code == 0, err
    assert f"pool of depth {2**63 - 1}" in out


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (
            ["agree", "x.csv", "--bootstrap", "99999999999999999999"],
            "--bootstrap and --seed are gone from agree",
        ),
        (
            ["compare", GOOD_QRELS, GOOD_RUN, GOOD_RUN, "--seed", "-1"],
            "argument --seed: expected a seed, an integer >= 0",
        ),
        (
            ["compare", GOOD_QRELS, GOOD_RUN, GOOD_RUN, "--permutations", "1" + "0" * 20],
            "expected an integer from 1 to 1,000,000 (random sign flips)",  # #38: was 2^63 - 1
        ),
        (
            ["metrics", GOOD_QRELS, GOOD_RUN, "-k", "9" * 30],
            "argument -k: expected a positive integer of at most",
        ),
        (
            ["metrics", GOOD_QRELS, GOOD_RUN, "--min-grade", "9" * 30],
            "argument --min-grade: expected an integer >= 0 of at most",
        ),
        (["ppi", "a.csv", "b.csv", "--lam", "nan"], "argument --lam: expected a finite number, got 'nan'"),
        (
            ["ppi", "a.csv", "b.csv", "--alpha", "inf"],
            "argument --alpha: expected a finite number, got 'inf'",
        ),
        (["review", "--seed", "-5"], "argument --seed: expected a seed, an integer >= 0"),
    ],
)
def test_calibration_numbers_are_bounded(argv, says, capsys) -> None:
    code, out, err = cli(calibration_main, capsys, *argv)
    assert (code, out) == (2, ""), err
    assert err.startswith("error: ") and err.count("\n") == 1 and says in err, err


# --------------------------------------------------------------------------- agree at scale


def many_raters(raters: int, items: int, seed: int = 1) -> list[tuple[str, str, int]]:
    rng = random.Random(seed)
    return [(f"i{i}", f"r{r:04d}", rng.randint(0, 3)) for r in range(raters) for i in range(items)]


@pytest.mark.wall_clock
def test_agree_with_1000_raters_finishes_in_seconds(tmp_path, capsys) -> None:
    """1,000 raters x 3 items did not finish in 60 s (499,500 pairs, each its kappas and intervals);
    now the 200 pairs with the most items in common are listed, and a line says so."""
    path = tmp_path / "labels.csv"
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["item", "rater", "label"])
        writer.writerows(many_raters(1000, 3))
    with timed() as took:
        code, out, err = cli(calibration_main, capsys, "agree", path, "--format", "json")
    assert code == 0, err
    report = json.loads(out)
    assert len(report["pairs"]) == MAX_PAIRS == 200 and report["pairs_possible"] == 499_500
    assert report["pairs_note"].startswith(
        "499,500 of the 499,500 pairs of raters rated items in common; the 200"
    )
    assert report["krippendorff_alpha"]["nominal"] is not None and report["fleiss_kappa"] is not None
    took.within(20, "agree, 1,000 raters")


def test_the_table_says_when_the_pairs_were_cut() -> None:
    """The text table carries the same line as the JSON's pairs_note (30 raters: 435 pairs)."""
    from calibration.commands_text import agree_table

    report = agreement_report(many_raters(30, 2), trusted=0.6)
    assert report["pairs_possible"] == 435 and len(report["pairs"]) == 200
    assert report["pairs_note"] in agree_table(report).splitlines()
    assert (
        agreement_report(many_raters(8, 2), trusted=0.6)["pairs_note"] is None
    )  # 28 pairs: all listed, no line


def test_listed_pairs_are_those_with_most_items_in_common() -> None:
    rows = many_raters(30, 2)  # 435 pairs, each sharing 2 items
    rows += [(f"x{i}", r, 1) for i in range(3) for r in ("r0003", "r0017")]  # the pair 3-17 shares 5
    report = from_long(rows, max_pairs=10)
    assert report["pairs"][0]["raters"] == ["r0003", "r0017"]
    assert [p["raters"] for p in report["pairs"][1:4]] == [
        ["r0000", "r0001"],
        ["r0000", "r0002"],
        ["r0000", "r0003"],
    ]
    assert report["pairs_possible"] == 435 and len(report["pairs"]) == 10


@pytest.mark.parametrize("seed", range(6))
def test_the_listed_pairs_equal_a_count_of_every_pair(seed) -> None:
    """Sparse random ratings (each rater some of 40 items): the pairs listed are the first
    ``max_pairs`` of every pair sorted by items in common (most first), then rater order, and
    the note counts every pair that shares an item: counted here pair by pair, in Python."""
    rng = random.Random(seed)
    raters = [f"r{r:03d}" for r in range(60)]
    rows = [(f"i{i}", r, rng.randint(0, 3)) for r in raters for i in rng.sample(range(40), rng.randint(1, 9))]
    items_of: dict[str, set] = {}
    for item, rater, _ in rows:
        items_of.setdefault(rater, set()).add(item)
    counted = sorted(
        ((-len(items_of[a] & items_of[b]), a, b) for a, b in itertools.combinations(raters, 2)),
    )
    sharing = [c for c in counted if c[0] < 0]
    report = from_long(rows, max_pairs=25)
    assert [p["raters"] for p in report["pairs"]] == [[a, b] for _, a, b in sharing[:25]]
    assert report["pairs_note"].startswith(f"{len(sharing):,} of the 1,770 pairs of raters")


@pytest.mark.parametrize("seed", range(4))
def test_the_small_table_shortcuts_give_the_loops_report(seed, monkeypatch) -> None:
    """A table of at most 4,000,000 cells finds its pairs by one matrix product, puts its rows in
    order and looks for a rating given twice by its cells (#42); with the bounds at 0 the sorts and
    the rater-by-rater loop run instead: the same report, pairs, note and figures."""
    from calibration.stats import agreement, multirater

    rng = random.Random(seed)
    raters = [f"r{r:03d}" for r in range(rng.randint(20, 40))]
    rows = [
        (f"i{i}", r, rng.randint(0, 3)) for r in raters for i in rng.sample(range(30), rng.randint(1, 12))
    ]
    rng.shuffle(rows)
    shortcut = agreement_report(rows, trusted=0.6, max_pairs=40)
    monkeypatch.setattr(agreement, "_DENSE_CELLS", 0)
    monkeypatch.setattr(multirater, "_COUNTED_CELLS", 0)
    assert agreement_report(rows, trusted=0.6, max_pairs=40) == shortcut


def test_agree_memory_is_linear_in_the_ratings(tmp_path) -> None:
    """6,000 raters x 3 items (18 million pairs of raters, each sharing 3 items): 2.25 GB peak
    before (a table of every overlapping pair); under 300 MB now, as the whole command."""
    import subprocess
    import sys

    path = tmp_path / "labels.csv"
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["item", "rater", "label"])
        writer.writerows(many_raters(6000, 3))
    # a fresh process whose one child is the command: its peak is that child's
    script = (
        "import resource, subprocess, sys; "
        f"done = subprocess.run([sys.executable, '-m', 'calibration', 'agree', {str(path)!r}, '--format', 'json']); "
        "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, file=sys.stderr); sys.exit(done.returncode)"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-500:]
    peak_mb = int(done.stderr.strip().splitlines()[-1]) / 1024
    report = json.loads(done.stdout)
    assert report["pairs_possible"] == 17_997_000 and len(report["pairs"]) == 200
    print(f"agree, 6,000 raters x 3 items: peak RSS {peak_mb:.0f} MB (bound 300)")
    assert peak_mb < 300, peak_mb


def test_below_the_cap_every_pair_is_listed_as_before() -> None:
    rows = [(i, r, g) for i, r, g in many_raters(8, 6) if not (r == "r0001" and i != "i0")]
    rows = [(i, r, g) for i, r, g in rows if not (r == "r0002" and i == "i0")]  # r1 and r2 share nothing
    report = agreement_report(rows, trusted=0.6)
    assert [p["raters"] for p in report["pairs"]] == [
        list(p) for p in itertools.combinations(sorted({r for _i, r, _g in rows}), 2)
    ]
    assert report["pairs_note"] is None and report["pairs_possible"] == 28
    lonely = next(p for p in report["pairs"] if p["raters"] == ["r0001", "r0002"])
    assert lonely["n"] == 0 and lonely["kappa"] is None


@pytest.mark.parametrize("level", ["nominal", "ordinal", "interval"])
def test_krippendorff_from_counts_equals_the_matrix_bit_for_bit(level) -> None:
    """The long form no longer builds a raters x items matrix; the alpha is the same float."""
    import krippendorff

    rng = random.Random(7)
    rows = [
        (f"i{i}", f"r{r}", rng.choice([0, 1, 2, 3, 5]))
        for r in range(9)
        for i in range(50)
        if rng.random() < 0.6
    ]
    raters = sorted({r for _i, r, _g in rows}, key=lambda r: int(r[1:]))
    items = list(dict.fromkeys(i for i, _r, _g in rows))
    cell = {(i, r): g for i, r, g in rows}
    matrix = np.array([[cell.get((i, r), np.nan) for i in items] for r in raters], dtype=float)
    expected = float(krippendorff.alpha(reliability_data=matrix, level_of_measurement=level))
    assert krippendorff_alpha(rows, level, form="long")["alpha"] == expected
    assert agreement_report(rows, trusted=0.6)["krippendorff_alpha"][level] == expected


@pytest.mark.wall_clock
def test_krippendorff_and_fleiss_are_linear_in_ratings() -> None:
    """20,000 raters x 20,000 items, two ratings an item: the matrix would hold 400M cells."""
    rng = random.Random(3)
    rows = []
    for item in range(20_000):
        first = rng.randrange(20_000)
        rows += [
            (f"i{item}", f"r{first}", rng.randint(0, 3)),
            (f"i{item}", f"r{(first + 1) % 20_000}", rng.randint(0, 3)),
        ]
    with timed() as took:
        report = agreement_report(rows, trusted=0.6)
    assert report["fleiss_kappa"] is not None and report["krippendorff_alpha"]["interval"] is not None
    assert len(report["pairs"]) == 200 and "rated items in common" in report["pairs_note"]
    took.within(20, "agreement of 20,000 raters")
