"""Compaction of merge-on-read tables: schedule, plan, execute, commit.

- schedule: a ``<t>.compaction.requested`` instant holding the plan, one operation per file
  group whose latest slice has log files; ``t`` is later than every instant. Writes in flight do
  not hold it back (Hudi's optimistic concurrency): an earlier write to a planned file group fails
  at its commit and runs again. A single writer's table refuses while a write is in flight.
- execute: a write transaction (``transaction.write_transaction``) of the planned instant: Spark tasks merge
  each operation's base file and logs into a new base file named with the compaction instant;
  the instant completes as a ``commit`` with ``compacted: true``. A failed run is rolled back to
  requested and can run again; a run whose process died, at once on this host (else once its
  heartbeat expired).
- inline (``hoodie.compact.inline``): after a delta commit, pending plans run first, oldest
  first, then a new one is planned when the trigger fires (``services.post_commit``).
- Writes that arrive while a compaction is pending go to log files of the new slice (named by
  the compaction instant); readers merge them with the slice being compacted.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import pyarrow as pa
from pyspark.sql import SparkSession

from hudiql.errors import HudiqlError, RunElsewhereError
from hudiql.file_group.reader import SliceReader
from hudiql.index.record_index import KEYS_STAY
from hudiql.io.storage import Storage
from hudiql.spark_tasks import spread
from hudiql.formats.bloom_filter import FilterSpec, footer_filter, write_with_footer
from hudiql.index.bloom import filter_spec
from hudiql.metadata.column_stats import ranges_text
from hudiql.config import registry as K
from hudiql import layout
from hudiql.timeline.commit import STATS_ARROW_SCHEMA, STATS_SCHEMA, CommitMetadata, WriteStat
from hudiql.timeline.compaction_plan import CompactionOperation, decode_plan, encode_plan
from hudiql.record.keygen import record_keys_of
from hudiql.record.schema import FILE_NAME, to_avro_json, with_meta_columns
from hudiql.table.table import HudiTable
from hudiql.timeline.active import (
    COMPACTION,
    DELTA_COMMIT,
    REPLACE_COMMIT,
    Instant,
    parse_instant_time,
)
from hudiql.transaction.conflict import ConflictRule
from hudiql.transaction.metadata_commit import ranged_columns
from hudiql.transaction.prologue import locked
from hudiql.transaction.write_transaction import WriteTransaction
from hudiql.write.create_handle import running_task

TRIGGER_STRATEGY = K.TRIGGER_STRATEGY
MAX_DELTA_COMMITS = K.MAX_DELTA_COMMITS
MAX_DELTA_SECONDS = K.MAX_DELTA_SECONDS


def pending_compactions(table: HudiTable) -> list[Instant]:
    return [i for i in table.timeline.instants if i.action == COMPACTION and not i.is_completed]


def read_plan(table: HudiTable, instant: Instant) -> list[CompactionOperation]:
    return decode_plan(table.timeline.read_requested(instant))


def is_due(table: HudiTable) -> bool:
    """Whether the inline trigger fires: delta commits and/or time since the last compaction."""
    strategy = table.settings.choice(TRIGGER_STRATEGY)
    timeline = table.timeline
    compactions = [i for i in timeline.instants if i.action == COMPACTION]
    since = compactions[-1].timestamp if compactions else ""
    deltas = [i for i in timeline.completed((DELTA_COMMIT,)) if i.timestamp > since]
    if not deltas:
        return False
    enough_commits = len(deltas) >= table.settings.number(MAX_DELTA_COMMITS)
    start = since or deltas[0].timestamp
    elapsed = time.time() - parse_instant_time(start).timestamp()
    enough_time = elapsed >= table.settings.number(MAX_DELTA_SECONDS)
    return {
        "NUM_COMMITS": enough_commits,
        "TIME_ELAPSED": enough_time,
        "NUM_AND_TIME": enough_commits and enough_time,
        "NUM_OR_TIME": enough_commits or enough_time,
    }[strategy]


def schedule(table: HudiTable) -> Instant | None:
    """Plan a compaction of every file group whose latest slice has logs; ``None`` if none has.

    Under the table lock, from the timeline as it is then: a write that completes later sees
    the plan in its conflict check, and a write that completed before is in the plan. Writes in
    flight do not hold it back, as under Hudi's optimistic concurrency control: the plan covers
    completed slices only, and an earlier write to a planned file group fails at its commit (and
    runs again on the new snapshot, ``transaction.retry``), so compaction is never starved by
    steady writers. A single writer (no lock, no conflict check) still waits for them.
    """
    if not table.config.is_mor:
        raise HudiqlError(f"table {table.config.name} is copy-on-write; only merge-on-read tables are compacted")
    with locked(table, "compaction plan", roll_back_failed_writes=True) as held:
        table = held.table
        timeline = table.timeline
        instant_time = held.claim_instant_time()  # no writer takes the plan's instant time
        held.wait_for_writes_in_flight("compaction")
        view = table.file_system_view()
        # A file group whose compaction is still pending waits for it, as in Hudi.
        operations = [
            CompactionOperation(s.partition_path, s.file_id, s.base_instant, s.base_file, tuple(s.log_files))
            for s in view.latest_slices()
            if s.log_files and s.base_instant not in view.pending_compactions
        ]
        if not operations:
            return None
        return timeline.request(COMPACTION, instant_time, encode_plan(operations))


@dataclass(frozen=True)
class CompactionTask:
    reader: SliceReader
    instant_time: str
    compression: str = "snappy"
    #: The columns whose ranges the stats row reports (``transaction.metadata_commit.ranged_columns``).
    ranged_columns: tuple[str, ...] = ()
    #: The bloom filter of the new base file's footer (``index.bloom.filter_spec``).
    key_filter: FilterSpec | None = None

    def udf(self):
        def compact(batches):
            for batch in batches:
                rows = [self.compact_one(op) for op in batch.to_pylist()]
                yield pa.RecordBatch.from_pylist(rows, schema=STATS_ARROW_SCHEMA)

        return compact

    def compact_one(self, op: dict) -> dict:
        started = time.monotonic()
        _, token = running_task()
        storage = Storage(self.reader.base_uri)
        merged = self.reader.merge(op["partition_path"], op["base_file"], list(op["log_files"]))
        name = layout.base_file_name(op["file_id"], token, self.instant_time)
        path = layout.join_partition(op["partition_path"], name)
        storage.write(layout.marker_path(self.instant_time, op["partition_path"], name, "CREATE"), b"")
        # Like any base file, the new one names itself in every row's _hoodie_file_name.
        merged = merged.set_column(
            merged.schema.get_field_index(FILE_NAME), FILE_NAME, pa.array([name] * merged.num_rows, pa.string())
        )
        merged = merged.cast(self.reader.arrow_schema)
        with storage.open_output_stream(path) as sink:
            footer = write_with_footer(sink, merged, record_keys_of(merged, self.reader.virtual_keys),
                                       self.key_filter, self.compression)
        size = storage.size(path)
        return WriteStat(
            op["file_id"], op["partition_path"], path, op["base_instant"], num_writes=merged.num_rows,
            total_write_bytes=size, file_size_in_bytes=size, base_file=name, log_files=list(op["log_files"]),
            total_log_files=len(op["log_files"]), total_create_time_ms=int((time.monotonic() - started) * 1000),
            column_stats=ranges_text(name, merged, self.ranged_columns), **footer_filter(footer),
        ).as_row()


def execute(spark: SparkSession, table: HudiTable, instant: Instant) -> CommitMetadata | None:
    """Run a requested compaction (or one whose runner died) and commit it; ``None``: another
    writer ran it meanwhile."""
    operations = read_plan(table, instant)
    try:
        txn = WriteTransaction.resume(spark, table, instant)
    except RunElsewhereError:
        return None
    with txn:
        reader = table.slice_reader(with_meta_columns(table.schema))
        # One task per core, each an equal share of the file groups by their files (``spark_tasks``).
        cores = spark.sparkContext.defaultParallelism
        ordered = spread(operations, lambda op: 1 + len(op.log_files), cores)
        ops = spark.createDataFrame(spark.sparkContext.parallelize(
            [(op.partition_path, op.file_id, op.base_instant, op.base_file, list(op.log_files)) for op in ordered],
            max(1, min(len(operations), cores))),
            "partition_path string, file_id string, base_instant string, base_file string, log_files array<string>",
        )
        task = CompactionTask(reader, instant.timestamp, table.settings.choice(K.COMPRESSION), ranged_columns(table),
                              filter_spec(table))
        rows = ops.mapInArrow(task.udf(), STATS_SCHEMA).collect()
        metadata = CommitMetadata(
            operation_type="COMPACT", schema=to_avro_json(table.schema, table.config.name),
            write_stats=[WriteStat.from_row(r.asDict()) for r in rows], compacted=True,
        )
        # Writes after the plan append to the slice it opens; only a replaced file group conflicts.
        txn.commit(metadata, ConflictRule(actions=(REPLACE_COMMIT,)), KEYS_STAY)
        return metadata


def run(spark: SparkSession, table: HudiTable) -> list[CommitMetadata]:
    """Execute every pending compaction, oldest first."""
    done = [execute(spark, table.refreshed(), i) for i in pending_compactions(table)]
    return [metadata for metadata in done if metadata is not None]


def schedule_and_execute(spark: SparkSession, table: HudiTable) -> CommitMetadata | None:
    instant = schedule(table)
    return execute(spark, table.refreshed(), instant) if instant else None


def describe(table: HudiTable) -> list[tuple[str, int, str]]:
    """Every compaction on the active timeline: (instant, operations planned, state)."""
    timeline = table.timeline
    return [
        (i.timestamp, len(decode_plan(timeline.read_requested(i))), i.state.name)
        for i in timeline.instants
        if i.action == COMPACTION
    ]


OPERATIONS = ("schedule", "run", "scheduleandexecute")


def run_procedure(spark: SparkSession, table: HudiTable, op: str, timestamp: str | None = None) -> list[tuple[str, int, str]]:
    """``CALL run_compaction(op => ..., [timestamp => ...])``: the compactions scheduled or run, as
    ``describe`` rows; ``timestamp``: run that pending compaction only (``RUN COMPACTION ON t AT ...``)."""
    if op not in OPERATIONS:
        raise HudiqlError(f"run_compaction op '{op}' is not valid; use one of {', '.join(OPERATIONS)}")
    if timestamp:
        if op != "run":
            raise HudiqlError(f"run_compaction: timestamp => '{timestamp}' names a pending compaction to run; give "
                              "op => 'run' (a new plan takes its own instant time)")
        pending = {i.timestamp: i for i in pending_compactions(table)}
        if timestamp not in pending:
            raise HudiqlError(f"run_compaction: table {table.config.name} has no pending compaction at {timestamp}; "
                              f"SHOW COMPACTION ON {table.config.name} lists them")
        execute(spark, table.refreshed(), pending[timestamp])
        return [row for row in describe(table.refreshed()) if row[0] == timestamp]
    if op == "schedule":
        instant = schedule(table)
        wanted = {instant.timestamp} if instant else set()
    else:
        if op == "scheduleandexecute":
            schedule(table)
            table = table.refreshed()
        wanted = {i.timestamp for i in pending_compactions(table)}
        run(spark, table)
    return [row for row in describe(table.refreshed()) if row[0] in wanted]


def compact_inline(spark: SparkSession, table: HudiTable) -> list[CommitMetadata]:
    """After a delta commit, with ``hoodie.compact.inline`` (``services.post_commit``): run the
    compactions already planned, oldest first (a plan left by a crash or by ``op => 'schedule'``
    would otherwise stay pending), then plan and run one when the inline trigger fires."""
    done = run(spark, table)
    table = table.refreshed() if done else table
    if is_due(table):
        compacted = schedule_and_execute(spark, table)
        done += [compacted] if compacted else []
    return done
