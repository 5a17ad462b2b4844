"""Disagreement is kept (#40 item 11): exports count the items people graded differently and name
the rule that made them one grade; golden.yaml lists them per query under ``disputed``; an admin's
settled grade wins. A store built by hand, two queries, four chunks:

    item     current labels                     median  mean  settled  exported (median)  disputed
    q1 c1    ann 0, bob 3                       0       2     -        0                  yes
    q1 c2    ann 2, bob 2, cy 1, root 3 (root   2       2     3        3                  yes, settled
             settled it at 3: an admin's label)
    q2 c3    ann 1, bob 1                       1       1     -        1                  no (agree)
    q2 c4    ann 3                              3       3     -        3                  no (one person)

Median of an even count is the lower of the two middle grades: c1 [0, 3] -> 0, c2 [1, 2, 2, 3] -> 2.
Mean rounds half up: c1 1.5 -> 2; c2 8/4 = 2. Three items graded by more than one person (c1, c2,
c3), two of them disputed (c1, c2), one of those settled (c2).
"""

from __future__ import annotations

import pytest
import yaml

from annotation.__main__ import main
from annotation.choices import AGGREGATE_RULES
from annotation.exports import export_beir, export_golden, export_qrels
from annotation.formats.by_extension import read_judgments
from annotation.formats.golden import read_golden, write_golden
from annotation.model import InvalidGolden
from annotation.options import option
from annotation.store import Store

C1 = {"chunk": "c1", "grades": {"ann": 0, "bob": 3}, "aggregate": 0}
C2 = {"chunk": "c2", "grades": {"ann": 2, "bob": 2, "cy": 1, "root": 3}, "aggregate": 2, "settled": 3}
MEDIAN_CLAUSE = (
    "2 of 3 items graded by more than one person had disagreeing grades, aggregated by the median, "
    "the lower middle grade (an even number of raters: the lower of the two middle grades) "
    "(1 of them settled by an admin, the settled grade kept)"
)


@pytest.fixture
def db(tmp_path):
    path = tmp_path / "labels.db"
    with Store(path) as store:
        store.import_queries({"q1": "capital of France?", "q2": "boiling point of water?"})
        store.import_corpus([{"id": f"c{n}", "text": f"chunk {n}"} for n in range(1, 5)])
        items = {
            c: store.ensure_item("chunk", query_id=q, chunk_id=c)
            for q, c in (("q1", "c1"), ("q1", "c2"), ("q2", "c3"), ("q2", "c4"))
        }
        for name in ("ann", "bob", "cy"):
            store.annotator_id(name)
        store.annotator_id("root", role="admin")
        for chunk, grades in {"c1": (0, 3), "c2": (2, 2, 1), "c3": (1, 1), "c4": (3,)}.items():
            for name, grade in zip(("ann", "bob", "cy"), grades):
                store.add_label(items[chunk], name, grade)
        store.settle(items["c2"], "root", 3)
    return path


def test_golden_lists_disputed_items_with_every_grade(db, tmp_path) -> None:
    out = tmp_path / "golden.yaml"
    with Store(db) as store:
        summary = export_golden(store, out)
    doc = yaml.safe_load(out.read_text(encoding="utf-8"))
    q1, q2 = doc["queries"]
    assert q1["grades"] == {"c1": 0, "c2": 3}  # c2: the settled 3, not the median 2
    assert q1["disputed"] == [C1, C2]
    assert q2["grades"] == {"c3": 1, "c4": 3} and "disputed" not in q2
    assert summary.startswith(
        f"wrote 4 judgments over 2 queries to {out}; 1 item settled by an admin (the settled grade, "
        f"not the aggregate); {MEDIAN_CLAUSE}; each query lists them under disputed with every person's grade"
    )


def test_golden_round_trip_keeps_disputed(db, tmp_path) -> None:
    out, again = tmp_path / "golden.yaml", tmp_path / "again.yaml"
    with Store(db) as store:
        export_golden(store, out)
    read = read_golden(out)
    assert read.grades == {"q1": {"c1": 0, "c2": 3}, "q2": {"c3": 1, "c4": 3}}
    assert read.meta["disputed"] == {"q1": [C1, C2]}
    write_golden(read, again)
    reread = read_golden(again)
    assert (reread.grades, reread.meta["disputed"]) == (read.grades, read.meta["disputed"])


def test_reader_refuses_a_malformed_dispute(tmp_path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "queries:\n- id: q1\n  grades: {c1: 0}\n  disputed:\n  - {chunk: c1, grades: {ann: 0}, aggregate: 0, why: x}\n",
        encoding="utf-8",
    )
    with pytest.raises(InvalidGolden, match=r"bad.yaml:5: queries\[0\]\.disputed\[0\]\.why.*unknown key"):
        read_golden(bad)
    bad.write_text(
        "queries:\n- id: q1\n  grades: {c1: 0}\n  disputed:\n  - {chunk: c1, grades: {ann: 7}, aggregate: 0}\n"
    )
    with pytest.raises(InvalidGolden, match=r"disputed\[0\]\.grades\.ann.*0-3"):
        read_golden(bad)


def test_mean_of_two_raters_rounds_half_up_and_settled_wins(db, tmp_path) -> None:
    out = tmp_path / "mean.qrels"
    with Store(db) as store:
        summary = export_qrels(store, out, aggregate="mean")
    assert read_judgments(out).grades == {"q1": {"c1": 2, "c2": 3}, "q2": {"c3": 1, "c4": 3}}
    assert "aggregated by the mean rounded half up (1.5 -> 2) (1 of them settled" in summary
    assert summary.endswith("qrels keeps one grade per item: export golden to see each person's")


def test_anonymized_disputes_name_pseudonyms(db, tmp_path) -> None:
    out = tmp_path / "anon.yaml"
    with Store(db) as store:
        export_golden(store, out, anonymize=True)
    text = out.read_text(encoding="utf-8")
    disputed = yaml.safe_load(text)["queries"][0]["disputed"]
    # annotator-N by the order people were added: ann 1, bob 2, cy 3, root 4
    assert disputed[1]["grades"] == {"annotator-1": 2, "annotator-2": 2, "annotator-3": 1, "annotator-4": 3}
    assert "ann" not in text.replace("annotator", "")


def test_one_persons_export_has_no_disagreement(db, tmp_path) -> None:
    out = tmp_path / "ann.yaml"
    with Store(db) as store:
        summary = export_golden(store, out, annotator="ann")
    assert "disputed" not in out.read_text(encoding="utf-8")
    assert "disagreeing" not in summary


def test_other_formats_say_it_in_their_summary(db, tmp_path) -> None:
    with Store(db) as store:
        summary = export_beir(store, tmp_path / "beir")
    assert "from the median grade over 4 annotators (ann, bob, cy, root), 1 item settled" in summary
    assert MEDIAN_CLAUSE in summary


def test_cli_prints_the_count_and_rule(db, tmp_path, capsys) -> None:
    out = tmp_path / "cli.qrels"
    code = main(["export", "--db", str(db), "--format", "qrels", "--aggregate", "majority", "-o", str(out)])
    printed = capsys.readouterr().out
    # majority: c1 ties 0 and 3 -> lower middle of the tied grades, 0; c2 the 2s -> 2, settled 3
    assert code == 0 and read_judgments(out).grades == {"q1": {"c1": 0, "c2": 3}, "q2": {"c3": 1, "c4": 3}}
    assert f"aggregated by the {AGGREGATE_RULES['majority']}" in printed


def test_the_options_table_states_the_even_rule() -> None:
    aggregate = option("aggregate")
    assert aggregate.default == "median" and aggregate.choices == ("median", "majority", "mean")
    assert "an even number of raters: the lower of the two middle grades" in aggregate.help
