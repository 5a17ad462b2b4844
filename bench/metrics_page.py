"""The Metrics page on a big upload, in a real browser, beside plain Streamlit receiving the same
files (issue #42, item 2), with the server's CPU time and the machine's load beside each figure.

The data: bench/make_data.py's seeded collection, ``--queries`` x ``--depth`` (default 10,000 x
200: a 71 MB TREC run, 4 MB of qrels). Each round uploads a run of new content (one line's run tag
carries the round's number), so the page computes it for the first time, as for a new user's file.

Two servers (``streamlit run``, headless, 127.0.0.1, free ports, as bench/browser.py starts them):
the app on a fresh demo database (``python -m denominator demo``, single-user local mode, as `make
run`), and bench/upload_baseline_app.py (two uploaders and a k input, nothing parsed). One
Chromium (Debian's) drives both; each round measures both, their order alternating, so a noisy
moment on the shared machine hits both. Per round, on the app's Metrics page (a new session):

- upload: the two files set in the browser, to the findings drawn and to the script run's end
  (above 500 queries the page's holes and check are drawn on request: not in the run);
  the baseline: to its "received" line and its run's end;
- k 10 -> 20: the k typed, to the audit's "Per query at k = 20" and to the run's end; the
  baseline: to its "Per query at k = 20" line;
- k 20 -> 10: back to inputs already computed (cached): to the run's end;
- upload again (a new session, the same files): to the findings and to the run's end.

Reports the median of each over the rounds, its ratio to the baseline's, the server's and the
browser's CPU time (user + system, /proc; the browser: every Chromium process below this one) and
the 1-minute load before and after. Then, in this process, where the
server's time goes on one upload: each section's call as the page makes it, wall and CPU.
Acceptance (#42): findings <= 3x the baseline's upload; k changed <= 1.5 s. Exit 1 when a bound is
missed on a quiet machine (the load before the bench at most the number of cores).

    python bench/metrics_page.py [--queries 10000] [--depth 200] [--rounds 3] [--no-sections]
                                 [--out bench/results/metrics_page.md]
"""

from __future__ import annotations

import argparse
import importlib.util
import io
import logging
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from browser import CHROMIUM, CHROMIUM_ARGS, load, served, settled  # noqa: E402

FINDINGS_BOUND = 3.0  # findings drawn / the baseline's upload
K_BOUND_S = 1.5  # a change of k alone, to the page's run ended
TIMEOUT_MS = 600_000
IDLE = "[data-testid='stApp'][data-test-script-state='notRunning']"
VIEWPORT = {"width": 1400, "height": 1000}
TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far (its threads included)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def browser_seconds() -> float:
    """User + system CPU time so far of this bench's Chromium: every live process below this one
    whose name starts with "chrom" (the browser, its renderers, its GPU and utility processes)."""
    parents: dict[int, int] = {}
    names: dict[int, str] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:  # gone since the listing
            continue
        name, rest = stat.split("(", 1)[1].rsplit(")", 1)
        parents[int(entry.name)], names[int(entry.name)] = int(rest.split()[1]), name
    ours = {os.getpid()}
    grew = True
    while grew:
        below = {pid for pid, parent in parents.items() if parent in ours} - ours
        grew = bool(below)
        ours |= below
    total = 0.0
    for pid in ours:
        if names.get(pid, "").startswith("chrom"):
            try:
                total += cpu_seconds(pid)
            except OSError:
                continue
    return total


@dataclass
class Step:
    """One timed step over the rounds: seconds to the first mark and to the end, the server's CPU."""

    name: str
    first: list[float] = field(default_factory=list)
    done: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)
    browser: list[float] = field(default_factory=list)  # Chromium's CPU over the step
    loads: list[float] = field(default_factory=list)


def timed(
    step: Step, pid: int, action: Callable[[], None], first: Callable[[], None], done: Callable[[], None]
) -> None:
    """Time ``action`` to ``first`` and then to ``done`` (each waits for what it names)."""
    cpu, browser = cpu_seconds(pid), browser_seconds()
    started = time.monotonic()
    action()
    first()
    step.first.append(time.monotonic() - started)
    done()
    step.done.append(time.monotonic() - started)
    step.cpu.append(cpu_seconds(pid) - cpu)
    step.browser.append(browser_seconds() - browser)
    step.loads.append(load())


def make_files(folder: Path, queries: int, depth: int, rounds: int) -> tuple[Path, list[Path]]:
    """The qrels and one run per round (and one more), each run's content its own."""
    spec = importlib.util.spec_from_file_location("make_data", ROOT / "bench" / "make_data.py")
    assert spec is not None and spec.loader is not None
    make_data = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(make_data)
    qrels, run = make_data.make(folder, queries, depth, 20, seed=2)
    text = run.read_bytes()
    cut = text.index(b"\n")
    runs = []
    for n in range(1, rounds + 1):  # the first line's tag "bench" -> "r0001": new bytes, same ranking
        path = folder / f"run-{n}.txt"
        path.write_bytes(text[: cut - 5] + f"r{n:04d}".encode()[:5] + text[cut:])
        runs.append(path)
    return qrels, runs


def app_round(browser, url: str, pid: int, qrels: Path, run: Path, steps: dict[str, Step]) -> None:
    from playwright.sync_api import expect

    def idle(page) -> Callable[[], None]:
        return lambda: page.locator(IDLE).wait_for(state="attached", timeout=TIMEOUT_MS)

    def upload(step: Step) -> None:
        context = browser.new_context(viewport=VIEWPORT)
        page = context.new_page()
        page.goto(url)  # the Metrics page is the default page
        main = page.locator("[data-testid='stMain']").first
        expect(main.get_by_text("Per query at k = 10")).to_be_visible(timeout=TIMEOUT_MS)
        idle(page)()
        sidebar = page.get_by_test_id("stSidebar")
        sidebar.get_by_text("your files", exact=True).click()
        uploads = sidebar.locator("input[type=file]")
        expect(uploads).to_have_count(2, timeout=TIMEOUT_MS)
        expect(main.get_by_text("Upload a judgments file and a run")).to_be_visible(timeout=TIMEOUT_MS)
        idle(page)()

        def send() -> None:
            uploads.nth(0).set_input_files(str(qrels))
            uploads.nth(1).set_input_files(str(run))

        def findings() -> None:
            expect(main.get_by_text(f"Data: {qrels.name} and {run.name}")).to_be_visible(timeout=TIMEOUT_MS)
            expect(main.get_by_text("Findings", exact=True)).to_be_visible(timeout=TIMEOUT_MS)

        def ended() -> None:
            expect(main.get_by_text("Holes: unjudged chunks of the top 10")).to_be_visible(timeout=TIMEOUT_MS)
            idle(page)()

        timed(step, pid, send, findings, ended)
        return page, context

    page, context = upload(steps["upload"])
    main = page.locator("[data-testid='stMain']").first
    for k, name in ((20, "k 10 -> 20"), (10, "k 20 -> 10 (computed before)")):
        box = page.get_by_label("k (cutoff)")

        def change(box=box, k=k) -> None:
            box.fill(str(k))
            box.press("Enter")

        def audit(k=k) -> None:
            expect(main.get_by_text(f"Per query at k = {k}")).to_be_visible(timeout=TIMEOUT_MS)

        def ended(k=k) -> None:
            expect(main.get_by_text(f"Holes: unjudged chunks of the top {k}")).to_be_visible(
                timeout=TIMEOUT_MS
            )
            idle(page)()

        timed(steps[name], pid, change, audit, ended)
    context.close()
    _, again = upload(steps["upload again (same files, new session)"])
    again.close()


def baseline_round(browser, url: str, pid: int, qrels: Path, run: Path, steps: dict[str, Step]) -> None:
    from playwright.sync_api import expect

    context = browser.new_context(viewport=VIEWPORT)
    page = context.new_page()
    page.goto(url)
    main = page.locator("[data-testid='stMain']").first
    expect(main.get_by_text("Upload two files.")).to_be_visible(timeout=TIMEOUT_MS)
    page.locator(IDLE).wait_for(state="attached", timeout=TIMEOUT_MS)
    uploads = page.get_by_test_id("stSidebar").locator("input[type=file]")

    def idle() -> None:
        page.locator(IDLE).wait_for(state="attached", timeout=TIMEOUT_MS)

    def send() -> None:
        uploads.nth(0).set_input_files(str(qrels))
        uploads.nth(1).set_input_files(str(run))

    def received() -> None:
        expect(
            main.get_by_text(f"received {qrels.stat().st_size:,} and {run.stat().st_size:,} bytes")
        ).to_be_visible(timeout=TIMEOUT_MS)

    timed(steps["upload"], pid, send, received, idle)
    box = page.get_by_label("k (cutoff)")

    def change() -> None:
        box.fill("20")
        box.press("Enter")

    def said() -> None:
        expect(main.get_by_text("Per query at k = 20")).to_be_visible(timeout=TIMEOUT_MS)

    timed(steps["k 10 -> 20"], pid, change, said, idle)
    context.close()


def measure(qrels: Path, runs: list[Path]) -> tuple[dict[str, Step], dict[str, Step]]:
    from playwright.sync_api import sync_playwright

    names = ["upload", "k 10 -> 20", "k 20 -> 10 (computed before)", "upload again (same files, new session)"]
    app_steps = {name: Step(name) for name in names}
    base_steps = {name: Step(name) for name in names[:2]}
    with tempfile.TemporaryDirectory(prefix="denominator-bench-") as tmp:
        db = str(Path(tmp) / "demo.db")
        subprocess.run(
            [sys.executable, "-m", "denominator", "demo", "--db", db],
            cwd=ROOT,
            check=True,
            capture_output=True,
        )
        with (
            served("denominator/app.py", {"DENOMINATOR_DB": db}) as (app_url, app),
            served("bench/upload_baseline_app.py", {}) as (base_url, base),
            sync_playwright() as playwright,
        ):
            browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
            for n, run in enumerate(runs, start=1):
                turns = [
                    lambda run=run: baseline_round(browser, base_url, base.pid, qrels, run, base_steps),
                    lambda run=run: app_round(browser, app_url, app.pid, qrels, run, app_steps),
                ]
                for turn in turns if n % 2 else reversed(turns):
                    turn()
                print(f"round {n} of {len(runs)} done (load {load():.1f})", file=sys.stderr, flush=True)
            browser.close()
    return app_steps, base_steps


def sections(qrels: Path, run: Path) -> list[str]:
    """Each section of the page's work on one upload, called as the page calls it (no cache), at
    k = 10 then at k = 20: wall and CPU seconds, the load beside."""
    # outside a server each cache warns as it is made (on import); the profile calls them uncached
    from streamlit.runtime.caching import cache_data_api

    logging.getLogger(cache_data_api.__name__).setLevel(logging.ERROR)
    from calibration import actions
    from calibration.gate import load_policy
    from denominator.ui.metrics import audit_frame, metrics_frame
    from denominator.ui.metrics_data import load_uploads

    rows: list[str] = []

    def lap(name: str, wall: float, cpu: float) -> None:
        rows.append(
            f"| {name} | {time.perf_counter() - wall:.2f} | {time.process_time() - cpu:.2f} | {load():.1f} |"
        )
        print(rows[-1], flush=True)

    def now() -> tuple[float, float]:
        return time.perf_counter(), time.process_time()

    q_bytes, r_bytes = qrels.read_bytes(), run.read_bytes()
    started = now()
    data = load_uploads.__wrapped__(qrels.name, "", run.name, "", io.BytesIO(q_bytes), io.BytesIO(r_bytes))
    lap("read the two uploads", *started)
    for k in (10, 20):
        started = now()
        evaluation = actions.metrics(data.qrels, data.run, [k], None)
        lap(f"metrics, k = {k}", *started)
        started = now()
        report = actions.audit(data.qrels, data.run, k, None, policy=load_policy())
        lap(f"audit, k = {k}", *started)
        started = now()
        metrics_frame(evaluation, report, False), audit_frame(report, None, False)
        lap(f"per-query tables, k = {k}", *started)
        started = now()
        actions.holes(data.qrels, [("run", data.run)], k)
        lap(f"holes (found on request above 500 queries), k = {k}", *started)
        started = now()
        actions.check(data.qrels, data.run, k, None, no_store=True, policy=load_policy())
        lap(f"check (drawn on request above 500 queries), k = {k}", *started)
    return rows


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=10_000)
    parser.add_argument("--depth", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3, help="rounds, each a new run's content (default 3)")
    parser.add_argument("--no-sections", action="store_true", help="leave out the in-process profile")
    parser.add_argument("--out", default="bench/results/metrics_page.md")
    args = parser.parse_args()
    if not CHROMIUM.exists():
        print(f"{CHROMIUM} is missing (apt-get install chromium)", file=sys.stderr)
        return 2
    if args.queries < 1 or args.depth < 20 or args.rounds < 1:
        print("--queries and --rounds must be at least 1, --depth at least 20", file=sys.stderr)
        return 2
    cores = os.cpu_count() or 1
    with tempfile.TemporaryDirectory(prefix="denominator-bench-data-") as tmp:
        qrels, runs = make_files(Path(tmp), args.queries, args.depth, args.rounds)
        size = runs[0].stat().st_size / 1e6
        machine = settled(cores)
        app, base = measure(qrels, runs)
        header = (
            f"| step ({args.queries:,} x {args.depth}, {size:.0f} MB run; median of {args.rounds}) "
            "| app: first mark / run ended (s) | app CPU: server / browser (s) | baseline (s) "
            f"| baseline CPU: server / browser (s) | app/baseline | load (1 min, {cores} cores) |"
        )
        rows = [header, "|---|---:|---:|---:|---:|---:|---:|"]
        print(header, flush=True)
        peer = {
            "upload": "upload",
            "upload again (same files, new session)": "upload",
            "k 10 -> 20": "k 10 -> 20",
        }
        peer["k 20 -> 10 (computed before)"] = "k 10 -> 20"
        for name, step in app.items():
            other = base[peer[name]]
            ratio = median(step.first) / median(other.first)
            loads = step.loads + other.loads
            row = (
                f"| {name} | {median(step.first):.2f} / {median(step.done):.2f} "
                f"| {median(step.cpu):.2f} / {median(step.browser):.2f} | {median(other.first):.2f} "
                f"| {median(other.cpu):.2f} / {median(other.browser):.2f} | {ratio:.1f}x "
                f"(ended {median(step.done) / median(other.first):.1f}x) | {min(loads):.1f}-{max(loads):.1f} |"
            )
            rows.append(row)
            print(row, flush=True)
        findings = median(app["upload"].first) / median(base["upload"].first)
        k_change = median(app["k 10 -> 20"].done)
        holds = [
            (
                f"findings {findings:.2f}x the baseline's upload (bound {FINDINGS_BOUND}x)",
                findings <= FINDINGS_BOUND,
            ),
            (f"k changed: run ended in {k_change:.2f} s (bound {K_BOUND_S} s)", k_change <= K_BOUND_S),
        ]
        verdict = "; ".join(f"{what}: {'met' if ok else 'MISSED'}" for what, ok in holds)
        quiet = machine <= cores
        verdict = (
            f"load before the bench: {machine:.1f} on {cores} cores{'' if quiet else ' (loaded: no verdict)'}; "
            + verdict
        )
        print(verdict, flush=True)
        profile: list[str] = []
        if not args.no_sections:
            profile = [
                "",
                "Where the server's time goes (in this process, no cache):",
                "",
                "| section | wall (s) | CPU (s) | load (1 min) |",
                "|---|---:|---:|---:|",
            ]
            print("\n".join(profile), flush=True)
            profile += sections(qrels, runs[0])
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(
        "# The Metrics page on a big upload, beside plain Streamlit\n\n"
        f"- command: `python bench/metrics_page.py --queries {args.queries} --depth {args.depth} "
        f"--rounds {args.rounds}{' --no-sections' if args.no_sections else ''}`\n- date: {time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime())}\n\n"
        + "\n".join(rows)
        + f"\n\n{verdict}\n"
        + "\n".join(profile)
        + "\n"
    )
    return 1 if quiet and not all(ok for _, ok in holds) else 0


if __name__ == "__main__":
    sys.exit(main())
