"""The demo data set: the worked example as a labelling project (``denominator demo``).

The one module that may import every package (annotation, judge, calibration): it builds a
store with labels, lets the offline judge grade it and saves a first weekly review, so that
``make run`` opens an app with something on every page.
"""

from __future__ import annotations

import importlib.util

from annotation.formats.by_extension import read_judgments, read_ranked
from annotation.formats.records import read_corpus, read_traces
from annotation.model import Qrels
from annotation.pooling import pool, pool_pairs
from annotation.shipped import WORKED_EXAMPLE
from annotation.store import ImportRecord, Store
from calibration.gate import verdict_settings
from calibration.policy.rules import DEFAULT_POLICY
from calibration.review import review
from judge.jobs import grade_offline

EXAMPLE_DIR = WORKED_EXAMPLE  # denominator/examples/worked-example, shipped in the wheel
# the demo's first import, by its name and who ran it: a store that holds it holds the demo
DEMO_IMPORT = "the worked example: corpus, queries, run 'retriever', traces"
DEMO_WHO = "demo"


def _demo_unsupported_claims() -> list[str]:
    """The claims examples/make_traces.py adds to some answers: found in no context."""
    path = EXAMPLE_DIR.parent / "make_traces.py"
    spec = importlib.util.spec_from_file_location("make_traces", path)
    if spec is None or spec.loader is None:  # a .py file always has a spec with a loader
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return list(module.UNSUPPORTED)


def demo_import(store: Store) -> ImportRecord | None:
    """The demo's first import when the store holds it (live or retired), else None."""
    return next((i for i in store.imports() if i["who"] == DEMO_WHO and i["name"] == DEMO_IMPORT), None)


def build_demo(db_path: str, with_judge: bool = False) -> str:
    """The worked example as a labelling project: chunks with texts, queries,
    the retriever's run, a depth-10 pool shared by two annotators.

    A store that holds the demo already (:func:`demo_import`) is left as it is: labels are
    appended, never undone, so a second build would add cat's labels, the judge's fit and the
    import records a second time."""
    golden = read_judgments(EXAMPLE_DIR / "golden.yaml")
    with Store(db_path) as store:
        built = demo_import(store)
        if built is not None:
            retired = (
                f"; it is retired: python -m annotation imports restore {built['id']} brings it back"
                if built["state"] == "retired"
                else ""
            )
            return (
                f"demo database {store.path} already holds the demo (import {built['id']}, "
                f"{built['created_at'][:10]}): nothing added{retired}\n"
            )
        # recorded as imports (python -m annotation imports list, the Data page), as a user's would be
        with store.recording(
            DEMO_IMPORT,
            "corpus+queries+run+traces",
            DEMO_WHO,
            source="corpus.jsonl, golden.yaml, run.jsonl, traces.jsonl",
        ):
            # list(...): a list of the Mappings the store's imports take (a list is invariant)
            store.import_corpus(list(read_corpus(EXAMPLE_DIR / "corpus.jsonl")))
            store.import_queries(golden.texts)
            store.import_run(read_ranked(EXAMPLE_DIR / "run.jsonl"), name="retriever", stage="fetch")
            store.import_traces(list(read_traces(EXAMPLE_DIR / "traces.jsonl")))
        report = pool(store, 10, annotators=["ann", "bob"], overlap=0.2, seed=7)
        pairs = pool_pairs(store, "rag-bm25", "rag-rerank")
        # an earlier round: two people graded the retriever's top 10 of two queries (a chunk the
        # golden file does not list is irrelevant, 0); they disagree on one chunk
        top = read_ranked(EXAMPLE_DIR / "run.jsonl").rankings()
        earlier = {q: {c: golden.grades[q].get(c, 0) for c in top[q][:10]} for q in ("q_faw", "q_store")}
        with store.recording("an earlier round's labels by 'cat'", "labels", "demo"):
            store.import_labels(Qrels(grades=earlier), annotator="cat")
        with store.recording("an earlier round's labels by 'dan'", "labels", "demo"):
            store.import_labels(
                Qrels(grades={**earlier, "q_faw": {**earlier["q_faw"], "m3": 0}}), annotator="dan"
            )
        # and cat graded the faithfulness of 16 traces (versions 0 and 1 of each query and system):
        # an answer with a claim no context holds is unsupported (0), else fully supported (2)
        unsupported = _demo_unsupported_claims()
        for item_id, trace_id, answer in store.trace_items():
            if trace_id.endswith(("_0", "_1")):
                value = 0 if any(claim in (answer or "") for claim in unsupported) else 2
                store.add_label(item_id, "cat", value, rubric="faithfulness")
        judged = ""
        if with_judge:  # the offline judge, fitted on those labels, grades every chunk and trace
            graded = [grade_offline(store, rubric) for rubric in ("relevance", "faithfulness")]
            bar, statistic = verdict_settings(DEFAULT_POLICY)  # the essay's bar: the demo is its example
            reviewed = review(store, bar=bar, statistic=statistic)  # saved: the first point of the trend
            judged = (
                "; the offline judge graded "
                + " and ".join(f"{r['graded']} items for {r['rubric']}" for r in graded)
                + f", reviewed for week {reviewed['week']}"
            )
        counts = store.counts()
        shown = store.path  # a URL without its credentials
    return (
        f"demo database {shown}: {counts['chunks']} chunks, {counts['queries']} queries, "
        f"{report['items_added']} new chunk items for ann and bob ({report['doubly_assigned']} shared), "
        f"{counts['traces']} traces to grade, {pairs['added']} new answer pairs to compare; "
        "earlier labels by cat and dan on the top 10 of q_faw and q_store, and cat's faithfulness "
        f"grades of 16 traces{judged}\n"
    )
