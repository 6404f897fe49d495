"""File groups and file slices: where a Hudi table keeps its records.

A file group (partition path + file id) holds slices; a slice is a base file plus the log files
written on top of it, named by its base instant.
- ``log_file/scanner``: the scanner of a slice's log files (their format is ``formats.log_file``);
- ``reader``: a slice's records, its base file merged with its logs.
Which groups and slices a table has at an instant is the file-system view's (``table.fsview``).

Example:
    >>> group = FileGroup("dt=1", "f-0")
    >>> group.slices["001"] = FileSlice("dt=1", "f-0", "001", "f-0_0-1-0_001.parquet")
    >>> group.slices["002"] = FileSlice("dt=1", "f-0", "002", "f-0_0-2-0_002.parquet",
    ...                                 log_files=[".f-0_002.log.1_0-3-0"])
    >>> group.latest_slice().base_path, group.latest_slice().log_files
    ('dt=1/f-0_0-2-0_002.parquet', ['.f-0_002.log.1_0-3-0'])
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hudiql.layout import join_partition


@dataclass
class FileSlice:
    partition_path: str
    file_id: str
    base_instant: str
    base_file: str | None = None  # file name, or None for a log-only slice
    base_file_size: int = 0
    log_files: list[str] = field(default_factory=list)
    log_size: int = 0  # bytes of the log files

    @property
    def base_path(self) -> str | None:
        """The base file's path relative to the table root."""
        return join_partition(self.partition_path, self.base_file) if self.base_file else None


@dataclass
class FileGroup:
    partition_path: str
    file_id: str
    slices: dict[str, FileSlice] = field(default_factory=dict)  # base instant -> slice
    # log versions on storage per base instant, visible or not: new log files must not reuse one
    all_log_versions: dict[str, set[int]] = field(default_factory=dict)

    def next_log_version(self, base_instant: str) -> int:
        return max(self.all_log_versions.get(base_instant, {0})) + 1

    def latest_slice(self) -> FileSlice | None:
        return self.slices[max(self.slices)] if self.slices else None
