"""The ``hudi`` Python data source: what Spark calls, and where.

Spark runs ``schema()``, ``reader()`` and ``partitions()`` in a Python worker on the driver:
there ``ReadPlan`` reads metadata only (the timeline, the file listing) and describes each
input partition by its file slices. ``read()`` runs in the executors: a slice's rows come from
``SliceReader.snapshot_batches`` (its base file merged with its logs by the table's merge rule,
the same code as the merged reads of SQL queries) as Arrow batches. Which slices, which log
blocks and which commit times a read covers is decided by the read layer
(``read.time_travel``, ``read.incremental``); this module only maps it onto Spark's interface.

Writes: ``writer()`` checks the write on the driver, ``write()`` stages each task's rows, and
``commit()`` hands them to the hudiql session that registered the data source, which writes them
as one commit with Spark (``datasource.writer``).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import types as T
from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceWriter,
    InputPartition,
)

from hudiql.config import registry
from hudiql.datasource.callback import Callback
from hudiql.datasource.options import (
    INCREMENTAL,
    READ_OPTIMIZED,
    ReadOptions,
    read_options,
    write_options,
)
from hudiql.datasource.writer import HudiWriter
from hudiql.errors import SqlError, warn
from hudiql.file_group import FileSlice
from hudiql.read.incremental import (
    ChangeRange,
    change_range,
    file_groups_written,
    unreadable_reason,
)
from hudiql.read.time_travel import table_as_of
from hudiql.record.schema import COMMIT_TIME
from hudiql.table.table import HudiTable

NAME = "hudi"
#: Slices are grouped into input partitions of about this many bytes (base file plus logs).
PARTITION_BYTES = 128 * 1024 * 1024


@dataclass(frozen=True)
class ReadPlan:
    """What one read covers: the table version whose columns it returns, its slices, and for an
    incremental read the commit-time range of the rows it keeps."""

    table: HudiTable
    slices: list[FileSlice]
    read_optimized: bool = False
    span: ChangeRange | None = None
    #: Set for an incremental read whose unchanged base files are read for the merge only.
    changed_after: str | None = None

    @classmethod
    def of(cls, options: ReadOptions) -> ReadPlan:
        table = HudiTable.load(options.path)
        if options.query_type == INCREMENTAL:
            return cls._changes(table, options)
        if options.as_of:
            table = table_as_of(table, options.as_of)
        return cls(table, table.file_system_view().read_slices(), options.query_type == READ_OPTIMIZED)

    @classmethod
    def _changes(cls, table: HudiTable, options: ReadOptions) -> ReadPlan:
        """The slices an incremental read needs, as ``read.incremental.changes`` chooses them."""
        span = change_range(table, options.begin, options.end or None)
        problem = unreadable_reason(table, span, False)
        if problem is not None:
            if not options.fallback:
                raise SqlError(f"incremental read of table {table.config.name} after {span.begin or 'earliest'} up to "
                               f"{span.end}: {problem}; begin later, or .option('{registry.INCREMENTAL_FALLBACK}', 'true') "
                               "to compute it from a full scan")
            warn(f"incremental read of table {table.config.name}: {problem}; computed from a full scan of the latest snapshot")
            return cls(table, table.file_system_view().read_slices(), span=span)
        end_table = table.as_of(span.end)
        slices = end_table.file_system_view().read_slices()
        if span.begin:
            written, _ = file_groups_written(table, span)
            slices = [s for s in slices if (s.partition_path, s.file_id) in written
                      and (s.log_files or s.base_instant > span.begin)]
        return cls(end_table, slices, span=span, changed_after=span.begin or None)

    @property
    def schema(self) -> T.StructType:
        return self.table.columns

    def partitions(self) -> list[InputPartition]:
        """The slices as (partition path, base file, log files), in input partitions of about
        ``PARTITION_BYTES``, largest slices first."""
        parts: list[list[tuple]] = []
        size = PARTITION_BYTES
        for s in sorted(self.slices, key=lambda s: -(s.base_file_size + s.log_size)):
            if self.read_optimized and not s.base_file:
                continue  # a slice a pending compaction opened, with logs only
            logs = [] if self.read_optimized else list(s.log_files)
            weight = s.base_file_size + (0 if self.read_optimized else s.log_size)
            if size + weight > PARTITION_BYTES:
                parts.append([])
                size = 0
            parts[-1].append((s.partition_path, s.base_file, logs))
            size += weight
        return [InputPartition(p) for p in parts]


class HudiDataSource(DataSource):
    """``spark.read.format("hudi").load(path)``: a Hudi table's snapshot (or read-optimized,
    incremental, time-travel read, by option); ``df.write.format("hudi").save(path)``: a write
    through the hudiql session whose ``callback`` a subclass carries (``hudiql.datasource.register``)."""

    #: How the writer reaches the session that writes (``None``: registered without one, no writes).
    callback: Callback | None = None

    @classmethod
    def name(cls) -> str:
        return NAME

    def schema(self) -> T.StructType:
        return ReadPlan.of(read_options(self.options)).schema

    def reader(self, schema: T.StructType) -> DataSourceReader:
        return HudiReader(ReadPlan.of(read_options(self.options)))

    def writer(self, schema: T.StructType, overwrite: bool) -> DataSourceWriter:
        # Runs in a Python worker on the driver: checks the write (metadata only); the tasks stage
        # the rows and the session that registered this data source writes them (``writer``).
        if self.callback is None:
            raise SqlError(
                'df.write.format("hudi") writes through a hudiql session: register the data source with '
                "hudiql.connect(spark=spark) (not hudiql.datasource.register(spark) alone)"
            )
        return HudiWriter.start(write_options(self.options, overwrite), schema, self.callback)


class HudiReader(DataSourceReader):
    """Plans on the driver (``partitions``), reads in the executors (``read``)."""

    def __init__(self, plan: ReadPlan) -> None:
        table = plan.table
        self.plan = plan
        self.columns = plan.schema.fieldNames()
        self.slice_reader = table.slice_reader(plan.schema)
        self.span = plan.span
        self.changed_after = plan.changed_after

    def partitions(self) -> list[InputPartition]:
        return self.plan.partitions()

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        for partition_path, base_file, log_files in partition.value or ():
            batches = self.slice_reader.snapshot_batches(partition_path, base_file, log_files, self.columns, self.changed_after)
            for batch in batches:
                if self.span is not None:
                    commit_time = batch.column(COMMIT_TIME)
                    batch = batch.filter(pc.and_(pc.greater(commit_time, self.span.begin),
                                                 pc.less_equal(commit_time, self.span.end)))
                if batch.num_rows:
                    yield batch

    def __getstate__(self) -> dict:
        # The executors need the slice reader and the range, not the plan's table and listing.
        return {**self.__dict__, "plan": None}
