"""The policy and the build gate: the essay's bars as rules a run is held to.

- :mod:`~calibration.policy.rules`: the policy (every bar, the essay's table as defaults), read
  from a mapping and overridden from the command line (pure);
- :mod:`~calibration.policy.check`: a run held to the policy: figures, diagnosis, rules (pure);
  :mod:`~calibration.policy.check_text` its table, Markdown and history in words (pure);
- :mod:`~calibration.policy.findings`: the audit's findings grouped by kind;
  :mod:`~calibration.policy.finding_words` what each finding says, light enough for ``--help``;
- :mod:`~calibration.policy.keys`: the plain keys (``min_queries``, ``stale_after_weeks``,
  ``undecided``, ``not_evaluated``), read alike from a file and ``--rule``;
- :mod:`~calibration.policy.history`: recorded checks and the difference of two, settings first.

The policy file, the verdict settings and the store ``check`` reads are IO: they live in
:mod:`calibration.gate`, outside this pure family.
"""
