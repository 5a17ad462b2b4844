"""bench/pane_baseline_app.py, the key-press bench's second baseline (``--baseline pane``), draws the
pane of each labelling page as denominator/ui/label.py does (its texts, a button per grade, the
controls) and shows the next texts on the key ``1``: what bench/browser.py watches."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parents[1]
APP = ROOT / "bench" / "pane_baseline_app.py"


@pytest.mark.parametrize(
    ("kind", "texts", "grades", "controls"),
    [("chunk", 2, 4, 4), ("trace", 5, 3, 3), ("pair", 3, 3, 3)],
)
def test_the_pane_of_each_page(kind: str, texts: int, grades: int, controls: int) -> None:
    at = AppTest.from_file(str(APP), default_timeout=30)
    at.query_params["kind"] = kind
    at.run()
    assert not at.exception
    assert len(at.text) == texts
    assert [b.label for b in at.button][0] == "Increment (1)"
    assert len(at.button) == grades + controls
    assert len(at.text_input) == (1 if kind == "trace" else 0)
    first = at.text[0].value
    at.button[0].click().run()
    assert at.text[0].value != first  # the next item's texts
    assert "1 / 40" in at.get("progress")[0].proto.text
