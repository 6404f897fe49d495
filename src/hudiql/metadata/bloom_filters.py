"""The ``bloom_filters`` partition of the metadata table: the bloom filter of each base file's
record keys, as Hudi keeps it (``hoodie.metadata.index.bloom.filter.enable``), so that a BLOOM
index lookup (``hoodie.bloom.index.use.metadata``) need not open the footer of every file.

A record (type 4, ``HoodieMetadataBloomFilter``) is keyed by the data partition and the file
(``partition_id`` + ``file_id``: XXHash64 and MD5, Base64, as column stats keys end). Its value is
the filter's type code, the instant that wrote the record, the filter serialized as the base
file's footer holds it (its Base64 text, as UTF-8 bytes) and a deletion flag: a cleaned or rolled
back file's record is a stub with an empty filter, and a newer record of a key replaces the older.
The partition has a fixed number of file groups (``bloom-filters-0000-0``, ...); a key lives in
group ``file_group_index(key, n)``.

Example:
    >>> key = filter_key("city=chennai", "f1-0_0-1-0_20240101000000000.parquet")
    >>> key.startswith(partition_id("city=chennai")), file_group_id(2)
    (True, 'bloom-filters-0002-0')
    >>> from hudiql.metadata.records import SCHEMA_JSON
    >>> found = FileFilter("DYNAMIC_V0", "20240101000000000", b"AAAA")
    >>> decode_filter(encode_filter(found), SCHEMA_JSON) == found
    True
    >>> decode_filter(encode_filter(FileFilter.deleted("20240102000000000")), SCHEMA_JSON).is_deleted
    True
"""

from __future__ import annotations

import io
from dataclasses import dataclass

import fastavro

from hudiql.formats.bloom_filter import BloomFilter
from hudiql.metadata.column_stats import file_id, partition_id
from hudiql.metadata.index_slice import IndexSlice
from hudiql.metadata.records import _PARSED, index_file_id, read_datum

#: The metadata table's partition of the base files' bloom filters.
BLOOM_FILTERS_PARTITION = "bloom_filters"
#: ``HoodieMetadataRecord.type`` of a bloom filter record.
BLOOM_FILTER_TYPE = 4
#: What the file ids of its file groups begin with (their number:
#: ``hoodie.metadata.index.bloom.filter.file.group.count``).
FILE_GROUP_PREFIX = "bloom-filters-"


def filter_key(partition_path: str, file_name: str) -> str:
    """The key of a base file's record."""
    return partition_id(partition_path) + file_id(file_name)


def file_group_id(index: int) -> str:
    return index_file_id(FILE_GROUP_PREFIX, index)


@dataclass(frozen=True)
class FileFilter:
    """One record's value: a base file's filter (``type_code``, the footer's ``text``), written at
    ``timestamp``; or, ``is_deleted``, the stub of a file that is gone."""

    type_code: str
    timestamp: str
    text: bytes
    is_deleted: bool = False

    @classmethod
    def deleted(cls, timestamp: str) -> FileFilter:
        """The stub of a file deleted at ``timestamp`` (as Hudi writes it: no type, no filter)."""
        return cls("", timestamp, b"", True)

    def bloom(self) -> BloomFilter:
        return BloomFilter.decode(self.text, self.type_code)


def encode_filter(found: FileFilter, file_name: str | None = None) -> bytes:
    """A record's HFile value; ``file_name`` for values of a base HFile, which name it."""
    out = io.BytesIO()
    fastavro.schemaless_writer(out, _PARSED, {
        "_hoodie_file_name": file_name, "key": "", "type": BLOOM_FILTER_TYPE,
        "BloomFilterMetadata": {"type": found.type_code, "timestamp": found.timestamp, "bloomFilter": found.text,
                                "isDeleted": found.is_deleted},
    })
    return out.getvalue()


def decode_filter(value: bytes, writer_schema: str) -> FileFilter:
    """A record's value from its HFile value, written with ``writer_schema`` (JSON)."""
    info = read_datum(value, writer_schema)["BloomFilterMetadata"]
    return FileFilter(info["type"], info["timestamp"], bytes(info["bloomFilter"]), info["isDeleted"])


class BloomFilterSlice(IndexSlice):
    """One bloom_filters file group's latest slice (``index_slice.IndexSlice``): key -> ``FileFilter``;
    a compaction drops the stubs of deleted files."""

    decode = staticmethod(decode_filter)

    @staticmethod
    def encode(decoded: FileFilter, file_name: str) -> bytes:
        return encode_filter(decoded, file_name)

    @staticmethod
    def live(decoded: FileFilter) -> bool:
        return not decoded.is_deleted
