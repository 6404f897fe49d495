"""Snapshot and read-optimized queries as Spark DataFrames.

The snapshot is the latest slice of every live file group: base files alone go through Spark's
own parquet reader, slices with log files are merged (``read.merged``); a read-optimized query
reads base files only. A partition filter prunes file groups before any file is opened.

Example:
    >>> df = snapshot(spark, table, keep_partition=lambda path: path == "dt=2024-01-01")
"""

from __future__ import annotations

from collections.abc import Callable
from functools import reduce

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from hudiql.errors import FormatError
from hudiql.read.merged import BASE_FILE_NAME, BASE_FILE_SIZE, ROW_INDEX, SliceMerger
from hudiql.table.fsview import FileSlice, FileSystemView
from hudiql.table.schema import to_arrow, with_meta_columns
from hudiql.table.table import HudiTable

# Up to this many bytes of log files, the superseded base rows are broadcast to the base-file
# scan; beyond it both sides are shuffled (a broadcast of millions of keys would not fit). A log
# record takes tens of bytes or more, a superseded row 8 bytes as a packed (size, row) key but
# about 100 as a (file name, row) key.
BROADCAST_LOG_BYTES = {"int": 2 * 1024**3, "string": 256 * 1024**2}


def table_columns(table: HudiTable) -> T.StructType:
    """The columns a query sees: the five meta columns first (when stored), then the data columns."""
    return with_meta_columns(table.schema) if table.config.populate_meta_fields else table.schema


def snapshot(
    spark: SparkSession,
    table: HudiTable,
    view: FileSystemView | None = None,
    keep_partition: Callable[[str], bool] | None = None,
    read_optimized: bool = False,
) -> DataFrame:
    """The latest version of every record, as a DataFrame (meta columns first).

    Slices without log files (every slice of a copy-on-write table, and every slice of a
    read-optimized query) go through Spark's parquet reader; slices with logs are merged in
    Spark tasks, one slice per merge.
    """
    slices = (view or table.file_system_view()).read_slices()
    if keep_partition is not None:
        slices = [s for s in slices if keep_partition(s.partition_path)]
    columns = table_columns(table)
    plain = [s for s in slices if s.base_file and (read_optimized or not s.log_files)]
    merged = [] if read_optimized else [s for s in slices if s.log_files]
    parts = []
    if plain:
        # Read by the table's schema, not by one file's footer: a column missing from a file
        # (written before the column was added, or no meta fields) reads as null in its rows.
        parts.append(spark.read.schema(columns).parquet(*[table.storage.uri(s.base_path) for s in plain]))
    if merged:
        parts.append(_merge_slices(spark, table, merged, columns))
    if not parts:
        return spark.createDataFrame([], columns)
    return reduce(DataFrame.unionByName, parts)


def _merge_slices(spark: SparkSession, table: HudiTable, slices: list[FileSlice], columns: T.StructType) -> DataFrame:
    """Slices with logs: base rows through Spark's parquet reader minus the rows the logs
    supersede (by file and row position), plus the winning log records.

    Only the logs and the base files' key and ordering columns pass through Python, so a
    query pays for the logs, not for the table; the base rows keep column pruning.
    """
    if not table.config.populate_meta_fields:
        raise FormatError(f"table {table.base_uri} has log files but no meta fields; hudiql cannot merge them")
    merger = SliceMerger(
        table.base_uri, to_arrow(columns), table.merge_rule, frozenset(table.timeline.completed_times())
    )
    descriptors = spark.createDataFrame(
        [(s.partition_path, s.base_file, s.base_file_size, s.log_files) for s in slices],
        "partition_path string, base_file string, base_file_size long, log_files array<string>",
    )
    parallelism = max(1, min(len(slices), spark.sparkContext.defaultParallelism * 2))
    out_schema = T.StructType(columns.fields + [
        T.StructField(BASE_FILE_NAME, T.StringType()), T.StructField(BASE_FILE_SIZE, T.LongType()),
        T.StructField(ROW_INDEX, T.LongType()),
    ])
    # Checkpointed so that the logs are decoded once for both uses below.
    outcome = descriptors.repartition(parallelism).mapInArrow(merger.udf(), out_schema).localCheckpoint(eager=False)
    records = outcome.where(F.col(ROW_INDEX).isNull()).select(*[F.col(f"`{c}`") for c in columns.fieldNames()])
    based = [s for s in slices if s.base_file]
    if not based:
        return records
    # A base row is named by its file and row index. When the files' sizes tell them apart, the
    # size stands for the name: two int keys pack into one long, which joins far faster than a
    # string per row. (A base file never holds 2^31 rows.)
    sizes = [s.base_file_size for s in based]
    if len(set(sizes)) == len(sizes) and max(sizes) < 2**31:
        file_key = (BASE_FILE_SIZE, "_metadata.file_size", "int")
    else:
        file_key = (BASE_FILE_NAME, "_metadata.file_name", "string")
    name, metadata_column, key_type = file_key
    replaced = outcome.where(F.col(ROW_INDEX).isNotNull()).select(
        F.col(name).cast(key_type).alias(name), F.col(ROW_INDEX).cast("int").alias(ROW_INDEX)
    )
    if sum(s.log_size for s in slices) <= BROADCAST_LOG_BYTES[key_type]:
        replaced = F.broadcast(replaced)
    base_rows = (
        spark.read.schema(columns).parquet(*[table.storage.uri(s.base_path) for s in based])
        .withColumn(name, F.col(metadata_column).cast(key_type))
        .withColumn(ROW_INDEX, F.col("_metadata.row_index").cast("int"))
        .join(replaced, [name, ROW_INDEX], "left_anti")
        .drop(name, ROW_INDEX)
    )
    return base_rows.unionByName(records)
