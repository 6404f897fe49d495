"""Merging a file slice: its base file and the blocks of its log files, by the table's merge rule.

Used by snapshot queries of merge-on-read tables (in Spark tasks, one slice per call) and by
compaction. Blocks of instants that did not complete, and blocks a rollback command block
targets, are skipped.

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
import json
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from hudiql.io import log_format as L
from hudiql.io.storage import Storage
from hudiql.table.layout import join_partition
from hudiql.table.merge import MergeRule
from hudiql.table.schema import RECORD_KEY
from hudiql.write.handle import conform

_DELETED = object()


@dataclass(frozen=True)
class SliceMerger:
    base_uri: str
    arrow_schema: pa.Schema  # meta + data columns
    merge_rule: MergeRule
    completed: frozenset[str]

    def udf(self):
        """The function ``mapInArrow`` calls: slice descriptors in, merged rows out."""

        def merge_slices(batches):
            for batch in batches:
                for d in batch.to_pylist():
                    merged = self.merge(d["partition_path"], d["base_file"], list(d["log_files"] or []))
                    yield from merged.cast(self.arrow_schema).to_batches()

        return merge_slices

    def read_base(self, partition_path: str, base_file: str | None) -> pa.Table:
        if not base_file:
            return self.arrow_schema.empty_table()
        storage = Storage(self.base_uri)
        with storage.open_input_file(join_partition(partition_path, base_file)) as f:
            return conform(pq.read_table(f), self.arrow_schema)

    def read_log_items(self, partition_path: str, log_files: list[str]) -> tuple[list[pa.Table], list[tuple]]:
        """Data tables and the ordered items ``(key, ordering, table index or _DELETED, row)``."""
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
        items: list[tuple] = []
        ordering = self.merge_rule.ordering_field
        for path, block in blocks:
            instant = block.instant_time
            if block.block_type == L.COMMAND or instant not in self.completed or instant in rolled_back:
                continue
            if block.block_type == L.DELETE:
                for d in L.read_deletes(block, path):
                    items.append((d.record_key, d.ordering_value, _DELETED, None))
                continue
            if block.block_type == L.AVRO_DATA:
                table = pa.Table.from_pylist(L.read_avro_records(block, path), schema=self._avro_arrow(block))
            else:
                table = pq.read_table(io.BytesIO(block.content))
            table = conform(table, self.arrow_schema)
            index = len(tables)
            tables.append(table)
            keys = table.column(RECORD_KEY).to_pylist()
            values = table.column(ordering).to_pylist() if ordering else [None] * len(keys)
            items.extend((k, v, index, row) for row, (k, v) in enumerate(zip(keys, values)))
        return tables, items

    def _avro_arrow(self, block: L.LogBlock) -> pa.Schema:
        """The table's Arrow schema restricted to the block's writer columns."""
        names = {f["name"] for f in json.loads(block.header[L.SCHEMA])["fields"]}
        return pa.schema([f for f in self.arrow_schema if f.name in names])

    def merge(self, partition_path: str, base_file: str | None, log_files: list[str]) -> pa.Table:
        base = self.read_base(partition_path, base_file)
        tables, items = self.read_log_items(partition_path, log_files)
        if not items:
            return base
        rule = self.merge_rule
        ordering = rule.ordering_field
        base_keys = base.column(RECORD_KEY).combine_chunks()
        touched = pa.array(list({key for key, *_ in items}), pa.string())
        position = pc.index_in(touched, value_set=base_keys).to_pylist()
        base_order = base.column(ordering).to_pylist() if ordering else None
        # state per key: (source, ordering) where source is ("base", row), (table, row) or _DELETED
        state: dict[str, tuple[object, object]] = {}
        for key, pos in zip(touched.to_pylist(), position):
            if pos is not None:
                state[key] = (("base", pos), base_order[pos] if base_order else None)
        for key, value, index, row in items:
            current = state.get(key)
            if index is _DELETED:
                if current is not None and current[0] is not _DELETED and self._delete_wins(current[1], value):
                    state[key] = (_DELETED, value)
                continue
            if current is None or current[0] is _DELETED and _natural(current[1]) or self._record_wins(current[1], value):
                state[key] = ((index, row), value)
        drop = pc.is_in(base_keys, value_set=touched)
        pieces = [base.filter(pc.invert(drop))]
        keep_base = sorted(src[1] for src, _ in state.values() if src is not _DELETED and src[0] == "base")
        if keep_base:
            pieces.append(base.take(pa.array(keep_base, pa.int64())))
        for index, table in enumerate(tables):
            rows = sorted(src[1] for src, _ in state.values() if src is not _DELETED and src[0] == index)
            if rows:
                pieces.append(table.take(pa.array(rows, pa.int64())))
        return pa.concat_tables(pieces)

    def _record_wins(self, stored: object, incoming: object) -> bool:
        if not self.merge_rule.is_event_time:
            return True
        return stored is None or (incoming is not None and incoming >= stored)

    def _delete_wins(self, stored: object, delete_ordering: object) -> bool:
        if not self.merge_rule.is_event_time or _natural(delete_ordering):
            return True
        return stored is None or delete_ordering >= stored


def _natural(ordering: object) -> bool:
    """Hudi writes deletes without an ordering value as null or the integer 0 ("natural order")."""
    return ordering is None or (type(ordering) is int and ordering == 0)
