"""The policy and the build gate: the essay's bars as rules a run is held to.

- :mod:`~calibration.policy.rules`: the policy (every bar, the essay's table as defaults), read
  from a mapping and overridden from the command line (pure);
- :mod:`~calibration.policy.check`: a run held to the policy: figures, diagnosis, rules (pure);
  :mod:`~calibration.policy.check_text` its table, Markdown and history in words (pure);
- :mod:`~calibration.policy.findings`: the audit's findings grouped by kind;
  :mod:`~calibration.policy.finding_words` what each finding says, light enough for ``--help``;
- :mod:`~calibration.policy.gate`: the policy file, the verdict settings, which store ``check``
  reads, the check itself and its recorded history (the one place the faces get them).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from annotation.lazy import lazy_api

if TYPE_CHECKING:  # the names, for readers and the type checker (imported at run time when first used)
    from calibration.policy.check import check_report
    from calibration.policy.check_text import check_markdown, check_table
    from calibration.policy.finding_words import FINDINGS, finding_text
    from calibration.policy.findings import FindingGroup, group_findings
    from calibration.policy.gate import NoStore, PolicyFileError, check_data, load_policy
    from calibration.policy.rules import DEFAULT_POLICY, Bar, InvalidPolicy, Policy, Rule, policy_from_mapping

__all__, __getattr__ = lazy_api(
    __name__,
    {
        "check": "check_report",
        "check_text": "check_markdown check_table",
        "finding_words": "FINDINGS finding_text",
        "findings": "FindingGroup group_findings",
        "gate": "NoStore PolicyFileError check_data load_policy",
        "rules": "DEFAULT_POLICY Bar InvalidPolicy Policy Rule policy_from_mapping",
    },
)
