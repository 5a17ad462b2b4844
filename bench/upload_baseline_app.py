"""The baseline of bench/metrics_page.py: plain Streamlit receiving the same two files.

Two file uploaders and a k input in the sidebar, as on the Metrics page; when both files are
given, their sizes are written in the main pane (the bytes read with ``getvalue``, nothing
parsed), with the k. The time from the files set in the browser to that line drawn is the upload
itself (the browser, the websocket and Streamlit's own rerun), and from a new k typed to the line
that says it a bare rerun: the Metrics page's times over them are the cost of our work.

    streamlit run bench/upload_baseline_app.py
"""

import streamlit as st

st.set_page_config(page_title="Upload baseline", layout="wide")

with st.sidebar:
    k = st.number_input("k (cutoff)", min_value=1, max_value=1000, value=10, step=1, key="baseline:k")
    first = st.file_uploader("first file", key="baseline:first")
    second = st.file_uploader("second file", key="baseline:second")
if first is None or second is None:
    st.info("Upload two files.")
else:
    st.markdown(f"received {len(first.getvalue()):,} and {len(second.getvalue()):,} bytes")
    st.markdown(f"Per query at k = {k}")
