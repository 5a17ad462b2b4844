"""Issue #30's two store commands, on the worked example: ``pool --holes FILE`` queues a hole sample's
(query, chunk) pairs as items to label (blind, never twice, the missing ones counted), and
``export --format qrels --judge NAME[@VERSION]`` writes one judge version's grades as TREC qrels
(failed calls left out and counted)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from annotation import actions
from annotation.__main__ import main
from annotation.formats.golden import read_golden
from annotation.formats.trec import read_qrels
from annotation.store import Store, StoreError, aggregate_grades
from annotation.views import next_item
from calibration.__main__ import main as calibration_main
from denominator.cli import main as denominator_main
from tests.conftest import EXAMPLE, cli

RELEVANCE_JUDGE = "offline-lexical/relevance"


# ---------------------------------------------------------------- pool --holes


@pytest.fixture
def sample(tmp_path, capsys) -> Path:
    """The hole sample of the worked example's run at k = 5: 2 of its 4 queries, seed 1."""
    path = tmp_path / "holes.yaml"
    argv = [
        "holes",
        EXAMPLE / "golden.yaml",
        EXAMPLE / "run.jsonl",
        "-k",
        "5",
        "--sample",
        "2",
        "--seed",
        "1",
    ]
    assert cli(calibration_main, capsys, *argv, "--out", path)[0] == 0
    return path


def sample_pairs(path: Path) -> set[tuple[str, str]]:
    sampling = read_golden(path).sampling
    assert sampling is not None
    return {(q, c) for q, strata in sampling.queries.items() for s in strata for c in s.sampled}


def imported(tmp_path: Path, capsys, without: tuple[str, ...] = ()) -> Path:
    """A store with the worked example's corpus (less the chunks ``without``) and its queries,
    imported by the import command."""
    db, corpus, queries = tmp_path / "s.db", tmp_path / "corpus.jsonl", tmp_path / "queries.jsonl"
    lines = (EXAMPLE / "corpus.jsonl").read_text(encoding="utf-8").splitlines()
    corpus.write_text(
        "".join(line + "\n" for line in lines if json.loads(line)["id"] not in without), encoding="utf-8"
    )
    texts = read_golden(EXAMPLE / "golden.yaml").texts
    queries.write_text("".join(json.dumps({"id": q, "text": t}) + "\n" for q, t in texts.items()), "utf-8")
    assert cli(main, capsys, "import", "--db", db, "--corpus", corpus, "--queries", queries)[0] == 0
    return db


def chunk_items(db: Path) -> set[tuple[str, str]]:
    with Store(db) as store:
        return {(q, c) for _, q, c in store.chunk_items()}


def test_the_sample_is_the_worked_examples_holes(sample) -> None:
    assert sample_pairs(sample) == {
        ("q_faw", "x3"),
        ("q_faw", "p1"),
        ("q_faw", "d2"),
        ("q_milk", "s2"),
        ("q_milk", "x1"),
        ("q_milk", "x3"),
    }


def test_pool_holes_queues_exactly_the_samples_pairs_once(sample, tmp_path, capsys) -> None:
    db = imported(tmp_path, capsys)
    code, out, err = cli(main, capsys, "pool", "--db", db, "--holes", sample, "--annotators", "ann,bob")
    assert (code, err) == (0, f"database: {db}\n")
    assert out == (
        f"hole sample {sample} (the holes of {EXAMPLE / 'run.jsonl'}'s top 5 in 2 of 4 queries, seed 1): "
        "6 (query, chunk) pairs over 2 queries; 0 of 6 not in the store, skipped; of the 6 in the store, "
        "0 already judged, 6 new items, 0 already items (kept, not added again); 7 assignments to "
        "2 annotators, 1 of 6 items given to two of them\n"
    )
    assert chunk_items(db) == sample_pairs(sample)
    with Store(db) as store:  # every item in a queue; the queue shows the query and the chunk, nothing else
        ann, bob = (
            store.queue_progress(store.annotator_id("ann"), "chunk"),
            store.queue_progress(store.annotator_id("bob"), "chunk"),
        )
        assert ann[1] + bob[1] == 7 and ann[0] == bob[0] == 0
        view = next_item(store, "ann")
        assert view is not None and set(view) == {"item_id", "query", "chunk"}

    code, out, _ = cli(main, capsys, "pool", "--db", db, "--holes", sample, "--annotators", "ann,bob")
    assert code == 0 and "0 new items, 6 already items (kept, not added again); 0 assignments" in out
    assert chunk_items(db) == sample_pairs(sample)  # a second run adds none
    with Store(db) as store:
        assert len(store.chunk_items()) == 6


def test_pairs_not_in_the_store_are_skipped_and_counted(sample, tmp_path, capsys) -> None:
    db = imported(tmp_path, capsys, without=("x3",))  # x3 is a hole of both sampled queries
    code, out, err = cli(main, capsys, "pool", "--db", db, "--holes", sample, "--annotators", "ann")
    assert code == 0 and "Traceback" not in err
    assert (
        "6 (query, chunk) pairs over 2 queries; 2 of 6 not in the store, skipped (q_faw/x3 (chunk not in "
        "the store), q_milk/x3 (chunk not in the store); import the corpus and queries first); of the 4 in "
        "the store, 0 already judged, 4 new items, 0 already items" in out
    )
    assert chunk_items(db) == sample_pairs(sample) - {("q_faw", "x3"), ("q_milk", "x3")}


def test_a_judged_pair_is_not_asked_again(sample, tmp_path, capsys) -> None:
    db = imported(tmp_path, capsys)
    labels = tmp_path / "one.qrels"
    labels.write_text("q_milk 0 s2 1\n", encoding="utf-8")
    assert cli(main, capsys, "import", "--db", db, "--labels", labels, "--annotator", "cat")[0] == 0
    code, out, _ = cli(main, capsys, "pool", "--db", db, "--holes", sample, "--annotators", "ann")
    assert code == 0 and "of the 6 in the store, 1 already judged, 5 new items, 0 already items" in out
    assert chunk_items(db) == sample_pairs(sample)  # the judged pair's item came with its label


def test_the_action_is_what_the_command_does(sample, tmp_path, capsys) -> None:
    db = imported(tmp_path, capsys)
    with Store(db) as store:
        report = actions.pool(store, holes=sample, annotators=["ann"])
        assert (report["pairs"], report["missing"], report["items_added"], report["assignments"]) == (
            6,
            0,
            6,
            6,
        )
        assert report["design"]["kind"] == "holes" and report["design"]["k"] == 5
        with pytest.raises(StoreError, match="no depth, runs or estimate"):
            actions.pool(store, 5, holes=sample)  # type: ignore[call-overload]


def test_holes_without_people_is_refused_in_one_line(sample, tmp_path, capsys) -> None:
    """#43: without --annotators the sample's 6 holes went into every open queue (a labeller of
    the demo saw 23 items); now the command asks for the people, in one line, and writes nothing."""
    db = imported(tmp_path, capsys)
    code, out, err = cli(main, capsys, "pool", "--db", db, "--holes", sample)
    assert (code, out) == (2, "")
    assert err == (
        "error: --holes FILE needs the people who label the sample: name them with --annotators X,Y "
        "(without them its holes would go into every open queue)\n"
    )
    assert chunk_items(db) == set()


@pytest.mark.parametrize("not_holes", ["golden.yaml", "sampled.yaml"])
def test_a_file_that_is_no_hole_sample_is_one_line(not_holes, tmp_path, capsys) -> None:
    db = imported(tmp_path, capsys)
    code, out, err = cli(
        main, capsys, "pool", "--db", db, "--holes", EXAMPLE / not_holes, "--annotators", "ann"
    )
    assert (code, out) == (2, "")
    (line,) = [line for line in err.splitlines() if line.startswith("error:")]
    assert "is not a hole sample (its sampling section has no design with kind: holes)" in line
    assert chunk_items(db) == set()


@pytest.mark.parametrize(
    "extra, named",
    [
        (["--depth", "5"], "--depth"),
        (["--runs", "retriever"], "--runs"),
        (["--estimate", "3"], "--estimate"),
        (["--depth", "5", "--corpus-stratum"], "--depth, --corpus-stratum"),
    ],
)
def test_holes_goes_without_the_pool_of_runs_options(extra, named, sample, tmp_path, capsys) -> None:
    db = imported(tmp_path, capsys)
    code, out, err = cli(main, capsys, "pool", "--db", db, "--holes", sample, *extra)
    assert (code, out) == (2, "")
    assert (
        err
        == f"error: --holes FILE pools the hole sample's own (query, chunk) pairs: it goes without {named}\n"
    )
    assert chunk_items(db) == set()


# ---------------------------------------------------------------- export --judge NAME[@VERSION]


@pytest.fixture(scope="module")
def judged(tmp_path_factory) -> tuple[Path, dict[str, str]]:
    """The demo (the offline judge's version 1 graded every chunk item) and a version 2 of the same
    judge name, registered with other settings: it grades 30 items, fails on 8 (an error, no
    value), and fails once then answers on 2 more. Returns the database and the fingerprints."""
    db = tmp_path_factory.mktemp("judged") / "demo.db"
    assert denominator_main(["demo", "--db", str(db)]) == 0
    with Store(db) as store:
        (v1,) = [j for j in store.judges() if j["name"] == RELEVANCE_JUDGE]
        v2 = "f" * 64
        identity = store.register_judge(v2, {**v1["settings"], "C": 0.5}, name=RELEVANCE_JUDGE)
        assert identity["version"] == 2
        items = sorted(i for i, _, _ in store.chunk_items())
        old = {row["item_id"]: row["value"] for row in store.judge_values(v1["fingerprint"])}
        rows: list[dict] = [
            {"item_id": i, "fingerprint": v2, "repeat": 0, "value": (old[i] + 1) % 4} for i in items[:30]
        ]
        rows += [
            {"item_id": i, "fingerprint": v2, "repeat": 0, "error": "HTTP 500: the endpoint failed"}
            for i in items[30:]
        ]
        rows += [{"item_id": i, "fingerprint": v2, "repeat": 0, "value": 2} for i in items[38:]]
        store.add_judge_labels(rows)
    return db, {"v1": v1["fingerprint"], "v2": v2}


def stored_grades(db: Path, fingerprint: str) -> dict[str, dict[str, int]]:
    """The judge's stored values, per (query, chunk), read from the store directly."""
    with Store(db) as store:
        pairs = {i: (q, c) for i, q, c in store.chunk_items()}
        values: dict[tuple[str, str], list[int]] = {}
        for row in store.judge_values(fingerprint):
            values.setdefault(pairs[row["item_id"]], []).append(row["value"])
    out: dict[str, dict[str, int]] = {}
    for (q, c), vals in values.items():
        out.setdefault(q, {})[c] = aggregate_grades(vals, "median")
    return out


def export(capsys, db: Path, out: Path, *extra) -> tuple[int, str, str]:
    return cli(main, capsys, "export", "--db", db, "--format", "qrels", *extra, "-o", out)


def test_a_judge_versions_qrels_are_its_stored_grades(judged, tmp_path, capsys) -> None:
    db, fps = judged
    out = tmp_path / "v1.qrels"
    code, said, _ = export(capsys, db, out, "--judge", f"{RELEVANCE_JUDGE}@1")
    assert code == 0
    assert said == (
        f"wrote 40 judgments over 4 queries to {out}: the grades of judge {RELEVANCE_JUDGE} v1 "
        f"(fingerprint {fps['v1'][:12]}, lexical, logistic), repeats by median\n"
    )
    assert read_qrels(out).grades == stored_grades(db, fps["v1"])
    for other in (f"{RELEVANCE_JUDGE}@v1", fps["v1"][:8]):  # the same version by another way of naming it
        again = tmp_path / "again.qrels"
        assert export(capsys, db, again, "--judge", other)[0] == 0
        assert again.read_bytes() == out.read_bytes()


def test_the_newest_version_without_one_and_failed_calls_counted(judged, tmp_path, capsys) -> None:
    db, fps = judged
    out = tmp_path / "newest.qrels"
    code, said, _ = export(capsys, db, out, "--judge", RELEVANCE_JUDGE)
    assert code == 0
    assert said == (
        f"wrote 32 judgments over 4 queries to {out}: the grades of judge {RELEVANCE_JUDGE} v2 "
        f"(fingerprint {fps['v2'][:12]}, lexical, logistic), repeats by median; 10 of its 42 calls failed "
        "(an error, no value): left out, not grades; 8 of the 40 (query, chunk) pairs it was asked about "
        "have no grade (every call on them failed)\n"
    )
    grades = read_qrels(out).grades
    assert grades == stored_grades(db, fps["v2"])
    assert sum(len(g) for g in grades.values()) == 32
    with Store(db) as store:  # the pairs left out are those whose every call failed
        items = sorted(store.chunk_items())
    assert all(c not in grades.get(q, {}) for _, q, c in items[30:38])
    assert all(grades[q][c] == 2 for _, q, c in items[38:])


def test_an_unknown_version_or_name_is_one_line_naming_what_exists(judged, tmp_path, capsys) -> None:
    db, _ = judged
    out = tmp_path / "x.qrels"
    assert export(capsys, db, out, "--judge", f"{RELEVANCE_JUDGE}@3") == (
        2,
        "",
        f"error: judge '{RELEVANCE_JUDGE}' has no version '3'; its versions: 1, 2 (without @VERSION: the newest, 2)\n",
    )
    assert export(capsys, db, out, "--judge", "gpt-9/relevance") == (
        2,
        "",
        "error: judge 'gpt-9/relevance': no such judge (a name, NAME@VERSION or a fingerprint); judges stored: "
        f"offline-lexical/faithfulness (version 1); {RELEVANCE_JUDGE} (versions 1, 2)\n",
    )
    code, _, err = export(capsys, db, out, "--judge", "offline-lexical/faithfulness")
    assert code == 2 and err.endswith(
        "(offline-lexical/faithfulness v1) grades faithfulness, not relevance\n"
    )
    code, _, err = export(capsys, db, out, "--judge", RELEVANCE_JUDGE, "--annotator", "ann")
    assert (
        code == 2
        and err == "error: give a judge or an annotator, not both: a qrels file holds one source's grades\n"
    )
    assert not out.exists()


def test_phoenix_keeps_its_fingerprint_and_takes_a_name(judged, tmp_path, capsys) -> None:
    db, fps = judged
    by_fp, by_name = tmp_path / "fp.jsonl", tmp_path / "name.jsonl"
    base = ["export", "--db", db, "--format", "phoenix"]
    assert cli(main, capsys, *base, "--judge", fps["v1"][:10], "-o", by_fp)[0] == 0
    assert cli(main, capsys, *base, "--judge", f"{RELEVANCE_JUDGE}@1", "-o", by_name)[0] == 0
    assert by_fp.read_bytes() == by_name.read_bytes() and by_fp.stat().st_size > 0


def test_without_a_judge_the_qrels_are_peoples(judged, tmp_path, capsys) -> None:
    db, _ = judged
    out = tmp_path / "people.qrels"
    code, said, _ = export(capsys, db, out)
    assert code == 0 and said.startswith("wrote ") and "the grades of judge" not in said
    with Store(db) as store:
        assert read_qrels(out).grades == store.export_qrels().grades
