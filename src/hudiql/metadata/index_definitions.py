"""The definitions of a table's metadata-table indexes, as Hudi 1.x keeps them: a JSON file
(``hoodie.table.index.defs.path`` in ``hoodie.properties``, by default
``.hoodie/.index_defs/index.json``) that maps each index partition to its name, type, function,
source columns, options and layout version. Hudi's readers take the columns a ``column_stats``
index covers from it.

Example:
    >>> defs = IndexDefinitions({}).with_index("column_stats", "column_stats", "column_stats", ["id"], "V2")
    >>> IndexDefinitions.parse(defs.encode()).source_fields("column_stats")
    ['id']
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from hudiql.config.table_config import INDEX_DEFS_PATH, TableConfig
from hudiql.io.storage import Storage

#: Where Hudi 1.x writes the definitions, relative to the table's base path.
DEFAULT_PATH = ".hoodie/.index_defs/index.json"


@dataclass(frozen=True)
class IndexDefinitions:
    """The definitions by index partition (``column_stats``, ``secondary_index_<name>``, ...), as
    JSON objects (keys hudiql does not use are kept as Hudi wrote them)."""

    definitions: dict[str, dict]

    @classmethod
    def parse(cls, data: bytes) -> IndexDefinitions:
        return cls(dict(json.loads(data).get("indexDefinitions") or {}))

    @classmethod
    def load(cls, storage: Storage, config: TableConfig) -> IndexDefinitions:
        """The table's definitions (none when it has no file)."""
        path = config.get(INDEX_DEFS_PATH) or DEFAULT_PATH
        return cls.parse(storage.read(path)) if storage.exists(path) else cls({})

    def source_fields(self, partition: str) -> list[str]:
        return list((self.definitions.get(partition) or {}).get("sourceFields") or [])

    def with_index(self, partition: str, index_type: str, function: str, fields: list[str], version: str,
                   options: dict[str, str] | None = None) -> IndexDefinitions:
        return IndexDefinitions({**self.definitions, partition: {
            "indexName": partition, "indexType": index_type, "indexFunction": function, "sourceFields": fields,
            "indexOptions": options or {}, "version": version}})

    def without(self, partition: str) -> IndexDefinitions:
        return IndexDefinitions({k: v for k, v in self.definitions.items() if k != partition})

    def encode(self) -> bytes:
        return json.dumps({"indexDefinitions": self.definitions}, indent=2).encode()

    def save(self, storage: Storage, config: TableConfig) -> dict[str, str]:
        """Write the definitions where ``config`` says (else at ``DEFAULT_PATH``); returns the
        property that names the file, for the table's properties."""
        path = config.get(INDEX_DEFS_PATH) or DEFAULT_PATH
        storage.write(path, self.encode())
        return {INDEX_DEFS_PATH: path}
