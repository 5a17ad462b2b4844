"""The package as a team installs it (#29): a wheel built from this tree, installed into a new
venv in a temporary folder outside the checkout, runs the demo, the metrics on the packaged
worked example and the app (`denominator serve`), where a person labels one item in Chromium.
Nothing of the checkout is on the path: no PYTHONPATH, no editable install, another folder."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import (
    CHROMIUM_ARGS,
    CONTENT_TIMEOUT_MS,
    EXAMPLE,
    ROOT,
    free_port,
    main_pane,
    started_server,
    wait_for_script_run,
)

pytestmark = pytest.mark.slow  # a wheel, a venv with every dependency, a server and a browser

KEEP_OUT = {".git", ".venv", ".venv-interop", "build", "test-artifacts", "__pycache__", ".mypy_cache"}


def installed_env() -> dict[str, str]:
    """The environment of a shell in which nothing points at the checkout."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DENOMINATOR_", "PYTHON", "VIRTUAL_ENV"))}
    env["STREAMLIT_BROWSER_GATHER_USAGE_STATS"] = "false"
    return env


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A new venv with the wheel of this tree installed (its dependencies from the package index
    or pip's cache); its bin folder."""
    base = tmp_path_factory.mktemp("wheel")
    source = base / "source"  # a copy: building writes build/ and *.egg-info beside the sources
    shutil.copytree(ROOT, source, symlinks=True, ignore=lambda _d, names: [n for n in names if n in KEEP_OUT])
    dist = base / "dist"
    built = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            str(source),
            "--no-deps",
            "--no-build-isolation",
            "-w",
            str(dist),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert built.returncode == 0, built.stdout + built.stderr
    (wheel,) = dist.glob("denominator-*.whl")
    subprocess.run([sys.executable, "-m", "venv", str(base / "venv")], check=True, timeout=300)
    bin_dir = base / "venv" / "bin"
    done = subprocess.run(
        [str(bin_dir / "python"), "-m", "pip", "install", "--quiet", str(wheel)],
        capture_output=True,
        text=True,
        timeout=1800,
        env=installed_env(),
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return bin_dir


def run(venv: Path, folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(venv / "denominator"), *args],
        cwd=folder,
        env=installed_env(),
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_the_installed_package_runs_from_another_folder(venv: Path, tmp_path: Path) -> None:
    version = run(venv, tmp_path, "--version")
    assert version.returncode == 0 and version.stdout.startswith("denominator ")
    assert version.stdout.split()[1] == next(
        line.split('"')[1]
        for line in (ROOT / "pyproject.toml").read_text().splitlines()
        if line.startswith("version")
    )
    demo = run(venv, tmp_path, "demo", "--db", str(tmp_path / "d.db"))
    assert demo.returncode == 0, demo.stderr
    assert demo.stdout.startswith(f"demo database {tmp_path / 'd.db'}: 24 chunks, 4 queries")
    # the packaged worked example, where the installed package keeps it
    site = subprocess.run(
        [
            str(venv / "python"),
            "-c",
            "import denominator, pathlib; print(pathlib.Path(denominator.__file__).parent)",
        ],
        cwd=tmp_path,
        env=installed_env(),
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    packaged = Path(site) / "examples" / "worked-example"
    assert str(packaged).startswith(str(venv.parent)) and not str(packaged).startswith(str(ROOT))
    metrics = run(
        venv,
        tmp_path,
        "calibration",
        "metrics",
        str(packaged / "golden.yaml"),
        str(packaged / "run.jsonl"),
        "-k",
        "5",
        "--format",
        "json",
    )
    assert metrics.returncode == 0, metrics.stderr
    here = subprocess.run(
        [
            sys.executable,
            "-m",
            "calibration",
            "metrics",
            str(EXAMPLE / "golden.yaml"),
            str(EXAMPLE / "run.jsonl"),
            "-k",
            "5",
            "--format",
            "json",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    assert json.loads(metrics.stdout) == json.loads(here.stdout)  # the same numbers as the checkout's


@pytest.fixture
def served(venv: Path, tmp_path: Path) -> Iterator[tuple[str, Path]]:
    db = tmp_path / "served.db"
    assert run(venv, tmp_path, "demo", "--db", str(db)).returncode == 0
    port = free_port()
    env = installed_env() | {"DENOMINATOR_ANNOTATOR": "ann"}
    command = [str(venv / "denominator"), "serve", "--db", str(db), "--port", str(port)]
    with started_server(command, env, port, cwd=tmp_path) as server:
        yield server.url, db


def test_the_installed_app_labels_an_item(chromium: Path, served: tuple[str, Path]) -> None:
    from playwright.sync_api import expect, sync_playwright

    url, db = served
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(chromium), args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1300, "height": 900})
            page.goto(f"{url}/label")
            main = main_pane(page)
            expect(main.get_by_text("0 / 24 in this batch labelled by ann")).to_be_visible(
                timeout=CONTENT_TIMEOUT_MS
            )
            chunk = main.locator(".st-key-item-chunk [data-testid='stText']").nth(1)
            expect(chunk).to_contain_text(" ", timeout=CONTENT_TIMEOUT_MS)  # the chunk drawn
            wait_for_script_run(page)  # the run over, its shortcuts bound, before the key
            page.mouse.click(650, 30)  # focus the page, not an input
            page.keyboard.press("2")
            expect(main.get_by_text("1 / 24 in this batch labelled by ann")).to_be_visible(
                timeout=CONTENT_TIMEOUT_MS
            )
        finally:
            browser.close()
    with sqlite3.connect(db) as conn:
        labels = conn.execute(
            "SELECT l.value FROM labels l JOIN annotators a ON a.id = l.annotator_id WHERE a.name = 'ann'"
        ).fetchall()
    assert labels == [(2,)]
