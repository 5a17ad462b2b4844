"""Review findings for access control and the Data page."""

from __future__ import annotations

import pytest

from annotation.model import FormatError
from annotation.store import Store, StoreError
from tests.conftest import add_tokens, page_test


@pytest.fixture
def demo(demo_db):
    """The demo database and the tokens of ann (annotator) and root (admin)."""
    return demo_db, add_tokens(demo_db)


def label_page(token: str):
    return page_test("denominator.ui.label.render_label_chunks_page", state={"access:token": token}).run()


def ann_rows(db) -> list[tuple]:
    with Store(db) as store:
        return store.db.execute(
            """SELECT l.item_id, l.value FROM labels l JOIN annotators a ON a.id = l.annotator_id
               WHERE a.name = 'ann' ORDER BY l.id"""
        ).fetchall()


def test_review_a_revoked_token_cannot_undo(demo) -> None:
    """denominator/ui/label.py _undo: _grade re-checks the token inside its callback
    (callbacks run before app.py's check), _undo does not: after revocation the
    'u' key still appends a retraction row under the revoked annotator."""
    db, tokens = demo
    at = label_page(tokens["ann"])
    at.button(key="label:grade2").click().run()
    assert not at.exception
    assert len(ann_rows(db)) == 1
    with Store(db) as store:
        store.revoke_annotator("ann")
    at.button(key="label:undo").click().run()
    assert not at.exception
    assert len(ann_rows(db)) == 1, ann_rows(db)  # nothing written with a revoked token


def test_review_upload_name_dotdot_is_an_input_error(demo, monkeypatch) -> None:
    """denominator/ui/data.py import_uploads: the upload's name comes from the browser.
    A name of '..' makes Path(name).name == '..', the file is written to the
    upload folder's parent (a directory): IsADirectoryError, which the Data page
    does not catch (it catches FormatError/StoreError), so the page crashes
    with a traceback that shows the server's temporary path."""
    from denominator.ui.data import import_uploads

    try:
        import_uploads({"corpus": ("..", b'{"id": "c1", "text": "t"}\n')})
    except (FormatError, StoreError) as exc:
        assert "/tmp" not in str(exc) and "denominator-" not in str(exc)
