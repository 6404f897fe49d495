"""The procedures of the table services: compaction, cleaning, archiving, the table's properties and its version.

Example:
    >>> run_clean = {p.name: p for p in PROCEDURES}["run_clean"]
    >>> run_clean.bind({"table": "orders", "retain_commits": "2"})
    {'table': 'orders', 'skip_locking': False, 'schedule_in_line': True, 'retain_commits': 2}
    >>> run_clean.bind({"table": "orders", "retain": "2"})
    Traceback (most recent call last):
    ...
    hudiql.errors.SqlError: CALL run_clean takes no argument 'retain'; its arguments are table, skip_locking, schedule_in_line, clean_policy, retain_commits, hours_retained, file_versions_retained, trigger_strategy, trigger_max_commits, options
"""

from __future__ import annotations

from hudiql.errors import SqlError
from hudiql.procedures.base import BOOL, INT, REQUIRED, STRING, TABLE, TABLE_OR_PATH, Context, Parameter, Procedure, options
from hudiql.services import archive, clean, compaction, table_version
from hudiql.config import registry


def _table_properties(ctx: Context, args: dict[str, object]) -> list[tuple]:
    return sorted(ctx.table.config.props.items())


def _run_compaction(ctx: Context, args: dict[str, object]) -> list[tuple]:
    if not ctx.table.config.is_mor:
        raise SqlError(f"CALL run_compaction: table {ctx.table.config.name} is copy-on-write; "
                       "only merge-on-read tables are compacted")
    return compaction.run_procedure(ctx.spark, ctx.table, str(args["op"]).lower(), args.get("timestamp"))


def _show_compaction(ctx: Context, args: dict[str, object]) -> list[tuple]:
    return compaction.describe(ctx.table)[::-1][:int(args["limit"])]


#: run_clean's arguments that stand for a cleaning option.
_CLEAN_OPTIONS = {
    "clean_policy": registry.CLEANER_POLICY,
    "retain_commits": registry.CLEANER_COMMITS_RETAINED,
    "hours_retained": registry.CLEANER_HOURS_RETAINED,
    "file_versions_retained": registry.CLEANER_FILE_VERSIONS_RETAINED,
    "trigger_strategy": registry.CLEAN_TRIGGER_STRATEGY,
    "trigger_max_commits": registry.CLEAN_MAX_COMMITS,
}


def _run_clean(ctx: Context, args: dict[str, object]) -> list[tuple]:
    if args["skip_locking"]:
        raise SqlError("CALL run_clean: skip_locking => true is not supported; hudiql plans every clean under the "
                       "table lock, so that no concurrent write loses a file it needs")
    overrides = options("run_clean", str(args.get("options", "")))
    overrides.update({key: str(args[arg]) for arg, key in _CLEAN_OPTIONS.items() if arg in args})
    for key, value in overrides.items():
        registry.validate_session_option(key, value)
    table = ctx.table.with_options(overrides)
    registry.check_retention(table.settings)
    metadata = clean.run(table, plan_new=bool(args["schedule_in_line"]))
    return [(m.start_clean_time, m.time_taken_ms, m.total_files_deleted, m.earliest_commit_to_retain, None, m.version)
            for m in metadata[-1:]]


def _show_cleans(ctx: Context, args: dict[str, object]) -> list[tuple]:
    if args["showarchived"]:
        raise SqlError("CALL show_cleans: showArchived => true is not supported yet; the active timeline's cleans "
                       "are listed")
    return clean.describe(ctx.table, int(args["limit"]))


def _archive_commits(ctx: Context, args: dict[str, object]) -> list[tuple]:
    if "path" in args:
        raise SqlError("CALL archive_commits: path => is not supported; name the table with table => 't'")
    return archive.archive_commits(ctx.table, int(args["min_commits"]), int(args["max_commits"]),
                                   int(args["retain_commits"]))


def _show_archived_commits(ctx: Context, args: dict[str, object]) -> list[tuple]:
    return archive.show_archived_commits(ctx.table, int(args["limit"]), str(args["start_ts"]), str(args["end_ts"]))


def _change_version(name: str):
    def run(ctx: Context, args: dict[str, object]) -> list[tuple]:
        to_version = table_version.parse_version(name, args["to_version"])
        table_version.change_version(ctx.spark, ctx.table, name, to_version)
        return [(True,)]
    return run


PROCEDURES: tuple[Procedure, ...] = (
    Procedure("show_table_properties", (TABLE,), "key string, value string", _table_properties),
    Procedure("run_compaction", (Parameter("op", default="scheduleandexecute"), *TABLE_OR_PATH, Parameter("timestamp")),
              "timestamp string, operation_size int, state string", _run_compaction),
    Procedure("show_compaction", (*TABLE_OR_PATH, Parameter("limit", INT, 20)),
              "timestamp string, operation_size int, state string", _show_compaction),
    Procedure("run_clean", (
        TABLE, Parameter("skip_locking", BOOL, False), Parameter("schedule_in_line", BOOL, True),
        Parameter("clean_policy"), Parameter("retain_commits", INT), Parameter("hours_retained", INT),
        Parameter("file_versions_retained", INT), Parameter("trigger_strategy"), Parameter("trigger_max_commits", INT),
        Parameter("options"),
    ), "start_clean_time string, time_taken_in_millis long, total_files_deleted int, earliest_commit_to_retain string, "
       "bootstrap_part_metadata string, version int", _run_clean),
    Procedure("show_cleans", (TABLE, Parameter("limit", INT, 10), Parameter("showarchived", BOOL, False)),
              "clean_time string, state_transition_time string, action string, start_clean_time string, "
              "time_taken_in_millis long, total_files_deleted int, earliest_commit_to_retain string, "
              "last_completed_commit_timestamp string, version int", _show_cleans),
    # enable_metadata is Hudi's switch for its metadata table, which hudiql never writes: accepted either way.
    Procedure("archive_commits", (
        TABLE, Parameter("path"), Parameter("min_commits", INT, 20), Parameter("max_commits", INT, 30),
        Parameter("retain_commits", INT, 10), Parameter("enable_metadata", BOOL, True),
    ), "result int", _archive_commits),
    *(Procedure(name, (TABLE, Parameter("to_version", default=REQUIRED)), "result boolean", _change_version(name))
      for name in ("upgrade_table", "downgrade_table")),
    Procedure("show_archived_commits", (
        TABLE, Parameter("limit", INT, 10), Parameter("start_ts", STRING, ""), Parameter("end_ts", STRING, ""),
    ), "commit_time string, state_transition_time string, total_bytes_written long, total_files_added long, "
       "total_files_updated long, total_partitions_written long, total_records_written long, "
       "total_update_records_written long, total_errors long", _show_archived_commits),
)
