"""Snapshot and read-optimized queries as Spark DataFrames.

The snapshot is the latest slice of every live file group: base files alone go through Spark's
own parquet reader where it opens them (local, HDFS) and through pyarrow.fs in Spark tasks
elsewhere (S3: ``read_base_files``), slices with log files are merged in Spark tasks; a
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

from collections.abc import Callable, Iterator
from functools import reduce

import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from hudiql.errors import unreadable_file
from hudiql.file_group import FileSlice
from hudiql.io.storage import Storage
from hudiql.spark_tasks import spread
from hudiql.table.fsview import FileSystemView
from hudiql.record.schema import PARTITION_PATH, RECORD_KEY, conform, to_arrow
from hudiql.table.table import HudiTable


def snapshot(
    spark: SparkSession,
    table: HudiTable,
    view: FileSystemView | None = None,
    keep_partition: Callable[[str], bool] | None = None,
    read_optimized: bool = False,
    columns: list[str] | None = None,
    file_groups: set[tuple[str, str]] | None = None,
    changed_after: str | None = None,
    with_file_name: bool = False,
    keys: set[str] | None = None,
) -> DataFrame:
    """The latest version of every record, as a DataFrame of the table's columns (meta columns
    first), or of ``columns`` only (names as in the table, kept in table order); of the
    ``file_groups`` (partition path, file id) only, when given. ``changed_after`` (an incremental
    read, which keeps only rows written after that instant) leaves out what cannot hold such rows:
    base files written at or before it, except as the logs' merge needs them.

    Slices without log files (every slice of a copy-on-write table, and every slice of a
    read-optimized query) are read as plain parquet (``read_base_files``); slices with logs are
    merged in Spark tasks. ``with_file_name``: with ``SOURCE_FILE``, the base file of each row (of a
    merged slice: its file id, which is how a log record names its file group).
    ``keys``: the record keys a query pins (``id = 17``); a merged slice returns only their rows
    (the query filters the rows anyway: this saves the rest of the slice's rows the trip to Spark).
    """
    slices = (view or table.file_system_view()).read_slices()
    if keep_partition is not None:
        slices = [s for s in slices if keep_partition(s.partition_path)]
    if file_groups is not None:
        slices = [s for s in slices if (s.partition_path, s.file_id) in file_groups]
    schema = table.columns
    if columns is not None:
        wanted = set(columns)
        schema = T.StructType([f for f in schema.fields if f.name in wanted])
    if changed_after is not None:
        slices = [s for s in slices if s.log_files or s.base_instant > changed_after]
    plain = [s for s in slices if s.base_file and (read_optimized or not s.log_files)]
    merged = [] if read_optimized else [s for s in slices if s.log_files]
    parts = []
    if plain:
        paths = [s.base_path for s in plain]
        parts.append(read_base_files(spark, table.storage, paths, table.columns, schema.fieldNames(), with_file_name))
    if merged:
        parts.append(_merge_slices(spark, table, merged, schema, changed_after, with_file_name, keys))
    if not parts:
        extra = [T.StructField(SOURCE_FILE, T.StringType())] if with_file_name else []
        return spark.createDataFrame([], T.StructType([*schema.fields, *extra]))
    return reduce(DataFrame.unionByName, parts)


#: The column ``read_base_files`` adds when asked: the name of the file a row comes from.
SOURCE_FILE = "__hudiql_source_file"


def read_base_files(spark: SparkSession, storage: Storage, paths: list[str], schema: T.StructType,
                    columns: list[str] | None = None, with_file_name: bool = False) -> DataFrame:
    """The rows of parquet files (``paths`` relative to ``storage``) read as ``schema``, its
    ``columns`` only (all by default, in schema order), plus ``SOURCE_FILE`` when
    ``with_file_name``. Read by the table's schema, not by one file's footer: a column missing
    from a file (written before the column was added, or no meta fields) reads as null.

    Spark's parquet reader reads where it can open the files (``Storage.spark_can_read``: it
    prunes columns and splits files); elsewhere Spark tasks read them through pyarrow.fs, a
    row group at a time, with the storage options of the session (``io.storage``).
    """
    selected = T.StructType([f for f in schema.fields if columns is None or f.name in columns])
    if storage.spark_can_read:
        # Read as the selected columns' schema: no projection to build, column by column, over Py4J.
        frame = spark.read.schema(selected).parquet(*[storage.uri(p) for p in paths])
        return frame.select("*", F.col("_metadata.file_name").alias(SOURCE_FILE)) if with_file_name else frame
    # A query that reads no column (count(*)) still needs a column to carry its rows: the file name.
    named = with_file_name or not selected.fields
    arrow_schema = to_arrow(selected)

    def read(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            for path in batch.column(0).to_pylist():
                yield from _parquet_batches(storage, path, arrow_schema, named)

    parallelism = max(1, min(len(paths), spark.sparkContext.defaultParallelism * 4))
    files = spark.createDataFrame(spark.sparkContext.parallelize([(p,) for p in paths], parallelism), "path string")
    out = T.StructType([*selected.fields, *([T.StructField(SOURCE_FILE, T.StringType())] if named else [])])
    rows = files.mapInArrow(read, out)
    return rows if with_file_name or not named else rows.select()


def stored_locations(spark: SparkSession, table: HudiTable) -> DataFrame:
    """(record key, partition path, file id, instant time) of every record of the table's latest
    file slices: where each key is stored, as a record index holds it (the instant of the base file
    the row is read from; of a merged slice, the latest completed instant)."""
    latest = table.timeline.completed()
    fallback = latest[-1].timestamp if latest else ""
    rows = snapshot(spark, table, columns=[RECORD_KEY, PARTITION_PATH], with_file_name=True)
    instant = F.regexp_extract(F.col(SOURCE_FILE), r"_(\d{17})\.[a-z]+$", 1)
    return rows.select(RECORD_KEY, PARTITION_PATH, F.split(F.col(SOURCE_FILE), "_")[0],
                       F.when(instant == "", F.lit(fallback)).otherwise(instant))


def stored_keys(spark: SparkSession, table: HudiTable, paths: list[str], with_file_name: bool = False) -> DataFrame:
    """The record key and partition path of every row of the table's base files ``paths`` (and
    ``SOURCE_FILE``): as stored, or, on a table without meta fields, derived from its key and
    partition columns as its writers derived them (``record.keygen``)."""
    if table.config.populate_meta_fields:
        meta = T.StructType([T.StructField(c, T.StringType()) for c in (RECORD_KEY, PARTITION_PATH)])
        return read_base_files(spark, table.storage, paths, meta, with_file_name=with_file_name)
    keygen, schema = table.keygen, table.schema
    columns = list(dict.fromkeys([*keygen.record_key_fields, *keygen.partition_fields]))
    rows = read_base_files(spark, table.storage, paths, schema, columns, with_file_name)
    return rows.select(keygen.record_key().alias(RECORD_KEY), keygen.partition_path(schema).alias(PARTITION_PATH),
                       *([SOURCE_FILE] if with_file_name else []))


def _parquet_batches(storage: Storage, path: str, schema: pa.Schema, with_file_name: bool) -> Iterator[pa.RecordBatch]:
    """One base file's rows as ``schema`` (and its name), a row group at a time, in a Spark task."""
    name = path.rsplit("/", 1)[-1]
    try:
        with storage.open_input_file(path) as f:
            parquet = pq.ParquetFile(f)
            stored = [c for c in schema.names if c in parquet.schema_arrow.names]
            for group in range(parquet.num_row_groups):
                rows = conform(parquet.read_row_group(group, columns=stored), schema)
                if with_file_name:
                    names = pa.array([name] * parquet.metadata.row_group(group).num_rows, pa.string())
                    rows = rows.append_column(SOURCE_FILE, names) if rows.num_columns else pa.table({SOURCE_FILE: names})
                yield from rows.to_batches()
    except (pa.ArrowException, OSError) as exc:  # as Spark's reader reports a file it cannot read
        raise unreadable_file(storage.uri(path), exc) from None


def _merge_slices(spark: SparkSession, table: HudiTable, slices: list[FileSlice], schema: T.StructType,
                  changed_after: str | None, with_file_name: bool = False, keys: set[str] | None = None) -> DataFrame:
    """Slices with logs, merged in Python tasks (one slice at a time, one task per core).

    Only ``schema``'s columns leave the tasks: the base rows cross into Spark once, without the
    rows the logs supersede, and no column the query does not read is decoded or moved.
    """
    reader = table.slice_reader(table.columns)
    out = schema if schema.fields else T.StructType([_row_carrier(table.columns)])
    # One task per core, each an equal share of the slices by size (``spark_tasks``); a read of
    # pinned keys, which returns few rows of each slice, in one task while its files are small
    # (the other cores read the base files meanwhile).
    def cost(s: FileSlice) -> int:
        return s.base_file_size + s.log_size

    small = keys is not None and sum(map(cost, slices)) <= _PINNED_TASK_BYTES
    tasks = 1 if small else spark.sparkContext.defaultParallelism
    ordered = spread(slices, cost, tasks)
    descriptors = spark.sparkContext.parallelize(
        [(s.partition_path, s.base_file, s.log_files) for s in ordered], max(1, min(len(slices), tasks))
    )
    frame = spark.createDataFrame(descriptors, "partition_path string, base_file string, log_files array<string>")
    columns = out.fieldNames()
    if with_file_name:  # a merged slice's rows name their file group, as a log record does
        out = T.StructType([*out.fields, T.StructField(SOURCE_FILE, T.StringType())])
    merged = frame.mapInArrow(reader.udf(columns, changed_after, SOURCE_FILE if with_file_name else None, keys), out)
    return merged if schema.fields or with_file_name else merged.select()


#: The bytes of slices one task reads for pinned keys (Spark's own split size for a file scan).
_PINNED_TASK_BYTES = 128 * 1024 * 1024


def _row_carrier(columns: T.StructType) -> T.StructField:
    """The column that carries the rows of a query that reads none (``count(*)``): a
    fixed-width one when the table has one, as it is the cheapest to move."""
    variable = (T.StringType, T.BinaryType, T.ArrayType, T.MapType, T.StructType)
    fixed = [f for f in columns.fields if not isinstance(f.dataType, variable)]
    return fixed[0] if fixed else columns[RECORD_KEY]
