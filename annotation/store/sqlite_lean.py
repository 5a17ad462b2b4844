"""sqlite-utils imported without pandas and numpy (#42: 0.3 s of CPU at every start of a command
that opened the store, the judge's among them). The store imports it from here, and only to apply
a pending migration (:meth:`annotation.store.migrations.MigrationSet.apply`; a current store opens
through :mod:`annotation.store.sqlite_handle`).

sqlite-utils imports pandas and numpy when they are installed only to name their scalar types'
column types (``sqlite_utils.db.COLUMN_TYPE_MAPPING``) for a table whose columns it infers from
values. The store never lets it infer one: its tables are made by SQL in
:mod:`annotation.store.migrations` and its rows written by SQL. So while sqlite-utils is imported
they are hidden (an import of either raises ImportError, which sqlite-utils expects of a package
not installed), unless already loaded. The import now comes when a store is first migrated, which
may be in a process with other threads (the app's server, a judge run's preloading): another
thread importing pandas or numpy in that window would get ImportError, so they are hidden only
while this is the process's one thread; with others running, sqlite-utils imports them as usual.
"""

from __future__ import annotations

import sys
import threading

_HIDDEN = (
    [name for name in ("pandas", "numpy") if name not in sys.modules] if threading.active_count() == 1 else []
)
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
