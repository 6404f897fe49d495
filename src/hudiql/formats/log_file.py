"""The Hudi log file format (merge-on-read): a sequence of blocks, encoded and decoded.

Block layout (all integers big-endian):
``#HUDI#`` | int64 length of the rest (to the end of the reverse pointer) | int32 format version (1)
| int32 block type | header | int64 content length | content | footer | int64 reverse pointer
(bytes from the magic to the end of the footer). Headers and footers are an int32 count, then
per entry an int32 key, an int32 length and UTF-8 bytes.

Example:
    >>> schema = {"type": "record", "name": "r", "fields": [{"name": "id", "type": "long"}]}
    >>> data = encode_block(LogBlock(AVRO_DATA, {INSTANT_TIME: "20240101000000000", SCHEMA: json.dumps(schema)},
    ...                              avro_records_content([{"id": 1}, {"id": 2}], schema)))
    >>> data += encode_block(rollback_block("20240101000000002", target_instant_time="20240101000000001"))
    >>> blocks = read_blocks(data, "f.log.1")
    >>> [(BLOCK_TYPE_NAMES[b.block_type], b.instant_time) for b in blocks]
    [('AVRO_DATA', '20240101000000000'), ('COMMAND', '20240101000000002')]
    >>> read_avro_records(blocks[0], "f.log.1")
    [{'id': 1}, {'id': 2}]
    >>> read_blocks(data[:-1], "f.log.1")                  # a write that crashed while appending
    Traceback (most recent call last):
    hudiql.formats.log_file.TruncatedLogError: log file f.log.1 has a truncated block at byte ...
"""

from __future__ import annotations

import io
import json
import struct
from collections.abc import Collection
from dataclasses import dataclass, field

import fastavro
import numpy as np
import pyarrow as pa

from hudiql.errors import FormatError, unreadable_file
from hudiql.formats import avro

MAGIC = b"#HUDI#"
LOG_FORMAT_VERSION = 1
BLOCK_CONTENT_VERSION = 3

# Block types
COMMAND, DELETE, CORRUPT, AVRO_DATA, HFILE_DATA, PARQUET_DATA, CDC_DATA = range(7)
BLOCK_TYPE_NAMES = {COMMAND: "COMMAND", DELETE: "DELETE", CORRUPT: "CORRUPT", AVRO_DATA: "AVRO_DATA",
                    HFILE_DATA: "HFILE_DATA", PARQUET_DATA: "PARQUET_DATA", CDC_DATA: "CDC_DATA"}

# Header keys
INSTANT_TIME, TARGET_INSTANT_TIME, SCHEMA, COMMAND_BLOCK_TYPE, COMPACTED_BLOCK_TIMES = range(5)
ROLLBACK_COMMAND = "0"


@dataclass
class LogBlock:
    block_type: int
    header: dict[int, str] = field(default_factory=dict)
    content: bytes = b""
    footer: dict[int, str] = field(default_factory=dict)

    @property
    def instant_time(self) -> str | None:
        return self.header.get(INSTANT_TIME)


class TruncatedLogError(FormatError):
    """A log file ends inside a block: a write that crashed while appending it, or a damaged file.

    ``blocks`` are the whole blocks before the cut one; ``instant_time`` is the cut block's
    instant, when its header entry is whole, so that a reader can tell a failed write from damage.
    """

    def __init__(self, message: str, blocks: list[LogBlock] | None = None, instant_time: str | None = None) -> None:
        super().__init__(message)
        self.blocks = blocks or []
        self.instant_time = instant_time


def _encode_map(entries: dict[int, str]) -> bytes:
    out = [struct.pack(">i", len(entries))]
    for key, value in entries.items():
        raw = value.encode("utf-8")
        out.append(struct.pack(">ii", key, len(raw)))
        out.append(raw)
    return b"".join(out)


def encode_block(block: LogBlock) -> bytes:
    body = b"".join([
        struct.pack(">ii", LOG_FORMAT_VERSION, block.block_type),
        _encode_map(block.header),
        struct.pack(">q", len(block.content)),
        block.content,
        _encode_map(block.footer),
    ])
    before_pointer = len(MAGIC) + 8 + len(body)
    return MAGIC + struct.pack(">q", len(body) + 8) + body + struct.pack(">q", before_pointer)


class _Reader:
    def __init__(self, data: bytes, path: str) -> None:
        self.data, self.path, self.pos = data, path, 0

    def take(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.data):
            raise FormatError(f"log file {self.path} is truncated or corrupt at byte {self.pos}")
        chunk = self.data[self.pos:self.pos + n]
        self.pos += n
        return chunk

    def int32(self) -> int:
        return struct.unpack(">i", self.take(4))[0]

    def int64(self) -> int:
        return struct.unpack(">q", self.take(8))[0]

    def entries(self) -> dict[int, str]:
        out = {}
        for _ in range(self.int32()):
            key, length = self.int32(), self.int32()
            out[key] = self.take(length).decode("utf-8")
        return out


#: The data blocks of a data table's logs; the metadata table's hold HFiles instead.
DATA_TABLE_BLOCKS = (AVRO_DATA, PARQUET_DATA)


def read_blocks(data: bytes, path: str, data_blocks: tuple[int, ...] = DATA_TABLE_BLOCKS) -> list[LogBlock]:
    """Every block of a log file; a corrupt, truncated or unknown block, or a data block of a type
    other than ``data_blocks``, is an error naming the file (a ``TruncatedLogError`` when the file
    ends inside a block)."""
    reader = _Reader(data, path)
    blocks: list[LogBlock] = []
    while reader.pos < len(data):
        start = reader.pos
        if not MAGIC.startswith(data[start:start + len(MAGIC)]):
            raise FormatError(f"log file {path} is corrupt: no block magic at byte {start}")
        if len(data) - start < len(MAGIC) + 8:
            raise TruncatedLogError(f"log file {path} has a truncated block at byte {start} (no length)", blocks, None)
        reader.pos += len(MAGIC)
        length = reader.int64()
        end = reader.pos + length
        if end > len(data):
            raise TruncatedLogError(
                f"log file {path} has a truncated block at byte {start} ({len(data) - reader.pos} of {length} bytes)",
                blocks, _instant_of_cut_block(data[reader.pos:], path),
            )
        version, block_type = reader.int32(), reader.int32()
        if version != LOG_FORMAT_VERSION:
            raise FormatError(f"log file {path}: unsupported log format version {version} at byte {start}")
        if block_type not in (COMMAND, DELETE, *data_blocks):
            name = BLOCK_TYPE_NAMES.get(block_type, f"unknown type {block_type}")
            raise FormatError(f"log file {path}: block at byte {start} is {name}, which hudiql cannot read")
        header = reader.entries()
        content = reader.take(reader.int64())
        footer = reader.entries()
        if reader.int64() != reader.pos - 8 - start:
            raise FormatError(f"log file {path} is corrupt: bad block length pointer at byte {start}")
        if reader.pos != end:
            raise FormatError(f"log file {path} is corrupt: block at byte {start} does not end where its length says")
        blocks.append(LogBlock(block_type, header, content, footer))
    return blocks


def _instant_of_cut_block(rest: bytes, path: str) -> str | None:
    """The instant in the header of a block the file's end cut off, if its entry is whole (the
    header's other entries, such as the schema, may be cut)."""
    reader = _Reader(rest, path)
    try:
        reader.take(8)  # format version, block type
        for _ in range(reader.int32()):
            key, length = reader.int32(), reader.int32()
            value = reader.take(length)
            if key == INSTANT_TIME:
                return value.decode("utf-8")
    except (FormatError, UnicodeDecodeError):
        pass
    return None


# ---- AVRO_DATA content -----------------------------------------------------------------------------

def avro_records_content(records: list[dict], schema: dict) -> bytes:
    parsed = fastavro.parse_schema(schema)
    out = [struct.pack(">ii", BLOCK_CONTENT_VERSION, len(records))]
    buf = io.BytesIO()
    for record in records:
        buf.seek(0)
        buf.truncate()
        fastavro.schemaless_writer(buf, parsed, record)
        raw = buf.getvalue()
        out.append(struct.pack(">i", len(raw)))
        out.append(raw)
    return b"".join(out)


def avro_table_content(table: pa.Table, schema: dict) -> bytes:
    """An Avro data block's content for the rows of ``table`` (columnar when the schema allows)."""
    records = avro.encode(table, schema, length_prefix=True)
    if records is None:
        return avro_records_content(avro_values(table), schema)
    offsets = np.frombuffer(records.buffers()[1], np.int64)
    body = records.buffers()[2]
    header = struct.pack(">ii", BLOCK_CONTENT_VERSION, len(records))
    return header + (body.slice(0, int(offsets[-1])).to_pybytes() if body is not None else b"")


def _avro_records(block: LogBlock, path: str) -> tuple[dict, int]:
    """The block's writer schema and record count, after checking its content version."""
    reader = _Reader(block.content, path)
    version = reader.int32()
    if version > BLOCK_CONTENT_VERSION:
        raise FormatError(f"log file {path}: Avro block version {version} is not supported")
    try:
        schema = json.loads(block.header[SCHEMA])
    except (ValueError, KeyError) as exc:  # a damaged header: the block's records cannot be read
        raise unreadable_file(path, exc) from None
    return schema, reader.int32()


def avro_record_count(block: LogBlock, path: str) -> int:
    return _avro_records(block, path)[1]


def read_avro_records(block: LogBlock, path: str) -> list[dict]:
    schema, count = _avro_records(block, path)
    parsed = fastavro.parse_schema(schema)
    reader = _Reader(block.content, path)
    reader.pos = 8
    records = []
    for i in range(count):
        raw = reader.take(reader.int32())
        try:
            records.append(fastavro.schemaless_reader(io.BytesIO(raw), parsed, parsed))
        except (EOFError, ValueError, TypeError, IndexError, UnicodeDecodeError) as exc:
            raise FormatError(f"log file {path}: Avro record {i} of {count} does not match its block's schema ({exc})") from None
    return records


def read_avro_table(block: LogBlock, path: str, arrow_schema: pa.Schema) -> pa.Table:
    """The block's records as Arrow: the columns of its writer schema, typed as in ``arrow_schema``
    (decoded columnar when the schema allows, else with fastavro row by row)."""
    return read_avro_blocks([(block, path)], arrow_schema)


def read_avro_blocks(
    blocks: list[tuple[LogBlock, str]], arrow_schema: pa.Schema, columns: Collection[str] | None = None
) -> pa.Table:
    """The records of Avro data blocks that share one writer schema, in block order, as one
    table (only ``columns`` of the writer schema, when given): a slice's small blocks are
    decoded in one pass, not one numpy pass each."""
    schema, _ = _avro_records(*blocks[0])
    if avro.supports(schema):
        starts, ends, offset = [], [], 0
        for block, path in blocks:
            _, count = _avro_records(block, path)
            first, last = avro.record_bounds(block.content, 8, count, path)
            starts.append(first + offset)
            ends.append(last + offset)
            offset += len(block.content)
        content = blocks[0][0].content if len(blocks) == 1 else b"".join(b.content for b, _ in blocks)
        try:
            return avro.decode(content, np.concatenate(starts), np.concatenate(ends), schema, blocks[0][1], columns)
        except FormatError:
            for one in blocks[1:] if len(blocks) > 1 else []:
                read_avro_blocks([one], arrow_schema, columns)  # names the file that holds the bad record
            raise
    names = {f["name"] for f in schema["fields"] if columns is None or f["name"] in columns}
    rows = [record for block, path in blocks for record in read_avro_records(block, path)]
    return pa.Table.from_pylist(rows, schema=pa.schema([f for f in arrow_schema if f.name in names]))


def avro_values(records: pa.Table) -> list[dict]:
    """Rows as Avro datums: Arrow gives maps as lists of (key, value) pairs, Avro wants dicts."""
    converters = {f.name: _to_avro_value(f.type) for f in records.schema}
    return [
        {name: converters[name](value) for name, value in row.items()}
        for row in records.to_pylist()
    ]


def _to_avro_value(dtype: pa.DataType):
    if pa.types.is_map(dtype):
        item = _to_avro_value(dtype.item_type)
        return lambda v: None if v is None else {k: item(x) for k, x in v}
    if pa.types.is_list(dtype) or pa.types.is_large_list(dtype):
        item = _to_avro_value(dtype.value_type)
        return lambda v: None if v is None else [item(x) for x in v]
    if pa.types.is_struct(dtype):
        fields = {f.name: _to_avro_value(f.type) for f in dtype}
        return lambda v: None if v is None else {k: fields[k](x) for k, x in v.items()}
    return lambda v: v



# ---- DELETE content ---------------------------------------------------------------------------------

def _wrapper(name: str, value_type: object) -> dict:
    return {"type": "record", "name": name, "fields": [{"name": "value", "type": value_type}]}


#: Union branches of ``orderingVal``, in Hudi's order (the index is what the binary encodes).
ORDERING_WRAPPERS = [
    _wrapper("BooleanWrapper", "boolean"),
    _wrapper("IntWrapper", "int"),
    _wrapper("LongWrapper", "long"),
    _wrapper("FloatWrapper", "float"),
    _wrapper("DoubleWrapper", "double"),
    _wrapper("BytesWrapper", "bytes"),
    _wrapper("StringWrapper", "string"),
    _wrapper("DateWrapper", {"type": "int", "logicalType": "date"}),
    _wrapper("DecimalWrapper", {"type": "bytes", "logicalType": "decimal", "precision": 30, "scale": 15}),
    _wrapper("TimeMicrosWrapper", {"type": "long", "logicalType": "time-micros"}),
    _wrapper("TimestampMicrosWrapper", {"type": "long", "logicalType": "timestamp-micros"}),
]
DELETE_RECORD_LIST_SCHEMA = {
    "type": "record",
    "name": "HoodieDeleteRecordList",
    "namespace": "org.apache.hudi.avro.model",
    "fields": [{
        "name": "deleteRecordList",
        "type": {"type": "array", "items": {
            "type": "record",
            "name": "HoodieDeleteRecord",
            "fields": [
                {"name": "recordKey", "type": ["null", "string"], "default": None},
                {"name": "partitionPath", "type": ["null", "string"], "default": None},
                {"name": "orderingVal", "type": ["null", *ORDERING_WRAPPERS], "default": None},
            ],
        }},
    }],
}
_PARSED_DELETE_SCHEMA = fastavro.parse_schema(DELETE_RECORD_LIST_SCHEMA)


@dataclass(frozen=True)
class DeleteRecord:
    record_key: str
    partition_path: str
    ordering_value: object = None  # None: the delete applies whatever the stored ordering value


def wrapper_for(avro_type: object) -> str:
    """The orderingVal wrapper of an ordering column's Avro type."""
    if isinstance(avro_type, list):
        avro_type = next(t for t in avro_type if t != "null")
    logical = avro_type.get("logicalType") if isinstance(avro_type, dict) else None
    base = avro_type.get("type") if isinstance(avro_type, dict) else avro_type
    if logical == "date":
        return "DateWrapper"
    if logical in ("timestamp-micros", "local-timestamp-micros"):
        return "TimestampMicrosWrapper"
    if logical == "decimal":
        return "DecimalWrapper"
    return {"boolean": "BooleanWrapper", "int": "IntWrapper", "long": "LongWrapper", "float": "FloatWrapper",
            "double": "DoubleWrapper", "bytes": "BytesWrapper", "string": "StringWrapper"}[base]


def delete_content(deletes: list[DeleteRecord], wrapper: str | None) -> bytes:
    records = [
        {
            "recordKey": d.record_key,
            "partitionPath": d.partition_path,
            "orderingVal": None if d.ordering_value is None or wrapper is None
            else ("org.apache.hudi.avro.model." + wrapper, {"value": d.ordering_value}),
        }
        for d in deletes
    ]
    buf = io.BytesIO()
    fastavro.schemaless_writer(buf, _PARSED_DELETE_SCHEMA, {"deleteRecordList": records})
    raw = buf.getvalue()
    return struct.pack(">ii", BLOCK_CONTENT_VERSION, len(raw)) + raw


def read_deletes(block: LogBlock, path: str) -> list[DeleteRecord]:
    reader = _Reader(block.content, path)
    reader.int32()  # content version
    raw = reader.take(reader.int32())
    doc = fastavro.schemaless_reader(io.BytesIO(raw), _PARSED_DELETE_SCHEMA, _PARSED_DELETE_SCHEMA, return_record_name=True)
    out = []
    for item in doc["deleteRecordList"]:
        ordering = item.get("orderingVal")
        if isinstance(ordering, tuple):  # (wrapper name, {"value": v})
            ordering = ordering[1]["value"]
        elif isinstance(ordering, dict):
            ordering = ordering.get("value")
        out.append(DeleteRecord(item.get("recordKey") or "", item.get("partitionPath") or "", ordering))
    return out


def rollback_block(instant_time: str, target_instant_time: str) -> LogBlock:
    return LogBlock(COMMAND, {INSTANT_TIME: instant_time, TARGET_INSTANT_TIME: target_instant_time,
                              COMMAND_BLOCK_TYPE: ROLLBACK_COMMAND})
