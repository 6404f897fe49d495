"""Merging a file slice: its base file and the blocks of its log files, by the table's merge rule.

The fold of a slice's log items onto its base file gives a ``SliceOutcome``: which base rows
the logs replace or delete (by row position), and the log records that win. Compaction applies
it to the whole base file in a task (``SliceMerger.merge``); snapshot queries read only the
base file's key and ordering columns in Python and leave the base rows to Spark's parquet
reader, which drops the replaced positions with a join (``read.snapshot``). Blocks of instants
that did not complete, and blocks a rollback command block targets, are skipped.

Per record key, log items are folded in log order onto the stored record:
- a data record replaces the current one when the merge rule says the incoming version wins;
- a delete removes it when its ordering value is null or Hudi's "natural order" 0, or when it
  is not lower than the current ordering value (event time); always under commit time.

Example:
    >>> merger = SliceMerger(base_uri, arrow_schema, rule, frozenset(completed_instants))
    >>> merger.merge("dt=1", base_file="f-0_0-1-0_001.parquet", log_files=[".f-0_001.log.1_0-2-0"])
"""

from __future__ import annotations

import io
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from hudiql.io import log_format as L
from hudiql.io.storage import Storage
from hudiql.table.layout import join_partition
from hudiql.table.merge import MergeRule
from hudiql.table.schema import RECORD_KEY
from hudiql.write.handle import conform

# Extra columns of the snapshot merge output: a row with these set (and no record) says
# "drop row ROW_INDEX of the base file named BASE_FILE_NAME, of BASE_FILE_SIZE bytes".
BASE_FILE_NAME = "__hudiql_base_file"
BASE_FILE_SIZE = "__hudiql_base_file_size"
ROW_INDEX = "__hudiql_row_index"

_DELETED = object()


@dataclass(frozen=True)
class SliceOutcome:
    """What a slice's logs do to its base file."""

    replaced: pa.Array  # int64 positions of base rows that a log record or delete supersedes
    records: pa.Table  # the log records that win, in the merger's schema


@dataclass(frozen=True)
class SliceMerger:
    base_uri: str
    arrow_schema: pa.Schema  # meta + data columns
    merge_rule: MergeRule
    completed: frozenset[str]

    def udf(self):
        """The function ``mapInArrow`` calls for snapshot queries: slice descriptors in; the
        winning log records and the replaced base positions out (see ``output_schema``)."""
        schema = self.output_schema()

        def merge_slices(batches):
            for batch in batches:
                for d in batch.to_pylist():
                    yield from self._snapshot_batches(
                        d["partition_path"], d["base_file"], d["base_file_size"], list(d["log_files"] or []), schema
                    )

        return merge_slices

    def output_schema(self) -> pa.Schema:
        extra = [pa.field(BASE_FILE_NAME, pa.string()), pa.field(BASE_FILE_SIZE, pa.int64()), pa.field(ROW_INDEX, pa.int64())]
        return pa.schema(list(self.arrow_schema) + extra)

    def _snapshot_batches(
        self, partition_path: str, base_file: str | None, base_file_size: int, log_files: list[str], schema: pa.Schema
    ):
        ordering = self.merge_rule.ordering_field
        base = self.read_base(partition_path, base_file, [RECORD_KEY] + ([ordering] if ordering else []))
        outcome = self.outcome(partition_path, base, log_files)
        n = outcome.records.num_rows
        if n:
            records = outcome.records.cast(self.arrow_schema)
            for name in (BASE_FILE_NAME, BASE_FILE_SIZE, ROW_INDEX):
                records = records.append_column(schema.field(name), pa.nulls(n, schema.field(name).type))
            yield from records.to_batches()
        m = len(outcome.replaced)
        if m:
            columns = [pa.nulls(m, f.type) for f in self.arrow_schema]
            columns += [pa.array([base_file] * m, pa.string()), pa.array([base_file_size] * m, pa.int64()), outcome.replaced]
            yield pa.RecordBatch.from_arrays(columns, schema=schema)

    def read_base(self, partition_path: str, base_file: str | None, columns: list[str] | None = None) -> pa.Table:
        """The base file's rows in the merger's schema (only ``columns`` of it, when given)."""
        schema = self.arrow_schema if columns is None else pa.schema([self.arrow_schema.field(c) for c in columns])
        if not base_file:
            return schema.empty_table()
        storage = Storage(self.base_uri)
        with storage.open_input_file(join_partition(partition_path, base_file)) as f:
            parquet = pq.ParquetFile(f)
            stored = [c for c in schema.names if c in parquet.schema_arrow.names]
            return conform(parquet.read(columns=stored), schema)

    def read_log_items(self, partition_path: str, log_files: list[str]) -> tuple[list[pa.Table], pa.Table, list[tuple]]:
        """The slice's valid log content, in log order (``seq``): the data blocks' tables, their
        records as items (key, ordering, seq, table index, row), and the deletes (key, ordering, seq)."""
        storage = Storage(self.base_uri)
        blocks: list[tuple[str, L.LogBlock]] = []
        for name in log_files:
            path = join_partition(partition_path, name)
            blocks.extend((path, b) for b in L.read_blocks(storage.read(path), storage.uri(path)))
        rolled_back = {
            b.header.get(L.TARGET_INSTANT_TIME)
            for _, b in blocks
            if b.block_type == L.COMMAND and b.header.get(L.COMMAND_BLOCK_TYPE) == L.ROLLBACK_COMMAND
        }
        tables: list[pa.Table] = []
        items: list[pa.Table] = []
        deletes: list[tuple] = []
        avro: dict[str, list[tuple[int, int, L.LogBlock, str]]] = {}  # writer schema -> (seq, count, block, path)
        seq = 0
        for path, block in blocks:
            instant = block.instant_time
            if block.block_type == L.COMMAND or instant not in self.completed or instant in rolled_back:
                continue
            if block.block_type == L.DELETE:
                for d in L.read_deletes(block, path):
                    deletes.append((d.record_key, d.ordering_value, seq))
                    seq += 1
            elif block.block_type == L.AVRO_DATA:
                count = L.avro_record_count(block, path)
                avro.setdefault(block.header[L.SCHEMA], []).append((seq, count, block, path))
                seq += count
            else:
                table = pq.read_table(io.BytesIO(block.content))
                self._add_items(tables, items, table, np.arange(seq, seq + table.num_rows, dtype=np.int64))
                seq += table.num_rows
        for group in avro.values():  # blocks of one writer schema are decoded together
            table = L.read_avro_blocks([(block, path) for _, _, block, path in group], self.arrow_schema)
            seqs = np.concatenate([np.arange(first, first + count, dtype=np.int64) for first, count, _, _ in group])
            self._add_items(tables, items, table, seqs)
        return tables, pa.concat_tables(items) if items else self._items_schema().empty_table(), deletes

    def _add_items(self, tables: list[pa.Table], items: list[pa.Table], table: pa.Table, seqs: np.ndarray) -> None:
        table = conform(table, self.arrow_schema)
        n = table.num_rows
        columns = {
            "key": table.column(RECORD_KEY),
            "seq": pa.array(seqs),
            "src": pa.array(np.full(n, len(tables), dtype=np.int64)),
            "row": pa.array(np.arange(n, dtype=np.int64)),
        }
        if self.merge_rule.ordering_field:
            columns["ordering"] = table.column(self.merge_rule.ordering_field)
        items.append(pa.table(columns))
        tables.append(table)

    def _items_schema(self) -> pa.Schema:
        schema = pa.schema([("key", pa.string()), ("seq", pa.int64()), ("src", pa.int64()), ("row", pa.int64())])
        ordering = self.merge_rule.ordering_field
        return schema.append(self.arrow_schema.field(ordering).with_name("ordering")) if ordering else schema

    def merge(self, partition_path: str, base_file: str | None, log_files: list[str]) -> pa.Table:
        """The merged rows of a slice (compaction)."""
        base = self.read_base(partition_path, base_file)
        outcome = self.outcome(partition_path, base, log_files)
        if not len(outcome.replaced) and not outcome.records.num_rows:
            return base
        keep = np.ones(base.num_rows, bool)
        keep[outcome.replaced.to_numpy()] = False
        return pa.concat_tables([base.filter(pa.array(keep)), outcome.records])

    def outcome(self, partition_path: str, base: pa.Table, log_files: list[str]) -> SliceOutcome:
        """Fold the slice's log items onto ``base`` (which needs only its key and ordering columns).

        Keys without deletes take the closed form of the fold (``_fold_records``); keys with a
        delete are folded one item at a time (``_fold_sequence``).
        """
        tables, items, deletes = self.read_log_items(partition_path, log_files)
        if not items.num_rows and not deletes:
            return SliceOutcome(pa.array([], pa.int64()), self.arrow_schema.empty_table())
        delete_keys = pa.array(sorted({key for key, _, _ in deletes}), pa.string())
        with_delete = pc.is_in(items.column("key"), value_set=delete_keys)
        kept, winners = self._fold_records(items.filter(pc.invert(with_delete)), base)
        slow_kept, slow_winners = self._fold_sequence(items.filter(with_delete), deletes, base)
        kept = pa.concat_arrays([kept, slow_kept])
        winners = pa.concat_tables([winners, slow_winners])
        # Every stored row of a touched key is superseded, unless the stored version won.
        touched = pa.concat_arrays([items.column("key").combine_chunks(), delete_keys])
        stored = pc.indices_nonzero(pc.is_in(base.column(RECORD_KEY), value_set=touched)).cast(pa.int64())
        replaced = stored.filter(pc.invert(pc.is_in(stored, value_set=kept)))
        pieces = []
        for index, table in enumerate(tables):
            rows = winners.filter(pc.equal(winners.column("src"), index)).column("row").to_numpy()
            if len(rows):
                pieces.append(table.take(pa.array(np.sort(rows))))
        records = pa.concat_tables(pieces) if pieces else self.arrow_schema.empty_table()
        return SliceOutcome(replaced, records)

    def _fold_records(self, items: pa.Table, base: pa.Table) -> tuple[pa.Array, pa.Table]:
        """The fold for keys with data records only: the latest-ranked record of each key (by
        ordering value, nulls lowest, then log order; by log order alone under commit time)
        replaces the stored version when the merge rule lets it.
        Returns (base positions whose stored version won, winning (src, row) items)."""
        event_time = self.merge_rule.is_event_time
        sort_keys = [("key", "ascending")] + ([("ordering", "ascending", "at_start")] if event_time else [])
        ranked = items.take(pc.sort_indices(items, sort_keys=[*sort_keys, ("seq", "ascending")]))
        keys = ranked.column("key").combine_chunks()
        if not len(keys):
            return pa.array([], pa.int64()), items.select(["src", "row"])
        last = pa.concat_arrays([pc.not_equal(keys.slice(0, len(keys) - 1), keys.slice(1)), pa.array([True])])
        latest = ranked.filter(last)
        position = _positions(base.column(RECORD_KEY), latest.column("key").combine_chunks())
        if event_time:
            stored = base.column(self.merge_rule.ordering_field).take(position)
            wins = self.merge_rule.incoming_wins(stored.combine_chunks(), latest.column("ordering").combine_chunks())
        else:
            wins = pa.array(np.ones(latest.num_rows, bool))
        kept = position.filter(pc.invert(wins)).cast(pa.int64())
        kept = kept.combine_chunks() if isinstance(kept, pa.ChunkedArray) else kept
        return kept, latest.filter(wins).select(["src", "row"])

    def _fold_sequence(self, items: pa.Table, deletes: list[tuple], base: pa.Table) -> tuple[pa.Array, pa.Table]:
        """The fold, item by item, for keys that have a delete; returns as ``_fold_records``."""
        empty = (pa.array([], pa.int64()), pa.table({"src": pa.array([], pa.int64()), "row": pa.array([], pa.int64())}))
        if not deletes:
            return empty
        ordering = self.merge_rule.ordering_field
        sequence = [
            (d["seq"], d["key"], d["ordering"] if ordering else None, (d["src"], d["row"])) for d in items.to_pylist()
        ]
        sequence += [(seq, key, value, _DELETED) for key, value, seq in deletes]
        sequence.sort(key=lambda item: item[0])
        touched = pa.array(sorted({key for _, key, _, _ in sequence}), pa.string())
        position = _positions(base.column(RECORD_KEY), touched).to_pylist()
        # state per key: (source, ordering) where source is ("base", row), (src, row) or _DELETED
        state: dict[str, tuple[object, object]] = {}
        for key, pos in zip(touched.to_pylist(), position):
            if pos is not None:
                state[key] = (("base", pos), base.column(ordering)[pos].as_py() if ordering else None)
        for _, key, value, source in sequence:
            current = state.get(key)
            if source is _DELETED:
                if current is not None and current[0] is not _DELETED and self._delete_wins(current[1], value):
                    state[key] = (_DELETED, value)
                continue
            if current is None or current[0] is _DELETED and _natural(current[1]) or self._record_wins(current[1], value):
                state[key] = (source, value)
        live = [src for src, _ in state.values() if src is not _DELETED]
        kept = pa.array([row for origin, row in live if origin == "base"], pa.int64())
        logged = [(origin, row) for origin, row in live if origin != "base"]
        return kept, pa.table({"src": pa.array([o for o, _ in logged], pa.int64()), "row": pa.array([r for _, r in logged], pa.int64())})

    def _record_wins(self, stored: object, incoming: object) -> bool:
        if not self.merge_rule.is_event_time:
            return True
        return stored is None or (incoming is not None and incoming >= stored)

    def _delete_wins(self, stored: object, delete_ordering: object) -> bool:
        if not self.merge_rule.is_event_time or _natural(delete_ordering):
            return True
        return stored is None or delete_ordering >= stored


def _positions(stored: pa.ChunkedArray, keys: pa.Array) -> pa.Array:
    """For each of ``keys``, its first position in ``stored`` (null when absent). Only the few
    keys are hashed; the base file's many keys are probed against them."""
    match = pc.fill_null(pc.index_in(stored, value_set=keys), -1).to_numpy()
    rows = np.flatnonzero(match >= 0)
    found, first = np.unique(match[rows], return_index=True)
    out = np.full(len(keys), -1, np.int64)
    out[found] = rows[first]
    return pa.array(out, mask=out < 0)


def _natural(ordering: object) -> bool:
    """Hudi writes deletes without an ordering value as null or the integer 0 ("natural order")."""
    return ordering is None or (type(ordering) is int and ordering == 0)
