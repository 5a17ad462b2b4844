"""What the pooled judgments missed, estimated from a sample (pure: numpy and scipy only).

A pool judged to depth d misses every relevant document ranked below d by all the pooled
runs, so |Rel| is too small and recall too high (the worked example's q_broad: 8 judged
relevant, 12 truly relevant; recall@5 0.500 against the labels, 0.417 against the truth).
From a probability sample of the unjudged candidates (annotation/pooling.py draws it;
golden.yaml's ``sampling`` section records it) this estimates |Rel| and recall@k with their
intervals (issue #8; the idea of statAP, J. A. Aslam, V. Pavlu, E. Yilmaz, SIGIR 2006, and
infAP, E. Yilmaz, J. A. Aslam, CIKM 2006). The parts, lowest first:

- :mod:`calibration.estimate.intervals`: the intervals (stratified mid-p, exact, Jeffreys,
  Wald) and the Neyman construction that spends alpha where the design allows;
- :mod:`calibration.estimate.points`: the input strata and the Horvitz-Thompson estimates
  of the unjudged relevant and of |Rel|; sample sizes for a target width;
- :mod:`calibration.estimate.recall`: recall@k of one run with its interval, the mean and
  ratio over queries with a bootstrap interval, infAP.

- :mod:`calibration.estimate.audit`: the audit's estimate per query (``audit --estimate``).

This package names their public API, imported when first used (:mod:`annotation.lazy`: the
audit's module loads without scipy). Which interval to choose, the coverage measured on
Cranfield, and the alternatives tried: docs/estimate.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from annotation.lazy import lazy_api

if TYPE_CHECKING:  # the names, for readers and the type checker (imported at run time when first used)
    from calibration.estimate.audit import estimate_run
    from calibration.estimate.intervals import INTERVALS
    from calibration.estimate.points import (
        LabelledStratum,
        estimate_rel,
        estimate_unjudged_relevant,
        strata_from_ids,
    )
    from calibration.estimate.recall import aggregate_recall, estimate_recall_at_k

__all__, __getattr__ = lazy_api(
    __name__,
    {
        "audit": "estimate_run",
        "intervals": "INTERVALS",
        "points": "LabelledStratum estimate_rel estimate_unjudged_relevant strata_from_ids",
        "recall": "aggregate_recall estimate_recall_at_k",
    },
)
