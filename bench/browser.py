"""Key press to next item shown, in a real browser, beside plain Streamlit: the chunk, trace and
compare pages, on SQLite and on PostgreSQL, with the machine's load beside each figure.

For each backend, starts two servers (``streamlit run``, headless, 127.0.0.1, free ports): the
app on a fresh demo database (``python -m denominator demo``, single-user local mode; for
PostgreSQL a new database on a throwaway server from Debian's package, tests/postgres_server.py)
and bench/baseline_app.py, a fragment that only increments a counter on a key-shortcut button.
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

Reports p50 and p90 of each page and of the baseline beside it, their ratio, and the load
average (1 min) before and after each page, over the machine's cores (the bench's own browser,
servers and database add about 2). Exit 1 when a p50 ratio is above 1.5x on a quiet machine
(the load before the bench started at most the number of cores, after waiting up to 2 minutes
for it to fall there) or when the machine was loaded then (no verdict without evidence); the aim
is 1.3x.

    python bench/browser.py [--presses 40] [--block 5] [--runs 1] [--backends sqlite,postgresql]
                            [--pages chunk,trace,pair] [--out bench/results/browser.md]
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
BOUND = 1.5  # p50 of the app over p50 of the baseline: above it, on a quiet machine, the bench fails
AIM = 1.3  # where it should be
TIMEOUT_MS = 30_000
PAUSE_S = 0.3  # between the end of one run and the next press
SETTLE_S = 120.0  # the longest wait for the load to settle before the bench starts

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
    latencies_ms: list[float] = field(default_factory=list)


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
def served(script: str, env: dict[str, str]) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """:func:`serve`, with the server's process beside its URL (its CPU time is read from it)."""
    port = free_port()
    command = [sys.executable, "-m", "streamlit", "run", script, "--server.headless", "true"]
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


def bench_annotators(db: str, presses: int) -> tuple[list[str], int]:
    """``bench1`` .. ``benchN``, each given ann's queue of chunk items in ann's order, enough
    of them for ``presses`` timed presses (all but the last item of each queue: the press on
    it shows "nothing left", not an item); the names and the queue's length."""
    with Store(db) as store:
        order: list[int] = []
        while (item := next_item(store, "ann", skipped=order, kind="chunk")) is not None:
            order.append(item["item_id"])
        names = [f"bench{n}" for n in range(1, math.ceil(presses / (len(order) - 1)) + 1)]
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
    the number of cores: the 1-minute average still carries a bench that ran just before (``make
    bench`` runs 16 writers before this one). A machine still loaded then gets no verdict."""
    deadline = time.monotonic() + longest
    if load() > cores:
        print(
            f"waiting up to {longest:.0f} s for the load ({load():.1f}) to fall to {cores}", file=sys.stderr
        )
    while load() > cores and time.monotonic() < deadline:
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


def measure(
    backend: str, pages: list[str], presses: int, block: int
) -> list[tuple[Target, Target, float, float]]:
    """(app, baseline, load before, load after) for each page, on a fresh store on ``backend``."""
    from playwright.sync_api import sync_playwright

    results = []
    with store_at(backend) as db:
        subprocess.run(
            [sys.executable, "-m", "denominator", "demo", "--db", db],
            cwd=ROOT,
            check=True,
            capture_output=True,
        )
        names, queue = bench_annotators(db, presses)
        bench_traces(db, presses + 2)
        app_env = {"DENOMINATOR_DB": db, "DENOMINATOR_ANNOTATOR": names[0]}
        with (
            serve("denominator/app.py", app_env) as app_url,
            serve("bench/baseline_app.py", {}) as baseline_url,
            sync_playwright() as playwright,
        ):
            browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
            for kind in pages:
                page_spec = PAGES[kind]
                app = Target(
                    f"{backend} {kind}", f"{app_url}{page_spec.path}", page_spec.selector, page_spec.key
                )
                baseline = Target("baseline", baseline_url, ".st-key-counter", "1")
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
                before = load()
                labelled, annotator = 0, 0
                while len(app.latencies_ms) < presses:
                    for target in (app, baseline):
                        tab = tabs[target.name]
                        tab.bring_to_front()
                        for _ in range(min(block, presses - len(target.latencies_ms))):
                            if target is app and kind == "chunk" and labelled == queue - 1:
                                # the last item of a queue is followed by "nothing left", not an item
                                annotator += 1
                                sign_in_as(tab, names[annotator], queue)
                                labelled = 0
                            target.latencies_ms.append(press(tab, target))
                            if target is app:
                                labelled += 1
                results.append((app, baseline, before, load()))
                for tab in tabs.values():
                    tab.close()
            browser.close()
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--presses", type=int, default=40, help="timed presses on each page (default 40)")
    parser.add_argument("--block", type=int, default=5, help="presses on one page before the other's turn")
    parser.add_argument("--runs", type=int, default=1, help="whole measurements, each on fresh servers")
    parser.add_argument("--backends", default="sqlite,postgresql", help="sqlite, postgresql or both")
    parser.add_argument("--pages", default="chunk,trace,pair", help="among chunk, trace, pair")
    parser.add_argument("--out", default="bench/results/browser.md")
    args = parser.parse_args()
    backends = [b.strip() for b in args.backends.split(",") if b.strip()]
    pages = [p.strip() for p in args.pages.split(",") if p.strip()]
    if not CHROMIUM.exists():
        print(f"{CHROMIUM} is missing (apt-get install chromium)", file=sys.stderr)
        return 2
    if args.presses < 2 or args.block < 1 or args.runs < 1:
        print("--presses must be at least 2, --block and --runs at least 1", file=sys.stderr)
        return 2
    if not backends or set(backends) - {"sqlite", "postgresql"} or not pages or set(pages) - set(PAGES):
        print("--backends is among sqlite,postgresql and --pages among chunk,trace,pair", file=sys.stderr)
        return 2
    cores = os.cpu_count() or 1
    machine = settled(cores)  # before this bench starts anything: its own servers and browser load it too
    header = (
        "| run | page | app p50 / p90 (ms) | baseline p50 / p90 (ms) | app/baseline p50 | p90 "
        f"| load (1 min, {cores} cores) |"
    )
    rows, ratios = [header, "|---|---|---:|---:|---:|---:|---:|"], []
    print(header, flush=True)
    for run in range(1, args.runs + 1):
        for backend in backends:
            for app, baseline, before, after in measure(backend, pages, args.presses, args.block):
                p50 = [statistics.median(t.latencies_ms) for t in (app, baseline)]
                p90 = [percentile(t.latencies_ms, 0.9) for t in (app, baseline)]
                ratios.append(p50[0] / p50[1])
                row = (
                    f"| {run} | {app.name} | {p50[0]:.0f} / {p90[0]:.0f} | {p50[1]:.0f} / {p90[1]:.0f} "
                    f"| {p50[0] / p50[1]:.2f}x | {p90[0] / p90[1]:.2f}x | {before:.1f}-{after:.1f} |"
                )
                print(row, flush=True)
                rows.append(row)
    quiet = machine <= cores
    if not quiet:
        verdict = (
            f"no verdict: the machine was loaded before the bench started (load {machine:.1f} on "
            f"{cores} cores); the bound ({BOUND}x) holds for a quiet machine"
        )
    elif max(ratios) > BOUND:
        verdict = f"FAIL: p50 ratio up to {max(ratios):.2f}x, above the bound {BOUND}x (aim {AIM}x)"
    else:
        verdict = (
            f"ok: p50 ratio {min(ratios):.2f}x-{max(ratios):.2f}x over {len(ratios)} page(s) and run(s), "
            f"at most {BOUND}x (aim {AIM}x: {'met' if max(ratios) <= AIM else 'missed'})"
        )
    verdict = f"load before the bench: {machine:.1f} on {cores} cores; " + verdict
    print(verdict, flush=True)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    command = (
        f"python bench/browser.py --presses {args.presses} --block {args.block} --runs {args.runs} "
        f"--backends {','.join(backends)} --pages {','.join(pages)}"
    )
    out.write_text(
        "# Browser: key press to next item shown, beside plain Streamlit\n\n"
        f"- command: `{command}`\n"
        f"- date: {time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime())}\n\n"
        + "\n".join(rows)
        + f"\n\n{verdict}\n"
    )
    return 0 if quiet and max(ratios) <= BOUND else 1


if __name__ == "__main__":
    sys.exit(main())
