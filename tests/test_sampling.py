"""The sampling design for estimating what the labels missed (issue #8): stratified random
samples of unjudged candidates beyond the pool, inclusion probabilities recorded, blind."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from annotation.exchange import export_labels
from annotation.formats.golden import read_golden, write_golden
from annotation.model import InvalidGolden, Qrels, Run, SamplingDesign, Stratum
from annotation.pooling import pool, sample_unjudged, sampling_design
from annotation.store import Store, StoreError
from annotation.views import item_view, next_item
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
        (["--strata", "50,100,1000"], "--strata and --corpus-stratum go with --estimate N"),
        (["--estimate", "6", "--strata", "50,x"], "'50,x': expected comma-separated ranks, e.g. 50,100,1000"),
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
    # the same design, typed: what the estimate reads
    typed = golden.sampling
    assert typed.to_dict() == sampling_design(store)
    ((stratum,),) = typed.queries.values()
    assert (typed.depth, typed.corpus, stratum.name, stratum.size, len(stratum.sampled)) == (
        3,
        False,
        "4-30",
        24,
        4,
    )


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


SAMPLED = Path(__file__).resolve().parents[1] / "examples" / "worked-example" / "sampled.yaml"


def test_the_sampling_section_is_a_typed_design(tmp_path) -> None:
    """golden.yaml's sampling section is read once into a SamplingDesign (meta keeps its plain
    values), and the writer writes the type back to the same bytes."""
    golden = read_golden(SAMPLED)
    design = golden.sampling
    assert isinstance(design, SamplingDesign)
    assert design.method == "stratified simple random samples of unjudged candidates, without replacement"
    assert design.parameters == {
        "frame": "every corpus chunk golden.yaml does not grade",
        "corpus": True,
        "per_query": 6,
        "seed": 0,
    }
    assert (design.depth, design.corpus) == (None, True)
    assert list(design.queries) == ["q_faw", "q_store", "q_milk", "q_broad"]
    assert design.strata("q_broad") == (
        Stratum("unjudged corpus chunks", 16, ("d2", "d4", "p1", "p3", "s3", "s4")),
    )
    assert design.strata("q_unknown") == ()
    assert design.to_dict() == golden.meta["sampling"]
    # written from the type alone (no plain section in meta): byte for byte the same file
    meta = {key: value for key, value in golden.meta.items() if key != "sampling"}
    typed_only = Qrels(grades=golden.grades, texts=golden.texts, meta=meta, sampling=design)
    write_golden(typed_only, tmp_path / "again.yaml")
    assert (tmp_path / "again.yaml").read_bytes() == SAMPLED.read_bytes()
    assert read_golden(tmp_path / "again.yaml").sampling == design


def test_a_file_without_a_design_has_none(tmp_path) -> None:
    path = tmp_path / "g.yaml"
    path.write_text("queries:\n  - id: q1\n    grades: {d1: 1}\n")
    assert read_golden(path).sampling is None
    path.write_text("sampling:\nqueries:\n  - id: q1\n    grades: {d1: 1}\n")
    assert read_golden(path).sampling is None
    path.write_text("sampling: {depth: 10}\nqueries:\n  - id: q1\n    grades: {d1: 1}\n")
    assert read_golden(path).sampling == SamplingDesign(queries={})  # no query sampled: --estimate says so


BAD_SECTIONS = [
    (
        "a chunk in two strata",
        "  q1:\n    a: {size: 5, sampled: [c1, c2]}\n    b: {size: 5, sampled: [c3, c1]}\n",
        ":6: sampling.queries.q1.b: chunk 'c1' sampled twice (first on line 5); a draw without replacement",
    ),
    (
        "more drawn than candidates",
        "  q1:\n    a:\n      size: 1\n      sampled: [c1, c2]\n",
        ":6: sampling.queries.q1.a: the sampling section cannot be used: 2 sampled of 1 candidates",
    ),
    (
        "a stratum given twice",
        "  q1:\n    a: {size: 5, sampled: [c1]}\n    a: {size: 5, sampled: [c2]}\n",
        ":6: sampling.queries.q1.a: key already given on line 5; expected each key once",
    ),
    (
        "a size in hex",
        "  q1:\n    a: {size: 0x10, sampled: [c1]}\n",
        None,  # YAML 1.1 reads it as 16: accepted, as before
    ),
    (
        "a chunk id that is a number",
        "  q1:\n    a: {size: 5, sampled: [c1, 7]}\n",
        ":5: sampling.queries.q1.a: sampled: expected a list of chunk ids",
    ),
    (
        "a negative size",
        "  q1:\n    a: {size: -2, sampled: []}\n",
        ":5: sampling.queries.q1.a: size -2; expected a whole number of candidates",
    ),
]


@pytest.mark.parametrize(("case", "queries", "message"), BAD_SECTIONS, ids=[c[0] for c in BAD_SECTIONS])
def test_a_bad_sampling_section_is_refused_where_the_file_is_read(tmp_path, case, queries, message) -> None:
    path = tmp_path / "g.yaml"
    path.write_text(
        "sampling:\n  design: {depth: 10, corpus: false}\n  queries:\n"
        + textwrap.indent(queries, "  ")
        + "queries:\n  - id: q1\n    grades: {d1: 1}\n"
    )
    if message is None:
        assert read_golden(path).sampling.strata("q1")[0].size == 16
        return
    with pytest.raises(InvalidGolden) as caught:
        read_golden(path)
    assert str(caught.value) == f"{path}{message}"
