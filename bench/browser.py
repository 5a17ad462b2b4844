"""Key press to next item shown, in a real browser, beside plain Streamlit.

Starts two servers (``streamlit run``, headless, 127.0.0.1, free ports): the app on a fresh
copy of the demo database (``python -m annotation demo``, single-user local mode) and
bench/baseline_app.py, a fragment that only increments a counter on a key-shortcut button.
One Chromium (Debian's) drives both, in blocks that take turns (``--block`` presses on the
app's *Label chunks*, then as many on the baseline, ...), so a noisy moment on the shared
machine hits both. Each press is timed inside the page: ``performance.now()`` at the
``keydown`` (a capturing listener) to the first DOM mutation after which the watched text
differs (the item's query and chunk; the counter), seen by a ``MutationObserver``. The next
press waits for the run to end and a short pause, as a person would.

Reports p50 and p90 of each and the ratios app/baseline; target p50 ratio <= 1.3 (exit 1
above it). The demo gives each annotator 24 chunks; the bench adds annotators ``bench1``,
``bench2``, ... with ann's queue (the store's own calls) and moves to the next one in the
sidebar when a queue is done (that switch is not timed).

    python bench/browser.py [--presses 50] [--block 5] [--runs 1] [--out bench/results/browser.md]
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

from annotation.pooling import next_item  # noqa: E402
from annotation.store import Store  # noqa: E402

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
TARGET = 1.3  # p50 of the app over p50 of the baseline
TIMEOUT_MS = 30_000
PAUSE_S = 0.3  # between the end of one run and the next press

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
            yield url
        finally:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=10)


def bench_annotators(db: Path, presses: int) -> tuple[list[str], int]:
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


def measure(presses: int, block: int) -> tuple[Target, Target]:
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory(prefix="denominator-bench-") as tmp:
        db = Path(tmp) / "demo.db"
        subprocess.run(
            [sys.executable, "-m", "annotation", "demo", "--db", str(db)],
            cwd=ROOT,
            check=True,
            capture_output=True,
        )
        names, queue = bench_annotators(db, presses)
        app_env = {"DENOMINATOR_DB": str(db), "DENOMINATOR_ANNOTATOR": names[0]}
        with (
            serve("app.py", app_env) as app_url,
            serve("bench/baseline_app.py", {}) as baseline_url,
            sync_playwright() as playwright,
        ):
            browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
            app = Target("app", f"{app_url}/label", ".st-key-item-chunk", "1")
            baseline = Target("baseline", baseline_url, ".st-key-counter", "1")
            pages = {}
            for target, ready in ((app, "Undo the last label (u)"), (baseline, "Increment (1)")):
                page = browser.new_page(viewport={"width": 1300, "height": 900})
                page.add_init_script(WATCH)
                page.goto(target.url)
                page.locator("[data-testid='stMain']").first.get_by_text(ready).wait_for(timeout=TIMEOUT_MS)
                page.locator(IDLE).wait_for(state="attached", timeout=TIMEOUT_MS)
                page.mouse.click(650, 30)
                pages[target.name] = page
            labelled, annotator = 0, 0
            while len(app.latencies_ms) < presses:
                for target in (app, baseline):
                    page = pages[target.name]
                    page.bring_to_front()
                    for _ in range(min(block, presses - len(target.latencies_ms))):
                        if target is app and labelled == queue - 1:
                            # the last item of a queue is followed by "nothing left", not an item
                            annotator += 1
                            sign_in_as(page, names[annotator], queue)
                            labelled = 0
                        target.latencies_ms.append(press(page, target))
                        if target is app:
                            labelled += 1
            browser.close()
    return app, baseline


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--presses", type=int, default=50, help="timed presses on each page (default 50)")
    parser.add_argument("--block", type=int, default=5, help="presses on one page before the other's turn")
    parser.add_argument("--runs", type=int, default=1, help="whole measurements, each on fresh servers")
    parser.add_argument("--out", default="bench/results/browser.md")
    args = parser.parse_args()
    if not CHROMIUM.exists():
        print(f"{CHROMIUM} is missing (apt-get install chromium)", file=sys.stderr)
        return 2
    if args.presses < 2 or args.block < 1 or args.runs < 1:
        print("--presses must be at least 2, --block and --runs at least 1", file=sys.stderr)
        return 2
    lines, ratios = [], []
    for run in range(1, args.runs + 1):
        app, baseline = measure(args.presses, args.block)
        p50 = {t.name: statistics.median(t.latencies_ms) for t in (app, baseline)}
        p90 = {t.name: percentile(t.latencies_ms, 0.9) for t in (app, baseline)}
        ratio50, ratio90 = p50["app"] / p50["baseline"], p90["app"] / p90["baseline"]
        ratios.append(ratio50)
        line = (
            f"run {run}: key press to next item shown over {args.presses} presses each: "
            f"app p50 {p50['app']:.0f} ms, p90 {p90['app']:.0f} ms; "
            f"baseline p50 {p50['baseline']:.0f} ms, p90 {p90['baseline']:.0f} ms; "
            f"app/baseline p50 {ratio50:.2f}x, p90 {ratio90:.2f}x (target p50 <= {TARGET}x)"
        )
        print(line, flush=True)
        lines.append(line)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    command = f"python bench/browser.py --presses {args.presses} --block {args.block} --runs {args.runs}"
    out.write_text(
        "# Browser: key press to next item shown, beside plain Streamlit\n\n"
        f"- command: `{command}`\n"
        f"- date: {time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime())}\n\n"
        + "".join(f"- {line}\n" for line in lines)
    )
    return 0 if max(ratios) <= TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
