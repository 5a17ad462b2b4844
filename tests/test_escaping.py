"""Strings that came from data are inert on the pages: a run name, an annotator name or a value
quoted in an error that holds Markdown (an image that would make the browser fetch a URL, a
link, a Streamlit directive, HTML) is shown as text (``annotation.render.md``)."""

from __future__ import annotations

import re

from annotation.formats.by_extension import read_ranked
from annotation.render import md, plain
from annotation.store import Store
from tests.conftest import EXAMPLE, app_test, page_test

HOSTILE = "RUN ![r](http://127.0.0.1:9/x) [phish](http://127.0.0.1:9/p) :red[alarm] <img src=x> $x^2$ | a"
# Markdown that would act if rendered: an image or a link, a directive, raw HTML, LaTeX
ACTIVE = re.compile(r"(?<!\\)!\[|(?<!\\)\]\(|(?<!\\):red\[|(?<!\\)<img|(?<!\\)\$")


def rendered(at) -> list[str]:
    """Every string the page hands to Streamlit's Markdown renderer."""
    parts: list[str] = []
    for kind in ("markdown", "caption", "error", "warning", "info", "success", "subheader", "title"):
        parts += [str(e.value) for e in getattr(at, kind)]
    for table in at.table:
        parts += [str(v) for v in table.value.to_numpy().ravel()]
    return parts


def test_md_escapes_every_markdown_and_html_mark_and_keeps_the_text() -> None:
    escaped = md(HOSTILE + "\nsecond line")
    assert not ACTIVE.search(escaped)
    assert "\n" not in escaped
    assert plain(escaped) == HOSTILE + " second line"
    assert md("q_broad") == "q\\_broad" and plain(md("q_broad")) == "q_broad"


def test_a_hostile_run_name_is_text_on_the_data_page(demo_db) -> None:
    with Store(demo_db) as store, store.write():
        store.import_run(read_ranked(EXAMPLE / "run.jsonl"), name=HOSTILE, stage="fetch")
    at = page_test("denominator.ui.data.render_data_page").run()
    assert not at.exception, [e.value for e in at.exception]
    texts = rendered(at)
    assert any(HOSTILE == plain(t) for t in texts), "the run name is shown"
    assert not [t for t in texts if ACTIVE.search(t)]


def test_a_hostile_annotator_name_is_text_in_the_sidebar(demo_db) -> None:
    with Store(demo_db) as store:
        token = store.add_annotator(HOSTILE, role="admin")
    at = app_test()
    at.query_params["token"] = token
    at.run()
    at.button(key="access:link-sign-in").click().run()  # a link signs in only by its button
    assert not at.exception, [e.value for e in at.exception]
    sidebar = [str(c.value) for c in at.sidebar.caption]
    assert any(HOSTILE in plain(c) for c in sidebar)
    assert not [c for c in sidebar if ACTIVE.search(c)]


def test_a_value_quoted_in_an_error_is_text_on_the_metrics_page() -> None:
    at = app_test().run()
    at.radio(key="metrics:source").set_value("your files").run()
    bad = f"q1 0 d1 {HOSTILE.split()[1]}\n".encode()  # the grade field holds an image link
    at.file_uploader(key="metrics:qrels_upload").set_value(("bad.qrels", bad, "text/plain"))
    at.file_uploader(key="metrics:run_upload").set_value(
        ("run.jsonl", (EXAMPLE / "run.jsonl").read_bytes(), "text/plain")
    )
    at.run()
    assert not at.exception
    (error,) = [str(e.value) for e in at.error]
    assert "![r](http" in plain(error) and not ACTIVE.search(error)


def test_a_hostile_judge_name_is_text_on_the_judge_page(demo_db) -> None:
    at = page_test("denominator.ui.judge.render_judge_page", timeout=60).run()
    at.text_input(key="judge:offline-name").set_value(HOSTILE).run()
    at.button(key="judge:offline-run").click().run()
    assert not at.exception, [e.value for e in at.exception]
    texts = rendered(at)
    assert any(f"as {HOSTILE} v1 (current)." in plain(t) for t in texts), "the name is shown"
    assert not [t for t in texts if ACTIVE.search(t)]
    assert list(at.dataframe[0].value["judge"]) == [f"{HOSTILE} v1 (current)"]  # a table cell: not Markdown


def test_text_tables_escape_what_an_id_may_not_hold() -> None:
    """An id stored before the id rule (a line break, a tab, ESC, a bidi override) cannot forge a
    row of a CLI's text table: each such character is shown as its escape; spaces and letters stay."""
    from annotation.render import align, printable

    assert printable("qinj 0 m1 3\nq_faw") == "qinj 0 m1 3\\nq_faw"
    assert printable("c\u202e\x1b") == "c\\u202e\\x1b"
    assert printable("a\u2028b\tc\x7f\u00a0") == "a\\u2028b\\tc\\x7f\\xa0"
    assert printable("q\u00e9 \u6587") == "q\u00e9 \u6587"
    table = align([["query", "AP"], ["qinj 0 m1 3\nq_faw", "1.000"], ["q2", "0.500"]])
    assert table.split("\n") == [
        "query                  AP",
        "qinj 0 m1 3\\nq_faw  1.000",
        "q2                  0.500",
    ]
