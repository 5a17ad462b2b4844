"""The policy as a build gate: which policy and which store ``check`` reads, the verdict settings
every face resolves the same way, and the history of recorded checks (the check itself is
:func:`calibration.actions.check`).

One rule each, for the CLI and the pages alike:

- the policy: ``--policy FILE``, else ``./denominator.yaml`` when present, else the essay's table
  (:func:`load_policy`), then ``--rule`` overrides;
- the verdict's bar and statistic: the option given, else the policy's (:func:`verdict_settings`);
- the store ``check`` reads: ``--db``, else ``$DENOMINATOR_DB``, else ``./denominator.db`` when it
  exists; ``--no-store`` leaves it out (:func:`check_store`);
- stage 1: ``--fetch-run``, else ``--fetch-depth``, else the run's own depth when deeper than k
  (:func:`calibration.audit.stage1_of`).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING

from annotation.errors import FormatError
from calibration.errors import InvalidInput
from calibration.inputs import PathLike
from calibration.policy.history import (
    HISTORY_FIGURES,
    diff_checks,
    file_digest,
    history_data,
    labels_digest,
    query_digest,
    query_set,
    record_check,
    settings_changed,
)
from calibration.policy.rules import DEFAULT_POLICY, Policy, override, policy_from_mapping
from calibration.stats.verdict import TRUSTED

__all__ = [
    "HISTORY_FIGURES",
    "check_store",
    "diff_checks",
    "file_digest",
    "history_data",
    "kappa_bar",
    "labels_digest",
    "load_policy",
    "query_digest",
    "query_set",
    "record_check",
    "settings_changed",
    "verdict_settings",
]

if TYPE_CHECKING:  # the store is imported only by a check that reads one (check --no-store never loads it)
    pass

# ---------------------------------------------------------------- policy and check

POLICY_FILE = "denominator.yaml"


def load_policy(
    path: PathLike | None = None, overrides: Sequence[str] = (), *, cwd: PathLike = "."
) -> Policy:
    """The policy in force: ``path``, else ``./denominator.yaml`` when present, else the defaults
    (the essay's table); then the command line's ``overrides`` (``stage1_recall>0.9``)."""
    where = path if path is not None else os.path.join(cwd, POLICY_FILE)
    if path is None and not os.path.exists(where):
        policy = DEFAULT_POLICY
    else:
        # start-up: yaml (~20 ms) only when a policy file is read, not for the defaults (#42)
        from annotation.formats.plain_yaml import read_plain_yaml

        # read as golden.yaml is: a regular file, plain YAML (no alias bomb), not too deep, each key once
        data = read_plain_yaml(where, PolicyFileError, "expected corpus, undecided, rules, diagnosis")
        policy = policy_from_mapping(data, str(where))
    return override(policy, overrides)


def kappa_bar(policy: Policy) -> float:
    """The kappa a judge needs for the verdict ``trusted``: the policy's ``kappa`` rule, else
    :data:`~calibration.stats.verdict.TRUSTED` (what ``agree``, ``review``, ``check`` and the pages use)."""
    bar = policy.bar("kappa")
    return bar.value if bar is not None else TRUSTED


def verdict_settings(
    policy: Policy, trusted: float | None = None, statistic: str | None = None
) -> tuple[float, str]:
    """The verdict's bar and statistic, the one resolution every face and ``check`` call: the option
    given (``--trusted``, ``--statistic``, a page's widget), else the policy's (its ``kappa`` rule and
    ``kappa_statistic``), else the defaults (:data:`~calibration.stats.verdict.TRUSTED`, unweighted)."""
    bar = float(trusted) if trusted is not None else kappa_bar(policy)
    return bar, statistic or policy.kappa_statistic


class PolicyFileError(FormatError):
    """A policy file that cannot be read (missing, not text)."""


class NoStore(InvalidInput):
    """A store named by ``--db`` or ``DENOMINATOR_DB`` that is not there."""


def check_store(db: str | None = None, *, no_store: bool = False) -> str | None:
    """The store ``check`` reads, one rule for the CLI and the page: ``db`` (``--db``), else
    ``$DENOMINATOR_DB``, else ``./denominator.db``; a named one (``--db`` or the variable) must be there
    (:class:`NoStore`), the default file may be missing (then no store). ``no_store``: None."""
    if no_store:  # before the store's import: check --no-store loads neither it nor pandas
        return None
    # start-up: the store (sqlite-utils, ~0.3 s), only for check, which is about to open it
    from annotation.store import database_exists, default_db_path, empty_file, shown_location

    named = db or os.environ.get("DENOMINATOR_DB")
    path = named or default_db_path()
    if empty_file(path):  # check only reads: no schema is written into it
        raise NoStore(
            f"{shown_location(path)} is an empty file, not a Denominator database; it was left as it was"
        )
    if database_exists(path):
        return path
    if named:
        where = "--db" if db else "DENOMINATOR_DB"
        raise NoStore(
            f"no such database: {shown_location(path)} (named by {where}); --no-store leaves the store out"
        )
    return None
