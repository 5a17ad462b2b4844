"""Issue #40, item 3, "provenance travels": golden.yaml says how its labels were made (the pools,
their runs, depth and a fingerprint of what each run gave them; the other sources; pool's one-run
warning), and ``check`` and ``audit`` read it: labels pooled only from the run under test make
``stage1_recall`` not evaluated, saying so."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from annotation.exchange import export_labels
from annotation.formats.by_extension import read_ranked
from annotation.formats.golden import read_golden
from annotation.model import InvalidGolden
from annotation.pooling import one_run_warning, pool, sample_unjudged
from annotation.provenance import Provenance, run_fingerprint
from annotation.store import Store
from annotation.views import next_item
from calibration.__main__ import main
from calibration.provenance import pooled_from_this_run, top_fingerprint
from tests.conftest import cli

QUERIES = ("q1", "q2", "q3")
DEPTH = 10


def ranking(qid: str, swap: bool = False) -> list[str]:
    """15 chunks of ``qid``: q1-c00 first; ``swap`` trades q1's 3rd and 12th (one change in the top 10)."""
    docs = [f"{qid}-c{i:02d}" for i in range(15)]
    if swap and qid == "q1":
        docs[2], docs[11] = docs[11], docs[2]
    return docs


def write_run(path: Path, tag: str, swap: bool = False, reverse: bool = False) -> Path:
    """A TREC run of the three queries (``reverse``: each ranking backwards, another system)."""
    lines = []
    for qid in QUERIES:
        docs = ranking(qid, swap)
        for rank, doc in enumerate(reversed(docs) if reverse else docs, start=1):
            lines.append(f"{qid} Q0 {doc} {rank} {100 - rank} {tag}")
    path.write_text("\n".join(lines) + "\n")
    return path


def grade(chunk: str) -> int:
    """Chunks 0-2 of a query perfectly relevant, 3-4 related, the rest irrelevant."""
    i = int(chunk.rsplit("c", 1)[1])
    return 3 if i < 3 else (1 if i < 5 else 0)


def label_all(store: Store) -> int:
    n = 0
    while (item := next_item(store, "ann")) is not None:
        query_id, chunk_id = store.item_keys(item["item_id"])[1:3]
        store.add_label(item["item_id"], "ann", grade(chunk_id))
        n += 1
    return n


@pytest.fixture
def bm25(tmp_path) -> Path:
    return write_run(tmp_path / "bm25.run", "bm25")


def pooled_store(tmp_path: Path, runs: dict[str, Path], name: str = "s.db") -> Store:
    store = Store(tmp_path / name)
    store.import_queries({qid: f"query {qid}" for qid in QUERIES})
    store.import_corpus([{"id": doc, "text": f"text of {doc}"} for qid in QUERIES for doc in ranking(qid)])
    for run_name, path in runs.items():
        store.import_run(read_ranked(path), name=run_name)
    pool(store, DEPTH)
    return store


def export(store: Store, path: Path) -> tuple[Path, str]:
    return path, export_labels(store, "golden", path)


def stage1(report: dict) -> dict:
    return next(r for r in report["rules"] if r["rule"] == "stage1_recall")


def check_json(capsys, golden: Path, run: Path, *more: str) -> dict:
    code, out, err = cli(
        main, capsys, "check", str(golden), str(run), "-k", "5", "--no-store", "--format", "json", *more
    )
    assert code in (0, 1), (code, err)
    return json.loads(out)


# the top 10 of each query, as pooled: what the fingerprint names
BM25_TOPS = {qid: ranking(qid)[:DEPTH] for qid in QUERIES}
BM25_FINGERPRINT = "sha256:ed89ed213a0879bc"
CLAIM = (
    "circular: the labels were pooled from this run's top 10 (golden.yaml's provenance: every label "
    f"from the pool of run bm25, whose fingerprint {BM25_FINGERPRINT} this run has)"
)


def test_the_fingerprint_is_of_what_was_pooled(bm25, tmp_path) -> None:
    assert run_fingerprint(BM25_TOPS) == BM25_FINGERPRINT
    # the same content whatever the file's name, order inside the top 10 or form (read whole or in pieces)
    renamed = write_run(tmp_path / "other-name.txt", "x")
    assert top_fingerprint(renamed, DEPTH) == top_fingerprint(read_ranked(bm25), DEPTH) == BM25_FINGERPRINT
    reordered = {qid: list(reversed(docs)) for qid, docs in BM25_TOPS.items()}
    assert run_fingerprint(reordered) == BM25_FINGERPRINT
    swapped = write_run(tmp_path / "swapped.run", "bm25", swap=True)
    assert top_fingerprint(swapped, DEPTH) != BM25_FINGERPRINT
    assert top_fingerprint(bm25, 9) != BM25_FINGERPRINT  # another depth, another pool


def test_a_one_run_pool_is_recorded_and_checks_as_circular(bm25, tmp_path, capsys) -> None:
    with pooled_store(tmp_path, {"bm25": bm25}) as store:
        assert label_all(store) == 30
        golden, summary = export(store, tmp_path / "golden.yaml")
    warning = one_run_warning(["bm25"])
    assert summary.endswith(f"; warning: {warning} (said in its provenance)")
    text = golden.read_text()
    assert (
        "provenance:\n"
        "  pools:\n"
        "  - batch: pool-d10-bm25\n"
        "    runs:\n"
        "    - bm25\n"
        "    depth: 10\n"
        "    items: 30\n"
        "    labelled: 30\n"
        "    fingerprints:\n"
        f"      bm25: {BM25_FINGERPRINT}\n"
        "  other: []\n"
        "  warning: 'the pool holds one run (bm25): recall against these labels is recall against\n"
        "    what that run itself found; pool several systems (import another run, or python\n"
        "    -m annotation baseline for BM25)'\n"
        "queries:\n"
    ) in text
    qrels = read_golden(golden)
    assert qrels.meta["provenance"] == {
        "pools": [
            {
                "batch": "pool-d10-bm25",
                "runs": ["bm25"],
                "depth": 10,
                "items": 30,
                "labelled": 30,
                "fingerprints": {"bm25": BM25_FINGERPRINT},
            }
        ],
        "other": [],
        "warning": warning,
    }
    assert isinstance(qrels.provenance, Provenance) and qrels.provenance.one_run_pool() is not None
    assert pooled_from_this_run(qrels, bm25) == CLAIM

    # check: the claim first, then the evidence (every judged chunk lies in the run's top 15)
    report = check_json(capsys, golden, bm25)
    rule = stage1(report)
    assert (rule["status"], rule["passed"]) == ("not evaluated", False)
    assert rule["reason"] == (
        f"{CLAIM}; every judged chunk of 3 of 3 queries is in this run's stage 1 (its top 15), so "
        "stage-1 recall is 1 by construction (as when the labels were pooled from this run): label chunks "
        "other systems find (pool several runs, or pool --estimate)"
    )
    code, table, _ = cli(main, capsys, "check", str(golden), str(bm25), "-k", "5", "--no-store")
    assert code == 1 and "golden.yaml's provenance" in table
    assert report["provenance"] == CLAIM
    # each circular query's finding quotes the provenance as its reason (#40, item 3)
    for qid in QUERIES:
        assert (
            f"  {qid}: [stage1_circular] every judged chunk of this query is in the run's stage 1: "
            f"stage-1 recall is 1 by construction; {CLAIM}, and cannot show what the fetch misses"
        ) in table

    # a stage 1 shallower than the pool is evidence by the labels alone, but not by their provenance
    report = check_json(capsys, golden, bm25, "--fetch-depth", "6")
    rule = stage1(report)
    assert rule["status"] == "not evaluated" and rule["reason"] == (
        f"{CLAIM}: label chunks other systems find (pool several runs, or pool --estimate)"
    )

    # the audit says the same, in its JSON and its table
    code, out, _ = cli(main, capsys, "audit", str(golden), str(bm25), "-k", "5", "--format", "json")
    assert code == 0 and json.loads(out)["provenance"] == CLAIM
    code, out, _ = cli(main, capsys, "audit", str(golden), str(bm25), "-k", "5")
    assert f"stage-1 recall is {CLAIM}\n" in out

    # another run (one ranking changed in its top 10): the provenance claims nothing of it
    swapped = write_run(tmp_path / "swapped.run", "bm25", swap=True)
    assert pooled_from_this_run(qrels, swapped) is None
    rule = stage1(check_json(capsys, golden, swapped))
    assert rule["reason"].startswith("circular: every judged chunk of 3 of 3 queries")
    assert "provenance" not in rule["reason"]
    code, table, _ = cli(main, capsys, "check", str(golden), str(swapped), "-k", "5", "--no-store")
    assert "stage-1 recall is 1 by construction (as when the labels were pooled from this run's top)" in table
    assert "golden.yaml's provenance" not in table
    code, out, _ = cli(main, capsys, "audit", str(golden), str(swapped), "-k", "5", "--format", "json")
    assert "provenance" not in json.loads(out)


def test_a_golden_file_without_provenance_checks_as_before(bm25, tmp_path, capsys) -> None:
    with pooled_store(tmp_path, {"bm25": bm25}) as store:
        label_all(store)
        golden, _ = export(store, tmp_path / "golden.yaml")
    lines = golden.read_text().splitlines(keepends=True)
    start = lines.index("provenance:\n")
    end = lines.index("queries:\n")
    bare = tmp_path / "bare.yaml"
    bare.write_text("".join(lines[:start] + lines[end:]))
    assert read_golden(bare).provenance is None and "provenance" not in read_golden(bare).meta
    with_it, without = check_json(capsys, golden, bm25), check_json(capsys, bare, bm25)
    assert stage1(without)["reason"].startswith("circular: every judged chunk of 3 of 3 queries")
    # everything else is the same report (the one with it carries the claim its findings quote)
    assert with_it.pop("provenance") == CLAIM and "provenance" not in without
    for report in (with_it, without):
        report["rules"] = [r for r in report["rules"] if r["rule"] != "stage1_recall"]
    assert with_it == without


def test_two_runs_pooled_claim_nothing_and_warn_nothing(bm25, tmp_path, capsys) -> None:
    dense = write_run(tmp_path / "dense.run", "dense", reverse=True)
    with pooled_store(tmp_path, {"bm25": bm25, "dense": dense}) as store:
        assert label_all(store) == 45  # top 10 of each: 5 chunks of each query in both
        golden, summary = export(store, tmp_path / "golden.yaml")
    assert "warning" not in summary
    provenance = read_golden(golden).meta["provenance"]
    assert provenance == {
        "pools": [
            {
                "batch": "pool-d10-bm25+dense",
                "runs": ["bm25", "dense"],
                "depth": 10,
                "items": 45,
                "labelled": 45,
                "fingerprints": {
                    "bm25": BM25_FINGERPRINT,
                    "dense": run_fingerprint({qid: ranking(qid)[5:] for qid in QUERIES}),
                },
            }
        ],
        "other": [],
    }
    assert pooled_from_this_run(read_golden(golden), bm25) is None
    assert "provenance" not in stage1(check_json(capsys, golden, bm25)).get("reason", "")


def test_other_sources_are_named_and_claim_nothing(bm25, tmp_path) -> None:
    """An estimate sample beyond the pool: named with its count; the labels are no longer all
    the pool's, so the provenance says nothing of the run (the one-run warning stays)."""
    with pooled_store(tmp_path, {"bm25": bm25}) as store:
        sample_unjudged(store, depth=DEPTH, n=2, strata=(15,), seed=1)
        assert label_all(store) == 36
        golden, _ = export(store, tmp_path / "golden.yaml")
    qrels = read_golden(golden)
    assert qrels.meta["provenance"]["other"] == [{"batch": "estimate sample", "items": 6, "labelled": 6}]
    assert qrels.meta["provenance"]["warning"] == one_run_warning(["bm25"])
    assert pooled_from_this_run(qrels, bm25) is None


MALFORMED = [
    (
        "  pools:\n  - runs: [bm25]\n    depth: ten\n    items: 3\n",
        6,
        "provenance.pools[0].depth: expected a whole number, got 'ten'",
    ),
    (
        "  pools:\n  - runs: [bm25]\n    items: 3\n",
        5,
        "provenance.pools[0].depth: missing; expected runs, depth, items",
    ),
    ("  pool: []\n", 4, "provenance.pool: unknown key; expected pools, other, warning, guidelines"),
    (
        "  other:\n  - batch: imported\n    items: -1\n",
        6,
        "provenance.other[0].items: expected a whole number >= 0, got -1",
    ),
    (
        "  pools: 3\n",
        4,
        "provenance.pools: expected a list of {batch, runs, depth, items, labelled, fingerprints}",
    ),
    (
        "  guidelines:\n  - version: 1\n",
        5,
        "provenance.guidelines[0].labels: missing; expected labels",
    ),
    (
        "  guidelines:\n  - {version: two, labels: 3}\n",
        5,
        "provenance.guidelines[0].version: expected a whole number, got 'two'",
    ),
]


@pytest.mark.parametrize(("section", "line", "message"), MALFORMED)
def test_a_malformed_provenance_is_a_named_error(bm25, tmp_path, capsys, section, line, message) -> None:
    golden = tmp_path / "bad.yaml"
    golden.write_text(
        "name: bad\nmin_grade: 1\nprovenance:\n" + section + "queries:\n- id: q1\n  grades: {q1-c00: 3}\n"
    )
    with pytest.raises(InvalidGolden) as caught:
        read_golden(golden)
    assert str(caught.value) == f"{golden}:{line}: {message}"
    code, out, err = cli(main, capsys, "check", str(golden), str(bm25), "-k", "5", "--no-store")
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and message in err
