"""The baseline of bench/browser.py: plain Streamlit doing the least a key press can do.

A fragment holding a counter and a button with the shortcut ``1`` that increments it; the
new value is shown in the same fragment rerun. The labelling pane (denominator/ui/label.py
``render_label_pane``) is the same shape (a key-shortcut button in an ``st.fragment`` whose
rerun draws the next item), so the ratio of their latencies is the cost of our work, with the
browser, the websocket and Streamlit's own rerun taken out.

    streamlit run bench/baseline_app.py
"""

import streamlit as st

st.set_page_config(page_title="Baseline", layout="wide")


def _increment() -> None:
    st.session_state["bench:count"] = st.session_state.get("bench:count", 0) + 1


@st.fragment
def render_counter() -> None:
    with st.container(key="counter"):  # class st-key-counter: what bench/browser.py watches
        st.code(str(st.session_state.get("bench:count", 0)), language=None)
    st.button("Increment (1)", key="bench:increment", shortcut="1", on_click=_increment)


render_counter()
