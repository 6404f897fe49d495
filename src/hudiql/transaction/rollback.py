"""Rollback: of writes that did not complete, of the latest completed commit, and restore of a
savepoint (every commit after it rolled back).

**Failed writes.** Writers mark every file they create under ``.hoodie/.temp/<instant>/`` before
creating it, so a rollback finds them all, even after a crash. As Hudi's LAZY failed-writes policy
does, a new write first rolls back the pending writes whose writer died (its heartbeat expired,
``transaction.heartbeat``); the instant of a writer still running is left alone.

**A completed commit** (``CALL rollback_to_instant``): only the latest completed commit,
delta commit, replace commit or compaction, as Hudi allows, and not one a savepoint protects. Under
the table lock, in Hudi's order: the ``<r>.rollback.requested`` plan (Avro ``HoodieRollbackPlan``,
``timeline.rollback_plan``) names the files the commit wrote (its write stats); ``.rollback.inflight``;
the commit's completed file is deleted first, so that readers stop reading it at once; then its
files, then its requested and inflight files; ``<r>.rollback`` (``HoodieRollbackMetadata``) last.
A replace commit's file groups are live again once it is gone; a compaction's slices go back to
their logs. A rollback a crash cut short is pending on the timeline with its plan: the next
rollback, restore or write (``finish_pending``) runs it again, and until then readers never read
the half-deleted commit (it is no longer completed).

**A savepoint** (``CALL rollback_to_savepoint``): a ``<r>.restore`` instant (``HoodieRestorePlan``,
``HoodieRestoreMetadata``) whose plan lists the commits after the savepoint, newest first, each
rolled back as above with a rollback instant of its own, as Hudi restores.

Example: a writer died after starting its instant and writing a file.
    >>> from hudiql.config.table_config import TableConfig
    >>> from hudiql.layout import marker_path
    >>> table = HudiTable.create(warehouse + "/orders", TableConfig({"hoodie.table.name": "orders"}))
    >>> _ = table.timeline.start(COMMIT, "20240101000000000")
    >>> name = "f-0_0-1-0_20240101000000000.parquet"
    >>> table.storage.write(marker_path("20240101000000000", "dt=1", name, "CREATE"), b"")
    >>> table.storage.write(f"dt=1/{name}", b"half a file")
    >>> rollback_failed_writes(HudiTable.load(table.base_uri))   # no heartbeat: its writer is gone
    ['20240101000000000']
    >>> table.storage.exists(f"dt=1/{name}"), HudiTable.load(table.base_uri).timeline.instants
    (False, [])
"""

from __future__ import annotations

import posixpath
import re
import time

from hudiql.errors import SqlError
from hudiql.layout import (
    join_partition,
    marker_folder,
    parse_data_file_name,
)
from hudiql.table.fsview import read_commit_metadata
from hudiql.table.metadata_table import FileChanges, forget_instant
from hudiql.table.table import HudiTable
from hudiql.timeline.active import (
    CLUSTERING,
    COMMIT,
    COMPACTION,
    DELTA_COMMIT,
    REPLACE_COMMIT,
    RESTORE,
    ROLLBACK,
    Instant,
    State,
)
from hudiql.timeline.replace_plan import clustering_plan
from hudiql.timeline.rollback_plan import (
    RollbackMetadata,
    RollbackPlan,
    RollbackRequest,
    decode_metadata,
    decode_plan,
    decode_restore_plan,
    encode_metadata,
    encode_plan,
    encode_restore_metadata,
)
from hudiql.transaction.heartbeat import claim_instant_time, heartbeat_path, is_expired
from hudiql.transaction.lock import commit_lock
from hudiql.index.record_index import KEYS_STAY
from hudiql.transaction.metadata_commit import recording

_MARKER_RE = re.compile(r"^(?P<file>.+)\.marker\.[A-Z]+$")

#: The actions whose completed instants a rollback undoes (a completed compaction is a commit).
ROLLBACK_ACTIONS = (COMMIT, DELTA_COMMIT, REPLACE_COMMIT, COMPACTION, CLUSTERING)


def files_from_markers(table: HudiTable, instant_time: str) -> list[str]:
    """Data files (relative paths) the write of ``instant_time`` created or began to create."""
    root = marker_folder(instant_time) + "/"
    out = []
    for info in table.storage.list(root, recursive=True):
        m = _MARKER_RE.match(info.path[len(root):]) if not info.is_dir else None
        if m:
            out.append(m["file"])
    return out


def rollback(table: HudiTable, instant: Instant, keep_requested: bool = False) -> None:
    """Remove every file of a pending write, then its instant (``keep_requested``: back to its
    requested state, which holds a plan to run again, as a compaction's does)."""
    if table.config.version >= 8:
        forget_instant(table.storage, instant.timestamp)
    for path in files_from_markers(table, instant.timestamp):
        table.storage.delete(path)
    table.storage.delete_dir(marker_folder(instant.timestamp))
    table.timeline.remove_pending(instant, keep_requested)


def failed_writes(table: HudiTable) -> list[Instant]:
    """The pending commits / deltacommits / replacecommits (not clusterings) of ``table``'s
    timeline whose writer died."""
    # A clustering's plan waits to be run (its run rolls a crashed attempt back to the plan), as in Hudi.
    return [
        i for i in table.timeline.pending((COMMIT, DELTA_COMMIT, REPLACE_COMMIT))
        if clustering_plan(table.timeline, i) is None and is_expired(table.storage, heartbeat_path(i.timestamp), table.settings)
    ]


def needs_rollback(table: HudiTable) -> bool:
    """Whether ``rollback_failed_writes`` has anything to do on ``table``'s timeline."""
    return bool(table.timeline.pending((ROLLBACK, RESTORE)) or failed_writes(table))


def rollback_failed_writes(table: HudiTable) -> list[str]:
    """Roll back the writes whose writer died (``failed_writes``); returns their instant times.
    A rollback or restore a crash left pending is finished first: the commit it was undoing looks
    pending too, but only its plan knows its files."""
    if table.timeline.pending((ROLLBACK, RESTORE)):
        with commit_lock(table.storage, table.settings, "rollback"):
            table = table.refreshed()
            finish_pending(table)
            table = table.refreshed()
    failed = failed_writes(table)
    for instant in failed:
        rollback(table, instant)
        table.storage.delete(heartbeat_path(instant.timestamp))
    return [i.timestamp for i in failed]


# ---- completed commits -------------------------------------------------------------------------

def refusal(procedure: str, message: str) -> SqlError:
    """The error of ``CALL <procedure>`` refusing, by ``message``, to change the table."""
    return SqlError(f"CALL {procedure}: {message}")


def plan_rollback(table: HudiTable, instant: Instant, procedure: str = "rollback_to_instant") -> RollbackPlan:
    """What rolling back the completed ``instant`` deletes: the files its write stats name (a
    compaction's new base files, not the logs it compacted)."""
    meta = read_commit_metadata(table.timeline, instant)
    requests = []
    for stat in meta.write_stats:
        names = [posixpath.basename(stat.path)] if stat.path else []
        if instant.action != COMPACTION:
            names += [n for n in stat.log_files if n not in names]
        parsed = [parse_data_file_name(n) for n in names]
        if any(p is not None and p.is_log for p in parsed) and stat.log_offset > 0:
            # Hudi appends to a log file it did not create; deleting it would drop older blocks.
            raise refusal(procedure, f"{instant.action} {instant.timestamp} appended to log file {names[0]}, which "
                                     "holds blocks of earlier commits; hudiql rolls back only log files a commit created")
        files = [table.storage.uri(join_partition(stat.partition_path, n)) for n, p in zip(names, parsed) if p]
        base = next((p.instant_time for p in parsed if p is not None), None)
        requests.append(RollbackRequest(stat.partition_path, stat.file_id, base, files))
    return RollbackPlan(instant.timestamp, instant.action, requests)


def _is_log(path: str) -> bool:
    parsed = parse_data_file_name(posixpath.basename(path))
    return parsed is not None and parsed.is_log


def check_previous_slices(table: HudiTable, instant: Instant, procedure: str) -> None:
    """Refuse a rollback that would leave a file group without rows: the slice a commit rewrote,
    or a file group it replaced, was cleaned since."""
    meta = read_commit_metadata(table.timeline, instant)
    view = table.file_system_view()
    needed = {(s.partition_path, s.file_id) for s in meta.write_stats
              if s.prev_commit not in ("", "null") and not _is_log(s.path)}
    needed |= {(p, f) for p, ids in meta.partition_to_replace_file_ids.items() for f in ids}
    for partition, file_id in sorted(needed):
        group = view.groups.get((partition, file_id))
        if group is None or not any(t < instant.timestamp for t in group.slices):
            raise refusal(procedure, f"the files of file group {file_id} in partition '{partition}' before "
                                     f"{instant.timestamp} were cleaned; rolling it back would lose their rows "
                                     "(a savepoint keeps files from cleaning)")


def _execute(table: HudiTable, rollback_instant: Instant, plan: RollbackPlan) -> RollbackMetadata:
    """Run a rollback plan (again, after a crash): the commit stops being visible first, its
    files go, its other instant files go, and the rollback completes."""
    started = time.monotonic()
    timeline, storage = table.timeline, table.storage
    # Undoing a completed write moves keys back, which the record index cannot replay: it goes, and
    # the next write that keeps one builds it again. (A rollback a crash interrupted may have
    # deleted the completed file already: it counts as one.)
    undoes_completed = rollback_instant.state is not State.REQUESTED or any(
        i.timestamp == plan.instant_time and i.is_completed for i in timeline.instants)
    if rollback_instant.state is State.REQUESTED:
        rollback_instant = timeline.transition_to_inflight(rollback_instant)
    timeline.delete_completed(plan.instant_time)
    deleted: dict[str, list[str]] = {}
    for request in plan.requests:
        for path in request.files:
            storage.delete(join_partition(request.partition_path, posixpath.basename(path)))
            deleted.setdefault(request.partition_path, []).append(path)
    storage.delete_dir(marker_folder(plan.instant_time))
    timeline.remove_pending(Instant(plan.instant_time, plan.action, State.INFLIGHT))
    metadata = RollbackMetadata(rollback_instant.timestamp, int((time.monotonic() - started) * 1000),
                                plan.instant_time, plan.action, deleted)
    with recording(table, rollback_instant.timestamp, FileChanges.of_deleted(deleted),
                   None if undoes_completed else KEYS_STAY):
        timeline.complete(rollback_instant, encode_metadata(metadata))
    return metadata


def roll_back_completed(table: HudiTable, instant: Instant) -> RollbackMetadata:
    """Plan and run the rollback of a completed instant; the caller holds the table lock."""
    plan = plan_rollback(table, instant)
    heartbeat = claim_instant_time(table)  # no writer takes the rollback's instant time
    try:
        requested = table.timeline.request(ROLLBACK, heartbeat.instant_time, encode_plan(plan))
        return _execute(table, requested, plan)
    finally:
        heartbeat.stop()


def finish_pending(table: HudiTable) -> None:
    """Run again the rollbacks and restores a crash left pending (oldest first); the caller holds
    the table lock, so none of them is still running."""
    for pending in table.timeline.pending((ROLLBACK,)):
        _execute(table, pending, decode_plan(table.timeline.read_requested(pending), pending.file_name))
    for pending in table.timeline.pending((RESTORE,)):
        run_restore(table.refreshed(), pending)


def completed_writes(table: HudiTable) -> list[Instant]:
    return table.timeline.completed(ROLLBACK_ACTIONS)


# ---- restore -------------------------------------------------------------------------------------

def run_restore(table: HudiTable, restore: Instant) -> list[RollbackMetadata]:
    """Run a restore plan (again, after a crash): roll back each of its commits still on the
    timeline, newest first, then complete the restore with what each rollback deleted."""
    started = time.monotonic()
    timeline = table.timeline
    plan = decode_restore_plan(timeline.read_requested(restore), restore.file_name)
    if restore.state is State.REQUESTED:
        restore = timeline.transition_to_inflight(restore)
    planned = {t for t, _ in plan.instants}
    # Rollbacks a crashed run of this restore completed already.
    done = {m.instant_time: m for m in (decode_metadata(timeline.read(i), i.file_name)
                                        for i in timeline.completed((ROLLBACK,)) if i.timestamp > restore.timestamp)
            if m.instant_time in planned}
    for instant_time, _ in plan.instants:
        current = table.refreshed()
        instant = next((i for i in completed_writes(current) if i.timestamp == instant_time), None)
        if instant is not None:
            done[instant_time] = roll_back_completed(current, instant)
    rollbacks = [done[t] for t, _ in plan.instants if t in done]
    timeline.complete(restore, encode_restore_metadata(restore.timestamp, int((time.monotonic() - started) * 1000),
                                                       rollbacks))
    return rollbacks
