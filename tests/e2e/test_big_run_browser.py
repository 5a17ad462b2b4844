"""A big run in the real app (issue #16, acceptance): 6,000 queries x 200 chunks, 1,095 of them with a
repeated id, uploaded to the Metrics page in Chromium. The summary is above the fold and the findings
are grouped, one line per kind with its count; the screenshot goes to test-artifacts/metrics-big-run.png.

The data: bench/make_data.py's seeded collection (20 judgments per query), then in 1,095 seeded
queries the last line's chunk id replaced by the first line's (a repeat with its own score)."""

from __future__ import annotations

import importlib.util
import time
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import ARTIFACTS, CHROMIUM_ARGS, ROOT, main_pane, running_app, wait_for_script_run

pytestmark = pytest.mark.slow  # a 43 MB upload through a real server and a real browser

QUERIES, DEPTH, JUDGED, REPEATED = 6_000, 200, 20, 1_095
VIEWPORT = {"width": 1400, "height": 1000}
RESULT_TIMEOUT_MS = 240_000  # the upload, the scoring and the drawing of two 6,000-row tables


def make_big_run(folder: Path) -> tuple[Path, Path]:
    """bench/make_data.py's qrels and run, with one repeated id in ``REPEATED`` queries."""
    spec = importlib.util.spec_from_file_location("make_data", ROOT / "bench" / "make_data.py")
    make_data = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(make_data)
    qrels, run = make_data.make(folder, QUERIES, DEPTH, JUDGED, seed=2)
    lines = run.read_text().splitlines(keepends=True)
    chosen = set(np.random.default_rng(16).choice(QUERIES, size=REPEATED, replace=False).tolist())
    for q in chosen:  # make_data writes each query's DEPTH lines together, shuffled
        first, last = q * DEPTH, (q + 1) * DEPTH - 1
        fields = lines[last].split()
        fields[2] = lines[first].split()[2]
        lines[last] = " ".join(fields) + "\n"
    run.write_text("".join(lines))
    return qrels, run


def test_big_run_summary_above_the_fold_findings_grouped(chromium, make_run_db, tmp_path, figure):
    from playwright.sync_api import expect, sync_playwright

    qrels, run = make_big_run(tmp_path)
    with running_app(make_run_db) as url, sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(chromium), args=CHROMIUM_ARGS)
        try:
            page = browser.new_context(viewport=VIEWPORT).new_page()
            received: list[int] = []  # the sizes of the server's websocket frames
            page.on("websocket", lambda ws: ws.on("framereceived", lambda frame: received.append(len(frame))))
            page.goto(url)  # the Metrics page is the default page
            main = main_pane(page)
            expect(main.get_by_text("Per query at k = 10")).to_be_visible(timeout=RESULT_TIMEOUT_MS)
            page.get_by_test_id("stSidebar").get_by_text("your files", exact=True).click()
            uploads = page.get_by_test_id("stSidebar").locator("input[type=file]")
            expect(uploads).to_have_count(2, timeout=RESULT_TIMEOUT_MS)
            started = time.monotonic()
            uploads.nth(0).set_input_files(str(qrels))
            uploads.nth(1).set_input_files(str(run))
            # the upload's own summary: 6,000 queries, none undefined
            summary = main.get_by_text("over 6000 of 6000 queries, 0 undefined").first
            expect(summary).to_be_visible(timeout=RESULT_TIMEOUT_MS)
            duplicates = main.locator(".st-key-metrics_finding_duplicate_ids")
            expect(duplicates).to_contain_text(
                "duplicate chunk ids in 1,095 of 6,000 queries: each repeat keeps its slot and scores nothing",
                timeout=RESULT_TIMEOUT_MS,
            )
            wait_for_script_run(page)
            seconds = time.monotonic() - started
            page.evaluate("window.scrollTo(0, 0)")
            page.get_by_test_id("stMain").locator("h1").first.scroll_into_view_if_needed()
            ARTIFACTS.mkdir(exist_ok=True)
            page.screenshot(path=str(ARTIFACTS / "metrics-big-run.png"))

            # the summary first, above the fold: every tile's top inside the viewport
            tiles = main.get_by_test_id("stMetric")
            expect(tiles.first).to_contain_text("mean R@10")
            for i in range(4):
                box = tiles.nth(i).bounding_box()
                assert box is not None and box["y"] + box["height"] < VIEWPORT["height"], (i, box)
            # findings grouped: one line per kind, none per query; no warning box for the repeats
            expect(duplicates).to_have_count(1)
            kinds = main.locator("[class*='st-key-metrics_finding_']")
            # duplicate ids, |Rel| > k, |Rel| < k, few of the top 10 judged, stage 1 (the run read to 10) low
            expect(kinds).to_have_count(5)
            expect(main.locator(".st-key-metrics_finding_low_judged_at_k")).to_contain_text(
                "few judged chunks in the top 10 in 5,946 of 6,000 queries"
            )
            alerts = main.get_by_test_id("stAlert")  # the local-mode banner alone
            expect(alerts).to_have_count(1)
            expect(alerts).to_contain_text("Single-user local mode", use_inner_text=True)
            first_kind = kinds.first.bounding_box()
            assert first_kind is not None and first_kind["y"] < VIEWPORT["height"]  # the findings too
            # an expander lists the queries, capped, with how many more
            duplicates.get_by_text("duplicate chunk ids in 1,095").click()
            expect(duplicates).to_contain_text("… and 895 more queries with this finding")
            # the per-query grid holds every query and the means, its rows fetched as it scrolls (#42)
            grid = main.get_by_test_id("stDataFrame").first
            expect(grid.locator("[aria-rowcount]").first).to_have_attribute("aria-rowcount", "6003")
            wait_for_script_run(page)
            grid.scroll_into_view_if_needed()
            before = len(received)
            box = grid.bounding_box()
            assert box is not None
            page.mouse.move(box["x"] + 200, box["y"] + 200)
            for _ in range(30):
                page.mouse.wheel(0, 20_000)
            page.wait_for_timeout(2_000)
            assert len(received) > before, "scrolling the lazy grid fetched no rows"
            grid.screenshot(path=str(ARTIFACTS / "metrics-big-run-grid-end.png"))
            expect(page.get_by_test_id("stException")).to_have_count(0)
        finally:
            browser.close()
    size = run.stat().st_size / 1e6
    figure(
        f"Metrics page, {QUERIES:,} queries x {DEPTH} ({size:.1f} MB run): upload to findings drawn {seconds:.1f} s"
    )
