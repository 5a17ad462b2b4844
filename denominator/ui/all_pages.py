"""Every page the app's navigation offers, in one import, which ``denominator/app.py`` makes in its
first script run, not at module level: the server imports that file to build its App before
Streamlit's runtime exists, and each ``st.cache_data`` function decorated then logged "No runtime
found, using MemoryCacheStorageManager" at every start (nine lines; #43, item 9)."""

from denominator.ui.agreement import render_agreement_page
from denominator.ui.browse import items_page
from denominator.ui.data import render_data_page
from denominator.ui.guidelines import render_guidelines_page
from denominator.ui.judge import render_judge_page
from denominator.ui.label import render_compare_page, render_label_chunks_page, render_label_traces_page
from denominator.ui.label_review import render_label_review_page
from denominator.ui.metrics import render_metrics_page
from denominator.ui.people import render_people_page
from denominator.ui.review import render_review_page

__all__ = [
    "items_page",
    "render_agreement_page",
    "render_compare_page",
    "render_data_page",
    "render_guidelines_page",
    "render_judge_page",
    "render_label_chunks_page",
    "render_label_review_page",
    "render_label_traces_page",
    "render_metrics_page",
    "render_people_page",
    "render_review_page",
]
