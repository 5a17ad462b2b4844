"""Write examples/worked-example/sampled.yaml: the worked example's labels plus a random
sample of the chunks they never judged, graded with the truth (truth.qrels), and the
sampling design that drew it, as `pool --estimate` and `export --format golden` record it.

For each query, the frame is every corpus chunk golden.yaml does not grade (one stratum,
corpus-wide); a seeded simple random sample of SAMPLE of them, without replacement, each
with inclusion probability SAMPLE / frame size. q_broad's frame holds 4 of its 12 truly
relevant chunks; the sample finds some of them, and `python -m calibration audit
examples/worked-example/sampled.yaml examples/worked-example/run.jsonl -k 5 --estimate`
estimates the rest, with its interval. Re-running gives the same file.

    python examples/make_sampled.py
"""

from __future__ import annotations

import random
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent / "worked-example"
sys.path.insert(0, str(HERE.parents[1]))

from annotation.formats.by_extension import read_judgments  # noqa: E402
from annotation.formats.golden import write_golden  # noqa: E402
from annotation.formats.records import read_corpus_ids  # noqa: E402
from annotation.model import Qrels  # noqa: E402

SAMPLE, SEED = 6, 0
STRATUM = "unjudged corpus chunks"


def build() -> tuple[Qrels, dict]:
    golden = read_judgments(HERE / "golden.yaml")
    truth = read_judgments(HERE / "truth.qrels").grades
    corpus = read_corpus_ids(HERE / "corpus.jsonl")
    rng = random.Random(SEED)
    grades, queries = {}, {}
    for qid, judged in golden.grades.items():
        frame = sorted(c for c in corpus if c not in judged)
        drawn = sorted(rng.sample(frame, min(SAMPLE, len(frame))))
        queries[qid] = {STRATUM: {"size": len(frame), "sampled": drawn}}
        grades[qid] = {**judged, **{c: truth.get(qid, {}).get(c, 0) for c in drawn}}
    sampling = {
        "method": "stratified simple random samples of unjudged candidates, without replacement",
        "design": {
            "frame": "every corpus chunk golden.yaml does not grade",
            "corpus": True,
            "per_query": SAMPLE,
            "seed": SEED,
        },
        "queries": queries,
    }
    meta = {
        **golden.meta,
        "name": "worked-example-sampled",
        "description": (
            "The worked example's labels plus a random sample of the chunks they never judged "
            "(graded with truth.qrels), for estimating what the labels missed."
        ),
        "sampling": sampling,
    }
    return Qrels(grades=grades, texts=golden.texts, meta=meta), sampling


def main() -> None:
    qrels, _ = build()
    write_golden(qrels, HERE / "sampled.yaml")
    print(f"wrote {HERE / 'sampled.yaml'}")


if __name__ == "__main__":
    main()
