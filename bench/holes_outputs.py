"""``holes``, ``metrics --judge-labels`` and ``compare --judge-labels`` in two checkouts on the same
files: byte-identical output (issue #42, item 1).

    python bench/holes_outputs.py --before PATH [--after PATH] [--work DIR] [--only NAME ...]

Each checkout (a directory holding ``calibration/``; ``--after`` defaults to this one) runs as a
fresh interpreter with that checkout first on its path. The inputs, written once into ``--work``
(default ``/tmp/holes-outputs``; the 10M-line files are bench/run.py's, read only):

- ``worked``: the worked example (golden.yaml, run.jsonl, judge.qrels, hole-sample.yaml, -k 5);
  ``worked-trec``: the same run as a TREC file (the files read in pieces);
- ``dupe``: the duplicate example (dupe.yaml, dupe.jsonl: a ranking with a repeated chunk);
- ``2M-shuffled``: bench/make_data.py's 2,000 queries x 1,000 lines, scores cut to one decimal
  (many ties) and every line shuffled (not grouped by query: the run is read whole);
- ``1M`` and ``10M``: bench/make_data.py's 1,000 and 10,000 queries x 1,000 lines.

The judge's grades on each input are written as bench/run.py writes them (``ensure_judge``: from
the before checkout's holes); run B of ``compare`` is run A with each query's order reversed. Per
input: ``holes -k K``, ``metrics -k K --judge-labels J``, ``compare A B -k K --judge-labels J``
and ``metrics -k 5 -k K --judge-labels J --hole-sample S`` (a sample of 4 queries drawn by the
before checkout's ``holes --sample 4 --out``, people's grades on its holes added to the
judgments), all ``--format json``. The before checkout's outputs are kept in ``--work`` under its
commit and reused. Exit 1 if any output, exit code or stderr differs.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WORKED = ROOT / "examples" / "worked-example"
BIG = Path("/work/main/bench/data/q10000-d1000-j20-s2")  # bench/run.py's 10M lines, read only


def calibration(checkout: Path, argv: list[str]) -> tuple[int, bytes, bytes, float]:
    env = {**os.environ, "PYTHONPATH": str(checkout)}
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "calibration", *argv], cwd=checkout, env=env, capture_output=True
    )
    return done.returncode, done.stdout, done.stderr, time.perf_counter() - started


def generated(folder: Path, queries: int, shuffled: bool) -> tuple[Path, Path]:
    """bench/make_data.py's collection (shuffled: scores to one decimal, every line shuffled)."""
    qrels, run = folder / "qrels.txt", folder / "run.txt"
    if not run.exists():
        tmp = folder.with_name(folder.name + ".tmp")
        argv = [sys.executable, str(ROOT / "bench" / "make_data.py"), str(tmp), "--queries", str(queries)]
        subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)
        if shuffled:
            lines = (tmp / "run.txt").read_text().splitlines(keepends=True)
            cut = []
            for line in lines:
                q, q0, d, r, s, t = line.split()
                cut.append(f"{q} {q0} {d} {r} {float(s):.1f} {t}\n")
            random.Random(7).shuffle(cut)
            (tmp / "run.txt").write_text("".join(cut))
        tmp.rename(folder)
    return qrels, run


def reversed_run(run: Path, out: Path) -> Path:
    """Run B: each query's ranking reversed (TREC: the scores negated; JSONL: the lists reversed)."""
    if out.exists():
        return out
    tmp = out.with_name(out.name + ".tmp")
    with run.open() as src, tmp.open("w") as dst:
        for line in src:
            if run.suffix == ".jsonl":
                row = json.loads(line)
                dst.write(json.dumps({**row, "ranking": row["ranking"][::-1]}) + "\n")
            else:
                q, q0, d, r, s, t = line.split()
                dst.write(f"{q} {q0} {d} {r} {-float(s)!r} {t}\n")
    tmp.rename(out)
    return out


def trec_of(jsonl: Path, out: Path) -> Path:
    if not out.exists():
        lines = []
        for line in jsonl.read_text().splitlines():
            row = json.loads(line)
            n = len(row["ranking"])
            lines += [
                f"{row['query_id']} Q0 {d} {i + 1} {n - i} worked\n" for i, d in enumerate(row["ranking"])
            ]
        out.write_text("".join(lines))
    return out


def judge_of(before: Path, qrels: Path, run: Path, k: int, out: Path) -> Path:
    """bench/run.py's ensure_judge: a grade 0-3 on each of the before checkout's holes."""
    if not out.exists():
        code, stdout, stderr, _ = calibration(
            before, ["holes", str(qrels), str(run), "-k", str(k), "--format", "json"]
        )
        if code:
            sys.exit(f"holes on {run}: {stderr.decode()}")
        lines = []
        for n, (qid, row) in enumerate(json.loads(stdout)["queries"].items()):
            lines += [f"{qid} 0 {doc} {(n * 7 + i * 3) % 4}\n" for i, doc in enumerate(row["holes"])]
        out.write_text("".join(lines))
    return out


def sampled(before: Path, qrels: Path, run: Path, k: int, folder: Path) -> tuple[Path, Path]:
    """A hole sample of 4 queries (the before checkout's) and the TREC judgments with people's
    grades on its holes added."""
    sample, graded = folder / "hole-sample.yaml", folder / "sampled-qrels.txt"
    if not graded.exists():
        argv = ["holes", str(qrels), str(run), "-k", str(k), "--sample", "4", "--seed", "5"]
        code, stdout, stderr, _ = calibration(before, [*argv, "--out", str(sample), "--format", "json"])
        if code:
            sys.exit(f"holes --sample on {run}: {stderr.decode()}")
        report = json.loads(stdout)
        extra = [
            f"{qid} 0 {doc} {(i * 5 + len(qid)) % 4}\n"
            for qid in report["sample"]["queries"]
            for i, doc in enumerate(report["queries"][qid]["holes"])
        ]
        graded.write_text(qrels.read_text() + "".join(extra))
    return sample, graded


def inputs(work: Path, before: Path, only: list[str]) -> dict[str, dict[str, object]]:
    work.mkdir(parents=True, exist_ok=True)
    out: dict[str, dict[str, object]] = {}

    def add(
        name: str, qrels: Path, run: Path, k: int, judge: Path | None = None, sample: bool = True
    ) -> None:
        if only and name not in only:
            return
        folder = work / name
        folder.mkdir(exist_ok=True)
        row: dict[str, object] = {"qrels": qrels, "run": run, "k": k}
        row["judge"] = judge or judge_of(before, qrels, run, k, folder / "judge.txt")
        row["b"] = reversed_run(run, folder / ("b" + run.suffix))
        if qrels == WORKED / "golden.yaml":  # the example's own sample, people's grades in it
            row["sample"], row["sampled_qrels"] = WORKED / "hole-sample.yaml", qrels
        elif sample:
            row["sample"], row["sampled_qrels"] = sampled(before, qrels, run, k, folder)
        out[name] = row

    worked = WORKED / "golden.yaml"
    add("worked", worked, WORKED / "run.jsonl", 5, WORKED / "judge.qrels")
    if not only or "worked-trec" in only:
        add(
            "worked-trec",
            worked,
            trec_of(WORKED / "run.jsonl", work / "worked.txt"),
            5,
            WORKED / "judge.qrels",
        )
    add("dupe", WORKED / "dupe.yaml", WORKED / "dupe.jsonl", 5, sample=False)
    if not only or "2M-shuffled" in only:
        add("2M-shuffled", *generated(work / "data-2M-shuffled", 2_000, shuffled=True), 10)
    if not only or "1M" in only:
        add("1M", *generated(work / "data-1M", 1_000, shuffled=False), 10)
    add("10M", BIG / "qrels.txt", BIG / "run.txt", 10, BIG / "judge.txt")
    return out


def commands(row: dict[str, object]) -> dict[str, list[str]]:
    qrels, run, k, judge = str(row["qrels"]), str(row["run"]), str(row["k"]), str(row["judge"])
    out = {
        "holes": ["holes", qrels, run, "-k", k, "--format", "json"],
        "metrics --judge-labels": [
            "metrics",
            qrels,
            run,
            "-k",
            k,
            "--judge-labels",
            judge,
            "--format",
            "json",
        ],
        "compare --judge-labels": [
            "compare",
            qrels,
            run,
            str(row["b"]),
            "-k",
            k,
            "--judge-labels",
            judge,
            "--format",
            "json",
        ],
    }
    if "sample" in row:
        out["metrics --hole-sample"] = [
            "metrics", str(row["sampled_qrels"]), run, *(["-k", "5"] if k == "5" else ["-k", "5", "-k", k]), "--judge-labels", judge,
            "--hole-sample", str(row["sample"]), "--format", "json",
        ]  # fmt: skip
    return out


def commit_of(checkout: Path) -> str:
    done = subprocess.run(["git", "-C", str(checkout), "rev-parse", "HEAD"], capture_output=True, text=True)
    return done.stdout.strip() or "unknown"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", type=Path, required=True)
    parser.add_argument("--after", type=Path, default=ROOT)
    parser.add_argument("--work", type=Path, default=Path("/tmp/holes-outputs"))
    parser.add_argument("--only", nargs="*", default=[], help="inputs by name (default: all)")
    parser.add_argument("--before-only", action="store_true", help="only keep the before checkout's outputs")
    args = parser.parse_args()
    cache = args.work / f"before-{commit_of(args.before)}"
    cache.mkdir(parents=True, exist_ok=True)
    failed = False
    for name, row in inputs(args.work, args.before, args.only).items():
        for what, argv in commands(row).items():
            key = hashlib.sha256(json.dumps(argv).encode()).hexdigest()[:16]
            kept = cache / f"{key}.json"
            if kept.exists():
                saved = json.loads(kept.read_text())
                before = (saved["code"], saved["stdout"].encode("latin-1"), saved["stderr"].encode("latin-1"))
            else:
                code, stdout, stderr, _ = calibration(args.before, argv)
                before = (code, stdout, stderr)
                kept.write_text(
                    json.dumps(
                        {"code": code, "stdout": stdout.decode("latin-1"), "stderr": stderr.decode("latin-1")}
                    )
                )
            if args.before_only:
                print(f"{name}, {what}: before kept (exit {before[0]}, {len(before[1]):,} bytes)", flush=True)
                continue
            code, stdout, stderr, seconds = calibration(args.after, argv)
            after = (code, stdout, stderr)
            label = f"{name}, {what}"
            if before == after:
                print(
                    f"{label}: byte-identical (exit {code}, {len(stdout):,} bytes; after {seconds:.1f} s)",
                    flush=True,
                )
                continue
            failed = True
            parts = [p for p, a, b in zip(("exit code", "stdout", "stderr"), before, after) if a != b]
            print(
                f"{label}: DIFFERS ({', '.join(parts)}); after's stderr: {stderr.decode()[-300:]}", flush=True
            )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
