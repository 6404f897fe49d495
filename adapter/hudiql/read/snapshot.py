"""Snapshot and read-optimized queries as Spark DataFrames.

The snapshot is the latest slice of every live file group: base files alone go through Spark's
own parquet reader, slices with log files are merged in Spark tasks (``read.merged``); a
read-optimized query reads base files only. A partition filter prunes file groups before any
file is opened, and a merged read carries only the columns the query needs.

Example:
    >>> _ = session.sql("CREATE TABLE orders (id INT, price DOUBLE, day STRING) USING hudi PARTITIONED BY (day) "
    ...                 "TBLPROPERTIES (primaryKey = 'id')")
    >>> table = HudiTable.load(warehouse + "/orders")
    >>> snapshot(spark, table).columns
    ['_hoodie_commit_time', '_hoodie_commit_seqno', '_hoodie_record_key', '_hoodie_partition_path',
     '_hoodie_file_name', 'id', 'price', 'day']
    >>> snapshot(spark, table, columns=["price", "id"]).columns    # SELECT sum(price) ... GROUP BY id
    ['id', 'price']
"""

from __future__ import annotations

from collections.abc import Callable
from functools import reduce

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import types as T

from hudiql.errors import FormatError
from hudiql.file_group import FileSlice
from hudiql.file_group.reader import SliceReader
from hudiql.table.fsview import FileSystemView
from hudiql.table.schema import RECORD_KEY, to_arrow, with_meta_columns
from hudiql.table.table import HudiTable


def table_columns(table: HudiTable) -> T.StructType:
    """The columns a query sees: the five meta columns first (when stored), then the data columns."""
    return with_meta_columns(table.schema) if table.config.populate_meta_fields else table.schema


def snapshot(
    spark: SparkSession,
    table: HudiTable,
    view: FileSystemView | None = None,
    keep_partition: Callable[[str], bool] | None = None,
    read_optimized: bool = False,
    columns: list[str] | None = None,
    file_groups: set[tuple[str, str]] | None = None,
    changed_after: str | None = None,
) -> DataFrame:
    """The latest version of every record, as a DataFrame of the table's columns (meta columns
    first), or of ``columns`` only (names as in the table, kept in table order); of the
    ``file_groups`` (partition path, file id) only, when given. ``changed_after`` (an incremental
    read, which keeps only rows written after that instant) leaves out what cannot hold such rows:
    base files written at or before it, except as the logs' merge needs them.

    Slices without log files (every slice of a copy-on-write table, and every slice of a
    read-optimized query) go through Spark's parquet reader; slices with logs are merged in
    Spark tasks.
    """
    slices = (view or table.file_system_view()).read_slices()
    if keep_partition is not None:
        slices = [s for s in slices if keep_partition(s.partition_path)]
    if file_groups is not None:
        slices = [s for s in slices if (s.partition_path, s.file_id) in file_groups]
    schema = table_columns(table)
    if columns is not None:
        wanted = set(columns)
        schema = T.StructType([f for f in schema.fields if f.name in wanted])
    if changed_after is not None:
        slices = [s for s in slices if s.log_files or s.base_instant > changed_after]
    plain = [s for s in slices if s.base_file and (read_optimized or not s.log_files)]
    merged = [] if read_optimized else [s for s in slices if s.log_files]
    parts = []
    if plain:
        # Read by the table's schema, not by one file's footer: a column missing from a file
        # (written before the column was added, or no meta fields) reads as null in its rows.
        files = [table.storage.uri(s.base_path) for s in plain]
        parts.append(spark.read.schema(table_columns(table)).parquet(*files).select(*[f"`{c}`" for c in schema.fieldNames()]))
    if merged:
        parts.append(_merge_slices(spark, table, merged, schema, changed_after))
    if not parts:
        return spark.createDataFrame([], schema)
    return reduce(DataFrame.unionByName, parts)


def _merge_slices(spark: SparkSession, table: HudiTable, slices: list[FileSlice], schema: T.StructType,
                  changed_after: str | None) -> DataFrame:
    """Slices with logs, merged in Python tasks (one slice at a time, a task per few slices).

    Only ``schema``'s columns leave the tasks: the base rows cross into Spark once, without the
    rows the logs supersede, and no column the query does not read is decoded or moved.
    """
    if not table.config.populate_meta_fields:
        raise FormatError(f"table {table.base_uri} has log files but no meta fields; hudiql cannot merge them")
    reader = SliceReader(
        table.base_uri, to_arrow(table_columns(table)), table.merge_rule, table.timeline.committed()
    )
    out = schema if schema.fields else T.StructType([_row_carrier(table_columns(table))])
    # Largest slices first: Spark starts the heaviest tasks first and the light ones fill in.
    ordered = sorted(slices, key=lambda s: -(s.base_file_size + s.log_size))
    parallelism = max(1, min(len(slices), spark.sparkContext.defaultParallelism * 4))
    descriptors = spark.sparkContext.parallelize(
        [(s.partition_path, s.base_file, s.log_files) for s in ordered], parallelism
    )
    frame = spark.createDataFrame(descriptors, "partition_path string, base_file string, log_files array<string>")
    merged = frame.mapInArrow(reader.udf(out.fieldNames(), changed_after), out)
    return merged if schema.fields else merged.select()


def _row_carrier(columns: T.StructType) -> T.StructField:
    """The column that carries the rows of a query that reads none (``count(*)``): a
    fixed-width one when the table has one, as it is the cheapest to move."""
    variable = (T.StringType, T.BinaryType, T.ArrayType, T.MapType, T.StructType)
    fixed = [f for f in columns.fields if not isinstance(f.dataType, variable)]
    return fixed[0] if fixed else columns[RECORD_KEY]
