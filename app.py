"""Denominator: the Streamlit entry point.

A router only: page code lives in each package's ``ui.py``. Pages are
functions given to ``st.navigation`` (no ``pages/`` folder: a deep link after
a restart would run such a page without this file).
"""

import streamlit as st

from annotation.ui import (
    render_compare_page,
    render_data_page,
    render_label_chunks_page,
    render_label_traces_page,
)
from calibration.ui import render_metrics_page

st.set_page_config(page_title="Denominator", layout="wide")

page = st.navigation(
    [
        st.Page(render_metrics_page, title="Metrics and audit", url_path="metrics", default=True),
        st.Page(render_label_chunks_page, title="Label chunks", url_path="label"),
        st.Page(render_label_traces_page, title="Label traces", url_path="traces"),
        st.Page(render_compare_page, title="Compare answers", url_path="compare"),
        st.Page(render_data_page, title="Data", url_path="data"),
    ]
)
page.run()
