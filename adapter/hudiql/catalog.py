"""Table names without a metastore: the warehouse folder is the catalog.

- a managed table lives at ``<warehouse>/<table>`` (database ``default``) or
  ``<warehouse>/<db>.db/<table>``; it exists when its ``.hoodie/hoodie.properties`` does;
- an external table (``LOCATION``) is registered by a small file
  ``<warehouse>/.hudiql/tables/<db>/<table>`` holding its location.
Both survive restarts, and a table folder copied elsewhere is still a Hudi table.

Example:
    >>> catalog = Catalog("/tmp/wh")
    >>> catalog.location("default", "orders")
    '/tmp/wh/orders'
"""

from __future__ import annotations

import re

from hudiql.errors import HudiqlError
from hudiql.io.storage import Storage
from hudiql.table.layout import PROPERTIES_FILE

DEFAULT_DATABASE = "default"
_REGISTRY = ".hudiql/tables"
_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def check_name(kind: str, name: str) -> str:
    if not _NAME_RE.match(name):
        raise HudiqlError(f"{kind} name '{name}' is not valid; use letters, digits and '_'")
    return name.lower()


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
        db_path = self.database_path(database)
        return self.storage.uri(f"{db_path}/{table}" if db_path else table)

    def _registry_path(self, database: str, table: str) -> str:
        return f"{_REGISTRY}/{database}/{table}"

    def location(self, database: str, table: str) -> str | None:
        """Where the table lives, or ``None`` if there is no such table."""
        entry = self._registry_path(database, table)
        if self.storage.exists(entry):
            return self.storage.read(entry).decode().strip()
        managed = self.managed_location(database, table)
        if Storage(managed).exists(PROPERTIES_FILE):
            return managed
        return None

    def is_external(self, database: str, table: str) -> bool:
        return self.storage.exists(self._registry_path(database, table))

    def register_external(self, database: str, table: str, location: str) -> None:
        self.storage.write_atomic(self._registry_path(database, table), location.encode())

    def unregister(self, database: str, table: str) -> None:
        self.storage.delete(self._registry_path(database, table))

    def tables(self, database: str) -> list[str]:
        names = {i.name for i in self.storage.list(f"{_REGISTRY}/{database}") if not i.is_dir}
        db_path = self.database_path(database)
        for info in self.storage.list(db_path):
            if info.is_dir and not info.name.startswith(".") and not info.name.endswith(".db"):
                if self.storage.exists(f"{info.path}/{PROPERTIES_FILE}"):
                    names.add(info.name)
        return sorted(names)
