"""Incremental queries: the rows the commits in (begin, end] wrote, in their latest state as of
end (Hudi's ``latest_state``): ``hudi_table_changes('t', 'latest_state', begin [, end])``, or
``SET hoodie.datasource.query.type=incremental`` with ``hoodie.datasource.read.begin.instanttime``
and ``hoodie.datasource.read.end.instanttime``.

How: the table as of end (``read.time_travel``), only the file groups the commits of the range
wrote (their write stats; the new file groups of a replacecommit), rows whose
``_hoodie_commit_time`` is in the range. A merge-on-read slice whose base file is older than begin
contributes only its winning log records of the keys written after begin: its base file is read
for the merge's key and ordering columns, and only when one of its rows could win (a delete in
the logs, or a log record ordered below the file's largest ordering value), and the older log
blocks for those columns alone (``SliceReader.snapshot_batches``' ``changed_after``). A
compaction (and a clustering, which keeps commit times) adds no row: it rewrites records under
their old commit times. With
``hoodie.datasource.read.include.deletes=true`` the records deleted in the range come too: each
as it was at begin, with ``_hoodie_is_deleted = true`` and end as its commit time (every row
has ``_hoodie_is_deleted``; false for the others).

On table versions 8 and 9 (timeline layout 2) begin and end are completion times, as Hudi 1.x
reads them: the range is the commits that completed after begin, up to end, and is read as the
instant times of those commits (rows carry their commit's instant time). A range whose commits
interleave with one outside it (a commit that started inside and completed after end, written
by concurrent writers) is refused by name.

A range whose begin was archived (the write stats that say which file groups changed are gone),
whose end is older than what the cleaner kept, or, with deletes, whose begin is, is refused;
with ``hoodie.datasource.read.incr.fallback.fulltablescan.enable=true`` it is answered from a
full scan of the latest snapshot filtered on ``_hoodie_commit_time`` instead, and a line says so.

Example:
    >>> _ = session.sql("CREATE TABLE orders (id INT, amount DOUBLE) USING hudi TBLPROPERTIES (primaryKey = 'id')")
    >>> _ = session.sql("INSERT INTO orders VALUES (1, 10.0), (2, 20.0)")
    >>> begin = HudiTable.load(warehouse + "/orders").timeline.completed()[-1].timestamp
    >>> _ = session.sql("INSERT INTO orders VALUES (2, 22.0), (3, 30.0)")
    >>> session.sql(f"SELECT id, amount FROM hudi_table_changes('orders', 'latest_state', '{begin}') ORDER BY id").collect()
    [Row(id=2, amount=22.0), Row(id=3, amount=30.0)]
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from hudiql.config import registry
from hudiql.errors import SqlError, warn
from hudiql.read.snapshot import snapshot
from hudiql.read.time_travel import earliest_readable_instant, query_instant
from hudiql.table.fsview import read_commit_metadata
from hudiql.record.schema import COMMIT_TIME, IS_DELETED, PARTITION_PATH, RECORD_KEY
from hudiql.table.table import HudiTable
from hudiql.timeline.active import COMPACTION, REPLACE_COMMIT, WRITE_ACTIONS, as_layout_1
from hudiql.timeline.archived import has_archived

#: The begin instant that reads from the table's first commit.
EARLIEST = "earliest"
#: The query type of ``hudi_table_changes``' second argument hudiql answers.
LATEST_STATE = "latest_state"


@dataclass(frozen=True)
class ChangeRange:
    """The instants an incremental read covers: after ``begin`` (``""``: from the first commit),
    up to ``end``, both instant times."""

    begin: str
    end: str


def change_range(table: HudiTable, begin: str, end: str | None) -> ChangeRange:
    """The range ``begin`` / ``end`` name (``end`` ``None``: the latest completed commit)."""
    if not table.config.populate_meta_fields:
        raise SqlError(f"table {table.config.name} has no meta fields (hoodie.populate.meta.fields=false), so its rows "
                       "do not say which commit wrote them: incremental queries are not supported on it, as in Hudi; "
                       "read the table, or read it as of an instant")
    start = "" if begin.strip().lower() == EARLIEST else query_instant(table, begin, "begin instant")
    if end is None or not end.strip():
        commits = table.timeline.completed(WRITE_ACTIONS)
        stop = commits[-1].timestamp if commits else start
    else:
        stop = query_instant(table, end, "end instant")
    if start > stop:
        raise SqlError(f"table {table.config.name}: the begin instant {start} is after the end instant {stop}; "
                       "an incremental read covers the commits after begin, up to end")
    if table.timeline.layout_version >= 2:
        return _by_completion_time(table, start, stop if end is not None and end.strip() else None)
    return ChangeRange(start, stop)


def _by_completion_time(table: HudiTable, begin: str, end: str | None) -> ChangeRange:
    """The instant times of the commits that completed after ``begin`` up to ``end`` (``None``:
    the latest), as one range of instant times."""
    commits = [i for i in table.timeline.completed(WRITE_ACTIONS) if i.completion_time]
    inside = [i for i in commits if begin < i.completion_time and (end is None or i.completion_time <= end)]
    before = [i.timestamp for i in commits if i.completion_time <= begin]
    start = max(before, default="")
    if not inside:
        return ChangeRange(start, start)
    span = ChangeRange(start, max(i.timestamp for i in inside))
    by_instant = {i.timestamp for i in commits if span.begin < i.timestamp <= span.end}
    stray = sorted(by_instant ^ {i.timestamp for i in inside})
    if stray:
        raise SqlError(f"table {table.config.name}: commit {stray[0]} started inside the completion-time range "
                       f"({begin or EARLIEST}, {end or 'latest'}] and completed outside it (or the other way), as "
                       "concurrent writers leave it; choose a begin or end that does not split it from its neighbours")
    return span


def changes(
    spark: SparkSession,
    table: HudiTable,
    span: ChangeRange,
    settings: Mapping[str, str],
    keep_partition: Callable[[str], bool] | None = None,
    columns: list[str] | None = None,
) -> DataFrame:
    """The latest state of the rows the commits in ``span`` wrote, as a DataFrame of the table's
    columns (or of ``columns``, in table order), ``_hoodie_is_deleted`` last when deletes are asked for."""
    include_deletes = registry.flag(settings, registry.INCLUDE_DELETES)
    wanted = None if columns is None else list(dict.fromkeys([*columns, COMMIT_TIME]))
    problem = unreadable_reason(table, span, include_deletes)
    if problem is not None:
        if not registry.flag(settings, registry.INCREMENTAL_FALLBACK):
            raise SqlError(f"incremental read of table {table.config.name} after {span.begin or EARLIEST} up to "
                           f"{span.end}: {problem}; begin later, or SET {registry.INCREMENTAL_FALLBACK}=true to "
                           "compute it from a full scan")
        warn(f"incremental read of table {table.config.name}: {problem}; computed from a full scan of the latest "
             "snapshot" + (", without the deleted records" if include_deletes else ""))
        rows = _in_range(snapshot(spark, table, None, keep_partition, columns=wanted), span)
        return _with_deleted_flag(rows, columns, include_deletes, [])
    end_table = table.as_of(span.end)
    written, replaced = file_groups_written(table, span)
    groups = None if not span.begin else written
    rows = _in_range(snapshot(spark, end_table, None, keep_partition, columns=wanted, file_groups=groups,
                              changed_after=span.begin or None), span)
    deleted = []
    if include_deletes and span.begin:
        deleted = [_deleted(spark, table, end_table, span, written | replaced, keep_partition, columns)]
    return _with_deleted_flag(rows, columns, include_deletes, deleted)


def unreadable_reason(table: HudiTable, span: ChangeRange, include_deletes: bool) -> str | None:
    """Why the range cannot be read from the active timeline and the files left, if it cannot."""
    commits = table.timeline.completed(WRITE_ACTIONS)
    if span.begin and commits and span.begin < commits[0].timestamp and has_archived(table.storage, table.config):
        return f"the commits after {span.begin} reach instants archived out of the active timeline " \
               f"(its first commit is {commits[0].timestamp})"
    earliest = earliest_readable_instant(table)
    if earliest is not None and span.end < earliest:
        return f"the cleaner removed the files of its end (the earliest readable instant is {earliest})"
    if earliest is not None and include_deletes and span.begin and span.begin < earliest:
        return f"the cleaner removed the files of its begin, which deleted records are read from " \
               f"(the earliest readable instant is {earliest})"
    return None


def file_groups_written(table: HudiTable, span: ChangeRange) -> tuple[set[tuple[str, str]], set[tuple[str, str]]]:
    """The file groups the writes of the range wrote to, and those their replacecommits replaced.
    Compactions write no new record version, so their file groups do not count."""
    written: set[tuple[str, str]] = set()
    replaced: set[tuple[str, str]] = set()
    for instant in table.timeline.completed(WRITE_ACTIONS):
        if not span.begin < instant.timestamp <= span.end or instant.action == COMPACTION:
            continue
        meta = read_commit_metadata(table.timeline, instant)
        written.update((w.partition_path, w.file_id) for w in meta.write_stats)
        if as_layout_1(instant.action) == REPLACE_COMMIT:
            replaced.update((p, f) for p, ids in meta.partition_to_replace_file_ids.items() for f in ids)
    return written, replaced


def _in_range(rows: DataFrame, span: ChangeRange) -> DataFrame:
    commit_time = F.col(COMMIT_TIME)
    return rows.where((commit_time > F.lit(span.begin)) & (commit_time <= F.lit(span.end)))


def _deleted(
    spark: SparkSession,
    table: HudiTable,
    end_table: HudiTable,
    span: ChangeRange,
    groups: set[tuple[str, str]],
    keep_partition: Callable[[str], bool] | None,
    columns: list[str] | None,
) -> DataFrame:
    """The records of ``groups`` at begin that no file group holds at end, as they were at begin,
    with end as their commit time. A record is its key in its partition (hudiql's index is not global)."""
    identity = [RECORD_KEY, PARTITION_PATH]
    before = snapshot(spark, table.as_of(span.begin), None, keep_partition, file_groups=groups)
    after = snapshot(spark, end_table, None, keep_partition, columns=identity, file_groups=groups)
    gone = before.join(after, identity, "left_anti").withColumn(COMMIT_TIME, F.lit(span.end))
    names = end_table.columns.fieldNames() if columns is None else [
        c for c in end_table.columns.fieldNames() if c in set(columns)]
    # Columns added since begin read as null in a deleted record.
    return gone.select(*[F.col(f"`{c}`") if c in before.columns else F.lit(None).alias(c) for c in names])


def _with_deleted_flag(rows: DataFrame, columns: list[str] | None, include_deletes: bool,
                       deleted: list[DataFrame]) -> DataFrame:
    """The rows with the columns asked for; with deletes, ``_hoodie_is_deleted`` false on them and
    true on the deleted records."""
    if columns is not None:
        rows = rows.select(*[F.col(f"`{c}`") for c in columns])
    if not include_deletes:
        return rows
    rows = _set_flag(rows, False)
    for gone in deleted:
        rows = rows.unionByName(_set_flag(gone.select(*[F.col(f"`{c}`") for c in (columns or gone.columns)]), True),
                                allowMissingColumns=False)
    return rows


def _set_flag(rows: DataFrame, value: bool) -> DataFrame:
    """``_hoodie_is_deleted`` = ``value``, last (a table with its own such column keeps its place)."""
    return rows.withColumn(IS_DELETED, F.lit(value))
