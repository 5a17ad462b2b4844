"""One function per action of the calibration package, used by every face.

The CLI (``python -m calibration``) and the Metrics page call these and only
render what they return, so the two can never answer the same question
differently. The defaults of k, the relevance threshold and the randomization
test live in :mod:`calibration.inputs`, once; here:

- the agreement verdict's bar and statistic: :data:`TRUSTED`, :data:`DEFAULT_STATISTIC`
  (``calibration.stats.agreement``).

Errors are named (:mod:`calibration.errors`): :class:`NothingToEvaluate` when no query of a run
is in the judgments, the readers' :class:`~annotation.model.FormatError` family for bad
files, :class:`InvalidInput` for inputs the pure modules refuse.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Literal

from annotation.formats.by_extension import read_judgments
from annotation.model import Qrels, Run
from calibration.audit import Gate, InvalidAudit, audit_run, corpus_size_of, label_coverage, same_text_pairs
from calibration.errors import InvalidInput, NothingToEvaluate
from calibration.inputs import (
    DEFAULT_K,
    DEFAULT_PERMUTATIONS,
    DEFAULT_SEED,
    ENGINE_THREADS,
    PathLike,
    cutoffs,
    min_grade_of,
    refuse_nothing_evaluated,
)
from calibration.label_rows import long_labels
from calibration.metrics import Evaluation, Gain, evaluate
from calibration.policy.rules import (
    DEFAULT_POLICY,
    MIN_QUERIES,
    Bar,
    Policy,
    few_queries_note,
)
from calibration.results import (
    AgreementReport,
    AuditReport,
    Comparison,
)
from calibration.scorer import Scorer
from calibration.stats.verdict import MIN_QUERIES as VERDICT_QUERIES
from calibration.unjudged import tops, unjudged_share

_NO_BAR = Bar(">=", float("-inf"))

# ---------------------------------------------------------------- metrics


def evaluate_run(
    qrels: Qrels,
    run: Run,
    ks: Sequence[int] | None = None,
    min_grade: int | None = None,
    *,
    missing: Literal["drop", "zero"] = "drop",
    gain: Gain = "linear",
    run_name: str = "the run",
    qrels_name: str = "the judgments",
    action: str = "evaluate",
) -> Evaluation:
    """``calibration.metrics.evaluate`` with the shared defaults; refuses a run that shares no
    query with the judgments (trec_eval too: "No queries with both results and relevance info"),
    saying what could not be done (``action``)."""
    with ThreadPoolExecutor(max_workers=ENGINE_THREADS) as pool:
        result = evaluate(
            qrels,
            run,
            ks=cutoffs(ks),
            min_grade=min_grade_of(qrels, min_grade),
            missing=missing,
            gain=gain,
            executor=pool,
        )
    refuse_nothing_evaluated(result, run_name, qrels_name, action)
    return result


def coverage_of(
    qrels: Qrels, qids: Sequence[str], corpus_size: int | None = None, corpus_ids: set[str] | None = None
) -> dict[str, float | None] | None:
    """Label coverage (judged documents / corpus size) of each query, as the audit counts it;
    None when the corpus size is not known ("coverage unknown", never a made-up figure)."""
    if corpus_size is None and corpus_ids is None:
        return None  # before qrels.grades: a dict of every judgment (0.1 s, 200 MB at 2M)
    size = corpus_size_of(qrels.grades, corpus_size, corpus_ids)
    if size is None:
        return None
    return {qid: label_coverage(qrels.grades.get(qid, {}), size, corpus_ids) for qid in qids}


# ---------------------------------------------------------------- audit


def stage1_of(k: int, fetch_run: Run | None, fetch_depth: int | None, read_to: int | None) -> str:
    """Stage 1 in words, the one rule of the CLI and the pages: ``--fetch-run``, else
    ``--fetch-depth``, else a run deeper than k is its own stage 1 (read to its full depth,
    ``read_to``: the audit's ``fetch_depth``); a run no deeper than k has none."""
    if fetch_run is not None:
        return f"stage 1 = the fetch run {fetch_run.name!r} (all of it)"
    if fetch_depth is not None and read_to is not None and read_to < fetch_depth:
        return f"stage 1 = the run read to depth {read_to}, all of it (--fetch-depth {fetch_depth} is deeper than the run)"
    if fetch_depth is not None:
        return f"stage 1 = the run read to depth {fetch_depth}"
    if read_to is not None:
        return f"stage 1 taken as the run's depth {read_to} (no --fetch-depth or --fetch-run)"
    return f"stage 1 unknown: the run is no deeper than k = {k} and no --fetch-depth or --fetch-run was given"


def same_text_of(run: Run | Scorer, text_keys: Mapping[str, str], k: int) -> dict[str, list[list[str]]]:
    """Per query of ``run``, the pairs of different ids of the same text in its top k
    (:func:`calibration.audit.same_text_pairs`). The run must be in memory (a :class:`Run`): a run
    file read in pieces gives counts, not rankings (:class:`InvalidAudit`)."""
    if not isinstance(run, Run):
        raise InvalidAudit(
            "comparing chunk texts needs the run read whole; give a Run, not a run file's scorer"
        )
    return {qid: same_text_pairs(ranking, text_keys, k) for qid, ranking in run.rankings().items()}


def audit_data(
    qrels: Qrels,
    run: Run | Scorer,
    k: int | None = None,
    min_grade: int | None = None,
    *,
    fetch_run: Run | None = None,
    fetch_depth: int | None = None,
    corpus_size: int | None = None,
    corpus_ids: set[str] | None = None,
    truth: Qrels | None = None,
    gates: Sequence[Gate] = (),
    policy: Policy = DEFAULT_POLICY,
    min_judged: float | None = None,
    stage1_min: float | None = None,
    missing: str = "drop",
    run_name: str = "the run",
    qrels_name: str = "the judgments",
    text_keys: Mapping[str, str] | None = None,
    same_text: Mapping[str, list[list[str]]] | None = None,
    provenance: str | None = None,
) -> AuditReport:
    """The audit at one cutoff (default :data:`DEFAULT_K`) with the shared threshold rule; the bars
    of ``low_judged_at_k`` and ``stage1_recall_low`` (and the ``stage1-recall`` gate) are the
    policy's rules, ``min_judged`` / ``stage1_min`` moving a bar with the rule's strictness kept.
    Stage 1 is :func:`stage1_of`'s (said in the report's ``stage1``). ``run``: a :class:`Run`, or
    a run file's :class:`~calibration.scorer.Scorer` (``calibration.run_file.file_scorer``: read
    in pieces, never whole when it is grouped by query). ``text_keys`` (document id -> text key,
    ``annotation.records.read_text_keys``; the run then a :class:`Run`) or ``same_text``
    (:func:`same_text_of`, already found): duplicates by text too, else by id only (the report's
    ``duplicates_by``). ``provenance``: what golden.yaml's provenance says of this run
    (:func:`calibration.provenance.pooled_from_this_run`), kept as the report's ``provenance``."""
    k = k or DEFAULT_K
    if same_text is None and text_keys is not None:
        same_text = same_text_of(run, text_keys, k)
    with ThreadPoolExecutor(max_workers=ENGINE_THREADS) as pool:
        result = audit_run(
            qrels,
            run,
            k,
            min_grade=min_grade_of(qrels, min_grade),
            fetch_run=fetch_run,
            fetch_depth=fetch_depth,
            corpus_size=corpus_size,
            corpus_ids=corpus_ids,
            truth=truth,
            gates=gates,
            min_judged=_bar(policy, "judged_at_k", min_judged),
            stage1_min=_bar(policy, "stage1_recall", stage1_min),
            missing="zero" if missing == "zero" else "drop",
            executor=pool,
            own_depth=True,
            same_text=same_text,
        )
    if not result["queries"]:
        raise NothingToEvaluate.no_shared_query(run_name, qrels_name, "audit")
    result["stage1"] = stage1_of(k, fetch_run, fetch_depth, result["fetch_depth"])
    if provenance:
        result["provenance"] = provenance
    return result


def _bar(policy: Policy, rule: str, value: float | None) -> Bar:
    """The policy's bar of ``rule``, at ``value`` when one is given (its strictness kept); a rule
    turned off never fires (a bar every figure meets)."""
    bar = policy.bar(rule)
    if bar is None:
        return _NO_BAR
    return bar if value is None else Bar(bar.op, value)


# ---------------------------------------------------------------- compare


def compare_runs(
    qrels: Qrels,
    run_a: Run,
    run_b: Run,
    ks: Sequence[int] | None = None,
    min_grade: int | None = None,
    *,
    permutations: int = DEFAULT_PERMUTATIONS,
    seed: int = DEFAULT_SEED,
    names: tuple[str, str] = ("run A", "run B"),
    qrels_name: str = "the judgments",
) -> Comparison:
    """Score both runs, then per measure a paired randomization test and t-test over the queries
    where it is defined for both (``calibration.stats.significance.paired_test``) and per query B - A
    (None where either is undefined); each measure's ``unjudged``: the unjudged chunks in each
    run's top k and the interval of B - A as they are relevant or not (``calibration.unjudged``)."""
    from calibration.stats.significance import (
        paired_test,  # start-up: scipy, ~0.6 s that metrics and audit never need
    )

    grade = min_grade_of(qrels, min_grade)
    a, b = (
        evaluate_run(qrels, run, ks, grade, run_name=name, qrels_name=qrels_name, action="compare")
        for run, name in zip((run_a, run_b), names)
    )
    if a.qids != b.qids:  # both are the judged queries, in the judgments' order
        raise NothingToEvaluate(f"{names[0]} and {names[1]} were scored over different queries")
    tests = {name: paired_test(a.values[name], b.values[name], permutations, seed) for name in a.measures}
    deltas: dict[str, dict[str, float | None]] = {}
    for i, qid in enumerate(a.qids):
        row: dict[str, float | None] = {}
        for name in a.measures:
            x, y = a.values[name][i], b.values[name][i]
            row[name] = None if x != x or y != y else float(y - x)
        deltas[qid] = row
    deepest = max(cutoffs(ks), default=0)
    top_a, top_b = (tops(run, deepest, qrels.grades, grade) for run in (run_a, run_b))
    shares = unjudged_share(qrels.grades, top_a, top_b, deltas, grade)
    for name, share in shares.items():
        tests[name]["unjudged"] = share
    relevant = sum(1 for qid in a.qids if any(g >= grade for g in qrels.grades.get(qid, {}).values()))
    notes = [few_queries_note(relevant)] if relevant < MIN_QUERIES else []
    return Comparison(grade, cutoffs(ks), permutations, seed, tests, deltas, notes)


# ---------------------------------------------------------------- agreement


def agree_files(
    labels_csv: PathLike | None = None,
    qrels_pair: Sequence[PathLike] | None = None,
    *,
    trusted: float,
    statistic: str,
    sequential: bool = False,
    min_queries: int = VERDICT_QUERIES,
    rubric: str | None = None,
) -> AgreementReport:
    """Every pair of raters of a long CSV, or of two qrels files (raters named after the files):
    ``calibration.stats.agreement.agreement_report``. ``sequential``: the rows' order (the CSV's, or
    the second qrels file's) is the labelling order.

    The CSV: ``item,rater,label`` with an optional ``query_id`` column, or the CSV ``annotation export
    --format csv`` writes (:func:`calibration.label_rows.long_labels`: each annotator's newest label of
    each item, of one ``rubric``). Where the labels carry a query (the query_id column, the qrels' query ids), each pair's
    interval is clustered by it and fewer than ``min_queries`` queries give no verdict (issue #39)."""
    from calibration.stats.agreement import InvalidRatings, agreement_report  # start-up: scikit-learn, ~1 s

    if bool(labels_csv) == bool(qrels_pair):
        raise InvalidInput("give LABELS.csv or two qrels files (one of them)")
    people: int | None = 2  # a CSV's pair: two raters; a qrels file may hold many people's grades
    queries: dict[Any, Any] | None
    if qrels_pair:
        if rubric is not None:
            raise InvalidInput("--rubric reads an annotation export; two qrels files hold relevance grades")
        if len(qrels_pair) != 2:
            raise InvalidInput(f"two qrels files to compare; got {len(qrels_pair)}")
        if str(qrels_pair[0]) == str(qrels_pair[1]):
            raise InvalidInput("the two qrels files are the same file")
        rows: list[tuple[str, str, int | str | None]] = []
        queries = {}
        for path in qrels_pair:
            qrels = read_judgments(path)
            for q, docs in qrels.grades.items():
                for d, g in docs.items():
                    rows.append((f"{q}\t{d}", str(path), g))
                    queries[f"{q}\t{d}"] = q
        where = " and ".join(map(str, qrels_pair))
        people = None
    else:
        rows, queries = long_labels(labels_csv or "", rubric)
        where = str(labels_csv)
    try:
        return agreement_report(
            rows,
            trusted=trusted,
            statistic=statistic,
            sequential=sequential,
            queries=queries,
            min_queries=min_queries,
            people=people,
        )
    except InvalidRatings as exc:
        raise InvalidInput(f"{where}: {exc}") from None
