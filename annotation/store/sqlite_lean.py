"""sqlite-utils imported without pandas and numpy (#42: 0.3 s of CPU at every start of a command
that opens the store, the judge's among them). Every module of the store imports it from here.

sqlite-utils imports pandas and numpy when they are installed only to name their scalar types'
column types (``sqlite_utils.db.COLUMN_TYPE_MAPPING``) for a table whose columns it infers from
values. The store never lets it infer one: its tables are made by SQL in
:mod:`annotation.store.migrations` and its rows written by SQL. So while sqlite-utils is imported
they are hidden (an import of either raises ImportError, which sqlite-utils expects of a package
not installed), unless already loaded (the app's pages load pandas first: then they cost nothing
and stay). The window is that one import, at the store's first import; another thread importing
pandas or numpy in it would get ImportError (the commands import the store before any thread).
"""

from __future__ import annotations

import sys

_HIDDEN = [name for name in ("pandas", "numpy") if name not in sys.modules]
for _name in _HIDDEN:
    sys.modules[_name] = None  # type: ignore[assignment]  # the import system's "not installed" mark
try:
    import sqlite_utils
    from sqlite_utils.migrations import Migrations
finally:
    for _name in _HIDDEN:
        if _name in sys.modules and sys.modules[_name] is None:
            del sys.modules[_name]

__all__ = ["Migrations", "sqlite_utils"]
