"""File system view: partitions, file groups and file slices (``hudiql.file_group``), as of the
completed timeline.

Files of instants that did not complete are invisible, and so are file groups a completed
replacecommit replaced.

Example: two writes of one file group; the second never completed.
    >>> from hudiql.timeline.commit import WriteStat
    >>> from hudiql.config.table_config import TableConfig
    >>> storage = Storage(warehouse + "/orders")
    >>> TableConfig({"hoodie.table.name": "orders"}).save(storage)
    >>> for t in ("20240101000000000", "20240102000000000"):
    ...     _ = Timeline.load(storage).start("commit", t)
    ...     storage.write(f"dt=1/f-0_0-1-0_{t}.parquet", b"rows")
    >>> meta = CommitMetadata(write_stats=[WriteStat("f-0", "dt=1", "dt=1/f-0_0-1-0_20240101000000000.parquet")])
    >>> timeline = Timeline.load(storage)
    >>> _ = timeline.complete(timeline.pending()[0], meta.to_json())
    >>> view = FileSystemView.load(storage, Timeline.load(storage))
    >>> view.partitions(), [s.base_path for s in view.latest_slices()]
    (['dt=1'], ['dt=1/f-0_0-1-0_20240101000000000.parquet'])
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable
from dataclasses import dataclass

from hudiql.errors import damaged_file
from hudiql.file_group import FileGroup, FileSlice
from hudiql.io.storage import FileInfo, Storage
from hudiql.timeline.commit import CommitMetadata
from hudiql.timeline.compaction_plan import decode_plan
from hudiql.layout import META_FOLDER, join_partition, parse_data_file_name, partition_of
from hudiql.timeline.active import (
    COMPACTION,
    DELTA_COMMIT,
    REPLACE_COMMIT,
    Instant,
    Timeline,
)


class FileSystemView:
    """Every visible file group of a table, from one listing of its storage."""

    def __init__(
        self, groups: dict[tuple[str, str], FileGroup], replaced: set[tuple[str, str]], pending_compactions: set[str]
    ) -> None:
        self.groups = groups
        self.replaced = replaced
        self.pending_compactions = pending_compactions

    @classmethod
    def empty(cls) -> FileSystemView:
        """No file group: what an overwrite writes into (its new rows never join a stored group)."""
        return cls({}, set(), set())

    @classmethod
    def load(cls, storage: Storage, timeline: Timeline, partitions: list[str] | None = None,
             listing: list[FileInfo] | None = None) -> FileSystemView:
        """List the table (or only ``partitions``; ``listing``: the files as the metadata table
        lists them, instead of storage) and keep what completed instants wrote.

        A log file is visible when a completed delta commit lists it in its write stats (layout 1),
        or when the delta commit its name carries completed (layout 2); the files of a crashed
        write are never opened. Instants older than the active timeline were archived, so their
        files are visible too; a layout 1 log on such a slice is opened even when no delta commit
        on the timeline lists it, and its blocks are filtered by instant (``read.merged``). A
        layout 1 log belongs to the slice its name carries; a layout 2 log to the slice its delta
        commit's completion time falls in. A pending compaction opens
        a new, empty slice for each file group it plans: writes after it go there, and readers
        merge it with the slice before.

        Only the completed writes since the oldest newest base file of a group are read
        (``_live_since``): the history before it adds nothing to the cost of loading the table.
        The logs of older slices are left out: no reader merges them. What those writes wrote to
        live slices must be there, whole (``_check_written``): a missing or cut file is an error,
        never a read of fewer or older rows.
        """
        committed = timeline.committed()
        completion = completion_times(timeline)
        pending = {i.timestamp: i for i in timeline.instants if i.action == COMPACTION and not i.is_completed}
        groups: dict[tuple[str, str], FileGroup] = {}
        candidates: list[tuple[FileGroup, str, str, str, int]] = []  # group, name instant, name, path, size
        for info in list_data_files(storage, partitions) if listing is None else listing:
            parsed = parse_data_file_name(info.name)
            if parsed is None:
                continue
            partition = partition_of(info.path)
            group = groups.setdefault((partition, parsed.file_id), FileGroup(partition, parsed.file_id))
            if parsed.is_log:
                group.all_log_versions.setdefault(parsed.instant_time, set()).add(parsed.log_version)
                candidates.append((group, parsed.instant_time, info.name, info.path, info.size))
            elif parsed.instant_time in committed:
                group.slices[parsed.instant_time] = FileSlice(
                    partition, parsed.file_id, parsed.instant_time, info.name, info.size
                )
        for instant in pending.values():
            for op in decode_plan(timeline.read_requested(instant)):
                group = groups.get((op.partition_path, op.file_id))
                if group is not None:
                    group.slices.setdefault(instant.timestamp, FileSlice(op.partition_path, op.file_id, instant.timestamp))
        written = _written_since(timeline, _live_since(groups, candidates))
        # Layout 2 names each log by its delta commit, whose completion decides; layout 1 needs the write stats.
        committed_logs = (
            {w.path for w in written if w.is_log} if timeline.layout_version < 2 else set()
        )
        visible = [c for c in candidates
                   if c[3] in committed_logs or c[1] in completion or committed.archived(c[1])]
        slice_of: dict[tuple[int, str], str] = {}  # (group, delta commit) -> base instant, on layout 2
        if timeline.layout_version >= 2:
            delta_commits: dict[int, tuple[FileGroup, set[str]]] = {}
            for group, name_instant, *_ in visible:
                delta_commits.setdefault(id(group), (group, set()))[1].add(name_instant)
            for group, instants in delta_commits.values():
                placed = log_slices(group.slices, instants, completion)
                slice_of.update(((id(group), t), base) for t, base in placed.items())
        for group, name_instant, name, path, size in visible:
            base_instant = slice_of.get((id(group), name_instant), name_instant)
            slice_ = group.slices.setdefault(
                base_instant, FileSlice(group.partition_path, group.file_id, base_instant)
            )
            slice_.log_files.append(name)
            slice_.log_size += size
        for group in groups.values():
            for slice_ in group.slices.values():
                slice_.log_files.sort(key=_log_sort_key)
        replaced = _replaced_file_groups(timeline)
        listed = {(g.partition_path, name): size for g, _, name, _, size in candidates}
        listed.update(((s.partition_path, s.base_file), s.base_file_size)
                      for g in groups.values() for s in g.slices.values() if s.base_file)
        _check_written(groups, listed, written, replaced, completion, partitions)
        return cls({k: g for k, g in groups.items() if g.slices}, replaced, set(pending))

    def only(self, partitions: list[str]) -> FileSystemView:
        """The same view, of ``partitions`` only."""
        wanted = set(partitions)
        return FileSystemView({k: g for k, g in self.groups.items() if k[0] in wanted}, self.replaced,
                              self.pending_compactions)

    def partitions(self) -> list[str]:
        return sorted({p for p, _ in self.groups if (p, _) not in self.replaced})

    def file_groups(self, partition: str | None = None) -> list[FileGroup]:
        return [
            g for key, g in sorted(self.groups.items())
            if key not in self.replaced and (partition is None or g.partition_path == partition)
        ]

    def latest_slices(self, partition: str | None = None) -> list[FileSlice]:
        """The latest slice of every live file group: where new log files go."""
        out = []
        for group in self.file_groups(partition):
            latest = group.latest_slice()
            if latest is not None:
                out.append(latest)
        return out

    def log_targets(self, delta_commit: str | None = None) -> list[tuple[str, str, str | None, str, int]]:
        """Per live file group: (partition path, file id, base file of its latest slice, the
        instant and version its new log file is named by). On timeline layout 1 a log file is
        named by its slice's base instant, with the slice's next version; on layout 2 by its own
        ``delta_commit``, version 1 (a slice takes the logs whose delta commit completed after its base)."""
        return [
            (s.partition_path, s.file_id, s.base_file, s.base_instant,
             self.groups[(s.partition_path, s.file_id)].next_log_version(s.base_instant))
            if delta_commit is None else (s.partition_path, s.file_id, s.base_file, delta_commit, 1)
            for s in self.latest_slices()
        ]

    def read_slices(self, partition: str | None = None) -> list[FileSlice]:
        """What readers merge per file group: the latest slice, joined with the slices before it
        while their compactions are pending (the new base files do not exist yet)."""
        out = []
        for group in self.file_groups(partition):
            ordered = [group.slices[t] for t in sorted(group.slices)]
            merged = ordered.pop()
            while merged.base_file is None and merged.base_instant in self.pending_compactions and ordered:
                before = ordered.pop()
                # One slice's logs, in Hudi's log order: a delta commit that completed after the plan
                # may have begun before one the plan holds (non-blocking concurrency control).
                merged = FileSlice(before.partition_path, before.file_id, before.base_instant, before.base_file,
                                   before.base_file_size,
                                   sorted(before.log_files + merged.log_files, key=_log_sort_key),
                                   before.log_size + merged.log_size)
            out.append(merged)
        return out


def completion_times(timeline: Timeline) -> dict[str, str]:
    """Completion time per completed delta commit, where the timeline records it: only layout 2
    names carry one (``T_C.deltacommit``), so this is empty for layout 1."""
    return {i.timestamp: i.completion_time for i in timeline.completed((DELTA_COMMIT,)) if i.completion_time}


def log_slice(base_instants: Iterable[str], delta_commit: str, completion_time: str) -> str:
    """The base instant of the slice a v8 log file (named by its delta commit) belongs to, among
    the slices of its file group (``base_instants``).

    As in Hudi 1.x, the latest slice begun at or before the delta commit *completed*: a delta
    commit that started before a compaction was planned but finished after it is not in the
    plan, so its log goes on top of the compacted slice, not into the one compaction replaced.
    A delta commit archived out of the active timeline passes its request time instead: hudiql
    does not read the archived (LSM) timeline, where Hudi 1.x looks its completion time up.
    """
    earlier = [t for t in base_instants if t <= completion_time]
    return max(earlier) if earlier else delta_commit


def log_slices(base_instants: Iterable[str], delta_commits: Iterable[str], completion: dict[str, str]) -> dict[str, str]:
    """The base instant of the slice each of a file group's v8 log files belongs to, by the
    delta commit that names it (``log_slice``), taken in instant order: a file group without a base
    file (begun by logs, as non-blocking concurrency control begins a bucket) has its first slice
    at its oldest log, which the later logs join.

    >>> log_slices([], ["3", "1"], {"1": "2", "3": "4"})    # log-only: both join the slice begun at 1
    {'1': '1', '3': '1'}
    >>> log_slices(["2"], ["1", "3"], {"1": "4", "3": "5"})  # completed after the base at 2
    {'1': '2', '3': '2'}
    """
    starts = set(base_instants)
    out: dict[str, str] = {}
    for delta_commit in sorted(set(delta_commits)):
        out[delta_commit] = log_slice(starts, delta_commit, completion.get(delta_commit, delta_commit))
        starts.add(out[delta_commit])
    return out


def _log_sort_key(name: str) -> tuple[str, int, str]:
    """Hudi's log file order: by the instant in the name, then version, then write token.

    v6 logs of one slice share the instant; v8 names each log by its own delta commit and
    restarts versions at 1, so without the instant a later log whose write token happens to
    sort first (a new Spark application restarts stage ids) would be merged too early.
    """
    parsed = parse_data_file_name(name)
    assert parsed is not None and parsed.log_version is not None
    return (parsed.instant_time, parsed.log_version, parsed.token or "")


def list_data_files(storage: Storage, partitions: list[str] | None) -> list[FileInfo]:
    """The files of the table's partitions (all of them, or ``partitions``), ``.hoodie/`` aside."""
    if partitions is None:
        infos = storage.list("", recursive=True)
        return [i for i in infos if not i.is_dir and not i.path.startswith(META_FOLDER + "/")]
    out = []
    for partition in partitions:
        out.extend(i for i in storage.list(partition) if not i.is_dir)
    return out


def _live_since(groups: dict[tuple[str, str], FileGroup], candidates: list[tuple[FileGroup, str, str, str, int]]) -> str:
    """The oldest instant that can have written a file of a live slice: the newest committed base
    file of each file group (a group without one counts from its oldest log), the oldest of them.

    On layout 1 a delta commit writes only to slices begun before it (a write claims its instant
    under the lock plans are made under, ``transaction.write_transaction``, and one to a file
    group a compaction planned meanwhile fails at its commit, ``transaction.conflict``); on layout
    2 a log belongs to the slice its delta commit's *completion* falls in (``_written_since``
    compares completion times). The live slices of a file group begin at its newest base file
    (later ones are pending compactions), and readers never merge the files of older slices.
    """
    oldest_log: dict[int, str] = {}  # per file group (by identity)
    for group, name_instant, *_ in candidates:
        oldest_log[id(group)] = min(name_instant, oldest_log.get(id(group), name_instant))
    floors = []
    for group in groups.values():
        bases = [t for t, s in group.slices.items() if s.base_file]
        floor = max(bases) if bases else oldest_log.get(id(group))
        if floor is not None:
            floors.append(floor)
    return min(floors, default="")


@dataclass(frozen=True)
class _Written:
    """A data file a completed instant wrote, as its write stats (or compaction plan) name it."""

    instant: Instant
    partition_path: str
    file_id: str
    name: str | None  # None: a compaction's base file, whose name the plan does not carry
    size: int  # bytes when the instant completed; 0 when not recorded

    @property
    def path(self) -> str:
        return join_partition(self.partition_path, self.name or "")

    @property
    def is_log(self) -> bool:
        parsed = parse_data_file_name(self.name or "")
        return parsed is not None and parsed.is_log


def _written_since(timeline: Timeline, since: str) -> list[_Written]:
    """The data files completed writes at or after ``since`` wrote (completed, on layout 2: a
    delta commit begun before a compaction was planned may complete into the slice it opened):
    from their write stats, or for a compaction from its plan (one base file per file group it compacts)."""
    out: list[_Written] = []
    for instant in timeline.completed():
        if (instant.completion_time or instant.timestamp) < since:
            continue
        if instant.action == COMPACTION and timeline.storage.exists(timeline.requested_path(instant)):
            out.extend(_Written(instant, op.partition_path, op.file_id, None, 0)
                       for op in decode_plan(timeline.read_requested(instant)))
            continue
        for stat in read_commit_metadata(timeline, instant).write_stats:
            name = posixpath.basename(stat.path or "")
            if parse_data_file_name(name) is not None:
                out.append(_Written(instant, stat.partition_path, stat.file_id, name, stat.file_size_in_bytes))
            out.extend(_Written(instant, stat.partition_path, stat.file_id, log, 0)
                       for log in stat.log_files if log != name)
    return out


def _check_written(
    groups: dict[tuple[str, str], FileGroup],
    listed: dict[tuple[str, str], int],
    written: list[_Written],
    replaced: set[tuple[str, str]],
    completion: dict[str, str],
    partitions: list[str] | None,
) -> None:
    """Refuse to read a table when a file of a live slice that a completed instant wrote is
    missing or shorter than it was written: the query would return fewer or older rows in silence.

    A file is live unless a newer base file of its file group was written (cleaning may then
    remove it) or its file group was replaced. A base file cannot be empty.
    """
    by_identity: dict[tuple, int] = {}  # a log file named with another write token than its stats name
    for (partition, name), size in listed.items():
        by_identity[_identity(partition, name)] = max(size, by_identity.get(_identity(partition, name), 0))
    newest_base: dict[tuple[str, str], str] = {}
    for key, group in groups.items():
        for t, slice_ in group.slices.items():
            if slice_.base_file:
                newest_base[key] = max(t, newest_base.get(key, t))
    for w in written:
        if w.name is None or not w.is_log:
            key = (w.partition_path, w.file_id)
            newest_base[key] = max(w.instant.timestamp, newest_base.get(key, w.instant.timestamp))
    for w in written:
        key = (w.partition_path, w.file_id)
        if key in replaced or (partitions is not None and w.partition_path not in partitions):
            continue
        if _slice_of(w, groups.get(key), completion) < newest_base.get(key, ""):
            continue  # an older slice's file: cleaning may have removed it
        if w.name is None:
            group = groups.get(key)
            slice_ = group.slices.get(w.instant.timestamp) if group else None
            if slice_ is None or not slice_.base_file:
                raise damaged_file(
                    f"the base file of file group {w.file_id} in partition '{w.partition_path}'",
                    f"is missing (compaction {w.instant.file_name} wrote it)",
                )
        elif (size := listed.get((w.partition_path, w.name),
                                 by_identity.get(_identity(w.partition_path, w.name)))) is None:
            raise damaged_file(w.path, f"is missing ({w.instant.file_name} wrote it)")
        elif size < w.size:
            raise damaged_file(w.path, f"is truncated: {size} bytes, {w.instant.file_name} wrote {w.size}")
    for key, newest in newest_base.items():
        slice_ = groups[key].slices.get(newest) if key in groups else None
        if slice_ is not None and slice_.base_file and slice_.base_file_size == 0:
            raise damaged_file(slice_.base_path, "is empty")


def _identity(partition_path: str, name: str) -> tuple:
    """What identifies a data file: a base file by its name, a log file by its file group,
    instant and version, not by the write token (which names the task attempt that wrote it).
    Only a file listed under no exact name is looked up by it: on table version 6 two writers of
    one file group name their logs alike but for the token, and the loser's may still be growing."""
    parsed = parse_data_file_name(name)
    if parsed is None or not parsed.is_log:
        return (partition_path, name)
    return (partition_path, parsed.file_id, parsed.instant_time, parsed.log_version)


def _slice_of(w: _Written, group: FileGroup | None, completion: dict[str, str]) -> str:
    """The base instant of the slice a written file belongs to."""
    parsed = parse_data_file_name(w.name or "")
    if parsed is None or not parsed.is_log:
        return w.instant.timestamp
    if w.instant.timestamp not in completion or group is None:
        return parsed.instant_time  # layout 1: the log's name carries its slice
    return log_slice(group.slices, w.instant.timestamp, completion[w.instant.timestamp])


def _replaced_file_groups(timeline: Timeline) -> set[tuple[str, str]]:
    replaced: set[tuple[str, str]] = set()
    for instant in timeline.completed((REPLACE_COMMIT,)):
        meta = read_commit_metadata(timeline, instant)
        for partition, file_ids in meta.partition_to_replace_file_ids.items():
            replaced.update((partition, f) for f in file_ids)
    return replaced


def read_commit_metadata(timeline: Timeline, instant: Instant) -> CommitMetadata:
    """Commit metadata of a completed instant."""
    return CommitMetadata.decode(timeline.read(instant), instant.file_name)
