"""The Metrics page's Holes section (#30): the chunks of the run's top k that the judgments do
not grade, filled by the offline judge, a sample of queries whose holes people label, and the
three figures per measure (holes as not relevant, judge-filled, corrected with its interval).

A page face: it calls the actions (:mod:`calibration.actions`, :mod:`judge.actions`,
:mod:`annotation.actions`) as the command line does (``calibration holes``, ``judge grade
--holes``, ``annotation pool --holes``, ``calibration metrics --judge-labels --hole-sample``),
with the widgets' defaults and bounds from the options table. The words for a figure with no
interval are the command line's (:mod:`calibration.holes.holes_text`, the result's note). The buttons
that write (the judge's grades, a sample and its queue) are an admin's. Session keys are
namespaced ``metrics:holes:``; every data string is escaped with :func:`annotation.render.md`.
The holes and the figures are read through :mod:`denominator.ui.metrics_cache` (cached under the
data's digest and k), the judges' grades from the store once per version of the store.
"""

from __future__ import annotations

import hashlib
import tempfile
from pathlib import Path

import pandas as pd
import streamlit as st

from annotation import actions as annotation_actions
from annotation.access.identity import current, db_path
from annotation.errors import DenominatorError
from annotation.formats.records import read_corpus
from annotation.hole_sample import HoleSample, read_hole_sample
from annotation.model import Qrels
from annotation.options import option
from annotation.render import md, md_list
from annotation.store import borrowed, database_exists, default_judge_name
from calibration import actions
from calibration.holes.files import write_hole_sample
from calibration.holes.holes_text import (
    SHOWN_HOLES,
    corrected_text,
    filled_text,
    judged_at_k_text,
    judged_cell,
    uncorrected_note,
    unjudged_text,
)
from calibration.results import FilledReport, HolesReport
from calibration.stored import stored_label_sets, stored_qrels
from denominator.ui import metrics_cache
from denominator.ui.metrics_data import (
    EXAMPLE_DIR,
    ON_REQUEST,
    WORKED_EXAMPLE,
    DataSet,
    content_key,
    store_version,
)
from judge import actions as judge_actions
from judge.holes import HoleSpec

__all__ = ["render_holes", "samples_folder", "who_can_label"]

KEY = "metrics:holes:"
TABLE_ROWS = 200  # past this many queries the holes are a scrolling grid, not HTML rows
SAMPLES = "hole-samples"  # the folder beside the store where the page writes its hole samples
DEFAULT_JUDGE = default_judge_name({"kind": "lexical", "rubric": "relevance"})  # the offline judge's
NO_SAMPLE = "none"


def samples_folder(db: str) -> Path:
    """Where the page writes hole samples: beside a SQLite store, else (a PostgreSQL URL) in the
    machine's temporary folder, one folder per database (named by a digest of its URL)."""
    if "://" in db:
        digest = hashlib.sha256(db.encode("utf-8")).hexdigest()[:12]
        return Path(tempfile.gettempdir()) / f"denominator-{SAMPLES}-{digest}"
    return Path(db).resolve().parent / SAMPLES


def _names(data: DataSet) -> tuple[str, str]:
    """The run's name and the judgments', as the page says them."""
    if data.run.name not in ("", "run"):
        run = data.run.name
    else:
        run = data.label.split(" (")[0]
    judgments = data.label.split(" against ", 1)[1] if " against " in data.label else "the judgments"
    if data.label.startswith("the worked example"):
        run, judgments = "run.jsonl", "golden.yaml"
    return run, judgments


def _admin() -> bool:
    identity = current()
    return identity is not None and identity.role == "admin"


def render_holes(data: DataSet, k: int, min_grade: int | None, source: str, queries: int = 0) -> None:
    """The section: the holes per query, the judge's fill, a sample to label, the figures. Above
    :data:`ON_REQUEST` ``queries`` (the run's evaluated) they are found once asked for: on
    10,000 x 200 finding them took ~0.4 s of every new k, and their table as long again."""
    st.subheader(f"Holes: unjudged chunks of the top {k}")
    if queries > ON_REQUEST and not st.toggle(
        f"Find the holes ({queries:,} queries: found on request)", key=f"{KEY}show"
    ):
        st.caption(
            f"The top {k}'s unjudged chunks per query, a judge to fill them, a sample of queries for "
            "people to label and the three figures: turn on to see them (the audit's judged@k, above, "
            "says how many of each query's top k are judged)."
        )
        return
    run_name, qrels_name = _names(data)
    try:
        report = metrics_cache.holes(data.key, k, run_name, qrels_name, data)
    except DenominatorError as exc:
        st.error(md(exc))
        return
    holes_key = content_key(data.key, k, run_name, qrels_name)
    render_holes_table(report, holes_key)
    if not report["unjudged_positions"]:
        st.success(f"No holes: every chunk of the top {k} is judged; the figures above need no judge.")
        return
    path = db_path()
    db = path if database_exists(path) else None
    admin = _admin()
    judge = render_fill(data, report, db, admin, source, holes_key)
    sample = render_sample(data, report, db, admin)
    render_figures(data, k, min_grade, judge, sample, db)


def render_holes_table(report: HolesReport, key: str) -> None:
    """The holes per query; ``key``: what the report read (the table's cache key)."""
    k = report["k"]
    st.markdown(
        f"**{unjudged_text(report)} unjudged** in the top {k} of {md(report['runs'][0])} "
        f"against {md(report['judgments'])}, over {report['n_queries']:,} queries ({judged_at_k_text(report)})."
    )

    def cell(holes: list[str], escape: bool) -> str:
        shown = md_list(holes[:SHOWN_HOLES]) if escape else ", ".join(holes[:SHOWN_HOLES])
        more = len(holes) - SHOWN_HOLES
        return (shown or "-") + (f" (+{more} more)" if more > 0 else "")

    def frame(escape: bool) -> pd.DataFrame:
        return pd.DataFrame(
            [
                {
                    "query": md(qid) if escape else qid,
                    f"judged@{k}": judged_cell(row["judged"][0], row["filled"][0]),
                    "holes": cell(row["holes"], escape),
                }
                for qid, row in report["queries"].items()
            ]
        )

    escape = report["n_queries"] <= TABLE_ROWS
    table = metrics_cache.drawn(f"holes table, escaped {escape}", key, lambda: frame(escape))
    if escape:
        st.table(table, hide_index=True)
    else:  # loaded lazily, its CSV made on a click (denominator.ui.metrics.render_frame says why)
        st.dataframe(table, hide_index=True, height=420, lazy=True)
        st.download_button(
            f"Download the holes table ({report['n_queries']:,} queries, CSV)",
            data=lambda: table.to_csv(index=False),
            file_name="holes-per-query.csv",
            mime="text/csv",
            on_click="ignore",
            key=f"{KEY}csv",
        )
    if report["not_shared"]:
        st.caption(f"{report['not_shared']:,} queries of the run are not in the judgments: not listed.")


@st.cache_data(show_spinner=False, max_entries=4)
def judge_sets(db: str, version: str) -> dict[str, Qrels]:
    """Every relevance judge's grades the store holds (its ``judge:NAME`` label sets), read again
    when the store's ``version`` (:func:`denominator.ui.metrics_data.store_version`) changes."""
    with borrowed(db) as store:
        specs = [spec for spec in stored_label_sets(store) if spec.startswith("judge:")]
        return {spec.partition(":")[2]: stored_qrels(store, spec)[0] for spec in specs}


def _judge_sets(db: str) -> tuple[dict[str, Qrels], str]:
    """The store's judges' grades and a key of where and when they were read."""
    with borrowed(db) as store:
        version = content_key(db, store_version(store))
    return judge_sets(db, version), version


def _covered(judge: Qrels, report: HolesReport) -> int:
    """How many of the report's holes the judge graded."""
    grades = judge.grades
    nothing: dict[str, int] = {}
    return sum(
        len([doc for doc in row["holes"] if doc in grades.get(qid, nothing)])
        for qid, row in report["queries"].items()
    )


def render_fill(
    data: DataSet, report: HolesReport, db: str | None, admin: bool, source: str, holes_key: str
) -> tuple[Qrels, str, str] | None:
    """ "Fill with judge": the offline judge grades exactly the holes (``judge grade --holes``);
    a judge's grades already in the store for them are used as they are. The judge's grades, its
    name and the key of the store's version they were read at, or None. ``holes_key``: what the
    report read (the count of the holes each judge graded is kept under it)."""
    st.markdown("**Fill with judge**")
    total = report["holes"]
    if db is None:
        st.caption(
            "A judge's grades are kept in the store: there is none here (python -m denominator demo builds one)."
        )
        return None
    if admin and st.button(f"Fill with judge ({total:,} holes, the offline judge)", key=f"{KEY}fill"):
        corpus = {}
        if source == WORKED_EXAMPLE:  # the texts of the holes the store may not hold
            corpus = {str(c["id"]): str(c["text"]) for c in read_corpus(EXAMPLE_DIR / "corpus.jsonl")}
        spec = HoleSpec(qrels=data.qrels, run=data.run, k=report["k"], corpus=corpus)
        try:
            with st.spinner("The offline judge is grading the holes…"), borrowed(db) as store:
                done = judge_actions.grade(store, "relevance", holes=spec)
        except DenominatorError as exc:
            st.error(f"Not filled: {md(exc)}")
        else:
            skipped = len(done.holes.unknown)
            if done.result is None or isinstance(done.result, judge_actions.LLMResult):
                st.warning(f"Not filled: none of the {total:,} holes has a query and chunk text to grade.")
            else:
                graded = done.result
                name = str(graded["identity"]["name"])
                st.session_state[f"{KEY}judge"] = name
                st.success(
                    f"Judge {md(name)} v{graded['identity']['version']} (fitted on {graded['fitted_on']:,} "
                    f"people's labels) graded {graded['graded']:,} holes now, {graded['already_done']:,} "
                    f"before; {done.holes.made:,} new chunk items, assigned to nobody."
                    + (f" {skipped:,} holes have no text and were skipped." if skipped else "")
                )
    elif not admin:
        st.caption("Filling the holes writes the judge's grades to the store: an admin's button.")
    stored, version = _judge_sets(db)
    # counted once per holes report and version of the store: 10,000 queries' holes, ~0.1 s a run
    covered = metrics_cache.drawn(
        "holes covered",
        content_key(holes_key, version),
        lambda: {name: _covered(qrels, report) for name, qrels in stored.items()},
    )
    judges = {name: qrels for name, qrels in stored.items() if covered[name]}
    if not judges:
        st.caption(f"No judge's grades in the store cover these {total:,} holes yet.")
        return None
    names = sorted(judges, key=lambda n: (-covered[n], n != DEFAULT_JUDGE, n))
    wanted = st.session_state.get(f"{KEY}judge")
    chosen = st.selectbox(
        "the judge's grades on the holes (from the store)",
        names,
        index=names.index(wanted) if wanted in names else 0,
        key=f"{KEY}judge_set",
        help="The store's judge:NAME label sets, as `metrics --stored-run NAME --labels judge:NAME` reads them.",
    )
    st.caption(f"Judge {md(chosen)} graded {covered[chosen]:,} of the {total:,} holes.")
    return judges[chosen], chosen, version


def _sample_files(db: str, report: HolesReport) -> list[Path]:
    folder = samples_folder(db)
    if not folder.is_dir():
        return []
    return sorted(folder.glob(f"hole-sample-k{report['k']}-*.yaml"))


def render_sample(data: DataSet, report: HolesReport, db: str | None, admin: bool) -> HoleSample | None:
    """ "Sample to label": draw a uniform random sample of queries (``holes --sample N --seed S``),
    write it beside the store and queue its holes, blind, to the people chosen (``pool --holes FILE
    --annotators X,Y``; none chosen: the button waits, with the reason). The
    sample chosen for the corrected figure, people's grades on its holes from the store, or None."""
    st.markdown("**Sample to label**")
    if db is None:
        st.caption("People label a sample's holes in the app: a store is needed (there is none here).")
        return None
    folder = samples_folder(db)
    size, seed = option("hole_sample"), option("holes_seed")
    if admin:
        left, right = st.columns(2)
        with left:
            n = st.number_input(
                "queries to sample",
                min_value=int(size.minimum or 1),
                max_value=int(size.maximum or report["n_queries"]),
                value=size.default,
                step=1,
                placeholder=size.rule,
                key=f"{KEY}n",
                help=f"{size.help}; at most the {report['n_queries']:,} queries here.",
            )
        with right:
            s = st.number_input(
                "seed",
                min_value=int(seed.minimum or 0),
                value=seed.default,
                step=1,
                key=f"{KEY}seed",
                help=seed.help,
            )
        everyone = who_can_label(db)
        queue_to = st.multiselect(
            "people who label the sample",
            everyone,
            key=f"{KEY}people",
            help="Its holes go to their queues, as `pool --holes FILE --annotators X,Y` deals them "
            "(with two or more people, a share to a second person too).",
        )
        why = None
        if not everyone:
            why = "No one to label the sample yet: add people on the People page first."
        elif not queue_to:
            why = "Choose who labels the sample: without people its holes would go into every open queue."
        if st.button(
            "Draw the sample and queue its holes", key=f"{KEY}draw", disabled=n is None or why is not None
        ):
            draw(data, report, db, int(n), int(s), queue_to)
        if why is not None:
            st.caption(why)
        st.caption(f"Samples are written to {md(folder)} (this page's folder beside the store).")
    else:
        st.caption("Drawing a sample writes a file and queues items: an admin's button.")
    files = _sample_files(db, report)
    if not files:
        return None
    newest = max(files, key=lambda f: f.stat().st_mtime).name  # the sample drawn last, by default
    wanted = Path(st.session_state.get(f"{KEY}sample_file") or newest).name
    choices = [NO_SAMPLE] + [f.name for f in files]
    chosen = st.selectbox(
        "hole sample for the corrected figure",
        choices,
        index=choices.index(wanted) if wanted in choices else 0,
        key=f"{KEY}sample_choice",
        help="People's grades on its holes are read from the store (the median of everyone's labels).",
    )
    if chosen == NO_SAMPLE:
        return None
    try:  # people's grades on its holes from the store, as metrics --hole-sample FILE --db DB reads them
        with borrowed(db) as store:
            return actions.stored_hole_sample(store, read_hole_sample(folder / chosen))
    except DenominatorError as exc:
        st.error(md(exc))
        return None


def who_can_label(db: str) -> list[str]:
    """The store's people who can open the app, by name: those a sample's holes can be queued to.
    Everyone in local mode (no one has a way in yet); else those with a token or the provider's
    sign-in that is not revoked."""
    try:
        with borrowed(db) as store:
            listed = annotation_actions.annotators(store, "list")
    except DenominatorError:
        return []
    return [
        person["name"]
        for person in listed["annotators"]
        if not listed["tokens_required"] or person["access"] == "token" or person["provider"] == "active"
    ]


def draw(data: DataSet, report: HolesReport, db: str, n: int, seed: int, people: list[str]) -> None:
    """Draw, write and queue one sample to ``people`` (``pool --holes FILE --annotators``); what was
    done, said on the page."""
    k = report["k"]
    digest = (data.run_digest or "run")[:8]
    path = samples_folder(db) / f"hole-sample-k{k}-{digest}-n{n}-seed{seed}.yaml"
    try:
        drawn = actions.holes(
            data.qrels,
            [(report["runs"][0], data.run)],
            k,
            sample=n,
            seed=seed,
            qrels_name=report["judgments"],
        )
        path.parent.mkdir(parents=True, exist_ok=True)
        write_hole_sample(drawn, data.qrels, path)
        with borrowed(db) as store:
            queued = annotation_actions.pool(store, holes=path, annotators=people)
    except (DenominatorError, OSError) as exc:
        st.error(f"No sample: {md(exc)}")
        return
    info = drawn["sample"]
    assert info is not None  # drawn with a sample
    st.session_state[f"{KEY}sample_file"] = str(path)
    items = queued["items_added"] + queued["items_existing"]
    notes = [
        f"{queued['already_judged']:,} already judged by someone (not asked again)"
        if queued["already_judged"]
        else "",
        f"{queued['missing']:,} not in the store ({md_list(queued['missing_named'])})"
        if queued["missing"]
        else "",
    ]
    st.success(
        f"Drawn: {info['n']} of the {info['population']} queries (seed {seed}), "
        f"{md_list(info['queries'])}, with {info['holes']:,} holes; written to {md(path)}. "
        f"Queued for labelling: {items:,} items ({queued['items_added']:,} new, "
        f"{queued['items_existing']:,} already items), shown blind; {queued['assignments']:,} "
        f"assignments to {md_list(people)}, {queued['doubly_assigned']:,} of "
        f"{queued['items_assigned']:,} items given to two of them."
        + "".join(f" {note}." for note in notes if note)
    )


def render_figures(
    data: DataSet,
    k: int,
    min_grade: int | None,
    judge: tuple[Qrels, str, str] | None,
    sample: HoleSample | None,
    db: str | None = None,
) -> None:
    """Per measure, holes as not relevant, judge-filled and corrected with its 95% interval, each
    with the queries it is over (``metrics --judge-labels J [--hole-sample FILE]``). A judge of the
    store is given its one reading (:func:`calibration.readings.current_readings`, as ``review``, ``check``
    and ``judge list`` give it), not a second kappa on these files' chunks (issue #40, item 7)."""
    st.markdown("**The three figures**")
    if judge is None:  # guidance, not a problem: a caption, not an alert box
        st.caption(
            "No judge's grades on these holes: fill them with the judge (above) to see the judge-filled "
            "figures beside holes as not relevant."
        )
        return
    run_name, qrels_name = _names(data)
    grades, judge_name, judge_key = judge

    def score(with_sample: HoleSample | None) -> list[FilledReport]:
        return metrics_cache.filled(
            data.key, k, min_grade, judge_key, judge_name, with_sample, run_name, qrels_name, data, grades
        )

    try:
        try:
            reports = score(sample)
        except DenominatorError as exc:
            if sample is None:
                raise
            st.warning(f"No corrected figure: {md(exc)}")
            reports = score(None)
    except DenominatorError as exc:
        st.error(md(exc))
        return
    report = reports[0]
    queries = len(report["queries"])

    def figure(value: float | None, n: int) -> str:
        return (
            f"{value:.4f} ({n} of {queries} queries)"
            if value is not None
            else f"undefined ({n} of {queries} queries)"
        )

    sampled = report["sample"] is not None
    rows = [
        {
            "measure": m["measure"],
            "holes as not relevant": figure(m["holes_as_not_relevant"], m["holes_as_not_relevant_n"]),
            "judge-filled": figure(m["judge_filled"], m["judge_filled_n"]),
            "corrected, 95% CI": md(corrected_text(m["corrected"], sampled)),
        }
        for m in report["means"]
    ]
    st.table(pd.DataFrame(rows), hide_index=True)
    st.caption(
        f"Judge {md(judge_name)} graded {report['filled']:,} of the {report['holes']:,} holes "
        f"({report['filled_relevant']:,} relevant); {report['ungraded']:,} it did not grade stay not relevant."
    )
    reading = stored_reading(db, judge_name)
    if not sampled and reading is not None:
        st.caption(
            md(
                "No hole sample: the judge-filled figures are uncorrected; the judge's reading (as review, "
                f"check and judge list give it): {reading}."
            )
        )
    elif not sampled:
        st.caption(
            md(f"No hole sample: the judge-filled figures are {uncorrected_note(report['agreement'])}.")
        )
    for m in report["means"]:
        c = m["corrected"]
        if c is not None and c["note"]:
            st.caption(f"{m['measure']}: {md(c['note'])}")
    shown = "As python -m calibration metrics --judge-labels prints it"
    if reading is not None:  # the CLI on files: its kappa is on these files' chunks, not the reading
        shown += " on these files (its kappa: on the chunks both graded here, not the judge's reading)"
    with st.expander(shown):
        st.code(filled_text(reports), language=None)


def stored_reading(db: str | None, name: str) -> str | None:
    """The current reading of the store's judge ``name`` in a line (``calibration.readings.reading_mark``), or
    None (no store, or no current judge of that name)."""
    if db is None:
        return None
    # start-up: the review's statistics, only when a stored judge's figures are shown
    from calibration.readings import current_readings, reading_mark

    try:
        with borrowed(db) as store:
            readings = current_readings(store)
    except DenominatorError:
        return None
    found = next((j for j in readings.values() if j.get("name") == name), None)
    return reading_mark(found) if found is not None else None
