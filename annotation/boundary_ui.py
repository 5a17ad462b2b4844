"""The pages' one boundary: no error reaches a person as a traceback or a server path.

``app.py`` runs every page view through :func:`guarded`. A named error
(:class:`~annotation.errors.DenominatorError`) is its message in one line, in the page; a store
that cannot be reached (PostgreSQL down, a full disk, a file gone) says so and keeps the
session (reload when it is back); anything else (a driver's error, a bug) is named by where it
came from, its traceback written to the server's log only. Streamlit's own control flow
(``st.stop``, ``st.rerun``) derives from ``BaseException`` and passes through untouched.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable

import streamlit as st

from annotation.errors import DRIVERS, DenominatorError, one_line, skipped_records
from annotation.render import md
from annotation.store import StoreBusy, StoreError, default_db_path

LOG = logging.getLogger("denominator.pages")
UNAVAILABLE = (
    "The store is unavailable: {reason}. Nothing was lost and you stay signed in: "
    "reload the page when it is back."
)


def message(exc: Exception) -> str:
    """What the page says for ``exc``: one line, no traceback, no path but the store's own."""
    store = default_db_path()  # its URL known: no piece of its password a driver quoted is left
    if isinstance(exc, StoreBusy):
        return one_line(str(exc), limit=600, known=store)
    if isinstance(exc, StoreError):
        return UNAVAILABLE.format(reason=one_line(str(exc), limit=400, known=store))
    if isinstance(exc, DenominatorError):
        return one_line(str(exc), limit=600, known=store)
    root = type(exc).__module__.split(".")[0]
    if root in ("psycopg", "psycopg_pool", "sqlite3"):
        return UNAVAILABLE.format(reason=f"{DRIVERS[root]} failed ({type(exc).__name__})")
    where = f"{DRIVERS[root]} failed" if root in DRIVERS else "an unexpected error (a bug in Denominator)"
    return (
        f"This page stopped: {where} ({type(exc).__name__}). The details are in the server's log; "
        "reload the page to try again."
    )


def guarded(render: Callable[[], None]) -> Callable[[], None]:
    """``render`` with the boundary around it (see the module's docstring)."""

    @functools.wraps(render)
    def page() -> None:
        skipped_records()
        try:
            render()
        except Exception as exc:
            if not isinstance(exc, DenominatorError):
                LOG.error("page %s stopped", render.__name__, exc_info=exc)
            st.error(md(message(exc)))
        finally:
            for note in skipped_records():  # stored records a reader could not read, each named
                st.warning(md(note), icon=":material/warning:")

    return page
