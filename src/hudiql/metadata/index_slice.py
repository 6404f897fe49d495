"""One file group's latest slice of a keyed index partition of the metadata table (the record
index, the bloom filters), read for lookups and compaction: its base HFile and the blocks of its
logs, in order. A key's newest value wins; a log's ``DELETE`` block removes keys.

Each index says how its HFile values decode (``decode``), how a compaction writes them again
naming the new base file (``encode``), and which values a compaction keeps (``live``).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from hudiql.formats import hfile
from hudiql.formats import log_file as L
from hudiql.metadata.records import SCHEMA_JSON


class IndexSlice:
    """A slice of base HFile content (bytes or a ``RangedFile``; None for a group without one) and
    the contents of its logs, in order (those of instants readers use only). A lookup reads, newest
    first, only the blocks of each HFile that may hold its keys."""

    def __init__(self, base: bytes | hfile.RangedFile | None, logs: list[tuple[str, bytes]], path: str) -> None:
        self._base = hfile.HFile(base, path) if base is not None else None
        self._schema = (self._base.file_info.get("schema") or SCHEMA_JSON.encode()).decode() if self._base else ""
        # The logs' blocks in order: (HFile of keys written, its schema) or the set of deleted keys.
        self._blocks: list[tuple[hfile.HFile, str] | set[bytes]] = []
        for log_path, content in logs:
            for block in L.read_blocks(content, log_path, (L.HFILE_DATA,)):
                if block.block_type == L.HFILE_DATA:
                    self._blocks.append((hfile.HFile(block.content, log_path), block.header.get(L.SCHEMA) or SCHEMA_JSON))
                elif block.block_type == L.DELETE:
                    self._blocks.append({d.record_key.encode() for d in L.read_deletes(block, log_path)})

    @staticmethod
    def decode(value: bytes, writer_schema: str) -> Any:
        """An HFile value written with ``writer_schema`` (JSON), decoded."""
        raise NotImplementedError

    @staticmethod
    def encode(decoded: Any, file_name: str) -> bytes:
        """A decoded value as the HFile value of base file ``file_name``."""
        raise NotImplementedError

    @staticmethod
    def live(decoded: Any) -> bool:
        """Whether a compaction keeps the value (not a tombstone)."""
        return True

    def lookup(self, keys: Iterable[str]) -> dict[str, Any]:
        """The decoded newest value of each of ``keys`` the slice holds."""
        remaining = {k.encode() for k in keys}
        found: dict[str, Any] = {}
        for block in reversed(self._blocks):
            if not remaining:
                break
            if isinstance(block, set):
                remaining -= block
                continue
            data, schema = block
            for key, value in list(data.get_many(sorted(remaining))):
                found[key.decode()] = self.decode(value, schema)
                remaining.discard(key)
        if self._base is not None and remaining:
            for key, value in self._base.get_many(sorted(remaining)):
                found[key.decode()] = self.decode(value, self._schema)
        return found

    def entries(self, file_name: str) -> Iterator[tuple[bytes, bytes]]:
        """Every live (key, value) of the slice, in key order: what a compaction writes as the
        group's new base file ``file_name`` (whose values name it)."""
        merged: dict[bytes, tuple[bytes, str]] = {}
        if self._base is not None:
            merged = {k: (v, self._schema) for k, v in self._base.entries()}
        for block in self._blocks:
            if isinstance(block, set):
                for key in block:
                    merged.pop(key, None)
            else:
                data, schema = block
                merged.update((k, (v, schema)) for k, v in data.entries())
        for key in sorted(merged):
            decoded = self.decode(*merged[key])
            if self.live(decoded):
                yield key, self.encode(decoded, file_name)
