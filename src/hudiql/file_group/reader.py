"""Reading a file slice: its base file merged with what its log files say, by the table's merge rule.

The log scanner (``file_group.log_file.scanner``) gives the slice's valid log content; its fold
onto the base file gives a ``SliceOutcome``: which base rows the logs replace or delete (by row
position), and the log records that win. Compaction applies it to the whole base file
(``SliceReader.merge``). A snapshot query folds with the base file's key and ordering columns,
then streams only the columns the query reads, a row group at a time, without the replaced rows
(``SliceReader.snapshot_batches``).

Per record key, log items are folded in log order onto the stored record:
- a data record replaces the current one when the merge rule says the incoming version wins;
- a delete removes it when its ordering value is null or Hudi's "natural order" 0, or when it
  is not lower than the current ordering value (event time); always under commit time.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from hudiql.errors import unreadable_file
from hudiql.file_group.log_file.scanner import LogContent, LogScanner
from hudiql.io.storage import Storage
from hudiql.layout import join_partition, parse_data_file_name
from hudiql.record.keygen import KeyGenerator, record_keys_of
from hudiql.record.merge import MergeRule, natural_order
from hudiql.record.schema import column_values, conform, field_root, select_fields
from hudiql.timeline.active import CommittedInstants

_DELETED = object()


@dataclass(frozen=True)
class SliceOutcome:
    """What a slice's logs do to its base file."""

    replaced: pa.Array  # int64 positions of base rows that a log record or delete supersedes
    records: pa.Table  # the log records that win, in the reader's schema


@dataclass(frozen=True)
class SliceReader:
    base_uri: str
    arrow_schema: pa.Schema  # meta + data columns
    merge_rule: MergeRule
    committed: CommittedInstants
    #: A table without meta fields: stored rows' keys are derived from their key columns by this.
    virtual_keys: KeyGenerator | None = None

    def udf(self, columns: list[str], changed_after: str | None = None, file_id_column: str | None = None,
            keys: Collection[str] | None = None):
        """The function ``mapInArrow`` calls for snapshot queries: slice descriptors in
        (partition_path, base_file, log_files), the slices' merged rows out, as ``columns``;
        with ``changed_after``, only rows that may have been written after that instant; with
        ``file_id_column``, that column too, holding the slice's file id; with ``keys``, only the
        rows of those record keys."""

        def merge_slices(batches):
            for batch in batches:
                for d in batch.to_pylist():
                    logs = list(d["log_files"] or [])
                    rows = self.snapshot_batches(d["partition_path"], d["base_file"], logs, columns, changed_after, keys)
                    if file_id_column is None:
                        yield from rows
                        continue
                    file_id = parse_data_file_name(d["base_file"] or logs[0]).file_id
                    for b in rows:
                        yield b.append_column(file_id_column, pa.array([file_id] * b.num_rows, pa.string()))

        return merge_slices

    def snapshot_batches(
        self, partition_path: str, base_file: str | None, log_files: list[str], columns: list[str],
        changed_after: str | None = None, keys: Collection[str] | None = None,
    ) -> Iterator[pa.RecordBatch]:
        """The merged rows of a slice, only ``columns``: the base rows no log record supersedes,
        read a row group at a time, then the log records that win.

        With ``changed_after`` (an incremental read, which keeps rows written after that instant),
        what cannot hold such rows is read for the merge only (key and ordering columns): a base
        file written at or before that instant (its rows' commit times are at most its own) and
        the log blocks of instants up to it. With ``keys`` (a query that pins the record key),
        only those keys' rows: every version of a key has that key, so the merge is the same,
        and a row group without one of them is not read beyond its keys."""
        wanted = pa.array(sorted(keys), pa.string()) if keys is not None else None
        merge_columns = self._merge_columns()
        old_base = changed_after is not None and base_file is not None and _written_by(base_file) <= changed_after
        with self._open_base(partition_path, base_file) as parquet:
            content = self.scanner.scan(partition_path, log_files, set(columns) | set(merge_columns), changed_after)
            if old_base or parquet is None:
                content = content.of_new_keys()  # no base row is returned: only the changed keys matter
            # An old base file's rows are never returned; they are read only if one could win the merge.
            needed = not old_base or self._base_may_win(parquet, content)
            stored = self._read(parquet if needed else None, merge_columns)
            outcome = self.fold(content, stored)
            if parquet is not None and not old_base:
                keep = np.ones(stored.num_rows, bool)
                keep[outcome.replaced.to_numpy()] = False
                if wanted is not None:
                    keep &= pc.is_in(record_keys_of(stored, self.virtual_keys), value_set=wanted).to_numpy(zero_copy_only=False)
                start = 0
                for group in range(parquet.num_row_groups):
                    size = parquet.metadata.row_group(group).num_rows
                    if keep[start:start + size].any():
                        rows = self._read(parquet, columns, group)
                        yield from rows.filter(keep[start:start + size]).to_batches()
                    start += size
        records = outcome.records
        if wanted is not None and records.num_rows:
            records = records.filter(pc.is_in(record_keys_of(records, self.virtual_keys), value_set=wanted))
        yield from conform(records, self._schema(columns)).to_batches()

    def _base_may_win(self, parquet: pq.ParquetFile | None, content: LogContent) -> bool:
        """Could a row of ``parquet`` decide the merge of the logs' records? Not when the logs
        delete nothing and each of their records wins over any stored version: always under
        commit-time ordering; under event time when every record has an ordering value, the
        smallest at least the largest the base file's footer records (numbers only: a string's
        statistics may be cut short)."""
        if parquet is None or not content.deletes and not content.items.num_rows:
            return False
        if content.deletes:
            return True
        if not self.merge_rule.is_event_time:
            return False
        ordering = content.items.column("ordering")
        largest = _largest_number(parquet, self.merge_rule.ordering_field)
        if ordering.null_count or largest is _UNKNOWN:
            return True
        smallest = pc.min(ordering).as_py()
        return largest is not None and not (isinstance(smallest, (int, float)) and smallest >= largest)

    def _merge_columns(self) -> list[str]:
        """The base file's columns the fold with the logs needs: the key, and the ordering field."""
        return self.scanner.merge_columns()


    def read_base(self, partition_path: str, base_file: str | None, columns: list[str] | None = None) -> pa.Table:
        """The base file's rows in the reader's schema (only ``columns`` of it, when given)."""
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
            raise unreadable_file(path, exc) from None

    def _read(self, parquet: pq.ParquetFile | None, columns: list[str] | None, row_group: int | None = None) -> pa.Table:
        """Columns of a base file (all row groups, or one), in the reader's types; a column the
        file lacks (added to the table later) reads as nulls."""
        schema = self._schema(columns)
        if parquet is None:
            return schema.empty_table()
        stored = [c for c in schema.names if c in parquet.schema_arrow.names]
        table = parquet.read(columns=stored) if row_group is None else parquet.read_row_group(row_group, columns=stored)
        return conform(table, schema)

    def _schema(self, columns: Collection[str] | None) -> pa.Schema:
        return select_fields(self.arrow_schema, columns)

    @property
    def scanner(self) -> LogScanner:
        return LogScanner(self.base_uri, self.arrow_schema, self.merge_rule.ordering_field, self.committed,
                          self.virtual_keys)

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
        self, partition_path: str, base: pa.Table, log_files: list[str], columns: Collection[str] | None = None,
    ) -> SliceOutcome:
        """Fold the slice's log items onto ``base`` (which needs only its key and ordering columns);
        the winning records carry ``columns`` (all by default; they must name the key and
        ordering fields)."""
        return self.fold(self.scanner.scan(partition_path, log_files, columns), base)

    def fold(self, content: LogContent, base: pa.Table) -> SliceOutcome:
        """Fold scanned log content onto ``base``. A winner from a block decoded for the merge
        only (an incremental read's older blocks) is left out of the records.

        Keys without deletes take the closed form of the fold (``_fold_records``); keys with a
        delete are folded one item at a time (``_fold_sequence``).
        """
        tables, items, deletes = content.tables, content.items, content.deletes
        if not items.num_rows and not deletes:
            return SliceOutcome(pa.array([], pa.int64()), content.schema.empty_table())
        delete_keys = pa.array(sorted({key for key, _, _ in deletes}), pa.string())
        with_delete = pc.is_in(items.column("key"), value_set=delete_keys)
        stored = _StoredKeys(record_keys_of(base, self.virtual_keys), pa.concat_arrays([items.column("key").combine_chunks(), delete_keys]))
        kept, winners = self._fold_records(items.filter(pc.invert(with_delete)), base, stored)
        slow_kept, slow_winners = self._fold_sequence(items.filter(with_delete), deletes, base, stored)
        kept = pa.concat_arrays([kept, slow_kept])
        winners = pa.concat_tables([winners, slow_winners])
        # Every stored row of a touched key is superseded, unless the stored version won.
        replaced = stored.rows.filter(pc.invert(pc.is_in(stored.rows, value_set=kept)))
        pieces = []
        for index, table in enumerate(tables):
            rows = winners.filter(pc.equal(winners.column("src"), index)).column("row").to_numpy()
            if len(rows) and index not in content.merge_only:
                pieces.append(table.take(pa.array(np.sort(rows))))
        records = pa.concat_tables(pieces) if pieces else content.schema.empty_table()
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
            current = column_values(base, self.merge_rule.ordering_field).take(position)
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
                state[key] = (("base", pos), column_values(base, ordering)[pos].as_py() if ordering else None)
        for _, key, value, source in sequence:
            current = state.get(key)
            if source is _DELETED:
                if current is not None and current[0] is not _DELETED and self.merge_rule.delete_wins(current[1], value):
                    state[key] = (_DELETED, value)
                continue
            if current is None or current[0] is _DELETED and natural_order(current[1]) or self.merge_rule.record_wins(current[1], value):
                state[key] = (source, value)
        live = [src for src, _ in state.values() if src is not _DELETED]
        kept = pa.array([row for origin, row in live if origin == "base"], pa.int64())
        logged = [(origin, row) for origin, row in live if origin != "base"]
        return kept, pa.table({"src": pa.array([o for o, _ in logged], pa.int64()), "row": pa.array([r for _, r in logged], pa.int64())})


_UNKNOWN = object()


def _largest_number(parquet: pq.ParquetFile, column: str) -> object:
    """The largest value of a numeric ``column`` by the file's statistics; ``None`` when it holds
    none (only nulls, or a column the file lacks), ``_UNKNOWN`` when the statistics cannot say."""
    meta = parquet.metadata
    # By path, not leaf name: a nested field of the same name may come first.
    paths = [meta.schema.column(i).path for i in range(meta.num_columns)]
    if column not in paths:
        return None if field_root(column) not in parquet.schema_arrow.names else _UNKNOWN
    index = paths.index(column)
    largest = None
    for group in range(meta.num_row_groups):
        chunk = meta.row_group(group).column(index)
        stats = chunk.statistics
        if stats is None:
            return _UNKNOWN
        if not stats.has_min_max:
            if stats.null_count != chunk.num_values:
                return _UNKNOWN
            continue  # only nulls
        value = stats.max
        if not isinstance(value, (int, float)) or isinstance(value, bool) or value != value:  # NaN
            return _UNKNOWN
        largest = value if largest is None else max(largest, value)
    return largest


def _written_by(file_name: str) -> str:
    """The instant that wrote a data file, from its name."""
    parsed = parse_data_file_name(file_name)
    assert parsed is not None, file_name
    return parsed.instant_time


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
