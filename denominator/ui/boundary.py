"""The pages' one boundary: no error reaches a person as a traceback or a server path.

``app.py`` runs every page view through :func:`guarded`. A named error
(:class:`~annotation.errors.DenominatorError`) is its message in one line, in the page; a store
that cannot be reached (PostgreSQL down, a full disk, a file gone) says so and keeps the
session (reload when it is back), naming the store's path or host only to an admin this run
signed in (:func:`admin_signed_in`; anyone else, before sign-in too, reads that the store is
unavailable, the reason in the server's log); anything else (a driver's error, a bug) is named by where it
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
# what a store error's own words are replaced by for anyone but a signed-in admin: they name the
# database's path or host, not for people who are not signed in
HIDDEN = "its details are in the server's log"
BUSY = "The store is busy: another write held it; nothing was written, try again in a moment."
ADMIN = "boundary:admin"  # set (this run) once the identity is an admin's: :func:`admin_signed_in`


def admin_signed_in() -> None:
    """This run's identity is an admin's (``app.main`` calls it once it knows): an error of the
    store may name the database's path or host on this page."""
    st.session_state[ADMIN] = True


def message(exc: Exception, admin: bool = True) -> str:
    """What the page says for ``exc``: one line, no traceback, no path but the store's own, and
    that only to an ``admin``."""
    store = default_db_path()  # its URL known: no piece of its password a driver quoted is left
    if isinstance(exc, StoreBusy):
        return one_line(str(exc), limit=600, known=store) if admin else BUSY
    if isinstance(exc, StoreError):
        return UNAVAILABLE.format(reason=one_line(str(exc), limit=400, known=store) if admin else HIDDEN)
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
        st.session_state.pop(ADMIN, None)  # no one is known to be an admin until this run says so
        try:
            render()
        except Exception as exc:
            admin = bool(st.session_state.get(ADMIN))
            if not isinstance(exc, DenominatorError):
                LOG.error("page %s stopped", render.__name__, exc_info=exc)
            elif isinstance(exc, StoreError) and not admin:
                LOG.warning("page %s: %s", render.__name__, one_line(str(exc), limit=400))
            st.error(md(message(exc, admin)))
        finally:
            for note in skipped_records():  # stored records a reader could not read, each named
                st.warning(md(note), icon=":material/warning:")

    return page
