"""Write examples/worked-example/traces.jsonl: the demo's RAG traces.

Two systems answer the worked example's four queries, five times each (40
traces): `rag-bm25` is shown a window of 3 of the retriever's ranking,
`rag-rerank` of the judged chunks first; version v's window starts at the v-th
chunk, so no two traces share question, contexts and answer (a labeller never
sees "the same" trace twice; checked here and by tests/test_demo.py). Answers
are extractive (sentences of the contexts shown), and a seeded share of them
carries a claim found in no context, so that faithfulness has something to
find. Re-running gives the same file.

    python examples/make_traces.py
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent / "worked-example"
UNSUPPORTED = [
    "Burning the field after harvest kills all the pests for good.",
    "Adding salt to the grain doubles how long it keeps.",
    "Switching to Jersey cows doubles the milk yield.",
    "Spraying every week is the only way to be safe.",
    "Any maize variety resists all of these problems if planted early.",
]


def main() -> None:
    rng = random.Random(11)
    chunks = {c["id"]: c["text"] for c in map(json.loads, (HERE / "corpus.jsonl").read_text().splitlines())}
    golden = yaml.safe_load((HERE / "golden.yaml").read_text())
    runs = {
        r["query_id"]: r["ranking"] for r in map(json.loads, (HERE / "run.jsonl").read_text().splitlines())
    }
    lines = []
    for query in golden["queries"]:
        qid, question = query["id"], query["text"]
        judged = sorted(query["grades"], key=lambda d: -query["grades"][d])
        for system, pool in (("rag-bm25", runs[qid]), ("rag-rerank", judged + runs[qid])):
            for version in range(5):
                shown = list(dict.fromkeys(pool))[version : version + 3]
                sentences = [chunks[c].split("; ")[0].rstrip(".") + "." for c in shown[:2]]
                if rng.random() < 0.35:
                    sentences.append(rng.choice(UNSUPPORTED))
                lines.append(
                    json.dumps(
                        {
                            "id": f"t_{qid[2:]}_{system.split('-')[1]}_{version}",
                            "query_id": qid,
                            "system": system,
                            "question": question,
                            "contexts": shown,
                            "answer": " ".join(sentences),
                        },
                        ensure_ascii=False,
                    )
                )
    contents = [
        tuple(json.dumps(json.loads(line)[k]) for k in ("question", "contexts", "answer")) for line in lines
    ]
    if len(set(contents)) != len(contents):
        raise SystemExit("two traces share question, contexts and answer: the demo must hold distinct items")
    (HERE / "traces.jsonl").write_text("\n".join(lines) + "\n")
    print(f"wrote {len(lines)} traces to {HERE / 'traces.jsonl'}")


if __name__ == "__main__":
    main()
