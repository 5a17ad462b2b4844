"""The design card's ``app.py`` (issue #41): ``streamlit run app.py`` serves the app from a checkout,
the same pages and sign-in routes ``denominator serve`` serves."""

from __future__ import annotations

import os
import sys
import urllib.error
import urllib.request

import pytest
from streamlit.testing.v1 import AppTest

from annotation.render import plain
from tests.conftest import ROOT, free_port, started_server


def test_the_checkouts_app_runs_the_same_pages(demo_db) -> None:
    """Run as a script (as every page view runs it): the Metrics page of the demo, in local mode."""
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60).run()
    assert not at.exception, [e.value for e in at.exception]
    assert [plain(t.value) for t in at.title][:1] == ["Metrics and audit"]


@pytest.mark.slow
def test_streamlit_run_app_py_serves_from_a_checkout(demo_db) -> None:
    """``streamlit run app.py`` in the checkout: the app answers with the middleware's headers (no
    framing), and the sign-in routes of annotation/access/routes.py are mounted beside Streamlit's (a code
    posted to the session route is refused by that route, 403, not by a server that lacks it)."""
    from annotation.access.routes import SESSION_ROUTE

    port = free_port()
    env = {**os.environ, "STREAMLIT_BROWSER_GATHER_USAGE_STATS": "false", "DENOMINATOR_DB": str(demo_db)}
    command = [sys.executable, "-m", "streamlit", "run", "app.py", "--server.port", str(port)]
    with started_server(command, env, port, cwd=ROOT) as server:
        with urllib.request.urlopen(server.url + "/", timeout=10) as page:
            assert page.status == 200 and b"<html" in page.read().lower()
            assert page.headers["x-frame-options"] == "DENY"
        post = urllib.request.Request(
            server.url + SESSION_ROUTE, data=b"x", method="POST", headers={"Origin": server.url}
        )
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(post, timeout=10)
        assert refused.value.code == 403, server.output()
