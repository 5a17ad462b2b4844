"""A package's public names, imported when first used (PEP 562).

``calibration.estimate`` names its public API in its ``__init__``, but the light entries (``--help``,
the option parsers) import one small module of it; an ``__init__`` that imported every module would
load numpy and scipy for them. (``calibration.stats`` and ``calibration.policy`` had such an API too,
imported nowhere: their ``__init__`` is now a docstring index, #41.) So the ``__init__`` lists where each name lives and imports it on first use; the same
names are imported under ``TYPE_CHECKING`` for readers and the type checker (a structure test holds
the two lists equal).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any


def lazy_api(package: str, api: dict[str, str]) -> tuple[list[str], Callable[[str], Any]]:
    """``(__all__, __getattr__)`` for ``package``: ``api`` maps a submodule (relative) to its
    public names, space-separated."""
    where = {name: module for module, names in api.items() for name in names.split()}

    def __getattr__(name: str) -> Any:
        if name not in where:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(f"{package}.{where[name]}"), name)

    return sorted(where), __getattr__
