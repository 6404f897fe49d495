"""File system view: partitions, file groups and file slices, as of the completed timeline.

A file group (partition path + file id) holds slices; a slice is a base file plus the log
files written on top of it, named by its base instant. Files of instants that did not
complete are invisible, and so are file groups a completed replacecommit replaced.

Example:
    >>> view = FileSystemView.load(storage, timeline)
    >>> [s.base_file for s in view.latest_slices()]
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass, field

from hudiql.io.storage import Storage
from hudiql.table.commit import CommitMetadata
from hudiql.table.layout import META_FOLDER, join_partition, parse_data_file_name
from hudiql.table.timeline import COMPACTION, REPLACE_COMMIT, Instant, State, Timeline


@dataclass
class FileSlice:
    partition_path: str
    file_id: str
    base_instant: str
    base_file: str | None = None  # file name, or None for a log-only slice
    base_file_size: int = 0
    log_files: list[str] = field(default_factory=list)

    @property
    def base_path(self) -> str | None:
        """The base file's path relative to the table root."""
        return join_partition(self.partition_path, self.base_file) if self.base_file else None


@dataclass
class FileGroup:
    partition_path: str
    file_id: str
    slices: dict[str, FileSlice] = field(default_factory=dict)  # base instant -> slice

    def latest_slice(self, as_of: str | None = None) -> FileSlice | None:
        instants = sorted(i for i in self.slices if as_of is None or i <= as_of)
        return self.slices[instants[-1]] if instants else None


class FileSystemView:
    """Every visible file group of a table, from one listing of its storage."""

    def __init__(self, groups: dict[tuple[str, str], FileGroup], replaced: set[tuple[str, str]]) -> None:
        self.groups = groups
        self.replaced = replaced

    @classmethod
    def load(cls, storage: Storage, timeline: Timeline, partitions: list[str] | None = None) -> FileSystemView:
        """List the table (or only ``partitions``) and keep what completed instants wrote."""
        completed = timeline.completed_times()
        # A pending compaction opens a new slice at its instant: writes after it go to that slice.
        pending_compactions = {i.timestamp for i in timeline.instants if i.action == COMPACTION and i.state is not State.COMPLETED}
        groups: dict[tuple[str, str], FileGroup] = {}
        for info in _list_data_files(storage, partitions):
            parsed = parse_data_file_name(info.name)
            if parsed is None:
                continue
            partition = posixpath.dirname(info.path)
            if partition == ".":
                partition = ""
            key = (partition, parsed.file_id)
            group = groups.setdefault(key, FileGroup(partition, parsed.file_id))
            if parsed.is_log:
                # Which log blocks are visible is decided by the blocks' instants when reading.
                slice_ = group.slices.setdefault(
                    parsed.instant_time, FileSlice(partition, parsed.file_id, parsed.instant_time)
                )
                slice_.log_files.append(info.name)
            elif parsed.instant_time in completed:
                slice_ = group.slices.setdefault(
                    parsed.instant_time, FileSlice(partition, parsed.file_id, parsed.instant_time)
                )
                slice_.base_file = info.name
                slice_.base_file_size = info.size
        for group in groups.values():
            for instant, slice_ in list(group.slices.items()):
                if slice_.base_file is None and instant not in completed and instant not in pending_compactions:
                    del group.slices[instant]  # logs over a base file whose write never completed
                slice_.log_files.sort(key=_log_sort_key)
        replaced = _replaced_file_groups(timeline)
        return cls({k: g for k, g in groups.items() if g.slices}, replaced)

    def partitions(self) -> list[str]:
        return sorted({p for p, _ in self.groups if (p, _) not in self.replaced})

    def file_groups(self, partition: str | None = None) -> list[FileGroup]:
        return [
            g for key, g in sorted(self.groups.items())
            if key not in self.replaced and (partition is None or g.partition_path == partition)
        ]

    def latest_slices(self, partition: str | None = None, as_of: str | None = None) -> list[FileSlice]:
        out = []
        for group in self.file_groups(partition):
            latest = group.latest_slice(as_of)
            if latest is not None:
                out.append(latest)
        return out


def _log_sort_key(name: str) -> tuple[int, str]:
    parsed = parse_data_file_name(name)
    assert parsed is not None and parsed.log_version is not None
    return (parsed.log_version, parsed.token or "")


def _list_data_files(storage: Storage, partitions: list[str] | None):
    if partitions is None:
        infos = storage.list("", recursive=True)
        return [i for i in infos if not i.is_dir and not i.path.startswith(META_FOLDER + "/")]
    out = []
    for partition in partitions:
        out.extend(i for i in storage.list(partition) if not i.is_dir)
    return out


def _replaced_file_groups(timeline: Timeline) -> set[tuple[str, str]]:
    replaced: set[tuple[str, str]] = set()
    for instant in timeline.completed((REPLACE_COMMIT,)):
        meta = read_commit_metadata(timeline, instant)
        for partition, file_ids in meta.partition_to_replace_file_ids.items():
            replaced.update((partition, f) for f in file_ids)
    return replaced


def read_commit_metadata(timeline: Timeline, instant: Instant) -> CommitMetadata:
    """Commit metadata of a completed instant."""
    return CommitMetadata.decode(timeline.read(instant))
