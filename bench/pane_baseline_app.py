"""A second baseline for bench/browser.py (``--baseline pane``): plain Streamlit drawing what a
labelling pane draws, with no store, no access check and no queue.

The fragment reruns on the key ``1`` as the pane does on a grade, and draws the same elements in
the same order as ``denominator/ui/label.py``'s ``render_label_pane`` on the page ``?kind=``
(``chunk``, ``trace`` or ``pair``): the progress bar's place, the item's texts (a bold label and
a plain text each) in a keyed container, the note box on the trace page, the bar, a column per
grade (its button and its meaning), the skip, undo and guidelines buttons (and the chunk page's
mark button), and the "my work" toggle. The texts change with each press, as the next item's do.

The app's latency over this one is the cost of the app's own work (the store, the checks, the
queue) with the page's drawing taken out; over bench/baseline_app.py (a counter: the bound's
baseline) it is that work plus the drawing of a full pane (docs/benchmarks.md: key press).

    streamlit run bench/pane_baseline_app.py
"""

import streamlit as st

st.set_page_config(page_title="Pane baseline", layout="wide")

WORDS = "maize beans store dry weevil sack silo moisture harvest sun shade bag"
GRADES = {
    "chunk": ["Not relevant", "Related", "Partly answers", "Answers"],
    "trace": ["Unsupported", "Partly supported", "Supported"],
    "pair": ["A is better", "B is better", "Tie"],
}


def _increment() -> None:
    st.session_state["bench:count"] = st.session_state.get("bench:count", 0) + 1


def _texts(kind: str, n: int) -> list[tuple[str, str]]:
    """What the page of ``kind`` shows of its n-th item (bench/browser.py's synthetic items)."""
    question = f"Bench question {n}: how long does {WORDS.split()[n % 12]} keep?"
    if kind == "chunk":
        return [("Query", question), ("Chunk", f"chunk {n}: {WORDS} " * 3)]
    if kind == "trace":
        contexts = [(f"Context {k + 1} of 3", f"bench-a context {n}.{k}: {WORDS}") for k in range(3)]
        return [("Question", question), *contexts, ("Answer", f"bench-a says: {WORDS} {n}.")]
    return [
        ("Question", question),
        ("Answer A", f"bench-a says: {WORDS}."),
        ("Answer B", f"bench-b says: {WORDS}."),
    ]


def _text(label: str, text: str) -> None:
    st.markdown(f"**{label}**")
    st.text(text)


@st.fragment
def render_counter(kind: str) -> None:
    n = st.session_state.get("bench:count", 0)
    progress = st.empty()
    texts = _texts(kind, n)
    with st.container(key="counter"):  # what bench/browser.py watches: the item's texts
        if kind == "pair":
            _text(*texts[0])
            first, second = st.columns(2)
            with first:
                _text(*texts[1])
            with second:
                _text(*texts[2])
        else:
            for label, text in texts:
                _text(label, text)
        if kind == "trace":
            if st.session_state.get("bench:noted") != n:  # the next item: the box emptied, as the pane does
                st.session_state["bench:noted"] = n
                st.session_state["bench:note"] = ""
            st.text_input("note (optional)", key="bench:note")
    progress.progress(0.5, text=f"{n % 40} / 40 in this batch labelled by bench")
    columns = st.columns(len(GRADES[kind]))
    for value, (column, name) in enumerate(zip(columns, GRADES[kind])):
        column.button(
            "Increment (1)" if value == 0 else f"{value + 1} · {name}",
            key=f"bench:grade{value}",
            shortcut=str(value + 1),
            on_click=_increment,
            width="stretch",
        )
        column.caption(f"what {name.lower()} means")
    left, right, guide, *mark = st.columns(4 if kind == "chunk" else 3)
    if mark:
        mark[0].button("Mark the answer (e)", key="bench:mark", shortcut="e")
    left.button("Skip (s)", key="bench:skip", shortcut="s")
    right.button("Undo the last label (u)", key="bench:undo", shortcut="u")
    guide.button("Guidelines (g)", key="bench:guide", shortcut="g")
    st.toggle("Show my work: skipped items and past labels", key="bench:work")


kind = st.query_params.get("kind", "chunk")
render_counter(kind if kind in GRADES else "chunk")
