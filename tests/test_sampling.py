"""The sampling design for estimating what the labels missed (issue #8): stratified random
samples of unjudged candidates beyond the pool, inclusion probabilities recorded, blind."""

from __future__ import annotations

import pytest

from annotation.exchange import export_labels
from annotation.formats import Qrels, Run, read_golden
from annotation.pooling import item_view, next_item, pool, sample_unjudged, sampling_design
from annotation.store import Store, StoreError
from tests.conftest import cli


@pytest.fixture
def store(tmp_path):
    s = Store(tmp_path / "s.db")
    # one query, two runs of 30 chunks; c0-c2 judged
    s.import_queries({"q": "how to dry maize"})
    s.import_corpus([{"id": f"c{i}", "text": f"chunk {i}"} for i in range(40)])
    s.import_run(Run.from_rankings({"q": [f"c{i}" for i in range(30)]}), name="a")
    s.import_run(Run.from_rankings({"q": [f"c{i}" for i in range(29, -1, -1)]}), name="b")
    s.import_labels(Qrels(grades={"q": {"c0": 2, "c1": 0, "c2": 1}}), annotator="old")
    yield s
    s.close()


def test_strata_sizes_inclusion_and_no_judged_chunk(store) -> None:
    # best rank over the two runs: c_i is at rank i+1 in a and 30-i in b -> best = min(i+1, 30-i)
    report = sample_unjudged(store, depth=3, n=6, strata=(8, 15), seed=1)
    rows = store.db.execute(
        "SELECT chunk_id, stratum, stratum_size, stratum_sampled, inclusion FROM estimate_samples ORDER BY chunk_id"
    ).fetchall()
    sizes = {stratum: size for _, stratum, size, _, _ in rows}
    # best ranks 4-8: c3..c7 and c22..c26 -> 10; 9-15: c8..c14 and c15..c21 -> 14; c27-c29 are in b's top 3
    assert sizes == {"4-8": 10, "9-15": 14}
    assert report["sampled"] == 6 and report["strata"] == {"4-8": 3, "9-15": 3}  # 6 x 10/24 = 2.5 -> 3, 3
    assert all(abs(incl - k / size) < 1e-12 for _, _, size, k, incl in rows)
    assert not {c for c, *_ in rows} & {"c0", "c1", "c2", "c27", "c28", "c29"}  # never judged or pooled
    again = Store(store.path)
    try:  # a second draw would mix two designs (each stratum's size from one draw only): refused
        with pytest.raises(StoreError, match="already holds an estimate sample .6 chunks drawn"):
            sample_unjudged(again, depth=3, n=2, strata=(8, 15), seed=1)
        assert len(again.db.execute("SELECT chunk_id FROM estimate_samples").fetchall()) == 6
    finally:
        again.close()


def test_a_refused_estimate_writes_nothing(demo_db, capsys) -> None:
    """`pool --estimate` checks the estimate before it pools: a refusal leaves the store as it was."""
    from annotation.__main__ import main as annotation_main

    db = demo_db
    with Store(db) as s:
        before = s.counts()
    for args, message in (
        (
            ["--estimate", "6", "--annotators", "ann,bob", "--strata", "5,50"],
            "each bound must exceed the pool depth 12",
        ),
        (["--estimate", "6", "--strata", "50"], "give --annotators"),
        (["--strata", "50"], "--strata and --corpus-stratum go with --estimate N"),
    ):
        assert annotation_main(["pool", "--db", str(db), "--depth", "12", *args]) == 2
        err = capsys.readouterr().err
        assert message in err and err.count("\n") == 1
        with Store(db) as s:
            assert s.counts() == before
    estimate = ["--estimate", "3", "--corpus-stratum", "--annotators", "ann"]
    assert cli(annotation_main, capsys, "pool", "--db", db, "--depth", "10", *estimate)[0] == 0
    with Store(db) as s:
        after = s.counts()
    code, _, err = cli(annotation_main, capsys, "pool", "--db", db, "--depth", "12", *estimate)
    assert code == 2 and "already holds an estimate sample (12 chunks drawn" in err
    with Store(db) as s:
        assert s.counts() == after


def test_sampled_items_are_blind_in_the_queue(store) -> None:
    pool(store, 3)
    sample_unjudged(store, depth=3, n=4, strata=(30,), seed=2)
    seen = set()
    while (item := next_item(store, "ann")) is not None:
        assert set(item) == {"item_id", "query", "chunk"}  # the same view as any pooled item
        seen.add(item["item_id"])
        store.add_label(item["item_id"], "ann", 0)
    sampled = {i for (i,) in store.db.execute("SELECT item_id FROM estimate_samples")}
    assert sampled <= seen and item_view(store, min(sampled), "ann")["query"] == "how to dry maize"


def test_the_design_travels_in_golden_yaml(store, tmp_path) -> None:
    sample_unjudged(store, depth=3, n=4, strata=(30,), seed=3)
    for (item_id,) in store.db.execute("SELECT item_id FROM estimate_samples").fetchall():
        store.add_label(item_id, "old", 1)
    out = tmp_path / "golden.yaml"
    export_labels(store, "golden", out, annotator="old")
    golden = read_golden(out)
    design = golden.meta["sampling"]
    assert design == sampling_design(store)
    assert design["design"]["depth"] == 3 and design["queries"]["q"]["4-30"]["size"] == 24
    assert len(design["queries"]["q"]["4-30"]["sampled"]) == 4


def test_bad_designs_are_refused(store) -> None:
    with pytest.raises(StoreError, match="each bound must exceed the pool depth 10"):
        sample_unjudged(store, depth=10, n=3, strata=(5,))
    with pytest.raises(StoreError, match="expected at least 1"):
        sample_unjudged(store, depth=3, n=0)
    pool(store, 3, annotators=["ann", "bob"])
    with pytest.raises(StoreError, match="give --annotators"):
        sample_unjudged(store, depth=3, n=3)


def test_export_warns_of_pooled_chunks_without_a_label(demo_db, tmp_path) -> None:
    """An estimate from a file that leaves pooled chunks unlabelled counts them neither judged
    nor sampled: the export says how many."""
    db = demo_db
    with Store(db) as s:
        sample_unjudged(s, 10, 3, corpus=True, annotators=["ann"])
        message = export_labels(s, "golden", tmp_path / "g.yaml")
        sampled_queries = {q for (q,) in s.db.execute("SELECT DISTINCT query_id FROM estimate_samples")}
        labelled = s.export_qrels(None, "median").grades
        drawn = set(s.db.execute("SELECT query_id, chunk_id FROM estimate_samples").fetchall())
        unlabelled = sum(
            1
            for q, c in s.db.execute("SELECT query_id, chunk_id FROM items WHERE kind = 'chunk'")
            if q in sampled_queries and c not in labelled.get(q, {}) and (q, c) not in drawn
        )
    assert unlabelled > 0
    assert f"warning: {unlabelled} pooled chunks of the sampled queries have no label in it" in message
