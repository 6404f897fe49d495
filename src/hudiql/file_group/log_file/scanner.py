"""Scanning a file slice's log files: the valid content of their blocks, in log order.

Blocks of instants that did not commit (``CommittedInstants``), and blocks a rollback command
block targets, are skipped; so is a block a failed write left cut short at the end of a file
(anything else cut short is damage, an error). What is left is what the slice reader
(``file_group.reader``) folds onto the base file: the data blocks' tables, their records as
items (key, ordering, seq, table index, row) and the deletes (key, ordering, seq).

Example: a log with a block of a committed write and one of a write that never completed.
    >>> import json
    >>> schema = {"type": "record", "name": "r", "fields": [{"name": "_hoodie_record_key", "type": "string"},
    ...                                                   {"name": "v", "type": "long"}]}
    >>> def block(instant, rows):
    ...     header = {L.INSTANT_TIME: instant, L.SCHEMA: json.dumps(schema)}
    ...     return L.encode_block(L.LogBlock(L.AVRO_DATA, header, L.avro_records_content(rows, schema)))
    >>> Storage(warehouse).write("dt=1/.f-0_001.log.1_0-2-0", block("002", [{"_hoodie_record_key": "k1", "v": 1}])
    ...                                                       + block("003", [{"_hoodie_record_key": "k1", "v": 2}]))
    >>> committed = CommittedInstants(completed=frozenset({"001", "002"}), pending=frozenset({"003"}), start="001")
    >>> arrow_schema = pa.schema([("_hoodie_record_key", pa.string()), ("v", pa.int64())])
    >>> content = LogScanner(warehouse, arrow_schema, None, committed).scan("dt=1", [".f-0_001.log.1_0-2-0"])
    >>> [t.to_pylist() for t in content.tables], content.items.column("key").to_pylist()
    ([[{'_hoodie_record_key': 'k1', 'v': 1}]], ['k1'])
"""

from __future__ import annotations

import io
import posixpath
from collections.abc import Collection
from dataclasses import dataclass, replace

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from hudiql.errors import RESTORE_FROM_BACKUP, FormatError, damaged_file
from hudiql.formats import log_file as L
from hudiql.io.storage import Storage
from hudiql.layout import join_partition, parse_data_file_name
from hudiql.record.keygen import KeyGenerator, record_keys_of
from hudiql.record.schema import RECORD_KEY, arrow_field_type, column_values, conform, field_root, select_fields
from hudiql.timeline.active import CommittedInstants


@dataclass(frozen=True)
class LogContent:
    """A slice's valid log content, in log order (``seq``): the data blocks' tables (in ``schema``,
    the columns asked for), their records as items (key, ordering, seq, table index, row), the
    deletes (key, ordering, seq), and the indexes of the tables decoded with the merge's key and
    ordering columns only."""

    schema: pa.Schema
    tables: list[pa.Table]
    items: pa.Table
    deletes: list[tuple]
    merge_only: frozenset[int] = frozenset()

    def of_new_keys(self) -> LogContent:
        """Only the items and deletes of keys a block not decoded for the merge only wrote: all an
        incremental read of a slice whose base rows it does not return needs (another key's
        winner is an older record, never returned)."""
        if not self.merge_only:
            return self
        src = self.items.column("src")
        new = pc.invert(pc.is_in(src, value_set=pa.array(sorted(self.merge_only), src.type)))
        keys = pc.unique(self.items.filter(new).column("key"))
        wanted = set(keys.to_pylist())
        return replace(self, items=self.items.filter(pc.is_in(self.items.column("key"), value_set=keys)),
                       deletes=[d for d in self.deletes if d[0] in wanted])


@dataclass(frozen=True)
class LogScanner:
    base_uri: str
    arrow_schema: pa.Schema  # meta + data columns
    ordering_field: str | None
    committed: CommittedInstants
    #: A table without meta fields: records' keys are derived from their key columns by this.
    virtual_keys: KeyGenerator | None = None

    def merge_columns(self) -> list[str]:
        """The columns a record's merge needs: its key (or the columns it is derived from), its ordering value."""
        keys = list(self.virtual_keys.record_key_fields) if self.virtual_keys is not None else [RECORD_KEY]
        return keys + ([field_root(self.ordering_field)] if self.ordering_field else [])

    def scan(
        self, partition_path: str, log_files: list[str], columns: Collection[str] | None = None,
        merge_only_until: str | None = None,
    ) -> LogContent:
        """The slice's valid log content: the data blocks' tables (only ``columns``, which name the
        key and ordering fields, when given). Blocks of instants up to ``merge_only_until`` are
        decoded with the key and ordering columns only: an incremental read needs them for the
        merge, never as rows."""
        schema = select_fields(self.arrow_schema, columns)
        merge_columns = self.merge_columns()
        narrow = select_fields(self.arrow_schema, merge_columns)
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
        merge_only: set[int] = set()
        # (writer schema, merge columns only) -> (seq, count, block, path)
        avro: dict[tuple[str, bool], list[tuple[int, int, L.LogBlock, str]]] = {}
        seq = 0
        for path, block in blocks:
            instant = block.instant_time
            if block.block_type == L.COMMAND or instant not in self.committed or instant in rolled_back:
                continue
            only_merge = merge_only_until is not None and instant is not None and instant <= merge_only_until
            if block.block_type == L.DELETE:
                for d in L.read_deletes(block, path):
                    deletes.append((d.record_key, d.ordering_value, seq))
                    seq += 1
            elif block.block_type == L.AVRO_DATA:
                count = L.avro_record_count(block, path)
                avro.setdefault((block.header[L.SCHEMA], only_merge), []).append((seq, count, block, path))
                seq += count
            else:
                wanted = narrow if only_merge else schema
                try:
                    parquet = pq.ParquetFile(io.BytesIO(block.content))
                    table = parquet.read(columns=[c for c in wanted.names if c in parquet.schema_arrow.names])
                except pa.ArrowException as exc:
                    raise damaged_file(path, f"has a corrupt parquet block ({exc})") from None
                if only_merge:
                    merge_only.add(len(tables))
                self._add_items(tables, items, conform(table, wanted), np.arange(seq, seq + table.num_rows, dtype=np.int64))
                seq += table.num_rows
        for (_, only_merge), group in avro.items():  # blocks of one writer schema are decoded together
            wanted = narrow if only_merge else schema
            table = L.read_avro_blocks([(block, path) for _, _, block, path in group], self.arrow_schema,
                                       merge_columns if only_merge else columns)
            seqs = np.concatenate([np.arange(first, first + count, dtype=np.int64) for first, count, _, _ in group])
            if only_merge:
                merge_only.add(len(tables))
            self._add_items(tables, items, conform(table, wanted), seqs)
        return LogContent(schema, tables, pa.concat_tables(items) if items else self.items_schema().empty_table(), deletes,
                          frozenset(merge_only))

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
            "key": record_keys_of(table, self.virtual_keys),
            "seq": pa.array(seqs),
            "src": pa.array(np.full(n, len(tables), dtype=np.int64)),
            "row": pa.array(np.arange(n, dtype=np.int64)),
        }
        if self.ordering_field:
            columns["ordering"] = column_values(table, self.ordering_field)
        items.append(pa.table(columns))
        tables.append(table)

    def items_schema(self) -> pa.Schema:
        schema = pa.schema([("key", pa.string()), ("seq", pa.int64()), ("src", pa.int64()), ("row", pa.int64())])
        ordering = self.ordering_field
        return schema.append(pa.field("ordering", arrow_field_type(self.arrow_schema, ordering))) if ordering else schema
