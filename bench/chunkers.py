"""Chunkers compared on Chroma's three corpora (#44 item 5): evidence measures beside chunk-level R@k.

    python bench/chunkers.py [DATA] [--work DIR] [--depth 10]

DATA is the folder of Chroma's chunking evaluation (``questions.csv``, ``corpora/``; default
``/work/shared/data/chroma_chunking``). Per chunking (fixed 400 characters without overlap, fixed
800 with 200 overlap, whole lines packed into chunks of at most 800 characters with ``--by
paragraph``): the corpora chunked by ``python -m annotation chunk``, the product's BM25
(:func:`annotation.baseline.bm25_run`, in process: the store's ``baseline`` command needs a store)
run over the chunks' texts at depth 10 and written as a TREC run, then

- ``python -m calibration metrics golden.yaml RUN --chunks X.jsonl --evidence -k 5 -k 10``:
  evidence recall@k and precision@k, counted in characters of the documents;
- ``python -m calibration project golden.yaml --chunks X.jsonl --docs corpora/ -o golden-X.yaml``
  and ``python -m calibration metrics golden-X.yaml RUN -k 5 -k 10``: the chunk-level R@k (and
  P@k) the same run gets when relevance is a count of chunks of that chunking.

The commands run as subprocesses in DIR (a temporary folder unless ``--work``), each with
``--format json``; the per-corpus rows are means over the queries whose evidence lies in that
corpus, taken here from the commands' per-query figures (the commands have no corpus filter);
the "all" row is the same mean over every query, checked here against the commands' own means. Printed: a markdown table, the commands, the load, the date.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a script: the checkout's packages
    sys.path.insert(0, str(ROOT))

from annotation.baseline import bm25_run  # noqa: E402
from annotation.formats.chunks import read_chunks, read_documents  # noqa: E402
from annotation.formats.golden import read_golden  # noqa: E402
from annotation.formats.trec import write_run  # noqa: E402

DATA = Path("/work/shared/data/chroma_chunking")
# (label, file name, the arguments of `annotation chunk` after the corpora)
CHUNKINGS = (
    ("fixed 400/0", "fixed400-0", ("--size", 400, "--overlap", 0)),
    ("fixed 800/200", "fixed800-200", ("--size", 800, "--overlap", 200)),
    ("paragraph <= 800", "para800", ("--size", 800, "--by", "paragraph")),
)
CUTOFFS = (5, 10)


def mean(values: list[float]) -> float:
    return math.fsum(values) / len(values) if values else float("nan")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "data", nargs="?", type=Path, default=DATA, help=f"Chroma's data folder (default {DATA})"
    )
    parser.add_argument("--work", type=Path, help="folder for the files made (default: a temporary one)")
    parser.add_argument("--depth", type=int, default=10, help="BM25 run depth (default 10)")
    args = parser.parse_args(argv)
    data = args.data.resolve()
    questions, corpora = data / "questions.csv", data / "corpora"
    with tempfile.TemporaryDirectory() as tmp:
        work = args.work.resolve() if args.work else Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        return bench(questions, corpora, work, args.depth)


def bench(questions: Path, corpora: Path, work: Path, depth: int) -> int:
    started = time.time()
    ran: list[str] = []

    def command(module: str, *argv: object) -> str:
        words = [str(a) for a in argv]
        ran.append(" ".join(["python -m", module, *map(shlex.quote, words)]))
        done = subprocess.run(
            [sys.executable, "-m", module, *words],
            cwd=work,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
            capture_output=True,
            text=True,
        )
        if done.returncode != 0:
            sys.exit(f"{ran[-1]}: exit {done.returncode}\n{done.stderr}")
        return done.stdout

    command("annotation", "import-chroma", questions, "--corpora", corpora, "-o", "golden.yaml")
    golden = read_golden(work / "golden.yaml")
    corpus_of = {q: spans[0].doc for q, spans in golden.evidence.items() if spans}
    corpus_names = sorted(set(corpus_of.values()))
    documents = read_documents([corpora])
    rows: list[tuple[str, str, dict[str, str]]] = []
    totals: list[str] = []
    for label, name, chunk_args in CHUNKINGS:
        chunks_file, run_file, projected = f"{name}.jsonl", f"run-{name}.txt", f"golden-{name}.yaml"
        command("annotation", "chunk", corpora, *chunk_args, "-o", chunks_file)
        chunks = read_chunks(work / chunks_file)
        texts = {c.id: documents[c.doc][c.start : c.end] for c in chunks}
        run = bm25_run(texts, {q: golden.texts[q] for q in corpus_of}, depth, name="bm25")
        write_run(run, work / run_file)
        ran.append(f"bm25_run(<{chunks_file}'s texts>, <golden.yaml's queries>, depth={depth}) -> {run_file}")
        ev = json.loads(
            command(
                "calibration",
                "metrics",
                "golden.yaml",
                run_file,
                "--chunks",
                chunks_file,
                "--evidence",
                *[w for k in CUTOFFS for w in ("-k", k)],
                "--format",
                "json",
            )
        )["evidence"]
        command(
            "calibration",
            "project",
            "golden.yaml",
            "--chunks",
            chunks_file,
            "--docs",
            corpora,
            "-o",
            projected,
        )
        cl = json.loads(
            command(
                "calibration",
                "metrics",
                projected,
                run_file,
                *[w for k in CUTOFFS for w in ("-k", k)],
                "--format",
                "json",
            )
        )
        for k in CUTOFFS:
            t = ev["totals"][str(k)]
            totals.append(
                f"| {label} | {k} | {t['shared']:,} / {t['evidence']:,} | {t['shared']:,} / {t['retrieved']:,} |"
            )
        rel = {
            q: sum(1 for g in grades.values() if g >= 1)
            for q, grades in read_golden(work / projected).grades.items()
        }
        for corpus in [*corpus_names, "all"]:
            qids = [q for q, c in corpus_of.items() if corpus in ("all", c)]
            cells: dict[str, str] = {
                "queries": str(len(qids)),
                "chunks": str(sum(1 for c in chunks if corpus in ("all", c.doc))),
            }
            for k in CUTOFFS:
                per = ev["queries"]
                rec = [per[q][str(k)]["recall"] for q in qids if per.get(q) and per[q].get(str(k))]
                prec = [per[q][str(k)]["precision"] for q in qids if per.get(q) and per[q].get(str(k))]
                clq = cl["queries"]
                r_chunks = [clq[q][f"R@{k}"] for q in qids if q in clq and clq[q].get(f"R@{k}") is not None]
                if corpus == "all":  # the commands' own means, over the same queries
                    assert len(rec) == ev["mean"][str(k)]["recall"]["n"] == len(r_chunks) == len(qids)
                    assert abs(mean(rec) - ev["mean"][str(k)]["recall"]["value"]) < 1e-9
                    assert abs(mean(prec) - ev["mean"][str(k)]["precision"]["value"]) < 1e-9
                    assert abs(mean(r_chunks) - cl["mean"][f"R@{k}"]) < 1e-9
                cells[f"eR@{k}"] = f"{mean(rec):.3f}"
                cells[f"eP@{k}"] = f"{mean(prec):.3f}"
                cells[f"R@{k}"] = f"{mean(r_chunks):.3f}"
            cells["|Rel|"] = f"{mean([rel.get(q, 0) for q in qids]):.2f}"
            rows.append((label, corpus, cells))
    print_table(rows)
    print()
    print("The denominators, over every query (characters counted once; `totals` of `metrics --evidence`):")
    print()
    print(
        "| chunking | k | evidence characters in the top k / characters of evidence | the same / characters retrieved |"
    )
    print("|---|---|---|---|")
    print("\n".join(totals))
    print()
    print(
        f"BM25 at depth {depth}; evidence measures from `metrics --evidence` (characters, grade >= 1), "
        "chunk-level R@k from `metrics` on the golden set projected onto the same chunking (min-overlap 0.5); "
        "per-corpus rows: means over that corpus's queries of the commands' per-query figures."
    )
    print()
    print("commands (in the work folder):")
    print()
    print("```text")
    for line in ran:
        print(line)
    print("```")
    print()
    load = os.getloadavg()
    print(
        f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} on {os.cpu_count()} cores; "
        f"{time.time() - started:.1f} s; {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}"
    )
    return 0


def print_table(rows: list[tuple[str, str, dict[str, str]]]) -> None:
    columns = ["queries", "chunks", "eR@5", "eP@5", "eR@10", "eP@10", "R@5", "R@10", "|Rel|"]
    heads = {
        "eR@5": "evidence R@5",
        "eP@5": "evidence P@5",
        "eR@10": "evidence R@10",
        "eP@10": "evidence P@10",
        "R@5": "chunk R@5",
        "R@10": "chunk R@10",
        "|Rel|": "mean chunk-level Rel",
    }
    print("| chunking | corpus | " + " | ".join(heads.get(c, c) for c in columns) + " |")
    print("|" + "---|" * (len(columns) + 2))
    for label, corpus, cells in rows:
        print(f"| {label} | {corpus} | " + " | ".join(cells[c] for c in columns) + " |")


if __name__ == "__main__":
    raise SystemExit(main())
