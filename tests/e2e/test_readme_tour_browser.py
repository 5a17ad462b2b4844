"""The README's five-minute tour, step 3, run as written in a new folder (issue #43): the demo
built into ``demo.db``, served with ``serve --db demo.db``, a person added from a terminal with
the README's own command line, and the link it prints opened in Chromium signs that person in on
the served database (a token added to another database would say "This sign-in link is not
valid")."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import (
    CHROMIUM_ARGS,
    CONTENT_TIMEOUT_MS,
    ROOT,
    free_port,
    open_sign_in_link,
    started_server,
    wait_for_script_run,
)

pytestmark = pytest.mark.slow  # a real server and a real browser

README = ROOT / "README.md"


def _tour_commands() -> tuple[list[str], list[str], str]:
    """Step 3's three command lines as the README writes them: the demo, the server and the
    terminal's ``annotators add`` (its NAME a placeholder)."""
    text = README.read_text(encoding="utf-8")
    step = text[text.index("**3. Label.**") : text.index("**4. Judge.**")]
    lines = [line.split("#")[0].strip() for line in step.splitlines()]
    demo = next(line for line in lines if line.startswith(".venv/bin/python -m denominator demo"))
    serve = next(line for line in lines if line.startswith(".venv/bin/python -m denominator serve"))
    add = re.search(r"`(python -m annotation annotators add NAME [^`]+)`", step)
    assert add is not None, "the README's step 3 no longer gives the terminal's annotators add"
    return shlex.split(demo), shlex.split(serve), add.group(1)


def _as_here(argv: list[str], port: int) -> list[str]:
    """A README command line with this interpreter for ``.venv/bin/python`` / ``python`` and a free
    port for 8502."""
    python = {".venv/bin/python", "python"}
    return [sys.executable if a in python else a.replace("8502", str(port)) for a in argv]


def test_the_readme_tour_signs_the_new_person_in(chromium, tmp_path: Path) -> None:
    from playwright.sync_api import expect, sync_playwright

    demo, serve, add = _tour_commands()
    assert "--db demo.db" in add and "--url http://127.0.0.1:8502" in add, add
    port = free_port()
    folder = tmp_path / "new-folder"
    folder.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DENOMINATOR_", "OPENAI_"))}
    env["STREAMLIT_BROWSER_GATHER_USAGE_STATS"] = "false"
    env["PYTHONPATH"] = str(ROOT)  # the checkout's modules, from a folder that is not the checkout
    subprocess.run(_as_here(demo, port), cwd=folder, env=env, check=True, capture_output=True)
    with started_server(_as_here(serve, port), env, port, cwd=folder) as server:
        added = subprocess.run(
            _as_here(shlex.split(add.replace("NAME", "sam")), port),
            cwd=folder,
            env=env,
            check=True,
            capture_output=True,
            text=True,
        )
        links = re.findall(r"^http://127\.0\.0\.1:\d+/\?token=\S+$", added.stdout, re.MULTILINE)
        assert len(links) == 1, added.stdout
        assert links[0].startswith(f"{server.url}/?token="), (links, server.url)
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=str(chromium), args=CHROMIUM_ARGS)
            try:
                page = browser.new_page(viewport={"width": 1300, "height": 900})
                open_sign_in_link(page, links[0])
                app = page.get_by_test_id("stApp")
                expect(app.get_by_text("labelled by sam").first).to_be_visible(timeout=CONTENT_TIMEOUT_MS)
                wait_for_script_run(page)
                expect(app).not_to_contain_text("not valid")
            finally:
                browser.close()
    assert (folder / "demo.db").exists() and not (folder / "denominator.db").exists()
