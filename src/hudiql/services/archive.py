"""Archiving: move old instants out of ``.hoodie/`` into the archived timeline, as Hudi's archiver
of table version 6 does (``timeline.archived``), so that the active timeline stays short.

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
- completed cleans and rollbacks, per action, by the same count rule.
Every file of a chosen instant (requested, inflight, completed) goes.

Order: the archive file is written whole first; then the requested and inflight files are
deleted, then the completed ones, oldest first, so that a crash never leaves an instant that looks
pending nor a hole. A crash between the two leaves instants both archived and active: readers
read the table as before, and the next run archives them again (readers of the archive read
each instant once).
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from hudiql.errors import HudiqlError, warn
from hudiql.config import registry as K
from hudiql.config.settings import Settings
from hudiql.timeline.archived import ArchivedInstant, archived_entry, read_archived, write_archive
from hudiql.timeline.clean_plan import decode_metadata as decode_clean_metadata
from hudiql.timeline.clean_plan import decode_plan as decode_clean_plan
from hudiql.layout import META_FOLDER, marker_folder
from hudiql.table.table import HudiTable
from hudiql.timeline.active import (
    CLEAN,
    COMMIT,
    COMPACTION,
    DELTA_COMMIT,
    REPLACE_COMMIT,
    ROLLBACK,
    SAVEPOINT,
    Instant,
    State,
    Timeline,
    format_instant_time,
    instant_file_name,
)
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


def instants_to_archive(table: HudiTable) -> list[Instant]:
    """The instants an archive run of ``table`` (a snapshot) moves, oldest first."""
    timeline = table.timeline
    keep_min, keep_max = table.settings.number(K.KEEP_MIN_COMMITS), table.settings.number(K.KEEP_MAX_COMMITS)
    chosen: list[Instant] = []
    for action in (CLEAN, ROLLBACK):
        done = timeline.completed((action,))
        if len(done) > keep_max:
            chosen += done[:len(done) - keep_min]
    commits = timeline.completed(_WRITES)
    if len(commits) > keep_max:
        bound = min(_commit_bounds(table, commits), default=None)
        older = [c for c in commits if bound is None or c.timestamp < bound]
        chosen += older[:len(commits) - keep_min]
    return sorted(chosen)


def _instant_files(timeline: Timeline, instant: Instant, listed: set[str]) -> list[tuple[State, str, str]]:
    """(state, file action, path) of the files of ``instant`` in ``.hoodie/``, requested first."""
    out = []
    for state in (State.REQUESTED, State.INFLIGHT, State.COMPLETED):
        name = instant_file_name(instant.action, state, instant.timestamp)
        if name in listed:
            file_action = name.split(".")[1] if state is State.COMPLETED else instant.action
            out.append((state, file_action, f"{META_FOLDER}/{name}"))
    return out


def _entries(table: HudiTable, instants: list[Instant]) -> tuple[list[dict], list[str], list[str]]:
    """The archive records of ``instants``, and their pending-state and completed files."""
    timeline, storage = table.timeline, table.storage
    listed = {info.name for info in storage.list(META_FOLDER) if not info.is_dir}
    entries, pending_files, completed_files = [], [], []
    for instant in instants:
        files = _instant_files(timeline, instant, listed)
        contents = {path: storage.read(path) for _, _, path in files}
        plan = next((contents[path] for state, _, path in files if state is State.REQUESTED), b"")
        for state, action, path in files:
            modified = storage.modified_time(path)
            transition = format_instant_time(datetime.fromtimestamp(modified, timezone.utc)) if modified else None
            entries.append(archived_entry(instant.timestamp, action, state, contents[path], plan, transition))
            (completed_files if state is State.COMPLETED else pending_files).append(path)
    return entries, pending_files, completed_files


def _delete_instant_files(table: HudiTable, pending_files: list[str], completed_files: list[str]) -> None:
    """Requested and inflight files first, then completed ones oldest first: a crash half way never
    leaves an instant that looks pending, nor a hole in the completed ones."""
    for path in pending_files + completed_files:
        table.storage.delete(path)


def archive(table: HudiTable) -> list[Instant]:
    """Archive what Hudi's rules let go (``instants_to_archive``); the instants moved."""
    if not instants_to_archive(table):
        return []  # the timeline is short enough: no lock (a later writer only adds instants)
    if table.timeline.layout_version >= 2:
        raise HudiqlError(_NOT_ON_LAYOUT_2.format(name=table.config.name, version=table.config.version))
    with locked(table, "archive") as held:
        table = held.table  # a writer's conflict check reads the timeline: decide under the lock
        chosen = instants_to_archive(table)
        if not chosen:
            return []
        entries, pending_files, completed_files = _entries(table, chosen)
        write_archive(table.storage, entries, table.settings.number(K.ARCHIVAL_BATCH))
        _delete_instant_files(table, pending_files, completed_files)
        for instant in chosen:
            table.storage.delete_dir(marker_folder(instant.timestamp))  # markers a crashed write left
    return chosen


_NOT_ON_LAYOUT_2 = ("table {name} is of table version {version}, whose archived timeline (an LSM tree of parquet "
                    "files) hudiql does not write yet; its instants stay on the active timeline, which readers "
                    "read whole")


def archive_inline(table: HudiTable) -> list[Instant]:
    """After a write (``post_commit``): ``archive``; on a table of version 8 or 9 (timeline layout
    2), one line saying why the instants due stay, when some are."""
    if table.timeline.layout_version < 2:
        return archive(table)
    if instants_to_archive(table):
        warn(f"{_NOT_ON_LAYOUT_2.format(name=table.config.name, version=table.config.version)} "
             f"(set {K.ARCHIVE_AUTOMATIC}=false to stop this line)")
    return []


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
        commit_row(a) for a in reversed(read_archived(table.storage))
        if a.state is State.COMPLETED and a.action in (COMMIT, DELTA_COMMIT, REPLACE_COMMIT)
        and start < a.timestamp <= end
    ]
    return rows[:limit]
