"""Merging a file slice: its base file and the blocks of its log files, by the table's merge rule.

The fold of a slice's log items onto its base file gives a ``SliceOutcome``: which base rows
the logs replace or delete (by row position), and the log records that win. Compaction applies
it to the whole base file (``SliceMerger.merge``). A snapshot query folds with the base file's
key and ordering columns, then streams only the columns the query reads, a row group at a
time, without the replaced rows (``SliceMerger.snapshot_batches``). Blocks of instants that did
not commit (``CommittedInstants``), and blocks a rollback command block targets, are skipped; so is
a block a failed write left cut short at the end of a file.

Per record key, log items are folded in log order onto the stored record:
- a data record replaces the current one when the merge rule says the incoming version wins;
- a delete removes it when its ordering value is null or Hudi's "natural order" 0, or when it
  is not lower than the current ordering value (event time); always under commit time.

Example:
    >>> merger = SliceMerger(base_uri, arrow_schema, rule, timeline.committed())
    >>> merger.merge("dt=1", base_file="f-0_0-1-0_001.parquet", log_files=[".f-0_001.log.1_0-2-0"])
    >>> merger.snapshot_batches("dt=1", "f-0_0-1-0_001.parquet", [".f-0_001.log.1_0-2-0"], ["id", "price"])
"""

from __future__ import annotations

import io
import posixpath
from collections.abc import Collection, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from hudiql.errors import RESTORE_FROM_BACKUP, FormatError, damaged_file
from hudiql.io import log_format as L
from hudiql.io.storage import Storage
from hudiql.table.layout import join_partition, parse_data_file_name
from hudiql.table.merge import MergeRule
from hudiql.table.schema import RECORD_KEY
from hudiql.table.timeline import CommittedInstants
from hudiql.write.handle import conform

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
    committed: CommittedInstants

    def udf(self, columns: list[str]):
        """The function ``mapInArrow`` calls for snapshot queries: slice descriptors in
        (partition_path, base_file, log_files), the slices' merged rows out, as ``columns``."""

        def merge_slices(batches):
            for batch in batches:
                for d in batch.to_pylist():
                    yield from self.snapshot_batches(d["partition_path"], d["base_file"], list(d["log_files"] or []), columns)

        return merge_slices

    def snapshot_batches(
        self, partition_path: str, base_file: str | None, log_files: list[str], columns: list[str]
    ) -> Iterator[pa.RecordBatch]:
        """The merged rows of a slice, only ``columns``: the base rows no log record supersedes,
        read a row group at a time, then the log records that win."""
        schema = self._schema(columns)
        ordering = self.merge_rule.ordering_field
        merge_columns = [RECORD_KEY] + ([ordering] if ordering else [])
        with self._open_base(partition_path, base_file) as parquet:
            stored = self._read(parquet, merge_columns)
            outcome = self.outcome(partition_path, stored, log_files, set(columns) | set(merge_columns))
            if parquet is not None:
                keep = np.ones(stored.num_rows, bool)
                keep[outcome.replaced.to_numpy()] = False
                start = 0
                for group in range(parquet.num_row_groups):
                    rows = self._read(parquet, columns, group)
                    yield from rows.filter(keep[start:start + rows.num_rows]).to_batches()
                    start += rows.num_rows
        yield from conform(outcome.records, schema).to_batches()

    def read_base(self, partition_path: str, base_file: str | None, columns: list[str] | None = None) -> pa.Table:
        """The base file's rows in the merger's schema (only ``columns`` of it, when given)."""
        with self._open_base(partition_path, base_file) as parquet:
            return self._read(parquet, columns)

    @contextmanager
    def _open_base(self, partition_path: str, base_file: str | None) -> Iterator[pq.ParquetFile | None]:
        if not base_file:
            yield None
            return
        path = join_partition(partition_path, base_file)
        try:
            with Storage(self.base_uri).open_input_file(path) as f:
                yield pq.ParquetFile(f)
        except (pa.ArrowException, OSError) as exc:  # reading the base file: the log's errors name their file
            raise damaged_file(path, f"cannot be read ({str(exc).splitlines()[0][:200]})") from None

    def _read(self, parquet: pq.ParquetFile | None, columns: list[str] | None, row_group: int | None = None) -> pa.Table:
        """Columns of a base file (all row groups, or one), in the merger's types; a column the
        file lacks (added to the table later) reads as nulls."""
        schema = self._schema(columns)
        if parquet is None:
            return schema.empty_table()
        stored = [c for c in schema.names if c in parquet.schema_arrow.names]
        table = parquet.read(columns=stored) if row_group is None else parquet.read_row_group(row_group, columns=stored)
        return conform(table, schema)

    def _schema(self, columns: Collection[str] | None) -> pa.Schema:
        """The merger's schema, or the part of it named by ``columns`` (in schema order)."""
        return self.arrow_schema if columns is None else pa.schema([f for f in self.arrow_schema if f.name in columns])

    def read_log_items(
        self, partition_path: str, log_files: list[str], columns: Collection[str] | None = None
    ) -> tuple[list[pa.Table], pa.Table, list[tuple]]:
        """The slice's valid log content, in log order (``seq``): the data blocks' tables (only
        ``columns``, which name the key and ordering fields, when given), their records as items
        (key, ordering, seq, table index, row), and the deletes (key, ordering, seq)."""
        schema = self._schema(columns)
        storage = Storage(self.base_uri)
        blocks: list[tuple[str, L.LogBlock]] = []
        cuts: list[tuple[str, L.TruncatedLogError]] = []
        for name in log_files:
            path = join_partition(partition_path, name)
            try:
                file_blocks = L.read_blocks(storage.read(path), storage.uri(path))
            except L.TruncatedLogError as cut:
                file_blocks = cut.blocks
                cuts.append((path, cut))
            except FormatError as exc:
                raise FormatError(f"{exc}; {RESTORE_FROM_BACKUP}") from None
            blocks.extend((path, b) for b in file_blocks)
        rolled_back = {
            b.header.get(L.TARGET_INSTANT_TIME)
            for _, b in blocks
            if b.block_type == L.COMMAND and b.header.get(L.COMMAND_BLOCK_TYPE) == L.ROLLBACK_COMMAND
        }
        for path, cut in cuts:
            if not self._failed_write(path, cut.instant_time, rolled_back):
                raise FormatError(f"{cut}; {RESTORE_FROM_BACKUP}") from None
        tables: list[pa.Table] = []
        items: list[pa.Table] = []
        deletes: list[tuple] = []
        avro: dict[str, list[tuple[int, int, L.LogBlock, str]]] = {}  # writer schema -> (seq, count, block, path)
        seq = 0
        for path, block in blocks:
            instant = block.instant_time
            if block.block_type == L.COMMAND or instant not in self.committed or instant in rolled_back:
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
                try:
                    parquet = pq.ParquetFile(io.BytesIO(block.content))
                    table = parquet.read(columns=[c for c in schema.names if c in parquet.schema_arrow.names])
                except pa.ArrowException as exc:
                    raise damaged_file(path, f"has a corrupt parquet block ({exc})") from None
                self._add_items(tables, items, conform(table, schema), np.arange(seq, seq + table.num_rows, dtype=np.int64))
                seq += table.num_rows
        for group in avro.values():  # blocks of one writer schema are decoded together
            table = L.read_avro_blocks([(block, path) for _, _, block, path in group], self.arrow_schema, columns)
            seqs = np.concatenate([np.arange(first, first + count, dtype=np.int64) for first, count, _, _ in group])
            self._add_items(tables, items, conform(table, schema), seqs)
        return tables, pa.concat_tables(items) if items else self._items_schema().empty_table(), deletes

    def _failed_write(self, path: str, instant_time: str | None, rolled_back: set[str | None]) -> bool:
        """Whether the block cut short at the end of log file ``path`` is a failed write's partial
        append, which Hudi's readers skip, rather than damage to committed data: its instant did
        not commit or was rolled back; or its header is cut before the instant and the file sits on
        an archived slice, where the view opens logs no delta commit on the timeline lists (a v6
        log names its slice; ``FileSystemView``)."""
        if instant_time is not None:
            return instant_time not in self.committed or instant_time in rolled_back
        parsed = parse_data_file_name(posixpath.basename(path))
        return parsed is not None and self.committed.archived(parsed.instant_time)

    def _add_items(self, tables: list[pa.Table], items: list[pa.Table], table: pa.Table, seqs: np.ndarray) -> None:
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

    def outcome(
        self, partition_path: str, base: pa.Table, log_files: list[str], columns: Collection[str] | None = None
    ) -> SliceOutcome:
        """Fold the slice's log items onto ``base`` (which needs only its key and ordering columns);
        the winning records carry ``columns`` (all by default; they must name the key and
        ordering fields).

        Keys without deletes take the closed form of the fold (``_fold_records``); keys with a
        delete are folded one item at a time (``_fold_sequence``).
        """
        tables, items, deletes = self.read_log_items(partition_path, log_files, columns)
        if not items.num_rows and not deletes:
            return SliceOutcome(pa.array([], pa.int64()), self._schema(columns).empty_table())
        delete_keys = pa.array(sorted({key for key, _, _ in deletes}), pa.string())
        with_delete = pc.is_in(items.column("key"), value_set=delete_keys)
        stored = _StoredKeys(base.column(RECORD_KEY), pa.concat_arrays([items.column("key").combine_chunks(), delete_keys]))
        kept, winners = self._fold_records(items.filter(pc.invert(with_delete)), base, stored)
        slow_kept, slow_winners = self._fold_sequence(items.filter(with_delete), deletes, base, stored)
        kept = pa.concat_arrays([kept, slow_kept])
        winners = pa.concat_tables([winners, slow_winners])
        # Every stored row of a touched key is superseded, unless the stored version won.
        replaced = stored.rows.filter(pc.invert(pc.is_in(stored.rows, value_set=kept)))
        pieces = []
        for index, table in enumerate(tables):
            rows = winners.filter(pc.equal(winners.column("src"), index)).column("row").to_numpy()
            if len(rows):
                pieces.append(table.take(pa.array(np.sort(rows))))
        records = pa.concat_tables(pieces) if pieces else self._schema(columns).empty_table()
        return SliceOutcome(replaced, records)

    def _fold_records(self, items: pa.Table, base: pa.Table, stored: _StoredKeys) -> tuple[pa.Array, pa.Table]:
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
        position = stored.positions(latest.column("key").combine_chunks())
        if event_time:
            current = base.column(self.merge_rule.ordering_field).take(position)
            wins = self.merge_rule.incoming_wins(current.combine_chunks(), latest.column("ordering").combine_chunks())
        else:
            wins = pa.array(np.ones(latest.num_rows, bool))
        kept = position.filter(pc.invert(wins)).cast(pa.int64())
        kept = kept.combine_chunks() if isinstance(kept, pa.ChunkedArray) else kept
        return kept, latest.filter(wins).select(["src", "row"])

    def _fold_sequence(
        self, items: pa.Table, deletes: list[tuple], base: pa.Table, stored: _StoredKeys
    ) -> tuple[pa.Array, pa.Table]:
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
        position = stored.positions(touched).to_pylist()
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


class _StoredKeys:
    """Where a slice's touched keys (those of its log items) sit in its base file. The base
    file's many keys are probed once against the few touched ones."""

    def __init__(self, base_keys: pa.ChunkedArray, touched: pa.Array) -> None:
        self.touched = pc.unique(touched)
        match = pc.fill_null(pc.index_in(base_keys, value_set=self.touched), -1).to_numpy()
        rows = np.flatnonzero(match >= 0)
        self.rows = pa.array(rows, pa.int64())  # every base row of a touched key
        found, first = np.unique(match[rows], return_index=True)
        self._first = np.full(len(self.touched), -1, np.int64)
        self._first[found] = rows[first]

    def positions(self, keys: pa.Array) -> pa.Array:
        """For each of ``keys`` (touched keys), its first base row (null when not stored)."""
        out = self._first[pc.index_in(keys, value_set=self.touched).to_numpy()]
        return pa.array(out, mask=out < 0)


def _natural(ordering: object) -> bool:
    """Hudi writes deletes without an ordering value as null or the integer 0 ("natural order")."""
    return ordering is None or (type(ordering) is int and ordering == 0)
