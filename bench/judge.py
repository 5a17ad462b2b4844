"""The judge's throughput and CPU against the local OpenAI-compatible server.

2,000 calls (relevance of 2,000 (query, chunk) items) against
``python -m tests.fake_openai`` answering after 200 ms, with concurrency 32:
the ideal is calls x latency / concurrency (12.5 s); the figure is the share
of that ideal reached (target: at least 0.9), median over rounds. Each round
runs the real CLI (``python -m judge grade``) on a fresh copy of the
database and times the whole process, interpreter start and the closing
agreement line included (#42: the run's own figure, which leaves them out, is
printed beside it). The client's CPU is the process's (user + system, from
``wait4``) over its calls (target: at most 2 ms a call); the fake server's CPU over
the same round is printed beside it. Then the same job again on the same database:
it must make 0 calls (the server's log counts them).

The server's own floor is measured in the same rounds (``--no-floor`` leaves it out): a plain
HTTP/1.1 client (asyncio streams, no SDK, bodies of the judge's size with the rubric's reply schema)
makes the same number of calls at the same concurrency, its process timed start to exit as the
judge's is. The fake server is Python (``http.server``, a thread per connection) and spends a few
milliseconds between a reply and the next request of a slot, so no client reaches 1.0 of the ideal:
the floor's share of it is about the most a client of this server can reach on this machine at this
load (the floor's own client spends about 0.2 ms of CPU a call: 0.35 s for 2,000), and the judge's share of the floor
is printed beside its share of the ideal (the target stays on the ideal).

``--peer DIR`` runs the same job with another checkout's ``python -m judge`` (a git
worktree of main, say) in alternating rounds against the same server, and prints
this checkout's figures as ratios of the peer's: a change's effect measured in the
same minutes, whatever the machine's load (it is printed beside every figure).

    python bench/judge.py [--calls 2000] [--latency 0.2] [--concurrency 32] [--rounds 3]
                          [--peer DIR] [--no-floor] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


CPU_TARGET_MS = 2.0  # the client's CPU a call, start and stop included
SHARE_TARGET = 0.9


@dataclass
class Round:
    side: str
    wall: float  # the process, start to exit
    run: float  # the run's own figure (its report): no start-up, no closing line
    cpu: float  # the client process's user + system seconds
    server_cpu: float | None  # the fake server's over the same round (None: not readable)
    load: float  # 1-minute load average at the round's end


def build(path: Path, calls: int) -> None:
    # imported here: the floor client's process (this file, --floor-client) imports the stdlib only
    from annotation.model import Run
    from annotation.pooling import pool
    from annotation.store import Store

    queries = max(1, calls // 100)
    per_query = calls // queries
    with Store(path) as store:
        store.import_queries({f"q{i}": f"how do I store maize number {i}" for i in range(queries)})
        store.import_corpus(
            [
                {"id": f"c{j}", "text": f"chunk {j}: dry the grain to 13% moisture " * 4}
                for j in range(per_query)
            ]
        )
        store.import_run(
            Run.from_rankings({f"q{i}": [f"c{j}" for j in range(per_query)] for i in range(queries)}), "r"
        )
        pool(store, per_query)


def start_server(latency: float, log: Path) -> tuple[subprocess.Popen[str], str]:
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tests.fake_openai",
            "--port",
            "0",
            "--latency",
            str(latency),
            "--log",
            str(log),
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    line = process.stdout.readline()
    if not line.startswith("listening on "):
        process.kill()
        raise SystemExit(f"the fake server did not start: {line!r}")
    return process, line.split()[-1]


def cpu_of(pid: int) -> float | None:
    """A running process's user + system seconds (Linux's /proc), None where unreadable."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def grade(cwd: Path, db: Path, url: str, concurrency: int, out: Path) -> tuple[str, float, float, float]:
    """One ``python -m judge grade`` from ``cwd``: (its stdout, wall seconds of the whole process,
    its own elapsed figure, its CPU seconds)."""
    command = [sys.executable, "-m", "judge", "grade", "--db", str(db), "--rubric", "relevance"]
    command += ["--judge", "openai", "--base-url", url, "--model", "fake-judge"]
    command += ["--concurrency", str(concurrency)]
    env = {"OPENAI_API_KEY": "bench", "PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    with open(out, "w") as stdout, open(out.with_suffix(".err"), "w") as stderr:
        started = time.monotonic()
        child = subprocess.Popen(command, cwd=cwd, stdout=stdout, stderr=stderr, env=env)
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.monotonic() - started
    text = out.read_text()
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"judge failed ({cwd}): {out.with_suffix('.err').read_text()[-2000:]}")
    found = re.search(r"; ([0-9.]+) s\n", text)
    if found is None:
        raise SystemExit(f"no elapsed time in the judge's report ({cwd}): {text[-500:]}")
    return text, wall, float(found.group(1)), usage.ru_utime + usage.ru_stime


FLOOR_SCHEMA = {
    "type": "object",
    "properties": {"grade": {"type": "integer", "enum": [0, 1, 2, 3]}, "reason": {"type": "string"}},
    "required": ["grade", "reason"],
}
FLOOR_TEXT = 1400  # characters of a call's user message: the judge's are about 1,400 (347 tokens a call)


def floor_requests(url: str) -> Callable[[int], bytes]:
    """The floor client's requests: ``request(number)``, a chat completion of about the judge's size
    with its reply schema in the system message (the fake server answers it with a grade). Built once:
    a call only puts its number in, so the floor's own client costs as little as it can."""
    parts = urlsplit(url)
    user = ("how do I store maize? chunk: dry the grain to 13% moisture. " * 30)[:FLOOR_TEXT]
    system = "Grade the chunk.\nReply schema: " + json.dumps(FLOOR_SCHEMA)
    body = json.dumps(
        {
            "model": "fake-judge",
            "messages": [{"role": "system", "content": system}, {"role": "user", "content": user}],
            "temperature": 0,
        }
    ).encode()
    head = (
        f"POST {parts.path.rstrip('/')}/chat/completions HTTP/1.1\r\nHost: {parts.netloc}\r\n"
        f"Content-Type: application/json\r\nAuthorization: Bearer bench\r\n"
        f"Content-Length: {len(body)}\r\nX-Denominator-Call: floor/"
    ).encode()
    return lambda number: b"%s%d/-/0\r\n\r\n%s" % (head, number, body)


async def floor_calls(url: str, calls: int, concurrency: int) -> float:
    """``calls`` requests over ``concurrency`` kept-alive connections, each slot sending its next
    request as soon as its reply is read; seconds from the first connection to the last reply."""
    import asyncio

    parts = urlsplit(url)
    request = floor_requests(url)
    numbers = iter(range(calls))

    async def slot() -> None:
        reader, writer = await asyncio.open_connection(parts.hostname, parts.port)
        try:
            for number in numbers:
                writer.write(request(number))
                head = await reader.readuntil(b"\r\n\r\n")
                if not head.startswith(b"HTTP/1.1 200"):
                    raise SystemExit(f"the floor client's call {number}: {head.splitlines()[0]!r}")
                length = next(
                    int(line.split(b":", 1)[1])
                    for line in head.split(b"\r\n")
                    if line.lower().startswith(b"content-length:")
                )
                await reader.readexactly(length)
        finally:
            writer.close()

    started = time.monotonic()
    await asyncio.gather(*(slot() for _ in range(concurrency)))
    return time.monotonic() - started


def floor(url: str, calls: int, concurrency: int) -> tuple[float, float, float]:
    """One floor round in a process of its own: (wall seconds start to exit, the calls' own seconds,
    the process's CPU seconds)."""
    command = [sys.executable, str(Path(__file__).resolve()), "--floor-client", url]
    command += ["--calls", str(calls), "--concurrency", str(concurrency)]
    started = time.monotonic()
    child = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    assert child.stdout is not None
    said = child.stdout.read()
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.monotonic() - started
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"the floor client failed: {said[-500:]}")
    return wall, float(said.split()[0]), usage.ru_utime + usage.ru_stime


def received(log: Path) -> int:
    return sum(json.loads(line)["event"] == "received" for line in log.read_text().splitlines())


def median(rounds: list[Round], field: str) -> float:
    return statistics.median(float(getattr(r, field)) for r in rounds)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--peer", type=Path, help="another checkout, run in alternating rounds")
    parser.add_argument(
        "--no-floor", action="store_true", help="leave out the server's floor (a plain client)"
    )
    # one floor round, in a process of its own (the bench runs this file so)
    parser.add_argument("--floor-client", metavar="URL", help=argparse.SUPPRESS)
    parser.add_argument("--out", default=str(ROOT / "bench" / "results" / "judge.json"))
    args = parser.parse_args(argv)
    if args.floor_client:
        import asyncio

        print(f"{asyncio.run(floor_calls(args.floor_client, args.calls, args.concurrency)):.6f}")
        return 0
    ideal = args.calls * args.latency / args.concurrency
    sides = {"this": ROOT} | ({"peer": args.peer.resolve()} if args.peer else {})
    cores = os.cpu_count()
    with tempfile.TemporaryDirectory(prefix="denominator-bench-") as tmp:
        folder = Path(tmp)
        base = folder / "base.db"
        build(base, args.calls)
        log = folder / "calls.jsonl"
        server, url = start_server(args.latency, log)
        rounds: list[Round] = []
        floors: list[tuple[float, float, float, float]] = []  # (wall, calls' own, CPU, load)
        try:
            for number in range(args.rounds):
                # alternate which side goes first, so neither always follows the other
                order = list(sides.items()) if number % 2 == 0 else list(reversed(sides.items()))
                if not args.no_floor:  # the floor first in even rounds, last in odd ones
                    order = [("floor", ROOT), *order] if number % 2 == 0 else [*order, ("floor", ROOT)]
                for side, cwd in order:
                    if side == "floor":
                        before = received(log)
                        f_wall, f_calls, f_cpu = floor(url, args.calls, args.concurrency)
                        if received(log) - before != args.calls:
                            raise SystemExit(f"the floor client made {received(log) - before} calls")
                        floors.append((f_wall, f_calls, f_cpu, os.getloadavg()[0]))
                        print(
                            f"round {number + 1} floor (a plain HTTP client, no SDK): {args.calls} calls in "
                            f"{f_wall:.2f} s start to exit = {ideal / f_wall:.3f} of ideal (the calls alone "
                            f"{f_calls:.2f} s); its CPU {f_cpu:.2f} s (load {floors[-1][3]:.2f} on {cores} cores)",
                            flush=True,
                        )
                        continue
                    db = folder / f"{side}{number}.db"
                    shutil.copy(base, db)
                    before, server_before = received(log), cpu_of(server.pid)
                    out, wall, run, cpu = grade(
                        cwd, db, url, args.concurrency, folder / f"{side}{number}.out"
                    )
                    server_after = cpu_of(server.pid)
                    made = received(log) - before
                    if f"{args.calls} calls made" not in out or made != args.calls:
                        raise SystemExit(f"expected {args.calls} calls, the server received {made}: {out}")
                    spent = (
                        server_after - server_before
                        if server_after is not None and server_before is not None
                        else None
                    )
                    rounds.append(Round(side, wall, run, cpu, spent, os.getloadavg()[0]))
                    r = rounds[-1]
                    served = f", server CPU {r.server_cpu:.1f} s" if r.server_cpu is not None else ""
                    print(
                        f"round {number + 1} {side}: {args.calls} calls in {wall:.2f} s start to exit = "
                        f"{ideal / wall:.3f} of ideal (the run alone {run:.2f} s = {ideal / run:.3f}); "
                        f"client CPU {cpu:.2f} s = {cpu / args.calls * 1000:.2f} ms a call{served} "
                        f"(load {r.load:.2f} on {cores} cores)",
                        flush=True,
                    )
            before = received(log)
            out, again_wall, _, again_cpu = grade(
                ROOT, folder / "this0.db", url, args.concurrency, folder / "again.out"
            )
            again = received(log) - before
        finally:
            server.terminate()
            server.wait(timeout=10)
    mine = [r for r in rounds if r.side == "this"]
    wall, cpu = median(mine, "wall"), median(mine, "cpu")
    share, per_call = ideal / wall, cpu / args.calls * 1000
    loads = [r.load for r in mine]
    print(
        f"judge: {args.calls} calls, latency {args.latency * 1000:.0f} ms, concurrency {args.concurrency}, "
        f"start to exit: median {wall:.2f} s against the ideal {ideal:.2f} s = {share:.3f} of ideal "
        f"(target >= {SHARE_TARGET}; rounds {min(ideal / r.wall for r in mine):.3f}-"
        f"{max(ideal / r.wall for r in mine):.3f}; the run alone {ideal / median(mine, 'run'):.3f}); "
        f"client CPU median {cpu:.2f} s = {per_call:.2f} ms a call (target <= {CPU_TARGET_MS:g}), "
        f"over {len(mine)} rounds, load {min(loads):.2f}-{max(loads):.2f} on {cores} cores "
        "(the client and the local server share the machine: a loaded machine reads lower)"
    )
    floor_share = None
    if floors:
        floor_wall = statistics.median(f[0] for f in floors)
        floor_share = ideal / floor_wall
        print(
            f"the server's floor (a plain HTTP client, no SDK, in the same rounds): median {floor_wall:.2f} s "
            f"start to exit = {floor_share:.3f} of ideal (rounds {min(ideal / f[0] for f in floors):.3f}-"
            f"{max(ideal / f[0] for f in floors):.3f}, load {min(f[3] for f in floors):.2f}-"
            f"{max(f[3] for f in floors):.2f}): about the most a client reaches here; the judge reached "
            f"{floor_wall / wall:.3f} of it"
        )
    if args.peer:
        peer = [r for r in rounds if r.side == "peer"]
        print(
            f"peer ({args.peer}): median {median(peer, 'wall'):.2f} s = {ideal / median(peer, 'wall'):.3f} of "
            f"ideal, client CPU {median(peer, 'cpu'):.2f} s = {median(peer, 'cpu') / args.calls * 1000:.2f} ms "
            f"a call; this / peer: wall {wall / median(peer, 'wall'):.3f}x, CPU {cpu / median(peer, 'cpu'):.3f}x "
            f"(medians of alternating rounds, load {min(r.load for r in rounds):.2f}-"
            f"{max(r.load for r in rounds):.2f})"
        )
    print(
        f"the same job again: {again} calls made ({again_wall:.1f} s, {again_cpu:.2f} s CPU, interpreter "
        f"start included; load {os.getloadavg()[0]:.2f})"
    )
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(
        json.dumps(
            {
                "calls": args.calls,
                "latency": args.latency,
                "concurrency": args.concurrency,
                "ideal_s": ideal,
                "rounds": [asdict(r) for r in rounds],
                "median_share": share,
                "median_cpu_ms_per_call": per_call,
                "second_run_calls": again,
                "floor_rounds": [{"wall": w, "calls": c, "cpu": u, "load": lo} for w, c, u, lo in floors],
                "median_floor_share": floor_share,
            },
            indent=1,
        )
    )
    return 0 if share >= SHARE_TARGET and per_call <= CPU_TARGET_MS and again == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
