"""Every page the app's navigation offers, in one import, which ``denominator/app.py`` makes in its
first script run, not at module level: the server imports that file to build its App before
Streamlit's runtime exists, and each ``st.cache_data`` function decorated then logged "No runtime
found, using MemoryCacheStorageManager" at every start (nine lines; #43, item 9). Each page module is
imported whole and its function read from it at every script run (``all_pages.metrics.render_metrics_page``),
so a function replaced in its module (a test's monkeypatch) is the one the next run serves."""

from denominator.ui import (
    agreement,
    browse,
    data,
    guidelines,
    judge,
    label,
    label_review,
    metrics,
    people,
    review,
)

__all__ = [
    "agreement",
    "browse",
    "data",
    "guidelines",
    "judge",
    "label",
    "label_review",
    "metrics",
    "people",
    "review",
]
