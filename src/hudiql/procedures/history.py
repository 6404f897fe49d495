"""The procedures of a table's history: its commits and file system view, rollbacks and savepoints.

Hudi's argument names, order, defaults and output columns (its Spark procedures of the same names).

Example:
    >>> by_name = {p.name: p for p in PROCEDURES}
    >>> by_name["show_commit_files"].bind({}, ["orders", "5", "20240101000000000"])
    {'table': 'orders', 'limit': 5, 'instant_time': '20240101000000000'}
    >>> by_name["rollback_to_instant"].bind({"table": "orders"})
    Traceback (most recent call last):
    ...
    hudiql.errors.SqlError: CALL rollback_to_instant needs instant_time => ...
"""

from __future__ import annotations

import fnmatch
import json
import math
from datetime import datetime, timedelta, timezone

from hudiql.errors import SqlError
from hudiql.file_group import FileSlice
from hudiql.procedures.base import BOOL, INT, REQUIRED, STRING, TABLE, Context, Parameter, Procedure
from hudiql.services import archive, rollback, savepoint
from hudiql.transaction.rollback import ROLLBACK_ACTIONS
from hudiql.timeline.archived import ArchivedInstant
from hudiql.table.fsview import read_commit_metadata
from hudiql.layout import join_partition, parse_data_file_name
from hudiql.table.table import HudiTable
from hudiql.timeline.active import (
    COMPACTION,
    Instant,
    State,
    format_instant_time,
    parse_instant_time,
)

_ALL_PARTITIONS = "ALL_PARTITIONS"


def _limit(procedure: str, args: dict[str, object]) -> int:
    limit = int(args["limit"])
    if limit < 0:
        raise SqlError(f"CALL {procedure}: limit => {limit} must be at least 0")
    return limit


def _no_path(procedure: str, args: dict[str, object]) -> None:
    if args.get("path"):
        raise SqlError(f"CALL {procedure}: path => is not supported; name the table with table => 't'")


def _file_action(instant: Instant) -> str:
    """The action Hudi shows for a completed instant: a compaction completes as a commit."""
    return "commit" if instant.action == COMPACTION else instant.action


def _transition_time(table: HudiTable, instant: Instant) -> str | None:
    """When the instant completed: its completion time (layout 2), else its file's modification time."""
    if instant.completion_time:
        return instant.completion_time
    modified = table.storage.modified_time(instant.file_name)
    return format_instant_time(datetime.fromtimestamp(modified, timezone.utc)) if modified else None


def _show_commits(ctx: Context, args: dict[str, object]) -> list[tuple]:
    """Completed commits of the active timeline, newest first, with their totals (the columns of
    ``show_archived_commits``, and the action third)."""
    table, rows = ctx.table, []
    newest_first = list(reversed(table.timeline.completed(ROLLBACK_ACTIONS)))
    for instant in newest_first[:_limit("show_commits", args)]:
        content = json.loads(read_commit_metadata(table.timeline, instant).to_json())
        # The totals of show_archived_commits, computed once (services/archive.py).
        row = archive.commit_row(ArchivedInstant(instant.timestamp, _file_action(instant), State.COMPLETED, content,
                                                  _transition_time(table, instant)))
        rows.append(row[:2] + (_file_action(instant),) + row[2:])
    return rows


def _commit(ctx: Context, procedure: str, instant_time: str) -> Instant:
    found = [i for i in ctx.table.timeline.completed(ROLLBACK_ACTIONS) if i.timestamp == instant_time]
    if not found:
        name = ctx.table.config.name
        raise SqlError(f"CALL {procedure}: table {name} has no completed commit {instant_time}; "
                       f"CALL show_commits(table => '{name}') lists them")
    return found[0]


def _show_commit_files(ctx: Context, args: dict[str, object]) -> list[tuple]:
    limit = _limit("show_commit_files", args)
    instant = _commit(ctx, "show_commit_files", str(args["instant_time"]))
    meta = read_commit_metadata(ctx.table.timeline, instant)
    return [(_file_action(instant), s.partition_path, s.file_id, s.prev_commit, s.num_update_writes, s.num_writes,
             s.total_write_bytes, s.total_write_errors, s.file_size_in_bytes) for s in meta.write_stats][:limit]


def _show_commit_write_stats(ctx: Context, args: dict[str, object]) -> list[tuple]:
    limit = _limit("show_commit_write_stats", args)
    instant = _commit(ctx, "show_commit_write_stats", str(args["instant_time"]))
    meta = read_commit_metadata(ctx.table.timeline, instant)
    written, records = meta.total("total_write_bytes"), meta.total("num_writes")
    return [(_file_action(instant), written, records, math.ceil(written / records) if records else None)][:limit]


def _fs_view_table(ctx: Context, procedure: str, args: dict[str, object]) -> HudiTable:
    """The table as of ``max_instant`` (``include_max``: that instant included)."""
    for flag in ("include_in_flight", "exclude_compaction"):
        if args[flag]:
            raise SqlError(f"CALL {procedure}: {flag} => true is not supported; the view holds the completed "
                           "instants and the slices pending compactions open")
    max_instant = str(args["max_instant"])
    if not max_instant:
        return ctx.table
    if not args["include_max"]:
        max_instant = format_instant_time(parse_instant_time(max_instant) - timedelta(milliseconds=1))
    return ctx.table.as_of(max_instant)


def _partitions(procedure: str, args: dict[str, object]) -> str:
    if args.get("path_regex") != _ALL_PARTITIONS and args.get("partition_path", _ALL_PARTITIONS) != _ALL_PARTITIONS:
        raise SqlError(f"CALL {procedure}: path_regex and partition_path cannot be used together")
    return args["path_regex"] if args["path_regex"] != _ALL_PARTITIONS else args.get("partition_path", _ALL_PARTITIONS)


def _log_sizes(table: HudiTable, s: FileSlice) -> list[tuple[str, int]]:
    return [(table.storage.uri(join_partition(s.partition_path, n)), table.storage.size(join_partition(s.partition_path, n)))
            for n in s.log_files]


def _slice_columns(table: HudiTable, s: FileSlice) -> tuple:
    logs = _log_sizes(table, s)
    return (s.partition_path, s.file_id, s.base_instant, table.storage.uri(s.base_path) if s.base_file else "",
            s.base_file_size or 0, len(logs), sum(size for _, size in logs)), logs


def _show_fsview_all(ctx: Context, args: dict[str, object]) -> list[tuple]:
    proc = "show_fsview_all"
    limit, pattern = _limit(proc, args), _partitions(proc, args)
    table = _fs_view_table(ctx, proc, args)
    rows = []
    for group in table.file_system_view().file_groups():
        if pattern != _ALL_PARTITIONS and not fnmatch.fnmatch(group.partition_path, pattern):
            continue
        for t in sorted(group.slices, reverse=True):
            if len(rows) == limit:
                return rows
            columns, logs = _slice_columns(table, group.slices[t])
            rows.append(columns + ("[" + ",".join(path for path, _ in logs) + "]",))
    return rows


def _show_fsview_latest(ctx: Context, args: dict[str, object]) -> list[tuple]:
    """The latest slice per file group; with ``merge``, joined with the slice before it while a
    compaction of it is pending (what readers merge). A log of the slice's own base instant is
    'scheduled' for compaction, others are not (Hudi's columns)."""
    proc = "show_fsview_latest"
    limit, pattern = _limit(proc, args), _partitions(proc, args)
    table = _fs_view_table(ctx, proc, args)
    view = table.file_system_view()
    rows = []
    for s in view.read_slices() if args["merge"] else view.latest_slices():
        if pattern != _ALL_PARTITIONS and not fnmatch.fnmatch(s.partition_path, pattern):
            continue
        if len(rows) == limit:
            break
        columns, logs = _slice_columns(table, s)
        scheduled = [(p, size) for p, size in logs if parse_data_file_name(p.rsplit("/", 1)[-1]).instant_time == s.base_instant]
        unscheduled = [entry for entry in logs if entry not in scheduled]
        base_size = s.base_file_size or 0

        def ratio(part: list[tuple[str, int]]) -> float:
            return sum(size for _, size in part) / base_size if base_size else -1.0

        rows.append(columns + (sum(size for _, size in scheduled), sum(size for _, size in unscheduled),
                               ratio(scheduled), ratio(unscheduled),
                               "[" + ",".join(p for p, _ in scheduled) + "]", "[" + ",".join(p for p, _ in unscheduled) + "]"))
    return rows


def _rollback_to_instant(ctx: Context, args: dict[str, object]) -> list[tuple]:
    rollback.rollback_to_instant(ctx.table, str(args["instant_time"]))
    return [(True,)]


def _create_savepoint(ctx: Context, args: dict[str, object]) -> list[tuple]:
    _no_path("create_savepoint", args)
    savepoint.create(ctx.table, str(args["commit_time"]), str(args["user"]), str(args["comments"]))
    return [(True,)]


def _show_savepoints(ctx: Context, args: dict[str, object]) -> list[tuple]:
    _no_path("show_savepoints", args)
    return [(t,) for t in savepoint.list_savepoints(ctx.table)]


def _delete_savepoint(ctx: Context, args: dict[str, object]) -> list[tuple]:
    _no_path("delete_savepoint", args)
    savepoint.delete(ctx.table, str(args["instant_time"]))
    return [(True,)]


def _rollback_to_savepoint(ctx: Context, args: dict[str, object]) -> list[tuple]:
    proc = "rollback_to_savepoint"
    _no_path(proc, args)
    savepoint_time = savepoint.resolve(ctx.table, str(args["instant_time"]), proc)
    rollback.restore_to_savepoint(ctx.table, savepoint_time, savepoint.files(ctx.table, savepoint_time))
    return [(True,)]


_COMMIT_TOTALS = ("total_bytes_written long, total_files_added long, total_files_updated long, "
                  "total_partitions_written long, total_records_written long, total_update_records_written long, "
                  "total_errors long")
_FS_VIEW_PARAMETERS = (
    TABLE, Parameter("max_instant", STRING, ""), Parameter("include_max", BOOL, False),
    Parameter("include_in_flight", BOOL, False), Parameter("exclude_compaction", BOOL, False),
    Parameter("limit", INT, 10), Parameter("path_regex", STRING, _ALL_PARTITIONS),
)
_SLICE_COLUMNS = ("partition string, file_id string, base_instant string, data_file string, data_file_size long, "
                  "num_delta_files long, total_delta_file_size long")
_INSTANT = Parameter("instant_time", default="")
_PATH = Parameter("path")

PROCEDURES: tuple[Procedure, ...] = (
    Procedure("show_commits", (TABLE, Parameter("limit", INT, 10)),
              f"commit_time string, state_transition_time string, action string, {_COMMIT_TOTALS}", _show_commits),
    Procedure("show_commit_files", (TABLE, Parameter("limit", INT, 10), Parameter("instant_time", default=REQUIRED)),
              "action string, partition_path string, file_id string, previous_commit string, "
              "total_records_updated long, total_records_written long, total_bytes_written long, total_errors long, "
              "file_size long", _show_commit_files),
    Procedure("show_commit_write_stats", (TABLE, Parameter("limit", INT, 10), Parameter("instant_time", default=REQUIRED)),
              "action string, total_bytes_written long, total_records_written long, avg_record_size long",
              _show_commit_write_stats),
    Procedure("show_fsview_all", _FS_VIEW_PARAMETERS, f"{_SLICE_COLUMNS}, delta_files string", _show_fsview_all),
    Procedure("show_fsview_latest", (*_FS_VIEW_PARAMETERS, Parameter("partition_path", STRING, _ALL_PARTITIONS),
                                     Parameter("merge", BOOL, True)),
              f"{_SLICE_COLUMNS}, delta_size_compaction_scheduled long, delta_size_compaction_unscheduled long, "
              "delta_to_base_radio_compaction_scheduled double, delta_to_base_radio_compaction_unscheduled double, "
              "delta_files_compaction_scheduled string, delta_files_compaction_unscheduled string", _show_fsview_latest),
    Procedure("rollback_to_instant", (TABLE, Parameter("instant_time", default=REQUIRED)), "rollback_result boolean",
              _rollback_to_instant),
    Procedure("create_savepoint", (TABLE, Parameter("commit_time", default=""), Parameter("user", default=""),
                                   Parameter("comments", default=""), _PATH),
              "create_savepoint_result boolean", _create_savepoint),
    Procedure("show_savepoints", (TABLE, _PATH), "savepoint_time string", _show_savepoints),
    Procedure("delete_savepoint", (TABLE, _INSTANT, _PATH), "delete_savepoint_result boolean", _delete_savepoint),
    Procedure("rollback_to_savepoint", (TABLE, _INSTANT, _PATH), "rollback_savepoint_result boolean",
              _rollback_to_savepoint),
)
