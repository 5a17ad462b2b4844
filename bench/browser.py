"""Key press to next item shown, in a real browser, beside plain Streamlit: the chunk, trace and
compare pages, on SQLite and on PostgreSQL, with the machine's load beside each figure.

For each backend, starts two servers (headless, 127.0.0.1, free ports): the app as ``denominator
serve`` runs it (``python -m denominator.server run``: Streamlit with the server's deadlines and
connection cap) on a fresh demo database (``python -m denominator demo``, single-user local mode; for
PostgreSQL a new database on a throwaway server from Debian's package, tests/postgres_server.py)
and bench/baseline_app.py (``streamlit run``), a fragment that only increments a counter on a key-shortcut button.
One Chromium (Debian's) drives both, in blocks that take turns (``--block`` presses on an app
page, then as many on the baseline, ...), so a noisy moment on the shared machine hits both.
Each press is timed inside the page: ``performance.now()`` at the ``keydown`` (a capturing
listener) to the first DOM mutation after which the watched text differs (the item's texts;
the counter), seen by a ``MutationObserver``. The next press waits for the run to end and a
short pause, as a person would.

Items: the demo gives each annotator 24 chunks; the bench adds annotators ``bench1``,
``bench2``, ... with ann's queue (the store's own calls) and moves to the next one in the
sidebar when a queue is done (that switch is not timed). For traces and pairs it imports
``--presses`` + 2 synthetic questions, each answered by two systems (distinct traces, open to
anyone), and a pair item per question.

A round is one block on the app page and one on the baseline (their order alternates from round
to round); each round gives the ratio of the two blocks' medians, with the 1-minute load average
and the CPU time each server process spent per press in that round (``/proc``: user + system).
Reports, per page and backend, the median over rounds of that ratio (and of each side's p50, its
p90 over all presses, the CPU per press), the load range over its rounds, and each round's line
in ``--out``. The machine is shared (the bench's own browser, servers and database add about 2 to
the load): the figure is a ratio against a peer measured in the same rounds, never a bare time.
Exit 1 when any page's median ratio is above 1.5x, whatever the load (printed beside each
figure); the aim is 1.3x. ``--settle S`` first waits up to S seconds for the load to fall to the
number of cores (default 0: no wait).

``--baseline pane`` puts bench/pane_baseline_app.py in the baseline's place: plain Streamlit drawing the
page's own elements (texts, grade buttons, the rest of the pane) with no store; the ratio is then the
cost of the app's own work alone, and the bound is not applied (it is held against the counter).

    python bench/browser.py [--presses 40] [--block 5] [--runs 1] [--backends sqlite,postgresql]
                            [--pages chunk,trace,pair] [--settle 0] [--baseline counter|pane]
                            [--out bench/results/browser.md]
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from annotation.pooling import pool_pairs  # noqa: E402
from annotation.store import Store  # noqa: E402
from annotation.views import next_item  # noqa: E402

CHROMIUM = Path("/usr/bin/chromium")  # Debian's Chromium, never a downloaded browser
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
# the baselines (``--baseline``): a counter (the bound's), and the page's own elements drawn by plain
# Streamlit (what the app's own work costs, the drawing taken out)
BASELINES = {"counter": "bench/baseline_app.py", "pane": "bench/pane_baseline_app.py"}
BOUND = 1.5  # the median over rounds of app p50 / baseline p50: above it the bench fails
AIM = 1.3  # where it should be
TIMEOUT_MS = 30_000
PAUSE_S = 0.3  # between the end of one run and the next press
SETTLE_S = 120.0  # settled()'s longest wait by default (bench/metrics_page.py); this bench: --settle
TICKS = os.sysconf("SC_CLK_TCK")  # /proc's unit of CPU time

# Armed before each press: the watched text now, then the keydown time and the time of the
# first mutation after which the text differs. The listener captures on window, so it runs
# before Streamlit's own shortcut handler.
WATCH = """
window.__bench = {
  arm(selector) {
    const bench = this;
    const text = () => (document.querySelector(selector) || {}).textContent;
    bench.before = text(); bench.pressed = null; bench.shown = null;
    if (bench.observer) bench.observer.disconnect();
    window.addEventListener("keydown", (e) => { bench.pressed = performance.now(); },
                            {capture: true, once: true});
    bench.observer = new MutationObserver(() => {
      const now = text();
      if (bench.pressed !== null && bench.shown === null && now && now !== bench.before) {
        bench.shown = performance.now();
        bench.after = now;
        bench.observer.disconnect();
      }
    });
    bench.observer.observe(document.body, {subtree: true, childList: true, characterData: true});
  },
};
"""
IDLE = "[data-testid='stApp'][data-test-script-state='notRunning']"


@dataclass
class Target:
    name: str
    url: str
    selector: str  # the text that changes when the next item is shown
    key: str
    pid: int  # the server's process: its CPU time per press
    latencies_ms: list[float] = field(default_factory=list)


@dataclass
class Round:
    """One block of presses on the app and one on the baseline, back to back."""

    app_ms: list[float]
    baseline_ms: list[float]
    app_cpu_ms: float  # the app server's CPU time per press in its block
    baseline_cpu_ms: float
    load: float  # the 1-minute load average at the round's end

    @property
    def ratio(self) -> float:
        return statistics.median(self.app_ms) / statistics.median(self.baseline_ms)


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of the process so far (``/proc/PID/stat``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextlib.contextmanager
def serve(script: str, env: dict[str, str]) -> Iterator[str]:
    """``streamlit run SCRIPT`` as `make run` starts it, on a free port; its URL."""
    with served(script, env) as (url, _process):
        yield url


@contextlib.contextmanager
def served(
    script: str, env: dict[str, str], launcher: str = "streamlit"
) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """:func:`serve`, with the server's process beside its URL (its CPU time is read from it).
    ``launcher``: the module that runs ``run SCRIPT``: ``streamlit`` itself for the bare app,
    ``denominator.server`` for the product's (its deadlines and connection cap, as ``denominator
    serve`` and ``make run`` start it)."""
    port = free_port()
    command = [sys.executable, "-m", launcher, "run", script, "--server.headless", "true"]
    command += ["--server.address", "127.0.0.1", "--server.port", str(port)]
    command += ["--server.fileWatcherType", "none"]
    env = {**os.environ, "STREAMLIT_BROWSER_GATHER_USAGE_STATS": "false", **env}
    with tempfile.TemporaryFile(mode="w+") as log:  # a file: a full pipe would block the server
        process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
        try:
            url = f"http://127.0.0.1:{port}"
            deadline = time.monotonic() + 60
            while True:
                if process.poll() is not None:
                    log.seek(0)
                    raise SystemExit(f"{script}: the server exited with {process.returncode}:\n{log.read()}")
                try:
                    with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as response:
                        if response.status == 200:
                            break
                except (urllib.error.URLError, ConnectionError, TimeoutError):
                    pass
                if time.monotonic() > deadline:
                    raise SystemExit(f"{script}: the server did not answer within 60 s")
                time.sleep(0.2)
            yield url, process
        finally:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=10)


def bench_annotators(db: str, presses: int, block: int) -> tuple[list[str], int]:
    """``bench1`` .. ``benchN``, each given ann's queue of chunk items in ann's order, enough
    of them for ``presses`` timed presses in whole blocks of ``block`` (within all but the last
    item of each queue: the press on it shows "nothing left", not an item); the names and the
    queue's length."""
    with Store(db) as store:
        order: list[int] = []
        while (item := next_item(store, "ann", skipped=order, kind="chunk")) is not None:
            order.append(item["item_id"])
        per_name = (len(order) - 1) // block * block
        if per_name == 0:
            raise SystemExit(f"--block {block} is longer than a chunk queue ({len(order) - 1} presses)")
        names = [f"bench{n}" for n in range(1, math.ceil(presses / per_name) + 1)]
        ids = {name: store.annotator_id(name) for name in names}
        store.assign_many(
            (item, ids[name], position) for name in names for position, item in enumerate(order)
        )
    return names, len(order)


def bench_traces(db: str, questions: int) -> None:
    """``questions`` synthetic questions, each answered by systems ``bench-a`` and ``bench-b``
    (distinct traces: open trace items) and a pair item per question."""
    words = "maize beans store dry weevil sack silo moisture harvest sun shade bag".split()
    traces = []
    for q in range(questions):
        question = f"Bench question {q}: how long does {words[q % len(words)]} keep?"
        for system in ("bench-a", "bench-b"):
            answer = " ".join(words[(q + k + len(system)) % len(words)] for k in range(12))
            traces.append(
                {
                    "id": f"bench-{system}-{q}",
                    "query_id": f"bench-q{q}",
                    "system": system,
                    "question": question,
                    "contexts": [f"{system} context {q}.{k}: " + " ".join(words) for k in range(3)],
                    "answer": f"{system} says: {answer}.",
                }
            )
    with Store(db) as store:
        store.import_queries({f"bench-q{q}": f"Bench question {q}" for q in range(questions)})
        store.import_traces(traces)
        pool_pairs(store, "bench-a", "bench-b")


def percentile(values: list[float], share: float) -> float:
    """The nearest-rank percentile: the smallest value with at least ``share`` of them at or below."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(share * len(ordered)) - 1)]


def press(page, target: Target) -> float:
    """One timed key press: milliseconds from keydown to the next item in the DOM."""
    page.evaluate("selector => window.__bench.arm(selector)", target.selector)
    page.keyboard.press(target.key)
    page.wait_for_function("() => window.__bench.shown !== null", timeout=TIMEOUT_MS)
    latency = page.evaluate("() => window.__bench.shown - window.__bench.pressed")
    page.locator(IDLE).wait_for(state="attached", timeout=TIMEOUT_MS)
    time.sleep(PAUSE_S)
    return latency


def sign_in_as(page, name: str, queue: int) -> None:
    """Type the annotator's name in the sidebar (local mode) and wait for their empty queue."""
    box = page.get_by_label("annotator")
    box.fill(name)
    box.press("Enter")
    main = page.locator("[data-testid='stMain']").first
    main.get_by_text(f"0 / {queue} in this batch labelled by {name}").wait_for(timeout=TIMEOUT_MS)
    page.locator(IDLE).wait_for(state="attached", timeout=TIMEOUT_MS)
    page.mouse.click(650, 30)  # the focus off the text box: keys go to the shortcuts


@dataclass(frozen=True)
class Page:
    kind: str
    path: str  # the app's page
    selector: str  # the item's texts
    key: str  # a grade's shortcut


PAGES = {
    "chunk": Page("chunk", "/label", ".st-key-item-chunk", "1"),
    "trace": Page("trace", "/traces", ".st-key-item-trace", "1"),
    "pair": Page("pair", "/compare", ".st-key-item-pair", "a"),
}


def load() -> float:
    """The 1-minute load average."""
    return os.getloadavg()[0]


def settled(cores: int, longest: float = SETTLE_S) -> float:
    """The load before the bench starts, after waiting up to ``longest`` seconds for it to fall to
    the number of cores (the 1-minute average still carries a bench that ran just before)."""
    deadline = time.monotonic() + longest
    if longest > 0 and load() > cores:
        print(
            f"waiting up to {longest:.0f} s for the load ({load():.1f}) to fall to {cores}", file=sys.stderr
        )
    while longest > 0 and load() > cores and time.monotonic() < deadline:
        time.sleep(5)
    return load()


@contextlib.contextmanager
def store_at(backend: str) -> Iterator[str]:
    """A fresh demo store on ``backend``: its path or URL."""
    if backend == "sqlite":
        with tempfile.TemporaryDirectory(prefix="denominator-bench-") as tmp:
            yield str(Path(tmp) / "demo.db")
        return
    from tests.postgres_server import PostgresServer, missing_reason

    reason = missing_reason()
    if reason:
        raise SystemExit(f"PostgreSQL: {reason} (or --backends sqlite)")
    server = PostgresServer(durable=True).start()
    try:
        yield server.database()
    finally:
        server.stop()


@dataclass
class Measured:
    """One page on one backend: its rounds."""

    backend: str
    kind: str
    rounds: list[Round]
    load_before: float

    @property
    def ratio(self) -> float:
        """The median over rounds of app p50 / baseline p50 (each round's own)."""
        return statistics.median(r.ratio for r in self.rounds)

    def row(self, run: int) -> str:
        app = [ms for r in self.rounds for ms in r.app_ms]
        base = [ms for r in self.rounds for ms in r.baseline_ms]
        p50 = [
            statistics.median(statistics.median(getattr(r, f)) for r in self.rounds)
            for f in ("app_ms", "baseline_ms")
        ]
        cpu = [
            statistics.median(getattr(r, f) for r in self.rounds) for f in ("app_cpu_ms", "baseline_cpu_ms")
        ]
        loads = [self.load_before, *(r.load for r in self.rounds)]
        return (
            f"| {run} | {self.backend} {self.kind} | {len(self.rounds)} | {p50[0]:.0f} / {percentile(app, 0.9):.0f} "
            f"| {p50[1]:.0f} / {percentile(base, 0.9):.0f} | {cpu[0]:.1f} / {cpu[1]:.1f} "
            f"| {self.ratio:.2f}x | {min(r.ratio for r in self.rounds):.2f}x-{max(r.ratio for r in self.rounds):.2f}x "
            f"| {min(loads):.1f}-{max(loads):.1f} |"
        )

    def round_lines(self, run: int) -> list[str]:
        return [
            f"| {run} | {self.backend} {self.kind} | {n} | {statistics.median(r.app_ms):.0f} "
            f"| {statistics.median(r.baseline_ms):.0f} | {r.app_cpu_ms:.1f} / {r.baseline_cpu_ms:.1f} "
            f"| {r.ratio:.2f}x | {r.load:.1f} |"
            for n, r in enumerate(self.rounds, start=1)
        ]


def measure(
    backend: str, pages: list[str], presses: int, block: int, baseline_name: str = "counter"
) -> list[Measured]:
    """Each page's rounds, on a fresh store on ``backend``, beside the baseline ``baseline_name``
    (:data:`BASELINES`)."""
    from playwright.sync_api import sync_playwright

    results = []
    with store_at(backend) as db:
        subprocess.run(
            [sys.executable, "-m", "denominator", "demo", "--db", db],
            cwd=ROOT,
            check=True,
            capture_output=True,
        )
        names, queue = bench_annotators(db, presses, block)
        bench_traces(db, presses + 2)
        app_env = {"DENOMINATOR_DB": db, "DENOMINATOR_ANNOTATOR": names[0]}
        with (
            served("denominator/app.py", app_env, "denominator.server") as (app_url, app_server),
            served(BASELINES[baseline_name], {}) as (baseline_url, baseline_server),
            sync_playwright() as playwright,
        ):
            browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
            labelled, annotator = 0, 0  # the chunk page's place in the bench annotators' queues
            for kind in pages:
                page_spec = PAGES[kind]
                app = Target(
                    f"{backend} {kind}",
                    f"{app_url}{page_spec.path}",
                    page_spec.selector,
                    page_spec.key,
                    app_server.pid,
                )
                baseline_page = f"{baseline_url}/?kind={kind}" if baseline_name == "pane" else baseline_url
                baseline = Target("baseline", baseline_page, ".st-key-counter", "1", baseline_server.pid)
                tabs = {}
                for target, ready in ((app, "Undo the last label (u)"), (baseline, "Increment (1)")):
                    tab = browser.new_page(viewport={"width": 1300, "height": 900})
                    tab.add_init_script(WATCH)
                    tab.goto(target.url)
                    tab.locator("[data-testid='stMain']").first.get_by_text(ready).wait_for(
                        timeout=TIMEOUT_MS
                    )
                    tab.locator(IDLE).wait_for(state="attached", timeout=TIMEOUT_MS)
                    tab.mouse.click(650, 30)
                    tabs[target.name] = tab
                measured = Measured(backend, kind, [], load())
                while len(app.latencies_ms) < presses:
                    count = min(block, presses - len(app.latencies_ms))
                    blocks: dict[str, tuple[list[float], float]] = {}
                    order = (app, baseline) if len(measured.rounds) % 2 == 0 else (baseline, app)
                    for target in order:  # the first to go alternates: neither always follows the other
                        tab = tabs[target.name]
                        tab.bring_to_front()
                        if target is app and kind == "chunk" and labelled + count > queue - 1:
                            # the last item of a queue is followed by "nothing left", not an item
                            annotator += 1
                            sign_in_as(tab, names[annotator], queue)
                            labelled = 0
                        cpu, times = cpu_seconds(target.pid), []
                        for _ in range(count):
                            times.append(press(tab, target))
                        blocks[target.name] = (times, (cpu_seconds(target.pid) - cpu) * 1000 / count)
                        target.latencies_ms += times
                        if target is app and kind == "chunk":
                            labelled += count
                    measured.rounds.append(
                        Round(
                            blocks[app.name][0],
                            blocks[baseline.name][0],
                            blocks[app.name][1],
                            blocks[baseline.name][1],
                            load(),
                        )
                    )
                results.append(measured)
                for tab in tabs.values():
                    tab.close()
            browser.close()
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--presses", type=int, default=40, help="timed presses on each page (default 40)")
    parser.add_argument("--block", type=int, default=5, help="presses on one page in a round (default 5)")
    parser.add_argument("--runs", type=int, default=1, help="whole measurements, each on fresh servers")
    parser.add_argument("--backends", default="sqlite,postgresql", help="sqlite, postgresql or both")
    parser.add_argument("--pages", default="chunk,trace,pair", help="among chunk, trace, pair")
    parser.add_argument("--settle", type=float, default=0.0, help="wait up to S s for a quiet machine first")
    parser.add_argument("--out", default="bench/results/browser.md")
    parser.add_argument(
        "--baseline",
        default="counter",
        choices=sorted(BASELINES),
        help="counter (the bound's: a key that increments a counter) or pane (the page's own elements, "
        "drawn by plain Streamlit: the app's work alone; the bound is not applied)",
    )
    args = parser.parse_args()
    backends = [b.strip() for b in args.backends.split(",") if b.strip()]
    pages = [p.strip() for p in args.pages.split(",") if p.strip()]
    if not CHROMIUM.exists():
        print(f"{CHROMIUM} is missing (apt-get install chromium)", file=sys.stderr)
        return 2
    if args.presses < 2 or args.block < 1 or args.runs < 1 or args.settle < 0:
        print(
            "--presses must be at least 2, --block and --runs at least 1, --settle at least 0",
            file=sys.stderr,
        )
        return 2
    if not backends or set(backends) - {"sqlite", "postgresql"} or not pages or set(pages) - set(PAGES):
        print("--backends is among sqlite,postgresql and --pages among chunk,trace,pair", file=sys.stderr)
        return 2
    cores = os.cpu_count() or 1
    machine = settled(cores, args.settle)  # before this bench starts its own servers and browser
    header = (
        "| run | page | rounds | app p50 / p90 (ms) | baseline p50 / p90 (ms) | CPU per press app / baseline (ms) "
        f"| app/baseline p50, median over rounds | range over rounds | load (1 min, {cores} cores) |"
    )
    rows = [header, "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    round_rows = [
        f"| run | page | round | app p50 (ms) | baseline p50 (ms) | CPU per press app / baseline (ms) | ratio | load (1 min, {cores} cores) |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    measured: list[Measured] = []
    print(f"load before the bench: {machine:.1f} on {cores} cores", flush=True)
    print(header, flush=True)
    for run in range(1, args.runs + 1):
        for backend in backends:
            for page in measure(backend, pages, args.presses, args.block, args.baseline):
                measured.append(page)
                rows.append(page.row(run))
                round_rows += page.round_lines(run)
                print(rows[-1], flush=True)
    worst = max(measured, key=lambda m: m.ratio)
    if args.baseline != "counter":
        verdict = (
            f"beside the pane drawn by plain Streamlit: median ratio {min(m.ratio for m in measured):.2f}x-"
            f"{worst.ratio:.2f}x over {len(measured)} page(s) and run(s) (the app's own work; the bound, "
            f"{BOUND}x, is held against --baseline counter)"
        )
    elif worst.ratio > BOUND:
        verdict = (
            f"FAIL: {worst.backend} {worst.kind} at {worst.ratio:.2f}x (median over rounds), above the bound "
            f"{BOUND}x (aim {AIM}x)"
        )
    else:
        low = min(m.ratio for m in measured)
        verdict = (
            f"ok: median ratio {low:.2f}x-{worst.ratio:.2f}x over {len(measured)} page(s) and run(s), at most "
            f"{BOUND}x (aim {AIM}x: {'met' if worst.ratio <= AIM else 'missed'})"
        )
    loads = [x for m in measured for x in (m.load_before, *(r.load for r in m.rounds))]
    verdict = (
        f"load before the bench {machine:.1f}, during {min(loads):.1f}-{max(loads):.1f} on {cores} cores; "
        + verdict
    )
    print(verdict, flush=True)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    command = (
        f"python bench/browser.py --presses {args.presses} --block {args.block} --runs {args.runs} "
        f"--backends {','.join(backends)} --pages {','.join(pages)} --baseline {args.baseline}"
    )
    out.write_text(
        "# Browser: key press to next item shown, beside plain Streamlit\n\n"
        f"- command: `{command}`\n"
        f"- date: {time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime())}\n\n"
        + "\n".join(rows)
        + f"\n\n{verdict}\n\nEach round:\n\n"
        + "\n".join(round_rows)
        + "\n"
    )
    return 0 if worst.ratio <= BOUND or args.baseline != "counter" else 1


if __name__ == "__main__":
    sys.exit(main())
