"""Archiving: move old instants out of the active timeline into the archived timeline, as Hudi's
archivers do (``timeline.archived``: Hudi log files on table version 6; ``timeline.lsm_timeline``:
the LSM timeline of versions 8 and 9), so that the active timeline stays short.

Which instants go, under the table lock:
- commits (commit, deltacommit, replacecommit, a compaction's commit): when more than
  ``hoodie.keep.max.commits`` are completed, the oldest, so that ``hoodie.keep.min.commits``
  remain; but never one at or after
  - the first savepoint (its commit and every later one stay),
  - the latest completed commit before the oldest pending instant of any action (a pending write,
    compaction or clean): no hole, and readers treat whatever is older than the active timeline's
    first write as committed,
  - the earliest commit the latest completed clean retained (hudiql's own bound: what is still
    on storage keeps its instant),
  - the first replacecommit at or after the latest clean plan's earliest instant to retain (the
    clean's time for KEEP_LATEST_FILE_VERSIONS; the first replacecommit when no clean ran): a
    replacecommit's instant is what hides the file groups it replaced until they are cleaned,
  - for merge-on-read with the NUM_COMMITS or NUM_AND_TIME compaction trigger, the latest
    compaction when fewer delta commits than ``hoodie.compact.inline.max.delta.commits`` follow
    it (else the delta commit that keeps that many): the trigger counts them on the timeline.
- completed cleans and rollbacks: on version 6, per action, by the same count rule; on versions 8
  and 9, as Hudi 1.x, those older than the last commit archived.
Every file of a chosen instant (requested, inflight, completed) goes.

Order: the archive file is written whole first; then the requested and inflight files are
deleted, then the completed ones, oldest first, so that a crash never leaves an instant that looks
pending nor a hole. A crash between the two leaves instants both archived and active: readers
read the table as before, and the next run archives them again (readers of the archive read
each instant once).
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from hudiql.errors import HudiqlError
from hudiql.config import registry as K
from hudiql.config.settings import Settings
from hudiql.timeline import lsm_timeline
from hudiql.timeline.archived import ArchivedInstant, archived_entry, read_archived, write_archive
from hudiql.timeline.clean_plan import decode_metadata as decode_clean_metadata
from hudiql.timeline.clean_plan import decode_plan as decode_clean_plan
from hudiql.io.storage import Storage
from hudiql.layout import marker_folder
from hudiql.table.metadata_table import MetadataTable
from hudiql.table.table import HudiTable
from hudiql.timeline.active import (
    CLEAN,
    CLUSTERING,
    COMMIT,
    COMPACTION,
    COMPLETES_AS,
    DELTA_COMMIT,
    LOG_COMPACTION,
    REPLACE_COMMIT,
    ROLLBACK,
    SAVEPOINT,
    Instant,
    State,
    Timeline,
    format_instant_time,
    instant_file_name,
)
from hudiql.transaction.lock import commit_lock
from hudiql.transaction.metadata_commit import keeps_metadata_table
from hudiql.transaction.prologue import locked

_WRITES = (COMMIT, DELTA_COMMIT, REPLACE_COMMIT)


def _first_at_or_after(instants: list[Instant], floor: str) -> Instant | None:
    return next((i for i in instants if i.timestamp >= floor), None)


def _compaction_bound(timeline: Timeline, settings: Settings) -> str | None:
    """The oldest instant the compaction trigger still counts from (Hudi keeps it active)."""
    if settings.choice(K.TRIGGER_STRATEGY) not in ("NUM_COMMITS", "NUM_AND_TIME"):
        return None
    compactions = timeline.completed((COMPACTION,))
    since = compactions[-1].timestamp if compactions else ""
    deltas = [i for i in timeline.completed((DELTA_COMMIT,)) if i.timestamp > since and i.action == DELTA_COMMIT]
    if not deltas:
        return None
    if not since:
        since = timeline.instants[0].timestamp
    keep = settings.number(K.MAX_DELTA_COMMITS)
    return since if len(deltas) < keep else deltas[len(deltas) - keep].timestamp


def _commit_bounds(table: HudiTable, commits: list[Instant]) -> list[str]:
    """Instant times no archived commit may reach."""
    timeline = table.timeline
    bounds: list[str] = []
    savepoints = timeline.completed((SAVEPOINT,))
    if savepoints:
        bounds.append(savepoints[0].timestamp)
    pending = timeline.pending()
    if pending:
        before = [c for c in commits if c.timestamp < pending[0].timestamp]
        bounds.append(before[-1].timestamp if before else pending[0].timestamp)
    cleans = timeline.completed((CLEAN,))
    replaces = [i for i in timeline.instants if i.action == REPLACE_COMMIT]
    if cleans:
        retained = decode_clean_metadata(timeline.read(cleans[-1])).earliest_commit_to_retain
        if retained:
            bounds.append(retained)
    if replaces:
        floor = ""
        if cleans:
            planned = decode_clean_plan(timeline.read_requested(cleans[-1])).earliest_commit_to_retain
            floor = planned or cleans[-1].timestamp
        first = _first_at_or_after(replaces, floor)
        if first is not None:
            bounds.append(first.timestamp)
    if table.config.is_mor:
        compaction = _compaction_bound(timeline, table.settings)
        if compaction is not None:
            bounds.append(compaction)
    return bounds


def instants_to_archive(table: HudiTable, bounds: tuple[str, ...] = ()) -> list[Instant]:
    """The instants an archive run of ``table`` (a snapshot) moves, oldest first; no commit at or
    after one of ``bounds`` (the metadata table's own) goes."""
    timeline = table.timeline
    keep_min, keep_max = table.settings.number(K.KEEP_MIN_COMMITS), table.settings.number(K.KEEP_MAX_COMMITS)
    chosen: list[Instant] = []
    commits = timeline.completed(_WRITES)
    if len(commits) > keep_max:
        bound = min([*_commit_bounds(table, commits), *bounds], default=None)
        older = [c for c in commits if bound is None or c.timestamp < bound]
        chosen += older[:len(commits) - keep_min]
    if timeline.layout_version >= 2:
        if chosen:
            chosen += [i for i in timeline.completed((CLEAN, ROLLBACK)) if i.timestamp < chosen[-1].timestamp]
        return sorted(chosen)
    for action in (CLEAN, ROLLBACK):
        done = timeline.completed((action,))
        if len(done) > keep_max:
            chosen += done[:len(done) - keep_min]
    return sorted(chosen)


def _instant_files(timeline: Timeline, instant: Instant, listed: set[str]) -> list[tuple[State, str, str]]:
    """(state, file action, path) of the files of the completed ``instant``, requested first (the
    completed file is named by the action it completes as: a compaction's is a ``commit``)."""
    out = []
    for state in (State.REQUESTED, State.INFLIGHT):
        name = instant_file_name(instant.action, state, instant.timestamp)
        if name in listed:
            out.append((state, instant.action, f"{timeline.folder}/{name}"))
    return [*out, (State.COMPLETED, COMPLETES_AS.get(instant.action, instant.action), instant.file_name)]


def _read_files(table: HudiTable, instants: list[Instant]) -> list[tuple[Instant, list[tuple[State, str, str, bytes]]]]:
    """Each of ``instants`` with its files: (state, file action, path, content), requested first."""
    timeline, storage = table.timeline, table.storage
    listed = {info.name for info in storage.list(timeline.folder) if not info.is_dir}
    return [(instant, [(state, action, path, storage.read(path)) for state, action, path in _instant_files(timeline, instant, listed)])
            for instant in instants]


def _history_row(instant: Instant, files: list[tuple[State, str, str, bytes]]) -> lsm_timeline.HistoryRow:
    """The LSM timeline's row of a completed instant: its completed file's bytes, and the plan Hudi
    1.x keeps with it (a compaction's and a clean's requested file; a replacecommit's or
    clustering's inflight file, else its requested one, when not empty)."""
    content = {state: data for state, _, _, data in files}
    plan = None
    if instant.action in (COMPACTION, LOG_COMPACTION, CLEAN):
        plan = content.get(State.REQUESTED, content.get(State.INFLIGHT))
    elif instant.action in (REPLACE_COMMIT, CLUSTERING):
        plan = content.get(State.INFLIGHT) or content.get(State.REQUESTED) or None
    return lsm_timeline.HistoryRow(instant.timestamp, instant.completion_time, files[-1][1],
                                   content[State.COMPLETED] or None, plan)


def _entries(storage: Storage, files: list[tuple[Instant, list[tuple[State, str, str, bytes]]]]) -> list[dict]:
    """The layout 1 archive records of the instants' files."""
    entries = []
    for instant, instant_files in files:
        plan = next((data for state, _, _, data in instant_files if state is State.REQUESTED), b"")
        for state, action, path, data in instant_files:
            modified = storage.modified_time(path)
            transition = format_instant_time(datetime.fromtimestamp(modified, timezone.utc)) if modified else None
            entries.append(archived_entry(instant.timestamp, action, state, data, plan, transition))
    return entries


def _delete_instant_files(storage: Storage, files: list[tuple[Instant, list[tuple[State, str, str, bytes]]]]) -> None:
    """Requested and inflight files first, then completed ones oldest first: a crash half way never
    leaves an instant that looks pending, nor a hole in the completed ones."""
    pending = [path for _, f in files for state, _, path, _ in f if state is not State.COMPLETED]
    completed = [path for _, f in files for state, _, path, _ in f if state is State.COMPLETED]
    for path in pending + completed:
        storage.delete(path)


def archive(table: HudiTable) -> list[Instant]:
    """Archive what Hudi's rules let go (``instants_to_archive``), of the table's timeline and of
    its metadata table's; the instants moved."""
    chosen = []
    if instants_to_archive(table):  # else the timeline is short enough: no lock (a later writer only adds instants)
        with locked(table, "archive") as held:
            table = held.table  # a writer's conflict check reads the timeline: decide under the lock
            chosen = instants_to_archive(table)
            _move(table, chosen, table.settings)
    return chosen + _archive_metadata_table(table.refreshed() if chosen else table)


def _archive_metadata_table(table: HudiTable) -> list[Instant]:
    """Archive the metadata table's timeline by the data table's numbers, but never past its
    ``archive_bound`` (the latest compaction of every file group: the slices after it find their
    logs by their delta commits' completion) nor past the data table's oldest active instant (readers tell a metadata
    delta commit valid by its data instant's)."""
    known = MetadataTable.known(table.storage) if keeps_metadata_table(table) else None
    if known is None:  # none, or none this process wrote to: no archiving is due because of it
        return []
    numbers = {key: str(table.settings.number(key)) for key in (K.KEEP_MIN_COMMITS, K.KEEP_MAX_COMMITS)}
    mdt = HudiTable(known.storage, known.config, known.timeline).with_options(numbers)

    def chosen(mdt: HudiTable) -> list[Instant]:
        bound = MetadataTable(table.storage, mdt.storage, mdt.config, mdt.timeline).archive_bound()
        if bound is None or not table.timeline.instants:
            return []
        return instants_to_archive(mdt, (bound, table.timeline.instants[0].timestamp))

    if not chosen(mdt):
        return []
    with commit_lock(table.storage, table.settings, "metadata table archive"):  # its writers hold the data table's
        mdt = mdt.refreshed()
        moved = chosen(mdt)
        _move(mdt, moved, table.settings)
    if moved:
        MetadataTable.changed(table.storage)
    return moved


def _move(table: HudiTable, chosen: list[Instant], settings: Settings) -> None:
    """Write ``chosen`` into the archived timeline, then delete their files from the active one;
    the caller holds the lock."""
    if not chosen:
        return
    storage, files = table.storage, _read_files(table, chosen)
    if table.timeline.layout_version >= 2:
        folder, compression = table.config.archive_folder, settings.choice(K.COMPRESSION)
        lsm_timeline.write(storage, folder, [_history_row(i, f) for i, f in files], compression)
    else:
        write_archive(storage, _entries(storage, files), settings.number(K.ARCHIVAL_BATCH))
    _delete_instant_files(storage, files)
    for instant in chosen:
        storage.delete_dir(marker_folder(instant.timestamp))  # markers a crashed write left
    if table.timeline.layout_version >= 2:
        lsm_timeline.compact_and_clean(storage, folder, compression)


# ---- CALL procedures -----------------------------------------------------------------------------

def archive_commits(table: HudiTable, min_commits: int, max_commits: int,
                    retain_commits: int) -> list[tuple]:
    """``CALL archive_commits``: archive with these retention numbers; Hudi's one row ``(0,)``."""
    table = table.with_options({K.KEEP_MIN_COMMITS: str(min_commits), K.KEEP_MAX_COMMITS: str(max_commits),
                                K.CLEANER_COMMITS_RETAINED: str(retain_commits)})
    K.check_retention(table.settings)
    archive(table)
    return [(0,)]


def _days_ago(days: int) -> str:
    return format_instant_time(datetime.now(timezone.utc) - timedelta(days=days))


def commit_row(archived: ArchivedInstant) -> tuple:
    """A commit's row of ``show_commits`` / ``show_archived_commits``: its totals from its write stats."""
    meta = archived.metadata or {}
    stats = [s for partition in (meta.get("partitionToWriteStats") or {}).values() for s in partition or []]

    def total(name: str) -> int:
        return sum(s.get(name) or 0 for s in stats)

    inserted = sum(1 for s in stats if (s.get("prevCommit") or "").lower() == "null")
    updated = sum(1 for s in stats if s.get("prevCommit") and s["prevCommit"].lower() != "null")
    return (archived.timestamp, archived.transition_time, total("totalWriteBytes"), inserted, updated,
            len(meta.get("partitionToWriteStats") or {}), total("numWrites"), total("numUpdateWrites"),
            total("totalWriteErrors"))


def show_archived_commits(table: HudiTable, limit: int, start_ts: str = "", end_ts: str = "") -> list[tuple]:
    """``CALL show_archived_commits``: the completed commits of the archived timeline with their
    totals, newest first; those after ``start_ts`` up to ``end_ts`` (as Hudi: by default from ten
    days ago to one day ago)."""
    if limit < 0:
        raise HudiqlError(f"CALL show_archived_commits: limit => {limit} must be at least 0")
    start, end = start_ts or _days_ago(10), end_ts or _days_ago(1)
    rows = [
        commit_row(a) for a in reversed(read_archived(table.storage, table.config))
        if a.state is State.COMPLETED and a.action in (COMMIT, DELTA_COMMIT, REPLACE_COMMIT)
        and start < a.timestamp <= end
    ]
    return rows[:limit]
