"""The ``record_index`` partition of the metadata table: each record key's location (its data
partition and file group), as Hudi 1.x keeps it (``hoodie.metadata.record.index.enable``).

The partition has a fixed number of file groups, ``record-index-0000-0``, ``record-index-0001-0``,
...; a key lives in group ``abs(abs(h) % n)``, h the key's Java ``String.hashCode()``. A group's
base HFile and the HFile blocks of its logs map keys to ``HoodieRecordIndexInfo`` values (type 5):
the partition, the file id (a ``<uuid>-<n>`` id as its UUID's two halves and n, any other id as
text) and the instant that placed the key. A newer value of a key replaces the older one; a key
deleted from the table is a ``DELETE`` block entry of a log. A write records only keys that
change place: inserts and deletes, not updates in place.

Example:
    >>> location = RecordLocation("dt=1", "6b1c3e2a-5f4d-4c3b-9a2e-1f0e9d8c7b6a-0", "20240101000000000")
    >>> from hudiql.metadata.records import SCHEMA_JSON
    >>> value = encode_location(location)
    >>> decode_location(value, SCHEMA_JSON) == location
    True
    >>> file_group_id(1)
    'record-index-0001-0'
    >>> RecordIndexSlice(write_hfile([(b"k1", value)]), [], "g").lookup(["k0", "k1"])
    {'k1': RecordLocation(partition='dt=1', file_id='6b1c3e2a-5f4d-4c3b-9a2e-1f0e9d8c7b6a-0', instant_time='20240101000000000')}
"""

from __future__ import annotations

import io
import uuid
from dataclasses import dataclass
from datetime import datetime, timezone
from functools import lru_cache

import fastavro

from hudiql.formats import log_file as L
from hudiql.formats.hfile import write_hfile
from hudiql.metadata.index_slice import IndexSlice
from hudiql.metadata.records import _PARSED, index_file_id, read_datum

#: The metadata table's partition of the record index.
RECORD_INDEX_PARTITION = "record_index"
#: ``HoodieMetadataRecord.type`` of a record index entry.
RECORD_INDEX_TYPE = 5
#: How a file id is kept: as a UUID and a file index (``<uuid>-<n>``), or as its text.
UUID_ENCODING, RAW_ENCODING = 0, 1
#: The file index Hudi writes for a bare ``<uuid>`` file id (written by Hudi before file indexes).
_NO_FILE_INDEX = -1
#: What the file ids of the record index's file groups begin with.
FILE_GROUP_PREFIX = "record-index-"
_INSTANT_FORMAT = "%Y%m%d%H%M%S"


@dataclass(frozen=True)
class RecordLocation:
    """Where a record key lives: its data partition, file group and the instant that put it there."""

    partition: str
    file_id: str
    instant_time: str


def file_group_id(index: int) -> str:
    """The file id of the record index's file group ``index``."""
    return index_file_id(FILE_GROUP_PREFIX, index)


def _instant_millis(instant_time: str) -> int:
    """An instant time as epoch milliseconds (hudiql's instants are UTC)."""
    when = datetime.strptime(instant_time[:14], _INSTANT_FORMAT).replace(tzinfo=timezone.utc)
    return int(when.timestamp()) * 1000 + int(instant_time[14:17] or 0)


def _millis_instant(millis: int) -> str:
    when = datetime.fromtimestamp(millis // 1000, timezone.utc)
    return when.strftime(_INSTANT_FORMAT) + f"{millis % 1000:03d}"


def _encoded_file_id(file_id: str) -> dict:
    """The file id fields of ``HoodieRecordIndexInfo``, as Hudi encodes a file id."""
    head, _, tail = file_id.rpartition("-")
    try:
        if len(file_id) == 36:
            return {"fileIdEncoding": UUID_ENCODING, "fileId": "", "fileIndex": _NO_FILE_INDEX,
                    **_uuid_bits(uuid.UUID(file_id))}
        if tail.isdigit() and len(head) == 36:
            return {"fileIdEncoding": UUID_ENCODING, "fileId": "", "fileIndex": int(tail),
                    **_uuid_bits(uuid.UUID(head))}
    except ValueError:
        pass
    return {"fileIdEncoding": RAW_ENCODING, "fileId": file_id, "fileIndex": -1, "fileIdHighBits": -1,
            "fileIdLowBits": -1}


def _uuid_bits(value: uuid.UUID) -> dict:
    signed = lambda bits: bits - (1 << 64) if bits >= 1 << 63 else bits  # noqa: E731 - Java longs
    return {"fileIdHighBits": signed(value.int >> 64), "fileIdLowBits": signed(value.int & (1 << 64) - 1)}


@lru_cache(maxsize=4096)
def encode_location(location: RecordLocation, file_name: str | None = None) -> bytes:
    """A key's HFile value (the key is the HFile key; every key of one write shares its value,
    hence the cache); ``file_name`` for values of a base file, which name it."""
    out = io.BytesIO()
    fastavro.schemaless_writer(out, _PARSED, {
        "_hoodie_file_name": file_name, "key": "", "type": RECORD_INDEX_TYPE,
        "recordIndexMetadata": {"partitionName": location.partition, "instantTime": _instant_millis(location.instant_time),
                                "position": None, **_encoded_file_id(location.file_id)},
    })
    return out.getvalue()


@lru_cache(maxsize=4096)
def decode_location(value: bytes, writer_schema: str) -> RecordLocation:
    """The location an HFile value holds (values repeat: decoded once each)."""
    info = read_datum(value, writer_schema)["recordIndexMetadata"]
    if info["fileIdEncoding"] == UUID_ENCODING:
        bits = (info["fileIdHighBits"] % (1 << 64)) << 64 | info["fileIdLowBits"] % (1 << 64)
        file_id = str(uuid.UUID(int=bits))
        if info["fileIndex"] != _NO_FILE_INDEX:
            file_id += f"-{info['fileIndex']}"
    else:
        file_id = info["fileId"]
    return RecordLocation(info["partitionName"] or "", file_id, _millis_instant(info["instantTime"]))


def log_blocks(instant_time: str, upserts: list[tuple[bytes, bytes]], deletes: list[str], schema: str) -> bytes:
    """The log file content of one write's changes to one file group: an HFile block of the keys
    it placed (sorted), then a delete block of the keys it removed, as Hudi writes them; their
    headers name the metadata table's record ``schema`` (its text, ``MetadataTable.record_schema``)."""
    data = b""
    if upserts:
        data += L.encode_block(L.LogBlock(L.HFILE_DATA, {L.INSTANT_TIME: instant_time, L.SCHEMA: schema},
                                          write_hfile(upserts)))
    if deletes or not upserts:
        records = [L.DeleteRecord(key, RECORD_INDEX_PARTITION) for key in deletes]
        data += L.encode_block(L.LogBlock(L.DELETE, {L.INSTANT_TIME: instant_time, L.SCHEMA: schema},
                                          L.delete_content(records, None)))
    return data


class RecordIndexSlice(IndexSlice):
    """One record index file group's latest slice (``index_slice.IndexSlice``): key -> location."""

    decode = staticmethod(decode_location)
    encode = staticmethod(encode_location)
