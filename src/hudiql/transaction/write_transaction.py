"""The write transaction: one per statement that writes, and one per compaction run.

A transaction owns everything between a write's snapshot and its completed instant:
1. ``start``, before the statement reads the table: a table hudiql cannot write is refused and a
   metadata table the write would leave stale is removed (``transaction.prologue``); writes whose writer died are rolled back
   (``transaction.rollback``); under the table lock the timeline is read, the instant time is
   claimed with a heartbeat (``transaction.heartbeat``) and the instant goes requested -> inflight:
   ``txn.table`` is the statement's snapshot (config, timeline, file-system view: read once and
   passed down). A compaction is planned under the same lock, so it is either in the snapshot
   (the write goes to the slices it opens) or planned later, seeing this write in flight.
2. The writer's tasks write files, each marked under ``.hoodie/.temp/<instant>/`` first.
3. ``commit``: files of failed task attempts are removed; under the table lock
   (``transaction.lock``), the timeline is read again and the write is checked against every instant
   that completed since the snapshot (``transaction.conflict``); the metadata table, when the table
   keeps one, records the files written (``table.metadata_table``); the instant completes with one
   atomic write. From here on the statement has succeeded.
4. On any failure before that, ``abort``: the files and the instant are removed; nothing is visible.
Post-commit services (``services.post_commit``: inline compaction, cleaning) run after the transaction,
each a transaction of its own, so that none of them can fail the statement.

``hoodie.write.concurrency.mode=SINGLE_WRITER`` skips the lock and the check.

Example (a write that writes no file; a real one commits the write stats of its tasks):
    >>> from hudiql.config.table_config import TableConfig
    >>> from hudiql.timeline.active import COMMIT
    >>> table = HudiTable.create(warehouse + "/orders", TableConfig({"hoodie.table.name": "orders"}))
    >>> txn = WriteTransaction.start(spark, table, COMMIT)
    >>> [(i.timestamp == txn.instant_time, i.state.value) for i in txn.table.timeline.instants]
    [(True, 'inflight')]
    >>> txn.abort()                                # a task failed, say: nothing of the write is left
    >>> Timeline.load(table.storage).instants
    []
    >>> with WriteTransaction.start(spark, table, COMMIT) as txn:
    ...     txn.commit(CommitMetadata(operation_type="UPSERT"), ConflictRule(unique_keys=True)).state
    <State.COMPLETED: 'completed'>
"""

from __future__ import annotations

from pyspark.sql import SparkSession

from hudiql.config import registry
from hudiql.errors import HudiqlError, RunElsewhereError, WriteConflictError, from_spark_error
from hudiql.layout import marker_folder
from hudiql.table.metadata_table import FileChanges
from hudiql.table.table import HudiTable
from hudiql.timeline.active import Instant, State, Timeline
from hudiql.index.record_index import IndexWrites
from hudiql.timeline.commit import CommitMetadata
from hudiql.transaction import conflict
from hudiql.transaction.conflict import ConflictRule
from hudiql.transaction.heartbeat import (
    WriterHeartbeat,
    claim_instant_time,
    heartbeat_path,
    interval_ms,
    is_expired,
)
from hudiql.transaction.lock import commit_lock
from hudiql.transaction.metadata_commit import recording
from hudiql.transaction.prologue import open_for_write
from hudiql.transaction.rollback import (
    files_from_markers,
    needs_rollback,
    rollback,
    rollback_failed_writes,
)


class WriteTransaction:
    """One write of one table, from its snapshot to its completed (or rolled back) instant."""

    def __init__(self, spark: SparkSession, table: HudiTable, instant: Instant, heartbeat: WriterHeartbeat,
                 resumed: bool = False) -> None:
        self.spark = spark
        self.table = table  # the snapshot, with the statement's settings
        self.instant = instant
        self._heartbeat = heartbeat
        self._resumed = resumed  # a planned instant (compaction): a rollback keeps its plan
        self._done = False
        self.committed = False
        #: The table as this commit left it (``commit``): the timeline with the completed instant.
        self.committed_table: HudiTable | None = None

    @property
    def instant_time(self) -> str:
        return self.instant.timestamp

    @classmethod
    def start(cls, spark: SparkSession, table: HudiTable, action: str, requested: bytes = b"") -> WriteTransaction:
        """A new instant of ``action`` on ``table``, inflight (``requested``: the content of its
        requested file); ``txn.table`` is the snapshot of the table taken with it (``table``'s own
        timeline is only used to claim the instant)."""
        settings = table.settings
        open_for_write(table)
        registry.check_retention(settings)  # before anything is written: its services must be able to run
        heartbeat = instant = None
        try:
            for attempt in range(2):
                with commit_lock(table.storage, settings, f"{action} start"):
                    # The instant time is claimed under the lock, from the timeline read under it, so
                    # instant order is lock order: a plan made before (compaction, clustering) is older
                    # than this write and in its snapshot, one made after sees this write in flight and
                    # waits. A time claimed before the lock could be older than a plan this write then
                    # writes into, and readers take a slice's writes from its base instant on.
                    snapshot = table.refreshed()  # the statement's one listing before its commit
                    if attempt == 1 or not needs_rollback(snapshot):
                        heartbeat = claim_instant_time(snapshot)
                        instant = snapshot.timeline.start(action, heartbeat.instant_time, requested)
                        snapshot = snapshot.with_timeline(snapshot.timeline.with_instant(instant))
                        break
                # A writer died: its write is rolled back (outside the lock, which rollback takes), then
                # the timeline is listed again.
                rollback_failed_writes(snapshot)
        except BaseException:
            if instant is not None:
                snapshot.timeline.remove_pending(instant)
            if heartbeat is not None:
                heartbeat.stop()
            raise
        return cls(spark, snapshot, instant, heartbeat)

    @classmethod
    def resume(cls, spark: SparkSession, table: HudiTable, planned: Instant) -> WriteTransaction:
        """Run a planned instant (a requested compaction, or one whose runner died: rolled back
        to requested first). Refused while another process runs it."""
        settings = table.settings
        open_for_write(table)
        storage = table.storage
        path = heartbeat_path(planned.timestamp)
        if storage.exists(path):
            if not is_expired(storage, path, settings):
                raise WriteConflictError(f"{planned.action} {planned.timestamp} is being run by another writer")
            storage.delete(path)
        heartbeat = WriterHeartbeat(storage, planned.timestamp, interval_ms(settings))
        if not heartbeat.start():
            raise WriteConflictError(f"{planned.action} {planned.timestamp} is being run by another writer")
        # Another writer may have run the plan since ``table``'s timeline was listed (its heartbeat
        # ends with its commit): look again now that this one holds the heartbeat. (Nothing of
        # such a plan is this writer's to roll back.)
        current = Timeline.load(storage, table.config)
        still = [i for i in current.pending() if (i.timestamp, i.action) == (planned.timestamp, planned.action)]
        if not still:
            heartbeat.stop()
            raise RunElsewhereError(f"{planned.action} {planned.timestamp} was run by another writer")
        planned = still[0]
        txn = cls(spark, table, planned, heartbeat, resumed=True)
        try:
            if planned.state is State.INFLIGHT:
                rollback(table, planned, keep_requested=True)
            txn.instant = table.timeline.transition_to_inflight(planned)
        except BaseException:
            txn.abort()
            raise
        return txn

    def __enter__(self) -> WriteTransaction:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if not self._done:
            self.abort()
        if exc is not None and not isinstance(exc, HudiqlError):
            translated = from_spark_error(exc)  # a task failed on bad data: say so in one line
            if translated is not None:
                raise translated from None

    def commit(self, metadata: CommitMetadata, rule: ConflictRule, index_writes: IndexWrites | None = None) -> Instant:
        """Complete the instant with ``metadata`` unless a write that completed meanwhile
        conflicts with it (``WriteConflictError``, after which the caller aborts). ``index_writes``:
        what the write recorded in the record index (``transaction.metadata_commit.recording``)."""
        written = {s.path for s in metadata.write_stats}
        for path in files_from_markers(self.table, self.instant_time):
            if path not in written:
                self.table.storage.delete(path)  # a failed task attempt's file
        current = self.table.timeline  # with one writer (no lock), nothing else completes
        with commit_lock(self.table.storage, self.table.settings, f"{self.instant.action} {self.instant_time}") as lock:
            if lock is not None:
                current = Timeline.load(self.table.storage, self.table.config)
                conflict.check(self.spark, self.table, self.table.timeline, current, self.instant, metadata, rule)
            metadata.extra_metadata.update(self.table.settings.commit_extra_metadata())
            with recording(self.table, self.instant_time, FileChanges.of_commit(metadata), index_writes) as mdt:
                completed = self.table.timeline.complete(self.instant, metadata.encode(self.table.timeline.layout_version))
        # What the post-commit services start from: the listing under the lock, and this commit.
        self.committed_table = self.table.with_timeline(current.with_instant(completed))
        if mdt is not None:  # as this commit left it: the next statement need not list it again
            mdt.note_current_for(self.committed_table.config, self.committed_table.timeline)
        self._done = self.committed = True
        self.table.storage.delete_dir(marker_folder(self.instant_time))
        self._heartbeat.stop()
        return completed

    def abort(self) -> None:
        """Remove every file of the write and its instant (a planned instant goes back to requested)."""
        self._done = True
        try:
            rollback(self.table, self.instant, keep_requested=self._resumed)
        finally:
            self._heartbeat.stop()
