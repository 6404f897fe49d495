"""Secondary indexes of the metadata table (``CREATE INDEX name ON t (column)``), as Hudi 1.x keeps
them: partition ``secondary_index_<name>``, whose records (type 7) are keyed
``<value>$<record key>`` (``\\`` and ``$`` escaped with ``\\``; a null value is the one character
``\\0``) with a ``HoodieSecondaryIndexInfo`` value (``isDeleted``). A value's text is the one
Hudi's engine gives it: a date's epoch days, a timestamp's epoch microseconds, a number's digits.

Its file groups (``secondary-index-<name>-0000-0``, ...) are counted as the record index's; a
record lives in group ``file_group_index(key, n)`` of the whole key (index layout V1, table version
8) or of its value part up to and including the ``$`` (V2, version 9), so that one value's keys
share a group.

Example:
    >>> key = entry_key("Amazon$US", "TXN-001")
    >>> key, parse_key(key), value_prefix(None)
    ('Amazon\\\\$US$TXN-001', ('Amazon$US', 'TXN-001'), '\\x00$')
    >>> group_of(entry_key("Spotify", "TXN-018"), 10, 9), file_group_id("secondary_index_merchant_idx", 0)
    (0, 'secondary-index-merchant-idx-0000-0')
"""

from __future__ import annotations

import io

import fastavro

from hudiql.metadata.records import _PARSED, file_group_index, index_file_id, read_datum

#: What the metadata table partition of an index named ``n`` is called: ``secondary_index_n``.
PARTITION_PREFIX = "secondary_index_"
#: ``HoodieMetadataRecord.type`` of a secondary index record.
SECONDARY_INDEX_TYPE = 7
#: The text of a null value.
NULL_VALUE = "\0"
#: ``HoodieIndexDefinition``: its type and function, and the layout each table version writes.
INDEX_TYPE, INDEX_FUNCTION = "secondary_index", "identity"
LAYOUT_VERSION = {8: "V1", 9: "V2"}


def partition_of(index_name: str) -> str:
    return PARTITION_PREFIX + index_name


def file_group_id(partition: str, index: int) -> str:
    return index_file_id(f"{partition.replace('_', '-')}-", index)


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("$", "\\$")


def value_prefix(value: str | None) -> str:
    """What every key of ``value`` begins with."""
    return (NULL_VALUE if value is None else _escape(value)) + "$"


def entry_key(value: str | None, record_key: str) -> str:
    return value_prefix(value) + _escape(record_key)


def parse_key(key: str) -> tuple[str | None, str]:
    """(value, record key) of an entry's key."""
    parts, current, i = [], [], 0
    while i < len(key):
        char = key[i]
        if char == "\\" and i + 1 < len(key):
            current.append(key[i + 1])
            i += 2
            continue
        if char == "$" and not parts:
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
        i += 1
    value = parts[0] if parts else ""
    return (None if value == NULL_VALUE else value), "".join(current)


def group_of(key: str, count: int, version: int) -> int:
    """The file group (of ``count``) of an entry key, or of a ``value_prefix``, in the layout of
    table ``version``."""
    if version >= 9:
        _, record_key = parse_key(key)
        key = key[:len(key) - len(_escape(record_key))] if record_key else key
    return file_group_index(key, count)


def is_live(value: bytes, writer_schema: str) -> bool:
    """Whether an entry's HFile value keeps it (not a tombstone)."""
    return not (read_datum(value, writer_schema)["SecondaryIndexMetadata"] or {}).get("isDeleted", False)


def encode_entry(deleted: bool = False, base_file_name: str | None = None) -> bytes:
    """An entry's HFile value: present, or the tombstone that removes it."""
    out = io.BytesIO()
    fastavro.schemaless_writer(out, _PARSED, {"_hoodie_file_name": base_file_name, "key": "",
                                              "type": SECONDARY_INDEX_TYPE,
                                              "SecondaryIndexMetadata": {"isDeleted": deleted}})
    return out.getvalue()
