"""A hole sample (#30): the file ``python -m calibration holes ... --sample N --seed S --out FILE``
writes and people grade, read and checked once for every command that reads one
(``annotation pool --holes``, ``calibration metrics|compare|check --hole-sample``, the pages).

It is a golden.yaml file whose ``sampling`` section records the design::

    sampling:
      design: {kind: holes, k: 10, seed: 0, population: 225, sample: 20, runs: [...], judgments: ...}
      queries:
        q_milk:
          holes: {size: 3, sampled: [s2, x1, x3]}

one stratum ``holes`` per sampled query, taking every hole of its top k (``size`` equals the
chunks listed); people's grades on them go in its ``grades`` (or in GOLDEN, once labelled).
Whether its queries are the ones its seed draws is checked where the run is known
(:mod:`calibration.holes.files`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from annotation.errors import DenominatorError
from annotation.formats.golden import read_golden

__all__ = ["HOLE_SAMPLE", "HoleSample", "InvalidHoleSample", "read_hole_sample"]

HOLE_SAMPLE = "holes"  # the design's kind, and the name of each query's one stratum


class InvalidHoleSample(DenominatorError, ValueError):
    """A file that is not a hole sample, or whose design does not add up."""


@dataclass(frozen=True)
class HoleSample:
    """A hole sample as read back: the design and people's grades the file holds."""

    path: str
    k: int
    seed: int
    population: int
    holes: dict[str, tuple[str, ...]]  # sampled query -> the holes people label
    grades: dict[str, dict[str, int]]  # people's grades the file holds
    design: dict[str, Any]  # the design as recorded (kind, k, seed, population, sample, runs, ...)
    # who graded its holes: the file's judged_by, or the people whose labels the app read (#40)
    graded_by: tuple[str, ...] = ()


def read_hole_sample(path: str | os.PathLike[str]) -> HoleSample:
    """A golden.yaml whose sampling section is a hole sample (``design.kind: holes``), checked:
    its k, seed and population whole numbers, its sample size and runs what they say, one stratum
    ``holes`` per query holding every hole; :class:`InvalidHoleSample` (or the golden reader's
    error) names what is wrong."""
    qrels = read_golden(path)
    design = qrels.sampling
    params = (design.parameters or {}) if design else {}
    if design is None or params.get("kind") != HOLE_SAMPLE:
        raise InvalidHoleSample(
            f"{os.fspath(path)} is not a hole sample (its sampling section has no design with kind: holes); "
            "python -m calibration holes GOLDEN RUN -k K --sample N --out FILE writes one"
        )
    numbers = {}
    for key in ("k", "seed", "population"):
        value = params.get(key)
        if isinstance(value, bool) or not isinstance(value, int) or value < (1 if key != "seed" else 0):
            raise InvalidHoleSample(f"{path}: sampling.design.{key} is {value!r}; expected a whole number")
        numbers[key] = value
    for key, kind in (("sample", int), ("runs", list)):
        value = params.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, kind)):
            raise InvalidHoleSample(
                f"{path}: sampling.design.{key} is {value!r}; expected {'a whole number' if kind is int else 'a list of run names'}"
            )
    if not design.queries:
        raise InvalidHoleSample(f"{path}: the hole sample names no query (sampling.queries is empty)")
    if isinstance(params.get("sample"), int) and params["sample"] != len(design.queries):
        raise InvalidHoleSample(
            f"{path}: sampling.design.sample says {params['sample']} queries, sampling.queries holds {len(design.queries)}"
        )
    holes: dict[str, tuple[str, ...]] = {}
    for qid, strata in design.queries.items():
        if [s.name for s in strata] != [HOLE_SAMPLE] or strata[0].size != len(strata[0].sampled):
            raise InvalidHoleSample(
                f"{path}: sampling.queries.{qid}: expected one stratum 'holes' that takes every hole "
                "(size equal to the chunks sampled)"
            )
        holes[qid] = strata[0].sampled
    return HoleSample(
        path=str(path),
        k=numbers["k"],
        seed=numbers["seed"],
        population=numbers["population"],
        holes=holes,
        grades={q: dict(g) for q, g in qrels.grades.items() if g},
        design=dict(params),
        graded_by=tuple(qrels.meta.get("judged_by") or ()) if any(qrels.grades.values()) else (),
    )
