"""Every bench script `make bench` runs loads: its imports still name what the packages define.

`bench/store_load.py` imported `build_demo` from where it used to live, and `make bench` failed on
it for days while the tests passed (2026-12-07). Each script's top level (its imports and
constants, not its ``main``) is run here in a new interpreter, from the project's root as
`make bench` runs it.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CHECK = """
import runpy, sys, traceback
failed = []
for path in sys.argv[1:]:
    try:
        runpy.run_path(path, run_name="bench_import_check")
    except BaseException:
        failed.append(path + ": " + traceback.format_exc().strip().splitlines()[-1])
print("\\n".join(failed))
sys.exit(1 if failed else 0)
"""


def _main_scripts() -> list[str]:
    """The bench scripts with a ``main`` (the apps Streamlit runs have none: they draw on load)."""
    return sorted(
        str(path.relative_to(ROOT))
        for path in (ROOT / "bench").glob("*.py")
        if 'if __name__ == "__main__"' in path.read_text(encoding="utf-8")
    )


def test_every_bench_script_loads() -> None:
    scripts = _main_scripts()
    assert "bench/store_load.py" in scripts and "bench/run.py" in scripts
    done = subprocess.run(
        [sys.executable, "-c", CHECK, *scripts], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stdout + done.stderr[-2000:]


def test_every_script_make_bench_runs_is_one_of_them() -> None:
    """The Makefile's bench target names scripts that exist and load (above)."""
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    named = {
        word.rstrip(";") for word in makefile.split() if word.startswith("bench/") and word.endswith(".py")
    }
    assert "bench/store_load.py" in named
    assert named <= set(_main_scripts())
