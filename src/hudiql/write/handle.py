"""Copy-on-write file group handle: runs inside a Spark task, owns one file group.

It reads the group's current base file (if any), merges the incoming records by the table's
merge rule, writes the new base file with pyarrow and returns one row of write stats.
Only stats leave the task.

Incoming batches carry the table's data columns plus the helper columns below.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from hudiql import layout
from hudiql.formats.bloom_filter import footer_filter, write_with_footer
from hudiql.io.storage import Storage
from hudiql.metadata.column_stats import ranges_text
from hudiql.record.keygen import record_keys_of
from hudiql.record.merge import MergeRule
from hudiql.record.schema import (
    IS_DELETED,
    META_COLUMNS,
    PARTITION_PATH,
    RECORD_KEY,
    column_values,
    conform,
)
from hudiql.timeline.commit import STATS_ARROW_SCHEMA, WriteStat
from hudiql.write.create_handle import NewBaseFiles, new_record_meta, running_task, with_generated_keys

# Helper columns the driver adds to incoming records; never stored.
FILE_ID = "__hudiql_file_id"
SEQUENCE = "__hudiql_seq"
DELETE = "__hudiql_delete"  # set by MERGE / DELETE: the row deletes its key
NEW_KEY = "__hudiql_new_key"  # MOR: a new key that bucket assignment placed in an existing small file group

class LogAppender(Protocol):
    """What appends a file group's rows as a log file (``append_handle.AppendTask``)."""

    #: The file groups (partition path, file id) it can append to.
    targets: Mapping[tuple[str, str], object]

    def write_group(self, rows: pa.Table) -> dict: ...


@dataclass(frozen=True)
class MergeTask:
    """Everything a task needs to write file groups of one commit (pickled to the executors)."""

    files: NewBaseFiles  # how its new base files are written
    merge_rule: MergeRule
    #: Per (partition path, file id): the base file of its latest slice (file ids repeat across
    #: partitions: the fixed bucket ids of non-blocking concurrency control).
    base_files: dict[tuple[str, str], str]
    concat: bool  # insert / bulk_insert: keep duplicates instead of merging by key
    generate_keys: bool  # table without a record key: keys of new rows are made here
    # Merge-on-read: the rows of a file group that takes logs and receives no insert (a small
    # file group chosen to take inserts that receives none, as the write planned from a bound on
    # its inserts; every group of a small write, whose appends share this task) are appended as
    # a log with this.
    append: LogAppender | None = None
    #: An insert merged into stored rows (``Operation.merges_into_stored``): of the incoming rows of
    #: one key, the later is kept, as Hudi's merge handle keeps the last it is given.
    combines_incoming: bool = False

    def udf(self):
        """The function ``applyInArrow`` calls once per file group (a plain one-argument function,
        as pyspark inspects its signature)."""

        def write_group(batch: pa.Table) -> pa.Table:
            return pa.Table.from_pylist([self.write_file_group(batch)], schema=STATS_ARROW_SCHEMA)

        return write_group

    def write_file_group(self, incoming: pa.Table) -> dict:
        started = time.monotonic()
        partition_id, token = running_task()
        storage = Storage(self.files.base_uri)
        file_id = incoming.column(FILE_ID)[0].as_py()
        partition_path = incoming.column(PARTITION_PATH)[0].as_py()
        old_base = self.base_files.get((partition_path, file_id))
        if (self.append is not None and (partition_path, file_id) in self.append.targets
                and not pc.any(flag(incoming, NEW_KEY)).as_py()):
            return self.append.write_group(incoming)
        new_name = layout.base_file_name(file_id, token, self.files.instant_time)
        new_path = layout.join_partition(partition_path, new_name)
        storage.write(layout.marker_path(self.files.instant_time, partition_path, new_name,
                                         "MERGE" if old_base else "CREATE"), b"")

        incoming = incoming.sort_by(SEQUENCE)
        data_schema = pa.schema([f for f in self.files.arrow_schema if f.name not in META_COLUMNS])
        if self.generate_keys:  # (a stored row a statement changes keeps its key)
            incoming = with_generated_keys(incoming, self.files.instant_time)
        deletes = _is_deleted(incoming)
        new_rows = conform(incoming, data_schema, extra=[RECORD_KEY])
        old = None
        prev_commit = "null"
        if old_base:
            prev_commit = layout.parse_data_file_name(old_base).instant_time
            with storage.open_input_file(layout.join_partition(partition_path, old_base)) as f:
                old = pq.read_table(f)
            old = conform(old, self.files.arrow_schema)

        counts = {"updates": 0, "deletes": 0, "skipped": 0}
        if old is None or self.concat:
            kept, updates, inserts = old, new_rows.slice(0, 0), new_rows.filter(pc.invert(deletes))
        else:
            if self.combines_incoming:
                new_rows, deletes = _later_of_each_key(new_rows, deletes)
            kept, updates, inserts = self._merge(old, new_rows, deletes, counts)
        written = new_record_meta(pa.concat_tables([updates, inserts]), self.files, partition_path, new_name, partition_id)
        written = written.cast(self.files.arrow_schema)
        out = written if kept is None else pa.concat_tables([kept, written])
        counts["inserts"] = inserts.num_rows
        with storage.open_output_stream(new_path) as sink:
            footer = write_with_footer(sink, out, record_keys_of(out, self.files.virtual_keys), self.files.key_filter,
                                       self.files.compression)
        size = storage.size(new_path)
        elapsed = int((time.monotonic() - started) * 1000)
        return WriteStat(
            file_id, partition_path, new_path, prev_commit, num_writes=out.num_rows, num_deletes=counts["deletes"],
            num_update_writes=counts["updates"], num_inserts=counts["inserts"], num_skipped_older=counts["skipped"],
            total_write_bytes=size, file_size_in_bytes=size, base_file=new_name,
            total_upsert_time_ms=elapsed if old_base else 0, total_create_time_ms=0 if old_base else elapsed,
            column_stats=ranges_text(new_name, out, self.files.ranged_columns), **footer_filter(footer),
        ).as_row()

    def _merge(self, old: pa.Table, new: pa.Table, deletes: pa.Array, counts: dict) -> tuple[pa.Table, pa.Table, pa.Table]:
        """Split into (stored rows kept, incoming rows that replace stored ones, new inserts)."""
        old_keys = record_keys_of(old, self.files.virtual_keys)
        new_keys = new.column(RECORD_KEY).combine_chunks()
        old_match = pc.index_in(old_keys, value_set=new_keys)  # position of the update, per stored row
        new_match = pc.is_in(new_keys, value_set=old_keys)
        matched_old = pc.is_valid(old_match)
        update_pos = pc.drop_null(old_match)
        ordering = self.merge_rule.ordering_field if self.merge_rule.is_event_time else None
        wins = self.merge_rule.incoming_wins(
            column_values(old.filter(matched_old), ordering).combine_chunks() if ordering else None,
            column_values(new.take(update_pos), ordering).combine_chunks() if ordering else pa.array([None] * len(update_pos)),
        )
        win_deletes = pc.and_(wins, deletes.take(update_pos))
        counts["skipped"] = int(pc.sum(pc.invert(wins)).as_py() or 0)
        counts["deletes"] = int(pc.sum(win_deletes).as_py() or 0)
        counts["updates"] = len(wins) - counts["skipped"] - counts["deletes"]
        # A stored row survives unless an incoming version wins over it.
        lose = np.zeros(old.num_rows, dtype=bool)
        lose[np.flatnonzero(matched_old.to_numpy(zero_copy_only=False))[wins.to_numpy(zero_copy_only=False)]] = True
        kept = old.filter(pa.array(~lose))
        updates = new.take(update_pos).filter(pc.and_(wins, pc.invert(win_deletes)))
        inserts = new.filter(pc.and_(pc.invert(new_match), pc.invert(deletes)))
        return kept, updates, inserts


def _later_of_each_key(rows: pa.Table, deletes: pa.Array) -> tuple[pa.Table, pa.Array]:
    """``rows`` (in input order) and their delete flags, with only the last row of each key."""
    n = rows.num_rows
    backwards = rows.column(RECORD_KEY).combine_chunks().take(pa.array(np.arange(n - 1, -1, -1)))
    # Each key's first position counted from the end is its last row.
    firsts = pc.unique(pc.index_in(backwards, value_set=backwards)).to_numpy()
    positions = pa.array(np.sort(n - 1 - firsts))
    return rows.take(positions), deletes.take(positions)


def flag(rows: pa.Table, name: str) -> pa.Array:
    """A boolean column as a non-null array (all false when the column is absent)."""
    if name in rows.column_names:
        return pc.fill_null(rows.column(name).combine_chunks(), False)
    return pa.array([False] * rows.num_rows, pa.bool_())


def _is_deleted(incoming: pa.Table) -> pa.Array:
    """Rows that delete their key: a DML delete, or ``_hoodie_is_deleted = true``."""
    return pc.or_(flag(incoming, DELETE), flag(incoming, IS_DELETED))

