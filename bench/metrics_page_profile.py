"""Where the Metrics page's server time goes, section by section (issue #42, item 2): the page run
in-process (Streamlit's AppTest, the app on a fresh demo database, as `make run`) on
bench/make_data.py's collection uploaded (default 10,000 queries x 200: a 71 MB run), each of its
``render_*`` sections and cached reads timed as it runs: wall time and the script thread's CPU time
(the engines' worker threads not counted; the step's process CPU, theirs included, beside it),
the 1-minute load beside each step.

Steps: the upload (everything computed), the same inputs again (all from the cache), k 10 -> 20
(what reads k computed), k back to 10 (cached), a fetch depth (the audit only), the holes turned
on, then the policy check (above 500 queries each is drawn on request), and the page again with
them. No browser: the
browser's share is bench/metrics_page.py's.

    python bench/metrics_page_profile.py [--queries 10000] [--depth 200]
"""

from __future__ import annotations

import argparse
import collections
import importlib.util
import logging
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SECTIONS = {  # module -> the functions timed in it
    "denominator.ui.metrics": (
        "render_data_source render_summary render_findings render_metrics_table render_inflation "
        "render_recall_chart render_audit render_duplicate_example render_estimate render_holes "
        "render_comparison render_check render_history"
    ),
    "denominator.ui.metrics_cache": "metrics audit check",
    "denominator.ui.holes": "render_holes_table render_fill render_sample render_figures",
}


def timing(totals: dict[str, list[float]]) -> None:
    """Wrap each function of :data:`SECTIONS` to add its wall and CPU time to ``totals``."""
    for module_name, names in SECTIONS.items():
        module = importlib.import_module(module_name)
        for name in names.split():
            real = getattr(module, name)

            def timed(
                *args: Any, _real: Any = real, _key: str = f"{module_name[15:]}.{name}", **kwargs: Any
            ) -> Any:
                wall, cpu = time.perf_counter(), time.thread_time()
                try:
                    return _real(*args, **kwargs)
                finally:
                    totals[_key][0] += time.perf_counter() - wall
                    totals[_key][1] += time.thread_time() - cpu

            setattr(module, name, timed)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=10_000)
    parser.add_argument("--depth", type=int, default=200)
    args = parser.parse_args()
    # the pages' caches are made on import, before AppTest's runtime: each would warn once
    from streamlit.runtime.caching import cache_data_api

    logging.getLogger(cache_data_api.__name__).setLevel(logging.ERROR)
    with tempfile.TemporaryDirectory(prefix="denominator-bench-") as tmp:
        db = str(Path(tmp) / "demo.db")
        subprocess.run(
            [sys.executable, "-m", "denominator", "demo", "--db", db],
            cwd=ROOT,
            check=True,
            capture_output=True,
        )
        os.environ["DENOMINATOR_DB"] = db
        spec = importlib.util.spec_from_file_location("make_data", ROOT / "bench" / "make_data.py")
        assert spec is not None and spec.loader is not None
        make_data = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(make_data)
        qrels, run = make_data.make(Path(tmp), args.queries, args.depth, 20, seed=2)
        from streamlit.testing.v1 import AppTest

        totals: dict[str, list[float]] = collections.defaultdict(lambda: [0.0, 0.0])
        timing(totals)
        at = AppTest.from_file(str(ROOT / "denominator" / "app.py"), default_timeout=600).run()
        at.radio(key="metrics:source").set_value("your files").run()
        at.file_uploader(key="metrics:qrels_upload").set_value(
            ("qrels.txt", qrels.read_bytes(), "text/plain")
        )
        at.file_uploader(key="metrics:run_upload").set_value((run.name, run.read_bytes(), "text/plain"))
        size = run.stat().st_size / 1e6
        print(
            f"# The Metrics page's server time by section ({args.queries:,} x {args.depth}, {size:.0f} MB run)"
        )

        def step(name: str, action: Callable[[], object]) -> None:
            totals.clear()
            wall, cpu = time.perf_counter(), time.process_time()
            action()
            if at.exception:
                raise SystemExit(f"{name}: {at.exception[0].value}")
            spent, used = time.perf_counter() - wall, time.process_time() - cpu
            print(f"\n{name}: {spent:.2f} s, process CPU {used:.2f} s (load {os.getloadavg()[0]:.1f})\n")
            print("| section | wall (s) | script thread CPU (s) |\n|---|---:|---:|")
            for section, (spent, used) in sorted(totals.items(), key=lambda kv: -kv[1][0]):
                if spent >= 0.005:
                    print(f"| {section} | {spent:.3f} | {used:.3f} |")

        step("upload (everything computed)", at.run)
        step("the same inputs again", at.run)
        step("k 10 -> 20", lambda: at.number_input(key="metrics:k").set_value(20).run())
        step("k 20 -> 10 (computed before)", lambda: at.number_input(key="metrics:k").set_value(10).run())
        step("fetch depth 50", lambda: at.number_input(key="metrics:fetch_depth").set_value(50).run())
        step("the holes turned on", lambda: at.toggle(key="metrics:holes:show").set_value(True).run())
        step("k 10 -> 30, the holes on", lambda: at.number_input(key="metrics:k").set_value(30).run())
        step("the check turned on", lambda: at.toggle(key="metrics:check_big").set_value(True).run())
        step("the same inputs again, the holes and the check on", at.run)
    return 0


if __name__ == "__main__":
    sys.exit(main())
