"""Cleaning: delete the file slices no reader needs any more, as Hudi's cleaner does.

A clean is an instant of its own, in Hudi's format (``timeline.clean_plan``):
1. ``schedule``, under the table lock: the policy gives the earliest commit to retain; in the
   partitions written since the last clean's (``hoodie.cleaner.incremental.mode``), each file
   group's slices the policy lets go are planned for deletion, with the file groups replaced
   before that commit. The plan is ``<t>.clean.requested``; a clean with nothing to delete
   writes no instant.
2. ``execute``: ``<t>.clean.inflight`` (the plan again), the files are deleted, and
   ``<t>.clean`` records what went. A clean that crashed half way is finished by the next one:
   deleting is idempotent, and readers never read what a plan names (only slices older than a
   file group's latest, and replaced file groups).

What is never deleted: the latest slice of a live file group; a slice a savepoint names; the
slice a pending compaction compacts; any file of an instant that did not complete.

Policies (``hoodie.cleaner.policy``):
- KEEP_LATEST_COMMITS: readers can still query the table as of the last
  ``hoodie.cleaner.commits.retained`` commits: of the slices begun before the earliest of them,
  only the newest is kept. The earliest commit to retain never passes a pending write.
- KEEP_LATEST_BY_HOURS: the same, from the first commit of the last
  ``hoodie.cleaner.hours.retained`` hours.
- KEEP_LATEST_FILE_VERSIONS: the newest ``hoodie.cleaner.fileversions.retained`` slices of each
  file group.
"""

from __future__ import annotations

import posixpath
import time
from contextlib import nullcontext
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone

from hudiql.errors import HudiqlError
from hudiql.config import registry as K
from hudiql.config.settings import Settings
from hudiql.timeline.clean_plan import CleanerPlan, CleanMetadata, decode_metadata, decode_plan, encode_metadata, encode_plan
from hudiql.timeline.compaction_plan import decode_plan as decode_compaction_plan
from hudiql.table.fsview import completion_times, list_data_files, log_slices, read_commit_metadata
from hudiql.table.metadata_table import FileChanges
from hudiql.layout import DataFileName, parse_data_file_name, partition_of
from hudiql.timeline.savepoint import savepointed_files
from hudiql.table.table import HudiTable
from hudiql.timeline.active import (
    CLEAN,
    CLUSTERING,
    COMMIT,
    COMPACTION,
    DELTA_COMMIT,
    LOG_COMPACTION,
    REPLACE_COMMIT,
    SAVEPOINT,
    CommittedInstants,
    Instant,
    State,
    Timeline,
    format_instant_time,
)
from hudiql.transaction.lock import commit_lock
from hudiql.index.record_index import KEYS_STAY
from hudiql.transaction.metadata_commit import keeps_metadata_table, recording
from hudiql.transaction.prologue import locked, open_for_write

#: The instants whose count the retention policies measure, pending ones included.
_COMMIT_ACTIONS = (COMMIT, DELTA_COMMIT, REPLACE_COMMIT, COMPACTION, LOG_COMPACTION, CLUSTERING)


@dataclass
class _Slice:
    """The files of one file slice on storage: a base file (maybe) and log files."""

    base_instant: str
    files: list[str] = field(default_factory=list)  # paths relative to the table

    def names(self) -> set[str]:
        return {posixpath.basename(f) for f in self.files}


def earliest_commit_to_retain(timeline: Timeline, settings: Settings, now: datetime) -> Instant | None:
    """The oldest commit whose view of the table readers keep; ``None``: nothing may be cleaned
    by commit age (too few commits, or the policy keeps file versions)."""
    policy = settings.choice(K.CLEANER_POLICY)
    completed = timeline.completed(_COMMIT_ACTIONS)
    if policy == K.KEEP_LATEST_COMMITS:
        retained = settings.number(K.CLEANER_COMMITS_RETAINED)
        if len(completed) <= retained:
            return None
        earliest = completed[len(completed) - retained]
        pending = timeline.pending(_COMMIT_ACTIONS)
        if pending and earliest.timestamp > pending[0].timestamp:
            # A pending write reads the table as of its start: keep that view.
            before = [i for i in completed if i.timestamp < pending[0].timestamp]
            return before[-1] if before else None
        return earliest
    if policy == K.KEEP_LATEST_BY_HOURS:
        hours = settings.number(K.CLEANER_HOURS_RETAINED)
        floor = format_instant_time(now - timedelta(hours=hours))
        return next((i for i in completed if i.timestamp >= floor), None)
    return None


def _last_clean(timeline: Timeline) -> Instant | None:
    cleans = timeline.completed((CLEAN,))
    return cleans[-1] if cleans else None


def is_due(timeline: Timeline, settings: Settings) -> bool:
    """``hoodie.clean.max.commits`` commits completed since the last clean (NUM_COMMITS, the
    only trigger)."""
    last = _last_clean(timeline)
    since = [i for i in timeline.completed(_COMMIT_ACTIONS) if last is None or i.timestamp > last.timestamp]
    return len(since) >= settings.number(K.CLEAN_MAX_COMMITS)


def _partitions_to_clean(table: HudiTable, earliest: Instant | None) -> list[str] | None:
    """The partitions a clean must look at; ``None``: all of them.

    Incrementally, the partitions where a file group got a new slice (a rewrite or a compaction:
    a write stat with a previous commit) or was replaced, from the last clean's earliest retained
    commit up to this one's: a slice becomes cleanable only when a newer one is written before the
    earliest retained commit, and the last clean saw everything written before its own. A table
    that only grows by new file groups lists nothing.
    """
    timeline = table.timeline
    last = _last_clean(timeline)
    policy = table.settings.choice(K.CLEANER_POLICY)
    if (earliest is None or last is None or policy == K.KEEP_LATEST_FILE_VERSIONS
            or not table.settings.flag(K.CLEANER_INCREMENTAL)):
        return None
    since = decode_metadata(timeline.read(last)).earliest_commit_to_retain
    committed = timeline.committed()
    if not since or committed.start is None or since < committed.start:
        return None  # the commits since then were archived: look everywhere
    partitions: set[str] = set()
    for instant in timeline.completed(_COMMIT_ACTIONS):
        if since <= instant.timestamp < earliest.timestamp:
            meta = read_commit_metadata(timeline, instant)
            partitions.update(s.partition_path for s in meta.write_stats if s.prev_commit not in ("null", ""))
            partitions.update(meta.partition_to_replace_file_ids)
    return sorted(partitions)


def _file_groups(table: HudiTable, partitions: list[str] | None,
                 committed: CommittedInstants) -> dict[tuple[str, str], dict[str, _Slice]]:
    """Per file group, its slices of completed instants on storage (files of pending or failed
    writes are left out: they are not this service's to delete). A slice is named by its base
    instant; on timeline layout 2 a log file, named by its delta commit, joins the slice its delta
    commit completed in (``fsview.log_slices``)."""
    completion = completion_times(table.timeline) if table.timeline.layout_version >= 2 else {}
    files: dict[tuple[str, str], list[tuple[DataFileName, str]]] = {}
    for info in list_data_files(table.storage, partitions):
        parsed = parse_data_file_name(info.name)
        if parsed is not None and parsed.instant_time in committed:
            files.setdefault((partition_of(info.path), parsed.file_id), []).append((parsed, info.path))
    groups: dict[tuple[str, str], dict[str, _Slice]] = {}
    for key, named in files.items():
        bases = {p.instant_time for p, _ in named if not p.is_log}
        placed = log_slices(bases, [p.instant_time for p, _ in named if p.is_log], completion) if completion else {}
        slices = groups[key] = {}
        for parsed, path in named:
            slice_time = placed.get(parsed.instant_time, parsed.instant_time) if parsed.is_log else parsed.instant_time
            slices.setdefault(slice_time, _Slice(slice_time)).files.append(path)
    return groups


def _replaced_before(timeline: Timeline, earliest: Instant | None) -> set[tuple[str, str]]:
    """File groups replaced by replacecommits before ``earliest`` (any, when ``None``)."""
    out: set[tuple[str, str]] = set()
    for instant in timeline.completed((REPLACE_COMMIT,)):
        if earliest is None or instant.timestamp < earliest.timestamp:
            meta = read_commit_metadata(timeline, instant)
            out.update((p, f) for p, ids in meta.partition_to_replace_file_ids.items() for f in ids)
    return out


def _savepointed(timeline: Timeline) -> set[str]:
    return {name for i in timeline.completed((SAVEPOINT,)) for name in savepointed_files(timeline.read(i))}


def _compacting(timeline: Timeline) -> set[tuple[str, str, str]]:
    """(partition, file id, base instant) of every slice a pending compaction compacts."""
    return {
        (op.partition_path, op.file_id, op.base_instant)
        for i in timeline.pending((COMPACTION,))
        for op in decode_compaction_plan(timeline.read_requested(i))
    }


def plan(table: HudiTable, now: datetime) -> CleanerPlan:
    """What a clean of ``table`` (a snapshot taken under the table lock) deletes now."""
    timeline = table.timeline
    policy = table.settings.choice(K.CLEANER_POLICY)
    earliest = earliest_commit_to_retain(timeline, table.settings, now)
    completed = timeline.completed(_COMMIT_ACTIONS)
    last_completed = completed[-1].timestamp if completed else ""
    by_version = policy == K.KEEP_LATEST_FILE_VERSIONS
    if earliest is None and not by_version:
        return CleanerPlan(policy, None, last_completed)
    keep_versions = table.settings.number(K.CLEANER_FILE_VERSIONS_RETAINED)
    savepointed, compacting = _savepointed(timeline), _compacting(timeline)
    replaced = _replaced_before(timeline, earliest)
    files: dict[str, list[str]] = {}
    for (partition, file_id), slices in _file_groups(table, _partitions_to_clean(table, earliest),
                                                     timeline.committed()).items():
        newest_first = [slices[t] for t in sorted(slices, reverse=True)]
        if (partition, file_id) in replaced:
            doomed = newest_first
        elif by_version:
            kept = [s for s in newest_first if not s.names() & savepointed][:keep_versions]
            doomed = [s for s in newest_first if s not in kept]
        else:
            assert earliest is not None
            before = next((s for s in newest_first if s.base_instant < earliest.timestamp), None)
            doomed = [s for s in newest_first[1:] if s.base_instant < earliest.timestamp and s is not before]
        for s in doomed:
            if s.names() & savepointed or (partition, file_id, s.base_instant) in compacting:
                continue
            files.setdefault(partition, []).extend(table.storage.uri(f) for f in sorted(s.files))
    return CleanerPlan(policy, earliest.timestamp if earliest else None, last_completed, files,
                       earliest.action if earliest else COMMIT)


def schedule(table: HudiTable) -> Instant | None:
    """Plan a clean under the table lock; its requested instant, or ``None`` when nothing is to go."""
    with locked(table, "clean plan") as held:
        table = held.table
        if table.timeline.pending((CLEAN,)):
            return None  # another writer's clean is under way: it deletes what this one would
        cleaner_plan = plan(table, datetime.now(timezone.utc))
        if cleaner_plan.is_empty:
            return None
        # no writer takes the clean's instant time
        return table.timeline.request(CLEAN, held.claim_instant_time(), encode_plan(cleaner_plan))


def execute(table: HudiTable, instant: Instant) -> CleanMetadata:
    """Delete what a planned clean names (again, after a crash) and complete it."""
    started = time.monotonic()
    timeline = table.timeline
    data = timeline.read_requested(instant)
    cleaner_plan = decode_plan(data)
    if instant.state is State.REQUESTED:
        timeline.transition_to_inflight(instant, data)
    deleted: dict[str, list[str]] = {}
    for partition, paths in cleaner_plan.files.items():
        for path in paths:
            # A plan names a file by full path (version 2, in any URI spelling) or by name (version 1).
            name = posixpath.basename(path)
            table.storage.delete(posixpath.join(partition, name))
            deleted.setdefault(partition, []).append(name)
    metadata = CleanMetadata(
        instant.timestamp, int((time.monotonic() - started) * 1000), cleaner_plan.earliest_commit_to_retain or "",
        cleaner_plan.last_completed_commit, cleaner_plan.policy, deleted,
    )
    # The metadata table records what went before the clean completes, under the lock its writers share.
    lock = commit_lock(table.storage, table.settings, f"clean {instant.timestamp}") if keeps_metadata_table(table) \
        else nullcontext()
    with lock, recording(table, instant.timestamp, FileChanges.of_deleted(deleted), KEYS_STAY):
        timeline.complete(instant, encode_metadata(metadata))
    return metadata


def run(table: HudiTable, plan_new: bool = True) -> list[CleanMetadata]:
    """Finish the cleans a crash left pending, then (``plan_new``) plan and run one when the
    trigger fires; what each deleted."""
    open_for_write(table)
    done = [execute(table, i) for i in table.timeline.pending((CLEAN,))]
    if plan_new:
        current = table.refreshed() if done else table
        by_age = table.settings.choice(K.CLEANER_POLICY) != K.KEEP_LATEST_FILE_VERSIONS
        now = datetime.now(timezone.utc)
        # Nothing is old enough yet: no need for the lock (the plan under it would be empty too).
        if by_age and earliest_commit_to_retain(current.timeline, table.settings, now) is None:
            return done
        if is_due(current.timeline, current.settings):
            instant = schedule(current)
            if instant is not None:
                done.append(execute(current.refreshed(), instant))
    return done


def describe(table: HudiTable, limit: int) -> list[tuple]:
    """``CALL show_cleans`` rows: the completed cleans of the active timeline, newest first."""
    if limit < 0:
        raise HudiqlError(f"CALL show_cleans: limit => {limit} must be at least 0")
    timeline = table.timeline
    rows = []
    for instant in reversed(timeline.completed((CLEAN,))):
        if len(rows) == limit:
            break
        meta = decode_metadata(timeline.read(instant))
        modified = table.storage.modified_time(instant.file_name)
        transition = instant.completion_time or (
            format_instant_time(datetime.fromtimestamp(modified, timezone.utc)) if modified else None)
        rows.append((instant.timestamp, transition, CLEAN, meta.start_clean_time, meta.time_taken_ms,
                     meta.total_files_deleted, meta.earliest_commit_to_retain, meta.last_completed_commit,
                     meta.version))
    return rows
