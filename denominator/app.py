"""Denominator: the Streamlit entry point.

Identity and navigation only: page code lives in each package's ``ui.py``,
access rules in ``annotation/access/``. Pages are functions given to
``st.navigation`` (no ``pages/`` folder: a deep link after a restart would run
such a page without this file). An annotator's navigation holds the labelling
pages only; admin pages also check the role themselves on every run.

``streamlit run denominator/app.py`` (what ``denominator serve`` runs) finds the ``app = st.App(...)``
below and serves this file through it (the checkout's top-level ``app.py`` imports :func:`main` from
here and builds its own App: ``streamlit run app.py`` serves the same pages and routes), with the sign-in session routes beside Streamlit's (annotation/access/routes.py
says why: they set the HttpOnly session cookie). Served that way, the file is first
imported as a module (``__name__ != "__main__"``: only the App is built), then run as
the script of every page view (``__name__ == "__main__"``, as in AppTest).
"""

import gc

import streamlit as st

from annotation.access.identity import current, link_pending
from annotation.access.routes import MIDDLEWARE, ROUTES
from annotation.access.sign_in_pages import (
    render_identity,
    render_link_confirmation,
    render_local_banner,
    render_sign_in,
)
from annotation.http_api import api_middleware
from denominator.ui.boundary import admin_signed_in, guarded


@st.cache_resource(show_spinner=False)
def freeze_imports() -> bool:
    """Once per server process, after the first run's imports: move every object alive now (the
    ~230,000 of the imported libraries) to the collector's permanent generation. Streamlit runs
    a full ``gc.collect(2)`` after every script run, fragment reruns included
    (``runner.postScriptGC``); over those objects it held the GIL ~110 ms per key press, the
    next item's deltas waiting behind it (docs/benchmarks.md: key press). Frozen objects are
    still freed by reference counting; only cycles among them wait for ``gc.unfreeze()``."""
    gc.freeze()
    return True


def main() -> None:
    # start-up: the pages load with the first script run, not when the server imports this file to
    # build its App (denominator/ui/all_pages.py says why)
    from denominator.ui import all_pages as ui

    st.set_page_config(page_title="Denominator", layout="wide")
    freeze_imports()

    identity = current()
    if link_pending():  # a ?token= link signs in only by its button
        st.navigation([st.Page(render_link_confirmation, title="Sign in", url_path="sign-in")]).run()
        st.stop()
    if identity is None:
        st.navigation([st.Page(render_sign_in, title="Sign in", url_path="sign-in")]).run()
        st.stop()

    admin = identity.role == "admin"
    if admin:
        admin_signed_in()  # a store error may name the database's path or host to this person
    labelling = [
        # an annotator's home: "/" (a default page answers there only); /label, the admins'
        # address of the page, reaches it too, through a hidden page below
        st.Page(
            ui.label.render_label_chunks_page,
            title="Label chunks",
            url_path="label" if admin else "home",
            default=not admin,
        ),
        st.Page(ui.label.render_label_traces_page, title="Label traces", url_path="traces"),
        st.Page(ui.label.render_compare_page, title="Compare answers", url_path="compare"),
    ]
    pages = [
        *labelling,
        st.Page(
            ui.label.render_label_chunks_page, title="Label chunks", url_path="label", visibility="hidden"
        ),
    ]
    reviewing = st.Page(
        ui.label_review.render_label_review_page, title="Review labels", url_path="review-labels"
    )
    if identity.role == "reviewer":
        pages = [*pages, reviewing]
    if admin:
        pages = [
            # an admin's home: "/" (a default page answers there only); /metrics, the address a
            # person types for it, reaches it too, through a hidden page (it said "Page not found")
            st.Page(ui.metrics.render_metrics_page, title="Metrics and audit", url_path="home", default=True),
            st.Page(
                ui.metrics.render_metrics_page,
                title="Metrics and audit",
                url_path="metrics",
                visibility="hidden",
            ),
            *labelling,
            st.Page(ui.judge.render_judge_page, title="Judge", url_path="judge"),
            st.Page(ui.review.render_review_page, title="Calibration review", url_path="review"),
            st.Page(ui.agreement.render_agreement_page, title="Agreement", url_path="agreement"),
            reviewing,
            ui.browse.items_page(),
            st.Page(ui.data.render_data_page, title="Data", url_path="data"),
            st.Page(ui.people.render_people_page, title="People", url_path="people"),
            st.Page(ui.guidelines.render_guidelines_page, title="Guidelines", url_path="guidelines"),
        ]
    if identity.mode == "local":
        render_local_banner()
    render_identity(identity)
    st.navigation(pages).run()


if __name__ == "__main__":
    guarded(main)()  # the pages' one boundary: no traceback reaches a page (denominator/ui/boundary.py)
elif __name__ != "denominator.app":  # served (imported by its stem); imported as a library, no App
    app = st.App(__file__, routes=ROUTES, middleware=[*MIDDLEWARE, *api_middleware()])
