"""Bucket assignment for inserts, as Hudi's upsert partitioning assigns them.

Per partition, inserts first fill the small file groups (base file under the small-file limit)
up to the target file size, then go to new file groups sized by the record-size estimate.
A record picks its bucket by a hash of its key mapped onto the buckets' cumulative weights,
so the assignment runs inside Spark with no per-row state.

Example:
    >>> buckets = assign_inserts({"dt=1": 250}, small_files={}, record_size=100, max_file_size=10_000)
    >>> [(b.partition_path, b.weight) for b in buckets]
    [('dt=1', 0.4), ('dt=1', 0.4), ('dt=1', 0.2)]
"""

from __future__ import annotations

from dataclasses import dataclass

from hudiql.config import registry
from hudiql.file_group import FileSlice
from hudiql.layout import new_file_id

DEFAULT_MAX_FILE_SIZE = int(registry.KEYS[registry.MAX_FILE_SIZE].default)


@dataclass(frozen=True)
class Bucket:
    """A file group that receives a share (``weight``) of a partition's inserts."""

    partition_path: str
    file_id: str
    base_file: str | None  # an existing small file's base file, merged with the inserts
    weight: float
    low: float = 0.0  # [low, high) of the partition's hash range

    @property
    def high(self) -> float:
        return self.low + self.weight


def assign_inserts(
    insert_counts: dict[str, int],
    small_files: dict[str, list[FileSlice]],
    record_size: int,
    max_file_size: int = DEFAULT_MAX_FILE_SIZE,
) -> list[Bucket]:
    """Buckets for each partition's inserts; each partition's weights add up to 1."""
    per_file = max(1, max_file_size // max(1, record_size))
    buckets: list[Bucket] = []
    for partition, count in sorted(insert_counts.items()):
        if count <= 0:
            continue
        shares: list[tuple[str, str | None, int]] = []
        remaining = count
        for small in sorted(small_files.get(partition, []), key=lambda s: s.base_file_size):
            room = (max_file_size - small.base_file_size) // max(1, record_size)
            if remaining <= 0 or room <= 0:
                continue
            take = min(room, remaining)
            shares.append((small.file_id, small.base_file, take))
            remaining -= take
        while remaining > 0:
            take = min(per_file, remaining)
            shares.append((new_file_id(), None, take))
            remaining -= take
        low = 0.0
        for file_id, base_file, take in shares:
            weight = take / count
            buckets.append(Bucket(partition, file_id, base_file, weight, low))
            low += weight
    return buckets
