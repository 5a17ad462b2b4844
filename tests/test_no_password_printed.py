"""A PostgreSQL password is never printed (#25): with the password in the URL's query string
(``?password=``, where the masking of ``user:pw@`` did not reach), every command that names its
store, and the pages that do, leave it out of everything they write. The tests' server trusts local
connections, so a URL with any password opens it."""

from __future__ import annotations

import pytest

from annotation.__main__ import main as annotation_main
from calibration.__main__ import main as calibration_main
from denominator.cli import main as denominator_main
from judge.__main__ import main as judge_main
from tests.conftest import EXAMPLE, cli, page_test, page_text

pytestmark = pytest.mark.postgres
SECRET = "S3cretPW"


@pytest.fixture
def url(postgres_server) -> str:
    plain = postgres_server.database()
    return plain.replace("postgres@", "") + f"?user=postgres&password={SECRET}"


def test_no_command_prints_the_password(url, tmp_path, capsys):
    golden, run = EXAMPLE / "golden.yaml", EXAMPLE / "run.jsonl"
    said = []
    for main, argv in (
        (denominator_main, ["demo", "--db", url]),
        (annotation_main, ["import", "--db", url, "--run", run, "--name", "again"]),
        (annotation_main, ["pool", "--db", url, "--annotators", "sam,kim"]),
        (annotation_main, ["annotators", "list", "--db", url]),
        (annotation_main, ["imports", "list", "--db", url]),
        (annotation_main, ["export", "--db", url, "--format", "qrels", "-o", tmp_path / "out.qrels"]),
        (annotation_main, ["migrate", "--from", url, "--to", tmp_path / "copy.db"]),
        (judge_main, ["list", "--db", url]),
        (calibration_main, ["check", golden, run, "-k", "5", "--db", url, "--record", "--format", "json"]),
        (calibration_main, ["check", golden, run, "-k", "5", "--db", url, "--format", "markdown"]),
        (calibration_main, ["history", "--db", url, "--format", "json"]),
        (calibration_main, ["review", "--db", url, "--format", "json"]),
        (calibration_main, ["metrics", "--stored-run", "retriever", "--db", url]),
        # a server that refuses: the connection error names the store without the password
        (
            calibration_main,
            ["check", golden, run, "-k", "5", "--db", url.replace(url.split(":")[2].split("/")[0], "1")],
        ),
    ):
        code, out, err = cli(main, capsys, *argv)
        said.append((argv[0], code, out + err))
        assert "Traceback" not in err, (argv, err)
    assert [code for _, code, _ in said][-1] == 2  # the refusing server: one line, exit 2
    leaks = [name for name, _, text in said if SECRET in text]
    assert not leaks, leaks
    assert any("password=***" in text for _, _, text in said)  # the store was named, masked


def test_no_page_prints_the_password(url, monkeypatch):
    from denominator.demo import build_demo

    build_demo(url)
    monkeypatch.setenv("DENOMINATOR_DB", url)
    for render in (
        "denominator.ui.data.render_data_page",
        "denominator.ui.metrics.render_metrics_page",
        "denominator.ui.review.render_review_page",
        "denominator.ui.judge.render_judge_page",
    ):
        at = page_test(render, timeout=60, state={"label:annotator": "ann"}).run()
        assert not at.exception, (render, [e.value for e in at.exception])
        assert SECRET not in page_text(at) and SECRET not in str(at), render
