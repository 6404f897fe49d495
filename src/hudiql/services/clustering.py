"""Clustering: the small file groups of a partition rewritten, sorted, into fewer and larger ones.

- schedule: under the table lock, a ``<t>.replacecommit.requested`` holding Hudi's
  ``HoodieRequestedReplaceMetadata`` (operation ``CLUSTER``, a ``HoodieClusteringPlan``,
  ``timeline.replace_plan``). Per partition, the latest slices whose base file is smaller than
  ``hoodie.clustering.plan.strategy.small.file.limit`` (not those a pending compaction opened),
  largest first, in groups of up to 2 GB (Hudi's default bytes per group), each to be written
  into ceil(size / ``target.file.max.bytes``) file groups; at most ``max.num.groups`` groups, as
  Hudi's size-based plan strategy makes them. Refused while another clustering is pending,
  while a write earlier than ``t`` is in flight (as a compaction plan is), and on tables with
  the bucket index (a bucket is a file group).
- execute: a write transaction of the planned instant (``WriteTransaction.resume``, as a
  compaction runs): Spark tasks read each group's slices (merge-on-read: base and logs merged),
  sort them by the plan's sort columns and write new base files of about the target size; without
  sort columns, the task of each group reads its slices itself (no shuffle). Each
  record keeps its ``_hoodie_commit_time`` and ``_hoodie_commit_seqno`` (Hudi's plans preserve
  commit metadata), so an incremental read sees nothing new; only ``_hoodie_file_name`` names the
  new file. The instant completes as a replacecommit (operation ``CLUSTER``) that replaces the
  planned file groups.
- conflicts (``transaction.conflict``): a write to a file group of a pending plan fails, and the
  clustering fails when a write changed its file groups since the plan; its plan is then
  removed (it could never run).
- inline (``hoodie.clustering.inline``): after a write, pending plans run first, then a new one
  is planned and run when ``hoodie.clustering.inline.max.commits`` commits completed since the
  last clustering (``services.post_commit``).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from functools import reduce

import numpy as np
import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from hudiql.errors import ColumnError, HudiqlError, RunElsewhereError, WriteConflictError
from hudiql.file_group import FileSlice
from hudiql.file_group.reader import SliceReader
from hudiql.io.storage import Storage
from hudiql.spark_tasks import spread
from hudiql.index import secondary_index
from hudiql.read.snapshot import snapshot
from hudiql.config import registry as K
from hudiql.config.settings import Settings
from hudiql.timeline.commit import STATS_ARROW_SCHEMA, STATS_SCHEMA, CommitMetadata, WriteStat
from hudiql.timeline.replace_plan import (
    CLUSTER,
    ClusteringGroup,
    ClusteringPlan,
    ClusteringSlice,
    clustering_plan,
    encode_clustering,
    pending_clusterings,
)
from hudiql.record.schema import META_COLUMNS, conform, to_avro_json
from hudiql.table.table import HudiTable
from hudiql.timeline.active import REPLACE_COMMIT, WRITE_ACTIONS, Instant, as_layout_1
from hudiql.transaction.conflict import ConflictRule
from hudiql.transaction.metadata_commit import ranged_columns
from hudiql.transaction.prologue import locked
from hudiql.transaction.write_transaction import WriteTransaction
from hudiql.write.create_handle import CreateHandle, NewBaseFiles, running_task, with_file_name

INLINE = K.INLINE_CLUSTERING
_NUMBER_KEYS = (K.CLUSTERING_MAX_COMMITS, K.CLUSTERING_SMALL_FILE_LIMIT, K.CLUSTERING_TARGET_FILE_SIZE,
                K.CLUSTERING_MAX_GROUPS)
#: Hudi's default of hoodie.clustering.plan.strategy.max.bytes.per.group: one task writes a group.
MAX_BYTES_PER_GROUP = 2 * 1024 ** 3
_GROUP = "__hudiql_clustering_group"
_MB = 1024.0 * 1024.0


def check_settings(settings: Settings) -> None:
    """Refuse a bad clustering setting before anything is planned."""
    K.check_values(settings, (INLINE, *_NUMBER_KEYS))


def configured_sort_columns(settings: Settings) -> str:
    """``hoodie.clustering.plan.strategy.sort.columns``, or no sorting."""
    return settings.get(K.CLUSTERING_SORT_COLUMNS) or ""


def sort_columns(table: HudiTable, text: str) -> tuple[str, ...]:
    """The data columns ``'c1,c2'`` names (in any case), as the table spells them."""
    names = {f.name.lower(): f.name for f in table.schema.fields}
    out = []
    for part in filter(None, (p.strip() for p in text.split(","))):
        if part.lower() not in names:
            raise ColumnError(f"clustering sort column '{part}' is not a column of table {table.config.name}; "
                              f"its columns are {', '.join(table.schema.fieldNames())}")
        out.append(names[part.lower()])
    return tuple(out)


def _refuse_pending(table: HudiTable) -> None:
    pending = pending_clusterings(table.timeline)
    if pending:
        raise HudiqlError(
            f"table {table.config.name} has a pending clustering ({pending[0][0].timestamp}); run it first with "
            f"CALL run_clustering(table => '{table.config.name}', op => 'execute'), then plan another"
        )


def schedule(table: HudiTable, partitions: list[str] | None = None,
             order: str | None = None, every_slice: bool = False) -> Instant | None:
    """Plan a clustering of the small file groups (of ``partitions`` only, when given), sorted by
    ``order`` (else the sort columns setting); ``None`` when no file group qualifies.
    ``every_slice``: of every file group, whatever its size (``rewrite_columns``).

    Under the table lock, from the timeline as it is then: a write that completes later sees the
    plan in its conflict check, and a write that completed before is in the plan. As with
    compaction (Hudi's optimistic concurrency), writes in flight do not hold the plan back: it
    covers completed slices, and a write to a planned file group fails at its commit (and runs
    again, ``transaction.retry``). A single writer, and a plan of every slice (a column rewrite,
    which a write of the old columns would undo), still wait for them.
    """
    check_settings(table.settings)
    if table.index.is_bucket:
        raise HudiqlError(f"table {table.config.name} uses the bucket index, whose file groups are its buckets; "
                          "clustering would put a bucket's keys in other file groups, so hudiql does not cluster it")
    columns = sort_columns(table, configured_sort_columns(table.settings) if order is None else order)
    _refuse_pending(table)
    with locked(table, "clustering plan", roll_back_failed_writes=True) as held:
        table = held.table
        _refuse_pending(table)
        instant_time = held.claim_instant_time()  # no writer takes the plan's instant time
        held.wait_for_writes_in_flight("clustering", always=every_slice)
        if every_slice and table.file_system_view().pending_compactions:
            raise HudiqlError(f"table {table.config.name} has a pending compaction; run it first (CALL run_compaction)")
        plan = plan_clustering(table, partitions, columns, every_slice)
        if plan is None:
            return None
        return table.timeline.request(table.timeline.clustering_action, instant_time,
                                      encode_clustering(plan, table.base_uri))


def plan_clustering(table: HudiTable, partitions: list[str] | None,
                    columns: tuple[str, ...], every_slice: bool = False) -> ClusteringPlan | None:
    """The groups Hudi's size-based strategy makes of the table's small file slices (of all of
    them, in as many groups as they need, with ``every_slice``)."""
    small = table.settings.number(K.CLUSTERING_SMALL_FILE_LIMIT)
    target = table.settings.number(K.CLUSTERING_TARGET_FILE_SIZE)
    max_groups = table.settings.number(K.CLUSTERING_MAX_GROUPS)
    assumed = table.settings.number(K.MAX_FILE_SIZE)  # what a slice without a base file counts as

    def size(s: FileSlice) -> int:
        return s.base_file_size if s.base_file else assumed

    view = table.file_system_view()
    groups: list[ClusteringGroup] = []
    for partition in view.partitions() if partitions is None else partitions:
        eligible = [s for s in view.latest_slices(partition) if every_slice or (
            s.base_instant not in view.pending_compactions and (s.base_file_size if s.base_file else 0) < small)]
        current: list[FileSlice] = []
        for s in sorted(eligible, key=lambda s: -size(s)):
            if current and sum(map(size, current)) + size(s) > MAX_BYTES_PER_GROUP:
                groups.append(_group(current, size, target))
                current = []
            current.append(s)
        if current:
            groups.append(_group(current, size, target))
        if len(groups) >= max_groups and not every_slice:
            break
    return ClusteringPlan(tuple(groups if every_slice else groups[:max_groups]), columns) if groups else None


def _group(slices: list[FileSlice], size, target: int) -> ClusteringGroup:
    total = sum(map(size, slices))
    read = sum(s.base_file_size + s.log_size for s in slices)
    return ClusteringGroup(
        tuple(ClusteringSlice(s.partition_path, s.file_id, s.base_file, tuple(s.log_files)) for s in slices),
        max(1, math.ceil(total / target)), read / _MB,
    )


@dataclass(frozen=True)
class ClusteringTask:
    """Writes the rows of clustering groups, sorted by group then by the sort columns, into new
    base files of about ``target_bytes`` each (pickled to the executors)."""

    files: NewBaseFiles
    partitions: tuple[str, ...]  # per group: its partition path
    target_bytes: int

    def udf(self, reading: GroupReading | None = None):
        """The function ``mapInArrow`` calls: group-tagged rows in (sorted by group), or, with
        ``reading``, the indexes of the groups to read; stats rows out."""
        def cluster(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
            rows = batches if reading is None else reading.rows(batches)
            yield pa.RecordBatch.from_pylist(self.write(rows), schema=STATS_ARROW_SCHEMA)

        return cluster

    def write(self, batches: Iterator[pa.RecordBatch]) -> list[dict]:
        _, token = running_task()
        storage = Storage(self.files.base_uri)
        stats: list[dict] = []
        out: CreateHandle | None = None
        group = -1
        for batch in batches:
            if batch.num_rows == 0:
                continue
            groups = batch.column(_GROUP).to_numpy()
            starts = [0, *(np.flatnonzero(np.diff(groups)) + 1), len(groups)]
            for begin, end in zip(starts, starts[1:]):
                if out is not None and (group != int(groups[begin]) or out.written_bytes >= self.target_bytes):
                    stats.append(out.close())
                    out = None
                group = int(groups[begin])
                if out is None:
                    out = CreateHandle(storage, self.files, self.partitions[group], token)
                # The commit time and sequence number stay; the file name is the new file's.
                rows = conform(pa.Table.from_batches([batch.slice(begin, end - begin)]), self.files.arrow_schema)
                out.write(with_file_name(rows, out.name))
        if out is not None:
            stats.append(out.close())
        return stats


@dataclass(frozen=True)
class GroupReading:
    """A task's reading of whole clustering groups: each slice merged by ``reader`` (all columns),
    a row group or the logs' records at a time, tagged by group; with ``sources``, the rows renamed
    and cut to the new columns (``rewrite_columns``: new name -> stored name)."""

    reader: SliceReader
    groups: tuple[ClusteringGroup, ...]
    sources: dict[str, str] | None = None

    def rows(self, indexes: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        columns = self.reader.arrow_schema.names
        for batch in indexes:
            for index in batch.column(0).to_pylist():
                for s in self.groups[index].slices:
                    for rows in self.reader.snapshot_batches(s.partition_path, s.base_file or None, list(s.log_files),
                                                            columns):
                        if self.sources is not None:
                            meta = [c for c in META_COLUMNS if c in rows.schema.names]
                            rows = pa.RecordBatch.from_arrays(
                                [rows.column(c) for c in meta] + [rows.column(self.sources[n]) for n in self.sources],
                                names=[*meta, *self.sources])
                        yield rows.append_column(_GROUP, pa.array(np.full(rows.num_rows, index, np.int32)))


def _group_rows(spark: SparkSession, table: HudiTable, plan: ClusteringPlan) -> DataFrame:
    """The rows of every group as the snapshot has them (merged on merge-on-read), tagged by group."""
    view = table.file_system_view(plan.partitions())
    parts = [
        snapshot(spark, table, view, file_groups={(s.partition_path, s.file_id) for s in group.slices})
        .withColumn(_GROUP, F.lit(i))
        for i, group in enumerate(plan.groups)
    ]
    return reduce(DataFrame.unionByName, parts)


def rewrite_columns(spark: SparkSession, table: HudiTable, schema: T.StructType,
                    sources: dict[str, str]) -> CommitMetadata | None:
    """ALTER TABLE DROP / RENAME COLUMN (``hoodie.schema.on.read.enable``): every file group
    rewritten, its slice merged, with the columns of ``schema``, each read from its stored column
    (``sources``: new name to stored name), in one clustering that keeps each row's commit time. So
    every reader reads the new columns by name, where Hudi's readers map stored columns by the ids
    of its internal schema (which the official reader does not). ``None``: the table has no file
    group (the caller records the schema alone). Refused on bucket-index tables, whose file groups
    are their buckets."""
    what = f"ALTER TABLE {table.config.name} {'RENAME' if set(sources.values()) == set(table.schema.fieldNames()) else 'DROP'} COLUMN"
    if table.index.is_bucket:
        raise HudiqlError(f"{what} rewrites every file group, and the table uses the bucket index, whose file groups are "
                          "its buckets: copy the table with CREATE TABLE ... AS SELECT instead")
    indexed = [i.column for i in secondary_index.indexes(table)] if table.config.metadata_partitions else []
    changed = [c for c in indexed if sources.get(c) != c]
    if changed:
        raise HudiqlError(f"{what}: column {changed[0]} has a secondary index; DROP INDEX it first")
    listed = [c.strip() for c in (table.settings.get(K.COLUMN_STATS_COLUMNS) or "").split(",") if c.strip()]
    changed = [c for c in listed if sources.get(c) != c]
    if changed:
        raise HudiqlError(f"{what}: column {changed[0]} is in {K.COLUMN_STATS_COLUMNS}; take it out of the list first "
                          "(ALTER TABLE ... SET TBLPROPERTIES)")
    instant = schedule(table, order="", every_slice=True)
    if instant is None:
        return None
    try:
        return execute(spark, table.refreshed(), instant, (schema, sources))
    except BaseException:
        # The plan is this statement's: it must neither run later as a plain clustering nor hold
        # back the writes to its file groups.
        table.refreshed().timeline.remove_pending(instant)
        raise


def execute(spark: SparkSession, table: HudiTable, instant: Instant,
            columns: tuple[T.StructType, dict[str, str]] | None = None) -> CommitMetadata | None:
    """Run a planned clustering (or one whose runner died) and commit it; ``columns``: the
    table's new schema and where each column comes from (``rewrite_columns``). ``None``: another
    writer ran it meanwhile."""
    plan = clustering_plan(table.timeline, instant)
    assert plan is not None, f"{instant.timestamp} is not a clustering"
    try:
        txn = WriteTransaction.resume(spark, table, instant)
    except RunElsewhereError:
        return None
    with txn:
        schema, ranged, sources = txn.table.schema, ranged_columns(table), None
        if columns is not None:
            schema, sources = columns
            sources = {f.name: sources[f.name] for f in schema.fields}  # in the new schema's order
            renamed = {stored: name for name, stored in sources.items()}
            ranged = tuple(renamed[c] for c in ranged if c in renamed)
        files = NewBaseFiles.of(table, instant.timestamp, schema, ranged)
        task = ClusteringTask(files, tuple(g.partition_path for g in plan.groups),
                              table.settings.number(K.CLUSTERING_TARGET_FILE_SIZE))
        if plan.sort_columns:
            parallel = max(1, min(len(plan.groups), spark.sparkContext.defaultParallelism * 4))
            assert sources is None, "a clustering that rewrites columns keeps the rows' order"
            # One task writes each group, its rows in the plan's order: files hold ranges of it.
            rows = _group_rows(spark, txn.table, plan).repartition(parallel, _GROUP) \
                .sortWithinPartitions(_GROUP, *[f"`{c}`" for c in plan.sort_columns])
            written = rows.mapInArrow(task.udf(), STATS_SCHEMA)
        else:
            # No order to make: the task of a group reads its slices itself (no shuffle; its rows
            # never cross into the JVM), one task per core, each an equal share (``spark_tasks``).
            reading = GroupReading(txn.table.slice_reader(txn.table.columns), plan.groups, sources)
            cores = spark.sparkContext.defaultParallelism
            order = spread(list(range(len(plan.groups))), lambda i: plan.groups[i].size_mb, cores)
            indexes = spark.createDataFrame(spark.sparkContext.parallelize([(i,) for i in order],
                                                                           max(1, min(len(order), cores))), "g int")
            written = indexes.mapInArrow(task.udf(reading), STATS_SCHEMA)
        stats = [WriteStat.from_row(r.asDict()) for r in written.collect()]
        replaced: dict[str, list[str]] = {}
        for group in plan.groups:
            for s in group.slices:
                replaced.setdefault(s.partition_path, []).append(s.file_id)
        metadata = CommitMetadata(
            operation_type=CLUSTER, schema=to_avro_json(schema, table.config.name), write_stats=stats,
            partition_to_replace_file_ids=replaced,
        )
        try:
            txn.commit(metadata, ConflictRule(actions=WRITE_ACTIONS, planned_at=instant.timestamp))
        except WriteConflictError:
            # A write changed the planned slices since the plan: run again, the plan would lose
            # again, and its file groups would take no write meanwhile. It goes, as its files do.
            txn.abort()
            txn.table.timeline.remove_pending(instant)
            raise
        return metadata


def describe(table: HudiTable, limit: int | None = None, show_partitions: bool = False,
             only: set[str] | None = None) -> list[tuple[str, int, str, str]]:
    """The clusterings on the active timeline, newest first (of ``only``'s instant times, when
    given): (instant, input groups, state, involved partitions or ``*``), as Hudi's procedures list them."""
    timeline = table.timeline
    rows = []
    for instant in [i for i in reversed(timeline.instants) if as_layout_1(i.action) == REPLACE_COMMIT]:
        if only is not None and instant.timestamp not in only:
            continue
        plan = clustering_plan(timeline, instant)
        if plan is not None:
            rows.append((instant.timestamp, len(plan.groups), instant.state.name,
                         ",".join(plan.partitions()) if show_partitions else "*"))
    return rows[:limit] if limit is not None else rows


def is_due(table: HudiTable) -> bool:
    """Whether ``max.commits`` commits completed since the last clustering (planned or done)."""
    timeline = table.timeline
    last = next((i.timestamp for i in reversed(timeline.instants) if clustering_plan(timeline, i) is not None), "")
    commits = [i for i in timeline.completed() if i.timestamp > last]
    return len(commits) >= table.settings.number(K.CLUSTERING_MAX_COMMITS)


def cluster_inline(spark: SparkSession, table: HudiTable) -> list[CommitMetadata]:
    """After a write, with ``hoodie.clustering.inline`` (``services.post_commit``): run the
    clusterings already planned (their file groups take no write until they complete), then plan
    and run one when due. ``table``: as the write left it; listed again after a clustering ran."""
    check_settings(table.settings)
    done = [execute(spark, table.refreshed(), instant) for instant, _ in pending_clusterings(table.timeline)]
    table = table.refreshed() if done else table
    if is_due(table):
        instant = schedule(table)
        if instant is not None:
            done.append(execute(spark, table.refreshed(), instant))
    return [metadata for metadata in done if metadata is not None]
