"""Table names without a metastore: the warehouse folder is the catalog.

- a managed table lives at ``<warehouse>/<table>`` (database ``default``) or
  ``<warehouse>/<db>.db/<table>``; it exists when its ``.hoodie/hoodie.properties`` does;
- an external table (``LOCATION``) is registered by a small file
  ``<warehouse>/.hudiql/tables/<db>/<table>`` holding its location (and, on a second line,
  ``hoodie.query.as.ro.table=true`` for a name that reads a merge-on-read table's base files only);
  a name is registered only when no managed table has it, so a name is looked up as a managed
  table first (one read of its properties: how every statement starts);
- a (persistent) view is a file ``<warehouse>/.hudiql/views/<db>/<view>`` holding its query.
All survive restarts, and a table folder copied elsewhere is still a Hudi table.

Example:
    >>> catalog = Catalog(warehouse)
    >>> catalog.managed_location("default", "orders"), catalog.managed_location("sales", "orders")
    ('file://.../warehouse/orders', 'file://.../warehouse/sales.db/orders')
    >>> catalog.location("default", "orders") is None     # no such table (yet)
    True
    >>> catalog.save_view("default", "big_orders", "SELECT * FROM orders WHERE amount > 100")
    >>> catalog.views("default"), catalog.view("default", "big_orders").sql
    (['big_orders'], 'SELECT * FROM orders WHERE amount > 100')
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from hudiql.config.registry import QUERY_AS_RO_TABLE
from hudiql.errors import SqlError
from hudiql.io.storage import Storage
from hudiql.table.table import HudiTable, has_table

DEFAULT_DATABASE = "default"
_REGISTRY = ".hudiql/tables"
_VIEWS = ".hudiql/views"
_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
#: Names become folder names; most file systems allow 255 bytes, and the registry adds a suffix.
MAX_NAME_LENGTH = 128


def check_name(kind: str, name: str) -> str:
    """A table, view or database name is an identifier, never a path: letters, digits and ``_``.

    Example:
        >>> check_name("table", "Orders")
        'orders'
        >>> check_name("table", "../other")
        Traceback (most recent call last):
        hudiql.errors.SqlError: table name '../other' is not valid; use letters, digits and '_' (a name is not a path: use LOCATION '...' to place a table)
    """
    if not name:
        raise SqlError(f"{kind} name is empty; use letters, digits and '_'")
    if len(name) > MAX_NAME_LENGTH:
        raise SqlError(f"{kind} name '{name[:20]}...' is {len(name)} characters long; use at most {MAX_NAME_LENGTH}")
    if not _NAME_RE.fullmatch(name):
        raise SqlError(
            f"{kind} name '{name}' is not valid; use letters, digits and '_' "
            "(a name is not a path: use LOCATION '...' to place a table)"
        )
    return name.lower()


@dataclass(frozen=True)
class TableEntry:
    """Where a table name leads, and whether the name reads base files only (read-optimized)."""

    location: str
    read_optimized: bool = False


@dataclass(frozen=True)
class View:
    """A view: its query reads unqualified names in ``database``; a temporary one lives for a session."""

    name: str  # as messages name it: ``db.view``, or ``view`` for a temporary view
    database: str
    sql: str
    temporary: bool


class Catalog:
    def __init__(self, warehouse: str) -> None:
        self.storage = Storage(warehouse)

    def database_path(self, database: str) -> str:
        return "" if database == DEFAULT_DATABASE else f"{database}.db"

    def database_exists(self, database: str) -> bool:
        return database == DEFAULT_DATABASE or self.storage.is_dir(self.database_path(database))

    def create_database(self, database: str) -> None:
        self.storage.makedirs(self.database_path(check_name("database", database)))

    def databases(self) -> list[str]:
        names = [i.name[:-3] for i in self.storage.list("") if i.is_dir and i.name.endswith(".db")]
        return sorted({DEFAULT_DATABASE, *names})

    def managed_location(self, database: str, table: str) -> str:
        return self.storage.uri(self._managed_path(database, table))

    def _managed_path(self, database: str, table: str) -> str:
        db_path = self.database_path(database)
        return f"{db_path}/{table}" if db_path else table

    def rename(self, database: str, table: str, new_database: str, new_table: str) -> str:
        """Give a table another name; returns its location. An external table keeps its folder (its
        registration moves); a managed table's folder moves with its name, as Spark moves it."""
        if self.is_external(database, table):
            entry = self.entry(database, table)
            self.register_external(new_database, new_table, entry.location, entry.read_optimized)
            self.unregister(database, table)
            return entry.location
        self.storage.fs.move(self.storage.full_path(self._managed_path(database, table)),
                             self.storage.full_path(self._managed_path(new_database, new_table)))
        return self.managed_location(new_database, new_table)

    def _registry_path(self, database: str, table: str) -> str:
        return f"{_REGISTRY}/{database}/{table}"

    def location(self, database: str, table: str) -> str | None:
        """Where the table lives, or ``None`` if there is no such table."""
        entry = self.entry(database, table)
        return entry.location if entry is not None else None

    def entry(self, database: str, table: str) -> TableEntry | None:
        """Where the name leads and how it reads, or ``None`` if there is no such table."""
        managed = self.managed_location(database, table)
        if has_table(Storage(managed)):
            return TableEntry(managed)
        return self._registered(database, table)

    def load_table(self, database: str, table: str) -> tuple[HudiTable, TableEntry] | None:
        """The table the name leads to, loaded, and how it reads; ``None`` if there is no such
        table. A managed table costs one request, the read of its properties (every statement
        starts here); only a name without one is looked up among the external tables."""
        managed = self.managed_location(database, table)
        found = HudiTable.find(managed)
        if found is not None:
            return found, TableEntry(managed)
        entry = self._registered(database, table)
        return (HudiTable.load(entry.location), entry) if entry is not None else None

    def _registered(self, database: str, table: str) -> TableEntry | None:
        """The external table registered under the name, if any."""
        content = self.storage.read_if_exists(self._registry_path(database, table))
        if content is None:
            return None
        location, *options = content.decode().strip().splitlines()
        return TableEntry(location.strip(), f"{QUERY_AS_RO_TABLE}=true" in options)

    def is_external(self, database: str, table: str) -> bool:
        return self.storage.exists(self._registry_path(database, table))

    def register_external(self, database: str, table: str, location: str, read_optimized: bool = False) -> None:
        text = location + (f"\n{QUERY_AS_RO_TABLE}=true" if read_optimized else "")
        self.storage.write_atomic(self._registry_path(database, table), text.encode())

    def unregister(self, database: str, table: str) -> None:
        self.storage.delete(self._registry_path(database, table))

    def view(self, database: str, view: str) -> View | None:
        """A persistent view, or ``None`` if there is no such view."""
        entry = f"{_VIEWS}/{database}/{view}"
        if not self.storage.exists(entry):
            return None
        return View(f"{database}.{view}", database, self.storage.read(entry).decode(), temporary=False)

    def save_view(self, database: str, view: str, sql: str) -> None:
        self.storage.write_atomic(f"{_VIEWS}/{database}/{view}", sql.encode())

    def drop_view(self, database: str, view: str) -> None:
        self.storage.delete(f"{_VIEWS}/{database}/{view}")

    def views(self, database: str) -> list[str]:
        return sorted(i.name for i in self.storage.list(f"{_VIEWS}/{database}") if not i.is_dir)

    def tables(self, database: str) -> list[str]:
        names = {i.name for i in self.storage.list(f"{_REGISTRY}/{database}") if not i.is_dir}
        db_path = self.database_path(database)
        for info in self.storage.list(db_path):
            if info.is_dir and not info.name.startswith(".") and not info.name.endswith(".db"):
                if has_table(Storage(self.storage.uri(info.path))):
                    names.add(info.name)
        return sorted(names)
