"""Keypress to next item shown, in a real browser (Debian's Chromium).

Starts the app on a fresh demo database, opens *Label chunks*, and presses a
grade key N times; each time measures from the keypress to the moment the
progress text shows the new count (the next chunk is drawn in the same
fragment rerun). Reports the median and the 90th percentile.

    python bench/browser.py [--presses 20] [--out bench/results/browser.md]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.e2e.conftest import CHROMIUM  # noqa: E402
from tests.e2e.test_browser import CHROMIUM_ARGS, running_app  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--presses", type=int, default=20)
    parser.add_argument("--out", default="bench/results/browser.md")
    args = parser.parse_args()
    if not CHROMIUM.exists():
        print(f"{CHROMIUM} is missing (apt-get install chromium)", file=sys.stderr)
        return 2
    from playwright.sync_api import expect, sync_playwright

    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "demo.db"
        subprocess.run(
            [sys.executable, "-m", "annotation", "demo", "--db", str(db)],
            cwd=ROOT,
            check=True,
            capture_output=True,
        )
        with running_app(db) as url, sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
            page = browser.new_page(viewport={"width": 1300, "height": 900})
            page.goto(f"{url}/label")
            main = page.locator("[data-testid='stMain']").first
            expect(main.get_by_text("Undo the last label (u)")).to_be_visible(timeout=30_000)
            page.mouse.click(650, 30)
            latencies = []
            for done in range(1, args.presses + 1):
                start = time.perf_counter()
                page.keyboard.press(str(done % 4))
                expect(main.get_by_text(f"{done} / 24 in this batch")).to_be_visible(timeout=30_000)
                latencies.append(time.perf_counter() - start)
            browser.close()
    ordered = sorted(latencies)
    median = statistics.median(latencies)
    p90 = ordered[int(0.9 * (len(ordered) - 1))]
    line = (
        f"keypress to next item shown: median {median * 1e3:.0f} ms, p90 {p90 * 1e3:.0f} ms "
        f"over {len(latencies)} presses"
    )
    print(line)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(
        "# Browser: keypress to next item\n\n"
        f"- command: `python bench/browser.py --presses {args.presses}`\n"
        f"- date: {time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime())}\n\n{line}\n"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
