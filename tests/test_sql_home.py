"""All SQL lives in the store (``annotation/store/``; DESIGN, layer 2), checked on the code
itself with ``ast`` (comments and docstrings do not count):

- no call to ``.execute(``, ``.executemany(``, ``.executescript(`` or ``.query(`` on anything;
- no string literal (f-strings included) that starts, after whitespace or an opening
  parenthesis, with a SQL statement: SELECT, INSERT INTO, UPDATE ... SET, DELETE FROM,
  CREATE TABLE/INDEX/TRIGGER/VIEW, PRAGMA, WITH ... AS (;
- no ``store.db`` (the store's connection) and no ``sqlite3`` or ``sqlite_utils`` import

anywhere in ``annotation/``, ``judge/``, ``calibration/``, or ``denominator/`` (``app.py`` among it) outside the
store package. The workflows ask the store a named question (``store.pooled_pairs(...)``,
``store.gradable_pair_items(limit)``) instead.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
STORE = ROOT / "annotation" / "store"
PACKAGES = ("annotation", "judge", "calibration")

SQL_CALLS = {"execute", "executemany", "executescript", "query"}
SQL_STATEMENT = re.compile(
    r"""^[\s(]*(
        SELECT\s+\S
        | INSERT\s+(OR\s+[A-Z]+\s+)?INTO\s
        | UPDATE\s+\w+\s+SET\s
        | DELETE\s+FROM\s
        | CREATE\s+(UNIQUE\s+|TEMP\s+|TEMPORARY\s+)?(TABLE|INDEX|TRIGGER|VIEW)\s
        | PRAGMA\s+\w
        | WITH\s+(RECURSIVE\s+)?\w+(\s*\([^)]*\))?\s+AS\s*\(
    )""",
    re.VERBOSE,
)
SQL_MODULES = ("sqlite3", "sqlite_utils")


def product_files() -> list[Path]:
    files = sorted((ROOT / "denominator").glob("*.py"))
    for package in PACKAGES:
        files += sorted((ROOT / package).rglob("*.py"))
    return [f for f in files if f.exists()]


def in_store(path: Path) -> bool:
    return STORE in path.parents


def sql_sites(source: str) -> list[tuple[int, str]]:
    """(line, what) of every SQL call, SQL string, ``store.db`` and SQLite import in ``source``."""
    tree = ast.parse(source)
    docstrings = {
        id(node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant | ast.JoinedStr)
    }
    # an f-string's literal parts are checked with the f-string, not again on their own
    parts = {id(part) for node in ast.walk(tree) if isinstance(node, ast.JoinedStr) for part in node.values}
    sites = []
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in SQL_CALLS
        ):
            sites.append((node.lineno, f".{node.func.attr}() call"))
        elif isinstance(node, ast.Attribute) and node.attr == "db" and ast.unparse(node.value) == "store":
            sites.append((node.lineno, "store.db (the store's connection)"))
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            for name in names:
                if name.split(".")[0] in SQL_MODULES:
                    sites.append((node.lineno, f"imports {name}"))
        elif id(node) in docstrings or id(node) in parts:
            continue
        elif (
            isinstance(node, ast.Constant) and isinstance(node.value, str) and SQL_STATEMENT.match(node.value)
        ):
            sites.append((node.lineno, f"SQL string {node.value.strip()[:40]!r}"))
        elif (
            isinstance(node, ast.JoinedStr)
            and node.values
            and isinstance(node.values[0], ast.Constant)
            and SQL_STATEMENT.match(node.values[0].value)
        ):
            sites.append((node.lineno, f"SQL f-string {node.values[0].value.strip()[:40]!r}"))
    return sorted(sites)


def test_no_sql_outside_the_store() -> None:
    offending = []
    for path in product_files():
        if in_store(path):
            continue
        for line, what in sql_sites(path.read_text(encoding="utf-8")):
            offending.append(f"{path.relative_to(ROOT)}:{line}: {what}")
    for site in offending:
        print(site)
    assert not offending, "SQL outside annotation/store/ (ask the store a named question):\n" + "\n".join(
        offending
    )


def test_the_store_is_where_the_sql_is() -> None:
    """The check sees SQL where it is: a scan that found nothing anywhere would pass vacuously."""
    found = {path.name for path in STORE.glob("*.py") if sql_sites(path.read_text(encoding="utf-8"))}
    assert {"base.py", "migrations.py", "labels.py", "pools.py", "queue.py"} <= found


def test_the_check_finds_sql_and_ignores_prose() -> None:
    source = '''
"""Module docstring: SELECT id FROM items is prose here."""
# a comment: db.execute("SELECT 1")
import sqlite3
from sqlite_utils import Database


def f(store, cap):
    """SELECT id FROM items WHERE kind = 'chunk' (a docstring)."""
    store.db.conn.executemany("INSERT OR IGNORE INTO assignments (item_id) VALUES (?)", [])
    rows = store.query("select 1")
    sql = f"""
        SELECT i.id FROM items i {cap}"""
    other = ("UPDATE items SET position = 1", "DELETE FROM labels", "PRAGMA table_info(traces)")
    made = "CREATE UNIQUE INDEX x ON items (id)" + " WHERE 1"
    sub = "(SELECT value FROM labels LIMIT 1)"
    cte = "WITH recent AS (SELECT 1) SELECT * FROM recent"
    words = ["Select a run", "SELECT", "Update the labels", "with the rubric", "CREATE", "Delete from the list"]
    return rows, sql, other, made, sub, cte, words
'''
    found = sql_sites(source)
    assert [what.split(" ")[0] for _, what in found] == [
        "imports",
        "imports",
        ".executemany()",
        "SQL",
        "store.db",
        ".query()",
        "SQL",
        "SQL",
        "SQL",
        "SQL",
        "SQL",
        "SQL",
        "SQL",
    ], found
    assert {line for line, _ in found} == {4, 5, 10, 11, 12, 14, 15, 16, 17}
