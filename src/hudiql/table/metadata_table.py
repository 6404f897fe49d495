"""The metadata table: ``.hoodie/metadata/``, a Hudi table inside the table, in which Hudi writers
(since 0.11, by default) keep every partition's file listing and the indexes; and
``hoodie.table.metadata.partitions`` in ``hoodie.properties``, which tells readers which of its
partitions they may use (``files``: list the table through it).

hudiql does not maintain a metadata table yet. One left in place by a write would be stale: readers
that list files through it (Hudi 1.x's Spark reader, the official native reader on table versions 8
and 9, query engines with metadata listing) would not see the files the write added, and Hudi writers
that index records through it could write duplicates. So before hudiql writes a table that has one, it
removes it as Hudi's own writer does when ``hoodie.metadata.enable=false``: the property first (readers
then list storage), the folder second, so a crash between the two leaves a table that every reader
lists correctly, and the next write deletes the folder. A Hudi writer with the metadata table enabled
builds it again from storage.

Example:
    >>> storage = Storage(warehouse + "/orders")
    >>> TableConfig({"hoodie.table.name": "orders", METADATA_PARTITIONS: "files"}).save(storage)
    >>> storage.write(METADATA_TABLE_FOLDER + "/.hoodie/hoodie.properties", b"hoodie.table.name=orders_metadata")
    >>> has_metadata_table(storage, TableConfig.load(storage))
    True
    >>> remove_metadata_table(storage).metadata_partitions
    []
    >>> has_metadata_table(storage, TableConfig.load(storage)), storage.exists(METADATA_TABLE_FOLDER)
    (False, False)
"""

from __future__ import annotations

from hudiql.config.table_config import (
    METADATA_PARTITIONS,
    METADATA_PARTITIONS_INFLIGHT,
    TableConfig,
)
from hudiql.io.storage import Storage
from hudiql.layout import METADATA_TABLE_FOLDER


def has_metadata_table(storage: Storage, config: TableConfig) -> bool:
    """Whether the table has a metadata table, or what is left of one: partitions named in its
    properties (built or being built), or the folder."""
    return bool(config.get(METADATA_PARTITIONS) or config.get(METADATA_PARTITIONS_INFLIGHT)) or storage.is_dir(
        METADATA_TABLE_FOLDER
    )


def remove_metadata_table(storage: Storage) -> TableConfig:
    """Remove the table's metadata table, crash-safe: its partitions are cleared from
    ``hoodie.properties`` (both keys left empty, as Hudi leaves them), then its folder is deleted.
    The caller holds the table lock; returns the table's config as it now is."""
    config = TableConfig.load(storage)  # as it is under the lock, not as the statement loaded it
    if config.get(METADATA_PARTITIONS) or config.get(METADATA_PARTITIONS_INFLIGHT):
        config = TableConfig({**config.props, METADATA_PARTITIONS: "", METADATA_PARTITIONS_INFLIGHT: ""})
        config.save(storage)
    storage.delete_dir(METADATA_TABLE_FOLDER)
    return config
