"""Agreement and inference: the statistics the judge's calibration rests on (pure: numpy and
scipy only).

- :mod:`~calibration.stats.kappa`: Cohen's kappa (unweighted, linear, quadratic) of a pair of
  raters, every pair of a table, a grade scale binarised; :mod:`~calibration.stats.kappa_interval`
  its score interval; :mod:`~calibration.stats.kappa_clustered` that interval when labels come in
  queries (clustered by query, with the design); :mod:`~calibration.stats.bootstrap` the bootstrap one;
  :mod:`~calibration.stats.interval` the one interval type both return;
- :mod:`~calibration.stats.multirater`: Fleiss' kappa and Krippendorff's alpha;
- :mod:`~calibration.stats.agreement`: the ``agree`` report (pairs, the human ceiling);
- :mod:`~calibration.stats.position`: a pairwise judge's position bias;
- :mod:`~calibration.stats.ppi`: prediction-powered inference and the Rogan-Gladen correction;
  :mod:`~calibration.stats.ppi_design` PPI when labels come in queries (and when PPI cannot help);
  :mod:`~calibration.stats.ppi_budget` the labels a target width needs;
- :mod:`~calibration.stats.significance`: the paired tests of ``compare``;
- :mod:`~calibration.stats.verdict`: the verdict on a kappa and its interval, and its defaults
  (its function ``verdict`` is imported from the module: the package's attribute of that name is
  the module).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from annotation.lazy import lazy_api

if TYPE_CHECKING:  # the names, for readers and the type checker (imported at run time when first used)
    from calibration.stats.agreement import RaterPairs, agreement_report
    from calibration.stats.bootstrap import bootstrap_ci
    from calibration.stats.interval import Interval
    from calibration.stats.kappa import WEIGHTINGS, InvalidRatings, UnequalRaters, binarised, cohen, cohen_all
    from calibration.stats.kappa_clustered import kappa_ci_clustered
    from calibration.stats.kappa_interval import kappa_ci
    from calibration.stats.multirater import fleiss, krippendorff_alpha
    from calibration.stats.position import position_bias, summarize_pairs
    from calibration.stats.ppi import ppi_mean, ppi_or_reason, ppi_report, rogan_gladen
    from calibration.stats.ppi_budget import label_budget
    from calibration.stats.significance import paired_test, randomization_p
    from calibration.stats.verdict import TRUSTED, advice, labels_to_decide

__all__, __getattr__ = lazy_api(
    __name__,
    {
        "agreement": "RaterPairs agreement_report",
        "bootstrap": "bootstrap_ci",
        "interval": "Interval",
        "kappa": "WEIGHTINGS InvalidRatings UnequalRaters binarised cohen cohen_all",
        "kappa_clustered": "kappa_ci_clustered",
        "kappa_interval": "kappa_ci",
        "multirater": "fleiss krippendorff_alpha",
        "position": "position_bias summarize_pairs",
        "ppi": "ppi_mean ppi_or_reason ppi_report rogan_gladen",
        "ppi_budget": "label_budget",
        "significance": "paired_test randomization_p",
        "verdict": "TRUSTED advice labels_to_decide",
    },
)
