"""What the statements that replace rows replace: INSERT OVERWRITE, TRUNCATE TABLE and
ALTER TABLE ... DROP PARTITION each write one replacecommit, decided here as Hudi decides it.

INSERT OVERWRITE: an overwrite operation set in the session or the table
(``hoodie.datasource.write.operation``) wins; else the overwrite mode
(``hoodie.datasource.overwrite.mode``, else Spark's ``spark.sql.sources.partitionOverwriteMode``,
else STATIC). A table without partitions, and a STATIC overwrite without ``PARTITION (...)``,
replace the whole table; otherwise the partitions the new rows land in are replaced, and in
STATIC mode also every partition matching the static values of ``PARTITION (...)`` (so a static
partition is emptied even by an empty query).

A partition named by TRUNCATE, DROP PARTITION or SHOW PARTITIONS gives every partition column a
value; its path is the one the key generator writes rows with those values to.

Example:
    >>> overwrite_replacement(["dt"], {"dt": None}, "STATIC", operation=None).touched
    True
    >>> overwrite_replacement(["dt"], None, "STATIC", operation=None).operation.value
    'insert_overwrite_table'
"""

from __future__ import annotations

import re

from collections.abc import Mapping

from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from hudiql.config import registry
from hudiql.errors import OptionError, SqlError
from hudiql.sql.statements import PartitionSpec
from hudiql.table.table import HudiTable
from hudiql.write.writer import Operation, Replacement


def overwrite_mode(session_conf: Mapping[str, str], table: HudiTable, spark: SparkSession) -> str:
    """STATIC or DYNAMIC: the session's or table's Hudi setting, else Spark's, else STATIC."""
    for key, value in ((registry.OVERWRITE_MODE, session_conf.get(registry.OVERWRITE_MODE)),
                       (registry.OVERWRITE_MODE, table.config.props.get(registry.OVERWRITE_MODE)),
                       (registry.SPARK_OVERWRITE_MODE, spark.conf.get(registry.SPARK_OVERWRITE_MODE, None))):
        if value:
            if value.strip().upper() not in registry.OVERWRITE_MODES:
                raise OptionError(f"{key}={value} is not valid; use STATIC or DYNAMIC")
            return value.strip().upper()
    return "STATIC"


def overwrite_replacement(
    partition_fields: list[str],
    clause: Mapping[str, object] | None,
    mode: str,
    operation: Operation | None,
    static_partitions: tuple[str, ...] = (),
) -> Replacement:
    """What an INSERT OVERWRITE replaces. ``clause``: its ``PARTITION (...)`` (column -> value, or
    None for a dynamic column); ``operation``: an overwrite operation the settings ask for;
    ``static_partitions``: the stored partitions matching the clause's static values."""
    if operation is Operation.INSERT_OVERWRITE_TABLE:
        return Replacement(Operation.INSERT_OVERWRITE_TABLE)
    if operation is Operation.INSERT_OVERWRITE:
        return Replacement(Operation.INSERT_OVERWRITE, touched=True)
    if not partition_fields or (mode == "STATIC" and clause is None):
        return Replacement(Operation.INSERT_OVERWRITE_TABLE)
    return Replacement(Operation.INSERT_OVERWRITE, static_partitions if mode == "STATIC" else (), touched=True)


def matching_partitions(spark: SparkSession, table: HudiTable, spec: PartitionSpec, what: str) -> tuple[str, ...]:
    """The table's live partitions whose values match ``spec`` (some partition columns -> value)."""
    if not spec:
        return ()
    live = table.file_system_view().partitions()
    if table.keygen.is_timestamp_based:
        # Its one partition column's value gives the path (a formatted timestamp the values cannot
        # be read back from), as the key generator gives it to rows.
        [path] = partition_paths(spark, table, [spec], what)
        return (path,) if path in live else ()
    wanted = {_partition_column(table, name, what): value for name, value in spec.items()}
    out = []
    for path in live:
        values = table.keygen.partition_values(path)
        if values is not None and all(values.get(name) == value for name, value in wanted.items()):
            out.append(path)
    return tuple(out)


def wildcard_partitions(table: HudiTable, spec: PartitionSpec, what: str) -> tuple[str, ...]:
    """The live partitions a spec with ``*`` in its values matches, as Hudi's drop of partitions
    matches them (``PARTITION (dt='2023-08-*')``: ``*`` stands for any text, every partition column
    given)."""
    if table.keygen.is_timestamp_based:
        raise SqlError(f"{what}: a '*' in a partition value needs partition paths that are the values; table "
                       f"{table.config.name}'s are formatted timestamps: name each partition")
    given = {_partition_column(table, name, what): value for name, value in spec.items()}
    missing = [f for f in table.keygen.partition_fields if f not in given]
    if missing:
        raise SqlError(f"{what}: give every partition column a value; missing {', '.join(missing)}")
    patterns = {name: re.compile(".*".join(re.escape(part) for part in (value or "").split("*")), re.DOTALL)
                for name, value in given.items()}
    out = []
    for path in table.file_system_view().partitions():
        values = table.keygen.partition_values(path)
        if values is not None and all(p.fullmatch(values.get(n) or "") for n, p in patterns.items()):
            out.append(path)
    return tuple(out)


def partition_paths(spark: SparkSession, table: HudiTable, specs: list[PartitionSpec], what: str) -> list[str]:
    """The paths of the partitions ``specs`` name (one small Spark job: the key generator's own
    expression); every partition column must have a value."""
    if not table.keygen.is_partitioned:
        raise SqlError(f"{what}: table {table.config.name} is not partitioned; it has no partition to name")
    fields = [table.schema[name] for name in table.keygen.partition_fields]
    rows = []
    for spec in specs:
        given = {_partition_column(table, name, what): value for name, value in spec.items()}
        missing = [f.name for f in fields if f.name not in given]
        if missing:
            raise SqlError(f"{what}: give every partition column a value; missing {', '.join(missing)}")
        rows.append(tuple(given[f.name] for f in fields))
    text = T.StructType([T.StructField(f.name, T.StringType()) for f in fields])
    typed = spark.createDataFrame(rows, text).select([F.col(f"`{f.name}`").cast(f.dataType).alias(f.name) for f in fields])
    return [r[0] for r in typed.select(table.keygen.partition_path(table.schema)).collect()]


def _partition_column(table: HudiTable, name: str, what: str) -> str:
    fields = table.keygen.partition_fields
    column = next((f for f in fields if f.lower() == name.lower()), None)
    if column is None:
        raise SqlError(f"{what}: {name} is not a partition column of {table.config.name}; "
                       f"its partition columns are {', '.join(fields) or 'none'}")
    return column
