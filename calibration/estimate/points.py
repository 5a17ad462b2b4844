"""Horvitz-Thompson estimates of the relevant documents the pooled judgments missed
(pure: numpy and scipy only).

The design (annotation/pooling.py draws it): per query, the unjudged candidates are split
into strata h; from stratum h, of N_h candidates, a simple random sample without
replacement of n_h is judged, so every sampled document has inclusion probability
pi_h = n_h / N_h; y_h of the n_h are relevant (grade >= min_grade).

Input: a stratum is a dict ``{"stratum": name, "N": N_h, "n": n_h, "labels": [...]}``
(``n`` may be left out: it is ``len(labels)``; labels are grades, 0/1 or booleans, one per
sampled document), a tuple ``(name, N, n, labels)``, or a :class:`LabelledStratum`. For
recall@k each stratum also carries ``"in_top_k"`` (one boolean per sampled document: is it
in the run's top k) and ``"N_top_k"`` (how many of the stratum's N_h candidates, sampled or
not, are in the top k). :func:`strata_from_ids` builds these from document ids.

- unjudged relevant  U = sum_h N_h y_h / n_h (each sampled relevant document weighs
  1/pi_h; D. G. Horvitz, D. J. Thompson, JASA 47:663-685, 1952);
- its variance under stratified SRSWOR (W. G. Cochran, Sampling Techniques, 3rd ed., 1977,
  eq. 5.6): V = sum_h N_h^2 (1 - n_h/N_h) s_h^2 / n_h, s_h^2 = y_h (n_h - y_h) / (n_h (n_h - 1)).
  A stratum with n_h = N_h is known exactly (variance 0); with n_h = 1 < N_h, s_h^2 is
  replaced by 1/4, the largest variance of a 0/1 variable, so V is an upper bound (``notes``
  names the stratum);
- |Rel| = judged relevant (known exactly) + U.

Undefined is not zero: a stratum with N_h > 0 candidates and no sample leaves U and |Rel|
undefined (``None`` with the reason). The intervals: :mod:`calibration.estimate.intervals`.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from calibration.estimate.intervals import check_interval, count_interval, z_value

if TYPE_CHECKING:
    from numpy.typing import NDArray

__all__ = [
    "LabelledStratum",
    "estimate_rel",
    "estimate_unjudged_relevant",
    "is_relevant",
    "labelled_strata",
    "rel_from_unjudged",
    "strata_from_ids",
    "unjudged_from_strata",
    "whole_number",
]


# ------------------------------------------------------------------ input


@dataclass(frozen=True, eq=False)
class LabelledStratum:
    """One stratum's labelled sample: ``N`` candidates, ``n`` of them sampled and labelled,
    ``rel`` (one boolean per labelled document: grade >= min_grade); for recall@k also
    ``in_top`` (one boolean per labelled document: in the run's top k) and ``N_top`` (the
    stratum's candidates in the top k, sampled or not). Built by :func:`labelled_strata`
    from the public input forms, or by the caller that knows them valid (calibration.audit,
    from the golden file's :class:`~annotation.model.SamplingDesign`)."""

    name: str
    N: int
    n: int
    rel: NDArray[np.bool_]  # bool per sampled document
    in_top: NDArray[np.bool_] | None = None  # bool per sampled document, or None
    N_top: int | None = None

    @property
    def y(self) -> int:
        return int(self.rel.sum())

    @classmethod
    def from_relevance(
        cls,
        name: str,
        N: int,
        relevant: Sequence[bool],
        in_top_k: Sequence[bool] | None = None,
        N_top_k: int | None = None,
    ) -> LabelledStratum:
        """From plain lists (n = len(relevant)), unchecked: for a caller whose counts come
        from a checked design."""
        in_top = None if in_top_k is None else np.array(in_top_k, dtype=bool)
        return cls(name, N, len(relevant), np.array(relevant, dtype=bool), in_top, N_top_k)


def whole_number(value: Any, what: str) -> int:
    """``value`` as an int >= 0 (a float with no fraction passes); else ValueError naming ``what``."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        if isinstance(value, (float, np.floating)) and float(value).is_integer():
            value = int(value)
        else:
            raise ValueError(f"{what} is {value!r}; expected a whole number >= 0")
    if value < 0:
        raise ValueError(f"{what} is {value}; expected a whole number >= 0")
    return int(value)


def is_relevant(label: Any, min_grade: float, where: str) -> bool:
    """A boolean label as it is; a grade: grade >= min_grade; anything else: ValueError."""
    if isinstance(label, (bool, np.bool_)):
        return bool(label)
    if isinstance(label, (int, float, np.integer, np.floating)) and not (
        isinstance(label, float) and math.isnan(label)
    ):
        return bool(label >= min_grade)
    raise ValueError(f"{where}: label {label!r}; expected a grade (number) or a boolean")


def labelled_strata(strata: Any, min_grade: float, need_top_k: bool = False) -> list[LabelledStratum]:
    """The strata of the public functions' input (dicts, (name, N, n, labels) tuples, or
    :class:`LabelledStratum`), checked: whole counts, n <= N, one label per sampled document,
    names once; with ``need_top_k``, ``in_top_k`` and a feasible ``N_top_k`` per stratum."""
    if isinstance(strata, (str, bytes, Mapping)) or not isinstance(strata, Iterable):
        raise ValueError("strata: expected a list of strata (dicts or (name, N, n, labels) tuples)")
    if isinstance(min_grade, bool) or not isinstance(min_grade, (int, float)):
        raise ValueError(f"min_grade {min_grade!r}; expected a number")
    out: list[LabelledStratum] = []
    names: set[str] = set()
    for i, raw in enumerate(strata):
        if isinstance(raw, LabelledStratum):  # typed already (calibration.audit builds these)
            if raw.name in names:
                raise ValueError(f"stratum {raw.name!r} appears twice")
            names.add(raw.name)
            if need_top_k and (raw.in_top is None or raw.N_top is None):
                raise ValueError(f"stratum {raw.name!r}: recall@k needs in_top and N_top")
            out.append(raw)
            continue
        if isinstance(raw, Mapping):
            unknown = set(raw) - {"stratum", "N", "n", "labels", "in_top_k", "N_top_k", "pi"}
            if unknown:
                raise ValueError(f"stratum #{i}: unknown field(s) {sorted(unknown)}")
            name = str(raw.get("stratum", f"#{i}"))
            if "N" not in raw or "labels" not in raw:
                raise ValueError(f"stratum {name!r}: expected fields 'N' and 'labels'")
            big_n, n, labels = raw["N"], raw.get("n"), raw["labels"]
            in_top, n_top = raw.get("in_top_k"), raw.get("N_top_k")
        elif isinstance(raw, (tuple, list)) and len(raw) == 4:
            name, big_n, n, labels = str(raw[0]), raw[1], raw[2], raw[3]
            in_top, n_top = None, None
        else:
            raise ValueError(f"stratum #{i}: {raw!r}; expected a dict or a (name, N, n, labels) tuple")
        if name in names:
            raise ValueError(f"stratum {name!r} appears twice")
        names.add(name)
        big_n = whole_number(big_n, f"stratum {name!r}: N")
        if isinstance(labels, (str, bytes)) or not isinstance(labels, Iterable):
            raise ValueError(
                f"stratum {name!r}: labels {labels!r}; expected a list, one per sampled document"
            )
        labels = list(labels)
        n = len(labels) if n is None else whole_number(n, f"stratum {name!r}: n")
        if n != len(labels):
            raise ValueError(
                f"stratum {name!r}: n={n} but {len(labels)} labels; judge the whole sample, or pass "
                "the number labelled as n (a random subset of a simple random sample is one)"
            )
        if n > big_n:
            raise ValueError(f"stratum {name!r}: n={n} sampled exceeds N={big_n} candidates")
        pi = raw.get("pi") if isinstance(raw, Mapping) else None
        if pi is not None and (
            not isinstance(pi, (int, float)) or abs(pi - (n / big_n if big_n else 0.0)) > 1e-9
        ):
            raise ValueError(f"stratum {name!r}: pi={pi!r} disagrees with n/N = {n}/{big_n}")
        rel = np.array([is_relevant(v, min_grade, f"stratum {name!r}") for v in labels], dtype=bool)
        top_mask = None
        if need_top_k:
            if in_top is None or n_top is None:
                raise ValueError(
                    f"stratum {name!r}: recall@k needs 'in_top_k' (one boolean per sampled document) "
                    "and 'N_top_k' (the stratum's candidates in the run's top k; 0 if none)"
                )
            if isinstance(in_top, (str, bytes)) or not isinstance(in_top, Iterable):
                raise ValueError(f"stratum {name!r}: in_top_k {in_top!r}; expected a list of booleans")
            in_top = list(in_top)
            if len(in_top) != n:
                raise ValueError(f"stratum {name!r}: {len(in_top)} in_top_k flags for {n} sampled documents")
            top_mask = np.array([bool(v) for v in in_top], dtype=bool)
            n_top = whole_number(n_top, f"stratum {name!r}: N_top_k")
            m_top = int(top_mask.sum())
            if not m_top <= n_top <= big_n or n_top - m_top > big_n - n:
                raise ValueError(
                    f"stratum {name!r}: N_top_k={n_top} impossible with {m_top} of the {n} sampled in the "
                    f"top k and N={big_n} (need {m_top} <= N_top_k <= {m_top + big_n - n})"
                )
        out.append(LabelledStratum(name, big_n, n, rel, top_mask, n_top if need_top_k else None))
    return out


# ------------------------------------------------------------------ estimates


def _stratum_variance(s: LabelledStratum) -> tuple[float | None, str | None]:
    if s.N == 0 or s.n == s.N:
        return 0.0, None
    if s.n == 0:
        return None, None
    if s.n == 1:
        return s.N**2 * (1 - 1 / s.N) * 0.25, (
            f"stratum {s.name!r}: one sampled document of {s.N}; its variance uses the bound "
            "s^2 <= 1/4 (a sample variance needs two)"
        )
    s2 = s.y * (s.n - s.y) / (s.n * (s.n - 1))
    return s.N**2 * (1 - s.n / s.N) * s2 / s.n, None


def unjudged_from_strata(parsed: list[LabelledStratum], alpha: float, interval: str) -> dict[str, Any]:
    """:func:`estimate_unjudged_relevant` of strata already checked."""
    z = z_value(alpha)
    rows: list[dict[str, Any]] = []
    notes: list[str] = []
    unsampled = [s for s in parsed if s.N > 0 and s.n == 0]
    for s in parsed:
        var, note = _stratum_variance(s)
        if note:
            notes.append(note)
        row: dict[str, Any] = {
            "stratum": s.name,
            "N": s.N,
            "n": s.n,
            "pi": s.n / s.N if s.N else None,
            "relevant_sampled": s.y,
            "estimate": s.N * s.y / s.n if s.n else (0.0 if s.N == 0 else None),
            "variance": var,
            "ci": None,
        }
        if s.N == 0:
            row["ci"] = [0.0, 0.0]
        elif s.n > 0:
            row["ci"] = count_interval([(s.N, s.n, s.y)], var, row["estimate"], z, alpha, interval)
        rows.append(row)
    n_sampled = sum(s.n for s in parsed)
    n_rel = sum(s.y for s in parsed)
    out: dict[str, Any] = {
        "estimate": None,
        "variance": None,
        "se": None,
        "ci": None,
        "alpha": alpha,
        "interval": interval,
        "n_sampled": n_sampled,
        "n_sampled_relevant": n_rel,
        "N_unjudged": sum(s.N for s in parsed),
        "bounds": [float(n_rel), float(sum(s.N - s.n + s.y for s in parsed))],
        "strata": rows,
        "notes": notes,
        "reason": None,
    }
    if unsampled:
        names = ", ".join(f"{s.name!r} (N={s.N})" for s in unsampled)
        out["reason"] = (
            f"no sample from stratum {names}: its relevant count is unknown, so the total is undefined"
        )
        return out
    estimate = float(sum(r["estimate"] for r in rows))
    variance = float(sum(r["variance"] for r in rows))
    out.update(estimate=estimate, variance=variance, se=math.sqrt(variance))
    cells = [(s.N, s.n, s.y) for s in parsed if s.N > 0]
    out["ci"] = count_interval(cells, variance, estimate, z, alpha, interval)
    return out


def estimate_unjudged_relevant(
    strata: Sequence[Any], *, min_grade: float = 1, alpha: float = 0.05, interval: str = "midp"
) -> dict[str, Any]:
    """Horvitz-Thompson estimate of the relevant documents among the unjudged candidates.

    Returns ``{"estimate", "variance", "se", "ci": [low, high], "alpha", "interval",
    "n_sampled", "n_sampled_relevant", "N_unjudged", "bounds": [found, found + unsampled],
    "strata": [{"stratum", "N", "n", "pi", "relevant_sampled", "estimate", "variance",
    "ci"}], "notes", "reason"}``. ``estimate``, ``variance``, ``se`` and ``ci`` are None
    (with ``reason``) when a stratum with candidates has no sample. ``bounds`` is what the
    sample proves whatever the estimate: the relevant documents found, and found plus every
    unsampled candidate."""
    check_interval(interval)
    z_value(alpha)
    return unjudged_from_strata(labelled_strata(strata, min_grade), alpha, interval)


def estimate_rel(
    judged_relevant: int,
    strata: Sequence[Any],
    *,
    min_grade: float = 1,
    alpha: float = 0.05,
    interval: str = "midp",
) -> dict[str, Any]:
    """Estimated |Rel| = judged relevant (known exactly) + estimated unjudged relevant.

    Returns ``{"estimate", "ci", "se", "judged_relevant", "unjudged": <estimate_unjudged_relevant>,
    "n_sampled", "n_sampled_relevant", "alpha", "interval", "reason"}``."""
    judged = whole_number(judged_relevant, "judged_relevant")
    unjudged = estimate_unjudged_relevant(strata, min_grade=min_grade, alpha=alpha, interval=interval)
    return rel_from_unjudged(judged, unjudged)


def rel_from_unjudged(judged: int, unjudged: dict[str, Any]) -> dict[str, Any]:
    """:func:`estimate_rel` from the judged relevant count and :func:`unjudged_from_strata`'s result."""
    defined = unjudged["estimate"] is not None
    return {
        "estimate": judged + unjudged["estimate"] if defined else None,
        "ci": [judged + unjudged["ci"][0], judged + unjudged["ci"][1]] if defined else None,
        "se": unjudged["se"],
        "judged_relevant": judged,
        "unjudged": unjudged,
        "n_sampled": unjudged["n_sampled"],
        "n_sampled_relevant": unjudged["n_sampled_relevant"],
        "alpha": unjudged["alpha"],
        "interval": unjudged["interval"],
        "reason": unjudged["reason"],
    }


# ------------------------------------------------------------------ planning


def strata_from_ids(
    candidates: Mapping[str, Sequence[str]],
    labels: Mapping[str, Any],
    *,
    sampled: Mapping[str, Sequence[str]] | None = None,
    top_k: Collection[str] | None = None,
) -> list[dict[str, Any]]:
    """Strata in this module's input form from document ids.

    ``candidates``: stratum name -> every unjudged candidate id in it (N_h of them);
    ``sampled``: stratum name -> the ids the random sample drew (a stratum left out of it has
    no sample); without ``sampled``, the candidates that have a label are taken as the sample,
    which is right only when every label on a candidate came from the random draw (a chunk
    labelled for another reason is no random draw and would bias the estimate);
    ``labels``: id -> grade; ``top_k``: the run's top-k ids (adds ``in_top_k`` and
    ``N_top_k``)."""
    seen: dict[str, str] = {}
    out = []
    top = set(top_k) if top_k is not None else None
    for name, ids in candidates.items():
        members = list(dict.fromkeys(ids))
        for doc in members:
            if doc in seen:
                raise ValueError(f"document {doc!r} is in stratum {seen[doc]!r} and in {name!r}")
            seen[doc] = name
        if sampled is not None:
            sample = list(dict.fromkeys(sampled.get(name, ())))
            member_set = set(members)
            stray = [d for d in sample if d not in member_set]
            if stray:
                raise ValueError(f"stratum {name!r}: sampled {stray[:3]} are not among its candidates")
            missing = [d for d in sample if d not in labels]
            if missing:
                raise ValueError(f"stratum {name!r}: sampled {missing[:3]} have no label")
        else:
            sample = [d for d in members if d in labels]
        row: dict[str, Any] = {
            "stratum": name,
            "N": len(members),
            "n": len(sample),
            "labels": [labels[d] for d in sample],
        }
        if top is not None:
            row["in_top_k"] = [d in top for d in sample]
            row["N_top_k"] = sum(1 for d in members if d in top)
        out.append(row)
    return out
