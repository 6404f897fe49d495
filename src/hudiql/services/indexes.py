"""``CREATE INDEX``, ``DROP INDEX`` and ``SHOW INDEXES`` of a table (Hudi's SQL for the metadata
table's indexes): a secondary index is built under the table lock beside the record index it
needs (``index.secondary_index``); the other index types are the table's options.
"""

from __future__ import annotations

from pyspark.sql import SparkSession

from hudiql.config import registry as K
from hudiql.errors import HudiqlError, OptionError, SqlError
from hudiql.index import secondary_index
from hudiql.metadata.index_definitions import IndexDefinitions
from hudiql.metadata.records import FILES_PARTITION
from hudiql.metadata.secondary_index import INDEX_TYPE, PARTITION_PREFIX, partition_of
from hudiql.read.snapshot import snapshot
from hudiql.record.schema import RECORD_KEY
from hudiql.table import metadata_table
from hudiql.table.table import HudiTable
from hudiql.transaction.lock import commit_lock
from hudiql.transaction.metadata_commit import kept_partitions, keeps_metadata_table, keeps_record_index
from hudiql.transaction.prologue import open_for_write

#: What ``CREATE INDEX ... USING <type>`` of another type should be instead.
_OTHER_TYPES = {
    "column_stats": f"column stats cover a table's columns by its options: set {K.COLUMN_STATS_ENABLE}=true "
                    f"(and {K.COLUMN_STATS_COLUMNS} to choose them)",
    "record_index": f"the record index is a table option: set {K.RECORD_INDEX_ENABLE}=true",
    "bloom_filters": f"the bloom filters of the record keys are a table option: set {K.BLOOM_FILTERS_ENABLE}=true "
                     "(hudiql keeps no bloom filter of other columns)",
}


def create_index(spark: SparkSession, table: HudiTable, name: str, columns: list[str], index_type: str | None,
                 if_not_exists: bool, options: dict[str, str] | None = None) -> bool:
    """Build secondary index ``name`` of the one column in ``columns``; False when it exists and
    ``if_not_exists``. Refuses (one line, nothing written) what it cannot build, and ``options``
    (Hudi's expression indexes and index tuning), which it would not honour."""
    kind = (index_type or INDEX_TYPE).lower()
    if kind != INDEX_TYPE:
        why = _OTHER_TYPES.get(kind, "hudiql builds secondary indexes (USING secondary_index)")
        raise SqlError(f"CREATE INDEX {name} USING {index_type} is not supported: {why}")
    if options:
        raise SqlError(f"CREATE INDEX {name} ... OPTIONS ({', '.join(options)}) is not supported: hudiql builds "
                       "secondary indexes of a column's values (no expression indexes); remove the OPTIONS clause")
    if len(columns) != 1:
        raise SqlError(f"CREATE INDEX {name}: a secondary index covers one column; name one")
    if table.config.version < 8 or not keeps_metadata_table(table):
        raise OptionError(f"CREATE INDEX {name}: indexes live in the metadata table, which table {table.config.name} "
                          f"does not keep; it needs table version 8 or 9 (CALL upgrade_table) and "
                          f"{K.METADATA_ENABLE}=true")
    if not keeps_record_index(table):
        raise OptionError(f"CREATE INDEX {name}: a secondary index finds rows through the record index; first ALTER "
                          f"TABLE {table.config.name} SET TBLPROPERTIES ('{K.RECORD_INDEX_ENABLE}'='true')")
    column = secondary_index.check_creatable(table, name, columns[0])
    open_for_write(table)  # the record index built, if the table has none yet
    with commit_lock(table.storage, table.settings, f"CREATE INDEX {name}"):
        current = table.refreshed()
        if _exists(current, name):
            if if_not_exists:
                return False
            raise SqlError(f"CREATE INDEX {name}: table {table.config.name} has an index named {name}; "
                           f"DROP INDEX {name} ON {table.config.name} first, or pick another name")
        mdt, _ = metadata_table.open_for_write(current.storage, kept_partitions(current))
        stored = snapshot(spark, current, columns=[RECORD_KEY, column])
        config = secondary_index.build(current, mdt, name, column, stored)
    table.config.props = dict(config.props)
    return True


def _exists(table: HudiTable, name: str) -> bool:
    """Whether the table's properties name the index (a definition left by a metadata table that
    was rebuilt without it is not one: a build writes it anew)."""
    return partition_of(name) in table.config.metadata_partitions


def drop_index(table: HudiTable, name: str, if_exists: bool) -> bool:
    """Remove secondary index ``name``; False when there is none and ``if_exists``."""
    with commit_lock(table.storage, table.settings, f"DROP INDEX {name}"):
        current = table.refreshed()
        if not _exists(current, name):
            if if_exists:
                return False
            raise HudiqlError(f"DROP INDEX {name}: table {table.config.name} has no index {name}; "
                              f"SHOW INDEXES FROM {table.config.name} lists them")
        config = secondary_index.drop(current, name)
    table.config.props = dict(config.props)
    return True


def show_indexes(table: HudiTable) -> list[tuple[str, str, str]]:
    """(index name, index type, columns) of each index of the table's metadata table, as Hudi's
    ``SHOW INDEXES`` lists them (its ``files`` partition is not an index)."""
    partitions = [p for p in table.config.metadata_partitions if p != FILES_PARTITION]
    defs = IndexDefinitions.load(table.storage, table.config) if partitions else None
    rows = []
    for partition in partitions:
        if partition.startswith(PARTITION_PREFIX):
            definition = defs.definitions.get(partition) or {}
            rows.append((partition, str(definition.get("indexType", INDEX_TYPE)).lower(),
                         ",".join(defs.source_fields(partition))))
        else:
            rows.append((partition, partition, ""))
    return rows
