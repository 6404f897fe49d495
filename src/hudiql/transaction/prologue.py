"""What every write and table service does first, before it changes anything in a table.

``open_for_write`` refuses a table hudiql cannot write (another timeline layout), and removes a
metadata table that the change would leave stale (``table.metadata_table``: one the statement does
not keep: ``hoodie.metadata.enable=false``, or a version 6 table), under the table lock, saying so
in one line.

``locked`` is the whole prologue of a table service or procedure (compaction, clustering, clean,
archive, savepoint, rollback, restore): the table opened for write, failed writes rolled back, the
table lock taken and the table listed under it, rollbacks a crash left pending finished, and, when
the service makes an instant, its instant time claimed with a heartbeat.

Example:
    >>> from hudiql.config.table_config import METADATA_PARTITIONS, TableConfig
    >>> table = HudiTable.create(warehouse + "/orders", TableConfig({"hoodie.table.name": "orders", METADATA_PARTITIONS: "files"}))
    >>> open_for_write(table)
    >>> table.config.metadata_partitions
    []
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from pyspark.sql import SparkSession

from hudiql.config import registry
from hudiql.errors import HudiqlError, WriteConflictError, warn
from hudiql.formats.bloom_filter import FilterSpec
from hudiql.index import bloom, bloom_filters, column_stats, partition_stats, record_index
from hudiql.metadata.bloom_filters import BLOOM_FILTERS_PARTITION
from hudiql.metadata.column_stats import COLUMN_STATS_PARTITION, PARTITION_STATS_PARTITION
from hudiql.metadata.records import FILES_PARTITION
from hudiql.read.snapshot import stored_locations
from hudiql.table import metadata_table
from hudiql.table.metadata_table import has_metadata_table, remove_metadata_table
from hudiql.table.table import HudiTable
from hudiql.timeline.active import COMMIT, DELTA_COMMIT, REPLACE_COMMIT, RESTORE, ROLLBACK, ensure_writable
from hudiql.transaction.heartbeat import WriterHeartbeat, claim_instant_time
from hudiql.transaction.lock import commit_lock
from hudiql.transaction.metadata_commit import (
    kept_partitions,
    keeps_bloom_filters,
    keeps_column_stats,
    keeps_partition_stats,
    keeps_metadata_table,
    keeps_record_index,
)
from hudiql.transaction.rollback import finish_pending, rollback_failed_writes


def open_for_write(table: HudiTable) -> None:
    """Make ``table`` ready to be changed by hudiql, or refuse it (``HudiqlError``); once per
    statement (its services share the table)."""
    if table.opened_for_write:
        return
    ensure_writable(table.config, table.base_uri)
    registry.check_metadata_table(table.settings, table.config.name, table.config.version)
    registry.check_concurrency_mode(table.settings, table.config.name, table.config.version, table.config.is_mor)
    if not keeps_metadata_table(table) and has_metadata_table(table.storage, table.config):
        with commit_lock(table.storage, table.settings, "metadata table removal"):
            config = remove_metadata_table(table.storage)
        table.config.props = dict(config.props)  # the statement's snapshots share this config
        why = (f"hudiql keeps none on version {table.config.version} tables (CALL upgrade_table to keep one)"
               if table.config.version < 8 else f"{registry.METADATA_ENABLE} is false")
        warn(f"removed the metadata table of table {table.config.name} (.hoodie/metadata): {why}, and readers "
             "that list files through it would miss what hudiql writes")
    if keeps_record_index(table):
        record_index.check_writable(table)
    if keeps_column_stats(table):
        column_stats.check_columns(table)
    # An index of a metadata table with partitions hudiql does not keep is rebuilt with it
    # (``table.metadata_table.open_for_write``), before the write looks keys up or ranges files.
    kept = kept_partitions(table)
    if keeps_metadata_table(table) and (kept - {FILES_PARTITION} and kept ^ set(table.config.metadata_partitions)
                                        or _foreign_records(table)):
        _build_indexes(table)
    table.opened_for_write = True


def _foreign_records(table: HudiTable) -> bool:
    """Whether the table's metadata table holds records encoded otherwise than hudiql encodes them
    (a Hudi 1.0 writer's), which its first write rebuilds (``metadata_table.open_for_write``) with
    the indexes its writes keep. No request once this process has read its latest base file of
    ``files`` (``MetadataTable.record_schema``)."""
    if table.config.version < 8 or FILES_PARTITION not in table.config.metadata_partitions:
        return False
    try:
        mdt = metadata_table.MetadataTable.known(table.storage) or metadata_table.MetadataTable.load(table.storage)
        return not mdt.appendable()
    except (HudiqlError, OSError):
        return False  # a damaged metadata table: the write refuses it in its own words


def _build_indexes(table: HudiTable) -> None:
    """Build the indexes the table's writes keep and it has none of (and its metadata table, if
    it has none), under the lock: an index holds what every completed write wrote."""
    with commit_lock(table.storage, table.settings, "metadata index build"):
        mdt, config = metadata_table.open_for_write(table.storage, kept_partitions(table))
        current = table.refreshed()
        spark = SparkSession.active()
        if keeps_record_index(table) and record_index.RECORD_INDEX_PARTITION not in config.metadata_partitions:
            config = record_index.build(current, mdt, stored_locations(spark, current))
        found = None
        if keeps_column_stats(table) and COLUMN_STATS_PARTITION not in config.metadata_partitions:
            config, found = column_stats.build(spark, current, mdt)
        if keeps_partition_stats(table) and PARTITION_STATS_PARTITION not in config.metadata_partitions:
            config = partition_stats.build(spark, current, mdt, found)
        if keeps_bloom_filters(table) and BLOOM_FILTERS_PARTITION not in config.metadata_partitions:
            config = bloom_filters.build(spark, current, mdt, bloom.filter_spec(current) or FilterSpec())
    table.config.props = dict(config.props)  # the statement's snapshots share this config


class LockedTable:
    """A table under the table lock, listed after the lock was taken: what a service decides from
    it holds until the lock is released."""

    def __init__(self, table: HudiTable) -> None:
        self.table = table
        self._heartbeat: WriterHeartbeat | None = None

    def claim_instant_time(self) -> str:
        """A new instant time for the service's instant, kept from every writer by a heartbeat
        until the lock is released."""
        if self._heartbeat is None:
            self._heartbeat = claim_instant_time(self.table)
        return self._heartbeat.instant_time

    def wait_for_writes_in_flight(self, service: str, always: bool = False) -> None:
        """Refuse to plan ``service`` while a write older than its instant is in flight, on a
        single writer's table (no conflict check would fail that write) or ``always``. Otherwise a
        plan is made past such writes, as Hudi's optimistic concurrency makes it: it covers the
        completed slices, and an earlier write to a planned file group fails at its commit."""
        if not (always or registry.is_single_writer(self.table.settings)):
            return
        instant_time = self.claim_instant_time()
        inflight = [i for i in self.table.timeline.pending((COMMIT, DELTA_COMMIT, REPLACE_COMMIT))
                    if i.timestamp < instant_time]
        if inflight:
            raise WriteConflictError(
                f"cannot schedule {service} at {instant_time}: write {inflight[0].timestamp} is still in flight")

    def release(self) -> None:
        if self._heartbeat is not None:
            self._heartbeat.stop()


@contextmanager
def locked(table: HudiTable, purpose: str,
           roll_back_failed_writes: bool = False) -> Iterator[LockedTable]:
    """The prologue of a table service or procedure (``purpose`` names it in a lock conflict):
    ``table`` opened for write, its failed writes rolled back first (``roll_back_failed_writes``:
    the services that plan from the file slices), then the table lock held for the block, with the
    table listed under it and the rollbacks and restores a crash left pending finished."""
    open_for_write(table)
    if roll_back_failed_writes:
        rollback_failed_writes(table)
    with commit_lock(table.storage, table.settings, purpose):
        table = table.refreshed()
        if table.timeline.pending((ROLLBACK, RESTORE)):
            finish_pending(table)
            table = table.refreshed()
        held = LockedTable(table)
        try:
            yield held
        finally:
            held.release()
