"""The Metrics page's cached results (#42, item 2): each action's answer is kept under the content
of the data (a digest, not the object) and the settings it reads, so a run with the same inputs
computes nothing, a change of k computes again what depends on k and nothing else, and a file of
the same name with other content is never answered from the cache of the first.

The data, by hand: q1 judges d1, d2 relevant (d3 not); q2 judges e1 relevant. The run ranks
q1: d1 x d2 and q2: y e1 z. At k = 2: R@2 of q1 = 1/2 (d1), of q2 = 1/1 (e1): mean 0.750; at
k = 1: q1 1/2, q2 0/1: mean 0.250. The other run (same file name) ranks q1: x y w: R@2 0/2, so
the mean at k = 2 is (0 + 1) / 2 = 0.500."""

from __future__ import annotations

import json
from collections import Counter

import pytest
from streamlit.testing.v1 import AppTest

from calibration import actions
from denominator.ui import metrics_cache
from denominator.ui.metrics_data import OWN_FILES
from tests.conftest import app_test, page_text

QRELS = b"q1 0 d1 1\nq1 0 d2 1\nq1 0 d3 0\nq2 0 e1 1\n"


def ranked(rankings: dict[str, list[str]]) -> bytes:
    return "".join(json.dumps({"query_id": q, "ranking": r}) + "\n" for q, r in rankings.items()).encode()


RUN = ranked({"q1": ["d1", "x", "d2"], "q2": ["y", "e1", "z"]})
OTHER_RUN = ranked({"q1": ["x", "y", "w"], "q2": ["y", "e1", "z"]})
COUNTED = ("metrics", "audit", "holes", "check")


class Counting:
    """``calibration.actions`` as the page's cache sees it, counting the calls it makes (the
    misses; the actions' own calls to each other are not counted)."""

    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()

    def __getattr__(self, name: str):
        real = getattr(actions, name)

        def counting(*args, **kwargs):
            self.calls[name] += 1
            return real(*args, **kwargs)

        return counting


@pytest.fixture
def calls(monkeypatch) -> Counter[str]:
    """How many times the page's cache called each action since the files were uploaded."""
    counting = Counting()
    monkeypatch.setattr(metrics_cache, "actions", counting)
    return counting.calls


def uploaded(calls: Counter[str], run: bytes = RUN, k: int = 2) -> AppTest:
    at = app_test(timeout=60).run()
    at.radio(key="metrics:source").set_value(OWN_FILES).run()
    calls.clear()  # the worked example's, drawn first
    at.number_input(key="metrics:k").set_value(k)
    at.file_uploader(key="metrics:qrels_upload").set_value(("qrels.txt", QRELS, "text/plain"))
    at.file_uploader(key="metrics:run_upload").set_value(("run.jsonl", run, "text/plain"))
    return ok(at.run())


def ok(at: AppTest) -> AppTest:
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    return at


def mean_recall(at: AppTest, k: int) -> str:
    return next(m.value for m in at.metric if m.label == f"mean R@{k}")


def test_a_run_with_the_same_inputs_computes_nothing(calls) -> None:
    at = uploaded(calls)
    assert mean_recall(at, 2) == "0.750"
    assert dict(calls) == {name: 1 for name in COUNTED}
    first = page_text(at)
    ok(at.run())
    assert dict(calls) == {name: 1 for name in COUNTED}
    assert page_text(at) == first  # the same page, every figure from the cache


def test_a_change_of_k_computes_what_reads_k_once(calls) -> None:
    at = uploaded(calls)
    ok(at.number_input(key="metrics:k").set_value(1).run())
    assert mean_recall(at, 1) == "0.250"
    assert dict(calls) == {name: 2 for name in COUNTED}
    ok(at.number_input(key="metrics:k").set_value(2).run())  # back: computed before
    assert mean_recall(at, 2) == "0.750"
    assert dict(calls) == {name: 2 for name in COUNTED}


def test_the_fetch_depth_moves_the_audit_and_the_check_only(calls) -> None:
    at = uploaded(calls)
    ok(at.number_input(key="metrics:fetch_depth").set_value(3).run())
    assert "R@3 (stage 1)" in page_text(at)
    assert dict(calls) == {"metrics": 1, "holes": 1, "audit": 2, "check": 2}


def test_the_minimum_grade_leaves_the_holes(calls) -> None:
    """A hole is a chunk with no grade at all: the threshold does not move it."""
    at = uploaded(calls)
    ok(at.number_input(key="metrics:min_grade").set_value(2).run())
    assert mean_recall(at, 2) == "undefined"  # no grade reaches 2: |Rel| = 0 everywhere
    assert dict(calls) == {"metrics": 2, "holes": 1, "audit": 2, "check": 2}


def test_a_file_of_the_same_name_with_other_content_is_computed_anew(calls) -> None:
    """The cache is keyed on the files' digests: another person's run.jsonl is not this one's."""
    assert mean_recall(uploaded(calls), 2) == "0.750"
    other = uploaded(calls, OTHER_RUN)  # a new session; the counts start again at its upload
    assert mean_recall(other, 2) == "0.500"
    assert dict(calls) == {name: 1 for name in COUNTED}  # computed, not the first file's answers
    again = uploaded(calls)  # the first content again, in a third session: the cache's answers
    assert mean_recall(again, 2) == "0.750"
    assert dict(calls) == {}


def test_a_new_k_sorts_the_run_and_finds_its_judged_rows_no_more(calls, monkeypatch) -> None:
    """The data set read is one object from one run of the page to the next (not a copy per run):
    its run's memo (trec_eval's order, the judged rows) serves every k and every section."""
    import calibration.metrics as engine

    sorts: list[int] = []
    found: list[int] = []
    real_order, real_judgment = engine._trec_order, engine._Ordered.judgment_of
    at = app_test(timeout=60).run()
    at.radio(key="metrics:source").set_value(OWN_FILES).run()  # the worked example's sorts before
    monkeypatch.setattr(engine, "_trec_order", lambda *a: sorts.append(1) or real_order(*a))
    monkeypatch.setattr(engine._Ordered, "judgment_of", lambda *a: found.append(1) or real_judgment(*a))
    calls.clear()
    at.number_input(key="metrics:k").set_value(2)
    at.file_uploader(key="metrics:qrels_upload").set_value(("qrels.txt", QRELS, "text/plain"))
    at.file_uploader(key="metrics:run_upload").set_value(("run.jsonl", RUN, "text/plain"))
    ok(at.run())
    assert (len(sorts), len(found)) == (1, 1)
    ok(at.number_input(key="metrics:k").set_value(1).run())
    ok(at.number_input(key="metrics:fetch_depth").set_value(3).run())
    assert mean_recall(at, 1) == "0.250"
    assert dict(calls) == {"metrics": 2, "audit": 3, "holes": 2, "check": 3}
    assert (len(sorts), len(found)) == (1, 1)


def test_the_worked_example_drawn_again_is_the_same_page(calls) -> None:
    """The estimate adds its finding to the audit's report it is handed: a copy, never the cache's."""
    at = ok(app_test(timeout=60).run())
    assert calls["metrics"] == 1 and calls["holes"] == 1
    first = page_text(at)
    assert "What the labels missed, estimated from a sample" in first
    ok(at.run())
    assert page_text(at) == first
    assert calls["metrics"] == 1 and calls["holes"] == 1


def test_the_store_version_moves_when_labels_stop_or_start_counting(demo_db) -> None:
    """What the stored data and the check are kept under: a retired import (no row deleted, no
    row counted differently by ``counts``) and a withdrawn settlement (no label added) move it."""
    from annotation.store import Store
    from denominator.ui.metrics_data import store_version

    with Store(demo_db) as store:
        before = store_version(store)
        store.retire_import(2, "root", "cat's labels were for another corpus")
        retired = store_version(store)
        assert retired != before
        item = next(int(i) for i, _, _ in store.chunk_items())
        store.settle(item, "root", 3)
        settled = store_version(store)
        store.unsettle(item, "root")
        assert len({before, retired, settled, store_version(store)}) == 4
        assert store_version(store) == store_version(store)  # reading it writes nothing
