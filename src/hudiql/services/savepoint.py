"""Savepoints: a completed commit marked so that its files outlive cleaning and archiving, and the
table can be restored to it (``services.rollback.restore_to_savepoint``).

A savepoint is Hudi's ``<t>.savepoint.inflight`` then ``<t>.savepoint`` at the time of its commit,
holding ``HoodieSavepointMetadata`` (``timeline.savepoint``): per partition, the files of the slices a
reader as of the commit reads. Created and deleted under the table lock.

Example:
    >>> from hudiql.timeline.commit import CommitMetadata, WriteStat
    >>> from hudiql.config.table_config import TableConfig
    >>> table = HudiTable.create(warehouse + "/orders", TableConfig({"hoodie.table.name": "orders"}))
    >>> instant = table.timeline.start("commit", "20240101000000000")
    >>> table.storage.write("dt=1/f-0_0-1-0_20240101000000000.parquet", b"rows")
    >>> meta = CommitMetadata(write_stats=[WriteStat("f-0", "dt=1", "dt=1/f-0_0-1-0_20240101000000000.parquet")])
    >>> _ = table.timeline.complete(instant, meta.to_json())
    >>> create(table.refreshed(), "", "admin", "before the backfill")
    '20240101000000000'
    >>> list_savepoints(table.refreshed()), sorted(files(table.refreshed(), "20240101000000000"))
    (['20240101000000000'], ['dt=1/f-0_0-1-0_20240101000000000.parquet'])
    >>> create(table.refreshed(), "20240101000000000", "", "")
    Traceback (most recent call last):
    hudiql.errors.SqlError: CALL create_savepoint: commit 20240101000000000 of table orders is savepointed already
    >>> delete(table.refreshed(), "20240101000000000"), list_savepoints(table.refreshed())
    (['20240101000000000'], [])
"""

from __future__ import annotations

import time

from hudiql.errors import SqlError
from hudiql.table.table import HudiTable
from hudiql.timeline.active import CLEAN, SAVEPOINT, Instant, State
from hudiql.timeline.clean_plan import decode_metadata as decode_clean_metadata
from hudiql.timeline.savepoint import encode_savepoint, savepointed_paths
from hudiql.transaction.prologue import locked
from hudiql.transaction.rollback import ROLLBACK_ACTIONS


def list_savepoints(table: HudiTable) -> list[str]:
    """The instant times of the completed savepoints, newest first."""
    return [i.timestamp for i in reversed(table.timeline.completed((SAVEPOINT,)))]


def files(table: HudiTable, savepoint_time: str) -> set[str]:
    """The files (paths relative to the table) the completed savepoint keeps."""
    instant = next(i for i in table.timeline.completed((SAVEPOINT,)) if i.timestamp == savepoint_time)
    return savepointed_paths(table.timeline.read(instant))


def _read_files(table: HudiTable, commit_time: str) -> dict[str, list[str]]:
    """Per partition, the base and log files a reader as of ``commit_time`` reads."""
    out: dict[str, list[str]] = {}
    for s in table.as_of(commit_time).file_system_view().read_slices():
        names = ([s.base_file] if s.base_file else []) + list(s.log_files)
        out.setdefault(s.partition_path, []).extend(names)
    return out


def create(table: HudiTable, commit_time: str, user: str, comments: str) -> str:
    """``CALL create_savepoint``: savepoint the completed commit ``commit_time`` (the latest
    when empty); its instant time. Refused for an unknown, pending or savepointed commit, and for
    one older than what the last clean retained (its files may be gone)."""
    proc, name = "create_savepoint", table.config.name
    with locked(table, f"savepoint {commit_time}") as held:
        table = held.table
        timeline = table.timeline
        completed = timeline.completed(ROLLBACK_ACTIONS)
        if not commit_time:
            if not completed:
                raise SqlError(f"CALL {proc}: table {name} has no completed commit to savepoint")
            commit_time = completed[-1].timestamp
        if commit_time not in {i.timestamp for i in completed}:
            pending = any(i.timestamp == commit_time for i in timeline.pending(ROLLBACK_ACTIONS))
            raise SqlError(f"CALL {proc}: commit {commit_time} of table {name} "
                           + ("has not completed; savepoint it once it has" if pending else
                              f"does not exist; CALL show_commits(table => '{name}') lists the commits"))
        if any(i.timestamp == commit_time for i in timeline.instants if i.action == SAVEPOINT):
            raise SqlError(f"CALL {proc}: commit {commit_time} of table {name} is savepointed already")
        cleans = timeline.completed((CLEAN,))
        retained = decode_clean_metadata(timeline.read(cleans[-1])).earliest_commit_to_retain if cleans else None
        if retained and commit_time < retained:
            raise SqlError(f"CALL {proc}: commit {commit_time} is older than {retained}, the earliest commit the last "
                           "clean retained; its files may be cleaned, savepoint a later commit")
        data = encode_savepoint(user, int(time.time()), comments, _read_files(table, commit_time))
        inflight = timeline.transition_to_inflight(Instant(commit_time, SAVEPOINT, State.REQUESTED))
        timeline.complete(inflight, data)
    return commit_time


def delete(table: HudiTable, instant_times: str) -> list[str]:
    """``CALL delete_savepoint``: delete the completed savepoints ``instant_times`` (comma
    separated; the latest when empty); all are checked before any is deleted."""
    proc, name = "delete_savepoint", table.config.name
    with locked(table, "delete savepoint") as held:
        table = held.table
        existing = list_savepoints(table)
        if not existing:
            raise SqlError(f"CALL {proc}: table {name} has no savepoint")
        wanted = [t.strip() for t in instant_times.split(",") if t.strip()] or existing[:1]
        unknown = [t for t in wanted if t not in existing]
        if unknown:
            raise SqlError(f"CALL {proc}: table {name} has no savepoint {unknown[0]}; its savepoints are "
                           f"{', '.join(existing)} (CALL show_savepoints)")
        for t in wanted:
            instant = Instant(t, SAVEPOINT, State.COMPLETED)
            table.timeline.delete_completed(t, savepoint=True)
            table.timeline.remove_pending(instant)
    return wanted


def resolve(table: HudiTable, instant_time: str, proc: str) -> str:
    """The completed savepoint ``instant_time`` names (the latest when empty), or a refusal."""
    existing = list_savepoints(table)
    name = table.config.name
    if not existing:
        raise SqlError(f"CALL {proc}: table {name} has no savepoint; CALL create_savepoint(table => '{name}') makes one")
    if not instant_time:
        return existing[0]
    if instant_time not in existing:
        raise SqlError(f"CALL {proc}: table {name} has no savepoint {instant_time}; its savepoints are "
                       f"{', '.join(existing)} (CALL show_savepoints)")
    return instant_time
