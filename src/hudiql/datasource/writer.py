"""``df.write.format("hudi").mode("append" | "overwrite").save(path)``: rows staged by Spark's write
tasks, written as one Hudi commit by hudiql's write path on the driver.

Spark runs a Python data source's ``writer()`` and ``commit()`` in Python workers without a
SparkSession, and ``write()`` in the executors. A Hudi upsert needs Spark between the tasks and
the commit (the index lookup joins the rows with the stored keys; one shuffle by file group makes
each file group's new slice the work of one task), so the work is split:

1. ``HudiWriter.start`` (``writer()``, on the driver): the options are checked (``write_options``),
   and so is what they say against the table at the path, or against the table a first write
   creates; a bad option fails here, before any task runs. The write's staging folder is
   ``.hoodie/.temp/hudiql-write-<id>/`` of an existing table, where Hudi's readers look for
   nothing, or ``.hudiql-staging/hudiql-write-<id>/`` of a path without a table, which a
   ``.hoodie/`` folder would make look like a (damaged) table. The Python process that registered
   the data source (``callback``) beats a heartbeat in it (``STAGING_HEARTBEAT``) until the write ends.
2. ``write()`` (each task): its rows, as Arrow batches, go to one parquet file of its own
   (partition, task attempt and a random part in the name: a retried or speculative attempt never
   overwrites another's file) in the staging folder.
3. ``commit()`` (on the driver): the files the tasks' messages list (only those: a failed
   attempt's file is left out) go to the registering process, where ``commit_staged`` reads them as
   a DataFrame (Spark tasks) and writes it with hudiql's write path, as INSERT, INSERT OVERWRITE and
   DELETE do, in one transaction: one instant, invisible until it completes. A first write creates
   the table from the options first (and removes it again if the write fails). Then the heartbeat
   stops and the staging folder is removed.
4. ``abort()``: Spark's tasks failed; the heartbeat stops, the staging folder is removed, and
   nothing else was written.

A task that was still writing when Spark aborted can stage its file after the folder was removed,
and a registering process that died leaves its staging behind: the next write to the path removes
every staging folder whose heartbeat stopped (``remove_stale_staging``).

Save mode ``append`` runs the operation; ``overwrite`` replaces the table's rows with the new ones
in one replacecommit (insert_overwrite_table), keeping the table and its timeline. Hudi's data
source deletes the path first; here a reader meanwhile still finds the table, a failed overwrite
changes nothing, and time travel and incremental reads still reach the replaced rows (until the
cleaner removes their files). Spark itself refuses ``errorifexists`` (its default mode) and
``ignore`` for a Python data source, before the data source runs: ``.mode`` must be given.

Example:
    >>> session.spark is spark   # hudiql.connect(spark=spark) registered format("hudi") with this session
    True
    >>> rows = spark.createDataFrame([(1, "a", 1), (2, "b", 1)], "id INT, v STRING, ts INT")
    >>> options = {"hoodie.table.name": "t", "hoodie.datasource.write.recordkey.field": "id",
    ...            "hoodie.datasource.write.precombine.field": "ts"}
    >>> rows.write.format("hudi").options(**options).mode("append").save(warehouse + "/t")
    >>> spark.createDataFrame([(2, "b2", 2)], "id INT, v STRING, ts INT").write.format("hudi").mode("append").save(warehouse + "/t")
    >>> spark.read.format("hudi").load(warehouse + "/t").select("id", "v").orderBy("id").collect()
    [Row(id=1, v='a'), Row(id=2, v='b2')]
"""

from __future__ import annotations

import json
import posixpath
import threading
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Protocol

import pyarrow as pa
import pyarrow.parquet as pq
from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import types as T
from pyspark.sql.datasource import DataSourceArrowWriter, WriterCommitMessage
from sqlglot import exp

from hudiql.config import registry
from hudiql.config import table_config as C
from hudiql.config.table_config import TableConfig
from hudiql.datasource.callback import Callback
from hudiql.datasource.options import (
    BULK_INSERT,
    DELETE,
    INSERT,
    WriteOptions,
    check_table_options,
)
from hudiql.errors import ColumnError, OptionError, TableExistsError, warn
from hudiql.io.storage import Storage, configure
from hudiql.layout import TEMP_FOLDER
from hudiql.read.query import QueryPlanner
from hudiql.read.snapshot import read_base_files
from hudiql.services.post_commit import transaction
from hudiql.sql import statements as S
from hudiql.sql.options import TableDefinition, derive_table_properties
from hudiql.record.schema import PARTITION_PATH, RECORD_KEY, field_root, without_meta_columns
from hudiql.table.table import HudiTable, has_table
from hudiql.transaction.heartbeat import Heartbeat, interval_ms, is_expired
from hudiql.transaction.retry import retrying
from hudiql.transaction.write_transaction import WriteTransaction
from hudiql.write.dml import DmlPlanner
from hudiql.write.index import is_global
from hudiql.write.insert import prepare_insert, write_insert
from hudiql.write.replace import overwrite_replacement
from hudiql.write.writer import Operation, check_overwrite


class WritingSession(Protocol):
    """What writing staged rows needs of the registering session (``hudiql.session.Session`` is
    one): its Spark session, its ``SET``s, its storage options and its query planner."""

    spark: SparkSession
    conf: Mapping[str, str]
    storage_options: Mapping[str, str]
    planner: QueryPlanner


#: Where the tasks of a write to a path without a table stage their rows (a folder per write).
NEW_TABLE_STAGING = ".hudiql-staging"
#: The name of each write's staging folder starts so (in ``.hoodie/.temp/`` or ``NEW_TABLE_STAGING``).
STAGING_PREFIX = "hudiql-write-"
#: In a staging folder: the heartbeat of its write, beaten by the registering process.
STAGING_HEARTBEAT = ".heartbeat"
#: The database a table created by ``df.write`` records (``hoodie.database.name``).
DATABASE = "default"


@dataclass
class StagedFile(WriterCommitMessage):
    """What one task staged: its file in the staging folder (``None``: no rows) and its row count."""

    name: str | None
    rows: int


@dataclass(frozen=True)
class StagingStarted:
    """What ``writer()`` asks of the registering session: beat in the staging folder (relative to ``path``)."""

    path: str
    staging: str
    settings: Mapping[str, str]  # the write's own (``WriteOptions.settings``)


@dataclass(frozen=True)
class StagingEnded:
    """What ``abort()`` asks of the registering session: stop beating in the staging folder."""

    path: str
    staging: str


@dataclass(frozen=True)
class StagedWrite:
    """What ``commit`` asks the registering session to write (``commit_staged``)."""

    write: WriteOptions
    schema: str  # the DataFrame's schema, as JSON
    staging: str  # the staging folder, relative to the path
    files: tuple[str, ...]  # in the staging folder
    new_path: bool  # the path did not exist when the write began


class HudiWriter(DataSourceArrowWriter):
    """One ``df.write.format("hudi")``; pickled from the driver to each task and back for the commit."""

    def __init__(self, write: WriteOptions, schema: T.StructType, staging: str, new_path: bool, callback: Callback) -> None:
        self.write_options = write
        self.schema = schema.json()
        self.staging = staging
        self.new_path = new_path
        self.callback = callback

    @classmethod
    def start(cls, write: WriteOptions, schema: T.StructType, callback: Callback) -> HudiWriter:
        """The writer of ``write``, once what it asks for is known to be possible (metadata only),
        with its staging folder's heartbeat beating."""
        storage = Storage(write.path)
        columns = without_meta_columns(schema)
        folder = f"{STAGING_PREFIX}{uuid.uuid4().hex}"
        if has_table(storage):
            config = HudiTable.load(write.path).config
            check_table_options(write, config)
            _check_columns(write, config, columns)
            remove_stale_staging(storage, TEMP_FOLDER, write.settings)
            writer = cls(write, schema, f"{TEMP_FOLDER}/{folder}", False, callback)
        else:
            remove_stale_staging(storage, NEW_TABLE_STAGING, write.settings)
            if storage.list(""):
                raise TableExistsError(f'{write.path} is not empty and holds no Hudi table; df.write.format("hudi") '
                                       "writes a Hudi table or an empty path")
            _check_columns(write, _new_table_config(write, columns), columns)
            writer = cls(write, schema, f"{NEW_TABLE_STAGING}/{folder}", not storage.exists(), callback)
        callback.call(StagingStarted(write.path, writer.staging, write.settings))
        return writer

    def write(self, iterator: Iterator[pa.RecordBatch]) -> StagedFile:
        """Stage this task's rows as one parquet file (none when it has no rows)."""
        from pyspark import TaskContext

        ctx = TaskContext.get()
        name = f"part-{ctx.partitionId():05d}-{ctx.taskAttemptId()}-{uuid.uuid4().hex[:12]}.parquet"
        storage = Storage(self.write_options.path)
        rows = 0
        sink = writer = None
        try:
            for batch in iterator:
                if not batch.num_rows:
                    continue
                if writer is None:
                    sink = storage.open_output_stream(f"{self.staging}/{name}")
                    writer = pq.ParquetWriter(sink, batch.schema)
                writer.write_batch(batch)
                rows += batch.num_rows
        finally:
            if writer is not None:
                writer.close()
            if sink is not None:
                sink.close()
        return StagedFile(name if rows else None, rows)

    def commit(self, messages: list[StagedFile | None]) -> None:
        files = tuple(m.name for m in messages if m is not None and m.name)
        self.callback.call(StagedWrite(self.write_options, self.schema, self.staging, files, self.new_path))

    def abort(self, messages: list[StagedFile | None]) -> None:
        try:
            self.callback.call(StagingEnded(self.write_options.path, self.staging))
        finally:
            remove_staging(Storage(self.write_options.path), self.staging, self.new_path)


def _new_table_config(write: WriteOptions, columns: T.StructType) -> TableConfig:
    """The config of the table a first write creates: its name, the DataFrame's columns and the
    table options, as CREATE TABLE derives them (Hudi's data source writes non hive-style paths)."""
    if not write.name:
        raise OptionError(f'no Hudi table at {write.path}: df.write.format("hudi") creates one; name it with '
                          f'.option("{C.TABLE_NAME}", "<name>")')
    options = {C.HIVE_STYLE: "false", **write.table_options}
    props, _ = derive_table_properties(TableDefinition(write.name, DATABASE, columns, options=options))
    return TableConfig(props)


def _check_columns(write: WriteOptions, config: TableConfig, columns: T.StructType) -> None:
    """The DataFrame must carry the record key and partition columns the rows are placed by."""
    names = {n.lower() for n in columns.fieldNames()}
    needed = [*config.record_key_fields, *config.partition_fields]
    missing = [c for c in needed if field_root(c).lower() not in names]
    if missing:
        raise ColumnError(f"the DataFrame has no column {', '.join(missing)}, which the table at {write.path} "
                          f"needs (record key {', '.join(config.record_key_fields) or 'none'}, partition "
                          f"{', '.join(config.partition_fields) or 'none'})")
    if write.operation == DELETE and not config.record_key_fields:
        raise OptionError(f"operation {DELETE} needs a record key; the table at {write.path} has none")


def remove_stale_staging(storage: Storage, parent: str, settings: Mapping[str, str]) -> None:
    """Remove the staging folders in ``parent`` whose heartbeat stopped: a file a task staged after
    its write was aborted, or the rows of a write whose registering process died."""
    for entry in storage.list(parent):
        if entry.name.startswith(STAGING_PREFIX) and is_expired(storage, f"{entry.path}/{STAGING_HEARTBEAT}", settings):
            storage.delete_dir(entry.path)
    _remove_empty_new_table_staging(storage, parent)


# ---- in the registering process ----------------------------------------------------------------------


def answer(session: WritingSession, request: StagingStarted | StagedWrite | StagingEnded) -> None:
    """The registering session's part of a ``df.write``: what ``writer()``, ``commit()`` and
    ``abort()`` ask of it from Spark's Python workers (``callback``)."""
    configure(session.storage_options, session.spark.sparkContext.environment)
    if isinstance(request, StagingStarted):
        _beat(request.path, request.staging, registry.effective_settings({}, session.conf, request.settings))
    elif isinstance(request, StagedWrite):
        commit_staged(session, request)
    else:
        _stop_beating(request.path, request.staging)


#: The heartbeats of the stagings of this process's writes, by staging folder URI.
_beating: dict[str, Heartbeat] = {}
_beating_lock = threading.Lock()


def _beat(path: str, staging: str, settings: Mapping[str, str]) -> None:
    storage = Storage(path)
    heartbeat = Heartbeat(storage, f"{staging}/{STAGING_HEARTBEAT}", interval_ms(settings))
    heartbeat.start()
    with _beating_lock:
        _beating[storage.uri(staging)] = heartbeat


def _stop_beating(path: str, staging: str) -> None:
    with _beating_lock:
        heartbeat = _beating.pop(Storage(path).uri(staging), None)
    if heartbeat is not None:
        heartbeat.stop()


def commit_staged(session: WritingSession, staged: StagedWrite) -> None:
    """Write the staged rows to the table as one commit with ``session`` (its SETs, its storage
    options); the staging folder is removed whatever happens."""
    write = staged.write
    for line in write.warnings:
        warn(line)
    storage = Storage(write.path)
    created = None
    try:
        rows = _staged_rows(session, storage, staged)
        if has_table(storage):
            table = HudiTable.load(write.path)
            check_table_options(write, table.config)
        else:
            columns = without_meta_columns(rows.schema)
            created = table = HudiTable.create(write.path, _new_table_config(write, columns))
        _check_columns(write, table.config, without_meta_columns(rows.schema))
        retrying(lambda: _write(session, table, rows, write),
                 lambda: table.for_statement(session.conf, write.settings).settings)
    except BaseException:
        if created is not None:
            created.storage.delete_dir()  # all or nothing, as CREATE TABLE ... AS SELECT
        raise
    finally:
        _stop_beating(write.path, staged.staging)
        remove_staging(storage, staged.staging, staged.new_path)


def _staged_rows(session: WritingSession, storage: Storage, staged: StagedWrite) -> DataFrame:
    schema = T.StructType.fromJson(json.loads(staged.schema))
    if not staged.files:
        return session.spark.createDataFrame([], schema)
    return read_base_files(session.spark, storage, [f"{staged.staging}/{f}" for f in staged.files], schema)


def _write(session: WritingSession, table: HudiTable, rows: DataFrame, write: WriteOptions) -> None:
    """``rows`` written to ``table`` as ``write`` says, the way the SQL statement that does the same writes them."""
    spark = session.spark
    table = table.for_statement(session.conf, write.settings)
    if write.operation == DELETE:
        with transaction(spark, table) as txn:
            _delete(session, txn, rows)
        return
    # As INSERT: upsert keeps one row per key, which a table without a record key has not.
    default = Operation.default_for(table)
    operation = {INSERT: Operation.INSERT, BULK_INSERT: Operation.BULK_INSERT}.get(write.operation, default)
    replacement = None
    if write.replaces:
        check_overwrite(table)
        replacement = overwrite_replacement(table.keygen.partition_fields, None, "STATIC", Operation(write.replaces))
    with transaction(spark, table, replace=replacement is not None) as txn:
        # Columns by name; a new one is added to the table, as Hudi's data source evolves the schema on write.
        insert = prepare_insert(txn.table, rows, None, None, by_name=True, schema_evolution=True)
        # Hudi's data source combines an insert's own rows only when hoodie.combine.before.insert says so.
        combine = registry.COMBINE_BEFORE_INSERT in table.settings and operation.combines(table)
        write_insert(txn, insert, operation, replacement, combine=combine)


def _delete(session: WritingSession, txn: WriteTransaction, rows: DataFrame) -> None:
    """Hudi's delete operation: the stored rows with the keys (record key and partition path) of
    ``rows`` go, whatever their ordering values; run as DELETE FROM ... WHERE (key, path) IN (the keys).
    A table with a global index deletes a key in whichever partition it is stored (``write.index``)."""
    table = txn.table
    wanted = {field_root(c).lower() for c in [*table.config.record_key_fields, *table.config.partition_fields]}
    keyed = prepare_insert(table, rows.select([f"`{c}`" for c in rows.columns if c.lower() in wanted]), None, None,
                           by_name=True).rows
    # The keys feed two steps (the partitions they name, then the DELETE): the staged files are read once.
    keys = keyed.select(table.keygen.record_key().alias("k"), table.keygen.partition_path(table.schema).alias("p"))
    keys = keys.persist(StorageLevel.MEMORY_AND_DISK)
    planner = session.planner
    view = planner.register(keys)
    try:
        if is_global(table):
            partitions = None
            where = exp.In(this=exp.column(RECORD_KEY, quoted=True), query=exp.select("k").from_(view).subquery())
        else:
            # Only the partitions the keys name are read (a list of paths, no rows, on the driver).
            partitions = {r[0] for r in keys.select("p").distinct().collect()}
            meta = exp.Tuple(expressions=[exp.column(RECORD_KEY, quoted=True), exp.column(PARTITION_PATH, quoted=True)])
            where = exp.In(this=meta, query=exp.select("k", "p").from_(view).subquery())
        DmlPlanner(planner, txn).delete(S.Delete(S.TableName(None, table.config.name), None, where), partitions)
    finally:
        planner.drop([view])
        keys.unpersist()


def remove_staging(storage: Storage, staging: str, new_path: bool) -> None:
    """Remove a write's staging folder, and what staging made of a path that had no table."""
    storage.delete_dir(staging)
    _remove_empty_new_table_staging(storage, posixpath.dirname(staging))
    if new_path and storage.exists() and not storage.list(""):
        storage.delete_dir()  # the folder the staging created, for a write that created no table


def _remove_empty_new_table_staging(storage: Storage, parent: str) -> None:
    if parent == NEW_TABLE_STAGING and not storage.list(parent):
        storage.delete_dir(parent)
