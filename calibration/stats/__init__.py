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
- :mod:`~calibration.stats.judged`: the one kappa verdict every face prints, with its design;
  :mod:`~calibration.stats.kappa_sequence` the confidence sequence read when the verdict is read
  again on more labels; :mod:`~calibration.stats.plan` the labels a verdict needs, by design;
- :mod:`~calibration.stats.pass_rate`: the people's pass rate with its one interval, by query;
- :mod:`~calibration.stats.verdict`: the verdict on a kappa and its interval, and its defaults
  (its function ``verdict`` is imported from the module: the package's attribute of that name is
  the module).
"""
