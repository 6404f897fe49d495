"""Snapshot queries of copy-on-write tables as Spark DataFrames.

The snapshot is the latest base file of every live file group, read by Spark's own parquet
reader; a partition filter prunes file groups before any file is opened.

Example:
    >>> df = snapshot(spark, table, keep_partition=lambda path: path == "dt=2024-01-01")
"""

from __future__ import annotations

from collections.abc import Callable

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import types as T

from hudiql.table.fsview import FileSystemView
from hudiql.table.schema import with_meta_columns
from hudiql.table.table import HudiTable


def table_columns(table: HudiTable) -> T.StructType:
    """The columns a query sees: the five meta columns first (when stored), then the data columns."""
    return with_meta_columns(table.schema) if table.config.populate_meta_fields else table.schema


def snapshot(
    spark: SparkSession,
    table: HudiTable,
    view: FileSystemView | None = None,
    keep_partition: Callable[[str], bool] | None = None,
) -> DataFrame:
    """The latest version of every record, as a DataFrame (meta columns first)."""
    slices = (view or table.file_system_view()).latest_slices()
    if keep_partition is not None:
        slices = [s for s in slices if keep_partition(s.partition_path)]
    files = [table.storage.uri(s.base_path) for s in slices if s.base_file]
    columns = table_columns(table)
    if not files:
        return spark.createDataFrame([], columns)
    # Read by the table's schema, not by one file's footer: a column missing from a file
    # (written before the column was added, or no meta fields) reads as null in its rows.
    return spark.read.schema(columns).parquet(*files)
