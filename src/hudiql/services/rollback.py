"""The procedures that undo commits: ``CALL rollback_to_instant`` (the latest completed commit)
and ``CALL rollback_to_savepoint`` (a restore: every commit after a savepoint), each refusing by
name what it cannot undo, before anything changes. How a rollback and a restore run, and are run
again after a crash, is ``transaction.rollback``.

Example: the latest commit rolled back; its file is gone, a completed rollback instant stays.
    >>> import posixpath
    >>> from hudiql.config.table_config import TableConfig
    >>> from hudiql.timeline.active import COMMIT
    >>> from hudiql.timeline.commit import CommitMetadata, WriteStat
    >>> table = HudiTable.create(warehouse + "/orders", TableConfig({"hoodie.table.name": "orders"}))
    >>> timeline = table.timeline
    >>> instant = timeline.start(COMMIT, "20240102000000000")
    >>> table.storage.write("dt=1/f-1_0-1-0_20240102000000000.parquet", b"rows")
    >>> meta = CommitMetadata(write_stats=[WriteStat("f-1", "dt=1", "dt=1/f-1_0-1-0_20240102000000000.parquet")])
    >>> _ = timeline.complete(instant, meta.to_json())
    >>> rolled = rollback_to_instant(table.refreshed(), "20240102000000000")
    >>> rolled.instant_time, [posixpath.basename(p) for p in rolled.deleted["dt=1"]]
    ('20240102000000000', ['f-1_0-1-0_20240102000000000.parquet'])
    >>> [(i.action, i.state.value) for i in table.refreshed().timeline.instants]
    [('rollback', 'completed')]
    >>> rollback_to_instant(table.refreshed(), "20240102000000000")
    Traceback (most recent call last):
    hudiql.errors.SqlError: CALL rollback_to_instant: table orders has no instant 20240102000000000; CALL show_commits(table => 'orders') lists its commits
"""

from __future__ import annotations


from hudiql.table.table import HudiTable
from hudiql.timeline.active import RESTORE, SAVEPOINT, Instant
from hudiql.timeline.rollback_plan import RestorePlan, RollbackMetadata, encode_restore_plan
from hudiql.transaction.prologue import locked
from hudiql.transaction.rollback import (
    ROLLBACK_ACTIONS,
    check_previous_slices,
    completed_writes,
    plan_rollback,
    refusal,
    roll_back_completed,
    run_restore,
)


def _pending_writes_after(table: HudiTable, instant_time: str) -> list[Instant]:
    """Writes, compactions and clusterings pending after ``instant_time`` (they may have read it)."""
    return [i for i in table.timeline.pending(ROLLBACK_ACTIONS) if i.timestamp > instant_time]


def rollback_to_instant(table: HudiTable, instant_time: str) -> RollbackMetadata:
    """``CALL rollback_to_instant``: roll back the latest completed commit, refusing anything
    else by name (nothing is changed then)."""
    proc, name = "rollback_to_instant", table.config.name
    with locked(table, f"rollback {instant_time}", roll_back_failed_writes=True) as held:
        table = held.table
        found = [i for i in table.timeline.instants if i.timestamp == instant_time and i.action != SAVEPOINT]
        if not found:
            raise refusal(proc, f"table {name} has no instant {instant_time}; CALL show_commits(table => '{name}') "
                                "lists its commits")
        instant = found[0]
        if instant.action not in ROLLBACK_ACTIONS:
            raise refusal(proc, f"{instant_time} is a {instant.action}; only a commit, delta commit, replace commit "
                                "or compaction is rolled back")
        if not instant.is_completed:
            raise refusal(proc, f"{instant.action} {instant_time} has not completed; a failed write is rolled back "
                                "by the next write, a running one must finish first")
        later = [i for i in completed_writes(table) if i.timestamp > instant_time]
        if later:
            raise refusal(proc, f"{instant_time} is not the latest commit of table {name}: {later[-1].timestamp} "
                                f"completed after it; roll back {later[-1].timestamp} first, or restore a savepoint "
                                "with CALL rollback_to_savepoint")
        protecting = [s for s in table.timeline.completed((SAVEPOINT,)) if s.timestamp >= instant_time]
        if protecting:
            raise refusal(proc, f"savepoint {protecting[0].timestamp} protects {instant_time}; CALL "
                                f"delete_savepoint(table => '{name}', instant_time => '{protecting[0].timestamp}') first")
        running = _pending_writes_after(table, instant_time)
        if running:
            raise refusal(proc, f"{running[0].action} {running[0].timestamp} is in flight after {instant_time}; "
                                "wait until it finishes, then roll back the latest commit")
        check_previous_slices(table, instant, proc)
        return roll_back_completed(table, instant)



def restore_to_savepoint(table: HudiTable, savepoint_time: str,
                         savepointed: set[str]) -> list[RollbackMetadata]:
    """``CALL rollback_to_savepoint``: roll back every commit after the completed savepoint
    ``savepoint_time`` (whose files are ``savepointed``, paths relative to the table), as one
    restore; refused while a write is pending or when a newer savepoint exists."""
    proc, name = "rollback_to_savepoint", table.config.name
    with locked(table, f"restore {savepoint_time}") as held:
        table = held.table
        pending = table.timeline.pending(ROLLBACK_ACTIONS)
        if pending:
            raise refusal(proc, f"{pending[0].action} {pending[0].timestamp} is pending; wait until it completes "
                                "(a failed write is rolled back by the next write), then restore")
        newer = [s.timestamp for s in table.timeline.completed((SAVEPOINT,)) if s.timestamp > savepoint_time]
        if newer:
            raise refusal(proc, f"savepoint {newer[0]} is newer than {savepoint_time}; restore it, or CALL "
                                f"delete_savepoint(table => '{name}', instant_time => '{newer[0]}') first")
        missing = sorted(p for p in savepointed if not table.storage.exists(p))
        if missing:
            raise refusal(proc, f"savepoint {savepoint_time} names {missing[0]}, which is missing; it cannot be restored")
        later = [i for i in reversed(completed_writes(table)) if i.timestamp > savepoint_time]
        for instant in later:
            plan_rollback(table, instant, proc)  # refuse before anything changes
        restore = table.timeline.request(RESTORE, held.claim_instant_time(), encode_restore_plan(
            RestorePlan(savepoint_time, [(i.timestamp, i.action) for i in later])))
        return run_restore(table.refreshed(), restore)
