"""The write path (copy-on-write and merge-on-read), driven from the driver, executed in Spark tasks.

``write_rows`` turns a DataFrame of table rows into one commit:
1. key columns as Spark expressions (key generator), precombine (merge rule; with the bucket
   index it runs within step 4's shuffle instead);
2. the index (``write.index``) tags each row with the file group that stores its key;
3. bucket assignment of inserts (small files first, then new file groups), unless the bucket
   index placed them already;
4. a shuffle by file group; each group is merged and written by one task (``MergeTask``), or,
   on merge-on-read, its changes are appended as a new log file (``AppendTask``);
5. the tasks' write stats become the commit metadata, which the write transaction
   (``transaction.write_transaction``) checks for conflicts and completes atomically. (A statement's write runs
   in ``services.post_commit.transaction``, which runs the table services after the commit.)
Any failure rolls the instant back: its files are removed and nothing becomes visible.

Example (statements reach ``write_rows`` through ``Session.sql``):
    >>> _ = session.sql("CREATE TABLE orders (id BIGINT, v STRING) USING hudi TBLPROPERTIES (primaryKey = 'id')")
    >>> table = HudiTable.load(warehouse + "/orders")
    >>> rows = spark.createDataFrame([(1, "a"), (2, "b")], "id BIGINT, v STRING")
    >>> with WriteTransaction.start(spark, table, COMMIT) as txn:
    ...     meta = write_rows(txn, rows, Operation.UPSERT)
    >>> meta.operation_type, meta.total("num_inserts"), [s.partition_path for s in meta.write_stats]
    ('UPSERT', 2, [''])
    >>> table.refreshed().timeline.completed()[0].action
    'commit'
"""

from __future__ import annotations

from collections.abc import Collection, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from enum import Enum
from functools import reduce

from pyspark import StorageLevel
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from hudiql.config import registry
from hudiql.config.index_config import IndexConfig
from hudiql.errors import DataError, OptionError, SqlError
from hudiql.formats.log_file import wrapper_for
from hudiql.index import record_index as RI
from hudiql.index import secondary_index
from hudiql.index.record_index import KEYS_STAY, IndexWrites, RecordIndex
from hudiql.table.fsview import FileSystemView
from hudiql.record.keygen import check_virtual_keys
from hudiql.record.merge import MergeRule
from hudiql.record.schema import (
    IS_DELETED,
    META_COLUMNS,
    PARTITION_PATH,
    RECORD_KEY,
    nested_type,
    to_arrow,
    to_avro,
    to_avro_json,
    with_meta_columns,
)
from hudiql.table.table import HudiTable
from hudiql.timeline.active import COMMIT  # noqa: F401 - the docstring example
from hudiql.timeline.commit import STATS_SCHEMA, CommitMetadata, WriteStat
from hudiql.timeline.replace_plan import pending_clusterings
from hudiql.transaction.conflict import NON_BLOCKING, ConflictRule
from hudiql.transaction.metadata_commit import ranged_columns
from hudiql.transaction.write_transaction import WriteTransaction
from hudiql.write.append_handle import AppendTask, LogTarget
from hudiql.write.bucket import Bucket, assign_inserts
from hudiql.write.bulk_insert import BulkInsertTask
from hudiql.write.create_handle import NewBaseFiles, write_partition_metadata
from hudiql.write.handle import (
    DELETE,
    FILE_ID,
    NEW_KEY,
    SEQUENCE,
    MergeTask,
)
from hudiql.write.index import NEW_GROUP, is_global, plan_constant, stored_rows, tag


@dataclass(frozen=True)
class DmlCounts:
    """What a write did to the table's rows, as a statement reports it and the commit's
    ``extraMetadata`` records it (``hudiql.num_*``)."""

    updated: int = 0
    deleted: int = 0
    inserted: int = 0
    skipped_older: int = 0  # lost to a stored row with a greater ordering value

    NAMES = ("num_affected_rows", "num_updated_rows", "num_deleted_rows", "num_inserted_rows", "num_skipped_older_rows")

    @property
    def affected(self) -> int:
        return self.updated + self.deleted + self.inserted

    def row(self) -> tuple[int, int, int, int, int]:
        return (self.affected, self.updated, self.deleted, self.inserted, self.skipped_older)

    def metadata(self) -> dict[str, str]:
        return {f"hudiql.{n}": str(v) for n, v in zip(self.NAMES, self.row())}

    @classmethod
    def from_metadata(cls, extra: dict[str, str]) -> DmlCounts:
        values = {n: int(extra.get(f"hudiql.{n}", 0)) for n in cls.NAMES}
        return cls(values["num_updated_rows"], values["num_deleted_rows"], values["num_inserted_rows"],
                   values["num_skipped_older_rows"])

    @classmethod
    def from_write_stats(cls, rows: list[dict]) -> DmlCounts:
        """The sum of the tasks' stats rows (``STATS_SCHEMA``), one per file group."""
        def total(name: str) -> int:
            return sum(r[name] or 0 for r in rows)

        return cls(total("num_update_writes"), total("num_deletes"), total("num_inserts"), total("num_skipped_older"))


class Operation(str, Enum):
    """Hudi's write operations (``hoodie.datasource.write.operation``), as hudiql runs them."""

    UPSERT = "upsert"
    INSERT = "insert"
    BULK_INSERT = "bulk_insert"
    # Replace commits: new rows go to new file groups, and the commit replaces live ones.
    INSERT_OVERWRITE = "insert_overwrite"
    INSERT_OVERWRITE_TABLE = "insert_overwrite_table"
    DELETE_PARTITION = "delete_partition"

    @property
    def replaces(self) -> bool:
        return self in (Operation.INSERT_OVERWRITE, Operation.INSERT_OVERWRITE_TABLE, Operation.DELETE_PARTITION)

    @classmethod
    def default_for(cls, table: HudiTable) -> Operation:
        """What a data source write (``df.write.format("hudi")``) does unless told, as Hudi's:
        upsert, keeping one row per key; a table without a record key has no key to keep one row
        of, and inserts."""
        return cls.UPSERT if table.has_record_key else cls.INSERT

    @classmethod
    def sql_insert_default(cls, table: HudiTable) -> Operation:
        """What Hudi's Spark SQL INSERT INTO does unless told: up to Hudi 1.0 (table versions 6
        and 8) it upserts into a table with a record key and an ordering field; otherwise, and
        always from Hudi 1.1 (version 9), it inserts, keeping rows that share a key."""
        if table.config.version < 9 and table.has_record_key and table.config.ordering_field:
            return cls.UPSERT
        return cls.INSERT

    @classmethod
    def for_insert(cls, table: HudiTable, default: Operation | None = None) -> tuple[Operation, str]:
        """What an INSERT statement (or CTAS: ``default`` bulk_insert) does, and the key that said
        so: Spark SQL's ``hoodie.spark.sql.insert.into.operation`` or the data source's
        ``hoodie.datasource.write.operation``, either set by the session (``table.settings.given``)
        beating either table property, else ``default`` or ``sql_insert_default``. An upsert into
        a table without a record key inserts."""
        keys = (registry.INSERT_INTO_OPERATION, registry.WRITE_OPERATION)
        given = [(k, settings.get(k)) for settings in (table.settings.given, table.config.props) for k in keys]
        key, raw = next(((k, v) for k, v in given if v), (keys[0], (default or cls.sql_insert_default(table)).value))
        try:
            operation = cls(raw.lower())
        except ValueError:
            raise SqlError(f"{key}={raw} is not valid; use insert, upsert or bulk_insert") from None
        if not table.has_record_key and operation is cls.UPSERT:
            operation = cls.INSERT
        return operation, key

    def combines(self, table: HudiTable) -> bool:
        """Whether an INSERT INTO with this operation keeps one row per key of its own rows:
        an upsert always; insert and bulk_insert when ``hoodie.combine.before.insert`` says so,
        by default on a table with a record key and an ordering field up to table version 8 (Hudi's
        Spark SQL sets it so up to 1.0; 1.1 keeps every row)."""
        if not table.has_record_key:
            return False
        if self is Operation.UPSERT:
            return True
        if self not in (Operation.INSERT, Operation.BULK_INSERT):
            return False
        if registry.COMBINE_BEFORE_INSERT in table.settings:
            return table.settings.flag(registry.COMBINE_BEFORE_INSERT)
        return table.config.version < 9 and bool(table.config.ordering_field)

    def merges_into_stored(self, table: HudiTable, dup_policy_set: bool) -> bool:
        """Whether this insert's rows placed in an existing file group merge with its rows by key
        (Hudi's merge handle: ``hoodie.merge.allow.duplicate.on.inserts=false``) instead of being
        added beside them (its concat handle). Hudi's writer allows duplicates anyway for an insert
        whose ``hoodie.datasource.insert.dup.policy`` is set and is not fail, as every Spark SQL
        INSERT's is (``dup_policy_set``)."""
        if self is not Operation.INSERT or not table.has_record_key or table.settings.flag(registry.ALLOW_DUPLICATE_ON_INSERTS):
            return False
        set_ = dup_policy_set or registry.INSERT_DUP_POLICY in table.settings
        return not set_ or table.settings.choice(registry.INSERT_DUP_POLICY) == "fail"


@dataclass(frozen=True)
class Replacement:
    """What one replacecommit replaces: the live file groups (in the statement's snapshot) of

    - every partition (``INSERT_OVERWRITE_TABLE``);
    - ``partitions`` (static partitions of an overwrite, dropped or truncated ones), and with
      ``touched`` also the partitions the new rows land in (``INSERT_OVERWRITE``).
    """

    operation: Operation
    partitions: tuple[str, ...] = ()
    touched: bool = False

    def file_ids(self, table: HudiTable, written: Collection[str]) -> dict[str, list[str]]:
        """``partitionToReplaceFileIds`` in ``table`` (the snapshot); ``written``: the partitions
        the new rows went to. Only the partitions replaced are listed."""
        if self.operation is Operation.INSERT_OVERWRITE_TABLE:
            view = table.file_system_view()
            partitions = view.partitions()
        else:
            partitions = sorted(set(self.partitions) | (set(written) if self.touched else set()))
            view = table.file_system_view(partitions)
        return {p: [g.file_id for g in view.file_groups(p)] for p in partitions}


def write_rows(
    txn: WriteTransaction, rows: DataFrame, operation: Operation, replacement: Replacement | None = None,
    combine: bool = False, sql_insert: bool = False,
) -> CommitMetadata | None:
    """Write ``rows`` (the table's data columns; INSERT, CTAS) as the commit of ``txn``; returns
    its metadata. With a ``replacement`` (INSERT OVERWRITE) the rows go to new file groups, as
    into an empty table, and the commit replaces what ``replacement`` says; ``None`` when that
    changes nothing (no row, nothing replaced: the instant leaves no trace). ``combine``: an
    insert keeps one row per key of ``rows`` too (``Operation.combines``); ``sql_insert``: a Spark
    SQL INSERT, whose dup policy is always set (``Operation.merges_into_stored``)."""
    spark, table = txn.spark, txn.table
    index = txn.table.index
    # Upserts keep one row per key (precombine). The simple index needs it before the lookup:
    # bucket assignment counts the inserts, and deleting a new key drops it. The bucket index
    # does it in the shuffle by file group that the write needs anyway.
    precombine = table.has_record_key and operation is Operation.UPSERT
    record = _record_index(table, replacement is None)
    bulk = _starts_file_groups_only(table, operation, replacement, record)
    rows = _prepare(table, rows)
    if (precombine and not index.is_bucket) or (combine and table.has_record_key and not precombine):
        # A global index keeps a key once in the table: rows of one key combine across partitions.
        keys = [RECORD_KEY] if is_global(table) else [RECORD_KEY, PARTITION_PATH]
        if bulk:
            # The tasks after this shuffle write the files, each a file per partition path it meets:
            # one task per core (the window reuses this partitioning), not one per shuffle partition.
            rows = rows.repartition(spark.sparkContext.defaultParallelism, *keys)
        rows = table.merge_rule.precombine(rows, keys, SEQUENCE)
    policy = table.settings.choice(registry.INSERT_DUP_POLICY)
    if policy != "none" and table.has_record_key and operation in (Operation.INSERT, Operation.BULK_INSERT):
        rows = _with_dup_policy(spark, table, rows, policy, replacement)
    if bulk:
        task_stats, index_writes = _bulk_insert(table, rows, operation, txn.instant_time), None
    else:
        task_stats, index_writes = _write_file_groups(
            spark, table, index, rows, operation, txn.instant_time, table.merge_rule, precombine and index.is_bucket,
            overwrite=replacement is not None, record=record, merges_inserts=operation.merges_into_stored(table, sql_insert),
        )
    return _commit(txn, index, operation, task_stats, None, replacement, index_writes)


def _starts_file_groups_only(table: HudiTable, operation: Operation, replacement: Replacement | None,
                             record: RecordIndex | None) -> bool:
    """Whether every row of the write starts a new file group, so that it can be written where it
    is (``write.bulk_insert``): a bulk insert, an overwrite's rows, and an insert or upsert into a
    table no write completed on yet (an ALTER TABLE's commit counts: nothing to look up, no small
    file to fill). Not with the bucket index, whose buckets place rows, nor when the write records
    its keys in the record index, which is told each key's file group."""
    if table.index.is_bucket or record is not None:
        return False
    empty = not table.timeline.completed()
    return operation is Operation.BULK_INSERT or replacement is not None or (
        empty and operation in (Operation.INSERT, Operation.UPSERT))


def _bulk_insert(table: HudiTable, rows: DataFrame, operation: Operation, instant_time: str) -> list[dict]:
    """Write the prepared ``rows`` into new base files in the Spark tasks that hold them; returns
    the tasks' stats rows. Rows that delete their key are left out, as an insert leaves them."""
    rows = rows.where(~_deletes(rows))
    data = [f"`{c}`" for c in table.schema.fieldNames() if c in rows.columns]  # (the task fills the others with NULL)
    task = BulkInsertTask(
        files=NewBaseFiles.of(table, instant_time),
        max_file_size=table.settings.number(registry.MAX_FILE_SIZE),
        bytes_per_record=_record_size(table),
        sized_by_estimate=operation is not Operation.BULK_INSERT,
        task_buffer_bytes=table.settings.size(registry.WRITE_TASK_MAX_SIZE),
        generate_keys=not table.has_record_key,
    )
    # Each task writes a file per partition path it meets: a small write goes through one task, so
    # that a partition does not get a file per task. Small: Spark's estimate of the rows (no job; a
    # plan's size in bytes, in memory or on disk, Long.MaxValue when it cannot tell) is below a
    # file's share of each core.
    estimate = rows._jdf.queryExecution().optimizedPlan().stats().sizeInBytes()
    if estimate < task.max_file_size / rows.sparkSession.sparkContext.defaultParallelism:
        rows = rows.coalesce(1)
    stats = rows.select(*data, RECORD_KEY, PARTITION_PATH).mapInArrow(task.udf(), STATS_SCHEMA)
    return [r.asDict() for r in stats.collect()]


def _record_size(table: HudiTable) -> int:
    """Bytes per record that new file groups are sized by: ``hoodie.copyonwrite.record.size.estimate``,
    else the table's average."""
    return table.settings.number(registry.RECORD_SIZE_ESTIMATE) or table.average_record_size()


def _with_dup_policy(spark: SparkSession, table: HudiTable, rows: DataFrame, policy: str,
                     replacement: Replacement | None) -> DataFrame:
    """Hudi's ``hoodie.datasource.insert.dup.policy`` on an insert's ``rows``: ``drop`` leaves out the
    rows whose key (in its partition) the table holds, ``fail`` refuses the statement naming one
    such key. The stored keys are read from the snapshot of the partitions the rows go to (an
    overwrite replaces what it would compare with: nothing to check)."""
    if replacement is not None:
        return rows
    # A global index keeps a key once in the table: it is looked for in every partition.
    keys = [RECORD_KEY] if is_global(table) else [RECORD_KEY, PARTITION_PATH]
    partitions = None if is_global(table) else sorted(r[0] for r in rows.select(PARTITION_PATH).distinct().collect())
    view = table.file_system_view(partitions)
    if not view.latest_slices():
        return rows
    stored = stored_rows(table, view, None)
    if policy == "drop":
        return rows.join(stored.select(*keys), keys, "left_anti")
    found = rows.join(stored.select(*keys), keys, "left_semi").select(RECORD_KEY).limit(1).collect()
    if found:
        raise DataError(f"Duplicate key found for insert statement, key is: {found[0][0]} (table {table.config.name} "
                        f"holds it; {registry.INSERT_DUP_POLICY}=fail): leave the row out, or set the policy to drop or none")
    return rows


def write_schema(txn: WriteTransaction, schema: T.StructType) -> CommitMetadata:
    """Commit ``schema`` as the table's (ALTER TABLE ... COLUMNS): a commit without files, operation
    ALTER_SCHEMA, as Hudi records a schema change. Files written before read added columns as NULL."""
    metadata = CommitMetadata(operation_type="ALTER_SCHEMA", schema=to_avro_json(schema, txn.table.config.name))
    txn.commit(metadata, ConflictRule(), KEYS_STAY)
    return metadata


def write_replacement(txn: WriteTransaction, replacement: Replacement) -> CommitMetadata | None:
    """Commit ``replacement`` alone (DROP PARTITION, TRUNCATE): a replacecommit without new files;
    ``None`` when it replaces no file group."""
    return _commit(txn, txn.table.index, replacement.operation, [], None, replacement, None)


def write_decided(
    txn: WriteTransaction,
    rows: DataFrame,
    counts: DmlCounts,
    inserts: dict[str, int],
    inserts_checked: bool,
    operation: Operation = Operation.UPSERT,
) -> CommitMetadata:
    """Write the rows of a MERGE / UPDATE / DELETE as the commit of ``txn``; ``operation``: insert
    for a MERGE that only inserts into a table without an ordering field (its rows that share a
    key are all kept, as Hudi keeps them), else upsert.

    The statement decided each row against the stored row it read (the merge rule, partition
    moves, deletes: ``write.dml``), and the rows carry their key columns, input sequence, delete
    flag and ``FILE_ID``, the file group of the stored row (null for a new key). So no index
    lookup runs again, and each row replaces its key's stored version: the transaction's
    conflict check makes sure that version is still the one the statement read (but under
    non-blocking concurrency control, where readers merge concurrent writes by the ordering
    field, as Hudi's do). ``inserts``:
    rows without a file group, per partition path (every partition the write touches is a key).
    ``inserts_checked``: the statement's join saw every stored row a new key could match (a
    MERGE ON the record key over the whole table), else the index looks the new keys up.
    """
    spark, table, instant_time = txn.spark, txn.table, txn.instant_time
    index = txn.table.index
    replace = MergeRule.latest_wins()
    record = _record_index(table, True)
    merges_inserts = operation.merges_into_stored(table, dup_policy_set=False)
    if index.is_bucket:  # the bucket index reads nothing: it places every row again, cheaply
        task_stats, index_writes = _write_file_groups(
            spark, table, index, rows.drop(FILE_ID), operation, instant_time, replace, False,
            merges_inserts=merges_inserts,
        )
    else:
        looks_up = not inserts_checked and any(inserts.values())
        view = table.file_system_view(None if looks_up and is_global(table) else sorted(inserts))
        tagged = rows
        if looks_up:
            new = rows.where(F.col(FILE_ID).isNull()).drop(FILE_ID)
            found, _ = tag(spark, table, index, new, sorted(inserts), view, lookup=True)
            tagged = rows.where(F.col(FILE_ID).isNotNull()).unionByName(found)
        _write_partition_metadata(table, sorted(p for p, n in inserts.items() if n), instant_time, view)
        if record is not None:  # the index's log reads the decided rows again: computed once
            tagged = tagged.persist(StorageLevel.MEMORY_AND_DISK)
        try:
            # (an update that moves its key's partition is also a delete at the old one)
            task_stats, index_writes = _write_tagged(
                spark, table, tagged, None, view, operation, instant_time, replace, False,
                {p: n for p, n in inserts.items() if n}, record=record, merges_inserts=merges_inserts,
                most_rows=2 * counts.affected + counts.skipped_older,
            )
        finally:
            tagged.unpersist()
    return _commit(txn, index, operation, task_stats, counts.metadata(), None, index_writes)


@contextmanager
def planned_shuffles(spark: SparkSession) -> Iterator[None]:
    """Spark's adaptive execution is off within a write: the write sizes its own shuffles (one
    task per file group, ``_by_file_group``), and adaptive execution would run each shuffle
    stage as a Spark job of its own, a fixed cost that dominates a small statement."""
    before = spark.conf.get(_ADAPTIVE, None)
    spark.conf.set(_ADAPTIVE, "false")
    try:
        yield
    finally:
        if before is None:
            spark.conf.unset(_ADAPTIVE)
        else:
            spark.conf.set(_ADAPTIVE, before)


_ADAPTIVE = "spark.sql.adaptive.enabled"


def check_write_settings(table: HudiTable) -> None:
    """Refuse, before anything is written, what a write of ``table`` with its statement's settings
    (``HudiTable.for_statement``) cannot do."""
    if not table.config.populate_meta_fields:
        check_virtual_keys(table.config.record_key_fields, table.config.keygen_class, table.schema)
    if table.config.is_mor:
        table.settings.check(registry.MERGE_ON_READ_WRITE_KEYS)
    table.index.check_unchanged(table.config.props, table.settings.given, table.config.record_key_fields)


def check_overwrite(table: HudiTable) -> None:
    """Refuse an INSERT OVERWRITE (or a data source overwrite) of ``table`` with its statement's
    settings, before its transaction starts: under non-blocking concurrency control its new file
    groups would take the fixed ids of the bucket groups it replaces (Hudi refuses it too)."""
    if registry.is_non_blocking(table.settings):
        raise OptionError(f"INSERT OVERWRITE is not supported under {registry.CONCURRENCY_MODE}="
                          f"{registry.NON_BLOCKING}; SET {registry.CONCURRENCY_MODE}={registry.OPTIMISTIC} for it")


def _commit(
    txn: WriteTransaction,
    index: IndexConfig,
    operation: Operation,
    task_stats: list[dict],
    counts: dict[str, str] | None,
    replacement: Replacement | None,
    index_writes: IndexWrites | None,
) -> CommitMetadata | None:
    """Commit the tasks' stats rows as the metadata of ``txn`` (and what it replaces), with the
    record index logs the write wrote (None: it kept no record index)."""
    table = txn.table
    # The tasks count what the incoming rows did (``insert_counts`` reads it back). A MERGE /
    # UPDATE / DELETE decided its rows while planning and passes its own counts, which win.
    metadata = CommitMetadata(
        operation_type=(replacement.operation if replacement else operation).value.upper(),
        schema=to_avro_json(table.schema, table.config.name),
        write_stats=[WriteStat.from_row(r) for r in task_stats],
        extra_metadata=counts or DmlCounts.from_write_stats(task_stats).metadata(),
    )
    if replacement is not None:
        replaced = replacement.file_ids(table, {s.partition_path for s in metadata.write_stats})
        if not task_stats and not any(replaced.values()):
            return None  # nothing written, nothing replaced: the transaction rolls its instant back
        metadata.partition_to_replace_file_ids = replaced
    unique_keys = table.has_record_key and operation is Operation.UPSERT
    rule = (NON_BLOCKING if replacement is None and _non_blocking(table, operation)
            else ConflictRule(bucket_index=index.is_bucket, unique_keys=unique_keys))
    txn.commit(metadata, rule, index_writes)
    return metadata


def _record_index(table: HudiTable, records_keys: bool) -> RecordIndex | None:
    """The record index a write records its keys in: the table's, when the write keeps it and
    ``records_keys`` (a write that replaces file groups does not: the index then goes), with the
    secondary indexes it adds its rows' entries to."""
    if records_keys and RI.usable(table) and RI.wanted(table):
        record = RecordIndex.of(table)
        record.secondary = secondary_index.indexes(table, record.mdt)
        return record
    return None


def _prepare(table: HudiTable, rows: DataFrame) -> DataFrame:
    """Data columns + key columns + input sequence."""
    data = rows.select([c for c in rows.columns if c not in META_COLUMNS])
    df = data.withColumn(SEQUENCE, F.monotonically_increasing_id())
    if table.has_record_key:
        df = df.withColumn(RECORD_KEY, table.keygen.record_key())
    else:
        df = df.withColumn(RECORD_KEY, F.lit(None).cast("string"))
    return df.withColumn(PARTITION_PATH, table.keygen.partition_path(table.schema))


def _write_file_groups(
    spark: SparkSession,
    table: HudiTable,
    index: IndexConfig,
    incoming: DataFrame,
    operation: Operation,
    instant_time: str,
    merge_rule: MergeRule,
    precombine: bool,
    overwrite: bool = False,
    record: RecordIndex | None = None,
    merges_inserts: bool = False,
) -> tuple[list[dict], IndexWrites | None]:
    """Tag ``incoming`` and write it by file group; ``precombine``: keep one row per key in the
    shuffle by file group (bucket index); ``overwrite``: into new file groups only, as if the
    table were empty; ``record``: the record index the write records its keys in;
    ``merges_inserts``: ``Operation.merges_into_stored``. Returns the tasks' stats rows
    (``STATS_SCHEMA``) and what the write recorded in the record index."""
    incoming = incoming.persist(StorageLevel.MEMORY_AND_DISK)
    cached = [incoming]
    try:
        # Rows per partition: the partitions to index, and a bound on their inserts.
        rows_by_partition = {r[0]: r[1] for r in incoming.groupBy(PARTITION_PATH).count().collect()}
        partitions = sorted(rows_by_partition)
        lookup = operation is Operation.UPSERT
        # A global index may place a row in any partition: the view holds them all.
        view = FileSystemView.empty() if overwrite else table.file_system_view(
            None if lookup and is_global(table) else partitions)
        _write_partition_metadata(table, partitions, instant_time, view)
        tagged, new_groups = tag(spark, table, index, incoming, partitions, view, lookup,
                                 _non_blocking(table, operation))
        partitioned = new_groups is not None
        if partitioned:
            # Bucket index: every row is placed already. One shuffle by file group serves the write
            # and the precombine: a window within each file group needs no exchange of its own.
            # (Groups a non-blocking write starts with logs count too: every bucket of its partitions may.)
            started = len(partitions) * index.num_buckets if _non_blocking(table, operation) else new_groups
            tagged = _by_file_group(spark, tagged, len(view.latest_slices()) + started)
            if precombine:
                # The record key leads the window's sort: Spark sorts on a key's first bytes, which
                # file ids of one bucket share.
                tagged = table.merge_rule.precombine(tagged, [RECORD_KEY, PARTITION_PATH, FILE_ID], SEQUENCE)
        # Tagged rows that feed more than one step are computed once: the simple index's (insert
        # counts, appends, file rewrites), and those of a bucket-index MOR write that starts file
        # groups (appends, new groups). Spark does not rely on the partitioning of cached rows, so
        # those are shuffled by file group again where they are written.
        shared = not partitioned or (table.config.is_mor and new_groups > 0)
        if shared:
            tagged = tagged.persist(StorageLevel.MEMORY_AND_DISK)
            cached.append(tagged)
        return _write_tagged(
            spark, table, tagged, new_groups, view, operation, instant_time, merge_rule, partitioned and not shared,
            most_inserts=rows_by_partition, record=record, merges_inserts=merges_inserts,
            most_rows=sum(rows_by_partition.values()),
        )
    finally:
        for frame in cached:
            frame.unpersist()


def _write_tagged(
    spark: SparkSession,
    table: HudiTable,
    tagged: DataFrame,
    new_groups: int | None,
    view: FileSystemView,
    operation: Operation,
    instant_time: str,
    merge_rule: MergeRule,
    partitioned: bool,
    insert_counts: dict[str, int] | None = None,
    most_inserts: dict[str, int] | None = None,
    record: RecordIndex | None = None,
    merges_inserts: bool = False,
    most_rows: int | None = None,
) -> tuple[list[dict], IndexWrites | None]:
    """Write the tagged rows; ``partitioned``: they are already shuffled by file group.
    ``insert_counts``: rows without a file group per partition, when the caller knows them;
    else ``most_inserts`` bounds them. ``record``: the record index to write the keys' new places
    in (what it recorded there is returned beside the tasks' stats rows). ``most_rows``: a bound
    on the rows, when known: they touch at most that many file groups, so a small write runs no
    more tasks than it has rows (each task of a file group's write starts a Python worker)."""
    updates, inserts = _split(tagged)
    mor = table.config.is_mor
    bucketed = new_groups is not None
    rewritten: list[str] = []
    if new_groups is not None:
        # Bucket index: every row is placed already; rows of new buckets start their file groups.
        inserts = inserts if new_groups else None
    else:
        # Inserts fill small file groups first. On MOR only the smallest group without log files
        # in each partition qualifies, and its base file is rewritten with the inserts (as Hudi's
        # delta commit does when its index cannot find keys in logs): every key stays in a base
        # file, and the other groups keep taking their updates as logs. As in Hudi's upsert
        # partitioner, a group a pending clustering rewrites takes no inserts (they would conflict
        # with the clustering).
        small_files: dict[str, list] = {}
        if operation is not Operation.BULK_INSERT:
            small_limit = table.settings.number(registry.SMALL_FILE_LIMIT)
            clustered = {group for _, plan in pending_clusterings(table.timeline) for group in plan.file_groups()}
            for s in view.latest_slices():
                if (s.base_file and not s.log_files and s.base_file_size < small_limit
                        and (s.partition_path, s.file_id) not in clustered):
                    small_files.setdefault(s.partition_path, []).append(s)
            if mor:
                small_files = {p: [min(slices, key=lambda s: s.base_file_size)] for p, slices in small_files.items()}
        inserts, buckets = _assign_buckets(table, inserts, small_files, insert_counts, most_inserts)
        new_groups = len(buckets)
        rewritten = [b.file_id for b in buckets if b.base_file]
    groups = len(view.latest_slices()) + new_groups
    if most_rows is not None:
        # A small write's file groups share a task per core: a task's start costs more than the
        # few rows each of them takes.
        cores = spark.sparkContext.defaultParallelism
        groups = max(1, min(groups, most_rows, max(cores, -(-most_rows // _ROWS_PER_TASK))))

    def by_file_group(rows: DataFrame) -> DataFrame:
        return rows if partitioned else _by_file_group(spark, rows, groups)

    arrow_schema = to_arrow(with_meta_columns(table.schema))
    append = _append_task(table, view, instant_time, arrow_schema, _non_blocking(table, operation)) if mor else None
    merge = MergeTask(
        files=NewBaseFiles.of(table, instant_time),
        merge_rule=merge_rule,
        base_files={(s.partition_path, s.file_id): s.base_file for s in view.latest_slices() if s.base_file},
        # (a table without a record key upserts only stored rows' keys)
        concat=operation is not Operation.UPSERT and not merges_inserts,
        combines_incoming=merges_inserts,
        generate_keys=not table.has_record_key,
        append=append,
    )
    stats: list[DataFrame] = []  # one collect for every task: one Spark job
    if mor:
        # Updates of a small file group that takes inserts are merged into its new base file:
        # a log would belong to the slice the rewrite supersedes. (If no insert arrives, its
        # task appends them as a log after all: ``MergeTask.append``.) A small write's appends go
        # through the same tasks, as one Python stage: a task's start costs more than its rows.
        one_stage = not bucketed and most_rows is not None and most_rows <= _ROWS_PER_TASK
        merged_updates = updates
        if not one_stage:
            into_base = F.col(FILE_ID).isin(rewritten)
            merged_updates = updates.where(into_base)
            if append is not None:
                stats.append(by_file_group(updates.where(~into_base)).mapInArrow(append.udf(), STATS_SCHEMA))
        if rewritten or one_stage:
            to_merge = merged_updates
            if inserts is not None:
                to_merge = to_merge.unionByName(inserts.withColumn(NEW_KEY, F.lit(True)), allowMissingColumns=True)
        else:
            to_merge = inserts
    elif partitioned:
        # One filter keeps the rows' partitioning by file group; a union of the two sides would not.
        to_merge = tagged.where(~(F.col(NEW_GROUP) & _deletes(tagged))).drop(NEW_GROUP)
    else:
        to_merge = updates.unionByName(inserts) if inserts is not None else updates
    if to_merge is not None:
        stats.append(by_file_group(to_merge).groupBy(PARTITION_PATH, FILE_ID).applyInArrow(merge.udf(), STATS_SCHEMA))
    if record is not None:  # its logs are written in the same Spark job as the data files
        stats.append(record.change_logs(_key_changes(updates, inserts, merge_rule), instant_time))
        written = updates.where(~_deletes(updates))
        written = written.unionByName(inserts, allowMissingColumns=True) if inserts is not None else written
        for index in record.secondary:
            rows = written.select(RECORD_KEY, F.col(f"`{index.column}`"))
            stats.append(index.change_logs(rows, table.schema[index.column].dataType, record.mdt, instant_time))
    rows = [r.asDict() for r in reduce(DataFrame.union, stats).collect()] if stats else []
    return record.recorded(rows) if record is not None else (rows, None)


def _key_changes(updates: DataFrame, inserts: DataFrame | None, merge_rule: MergeRule) -> DataFrame:
    """What a write changes in the record index: the place of each inserted key, and the keys it
    deleted. A delete that may lose to the stored row by the merge rule (an older ordering value)
    is left out: the index may keep a deleted key's last place, which a lookup then finds empty,
    but never miss a stored key."""
    def changes(rows: DataFrame, deleted: Column) -> DataFrame:
        return rows.select(F.col(RECORD_KEY).alias(RI.KEY), F.col(PARTITION_PATH).alias(RI.LOCATED_PARTITION),
                           F.col(FILE_ID).alias(RI.LOCATED_FILE_ID), deleted.alias(RI.DELETED))

    parts = [] if merge_rule.is_event_time else [changes(updates.where(_deletes(updates)), F.lit(True))]
    if inserts is not None:
        parts.append(changes(inserts, F.lit(False)))
    if not parts:
        return changes(updates.limit(0), F.lit(False))
    return reduce(DataFrame.unionByName, parts)


#: The rows below which a write's file groups share their tasks (``_write_tagged``).
_ROWS_PER_TASK = 10_000


def _by_file_group(spark: SparkSession, rows: DataFrame, groups: int) -> DataFrame:
    """``rows`` shuffled by file group, one partition per group (bounded by the cores): with
    no explicit count, adaptive execution may fold every file write into one task on one core."""
    parallel = max(1, min(groups, spark.sparkContext.defaultParallelism * 4))
    return rows.repartition(parallel, PARTITION_PATH, FILE_ID)  # a file id may repeat across partitions


def _split(tagged: DataFrame) -> tuple[DataFrame, DataFrame]:
    """(rows for existing file groups, rows that need a new one); deleting a key that is not
    stored is a no-op (but in a bucket a non-blocking write starts with a log file, where it is a
    delete block, as Hudi writes it). Rows of the simple index get their new file group by bucket
    assignment."""
    if NEW_GROUP in tagged.columns:
        updates = tagged.where(~F.col(NEW_GROUP)).drop(NEW_GROUP)
        inserts = tagged.where(F.col(NEW_GROUP) & ~_deletes(tagged)).drop(NEW_GROUP)
    else:
        updates = tagged.where(F.col(FILE_ID).isNotNull())
        inserts = tagged.where(F.col(FILE_ID).isNull() & ~_deletes(tagged)).drop(FILE_ID)
    return updates, inserts


def _deletes(rows: DataFrame) -> Column:
    """Rows that delete their key: ``_hoodie_is_deleted`` or a MERGE / DELETE statement's delete."""
    flags = [F.coalesce(F.col(flag), F.lit(False)) for flag in (IS_DELETED, DELETE) if flag in rows.columns]
    return reduce(lambda a, b: a | b, flags, F.lit(False))


def _assign_buckets(
    table: HudiTable, inserts: DataFrame, small_files: dict,
    insert_counts: dict[str, int] | None, most_inserts: dict[str, int] | None,
) -> tuple[DataFrame | None, list[Bucket]]:
    """Tag inserts with the file group that receives them (``None`` when there are none);
    ``insert_counts`` per partition, counted here unless given.

    When even ``most_inserts`` fit in one file group per partition, that assignment is the one
    the exact counts would give, and counting them (a Spark job) is skipped: a small write's case.
    (On merge-on-read a small file group so chosen that receives no insert appends its updates
    as a log all the same: ``MergeTask.append``.)
    """
    max_file_size = table.settings.number(registry.MAX_FILE_SIZE)
    record_size = _record_size(table)
    buckets = None
    if insert_counts is None and most_inserts is not None:
        buckets = assign_inserts(most_inserts, small_files, record_size, max_file_size)
        if len({b.partition_path for b in buckets}) != len(buckets):
            buckets = None
    if buckets is None:
        if insert_counts is None:
            insert_counts = {r[0]: r[1] for r in inserts.groupBy(PARTITION_PATH).count().collect()}
        buckets = assign_inserts(insert_counts, small_files, record_size, max_file_size)
    if not buckets:
        return None, []
    # Each partition's hash ranges, in order, as one constant of the plan; the last is open-ended.
    ranges: dict[str, list[dict]] = {}
    for b in sorted(buckets, key=lambda b: (b.partition_path, b.low)):
        ranges.setdefault(b.partition_path, []).append({"high": b.high, "file_id": b.file_id})
    for partition_ranges in ranges.values():
        partition_ranges[-1]["high"] = 2.0
    plan = plan_constant(ranges, "map<string, array<struct<high: double, file_id: string>>>")
    spread = F.col(RECORD_KEY) if table.has_record_key else F.col(SEQUENCE).cast("string")
    share = F.pmod(F.xxhash64(spread), F.lit(1_000_003)) / F.lit(1_000_003.0)
    chosen = F.filter(F.try_element_at(plan, F.col(PARTITION_PATH)), lambda r: share < r["high"])
    return inserts.withColumn(FILE_ID, F.try_element_at(chosen, F.lit(1))["file_id"]), buckets


def _non_blocking(table: HudiTable, operation: Operation) -> bool:
    """Whether the write runs under non-blocking concurrency control: it starts a bucket's file
    group with its log file, under the bucket's fixed id (concurrent writers that start one bucket
    then meet in one file group, each with its own log file, as Hudi's bucket partitioner places
    them), and commits without conflicting with other writers (``conflict.NON_BLOCKING``). A bulk
    insert writes base files and is checked, as in Hudi."""
    return table.index.is_bucket and registry.is_non_blocking(table.settings) and operation is not Operation.BULK_INSERT


def _append_task(
    table: HudiTable, view: FileSystemView, instant_time: str, arrow_schema, logs_start_groups: bool = False,
) -> AppendTask | None:
    """MOR: what turns updates and deletes of existing file groups (shuffled by file group)
    into a new log file per group (``None`` when no group can take logs); ``logs_start_groups``:
    rows of a group the view does not hold start it with their log file (``index.tag``)."""
    delta_commit = instant_time if table.timeline.layout_version >= 2 else None
    targets = {(partition, file_id): LogTarget(*target) for partition, file_id, *target in view.log_targets(delta_commit)}
    # Non-blocking concurrency control runs on version 8+ tables (registry.check_concurrency_mode),
    # whose logs are named by their delta commit.
    new_group = LogTarget(None, instant_time, 1) if logs_start_groups else None
    if not targets and new_group is None:
        return None
    # Rows carry their file group (partition path, file id) only; what its log file needs travels once, in the task.
    schema = with_meta_columns(table.schema)
    ordering = table.config.ordering_field
    avro_schema = to_avro(schema, table.config.name)
    return AppendTask(
        base_uri=table.base_uri,
        instant_time=instant_time,
        arrow_schema=arrow_schema,
        avro_schema=avro_schema,
        ordering_field=ordering,
        ordering_wrapper=_ordering_wrapper(table) if ordering else None,
        targets=targets,
        block_format=table.settings.choice(registry.LOG_BLOCK_FORMAT),
        batch_size=table.settings.size(registry.WRITE_BATCH_SIZE),
        task_max_size=table.settings.size(registry.WRITE_TASK_MAX_SIZE),
        populate_meta_fields=table.config.populate_meta_fields,
        ranged_columns=ranged_columns(table),
        new_group=new_group,
    )


def _ordering_wrapper(table: HudiTable) -> str:
    """The orderingVal wrapper of the table's ordering field (a column, or a field of a STRUCT one)."""
    dtype = nested_type(table.schema, table.config.ordering_field)
    return wrapper_for(to_avro(T.StructType([T.StructField("ordering", dtype)]), table.config.name)["fields"][0]["type"])


def _write_partition_metadata(table: HudiTable, partitions: list[str], instant_time: str,
                              view: FileSystemView) -> None:
    """Each of ``partitions``' ``.hoodie_partition_metadata``, unless it is there: a partition that
    holds file groups of ``view`` has it."""
    known = set(view.partitions())
    for partition in (p for p in partitions if p not in known):
        write_partition_metadata(table.storage, partition, instant_time)
