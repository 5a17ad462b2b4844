"""Denominator from a checkout: ``streamlit run app.py`` serves the app ``make run`` and ``denominator
serve`` serve (the pages and the sign-in routes of ``denominator/app.py``), with this folder's
``.streamlit/config.toml`` (this machine only, the loopback names, a viewer's toolbar).

Served, this file is imported as a module first (``__name__ != "__main__"``: only the App is built),
then run as the script of every page view, as ``denominator/app.py`` is.
"""

import streamlit as st

from annotation.access.routes import MIDDLEWARE, ROUTES
from annotation.http_api import api_middleware
from denominator.app import main
from denominator.ui.boundary import guarded

if __name__ == "__main__":
    guarded(main)()  # the pages' one boundary: no traceback reaches a page
else:
    app = st.App(__file__, routes=ROUTES, middleware=[*MIDDLEWARE, *api_middleware()])
